/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Records to the worker: the ring buffer they go through and when it wakes the worker, the
 * payload budget of a flush, and the small records of held or gathered bytes.
 */
#ifndef ROVER_BPF_NET_RECORD_H
#define ROVER_BPF_NET_RECORD_H

#include "common/netrec.h"
#include "bpf/net/target.bpf.h"

/*
 * 16 MiB: what the worker has not read yet waits here, and the worker waits for the shipper,
 * which the scheduler may leave runnable but off the CPU for most of a second while the
 * targets' threads wake each other (0.64 s seen on this 2-core VM under mariadb-slap, at
 * 13 MB/s of records: 8 MiB overflowed; 16 MiB holds 1.2 s of it). The worker maps the data
 * once (worker/ringread.h): these 16 MiB are 16 MB of its resident set, where libbpf's reader
 * of the 32 MiB ring before made 64.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/*
 * The worker reads the ring buffer at least every 100 ms; a wakeup per record would cost more
 * than the record. It is woken early when a record of len bytes takes the ring past 2 MiB
 * waiting, and again at each further MiB: a wakeup for every record past the mark (as once)
 * is an interrupt each (irq_work, a self-IPI: 3-5 us on this VM's hypervisor), which made
 * every call of a busy target dearer exactly while the worker was behind. A crossing two CPUs
 * both miss is made up for at the next MiB, or by the worker's own 100 ms.
 */
#define WAKE_AT (2ull << 20)

static __always_inline __u64 wake_flag(__u64 len)
{
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);

	if (avail + len < WAKE_AT || (avail >> 20) == ((avail + len) >> 20))
		return BPF_RB_NO_WAKEUP;
	return BPF_RB_FORCE_WAKEUP;
}

/* Payload bytes the program may still send in this flush; the worker refills it. */
__s64 budget = 0;

struct scratch {
	struct net_rec_data rec;
	__u8 buf[2 * NET_CAPTURE_MAX];
	/*
	 * Payload bytes this CPU took from the flush's budget and has not sent yet: the shared
	 * budget is touched once per BUDGET_CHUNK, not at every segment (its cache line would
	 * move between CPUs at each call of a busy target). At most a chunk per CPU more than
	 * the budget goes out in a flush.
	 */
	__s64 credit;
};

#define BUDGET_CHUNK (64 << 10)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} scratch_map SEC(".maps");

/* Takes n payload bytes from the flush's budget (see struct scratch); 0, or -1: spent. */
static __always_inline int budget_take(struct scratch *s, __u32 n)
{
	if (s->credit >= n) {
		s->credit -= n;
		return 0;
	}
	if (budget >= BUDGET_CHUNK) {
		if (__sync_fetch_and_add(&budget, -BUDGET_CHUNK) >= BUDGET_CHUNK) {
			s->credit += BUDGET_CHUNK - n;
			return 0;
		}
		__sync_fetch_and_add(&budget, BUDGET_CHUNK);
	}
	/* The budget's last bytes, segment by segment. */
	return __sync_fetch_and_add(&budget, -(__s64)n) < (__s64)n ? -1 : 0;
}

/*
 * A record of a few bytes: those gathered before a call told the protocol, or those a
 * connection held (see capture()).
 */
struct head_rec {
	struct net_rec_data rec;
	__u8 buf[NET_HOLD_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct head_rec);
	__uint(max_entries, 1);
} head_map SEC(".maps");

/* A segment of n <= NET_HOLD_MAX bytes, to be copied into the record's buf by the caller. */
static __always_inline struct head_rec *small_rec(struct net_conn_state *st, __u32 dir, __u32 tgid,
						  __u64 start, __u64 end, __u8 fn, __u32 n)
{
	struct head_rec *h;
	__u32 zero = 0;

	h = bpf_map_lookup_elem(&head_map, &zero);
	if (!h)
		return NULL;
	h->rec.hdr.kind = NET_REC_DATA;
	h->rec.hdr.len = sizeof(*h);
	h->rec.conn_id = st->conn.id;
	h->rec.start_ns = start;
	h->rec.end_ns = end;
	h->rec.seq = __sync_fetch_and_add(&st->conn.data_seq[dir & 1], 1) + 1;
	h->rec.tgid = tgid;
	h->rec.actual = n;
	h->rec.captured = n;
	h->rec.dir = dir;
	h->rec.fn = fn;
	h->rec.proto = st->conn.proto;
	h->rec.dgram = 0;
	h->rec.held = 0;
	h->rec.held_end_ns = 0;
	return h;
}

static __always_inline void small_send(struct head_rec *h)
{
	if (bpf_ringbuf_output(&events, h, sizeof(*h), wake_flag(sizeof(*h)))) {
		stat_add(NET_STAT_DATA_RINGBUF, 1);
		stat_add(NET_STAT_DATA_BYTES_LOST, h->rec.actual);
	}
}

/* The bytes gathered in st->head as a segment of their own, ahead of the call that told. */
static __always_inline void emit_head(struct net_conn_state *st, __u32 dir, __u32 tgid, __u64 now,
				      __u8 fn)
{
	struct head_rec *h = small_rec(st, dir, tgid, now, now, fn, st->head_len & 7);

	st->head_len = 0;
	if (!h)
		return;
	__builtin_memcpy(h->buf, st->head, 8);
	small_send(h);
}

/* The n bytes st held (taken already) as a segment of their own. */
static __always_inline void hold_emit(struct net_conn_state *st, __u64 n)
{
	struct head_rec *h = small_rec(st, st->hold_dir, st->conn.tgid, st->hold_start_ns,
				       st->hold_end_ns, st->hold_fn, n);

	if (!h)
		return;
	__builtin_memcpy(h->buf, st->hold, NET_HOLD_MAX);
	small_send(h);
}

/* What st holds, if anything: sent now, alone (a close, a TLS library's calls begin). */
static __always_inline void hold_flush(struct net_conn_state *st)
{
	__u64 n = __sync_lock_test_and_set(&st->hold_len, 0);

	if (n && n <= NET_HOLD_MAX)
		hold_emit(st, n);
}

/*
 * What st holds, taken for a call going dir: into s->buf when it goes the same way (its bytes
 * follow in one segment; returns their count, with the held call's start and end in s->rec),
 * else sent alone ahead of it (0). An exchange takes it, so a call on another thread cannot
 * send it too.
 */
static __always_inline __u32 hold_take(struct net_conn_state *st, __u32 dir, struct scratch *s)
{
	__u64 n = __sync_lock_test_and_set(&st->hold_len, 0);

	if (!n || n > NET_HOLD_MAX)
		return 0;
	if (st->hold_dir != dir) {
		hold_emit(st, n);
		return 0;
	}
	__builtin_memcpy(s->buf, st->hold, NET_HOLD_MAX);
	s->rec.start_ns = st->hold_start_ns;
	s->rec.held_end_ns = st->hold_end_ns;
	return n;
}

#endif
