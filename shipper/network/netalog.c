// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side (the rover user, no capability): the access log's messages (docs/access-log.md,
 * proto/ebpf/accesslog.proto). The capture worker's access-log records (common/netrec.h:
 * NET_REC_OPEN, NET_REC_CALL, NET_REC_CLOSE) become kernel logs waiting on their connection;
 * the HTTP exchanges the NETWORK parsers find on it (netl7.c) become protocol logs, each taking
 * the kernel logs of the calls that carried it. A flush makes one batch, one client stream of
 * EBPFAccessLogService/collect: the node on its first message, then per connection a message
 * carrying the connection and the kernel logs no request took, then one message per protocol
 * log with its kernel logs.
 *
 * Everything here is bounded: connections with logs waiting (queue_size), logs waiting in all
 * (twice flush_max_count), kernel logs a protocol log takes; what does not fit is dropped and
 * counted (struct net_stats, alog_*), never silently.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/Common.pb-c.h"
#include "common/log.h"
#include "ebpf/accesslog.pb-c.h"
#include "shipper/network/netpriv.h"

#define ALOG_HASH 4096	       /* buckets of the connection table (a power of two) */
#define ALOG_PLOG_KLOGS 16     /* kernel logs one protocol log takes, at most */
#define ALOG_MSG_KLOGS 64      /* kernel logs in one message, at most (more: another message) */
#define ALOG_UNKNOWN_FLUSHES 3 /* flushes a connection of a pid with no names may wait */
#define ALOG_PATH_MAX 256
#define ALOG_HOST_MAX 128

enum klog_kind { KL_CONNECT = 1, KL_ACCEPT, KL_CLOSE, KL_READ, KL_WRITE };

struct klog {
	uint8_t kind; /* enum klog_kind */
	uint8_t fn;   /* enum net_fn */
	uint8_t success;
	uint8_t taken; /* by a protocol log */
	uint32_t actual, packets, retrans, l2_queued, ifindex;
	uint64_t start, end, pkt_bytes, l2_ns, l2_ready_ns, l2_send_ns, rx_wait_ns;
	uint32_t flush; /* the flush it arrived before */
};

struct plog {
	uint64_t start, end;
	uint8_t http2, provider; /* provider: 0 none, 1 skywalking, 2 zipkin */
	int8_t method;		 /* enum AccessLogHTTPProtocolRequestMethod */
	int32_t status;
	uint64_t req_hdr, req_body, resp_hdr, resp_body;
	char path[ALOG_PATH_MAX];
	char host[ALOG_HOST_MAX];
	struct net_trace_ref ref;
	struct klog k[ALOG_PLOG_KLOGS];
	uint32_t nk;
};

struct aconn {
	struct aconn *next;
	uint64_t id;
	struct net_conn nc; /* the latest the records gave */
	bool have_conn, closed;
	uint32_t unknown_for; /* flushes its pid had no names */
	struct klog *k;
	uint32_t nk, capk;
	struct plog **p;
	uint32_t np, capp;
};

struct aproc {
	int32_t pid;
	struct msg_alog_proc p;
};

struct net_alog {
	struct msg_output_accesslog o;
	struct aconn *hash[ALOG_HASH];
	uint32_t nconns;
	uint64_t pending;    /* logs waiting, kernel and protocol */
	uint32_t flush;	     /* flushes so far */
	struct aproc *procs; /* sorted by pid (addresses only: pid 0, at the front) */
	size_t nprocs;
};

/*
 * A proto3 string must be valid UTF-8, or the OAP refuses the whole message (and the stream
 * with it): paths, hosts and trace ids come from traced bytes, names from processes' own
 * executables. Each byte of an invalid sequence becomes '?', in place.
 */
static void utf8_fix(char *s)
{
	uint8_t *p = (uint8_t *)s;

	while (*p) {
		size_t n = p[0] < 0x80			  ? 1
			   : p[0] >= 0xc2 && p[0] <= 0xdf ? 2
			   : (p[0] & 0xf0) == 0xe0	  ? 3
			   : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
							  : 0;
		size_t k = 1;

		for (; n && k < n; k++)
			if ((p[k] & 0xc0) != 0x80)
				break;
		/* overlong three-byte forms, surrogates, and code points past U+10FFFF */
		if (n && k == n &&
		    ((n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))) ||
		     (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))))
			n = 0;
		if (!n || k < n) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

static struct aconn **slot_of(struct net_alog *a, uint64_t id)
{
	struct aconn **s = &a->hash[(id * 0x9e3779b97f4a7c15ull) >> 52 & (ALOG_HASH - 1)];

	while (*s && (*s)->id != id)
		s = &(*s)->next;
	return s;
}

static struct aconn *conn_of(struct net_task *t, uint64_t id, bool create)
{
	struct net_alog *a = t->alog;
	struct aconn **s = slot_of(a, id), *c;

