// SPDX-License-Identifier: Apache-2.0
/*
 * A NETWORK task's report as one HTML page (net_task__write_report, NET_REPORT_HTML): the
 * task's head, the topology of its processes and their peers drawn here as inline SVG, every
 * connection pair, each protocol's endpoints with their codes and latency histograms, the TLS
 * libraries and the losses that happened. The same figures as the text and JSON reports.
 *
 * The page fetches nothing and runs no script: its Content-Security-Policy allows inline styles
 * and nothing else, and the picture is laid out here, so that a browser without JavaScript
 * shows all of it. Every name in it (processes, methods, paths, addresses, library paths) came
 * from a traced process or its traffic and goes through markup__put.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shipper/network/netpriv.h"
#include "shipper/network/tlsfind.h"
#include "shipper/output/markup.h"
#include "version.h"

/* The picture's geometry, in pixels. */
#define NODE_W 220
#define NODE_H 40
#define ROW_H 64
#define COL_GAP 250 /* between columns: room for an edge's label */
#define MARGIN 24
#define LABEL_CHARS 28 /* of a node's name; its <title> has all of it */
/* Peers drawn on each side; the others are one node (their figures are in the table). */
#define PEERS_DRAWN 24

enum node_kind { NODE_PROC, NODE_PEER, NODE_OTHERS };

struct node {
	uint8_t kind;
	uint8_t side; /* of a peer: NET_ROLE_CLIENT (drawn left) or NET_ROLE_SERVER (right) */
	uint8_t local;
	int32_t pid;
	uint8_t addr[16];
	uint16_t port;
	uint64_t weight; /* requests and connections: which peers are drawn */
	uint32_t drawn;	 /* the node drawn for it: itself, or its side's NODE_OTHERS */
	uint32_t merged; /* NODE_OTHERS: the peers in it */
	uint32_t col, row;
};

struct edge {
	uint32_t from, to; /* the client's node, the server's */
	uint64_t requests, errors, conns, bytes_cs, bytes_sc;
	uint64_t dur_hist[NET_DUR_BUCKETS];
	uint32_t protos; /* 1 << enum net_proto */
	bool ssl;
};

struct topo {
	struct node *nodes;
	size_t nnodes, cap_nodes;
	struct edge *edges;
	size_t nedges, cap_edges;
	uint32_t ncols, nrows;
};

static void put(FILE *f, const char *s)
{
	markup__put(f, s, SIZE_MAX);
}

/* At most n characters of s, ".." when cut. */
static void put_cut(FILE *f, const char *s, size_t n)
{
	if (markup__utf8_count(s) <= n) {
		put(f, s);
		return;
	}
	markup__put(f, s, n - 2);
	fputs("..", f);
}

static void put_bytes(FILE *f, uint64_t n)
{
	char b[32];

	net__bytes_size(n, b, sizeof(b));
	put(f, b);
}

/* A peer as the text report names it: "ip:port", "[ip6]:port", "ip:*" for a server's clients. */
static void peer_str(const uint8_t addr[16], uint16_t port, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	net__addr_str(addr, ip, sizeof(ip));
	if (net__is_v4(addr))
		snprintf(buf, len, port ? "%s:%u" : "%s:*", ip, port);
	else
		snprintf(buf, len, port ? "[%s]:%u" : "[%s]:*", ip, port);
}

static void remote_str(struct net_task *t, const struct net_traffic *tr, char *buf, size_t len)
{
	if (tr->rpid >= 0)
		snprintf(buf, len, "%s (%d)", net__proc_name(t, tr->rpid), tr->rpid);
	else
		peer_str(tr->raddr, tr->rport, buf, len);
}

/* ---- the topology ---- */

static int node_add(struct topo *g, const struct node *n, uint32_t *ret)
{
	if (g->nnodes == g->cap_nodes) {
		size_t cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
		struct node *v = realloc(g->nodes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->nodes = v;
		g->cap_nodes = cap;
	}
	g->nodes[g->nnodes] = *n;
	g->nodes[g->nnodes].drawn = (uint32_t)g->nnodes;
	*ret = (uint32_t)g->nnodes++;
	return 0;
}

static int proc_node(struct topo *g, int32_t pid, uint32_t *ret)
{
	struct node n = { .kind = NODE_PROC, .pid = pid };

	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == NODE_PROC && g->nodes[i].pid == pid) {
			*ret = (uint32_t)i;
			return 0;
		}
	return node_add(g, &n, ret);
}

/* The peer of a traffic whose remote is no process of the task. */
static int peer_node(struct topo *g, const struct net_traffic *tr, uint32_t *ret)
{
	struct node n = { .kind = NODE_PEER, .local = tr->rlocal, .port = tr->rport };

	n.side = tr->role == NET_ROLE_SERVER ? NET_ROLE_CLIENT : NET_ROLE_SERVER;
	memcpy(n.addr, tr->raddr, 16);
	for (size_t i = 0; i < g->nnodes; i++) {
		const struct node *o = &g->nodes[i];

		if (o->kind == NODE_PEER && o->side == n.side && o->port == n.port &&
		    !memcmp(o->addr, n.addr, 16)) {
			*ret = (uint32_t)i;
			return 0;
		}
	}
	return node_add(g, &n, ret);
}

