// SPDX-License-Identifier: Apache-2.0
/*
 * HTTP/2 parser of one connection, two directions (see http2.h). Each direction is a state
 * machine over bytes: the preface, frame headers collected into 9 bytes, payloads consumed
 * in place (header block fragments streamed into the direction's HPACK decoder, the few
 * bytes of control frames kept, DATA only counted). Streams live in one slot array; a
 * direction points at the slot its current frame belongs to by index and a unique id, so a
 * stream completed under it (an RST_STREAM from the other side) stops taking its bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/hpack.h"
#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/protocols/l7.h"

#define FH_LEN 9u
/* RFC 9113 4.2: SETTINGS_MAX_FRAME_SIZE's initial value, and the largest 24-bit length. */
#define FRAME_MAX_DEFAULT 16384u
#define FRAME_MAX_ANY 0xffffffu
#define SLOTS_MIN 4u
/* Ids of streams completed or dropped, so that their late frames open nothing. */
#define RETIRED_MAX 128u
_Static_assert(HTTP2_MAX_HELD >= SLOTS_MIN && !(HTTP2_MAX_HELD & (HTTP2_MAX_HELD - 1)),
	       "slots grow by doubling from SLOTS_MIN");
_Static_assert(HTTP2_PREFACE_LEN == sizeof(HTTP2_PREFACE) - 1, "the preface's length");

enum ftype {
	F_DATA = 0,
	F_HEADERS = 1,
	F_PRIORITY = 2,
	F_RST = 3,
	F_SETTINGS = 4,
	F_PUSH = 5,
	F_PING = 6,
	F_GOAWAY = 7,
	F_WINDOW = 8,
	F_CONT = 9,
};

enum {
	FL_END_STREAM = 0x1, /* also ACK on SETTINGS and PING */
	FL_END_HEADERS = 0x4,
	FL_PADDED = 0x8,
	FL_PRIORITY = 0x20,
};

enum {
	SET_MAX_FRAME_SIZE = 0x5,
};

enum dstate {
	DS_INIT,    /* nothing read yet: the preface or a first frame */
	DS_PREFACE, /* matching the client preface */
	DS_FH,	    /* collecting a frame header */
	DS_PAYLOAD, /* in a frame's payload */
	DS_SKIP,    /* framing lost: up to a segment that begins with a plausible frame */
	DS_DEAD,    /* not parsed any more */
};

/* What is known of a direction's HPACK dynamic table. */
enum hp {
	HP_FRESH,   /* every block since the direction's start was decoded: exact */
	HP_WAIT,    /* began with SETTINGS, exact if the client preface comes (see dir_begins) */
	HP_TAINTED, /* unknown for good */
};

enum taint {
	T_NONE,
	T_MIDSTREAM, /* the direction was seen after its start */
	T_LATER,     /* a block was lost, cut or refused */
};

enum begin {
	B_PREFACE,
	B_SETTINGS,
	B_OTHER,
};

/* Per side of a stream. */
enum {
	M_TRUNC = 1,	 /* bytes not captured, lost, or not ended at close */
	M_HDR_TRUNC = 2, /* header fields may be missing */
	M_HPACK_UNK = 4, /* a block not wholly decoded */
};

enum slot_state {
	SL_FREE = 0,
	SL_OPEN,
	SL_DONE,
};

struct stream {
	struct http2_exchange x;
	char ctype[2][HTTP1_CTYPE_MAX + 1];
	uint64_t uid; /* unique in the connection, never 0 */
	uint64_t done_seq;
	uint64_t bytes[2];
	uint64_t hdr_bytes[2]; /* of bytes[], in HEADERS and CONTINUATION frames (headers included) */
	uint64_t start_ns[2];
	uint64_t req_start_ns; /* pushed or upgraded: when the request was known */
	uint64_t last_ns;
	uint32_t id;
	enum slot_state state;
	uint8_t first_dir;
	uint8_t mflags[2];
	bool seen[2];	  /* a frame of that direction */
	bool hdr_seen[2]; /* a header block of that direction */
	bool ended[2];
	bool partial; /* its opening may not have been seen */
	bool lost;    /* open when framing was lost */
	bool pushed, upgraded;
	bool final_block; /* a response block that was not interim */
	bool method_set, path_set, authority_set;
};

struct h2dir {
	enum dstate st;
	enum hp hp;
	enum taint taint;
	bool started;
	bool preface;
	bool ever_valid;
	bool adv_unknown;	/* a SETTINGS of this direction may have been missed */
	uint32_t adv_max_frame; /* SETTINGS_MAX_FRAME_SIZE it sent: bounds the other's frames */
	uint32_t bad;
	uint64_t frames;
	size_t pre_len;
	uint8_t fh[FH_LEN];
	size_t fh_len;
	uint64_t fh_ts; /* segment of the frame header's first byte */

	/* the frame in progress */
	uint8_t type, fflags;
	uint32_t sid, len, pos;
	uint32_t frag_lo, frag_hi; /* header block fragment within the payload */
	bool bad_frame;		   /* skipped: impossible, or stray */
	bool control;		   /* counts to bytes_control */
	bool cut;		   /* a gap was in the part kept in ctl[] */
	int slot;		   /* byte target, -1 for none */
	uint64_t uid;
	uint8_t ctl[8];

	/* the header block in progress */
	bool in_block;
	bool block_promise; /* of a PUSH_PROMISE: the fields are the promised request's */
	bool block_es;	    /* its HEADERS ended the stream */
	bool block_broken;
	bool block_unknown; /* fields skipped (they need the unknown table) */
	uint32_t block_sid;
	int bslot; /* field target, -1 for none */
	uint64_t buid;
	uint16_t blk_status;
	struct hpack dec;
};

struct http2_conn {
	enum http1_role role;
	struct l7_seg sg;
	bool upgraded;
	bool fresh; /* seen from its start: the preface, or an h2c upgrade */
	uint64_t next_uid;
	uint64_t done_seq;
	uint32_t max_opened[2]; /* by parity: highest stream id opened */
	struct stream *slots;
	unsigned cap, count, open;
	uint32_t retired[RETIRED_MAX];
	unsigned retired_pos, retired_n;
	struct hpack_mem mem;
	struct http2_stats st;
	struct h2dir d[2];
};

static const uint8_t preface[] = HTTP2_PREFACE;
/* --- small helpers --- */

static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int http2__detect(const uint8_t *p, size_t n)
{
	size_t k = n < HTTP2_PREFACE_LEN ? n : HTTP2_PREFACE_LEN;

	if (!p || !n)
		return -EAGAIN;
	if (memcmp(p, preface, k))
		return 0;
	return k == HTTP2_PREFACE_LEN ? 1 : -EAGAIN;
}

/* The direction requests go, -1 while the role is unknown. */
static int req_dir(const struct http2_conn *c)
{
	if (c->role == HTTP1_ROLE_CLIENT)
		return HTTP1_EGRESS;
	if (c->role == HTTP1_ROLE_SERVER)
		return HTTP1_INGRESS;
	return -1;
}

