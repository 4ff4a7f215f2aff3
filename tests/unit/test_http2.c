// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/http/http2.c: real conversations recorded on this machine through tests/tools/
 * tcp_record.py (tests/unit/data/http2/: nginx h2c with curl and nghttp, a server push,
 * Apache's h2c upgrade with curl and nghttp, a Python grpcio client and server), fed as a
 * worker would capture them: whole, split at every byte, cut by the capture bound, seen
 * from the middle, with segments lost; then hand-built frames (HPACK from libnghttp2's
 * deflater) for padding, priority, CONTINUATION, interim responses, trailers, resets,
 * GOAWAY, pushes, hostile lengths and indices, and the stream bound. Every test closes the
 * connection at its end and checks that every byte fed is in an exchange or counted.
 *
 * The byte counts of the recordings were checked against an independent frame walker
 * (a few lines of Python summing 9 + length per stream of HEADERS, CONTINUATION, DATA and
 * PUSH_PROMISE frames).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "shipper/network/protocols/http/http1.h"
#include "shipper/network/protocols/http/http2.h"
#include "tests/unit/l7_build.h"
#include "tests/unit/l7_replay.h"

#define EG L7_EGRESS
#define IN L7_INGRESS
#define OPS (&l7_http2_ops)
#define MAX_X 300

/* A connection through the interface, the HTTP/2 part of its exchanges kept. */
struct run {
	void *c;
	struct http2_exchange x[MAX_X];
	size_t n;
};

static struct run *run_new(void)
{
	struct run *r = calloc(1, sizeof(*r));

	cr_assert(r);
	r->c = OPS->new_conn(0);
	cr_assert(r->c);
	return r;
}

static void pop(struct run *r)
{
	struct l7_exchange x;

	while (r->n < MAX_X && OPS->next(r->c, &x) == 1) {
		cr_assert(x.http2 && x.http == &x.http2->h);
		r->x[r->n++] = *x.http2;
	}
}

static void seg(struct run *r, enum l7_dir dir, uint64_t ts, const void *p, size_t captured,
		size_t actual)
{
	cr_assert_eq(OPS->feed(r->c, dir, ts, p, captured, actual), 0);
	pop(r);
}

/* Closes, pops what is left, checks that the bytes add up; returns the stats. */
static struct http2_stats finish(struct run *r, uint64_t ts)
{
	struct http2_stats st;
	uint64_t sum = 0;

	OPS->close(r->c, ts);
	pop(r);
	cr_assert_eq(http2__pending(r->c), 0);
	OPS->counts(r->c, &st);
	for (size_t i = 0; i < r->n; i++)
		sum += r->x[i].h.req_bytes + r->x[i].h.resp_bytes;
	cr_assert_eq(sum + st.bytes_unattributed, st.bytes_seen,
		     "exchanges %llu + unattributed %llu != seen %llu", (unsigned long long)sum,
		     (unsigned long long)st.bytes_unattributed, (unsigned long long)st.bytes_seen);
	cr_assert_eq(st.exchanges, r->n);
	return st;
}

static void run_free(struct run *r)
{
	if (!r)
		return;
	OPS->free_conn(r->c);
	free(r);
}

/* --- recordings --- */

/* The direction a recorded segment is for the traced process (the client, or the server). */
static enum l7_dir rdir(const struct l7r_seg *s, bool server)
{
	return s->c2s != server ? EG : IN;
}

struct play {
	bool server;	 /* the traced process is the server */
	size_t from;	 /* first segment fed */
	size_t chunk;	 /* feed in pieces of this many bytes, 0: whole segments */
	size_t cap;	 /* capture bound per segment, 0: none */
	size_t lose;	 /* segment reported lost instead, plus 1; 0: none */
	size_t skip_c2s; /* bytes of each direction not fed (the HTTP/1 part of an upgrade) */
	size_t skip_s2c;
};

#define PLAY(...) ((struct play){ __VA_ARGS__ })

static void rec_play(struct run *r, const struct l7r_rec *rec, struct play o)
{
	size_t skip[2] = { o.skip_s2c, o.skip_c2s };

	for (size_t i = o.from; i < rec->n; i++) {
		const struct l7r_seg *s = &rec->seg[i];
		enum l7_dir d = rdir(s, o.server);
		uint64_t ts = 1000 + (uint64_t)s->seq;
		const uint8_t *p = s->data;
		size_t len = s->len, k = skip[s->c2s] < len ? skip[s->c2s] : len;

		skip[s->c2s] -= k;
		p += k;
		len -= k;
		if (!len)
			continue;
		if (i + 1 == o.lose) {
			cr_assert_eq(OPS->lost(r->c, d, len), 0);
			continue;
		}
		if (o.cap && len > o.cap) {
			seg(r, d, ts, p, o.cap, len);
			continue;
		}
		if (!o.chunk) {
			seg(r, d, ts, p, len, len);
			continue;
		}
		for (size_t off = 0; off < len; off += o.chunk) {
			size_t n = len - off < o.chunk ? len - off : o.chunk;

			seg(r, d, ts, p + off, n, n);
		}
	}
}

static void same_exchanges(const struct run *a, const struct run *b)
{
	cr_assert_eq(a->n, b->n);
	for (size_t i = 0; i < a->n; i++)
		cr_assert_eq(memcmp(&a->x[i], &b->x[i], sizeof(a->x[i])), 0, "exchange %zu differs",
			     i);
}

#define SW8_GRPC "1-dHJhY2U=-c2Vn-0-c3Zj-aW5zdA==-L0VjaG8=-MTI3LjAuMC4x"

TestSuite(http2);

static void check_grpc(const struct run *r, enum l7_dir req)
{
	static const char *const path[] = { "/rover.Test/Echo", "/rover.Test/Fail",
					    "/rover.Test/Count", "/rover.Test/Echo" };
	static const uint64_t req_bytes[] = { 289, 55, 55, 36 }, resp_bytes[] = { 146, 54, 70, 60 };
	static const uint64_t start[] = { 1002, 1007, 1010, 1016 },
			      end[] = { 1005, 1009, 1014, 1017 };
	static const int32_t grpc[] = { 0, 5, 0, 0 };

	cr_assert_eq(r->n, 4);
	for (int i = 0; i < 4; i++) {
		const struct http2_exchange *x = &r->x[i];

		cr_assert_eq(x->stream_id, 1u + 2u * (unsigned)i);
		cr_assert_str_eq(x->h.method, "POST");
		cr_assert_str_eq(x->h.uri, path[i]);
		cr_assert_eq(x->h.uri_len, strlen(path[i]));
		cr_assert_eq(x->h.path_len, strlen(path[i]));
		cr_assert_str_eq(x->h.host, "127.0.0.1:28194");
		cr_assert_str_eq(x->h.req_content_type, "application/grpc");
		cr_assert_str_eq(x->h.resp_content_type, "application/grpc");
		cr_assert_eq(x->h.status, 200);
		cr_assert_eq(x->grpc_status, grpc[i]);
		cr_assert_eq(x->h.req_bytes, req_bytes[i]);
		cr_assert_eq(x->h.resp_bytes, resp_bytes[i]);
		cr_assert_eq(x->h.start_ns, start[i]);
		cr_assert_eq(x->h.end_ns, end[i]);
		cr_assert_eq(x->h.req_dir, req);
		cr_assert_eq(x->h.req_version, 20);
		cr_assert_eq(x->h.resp_version, 20);
		cr_assert_eq(x->h.flags, 0);
		/* Fail is a trailers-only response: its one block carries grpc-status. */
		cr_assert_eq(x->flags2, i == 1 ? HTTP2_F2_GRPC : HTTP2_F2_GRPC | HTTP2_F2_TRAILERS);
		cr_assert_str_eq(x->h.sw8, i == 0 ? SW8_GRPC : "");
	}
}

Test(http2, grpc_client_recording)
{
	struct l7r_rec *rec = l7r_load("http2", "grpc");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(0));
	cr_assert_eq(OPS->role(r->c), L7_ROLE_CLIENT);
	check_grpc(r, EG);
	st = finish(r, 2000);
	cr_assert_eq(st.bytes_seen, 1135);
	cr_assert_eq(st.bytes_unattributed, 370);
	cr_assert_eq(st.bytes_control, 370);
	cr_assert_eq(st.frames, 42);
	cr_assert_eq(st.streams, 4);
	cr_assert_eq(st.requests, 4);
	cr_assert_eq(st.responses, 4);
	cr_assert_eq(st.header_blocks, 11);
	cr_assert_eq(st.headers_undecodable, 0);
	cr_assert_eq(st.fields_unknown, 0);
	cr_assert_eq(st.settings, 2);
	cr_assert_eq(st.framing_errors + st.resyncs + st.stray_frames + st.unanswered, 0);
	run_free(r);
	l7r_rec_free(rec);
}

