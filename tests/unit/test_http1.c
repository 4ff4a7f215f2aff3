// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/http/http1.c: conversations fed as a worker would capture them, whole, split, cut by the
 * capture bound, with segments lost, garbage and hostile sizes. Every test closes the
 * connection at its end and checks that every byte fed is in an exchange or counted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http1.h"
#include "tests/unit/l7_replay.h"

#define EG L7_EGRESS
#define IN L7_INGRESS
#define OPS (&l7_http1_ops)

static struct l7r_run *run_new(void)
{
	return l7r_new(OPS);
}

static void feed(struct l7r_run *r, enum l7_dir dir, uint64_t ts, const char *s)
{
	l7r_feed(r, dir, ts, s, strlen(s));
}

/* Closes, pops what is left, checks that the bytes add up; returns HTTP/1's counts. */
static struct http1_stats finish(struct l7r_run *r, uint64_t ts)
{
	struct http1_stats st;

	l7r_finish(r, ts);
	cr_assert_eq(http1__pending(r->c), 0);
	OPS->counts(r->c, &st);
	return st;
}

#define REQ1 "GET /a?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"
#define RESP1 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
#define REQ2 "POST /b HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\nabc"
#define RESP2 "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
#define REQ3 "DELETE /c HTTP/1.1\r\n\r\n"
#define RESP3 "HTTP/1.1 404 Not Found\r\ncontent-length: 10\r\n\r\n0123456789"

TestSuite(http1);

Test(http1, keep_alive_three_exchanges)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, EG, 1000, REQ1);
	cr_assert_eq(OPS->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(r->n, 0);
	feed(r, IN, 1500, RESP1);
	cr_assert_eq(r->n, 1);
	feed(r, EG, 2000, REQ2);
	feed(r, IN, 2700, RESP2);
	feed(r, EG, 3000, REQ3);
	feed(r, IN, 3100, RESP3);
	cr_assert_eq(r->n, 3);

	cr_assert_str_eq(r->x[0].http->method, "GET");
	cr_assert_str_eq(r->x[0].http->uri, "/a?x=1");
	cr_assert_eq(r->x[0].http->uri_len, 6);
	cr_assert_eq(r->x[0].http->path_len, 2);
	cr_assert_str_eq(r->x[0].http->host, "example.com");
	cr_assert_str_eq(r->x[0].http->resp_content_type, "text/plain");
	cr_assert_eq(r->x[0].http->req_version, 11);
	cr_assert_eq(r->x[0].http->resp_version, 11);
	cr_assert_eq(r->x[0].http->status, 200);
	cr_assert_eq(r->x[0].http->req_bytes, strlen(REQ1));
	cr_assert_eq(r->x[0].http->resp_bytes, strlen(RESP1));
	cr_assert_eq(r->x[0].http->start_ns, 1000);
	cr_assert_eq(r->x[0].http->end_ns, 1500);
	cr_assert_eq(r->x[0].http->req_dir, EG);
	cr_assert_eq(r->x[0].http->flags, 0);

	cr_assert_str_eq(r->x[1].http->method, "POST");
	cr_assert_eq(r->x[1].http->status, 201);
	cr_assert_eq(r->x[1].http->req_bytes, strlen(REQ2));
	cr_assert_eq(r->x[1].http->resp_bytes, strlen(RESP2));
	cr_assert_eq(r->x[1].http->end_ns - r->x[1].http->start_ns, 700);

	cr_assert_str_eq(r->x[2].http->method, "DELETE");
	cr_assert_str_eq(r->x[2].http->host, "");
	cr_assert_eq(r->x[2].http->status, 404);
	cr_assert_eq(r->x[2].http->resp_bytes, strlen(RESP3));
	cr_assert_eq(r->x[2].http->end_ns - r->x[2].http->start_ns, 100);

	st = finish(r, 4000);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(st.requests, 3);
	cr_assert_eq(st.responses, 3);
	cr_assert_eq(st.exchanges, 3);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.bad_starts, 0);
	l7r_free(r);
}

