// SPDX-License-Identifier: GPL-2.0
/*
 * NETWORK: every TCP connection of the targets, from syscall tracepoints only (no kprobe, no
 * fentry: this program runs where neither exists). sys_enter keeps a target thread's
 * arguments of the socket syscalls; sys_exit finds the socket behind the descriptor through
 * the task's file table (a descriptor that is not a TCP socket is left alone), counts the call
 * on its connection and, for connections whose first bytes looked like a protocol the shipper
 * parses, sends a bounded prefix of the payload to the worker through a ring buffer.
 *
 * Connections are keyed by (tgid, fd), and carry the socket they were seen on: a descriptor
 * that now names another socket (close, dup2) is another connection, with a new id. close()
 * sends the connection's final counters as a record, so a close is never missed because the
 * connection had been reported before. Retransmits and drops come from tcp_retransmit_skb and
 * kfree_skb, which run in any context: they find the connection by its socket.
 *
 * Two attach variants over one body, chosen by the worker at run time: tp_btf and raw_tp.
 * Non-target processes cost one switch on the syscall number and, for the traced syscalls,
 * one hash lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common/netrec.h"
#include "bpf/credcheck.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define EINPROGRESS 115
#define MSG_PEEK 2
#define MAX_IOV 4
/*
 * iovecs a payload is copied from: HTTP/2 peers write a frame header and its payload as two
 * (nginx: five for its first answer), gRPC's C core a header block as a slice per name and
 * value (27 for its first request).
 */
#define COPY_IOV 64

/* What the worker sets before loading. */
const volatile struct net_opts opts = { .capture_bytes = 1024, .detect_tries = 4 };

/* Payload bytes the program may still send in this flush; the worker refills it. */
__s64 budget = 0;
/* Connection ids: unique within the task. */
__u64 next_conn_id = 0;

enum kind {
	K_NONE,
	K_READ,
	K_WRITE,
	K_READV,
	K_WRITEV,
	K_SENDTO,
	K_RECVFROM,
	K_SENDMSG,
	K_RECVMSG,
	K_SENDMMSG,
	K_RECVMMSG,
	K_SENDFILE,
	K_CONNECT,
	K_ACCEPT,
	K_CLOSE,
};

struct args {
	__u64 ts;
	__u64 a0, a1, a2;
	__u64 a4; /* sendto's destination address */
	__u32 kind;
	__u32 pad;
};

/*
 * The targets, one bit per tgid (pid_max is at most 2^22): the test every socket call of the
 * host makes is one load, not a hash lookup. The worker sets and clears bits through the
 * mapped .bss, with no system call.
 */
#define TARGET_WORDS (1u << 16)
__u64 target_bits[TARGET_WORDS] = {};

static __always_inline int is_target(__u32 tgid)
{
	return (target_bits[(tgid >> 6) & (TARGET_WORDS - 1)] >> (tgid & 63)) & 1;
}

/* Target threads inside a traced syscall, by thread (LRU: a thread may die inside one). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct args);
	__uint(max_entries, 8192);
} inflight SEC(".maps");

/* Connections by (tgid << 32 | fd); max_entries set by the worker. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct net_conn_state);
	__uint(max_entries, 16384);
} conns SEC(".maps");

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

/*
 * 32 MiB: what the worker has not read yet waits here, and the worker waits for the shipper,
 * which the scheduler may leave runnable but off the CPU for most of a second while the
 * targets' threads wake each other (0.64 s seen on this 2-core VM under mariadb-slap, at
 * 13 MB/s of records: 8 MiB overflowed).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} events SEC(".maps");

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

/* A new connection is built here: too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct net_conn_state);
	__uint(max_entries, 1);
} init_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, NET_STAT_MAX);
} stats SEC(".maps");

/* L4 duration buckets, lower bounds in ns (reference network-profiling §3.4). */
static const __u64 l4_bounds[NET_L4_BUCKETS] = {
	0,	   10000,     50000,	 100000,    500000,    1000000,	  1200000,
	1500000,   1700000,   2000000,	 2500000,   3000000,   5000000,	  7000000,
	10000000,  13000000,  16000000,	 20000000,  25000000,  30000000,  35000000,
	40000000,  45000000,  50000000,	 70000000,  100000000, 150000000, 200000000,
	300000000, 500000000, 1000000000, 2000000000, 3000000000, 5000000000,
};

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

static __always_inline void stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += n;
}

/*
 * tgid is a target and the current thread, one of its own, may be recorded: for a client's
 * task, still the client's to trace (bpf/credcheck.bpf.h). A target that is not loses its bit
 * (the worker sees it gone and says so), counted once.
 */