Test(http2, grpc_server_recording)
{
	struct l7r_rec *rec = l7r_load("http2", "grpc");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(.server = true));
	cr_assert_eq(OPS->role(r->c), L7_ROLE_SERVER);
	check_grpc(r, IN);
	st = finish(r, 2000);
	cr_assert_eq(st.bytes_unattributed, 370);
	cr_assert_eq(st.headers_undecodable, 0);
	run_free(r);
	l7r_rec_free(rec);
}

Test(http2, nginx_curl_large_body)
{
	struct l7r_rec *rec = l7r_load("http2", "curl_nginx");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(0));
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_str_eq(r->x[0].h.method, "GET");
	cr_assert_str_eq(r->x[0].h.uri, "/big.txt?x=y");
	cr_assert_eq(r->x[0].h.uri_len, 12);
	cr_assert_eq(r->x[0].h.path_len, 8);
	cr_assert_str_eq(r->x[0].h.host, "127.0.0.1:28191");
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_str_eq(r->x[0].h.resp_content_type, "text/plain");
	cr_assert_str_eq(r->x[0].h.req_content_type, "");
	cr_assert_eq(r->x[0].h.req_bytes, 51);
	cr_assert_eq(r->x[0].h.resp_bytes, 54221);
	cr_assert_eq(r->x[0].h.flags, 0);
	cr_assert_eq(r->x[0].flags2, 0);
	cr_assert_eq(r->x[0].grpc_status, -1);
	st = finish(r, 2000);
	cr_assert_eq(st.bytes_seen, 54394);
	cr_assert_eq(st.frames, 15);
	run_free(r);
	l7r_rec_free(rec);
}

/*
 * The server's frames written one per syscall and only the first 200 bytes of each
 * captured: every gap lies inside one frame, the framing holds, the sizes stay exact.
 */
Test(http2, capture_bound_inside_frames_keeps_framing)
{
	struct l7r_rec *rec = l7r_load("http2", "curl_nginx");
	struct run *r = run_new();
	struct http2_stats st;
	uint64_t gaps = 0;
	int frames = 0;

	for (size_t i = 0; i < rec->n; i++) {
		struct l7r_seg *s = &rec->seg[i];
		uint64_t ts = 1000 + (uint64_t)s->seq;

		if (s->c2s) {
			seg(r, EG, ts, s->data, s->len, s->len);
			continue;
		}
		for (size_t off = 0; off < s->len; frames++) {
			size_t len = 9 + ((size_t)s->data[off] << 16 |
					  (size_t)s->data[off + 1] << 8 | s->data[off + 2]);
			size_t cap = len < 200 ? len : 200;

			gaps += len - cap;
			seg(r, IN, ts, s->data + off, cap, len);
			off += len;
		}
	}
	/* SETTINGS, WINDOW_UPDATE, SETTINGS ACK, HEADERS, 7 DATA. */
	cr_assert_eq(frames, 11);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].h.resp_bytes, 54221);
	cr_assert_eq(r->x[0].h.req_bytes, 51);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_RESP_TRUNCATED);
	st = finish(r, 2000);
	cr_assert_eq(st.gap_bytes, gaps);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.headers_undecodable, 0);
	run_free(r);
	l7r_rec_free(rec);
}

/*
 * One 54270-byte read captured to 1000 bytes: the gap runs past the first DATA frame, the
 * framing is lost, the response never ends: at close it is truncated, its bytes up to the
 * end of the frame the capture stopped in.
 */
Test(http2, capture_bound_across_frames_loses_framing)
{
	struct l7r_rec *rec = l7r_load("http2", "curl_nginx");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(.cap = 1000));
	cr_assert_eq(r->n, 0);
	st = finish(r, 2000);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_RESP_TRUNCATED);
	/* HEADERS (9 + 111) and the first DATA frame (9 + 8192) of stream 1. */
	cr_assert_eq(r->x[0].h.resp_bytes, 9 + 111 + 9 + 8192);
	cr_assert_eq(r->x[0].h.end_ns, 1001);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.gap_bytes, 54270 - 1000);
	run_free(r);
	l7r_rec_free(rec);
}

Test(http2, nginx_curl_post_form_and_sw8)
{
	struct l7r_rec *rec = l7r_load("http2", "curl_post");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(0));
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].h.method, "POST");
	cr_assert_str_eq(r->x[0].h.uri, "/post");
	cr_assert_str_eq(r->x[0].h.req_content_type, "application/x-www-form-urlencoded");
	cr_assert_str_eq(r->x[0].h.resp_content_type, "text/plain");
	cr_assert_str_eq(r->x[0].h.sw8,
			 "1-dHJhY2U=-c2Vn-3-c3Zj-aW5zdA==-L3Bvc3Q=-MTI3LjAuMC4xOjE4MTkx");
	cr_assert_eq(r->x[0].h.status, 201);
	cr_assert_eq(r->x[0].h.req_bytes, 146);
	cr_assert_eq(r->x[0].h.resp_bytes, 77);
	st = finish(r, 2000);
	/* nginx resets the stream it already answered (NO_ERROR): nothing changes. */
	cr_assert_eq(st.rst_streams, 1);
	cr_assert_eq(st.exchanges, 1);
	cr_assert_eq(st.stray_frames, 0);
	run_free(r);
	l7r_rec_free(rec);
}

