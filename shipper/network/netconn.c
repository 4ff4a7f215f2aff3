// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side, a NETWORK task's analysis: the connection table and L4 accounting: the
 * records of connections (addresses, counters, close), and at every interval each
 * connection's counters and exchanges into the traffic of its (process, role, peer,
 * protocol), its peer resolved among the task's connections.
 *
 * Connections are found by id in a chained hash and kept on a list, least recently updated
 * first: at max_conns, the least recently updated one goes if it has been idle long enough
 * (its close record was lost, NET_STAT_CLOSE_RINGBUF), else the new one is refused. A closed
 * connection stays CLOSED_KEEP intervals after its close was counted, for peer resolution,
 * as upstream keeps closed ones for two flushes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "shipper/network/netpriv.h"

#define CLOSED_KEEP 2u
/* Intervals without a record after which a connection may make room for a new one. */
#define IDLE_EVICT 30u
/* Report bounds: connection pairs the whole task keeps. */
#define MAX_TOTAL 4096u

/* Upstream's kernel-side search, its quirk included: >= 3 s lands in the 5 s bucket. */
static unsigned l4_bucket(uint64_t ns)
{
	for (unsigned i = 1; i < NET_L4_BUCKETS - 1; i++)
		if (net_l4_buckets_ns[i] > ns)
			return i - 1;
	return NET_L4_BUCKETS - 1;
}

static void lru_unlink(struct net_task *t, struct net_conn_st *c)
{
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		t->lru_head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	else
		t->lru_tail = c->lprev;
}

void net__conn_unlink(struct net_task *t, struct net_conn_st *c)
{
	struct net_conn_st **pp = &t->hash[c->id & t->hash_mask];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	lru_unlink(t, c);
	t->nconns--;
}

void net__conn_free(struct net_task *t, struct net_conn_st *c)
{
	net__keep_free(t, c);
	net__l7_drop(t, c);
	net__acc_release(t, &c->acc);
	free(c);
}

void net__traffic_free(struct net_task *t, struct net_traffic *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		net__acc_release(t, &v[i].http);
	free(v);
}

static void lru_touch(struct net_task *t, struct net_conn_st *c)
{
	c->idle = 0;
	if (t->lru_tail == c)
		return;
	lru_unlink(t, c);
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
struct net_conn_st *net__conn_get(struct net_task *t, uint64_t id, uint32_t tgid)
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
		net__conn_unlink(t, old);
		net__conn_free(t, old);
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

static bool conn_valid(const struct net_conn *nc)
{
	return nc->id && nc->tgid && (nc->family == AF_INET || nc->family == AF_INET6) &&
	       nc->role <= NET_ROLE_SERVER && nc->proto < NET_PROTO_MAX &&
	       (!(nc->flags & NET_CONN_UDP) || nc->role == NET_ROLE_UNKNOWN);
}

void net__on_conn(struct net_task *t, const struct net_conn *nc, bool closing)
{
	struct net_conn_st *c;

	if (!conn_valid(nc)) {
		t->st.bad_records++;
		return;
	}
	c = net__conn_get(t, nc->id, nc->tgid);
	if (!c || c->closed)
		return;
	c->cur = *nc;
	c->have_conn = true;
	net__canon_addr(nc->family, nc->laddr, c->laddr);
	net__canon_addr(nc->family, nc->raddr, c->raddr);
	if (nc->role == NET_ROLE_SERVER)
		t->server_ports[nc->lport / 8] |= (uint8_t)(1u << (nc->lport % 8));
	if (!closing && !(nc->flags & NET_CONN_CLOSED))
		return;
	c->closed = true;
	t->st.conns_closed++;
	net__l7_close(t, c, nc->close_ns > c->last_ts ? nc->close_ns : c->last_ts);
	net__keep_free(t, c);
}

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

	return net__addr_loopback(a) || (i < n && !memcmp(v[i]->laddr, a, 16));
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
	else if (net__l7_role(c) != NET_ROLE_UNKNOWN)
		role = net__l7_role(c);
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
	l4_add(&tr->wr, net__d64(w->count, bw->count), net__d64(w->bytes, bw->bytes),
	       net__d64(w->exe_ns, bw->exe_ns), w->hist, bw->hist);
	l4_add(&tr->rd, net__d64(r->count, br->count), net__d64(r->bytes, br->bytes),
	       net__d64(r->exe_ns, br->exe_ns), r->hist, br->hist);
	l4_add(&tr->rtt, net__d64(n->rtt_count, b->rtt_count), 0, net__d64(n->rtt_us, b->rtt_us),
	       n->rtt_hist, b->rtt_hist);
	tr->retrans += net__d64(n->retrans, b->retrans);
	tr->drops += net__d64(n->drops, b->drops);
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
	net__acc_merge(t, &tr->http, &c->acc, true);
	net__acc_release(t, &c->acc);
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
		net__acc_merge(t, &d->http, &tmp, false);
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
	net__traffic_free(t, t->last, t->nlast);
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
		if (net__addr_zero(c->raddr) && !c->cur.rport)
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
			out[nout].rport = out[nout].rpid < 0 ? items[i].k.rport
							     : items[i].c->cur.rport;
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
			net__conn_unlink(t, c);
			net__conn_free(t, c);
		}
	}
	free(out);
	free(loc);
	free(items);
	return err;
}
