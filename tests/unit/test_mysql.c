// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/mysql.c: real MariaDB conversations (the mariadb CLI, mariadb-admin and npm mysql2,
 * recorded by tests/tools/tcp_record.py --per-conn into tests/unit/data/mysql/) fed whole,
 * split at every byte, from the middle, as client and as server; hand-made packets for what
 * those peers do not send (CLIENT_DEPRECATE_EOF, cursors, continuation packets, pipelining)
 * and for gaps, losses, garbage and hostile counts. Every run closes and checks that every
 * byte fed is in an exchange or counted unattributed.
 */
#include "shipper/network/protocols/mysql.h"
#include "tests/unit/l7_build.h"
#include "tests/unit/l7_replay.h"

#define OPS (&l7_mysql_ops)
#define EG L7_EGRESS
#define IN L7_INGRESS

static struct mysql_stats my_stats(const struct l7r_run *r)
{
	struct mysql_stats my;

	cr_assert_eq(mysql__stats(r->c, &my), 0);
	return my;
}

static struct l7_stats l7_stats(const struct l7r_run *r)
{
	struct l7_stats st;

	r->ops->stats(r->c, &st);
	return st;
}

static void check_x(const struct l7_exchange *x, const char *op, const char *target, uint64_t req,
		    uint64_t resp, int32_t code, uint32_t flags)
{
	cr_assert_str_eq(x->op, op);
	cr_assert_str_eq(x->target, target);
	cr_assert_eq(x->req_bytes, req, "%s %s: req_bytes %llu", op, target,
		     (unsigned long long)x->req_bytes);
	cr_assert_eq(x->resp_bytes, resp, "%s %s: resp_bytes %llu", op, target,
		     (unsigned long long)x->resp_bytes);
	cr_assert_eq(x->code, code, "%s %s: code %d", op, target, x->code);
	cr_assert_eq(x->error, code != 0);
	cr_assert_eq(x->flags, flags, "%s %s: flags %#x", op, target, x->flags);
}

/* --- hand-made packets --- */

/* A packet: its length in 3 bytes, its sequence number, its payload. */
static void put(struct l7b *b, uint8_t seq, const void *p, size_t n)
{
	l7b_le(b, n, 3);
	l7b_le(b, seq, 1);
	l7b_put(b, p, n);
}

/* A packet whose payload is a string literal (its NUL excluded). */
#define PUT(b, seq, lit) put(b, seq, lit, sizeof(lit) - 1)

#define COLDEF          \
	"\x03"          \
	"def\0\0\0\x01" \
	"a\0\0\x0c?\0\x01\0\0\0\x03\x81\0\0\0\0"
#define EOF_PKT "\xfe\0\0\x02\0"
#define OK_PKT "\0\0\0\x02\0\0\0"
/* CLIENT_DEPRECATE_EOF's end of rows: an OK packet with a 0xfe header. */
#define OK_FE "\xfe\0\0\x02\0\0\0"

/* The real greeting of MariaDB 10.11 (capabilities 0x81fff7fe: CLIENT_DEPRECATE_EOF too). */
static void greeting(struct l7r_run *r, uint64_t ts)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_query");

	l7r_seg(r, IN, ts, rec->seg[0].data, rec->seg[0].len, rec->seg[0].len);
	l7r_rec_free(rec);
}

/* A HandshakeResponse41 with these capabilities (and CLIENT_PROTOCOL_41), then the OK. */
static size_t handshake(struct l7r_run *r, uint32_t caps)
{
	uint8_t p[40] = { 0 };
	struct l7b b = { 0 };

	caps |= 0x200 | 0x8000;
	memcpy(p, &caps, 4);
	p[8] = 0x21;
	memcpy(p + 32, "u\0\0", 3);
	greeting(r, 1);
	put(&b, 1, p, 35);
	l7b_send(r, EG, 2, &b);
	PUT(&b, 2, OK_PKT);
	l7b_send(r, IN, 3, &b);
	return 104 + 39 + 11;
}

TestSuite(mysql);

/* --- real conversations --- */

Test(mysql, cli_query_insert_error)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_query");

	for (int as_server = 0; as_server < 2; as_server++) {
		struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(.as_server = as_server));
		struct l7_stats st = l7_stats(r);

		cr_assert_eq(r->ops->role(r->c), as_server ? L7_ROLE_SERVER : L7_ROLE_CLIENT);
		cr_assert_eq(r->n, 4);
		check_x(&r->x[0], "COM_QUERY", "SELECT id, name, price FROM items ORDER BY id", 50,
			213, 0, 0);
		check_x(&r->x[1], "COM_QUERY", "INSERT INTO items VALUES (4,'kiwi',0.75)", 45, 11,
			0, 0);
		check_x(&r->x[2], "COM_QUERY", "SELECT * FROM nosuchtable", 30, 51, 1146, 0);
		check_x(&r->x[3], "COM_QUIT", "", 5, 0, 0, L7_F_NO_REPLY_EXPECTED);
		cr_assert_eq(r->x[0].start_ns, 4000);
		cr_assert_eq(r->x[0].end_ns, 5000);
		cr_assert_eq(r->x[2].end_ns, 9000);
		cr_assert_eq(r->x[3].end_ns, 10000);
		for (size_t i = 0; i < r->n; i++)
			cr_assert_eq(r->x[i].req_dir, as_server ? IN : EG);
		/* greeting, HandshakeResponse and OK */
		cr_assert_eq(st.bytes_unattributed, 104 + 218 + 20);
		cr_assert_eq(st.bytes_seen, rec->bytes);
		cr_assert_eq(st.requests, 4);
		cr_assert_eq(st.responses, 3);
		cr_assert_eq(st.resyncs + st.malformed + st.orphan_responses + st.unanswered, 0);
		cr_assert_eq(my_stats(r).deprecate_eof, 0);
		cr_assert_eq(my_stats(r).midstream_syncs, 0);
		l7r_free(r);
	}
	l7r_rec_free(rec);
}