/* nghttp: five PRIORITY frames for idle streams 3..11 open nothing; three concurrent streams. */
Test(http2, nghttp_concurrent_streams)
{
	struct l7r_rec *rec = l7r_load("http2", "nghttp_nginx");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(0));
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[0].stream_id, 13);
	cr_assert_eq(r->x[1].stream_id, 15);
	cr_assert_eq(r->x[2].stream_id, 17);
	cr_assert_str_eq(r->x[0].h.uri, "/");
	cr_assert_str_eq(r->x[1].h.uri, "/big.txt");
	cr_assert_str_eq(r->x[2].h.uri, "/teapot");
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[1].h.status, 200);
	cr_assert_eq(r->x[2].h.status, 418);
	cr_assert_eq(r->x[0].h.req_bytes, 48);
	cr_assert_eq(r->x[1].h.req_bytes, 28);
	cr_assert_eq(r->x[2].h.req_bytes, 27);
	cr_assert_eq(r->x[0].h.resp_bytes, 131);
	cr_assert_eq(r->x[1].h.resp_bytes, 54221);
	cr_assert_eq(r->x[2].h.resp_bytes, 52);
	st = finish(r, 2000);
	cr_assert_eq(st.streams, 3);
	cr_assert_eq(st.goaway, 1);
	cr_assert_eq(st.bytes_unattributed, 181);
	run_free(r);
	l7r_rec_free(rec);
}

Test(http2, nginx_server_push)
{
	struct l7r_rec *rec = l7r_load("http2", "nghttp_push");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(0));
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].stream_id, 13);
	cr_assert_str_eq(r->x[0].h.uri, "/push");
	cr_assert_eq(r->x[0].h.status, 200);
	/* The PUSH_PROMISE frame (9 + 60) was sent on stream 13. */
	cr_assert_eq(r->x[0].h.resp_bytes, 134);
	cr_assert_eq(r->x[1].stream_id, 2);
	cr_assert_eq(r->x[1].flags2, HTTP2_F2_PUSHED);
	cr_assert_str_eq(r->x[1].h.method, "GET");
	cr_assert_str_eq(r->x[1].h.uri, "/index.html");
	cr_assert_str_eq(r->x[1].h.host, "127.0.0.1:28191");
	cr_assert_eq(r->x[1].h.status, 200);
	cr_assert_str_eq(r->x[1].h.resp_content_type, "text/html");
	cr_assert_eq(r->x[1].h.req_bytes, 0);
	cr_assert_eq(r->x[1].h.resp_bytes, 131);
	cr_assert_eq(r->x[1].h.req_dir, EG);
	cr_assert_eq(r->x[1].h.flags, 0);
	st = finish(r, 2000);
	cr_assert_eq(st.pushes, 1);
	cr_assert_eq(st.streams, 2);
	run_free(r);
	l7r_rec_free(rec);
}

/* curl against Apache: HTTP/1.1 with Upgrade: h2c, 101, then HTTP/2; stream 1 answers it. */
Test(http2, h2c_upgrade_after_http1)
{
	struct l7r_rec *rec = l7r_load("http2", "curl_upgrade");
	void *h1 = l7_http1_ops.new_conn(0);
	struct l7_exchange up;
	struct run *r = calloc(1, sizeof(*r));
	struct http2_stats st;

	cr_assert(h1 && r);
	/* The request is the first c2s segment, the 101 the first s2c one. */
	cr_assert_eq(rec->seg[0].len, 186);
	cr_assert_eq(rec->seg[1].len, 71);
	cr_assert_eq(l7_http1_ops.feed(h1, EG, 1000, rec->seg[0].data, rec->seg[0].len,
				       rec->seg[0].len),
		     0);
	cr_assert_eq(l7_http1_ops.feed(h1, IN, 1001, rec->seg[1].data, rec->seg[1].len,
				       rec->seg[1].len),
		     0);
	cr_assert_eq(l7_http1_ops.next(h1, &up), 1);
	cr_assert_eq(up.http->status, 101);
	cr_assert(up.http->flags & HTTP1_F_TUNNEL);
	cr_assert(up.flags & L7_F_SWITCH);
	cr_assert_eq(l7_http1_ops.then, OPS);
	r->c = OPS->new_after(h1);
	cr_assert(r->c);
	cr_assert_eq(OPS->role(r->c), L7_ROLE_CLIENT);
	rec_play(r, rec, PLAY(.from = 2));
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_UPGRADED);
	cr_assert_str_eq(r->x[0].h.method, "GET");
	cr_assert_str_eq(r->x[0].h.uri, "/index.html?q=1");
	cr_assert_eq(r->x[0].h.path_len, 11);
	cr_assert_str_eq(r->x[0].h.host, "127.0.0.1:28193");
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_str_eq(r->x[0].h.resp_content_type, "text/html");
	cr_assert_eq(r->x[0].h.req_bytes, 0);
	cr_assert_eq(r->x[0].h.resp_bytes, 132);
	cr_assert_eq(r->x[0].h.start_ns, 1000);
	cr_assert_eq(r->x[0].h.end_ns, 1006);
	cr_assert_eq(r->x[0].h.flags, 0);
	st = finish(r, 2000);
	cr_assert_eq(st.bytes_seen, 266);
	cr_assert_eq(st.bytes_unattributed, 134);
	/* Apache's GOAWAY when curl went quiet: last stream 1, nothing refused. */
	cr_assert_eq(st.goaway, 1);
	cr_assert_eq(st.headers_undecodable, 0);
	run_free(r);
	l7_http1_ops.free_conn(h1);
	l7r_rec_free(rec);
}

/* Upgraded without the HTTP/1 request at hand; nghttp then opens stream 13 (404). */
Test(http2, h2c_upgrade_without_request)
{
	struct l7r_rec *rec = l7r_load("http2", "nghttp_upgrade");
	struct run *r = calloc(1, sizeof(*r));
	struct http2_stats st;

	cr_assert(r);
	r->c = OPS->new_after(NULL);
	cr_assert(r->c);
	cr_assert_eq(OPS->role(r->c), L7_ROLE_UNKNOWN);
	rec_play(r, rec, PLAY(.skip_c2s = 177, .skip_s2c = 71));
	cr_assert_eq(OPS->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_UPGRADED);
	cr_assert_str_eq(r->x[0].h.method, "");
	cr_assert_str_eq(r->x[0].h.uri, "*");
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].h.resp_bytes, 132);
	cr_assert_eq(r->x[1].stream_id, 13);
	cr_assert_str_eq(r->x[1].h.uri, "/nope");
	cr_assert_eq(r->x[1].h.status, 404);
	cr_assert_str_eq(r->x[1].h.resp_content_type, "text/html; charset=iso-8859-1");
	cr_assert_eq(r->x[1].h.req_bytes, 53);
	cr_assert_eq(r->x[1].h.resp_bytes, 286);
	cr_assert_eq(r->x[1].h.flags, 0);
	st = finish(r, 2000);
	cr_assert_eq(st.bytes_seen, 670);
	cr_assert_eq(st.headers_undecodable, 0);
	run_free(r);
	l7r_rec_free(rec);
}

/*
 * Seen from segment 7 on (stream 3's request): both dynamic tables unknown. Fields coded
 * from the static table or as literals are exact; the others are counted. Stream 7 asks for
 * /rover.Test/Echo again, from the client's dynamic table: its path is "*".
 */
