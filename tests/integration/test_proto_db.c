// SPDX-License-Identifier: Apache-2.0
/*
 * NETWORK tasks on database and messaging peers (network-peers.md 2.1): the DataStax python
 * driver against a CQL v4 server, pymongo against MockupDB, kcat (librdkafka) against a modern
 * broker and against sarama's v0 MockBroker, npm mysql2 against MariaDB. Each test traces the
 * client and the server from before the first byte and compares the report's endpoints (the
 * operation, its target, its codes) on both sides with what the client printed it did and,
 * where the driver makes requests of its own (handshakes, monitors, metadata refreshes), with
 * the server's own count of every request it took ("counted OP TARGET CODE N" lines that
 * tests/tools/{kafka_broker.py,mongo_peer.py,kmock} write when stopped).
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/netreport.h"

#define MAX_CLIENTS 2

static pid_t task = -1, server = -1, clients[MAX_CLIENTS] = { -1, -1 };

static void setup(void)
{
	task = server = -1;
	for (int i = 0; i < MAX_CLIENTS; i++)
		clients[i] = -1;
	tmp_setup();
}

static void teardown(void)
{
	if (task > 0)
		wait_cmd(task, 1);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (clients[i] > 0)
			wait_cmd(clients[i], 1);
	if (server > 0) {
		kill(server, SIGTERM);
		wait_cmd(server, 20000);
	}
	tmp_teardown();
}

TestSuite(proto_db, .init = setup, .fini = teardown, .timeout = 180);

static int count_in(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Starts a peer that writes tmp/ready once it listens; stderr to tmp/server.log. */
static pid_t server_start(char *const argv[])
{
	pid_t pid = spawn_cmd(argv, tmp_path("server.log"));

	cr_assert_gt(pid, 0);
	for (int i = 0; i < 400 && access(tmp_path("ready"), F_OK); i++)
		sleep_ms(50);
	cr_assert_eq(access(tmp_path("ready"), F_OK), 0, "%s: %s", argv[1],
		     slurp(tmp_path("server.log"), NULL));
	return pid;
}

/* SIGTERM, waits for a clean exit; what it wrote to stderr (malloc'd). */
static char *server_stop(void)
{
	int rc;

	kill(server, SIGTERM);
	rc = wait_cmd(server, 20000);
	server = -1;
	cr_assert_eq(rc, 0, "the peer: %s", slurp(tmp_path("server.log"), NULL));
	return slurp(tmp_path("server.log"), NULL);
}

/* Waits for clients[i]: its exit status; its output in *ret_out (malloc'd). */
static int client_wait(int i, const char *out_name, char **ret_out)
{
	int rc = wait_cmd(clients[i], 30000);

	clients[i] = -1;
	*ret_out = slurp(tmp_path(out_name), NULL);
	cr_assert_not_null(*ret_out);
	return rc;
}

/* The endpoint of pid, or the test fails. */
static struct json_object *endpoint(struct json_object *r, int pid, const char *role,
				    const char *protocol, const char *op, const char *target)
{
	struct json_object *e = nr_endpoint(r, pid, role, protocol, op, target);

	cr_assert_not_null(e, "no %s %s \"%s\" endpoint of %s %d: %s", protocol, op, target, role,
			   pid, nr_dump(nr_array(r, "endpoints")));
	return e;
}

/* One endpoint of pid: n requests of op on target, all with code. */
static void expect_op(struct json_object *r, int pid, const char *role, const char *protocol,
		      const char *op, const char *target, int code, int64_t n)
{
	struct json_object *e = endpoint(r, pid, role, protocol, op, target);

	cr_assert_eq(nr_int(e, "requests"), n, "%s %s %s \"%s\": %d expected: %s", role, protocol,
		     op, target, (int)n, nr_dump(e));
	cr_assert_eq(nr_code(e, code), n, "%s %s %s \"%s\": code %d %d times expected: %s", role,
		     protocol, op, target, code, (int)n, nr_dump(e));
}

/*
 * A peer's "counted OP TARGET CODE N" lines: every request it took, by operation, target
 * ("-": none) and code ("-": no answer).
 */
struct counted {
	char op[64];
	char target[256];
	char code[16];
	int64_t n;
};

#define COUNTED_MAX 64

