// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side, a NETWORK task's analysis: what HTTP's exchanges add beyond the meters, read
 * from the exchanges the parsers yield (l7_exchange.http): the sampling rules, the sampled
 * traces, and the keeper of the bytes their span attached events carry.
 *
 * The keeper: while some rule requires complete requests or responses, each HTTP connection
 * keeps its recent segments per direction (bytes and times), for the span attached events of
 * the exchanges that get sampled: the parser keeps no bytes. Offsets count every byte the
 * syscalls moved, so a message is cut out at its offset for as many bytes as the parser
 * counted in it. Where the next message begins is known from the one before; that guess is
 * checked against a start line at the offset (or at a later segment start or line start,
 * where a message seen by nobody, a skipped request or garbage, moved it), and a request is
 * looked for only in the segments the parser timed its first byte with. Approximations:
 *  - a message is kept from its start for keep_run bytes, counted from the last segment that
 *    began with a start line: pipelined messages sharing that run may be kept in part or not
 *    at all (their events then say less or are not sent, counted in raw_missed);
 *  - the bytes after the first one not captured (a syscall larger than the capture) are not
 *    part of the content: what the content shows stops there;
 *  - lost segments of unknown size end everything kept before them in that direction.
 */
#include <stdlib.h>
#include <string.h>

#include "shipper/network/netpriv.h"
#include "shipper/network/protocols/http/http2.h"

/* Sampled traces held by the task before an interval moves them into traffic. */
#define MAX_SAMPLES_HELD 2048u
/*
 * The keeper's bounds: segments and bytes per direction of a connection (two messages' worth
 * of keep_run), bytes of the whole task; and the content of the samples' events held.
 */
#define KEEP_SEGS_MAX 256u
#define KEEP_TOTAL_MAX (32u << 20)
#define RAW_HELD_MAX (16u << 20)

/* A segment the keeper holds: the first len of the actual bytes a syscall moved. */
struct net_kseg {
	struct net_kseg *next;
	uint64_t off; /* of its first byte in its direction's stream */
	uint64_t ts;  /* the time the parser was given with it */
	uint64_t start_ns, end_ns;
	uint32_t actual;
	uint32_t len;
	uint8_t data[];
};

struct net_keep_dir {
	struct net_kseg *head, *tail;
	uint32_t nsegs;
	uint64_t bytes;	 /* kept */
	uint64_t off;	 /* of the next segment */
	uint64_t run;	 /* kept since the last segment that began with a start line */
	uint64_t cursor; /* where the next message should begin */
};

static void keep_drop_head(struct net_task *t, struct net_keep_dir *k)
{
	struct net_kseg *g = k->head;

	k->head = g->next;
	if (!k->head)
		k->tail = NULL;
	k->nsegs--;
	k->bytes -= g->len;
	t->keep_bytes -= g->len;
	free(g);
}

void net__keep_free(struct net_task *t, struct net_conn_st *c)
{
	if (!c->keep)
		return;
	for (int d = 0; d < 2; d++)
		while (c->keep[d].head)
			keep_drop_head(t, &c->keep[d]);
	free(c->keep);
	c->keep = NULL;
}

static const struct net_rule *rule_for(struct net_task *t, const char *path)
{
	const struct net_rule *def = NULL, *hit = NULL;

	for (size_t i = 0; i < t->nrules; i++) {
		const struct net_rule *r = &t->rules[i];
		int rc;

		if (!r->has_re) {
			def = r;
			continue;
		}
		rc = pcre2_match(r->re, (PCRE2_SPTR)path, PCRE2_ZERO_TERMINATED, 0, 0, r->md,
				 t->mctx);
		if (rc >= 0)
			hit = r; /* the last match wins, as upstream's loop */
		else if (rc != PCRE2_ERROR_NOMATCH)
			t->st.rule_limits++;
	}
	return hit ? hit : def;
}

