// SPDX-License-Identifier: Apache-2.0
/*
 * A NETWORK task's span attached events (reference network-profiling §4.4): the request and
 * response of a sampled trace, as its rule asks for them, in upstream's form: event names,
 * tags and their order, data_content's encoding. network.c keeps the bytes and cuts the
 * messages out; this file turns a message into its data_content and the samples of the last
 * interval into SpanAttachedEvent messages.
 *
 * Upstream also sends one "Syscall <Fn>" event per syscall of each message (interface names,
 * packet counts, RTT): not here, the records carry none of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "common/Common.pb-c.h"
#include "language-agent/Tracing.pb-c.h"
#include "shipper/network/netpriv.h"

/* Upstream's default_encoding of both directions: the charset of the default content type. */
#define DEFAULT_CONTENT_TYPE "text/html; charset=UTF-8"

void net__bytes_size(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	unsigned i = 0;

	while (v >= 1024.0 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		i++;
	}
	/* Go's %.4g and C's agree on these: 4 significant digits, no trailing zeros. */
	snprintf(buf, len, "%.4g%s", v, units[i]);
}

/* ---- data_content ---- */

struct out {
	char *p;
	size_t len, cap; /* cap: room for the content, the NUL excluded */
};

static void put(struct out *o, const void *p, size_t n)
{
	if (n > o->cap - o->len)
		n = o->cap - o->len;
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

/* End of the header block (after its empty line) in msg[0..len), or len if it is not there. */
static size_t header_end(const uint8_t *msg, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (msg[i] != '\n')
			continue;
		if (i + 1 < len && msg[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && msg[i + 1] == '\r' && msg[i + 2] == '\n')
			return i + 3;
	}
	return len;
}

/* The first value of header field name (case-insensitive), blanks trimmed, or "". */
static void header_get(const uint8_t *h, size_t len, const char *name, char *out, size_t out_len)
{
	size_t nl = strlen(name), i = 0;

	out[0] = '\0';
	/* the start line is no field */
	while (i < len && h[i] != '\n')
		i++;
	while (i < len) {
		size_t line = ++i, end, v;

		while (i < len && h[i] != '\n')
			i++;
		end = i;
		if (end - line <= nl || h[line + nl] != ':' ||
		    strncasecmp((const char *)h + line, name, nl))
			continue;
		v = line + nl + 1;
		while (v < end && (h[v] == ' ' || h[v] == '\t'))
			v++;
		while (end > v && (h[end - 1] == '\r' || h[end - 1] == ' ' || h[end - 1] == '\t'))
			end--;
		if (end - v >= out_len)
			end = v + out_len - 1;
		memcpy(out, h + v, end - v);
		out[end - v] = '\0';
		return;
	}
}

/* text/..., or application/json with or without parameters (upstream: only without). */
static bool is_plain(const char *ctype)
{
	size_t n = strcspn(ctype, "; \t");

	return !strncasecmp(ctype, "text/", 5) ||
	       (n == 16 && !strncasecmp(ctype, "application/json", 16));
}

/* Whether a comma-separated list of codings contains c. */
static bool has_coding(const char *list, const char *c)
{
	size_t cl = strlen(c);

	for (const char *p = list; *p;) {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		n = strcspn(p, ", \t;");
		if (n == cl && !strncasecmp(p, c, cl))
			return true;
		p += n;
		while (*p && *p != ',')
			p++;
	}
	return false;
}

/*
 * A chunked body decoded in place, as far as the bytes go: returns the data's length. A size
 * line that does not parse ends it.
 */
static size_t dechunk(uint8_t *b, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len) {
		uint64_t size = 0;
		size_t digits = 0;

		while (i < len && digits < 16) {
			uint8_t ch = b[i];
			int v = ch >= '0' && ch <= '9'	 ? ch - '0'
				: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
				: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
							 : -1;

			if (v < 0)
				break;
			size = size * 16 + (uint64_t)v;
			digits++;
			i++;
		}
		if (!digits)
			break;
		while (i < len && b[i] != '\n') /* extensions */
			i++;
		if (i >= len || !size)
			break;
		i++;
		if (size > len - i)
			size = len - i;
		memmove(b + o, b + i, (size_t)size);
		o += (size_t)size;
		i += (size_t)size;
		if (i < len && b[i] == '\r')
			i++;
		if (i < len && b[i] == '\n')
			i++;
	}
	return o;
}

