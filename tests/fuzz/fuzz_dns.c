// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a traced process writes and reads on one DNS socket, as the
 * shipper's DNS parser gets it (shipper/dns.c through l7_dns_ops): over UDP (each segment one
 * datagram) or TCP (length-prefixed messages), segments of either direction with a captured
 * prefix and a gap, lost segments, pops, and a close.
 *
 * Input: one mode byte (bit 0 set: datagrams, L7_F_DATAGRAM), then operations as in
 * fuzz_http1.c, each an opcode byte
 *   bit 7       direction (1: ingress)
 *   bits 0-1    0, 1: segment; 2: lost; 3: pop (bit 2 clear) or close (bit 2 set)
 *   bits 2-4    time step, and the gap's or loss's shift (in units of 2 bits)
 *   bit 5       time step in seconds rather than nanoseconds (reaches the 10 s expiry)
 *   bit 6       segment: a second length byte (high byte)
 * then, for a segment, its length (1 or 2 bytes; cut to what the input has left) and one
 * gap byte (gap = byte << shift), followed by the captured bytes; for a loss, one byte
 * (bytes = byte << shift, 0: unknown).
 *
 * Contracts checked: feeds succeed until close and fail with -EPIPE after; every exchange's
 * strings terminated within bounds and free of control bytes, op a type name or "", code an
 * RCODE (0..15) with error set exactly when it is not 0, the sizes and flags a query or an
 * answer that was or was not seen implies, times in order; after close and popping, the bytes
 * in exchanges plus those counted unattributed are all the bytes seen. Over TCP, when the
 * input had no gap, loss or resynchronization, feeding every segment byte by byte gives the
 * same exchanges.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/l7.h"

#define MAX_KEEP 256
#define SEC 1000000000ull

struct out {
	struct l7_exchange x[MAX_KEEP];
	size_t n;
	uint64_t sum;
	uint64_t total;
	uint64_t max_ts;
};

static const struct l7_ops *ops = &l7_dns_ops;

static void check_str(const char *s, size_t cap)
{
	const char *end = memchr(s, '\0', cap + 1);

	if (!end)
		abort();
	for (const char *p = s; p < end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
}

static void check(const struct l7_exchange *x, uint64_t seen, uint64_t max_ts)
{
	check_str(x->op, L7_OP_MAX);
	check_str(x->target, L7_TARGET_MAX);
	for (const char *p = x->op; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			abort();
	if (x->code < 0 || x->code > 15 || x->error != (x->code != 0))
		abort();
	if (x->req_bytes + x->resp_bytes > seen)
		abort();
	if (x->start_ns > x->end_ns || x->end_ns > max_ts)
		abort();
	if (x->req_dir != L7_EGRESS && x->req_dir != L7_INGRESS)
		abort();
	if (x->flags & ~(uint32_t)(L7_F_REQ_TRUNCATED | L7_F_RESP_TRUNCATED | L7_F_NO_REQUEST |
				   L7_F_NO_RESPONSE | L7_F_TARGET_TRUNCATED))
		abort();
	if (x->flags & L7_F_NO_REQUEST) {
		if (x->req_bytes || (x->flags & (L7_F_NO_RESPONSE | L7_F_REQ_TRUNCATED)))
			abort();
	} else if (x->req_bytes < 12) {
		abort();
	}
	if (x->flags & L7_F_NO_RESPONSE) {
		if (x->resp_bytes || x->code || (x->flags & L7_F_RESP_TRUNCATED))
			abort();
	} else if (x->resp_bytes < 12) {
		abort();
	}
}

static void drain(void *c, struct out *o)
{
	struct l7_exchange x;
	struct l7_stats st;
	unsigned n = 0;

	ops->stats(c, &st);
	while (ops->next(c, &x) == 1) {
		if (++n > L7_MAX_PENDING)
			abort();
		check(&x, st.bytes_seen, o->max_ts);
		o->sum += x.req_bytes + x.resp_bytes;
		o->total++;
		if (o->n < MAX_KEEP)
			o->x[o->n++] = x;
	}
}

/* Plays the input; bytewise feeds each segment's bytes one at a time. Returns 1 if clean. */
static int play(const uint8_t *data, size_t size, unsigned flags, int bytewise, struct out *o)
{
	void *c = ops->new_conn(flags);
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

		ts += ((op >> 2) & 7) * (op & 0x20 ? SEC : 1);
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
		drain(c, o);
	}
	ops->close(c, ts);
	drain(c, o);
	if (ops->next(c, NULL))
		abort();
	ops->stats(c, &st);
	if (o->sum + st.bytes_unattributed != st.bytes_seen) {
		fprintf(stderr, "exchanges %llu + unattributed %llu != seen %llu\n",
			(unsigned long long)o->sum, (unsigned long long)st.bytes_unattributed,
			(unsigned long long)st.bytes_seen);
		abort();
	}
	/* Every query kept ends in one exchange, every answer in at most one. */
	if (st.exchanges != o->total || st.requests_dropped > st.requests ||
	    st.exchanges < st.requests - st.requests_dropped ||
	    st.exchanges > st.requests - st.requests_dropped + st.orphan_responses)
		abort();
	if (st.resyncs || st.dirs_abandoned)
		clean = 0;
	ops->free_conn(c);
	return clean;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct out a, b;
	unsigned flags;

	if (!size)
		return 0;
	flags = data[0] & 1 ? L7_F_DATAGRAM : 0;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!play(data + 1, size - 1, flags, 0, &a) || flags)
		return 0;
	play(data + 1, size - 1, flags, 1, &b);
	if (a.n != b.n)
		abort();
	for (size_t k = 0; k < a.n; k++)
		if (memcmp(&a.x[k], &b.x[k], sizeof(a.x[k])))
			abort();
	return 0;
}