static int edge_of(struct topo *g, uint32_t from, uint32_t to, struct edge **ret)
{
	for (size_t i = 0; i < g->nedges; i++)
		if (g->edges[i].from == from && g->edges[i].to == to) {
			*ret = &g->edges[i];
			return 0;
		}
	if (g->nedges == g->cap_edges) {
		size_t cap = g->cap_edges ? 2 * g->cap_edges : 64;
		struct edge *v = realloc(g->edges, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->edges = v;
		g->cap_edges = cap;
	}
	*ret = memset(&g->edges[g->nedges++], 0, sizeof(**ret));
	(*ret)->from = from;
	(*ret)->to = to;
	return 0;
}

/* Exchanges a traffic's codes call failed: HTTP's 4xx and 5xx, the others' own errors. */
static uint64_t traffic_errors(const struct net_traffic *tr)
{
	uint64_t n = tr->http.errors;

	if (tr->proto == NET_PROTO_HTTP1)
		for (uint32_t k = 0; k < tr->http.nstatus; k++)
			if (tr->http.status[k].code >= 400)
				n += tr->http.status[k].n;
	return n;
}

/*
 * A connection between two processes of the task is in the report twice, once from each end:
 * the picture draws the client's, and the server's only when the client's is missing.
 */
static bool drawn_from_other_end(const struct net_task *t, const struct net_traffic *tr)
{
	if (tr->rpid < 0 || tr->role != NET_ROLE_SERVER)
		return false;
	for (size_t i = 0; i < t->ntotal; i++) {
		const struct net_traffic *o = &t->total[i];

		if (o->pid == tr->rpid && o->rpid == tr->pid && o->role != NET_ROLE_SERVER)
			return true;
	}
	return false;
}

static int peer_cmp(const void *a, const void *b, void *ctx)
{
	const struct topo *g = ctx;
	const struct node *x = &g->nodes[*(const uint32_t *)a],
			  *y = &g->nodes[*(const uint32_t *)b];
	int c;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	c = memcmp(x->addr, y->addr, 16);
	return c ? c : (x->port > y->port) - (x->port < y->port);
}

static int pid_cmp(const void *a, const void *b, void *ctx)
{
	const struct topo *g = ctx;
	int32_t x = g->nodes[*(const uint32_t *)a].pid, y = g->nodes[*(const uint32_t *)b].pid;

	return (x > y) - (x < y);
}

/*
 * Columns: the peers that are clients on the left, then the processes in layers (a process
 * right of the processes that call it), then the peers that are servers.
 * Layers come from the longest chain of calls between processes, bounded by their number, so a
 * cycle ends rather than growing; rows follow pids and, for peers, their weight.
 */
static int topo_layout(struct topo *g)
{
	size_t n = g->nnodes;
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order)),
		 *layer = calloc(n ? n : 1, sizeof(*layer));
	uint32_t maxlayer = 0, nprocs = 0, first_proc_col, *rows = NULL;
	bool left = false, right = false;
	int err = 0;

	if (!order || !layer) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		nprocs += g->nodes[i].kind == NODE_PROC;
	for (uint32_t round = 0; round < nprocs; round++) {
		bool moved = false;

		for (size_t i = 0; i < g->nedges; i++) {
			const struct edge *e = &g->edges[i];

			if (g->nodes[e->from].kind != NODE_PROC ||
			    g->nodes[e->to].kind != NODE_PROC || layer[e->to] > layer[e->from] ||
			    layer[e->from] + 1 >= nprocs)
				continue;
			layer[e->to] = layer[e->from] + 1;
			moved = true;
		}
		if (!moved)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		const struct node *d = &g->nodes[i];

		if (d->kind == NODE_PROC && layer[i] > maxlayer)
			maxlayer = layer[i];
		if (d->kind != NODE_PROC && d->drawn == i)
			left |= d->side == NET_ROLE_CLIENT, right |= d->side == NET_ROLE_SERVER;
	}
	first_proc_col = left ? 1 : 0;
	g->ncols = first_proc_col + (nprocs ? maxlayer + 1 : 0) + (right ? 1 : 0);
	rows = calloc(g->ncols ? g->ncols : 1, sizeof(*rows));
	if (!rows) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Processes by pid, then peers by weight, then the two "others": each takes its row. */
	{
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (g->nodes[i].kind == NODE_PROC)
				order[k++] = (uint32_t)i;
		qsort_r(order, k, sizeof(*order), pid_cmp, g);
		for (size_t i = 0; i < k; i++) {
			struct node *d = &g->nodes[order[i]];

			d->col = first_proc_col + layer[order[i]];
			d->row = rows[d->col]++;
		}
		k = 0;
		for (size_t i = 0; i < n; i++)
			if (g->nodes[i].kind != NODE_PROC && g->nodes[i].drawn == i)
				order[k++] = (uint32_t)i;
		qsort_r(order, k, sizeof(*order), peer_cmp, g);
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < k; i++) {
				struct node *d = &g->nodes[order[i]];

				if ((d->kind == NODE_OTHERS) != pass)
					continue;
				d->col = d->side == NET_ROLE_CLIENT ? 0 : g->ncols - 1;
				d->row = rows[d->col]++;
			}
	}
	g->nrows = 1;
	for (uint32_t c = 0; c < g->ncols; c++)
		if (rows[c] > g->nrows)
			g->nrows = rows[c];
	/* Columns shorter than the tallest are centred on it. */
	for (size_t i = 0; i < n; i++) {
		struct node *d = &g->nodes[i];

		if (d->drawn == i)
			d->row = d->row * 2 + (g->nrows - rows[d->col]);
	}
