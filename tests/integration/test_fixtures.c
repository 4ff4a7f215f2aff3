// SPDX-License-Identifier: Apache-2.0
/*
 * The peers the NETWORK tests profile, on their own, with no rover: each must tell the truth a
 * profile is compared with. nginx's access log against what curl got, wrk's count against the
 * log, http_server's totals against http_client's, and retransmits that a drop rule in a
 * network namespace makes, as nstat counts them.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

static struct nginx ng;
static struct http_server hs;
static struct tls_proc ts, bs, ub;
static char ns[32];

static void setup(void)
{
	memset(&ng, 0, sizeof(ng));
	memset(&hs, 0, sizeof(hs));
	memset(&ts, 0, sizeof(ts));
	memset(&bs, 0, sizeof(bs));
	memset(&ub, 0, sizeof(ub));
	ns[0] = '\0';
	tmp_setup();
}

/* Whatever a failed assertion left running. */
static void teardown(void)
{
	nginx_free(&ng);
	if (hs.pid > 0)
		http_server_stop(&hs, NULL);
	if (ts.pid > 0)
		tls_server_stop(&ts, NULL);
	if (bs.pid > 0)
		bssl_server_stop(&bs, NULL);
	unbound_stop(&ub);
	if (ns[0])
		netns_delete(ns);
	tmp_teardown();
}

TestSuite(fixtures, .init = setup, .fini = teardown, .timeout = 120);

static void start_nginx(void)
{
	int port = free_port(18080, 18089);

	cr_assert_gt(port, 0, "no free port in 18080-18089");
	cr_assert_eq(access("/usr/sbin/nginx", X_OK), 0, "no nginx: run 'make deps'");
	cr_assert_eq(nginx_start(port, &ng), 0, "nginx on 127.0.0.1:%d did not start", port);
	cr_assert_gt(ng.worker, 0);
}

static void curl_expect(const char *path, int n, int status, struct http_totals *sum)
{
	char url[128];
	struct http_totals t;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", ng.port, path);
	cr_assert_eq(curl_run(url, n, &t), 0, "curl %s x%d: %lu answers", url, n,
		     (unsigned long)t.requests);
	cr_assert_eq(t.status[status], (uint64_t)n, "%s: %lu x %d of %d", path,
		     (unsigned long)t.status[status], status, n);
	sum->requests += t.requests;
	sum->bytes_sent += t.bytes_sent;
	sum->bytes_received += t.bytes_received;
}

Test(fixtures, nginx_answers_200_404_500_and_its_access_log_counts_what_curl_sent)
{
	struct http_totals sent = { 0 }, log, client;

	start_nginx();
	curl_expect("/ok", 5, 200, &sent);
	curl_expect("/missing", 3, 404, &sent);
	curl_expect("/fail", 2, 500, &sent);
	curl_expect("/elsewhere", 1, 404, &sent);
	/* tests/programs/http_client speaks to nginx too. */
	cr_assert_eq(http_client_run(NULL, "127.0.0.1", ng.port, "/fail", 4, 2, &client), 0);
	cr_assert_eq(client.status[500], 4);

	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &log), 0);
	cr_assert_eq(log.requests, 15, "%lu lines in the access log", (unsigned long)log.requests);
	cr_assert_eq(log.status[200], 5);
	cr_assert_eq(log.status[404], 4);
	cr_assert_eq(log.status[500], 6);
	/* Byte for byte, each way: what nginx logged is what its clients counted. */
	cr_assert_eq(log.bytes_sent, sent.bytes_received + client.bytes_received,
		     "nginx sent %lu, curl and http_client got %lu + %lu",
		     (unsigned long)log.bytes_sent, (unsigned long)sent.bytes_received,
		     (unsigned long)client.bytes_received);
	cr_assert_eq(log.bytes_received, sent.bytes_sent + client.bytes_sent,
		     "nginx got %lu, curl and http_client sent %lu + %lu",
		     (unsigned long)log.bytes_received, (unsigned long)sent.bytes_sent,
		     (unsigned long)client.bytes_sent);
}

Test(fixtures, wrk_completes_requests_and_nginx_logs_at_least_as_many)
{
	struct wrk_result r;
	struct http_totals log;
	char url[128];

	cr_assert_eq(access("/usr/bin/wrk", X_OK), 0, "no wrk: run 'make deps'");
	start_nginx();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ok", ng.port);
	cr_assert_eq(wrk_run(url, 2, 4, &r), 0);
	cr_log_info("wrk: %lu requests, %.0f req/s, p50 %.3f ms, p99 %.3f ms",
		    (unsigned long)r.requests, r.rps, r.p50_ms, r.p99_ms);
	cr_assert_gt(r.requests, 0);
	cr_assert_gt(r.rps, 0);
	cr_assert_gt(r.p99_ms, 0);
	cr_assert_eq(r.non_2xx_3xx, 0);
	cr_assert_eq(r.socket_errors, 0);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &log), 0);
	/* wrk does not count the requests in flight when it stops; nginx logs them. */
	cr_assert_geq(log.requests, r.requests);
	cr_assert_leq(log.requests, r.requests + 4 + 1);
	cr_assert_eq(log.status[200], log.requests);
}

