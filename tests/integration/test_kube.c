// SPDX-License-Identifier: Apache-2.0
/*
 * Kubernetes discovery end to end: the agent (`rover run`) against the fake API server
 * (tests/kube/fake_kube_api.py over TLS with a CA and a bearer token) and the fake OAP, with
 * pods whose containers are real processes placed in cgroups named as containerd, CRI-O and
 * docker name them (kube_harness.h). What a user checks in the OAP: the right processes
 * reported as k8sProcess with the entities the shipped analyzers render and upstream's
 * properties; pods of other nodes and pods no analyzer takes left out; a label change and a
 * new Service followed (upstream freezes an entity at first sight); a deleted pod's processes
 * gone from keepAlive; the API server down -> the last state kept, nothing else stalls, and
 * the watches resumed (a 410 relisted); a rotated token used; garbage answers refused and
 * counted while the agent goes on.
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
	stop_tracked();
	kube_cgroups_cleanup();
	tmp_teardown();
}

TestSuite(kube, .init = setup, .fini = teardown, .timeout = 180);

static const char config_fmt[] = "core:\n"
				 "  cluster_name: c1\n"
				 "  backend:\n"
				 "    addr: 127.0.0.1:%d\n"
				 "process_discovery:\n"
				 "  heartbeat_period: 1s\n"
				 "  properties_report_period: 1000\n"
				 "%s"
				 "  kubernetes:\n"
				 "    active: true\n"
				 "    node_name: node-a\n"
				 "    namespaces: \"%s\"\n"
				 "    api_server: %s\n"
				 "    token_file: %s\n"
				 "    ca_file: %s\n"
				 "%s"
				 "profiling:\n"
				 "  active: false\n";

struct env {
	struct kube_api k;
	int oap_port;
	pid_t rover;
};

static const char vm_off[] = "  vm:\n"
			     "    active: false\n"
			     "    period: 500ms\n";

static void start_all_vm(struct env *e, const char *namespaces, const char *analyzers,
			 const char *vm)
{
	char cfg[8192];

	cr_assert_eq(kube_api_start(tmp, 0, 1, &e->k), 0, "fake API server did not start");
	cr_assert_gt(kube_api_put(&e->k, kube_node_json("node-a", "192.168.49.2")), 0);
	start_oap(0, &e->oap_port);
	snprintf(cfg, sizeof(cfg), config_fmt, e->oap_port, vm, namespaces, e->k.url,
		 e->k.token_path, e->k.ca_path, analyzers ? analyzers : "");
	e->rover = track(start_rover_cfg(cfg));
	cr_assert_gt(e->rover, 0);
}

static void start_all(struct env *e, const char *namespaces, const char *analyzers)
{
	start_all_vm(e, namespaces, analyzers, vm_off);
}

/* A copy of sleep named name in tmp: the process's ExeName. */
static const char *exe_named(const char *name)
{
	char *path = strdup(tmp_path(name));
	char *argv[] = { "/bin/cp", "/bin/sleep", path, NULL };

	cr_assert_eq(run_cmd(argv, NULL), 0);
	chmod(path, 0755);
	return path;
}

/* A container process of layout for pod uid, running exe (from exe_named). */
static pid_t container(enum kube_layout layout, const char *uid, char id[65], const char *exe)
{
	char *argv[] = { (char *)exe, "600", NULL };
	pid_t pid;

	kube_random_id(id);
	pid = kube_spawn_in_cgroup(layout, uid, id, argv);
	if (pid < 0 && errno == ENOENT)
		cr_skip_test("no such cgroup hierarchy here");
	cr_assert_gt(pid, 0, "spawn in cgroup: %s", strerror(errno));
	return pid;
}

/* Every k8sProcess reportProcesses entry for pid so far (new references), at most max. */
static int reported(pid_t pid, struct json_object **out, int max)
{
	size_t n;
	struct json_object **r = records(&n);
	int got = 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *procs = at(r[i], "message.processes");

		if (strcmp(method_of(r[i]), "reportProcesses") || !procs)
			continue;
		for (size_t k = 0; k < json_object_array_length(procs); k++) {
			struct json_object *kp =
				at(json_object_array_get_idx(procs, k), "k8sProcess");

			if (kp && (pid_t)num_at(kp, "pid") == pid && got < max)
				out[got++] = json_object_get(kp);
		}
	}
	records_free(r, n);
	return got;
}

/* Waits for a k8sProcess report of pid whose entity has service; a new reference. */
static struct json_object *wait_entity(pid_t pid, const char *service, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		struct json_object *got[16];
		int n = reported(pid, got, 16);
		struct json_object *hit = NULL;

		for (int i = 0; i < n; i++) {
			const char *s = str_at(got[i], "entity.serviceName");

			if (!hit && s && !strcmp(s, service))
				hit = json_object_get(got[i]);
			json_object_put(got[i]);
		}
		if (hit)
			return hit;
		sleep_ms(200);
	}
	return NULL;
}