static void set_role(struct http2_conn *c, int client_dir)
{
	if (c->role == HTTP1_ROLE_UNKNOWN)
		c->role = client_dir == HTTP1_EGRESS ? HTTP1_ROLE_CLIENT : HTTP1_ROLE_SERVER;
}

/* Frames written in dir may be this long: what the reader allowed, when that is known. */
static uint32_t frame_limit(const struct http2_conn *c, int di)
{
	const struct h2dir *o = &c->d[!di];

	if (!c->fresh || o->adv_unknown)
		return FRAME_MAX_ANY;
	return o->adv_max_frame > FRAME_MAX_DEFAULT ? o->adv_max_frame : FRAME_MAX_DEFAULT;
}

/* A frame header a sender could have written (RFC 9113 6), unknown flags ignored. */
static bool shape_ok(uint8_t type, uint8_t fl, uint32_t len, uint32_t sid)
{
	uint32_t pad = fl & FL_PADDED ? 1 : 0;

	switch (type) {
	case F_DATA:
		return sid && len >= pad;
	case F_HEADERS:
		return sid && len >= pad + (fl & FL_PRIORITY ? 5 : 0);
	case F_PRIORITY:
		return sid && len == 5;
	case F_RST:
		return sid && len == 4;
	case F_SETTINGS:
		return !sid && (fl & FL_END_STREAM ? len == 0 : len % 6 == 0);
	case F_PUSH:
		return sid && len >= pad + 4;
	case F_PING:
		return !sid && len == 8;
	case F_GOAWAY:
		return !sid && len >= 8;
	case F_WINDOW:
		return len == 4;
	case F_CONT:
		return sid;
	default:
		return true;
	}
}

/*
 * Where a direction resumes after framing was lost, or begins when not seen from its
 * start: a known type that can open a run of frames, only its defined flags, reserved bit
 * clear, a shape the type allows.
 */
static bool plausible(const uint8_t *h, uint32_t limit)
{
	static const uint8_t defined[] = {
		[F_DATA] = FL_END_STREAM | FL_PADDED,
		[F_HEADERS] = FL_END_STREAM | FL_END_HEADERS | FL_PADDED | FL_PRIORITY,
		[F_PRIORITY] = 0,
		[F_RST] = 0,
		[F_SETTINGS] = FL_END_STREAM,
		[F_PUSH] = FL_END_HEADERS | FL_PADDED,
		[F_PING] = FL_END_STREAM,
		[F_GOAWAY] = 0,
		[F_WINDOW] = 0,
	};
	uint32_t len = be24(h);
	uint8_t type = h[3], fl = h[4];

	if (type >= F_CONT || (fl & ~defined[type]) || (h[5] & 0x80) || len > limit)
		return false;
	return shape_ok(type, fl, len, be32(h + 5) & 0x7fffffffu);
}

/* --- streams --- */

static struct stream *slot_at(struct http2_conn *c, int i, uint64_t uid)
{
	struct stream *s;

	if (i < 0 || (unsigned)i >= c->cap)
		return NULL;
	s = &c->slots[i];
	return s->state == SL_OPEN && s->uid == uid ? s : NULL;
}

static struct stream *find(struct http2_conn *c, uint32_t id)
{
	for (unsigned i = 0; i < c->cap; i++)
		if (c->slots[i].state != SL_FREE && c->slots[i].id == id)
			return &c->slots[i];
	return NULL;
}

static bool retired(const struct http2_conn *c, uint32_t id)
{
	for (unsigned i = 0; i < c->retired_n; i++)
		if (c->retired[i] == id)
			return true;
	return false;
}