Test(http2, grpc_seen_midstream)
{
	struct l7r_rec *rec = l7r_load("http2", "grpc");
	struct run *r = run_new();
	struct http2_stats st;

	cr_assert_eq(rec->seg[7].seq, 7);
	rec_play(r, rec, PLAY(.from = 7));
	cr_assert_eq(OPS->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[0].stream_id, 3);
	cr_assert_str_eq(r->x[0].h.method, "POST");
	cr_assert_str_eq(r->x[0].h.uri, "/rover.Test/Fail");
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].grpc_status, 5);
	cr_assert_eq(r->x[0].h.req_bytes, 55);
	cr_assert_eq(r->x[0].h.resp_bytes, 54);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_REQ_HDR_TRUNCATED | HTTP1_F_RESP_HDR_TRUNCATED);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_REQ_HPACK_UNKNOWN | HTTP2_F2_RESP_HPACK_UNKNOWN);
	cr_assert_eq(r->x[1].stream_id, 5);
	cr_assert_str_eq(r->x[1].h.uri, "/rover.Test/Count");
	cr_assert_eq(r->x[1].grpc_status, -1);
	cr_assert_eq(r->x[1].flags2,
		     HTTP2_F2_REQ_HPACK_UNKNOWN | HTTP2_F2_RESP_HPACK_UNKNOWN | HTTP2_F2_TRAILERS);
	cr_assert_eq(r->x[2].stream_id, 7);
	cr_assert_str_eq(r->x[2].h.method, "POST");
	cr_assert_str_eq(r->x[2].h.uri, "*");
	cr_assert_eq(r->x[2].h.uri_len, 1);
	cr_assert_eq(r->x[2].h.status, 200);
	cr_assert_eq(r->x[2].h.req_bytes, 36);
	cr_assert_eq(r->x[2].h.resp_bytes, 60);
	st = finish(r, 2000);
	cr_assert_eq(st.header_blocks, 8);
	cr_assert_eq(st.headers_undecodable, 8);
	cr_assert_eq(st.hpack_missed_before_start, 8);
	cr_assert_eq(st.fields_unknown, 23);
	cr_assert_eq(st.framing_errors + st.resyncs, 0);
	run_free(r);
	l7r_rec_free(rec);
}

/* From segment 5: stream 1's request came before; its response ends it (NO_REQUEST). */
Test(http2, grpc_response_of_a_request_before_the_capture)
{
	struct l7r_rec *rec = l7r_load("http2", "grpc");
	struct run *r = run_new();

	rec_play(r, rec, PLAY(.from = 5));
	cr_assert_geq(r->n, 1);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_NO_REQUEST);
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].grpc_status, 0);
	cr_assert_eq(r->x[0].h.req_bytes, 0);
	cr_assert_eq(r->x[0].h.resp_bytes, 146);
	cr_assert_eq(r->x[0].h.start_ns, 1005);
	cr_assert_str_eq(r->x[0].h.method, "");
	cr_assert_str_eq(r->x[0].h.uri, "");
	finish(r, 2000);
	cr_assert_eq(r->n, 4);
	run_free(r);
	l7r_rec_free(rec);
}

/*
 * Stream 1's request (segment 2: SETTINGS ACK, HEADERS of 264 bytes, WINDOW_UPDATE, DATA
 * END_STREAM, WINDOW_UPDATE) captured to 100 bytes: its header block is cut, the client's
 * dynamic table unknown from then on; the gap runs past the HEADERS frame, so the framing
 * is lost until the next segment (a PING). The END_STREAM was in the gap: stream 1's request
 * is still open at close.
 */
Test(http2, gap_in_header_block)
{
	struct l7r_rec *rec = l7r_load("http2", "grpc");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(0));
	run_free(r);
	r = run_new();
	for (size_t i = 0; i < rec->n; i++) {
		struct l7r_seg *s = &rec->seg[i];

		seg(r, rdir(s, false), 1000 + (uint64_t)s->seq, s->data, i == 2 ? 100 : s->len,
		    s->len);
	}
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[0].stream_id, 3);
	cr_assert_eq(r->x[0].flags2 & HTTP2_F2_REQ_HPACK_UNKNOWN, HTTP2_F2_REQ_HPACK_UNKNOWN);
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].grpc_status, 5);
	cr_assert_eq(r->x[2].stream_id, 7);
	cr_assert_str_eq(r->x[2].h.uri, "*");
	st = finish(r, 2000);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(r->x[3].stream_id, 1);
	cr_assert_eq(r->x[3].h.flags, HTTP1_F_REQ_TRUNCATED | HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_eq(r->x[3].flags2 & HTTP2_F2_REQ_HPACK_UNKNOWN, HTTP2_F2_REQ_HPACK_UNKNOWN);
	cr_assert_str_eq(r->x[3].h.method, "POST");
	cr_assert_eq(r->x[3].h.status, 200);
	cr_assert_eq(r->x[3].grpc_status, 0);
	/* Its HEADERS frame, gap included; the rest of the segment counts unattributed. */
	cr_assert_eq(r->x[3].h.req_bytes, 9 + 264);
	cr_assert_eq(r->x[3].h.resp_bytes, 146);
	cr_assert_eq(r->x[3].h.end_ns, 1005);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.hpack_missed_before_start, 0);
	cr_assert_geq(st.headers_undecodable, 1);
	run_free(r);
	l7r_rec_free(rec);
}

/* Segment 7 (stream 3's request) lost: the server's answer still makes an exchange. */
Test(http2, lost_request_segment)
{
	struct l7r_rec *rec = l7r_load("http2", "grpc");
	struct run *r = run_new();
	struct http2_stats st;

	rec_play(r, rec, PLAY(.lose = 7 + 1));
	st = finish(r, 2000);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_eq(r->x[0].h.flags, 0);
	cr_assert_eq(r->x[1].stream_id, 3);
	cr_assert_eq(r->x[1].h.flags, HTTP1_F_NO_REQUEST);
	cr_assert_eq(r->x[1].h.status, 200);
	cr_assert_eq(r->x[1].grpc_status, 5);
	cr_assert_eq(st.lost_segments, 1);
	cr_assert_eq(st.lost_bytes, 81);
	cr_assert_eq(st.resyncs, 1);
	run_free(r);
	l7r_rec_free(rec);
}

/* --- hand-built frames --- */

/* A frame: its 9-byte header (length, type, flags, stream id) and its payload. */
static void frame(struct l7b *b, uint8_t type, uint8_t flags, uint32_t sid, const void *payload,
		  size_t len)
{
	l7b_be(b, len, 3);
	l7b_be(b, type, 1);
	l7b_be(b, flags, 1);
	l7b_be(b, sid, 4);
	l7b_put(b, payload, len);
}

