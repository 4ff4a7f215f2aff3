// SPDX-License-Identifier: Apache-2.0
/*
 * A NETWORK task's analysis (see network.h): the worker's frames into per-connection state,
 * per-connection state into traffic at every interval, traffic into the report. The OAP's
 * meters and sampled traces are built from the same traffic in netmeter.c.
 *
 * Connections are found by id in a chained hash and kept on a list, least recently updated
 * first: at max_conns, the least recently updated one goes if it has been idle long enough
 * (its close record was lost, NET_STAT_CLOSE_RINGBUF), else the new one is refused. A closed
 * connection stays CLOSED_KEEP intervals after its close was counted, for peer resolution,
 * as upstream keeps closed ones for two flushes.
 *
 * The keeper: while some rule requires complete requests or responses, each HTTP connection
 * keeps its recent segments per direction (bytes and times), for the span attached events of
 * the exchanges that get sampled: the parser keeps no bytes. Offsets count every byte the
 * syscalls moved, so a message is cut out at its offset for as many bytes as the parser
 * counted in it. Where the next message begins is known from the one before; that guess is
 * checked against a start line at the offset (or at a later segment start or line start,
 * where a message seen by nobody, a skipped request or garbage, moved it), and a request is
 * looked for only in the segments the parser timed its first byte with. Approximations:
 *  - a message is kept from its start for keep_run bytes, counted from the last segment that
 *    began with a start line: pipelined messages sharing that run may be kept in part or not
 *    at all (their events then say less or are not sent, counted in raw_missed);
 *  - the bytes after the first one not captured (a syscall larger than the capture) are not
 *    part of the content: what the content shows stops there;
 *  - lost segments of unknown size end everything kept before them in that direction.
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
#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/netpriv.h"
#include "shipper/network/tlsfind.h"

#define DEFAULT_MAX_CONNS 16384u
#define MAX_CONNS_LIMIT (1u << 20)
#define CLOSED_KEEP 2u
/* Intervals without a record after which a connection may make room for a new one. */
#define IDLE_EVICT 30u
#define MAX_PROCS 4096u
#define MAX_RULES 64u
#define MAX_COMMS 1024u
/* Report bounds: connection pairs and endpoints the whole task keeps. */
#define MAX_TOTAL 4096u
#define MAX_ENDPOINTS 1024u
/*
 * Latency percentiles per endpoint come from a reservoir (Vitter's algorithm R) of up to
 * RESERVOIR_MAX durations in µs: exact up to that many requests, a uniform sample beyond;
 * 16 KiB per endpoint at most.
 */
#define RESERVOIR_MAX 4096u
/* Sampled traces held by the task before an interval moves them into traffic. */
#define MAX_SAMPLES_HELD 2048u
/*
 * The keeper's bounds: segments and bytes per direction of a connection (two messages' worth
 * of keep_run), bytes of the whole task; and the content of the samples' events held.
 */
#define KEEP_SEGS_MAX 256u
#define KEEP_TOTAL_MAX (32u << 20)
#define RAW_HELD_MAX (16u << 20)
/*
 * Parsers alive in a task: every byte a parser holds is sized by a traced process, which can
 * open connections at will. HTTP/1 and the other protocols' parsers hold at most about 150 KiB
 * each (a full pending ring), HTTP/2's about 1.1 MiB (256 stream slots and its HPACK budget):
 * at most about 300 + 280 MiB in all, however many connections there are. A connection over
 * the bound is measured at L4 only, counted in parsers_refused.
 */
#define MAX_PARSERS 2048u
#define MAX_H2_PARSERS 256u

const uint64_t net_l4_buckets_ns[NET_L4_BUCKETS] = {
	0,	   10000,     50000,	 100000,    500000,    1000000,	  1200000,
	1500000,   1700000,   2000000,	 2500000,   3000000,   5000000,	  7000000,
	10000000,  13000000,  16000000,	 20000000,  25000000,  30000000,  35000000,
	40000000,  45000000,  50000000,	 70000000,  100000000, 150000000, 200000000,
	300000000, 500000000, 1000000000, 2000000000, 3000000000, 5000000000,
};

const uint64_t net_size_buckets[NET_SIZE_BUCKETS] = {
	256,	 512,	  1048,	   1536,     2048,     3072,	 5120,	   8192,     10240,
	15360,	 20480,	  35840,   51200,    76800,    102400,	 204800,   512000,   819200,
	1048576, 1572864, 2097152, 5242880, 10485760, 20971520, 52428800,
};

const uint64_t net_dur_buckets_ms[NET_DUR_BUCKETS] = {
	1,   2,	  5,   10,  15,	 20,  25,  30,	 40,   45,   50,   60,	  65,	 70,   80,
	90,  100, 110, 130, 150, 170, 200, 230,	 260,  290,  330,  380,	  430,	 480,  500,
	600, 700, 800, 900, 1000, 1100, 1300, 1500, 1800, 2000, 5000, 10000, 15000, 20000, 30000,
};

/* A segment the keeper holds: the first len of the actual bytes a syscall moved. */
struct net_kseg {
	struct net_kseg *next;
	uint64_t off; /* of its first byte in its direction's stream */
	uint64_t ts;  /* the time the parser was given with it */
	uint64_t start_ns, end_ns;
	uint32_t actual;
	uint32_t len;
	uint8_t data[];
};

struct net_keep_dir {
	struct net_kseg *head, *tail;
	uint32_t nsegs;
	uint64_t bytes;	 /* kept */
	uint64_t off;	 /* of the next segment */
	uint64_t run;	 /* kept since the last segment that began with a start line */
	uint64_t cursor; /* where the next message should begin */
};

/* Where the keeper found a message of an exchange. */
struct net_pos {
	bool found;
	uint64_t off, bytes;
};

struct net_conn_st {
	struct net_conn_st *hnext, *lprev, *lnext;
	uint64_t id;
	bool have_conn; /* a conns or close record gave addresses and counters */
	bool closed, connect_done, close_done;
	bool counted; /* in some interval's traffic already: conns counts it once */
	bool tls;     /* plaintext of a TLS library came for it */
	uint32_t idle;	     /* intervals without a record */
	uint32_t closed_for; /* intervals since closed */
	struct net_conn cur;  /* the latest cumulative counters */
	struct net_conn base; /* at the previous interval */
	uint8_t laddr[16], raddr[16]; /* canonical */
	uint64_t seq_next[2];
	uint64_t last_ts;
	/* Its protocol's parser (shipper/network/protocols/l7.h), of enum net_proto `pproto` */
	const struct l7_ops *ops;
	void *l7;
	uint8_t pproto;	 /* enum net_proto of the parser made for it, 0 before */
	bool fed_plain;	 /* its parser was fed the wire's bytes, not a TLS library's */
	/* its parser's last exchange switched protocols: the next segment may begin ops->then */
	bool switching;
	bool restart; /* its parser ended: a new one of the same protocol is to come */
	struct net_keep_dir *keep; /* [2] by enum net_dir, or NULL */
	struct net_http_acc acc;
	/* interval scratch */
	uint8_t role;
	int32_t rpid;
};

struct net_endpoint {
	int32_t pid;
	uint8_t role;
	uint8_t proto; /* HTTP1 for HTTP/1 and HTTP/2; another protocol: method is its op */
	char method[L7_OP_MAX + 1];
	char path[HTTP1_URI_MAX + 1];
	uint64_t requests, req_bytes, resp_bytes;
	struct net_status *status;
	uint32_t nstatus;
	uint32_t *res; /* durations, µs */
	uint32_t nres, capres;
	uint64_t seen;
};

/* ---- small helpers ---- */

static uint64_t d64(uint64_t cur, uint64_t base)
{
	return cur >= base ? cur - base : 0;
}

static uint64_t rng_next(struct net_task *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1DULL;
}

/* Upstream's kernel-side search, its quirk included: >= 3 s lands in the 5 s bucket. */
static unsigned l4_bucket(uint64_t ns)
{
	for (unsigned i = 1; i < NET_L4_BUCKETS - 1; i++)
		if (net_l4_buckets_ns[i] > ns)
			return i - 1;
	return NET_L4_BUCKETS - 1;
}