static void retire(struct http2_conn *c, uint32_t id)
{
	c->retired[c->retired_pos] = id;
	c->retired_pos = (c->retired_pos + 1) % RETIRED_MAX;
	if (c->retired_n < RETIRED_MAX)
		c->retired_n++;
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* The direction of the stream's request: the role's, else its first frame's. */
static int req_side(const struct http2_conn *c, const struct stream *s)
{
	int rd = req_dir(c);

	return rd < 0 ? s->first_dir : rd;
}

/* The exchange from what the stream gathered. */
static void finalize(struct http2_conn *c, struct stream *s)
{
	struct http1_exchange *h = &s->x.h;
	int rd = req_side(c, s), pd = !rd;
	bool no_req;

	if (req_dir(c) < 0)
		s->x.flags2 |= HTTP2_F2_ROLE_UNKNOWN;
	if (s->seen[rd] && !s->hdr_seen[rd] && !s->pushed && !s->upgraded)
		s->mflags[rd] |= M_HDR_TRUNC;
	if (s->upgraded && !s->method_set)
		s->mflags[rd] |= M_HDR_TRUNC;
	if (s->seen[pd] && !s->hdr_seen[pd])
		s->mflags[pd] |= M_HDR_TRUNC;
	no_req = !s->seen[rd] && !s->pushed && !s->upgraded;
	h->req_dir = (uint8_t)rd;
	h->req_bytes = s->bytes[rd];
	h->resp_bytes = s->bytes[pd];
	h->req_hdr_bytes = s->hdr_bytes[rd];
	h->resp_hdr_bytes = s->hdr_bytes[pd];
	h->req_version = 20;
	h->resp_version = 20;
	if (s->pushed || s->upgraded)
		h->start_ns = s->req_start_ns;
	else
		h->start_ns = s->seen[rd] ? s->start_ns[rd] : s->start_ns[pd];
	if (h->start_ns > h->end_ns)
		h->start_ns = h->end_ns;
	h->flags |= (s->mflags[rd] & M_TRUNC ? HTTP1_F_REQ_TRUNCATED : 0) |
		    (s->mflags[rd] & M_HDR_TRUNC ? HTTP1_F_REQ_HDR_TRUNCATED : 0) |
		    (s->mflags[pd] & M_TRUNC ? HTTP1_F_RESP_TRUNCATED : 0) |
		    (s->mflags[pd] & M_HDR_TRUNC ? HTTP1_F_RESP_HDR_TRUNCATED : 0);
	if (s->mflags[rd] & M_HPACK_UNK)
		s->x.flags2 |= HTTP2_F2_REQ_HPACK_UNKNOWN;
	if (s->mflags[pd] & M_HPACK_UNK)
		s->x.flags2 |= HTTP2_F2_RESP_HPACK_UNKNOWN;
	if (no_req) {
		h->flags |= HTTP1_F_NO_REQUEST;
		c->st.orphan_responses++;
	} else {
		c->st.requests++;
		if (!s->path_set && (s->mflags[rd] & M_HDR_TRUNC)) {
			memcpy(h->uri, "*", 2);
			h->uri_len = 1;
			h->path_len = 1;
		}
	}
	if (!s->seen[pd]) {
		h->flags |= HTTP1_F_NO_RESPONSE;
		h->status = 0;
		c->st.unanswered++;
	} else if (s->final_block) {
		c->st.responses++;
	}
	memcpy(h->req_content_type, s->ctype[rd], sizeof(h->req_content_type));
	memcpy(h->resp_content_type, s->ctype[pd], sizeof(h->resp_content_type));
	if (starts_with(h->req_content_type, "application/grpc") ||
	    starts_with(h->resp_content_type, "application/grpc"))
		s->x.flags2 |= HTTP2_F2_GRPC;
	s->x.stream_id = s->id;
}

static void complete(struct http2_conn *c, struct stream *s, uint64_t ts, uint32_t flags2)
{
	s->x.h.end_ns = ts;
	s->x.flags2 |= flags2;
	finalize(c, s);
	s->state = SL_DONE;
	s->done_seq = ++c->done_seq;
	c->open--;
	c->st.exchanges++;
	retire(c, s->id);
}

/* Both sides ended; or the response ended and its request came before the capture. */
static void maybe_complete(struct http2_conn *c, struct stream *s, uint64_t ts)
{
	int rd = req_dir(c);

	if (s->pushed || s->upgraded) {
		if (rd < 0 ? s->ended[0] || s->ended[1] : s->ended[!rd])
			complete(c, s, ts, 0);
	} else if (s->ended[0] && s->ended[1]) {
		complete(c, s, ts, 0);
	} else if (rd >= 0 && s->ended[!rd] && !s->seen[rd]) {
		complete(c, s, ts, 0);
	}
}

static void side_end(struct http2_conn *c, struct stream *s, int di, uint64_t ts)
{
	s->ended[di] = true;
	maybe_complete(c, s, ts);
}

/* Completes the open stream that may have lost bytes (or is partial) with the lowest id. */
static bool evict(struct http2_conn *c)
{
	struct stream *v = NULL;

	for (unsigned i = 0; i < c->cap; i++) {
		struct stream *s = &c->slots[i];

		if (s->state == SL_OPEN && (s->lost || s->partial) && (!v || s->id < v->id))
			v = s;
	}
	if (!v)
		return false;
	for (int di = 0; di < 2; di++)
		if (v->seen[di] && !v->ended[di])
			v->mflags[di] |= M_TRUNC;
	c->st.streams_evicted++;
	complete(c, v, v->last_ns, HTTP2_F2_EVICTED);
	return true;
}

static int slot_free(struct http2_conn *c)
{
	for (unsigned i = 0; i < c->cap; i++)
		if (c->slots[i].state == SL_FREE)
			return (int)i;
	if (c->cap < HTTP2_MAX_HELD) {
		unsigned ncap = c->cap ? c->cap * 2 : SLOTS_MIN;
		struct stream *n = calloc(ncap, sizeof(*n));
		int i = (int)c->cap;

		if (!n) {
			c->st.alloc_failures++;
			return -1;
		}
		if (c->cap)
			memcpy(n, c->slots, c->cap * sizeof(*n));
		free(c->slots);
		c->slots = n;
		c->cap = ncap;
		return i;
	}
	return -1;
}

/* A new stream's slot, or NULL (dropped: counted, its id retired). */
static struct stream *open_stream(struct http2_conn *c, uint32_t id, int di, uint64_t ts)
{
	struct stream *s;
	int i = -1;

	/* Opened by the peer, tracked or not: lower ids are not new streams any more. */
	if (id > c->max_opened[id & 1])
		c->max_opened[id & 1] = id;
	if (c->open < HTTP2_MAX_STREAMS || evict(c))
		i = slot_free(c);
	if (i < 0) {
		c->st.streams_dropped++;
		retire(c, id);
		return NULL;
	}
	s = &c->slots[i];
	memset(s, 0, sizeof(*s));
	s->state = SL_OPEN;
	s->uid = ++c->next_uid;
	s->id = id;
	s->first_dir = (uint8_t)di;
	s->partial = !c->fresh;
	s->last_ns = ts;
	s->x.grpc_status = -1;
	c->count++;
	c->open++;
	c->st.streams++;
	return s;
}

/* The stream a HEADERS or DATA frame of dir belongs to, opened if new; NULL: stray. */
static struct stream *stream_for(struct http2_conn *c, int di, uint32_t id, bool headers,
				 uint64_t ts)
{
	struct stream *s;
	int rd = req_dir(c);

	/* Above every id opened: in no slot, not retired (both were opened first). */
	if (id > c->max_opened[id & 1])
		goto open;
	s = find(c, id);
	if (s) {
		if (s->state == SL_OPEN && !s->ended[di])
			return s;
		c->st.stray_frames++;
		return NULL;
	}
	if (retired(c, id) || (c->fresh && id <= c->max_opened[id & 1])) {
		c->st.stray_frames++;
		return NULL;
	}
open:
	s = open_stream(c, id, di, ts);
	/* Its request's opening HEADERS was not seen. */
	if (s && (!headers || (rd >= 0 && di != rd)))
		s->partial = true;
	return s;
}

/* --- HPACK --- */

static void taint(struct http2_conn *c, int di, enum taint why)
{
	struct h2dir *d = &c->d[di];

	if (d->hp != HP_TAINTED) {
		d->hp = HP_TAINTED;
		d->taint = why;
		hpack__forget(&d->dec);
	}
}

/* The header fields the parser reads; every other name is FN_OTHER. */
enum fname {
	FN_OTHER,
	FN_METHOD,
	FN_PATH,
	FN_SCHEME,
	FN_AUTHORITY,
	FN_STATUS,
	FN_HOST,
	FN_SW8,
	FN_B3,
	FN_B3_TRACEID,
	FN_B3_SPANID,
	FN_GRPC_STATUS,
	FN_CTYPE,
};

static const char *const fnames[] = {
	[FN_METHOD] = ":method",
	[FN_PATH] = ":path",
	[FN_SCHEME] = ":scheme",
	[FN_AUTHORITY] = ":authority",
	[FN_STATUS] = ":status",
	[FN_HOST] = "host",
	[FN_SW8] = "sw8",
	[FN_B3] = "b3",
	[FN_B3_TRACEID] = "x-b3-traceid",
	[FN_B3_SPANID] = "x-b3-spanid",
	[FN_GRPC_STATUS] = "grpc-status",
	[FN_CTYPE] = "content-type",
};

/* As l7__name_is (ASCII letters of the name in any case), with the literal's length known. */
static bool name_eq(const uint8_t *n, const char *lit, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t ch = n[i] >= 'A' && n[i] <= 'Z' ? n[i] + ('a' - 'A') : n[i];

		if (ch != (uint8_t)lit[i])
			return false;
	}
	return true;
}

/*
 * Every field of every header block is named here: the one candidate its length and a byte
 * leave (| 0x20 folds the case of a letter; name_eq() checks the whole name), then its bytes.
 */
static enum fname fname_of(const uint8_t *n, size_t nl)
{
	enum fname f;

