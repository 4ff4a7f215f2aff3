// SPDX-License-Identifier: Apache-2.0
/*
 * NETWORK protocols beyond HTTP/1 through the whole pipeline (the program's detection, the
 * worker, the shipper's parsers, the report), against the real servers and clients of
 * network-peers.md: every count and code is what the client itself printed.
 *
 * The report's contract for them: each element of "connections" has "protocol" (mysql, cql,
 * mongodb, kafka, dns; http for HTTP/1 and HTTP/2), "requests", "errors" and "codes" (the
 * protocol's own result codes: {"code": count}); each element of "endpoints" has
 * "protocol", "method" (the operation: a DNS query type, a MySQL command, ...), "path" (its
 * target: the query name, the statement, ...) and "status" (its codes).
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/netreport.h"

static struct tls_proc ub;
static struct tls_cert cert;
static struct nginx ng;
static pid_t task = -1, client = -1, db = -1;

static void setup(void)
{
	memset(&ub, 0, sizeof(ub));
	memset(&ng, 0, sizeof(ng));
	task = client = db = -1;
	tmp_setup();
	if (tls_cert_make(tmp, &cert))
		abort();
}

static void teardown(void)
{
	if (task > 0)
		wait_cmd(task, 1);
	if (client > 0)
		wait_cmd(client, 1);
	if (db > 0) {
		kill(db, SIGTERM);
		wait_cmd(db, 20000);
	}
	unbound_stop(&ub);
	nginx_free(&ng);
	tmp_teardown();
}

TestSuite(proto, .init = setup, .fini = teardown, .timeout = 180);

static int count_in(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* One DNS endpoint of pid: n queries of type for name, all answered with rcode. */
static void expect_dns(struct json_object *r, int pid, const char *role, const char *type,
		       const char *name, int rcode, int64_t n)
{
	struct json_object *e = nr_endpoint(r, pid, role, "dns", type, name);

	cr_assert_not_null(e, "no %s %s %s endpoint of %d: %s", role, type, name, pid,
			   nr_dump(nr_array(r, "endpoints")));
	cr_assert_eq(nr_int(e, "requests"), n, "%s", nr_dump(e));
	cr_assert_eq(nr_code(e, rcode), n, "%s", nr_dump(e));
}

/*
 * kdig asks unbound five questions over one TCP connection (+keepopen): the client's and the
 * server's side each show them by type and name with the rcodes kdig printed.
 */
/*
 * dig asks unbound three questions over TLS (DNS over TLS, port 853's protocol; dig uses
 * OpenSSL's _ex calls): unbound's side, its plaintext from the TLS probes on its libssl, shows
 * them by type and name, marked ssl. (dig maps its libssl only when the shell holding it back
 * execs it: the server is the side traced.)
 */
Test(proto, dns_over_tls_dig_and_unbound)
{
	int port = free_port(15600, 15699);
	char portarg[16], pids[32], *log, *out;
	char *argv[] = { "dig",
			 "@127.0.0.1",
			 "-p",
			 portarg,
			 "+tls",
			 "+tries=1",
			 "+time=5",
			 "example.test",
			 "nope.example.test",
			 "example.test",
			 NULL };
	struct json_object *r;
	struct nr_sum s;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	cr_assert_eq(unbound_start(port, &cert, &ub), 0);
	client = nr_spawn_when(tmp_path("go"), tmp_path("dig.out"), argv);
	cr_assert_gt(client, 0);
	snprintf(pids, sizeof(pids), "%d", (int)ub.pid);
	task = nr_start(pids, "5s", "dot.json", 1);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(wait_cmd(client, 20000), 0, "%s", slurp(tmp_path("dig.out"), NULL));
	client = -1;
	out = slurp(tmp_path("dig.out"), NULL);
	cr_assert_eq(count_in(out, "status: NOERROR"), 2, "%s", out);
	cr_assert_eq(count_in(out, "status: NXDOMAIN"), 1, "%s", out);
	r = nr_end(task, "dot.json", &log);
	task = -1;

	expect_dns(r, ub.pid, "server", "A", "example.test", 0, 2);
	expect_dns(r, ub.pid, "server", "A", "nope.example.test", 3, 1);
	nr_sum(r, ub.pid, "dns", &s);
	cr_assert_eq(s.requests, 3, "%s", nr_dump(r));
	cr_assert_eq(s.errors, 1, "%s", nr_dump(r));
	cr_assert_gt(s.pairs, 0);
	cr_assert_eq(s.ssl_pairs, s.pairs, "%s", nr_dump(r));
	json_object_put(r);
	free(out);
	free(log);
}

