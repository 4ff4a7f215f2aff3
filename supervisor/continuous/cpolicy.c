// SPDX-License-Identifier: Apache-2.0
/*
 * Continuous profiling policies from the OAP (supervisor/continuous/cpolicy.h): ServiceWithPolicyJSON as
 * Gson writes ContinuousProfilingPolicy (reference continuous-and-kubernetes.md A2). Gson
 * leaves out what is null, so a JSON null is taken as absent. Every problem skips the smallest
 * thing it spoils: an item, a target, or for a bad ServiceName or UUID the service.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json_object.h>
#include <json-c/json_tokener.h>
#include <json-c/linkhash.h>

#include "common/msg.h"
#include "supervisor/continuous/cpolicy.h"

/* [ { "Profiling": { target: { monitor: { "URIList": [ is 6 deep; room for fields to come. */
#define POLICY_JSON_DEPTH 16
/* Java's Integer.parseInt, which the OAP checks thresholds with, takes at most 11 characters. */
#define THRESHOLD_LEN 32
#define REASON_LEN 512
#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const monitor_names[CMON_MAX] = {
	[CMON_PROCESS_CPU] = "PROCESS_CPU",
	[CMON_PROCESS_THREAD_COUNT] = "PROCESS_THREAD_COUNT",
	[CMON_SYSTEM_LOAD] = "SYSTEM_LOAD",
	[CMON_HTTP_ERROR_RATE] = "HTTP_ERROR_RATE",
	[CMON_HTTP_AVG_RESPONSE_TIME] = "HTTP_AVG_RESPONSE_TIME",
};

static const char *const monitor_meters[CMON_MAX] = {
	[CMON_PROCESS_CPU] = "process_cpu",
	[CMON_PROCESS_THREAD_COUNT] = "process_thread_count",
	[CMON_SYSTEM_LOAD] = "system_load",
	[CMON_HTTP_ERROR_RATE] = "http_error_rate",
	[CMON_HTTP_AVG_RESPONSE_TIME] = "http_avg_response_time",
};

static const struct {
	const char *name;
	uint32_t type;
} targets[] = {
	{ "ON_CPU", TASK_ON_CPU },
	{ "OFF_CPU", TASK_OFF_CPU },
	{ "NETWORK", TASK_NETWORK },
};

const char *cmonitor__name(uint32_t monitor)
{
	return monitor < CMON_MAX ? monitor_names[monitor] : NULL;
}

const char *cmonitor__meter(uint32_t monitor)
{
	return monitor < CMON_MAX ? monitor_meters[monitor] : NULL;
}

struct parse {
	void (*warn)(void *ctx, const char *reason);
	void *ctx;
	size_t nwarns;
};

/* One skip, one reason; past CPOLICY_MAX_WARNS they are only counted (see cpolicy__parse). */
__attribute__((format(printf, 2, 3))) static void skip(struct parse *p, const char *fmt, ...)
{
	char reason[REASON_LEN];
	va_list ap;

	if (p->nwarns++ >= CPOLICY_MAX_WARNS || !p->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	p->warn(p->ctx, reason);
}

/* Untrusted text in a reason: at most 64 bytes, control bytes as '?'. */
static const char *shown(const char *v, char buf[68])
{
	size_t i = 0;

	for (; v[i] && i < 64; i++)
		buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	if (v[i]) {
		memcpy(buf + 64, "...", 3);
		i = 67;
	}
	buf[i] = '\0';
	return buf;
}

/* A member, NULL when absent or null. */
static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/*
 * A string that fits in size bytes with its NUL: 0 with *ret; -EINVAL not a string, -E2BIG too
 * long, -EILSEQ a NUL inside (\u0000: it would cut the string short).
 */
static int get_string(struct json_object *v, size_t size, const char **ret)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (len >= size)
		return -E2BIG;
	if (strlen(s) != len)
		return -EILSEQ;
	*ret = s;
	return 0;
}