static const char *prop(struct json_object *kp, const char *key)
{
	struct json_object *props = at(kp, "properties");

	for (size_t i = 0; props && i < json_object_array_length(props); i++) {
		struct json_object *p = json_object_array_get_idx(props, i);

		if (str_at(p, "key") && !strcmp(str_at(p, "key"), key))
			return str_at(p, "value");
	}
	return NULL;
}

static const char *label0(struct json_object *kp)
{
	return str_at(kp, "entity.labels.0") ? str_at(kp, "entity.labels.0") : "";
}

/* Is an entity with service in the newest keepAlive? -1: no keepAlive yet. */
static int in_last_keepalive(const char *service)
{
	size_t n, last = 0, seen = 0;
	struct json_object **r = records(&n);
	int found = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(method_of(r[i]), "keepAlive")) {
			last = i;
			seen++;
		}
	if (!seen) {
		records_free(r, n);
		return -1;
	}
	for (size_t k = 0; at(r[last], "message.processes") &&
			   k < json_object_array_length(at(r[last], "message.processes"));
	     k++) {
		const char *s =
			str_at(json_object_array_get_idx(at(r[last], "message.processes"), k),
			       "entityMetadata.serviceName");

		found |= s && !strcmp(s, service);
	}
	records_free(r, n);
	return found;
}

/* Does a keepAlive recorded at or after since_ms (wall_ms) name service? */
static int kept_alive_since(const char *service, int64_t since_ms)
{
	size_t n;
	struct json_object **r = records(&n);
	int found = 0;

	for (size_t i = 0; i < n && !found; i++) {
		struct json_object *procs = at(r[i], "message.processes");

		if (strcmp(method_of(r[i]), "keepAlive") || num_at(r[i], "time_ms") < since_ms)
			continue;
		for (size_t k = 0; procs && k < json_object_array_length(procs); k++) {
			const char *s = str_at(json_object_array_get_idx(procs, k),
					       "entityMetadata.serviceName");

			found |= s && !strcmp(s, service);
		}
	}
	records_free(r, n);
	return found;
}

/* want 1: waits for a keepAlive naming service; want 0: for 3 s (3 heartbeats) in which
 * none does (with no process left, no keepAlive is sent at all). */
static int wait_keepalive(const char *service, int want, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 500) {
		int64_t t = wall_ms();

		if (want && in_last_keepalive(service) == 1)
			return 1;
		if (!want) {
			sleep_ms(3000);
			waited += 2500;
			if (!kept_alive_since(service, t))
				return 1;
			continue;
		}
		sleep_ms(500);
	}
	return 0;
}

