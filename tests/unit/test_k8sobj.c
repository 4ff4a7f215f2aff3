// SPDX-License-Identifier: Apache-2.0
/*
 * The Kubernetes API's objects as the supervisor reads them (supervisor/discovery/k8sobj.h): pods as
 * the API server writes them (statuses joined to containers by name, env literals only,
 * owner references but those marked controller: false), services and B2's selector rule,
 * watch events and lists; every malformed shape an error naming the field, never a crash;
 * and the container ids of /proc/PID/cgroup for each runtime's layout (reference B3).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/discovery/k8sobj.h"

static const char istio_pod[] =
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"reviews-v1-5d8f\","
	"\"namespace\":\"bookinfo\",\"uid\":\"6f1c-11\",\"resourceVersion\":\"4711\","
	"\"labels\":{\"app\":\"reviews\",\"service.istio.io/canonical-name\":\"reviews\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
	"\"name\":\"reviews-v1-5d8\",\"controller\":true},{\"kind\":\"Other\",\"name\":\"x\","
	"\"controller\":false}]},"
	"\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"reviews\",\"image\":\"r\","
	"\"env\":[{\"name\":\"LOG\",\"value\":\"debug\"},{\"name\":\"POD_IP\",\"valueFrom\":"
	"{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},{\"name\":\"EMPTY\"}]},"
	"{\"name\":\"istio-proxy\"}],\"initContainers\":[{\"name\":\"istio-init\"}]},"
	"\"status\":{\"phase\":\"Running\",\"podIP\":\"10.244.1.7\",\"hostIP\":\"192.168.49.2\","
	"\"containerStatuses\":[{\"name\":\"istio-proxy\",\"containerID\":"
	"\"containerd://aaaabbbbccccdddd0000111122223333\"},{\"name\":\"reviews\","
	"\"containerID\":\"cri-o://0123456789abcdef0123456789abcdef\"}],"
	"\"initContainerStatuses\":[{\"name\":\"istio-init\",\"containerID\":\"containerd://ff\"}]}}";

static struct json_object *parse(const char *s)
{
	char err[256];
	struct json_object *o = k8sobj__parse(s, strlen(s), NULL, err, sizeof(err));

	cr_assert(o, "%s", err);
	return o;
}

Test(k8sobj, a_pod_as_the_api_server_writes_it)
{
	struct json_object *o = parse(istio_pod);
	struct k8s_pod p;
	char err[256];

	cr_assert_eq(k8sobj__pod(o, &p, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(p.name, "reviews-v1-5d8f");
	cr_expect_str_eq(p.ns, "bookinfo");
	cr_expect_str_eq(p.uid, "6f1c-11");
	cr_expect_str_eq(p.node, "node-a");
	cr_expect_str_eq(p.ip, "10.244.1.7");
	cr_expect_str_eq(p.host_ip, "192.168.49.2");
	cr_expect_str_eq(p.rv, "4711");
	cr_assert_eq(p.nlabels, 2);
	/* Only the controller reference (controller: false is skipped, as upstream). */
	cr_assert_eq(p.nowners, 1);
	cr_expect_str_eq(p.owners[0].key, "ReplicaSet");
	cr_expect_str_eq(p.owners[0].value, "reviews-v1-5d8");
	/* spec.containers in order, statuses joined by name; init containers are not listed. */
	cr_assert_eq(p.ncontainers, 2);
	cr_expect_str_eq(p.containers[0].name, "reviews");
	cr_expect_str_eq(p.containers[0].id, "cri-o://0123456789abcdef0123456789abcdef");
	cr_expect_str_eq(k8sobj__bare_id(p.containers[0].id), "0123456789abcdef0123456789abcdef");
	cr_expect_str_eq(p.containers[1].name, "istio-proxy");
	cr_expect_str_eq(k8sobj__bare_id(p.containers[1].id), "aaaabbbbccccdddd0000111122223333");
	/* Env: literal values only. */
	cr_assert_eq(p.containers[0].nenv, 1);
	cr_expect_str_eq(p.containers[0].env[0].key, "LOG");
	cr_expect_str_eq(p.containers[0].env[0].value, "debug");
	cr_expect_eq(p.containers[1].nenv, 0);
	k8sobj__pod_free(&p);
	json_object_put(o);
}

