// SPDX-License-Identifier: Apache-2.0
/*
 * A NETWORK task's last interval as the OAP reads it (reference network-profiling §4): one
 * MeterDataCollection per (service, instance), upstream's names, labels, label order and
 * buckets; sampled HTTP traces as LogData with upstream's JSON body. The messages are built in
 * an arena that lives as long as one call, packed into the batches, and dropped.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/Common.pb-c.h"
#include "language-agent/Meter.pb-c.h"
#include "logging/Logging.pb-c.h"
#include "shipper/network/netpriv.h"

typedef Skywalking__V3__MeterData meter;
typedef Skywalking__V3__Label label;

/* ---- trace headers ---- */

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard base64, padding optional. 0, or -EINVAL for bad input or an output over len-1. */
static int b64_decode(const char *s, size_t n, char *out, size_t len)
{
	uint32_t acc = 0;
	size_t o = 0;
	int bits = 0;

	while (n && s[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++) {
		int v = b64val(s[i]);

		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			char ch = (char)((acc >> (bits - 8)) & 0xff);

			bits -= 8;
			if (o + 1 >= len || (unsigned char)ch < 0x20 || ch == 0x7f)
				return -EINVAL;
			out[o++] = ch;
		}
	}
	out[o] = '\0';
	return o ? 0 : -EINVAL;
}

static int copy_id(const char *s, size_t n, char *out, size_t len)
{
	if (!n || n >= len)
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return 1;
}

/*
 * Upstream's order (pkg/tools/tracing): sw8 "1-TRACEID-SEGMENTID-SPANID-..." with exactly
 * eight parts, the two ids base64, the span id as it is; then b3 "TRACEID-SPANID[-...]"; then
 * X-B3-TraceId with X-B3-SpanId. A header present but malformed means no trace.
 */
int net__trace_ctx(const struct http1_exchange *x, struct net_trace_ref *ret)
{
	struct net_trace_ref r;
	size_t idl = sizeof(r.trace_id);

	memset(&r, 0, sizeof(r));
	if (x->sw8[0]) {
		const char *p[9], *s = x->sw8;
		size_t n = 0;

		p[n++] = s;
		for (; *s; s++)
			if (*s == '-') {
				if (n == 8)
					return 0;
				p[n++] = s + 1;
			}
		if (n != 8 || b64_decode(p[1], (size_t)(p[2] - p[1] - 1), r.trace_id, idl) ||
		    b64_decode(p[2], (size_t)(p[3] - p[2] - 1), r.segment_id, idl) ||
		    !copy_id(p[3], (size_t)(p[4] - p[3] - 1), r.span_id, idl))
			return 0;
		*ret = r;
		return 1;
	}
	if (x->b3[0]) {
		const char *dash = strchr(x->b3, '-'), *end;

		if (!dash || !dash[1] || dash[1] == '-')
			return 0;
		end = strchr(dash + 1, '-');
		if (!end)
			end = dash + 1 + strlen(dash + 1);
		if (!copy_id(x->b3, (size_t)(dash - x->b3), r.trace_id, idl) ||
		    !copy_id(dash + 1, (size_t)(end - dash - 1), r.span_id, idl))
			return 0;
		*ret = r;
		return 2;
	}
	if (x->x_b3_traceid[0] && x->x_b3_spanid[0]) {
		if (!copy_id(x->x_b3_traceid, strlen(x->x_b3_traceid), r.trace_id, idl) ||
		    !copy_id(x->x_b3_spanid, strlen(x->x_b3_spanid), r.span_id, idl))
			return 0;
		*ret = r;
		return 2;
	}
	return 0;
}

/* ---- arena ---- */

struct blk {
	struct blk *next;
	size_t used, cap;
	alignas(max_align_t) unsigned char data[];
};

struct arena {
	struct blk *head;
	int err;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	struct blk *b = a->head;
	void *p;

	n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;

		b = malloc(sizeof(*b) + cap);
		if (!b) {
			a->err = -ENOMEM;
			return NULL;
		}
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

static char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		a->err = -EINVAL;
		return NULL;
	}
	p = arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

