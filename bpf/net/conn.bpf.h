/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The connection table: a connection by its key, by its socket and by its addresses, made
 * when a target's socket is first seen and ended (its last counters sent) when it closes.
 */
#ifndef ROVER_BPF_NET_CONN_H
#define ROVER_BPF_NET_CONN_H

#include "common/netrec.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/record.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* Connection ids: unique within the task. */
__u64 next_conn_id = 0;

/* Connections by their key (see conn_get); max_entries set by the worker. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct net_conn_state);
	__uint(max_entries, 16384);
} conns SEC(".maps");

/*
 * Socket -> connection key, for the hooks that see only the socket. LRU: the entries of a
 * process that ended without closing are not removed; each use checks the connection.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u64);
	__uint(max_entries, 16384);
} socks SEC(".maps");

/*
 * Addresses -> connection key, for drops of packets that never reached a socket (a firewall
 * dropping on input): the packet's headers name the connection.
 */
struct tuple {
	__u8 laddr[16];
	__u8 raddr[16];
	__u16 lport, rport;
	__u32 family;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tuple);
	__type(value, __u64);
	__uint(max_entries, 16384);
} tuples SEC(".maps");

/* A new connection is built here: too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct net_conn_state);
	__uint(max_entries, 1);
} init_map SEC(".maps");

/* The socket behind a target's fd, or NULL. */
static __always_inline struct sock *sock_of(__s32 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *file = NULL;
	struct socket *sock;
	__u16 mode;

	if (!fdt || fd < 0 || (unsigned)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return NULL;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(file, private_data);
	if (!sock)
		return NULL;
	return BPF_CORE_READ(sock, sk);
}

static __always_inline struct sock *tcp_sock_of(__s32 fd)
{
	struct sock *sk = sock_of(fd);

	if (!sk || BPF_CORE_READ(sk, sk_type) != SOCK_STREAM ||
	    BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return NULL;
	return sk;
}

/* The socket of fd when it moves data we follow: TCP, or UDP. */
static __always_inline struct sock *data_sock_of(__s32 fd)
{
	struct sock *sk = sock_of(fd);
	__u16 type, proto;

	if (!sk)
		return NULL;
	type = BPF_CORE_READ(sk, sk_type);
	proto = BPF_CORE_READ(sk, sk_protocol);
	if ((type == SOCK_STREAM && proto == IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && proto == IPPROTO_UDP))
		return sk;
	return NULL;
}

static __always_inline void read_addrs(struct net_conn *c, struct sock *sk)
{
	struct sock_common *skc = &sk->__sk_common;

	c->family = BPF_CORE_READ(skc, skc_family);
	c->lport = BPF_CORE_READ(skc, skc_num);
	c->rport = __builtin_bswap16(BPF_CORE_READ(skc, skc_dport));
	if (c->family == AF_INET6) {
		BPF_CORE_READ_INTO(&c->laddr, skc, skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&c->raddr, skc, skc_v6_daddr.in6_u.u6_addr8);
	} else {
		BPF_CORE_READ_INTO((__u32 *)c->laddr, skc, skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)c->raddr, skc, skc_daddr);
	}
}

static __always_inline void tuple_of(const struct net_conn *c, struct tuple *t)
{
	__builtin_memcpy(t->laddr, c->laddr, 16);
	__builtin_memcpy(t->raddr, c->raddr, 16);
	t->lport = c->lport;
	t->rport = c->rport;
	t->family = c->family;
}

/* Sends the connection's last counters and forgets it. */
static __always_inline void conn_end(__u64 key, struct net_conn_state *st, __u64 now, __u64 exe)
{
	struct net_rec_close *r;
	__u64 sk = st->sk;
	struct tuple t;

	hold_flush(st);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (r) {
		r->hdr.kind = NET_REC_CLOSE;
		r->hdr.len = sizeof(*r);
		__builtin_memcpy(&r->conn, &st->conn, sizeof(r->conn));
		r->conn.flags |= NET_CONN_CLOSED;
		r->conn.close_ns = now;
		r->conn.close_exe_ns = exe;
		bpf_ringbuf_submit(r, wake_flag(sizeof(*r)));
	} else {
		stat_add(NET_STAT_CLOSE_RINGBUF, 1);
	}
	tuple_of(&st->conn, &t);
	bpf_map_delete_elem(&tuples, &t);
	bpf_map_delete_elem(&socks, &sk);
	bpf_map_delete_elem(&conns, &key);
}

/*
 * The connection at key on socket sk: found, replaced (another socket), or new. Keys: (tgid <<
 * 32 | fd) when syscalls are traced, the socket's address when socket calls are.
 */
static __always_inline struct net_conn_state *conn_get(__u64 key, __u32 tgid, __s32 fd,
						       struct sock *sk, __u8 role, __u64 open_ns,
						       __u64 exe, __u64 now)
{
	__u64 skv = (__u64)sk;
	struct net_conn_state *st = bpf_map_lookup_elem(&conns, &key), *init;
	__u32 zero = 0;

	if (st && st->sk == skv)
		return st;
	if (st)
		conn_end(key, st, now, 0);
	init = bpf_map_lookup_elem(&init_map, &zero);
	if (!init)
		return NULL;
	__builtin_memset(init, 0, sizeof(*init));
	init->conn.id = __sync_fetch_and_add(&next_conn_id, 1) + 1;
	init->conn.tgid = tgid;
	init->conn.fd = fd;
	init->conn.role = role;
	init->conn.flags = role ? 0 : NET_CONN_MIDSTREAM;
	init->conn.open_ns = open_ns;
	init->conn.connect_exe_ns = exe;
	init->sk = skv;
	read_addrs(&init->conn, sk);
	if (init->conn.family != AF_INET && init->conn.family != AF_INET6)
		return NULL;
	if (BPF_CORE_READ(sk, sk_protocol) == IPPROTO_UDP)
		init->conn.flags |= NET_CONN_UDP | NET_CONN_MIDSTREAM;
	if (bpf_map_update_elem(&conns, &key, init, BPF_ANY)) {
		stat_add(NET_STAT_CONNS_FULL, 1);
		return NULL;
	}
	bpf_map_update_elem(&socks, &skv, &key, BPF_ANY);
	if (!(init->conn.flags & NET_CONN_UDP)) {
		struct tuple t;

		tuple_of(&init->conn, &t);
		bpf_map_update_elem(&tuples, &t, &key, BPF_ANY);
	}
	return bpf_map_lookup_elem(&conns, &key);
}

#endif
