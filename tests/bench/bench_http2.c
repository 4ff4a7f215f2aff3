// SPDX-License-Identifier: Apache-2.0
/*
 * The HTTP/2 parser's CPU per 1000 requests, warm, on what the NETWORK bench's nginx h2c
 * under h2load looks like to the shipper (scripts/bench_network_protocols.sh runs it): one
 * connection seen from its start, the client writing 10 requests per call (h2load's HPACK:
 * nghttp2's deflater, the same five fields each time), the server one writev per response
 * (nginx 1.22's header block as recorded in tests/unit/data/http2/curl_nginx.s2c: every field
 * a literal with incremental indexing, Huffman-coded, then a 2-byte DATA frame). Every
 * exchange is popped as the shipper does. The client's header blocks are made with nghttp2's
 * deflater before the clock starts: its work is the client's, not the shipper's (it was half
 * of what this bench measured until 2026-11-28).
 *
 * Usage: bench_http2 [REQUESTS]   prints "http2_parser_ms_per_1000_requests X".
 */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/protocols/l7.h"

#define BATCH 10

/* curl_nginx.s2c's HEADERS block: 200, server, date, content-type, content-length, ... */
static const char resp_hex[] =
	"887689aa6355e580ae212e1f6196d07abe94132a693f75040138a01bb8d39704153168df5f87497ca58ae819"
	"aa5c0535343033386c97d07abe94132a693f75040138a01bb8d3771b714c5a37ff00832a47378cfe5c8c0cc8"
	"c85a5a4642e7f3008919085ad2b583aa62a3848fd24a8f";

static size_t put_frame(uint8_t *b, uint8_t type, uint8_t fl, uint32_t sid, const uint8_t *p,
			size_t n)
{
	b[0] = (uint8_t)(n >> 16), b[1] = (uint8_t)(n >> 8), b[2] = (uint8_t)n;
	b[3] = type, b[4] = fl;
	b[5] = (uint8_t)(sid >> 24), b[6] = (uint8_t)(sid >> 16), b[7] = (uint8_t)(sid >> 8);
	b[8] = (uint8_t)sid;
	memcpy(b + 9, p, n);
	return 9 + n;
}

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long total = argc > 1 ? atol(argv[1]) : 200000;
	static const char *const nv[] = {
		":method", "GET",	 ":path",	    "/ok",	  ":scheme",
		"http",	   ":authority", "127.0.0.1:18080", "user-agent", "h2load nghttp2/1.52.0"
	};
	const struct l7_ops *o = &l7_http2_ops;
	nghttp2_hd_deflater *def;
	uint8_t resp[256], seg[8192], blk[512];
	size_t resp_n = strlen(resp_hex) / 2;
	uint64_t ts = 1, popped = 0;
	uint8_t **reqs;
	size_t *req_len, nbatch;
	struct l7_exchange x;
	double t0, t1;
	void *c;

	/* Stream ids are 31 bits. */
	if (total <= 0 || total > 1000000000 || nghttp2_hd_deflate_new(&def, 4096))
		return 1;
	for (size_t i = 0; i < resp_n; i++)
		sscanf(resp_hex + 2 * i, "%2hhx", &resp[i]);
	c = o->new_conn(0);
	if (!c)
		return 1;
	/* The client's preface and SETTINGS, the server's SETTINGS. */
	memcpy(seg, HTTP2_PREFACE, HTTP2_PREFACE_LEN);
	o->feed(c, L7_EGRESS, ts, seg,
		HTTP2_PREFACE_LEN + put_frame(seg + HTTP2_PREFACE_LEN, 4, 0, 0, NULL, 0),
		HTTP2_PREFACE_LEN + 9);
	o->feed(c, L7_INGRESS, ts, seg, put_frame(seg, 4, 0, 0, NULL, 0), 9);
	/* Every batch of requests, deflated now. */
	nbatch = (size_t)((total + BATCH - 1) / BATCH);
	reqs = malloc(nbatch * sizeof(*reqs));
	req_len = malloc(nbatch * sizeof(*req_len));
	if (!reqs || !req_len)
		return 1;
	for (size_t b = 0; b < nbatch; b++) {
		uint32_t sid0 = (uint32_t)(1 + 2 * b * BATCH);
		size_t n = 0;

		for (uint32_t k = 0; k < BATCH; k++) {
			nghttp2_nv a[5];
			ssize_t len;

			for (int i = 0; i < 5; i++)
				a[i] = (nghttp2_nv){ (uint8_t *)(uintptr_t)nv[2 * i],
						     (uint8_t *)(uintptr_t)nv[2 * i + 1],
						     strlen(nv[2 * i]), strlen(nv[2 * i + 1]),
						     NGHTTP2_NV_FLAG_NONE };
			len = nghttp2_hd_deflate_hd(def, blk, sizeof(blk), a, 5);
			if (len < 0)
				return 1;
			n += put_frame(seg + n, 1, 5, sid0 + 2 * k, blk, (size_t)len);
		}
		reqs[b] = malloc(n);
		if (!reqs[b])
			return 1;
		memcpy(reqs[b], seg, n);
		req_len[b] = n;
	}
	t0 = cpu_ms();
	for (size_t b = 0; b < nbatch; b++) {
		uint32_t sid0 = (uint32_t)(1 + 2 * b * BATCH);
		size_t n;

		o->feed(c, L7_EGRESS, ++ts, reqs[b], req_len[b], req_len[b]);
		while (o->next(c, &x) == 1)
			popped++;
		for (uint32_t k = 0; k < BATCH; k++) {
			n = put_frame(seg, 1, 4, sid0 + 2 * k, resp, resp_n);
			n += put_frame(seg + n, 0, 1, sid0 + 2 * k, (const uint8_t *)"ok", 2);
			o->feed(c, L7_INGRESS, ++ts, seg, n, n);
			while (o->next(c, &x) == 1)
				popped++;
		}
	}
	t1 = cpu_ms();
	if (popped != (uint64_t)((total + BATCH - 1) / BATCH * BATCH)) {
		fprintf(stderr, "bench_http2: %llu exchanges for %ld requests\n",
			(unsigned long long)popped, total);
		return 1;
	}
	printf("http2_parser_ms_per_1000_requests %.4f\n", (t1 - t0) * 1000 / (double)popped);
	o->free_conn(c);
	nghttp2_hd_deflate_del(def);
	for (size_t b = 0; b < nbatch; b++)
		free(reqs[b]);
	free(reqs);
	free(req_len);
	return 0;
}