Test(mysql, cli_init_db_call_local_infile)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_call_infile");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	struct mysql_stats my = my_stats(r);

	cr_assert_eq(r->n, 7);
	/* MariaDB's metadata cache: a column count packet of 2 bytes, "metadata follows". */
	check_x(&r->x[0], "COM_QUERY", "SELECT DATABASE()", 22, 66, 0, 0);
	check_x(&r->x[1], "COM_INIT_DB", "shop", 9, 20, 0, 0);
	/* Two result sets and the CALL's own OK, SERVER_MORE_RESULTS_EXISTS between them. */
	check_x(&r->x[2], "COM_QUERY", "CALL two()", 15, 157, 0, 0);
	/* The file's packets count to the request, the progress report to the response. */
	check_x(&r->x[3], "COM_QUERY",
		"LOAD DATA LOCAL INFILE '/tmp/mycql_rec/items.csv' INTO TABLE items FIELDS "
		"TERMINATED BY ','",
		96 + 35, 29 + 29 + 59, 0, 0);
	cr_assert_eq(r->x[3].start_ns, 10000);
	cr_assert_eq(r->x[3].end_ns, 14000);
	check_x(&r->x[4], "COM_QUERY", "SELECT COUNT(*) FROM items WHERE id >= 10", 46, 65, 0, 0);
	check_x(&r->x[5], "COM_QUERY", "DELETE FROM items WHERE id >= 4", 36, 11, 0, 0);
	check_x(&r->x[6], "COM_QUIT", "", 5, 0, 0, L7_F_NO_REPLY_EXPECTED);
	cr_assert_eq(my.local_infile, 1);
	cr_assert_eq(my.progress_reports, 1);
	cr_assert_eq(l7_stats(r).bytes_unattributed, 104 + 213 + 11);
	l7r_free(r);
	l7r_rec_free(rec);
}

Test(mysql, admin_ping_statistics)
{
	struct l7r_rec *rec = l7r_load("mysql", "admin_ping");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));

	cr_assert_eq(r->n, 3);
	check_x(&r->x[0], "COM_PING", "", 5, 11, 0, 0);
	/* Its answer is a bare text packet, no OK. */
	check_x(&r->x[1], "COM_STATISTICS", "", 5, 117, 0, 0);
	check_x(&r->x[2], "COM_QUIT", "", 5, 0, 0, L7_F_NO_REPLY_EXPECTED);
	cr_assert_eq(l7_stats(r).bytes_unattributed, 104 + 218 + 11);
	l7r_free(r);
	l7r_rec_free(rec);
}

#define SEL_PS "SELECT name, price FROM items WHERE id = ?"
#define UPD_PS "UPDATE items SET price = ? WHERE id = ?"

Test(mysql, mysql2_prepared_statements)
{
	struct l7r_rec *rec = l7r_load("mysql", "mysql2_execute");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	struct mysql_stats my = my_stats(r);

	cr_assert_eq(r->n, 12);
	/* mysql2 announces query attributes MariaDB does not have: the text is plain. */
	check_x(&r->x[0], "COM_QUERY", "SELECT id, name FROM items WHERE id < 3", 44, 140, 0, 0);
	/* STMT_PREPARE_OK, 1 parameter and 2 column definitions, each followed by an EOF */
	check_x(&r->x[1], "COM_STMT_PREPARE", SEL_PS, 47, 162, 0, 0);
	check_x(&r->x[2], "COM_STMT_EXECUTE", SEL_PS, 26, 139, 0, 0);
	check_x(&r->x[3], "COM_STMT_EXECUTE", SEL_PS, 26, 133, 0, 0);
	check_x(&r->x[4], "COM_STMT_PREPARE", UPD_PS, 44, 81, 0, 0);
	check_x(&r->x[5], "COM_STMT_EXECUTE", UPD_PS, 36, 52, 0, 0);
	check_x(&r->x[6], "COM_QUERY", "SELECT * FROM nosuchtable", 30, 51, 1146, 0);
	check_x(&r->x[7], "COM_STMT_PREPARE", "SELECT * FROM nosuchtable WHERE id = ?", 43, 51,
		1146, 0);
	/* mysql2 closes statement 1 twice: the second time it is no longer known. */
	check_x(&r->x[8], "COM_STMT_CLOSE", SEL_PS, 9, 0, 0, L7_F_NO_REPLY_EXPECTED);
	check_x(&r->x[9], "COM_STMT_CLOSE", "", 9, 0, 0, L7_F_NO_REPLY_EXPECTED);
	check_x(&r->x[10], "COM_PING", "", 5, 11, 0, 0);
	check_x(&r->x[11], "COM_QUIT", "", 5, 0, 0, L7_F_NO_REPLY_EXPECTED);
	cr_assert_eq(my.stmts_unknown, 1);
	cr_assert_eq(my.deprecate_eof, 0);
	cr_assert_eq(l7_stats(r).bytes_unattributed, 104 + 140 + 20);
	l7r_free(r);
	l7r_rec_free(rec);
}

