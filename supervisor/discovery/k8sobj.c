// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/discovery/k8sobj.h"

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* json-c 0.16, measured on x86-64 with glibc's malloc: an object 792 bytes (a hash table of
 * 16 entries), an array 152, a scalar 72-104, a member's key 130, a string its bytes and 88;
 * the tokener keeps a copy of the string it reads. Each rounded up. */
#define COST_OBJECT 800
#define COST_ARRAY 160
#define COST_VALUE 112 /* a value after '[', ',' (in an array) or ':', or the document */
#define COST_KEY 160

size_t k8sobj__parse_cost(const char *text, size_t len)
{
	uint64_t in_object = 0; /* bit d: the container at depth d is an object */
	size_t cost = COST_VALUE;
	int depth = 0, in_string = 0;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (in_string) {
			cost += 2;
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
			continue;
		}
		switch (c) {
		case '"':
			in_string = 1;
			cost += 2;
			break;
		case '{':
		case '[':
			/* Deeper than the tokener goes is refused by it: counted as the deepest. */
			if (depth < 64) {
				in_object = c == '{' ? in_object | (1ull << depth)
						     : in_object & ~(1ull << depth);
				depth++;
			}
			cost += c == '{' ? COST_OBJECT : COST_ARRAY + COST_VALUE;
			break;
		case '}':
		case ']':
			if (depth)
				depth--;
			break;
		case ':':
			cost += COST_KEY + COST_VALUE;
			break;
		case ',':
			if (!depth || !(in_object & (1ull << (depth - 1))))
				cost += COST_VALUE;
			break;
		default:
			break;
		}
	}
	return cost;
}

struct json_object *k8sobj__parse(const char *text, size_t len, int *ret_big, char *err,
				  size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error je;
	size_t cost;

	if (ret_big)
		*ret_big = 0;
	cost = k8sobj__parse_cost(text, len);
	if (cost > K8S_MAX_PARSE) {
		if (ret_big)
			*ret_big = 1;
		fail(err, errlen, 0,
		     "a document of %zu bytes would take about %zu MiB to parse, over the %u MiB "
		     "bound",
		     len, cost >> 20, K8S_MAX_PARSE >> 20);
		return NULL;
	}
	tok = json_tokener_new_ex(K8S_DEPTH_MAX);
	if (!tok) {
		fail(err, errlen, 0, "out of memory");
		return NULL;
	}
	if (len > (size_t)INT32_MAX) {
		json_tokener_free(tok);
		fail(err, errlen, 0, "document too large");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	je = json_tokener_get_error(tok);
	if (!o && je == json_tokener_continue) {
		fail(err, errlen, 0, "document cut short");
	} else if (!o || je != json_tokener_success) {
		fail(err, errlen, 0, "bad JSON: %s", json_tokener_error_desc(je));
		json_object_put(o);
		o = NULL;
	} else if (json_tokener_get_parse_end(tok) < len) {
		/* Only white space may follow the document (a watch line's newline). */
		for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
			if (!strchr(" \t\r\n", text[i])) {
				fail(err, errlen, 0, "bytes after the document");
				json_object_put(o);
				o = NULL;
				break;
			}
		}
	}
	json_tokener_free(tok);
	return o;
}

/* Member key of o, or NULL when absent or null. -EINVAL when o is not an object. */
static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

/* A string member into a fresh copy: "" when absent. 0 or -errno. */
static int str_member(struct json_object *o, const char *key, size_t max, char **ret,
		      const char *path, char *err, size_t errlen)
{
	struct json_object *v = member(o, key);
	const char *s = "";
	size_t n = 0;

	if (v) {
		if (!json_object_is_type(v, json_type_string))
			return fail(err, errlen, -EINVAL, "%s.%s: not a string", path, key);
		s = json_object_get_string(v);
		n = (size_t)json_object_get_string_len(v);
		if (n > max)
			return fail(err, errlen, -E2BIG, "%s.%s: longer than %zu bytes", path, key,
				    max);
		if (memchr(s, 0, n))
			return fail(err, errlen, -EINVAL, "%s.%s: holds a NUL byte", path, key);
	}
	*ret = strndup(s, n);
	return *ret ? 0 : fail(err, errlen, -ENOMEM, "out of memory");
}