static void arena_free(struct arena *a)
{
	while (a->head) {
		struct blk *b = a->head;

		a->head = b->next;
		free(b);
	}
}

/* ---- meters ---- */

struct mb {
	struct arena *a;
	const char *prefix;
	meter **v;
	size_t n, cap;
	label **labels;
	size_t nlabels;
};

static void mb_push(struct mb *m, meter *d)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		meter **v = realloc(m->v, cap * sizeof(*v));

		if (!v) {
			m->a->err = -ENOMEM;
			return;
		}
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = d;
}

static label *mk_label(struct arena *a, const char *name, const char *value)
{
	label *l = arena_alloc(a, sizeof(*l));
	char *n = arena_printf(a, "%s", name), *v = arena_printf(a, "%s", value);

	if (!l || !n || !v)
		return NULL;
	skywalking__v3__label__init(l);
	l->name = n;
	l->value = v;
	return l;
}

static void single(struct mb *m, char *name, label **labels, size_t nl, double value)
{
	meter *d = arena_alloc(m->a, sizeof(*d));
	Skywalking__V3__MeterSingleValue *s = arena_alloc(m->a, sizeof(*s));

	if (!d || !s || !name)
		return;
	skywalking__v3__meter_data__init(d);
	skywalking__v3__meter_single_value__init(s);
	s->name = name;
	s->labels = labels;
	s->n_labels = nl;
	s->value = value;
	d->metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
	d->singlevalue = s;
	mb_push(m, d);
}

/* All buckets, zeros included, at their lower bounds divided by div; none when all are 0. */
static void histogram(struct mb *m, char *name, const uint64_t *bounds, uint64_t div,
		      const uint64_t *counts, size_t nb)
{
	meter *d;
	Skywalking__V3__MeterHistogram *h;
	Skywalking__V3__MeterBucketValue *bv, **bp;
	bool any = false;

	for (size_t i = 0; i < nb; i++)
		any |= counts[i] != 0;
	if (!any || !name)
		return;
	d = arena_alloc(m->a, sizeof(*d));
	h = arena_alloc(m->a, sizeof(*h));
	bv = arena_alloc(m->a, nb * sizeof(*bv));
	bp = arena_alloc(m->a, nb * sizeof(*bp));
	if (!d || !h || !bv || !bp)
		return;
	skywalking__v3__meter_data__init(d);
	skywalking__v3__meter_histogram__init(h);
	for (size_t i = 0; i < nb; i++) {
		skywalking__v3__meter_bucket_value__init(&bv[i]);
		bv[i].bucket = (double)(bounds[i] / div);
		bv[i].count = counts[i] > INT64_MAX ? INT64_MAX : (int64_t)counts[i];
		bp[i] = &bv[i];
	}
	h->name = name;
	h->labels = m->labels;
	h->n_labels = m->nlabels;
	h->values = bp;
	h->n_values = nb;
	d->metric_case = SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM;
	d->histogram = h;
	mb_push(m, d);
}

/* `P R_X_counts_counter`, `_bytes_counter` (> 0), `_exe_time_counter` (an average, > 0). */
static void counter(struct mb *m, const char *role, const char *x, uint64_t count, uint64_t bytes,
		    uint64_t exe)
{
	if (!count)
		return;
	single(m, arena_printf(m->a, "%s%s_%s_counts_counter", m->prefix, role, x), m->labels,
	       m->nlabels, (double)count);
	if (bytes)
		single(m, arena_printf(m->a, "%s%s_%s_bytes_counter", m->prefix, role, x),
		       m->labels, m->nlabels, (double)bytes);
	if (exe)
		single(m, arena_printf(m->a, "%s%s_%s_exe_time_counter", m->prefix, role, x),
		       m->labels, m->nlabels, (double)exe / (double)count);
}

static void l4_hist(struct mb *m, const char *role, const char *x, const struct net_l4_acc *a,
		    uint64_t div)
{
	histogram(m, arena_printf(m->a, "%s%s_%s_histogram", m->prefix, role, x), net_l4_buckets_ns,
		  div, a->hist, NET_L4_BUCKETS);
}

