// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/mongo.c: recorded conversations of real drivers with a real wire server (pymongo
 * 3.11 and npm mongodb 7.9 against MockupDB, tests/unit/data/mongo), fed whole, split at every
 * byte and from the server's side; then hand-built messages for what the recordings lack:
 * exhaust streams, out-of-order and orphan replies, legacy opcodes, truncation by the capture
 * bound, hostile lengths, losses and the pending limit. Every run closes the connection and
 * checks that every byte fed is in an exchange or counted unattributed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7.h"
#include "shipper/network/protocols/l7msg.h"
#include "tests/unit/l7_build.h"
#include "tests/unit/l7_replay.h"

#define EG L7_EGRESS
#define IN L7_INGRESS
#define OPS (&l7_mongo_ops)

/* --- building messages --- */

static size_t doc_begin(struct l7b *b)
{
	size_t at = b->n;

	l7b_le(b, 0, 4);
	return at;
}

static void doc_end(struct l7b *b, size_t at)
{
	l7b_le(b, 0, 1);
	l7b_patch_le(b, at, (uint32_t)(b->n - at), 4);
}

static void key(struct l7b *b, uint8_t type, const char *name)
{
	l7b_le(b, type, 1);
	l7b_put(b, name, strlen(name) + 1);
}

static void el_str(struct l7b *b, const char *name, const char *v)
{
	key(b, 0x02, name);
	l7b_le(b, (uint32_t)strlen(v) + 1, 4);
	l7b_put(b, v, strlen(v) + 1);
}

static void el_i32(struct l7b *b, const char *name, int32_t v)
{
	key(b, 0x10, name);
	l7b_le(b, (uint32_t)v, 4);
}

static void el_i64(struct l7b *b, const char *name, int64_t v)
{
	key(b, 0x12, name);
	l7b_le(b, (uint64_t)v, 8);
}

static void el_double(struct l7b *b, const char *name, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	key(b, 0x01, name);
	l7b_le(b, bits, 8);
}

static void el_bool(struct l7b *b, const char *name, int v)
{
	key(b, 0x08, name);
	l7b_le(b, (uint8_t)v, 1);
}

static size_t msg_begin(struct l7b *b, uint32_t id, uint32_t to, uint32_t opcode)
{
	size_t at = b->n;

	l7b_le(b, 0, 4);
	l7b_le(b, id, 4);
	l7b_le(b, to, 4);
	l7b_le(b, opcode, 4);
	return at;
}

static void msg_end(struct l7b *b, size_t at)
{
	l7b_patch_le(b, at, (uint32_t)(b->n - at), 4);
}

