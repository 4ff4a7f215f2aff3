// SPDX-License-Identifier: Apache-2.0
/*
 * Writes the seed corpus of the text and stream fuzz targets: valid worker streams (framed as
 * common/ipc.c frames them, with the structs of common/msg.h, so they follow ABI changes when
 * regenerated) and samples of /proc/kallsyms, /proc/PID/maps and JIT perf map text. `make fuzz-corpus`
 * runs it; the ELF seeds come from the compiler (see the Makefile).
 *
 * Usage: gen_corpus DIR   (writes DIR/fuzz_worker_stream/, DIR/fuzz_maps_kallsyms/,
 * DIR/fuzz_netrec/, DIR/fuzz_netcontent/ and DIR/fuzz_pycode/)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "common/netrec.h"
#include "common/pyframes.h"
#include "common/stackcount.h"

/* Seeds stay small: libFuzzer mutates small inputs faster, and they live in git. */
#define SEED_MAX 4096

struct stream {
	uint8_t buf[SEED_MAX];
	size_t len;
};

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "gen_corpus: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void frame(struct stream *s, uint16_t type, const void *payload, uint32_t len)
{
	struct ipc_hdr h = { .len = len, .type = type, .version = IPC_VERSION, .nfds = 0 };

	if (s->len + sizeof(h) + len > sizeof(s->buf)) {
		fprintf(stderr, "gen_corpus: seed over %d bytes\n", SEED_MAX);
		exit(1);
	}
	memcpy(s->buf + s->len, &h, sizeof(h));
	memcpy(s->buf + s->len + sizeof(h), payload, len);
	s->len += sizeof(h) + len;
}

static void begin_type(struct stream *s, uint64_t task_id, uint32_t type, uint32_t npids,
		       const int32_t *pids)
{
	struct task_spec spec = {
		.task_id = task_id,
		.type = type,
		.format = FORMAT_FOLDED,
		.duration_ms = 1000,
		.period_us = 10000,
		.flush_ms = 1000,
		.npids = npids,
	};

	memcpy(spec.pids, pids, npids * sizeof(pids[0]));
	frame(s, MSG_SHIP_BEGIN, &spec, sizeof(spec));
}

static void begin(struct stream *s, uint64_t task_id, uint32_t npids, const int32_t *pids)
{
	begin_type(s, task_id, TASK_ON_CPU, npids, pids);
}

/* Stacks trimmed to nr frames would not be valid frames: the struct is sent whole. */
static struct ship_stack stack(int32_t id, uint32_t kind, uint32_t nr, uint64_t base)
{
	struct ship_stack st = { .id = id, .kind = kind, .nr = nr };

	for (uint32_t i = 0; i < nr; i++)
		st.ips[i] = base + 0x40 * i + 5;
	return st;
}

static void counts(struct stream *s, uint64_t task_id, const struct ship_count *c, size_t n)
{
	uint8_t buf[sizeof(struct ship_counts_hdr) + 8 * sizeof(struct ship_count)];
	struct ship_counts_hdr h = { .task_id = task_id };

	if (n > 8)
		exit(1);
	h.losses[LOSS_COUNTS_FULL] = 1;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), c, n * sizeof(*c));
	frame(s, MSG_SHIP_COUNTS, buf, (uint32_t)(sizeof(h) + n * sizeof(*c)));
}

static void end(struct stream *s, uint64_t task_id)
{
	struct ship_end e = { .task_id = task_id, .reason = END_DURATION };

	frame(s, MSG_SHIP_END, &e, sizeof(e));
}

static void write_file(const char *target, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		die(path);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		die(path);
}

static void save(const char *name, const struct stream *s)
{
	write_file("fuzz_worker_stream", name, s->buf, s->len);
}

/* Addresses inside the fake maps and kallsyms of fuzz_worker_stream.c. */
#define USER_BASE 0x401000ull
#define LIB_BASE 0x7f0000000000ull
#define KERNEL_BASE 0xffffffff81000100ull

