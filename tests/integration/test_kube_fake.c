// SPDX-License-Identifier: Apache-2.0
/*
 * The fake Kubernetes API server and the cgroup-placed containers of
 * kube_harness.h, tried as a client (curl) and as /proc sees them, before the
 * supervisor's discovery is tested against them: lists page and select as the
 * real server's do, watches replay in order, end with 410 after a compaction,
 * carry bookmarks; a wrong or rotated-away token gets 401; TLS holds with the
 * CA the client is given and fails with another; garbage is garbage; each
 * runtime's cgroup layout reads as kubelet makes it.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/kube_harness.h"
#include "tests/integration/oap_harness.h"

static void setup(void)
{
	tmp_setup();
	kube_cgroups_cleanup();
}

static void teardown(void)
{
	kube_cgroups_cleanup();
	stop_tracked();
	tmp_teardown();
}

TestSuite(kube_fake, .init = setup, .fini = teardown, .timeout = 120);

static struct kube_api start(int tls)
{
	struct kube_api k;

	cr_assert_eq(kube_api_start(tmp, 0, tls, &k), 0, "fake API server did not start");
	return k;
}

/* GET path with the token in force; asserts the HTTP status; the body parsed.
 */
static struct json_object *get_json(const struct kube_api *k, const char *path, int want)
{
	char *body = NULL;
	int code = 0, rc = kube_api_get(k, path, k->token, NULL, &code, &body);
	struct json_object *o;

	cr_assert_eq(rc, 0, "curl %s: exit %d", path, rc);
	cr_assert_eq(code, want, "GET %s: %d, wanted %d: %s", path, code, want, body);
	o = json_tokener_parse(body);
	cr_assert(o, "GET %s: not JSON: %.200s", path, body);
	free(body);
	return o;
}

static void put_pod(const struct kube_api *k, const char *ns, const char *name, const char *node,
		    const char *const *labels)
{
	struct kube_pod p = { .name = name,
			      .ns = ns,
			      .node = node,
			      .labels = labels,
			      .containers = (struct kube_container[]){ { .name = "app" }, { 0 } } };

	cr_assert_gt(kube_api_put(k, kube_pod_json(&p)), 0, "put pod %s", name);
}

static const char *type_of(struct json_object *ev)
{
	return str_at(ev, "type") ? str_at(ev, "type") : "";
}

static long rv_of(struct json_object *o)
{
	const char *s = str_at(o, "metadata.resourceVersion");

	return s ? atol(s) : -1;
}

Test(kube_fake, list_pages_and_selects_by_node)
{
	struct kube_api k = start(0);
	char names[16][32], path[512];
	const char *cont = NULL;
	struct json_object *page, *items;
	long list_rv = -1;
	int n = 0, pages = 0;

	for (int i = 0; i < 5; i++) {
		char name[16];

		snprintf(name, sizeof(name), "a%d", i);
		put_pod(&k, "default", name, "node-a", NULL);
	}
	put_pod(&k, "default", "b0", "node-b", NULL);
	put_pod(&k, "default", "b1", "node-b", NULL);
	put_pod(&k, "prod", "a-prod", "node-a", NULL);

	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3Dnode-a&limit=2");
	for (;;) {
		page = get_json(&k, path, 200);
		cr_assert_str_eq(str_at(page, "kind"), "PodList");
		cr_assert_str_eq(str_at(page, "apiVersion"), "v1");
		if (list_rv < 0)
			list_rv = rv_of(page);
		/* Every page is of the same snapshot. */
		cr_assert_eq(rv_of(page), list_rv);
		items = at(page, "items");
		cr_assert(items && json_object_array_length(items) <= 2);
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			struct json_object *it = json_object_array_get_idx(items, i);

			cr_assert_null(at(it, "kind"), "list items carry no kind");
			cr_assert_null(at(it, "apiVersion"), "list items carry no apiVersion");
			cr_assert_str_eq(str_at(it, "spec.nodeName"), "node-a");
			cr_assert_lt(n, 16);
			snprintf(names[n++], sizeof(names[0]), "%s", str_at(it, "metadata.name"));
		}
		if (pages++ == 0) {
			cr_assert_eq(num_at(page, "metadata.remainingItemCount"), 4);
			/* Made after the first page: not in this list. */
			put_pod(&k, "default", "a9-late", "node-a", NULL);
		}
		cont = str_at(page, "metadata.continue");
		if (!cont || !*cont) {
			json_object_put(page);
			break;
		}
		snprintf(path, sizeof(path),
			 "/api/v1/"
			 "pods?fieldSelector=spec.nodeName%%3Dnode-a&limit=2&continue=%s",
			 cont);
		json_object_put(page);
	}
	cr_assert_eq(pages, 3);
	cr_assert_eq(n, 6, "6 pods on node-a, %d listed", n);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			cr_assert_str_neq(names[i], names[j], "%s listed twice", names[i]);

	page = get_json(&k, "/api/v1/namespaces/prod/pods", 200);
	cr_assert_eq(json_object_array_length(at(page, "items")), 1);
	cr_assert_str_eq(str_at(page, "items.0.metadata.name"), "a-prod");
	json_object_put(page);
	/* As the real server, a field it cannot select on is a 400. */
	page = get_json(&k, "/api/v1/pods?fieldSelector=spec.hostname%3Dx", 400);
	cr_assert_str_eq(str_at(page, "kind"), "Status");
	json_object_put(page);
	cr_assert_eq(kube_api_requests(&k, "list pods"), 5);
	kube_api_stop(&k);
}