Test(http1, pipelining_three_then_three)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, EG, 10, REQ1 REQ2 REQ3);
	cr_assert_eq(http1__pending(r->c), 3);
	feed(r, IN, 20, RESP1);
	feed(r, IN, 30, RESP2 RESP3);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[0].http->status, 200);
	cr_assert_eq(r->x[1].http->status, 201);
	cr_assert_eq(r->x[2].http->status, 404);
	cr_assert_str_eq(r->x[1].http->uri, "/b");
	cr_assert_eq(r->x[1].http->req_bytes, strlen(REQ2));
	cr_assert_eq(r->x[2].http->resp_bytes, strlen(RESP3));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(r->x[i].http->start_ns, 10);
	cr_assert_eq(r->x[0].http->end_ns, 20);
	cr_assert_eq(r->x[1].http->end_ns, 30);
	cr_assert_eq(r->x[2].http->end_ns, 30);
	st = finish(r, 40);
	cr_assert_eq(st.exchanges, 3);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

#define CREQ                                                                                       \
	"PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n" \
	"4;name=val\r\n{\"a\"\r\n"                                                                 \
	"A\r\n:1234567}\n\r\n"                                                                     \
	"0\r\nX-Checksum: 1\r\n\r\n"
#define CRESP                                                                               \
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 99\r\n\r\n" \
	"1a ; ext=\"q\"\r\nabcdefghijklmnopqrstuvwxyz\r\n"                                  \
	"0;last\r\nTrailer-A: x\r\nTrailer-B: y\r\n\r\n"

Test(http1, chunked_with_extensions_and_trailers)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, EG, 5, CREQ);
	feed(r, IN, 9, CRESP);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].http->method, "PUT");
	cr_assert_str_eq(r->x[0].http->req_content_type, "application/json");
	cr_assert_eq(r->x[0].http->req_bytes, strlen(CREQ));
	cr_assert_eq(r->x[0].http->resp_bytes, strlen(CRESP));
	cr_assert_eq(r->x[0].http->flags, 0);
	/* What follows the terminating trailer is a new message. */
	feed(r, EG, 11, REQ3);
	feed(r, IN, 12, RESP3);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].http->status, 404);
	st = finish(r, 20);
	cr_assert_eq(st.framing_errors, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(http1, content_length_body_in_fifty_segments)
{
	struct l7r_run *r = run_new();
	const char *hdr = "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n";
	char body[100];
	struct http1_stats st;

	memset(body, 'b', sizeof(body));
	feed(r, EG, 100, REQ1);
	feed(r, IN, 200, hdr);
	for (int i = 0; i < 50; i++) {
		cr_assert_eq(r->n, 0);
		l7r_seg(r, IN, 201 + (uint64_t)i, body, sizeof(body), sizeof(body));
	}
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->resp_bytes, strlen(hdr) + 5000);
	cr_assert_eq(r->x[0].http->end_ns, 250);
	cr_assert_eq(r->x[0].http->end_ns - r->x[0].http->start_ns, 150);
	cr_assert_eq(r->x[0].http->flags, 0);
	st = finish(r, 300);
	cr_assert_eq(st.segments, 52);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

/*
 * One conversation touching every framing: keep-alive, pipelining, chunked, 100-continue,
 * through the interface (tests/unit/test_l7.c plays it split anywhere).
 */
Test(http1, every_framing_conversation)
{
	struct l7r_rec *rec = l7r_load("http1", "every_framing");
	struct l7r_run *r = l7r_play(&l7_http1_ops, rec, L7R_PLAY(0));
	struct http1_stats st;

	cr_assert_eq(r->n, 6);
	cr_assert_str_eq(r->x[1].http->method, "PUT");
	cr_assert_eq(r->x[1].http->status, 200);
	cr_assert_eq(r->x[1].http->req_bytes, strlen(CREQ));
	cr_assert_eq(r->x[1].http->resp_bytes, strlen(CRESP));
	cr_assert_eq(r->x[3].http->status, 204);
	cr_assert_eq(r->x[3].code, 204);
	cr_assert_eq(r->x[3].http->resp_bytes,
		     strlen("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"));
	cr_assert_eq(r->x[3].http->req_bytes,
		     strlen("POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
			    "data"));
	cr_assert_eq(r->x[4].http->status, 200);
	cr_assert_str_eq(r->x[4].http->method, "HEAD");
	cr_assert_eq(r->x[5].http->status, 404);
	l7_http1_ops.counts(r->c, &st);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.requests, 6);
	cr_assert_eq(st.interim, 1);
	l7r_free(r);
	l7r_rec_free(rec);
}