cleanup:
	free(order);
	free(layer);
	free(rows);
	return err;
}

/* Past PEERS_DRAWN on a side, the lightest peers become that side's one "others" node. */
static int topo_merge_peers(struct topo *g)
{
	for (uint8_t side = NET_ROLE_CLIENT; side <= NET_ROLE_SERVER; side++) {
		size_t n = 0, total = g->nnodes;
		uint32_t *v = malloc((total ? total : 1) * sizeof(*v)), others;
		struct node o = { .kind = NODE_OTHERS, .side = side };
		int err;

		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < total; i++)
			if (g->nodes[i].kind == NODE_PEER && g->nodes[i].side == side)
				v[n++] = (uint32_t)i;
		if (n <= PEERS_DRAWN) {
			free(v);
			continue;
		}
		qsort_r(v, n, sizeof(*v), peer_cmp, g);
		err = node_add(g, &o, &others);
		if (err) {
			free(v);
			return err;
		}
		for (size_t i = PEERS_DRAWN; i < n; i++) {
			g->nodes[v[i]].drawn = others;
			g->nodes[others].merged++;
			g->nodes[others].weight += g->nodes[v[i]].weight;
		}
		free(v);
	}
	return 0;
}

static int topo_build(struct net_task *t, struct topo *g)
{
	uint32_t id, *peer_of = calloc(t->ntotal ? t->ntotal : 1, sizeof(*peer_of));
	int err = 0;

	if (!peer_of)
		return -ENOMEM;
	/* Every process of the task is drawn, those without traffic too. */
	for (uint32_t i = 0; !err && t->have_head && i < t->head.npids; i++)
		err = proc_node(g, t->head.pids[i], &id);
	for (size_t i = 0; !err && i < t->neps; i++)
		err = proc_node(g, t->eps[i]->pid, &id);
	for (size_t i = 0; !err && i < t->ntotal; i++) {
		const struct net_traffic *tr = &t->total[i];

		err = proc_node(g, tr->pid, &id);
		if (!err && tr->rpid >= 0)
			err = proc_node(g, tr->rpid, &id);
		if (!err && tr->rpid < 0) {
			err = peer_node(g, tr, &peer_of[i]);
			if (!err)
				g->nodes[peer_of[i]].weight += tr->http.requests + tr->conns;
		}
	}
	if (!err)
		err = topo_merge_peers(g);
	for (size_t i = 0; !err && i < t->ntotal; i++) {
		const struct net_traffic *tr = &t->total[i];
		bool client = tr->role != NET_ROLE_SERVER;
		uint32_t me, other;
		struct edge *e;

		if (drawn_from_other_end(t, tr))
			continue;
		err = proc_node(g, tr->pid, &me);
		if (!err && tr->rpid >= 0)
			err = proc_node(g, tr->rpid, &other);
		else if (!err)
			other = g->nodes[peer_of[i]].drawn;
		if (!err)
			err = edge_of(g, client ? me : other, client ? other : me, &e);
		if (err)
			break;
		e->requests += tr->http.requests;
		e->errors += traffic_errors(tr);
		e->conns += tr->conns;
		e->bytes_cs += client ? tr->wr.bytes : tr->rd.bytes;
		e->bytes_sc += client ? tr->rd.bytes : tr->wr.bytes;
		for (unsigned k = 0; k < NET_DUR_BUCKETS; k++)
			e->dur_hist[k] += tr->http.dur_hist[k];
		if (tr->proto < 32)
			e->protos |= 1u << tr->proto;
		e->ssl |= tr->ssl;
	}
	free(peer_of);
	return err ? err : topo_layout(g);
}

static double node_x(const struct node *d)
{
	return MARGIN + d->col * (double)(NODE_W + COL_GAP);
}

/* The middle of the node's row; rows are in half steps (columns centred). */
static double node_y(const struct node *d)
{
	return MARGIN + d->row * ROW_H / 2.0 + NODE_H / 2.0;
}