	if (*s || !create)
		return *s;
	if (a->nconns >= a->o.queue_size) {
		t->st.alog_conns_dropped++;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		t->st.alloc_failures++;
		return NULL;
	}
	c->id = id;
	*s = c;
	a->nconns++;
	return c;
}

static void conn_free(struct net_alog *a, struct aconn *c)
{
	struct aconn **s = slot_of(a, c->id);

	*s = c->next;
	a->nconns--;
	for (uint32_t i = 0; i < c->np; i++)
		free(c->p[i]);
	free(c->p);
	free(c->k);
	free(c);
}

static bool room(struct net_task *t)
{
	if (t->alog->pending < 2ull * t->alog->o.flush_max_count)
		return true;
	t->st.alog_logs_dropped++;
	return false;
}

static void klog_add(struct net_task *t, struct aconn *c, const struct klog *k)
{
	if (!room(t))
		return;
	if (c->nk == c->capk) {
		uint32_t cap = c->capk ? c->capk * 2 : 8;
		struct klog *n = realloc(c->k, cap * sizeof(*n));

		if (!n) {
			t->st.alloc_failures++;
			t->st.alog_logs_dropped++;
			return;
		}
		c->k = n;
		c->capk = cap;
	}
	c->k[c->nk] = *k;
	c->k[c->nk].flush = t->alog->flush;
	c->nk++;
	t->alog->pending++;
}

int net_task__access_log(struct net_task *t, const struct msg_output_accesslog *o)
{
	struct msg_output_accesslog c = *o;

	if (c.nexclude > ALOG_MAX_EXCLUDE || c.nifs > ALOG_MAX_IFS || !c.flush_max_count ||
	    c.flush_period_ms < 100 || !memchr(c.node_name, 0, sizeof(c.node_name)) ||
	    !memchr(c.cluster, 0, sizeof(c.cluster)))
		return -EPROTO;
	for (uint32_t i = 0; i < c.nexclude; i++)
		if (!memchr(c.exclude[i], 0, sizeof(c.exclude[i])))
			return -EPROTO;
	for (uint32_t i = 0; i < c.nifs; i++)
		if (!memchr(c.ifs[i].name, 0, sizeof(c.ifs[i].name)))
			return -EPROTO;
	if (!c.queue_size)
		c.queue_size = 2000;
	if (!t->alog) {
		t->alog = calloc(1, sizeof(*t->alog));
		if (!t->alog)
			return -ENOMEM;
	}
	t->alog->o = c;
	utf8_fix(t->alog->o.node_name);
	utf8_fix(t->alog->o.cluster);
	for (uint32_t i = 0; i < c.nexclude; i++)
		utf8_fix(t->alog->o.exclude[i]);
	for (uint32_t i = 0; i < c.nifs; i++)
		utf8_fix(t->alog->o.ifs[i].name);
	return 0;
}

void net__alog_free(struct net_task *t)
{
	struct net_alog *a = t->alog;

	if (!a)
		return;
	for (uint32_t i = 0; i < ALOG_HASH; i++)
		while (a->hash[i])
			conn_free(a, a->hash[i]);
	free(a->procs);
	free(a);
	t->alog = NULL;
}

static int proc_cmp(const void *x, const void *y)
{
	const struct aproc *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	/* Address-only entries (pid 0) are told apart by their address. */
	return a->pid ? 0 : memcmp(a->p.addr, b->p.addr, 16);
}

static void names_fix(struct msg_alog_proc *p)
{
	utf8_fix(p->service);
	utf8_fix(p->pod);
	utf8_fix(p->container);
	utf8_fix(p->process);
}

static bool proc_valid(const struct msg_alog_proc *p)
{
	return p->pid >= 0 && p->gone <= 1 &&
	       (p->family == 0 || p->family == AF_INET || p->family == AF_INET6) &&
	       memchr(p->ns, 0, sizeof(p->ns)) && memchr(p->service, 0, sizeof(p->service)) &&
	       memchr(p->pod, 0, sizeof(p->pod)) && memchr(p->container, 0, sizeof(p->container)) &&
	       memchr(p->process, 0, sizeof(p->process));
}