/* OP_MSG {cmd: coll, $db: "test"} (coll NULL: cmd: 1). */
static void op_msg_cmd(struct l7b *b, uint32_t id, uint32_t flags, const char *cmd,
		       const char *coll)
{
	size_t m = msg_begin(b, id, 0, 2013), d;

	l7b_le(b, flags, 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	if (coll)
		el_str(b, cmd, coll);
	else
		el_i32(b, cmd, 1);
	el_str(b, "$db", "test");
	doc_end(b, d);
	msg_end(b, m);
}

/* OP_MSG reply {ok: ok, [code: code]} as a double, as servers write it. */
static void op_msg_ok(struct l7b *b, uint32_t id, uint32_t to, uint32_t flags, double ok,
		      int32_t code)
{
	size_t m = msg_begin(b, id, to, 2013), d;

	l7b_le(b, flags, 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	el_double(b, "ok", ok);
	if (code) {
		el_str(b, "errmsg", "failed");
		el_i32(b, "code", code);
	}
	doc_end(b, d);
	msg_end(b, m);
}

TestSuite(mongo);

/* --- recordings --- */

Test(mongo, pymongo_recording)
{
	struct l7r_rec *rec = l7r_load("mongo", "pymongo");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	static const struct {
		const char *op, *target;
		int32_t code;
		uint64_t req, resp;
		/* clang-format off */
	} want[] = {
		/* the handshake: legacy OP_QUERY on admin.$cmd, OP_REPLY */
		{ "ismaster", "", 0, 272, 272 },
		{ "ping", "", 0, 135, 34 },
		{ "insert", "k", 0, 184, 41 },
		{ "find", "k", 0, 157, 127 },
		{ "bogus", "", 59, 136, 111 },
		{ "insert", "dup", 11000, 171, 127 },
		{ "endSessions", "", 0, 141, 34 },
	};
	/* clang-format on */
	struct l7_stats st;

	cr_assert_eq(r->n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < r->n; i++) {
		cr_assert_str_eq(r->x[i].op, want[i].op, "exchange %zu", i);
		cr_assert_str_eq(r->x[i].target, want[i].target, "exchange %zu", i);
		cr_assert_eq(r->x[i].code, want[i].code, "exchange %zu", i);
		cr_assert_eq(r->x[i].error, want[i].code != 0, "exchange %zu", i);
		cr_assert_eq(r->x[i].req_bytes, want[i].req, "exchange %zu", i);
		cr_assert_eq(r->x[i].resp_bytes, want[i].resp, "exchange %zu", i);
		cr_assert_eq(r->x[i].flags, 0, "exchange %zu", i);
		cr_assert_eq(r->x[i].req_dir, EG);
		cr_assert_eq(r->x[i].start_ns, (2 * i + 1) * L7R_TICK);
		cr_assert_eq(r->x[i].end_ns, (2 * i + 2) * L7R_TICK);
	}
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	r->ops->stats(r->c, &st);
	cr_assert_eq(st.bytes_seen, rec->bytes);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.requests, 7);
	cr_assert_eq(st.responses, 7);
	cr_assert_eq(st.malformed + st.resyncs + st.orphan_responses + st.unanswered, 0);
	l7r_free(r);
	l7r_rec_free(rec);
}

Test(mongo, node_driver_recording)
{
	struct l7r_rec *rec = l7r_load("mongo", "node");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7_stats st;

	cr_assert_eq(r->n, 8);
	cr_assert_str_eq(r->x[0].op, "ismaster");
	cr_assert_str_eq(r->x[1].op, "ping");
	cr_assert_str_eq(r->x[2].op, "insert");
	cr_assert_str_eq(r->x[2].target, "k");
	cr_assert_str_eq(r->x[3].op, "find");
	cr_assert_eq(r->x[3].resp_bytes, 127);
	cr_assert_str_eq(r->x[4].op, "bogus");
	cr_assert_eq(r->x[4].code, 59);
	cr_assert_eq(r->x[4].error, 1);
	cr_assert_str_eq(r->x[5].target, "dup");
	cr_assert_eq(r->x[5].code, 11000);
	cr_assert_eq(r->x[5].error, 1);
	/* insert with {w: 0} and endSessions: moreToCome, nothing comes back */
	cr_assert_str_eq(r->x[6].op, "insert");
	cr_assert_eq(r->x[6].flags, L7_F_NO_REPLY_EXPECTED);
	cr_assert_eq(r->x[6].resp_bytes, 0);
	cr_assert_eq(r->x[6].req_bytes, 138);
	cr_assert_eq(r->x[6].start_ns, r->x[6].end_ns);
	cr_assert_str_eq(r->x[7].op, "endSessions");
	cr_assert_eq(r->x[7].flags, L7_F_NO_REPLY_EXPECTED);
	r->ops->stats(r->c, &st);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.requests, 8);
	cr_assert_eq(st.responses, 6);
	cr_assert_eq(st.unanswered, 0);
	l7r_free(r);
	l7r_rec_free(rec);
}


Test(mongo, server_side)
{
	struct l7r_rec *rec = l7r_load("mongo", "pymongo");
	struct l7r_run *cl = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7r_run *sv = l7r_play(OPS, rec, L7R_PLAY(.as_server = true));

	cr_assert_eq(sv->ops->role(sv->c), L7_ROLE_SERVER);
	cr_assert_eq(sv->n, cl->n);
	for (size_t i = 0; i < sv->n; i++) {
		cr_assert_eq(sv->x[i].req_dir, IN);
		cr_assert_str_eq(sv->x[i].op, cl->x[i].op);
		cr_assert_eq(sv->x[i].resp_bytes, cl->x[i].resp_bytes);
		cr_assert_eq(sv->x[i].code, cl->x[i].code);
	}
	l7r_free(cl);
	l7r_free(sv);
	l7r_rec_free(rec);
}

/* --- hand-built --- */