/* Upstream's user-side histograms: the last lower bound <= v, the first for smaller ones. */
static unsigned low_bucket(const uint64_t *b, unsigned n, uint64_t v)
{
	unsigned i = 0;

	while (i + 1 < n && b[i + 1] <= v)
		i++;
	return i;
}

static void canon_addr(uint8_t family, const uint8_t in[16], uint8_t out[16])
{
	if (family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, in, 4);
	} else {
		memcpy(out, in, 16);
	}
}

static bool is_v4(const uint8_t a[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(a, pfx, 12);
}

static bool addr_zero(const uint8_t a[16])
{
	static const uint8_t z[16];

	return !memcmp(a, z, 16) || (is_v4(a) && !memcmp(a + 12, z, 4));
}

static bool addr_loopback(const uint8_t a[16])
{
	static const uint8_t v6lo[16] = { [15] = 1 };

	if (addr_zero(a))
		return true;
	if (is_v4(a))
		return a[12] == 127;
	return !memcmp(a, v6lo, 16);
}

/*
 * The parsers shipper/network/protocols/l7.h names. Weak: a build may leave one out (each is
 * its own file), and its protocol is then measured at L4 only, as any other.
 */
extern const struct l7_ops l7_http1_ops __attribute__((weak));
extern const struct l7_ops l7_http2_ops __attribute__((weak));
extern const struct l7_ops l7_mysql_ops __attribute__((weak));
extern const struct l7_ops l7_cql_ops __attribute__((weak));
extern const struct l7_ops l7_mongo_ops __attribute__((weak));
extern const struct l7_ops l7_kafka_ops __attribute__((weak));
extern const struct l7_ops l7_dns_ops __attribute__((weak));

/* Each protocol the program tells: its parser, and how a task accounts it. */
static const struct net_parser {
	const struct l7_ops *ops;
	size_t counts; /* where its parsers' counts add up in struct net_stats */
	uint8_t meters; /* the protocol whose meters its exchanges feed */
	/* the program's word alone makes a connection's traffic this protocol's */
	bool by_kernel;
} net_parsers[NET_PROTO_MAX] = {
	[NET_PROTO_HTTP1] = { &l7_http1_ops, offsetof(struct net_stats, http), NET_PROTO_HTTP1,
			      true },
	[NET_PROTO_HTTP2] = { &l7_http2_ops, offsetof(struct net_stats, http2), NET_PROTO_HTTP1,
			      true },
	[NET_PROTO_MYSQL] = { &l7_mysql_ops, offsetof(struct net_stats, l7[NET_PROTO_MYSQL]),
			      NET_PROTO_MYSQL },
	[NET_PROTO_CQL] = { &l7_cql_ops, offsetof(struct net_stats, l7[NET_PROTO_CQL]),
			    NET_PROTO_CQL },
	[NET_PROTO_MONGO] = { &l7_mongo_ops, offsetof(struct net_stats, l7[NET_PROTO_MONGO]),
			      NET_PROTO_MONGO },
	[NET_PROTO_KAFKA] = { &l7_kafka_ops, offsetof(struct net_stats, l7[NET_PROTO_KAFKA]),
			      NET_PROTO_KAFKA },
	[NET_PROTO_DNS] = { &l7_dns_ops, offsetof(struct net_stats, l7[NET_PROTO_DNS]),
			    NET_PROTO_DNS },
};

const struct l7_ops *net__l7_ops(uint8_t proto)
{
	return proto < NET_PROTO_MAX ? net_parsers[proto].ops : NULL;
}

const char *net__proto_name(uint8_t proto)
{
	const struct l7_ops *o = net__l7_ops(proto);

	return o ? o->name : "unknown";
}

/* An endpoint's protocol beyond enum net_proto: gRPC calls (over HTTP/2). */
#define EP_GRPC NET_PROTO_MAX

static const char *ep_proto_name(uint8_t proto)
{
	if (proto == NET_PROTO_HTTP2)
		return "http2";
	if (proto == EP_GRPC)
		return "grpc";
	return net__proto_name(proto);
}

const char *net__role_name(uint8_t role)
{
	return role == NET_ROLE_SERVER ? "server" : "client";
}

void net__addr_str(const uint8_t a[16], char *buf, size_t len)
{
	if (len < INET6_ADDRSTRLEN ||
	    !inet_ntop(is_v4(a) ? AF_INET : AF_INET6, is_v4(a) ? a + 12 : a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

const struct net_proc *net__proc(const struct net_task *t, int32_t pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	return NULL;
}

static int status_add(struct net_status **v, uint32_t *n, int32_t code, uint64_t k)
{
	uint32_t i = 0;
	struct net_status *nv;

	while (i < *n && (*v)[i].code < code)
		i++;
	if (i < *n && (*v)[i].code == code) {
		(*v)[i].n += k;
		return 0;
	}
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	memmove(nv + i + 1, nv + i, (*n - i) * sizeof(*nv));
	nv[i].code = code;
	nv[i].n = k;
	*v = nv;
	(*n)++;
	return 0;
}

void net__sample_free(struct net_task *t, struct net_sample *s)
{
	if (!s)
		return;
	for (int i = 0; i < 2; i++) {
		if (s->raw[i])
			t->raw_held -= s->raw[i]->len;
		free(s->raw[i]);
	}
	free(s);
}

static void acc_release(struct net_task *t, struct net_http_acc *a)
{
	free(a->status);
	for (int r = 0; r < NET_REASONS; r++) {
		t->samples_held -= a->nsamples[r];
		for (uint32_t i = 0; i < a->nsamples[r]; i++)
			net__sample_free(t, a->samples[r][i]);
	}
	memset(a, 0, sizeof(*a));
}

/* Takes s: kept among the NET_TOPN slowest of its reason, or freed. */
static void topn_add(struct net_task *t, struct net_http_acc *a, int reason, struct net_sample *s)
{
	struct net_sample **v = a->samples[reason];
	uint32_t n = a->nsamples[reason], m = 0;

	if (n < NET_TOPN) {
		v[a->nsamples[reason]++] = s;
		return;
	}
	for (uint32_t i = 1; i < n; i++)
		if (v[i]->latency_ms < v[m]->latency_ms)
			m = i;
	t->samples_held--;
	if (s->latency_ms > v[m]->latency_ms) {
		net__sample_free(t, v[m]);
		v[m] = s;
	} else {
		net__sample_free(t, s);
	}
}

/* Adds src into dst; src's samples move to dst (src is left empty). */
static void acc_merge(struct net_task *t, struct net_http_acc *dst, struct net_http_acc *src,
		      bool samples)
{
	dst->requests += src->requests;
	dst->req_bytes += src->req_bytes;
	dst->resp_bytes += src->resp_bytes;
	dst->dur_ms += src->dur_ms;
	dst->errors += src->errors;
	for (unsigned i = 0; i < NET_SIZE_BUCKETS; i++) {
		dst->req_hist[i] += src->req_hist[i];
		dst->resp_hist[i] += src->resp_hist[i];
	}
	for (unsigned i = 0; i < NET_DUR_BUCKETS; i++)
		dst->dur_hist[i] += src->dur_hist[i];
	for (uint32_t i = 0; i < src->nstatus; i++)
		if (status_add(&dst->status, &dst->nstatus, src->status[i].code, src->status[i].n))
			t->st.alloc_failures++;
	if (!samples)
		return;
	for (int r = 0; r < NET_REASONS; r++) {
		for (uint32_t i = 0; i < src->nsamples[r]; i++)
			topn_add(t, dst, r, src->samples[r][i]);
		src->nsamples[r] = 0;
	}
}

/* ---- task ---- */

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
	snprintf(t->prefix, sizeof(t->prefix), "%s_", o->meter_prefix ? o->meter_prefix : "rover_net_p");
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

static void conn_unlink(struct net_task *t, struct net_conn_st *c)
{
	struct net_conn_st **pp = &t->hash[c->id & t->hash_mask];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		t->lru_head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	else
		t->lru_tail = c->lprev;
	t->nconns--;
}

static void keep_drop_head(struct net_task *t, struct net_keep_dir *k)
{
	struct net_kseg *g = k->head;

	k->head = g->next;
	if (!k->head)
		k->tail = NULL;
	k->nsegs--;
	k->bytes -= g->len;
	t->keep_bytes -= g->len;
	free(g);
}

static void keep_free(struct net_task *t, struct net_conn_st *c)
{
	if (!c->keep)
		return;
	for (int d = 0; d < 2; d++)
		while (c->keep[d].head)
			keep_drop_head(t, &c->keep[d]);
	free(c->keep);
	c->keep = NULL;
}

/* The counts of a parser of proto, added into the task's stats s. */
static void parser_counts(struct net_stats *s, uint8_t proto, const struct l7_ops *o,
			  const void *p)
{
	uint64_t buf[64];
	size_t n = o->counts ? o->counts_size : sizeof(struct l7_stats);
	uint64_t *dv = (uint64_t *)((char *)s + net_parsers[proto].counts);

	_Static_assert(sizeof(struct l7_stats) % sizeof(uint64_t) == 0, "only uint64_t counters");
	if (n > sizeof(buf) || n % sizeof(uint64_t))
		return;
	if (o->counts)
		o->counts(p, buf);
	else
		o->stats(p, (struct l7_stats *)buf);
	for (size_t i = 0; i < n / sizeof(uint64_t); i++)
		dv[i] += buf[i];
}

/* Room for one more parser of o in the task; counted when there is none. */
static bool parser_take(struct net_task *t, const struct l7_ops *o)
{
	uint32_t *n = o->heavy ? &t->nh2parsers : &t->nparsers;

	if (*n >= (o->heavy ? MAX_H2_PARSERS : MAX_PARSERS)) {
		t->st.parsers_refused++;
		return false;
	}
	(*n)++;
	return true;
}

static void parser_give(struct net_task *t, const struct l7_ops *o)
{
	if (o->heavy)
		t->nh2parsers--;
	else
		t->nparsers--;
}

/* The connection's parser goes, its counts into the task's. */
static void l7_drop(struct net_task *t, struct net_conn_st *c)
{
	if (!c->l7)
		return;
	parser_counts(&t->st, c->pproto, c->ops, c->l7);
	c->ops->free_conn(c->l7);
	c->l7 = NULL;
	parser_give(t, c->ops);
}

static void conn_free(struct net_task *t, struct net_conn_st *c)
{
	keep_free(t, c);
	l7_drop(t, c);
	acc_release(t, &c->acc);
	free(c);
}

static void ep_free(struct net_endpoint *e)
{
	if (!e)
		return;
	free(e->status);
	free(e->res);
	free(e);
}

static void traffic_free(struct net_task *t, struct net_traffic *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		acc_release(t, &v[i].http);
	free(v);
}

void net_task__free(struct net_task *t)
{
	if (!t)
		return;
	while (t->lru_head) {
		struct net_conn_st *c = t->lru_head;

		conn_unlink(t, c);
		conn_free(t, c);
	}
	free(t->hash);
	traffic_free(t, t->last, t->nlast);
	traffic_free(t, t->total, t->ntotal);
	for (size_t i = 0; i < t->neps; i++)
		ep_free(t->eps[i]);
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

/* ---- connections ---- */

static void lru_touch(struct net_task *t, struct net_conn_st *c)
{
	c->idle = 0;
	if (t->lru_tail == c)
		return;
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		t->lru_head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	c->lprev = t->lru_tail;
	c->lnext = NULL;
	if (t->lru_tail)
		t->lru_tail->lnext = c;
	else
		t->lru_head = c;
	t->lru_tail = c;
}

static struct net_conn_st *conn_find(struct net_task *t, uint64_t id)
{
	struct net_conn_st *c = t->hash[id & t->hash_mask];

	while (c && c->id != id)
		c = c->hnext;
	return c;
}

/*
 * The connection id of process tgid: found, or new. NULL when refused (table full, counted) or
 * when the id is another process's (a bad record, counted).
 */
static struct net_conn_st *conn_get(struct net_task *t, uint64_t id, uint32_t tgid)
{
	struct net_conn_st *c = conn_find(t, id);

	if (c && c->cur.tgid != tgid) {
		t->st.bad_records++;
		return NULL;
	}
	if (c) {
		lru_touch(t, c);
		return c;
	}
	if (t->nconns >= t->o.max_conns) {
		struct net_conn_st *old = t->lru_head;

		if (!old || old->idle < IDLE_EVICT) {
			t->st.conns_refused++;
			return NULL;
		}
		conn_unlink(t, old);
		conn_free(t, old);
		t->st.conns_evicted++;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		t->st.alloc_failures++;
		return NULL;
	}
	c->id = id;
	c->cur.id = id;
	c->cur.tgid = tgid;
	c->hnext = t->hash[id & t->hash_mask];
	t->hash[id & t->hash_mask] = c;
	c->lprev = t->lru_tail;
	if (t->lru_tail)
		t->lru_tail->lnext = c;
	else
		t->lru_head = c;
	t->lru_tail = c;
	t->nconns++;
	t->st.conns_seen++;
	return c;
}

static uint8_t role_now(const struct net_conn_st *c, uint8_t req_dir)
{
	if (c->cur.role == NET_ROLE_CLIENT || c->cur.role == NET_ROLE_SERVER)
		return c->cur.role;
	if (c->l7) {
		enum l7_role r = c->ops->role(c->l7);

		if (r == L7_ROLE_CLIENT)
			return NET_ROLE_CLIENT;
		if (r == L7_ROLE_SERVER)
			return NET_ROLE_SERVER;
	}
	return req_dir == L7_INGRESS ? NET_ROLE_SERVER : NET_ROLE_CLIENT;
}

static int ep_cmp(int32_t pid, uint8_t role, uint8_t proto, const char *method, const char *path,
		  const struct net_endpoint *e)
{
	int r;

	if (pid != e->pid)
		return pid < e->pid ? -1 : 1;
	if (role != e->role)
		return role < e->role ? -1 : 1;
	if (proto != e->proto)
		return proto < e->proto ? -1 : 1;
	r = strcmp(method, e->method);
	return r ? r : strcmp(path, e->path);
}

/*
 * An exchange of endpoint (method, path): an HTTP method and path, or another protocol's op
 * and target (proto says which).
 */
static void ep_add(struct net_task *t, int32_t pid, uint8_t role, uint8_t proto,
		   const char *method, const char *path, uint64_t req_bytes, uint64_t resp_bytes,
		   int32_t code, uint64_t dur_ns)
{
	size_t lo = 0, hi = t->neps;
	struct net_endpoint *e = NULL;
	uint64_t us = dur_ns / 1000;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = ep_cmp(pid, role, proto, method, path, t->eps[mid]);

		if (!r) {
			e = t->eps[mid];
			break;
		}
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (!e) {
		struct net_endpoint **v;

		if (t->neps >= MAX_ENDPOINTS) {
			t->st.endpoints_refused++;
			return;
		}
		v = realloc(t->eps, (t->neps + 1) * sizeof(*v));
		e = calloc(1, sizeof(*e));
		if (v)
			t->eps = v;
		if (!v || !e) {
			free(e);
			t->st.alloc_failures++;
			return;
		}
		e->pid = pid;
		e->role = role;
		e->proto = proto;
		snprintf(e->method, sizeof(e->method), "%s", method);
		snprintf(e->path, sizeof(e->path), "%s", path);
		memmove(t->eps + lo + 1, t->eps + lo, (t->neps - lo) * sizeof(*t->eps));
		t->eps[lo] = e;
		t->neps++;
	}
	e->requests++;
	e->req_bytes += req_bytes;
	e->resp_bytes += resp_bytes;
	if (status_add(&e->status, &e->nstatus, code, 1))
		t->st.alloc_failures++;
	if (us > UINT32_MAX)
		us = UINT32_MAX;
	e->seen++;
	if (e->nres < RESERVOIR_MAX) {
		if (e->nres == e->capres) {
			uint32_t cap = e->capres ? e->capres * 2 : 16;
			uint32_t *v = realloc(e->res, cap * sizeof(*v));

			if (!v) {
				t->st.alloc_failures++;
				return;
			}
			e->res = v;
			e->capres = cap;
		}
		e->res[e->nres++] = (uint32_t)us;
	} else {
		uint64_t j = rng_next(t) % e->seen;

		if (j < RESERVOIR_MAX)
			e->res[j] = (uint32_t)us;
	}
}

static const struct net_rule *rule_for(struct net_task *t, const char *path)
{
	const struct net_rule *def = NULL, *hit = NULL;

	for (size_t i = 0; i < t->nrules; i++) {
		const struct net_rule *r = &t->rules[i];
		int rc;

		if (!r->has_re) {
			def = r;
			continue;
		}
		rc = pcre2_match(r->re, (PCRE2_SPTR)path, PCRE2_ZERO_TERMINATED, 0, 0, r->md,
				 t->mctx);
		if (rc >= 0)
			hit = r; /* the last match wins, as upstream's loop */
		else if (rc != PCRE2_ERROR_NOMATCH)
			t->st.rule_limits++;
	}
	return hit ? hit : def;
}

/* ---- the keeper (see the top of this file) ---- */

/* A segment fed to the parser at ts; hole: segments of this direction were lost before it. */
static void keep_add(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		     const uint8_t *bytes, uint64_t ts, bool hole)
{
	struct net_keep_dir *k;
	struct net_kseg *g;
	uint32_t len = d->captured;

	if (!t->keep_run || !c->l7 || !c->ops->keepable)
		return;
	if (!c->keep) {
		c->keep = calloc(2, sizeof(*c->keep));
		if (!c->keep) {
			t->st.alloc_failures++;
			return;
		}
	}
	k = &c->keep[d->dir];
	if (hole) {
		/* Offsets after a hole of unknown size do not follow the ones before. */
		while (k->head)
			keep_drop_head(t, k);
		k->cursor = k->off;
	}
	if (!d->actual)
		return;
	if (c->ops->detect(bytes, d->captured) > 0)
		k->run = 0;
	if (k->run >= t->keep_run)
		len = 0;
	else if (len > t->keep_run - k->run)
		len = (uint32_t)(t->keep_run - k->run);
	if (len && t->keep_bytes + len > KEEP_TOTAL_MAX) {
		t->st.keep_refused += len;
		len = 0;
	}
	g = k->tail;
	if (!len && g && g->off + g->actual == k->off && g->actual <= UINT32_MAX - d->actual) {
		/* Nothing kept of it: its time and size go to the segment before. */
		g->actual += d->actual;
		g->end_ns = d->end_ns;
		k->off += d->actual;
		return;
	}
	g = malloc(sizeof(*g) + len);
	if (!g) {
		t->st.alloc_failures++;
		k->off += d->actual;
		return;
	}
	g->next = NULL;
	g->off = k->off;
	g->ts = ts;
	g->start_ns = d->start_ns;
	g->end_ns = d->end_ns;
	g->actual = d->actual;
	g->len = len;
	memcpy(g->data, bytes, len);
	if (k->tail)
		k->tail->next = g;
	else
		k->head = g;
	k->tail = g;
	k->nsegs++;
	k->bytes += len;
	k->run += len;
	k->off += d->actual;
	t->keep_bytes += len;
	while (k->nsegs > KEEP_SEGS_MAX || k->bytes > 2 * (uint64_t)t->keep_run)
		keep_drop_head(t, k);
}

/* Up to len kept bytes from off on, as long as they follow each other. */
static size_t keep_peek(const struct net_kseg *g, uint64_t off, uint8_t *out, size_t len)
{
	size_t n = 0;

	for (; g && n < len; g = g->next) {
		size_t from, k;

		if (g->off + g->len <= off)
			continue;
		if (g->off > off)
			break;
		from = (size_t)(off - g->off);
		k = g->len - from < len - n ? g->len - from : len - n;
		memcpy(out + n, g->data + from, k);
		n += k;
		off += k;
		if (g->len < g->actual)
			break; /* the rest of it was not captured */
	}
	return n;
}

/*
 * The first place at or after from where a message of kind (L7_DETECT_*, by detect) begins,
 * in segments timed ts_lo..ts_hi: from itself, a segment's start, or a line's.
 */
static bool keep_find(const struct net_keep_dir *k, int (*detect)(const uint8_t *, size_t),
		      uint64_t from, int kind, uint64_t ts_lo, uint64_t ts_hi, uint64_t *ret_off)
{
	for (const struct net_kseg *g = k->head; g; g = g->next) {
		uint64_t q = from > g->off ? from : g->off;

		if (g->ts < ts_lo || g->ts > ts_hi)
			continue;
		for (; q < g->off + g->len; q++) {
			uint8_t peek[16];
			size_t n;

			if (q != from && q != g->off && g->data[q - g->off - 1] != '\n')
				continue;
			n = keep_peek(g, q, peek, sizeof(peek));
			if (detect(peek, n) == kind) {
				*ret_off = q;
				return true;
			}
		}
	}
	return false;
}

/*
 * Where the exchange's request and response begin, each direction's guess moved past them.
 * Every exchange goes through here, sampled or not, so that the guesses follow the streams.
 */
static void keep_locate(struct net_conn_st *c, const struct l7_exchange *x,
			struct net_pos ret[2])
{
	struct net_keep_dir *q = &c->keep[x->req_dir & 1], *r = &c->keep[!(x->req_dir & 1)];
	int (*detect)(const uint8_t *, size_t) = c->ops->detect;
	uint64_t off;

	if (!(x->flags & L7_F_NO_REQUEST) && x->req_bytes &&
	    keep_find(q, detect, q->cursor, L7_DETECT_REQUEST, x->start_ns, x->start_ns, &off)) {
		ret[0] = (struct net_pos){ .found = true, .off = off, .bytes = x->req_bytes };
		q->cursor = off + x->req_bytes;
	}
	if (!(x->flags & L7_F_NO_RESPONSE) && x->resp_bytes &&
	    keep_find(r, detect, r->cursor, L7_DETECT_RESPONSE, x->start_ns, x->end_ns, &off)) {
		ret[1] = (struct net_pos){ .found = true, .off = off, .bytes = x->resp_bytes };
		r->cursor = off + x->resp_bytes;
	}
}

/*
 * The event's form of a message found at pos: content of at most max bytes (0: NET_RAW_MAX),
 * times from its segments. NULL when it is no longer kept, or over the bounds (counted).
 */
static struct net_raw *keep_raw(struct net_task *t, struct net_conn_st *c, int dir,
				const struct net_pos *pos, uint32_t max)
{
	const struct net_keep_dir *k = &c->keep[dir];
	uint64_t start_ns = 0, end_ns = 0;
	struct net_raw *raw = NULL;
	uint8_t *msg = NULL;
	char *out = NULL;
	bool seen = false;
	size_t n, clen;

	if (!max || max > NET_RAW_MAX)
		max = NET_RAW_MAX;
	for (const struct net_kseg *g = k->head; g; g = g->next) {
		if (g->off + g->actual <= pos->off || g->off >= pos->off + pos->bytes)
			continue;
		if (!seen)
			start_ns = g->start_ns;
		seen = true;
		end_ns = g->end_ns;
	}
	if (!seen) {
		t->st.raw_missed++;
		return NULL;
	}
	msg = malloc(NET_RAW_MAX);
	out = malloc(max + NET_CONTENT_SLACK);
	if (!msg || !out) {
		t->st.alloc_failures++;
		goto cleanup;
	}
	n = keep_peek(k->head, pos->off, msg, pos->bytes < NET_RAW_MAX ? pos->bytes : NET_RAW_MAX);
	if (!n) {
		t->st.raw_missed++;
		goto cleanup;
	}
	clen = net__http_content(msg, n, max, out, max + NET_CONTENT_SLACK);
	if (t->raw_held + clen > RAW_HELD_MAX) {
		t->st.raw_dropped++;
		goto cleanup;
	}
	raw = malloc(sizeof(*raw) + clen + 1);
	if (!raw) {
		t->st.alloc_failures++;
		goto cleanup;
	}
	raw->start_ns = start_ns;
	raw->end_ns = end_ns;
	raw->size = pos->bytes;
	raw->inbound = dir == NET_DIR_INGRESS;
	raw->len = (uint32_t)clen;
	memcpy(raw->content, out, clen + 1);
	t->raw_held += clen;
cleanup:
	free(msg);
	free(out);
	return raw;
}

static void sample(struct net_task *t, struct net_conn_st *c, const struct http1_exchange *x,
		   uint64_t ms, const struct net_pos pos[2])
{
	struct net_trace_ref ref;
	const struct net_rule *r;
	struct net_sample *s;
	int reason, prov;

	if (!t->nrules)
		return;
	prov = net__trace_ctx(x, &ref);
	if (!prov)
		return;
	{
		char path[HTTP1_URI_MAX + 1];

		memcpy(path, x->uri, x->path_len);
		path[x->path_len] = '\0';
		r = rule_for(t, path);
	}
	if (!r)
		return;
	if (r->r.when_5xx && x->status >= 500 && x->status < 600)
		reason = NET_5XX;
	else if (r->r.when_4xx && x->status >= 400 && x->status < 500)
		reason = NET_4XX;
	else if (r->r.min_duration_ms >= 0 && (uint64_t)r->r.min_duration_ms <= ms)
		reason = NET_SLOW;
	else
		return;
	if (t->samples_held >= MAX_SAMPLES_HELD) {
		t->st.samples_dropped++;
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		t->st.alloc_failures++;
		return;
	}
	t->samples_held++;
	s->latency_ms = ms;
	s->status = x->status;
	s->zipkin = prov == 2;
	memcpy(s->uri, x->uri, x->path_len);
	s->uri[x->path_len] = '\0';
	s->ref = ref;
	if (r->r.require_complete_request) {
		if (pos[0].found)
			s->raw[0] = keep_raw(t, c, x->req_dir & 1, &pos[0], r->r.max_request_size);
		else
			t->st.raw_missed++;
	}
	if (r->r.require_complete_response) {
		if (pos[1].found)
			s->raw[1] = keep_raw(t, c, !(x->req_dir & 1), &pos[1],
					     r->r.max_response_size);
		else
			t->st.raw_missed++;
	}
	topn_add(t, &c->acc, reason, s);
}

static void mon_add(struct net_task *t, int32_t pid, const struct http1_exchange *x, uint64_t ns)
{
	struct msg_net_monitor_entry *e = NULL;
	size_t len = x->path_len < sizeof(e->path) - 1 ? x->path_len : sizeof(e->path) - 1;

	for (uint32_t i = 0; i < t->nmon && !e; i++)
		if (t->mon[i].pid == pid && !strncmp(t->mon[i].path, x->uri, len) &&
		    t->mon[i].path[len] == '\0')
			e = &t->mon[i];
	if (!e) {
		if (t->nmon == MSG_NET_MONITOR_MAX) {
			t->mon_dropped++;
			return;
		}
		e = &t->mon[t->nmon++];
		memset(e, 0, sizeof(*e));
		e->pid = pid;
		memcpy(e->path, x->uri, len);
	}
	e->requests++;
	e->errors += x->status >= 500;
	e->sum_us += ns / 1000;
}

void net_task__monitor(struct net_task *t)
{
	if (!t->mon)
		t->mon = calloc(MSG_NET_MONITOR_MAX, sizeof(*t->mon));
	t->monitor = t->mon != NULL;
}

size_t net_task__monitor_take(struct net_task *t, struct msg_net_monitor_entry *out, size_t max,
			      uint32_t *ret_dropped)
{
	size_t n = t->nmon < max ? t->nmon : max;

	if (n)
		memcpy(out, t->mon, n * sizeof(*out));
	*ret_dropped = t->mon_dropped + (uint32_t)(t->nmon - n);
	t->nmon = 0;
	t->mon_dropped = 0;
	return n;
}

/*
 * An exchange of the connection's parser. The meters see every protocol's alike; HTTP's (x->http)
 * also feed the sampled traces and the monitor, and the report's endpoints tell HTTP/2 and gRPC
 * calls (by their grpc-status) apart.
 */
static void on_exchange(struct net_task *t, struct net_conn_st *c, const struct l7_exchange *x)
{
	const struct http1_exchange *h = x->http;
	struct net_http_acc *a = &c->acc;
	struct net_pos pos[2] = { { 0 } };
	const char *op = x->op, *target = x->target;
	char path[HTTP1_URI_MAX + 1];
	uint8_t ep = c->pproto;
	int32_t code = x->code;
	uint64_t ns, ms;

	if (h)
		t->st.http_exchanges++;
	else
		t->st.l7_exchanges++;
	if (c->keep)
		keep_locate(c, x, pos);
	if ((x->flags & (L7_F_NO_REQUEST | L7_F_NO_RESPONSE | L7_F_NO_RESULT)) ||
	    (!x->resp_bytes && !(x->flags & L7_F_NO_REPLY_EXPECTED))) {
		if (h)
			t->st.http_unpaired++;
		else
			t->st.l7_unpaired++;
		return;
	}
	ns = d64(x->end_ns, x->start_ns);
	ms = ns / 1000000;
	a->requests++;
	a->req_bytes += x->req_bytes;
	a->resp_bytes += x->resp_bytes;
	a->dur_ms += ms;
	a->errors += x->error != 0;
	a->req_hist[low_bucket(net_size_buckets, NET_SIZE_BUCKETS, x->req_bytes)]++;
	a->resp_hist[low_bucket(net_size_buckets, NET_SIZE_BUCKETS, x->resp_bytes)]++;
	a->dur_hist[low_bucket(net_dur_buckets_ms, NET_DUR_BUCKETS, ms)]++;
	if (status_add(&a->status, &a->nstatus, x->code, 1))
		t->st.alloc_failures++;
	if (h) {
		sample(t, c, h, ms, pos);
		memcpy(path, h->uri, h->path_len);
		path[h->path_len] = '\0';
		op = h->method;
		target = path;
		ep = x->http2 ? NET_PROTO_HTTP2 : NET_PROTO_HTTP1;
		if (x->http2 && (x->http2->flags2 & HTTP2_F2_GRPC) && x->http2->grpc_status >= 0) {
			ep = EP_GRPC;
			code = x->http2->grpc_status;
		}
	}
	ep_add(t, (int32_t)c->cur.tgid, role_now(c, x->req_dir), ep, op, target, x->req_bytes,
	       x->resp_bytes, code, ns);
	if (h && t->monitor && role_now(c, x->req_dir) == NET_ROLE_SERVER)
		mon_add(t, (int32_t)c->cur.tgid, h, ns);
}

static void pop_all(struct net_task *t, struct net_conn_st *c)
{
	struct l7_exchange x;

	while (c->l7 && c->ops->next(c->l7, &x) == 1) {
		on_exchange(t, c, &x);
		if ((x.flags & L7_F_SWITCH) && c->ops->then)
			c->switching = true;
	}
}

/* The connection's parser ends: what it held comes out, its counts go to the task's. */
static void parser_end(struct net_task *t, struct net_conn_st *c, uint64_t ts)
{
	c->ops->close(c->l7, ts);
	pop_all(t, c);
	l7_drop(t, c);
}

/*
 * The first segment after a switch of protocols: when it begins the protocol that may follow
 * (HTTP/2 after an h2c upgrade's 101), that protocol's parser takes the rest of the connection
 * (RFC 9113 3.2), else the old one stays (a WebSocket, another protocol: nothing more is
 * parsed on it).
 */
static void switch_to(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		      const uint8_t *bytes)
{
	const struct l7_ops *n = c->ops->then;
	void *nc;

	c->switching = false;
	if (!n->starts(c->l7, d->dir, bytes, d->captured) || !parser_take(t, n))
		return;
	nc = n->new_after(c->l7);
	if (!nc) {
		parser_give(t, n);
		t->st.alloc_failures++;
		return;
	}
	parser_end(t, c, c->last_ts);
	c->ops = n;
	c->l7 = nc;
	for (uint8_t p = 0; p < NET_PROTO_MAX; p++)
		if (net_parsers[p].ops == n)
			c->pproto = p;
}

static bool conn_valid(const struct net_conn *nc)
{
	return nc->id && nc->tgid && (nc->family == AF_INET || nc->family == AF_INET6) &&
	       nc->role <= NET_ROLE_SERVER && nc->proto < NET_PROTO_MAX &&
	       (!(nc->flags & NET_CONN_UDP) || nc->role == NET_ROLE_UNKNOWN);
}

static void on_conn(struct net_task *t, const struct net_conn *nc, bool closing)
{
	struct net_conn_st *c;

	if (!conn_valid(nc)) {
		t->st.bad_records++;
		return;
	}
	c = conn_get(t, nc->id, nc->tgid);
	if (!c || c->closed)
		return;
	c->cur = *nc;
	c->have_conn = true;
	canon_addr(nc->family, nc->laddr, c->laddr);
	canon_addr(nc->family, nc->raddr, c->raddr);
	if (nc->role == NET_ROLE_SERVER)
		t->server_ports[nc->lport / 8] |= (uint8_t)(1u << (nc->lport % 8));
	if (!closing && !(nc->flags & NET_CONN_CLOSED))
		return;
	c->closed = true;
	t->st.conns_closed++;
	if (c->l7) {
		c->ops->close(c->l7, nc->close_ns > c->last_ts ? nc->close_ns : c->last_ts);
		pop_all(t, c);
	}
	keep_free(t, c);
}

static bool data_valid(const struct net_rec_data *d)
{
	return d->conn_id && d->tgid && d->dir <= NET_DIR_INGRESS && d->dgram <= 1 &&
	       d->fn >= NET_FN_READ &&
	       d->fn < NET_FN_MAX && d->proto < NET_PROTO_MAX && d->captured <= d->actual &&
	       d->captured <= NET_CAPTURE_MAX && d->seq && d->end_ns >= d->start_ns &&
	       d->held <= NET_HOLD_MAX && d->held <= d->captured && d->held < d->actual &&
	       (!d->held || (d->held_end_ns >= d->start_ns && d->held_end_ns <= d->end_ns));
}

static void segment(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		    const uint8_t *bytes, bool hole);

static void on_data(struct net_task *t, const struct net_rec_data *d, const uint8_t *bytes)
{
	struct net_conn_st *c;
	bool hole = false;
	uint64_t next;

	if (!data_valid(d)) {
		t->st.bad_records++;
		return;
	}
	c = conn_get(t, d->conn_id, d->tgid);
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
		segment(t, c, &h, bytes, hole);
		segment(t, c, &rest, bytes + d->held, false);
		return;
	}
	segment(t, c, d, bytes, hole);
}

/*
 * The protocol of a connection's parser: the program's for the segment or the connection, HTTP
 * first (it may tell a connection's protocol after its first segments), else the first
 * segment's.
 */
static uint8_t parser_proto(const struct net_conn_st *c, const struct net_rec_data *d)
{
	if (d->proto == NET_PROTO_HTTP2 || c->cur.proto == NET_PROTO_HTTP2)
		return NET_PROTO_HTTP2;
	if (d->proto == NET_PROTO_HTTP1 || c->cur.proto == NET_PROTO_HTTP1)
		return NET_PROTO_HTTP1;
	return d->proto;
}

/*
 * One segment of connection c, its sequence number checked, to the parser of its protocol.
 * The parser is made by the first segment whose protocol has one; then it does not change but
 * by a switch of protocols. A TLS library's first plaintext ends a parser fed the wire's bytes
 * (a MySQL session that upgraded): a new one starts on the plaintext, mid-conversation.
 */
static void segment(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		    const uint8_t *bytes, bool hole)
{
	bool plain = d->fn != NET_FN_TLS_READ && d->fn != NET_FN_TLS_WRITE;

	if (c->closed)
		return;
	if (c->l7 && !plain && c->fed_plain) {
		parser_end(t, c, c->last_ts);
		c->switching = false;
		c->restart = true;
	}
	if (c->switching && d->actual)
		switch_to(t, c, d, bytes);
	if (!c->l7) {
		if (c->pproto && !c->restart)
			return; /* its parser could not be made */
		if (!c->restart)
			c->pproto = parser_proto(c, d);
		c->restart = false;
		c->ops = net__l7_ops(c->pproto);
		if (!c->ops) {
			c->pproto = 0; /* none yet: a later segment may tell */
			return;
		}
		if (!parser_take(t, c->ops))
			return;
		c->l7 = c->ops->new_conn(d->dgram ? L7_F_DATAGRAM : 0);
		if (!c->l7) {
			parser_give(t, c->ops);
			t->st.alloc_failures++;
			return;
		}
		c->fed_plain = plain;
	}
	/*
	 * The time of a segment is its syscall's exit: a blocking read's entry is when the
	 * process began to wait, not when the bytes came.
	 */
	if (d->end_ns > c->last_ts)
		c->last_ts = d->end_ns;
	if (hole)
		c->ops->lost(c->l7, d->dir, 0);
	keep_add(t, c, d, bytes, c->last_ts, hole);
	if (d->actual)
		c->ops->feed(c->l7, d->dir, c->last_ts, bytes, d->captured, d->actual);
	pop_all(t, c);
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
			on_conn(t, &nc, false);
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
			on_conn(t, &cl.conn, true);
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

/* ---- intervals ---- */

static int loc_cmp(const uint8_t *a1, uint16_t p1, const struct net_conn_st *c)
{
	int r = memcmp(a1, c->laddr, 16);

	if (r)
		return r;
	return p1 < c->cur.lport ? -1 : p1 > c->cur.lport;
}

static int loc_sort(const void *a, const void *b)
{
	const struct net_conn_st *x = *(struct net_conn_st *const *)a;
	const struct net_conn_st *y = *(struct net_conn_st *const *)b;
	int r = loc_cmp(x->laddr, x->cur.lport, y);

	if (r)
		return r;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* First index whose local address and port are >= (a, port). */
static size_t loc_lower(struct net_conn_st **v, size_t n, const uint8_t a[16], uint16_t port)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (loc_cmp(a, port, v[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool addr_local(struct net_conn_st **v, size_t n, const uint8_t a[16])
{
	size_t i = loc_lower(v, n, a, 0);

	return addr_loopback(a) || (i < n && !memcmp(v[i]->laddr, a, 16));
}

/*
 * The peer and the role of c (network-profiling §3.3, §3.6). Peer: the connection with the
 * reversed tuple, else the last other process with our remote address as its local one. Role:
 * the program's, the HTTP/1 parser's, the full-tuple peer's reversed, server on a port some
 * connection was accepted on, in that order; client otherwise.
 */
static void resolve(struct net_task *t, struct net_conn_st *c, struct net_conn_st **v, size_t n)
{
	size_t i = loc_lower(v, n, c->raddr, c->cur.rport);
	struct net_conn_st *full = NULL;
	int32_t other = -1;
	uint8_t role = NET_ROLE_UNKNOWN;

	for (; i < n && !loc_cmp(c->raddr, c->cur.rport, v[i]); i++) {
		if (v[i] == c)
			continue;
		if (!full && !memcmp(v[i]->raddr, c->laddr, 16) && v[i]->cur.rport == c->cur.lport)
			full = v[i];
		if (v[i]->cur.tgid != c->cur.tgid)
			other = (int32_t)v[i]->cur.tgid;
	}
	c->rpid = full ? (int32_t)full->cur.tgid : other;
	if (c->cur.role == NET_ROLE_CLIENT || c->cur.role == NET_ROLE_SERVER)
		role = c->cur.role;
	else if (c->l7 && c->ops->role(c->l7) != L7_ROLE_UNKNOWN)
		role = c->ops->role(c->l7) == L7_ROLE_CLIENT ? NET_ROLE_CLIENT : NET_ROLE_SERVER;
	else if (full && (full->cur.role == NET_ROLE_CLIENT || full->cur.role == NET_ROLE_SERVER))
		role = full->cur.role == NET_ROLE_CLIENT ? NET_ROLE_SERVER : NET_ROLE_CLIENT;
	else if (t->server_ports[c->cur.lport / 8] & (1u << (c->cur.lport % 8)))
		role = NET_ROLE_SERVER;
	c->role = role == NET_ROLE_SERVER ? NET_ROLE_SERVER : NET_ROLE_CLIENT;
}

static void traffic_key(const struct net_conn_st *c, struct net_traffic *k)
{
	memset(k, 0, sizeof(*k));
	k->pid = (int32_t)c->cur.tgid;
	k->role = c->role;
	if (c->cur.proto < NET_PROTO_MAX && net_parsers[c->cur.proto].by_kernel)
		k->proto = net_parsers[c->cur.proto].meters;
	else if (c->pproto > NET_PROTO_NONE && net_parsers[c->pproto].meters)
		k->proto = net_parsers[c->pproto].meters;
	else if (c->pproto > NET_PROTO_NONE)
		k->proto = c->pproto;
	else
		k->proto = NET_PROTO_NONE;
	k->ssl = (c->cur.flags & NET_CONN_TLS) || c->tls;
	k->rpid = c->rpid;
	if (c->rpid < 0) {
		memcpy(k->raddr, c->raddr, 16);
		/* Upstream aggregates the server side's client ports of one remote IP. */
		k->rport = c->role == NET_ROLE_CLIENT ? c->cur.rport : 0;
	}
}

static int key_cmp(const struct net_traffic *a, const struct net_traffic *b)
{
	int r;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->role != b->role)
		return a->role < b->role ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	if (a->ssl != b->ssl)
		return a->ssl < b->ssl ? -1 : 1;
	if (a->rpid != b->rpid)
		return a->rpid < b->rpid ? -1 : 1;
	if (a->rpid >= 0)
		return 0;
	r = memcmp(a->raddr, b->raddr, 16);
	if (r)
		return r;
	return a->rport < b->rport ? -1 : a->rport > b->rport;
}

struct item {
	struct net_traffic k;
	struct net_conn_st *c;
};

static int item_sort(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int r = key_cmp(&x->k, &y->k);

	if (r)
		return r;
	return x->c->id < y->c->id ? -1 : x->c->id > y->c->id;
}

static void l4_add(struct net_l4_acc *a, uint64_t count, uint64_t bytes, uint64_t exe,
		   const uint32_t *cur, const uint32_t *base)
{
	a->count += count;
	a->bytes += bytes;
	a->exe += exe;
	for (unsigned i = 0; i < NET_L4_BUCKETS && cur; i++)
		a->hist[i] += cur[i] >= base[i] ? cur[i] - base[i] : 0;
}

static void l4_merge(struct net_l4_acc *d, const struct net_l4_acc *s)
{
	d->count += s->count;
	d->bytes += s->bytes;
	d->exe += s->exe;
	for (unsigned i = 0; i < NET_L4_BUCKETS; i++)
		d->hist[i] += s->hist[i];
}

/* What c moved since the previous interval, into tr. */
static void add_conn(struct net_task *t, struct net_traffic *tr, struct net_conn_st *c)
{
	const struct net_conn *n = &c->cur, *b = &c->base;
	const struct net_l4_dir *w = &n->dir[NET_DIR_EGRESS], *bw = &b->dir[NET_DIR_EGRESS];
	const struct net_l4_dir *r = &n->dir[NET_DIR_INGRESS], *br = &b->dir[NET_DIR_INGRESS];

	tr->conns += !c->counted;
	c->counted = true;
	l4_add(&tr->wr, d64(w->count, bw->count), d64(w->bytes, bw->bytes),
	       d64(w->exe_ns, bw->exe_ns), w->hist, bw->hist);
	l4_add(&tr->rd, d64(r->count, br->count), d64(r->bytes, br->bytes),
	       d64(r->exe_ns, br->exe_ns), r->hist, br->hist);
	l4_add(&tr->rtt, d64(n->rtt_count, b->rtt_count), 0, d64(n->rtt_us, b->rtt_us),
	       n->rtt_hist, b->rtt_hist);
	tr->retrans += d64(n->retrans, b->retrans);
	tr->drops += d64(n->drops, b->drops);
	if (!c->connect_done) {
		c->connect_done = true;
		if (n->connect_exe_ns ||
		    (n->role != NET_ROLE_UNKNOWN && !(n->flags & NET_CONN_MIDSTREAM))) {
			tr->connect.count++;
			/* 0: not measured (an accept seen on the socket calls), not "instant". */
			if (n->connect_exe_ns) {
				tr->connect.exe += n->connect_exe_ns;
				tr->connect.hist[l4_bucket(n->connect_exe_ns)]++;
			}
		}
	}
	/* Counted once, in whichever interval it comes: upstream misses the flushed ones. */
	if (c->closed && !c->close_done && (n->flags & NET_CONN_UDP)) {
		c->close_done = true; /* a UDP socket has no connection to close */
	} else if (c->closed && !c->close_done) {
		c->close_done = true;
		tr->close.count++;
		if (n->close_exe_ns) {
			tr->close.exe += n->close_exe_ns;
			tr->close.hist[l4_bucket(n->close_exe_ns)]++;
		}
	}
	acc_merge(t, &tr->http, &c->acc, true);
	acc_release(t, &c->acc);
}

static void total_add(struct net_task *t, const struct net_traffic *s)
{
	size_t lo = 0, hi = t->ntotal;
	struct net_traffic *d = NULL;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = key_cmp(s, &t->total[mid]);

		if (!r) {
			d = &t->total[mid];
			break;
		}
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (!d) {
		struct net_traffic *v;

		if (t->ntotal >= MAX_TOTAL) {
			t->st.traffic_refused++;
			return;
		}
		v = realloc(t->total, (t->ntotal + 1) * sizeof(*v));
		if (!v) {
			t->st.alloc_failures++;
			return;
		}
		t->total = v;
		memmove(v + lo + 1, v + lo, (t->ntotal - lo) * sizeof(*v));
		d = &v[lo];
		*d = *s;
		memset(&d->http, 0, sizeof(d->http));
		d->conns = 0;
		memset(&d->wr, 0, sizeof(d->wr));
		memset(&d->rd, 0, sizeof(d->rd));
		memset(&d->rtt, 0, sizeof(d->rtt));
		memset(&d->connect, 0, sizeof(d->connect));
		memset(&d->close, 0, sizeof(d->close));
		d->retrans = d->drops = 0;
		t->ntotal++;
	}
	d->conns += s->conns;
	l4_merge(&d->wr, &s->wr);
	l4_merge(&d->rd, &s->rd);
	l4_merge(&d->rtt, &s->rtt);
	l4_merge(&d->connect, &s->connect);
	l4_merge(&d->close, &s->close);
	d->retrans += s->retrans;
	d->drops += s->drops;
	{
		struct net_http_acc tmp = s->http;

		/* The samples stay with the interval's traffic: merged without them. */
		acc_merge(t, &d->http, &tmp, false);
	}
}

int net_task__interval(struct net_task *t, uint64_t now_ns)
{
	struct net_conn_st **loc = NULL, *c, *next;
	struct item *items = NULL;
	struct net_traffic *out = NULL;
	size_t nloc = 0, nitems = 0, nout = 0;
	int err = 0;

	(void)now_ns;
	if (!t)
		return -EINVAL;
	traffic_free(t, t->last, t->nlast);
	t->last = NULL;
	t->nlast = 0;
	t->intervals++;
	if (t->nconns) {
		loc = malloc(t->nconns * sizeof(*loc));
		items = malloc(t->nconns * sizeof(*items));
		if (!loc || !items) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	for (c = t->lru_head; c; c = c->lnext)
		if (c->have_conn)
			loc[nloc++] = c;
	if (nloc)
		qsort(loc, nloc, sizeof(*loc), loc_sort);
	for (size_t i = 0; i < nloc; i++) {
		c = loc[i];
		/* Upstream drops connections without a remote address. */
		if (addr_zero(c->raddr) && !c->cur.rport)
			continue;
		resolve(t, c, loc, nloc);
		traffic_key(c, &items[nitems].k);
		items[nitems++].c = c;
	}
	if (nitems)
		qsort(items, nitems, sizeof(*items), item_sort);
	for (size_t i = 0; i < nitems; i++) {
		if (!nout || key_cmp(&items[i].k, &out[nout - 1])) {
			struct net_traffic *v = realloc(out, (nout + 1) * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				goto cleanup;
			}
			out = v;
			out[nout] = items[i].k;
			/* The first connection's remote address names a peer the labels cannot. */
			memcpy(out[nout].raddr, items[i].c->raddr, 16);
			out[nout].rport = out[nout].rpid < 0 ? items[i].k.rport : items[i].c->cur.rport;
			out[nout].rlocal = addr_local(loc, nloc, items[i].c->raddr);
			nout++;
		}
		add_conn(t, &out[nout - 1], items[i].c);
	}
	for (size_t i = 0; i < nout; i++)
		total_add(t, &out[i]);
	t->last = out;
	t->nlast = nout;
	out = NULL;
cleanup:
	for (c = t->lru_head; c; c = next) {
		next = c->lnext;
		c->base = c->cur;
		c->idle++;
		if (c->closed && ++c->closed_for > CLOSED_KEEP) {
			conn_unlink(t, c);
			conn_free(t, c);
		}
	}
	free(out);
	free(loc);
	free(items);
	return err;
}

void net_task__stats(const struct net_task *t, struct net_stats *ret)
{
	*ret = t->st;
	for (const struct net_conn_st *c = t->lru_head; c; c = c->lnext) {
		if (c->l7)
			parser_counts(ret, c->pproto, c->ops, c->l7);
	}
}

/* ---- the report ---- */

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
static void percentiles(const struct net_endpoint *e, uint32_t *tmp, uint64_t ret[3])
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
	if (is_v4(tr->raddr))
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
	[NET_STAT_SYSCALLS] = "syscalls",
	[NET_STAT_CONNS_FULL] = "conns_full",
	[NET_STAT_INFLIGHT_FULL] = "inflight_full",
	[NET_STAT_DATA_RINGBUF] = "data_ringbuf",
	[NET_STAT_DATA_BUDGET] = "data_budget",
	[NET_STAT_DATA_BYTES_LOST] = "data_bytes_lost",
	[NET_STAT_CLOSE_RINGBUF] = "close_ringbuf",
	[NET_STAT_READ_FAULT] = "read_fault",
	[NET_STAT_TLS_CALLS] = "tls_calls",
	[NET_STAT_TLS_UNBOUND] = "tls_unbound",
	[NET_STAT_TLS_ADJACENT] = "tls_adjacent",
	[NET_STAT_TLS_CALLS_FULL] = "tls_calls_full",
};

static void losses(const struct net_stats *s, struct sb *b, bool json)
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
	bool first = true;

	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		if (json)
			sb_printf(b, "%s\"%s\":%llu", first ? "" : ",", l[i].name,
				  (unsigned long long)l[i].v);
		else
			sb_printf(b, "  %-24s %llu\n", l[i].name, (unsigned long long)l[i].v);
		first = false;
	}
	if (json)
		sb_printf(b, ",\"l7_unpaired\":%llu", (unsigned long long)s->l7_unpaired);
	else
		sb_printf(b, "  %-24s %llu\n", "l7_unpaired", (unsigned long long)s->l7_unpaired);
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
			if (json)
				sb_printf(b, ",\"%s\":%llu", name, (unsigned long long)m[i].v);
			else
				sb_printf(b, "  %-24s %llu\n", name, (unsigned long long)m[i].v);
		}
	}
	for (unsigned i = 0; i < NET_STAT_MAX; i++) {
		/* Counts, not losses: in the report's head and its "tls" part. */
		if (i == NET_STAT_SYSCALLS || i == NET_STAT_TLS_CALLS || i == NET_STAT_TLS_ADJACENT)
			continue;
		if (json)
			sb_printf(b, ",\"kernel_%s\":%llu", kernel_names[i],
				  (unsigned long long)s->kernel[i]);
		else
			sb_printf(b, "  kernel %-17s %llu\n", kernel_names[i],
				  (unsigned long long)s->kernel[i]);
	}
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
	sb_printf(b, "NETWORK task %llu: %llu intervals, %llu connections seen, %llu closed, "
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
			  tr->role == NET_ROLE_SERVER ? "<-" : "->", remote, tr->proto > NET_PROTO_NONE ? " " : "",
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

		percentiles(e, tmp, p);
		sb_printf(b, "  %s(%d) %s %s%s%s %s: %llu requests, %s", proc_name(t, e->pid), e->pid,
			  net__role_name(e->role), e->proto == NET_PROTO_HTTP1 ? "" : ep_proto_name(e->proto),
			  e->proto == NET_PROTO_HTTP1 ? "" : " ", e->method, e->path,
			  (unsigned long long)e->requests, e->proto == NET_PROTO_HTTP1 ? "status" : "codes");
		for (uint32_t k = 0; k < e->nstatus; k++)
			sb_printf(b, " %d:%llu", (int)e->status[k].code, (unsigned long long)e->status[k].n);
		sb_printf(b,
			  ", %llu B requests, %llu B responses, latency p50 %.3f ms p90 %.3f ms "
			  "p99 %.3f ms\n",
			  (unsigned long long)e->req_bytes, (unsigned long long)e->resp_bytes,
			  p[0] / 1000.0, p[1] / 1000.0, p[2] / 1000.0);
	}
	sb_printf(b, "\nTLS: %llu calls gave plaintext (%llu joined by the thread's last socket "
		     "call), %llu on no known connection\n",
		  (unsigned long long)s->kernel[NET_STAT_TLS_CALLS],
		  (unsigned long long)s->kernel[NET_STAT_TLS_ADJACENT],
		  (unsigned long long)s->kernel[NET_STAT_TLS_UNBOUND]);
	for (uint32_t i = 0; i < t->ntls; i++) {
		const struct net_tls_file *l = &t->tls[i];

		sb_printf(b, "  %s(%d) %s %s: ", proc_name(t, l->pid), l->pid, tlsfind__lib_name(l->lib),
			  l->path);
		if (l->err == 1)
			sb_printf(b, "%u probes sent, no answer\n", l->probes);
		else if (l->err)
			sb_printf(b, "not probed: %s\n", strerror(-l->err));
		else
			sb_printf(b, "%u probes\n", l->attached);
	}
	sb_printf(b, "\nLosses:\n");
	losses(s, b, false);
}

static void report_json(struct net_task *t, const struct net_stats *s, struct sb *b, uint32_t *tmp)
{
	char ip[INET6_ADDRSTRLEN];

	sb_printf(b, "{\"task_id\":%llu,\"intervals\":%llu,\"conns_seen\":%llu,\"conns_closed\":%llu,"
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
			  (unsigned long long)tr->connect.count, (unsigned long long)tr->close.count,
			  (unsigned long long)tr->retrans, (unsigned long long)tr->drops,
			  (unsigned long long)tr->rtt.count,
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

		percentiles(e, tmp, p);
		sb_printf(b, "%s{\"pid\":%d,\"comm\":", i ? "," : "", e->pid);
		sb_json_str(b, proc_name(t, e->pid));
		sb_printf(b, ",\"role\":\"%s\",\"protocol\":\"%s\",\"method\":",
			  net__role_name(e->role), ep_proto_name(e->proto));
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
			  (unsigned long long)e->req_bytes, (unsigned long long)e->resp_bytes, e->nres,
			  p[0] / 1000.0, p[1] / 1000.0, p[2] / 1000.0);
	}
	sb_printf(b, "],\"tls_calls\":%llu,\"tls_adjacent\":%llu,\"tls\":[",
		  (unsigned long long)s->kernel[NET_STAT_TLS_CALLS],
		  (unsigned long long)s->kernel[NET_STAT_TLS_ADJACENT]);
	for (uint32_t i = 0; i < t->ntls; i++) {
		const struct net_tls_file *l = &t->tls[i];

		sb_printf(b, "%s{\"pid\":%d,\"path\":", i ? "," : "", l->pid);
		sb_json_str(b, l->path);
		sb_printf(b, ",\"library\":\"%s\",\"probes\":%u,\"error\":", tlsfind__lib_name(l->lib),
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
		  (unsigned long long)s->conns_seen, (unsigned long long)s->http_exchanges, t->neps);
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

		percentiles(v[i], tmp, p);
		sb_printf(&b, "%s %s (%s(%d) %s): %llu requests, p99 %.3f ms\n", v[i]->method,
			  v[i]->path, proc_name(t, v[i]->pid), v[i]->pid, net__role_name(v[i]->role),
			  (unsigned long long)v[i]->requests, p[2] / 1000.0);
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

int net_task__write_report(struct net_task *t, FILE *out, enum net_report_format f,
			   char *summary, size_t summary_len)
{
	struct net_stats s;
	struct sb b = { 0 };
	uint32_t *tmp;
	int err;

	if (!t || (f != NET_REPORT_TXT && f != NET_REPORT_JSON) || (summary_len && !summary))
		return -EINVAL;
	tmp = malloc(RESERVOIR_MAX * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	net_task__stats(t, &s);
	if (f == NET_REPORT_TXT)
		report_txt(t, &s, &b, tmp);
	else
		report_json(t, &s, &b, tmp);
	err = b.err;
	if (!err && out && fwrite(b.p, 1, b.len, out) != b.len)
		err = -EIO;
	if (!err && summary_len)
		summary_of(t, &s, summary, summary_len, tmp);
	free(b.p);
	free(tmp);
	return err;
}