int net_task__alog_procs(struct net_task *t, const struct msg_alog_proc *p, size_t n)
{
	struct net_alog *a = t->alog;

	if (!a)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		struct aproc key = { .pid = p[i].pid }, *hit;

		if (!proc_valid(&p[i])) {
			t->st.alog_bad_procs++;
			continue;
		}
		if (!p[i].pid)
			memcpy(key.p.addr, p[i].addr, 16);
		hit = a->nprocs ? bsearch(&key, a->procs, a->nprocs, sizeof(*a->procs), proc_cmp)
				: NULL;
		if (p[i].gone) {
			if (hit) {
				memmove(hit, hit + 1,
					(size_t)(a->procs + a->nprocs - hit - 1) * sizeof(*hit));
				a->nprocs--;
			}
			continue;
		}
		if (hit) {
			hit->p = p[i];
			names_fix(&hit->p);
			continue;
		}
		if (a->nprocs >= ALOG_MAX_PIDS) {
			t->st.alog_bad_procs++;
			continue;
		}
		if (!(a->nprocs & 255)) {
			struct aproc *g = realloc(a->procs, (a->nprocs + 256) * sizeof(*g));

			if (!g)
				return -ENOMEM;
			a->procs = g;
		}
		{
			/* In its place: the table stays sorted without a sort per entry. */
			size_t at = 0;

			while (at < a->nprocs && proc_cmp(&a->procs[at], &key) < 0)
				at++;
			memmove(&a->procs[at + 1], &a->procs[at],
				(a->nprocs - at) * sizeof(*a->procs));
			a->procs[at].pid = p[i].pid;
			a->procs[at].p = p[i];
			names_fix(&a->procs[at].p);
			a->nprocs++;
		}
	}
	return 0;
}

size_t net_task__alog_pids(const struct net_task *t, int32_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; t->alog && i < t->alog->nprocs && n < max; i++)
		if (t->alog->procs[i].pid > 0)
			out[n++] = t->alog->procs[i].pid;
	return n;
}

static const struct msg_alog_proc *proc_of(const struct net_alog *a, int32_t pid)
{
	size_t lo = 0, hi = a->nprocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->nprocs && a->procs[lo].pid == pid ? &a->procs[lo].p : NULL;
}

void net__alog_open(struct net_task *t, const struct net_rec_open *r)
{
	struct klog k = { .kind = r->conn.role == NET_ROLE_SERVER ? KL_ACCEPT : KL_CONNECT };
	struct aconn *c;

	if (!t->alog)
		return;
	if (r->conn.role != NET_ROLE_CLIENT && r->conn.role != NET_ROLE_SERVER) {
		t->st.bad_records++;
		return;
	}
	/* A failed connect has no connection id: its own, never another's. */
	c = conn_of(t,
		    r->conn.id
			    ? r->conn.id
			    : (1ull << 63) | (uint64_t)t->alog->flush << 20 | (uint32_t)r->conn.fd,
		    true);
	if (!c)
		return;
	c->nc = r->conn;
	c->have_conn = true;
	if (r->err)
		c->closed = true;
	k.end = r->conn.open_ns;
	k.start = r->conn.open_ns -
		  (r->conn.connect_exe_ns < r->conn.open_ns ? r->conn.connect_exe_ns : 0);
	k.success = r->err == 0;
	klog_add(t, c, &k);
}

void net__alog_call(struct net_task *t, const struct net_rec_call *r)
{
	struct klog k = { 0 };
	struct aconn *c;

	if (!t->alog)
		return;
	if (!r->conn_id || r->dir > NET_DIR_INGRESS || r->fn < NET_FN_READ || r->fn >= NET_FN_MAX ||
	    r->end_ns < r->start_ns || r->proto >= NET_PROTO_MAX) {
		t->st.bad_records++;
		return;
	}
	c = conn_of(t, r->conn_id, true);
	if (!c)
		return;
	if (!c->have_conn) {
		/* Met mid-stream (it was open before its process was traced): its figures come
		 * with the next connections frame; its pid is known now. */
		c->nc.id = r->conn_id;
		c->nc.tgid = r->tgid;
	}
	if (r->proto > c->nc.proto)
		c->nc.proto = r->proto;
	k.kind = r->dir == NET_DIR_EGRESS ? KL_WRITE : KL_READ;
	k.fn = r->fn;
	k.start = r->start_ns;
	k.end = r->end_ns;
	k.actual = r->actual;
	k.packets = r->packets;
	k.retrans = r->retrans;
	k.l2_queued = r->l2_queued;
	k.ifindex = r->ifindex;
	k.pkt_bytes = r->pkt_bytes;
	k.l2_ns = r->l2_ns;
	k.l2_ready_ns = r->l2_ready_ns;
	k.l2_send_ns = r->l2_send_ns;
	k.rx_wait_ns = r->rx_wait_ns;
	klog_add(t, c, &k);
}

/* A connection's latest figures (a connections frame, or its close). */
void net__alog_conn(struct net_task *t, const struct net_conn *nc, bool closing)
{
	struct klog k = { .kind = KL_CLOSE };
	struct aconn *c;

	if (!t->alog)
		return;
	c = conn_of(t, nc->id, closing);
	if (!c)
		return;
	c->nc = *nc;
	c->have_conn = true;
	if (!closing || c->closed)
		return;
	c->closed = true;
	k.end = nc->close_ns;
	k.start = nc->close_ns - (nc->close_exe_ns < nc->close_ns ? nc->close_exe_ns : 0);
	k.success = !nc->close_failed;
	klog_add(t, c, &k);
}

static int8_t method_of(const char *m)
{
	static const char *const names[] = { "GET",   "POST",	 "PUT",	  "DELETE", "HEAD",
					     "PATCH", "OPTIONS", "TRACE", "CONNECT" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(m, names[i]))
			return (int8_t)i;
	return -1;
}