Test(k8sobj, a_pending_pod_has_containers_without_ids)
{
	struct json_object *o =
		parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"},"
		      "\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
		      "\"status\":{\"phase\":\"Pending\"}}");
	struct k8s_pod p;
	char err[256];

	cr_assert_eq(k8sobj__pod(o, &p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.ncontainers, 1);
	cr_expect_str_eq(p.containers[0].id, "");
	cr_expect_str_eq(p.ip, "");
	k8sobj__pod_free(&p);
	json_object_put(o);
}

/* Each wrong type or size is an error naming what, and the struct stays empty. */
Test(k8sobj, malformed_pods_are_errors_naming_the_field)
{
	static const struct {
		const char *json, *names;
	} cases[] = {
		{ "[]", "not an object" },
		{ "{\"metadata\":\"x\"}", "wrong type" },
		{ "{\"metadata\":{\"name\":5,\"namespace\":\"n\",\"uid\":\"u\"}}",
		  "metadata.name" },
		{ "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"}}", "no uid" },
		{ "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"labels\":[]}}",
		  "metadata.labels" },
		{ "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"labels\":{\"a\":1}}}",
		  "metadata.labels.a" },
		{ "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":"
		  "{\"containers\":5}}",
		  "spec.containers" },
		{ "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":"
		  "{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":7}]}]}}",
		  "env[0].value" },
		{ "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"ownerReferences\":"
		  "[{\"kind\":\"ReplicaSet\"}]}}",
		  "no kind or name" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *o = parse(cases[i].json);
		struct k8s_pod p, zero = { 0 };
		char err[256] = "";

		cr_expect_lt(k8sobj__pod(o, &p, err, sizeof(err)), 0, "%s", cases[i].json);
		cr_expect(strstr(err, cases[i].names), "%s: '%s' lacks '%s'", cases[i].json, err,
			  cases[i].names);
		cr_expect(!memcmp(&p, &zero, sizeof(p)));
		json_object_put(o);
	}
}

Test(k8sobj, oversized_objects_are_refused_not_cut)
{
	size_t n = 200 * 24 + 256;
	char *s = malloc(n), *q = s;
	struct json_object *o;
	struct k8s_pod p;
	char err[256];

	cr_assert(s);
	q += sprintf(q,
		     "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"labels\":{");
	for (int i = 0; i < 200; i++)
		q += sprintf(q, "%s\"k%d\":\"v\"", i ? "," : "", i);
	sprintf(q, "}}}");
	o = parse(s);
	cr_expect_eq(k8sobj__pod(o, &p, err, sizeof(err)), -E2BIG);
	cr_expect(strstr(err, "more than 128"), "%s", err);
	json_object_put(o);
	free(s);

	/* A name longer than a DNS subdomain. */
	s = malloc(600);
	cr_assert(s);
	q = s + sprintf(s, "{\"metadata\":{\"namespace\":\"n\",\"uid\":\"u\",\"name\":\"");
	memset(q, 'a', 300);
	sprintf(q + 300, "\"}}");
	o = parse(s);
	cr_expect_eq(k8sobj__pod(o, &p, err, sizeof(err)), -E2BIG);
	json_object_put(o);
	free(s);
}

Test(k8sobj, bad_json_and_deep_nesting_are_errors)
{
	char err[256], deep[200];

	cr_expect_null(k8sobj__parse("{\"a\":", 5, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "cut short"), "%s", err);
	cr_expect_null(k8sobj__parse("{} x", 4, NULL, err, sizeof(err)));
	cr_expect_null(k8sobj__parse("nope", 4, NULL, err, sizeof(err)));
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	cr_expect_null(k8sobj__parse(deep, sizeof(deep), NULL, err, sizeof(err)));
}