Test(mongo, exhaust_stream_is_one_exchange)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new(), *b = l7b_new(), *c = l7b_new();
	struct l7_stats st;

	/* getMore with exhaustAllowed; replies chained by requestID, the last without moreToCome */
	op_msg_cmd(q, 100, 1u << 16, "getMore", NULL);
	op_msg_ok(a, 5000, 100, 2, 1, 0);
	op_msg_ok(b, 5001, 5000, 2, 1, 0);
	op_msg_ok(c, 5002, 5001, 0, 1, 0);
	l7b_feed(r, EG, 1, q);
	l7b_feed(r, IN, 2, a);
	l7b_feed(r, IN, 3, b);
	cr_assert_eq(r->n, 0);
	l7b_feed(r, IN, 4, c);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "getMore");
	cr_assert_eq(r->x[0].resp_bytes, a->n + b->n + c->n);
	cr_assert_eq(r->x[0].end_ns, 4);
	cr_assert_eq(r->x[0].flags, 0);

	/* A stream the connection's end cuts: what came is kept, flagged. */
	l7b_feed(r, EG, 5, q);
	a->n = 0;
	op_msg_ok(a, 6000, 100, 2, 1, 0);
	l7b_feed(r, IN, 6, a);
	st = l7r_finish(r, 9);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].resp_bytes, a->n);
	cr_assert_eq(r->x[1].end_ns, 6);
	cr_assert_eq(r->x[1].flags, L7_F_RESP_TRUNCATED);
	cr_assert_eq(st.responses, 4);
	cr_assert_eq(st.unanswered, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(q);
	free(a);
	free(b);
	free(c);
	l7r_free(r);
}

Test(mongo, paired_by_response_to)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new();
	struct l7_stats st;
	size_t n901;

	op_msg_cmd(q, 1, 0, "find", "one");
	op_msg_cmd(q, 2, 0, "find", "two");
	op_msg_cmd(q, 3, 0, "find", "three");
	l7b_feed(r, EG, 1, q);
	/* 2's reply: FIFO would give it to 1 */
	op_msg_ok(a, 900, 2, 0, 1, 0);
	l7b_feed(r, IN, 2, a);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[0].target, "one");
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].end_ns, 2);
	cr_assert_str_eq(r->x[1].target, "two");
	cr_assert_eq(r->x[1].flags, 0);
	cr_assert_eq(r->x[1].resp_bytes, a->n);
	/* 1's reply, late: nothing waits for it any more (popped after 3, which is older) */
	a->n = 0;
	op_msg_ok(a, 901, 1, 0, 0, 13);
	l7b_feed(r, IN, 3, a);
	n901 = a->n;
	cr_assert_eq(r->n, 2);
	/* 3's reply */
	a->n = 0;
	op_msg_ok(a, 902, 3, 0, 1, 0);
	l7b_feed(r, IN, 4, a);
	cr_assert_eq(r->n, 4);
	cr_assert_str_eq(r->x[2].target, "three");
	cr_assert_eq(r->x[2].flags, 0);
	cr_assert_eq(r->x[2].end_ns, 4);
	cr_assert_eq(r->x[3].flags, L7_F_NO_REQUEST);
	cr_assert_eq(r->x[3].code, 13);
	cr_assert_eq(r->x[3].error, 1);
	cr_assert_eq(r->x[3].req_bytes, 0);
	cr_assert_eq(r->x[3].resp_bytes, n901);
	cr_assert_eq(r->x[3].req_dir, EG);
	cr_assert_eq(r->x[3].start_ns, 3);
	cr_assert_str_eq(r->x[3].op, "");
	st = l7r_finish(r, 5);
	cr_assert_eq(st.unanswered, 1);
	cr_assert_eq(st.orphan_responses, 1);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