static void draw_node(struct net_task *t, FILE *f, const struct topo *g, uint32_t i)
{
	const struct node *d = &g->nodes[i];
	double x = node_x(d), y = node_y(d) - NODE_H / 2.0;
	char name[300], sub[64];

	if (d->kind == NODE_PROC) {
		snprintf(name, sizeof(name), "%s", net__proc_name(t, d->pid));
		snprintf(sub, sizeof(sub), "pid %d", d->pid);
		fprintf(f, "<g class=\"node proc\" data-pid=\"%d\" data-name=\"", d->pid);
		put(f, name);
		fputs("\"><title>", f);
		put(f, name);
		fprintf(f, " (pid %d), a process of the task</title>", d->pid);
	} else if (d->kind == NODE_PEER) {
		peer_str(d->addr, d->port, name, sizeof(name));
		snprintf(sub, sizeof(sub), "%s%s", d->side == NET_ROLE_CLIENT ? "client" : "server",
			 d->local ? ", this host" : "");
		fputs("<g class=\"node peer\" data-peer=\"", f);
		put(f, name);
		fputs("\"><title>", f);
		put(f, name);
		fprintf(f, ": a %s not traced%s%s</title>",
			d->side == NET_ROLE_CLIENT ? "client" : "server",
			d->local ? ", on this host" : "",
			d->side == NET_ROLE_CLIENT && !d->port ? " (its ports taken together)"
							       : "");
	} else {
		snprintf(name, sizeof(name), "%u other %s", d->merged,
			 d->side == NET_ROLE_CLIENT ? "clients" : "servers");
		snprintf(sub, sizeof(sub), "in the tables below");
		fprintf(f,
			"<g class=\"node others\" data-merged=\"%u\"><title>%s: only the %d "
			"busiest peers of a side are drawn</title>",
			d->merged, name, PEERS_DRAWN);
	}
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%d\" height=\"%d\" rx=\"6\"/>", x, y,
		NODE_W, NODE_H);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"name\">", x + 8, y + 16);
	put_cut(f, name, LABEL_CHARS);
	fprintf(f, "</text><text x=\"%.0f\" y=\"%.0f\" class=\"sub\">", x + 8, y + 32);
	put(f, sub);
	fputs("</text></g>\n", f);
}

/* The p99 of an edge's exchanges from upstream's duration buckets: "< 20 ms". */
static void edge_p99(const struct edge *e, char *buf, size_t len)
{
	uint64_t n = 0, seen = 0;

	buf[0] = '\0';
	for (unsigned k = 0; k < NET_DUR_BUCKETS; k++)
		n += e->dur_hist[k];
	if (!n)
		return;
	for (unsigned k = 0; k < NET_DUR_BUCKETS; k++) {
		seen += e->dur_hist[k];
		if (seen * 100 >= n * 99) {
			if (k + 1 < NET_DUR_BUCKETS)
				snprintf(buf, len, "p99 < %" PRIu64 " ms",
					 net_dur_buckets_ms[k + 1]);
			else
				snprintf(buf, len, "p99 >= %" PRIu64 " ms", net_dur_buckets_ms[k]);
			return;
		}
	}
}

static void edge_protos(const struct edge *e, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint8_t p = NET_PROTO_NONE; p < NET_PROTO_MAX && used < len; p++) {
		const char *name = p == NET_PROTO_NONE ? "tcp" : net__proto_name(p);

		if (e->protos & (1u << p))
			used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
	}
	if (e->ssl && used < len)
		snprintf(buf + used, len - used, "%sTLS", used ? ", " : "");
}

