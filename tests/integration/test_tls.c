// SPDX-License-Identifier: Apache-2.0
/*
 * NETWORK over TLS through the whole pipeline: the plaintext that SSL_read/SSL_write (and their
 * _ex variants), BoringSSL's, node's static OpenSSL's and Go's crypto/tls.(*Conn).Read/Write
 * carry is parsed as HTTP/1.x, and every count is what the peers themselves counted (nginx's
 * access log, the TLS peers' totals, curl's). One library per test, as network-peers.md 2.2
 * lists them; GnuTLS (kdig) is claimed by none, and its connection must say so.
 *
 * The report's contract for TLS: each element of "connections" has a boolean "ssl"; a
 * top-level "tls" array lists what was attached: [{pid, path, library, probes}], library one
 * of "openssl", "boringssl", "go", "node".
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/netreport.h"

static struct nginx ng;
static struct tls_proc srv, bs, ub;
static struct tls_cert cert;
static pid_t task = -1;
static pid_t clients[3];

static void setup(void)
{
	memset(&ng, 0, sizeof(ng));
	memset(&srv, 0, sizeof(srv));
	memset(&bs, 0, sizeof(bs));
	memset(&ub, 0, sizeof(ub));
	memset(clients, 0, sizeof(clients));
	task = -1;
	tmp_setup();
	if (tls_cert_make(tmp, &cert))
		abort();
}

/* Whatever a failed assertion left running, by pid. */
static void teardown(void)
{
	if (task > 0)
		wait_cmd(task, 1);
	for (size_t i = 0; i < 3; i++)
		if (clients[i] > 0)
			wait_cmd(clients[i], 1);
	nginx_free(&ng);
	if (srv.pid > 0)
		tls_server_stop(&srv, NULL);
	if (bs.pid > 0)
		bssl_server_stop(&bs, NULL);
	unbound_stop(&ub);
	tmp_teardown();
}

TestSuite(tls, .init = setup, .fini = teardown, .timeout = 180);

/* How many times needle is in the log of the task whose output is tmp/name. */
static int log_count(const char *name, const char *needle)
{
	char log[4096], *text;
	int n = 0;

	snprintf(log, sizeof(log), "%s/%s.log", tmp, name);
	text = slurp(log, NULL);
	for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(text);
	return n;
}

/*
 * Waits (15 s at most) until the shipper said of tls libraries that their probes are
 * attached: a library is found when the task begins and at each flush after.
 */
static void wait_tls_attached(const char *name, int tls)
{
	for (int i = 0; i < 300 && log_count(name, "probes attached") < tls; i++)
		sleep_ms(50);
	cr_assert_geq(log_count(name, "probes attached"), tls, "TLS probes not attached");
}

/* As test_network.c: `rover profile --type network` on pids, output tmp/name, returning once
 * the worker runs the task and has said what it attached (its "attached with" line), and the
 * probes of the tls libraries the targets map already are attached: what the test drives next
 * is in the task. */
static void start_task_tls(const char *pids, const char *duration, const char *name, int tls)
{
	char out[4096], log[4096];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--type",
			 "network",
			 "--pid",
			 (char *)pids,
			 "--duration",
			 (char *)duration,
			 "--output",
			 out,
			 NULL };

	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	snprintf(log, sizeof(log), "%s/%s.log", tmp, name);
	task = spawn_cmd(argv, log);
	cr_assert_gt(task, 0);
	for (int i = 0; i < 200; i++) {
		char *text = slurp(log, NULL);
		int running = text && strstr(text, "running in worker") &&
			      strstr(text, "attached with");

		free(text);
		if (running) {
			wait_tls_attached(name, tls);
			return;
		}
		sleep_ms(50);
	}
	cr_assert_fail("the NETWORK task did not start: %s", slurp(log, NULL));
}