Test(http1, capture_truncated_in_headers)
{
	struct l7r_run *r = run_new();
	char resp[2000];
	struct http1_stats st;
	size_t n;

	/* A response whose header block is longer than the 1 KiB captured of its write. */
	n = (size_t)snprintf(resp, sizeof(resp), "HTTP/1.1 302 Found\r\nX-Pad: ");
	memset(resp + n, 'p', sizeof(resp) - n);
	feed(r, EG, 10, REQ1);
	l7r_seg(r, IN, 20, resp, 1024, 2000 + 40);
	/* Its body, unknown, in another write: counted to it until the next response. */
	l7r_seg(r, IN, 21, "zzzzzzzzzz", 10, 10);
	cr_assert_eq(r->n, 0);
	feed(r, EG, 30, REQ3);
	feed(r, IN, 40, RESP3);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].http->status, 302);
	cr_assert_eq(r->x[0].http->resp_bytes, 2050);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_RESP_TRUNCATED | HTTP1_F_RESP_HDR_TRUNCATED);
	cr_assert_eq(r->x[0].http->end_ns, 21);
	cr_assert_eq(r->x[1].http->status, 404);
	cr_assert_eq(r->x[1].http->flags, 0);
	cr_assert_eq(r->x[1].http->resp_bytes, strlen(RESP3));

	/* A request whose start line itself is cut: method and URI prefix kept. */
	memset(resp, 'u', sizeof(resp));
	memcpy(resp, "GET /", 5);
	l7r_seg(r, EG, 50, resp, 1024, 1500);
	feed(r, IN, 60, RESP1);
	cr_assert_eq(r->n, 3);
	cr_assert_str_eq(r->x[2].http->method, "GET");
	cr_assert_eq(r->x[2].http->uri_len, HTTP1_URI_MAX);
	cr_assert_eq(r->x[2].http->flags,
		     HTTP1_F_URI_TRUNCATED | HTTP1_F_REQ_TRUNCATED | HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_eq(r->x[2].http->req_bytes, 1500);
	cr_assert_eq(r->x[2].http->req_version, 0);
	st = finish(r, 70);
	cr_assert_eq(st.gap_bytes, 1016 + 476);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(http1, capture_truncated_in_body)
{
	struct l7r_run *r = run_new();
	char buf[1024];
	const char *hdr = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
	size_t h = strlen(hdr);
	struct http1_stats st;

	memset(buf, 'x', sizeof(buf));
	memcpy(buf, hdr, h);
	feed(r, EG, 1, REQ2);
	/* Headers and the first of the body in one 1 KiB capture of a 60000-byte write. */
	l7r_seg(r, IN, 2, buf, sizeof(buf), 60000);
	l7r_seg(r, IN, 3, buf + h, sizeof(buf) - h, 100000 + h - 60000);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->resp_bytes, 100000 + h);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[0].http->end_ns, 3);
	/* A request body cut the same way, then the next exchange parses cleanly. */
	memset(buf, 'y', sizeof(buf));
	h = (size_t)snprintf(buf, sizeof(buf),
			     "POST /big HTTP/1.1\r\nContent-Length: 5000\r\n\r\n");
	l7r_seg(r, EG, 4, buf, sizeof(buf), h + 5000);
	feed(r, IN, 5, RESP2);
	feed(r, EG, 6, REQ1);
	feed(r, IN, 7, RESP1);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[1].http->req_bytes, h + 5000);
	cr_assert_eq(r->x[1].http->flags, HTTP1_F_REQ_TRUNCATED);
	cr_assert_eq(r->x[2].http->flags, 0);
	cr_assert_eq(r->x[2].http->status, 200);
	st = finish(r, 8);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(http1, no_body_head_204_304)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, EG, 1, "HEAD /x HTTP/1.1\r\n\r\n");
	feed(r, IN, 2, "HTTP/1.1 200 OK\r\nContent-Length: 777\r\n\r\n");
	feed(r, EG, 3, "GET /y HTTP/1.1\r\n\r\n");
	feed(r, IN, 4, "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n");
	feed(r, EG, 5, "GET /z HTTP/1.1\r\nIf-None-Match: \"e\"\r\n\r\n");
	feed(r, IN, 6, "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n");
	feed(r, EG, 7, REQ1);
	feed(r, IN, 8, RESP1);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(r->x[0].http->status, 200);
	cr_assert_eq(r->x[0].http->resp_bytes,
		     strlen("HTTP/1.1 200 OK\r\nContent-Length: 777\r\n\r\n"));
	cr_assert_eq(r->x[1].http->status, 204);
	cr_assert_eq(r->x[2].http->status, 304);
	cr_assert_eq(r->x[3].http->status, 200);
	cr_assert_eq(r->x[3].http->resp_bytes, strlen(RESP1));
	st = finish(r, 9);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.exchanges, 4);
	l7r_free(r);
}