static __always_inline int is_traced(__u32 tgid)
{
	__u64 bit = 1ull << (tgid & 63);
	enum cred_verdict v;

	if (!is_target(tgid))
		return 0;
	if (!cred_check)
		return 1;
	v = cred_judge();
	if (v == CRED_DROP &&
	    (__sync_fetch_and_and(&target_bits[(tgid >> 6) & (TARGET_WORDS - 1)], ~bit) & bit))
		stat_add(NET_STAT_CRED_DROPPED, 1);
	return v == CRED_OK;
}

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

static __always_inline __u32 kind_of(long id)
{
#if defined(__TARGET_ARCH_x86)
	switch (id) {
	case 0: return K_READ;
	case 1: return K_WRITE;
	case 3: return K_CLOSE;
	case 19: return K_READV;
	case 20: return K_WRITEV;
	case 40: return K_SENDFILE;
	case 42: return K_CONNECT;
	case 43: return K_ACCEPT;
	case 44: return K_SENDTO;
	case 45: return K_RECVFROM;
	case 46: return K_SENDMSG;
	case 47: return K_RECVMSG;
	case 288: return K_ACCEPT;
	case 299: return K_RECVMMSG;
	case 307: return K_SENDMMSG;
	}
#elif defined(__TARGET_ARCH_arm64)
	switch (id) {
	case 63: return K_READ;
	case 64: return K_WRITE;
	case 57: return K_CLOSE;
	case 65: return K_READV;
	case 66: return K_WRITEV;
	case 71: return K_SENDFILE;
	case 203: return K_CONNECT;
	case 202: return K_ACCEPT;
	case 206: return K_SENDTO;
	case 207: return K_RECVFROM;
	case 211: return K_SENDMSG;
	case 212: return K_RECVMSG;
	case 242: return K_ACCEPT;
	case 243: return K_RECVMMSG;
	case 269: return K_SENDMMSG;
	}
#endif
	return K_NONE;
}

static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ((struct user_pt_regs *)regs, regs[8]);
#else
	return -1;
#endif
}

/* The TCP socket behind fd in the current process, or NULL. */
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

/* The first user buffer of a call and how many iovecs follow it. */
struct bufs {
	__u64 base; /* a plain buffer, or NULL */
	__u64 iov;  /* struct iovec array */
	__u32 iovcnt;
};

static __always_inline int bufs_of(const struct args *a, struct bufs *b)
{
	struct user_msghdr msg;
	struct mmsghdr mm;

	b->base = 0;
	b->iov = 0;
	b->iovcnt = 0;
	switch (a->kind) {
	case K_READ:
	case K_WRITE:
	case K_SENDTO:
	case K_RECVFROM:
		b->base = a->a1;
		return 0;
	case K_READV:
	case K_WRITEV:
		b->iov = a->a1;
		b->iovcnt = a->a2;
		return 0;
	case K_SENDMSG:
	case K_RECVMSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a->a1))
			return -1;
		b->iov = (__u64)msg.msg_iov;
		b->iovcnt = msg.msg_iovlen;
		return 0;
	case K_SENDMMSG:
	case K_RECVMMSG:
		if (bpf_probe_read_user(&mm, sizeof(mm), (void *)a->a1))
			return -1;
		b->iov = (__u64)mm.msg_hdr.msg_iov;
		b->iovcnt = mm.msg_hdr.msg_iovlen;
		return 0;
	}
	return -1;
}

/* Bytes moved by a sendmmsg/recvmmsg that handled n messages (the first MAX_IOV counted). */
static __always_inline __u64 mmsg_bytes(__u64 vec, long n)
{
	__u64 total = 0;

	for (int i = 0; i < MAX_IOV; i++) {
		struct mmsghdr mm;

		if (i >= n)
			break;
		if (bpf_probe_read_user(&mm, sizeof(mm), (void *)(vec + i * sizeof(mm))))
			break;
		total += mm.msg_len;
	}
	return total;
}

/*
 * Copies up to want bytes of the call's payload into s->buf after the at bytes already there
 * (held ones, at most NET_HOLD_MAX; at + want <= NET_CAPTURE_MAX); returns the bytes copied.
 * A global function: verified once, its loop walked once, not at every call site (inlined with
 * COPY_IOV iovecs, the socket programs passed the verifier's bound).
 */
__noinline __u32 copy_payload(struct scratch *s, const struct bufs *b, __u32 want, __u32 at)
{
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
	for (int i = 0; i < COPY_IOV; i++) {
		struct iovec iov;
		__u64 len;

		if (i >= b->iovcnt || off >= w)
			break;
		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)(b->iov + i * sizeof(iov))))
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
 * The protocol of a connection by the first bytes of one call (n of them captured, of actual
 * moved; 0: not known, the bytes were gathered from several calls). Binary protocols are told
 * by a header whose length field agrees with the call's size where the protocol's peers write
 * a message per call, and by fields with few valid values. Unrecognized bytes: NONE; the
 * caller decides whether that is final. The shipper's parsers check everything again.
 *
 * A global function: verified once on its own, its result unknown to the callers. Inlined, its
 * branches multiplied with theirs past the verifier's bound (1M instructions).
 */
