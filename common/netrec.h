/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NETWORK tasks: the records of the capture program (bpf/net.bpf.c), which the worker passes
 * to the shipper as they are (MSG_SHIP_NET frames, common/msg.h). An ABI between the kernel
 * side, the worker (CAP_BPF + CAP_PERFMON) and the shipper (no capability), which takes every
 * field as hostile: fixed-width types only, every length checked on arrival.
 *
 * A connection is one TCP socket of a target as one of its descriptors saw it. Its id is
 * unique within the task (a counter in the program), so a descriptor number used again for
 * another socket is another connection. Counters are cumulative since the connection was
 * first seen: the shipper takes deltas.
 */
#ifndef ROVER_COMMON_NETREC_H
#define ROVER_COMMON_NETREC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* L4 duration buckets: lower bounds in ns, as upstream's (reference network-profiling §3.4). */
#define NET_L4_BUCKETS 34
/* Bytes of one syscall's payload the program may copy, at most (net_opts.capture_bytes). */
#define NET_CAPTURE_MAX 4096
/* Bytes of a small read the program may hold for the next (struct net_conn_state). */
#define NET_HOLD_MAX 16

enum net_role {
	NET_ROLE_UNKNOWN = 0,
	NET_ROLE_CLIENT = 1, /* connect() */
	NET_ROLE_SERVER = 2, /* accept() */
};

/* Application protocol, detected by the program on the first bytes of the connection. */
enum net_proto {
	NET_PROTO_UNKNOWN = 0, /* not decided yet */
	NET_PROTO_NONE = 1,    /* decided: none we parse; no payload is captured */
	NET_PROTO_HTTP1 = 2,
	NET_PROTO_HTTP2 = 3, /* the client preface; h2 over TLS and h2c with prior knowledge */
	NET_PROTO_MYSQL = 4, /* a server greeting, or a client command packet */
	NET_PROTO_CQL = 5,   /* a CQL v3/v4/v5 frame header */
	NET_PROTO_MONGO = 6, /* an OP_MSG, OP_QUERY or OP_COMPRESSED header */
	NET_PROTO_KAFKA = 7, /* a request header */
	NET_PROTO_DNS = 8,   /* a DNS message with its TCP length prefix */
	NET_PROTO_MAX,
};

enum net_conn_flags {
	NET_CONN_CLOSED = 1u << 0,    /* closed by close(), or its process ended */
	NET_CONN_MIDSTREAM = 1u << 1, /* first seen on a read or write, not connect/accept */
	NET_CONN_EXITED = 1u << 2,    /* closed because its process ended (worker) */
	NET_CONN_TLS = 1u << 3,	      /* a TLS library's calls were met on it: proto and the
				       * payload records are the plaintext's, not the wire's */
	/*
	 * A UDP socket: no connect, accept, RTT or retransmits; its remote is the connected
	 * peer, else the last destination a datagram was sent to; only DNS is told on it; it
	 * ends at close() when system calls are traced, else after NET_UDP_IDLE_NS without a
	 * datagram (no hook sees a UDP socket go).
	 */
	NET_CONN_UDP = 1u << 4,
};
#define NET_UDP_IDLE_NS (10ull * 1000000000ull)

/* The TLS library whose calls gave a connection's plaintext. */
enum net_tls_lib {
	NET_TLS_NONE = 0,
	NET_TLS_OPENSSL = 1,   /* libssl 1.1 / 3.x, shared or linked into the executable */
	NET_TLS_BORINGSSL = 2, /* BoringSSL (no _ex calls) */
	NET_TLS_GO = 3,	       /* Go crypto/tls */
	NET_TLS_NODE = 4,      /* the OpenSSL inside node */
	NET_TLS_MAX,
};

/*
 * What a TLS probe is, as its BPF cookie: the function (low byte) and the library (next).
 * Entry and return of the C libraries are separate programs; Go's are one program, at the
 * entry and at each RET instruction (never a uretprobe in Go: its stacks move).
 */
