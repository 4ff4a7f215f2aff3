/* SPDX-License-Identifier: GPL-2.0 */
/*
 * L4 accounting: each call's count, bytes and duration on its connection, the connection's
 * round-trip times, and a UDP socket's remote as its datagrams name it.
 */
#ifndef ROVER_BPF_NET_L4_H
#define ROVER_BPF_NET_L4_H

#include "common/netrec.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/capture.bpf.h"
#include "bpf/net/alog.bpf.h"

/* L4 duration buckets, lower bounds in ns (reference network-profiling §3.4). */
static const __u64 l4_bounds[NET_L4_BUCKETS] = {
	0,	   10000,     50000,	  100000,     500000,	  1000000,    1200000,
	1500000,   1700000,   2000000,	  2500000,    3000000,	  5000000,    7000000,
	10000000,  13000000,  16000000,	  20000000,   25000000,	  30000000,   35000000,
	40000000,  45000000,  50000000,	  70000000,   100000000,  150000000,  200000000,
	300000000, 500000000, 1000000000, 2000000000, 3000000000, 5000000000,
};

/* The last bucket whose bound is <= v: a binary search, 6 steps for 34 buckets, not 33. */
static __always_inline __u32 bucket_of(__u64 v)
{
	__u32 lo = 0, hi = NET_L4_BUCKETS;

	for (int i = 0; i < 6; i++) {
		__u32 mid = (lo + hi) / 2;

		if (hi - lo <= 1)
			break;
		if (mid < NET_L4_BUCKETS && v >= l4_bounds[mid])
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static __always_inline void hist_add(__u32 *hist, __u64 v)
{
	__u32 b = bucket_of(v);

	if (b < NET_L4_BUCKETS)
		__sync_fetch_and_add(&hist[b], 1);
}

/*
 * An unconnected UDP socket's datagram to an address (sendto, sendmsg with a name): that is its
 * remote now.
 */
static __always_inline void udp_peer(struct net_conn_state *st, const struct args *a)
{
	struct sockaddr_in6 sa = {};
	struct user_msghdr m;
	__u64 name = 0;

	if (a->kind == K_SENDTO) {
		name = a->a4;
	} else if (a->kind == K_SENDMSG || a->kind == K_SENDMMSG) {
		/* a struct mmsghdr begins with its struct msghdr */
		if (bpf_probe_read_user(&m, sizeof(m), (void *)a->a1))
			return;
		name = (__u64)m.msg_name;
	}
	if (!name || bpf_probe_read_user(&sa, sizeof(struct sockaddr_in), (void *)name))
		return;
	if (sa.sin6_family == AF_INET && st->conn.family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;

		__builtin_memcpy(st->conn.raddr, &in->sin_addr, 4);
		st->conn.rport = __builtin_bswap16(in->sin_port);
	} else if (sa.sin6_family == AF_INET6 && st->conn.family == AF_INET6 &&
		   !bpf_probe_read_user(&sa, sizeof(sa), (void *)name)) {
		__builtin_memcpy(st->conn.raddr, &sa.sin6_addr, 16);
		st->conn.rport = __builtin_bswap16(sa.sin6_port);
	}
}

/*
 * One call that moved bytes on a connection: counted, and its payload offered to capture()
 * unless the connection carries TLS (its plaintext comes from the library's calls instead:
 * bpf/net/tls.bpf.h).
 */
static __always_inline void account(struct net_conn_state *st, struct sock *sk, __u32 dir,
				    const struct args *a, __u64 bytes, __u32 tgid, __u64 now)
{
	struct net_l4_dir *d;
	__u64 exe = a->ts ? now - a->ts : 0;

	stat_add(NET_STAT_SYSCALLS, 1);
	st->conn.last_ns = now;
	d = dir == NET_DIR_EGRESS ? &st->conn.dir[0] : &st->conn.dir[1];
	__sync_fetch_and_add(&d->count, 1);
	__sync_fetch_and_add(&d->bytes, bytes);
	if (a->ts) {
		__sync_fetch_and_add(&d->exe_ns, exe);
		hist_add(d->hist, exe);
	}
	if (st->conn.flags & NET_CONN_UDP) {
		if (dir == NET_DIR_EGRESS)
			udp_peer(st, a);
	} else if (dir == NET_DIR_EGRESS) {
		__u32 srtt = BPF_CORE_READ((struct tcp_sock *)sk, srtt_us) >> 3;

		if (srtt) {
			__sync_fetch_and_add(&st->conn.rtt_count, 1);
			__sync_fetch_and_add(&st->conn.rtt_us, srtt);
			hist_add(st->conn.rtt_hist, (__u64)srtt * 1000);
		}
	}
	alog_call(st, (__u64)sk, dir, a, bytes, tgid, now);
	if (st->conn.flags & NET_CONN_TLS)
		return;
	capture(st, dir, a, bytes, tgid, now, st->conn.dir[0].count + st->conn.dir[1].count,
		fn_of(a->kind));
}

#endif