Test(mysql, mysql2_empty_result_and_call)
{
	struct l7r_rec *rec = l7r_load("mysql", "mysql2_call");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(.as_server = true));

	cr_assert_eq(r->ops->role(r->c), L7_ROLE_SERVER);
	cr_assert_eq(r->n, 6);
	check_x(&r->x[1], "COM_QUERY", "SELECT id FROM items WHERE id > 100", 40, 68, 0, 0);
	check_x(&r->x[3], "COM_STMT_EXECUTE", SEL_PS, 26, 139, 0, 0);
	check_x(&r->x[4], "COM_QUERY", "CALL two()", 15, 155, 0, 0);
	cr_assert_eq(r->x[4].req_dir, IN);
	l7r_free(r);
	l7r_rec_free(rec);
}

/* --- TLS and compression --- */

Test(mysql, ssl_request_stops_parsing)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_tls");
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7_stats st = l7_stats(r);

	/* greeting, a 32-byte SSLRequest, then TLS 1.3 records that frame as garbage */
	cr_assert_eq(rec->seg[1].len, 36);
	cr_assert_eq(r->n, 0);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(my_stats(r).tls_upgrades, 1);
	cr_assert_eq(st.bytes_unattributed, st.bytes_seen);
	cr_assert_eq(st.bytes_seen, rec->bytes);
	cr_assert_eq(st.requests + st.responses + st.resyncs + st.malformed, 0);
	l7r_free(r);
	l7r_rec_free(rec);
}

/*
 * What the TLS probes give a new parser for such a connection: the plaintext from the
 * HandshakeResponse on, whose sequence ids follow the SSLRequest's. Made from the plain
 * conversation: no greeting, the client's response numbered 2 and the server's OK 3.
 */
Test(mysql, tls_plaintext_starts_at_handshake_response)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_query");
	struct l7r_run *whole = l7r_play(OPS, rec, L7R_PLAY(0)), *r;
	struct l7_stats st;

	rec->seg[1].data[3] = 2;
	rec->seg[2].data[3] = 3;
	r = l7r_play(OPS, rec, L7R_PLAY(.from = 1));
	l7r_same(whole, r, "plaintext");
	st = l7_stats(r);
	cr_assert_eq(st.bytes_unattributed, 218 + 20);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	cr_assert_eq(my_stats(r).midstream_syncs, 0);
	cr_assert_eq(my_stats(r).bad_starts, 0);
	l7r_free(r);
	l7r_free(whole);
	l7r_rec_free(rec);
}

Test(mysql, compression_stops_parsing)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	handshake(r, 0x20);
	/* a compressed packet: 3-byte length, sequence, 3-byte uncompressed length */
	l7r_seg(r, EG, 4, "\x0a\0\0\0\0\0\0\x01\0\0\x0ePING", 15, 15);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 5, &b);
	st = l7r_finish(r, 6);
	cr_assert_eq(r->n, 0);
	cr_assert_eq(my_stats(r).compressed, 1);
	cr_assert_eq(st.bytes_unattributed, st.bytes_seen);
	l7r_free(r);
}

/* --- starting mid-conversation --- */

Test(mysql, midstream_at_a_command)
{
	struct l7r_rec *rec = l7r_load("mysql", "mysql2_execute");
	struct l7r_run *whole = l7r_play(OPS, rec, L7R_PLAY(.as_server = true));

	/* from the first command on, as the server: the same exchanges, nothing left over */
	for (size_t piece = 0; piece < 4; piece++) {
		struct l7r_run *r =
			l7r_play(OPS, rec, L7R_PLAY(.as_server = true, .piece = piece, .from = 3));
		struct mysql_stats my = my_stats(r);

		l7r_same(whole, r, "midstream");
		cr_assert_eq(l7_stats(r).bytes_unattributed, 0);
		cr_assert_eq(r->ops->role(r->c), L7_ROLE_SERVER);
		cr_assert_eq(my.midstream_syncs, 2);
		cr_assert_eq(my.bad_starts, 0);
		/* learnt from the first result set: an EOF after the column definitions */
		cr_assert_eq(my.deprecate_eof, 0);
		l7r_free(r);
	}
	l7r_free(whole);
	l7r_rec_free(rec);
}

Test(mysql, midstream_inside_a_response)
{
	struct l7r_rec *rec = l7r_load("mysql", "mysql2_execute");
	struct l7r_run *whole = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(.from = 4));
	struct l7_stats st = l7_stats(r);

	/* The first segment is the end of an answer to a query not seen. */
	cr_assert_eq(r->n, whole->n - 1);
	for (size_t i = 0; i < r->n; i++)
		cr_assert(!memcmp(&r->x[i], &whole->x[i + 1], sizeof(r->x[i])));
	cr_assert_eq(st.bytes_unattributed, 140);
	cr_assert_eq(my_stats(r).bad_starts, 1);
	cr_assert_eq(st.orphan_responses, 0);
	l7r_free(r);
	l7r_free(whole);
	l7r_rec_free(rec);
}

Test(mysql, midstream_rejects_what_is_not_a_command)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;

	/* sequence 0, COM_QUERY, but binary "text"; COM_PING of 2 bytes; sequence 3 */
	PUT(&b, 0, "\x03\x01\x02\x03\x04");
	l7b_send(r, EG, 1, &b);
	PUT(&b, 0, "\x0e\x00");
	l7b_send(r, EG, 2, &b);
	PUT(&b, 3, "\x03SELECT 1");
	l7b_send(r, EG, 3, &b);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_UNKNOWN);
	/* a command whose length is not its segment's, after framing was lost */
	PUT(&b, 0, "\x03SELECT 1");
	l7r_seg(r, EG, 4, b.b, b.n, b.n + 1);
	b.n = 0;
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_UNKNOWN);
	PUT(&b, 0, "\x03SELECT 2");
	l7b_send(r, EG, 5, &b);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 6, &b);
	st = l7r_finish(r, 7);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_QUERY", "SELECT 2", 13, 11, 0, 0);
	cr_assert_eq(my_stats(r).bad_starts, 4);
	cr_assert_eq(st.bytes_unattributed, 9 + 6 + 13 + 14);
	l7r_free(r);
}