Test(http1, http10_body_until_close)
{
	struct l7r_run *r = run_new();
	const char *hdr = "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n";
	struct http1_stats st;

	feed(r, EG, 100, "GET /old HTTP/1.0\r\n\r\n");
	feed(r, IN, 110, hdr);
	feed(r, IN, 120, "part one, ");
	l7r_seg(r, IN, 130, "part two", 8, 3000);
	cr_assert_eq(r->n, 0);
	OPS->close(r->c, 500);
	l7r_pop(r);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->req_version, 10);
	cr_assert_eq(r->x[0].http->resp_version, 10);
	cr_assert_eq(r->x[0].http->resp_bytes, strlen(hdr) + 10 + 3000);
	cr_assert_eq(r->x[0].http->end_ns, 130);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_RESP_TRUNCATED);
	cr_assert_eq(OPS->feed(r->c, EG, 600, (const uint8_t *)"x", 1, 1), -EPIPE);
	st = finish(r, 600);
	cr_assert_eq(st.unanswered, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(http1, lost_segment_then_resync)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, IN, 1, "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
	cr_assert_eq(OPS->role(r->c), L7_ROLE_SERVER);
	cr_assert_eq(OPS->lost(r->c, IN, 0), 0);
	feed(r, IN, 3, "tail of something\r\n0\r\n\r\n");
	feed(r, IN, 4, "GET /next HTTP/1.1\r\n\r\n");
	feed(r, EG, 5, RESP2);
	feed(r, EG, 6, RESP1);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[0].http->uri, "/p");
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_REQ_TRUNCATED);
	cr_assert_eq(r->x[0].http->req_bytes,
		     strlen("POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab") +
			     strlen("tail of something\r\n0\r\n\r\n"));
	cr_assert_eq(r->x[0].http->status, 201);
	cr_assert_str_eq(r->x[1].http->uri, "/next");
	cr_assert_eq(r->x[1].http->flags, 0);
	cr_assert_eq(r->x[1].http->req_dir, IN);
	cr_assert_eq(r->x[1].http->start_ns, 4);

	/* A lost segment of known size inside a body is only counted. */
	feed(r, IN, 7, "POST /q HTTP/1.1\r\nContent-Length: 10\r\n\r\n123");
	cr_assert_eq(OPS->lost(r->c, IN, 4), 0);
	feed(r, IN, 9, "890");
	feed(r, EG, 10, RESP1);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[2].http->req_bytes,
		     strlen("POST /q HTTP/1.1\r\nContent-Length: 10\r\n\r\n") + 10);
	cr_assert_eq(r->x[2].http->flags, HTTP1_F_REQ_TRUNCATED);
	st = finish(r, 11);
	cr_assert_eq(st.lost_segments, 2);
	cr_assert_eq(st.lost_bytes, 4);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.bad_starts, 2); /* "tail of something", "0" */
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(http1, client_and_server_roles)
{
	struct l7r_run *cl = run_new(), *sv = run_new();

	feed(cl, EG, 1, REQ1);
	feed(cl, IN, 2, RESP1);
	feed(sv, IN, 1, REQ1);
	feed(sv, EG, 2, RESP1);
	cr_assert_eq(OPS->role(cl->c), L7_ROLE_CLIENT);
	cr_assert_eq(OPS->role(sv->c), L7_ROLE_SERVER);
	cr_assert_eq(cl->n, 1);
	cr_assert_eq(sv->n, 1);
	cr_assert_eq(cl->x[0].http->req_dir, EG);
	cr_assert_eq(sv->x[0].http->req_dir, IN);
	cr_assert_eq(sv->x[0].http->resp_bytes, cl->x[0].http->resp_bytes);
	/* A request line where responses go is not taken as one. */
	feed(sv, EG, 3, REQ3);
	cr_assert_eq(http1__pending(sv->c), 0);
	finish(cl, 9);
	cr_assert_eq(finish(sv, 9).bad_starts, 1);
	l7r_free(cl);
	l7r_free(sv);
}

