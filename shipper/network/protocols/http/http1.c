// SPDX-License-Identifier: Apache-2.0
/*
 * HTTP/1.x parser of one connection, two directions (see http1.h). Each direction is a state
 * machine over bytes; lines (start line, header fields, chunk sizes, trailers) are collected
 * into its bounded line buffer, bodies are only counted. Exchanges live in one FIFO ring, in
 * request order; a response pairs with the request numbered after the last one answered.
 */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http1.h"
#include "shipper/network/protocols/l7.h"

/* Long enough for "OPTIONS /" and for "HTTP/1.1 200". */
#define DETECT_PEEK 16u
/* 10^18 and 2^60: no length of a real body comes near, and sums of them cannot wrap. */
#define MAX_DEC_DIGITS 18u
#define MAX_HEX_DIGITS 15u

_Static_assert((HTTP1_MAX_PENDING & (HTTP1_MAX_PENDING - 1)) == 0, "a power of two");
_Static_assert(HTTP1_MAX_PENDING >= L7_RING_MIN, "the ring grows by doubling from L7_RING_MIN");

enum state {
	S_BOUNDARY,    /* between messages: CR and LF are skipped */
	S_START,       /* collecting a candidate start line */
	S_HEADER,      /* collecting header lines */
	S_BODY,	       /* `remaining` body bytes */
	S_CHUNK_SIZE,  /* collecting a chunk size line */
	S_CHUNK_DATA,  /* `remaining` chunk bytes */
	S_CHUNK_END,   /* the CRLF after chunk data */
	S_TRAILER,     /* trailer lines up to an empty one */
	S_UNTIL_CLOSE, /* response body delimited by the connection's end */
	S_SKIP,	       /* framing lost: up to the next candidate start */
	S_DEAD,	       /* not parsed any more */
};

/* Message flags, mapped onto the request's or the response's http1_flags. */
enum {
	M_TRUNC = 1,
	M_HDR_TRUNC = 2,
};

enum kind {
	K_NONE = 0,
	K_REQUEST = HTTP1_DETECT_REQUEST,
	K_RESPONSE = HTTP1_DETECT_RESPONSE,
};

struct entry {
	struct http1_exchange x;
	uint64_t id;	/* unique in the connection, never 0 */
	uint64_t seq;	/* request number; 0 for a response without request */
	uint64_t event; /* feed or loss that completed the request's header block */
	bool done;
};

struct dir {
	enum state st;
	bool in_msg;	 /* a start line was accepted and its message has not ended */
	bool is_req;	 /* of the message in progress */
	bool interim;	 /* a 1xx response */
	bool tunnel;	 /* a response after which HTTP ends */
	bool ever_valid; /* carried a valid start line once */
	bool line_over;
	bool has_cl, cl_bad, chunked, te_other;
	uint32_t bad;	 /* failed candidate starts while never valid */
	uint32_t mflags; /* M_* of the message in progress */
	size_t line_len;
	uint64_t line_total; /* bytes of the candidate start line, CR LF and overflow included */
	uint64_t line_start_ns;
	uint64_t line_start_event;
	uint64_t start_event;
	uint64_t msg_bytes; /* of the message in progress, not yet given to its exchange */
	uint64_t start_ns;
	uint64_t last_ts; /* segment that last gave bytes to the message */
	uint64_t remaining;
	uint64_t content_length;
	uint64_t entry_id;	 /* exchange the message goes to, 0 for none */
	struct http1_exchange x; /* fields parsed from the message in progress */
	uint8_t line[HTTP1_LINE_MAX];
};

struct http1_conn {
	enum http1_role role;
	struct l7_seg sg;
	uint64_t req_seq;  /* requests numbered so far, dropped ones included */
	uint64_t resp_seq; /* requests a final response was paired with (or dropped for) */
	uint64_t next_id;
	struct l7_ring q; /* of struct entry */
	struct http1_stats st;
	struct dir d[2];
	struct http1_exchange *sw; /* the latest 101, for the protocol that follows */
};

static const char *const methods[] = {
	"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
};

static bool is_digit(uint8_t ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_ows(uint8_t ch)
{
	return ch == ' ' || ch == '\t';
}

static uint8_t lower(uint8_t ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch;
}

static int parse_dec(const uint8_t *p, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	if (!n || n > MAX_DEC_DIGITS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(p[i]))
			return -EINVAL;
		v = v * 10 + (p[i] - '0');
	}
	*ret = v;
	return 0;
}