Test(mongo, reply_verdicts)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new();
	size_t m, d, arr, e;
	int i = 0;

	/* ok as int32 0 with a code; as bool; ok 1 with writeErrors; writeConcernError; ok 0.5 */
	for (int k = 0; k < 6; k++)
		op_msg_cmd(q, 10 + (uint32_t)k, 0, "update", "c");
	l7b_feed(r, EG, 1, q);

	m = msg_begin(a, 50, 10, 2013);
	l7b_le(a, 0, 4);
	l7b_le(a, 0, 1);
	d = doc_begin(a);
	el_i32(a, "ok", 0);
	el_i64(a, "code", 11600);
	doc_end(a, d);
	msg_end(a, m);

	m = msg_begin(a, 51, 11, 2013);
	l7b_le(a, 0, 4);
	l7b_le(a, 0, 1);
	d = doc_begin(a);
	el_bool(a, "ok", 1);
	doc_end(a, d);
	msg_end(a, m);

	m = msg_begin(a, 52, 12, 2013);
	l7b_le(a, 0, 4);
	l7b_le(a, 0, 1);
	d = doc_begin(a);
	el_i32(a, "n", 0);
	key(a, 0x04, "writeErrors");
	arr = doc_begin(a);
	key(a, 0x03, "0");
	e = doc_begin(a);
	el_i32(a, "index", 0);
	el_i32(a, "code", 121);
	el_str(a, "errmsg", "Document failed validation");
	doc_end(a, e);
	key(a, 0x03, "1");
	e = doc_begin(a);
	el_i32(a, "index", 1);
	el_i32(a, "code", 11000);
	doc_end(a, e);
	doc_end(a, arr);
	el_double(a, "ok", 1);
	doc_end(a, d);
	msg_end(a, m);

	m = msg_begin(a, 53, 13, 2013);
	l7b_le(a, 0, 4);
	l7b_le(a, 0, 1);
	d = doc_begin(a);
	el_i32(a, "n", 1);
	key(a, 0x03, "writeConcernError");
	e = doc_begin(a);
	el_i32(a, "code", 64);
	el_str(a, "errmsg", "waiting for replication timed out");
	doc_end(a, e);
	el_double(a, "ok", 1);
	doc_end(a, d);
	msg_end(a, m);

	m = msg_begin(a, 54, 14, 2013);
	l7b_le(a, 0, 4);
	l7b_le(a, 0, 1);
	d = doc_begin(a);
	el_double(a, "ok", 0.5);
	doc_end(a, d);
	msg_end(a, m);

	/* ok never captured: the reply's end is past the capture */
	m = msg_begin(a, 55, 15, 2013);
	l7b_le(a, 0, 4);
	l7b_le(a, 0, 1);
	d = doc_begin(a);
	key(a, 0x05, "blob");
	l7b_le(a, 3000, 4);
	l7b_le(a, 0, 1);
	memset(a->b + a->n, 'z', 3000);
	a->n += 3000;
	el_double(a, "ok", 0);
	doc_end(a, d);
	msg_end(a, m);

	l7r_seg(r, IN, 2, a->b, a->n - 100, a->n);
	cr_assert_eq(r->n, 6);
	cr_assert_eq(r->x[i].code, 11600);
	cr_assert_eq(r->x[i++].error, 1);
	cr_assert_eq(r->x[i].code, 0);
	cr_assert_eq(r->x[i++].error, 0);
	cr_assert_eq(r->x[i].code, 121);
	cr_assert_eq(r->x[i++].error, 1);
	cr_assert_eq(r->x[i].code, 64);
	cr_assert_eq(r->x[i++].error, 1);
	cr_assert_eq(r->x[i].code, 0);
	cr_assert_eq(r->x[i++].error, 1);
	cr_assert_eq(r->x[i].code, 0);
	cr_assert_eq(r->x[i].error, 0);
	cr_assert_eq(r->x[i].flags, L7_F_RESP_TRUNCATED);
	cr_assert_eq(l7r_finish(r, 3).malformed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

Test(mongo, legacy_opcodes)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *b = l7b_new();
	struct l7_stats st;
	size_t m, d, w;

	/* OP_QUERY on a collection: not a command */
	m = msg_begin(b, 1, 0, 2004);
	l7b_le(b, 0, 4);
	l7b_put(b, "shop.orders", 12);
	l7b_le(b, 0, 4);
	l7b_le(b, 1, 4);
	d = doc_begin(b);
	el_str(b, "state", "open");
	doc_end(b, d);
	msg_end(b, m);
	l7b_feed(r, EG, 1, b);
	b->n = 0;
	/* OP_REPLY with QueryFailure and {$err, code} */
	m = msg_begin(b, 2, 1, 1);
	l7b_le(b, 2, 4);
	l7b_le(b, 0, 8);
	l7b_le(b, 0, 4);
	l7b_le(b, 1, 4);
	d = doc_begin(b);
	el_str(b, "$err", "bad query");
	el_i32(b, "code", 2);
	doc_end(b, d);
	msg_end(b, m);
	l7b_feed(r, IN, 2, b);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "OP_QUERY");
	cr_assert_str_eq(r->x[0].target, "orders");
	cr_assert_eq(r->x[0].code, 2);
	cr_assert_eq(r->x[0].error, 1);

	/* a command wrapped in $query; OP_GET_MORE answered by CursorNotFound */
	b->n = 0;
	m = msg_begin(b, 3, 0, 2004);
	l7b_le(b, 0, 4);
	l7b_put(b, "admin.$cmd", 11);
	l7b_le(b, 0, 4);
	l7b_le(b, (uint32_t)-1, 4);
	d = doc_begin(b);
	key(b, 0x03, "$query");
	w = doc_begin(b);
	el_str(b, "count", "orders");
	doc_end(b, w);
	key(b, 0x03, "$readPreference");
	w = doc_begin(b);
	el_str(b, "mode", "secondary");
	doc_end(b, w);
	doc_end(b, d);
	msg_end(b, m);
	m = msg_begin(b, 4, 0, 2005);
	l7b_le(b, 0, 4);
	l7b_put(b, "shop.orders", 12);
	l7b_le(b, 0, 4);
	l7b_le(b, 77, 8);
	msg_end(b, m);
	l7b_feed(r, EG, 3, b);
	b->n = 0;
	m = msg_begin(b, 5, 3, 1);
	l7b_le(b, 8, 4); /* AwaitCapable only */
	l7b_le(b, 0, 8);
	l7b_le(b, 0, 4);
	l7b_le(b, 1, 4);
	d = doc_begin(b);
	el_double(b, "ok", 1);
	el_i32(b, "n", 4);
	doc_end(b, d);
	msg_end(b, m);
	m = msg_begin(b, 6, 4, 1);
	l7b_le(b, 1, 4);
	l7b_le(b, 0, 8);
	l7b_le(b, 0, 4);
	l7b_le(b, 0, 4);
	msg_end(b, m);
	l7b_feed(r, IN, 4, b);
	cr_assert_eq(r->n, 3);
	cr_assert_str_eq(r->x[1].op, "count");
	cr_assert_str_eq(r->x[1].target, "orders");
	cr_assert_eq(r->x[1].error, 0);
	cr_assert_str_eq(r->x[2].op, "OP_GET_MORE");
	cr_assert_str_eq(r->x[2].target, "orders");
	cr_assert_eq(r->x[2].code, 43);
	cr_assert_eq(r->x[2].error, 1);

	/* writes and kill cursors get no reply */
	b->n = 0;
	m = msg_begin(b, 7, 0, 2002);
	l7b_le(b, 0, 4);
	l7b_put(b, "shop.orders", 12);
	d = doc_begin(b);
	el_i32(b, "_id", 1);
	doc_end(b, d);
	msg_end(b, m);
	m = msg_begin(b, 8, 0, 2001);
	l7b_le(b, 0, 4);
	l7b_put(b, "shop.items", 11);
	l7b_le(b, 0, 4);
	d = doc_begin(b);
	doc_end(b, d);
	d = doc_begin(b);
	doc_end(b, d);
	msg_end(b, m);
	m = msg_begin(b, 9, 0, 2006);
	l7b_le(b, 0, 4);
	l7b_put(b, "shop.carts", 11);
	l7b_le(b, 0, 4);
	d = doc_begin(b);
	doc_end(b, d);
	msg_end(b, m);
	m = msg_begin(b, 10, 0, 2007);
	l7b_le(b, 0, 4);
	l7b_le(b, 1, 4);
	l7b_le(b, 77, 8);
	msg_end(b, m);
	l7b_feed(r, EG, 5, b);
	cr_assert_eq(r->n, 7);
	cr_assert_str_eq(r->x[3].op, "OP_INSERT");
	cr_assert_str_eq(r->x[3].target, "orders");
	cr_assert_str_eq(r->x[4].op, "OP_UPDATE");
	cr_assert_str_eq(r->x[4].target, "items");
	cr_assert_str_eq(r->x[5].op, "OP_DELETE");
	cr_assert_str_eq(r->x[5].target, "carts");
	cr_assert_str_eq(r->x[6].op, "OP_KILL_CURSORS");
	for (int i = 3; i < 7; i++) {
		cr_assert_eq(r->x[i].flags, L7_F_NO_REPLY_EXPECTED);
		cr_assert_eq(r->x[i].end_ns, 5);
	}
	st = l7r_finish(r, 6);
	cr_assert_eq(st.requests, 7);
	cr_assert_eq(st.responses, 3);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(b);
	l7r_free(r);
}