/* Waits for the task to end; its JSON report and its log. */
static struct json_object *end_task(const char *name, char **ret_log)
{
	char path[4096];
	struct json_object *j;
	int rc = wait_cmd(task, 60000);

	task = -1;
	snprintf(path, sizeof(path), "%s/%s.log", tmp, name);
	*ret_log = slurp(path, NULL);
	cr_assert_eq(rc, 0, "rover profile: %s", *ret_log);
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	j = json_object_from_file(path);
	cr_assert_not_null(j, "%s is not JSON", path);
	return j;
}

static int64_t jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return -1;
	return json_object_get_int64(v);
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return "";
	return json_object_get_string(v);
}

static const char *dump(struct json_object *r)
{
	return json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN);
}

static struct json_object *array(struct json_object *r, const char *key)
{
	struct json_object *a;

	cr_assert(json_object_object_get_ex(r, key, &a) && json_object_is_type(a, json_type_array),
		  "the report has no \"%s\" array: %s", key, dump(r));
	return a;
}

/* The report's endpoint of pid with that role and path, or NULL. */
static struct json_object *endpoint(struct json_object *r, int pid, const char *role,
				    const char *path)
{
	struct json_object *eps = array(r, "endpoints");

	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *e = json_object_array_get_idx(eps, i);

		if (jint(e, "pid") == pid && !strcmp(jstr(e, "role"), role) &&
		    !strcmp(jstr(e, "path"), path))
			return e;
	}
	return NULL;
}

static int64_t status_count(struct json_object *e, int code)
{
	struct json_object *st;
	char key[8];

	if (!e || !json_object_object_get_ex(e, "status", &st))
		return 0;
	snprintf(key, sizeof(key), "%d", code);
	return jint(st, key) < 0 ? 0 : jint(st, key);
}

/* Every endpoint of pid with that role holds exactly the statuses the peers counted, at path
 * (one path per test client, or the server's three), and there are no others. */
struct expect {
	const char *path;
	int code;
	uint64_t n;
};

static void expect_endpoints(struct json_object *r, int pid, const char *role,
			     const struct expect *want, size_t nwant)
{
	struct json_object *eps = array(r, "endpoints");
	uint64_t total = 0, seen = 0;

	for (size_t i = 0; i < nwant; i++) {
		struct json_object *e = endpoint(r, pid, role, want[i].path);

		cr_assert_not_null(e, "no %s endpoint %s of pid %d: %s", role, want[i].path, pid,
				   dump(r));
		cr_assert_eq(status_count(e, want[i].code), (int64_t)want[i].n,
			     "pid %d %s %s: %lld x %d in the report, %lu counted by the peers: %s",
			     pid, role, want[i].path, (long long)status_count(e, want[i].code),
			     want[i].code, (unsigned long)want[i].n, dump(e));
		total += want[i].n;
	}
	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *e = json_object_array_get_idx(eps, i);

		if (jint(e, "pid") == pid && !strcmp(jstr(e, "role"), role))
			seen += (uint64_t)jint(e, "requests");
	}
	cr_assert_eq(seen, total, "pid %d %s: %lu requests in its endpoints, %lu true: %s", pid,
		     role, (unsigned long)seen, (unsigned long)total, dump(eps));
}

/* Sums of pid's connections (any role; to remote_port only, when > 0) by their "ssl" flag. */
struct ssl_sum {
	int64_t conns[2], requests[2], bytes_sent[2], bytes_received[2];
};

static void ssl_sum(struct json_object *r, int pid, int remote_port, struct ssl_sum *s)
{
	struct json_object *cs = array(r, "connections");

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i), *v, *rem;
		int ssl;

		if (jint(c, "pid") != pid)
			continue;
		if (remote_port > 0 && !(json_object_object_get_ex(c, "remote", &rem) &&
					 jint(rem, "port") == remote_port))
			continue;
		ssl = json_object_object_get_ex(c, "ssl", &v) &&
		      json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
		s->conns[ssl] += jint(c, "conns");
		s->requests[ssl] += jint(c, "requests");
		s->bytes_sent[ssl] += jint(c, "bytes_sent");
		s->bytes_received[ssl] += jint(c, "bytes_received");
	}
}