static void client_expect(const char *path, int n, int conns, int status, struct http_totals *sum)
{
	struct http_totals t;

	cr_assert_eq(http_client_run(NULL, "127.0.0.1", hs.port, path, n, conns, &t), 0, "%s",
		     path);
	cr_assert_eq(t.requests, (uint64_t)n);
	cr_assert_eq(t.status[status], (uint64_t)n, "%s: %lu x %d of %d", path,
		     (unsigned long)t.status[status], status, n);
	sum->requests += t.requests;
	sum->status[status] += t.status[status];
	sum->bytes_sent += t.bytes_sent;
	sum->bytes_received += t.bytes_received;
}

Test(fixtures, http_server_and_http_client_agree_on_counts_statuses_and_bytes)
{
	struct http_totals c = { 0 }, s, late;
	char out[4096];
	int port = free_port(18090, 18098);
	pid_t pid;

	cr_assert_gt(port, 0, "no free port in 18090-18098");
	cr_assert_eq(http_server_start(NULL, port, &hs), 0);
	client_expect("/ok", 20, 3, 200, &c);
	client_expect("/missing", 5, 1, 404, &c);
	client_expect("/fail", 4, 2, 500, &c);
	client_expect("/nowhere", 1, 1, 404, &c);
	client_expect("/size/100000", 3, 1, 200, &c);
	client_expect("/delay/30", 2, 1, 200, &c);
	/* In the background, waiting first: what a profiler attaches to. */
	snprintf(out, sizeof(out), "%s/client.out", tmp);
	pid = http_client_spawn(NULL, "127.0.0.1", port, "/ok", 5, 1, 200, 10, out);
	cr_assert_gt(pid, 0);
	cr_assert_eq(http_client_wait(pid, out, 10000, &late), 0);
	cr_assert_eq(late.status[200], 5);
	c.requests += late.requests;
	c.status[200] += late.status[200];
	c.bytes_sent += late.bytes_sent;
	c.bytes_received += late.bytes_received;

	cr_assert_eq(http_server_stop(&hs, &s), 0);
	cr_assert_eq(s.requests, c.requests, "server %lu, clients %lu", (unsigned long)s.requests,
		     (unsigned long)c.requests);
	for (int code = 0; code < 600; code++)
		cr_assert_eq(s.status[code], c.status[code], "status %d: server %lu, clients %lu",
			     code, (unsigned long)s.status[code], (unsigned long)c.status[code]);
	cr_assert_eq(s.bytes_received, c.bytes_sent);
	cr_assert_eq(s.bytes_sent, c.bytes_received);
	cr_assert_gt(s.bytes_sent, 300000);
}

Test(fixtures, a_drop_rule_in_a_netns_makes_retransmits_that_nstat_counts)
{
	struct http_totals c, s;
	uint64_t before, after, drops = 0;

	snprintf(ns, sizeof(ns), "rover-fx%d", (int)getpid());
	cr_assert_eq(netns_create(ns), 0);
	/* Each namespace has its own ports: 18099 cannot collide with anything outside it. */
	cr_assert_eq(netns_drop_input(ns, 18099, 30), 0, "nftables in a netns: run 'make deps'");
	cr_assert_eq(http_server_start(ns, 18099, &hs), 0);
	cr_assert_eq(nstat_read(ns, "TcpRetransSegs", &before), 0);
	cr_assert_eq(http_client_run(ns, "127.0.0.1", 18099, "/size/102400", 15, 1, &c), 0);
	cr_assert_eq(nstat_read(ns, "TcpRetransSegs", &after), 0);
	cr_assert_eq(netns_drop_count(ns, &drops), 0);
	cr_assert_eq(http_server_stop(&hs, &s), 0);
	cr_log_info("drops %lu, TcpRetransSegs %lu -> %lu", (unsigned long)drops,
		    (unsigned long)before, (unsigned long)after);
	cr_assert_eq(c.status[200], 15);
	cr_assert_eq(s.status[200], 15);
	cr_assert_gt(drops, 0);
	cr_assert_gt(after, before);
	/* The host's namespace is not the one that lost packets. */
	cr_assert_eq(nstat_read(NULL, "TcpRetransSegs", &before), 0);
	cr_assert_eq(netns_delete(ns), 0);
	ns[0] = '\0';
}