void net__alog_exchange(struct net_task *t, struct net_conn_st *cs, const struct l7_exchange *x)
{
	const struct http1_exchange *h = x->http;
	struct aconn *c;
	struct plog *p;

	if (!t->alog || !h)
		return;
	c = conn_of(t, cs->id, true);
	if (!c || !room(t))
		return;
	if (c->np == c->capp) {
		uint32_t cap = c->capp ? c->capp * 2 : 4;
		struct plog **n = realloc(c->p, cap * sizeof(*n));

		if (!n) {
			t->st.alloc_failures++;
			return;
		}
		c->p = n;
		c->capp = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		t->st.alloc_failures++;
		return;
	}
	p->start = x->start_ns;
	p->end = x->end_ns;
	p->http2 = x->http2 != NULL;
	p->method = method_of(h->method);
	if (p->method < 0) {
		/* No value of the proto's enum says it: sent as GET, counted. */
		t->st.alog_other_methods++;
		p->method = 0;
	}
	p->status = h->status;
	p->req_hdr = h->req_hdr_bytes;
	p->req_body = x->req_bytes > h->req_hdr_bytes ? x->req_bytes - h->req_hdr_bytes : 0;
	p->resp_hdr = h->resp_hdr_bytes;
	p->resp_body = x->resp_bytes > h->resp_hdr_bytes ? x->resp_bytes - h->resp_hdr_bytes : 0;
	snprintf(p->path, sizeof(p->path), "%.*s", (int)h->path_len, h->uri);
	snprintf(p->host, sizeof(p->host), "%.*s", (int)sizeof(p->host) - 1, h->host);
	p->provider = (uint8_t)net__trace_ctx(h, &p->ref);
	utf8_fix(p->path);
	utf8_fix(p->host);
	utf8_fix(p->ref.trace_id);
	utf8_fix(p->ref.segment_id);
	utf8_fix(p->ref.span_id);
	/*
	 * The calls that carried it: a segment's time is its call's return (netl7.c), so those
	 * that returned from its first byte's call to its last's. It began when the first began.
	 */
	for (uint32_t i = 0; i < c->nk && p->nk < ALOG_PLOG_KLOGS; i++) {
		struct klog *k = &c->k[i];

		if (k->taken || (k->kind != KL_READ && k->kind != KL_WRITE) ||
		    k->end < x->start_ns || k->end > x->end_ns)
			continue;
		k->taken = 1;
		p->k[p->nk++] = *k;
		if (k->start < p->start)
			p->start = k->start;
	}
	c->p[c->np++] = p;
	t->alog->pending++;
}

/* --- the messages --- */

/* What one message is built of, on the heap (a few KiB), reused for every message. */
struct mbuf {
	Skywalking__V3__EBPFAccessLogMessage m;
	Skywalking__V3__AccessLogKernelLog kl[ALOG_MSG_KLOGS], *klp[ALOG_MSG_KLOGS];
	union {
		Skywalking__V3__AccessLogKernelConnectOperation conn;
		Skywalking__V3__AccessLogKernelAcceptOperation acc;
		Skywalking__V3__AccessLogKernelCloseOperation close;
		Skywalking__V3__AccessLogKernelReadOperation rd;
		Skywalking__V3__AccessLogKernelWriteOperation wr;
	} op[ALOG_MSG_KLOGS];
	Skywalking__V3__EBPFTimestamp ts[2 * ALOG_MSG_KLOGS + 2];
	Skywalking__V3__EBPFOffsetTimestamp off[2 * ALOG_MSG_KLOGS + 2];
	Skywalking__V3__AccessLogKernelWriteL4Metrics w4[ALOG_MSG_KLOGS];
	Skywalking__V3__AccessLogKernelWriteL3Metrics w3[ALOG_MSG_KLOGS];
	Skywalking__V3__AccessLogKernelWriteL2Metrics w2[ALOG_MSG_KLOGS];
	Skywalking__V3__AccessLogKernelReadL2Metrics r2[ALOG_MSG_KLOGS];
	Skywalking__V3__AccessLogKernelReadL3Metrics r3[ALOG_MSG_KLOGS];
	Skywalking__V3__AccessLogKernelReadL4Metrics r4[ALOG_MSG_KLOGS];
	uint32_t nts;
};

static Skywalking__V3__EBPFTimestamp *ts_of(struct mbuf *b, uint64_t ns)
{
	Skywalking__V3__EBPFTimestamp *t = &b->ts[b->nts];
	Skywalking__V3__EBPFOffsetTimestamp *o = &b->off[b->nts++];

	skywalking__v3__ebpfoffset_timestamp__init(o);
	o->offset = ns;
	skywalking__v3__ebpftimestamp__init(t);
	t->timestamp_case = SKYWALKING__V3__EBPFTIMESTAMP__TIMESTAMP_OFFSET;
	t->offset = o;
	return t;
}