Test(kube_fake, a_watch_replays_events_in_order)
{
	struct kube_api k = start(0);
	struct json_object **ev;
	char path[256];
	size_t n;
	long from;
	char *body = NULL;
	int code;

	put_pod(&k, "default", "a", "node-a", (const char *[]){ "app=one", NULL });
	from = kube_api_put(&k, kube_pod_json(&(struct kube_pod){ .name = "b", .node = "node-a" }));
	cr_assert_gt(from, 0);
	put_pod(&k, "default", "a", "node-a", (const char *[]){ "app=two", NULL });
	put_pod(&k, "default", "c", "node-b", NULL);
	put_pod(&k, "default", "b", "node-b", NULL); /* leaves node-a */
	cr_assert_gt(kube_api_delete(&k, "Pod", "default", "a"), 0);

	snprintf(path, sizeof(path),
		 "/api/v1/pods?watch=1&resourceVersion=%ld&timeoutSeconds=1"
		 "&fieldSelector=spec.nodeName%%3Dnode-a",
		 from);
	cr_assert_eq(kube_api_get(&k, path, k.token, NULL, &code, &body), 0);
	cr_assert_eq(code, 200);
	cr_assert_str_eq(body + strlen(body) - 1, "\n", "each event ends its line");
	write_file(tmp_path("watch.out"), body);
	free(body);
	ev = kube_watch_events(tmp_path("watch.out"), &n);
	cr_assert_eq(n, 3, "%zu events", n);
	cr_assert_str_eq(type_of(ev[0]), "MODIFIED");
	cr_assert_str_eq(str_at(ev[0], "object.metadata.name"), "a");
	cr_assert_str_eq(str_at(ev[0], "object.metadata.labels.app"), "two");
	/* Events carry kind and apiVersion, unlike list items. */
	cr_assert_str_eq(str_at(ev[0], "object.kind"), "Pod");
	cr_assert_str_eq(str_at(ev[0], "object.apiVersion"), "v1");
	cr_assert_str_eq(type_of(ev[1]), "DELETED", "b left the node: DELETED for this watch");
	cr_assert_str_eq(str_at(ev[1], "object.metadata.name"), "b");
	cr_assert_str_eq(type_of(ev[2]), "DELETED");
	cr_assert_str_eq(str_at(ev[2], "object.metadata.name"), "a");
	for (size_t i = 1; i < n; i++)
		cr_assert_gt(rv_of(at(ev[i], "object")), rv_of(at(ev[i - 1], "object")));
	kube_watch_events_free(ev, n);

	/* Without a resourceVersion: the current state first, as ADDED. */
	cr_assert_eq(kube_api_get(&k, "/api/v1/pods?watch=true&timeoutSeconds=1", k.token, NULL,
				  &code, &body),
		     0);
	write_file(tmp_path("watch.out"), body);
	free(body);
	ev = kube_watch_events(tmp_path("watch.out"), &n);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(type_of(ev[0]), "ADDED");
	cr_assert_str_eq(str_at(ev[0], "object.metadata.name"), "b");
	cr_assert_str_eq(str_at(ev[1], "object.metadata.name"), "c");
	kube_watch_events_free(ev, n);
	kube_api_stop(&k);
}

