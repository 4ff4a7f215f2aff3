/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The payload of a connection whose protocol the shipper parses: its protocol detected from
 * its first calls, at most opts.capture_bytes of each call copied from the call's user buffers
 * and sent as a record; a small read may wait to go with the next.
 */
#ifndef ROVER_BPF_NET_CAPTURE_H
#define ROVER_BPF_NET_CAPTURE_H

#include "common/netrec.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/record.bpf.h"
#include "bpf/net/detect.bpf.h"

/* What the worker sets before loading. */
const volatile struct net_opts opts = { .capture_bytes = 1024, .detect_tries = 4 };

/*
 * The access log parses HTTP/1 and HTTP/2 only (docs/access-log.md): another protocol found is
 * no protocol to it, and its payload is never copied.
 */
static __always_inline __u8 alog_keep(__u8 p)
{
	if (!opts.access_log || p == NET_PROTO_HTTP1 || p == NET_PROTO_HTTP2 ||
	    p == NET_PROTO_UNKNOWN)
		return p;
	return NET_PROTO_NONE;
}

/*
 * iovecs a payload is copied from: HTTP/2 peers write a frame header and its payload as two
 * (nginx: five for its first answer), gRPC's C core a header block as a slice per name and
 * value (27 for its first request).
 */
#define COPY_IOV 64

/*
 * iovecs read in one copy from the caller's array: each bpf_probe_read_user costs 70-100 ns
 * here whatever its size (nginx's writev of a header and a body was four copies, 275 ns of
 * its call's BPF time: scripts/bench_network.sh), so the array's first ones come in one.
 */
#define COPY_IOV_AT_ONCE 4

/*
 * Copies up to want bytes of the call's payload into s->buf after the at bytes already there
 * (held ones, at most NET_HOLD_MAX; at + want <= NET_CAPTURE_MAX); returns the bytes copied.
 * A global function: verified once, its loop walked once, not at every call site (inlined with
 * COPY_IOV iovecs, the socket programs passed the verifier's bound).
 */
__noinline __u32 copy_payload(struct scratch *s, const struct bufs *b, __u32 want, __u32 at)
{
	struct iovec first[COPY_IOV_AT_ONCE] = {};
	__u64 w = want, off = 0, a = at, pos;

	if (!s || !b)
		return 0;
	/* Bounds the verifier keeps: its arguments are unknown 64-bit values here. */
	asm volatile("%[w] &= 0x1fff" : [w] "+r"(w));
	asm volatile("%[a] &= 0x1f" : [a] "+r"(a));
	if (a > NET_HOLD_MAX)
		return 0;
	if (w > NET_CAPTURE_MAX - a)
		w = NET_CAPTURE_MAX - a;
	if (b->base) {
		if (!w || bpf_probe_read_user(s->buf + a, w, (void *)b->base))
			return 0;
		return w;
	}
	{
		__u64 n = b->iovcnt < COPY_IOV_AT_ONCE ? b->iovcnt : COPY_IOV_AT_ONCE;

		if (!n || !w || bpf_probe_read_user(first, n * sizeof(first[0]), (void *)b->iov))
			return 0;
	}
	for (__u32 i = 0; i < COPY_IOV; i++) {
		struct iovec iov;
		__u64 len;

		if (i >= b->iovcnt || off >= w)
			break;
		if (i < COPY_IOV_AT_ONCE)
			iov = first[i & (COPY_IOV_AT_ONCE - 1)];
		else if (bpf_probe_read_user(&iov, sizeof(iov), (void *)(b->iov + i * sizeof(iov))))
			break;
		len = iov.iov_len < w - off ? iov.iov_len : w - off;
		/* a + off < NET_CAPTURE_MAX: the masks change nothing but the verifier's view. */
		asm volatile("%[o] &= 0xfff" : [o] "+r"(off));
		pos = a + off;
		asm volatile("%[p] &= 0xfff" : [p] "+r"(pos));
		asm volatile("%[l] &= 0x1fff" : [l] "+r"(len));
		if (len > NET_CAPTURE_MAX)
			len = NET_CAPTURE_MAX;
		if (len && bpf_probe_read_user(s->buf + pos, len, iov.iov_base))
			break;
		off += len;
	}
	return off;
}