static int hex_value(uint8_t ch)
{
	if (is_digit(ch))
		return ch - '0';
	ch = lower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* chunk-size [ BWS ; chunk-ext ]: the extension is not looked at. */
static int parse_chunk_size(const uint8_t *p, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0;

	for (; i < n && hex_value(p[i]) >= 0; i++) {
		if (i == MAX_HEX_DIGITS)
			return -EINVAL;
		v = v << 4 | (uint64_t)hex_value(p[i]);
	}
	if (!i)
		return -EINVAL;
	while (i < n && is_ows(p[i]))
		i++;
	if (i < n && p[i] != ';')
		return -EINVAL;
	*ret = v;
	return 0;
}

static bool target_start_ok(uint8_t ch)
{
	return ch == '/' || ch == '*' || is_digit(ch) || (lower(ch) >= 'a' && lower(ch) <= 'z');
}

int http1__detect(const uint8_t *p, size_t n)
{
	static const char resp[] = "HTTP/1.";
	bool maybe = false;
	size_t k;

	if (!p)
		n = 0;
	if (n > DETECT_PEEK)
		n = DETECT_PEEK;
	k = n < 7 ? n : 7;
	if (!memcmp(p ? (const void *)p : "", resp, k)) {
		if (n < 12)
			maybe = true;
		else if (is_digit(p[7]) && p[8] == ' ' && is_digit(p[9]) && is_digit(p[10]) &&
			 is_digit(p[11]))
			return HTTP1_DETECT_RESPONSE;
	}
	for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
		size_t len = strlen(methods[m]);

		k = n < len ? n : len;
		if (memcmp(p ? (const void *)p : "", methods[m], k))
			continue;
		if (n < len + 2)
			maybe = true;
		else if (p[len] == ' ' && target_start_ok(p[len + 1]))
			return HTTP1_DETECT_REQUEST;
	}
	return maybe ? -EAGAIN : 0;
}

struct start {
	enum kind kind;
	const char *method;
	const uint8_t *target;
	size_t target_len;
	bool target_cut; /* the line ended before the target did */
	uint8_t version;
	uint16_t status;
};

/*
 * A start line. A partial one (cut by the line buffer or by a gap) may lack what follows the
 * target, or the reason phrase.
 */
static enum kind parse_start(const uint8_t *l, size_t n, bool partial, struct start *s)
{
	int kind = http1__detect(l, n);
	const uint8_t *sp;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (kind == HTTP1_DETECT_RESPONSE) {
		if (n > 12 && l[12] != ' ')
			return K_NONE;
		s->status = (uint16_t)((l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0'));
		if (s->status < 100 || s->status > 599)
			return K_NONE;
		s->version = (uint8_t)(10 + (l[7] - '0'));
		s->kind = K_RESPONSE;
		return K_RESPONSE;
	}
	if (kind != HTTP1_DETECT_REQUEST)
		return K_NONE;
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t len = strlen(methods[i]);

		if (n > len && !memcmp(l, methods[i], len) && l[len] == ' ') {
			s->method = methods[i];
			break;
		}
	}
	if (!s->method)
		return K_NONE;
	s->target = l + strlen(s->method) + 1;
	i = n - (size_t)(s->target - l);
	sp = memchr(s->target, ' ', i);
	if (!sp) {
		if (!partial)
			return K_NONE;
		s->target_len = i;
		s->target_cut = true;
	} else {
		size_t rest = n - (size_t)(sp + 1 - l);

		s->target_len = (size_t)(sp - s->target);
		if (rest >= 8 && !memcmp(sp + 1, "HTTP/1.", 7) && is_digit(sp[8]) && rest == 8)
			s->version = (uint8_t)(10 + (sp[8] - '0'));
		else if (!partial || rest >= 8 || memcmp(sp + 1, "HTTP/1.", rest < 7 ? rest : 7))
			return K_NONE;
	}
	if (!s->target_len || memchr(s->target, '\t', s->target_len))
		return K_NONE;
	s->kind = K_REQUEST;
	return K_REQUEST;
}

/* --- the exchange ring --- */

static struct entry *ring_at(struct http1_conn *c, unsigned i)
{
	return l7_ring__at(&c->q, sizeof(struct entry), i);
}

static struct entry *ring_push(struct http1_conn *c)
{
	struct entry *e =
		l7_ring__push(&c->q, sizeof(*e), HTTP1_MAX_PENDING, &c->st.alloc_failures);