/*
 * The TLS peers (harness.h), each against the others with no rover: what every client counted
 * is what the server it spoke to counted, per status.
 */

static void totals_add(struct http_totals *sum, const struct http_totals *t)
{
	sum->requests += t->requests;
	for (int c = 0; c < 600; c++)
		sum->status[c] += t->status[c];
}

static void totals_expect_eq(const struct http_totals *server, const struct http_totals *clients,
			     const char *who)
{
	cr_assert_eq(server->requests, clients->requests, "%s: server %lu, clients %lu", who,
		     (unsigned long)server->requests, (unsigned long)clients->requests);
	for (int c = 0; c < 600; c++)
		cr_assert_eq(server->status[c], clients->status[c],
			     "%s %d: server %lu, clients %lu", who, c,
			     (unsigned long)server->status[c], (unsigned long)clients->status[c]);
}

/* Every TLS client peer against url: n GETs each, all answered with want. */
static void tls_clients_expect(const char *url, int n, int want, struct http_totals *sum)
{
	static const enum tls_peer kinds[] = { TLS_PEER_GO, TLS_PEER_GO_STRIPPED, TLS_PEER_NODE,
					       TLS_PEER_PY };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct http_totals t;

		cr_assert_eq(tls_client_run(kinds[i], url, n, &t), 0, "%s client %s",
			     tls_peer_name(kinds[i]), url);
		cr_assert_eq(t.status[want], (uint64_t)n, "%s client %s: %lu x %d of %d",
			     tls_peer_name(kinds[i]), url, (unsigned long)t.status[want], want, n);
		totals_add(sum, &t);
	}
}

static void curl_tls_expect(int port, const char *path, int n, int want, struct http_totals *sum)
{
	char url[128];
	struct http_totals t;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
	cr_assert_eq(curl_run(url, n, &t), 0, "curl -k %s x%d", url, n);
	cr_assert_eq(t.status[want], (uint64_t)n);
	totals_add(sum, &t);
}

Test(fixtures, nginx_over_tls_logs_what_every_tls_client_got)
{
	struct http_totals sent = { 0 }, log, b;
	struct tls_cert cert;
	struct wrk_result w;
	char url[128];
	int port = free_port(18440, 18459);

	cr_assert_gt(port, 0);
	cr_assert_eq(tls_cert_make(tmp, &cert), 0);
	cr_assert_eq(nginx_start_tls(port, &cert, &ng), 0);
	curl_tls_expect(port, "/ok", 5, 200, &sent);
	curl_tls_expect(port, "/missing", 3, 404, &sent);
	curl_tls_expect(port, "/fail", 2, 500, &sent);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", port);
	tls_clients_expect(url, 4, 200, &sent);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/fail", port);
	tls_clients_expect(url, 2, 500, &sent);
	/* BoringSSL's client: two requests on one connection, the second closing it. */
	cr_assert_eq(bssl_client_run(port,
				     "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
				     "GET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				     &b),
		     0);
	cr_assert_eq(b.status[200], 1);
	cr_assert_eq(b.status[404], 1);
	totals_add(&sent, &b);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &log), 0);
	totals_expect_eq(&log, &sent, "nginx TLS");
	nginx_free(&ng);

	/* wrk over TLS: nginx logs what wrk completed, and the few in flight when it stopped. */
	port = free_port(18440, 18459);
	cr_assert_eq(nginx_start_tls(port, &cert, &ng), 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", port);
	cr_assert_eq(wrk_run(url, 2, 4, &w), 0);
	cr_log_info("wrk over TLS: %lu requests, %.0f req/s", (unsigned long)w.requests, w.rps);
	cr_assert_gt(w.requests, 1000);
	cr_assert_eq(w.socket_errors, 0);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &log), 0);
	cr_assert_geq(log.requests, w.requests);
	cr_assert_leq(log.requests, w.requests + 4 + 1);
	cr_assert_eq(log.status[200], log.requests);
}

/* Each TLS server peer: its totals are what curl and every TLS client peer got from it. */
static void tls_server_agrees(enum tls_peer kind)
{
	struct http_totals sent = { 0 }, got;
	struct tls_cert cert;
	char url[128];
	int port = free_port(18440, 18459);

	cr_assert_gt(port, 0);
	cr_assert_eq(tls_cert_make(tmp, &cert), 0);
	cr_assert_eq(tls_server_start(kind, port, &cert, &ts), 0);
	curl_tls_expect(port, "/ok", 4, 200, &sent);
	curl_tls_expect(port, "/ok/deeper?q=1", 1, 200, &sent);
	curl_tls_expect(port, "/missing", 2, 404, &sent);
	curl_tls_expect(port, "/fail", 2, 500, &sent);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", port);
	tls_clients_expect(url, 3, 200, &sent);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/fail", port);
	tls_clients_expect(url, 2, 500, &sent);
	cr_assert_eq(tls_server_stop(&ts, &got), 0, "%s printed no totals", tls_peer_name(kind));
	totals_expect_eq(&got, &sent, tls_peer_name(kind));
}