/*
 * Whether a read's bytes (all captured) may wait in st for the next call: a protocol we parse,
 * a stream, and a small read that got exactly what it asked for, so that more of the same
 * message follows at once (a header read before its body). A read that asked for more is a
 * whole message, perhaps the last for a while: it goes now.
 */
static __always_inline int holdable(const struct net_conn_state *st, __u32 dir,
				    const struct args *a, __u64 bytes, __u32 captured)
{
	return dir == NET_DIR_INGRESS && !(st->conn.flags & NET_CONN_UDP) &&
	       (a->kind == K_READ || a->kind == K_RECVFROM) && bytes && bytes <= NET_HOLD_MAX &&
	       captured == bytes && a->a2 == bytes;
}

/*
 * Sends a prefix of a call's payload for connections of a protocol the shipper parses,
 * detecting the protocol first while it is not known (tries: the calls seen so far). a->kind
 * K_NONE: bytes moved by a call whose buffer is unknown (sent as a gap of that size).
 */
static __always_inline void capture(struct net_conn_state *st, __u32 dir, const struct args *a,
				    __u64 bytes, __u32 tgid, __u64 now, __u64 tries, __u8 fn)
{
	__u32 zero = 0, captured = 0, held = 0, len;
	__u64 seq, start = a->ts ? a->ts : now;
	struct scratch *s;
	struct bufs b = {};

	if (st->conn.proto == NET_PROTO_NONE)
		return;
	s = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!s)
		return;
	/* Only a connection whose protocol is known holds bytes. */
	if (st->hold_len)
		held = hold_take(st, dir, s);
	if (held)
		start = s->rec.start_ns;
	if (a->kind != K_SENDFILE && a->kind != K_NONE) {
		__u32 want = st->conn.proto == NET_PROTO_UNKNOWN ? 16
			     : opts.capture_bytes > held	 ? opts.capture_bytes - held
								 : 0;

		if (bytes < want)
			want = bytes;
		if (bufs_of(a, &b) == 0)
			captured = copy_payload(s, &b, want, held);
		if (captured < want)
			stat_add(NET_STAT_READ_FAULT, want - captured);
	}
	if (st->conn.proto != NET_PROTO_UNKNOWN && !held && holdable(st, dir, a, bytes, captured)) {
		__builtin_memcpy(st->hold, s->buf, NET_HOLD_MAX);
		st->hold_start_ns = start;
		st->hold_end_ns = now;
		st->hold_dir = dir;
		st->hold_fn = fn;
		/* Two threads reading one stream at once: the one that could not hold sends. */
		if (__sync_val_compare_and_swap(&st->hold_len, 0, (__u64)captured) == 0)
			return;
	}
	if (st->conn.proto == NET_PROTO_UNKNOWN) {
		__u8 p;

		if (captured && captured < 5 && captured == bytes && st->head_len + captured <= 8 &&
		    !(st->conn.flags & NET_CONN_UDP)) {
			/* Calls of a few bytes each: their bytes are gathered until they tell. */
			for (__u32 i = 0; i < 4; i++)
				if (i < captured)
					st->head[(st->head_len + i) & 7] = s->buf[i];
			st->head_len += captured;
			if (st->head_len < 5)
				return;
			{
				struct det_bytes h = {};

				__builtin_memcpy(h.b, st->head, 8);
				p = alog_keep(net_detect(&h, st->head_len, 0, DET_STREAM));
			}
			if (p == NET_PROTO_UNKNOWN)
				p = NET_PROTO_NONE;
			st->conn.proto = p;
			if (p == NET_PROTO_NONE)
				return;
			/* The gathered bytes are the first segment. */
			__builtin_memcpy(s->buf, st->head, 8);
			bytes = captured = st->head_len & 15;
			goto send;
		}
		/*
		 * A length read or written by itself, then a message of that length: DNS over TCP
		 * as unbound reads it (2 bytes), a Kafka request as brokers read it (4). The length
		 * goes first, as a segment of its own.
		 */
		p = NET_PROTO_NONE;
		if (st->head_len == 2 && ((__u32)st->head[0] << 8 | st->head[1]) == bytes)
			p = net_detect((const struct det_bytes *)s->buf, captured, bytes,
				       DET_DATAGRAM);
		else if (st->head_len == 4 && ((__u32)st->head[0] << 24 | (__u32)st->head[1] << 16 |
					       (__u32)st->head[2] << 8 | st->head[3]) == bytes)
			p = net_detect((const struct det_bytes *)s->buf, captured, bytes,
				       DET_KAFKA_BODY);
		p = alog_keep(p);
		if (p == NET_PROTO_DNS || p == NET_PROTO_KAFKA) {
			st->conn.proto = p;
			emit_head(st, dir, tgid, a->ts ? a->ts : now, fn);
			goto detected;
		}
		p = net_detect((const struct det_bytes *)s->buf, captured, bytes,
			       st->conn.flags & NET_CONN_UDP ? DET_DATAGRAM
			       : st->conn.flags & (NET_CONN_MIDSTREAM | NET_CONN_TLS)
				       ? DET_MIDSTREAM
				       : DET_STREAM);
		/*
		 * Too few bytes to tell (or none we could read): wait for the next calls. So too
		 * for bytes of no protocol on a connection met mid-stream or carrying a TLS
		 * library's plaintext: a response, or a handshake's last messages, may come first.
		 */
		if (p == NET_PROTO_NONE && (st->conn.flags & (NET_CONN_MIDSTREAM | NET_CONN_TLS)))
			p = NET_PROTO_UNKNOWN;
		p = alog_keep(p);
		if (p == NET_PROTO_UNKNOWN && tries < opts.detect_tries)
			return;
		if (p == NET_PROTO_UNKNOWN)
			p = NET_PROTO_NONE;
		st->conn.proto = p;
		if (p == NET_PROTO_NONE)
			return;
detected:
		/* Detected: this call's payload is the first segment. */
		if (bytes > captured && opts.capture_bytes > captured) {
			__u32 want = opts.capture_bytes < bytes ? opts.capture_bytes : bytes;

			captured = copy_payload(s, &b, want, 0);
		}
	}

