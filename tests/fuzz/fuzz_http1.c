// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a traced process writes and reads on one TCP connection, as the
 * shipper's HTTP/1 parser gets it (shipper/network/protocols/http/http1.c): segments of either direction with a
 * captured prefix and a gap, lost segments, pops, and a close.
 *
 * Input: a sequence of operations, each an opcode byte
 *   bit 7       direction (1: ingress)
 *   bits 0-1    0, 1: segment; 2: lost; 3: pop (bit 2 clear) or close (bit 2 set)
 *   bits 2-4    time step, and the gap's or loss's shift (in units of 2 bits)
 *   bit 6       segment: a second length byte (high byte)
 * then, for a segment, its length (1 or 2 bytes; cut to what the input has left) and one
 * gap byte (gap = byte << shift), followed by the captured bytes; for a loss, one byte
 * (bytes = byte << shift, 0: unknown).
 *
 * Contracts checked: feeds succeed until close and fail with -EPIPE after; at most
 * HTTP1_MAX_PENDING exchanges held; every exchange's strings terminated within bounds, with
 * the lengths it claims, a status 0 or 100..599, times in order; after close and popping,
 * the bytes in exchanges plus those counted unattributed are all the bytes seen. When the
 * input had no gap, loss or resynchronization, feeding every segment byte by byte gives the
 * same exchanges.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http1.h"

#define MAX_KEEP 256

struct out {
	struct http1_exchange x[MAX_KEEP];
	size_t n;
	uint64_t sum;
	uint64_t max_ts;
};

static void check_str(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap + 1))
		abort();
}

static void check(const struct http1_exchange *x, uint64_t seen, uint64_t max_ts)
{
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
	if (x->req_bytes > seen || x->resp_bytes > seen || x->req_bytes + x->resp_bytes > seen)
		abort();
	if (x->start_ns > x->end_ns || x->end_ns > max_ts)
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
	if (x->req_dir != HTTP1_EGRESS && x->req_dir != HTTP1_INGRESS)
		abort();
}

static void drain(struct http1_conn *c, struct out *o)
{
	struct http1_exchange x;
	struct http1_stats st;

	http1__stats(c, &st);
	if (http1__pending(c) > HTTP1_MAX_PENDING)
		abort();
	while (http1__next(c, &x) == 1) {
		check(&x, st.bytes_seen, o->max_ts);
		o->sum += x.req_bytes + x.resp_bytes;
		if (o->n < MAX_KEEP)
			o->x[o->n++] = x;
	}
}

/* Plays the input; bytewise feeds each segment's bytes one at a time. Returns 1 if clean. */
static int play(const uint8_t *data, size_t size, int bytewise, struct out *o)
{
	struct http1_conn *c = http1__new();
	struct http1_stats st;
	uint64_t ts = 1;
	int closed = 0, clean = 1;
	size_t i = 0;

	if (!c)
		abort();
	while (i < size) {
		uint8_t op = data[i++];
		enum http1_dir dir = op & 0x80 ? HTTP1_INGRESS : HTTP1_EGRESS;
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
					r = http1__feed(c, dir, ts, data + i + k, 1, 1);
			} else {
				r = http1__feed(c, dir, ts, data + i, len, len + gap);
			}
			i += len;
			break;
		}
		case 2:
			clean = 0;
			r = http1__lost(c, dir, i < size ? (uint64_t)data[i++] << shift : 0);
			break;
		default:
			if (op & 4) {
				http1__close(c, ts);
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
	http1__close(c, ts);
	drain(c, o);
	if (http1__pending(c))
		abort();
	http1__stats(c, &st);
	if (o->sum + st.bytes_unattributed != st.bytes_seen) {
		fprintf(stderr, "exchanges %llu + unattributed %llu != seen %llu\n",
			(unsigned long long)o->sum, (unsigned long long)st.bytes_unattributed,
			(unsigned long long)st.bytes_seen);
		abort();
	}
	if (st.resyncs || st.bad_starts || st.framing_errors)
		clean = 0;
	http1__free(c);
	return clean;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct out a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!play(data, size, 0, &a))
		return 0;
	play(data, size, 1, &b);
	if (a.n != b.n)
		abort();
	for (size_t k = 0; k < a.n; k++)
		if (memcmp(&a.x[k], &b.x[k], sizeof(a.x[k])))
			abort();
	return 0;
}