/*
 * dig asks dnsmasq three questions over UDP: dnsmasq answers names under test.local and
 * refuses the rest (no upstream). dig's sockets are connected; dnsmasq's is not (its remote is
 * where it sends its answers).
 */
Test(proto, dns_over_udp_dig_and_dnsmasq)
{
	int port = free_port(15400, 15499);
	char portarg[16], pidfile[4200], pids[32], addr[] = "--address=/test.local/127.0.0.2";
	char *log, *out;
	char *dm[] = { "/usr/sbin/dnsmasq",
		       "--no-daemon",
		       "--conf-file=/dev/null",
		       "--listen-address=127.0.0.1",
		       "--bind-interfaces",
		       portarg,
		       addr,
		       "--no-resolv",
		       "--no-hosts",
		       "--user=root",
		       pidfile,
		       NULL };
	char *argv[] = { "dig",	    "@127.0.0.1",   "-p",	    portarg + 7,     "+tries=1",
			 "+time=5", "a.test.local", "b.test.local", "other.example", NULL };
	struct json_object *r;
	struct nr_sum s;
	pid_t dig, dnsmasq;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "--port=%d", port);
	snprintf(pidfile, sizeof(pidfile), "--pid-file=%s", tmp_path("dnsmasq.pid"));
	dnsmasq = db = spawn_cmd(dm, tmp_path("dnsmasq.log"));
	cr_assert_gt(dnsmasq, 0);
	sleep_ms(500);
	dig = client = nr_spawn_when(tmp_path("go"), tmp_path("dig.out"), argv);
	cr_assert_gt(client, 0);
	snprintf(pids, sizeof(pids), "%d,%d", (int)dig, (int)dnsmasq);
	task = nr_start(pids, "5s", "udp.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(wait_cmd(client, 20000), 0, "%s", slurp(tmp_path("dig.out"), NULL));
	client = -1;
	out = slurp(tmp_path("dig.out"), NULL);
	cr_assert_eq(count_in(out, "status: NOERROR"), 2, "%s", out);
	cr_assert_eq(count_in(out, "status: REFUSED"), 1, "%s", out);
	r = nr_end(task, "udp.json", &log);
	task = -1;

	expect_dns(r, dig, "client", "A", "a.test.local", 0, 1);
	expect_dns(r, dig, "client", "A", "b.test.local", 0, 1);
	expect_dns(r, dig, "client", "A", "other.example", 5, 1);
	expect_dns(r, dnsmasq, "server", "A", "a.test.local", 0, 1);
	expect_dns(r, dnsmasq, "server", "A", "other.example", 5, 1);
	nr_sum(r, dnsmasq, "dns", &s);
	cr_assert_eq(s.requests, 3, "%s", nr_dump(r));
	cr_assert_eq(s.errors, 1, "%s", nr_dump(r));
	cr_assert_eq(s.bytes_sent > 0 && s.bytes_received > 0, 1, "%s", nr_dump(r));
	nr_sum(r, dig, "dns", &s);
	cr_assert_eq(s.requests, 3, "%s", nr_dump(r));
	json_object_put(r);
	free(out);
	free(log);
}