Test(mongo, compressed_checksum_and_sequences)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *b = l7b_new();
	struct l7_stats st;
	size_t m, d, s;

	/* OP_COMPRESSED both ways: counted, not parsed */
	m = msg_begin(b, 1, 0, 2012);
	l7b_le(b, 2013, 4);
	l7b_le(b, 100, 4);
	l7b_le(b, 2, 1);
	l7b_put(b, "\x01\x02\x03\x04\x05\x06", 6);
	msg_end(b, m);
	l7b_feed(r, EG, 1, b);
	b->n = 0;
	m = msg_begin(b, 2, 1, 2012);
	l7b_le(b, 2013, 4);
	l7b_le(b, 100, 4);
	l7b_le(b, 3, 1);
	l7b_put(b, "\x01\x02\x03", 3);
	msg_end(b, m);
	l7b_feed(r, IN, 2, b);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "OP_COMPRESSED");
	cr_assert_eq(r->x[0].error, 0);

	/* a document sequence before the body, and a checksum after it */
	b->n = 0;
	m = msg_begin(b, 3, 0, 2013);
	l7b_le(b, 1, 4);
	l7b_le(b, 1, 1);
	s = b->n;
	l7b_le(b, 0, 4);
	l7b_put(b, "documents", 10);
	d = doc_begin(b);
	el_i32(b, "_id", 1);
	doc_end(b, d);
	l7b_patch_le(b, s, (uint32_t)(b->n - s), 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	el_str(b, "insert", "seq");
	el_str(b, "$db", "test");
	doc_end(b, d);
	l7b_le(b, 0xdeadbeef, 4);
	msg_end(b, m);
	l7b_feed(r, EG, 3, b);
	b->n = 0;
	m = msg_begin(b, 4, 3, 2013);
	l7b_le(b, 1, 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	el_double(b, "ok", 0);
	el_i32(b, "code", 26);
	doc_end(b, d);
	l7b_le(b, 0x12345678, 4);
	msg_end(b, m);
	l7b_feed(r, IN, 4, b);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[1].op, "insert");
	cr_assert_str_eq(r->x[1].target, "seq");
	cr_assert_eq(r->x[1].code, 26);
	st = l7r_finish(r, 5);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(b);
	l7r_free(r);
}

