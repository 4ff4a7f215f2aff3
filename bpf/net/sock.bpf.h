/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Socket calls (the default where tp_btf works): sock_send_length and sock_recv_length fire
 * in the kernel's socket send and receive paths only, so other system calls pay nothing, and
 * whatever path moved the bytes is seen (io_uring, sendfile, splice: counted, their payload a
 * gap). The call's arguments come from the task's user registers. Connections are keyed by
 * their socket; connect, accept and close come from inet_sock_set_state. A call's duration is
 * not known here (no entry time): the syscall variant measures it, at a cost to every process.
 */
#ifndef ROVER_BPF_NET_SOCK_H
#define ROVER_BPF_NET_SOCK_H

#include "common/netrec.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/l4.bpf.h"
#include "bpf/net/tls.bpf.h"

#define MSG_PEEK 2

/*
 * Sockets a handshake completed on as the accepting side (in softirq: no process yet), with
 * when; a target's first call on one makes it a server connection opened then.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u64);
	__uint(max_entries, 16384);
} accepted SEC(".maps");

/*
 * Where a thread is in the messages of its sendmmsg: the socket tracepoints fire once per
 * message and do not say which.
 */
struct mmsg_pos {
	__u64 vec;
	__u32 idx;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct mmsg_pos);
	__uint(max_entries, 4096);
} mmsg_map SEC(".maps");

/* The index of this message in the thread's sendmmsg of vlen messages at vec. */
static __always_inline long mmsg_next(__u64 pid_tgid, __u64 vec, __u64 vlen)
{
	struct mmsg_pos *p = bpf_map_lookup_elem(&mmsg_map, &pid_tgid), n = { .vec = vec };

	if (p && p->vec == vec && p->idx + 1 < vlen)
		n.idx = p->idx + 1;
	if (n.idx >= 1024)
		return -1;
	bpf_map_update_elem(&mmsg_map, &pid_tgid, &n, BPF_ANY);
	return n.idx;
}

static __always_inline int on_sock_io(struct sock *sk, int ret, int flags, __u32 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now, key = (__u64)sk;
	__u32 tgid = pid_tgid >> 32, kind;
	struct net_conn_state *st;
	struct pt_regs *regs;
	struct args a = {};
	long mmsg_idx = 0;
	__u64 *acc;
	__s32 fd;

	if ((ret <= 0 && !(ret < 0 && tls_on)) || !is_traced(tgid))
		return 0;
	if (dir == NET_DIR_INGRESS && (flags & MSG_PEEK))
		return 0;
	if (!(sk->sk_protocol == IPPROTO_TCP && sk->sk_type == SOCK_STREAM) &&
	    !(sk->sk_protocol == IPPROTO_UDP && sk->sk_type == SOCK_DGRAM))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (ret < 0) {
		/* A TLS library's read that would block still names its socket. */
		fd = kind_of(SYSCALL_NR(regs)) != K_NONE ? (__s32)SYSCALL_ARG1(regs) : -1;
		tls_note(pid_tgid, key, key, fd, NULL, dir, 0);
		return 0;
	}
	now = bpf_ktime_get_ns();
	kind = kind_of(SYSCALL_NR(regs));
	/*
	 * A vector of messages fires once per message: which buffer is known for a vector of
	 * one, and for sendmmsg by counting (it sends them in order, and a thread's next call
	 * starts again at 0 once all were sent); not for recvmmsg of several, which returns
	 * fewer than it asks for.
	 */
	if (kind == K_SENDMMSG && dir == NET_DIR_EGRESS)
		mmsg_idx = mmsg_next(pid_tgid, SYSCALL_ARG2(regs), SYSCALL_ARG3(regs));
	else if (kind == K_RECVMMSG && SYSCALL_ARG3(regs) != 1)
		mmsg_idx = -1;
	if (mmsg_idx < 0 || kind == K_NONE || kind == K_CONNECT || kind == K_ACCEPT ||
	    kind == K_CLOSE || dir_of(kind) != dir)
		kind = kind == K_SENDFILE ? K_SENDFILE : K_NONE;
	fd = kind != K_NONE ? (__s32)SYSCALL_ARG1(regs) : -1;
	a.kind = kind;
	a.a0 = fd;
	a.a1 = SYSCALL_ARG2(regs);
	a.a2 = SYSCALL_ARG3(regs);
	a.a4 = SYSCALL_ARG5(regs);
	if (kind == K_SENDMMSG || kind == K_RECVMMSG) {
		a.a1 += (__u64)mmsg_idx * sizeof(struct mmsghdr);
		a.a2 = 1;
	}
	st = bpf_map_lookup_elem(&conns, &key);
	/*
	 * A send that the peer answered with a reset (loopback handles it inside the send) ended
	 * the connection before this tracepoint: not a new one.
	 */
	if (!st && sk->__sk_common.skc_state == TCP_CLOSE && sk->sk_protocol == IPPROTO_TCP)
		return 0;
	if (!st) {
		acc = bpf_map_lookup_elem(&accepted, &key);
		st = conn_get(key, tgid, fd, sk, acc ? NET_ROLE_SERVER : NET_ROLE_UNKNOWN,
			      acc ? *acc : now, 0, now);
		if (!st)
			return 0;
		if (acc)
			bpf_map_delete_elem(&accepted, &key);
	}
	if (st->conn.fd < 0 && fd >= 0)
		st->conn.fd = fd;
	if (tls_on)
		tls_note(pid_tgid, key, key, fd, st, dir, now);
	account(st, sk, dir, &a, (__u64)ret, tgid, now);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(net_send_btf, struct sock *sk, int ret, int flags)
{
	return on_sock_io(sk, ret, flags, NET_DIR_EGRESS);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(net_recv_btf, struct sock *sk, int ret, int flags)
{
	return on_sock_io(sk, ret, flags, NET_DIR_INGRESS);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(net_state_btf, const struct sock *csk, const int oldstate, const int newstate)
{
	struct sock *sk = (struct sock *)csk;
	__u64 key = (__u64)sk, now;
	struct net_conn_state *st;
	__u32 tgid;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	switch (newstate) {
	case TCP_SYN_SENT:
		/* connect(), in the caller's context. */
		tgid = bpf_get_current_pid_tgid() >> 32;
		if (!is_traced(tgid))
			return 0;
		now = bpf_ktime_get_ns();
		st = conn_get(key, tgid, -1, sk, NET_ROLE_CLIENT, now, 0, now);
		if (st) {
			struct pt_regs *regs =
				(struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

			if (kind_of(syscall_nr(regs)) == K_CONNECT)
				st->conn.fd = (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs);
		}
		return 0;
	case TCP_ESTABLISHED:
		now = bpf_ktime_get_ns();
		if (oldstate == TCP_SYN_RECV) {
			bpf_map_update_elem(&accepted, &key, &now, BPF_ANY);
			return 0;
		}
		st = bpf_map_lookup_elem(&conns, &key);
		if (st && oldstate == TCP_SYN_SENT) {
			struct tuple t;

			/* The handshake's time; the local port was chosen after SYN_SENT. */
			st->conn.connect_exe_ns = now - st->conn.open_ns;
			read_addrs(&st->conn, sk);
			tuple_of(&st->conn, &t);
			bpf_map_update_elem(&tuples, &t, &key, BPF_ANY);
		}
		return 0;
	case TCP_CLOSE:
		bpf_map_delete_elem(&accepted, &key);
		st = bpf_map_lookup_elem(&conns, &key);
		if (st && st->sk == key)
			conn_end(key, st, bpf_ktime_get_ns(), 0);
		return 0;
	}
	return 0;
}

#endif