static void worker_streams(void)
{
	const int32_t one[] = { 1 }, two[] = { 1, 2 };
	struct stream s;

	/* A whole task: user and kernel stacks, counts naming them, the end. Folded output. */
	s.len = 0;
	begin(&s, 3, 1, one);
	{
		struct ship_stack st[2] = { stack(1, 1, 3, USER_BASE),
					    stack(2, 0, 2, KERNEL_BASE) };

		frame(&s, MSG_SHIP_STACKS, st, sizeof(st));
	}
	{
		struct ship_count c[3] = {
			{ .tgid = 1, .ustack = 1, .kstack = 2, .value = 7 },
			{ .tgid = 1, .ustack = 1, .kstack = -1, .value = 3 },
			{ .tgid = 1, .ustack = -1, .kstack = 2, .value = 1 },
		};

		counts(&s, 3, c, 3);
	}
	end(&s, 3);
	save("whole_task", &s);

	/* The worker names the kernel stack's frames first (one with no symbol): no kallsyms. */
	s.len = 0;
	begin(&s, 5, 1, one);
	{
		uint8_t kb[sizeof(struct ship_ksyms_hdr) + 2 * sizeof(struct ship_ksym) + 16] = {
			0
		};
		struct ship_ksyms_hdr h = { .task_id = 5, .count = 2 };
		struct ship_ksym k0 = { .addr = KERNEL_BASE + 5, .len = 7 },
				 k1 = { .addr = KERNEL_BASE + 0x45 };
		size_t off = sizeof(h);

		memcpy(kb, &h, sizeof(h));
		memcpy(kb + off, &k0, sizeof(k0));
		memcpy(kb + off + sizeof(k0), "fn_name", 7);
		off += sizeof(k0) + 8;
		memcpy(kb + off, &k1, sizeof(k1));
		off += sizeof(k1);
		frame(&s, MSG_SHIP_KSYMS, kb, (uint32_t)off);
	}
	{
		struct ship_stack st = stack(2, 0, 2, KERNEL_BASE);
		struct ship_count c = { .tgid = 1, .ustack = -1, .kstack = 2, .value = 4 };

		frame(&s, MSG_SHIP_STACKS, &st, sizeof(st));
		counts(&s, 5, &c, 1);
	}
	end(&s, 5);
	save("kernel_names", &s);

	/* Two targets, a stack id reused between flushes, a library mapping. pprof output. */
	s.len = 0;
	begin(&s, 4, 2, two);
	{
		struct ship_stack st = stack(9, 1, 2, USER_BASE);
		struct ship_count c = { .tgid = 1, .ustack = 9, .kstack = -1, .value = 2 };

		frame(&s, MSG_SHIP_STACKS, &st, sizeof(st));
		counts(&s, 4, &c, 1);
		st = stack(9, 1, 4, LIB_BASE);
		frame(&s, MSG_SHIP_STACKS, &st, sizeof(st));
		c.tgid = 2;
		counts(&s, 4, &c, 1);
	}
	end(&s, 4);
	save("reused_stack_id", &s);

	/* Samples without stacks, then frames after the end, which are moot. SVG output. */
	s.len = 0;
	begin(&s, 5, 1, one);
	{
		struct ship_count c[2] = {
			{ .tgid = 1, .ustack = -1, .kstack = -1, .value = 5 },
			{ .tgid = 1, .ustack = -1, .kstack = -1, .value = 6 },
		};

		counts(&s, 5, c, 2);
		end(&s, 5);
		counts(&s, 5, c, 1);
	}
	save("no_stacks_then_moot", &s);

	/* A worker that dies mid-frame: what came before is written. */
	s.len = 0;
	begin(&s, 6, 1, one);
	{
		struct ship_stack st = stack(1, 0, 1, KERNEL_BASE);
		struct ship_count c = { .tgid = 1, .ustack = -1, .kstack = 1, .value = 1 };

		frame(&s, MSG_SHIP_STACKS, &st, sizeof(st));
		counts(&s, 6, &c, 1);
		frame(&s, MSG_SHIP_STACKS, &st, sizeof(st));
		s.len -= sizeof(st) / 2;
	}
	save("truncated", &s);

	/* OFF_CPU: values are nanoseconds off the CPU, value2 the switches. SVG output. */
	s.len = 0;
	begin_type(&s, 8, TASK_OFF_CPU, 1, one);
	{
		struct ship_stack st[2] = { stack(1, 1, 2, USER_BASE),
					    stack(2, 0, 3, KERNEL_BASE) };
		struct ship_count c[3] = {
			{ .tgid = 1, .ustack = 1, .kstack = 2, .value = 1500000, .value2 = 3 },
			{ .tgid = 1, .ustack = 1, .kstack = -1, .value = 499, .value2 = 1 },
			{ .tgid = 1, .ustack = -1, .kstack = 2, .value = 2000, .value2 = 2 },
		};

		frame(&s, MSG_SHIP_STACKS, st, sizeof(st));
		counts(&s, 8, c, 3);
	}
	end(&s, 8);
	save("off_cpu_task", &s);

	/* Only the beginning. */
	s.len = 0;
	begin(&s, 7, 1, one);
	save("begin_only", &s);
}

static void text_samples(void)
{
	/* clang-format off */
	static const char kallsyms[] =
		"0000000000000000 A fixed_percpu_data\n"
		"ffffffff81000000 T _stext\n"
		"ffffffff81000000 T startup_64\n"
		"ffffffff81000070 T secondary_startup_64\n"
		"ffffffff81000100 t verify_cpu\n"
		"ffffffff81001000 T schedule\n"
		"ffffffff81001000 W schedule_alias\n"
		"ffffffff81002000 t __do_softirq\n"
		"ffffffff81003000 T __entry_text_end\n"
		"ffffffff81004000 T _etext\n"
		"ffffffff82000000 D jiffies\n"
		"ffffffff82100000 b some_bss\n"
		"ffffffffc0200000 t nf_hook\t[nf_conntrack]\n"
		"ffffffffc0200100 T nf_conntrack_in\t[nf_conntrack]\n"
		"ffffffffc0300000 t ext4_read\t[ext4]\n"
		"ffffffffc0300040 d ext4_data\t[ext4]\n"
		"ffffffffc0400000 U undefined_sym\n";
	static const char maps[] =
		"55d4c8a00000-55d4c8a02000 r--p 00000000 08:01 1311 /usr/bin/prog\n"
		"55d4c8a02000-55d4c8a08000 r-xp 00002000 08:01 1311 /usr/bin/prog\n"
		"55d4c8a08000-55d4c8a0a000 rw-p 00008000 08:01 1311 /usr/bin/prog\n"
		"55d4c9c00000-55d4c9c21000 rw-p 00000000 00:00 0                          [heap]\n"
		"7f1e2c000000-7f1e2c028000 r--p 00000000 fe:01 2621 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
		"7f1e2c028000-7f1e2c19d000 r-xp 00028000 fe:01 2621 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
		"7f1e2c400000-7f1e2c401000 r-xp 00000000 00:1a 77 /tmp/jit (deleted)\n"
		"7f1e2c500000-7f1e2c501000 r-xp 00000000 00:1a 78 /path with spaces/lib.so\n"
		"7ffd1b5e4000-7ffd1b605000 rw-p 00000000 00:00 0                          [stack]\n"
		"7ffd1b7b6000-7ffd1b7b8000 r-xp 00000000 00:00 0                          [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

	static const char perf_map[] =
		"7f3a40001000 40 Interpreter\n"
		"7f3a40001040 1c0 LazyCompile:~main /app/index.js:1\n"
		"0x7f3a40002000 0x100 java.lang.String::hashCode()\n"
		"7f3a40002100 0 zero_sized\n"
		"7f3a40002080 100 overlapping_entry\n"
		"7f3a40003000 ffffffffffffffff huge\n"
		"not a line\n"
		"7f3a40004000 20 _ZN2v88internal7Isolate4InitEv\n";
	/* clang-format on */

	write_file("fuzz_maps_kallsyms", "perf-map.txt", perf_map, sizeof(perf_map) - 1);
	write_file("fuzz_maps_kallsyms", "kallsyms.txt", kallsyms, sizeof(kallsyms) - 1);
	write_file("fuzz_maps_kallsyms", "maps.txt", maps, sizeof(maps) - 1);
}

/* fuzz_netrec: frames of a NETWORK task (op byte, u16 length, payload), see fuzz_netrec.c. */
struct nbuf {
	uint8_t b[SEED_MAX];
	size_t len;
};

static void nput(struct nbuf *n, const void *p, size_t len)
{
	if (n->len + len > sizeof(n->b)) {
		fprintf(stderr, "gen_corpus: netrec seed over %d bytes\n", SEED_MAX);
		exit(1);
	}
	memcpy(n->b + n->len, p, len);
	n->len += len;
}

