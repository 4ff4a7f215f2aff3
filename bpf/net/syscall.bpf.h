/* SPDX-License-Identifier: GPL-2.0 */
/*
 * System calls (when asked for, or where the socket tracepoints are refused; tp_btf, else
 * raw_tp, over one body): sys_enter keeps a target thread's arguments of the socket system
 * calls; sys_exit finds the socket behind the descriptor through the task's file table (a
 * descriptor that is not a TCP or UDP socket is left alone) and counts the call, its duration
 * measured, on its connection, keyed by (tgid, fd). Non-target processes cost one switch on
 * the system call number and, for the traced ones, the target test.
 */
#ifndef ROVER_BPF_NET_SYSCALL_H
#define ROVER_BPF_NET_SYSCALL_H

#include "common/netrec.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/l4.bpf.h"
#include "bpf/net/alog.bpf.h"
#include "bpf/net/tls.bpf.h"

#define EINPROGRESS 115

/* Target threads inside a traced syscall, by thread (LRU: a thread may die inside one). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct args);
	__uint(max_entries, 8192);
} inflight SEC(".maps");

static __always_inline void on_data(const struct args *a, __u32 tgid, long ret, __u64 now)
{
	__u64 bytes = ret, key = (__u64)tgid << 32 | (__u32)a->a0;
	__s32 fd = a->a0;
	struct net_conn_state *st;
	struct sock *sk;

	if (ret <= 0 && !(ret < 0 && tls_on))
		return;
	sk = data_sock_of(fd);
	if (!sk)
		return;
	if (ret < 0) {
		/* A TLS library's read that would block still names its socket. */
		tls_note(bpf_get_current_pid_tgid(), key, (__u64)sk, fd, NULL, 0, 0);
		return;
	}
	st = conn_get(key, tgid, fd, sk, NET_ROLE_UNKNOWN, a->ts ? a->ts : now, 0, now);
	if (!st)
		return;
	if (tls_on)
		tls_note(bpf_get_current_pid_tgid(), key, (__u64)sk, fd, st, dir_of(a->kind), now);
	if (a->kind == K_SENDMMSG || a->kind == K_RECVMMSG)
		bytes = mmsg_bytes(a->a1, ret);
	account(st, sk, dir_of(a->kind), a, bytes, tgid, now);
}

static __always_inline int on_enter(struct pt_regs *regs, long id)
{
	__u32 kind = kind_of(id);
	__u64 pid_tgid;
	__u32 tgid;
	struct args a;

	if (kind == K_NONE)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	tgid = pid_tgid >> 32;
	if (!is_traced(tgid))
		return 0;
	a.ts = bpf_ktime_get_ns();
	a.kind = kind;
	a.pad = 0;
	a.a0 = PT_REGS_PARM1_CORE_SYSCALL(regs);
	a.a1 = PT_REGS_PARM2_CORE_SYSCALL(regs);
	a.a2 = PT_REGS_PARM3_CORE_SYSCALL(regs);
	a.a4 = PT_REGS_PARM5_CORE_SYSCALL(regs);
	if (bpf_map_update_elem(&inflight, &pid_tgid, &a, BPF_ANY))
		stat_add(NET_STAT_INFLIGHT_FULL, 1);
	alog_enter(pid_tgid, kind, (__s32)a.a0);
	return 0;
}

static __always_inline int on_exit(struct pt_regs *regs, long ret)
{
	__u64 pid_tgid, now, key;
	struct net_conn_state *st;
	struct args *ap, a;
	struct sock *sk;
	__u32 tgid;
	__s32 fd;

	__u32 kind = kind_of(syscall_nr(regs));

	if (kind == K_NONE)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	tgid = pid_tgid >> 32;
	if (!is_traced(tgid))
		return 0;
	now = bpf_ktime_get_ns();
	ap = bpf_map_lookup_elem(&inflight, &pid_tgid);
	if (ap) {
		a = *ap;
		bpf_map_delete_elem(&inflight, &pid_tgid);
	} else {
		/*
		 * A call that began before the task (a blocking accept or read): its arguments
		 * are still in the registers; its duration is unknown (ts 0: not counted).
		 */
		a.ts = 0;
		a.kind = kind;
		a.pad = 0;
		a.a0 = PT_REGS_PARM1_CORE_SYSCALL(regs);
		a.a1 = PT_REGS_PARM2_CORE_SYSCALL(regs);
		a.a2 = PT_REGS_PARM3_CORE_SYSCALL(regs);
		a.a4 = PT_REGS_PARM5_CORE_SYSCALL(regs);
	}
	switch (a.kind) {
	case K_CONNECT:
		fd = a.a0;
		sk = tcp_sock_of(fd);
		if (ret != 0 && ret != -EINPROGRESS) {
			/* The access log tells failed connects too (only where timed). */
			if (sk && a.ts)
				alog_open(NULL, sk, tgid, fd, NET_ROLE_CLIENT, now, now - a.ts,
					  (__s32)ret);
			alog_exit(pid_tgid);
			return 0;
		}
		if (sk) {
			st = conn_get((__u64)tgid << 32 | (__u32)fd, tgid, fd, sk, NET_ROLE_CLIENT,
				      now, a.ts ? now - a.ts : 0, now);
			if (st)
				alog_open(st, sk, tgid, fd, NET_ROLE_CLIENT, now, 0, 0);
		}
		alog_exit(pid_tgid);
		return 0;
	case K_ACCEPT:
		if (ret < 0)
			return 0;
		fd = ret;
		sk = tcp_sock_of(fd);
		if (sk) {
			st = conn_get((__u64)tgid << 32 | (__u32)fd, tgid, fd, sk, NET_ROLE_SERVER,
				      now, a.ts ? now - a.ts : 0, now);
			if (st)
				alog_open(st, sk, tgid, fd, NET_ROLE_SERVER, now, 0, 0);
		}
		return 0;
	case K_CLOSE:
		if (ret != 0)
			return 0;
		key = (__u64)tgid << 32 | (__u32)a.a0;
		st = bpf_map_lookup_elem(&conns, &key);
		if (st)
			conn_end(key, st, now, a.ts ? now - a.ts : 0);
		return 0;
	}
	on_data(&a, tgid, ret, now);
	alog_exit(pid_tgid);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(net_enter_btf, struct pt_regs *regs, long id)
{
	return on_enter(regs, id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(net_exit_btf, struct pt_regs *regs, long ret)
{
	return on_exit(regs, ret);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(net_enter_raw, struct pt_regs *regs, long id)
{
	return on_enter(regs, id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(net_exit_raw, struct pt_regs *regs, long ret)
{
	return on_exit(regs, ret);
}

#endif
