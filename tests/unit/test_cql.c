// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/cql.c: real conversations of the DataStax python driver and npm cassandra-driver
 * with tests/tools/cql_responder.py (recorded by tests/tools/tcp_record.py --per-conn into
 * tests/unit/data/cql/), fed whole, split at every byte, from the middle, as client and as
 * server; hand-made frames for flags, v5, compression, gaps, losses, garbage and bounds.
 * Every run closes and checks that every byte fed is in an exchange or counted unattributed.
 */
#include "shipper/network/protocols/cql.h"
#include "tests/unit/l7_build.h"
#include "tests/unit/l7_replay.h"

#define OPS (&l7_cql_ops)
#define EG L7_EGRESS
#define IN L7_INGRESS

static struct cql_stats cq_stats(const struct l7r_run *r)
{
	struct cql_stats cq;

	cr_assert_eq(cql__stats(r->c, &cq), 0);
	return cq;
}

static struct l7_stats l7_stats(const struct l7r_run *r)
{
	struct l7_stats st;

	r->ops->stats(r->c, &st);
	return st;
}

static void check_x(const struct l7_exchange *x, const char *op, const char *target, uint64_t req,
		    uint64_t resp, int32_t code, bool error, uint32_t flags)
{
	cr_assert_str_eq(x->op, op);
	cr_assert_str_eq(x->target, target);
	cr_assert_eq(x->req_bytes, req, "%s %s: req_bytes %llu", op, target,
		     (unsigned long long)x->req_bytes);
	cr_assert_eq(x->resp_bytes, resp, "%s %s: resp_bytes %llu", op, target,
		     (unsigned long long)x->resp_bytes);
	cr_assert_eq(x->code, code, "%s %s: code %#x", op, target, x->code);
	cr_assert_eq(x->error, error);
	cr_assert_eq(x->flags, flags, "%s %s: flags %#x", op, target, x->flags);
}

/* --- hand-made frames --- */

/* A frame: its 9-byte header (version, flags, stream, opcode, length) and its body. */
static void put(struct l7b *b, uint8_t ver, uint8_t flags, int16_t stream, uint8_t op,
		const void *body, size_t n)
{
	l7b_be(b, ver, 1);
	l7b_be(b, flags, 1);
	l7b_be(b, (uint16_t)stream, 2);
	l7b_be(b, op, 1);
	l7b_be(b, n, 4);
	l7b_put(b, body, n);
}

#define REQ(b, stream, op, lit) put(b, 0x04, 0, stream, op, lit, sizeof(lit) - 1)
#define RESP(b, stream, op, lit) put(b, 0x84, 0, stream, op, lit, sizeof(lit) - 1)

#define QUERY 0x07
#define RESULT 0x08
#define PREPARE 0x09
#define EXECUTE 0x0a
#define ERROR 0x00
/* a QUERY body: [long string], consistency ONE, no flags */
#define Q_SELECT "\0\0\0\x08SELECT 1\0\x01\0"
#define VOID "\0\0\0\x01"
#define INVALID            \
	"\0\0\x22\0\0\x03" \
	"bad"

TestSuite(cql);

/* --- real conversations --- */

static const char *const ks_rows = "SELECT v FROM t WHERE k = ?";
static const char *const ins = "INSERT INTO t (k, v) VALUES (?, 7)";

