/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libFuzzer harness of the request/response parsers of shipper/l7.h (fuzz_mongo.c,
 * fuzz_kafka.c include it with their struct l7_ops): what a traced process writes and reads
 * on one TCP connection, as segments of either direction with a captured prefix and a gap,
 * lost segments, pops and a close.
 *
 * Input: a sequence of operations, each an opcode byte
 *   bit 7       direction (1: ingress)
 *   bits 0-1    0, 1: segment; 2: lost; 3: pop (bit 2 clear) or close (bit 2 set)
 *   bits 2-4    time step, and the gap's or loss's shift (in units of 2 bits)
 *   bit 6       segment: a second length byte (high byte)
 * then, for a segment, its length (1 or 2 bytes; cut to what the input has left) and one
 * gap byte (gap = byte << shift), followed by the captured bytes; for a loss, one byte
 * (bytes = byte << shift, 0: unknown). The same format as fuzz_http1.
 *
 * Contracts checked: feeds succeed until close and fail with -EPIPE after; at most
 * L7_MAX_PENDING exchanges held; every exchange's strings terminated within bounds with no
 * control bytes, flags known, a NO_REQUEST one without request bytes or op, a NO_RESPONSE one
 * without response bytes or code, times in order; after close and popping, the bytes in
 * exchanges plus those counted unattributed are all the bytes seen. When the input had no
 * gap, loss or resynchronization, feeding every segment byte by byte gives the same
 * exchanges.
 */
#ifndef ROVER_TESTS_FUZZ_L7_H
#define ROVER_TESTS_FUZZ_L7_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/l7.h"
#include "shipper/l7msg.h"

#define MAX_KEEP 256
#define KNOWN_FLAGS                                                                             \
	(L7_F_REQ_TRUNCATED | L7_F_RESP_TRUNCATED | L7_F_NO_REQUEST | L7_F_NO_RESPONSE |         \
	 L7_F_TARGET_TRUNCATED | L7_F_NO_REPLY_EXPECTED)

struct out {
	struct l7_exchange x[MAX_KEEP];
	size_t n;
	uint64_t sum;
	uint64_t max_ts;
};

static void check_str(const char *s, size_t cap)
{
	const char *z = memchr(s, '\0', cap + 1);

	if (!z)
		abort();
	for (const char *p = s; p < z; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
}

static void check(const struct l7_exchange *x, uint64_t seen, uint64_t max_ts)
{
	check_str(x->op, L7_OP_MAX);
	check_str(x->target, L7_TARGET_MAX);
	if (x->flags & ~(uint32_t)KNOWN_FLAGS)
		abort();
	if (x->req_bytes > seen || x->resp_bytes > seen || x->req_bytes + x->resp_bytes > seen)
		abort();
	if (x->start_ns > x->end_ns || x->end_ns > max_ts)
		abort();
	if (x->error > 1 || (x->req_dir != L7_EGRESS && x->req_dir != L7_INGRESS))
		abort();
	if (x->flags & L7_F_NO_REQUEST) {
		if (x->req_bytes || x->op[0] || x->target[0] || !x->resp_bytes ||
		    (x->flags & (L7_F_NO_RESPONSE | L7_F_NO_REPLY_EXPECTED)))
			abort();
	} else if (!x->req_bytes || !x->op[0]) {
		abort();
	}
	if ((x->flags & (L7_F_NO_RESPONSE | L7_F_NO_REPLY_EXPECTED)) &&
	    (x->resp_bytes || x->code || x->error))
		abort();
	if ((x->flags & L7_F_NO_RESPONSE) && (x->flags & L7_F_NO_REPLY_EXPECTED))
		abort();
}

static void drain(const struct l7_ops *ops, void *c, struct out *o)
{
	struct l7_exchange x;
	struct l7_stats st;

	ops->stats(c, &st);
	if (l7msg__pending(c) > L7_MAX_PENDING)
		abort();
	while (ops->next(c, &x) == 1) {
		check(&x, st.bytes_seen, o->max_ts);
		o->sum += x.req_bytes + x.resp_bytes;
		if (o->n < MAX_KEEP)
			o->x[o->n++] = x;
	}
}

/* Plays the input; bytewise feeds each segment's bytes one at a time. Returns 1 if clean. */
static int play(const struct l7_ops *ops, const uint8_t *data, size_t size, int bytewise,
		struct out *o)
{
	void *c = ops->new_conn(0);
	struct l7_stats st;
	uint64_t ts = 1;
	int closed = 0, clean = 1;
	size_t i = 0;

	if (!c)
		abort();
	while (i < size) {
		uint8_t op = data[i++];
		enum l7_dir dir = op & 0x80 ? L7_INGRESS : L7_EGRESS;
		unsigned shift = ((op >> 2) & 7) * 2;
		int r = 0;

		ts += (op >> 2) & 7;
		o->max_ts = ts;
		switch (op & 3) {
		case 0:
		case 1: {
			size_t len = 0, gap = 0;

			if (i < size)
				len = data[i++];
			if ((op & 0x40) && i < size)
				len |= (size_t)data[i++] << 8;
			if (i < size)
				gap = (size_t)data[i++] << shift;
			if (len > size - i)
				len = size - i;
			if (gap)
				clean = 0;
			if (bytewise && !gap && len) {
				for (size_t k = 0; k < len && !r; k++)
					r = ops->feed(c, dir, ts, data + i + k, 1, 1);
			} else {
				r = ops->feed(c, dir, ts, data + i, len, len + gap);
			}
			i += len;
			break;
		}
		case 2:
			clean = 0;
			r = ops->lost(c, dir, i < size ? (uint64_t)data[i++] << shift : 0);
			break;
		default:
			if (op & 4) {
				ops->close(c, ts);
				closed = 1;
			}
			break;
		}
		if (r && !(closed && r == -EPIPE))
			abort();
		if (!r && closed && (op & 3) < 3)
			abort();
		drain(ops, c, o);
	}
	ops->close(c, ts);
	drain(ops, c, o);
	if (l7msg__pending(c))
		abort();
	ops->stats(c, &st);
	if (o->sum + st.bytes_unattributed != st.bytes_seen) {
		fprintf(stderr, "exchanges %llu + unattributed %llu != seen %llu\n",
			(unsigned long long)o->sum, (unsigned long long)st.bytes_unattributed,
			(unsigned long long)st.bytes_seen);
		abort();
	}
	if (st.exchanges < o->n || st.responses < st.orphan_responses)
		abort();
	if (st.resyncs || st.dirs_abandoned)
		clean = 0;
	ops->free_conn(c);
	return clean;
}

static int fuzz_l7(const struct l7_ops *ops, const uint8_t *data, size_t size)
{
	static struct out a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!play(ops, data, size, 0, &a))
		return 0;
	play(ops, data, size, 1, &b);
	if (a.n != b.n)
		abort();
	for (size_t k = 0; k < a.n; k++)
		if (memcmp(&a.x[k], &b.x[k], sizeof(a.x[k])))
			abort();
	return 0;
}

#endif