struct det_bytes {
	__u8 b[16];
};

/* net_detect()'s modes: what the bytes are known to be. */
enum {
	DET_STREAM = 0,	    /* the first call of a stream */
	DET_DATAGRAM = 1,   /* a UDP datagram, or a DNS message whose length came alone */
	DET_KAFKA_BODY = 2, /* the rest of a message whose 4-byte size came alone */
	DET_MIDSTREAM = 3,  /* a call of a stream met mid-way (or of TLS plaintext) */
};

__noinline int net_detect(const struct det_bytes *d, __u32 n, __u64 actual, __u32 mode)
{
	const __u8 *p;
	__u32 len, v;

	if (!d)
		return NET_PROTO_UNKNOWN;
	p = d->b;
	/* A Kafka request's header after its size: api_key, api_version, correlation id, client id. */
	if (mode == DET_KAFKA_BODY) {
		if (n >= 10 && p[0] == 0 && p[1] <= 127 && p[2] == 0 && p[3] <= 31 &&
		    ((p[8] == 0xff && p[9] == 0xff) || p[8] == 0))
			return NET_PROTO_KAFKA;
		return NET_PROTO_NONE;
	}
	/*
	 * HTTP/2 met mid-way: a whole frame, or several, beginning this call: a length that fits,
	 * a type whose flags and stream id are all valid (HEADERS or DATA on a stream, SETTINGS,
	 * PING or WINDOW_UPDATE of their fixed shapes). Checked before the others: their
	 * headers do not begin like this.
	 */
	if (mode == DET_MIDSTREAM && n >= 9 && actual) {
		__u32 flen = (__u32)p[0] << 16 | (__u32)p[1] << 8 | p[2], sid;
		__u8 type = p[3], fl = p[4];

		sid = (__u32)p[5] << 24 | (__u32)p[6] << 16 | (__u32)p[7] << 8 | p[8];
		if (flen + 9 <= actual && flen <= 16384 && !(sid >> 31) &&
		    ((type == 1 && sid && !(fl & ~0x2du)) || (type == 0 && sid && !(fl & ~0x09u)) ||
		     (type == 4 && !sid && !(fl & ~1u) && flen % 6 == 0 && (!(fl & 1) || !flen)) ||
		     (type == 6 && !sid && !(fl & ~1u) && flen == 8) ||
		     (type == 8 && flen == 4)))
			return NET_PROTO_HTTP2;
	}
	/*
	 * A UDP datagram: DNS only, a header with one question, a standard query (answers
	 * only in a response).
	 */
	if (mode == DET_DATAGRAM) {
		if (n < 12)
			return NET_PROTO_NONE;
		if (actual >= 17 && (p[2] & 0x78) == 0 && p[4] == 0 && p[5] == 1 &&
		    ((p[2] & 0x80) || (p[6] == 0 && p[7] == 0)))
			return NET_PROTO_DNS;
		return NET_PROTO_NONE;
	}
	if (n < 5)
		return NET_PROTO_UNKNOWN;
	if (p[0] == 'H' && p[1] == 'T' && p[2] == 'T' && p[3] == 'P' && p[4] == '/')
		return NET_PROTO_HTTP1;
	if ((p[0] == 'G' && p[1] == 'E' && p[2] == 'T' && p[3] == ' ') ||
	    (p[0] == 'P' && p[1] == 'U' && p[2] == 'T' && p[3] == ' ') ||
	    (p[0] == 'P' && p[1] == 'O' && p[2] == 'S' && p[3] == 'T' && p[4] == ' ') ||
	    (p[0] == 'H' && p[1] == 'E' && p[2] == 'A' && p[3] == 'D' && p[4] == ' ') ||
	    (p[0] == 'D' && p[1] == 'E' && p[2] == 'L' && p[3] == 'E' && p[4] == 'T') ||
	    (p[0] == 'P' && p[1] == 'A' && p[2] == 'T' && p[3] == 'C' && p[4] == 'H') ||
	    (p[0] == 'O' && p[1] == 'P' && p[2] == 'T' && p[3] == 'I' && p[4] == 'O') ||
	    (p[0] == 'C' && p[1] == 'O' && p[2] == 'N' && p[3] == 'N' && p[4] == 'E') ||
	    (p[0] == 'T' && p[1] == 'R' && p[2] == 'A' && p[3] == 'C' && p[4] == 'E'))
		return NET_PROTO_HTTP1;
	/* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
	if (p[0] == 'P' && p[1] == 'R' && p[2] == 'I' && p[3] == ' ' && p[4] == '*')
		return NET_PROTO_HTTP2;
	/*
	 * The server's side of the connection preface, which it may write before it reads the
	 * client's: a SETTINGS frame (type 4, no ACK, stream 0) of whole 6-byte settings.
	 */
	len = (__u32)p[0] << 16 | (__u32)p[1] << 8 | p[2];
	if (n >= 9 && p[3] == 4 && p[4] == 0 && !p[5] && !p[6] && !p[7] && !p[8] && len % 6 == 0 &&
	    len <= 120 && (!actual || len + 9 <= actual))
		return NET_PROTO_HTTP2;
	/* MySQL: a 3-byte length and sequence 0, the whole packet in this call. */
	len = p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16;
	if (p[3] == 0 && actual && len + 4 == actual && len >= 1) {
		v = p[4];
		/* the server's greeting: protocol 10, a version that starts with a digit */
		if (v == 0x0a && n >= 6 && p[5] >= '0' && p[5] <= '9')
			return NET_PROTO_MYSQL;
		/* COM_QUIT, INIT_DB, QUERY, PING, STMT_PREPARE, STMT_EXECUTE, STMT_CLOSE, STMT_RESET */
		if (v == 0x01 || v == 0x02 || v == 0x03 || v == 0x0e || v == 0x16 || v == 0x17 ||
		    v == 0x19 || v == 0x1a)
			return NET_PROTO_MYSQL;
	}
	/* DNS over TCP: a 2-byte length, then a header with one question, standard query. */
	if (n >= 14) {
		len = (__u32)p[0] << 8 | p[1];
		if (actual && len + 2 == actual && len >= 17 && (p[4] & 0x78) == 0 && p[6] == 0 &&
		    p[7] == 1 && ((p[4] & 0x80) || (p[8] == 0 && p[9] == 0)))
			return NET_PROTO_DNS;
	}
	if (n < 9)
		return NET_PROTO_UNKNOWN;
	/* CQL: version 3-5 (0x80: a response), flags, stream, opcode, length. */
	v = p[0] & 0x7f;
	len = (__u32)p[5] << 24 | (__u32)p[6] << 16 | (__u32)p[7] << 8 | p[8];
	if ((v == 3 || v == 4 || v == 5) && p[1] <= 0x1f && p[4] <= 0x10 && len < (1u << 28) &&
	    (!actual || len + 9 <= actual))
		return NET_PROTO_CQL;
	if (n < 16)
		return NET_PROTO_UNKNOWN;
	/* MongoDB: messageLength, requestID, responseTo, opCode (2013, 2004, 2012), LE. */
	len = p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 | (__u32)p[3] << 24;
	v = p[12] | (__u32)p[13] << 8 | (__u32)p[14] << 16 | (__u32)p[15] << 24;
	if ((v == 2013 || v == 2004 || v == 2012) && len >= 16 && len <= (48u << 20))
		return NET_PROTO_MONGO;
	/*
	 * Kafka: size, api_key (0-127), api_version (0-31), correlation id, client id length
	 * (-1 or short), big-endian; the whole request in this call (clients write one per call).
	 * The bounds are the shipper's parser's (shipper/network/protocols/kafka.c).
	 */
	len = (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
	if (actual && len + 4 == actual && len >= 10 && p[4] == 0 && p[5] <= 127 && p[6] == 0 &&
	    p[7] <= 31 && ((p[12] == 0xff && p[13] == 0xff) || p[12] == 0))
		return NET_PROTO_KAFKA;
	return NET_PROTO_NONE;
}

static __always_inline __u8 fn_of(__u32 kind)
{
	switch (kind) {
	case K_READ: return NET_FN_READ;
	case K_WRITE: return NET_FN_WRITE;
	case K_READV: return NET_FN_READV;
	case K_WRITEV: return NET_FN_WRITEV;
	case K_SENDTO: return NET_FN_SENDTO;
	case K_RECVFROM: return NET_FN_RECVFROM;
	case K_SENDMSG: return NET_FN_SENDMSG;
	case K_RECVMSG: return NET_FN_RECVMSG;
	case K_SENDMMSG: return NET_FN_SENDMMSG;
	case K_RECVMMSG: return NET_FN_RECVMMSG;
	case K_SENDFILE: return NET_FN_SENDFILE;
	}
	return 0;
}

static __always_inline __u32 dir_of(__u32 kind)
{
	return kind == K_WRITE || kind == K_WRITEV || kind == K_SENDTO || kind == K_SENDMSG ||
			       kind == K_SENDMMSG || kind == K_SENDFILE
		       ? NET_DIR_EGRESS
		       : NET_DIR_INGRESS;
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
			    : opts.capture_bytes > held ? opts.capture_bytes - held
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
			for (int i = 0; i < 4; i++)
				if (i < captured)
					st->head[(st->head_len + i) & 7] = s->buf[i];
			st->head_len += captured;
			if (st->head_len < 5)
				return;
			{
				struct det_bytes h = {};

				__builtin_memcpy(h.b, st->head, 8);
				p = net_detect(&h, st->head_len, 0, DET_STREAM);
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
		else if (st->head_len == 4 &&
			 ((__u32)st->head[0] << 24 | (__u32)st->head[1] << 16 |
			  (__u32)st->head[2] << 8 | st->head[3]) == bytes)
			p = net_detect((const struct det_bytes *)s->buf, captured, bytes,
				       DET_KAFKA_BODY);
		if (p == NET_PROTO_DNS || p == NET_PROTO_KAFKA) {
			st->conn.proto = p;
			emit_head(st, dir, tgid, a->ts ? a->ts : now, fn);
			goto detected;
		}
		p = net_detect((const struct det_bytes *)s->buf, captured, bytes,
			       st->conn.flags & NET_CONN_UDP		? DET_DATAGRAM :
			       st->conn.flags & (NET_CONN_MIDSTREAM | NET_CONN_TLS) ? DET_MIDSTREAM :
										   DET_STREAM);
		/*
		 * Too few bytes to tell (or none we could read): wait for the next calls. So too
		 * for bytes of no protocol on a connection met mid-stream or carrying a TLS
		 * library's plaintext: a response, or a handshake's last messages, may come first.
		 */
		if (p == NET_PROTO_NONE && (st->conn.flags & (NET_CONN_MIDSTREAM | NET_CONN_TLS)))
			p = NET_PROTO_UNKNOWN;
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

/*
 * One call that moved bytes on a connection: counted, and its payload offered to capture()
 * unless the connection carries TLS (its plaintext comes from the library's calls, below).
 * exe: measured (a->ts set) or not.
 */
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
	if (st->conn.flags & NET_CONN_TLS)
		return;
	capture(st, dir, a, bytes, tgid, now, st->conn.dir[0].count + st->conn.dir[1].count,
		fn_of(a->kind));
}


/*
 * TLS: the plaintext of a target's TLS library calls (uprobes the worker attaches where the
 * shipper found the library; see worker/netcap.c). A call is joined to its connection without
 * any struct offset: by the socket call the library makes inside it, on the same thread (set
 * by tls_note from the socket hooks), else by the socket the same SSL object (or Go *tls.Conn)
 * was last joined to, else, for a library that made no system call at all (a memory BIO, as
 * node has), by the thread's last socket call, counted as such. A call none of these name is
 * counted and not sent: never guessed onto another connection.
 */

/* Set by the worker once it attached a TLS probe: before that the socket hooks skip this. */
__u32 tls_on = 0;

/* A call in progress: by (tgid, thread) for C libraries, (tgid, goroutine) for Go. */
struct tls_ckey {
	__u64 tgid;
	__u64 id;
};

/* A connection as the socket hooks name it. conn_id 0: not known (no bytes moved yet). */
struct tls_bind {
	__u64 key, sk, conn_id;
	__s32 fd;
	__u32 pad;
};

struct tls_call {
	__u64 ssl; /* SSL * or *tls.Conn */
	__u64 buf;
	__u64 exlen; /* size_t * of the _ex calls */
	__u64 ts;
	struct tls_bind b; /* the socket call made inside it, when bound */
	__u32 tid;
	__u32 len; /* bytes asked to write */
	__u8 fn, lib, dir, bound;
	__u8 sent; /* a write's plaintext went out with its first socket call */
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tls_ckey);
	__type(value, struct tls_call);
	__uint(max_entries, 8192);
} tls_calls SEC(".maps");


/* (tgid, SSL object) -> the connection it was last joined to. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tls_ckey);
	__type(value, struct tls_bind);
	__uint(max_entries, 16384);
} tls_sess SEC(".maps");

/*
 * A thread: the TLS call it runs (Go: the goroutine that entered on it), and its last socket
 * call that moved bytes (memory BIOs). One map, so that a socket call makes one lookup for
 * both; only the thread itself writes its entry, in place (an LRU map's update takes its locks
 * with interrupts off).
 */
struct tls_thread {
	struct tls_ckey call; /* when in_call */
	struct tls_bind last; /* when has_last */
	__u8 in_call, has_last;
	__u8 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct tls_thread);
	__uint(max_entries, 8192);
} tls_threads SEC(".maps");