/* A segment fed to the parser at ts; hole: segments of this direction were lost before it. */
void net__keep_add(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		   const uint8_t *bytes, uint64_t ts, bool hole)
{
	struct net_keep_dir *k;
	struct net_kseg *g;
	uint32_t len = d->captured;

	if (!t->keep_run || !c->l7 || !c->ops->keepable)
		return;
	if (!c->keep) {
		c->keep = calloc(2, sizeof(*c->keep));
		if (!c->keep) {
			t->st.alloc_failures++;
			return;
		}
	}
	k = &c->keep[d->dir];
	if (hole) {
		/* Offsets after a hole of unknown size do not follow the ones before. */
		while (k->head)
			keep_drop_head(t, k);
		k->cursor = k->off;
	}
	if (!d->actual)
		return;
	if (c->ops->detect(bytes, d->captured) > 0)
		k->run = 0;
	if (k->run >= t->keep_run)
		len = 0;
	else if (len > t->keep_run - k->run)
		len = (uint32_t)(t->keep_run - k->run);
	if (len && t->keep_bytes + len > KEEP_TOTAL_MAX) {
		t->st.keep_refused += len;
		len = 0;
	}
	g = k->tail;
	if (!len && g && g->off + g->actual == k->off && g->actual <= UINT32_MAX - d->actual) {
		/* Nothing kept of it: its time and size go to the segment before. */
		g->actual += d->actual;
		g->end_ns = d->end_ns;
		k->off += d->actual;
		return;
	}
	g = malloc(sizeof(*g) + len);
	if (!g) {
		t->st.alloc_failures++;
		k->off += d->actual;
		return;
	}
	g->next = NULL;
	g->off = k->off;
	g->ts = ts;
	g->start_ns = d->start_ns;
	g->end_ns = d->end_ns;
	g->actual = d->actual;
	g->len = len;
	memcpy(g->data, bytes, len);
	if (k->tail)
		k->tail->next = g;
	else
		k->head = g;
	k->tail = g;
	k->nsegs++;
	k->bytes += len;
	k->run += len;
	k->off += d->actual;
	t->keep_bytes += len;
	while (k->nsegs > KEEP_SEGS_MAX || k->bytes > 2 * (uint64_t)t->keep_run)
		keep_drop_head(t, k);
}

/* Up to len kept bytes from off on, as long as they follow each other. */
static size_t keep_peek(const struct net_kseg *g, uint64_t off, uint8_t *out, size_t len)
{
	size_t n = 0;

	for (; g && n < len; g = g->next) {
		size_t from, k;

		if (g->off + g->len <= off)
			continue;
		if (g->off > off)
			break;
		from = (size_t)(off - g->off);
		k = g->len - from < len - n ? g->len - from : len - n;
		memcpy(out + n, g->data + from, k);
		n += k;
		off += k;
		if (g->len < g->actual)
			break; /* the rest of it was not captured */
	}
	return n;
}

/*
 * The first place at or after from where a message of kind (L7_DETECT_*, by detect) begins,
 * in segments timed ts_lo..ts_hi: from itself, a segment's start, or a line's.
 */
static bool keep_find(const struct net_keep_dir *k, int (*detect)(const uint8_t *, size_t),
		      uint64_t from, int kind, uint64_t ts_lo, uint64_t ts_hi, uint64_t *ret_off)
{
	for (const struct net_kseg *g = k->head; g; g = g->next) {
		uint64_t q = from > g->off ? from : g->off;

		if (g->ts < ts_lo || g->ts > ts_hi)
			continue;
		for (; q < g->off + g->len; q++) {
			uint8_t peek[16];
			size_t n;

			if (q != from && q != g->off && g->data[q - g->off - 1] != '\n')
				continue;
			n = keep_peek(g, q, peek, sizeof(peek));
			if (detect(peek, n) == kind) {
				*ret_off = q;
				return true;
			}
		}
	}
	return false;
}

/*
 * Where the exchange's request and response begin, each direction's guess moved past them.
 * Every exchange goes through here, sampled or not, so that the guesses follow the streams.
 */
void net__keep_locate(struct net_conn_st *c, const struct l7_exchange *x, struct net_pos ret[2])
{
	struct net_keep_dir *q = &c->keep[x->req_dir & 1], *r = &c->keep[!(x->req_dir & 1)];
	int (*detect)(const uint8_t *, size_t) = c->ops->detect;
	uint64_t off;

	if (!(x->flags & L7_F_NO_REQUEST) && x->req_bytes &&
	    keep_find(q, detect, q->cursor, L7_DETECT_REQUEST, x->start_ns, x->start_ns, &off)) {
		ret[0] = (struct net_pos){ .found = true, .off = off, .bytes = x->req_bytes };
		q->cursor = off + x->req_bytes;
	}
	if (!(x->flags & L7_F_NO_RESPONSE) && x->resp_bytes &&
	    keep_find(r, detect, r->cursor, L7_DETECT_RESPONSE, x->start_ns, x->end_ns, &off)) {
		ret[1] = (struct net_pos){ .found = true, .off = off, .bytes = x->resp_bytes };
		r->cursor = off + x->resp_bytes;
	}
}