Test(http1, garbage_then_request)
{
	struct l7r_run *r = run_new();
	static const uint8_t bin[] = { 0x16, 0x03, 0x01, 0x00, 0x00, '\n', 0xff, 0x00 };
	struct http1_stats st;

	l7r_seg(r, EG, 1, bin, sizeof(bin), sizeof(bin));
	feed(r, EG, 2, "HELLO world\r\nGETS /x\r\n" REQ1);
	feed(r, IN, 3, RESP1);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].http->uri, "/a?x=1");
	cr_assert_eq(r->x[0].http->req_bytes, strlen(REQ1));
	st = finish(r, 4);
	cr_assert_eq(st.bad_starts, 4);
	cr_assert_eq(st.bytes_unattributed, sizeof(bin) + strlen("HELLO world\r\nGETS /x\r\n"));

	/* A direction that never carries HTTP is abandoned; the other goes on. */
	l7r_free(r);
	r = run_new();
	for (int i = 0; i < 20; i++)
		l7r_seg(r, EG, 10, bin, sizeof(bin), sizeof(bin));
	feed(r, IN, 11, "PUT /in HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	cr_assert_eq(OPS->role(r->c), L7_ROLE_SERVER);
	st = finish(r, 12);
	cr_assert_eq(st.dirs_abandoned, 1);
	cr_assert_eq(st.bad_starts, HTTP1_MAX_BAD_STARTS);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].http->end_ns, 12);
	cr_assert_eq(st.unanswered, 1);
	l7r_free(r);
}

Test(http1, response_without_request)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, IN, 5, RESP1);
	cr_assert_eq(OPS->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_NO_REQUEST);
	cr_assert_eq(r->x[0].http->status, 200);
	cr_assert_eq(r->x[0].http->req_bytes, 0);
	cr_assert_eq(r->x[0].http->resp_bytes, strlen(RESP1));
	cr_assert_eq(r->x[0].http->start_ns, 5);
	cr_assert_eq(r->x[0].http->end_ns, 5);
	cr_assert_str_eq(r->x[0].http->method, "");
	feed(r, EG, 6, REQ1);
	feed(r, IN, 7, RESP1);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].http->flags, 0);
	st = finish(r, 8);
	cr_assert_eq(st.orphan_responses, 1);
	l7r_free(r);
}

Test(http1, hundred_pending_requests)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;
	char req[64];

	for (int i = 0; i < 100; i++) {
		snprintf(req, sizeof(req), "GET /%d HTTP/1.1\r\n\r\n", i);
		feed(r, EG, (uint64_t)i, req);
		cr_assert_leq(http1__pending(r->c), HTTP1_MAX_PENDING);
	}
	cr_assert_eq(http1__pending(r->c), HTTP1_MAX_PENDING);
	for (int i = 0; i < 100; i++)
		feed(r, IN, 1000 + (uint64_t)i, RESP2);
	cr_assert_eq(r->n, 64);
	for (int i = 0; i < 64; i++) {
		snprintf(req, sizeof(req), "/%d", i);
		cr_assert_str_eq(r->x[i].http->uri, req);
		cr_assert_eq(r->x[i].http->end_ns - r->x[i].http->start_ns, 1000);
	}
	st = finish(r, 2000);
	cr_assert_eq(st.requests, 100);
	cr_assert_eq(st.requests_dropped, 36);
	cr_assert_eq(st.responses, 100);
	cr_assert_eq(st.responses_dropped, 36);
	cr_assert_eq(st.orphan_responses, 0);
	cr_assert_eq(st.exchanges, 64);
	/* 36 requests "GET /64 .. /99" and their responses. */
	cr_assert_eq(st.bytes_unattributed,
		     36 * (strlen("GET /64 HTTP/1.1\r\n\r\n") + strlen(RESP2)));
	l7r_free(r);
}

