// SPDX-License-Identifier: Apache-2.0
/*
 * Cassandra CQL native protocol parser of one connection (see cql.h and l7.h). Each direction
 * frames 9-byte headers and bodies, keeping a prefix of each body; a whole frame is a request
 * (a new exchange, keyed by its stream id), a response (completes the exchange of its stream)
 * or an EVENT. Exchanges live in a small table of slots, popped oldest first among the
 * complete ones.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/cql.h"
#include "shipper/network/protocols/l7.h"
#include "shipper/network/protocols/l7msg.h"

#define SLOTS_MIN 4u
#define HDR_LEN 9u
/* Dropped requests whose responses are recognized as such (they may come in any order). */
#define DROPPED_MAX L7_MAX_PENDING

#define F_COMPRESSED 0x01u
#define F_TRACING 0x02u
#define F_PAYLOAD 0x04u
#define F_WARNING 0x08u
#define F_KNOWN 0x1fu /* and v5's USE_BETA */

_Static_assert(CQL_BODY_KEEP >= 8 + L7_TARGET_MAX, "a BATCH header and a query prefix");

enum {
	OP_ERROR = 0x00,
	OP_STARTUP = 0x01,
	OP_READY = 0x02,
	OP_AUTHENTICATE = 0x03,
	OP_OPTIONS = 0x05,
	OP_SUPPORTED = 0x06,
	OP_QUERY = 0x07,
	OP_RESULT = 0x08,
	OP_PREPARE = 0x09,
	OP_EXECUTE = 0x0a,
	OP_REGISTER = 0x0b,
	OP_EVENT = 0x0c,
	OP_BATCH = 0x0d,
	OP_AUTH_CHALLENGE = 0x0e,
	OP_AUTH_RESPONSE = 0x0f,
	OP_AUTH_SUCCESS = 0x10,
	OP_MAX = 0x10,
};

static const char *const req_names[OP_MAX + 1] = {
	[OP_STARTUP] = "STARTUP", [OP_OPTIONS] = "OPTIONS",
	[OP_QUERY] = "QUERY",	  [OP_PREPARE] = "PREPARE",
	[OP_EXECUTE] = "EXECUTE", [OP_REGISTER] = "REGISTER",
	[OP_BATCH] = "BATCH",	  [OP_AUTH_RESPONSE] = "AUTH_RESPONSE",
};

static const bool resp_ops[OP_MAX + 1] = {
	[OP_ERROR] = true,  [OP_READY] = true, [OP_AUTHENTICATE] = true,   [OP_SUPPORTED] = true,
	[OP_RESULT] = true, [OP_EVENT] = true, [OP_AUTH_CHALLENGE] = true, [OP_AUTH_SUCCESS] = true,
};

struct entry {
	struct l7_exchange x;
	uint64_t id;	/* unique in the connection, never 0; 0: a free slot */
	uint64_t event; /* feed or loss that completed the request */
	int16_t stream;
	uint8_t opcode;
	bool done;
};

struct prepared {
	uint8_t id[CQL_ID_MAX];
	uint8_t id_len;
	bool used;
	bool cut;
	uint64_t used_at;
	char text[L7_TARGET_MAX + 1];
};

struct dir {
	L7MSG_FRAME_HEAD;
	size_t keep_len;
	uint8_t keep[CQL_BODY_KEEP];
};

struct cql_conn {
	enum l7_role role;
	struct l7_seg sg;
	bool off;    /* v5 framing: nothing parsed any more */
	int req_dir; /* -1 unknown */
	uint32_t bad_unknown;
	uint64_t next_id;
	uint64_t clock;
	struct entry *slots;
	unsigned cap, used;
	int16_t dropped[DROPPED_MAX]; /* streams of dropped requests, oldest first */
	unsigned ndropped;
	struct prepared *prep;
	struct l7_stats st;
	struct cql_stats cq;
	struct dir d[2];
};

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p)
{
	return be16(p) << 16 | be16(p + 2);
}

/* --- a bounded reader of a body prefix --- */

struct rd {
	const uint8_t *p;
	size_t n, off;
	uint64_t total; /* of the whole body, of which n bytes were kept */
	bool bad;	/* ran past what was kept */
};

