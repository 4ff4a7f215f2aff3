// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/dns.c: real conversations recorded between dig/kdig and dnsmasq/unbound on
 * 127.0.0.1 (tests/unit/data/dns/, made with tests/tools/tcp_record.py), fed whole and split at
 * every byte, and hand-built messages for what real peers do not send: reordering, expiry,
 * hostile names and lengths, gaps, losses, garbage, the pending limit. Every test closes the
 * connection at its end and checks that every byte fed is in an exchange or counted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7.h"
#include "tests/unit/l7_build.h"
#include "tests/unit/l7_replay.h"

#define EG L7_EGRESS
#define IN L7_INGRESS
#define SEC 1000000000ull
#define T0 L7R_T0 /* where the recordings start too */

#define QF 0x0100u		      /* RD */
#define RF(rcode) (0x8180u | (rcode)) /* QR RD RA */

static const struct l7_ops *ops = &l7_dns_ops;

/* --- messages --- */

/* "a.b" as wire labels, "" or "." as the root. */
static void put_name(struct l7b *b, const char *name)
{
	while (*name && strcmp(name, ".")) {
		const char *dot = strchr(name, '.');
		size_t len = dot ? (size_t)(dot - name) : strlen(name);

		l7b_be(b, len, 1);
		l7b_put(b, name, len);
		name += len + (dot ? 1 : 0);
	}
	l7b_be(b, 0, 1);
}

/* Copies what m holds into out and frees m; returns its length. */
static size_t take(struct l7b *m, uint8_t *out)
{
	size_t n = m->n;

	memcpy(out, m->b, n);
	free(m);
	return n;
}

/* A message with one question (none if name is NULL) and `answers` A records, into b. */
static size_t dns_msg(uint8_t *b, unsigned id, unsigned flags, const char *name, unsigned qtype,
		      unsigned answers)
{
	static const uint8_t rr[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 127, 0, 0, 9 };
	struct l7b *m = l7b_new();

	l7b_be(m, id, 2);
	l7b_be(m, flags, 2);
	l7b_be(m, name ? 1 : 0, 2);
	l7b_be(m, answers, 2);
	l7b_be(m, 0, 2);
	l7b_be(m, 0, 2);
	if (name) {
		put_name(m, name);
		l7b_be(m, qtype, 2);
		l7b_be(m, 1, 2);
	}
	for (unsigned i = 0; i < answers; i++)
		l7b_put(m, rr, sizeof(rr));
	return take(m, b);
}

/* The message p[0..len) with its TCP length before it, into b. */
static size_t tcp(uint8_t *b, const uint8_t *p, size_t len)
{
	struct l7b *m = l7b_new();

	l7b_be(m, len, 2);
	l7b_put(m, p, len);
	return take(m, b);
}

static size_t tcp_msg(uint8_t *b, unsigned id, unsigned flags, const char *name, unsigned qtype,
		      unsigned answers)
{
	uint8_t m[2048];

	return tcp(b, m, dns_msg(m, id, flags, name, qtype, answers));
}

static void check_x(const struct l7_exchange *x, const char *op, const char *target, int code)
{
	cr_assert_str_eq(x->op, op);
	cr_assert_str_eq(x->target, target);
	cr_assert_eq(x->code, code);
	cr_assert_eq(x->error, code != 0);
}

TestSuite(dns);

/* --- real conversations --- */

static const struct {
	const char *name;
	const char *op, *target;
	int code;
} udp_recs[] = {
	{ "dig_udp_a", "A", "test.local", 0 },	      /* dnsmasq --address */
	{ "dig_udp_aaaa", "AAAA", "test.local", 0 },  /* dnsmasq --address ::2 */
	{ "dig_udp_nxdomain", "A", "x.nx.local", 3 }, /* dnsmasq --address=/nx.local/ */
	{ "dig_udp_refused", "A", "example.com", 5 }, /* dnsmasq, no upstream */
	{ "kdig_udp_a", "A", "www.test.local", 0 },   /* unbound local-data */
};

Test(dns, udp_real_dig_kdig_dnsmasq_unbound)
{
	for (size_t k = 0; k < sizeof(udp_recs) / sizeof(udp_recs[0]); k++) {
		struct l7r_rec *rc = l7r_load("dns", udp_recs[k].name);
		struct l7r_run *r;
		struct l7_stats st;

		cr_assert_eq(rc->n, 2, "%s", udp_recs[k].name);
		r = l7r_play(ops, rc, L7R_PLAY(.flags = L7_F_DATAGRAM, .open = true));
		cr_assert_eq(ops->role(r->c), L7_ROLE_CLIENT);
		cr_assert_eq(r->n, 1, "%s", udp_recs[k].name);
		check_x(&r->x[0], udp_recs[k].op, udp_recs[k].target, udp_recs[k].code);
		cr_assert_eq(r->x[0].req_bytes, rc->seg[0].len);
		cr_assert_eq(r->x[0].resp_bytes, rc->seg[1].len);
		cr_assert_eq(r->x[0].start_ns, rc->seg[0].ts);
		cr_assert_eq(r->x[0].end_ns, rc->seg[1].ts);
		cr_assert_eq(r->x[0].req_dir, EG);
		cr_assert_eq(r->x[0].flags, 0);
		st = l7r_finish(r, rc->seg[1].ts + SEC);
		cr_assert_eq(st.bytes_unattributed, 0);
		cr_assert_eq(st.requests, 1);
		cr_assert_eq(st.responses, 1);
		cr_assert_eq(st.malformed, 0);
		l7r_free(r);
		l7r_rec_free(rc);
	}
}