Test(http1, header_over_line_limit)
{
	struct l7r_run *r = run_new();
	size_t big = HTTP1_LINE_MAX + 5000, n;
	char *req = malloc(big + 200);
	struct http1_stats st;

	cr_assert(req);
	n = (size_t)sprintf(req, "GET /big HTTP/1.1\r\nCookie: ");
	memset(req + n, 'c', big);
	n += big;
	n += (size_t)sprintf(req + n, "\r\nHost: h\r\n\r\n");
	l7r_seg(r, EG, 1, req, n, n);
	feed(r, IN, 2, RESP1);
	feed(r, EG, 3, REQ3);
	feed(r, IN, 4, RESP3);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_eq(r->x[0].http->req_bytes, n);
	cr_assert_str_eq(r->x[0].http->host, "h");
	cr_assert_eq(r->x[1].http->flags, 0);
	cr_assert_str_eq(r->x[1].http->method, "DELETE");

	/* A start line over the limit: the URI is cut, the message still framed. */
	n = (size_t)sprintf(req, "GET /");
	memset(req + n, 'u', big);
	n += big;
	n += (size_t)sprintf(req + n, " HTTP/1.1\r\n\r\n");
	l7r_seg(r, EG, 5, req, n, n);
	feed(r, IN, 6, RESP1);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[2].http->uri_len, HTTP1_URI_MAX);
	cr_assert_eq(r->x[2].http->flags, HTTP1_F_REQ_HDR_TRUNCATED | HTTP1_F_URI_TRUNCATED);
	cr_assert_eq(r->x[2].http->req_bytes, n);
	cr_assert_eq(r->x[2].http->status, 200);
	st = finish(r, 7);
	cr_assert_eq(st.long_lines, 2);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(req);
	l7r_free(r);
}

Test(http1, trace_headers_and_bounds)
{
	struct l7r_run *r = run_new();
	char *req = malloc(4096), *sw8 = malloc(1000);
	const char *sw =
		"1-dHJhY2U=-c2VnbWVudA==-3-c2VydmljZQ==-aW5zdGFuY2U=-L2FwaQ==-aG9zdDo4MA==";
	size_t n;

	cr_assert(req && sw8);
	n = (size_t)sprintf(req,
			    "GET /t HTTP/1.1\r\nhOsT:   svc.ns:8080  \r\nSW8: %s\r\n"
			    "b3: 80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1\r\n"
			    "X-B3-TraceId: 463ac35c9f6413ad48485a3953bb6124\r\n"
			    "X-B3-SpanId:\t0020000000000001\r\n"
			    "Content-Type: text/html; charset=utf-8\r\n"
			    "Host: second-ignored\r\n\r\n",
			    sw);
	feed(r, EG, 1, req);
	feed(r, IN, 2,
	     "HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\n"
	     "Content-Length: 2\r\n\r\n{}");
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].http->host, "svc.ns:8080");
	cr_assert_str_eq(r->x[0].http->sw8, sw);
	cr_assert_str_eq(r->x[0].http->b3, "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1");
	cr_assert_str_eq(r->x[0].http->x_b3_traceid, "463ac35c9f6413ad48485a3953bb6124");
	cr_assert_str_eq(r->x[0].http->x_b3_spanid, "0020000000000001");
	cr_assert_str_eq(r->x[0].http->req_content_type, "text/html; charset=utf-8");
	cr_assert_str_eq(r->x[0].http->resp_content_type, "application/json");
	cr_assert_eq(r->x[0].http->status, 500);
	cr_assert_eq(r->x[0].http->flags, 0);
	cr_assert_eq(r->x[0].http->req_bytes, n);

	/* Over-long values are cut to their bounds, control bytes do not survive. */
	memset(sw8, 's', 999);
	sw8[999] = '\0';
	n = (size_t)sprintf(req, "GET /u HTTP/1.1\r\nsw8: %s\r\nHost: a", sw8);
	req[n++] = '\0';
	n += (size_t)sprintf(req + n, "b\x01z\r\n\r\n");
	l7r_seg(r, EG, 3, req, n, n);
	feed(r, IN, 4, RESP2);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(strlen(r->x[1].http->sw8), HTTP1_TRACE_MAX);
	cr_assert_str_eq(r->x[1].http->host, "a?b?z");
	cr_assert_eq(r->x[1].http->flags, HTTP1_F_VALUE_TRUNCATED);
	cr_assert_eq(finish(r, 5).bytes_unattributed, 0);
	free(req);
	free(sw8);
	l7r_free(r);
}

