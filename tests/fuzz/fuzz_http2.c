// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a traced process writes and reads on one TCP connection, as the
 * shipper's HTTP/2 parser gets it (shipper/network/protocols/http/http2.c through
 * l7_http2_ops: framing, HPACK through hpack.c (fuzz_hpack holds it against libnghttp2's
 * inflater), streams), in the input format and with the checks of l7_fuzz.h, and
 * HTTP/2's own: every exchange's strings terminated within bounds, with the lengths it
 * claims, a status 0 or 100..599, flags of its own kind only, a stream id of 31 bits; streams
 * held (open or not popped) at most HTTP2_MAX_HELD. A run is clean for the split check only if no candidate
 * start was refused: resynchronizing depends on where segments begin.
 */
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http2.h"
#include "tests/fuzz/l7_fuzz.h"

#define F2_ALL ((HTTP2_F2_EVICTED << 1) - 1)

static void check_str(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap + 1))
		abort();
}

static void http2_check_x(const struct l7_exchange *l)
{
	const struct http2_exchange *x2 = l->http2;
	const struct http1_exchange *x;

	if (!x2 || l->http != &x2->h)
		abort();
	x = &x2->h;
	check_str(x->method, HTTP1_METHOD_MAX);
	check_str(x->uri, HTTP1_URI_MAX);
	check_str(x->host, HTTP1_HOST_MAX);
	check_str(x->req_content_type, HTTP1_CTYPE_MAX);
	check_str(x->resp_content_type, HTTP1_CTYPE_MAX);
	check_str(x->sw8, HTTP1_TRACE_MAX);
	check_str(x->b3, HTTP1_TRACE_MAX);
	check_str(x->x_b3_traceid, HTTP1_B3_ID_MAX);
	check_str(x->x_b3_spanid, HTTP1_B3_ID_MAX);
	if (x->uri_len != strlen(x->uri) || x->path_len > x->uri_len)
		abort();
	if (x->path_len < x->uri_len && x->uri[x->path_len] != '?')
		abort();
	if (x->status && (x->status < 100 || x->status > 599))
		abort();
	if ((x->flags & HTTP1_F_NO_RESPONSE) && x->status)
		abort();
	if (x->req_version != 20 || x->resp_version != 20)
		abort();
	if (!x2->stream_id || x2->stream_id > 0x7fffffffu || (x2->flags2 & ~(uint32_t)F2_ALL))
		abort();
	if (x2->grpc_status < -1)
		abort();
	/* A request without bytes of its own: a push's, or the one the h2c upgrade carried. */
	if (!(x->flags & HTTP1_F_NO_REQUEST) && !x->req_bytes &&
	    !(x2->flags2 & (HTTP2_F2_PUSHED | HTTP2_F2_UPGRADED)))
		abort();
}

static unsigned http2_pending(void *c)
{
	return http2__pending(c);
}

static int http2_clean(void *c)
{
	struct http2_stats st;

	l7_http2_ops.counts(c, &st);
	return !st.bad_starts && !st.resyncs;
}

static const struct l7f_target target = {
	.ops = &l7_http2_ops,
	.format = L7F_BYTELESS_REQ | L7F_HEADLESS_ORPHANS,
	.check_x = http2_check_x,
	.pending = http2_pending,
	.max_pending = HTTP2_MAX_HELD,
	.clean = http2_clean,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return l7f_run(&target, data, size);
}