static __always_inline void tls_mark(struct net_conn_state *st, __u8 lib)
{
	if (st->conn.flags & NET_CONN_TLS)
		return;
	/* Bytes held from the wire (a handshake's) go before the plaintext's. */
	hold_flush(st);
	st->conn.flags |= NET_CONN_TLS;
	st->conn.tls_lib = lib;
	st->head_len = 0;
	/* The wire's bytes (a handshake) said nothing: the plaintext's will. */
	if (st->conn.proto == NET_PROTO_NONE)
		st->conn.proto = NET_PROTO_UNKNOWN;
}

/* A TLS call's plaintext (bytes of it) as the payload of its connection st. */
static __always_inline void tls_emit(const struct tls_call *c, struct net_conn_state *st,
				     __u32 tgid, __u64 bytes, __u64 now)
{
	struct args a = {};
	__u64 tries;

	tls_mark(st, c->lib);
	tries = __sync_fetch_and_add(&st->conn.tls_calls, 1) + 1;
	a.kind = K_READ;
	a.a1 = c->buf;
	a.a2 = c->len; /* asked for: see holdable() */
	a.ts = c->ts;
	capture(st, c->dir, &a, bytes, tgid, now, tries,
		c->dir == NET_DIR_EGRESS ? NET_FN_TLS_WRITE : NET_FN_TLS_READ);
}

