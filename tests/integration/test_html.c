// SPDX-License-Identifier: Apache-2.0
/*
 * The HTML outputs through the whole pipeline, opened in headless Chromium
 * (tests/tools/page_check.py): the page's DOM, with scripts and without, holds every process and
 * endpoint with the counts the peers made; no console message, no exception, no browser error;
 * no request leaves the page (the browser's proxy and resolver fail any, and none is tried);
 * names chosen by a hostile target (a process called <script>alert1, a URL path holding a
 * script element) stay text. ROVER_HTML_SHOTS=DIR keeps the screenshots (docs/img/ is made so).
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

static struct nginx ng;
static struct http_server hs;
static pid_t task = -1, hostile = -1, burner = -1;

static void setup(void)
{
	memset(&ng, 0, sizeof(ng));
	memset(&hs, 0, sizeof(hs));
	task = hostile = burner = -1;
	tmp_setup();
}

static void teardown(void)
{
	if (task > 0)
		wait_cmd(task, 1);
	nginx_free(&ng);
	if (hostile > 0) {
		kill(hostile, SIGKILL);
		waitpid(hostile, NULL, 0);
	}
	stop_program(burner);
	tmp_teardown();
}

TestSuite(html, .init = setup, .fini = teardown, .timeout = 120);

/* rover profile ... --output tmp/name, in the background; returns once its worker runs. */
static void start_task(const char *type, const char *pids, const char *duration, const char *name)
{
	char out[4096], log[4096];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--type",
			 (char *)type,
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
		int running = text && strstr(text, "running in worker");

		free(text);
		if (running)
			return;
		sleep_ms(50);
	}
	cr_assert_fail("the task did not start: %s", slurp(log, NULL));
}

static void end_task(const char *name)
{
	char path[4096];
	int rc = wait_cmd(task, 60000);

	task = -1;
	snprintf(path, sizeof(path), "%s/%s.log", tmp, name);
	cr_assert_eq(rc, 0, "rover profile: %s", slurp(path, NULL));
}

/*
 * Opens tmp/page in Chromium: its report (page_check.py's JSON), with evals' values. Checks
 * what every page must: it loaded, said nothing on the console, threw nothing, made the
 * browser log nothing, and asked for nothing but itself.
 */
static struct json_object *open_page(const char *page, const char *shot, const char *const *evals,
				     size_t nevals)
{
	char in[4096], png[4096], out[4096], *argv[32], *text;
	struct json_object *r, *v;
	const char *keys[] = { "console", "exceptions", "log", "requests", "resources" };
	struct stat st;
	size_t n = 0;
	int rc;

	cr_assert_lt(nevals, 12);
	snprintf(in, sizeof(in), "%s/%s", tmp, page);
	snprintf(png, sizeof(png), "%s/%s", tmp, shot);
	snprintf(out, sizeof(out), "%s/%s.json", tmp, page);
	argv[n++] = "/usr/bin/python3";
	argv[n++] = (char *)src("tests/tools/page_check.py");
	argv[n++] = in;
	argv[n++] = png;
	argv[n++] = out;
	for (size_t i = 0; i < nevals; i++) {
		argv[n++] = "--eval";
		argv[n++] = (char *)evals[i];
	}
	argv[n] = NULL;
	if (access("/usr/bin/chromium", X_OK))
		cr_skip_test("no /usr/bin/chromium: run 'make deps'");
	rc = run_capture(NULL, argv, 60000, &text);
	cr_assert_eq(rc, 0, "page_check.py: %s", text);
	free(text);
	r = json_object_from_file(out);
	cr_assert_not_null(r, "%s is not JSON", out);
	cr_assert(json_object_object_get_ex(r, "page_loaded", &v) && json_object_get_boolean(v),
		  "the page did not load: %s", json_object_to_json_string(r));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cr_assert(json_object_object_get_ex(r, keys[i], &v));
		cr_assert_eq(json_object_array_length(v), 0, "%s: %s", keys[i],
			     json_object_to_json_string(v));
	}
	cr_assert_eq(stat(png, &st), 0, "no screenshot");
	cr_assert(st.st_size > 1000 && st.st_size < 200 * 1024, "screenshot of %lld bytes",
		  (long long)st.st_size);
	if (getenv("ROVER_HTML_SHOTS")) {
		char dst[4096], *cp[] = { "/bin/cp", png, dst, NULL };

		snprintf(dst, sizeof(dst), "%s/%s", getenv("ROVER_HTML_SHOTS"), shot);
		cr_assert_eq(run_cmd(cp, NULL), 0);
	}
	return r;
}