Test(kube, the_nodes_pods_are_reported_with_the_shipped_analyzers)
{
	struct env e;
	char uid_web[37], uid_rev[37], uid_other[37], uid_batch[37];
	char id_web[65], id_rev[65], id_proxy[65], id_other[65], id_batch[65];
	const char *web = exe_named("web"), *reviews = exe_named("reviews");
	const char *envoy = exe_named("envoy");
	pid_t p_web, p_rev, p_proxy, p_other, p_batch;
	struct json_object *kp, *got[8];

	kube_random_uid(uid_web);
	kube_random_uid(uid_rev);
	kube_random_uid(uid_other);
	kube_random_uid(uid_batch);
	/* One container per layout: containerd (v2), CRI-O (v1, with its conmon), docker
	 * (systemd scope: upstream misses it), cgroupfs. */
	p_web = container(KUBE_CONTAINERD_SYSTEMD, uid_web, id_web, web);
	p_rev = container(KUBE_CRIO_SYSTEMD | KUBE_V1, uid_rev, id_rev, reviews);
	p_proxy = container(KUBE_DOCKER_SYSTEMD, uid_rev, id_proxy, envoy);
	p_other = container(KUBE_CGROUPFS, uid_other, id_other, web);
	p_batch = container(KUBE_CGROUPFS, uid_batch, id_batch, web);
	start_all(&e, "", NULL);

	{
		const char *labels[] = { "app=web", NULL };
		struct kube_pod p = {
			.name = "web-1",
			.ns = "shop",
			.uid = uid_web,
			.node = "node-a",
			.labels = labels,
			.pod_ip = "10.244.1.7",
			.host_ip = "192.168.49.2",
			.containers = (struct kube_container[]){ { .name = "web",
								   .id = id_web,
								   .runtime = KUBE_RT_CONTAINERD },
								 { 0 } },
		};
		const char *sel[] = { "app=web", NULL };
		struct kube_service s1 = { .name = "web", .ns = "shop", .selector = sel };
		struct kube_service s2 = { .name = "web-canary", .ns = "shop", .selector = sel };

		cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
		cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s2)), 0);
		cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s1)), 0);
	}
	{
		const char *labels[] = { "app=reviews", "service.istio.io/canonical-name=reviews",
					 NULL };
		struct kube_pod p = {
			.name = "reviews-v1-5d8f",
			.ns = "bookinfo",
			.uid = uid_rev,
			.node = "node-a",
			.labels = labels,
			.pod_ip = "10.244.1.8",
			.host_ip = "192.168.49.2",
			.containers = (struct kube_container[]){ { .name = "reviews",
								   .id = id_rev,
								   .runtime = KUBE_RT_CRIO },
								 { .name = "istio-proxy",
								   .id = id_proxy,
								   .runtime = KUBE_RT_DOCKER },
								 { 0 } },
		};

		cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	}
	{
		const char *labels[] = { "app=web", NULL };
		/* Another node's pod (same labels, a Service selects it) and a pod of ours that
		 * no analyzer takes (no Service, no istio-proxy). */
		struct kube_pod o = {
			.name = "web-2",
			.ns = "shop",
			.uid = uid_other,
			.node = "node-b",
			.labels = labels,
			.containers = (struct kube_container[]){ { .name = "web",
								   .id = id_other,
								   .runtime = KUBE_RT_CONTAINERD },
								 { 0 } },
		};
		const char *blabels[] = { "job=nightly", NULL };
		struct kube_pod b = {
			.name = "batch-1",
			.ns = "shop",
			.uid = uid_batch,
			.node = "node-a",
			.labels = blabels,
			.containers = (struct kube_container[]){ { .name = "batch",
								   .id = id_batch,
								   .runtime = KUBE_RT_CONTAINERD },
								 { 0 } },
		};

		cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&o)), 0);
		cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&b)), 0);
	}

	/* #3 K8S_SERVICE: the shortest of the Services that select it; cluster prefix. */
	kp = wait_entity(p_web, "c1::web.shop", 30000);
	cr_assert(kp, "web-1 not reported as c1::web.shop; log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_expect_str_eq(str_at(kp, "entity.layer"), "K8S_SERVICE");
	cr_expect_str_eq(str_at(kp, "entity.instanceName"), "web-1");
	cr_expect_str_eq(str_at(kp, "entity.processName"), "web");
	cr_expect_str_eq(label0(kp), "k8s-service");
	cr_expect_str_eq(prop(kp, "host_ip"), "192.168.49.2");
	cr_expect_str_eq(prop(kp, "container_ip"), "10.244.1.7");
	cr_expect_str_eq(prop(kp, "container_name"), "web");
	cr_expect_str_eq(prop(kp, "pod_name"), "web-1");
	{
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", p_web);
		cr_expect_str_eq(prop(kp, "pid"), pid);
	}
	cr_expect(prop(kp, "command_line") && strstr(prop(kp, "command_line"), "600"));
	cr_expect_str_eq(prop(kp, "support_ebpf_profiling"), "true");
	json_object_put(kp);

	/* #2 MESH for the app of an istio pod, #1 MESH_DP for its proxy. */
	kp = wait_entity(p_rev, "c1::reviews.bookinfo", 20000);
	cr_assert(kp, "reviews not reported");
	cr_expect_str_eq(str_at(kp, "entity.layer"), "MESH");
	cr_expect_str_eq(str_at(kp, "entity.processName"), "reviews");
	cr_expect_str_eq(label0(kp), "mesh-application");
	json_object_put(kp);
	kp = wait_entity(p_proxy, "c1::reviews.bookinfo", 20000);
	cr_assert(kp, "the istio-proxy (a docker systemd scope) not reported");
	cr_expect_str_eq(str_at(kp, "entity.layer"), "MESH_DP");
	cr_expect_str_eq(str_at(kp, "entity.processName"), "envoy");
	cr_expect_str_eq(label0(kp), "mesh-envoy");
	cr_expect_str_eq(prop(kp, "container_name"), "istio-proxy");
	json_object_put(kp);

	/* Two more heartbeats: still nothing of the other node, nor of the pod no analyzer
	 * takes, nor of the CRI-O conmon. */
	sleep_ms(2500);
	cr_expect_eq(reported(p_other, got, 8), 0, "another node's pod reported");
	cr_expect_eq(reported(p_batch, got, 8), 0, "a pod no analyzer takes reported");
	cr_expect_eq(reported(kube_conmon_pid(p_rev), got, 8), 0, "CRI-O's conmon reported");
	cr_expect_eq(in_last_keepalive("c1::web.shop"), 1);
	/* Only this node's pods were asked for. */
	cr_expect_gt(kube_api_requests(&e.k, "list pods"), 0);
	cr_expect_gt(kube_api_requests(&e.k, "watch pods"), 0);
	/* libcurl is loaded at run time, with Kubernetes on only (supervisor/discovery/curl_load.c). */
	{
		char *hit = proc_maps_grep(find_child(e.rover, "rover-superviso"), "libcurl");

		cr_expect(hit && hit[0], "the supervisor does not map libcurl");
		free(hit);
	}
}