static void draw_edge(FILE *f, const struct topo *g, const struct edge *e)
{
	const struct node *a = &g->nodes[e->from], *b = &g->nodes[e->to];
	double ax = node_x(a) + NODE_W, ay = node_y(a), bx, by = node_y(b), lx, ly;
	char p99[48], protos[96], cs[32], sc[32];
	double w = 1.5;

	for (uint64_t r = e->requests + e->conns; r >= 10 && w < 6; r /= 10)
		w += 1;
	edge_p99(e, p99, sizeof(p99));
	edge_protos(e, protos, sizeof(protos));
	net__bytes_size(e->bytes_cs, cs, sizeof(cs));
	net__bytes_size(e->bytes_sc, sc, sizeof(sc));
	fprintf(f,
		"<g class=\"edge%s\" data-from=\"%u\" data-to=\"%u\" data-requests=\"%" PRIu64
		"\" data-errors=\"%" PRIu64 "\" data-bytes-cs=\"%" PRIu64
		"\" data-bytes-sc=\"%" PRIu64 "\"><title>",
		e->errors ? " failing" : "", e->from, e->to, e->requests, e->errors, e->bytes_cs,
		e->bytes_sc);
	fprintf(f,
		"%s: %" PRIu64 " requests, %" PRIu64 " errors, %" PRIu64 " connections; %s to "
		"the server, %s back%s",
		protos, e->requests, e->errors, e->conns, cs, sc, p99[0] ? "; " : "");
	put(f, p99);
	fputs("</title>", f);
	if (a->col < b->col) {
		bx = node_x(b);
		fprintf(f, "<path d=\"M%.0f,%.0f L%.0f,%.0f\" stroke-width=\"%.1f\"/>", ax, ay, bx,
			by, w);
		lx = (ax + bx) / 2;
		ly = (ay + by) / 2;
	} else {
		/* Same column, or back to the left (a cycle): an arc out on the right. */
		double k = 60 + 25 * (a->row > b->row ? a->row - b->row : b->row - a->row);

		bx = node_x(b) + NODE_W;
		fprintf(f,
			"<path d=\"M%.0f,%.0f C%.0f,%.0f %.0f,%.0f %.0f,%.0f\" stroke-width=\"%.1f\"/>",
			ax, ay, ax + k, ay, bx + k, by, bx, by, w);
		lx = (ax + bx) / 2 + 0.75 * k;
		ly = (ay + by) / 2;
	}
	{
		char l1[128], l2[80];
		size_t n1, n2;

		int k = snprintf(l1, sizeof(l1), "%" PRIu64 " %s",
				 e->requests ? e->requests : e->conns,
				 e->requests ? "req" : "conn");

		if (e->errors && k > 0 && (size_t)k < sizeof(l1))
			k += snprintf(l1 + k, sizeof(l1) - k, ", %" PRIu64 " err", e->errors);
		if (p99[0] && k > 0 && (size_t)k < sizeof(l1))
			snprintf(l1 + k, sizeof(l1) - k, ", %s", p99);
		snprintf(l2, sizeof(l2), "-> %s  <- %s", cs, sc);
		n1 = strlen(l1);
		n2 = strlen(l2);
		/* A card under the label, so that the line does not cross its text. */
		fprintf(f,
			"<rect class=\"label\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"30\" "
			"rx=\"3\"/>",
			lx - (n1 > n2 ? n1 : n2) * 3.3 - 6, ly - 17,
			(n1 > n2 ? n1 : n2) * 6.6 + 12);
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">", lx, ly - 4);
		put(f, l1);
		fprintf(f, "</text><text x=\"%.0f\" y=\"%.0f\">", lx, ly + 10);
		put(f, l2);
		fputs("</text></g>\n", f);
	}
}

static int write_topology(struct net_task *t, FILE *f)
{
	struct topo g = { 0 };
	int err = topo_build(t, &g);
	double w, h;

	if (err)
		goto cleanup;
	fputs("<section id=\"topology\">\n<h2>Topology</h2>\n", f);
	if (!g.nnodes) {
		fputs("<p>No process and no connection to draw.</p>\n</section>\n", f);
		goto cleanup;
	}
	fputs("<p class=\"note\">Clients on the left, servers on the right, each arrow from a "
	      "client to its server: requests, errors (HTTP 4xx and 5xx, another protocol's "
	      "own), p99 latency (upstream's buckets), bytes to the server and back. Hover for "
	      "details.</p>\n",
	      f);
	/* Arcs of the last column go out to the right: room for them. */
	w = 2 * MARGIN + g.ncols * (double)NODE_W + (g.ncols - 1) * (double)COL_GAP + 160;
	h = 2 * MARGIN + g.nrows * (double)ROW_H;
	fprintf(f,
		"<svg class=\"topology\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n"
		"<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
		"markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
		"<path d=\"M0,0 L10,5 L0,10 z\"/></marker></defs>\n",
		w, h, w, h);
	for (size_t i = 0; i < g.nedges; i++)
		draw_edge(f, &g, &g.edges[i]);
	for (size_t i = 0; i < g.nnodes; i++)
		if (g.nodes[i].drawn == i)
			draw_node(t, f, &g, (uint32_t)i);
	fputs("</svg>\n</section>\n", f);
cleanup:
	free(g.nodes);
	free(g.edges);
	return err;
}

/* ---- the tables ---- */

static void put_codes(FILE *f, const struct net_status *st, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		fprintf(f,
			"<span class=\"code%s\" data-code=\"%d\" data-n=\"%" PRIu64
			"\">%d: %" PRIu64 "</span> ",
			st[k].code >= 400 ? " bad" : "", (int)st[k].code, st[k].n, (int)st[k].code,
			st[k].n);
}