Test(dns, udp_real_four_queries_one_socket)
{
	struct l7r_rec *rc = l7r_load("dns", "dig_udp_multi");
	struct l7r_run *r = l7r_play(ops, rc, L7R_PLAY(.flags = L7_F_DATAGRAM, .open = true));
	struct l7_stats st;

	cr_assert_eq(r->n, 4);
	check_x(&r->x[0], "A", "www.test.local", 0);
	check_x(&r->x[1], "TXT", "www.test.local", 0);
	check_x(&r->x[2], "AAAA", "x.nx.test", 3);
	check_x(&r->x[3], "MX", "mail.test.local", 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(r->x[i].req_bytes, rc->seg[2 * i].len);
		cr_assert_eq(r->x[i].resp_bytes, rc->seg[2 * i + 1].len);
	}
	st = l7r_finish(r, T0 + SEC);
	cr_assert_eq(st.exchanges, 4);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.bytes_seen, rc->bytes);
	l7r_free(r);
	l7r_rec_free(rc);
}

static const struct {
	const char *name;
	size_t n;
	struct {
		const char *op, *target;
		int code;
	} x[5];
} tcp_recs[] = {
	{ "dig_tcp_a", 1, { { "A", "www.test.local", 0 } } },
	{ "dig_tcp_nxdomain", 1, { { "AAAA", "x.nx.test", 3 } } },
	{ "dig_tcp_refused", 1, { { "A", "refused.test", 5 } } },
	{ "kdig_tcp_a", 1, { { "AAAA", "www.test.local", 0 } } },
	{ "kdig_tcp_keepopen",
	  5,
	  { { "A", "www.test.local", 0 },
	    { "AAAA", "www.test.local", 0 },
	    { "A", "x.nx.test", 3 },
	    { "MX", "mail.test.local", 0 },
	    { "A", "refused.test", 5 } } },
};

/* Split anywhere: tests/unit/test_l7.c. */
Test(dns, tcp_real_whole)
{
	for (size_t k = 0; k < sizeof(tcp_recs) / sizeof(tcp_recs[0]); k++) {
		struct l7r_rec *rc = l7r_load("dns", tcp_recs[k].name);
		struct l7r_run *whole = l7r_play(ops, rc, L7R_PLAY(.open = true));
		struct l7_stats st;

		cr_assert_eq(whole->n, tcp_recs[k].n, "%s", tcp_recs[k].name);
		for (size_t i = 0; i < whole->n; i++) {
			check_x(&whole->x[i], tcp_recs[k].x[i].op, tcp_recs[k].x[i].target,
				tcp_recs[k].x[i].code);
			cr_assert_eq(whole->x[i].flags, 0);
			cr_assert_eq(whole->x[i].req_dir, EG);
			/* Each proxy read held one whole message, its length first. */
			cr_assert_eq(whole->x[i].req_bytes, rc->seg[2 * i].len);
			cr_assert_eq(whole->x[i].resp_bytes, rc->seg[2 * i + 1].len);
			cr_assert_eq(whole->x[i].start_ns, rc->seg[2 * i].ts);
			cr_assert_eq(whole->x[i].end_ns, rc->seg[2 * i + 1].ts);
		}
		st = l7r_finish(whole, T0 + 5 * SEC);
		cr_assert_eq(st.requests, tcp_recs[k].n);
		cr_assert_eq(st.responses, tcp_recs[k].n);
		cr_assert_eq(st.bytes_unattributed, 0);
		cr_assert_eq(st.malformed, 0);
		l7r_free(whole);
		l7r_rec_free(rc);
	}
}

Test(dns, tcp_real_as_the_server)
{
	struct l7r_rec *rc = l7r_load("dns", "kdig_tcp_keepopen");
	struct l7r_run *r = l7r_play(ops, rc, L7R_PLAY(.as_server = true, .open = true));
	struct l7_stats st;

	cr_assert_eq(ops->role(r->c), L7_ROLE_SERVER);
	cr_assert_eq(r->n, 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(r->x[i].req_dir, IN);
		cr_assert_eq(r->x[i].code, tcp_recs[4].x[i].code);
		cr_assert_str_eq(r->x[i].target, tcp_recs[4].x[i].target);
	}
	st = l7r_finish(r, T0 + SEC);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
	l7r_rec_free(rc);
}

/* --- pairing --- */