Test(fixtures, the_go_tls_server_counts_what_its_clients_got)
{
	tls_server_agrees(TLS_PEER_GO);
}

Test(fixtures, the_stripped_go_tls_server_counts_what_its_clients_got)
{
	tls_server_agrees(TLS_PEER_GO_STRIPPED);
}

Test(fixtures, the_node_tls_server_counts_what_its_clients_got)
{
	tls_server_agrees(TLS_PEER_NODE);
}

Test(fixtures, the_python_tls_server_counts_what_its_clients_got)
{
	tls_server_agrees(TLS_PEER_PY);
}

/* A client given a go file does nothing before it exists: the python one has not even mapped
 * libssl (what a profile started meanwhile must find later). */
Test(fixtures, a_tls_client_waits_for_its_go_file_and_python_maps_libssl_only_then)
{
	struct http_totals t;
	struct tls_cert cert;
	char url[128], maps[64], *text;
	int port = free_port(18440, 18459);
	pid_t pid;

	cr_assert_gt(port, 0);
	cr_assert_eq(tls_cert_make(tmp, &cert), 0);
	cr_assert_eq(tls_server_start(TLS_PEER_GO, port, &cert, &ts), 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", port);
	pid = tls_client_spawn(TLS_PEER_PY, url, 3, tmp_path("go"), tmp_path("py.out"));
	cr_assert_gt(pid, 0);
	sleep_ms(1000);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	text = slurp(maps, NULL);
	cr_assert_not_null(text);
	cr_assert_null(strstr(text, "libssl"), "libssl mapped before the go file");
	free(text);
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	{
		/* Then it imports ssl, says so (go.PID) and waits for go.next. */
		char gate[4096];

		snprintf(gate, sizeof(gate), "%s.%d", tmp_path("go"), (int)pid);
		for (int i = 0; i < 200 && access(gate, F_OK); i++)
			sleep_ms(50);
		cr_assert_eq(access(gate, F_OK), 0, "python did not say it imported ssl");
		text = slurp(maps, NULL);
		cr_assert(text && strstr(text, "libssl"), "libssl not mapped after the import");
		free(text);
		cr_assert_eq(write_file(tmp_path("go.next"), ""), 0);
	}
	cr_assert_eq(tls_client_wait(pid, tmp_path("py.out"), 20000, &t), 0);
	cr_assert_eq(t.status[200], 3);
	cr_assert_eq(tls_server_stop(&ts, &t), 0);
	cr_assert_eq(t.status[200], 3);
}

/* bssl-tool's server: one close-delimited HTTP/1.0 200 per connection, whatever the path. */
Test(fixtures, the_boringssl_server_answers_each_connection_once)
{
	struct http_totals t;
	struct tls_cert cert;
	uint64_t conns = 0;
	char url[128];
	int port = free_port(18440, 18459);

	cr_assert_gt(port, 0);
	cr_assert_eq(tls_cert_make(tmp, &cert), 0);
	cr_assert_eq(bssl_server_start(port, &cert, &bs), 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", port);
	cr_assert_eq(curl_run(url, 6, &t), 0);
	cr_assert_eq(t.status[200], 6);
	cr_assert_eq(bssl_server_stop(&bs, &conns), 0);
	cr_assert_eq(conns, 6, "%lu handshakes logged", (unsigned long)conns);
}

/* kdig (GnuTLS) asking unbound over TLS: three answers on one connection, after its go file. */
Test(fixtures, kdig_over_tls_gets_unbound_answers)
{
	struct tls_cert cert;
	int port = free_port(18440, 18459), answers = 0;
	pid_t pid;

	cr_assert_gt(port, 0);
	cr_assert_eq(tls_cert_make(tmp, &cert), 0);
	cr_assert_eq(unbound_start(port, &cert, &ub), 0);
	pid = kdig_spawn(port, 3, tmp_path("go"), tmp_path("kdig.out"));
	cr_assert_gt(pid, 0);
	sleep_ms(300);
	cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "kdig did not wait for its go file");
	cr_assert_eq(write_file(tmp_path("go"), ""), 0);
	cr_assert_eq(kdig_wait(pid, tmp_path("kdig.out"), 20000, &answers), 0, "%s",
		     slurp(tmp_path("kdig.out"), NULL));
	cr_assert_eq(answers, 3, "%s", slurp(tmp_path("kdig.out"), NULL));
	cr_assert(strstr(slurp(tmp_path("kdig.out"), NULL), "127.0.0.2"));
}