Test(kube_fake, a_watch_from_before_a_compaction_gets_410)
{
	struct kube_api k = start(0);
	struct json_object **ev, *page;
	char path[256], *body = NULL;
	long old, now;
	size_t n;
	int code;

	old = kube_api_put(&k, kube_pod_json(&(struct kube_pod){ .name = "a", .node = "node-a" }));
	put_pod(&k, "default", "b", "node-a", NULL);
	page = get_json(&k, "/api/v1/pods?limit=1", 200);
	now = kube_api_compact(&k);
	cr_assert_eq(now, old + 1);

	snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%ld&timeoutSeconds=5",
		 old);
	cr_assert_eq(kube_api_get(&k, path, k.token, NULL, &code, &body), 0);
	cr_assert_eq(code, 200, "the real server answers 200 and puts the error in the stream");
	write_file(tmp_path("watch.out"), body);
	free(body);
	ev = kube_watch_events(tmp_path("watch.out"), &n);
	cr_assert_eq(n, 1, "one ERROR, then the stream ends (not after 5 s)");
	cr_assert_str_eq(type_of(ev[0]), "ERROR");
	cr_assert_str_eq(str_at(ev[0], "object.kind"), "Status");
	cr_assert_eq(num_at(ev[0], "object.code"), 410);
	cr_assert_str_eq(str_at(ev[0], "object.reason"), "Expired");
	kube_watch_events_free(ev, n);

	/* From the compaction point on, a watch goes on. */
	snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%ld&timeoutSeconds=1",
		 now);
	cr_assert_eq(kube_api_get(&k, path, k.token, NULL, &code, &body), 0);
	cr_assert_eq(code, 200);
	cr_assert_str_eq(body, "", "no event after %ld: %s", now, body);
	free(body);

	/* A continue token of before the compaction is expired too. */
	snprintf(path, sizeof(path), "/api/v1/pods?limit=1&continue=%s",
		 str_at(page, "metadata.continue"));
	json_object_put(page);
	page = get_json(&k, path, 410);
	cr_assert_str_eq(str_at(page, "reason"), "Expired");
	json_object_put(page);
	kube_api_stop(&k);
}

Test(kube_fake, bookmarks_go_to_the_watches_that_asked)
{
	struct kube_api k = start(0);
	struct json_object **ev;
	size_t n;
	pid_t with, without;
	long rv;

	with = track(kube_api_watch_spawn(
		&k, "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=3",
		tmp_path("with.out")));
	without = track(kube_api_watch_spawn(&k, "/api/v1/pods?watch=1&timeoutSeconds=3",
					     tmp_path("without.out")));
	cr_assert_eq(kube_api_wait_watches(&k, "pods", 2, 10000), 0);
	rv = kube_api_put(&k, kube_pod_json(&(struct kube_pod){ .name = "x", .node = "node-a" }));
	cr_assert_eq(kube_api_bookmark(&k), 2);
	cr_assert_eq(wait_cmd(with, 10000), 0);
	cr_assert_eq(wait_cmd(without, 10000), 0);

	ev = kube_watch_events(tmp_path("with.out"), &n);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(type_of(ev[0]), "ADDED");
	cr_assert_str_eq(type_of(ev[1]), "BOOKMARK");
	/* A bookmark's object is kind, apiVersion and metadata.resourceVersion,
	 * nothing else. */
	cr_assert_str_eq(str_at(ev[1], "object.kind"), "Pod");
	cr_assert_str_eq(str_at(ev[1], "object.apiVersion"), "v1");
	cr_assert_eq(json_object_object_length(at(ev[1], "object")), 3);
	cr_assert_eq(json_object_object_length(at(ev[1], "object.metadata")), 1);
	cr_assert_eq(rv_of(at(ev[1], "object")), rv);
	kube_watch_events_free(ev, n);

	ev = kube_watch_events(tmp_path("without.out"), &n);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(type_of(ev[0]), "ADDED");
	kube_watch_events_free(ev, n);
	kube_api_stop(&k);
}