/* An HPACK block of name, value pairs (NULL-terminated) from a real encoder. */
static size_t hpack(nghttp2_hd_deflater *def, uint8_t *out, size_t cap, const char *const *nv)
{
	nghttp2_nv a[32];
	size_t n = 0;
	ssize_t len;

	for (; nv[2 * n]; n++) {
		a[n].name = (uint8_t *)(uintptr_t)nv[2 * n];
		a[n].value = (uint8_t *)(uintptr_t)nv[2 * n + 1];
		a[n].namelen = strlen(nv[2 * n]);
		a[n].valuelen = strlen(nv[2 * n + 1]);
		a[n].flags = NGHTTP2_NV_FLAG_NONE;
	}
	len = nghttp2_hd_deflate_hd(def, out, cap, a, n);
	cr_assert_gt(len, 0);
	return (size_t)len;
}

struct peer {
	nghttp2_hd_deflater *def[2]; /* client's, server's */
	struct l7b c, s;	     /* what each wrote since the last flush */
};

static struct peer *peer_new(bool preface)
{
	struct peer *p = calloc(1, sizeof(*p));

	cr_assert(p);
	cr_assert_eq(nghttp2_hd_deflate_new(&p->def[0], 4096), 0);
	cr_assert_eq(nghttp2_hd_deflate_new(&p->def[1], 4096), 0);
	if (preface) {
		l7b_put(&p->c, HTTP2_PREFACE, HTTP2_PREFACE_LEN);
		frame(&p->c, 4, 0, 0, NULL, 0);
		frame(&p->s, 4, 0, 0, NULL, 0);
	}
	return p;
}

static void peer_free(struct peer *p)
{
	nghttp2_hd_deflate_del(p->def[0]);
	nghttp2_hd_deflate_del(p->def[1]);
	free(p);
}

/* HEADERS (+CONTINUATIONs of at most `piece` bytes of block, 0: one frame). */
static void headers(struct peer *p, bool server, uint32_t sid, bool es, size_t piece,
		    const char *const *nv)
{
	uint8_t blk[70000];
	size_t n = hpack(p->def[server], blk, sizeof(blk), nv), off = 0;
	struct l7b *b = server ? &p->s : &p->c;

	if (!piece || piece > n)
		piece = n;
	for (bool first = true; first || off < n; first = false) {
		size_t k = n - off < piece ? n - off : piece;
		uint8_t fl = (uint8_t)(off + k == n ? 0x4 : 0);

		if (first)
			frame(b, 1, (uint8_t)(fl | (es ? 1 : 0)), sid, blk + off, k);
		else
			frame(b, 9, fl, sid, blk + off, k);
		off += k;
	}
}

static void flush(struct run *r, struct peer *p, uint64_t ts)
{
	if (p->c.n)
		seg(r, EG, ts, p->c.b, p->c.n, p->c.n);
	if (p->s.n)
		seg(r, IN, ts, p->s.b, p->s.n, p->s.n);
	p->c.n = p->s.n = 0;
}

static const char *const get_req[] = { ":method", "GET",	":scheme", "http", ":path",
				       "/x",	  ":authority", "h:1",	   NULL };
static const char *const ok_resp[] = { ":status", "200", NULL };

/*
 * HEADERS padded and with a priority, its block split over two CONTINUATIONs; a 103 interim
 * response, the final one, padded DATA, then trailers with grpc-status.
 */
Test(http2, padding_priority_continuation_interim_trailers)
{
	static const char *const req[] = { ":method",
					   "POST",
					   ":scheme",
					   "http",
					   ":path",
					   "/pkg.Svc/Call?a=b",
					   ":authority",
					   "svc:50051",
					   "content-type",
					   "application/grpc+proto",
					   "b3",
					   "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1",
					   "x-b3-traceid",
					   "80f198ee56343ba8",
					   "x-b3-spanid",
					   "e457b5a2e4d86bd1",
					   NULL };
	static const char *const early[] = { ":status", "103", "link", "</a>", NULL };
	static const char *const resp[] = { ":status", "200", "content-type",
					    "application/grpc+proto", NULL };
	static const char *const trl[] = { "grpc-status", "14", "grpc-message", "gone", NULL };
	struct peer *p = peer_new(true);
	struct run *r = run_new(), *bytewise = run_new();
	uint8_t blk[512], pl[600];
	size_t n, req_bytes, resp_bytes, at, pre_c = p->c.n, pre_s = p->s.n;
	struct http2_stats st;

	/* Client: padded (pad 7), priority (5 bytes), block in three frames, then DATA. */
	n = hpack(p->def[0], blk, sizeof(blk), req);
	cr_assert_gt(n, 40);
	pl[0] = 7;
	memset(pl + 1, 0, 5);
	memcpy(pl + 6, blk, 20);
	memset(pl + 26, 0, 7);
	at = p->c.n;
	frame(&p->c, 1, 0x8 | 0x20, 1, pl, 33);
	frame(&p->c, 9, 0, 1, blk + 20, 10);
	frame(&p->c, 9, 0x4, 1, blk + 30, n - 30);
	frame(&p->c, 0, 0x1, 1, "\0\0\0\0\0", 5);
	req_bytes = p->c.n - at;
	/* Server: 103, 200, padded DATA (pad 3), trailers split in two frames. */
	at = p->s.n;
	headers(p, true, 1, false, 0, early);
	headers(p, true, 1, false, 0, resp);
	pl[0] = 3;
	memcpy(pl + 1, "\0\0\0\0\2hi\0\0\0", 10);
	frame(&p->s, 0, 0x8, 1, pl, 11);
	headers(p, true, 1, true, 4, trl);
	resp_bytes = p->s.n - at;
	/* The preface and SETTINGS at 1, the rest at 5. */
	seg(r, EG, 1, p->c.b, pre_c, pre_c);
	seg(r, IN, 1, p->s.b, pre_s, pre_s);
	seg(r, EG, 5, p->c.b + pre_c, p->c.n - pre_c, p->c.n - pre_c);
	seg(r, IN, 5, p->s.b + pre_s, p->s.n - pre_s, p->s.n - pre_s);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].h.method, "POST");
	cr_assert_str_eq(r->x[0].h.uri, "/pkg.Svc/Call?a=b");
	cr_assert_eq(r->x[0].h.path_len, 13);
	cr_assert_str_eq(r->x[0].h.host, "svc:50051");
	cr_assert_str_eq(r->x[0].h.b3, "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1");
	cr_assert_str_eq(r->x[0].h.x_b3_traceid, "80f198ee56343ba8");
	cr_assert_str_eq(r->x[0].h.x_b3_spanid, "e457b5a2e4d86bd1");
	cr_assert_str_eq(r->x[0].h.req_content_type, "application/grpc+proto");
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].grpc_status, 14);
	cr_assert_eq(r->x[0].h.req_bytes, req_bytes);
	cr_assert_eq(r->x[0].h.resp_bytes, resp_bytes);
	cr_assert_eq(r->x[0].h.start_ns, 5);
	cr_assert_eq(r->x[0].h.end_ns, 5);
	cr_assert_eq(r->x[0].h.flags, 0);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_GRPC | HTTP2_F2_INTERIM | HTTP2_F2_TRAILERS);
	st = finish(r, 9);
	cr_assert_eq(st.interim, 1);
	cr_assert_eq(st.header_blocks, 4);
	cr_assert_eq(st.headers_undecodable, 0);
	cr_assert_eq(st.framing_errors, 0);
	/* The same, a byte at a time. */
	for (size_t i = 0; i < p->c.n; i++)
		seg(bytewise, EG, i < pre_c ? 1 : 5, p->c.b + i, 1, 1);
	for (size_t i = 0; i < p->s.n; i++)
		seg(bytewise, IN, i < pre_s ? 1 : 5, p->s.b + i, 1, 1);
	finish(bytewise, 9);
	same_exchanges(r, bytewise);
	run_free(bytewise);
	run_free(r);
	peer_free(p);
}