static struct json_object *obj_member(struct json_object *o, const char *key, int *bad)
{
	struct json_object *v = member(o, key);

	if (v && !json_object_is_type(v, json_type_object)) {
		*bad = 1;
		return NULL;
	}
	return v;
}

static struct json_object *arr_member(struct json_object *o, const char *key, int *bad)
{
	struct json_object *v = member(o, key);

	if (v && !json_object_is_type(v, json_type_array)) {
		*bad = 1;
		return NULL;
	}
	return v;
}

static void kv_free(struct k8s_kv *kv, int n)
{
	for (int i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

/* A map of strings (labels, a selector) into kv pairs. */
static int string_map(struct json_object *m, int max, struct k8s_kv **ret, int *ret_n,
		      const char *path, char *err, size_t errlen)
{
	struct k8s_kv *kv;
	int n = 0, total;

	*ret = NULL;
	*ret_n = 0;
	if (!m)
		return 0;
	if (!json_object_is_type(m, json_type_object))
		return fail(err, errlen, -EINVAL, "%s: not an object", path);
	total = json_object_object_length(m);
	if (total > max)
		return fail(err, errlen, -E2BIG, "%s: more than %d entries", path, max);
	if (!total)
		return 0;
	kv = calloc((size_t)total, sizeof(*kv));
	if (!kv)
		return fail(err, errlen, -ENOMEM, "out of memory");
	json_object_object_foreach(m, key, val) {
		size_t kl = strlen(key);

		if (!json_object_is_type(val, json_type_string)) {
			kv_free(kv, n);
			return fail(err, errlen, -EINVAL, "%s.%s: not a string", path, key);
		}
		if (kl > K8S_NAME_MAX || json_object_get_string_len(val) > K8S_VALUE_MAX ||
		    memchr(json_object_get_string(val), 0,
			   (size_t)json_object_get_string_len(val))) {
			kv_free(kv, n);
			return fail(err, errlen, -E2BIG, "%s: an entry too long or with a NUL byte",
				    path);
		}
		kv[n].key = strdup(key);
		kv[n].value = strdup(json_object_get_string(val));
		n++;
		if (!kv[n - 1].key || !kv[n - 1].value) {
			kv_free(kv, n);
			return fail(err, errlen, -ENOMEM, "out of memory");
		}
	}
	*ret = kv;
	*ret_n = n;
	return 0;
}

static int owner_refs(struct json_object *meta, struct k8s_kv **ret, int *ret_n, char *err,
		      size_t errlen)
{
	int bad = 0, n = 0, total;
	struct json_object *refs = arr_member(meta, "ownerReferences", &bad);
	struct k8s_kv *kv;
	int rc;

	*ret = NULL;
	*ret_n = 0;
	if (bad)
		return fail(err, errlen, -EINVAL, "metadata.ownerReferences: not a list");
	if (!refs)
		return 0;
	total = (int)json_object_array_length(refs);
	if (total > K8S_MAX_OWNER_REFS)
		return fail(err, errlen, -E2BIG, "metadata.ownerReferences: more than %d",
			    K8S_MAX_OWNER_REFS);
	if (!total)
		return 0;
	kv = calloc((size_t)total, sizeof(*kv));
	if (!kv)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (int i = 0; i < total; i++) {
		struct json_object *r = json_object_array_get_idx(refs, (size_t)i);
		struct json_object *ctl = member(r, "controller");

		if (!r || !json_object_is_type(r, json_type_object) ||
		    (ctl && !json_object_is_type(ctl, json_type_boolean))) {
			kv_free(kv, n);
			return fail(err, errlen, -EINVAL, "metadata.ownerReferences[%d]: bad shape",
				    i);
		}
		/* Upstream skips a reference only when it says controller: false. */
		if (ctl && !json_object_get_boolean(ctl))
			continue;
		/* Kinds are CamelCase type names: 63 bytes is far above any. */
		rc = str_member(r, "kind", 63, &kv[n].key, "metadata.ownerReferences", err, errlen);
		if (!rc)
			rc = str_member(r, "name", K8S_NAME_MAX, &kv[n].value,
					"metadata.ownerReferences", err, errlen);
		n++;
		if (!rc && (!kv[n - 1].key[0] || !kv[n - 1].value[0]))
			rc = fail(err, errlen, -EINVAL,
				  "metadata.ownerReferences[%d]: no kind or name", i);
		if (rc) {
			kv_free(kv, n);
			return rc;
		}
	}
	*ret = kv;
	*ret_n = n;
	return 0;
}

static int env_list(struct json_object *c, struct k8s_container *ret, const char *path, char *err,
		    size_t errlen)
{
	int bad = 0, total, n = 0, rc;
	struct json_object *env = arr_member(c, "env", &bad);

	if (bad)
		return fail(err, errlen, -EINVAL, "%s.env: not a list", path);
	if (!env)
		return 0;
	total = (int)json_object_array_length(env);
	if (total > K8S_MAX_ENV)
		return fail(err, errlen, -E2BIG, "%s.env: more than %d entries", path, K8S_MAX_ENV);
	if (!total)
		return 0;
	ret->env = calloc((size_t)total, sizeof(*ret->env));
	if (!ret->env)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (int i = 0; i < total; i++) {
		struct json_object *e = json_object_array_get_idx(env, (size_t)i);
		struct json_object *v;

		if (!e || !json_object_is_type(e, json_type_object))
			return fail(err, errlen, -EINVAL, "%s.env[%d]: not an object", path, i);
		v = member(e, "value");
		if (!v)
			continue; /* valueFrom, or empty: not a literal */
		if (!json_object_is_type(v, json_type_string))
			return fail(err, errlen, -EINVAL, "%s.env[%d].value: not a string", path,
				    i);
		if (json_object_get_string_len(v) > K8S_VALUE_MAX ||
		    memchr(json_object_get_string(v), 0, (size_t)json_object_get_string_len(v)))
			continue; /* left out, not cut (k8sobj.h) */
		rc = str_member(e, "name", K8S_NAME_MAX, &ret->env[n].key, path, err, errlen);
		if (!rc)
			rc = str_member(e, "value", K8S_VALUE_MAX, &ret->env[n].value, path, err,
					errlen);
		ret->nenv = ++n;
		if (rc)
			return rc;
	}
	return 0;
}

void k8sobj__pod_free(struct k8s_pod *p)
{
	if (!p)
		return;
	free(p->uid);
	free(p->name);
	free(p->ns);
	free(p->node);
	free(p->ip);
	free(p->host_ip);
	free(p->rv);
	free(p->mirror_uid);
	kv_free(p->labels, p->nlabels);
	for (int i = 0; i < p->ncontainers; i++) {
		free(p->containers[i].name);
		free(p->containers[i].id);
		kv_free(p->containers[i].env, p->containers[i].nenv);
	}
	free(p->containers);
	kv_free(p->owners, p->nowners);
	memset(p, 0, sizeof(*p));
}

static int containers(struct json_object *spec, struct json_object *status, struct k8s_pod *p,
		      char *err, size_t errlen)
{
	int bad = 0, total, ns = 0, rc;
	struct json_object *cs = arr_member(spec, "containers", &bad);
	struct json_object *st = arr_member(status, "containerStatuses", &bad);

	if (bad)
		return fail(err, errlen, -EINVAL,
			    "spec.containers or status.containerStatuses: "
			    "not a list");
	if (!cs)
		return 0;
	total = (int)json_object_array_length(cs);
	if (st)
		ns = (int)json_object_array_length(st);
	if (total > K8S_MAX_CONTAINERS || ns > K8S_MAX_CONTAINERS)
		return fail(err, errlen, -E2BIG, "more than %d containers", K8S_MAX_CONTAINERS);
	if (!total)
		return 0;
	p->containers = calloc((size_t)total, sizeof(*p->containers));
	if (!p->containers)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (int i = 0; i < total; i++) {
		struct json_object *c = json_object_array_get_idx(cs, (size_t)i);
		struct k8s_container *k = &p->containers[i];
		char path[48];

		snprintf(path, sizeof(path), "spec.containers[%d]", i);
		p->ncontainers = i + 1;
		if (!c || !json_object_is_type(c, json_type_object))
			return fail(err, errlen, -EINVAL, "%s: not an object", path);
		rc = str_member(c, "name", K8S_NAME_MAX, &k->name, path, err, errlen);
		if (rc)
			return rc;
		rc = env_list(c, k, path, err, errlen);
		if (rc)
			return rc;
		/* Its status, joined by name (init and ephemeral containers are not listed). */
		for (int j = 0; j < ns && !k->id; j++) {
			struct json_object *s = json_object_array_get_idx(st, (size_t)j);
			struct json_object *nm = member(s, "name");

			if (!s || !json_object_is_type(s, json_type_object) ||
			    (nm && !json_object_is_type(nm, json_type_string)))
				return fail(err, errlen, -EINVAL,
					    "status.containerStatuses[%d]: bad shape", j);
			if (!nm || strcmp(json_object_get_string(nm), k->name))
				continue;
			rc = str_member(s, "containerID", K8S_ID_MAX, &k->id,
					"status.containerStatuses", err, errlen);
			if (rc)
				return rc;
		}
		if (!k->id && !(k->id = strdup("")))
			return fail(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

int k8sobj__pod(struct json_object *o, struct k8s_pod *ret, char *err, size_t errlen)
{
	int bad = 0, rc;
	struct json_object *meta, *spec, *status;
	struct k8s_pod p = { 0 };

	memset(ret, 0, sizeof(*ret));
	if (!o || !json_object_is_type(o, json_type_object))
		return fail(err, errlen, -EINVAL, "pod: not an object");
	meta = obj_member(o, "metadata", &bad);
	spec = obj_member(o, "spec", &bad);
	status = obj_member(o, "status", &bad);
	if (bad || !meta)
		return fail(err, errlen, -EINVAL, "pod: metadata, spec or status of a wrong type");
	rc = str_member(meta, "uid", K8S_ID_MAX, &p.uid, "metadata", err, errlen);
	if (!rc)
		rc = str_member(meta, "name", K8S_NAME_MAX, &p.name, "metadata", err, errlen);
	if (!rc)
		rc = str_member(meta, "namespace", K8S_NAME_MAX, &p.ns, "metadata", err, errlen);
	if (!rc)
		rc = str_member(meta, "resourceVersion", K8S_ID_MAX, &p.rv, "metadata", err,
				errlen);
	if (!rc)
		rc = str_member(spec, "nodeName", K8S_NAME_MAX, &p.node, "spec", err, errlen);
	if (!rc)
		rc = str_member(status, "podIP", K8S_ID_MAX, &p.ip, "status", err, errlen);
	if (!rc)
		rc = str_member(status, "hostIP", K8S_ID_MAX, &p.host_ip, "status", err, errlen);
	if (!rc)
		rc = string_map(member(meta, "labels"), K8S_MAX_LABELS, &p.labels, &p.nlabels,
				"metadata.labels", err, errlen);
	if (!rc) {
		/* Only this annotation is read (others, last-applied-configuration included, may
		 * be anything): the rest of the object is not looked at. */
		struct json_object *ann = obj_member(meta, "annotations", &bad);

		rc = bad ? fail(err, errlen, -EINVAL, "metadata.annotations: not an object")
			 : str_member(ann, "kubernetes.io/config.mirror", K8S_POD_UID_MAX,
				      &p.mirror_uid, "metadata.annotations", err, errlen);
	}
	if (!rc)
		rc = owner_refs(meta, &p.owners, &p.nowners, err, errlen);
	if (!rc)
		rc = containers(spec, status, &p, err, errlen);
	if (!rc && (!p.uid[0] || !p.name[0] || !p.ns[0]))
		rc = fail(err, errlen, -EINVAL, "pod: no uid, name or namespace");
	if (rc) {
		k8sobj__pod_free(&p);
		return rc;
	}
	*ret = p;
	return 0;
}

void k8sobj__service_free(struct k8s_service *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->ns);
	free(s->rv);
	kv_free(s->selector, s->nselector);
	memset(s, 0, sizeof(*s));
}

int k8sobj__service(struct json_object *o, struct k8s_service *ret, char *err, size_t errlen)
{
	int bad = 0, rc;
	struct json_object *meta, *spec;
	struct k8s_service s = { 0 };

	memset(ret, 0, sizeof(*ret));
	if (!o || !json_object_is_type(o, json_type_object))
		return fail(err, errlen, -EINVAL, "service: not an object");
	meta = obj_member(o, "metadata", &bad);
	spec = obj_member(o, "spec", &bad);
	if (bad || !meta)
		return fail(err, errlen, -EINVAL, "service: metadata or spec of a wrong type");
	rc = str_member(meta, "name", K8S_NAME_MAX, &s.name, "metadata", err, errlen);
	if (!rc)
		rc = str_member(meta, "namespace", K8S_NAME_MAX, &s.ns, "metadata", err, errlen);
	if (!rc)
		rc = str_member(meta, "resourceVersion", K8S_ID_MAX, &s.rv, "metadata", err,
				errlen);
	if (!rc)
		rc = string_map(member(spec, "selector"), K8S_MAX_SELECTOR, &s.selector,
				&s.nselector, "spec.selector", err, errlen);
	if (!rc && (!s.name[0] || !s.ns[0]))
		rc = fail(err, errlen, -EINVAL, "service: no name or namespace");
	if (rc) {
		k8sobj__service_free(&s);
		return rc;
	}
	*ret = s;
	return 0;
}

int k8sobj__controller(struct json_object *o, char *kind, size_t kindlen, char *name,
		       size_t namelen, char *err, size_t errlen)
{
	int bad = 0, n = 0, rc;
	struct json_object *meta = obj_member(o, "metadata", &bad);
	struct k8s_kv *refs = NULL;

	kind[0] = name[0] = 0;
	if (!o || !json_object_is_type(o, json_type_object) || bad || !meta)
		return fail(err, errlen, -EINVAL, "owner: no metadata object");
	rc = owner_refs(meta, &refs, &n, err, errlen);
	if (rc)
		return rc;
	if (n) {
		snprintf(kind, kindlen, "%s", refs[0].key);
		snprintf(name, namelen, "%s", refs[0].value);
	}
	kv_free(refs, n);
	return 0;
}

static int copy_id(struct json_object *o, const char *key, char *buf, size_t len, const char *path,
		   char *err, size_t errlen)
{
	char *s = NULL;
	int rc = str_member(o, key, len - 1 < K8S_ID_MAX ? len - 1 : K8S_ID_MAX, &s, path, err,
			    errlen);

	if (rc)
		return rc;
	snprintf(buf, len, "%s", s);
	free(s);
	return 0;
}

int k8sobj__list(struct json_object *o, struct json_object **ret_items, char *rv, size_t rvlen,
		 char *cont, size_t contlen, char *err, size_t errlen)
{
	int bad = 0, rc;
	struct json_object *meta = obj_member(o, "metadata", &bad);
	struct json_object *items = arr_member(o, "items", &bad);

	if (!o || !json_object_is_type(o, json_type_object) || bad || !meta)
		return fail(err, errlen, -EINVAL, "list: metadata or items of a wrong type");
	rc = copy_id(meta, "resourceVersion", rv, rvlen, "list.metadata", err, errlen);
	if (!rc)
		rc = copy_id(meta, "continue", cont, contlen, "list.metadata", err, errlen);
	if (rc)
		return rc;
	if (!rv[0])
		return fail(err, errlen, -EINVAL, "list: no resourceVersion");
	*ret_items = items; /* NULL: an empty list (the server leaves "items" out then) */
	return 0;
}

int k8sobj__event(struct json_object *o, enum k8s_event_type *ret_type,
		  struct json_object **ret_obj, char *rv, size_t rvlen, int *ret_code, char *err,
		  size_t errlen)
{
	static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	struct json_object *type = member(o, "type"), *obj = member(o, "object");
	int bad = 0;

	*ret_code = 0;
	rv[0] = 0;
	if (!o || !json_object_is_type(o, json_type_object) || !type ||
	    !json_object_is_type(type, json_type_string) || !obj ||
	    !json_object_is_type(obj, json_type_object))
		return fail(err, errlen, -EINVAL, "watch event: no type or object");
	for (int i = 0; i < 5; i++) {
		if (strcmp(json_object_get_string(type), names[i]))
			continue;
		*ret_type = (enum k8s_event_type)i;
		*ret_obj = obj;
		if (i == K8S_ERROR) {
			struct json_object *code = member(obj, "code");

			if (code && json_object_is_type(code, json_type_int))
				*ret_code = json_object_get_int(code);
			return 0;
		}
		{
			struct json_object *meta = obj_member(obj, "metadata", &bad);

			if (bad || !meta)
				return fail(err, errlen, -EINVAL,
					    "watch event: object without "
					    "metadata");
			return copy_id(meta, "resourceVersion", rv, rvlen, "object.metadata", err,
				       errlen);
		}
	}
	return fail(err, errlen, -EINVAL, "watch event: unknown type");
}

const char *k8sobj__bare_id(const char *container_id)
{
	const char *p = strstr(container_id, "://");

	return p ? p + 3 : container_id;
}

int k8sobj__selects(const struct k8s_service *s, const struct k8s_kv *labels, int nlabels)
{
	if (!s->nselector)
		return 0;
	for (int i = 0; i < s->nselector; i++) {
		int ok = 0;

		for (int j = 0; j < nlabels && !ok; j++)
			ok = !strcmp(labels[j].key, s->selector[i].key) &&
			     !strcmp(labels[j].value, s->selector[i].value);
		if (!ok)
			return 0;
	}
	return 1;
}

/* ---- cgroups ---- */

/* A container id: ids are 64 hex digits; short names are kubelet's own. */
static int id_ok(const char *s, size_t n)
{
	if (n < 12 || n >= sizeof(((struct k8s_cgroup_id *)0)->id))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* A pod uid as a cgroup names it (a UUID, or a static pod's hash): into ret with '-'. */
static int uid_take(const char *s, size_t n, char ret[K8S_POD_UID_MAX + 1])
{
	if (!n || n > K8S_POD_UID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return 0;
		ret[i] = s[i] == '_' ? '-' : s[i];
	}
	ret[n] = 0;
	return 1;
}

static int seg_is(const char *seg, size_t n, const char *name)
{
	return strlen(name) == n && !memcmp(seg, name, n);
}

static int has_prefix(const char *seg, size_t n, const char *pre)
{
	size_t pl = strlen(pre);

	return n >= pl && !memcmp(seg, pre, pl);
}

/* The next segment of a path at *p: its start and length; 0 when there is none. */
static int next_seg(const char **p, const char **ret_seg, size_t *ret_n)
{
	const char *s = *p, *e;

	if (*s != '/' || !s[1] || s[1] == '/')
		return 0;
	s++;
	e = strchr(s, '/');
	*ret_seg = s;
	*ret_n = e ? (size_t)(e - s) : strlen(s);
	*p = s + *ret_n;
	return 1;
}

/* systemd: <pre>pod<uid>.slice, the uid into ret. */
static int pod_slice(const char *seg, size_t n, const char *pre, char ret[K8S_POD_UID_MAX + 1])
{
	size_t pl = strlen(pre);

	return has_prefix(seg, n, pre) && n > pl + 3 + 6 && !memcmp(seg + pl, "pod", 3) &&
	       !memcmp(seg + n - 6, ".slice", 6) && uid_take(seg + pl + 3, n - pl - 3 - 6, ret);
}

/* The container's segment: its id into ret. */
static int container_seg(const char *seg, size_t n, int systemd, char ret[80])
{
	static const char *const rt[] = { "cri-containerd-", "crio-", "docker-" };
	int hit = 0;

	if (systemd) {
		if (n < 6 || memcmp(seg + n - 6, ".scope", 6))
			return 0;
		n -= 6;
		for (int i = 0; i < 3 && !hit; i++) {
			if (!has_prefix(seg, n, rt[i]))
				continue;
			seg += strlen(rt[i]);
			n -= strlen(rt[i]);
			hit = 1;
		}
		if (!hit)
			return 0;
	} else if (has_prefix(seg, n, "crio-")) {
		/* cgroupfs: containerd and docker name it by the id alone, CRI-O crio-<id> */
		seg += 5;
		n -= 5;
	}
	/* crio-conmon-<id>, CRI-O's monitor, is no container's: not an id */
	if (!id_ok(seg, n))
		return 0;
	memcpy(ret, seg, n);
	ret[n] = 0;
	return 1;
}

/*
 * One path from its first segment: kubelet's root (kubepods), a QoS class, a pod, then the
 * container. Rooted, it must start at kubepods; relative to a namespace, at any level above
 * the container. Each level may only follow the one above it, and under the systemd driver a
 * slice's name must extend its parent's (systemd places a slice so). 1 with ret filled, or 0.
 */
static int kubelet_path(const char *p, int rooted, struct k8s_cgroup_id *ret)
{
	static const char *const qos[] = { "burstable", "besteffort" };
	const char *seg;
	size_t n;
	int level = 0;	  /* 0: none read, 1: kubepods, 2: a QoS class, 3: the pod */
	int systemd = -1; /* the driver, once a segment has told */
	int q = -1;	  /* the QoS class read */

	while (next_seg(&p, &seg, &n)) {
		char name[64];

		if (level == 0 && seg_is(seg, n, "kubepods.slice")) {
			systemd = 1;
			level = 1;
			continue;
		}
		if (level == 0 && seg_is(seg, n, "kubepods")) {
			systemd = 0;
			level = 1;
			continue;
		}
		if (rooted && level == 0)
			return 0;
		if (level <= 1) {
			for (int i = 0; i < 2; i++) {
				snprintf(name, sizeof(name), "kubepods-%s.slice", qos[i]);
				if (systemd != 0 && seg_is(seg, n, name)) {
					systemd = 1;
					q = i;
				} else if (systemd != 1 && seg_is(seg, n, qos[i])) {
					systemd = 0;
					q = i;
				}
			}
			if (q >= 0) {
				level = 2;
				continue;
			}
		}
		if (level <= 2) {
			int hit = 0;

			if (systemd != 0) {
				/* After a QoS class, its pods; after kubepods.slice, the guaranteed
				 * ones; first, any. */
				for (int i = 0; i < 2 && !hit; i++) {
					snprintf(name, sizeof(name), "kubepods-%s-", qos[i]);
					hit = (level == 0 || (level == 2 && q == i)) &&
					      pod_slice(seg, n, name, ret->pod);
				}
				if (!hit && level <= 1)
					hit = pod_slice(seg, n, "kubepods-", ret->pod);
				if (hit)
					systemd = 1;
			}
			if (!hit && systemd != 1 && has_prefix(seg, n, "pod") &&
			    uid_take(seg + 3, n - 3, ret->pod)) {
				systemd = 0;
				hit = 1;
			}
			if (!hit)
				return 0;
			level = 3;
			continue;
		}
		/* The container, right below its pod; what lies under it is the same one's. */
		return container_seg(seg, n, systemd, ret->id);
	}
	return 0;
}

int k8sobj__cgroup_ids(const char *text, struct k8s_cgroup_id *ids, int max)
{
	int n = 0;

	for (const char *line = text; line && *line && n < max;) {
		const char *end = strchr(line, '\n'), *path;
		size_t len = end ? (size_t)(end - line) : strlen(line);
		struct k8s_cgroup_id c;
		char buf[4096];
		int rooted = 1, dup = 0;

		if (len >= sizeof(buf))
			goto next;
		memcpy(buf, line, len);
		buf[len] = 0;
		/* hierarchy-id:controllers:path */
		path = strchr(buf, ':');
		path = path ? strchr(path + 1, ':') : NULL;
		if (!path)
			goto next;
		path++;
		/* Under a cgroup namespace, a cgroup outside it reads as the way up from the
		 * namespace's root to the common ancestor, then down (kernfs_path_from_node). */
		while (!strncmp(path, "/..", 3) && (path[3] == '/' || !path[3])) {
			path += 3;
			rooted = 0;
		}
		if (strstr(path, "/../") ||
		    (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")))
			goto next;
		memset(&c, 0, sizeof(c));
		if (!kubelet_path(path, rooted, &c))
			goto next;
		for (int i = 0; i < n && !dup; i++)
			dup = !strcmp(ids[i].id, c.id) && !strcmp(ids[i].pod, c.pod);
		if (!dup)
			ids[n++] = c;
next:
		line = end ? end + 1 : NULL;
	}
	return n;
}

int k8sobj__pod_is(const struct k8s_pod *p, const char *cgroup_pod_uid)
{
	/* kubelet writes '-' as '_' in systemd slice names; ids were read back with '-'. */
	const char *const mine[] = { p->uid, p->mirror_uid };

	for (int i = 0; i < 2; i++) {
		const char *u = mine[i];
		size_t k = 0;

		if (!u || !u[0])
			continue;
		while (u[k] && cgroup_pod_uid[k] &&
		       (u[k] == cgroup_pod_uid[k] || (u[k] == '_' && cgroup_pod_uid[k] == '-')))
			k++;
		if (!u[k] && !cgroup_pod_uid[k])
			return 1;
	}
	return 0;
}