static bool rd_skip(struct rd *r, uint64_t k)
{
	if (r->bad || k > r->n - r->off) {
		r->bad = true;
		return false;
	}
	r->off += (size_t)k;
	return true;
}

/* A big-endian integer of k bytes (at most 4). */
static uint32_t rd_be(struct rd *r, size_t k)
{
	uint32_t v = 0;

	if (r->bad || r->n - r->off < k) {
		r->bad = true;
		return 0;
	}
	for (size_t i = 0; i < k; i++)
		v = v << 8 | r->p[r->off + i];
	r->off += k;
	return v;
}

static uint32_t rd_u16(struct rd *r)
{
	return rd_be(r, 2);
}

static uint32_t rd_u32(struct rd *r)
{
	return rd_be(r, 4);
}

/* [bytes map]: a count of [string] keys and [bytes] values (a negative length: null). */
static void rd_bytes_map(struct rd *r)
{
	uint32_t n = rd_u16(r);

	for (uint32_t i = 0; i < n && !r->bad; i++) {
		uint32_t v;

		rd_skip(r, rd_u16(r));
		v = rd_u32(r);
		if (!(v & 0x80000000u))
			rd_skip(r, v);
	}
}

/* [string list] */
static void rd_string_list(struct rd *r)
{
	uint32_t n = rd_u16(r);

	for (uint32_t i = 0; i < n && !r->bad; i++)
		rd_skip(r, rd_u16(r));
}

/* --- exchanges --- */

static struct entry *slot_new(struct cql_conn *c)
{
	struct entry *e = NULL;

	if (c->used == L7_MAX_PENDING)
		return NULL;
	if (c->used == c->cap) {
		unsigned ncap = c->cap ? c->cap * 2 : SLOTS_MIN;
		struct entry *n = calloc(ncap, sizeof(*n));

		if (!n) {
			c->st.alloc_failures++;
			return NULL;
		}
		if (c->cap)
			memcpy(n, c->slots, c->cap * sizeof(*n));
		free(c->slots);
		c->slots = n;
		c->cap = ncap;
	}
	for (unsigned i = 0; i < c->cap && !e; i++)
		if (!c->slots[i].id)
			e = &c->slots[i];
	memset(e, 0, sizeof(*e));
	e->id = ++c->next_id;
	c->used++;
	return e;
}

/* The pending request on a stream. */
static struct entry *find_stream(struct cql_conn *c, int16_t stream)
{
	for (unsigned i = 0; i < c->cap; i++) {
		struct entry *e = &c->slots[i];

		if (e->id && !e->done && !(e->x.flags & L7_F_NO_REQUEST) && e->stream == stream)
			return e;
	}
	return NULL;
}

static void complete(struct cql_conn *c, struct entry *e)
{
	e->done = true;
	c->st.exchanges++;
}

static bool dropped_take(struct cql_conn *c, int16_t stream)
{
	for (unsigned i = 0; i < c->ndropped; i++) {
		if (c->dropped[i] != stream)
			continue;
		memmove(c->dropped + i, c->dropped + i + 1,
			(c->ndropped - i - 1) * sizeof(c->dropped[0]));
		c->ndropped--;
		return true;
	}
	return false;
}

static void dropped_add(struct cql_conn *c, int16_t stream)
{
	dropped_take(c, stream);
	if (c->ndropped == DROPPED_MAX) {
		memmove(c->dropped, c->dropped + 1, (DROPPED_MAX - 1) * sizeof(c->dropped[0]));
		c->ndropped--;
	}
	c->dropped[c->ndropped++] = stream;
}

/* --- prepared ids --- */

static struct prepared *prep_find(struct cql_conn *c, const uint8_t *id, size_t len)
{
	if (len > CQL_ID_MAX)
		len = CQL_ID_MAX;
	for (unsigned i = 0; c->prep && i < CQL_MAX_PREPARED; i++) {
		struct prepared *p = &c->prep[i];

		if (p->used && p->id_len == len && !memcmp(p->id, id, len))
			return p;
	}
	return NULL;
}