Test(http2, rst_stream_and_goaway)
{
	struct peer *p = peer_new(true);
	struct run *r = run_new();
	struct http2_stats st;
	static const uint8_t cancel[4] = { 0, 0, 0, 8 };
	static const uint8_t away[8] = { 0, 0, 0, 3, 0, 0, 0, 0 };

	flush(r, p, 1);
	for (uint32_t sid = 1; sid <= 7; sid += 2)
		headers(p, false, sid, true, 0, get_req);
	flush(r, p, 2);
	headers(p, true, 1, true, 0, ok_resp);
	flush(r, p, 3);
	cr_assert_eq(r->n, 1);
	frame(&p->c, 3, 0, 3, cancel, 4);
	flush(r, p, 4);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].stream_id, 3);
	cr_assert_eq(r->x[1].h.flags, HTTP1_F_NO_RESPONSE);
	cr_assert_eq(r->x[1].flags2, HTTP2_F2_RESET_BY_CLIENT);
	cr_assert_eq(r->x[1].h.end_ns, 4);
	frame(&p->s, 7, 0, 0, away, 8);
	flush(r, p, 5);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(r->x[2].stream_id, 5);
	cr_assert_eq(r->x[3].stream_id, 7);
	cr_assert_eq(r->x[3].flags2, HTTP2_F2_REFUSED);
	cr_assert_eq(r->x[3].h.flags, HTTP1_F_NO_RESPONSE);
	cr_assert_str_eq(r->x[3].h.uri, "/x");
	/* Frames on streams already complete: counted, never reopened. */
	frame(&p->s, 0, 1, 5, "late", 4);
	headers(p, true, 3, true, 0, ok_resp);
	flush(r, p, 6);
	st = finish(r, 7);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(st.rst_streams, 1);
	cr_assert_eq(st.goaway, 1);
	cr_assert_eq(st.stray_frames, 2);
	cr_assert_eq(st.unanswered, 3);
	cr_assert_eq(st.header_blocks, 6);
	cr_assert_eq(st.headers_undecodable, 0);
	run_free(r);
	peer_free(p);
}

/* 130 requests open at once: 128 held, 2 dropped, their frames unattributed. */
Test(http2, stream_bound)
{
	struct peer *p = peer_new(true);
	struct run *r = run_new();
	struct http2_stats st;
	size_t last_hdr = 0;

	flush(r, p, 1);
	for (uint32_t i = 0; i < 130; i++) {
		size_t at = p->c.n;

		headers(p, false, 1 + 2 * i, false, 0, get_req);
		if (i == 127)
			last_hdr = p->c.n - at;
	}
	flush(r, p, 2);
	cr_assert_eq(http2__pending(r->c), HTTP2_MAX_STREAMS);
	for (uint32_t i = 0; i < 130; i++) {
		frame(&p->c, 0, 1, 1 + 2 * i, "body", 4);
		headers(p, true, 1 + 2 * i, true, 0, ok_resp);
	}
	flush(r, p, 3);
	cr_assert_eq(r->n, 128);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_eq(r->x[127].stream_id, 255);
	cr_assert_eq(r->x[127].h.req_bytes, last_hdr + 9 + 4);
	st = finish(r, 4);
	cr_assert_eq(st.streams, 128);
	cr_assert_eq(st.streams_dropped, 2);
	cr_assert_eq(st.stray_frames, 4);
	cr_assert_eq(st.headers_undecodable, 0);
	cr_assert_eq(st.header_blocks, 260);
	run_free(r);
	peer_free(p);
}

/*
 * 128 requests open, then a loss of unknown size in the client's direction: any of them may
 * have lost frames. A new stream then evicts the lowest one instead of being dropped.
 */
Test(http2, eviction_after_framing_loss)
{
	struct peer *p = peer_new(true);
	struct run *r = run_new();
	struct http2_stats st;
	static const char *const static_req[] = { ":method", "GET", ":path", "/", NULL };

	flush(r, p, 1);
	for (uint32_t i = 0; i < 128; i++)
		headers(p, false, 1 + 2 * i, false, 0, get_req);
	flush(r, p, 2);
	cr_assert_eq(OPS->lost(r->c, EG, 0), 0);
	/* The client's table is unknown now; this block needs none of it. */
	headers(p, false, 301, true, 0, static_req);
	flush(r, p, 3);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].stream_id, 1);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_EVICTED);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_REQ_TRUNCATED | HTTP1_F_NO_RESPONSE);
	cr_assert_str_eq(r->x[0].h.uri, "/x");
	headers(p, true, 301, true, 0, ok_resp);
	flush(r, p, 4);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].stream_id, 301);
	cr_assert_str_eq(r->x[1].h.uri, "/");
	cr_assert_eq(r->x[1].h.status, 200);
	cr_assert_eq(r->x[1].h.flags, 0);
	st = finish(r, 5);
	cr_assert_eq(st.streams_evicted, 1);
	cr_assert_eq(st.streams_dropped, 0);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(r->n, 129);
	run_free(r);
	peer_free(p);
}

/*
 * Frames no sender may write: too long for the reader's SETTINGS (framing lost), SETTINGS
 * on a stream, CONTINUATION with no block open (skipped by length), an unknown type
 * (skipped); a SETTINGS_MAX_FRAME_SIZE raise lets longer frames through.
 */
Test(http2, hostile_frames)
{
	struct peer *p = peer_new(true);
	struct run *r = run_new();
	struct http2_stats st;
	static uint8_t big[20000];
	static const uint8_t max_frame[6] = { 0, 5, 0, 0, 0x80, 0 }; /* 32768 */

	flush(r, p, 1);
	frame(&p->c, 4, 0, 1, "\0\1\0\0\0\0", 6);
	frame(&p->c, 9, 4, 1, "\x82", 1);
	frame(&p->c, 0x20, 0, 0, "ext", 3);
	headers(p, false, 1, true, 0, get_req);
	flush(r, p, 2);
	cr_assert_eq(http2__pending(r->c), 1);
	OPS->counts(r->c, &st);
	cr_assert_eq(st.framing_errors, 2);
	cr_assert_eq(st.unknown_frames, 1);
	cr_assert_eq(st.bytes_control, HTTP2_PREFACE_LEN + 9 + 9 + 12);
	/* 20000 > 16384: lost until a segment begins with a plausible frame. */
	frame(&p->s, 1, 4, 1, big, sizeof(big));
	flush(r, p, 3);
	headers(p, true, 1, true, 0, ok_resp);
	flush(r, p, 4);
	cr_assert_eq(r->n, 1);
	/* The server's table missed the lost block: only static fields decode. */
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].h.resp_bytes, 9 + 1);
	OPS->counts(r->c, &st);
	cr_assert_eq(st.framing_errors, 3);
	cr_assert_eq(st.resyncs, 1);
	/* The client allows 32768: a 20000-byte DATA frame is fine then. */
	frame(&p->c, 4, 0, 0, max_frame, 6);
	headers(p, false, 3, false, 0, get_req);
	flush(r, p, 5);
	frame(&p->s, 4, 1, 0, NULL, 0);
	headers(p, true, 3, false, 0, ok_resp);
	frame(&p->s, 0, 1, 3, big, sizeof(big));
	flush(r, p, 6);
	frame(&p->c, 0, 1, 3, NULL, 0);
	flush(r, p, 7);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].h.resp_bytes, 9 + 1 + 9 + sizeof(big));
	st = finish(r, 8);
	cr_assert_eq(st.framing_errors, 3);
	cr_assert_eq(st.resyncs, 1);
	run_free(r);
	peer_free(p);
}