/* The connections of pid that carried its n requests say "ssl": true, and no other does. */
static void expect_ssl(struct json_object *r, int pid, uint64_t n)
{
	struct ssl_sum s;

	ssl_sum(r, pid, 0, &s);
	cr_assert_eq(s.requests[1], (int64_t)n,
		     "pid %d: %lld requests on \"ssl\": true connections, %lld on others, %lu "
		     "true: %s",
		     pid, (long long)s.requests[1], (long long)s.requests[0], (unsigned long)n,
		     dump(array(r, "connections")));
	cr_assert_eq(s.requests[0], 0);
	cr_assert_gt(s.bytes_sent[1], 0);
	cr_assert_gt(s.bytes_received[1], 0);
}

/* The "tls" entry of pid for library, or NULL. */
static struct json_object *tls_entry(struct json_object *r, int pid, const char *library)
{
	struct json_object *a;

	if (!json_object_object_get_ex(r, "tls", &a) || !json_object_is_type(a, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);

		if (jint(e, "pid") == pid && (!library || !strcmp(jstr(e, "library"), library)))
			return e;
	}
	return NULL;
}

/* What was attached for pid: library, in a file whose path contains path_part, with probes. */
static void expect_tls(struct json_object *r, int pid, const char *library, const char *path_part)
{
	struct json_object *e = tls_entry(r, pid, library);

	cr_assert_not_null(e, "no \"tls\" entry for pid %d, library %s: %s", pid, library, dump(r));
	cr_assert(strstr(jstr(e, "path"), path_part), "pid %d: %s attached in %s, not in *%s*", pid,
		  library, jstr(e, "path"), path_part);
	cr_assert_gt(jint(e, "probes"), 0, "%s", dump(e));
}

/* The HTTP parser's losses: none, when every byte it saw was a well-formed exchange. */
static void expect_no_parse_losses(struct json_object *r)
{
	static const char *const keys[] = {
		"http_unpaired",       "http_lost_segments",	"http_gap_bytes",
		"http_resyncs",	       "http_requests_dropped", "http_responses_dropped",
		"http_unanswered",     "http_orphan_responses", "http_framing_errors",
		"http_dirs_abandoned",
	};
	struct json_object *losses;

	cr_assert(json_object_object_get_ex(r, "losses", &losses), "%s", dump(r));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert_leq(jint(losses, keys[i]), 0, "%s: %s", keys[i], dump(losses));
}

static void curl_tls(int port, const char *path, int n, int want, struct http_totals *sum)
{
	char url[128];
	struct http_totals t;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
	cr_assert_eq(curl_run(url, n, &t), 0, "curl -k %s x%d", url, n);
	cr_assert_eq(t.status[want], (uint64_t)n);
	sum->requests += t.requests;
	sum->status[want] += t.status[want];
}

static void start_nginx_tls(void)
{
	int port = free_port(18440, 18459);

	cr_assert_gt(port, 0, "no free port in 18440-18459");
	cr_assert_eq(nginx_start_tls(port, &cert, &ng), 0, "nginx TLS on 127.0.0.1:%d", port);
}

/*
 * nginx over TLS, master and worker traced, curl -k as the client: the worker's endpoints are
 * its access log, per status, exactly; the connections that carried them are TLS ones.
 */