	switch (nl) {
	case 2:
		f = FN_B3;
		break;
	case 3:
		f = FN_SW8;
		break;
	case 4:
		f = FN_HOST;
		break;
	case 5:
		f = FN_PATH;
		break;
	case 7:
		f = (n[1] | 0x20) == 'm' ? FN_METHOD : (n[2] | 0x20) == 'c' ? FN_SCHEME : FN_STATUS;
		break;
	case 10:
		f = FN_AUTHORITY;
		break;
	case 11:
		f = (n[0] | 0x20) == 'x' ? FN_B3_SPANID : FN_GRPC_STATUS;
		break;
	case 12:
		f = (n[0] | 0x20) == 'x' ? FN_B3_TRACEID : FN_CTYPE;
		break;
	default:
		return FN_OTHER;
	}
	return name_eq(n, fnames[f], nl) ? f : FN_OTHER;
}

/* The trace context headers an exchange keeps, the first of each name. */
static void trace_header(struct http1_exchange *h, enum fname f, const uint8_t *v, size_t vl)
{
	char *to;
	size_t max;

	switch (f) {
	case FN_SW8:
		to = h->sw8, max = HTTP1_TRACE_MAX;
		break;
	case FN_B3:
		to = h->b3, max = HTTP1_TRACE_MAX;
		break;
	case FN_B3_TRACEID:
		to = h->x_b3_traceid, max = HTTP1_B3_ID_MAX;
		break;
	case FN_B3_SPANID:
		to = h->x_b3_spanid, max = HTTP1_B3_ID_MAX;
		break;
	default:
		return;
	}
	if (!to[0])
		l7__copy_text(to, max, v, vl, &h->flags, HTTP1_F_VALUE_TRUNCATED);
}

/*
 * A field the parser reads: v holds the first hpack_keep[f] bytes of its vl, all that is
 * read of them.
 */
static void on_field(struct http2_conn *c, int di, enum fname f, const uint8_t *v, size_t vl)
{
	struct h2dir *d = &c->d[di];
	struct stream *s;
	bool req_pseudo = f == FN_METHOD || f == FN_PATH || f == FN_SCHEME || f == FN_AUTHORITY;
	bool is_status = f == FN_STATUS;
	bool req_side, resp_side;
	struct http1_exchange *h;
	int rd;

	if (f == FN_OTHER)
		return;
	s = slot_at(c, d->bslot, d->buid);
	if (!d->block_promise && req_pseudo)
		set_role(c, di);
	else if (!d->block_promise && is_status)
		set_role(c, !di);
	rd = req_dir(c);
	req_side = d->block_promise || rd < 0 || di == rd;
	resp_side = !d->block_promise && (rd < 0 || di != rd);
	if (is_status && resp_side) {
		d->blk_status = 0;
		if (vl == 3 && v[0] >= '1' && v[0] <= '5' && v[1] >= '0' && v[1] <= '9' &&
		    v[2] >= '0' && v[2] <= '9')
			d->blk_status =
				(uint16_t)((v[0] - '0') * 100 + (v[1] - '0') * 10 + v[2] - '0');
	}
	if (!s)
		return;
	h = &s->x.h;
	if (req_side) {
		switch (f) {
		case FN_METHOD:
			if (!s->method_set)
				l7__copy_text(h->method, HTTP1_METHOD_MAX, v, vl, &h->flags,
					      HTTP1_F_VALUE_TRUNCATED);
			s->method_set = true;
			break;
		case FN_PATH:
			if (!s->path_set) {
				size_t k = l7__copy_text(h->uri, HTTP1_URI_MAX, v, vl, &h->flags,
							 HTTP1_F_URI_TRUNCATED);
				const char *q = memchr(h->uri, '?', k);

				h->uri_len = (uint16_t)k;
				h->path_len = (uint16_t)(q ? (size_t)(q - h->uri) : k);
			}
			s->path_set = true;
			break;
		case FN_AUTHORITY:
			if (!s->authority_set)
				l7__copy_text(h->host, HTTP1_HOST_MAX, v, vl, &h->flags,
					      HTTP1_F_VALUE_TRUNCATED);
			s->authority_set = true;
			break;
		case FN_HOST:
			if (!s->authority_set && !h->host[0])
				l7__copy_text(h->host, HTTP1_HOST_MAX, v, vl, &h->flags,
					      HTTP1_F_VALUE_TRUNCATED);
			break;
		default:
			trace_header(h, f, v, vl);
			break;
		}
	}
	if (resp_side && f == FN_GRPC_STATUS) {
		int32_t g = 0;
		size_t i;

		/* gRPC codes are 0..16; anything of up to 9 digits is kept as sent. */
		for (i = 0; i < vl && i < 10 && v[i] >= '0' && v[i] <= '9'; i++)
			g = g * 10 + (v[i] - '0');
		if (vl && i == vl && vl <= 9)
			s->x.grpc_status = g;
	}
	if (f == FN_CTYPE) {
		/* A promise is written by the server, for a request of the client's side. */
		char *dst = s->ctype[d->block_promise ? !di : di];

		if (!dst[0])
			l7__copy_text(dst, HTTP1_CTYPE_MAX, v, vl, &h->flags,
				      HTTP1_F_VALUE_TRUNCATED);
	}
}

static unsigned hpack_name(const uint8_t *n, size_t nl)
{
	return fname_of(n, nl);
}

/* RFC 7541 appendix A: the static table's names the parser reads. */
static const uint8_t hpack_static_id[HPACK_STATIC_LAST + 1] = {
	[1] = FN_AUTHORITY, [2] = FN_METHOD,  [3] = FN_METHOD,	[4] = FN_PATH,
	[5] = FN_PATH,	    [6] = FN_SCHEME,  [7] = FN_SCHEME,	[8] = FN_STATUS,
	[9] = FN_STATUS,    [10] = FN_STATUS, [11] = FN_STATUS, [12] = FN_STATUS,
	[13] = FN_STATUS,   [14] = FN_STATUS, [31] = FN_CTYPE,	[38] = FN_HOST,
};

/* What on_field() reads of each value: 3 digits of :status, 10 of grpc-status. */
static const uint16_t hpack_keep[] = {
	[FN_METHOD] = HTTP1_METHOD_MAX,	  [FN_PATH] = HTTP1_URI_MAX,
	[FN_AUTHORITY] = HTTP1_HOST_MAX,  [FN_STATUS] = 3,
	[FN_HOST] = HTTP1_HOST_MAX,	  [FN_SW8] = HTTP1_TRACE_MAX,
	[FN_B3] = HTTP1_TRACE_MAX,	  [FN_B3_TRACEID] = HTTP1_B3_ID_MAX,
	[FN_B3_SPANID] = HTTP1_B3_ID_MAX, [FN_GRPC_STATUS] = 10,
	[FN_CTYPE] = HTTP1_CTYPE_MAX,
};