/*
 * HPACK a sender may not write: a table size update over HTTP2_HPACK_TABLE_MAX, an index
 * past the table. The block is refused, the direction's table unknown; later blocks still
 * give what needs no dynamic entry.
 */
Test(http2, hpack_refused_blocks)
{
	struct peer *p = peer_new(true);
	struct run *r = run_new();
	struct http2_stats st;
	/* Size update to 2^20 (001 11111, 2^20 - 31 in 7-bit groups), then :method GET. */
	static const uint8_t huge_table[] = { 0x3f, 0xe1, 0xff, 0x3f, 0x82 };
	/* :method GET, :path / (static), then index 70 (dynamic, never added). */
	static const uint8_t bad_index[] = { 0x82, 0x84, 0xc6 };
	/* :method POST, :path /p as a literal with a static name. */
	static const uint8_t literal[] = { 0x83, 0x04, 0x02, '/', 'p' };

	flush(r, p, 1);
	frame(&p->c, 1, 5, 1, huge_table, sizeof(huge_table));
	headers(p, true, 1, true, 0, ok_resp);
	flush(r, p, 2);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].h.method, "");
	cr_assert_str_eq(r->x[0].h.uri, "*");
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_REQ_HPACK_UNKNOWN);
	cr_assert_eq(r->x[0].h.status, 200);
	frame(&p->c, 1, 5, 3, bad_index, sizeof(bad_index));
	frame(&p->c, 1, 5, 5, literal, sizeof(literal));
	headers(p, true, 3, true, 0, ok_resp);
	headers(p, true, 5, true, 0, ok_resp);
	flush(r, p, 3);
	cr_assert_eq(r->n, 3);
	cr_assert_str_eq(r->x[1].h.method, "GET");
	cr_assert_str_eq(r->x[1].h.uri, "/");
	cr_assert_eq(r->x[1].flags2, HTTP2_F2_REQ_HPACK_UNKNOWN);
	cr_assert_str_eq(r->x[2].h.method, "POST");
	cr_assert_str_eq(r->x[2].h.uri, "/p");
	cr_assert_eq(r->x[2].flags2, 0);
	cr_assert_eq(r->x[2].h.flags, 0);
	st = finish(r, 4);
	cr_assert_eq(st.header_blocks, 6);
	cr_assert_eq(st.headers_undecodable, 2);
	cr_assert_eq(st.fields_unknown, 1);
	cr_assert_eq(st.hpack_missed_before_start, 0);
	run_free(r);
	peer_free(p);
}

/*
 * Fields no meter reads are walked past, not decoded, where that leaves the dynamic table as
 * it was: indexed fields and literals not indexed whose names are not read, and literals
 * with incremental indexing while the table's size is 0 (nginx sets it so and indexes every
 * response field). Those that change a table of another size still go to the inflater, and
 * the table is read only once what came before them in the block went there too. Fed whole
 * and byte by byte, with the same exchanges.
 */
static void unread_fields(struct run *r, size_t chunk)
{
	/* 62 :authority h:1, 63 user-agent ua, 64 x: y, 65 :path /a. */
	static const uint8_t req1[] = { 0x82, 0x86, 0x44, 0x02, '/', 'a',  0x40, 0x01, 'x', 0x01,
					'y',  0x7a, 0x02, 'u',	'a', 0x41, 0x03, 'h',  ':', '1' };
	/* 62, 63 (skipped), 64 (skipped), 65; user-agent: z not indexed; content-type never. */
	static const uint8_t req3[] = { 0x82, 0xbe, 0xbf, 0xc0, 0xc1, 0x0f, 0x30, 0x01,
					'z',  0x1f, 0x10, 0x03, 'a',  '/',  'b' };
	/* Two entries added, then 64: :authority once they are in, x: y before. */
	static const uint8_t req5[] = { 0x40, 0x02, 'x', 'x', 0x02, 'v',  'v', 0x42,
					0x04, 'P',  'O', 'S', 'T',  0xc0, 0x84 };
	static const uint8_t req7[] = { 0x82, 0x84 };
	/* Size 0, :status 200, server and date indexed (skipped), content-type indexed. */
	static const uint8_t resp1[] = { 0x20, 0x88, 0x76, 0x05, 'n', 'g',  'i',  'n', 'x',
					 0x61, 0x03, 'd',  'a',	 'y', 0x5f, 0x0a, 't', 'e',
					 'x',  't',  '/',  'p',	 'l', 'a',  'i',  'n' };
	/* Size 4096: server and content-type are table entries now (63 and 62). */
	static const uint8_t resp3[] = { 0x3f, 0xe1, 0x1f, 0x88, 0x76, 0x05, 'n', 'g',
					 'i',  'n',  'x',  0x5f, 0x09, 't',  'e', 'x',
					 't',  '/',  'h',  't',	 'm',  'l' };
	static const uint8_t resp5[] = { 0x8d, 0xbf, 0xbe };
	/* A size update after a field, one walked past: refused, the table unknown since. */
	static const uint8_t resp7[] = { 0x88, 0xbf, 0x20 };
	static const struct {
		const uint8_t *p;
		size_t n;
	} req[] = { { req1, sizeof(req1) },
		    { req3, sizeof(req3) },
		    { req5, sizeof(req5) },
		    { req7, sizeof(req7) } },
	  resp[] = { { resp1, sizeof(resp1) },
		     { resp3, sizeof(resp3) },
		     { resp5, sizeof(resp5) },
		     { resp7, sizeof(resp7) } };
	struct l7b *b[2] = { l7b_new(), l7b_new() };

	l7b_put(b[0], HTTP2_PREFACE, HTTP2_PREFACE_LEN);
	frame(b[0], 4, 0, 0, NULL, 0);
	frame(b[1], 4, 0, 0, NULL, 0);
	for (uint32_t i = 0; i < 4; i++) {
		frame(b[0], 1, 5, 1 + 2 * i, req[i].p, req[i].n);
		frame(b[1], 1, 5, 1 + 2 * i, resp[i].p, resp[i].n);
	}
	for (int d = 0; d < 2; d++) {
		for (size_t off = 0; off < b[d]->n; off += chunk) {
			size_t k = b[d]->n - off < chunk ? b[d]->n - off : chunk;

			seg(r, d ? IN : EG, 1 + (uint64_t)d, b[d]->b + off, k, k);
		}
		free(b[d]);
	}
}