static void prep_put(struct cql_conn *c, const uint8_t *id, size_t len, const struct entry *e)
{
	struct prepared *p;

	if (!c->prep) {
		c->prep = calloc(CQL_MAX_PREPARED, sizeof(*c->prep));
		if (!c->prep) {
			c->st.alloc_failures++;
			return;
		}
	}
	if (len > CQL_ID_MAX)
		len = CQL_ID_MAX;
	p = prep_find(c, id, len);
	for (unsigned i = 0; !p && i < CQL_MAX_PREPARED; i++)
		if (!c->prep[i].used)
			p = &c->prep[i];
	if (!p) {
		p = &c->prep[0];
		for (unsigned i = 1; i < CQL_MAX_PREPARED; i++)
			if (c->prep[i].used_at < p->used_at)
				p = &c->prep[i];
		c->cq.prepared_evicted++;
	}
	memcpy(p->id, id, len);
	p->id_len = (uint8_t)len;
	p->used = true;
	p->used_at = ++c->clock;
	p->cut = e->x.flags & L7_F_TARGET_TRUNCATED;
	memcpy(p->text, e->x.target, sizeof(p->text));
}

/* The text of a prepared id ([short bytes] at r) into e's target. */
static void target_of_id(struct cql_conn *c, struct entry *e, struct rd *r)
{
	uint32_t n = rd_u16(r);
	struct prepared *p;

	if (!r->bad && n > r->total - r->off)
		c->st.malformed++;
	if (r->bad || n > r->n - r->off)
		return;
	p = prep_find(c, r->p + r->off, n);
	if (!p) {
		c->cq.prepared_unknown++;
		return;
	}
	p->used_at = ++c->clock;
	memcpy(e->x.target, p->text, sizeof(e->x.target));
	if (p->cut)
		e->x.flags |= L7_F_TARGET_TRUNCATED;
}

/* A [long string] at r into e's target. */
static void target_of_text(struct cql_conn *c, struct entry *e, struct rd *r)
{
	uint32_t n = rd_u32(r);
	size_t have;

	if (r->bad)
		return;
	/* longer than the frame: not a string */
	if (n > r->total - r->off) {
		c->st.malformed++;
		return;
	}
	have = r->n - r->off < n ? r->n - r->off : n;
	if (l7__copy_str(e->x.target, sizeof(e->x.target), r->p + r->off, have) || have < n)
		e->x.flags |= L7_F_TARGET_TRUNCATED;
}

/* --- frames --- */

static bool is_resp(const uint8_t *h)
{
	return h[0] & 0x80;
}

static unsigned version(const uint8_t *h)
{
	return h[0] & 0x7f;
}

static int16_t stream_of(const uint8_t *h)
{
	return (int16_t)be16(h + 2);
}

static uint32_t body_len(const uint8_t *h)
{
	return be32(h + 5);
}

static bool header_ok(const struct cql_conn *c, int di, const uint8_t *h)
{
	unsigned v = version(h), op = h[4];
	int16_t stream = stream_of(h);

	if (v != 3 && v != 4 && v != 5 && v != 0x41 && v != 0x42)
		return false;
	if ((h[1] & ~F_KNOWN) || op > OP_MAX || body_len(h) > CQL_MAX_FRAME)
		return false;
	if (c->req_dir >= 0 && (di == c->req_dir) == is_resp(h))
		return false;
	if (!is_resp(h))
		return req_names[op] && stream >= 0;
	if (!resp_ops[op])
		return false;
	return op == OP_EVENT ? stream == -1 : stream >= 0;
}

static void set_req_dir(struct cql_conn *c, int di)
{
	c->req_dir = di;
	c->role = di == L7_EGRESS ? L7_ROLE_CLIENT : L7_ROLE_SERVER;
}

static void frame_reset(struct dir *d)
{
	l7msg__frame_reset(&d->f);
	d->keep_len = 0;
}

static const struct l7msg_frame_ops frame_ops;

static void set_off(struct cql_conn *c)
{
	c->off = true;
	c->st.bytes_unattributed += l7msg__frames_stop(c, &c->d[0].f, &c->d[1].f, &frame_ops);
}

