// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side, a NETWORK task's analysis: L7 dispatch. Each connection gets the parser of its
 * protocol from one table (netbase.c, shipper/network/protocols/l7.h), is fed its segments,
 * gaps and close through it, and the exchanges it yields go into the connection's
 * accumulators, the report's endpoints, the monitor and, HTTP's, the sampled traces
 * (netsample.c). A parser that switches protocols (an HTTP 101) hands the connection to the
 * one that may follow it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/netpriv.h"
#include "shipper/network/protocols/http/http2.h"

/* Report bounds: endpoints the whole task keeps. */
#define MAX_ENDPOINTS 1024u
/*
 * Parsers alive in a task: every byte a parser holds is sized by a traced process, which can
 * open connections at will. HTTP/1 and the other protocols' parsers hold at most about 150 KiB
 * each (a full pending ring), HTTP/2's about 1.1 MiB (256 stream slots and its HPACK budget):
 * at most about 300 + 280 MiB in all, however many connections there are. A connection over
 * the bound is measured at L4 only, counted in parsers_refused.
 */
#define MAX_PARSERS 2048u
#define MAX_H2_PARSERS 256u

const char *net__ep_proto_name(uint8_t proto)
{
	if (proto == NET_PROTO_HTTP2)
		return "http2";
	if (proto == EP_GRPC)
		return "grpc";
	return net__proto_name(proto);
}

const char *net__ep_proto_title(uint8_t proto)
{
	if (proto == EP_GRPC)
		return "gRPC";
	if (proto == NET_PROTO_HTTP2)
		return l7_http2_ops.title;
	return net__l7_ops(proto) && net__l7_ops(proto)->title ? net__l7_ops(proto)->title
							       : "unknown";
}

/* The counts of a parser of proto, added into the task's stats s. */
void net__parser_counts(struct net_stats *s, uint8_t proto, const struct l7_ops *o, const void *p)
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
void net__l7_drop(struct net_task *t, struct net_conn_st *c)
{
	if (!c->l7)
		return;
	net__parser_counts(&t->st, c->pproto, c->ops, c->l7);
	c->ops->free_conn(c->l7);
	c->l7 = NULL;
	parser_give(t, c->ops);
}

void net__ep_free(struct net_endpoint *e)
{
	if (!e)
		return;
	free(e->status);
	free(e->res);
	free(e);
}

static uint8_t role_now(const struct net_conn_st *c, uint8_t req_dir)
{
	if (c->cur.role == NET_ROLE_CLIENT || c->cur.role == NET_ROLE_SERVER)
		return c->cur.role;
	if (net__l7_role(c) != NET_ROLE_UNKNOWN)
		return net__l7_role(c);
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
static void ep_add(struct net_task *t, int32_t pid, uint8_t role, uint8_t proto, const char *method,
		   const char *path, uint64_t req_bytes, uint64_t resp_bytes, int32_t code,
		   uint64_t dur_ns)
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
	if (net__status_add(&e->status, &e->nstatus, code, 1))
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
		uint64_t j = net__rng_next(t) % e->seen;

		if (j < RESERVOIR_MAX)
			e->res[j] = (uint32_t)us;
	}
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
		net__keep_locate(c, x, pos);
	if ((x->flags & (L7_F_NO_REQUEST | L7_F_NO_RESPONSE | L7_F_NO_RESULT)) ||
	    (!x->resp_bytes && !(x->flags & L7_F_NO_REPLY_EXPECTED))) {
		if (h)
			t->st.http_unpaired++;
		else
			t->st.l7_unpaired++;
		return;
	}
	net__alog_exchange(t, c, x);
	ns = net__d64(x->end_ns, x->start_ns);
	ms = ns / 1000000;
	a->requests++;
	a->req_bytes += x->req_bytes;
	a->resp_bytes += x->resp_bytes;
	a->dur_ms += ms;
	a->errors += x->error != 0;
	a->req_hist[net__low_bucket(net_size_buckets, NET_SIZE_BUCKETS, x->req_bytes)]++;
	a->resp_hist[net__low_bucket(net_size_buckets, NET_SIZE_BUCKETS, x->resp_bytes)]++;
	a->dur_hist[net__low_bucket(net_dur_buckets_ms, NET_DUR_BUCKETS, ms)]++;
	if (net__status_add(&a->status, &a->nstatus, x->code, 1))
		t->st.alloc_failures++;
	if (h) {
		net__sample(t, c, h, ms, pos);
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

void net__l7_close(struct net_task *t, struct net_conn_st *c, uint64_t ts)
{
	if (!c->l7)
		return;
	c->ops->close(c->l7, ts);
	pop_all(t, c);
}

/* The connection's parser ends: what it held comes out, its counts go to the task's. */
static void parser_end(struct net_task *t, struct net_conn_st *c, uint64_t ts)
{
	net__l7_close(t, c, ts);
	net__l7_drop(t, c);
}

enum net_role net__l7_role(const struct net_conn_st *c)
{
	enum l7_role r = c->l7 ? c->ops->role(c->l7) : L7_ROLE_UNKNOWN;

	if (r == L7_ROLE_CLIENT)
		return NET_ROLE_CLIENT;
	return r == L7_ROLE_SERVER ? NET_ROLE_SERVER : NET_ROLE_UNKNOWN;
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
void net__segment(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
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
	net__keep_add(t, c, d, bytes, c->last_ts, hole);
	if (d->actual)
		c->ops->feed(c->l7, d->dir, c->last_ts, bytes, d->captured, d->actual);
	pop_all(t, c);
}