static uint32_t write_syscall(uint8_t fn)
{
	switch (fn) {
	case NET_FN_WRITEV:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__Writev;
	case NET_FN_SEND:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__Send;
	case NET_FN_SENDTO:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__SendTo;
	case NET_FN_SENDMSG:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__SendMsg;
	case NET_FN_SENDMMSG:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__SendMmsg;
	case NET_FN_SENDFILE:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__SendFile;
	}
	return SKYWALKING__V3__ACCESS_LOG_KERNEL_WRITE_SYSCALL__Write;
}

static uint32_t read_syscall(uint8_t fn)
{
	switch (fn) {
	case NET_FN_READV:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_READ_SYSCALL__Readv;
	case NET_FN_RECV:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_READ_SYSCALL__Recv;
	case NET_FN_RECVFROM:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_READ_SYSCALL__RecvFrom;
	case NET_FN_RECVMSG:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_READ_SYSCALL__RecvMsg;
	case NET_FN_RECVMMSG:
		return SKYWALKING__V3__ACCESS_LOG_KERNEL_READ_SYSCALL__RecvMmsg;
	}
	return SKYWALKING__V3__ACCESS_LOG_KERNEL_READ_SYSCALL__Read;
}

/* Kernel log k into the message being built (room checked by the caller). */
static void klog_put(struct mbuf *b, const struct klog *k)
{
	size_t i = b->m.n_kernellogs++;
	Skywalking__V3__AccessLogKernelLog *l = &b->kl[i];

	skywalking__v3__access_log_kernel_log__init(l);
	b->klp[i] = l;
	switch (k->kind) {
	case KL_CONNECT:
		skywalking__v3__access_log_kernel_connect_operation__init(&b->op[i].conn);
		b->op[i].conn.starttime = ts_of(b, k->start);
		b->op[i].conn.endtime = ts_of(b, k->end);
		b->op[i].conn.success = k->success;
		l->operation_case = SKYWALKING__V3__ACCESS_LOG_KERNEL_LOG__OPERATION_CONNECT;
		l->connect = &b->op[i].conn;
		return;
	case KL_ACCEPT:
		skywalking__v3__access_log_kernel_accept_operation__init(&b->op[i].acc);
		b->op[i].acc.starttime = ts_of(b, k->start);
		b->op[i].acc.endtime = ts_of(b, k->end);
		l->operation_case = SKYWALKING__V3__ACCESS_LOG_KERNEL_LOG__OPERATION_ACCEPT;
		l->accept = &b->op[i].acc;
		return;
	case KL_CLOSE:
		skywalking__v3__access_log_kernel_close_operation__init(&b->op[i].close);
		b->op[i].close.starttime = ts_of(b, k->start);
		b->op[i].close.endtime = ts_of(b, k->end);
		b->op[i].close.success = k->success;
		l->operation_case = SKYWALKING__V3__ACCESS_LOG_KERNEL_LOG__OPERATION_CLOSE;
		l->close = &b->op[i].close;
		return;
	case KL_WRITE: {
		Skywalking__V3__AccessLogKernelWriteOperation *w = &b->op[i].wr;

		skywalking__v3__access_log_kernel_write_operation__init(w);
		skywalking__v3__access_log_kernel_write_l4_metrics__init(&b->w4[i]);
		skywalking__v3__access_log_kernel_write_l3_metrics__init(&b->w3[i]);
		skywalking__v3__access_log_kernel_write_l2_metrics__init(&b->w2[i]);
		w->starttime = ts_of(b, k->start);
		w->endtime = ts_of(b, k->end);
		w->syscall = write_syscall(k->fn);
		b->w4[i].totalduration = k->end - k->start;
		b->w4[i].totaltransmitpackagecount = k->packets;
		b->w4[i].totalretransmitpackagecount = k->retrans;
		/* The bytes the call moved: what L4 carried for it. */
		b->w4[i].totalpackagesize = k->actual;
		b->w2[i].totalduration = k->l2_ns;
		b->w2[i].ifindex = k->ifindex;
		b->w2[i].totalenterqueuebuffercount = k->l2_queued;
		b->w2[i].totalreadysendduration = k->l2_ready_ns;
		b->w2[i].totalnetdevicesendduration = k->l2_send_ns;
		w->l4metrics = &b->w4[i];
		w->l3metrics = &b->w3[i];
		w->l2metrics = &b->w2[i];
		l->operation_case = SKYWALKING__V3__ACCESS_LOG_KERNEL_LOG__OPERATION_WRITE;
		l->write = w;
		return;
	}
	default: {
		Skywalking__V3__AccessLogKernelReadOperation *r = &b->op[i].rd;

		skywalking__v3__access_log_kernel_read_operation__init(r);
		skywalking__v3__access_log_kernel_read_l2_metrics__init(&b->r2[i]);
		skywalking__v3__access_log_kernel_read_l3_metrics__init(&b->r3[i]);
		skywalking__v3__access_log_kernel_read_l4_metrics__init(&b->r4[i]);
		r->starttime = ts_of(b, k->start);
		r->endtime = ts_of(b, k->end);
		r->syscall = read_syscall(k->fn);
		b->r2[i].ifindex = k->ifindex;
		b->r2[i].totalpackagecount = k->packets;
		b->r2[i].totalpackagesize = k->pkt_bytes;
		b->r2[i].totalpackagetoqueueduration = k->rx_wait_ns;
		b->r4[i].totalduration = k->end - k->start;
		r->l2metrics = &b->r2[i];
		r->l3metrics = &b->r3[i];
		r->l4metrics = &b->r4[i];
		l->operation_case = SKYWALKING__V3__ACCESS_LOG_KERNEL_LOG__OPERATION_READ;
		l->read = r;
		return;
	}
	}
}