Test(dns, udp_answers_out_of_order)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q1[512], q2[512], r1[512], r2[512];
	size_t lq1 = dns_msg(q1, 1, QF, "a.example", 1, 0);
	size_t lq2 = dns_msg(q2, 2, QF, "b.example", 28, 0);
	size_t lr1 = dns_msg(r1, 1, RF(0), "a.example", 1, 2);
	size_t lr2 = dns_msg(r2, 2, RF(2), "b.example", 28, 0);
	struct l7_stats st;

	l7r_feed(r, EG, T0, q1, lq1);
	l7r_feed(r, EG, T0 + 10, q2, lq2);
	l7r_feed(r, IN, T0 + 30, r2, lr2);
	/* The second query's answer is not held back by the first. */
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "AAAA", "b.example", 2);
	cr_assert_eq(r->x[0].start_ns, T0 + 10);
	cr_assert_eq(r->x[0].end_ns, T0 + 30);
	l7r_feed(r, IN, T0 + 50, r1, lr1);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "A", "a.example", 0);
	cr_assert_eq(r->x[1].req_bytes, lq1);
	cr_assert_eq(r->x[1].resp_bytes, lr1);
	cr_assert_eq(r->x[1].end_ns - r->x[1].start_ns, 50);
	st = l7r_finish(r, T0 + 100);
	cr_assert_eq(st.exchanges, 2);
	cr_assert_eq(st.unanswered, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(dns, same_id_paired_by_name_and_type_without_case)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t b[6][512];
	size_t l0 = dns_msg(b[0], 7, QF, "a.test", 1, 0);
	size_t l1 = dns_msg(b[1], 7, QF, "b.test", 1, 0);
	size_t l2 = dns_msg(b[2], 7, QF, "b.test", 28, 0);
	size_t l3 = dns_msg(b[3], 7, RF(0), "B.TEST", 28, 1);
	size_t l4 = dns_msg(b[4], 7, RF(3), "b.Test", 1, 0);
	size_t l5 = dns_msg(b[5], 7, RF(0), "A.test", 1, 1);
	struct l7_stats st;

	l7r_feed(r, EG, T0 + 1, b[0], l0);
	l7r_feed(r, EG, T0 + 2, b[1], l1);
	l7r_feed(r, EG, T0 + 3, b[2], l2);
	l7r_feed(r, IN, T0 + 10, b[3], l3);
	l7r_feed(r, IN, T0 + 20, b[4], l4);
	l7r_feed(r, IN, T0 + 30, b[5], l5);
	cr_assert_eq(r->n, 3);
	check_x(&r->x[0], "AAAA", "b.test", 0);
	cr_assert_eq(r->x[0].start_ns, T0 + 3);
	cr_assert_eq(r->x[0].resp_bytes, l3);
	check_x(&r->x[1], "A", "b.test", 3);
	cr_assert_eq(r->x[1].start_ns, T0 + 2);
	/* The target is the query's, as sent. */
	check_x(&r->x[2], "A", "a.test", 0);
	cr_assert_eq(r->x[2].start_ns, T0 + 1);
	cr_assert_eq(r->x[2].end_ns, T0 + 30);
	st = l7r_finish(r, T0 + 100);
	cr_assert_eq(st.orphan_responses, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(dns, retransmitted_query_answer_pairs_with_first)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q[512], a[512];
	size_t lq = dns_msg(q, 99, QF, "slow.example", 1, 0);
	size_t la = dns_msg(a, 99, RF(0), "slow.example", 1, 1);
	struct l7_stats st;

	l7r_feed(r, EG, T0, q, lq);
	l7r_feed(r, EG, T0 + 5 * SEC, q, lq);
	l7r_feed(r, IN, T0 + 6 * SEC, a, la);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].start_ns, T0);
	cr_assert_eq(r->x[0].end_ns, T0 + 6 * SEC);
	cr_assert_eq(r->x[0].flags, 0);
	st = l7r_finish(r, T0 + 7 * SEC);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[1].start_ns, T0 + 5 * SEC);
	cr_assert_eq(r->x[1].end_ns, T0 + 7 * SEC);
	cr_assert_eq(st.unanswered, 1);
	l7r_free(r);
}

Test(dns, unanswered_at_close)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[512];
	size_t lq = tcp_msg(q, 5, QF, "gone.example", 16, 0);
	struct l7_stats st;

	l7r_feed(r, EG, T0, q, lq);
	cr_assert_eq(r->n, 0);
	st = l7r_finish(r, T0 + 3 * SEC);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "TXT", "gone.example", 0);
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].req_bytes, lq);
	cr_assert_eq(r->x[0].resp_bytes, 0);
	cr_assert_eq(r->x[0].end_ns, T0 + 3 * SEC);
	cr_assert_eq(st.unanswered, 1);
	cr_assert_eq(ops->feed(r->c, EG, T0 + 4 * SEC, q, lq, lq), -EPIPE);
	cr_assert_eq(ops->lost(r->c, EG, 3), -EPIPE);
	l7r_free(r);
}