Test(kube_fake, dropped_watches_end_abruptly_and_gone_clients_cost_nothing)
{
	struct kube_api k = start(1);
	struct json_object *st;
	pid_t w, gone;
	char *log;
	int rc;

	w = track(kube_api_watch_spawn(&k, "/api/v1/pods?watch=1&timeoutSeconds=60",
				       tmp_path("w.out")));
	gone = track(kube_api_watch_spawn(&k, "/api/v1/services?watch=1", tmp_path("gone.out")));
	cr_assert_eq(kube_api_wait_watches(&k, "pods", 1, 10000), 0);
	cr_assert_eq(kube_api_wait_watches(&k, "services", 1, 10000), 0);

	/* A client that goes away mid-stream. */
	kill(gone, SIGKILL);
	waitpid(gone, NULL, 0);
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "s%d", i);
		cr_assert_gt(kube_api_put(&k, kube_service_json(&(struct kube_service){
						      .name = name })),
			     0);
	}
	/* A stream cut without its last chunk: curl reports the transfer as
	 * incomplete. */
	cr_assert_geq(kube_api_drop_watches(&k), 1);
	rc = wait_cmd(w, 5000);
	cr_assert(rc != 0 && rc != -ETIMEDOUT, "curl exit %d: the stream was not cut", rc);
	for (int i = 0; i < 100; i++) {
		st = kube_api_status(&k);
		if (num_at(st, "open_watches_total") == 0)
			break;
		json_object_put(st);
		st = NULL;
		sleep_ms(50);
	}
	cr_assert(st, "watches still open");
	json_object_put(st);
	log = slurp(k.log_path, NULL);
	cr_assert(log);
	cr_assert_null(strstr(log, "Traceback"), "%s", log);
	free(log);
	kube_api_stop(&k);
}

Test(kube_fake, a_wrong_token_gets_401_and_a_rotated_one_works)
{
	struct kube_api k = start(0);
	struct json_object *o;
	char *body = NULL, link[64];
	int code;
	ssize_t n;

	cr_assert_gt(kube_api_put(&k, kube_node_json("node-a", "10.0.0.1")), 0);
	cr_assert_eq(kube_api_get(&k, "/api/v1/nodes/node-a", "nope", NULL, &code, &body), 0);
	cr_assert_eq(code, 401);
	o = json_tokener_parse(body);
	free(body);
	cr_assert_str_eq(str_at(o, "kind"), "Status");
	cr_assert_str_eq(str_at(o, "reason"), "Unauthorized");
	cr_assert_eq(num_at(o, "code"), 401);
	json_object_put(o);
	cr_assert_eq(kube_api_get(&k, "/api/v1/nodes/node-a", NULL, NULL, &code, NULL), 0);
	cr_assert_eq(code, 401, "no token: 401");
	json_object_put(get_json(&k, "/api/v1/nodes/node-a", 200));

	n = readlink(tmp_path("serviceaccount/..data"), link, sizeof(link) - 1);
	cr_assert_gt(n, 0);
	link[n] = 0;
	cr_assert_eq(kube_api_set_token(&k, "token-2"), 0);
	/* As kubelet rotates it: the same path, a new directory behind ..data. */
	body = slurp(tmp_path("serviceaccount/token"), NULL);
	cr_assert_str_eq(body, "token-2");
	free(body);
	cr_assert_neq(access(tmp_path("serviceaccount/..data_tmp"), F_OK), 0);
	{
		char old[128];

		snprintf(old, sizeof(old), "serviceaccount/%s", link);
		cr_assert_neq(access(tmp_path(old), F_OK), 0, "the old directory %s is gone", old);
	}
	cr_assert_eq(kube_api_get(&k, "/api/v1/nodes/node-a", "token-1", NULL, &code, NULL), 0);
	cr_assert_eq(code, 401, "the old token after the rotation: 401");
	o = get_json(&k, "/api/v1/nodes/node-a", 200);
	cr_assert_str_eq(str_at(o, "status.addresses.0.address"), "10.0.0.1");
	json_object_put(o);

	cr_assert_eq(kube_api_token_uses(&k, "token-2"), 1);
	cr_assert_eq(kube_api_token_uses(&k, "token-1"), 2);
	o = kube_api_status(&k);
	cr_assert_eq(num_at(o, "unauthorized"), 3);
	json_object_put(o);
	kube_api_stop(&k);
}