/* --- what the recorded peers do not send --- */

Test(mysql, deprecate_eof_from_handshake)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	size_t hs = handshake(r, 1u << 24);
	uint8_t ok[12] = { 0x00, 7, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0 };

	cr_assert_eq(my_stats(r).deprecate_eof, 1);
	PUT(&b, 0, "\x03SELECT a FROM t");
	l7b_send(r, EG, 10, &b);
	/* no EOF after the definitions; the rows end with an OK with a 0xfe header */
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3,
	    "\x01"
	    "1");
	PUT(&b, 4,
	    "\x01"
	    "2");
	PUT(&b, 5, OK_FE);
	l7b_send(r, IN, 11, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_QUERY", "SELECT a FROM t", 20, 5 + 28 + 6 + 6 + 11, 0, 0);
	/* an empty result set: the OK right after the definitions */
	PUT(&b, 0, "\x03SELECT a FROM t WHERE 0");
	l7b_send(r, EG, 12, &b);
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, OK_FE);
	l7b_send(r, IN, 13, &b);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].resp_bytes, 5 + 28 + 11);
	cr_assert_eq(r->x[1].end_ns, 13);
	/* a prepare: 2 parameters, 1 column, no EOFs: complete at its last definition */
	PUT(&b, 0, "\x16SELECT a FROM t WHERE b = ? AND c = ?");
	l7b_send(r, EG, 14, &b);
	put(&b, 1, ok, sizeof(ok));
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, COLDEF);
	PUT(&b, 4, COLDEF);
	l7b_send(r, IN, 15, &b);
	cr_assert_eq(r->n, 3);
	check_x(&r->x[2], "COM_STMT_PREPARE", "SELECT a FROM t WHERE b = ? AND c = ?", 42,
		16 + 3 * 28, 0, 0);
	cr_assert_eq(r->x[2].end_ns, 15);
	PUT(&b, 0, "\x17\x07\0\0\0\0\x01\0\0\0\0\x01\x03\0\x03\0\x01\0\0\0\x02\0\0\0");
	l7b_send(r, EG, 16, &b);
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3,
	    "\0\0\x01"
	    "1");
	PUT(&b, 4, OK_FE);
	l7b_send(r, IN, 17, &b);
	cr_assert_eq(r->n, 4);
	check_x(&r->x[3], "COM_STMT_EXECUTE", "SELECT a FROM t WHERE b = ? AND c = ?", 28,
		5 + 28 + 8 + 11, 0, 0);
	cr_assert_eq(l7r_finish(r, 18).bytes_unattributed, hs);
	l7r_free(r);
}

/* Without the handshake, a prepare's answer may or may not end with an EOF. */
Test(mysql, deprecate_eof_unknown_prepare)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	uint8_t ok[12] = { 0x00, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };

	PUT(&b, 0,
	    "\x16"
	    "DELETE FROM t WHERE a = ?");
	l7b_send(r, EG, 1, &b);
	put(&b, 1, ok, sizeof(ok));
	PUT(&b, 2, COLDEF);
	l7b_send(r, IN, 2, &b);
	/* Complete only when the next command shows no EOF was coming; it ended at 2. */
	cr_assert_eq(r->n, 0);
	PUT(&b, 0, "\x17\x09\0\0\0\0\x01\0\0\0\0\x01\x03\0\x05\0\0\0");
	l7b_send(r, EG, 3, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_STMT_PREPARE", "DELETE FROM t WHERE a = ?", 30, 16 + 28, 0, 0);
	cr_assert_eq(r->x[0].end_ns, 2);
	cr_assert_eq(my_stats(r).deprecate_eof, 1);
	PUT(&b, 1, "\0\x01\0\0\0\x02\0\0\0");
	l7b_send(r, IN, 4, &b);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "COM_STMT_EXECUTE", "DELETE FROM t WHERE a = ?", 22, 13, 0, 0);
	l7r_finish(r, 5);
	l7r_free(r);

	/* The same with the EOF: learnt the other way, complete at once. */
	r = l7r_new(OPS);
	PUT(&b, 0,
	    "\x16"
	    "DELETE FROM t WHERE a = ?");
	l7b_send(r, EG, 1, &b);
	put(&b, 1, ok, sizeof(ok));
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, EOF_PKT);
	l7b_send(r, IN, 2, &b);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].resp_bytes, 16 + 28 + 9);
	cr_assert_eq(my_stats(r).deprecate_eof, 0);
	l7r_finish(r, 3);
	l7r_free(r);
}

