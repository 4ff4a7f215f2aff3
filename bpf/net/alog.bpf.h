/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The access log (opts.access_log, docs/access-log.md): every connect, accept and data call of
 * a target on a TCP connection as a record of its own, with what the packet tracepoints saw of
 * the call in the calling thread (transmit and receive happen there for a socket's own packets
 * on the way out, and the copy to the reader on the way in), and the peer behind a DNAT read
 * from the conntrack entry of the connection's first packet. Tracepoints only: where upstream
 * hangs kprobes on the IP and netfilter steps, the figures no tracepoint gives stay 0.
 */
#ifndef ROVER_BPF_NET_ALOG_H
#define ROVER_BPF_NET_ALOG_H

#include "common/netrec.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/record.bpf.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/capture.bpf.h"

/* What the packet tracepoints add to a thread's call in progress. */
struct alog_call {
	__u64 sk; /* the call's socket */
	__u32 packets, retrans, l2_queued, ifindex;
	__u64 pkt_bytes, l2_ns, l2_ready_ns, l2_send_ns;
	/* connect(): the conntrack peer of its SYN */
	__u8 nat_checked, nat;
	__u16 nat_port;
	__u32 pad;
	__u8 nat_addr[16];
};

/* By thread: made at a target's sys_enter on a TCP socket, gone at its sys_exit. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct alog_call);
	__uint(max_entries, 8192);
} alog_calls SEC(".maps");

/* A packet of a traced call between its queueing and its transmission. */
struct alog_skb {
	__u64 pid_tgid;
	__u64 queued_ns, started_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct alog_skb);
	__uint(max_entries, 8192);
} alog_skbs SEC(".maps");

/* A target thread enters a call of kind on fd: its packets are counted from now. */
static __always_inline void alog_enter(__u64 pid_tgid, __u32 kind, __s32 fd)
{
	struct alog_call c = {};
	struct sock *sk;

	if (!opts.access_log || kind == K_NONE || kind == K_ACCEPT || kind == K_CLOSE)
		return;
	sk = tcp_sock_of(fd);
	if (!sk)
		return;
	c.sk = (__u64)sk;
	if (bpf_map_update_elem(&alog_calls, &pid_tgid, &c, BPF_ANY))
		stat_add(NET_STAT_PKT_FULL, 1);
}

static __always_inline void alog_exit(__u64 pid_tgid)
{
	if (opts.access_log)
		bpf_map_delete_elem(&alog_calls, &pid_tgid);
}

/* The current thread's call on socket sk, or NULL. */
static __always_inline struct alog_call *alog_current(__u64 sk)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct alog_call *c = bpf_map_lookup_elem(&alog_calls, &id);

	return c && c->sk == sk ? c : NULL;
}

/*
 * connect() returned (err 0, or a negative errno: a failure; EINPROGRESS is none) or accept()
 * did: the record of it. st is the connection (NULL for a failed connect: sk's addresses).
 */
static __always_inline void alog_open(struct net_conn_state *st, struct sock *sk, __u32 tgid,
				      __s32 fd, __u8 role, __u64 now, __u64 exe, __s32 err)
{
	struct net_rec_open *r;

	if (!opts.access_log)
		return;
	if (st && role == NET_ROLE_CLIENT) {
		__u64 id = bpf_get_current_pid_tgid();
		struct alog_call *c = bpf_map_lookup_elem(&alog_calls, &id);

		if (c && c->nat) {
			st->conn.nat = 1;
			st->conn.nat_port = c->nat_port;
			__builtin_memcpy(st->conn.nat_addr, c->nat_addr, 16);
		}
	}
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_add(NET_STAT_CALL_RINGBUF, 1);
		return;
	}
	if (st) {
		__builtin_memcpy(&r->conn, &st->conn, sizeof(r->conn));
	} else {
		__builtin_memset(&r->conn, 0, sizeof(r->conn));
		r->conn.tgid = tgid;
		r->conn.fd = fd;
		r->conn.role = role;
		r->conn.open_ns = now;
		r->conn.connect_exe_ns = exe;
		if (sk)
			read_addrs(&r->conn, sk);
	}
	r->hdr.kind = NET_REC_OPEN;
	r->hdr.len = sizeof(*r);
	r->err = err;
	r->pad = 0;
	bpf_ringbuf_submit(r, wake_flag(sizeof(*r)));
}

/* A data call on a TCP connection: its record, with the packets its thread saw. */
static __always_inline void alog_call(struct net_conn_state *st, __u64 sk, __u32 dir,
				      const struct args *a, __u64 bytes, __u32 tgid, __u64 now)
{
	struct net_rec_call *r;
	struct alog_call *c;

	if (!opts.access_log || (st->conn.flags & NET_CONN_UDP))
		return;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_add(NET_STAT_CALL_RINGBUF, 1);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->hdr.kind = NET_REC_CALL;
	r->hdr.len = sizeof(*r);
	r->conn_id = st->conn.id;
	r->start_ns = a->ts ? a->ts : now;
	r->end_ns = now;
	r->tgid = tgid;
	r->actual = bytes > 0xffffffffull ? 0xffffffffu : (__u32)bytes;
	r->dir = dir;
	r->fn = fn_of(a->kind);
	r->proto = st->conn.proto;
	c = alog_current(sk);
	if (c) {
		r->ifindex = c->ifindex;
		r->packets = c->packets;
		r->retrans = c->retrans;
		r->l2_queued = c->l2_queued;
		r->pkt_bytes = c->pkt_bytes;
		r->l2_ns = c->l2_ns;
		r->l2_ready_ns = c->l2_ready_ns;
		r->l2_send_ns = c->l2_send_ns;
	}
	bpf_ringbuf_submit(r, wake_flag(sizeof(*r)));
}