/* The i-th eval's value, a JSON text the page built, parsed. */
static struct json_object *eval_json(struct json_object *r, size_t i)
{
	struct json_object *evals, *v, *j;

	cr_assert(json_object_object_get_ex(r, "evals", &evals));
	v = json_object_array_get_idx(evals, i);
	cr_assert(v && json_object_is_type(v, json_type_string), "eval %zu: %s", i,
		  json_object_to_json_string(v));
	j = json_tokener_parse(json_object_get_string(v));
	cr_assert_not_null(j, "eval %zu: %s", i, json_object_get_string(v));
	return j;
}

static const char *dom_nojs(struct json_object *r)
{
	struct json_object *v;

	cr_assert(json_object_object_get_ex(r, "dom_nojs", &v));
	return json_object_get_string(v);
}

/* The row [pid, role, method, path, requests] of rows, its requests; -1 when there is none. */
static long long ep_requests(struct json_object *rows, int pid, const char *role, const char *path)
{
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		struct json_object *row = json_object_array_get_idx(rows, i);
		const char *f[5];

		for (int k = 0; k < 5; k++)
			f[k] = json_object_get_string(json_object_array_get_idx(row, k));
		if (atoi(f[0]) == pid && !strcmp(f[1], role) && !strcmp(f[2], "GET") &&
		    !strcmp(f[3], path))
			return atoll(f[4]);
	}
	return -1;
}

#define HOSTILE_COMM "<script>alert1"
#define HOSTILE_PATH "/<script>alert(1)</script>"

/*
 * nginx served by untraced clients (30 /ok, 7 /missing, 5 /fail, 2 of a hostile path), and a
 * traced client calling a traced server whose command name is HOSTILE_COMM (12 /ok on 2
 * connections): three processes, four nginx endpoints, the pair's two; the edges' requests
 * and errors; no script in the page, the hostile names shown as they are.
 */