Test(mysql, cursor_and_fetch)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	uint8_t ok[12] = { 0x00, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 };

	PUT(&b, 0, "\x16SELECT a FROM t");
	l7b_send(r, EG, 1, &b);
	put(&b, 1, ok, sizeof(ok));
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, EOF_PKT);
	l7b_send(r, IN, 2, &b);
	/* a read-only cursor: definitions and an EOF with SERVER_STATUS_CURSOR_EXISTS */
	PUT(&b, 0, "\x17\x04\0\0\0\x01\x01\0\0\0");
	l7b_send(r, EG, 3, &b);
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, "\xfe\0\0\x42\0");
	l7b_send(r, IN, 4, &b);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "COM_STMT_EXECUTE", "SELECT a FROM t", 14, 5 + 28 + 9, 0, 0);
	PUT(&b, 0, "\x1c\x04\0\0\0\x02\0\0\0");
	l7b_send(r, EG, 5, &b);
	PUT(&b, 1,
	    "\0\0\x01"
	    "1");
	PUT(&b, 2,
	    "\0\0\x01"
	    "2");
	PUT(&b, 3, "\xfe\0\0\x82\0");
	l7b_send(r, IN, 6, &b);
	cr_assert_eq(r->n, 3);
	check_x(&r->x[2], "COM_STMT_FETCH", "SELECT a FROM t", 13, 8 + 8 + 9, 0, 0);
	PUT(&b, 0, "\x1a\x04\0\0\0");
	l7b_send(r, EG, 7, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 8, &b);
	check_x(&r->x[3], "COM_STMT_RESET", "SELECT a FROM t", 9, 11, 0, 0);
	l7r_finish(r, 9);
	l7r_free(r);
}

Test(mysql, pipelined_prepare_and_execute)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	uint8_t ok[12] = { 0x00, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };

	/* MariaDB Connector/C: both at once, the execute naming statement -1 */
	PUT(&b, 0,
	    "\x16"
	    "INSERT INTO t VALUES (?)");
	PUT(&b, 0, "\x17\xff\xff\xff\xff\0\x01\0\0\0\0\x01\x03\0\x05\0\0\0");
	l7b_send(r, EG, 1, &b);
	put(&b, 1, ok, sizeof(ok));
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, EOF_PKT);
	PUT(&b, 1, "\0\x01\0\x02\0\0\0");
	l7b_send(r, IN, 2, &b);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[0], "COM_STMT_PREPARE", "INSERT INTO t VALUES (?)", 29, 16 + 28 + 9, 0, 0);
	check_x(&r->x[1], "COM_STMT_EXECUTE", "INSERT INTO t VALUES (?)", 22, 11, 0, 0);
	cr_assert_eq(r->x[1].end_ns, 2);
	/* later, -1 still names the last statement prepared */
	PUT(&b, 0, "\x19\xff\xff\xff\xff");
	l7b_send(r, EG, 3, &b);
	check_x(&r->x[2], "COM_STMT_CLOSE", "INSERT INTO t VALUES (?)", 9, 0, 0,
		L7_F_NO_REPLY_EXPECTED);
	cr_assert_eq(l7r_finish(r, 4).bytes_unattributed, 0);
	l7r_free(r);
}

Test(mysql, change_user_and_unsolicited_error)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	size_t hs = handshake(r, 0);

	/* COM_CHANGE_USER, an auth switch, the client's answer, then OK */
	PUT(&b, 0,
	    "\x11"
	    "bob\0\x14"
	    "01234567890123456789shop\0");
	l7b_send(r, EG, 10, &b);
	PUT(&b, 1,
	    "\xfe"
	    "mysql_native_password\0"
	    "abcdefghijklmnopqrst");
	l7b_send(r, IN, 11, &b);
	PUT(&b, 2, "01234567890123456789");
	l7b_send(r, EG, 12, &b);
	PUT(&b, 3, OK_PKT);
	l7b_send(r, IN, 13, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_CHANGE_USER", "", 35 + 24, 47 + 11, 0, 0);
	cr_assert_eq(r->x[0].end_ns, 13);
	/* MySQL 8's "disconnected by the server because of inactivity": nothing asked */
	PUT(&b, 0, "\xff\xbf\x0f#HY000The client was disconnected");
	l7b_send(r, IN, 20, &b);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "", "", 0, 40, 4031, L7_F_NO_REQUEST);
	cr_assert_eq(r->x[1].start_ns, 20);
	cr_assert_eq(r->x[1].req_dir, EG);
	cr_assert_eq(l7r_finish(r, 21).orphan_responses, 1);
	cr_assert_eq(l7_stats(r).bytes_unattributed, hs);
	l7r_free(r);
}

/* --- capture bounds, gaps and losses --- */