Test(cql, python_session)
{
	struct l7r_rec *rec = l7r_load("cql", "session");

	for (int as_server = 0; as_server < 2; as_server++) {
		struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(.as_server = as_server));
		struct l7_stats st = l7_stats(r);

		cr_assert_eq(r->ops->role(r->c), as_server ? L7_ROLE_SERVER : L7_ROLE_CLIENT);
		cr_assert_eq(r->n, 17);
		check_x(&r->x[0], "OPTIONS", "", 9, 81, 0, false, 0);
		check_x(&r->x[1], "STARTUP", "", 92, 9, 0, false, 0);
		/* RESULT Set_keyspace */
		check_x(&r->x[2], "QUERY", "USE ks", 34, 17, 0, false, 0);
		check_x(&r->x[3], "QUERY", "USE \"ks\"", 24, 17, 0, false, 0);
		/* Rows, Void, Prepared (the id is remembered), Rows of the EXECUTE */
		check_x(&r->x[4], "QUERY", "SELECT v FROM t WHERE k = 1", 55, 45, 0, false, 0);
		check_x(&r->x[5], "QUERY", "INSERT INTO t (k, v) VALUES (1, 42)", 63, 13, 0, false,
			0);
		check_x(&r->x[6], "PREPARE", ks_rows, 40, 77, 0, false, 0);
		check_x(&r->x[7], "EXECUTE", ks_rows, 52, 45, 0, false, 0);
		check_x(&r->x[8], "PREPARE", ins, 47, 65, 0, false, 0);
		check_x(&r->x[9], "EXECUTE", ins, 52, 13, 0, false, 0);
		check_x(&r->x[10], "QUERY", "SELECT * FROM nosuchtable", 53, 45, 0x2200, true, 0);
		/* stream 12 was answered before stream 11: exchanges come out as they complete */
		check_x(&r->x[11], "QUERY", "SELECT v FROM t WHERE k = 2", 55, 45, 0, false, 0);
		check_x(&r->x[12], "QUERY",
			"SELECT v FROM t WHERE k = 1 AND sleep = 1 ALLOW FILTERING", 85, 45, 0,
			false, 0);
		cr_assert_eq(r->x[11].start_ns, 24000);
		cr_assert_eq(r->x[11].end_ns, 25000);
		cr_assert_eq(r->x[12].start_ns, 23000);
		cr_assert_eq(r->x[12].end_ns, 26000);
		/* its first statement is a prepared id */
		check_x(&r->x[13], "BATCH", ins, 93, 13, 0, false, 0);
		/* Schema_change, then the driver's schema agreement queries */
		check_x(&r->x[14], "QUERY", "CREATE TABLE IF NOT EXISTS ks.t2 (k int PRIMARY KEY)",
			80, 36, 0, false, 0);
		check_x(&r->x[16], "QUERY",
			"SELECT schema_version FROM system.local WHERE key='local'", 73, 448, 0,
			false, 0);
		for (size_t i = 0; i < r->n; i++)
			cr_assert_eq(r->x[i].req_dir, as_server ? IN : EG);
		cr_assert_eq(st.bytes_unattributed, 0);
		cr_assert_eq(st.bytes_seen, rec->bytes);
		cr_assert_eq(st.requests + st.responses, 34);
		cr_assert_eq(st.resyncs + st.malformed + st.orphan_responses + st.unanswered, 0);
		cr_assert_eq(cq_stats(r).prepared_unknown, 0);
		l7r_free(r);
	}
	l7r_rec_free(rec);
}

Test(cql, python_control_connection_event)
{
	struct l7r_rec *rec = l7r_load("cql", "control");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7_stats st = l7_stats(r);

	cr_assert_eq(r->n, 6);
	check_x(&r->x[2], "REGISTER", "", 58, 9, 0, false, 0);
	/* Cassandra 3 has no system.peers_v2: the driver falls back on system.peers */
	cr_assert_eq(r->x[3].code, 0x2200);
	cr_assert_eq(r->x[3].error, 1);
	cr_assert_eq(r->x[3].resp_bytes, 42);
	check_x(&r->x[4], "QUERY",
		"SELECT host_id, cluster_name, data_center, rack, partitioner, release_version, "
		"schema_version FROM system.local WHERE key='local'",
		145, 448, 0, false, 0);
	/* the STATUS_CHANGE pushed on stream -1 after READY, in the same segment */
	cr_assert_eq(cq_stats(r).events, 1);
	cr_assert_eq(st.bytes_unattributed, 9 + 28);
	cr_assert_eq(st.responses, 6);
	l7r_free(r);
	l7r_rec_free(rec);
}