Test(dns, udp_query_expires_after_ten_seconds)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q1[512], q2[512], q3[512], a1[512];
	size_t l1 = dns_msg(q1, 1, QF, "one.example", 1, 0);
	size_t l2 = dns_msg(q2, 2, QF, "two.example", 1, 0);
	size_t l3 = dns_msg(q3, 3, QF, "three.example", 1, 0);
	size_t la = dns_msg(a1, 1, RF(0), "one.example", 1, 1);
	struct l7_stats st;

	l7r_feed(r, EG, T0, q1, l1);
	l7r_feed(r, EG, T0 + 5 * SEC, q2, l2);
	l7r_feed(r, EG, T0 + 10 * SEC, q3, l3);
	/* Exactly 10 s: not yet. */
	cr_assert_eq(r->n, 0);
	l7r_feed(r, IN, T0 + 10 * SEC + 1, a1, la);
	/* Expired first, so the answer is too late and has no query. */
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE);
	cr_assert_str_eq(r->x[0].target, "one.example");
	cr_assert_eq(r->x[0].end_ns, T0 + 10 * SEC + 1);
	cr_assert_eq(r->x[0].resp_bytes, 0);
	cr_assert_eq(r->x[1].flags, L7_F_NO_REQUEST);
	cr_assert_str_eq(r->x[1].target, "one.example");
	cr_assert_eq(r->x[1].req_bytes, 0);
	cr_assert_eq(r->x[1].resp_bytes, la);
	cr_assert_eq(r->x[1].req_dir, EG);
	st = l7r_finish(r, T0 + 11 * SEC);
	cr_assert_eq(r->n, 4);
	cr_assert_str_eq(r->x[2].target, "two.example");
	cr_assert_str_eq(r->x[3].target, "three.example");
	cr_assert_eq(st.unanswered, 3);
	cr_assert_eq(st.orphan_responses, 1);
	l7r_free(r);
}

Test(dns, response_without_query)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t a[512];
	size_t la = dns_msg(a, 4242, RF(3), "nothing.example", 28, 0);
	struct l7_stats st;

	l7r_feed(r, IN, T0, a, la);
	cr_assert_eq(ops->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "AAAA", "nothing.example", 3);
	cr_assert_eq(r->x[0].flags, L7_F_NO_REQUEST);
	cr_assert_eq(r->x[0].req_bytes, 0);
	cr_assert_eq(r->x[0].resp_bytes, la);
	cr_assert_eq(r->x[0].req_dir, EG);
	cr_assert_eq(r->x[0].start_ns, T0);
	cr_assert_eq(r->x[0].end_ns, T0);
	st = l7r_finish(r, T0 + 1);
	cr_assert_eq(st.orphan_responses, 1);
	l7r_free(r);
}

Test(dns, answer_stamped_before_its_query_has_no_negative_duration)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q[512], a[512];
	size_t lq = dns_msg(q, 3, QF, "clock.example", 1, 0);
	size_t la = dns_msg(a, 3, RF(0), "clock.example", 1, 1);

	/* Two CPUs' clocks, or a hostile worker: the answer's time is earlier. */
	l7r_feed(r, EG, T0 + 500, q, lq);
	l7r_feed(r, IN, T0 + 100, a, la);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].start_ns, T0 + 500);
	cr_assert_eq(r->x[0].end_ns, T0 + 500);
	cr_assert_eq(l7r_finish(r, T0).unanswered, 0);
	l7r_free(r);
}

Test(dns, udp_server_role_and_queries_both_ways)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t b[4][512];
	size_t l0 = dns_msg(b[0], 1, QF, "in.local", 1, 0);
	size_t l1 = dns_msg(b[1], 1, RF(0), "in.local", 1, 1);
	size_t l2 = dns_msg(b[2], 1, 0, "out.local", 12, 0);
	size_t l3 = dns_msg(b[3], 1, 0x8400, "out.local", 12, 1);

	/* Multicast DNS: the same socket answers queries and sends its own. */
	l7r_feed(r, IN, T0, b[0], l0);
	cr_assert_eq(ops->role(r->c), L7_ROLE_SERVER);
	l7r_feed(r, EG, T0 + 1, b[2], l2);
	l7r_feed(r, EG, T0 + 2, b[1], l1);
	l7r_feed(r, IN, T0 + 3, b[3], l3);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].req_dir, IN);
	cr_assert_str_eq(r->x[0].target, "in.local");
	cr_assert_eq(r->x[1].req_dir, EG);
	check_x(&r->x[1], "PTR", "out.local", 0);
	cr_assert_eq(l7r_finish(r, T0 + 4).bytes_unattributed, 0);
	l7r_free(r);
}

/* --- truncation, names, types --- */

