// SPDX-License-Identifier: Apache-2.0
/*
 * Framing and pairing of length-prefixed l7 protocols (see l7msg.h). Each direction is a
 * small state machine: between messages, collecting a candidate header for head(), counting
 * a message's bytes, skipping to a segment start after lost framing, or dead. Exchanges live
 * in one ring in request order; answers find their entry by key. At the end, the framing that
 * CQL and MySQL read their directions with.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7msg.h"


_Static_assert((L7_MAX_PENDING & (L7_MAX_PENDING - 1)) == 0, "a power of two");
_Static_assert(L7_MAX_PENDING >= L7_RING_MIN, "the ring grows by doubling from L7_RING_MIN");

enum state {
	S_BOUNDARY, /* the next byte begins a message */
	S_HEAD,	    /* collecting a candidate header for head() */
	S_BODY,	    /* counting a framed message's bytes */
	S_SKIP,	    /* framing lost: up to the next segment start */
	S_DEAD,	    /* not parsed any more */
};

struct dir {
	enum state st;
	bool resync;	 /* framing was lost: the next candidate follows a loss */
	bool ever_valid; /* carried a message of a known kind once */
	bool is_req;
	bool unknown;  /* framed, kind not told while the role is unknown */
	bool cut;      /* the message in progress missed bytes */
	bool pre_stop; /* its prefix ended at a gap */
	unsigned bad;  /* failed candidates while never valid */
	size_t need;
	size_t pre_len;
	uint64_t total; /* of the message in progress, 0 until known */
	uint64_t seen;	/* its bytes so far, gaps included */
	uint64_t start_ns;
	uint64_t last_ts;
	uint8_t pre[L7MSG_PREFIX_MAX];
};

struct l7msg_conn {
	const struct l7msg_proto *proto;
	enum l7_role role;
	struct l7_seg sg;
	struct l7_ring q; /* of struct l7msg_entry */
	uint64_t dropped[L7MSG_DROPPED_IDS];
	unsigned ndropped, dropped_next;
	uint64_t unparsed;
	struct l7_stats st;
	struct dir d[2];
};

static enum l7_dir req_dir(const struct l7msg_conn *c)
{
	return c->role == L7_ROLE_SERVER ? L7_INGRESS : L7_EGRESS;
}

/* --- the exchange ring --- */

static struct l7msg_entry *ring_at(struct l7msg_conn *c, unsigned i)
{
	return l7_ring__at(&c->q, sizeof(struct l7msg_entry), i);
}

static struct l7msg_entry *ring_push(struct l7msg_conn *c)
{
	struct l7msg_entry *e =
		l7_ring__push(&c->q, sizeof(*e), L7_MAX_PENDING, &c->st.alloc_failures);

	if (!e)
		return NULL;
	return e;
}

static void complete(struct l7msg_conn *c, struct l7msg_entry *e)
{
	/* Times of segments taken on different CPUs may step back a little. */
	if (e->x.end_ns < e->x.start_ns)
		e->x.end_ns = e->x.start_ns;
	e->done = true;
	c->st.exchanges++;
}

/* e ends before its answers did: cut if some came (at their end), else unanswered at ts. */
static void end_unanswered(struct l7msg_conn *c, struct l7msg_entry *e, uint64_t ts)
{
	if (e->answered) {
		e->x.flags |= L7_F_RESP_TRUNCATED;
	} else {
		e->x.flags |= L7_F_NO_RESPONSE;
		e->x.end_ns = ts;
		c->st.unanswered++;
	}
	complete(c, e);
}

struct l7_stats *l7msg__st(struct l7msg_conn *c)
{
	return &c->st;
}

void l7msg__count_unparsed(struct l7msg_conn *c)
{
	c->unparsed++;
}

struct l7msg_entry *l7msg__request(struct l7msg_conn *c, const struct l7msg_msg *m, uint64_t key)
{
	struct l7msg_entry *e;