/* Starts a frame: returns the offset of its payload, whose length net_end fills in. */
static size_t net_begin(struct nbuf *n, uint8_t op, uint32_t count)
{
	struct ship_net_hdr h = { .task_id = 7, .count = count };
	uint8_t pre[3] = { op, 0, 0 };
	size_t at;

	nput(n, pre, sizeof(pre));
	at = n->len;
	nput(n, &h, sizeof(h));
	return at;
}

static void net_end(struct nbuf *n, size_t at)
{
	size_t len = n->len - at;

	n->b[at - 2] = (uint8_t)len;
	n->b[at - 1] = (uint8_t)(len >> 8);
}

static void net_data_n(struct nbuf *n, uint64_t id, uint32_t tgid, uint8_t dir, uint64_t seq,
		       uint64_t ts, const void *s, size_t cap)
{
	static const uint8_t zero[8];
	size_t len = (sizeof(struct net_rec_data) + cap + 7) & ~(size_t)7;
	struct net_rec_data d = {
		.hdr = { .kind = NET_REC_DATA, .len = (uint32_t)len },
		.conn_id = id,
		.start_ns = ts,
		.end_ns = ts,
		.seq = seq,
		.tgid = tgid,
		.actual = (uint32_t)cap,
		.captured = (uint16_t)cap,
		.dir = dir,
		.fn = dir ? NET_FN_READ : NET_FN_WRITE,
		.proto = NET_PROTO_HTTP1,
	};

	nput(n, &d, sizeof(d));
	nput(n, s, cap);
	nput(n, zero, len - sizeof(d) - cap);
}

static void net_data(struct nbuf *n, uint64_t id, uint32_t tgid, uint8_t dir, uint64_t seq,
		     uint64_t ts, const char *s)
{
	net_data_n(n, id, tgid, dir, seq, ts, s, strlen(s));
}

/* gzip of {"a":[1,2,3],"b":"hello"} */
static const uint8_t gz_json[] = {
	0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xab, 0x56, 0x4a, 0x54, 0xb2,
	0x8a, 0x36, 0xd4, 0x31, 0xd2, 0x31, 0x8e, 0xd5, 0x51, 0x4a, 0x52, 0xb2, 0x52, 0xca, 0x48,
	0xcd, 0xc9, 0xc9, 0x57, 0xaa, 0x05, 0x00, 0xc3, 0xe2, 0x3b, 0x6e, 0x19, 0x00, 0x00, 0x00,
};
static const char gz_head[] = "HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\n"
			      "Content-Encoding: gzip\r\nContent-Length: 45\r\n\r\n";

static struct net_conn net_conn(uint64_t id, uint32_t tgid, uint8_t role, uint16_t lport,
				uint16_t rport)
{
	struct net_conn c = {
		.id = id,
		.tgid = tgid,
		.fd = 4,
		.role = role,
		.family = 2, /* AF_INET */
		.proto = NET_PROTO_HTTP1,
		.lport = lport,
		.rport = rport,
		.laddr = { 127, 0, 0, 1 },
		.raddr = { 127, 0, 0, 1 },
		.connect_exe_ns = 30000,
	};

	c.dir[0].count = 2;
	c.dir[0].bytes = 120;
	c.dir[0].exe_ns = 9000;
	c.dir[0].hist[1] = 2;
	c.rtt_count = 1;
	c.rtt_us = 40;
	c.rtt_hist[1] = 1;
	return c;
}

/* An access-log call record (NET_REC_CALL) of conn id, dir, moving actual bytes. */
static void net_call(struct nbuf *n, uint64_t id, uint32_t tgid, uint8_t dir, uint64_t start,
		     uint64_t end, uint32_t actual)
{
	struct net_rec_call r = {
		.hdr = { .kind = NET_REC_CALL, .len = sizeof(r) },
		.conn_id = id,
		.start_ns = start,
		.end_ns = end,
		.tgid = tgid,
		.actual = actual,
		.dir = dir,
		.fn = dir ? NET_FN_READ : NET_FN_WRITEV,
		.proto = NET_PROTO_HTTP1,
		.ifindex = 2,
		.packets = 1,
		.pkt_bytes = actual,
		.l2_ns = 3000,
	};

	nput(n, &r, sizeof(r));
}

static void net_open(struct nbuf *n, const struct net_conn *c, int32_t err)
{
	struct net_rec_open o = { .hdr = { .kind = NET_REC_OPEN, .len = sizeof(o) }, .err = err };

	o.conn = *c;
	o.conn.open_ns = 500;
	nput(n, &o, sizeof(o));
}