Test(dns, udp_capture_cut_in_question)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q[512], a[512];
	size_t lq = dns_msg(q, 11, QF, "cut.example.org", 1, 0);
	size_t la = dns_msg(a, 11, RF(0), "cut.example.org", 1, 3);
	struct l7_stats st;

	/* The query's question is cut: it pairs by id, the answer names it. */
	l7r_seg(r, EG, T0, q, 20, lq);
	l7r_seg(r, IN, T0 + 5, a, la, la);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "A", "cut.example.org", 0);
	cr_assert_eq(r->x[0].flags, L7_F_REQ_TRUNCATED);
	cr_assert_eq(r->x[0].req_bytes, lq);
	cr_assert_eq(r->x[0].resp_bytes, la);

	/* The answer is cut after its question. */
	l7r_seg(r, EG, T0 + 10, q, lq, lq);
	l7r_seg(r, IN, T0 + 15, a, lq + 3, la);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "A", "cut.example.org", 0);
	cr_assert_eq(r->x[1].flags, L7_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[1].resp_bytes, la);

	/* No header: nothing can be said. */
	for (int i = 0; i < 10; i++)
		l7r_seg(r, IN, T0 + 20, a, 5, la);
	st = l7r_finish(r, T0 + 30);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(st.malformed, 10);
	cr_assert_eq(st.dirs_abandoned, 0);
	cr_assert_eq(st.bytes_unattributed, 10 * la);
	cr_assert_eq(st.gap_bytes, (lq - 20) + (la - lq - 3) + 10 * (la - 5));
	l7r_free(r);
}

/* Feeds one datagram query; returns the exchange it made at close. */
static struct l7_exchange one_query(const uint8_t *q, size_t len, struct l7_stats *ret_st)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	struct l7_exchange x;

	l7r_feed(r, EG, T0, q, len);
	*ret_st = l7r_finish(r, T0 + 1);
	cr_assert_eq(r->n, 1);
	x = r->x[0];
	l7r_free(r);
	return x;
}

Test(dns, compression_pointers_bounded)
{
	uint8_t q[512];
	struct l7_stats st;
	struct l7_exchange x;
	size_t n;

	/* A pointer into the header: id 0 is a root label there. */
	n = dns_msg(q, 0, QF, NULL, 0, 0);
	q[5] = 1;
	memcpy(q + n, "\x03www\xc0\x00\x00\x01\x00\x01", 10);
	x = one_query(q, n + 10, &st);
	check_x(&x, "A", "www", 0);
	cr_assert_eq(st.malformed, 0);

	/* To itself, forwards, a loop within the header, a retired label type. */
	static const char *const bad[] = {
		"\x03www\xc0\x0c\x00\x01\x00\x01",
		"\xc0\x0e\x01\x61\x00\x00\x01\x00\x01",
		"\x03www\xc0\x00\x00\x01\x00\x01",
		"\x41www\x00\x00\x01\x00\x01",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = dns_msg(q, i == 2 ? 0xc000 : 1, QF, NULL, 0, 0);
		q[5] = 1;
		memcpy(q + n, bad[i], 10);
		x = one_query(q, n + 10, &st);
		check_x(&x, "", "", 0);
		cr_assert_eq(x.req_bytes, n + 10);
		cr_assert_eq(st.malformed, 1, "case %zu", i);
	}
}

Test(dns, name_length_and_label_bounds)
{
	char name[600];
	uint8_t q[1024];
	struct l7_stats st;
	struct l7_exchange x;
	size_t n = 0;

	/* 127 one-letter labels: 255 bytes of wire form, the most there is. */
	for (int i = 0; i < 127; i++)
		n += (size_t)sprintf(name + n, i ? ".a" : "a");
	x = one_query(q, dns_msg(q, 1, QF, name, 1, 0), &st);
	cr_assert_eq(strlen(x.target), 253);
	cr_assert_str_eq(x.target, name);
	cr_assert_eq(x.flags, L7_F_NO_RESPONSE);
	cr_assert_eq(st.malformed, 0);

	/* One more label: 257 bytes. */
	strcat(name, ".a");
	x = one_query(q, dns_msg(q, 1, QF, name, 1, 0), &st);
	check_x(&x, "", "", 0);
	cr_assert_eq(st.malformed, 1);

	/* Four 63-byte labels: 257 bytes. */
	memset(name, 'x', sizeof(name));
	for (int i = 1; i < 4; i++)
		name[64 * i - 1] = '.';
	name[255] = '\0';
	x = one_query(q, dns_msg(q, 1, QF, name, 1, 0), &st);
	cr_assert_eq(st.malformed, 1);
	/* 63, 63, 63 and 61 bytes: 255. */
	name[253] = '\0';
	x = one_query(q, dns_msg(q, 1, QF, name, 1, 0), &st);
	cr_assert_str_eq(x.target, name);
	cr_assert_eq(st.malformed, 0);

	/* The root, control bytes. */
	x = one_query(q, dns_msg(q, 1, QF, ".", 2, 0), &st);
	check_x(&x, "NS", ".", 0);
	x = one_query(q, dns_msg(q, 1, QF, "a\nb.\x7f", 6, 0), &st);
	check_x(&x, "SOA", "a?b.?", 0);
}