Test(kube_fake, tls_holds_with_the_ca_the_client_is_given)
{
	struct kube_api k = start(1), plain;
	struct tls_cert other;
	struct json_object *o;
	char *body = NULL;
	int code;

	cr_assert_eq(strncmp(k.url, "https://127.0.0.1:", 18), 0, "%s", k.url);
	cr_assert_gt(kube_api_put(&k, kube_node_json("node-a", NULL)), 0);
	o = get_json(&k, "/api/v1/nodes/node-a", 200);
	cr_assert_str_eq(str_at(o, "metadata.name"), "node-a");
	json_object_put(o);

	/* A supervisor running as the rover user reads both, through the links. */
	{
		char *out = NULL;
		char *argv[] = { "/usr/bin/setpriv",  "--reuid",
				 (char *)role_user(), "--regid",
				 (char *)role_user(), "--clear-groups",
				 "/bin/cat",	      k.token_path,
				 k.ca_path,	      NULL };

		cr_assert_eq(run_capture(NULL, argv, 10000, &out), 0, "as %s: %s", role_user(),
			     out);
		cr_assert(out && !strncmp(out, "token-1-----BEGIN CERTIFICATE-----", 34), "%s",
			  out);
		free(out);
	}

	/* A CA that did not sign the server's certificate: curl refuses it (60). */
	cr_assert_eq(mkdir(tmp_path("other"), 0700), 0);
	cr_assert_eq(tls_cert_make(tmp_path("other"), &other), 0);
	cr_assert_eq(kube_api_get(&k, "/api/v1/nodes/node-a", k.token, other.cert, &code, NULL),
		     60);

	/* Plain HTTP on the TLS port reaches /_control only. */
	plain = k;
	snprintf(plain.url, sizeof(plain.url), "http://127.0.0.1:%d", k.port);
	plain.tls = 0;
	cr_assert_eq(kube_api_get(&plain, "/api/v1/nodes/node-a", k.token, NULL, &code, &body), 0);
	cr_assert_eq(code, 400);
	cr_assert(strstr(body, "Client sent an HTTP request to an HTTPS server"), "%s", body);
	free(body);
	kube_api_stop(&k);
}

Test(kube_fake, garbage_answers_are_what_they_claim)
{
	struct kube_api k = start(0);
	struct json_object *o, **ev;
	char *body = NULL, *text;
	size_t n;
	pid_t w;
	int code;

	put_pod(&k, "default", "a", "node-a", NULL);
	cr_assert_eq(kube_api_garbage(&k, "json", 1, "response"), 0);
	cr_assert_eq(kube_api_get(&k, "/api/v1/pods", k.token, NULL, &code, &body), 0);
	cr_assert_eq(code, 200);
	cr_assert_null(json_tokener_parse(body), "not JSON: %s", body);
	free(body);
	/* Only the next one. */
	o = get_json(&k, "/api/v1/pods", 200);
	cr_assert_str_eq(str_at(o, "items.0.metadata.name"), "a");
	json_object_put(o);

	cr_assert_eq(kube_api_garbage(&k, "types", 1, "response"), 0);
	o = get_json(&k, "/api/v1/pods", 200);
	cr_assert(json_object_is_type(at(o, "items.0.metadata"), json_type_string));
	cr_assert(json_object_is_type(at(o, "items.0.spec.containers"), json_type_int));
	json_object_put(o);

	cr_assert_eq(kube_api_garbage(&k, "huge", 1, "response"), 0);
	cr_assert_eq(kube_api_get(&k, "/api/v1/nodes/node-a", k.token, NULL, &code, &body), 0);
	cr_assert_eq(code, 200);
	cr_assert_geq(strlen(body), 8u << 20);
	o = json_tokener_parse(body);
	cr_assert(o, "a huge object is still JSON");
	cr_assert_geq(json_object_object_length(at(o, "metadata.labels")), 8000);
	json_object_put(o);
	free(body);

	/* In a watch stream: the next line, then the stream goes on. */
	w = track(kube_api_watch_spawn(&k,
				       "/api/v1/pods?watch=1&resourceVersion=1&timeoutSeconds=2",
				       tmp_path("w.out")));
	cr_assert_eq(kube_api_wait_watches(&k, "pods", 1, 10000), 0);
	cr_assert_eq(kube_api_garbage(&k, "json", 1, "watch"), 0);
	put_pod(&k, "default", "b", "node-a", NULL);
	put_pod(&k, "default", "c", "node-a", NULL);
	cr_assert_eq(wait_cmd(w, 10000), 0);
	text = slurp(tmp_path("w.out"), NULL);
	cr_assert(text);
	cr_assert_null(json_tokener_parse(strtok(text, "\n")), "the first line is garbage");
	free(text);
	ev = kube_watch_events(tmp_path("w.out"), &n);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(str_at(ev[0], "object.metadata.name"), "c");
	kube_watch_events_free(ev, n);
	kube_api_stop(&k);
}