Test(k8sobj, services_and_the_selector_rule)
{
	struct json_object *o =
		parse("{\"metadata\":{\"name\":\"reviews\",\"namespace\":\"bookinfo\","
		      "\"resourceVersion\":\"9\"},\"spec\":{\"selector\":"
		      "{\"app\":\"reviews\"},\"ports\":[{\"port\":9080}]}}");
	struct json_object *none = parse("{\"metadata\":{\"name\":\"headless\",\"namespace\":"
					 "\"bookinfo\"},\"spec\":{\"clusterIP\":\"None\"}}");
	struct k8s_kv labels[2] = { { "app", "reviews" }, { "version", "v1" } };
	struct k8s_kv other[1] = { { "app", "ratings" } };
	struct k8s_service s, h;
	char err[256];

	cr_assert_eq(k8sobj__service(o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(s.name, "reviews");
	cr_expect_eq(s.nselector, 1);
	cr_expect(k8sobj__selects(&s, labels, 2));
	cr_expect_not(k8sobj__selects(&s, other, 1));
	/* No selector selects nothing (upstream: non-empty selectors only). */
	cr_assert_eq(k8sobj__service(none, &h, err, sizeof(err)), 0, "%s", err);
	cr_expect_not(k8sobj__selects(&h, labels, 2));
	k8sobj__service_free(&s);
	k8sobj__service_free(&h);
	json_object_put(o);
	json_object_put(none);
}

Test(k8sobj, watch_events_lists_and_owners)
{
	struct json_object *o, *obj, *items;
	enum k8s_event_type t;
	char err[256], rv[64], cont[64], kind[64], name[256];
	int code;

	o = parse("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}");
	cr_assert_eq(k8sobj__event(o, &t, &obj, rv, sizeof(rv), &code, err, sizeof(err)), 0);
	cr_expect_eq(t, K8S_MODIFIED);
	cr_expect_str_eq(rv, "12");
	json_object_put(o);

	o = parse("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
		  "\"reason\":\"Expired\"}}");
	cr_assert_eq(k8sobj__event(o, &t, &obj, rv, sizeof(rv), &code, err, sizeof(err)), 0);
	cr_expect_eq(t, K8S_ERROR);
	cr_expect_eq(code, 410);
	json_object_put(o);

	o = parse("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
		  "{\"resourceVersion\":\"77\"}}}");
	cr_assert_eq(k8sobj__event(o, &t, &obj, rv, sizeof(rv), &code, err, sizeof(err)), 0);
	cr_expect_eq(t, K8S_BOOKMARK);
	cr_expect_str_eq(rv, "77");
	json_object_put(o);

	o = parse("{\"type\":\"RENAMED\",\"object\":{}}");
	cr_expect_lt(k8sobj__event(o, &t, &obj, rv, sizeof(rv), &code, err, sizeof(err)), 0);
	json_object_put(o);

	o = parse("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\",\"continue\":"
		  "\"c1\"},\"items\":[{},{}]}");
	cr_assert_eq(k8sobj__list(o, &items, rv, sizeof(rv), cont, sizeof(cont), err, sizeof(err)),
		     0, "%s", err);
	cr_expect_str_eq(rv, "100");
	cr_expect_str_eq(cont, "c1");
	cr_expect_eq(json_object_array_length(items), 2);
	json_object_put(o);

	o = parse("{\"metadata\":{\"name\":\"reviews-v1-5d8\",\"ownerReferences\":[{\"kind\":"
		  "\"Deployment\",\"name\":\"reviews-v1\",\"controller\":true}]}}");
	cr_assert_eq(k8sobj__controller(o, kind, sizeof(kind), name, sizeof(name), err,
					sizeof(err)),
		     0, "%s", err);
	cr_expect_str_eq(kind, "Deployment");
	cr_expect_str_eq(name, "reviews-v1");
	json_object_put(o);
}

#define A_UID "0d6c2c52-8a3f-4a4b-9c1e-5a1f0c9e7b21"
#define A_UID_ "0d6c2c52_8a3f_4a4b_9c1e_5a1f0c9e7b21"
#define B_UID "7e2f9a10-1b2c-4d3e-8f40-112233445566"
#define B_UID_ "7e2f9a10_1b2c_4d3e_8f40_112233445566"
#define A_ID "aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000"
#define B_ID "bbbb1111bbbb1111bbbb1111bbbb1111bbbb1111bbbb1111bbbb1111bbbb1111"

/* One container named by text: its pod and id. */
static void expect_one(const char *text, const char *pod, const char *id)
{
	struct k8s_cgroup_id ids[2];

	cr_assert_eq(k8sobj__cgroup_ids(text, ids, 2), 1, "%s", text);
	cr_expect_str_eq(ids[0].pod, pod, "%s", text);
	cr_expect_str_eq(ids[0].id, id, "%s", text);
}

static void expect_none(const char *text)
{
	struct k8s_cgroup_id ids[2];

	cr_expect_eq(k8sobj__cgroup_ids(text, ids, 2), 0, "%s: %s", text, ids[0].id);
}

/* The lines of /proc/PID/cgroup each runtime and cgroup driver gives (reference B3). */
Test(k8sobj, container_ids_from_each_cgroup_layout)
{
	static const struct {
		const char *text, *pod, *id;
	} cases[] = {
		/* containerd, systemd driver, cgroup v2 */
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c1f_22.slice/"
		  "cri-containerd-4b8fa2e2c5d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80912."
		  "scope\n",
		  "7c1f-22", "4b8fa2e2c5d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80912" },
		/* CRI-O, systemd driver, cgroup v1 (several hierarchies, one id) */
		{ "12:pids:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podab_c.slice/"
		  "crio-0123456789abcdef0123456789abcdef.scope\n"
		  "1:name=systemd:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podab_"
		  "c.slice/crio-0123456789abcdef0123456789abcdef.scope\n",
		  "ab-c", "0123456789abcdef0123456789abcdef" },
		/* CRI-O with crun on cgroup v2: the container's processes in a subgroup */
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" A_UID_
		  ".slice/"
		  "crio-" A_ID ".scope/container\n",
		  A_UID, A_ID },
		/* docker with the systemd driver (upstream misses it), a guaranteed pod */
		{ "0::/kubepods.slice/kubepods-pod1.slice/docker-feedfacefeedfacefeedface.scope\n",
		  "1", "feedfacefeedfacefeedface" },
		/* cgroupfs driver, v1 and v2; CRI-O names its cgroup crio-<id> there */
		{ "4:memory:/kubepods/burstable/pod7c1f-22/abcdefabcdef0123456789\n", "7c1f-22",
		  "abcdefabcdef0123456789" },
		{ "0::/kubepods/besteffort/pod9-9/99887766554433221100aabb\n", "9-9",
		  "99887766554433221100aabb" },
		{ "0::/kubepods/pod" A_UID "/crio-" A_ID "\n", A_UID, A_ID },
		/* a static pod: its uid is its manifest's hash */
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
		  "pod2c5e9b0e6d1c4a7f9d3b8e1a0f6c2d4b.slice/cri-containerd-" A_ID ".scope\n",
		  "2c5e9b0e6d1c4a7f9d3b8e1a0f6c2d4b", A_ID },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_one(cases[i].text, cases[i].pod, cases[i].id);
	/* CRI-O's monitor, host services and the root are not containers. */
	expect_none("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" A_UID_
		    ".slice/crio-conmon-0123456789abcdef.scope\n");
	expect_none("0::/kubepods/burstable/pod" A_UID "/crio-conmon-0123456789abcdef\n");
	expect_none("0::/system.slice/nginx.service\n1:name=systemd:/\n");
	expect_none("0::/\n");
	/* kubelet's own cgroups above the containers name none. */
	expect_none("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" A_UID_
		    ".slice\n");
	expect_none("0::/kubepods.slice/kubepods-burstable.slice\n");
	/* The attack: a local user names a cgroup of its own delegated tree after a pod's
	 * container, to be reported (and profiled) as that pod. */
	expect_none("0::/user.slice/user-1000.slice/user@1000.service/"
		    "cri-containerd-0123456789abcdef0123456789abcdef.scope\n");
	expect_none("0::/user.slice/user-1000.slice/user@1000.service/"
		    "kubepods.slice/crio-0123456789abcdef0123456789abcdef.scope\n");
	expect_none("garbage without colons\n::\n");
}