static void mbuf_reset(struct mbuf *b)
{
	skywalking__v3__ebpfaccess_log_message__init(&b->m);
	b->m.kernellogs = b->klp;
	b->nts = 0;
}

static int mbuf_pack(struct mbuf *b, struct spool_batch *out)
{
	size_t len = skywalking__v3__ebpfaccess_log_message__get_packed_size(&b->m);
	uint8_t *dst;
	int err = spool_batch__reserve(out, len, &dst);

	if (err)
		return err;
	skywalking__v3__ebpfaccess_log_message__pack(&b->m, dst);
	out->samples += b->m.n_kernellogs + (b->m.protocollog != NULL);
	mbuf_reset(b);
	return 0;
}

/* Who a pod's address is, when it is a watched pod's (or a Service's): the process whose
 * connection has that end, else the pod's first. */
static const struct msg_alog_proc *peer_of(const struct net_alog *a, const uint8_t canon[16],
					   uint16_t port)
{
	const struct msg_alog_proc *first = NULL;

	for (size_t i = 0; i < a->nprocs; i++) {
		const struct msg_alog_proc *p = &a->procs[i].p;
		uint8_t c[16];

		if (!p->family)
			continue;
		net__canon_addr(p->family, p->addr, c);
		if (memcmp(c, canon, 16))
			continue;
		if (!first)
			first = p;
		if (!p->pid)
			return p;
		/* That end's own process, when it has a connection here with that port. */
		for (uint32_t h = 0; h < ALOG_HASH; h++)
			for (const struct aconn *o = a->hash[h]; o; o = o->next)
				if (o->have_conn && o->nc.tgid == (uint32_t)p->pid &&
				    o->nc.lport == port)
					return p;
	}
	return first;
}

struct addrs {
	Skywalking__V3__ConnectionAddress local, remote;
	Skywalking__V3__KubernetesProcessAddress lk, rk;
	Skywalking__V3__IPAddress rip;
	char rhost[64];
	Skywalking__V3__AccessLogConnection conn;
};

static void k8s_addr(Skywalking__V3__KubernetesProcessAddress *k, const struct msg_alog_proc *p,
		     uint16_t port)
{
	skywalking__v3__kubernetes_process_address__init(k);
	k->servicename = (char *)p->service;
	k->podname = (char *)p->pod;
	k->containername = (char *)p->container;
	k->processname = (char *)p->process;
	k->port = port;
}

/* The connection as the OAP takes it; false when its pid has no names (yet). */
static bool conn_msg(const struct net_alog *a, const struct aconn *c, struct addrs *x)
{
	const struct msg_alog_proc *lp = proc_of(a, (int32_t)c->nc.tgid), *rp;
	uint8_t raw[16], canon[16];
	uint16_t rport = c->nc.nat ? c->nc.nat_port : c->nc.rport;

	if (!lp)
		return false;
	memcpy(raw, c->nc.nat ? c->nc.nat_addr : c->nc.raddr, 16);
	net__canon_addr(c->nc.family, raw, canon);
	rp = peer_of(a, canon, rport);
	skywalking__v3__access_log_connection__init(&x->conn);
	skywalking__v3__connection_address__init(&x->local);
	skywalking__v3__connection_address__init(&x->remote);
	k8s_addr(&x->lk, lp, c->nc.lport);
	x->local.address_case = SKYWALKING__V3__CONNECTION_ADDRESS__ADDRESS_KUBERNETES;
	x->local.kubernetes = &x->lk;
	if (rp) {
		k8s_addr(&x->rk, rp, rport);
		x->remote.address_case = SKYWALKING__V3__CONNECTION_ADDRESS__ADDRESS_KUBERNETES;
		x->remote.kubernetes = &x->rk;
	} else {
		skywalking__v3__ipaddress__init(&x->rip);
		net__addr_str(canon, x->rhost, sizeof(x->rhost));
		x->rip.host = x->rhost;
		x->rip.port = rport;
		x->remote.address_case = SKYWALKING__V3__CONNECTION_ADDRESS__ADDRESS_IP;
		x->remote.ip = &x->rip;
	}
	x->conn.local = &x->local;
	x->conn.remote = &x->remote;
	x->conn.role = c->nc.role == NET_ROLE_SERVER ? SKYWALKING__V3__DETECT_POINT__server
						     : SKYWALKING__V3__DETECT_POINT__client;
	x->conn.tlsmode = c->nc.flags & NET_CONN_TLS
				  ? SKYWALKING__V3__ACCESS_LOG_CONNECTION_TLSMODE__TLS
				  : SKYWALKING__V3__ACCESS_LOG_CONNECTION_TLSMODE__Plain;
	x->conn.protocol =
		c->nc.proto == NET_PROTO_HTTP1	 ? SKYWALKING__V3__ACCESS_LOG_PROTOCOL_TYPE__HTTP_1
		: c->nc.proto == NET_PROTO_HTTP2 ? SKYWALKING__V3__ACCESS_LOG_PROTOCOL_TYPE__HTTP_2
						 : SKYWALKING__V3__ACCESS_LOG_PROTOCOL_TYPE__TCP;
	return true;
}