Test(kube_fake, owners_services_and_nodes)
{
	struct kube_api k = start(0);
	struct kube_owner deploy = { .kind = "Deployment", .name = "web", .controller = 1 };
	struct kube_owner rs = { .kind = "ReplicaSet", .name = "web-5d8f", .controller = 1 };
	struct kube_env env[] = { { "A", "1" }, { "POD", NULL }, { 0 } };
	struct kube_container containers[] = {
		{ .name = "web", .env = env, .id = "0123", .runtime = KUBE_RT_CRIO },
		{ .name = "setup", .id = "4567", .init = 1 },
		{ 0 },
	};
	struct kube_owner owners[] = { rs, { 0 } };
	struct kube_pod pod = { .name = "web-5d8f-abcde",
				.ns = "shop",
				.node = "node-a",
				.labels = (const char *[]){ "app=web", NULL },
				.owners = owners,
				.pod_ip = "10.1.0.7",
				.host_ip = "192.168.0.2",
				.containers = containers };
	struct kube_service svc = { .name = "web",
				    .ns = "shop",
				    .selector = (const char *[]){ "app=web", NULL } };
	struct json_object *o;

	cr_assert_gt(kube_api_put(&k, kube_owned_json("Deployment", "shop", "web", NULL, NULL)), 0);
	cr_assert_gt(kube_api_put(&k,
				  kube_owned_json("ReplicaSet", "shop", "web-5d8f", NULL, &deploy)),
		     0);
	cr_assert_gt(kube_api_put(&k, kube_owned_json("Job", "shop", "migrate", NULL, NULL)), 0);
	cr_assert_gt(kube_api_put(&k, kube_pod_json(&pod)), 0);
	cr_assert_gt(kube_api_put(&k, kube_service_json(&svc)), 0);

	o = get_json(&k, "/api/v1/namespaces/shop/pods", 200);
	cr_assert_str_eq(str_at(o, "items.0.metadata.ownerReferences.0.kind"), "ReplicaSet");
	cr_assert_str_eq(str_at(o, "items.0.metadata.ownerReferences.0.apiVersion"), "apps/v1");
	cr_assert(json_object_get_boolean(at(o, "items.0.metadata.ownerReferences.0.controller")));
	cr_assert_str_eq(str_at(o, "items.0.status.containerStatuses.0.containerID"),
			 "cri-o://0123");
	cr_assert_str_eq(str_at(o, "items.0.status.initContainerStatuses.0.containerID"),
			 "containerd://4567");
	cr_assert_str_eq(str_at(o, "items.0.spec.initContainers.0.name"), "setup");
	cr_assert_str_eq(str_at(o, "items.0.spec.containers.0.env.0.value"), "1");
	cr_assert_str_eq(str_at(o, "items.0.spec.containers.0.env.1.valueFrom.fieldRef.fieldPath"),
			 "metadata.name");
	cr_assert_str_eq(str_at(o, "items.0.status.podIP"), "10.1.0.7");
	json_object_put(o);

	o = get_json(&k, "/apis/apps/v1/namespaces/shop/replicasets/web-5d8f", 200);
	cr_assert_str_eq(str_at(o, "kind"), "ReplicaSet");
	cr_assert_str_eq(str_at(o, "metadata.ownerReferences.0.kind"), "Deployment");
	cr_assert_str_eq(str_at(o, "metadata.ownerReferences.0.name"), "web");
	json_object_put(o);
	o = get_json(&k, "/apis/apps/v1/namespaces/shop/deployments/web", 200);
	cr_assert_str_eq(str_at(o, "apiVersion"), "apps/v1");
	json_object_put(o);
	o = get_json(&k, "/apis/batch/v1/namespaces/shop/jobs/migrate", 200);
	cr_assert_str_eq(str_at(o, "kind"), "Job");
	json_object_put(o);
	o = get_json(&k, "/apis/apps/v1/namespaces/shop/replicasets/none", 404);
	cr_assert_str_eq(str_at(o, "reason"), "NotFound");
	json_object_put(o);
	/* ReplicaSets are apps/v1 only, as upstream's capitalised "/apis/ReplicaSets"
	 * is nothing. */
	json_object_put(get_json(&k, "/api/v1/namespaces/shop/replicasets/web-5d8f", 404));

	o = get_json(&k, "/api/v1/services", 200);
	cr_assert_str_eq(str_at(o, "kind"), "ServiceList");
	cr_assert_str_eq(str_at(o, "items.0.spec.selector.app"), "web");
	json_object_put(o);
	cr_assert_eq(kube_api_requests(&k, "get replicasets"), 2);
	kube_api_stop(&k);
}