#define NODE_SEL "SELECT v FROM ks.t WHERE k = ?"
#define NODE_INS "INSERT INTO ks.t (k, v) VALUES (?, ?)"

Test(cql, node_coalesced_out_of_order)
{
	struct l7r_rec *rec = l7r_load("cql", "node_session");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));

	cr_assert_eq(r->n, 14);
	check_x(&r->x[0], "STARTUP", "", 150, 9, 0, false, 0);
	check_x(&r->x[6], "EXECUTE", NODE_SEL, 52, 45, 0, false, 0);
	/* one segment of three requests on streams 0, 1 and 2; answers 1, 2, then 0 */
	cr_assert_eq(rec->seg[14].len, 88 + 50 + 52);
	check_x(&r->x[7], "PREPARE", NODE_INS, 50, 72, 0, false, 0);
	check_x(&r->x[8], "EXECUTE", NODE_SEL, 52, 45, 0, false, 0);
	/* stream 2 again once answered */
	check_x(&r->x[9], "EXECUTE", NODE_INS, 60, 13, 0, false, 0);
	check_x(&r->x[10], "QUERY", "SELECT v FROM ks.t WHERE k = 1 AND sleep = 1 ALLOW FILTERING",
		88, 45, 0, false, 0);
	for (int i = 7; i <= 8; i++) {
		cr_assert_eq(r->x[i].start_ns, 15000);
		cr_assert_eq(r->x[i].end_ns, 16000);
	}
	cr_assert_eq(r->x[10].start_ns, 15000);
	cr_assert_eq(r->x[10].end_ns, 19000);
	check_x(&r->x[11], "QUERY", "SELECT * FROM ks.nosuchtable", 56, 45, 0x2200, true, 0);
	check_x(&r->x[13], "BATCH", NODE_INS, 81, 13, 0, false, 0);
	cr_assert_eq(cq_stats(r).events, 1);
	cr_assert_eq(cq_stats(r).streams_reused, 0);
	cr_assert_eq(l7_stats(r).bytes_unattributed, 37);
	l7r_free(r);
	l7r_rec_free(rec);
}

Test(cql, negotiation_of_newer_versions)
{
	static const char *const names[] = { "negotiate_v5", "negotiate_dse" };

	for (int i = 0; i < 2; i++) {
		struct l7r_rec *rec = l7r_load("cql", names[i]);
		struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));

		/* OPTIONS as v5 (0x05) or DSE v2 (0x42), refused in a v4 frame: a protocol error */
		cr_assert_eq(rec->seg[0].data[0], i ? 0x42 : 0x05);
		cr_assert_eq(r->n, 1);
		check_x(&r->x[0], "OPTIONS", "", 9, rec->seg[1].len, 0x000a, true, 0);
		cr_assert_eq(cq_stats(r).v5_frames, i ? 0 : 1);
		cr_assert_eq(cq_stats(r).v5_switches, 0);
		l7r_free(r);
		l7r_rec_free(rec);
	}
}

/* --- starting mid-conversation --- */

Test(cql, midstream)
{
	struct l7r_rec *rec = l7r_load("cql", "session");
	struct l7r_run *whole = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(.as_server = true, .from = 8));

	/* from the first SELECT on, as the server */
	cr_assert_eq(r->n, whole->n - 4);
	for (size_t i = 0; i < r->n; i++) {
		struct l7_exchange x = whole->x[i + 4];

		x.req_dir = IN;
		cr_assert(!memcmp(&r->x[i], &x, sizeof(x)), "exchange %zu", i);
	}
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_SERVER);
	cr_assert_eq(l7_stats(r).bytes_unattributed, 0);
	l7r_free(r);

	/* from an answer whose request was not seen: an exchange with no request */
	r = l7r_play(OPS, rec, L7R_PLAY(.from = 9));
	cr_assert_eq(r->n, whole->n - 4);
	check_x(&r->x[0], "", "", 0, 45, 0, false, L7_F_NO_REQUEST);
	cr_assert_eq(r->x[0].start_ns, 10000);
	cr_assert_eq(r->x[0].req_dir, EG);
	cr_assert_eq(l7_stats(r).orphan_responses, 1);
	l7r_free(r);
	l7r_free(whole);
	l7r_rec_free(rec);
}