/*
 * A target's socket call on a TCP socket (st: its connection, NULL when it moved no bytes;
 * dir: its direction): binds the TLS call the thread is inside, if any, and is the thread's
 * last socket call. A write's plaintext goes out now, with its first bytes on the wire: at
 * the call's return a reply read by another thread may already have been sent ahead of it.
 */
static __always_inline void tls_note(__u64 pid_tgid, __u64 key, __u64 sk, __s32 fd,
				     struct net_conn_state *st, __u32 dir, __u64 now)
{
	struct tls_bind b = { .key = key, .sk = sk, .conn_id = st ? st->conn.id : 0, .fd = fd };
	struct tls_thread *t = bpf_map_lookup_elem(&tls_threads, &pid_tgid);

	if (t && t->in_call) {
		struct tls_call *c = bpf_map_lookup_elem(&tls_calls, &t->call);

		if (c && c->tid == (__u32)pid_tgid && !c->bound) {
			c->b = b;
			c->bound = 1;
			if (st && c->dir == NET_DIR_EGRESS && dir == NET_DIR_EGRESS && c->len &&
			    c->fn != NET_TLS_FN_GO_HANDSHAKE) {
				c->sent = 1;
				stat_add(NET_STAT_TLS_CALLS, 1);
				tls_emit(c, st, pid_tgid >> 32, c->len, now);
			} else if (st) {
				tls_mark(st, c->lib);
			}
		}
	}
	if (!st)
		return;
	if (!t) {
		struct tls_thread n = { .last = b, .has_last = 1 };

		bpf_map_update_elem(&tls_threads, &pid_tgid, &n, BPF_ANY);
	} else if (!t->has_last || t->last.key != b.key || t->last.sk != b.sk ||
		   t->last.conn_id != b.conn_id || t->last.fd != b.fd) {
		t->last = b;
		t->has_last = 1;
	}
}

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
		if (ret != 0 && ret != -EINPROGRESS)
			return 0;
		fd = a.a0;
		sk = tcp_sock_of(fd);
		if (sk)
			conn_get((__u64)tgid << 32 | (__u32)fd, tgid, fd, sk, NET_ROLE_CLIENT, now,
				 a.ts ? now - a.ts : 0, now);
		return 0;
	case K_ACCEPT:
		if (ret < 0)
			return 0;
		fd = ret;
		sk = tcp_sock_of(fd);
		if (sk)
			conn_get((__u64)tgid << 32 | (__u32)fd, tgid, fd, sk, NET_ROLE_SERVER, now,
				 a.ts ? now - a.ts : 0, now);
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