/* The first message of a stream: the node. */
static int node_msg(const struct net_alog *a, struct mbuf *b, struct spool_batch *out)
{
	Skywalking__V3__EBPFAccessLogNodeInfo n;
	Skywalking__V3__EBPFAccessLogPolicy pol;
	Skywalking__V3__Instant boot;
	Skywalking__V3__EBPFAccessLogNodeNetInterface ifs[ALOG_MAX_IFS], *ifp[ALOG_MAX_IFS];
	char *ex[ALOG_MAX_EXCLUDE];

	skywalking__v3__ebpfaccess_log_node_info__init(&n);
	skywalking__v3__ebpfaccess_log_policy__init(&pol);
	skywalking__v3__instant__init(&boot);
	n.name = (char *)a->o.node_name;
	n.clustername = (char *)a->o.cluster;
	boot.seconds = a->o.boot_unix_ns / 1000000000ll;
	boot.nanos = (int32_t)(a->o.boot_unix_ns % 1000000000ll);
	n.boottime = &boot;
	for (uint32_t i = 0; i < a->o.nifs; i++) {
		skywalking__v3__ebpfaccess_log_node_net_interface__init(&ifs[i]);
		ifs[i].index = a->o.ifs[i].index;
		ifs[i].mtu = a->o.ifs[i].mtu;
		ifs[i].name = (char *)a->o.ifs[i].name;
		ifp[i] = &ifs[i];
	}
	n.n_netinterfaces = a->o.nifs;
	n.netinterfaces = ifp;
	for (uint32_t i = 0; i < a->o.nexclude; i++)
		ex[i] = (char *)a->o.exclude[i];
	pol.n_excludenamespaces = a->o.nexclude;
	pol.excludenamespaces = ex;
	n.policy = &pol;
	b->m.node = &n;
	return mbuf_pack(b, out);
}

/* A protocol log's message, its kernel logs with it. */
static int plog_msg(struct mbuf *b, const struct plog *p, struct spool_batch *out)
{
	Skywalking__V3__AccessLogProtocolLogs pl;
	Skywalking__V3__AccessLogHTTPProtocol h;
	Skywalking__V3__AccessLogHTTPProtocolRequest rq;
	Skywalking__V3__AccessLogHTTPProtocolResponse rs;
	Skywalking__V3__AccessLogTraceInfo tr;

	skywalking__v3__access_log_protocol_logs__init(&pl);
	skywalking__v3__access_log_httpprotocol__init(&h);
	skywalking__v3__access_log_httpprotocol_request__init(&rq);
	skywalking__v3__access_log_httpprotocol_response__init(&rs);
	for (uint32_t i = 0; i < p->nk; i++)
		klog_put(b, &p->k[i]);
	h.starttime = ts_of(b, p->start);
	h.endtime = ts_of(b, p->end);
	h.version = p->http2 ? SKYWALKING__V3__ACCESS_LOG_HTTPPROTOCOL_VERSION__HTTP2
			     : SKYWALKING__V3__ACCESS_LOG_HTTPPROTOCOL_VERSION__HTTP1;
	rq.method = (Skywalking__V3__AccessLogHTTPProtocolRequestMethod)p->method;
	rq.path = (char *)p->path;
	rq.host = (char *)p->host;
	rq.sizeofheadersbytes = p->req_hdr;
	rq.sizeofbodybytes = p->req_body;
	if (p->provider) {
		skywalking__v3__access_log_trace_info__init(&tr);
		tr.provider = p->provider == 1
				      ? SKYWALKING__V3__ACCESS_LOG_TRACE_INFO_PROVIDER__SkyWalking
				      : SKYWALKING__V3__ACCESS_LOG_TRACE_INFO_PROVIDER__Zipkin;
		tr.traceid = (char *)p->ref.trace_id;
		tr.tracesegmentid = (char *)p->ref.segment_id;
		tr.spanid = (char *)p->ref.span_id;
		rq.trace = &tr;
	}
	rs.statuscode = p->status;
	rs.sizeofheadersbytes = p->resp_hdr;
	rs.sizeofbodybytes = p->resp_body;
	h.request = &rq;
	h.response = &rs;
	pl.protocol_case = SKYWALKING__V3__ACCESS_LOG_PROTOCOL_LOGS__PROTOCOL_HTTP;
	pl.http = &h;
	b->m.protocollog = &pl;
	return mbuf_pack(b, out);
}