static void request_frame(struct cql_conn *c, int di, uint64_t ts, uint64_t bytes)
{
	struct dir *d = &c->d[di];
	const uint8_t *h = d->hdr;
	int16_t stream = stream_of(h);
	struct rd r = { d->keep, d->keep_len, 0, body_len(h), false };
	struct entry *e, *old;

	c->st.requests++;
	/* Streams are reused once answered: the older request's answer was not seen. */
	old = find_stream(c, stream);
	if (old) {
		old->x.flags |= L7_F_NO_RESPONSE;
		old->x.end_ns = ts;
		c->st.unanswered++;
		c->cq.streams_reused++;
		complete(c, old);
	}
	e = slot_new(c);
	if (!e) {
		c->st.requests_dropped++;
		c->st.bytes_unattributed += bytes;
		dropped_add(c, stream);
		return;
	}
	e->stream = stream;
	e->opcode = h[4];
	e->event = c->sg.events;
	l7msg__frame_request(&e->x, &d->f, di, bytes);
	memcpy(e->x.op, req_names[h[4]], strlen(req_names[h[4]]) + 1);
	if (h[1] & F_COMPRESSED)
		return;
	if ((h[1] & F_PAYLOAD) && version(h) >= 4)
		rd_bytes_map(&r);
	switch (h[4]) {
	case OP_QUERY:
	case OP_PREPARE:
		target_of_text(c, e, &r);
		break;
	case OP_EXECUTE:
		target_of_id(c, e, &r);
		break;
	case OP_BATCH:
		rd_skip(&r, 1);
		rd_u16(&r);
		if (r.off < r.n && r.p[r.off] == 0) {
			rd_skip(&r, 1);
			target_of_text(c, e, &r);
		} else if (r.off < r.n && r.p[r.off] == 1) {
			rd_skip(&r, 1);
			target_of_id(c, e, &r);
		}
		break;
	}
}

/* What a response says: its code, and a Prepared result's id. */
static void response_body(struct cql_conn *c, const struct dir *d, struct entry *e)
{
	const uint8_t *h = d->hdr;
	struct rd r = { d->keep, d->keep_len, 0, body_len(h), false };
	/* Only a body kept whole that does not parse is malformed, not one cut short. */
	bool whole = d->keep_len == body_len(h);
	uint32_t kind;

	if (h[4] == OP_ERROR)
		e->x.error = 1;
	if (h[1] & F_COMPRESSED)
		return;
	if (h[1] & F_TRACING)
		rd_skip(&r, 16);
	if ((h[1] & F_WARNING) && version(h) >= 4)
		rd_string_list(&r);
	if ((h[1] & F_PAYLOAD) && version(h) >= 4)
		rd_bytes_map(&r);
	if (h[4] == OP_ERROR) {
		e->x.code = (int32_t)rd_u32(&r);
		if (r.bad) {
			e->x.code = 0;
			c->st.malformed += whole;
		}
		return;
	}
	if (h[4] != OP_RESULT)
		return;
	kind = rd_u32(&r);
	if (r.bad || kind < 1 || kind > 5) {
		c->st.malformed += whole;
		return;
	}
	if (kind == 4 && e->opcode == OP_PREPARE && !(e->x.flags & L7_F_NO_REQUEST)) {
		uint32_t n = rd_u16(&r);

		if (!r.bad && n && n <= r.n - r.off)
			prep_put(c, r.p + r.off, n, e);
	}
}