Test(mysql, long_statement_cut_by_capture)
{
	struct l7r_run *r = l7r_new(OPS);
	static uint8_t q[3000];
	struct l7b b = { 0 };
	struct l7_stats st;
	size_t len = sizeof(q) - 4;

	q[0] = (uint8_t)len;
	q[1] = (uint8_t)(len >> 8);
	memcpy(q + 4, "\x03INSERT INTO t VALUES ", 22);
	memset(q + 26, '1', sizeof(q) - 26);
	l7r_seg(r, EG, 1, q, 1024, sizeof(q));
	PUT(&b, 1, "\0\x01\0\x02\0\0\0");
	l7b_send(r, IN, 2, &b);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(strlen(r->x[0].target), L7_TARGET_MAX);
	cr_assert_eq(memcmp(r->x[0].target, "INSERT INTO t VALUES 111", 24), 0);
	check_x(&r->x[0], "COM_QUERY", r->x[0].target, sizeof(q), 11, 0,
		L7_F_TARGET_TRUNCATED | L7_F_REQ_TRUNCATED);
	st = l7r_finish(r, 3);
	cr_assert_eq(st.gap_bytes, sizeof(q) - 1024);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(mysql, gap_inside_a_row_keeps_framing)
{
	struct l7r_run *r = l7r_new(OPS);
	static uint8_t row[2000];
	struct l7b b = { 0 };
	struct l7_stats st;

	PUT(&b, 0, "\x03SELECT blob FROM t");
	l7b_send(r, EG, 1, &b);
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, EOF_PKT);
	l7b_send(r, IN, 2, &b);
	/* a 2000-byte row of which a write's first 100 bytes were captured */
	row[0] = 0xfc;
	row[1] = (uint8_t)(sizeof(row) - 3);
	row[2] = (uint8_t)((sizeof(row) - 3) >> 8);
	put(&b, 4, row, sizeof(row));
	l7r_seg(r, IN, 3, b.b, 100, b.n);
	b.n = 0;
	cr_assert_eq(r->n, 0);
	PUT(&b, 5, EOF_PKT);
	l7b_send(r, IN, 4, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_QUERY", "SELECT blob FROM t", 23, 5 + 28 + 9 + 2004 + 9, 0,
		L7_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[0].end_ns, 4);
	st = l7r_finish(r, 5);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(mysql, gap_across_packets_resynchronizes)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	struct l7_stats st;
	size_t resp;

	PUT(&b, 0, "\x03SELECT a FROM t");
	l7b_send(r, EG, 1, &b);
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, EOF_PKT);
	for (uint8_t i = 0; i < 100; i++)
		PUT(&b, (uint8_t)(4 + i),
		    "\x05"
		    "abcde");
	PUT(&b, 104, EOF_PKT);
	resp = b.n;
	/* 60 bytes captured: the end of the answer is never seen */
	l7r_seg(r, IN, 2, b.b, 60, b.n);
	b.n = 0;
	l7r_seg(r, IN, 3, "more", 4, 4);
	cr_assert_eq(r->n, 0);
	/* The next command ends it; the answer to that command is found again. */
	PUT(&b, 0, "\x03SELECT 2");
	l7b_send(r, EG, 4, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_QUERY", "SELECT a FROM t", 20, resp + 4, 0, L7_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[0].end_ns, 3);
	l7r_seg(r, IN, 5, "\x07\0\0\x01\0\0\0\x02\0\0\0", 11, 11);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "COM_QUERY", "SELECT 2", 13, 11, 0, 0);
	st = l7r_finish(r, 6);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(mysql, lost_segments)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_query");
	struct l7r_run *r = l7r_new(OPS);
	struct l7_stats st;

	for (size_t i = 0; i < rec->n; i++) {
		const struct l7r_seg *s = &rec->seg[i];

		/* the answer to the first SELECT is lost (size unknown), then the INSERT's
		 * (size known) */
		if (i == 4)
			l7r_lost(r, IN, 0);
		else if (i == 6)
			l7r_lost(r, IN, s->len);
		else
			l7r_seg(r, l7r_dir(s, false), s->ts, s->data, s->len, s->len);
	}
	st = l7r_finish(r, 20000);
	cr_assert_eq(r->n, 4);
	/* answered in what was lost: known when the ERR's segment is found to begin one */
	check_x(&r->x[0], "COM_QUERY", "SELECT id, name, price FROM items ORDER BY id", 50, 0, 0,
		L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].end_ns, 9000);
	check_x(&r->x[1], "COM_QUERY", "INSERT INTO items VALUES (4,'kiwi',0.75)", 45, 0, 0,
		L7_F_NO_RESPONSE);
	/* the ERR is found at its segment's start */
	check_x(&r->x[2], "COM_QUERY", "SELECT * FROM nosuchtable", 30, 51, 1146, 0);
	cr_assert_eq(st.lost_segments, 2);
	cr_assert_eq(st.lost_bytes, 11);
	cr_assert_eq(r->x[1].end_ns, 9000);
	cr_assert_eq(st.bytes_unattributed, 104 + 218 + 20 + 11);
	cr_assert_eq(st.resyncs, 1);
	cr_assert_eq(st.unanswered, 2);
	l7r_free(r);
	l7r_rec_free(rec);
}

/* A packet of 0xffffff bytes continues in the next one, whatever that one begins with. */
Test(mysql, continuation_packets)
{
	struct l7r_run *r = l7r_new(OPS);
	static uint8_t big[1024];
	struct l7b b = { 0 };
	struct l7_stats st;
	uint64_t full = 4 + 0xffffffu;

	memcpy(big, "\xff\xff\xff\x00\x03SELECT '", 12);
	memset(big + 12, 'x', sizeof(big) - 12);
	l7r_seg(r, EG, 1, big, sizeof(big), full);
	PUT(&b, 1, "xxxxxx' t");
	l7b_send(r, EG, 2, &b);
	PUT(&b, 2, OK_PKT);
	l7b_send(r, IN, 3, &b);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].req_bytes, full + 13);
	cr_assert_eq(r->x[0].flags, L7_F_TARGET_TRUNCATED | L7_F_REQ_TRUNCATED);
	cr_assert_eq(r->x[0].resp_bytes, 11);

	/* a row of more than 16 MiB whose second part begins like an EOF */
	PUT(&b, 0, "\x03SELECT big");
	l7b_send(r, EG, 4, &b);
	PUT(&b, 1, "\x01");
	PUT(&b, 2, COLDEF);
	PUT(&b, 3, EOF_PKT);
	l7b_send(r, IN, 5, &b);
	memcpy(big, "\xff\xff\xff\x04\xfe", 5);
	l7r_seg(r, IN, 6, big, 64, full);
	PUT(&b, 5, EOF_PKT);
	l7b_send(r, IN, 7, &b);
	cr_assert_eq(r->n, 1);
	PUT(&b, 6, EOF_PKT);
	l7b_send(r, IN, 8, &b);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[1], "COM_QUERY", "SELECT big", 15, 5 + 28 + 9 + full + 9 + 9, 0,
		L7_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[1].end_ns, 8);
	st = l7r_finish(r, 9);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(mysql, answer_begun_before_the_command)
{
	struct l7r_run *r = l7r_new(OPS);
	size_t hs = handshake(r, 0);
	struct l7_stats st;

	/* the first bytes of an OK, then a COM_PING, then the rest of the OK */
	l7r_seg(r, IN, 10, "\x07\0\0\x01", 4, 4);
	l7r_seg(r, EG, 11, "\x01\0\0\0\x0e", 5, 5);
	l7r_seg(r, IN, 12, OK_PKT, 7, 7);
	st = l7r_finish(r, 13);
	cr_assert_eq(r->n, 2);
	check_x(&r->x[0], "COM_PING", "", 5, 0, 0, L7_F_NO_RESPONSE);
	check_x(&r->x[1], "", "", 0, 11, 0, L7_F_NO_REQUEST);
	cr_assert_eq(r->x[1].start_ns, 10);
	cr_assert_eq(r->x[1].end_ns, 12);
	cr_assert_eq(st.orphan_responses, 1);
	cr_assert_eq(st.bytes_unattributed, hs);
	l7r_free(r);
}