/*
 * gzip data inflated into o, as far as the input and the room go: a truncated stream gives
 * what it holds, a corrupt one what came before the corruption.
 */
static void gunzip(const uint8_t *in, size_t len, struct out *o)
{
	z_stream z;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	while (o->len < o->cap) {
		int r;

		z.next_out = (Bytef *)o->p + o->len;
		z.avail_out = (uInt)(o->cap - o->len);
		r = inflate(&z, Z_NO_FLUSH);
		o->len = o->cap - z.avail_out;
		if (r != Z_OK)
			break;
	}
	inflateEnd(&z);
}

/* Valid UTF-8 without NUL: anything else becomes '?', byte for byte. */
static void utf8_clean(char *s, size_t len)
{
	uint8_t *p = (uint8_t *)s;
	size_t i = 0;

	while (i < len) {
		uint8_t c = p[i];
		size_t n = c < 0x80		? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		uint32_t cp;
		bool ok = n && i + n <= len;

		if (c == 0) {
			p[i++] = '?';
			continue;
		}
		if (n == 1) {
			i++;
			continue;
		}
		cp = n ? c & (0x7f >> n) : 0;
		for (size_t k = 1; ok && k < n; k++) {
			ok = (p[i + k] & 0xc0) == 0x80;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		/* no overlong forms, no surrogates, nothing past U+10FFFF */
		if (ok &&
		    ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		     (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)))
			ok = false;
		if (!ok) {
			p[i++] = '?';
			continue;
		}
		i += n;
	}
}

size_t net__http_content(const uint8_t *msg, size_t len, uint32_t max, char *out, size_t out_len)
{
	char ctype[HTTP1_CTYPE_MAX + 1], coding[64], te[64];
	struct out o = { .p = out };
	size_t hlen = header_end(msg, len);

	if (!out_len)
		return 0;
	o.cap = out_len - 1;
	if (max && hlen >= max) {
		put(&o, msg, max);
		goto done;
	}
	put(&o, msg, hlen);
	header_get(msg, hlen, "Content-Type", ctype, sizeof(ctype));
	if (!ctype[0])
		snprintf(ctype, sizeof(ctype), "%s", DEFAULT_CONTENT_TYPE);
	if (!is_plain(ctype)) {
		char note[NET_CONTENT_SLACK];
		int n = snprintf(note, sizeof(note), "[not plain, current content type: %s]",
				 ctype);

		put(&o, note, n > 0 ? (size_t)n : 0);
		goto done;
	}
	if (hlen < len) {
		size_t blen = len - hlen;
		uint8_t *body = malloc(blen);

		/* the body may take what the header block left of max */
		if (max && o.cap > max)
			o.cap = max;
		if (!body)
			goto done;
		memcpy(body, msg + hlen, blen);
		header_get(msg, hlen, "Transfer-Encoding", te, sizeof(te));
		header_get(msg, hlen, "Content-Encoding", coding, sizeof(coding));
		if (has_coding(te, "chunked"))
			blen = dechunk(body, blen);
		if (has_coding(coding, "gzip"))
			gunzip(body, blen, &o);
		else
			put(&o, body, blen);
		free(body);
	}
done:
	out[o.len] = '\0';
	utf8_clean(out, o.len);
	return o.len;
}

/* ---- events ---- */

/* CLOCK_MONOTONIC to the wall clock, as now: the records' times are monotonic. */
static int64_t mono_to_unix_ns(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000 +
	       ((int64_t)r.tv_nsec - (int64_t)m.tv_nsec);
}