Test(cql, midstream_inside_a_frame)
{
	struct l7r_rec *rec = l7r_load("cql", "session");
	struct l7r_run *r = l7r_new(OPS);
	struct l7_stats st;

	/* the second half of the PREPARE result, then the rest from the EXECUTE on */
	l7r_seg(r, IN, 1, rec->seg[13].data + 30, rec->seg[13].len - 30, rec->seg[13].len - 30);
	for (size_t i = 14; i < rec->n; i++)
		l7r_seg(r, l7r_dir(&rec->seg[i], false), rec->seg[i].ts, rec->seg[i].data,
			rec->seg[i].len, rec->seg[i].len);
	st = l7r_finish(r, 100000);
	/* the EXECUTE's id was never prepared here */
	check_x(&r->x[0], "EXECUTE", "", 52, 45, 0, false, 0);
	cr_assert_eq(r->n, 10);
	cr_assert_eq(cq_stats(r).bad_starts, 1);
	cr_assert_eq(cq_stats(r).prepared_unknown, 1);
	cr_assert_eq(st.bytes_unattributed, rec->seg[13].len - 30);
	l7r_free(r);
	l7r_rec_free(rec);
}

/* --- pairing --- */

Test(cql, stream_reused_and_orphans)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	REQ(&b, 5, QUERY, Q_SELECT);
	l7b_send(r, EG, 1, &b);
	/* stream 5 again: the first one's answer was not seen */
	REQ(&b, 5, QUERY, Q_SELECT);
	l7b_send(r, EG, 2, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "QUERY", "SELECT 1", 24, 0, 0, false, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].end_ns, 2);
	RESP(&b, 5, RESULT, VOID);
	l7b_send(r, IN, 3, &b);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "QUERY", "SELECT 1", 24, 13, 0, false, 0);
	cr_assert_eq(r->x[1].start_ns, 2);
	/* an answer on a stream with nothing pending */
	RESP(&b, 6, ERROR, INVALID);
	l7b_send(r, IN, 4, &b);
	cr_assert_eq(r->n, 3);
	check_x(&r->x[2], "", "", 0, 18, 0x2200, true, L7_F_NO_REQUEST);
	/* an answer begun before its request was complete does not answer it */
	RESP(&b, 7, RESULT, VOID);
	l7r_seg(r, IN, 5, b.b, 4, 4);
	REQ(&b, 7, QUERY, Q_SELECT);
	l7r_seg(r, EG, 6, b.b + 13, 24, 24);
	l7r_seg(r, IN, 7, b.b + 4, 9, 9);
	b.n = 0;
	st = l7r_finish(r, 8);
	cr_assert_eq(r->n, 5);
	/* complete ones come out first, oldest first */
	check_x(&r->x[3], "", "", 0, 13, 0, false, L7_F_NO_REQUEST);
	cr_assert_eq(r->x[3].start_ns, 5);
	check_x(&r->x[4], "QUERY", "SELECT 1", 24, 0, 0, false, L7_F_NO_RESPONSE);
	cr_assert_eq(st.orphan_responses, 2);
	cr_assert_eq(st.unanswered, 2);
	cr_assert_eq(cq_stats(r).streams_reused, 1);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(cql, hundred_pending_answered_backwards)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	for (int16_t s = 0; s < 100; s++) {
		REQ(&b, s, QUERY, Q_SELECT);
		l7b_send(r, EG, 1, &b);
	}
	for (int16_t s = 99; s >= 0; s--) {
		RESP(&b, s, RESULT, VOID);
		l7b_send(r, IN, 2, &b);
	}
	st = l7r_finish(r, 3);
	cr_assert_eq(r->n, L7_MAX_PENDING);
	for (size_t i = 0; i < r->n; i++) {
		check_x(&r->x[i], "QUERY", "SELECT 1", 24, 13, 0, false, 0);
		cr_assert_eq(r->x[i].end_ns, 2);
	}
	cr_assert_eq(st.requests_dropped, 100 - L7_MAX_PENDING);
	cr_assert_eq(st.responses_dropped, 100 - L7_MAX_PENDING);
	cr_assert_eq(st.orphan_responses, 0);
	cr_assert_eq(st.bytes_unattributed, (100 - L7_MAX_PENDING) * (24 + 13));
	l7r_free(r);
}