/* Whether the connection's kernel log k goes in this flush without a protocol log. */
static bool due(const struct net_alog *a, const struct aconn *c, const struct klog *k, bool last)
{
	/*
	 * A call of an HTTP connection may belong to a request not complete yet: it waits one
	 * flush for it, unless the connection is over.
	 */
	if (last || c->closed || k->kind == KL_CONNECT || k->kind == KL_ACCEPT ||
	    k->kind == KL_CLOSE ||
	    (c->nc.proto != NET_PROTO_HTTP1 && c->nc.proto != NET_PROTO_HTTP2))
		return true;
	return k->flush + 1 < a->flush;
}

/* One connection's group. */
static int conn_group(struct net_task *t, struct aconn *c, struct mbuf *b, bool last,
		      struct spool_batch *out)
{
	struct net_alog *a = t->alog;
	struct addrs x;
	uint32_t keep = 0, sent = 0;
	int err = 0;

	/* Met mid-stream: its addresses come with the worker's next connections frame. */
	if (!c->have_conn && !last)
		return 0;
	if (!conn_msg(a, c, &x)) {
		/* Its pid's names may come with the supervisor's next word: a few flushes. */
		if (++c->unknown_for < ALOG_UNKNOWN_FLUSHES && !last)
			return 0;
		t->st.alog_logs_dropped += c->nk + c->np;
		a->pending -= c->nk + c->np;
		for (uint32_t i = 0; i < c->np; i++)
			free(c->p[i]);
		c->nk = c->np = 0;
		if (!t->st.alog_unknown_pids++)
			log_warn("access log: logs of process %u dropped: the supervisor named no "
				 "such process (counted, said once)",
				 c->nc.tgid);
		return 0;
	}
	{
		bool any = c->np > 0;

		for (uint32_t i = 0; i < c->nk && !any; i++)
			any = !c->k[i].taken && due(a, c, &c->k[i], last);
		if (!any)
			return 0;
	}
	b->m.connection = &x.conn;
	for (uint32_t i = 0; i < c->nk && !err; i++) {
		const struct klog *k = &c->k[i];

		if (k->taken) {
			sent++;
			continue;
		}
		if (!due(a, c, k, last)) {
			c->k[keep++] = *k;
			continue;
		}
		if (b->m.n_kernellogs == ALOG_MSG_KLOGS)
			err = mbuf_pack(b, out);
		klog_put(b, k);
		sent++;
	}
	if (!err && (b->m.n_kernellogs || b->m.connection))
		err = mbuf_pack(b, out);
	for (uint32_t i = 0; i < c->np && !err; i++) {
		err = plog_msg(b, c->p[i], out);
		free(c->p[i]);
		c->p[i] = NULL;
		sent++;
	}
	/* Nothing of this group's stack may stay in the buffer. */
	mbuf_reset(b);
	if (err) {
		/* The batch is refused whole by the caller: the group is lost, counted there. */
		for (uint32_t i = 0; i < c->np; i++)
			free(c->p[i]);
		a->pending -= c->nk + c->np;
		c->nk = c->np = 0;
		return err;
	}
	a->pending -= sent;
	c->nk = keep;
	c->np = 0;
	return 0;
}

size_t net_task__alog_pending(const struct net_task *t)
{
	return t->alog ? t->alog->pending : 0;
}

int net_task__alog_flush(struct net_task *t, bool last, struct spool_batch *out)
{
	struct net_alog *a = t->alog;
	struct mbuf *b;
	int err = 0;

	if (!a)
		return -EPROTO;
	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	mbuf_reset(b);
	a->flush++;
	for (uint32_t h = 0; h < ALOG_HASH && !err; h++) {
		struct aconn *c = a->hash[h];

		while (c && !err) {
			struct aconn *next = c->next;

			if (c->nk || c->np) {
				/* Each stream's first message is the node's. */
				if (!out->nmsgs)
					err = node_msg(a, b, out);
				if (!err)
					err = conn_group(t, c, b, last, out);
			}
			if (!err && c->closed && !c->nk && !c->np)
				conn_free(a, c);
			c = next;
		}
	}
	free(b);
	if (err) {
		t->st.alog_logs_dropped += out->samples;
		log_warn("access log: a flush's batch could not be built (%s): its logs are "
			 "dropped, counted",
			 strerror(-err));
	}
	return err;
}