Test(http1, tunnel_ends_parsing)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, EG, 1, "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
	feed(r, IN, 2,
	     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello");
	feed(r, EG, 3, "GET / HTTP/1.1\r\n\r\n");
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->status, 101);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_TUNNEL);
	st = finish(r, 4);
	cr_assert_eq(st.tunnels, 1);
	cr_assert_eq(st.requests, 1);
	cr_assert_eq(st.bytes_unattributed, 7 + strlen("GET / HTTP/1.1\r\n\r\n"));
	l7r_free(r);
}

Test(http1, detect)
{
	cr_assert_eq(http1__detect((const uint8_t *)"GET / HTTP/1.1", 14), HTTP1_DETECT_REQUEST);
	cr_assert_eq(http1__detect((const uint8_t *)"OPTIONS * HTTP/1.1", 18),
		     HTTP1_DETECT_REQUEST);
	cr_assert_eq(http1__detect((const uint8_t *)"CONNECT h:443 H", 15), HTTP1_DETECT_REQUEST);
	cr_assert_eq(http1__detect((const uint8_t *)"PATCH /x", 8), HTTP1_DETECT_REQUEST);
	cr_assert_eq(http1__detect((const uint8_t *)"HTTP/1.0 404 Not", 16), HTTP1_DETECT_RESPONSE);
	cr_assert_eq(http1__detect((const uint8_t *)"HTTP/1.1 20", 11), -EAGAIN);
	cr_assert_eq(http1__detect((const uint8_t *)"GE", 2), -EAGAIN);
	cr_assert_eq(http1__detect((const uint8_t *)"", 0), -EAGAIN);
	cr_assert_eq(http1__detect(NULL, 5), -EAGAIN);
	cr_assert_eq(http1__detect((const uint8_t *)"get / HTTP/1.1", 14), 0);
	cr_assert_eq(http1__detect((const uint8_t *)"GET  / HTTP/1.1", 15), 0);
	cr_assert_eq(http1__detect((const uint8_t *)"HTTP/2 200", 10), 0);
	cr_assert_eq(http1__detect((const uint8_t *)"PRI * HTTP/2.0\r\n", 16), 0);
	cr_assert_eq(http1__detect((const uint8_t *)"\x16\x03\x01", 3), 0);
}

Test(http1, bad_arguments)
{
	void *c = OPS->new_conn(0);
	struct l7_exchange x;

	cr_assert(c);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 2, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, (enum l7_dir)2, 1, (const uint8_t *)"x", 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 0, 100), 0);
	cr_assert_eq(OPS->lost(c, (enum l7_dir) - 1, 1), -EINVAL);
	cr_assert_eq(OPS->next(c, &x), 0);
	OPS->close(c, 1);
	cr_assert_eq(OPS->lost(c, EG, 1), -EPIPE);
	OPS->free_conn(c);
	OPS->free_conn(NULL);
}