	if (!e)
		return NULL;
	e->id = ++c->next_id;
	return e;
}

static struct entry *find_id(struct http1_conn *c, uint64_t id)
{
	return l7_ring__find(&c->q, sizeof(struct entry), offsetof(struct entry, id), id);
}

static struct entry *find_seq(struct http1_conn *c, uint64_t seq)
{
	return l7_ring__find(&c->q, sizeof(struct entry), offsetof(struct entry, seq), seq);
}

/* --- one direction --- */

static uint32_t req_flags(uint32_t m)
{
	return (m & M_TRUNC ? HTTP1_F_REQ_TRUNCATED : 0) |
	       (m & M_HDR_TRUNC ? HTTP1_F_REQ_HDR_TRUNCATED : 0);
}

static uint32_t resp_flags(uint32_t m)
{
	return (m & M_TRUNC ? HTTP1_F_RESP_TRUNCATED : 0) |
	       (m & M_HDR_TRUNC ? HTTP1_F_RESP_HDR_TRUNCATED : 0);
}

static void line_reset(struct dir *d)
{
	d->line_len = 0;
	d->line_over = false;
}

static void begin_candidate(struct dir *d)
{
	line_reset(d);
	d->line_total = 0;
	d->st = S_START;
}

/* Bytes, seen at ts, that belong to the message in progress if there is one. */
static void attribute(struct http1_conn *c, struct dir *d, uint64_t n, uint64_t ts)
{
	if (d->in_msg) {
		d->msg_bytes += n;
		d->last_ts = ts;
	} else {
		c->st.bytes_unattributed += n;
	}
}

static void msg_add(struct dir *d, uint64_t n, uint64_t ts)
{
	d->msg_bytes += n;
	d->last_ts = ts;
}

static void framing_lost(struct http1_conn *c, struct dir *d)
{
	d->mflags |= M_TRUNC;
	line_reset(d);
	d->st = S_SKIP;
	c->st.resyncs++;
}

static void kill_dir(struct http1_conn *c, int di, uint64_t ts);

/* An exchange is complete: the request, if still in progress, gives its bytes now. */
static void complete(struct http1_conn *c, struct entry *e)
{
	e->done = true;
	c->st.exchanges++;
	for (int i = 0; i < 2; i++) {
		struct dir *r = &c->d[i];

		if (r->in_msg && r->is_req && r->entry_id == e->id) {
			e->x.req_bytes = r->msg_bytes;
			e->x.flags |= req_flags(r->mflags);
			r->msg_bytes = 0;
			r->entry_id = 0;
		}
	}
}

static void end_msg(struct http1_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];
	struct entry *e = find_id(c, d->entry_id);
	bool tunnel = false;

	if (!e) {
		c->st.bytes_unattributed += d->msg_bytes;
	} else if (d->is_req) {
		e->x.req_bytes = d->msg_bytes;
		e->x.flags |= req_flags(d->mflags);
	} else {
		e->x.resp_bytes += d->msg_bytes;
		e->x.flags |= resp_flags(d->mflags);
		if (!d->interim) {
			e->x.end_ns = ts;
			complete(c, e);
		}
	}
	if (!d->is_req && !d->interim && d->tunnel) {
		tunnel = true;
		if (e)
			e->x.flags |= HTTP1_F_TUNNEL;
	}
	d->in_msg = false;
	d->entry_id = 0;
	d->msg_bytes = 0;
	d->mflags = 0;
	line_reset(d);
	d->st = S_BOUNDARY;
	if (tunnel) {
		c->st.tunnels++;
		kill_dir(c, !di, ts);
		d->st = S_DEAD;
	}
}