	c->st.requests++;
	e = ring_push(c);
	if (!e) {
		c->st.requests_dropped++;
		c->dropped[c->dropped_next] = key;
		c->dropped_next = (c->dropped_next + 1) % L7MSG_DROPPED_IDS;
		if (c->ndropped < L7MSG_DROPPED_IDS)
			c->ndropped++;
		return NULL;
	}
	e->x.start_ns = m->start_ns;
	e->x.req_dir = (uint8_t)m->dir;
	e->key = key;
	return e;
}

void l7msg__no_reply(struct l7msg_conn *c, struct l7msg_entry *e, const struct l7msg_msg *m)
{
	e->x.flags |= L7_F_NO_REPLY_EXPECTED;
	e->x.end_ns = m->end_ns;
	complete(c, e);
}

struct l7msg_entry *l7msg__find(struct l7msg_conn *c, uint64_t key)
{
	for (unsigned i = 0; i < c->q.count; i++) {
		struct l7msg_entry *e = ring_at(c, i);

		if (!e->done && e->key == key)
			return e;
	}
	return NULL;
}

void l7msg__answer(struct l7msg_conn *c, struct l7msg_entry *e, const struct l7msg_msg *m,
		   bool last)
{
	c->st.responses++;
	for (unsigned i = 0; i < c->q.count; i++) {
		struct l7msg_entry *f = ring_at(c, i);

		if (f == e)
			break;
		if (f->done)
			continue;
		/* answered: a stream of answers (MongoDB exhaust) that a later answer ended */
		end_unanswered(c, f, m->end_ns);
	}
	e->answered = true;
	e->x.end_ns = m->end_ns;
	if (last)
		complete(c, e);
}

struct l7msg_entry *l7msg__orphan(struct l7msg_conn *c, const struct l7msg_msg *m, uint64_t key)
{
	struct l7msg_entry *e;

	c->st.responses++;
	for (unsigned i = 0; i < c->ndropped; i++) {
		if (c->dropped[i] != key)
			continue;
		/* Forgotten, so that a later request reusing the id is not mistaken. */
		c->dropped[i] = c->dropped[--c->ndropped];
		c->dropped_next = c->ndropped % L7MSG_DROPPED_IDS;
		c->st.responses_dropped++;
		return NULL;
	}
	c->st.orphan_responses++;
	e = ring_push(c);
	if (!e) {
		c->st.responses_dropped++;
		return NULL;
	}
	e->x.flags = L7_F_NO_REQUEST;
	e->x.start_ns = m->start_ns;
	e->x.end_ns = m->end_ns;
	e->x.req_dir = (uint8_t)!m->dir;
	e->key = key;
	e->answered = true;
	complete(c, e);
	return e;
}

/* --- one direction --- */

static void begin(struct l7msg_conn *c, struct dir *d, uint64_t ts)
{
	d->st = S_HEAD;
	d->need = c->proto->hdr_min;
	d->pre_len = 0;
	d->total = 0;
	d->seen = 0;
	d->start_ns = ts;
	d->last_ts = ts;
	d->cut = false;
	d->pre_stop = false;
	d->unknown = false;
}

static void lose(struct l7msg_conn *c, struct dir *d)
{
	d->st = S_SKIP;
	if (!d->resync) {
		c->st.resyncs++;
		d->resync = true;
	}
}

/* The candidate is no message start: its bytes are skipped. */
static void fail(struct l7msg_conn *c, struct dir *d)
{
	c->st.bytes_unattributed += d->seen;
	d->seen = 0;
	if (!d->ever_valid && ++d->bad >= L7MSG_MAX_BAD_STARTS) {
		d->st = S_DEAD;
		c->st.dirs_abandoned++;
		return;
	}
	lose(c, d);
}