static void write_connections(struct net_task *t, FILE *f)
{
	fputs("<section id=\"connections\">\n<h2>Connections</h2>\n", f);
	if (!t->ntotal) {
		fputs("<p>No connection was seen.</p>\n</section>\n", f);
		return;
	}
	fputs("<div class=\"wide\"><table>\n<thead><tr><th>process</th><th>role</th><th>remote</th><th>protocol</th>"
	      "<th>conns</th><th>requests</th><th>errors</th><th>sent</th><th>writes</th>"
	      "<th>received</th><th>reads</th><th>connects</th><th>closes</th>"
	      "<th>retransmits</th><th>drops</th><th>RTT avg</th><th>codes</th></tr></thead>\n"
	      "<tbody>\n",
	      f);
	for (size_t i = 0; i < t->ntotal; i++) {
		const struct net_traffic *tr = &t->total[i];
		char remote[320];

		remote_str(t, tr, remote, sizeof(remote));
		fprintf(f, "<tr class=\"conn\" data-pid=\"%d\" data-role=\"%s\" data-remote=\"",
			tr->pid, net__role_name(tr->role));
		put(f, remote);
		fprintf(f,
			"\" data-protocol=\"%s\" data-conns=\"%" PRIu64
			"\" data-requests=\"%" PRIu64 "\" data-bytes-sent=\"%" PRIu64
			"\" data-bytes-received=\"%" PRIu64 "\" data-connects=\"%" PRIu64
			"\" data-closes=\"%" PRIu64 "\"><td>",
			net__proto_name(tr->proto), tr->conns, tr->http.requests, tr->wr.bytes,
			tr->rd.bytes, tr->connect.count, tr->close.count);
		put(f, net__proc_name(t, tr->pid));
		fprintf(f, " (%d)</td><td>%s</td><td>", tr->pid, net__role_name(tr->role));
		put(f, remote);
		if (tr->rlocal && tr->rpid < 0)
			fputs(" <small>this host</small>", f);
		fprintf(f,
			"</td><td>%s%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
			"</td><td>",
			tr->proto > NET_PROTO_NONE ? net__proto_name(tr->proto) : "",
			tr->ssl ? " (TLS)" : "", tr->conns, tr->http.requests, traffic_errors(tr));
		put_bytes(f, tr->wr.bytes);
		fprintf(f, "</td><td>%" PRIu64 "</td><td>", tr->wr.count);
		put_bytes(f, tr->rd.bytes);
		fprintf(f,
			"</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
			"</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>",
			tr->rd.count, tr->connect.count, tr->close.count, tr->retrans, tr->drops);
		if (tr->rtt.count)
			fprintf(f, "%" PRIu64 " us", tr->rtt.exe / tr->rtt.count);
		fputs("</td><td>", f);
		put_codes(f, tr->http.status, tr->http.nstatus);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody>\n</table></div>\n</section>\n", f);
}

/* Latency histogram buckets, µs upper bounds: roughly three per decade. */
static const uint32_t hist_us[] = { 100,     250,     500,     1000,	  2500,	  5000,
				    10000,   25000,   50000,   100000,	  250000, 500000,
				    1000000, 2500000, 5000000, UINT32_MAX };
#define HIST_N (sizeof(hist_us) / sizeof(hist_us[0]))
#define HIST_BAR 10
#define HIST_H 32

static void put_us(FILE *f, uint32_t us)
{
	if (us >= 1000000)
		fprintf(f, "%g s", us / 1e6);
	else if (us >= 1000)
		fprintf(f, "%g ms", us / 1e3);
	else
		fprintf(f, "%u us", us);
}

/* The endpoint's durations (its reservoir) as a bar per bucket, its counts in the titles. */
static void write_hist(FILE *f, const struct net_endpoint *e)
{
	uint64_t n[HIST_N] = { 0 }, max = 0;

	for (uint32_t i = 0; i < e->nres; i++) {
		unsigned k = 0;

		while (k + 1 < HIST_N && e->res[i] >= hist_us[k])
			k++;
		n[k]++;
	}
	for (unsigned k = 0; k < HIST_N; k++)
		if (n[k] > max)
			max = n[k];
	fprintf(f,
		"<svg class=\"hist\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%zu\" "
		"height=\"%d\" role=\"img\"><title>latency of %u requests",
		HIST_N * HIST_BAR, HIST_H + 2, e->nres);
	if (e->nres < e->requests)
		fprintf(f, " (a uniform sample of %" PRIu64 ")", e->requests);
	fputs(", from 100 us (left) to 5 s and more (right)</title>", f);
	for (unsigned k = 0; k < HIST_N; k++) {
		double h = max ? (double)n[k] / max * HIST_H : 0;

		if (n[k] && h < 1)
			h = 1;
		fprintf(f, "<rect x=\"%u\" y=\"%.1f\" width=\"%d\" height=\"%.1f\"><title>",
			k * HIST_BAR, HIST_H + 1 - h, HIST_BAR - 1, h);
		if (k)
			put_us(f, hist_us[k - 1]);
		else
			fputs("0", f);
		fputs(" to ", f);
		if (k + 1 < HIST_N)
			put_us(f, hist_us[k]);
		else
			fputs("more", f);
		fprintf(f, ": %" PRIu64 "</title></rect>", n[k]);
	}
	fprintf(f, "<line x1=\"0\" y1=\"%d\" x2=\"%zu\" y2=\"%d\"/></svg>", HIST_H + 1,
		HIST_N * HIST_BAR, HIST_H + 1);
}

static int ep_cmp(const void *a, const void *b)
{
	const struct net_endpoint *x = *(struct net_endpoint *const *)a;
	const struct net_endpoint *y = *(struct net_endpoint *const *)b;
	int c;

	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	c = strcmp(x->method, y->method);
	return c ? c : strcmp(x->path, y->path);
}

static int write_endpoints(struct net_task *t, FILE *f, uint32_t *tmp)
{
	struct net_endpoint **v;

	fputs("<section id=\"endpoints\">\n<h2>Endpoints</h2>\n", f);
	if (!t->neps) {
		fputs("<p>No request was paired with its response.</p>\n</section>\n", f);
		return 0;
	}
	v = malloc(t->neps * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, t->eps, t->neps * sizeof(*v));
	qsort(v, t->neps, sizeof(*v), ep_cmp);
	for (size_t i = 0; i < t->neps; i++) {
		const struct net_endpoint *e = v[i];
		bool http = e->proto == NET_PROTO_HTTP1 || e->proto == NET_PROTO_HTTP2;
		uint64_t p[3];

		if (!i || v[i - 1]->proto != e->proto) {
			size_t n = 0;

			for (size_t k = i; k < t->neps && v[k]->proto == e->proto; k++)
				n++;
			if (i)
				fputs("</tbody>\n</table>\n", f);
			fprintf(f, "<h3 data-protocol=\"%s\">%s: %zu endpoint%s</h3>\n",
				net__ep_proto_name(e->proto), net__ep_proto_title(e->proto), n,
				n == 1 ? "" : "s");
			fprintf(f,
				"<table>\n<thead><tr><th>process</th><th>role</th><th>%s</th>"
				"<th>%s</th><th>requests</th><th>%s</th><th>request bytes</th>"
				"<th>response bytes</th><th>p50</th><th>p90</th><th>p99</th>"
				"<th>latency</th></tr></thead>\n<tbody>\n",
				http || e->proto == EP_GRPC ? "method" : "operation",
				http || e->proto == EP_GRPC ? "path" : "target",
				e->proto == NET_PROTO_HTTP1 || e->proto == NET_PROTO_HTTP2
					? "status"
					: "codes");
		}
		net__percentiles(e, tmp, p);
		fprintf(f,
			"<tr class=\"ep\" data-protocol=\"%s\" data-pid=\"%d\" data-role=\"%s\" "
			"data-method=\"",
			net__ep_proto_name(e->proto), e->pid, net__role_name(e->role));
		put(f, e->method);
		fputs("\" data-path=\"", f);
		put(f, e->path);
		fprintf(f, "\" data-requests=\"%" PRIu64 "\"><td>", e->requests);
		put(f, net__proc_name(t, e->pid));
		fprintf(f, " (%d)</td><td>%s</td><td>", e->pid, net__role_name(e->role));
		put(f, e->method);
		fputs("</td><td class=\"path\">", f);
		put(f, e->path);
		fprintf(f, "</td><td>%" PRIu64 "</td><td>", e->requests);
		put_codes(f, e->status, e->nstatus);
		fputs("</td><td>", f);
		put_bytes(f, e->req_bytes);
		fputs("</td><td>", f);
		put_bytes(f, e->resp_bytes);
		fprintf(f, "</td><td>%.3f ms</td><td>%.3f ms</td><td>%.3f ms</td><td>",
			p[0] / 1000.0, p[1] / 1000.0, p[2] / 1000.0);
		write_hist(f, e);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody>\n</table>\n</section>\n", f);
	free(v);
	return 0;
}

static void write_tls(struct net_task *t, const struct net_stats *s, FILE *f)
{
	fprintf(f,
		"<section id=\"tls\">\n<h2>TLS</h2>\n<p>%" PRIu64 " calls gave plaintext (%" PRIu64
		" joined by the thread's last socket call), %" PRIu64
		" on no known connection.</p>\n",
		s->kernel[NET_STAT_TLS_CALLS], s->kernel[NET_STAT_TLS_ADJACENT],
		s->kernel[NET_STAT_TLS_UNBOUND]);
	if (t->ntls)
		fputs("<ul>\n", f);
	for (uint32_t i = 0; i < t->ntls; i++) {
		const struct net_tls_file *l = &t->tls[i];

		fputs("<li>", f);
		put(f, net__proc_name(t, l->pid));
		fprintf(f, " (%d) %s <code>", l->pid, tlsfind__lib_name(l->lib));
		put(f, l->path);
		fputs("</code>: ", f);
		if (l->err == 1)
			fprintf(f, "%u probes sent, no answer", l->probes);
		else if (l->err)
			fprintf(f, "not probed: %s", strerror(-l->err));
		else
			fprintf(f, "%u probes", l->attached);
		fputs("</li>\n", f);
	}
	if (t->ntls)
		fputs("</ul>\n", f);
	fputs("</section>\n", f);
}

struct loss_list {
	FILE *f;
	unsigned n;
};

static void loss_item(void *ctx, const char *name, bool kernel, uint64_t v)
{
	struct loss_list *l = ctx;

	if (!v)
		return;
	if (!l->n++)
		fputs("<ul class=\"losses\">\n", l->f);
	fprintf(l->f, "<li data-loss=\"%s%s\">%s%s: %" PRIu64 "</li>\n", kernel ? "kernel_" : "",
		name, kernel ? "kernel " : "", name, v);
}

static void write_losses(const struct net_stats *s, FILE *f)
{
	struct loss_list l = { .f = f };

	fputs("<section id=\"losses\">\n<h2>Losses</h2>\n", f);
	net__losses_each(s, loss_item, &l);
	if (l.n)
		fputs("</ul>\n", f);
	else
		fputs("<p class=\"none\">No losses.</p>\n", f);
	fputs("</section>\n", f);
}

/* ---- the page ---- */

static const char page_css[] =
	"body { font-family: sans-serif; margin: 1em 2em; color: #222; }\n"
	"h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }\n"
	"h3 { font-size: 1em; margin-top: 1.2em; }\n"
	"dl.head { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; }\n"
	"dl.head dt { color: #555; } dl.head dd { margin: 0; }\n"
	".note { color: #555; font-size: 0.9em; }\n"
	"table { border-collapse: collapse; font-size: 0.85em; }\n"
	"th, td { border-bottom: 1px solid #ddd; padding: 2px 6px; text-align: right; "
	"vertical-align: middle; }\n"
	"th { background: #f3f3f3; }\n"
	"td:nth-child(-n+4), th:nth-child(-n+4) { text-align: left; }\n"
	"td.path { font-family: monospace; max-width: 40em; overflow-wrap: anywhere; }\n"
	".code { white-space: nowrap; } .code.bad { color: #b00; }\n"
	"svg.topology { max-width: 100%; height: auto; }\n"
	"svg.topology text { font-size: 12px; }\n"
	".node rect { fill: #eef4fb; stroke: #4a78a8; }\n"
	".node.peer rect { fill: #f6f6f6; stroke: #888; }\n"
	".node.others rect { fill: #fff; stroke: #888; stroke-dasharray: 4 3; }\n"
	".node .name { font-weight: bold; } .node .sub { fill: #555; font-size: 11px; }\n"
	".edge path { fill: none; stroke: #6b8fb5; marker-end: url(#arrow); }\n"
	".edge.failing path { stroke: #c44; }\n"
	".edge text { fill: #222; text-anchor: middle; font-size: 11px; }\n"
	".edge:hover path { stroke: #000; } marker path { fill: #6b8fb5; }\n"
	".edge rect.label { fill: #fff; fill-opacity: 0.9; stroke: #ccc; }\n"
	"div.wide { overflow-x: auto; } td { white-space: nowrap; }\n"
	"svg.hist rect { fill: #6b8fb5; } svg.hist line { stroke: #999; }\n";

static void write_head(struct net_task *t, const struct net_stats *s, FILE *f)
{
	const struct net_report_head *h = &t->head;

	fputs("<dl class=\"head\">\n<dt>target</dt><dd id=\"target\">", f);
	for (uint32_t i = 0; t->have_head && i < h->npids; i++) {
		fputs(i ? ", " : "", f);
		put(f, net__proc_name(t, h->pids[i]));
		fprintf(f, " (%d)", h->pids[i]);
	}
	fputs("</dd>\n<dt>started</dt><dd>", f);
	if (t->have_head && h->start_unix_ms) {
		time_t sec = (time_t)(h->start_unix_ms / 1000);
		struct tm tm;
		char when[64];

		if (gmtime_r(&sec, &tm) &&
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
			fputs(when, f);
	}
	fputs("</dd>\n<dt>duration</dt><dd>", f);
	if (t->have_head)
		fprintf(f, "%g s asked, %s", h->duration_ms / 1000.0,
			h->complete ? "ran to its end" : "cut short");
	fprintf(f,
		"</dd>\n<dt>task</dt><dd>%" PRIu64 "</dd>\n<dt>rover</dt><dd>%s</dd>\n"
		"<dt>seen</dt><dd id=\"counts\">%" PRIu64 " connections (%" PRIu64
		" closed), %" PRIu64 " HTTP exchanges, %" PRIu64
		" exchanges of other protocols, %" PRIu64 " calls traced in %" PRIu64
		" intervals</dd>\n</dl>\n",
		t->o.task_id, ROVER_VERSION, s->conns_seen, s->conns_closed, s->http_exchanges,
		s->l7_exchanges, s->kernel[NET_STAT_SYSCALLS], t->intervals);
}

int net__report_html(struct net_task *t, const struct net_stats *s, FILE *f, uint32_t *tmp)
{
	int err;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">\n"
	      "<title>rover NETWORK report",
	      f);
	if (t->have_head && t->head.npids) {
		fputs(": ", f);
		put(f, net__proc_name(t, t->head.pids[0]));
		fprintf(f, " (%d)%s", t->head.pids[0], t->head.npids > 1 ? " and others" : "");
	}
	fprintf(f,
		"</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>rover NETWORK report</h1>\n",
		page_css);
	write_head(t, s, f);
	err = write_topology(t, f);
	if (!err) {
		write_connections(t, f);
		err = write_endpoints(t, f, tmp);
	}
	if (err)
		return err;
	write_tls(t, s, f);
	write_losses(s, f);
	fputs("</body>\n</html>\n", f);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}
