// SPDX-License-Identifier: Apache-2.0
/*
 * The Kubernetes API's objects as the supervisor reads them (supervisor/k8sobj.h): pods as
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

#include "supervisor/k8sobj.h"

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
	struct json_object *o = k8sobj__parse(s, strlen(s), err, sizeof(err));

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
	struct json_object *o = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"},"
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
		{ "{\"metadata\":{\"name\":5,\"namespace\":\"n\",\"uid\":\"u\"}}", "metadata.name" },
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
	q += sprintf(q, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"labels\":{");
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

	cr_expect_null(k8sobj__parse("{\"a\":", 5, err, sizeof(err)));
	cr_expect(strstr(err, "cut short"), "%s", err);
	cr_expect_null(k8sobj__parse("{} x", 4, err, sizeof(err)));
	cr_expect_null(k8sobj__parse("nope", 4, err, sizeof(err)));
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	cr_expect_null(k8sobj__parse(deep, sizeof(deep), err, sizeof(err)));
}

Test(k8sobj, services_and_the_selector_rule)
{
	struct json_object *o = parse("{\"metadata\":{\"name\":\"reviews\",\"namespace\":\"bookinfo\","
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

/* The lines of /proc/PID/cgroup each runtime and cgroup driver gives (reference B3). */
Test(k8sobj, container_ids_from_each_cgroup_layout)
{
	static const struct {
		const char *text, *id;
	} cases[] = {
		/* containerd, systemd driver, cgroup v2 */
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c1f_22.slice/"
		  "cri-containerd-4b8fa2e2c5d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80912."
		  "scope\n",
		  "4b8fa2e2c5d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80912" },
		/* CRI-O, systemd driver, cgroup v1 (several hierarchies, one id) */
		{ "12:pids:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podab_c.slice/"
		  "crio-0123456789abcdef0123456789abcdef.scope\n"
		  "1:name=systemd:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podab_"
		  "c.slice/crio-0123456789abcdef0123456789abcdef.scope\n",
		  "0123456789abcdef0123456789abcdef" },
		/* docker with the systemd driver: upstream misses it */
		{ "0::/kubepods.slice/kubepods-pod1.slice/docker-feedfacefeedfacefeedface.scope\n",
		  "feedfacefeedfacefeedface" },
		/* cgroupfs driver, v1 and v2 */
		{ "4:memory:/kubepods/burstable/pod7c1f-22/abcdefabcdef0123456789\n",
		  "abcdefabcdef0123456789" },
		{ "0::/kubepods/besteffort/pod9-9/99887766554433221100aabb\n",
		  "99887766554433221100aabb" },
	};
	char ids[2][80];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(k8sobj__cgroup_ids(cases[i].text, ids, 2), 1, "%s", cases[i].text);
		cr_expect_str_eq(ids[0], cases[i].id);
	}
	/* CRI-O's monitor, host services and the root are not containers. */
	cr_expect_eq(k8sobj__cgroup_ids("0::/kubepods.slice/crio-conmon-0123456789abcdef.scope\n",
					ids, 2),
		     0);
	cr_expect_eq(k8sobj__cgroup_ids("0::/system.slice/nginx.service\n1:name=systemd:/\n", ids,
					2),
		     0);
	cr_expect_eq(k8sobj__cgroup_ids("0::/\n", ids, 2), 0);
	/* The attack: a local user names a cgroup of its own delegated tree after a pod's
	 * container, to be reported (and profiled) as that pod. */
	cr_expect_eq(k8sobj__cgroup_ids("0::/user.slice/user-1000.slice/user@1000.service/"
					"cri-containerd-0123456789abcdef0123456789abcdef.scope\n",
					ids, 2),
		     0);
	cr_expect_eq(k8sobj__cgroup_ids("0::/user.slice/user-1000.slice/user@1000.service/"
					"kubepods.slice/crio-0123456789abcdef0123456789abcdef.scope\n",
					ids, 2),
		     0);
	cr_expect_eq(k8sobj__cgroup_ids("garbage without colons\n::\n", ids, 2), 0);
}