Test(proto, dns_over_tcp_kdig_and_unbound)
{
	int port = free_port(15300, 15399);
	char portarg[16], pids[32], *log, *out;
	char *argv[] = { "kdig",
			 "@127.0.0.1",
			 "-p",
			 portarg,
			 "+tcp",
			 "+keepopen",
			 "+retry=0",
			 "+timeout=5",
			 "example.test",
			 "A",
			 "example.test",
			 "A",
			 "example.test",
			 "AAAA",
			 "nope.example.test",
			 "A",
			 "nope.example.test",
			 "A",
			 NULL };
	struct json_object *r;
	struct nr_sum s;
	pid_t kdig;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	cr_assert_eq(unbound_start(port, NULL, &ub), 0);
	kdig = client = nr_spawn_when(tmp_path("go"), tmp_path("kdig.out"), argv);
	cr_assert_gt(client, 0);
	snprintf(pids, sizeof(pids), "%d,%d", (int)client, (int)ub.pid);
	task = nr_start(pids, "5s", "dns.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(wait_cmd(client, 20000), 0, "%s", slurp(tmp_path("kdig.out"), NULL));
	client = -1;
	out = slurp(tmp_path("kdig.out"), NULL);
	cr_assert_eq(count_in(out, "status: NOERROR"), 3, "%s", out);
	cr_assert_eq(count_in(out, "status: NXDOMAIN"), 2, "%s", out);
	r = nr_end(task, "dns.json", &log);
	task = -1;

	expect_dns(r, ub.pid, "server", "A", "example.test", 0, 2);
	expect_dns(r, ub.pid, "server", "AAAA", "example.test", 0, 1);
	expect_dns(r, ub.pid, "server", "A", "nope.example.test", 3, 2);
	nr_sum(r, ub.pid, "dns", &s);
	cr_assert_eq(s.requests, 5, "%s", nr_dump(r));
	cr_assert_eq(s.errors, 2, "NXDOMAIN twice: %s", nr_dump(r));
	cr_assert_eq(nr_sum_code(r, ub.pid, "dns", 3), 2);
	cr_assert_eq(s.conns, 1, "%s", nr_dump(r));

	expect_dns(r, kdig, "client", "A", "example.test", 0, 2);
	expect_dns(r, kdig, "client", "AAAA", "example.test", 0, 1);
	expect_dns(r, kdig, "client", "A", "nope.example.test", 3, 2);
	nr_sum(r, kdig, "dns", &s);
	cr_assert_eq(s.requests, 5, "%s", nr_dump(r));
	cr_assert_eq(s.errors, 2, "%s", nr_dump(r));
	json_object_put(r);
	free(out);
	free(log);
}

/* Commands of kind ("Query", "Quit", "Prepare", "Execute") in the server's general log. */
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

static const char *const mysql_statements =
	"CREATE DATABASE d;\nCREATE TABLE d.t (a INT);\nINSERT INTO d.t VALUES (1),(2),(3);\n"
	"SELECT a FROM d.t;\nSELECT a FROM d.nosuch;\nSELECT a FROM d.t WHERE a > 1;\n";

/*
 * The mariadb client runs six statements against MariaDB, one of them on a missing table: the
 * client's and the server's side show each statement, the error code 1146 on that one, and as
 * many commands as the server logged. ssl: the session upgrades to TLS after the greeting, and
 * the statements come as the TLS libraries' plaintext.
 */
static void mariadb_cli(bool ssl)
{
	int port = free_port(13300, 13399);
	char portarg[16], pids[32], *log, *out;
	char cmd[8400];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct json_object *r, *e;
	struct nr_sum s;
	pid_t cli;
	int queries, quits;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	/* From a file: --force goes on after an error in a script, not in -e's statements. */
	cr_assert_eq(write_file(tmp_path("statements.sql"), mysql_statements), 0);
	snprintf(cmd, sizeof(cmd), "exec mariadb -h 127.0.0.1 -P %s -u root %s --force <%s",
		 portarg, ssl ? "--ssl" : "--skip-ssl", tmp_path("statements.sql"));
	db = nr_mariadb_start(port, &cert);
	cli = client = nr_spawn_when(tmp_path("go"), tmp_path("cli.out"), argv);
	cr_assert_gt(client, 0);
	/* Over TLS the server only: the client maps libssl when the shell holding it execs it. */
	if (ssl)
		snprintf(pids, sizeof(pids), "%d", (int)db);
	else
		snprintf(pids, sizeof(pids), "%d,%d", (int)cli, (int)db);
	task = nr_start(pids, "6s", "mysql.json", ssl ? 1 : 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	/* --force: it goes on after the error (its status says it met one, or not) */
	cr_assert_leq(wait_cmd(client, 30000), 1, "%s", slurp(tmp_path("cli.out"), NULL));
	client = -1;
	out = slurp(tmp_path("cli.out"), NULL);
	cr_assert(strstr(out, "ERROR 1146"), "%s", out);
	r = nr_end(task, "mysql.json", &log);
	task = -1;
	queries = general_log_count("Query");
	quits = general_log_count("Quit");
	cr_assert_geq(queries, 6, "%s", slurp(tmp_path("db/general.log"), NULL));

	for (int side = ssl ? 1 : 0; side < 2; side++) {
		int pid = side ? db : cli;
		const char *role = side ? "server" : "client";

		e = nr_endpoint(r, pid, role, "mysql", "COM_QUERY", "SELECT a FROM d.nosuch");
		cr_assert_not_null(e, "%s: %s", role, nr_dump(nr_array(r, "endpoints")));
		cr_assert_eq(nr_int(e, "requests"), 1);
		cr_assert_eq(nr_code(e, 1146), 1, "%s", nr_dump(e));
		e = nr_endpoint(r, pid, role, "mysql", "COM_QUERY",
				"SELECT a FROM d.t WHERE a > 1");
		cr_assert_not_null(e, "%s: %s", role, nr_dump(nr_array(r, "endpoints")));
		cr_assert_eq(nr_code(e, 0), 1, "%s", nr_dump(e));
		e = nr_endpoint(r, pid, role, "mysql", "COM_QUERY",
				"INSERT INTO d.t VALUES (1),(2),(3)");
		cr_assert_not_null(e, "%s: %s", role, nr_dump(nr_array(r, "endpoints")));
		nr_sum(r, pid, "mysql", &s);
		cr_assert_eq(s.requests, queries + quits, "%s: %d queries and %d quits logged: %s",
			     role, queries, quits, nr_dump(r));
		cr_assert_eq(s.errors, 1, "%s", nr_dump(r));
		cr_assert_eq(nr_sum_code(r, pid, "mysql", 1146), 1);
		cr_assert_eq(s.conns, 1, "%s", nr_dump(r));
		cr_assert_eq(s.ssl_pairs, ssl ? s.pairs : 0, "%s", nr_dump(r));
	}
	json_object_put(r);
	free(out);
	free(log);
}

Test(proto, mysql_mariadb_client_and_server)
{
	mariadb_cli(false);
}

Test(proto, mysql_upgraded_to_tls_mid_session)
{
	mariadb_cli(true);
}

/* One HTTP/2 endpoint of pid: n requests of path, all answered with status. */
static void expect_h2(struct json_object *r, int pid, const char *role, const char *path,
		      int status, int64_t n)
{
	struct json_object *e = nr_endpoint(r, pid, role, "http2", "GET", path);

	cr_assert_not_null(e, "no %s GET %s endpoint of %d: %s", role, path, pid,
			   nr_dump(nr_array(r, "endpoints")));
	cr_assert_eq(nr_int(e, "requests"), n, "%s", nr_dump(e));
	cr_assert_eq(nr_code(e, status), n, "%s", nr_dump(e));
}

/*
 * h2load sends 300 requests over 2 connections, 4 streams at a time, to three paths of
 * nginx serving HTTP/2 (cleartext with prior knowledge, or h2 over TLS): both sides show each
 * path with the statuses nginx logged and h2load counted; HPACK decoded from the start of
 * each connection, so no path is unknown.
 */
static void h2load_nginx(bool tls)
{
	int port = free_port(18100, 18199);
	char u1[64], u2[64], u3[64], pids[32], *log, *out;
	char *argv[] = { "h2load", "-n", "300", "-c", "2", "-m", "4", u1, u2, u3, NULL };
	struct http_totals logged;
	struct json_object *r;
	struct nr_sum s;
	unsigned x2, x4, x5;
	pid_t h2load;

	cr_assert_gt(port, 0);
	cr_assert_eq(nginx_start_h2(port, tls ? &cert : NULL, &ng), 0);
	snprintf(u1, sizeof(u1), "%s://127.0.0.1:%d/ok", tls ? "https" : "http", port);
	snprintf(u2, sizeof(u2), "%s://127.0.0.1:%d/missing", tls ? "https" : "http", port);
	snprintf(u3, sizeof(u3), "%s://127.0.0.1:%d/fail", tls ? "https" : "http", port);
	h2load = client = nr_spawn_when(tmp_path("go"), tmp_path("h2load.out"), argv);
	cr_assert_gt(client, 0);
	/*
	 * Over TLS the server only: h2load maps its libssl when the shell that holds it back
	 * execs it, after the task's first look for TLS libraries.
	 */
	if (tls)
		snprintf(pids, sizeof(pids), "%d", (int)ng.worker);
	else
		snprintf(pids, sizeof(pids), "%d,%d", (int)h2load, (int)ng.worker);
	task = nr_start(pids, "6s", "h2.json", tls ? 1 : 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(wait_cmd(client, 30000), 0, "%s", slurp(tmp_path("h2load.out"), NULL));
	client = -1;
	out = slurp(tmp_path("h2load.out"), NULL);
	cr_assert(out && strstr(out, "status codes: "), "%s", out);
	cr_assert_eq(sscanf(strstr(out, "status codes: "),
			    "status codes: %u 2xx, %*u 3xx, %u 4xx, %u 5xx", &x2, &x4, &x5),
		     3, "%s", out);
	cr_assert_eq(x2 + x4 + x5, 300, "%s", out);
	r = nr_end(task, "h2.json", &log);
	task = -1;
	cr_assert_eq(nginx_access_log_counts(&ng, &logged), 0);
	cr_assert_eq(logged.requests, 300);

	for (int side = tls ? 1 : 0; side < 2; side++) {
		int pid = side ? ng.worker : h2load;
		const char *role = side ? "server" : "client";

		expect_h2(r, pid, role, "/ok", 200, logged.status[200]);
		expect_h2(r, pid, role, "/missing", 404, logged.status[404]);
		expect_h2(r, pid, role, "/fail", 500, logged.status[500]);
		nr_sum(r, pid, "http", &s);
		cr_assert_eq(s.requests, 300, "%s: %s", role, nr_dump(r));
		cr_assert_eq(s.conns, 2, "%s", nr_dump(r));
		cr_assert_eq(s.ssl_pairs, tls ? s.pairs : 0, "%s", nr_dump(r));
	}
	cr_assert_eq(logged.status[200], x2);
	cr_assert_eq(nr_int(nr_endpoint(r, ng.worker, "server", "http2", "GET", "*"), "requests"),
		     -1, "no path unknown: %s", nr_dump(nr_array(r, "endpoints")));
	cr_assert_eq(nr_int(nr_obj(r, "losses"), "http2_headers_undecodable"), 0, "%s", nr_dump(r));
	json_object_put(r);
	free(out);
	free(log);
}

Test(proto, http2_cleartext_h2load_and_nginx)
{
	h2load_nginx(false);
}

Test(proto, http2_over_tls_h2load_and_nginx)
{
	h2load_nginx(true);
}

/*
 * A gRPC client makes 20 calls that succeed and 7 that end with NOT_FOUND on one cleartext
 * HTTP/2 channel to a gRPC server (grpcio, both traced): each side shows the two methods with
 * their grpc-status (0 and 5), as many as the client counted.
 */
Test(proto, grpc_status_by_method)
{
	int port = free_port(18200, 18299);
	char portarg[16], pids[32], *log, *out, peer[4200];
	char *srv[] = {
		"/usr/bin/python3", peer, "server", portarg, (char *)tmp_path("ready"), NULL
	};
	char *cli[] = { "/usr/bin/python3", peer, "client", portarg, "20", "7", NULL };
	struct json_object *r, *e;
	struct nr_sum s;
	pid_t c, sv;
	int ok = -1, fail = -1;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	snprintf(peer, sizeof(peer), "%s", src("tests/programs/grpc_peer.py"));
	sv = db = spawn_cmd(srv, tmp_path("server.log"));
	cr_assert_gt(sv, 0);
	for (int i = 0; i < 200 && access(tmp_path("ready"), F_OK); i++)
		sleep_ms(50);
	cr_assert_eq(access(tmp_path("ready"), F_OK), 0, "%s", slurp(tmp_path("server.log"), NULL));
	c = client = nr_spawn_when(tmp_path("go"), tmp_path("client.out"), cli);
	cr_assert_gt(client, 0);
	snprintf(pids, sizeof(pids), "%d,%d", (int)c, (int)sv);
	task = nr_start(pids, "8s", "grpc.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(wait_cmd(client, 30000), 0, "%s", slurp(tmp_path("client.out"), NULL));
	client = -1;
	out = slurp(tmp_path("client.out"), NULL);
	cr_assert_eq(sscanf(out, "ok=%d fail=%d", &ok, &fail), 2, "%s", out);
	cr_assert_eq(ok, 20);
	cr_assert_eq(fail, 7);
	r = nr_end(task, "grpc.json", &log);
	task = -1;

	for (int side = 0; side < 2; side++) {
		int pid = side ? sv : c;
		const char *role = side ? "server" : "client";

		e = nr_endpoint(r, pid, role, "grpc", "POST", "/rover.Test/Ok");
		cr_assert_not_null(e, "%s: %s\n%s", role, nr_dump(r), log);
		cr_assert_eq(nr_int(e, "requests"), ok, "%s", nr_dump(e));
		cr_assert_eq(nr_code(e, 0), ok, "%s", nr_dump(e));
		e = nr_endpoint(r, pid, role, "grpc", "POST", "/rover.Test/Fail");
		cr_assert_not_null(e, "%s: %s", role, nr_dump(nr_array(r, "endpoints")));
		cr_assert_eq(nr_code(e, 5), fail, "%s", nr_dump(e));
		nr_sum(r, pid, "http", &s);
		cr_assert_eq(s.requests, ok + fail, "%s: %s", role, nr_dump(r));
	}
	json_object_put(r);
	free(out);
	free(log);
}

/*
 * The same client's channel opened, and used five times, before the task: the server's side
 * of it is met mid-way, with both HPACK tables' contents unknown. Every later call is still
 * counted, with the statuses that need no table entry; whatever needed one is counted as
 * missed and shown as unknown (path "*"), never named after a method it may not be.
 */
Test(proto, grpc_met_mid_connection_counts_and_never_guesses)
{
	int port = free_port(18300, 18399);
	char portarg[16], pids[32], *log, *out, peer[4200];
	char *srv[] = {
		"/usr/bin/python3", peer, "server", portarg, (char *)tmp_path("ready"), NULL
	};
	char gofile[4200];
	/* tmp_path's buffers rotate: the path is copied before it is given away */
	char *cli[] = { "/usr/bin/python3", peer, "client", portarg, "20", "7", gofile, "5", NULL };
	struct json_object *r, *eps;
	struct nr_sum s;
	pid_t c, sv;
	int ok = -1, fail = -1;
	int64_t named = 0, unknown = 0;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	snprintf(peer, sizeof(peer), "%s", src("tests/programs/grpc_peer.py"));
	snprintf(gofile, sizeof(gofile), "%s", tmp_path("go"));
	sv = db = spawn_cmd(srv, tmp_path("server.log"));
	cr_assert_gt(sv, 0);
	for (int i = 0; i < 200 && access(tmp_path("ready"), F_OK); i++)
		sleep_ms(50);
	cr_assert_eq(access(tmp_path("ready"), F_OK), 0, "%s", slurp(tmp_path("server.log"), NULL));
	c = client = nr_spawn_when(tmp_path("started"), tmp_path("client.out"), cli);
	cr_assert_eq(write_file(tmp_path("started"), ""), 0);
	for (int i = 0; i < 400; i++) {
		out = slurp(tmp_path("client.out"), NULL);
		if (out && strstr(out, "waiting"))
			break;
		free(out);
		out = NULL;
		sleep_ms(50);
	}
	cr_assert_not_null(out, "the client made no calls before the task");
	free(out);
	snprintf(pids, sizeof(pids), "%d", (int)sv);
	task = nr_start(pids, "8s", "grpc_mid.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(wait_cmd(client, 30000), 0, "%s", slurp(tmp_path("client.out"), NULL));
	client = -1;
	out = slurp(tmp_path("client.out"), NULL);
	cr_assert(strstr(out, "ok="), "%s", out);
	cr_assert_eq(sscanf(strstr(out, "ok="), "ok=%d fail=%d", &ok, &fail), 2, "%s", out);
	cr_assert_eq(ok + fail, 27);
	r = nr_end(task, "grpc_mid.json", &log);
	task = -1;
	(void)c;

	nr_sum(r, sv, "http", &s);
	cr_assert_eq(s.requests, 27, "every call after the start counted: %s", nr_dump(r));
	eps = nr_array(r, "endpoints");
	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *e = json_object_array_get_idx(eps, i);
		const char *path = nr_str(e, "path");

		if (!strcmp(path, "*"))
			unknown += nr_int(e, "requests");
		else if (!strcmp(path, "/rover.Test/Ok") || !strcmp(path, "/rover.Test/Fail"))
			named += nr_int(e, "requests");
		else
			cr_assert_fail("a path made up: %s", nr_dump(e));
	}
	cr_assert_eq(named + unknown, 27, "%s", nr_dump(eps));
	cr_assert_gt(nr_int(nr_obj(r, "losses"), "http2_hpack_missed_before_start") +
			     nr_int(nr_obj(r, "losses"), "http2_headers_undecodable"),
		     0, "the tables' unknown entries are counted: %s", nr_dump(r));
	json_object_put(r);
	free(out);
	free(log);
}