enum net_tls_fn {
	NET_TLS_FN_READ = 1,	 /* int SSL_read(SSL *, void *, int) */
	NET_TLS_FN_WRITE = 2,	 /* int SSL_write(SSL *, const void *, int) */
	NET_TLS_FN_READ_EX = 3,	 /* int SSL_read_ex(SSL *, void *, size_t, size_t *) */
	NET_TLS_FN_WRITE_EX = 4, /* int SSL_write_ex(SSL *, const void *, size_t, size_t *) */
	NET_TLS_FN_GO_READ = 5,	 /* crypto/tls.(*Conn).Read entry */
	NET_TLS_FN_GO_WRITE = 6, /* crypto/tls.(*Conn).Write entry */
	NET_TLS_FN_GO_RET = 7,	 /* a RET of either */
	/*
	 * crypto/tls.(*Conn).handshakeContext: moves no plaintext, but its socket calls join
	 * the *tls.Conn to its socket. Go reads the client's first request together with its
	 * Finished message, so that request's Read makes no socket call of its own.
	 */
	NET_TLS_FN_GO_HANDSHAKE = 8,
	NET_TLS_FN_GO_HS_RET = 9, /* a RET of it */
	NET_TLS_FN_MAX,
};
#define NET_TLS_COOKIE(fn, lib) ((__u64)(fn) | (__u64)(lib) << 8)
/*
 * Where a C probe of SSL_read or SSL_write is (the cookie's third byte; common/tlssite.h):
 * 0 at the function's entry (with a return probe), NET_TLS_AT_SITE on the call of its _ex
 * implementation (arguments as SSL_read_ex's: the count's address in the fourth),
 * NET_TLS_AT_AFTER on the jump that tests that call's result (the return program, as a plain
 * probe: the result in the return register).
 */
#define NET_TLS_AT_SITE (1u << 16)
#define NET_TLS_AT_AFTER (2u << 16)

enum net_dir {
	NET_DIR_EGRESS = 0,  /* written by the target */
	NET_DIR_INGRESS = 1, /* read by the target */
};

/* Which syscall moved the bytes (SpanAttachedEvent "Syscall <Fn>" names). */
enum net_fn {
	NET_FN_READ = 1,
	NET_FN_WRITE,
	NET_FN_READV,
	NET_FN_WRITEV,
	NET_FN_SEND,
	NET_FN_RECV,
	NET_FN_SENDTO,
	NET_FN_RECVFROM,
	NET_FN_SENDMSG,
	NET_FN_RECVMSG,
	NET_FN_SENDMMSG,
	NET_FN_RECVMMSG,
	NET_FN_SENDFILE,
	NET_FN_TLS_READ,  /* plaintext a TLS library's read call returned */
	NET_FN_TLS_WRITE, /* plaintext given to a TLS library's write call */
	NET_FN_MAX,
};

struct net_l4_dir {
	__u64 count; /* syscalls that moved bytes */
	__u64 bytes;
	__u64 exe_ns;		    /* sum of their durations */
	__u32 hist[NET_L4_BUCKETS]; /* durations */
};

/* A connection's identity and cumulative counters. */
struct net_conn {
	__u64 id;
	__u32 tgid;
	__s32 fd;
	__u8 role;	/* enum net_role */
	__u8 family;	/* AF_INET or AF_INET6 */
	__u8 proto;	/* enum net_proto */
	__u8 flags;	/* enum net_conn_flags */
	__u16 lport;	/* host order */
	__u16 rport;	/* host order */
	__u8 laddr[16]; /* AF_INET: the first 4 bytes */
	__u8 raddr[16];
	__u64 open_ns;	      /* CLOCK_MONOTONIC: connect/accept returned, or first seen */
	__u64 close_ns;	      /* 0 while open */
	__u64 connect_exe_ns; /* connect or accept call duration; 0 when mid-stream */
	__u64 close_exe_ns;
	struct net_l4_dir dir[2];	/* enum net_dir */
	__u64 rtt_count;		/* writes that sampled the smoothed RTT */
	__u64 rtt_us;			/* sum of those samples */
	__u32 rtt_hist[NET_L4_BUCKETS]; /* samples in ns, as upstream buckets them */
	__u32 retrans;			/* tcp_sock.total_retrans, last seen */
	__u32 drops;			/* skbs of the socket freed with a drop reason */
	__u64 data_seq[2];		/* payload segments the program meant to send, per dir */
	__u64 tls_calls;		/* TLS library calls that moved plaintext on it */
	__u8 tls_lib;			/* enum net_tls_lib, with NET_CONN_TLS */
	__u8 nat;	/* 1: nat_addr/nat_port hold the peer behind a DNAT (conntrack's reply) */
	__u16 nat_port; /* host order */
	__u8 close_failed; /* close() returned an error */
	__u8 pad2[3];
	__u64 last_ns; /* the last call that moved bytes on it */
	/*
	 * Access-log mode: the real peer of a connection whose destination was translated
	 * (a Kubernetes Service's cluster IP): the source of the conntrack entry's reply tuple,
	 * read from the first packet the connection sent (net_dev_queue). Same family as raddr.
	 */
	__u8 nat_addr[16];
};