static size_t counted_read(const char *text, struct counted *ret, size_t max)
{
	size_t n = 0;

	for (const char *p = text; p && *p && n < max; p = strchr(p, '\n')) {
		struct counted *c = &ret[n];
		long long k;

		if (*p == '\n')
			p++;
		if (sscanf(p, "counted %63s %255s %15s %lld", c->op, c->target, c->code, &k) != 4)
			continue;
		if (!strcmp(c->target, "-"))
			c->target[0] = '\0';
		c->n = k;
		n++;
	}
	return n;
}

static int64_t counted_n(const struct counted *c, size_t n, const char *op, const char *target,
			 const char *code)
{
	int64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].op, op) && !strcmp(c[i].target, target) &&
		    (!code || !strcmp(c[i].code, code)))
			sum += c[i].n;
	return sum;
}

/*
 * The report's side of pids (one server, or the clients that together made every request the
 * peer counted) against the peer's count: each operation and target with as many requests and
 * the same codes, the pairs' totals as many requests, and an error for each code but 0.
 */
static void expect_counted(struct json_object *r, const pid_t *pids, int npids, const char *role,
			   const char *protocol, const struct counted *c, size_t n)
{
	int64_t total = 0, errors = 0;
	struct nr_sum s;

	for (size_t i = 0; i < n; i++) {
		int64_t got = 0, with_code = 0, want = counted_n(c, n, c[i].op, c[i].target, NULL);

		for (int k = 0; k < npids; k++) {
			struct json_object *e =
				nr_endpoint(r, pids[k], role, protocol, c[i].op, c[i].target);

			got += nr_int(e, "requests") < 0 ? 0 : nr_int(e, "requests");
			if (strcmp(c[i].code, "-"))
				with_code += nr_code(e, atoi(c[i].code));
		}
		cr_assert_eq(got, want,
			     "%s %s \"%s\": the peer counted %d, the %s side shows %d: %s",
			     protocol, c[i].op, c[i].target, (int)want, role, (int)got,
			     nr_dump(nr_array(r, "endpoints")));
		if (strcmp(c[i].code, "-"))
			cr_assert_eq(with_code, c[i].n,
				     "%s %s \"%s\" code %s: the peer counted %d, the %s side %d: %s",
				     protocol, c[i].op, c[i].target, c[i].code, (int)c[i].n, role,
				     (int)with_code, nr_dump(nr_array(r, "endpoints")));
		total += c[i].n;
		if (strcmp(c[i].code, "0") && strcmp(c[i].code, "-"))
			errors += c[i].n;
	}
	for (int k = 0; k < npids; k++) {
		nr_sum(r, pids[k], protocol, &s);
		total -= s.requests;
		errors -= s.errors;
	}
	cr_assert_eq(total, 0, "%s requests of the %s side off the peer's count by %d: %s",
		     protocol, role, (int)-total, nr_dump(r));
	cr_assert_eq(errors, 0, "%s errors of the %s side off the peer's count by %d: %s", protocol,
		     role, (int)-errors, nr_dump(r));
}

static void expect_no_loss(struct json_object *r, const char *log)
{
	struct json_object *losses = nr_obj(r, "losses");

	json_object_object_foreach(losses, key, val) {
		cr_assert_eq(json_object_get_int64(val), 0, "losses.%s: %s\n%s", key,
			     nr_dump(losses), log);
	}
}

/*
 * The DataStax python driver on one connection to cql_responder.py: OPTIONS, STARTUP, 12
 * QUERY, a PREPARE and 9 EXECUTE of it, a QUERY on a missing table (ERROR 0x2200). Both sides
 * show each operation on its statement text (an EXECUTE on the text its PREPARE carried), the
 * code 8704 once, and the driver's requests in total.
 */
