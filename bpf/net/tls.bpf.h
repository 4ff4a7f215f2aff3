/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TLS: the plaintext of a target's TLS library calls (uprobes the worker attaches where the
 * shipper found the library; see worker/netcap.c). A call is joined to its connection without
 * any struct offset: by the socket call the library makes inside it, on the same thread (set
 * by tls_note from the socket hooks), else by the socket the same SSL object (or Go *tls.Conn)
 * was last joined to, else, for a library that made no system call at all (a memory BIO, as
 * node has), by the thread's last socket call, counted as such. A call none of these name is
 * counted and not sent: never guessed onto another connection.
 */
#ifndef ROVER_BPF_NET_TLS_H
#define ROVER_BPF_NET_TLS_H

#include "common/netrec.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/record.bpf.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/capture.bpf.h"

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
	/* On SSL_read's or SSL_write's call of its _ex twin: the count's address is the fourth. */
	int ex = fn == NET_TLS_FN_READ_EX || fn == NET_TLS_FN_WRITE_EX ||
		 (cookie & NET_TLS_AT_SITE);

	if (!is_traced(pid_tgid >> 32))
		return 0;
	/* SSL_read/SSL_write take an int: the register's upper half is not theirs. */
	if (fn == NET_TLS_FN_READ || fn == NET_TLS_FN_WRITE)
		num = (int)num > 0 ? (__u32)num : 0;
	tls_begin(pid_tgid, &k, (__u64)ssl, (__u64)buf, num, ex ? (__u64)exlen : 0, fn,
		  (cookie >> 8) & 0xff);
	return 0;
}

/*
 * Their return: the bytes moved (an int, or 1 and *exlen for _ex). Also linked as a plain
 * probe on the jump after the call site (NET_TLS_AT_AFTER): the _ex twin's result is in the
 * same register there.
 */
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
	/*
	 * Judged again at the return, before the buffer is read: the call began while the
	 * thread was the client's to trace, but a sibling may have made the process
	 * non-dumpable meanwhile, or the thread exec'd a set-user-ID program inside the call
	 * (from a BIO callback) whose image returns through the same probe.
	 */
	if (!is_traced(k.tgid))
		return 0;
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
 * Go crypto/tls.(*Conn).Read and .Write (Go >= 1.17 register ABI: GO_REGS_* in
 * bpf/core_fixes.bpf.h): at the entry, and at each RET instruction of the function (the
 * shipper found them), paired by goroutine (g), which may have moved to another thread
 * meanwhile. Arguments: the receiver, then the slice's data and length; the count returned
 * first.
 */
SEC("uprobe")
int go_tls(struct pt_regs *ctx)
{
#ifdef GO_REGS_G
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	struct tls_ckey k = { .tgid = pid_tgid >> 32, .id = GO_REGS_G(ctx) };
	struct tls_call *cp, c;
	__u8 fn = cookie & 0xff;
	struct tls_thread *cur;
	long n;

	if (!is_traced(pid_tgid >> 32))
		return 0;
	if (fn == NET_TLS_FN_GO_READ || fn == NET_TLS_FN_GO_WRITE) {
		tls_begin(pid_tgid, &k, GO_REGS_ARG1(ctx), GO_REGS_ARG2(ctx), GO_REGS_ARG3(ctx), 0,
			  fn, NET_TLS_GO);
		return 0;
	}
	cp = bpf_map_lookup_elem(&tls_calls, &k);
	if (fn == NET_TLS_FN_GO_HANDSHAKE) {
		/* Inside a Read or Write (their first call shakes hands): theirs binds it. */
		if (!cp)
			tls_begin(pid_tgid, &k, GO_REGS_ARG1(ctx), 0, 0, 0, fn, NET_TLS_GO);
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
	n = (long)GO_REGS_RET1(ctx);
	if (n > 0)
		tls_done(&c, pid_tgid, (__u64)n, bpf_ktime_get_ns());
#endif
	return 0;
}

#endif