/* The message in progress ended (its bytes all seen, or no more to come). */
static void finish(struct l7msg_conn *c, int di)
{
	struct dir *d = &c->d[di];
	struct l7msg_entry *e = NULL;
	struct l7msg_msg m = {
		.p = d->pre,
		.n = d->pre_len,
		.total = d->total,
		.bytes = d->seen,
		.start_ns = d->start_ns,
		.end_ns = d->last_ts,
		.cut = d->cut || d->seen < d->total,
		.is_req = d->is_req,
		.dir = (enum l7_dir)di,
	};

	if (!d->unknown)
		e = c->proto->done(c, &m);
	if (!e) {
		c->st.bytes_unattributed += m.bytes;
	} else if (m.is_req) {
		e->x.req_bytes += m.bytes;
		if (m.cut)
			e->x.flags |= L7_F_REQ_TRUNCATED;
	} else {
		e->x.resp_bytes += m.bytes;
		if (m.cut)
			e->x.flags |= L7_F_RESP_TRUNCATED;
	}
	d->seen = 0;
	d->st = S_BOUNDARY;
}

/* head() accepted the candidate: true if its kind fits the direction. */
static bool accept(struct l7msg_conn *c, int di, const struct l7msg_head *h)
{
	struct dir *d = &c->d[di];
	enum l7msg_kind kind = h->kind;

	if (kind != L7MSG_UNKNOWN && c->role != L7_ROLE_UNKNOWN &&
	    (kind == L7MSG_REQUEST) != (di == (int)req_dir(c)))
		return false;
	if (kind == L7MSG_UNKNOWN && c->role != L7_ROLE_UNKNOWN)
		kind = di == (int)req_dir(c) ? L7MSG_REQUEST : L7MSG_RESPONSE;
	if (kind != L7MSG_UNKNOWN && c->role == L7_ROLE_UNKNOWN)
		c->role = (kind == L7MSG_REQUEST) == (di == L7_EGRESS) ? L7_ROLE_CLIENT
								       : L7_ROLE_SERVER;
	d->unknown = kind == L7MSG_UNKNOWN;
	d->is_req = kind == L7MSG_REQUEST;
	if (!d->unknown) {
		d->ever_valid = true;
		d->bad = 0;
	}
	d->resync = false;
	d->total = h->total;
	d->st = S_BODY;
	return true;
}

/* Asks head() about the candidate; L7MSG_OK leaves the direction in S_BODY. */
static enum l7msg_verdict try_head(struct l7msg_conn *c, int di, bool final)
{
	struct dir *d = &c->d[di];
	struct l7msg_head h = { 0 };
	enum l7msg_verdict r;

	r = c->proto->head(c, (enum l7_dir)di, d->pre, d->pre_len, final, d->resync, &h);
	if (r == L7MSG_OK) {
		if (h.total < d->seen || !accept(c, di, &h))
			return L7MSG_BAD;
		return L7MSG_OK;
	}
	if (r != L7MSG_MORE || final)
		return L7MSG_BAD;
	if (h.total)
		d->total = h.total;
	if (d->total && h.need > d->total)
		h.need = (size_t)d->total;
	if (h.need > L7MSG_PREFIX_MAX)
		h.need = L7MSG_PREFIX_MAX;
	/* Asking for no more than it has would never end. */
	if (h.need <= d->pre_len)
		return L7MSG_BAD;
	d->need = h.need;
	return L7MSG_MORE;
}