Test(html, the_network_page_holds_every_process_and_endpoint_and_fetches_and_runs_nothing)
{
	int port = free_port(18200, 18249), sport = free_port(18250, 18299);
	char link[4096], sports[16], pids[64], cout[4096];
	char *hargv[] = { link, sports, NULL };
	struct http_totals c = { 0 }, ct;
	struct json_object *r, *procs, *eps, *edges, *v;
	pid_t client;
	const char *dom;
	bool pair = false, nginx_edge = false;
	const char *evals[] = {
		"JSON.stringify(Array.from(document.querySelectorAll('g.node.proc'), "
		"function (g) { return [g.dataset.pid, g.dataset.name]; }))",
		"JSON.stringify(Array.from(document.querySelectorAll('tr.ep'), function (r) { "
		"return [r.dataset.pid, r.dataset.role, r.dataset.method, r.dataset.path, "
		"r.dataset.requests]; }))",
		"JSON.stringify(Array.from(document.querySelectorAll('g.edge'), function (g) { "
		"return [+g.dataset.requests, +g.dataset.errors]; }))",
		"JSON.stringify([document.querySelectorAll('script').length, "
		"Array.from(document.querySelectorAll('td.path'), function (t) { "
		"return t.textContent; }).indexOf('" HOSTILE_PATH "') >= 0, "
		"document.querySelector('#losses').textContent.indexOf('No losses.') >= 0])",
	};

	cr_assert_gt(port, 0);
	cr_assert_gt(sport, 0);
	cr_assert_eq(nginx_start(port, &ng), 0, "nginx on 127.0.0.1:%d did not start", port);
	/* The kernel names a process after the file it ran: a link of that name. */
	snprintf(link, sizeof(link), "%s/" HOSTILE_COMM, tmp);
	cr_assert_eq(symlink(bin("tests/programs/http_server"), link), 0);
	snprintf(sports, sizeof(sports), "%d", sport);
	hostile = spawn_cmd(hargv, NULL);
	cr_assert_gt(hostile, 0);
	cr_assert_eq(wait_listen(sport, 5000), 0,
		     "the server named " HOSTILE_COMM " did not listen");
	snprintf(cout, sizeof(cout), "%s/client.out", tmp);
	client = http_client_spawn(NULL, "127.0.0.1", sport, "/ok", 12, 2, 4000, 0, cout);
	cr_assert_gt(client, 0);
	snprintf(pids, sizeof(pids), "%d,%d,%d", (int)ng.worker, (int)hostile, (int)client);
	start_task("network", pids, "6s", "net.html");
	cr_assert_eq(http_client_run(NULL, "127.0.0.1", port, "/ok", 30, 3, &c), 0);
	cr_assert_eq(http_client_run(NULL, "127.0.0.1", port, "/missing", 7, 1, &c), 0);
	cr_assert_eq(http_client_run(NULL, "127.0.0.1", port, "/fail", 5, 1, &c), 0);
	cr_assert_eq(http_client_run(NULL, "127.0.0.1", port, HOSTILE_PATH, 2, 1, &c), 0);
	cr_assert_eq(c.status[404], 2, "nginx answers the hostile path 404");
	cr_assert_eq(http_client_wait(client, cout, 30000, &ct), 0);
	cr_assert_eq(ct.status[200], 12);
	end_task("net.html");

	r = open_page("net.html", "network.png", evals, sizeof(evals) / sizeof(evals[0]));
	procs = eval_json(r, 0);
	cr_assert_eq(json_object_array_length(procs), 3, "%s", json_object_to_json_string(procs));
	for (size_t i = 0; i < 3; i++) {
		struct json_object *p = json_object_array_get_idx(procs, i);
		int pid = atoi(json_object_get_string(json_object_array_get_idx(p, 0)));
		const char *name = json_object_get_string(json_object_array_get_idx(p, 1));

		cr_assert(pid == ng.worker ? !strcmp(name, "nginx")
			  : pid == hostile ? !strcmp(name, HOSTILE_COMM)
			  : pid == client  ? !strcmp(name, "http_client")
					   : false,
			  "process %d named %s", pid, name);
	}
	eps = eval_json(r, 1);
	cr_assert_eq(json_object_array_length(eps), 6, "%s", json_object_to_json_string(eps));
	cr_assert_eq(ep_requests(eps, ng.worker, "server", "/ok"), 30);
	cr_assert_eq(ep_requests(eps, ng.worker, "server", "/missing"), 7);
	cr_assert_eq(ep_requests(eps, ng.worker, "server", "/fail"), 5);
	cr_assert_eq(ep_requests(eps, ng.worker, "server", HOSTILE_PATH), 2);
	cr_assert_eq(ep_requests(eps, hostile, "server", "/ok"), 12);
	cr_assert_eq(ep_requests(eps, client, "client", "/ok"), 12);
	/* The pair is drawn once (from its client's end); nginx's clients are one peer. */
	edges = eval_json(r, 2);
	cr_assert_eq(json_object_array_length(edges), 2, "%s", json_object_to_json_string(edges));
	for (size_t i = 0; i < 2; i++) {
		struct json_object *e = json_object_array_get_idx(edges, i);
		int req = json_object_get_int(json_object_array_get_idx(e, 0));
		int err = json_object_get_int(json_object_array_get_idx(e, 1));

		pair |= req == 12 && err == 0;
		nginx_edge |= req == 44 && err == 14;
	}
	cr_assert(pair && nginx_edge, "edges %s", json_object_to_json_string(edges));
	v = eval_json(r, 3);
	cr_assert_eq(json_object_get_int(json_object_array_get_idx(v, 0)), 0, "a script element");
	cr_assert(json_object_get_boolean(json_object_array_get_idx(v, 1)),
		  "the hostile path is not shown as text");
	cr_assert(json_object_get_boolean(json_object_array_get_idx(v, 2)), "losses: %s",
		  dom_nojs(r));
	json_object_put(v);

	/* Without JavaScript: the same rows and nodes, laid out by the shipper. */
	dom = dom_nojs(r);
	{
		char want[512];

		snprintf(want, sizeof(want),
			 "<tr class=\"ep\" data-protocol=\"http\" data-pid=\"%d\" data-role=\"server\" "
			 "data-method=\"GET\" data-path=\"/ok\" data-requests=\"30\">",
			 (int)ng.worker);
		cr_assert(strstr(dom, want), "%s not in %s", want, dom);
		snprintf(want, sizeof(want), "<g class=\"node proc\" data-pid=\"%d\"",
			 (int)hostile);
		cr_assert(strstr(dom, want), "%s not in %s", want, dom);
		cr_assert(strstr(dom, "&lt;script&gt;alert(1)&lt;/script&gt;"), "%s", dom);
		cr_assert_null(strstr(dom, "<script"), "%s", dom);
	}
	json_object_put(procs);
	json_object_put(eps);
	json_object_put(edges);
	json_object_put(r);
}