Test(http1, response_begun_before_request_headers_is_orphan)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;

	/* The request's header block is cut by a gap only after the response has begun. */
	feed(r, EG, 1, "GET /slow HTTP/1.1\r\nHost: a\r\n");
	feed(r, IN, 2, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n");
	l7r_seg(r, EG, 3, "X-Late: 1\r\n", 11, 500);
	feed(r, IN, 4, "\r\nok");
	cr_assert_eq(r->n, 0);
	st = finish(r, 5);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[0].http->uri, "/slow");
	cr_assert_eq(r->x[0].http->flags,
		     HTTP1_F_NO_RESPONSE | HTTP1_F_REQ_TRUNCATED | HTTP1_F_REQ_HDR_TRUNCATED);
	cr_assert_eq(r->x[0].http->req_bytes, strlen("GET /slow HTTP/1.1\r\nHost: a\r\n") + 500);
	cr_assert_eq(r->x[1].http->flags, HTTP1_F_NO_REQUEST, "flags %#x", r->x[1].http->flags);
	cr_assert_eq(r->x[1].http->resp_bytes, 36 + 4);
	cr_assert_eq(r->x[1].http->start_ns, 2);
	cr_assert_eq(r->x[1].http->end_ns, 4);
	cr_assert_eq(st.orphan_responses, 1);
	cr_assert_eq(st.unanswered, 1);
	l7r_free(r);
}

Test(http1, bad_framing_resyncs)
{
	struct l7r_run *r = run_new();
	struct http1_stats st;
	const char *bad_chunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n";
	const char *bad_cl =
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd";

	feed(r, EG, 1, REQ1 REQ3 "GET /z HTTP/1.1\r\n\r\n");
	feed(r, IN, 2, bad_chunk);
	feed(r, IN, 3, bad_cl);
	feed(r, IN, 4, RESP1);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[0].http->resp_bytes, strlen(bad_chunk));
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[0].http->end_ns, 2);
	cr_assert_eq(r->x[1].http->resp_bytes, strlen(bad_cl));
	cr_assert_eq(r->x[1].http->flags, HTTP1_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[2].http->flags, 0);
	cr_assert_eq(r->x[2].http->resp_bytes, strlen(RESP1));
	st = finish(r, 5);
	cr_assert_eq(st.framing_errors, 2);
	cr_assert_eq(st.resyncs, 2);
	cr_assert_eq(st.bad_starts, 0); /* "xx" and "abcd" are skipped as part of their lines */
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

/*
 * fuzz_http1's found-continue_then_bad_status: a 100 Continue, then a final response whose
 * status line does not parse ("HTTP,/1.1"). The request is unanswered: no status, no response
 * bytes (the interim's are unattributed with the bad response's), no response flags.
 */
Test(http1, continue_then_bad_status_is_unanswered)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	static const char bad[] = "HTTP,/1.1 200 OK\r\nContent-Length: 5\r\n"
				  "Content-Type: text/plain\r\n\r\nhello";
	struct l7r_run *r = run_new();
	struct http1_stats st;

	feed(r, IN, 1, REQ1);
	feed(r, EG, 2, cont);
	feed(r, EG, 3, bad);
	cr_assert_eq(r->n, 0);
	st = finish(r, 4);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE | L7_F_NO_RESULT, "flags %#x", r->x[0].flags);
	cr_assert_eq(r->x[0].code, 0);
	cr_assert_eq(r->x[0].resp_bytes, 0);
	cr_assert_eq(r->x[0].req_bytes, strlen(REQ1));
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].http->status, 0);
	cr_assert_eq(r->x[0].http->resp_bytes, 0);
	cr_assert_eq(r->x[0].http->end_ns, 4);
	cr_assert_eq(st.interim, 1);
	cr_assert_eq(st.responses, 0);
	cr_assert_eq(st.unanswered, 1);
	cr_assert_gt(st.bad_starts, 0);
	cr_assert_eq(st.bytes_unattributed, strlen(cont) + strlen(bad));
	l7r_free(r);

	/* A 100 Continue cut by a gap in its header block, then nothing: no RESP_TRUNCATED. */
	r = run_new();
	feed(r, EG, 1, REQ1);
	l7r_seg(r, IN, 2, cont, 23, strlen(cont) + 100);
	st = finish(r, 3);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].http->flags, HTTP1_F_NO_RESPONSE, "flags %#x", r->x[0].http->flags);
	cr_assert_eq(r->x[0].http->resp_bytes, 0);
	cr_assert_eq(st.interim, 1);
	cr_assert_eq(st.unanswered, 1);
	cr_assert_eq(st.bytes_unattributed, strlen(cont) + 100);
	l7r_free(r);
}