/* MariaDB's metadata cache, MySQL's optional metadata: a count, no definitions, no EOF. */
Test(mysql, result_set_without_metadata)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };

	PUT(&b, 0, "\x17\x05\0\0\0\0\x01\0\0\0");
	l7b_send(r, EG, 1, &b);
	PUT(&b, 1, "\x01\x00");
	PUT(&b, 2,
	    "\0\0\x01"
	    "1");
	PUT(&b, 3, EOF_PKT);
	l7b_send(r, IN, 2, &b);
	cr_assert_eq(r->n, 1);
	check_x(&r->x[0], "COM_STMT_EXECUTE", "", 14, 6 + 8 + 9, 0, 0);
	cr_assert_eq(r->x[0].end_ns, 2);
	cr_assert_eq(my_stats(r).stmts_unknown, 1);
	l7r_finish(r, 3);
	l7r_free(r);
}

/* A HandshakeResponse without the greeting (the plaintext of TLS), capabilities given. */
static void hsresp_only(struct l7r_run *r, uint32_t caps)
{
	uint8_t p[36] = { 0 };
	struct l7b b = { 0 };

	caps |= 0x200 | 0x8000;
	memcpy(p, &caps, 4);
	memcpy(p + 32, "u\0\0", 3);
	put(&b, 2, p, 35);
	l7b_send(r, EG, 1, &b);
	PUT(&b, 3, OK_PKT);
	l7b_send(r, IN, 2, &b);
}

Test(mysql, query_attributes)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };

	hsresp_only(r, 1u << 27);
	/* no parameters: counts 0 and 1 before the text; parameters: not looked through */
	PUT(&b, 0, "\x03\x00\x01SELECT 1");
	l7b_send(r, EG, 3, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 4, &b);
	PUT(&b, 0,
	    "\x03\x01\x01\x00\x01\x08\x00\x01"
	    "a"
	    "\x05\0\0\0\0\0\0\0"
	    "SELECT 2");
	l7b_send(r, EG, 5, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 6, &b);
	/* a client that announces them to a server without them sends plain text */
	PUT(&b, 0, "\x03SELECT 3");
	l7b_send(r, EG, 7, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 8, &b);
	l7r_finish(r, 9);
	cr_assert_eq(r->n, 3);
	cr_assert_str_eq(r->x[0].target, "SELECT 1");
	cr_assert_str_eq(r->x[1].target, "");
	cr_assert_str_eq(r->x[2].target, "SELECT 3");
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	l7r_free(r);

	/* Without the handshake: counts 0 and 1 are not text either. */
	r = l7r_new(OPS);
	PUT(&b, 0, "\x03\x00\x01SELECT 4");
	l7b_send(r, EG, 1, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 2, &b);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].target, "SELECT 4");
	l7r_finish(r, 3);
	l7r_free(r);
}

Test(mysql, thousand_exchanges_in_turn)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7_stats st;

	for (uint64_t i = 0; i < 1000; i++) {
		l7r_seg(r, EG, 2 * i, "\x01\0\0\0\x0e", 5, 5);
		l7r_seg(r, IN, 2 * i + 1, "\x07\0\0\x01" OK_PKT, 11, 11);
		cr_assert_eq(r->popped, i + 1);
	}
	st = l7r_finish(r, 2000);
	cr_assert_eq(st.exchanges, 1000);
	cr_assert_eq(st.requests_dropped + st.bytes_unattributed, 0);
	l7r_free(r);
}

/* --- bounds --- */

Test(mysql, hundred_pings_unanswered)
{
	struct l7r_run *r = l7r_new(OPS);
	static uint8_t pings[500], oks[1100];
	struct l7_stats st;

	for (int i = 0; i < 100; i++) {
		memcpy(pings + 5 * i, "\x01\0\0\0\x0e", 5);
		memcpy(oks + 11 * i, "\x07\0\0\x01\0\0\0\x02\0\0\0", 11);
	}
	l7r_seg(r, EG, 1, pings, sizeof(pings), sizeof(pings));
	cr_assert_eq(r->n, 0);
	l7r_seg(r, IN, 2, oks, sizeof(oks), sizeof(oks));
	st = l7r_finish(r, 3);
	cr_assert_eq(r->n, L7_MAX_PENDING);
	for (size_t i = 0; i < r->n; i++)
		check_x(&r->x[i], "COM_PING", "", 5, 11, 0, 0);
	cr_assert_eq(st.requests, 100);
	cr_assert_eq(st.requests_dropped, 100 - L7_MAX_PENDING);
	cr_assert_eq(st.responses, 100);
	cr_assert_eq(st.responses_dropped, 100 - L7_MAX_PENDING);
	cr_assert_eq(st.orphan_responses, 0);
	cr_assert_eq(st.bytes_unattributed, (100 - L7_MAX_PENDING) * 16);
	l7r_free(r);
}