Test(proto_db, cql_python_driver_and_responder)
{
	int port = free_port(19400, 19499);
	char portarg[16], pids[32], *log, *out;
	char *srv[] = { "/usr/bin/python3",
			(char *)src("tests/tools/cql_responder.py"),
			"--port",
			portarg,
			"--ready-file",
			(char *)tmp_path("ready"),
			NULL };
	char *cli[] = { "/usr/bin/python3",
			(char *)src("tests/programs/cql_client.py"),
			portarg,
			"12",
			"9",
			NULL };
	int options, startup, query, prepare, execute, error, code;
	struct json_object *r;
	struct nr_sum s;
	pid_t c, sv;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	sv = server = server_start(srv);
	c = clients[0] = nr_spawn_when(tmp_path("go"), tmp_path("client.out"), cli);
	cr_assert_gt(c, 0);
	snprintf(pids, sizeof(pids), "%d,%d", (int)c, (int)sv);
	task = nr_start(pids, "8s", "cql.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(client_wait(0, "client.out", &out), 0, "%s", out);
	cr_assert_eq(sscanf(out,
			    "options=%d startup=%d query=%d prepare=%d execute=%d error=%d "
			    "error_code=%d",
			    &options, &startup, &query, &prepare, &execute, &error, &code),
		     7, "%s", out);
	cr_assert(options == 1 && startup == 1 && query == 12 && prepare == 1 && execute == 9 &&
			  error == 1 && code == 0x2200,
		  "%s", out);
	free(server_stop());
	r = nr_end(task, "cql.json", &log);
	task = -1;

	for (int side = 0; side < 2; side++) {
		int pid = side ? sv : c;
		const char *role = side ? "server" : "client";

		expect_op(r, pid, role, "cql", "OPTIONS", "", 0, options);
		expect_op(r, pid, role, "cql", "STARTUP", "", 0, startup);
		expect_op(r, pid, role, "cql", "QUERY", "SELECT v FROM t WHERE k = 1", 0, query);
		expect_op(r, pid, role, "cql", "PREPARE", "SELECT v FROM t WHERE k = ?", 0,
			  prepare);
		expect_op(r, pid, role, "cql", "EXECUTE", "SELECT v FROM t WHERE k = ?", 0,
			  execute);
		expect_op(r, pid, role, "cql", "QUERY", "SELECT * FROM nosuchtable", code, error);
		nr_sum(r, pid, "cql", &s);
		cr_assert_eq(s.requests, options + startup + query + prepare + execute + error,
			     "%s: %s", role, nr_dump(r));
		cr_assert_eq(s.errors, error, "%s: %s", role, nr_dump(r));
		cr_assert_eq(nr_sum_code(r, pid, "cql", code), error, "%s", nr_dump(r));
		cr_assert_eq(s.conns, 1, "%s: %s", role, nr_dump(r));
		cr_assert_eq(s.ssl_pairs, 0);
	}
	expect_no_loss(r, log);
	json_object_put(r);
	free(out);
	free(log);
}

/*
 * pymongo against MockupDB (mongo_peer.py, wire version 13: OP_MSG after a legacy OP_QUERY
 * handshake): 5 ping, 8 insert into k, 6 find on k, the unknown command "bogus" (ok 0, code
 * 59) and an insert into dup (writeErrors, code 11000). Both sides show each command on its
 * collection with the codes pymongo raised, and exactly the requests the server took,
 * pymongo's own (its handshakes and monitor, endSessions) included. tls: over TLS, the server
 * only (CPython's SSL_read_ex/SSL_write_ex; the client maps libssl only after the task began).
 */
static void pymongo_mockupdb(bool tls)
{
	int port = free_port(tls ? 17200 : 17100, tls ? 17299 : 17199);
	char portarg[16], pids[32], *log, *out, *counts;
	char *srv[] = { "/usr/bin/python3",
			(char *)src("tests/tools/mongo_peer.py"),
			"--port",
			portarg,
			"--ready-file",
			(char *)tmp_path("ready"),
			"--max-wire",
			"13",
			tls ? "--ssl" : NULL,
			NULL };
	char *cli[] = { "/usr/bin/python3",
			(char *)src("tests/programs/mongo_client.py"),
			portarg,
			"5",
			"8",
			"6",
			NULL,
			NULL };
	int ping, insert, find, docs, bogus, dup;
	struct counted cnt[COUNTED_MAX];
	struct json_object *r;
	struct nr_sum s;
	pid_t c, sv;
	size_t n;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	if (tls) {
		memmove(cli + 3, cli + 2, 4 * sizeof(cli[0]));
		cli[2] = "--tls";
	}
	sv = server = server_start(srv);
	c = clients[0] = nr_spawn_when(tmp_path("go"), tmp_path("client.out"), cli);
	cr_assert_gt(c, 0);
	if (tls)
		snprintf(pids, sizeof(pids), "%d", (int)sv);
	else
		snprintf(pids, sizeof(pids), "%d,%d", (int)c, (int)sv);
	task = nr_start(pids, "8s", "mongo.json", tls ? 1 : 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(client_wait(0, "client.out", &out), 0, "%s", out);
	cr_assert_eq(sscanf(out, "ping=%d insert=%d find=%d docs=%d bogus_code=%d dup_code=%d",
			    &ping, &insert, &find, &docs, &bogus, &dup),
		     6, "%s", out);
	cr_assert(ping == 5 && insert == 8 && find == 6 && docs == 6 && bogus == 59 && dup == 11000,
		  "%s", out);
	counts = server_stop();
	n = counted_read(counts, cnt, COUNTED_MAX);
	cr_assert_gt(n, 0, "%s", counts);
	/* the server saw what pymongo said it did */
	cr_assert_eq(counted_n(cnt, n, "ping", "", "0"), ping, "%s", counts);
	cr_assert_eq(counted_n(cnt, n, "insert", "k", "0"), insert, "%s", counts);
	cr_assert_eq(counted_n(cnt, n, "find", "k", "0"), find, "%s", counts);
	cr_assert_eq(counted_n(cnt, n, "bogus", "", "59"), 1, "%s", counts);
	cr_assert_eq(counted_n(cnt, n, "insert", "dup", "11000"), 1, "%s", counts);
	r = nr_end(task, "mongo.json", &log);
	task = -1;

	for (int side = tls ? 1 : 0; side < 2; side++) {
		pid_t pid = side ? sv : c;
		const char *role = side ? "server" : "client";

		expect_op(r, pid, role, "mongodb", "ping", "", 0, ping);
		expect_op(r, pid, role, "mongodb", "insert", "k", 0, insert);
		expect_op(r, pid, role, "mongodb", "find", "k", 0, find);
		expect_op(r, pid, role, "mongodb", "bogus", "", bogus, 1);
		expect_op(r, pid, role, "mongodb", "insert", "dup", dup, 1);
		expect_counted(r, &pid, 1, role, "mongodb", cnt, n);
		cr_assert_eq(nr_sum_code(r, pid, "mongodb", 59), 1, "%s", nr_dump(r));
		cr_assert_eq(nr_sum_code(r, pid, "mongodb", 11000), 1, "%s", nr_dump(r));
		nr_sum(r, pid, "mongodb", &s);
		cr_assert_eq(s.ssl_pairs, tls ? s.pairs : 0, "%s", nr_dump(r));
	}
	expect_no_loss(r, log);
	json_object_put(r);
	free(counts);
	free(out);
	free(log);
}

Test(proto_db, mongodb_pymongo_and_mockupdb)
{
	pymongo_mockupdb(false);
}

Test(proto_db, mongodb_over_tls_pymongo_and_mockupdb)
{
	pymongo_mockupdb(true);
}

/*
 * Two kcat producers (librdkafka), together, against a broker: one sends 7 messages to topic
 * t, the other 4 to topic bad, which the broker refuses (MESSAGE_TOO_LARGE, 10). librdkafka
 * batches messages into Produce requests as it likes, and asks ApiVersions and Metadata on
 * its own: the broker's count of every request it answered is what both sides must show, by
 * API, topic and code; what kcat printed (delivered, or failed 4 times) is what the broker
 * counted as records. v0: kcat told not to ask ApiVersions, against sarama's MockBroker.
 */
static void kcat_produce(bool v0, bool broker_side)
{
	int port = free_port(v0 ? 19600 : 19500, v0 ? 19699 : 19599);
	char portarg[16], broker[32], pids[48], *log, *out[2], *counts;
	char ready[4200], seven[4200], four[4200], kmock[4200];
	char *pysrv[] = { "/usr/bin/python3",
			  (char *)src("tests/tools/kafka_broker.py"),
			  "--port",
			  portarg,
			  "--ready-file",
			  ready,
			  NULL };
	char *gosrv[] = { kmock, "-port", portarg, "-ready-file", ready, NULL };
	char *cli[2][16] = {
		{ "kcat", "-P", "-b", broker, "-t", "t", "-l", seven, NULL },
		{ "kcat", "-P", "-b", broker, "-t", "bad", "-l", four, NULL },
	};
	struct counted cnt[COUNTED_MAX];
	struct json_object *r;
	pid_t sv, c[2];
	size_t n;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	snprintf(broker, sizeof(broker), "127.0.0.1:%d", port);
	snprintf(ready, sizeof(ready), "%s", tmp_path("ready"));
	snprintf(seven, sizeof(seven), "%s", tmp_path("seven"));
	snprintf(four, sizeof(four), "%s", tmp_path("four"));
	snprintf(kmock, sizeof(kmock), "%s", bin("tests/programs/kmock"));
	cr_assert_eq(write_file(seven, "m1\nm2\nm3\nm4\nm5\nm6\nm7\n"), 0);
	cr_assert_eq(write_file(four, "b1\nb2\nb3\nb4\n"), 0);
	for (int i = 0; v0 && i < 2; i++) {
		/* librdkafka's own knobs for brokers before 0.10: no ApiVersions, v0 requests */
		char **a = cli[i] + 8;

		a[0] = "-X";
		a[1] = "api.version.request=false";
		a[2] = "-X";
		a[3] = "broker.version.fallback=0.8.2";
		a[4] = NULL;
	}
	if (v0 && access(kmock, X_OK))
		cr_assert_fail("%s is not built (make it: the Makefile's TEST_PROGS)", kmock);
	sv = server = server_start(v0 ? gosrv : pysrv);
	for (int i = 0; i < 2; i++) {
		char name[32];

		snprintf(name, sizeof(name), "kcat%d.out", i);
		c[i] = clients[i] = nr_spawn_when(tmp_path("go"), tmp_path(name), cli[i]);
		cr_assert_gt(c[i], 0);
	}
	snprintf(pids, sizeof(pids), "%d,%d,%d", (int)c[0], (int)c[1], (int)sv);
	task = nr_start(pids, "8s", "kafka.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(client_wait(0, "kcat0.out", &out[0]), 0, "%s", out[0]);
	/* one failure report per message, and a status that says so */
	cr_assert_eq(client_wait(1, "kcat1.out", &out[1]), 1, "%s", out[1]);
	cr_assert_eq(count_in(out[1],
			      "Delivery failed for message: Broker: Message size too large"),
		     4, "%s", out[1]);
	counts = server_stop();
	n = counted_read(counts, cnt, COUNTED_MAX);
	cr_assert_gt(counted_n(cnt, n, "Produce", "t", "0"), 0, "%s", counts);
	cr_assert_gt(counted_n(cnt, n, "Produce", "bad", "10"), 0, "%s", counts);
	cr_assert_eq(counted_n(cnt, n, "Produce", "bad", NULL),
		     counted_n(cnt, n, "Produce", "bad", "10"), "%s", counts);
	cr_assert_eq(counted_n(cnt, n, "ApiVersions", "", NULL) > 0, !v0, "%s", counts);
	if (!v0) {
		cr_assert(strstr(counts, "records t 7\n"), "%s", counts);
		cr_assert(strstr(counts, "records bad 4\n"), "%s", counts);
	}
	r = nr_end(task, "kafka.json", &log);
	task = -1;

	if (broker_side)
		expect_counted(r, &sv, 1, "server", "kafka", cnt, n);
	expect_counted(r, c, 2, "client", "kafka", cnt, n);
	/* each producer's Produce requests are its own */
	expect_op(r, c[0], "client", "kafka", "Produce", "t", 0,
		  counted_n(cnt, n, "Produce", "t", "0"));
	expect_op(r, c[1], "client", "kafka", "Produce", "bad", 10,
		  counted_n(cnt, n, "Produce", "bad", "10"));
	expect_no_loss(r, log);
	json_object_put(r);
	free(counts);
	free(out[0]);
	free(out[1]);
	free(log);
}

Test(proto_db, kafka_kcat_and_broker)
{
	kcat_produce(false, false);
}

Test(proto_db, kafka_v0_kcat_and_sarama_mock)
{
	kcat_produce(true, false);
}

/*
 * The brokers' side. Brokers read a request's 4-byte size by itself, then the rest
 * (kafka_broker.py recv(4); sarama decodeRequest io.ReadFull of 4; Kafka's own NetworkReceive
 * reads a 4-byte size buffer first): the program tells Kafka from the size and the header
 * that follows it (bpf/net.bpf.c, DET_KAFKA_BODY).
 */
Test(proto_db, kafka_broker_side)
{
	kcat_produce(false, true);
}

Test(proto_db, kafka_v0_broker_side)
{
	kcat_produce(true, true);
}

/* mysql2's commands of kind ("Query", "Prepare", "Execute", "Quit") in MariaDB's general log. */
static int general_log_count(const char *kind)
{
	char *log = slurp(tmp_path("db/general.log"), NULL), needle[64];
	int n;

	cr_assert_not_null(log);
	snprintf(needle, sizeof(needle), " %s\t", kind);
	n = count_in(log, needle);
	free(log);
	return n;
}

/*
 * npm mysql2 against MariaDB on one plaintext connection: 3 statements to set up, 10 query()
 * of one text, 6 execute() of another (one COM_STMT_PREPARE, then COM_STMT_EXECUTE each), and
 * ER_NO_SUCH_TABLE (1146) once to a COM_QUERY and once to a COM_STMT_PREPARE. Both sides
 * show each command on its text (an execute on its prepared text), the two errors, and as
 * many commands as the server logged plus the prepare it refused (not logged).
 */
Test(proto_db, mysql_prepared_statements_mysql2_and_mariadb)
{
	int port = free_port(13400, 13499);
	char portarg[16], pids[32], npm[4200], *log, *out, *err = NULL;
	char *deps[] = { "/bin/sh", (char *)src("tests/programs/npm-deps.sh"), npm, NULL };
	char *cli[] = { "/usr/bin/node",
			(char *)src("tests/programs/mysql2_client.js"),
			npm,
			portarg,
			"10",
			"6",
			NULL };
	int setup_n, query, rows, exec, exec_rows, errors, code1, code2;
	int logged;
	struct json_object *r;
	struct nr_sum s;
	pid_t sv, c;

	snprintf(npm, sizeof(npm), "%s", bin("npm"));
	if (access(bin("npm/node_modules/mysql2/package.json"), F_OK)) {
		int rc = run_cmd(deps, &err);

		if (rc)
			cr_skip_test("npm module mysql2 missing: tests/programs/npm-deps.sh %s failed "
				     "(%d: no npm registry?): %s",
				     npm, rc, err);
		free(err);
	}
	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	sv = server = nr_mariadb_start(port, NULL);
	c = clients[0] = nr_spawn_when(tmp_path("go"), tmp_path("client.out"), cli);
	cr_assert_gt(c, 0);
	snprintf(pids, sizeof(pids), "%d,%d", (int)c, (int)sv);
	task = nr_start(pids, "8s", "mysql.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(client_wait(0, "client.out", &out), 0, "%s", out);
	cr_assert_eq(sscanf(out,
			    "setup=%d query=%d rows=%d exec=%d exec_rows=%d errors=%d codes=%d,%d",
			    &setup_n, &query, &rows, &exec, &exec_rows, &errors, &code1, &code2),
		     8, "%s", out);
	cr_assert(setup_n == 3 && query == 10 && rows == 30 && exec == 6 && exec_rows == 4 &&
			  errors == 2 && code1 == 1146 && code2 == 1146,
		  "%s", out);
	r = nr_end(task, "mysql.json", &log);
	task = -1;
	/* what the server logged of it: every command but the prepare it refused */
	cr_assert_eq(general_log_count("Prepare"), 1);
	cr_assert_eq(general_log_count("Execute"), exec);
	cr_assert_eq(general_log_count("Query"), setup_n + query + 1);
	cr_assert_eq(general_log_count("Quit"), 1);
	logged = general_log_count("Query") + general_log_count("Prepare") +
		 general_log_count("Execute") + general_log_count("Quit");

	for (int side = 0; side < 2; side++) {
		int pid = side ? sv : c;
		const char *role = side ? "server" : "client";

		expect_op(r, pid, role, "mysql", "COM_QUERY", "CREATE DATABASE d", 0, 1);
		expect_op(r, pid, role, "mysql", "COM_QUERY", "CREATE TABLE d.t (a INT)", 0, 1);
		expect_op(r, pid, role, "mysql", "COM_QUERY", "INSERT INTO d.t VALUES (1),(2),(3)",
			  0, 1);
		expect_op(r, pid, role, "mysql", "COM_QUERY", "SELECT a FROM d.t", 0, query);
		expect_op(r, pid, role, "mysql", "COM_STMT_PREPARE",
			  "SELECT a FROM d.t WHERE a = ?", 0, 1);
		expect_op(r, pid, role, "mysql", "COM_STMT_EXECUTE",
			  "SELECT a FROM d.t WHERE a = ?", 0, exec);
		expect_op(r, pid, role, "mysql", "COM_QUERY", "SELECT a FROM d.nosuch", code1, 1);
		expect_op(r, pid, role, "mysql", "COM_STMT_PREPARE",
			  "SELECT a FROM d.nosuch WHERE a = ?", code2, 1);
		expect_op(r, pid, role, "mysql", "COM_QUIT", "", 0, 1);
		nr_sum(r, pid, "mysql", &s);
		cr_assert_eq(s.requests, logged + 1, "%s: %d logged: %s", role, logged, nr_dump(r));
		cr_assert_eq(s.errors, errors, "%s: %s", role, nr_dump(r));
		cr_assert_eq(nr_sum_code(r, pid, "mysql", 1146), errors, "%s", nr_dump(r));
		cr_assert_eq(s.conns, 1, "%s: %s", role, nr_dump(r));
	}
	expect_no_loss(r, log);
	json_object_put(r);
	free(out);
	free(log);
}
