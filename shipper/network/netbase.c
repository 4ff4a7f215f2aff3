// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side, a NETWORK task's analysis: what every part of it reads (netpriv.h) and that
 * calls none of them: the table of protocols and their parsers, the names of protocols and
 * roles, addresses, processes, and the accumulators of a connection's or a traffic's
 * exchanges (result codes, sampled traces).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "shipper/network/netpriv.h"

const uint64_t net_l4_buckets_ns[NET_L4_BUCKETS] = {
	0,	   10000,     50000,	  100000,     500000,	  1000000,    1200000,
	1500000,   1700000,   2000000,	  2500000,    3000000,	  5000000,    7000000,
	10000000,  13000000,  16000000,	  20000000,   25000000,	  30000000,   35000000,
	40000000,  45000000,  50000000,	  70000000,   100000000,  150000000,  200000000,
	300000000, 500000000, 1000000000, 2000000000, 3000000000, 5000000000,
};

const uint64_t net_size_buckets[NET_SIZE_BUCKETS] = {
	256,	 512,	  1048,	   1536,    2048,     3072,	5120,	  8192,	  10240,
	15360,	 20480,	  35840,   51200,   76800,    102400,	204800,	  512000, 819200,
	1048576, 1572864, 2097152, 5242880, 10485760, 20971520, 52428800,
};

const uint64_t net_dur_buckets_ms[NET_DUR_BUCKETS] = {
	1,   2,	  5,   10,  15,	  20,	25,   30,   40,	  45,	50,   60,    65,    70,	   80,
	90,  100, 110, 130, 150,  170,	200,  230,  260,  290,	330,  380,   430,   480,   500,
	600, 700, 800, 900, 1000, 1100, 1300, 1500, 1800, 2000, 5000, 10000, 15000, 20000, 30000,
};

uint64_t net__d64(uint64_t cur, uint64_t base)
{
	return cur >= base ? cur - base : 0;
}

uint64_t net__rng_next(struct net_task *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1DULL;
}

/* Upstream's user-side histograms: the last lower bound <= v, the first for smaller ones. */
unsigned net__low_bucket(const uint64_t *b, unsigned n, uint64_t v)
{
	unsigned i = 0;

	while (i + 1 < n && b[i + 1] <= v)
		i++;
	return i;
}

void net__canon_addr(uint8_t family, const uint8_t in[16], uint8_t out[16])
{
	if (family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, in, 4);
	} else {
		memcpy(out, in, 16);
	}
}

bool net__is_v4(const uint8_t a[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(a, pfx, 12);
}

bool net__addr_zero(const uint8_t a[16])
{
	static const uint8_t z[16];

	return !memcmp(a, z, 16) || (net__is_v4(a) && !memcmp(a + 12, z, 4));
}

bool net__addr_loopback(const uint8_t a[16])
{
	static const uint8_t v6lo[16] = { [15] = 1 };

	if (net__addr_zero(a))
		return true;
	if (net__is_v4(a))
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

const struct net_parser net_parsers[NET_PROTO_MAX] = {
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

const char *net__role_name(uint8_t role)
{
	return role == NET_ROLE_SERVER ? "server" : "client";
}

void net__addr_str(const uint8_t a[16], char *buf, size_t len)
{
	if (len < INET6_ADDRSTRLEN || !inet_ntop(net__is_v4(a) ? AF_INET : AF_INET6,
						 net__is_v4(a) ? a + 12 : a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

const struct net_proc *net__proc(const struct net_task *t, int32_t pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	return NULL;
}

int net__status_add(struct net_status **v, uint32_t *n, int32_t code, uint64_t k)
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

void net__acc_release(struct net_task *t, struct net_http_acc *a)
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
void net__topn_add(struct net_task *t, struct net_http_acc *a, int reason, struct net_sample *s)
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
void net__acc_merge(struct net_task *t, struct net_http_acc *dst, struct net_http_acc *src,
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
		if (net__status_add(&dst->status, &dst->nstatus, src->status[i].code,
				    src->status[i].n))
			t->st.alloc_failures++;
	if (!samples)
		return;
	for (int r = 0; r < NET_REASONS; r++) {
		for (uint32_t i = 0; i < src->nsamples[r]; i++)
			net__topn_add(t, dst, r, src->samples[r][i]);
		src->nsamples[r] = 0;
	}
}