Test(kube_fake, restarts_and_outages)
{
	struct kube_api k = start(0);
	struct json_object **ev, *o;
	char path[256], *body = NULL;
	long rv;
	size_t n;
	int code, rc;

	put_pod(&k, "default", "a", "node-a", NULL);
	rv = kube_api_put(&k, kube_pod_json(&(struct kube_pod){ .name = "b", .node = "node-a" }));
	cr_assert_eq(kube_api_restart(&k), 0);
	o = get_json(&k, "/api/v1/pods", 200);
	cr_assert_eq(rv_of(o), rv, "the resourceVersion outlives a restart");
	cr_assert_eq(json_object_array_length(at(o, "items")), 2);
	json_object_put(o);
	snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%ld&timeoutSeconds=1",
		 rv);
	cr_assert_eq(kube_api_get(&k, path, k.token, NULL, &code, &body), 0);
	cr_assert_str_eq(body, "", "a watch from the last RV goes on: %s", body);
	free(body);
	snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%ld&timeoutSeconds=1",
		 rv - 1);
	cr_assert_eq(kube_api_get(&k, path, k.token, NULL, &code, &body), 0);
	write_file(tmp_path("w.out"), body);
	free(body);
	ev = kube_watch_events(tmp_path("w.out"), &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(num_at(ev[0], "object.code"), 410);
	kube_watch_events_free(ev, n);

	cr_assert_eq(kube_api_outage(&k, "reset"), 0);
	rc = kube_api_get(&k, "/api/v1/pods", k.token, NULL, &code, NULL);
	cr_assert(rc == 52 || rc == 56, "curl exit %d: no answer expected", rc);
	cr_assert_eq(kube_api_outage(&k, "503"), 0);
	json_object_put(get_json(&k, "/api/v1/pods", 503));
	cr_assert_eq(kube_api_outage(&k, NULL), 0);
	json_object_put(get_json(&k, "/api/v1/pods", 200));
	kube_api_stop(&k);
	/* Stopped: refused (7). */
	cr_assert_eq(kube_api_get(&k, "/api/v1/pods", k.token, NULL, &code, NULL), 7);
}

/* The lines of /proc/PID/cgroup as text. */
static char *cgroup_of(pid_t pid)
{
	char path[64], *text;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	text = slurp(path, NULL);
	cr_assert(text, "%s", path);
	return text;
}

/* Whether text has a line ending in suffix (v1 hierarchy ids differ between
 * machines). */
