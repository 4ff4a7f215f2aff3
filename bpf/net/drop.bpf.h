/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Retransmits and drops, from tcp_retransmit_skb and kfree_skb, which run in any context: a
 * connection found by its socket, or, for a packet dropped before it reached one, by the
 * addresses in its headers.
 */
#ifndef ROVER_BPF_NET_DROP_H
#define ROVER_BPF_NET_DROP_H

#include "common/netrec.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/alog.bpf.h"

/* n drops (drop) or retransmitted segments on the connection at key. */
static __always_inline void count_on(__u64 *key, __u64 skv, int drop, __u32 n)
{
	struct net_conn_state *st = bpf_map_lookup_elem(&conns, key);

	if (!st || (skv && st->sk != skv))
		return;
	if (drop)
		__sync_fetch_and_add(&st->conn.drops, n);
	else
		__sync_fetch_and_add(&st->conn.retrans, n);
}

static __always_inline void count_on_sock(const struct sock *sk, int drop, __u32 n)
{
	__u64 skv = (__u64)sk, *key = bpf_map_lookup_elem(&socks, &skv);

	if (key)
		count_on(key, skv, drop, n);
}

/* A dropped IPv4 TCP packet with no socket: its connection by its headers, either way. */
static __always_inline void count_by_headers(struct sk_buff *skb)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u16 nh = BPF_CORE_READ(skb, network_header);
	struct tuple in = {}, out = {};
	struct iphdr ip;
	__u16 ports[2];
	__u64 *key;

	if (BPF_CORE_READ(skb, protocol) != __builtin_bswap16(0x0800))
		return;
	if (bpf_probe_read_kernel(&ip, sizeof(ip), head + nh) || ip.protocol != IPPROTO_TCP)
		return;
	if (bpf_probe_read_kernel(ports, sizeof(ports), head + nh + ip.ihl * 4))
		return;
	/* Coming in: local is the destination. */
	__builtin_memcpy(in.laddr, &ip.daddr, 4);
	__builtin_memcpy(in.raddr, &ip.saddr, 4);
	in.lport = __builtin_bswap16(ports[1]);
	in.rport = __builtin_bswap16(ports[0]);
	in.family = AF_INET;
	key = bpf_map_lookup_elem(&tuples, &in);
	if (!key) {
		__builtin_memcpy(out.laddr, &ip.saddr, 4);
		__builtin_memcpy(out.raddr, &ip.daddr, 4);
		out.lport = in.rport;
		out.rport = in.lport;
		out.family = AF_INET;
		key = bpf_map_lookup_elem(&tuples, &out);
	}
	if (key) {
		struct net_conn_state *st = bpf_map_lookup_elem(&conns, key);

		/* The descriptor may name another connection since. */
		if (st && ((st->conn.lport == in.lport && st->conn.rport == in.rport) ||
			   (st->conn.lport == in.rport && st->conn.rport == in.lport)))
			count_on(key, 0, 1, 1);
	}
}

/*
 * A retransmission that went out (err 0), counted in segments as the kernel's
 * TcpRetransSegs is (tcp_skb_pcount).
 */
static __always_inline void on_retrans(const struct sock *sk, const struct sk_buff *skb, int err)
{
	struct tcp_skb_cb cb;
	__u32 segs;

	if (err)
		return;
	alog_retrans(sk);
	if (bpf_probe_read_kernel(&cb, sizeof(cb), (void *)skb + bpf_core_field_offset(skb->cb)))
		segs = 1;
	else
		segs = cb.tcp_gso_segs ? cb.tcp_gso_segs : 1;
	count_on_sock(sk, 0, segs);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(net_retrans_btf, const struct sock *sk, const struct sk_buff *skb, int err)
{
	on_retrans(sk, skb, err);
	return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(net_retrans_raw, const struct sock *sk, const struct sk_buff *skb, int err)
{
	on_retrans(sk, skb, err);
	return 0;
}

static __always_inline void on_free(struct sk_buff *skb, enum skb_drop_reason reason,
				    struct sock *rx_sk)
{
	struct sock *sk = rx_sk;

	if (reason < SKB_DROP_REASON_NOT_SPECIFIED)
		return;
	if (!sk)
		sk = BPF_CORE_READ(skb, sk);
	if (sk)
		count_on_sock(sk, 1, 1);
	else
		count_by_headers(skb);
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(net_drop_btf, struct sk_buff *skb, void *location, enum skb_drop_reason reason,
	     struct sock *rx_sk)
{
	on_free(skb, reason, rx_sk);
	return 0;
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(net_drop_raw, struct sk_buff *skb, void *location, enum skb_drop_reason reason,
	     struct sock *rx_sk)
{
	on_free(skb, reason, rx_sk);
	return 0;
}

#endif