static void instant(Skywalking__V3__Instant *i, uint64_t mono_ns, int64_t off)
{
	/* Wrapping sum: a record's time comes from another process and may be
	 * anything; a time before the epoch is shown as the epoch. */
	int64_t ns = (int64_t)(mono_ns + (uint64_t)off);

	if (ns < 0)
		ns = 0;
	skywalking__v3__instant__init(i);
	i->seconds = ns / 1000000000;
	i->nanos = (int32_t)(ns % 1000000000);
}

static int put_event(struct spool_batch *events, const struct net_traffic *tr,
		     const struct net_proc *lp, const struct net_sample *s, int which, int64_t off)
{
	const struct net_raw *raw = s->raw[which];
	Skywalking__V3__SpanAttachedEvent e = SKYWALKING__V3__SPAN_ATTACHED_EVENT__INIT;
	Skywalking__V3__SpanAttachedEvent__SpanReference ref =
		SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE__INIT;
	Skywalking__V3__KeyStringValuePair kv[8], *kvp[8];
	Skywalking__V3__Instant start, end;
	char size[32];
	const char *const keys[8] = {
		"data_size",	   "data_content", "data_direction",	    "data_type",
		"connection_role", "service_name", "service_instance_name", "process_name",
	};
	const char *const values[8] = {
		size,
		raw->content,
		raw->inbound ? "inbound" : "outbound",
		which ? "response" : "request",
		net__role_name(tr->role),
		lp->p.service,
		lp->p.instance,
		lp->p.name,
	};
	uint8_t *dst;
	size_t len;
	int err;

	net__bytes_size(raw->size, size, sizeof(size));
	for (int i = 0; i < 8; i++) {
		skywalking__v3__key_string_value_pair__init(&kv[i]);
		kv[i].key = (char *)keys[i];
		kv[i].value = (char *)values[i];
		kvp[i] = &kv[i];
	}
	instant(&start, raw->start_ns, off);
	instant(&end, raw->end_ns, off);
	e.starttime = &start;
	e.endtime = &end;
	e.event = which ? "HTTP Response Sampling" : "HTTP Request Sampling";
	e.tags = kvp;
	e.n_tags = 8;
	ref.type = s->zipkin ? SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__ZIPKIN
			     : SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__SKYWALKING;
	ref.traceid = (char *)s->ref.trace_id;
	ref.tracesegmentid = (char *)s->ref.segment_id;
	ref.spanid = (char *)s->ref.span_id;
	e.tracecontext = &ref;
	len = skywalking__v3__span_attached_event__get_packed_size(&e);
	err = spool_batch__reserve(events, len, &dst);
	if (err)
		return err;
	skywalking__v3__span_attached_event__pack(&e, dst);
	events->samples++;
	return 0;
}

static int by_latency(const void *a, const void *b)
{
	const struct net_sample *x = *(struct net_sample *const *)a;
	const struct net_sample *y = *(struct net_sample *const *)b;

	return x->latency_ms > y->latency_ms ? -1 : x->latency_ms < y->latency_ms;
}

int net_task__events(struct net_task *t, struct spool_batch *events)
{
	int64_t off;

	if (!t || !events)
		return -EINVAL;
	events->task_id = t->o.task_id;
	if (!t->keep_run)
		return 0;
	off = mono_to_unix_ns();
	/* In the order of the LogData of net_task__meters, per traffic. */
	for (size_t i = 0; i < t->nlast; i++) {
		const struct net_traffic *tr = &t->last[i];
		const struct net_proc *lp = net__proc(t, tr->pid);

		if (!lp || !lp->known)
			continue;
		for (int r = 0; r < NET_REASONS; r++) {
			struct net_sample *v[NET_TOPN];
			uint32_t n = tr->http.nsamples[r];

			memcpy(v, tr->http.samples[r], n * sizeof(*v));
			qsort(v, n, sizeof(*v), by_latency);
			for (uint32_t k = 0; k < n; k++)
				for (int w = 0; w < 2; w++) {
					int err = v[k]->raw[w]
							  ? put_event(events, tr, lp, v[k], w, off)
							  : 0;

					if (err)
						return err;
				}
		}
	}
	return 0;
}