/*
 * Socket calls (the default where tp_btf works): sock_send_length and sock_recv_length fire
 * in the kernel's socket send and receive paths only, so other system calls pay nothing, and
 * whatever path moved the bytes is seen (io_uring, sendfile, splice: counted, their payload a
 * gap). The call's arguments come from the task's user registers. Connections are keyed by
 * their socket; connect, accept and close come from inet_sock_set_state. A call's duration is
 * not known here (no entry time): the syscall variant measures it, at a cost to every process.
 */
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

/*
 * The system call's number and arguments, from the registers bpf_task_pt_regs() gives: a BTF
 * pointer, read with plain loads (BPF_CORE_READ is a bpf_probe_read_kernel() call each, five
 * a call).
 */
#if defined(__TARGET_ARCH_x86)
#define REGS_NR(r) ((long)(r)->orig_ax)
#define REGS_ARG1(r) ((r)->di)
#define REGS_ARG2(r) ((r)->si)
#define REGS_ARG3(r) ((r)->dx)
#define REGS_ARG5(r) ((r)->r8)
#elif defined(__TARGET_ARCH_arm64)
#define REGS_NR(r) ((long)(r)->regs[8])
#define REGS_ARG1(r) ((r)->orig_x0)
#define REGS_ARG2(r) ((r)->regs[1])
#define REGS_ARG3(r) ((r)->regs[2])
#define REGS_ARG5(r) ((r)->regs[4])
#else
#define REGS_NR(r) syscall_nr(r)
#define REGS_ARG1(r) PT_REGS_PARM1_CORE_SYSCALL(r)
#define REGS_ARG2(r) PT_REGS_PARM2_CORE_SYSCALL(r)
#define REGS_ARG3(r) PT_REGS_PARM3_CORE_SYSCALL(r)
#define REGS_ARG5(r) PT_REGS_PARM5_CORE_SYSCALL(r)
#endif

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
		fd = kind_of(REGS_NR(regs)) != K_NONE ? (__s32)REGS_ARG1(regs) : -1;
		tls_note(pid_tgid, key, key, fd, NULL, dir, 0);
		return 0;
	}
	now = bpf_ktime_get_ns();
	kind = kind_of(REGS_NR(regs));
	/*
	 * A vector of messages fires once per message: which buffer is known for a vector of
	 * one, and for sendmmsg by counting (it sends them in order, and a thread's next call
	 * starts again at 0 once all were sent); not for recvmmsg of several, which returns
	 * fewer than it asks for.
	 */
	if (kind == K_SENDMMSG && dir == NET_DIR_EGRESS)
		mmsg_idx = mmsg_next(pid_tgid, REGS_ARG2(regs), REGS_ARG3(regs));
	else if (kind == K_RECVMMSG && REGS_ARG3(regs) != 1)
		mmsg_idx = -1;
	if (mmsg_idx < 0 || kind == K_NONE || kind == K_CONNECT || kind == K_ACCEPT ||
	    kind == K_CLOSE || dir_of(kind) != dir)
		kind = kind == K_SENDFILE ? K_SENDFILE : K_NONE;
	fd = kind != K_NONE ? (__s32)REGS_ARG1(regs) : -1;
	a.kind = kind;
	a.a0 = fd;
	a.a1 = REGS_ARG2(regs);
	a.a2 = REGS_ARG3(regs);
	a.a4 = REGS_ARG5(regs);
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