static void response_frame(struct cql_conn *c, int di, uint64_t ts, uint64_t bytes)
{
	struct dir *d = &c->d[di];
	const uint8_t *h = d->hdr;
	int16_t stream = stream_of(h);
	struct entry *e;

	if (h[4] == OP_EVENT) {
		c->cq.events++;
		c->st.bytes_unattributed += bytes;
		return;
	}
	c->st.responses++;
	e = find_stream(c, stream);
	/* One that began before its request was complete answers something else. */
	if (e && e->event > d->start_event)
		e = NULL;
	if (!e && dropped_take(c, stream)) {
		c->st.responses_dropped++;
		c->st.bytes_unattributed += bytes;
		return;
	}
	if (!e) {
		c->st.orphan_responses++;
		e = slot_new(c);
		if (!e) {
			c->st.responses_dropped++;
			c->st.bytes_unattributed += bytes;
			return;
		}
		e->stream = stream;
		e->x.flags = L7_F_NO_REQUEST;
		e->x.start_ns = d->start_ns;
		e->x.req_dir = (uint8_t)!di;
	}
	e->x.resp_bytes = bytes;
	e->x.end_ns = ts;
	if (d->trunc)
		e->x.flags |= L7_F_RESP_TRUNCATED;
	response_body(c, d, e);
	complete(c, e);
	/* v5 changes its framing once STARTUP is answered: segments this parser does not read */
	if (version(h) == 5 && e->opcode == OP_STARTUP &&
	    (h[4] == OP_READY || h[4] == OP_AUTHENTICATE)) {
		c->cq.v5_switches++;
		set_off(c);
	}
}

/* A frame ended (whole, or cut with what was captured). */
static void frame_done(void *cv, int di, uint64_t ts)
{
	struct cql_conn *c = cv;
	struct dir *d = &c->d[di];
	uint64_t bytes = d->bytes;

	d->bytes = 0;
	if (version(d->hdr) == 5)
		c->cq.v5_frames++;
	if (d->hdr[1] & F_COMPRESSED)
		c->cq.compressed++;
	if (is_resp(d->hdr))
		response_frame(c, di, ts, bytes);
	else
		request_frame(c, di, ts, bytes);
	if (d->st != L7MSG_FR_DEAD) {
		frame_reset(d);
		d->st = L7MSG_FR_HDR;
	}
}

static void lose_framing(struct cql_conn *c, int di)
{
	struct dir *d = &c->d[di];

	if (d->synced)
		c->st.resyncs++;
	d->synced = false;
	d->resync = false;
	frame_reset(d);
	d->st = L7MSG_FR_SKIP;
}

/* A header that is not one: its bytes are garbage, the direction skips. */
static void bad_start(struct cql_conn *c, int di)
{
	struct dir *d = &c->d[di];

	c->st.bytes_unattributed += d->bytes;
	if (!d->synced)
		c->cq.bad_starts++;
	lose_framing(c, di);
	if (c->req_dir < 0 && ++c->bad_unknown >= CQL_MAX_BAD_STARTS) {
		c->st.bytes_unattributed +=
			l7msg__frames_stop(c, &c->d[0].f, &c->d[1].f, &frame_ops);
		c->st.dirs_abandoned += 2;
	}
}

static void header_done(void *cv, int di, uint64_t ts)
{
	struct cql_conn *c = cv;
	struct dir *d = &c->d[di];
	const uint8_t *h = d->hdr;
	bool ok = header_ok(c, di, h);

	/* After a loss, only a whole frame in the segment, answering a pending request. */
	if (ok && d->resync) {
		ok = HDR_LEN + (uint64_t)body_len(h) <= d->seg_actual;
		if (ok && is_resp(h) && h[4] != OP_EVENT)
			ok = find_stream(c, stream_of(h)) != NULL;
	}
	if (!ok) {
		bad_start(c, di);
		return;
	}
	if (c->req_dir < 0)
		set_req_dir(c, is_resp(h) ? !di : di);
	d->synced = true;
	d->resync = false;
	d->remaining = body_len(h);
	d->st = L7MSG_FR_BODY;
	if (!d->remaining)
		frame_done(c, di, ts);
}

static void dir_reset(void *cv, int di)
{
	struct cql_conn *c = cv;

	frame_reset(&c->d[di]);
}

static bool body_bytes(void *cv, int di, const uint8_t *p, size_t k)
{
	struct cql_conn *c = cv;
	struct dir *d = &c->d[di];

	l7__take(d->keep, &d->keep_len, CQL_BODY_KEEP, p, k);
	return true;
}

static void skipped(void *cv, int di, uint64_t n)
{
	struct cql_conn *c = cv;

	(void)di;
	c->st.bytes_unattributed += n;
}

