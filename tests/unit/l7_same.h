/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper for the unit tests and the fuzz targets of the parsers behind
 * shipper/network/protocols/l7.h: an exchange kept past the parser's next call (HTTP's part
 * copied out, l7_exchange.http and .http2 pointing at the copy), and two exchanges compared
 * field by field (padding is not a field), HTTP's part by its content.
 */
#ifndef ROVER_TESTS_L7_SAME_H
#define ROVER_TESTS_L7_SAME_H

#include <stdbool.h>
#include <string.h>

#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/protocols/l7.h"

/* *x into *ret, its HTTP part into *store. */
static inline void l7_x_keep(const struct l7_exchange *x, struct l7_exchange *ret,
			     struct http2_exchange *store)
{
	*ret = *x;
	if (x->http2) {
		*store = *x->http2;
		ret->http2 = store;
		ret->http = &store->h;
	} else if (x->http) {
		store->h = *x->http;
		ret->http = &store->h;
	}
}

static inline bool l7_x_same(const struct l7_exchange *a, const struct l7_exchange *b)
{
	if (!a->http != !b->http || !a->http2 != !b->http2)
		return false;
	if (a->http2 && memcmp(a->http2, b->http2, sizeof(*a->http2)))
		return false;
	if (a->http && memcmp(a->http, b->http, sizeof(*a->http)))
		return false;
	return a->start_ns == b->start_ns && a->end_ns == b->end_ns &&
	       a->req_bytes == b->req_bytes && a->resp_bytes == b->resp_bytes &&
	       a->flags == b->flags && a->code == b->code && a->error == b->error &&
	       a->req_dir == b->req_dir && !strcmp(a->op, b->op) && !strcmp(a->target, b->target);
}

#endif