_Static_assert(HTTP1_TRACE_MAX <= HPACK_VALUE_KEEP && HTTP1_URI_MAX <= HPACK_VALUE_KEEP &&
		       HTTP1_HOST_MAX <= HPACK_VALUE_KEEP && HTTP1_CTYPE_MAX <= HPACK_VALUE_KEEP,
	       "values kept whole up to what is read");

static const struct hpack_conf hpack_conf = {
	.name_of = hpack_name,
	.static_id = hpack_static_id,
	.keep = hpack_keep,
	.ids = FN_CTYPE + 1,
	.table_max = HTTP2_HPACK_TABLE_MAX,
};

struct field_to {
	struct http2_conn *c;
	int di;
};

static void emit_field(void *user, unsigned id, const uint8_t *v, size_t vl)
{
	struct field_to *t = user;

	on_field(t->c, t->di, (enum fname)id, v, vl);
}

static void block_break(struct http2_conn *c, int di)
{
	struct h2dir *d = &c->d[di];

	if (!d->block_broken) {
		d->block_broken = true;
		taint(c, di, T_LATER);
	}
}

static void block_begin(struct http2_conn *c, int di, struct stream *target, bool promise, bool es)
{
	struct h2dir *d = &c->d[di];

	d->in_block = true;
	d->block_promise = promise;
	d->block_es = es;
	d->block_broken = false;
	d->block_unknown = false;
	d->block_sid = d->sid;
	d->bslot = target ? (int)(target - c->slots) : -1;
	d->buid = target ? target->uid : 0;
	d->blk_status = 0;
	/* A server that answered before the client's preface was seen: not a fresh start. */
	if (d->hp == HP_WAIT)
		taint(c, di, T_MIDSTREAM);
	hpack__begin(&d->dec);
}

static void block_data(struct http2_conn *c, int di, const uint8_t *p, size_t n)
{
	struct h2dir *d = &c->d[di];
	struct field_to t = { c, di };

	if (d->block_broken || !n)
		return;
	if (hpack__feed(&d->dec, p, n, emit_field, &t))
		block_break(c, di);
}

/* The block ended (complete: END_HEADERS read; or not: cut short). */
static void block_end(struct http2_conn *c, int di, uint64_t ts, bool whole)
{
	struct h2dir *d = &c->d[di];
	struct stream *s = slot_at(c, d->bslot, d->buid);
	struct stream *owner;
	int rd;

	if (!whole)
		block_break(c, di);
	/* A block ending inside a representation is malformed. */
	if (!d->block_broken && hpack__end(&d->dec))
		block_break(c, di);
	c->st.fields_unknown += d->dec.unknown;
	d->block_unknown = d->dec.unknown != 0;
	d->in_block = false;
	c->st.header_blocks++;
	if (d->block_broken || d->block_unknown) {
		c->st.headers_undecodable++;
		if (d->taint == T_MIDSTREAM)
			c->st.hpack_missed_before_start++;
	}
	rd = req_dir(c);
	if (s) {
		int side = d->block_promise ? !di : di;

		s->hdr_seen[side] = true;
		if (d->block_broken || d->block_unknown)
			s->mflags[side] |= M_HDR_TRUNC | M_HPACK_UNK;
		if (!d->block_promise && (rd >= 0 ? di != rd : d->blk_status != 0)) {
			if (d->blk_status >= 100 && d->blk_status < 200) {
				c->st.interim++;
				s->x.flags2 |= HTTP2_F2_INTERIM;
			} else if (s->final_block) {
				s->x.flags2 |= HTTP2_F2_TRAILERS;
			} else {
				s->final_block = true;
				s->x.h.status = d->blk_status;
			}
		}
	}
	/* HEADERS with END_STREAM: the stream's side ends with its block. */
	owner = d->block_promise ? NULL : find(c, d->block_sid);
	if (d->block_es && owner && owner->state == SL_OPEN)
		side_end(c, owner, di, ts);
}

/* --- frames --- */

/* The bytes of dir's frame in progress: to its stream, or counted unattributed. */
static void give(struct http2_conn *c, int di, uint64_t n, uint64_t ts)
{
	struct h2dir *d = &c->d[di];
	struct stream *s = slot_at(c, d->slot, d->uid);

	if (s) {
		s->bytes[di] += n;
		if (d->type == F_HEADERS || d->type == F_CONT)
			s->hdr_bytes[di] += n;
		s->last_ns = ts;
	} else {
		c->st.bytes_unattributed += n;
		if (d->control)
			c->st.bytes_control += n;
	}
}

/*
 * The first bytes of a direction tell whether its dynamic table starts empty here: the
 * client's preface does; so does the server's first frame, a SETTINGS (RFC 9113 3.4), but
 * only on a connection whose preface is seen: a server may send SETTINGS at any time. The
 * server's SETTINGS may come before the client's preface is seen (HP_WAIT).
 */
static void dir_begins(struct http2_conn *c, int di, enum begin how)
{
	struct h2dir *d = &c->d[di], *o = &c->d[!di];

	if (d->started)
		return;
	d->started = true;
	if (how == B_PREFACE) {
		d->preface = true;
		c->fresh = true;
		set_role(c, di);
		if (o->hp == HP_WAIT)
			o->hp = HP_FRESH;
		return;
	}
	/* The lead switches at the 101: what follows is the start of HTTP/2. */
	if (c->upgraded)
		return;
	if (c->fresh) {
		if (how != B_SETTINGS)
			taint(c, di, T_MIDSTREAM);
		return;
	}
	if (how == B_SETTINGS && !o->started) {
		d->hp = HP_WAIT;
		return;
	}
	taint(c, di, T_MIDSTREAM);
	if (o->hp == HP_WAIT)
		taint(c, !di, T_MIDSTREAM);
}

static void framing_lost(struct http2_conn *c, int di)
{
	struct h2dir *d = &c->d[di];

	if (d->in_block) {
		uint64_t ts = c->sg.ts[di];

		block_end(c, di, ts, false);
	}
	taint(c, di, d->started ? T_LATER : T_MIDSTREAM);
	dir_begins(c, di, B_OTHER);
	d->adv_unknown = true;
	for (unsigned i = 0; i < c->cap; i++) {
		struct stream *s = &c->slots[i];

		if (s->state == SL_OPEN && !s->ended[di]) {
			s->lost = true;
			if (s->seen[di])
				s->mflags[di] |= M_TRUNC;
		}
	}
	d->fh_len = 0;
	d->pre_len = 0;
	d->slot = -1;
	d->st = DS_SKIP;
	c->st.resyncs++;
}

/* A candidate start of a direction failed: one more, and a direction never valid dies. */
static void bad_start(struct http2_conn *c, int di)
{
	struct h2dir *d = &c->d[di];

	c->st.bad_starts++;
	if (!d->ever_valid && ++d->bad >= HTTP2_MAX_BAD_STARTS) {
		d->st = DS_DEAD;
		c->st.dirs_abandoned++;
	}
}