static bool same_instance(const struct net_proc *a, const struct net_proc *b)
{
	return a && b && a->known && b->known && !strcmp(a->p.service, b->p.service) &&
	       !strcmp(a->p.instance, b->p.instance);
}

enum remote_kind { REMOTE_PID, REMOTE_LOCAL, REMOTE_ADDRESS };

static enum remote_kind remote_of(const struct net_task *t, const struct net_traffic *tr,
				  const struct net_proc *lp, const struct net_proc **ret_rp,
				  char *addr, size_t len)
{
	const struct net_proc *rp = tr->rpid >= 0 ? net__proc(t, tr->rpid) : NULL;
	char ip[INET6_ADDRSTRLEN];

	if (same_instance(lp, rp)) {
		*ret_rp = rp;
		return REMOTE_PID;
	}
	if (tr->rlocal)
		return REMOTE_LOCAL;
	net__addr_str(tr->raddr, ip, sizeof(ip));
	snprintf(addr, len, "%s:%u", ip, tr->rport);
	return REMOTE_ADDRESS;
}

/* The labels of §4.2, in their order. */
static int traffic_labels(const struct net_task *t, struct mb *m, const struct net_traffic *tr,
			  const struct net_proc *lp)
{
	const char *role = net__role_name(tr->role);
	const char *peer = tr->role == NET_ROLE_SERVER ? "client" : "server";
	const struct net_proc *rp = NULL;
	char addr[INET6_ADDRSTRLEN + 8], name[32];
	label **l = arena_alloc(m->a, 5 * sizeof(*l));

	if (!l)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%s_process_id", role);
	l[0] = mk_label(m->a, name, lp->p.process_id);
	switch (remote_of(t, tr, lp, &rp, addr, sizeof(addr))) {
	case REMOTE_PID:
		snprintf(name, sizeof(name), "%s_process_id", peer);
		l[1] = mk_label(m->a, name, rp->p.process_id);
		break;
	case REMOTE_LOCAL:
		snprintf(name, sizeof(name), "%s_local", peer);
		l[1] = mk_label(m->a, name, "true");
		break;
	default:
		snprintf(name, sizeof(name), "%s_address", peer);
		l[1] = mk_label(m->a, name, addr);
		break;
	}
	l[2] = mk_label(m->a, "side", role);
	/* Upstream says "http" for HTTP/1 and HTTP/2 alike. */
	l[3] = mk_label(m->a, "protocol", net__proto_name(tr->proto));
	l[4] = mk_label(m->a, "is_ssl", tr->ssl ? "true" : "false");
	m->labels = l;
	m->nlabels = 5;
	return m->a->err;
}

