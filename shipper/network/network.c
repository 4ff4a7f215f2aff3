// SPDX-License-Identifier: Apache-2.0
/*
 * A NETWORK task's analysis (see network.h): the task, the worker's frames handed to its parts
 * (netpriv.h says which calls which), and the report.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "shipper/network/netpriv.h"
#include "shipper/network/tlsfind.h"

#define DEFAULT_MAX_CONNS 16384u
#define MAX_CONNS_LIMIT (1u << 20)
#define MAX_PROCS 4096u
#define MAX_RULES 64u
#define MAX_COMMS 1024u

#define EP_GRPC NET_PROTO_MAX

struct net_task *net_task__new(const struct net_task_opts *o)
{
	struct net_task *t;
	size_t buckets = 1;

	if (!o || (o->meter_prefix && strlen(o->meter_prefix) > 100) ||
	    o->max_conns > MAX_CONNS_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->o = *o;
	if (!t->o.max_conns)
		t->o.max_conns = DEFAULT_MAX_CONNS;
	snprintf(t->prefix, sizeof(t->prefix), "%s_",
		 o->meter_prefix ? o->meter_prefix : "rover_net_p");
	t->o.meter_prefix = NULL;
	while (buckets < t->o.max_conns)
		buckets <<= 1;
	t->hash = calloc(buckets, sizeof(*t->hash));
	if (!t->hash) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->hash_mask = buckets - 1;
	t->rng = 0x9E3779B97F4A7C15ULL ^ o->task_id;
	return t;
}

void net_task__free(struct net_task *t)
{
	if (!t)
		return;
	while (t->lru_head) {
		struct net_conn_st *c = t->lru_head;

		net__conn_unlink(t, c);
		net__conn_free(t, c);
	}
	free(t->hash);
	net__traffic_free(t, t->last, t->nlast);
	net__traffic_free(t, t->total, t->ntotal);
	for (size_t i = 0; i < t->neps; i++)
		net__ep_free(t->eps[i]);
	free(t->eps);
	for (size_t i = 0; i < t->nrules; i++) {
		pcre2_match_data_free(t->rules[i].md);
		pcre2_code_free(t->rules[i].re);
	}
	pcre2_match_context_free(t->mctx);
	free(t->rules);
	free(t->procs);
	free(t->comms);
	free(t->mon);
	net__alog_free(t);
	free(t);
}

int net_task__set_processes(struct net_task *t, const struct msg_net_process *p, size_t n)
{
	struct net_proc *v = NULL;

	if (!t || (n && !p))
		return -EINVAL;
	if (n > MAX_PROCS)
		return -E2BIG;
	if (n) {
		v = calloc(n, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].pid = p[i].pid;
		v[i].known = true;
		v[i].p = p[i];
		v[i].p.process_id[sizeof(v[i].p.process_id) - 1] = '\0';
		v[i].p.service[sizeof(v[i].p.service) - 1] = '\0';
		v[i].p.instance[sizeof(v[i].p.instance) - 1] = '\0';
		v[i].p.name[sizeof(v[i].p.name) - 1] = '\0';
		v[i].p.layer[sizeof(v[i].p.layer) - 1] = '\0';
	}
	free(t->procs);
	t->procs = v;
	t->nprocs = n;
	return 0;
}

/* A rule's max size (0: unlimited) within NET_RAW_MAX, if more than cur. */
static uint32_t keep_want(uint32_t cur, uint32_t max_size)
{
	uint32_t want = max_size && max_size < NET_RAW_MAX ? max_size : NET_RAW_MAX;

	return want > cur ? want : cur;
}

/* Match limits: a rule's regex costs at most this much per path (supervisor/discovery/discovery.c's). */
#define RULE_MATCH_LIMIT 100000

#define RULE_DEPTH_LIMIT 1000

/* A backend rule's regex, compiled with the task's match limits; NULL if it does not compile. */
static pcre2_code *compile_rule(struct net_task *t, const char *pattern)
{
	int errcode;
	PCRE2_SIZE erroff;

	if (!t->mctx) {
		t->mctx = pcre2_match_context_create(NULL);
		if (!t->mctx)
			return NULL;
		pcre2_set_match_limit(t->mctx, RULE_MATCH_LIMIT);
		pcre2_set_depth_limit(t->mctx, RULE_DEPTH_LIMIT);
	}
	return pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &errcode, &erroff,
			     NULL);
}