Test(cql, thousand_exchanges_in_turn)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	for (uint64_t i = 0; i < 1000; i++) {
		REQ(&b, (int16_t)(i % 3), QUERY, Q_SELECT);
		l7b_send(r, EG, 2 * i, &b);
		RESP(&b, (int16_t)(i % 3), RESULT, VOID);
		l7b_send(r, IN, 2 * i + 1, &b);
		cr_assert_eq(r->popped, i + 1);
	}
	st = l7r_finish(r, 2000);
	cr_assert_eq(st.exchanges, 1000);
	cr_assert_eq(st.requests_dropped + st.bytes_unattributed + st.unanswered, 0);
	l7r_free(r);
}

Test(cql, prepared_map_is_bounded)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	uint8_t body[64];

	for (uint8_t i = 1; i <= CQL_MAX_PREPARED + 4; i++) {
		/* PREPARE "SELECT n", RESULT Prepared with the 2-byte id "P"n */
		memcpy(body, "\0\0\0\x08SELECT  ", 12);
		body[11] = (uint8_t)('A' + i);
		put(&b, 4, 0, 1, PREPARE, body, 12);
		l7b_send(r, EG, i, &b);
		memcpy(body, "\0\0\0\x04\0\x02P", 7);
		body[7] = i;
		put(&b, 0x84, 0, 1, RESULT, body, 8);
		l7b_send(r, IN, i, &b);
	}
	for (uint8_t i = 1; i <= CQL_MAX_PREPARED + 4; i += CQL_MAX_PREPARED + 3) {
		memcpy(body, "\0\x02P", 3);
		body[3] = i;
		memcpy(body + 4, "\0\x01\0", 3);
		put(&b, 4, 0, 2, EXECUTE, body, 7);
		l7b_send(r, EG, 50, &b);
		RESP(&b, 2, RESULT, VOID);
		l7b_send(r, IN, 51, &b);
	}
	l7r_finish(r, 52);
	cr_assert_eq(r->n, CQL_MAX_PREPARED + 6);
	cr_assert_str_eq(r->x[CQL_MAX_PREPARED + 4].target, "");
	cr_assert_str_eq(r->x[CQL_MAX_PREPARED + 5].target, "SELECT U");
	cr_assert_eq(cq_stats(r).prepared_evicted, 4);
	cr_assert_eq(cq_stats(r).prepared_unknown, 1);
	l7r_free(r);
}

/* --- flags, versions --- */