static void traffic_meters(struct mb *m, const struct net_traffic *tr)
{
	const char *role = net__role_name(tr->role);
	const struct net_http_acc *h = &tr->http;
	const char *P = m->prefix;
	char fam[160];

	counter(m, role, "write", tr->wr.count, tr->wr.bytes, tr->wr.exe);
	counter(m, role, "read", tr->rd.count, tr->rd.bytes, tr->rd.exe);
	counter(m, role, "write_rtt", tr->rtt.count, 0, tr->rtt.exe);
	counter(m, role, "connect", tr->connect.count, 0, tr->connect.exe);
	counter(m, role, "close", tr->close.count, 0, tr->close.exe);
	counter(m, role, "retransmit", tr->retrans, 0, 0);
	counter(m, role, "drop", tr->drops, 0, 0);
	l4_hist(m, role, "write_rtt", &tr->rtt, 1000); /* µs, as upstream maps RTT buckets */
	l4_hist(m, role, "write_exe_time", &tr->wr, 1);
	l4_hist(m, role, "read_exe_time", &tr->rd, 1);
	l4_hist(m, role, "connect_exe_time", &tr->connect, 1);
	l4_hist(m, role, "close_exe_time", &tr->close, 1);
	if (!h->requests || tr->proto <= NET_PROTO_NONE)
		return;
	/*
	 * HTTP/1 and HTTP/2 as upstream's http1 meters, which its OAP rules read; another
	 * protocol X in the same family, named <prefix>X_..., with an error counter (its own
	 * codes say which answers failed) and its result codes as `code` (docs/network.md,
	 * "Against the OAP"; deploy/oap has the rules that aggregate them).
	 */
	if (tr->proto == NET_PROTO_HTTP1)
		snprintf(fam, sizeof(fam), "%shttp1", P);
	else
		snprintf(fam, sizeof(fam), "%s%s", P, net__proto_name(tr->proto));
	single(m, arena_printf(m->a, "%s_%s_duration_avg", fam, role), m->labels, m->nlabels,
	       (double)h->dur_ms / (double)h->requests);
	histogram(m, arena_printf(m->a, "%s_%s_duration_histogram", fam, role), net_dur_buckets_ms,
		  1, h->dur_hist, NET_DUR_BUCKETS);
	single(m, arena_printf(m->a, "%s_request_counter", fam), m->labels, m->nlabels,
	       (double)h->requests);
	if (tr->proto != NET_PROTO_HTTP1)
		single(m, arena_printf(m->a, "%s_error_counter", fam), m->labels, m->nlabels,
		       (double)h->errors);
	for (uint32_t i = 0; i < h->nstatus; i++) {
		label **l = arena_alloc(m->a, (m->nlabels + 1) * sizeof(*l));
		char code[16];

		if (!l)
			return;
		memcpy(l, m->labels, m->nlabels * sizeof(*l));
		snprintf(code, sizeof(code), "%d", (int)h->status[i].code);
		l[m->nlabels] = mk_label(m->a, "code", code);
		single(m, arena_printf(m->a, "%s_response_status_counter", fam), l, m->nlabels + 1,
		       (double)h->status[i].n);
	}
	single(m, arena_printf(m->a, "%s_request_package_size_avg", fam), m->labels, m->nlabels,
	       (double)h->req_bytes / (double)h->requests);
	single(m, arena_printf(m->a, "%s_response_package_size_avg", fam), m->labels, m->nlabels,
	       (double)h->resp_bytes / (double)h->requests);
	histogram(m, arena_printf(m->a, "%s_request_package_size_histogram", fam), net_size_buckets,
		  1, h->req_hist, NET_SIZE_BUCKETS);
	histogram(m, arena_printf(m->a, "%s_response_package_size_histogram", fam),
		  net_size_buckets, 1, h->resp_hist, NET_SIZE_BUCKETS);
}

/* ---- sampled traces ---- */

static void json_str(char *out, size_t len, size_t *o, const char *s)
{
	char tmp[8];

	for (const char *q = "\""; *q; q++)
		if (*o + 1 < len)
			out[(*o)++] = *q;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		size_t k;

		if (ch == '"' || ch == '\\')
			snprintf(tmp, sizeof(tmp), "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			snprintf(tmp, sizeof(tmp), "\\u%04x", ch);
		else
			snprintf(tmp, sizeof(tmp), "%c", ch);
		k = strlen(tmp);
		if (*o + k + 2 > len)
			break;
		memcpy(out + *o, tmp, k);
		*o += k;
	}
	if (*o + 1 < len)
		out[(*o)++] = '"';
	out[*o] = '\0';
}

static void json_raw(char *out, size_t len, size_t *o, const char *s)
{
	size_t k = strlen(s);

	if (*o + k + 1 > len)
		k = len - *o - 1;
	memcpy(out + *o, s, k);
	*o += k;
	out[*o] = '\0';
}

static void json_process(char *out, size_t len, size_t *o, const char *id, bool local,
			 const char *addr)
{
	json_raw(out, len, o, "{\"process_id\":");
	json_str(out, len, o, id);
	json_raw(out, len, o,
		 local ? ",\"local\":true,\"address\":" : ",\"local\":false,\"address\":");
	json_str(out, len, o, addr);
	json_raw(out, len, o, "}");
}

static const char *const reason_names[NET_REASONS] = {
	[NET_SLOW] = "slow",
	[NET_4XX] = "status_4xx",
	[NET_5XX] = "status_5xx",
};

