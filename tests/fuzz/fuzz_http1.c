// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a traced process writes and reads on one TCP connection, as the
 * shipper's HTTP/1 parser gets it (shipper/network/protocols/http/http1.c through
 * l7_http1_ops), in the input format and with the checks of l7_fuzz.h, and HTTP's own: every
 * exchange's strings terminated within bounds, with the lengths it claims, a status 0 or
 * 100..599, a method exactly when a request was seen, a status exactly when a response was.
 * A run is clean for the split check only if no candidate start was refused and no framing
 * failed: resynchronizing depends on where segments begin.
 */
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http1.h"
#include "tests/fuzz/l7_fuzz.h"

static void check_str(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap + 1))
		abort();
}

static void http1_check_x(const struct l7_exchange *l)
{
	const struct http1_exchange *x = l->http;

	if (!x || l->http2 || l->code != x->status)
		abort();
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
	if (x->flags & HTTP1_F_NO_REQUEST) {
		if (x->req_bytes || x->method[0] || !x->status)
			abort();
	} else if (!x->method[0] || !x->req_bytes) {
		abort();
	}
	if ((x->flags & HTTP1_F_NO_RESPONSE) && x->status)
		abort();
	if (!(x->flags & HTTP1_F_NO_RESPONSE) && !x->status)
		abort();
}

static unsigned http1_pending(void *c)
{
	return http1__pending(c);
}

static int http1_clean(void *c)
{
	struct http1_stats st;

	l7_http1_ops.counts(c, &st);
	return !st.bad_starts && !st.framing_errors;
}

static const struct l7f_target target = {
	.ops = &l7_http1_ops,
	.check_x = http1_check_x,
	.pending = http1_pending,
	.clean = http1_clean,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return l7f_run(&target, data, size);
}