/*
 * The attack of issue 23 (5): a pod that can write its own cgroupfs makes, under its
 * container, a cgroup named as another pod's container is, moves itself there, and would be
 * reported (and profiled, its stacks shipped) as that pod: the last segment won. The
 * container is the segment below the pod's: this process is A's, whatever it names below.
 */
Test(k8sobj, a_cgroup_a_container_makes_under_itself_is_still_that_container)
{
	/* systemd driver: a whole kubelet tree mimicked under A's container */
	expect_one("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" A_UID_
		   ".slice/cri-containerd-" A_ID ".scope/evil/cri-containerd-" B_ID ".scope\n",
		   A_UID, A_ID);
	expect_one("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" A_UID_
		   ".slice/cri-containerd-" A_ID ".scope/kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-pod" B_UID_ ".slice/cri-containerd-" B_ID ".scope\n",
		   A_UID, A_ID);
	/* cgroupfs driver */
	expect_one("0::/kubepods/burstable/pod" A_UID "/" A_ID "/pod" B_UID "/" B_ID "\n", A_UID,
		   A_ID);
	expect_one("4:pids:/kubepods/besteffort/pod" A_UID "/" A_ID "/evil/" B_ID "\n", A_UID,
		   A_ID);
	/* seen from a cgroup namespace */
	expect_one("0::/../../kubepods-burstable-pod" A_UID_ ".slice/cri-containerd-" A_ID
		   ".scope/evil/cri-containerd-" B_ID ".scope\n",
		   A_UID, A_ID);
	/* Levels out of kubelet's order are no kubelet cgroup: a pod slice under another's
	 * QoS class (systemd places a slice by its name), a QoS class under a pod. */
	expect_none("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-burstable-pod" B_UID_
		    ".slice/cri-containerd-" B_ID ".scope\n");
	expect_none("0::/kubepods.slice/kubepods-burstable-pod" B_UID_ ".slice/cri-containerd-" B_ID
		    ".scope\n");
	expect_none("0::/kubepods/pod" A_UID "/burstable/pod" B_UID "/" B_ID "\n");
	expect_none("0::/kubepods.slice/kubepods/burstable/pod" B_UID "/" B_ID "\n");
}

