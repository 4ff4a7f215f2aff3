// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side: HTTP/1 and HTTP/2 as members of shipper/network/protocols/l7.h's table. The
 * exchange a parser yields is held here (l7_exchange.http points into it) until the next call,
 * so that what only HTTP has (headers, trace context) reaches the caller without another copy.
 * An HTTP/1 connection that switches protocols (101) keeps the switching exchange: HTTP/2 takes
 * the rest of the connection from it (an h2c upgrade, RFC 9113 3.2) when the next segment
 * begins HTTP/2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/protocols/l7.h"

struct http_l7 {
	struct http1_conn *h1;
	struct http2_conn *h2;
	struct http1_exchange *sw;  /* the latest 101, for the protocol that follows */
	struct http2_exchange last; /* what next() gave */
};

static struct http_l7 *wrap_new(unsigned flags)
{
	return l7__stream_new(sizeof(struct http_l7), flags);
}

static void http_free(void *c)
{
	struct http_l7 *w = c;

	if (!w)
		return;
	http1__free(w->h1);
	http2__free(w->h2);
	free(w->sw);
	free(w);
}

static void *h1_new(unsigned flags)
{
	struct http_l7 *w = wrap_new(flags);

	if (w && !(w->h1 = http1__new())) {
		free(w);
		return NULL;
	}
	return w;
}

static void *h2_new(unsigned flags)
{
	struct http_l7 *w = wrap_new(flags);

	if (w && !(w->h2 = http2__new())) {
		free(w);
		return NULL;
	}
	return w;
}

static void *h2_new_after(const void *prev)
{
	const struct http_l7 *p = prev;
	struct http_l7 *w = wrap_new(0);

	if (w && !(w->h2 = http2__new_upgraded(p ? p->sw : NULL))) {
		free(w);
		return NULL;
	}
	return w;
}

/*
 * After a 101: the client's preface in the direction of the request, or in the other one a
 * frame header of the server's SETTINGS (type 4, flags 0 or ACK, stream 0).
 */
static bool h2_starts(const void *prev, enum l7_dir dir, const uint8_t *p, size_t n)
{
	const struct http_l7 *w = prev;

	if (w && w->sw && w->sw->req_dir == dir)
		return http2__detect(p, n) == 1;
	return n >= 9 && p[3] == 0x04 && !(p[4] & ~1u) && !p[5] && !p[6] && !p[7] && !p[8];
}

static int h1_feed(void *c, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data,
		   size_t captured, size_t actual)
{
	return http1__feed(((struct http_l7 *)c)->h1, (enum http1_dir)dir, ts_ns, data, captured,
			   actual);
}

static int h2_feed(void *c, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data,
		   size_t captured, size_t actual)
{
	return http2__feed(((struct http_l7 *)c)->h2, (enum http1_dir)dir, ts_ns, data, captured,
			   actual);
}

static int h1_lost(void *c, enum l7_dir dir, uint64_t nbytes)
{
	return http1__lost(((struct http_l7 *)c)->h1, (enum http1_dir)dir, nbytes);
}

static int h2_lost(void *c, enum l7_dir dir, uint64_t nbytes)
{
	return http2__lost(((struct http_l7 *)c)->h2, (enum http1_dir)dir, nbytes);
}

static void h1_close(void *c, uint64_t ts_ns)
{
	http1__close(((struct http_l7 *)c)->h1, ts_ns);
}

static void h2_close(void *c, uint64_t ts_ns)
{
	http2__close(((struct http_l7 *)c)->h2, ts_ns);
}

/* The interface's view of x, which stays where it is. */
static void as_l7(const struct http1_exchange *x, struct l7_exchange *ret)
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

static int h1_next(void *c, struct l7_exchange *ret)
{
	struct http_l7 *w = c;
	struct http1_exchange *x = &w->last.h;

	if (http1__next(w->h1, x) != 1)
		return 0;
	as_l7(x, ret);
	if ((x->flags & HTTP1_F_TUNNEL) && x->status == 101) {
		if (!w->sw)
			w->sw = malloc(sizeof(*w->sw));
		if (w->sw) {
			*w->sw = *x;
			ret->flags |= L7_F_SWITCH;
		}
	}
	return 1;
}

static int h2_next(void *c, struct l7_exchange *ret)
{
	struct http_l7 *w = c;

	if (http2__next(w->h2, &w->last) != 1)
		return 0;
	as_l7(&w->last.h, ret);
	ret->http2 = &w->last;
	return 1;
}

static enum l7_role as_role(enum http1_role r)
{
	if (r == HTTP1_ROLE_CLIENT)
		return L7_ROLE_CLIENT;
	return r == HTTP1_ROLE_SERVER ? L7_ROLE_SERVER : L7_ROLE_UNKNOWN;
}

static enum l7_role h1_role(const void *c)
{
	return as_role(http1__role(((const struct http_l7 *)c)->h1));
}

static enum l7_role h2_role(const void *c)
{
	return as_role(http2__role(((const struct http_l7 *)c)->h2));
}

/* The counts HTTP/1 and HTTP/2 keep alike, as the interface names them. */
#define AS_L7_STATS(s)                                                                       \
	.seg = (s).seg, .requests = (s).requests, .responses = (s).responses,                \
	.exchanges = (s).exchanges, .unanswered = (s).unanswered,                            \
	.orphan_responses = (s).orphan_responses, .resyncs = (s).resyncs,                    \
	.malformed = (s).framing_errors, .dirs_abandoned = (s).dirs_abandoned,               \
	.alloc_failures = (s).alloc_failures

static void h1_stats(const void *c, struct l7_stats *ret)
{
	struct http1_stats s;

	http1__stats(((const struct http_l7 *)c)->h1, &s);
	*ret = (struct l7_stats){ AS_L7_STATS(s), .requests_dropped = s.requests_dropped,
				  .responses_dropped = s.responses_dropped };
}

static void h2_stats(const void *c, struct l7_stats *ret)
{
	struct http2_stats s;

	http2__stats(((const struct http_l7 *)c)->h2, &s);
	*ret = (struct l7_stats){ AS_L7_STATS(s), .requests_dropped = s.streams_dropped };
}

static void h1_counts(const void *c, void *ret)
{
	http1__stats(((const struct http_l7 *)c)->h1, ret);
}

static void h2_counts(const void *c, void *ret)
{
	http2__stats(((const struct http_l7 *)c)->h2, ret);
}

static int h2_detect(const uint8_t *p, size_t n)
{
	int r = http2__detect(p, n);

	return r == 1 ? L7_DETECT_REQUEST : r;
}

const struct l7_ops l7_http1_ops = {
	.name = "http",
	.keepable = true,
	.detect = http1__detect,
	.new_conn = h1_new,
	.then = &l7_http2_ops,
	.free_conn = http_free,
	.feed = h1_feed,
	.lost = h1_lost,
	.close = h1_close,
	.next = h1_next,
	.role = h1_role,
	.stats = h1_stats,
	.counts = h1_counts,
	.counts_size = sizeof(struct http1_stats),
};

const struct l7_ops l7_http2_ops = {
	.name = "http",
	.heavy = true,
	.detect = h2_detect,
	.new_conn = h2_new,
	.starts = h2_starts,
	.new_after = h2_new_after,
	.free_conn = http_free,
	.feed = h2_feed,
	.lost = h2_lost,
	.close = h2_close,
	.next = h2_next,
	.role = h2_role,
	.stats = h2_stats,
	.counts = h2_counts,
	.counts_size = sizeof(struct http2_stats),
};