static void dir_feed(void *cv, int di, uint64_t ts, const uint8_t *p, size_t n, size_t actual)
{
	struct l7msg_conn *c = cv;
	struct dir *d = &c->d[di];
	size_t off = 0;

	(void)actual;
	/* A syscall's data is the likeliest place for a message to begin. */
	if (d->st == S_SKIP)
		d->st = S_BOUNDARY;
	while (off < n) {
		size_t left = n - off, k;

		switch (d->st) {
		case S_DEAD:
		case S_SKIP:
			c->st.bytes_unattributed += left;
			return;
		case S_BOUNDARY:
			begin(c, d, ts);
			break;
		case S_HEAD:
			k = l7__take(d->pre, &d->pre_len, d->need, p + off, left);
			d->seen += k;
			d->last_ts = ts;
			off += k;
			if (d->pre_len < d->need)
				break;
			switch (try_head(c, di, false)) {
			case L7MSG_BAD:
				fail(c, d);
				break;
			case L7MSG_OK:
				if (d->seen == d->total)
					finish(c, di);
				break;
			default:
				break;
			}
			break;
		case S_BODY: {
			uint64_t rem = d->total - d->seen;

			k = left < rem ? left : (size_t)rem;
			if (!d->pre_stop)
				l7__take(d->pre, &d->pre_len, L7MSG_PREFIX_MAX, p + off, k);
			d->seen += k;
			d->last_ts = ts;
			off += k;
			if (d->seen == d->total)
				finish(c, di);
			break;
		}
		}
	}
}

static void dir_skip(void *cv, int di, uint64_t n, bool known, uint64_t ts)
{
	struct l7msg_conn *c = cv;
	struct dir *d = &c->d[di];
	uint64_t rem;

	switch (d->st) {
	case S_DEAD:
	case S_SKIP:
		c->st.bytes_unattributed += n;
		return;
	case S_BOUNDARY:
		c->st.bytes_unattributed += n;
		lose(c, d);
		return;
	case S_HEAD:
		if (!d->total) {
			c->st.bytes_unattributed += d->seen + n;
			d->seen = 0;
			lose(c, d);
			return;
		}
		if (try_head(c, di, true) != L7MSG_OK) {
			fail(c, d);
			c->st.bytes_unattributed += n;
			return;
		}
		break;
	case S_BODY:
		break;
	}
	d->cut = true;
	d->pre_stop = true;
	d->last_ts = ts;
	rem = d->total - d->seen;
	if (known && n <= rem) {
		d->seen += n;
		if (d->seen == d->total)
			finish(c, di);
		return;
	}
	if (known) {
		d->seen = d->total;
		c->st.bytes_unattributed += n - rem;
	} else {
		c->st.bytes_unattributed += n;
	}
	finish(c, di);
	lose(c, d);
}

/* Ends what dir has in progress, as cut; the direction is parsed no more. */
static void kill_dir(struct l7msg_conn *c, int di)
{
	struct dir *d = &c->d[di];

	if (d->st == S_HEAD) {
		if (d->total && try_head(c, di, true) == L7MSG_OK) {
			d->cut = true;
			finish(c, di);
		} else {
			c->st.bytes_unattributed += d->seen;
			d->seen = 0;
		}
	} else if (d->st == S_BODY) {
		d->cut = true;
		finish(c, di);
	}
	d->st = S_DEAD;
}

struct l7msg_conn *l7msg__new(const struct l7msg_proto *proto, unsigned flags)
{
	struct l7msg_conn *c;

	if (!proto) {
		errno = EINVAL;
		return NULL;
	}
	c = l7__stream_new(sizeof(*c), flags);
	if (!c)
		return NULL;
	c->proto = proto;
	c->d[0].st = S_BOUNDARY;
	c->d[1].st = S_BOUNDARY;
	return c;
}

void l7msg__free(void *cv)
{
	struct l7msg_conn *c = cv;

	if (!c)
		return;
	free(c->q.v);
	free(c);
}

/*
 * A loss is reported in order with the segments, so it happened by the last segment of either
 * direction (a direction's own last segment may be older than a request its lost bytes answer).
 */
static const struct l7_seg_ops seg_ops = { .read = dir_feed,
					   .skip = dir_skip,
					   .loss_at_last = true };

L7_DEFINE_SEG(, l7msg_, struct l7msg_conn)