/* The header block ended (or, truncated, can no longer be found): pair and frame. */
static void headers_done(struct http1_conn *c, int di, uint64_t ts, bool truncated)
{
	struct dir *d = &c->d[di];
	struct entry *e = NULL;
	bool no_body, answerable = true;

	line_reset(d);
	if (truncated)
		d->mflags |= M_HDR_TRUNC | M_TRUNC;
	/* The start line and header block, blank line included (the access log's sizes). */
	if (d->is_req)
		d->x.req_hdr_bytes = d->msg_bytes;
	else
		d->x.resp_hdr_bytes = d->msg_bytes;
	if (d->is_req) {
		uint64_t seq = ++c->req_seq;

		c->st.requests++;
		e = ring_push(c);
		if (!e) {
			c->st.requests_dropped++;
		} else {
			e->x = d->x;
			e->x.req_dir = (uint8_t)di;
			e->x.start_ns = d->start_ns;
			e->seq = seq;
			e->event = c->sg.events;
		}
		d->entry_id = e ? e->id : 0;
		if (truncated)
			d->st = S_SKIP;
		else if (d->chunked)
			d->st = S_CHUNK_SIZE;
		else if (d->te_other || d->cl_bad) {
			c->st.framing_errors++;
			framing_lost(c, d);
		} else if (d->has_cl && d->content_length) {
			d->remaining = d->content_length;
			d->st = S_BODY;
		} else {
			end_msg(c, di, ts);
		}
		return;
	}

	d->interim = d->x.status < 200 && d->x.status != 101;
	d->tunnel = false;
	/*
	 * A response that began before its request's header block was complete answers
	 * something not seen (its header block may be complete only now, after a gap).
	 */
	if (c->resp_seq < c->req_seq) {
		e = find_seq(c, c->resp_seq + 1);
		if (e && e->event > d->start_event)
			answerable = false;
	}
	e = NULL;
	if (d->interim) {
		c->st.interim++;
		if (answerable && c->resp_seq < c->req_seq)
			e = find_seq(c, c->resp_seq + 1);
	} else {
		c->st.responses++;
		if (answerable && c->resp_seq < c->req_seq) {
			e = find_seq(c, ++c->resp_seq);
			if (!e)
				c->st.responses_dropped++;
		} else {
			c->st.orphan_responses++;
			e = ring_push(c);
			if (!e) {
				c->st.responses_dropped++;
			} else {
				e->x.flags = HTTP1_F_NO_REQUEST;
				e->x.start_ns = d->start_ns;
				e->x.req_dir = (uint8_t)!di;
			}
		}
	}
	if (e && !d->interim) {
		e->x.resp_hdr_bytes = d->x.resp_hdr_bytes;
		e->x.status = d->x.status;
		e->x.resp_version = d->x.resp_version;
		memcpy(e->x.resp_content_type, d->x.resp_content_type,
		       sizeof(e->x.resp_content_type));
		e->x.flags |= d->x.flags;
	}
	d->entry_id = e ? e->id : 0;
	if (truncated) {
		d->st = S_SKIP;
		return;
	}
	if (e && e->seq && !strcmp(e->x.method, "CONNECT") && d->x.status / 100 == 2)
		d->tunnel = true;
	if (d->x.status == 101)
		d->tunnel = true;
	no_body = d->interim || d->tunnel || d->x.status == 204 || d->x.status == 304 ||
		  (e && e->seq && !strcmp(e->x.method, "HEAD"));
	if (no_body) {
		end_msg(c, di, ts);
	} else if (d->chunked) {
		d->st = S_CHUNK_SIZE;
	} else if (d->cl_bad) {
		c->st.framing_errors++;
		framing_lost(c, d);
	} else if (d->has_cl && !d->te_other) {
		d->remaining = d->content_length;
		if (d->remaining)
			d->st = S_BODY;
		else
			end_msg(c, di, ts);
	} else {
		d->st = S_UNTIL_CLOSE;
	}
}

#define KEPT(name, field, cap)                                      \
	{                                                           \
		name, offsetof(struct http1_exchange, field),       \
			offsetof(struct http1_exchange, field), cap \
	}

/* Header values kept as they first come: where in the exchange (a request's, a response's). */
static const struct {
	const char *name;
	size_t req, resp, cap;
} kept[] = {
	KEPT("host", host, HTTP1_HOST_MAX),
	{ "content-type", offsetof(struct http1_exchange, req_content_type),
	  offsetof(struct http1_exchange, resp_content_type), HTTP1_CTYPE_MAX },
	KEPT("sw8", sw8, HTTP1_TRACE_MAX),
	KEPT("b3", b3, HTTP1_TRACE_MAX),
	KEPT("x-b3-traceid", x_b3_traceid, HTTP1_B3_ID_MAX),
	KEPT("x-b3-spanid", x_b3_spanid, HTTP1_B3_ID_MAX),
};