Test(kube, labels_services_and_deletions_are_followed)
{
	struct env e;
	char uid[37], id[65];
	const char *web = exe_named("shopfront");
	pid_t pid = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid), uid), id, web);
	const char *l1[] = { "app=web", NULL }, *l2[] = { "app=web2", NULL };
	struct kube_pod p = {
		.name = "web-1",
		.ns = "shop",
		.uid = uid,
		.node = "node-a",
		.labels = l1,
		.pod_ip = "10.244.1.7",
		.host_ip = "192.168.49.2",
		.containers =
			(struct kube_container[]){
				{ .name = "web", .id = id, .runtime = KUBE_RT_CONTAINERD }, { 0 } },
	};
	struct kube_service s1 = { .name = "web", .ns = "shop", .selector = l1 };
	struct kube_service s2 = { .name = "web2", .ns = "shop", .selector = l2 };
	struct json_object *kp;

	start_all(&e, "shop, other", NULL); /* namespaces as a user writes them: trimmed */
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s1)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::web.shop", 30000);
	cr_assert(kp, "not reported; log:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);

	/* A Service made later and a label change: the entity follows. */
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s2)), 0);
	p.labels = l2;
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::web2.shop", 20000);
	cr_assert(kp, "the relabelled pod's entity was not reported");
	json_object_put(kp);
	cr_expect(wait_keepalive("c1::web.shop", 0, 10000), "the old entity is still kept alive");
	cr_expect(wait_keepalive("c1::web2.shop", 1, 10000));

	/* The pod deleted (its process still running): its entity goes. */
	cr_assert_gt(kube_api_delete(&e.k, "Pod", "shop", "web-1"), 0);
	cr_expect(wait_keepalive("c1::web2.shop", 0, 10000),
		  "a deleted pod's process is still kept alive: %s",
		  slurp(tmp_path("rover.log"), NULL));
}

Test(kube, outages_relists_and_a_rotated_token)
{
	struct env e;
	char uid[37], id[65], uid2[37], id2[65];
	const char *web = exe_named("web"), *api = exe_named("api");
	pid_t pid = container(KUBE_CGROUPFS, (kube_random_uid(uid), uid), id, web);
	pid_t pid2 = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid2), uid2), id2, api);
	const char *l1[] = { "app=web", NULL }, *l2[] = { "app=api", NULL };
	struct kube_pod p = {
		.name = "web-1",
		.ns = "shop",
		.uid = uid,
		.node = "node-a",
		.labels = l1,
		.containers =
			(struct kube_container[]){
				{ .name = "web", .id = id, .runtime = KUBE_RT_CONTAINERD }, { 0 } },
	};
	struct kube_pod p2 = {
		.name = "api-1",
		.ns = "shop",
		.uid = uid2,
		.node = "node-a",
		.labels = l2,
		.containers =
			(struct kube_container[]){
				{ .name = "api", .id = id2, .runtime = KUBE_RT_CONTAINERD },
				{ 0 } },
	};
	struct kube_service s1 = { .name = "web", .ns = "shop", .selector = l1 };
	struct kube_service s2 = { .name = "api", .ns = "shop", .selector = l2 };
	struct json_object *kp;
	long before;

	start_all(&e, "", NULL);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s1)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s2)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::web.shop", 30000);
	cr_assert(kp, "not reported; log:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);

	/* The API server down for real (connections refused): the state is kept, keepAlive
	 * goes on, the failure is said once. */
	cr_assert_eq(kube_api_down(&e.k), 0);
	sleep_ms(4000);
	cr_expect_eq(in_last_keepalive("c1::web.shop"), 1,
		     "the entity was dropped while the API server was down");
	cr_expect_eq(count_in_log("keeping what is known"), 2,
		     "one line per watch that failed:\n%s", slurp(tmp_path("rover.log"), NULL));
	/* Back, having lost its event history (a watch from before gets 410): relisted. */
	cr_assert_eq(kube_api_up(&e.k), 0);
	kube_api_compact(&e.k);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p2)), 0);
	kp = wait_entity(pid2, "c1::api.shop", 40000);
	cr_assert(kp, "a pod made after the outage was not found; log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);
	cr_expect(wait_log("answers again", 5000), "%s", slurp(tmp_path("rover.log"), NULL));

	/* The token rotated (the old one refused from now on); the watches broken: the new one
	 * is read and used, and discovery goes on. */
	before = kube_api_requests(&e.k, "watch pods");
	cr_assert_eq(kube_api_set_token(&e.k, "token-2"), 0);
	kube_api_drop_watches(&e.k);
	cr_assert_gt(kube_api_delete(&e.k, "Pod", "shop", "api-1"), 0);
	cr_expect(wait_keepalive("c1::api.shop", 0, 30000), "a deletion after the rotation was "
							    "not seen");
	cr_expect_gt(kube_api_token_uses(&e.k, "token-2"), 0);
	cr_expect_gt(kube_api_requests(&e.k, "watch pods"), before);
	cr_expect(wait_log("token in", 1000), "the rotation was not said");
}