Test(tls, nginx_curl)
{
	struct http_totals c = { 0 }, logged;
	struct json_object *r;
	char pids[32], *log;
	pid_t worker;

	start_nginx_tls();
	worker = ng.worker;
	snprintf(pids, sizeof(pids), "%d,%d", (int)ng.master, (int)worker);
	start_task_tls(pids, "6s", "nginx.json", 2);
	curl_tls(ng.port, "/ok", 30, 200, &c);
	curl_tls(ng.port, "/missing", 5, 404, &c);
	curl_tls(ng.port, "/fail", 5, 500, &c);
	r = end_task("nginx.json", &log);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &logged), 0);
	cr_assert_eq(logged.requests, 40);
	{
		const struct expect want[] = { { "/ok", 200, logged.status[200] },
					       { "/missing", 404, logged.status[404] },
					       { "/fail", 500, logged.status[500] } };

		expect_endpoints(r, worker, "server", want, 3);
	}
	cr_assert_eq(jint(r, "http_exchanges"), 40, "%s", dump(r));
	expect_ssl(r, worker, 40);
	expect_tls(r, worker, "openssl", "libssl.so.3");
	expect_no_parse_losses(r);
	cr_assert(strstr(log, "no records lost"), "%s", log);
	json_object_put(r);
	free(log);
}

/* nginx over TLS under wrk (4 connections, 3 s): every request it logged, no more. */
Test(tls, nginx_wrk)
{
	struct http_totals logged;
	struct wrk_result w;
	struct json_object *r;
	char pids[32], url[128], *log;
	pid_t worker;

	start_nginx_tls();
	worker = ng.worker;
	snprintf(pids, sizeof(pids), "%d,%d", (int)ng.master, (int)worker);
	start_task_tls(pids, "7s", "wrk.json", 2);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", ng.port);
	cr_assert_eq(wrk_run(url, 3, 4, &w), 0);
	r = end_task("wrk.json", &log);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &logged), 0);
	cr_log_info("wrk over TLS: %lu requests; nginx logged %lu; report %lld",
		    (unsigned long)w.requests, (unsigned long)logged.requests,
		    (long long)jint(endpoint(r, worker, "server", "/ok"), "requests"));
	cr_assert_gt(w.requests, 1000);
	cr_assert_eq(logged.status[200], logged.requests);
	{
		/*
		 * wrk stops with a request in flight on each of its 4 connections: nginx logs
		 * it, but when wrk has closed first its SSL_write fails and no response goes
		 * out, so no exchange can be seen (the plaintext test has the same stop, where
		 * the response still fits the socket before the close). At most 4 fewer.
		 */
		int64_t got = jint(endpoint(r, worker, "server", "/ok"), "requests");

		cr_assert(got <= (int64_t)logged.status[200] &&
				  got >= (int64_t)logged.status[200] - 4,
			  "report %lld, nginx logged %lu", (long long)got,
			  (unsigned long)logged.status[200]);
		cr_assert(got >= (int64_t)w.requests, "report %lld < wrk's %lu", (long long)got,
			  (unsigned long)w.requests);
	}
	expect_tls(r, worker, "openssl", "libssl.so.3");
	/*
	 * Nothing lost but, at wrk's stop, the plaintext of at most one call per connection that
	 * OpenSSL had read ahead before wrk closed it: its connection was gone when the call
	 * returned, counted (kernel_tls_unbound), never joined to another.
	 */
	if (!strstr(log, "no records lost")) {
		const char *l = strstr(log, "rover: lost: ");
		unsigned n = 0;

		cr_assert(l && sscanf(l, "rover: lost: %u TLS calls", &n) == 1 && n <= 4 &&
				  !strstr(l + 1, "rover: lost: "),
			  "%s", log);
		cr_assert_leq(jint(nr_obj(r, "losses"), "kernel_tls_unbound"), 4, "%s", dump(r));
	}
	json_object_put(r);
	free(log);
}

/*
 * Three clients of one peer, traced from before their first byte: each waits for a go file
 * written once the task runs, then makes its GETs to nginx over TLS (nginx is not traced).
 * Each client's endpoint holds what it printed; the connections are TLS ones; library is
 * attached in a file whose path contains path_part.
 */