/* The connection b names, if it is still the one b was made for. */
static __always_inline struct net_conn_state *conn_valid(const struct tls_bind *b)
{
	struct net_conn_state *st = bpf_map_lookup_elem(&conns, &b->key);

	if (!st || st->sk != b->sk || (b->conn_id && st->conn.id != b->conn_id))
		return NULL;
	return st;
}

/*
 * A TLS call returned bytes of plaintext: joined to its connection (see tls_note) and offered
 * to capture() as that connection's payload.
 */
static __always_inline void tls_done(const struct tls_call *c, __u64 pid_tgid, __u64 bytes,
				     __u64 now)
{
	__u32 tgid = pid_tgid >> 32;
	struct tls_ckey sess = { .tgid = tgid, .id = c->ssl };
	struct net_conn_state *st = NULL;
	struct tls_bind b = {}, *p;
	int adjacent = 0;

	if (!c->sent)
		stat_add(NET_STAT_TLS_CALLS, 1);
	if (c->bound) {
		b = c->b;
		st = conn_valid(&b);
		if (!st)
			st = conn_get(b.key, tgid, b.fd, (struct sock *)b.sk, NET_ROLE_UNKNOWN, now,
				      0, now);
	} else {
		p = bpf_map_lookup_elem(&tls_sess, &sess);
		if (p) {
			b = *p;
			st = conn_valid(&b);
		}
		/* An SSL object freed and made again at the same address names a new socket. */
		if (!st && c->lib != NET_TLS_GO) {
			struct tls_thread *t = bpf_map_lookup_elem(&tls_threads, &pid_tgid);

			if (t && t->has_last) {
				b = t->last;
				st = conn_valid(&b);
				adjacent = st != NULL;
			}
		}
	}
	if (!st) {
		bpf_map_delete_elem(&tls_sess, &sess);
		if (!c->sent)
			stat_add(NET_STAT_TLS_UNBOUND, 1);
		return;
	}
	b.conn_id = st->conn.id;
	bpf_map_update_elem(&tls_sess, &sess, &b, BPF_ANY);
	if (c->sent)
		return;
	if (adjacent)
		stat_add(NET_STAT_TLS_ADJACENT, 1);
	tls_emit(c, st, tgid, bytes, now);
}

static __always_inline void tls_begin(__u64 pid_tgid, struct tls_ckey *k, __u64 ssl, __u64 buf,
				      __u64 len, __u64 exlen, __u8 fn, __u8 lib)
{
	struct tls_call c = {};
	struct tls_thread *t;

	c.ssl = ssl;
	c.buf = buf;
	c.len = len > 0x7fffffff ? 0 : (__u32)len;
	c.exlen = exlen;
	c.ts = bpf_ktime_get_ns();
	c.tid = (__u32)pid_tgid;
	c.fn = fn;
	c.lib = lib;
	c.dir = fn == NET_TLS_FN_WRITE || fn == NET_TLS_FN_WRITE_EX || fn == NET_TLS_FN_GO_WRITE
			? NET_DIR_EGRESS
			: NET_DIR_INGRESS;
	if (bpf_map_update_elem(&tls_calls, k, &c, BPF_ANY)) {
		stat_add(NET_STAT_TLS_CALLS_FULL, 1);
		return;
	}
	t = bpf_map_lookup_elem(&tls_threads, &pid_tgid);
	if (t) {
		t->call = *k;
		t->in_call = 1;
	} else {
		struct tls_thread n = { .call = *k, .in_call = 1 };

		bpf_map_update_elem(&tls_threads, &pid_tgid, &n, BPF_ANY);
	}
}