Test(kube, garbage_from_the_api_server_is_refused_and_counted)
{
	struct env e;
	char uid[37], id[65], uid2[37], id2[65];
	const char *web = exe_named("web"), *api = exe_named("api");
	pid_t pid = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid), uid), id, web);
	pid_t pid2 = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid2), uid2), id2, api);
	const char *l1[] = { "app=web", NULL }, *l2[] = { "app=api", NULL };
	struct kube_pod p = {
		.name = "web-1",
		.ns = "shop",
		.uid = uid,
		.node = "node-a",
		.labels = l1,
		.containers =
			(struct kube_container[]){
				{ .name = "web", .id = id, .runtime = KUBE_RT_CONTAINERD }, { 0 } },
	};
	struct kube_pod p2 = {
		.name = "api-1",
		.ns = "shop",
		.uid = uid2,
		.node = "node-a",
		.labels = l2,
		.containers =
			(struct kube_container[]){
				{ .name = "api", .id = id2, .runtime = KUBE_RT_CONTAINERD },
				{ 0 } },
	};
	struct kube_service s1 = { .name = "web", .ns = "shop", .selector = l1 };
	struct kube_service s2 = { .name = "api", .ns = "shop", .selector = l2 };
	struct json_object *kp;
	pid_t sv;

	start_all(&e, "", NULL);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s1)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s2)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::web.shop", 30000);
	cr_assert(kp, "not reported; log:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);
	sv = find_child(e.rover, "rover-superviso");
	cr_assert_gt(sv, 0);

	/* Watch lines and then list answers of each kind of garbage. */
	cr_assert_eq(kube_api_garbage(&e.k, "json", 1, "watch"), 0);
	cr_assert_eq(kube_api_garbage(&e.k, "types", 1, "any"), 0);
	cr_assert_eq(kube_api_garbage(&e.k, "huge", 1, "any"), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p2)), 0);
	kp = wait_entity(pid2, "c1::api.shop", 60000);
	cr_assert(kp, "the pod after the garbage was never found; log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);
	/* The same supervisor all along, the first entity never dropped, the refusals said. */
	cr_expect_eq(find_child(e.rover, "rover-superviso"), sv, "the supervisor was restarted");
	cr_expect_eq(in_last_keepalive("c1::web.shop"), 1);
	cr_expect_gt(count_in_log("was refused") + count_in_log("was dropped"), 0, "%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_expect(wait_log("objects refused as malformed", 5000), "the drops were not counted");
}

/* A user's own analyzer: owners walked (ReplicaSet -> Deployment), env and labels read. */
Test(kube, a_users_analyzer_sees_owners_env_and_labels)
{
	static const char analyzers[] =
		"    analyzers:\n"
		"      - active: true\n"
		"        filters:\n"
		"          - '.Pod.HasOwnerName \"Deployment\"'\n"
		"          - 'eq .Container.Name \"app\"'\n"
		"        layer: GENERAL\n"
		"        service_name: '{{.Pod.OwnerName \"Deployment\"}}'\n"
		"        instance_name: '{{.Pod.Name}}-{{.Container.EnvValue \"ZONE\"}}'\n"
		"        process_name: '{{.Pod.LabelValue \"tier,app\" \"none\"}}'\n"
		"        labels: owned\n";
	struct env e;
	char uid[37], id[65];
	const char *exe = exe_named("app");
	pid_t pid = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid), uid), id, exe);
	const char *labels[] = { "app=cart", NULL };
	struct kube_env env[] = { { "ZONE", "eu-1" }, { "POD", NULL }, { 0 } };
	struct kube_owner rs = { .kind = "ReplicaSet", .name = "cart-7f9", .controller = 1 };
	struct kube_owner dep = { .kind = "Deployment", .name = "cart", .controller = 1 };
	struct kube_pod p = {
		.name = "cart-7f9-x2",
		.ns = "shop",
		.uid = uid,
		.node = "node-a",
		.labels = labels,
		.owners = (struct kube_owner[]){ rs, { 0 } },
		.containers = (struct kube_container[]){ { .name = "app",
							   .id = id,
							   .env = env,
							   .runtime = KUBE_RT_CONTAINERD },
							 { 0 } },
	};
	struct json_object *kp;

	start_all(&e, "", analyzers);
	cr_assert_gt(kube_api_put(&e.k,
				  kube_owned_json("ReplicaSet", "shop", "cart-7f9", NULL, &dep)),
		     0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::cart", 30000);
	cr_assert(kp, "not reported; log:\n%s", slurp(tmp_path("rover.log"), NULL));
	cr_expect_str_eq(str_at(kp, "entity.layer"), "GENERAL");
	cr_expect_str_eq(str_at(kp, "entity.instanceName"), "cart-7f9-x2-eu-1");
	cr_expect_str_eq(str_at(kp, "entity.processName"), "cart");
	cr_expect_str_eq(label0(kp), "owned");
	json_object_put(kp);
}