/*
 * The event's form of a message found at pos: content of at most max bytes (0: NET_RAW_MAX),
 * times from its segments. NULL when it is no longer kept, or over the bounds (counted).
 */
static struct net_raw *keep_raw(struct net_task *t, struct net_conn_st *c, int dir,
				const struct net_pos *pos, uint32_t max)
{
	const struct net_keep_dir *k = &c->keep[dir];
	uint64_t start_ns = 0, end_ns = 0;
	struct net_raw *raw = NULL;
	uint8_t *msg = NULL;
	char *out = NULL;
	bool seen = false;
	size_t n, clen;

	if (!max || max > NET_RAW_MAX)
		max = NET_RAW_MAX;
	for (const struct net_kseg *g = k->head; g; g = g->next) {
		if (g->off + g->actual <= pos->off || g->off >= pos->off + pos->bytes)
			continue;
		if (!seen)
			start_ns = g->start_ns;
		seen = true;
		end_ns = g->end_ns;
	}
	if (!seen) {
		t->st.raw_missed++;
		return NULL;
	}
	msg = malloc(NET_RAW_MAX);
	out = malloc(max + NET_CONTENT_SLACK);
	if (!msg || !out) {
		t->st.alloc_failures++;
		goto cleanup;
	}
	n = keep_peek(k->head, pos->off, msg, pos->bytes < NET_RAW_MAX ? pos->bytes : NET_RAW_MAX);
	if (!n) {
		t->st.raw_missed++;
		goto cleanup;
	}
	clen = net__http_content(msg, n, max, out, max + NET_CONTENT_SLACK);
	if (t->raw_held + clen > RAW_HELD_MAX) {
		t->st.raw_dropped++;
		goto cleanup;
	}
	raw = malloc(sizeof(*raw) + clen + 1);
	if (!raw) {
		t->st.alloc_failures++;
		goto cleanup;
	}
	raw->start_ns = start_ns;
	raw->end_ns = end_ns;
	raw->size = pos->bytes;
	raw->inbound = dir == NET_DIR_INGRESS;
	raw->len = (uint32_t)clen;
	memcpy(raw->content, out, clen + 1);
	t->raw_held += clen;
cleanup:
	free(msg);
	free(out);
	return raw;
}

void net__sample(struct net_task *t, struct net_conn_st *c, const struct http1_exchange *x,
		 uint64_t ms, const struct net_pos pos[2])
{
	struct net_trace_ref ref;
	const struct net_rule *r;
	struct net_sample *s;
	int reason, prov;

	if (!t->nrules)
		return;
	prov = net__trace_ctx(x, &ref);
	if (!prov)
		return;
	{
		char path[HTTP1_URI_MAX + 1];

		memcpy(path, x->uri, x->path_len);
		path[x->path_len] = '\0';
		r = rule_for(t, path);
	}
	if (!r)
		return;
	if (r->r.when_5xx && x->status >= 500 && x->status < 600)
		reason = NET_5XX;
	else if (r->r.when_4xx && x->status >= 400 && x->status < 500)
		reason = NET_4XX;
	else if (r->r.min_duration_ms >= 0 && (uint64_t)r->r.min_duration_ms <= ms)
		reason = NET_SLOW;
	else
		return;
	if (t->samples_held >= MAX_SAMPLES_HELD) {
		t->st.samples_dropped++;
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		t->st.alloc_failures++;
		return;
	}
	t->samples_held++;
	s->latency_ms = ms;
	s->status = x->status;
	s->zipkin = prov == 2;
	memcpy(s->uri, x->uri, x->path_len);
	s->uri[x->path_len] = '\0';
	s->ref = ref;
	if (r->r.require_complete_request) {
		if (pos[0].found)
			s->raw[0] = keep_raw(t, c, x->req_dir & 1, &pos[0], r->r.max_request_size);
		else
			t->st.raw_missed++;
	}
	if (r->r.require_complete_response) {
		if (pos[1].found)
			s->raw[1] =
				keep_raw(t, c, !(x->req_dir & 1), &pos[1], r->r.max_response_size);
		else
			t->st.raw_missed++;
	}
	net__topn_add(t, &c->acc, reason, s);
}