/* SSL_read, SSL_write and their _ex variants: entry (OpenSSL, BoringSSL, node's OpenSSL). */
SEC("uprobe")
int BPF_KPROBE(tls_enter, void *ssl, void *buf, __u64 num, void *exlen)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	struct tls_ckey k = { .tgid = pid_tgid >> 32, .id = (__u32)pid_tgid };
	__u8 fn = cookie & 0xff;

	if (!is_traced(pid_tgid >> 32))
		return 0;
	/* SSL_read/SSL_write take an int: the register's upper half is not theirs. */
	if (fn == NET_TLS_FN_READ || fn == NET_TLS_FN_WRITE)
		num = (int)num > 0 ? (__u32)num : 0;
	tls_begin(pid_tgid, &k, (__u64)ssl, (__u64)buf, num,
		  fn == NET_TLS_FN_READ_EX || fn == NET_TLS_FN_WRITE_EX ? (__u64)exlen : 0, fn,
		  (cookie >> 8) & 0xff);
	return 0;
}

/* Their return: the bytes moved (an int, or 1 and *exlen for _ex). */
SEC("uretprobe")
int BPF_KRETPROBE(tls_exit, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), bytes;
	struct tls_ckey k = { .tgid = pid_tgid >> 32, .id = (__u32)pid_tgid };
	struct tls_call *cp = bpf_map_lookup_elem(&tls_calls, &k), c;
	struct tls_thread *t;

	if (!cp)
		return 0;
	c = *cp;
	bpf_map_delete_elem(&tls_calls, &k);
	t = bpf_map_lookup_elem(&tls_threads, &pid_tgid);
	if (t)
		t->in_call = 0;
	if (c.exlen) {
		if ((int)ret != 1 || bpf_probe_read_user(&bytes, sizeof(bytes), (void *)c.exlen))
			return 0;
	} else {
		if ((int)ret <= 0)
			return 0;
		bytes = (__u64)(int)ret;
	}
	tls_done(&c, pid_tgid, bytes, bpf_ktime_get_ns());
	return 0;
}

/*
 * Go crypto/tls.(*Conn).Read and .Write (Go >= 1.17 register ABI, x86-64): at the entry, and
 * at each RET instruction of the function (the shipper found them), paired by goroutine (g is
 * R14), which may have moved to another thread meanwhile. Receiver in RAX, the slice's data in
 * RBX; the count returned in RAX.
 */
SEC("uprobe")
int go_tls(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	struct tls_ckey k = { .tgid = pid_tgid >> 32, .id = ctx->r14 };
	struct tls_call *cp, c;
	__u8 fn = cookie & 0xff;
	struct tls_thread *cur;
	long n;

	if (!is_traced(pid_tgid >> 32))
		return 0;
	if (fn == NET_TLS_FN_GO_READ || fn == NET_TLS_FN_GO_WRITE) {
		tls_begin(pid_tgid, &k, ctx->ax, ctx->bx, ctx->cx, 0, fn, NET_TLS_GO);
		return 0;
	}
	cp = bpf_map_lookup_elem(&tls_calls, &k);
	if (fn == NET_TLS_FN_GO_HANDSHAKE) {
		/* Inside a Read or Write (their first call shakes hands): theirs binds it. */
		if (!cp)
			tls_begin(pid_tgid, &k, ctx->ax, 0, 0, 0, fn, NET_TLS_GO);
		return 0;
	}
	if (!cp)
		return 0;
	/* A handshake's RET inside a Read or Write is not theirs; a Read's RET not its. */
	if ((fn == NET_TLS_FN_GO_HS_RET) != (cp->fn == NET_TLS_FN_GO_HANDSHAKE))
		return 0;
	c = *cp;
	bpf_map_delete_elem(&tls_calls, &k);
	cur = bpf_map_lookup_elem(&tls_threads, &pid_tgid);
	if (cur && cur->in_call && cur->call.id == k.id)
		cur->in_call = 0;
	if (fn == NET_TLS_FN_GO_HS_RET) {
		struct tls_ckey sess = { .tgid = pid_tgid >> 32, .id = c.ssl };

		if (c.bound)
			bpf_map_update_elem(&tls_sess, &sess, &c.b, BPF_ANY);
		return 0;
	}
	n = (long)ctx->ax;
	if (n > 0)
		tls_done(&c, pid_tgid, (__u64)n, bpf_ktime_get_ns());
#endif
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