/* Both discovery modes at once: a host process by a finder (hostProcess), a pod's by the
 * analyzers (k8sProcess), each reported once in its own branch. */
Test(kube, host_and_kubernetes_discovery_run_together)
{
	static const char vm_on[] = "  vm:\n"
				    "    active: true\n"
				    "    period: 500ms\n"
				    "    finders:\n"
				    "      - match_cmd_regex: \"/host_svc 600$\"\n"
				    "        layer: OS_LINUX\n"
				    "        service_name: host-svc\n"
				    "        instance_name: \"{{.Rover.HostName}}\"\n"
				    "        process_name: \"{{.Process.ExeName}}\"\n";
	struct env e;
	char uid[37], id[65];
	const char *web = exe_named("web"), *host = exe_named("host_svc");
	pid_t pid = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid), uid), id, web);
	pid_t hp = track(spawn_cmd((char *[]){ (char *)host, "600", NULL }, tmp_path("host.err")));
	const char *l1[] = { "app=web", NULL };
	struct kube_pod p = {
		.name = "web-1",
		.ns = "shop",
		.uid = uid,
		.node = "node-a",
		.labels = l1,
		.containers =
			(struct kube_container[]){
				{ .name = "web", .id = id, .runtime = KUBE_RT_CONTAINERD }, { 0 } },
	};
	struct kube_service s1 = { .name = "web", .ns = "shop", .selector = l1 };
	struct json_object *kp, *h, *got[8];

	cr_assert_gt(hp, 0);
	start_all_vm(&e, "", NULL, vm_on);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s1)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::web.shop", 30000);
	cr_assert(kp, "the pod's process not reported; log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);
	h = wait_reported(hp, 20000);
	cr_assert(h, "the host process not reported");
	cr_expect_str_eq(str_at(h, "entity.serviceName"), "c1::host-svc");
	json_object_put(h);
	/* The host process is no pod's: no k8sProcess for it. */
	cr_expect_eq(reported(hp, got, 8), 0);
}

/* The supervisor's VmHWM in KiB; -1 when unread. */
static long supervisor_hwm_kib(pid_t sv)
{
	char buf[64];

	return proc_status(sv, "VmHWM", buf, sizeof(buf)) ? -1 : atol(buf);
}

/*
 * Issue 23 (5), as the attack: a pod that can write its own cgroupfs makes, under its
 * container, a cgroup named as another pod's container is and moves a process there; and a
 * process in a container scope named with the other pod's container id, under its own pod.
 * Neither is reported as the other pod: the first is the attacker's own container (the
 * segment below its pod), the second names a container its pod does not have.
 */