/*
 * An ON_CPU flame graph page of demo_burn: its search runs offline (the one script, allowed by
 * its hash: a wrong hash blocks it, which the console and the hidden box would show), finds
 * burn_a and burn_b, and the table keeps only them.
 */
Test(html, the_flame_graph_page_searches_offline)
{
	char pids[16];
	struct json_object *r, *v, *rows;
	const char *dom;
	const char *evals[] = {
		"JSON.stringify(document.getElementById('search').hidden)",
		"(function () { var q = document.getElementById('q'); q.value = 'burn_[ab]'; "
		"q.dispatchEvent(new Event('input')); "
		"return JSON.stringify(document.getElementById('found').textContent); })()",
		"JSON.stringify(Array.from(document.querySelectorAll('#top tbody tr'), function (r) { "
		"return r.hidden ? '' : r.dataset.name; }).filter(function (n) { return n; }))",
		"JSON.stringify(document.querySelectorAll('svg[data-fg] rect[fill=\"rgb(230,0,230)\"]')"
		".length)",
	};

	burner = start_program(bin("tests/programs/demo_burn"), "30");
	cr_assert_gt(burner, 0);
	snprintf(pids, sizeof(pids), "%d", (int)burner);
	start_task("on_cpu", pids, "2s", "cpu.html");
	end_task("cpu.html");
	r = open_page("cpu.html", "flamegraph.png", evals, sizeof(evals) / sizeof(evals[0]));

	v = eval_json(r, 0);
	cr_assert_not(json_object_get_boolean(v), "the search box is still hidden: no script ran");
	json_object_put(v);
	v = eval_json(r, 1);
	{
		const char *found = json_object_get_string(v);
		unsigned long long sum = 0, total = 0;

		cr_assert_eq(sscanf(found, "matched: %llu of %llu", &sum, &total), 2, "%s", found);
		/* burn_a and burn_b are most of demo_burn's time: 3 units and 1 of each loop. */
		cr_assert(total > 0 && sum * 2 > total, "%s", found);
	}
	json_object_put(v);
	rows = eval_json(r, 2);
	cr_assert_geq(json_object_array_length(rows), 2, "%s", json_object_to_json_string(rows));
	for (size_t i = 0; i < json_object_array_length(rows); i++)
		cr_assert(strstr(json_object_get_string(json_object_array_get_idx(rows, i)),
				 "burn_"),
			  "%s", json_object_to_json_string(rows));
	json_object_put(rows);
	v = eval_json(r, 3);
	cr_assert_geq(json_object_get_int(v), 2, "frames marked");
	json_object_put(v);

	dom = dom_nojs(r);
	cr_assert(strstr(dom, "<svg") && strstr(dom, "data-fg=\"\"") && strstr(dom, "id=\"top\""),
		  "%s", dom);
	cr_assert(strstr(dom, "<div id=\"search\" hidden=\"\">"), "%s", dom);
	cr_assert(strstr(dom, "data-name=\"burn_a\""), "%s", dom);
	json_object_put(r);
}