Test(dns, query_type_names)
{
	static const struct {
		unsigned type;
		const char *name;
	} t[] = {
		{ 1, "A" },	  { 28, "AAAA" },	  { 5, "CNAME" },  { 15, "MX" },
		{ 16, "TXT" },	  { 12, "PTR" },	  { 33, "SRV" },   { 2, "NS" },
		{ 6, "SOA" },	  { 65, "HTTPS" },	  { 64, "SVCB" },  { 255, "ANY" },
		{ 41, "OPT" },	  { 252, "AXFR" },	  { 251, "IXFR" }, { 43, "DS" },
		{ 48, "DNSKEY" }, { 257, "CAA" },	  { 35, "NAPTR" }, { 99, "TYPE99" },
		{ 0, "TYPE0" },	  { 65535, "TYPE65535" },
	};
	uint8_t q[512];
	struct l7_stats st;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct l7_exchange x =
			one_query(q, dns_msg(q, 1, QF, "t.example", t[i].type, 0), &st);

		cr_assert_str_eq(x.op, t[i].name);
	}
}

/* --- TCP framing --- */

Test(dns, tcp_length_alone_and_messages_sharing_segments)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[3][512], a[3][512], two[1024];
	size_t lq[3], la[3];
	const char *names[] = { "one.test", "two.test", "three.test" };
	struct l7_stats st;

	for (int i = 0; i < 3; i++) {
		lq[i] = tcp_msg(q[i], 100 + i, QF, names[i], 1, 0);
		la[i] = tcp_msg(a[i], 100 + i, RF(0), names[i], 1, (unsigned)i);
	}
	/* The length in its own write, then the message. */
	l7r_feed(r, EG, T0, q[0], 2);
	l7r_feed(r, EG, T0 + 1, q[0] + 2, lq[0] - 2);
	/* Two queries in one write. */
	memcpy(two, q[1], lq[1]);
	memcpy(two + lq[1], q[2], lq[2]);
	l7r_feed(r, EG, T0 + 2, two, lq[1] + lq[2]);
	/* Three answers: the first and part of the second, then the rest. */
	memcpy(two, a[0], la[0]);
	memcpy(two + la[0], a[1], la[1]);
	memcpy(two + la[0] + la[1], a[2], la[2]);
	l7r_feed(r, IN, T0 + 3, two, la[0] + 7);
	cr_assert_eq(r->n, 1);
	l7r_feed(r, IN, T0 + 4, two + la[0] + 7, la[1] + la[2] - 7);
	cr_assert_eq(r->n, 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(r->x[i].target, names[i]);
		cr_assert_eq(r->x[i].req_bytes, lq[i]);
		cr_assert_eq(r->x[i].resp_bytes, la[i]);
		cr_assert_eq(r->x[i].flags, 0);
	}
	cr_assert_eq(r->x[0].start_ns, T0);
	cr_assert_eq(r->x[0].end_ns, T0 + 3);
	cr_assert_eq(r->x[1].start_ns, T0 + 2);
	cr_assert_eq(r->x[1].end_ns, T0 + 4);
	st = l7r_finish(r, T0 + 5);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.resyncs, 0);
	l7r_free(r);
}

Test(dns, tcp_gap_inside_message_keeps_framing)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[512], a[1024], q2[512], a2[512];
	size_t lq = tcp_msg(q, 1, QF, "big.example", 16, 0);
	size_t la = tcp_msg(a, 1, RF(0), "big.example", 16, 40);
	size_t lq2 = tcp_msg(q2, 2, QF, "next.example", 1, 0);
	size_t la2 = tcp_msg(a2, 2, RF(3), "next.example", 1, 3);
	struct l7_stats st;

	l7r_feed(r, EG, T0, q, lq);
	/* The answer's first 40 bytes captured of a write of all of it. */
	l7r_seg(r, IN, T0 + 10, a, 40, la);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "TXT", "big.example", 0);
	cr_assert_eq(r->x[0].resp_bytes, la);
	cr_assert_eq(r->x[0].flags, L7_F_RESP_TRUNCATED);
	/* A lost segment of known size inside the next answer. */
	l7r_feed(r, EG, T0 + 20, q2, lq2);
	l7r_feed(r, IN, T0 + 30, a2, 34);
	cr_assert_eq(ops->lost(r->c, IN, 10), 0);
	l7r_feed(r, IN, T0 + 31, a2 + 44, la2 - 44);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "A", "next.example", 3);
	cr_assert_eq(r->x[1].resp_bytes, la2);
	cr_assert_eq(r->x[1].flags, L7_F_RESP_TRUNCATED);
	st = l7r_finish(r, T0 + 40);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.gap_bytes, la - 40);
	cr_assert_eq(st.lost_bytes, 10);
	l7r_free(r);
}

Test(dns, tcp_loss_between_messages_resyncs_on_a_segment_start)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[512], q2[512], a2[512];
	size_t lq = tcp_msg(q, 1, QF, "first.example", 1, 0);
	size_t lq2 = tcp_msg(q2, 2, QF, "second.example", 1, 0);
	size_t la2 = tcp_msg(a2, 2, RF(0), "second.example", 1, 1);
	static const char junk[] = "\x00\x30 this is not the start of a DNS message";
	struct l7_stats st;

	l7r_feed(r, EG, T0, q, lq);
	cr_assert_eq(ops->lost(r->c, EG, 0), 0);
	/* Mid-message bytes after the loss: not a plausible start, skipped. */
	l7r_feed(r, EG, T0 + 1, junk, sizeof(junk) - 1);
	l7r_feed(r, EG, T0 + 2, q2, lq2);
	l7r_feed(r, IN, T0 + 3, a2, la2);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "A", "second.example", 0);
	cr_assert_eq(r->x[0].req_bytes, lq2);
	st = l7r_finish(r, T0 + 4);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[1].target, "first.example");
	cr_assert_eq(r->x[1].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(st.resyncs, 2);
	cr_assert_eq(st.bytes_unattributed, sizeof(junk) - 1);
	cr_assert_eq(st.dirs_abandoned, 0);
	l7r_free(r);
}