static void header_line(struct http1_conn *c, struct dir *d, const uint8_t *l, size_t n)
{
	struct http1_exchange *x = &d->x;
	const uint8_t *colon, *v;
	size_t nlen, vlen;

	/* An obsolete folded continuation: its content is not joined to the field. */
	if (n && is_ows(l[0]))
		return;
	colon = memchr(l, ':', n);
	if (!colon) {
		c->st.bad_header_lines++;
		return;
	}
	nlen = (size_t)(colon - l);
	v = colon + 1;
	vlen = n - nlen - 1;
	while (vlen && is_ows(*v)) {
		v++;
		vlen--;
	}
	while (vlen && is_ows(v[vlen - 1]))
		vlen--;

	if (l7__name_is(l, nlen, "content-length")) {
		uint64_t len;

		if (d->line_over || parse_dec(v, vlen, &len) ||
		    (d->has_cl && len != d->content_length)) {
			d->cl_bad = true;
		} else {
			d->has_cl = true;
			d->content_length = len;
		}
	} else if (l7__name_is(l, nlen, "transfer-encoding")) {
		size_t i = vlen;

		while (i && v[i - 1] != ',')
			i--;
		while (i < vlen && is_ows(v[i]))
			i++;
		d->chunked = !d->line_over && l7__name_is(v + i, vlen - i, "chunked");
		d->te_other = !d->chunked;
	} else {
		for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
			char *dst = (char *)x + (d->is_req ? kept[i].req : kept[i].resp);

			if (!l7__name_is(l, nlen, kept[i].name))
				continue;
			if (!dst[0])
				l7__copy_text(dst, kept[i].cap, v, vlen, &x->flags,
					      HTTP1_F_VALUE_TRUNCATED);
			break;
		}
	}
}

static bool kind_allowed(const struct http1_conn *c, int di, enum kind k)
{
	int req_dir;

	if (c->role == HTTP1_ROLE_UNKNOWN)
		return true;
	req_dir = c->role == HTTP1_ROLE_CLIENT ? HTTP1_EGRESS : HTTP1_INGRESS;
	return (k == K_REQUEST) == (di == req_dir);
}

/*
 * Accepts the candidate start line in the line buffer, ending the interrupted message before
 * it if any. False if it is not one (nothing changed then).
 */
static bool start_line(struct http1_conn *c, int di, size_t len, bool partial, uint64_t ts)
{
	struct dir *d = &c->d[di];
	struct http1_exchange *x = &d->x;
	struct start s;
	size_t k;

	if (!parse_start(d->line, len, partial, &s) || !kind_allowed(c, di, s.kind))
		return false;
	if (d->in_msg)
		end_msg(c, di, d->last_ts);
	if (c->role == HTTP1_ROLE_UNKNOWN) {
		bool client = (s.kind == K_REQUEST) == (di == HTTP1_EGRESS);

		c->role = client ? HTTP1_ROLE_CLIENT : HTTP1_ROLE_SERVER;
	}
	d->in_msg = true;
	d->is_req = s.kind == K_REQUEST;
	d->ever_valid = true;
	d->bad = 0;
	d->mflags = partial ? M_HDR_TRUNC : 0;
	d->msg_bytes = d->line_total;
	d->line_total = 0;
	d->start_ns = d->line_start_ns;
	d->start_event = d->line_start_event;
	d->last_ts = ts;
	d->entry_id = 0;
	d->has_cl = d->cl_bad = d->chunked = d->te_other = false;
	d->content_length = d->remaining = 0;
	memset(x, 0, sizeof(*x));
	if (d->is_req) {
		memcpy(x->method, s.method, strlen(s.method) + 1);
		x->req_version = s.version;
		k = l7__copy_text(x->uri, HTTP1_URI_MAX, s.target, s.target_len, &x->flags,
				  HTTP1_F_URI_TRUNCATED);
		if (s.target_cut)
			x->flags |= HTTP1_F_URI_TRUNCATED;
		x->uri_len = (uint16_t)k;
		x->path_len = (uint16_t)k;
		for (size_t i = 0; i < k; i++) {
			if (x->uri[i] == '?') {
				x->path_len = (uint16_t)i;
				break;
			}
		}
	} else {
		x->status = s.status;
		x->resp_version = s.version;
	}
	line_reset(d);
	d->st = S_HEADER;
	return true;
}

/* at_lf: the candidate's line feed was taken, what follows is the next candidate. */
static void cand_fail(struct http1_conn *c, int di, uint64_t ts, bool at_lf)
{
	struct dir *d = &c->d[di];

	c->st.bad_starts++;
	attribute(c, d, d->line_total, ts);
	d->line_total = 0;
	line_reset(d);
	if (!d->ever_valid && ++d->bad >= HTTP1_MAX_BAD_STARTS) {
		d->st = S_DEAD;
		c->st.dirs_abandoned++;
	} else if (at_lf) {
		begin_candidate(d);
	} else {
		d->st = S_SKIP;
	}
}