static void traced_clients(enum tls_peer kind, const char *library, const char *path_part)
{
	static const struct {
		const char *path;
		int n, code;
	} runs[3] = { { "/ok", 20, 200 }, { "/missing", 5, 404 }, { "/fail", 5, 500 } };
	struct http_totals got[3], logged;
	struct json_object *r;
	char pids[64], out[3][64], url[128], *log;
	pid_t pid[3];
	const char *go = tmp_path("go");
	uint64_t total = 0;

	start_nginx_tls();
	for (int i = 0; i < 3; i++) {
		snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", ng.port, runs[i].path);
		snprintf(out[i], sizeof(out[i]), "client%d.out", i);
		clients[i] = tls_client_spawn(kind, url, runs[i].n, go, tmp_path(out[i]));
		cr_assert_gt(clients[i], 0);
	}
	memcpy(pid, clients, sizeof(pid));
	snprintf(pids, sizeof(pids), "%d,%d,%d", (int)pid[0], (int)pid[1], (int)pid[2]);
	start_task_tls(pids, "10s", "clients.json", kind == TLS_PEER_PY ? 0 : 3);
	if (kind == TLS_PEER_PY) {
		/* What this test is for: libssl comes after the task. */
		char maps[64], *text;

		snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid[0]);
		text = slurp(maps, NULL);
		cr_assert(text && !strstr(text, "libssl"),
			  "python mapped libssl before its go file");
		free(text);
	}
	cr_assert_eq(write_file(go, ""), 0);
	if (kind == TLS_PEER_PY) {
		/*
		 * Each imported ssl (libssl is mapped now) and waits for a second file: the
		 * library is found at a flush of the task, and its calls traced from then on.
		 */
		char gate[4096];

		for (int i = 0; i < 3; i++) {
			snprintf(gate, sizeof(gate), "%s.%d", go, (int)pid[i]);
			for (int k = 0; k < 300 && access(gate, F_OK); k++)
				sleep_ms(50);
			cr_assert_eq(access(gate, F_OK), 0, "python %d did not import ssl", pid[i]);
		}
		wait_tls_attached("clients.json", 3);
		snprintf(gate, sizeof(gate), "%s.next", go);
		cr_assert_eq(write_file(gate, ""), 0);
	}
	for (int i = 0; i < 3; i++) {
		int rc = tls_client_wait(clients[i], tmp_path(out[i]), 30000, &got[i]);

		clients[i] = 0; /* reaped: its pid is no longer ours to kill */
		cr_assert_eq(rc, 0, "%s client %d", tls_peer_name(kind), i);
		cr_assert_eq(got[i].status[runs[i].code], (uint64_t)runs[i].n);
		total += got[i].requests;
	}
	r = end_task("clients.json", &log);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &logged), 0);
	cr_assert_eq(logged.requests, total, "nginx logged %lu, the clients got %lu",
		     (unsigned long)logged.requests, (unsigned long)total);
	for (int i = 0; i < 3; i++) {
		const struct expect want[] = { { runs[i].path, runs[i].code,
						 got[i].status[runs[i].code] } };

		expect_endpoints(r, pid[i], "client", want, 1);
		expect_ssl(r, pid[i], got[i].requests);
		expect_tls(r, pid[i], library, path_part);
	}
	cr_assert_eq(jint(r, "http_exchanges"), (int64_t)total, "%s", dump(r));
	expect_no_parse_losses(r);
	json_object_put(r);
	free(log);
}

/*
 * A traced server peer, curl -k as its client: its endpoints are its own totals; library
 * attached in a file whose path contains path_part.
 */