/*
 * Under cgroup v2 with a private cgroup namespace (the DaemonSet's supervisor container), a
 * cgroup outside it reads as the way up from the namespace's root to the common ancestor,
 * then down: "/../../kubepods-besteffort.slice/...".
 */
Test(k8sobj, paths_seen_from_a_cgroup_namespace_are_understood)
{
	/* another QoS class: the common ancestor is kubepods.slice */
	expect_one("0::/../../../kubepods-besteffort.slice/kubepods-besteffort-pod" B_UID_
		   ".slice/cri-containerd-" B_ID ".scope\n",
		   B_UID, B_ID);
	/* the same QoS class */
	expect_one("0::/../../kubepods-burstable-pod" B_UID_ ".slice/crio-" B_ID ".scope\n", B_UID,
		   B_ID);
	/* a guaranteed pod */
	expect_one("0::/../../kubepods-pod" B_UID_ ".slice/docker-" B_ID ".scope\n", B_UID, B_ID);
	/* up to the root (kubelet under another root of ours, or a guaranteed reader) */
	expect_one("0::/../../../../kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" B_UID_
		   ".slice/cri-containerd-" B_ID ".scope\n",
		   B_UID, B_ID);
	expect_one("0::/../../kubepods.slice/kubepods-pod" B_UID_ ".slice/cri-containerd-" B_ID
		   ".scope\n",
		   B_UID, B_ID);
	/* cgroupfs */
	expect_one("0::/../../besteffort/pod" B_UID "/" B_ID "\n", B_UID, B_ID);
	expect_one("0::/../pod" B_UID "/" B_ID "\n", B_UID, B_ID);
	expect_one("0::/../../../../kubepods/burstable/pod" B_UID "/" B_ID "\n", B_UID, B_ID);
	/* Another container of the reader's own pod: no pod segment, so none named. */
	expect_none("0::/../cri-containerd-" B_ID ".scope\n");
	/* The host's services, a user's delegated tree, the reader itself and its children. */
	expect_none("0::/../../../../system.slice/containerd.service\n");
	expect_none("0::/../../../../user.slice/user-1000.slice/user@1000.service/app.slice/"
		    "kubepods-burstable-pod" B_UID_ ".slice/cri-containerd-" B_ID ".scope\n");
	expect_none("0::/../../../..\n");
	expect_none("0::/\n");
	expect_none("0::/evil/cri-containerd-" B_ID ".scope\n");
	/* ".." is only the way up, at the start (the kernel writes it so, no cgroup is named so) */
	expect_none("0::/kubepods/../kubepods/burstable/pod" B_UID "/" B_ID "\n");
	expect_none("0::/../kubepods-burstable-pod" B_UID_ ".slice/../kubepods-burstable-pod" B_UID_
		    ".slice/cri-containerd-" B_ID ".scope\n");
}