static void line_done(struct http1_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];
	size_t len = d->line_len;
	uint64_t size;

	if (d->line_over)
		c->st.long_lines++;
	else if (len && d->line[len - 1] == '\r')
		len--;
	switch (d->st) {
	case S_START:
		if (!start_line(c, di, len, d->line_over, ts))
			cand_fail(c, di, ts, true);
		return;
	case S_HEADER:
		if (d->line_over)
			d->mflags |= M_HDR_TRUNC;
		if (!len && !d->line_over)
			headers_done(c, di, ts, false);
		else
			header_line(c, d, d->line, len);
		break;
	case S_CHUNK_SIZE:
		if (d->line_over || parse_chunk_size(d->line, len, &size)) {
			c->st.framing_errors++;
			framing_lost(c, d);
			return;
		}
		d->remaining = size;
		d->st = size ? S_CHUNK_DATA : S_TRAILER;
		break;
	case S_CHUNK_END:
		if (len || d->line_over) {
			c->st.framing_errors++;
			framing_lost(c, d);
			return;
		}
		d->st = S_CHUNK_SIZE;
		break;
	case S_TRAILER:
		if (!len && !d->line_over) {
			end_msg(c, di, ts);
			return;
		}
		break;
	default:
		break;
	}
	line_reset(d);
}

/* Takes bytes up to and with the next LF into the line buffer; true if the LF was found. */
static size_t take_line(struct dir *d, const uint8_t *p, size_t n, bool *ret_done)
{
	const uint8_t *nl = memchr(p, '\n', n);
	size_t take = nl ? (size_t)(nl - p) + 1 : n;
	size_t keep = nl ? take - 1 : take;
	size_t room = HTTP1_LINE_MAX - d->line_len;

	if (keep > room) {
		d->line_over = true;
		keep = room;
	}
	memcpy(d->line + d->line_len, p, keep);
	d->line_len += keep;
	*ret_done = nl != NULL;
	return take;
}

/* A candidate start line that can no longer become one, before its end is seen. */
static bool start_hopeless(const struct http1_conn *c, int di)
{
	const struct dir *d = &c->d[di];
	int r = http1__detect(d->line, d->line_len);

	return !r || (r > 0 && !kind_allowed(c, di, (enum kind)r));
}

static void dir_feed(void *cv, int di, uint64_t ts, const uint8_t *p, size_t n, size_t actual)
{
	struct http1_conn *c = cv;
	struct dir *d = &c->d[di];
	size_t off = 0;

	(void)actual;
	/* A syscall's data is the likeliest place for a message to begin. */
	if (d->st == S_SKIP)
		begin_candidate(d);
	while (off < n) {
		const uint8_t *q = p + off;
		size_t left = n - off, k;
		bool done;

		switch (d->st) {
		case S_DEAD:
			c->st.bytes_unattributed += left;
			return;
		case S_BOUNDARY:
			if (*q == '\r' || *q == '\n') {
				c->st.bytes_unattributed++;
				off++;
				break;
			}
			begin_candidate(d);
			break;
		case S_BODY:
		case S_CHUNK_DATA:
			k = left < d->remaining ? left : (size_t)d->remaining;
			d->msg_bytes += k;
			d->remaining -= k;
			d->last_ts = ts;
			off += k;
			if (!d->remaining) {
				if (d->st == S_BODY)
					end_msg(c, di, ts);
				else
					d->st = S_CHUNK_END;
			}
			break;
		case S_UNTIL_CLOSE:
			d->msg_bytes += left;
			d->last_ts = ts;
			off = n;
			break;
		case S_SKIP: {
			const uint8_t *nl = memchr(q, '\n', left);

			k = nl ? (size_t)(nl - q) + 1 : left;
			attribute(c, d, k, ts);
			off += k;
			if (nl)
				begin_candidate(d);
			break;
		}
		case S_START: {
			size_t before = d->line_len;

			/* Empty lines before a start line are no candidates (RFC 9112 2.2). */
			if (!d->line_len && (*q == '\r' || *q == '\n')) {
				attribute(c, d, 1, ts);
				off++;
				break;
			}
			if (!d->line_total) {
				d->line_start_ns = ts;
				d->line_start_event = c->sg.events;
			}
			k = take_line(d, q, left, &done);
			d->line_total += k;
			off += k;
			if (done)
				line_done(c, di, ts);
			else if (before < DETECT_PEEK && start_hopeless(c, di))
				cand_fail(c, di, ts, false);
			break;
		}
		default:
			k = take_line(d, q, left, &done);
			d->msg_bytes += k;
			d->last_ts = ts;
			off += k;
			if (done)
				line_done(c, di, ts);
			break;
		}
	}
}