/* upstream's SamplingTraceLogBody, its field order (Go's json.Marshal keeps it) */
static char *sample_body(struct arena *a, const struct net_task *t, const struct net_traffic *tr,
			 const struct net_proc *lp, const struct net_sample *s, int reason)
{
	const struct net_proc *rp = NULL;
	char addr[INET6_ADDRSTRLEN + 8] = "", num[64];
	enum remote_kind rk = remote_of(t, tr, lp, &rp, addr, sizeof(addr));
	const char *rid = rk == REMOTE_PID ? rp->p.process_id : "";
	const char *raddr = rk == REMOTE_ADDRESS ? addr : "";
	size_t len = 4096, o = 0;
	char *out = arena_alloc(a, len);

	if (!out)
		return NULL;
	json_raw(out, len, &o, "{\"uri\":");
	json_str(out, len, &o, s->uri);
	json_raw(out, len, &o, ",\"reason\":");
	json_str(out, len, &o, reason_names[reason]);
	snprintf(num, sizeof(num), ",\"latency\":%llu", (unsigned long long)s->latency_ms);
	json_raw(out, len, &o, num);
	json_raw(out, len, &o, ",\"trace_provider\":");
	json_str(out, len, &o, s->zipkin ? "zipkin" : "skywalking");
	json_raw(out, len, &o, ",\"client_process\":");
	if (tr->role == NET_ROLE_SERVER)
		json_process(out, len, &o, rid, rk == REMOTE_LOCAL, raddr);
	else
		json_process(out, len, &o, lp->p.process_id, false, "");
	json_raw(out, len, &o, ",\"server_process\":");
	if (tr->role == NET_ROLE_SERVER)
		json_process(out, len, &o, lp->p.process_id, false, "");
	else
		json_process(out, len, &o, rid, rk == REMOTE_LOCAL, raddr);
	json_raw(out, len, &o, ",\"detect_point\":");
	json_str(out, len, &o, net__role_name(tr->role));
	json_raw(out, len, &o, ",\"component\":");
	json_str(out, len, &o, net__proto_name(tr->proto));
	snprintf(num, sizeof(num), ",\"ssl\":%s,\"status\":%u}", tr->ssl ? "true" : "false",
		 s->status);
	json_raw(out, len, &o, num);
	return out;
}

static int sample_cmp(const void *a, const void *b)
{
	const struct net_sample *x = *(struct net_sample *const *)a;
	const struct net_sample *y = *(struct net_sample *const *)b;

	return x->latency_ms > y->latency_ms ? -1 : x->latency_ms < y->latency_ms;
}

static int put_log(struct spool_batch *logs, struct arena *a, const struct net_proc *lp,
		   const char *trace_id, char *body, int64_t now_ms)
{
	Skywalking__V3__LogData d = SKYWALKING__V3__LOG_DATA__INIT;
	Skywalking__V3__LogDataBody lb = SKYWALKING__V3__LOG_DATA_BODY__INIT;
	Skywalking__V3__JSONLog js = SKYWALKING__V3__JSONLOG__INIT;
	Skywalking__V3__TraceContext tc = SKYWALKING__V3__TRACE_CONTEXT__INIT;
	Skywalking__V3__LogTags tags = SKYWALKING__V3__LOG_TAGS__INIT;
	Skywalking__V3__KeyStringValuePair kv = SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT,
					   *kvp = &kv;
	uint8_t *dst;
	size_t len;
	int err;

	(void)a;
	d.timestamp = now_ms;
	d.service = (char *)lp->p.service;
	d.serviceinstance = (char *)lp->p.instance;
	d.layer = (char *)lp->p.layer;
	kv.key = "LOG_KIND";
	kv.value = "NET_PROFILING_SAMPLED_TRACE";
	tags.data = &kvp;
	tags.n_data = 1;
	d.tags = &tags;
	tc.traceid = (char *)trace_id;
	d.tracecontext = &tc;
	js.json = body;
	lb.type = "json";
	lb.content_case = SKYWALKING__V3__LOG_DATA_BODY__CONTENT_JSON;
	lb.json = &js;
	d.body = &lb;
	len = skywalking__v3__log_data__get_packed_size(&d);
	err = spool_batch__reserve(logs, len, &dst);
	if (err)
		return err;
	skywalking__v3__log_data__pack(&d, dst);
	logs->samples++;
	return 0;
}