Test(kube, a_cgroup_named_after_another_pods_container_is_not_that_pod)
{
	struct env e;
	char uid_a[37], uid_b[37], id_a[65], id_b[65], below[128];
	const char *victim = exe_named("victim"), *attacker = exe_named("attacker");
	const char *evil = exe_named("evil"), *misplaced = exe_named("misplaced");
	pid_t p_a, p_b, p_evil, p_misplaced;
	struct json_object *kp, *got[16];
	int n;

	kube_random_uid(uid_a);
	kube_random_uid(uid_b);
	p_b = container(KUBE_CONTAINERD_SYSTEMD, uid_b, id_b, victim);
	p_a = container(KUBE_CONTAINERD_SYSTEMD, uid_a, id_a, attacker);
	snprintf(below, sizeof(below), "evil/cri-containerd-%s.scope", id_b);
	p_evil = kube_spawn_below(KUBE_CONTAINERD_SYSTEMD, uid_a, id_a, below,
				  (char *[]){ (char *)evil, "600", NULL });
	cr_assert_gt(p_evil, 0, "spawn below: %s", strerror(errno));
	p_misplaced = kube_spawn_in_cgroup(KUBE_CONTAINERD_SYSTEMD, uid_a, id_b,
					   (char *[]){ (char *)misplaced, "600", NULL });
	cr_assert_gt(p_misplaced, 0, "spawn: %s", strerror(errno));
	start_all(&e, "", NULL);
	{
		const char *lb[] = { "app=payments", NULL }, *la[] = { "app=tenant", NULL };
		struct kube_pod b = {
			.name = "payments-1",
			.ns = "bank",
			.uid = uid_b,
			.node = "node-a",
			.labels = lb,
			.containers = (struct kube_container[]){ { .name = "payments",
								   .id = id_b,
								   .runtime = KUBE_RT_CONTAINERD },
								 { 0 } },
		};
		struct kube_pod a = {
			.name = "tenant-1",
			.ns = "tenant",
			.uid = uid_a,
			.node = "node-a",
			.labels = la,
			.containers = (struct kube_container[]){ { .name = "app",
								   .id = id_a,
								   .runtime = KUBE_RT_CONTAINERD },
								 { 0 } },
		};
		struct kube_service sb = { .name = "payments", .ns = "bank", .selector = lb };
		struct kube_service sa = { .name = "tenant", .ns = "tenant", .selector = la };

		cr_assert_gt(kube_api_put(&e.k, kube_service_json(&sb)), 0);
		cr_assert_gt(kube_api_put(&e.k, kube_service_json(&sa)), 0);
		cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&b)), 0);
		cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&a)), 0);
	}
	kp = wait_entity(p_b, "c1::payments.bank", 30000);
	cr_assert(kp, "the victim's own process not reported; log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);
	kp = wait_entity(p_a, "c1::tenant.tenant", 20000);
	cr_assert(kp, "the attacker's own process not reported");
	json_object_put(kp);
	/* The process in the cgroup it made is its own container's, and reported so. */
	kp = wait_entity(p_evil, "c1::tenant.tenant", 20000);
	cr_expect(kp, "the process below the attacker's container is not reported as its pod");
	json_object_put(kp);
	/* Two more heartbeats: never as the victim. */
	sleep_ms(2500);
	n = reported(p_evil, got, 16);
	for (int i = 0; i < n; i++) {
		const char *s = str_at(got[i], "entity.serviceName");

		cr_expect(s && strcmp(s, "c1::payments.bank"),
			  "a cgroup named cri-containerd-<victim's id>.scope under the attacker's "
			  "container was reported as the victim's pod");
		cr_expect_str_eq(prop(got[i], "pod_name"), "tenant-1");
		json_object_put(got[i]);
	}
	n = reported(p_misplaced, got, 16);
	cr_expect_eq(n, 0,
		     "a container scope named with the victim's id under the attacker's pod was "
		     "reported (as %s)",
		     n ? str_at(got[0], "entity.serviceName") : "");
	for (int i = 0; i < n; i++)
		json_object_put(got[i]);
}

/*
 * Issue 23 (6), as the attack: a hostile (or compromised) API server sends answers that cost
 * the supervisor more memory than its container's 64 Mi limit (an OOM-restart loop on
 * demand): a list page of 6 MiB (the cap was 64 MiB), and a watch event of 1 MiB of empty
 * objects that json-c would make 300 MB of. Each is refused with a clear error, the
 * supervisor keeps running within the DaemonSet's limit, and discovery goes on.
 */