static void dir_skip(void *cv, int di, uint64_t n, bool known, uint64_t ts)
{
	struct http1_conn *c = cv;
	struct dir *d = &c->d[di];
	size_t len;

	switch (d->st) {
	case S_DEAD:
		c->st.bytes_unattributed += n;
		return;
	case S_BOUNDARY:
		c->st.bytes_unattributed += n;
		d->st = S_SKIP;
		c->st.resyncs++;
		return;
	case S_START:
		len = d->line_len;
		if (len && d->line[len - 1] == '\r')
			len--;
		if (d->line_total && start_line(c, di, len, true, ts)) {
			msg_add(d, n, ts);
			headers_done(c, di, ts, true);
			c->st.resyncs++;
			return;
		}
		if (d->line_total)
			cand_fail(c, di, ts, false);
		else
			d->st = S_SKIP;
		if (d->st == S_DEAD)
			c->st.bytes_unattributed += n;
		else
			attribute(c, d, n, ts);
		return;
	case S_HEADER:
		msg_add(d, n, ts);
		headers_done(c, di, ts, true);
		c->st.resyncs++;
		return;
	case S_BODY:
	case S_CHUNK_DATA:
		if (known && n <= d->remaining) {
			msg_add(d, n, ts);
			d->remaining -= n;
			d->mflags |= M_TRUNC;
			if (!d->remaining) {
				if (d->st == S_BODY)
					end_msg(c, di, ts);
				else
					d->st = S_CHUNK_END;
			}
			return;
		}
		if (known && d->st == S_BODY) {
			msg_add(d, d->remaining, ts);
			n -= d->remaining;
			d->remaining = 0;
			d->mflags |= M_TRUNC;
			end_msg(c, di, ts);
			c->st.bytes_unattributed += n;
			if (d->st != S_DEAD) {
				d->st = S_SKIP;
				c->st.resyncs++;
			}
			return;
		}
		msg_add(d, n, ts);
		framing_lost(c, d);
		return;
	case S_CHUNK_SIZE:
	case S_CHUNK_END:
	case S_TRAILER:
		msg_add(d, n, ts);
		framing_lost(c, d);
		return;
	case S_UNTIL_CLOSE:
		msg_add(d, n, ts);
		d->mflags |= M_TRUNC;
		return;
	case S_SKIP:
		attribute(c, d, n, ts);
		return;
	}
}

/* Ends whatever dir has in progress, as truncated unless it ends at close anyway. */
static void abort_msg(struct http1_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];

	if (d->st == S_DEAD)
		return;
	if (d->st == S_START) {
		attribute(c, d, d->line_total, d->last_ts);
		d->line_total = 0;
	}
	if (!d->in_msg)
		return;
	if (d->st == S_HEADER)
		headers_done(c, di, ts, true);
	if (!d->in_msg)
		return;
	if (d->st != S_UNTIL_CLOSE)
		d->mflags |= M_TRUNC;
	end_msg(c, di, d->last_ts);
}

static void kill_dir(struct http1_conn *c, int di, uint64_t ts)
{
	abort_msg(c, di, ts);
	line_reset(&c->d[di]);
	c->d[di].st = S_DEAD;
}

static void *h1_new(unsigned flags)
{
	struct http1_conn *c = l7__stream_new(sizeof(*c), flags);

	if (!c)
		return NULL;
	c->d[0].st = S_BOUNDARY;
	c->d[1].st = S_BOUNDARY;
	return c;
}

static void h1_free(void *p)
{
	struct http1_conn *c = p;

	if (!c)
		return;
	free(c->q.v);
	free(c->sw);
	free(c);
}

static const struct l7_seg_ops seg_ops = { .read = dir_feed, .skip = dir_skip };

L7_DEFINE_SEG(static, h1, struct http1_conn)