Test(dns, tcp_loss_of_unknown_size_inside_message)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[512], q2[512];
	size_t lq = tcp_msg(q, 1, QF, "cut.example", 1, 2);
	size_t lq2 = tcp_msg(q2, 2, QF, "after.example", 1, 0);
	struct l7_stats st;

	cr_assert_gt(lq, 40);
	l7r_feed(r, EG, T0, q, 40);
	cr_assert_eq(ops->lost(r->c, EG, 0), 0);
	l7r_feed(r, EG, T0 + 1, q2, lq2);
	st = l7r_finish(r, T0 + 2);
	cr_assert_eq(r->n, 2);
	/* Ended where the loss was, with what it had. */
	cr_assert_str_eq(r->x[0].target, "cut.example");
	cr_assert_eq(r->x[0].req_bytes, 40);
	cr_assert_eq(r->x[0].flags, L7_F_REQ_TRUNCATED | L7_F_NO_RESPONSE);
	cr_assert_str_eq(r->x[1].target, "after.example");
	cr_assert_eq(r->x[1].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(dns, garbage_abandons_a_direction)
{
	static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct l7r_run *r = l7r_new_flags(ops, 0);
	struct l7r_run *u = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q[512], a[512];
	size_t lq = tcp_msg(q, 1, QF, "x.example", 1, 0);
	size_t la = tcp_msg(a, 1, RF(0), "x.example", 1, 1);
	struct l7_stats st;

	for (int i = 0; i < 8; i++) {
		l7r_feed(r, EG, T0 + (uint64_t)i, http, sizeof(http) - 1);
		l7r_feed(u, EG, T0 + (uint64_t)i, http, sizeof(http) - 1);
	}
	/* Dead now: a real query is not looked at. */
	l7r_feed(r, EG, T0 + 10, q, lq);
	l7r_feed(r, IN, T0 + 11, a, la);
	l7r_feed(u, EG, T0 + 10, q + 2, lq - 2);
	cr_assert_eq(ops->role(u->c), L7_ROLE_UNKNOWN);
	st = l7r_finish(r, T0 + 12);
	cr_assert_eq(st.dirs_abandoned, 1);
	cr_assert_eq(st.resyncs, 8);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].flags, L7_F_NO_REQUEST);
	cr_assert_eq(st.bytes_unattributed, 8 * (sizeof(http) - 1) + lq);
	st = l7r_finish(u, T0 + 12);
	cr_assert_eq(st.dirs_abandoned, 1);
	cr_assert_eq(st.malformed, 8);
	cr_assert_eq(u->n, 0);
	cr_assert_eq(st.bytes_unattributed, 8 * (sizeof(http) - 1) + lq - 2);
	l7r_free(r);
	l7r_free(u);
}

Test(dns, tcp_hostile_lengths)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[512], big[200], small[2 + 5] = { 0, 5, 1, 2, 3, 4, 5 };
	static const uint8_t zero[2] = { 0, 0 };
	size_t lq = tcp_msg(q, 1, QF, "ok.example", 1, 0);
	struct l7_stats st;

	/* A first message too short for a header is no start. */
	l7r_feed(r, EG, T0, small, sizeof(small));
	l7r_feed(r, EG, T0 + 1, q, lq);
	/* In step, lengths 0 and 5 are followed and counted malformed. */
	l7r_feed(r, EG, T0 + 2, zero, 2);
	l7r_feed(r, EG, T0 + 3, small, sizeof(small));
	/* 65535 announced, 100 bytes come, then the connection closes. */
	memcpy(big, q, lq);
	big[0] = 0xff;
	big[1] = 0xff;
	memset(big + lq, 0xee, sizeof(big) - lq);
	l7r_feed(r, EG, T0 + 4, big, 102);
	st = l7r_finish(r, T0 + 9);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[0].target, "ok.example");
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE);
	cr_assert_str_eq(r->x[1].target, "ok.example");
	cr_assert_eq(r->x[1].req_bytes, 102);
	cr_assert_eq(r->x[1].start_ns, T0 + 4);
	cr_assert_eq(r->x[1].flags, L7_F_REQ_TRUNCATED | L7_F_NO_RESPONSE);
	cr_assert_eq(st.malformed, 2);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.bytes_unattributed, sizeof(small) * 2 + 2);
	l7r_free(r);
}