static void traced_server(enum tls_peer kind, const char *library, const char *path_part)
{
	struct http_totals c = { 0 }, got;
	struct json_object *r;
	char pids[16], *log;
	int port = free_port(18440, 18459);
	pid_t pid;

	cr_assert_gt(port, 0);
	cr_assert_eq(tls_server_start(kind, port, &cert, &srv), 0);
	pid = srv.pid;
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	start_task_tls(pids, "6s", "server.json", 1);
	curl_tls(port, "/ok", 20, 200, &c);
	curl_tls(port, "/missing", 5, 404, &c);
	curl_tls(port, "/fail", 5, 500, &c);
	r = end_task("server.json", &log);
	cr_assert_eq(tls_server_stop(&srv, &got), 0);
	cr_assert_eq(got.requests, 30);
	{
		const struct expect want[] = { { "/ok", 200, got.status[200] },
					       { "/missing", 404, got.status[404] },
					       { "/fail", 500, got.status[500] } };

		expect_endpoints(r, pid, "server", want, 3);
	}
	cr_assert_eq(jint(r, "http_exchanges"), 30, "%s", dump(r));
	expect_ssl(r, pid, 30);
	expect_tls(r, pid, library, path_part);
	expect_no_parse_losses(r);
	json_object_put(r);
	free(log);
}

/*
 * CPython's _ssl calls only SSL_read_ex/SSL_write_ex, and libssl is mapped only when the
 * client imports ssl, after its go file, so after the task began: the probes must be found
 * on a library mapped late, and on the _ex variants.
 */
Test(tls, python_ex)
{
	traced_clients(TLS_PEER_PY, "openssl", "libssl.so.3");
}

/*
 * BoringSSL (Android's libssl.so.0, SSL_read/SSL_write, no _ex) in bssl-tool's client, traced
 * from before its first byte, sending pipelined requests to nginx over TLS (the last one,
 * a 500, closes): its endpoints are nginx's access log. (bssl-tool's own -www server reads only the
 * first 4 bytes of a request with SSL_read: no request a plaintext probe could see whole.)
 */
Test(tls, boringssl)
{
	static const char req[] = "GET /ok HTTP/1.1\r\nHost: t\r\n\r\n"
				  "GET /ok HTTP/1.1\r\nHost: t\r\n\r\n"
				  "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n"
				  "GET /ok HTTP/1.1\r\nHost: t\r\n\r\n"
				  /* nginx closes after a 500: the last one */
				  "GET /fail HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	struct http_totals got, logged;
	struct json_object *r;
	char pids[16], *log;
	const char *fifo = tmp_path("bssl.in"), *out = tmp_path("bssl.out");
	pid_t pid;

	start_nginx_tls();
	clients[0] = pid = bssl_client_spawn(ng.port, fifo, out);
	cr_assert_gt(pid, 0);
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	/* It maps libssl.so.0 once it runs: the shipper finds it at the start or a flush. */
	for (int i = 0; i < 100 && !strstr(slurp(out, NULL) ?: "", "Connected"); i++)
		sleep_ms(50);
	start_task_tls(pids, "6s", "bssl.json", 1);
	cr_assert_eq(bssl_client_feed(fifo, req), 0);
	{
		int rc = bssl_client_wait(pid, out, 20000, &got);

		clients[0] = 0;
		cr_assert_eq(rc, 0, "%s", slurp(out, NULL));
	}
	r = end_task("bssl.json", &log);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &logged), 0);
	cr_assert_eq(got.requests, 5, "%s", slurp(out, NULL));
	cr_assert_eq(logged.requests, 5);
	{
		const struct expect want[] = { { "/ok", 200, logged.status[200] },
					       { "/missing", 404, logged.status[404] },
					       { "/fail", 500, logged.status[500] } };

		expect_endpoints(r, pid, "client", want, 3);
	}
	cr_assert_eq(jint(r, "http_exchanges"), 5, "%s", dump(r));
	expect_ssl(r, pid, 5);
	expect_tls(r, pid, "boringssl", "libssl.so.0");
	expect_no_parse_losses(r);
	json_object_put(r);
	free(log);
}