Test(cql, compressed_bodies_not_parsed)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	/* LZ4: a 4-byte decompressed length, then the block; looks like nothing */
	put(&b, 4, 0x01, 3, QUERY, "\0\0\0\x14\xf0\x05SELECT", 12);
	l7b_send(r, EG, 1, &b);
	put(&b, 0x84, 0x01, 3, ERROR, "\0\0\0\x08\x80\0\0\x22", 8);
	l7b_send(r, IN, 2, &b);
	put(&b, 4, 0x01, 4, QUERY, "\0\0\0\x14\xf0\x05SELECT", 12);
	l7b_send(r, EG, 3, &b);
	put(&b, 0x84, 0x01, 4, RESULT, "\0\0\0\x04\x40\0\0\0", 8);
	l7b_send(r, IN, 4, &b);
	st = l7r_finish(r, 5);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[0], "QUERY", "", 21, 17, 0, true, 0);
	check_x(&r->x[1], "QUERY", "", 21, 17, 0, false, 0);
	cr_assert_eq(cq_stats(r).compressed, 4);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(cql, tracing_warnings_custom_payload)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	static const uint8_t req[] = "\0\x01\0\x03key\0\0\0\x02vv" /* custom payload */
				     "\0\0\0\x0bSELECT x, y\0\x01\0";
	/* clang-format off */
	static const uint8_t resp[] = "0123456789abcdef"		   /* tracing id */
				      "\0\x02\0\x04warn\0\x05" "again"	   /* warnings */
				      "\0\x01\0\x01k\xff\xff\xff\xff"	   /* payload, null */
				      "\0\0\x22\0\0\x03" "bad";		   /* ERROR Invalid */
	/* clang-format on */

	/* tracing asked for, a custom payload before the body */
	put(&b, 4, 0x06, 9, QUERY, req, sizeof(req) - 1);
	l7b_send(r, EG, 1, &b);
	put(&b, 0x84, 0x0e, 9, ERROR, resp, sizeof(resp) - 1);
	l7b_send(r, IN, 2, &b);
	l7r_finish(r, 3);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "QUERY", "SELECT x, y", 9 + sizeof(req) - 1, 9 + sizeof(resp) - 1, 0x2200,
		true, 0);
	cr_assert_eq(l7_stats(r).malformed, 0);
	l7r_free(r);
}

Test(cql, v5_framing_stops_parsing)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;
	static const uint8_t segment[] = { 0x13, 0x00, 0x02, 0x5a, 0x1b, 0x3c, 0x04, 0x84, 0,
					   0,	 0,    0x08, 0,	   0,	 0,    1,    1,	   2 };

	put(&b, 5, 0, 0, 0x01,
	    "\0\x01\0\x0b"
	    "CQL_VERSION\0\x05"
	    "3.0.0",
	    22);
	l7b_send(r, EG, 1, &b);
	put(&b, 0x85, 0, 0, 0x02, "", 0);
	l7b_send(r, IN, 2, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "STARTUP", "", 31, 9, 0, false, 0);
	/* from here on, v5 segments: a 3-byte header and CRC24, payload, CRC32 */
	l7r_seg(r, EG, 3, segment, sizeof(segment), sizeof(segment));
	l7r_seg(r, IN, 4, segment, sizeof(segment), sizeof(segment));
	st = l7r_finish(r, 5);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(cq_stats(r).v5_frames, 2);
	cr_assert_eq(cq_stats(r).v5_switches, 1);
	cr_assert_eq(st.bytes_unattributed, 2 * sizeof(segment));
	cr_assert_eq(st.resyncs + cq_stats(r).bad_starts, 0);
	l7r_free(r);
}

Test(cql, auth_exchange_and_v3)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };

	put(&b, 3, 0, 0, 0x01,
	    "\0\x01\0\x0b"
	    "CQL_VERSION\0\x05"
	    "3.0.0",
	    22);
	l7b_send(r, EG, 1, &b);
	put(&b, 0x83, 0, 0, 0x03,
	    "\0\x2f"
	    "org.apache.cassandra.auth.PasswordAuthenticator",
	    49);
	l7b_send(r, IN, 2, &b);
	put(&b, 3, 0, 1, 0x0f, "\0\0\0\x0c\0user\0secret", 16);
	l7b_send(r, EG, 3, &b);
	put(&b, 0x83, 0, 1, 0x0e, "\0\0\0\x02ok", 6);
	l7b_send(r, IN, 4, &b);
	put(&b, 3, 0, 1, 0x0f, "\0\0\0\x02ok", 6);
	l7b_send(r, EG, 5, &b);
	put(&b, 0x83, 0, 1, 0x10, "\xff\xff\xff\xff", 4);
	l7b_send(r, IN, 6, &b);
	cr_assert_eq(l7r_finish(r, 7).bytes_unattributed, 0);
	cr_assert_eq(r->n, 3);
	check_x(&r->x[0], "STARTUP", "", 31, 58, 0, false, 0);
	check_x(&r->x[1], "AUTH_RESPONSE", "", 25, 15, 0, false, 0);
	check_x(&r->x[2], "AUTH_RESPONSE", "", 15, 13, 0, false, 0);
	l7r_free(r);
}