Test(dns, zone_transfer_answers_are_one_exchange)
{
	struct l7r_run *r = l7r_new_flags(ops, 0);
	uint8_t q[512], a1[512], a2[512], a3[512], q2[512], b2[512];
	size_t lq = tcp_msg(q, 9, 0, "zone.test", 252, 0);
	size_t l1 = tcp_msg(a1, 9, 0x8400, "zone.test", 252, 3);
	size_t l2 = tcp_msg(a2, 9, 0x8400, NULL, 0, 5);
	size_t l3 = tcp_msg(a3, 9, 0x8400, NULL, 0, 1);
	size_t lq2 = tcp_msg(q2, 10, 0, "zone.test", 6, 0);
	size_t lb2 = tcp_msg(b2, 10, 0x8400, "zone.test", 6, 1);
	struct l7_stats st;

	l7r_feed(r, EG, T0, q, lq);
	l7r_feed(r, IN, T0 + 10, a1, l1);
	l7r_feed(r, IN, T0 + 20, a2, l2);
	l7r_feed(r, IN, T0 + 30, a3, l3);
	cr_assert_eq(r->n, 0);
	l7r_feed(r, EG, T0 + 40, q2, lq2);
	l7r_feed(r, IN, T0 + 50, b2, lb2);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[0], "AXFR", "zone.test", 0);
	cr_assert_eq(r->x[0].req_bytes, lq);
	cr_assert_eq(r->x[0].resp_bytes, l1 + l2 + l3);
	cr_assert_eq(r->x[0].end_ns, T0 + 30);
	check_x(&r->x[1], "SOA", "zone.test", 0);
	/* The last transfer of a connection ends at close. */
	l7r_feed(r, EG, T0 + 60, q, lq);
	l7r_feed(r, IN, T0 + 70, a1, l1);
	l7r_feed(r, IN, T0 + 80, a3, l3);
	st = l7r_finish(r, T0 + 90);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[2].resp_bytes, l1 + l3);
	cr_assert_eq(r->x[2].end_ns, T0 + 80);
	cr_assert_eq(r->x[2].flags, 0);
	cr_assert_eq(st.responses, 6);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(dns, pending_limit_drops_and_counts)
{
	struct l7r_run *r = l7r_new_flags(ops, L7_F_DATAGRAM);
	uint8_t q[512];
	size_t lq = 0;
	struct l7_stats st;

	for (unsigned i = 0; i < 100; i++) {
		lq = dns_msg(q, i, QF, "many.example", 1, 0);
		l7r_feed(r, EG, T0 + i, q, lq);
	}
	cr_assert_eq(r->n, 0);
	ops->stats(r->c, &st);
	cr_assert_eq(st.requests, 100);
	cr_assert_eq(st.requests_dropped, 36);
	for (unsigned i = 0; i < 100; i++) {
		size_t la = dns_msg(q, i, RF(0), "many.example", 1, 1);

		l7r_feed(r, IN, T0 + 1000 + i, q, la);
	}
	/* 64 answered, 20 answers with no query left, the last 16 dropped queries recalled. */
	st = l7r_finish(r, T0 + 2000);
	cr_assert_eq(r->n, 84);
	for (unsigned i = 0; i < 64; i++)
		cr_assert_eq(r->x[i].flags, 0);
	for (unsigned i = 64; i < 84; i++)
		cr_assert_eq(r->x[i].flags, L7_F_NO_REQUEST);
	cr_assert_eq(st.orphan_responses, 20);
	cr_assert_eq(st.responses_dropped, 16);
	cr_assert_eq(st.bytes_unattributed, 36 * lq + 16 * (lq + 16));
	l7r_free(r);
}

Test(dns, bad_arguments)
{
	void *c = ops->new_conn(0);
	uint8_t b[4] = { 0 };
	struct l7_stats st;

	cr_assert_str_eq(ops->name, "dns");
	cr_assert(c);
	cr_assert_eq(ops->feed(c, EG, 1, b, 5, 4), -EINVAL);
	cr_assert_eq(ops->feed(c, EG, 1, NULL, 1, 4), -EINVAL);
	cr_assert_eq(ops->feed(c, (enum l7_dir)2, 1, b, 4, 4), -EINVAL);
	cr_assert_eq(ops->feed(NULL, EG, 1, b, 4, 4), -EINVAL);
	cr_assert_eq(ops->lost(c, (enum l7_dir) - 1, 4), -EINVAL);
	cr_assert_eq(ops->feed(c, EG, 1, NULL, 0, 4), 0);
	ops->stats(c, &st);
	cr_assert_eq(st.segments, 1);
	cr_assert_eq(st.gap_bytes, 4);
	cr_assert_eq(ops->role(NULL), L7_ROLE_UNKNOWN);
	cr_assert_eq(ops->next(NULL, NULL), 0);
	ops->stats(NULL, &st);
	ops->close(NULL, 1);
	ops->close(c, 2);
	ops->close(c, 3);
	cr_assert_eq(ops->feed(c, EG, 4, b, 4, 4), -EPIPE);
	ops->stats(c, &st);
	cr_assert_eq(st.bytes_unattributed, st.bytes_seen);
	ops->free_conn(c);
	ops->free_conn(NULL);
}