static void apply_goaway(struct http2_conn *c, int di, uint32_t last, uint64_t ts)
{
	int rd = req_dir(c);
	uint32_t parity;

	c->st.goaway++;
	if (rd < 0)
		return;
	/* The last id names streams the GOAWAY's receiver opened: odd ones are the client's. */
	parity = di == rd ? 0 : 1;
	for (unsigned i = 0; i < c->cap; i++) {
		struct stream *s = &c->slots[i];

		if (s->state == SL_OPEN && (s->id & 1) == parity && s->id > last)
			complete(c, s, ts, HTTP2_F2_REFUSED);
	}
}

static void apply_rst(struct http2_conn *c, int di, uint64_t ts)
{
	struct h2dir *d = &c->d[di];
	struct stream *s = find(c, d->sid);
	int rd = req_dir(c);

	c->st.rst_streams++;
	if (!s || s->state != SL_OPEN)
		return;
	if (rd < 0)
		rd = s->first_dir;
	complete(c, s, ts, di == rd ? HTTP2_F2_RESET_BY_CLIENT : HTTP2_F2_RESET_BY_SERVER);
}

static void apply_promise(struct http2_conn *c, int di, uint32_t id, uint64_t ts)
{
	struct h2dir *d = &c->d[di];
	struct stream *s;

	c->st.pushes++;
	set_role(c, !di);
	id &= 0x7fffffffu;
	if (!id || find(c, id) || retired(c, id) || (c->fresh && id <= c->max_opened[id & 1])) {
		c->st.framing_errors++;
		return;
	}
	s = open_stream(c, id, !di, ts);
	if (!s)
		return;
	s->pushed = true;
	s->req_start_ns = d->fh_ts;
	s->x.flags2 |= HTTP2_F2_PUSHED;
	d->bslot = (int)(s - c->slots);
	d->buid = s->uid;
}

static void frame_end(struct http2_conn *c, int di, uint64_t ts)
{
	struct h2dir *d = &c->d[di];
	struct stream *s;

	d->st = DS_FH;
	d->fh_len = 0;
	if (d->bad_frame)
		return;
	switch (d->type) {
	case F_DATA:
		s = slot_at(c, d->slot, d->uid);
		if (s && (d->fflags & FL_END_STREAM))
			side_end(c, s, di, ts);
		break;
	case F_HEADERS:
	case F_PUSH:
	case F_CONT:
		if (d->in_block && (d->fflags & FL_END_HEADERS))
			block_end(c, di, ts, true);
		break;
	case F_RST:
		apply_rst(c, di, ts);
		break;
	case F_GOAWAY:
		/* Applied once its first 8 bytes came (payload()); debug data follows. */
		break;
	default:
		break;
	}
}

/* The frame header is complete: check it, find its stream, begin a header block. */
static void frame_begin(struct http2_conn *c, int di, uint64_t ts)
{
	struct h2dir *d = &c->d[di];
	uint32_t limit = frame_limit(c, di);
	struct stream *s = NULL;
	uint8_t fl;

	c->st.frames++;
	d->len = be24(d->fh);
	d->type = d->fh[3];
	d->fflags = fl = d->fh[4];
	d->sid = be32(d->fh + 5) & 0x7fffffffu;
	d->pos = 0;
	d->bad_frame = false;
	d->control = false;
	d->cut = false;
	d->slot = -1;
	d->uid = 0;
	/* The first frame of a direction not seen from its start is a resynchronization. */
	if (d->len > limit || (!d->frames && !d->preface && !plausible(d->fh, limit))) {
		c->st.framing_errors++;
		c->st.bytes_unattributed += FH_LEN;
		framing_lost(c, di);
		if (!d->frames)
			bad_start(c, di);
		return;
	}
	if (!d->frames++ && !d->preface)
		dir_begins(c, di,
			   d->type == F_SETTINGS && !(fl & FL_END_STREAM) ? B_SETTINGS : B_OTHER);
	d->ever_valid = true;
	d->bad = 0;
	if (d->in_block && (d->type != F_CONT || d->sid != d->block_sid)) {
		/* RFC 9113 6.10: nothing may come between a block's frames. */
		c->st.framing_errors++;
		block_end(c, di, ts, false);
	}
	if (!shape_ok(d->type, fl, d->len, d->sid) || (d->type == F_CONT && !d->in_block)) {
		c->st.framing_errors++;
		d->bad_frame = true;
	}
	if (!d->bad_frame) {
		d->frag_lo = 0;
		d->frag_hi = d->len;
		switch (d->type) {
		case F_DATA:
			s = stream_for(c, di, d->sid, false, ts);
			break;
		case F_HEADERS:
			s = stream_for(c, di, d->sid, true, ts);
			d->frag_lo = (fl & FL_PADDED ? 1 : 0) + (fl & FL_PRIORITY ? 5 : 0);
			block_begin(c, di, s, false, fl & FL_END_STREAM);
			break;
		case F_PUSH:
			s = find(c, d->sid);
			if (s && s->state != SL_OPEN)
				s = NULL;
			d->frag_lo = (fl & FL_PADDED ? 1 : 0) + 4;
			/* The promised stream becomes the field target once its id is read. */
			block_begin(c, di, NULL, true, false);
			break;
		case F_CONT:
			s = find(c, d->sid);
			if (s && s->state != SL_OPEN)
				s = NULL;
			break;
		case F_SETTINGS:
			if (!(fl & FL_END_STREAM))
				c->st.settings++;
			d->control = true;
			break;
		case F_PRIORITY:
		case F_RST:
		case F_PING:
		case F_GOAWAY:
		case F_WINDOW:
			d->control = true;
			break;
		default:
			c->st.unknown_frames++;
			d->control = true;
			break;
		}
	}
	if (s) {
		d->slot = (int)(s - c->slots);
		d->uid = s->uid;
		if (!s->seen[di]) {
			s->seen[di] = true;
			s->start_ns[di] = d->fh_ts;
		}
	}
	give(c, di, FH_LEN, ts);
	if (d->len)
		d->st = DS_PAYLOAD;
	else
		frame_end(c, di, ts);
}

static void setting(struct http2_conn *c, int di, const uint8_t *e)
{
	struct h2dir *d = &c->d[di];
	uint32_t v = be32(e + 2);

	if ((e[0] << 8 | e[1]) == SET_MAX_FRAME_SIZE && v >= FRAME_MAX_DEFAULT &&
	    v <= FRAME_MAX_ANY && v > d->adv_max_frame)
		d->adv_max_frame = v;
}

/*
 * n payload bytes of the frame in progress: p[0..n), or a gap when p is NULL. n does not go
 * past the frame's end.
 */