/* --- capture bounds, gaps and losses --- */

Test(cql, gap_inside_a_frame)
{
	struct l7r_run *r = l7r_new(OPS);
	static struct l7b b;
	static uint8_t rows[3000];
	struct l7_stats st;

	REQ(&b, 1, QUERY, Q_SELECT);
	l7b_send(r, EG, 1, &b);
	memcpy(rows, "\0\0\0\x02", 4);
	put(&b, 0x84, 0, 1, RESULT, rows, sizeof(rows));
	l7r_seg(r, IN, 2, b.b, 100, b.n - 1000);
	l7r_seg(r, IN, 3, b.b + b.n - 1000, 24, 1000);
	b.n = 0;
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "QUERY", "SELECT 1", 24, 3009, 0, false, L7_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[0].end_ns, 3);
	REQ(&b, 1, QUERY, Q_SELECT);
	l7b_send(r, EG, 4, &b);
	RESP(&b, 1, RESULT, VOID);
	l7b_send(r, IN, 5, &b);
	st = l7r_finish(r, 6);
	cr_assert_eq(r->x[1].flags, 0);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.gap_bytes, (3009 - 1000 - 100) + (1000 - 24));
	l7r_free(r);
}

Test(cql, gap_past_a_frame_resynchronizes)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	for (int16_t s = 1; s <= 3; s++)
		REQ(&b, s, QUERY, Q_SELECT);
	l7b_send(r, EG, 1, &b);
	/* three answers in one write, 20 bytes of it captured */
	for (int16_t s = 1; s <= 3; s++)
		RESP(&b, s, RESULT, VOID);
	l7r_seg(r, IN, 2, b.b, 20, b.n);
	b.n = 0;
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "QUERY", "SELECT 1", 24, 13, 0, false, 0);
	/* not a frame start (an answer to nothing pending), then one */
	RESP(&b, 1, RESULT, VOID);
	l7b_send(r, IN, 3, &b);
	REQ(&b, 4, QUERY, Q_SELECT);
	l7b_send(r, EG, 4, &b);
	RESP(&b, 4, ERROR, INVALID);
	l7b_send(r, IN, 5, &b);
	st = l7r_finish(r, 6);
	cr_assert_eq(r->n, 4);
	check_x(&r->x[1], "QUERY", "SELECT 1", 24, 18, 0x2200, true, 0);
	cr_assert_eq(r->x[1].start_ns, 4);
	cr_assert_eq(r->x[2].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[3].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(cq_stats(r).bad_starts, 1);
	cr_assert_eq(st.bytes_unattributed, 26 + 13);
	l7r_free(r);
}

Test(cql, lost_segment_inside_a_frame)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	REQ(&b, 1, QUERY, Q_SELECT);
	REQ(&b, 2, QUERY, Q_SELECT);
	l7b_send(r, EG, 1, &b);
	RESP(&b, 1, ERROR, INVALID);
	l7r_seg(r, IN, 2, b.b, 15, 15);
	l7r_lost(r, IN, 0);
	/* the rest of that write; then a frame longer than its write */
	l7r_seg(r, IN, 3, b.b + 15, b.n - 15, b.n - 15);
	b.n = 0;
	l7r_seg(r, IN, 4, "\x84\0\0\x02\x08\0\0\0\x64\0\0\0\x01", 13, 13);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "QUERY", "SELECT 1", 24, 15, 0x2200, true, L7_F_RESP_TRUNCATED);
	RESP(&b, 2, RESULT, VOID);
	l7b_send(r, IN, 5, &b);
	st = l7r_finish(r, 6);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "QUERY", "SELECT 1", 24, 13, 0, false, 0);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(cq_stats(r).bad_starts, 2);
	cr_assert_eq(st.lost_segments, 1);
	cr_assert_eq(st.bytes_unattributed, 3 + 13);
	l7r_free(r);
}

