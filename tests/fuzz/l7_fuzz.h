/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The body of the libFuzzer targets of the parsers behind shipper/network/protocols/l7.h
 * (fuzz_http1.c, fuzz_http2.c, fuzz_mysql.c, fuzz_cql.c, fuzz_mongo.c, fuzz_kafka.c, fuzz_dns.c): what a traced process writes and reads
 * on one connection, as the shipper's parser gets it: segments of either direction with a
 * captured prefix and a gap, lost segments, pops, and a close. Each target is a struct
 * l7f_target: its parser, its input format and the contracts of its protocol.
 *
 * Input: with L7F_MODE_BYTE, one mode byte first (bit 0 set: datagrams, L7_F_DATAGRAM); then
 * a sequence of operations, each an opcode byte
 *   bit 7       direction (1: ingress)
 *   bits 0-1    0, 1: segment; 2: lost; 3: pop (bit 2 clear) or close (bit 2 set)
 *   bits 2-4    time step, and the gap's or loss's shift (in units of 2 bits)
 *   bit 5       with L7F_SECONDS, the time step in seconds rather than nanoseconds (reaches
 *               DNS's 10 s expiry); otherwise unused
 *   bit 6       segment: a second length byte (high byte)
 * then, for a segment, its length (1 or 2 bytes; cut to what the input has left) and one
 * gap byte (gap = byte << shift), followed by the captured bytes; for a loss, one byte
 * (bytes = byte << shift, 0: unknown).
 *
 * Contracts checked for every target: feeds succeed until close and fail with -EPIPE after;
 * at most L7_MAX_PENDING exchanges held, or the target's max_pending (popped at once, or as
 * the target's `pending` says);
 * every exchange's op and target terminated within bounds with no control bytes, flags
 * known, the fields a NO_REQUEST, NO_RESPONSE or NO_REPLY_EXPECTED exchange must leave 0 left
 * 0, sizes within the bytes seen, times in order; after close and popping, the bytes in
 * exchanges plus those counted unattributed are all the bytes seen, and the stats' exchange
 * count is the number popped. Then the target's own `check_x` and `check_stats`. When the
 * input was not datagrams and had no gap, loss, resynchronization or abandoned direction
 * (and the target's own `clean` says so), feeding every segment byte by byte gives the same
 * exchanges.
 */
#ifndef ROVER_TESTS_FUZZ_L7_FUZZ_H
#define ROVER_TESTS_FUZZ_L7_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7.h"
#include "shipper/network/protocols/l7msg.h"
#include "tests/unit/l7_same.h"

#define L7F_MAX_KEEP 256
#define L7F_SEC 1000000000ull
#define L7F_FLAGS                                                                        \
	(L7_F_REQ_TRUNCATED | L7_F_RESP_TRUNCATED | L7_F_NO_REQUEST | L7_F_NO_RESPONSE | \
	 L7_F_TARGET_TRUNCATED | L7_F_NO_REPLY_EXPECTED | L7_F_NO_RESULT | L7_F_SWITCH)

/* struct l7f_target's format. */
enum {
	L7F_MODE_BYTE = 1u << 0, /* the input starts with a mode byte */
	L7F_SECONDS = 1u << 1,	 /* opcode bit 5: time steps in seconds */
	/* a request may have no bytes of its own (HTTP/2's pushes and its stream after an h2c
	 * upgrade): the target's check_x says when */
	L7F_BYTELESS_REQ = 1u << 2,
	/* an orphan (NO_REQUEST) may be a response met without its header block (HTTP/2's
	 * DATA of a stream opened before the capture), which `responses` does not count */
	L7F_HEADLESS_ORPHANS = 1u << 3,
};

struct l7f_target {
	const struct l7_ops *ops;
	unsigned format;
	/* The protocol's own contracts, or NULL; they abort when one is broken. */
	void (*check_x)(const struct l7_exchange *x);
	void (*check_stats)(const struct l7_stats *st);
	/* Exchanges the connection holds, pending or not popped; NULL: not known. */
	unsigned (*pending)(void *c);
	/* The most it may hold (and a pop may give at once); 0: L7_MAX_PENDING. */
	unsigned max_pending;
	/* 0 if the run's exchanges may depend on where segments begin; NULL: they do not. */
	int (*clean)(void *c);
};

struct l7f_out {
	struct l7_exchange x[L7F_MAX_KEEP];
	struct http2_exchange hx[L7F_MAX_KEEP]; /* HTTP's part of x[] */
	size_t n, popped;
	uint64_t sum;
	uint64_t max_ts;
};

static void l7f_check_str(const char *s, size_t cap)
{
	const char *end = memchr(s, '\0', cap + 1);

	if (!end)
		abort();
	for (const char *p = s; p < end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
}

static void l7f_check(const struct l7_exchange *x, uint64_t seen, uint64_t max_ts, unsigned format)
{
	l7f_check_str(x->op, L7_OP_MAX);
	l7f_check_str(x->target, L7_TARGET_MAX);
	if (x->flags & ~(uint32_t)L7F_FLAGS)
		abort();
	if (x->req_bytes > seen || x->resp_bytes > seen || x->req_bytes + x->resp_bytes > seen)
		abort();
	if (x->start_ns > x->end_ns || x->end_ns > max_ts)
		abort();
	if (x->req_dir != L7_EGRESS && x->req_dir != L7_INGRESS)
		abort();
	if (x->error > 1)
		abort();
	if (x->flags & L7_F_NO_REQUEST) {
		if (x->req_bytes || (x->flags & (L7_F_NO_RESPONSE | L7_F_NO_REPLY_EXPECTED)))
			abort();
	} else if (!x->req_bytes && !(format & L7F_BYTELESS_REQ)) {
		abort();
	}
	if ((x->flags & (L7_F_NO_RESPONSE | L7_F_NO_REPLY_EXPECTED)) &&
	    (x->resp_bytes || x->code || x->error))
		abort();
	if ((x->flags & L7_F_NO_RESPONSE) && (x->flags & L7_F_NO_REPLY_EXPECTED))
		abort();
}

/*
 * check_x of the protocols that name every request (MySQL, CQL, MongoDB, Kafka): a request
 * has an op; a response without one has neither op nor target, only its bytes.
 */
static inline void l7f_check_named(const struct l7_exchange *x)
{
	if (x->flags & L7_F_NO_REQUEST) {
		if (x->op[0] || x->target[0] || !x->resp_bytes)
			abort();
	} else if (!x->op[0]) {
		abort();
	}
}

/*
 * MySQL's and CQL's: l7f_check_named's, and a target cut to nothing belongs to a cut
 * request. Not Kafka's (fuzz_kafka broke it at once): a topic name that starts where the
 * bytes it reads of a message end is flagged cut, empty, in a request not flagged cut; and
 * MongoDB reads its names the same way.
 */
static inline void l7f_check_named_cut(const struct l7_exchange *x)
{
	l7f_check_named(x);
	if ((x->flags & L7_F_TARGET_TRUNCATED) && !x->target[0] && !(x->flags & L7_F_REQ_TRUNCATED))
		abort();
}

/* pending of the parsers over shipper/network/protocols/l7msg.c (MongoDB, Kafka). */
static inline unsigned l7f_l7msg_pending(void *c)
{
	return l7msg__pending(c);
}

static void l7f_drain(const struct l7f_target *t, void *c, struct l7f_out *o)
{
	struct l7_exchange x;
	struct l7_stats st;
	unsigned n = 0, max = t->max_pending ? t->max_pending : L7_MAX_PENDING;

	t->ops->stats(c, &st);
	if (t->pending && t->pending(c) > max)
		abort();
	while (t->ops->next(c, &x) == 1) {
		if (++n > max)
			abort();
		l7f_check(&x, st.bytes_seen, o->max_ts, t->format);
		if (t->check_x)
			t->check_x(&x);
		o->sum += x.req_bytes + x.resp_bytes;
		o->popped++;
		if (o->n < L7F_MAX_KEEP) {
			l7_x_keep(&x, &o->x[o->n], &o->hx[o->n]);
			o->n++;
		}
	}
}

/*
 * Plays the operations; bytewise feeds each segment's bytes one at a time. Returns 1 if the
 * run was clean: exchanges that do not depend on where segments begin.
 */
static int l7f_play(const struct l7f_target *t, unsigned flags, const uint8_t *data, size_t size,
		    int bytewise, struct l7f_out *o)
{
	const struct l7_ops *ops = t->ops;
	void *c = ops->new_conn(flags);
	struct l7_stats st;
	uint64_t ts = 1;
	int closed = 0, ok = !(flags & L7_F_DATAGRAM);
	size_t i = 0;

	if (!c)
		abort();
	while (i < size) {
		uint8_t op = data[i++];
		enum l7_dir dir = op & 0x80 ? L7_INGRESS : L7_EGRESS;
		unsigned shift = ((op >> 2) & 7) * 2;
		int r = 0;

		ts += ((op >> 2) & 7) * ((t->format & L7F_SECONDS) && (op & 0x20) ? L7F_SEC : 1);
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
				ok = 0;
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
			ok = 0;
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
		l7f_drain(t, c, o);
	}
	ops->close(c, ts);
	l7f_drain(t, c, o);
	if (ops->next(c, NULL) || (t->pending && t->pending(c)))
		abort();
	ops->stats(c, &st);
	if (o->sum + st.bytes_unattributed != st.bytes_seen) {
		fprintf(stderr, "exchanges %llu + unattributed %llu != seen %llu\n",
			(unsigned long long)o->sum, (unsigned long long)st.bytes_unattributed,
			(unsigned long long)st.bytes_seen);
		abort();
	}
	if (st.exchanges != o->popped) {
		fprintf(stderr, "exchanges counted %llu, popped %zu\n",
			(unsigned long long)st.exchanges, o->popped);
		abort();
	}
	if (st.bytes_unattributed > st.bytes_seen || st.gap_bytes > st.bytes_seen ||
	    (st.responses < st.orphan_responses && !(t->format & L7F_HEADLESS_ORPHANS)))
		abort();
	if (t->check_stats)
		t->check_stats(&st);
	if (st.resyncs || st.dirs_abandoned || (t->clean && !t->clean(c)))
		ok = 0;
	ops->free_conn(c);
	return ok;
}

static int l7f_run(const struct l7f_target *t, const uint8_t *data, size_t size)
{
	static struct l7f_out a, b;
	unsigned flags = 0;

	if (t->format & L7F_MODE_BYTE) {
		if (!size)
			return 0;
		flags = data[0] & 1 ? L7_F_DATAGRAM : 0;
		data++;
		size--;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!l7f_play(t, flags, data, size, 0, &a))
		return 0;
	l7f_play(t, flags, data, size, 1, &b);
	if (a.n != b.n || a.popped != b.popped)
		abort();
	for (size_t k = 0; k < a.n; k++)
		if (!l7_x_same(&a.x[k], &b.x[k]))
			abort();
	return 0;
}

#endif