int net_task__add_rules(struct net_task *t, const struct msg_net_rule *r, size_t n)
{
	struct net_rule *v;
	bool have_default = false;
	int err = 0;

	if (!t || (n && !r))
		return -EINVAL;
	if (n > MAX_RULES || t->nrules + n > MAX_RULES)
		return -E2BIG;
	v = realloc(t->rules, (t->nrules + n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->rules = v;
	for (size_t i = 0; i < t->nrules; i++)
		have_default |= !t->rules[i].has_re;
	for (size_t i = 0; i < n; i++) {
		struct net_rule *nr = &t->rules[t->nrules];

		memset(nr, 0, sizeof(*nr)); /* realloc'd: no stale regex pointers to free */
		nr->r = r[i];
		nr->r.uri_regex[sizeof(nr->r.uri_regex) - 1] = '\0';
		nr->has_re = nr->r.uri_regex[0] != '\0';
		if (!nr->has_re) {
			/* Upstream keeps the first default rule and ignores the others. */
			if (have_default)
				continue;
			have_default = true;
		} else if (!(nr->re = compile_rule(t, nr->r.uri_regex)) ||
			   !(nr->md = pcre2_match_data_create_from_pattern(nr->re, NULL))) {
			pcre2_code_free(nr->re);
			nr->re = NULL;
			err = -EINVAL;
			continue;
		}
		t->nrules++;
		if (nr->r.require_complete_request)
			t->keep_run = keep_want(t->keep_run, nr->r.max_request_size);
		if (nr->r.require_complete_response)
			t->keep_run = keep_want(t->keep_run, nr->r.max_response_size);
	}
	return err;
}

int net_task__set_comm(struct net_task *t, int32_t pid, const char *comm)
{
	struct net_comm *e = NULL;

	if (!t || !comm)
		return -EINVAL;
	for (size_t i = 0; i < t->ncomms; i++)
		if (t->comms[i].pid == pid)
			e = &t->comms[i];
	if (!e) {
		struct net_comm *v;

		if (t->ncomms >= MAX_COMMS)
			return -E2BIG;
		v = realloc(t->comms, (t->ncomms + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->comms = v;
		e = &v[t->ncomms++];
		e->pid = pid;
	}
	snprintf(e->comm, sizeof(e->comm), "%s", comm);
	for (char *s = e->comm; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	return 0;
}

static const char *proc_name(struct net_task *t, int32_t pid);

const char *net__proc_name(struct net_task *t, int32_t pid)
{
	return proc_name(t, pid);
}

/* The process name for people: the backend's, else its command name, else "?". */
static const char *proc_name(struct net_task *t, int32_t pid)
{
	const struct net_proc *p = net__proc(t, pid);
	char path[32], buf[16] = "?";
	ssize_t n;
	int fd;

	if (p && p->p.name[0])
		return p->p.name;
	for (size_t i = 0; i < t->ncomms; i++)
		if (t->comms[i].pid == pid)
			return t->comms[i].comm;
	if (t->ncomms >= MAX_COMMS || pid <= 0)
		return "?";
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (!buf[0])
			snprintf(buf, sizeof(buf), "?");
	}
	if (net_task__set_comm(t, pid, buf))
		return "?";
	return t->comms[t->ncomms - 1].comm;
}

static bool data_valid(const struct net_rec_data *d)
{
	return d->conn_id && d->tgid && d->dir <= NET_DIR_INGRESS && d->dgram <= 1 &&
	       d->fn >= NET_FN_READ && d->fn < NET_FN_MAX && d->proto < NET_PROTO_MAX &&
	       d->captured <= d->actual && d->captured <= NET_CAPTURE_MAX && d->seq &&
	       d->end_ns >= d->start_ns && d->held <= NET_HOLD_MAX && d->held <= d->captured &&
	       d->held < d->actual &&
	       (!d->held || (d->held_end_ns >= d->start_ns && d->held_end_ns <= d->end_ns));
}

static void on_data(struct net_task *t, const struct net_rec_data *d, const uint8_t *bytes)
{
	struct net_conn_st *c;
	bool hole = false;
	uint64_t next;

	if (!data_valid(d)) {
		t->st.bad_records++;
		return;
	}
	c = net__conn_get(t, d->conn_id, d->tgid);
	if (!c)
		return;
	next = c->seq_next[d->dir] ? c->seq_next[d->dir] : 1;
	if (d->seq < next) {
		/* a segment again, or out of order: the program numbers them as it sends */
		t->st.bad_records++;
		return;
	}
	if (d->seq > next) {
		t->st.segments_lost += d->seq - next;
		hole = true;
	}
	c->seq_next[d->dir] = d->seq + 1;
	if (d->fn == NET_FN_TLS_READ || d->fn == NET_FN_TLS_WRITE)
		c->tls = true;
	if (d->held) {
		/*
		 * Two reads in one segment (a header the program held, then the rest): each
		 * part goes to the parser with its own read's time, as two segments would.
		 */
		struct net_rec_data h = *d, rest = *d;

		h.captured = h.actual = d->held;
		h.end_ns = d->held_end_ns;
		h.held = 0;
		rest.captured = (uint16_t)(d->captured - d->held);
		rest.actual = d->actual - d->held;
		rest.start_ns = d->held_end_ns;
		rest.held = 0;
		net__segment(t, c, &h, bytes, hole);
		net__segment(t, c, &rest, bytes + d->held, false);
		return;
	}
	net__segment(t, c, d, bytes, hole);
}

int net_task__frame(struct net_task *t, uint32_t type, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	struct ship_net_hdr h;
	size_t rest, off;

	if (!t || (!buf && len))
		return -EINVAL;
	if (len < sizeof(h))
		goto bad;
	memcpy(&h, p, sizeof(h));
	p += sizeof(h);
	rest = len - sizeof(h);
	if (h.task_id != t->o.task_id)
		goto bad;
	if (type == MSG_SHIP_NET_CONNS) {
		if (h.count > rest / sizeof(struct net_conn) ||
		    rest != (size_t)h.count * sizeof(struct net_conn))
			goto bad;
		_Static_assert(NET_STAT_MAX <= sizeof(h.stats) / sizeof(h.stats[0]), "stats fit");
		for (unsigned i = 0; i < NET_STAT_MAX; i++)
			t->st.kernel[i] += h.stats[i];
		for (uint32_t i = 0; i < h.count; i++) {
			struct net_conn nc;

			memcpy(&nc, p + (size_t)i * sizeof(nc), sizeof(nc));
			net__on_conn(t, &nc, false);
			net__alog_conn(t, &nc, false);
		}
		return 0;
	}
	if (type != MSG_SHIP_NET_DATA)
		goto bad;
	/* The framing first: a frame is taken whole or not at all. */
	off = 0;
	for (uint32_t i = 0; i < h.count; i++) {
		struct net_rec_hdr rh;

		if (rest - off < sizeof(rh))
			goto bad;
		memcpy(&rh, p + off, sizeof(rh));
		if (rh.len < sizeof(rh) || rh.len % 8 || rh.len > rest - off)
			goto bad;
		off += rh.len;
	}
	if (off != rest)
		goto bad;
	for (off = 0; off < rest;) {
		struct net_rec_hdr rh;

		memcpy(&rh, p + off, sizeof(rh));
		if (rh.kind == NET_REC_DATA && rh.len >= sizeof(struct net_rec_data)) {
			struct net_rec_data d;

			memcpy(&d, p + off, sizeof(d));
			if (d.captured > rh.len - sizeof(d))
				t->st.bad_records++;
			else
				on_data(t, &d, p + off + sizeof(d));
		} else if (rh.kind == NET_REC_CLOSE && rh.len >= sizeof(struct net_rec_close)) {
			struct net_rec_close cl;

			memcpy(&cl, p + off, sizeof(cl));
			net__on_conn(t, &cl.conn, true);
			net__alog_conn(t, &cl.conn, true);
		} else if (rh.kind == NET_REC_OPEN && rh.len >= sizeof(struct net_rec_open) &&
			   t->alog) {
			struct net_rec_open o;

			memcpy(&o, p + off, sizeof(o));
			if (o.conn.id)
				net__on_conn(t, &o.conn, false);
			net__alog_open(t, &o);
		} else if (rh.kind == NET_REC_CALL && rh.len >= sizeof(struct net_rec_call) &&
			   t->alog) {
			struct net_rec_call cr;

			memcpy(&cr, p + off, sizeof(cr));
			net__alog_call(t, &cr);
		} else {
			t->st.bad_records++;
		}
		off += rh.len;
	}
	return 0;
bad:
	t->st.bad_frames++;
	return -EBADMSG;
}

void net_task__stats(const struct net_task *t, struct net_stats *ret)
{
	*ret = t->st;
	for (const struct net_conn_st *c = t->lru_head; c; c = c->lnext) {
		if (c->l7)
			net__parser_counts(ret, c->pproto, c->ops, c->l7);
	}
}

struct sb {
	char *p;
	size_t len, cap;
	int err;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap ? b->cap : 4096;
			char *np;

			while (cap - b->len <= (size_t)n)
				cap *= 2;
			np = realloc(b->p, cap);
			if (!np) {
				b->err = -ENOMEM;
				return;
			}
			b->p = np;
			b->cap = cap;
		}
	}
}

static void sb_json_str(struct sb *b, const char *s)
{
	sb_printf(b, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			sb_printf(b, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			sb_printf(b, "\\u%04x", ch);
		else
			sb_printf(b, "%c", ch);
	}
	sb_printf(b, "\"");
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentiles of the reservoir, µs. */
void net__percentiles(const struct net_endpoint *e, uint32_t *tmp, uint64_t ret[3])
{
	static const unsigned pct[3] = { 50, 90, 99 };

	memset(ret, 0, 3 * sizeof(*ret));
	if (!e->nres)
		return;
	memcpy(tmp, e->res, e->nres * sizeof(*tmp));
	qsort(tmp, e->nres, sizeof(*tmp), u32_cmp);
	for (int i = 0; i < 3; i++) {
		size_t rank = ((size_t)e->nres * pct[i] + 99) / 100;

		ret[i] = tmp[rank ? rank - 1 : 0];
	}
}

static void remote_str(struct net_task *t, const struct net_traffic *tr, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (tr->rpid >= 0) {
		snprintf(buf, len, "%s(%d)", proc_name(t, tr->rpid), tr->rpid);
		return;
	}
	net__addr_str(tr->raddr, ip, sizeof(ip));
	if (net__is_v4(tr->raddr))
		snprintf(buf, len, tr->rport ? "%s:%u" : "%s:*", ip, tr->rport);
	else
		snprintf(buf, len, tr->rport ? "[%s]:%u" : "[%s]:*", ip, tr->rport);
}

static int ep_by_requests(const void *a, const void *b)
{
	const struct net_endpoint *x = *(struct net_endpoint *const *)a;
	const struct net_endpoint *y = *(struct net_endpoint *const *)b;

	return x->requests > y->requests ? -1 : x->requests < y->requests;
}

static const char *const kernel_names[NET_STAT_MAX] = {
	[NET_STAT_SYSCALLS] = "syscalls",	    [NET_STAT_CONNS_FULL] = "conns_full",
	[NET_STAT_INFLIGHT_FULL] = "inflight_full", [NET_STAT_DATA_RINGBUF] = "data_ringbuf",
	[NET_STAT_DATA_BUDGET] = "data_budget",	    [NET_STAT_DATA_BYTES_LOST] = "data_bytes_lost",
	[NET_STAT_CLOSE_RINGBUF] = "close_ringbuf", [NET_STAT_READ_FAULT] = "read_fault",
	[NET_STAT_TLS_CALLS] = "tls_calls",	    [NET_STAT_TLS_UNBOUND] = "tls_unbound",
	[NET_STAT_TLS_ADJACENT] = "tls_adjacent",   [NET_STAT_TLS_CALLS_FULL] = "tls_calls_full",
	[NET_STAT_CRED_DROPPED] = "cred_dropped",   [NET_STAT_CALL_RINGBUF] = "call_ringbuf",
	[NET_STAT_PKT_FULL] = "pkt_full",
};

void net__losses_each(const struct net_stats *s, net_loss_fn fn, void *ctx)
{
	const struct {
		const char *name;
		uint64_t v;
	} l[] = {
		{ "bad_frames", s->bad_frames },
		{ "bad_records", s->bad_records },
		{ "conns_refused", s->conns_refused },
		{ "conns_evicted", s->conns_evicted },
		{ "segments_lost", s->segments_lost },
		{ "http_unpaired", s->http_unpaired },
		{ "samples_dropped", s->samples_dropped },
		{ "traffic_refused", s->traffic_refused },
		{ "endpoints_refused", s->endpoints_refused },
		{ "alloc_failures", s->alloc_failures },
		{ "keep_refused", s->keep_refused },
		{ "raw_missed", s->raw_missed },
		{ "rule_limits", s->rule_limits },
		{ "raw_dropped", s->raw_dropped },
		{ "http_lost_segments", s->http.lost_segments },
		{ "http_gap_bytes", s->http.gap_bytes },
		{ "http_resyncs", s->http.resyncs },
		{ "http_requests_dropped", s->http.requests_dropped },
		{ "http_responses_dropped", s->http.responses_dropped },
		{ "http_unanswered", s->http.unanswered },
		{ "http_orphan_responses", s->http.orphan_responses },
		{ "http_framing_errors", s->http.framing_errors },
		{ "http_dirs_abandoned", s->http.dirs_abandoned },
		{ "http2_lost_segments", s->http2.lost_segments },
		{ "http2_gap_bytes", s->http2.gap_bytes },
		{ "http2_resyncs", s->http2.resyncs },
		{ "http2_framing_errors", s->http2.framing_errors },
		{ "http2_headers_undecodable", s->http2.headers_undecodable },
		{ "http2_hpack_missed_before_start", s->http2.hpack_missed_before_start },
		{ "http2_streams_dropped", s->http2.streams_dropped },
		{ "http2_streams_evicted", s->http2.streams_evicted },
		{ "http2_unanswered", s->http2.unanswered },
		{ "http2_orphan_responses", s->http2.orphan_responses },
		{ "http2_dirs_abandoned", s->http2.dirs_abandoned },
		{ "http2_alloc_failures", s->http2.alloc_failures },
		{ "parsers_refused", s->parsers_refused },
	};

	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		fn(ctx, l[i].name, false, l[i].v);
	fn(ctx, "l7_unpaired", false, s->l7_unpaired);
	for (uint8_t p = NET_PROTO_NONE + 1; p < NET_PROTO_MAX; p++) {
		const struct l7_stats *q = &s->l7[p];
		const struct {
			const char *name;
			uint64_t v;
		} m[] = {
			{ "lost_segments", q->lost_segments },
			{ "gap_bytes", q->gap_bytes },
			{ "resyncs", q->resyncs },
			{ "requests_dropped", q->requests_dropped },
			{ "responses_dropped", q->responses_dropped },
			{ "unanswered", q->unanswered },
			{ "orphan_responses", q->orphan_responses },
			{ "malformed", q->malformed },
			{ "dirs_abandoned", q->dirs_abandoned },
			{ "alloc_failures", q->alloc_failures },
		};

		/* the others report their own counts */
		if (!net__l7_ops(p) || net__l7_ops(p)->counts)
			continue;
		for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
			char name[64];

			snprintf(name, sizeof(name), "%s_%s", net__proto_name(p), m[i].name);
			fn(ctx, name, false, m[i].v);
		}
	}
	for (unsigned i = 0; i < NET_STAT_MAX; i++) {
		/* Counts, not losses: in the report's head and its "tls" part. */
		if (i == NET_STAT_SYSCALLS || i == NET_STAT_TLS_CALLS || i == NET_STAT_TLS_ADJACENT)
			continue;
		fn(ctx, kernel_names[i], true, s->kernel[i]);
	}
}

struct loss_out {
	struct sb *b;
	bool json, first;
	int nonzero;
};

/* JSON holds every counter (programs read them by name); the text, read by people, only
 * those that counted something. */
static void loss_put(void *ctx, const char *name, bool kernel, uint64_t v)
{
	struct loss_out *o = ctx;

	o->nonzero += v != 0;
	if (!o->json && !v)
		return;
	if (o->json)
		sb_printf(o->b, "%s\"%s%s\":%llu", o->first ? "" : ",", kernel ? "kernel_" : "",
			  name, (unsigned long long)v);
	else if (kernel)
		sb_printf(o->b, "  kernel %-17s %llu\n", name, (unsigned long long)v);
	else
		sb_printf(o->b, "  %-24s %llu\n", name, (unsigned long long)v);
	o->first = false;
}

/* Every loss counter into b: how many were not zero. */
static int losses(const struct net_stats *s, struct sb *b, bool json)
{
	struct loss_out o = { .b = b, .json = json, .first = true };

	net__losses_each(s, loss_put, &o);
	return o.nonzero;
}

void net_task__tls_lib(struct net_task *t, const struct net_tls_file *l)
{
	for (uint32_t i = 0; i < t->ntls; i++)
		if (t->tls[i].pid == l->pid && !strcmp(t->tls[i].path, l->path)) {
			t->tls[i] = *l;
			return;
		}
	if (t->ntls < NET_TLS_LIBS_MAX)
		t->tls[t->ntls++] = *l;
}

static void report_txt(struct net_task *t, const struct net_stats *s, struct sb *b, uint32_t *tmp)
{
	sb_printf(b,
		  "NETWORK task %llu: %llu intervals, %llu connections seen, %llu closed, "
		  "%llu HTTP exchanges, %llu syscalls traced\n",
		  (unsigned long long)t->o.task_id, (unsigned long long)t->intervals,
		  (unsigned long long)s->conns_seen, (unsigned long long)s->conns_closed,
		  (unsigned long long)s->http_exchanges,
		  (unsigned long long)s->kernel[NET_STAT_SYSCALLS]);
	sb_printf(b, "\nConnections (local process, role, remote):\n");
	for (size_t i = 0; i < t->ntotal; i++) {
		const struct net_traffic *tr = &t->total[i];
		char remote[300];

		remote_str(t, tr, remote, sizeof(remote));
		sb_printf(b,
			  "  %s(%d) %s %s %s%s%s: %llu requests, %llu B sent in %llu writes, "
			  "%llu B received in %llu reads, %llu connects, %llu closes, "
			  "%llu retransmits, %llu drops",
			  proc_name(t, tr->pid), tr->pid, net__role_name(tr->role),
			  tr->role == NET_ROLE_SERVER ? "<-" : "->", remote,
			  tr->proto > NET_PROTO_NONE ? " " : "",
			  tr->proto > NET_PROTO_NONE ? net__proto_name(tr->proto) : "",
			  (unsigned long long)tr->http.requests, (unsigned long long)tr->wr.bytes,
			  (unsigned long long)tr->wr.count, (unsigned long long)tr->rd.bytes,
			  (unsigned long long)tr->rd.count, (unsigned long long)tr->connect.count,
			  (unsigned long long)tr->close.count, (unsigned long long)tr->retrans,
			  (unsigned long long)tr->drops);
		if (tr->rtt.count)
			sb_printf(b, ", RTT avg %llu us",
				  (unsigned long long)(tr->rtt.exe / tr->rtt.count));
		sb_printf(b, "\n");
	}
	sb_printf(b, "\nEndpoints (local process, role, HTTP method and path, or another protocol, "
		     "its operation and target):\n");
	for (size_t i = 0; i < t->neps; i++) {
		const struct net_endpoint *e = t->eps[i];
		uint64_t p[3];

		net__percentiles(e, tmp, p);
		sb_printf(b, "  %s(%d) %s %s%s%s %s: %llu requests, %s", proc_name(t, e->pid),
			  e->pid, net__role_name(e->role),
			  e->proto == NET_PROTO_HTTP1 ? "" : net__ep_proto_name(e->proto),
			  e->proto == NET_PROTO_HTTP1 ? "" : " ", e->method, e->path,
			  (unsigned long long)e->requests,
			  e->proto == NET_PROTO_HTTP1 ? "status" : "codes");
		for (uint32_t k = 0; k < e->nstatus; k++)
			sb_printf(b, " %d:%llu", (int)e->status[k].code,
				  (unsigned long long)e->status[k].n);
		sb_printf(b,
			  ", %llu B requests, %llu B responses, latency p50 %.3f ms p90 %.3f ms "
			  "p99 %.3f ms\n",
			  (unsigned long long)e->req_bytes, (unsigned long long)e->resp_bytes,
			  p[0] / 1000.0, p[1] / 1000.0, p[2] / 1000.0);
	}
	sb_printf(b,
		  "\nTLS: %llu calls gave plaintext (%llu joined by the thread's last socket "
		  "call), %llu on no known connection\n",
		  (unsigned long long)s->kernel[NET_STAT_TLS_CALLS],
		  (unsigned long long)s->kernel[NET_STAT_TLS_ADJACENT],
		  (unsigned long long)s->kernel[NET_STAT_TLS_UNBOUND]);
	for (uint32_t i = 0; i < t->ntls; i++) {
		const struct net_tls_file *l = &t->tls[i];

		sb_printf(b, "  %s(%d) %s %s: ", proc_name(t, l->pid), l->pid,
			  tlsfind__lib_name(l->lib), l->path);
		if (l->err == 1)
			sb_printf(b, "%u probes sent, no answer\n", l->probes);
		else if (l->err)
			sb_printf(b, "not probed: %s\n", strerror(-l->err));
		else
			sb_printf(b, "%u probes\n", l->attached);
	}
	{
		size_t at = b->len;

		sb_printf(b, "\nLosses:\n");
		if (!losses(s, b, false) && !b->err) {
			b->len = at;
			sb_printf(b, "\nNo losses.\n");
		}
	}
}

static void report_json(struct net_task *t, const struct net_stats *s, struct sb *b, uint32_t *tmp)
{
	char ip[INET6_ADDRSTRLEN];

	sb_printf(b,
		  "{\"task_id\":%llu,\"intervals\":%llu,\"conns_seen\":%llu,\"conns_closed\":%llu,"
		  "\"http_exchanges\":%llu,\"l7_exchanges\":%llu,\"syscalls\":%llu,"
		  "\"connections\":[",
		  (unsigned long long)t->o.task_id, (unsigned long long)t->intervals,
		  (unsigned long long)s->conns_seen, (unsigned long long)s->conns_closed,
		  (unsigned long long)s->http_exchanges, (unsigned long long)s->l7_exchanges,
		  (unsigned long long)s->kernel[NET_STAT_SYSCALLS]);
	for (size_t i = 0; i < t->ntotal; i++) {
		const struct net_traffic *tr = &t->total[i];

		sb_printf(b, "%s{\"pid\":%d,\"comm\":", i ? "," : "", tr->pid);
		sb_json_str(b, proc_name(t, tr->pid));
		sb_printf(b, ",\"role\":\"%s\",\"protocol\":\"%s\",\"remote\":{",
			  net__role_name(tr->role), net__proto_name(tr->proto));
		if (tr->rpid >= 0) {
			sb_printf(b, "\"pid\":%d,\"comm\":", tr->rpid);
			sb_json_str(b, proc_name(t, tr->rpid));
		} else {
			net__addr_str(tr->raddr, ip, sizeof(ip));
			sb_printf(b, "\"ip\":");
			sb_json_str(b, ip);
			if (tr->rport)
				sb_printf(b, ",\"port\":%u", tr->rport);
		}
		sb_printf(b, ",\"local\":%s},\"ssl\":%s", tr->rlocal ? "true" : "false",
			  tr->ssl ? "true" : "false");
		sb_printf(b,
			  ",\"conns\":%llu,\"requests\":%llu,\"writes\":%llu,\"bytes_sent\":%llu,"
			  "\"reads\":%llu,\"bytes_received\":%llu,\"connects\":%llu,\"closes\":%llu,"
			  "\"retransmits\":%llu,\"drops\":%llu,\"rtt_samples\":%llu,\"rtt_avg_us\":%llu",
			  (unsigned long long)tr->conns, (unsigned long long)tr->http.requests,
			  (unsigned long long)tr->wr.count, (unsigned long long)tr->wr.bytes,
			  (unsigned long long)tr->rd.count, (unsigned long long)tr->rd.bytes,
			  (unsigned long long)tr->connect.count,
			  (unsigned long long)tr->close.count, (unsigned long long)tr->retrans,
			  (unsigned long long)tr->drops, (unsigned long long)tr->rtt.count,
			  (unsigned long long)(tr->rtt.count ? tr->rtt.exe / tr->rtt.count : 0));
		sb_printf(b, ",\"errors\":%llu,\"codes\":{", (unsigned long long)tr->http.errors);
		for (uint32_t k = 0; k < tr->http.nstatus; k++)
			sb_printf(b, "%s\"%d\":%llu", k ? "," : "", (int)tr->http.status[k].code,
				  (unsigned long long)tr->http.status[k].n);
		sb_printf(b, "}}");
	}
	sb_printf(b, "],\"endpoints\":[");
	for (size_t i = 0; i < t->neps; i++) {
		const struct net_endpoint *e = t->eps[i];
		uint64_t p[3];

		net__percentiles(e, tmp, p);
		sb_printf(b, "%s{\"pid\":%d,\"comm\":", i ? "," : "", e->pid);
		sb_json_str(b, proc_name(t, e->pid));
		sb_printf(b, ",\"role\":\"%s\",\"protocol\":\"%s\",\"method\":",
			  net__role_name(e->role), net__ep_proto_name(e->proto));
		sb_json_str(b, e->method);
		sb_printf(b, ",\"path\":");
		sb_json_str(b, e->path);
		sb_printf(b, ",\"requests\":%llu,\"status\":{", (unsigned long long)e->requests);
		for (uint32_t k = 0; k < e->nstatus; k++)
			sb_printf(b, "%s\"%d\":%llu", k ? "," : "", (int)e->status[k].code,
				  (unsigned long long)e->status[k].n);
		sb_printf(b,
			  "},\"req_bytes\":%llu,\"resp_bytes\":%llu,\"latency_samples\":%u,"
			  "\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f}}",
			  (unsigned long long)e->req_bytes, (unsigned long long)e->resp_bytes,
			  e->nres, p[0] / 1000.0, p[1] / 1000.0, p[2] / 1000.0);
	}
	sb_printf(b, "],\"tls_calls\":%llu,\"tls_adjacent\":%llu,\"tls\":[",
		  (unsigned long long)s->kernel[NET_STAT_TLS_CALLS],
		  (unsigned long long)s->kernel[NET_STAT_TLS_ADJACENT]);
	for (uint32_t i = 0; i < t->ntls; i++) {
		const struct net_tls_file *l = &t->tls[i];

		sb_printf(b, "%s{\"pid\":%d,\"path\":", i ? "," : "", l->pid);
		sb_json_str(b, l->path);
		sb_printf(b,
			  ",\"library\":\"%s\",\"probes\":%u,\"error\":", tlsfind__lib_name(l->lib),
			  l->attached);
		if (l->err == 1)
			sb_printf(b, "\"no answer\"");
		else if (l->err)
			sb_json_str(b, strerror(-l->err));
		else
			sb_printf(b, "null");
		sb_printf(b, "}");
	}
	sb_printf(b, "],\"losses\":{");
	losses(s, b, true);
	sb_printf(b, "}}\n");
}

static void summary_of(struct net_task *t, const struct net_stats *s, char *out, size_t len,
		       uint32_t *tmp)
{
	struct net_endpoint **v = NULL;
	struct sb b = { 0 };
	size_t n = t->neps < 5 ? t->neps : 5;

	sb_printf(&b, "%llu connections, %llu HTTP exchanges, %zu endpoints\n",
		  (unsigned long long)s->conns_seen, (unsigned long long)s->http_exchanges,
		  t->neps);
	if (t->neps) {
		v = malloc(t->neps * sizeof(*v));
		if (v) {
			memcpy(v, t->eps, t->neps * sizeof(*v));
			qsort(v, t->neps, sizeof(*v), ep_by_requests);
		} else {
			n = 0;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t p[3];

		net__percentiles(v[i], tmp, p);
		sb_printf(&b, "%s %s (%s(%d) %s): %llu requests, p99 %.3f ms\n", v[i]->method,
			  v[i]->path, proc_name(t, v[i]->pid), v[i]->pid,
			  net__role_name(v[i]->role), (unsigned long long)v[i]->requests,
			  p[2] / 1000.0);
	}
	free(v);
	if (len) {
		size_t k = b.err || !b.p ? 0 : (b.len < len ? b.len : len - 1);

		if (k)
			memcpy(out, b.p, k);
		out[k] = '\0';
	}
	free(b.p);
}

int net_task__write_report(struct net_task *t, FILE *out, enum net_report_format f, char *summary,
			   size_t summary_len)
{
	struct net_stats s;
	struct sb b = { 0 };
	uint32_t *tmp;
	int err;

	if (!t || (f != NET_REPORT_TXT && f != NET_REPORT_JSON && f != NET_REPORT_HTML) ||
	    (summary_len && !summary))
		return -EINVAL;
	tmp = malloc(RESERVOIR_MAX * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	net_task__stats(t, &s);
	if (f == NET_REPORT_TXT)
		report_txt(t, &s, &b, tmp);
	else if (f == NET_REPORT_JSON)
		report_json(t, &s, &b, tmp);
	err = b.err;
	if (!err && out && f == NET_REPORT_HTML)
		err = net__report_html(t, &s, out, tmp);
	else if (!err && out && fwrite(b.p, 1, b.len, out) != b.len)
		err = -EIO;
	if (!err && summary_len)
		summary_of(t, &s, summary, summary_len, tmp);
	free(b.p);
	free(tmp);
	return err;
}

void net_task__set_head(struct net_task *t, const struct net_report_head *h)
{
	t->head = *h;
	if (t->head.npids > ROVER_MAX_PIDS)
		t->head.npids = ROVER_MAX_PIDS;
	t->have_head = true;
}