Test(cql, bad_header_in_a_synced_direction)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	REQ(&b, 1, QUERY, Q_SELECT);
	l7b_send(r, EG, 1, &b);
	RESP(&b, 1, RESULT, VOID);
	l7b_send(r, IN, 2, &b);
	REQ(&b, 2, QUERY, Q_SELECT);
	l7b_send(r, EG, 3, &b);
	/* a request's header where answers go, an unknown opcode, a length over the limit */
	REQ(&b, 2, QUERY, Q_SELECT);
	l7b_send(r, IN, 4, &b);
	put(&b, 0x84, 0, 2, 0x11, "", 0);
	l7b_send(r, IN, 5, &b);
	memcpy(b.b, "\x84\0\0\x02\x08\x7f\xff\xff\xff", 9);
	b.n = 9;
	l7b_send(r, IN, 6, &b);
	RESP(&b, 2, RESULT, VOID);
	l7b_send(r, IN, 7, &b);
	st = l7r_finish(r, 8);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "QUERY", "SELECT 1", 24, 13, 0, false, 0);
	cr_assert_eq(r->x[1].end_ns, 7);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(cq_stats(r).bad_starts, 2);
	cr_assert_eq(st.bytes_unattributed, 24 + 9 + 9);
	l7r_free(r);
}

Test(cql, largest_frame_by_gaps)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	uint8_t big[64] = { 0 };
	struct l7_stats st;

	REQ(&b, 1, QUERY, Q_SELECT);
	l7b_send(r, EG, 1, &b);
	memcpy(big, "\x84\0\0\x01\x08\x10\0\0\0\0\0\0\x02", 13);
	l7r_seg(r, IN, 2, big, sizeof(big), 9 + CQL_MAX_FRAME);
	st = l7r_finish(r, 3);
	check_x(&r->x[0], "QUERY", "SELECT 1", 24, 9 + CQL_MAX_FRAME, 0, false,
		L7_F_RESP_TRUNCATED);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(cql, not_cql_is_abandoned)
{
	struct l7r_run *r = l7r_new(OPS);
	const char *req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n", *resp = "HTTP/1.1 200 OK\r\n\r\n";
	struct l7_stats st;

	for (unsigned i = 0; i < CQL_MAX_BAD_STARTS; i++) {
		l7r_seg(r, EG, i, req, strlen(req), strlen(req));
		l7r_seg(r, IN, i, resp, strlen(resp), strlen(resp));
	}
	st = l7r_finish(r, 1000);
	cr_assert_eq(r->n, 0);
	cr_assert_eq(st.dirs_abandoned, 2);
	cr_assert_eq(cq_stats(r).bad_starts, CQL_MAX_BAD_STARTS);
	cr_assert_eq(st.bytes_unattributed, st.bytes_seen);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_UNKNOWN);
	l7r_free(r);
}

Test(cql, bad_arguments)
{
	void *c = OPS->new_conn(0);
	struct l7_exchange x;
	struct cql_stats cq;

	cr_assert(c);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 2, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, (enum l7_dir)2, 1, (const uint8_t *)"x", 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 0, 100), 0);
	cr_assert_eq(OPS->lost(c, (enum l7_dir) - 1, 1), -EINVAL);
	cr_assert_eq(OPS->next(c, &x), 0);
	cr_assert_eq(cql__stats(c, NULL), -EINVAL);
	cr_assert_eq(cql__stats(NULL, &cq), -EINVAL);
	OPS->close(c, 1);
	cr_assert_eq(OPS->lost(c, EG, 1), -EPIPE);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 1, 1), -EPIPE);
	OPS->free_conn(c);
	OPS->free_conn(NULL);
	errno = 0;
	cr_assert_null(OPS->new_conn(L7_F_DATAGRAM));
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(OPS->name, "cql");
}