static void h1_close(void *p, uint64_t ts_ns)
{
	struct http1_conn *c = p;
	int first = c && c->role == HTTP1_ROLE_SERVER ? HTTP1_INGRESS : HTTP1_EGRESS;

	if (!c || c->sg.closed)
		return;
	/* What close completes comes after every segment. */
	c->sg.events++;
	/* The request side first, so that requests have all their bytes when answered. */
	kill_dir(c, first, ts_ns);
	kill_dir(c, !first, ts_ns);
	for (unsigned i = 0; i < c->q.count; i++) {
		struct entry *e = ring_at(c, i);

		if (e->done)
			continue;
		/*
		 * No final response: what interim ones (100 Continue) gave it is not its
		 * response, and goes where the bytes of a response that did not parse go.
		 */
		c->st.bytes_unattributed += e->x.resp_bytes;
		e->x.resp_bytes = 0;
		e->x.status = 0;
		e->x.flags &= ~(uint32_t)(HTTP1_F_RESP_TRUNCATED | HTTP1_F_RESP_HDR_TRUNCATED);
		e->x.flags |= HTTP1_F_NO_RESPONSE;
		e->x.end_ns = ts_ns;
		e->done = true;
		c->st.unanswered++;
		c->st.exchanges++;
	}
	c->sg.closed = true;
}

void http1__as_l7(const struct http1_exchange *x, struct l7_exchange *ret)
{
	uint32_t f = x->flags & (HTTP1_F_REQ_TRUNCATED | HTTP1_F_RESP_TRUNCATED);

	if (x->flags & HTTP1_F_NO_REQUEST)
		f |= L7_F_NO_REQUEST;
	if (x->flags & HTTP1_F_NO_RESPONSE)
		f |= L7_F_NO_RESPONSE;
	if (x->flags & HTTP1_F_URI_TRUNCATED)
		f |= L7_F_TARGET_TRUNCATED;
	if (!x->status)
		f |= L7_F_NO_RESULT;
	ret->start_ns = x->start_ns;
	ret->end_ns = x->end_ns;
	ret->req_bytes = x->req_bytes;
	ret->resp_bytes = x->resp_bytes;
	ret->flags = f;
	ret->code = x->status;
	ret->error = 0;
	ret->req_dir = x->req_dir;
	ret->op[0] = '\0';
	ret->target[0] = '\0';
	ret->http = x;
	ret->http2 = NULL;
}

/* The exchange stays in its slot of the ring until a later feed reuses it. */
static int h1_next(void *p, struct l7_exchange *ret)
{
	struct http1_conn *c = p;
	struct entry *e = c ? l7_ring__pop_done(&c->q, sizeof(*e), offsetof(struct entry, done))
			    : NULL;

	if (!e || !ret)
		return e != NULL;
	http1__as_l7(&e->x, ret);
	if ((e->x.flags & HTTP1_F_TUNNEL) && e->x.status == 101) {
		if (!c->sw)
			c->sw = malloc(sizeof(*c->sw));
		if (c->sw) {
			*c->sw = e->x;
			ret->flags |= L7_F_SWITCH;
		} else {
			c->st.alloc_failures++;
		}
	}
	return 1;
}

const struct http1_exchange *http1__switched(const void *p)
{
	const struct http1_conn *c = p;

	return c ? c->sw : NULL;
}

unsigned http1__pending(const void *p)
{
	const struct http1_conn *c = p;

	return c ? c->q.count : 0;
}

static enum l7_role h1_role(const void *p)
{
	const struct http1_conn *c = p;

	return c ? (enum l7_role)c->role : L7_ROLE_UNKNOWN;
}

static void h1_stats(const void *p, struct l7_stats *ret)
{
	const struct http1_conn *c = p;

	if (c && ret)
		*ret = (struct l7_stats){ HTTP_AS_L7_STATS(c->st),
					  .requests_dropped = c->st.requests_dropped,
					  .responses_dropped = c->st.responses_dropped };
}

static void h1_counts(const void *p, void *ret)
{
	const struct http1_conn *c = p;

	if (c && ret)
		memcpy(ret, &c->st, sizeof(c->st));
}

const struct l7_ops l7_http1_ops = {
	.name = "http",
	.title = "HTTP/1.x",
	.keepable = true,
	.detect = http1__detect,
	.then = &l7_http2_ops,
	L7_OPS_OF(h1),
	.counts = h1_counts,
	.counts_size = sizeof(struct http1_stats),
};