Test(mongo, capture_cut_messages)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *b = l7b_new(), *a = l7b_new();
	struct l7_stats st;
	size_t m, d, big = 100000;
	char name[400];

	/* an insert of 100 kB, of which the worker captured 1 KiB: op and target still read */
	m = msg_begin(b, 1, 0, 2013);
	l7b_le(b, 0, 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	el_str(b, "insert", "bigcoll");
	key(b, 0x04, "documents");
	l7b_le(b, (uint32_t)big, 4);
	memset(b->b + b->n, 'x', big - 4);
	b->n += big - 4;
	el_str(b, "$db", "test");
	doc_end(b, d);
	msg_end(b, m);
	l7r_seg(r, EG, 1, b->b, 1024, b->n);
	op_msg_ok(a, 2, 1, 0, 1, 0);
	l7b_feed(r, IN, 2, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "insert");
	cr_assert_str_eq(r->x[0].target, "bigcoll");
	cr_assert_eq(r->x[0].req_bytes, b->n);
	cr_assert_eq(r->x[0].flags, L7_F_REQ_TRUNCATED);

	/* a collection name cut by the capture, and one over the target's bound */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	b->n = 0;
	op_msg_cmd(b, 3, 0, "find", name);
	l7r_seg(r, EG, 3, b->b, 16 + 5 + 4 + 1 + 5 + 4 + 10, b->n);
	b->n = 0;
	op_msg_cmd(b, 4, 0, "find", name);
	l7b_feed(r, EG, 4, b);
	a->n = 0;
	op_msg_ok(a, 5, 3, 0, 1, 0);
	op_msg_ok(a, 6, 4, 0, 1, 0);
	l7b_feed(r, IN, 5, a);
	cr_assert_eq(r->n, 3);
	cr_assert_str_eq(r->x[1].target, "nnnnnnnnnn");
	cr_assert_eq(r->x[1].flags, L7_F_TARGET_TRUNCATED | L7_F_REQ_TRUNCATED);
	cr_assert_eq(strlen(r->x[2].target), L7_TARGET_MAX);
	cr_assert_eq(r->x[2].flags, L7_F_TARGET_TRUNCATED);

	/* a header alone captured: still one exchange, op unknown past the header */
	b->n = 0;
	op_msg_cmd(b, 7, 0, "ping", NULL);
	l7r_seg(r, EG, 6, b->b, 16, b->n);
	a->n = 0;
	op_msg_ok(a, 8, 7, 0, 1, 0);
	l7b_feed(r, IN, 7, a);
	cr_assert_eq(r->n, 4);
	cr_assert_str_eq(r->x[3].op, "OP_MSG");
	st = l7r_finish(r, 8);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(b);
	free(a);
	l7r_free(r);
}