Test(mysql, statement_map_is_bounded)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	char q[32];
	uint8_t ok[12] = { 0 }, ex[10] = { 0x17, 0, 0, 0, 0, 0, 1, 0, 0, 0 };

	for (uint8_t id = 1; id <= MYSQL_MAX_STMTS + 4; id++) {
		int n = snprintf(q, sizeof(q), "\x16SELECT %u", id);

		put(&b, 0, q, (size_t)n);
		l7b_send(r, EG, id, &b);
		ok[1] = id;
		put(&b, 1, ok, sizeof(ok));
		l7b_send(r, IN, id, &b);
	}
	/* the oldest four were pushed out */
	ex[1] = 1;
	put(&b, 0, ex, sizeof(ex));
	l7b_send(r, EG, 50, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 51, &b);
	ex[1] = MYSQL_MAX_STMTS + 4;
	put(&b, 0, ex, sizeof(ex));
	l7b_send(r, EG, 52, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 53, &b);
	l7r_finish(r, 54);
	cr_assert_eq(r->n, MYSQL_MAX_STMTS + 6);
	cr_assert_str_eq(r->x[MYSQL_MAX_STMTS + 4].target, "");
	cr_assert_str_eq(r->x[MYSQL_MAX_STMTS + 5].target, "SELECT 20");
	cr_assert_eq(my_stats(r).stmts_evicted, 4);
	cr_assert_eq(my_stats(r).stmts_unknown, 1);
	l7r_free(r);
}

Test(mysql, not_mysql_is_abandoned)
{
	struct l7r_run *r = l7r_new(OPS);
	const char *req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n", *resp = "HTTP/1.1 200 OK\r\n\r\n";
	struct l7_stats st;

	for (unsigned i = 0; i < MYSQL_MAX_BAD_STARTS; i++) {
		l7r_seg(r, EG, i, req, strlen(req), strlen(req));
		l7r_seg(r, IN, i, resp, strlen(resp), strlen(resp));
	}
	st = l7r_finish(r, 1000);
	cr_assert_eq(r->n, 0);
	cr_assert_eq(st.dirs_abandoned, 2);
	cr_assert_eq(my_stats(r).bad_starts, MYSQL_MAX_BAD_STARTS);
	cr_assert_eq(st.bytes_unattributed, st.bytes_seen);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_UNKNOWN);
	l7r_free(r);
}

Test(mysql, hostile_counts)
{
	struct l7r_run *r = l7r_new(OPS);
	struct l7b b = { 0 };
	uint8_t ok[12] = { 0x00, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0 };
	struct l7_stats st;

	PUT(&b, 0, "\x0e");
	l7b_send(r, EG, 1, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 2, &b);
	/* 2^64-1 and 2^24-1 columns: only counted down, never allocated */
	PUT(&b, 0, "\x03SELECT *");
	l7b_send(r, EG, 3, &b);
	PUT(&b, 1, "\xfd\xff\xff\xff");
	PUT(&b, 2, COLDEF);
	l7b_send(r, IN, 4, &b);
	/* 65535 parameters and columns */
	PUT(&b, 0, "\x16SELECT ?");
	l7b_send(r, EG, 5, &b);
	put(&b, 1, ok, sizeof(ok));
	PUT(&b, 2, COLDEF);
	l7b_send(r, IN, 6, &b);
	PUT(&b, 0, "\x0e");
	l7b_send(r, EG, 7, &b);
	PUT(&b, 1, OK_PKT);
	l7b_send(r, IN, 8, &b);
	st = l7r_finish(r, 9);
	cr_assert_eq(r->n, 4);
	check_x(&r->x[1], "COM_QUERY", "SELECT *", 13, 8 + 28, 0, L7_F_RESP_TRUNCATED);
	check_x(&r->x[2], "COM_STMT_PREPARE", "SELECT ?", 13, 16 + 28, 0, L7_F_RESP_TRUNCATED);
	check_x(&r->x[3], "COM_PING", "", 5, 11, 0, 0);
	cr_assert_eq(r->x[2].end_ns, 6);
	cr_assert_eq(st.bytes_unattributed, 0);
	l7r_free(r);
}

Test(mysql, bad_arguments)
{
	void *c = OPS->new_conn(0);
	struct l7_exchange x;
	struct mysql_stats my;

	cr_assert(c);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 2, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, (enum l7_dir)2, 1, (const uint8_t *)"x", 1, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 0, 100), 0);
	cr_assert_eq(OPS->lost(c, (enum l7_dir) - 1, 1), -EINVAL);
	cr_assert_eq(OPS->next(c, &x), 0);
	cr_assert_eq(mysql__stats(c, NULL), -EINVAL);
	cr_assert_eq(mysql__stats(NULL, &my), -EINVAL);
	OPS->close(c, 1);
	cr_assert_eq(OPS->lost(c, EG, 1), -EPIPE);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 1, 1), -EPIPE);
	OPS->free_conn(c);
	OPS->free_conn(NULL);
	errno = 0;
	cr_assert_null(OPS->new_conn(L7_F_DATAGRAM));
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(OPS->name, "mysql");
}