void l7msg__close(void *cv, uint64_t ts_ns)
{
	struct l7msg_conn *c = cv;
	int first;

	if (!c || c->sg.closed)
		return;
	/* The request side first: a request cut by the close is then unanswered. */
	first = req_dir(c);
	kill_dir(c, first);
	kill_dir(c, !first);
	for (unsigned i = 0; i < c->q.count; i++) {
		struct l7msg_entry *e = ring_at(c, i);

		if (e->done)
			continue;
		end_unanswered(c, e, ts_ns);
	}
	c->sg.closed = true;
}

int l7msg__next(void *cv, struct l7_exchange *ret)
{
	struct l7msg_conn *c = cv;
	struct l7msg_entry *e =
		c ? l7_ring__pop_done(&c->q, sizeof(*e), offsetof(struct l7msg_entry, done)) : NULL;

	if (e && ret)
		*ret = e->x;
	return e != NULL;
}

enum l7_role l7msg__role(const void *cv)
{
	const struct l7msg_conn *c = cv;

	return c ? c->role : L7_ROLE_UNKNOWN;
}

void l7msg__stats(const void *cv, struct l7_stats *ret)
{
	const struct l7msg_conn *c = cv;

	if (c && ret)
		*ret = c->st;
}

unsigned l7msg__pending(const struct l7msg_conn *c)
{
	return c ? c->q.count : 0;
}

uint64_t l7msg__bodies_unparsed(const struct l7msg_conn *c)
{
	return c ? c->unparsed : 0;
}

/* --- the framing below pairing (CQL, MySQL) --- */

void l7msg__frame_reset(struct l7msg_frame *f)
{
	f->hdr_len = 0;
	f->started = false;
	f->trunc = false;
	f->remaining = 0;
	f->bytes = 0;
}

void l7msg__frame_request(struct l7_exchange *x, const struct l7msg_frame *f, int di,
			  uint64_t bytes)
{
	x->start_ns = f->start_ns;
	x->req_dir = (uint8_t)di;
	x->req_bytes = bytes;
	if (f->trunc)
		x->flags |= L7_F_REQ_TRUNCATED;
}

uint64_t l7msg__frames_stop(void *c, struct l7msg_frame *d0, struct l7msg_frame *d1,
			    const struct l7msg_frame_ops *o)
{
	struct l7msg_frame *f[2] = { d0, d1 };
	uint64_t n = 0;

	for (int i = 0; i < 2; i++) {
		if (f[i]->st != L7MSG_FR_DEAD)
			n += f[i]->bytes;
		o->reset(c, i);
		f[i]->st = L7MSG_FR_DEAD;
	}
	return n;
}

void l7msg__frame_read(void *c, struct l7msg_frame *f, const struct l7msg_frame_ops *o, int di,
		       uint64_t ts, uint64_t event, const uint8_t *p, size_t n, size_t actual)
{
	size_t off = 0, k;

	/* A syscall's data is where a message most likely begins. */
	if (f->st == L7MSG_FR_SKIP && n) {
		o->reset(c, di);
		f->st = L7MSG_FR_HDR;
		f->resync = true;
		f->seg_actual = actual;
	}
	while (off < n) {
		switch (f->st) {
		case L7MSG_FR_DEAD:
		case L7MSG_FR_SKIP:
			o->skipped(c, di, n - off);
			return;
		case L7MSG_FR_HDR:
			if (!f->started && !f->hdr_len) {
				f->start_ns = ts;
				f->start_event = event;
			}
			k = l7__take(f->hdr, &f->hdr_len, o->hdr_size, p + off, n - off);
			f->bytes += k;
			off += k;
			if (f->hdr_len == o->hdr_size)
				o->header(c, di, ts);
			break;
		case L7MSG_FR_BODY:
			k = n - off < f->remaining ? n - off : (size_t)f->remaining;
			f->bytes += k;
			f->remaining -= k;
			off += k;
			if (o->body(c, di, p + off - k, k) && !f->remaining)
				o->end(c, di, ts);
			break;
		}
	}
	o->seg_end(c, di);
}