static void payload(struct http2_conn *c, int di, const uint8_t *p, uint32_t n, uint64_t ts)
{
	struct h2dir *d = &c->d[di];
	uint32_t end = d->pos + n;

	give(c, di, n, ts);
	if (!p) {
		struct stream *s = slot_at(c, d->slot, d->uid);

		if (s)
			s->mflags[di] |= M_TRUNC;
	}
	if (d->bad_frame) {
		d->pos = end;
		return;
	}
	switch (d->type) {
	case F_HEADERS:
	case F_PUSH:
	case F_CONT:
		while (d->pos < end) {
			uint32_t pos = d->pos, k;
			const uint8_t *q = p ? p + (pos - (end - n)) : NULL;

			if (pos == 0 && d->type != F_CONT && (d->fflags & FL_PADDED)) {
				/* The pad length: the fragment ends before the padding. */
				if (!q || *q > d->len - d->frag_lo) {
					if (q)
						c->st.framing_errors++;
					block_break(c, di);
				} else {
					d->frag_hi = d->len - *q;
				}
				d->pos++;
				continue;
			}
			if (pos < d->frag_lo) {
				k = d->frag_lo - pos < end - pos ? d->frag_lo - pos : end - pos;
				if (d->type == F_PUSH) {
					uint32_t base = d->frag_lo - 4;

					for (uint32_t i = 0; i < k; i++) {
						if (pos + i < base)
							continue;
						if (q)
							d->ctl[pos + i - base] = q[i];
						else
							d->cut = true;
					}
					if (pos + k == d->frag_lo && d->in_block) {
						if (d->cut)
							c->st.pushes++;
						else
							apply_promise(c, di, be32(d->ctl), ts);
					}
				}
				d->pos += k;
				continue;
			}
			if (pos < d->frag_hi) {
				k = d->frag_hi - pos < end - pos ? d->frag_hi - pos : end - pos;
				if (d->in_block) {
					if (q)
						block_data(c, di, q, k);
					else
						block_break(c, di);
				}
				d->pos += k;
				continue;
			}
			d->pos = end;
		}
		return;
	case F_SETTINGS:
		for (uint32_t i = 0; i < n; i++) {
			uint32_t at = (d->pos + i) % 6;

			if (p)
				d->ctl[at] = p[i];
			else
				d->cut = true;
			if (at == 5) {
				if (!d->cut)
					setting(c, di, d->ctl);
				d->cut = false;
			}
		}
		break;
	case F_RST:
	case F_GOAWAY:
		for (uint32_t i = 0; i < n && d->pos + i < 8; i++) {
			if (p)
				d->ctl[d->pos + i] = p[i];
			else
				d->cut = true;
			if (d->type == F_GOAWAY && d->pos + i == 7) {
				if (d->cut)
					c->st.goaway++;
				else
					apply_goaway(c, di, be32(d->ctl) & 0x7fffffffu, ts);
			}
		}
		break;
	default:
		break;
	}
	d->pos = end;
}

static void dir_feed(void *cv, int di, uint64_t ts, const uint8_t *p, size_t n, size_t actual)
{
	struct http2_conn *c = cv;
	struct h2dir *d = &c->d[di];
	size_t off = 0;

	(void)actual;
	if (d->st == DS_SKIP) {
		uint32_t limit = frame_limit(c, di);

		/* A syscall's data is the likeliest place for a frame to begin. */
		if (n >= FH_LEN && plausible(p, limit) &&
		    (n < 2 * FH_LEN + be24(p) || plausible(p + FH_LEN + be24(p), limit))) {
			d->st = DS_FH;
			d->fh_len = 0;
		} else {
			bad_start(c, di);
		}
	}
	while (off < n) {
		size_t left = n - off, k;

		switch (d->st) {
		case DS_INIT:
			/* Only a client writes the preface. */
			if (p[off] == preface[0] &&
			    (c->role == HTTP1_ROLE_UNKNOWN || req_dir(c) == di)) {
				d->st = DS_PREFACE;
				d->pre_len = 0;
			} else {
				d->st = DS_FH;
			}
			break;
		case DS_PREFACE:
			k = HTTP2_PREFACE_LEN - d->pre_len;
			if (k > left)
				k = left;
			if (memcmp(p + off, preface + d->pre_len, k)) {
				c->st.bytes_unattributed += d->pre_len + left;
				framing_lost(c, di);
				bad_start(c, di);
				return;
			}
			d->pre_len += k;
			off += k;
			if (d->pre_len == HTTP2_PREFACE_LEN) {
				c->st.bytes_unattributed += HTTP2_PREFACE_LEN;
				c->st.bytes_control += HTTP2_PREFACE_LEN;
				d->pre_len = 0;
				d->ever_valid = true;
				dir_begins(c, di, B_PREFACE);
				d->st = DS_FH;
			}
			break;
		case DS_FH:
			if (!d->fh_len)
				d->fh_ts = ts;
			k = FH_LEN - d->fh_len;
			if (k > left)
				k = left;
			memcpy(d->fh + d->fh_len, p + off, k);
			d->fh_len += k;
			off += k;
			if (d->fh_len == FH_LEN)
				frame_begin(c, di, ts);
			break;
		case DS_PAYLOAD:
			k = d->len - d->pos;
			if (k > left)
				k = left;
			payload(c, di, p + off, (uint32_t)k, ts);
			off += k;
			if (d->pos == d->len)
				frame_end(c, di, ts);
			break;
		case DS_SKIP:
		case DS_DEAD:
			c->st.bytes_unattributed += left;
			return;
		}
	}
}

static void dir_skip(void *cv, int di, uint64_t n, bool known, uint64_t ts)
{
	struct http2_conn *c = cv;
	struct h2dir *d = &c->d[di];
	uint64_t left;

	switch (d->st) {
	case DS_PAYLOAD:
		left = d->len - d->pos;
		if (known && n <= left) {
			payload(c, di, NULL, (uint32_t)n, ts);
			if (d->pos == d->len)
				frame_end(c, di, ts);
			return;
		}
		if (known) {
			/* The frame ends inside the gap; what follows it is not known. */
			payload(c, di, NULL, (uint32_t)left, ts);
			frame_end(c, di, ts);
			n -= left;
		} else {
			struct stream *s = slot_at(c, d->slot, d->uid);

			if (s)
				s->mflags[di] |= M_TRUNC;
		}
		c->st.bytes_unattributed += n;
		framing_lost(c, di);
		return;
	case DS_INIT:
	case DS_PREFACE:
	case DS_FH:
		c->st.bytes_unattributed += n + (d->st == DS_FH ? d->fh_len : d->pre_len);
		framing_lost(c, di);
		return;
	case DS_SKIP:
	case DS_DEAD:
		c->st.bytes_unattributed += n;
		return;
	}
}

static void conn_init(struct http2_conn *c)
{
	c->mem.max = HTTP2_HPACK_MEM_MAX;
	c->mem.failures = &c->st.alloc_failures;
	for (int di = 0; di < 2; di++) {
		hpack__init(&c->d[di].dec, &hpack_conf, &c->mem);
		c->d[di].st = DS_INIT;
		c->d[di].hp = HP_FRESH;
		c->d[di].slot = -1;
		c->d[di].bslot = -1;
	}
}

static void h2_free(void *p);