Test(kube, answers_over_the_memory_bounds_are_refused_and_the_supervisor_stays_small)
{
	struct env e;
	char uid[37], id[65], uid2[37], id2[65];
	const char *web = exe_named("web"), *api = exe_named("api");
	pid_t pid = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid), uid), id, web);
	pid_t pid2 = container(KUBE_CONTAINERD_SYSTEMD, (kube_random_uid(uid2), uid2), id2, api);
	const char *l1[] = { "app=web", NULL }, *l2[] = { "app=api", NULL };
	struct kube_pod p = {
		.name = "web-1",
		.ns = "shop",
		.uid = uid,
		.node = "node-a",
		.labels = l1,
		.containers =
			(struct kube_container[]){
				{ .name = "web", .id = id, .runtime = KUBE_RT_CONTAINERD }, { 0 } },
	};
	struct kube_pod p2 = {
		.name = "api-1",
		.ns = "shop",
		.uid = uid2,
		.node = "node-a",
		.labels = l2,
		.containers =
			(struct kube_container[]){
				{ .name = "api", .id = id2, .runtime = KUBE_RT_CONTAINERD },
				{ 0 } },
	};
	struct kube_service s1 = { .name = "web", .ns = "shop", .selector = l1 };
	struct kube_service s2 = { .name = "api", .ns = "shop", .selector = l2 };
	struct json_object *kp;
	long hwm0, hwm;
	pid_t sv;

	start_all(&e, "", NULL);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s1)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s2)), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p)), 0);
	kp = wait_entity(pid, "c1::web.shop", 30000);
	cr_assert(kp, "not reported; log:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);
	sv = find_child(e.rover, "rover-superviso");
	cr_assert_gt(sv, 0);
	hwm0 = supervisor_hwm_kib(sv);
	cr_assert_gt(hwm0, 0);

	/* A list page over K8S_MAX_BODY: the watches cut, and their resourceVersion compacted
	 * away before they resume (an object changed meanwhile), so they list again, and the
	 * first list's answer is 6 MiB. */
	cr_assert_eq(kube_api_garbage_bytes(&e.k, "huge", 1, "response", 6 << 20), 0);
	kube_api_drop_watches(&e.k);
	cr_assert_gt(kube_api_put(&e.k, kube_service_json(&s2)), 0);
	cr_assert_gt(kube_api_compact(&e.k), 0);
	cr_expect(wait_log("an answer over 4 MiB was refused", 20000),
		  "a 6 MiB list page was not refused with a clear error:\n%s",
		  slurp(tmp_path("rover.log"), NULL));

	/* A watch event of 1 MiB of "{}," (300 MB in json-c's tree). */
	cr_assert_eq(kube_api_garbage_bytes(&e.k, "dense", 1, "watch", 1 << 20), 0);
	cr_assert_eq(kube_api_wait_watches(&e.k, "pods", 1, 20000), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_pod_json(&p2)), 0);
	cr_expect(wait_log("would take about", 20000),
		  "a dense watch event was not refused with a clear error:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	/* Discovery goes on: the pod the refused event was about is listed again. */
	kp = wait_entity(pid2, "c1::api.shop", 40000);
	cr_expect(kp, "the pod after the refused answers was never found; log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	json_object_put(kp);

	cr_expect_eq(find_child(e.rover, "rover-superviso"), sv, "the supervisor was restarted");
	hwm = supervisor_hwm_kib(sv);
	/* K8S_MAX_BUFFERED + K8S_MAX_PARSE (k8s.h) over what it held before, and under the
	 * DaemonSet's 64 Mi limit. */
	cr_expect_leq(hwm, hwm0 + (24 << 10), "VmHWM %ld KiB, %ld KiB before the answers", hwm,
		      hwm0);
	cr_expect_lt(hwm, 64 << 10, "VmHWM %ld KiB: over the supervisor container's limit", hwm);
	fprintf(stderr, "supervisor VmHWM: %ld KiB before, %ld KiB after\n", hwm0, hwm);
}

/*
 * Issue 23 (6): an http:// api_server with a token configured would get the service
 * account's token in clear. The agent refuses the config, with an error that says why, and
 * the API server never sees a request, let alone the token.
 */
Test(kube, an_http_api_server_with_a_token_is_refused_and_never_gets_it)
{
	struct kube_api k;
	char cfg[8192];
	int oap_port, status = -1;
	pid_t rover;

	cr_assert_eq(kube_api_start(tmp, 0, 0, &k), 0, "fake API server did not start");
	cr_assert_eq(strncmp(k.url, "http://", 7), 0);
	cr_assert_gt(kube_api_put(&k, kube_node_json("node-a", "192.168.49.2")), 0);
	start_oap(0, &oap_port);
	snprintf(cfg, sizeof(cfg), config_fmt, oap_port, vm_off, "", k.url, k.token_path, "\"\"",
		 "");
	rover = track(start_rover_cfg(cfg));
	cr_assert_gt(rover, 0);
	for (int waited = 0; waited < 20000; waited += 100) {
		if (waitpid(rover, &status, WNOHANG) == rover)
			break;
		status = -1;
		sleep_ms(100);
	}
	cr_expect(wait_log("is plain http", 1000), "no clear error:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_expect(status != -1, "the agent runs with a token going over plain http");
	/* Nothing reached the API server: the token least of all. */
	cr_expect_eq(kube_api_token_uses(&k, k.token), 0, "the token went over plain http");
	cr_expect_eq(kube_api_requests(&k, "list pods") + kube_api_requests(&k, "get nodes") +
			     kube_api_requests(&k, "watch pods"),
		     0);
	kube_api_stop(&k);
}
