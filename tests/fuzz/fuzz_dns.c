// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a traced process writes and reads on one DNS socket, as the
 * shipper's DNS parser gets it (shipper/network/protocols/dns.c through l7_dns_ops): over UDP (each segment one
 * datagram) or TCP (length-prefixed messages), segments of either direction with a captured
 * prefix and a gap, lost segments, pops, and a close.
 *
 * Input: tests/fuzz/l7_fuzz.h's, with its mode byte first (bit 0 set: datagrams) and opcode
 * bit 5 for time steps in seconds (reaches the 10 s expiry).
 *
 * Contracts checked besides l7_fuzz.h's: op a type name or "", code an RCODE (0..15) with
 * error set exactly when it is not 0, the sizes and flags a query or an answer that was or
 * was not seen implies (a DNS header is 12 bytes, no NO_REPLY_EXPECTED), every query kept
 * ending in one exchange and every answer in at most one.
 */
#include "tests/fuzz/l7_fuzz.h"

static void dns_check_x(const struct l7_exchange *x)
{
	for (const char *p = x->op; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			abort();
	if (x->code < 0 || x->code > 15 || x->error != (x->code != 0))
		abort();
	if (x->flags & L7_F_NO_REPLY_EXPECTED)
		abort();
	if (x->flags & L7_F_NO_REQUEST) {
		if (x->flags & L7_F_REQ_TRUNCATED)
			abort();
	} else if (x->req_bytes < 12) {
		abort();
	}
	if (x->flags & L7_F_NO_RESPONSE) {
		if (x->flags & L7_F_RESP_TRUNCATED)
			abort();
	} else if (x->resp_bytes < 12) {
		abort();
	}
}

/* Every query kept ends in one exchange, every answer in at most one. */
static void dns_check_stats(const struct l7_stats *st)
{
	if (st->requests_dropped > st->requests ||
	    st->exchanges < st->requests - st->requests_dropped ||
	    st->exchanges > st->requests - st->requests_dropped + st->orphan_responses)
		abort();
}

static const struct l7f_target target = {
	.ops = &l7_dns_ops,
	.format = L7F_MODE_BYTE | L7F_SECONDS,
	.check_x = dns_check_x,
	.check_stats = dns_check_stats,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return l7f_run(&target, data, size);
}