/* Go's crypto/tls, entry and every RET of (*Conn).Read/Write (no uretprobe on Go). */
Test(tls, go_server)
{
	traced_server(TLS_PEER_GO, "go", "tests/programs/gotls");
}

Test(tls, go_client)
{
	traced_clients(TLS_PEER_GO, "go", "tests/programs/gotls");
}

/* -ldflags=-s -w: no .symtab and no DWARF; the pclntab still names the functions. */
Test(tls, go_stripped)
{
	traced_server(TLS_PEER_GO_STRIPPED, "go", "tests/programs/gotls_stripped");
}

/*
 * node's SSL_* live in /usr/bin/node itself (NodeSource's build links OpenSSL statically) and
 * run over memory BIOs, with no socket call inside them. A node linked to the system's
 * libssl.so.3 instead (Debian's own package) is plain OpenSSL: say which this machine has.
 */
static const char *node_library(void)
{
	char *argv[] = { "sh", "-c", "ldd \"$(command -v node)\"", NULL };
	char *out = NULL;
	int shared = 0;

	if (!run_capture(NULL, argv, 10000, &out) && out)
		shared = strstr(out, "libssl.so") != NULL;
	free(out);
	return shared ? "openssl" : "node";
}

Test(tls, node_server)
{
	const char *lib = node_library();

	traced_server(TLS_PEER_NODE, lib, strcmp(lib, "node") ? "libssl.so" : "node");
}

Test(tls, node_client)
{
	const char *lib = node_library();

	traced_clients(TLS_PEER_NODE, lib, strcmp(lib, "node") ? "libssl.so" : "node");
}

/*
 * kdig speaks DNS over TLS through GnuTLS, which no probe claims: its connection is in the
 * report with its (encrypted) bytes, not marked "ssl", no endpoint and no "tls" entry is made
 * up for it, and the HTTP parser is not fed its bytes as errors.
 */
Test(tls, gnutls_not_parsed)
{
	struct json_object *r, *eps;
	struct ssl_sum s;
	char pids[16], *log;
	int port = free_port(18440, 18459), answers = 0;
	pid_t pid;

	cr_assert_gt(port, 0);
	cr_assert_eq(unbound_start(port, &cert, &ub), 0);
	/* A shell waiting for the go file, then exec'ing kdig: the pid traced is kdig's. */
	clients[0] = pid = kdig_spawn(port, 3, tmp_path("go"), tmp_path("kdig.out"));
	cr_assert_gt(pid, 0);
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	start_task_tls(pids, "5s", "kdig.json", 0);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	{
		int rc = kdig_wait(pid, tmp_path("kdig.out"), 20000, &answers);

		clients[0] = 0;
		cr_assert_eq(rc, 0, "%s", slurp(tmp_path("kdig.out"), NULL));
	}
	cr_assert_eq(answers, 3, "%s", slurp(tmp_path("kdig.out"), NULL));
	r = end_task("kdig.json", &log);

	ssl_sum(r, pid, port, &s);
	cr_assert_eq(s.conns[0], 1, "kdig's one connection, not \"ssl\": %s",
		     dump(array(r, "connections")));
	cr_assert_eq(s.conns[1], 0, "GnuTLS is claimed: %s", dump(array(r, "connections")));
	/* A TLS 1.3 handshake and three padded queries and answers, encrypted. */
	cr_assert_gt(s.bytes_sent[0], 3 * 128);
	cr_assert_gt(s.bytes_received[0], 3 * 468);
	cr_assert_eq(s.requests[0], 0);
	eps = array(r, "endpoints");
	for (size_t i = 0; i < json_object_array_length(eps); i++)
		cr_assert_neq(jint(json_object_array_get_idx(eps, i), "pid"), pid, "%s", dump(eps));
	cr_assert_null(tls_entry(r, pid, NULL), "%s", dump(r));
	cr_assert_eq(jint(r, "http_exchanges"), 0);
	expect_no_parse_losses(r);
	json_object_put(r);
	free(log);
}