/*
 * The conntrack entry the kernel attached to a connection's first packet: when its reply comes
 * from another address than the packet's destination (a DNAT: a Service's cluster IP to a
 * pod), that address is the real peer. A kernel without conntrack's types has no entry.
 */
static __always_inline void alog_nat(struct alog_call *c, struct sk_buff *skb)
{
	struct nf_conntrack_tuple rt, ot;
	struct nf_conn *ct;
	unsigned long nfct;

	c->nat_checked = 1;
	if (!bpf_core_field_exists(skb->_nfct) || !bpf_core_type_exists(struct nf_conn))
		return;
	nfct = BPF_CORE_READ(skb, _nfct);
	ct = (struct nf_conn *)(nfct & ~7ul);
	if (!ct)
		return;
	if (BPF_CORE_READ_INTO(&ot, ct, tuplehash[0].tuple) ||
	    BPF_CORE_READ_INTO(&rt, ct, tuplehash[1].tuple))
		return;
	if (rt.src.l3num != AF_INET && rt.src.l3num != AF_INET6)
		return;
	if (rt.src.u3.all[0] == ot.dst.u3.all[0] && rt.src.u3.all[1] == ot.dst.u3.all[1] &&
	    rt.src.u3.all[2] == ot.dst.u3.all[2] && rt.src.u3.all[3] == ot.dst.u3.all[3] &&
	    rt.src.u.all == ot.dst.u.all)
		return;
	c->nat = 1;
	c->nat_port = __builtin_bswap16(rt.src.u.all);
	__builtin_memcpy(c->nat_addr, &rt.src.u3, 16);
}

SEC("tp_btf/net_dev_queue")
int BPF_PROG(alog_dev_queue, struct sk_buff *skb)
{
	struct alog_skb v = {};
	struct alog_call *c;
	__u64 key = (__u64)skb;

	c = alog_current((__u64)BPF_CORE_READ(skb, sk));
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->packets, 1);
	__sync_fetch_and_add(&c->pkt_bytes, BPF_CORE_READ(skb, len));
	c->ifindex = BPF_CORE_READ(skb, dev, ifindex);
	if (!c->nat_checked)
		alog_nat(c, skb);
	v.pid_tgid = bpf_get_current_pid_tgid();
	v.queued_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&alog_skbs, &key, &v, BPF_ANY))
		stat_add(NET_STAT_PKT_FULL, 1);
	return 0;
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(alog_qdisc, struct Qdisc *q, const struct netdev_queue *txq, struct sk_buff *skb)
{
	__u64 key = (__u64)skb;
	struct alog_skb *v = bpf_map_lookup_elem(&alog_skbs, &key);
	struct alog_call *c;

	if (!v)
		return 0;
	c = bpf_map_lookup_elem(&alog_calls, &v->pid_tgid);
	if (c)
		__sync_fetch_and_add(&c->l2_queued, 1);
	return 0;
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(alog_start_xmit, const struct sk_buff *skb, const struct net_device *dev)
{
	__u64 key = (__u64)skb;
	struct alog_skb *v = bpf_map_lookup_elem(&alog_skbs, &key);

	if (v)
		v->started_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(alog_xmit, struct sk_buff *skb, int rc, struct net_device *dev, unsigned int len)
{
	__u64 key = (__u64)skb, now;
	struct alog_skb *v = bpf_map_lookup_elem(&alog_skbs, &key);
	struct alog_call *c;

	if (!v)
		return 0;
	now = bpf_ktime_get_ns();
	c = bpf_map_lookup_elem(&alog_calls, &v->pid_tgid);
	if (c) {
		__sync_fetch_and_add(&c->l2_ns, now - v->queued_ns);
		if (v->started_ns) {
			__sync_fetch_and_add(&c->l2_ready_ns, v->started_ns - v->queued_ns);
			__sync_fetch_and_add(&c->l2_send_ns, now - v->started_ns);
		}
	}
	bpf_map_delete_elem(&alog_skbs, &key);
	return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(alog_copy, const struct sk_buff *skb, int len)
{
	struct alog_call *c;

	if (len <= 0)
		return 0;
	c = alog_current((__u64)BPF_CORE_READ(skb, sk));
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->packets, 1);
	__sync_fetch_and_add(&c->pkt_bytes, len);
	c->ifindex = BPF_CORE_READ(skb, skb_iif);
	return 0;
}

/* A retransmission of the current thread's socket (bpf/net/drop.bpf.h calls it). */
static __always_inline void alog_retrans(const struct sock *sk)
{
	struct alog_call *c;

	if (!opts.access_log)
		return;
	c = alog_current((__u64)sk);
	if (c)
		__sync_fetch_and_add(&c->retrans, 1);
}

#endif