Test(mongo, hostile_lengths)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *b = l7b_new(), *ok = l7b_new();
	struct l7_stats st;
	size_t m, d;
	uint32_t fields[][4] = {
		{ 10, 1, 0, 2013 },	     /* shorter than a header */
		{ 48000001, 1, 0, 2013 },    /* over maxMessageSizeBytes */
		{ 0xffffff00u, 1, 0, 2013 }, /* negative */
		{ 100, 1, 0, 2010 },	     /* no such opcode */
		{ 100, 1, 7, 2004 },	     /* a legacy request answering something */
		{ 30, 1, 0, 2013 },	     /* unknown required flag bit, below */
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		b->n = 0;
		for (int k = 0; k < 4; k++)
			l7b_le(b, fields[i][k], 4);
		l7b_le(b, i == 5 ? 4 : 0, 4);
		l7b_le(b, 0, 1);
		memset(b->b + b->n, 0, 9);
		b->n += 9;
		l7b_feed(r, EG, 1 + i, b);
	}
	/* the next segment start that is a message is taken */
	op_msg_cmd(ok, 42, 0, "ping", NULL);
	l7b_feed(r, EG, 10, ok);
	ok->n = 0;
	op_msg_ok(ok, 43, 42, 0, 1, 0);
	l7b_feed(r, IN, 11, ok);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "ping");

	/* BSON lengths that do not fit the message: framed, counted malformed */
	b->n = 0;
	m = msg_begin(b, 50, 0, 2013);
	l7b_le(b, 0, 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	el_str(b, "find", "x");
	doc_end(b, d);
	msg_end(b, m);
	l7b_patch_le(b, d, 5000, 4);
	l7b_feed(r, EG, 12, b);
	b->n = 0;
	m = msg_begin(b, 51, 0, 2013);
	l7b_le(b, 0, 4);
	l7b_le(b, 0, 1);
	d = doc_begin(b);
	key(b, 0x02, "find");
	l7b_le(b, 0x7fffffff, 4);
	l7b_put(b, "x", 2);
	doc_end(b, d);
	msg_end(b, m);
	l7b_feed(r, EG, 13, b);
	ok->n = 0;
	op_msg_ok(ok, 60, 50, 0, 1, 0);
	op_msg_ok(ok, 61, 51, 0, 1, 0);
	l7b_feed(r, IN, 14, ok);
	cr_assert_eq(r->n, 3);
	cr_assert_str_eq(r->x[1].op, "OP_MSG");
	cr_assert_str_eq(r->x[2].op, "OP_MSG");
	st = l7r_finish(r, 20);
	cr_assert_eq(st.malformed, 2);
	cr_assert_eq(st.requests, 3);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.dirs_abandoned, 0);
	cr_assert_eq(st.bytes_unattributed, 6 * (20 + 10));
	free(b);
	free(ok);
	l7r_free(r);
}

/* Found by fuzz_mongo: "" is a valid BSON key, and names no command. */
Test(mongo, empty_first_key)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new();

	op_msg_cmd(q, 1, 0, "", "x");
	l7b_feed(r, EG, 1, q);
	op_msg_ok(a, 2, 1, 0, 1, 0);
	l7b_feed(r, IN, 2, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "OP_MSG");
	cr_assert_str_eq(r->x[0].target, "");
	cr_assert_eq(l7r_finish(r, 3).malformed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

Test(mongo, gaps_and_losses)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new();
	struct l7_stats st;
	size_t n1;

	op_msg_cmd(q, 1, 0, "find", "c1");
	n1 = q->n;
	/* a loss of known size inside a message: sizes exact */
	l7r_seg(r, EG, 1, q->b, 40, 40);
	l7r_lost(r, EG, q->n - 50);
	l7r_seg(r, EG, 2, q->b + q->n - 10, 10, 10);
	op_msg_ok(a, 2, 1, 0, 1, 0);
	l7b_feed(r, IN, 3, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "find");
	cr_assert_eq(r->x[0].req_bytes, q->n);
	cr_assert_eq(r->x[0].flags, L7_F_REQ_TRUNCATED);

	/* a loss of unknown size: the request ends there, the next segment start resyncs */
	l7r_seg(r, EG, 4, q->b, 30, 30);
	l7r_lost(r, EG, 0);
	l7r_seg(r, EG, 5, q->b + 30, q->n - 30, q->n - 30);
	q->n = 0;
	op_msg_cmd(q, 3, 0, "find", "c3");
	l7b_feed(r, EG, 6, q);
	a->n = 0;
	op_msg_ok(a, 4, 1, 0, 1, 0);
	op_msg_ok(a, 5, 3, 0, 1, 0);
	l7b_feed(r, IN, 7, a);
	cr_assert_eq(r->n, 3);
	cr_assert_eq(r->x[1].req_bytes, 30);
	cr_assert_eq(r->x[1].flags, L7_F_REQ_TRUNCATED);
	cr_assert_eq(r->x[1].resp_bytes, a->n / 2);
	cr_assert_str_eq(r->x[2].target, "c3");
	cr_assert_eq(r->x[2].flags, 0);

	/* a gap past a message's end: the rest is skipped until a segment start */
	q->n = 0;
	op_msg_cmd(q, 6, 0, "find", "c6");
	l7r_seg(r, EG, 8, q->b, q->n, q->n + 500);
	a->n = 0;
	op_msg_ok(a, 7, 6, 0, 1, 0);
	l7b_feed(r, IN, 9, a);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(r->x[3].req_bytes, q->n);
	cr_assert_eq(r->x[3].flags, 0);
	st = l7r_finish(r, 10);
	cr_assert_eq(st.lost_segments, 2);
	cr_assert_eq(st.resyncs, 2);
	cr_assert_eq(st.gap_bytes, 500);
	/* the resumed tail of c1, the gap after c6 */
	cr_assert_eq(st.bytes_unattributed, (n1 - 30) + 500);
	free(q);
	free(a);
	l7r_free(r);
}