static int traffic_logs(const struct net_task *t, struct arena *a, const struct net_traffic *tr,
			const struct net_proc *lp, int64_t now_ms, struct spool_batch *logs)
{
	for (int r = 0; r < NET_REASONS; r++) {
		struct net_sample *v[NET_TOPN];
		uint32_t n = tr->http.nsamples[r];

		memcpy(v, tr->http.samples[r], n * sizeof(*v));
		qsort(v, n, sizeof(*v), sample_cmp);
		for (uint32_t i = 0; i < n; i++) {
			char *body = sample_body(a, t, tr, lp, v[i], r);
			int err;

			if (!body)
				return -ENOMEM;
			err = put_log(logs, a, lp, v[i]->ref.trace_id, body, now_ms);
			if (err)
				return err;
		}
	}
	return 0;
}

struct grp {
	const struct net_proc *lp;
	size_t i;
};

static int grp_cmp(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;
	int r = strcmp(x->lp->p.service, y->lp->p.service);

	if (!r)
		r = strcmp(x->lp->p.instance, y->lp->p.instance);
	if (!r)
		r = x->i < y->i ? -1 : x->i > y->i;
	return r;
}

static int put_collection(struct mb *m, const struct net_proc *lp, int64_t now_ms,
			  struct spool_batch *b)
{
	Skywalking__V3__MeterDataCollection c = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
	uint8_t *dst;
	size_t len;
	int err;

	if (!m->n)
		return 0;
	m->v[0]->service = (char *)lp->p.service;
	m->v[0]->serviceinstance = (char *)lp->p.instance;
	m->v[0]->timestamp = now_ms;
	c.meterdata = m->v;
	c.n_meterdata = m->n;
	len = skywalking__v3__meter_data_collection__get_packed_size(&c);
	err = spool_batch__reserve(b, len, &dst);
	if (err)
		return err;
	skywalking__v3__meter_data_collection__pack(&c, dst);
	b->samples += m->n;
	m->n = 0;
	return 0;
}

int net_task__meters(struct net_task *t, int64_t now_ms, struct spool_batch *b,
		     struct spool_batch *logs)
{
	struct arena a = { 0 };
	struct mb m = { .a = &a };
	struct grp *g = NULL;
	size_t ng = 0;
	int err = 0;

	if (!t || !b || !logs)
		return -EINVAL;
	m.prefix = t->prefix;
	b->task_id = logs->task_id = t->o.task_id;
	if (t->nlast) {
		g = malloc(t->nlast * sizeof(*g));
		if (!g)
			return -ENOMEM;
	}
	/* Local mode has no processes, hence no labels: only the report. */
	for (size_t i = 0; i < t->nlast; i++) {
		const struct net_proc *lp = net__proc(t, t->last[i].pid);

		if (lp && lp->known) {
			g[ng].lp = lp;
			g[ng++].i = i;
		}
	}
	if (ng)
		qsort(g, ng, sizeof(*g), grp_cmp);
	for (size_t k = 0; k < ng && !err; k++) {
		const struct net_traffic *tr = &t->last[g[k].i];

		err = traffic_labels(t, &m, tr, g[k].lp);
		if (err)
			break;
		traffic_meters(&m, tr);
		err = a.err;
		if (!err)
			err = traffic_logs(t, &a, tr, g[k].lp, now_ms, logs);
		if (!err && (k + 1 == ng || strcmp(g[k].lp->p.service, g[k + 1].lp->p.service) ||
			     strcmp(g[k].lp->p.instance, g[k + 1].lp->p.instance)))
			err = put_collection(&m, g[k].lp, now_ms, b);
	}
	free(g);
	free(m.v);
	arena_free(&a);
	return err;
}