static void *h2_new(unsigned flags)
{
	struct http2_conn *c = l7__stream_new(sizeof(*c), flags);

	if (!c)
		return NULL;
	conn_init(c);
	return c;
}

/*
 * The rest of a connection the HTTP/1 parser prev handed over after a 101 to "Upgrade: h2c":
 * its stream 1 is that request's (whose req_dir gives the role), when it is known.
 */
static void *h2_new_after(const void *prev)
{
	const struct http1_exchange *req = http1__switched(prev);
	struct http2_conn *c = h2_new(0);
	struct stream *s;

	if (!c)
		return NULL;
	c->fresh = true;
	c->upgraded = true;
	if (req)
		set_role(c, req->req_dir == HTTP1_INGRESS ? HTTP1_INGRESS : HTTP1_EGRESS);
	s = open_stream(c, 1, req_dir(c) < 0 ? HTTP1_EGRESS : req_dir(c), req ? req->start_ns : 0);
	if (!s) {
		h2_free(c);
		errno = ENOMEM;
		return NULL;
	}
	s->upgraded = true;
	s->x.flags2 |= HTTP2_F2_UPGRADED;
	if (req) {
		struct http1_exchange *h = &s->x.h;

		memcpy(h->method, req->method, sizeof(h->method));
		memcpy(h->uri, req->uri, sizeof(h->uri));
		h->uri[HTTP1_URI_MAX] = '\0';
		h->method[HTTP1_METHOD_MAX] = '\0';
		h->uri_len = (uint16_t)strlen(h->uri);
		h->path_len = req->path_len <= h->uri_len ? req->path_len : h->uri_len;
		memcpy(h->host, req->host, sizeof(h->host));
		memcpy(h->sw8, req->sw8, sizeof(h->sw8));
		memcpy(h->b3, req->b3, sizeof(h->b3));
		memcpy(h->x_b3_traceid, req->x_b3_traceid, sizeof(h->x_b3_traceid));
		memcpy(h->x_b3_spanid, req->x_b3_spanid, sizeof(h->x_b3_spanid));
		h->host[HTTP1_HOST_MAX] = h->sw8[HTTP1_TRACE_MAX] = h->b3[HTTP1_TRACE_MAX] = '\0';
		h->x_b3_traceid[HTTP1_B3_ID_MAX] = h->x_b3_spanid[HTTP1_B3_ID_MAX] = '\0';
		memcpy(s->ctype[req_dir(c)], req->req_content_type, HTTP1_CTYPE_MAX);
		h->flags = req->flags & (HTTP1_F_URI_TRUNCATED | HTTP1_F_VALUE_TRUNCATED |
					 HTTP1_F_REQ_TRUNCATED | HTTP1_F_REQ_HDR_TRUNCATED);
		s->req_start_ns = req->start_ns;
		s->method_set = s->path_set = true;
	}
	return c;
}

static void h2_free(void *p)
{
	struct http2_conn *c = p;

	if (!c)
		return;
	for (int di = 0; di < 2; di++)
		hpack__fini(&c->d[di].dec);
	free(c->slots);
	free(c);
}

static const struct l7_seg_ops seg_ops = { .read = dir_feed, .skip = dir_skip };

L7_DEFINE_SEG(static, h2, struct http2_conn)

static void h2_close(void *p, uint64_t ts_ns)
{
	struct http2_conn *c = p;

	if (!c || c->sg.closed)
		return;
	for (int di = 0; di < 2; di++) {
		struct h2dir *d = &c->d[di];

		if (d->in_block)
			block_end(c, di, c->sg.ts[di], false);
		if (d->st == DS_FH)
			c->st.bytes_unattributed += d->fh_len;
		else if (d->st == DS_PREFACE)
			c->st.bytes_unattributed += d->pre_len;
		d->fh_len = 0;
		d->pre_len = 0;
		d->st = DS_DEAD;
	}
	/* In stream id order. */
	for (;;) {
		struct stream *v = NULL;

		for (unsigned i = 0; i < c->cap; i++) {
			struct stream *s = &c->slots[i];

			if (s->state == SL_OPEN && (!v || s->id < v->id))
				v = s;
		}
		if (!v)
			break;
		for (int di = 0; di < 2; di++)
			if (v->seen[di] && !v->ended[di])
				v->mflags[di] |= M_TRUNC;
		complete(c, v, v->seen[!req_side(c, v)] ? v->last_ns : ts_ns, 0);
	}
	c->sg.closed = true;
}

/* The exchange stays in its stream's slot until a later feed reuses it. */
static int h2_next(void *p, struct l7_exchange *ret)
{
	struct http2_conn *c = p;
	struct stream *v = NULL;

	if (!c)
		return 0;
	for (unsigned i = 0; i < c->cap; i++) {
		struct stream *s = &c->slots[i];

		if (s->state == SL_DONE && (!v || s->done_seq < v->done_seq))
			v = s;
	}
	if (!v)
		return 0;
	v->state = SL_FREE;
	c->count--;
	if (ret) {
		http1__as_l7(&v->x.h, ret);
		ret->http2 = &v->x;
	}
	return 1;
}

unsigned http2__pending(const void *p)
{
	const struct http2_conn *c = p;

	return c ? c->count : 0;
}

static enum l7_role h2_role(const void *p)
{
	const struct http2_conn *c = p;

	return c ? (enum l7_role)c->role : L7_ROLE_UNKNOWN;
}

static void h2_stats(const void *p, struct l7_stats *ret)
{
	const struct http2_conn *c = p;

	if (c && ret)
		*ret = (struct l7_stats){ HTTP_AS_L7_STATS(c->st),
					  .requests_dropped = c->st.streams_dropped };
}

static void h2_counts(const void *p, void *ret)
{
	const struct http2_conn *c = p;

	if (c && ret)
		memcpy(ret, &c->st, sizeof(c->st));
}

static int h2_detect(const uint8_t *p, size_t n)
{
	int r = http2__detect(p, n);

	return r == 1 ? L7_DETECT_REQUEST : r;
}

/*
 * After a 101: the client's preface in the direction of the request, or in the other one a
 * frame header of the server's SETTINGS (type 4, flags 0 or ACK, stream 0).
 */
static bool h2_starts(const void *prev, enum l7_dir dir, const uint8_t *p, size_t n)
{
	const struct http1_exchange *sw = http1__switched(prev);

	if (sw && sw->req_dir == dir)
		return http2__detect(p, n) == 1;
	return n >= 9 && p[3] == 0x04 && !(p[4] & ~1u) && !p[5] && !p[6] && !p[7] && !p[8];
}

const struct l7_ops l7_http2_ops = {
	.name = "http",
	.title = "HTTP/2",
	.heavy = true,
	.detect = h2_detect,
	.starts = h2_starts,
	.new_after = h2_new_after,
	L7_OPS_OF(h2),
	.counts = h2_counts,
	.counts_size = sizeof(struct http2_stats),
};