static const char *string_problem(int r)
{
	return r == -EINVAL ? "is not a string" : r == -E2BIG ? "is too long" : "holds a NUL";
}

/*
 * Threshold: a decimal number, integer or not, finite and above 0. Upstream takes only
 * integers for PROCESS_CPU and PROCESS_THREAD_COUNT (ParseInt: "10.5" drops the item) and
 * floats for the others; the OAP saves integers only. Decimals are taken for every monitor
 * here: "10.5" means what it says. The grammar is checked first, since strtod would also take
 * hex, "inf", "nan" and leading space; the supervisor never calls setlocale, so strtod's
 * decimal point is '.'.
 */
static const char *parse_threshold(const char *s, double *ret)
{
	const char *p = s;
	char *end;
	size_t digits = 0;
	double x;

	if (!*s)
		return "is empty";
	if (*p == '+' || *p == '-')
		p++;
	for (; *p >= '0' && *p <= '9'; p++)
		digits++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			digits++;
	if (digits && (*p == 'e' || *p == 'E')) {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return "is not a number";
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (!digits || *p)
		return "is not a number";
	errno = 0;
	x = strtod(s, &end);
	if (*end)
		return "is not a number";
	if (errno == ERANGE || !isfinite(x))
		return "is out of range";
	if (!(x > 0))
		return "is not above 0";
	*ret = x;
	return NULL;
}

static const char out_of_range[] = "is out of range";

/* Period or Count: an integer from 1 to max. NULL, or what is wrong (out_of_range: *raw). */
static const char *get_int(struct json_object *o, const char *key, int64_t max, uint32_t *ret,
			   int64_t *raw)
{
	struct json_object *v = member(o, key);

	if (!v)
		return "is missing";
	if (!json_object_is_type(v, json_type_int))
		return "is not an integer";
	/* Beyond int64 json-c gives INT64_MAX or INT64_MIN: out of range all the same. */
	*raw = json_object_get_int64(v);
	if (*raw < 1 || *raw > max)
		return out_of_range;
	*ret = (uint32_t)*raw;
	return NULL;
}

/* URIList and URIRegex of an HTTP item. NULL, or what is wrong (what names the field). */
static const char *get_uris(struct json_object *o, struct citem *it, const char **what)
{
	struct json_object *list = member(o, "URIList"), *re = member(o, "URIRegex");
	const char *s;
	int r;

	if (list) {
		size_t n;

		*what = "URIList";
		if (!json_object_is_type(list, json_type_array))
			return "is not a list";
		n = json_object_array_length(list);
		if (n > CPOLICY_MAX_URIS)
			return "has more URIs than fit (" STR(CPOLICY_MAX_URIS) ")";
		for (size_t i = 0; i < n; i++) {
			uint32_t j = 0;

			r = get_string(json_object_array_get_idx(list, i), CPOLICY_URI_LEN, &s);
			if (r)
				return r == -EINVAL  ? "holds something else than a string"
				       : r == -E2BIG ? "holds a URI that is too long"
						     : "holds a URI with a NUL";
			/* A URI given twice is watched once, as upstream's map of URIs does. */
			while (j < it->nuris && strcmp(it->uris[j], s))
				j++;
			if (j == it->nuris)
				memcpy(it->uris[it->nuris++], s, strlen(s) + 1);
		}
	}
	if (re) {
		*what = "URIRegex";
		r = get_string(re, CPOLICY_URI_LEN, &s);
		if (r)
			return string_problem(r);
		memcpy(it->uri_regex, s, strlen(s) + 1);
	}
	return NULL;
}

/* One item: the monitor's object. 0 when taken into *it, or -EINVAL after one skip(). */
static int parse_item(struct parse *p, const char *svc, const char *tname, uint32_t target,
		      uint32_t monitor, struct json_object *o, struct citem *it)
{
	const char *mname = monitor_names[monitor], *what = "Threshold", *bad, *s;
	char value[96] = "", buf[68];
	struct json_object *v;
	int64_t raw;
	int r;

	memset(it, 0, sizeof(*it));
	it->target = target;
	it->monitor = monitor;
	if (!json_object_is_type(o, json_type_object)) {
		skip(p, "service '%s': %s/%s: not an object, ignoring", svc, tname, mname);
		return -EINVAL;
	}
	v = member(o, "Threshold");
	if (!v) {
		bad = "is missing";
	} else if ((r = get_string(v, THRESHOLD_LEN, &s))) {
		bad = string_problem(r);
	} else {
		bad = parse_threshold(s, &it->threshold);
		if (!bad && monitor == CMON_HTTP_ERROR_RATE && it->threshold > 100)
			bad = "is above 100 (%)";
		if (bad)
			snprintf(value, sizeof(value), " '%s'", shown(s, buf));
	}
	if (!bad) {
		what = "Period";
		bad = get_int(o, what, CPOLICY_MAX_PERIOD, &it->period, &raw);
		if (bad == out_of_range)
			snprintf(value, sizeof(value), " %" PRId64 " (1..%d)", raw,
				 CPOLICY_MAX_PERIOD);
	}
	if (!bad) {
		what = "Count";
		bad = get_int(o, what, it->period, &it->count, &raw);
		if (bad == out_of_range)
			snprintf(value, sizeof(value), " %" PRId64 " (1..Period %u)", raw,
				 it->period);
	}
	/* URIs filter HTTP requests only: on the other monitors they mean nothing, as upstream. */
	if (!bad && (monitor == CMON_HTTP_ERROR_RATE || monitor == CMON_HTTP_AVG_RESPONSE_TIME))
		bad = get_uris(o, it, &what);
	if (bad) {
		skip(p, "service '%s': %s/%s: %s%s %s, ignoring", svc, tname, mname, what, value,
		     bad);
		return -EINVAL;
	}
	return 0;
}

/* A target's monitors into pol->items. */
static void parse_target(struct parse *p, struct cpolicy *pol, const char *svc, const char *tname,
			 uint32_t target, struct json_object *o)
{
	char kbuf[68];

	if (!json_object_is_type(o, json_type_object)) {
		skip(p, "service '%s': %s: not an object, ignoring", svc, tname);
		return;
	}
	json_object_object_foreach(o, key, val) {
		uint32_t m = 0, i;

		if (!val)
			continue;
		while (m < CMON_MAX && strcmp(key, monitor_names[m]))
			m++;
		if (m == CMON_MAX) {
			skip(p, "service '%s': %s/%s: unknown monitor, ignoring", svc, tname,
			     shown(key, kbuf));
			continue;
		}
		for (i = 0; i < pol->nitems; i++)
			if (pol->items[i].target == target && pol->items[i].monitor == m)
				break;
		if (i < pol->nitems) {
			skip(p, "service '%s': %s/%s: given twice, ignoring the second", svc, tname,
			     monitor_names[m]);
			continue;
		}
		/* 3 targets x 5 monitors fit: only a change of the header could get here. */
		if (pol->nitems == CPOLICY_MAX_ITEMS) {
			skip(p, "service '%s': %s/%s: more than %d items, ignoring", svc, tname,
			     monitor_names[m], CPOLICY_MAX_ITEMS);
			continue;
		}
		if (!parse_item(p, svc, tname, target, m, val, &pol->items[pol->nitems]))
			pol->nitems++;
	}
}

/* One entry of the array into *pol: 0, or -EINVAL after one skip(). */
static int parse_service(struct parse *p, size_t idx, struct json_object *o,
			 const struct cpolicy *taken, size_t ntaken, struct cpolicy *pol)
{
	struct json_object *v, *prof;
	char buf[68], kbuf[68];
	const char *s;
	int r;

	if (!json_object_is_type(o, json_type_object)) {
		skip(p, "policy %zu: not an object, ignoring", idx);
		return -EINVAL;
	}
	v = member(o, "ServiceName");
	if (!v) {
		skip(p, "policy %zu: no ServiceName, ignoring", idx);
		return -EINVAL;
	}
	r = get_string(v, CPOLICY_NAME_LEN, &s);
	if (r || !*s) {
		skip(p, "policy %zu: ServiceName %s, ignoring", idx,
		     r ? string_problem(r) : "is empty");
		return -EINVAL;
	}
	memset(pol, 0, offsetof(struct cpolicy, items));
	pol->nitems = 0;
	memcpy(pol->service, s, strlen(s) + 1);
	shown(pol->service, buf);
	for (size_t i = 0; i < ntaken; i++)
		if (!strcmp(taken[i].service, pol->service)) {
			skip(p, "service '%s': given twice, ignoring the second", buf);
			return -EINVAL;
		}
	/* No UUID is the empty one: the policy was removed. */
	v = member(o, "UUID");
	if (v) {
		r = get_string(v, CPOLICY_UUID_LEN, &s);
		if (r) {
			skip(p, "service '%s': UUID %s, ignoring", buf, string_problem(r));
			return -EINVAL;
		}
		memcpy(pol->uuid, s, strlen(s) + 1);
	}
	prof = member(o, "Profiling");
	if (!prof)
		return 0;
	if (!json_object_is_type(prof, json_type_object)) {
		/* The service stands, without items: its UUID is what the OAP will compare. */
		skip(p, "service '%s': Profiling is not an object, ignoring its items", buf);
		return 0;
	}
	json_object_object_foreach(prof, key, val) {
		size_t t = 0;

		if (!val)
			continue;
		while (t < sizeof(targets) / sizeof(targets[0]) && strcmp(key, targets[t].name))
			t++;
		if (t == sizeof(targets) / sizeof(targets[0])) {
			skip(p, "service '%s': target '%s' unknown, ignoring", buf,
			     shown(key, kbuf));
			continue;
		}
		parse_target(p, pol, buf, targets[t].name, targets[t].type, val);
	}
	return 0;
}

int cpolicy__parse(const char *json, size_t len, struct cpolicy *ret, size_t max, size_t *ret_n,
		   void (*warn)(void *ctx, const char *reason), void *ctx)
{
	struct parse p = { .warn = warn, .ctx = ctx };
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error jerr;
	size_t n = 0, count;
	int err = 0;

	if (len > CPOLICY_MAX_JSON)
		return -E2BIG;
	tok = json_tokener_new_ex(POLICY_JSON_DEPTH);
	if (!tok)
		return -ENOMEM;
	/* An array ends at its ']': the tokener never needs to read past len. */
	root = json_tokener_parse_ex(tok, json, (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr != json_tokener_success || !json_object_is_type(root, json_type_array)) {
		err = -EINVAL;
		goto cleanup;
	}
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
		if (json[i] != ' ' && json[i] != '\t' && json[i] != '\r' && json[i] != '\n') {
			err = -EINVAL;
			goto cleanup;
		}

	count = json_object_array_length(root);
	for (size_t i = 0; i < count; i++) {
		if (n == max) {
			skip(&p, "more than %zu policies, ignoring the last %zu", max, count - i);
			break;
		}
		if (!parse_service(&p, i, json_object_array_get_idx(root, i), ret, n, &ret[n]))
			n++;
	}
	if (p.nwarns > CPOLICY_MAX_WARNS && warn) {
		char reason[REASON_LEN];

		snprintf(reason, sizeof(reason), "%zu more policy problems not shown, ignoring",
			 p.nwarns - CPOLICY_MAX_WARNS);
		warn(ctx, reason);
	}
	*ret_n = n;
cleanup:
	json_object_put(root);
	json_tokener_free(tok);
	return err;
}