/* A resynchronizing header shows itself within its own segment. */
static void seg_end(void *cv, int di)
{
	struct cql_conn *c = cv;
	struct dir *d = &c->d[di];

	if (d->resync && d->st == L7MSG_FR_HDR && d->hdr_len)
		bad_start(c, di);
}

L7MSG_DEFINE_FRAMES(struct cql_conn, HDR_LEN, frame_done)

static void dir_skip(void *cv, int di, uint64_t n, bool known, uint64_t ts)
{
	struct cql_conn *c = cv;
	struct dir *d = &c->d[di];

	switch (d->st) {
	case L7MSG_FR_DEAD:
	case L7MSG_FR_SKIP:
		c->st.bytes_unattributed += n;
		return;
	case L7MSG_FR_BODY:
		d->trunc = true;
		if (known && n <= d->remaining) {
			d->bytes += n;
			d->remaining -= n;
			if (!d->remaining)
				frame_done(c, di, ts);
			return;
		}
		if (known) {
			d->bytes += d->remaining;
			n -= d->remaining;
		}
		d->remaining = 0;
		frame_done(c, di, ts);
		break;
	case L7MSG_FR_HDR:
		/* a header cut short: the frame it began is unknown */
		c->st.bytes_unattributed += d->bytes;
		d->bytes = 0;
		break;
	}
	c->st.bytes_unattributed += n;
	if (d->st != L7MSG_FR_DEAD)
		lose_framing(c, di);
}

/* --- l7_ops --- */

static void *cql_new(unsigned flags)
{
	struct cql_conn *c = l7__stream_new(sizeof(*c), flags);

	if (!c)
		return NULL;
	c->req_dir = -1;
	return c;
}

static void cql_free(void *p)
{
	struct cql_conn *c = p;

	if (!c)
		return;
	free(c->prep);
	free(c->slots);
	free(c);
}

static const struct l7_seg_ops seg_ops = {
	.read = dir_feed,
	.skip = dir_skip,
	.read_empty = true, /* a segment, empty too, ends a resynchronizing candidate */
};

L7_DEFINE_SEG(static, cql, struct cql_conn)

static void cql_close(void *p, uint64_t ts_ns)
{
	struct cql_conn *c = p;
	int first = c && c->req_dir >= 0 ? c->req_dir : L7_EGRESS;

	if (!c || c->sg.closed)
		return;
	c->sg.events++;
	/* The request side first: a request cut by the close is there for its response. */
	for (int k = 0; k < 2; k++) {
		int di = k ? !first : first;
		struct dir *d = &c->d[di];

		if (d->st == L7MSG_FR_BODY) {
			d->trunc = true;
			frame_done(c, di, c->sg.ts[di]);
		} else if (d->st == L7MSG_FR_HDR) {
			c->st.bytes_unattributed += d->bytes;
		}
		frame_reset(d);
		d->st = L7MSG_FR_DEAD;
	}
	for (unsigned i = 0; i < c->cap; i++) {
		struct entry *e = &c->slots[i];

		if (!e->id || e->done)
			continue;
		e->x.flags |= L7_F_NO_RESPONSE;
		e->x.end_ns = ts_ns;
		c->st.unanswered++;
		complete(c, e);
	}
	c->sg.closed = true;
}

static int cql_next(void *p, struct l7_exchange *ret)
{
	struct cql_conn *c = p;
	struct entry *best = NULL;

	if (!c)
		return 0;
	for (unsigned i = 0; i < c->cap; i++) {
		struct entry *e = &c->slots[i];

		if (e->id && e->done && (!best || e->id < best->id))
			best = e;
	}
	if (!best)
		return 0;
	if (ret)
		*ret = best->x;
	best->id = 0;
	c->used--;
	return 1;
}

L7_DEFINE_GETTERS(cql, struct cql_conn)

int cql__stats(const void *p, struct cql_stats *ret)
{
	const struct cql_conn *c = p;

	if (!c || !ret)
		return -EINVAL;
	*ret = c->cq;
	return 0;
}

const struct l7_ops l7_cql_ops = {
	.name = "cql",
	.title = "Cassandra CQL",
	L7_OPS_OF(cql),
};