/* The program's map value: the connection, and the socket it was seen on (kernel side only). */
struct net_conn_state {
	struct net_conn conn;
	__u64 sk;
	/* The first bytes, gathered while calls move fewer than detection needs (BIO_gets reads
	 * a TLS request a byte at a time). */
	__u8 head[8];
	__u32 head_len;
	/*
	 * A read of a known protocol that got all it asked for and at most NET_HOLD_MAX bytes
	 * (a length-prefixed protocol's header: MariaDB reads a packet's 4 bytes, then the
	 * rest): held here, and sent with the connection's next call in the same direction as
	 * one segment, else alone ahead of the next call in the other (or the close). One
	 * record fewer per message, which is most of what a call costs the program.
	 */
	__u8 hold_dir, hold_fn;
	__u8 pad[2];
	__u64 hold_len; /* taken with an exchange: 0 while nothing is held */
	__u8 hold[NET_HOLD_MAX];
	__u64 hold_start_ns, hold_end_ns;
};

enum net_rec_kind {
	NET_REC_DATA = 1,  /* struct net_rec_data, then `captured` bytes, padded to 8 */
	NET_REC_CLOSE = 2, /* struct net_rec_close: the connection's final counters */
	/* Access-log mode only (net_opts.access_log): */
	NET_REC_OPEN = 3, /* struct net_rec_open: connect() or accept() returned (or failed) */
	NET_REC_CALL = 4, /* struct net_rec_call: one read or write call on a TCP connection */
};

struct net_rec_hdr {
	__u32 kind;
	__u32 len; /* of the whole record, padding included; a multiple of 8 */
};

struct net_rec_data {
	struct net_rec_hdr hdr;
	__u64 conn_id;
	__u64 start_ns; /* syscall entry, CLOCK_MONOTONIC */
	__u64 end_ns;	/* syscall exit */
	__u64 seq;	/* data_seq[dir] of this segment, from 1: a hole means segments lost */
	__u32 tgid;
	__u32 actual;	/* bytes the syscall moved */
	__u16 captured; /* bytes that follow, <= actual, <= NET_CAPTURE_MAX */
	__u8 dir;	/* enum net_dir */
	__u8 fn;	/* enum net_fn */
	__u8 proto;	/* enum net_proto when sent */
	__u8 dgram;	/* 1: a UDP datagram, a whole message */
	/*
	 * The first `held` bytes (<= NET_HOLD_MAX) came from an earlier read of this direction
	 * that returned at held_end_ns (start_ns is its entry): the program held them for this
	 * call (struct net_conn_state). Each part's bytes are timed by their own read.
	 */
	__u8 held;
	__u8 pad;
	__u64 held_end_ns;
};

struct net_rec_close {
	struct net_rec_hdr hdr;
	struct net_conn conn;
};

/*
 * Access-log mode: a connection as connect() or accept() left it (conn.connect_exe_ns is the
 * call's duration, conn.open_ns its return), before any call on it. A connect() that failed
 * (err: a negative errno; EINPROGRESS is no failure) still sends one, with the addresses it
 * was given; that connection is not tracked further.
 */
struct net_rec_open {
	struct net_rec_hdr hdr;
	struct net_conn conn;
	__s32 err;
	__u32 pad;
};