/* The pod uid a cgroup names is the API server's pod's: its own, with '_' read as '-' by the
 * parser, or for a static pod's mirror the uid in kubernetes.io/config.mirror. */
Test(k8sobj, a_cgroup_s_pod_is_the_api_server_s_pod_or_its_mirror)
{
	static const char mirror[] =
		"{\"metadata\":{\"name\":\"etcd-node-a\",\"namespace\":\"kube-system\","
		"\"uid\":\"" B_UID "\",\"annotations\":{\"kubernetes.io/config.mirror\":"
		"\"2c5e9b0e6d1c4a7f9d3b8e1a0f6c2d4b\",\"kubernetes.io/config.hash\":"
		"\"2c5e9b0e6d1c4a7f9d3b8e1a0f6c2d4b\"}}}";
	struct json_object *o = parse(istio_pod);
	struct k8s_cgroup_id ids[2];
	struct k8s_pod p;
	char err[256];

	cr_assert_eq(k8sobj__pod(o, &p, err, sizeof(err)), 0, "%s", err);
	json_object_put(o);
	cr_expect_str_eq(p.mirror_uid, "");
	cr_expect(k8sobj__pod_is(&p, "6f1c-11"));
	cr_expect(!k8sobj__pod_is(&p, "6f1c-1"));
	cr_expect(!k8sobj__pod_is(&p, "6f1c-111"));
	cr_expect(!k8sobj__pod_is(&p, ""));
	k8sobj__pod_free(&p);

	o = parse(mirror);
	cr_assert_eq(k8sobj__pod(o, &p, err, sizeof(err)), 0, "%s", err);
	json_object_put(o);
	cr_expect_str_eq(p.mirror_uid, "2c5e9b0e6d1c4a7f9d3b8e1a0f6c2d4b");
	cr_assert_eq(k8sobj__cgroup_ids("0::/kubepods.slice/kubepods-burstable.slice/"
					"kubepods-burstable-pod" B_UID_
					".slice/cri-containerd-" B_ID ".scope\n",
					ids, 2),
		     1);
	cr_expect(k8sobj__pod_is(&p, ids[0].pod));
	cr_expect(k8sobj__pod_is(&p, "2c5e9b0e6d1c4a7f9d3b8e1a0f6c2d4b"));
	cr_expect(!k8sobj__pod_is(&p, A_UID));
	k8sobj__pod_free(&p);

	/* annotations of another type are an error naming the field */
	o = parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"c\","
		  "\"annotations\":[1]}}");
	cr_expect_eq(k8sobj__pod(o, &p, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "annotations"), "%s", err);
	json_object_put(o);
}

/*
 * json-c's tree is far larger than its text (an empty object is a hash table of 16 entries):
 * 3 MiB of "{}," took 800 MB. The cost is counted before parsing and a document over
 * K8S_MAX_PARSE is refused unparsed; a real pod's costs what it did.
 */
Test(k8sobj, a_document_that_would_take_too_much_to_parse_is_refused_unparsed)
{
	size_t n = 3u << 20, len;
	char *bomb = malloc(n + 64), err[256];
	int big = 0;
	struct json_object *o;

	cr_assert(bomb);
	len = (size_t)sprintf(bomb, "{\"items\":[");
	while (len + 3 < n) {
		memcpy(bomb + len, "{},", 3);
		len += 3;
	}
	len += (size_t)sprintf(bomb + len, "{}]}");
	cr_expect_gt(k8sobj__parse_cost(bomb, len), (size_t)K8S_MAX_PARSE);
	o = k8sobj__parse(bomb, len, &big, err, sizeof(err));
	cr_expect_null(o);
	cr_expect_eq(big, 1);
	cr_expect(strstr(err, "MiB"), "%s", err);
	/* The same bytes inside a string cost their bytes only. */
	bomb[9] = '"';
	bomb[len - 2] = '"';
	cr_expect_lt(k8sobj__parse_cost(bomb, len), 3 * len);
	free(bomb);

	/* A real pod: parsed. */
	cr_expect_lt(k8sobj__parse_cost(istio_pod, strlen(istio_pod)), (size_t)64 << 10);
	o = k8sobj__parse(istio_pod, strlen(istio_pod), &big, err, sizeof(err));
	cr_expect(o && !big, "%s", err);
	json_object_put(o);
}