/* Found by fuzz_mongo: a reply whose last bytes are lost after its request was sent. */
Test(mongo, loss_timed_by_the_last_segment)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new();

	op_msg_ok(a, 2, 1, 0, 1, 0);
	l7r_seg(r, IN, 5, a->b, 20, 20);
	op_msg_cmd(q, 1, 0, "ping", NULL);
	l7b_feed(r, EG, 10, q);
	l7r_lost(r, IN, a->n - 20);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "ping");
	cr_assert_eq(r->x[0].start_ns, 10);
	cr_assert_eq(r->x[0].end_ns, 10);
	cr_assert_eq(r->x[0].resp_bytes, a->n);
	cr_assert_eq(r->x[0].flags, L7_F_RESP_TRUNCATED);
	l7r_finish(r, 11);
	free(q);
	free(a);
	l7r_free(r);
}

Test(mongo, pending_limit)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b *q = l7b_new(), *a = l7b_new();
	struct l7_stats st;

	for (uint32_t i = 1; i <= 100; i++)
		op_msg_cmd(q, i, 0, "find", "p");
	l7b_feed(r, EG, 1, q);
	cr_assert_eq(r->n, 0);
	for (uint32_t i = 1; i <= 100; i++) {
		a->n = 0;
		op_msg_ok(a, 1000 + i, i, 0, 1, 0);
		l7b_feed(r, IN, 2, a);
	}
	st = l7r_finish(r, 3);
	/* 64 answered, 20 replies to requests dropped too long ago to be known: orphans */
	cr_assert_eq(r->n, L7_MAX_PENDING + 20);
	for (size_t i = 0; i < r->n; i++)
		cr_assert_eq(r->x[i].flags, i < L7_MAX_PENDING ? 0 : L7_F_NO_REQUEST);
	cr_assert_eq(st.requests, 100);
	cr_assert_eq(st.requests_dropped, 100 - L7_MAX_PENDING);
	/* the replies to the last L7MSG_DROPPED_IDS dropped are known as such */
	cr_assert_eq(st.responses_dropped, L7MSG_DROPPED_IDS);
	cr_assert_eq(st.orphan_responses, 100 - L7_MAX_PENDING - L7MSG_DROPPED_IDS);
	cr_assert_eq(st.bytes_unattributed,
		     (q->n / 100) * (100 - L7_MAX_PENDING) + a->n * L7MSG_DROPPED_IDS);
	free(q);
	free(a);
	l7r_free(r);
}

Test(mongo, garbage_direction_abandoned)
{
	struct l7r_run *r = l7r_new(OPS);
	static const uint8_t junk[32] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct l7b *q = l7b_new();
	struct l7_stats st;

	for (int i = 0; i < 20; i++)
		l7r_seg(r, EG, 1, junk, sizeof(junk), sizeof(junk));
	op_msg_cmd(q, 1, 0, "ping", NULL);
	l7b_feed(r, EG, 2, q);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_UNKNOWN);
	st = l7r_finish(r, 3);
	cr_assert_eq(st.dirs_abandoned, 1);
	cr_assert_eq(r->n, 0);
	cr_assert_eq(st.bytes_unattributed, 20 * sizeof(junk) + q->n);
	free(q);
	l7r_free(r);
}

Test(mongo, hand_built_split_anywhere)
{
	struct l7r_rec *rec = l7r_rec_new();
	struct l7b *q = l7b_new(), *a = l7b_new();

	op_msg_cmd(q, 1, 0, "find", "a");
	op_msg_cmd(q, 2, 2, "insert", "b");
	op_msg_cmd(q, 3, 1u << 16, "getMore", NULL);
	op_msg_ok(a, 10, 1, 0, 0, 50);
	op_msg_ok(a, 11, 3, 2, 1, 0);
	op_msg_ok(a, 12, 11, 0, 1, 0);
	l7r_rec_add(rec, true, q->b, q->n);
	l7r_rec_add(rec, false, a->b, a->n);
	l7r_all_splits(OPS, rec, "hand-built");
	l7r_rec_free(rec);
	free(q);
	free(a);
}

Test(mongo, bad_arguments)
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
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 1, 1), -EPIPE);
	OPS->free_conn(c);
	OPS->free_conn(NULL);
	errno = 0;
	cr_assert_null(OPS->new_conn(L7_F_DATAGRAM));
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(OPS->name, "mongodb");
}