/*
 * Access-log mode: one read or write call of a target on a TCP connection, whatever it moved
 * and whatever the protocol (payload still goes in NET_REC_DATA for the parsed ones), with
 * what the packet tracepoints saw of it in the calling thread. A field a tracepoint cannot
 * give is 0 (docs/access-log.md lists them).
 *   write: packets: skbs of the socket queued to a device (net:net_dev_queue) during the
 *          call, retransmits included; retrans: tcp:tcp_retransmit_skb of the socket during
 *          the call; pkt_bytes: those skbs' lengths; ifindex: the device of the last;
 *          l2_ns: net_dev_queue to net_dev_xmit, summed; l2_ready_ns: net_dev_queue to
 *          net_dev_start_xmit; l2_send_ns: net_dev_start_xmit to net_dev_xmit; l2_queued:
 *          qdisc enqueues (qdisc:qdisc_enqueue) of those skbs.
 *   read:  packets, pkt_bytes: skbs copied to the caller (skb:skb_copy_datagram_iovec);
 *          ifindex: the device the last came in on (net:netif_receive_skb); rx_wait_ns:
 *          netif_receive_skb to the copy, summed.
 */
struct net_rec_call {
	struct net_rec_hdr hdr;
	__u64 conn_id;
	__u64 start_ns; /* syscall entry, CLOCK_MONOTONIC */
	__u64 end_ns;	/* syscall exit */
	__u32 tgid;
	__u32 actual; /* bytes the call moved */
	__u8 dir;     /* enum net_dir */
	__u8 fn;      /* enum net_fn */
	__u8 proto;   /* enum net_proto at the call */
	__u8 pad;
	__u32 ifindex;
	__u32 packets;
	__u32 retrans;
	__u32 l2_queued;
	__u32 pad2;
	__u64 pkt_bytes;
	__u64 l2_ns, l2_ready_ns, l2_send_ns;
	__u64 rx_wait_ns;
};

/* Per-CPU counters of the program; the worker reports them as losses. */
enum net_stat {
	NET_STAT_SYSCALLS,	  /* traced syscalls of the targets on TCP and UDP sockets */
	NET_STAT_CONNS_FULL,	  /* a connection not tracked: the map was full */
	NET_STAT_INFLIGHT_FULL,	  /* a syscall not traced: no room for its arguments */
	NET_STAT_DATA_RINGBUF,	  /* payload segment lost: ring buffer full */
	NET_STAT_DATA_BUDGET,	  /* payload segment not sent: the flush's byte budget spent */
	NET_STAT_DATA_BYTES_LOST, /* bytes of the segments of the two lines above */
	NET_STAT_CLOSE_RINGBUF,	  /* a close record lost: the connection's last counters */
	NET_STAT_READ_FAULT,	  /* payload bytes that could not be read */
	NET_STAT_TLS_CALLS,	  /* TLS library calls of the targets that moved plaintext */
	NET_STAT_TLS_UNBOUND,	  /* of those, on no connection we could name: not sent */
	NET_STAT_TLS_ADJACENT,	  /* of those, named by the thread's last socket call (a
				   * memory BIO: the library made no system call itself) */
	NET_STAT_TLS_CALLS_FULL,  /* a TLS call not traced: no room for its arguments */
	NET_STAT_CRED_DROPPED,	  /* a client's target dropped: no longer the client's to trace */
	NET_STAT_CALL_RINGBUF,	  /* access log: a NET_REC_CALL or NET_REC_OPEN lost, ring full */
	NET_STAT_PKT_FULL,	  /* access log: a packet not joined to its call (map full) */
	NET_STAT_MAX,
};

/* Configuration the worker writes into the program before loading. */
struct net_opts {
	__u32 capture_bytes; /* per syscall, <= NET_CAPTURE_MAX */
	__u32 detect_tries;  /* data syscalls without a known protocol before it gives up */
	/*
	 * 1: the access-log module's capture (TASK_ACCESS_LOG): NET_REC_OPEN at connect/accept,
	 * NET_REC_CALL for every read and write on a TCP connection, the packet tracepoints
	 * joined to the call, the conntrack peer of a translated destination; payload captured
	 * for HTTP/1 and HTTP/2 only.
	 */
	__u32 access_log;
	__u32 pad;
};

#endif