send:
	/* The held bytes lead this segment. */
	captured += held;
	bytes += held;
	seq = __sync_fetch_and_add(&st->conn.data_seq[dir & 1], 1) + 1;
	if (budget_take(s, captured)) {
		stat_add(NET_STAT_DATA_BUDGET, 1);
		stat_add(NET_STAT_DATA_BYTES_LOST, bytes);
		return;
	}
	captured &= 2 * NET_CAPTURE_MAX - 1;
	if (captured > NET_CAPTURE_MAX)
		captured = NET_CAPTURE_MAX;
	s->rec.hdr.kind = NET_REC_DATA;
	s->rec.hdr.len = (sizeof(s->rec) + captured + 7) & ~7u;
	s->rec.conn_id = st->conn.id;
	s->rec.start_ns = start;
	s->rec.end_ns = now;
	s->rec.seq = seq;
	s->rec.tgid = tgid;
	s->rec.actual = bytes > 0xffffffffu ? 0xffffffffu : bytes;
	s->rec.captured = captured;
	s->rec.dir = dir;
	s->rec.fn = fn;
	s->rec.proto = st->conn.proto;
	s->rec.dgram = (st->conn.flags & NET_CONN_UDP) != 0;
	s->rec.held = held;
	if (!held)
		s->rec.held_end_ns = 0;
	len = s->rec.hdr.len;
	/* <= 8191 < sizeof(*s), in a form the verifier keeps (captured <= NET_CAPTURE_MAX). */
	asm volatile("%[len] &= 0x1fff" : [len] "+r"(len));
	if (bpf_ringbuf_output(&events, s, len, wake_flag(len))) {
		stat_add(NET_STAT_DATA_RINGBUF, 1);
		stat_add(NET_STAT_DATA_BYTES_LOST, bytes);
	}
}

#endif