static int has_line_ending(const char *text, const char *suffix)
{
	size_t sl = strlen(suffix);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l);

		if ((size_t)(end - l) >= sl && !strncmp(end - sl, suffix, sl))
			return 1;
	}
	return 0;
}

Test(kube_fake, cgroup_layouts)
{
	static const struct {
		enum kube_layout layout;
		const char *fmt; /* independent of kube_cgroup_path: pod uid with '_', then id */
	} layouts[] = {
		{ KUBE_CONTAINERD_SYSTEMD,
		  "/kubepods.slice/kubepods-burstable.slice/"
		  "kubepods-burstable-pod%s.slice/cri-containerd-%s.scope" },
		{ KUBE_CRIO_SYSTEMD, "/kubepods.slice/kubepods-burstable.slice/"
				     "kubepods-burstable-pod%s.slice/crio-%s.scope" },
		{ KUBE_DOCKER_SYSTEMD, "/kubepods.slice/kubepods-burstable.slice/"
				       "kubepods-burstable-pod%s.slice/docker-%s.scope" },
		{ KUBE_CGROUPFS, "/kubepods/burstable/pod%s/%s" },
	};
	char *const argv[] = { "/bin/sleep", "600", NULL };

	for (int v1 = 0; v1 <= 1; v1++) {
		for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
			enum kube_layout layout = layouts[i].layout | (v1 ? KUBE_V1 : 0);
			char uid[37], uid_[37], id[65], want[512], line[600], dir[700], *text;
			pid_t pid, conmon;

			kube_random_uid(uid);
			kube_random_id(id);
			strcpy(uid_, uid);
			if (layouts[i].layout != KUBE_CGROUPFS)
				for (char *c = uid_; *c; c++)
					*c = *c == '-' ? '_' : *c;
			snprintf(want, sizeof(want), layouts[i].fmt, uid_, id);
			pid = kube_spawn_in_cgroup(layout, uid, id, argv);
			cr_assert_gt(pid, 0, "layout %zu v1 %d: %s", i, v1, strerror(errno));
			text = cgroup_of(pid);
			if (v1) {
				snprintf(line, sizeof(line), ":name=systemd:%s", want);
				cr_assert(has_line_ending(text, line), "want %s in\n%s", line,
					  text);
				snprintf(line, sizeof(line), ":pids:%s", want);
				cr_assert(has_line_ending(text, line), "want %s in\n%s", line,
					  text);
				cr_assert(strstr(text, "\n0::/\n") || !strncmp(text, "0::/\n", 5),
					  "v2 untouched:\n%s", text);
				snprintf(dir, sizeof(dir), "/sys/fs/cgroup/systemd%s", want);
			} else {
				snprintf(line, sizeof(line), "\n0::%s\n", want);
				cr_assert(strstr(text, line) ||
						  !strncmp(text, line + 1, strlen(line + 1)),
					  "want 0::%s in\n%s", want, text);
				snprintf(dir, sizeof(dir), "/sys/fs/cgroup/unified%s", want);
			}
			free(text);
			cr_assert_eq(access(dir, F_OK), 0, "%s", dir);

			conmon = kube_conmon_pid(pid);
			if (layouts[i].layout == KUBE_CRIO_SYSTEMD) {
				cr_assert_gt(conmon, 0, "CRI-O has its conmon");
				text = cgroup_of(conmon);
				snprintf(line, sizeof(line), "slice/crio-conmon-%s.scope", id);
				cr_assert(strstr(text, line), "conmon's scope %s in\n%s", line,
					  text);
				snprintf(line, sizeof(line), "/crio-%s.scope", id);
				cr_assert_null(strstr(text, line),
					       "conmon is not in the container:\n%s", text);
				free(text);
			} else {
				cr_assert_eq(conmon, 0);
			}

			cr_assert_eq(kube_container_kill(pid), 0);
			cr_assert_neq(access(dir, F_OK), 0, "%s removed", dir);
			/* The pod's cgroup too, nothing else being in it. */
			*strrchr(dir, '/') = 0;
			cr_assert_neq(access(dir, F_OK), 0, "%s removed", dir);
		}
	}
}