Test(http2, hpack_unread_fields)
{
	struct run *r = run_new(), *b = run_new();
	static const char *const method[] = { "GET", "GET", "POST", "GET" };
	static const char *const uri[] = { "/a", "/a", "/", "/" };
	static const char *const host[] = { "h:1", "h:1", "h:1", "" };
	static const char *const ctype[] = { "text/plain", "text/html", "text/html", "" };
	static const uint16_t status[] = { 200, 200, 404, 200 };
	struct http2_stats st;

	unread_fields(r, 1 << 20);
	cr_assert_eq(r->n, 4);
	for (int i = 0; i < 4; i++) {
		const struct http2_exchange *x = &r->x[i];

		cr_assert_eq(x->stream_id, 1u + 2u * (unsigned)i);
		cr_assert_str_eq(x->h.method, method[i], "stream %d", i);
		cr_assert_str_eq(x->h.uri, uri[i], "stream %d", i);
		cr_assert_str_eq(x->h.host, host[i], "stream %d", i);
		cr_assert_str_eq(x->h.resp_content_type, ctype[i], "stream %d", i);
		cr_assert_str_eq(x->h.req_content_type, i == 1 ? "a/b" : "", "stream %d", i);
		cr_assert_eq(x->h.status, status[i], "stream %d", i);
		cr_assert_eq(x->h.flags, i == 3 ? HTTP1_F_RESP_HDR_TRUNCATED : 0, "stream %d", i);
		cr_assert_eq(x->flags2, i == 3 ? HTTP2_F2_RESP_HPACK_UNKNOWN : 0, "stream %d", i);
	}
	st = finish(r, 3);
	cr_assert_eq(st.header_blocks, 8);
	cr_assert_eq(st.headers_undecodable, 1);
	cr_assert_eq(st.fields_unknown, 0);
	unread_fields(b, 1);
	finish(b, 3);
	same_exchanges(r, b);
	run_free(r);
	run_free(b);
}

/*
 * A 70000-byte header value sent as is (libnghttp2 refuses strings over 64 KiB as sent) in
 * CONTINUATIONs: the block is refused, nothing is kept of it.
 */
Test(http2, oversized_header_value)
{
	struct peer *p = peer_new(true);
	struct run *r = run_new();
	struct http2_stats st;
	/* :method GET, :path /, then x-big: a literal of 70000 bytes (7-bit prefix 127 + 69873). */
	static const uint8_t head[] = { 0x82, 0x84, 0x00, 0x05, 'x',  '-', 'b',
					'i',  'g',  0x7f, 0xf1, 0xa1, 0x04 };
	static uint8_t blk[sizeof(head) + 70000];
	size_t off = 0;

	memcpy(blk, head, sizeof(head));
	memset(blk + sizeof(head), 'a', 70000);
	flush(r, p, 1);
	for (bool first = true; off < sizeof(blk); first = false) {
		size_t k = sizeof(blk) - off < 16384 ? sizeof(blk) - off : 16384;
		uint8_t fl = off + k == sizeof(blk) ? 0x4 : 0;

		frame(&p->c, first ? 1 : 9, (uint8_t)(fl | (first ? 1 : 0)), 1, blk + off, k);
		off += k;
	}
	headers(p, true, 1, true, 0, ok_resp);
	flush(r, p, 2);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_REQ_HPACK_UNKNOWN);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_str_eq(r->x[0].h.method, "GET");
	cr_assert_str_eq(r->x[0].h.uri, "/");
	cr_assert_eq(r->x[0].h.status, 200);
	cr_assert_eq(r->x[0].h.req_bytes, sizeof(blk) + 5 * 9);
	st = finish(r, 3);
	cr_assert_eq(st.headers_undecodable, 1);
	run_free(r);
	peer_free(p);
}

/* Seen mid-stream, DATA only: no header tells the role. */
Test(http2, role_unknown_without_headers)
{
	struct run *r = run_new();
	struct l7b *b = calloc(1, sizeof(*b));
	struct http2_stats st;

	cr_assert(b);
	frame(b, 0, 1, 9, "abc", 3);
	seg(r, IN, 5, b->b, b->n, b->n);
	b->n = 0;
	frame(b, 0, 1, 9, "defgh", 5);
	seg(r, EG, 6, b->b, b->n, b->n);
	cr_assert_eq(OPS->role(r->c), L7_ROLE_UNKNOWN);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].stream_id, 9);
	cr_assert_eq(r->x[0].flags2, HTTP2_F2_ROLE_UNKNOWN);
	cr_assert_eq(r->x[0].h.req_dir, IN);
	cr_assert_eq(r->x[0].h.req_bytes, 12);
	cr_assert_eq(r->x[0].h.resp_bytes, 14);
	cr_assert_eq(r->x[0].h.flags, HTTP1_F_REQ_HDR_TRUNCATED | HTTP1_F_RESP_HDR_TRUNCATED);
	cr_assert_str_eq(r->x[0].h.uri, "*");
	st = finish(r, 7);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(b);
	run_free(r);
}

/* Garbage where a direction begins: skipped segment by segment, abandoned after 8. */
Test(http2, garbage_abandoned)
{
	struct run *r = run_new();
	struct http2_stats st;
	static const char junk[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

	for (int i = 0; i < 10; i++)
		seg(r, EG, 1, junk, sizeof(junk) - 1, sizeof(junk) - 1);
	st = finish(r, 2);
	cr_assert_eq(r->n, 0);
	cr_assert_eq(st.dirs_abandoned, 1);
	cr_assert_eq(st.bad_starts, 8);
	cr_assert_eq(st.bytes_unattributed, 10 * (sizeof(junk) - 1));
	run_free(r);
}

Test(http2, detect)
{
	cr_assert_eq(http2__detect((const uint8_t *)HTTP2_PREFACE, HTTP2_PREFACE_LEN), 1);
	cr_assert_eq(http2__detect((const uint8_t *)HTTP2_PREFACE "\0\0", HTTP2_PREFACE_LEN + 2),
		     1);
	cr_assert_eq(http2__detect((const uint8_t *)"PRI * HT", 8), -EAGAIN);
	cr_assert_eq(http2__detect((const uint8_t *)"", 0), -EAGAIN);
	cr_assert_eq(http2__detect((const uint8_t *)"PRI * HTTP/1.1\r\n", 16), 0);
	cr_assert_eq(http2__detect((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18), 0);
}

Test(http2, bad_arguments)
{
	void *c = OPS->new_conn(0);
	struct l7_exchange x;

	cr_assert(c);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"ab", 2, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, (enum l7_dir)2, 1, (const uint8_t *)"a", 1, 1), -EINVAL);
	cr_assert_eq(OPS->lost(c, (enum l7_dir)5, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 0, 10), 0);
	OPS->close(c, 2);
	cr_assert_eq(OPS->feed(c, EG, 3, (const uint8_t *)"a", 1, 1), -EPIPE);
	cr_assert_eq(OPS->lost(c, IN, 1), -EPIPE);
	cr_assert_eq(OPS->next(c, &x), 0);
	OPS->free_conn(c);
	OPS->free_conn(NULL);
	cr_assert_eq(http2__pending(NULL), 0);
}
