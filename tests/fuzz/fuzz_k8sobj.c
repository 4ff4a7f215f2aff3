// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what the Kubernetes API server sends the supervisor (supervisor/discovery/k8sobj.c):
 * the input's first byte picks how the rest is read (a watch line, a list, a pod, a service,
 * an owner, or a /proc/PID/cgroup text), the rest is copied to a buffer of its exact size with
 * no NUL after it.
 *
 * Contracts checked: a decoded pod or service has every string set and within its bound, its
 * counts within theirs, ids from a cgroup text are non-empty, terminated and distinct; a
 * failure leaves the struct zeroed and says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/discovery/k8sobj.h"

static void check_str(const char *s, size_t max)
{
	if (!s || strlen(s) > max)
		abort();
}

static void check_kvs(const struct k8s_kv *kv, int n, int max, size_t vmax)
{
	if (n < 0 || n > max || (n && !kv))
		abort();
	for (int i = 0; i < n; i++) {
		check_str(kv[i].key, K8S_NAME_MAX);
		check_str(kv[i].value, vmax);
	}
}

static void pod(struct json_object *o)
{
	struct k8s_pod p;
	char err[256] = "";

	if (k8sobj__pod(o, &p, err, sizeof(err))) {
		static const struct k8s_pod zero;

		if (!err[0] || memcmp(&p, &zero, sizeof(p)))
			abort();
		return;
	}
	check_str(p.uid, K8S_ID_MAX);
	check_str(p.name, K8S_NAME_MAX);
	check_str(p.ns, K8S_NAME_MAX);
	check_str(p.node, K8S_NAME_MAX);
	check_str(p.ip, K8S_ID_MAX);
	check_str(p.host_ip, K8S_ID_MAX);
	check_str(p.rv, K8S_ID_MAX);
	if (!p.uid[0] || !p.name[0] || !p.ns[0])
		abort();
	check_kvs(p.labels, p.nlabels, K8S_MAX_LABELS, K8S_VALUE_MAX);
	check_kvs(p.owners, p.nowners, K8S_MAX_OWNER_REFS, K8S_NAME_MAX);
	if (p.ncontainers < 0 || p.ncontainers > K8S_MAX_CONTAINERS)
		abort();
	for (int i = 0; i < p.ncontainers; i++) {
		check_str(p.containers[i].name, K8S_NAME_MAX);
		check_str(p.containers[i].id, K8S_ID_MAX);
		check_str(k8sobj__bare_id(p.containers[i].id), K8S_ID_MAX);
		check_kvs(p.containers[i].env, p.containers[i].nenv, K8S_MAX_ENV, K8S_VALUE_MAX);
	}
	k8sobj__pod_free(&p);
}

static void service(struct json_object *o)
{
	struct k8s_service s;
	char err[256] = "";

	if (k8sobj__service(o, &s, err, sizeof(err))) {
		if (!err[0] || s.name || s.selector)
			abort();
		return;
	}
	check_str(s.name, K8S_NAME_MAX);
	check_str(s.ns, K8S_NAME_MAX);
	check_kvs(s.selector, s.nselector, K8S_MAX_SELECTOR, K8S_VALUE_MAX);
	(void)k8sobj__selects(&s, s.selector, s.nselector);
	k8sobj__service_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], rv[K8S_ID_MAX + 1], cont[1024], kind[64], name[K8S_NAME_MAX + 1];
	struct json_object *o, *items, *obj;
	enum k8s_event_type type;
	char *buf;
	int code;

	if (!size)
		return 0;
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	if (data[0] % 6 == 5) {
		char text[8192];
		struct k8s_cgroup_id ids[2];
		size_t n = size - 1 < sizeof(text) - 1 ? size - 1 : sizeof(text) - 1;
		int k;

		memcpy(text, buf, n);
		text[n] = 0;
		k = k8sobj__cgroup_ids(text, ids, 2);
		if (k < 0 || k > 2)
			abort();
		for (int i = 0; i < k; i++)
			if (!ids[i].id[0] || !ids[i].pod[0] ||
			    strlen(ids[i].id) >= sizeof(ids[i].id) ||
			    strlen(ids[i].pod) > K8S_POD_UID_MAX ||
			    (i && !strcmp(ids[0].id, ids[i].id) && !strcmp(ids[0].pod, ids[i].pod)))
				abort();
		free(buf);
		return 0;
	}
	o = k8sobj__parse(buf, size - 1, NULL, err, sizeof(err));
	free(buf);
	if (!o)
		return 0;
	switch (data[0] % 6) {
	case 0:
		if (!k8sobj__event(o, &type, &obj, rv, sizeof(rv), &code, err, sizeof(err))) {
			if (strlen(rv) > K8S_ID_MAX)
				abort();
			if (type != K8S_ERROR && type != K8S_BOOKMARK) {
				pod(obj);
				service(obj);
			}
		}
		break;
	case 1:
		if (!k8sobj__list(o, &items, rv, sizeof(rv), cont, sizeof(cont), err,
				  sizeof(err))) {
			size_t n = items ? json_object_array_length(items) : 0;

			if (!rv[0])
				abort();
			for (size_t i = 0; i < n && i < 16; i++)
				pod(json_object_array_get_idx(items, i));
		}
		break;
	case 2:
		pod(o);
		break;
	case 3:
		service(o);
		break;
	case 4:
		if (!k8sobj__controller(o, kind, sizeof(kind), name, sizeof(name), err,
					sizeof(err)) &&
		    (strlen(kind) >= sizeof(kind) || !kind[0] != !name[0]))
			abort();
		break;
	}
	json_object_put(o);
	return 0;
}