static void netrec_seeds(void)
{
	static const char req[] =
		"GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nsw8: 1-dA==-cw==-1-YQ==-YQ==-YQ==-YQ==\r\n\r\n";
	static const char resp[] = "HTTP/1.1 503 Unavailable\r\nContent-Length: 2\r\n\r\nno";
	struct net_conn c = net_conn(1, 1, 1, 40000, 8080), s = net_conn(2, 2, 2, 8080, 40000);
	struct net_rec_close cl = { .hdr = { .kind = NET_REC_CLOSE, .len = sizeof(cl) } };
	struct nbuf n = { .len = 0 };
	size_t at;

	at = net_begin(&n, 0, 4);
	net_data(&n, 1, 1, 0, 1, 1000, req);
	net_data(&n, 2, 2, 1, 1, 2000, req);
	net_data(&n, 2, 2, 0, 1, 90000000, resp);
	net_data(&n, 1, 1, 1, 1, 91000000, resp);
	net_end(&n, at);
	at = net_begin(&n, 1 | 2 | 4, 2);
	nput(&n, &c, sizeof(c));
	nput(&n, &s, sizeof(s));
	net_end(&n, at);
	write_file("fuzz_netrec", "http_pair", n.b, n.len);

	/* a close after the connection was flushed once, then a JSON report */
	n.len = 0;
	at = net_begin(&n, 1 | 2, 1);
	nput(&n, &c, sizeof(c));
	net_end(&n, at);
	at = net_begin(&n, 2 | 4 | 8, 1);
	cl.conn = c;
	cl.conn.flags = 1; /* NET_CONN_CLOSED */
	cl.conn.close_exe_ns = 5000;
	nput(&n, &cl, sizeof(cl));
	net_end(&n, at);
	write_file("fuzz_netrec", "late_close", n.b, n.len);

	/* a hole in the sequence, a replay, a record of an unknown kind */
	n.len = 0;
	at = net_begin(&n, 2 | 4, 4);
	net_data(&n, 3, 1, 0, 1, 10, req);
	net_data(&n, 3, 1, 0, 4, 20, req);
	net_data(&n, 3, 1, 0, 4, 30, req);
	{
		struct net_rec_hdr h = { .kind = 9, .len = 16 };
		uint8_t pad[8] = { 0 };

		nput(&n, &h, sizeof(h));
		nput(&n, pad, sizeof(pad));
	}
	net_end(&n, at);
	write_file("fuzz_netrec", "lost_and_garbage", n.b, n.len);

	/* a sampled 500 with a gzip body: its span attached events */
	n.len = 0;
	at = net_begin(&n, 0, 2);
	net_data(&n, 2, 2, 1, 1, 2000, req);
	{
		uint8_t msg[256];

		memcpy(msg, gz_head, sizeof(gz_head) - 1);
		memcpy(msg + sizeof(gz_head) - 1, gz_json, sizeof(gz_json));
		net_data_n(&n, 2, 2, 0, 1, 90000000, msg, sizeof(gz_head) - 1 + sizeof(gz_json));
	}
	net_end(&n, at);
	at = net_begin(&n, 1 | 2, 1);
	nput(&n, &s, sizeof(s));
	net_end(&n, at);
	write_file("fuzz_netrec", "gzip_events", n.b, n.len);

	/* a request whose first 4 bytes came by a read of their own (held), then its answer */
	n.len = 0;
	at = net_begin(&n, 0, 2);
	net_data(&n, 2, 2, 1, 1, 3000, req);
	{
		/* records follow the 3-byte op and length: not aligned, edited by copy */
		uint8_t *p = n.b + n.len -
			     ((sizeof(struct net_rec_data) + sizeof(req) - 1 + 7) & ~(size_t)7);
		struct net_rec_data d;

		memcpy(&d, p, sizeof(d));
		d.held = 4;
		d.start_ns = 1000;
		d.held_end_ns = 2000;
		memcpy(p, &d, sizeof(d));
	}
	net_data(&n, 2, 2, 0, 1, 90000000, resp);
	net_end(&n, at);
	at = net_begin(&n, 1 | 2, 1);
	nput(&n, &s, sizeof(s));
	net_end(&n, at);
	write_file("fuzz_netrec", "held_header", n.b, n.len);

	/*
	 * The access log: a connect and an accept, each call of an exchange with its record, a
	 * failed connect, the close, flushes between (op bit 4).
	 */
	n.len = 0;
	at = net_begin(&n, 16, 11);
	net_open(&n, &c, 0);
	net_open(&n, &s, 0);
	net_call(&n, 1, 1, 0, 900, 1000, sizeof(req) - 1);
	net_data(&n, 1, 1, 0, 1, 1000, req);
	net_call(&n, 2, 2, 1, 1500, 2000, sizeof(req) - 1);
	net_data(&n, 2, 2, 1, 1, 2000, req);
	net_call(&n, 2, 2, 0, 89000000, 90000000, sizeof(resp) - 1);
	net_data(&n, 2, 2, 0, 1, 90000000, resp);
	net_call(&n, 1, 1, 1, 90500000, 91000000, sizeof(resp) - 1);
	net_data(&n, 1, 1, 1, 1, 91000000, resp);
	{
		struct net_conn f = net_conn(0, 1, 1, 40001, 9);

		net_open(&n, &f, -111);
	}
	net_end(&n, at);
	at = net_begin(&n, 16, 1);
	cl.conn = c;
	cl.conn.flags = 1; /* NET_CONN_CLOSED */
	cl.conn.close_ns = 92000000;
	cl.conn.close_exe_ns = 5000;
	nput(&n, &cl, sizeof(cl));
	net_end(&n, at);
	write_file("fuzz_netrec", "access_log", n.b, n.len);
}

/* fuzz_netcontent: u16 max size, then a message. */
static void netcontent_seed(const char *name, uint16_t max, const void *msg, size_t len)
{
	uint8_t b[1024];

	if (len + 2 > sizeof(b))
		exit(1);
	b[0] = (uint8_t)max;
	b[1] = (uint8_t)(max >> 8);
	memcpy(b + 2, msg, len);
	write_file("fuzz_netcontent", name, b, len + 2);
}

static void netcontent_seeds(void)
{
	static const char plain[] = "GET /a HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\n"
				    "Content-Length: 5\r\n\r\nhello";
	static const char chunked[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				      "Transfer-Encoding: chunked\r\n\r\n3;x=1\r\n{\"a\r\n"
				      "4\r\n\":1}\r\n0\r\n\r\n";
	static const char binary[] = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG";
	uint8_t msg[256];

	netcontent_seed("plain", 0, plain, sizeof(plain) - 1);
	netcontent_seed("plain_cut", 40, plain, sizeof(plain) - 1);
	netcontent_seed("chunked", 1000, chunked, sizeof(chunked) - 1);
	netcontent_seed("binary", 20, binary, sizeof(binary) - 1);
	memcpy(msg, gz_head, sizeof(gz_head) - 1);
	memcpy(msg + sizeof(gz_head) - 1, gz_json, sizeof(gz_json));
	netcontent_seed("gzip", 120, msg, sizeof(gz_head) - 1 + sizeof(gz_json));
}

/* ---- fuzz_pycode: mode, code records, native frames for the splice, snapshots ---- */

struct pyseed {
	uint8_t buf[SEED_MAX];
	size_t len;
};

static void pput(struct pyseed *p, const void *d, size_t n)
{
	if (p->len + n > sizeof(p->buf))
		die("pycode seed too large");
	memcpy(p->buf + p->len, d, n);
	p->len += n;
}

static void pput16(struct pyseed *p, size_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	pput(p, b, 2);
}

struct pyrec {
	uint64_t code;
	uint16_t version;
	uint8_t name_kind;
	const void *name;
	uint16_t name_len;
	const void *lines;
	uint16_t lines_len;
	uint8_t flags;
};

/* A MSG_SHIP_PYCODES payload of task 7, pid 42 (fuzz_pycode.c's). */
static size_t pycodes_payload(uint8_t *out, const struct pyrec *r, uint32_t n)
{
	struct ship_pycodes_hdr h = { .task_id = 7, .count = n };
	size_t off = sizeof(h);

	memcpy(out, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		struct sc_pycode c = { .kind = SC_REC_PYCODE,
				       .tgid = 42,
				       .code = r[i].code,
				       .stamp = 1,
				       .firstlineno = 10,
				       .version = r[i].version,
				       .name_len = r[i].name_len,
				       .file_len = 10,
				       .lines_len = r[i].lines_len,
				       .name_kind = r[i].name_kind,
				       .file_kind = 1,
				       .flags = r[i].flags };
		size_t len = (offsetof(struct sc_pycode, data) + PY_NAME_MAX + PY_FILE_MAX +
			      r[i].lines_len + 7) &
			     ~(size_t)7;

		memcpy(c.data, r[i].name, r[i].name_len);
		memcpy(c.data + PY_NAME_MAX, "/srv/x.py", 10);
		memcpy(c.data + PY_NAME_MAX + PY_FILE_MAX, r[i].lines, r[i].lines_len);
		memcpy(out + off, &c, len);
		off += len;
	}
	return off;
}

static void pycode_seed(const char *name, uint8_t mode, const struct pyrec *r, uint32_t n,
			const char *natives, uint32_t npy)
{
	static uint8_t codes[SEED_MAX];
	struct ship_snapshots_hdr h = { .task_id = 7, .count = 1 };
	struct ship_snapshot snap = { .tgid = 42,
				      .stack_len = 64,
				      .value = 1,
				      .ip = 0x401000,
				      .sp = 0x7ffc0000,
				      .npy = npy,
				      .pystatus = PY_ST_OK };
	uint8_t stack[64] = { 0 };
	struct pyseed p = { .len = 0 };
	size_t clen = pycodes_payload(codes, r, n);

	pput(&p, &mode, 1);
	pput16(&p, clen);
	pput(&p, codes, clen);
	pput16(&p, strlen(natives));
	pput(&p, natives, strlen(natives));
	pput(&p, &h, sizeof(h));
	pput(&p, &snap, sizeof(snap));
	for (uint32_t i = 0; i < npy; i++) {
		struct py_frame f = { .code = r[i % n].code,
				      .stamp = 1,
				      .instr = 2 * i | (i % 2 ? PY_FRAME_ENTRY : 0) };

		pput(&p, &f, sizeof(f));
	}
	pput(&p, stack, sizeof(stack));
	write_file("fuzz_pycode", name, p.buf, p.len);
}

/* A node target's: JavaScript function records and a snapshot whose frames are theirs. */
static void v8_seed(const char *name, uint32_t njs)
{
	static uint8_t codes[SEED_MAX];
	struct ship_pycodes_hdr ch = { .task_id = 7, .count = 2 };
	struct ship_snapshots_hdr h = { .task_id = 7, .count = 1 };
	struct ship_snapshot snap = { .tgid = 42,
				      .stack_len = 64,
				      .value = 1,
				      .ip = 0x401000,
				      .sp = 0x7ffc0000,
				      .npy = njs,
				      .pystatus = SC_RT_STATUS(SC_RT_NODE, V8_ST_OK) };
	struct sc_v8func r[2] = { { .kind = SC_REC_V8FUNC,
				    .tgid = 42,
				    .sfi = 0xa1,
				    .stamp = 1,
				    .name_len = 5,
				    .name_kind = 1,
				    .file_len = 8,
				    .file_kind = 1 },
				  { .kind = SC_REC_V8FUNC,
				    .tgid = 42,
				    .sfi = 0xb1,
				    .stamp = 1,
				    .inferred_len = 6,
				    .inferred_kind = 2,
				    .flags = V8_F_NAME_CUT | V8_F_FILE_TAIL } };
	/* alpha's table: bytecodes 0, 4 and 8 at "(n)" and the two loops' calls (V8's encoding). */
	static const uint8_t tab[] = { 0x00, 0xa4, 0x01, 0x08, 0x40, 0x08, 0x3c };
	static const uint8_t bot[] = { 0x04, 0x08, 0x08, 0x08, 0x08 };
	static const uint8_t bcs[] = { 0x0b, 0x01, 0x00, 0x0b, 0x01, 0x00, 0x0b, 0x01, 0x0b, 0x01 };
	static const char src[] = "(n) {\n\tfor (;;) a();\n\tfor (;;) b();\n}";
	size_t clen = sizeof(ch), step[2];
	uint8_t stack[64] = { 0 };
	struct pyseed p = { .len = 0 };
	uint8_t mode = 0;

	memcpy(r[0].data, "alpha", 5);
	memcpy(r[0].data + 2 * V8_NAME_MAX, "/srv/a.js", 8);
	r[0].line = 3;
	r[0].start = 40;
	r[0].pos_len = sizeof(tab);
	r[0].src_len = sizeof(src) - 1;
	memcpy(r[0].data + V8_STRINGS, tab, sizeof(tab));
	/* Baseline code: a 4-byte prologue, then bytecodes 0 (LdaSmi, 2 bytes), 2 (Wide LdaSmi,
	 * 4), 6, 8 (LdaSmi) at pc deltas 8, 8, 8, 8. */
	r[0].bot_len = sizeof(bot);
	r[0].bc_len = sizeof(bcs);
	memcpy(r[0].data + V8_STRINGS + sizeof(tab), bot, sizeof(bot));
	memcpy(r[0].data + V8_STRINGS + sizeof(tab) + sizeof(bot), bcs, sizeof(bcs));
	memcpy(r[0].data + V8_STRINGS + sizeof(tab) + sizeof(bot) + sizeof(bcs), src,
	       sizeof(src) - 1);
	for (int i = 0; i < 2; i++)
		step[i] = (V8_REC_LEN(&r[i]) + 7) & ~(size_t)7;
	memcpy(r[1].data + V8_NAME_MAX, "F\0o\0\xe9\0", 6);
	memset(codes, 0, sizeof(codes));
	memcpy(codes, &ch, sizeof(ch));
	for (int i = 0; i < 2; clen += step[i], i++)
		memcpy(codes + clen, &r[i], V8_REC_LEN(&r[i]));
	pput(&p, &mode, 1);
	pput16(&p, clen);
	pput(&p, codes, clen);
	pput16(&p, 3);
	pput(&p, "\0\0\0", 3);
	pput(&p, &h, sizeof(h));
	pput(&p, &snap, sizeof(snap));
	for (uint32_t i = 0; i < njs; i++) {
		/* alpha's frames at bytecode offsets 0, 4, 8 and past its table, then in its
		 * baseline code at pc offsets 3 (the prologue), 11, 19, 27. */
		uint64_t a = i < 8 ? (uint64_t)(1 + 4 * (i / 2)) << V8_FRAME_SFI_BITS
				   : V8_FRAME_BASELINE | (uint64_t)(4 + 8 * ((i - 8) / 2))
								 << V8_FRAME_SFI_BITS;
		struct py_frame f = { .code = i % 2 ? 0xb1 : 0xa1 | a,
				      .stamp = 1,
				      .instr = 0x401000 + 16 * i };

		pput(&p, &f, sizeof(f));
	}
	pput(&p, stack, sizeof(stack));
	write_file("fuzz_pycode", name, p.buf, p.len);
}

static void pycode_seeds(void)
{
	static const uint8_t loc311[] = { 0x80, 0x00, 0xd9, 0x04, 0x05, 0xf0, 0x03, 0x01, 0x02 };
	static const uint8_t lnotab[] = { 0x00, 0x01, 0x08, 0x01, 0x08, 0xff };
	static const uint8_t lt310[] = { 0x06, 0x01, 0x04, 0x80, 0x00, 0x02, 0x08, 0xfe };
	static const uint8_t ucs2[] = { 'f', 0, 0x2d, 0x4e, 0x00, 0xd8 };
	static const uint8_t ucs4[] = { 'g', 0, 0, 0, 0x00, 0xf6, 0x01, 0x00 };
	struct pyrec r[3] = {
		{ 0xa0, 0x030b, 1, "Cls.m\xe9", 6, loc311, sizeof(loc311), 0 },
		{ 0xb0, 0x030c, 2, ucs2, sizeof(ucs2), loc311, sizeof(loc311), PY_CODE_NAME_CUT },
		{ 0xc0, 0x030d, 4, ucs4, sizeof(ucs4), loc311, sizeof(loc311), PY_CODE_FILE_TAIL },
	};
	struct pyrec old[2] = { { 0xa0, 0x0308, 1, "f38", 3, lnotab, sizeof(lnotab), 0 },
				{ 0xb0, 0x030a, 1, "f310", 4, lt310, sizeof(lt310), 0 } };

	/* natives: bit 0 the loop, bit 1 the interpreter's file */
	pycode_seed("each_kind", 0x06, r, 3, "\x02\x03\x02\x03\x00\x03\x02", 3);
	pycode_seed("each_kind_all", 0x17, r, 3, "\x03\x02\x03", 5);
	pycode_seed("v38_v310", 0x00, old, 2, "\x03\x03", 2);
	pycode_seed("v310_table", 0x04, old + 1, 1, "\x02", 1);
	v8_seed("v8_records", 3);
	v8_seed("v8_lines", 16);
}

/* ---- fuzz_pycode with Java: method records and snapshots of SC_RT_JAVA frames ---- */

struct jrec {
	uint64_t method;
	uint16_t jdk;
	const char *cls, *name, *file;
	const uint8_t *lines;
	uint16_t lines_len;
	uint8_t flags;
};

/* A MSG_SHIP_PYCODES payload of Java method records (SC_REC_JMETHOD), task 7, pid 42. */
static size_t jmethods_payload(uint8_t *out, const struct jrec *r, uint32_t n)
{
	struct ship_pycodes_hdr h = { .task_id = 7, .count = n };
	size_t off = sizeof(h);

	memcpy(out, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		struct sc_jmethod j = { .kind = SC_REC_JMETHOD,
					.tgid = 42,
					.method = r[i].method,
					.stamp = 1,
					.jdk = r[i].jdk,
					.code_size = 32,
					.class_len = (uint16_t)strlen(r[i].cls),
					.name_len = (uint16_t)strlen(r[i].name),
					.sig_len = 3,
					.file_len = (uint16_t)strlen(r[i].file),
					.lines_len = r[i].lines_len,
					.flags = r[i].flags };
		size_t len =
			(offsetof(struct sc_jmethod, data) + JAVA_STRINGS + r[i].lines_len + 7) &
			~(size_t)7;

		memcpy(j.data, r[i].cls, j.class_len);
		memcpy(j.data + JAVA_CLASS_MAX, r[i].name, j.name_len);
		memcpy(j.data + JAVA_CLASS_MAX + JAVA_NAME_MAX, "()V", 3);
		memcpy(j.data + JAVA_CLASS_MAX + JAVA_NAME_MAX + JAVA_SIG_MAX, r[i].file,
		       j.file_len);
		memcpy(j.data + JAVA_STRINGS, r[i].lines, r[i].lines_len);
		memcpy(out + off, &j, len);
		off += len;
	}
	return off;
}

/* natives: as pycode_seed's, for py_splice only (the snapshot's own native frames come from its
 * stack) */
static void jmethod_seed(const char *name, uint8_t mode, const struct jrec *r, uint32_t n,
			 const char *natives, const uint32_t *instr, uint32_t njava,
			 uint32_t status)
{
	static uint8_t codes[SEED_MAX];
	struct ship_snapshots_hdr h = { .task_id = 7, .count = 1 };
	struct ship_snapshot snap = { .tgid = 42,
				      .stack_len = 64,
				      .value = 1,
				      .ip = 0x401000,
				      .sp = 0x7ffc0000,
				      .npy = njava,
				      .pystatus = SC_RT_STATUS(SC_RT_JAVA, status) };
	uint8_t stack[64] = { 0 };
	struct pyseed p = { .len = 0 };
	size_t clen = jmethods_payload(codes, r, n);

	pput(&p, &mode, 1);
	pput16(&p, clen);
	pput(&p, codes, clen);
	pput16(&p, strlen(natives));
	pput(&p, natives, strlen(natives));
	pput(&p, &h, sizeof(h));
	pput(&p, &snap, sizeof(snap));
	for (uint32_t i = 0; i < njava; i++) {
		/* The last frame's method has no record: named JAVA_UNKNOWN_NAME. */
		struct py_frame f = { .code = i + 1 < njava ? r[i % n].method : 0xdead0,
				      .stamp = 1,
				      .instr = instr[i] };

		pput(&p, &f, sizeof(f));
	}
	pput(&p, stack, sizeof(stack));
	write_file("fuzz_pycode", name, p.buf, p.len);
}

static void jmethod_seeds(void)
{
	/* tests/unit/test_jlines.c's tables: (bci 0, line 10), (5, 12), (9, 11). */
	static const uint8_t tab17[] = { 0xff, 0x00, 0x14, 0x2a, 0xff, 0x08, 0x01, 0x00 };
	static const uint8_t tab25[] = { 0xff, 0x01, 0x15, 0x2a, 0xff, 0x09, 0x02, 0x00 };
	static const struct jrec r[3] = {
		{ 0x7f0000001000, 17, "rover/test/A", "burn", "A.java", tab17, sizeof(tab17), 0 },
		{ 0x7f0000002000, 25, "rover/test/B$1", "<init>", "B.java", tab25, sizeof(tab25),
		  JAVA_M_HAS_LINES },
		{ 0x7f0000003000, 25, "java/lang/Thread", "sleep\xc3\xa9", "Thread.java", tab25, 3,
		  JAVA_M_CUT | JAVA_M_LINES_CUT },
	};
	static const uint32_t instr[4] = { JAVA_FRAME_INTERPRETED | 5, JAVA_FRAME_COMPILED,
					   JAVA_FRAME_INTERPRETED | JAVA_FRAME_NO_BCI,
					   JAVA_FRAME_COMPILED | 9 };

	/* Mode bit 5: the line tables decoded as JDK 25's (fuzz_pycode.c). */
	jmethod_seed("java_each_kind", 0x00, r, 3, "\x01\x01\x02\x01", instr, 4, JAVA_ST_OK);
	jmethod_seed("java_jdk25_cut", 0x30, r + 1, 2, "\x02", instr, 3, JAVA_ST_CUT);
	jmethod_seed("java_no_thread", 0x20, r, 1, "\x01\x01", instr, 0, JAVA_ST_NO_THREAD);
}

/* ---- fuzz_pycode with Java compiled frames: nmethod records (SC_REC_JNMETHOD) ---- */

/* One UNSIGNED5 number as HotSpot writes it (x: 1 from JDK 20). */
static size_t u5_put(uint8_t *out, uint32_t v, unsigned x)
{
	const uint32_t l = 192 - x;
	size_t n = 0;

	for (int i = 0; i < 4 && v >= l; i++) {
		v -= l;
		out[n++] = (uint8_t)(l + v % 64 + x);
		v /= 64;
	}
	out[n++] = (uint8_t)(v + x);
	return n;
}

/* A scope: sender, metadata index, bci + 1, then three empty offsets; its offset. */
static uint32_t scope_put(uint8_t *buf, size_t *at, uint32_t sender, uint32_t mi, uint32_t bci,
			  unsigned x)
{
	uint32_t off = (uint32_t)*at;

	*at += u5_put(buf + *at, sender, x);
	*at += u5_put(buf + *at, mi, x);
	*at += u5_put(buf + *at, bci + 1, x);
	for (int i = 0; i < 3; i++)
		*at += u5_put(buf + *at, 0, x);
	return off;
}

/*
 * The Java seeds' methods r[0..3) as one nmethod's (at 0x7f0000900000, stamp 5), JDK jdk: r[0]
 * inlines r[1] at bci 5, which inlines r[2] at bci 200; PcDescs at 0x10 (r[0]), 0x40 (r[1] in
 * r[0]), 0x80 (all three), 0x90 (none); metadata a Klass then the three. Flags as given.
 */
static size_t jnm_record(uint8_t *out, uint16_t jdk, const struct jrec *r, uint16_t flags)
{
	static const int32_t pcs[6] = { -1, 0x10, 0x40, 0x80, 0x90, 0x7fffffff };
	struct sc_jnmethod *n = calloc(1, sizeof(*n));
	uint8_t scopes[128];
	uint32_t sc[6] = { 0 }, outer;
	unsigned x = jdk >= 20;
	size_t at = 1, len;

	if (!n)
		abort();
	scopes[0] = 0; /* offset 0 is "no scope" */
	sc[1] = scope_put(scopes, &at, 0, 2, 9, x);
	outer = scope_put(scopes, &at, 0, 2, 5, x);
	sc[2] = scope_put(scopes, &at, outer, 3, 2, x);
	sc[3] = scope_put(scopes, &at, outer, 3, 200, x);
	sc[3] = scope_put(scopes, &at, sc[3], 4, 4, x);
	*n = (struct sc_jnmethod){ .kind = SC_REC_JNMETHOD,
				   .tgid = 42,
				   .nmethod = 0x7f0000900000,
				   .stamp = 5,
				   .jdk = jdk,
				   .flags = flags,
				   .method = r[0].method,
				   .method_stamp = 1,
				   .nmeta = 4,
				   .pcs_len = 6 * 16,
				   .scopes_len = (uint16_t)at,
				   .pc_size = 16,
				   .pc_off = 0,
				   .scope_off = 4 };
	n->meta[0] = (struct jnm_meta){ .method = 0x7f0000800000 };
	for (int i = 0; i < 3; i++)
		n->meta[i + 1] = (struct jnm_meta){ .method = r[i].method, .stamp = 1 };
	for (int i = 0; i < 6; i++) {
		memcpy(n->data + 16 * i, &pcs[i], 4);
		memcpy(n->data + 16 * i + 4, &sc[i], 4);
	}
	memcpy(n->data + 6 * 16, scopes, at);
	len = (offsetof(struct sc_jnmethod, data) + 6 * 16 + at + 7) & ~(size_t)7;
	memcpy(out, n, len);
	free(n);
	return len;
}

static void jnm_seed(const char *name, uint8_t mode, uint16_t jdk, const struct jrec *r,
		     uint16_t flags)
{
	static uint8_t codes[SEED_MAX];
	static const uint32_t instr[6] = {
		JAVA_FRAME_COMPILED | JAVA_FRAME_TOP | 0x40,
		JAVA_FRAME_COMPILED | 0x80,
		JAVA_FRAME_COMPILED | 0x90,
		JAVA_FRAME_COMPILED | JAVA_FRAME_NO_BCI,
		JAVA_FRAME_INTERPRETED | 5,
		JAVA_FRAME_COMPILED | 0x10,
	};
	struct ship_snapshots_hdr h = { .task_id = 7, .count = 1 };
	struct ship_snapshot snap = { .tgid = 42,
				      .stack_len = 64,
				      .value = 1,
				      .ip = 0x401000,
				      .sp = 0x7ffc0000,
				      .npy = 6,
				      .pystatus = SC_RT_STATUS(SC_RT_JAVA, JAVA_ST_OK) };
	struct ship_pycodes_hdr ch;
	uint8_t stack[64] = { 0 };
	struct pyseed p = { .len = 0 };
	size_t clen = jmethods_payload(codes, r, 3);

	clen += jnm_record(codes + clen, jdk, r, flags);
	memcpy(&ch, codes, sizeof(ch));
	ch.count++;
	memcpy(codes, &ch, sizeof(ch));
	pput(&p, &mode, 1);
	pput16(&p, clen);
	pput(&p, codes, clen);
	pput16(&p, 2);
	pput(&p, "\x01\x01", 2);
	pput(&p, &h, sizeof(h));
	pput(&p, &snap, sizeof(snap));
	for (uint32_t i = 0; i < 6; i++) {
		/* The compiled frames: the nmethod's, but the fifth (an interpreted frame of r[0]). */
		struct py_frame f = { .code = i == 4 ? r[0].method : 0x7f0000900000,
				      .stamp = i == 4 ? 1 : 5,
				      .instr = instr[i] };

		pput(&p, &f, sizeof(f));
	}
	pput(&p, stack, sizeof(stack));
	write_file("fuzz_pycode", name, p.buf, p.len);
}

static void jnm_seeds(void)
{
	static const uint8_t tab17[] = { 0xff, 0x00, 0x14, 0x2a, 0xff, 0x08, 0x01, 0x00 };
	static const uint8_t tab25[] = { 0xff, 0x01, 0x15, 0x2a, 0xff, 0x09, 0x02, 0x00 };
	static const struct jrec r17[3] = {
		{ 0x7f0000001000, 17, "rover/test/Inline", "hot", "Inline.java", tab17,
		  sizeof(tab17), JAVA_M_HAS_LINES },
		{ 0x7f0000002000, 17, "rover/test/Inline", "mid", "Inline.java", tab17,
		  sizeof(tab17), JAVA_M_HAS_LINES },
		{ 0x7f0000003000, 17, "rover/test/Inline", "step", "Inline.java", tab17,
		  sizeof(tab17), JAVA_M_HAS_LINES },
	};
	static const struct jrec r25[3] = {
		{ 0x7f0000001000, 25, "rover/test/Inline", "hot", "Inline.java", tab25,
		  sizeof(tab25), JAVA_M_HAS_LINES },
		{ 0x7f0000002000, 25, "rover/test/Inline", "mid", "Inline.java", tab25,
		  sizeof(tab25), JAVA_M_HAS_LINES },
		{ 0x7f0000003000, 25, "rover/test/Inline", "step", "Inline.java", tab25, 3,
		  JAVA_M_HAS_LINES | JAVA_M_LINES_CUT },
	};

	/* Mode bit 5: the direct decoding as JDK 25's too. */
	jnm_seed("java_nmethod_17", 0x00, 17, r17, 0);
	jnm_seed("java_nmethod_25", 0x20, 25, r25, JAVA_NM_PCS_CUT | JAVA_NM_META_CUT);
}

/*
 * Entry frames (JAVA_FRAME_ENTRY, the call stub's frame pointer in code): the first one's saved
 * frame pointer and return address lie in the stack copy (at sp + 16), the second one's past
 * it, the third's below sp; Java frames between them (java_outside in shipper/task.c,
 * java_splice).
 */
static void jentry_seed(void)
{
	static const uint8_t tab17[] = { 0xff, 0x00, 0x14, 0x2a, 0xff, 0x08, 0x01, 0x00 };
	static const struct jrec r[1] = { { 0x7f0000001000, 17, "rover/test/A", "burn", "A.java",
					    tab17, sizeof(tab17), JAVA_M_HAS_LINES } };
	static uint8_t codes[SEED_MAX];
	const uint64_t sp = 0x7ffc0000, bp = sp + 48, ret = 0x401010;
	struct ship_snapshots_hdr h = { .task_id = 7, .count = 1 };
	struct ship_snapshot snap = { .tgid = 42,
				      .stack_len = 64,
				      .value = 1,
				      .ip = 0x401000,
				      .sp = sp,
				      .bp = sp + 16,
				      .npy = 6,
				      .pystatus = SC_RT_STATUS(SC_RT_JAVA, JAVA_ST_OK) };
	const struct py_frame f[6] = {
		{ .code = r[0].method, .stamp = 1, .instr = JAVA_FRAME_INTERPRETED | 5 },
		{ .code = sp + 16, .instr = JAVA_FRAME_ENTRY },
		{ .code = r[0].method, .stamp = 1, .instr = JAVA_FRAME_INTERPRETED | 9 },
		{ .code = sp + 4096, .stamp = 77, .instr = JAVA_FRAME_ENTRY },
		{ .code = r[0].method, .stamp = 1, .instr = JAVA_FRAME_INTERPRETED },
		{ .code = sp - 8, .instr = JAVA_FRAME_ENTRY | 3 },
	};
	uint8_t stack[64] = { 0 };
	struct pyseed p = { .len = 0 };
	size_t clen = jmethods_payload(codes, r, 1);
	uint8_t mode = 0;

	memcpy(stack + 16, &bp, 8);
	memcpy(stack + 24, &ret, 8);
	pput(&p, &mode, 1);
	pput16(&p, clen);
	pput(&p, codes, clen);
	pput16(&p, 2);
	pput(&p, "\x01\x01", 2);
	pput(&p, &h, sizeof(h));
	pput(&p, &snap, sizeof(snap));
	pput(&p, f, sizeof(f));
	pput(&p, stack, sizeof(stack));
	write_file("fuzz_pycode", "java_entry_frames", p.buf, p.len);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST)
		die(outdir);
	worker_streams();
	text_samples();
	netrec_seeds();
	netcontent_seeds();
	pycode_seeds();
	jmethod_seeds();
	jnm_seeds();
	jentry_seed();
	return 0;
}
