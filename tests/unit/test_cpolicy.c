// SPDX-License-Identifier: Apache-2.0
/*
 * Continuous profiling policies (supervisor/continuous/cpolicy.h) as the OAP's Gson writes them
 * (reference continuous-and-kubernetes.md A2): every target and monitor, removed policies, and
 * each bad thing skipped alone, with exactly one reason naming it, the rest standing.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msg.h"
#include "supervisor/continuous/cpolicy.h"

#define UUID128                                                            \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct warns {
	int n;
	char r[CPOLICY_MAX_WARNS + 1][512];
};

static void on_warn(void *ctx, const char *reason)
{
	struct warns *w = ctx;

	cr_assert_lt(w->n, CPOLICY_MAX_WARNS + 1, "too many reasons: %s", reason);
	snprintf(w->r[w->n++], sizeof(w->r[0]), "%s", reason);
}

static struct cpolicy *pols(size_t n)
{
	struct cpolicy *p = calloc(n, sizeof(*p));

	cr_assert(p);
	return p;
}

/* Parses json (0 expected) into p (max), *w reset. The count taken. */
static size_t parse(const char *json, struct cpolicy *p, size_t max, struct warns *w)
{
	size_t n = 12345;
	int r;

	memset(w, 0, sizeof(*w));
	r = cpolicy__parse(json, strlen(json), p, max, &n, on_warn, w);
	cr_assert_eq(r, 0, "cpolicy__parse: %d for %s", r, json);
	cr_assert_leq(n, max);
	return n;
}

/* Exactly one reason, holding each of the strings given (NULL ends them). */
static void one_warn(const struct warns *w, const char *json, ...)
{
	va_list ap;
	const char *want;

	cr_assert_eq(w->n, 1, "%d reasons for %s (first: %s)", w->n, json, w->n ? w->r[0] : "-");
	va_start(ap, json);
	while ((want = va_arg(ap, const char *)))
		cr_assert(strstr(w->r[0], want), "'%s' does not say '%s'", w->r[0], want);
	va_end(ap);
}

static const struct citem *find(const struct cpolicy *p, uint32_t target, uint32_t monitor)
{
	for (uint32_t i = 0; i < p->nitems; i++)
		if (p->items[i].target == target && p->items[i].monitor == monitor)
			return &p->items[i];
	return NULL;
}

/* The example of A2, as queryPolicies' ServiceWithPolicyJSON carries it. */
Test(cpolicy, reference_example)
{
	static const char json[] =
		"[{\"ServiceName\":\"test-continuous\",\"UUID\":\"" UUID128 "\",\"Profiling\":"
		"{\"ON_CPU\":{\"PROCESS_CPU\":{\"Threshold\":\"10\",\"Period\":10,\"Count\":3}}}}]";
	struct cpolicy *p = pols(4);
	struct warns w;

	cr_assert_eq(parse(json, p, 4, &w), 1);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	cr_assert_str_eq(p[0].service, "test-continuous");
	cr_assert_str_eq(p[0].uuid, UUID128);
	cr_assert_eq(p[0].nitems, 1);
	cr_assert_eq(p[0].items[0].target, TASK_ON_CPU);
	cr_assert_eq(p[0].items[0].monitor, CMON_PROCESS_CPU);
	cr_assert_float_eq(p[0].items[0].threshold, 10, 0);
	cr_assert_eq(p[0].items[0].period, 10);
	cr_assert_eq(p[0].items[0].count, 3);
	cr_assert_eq(p[0].items[0].nuris, 0);
	cr_assert_str_eq(p[0].items[0].uri_regex, "");
	free(p);
}

Test(cpolicy, names)
{
	static const char *const names[] = { "PROCESS_CPU", "PROCESS_THREAD_COUNT", "SYSTEM_LOAD",
					     "HTTP_ERROR_RATE", "HTTP_AVG_RESPONSE_TIME" };
	static const char *const meters[] = { "process_cpu", "process_thread_count", "system_load",
					      "http_error_rate", "http_avg_response_time" };

	for (uint32_t m = 0; m < CMON_MAX; m++) {
		cr_assert_str_eq(cmonitor__name(m), names[m]);
		cr_assert_str_eq(cmonitor__meter(m), meters[m]);
	}
	cr_assert_null(cmonitor__name(CMON_MAX));
	cr_assert_null(cmonitor__meter(UINT32_MAX));
}

/* 3 targets x 5 monitors, each with its own numbers; URIs on the HTTP ones only. */
Test(cpolicy, every_target_and_monitor)
{
	static const char *const tnames[] = { "ON_CPU", "OFF_CPU", "NETWORK" };
	static const uint32_t types[] = { TASK_ON_CPU, TASK_OFF_CPU, TASK_NETWORK };
	struct cpolicy *p = pols(1);
	char json[8192];
	size_t off = 0;
	struct warns w;

	off += (size_t)snprintf(json + off, sizeof(json) - off,
				"[{\"ServiceName\":\"cluster::svc\",\"UUID\":\"u\",\"Profiling\":{");
	for (int t = 0; t < 3; t++) {
		off += (size_t)snprintf(json + off, sizeof(json) - off, "%s\"%s\":{", t ? "," : "",
					tnames[t]);
		for (uint32_t m = 0; m < CMON_MAX; m++)
			off += (size_t)snprintf(
				json + off, sizeof(json) - off,
				"%s\"%s\":{\"Threshold\":\"%d.5\",\"Period\":%d,\"Count\":%d%s}",
				m ? "," : "", cmonitor__name(m), 10 * t + (int)m + 1,
				20 + t * 5 + (int)m, t + (int)m + 1,
				m == CMON_HTTP_ERROR_RATE ? ",\"URIList\":[\"/a\",\"/b\",\"/a\"]"
				: m == CMON_HTTP_AVG_RESPONSE_TIME ? ",\"URIRegex\":\"^/api/.*\""
								   : ",\"URIList\":[\"/x\"]");
		off += (size_t)snprintf(json + off, sizeof(json) - off, "}");
	}
	snprintf(json + off, sizeof(json) - off, "}}]");

	cr_assert_eq(parse(json, p, 1, &w), 1);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	cr_assert_eq(p[0].nitems, 15);
	for (int t = 0; t < 3; t++)
		for (uint32_t m = 0; m < CMON_MAX; m++) {
			const struct citem *it = find(&p[0], types[t], m);

			cr_assert(it, "%s/%s missing", tnames[t], cmonitor__name(m));
			cr_assert_float_eq(it->threshold, 10 * t + m + 1.5, 1e-9);
			cr_assert_eq(it->period, 20 + t * 5 + m);
			cr_assert_eq(it->count, t + m + 1);
			if (m == CMON_HTTP_ERROR_RATE) {
				cr_assert_eq(it->nuris, 2, "a URI given twice is kept once");
				cr_assert_str_eq(it->uris[0], "/a");
				cr_assert_str_eq(it->uris[1], "/b");
			} else {
				cr_assert_eq(it->nuris, 0, "URIs on %s", cmonitor__name(m));
			}
			cr_assert_str_eq(it->uri_regex,
					 m == CMON_HTTP_AVG_RESPONSE_TIME ? "^/api/.*" : "");
		}
	free(p);
}

/* Gson sends a removed policy with an empty UUID; no UUID at all means the same. */
Test(cpolicy, removed_policy)
{
	struct cpolicy *p = pols(3);
	struct warns w;

	memset(p, 0x5a, 3 * sizeof(*p));
	cr_assert_eq(parse("[{\"ServiceName\":\"x\",\"UUID\":\"\"},{\"ServiceName\":\"y\"},"
			   "{\"ServiceName\":\"z\",\"UUID\":null,\"Profiling\":null}]",
			   p, 3, &w),
		     3);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(p[i].uuid, "");
		cr_assert_eq(p[i].nitems, 0);
	}
	cr_assert_str_eq(p[0].service, "x");
	cr_assert_str_eq(p[2].service, "z");
	free(p);
}

Test(cpolicy, missing_profiling)
{
	struct cpolicy *p = pols(3);
	struct warns w;

	cr_assert_eq(parse("[{\"ServiceName\":\"a\",\"UUID\":\"u1\"},"
			   "{\"ServiceName\":\"b\",\"UUID\":\"u2\",\"Profiling\":{}},"
			   "{\"ServiceName\":\"c\",\"UUID\":\"u3\",\"Profiling\":{\"ON_CPU\":null,"
			   "\"OFF_CPU\":{},\"NETWORK\":{\"HTTP_ERROR_RATE\":null}}}]",
			   p, 3, &w),
		     3);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(p[i].nitems, 0);
	cr_assert_str_eq(p[1].uuid, "u2");

	/* Profiling of another type: the service stands, without items, one reason. */
	cr_assert_eq(parse("[{\"ServiceName\":\"a\",\"UUID\":\"u1\",\"Profiling\":[]}]", p, 3, &w),
		     1);
	one_warn(&w, "Profiling []", "'a'", "Profiling", NULL);
	cr_assert_str_eq(p[0].uuid, "u1");
	cr_assert_eq(p[0].nitems, 0);
	free(p);
}

/* Upstream drops "10.5" for PROCESS_CPU (ParseInt); here decimals are taken everywhere. */
Test(cpolicy, decimal_thresholds)
{
	static const struct {
		const char *text;
		double v;
	} ok[] = { { "10.5", 10.5 }, { "0.0001", 0.0001 }, { "+5", 5 },	    { ".5", 0.5 },
		   { "5.", 5 },	     { "1e2", 100 },	   { "2E-1", 0.2 }, { "007", 7 } };
	struct cpolicy *p = pols(1);
	char json[512];
	struct warns w;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(json, sizeof(json),
			 "[{\"ServiceName\":\"s\",\"UUID\":\"u\",\"Profiling\":{\"ON_CPU\":"
			 "{\"PROCESS_CPU\":{\"Threshold\":\"%s\",\"Period\":1,\"Count\":1}}}}]",
			 ok[i].text);
		cr_assert_eq(parse(json, p, 1, &w), 1);
		cr_assert_eq(w.n, 0, "%s: %s", ok[i].text, w.r[0]);
		cr_assert_eq(p[0].nitems, 1, "%s", ok[i].text);
		cr_assert_float_eq(p[0].items[0].threshold, ok[i].v, 1e-12, "%s", ok[i].text);
	}
	/* Error rate: up to 100 %. Period and Count at their bounds. */
	cr_assert_eq(parse("[{\"ServiceName\":\"s\",\"Profiling\":{\"NETWORK\":{\"HTTP_ERROR_RATE\":"
			   "{\"Threshold\":\"100\",\"Period\":3600,\"Count\":3600}}}}]",
			   p, 1, &w),
		     1);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	cr_assert_eq(p[0].nitems, 1);
	cr_assert_eq(p[0].items[0].period, CPOLICY_MAX_PERIOD);
	free(p);
}

#define GOOD "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2}"

/* The items too long for their buffers, and the one with a URI too many. */
static void bad_strings(char *thr, size_t thrlen, char *luri, size_t lurilen, char *many,
			size_t manylen)
{
	char uri[CPOLICY_URI_LEN + 1];
	size_t off;

	snprintf(thr, thrlen, "{\"Threshold\":\"%032d\",\"Period\":5,\"Count\":2}", 1);
	memset(uri, 'u', CPOLICY_URI_LEN);
	uri[0] = '/';
	uri[CPOLICY_URI_LEN] = '\0';
	snprintf(luri, lurilen,
		 "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIList\":[\"/ok\",\"%s\"]}",
		 uri);
	off = (size_t)snprintf(many, manylen,
			       "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIList\":[");
	for (int i = 0; i <= CPOLICY_MAX_URIS; i++)
		off += (size_t)snprintf(many + off, manylen - off, "%s\"/%d\"", i ? "," : "", i);
	snprintf(many + off, manylen - off, "]}");
}

/*
 * One bad item next to good ones, in the same service and the same target: the bad one
 * alone is skipped, with one reason naming service, target, monitor and the field.
 */
Test(cpolicy, bad_items_one_by_one)
{
	static char long_uri[CPOLICY_URI_LEN + 128], many_uris[512], long_threshold[96];
	static const struct {
		const char *target, *monitor, *item, *says;
	} bad[] = {
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"abc\",\"Period\":5,\"Count\":2}",
		  "'abc' is not a number" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"\",\"Period\":5,\"Count\":2}",
		  "is empty" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"-1\",\"Period\":5,\"Count\":2}",
		  "'-1' is not above 0" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"0\",\"Period\":5,\"Count\":2}",
		  "'0' is not above 0" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\"nan\",\"Period\":5,\"Count\":2}",
		  "'nan' is not a number" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\"inf\",\"Period\":5,\"Count\":2}",
		  "'inf' is not a number" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\"1e400\",\"Period\":5,\"Count\":2}",
		  "'1e400' is out of range" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\"0x10\",\"Period\":5,\"Count\":2}",
		  "is not a number" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\" 10\",\"Period\":5,\"Count\":2}",
		  "is not a number" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\"1e\",\"Period\":5,\"Count\":2}",
		  "is not a number" },
		{ "OFF_CPU", "SYSTEM_LOAD", "{\"Threshold\":\".\",\"Period\":5,\"Count\":2}",
		  "is not a number" },
		{ "OFF_CPU", "SYSTEM_LOAD", long_threshold, "Threshold is too long" },
		{ "OFF_CPU", "SYSTEM_LOAD",
		  "{\"Threshold\":\"1\\u00002\",\"Period\":5,\"Count\":2}",
		  "Threshold holds a NUL" },
		{ "NETWORK", "HTTP_ERROR_RATE",
		  "{\"Threshold\":\"100.5\",\"Period\":5,\"Count\":2}", "is above 100" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":3,\"Count\":4}",
		  "Count 4 (1..Period 3) is out of range" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":0,\"Count\":0}",
		  "Period 0 (1..3600) is out of range" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":3601,\"Count\":1}",
		  "Period 3601 (1..3600) is out of range" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":-5,\"Count\":1}",
		  "Period -5 (1..3600) is out of range" },
		{ "OFF_CPU", "PROCESS_CPU",
		  "{\"Threshold\":\"10\",\"Period\":99999999999999999999999,\"Count\":1}",
		  "Period" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":5,\"Count\":0}",
		  "Count 0 (1..Period 5) is out of range" },
		{ "NETWORK", "HTTP_AVG_RESPONSE_TIME", many_uris,
		  "URIList has more URIs than fit" },
		{ "NETWORK", "HTTP_AVG_RESPONSE_TIME", long_uri,
		  "URIList holds a URI that is too long" },
		{ "OFF_CPU", "PROCESS_MEMORY", "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2}",
		  "unknown monitor" },
		/* Wrong JSON types, field by field. */
		{ "OFF_CPU", "PROCESS_CPU", "5", "not an object" },
		{ "OFF_CPU", "PROCESS_CPU", "[]", "not an object" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":10,\"Period\":5,\"Count\":2}",
		  "Threshold is not a string" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Period\":5,\"Count\":2}", "Threshold is missing" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":null,\"Period\":5,\"Count\":2}",
		  "Threshold is missing" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":\"5\",\"Count\":2}",
		  "Period is not an integer" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":5.0,\"Count\":2}",
		  "Period is not an integer" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Count\":2}",
		  "Period is missing" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":5,\"Count\":true}",
		  "Count is not an integer" },
		{ "OFF_CPU", "PROCESS_CPU", "{\"Threshold\":\"10\",\"Period\":5}",
		  "Count is missing" },
		{ "NETWORK", "HTTP_ERROR_RATE",
		  "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIList\":\"/a\"}",
		  "URIList is not a list" },
		{ "NETWORK", "HTTP_ERROR_RATE",
		  "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIList\":[\"/a\",1]}",
		  "URIList holds something else than a string" },
		{ "NETWORK", "HTTP_ERROR_RATE",
		  "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIList\":[\"/a\\u0000b\"]}",
		  "URIList holds a URI with a NUL" },
		{ "NETWORK", "HTTP_ERROR_RATE",
		  "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIRegex\":5}",
		  "URIRegex is not a string" },
		{ "NETWORK", "HTTP_ERROR_RATE",
		  "{\"Threshold\":\"10\",\"Period\":5,\"Count\":2,\"URIRegex\":[\"/a\"]}",
		  "URIRegex is not a string" },
	};
	static const char *const goods[] = { "PROCESS_THREAD_COUNT", "SYSTEM_LOAD",
					     "HTTP_AVG_RESPONSE_TIME", "PROCESS_CPU" };
	struct cpolicy *p = pols(2);
	char json[4096];
	struct warns w;

	bad_strings(long_threshold, sizeof(long_threshold), long_uri, sizeof(long_uri), many_uris,
		    sizeof(many_uris));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *good[2];
		size_t ngood = 0;

		/* In the bad item's target, a good item before it and one after. */
		for (size_t g = 0; ngood < 2; g++)
			if (strcmp(goods[g], bad[i].monitor))
				good[ngood++] = goods[g];
		snprintf(json, sizeof(json),
			 "[{\"ServiceName\":\"svc-%zu\",\"UUID\":\"u\",\"Profiling\":{"
			 "\"ON_CPU\":{\"PROCESS_CPU\":" GOOD "},"
			 "\"%s\":{\"%s\":" GOOD ",\"%s\":%s,\"%s\":" GOOD "}}},"
			 "{\"ServiceName\":\"next\",\"UUID\":\"v\",\"Profiling\":{\"ON_CPU\":{"
			 "\"SYSTEM_LOAD\":" GOOD "}}}]",
			 i, bad[i].target, good[0], bad[i].monitor, bad[i].item, good[1]);
		cr_assert_eq(parse(json, p, 2, &w), 2, "%s", json);
		one_warn(&w, json, bad[i].says, "'svc-", bad[i].target, bad[i].monitor, NULL);
		cr_assert_eq(p[0].nitems, 3, "%s: %u items", json, p[0].nitems);
		cr_assert(find(&p[0], TASK_ON_CPU, CMON_PROCESS_CPU));
		for (uint32_t k = 1; k < 3; k++) {
			cr_assert_str_eq(cmonitor__name(p[0].items[k].monitor), good[k - 1]);
			cr_assert_neq(p[0].items[k].target, TASK_ON_CPU);
		}
		cr_assert_eq(p[1].nitems, 1);
	}
	free(p);
}

/* A target this agent does not know, or not an object: that target alone goes. */
Test(cpolicy, bad_targets)
{
	static const struct {
		const char *target, *value, *says;
	} bad[] = {
		{ "MEMORY", "{\"PROCESS_CPU\":" GOOD "}", "target 'MEMORY' unknown" },
		{ "on_cpu", "{\"PROCESS_CPU\":" GOOD "}", "target 'on_cpu' unknown" },
		{ "OFF_CPU", "[]", "OFF_CPU: not an object" },
		{ "OFF_CPU", "\"PROCESS_CPU\"", "OFF_CPU: not an object" },
		{ "OFF_CPU", "7", "OFF_CPU: not an object" },
	};
	struct cpolicy *p = pols(1);
	char json[1024];
	struct warns w;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json),
			 "[{\"ServiceName\":\"svc\",\"UUID\":\"u\",\"Profiling\":{\"ON_CPU\":"
			 "{\"PROCESS_CPU\":" GOOD
			 "},\"%s\":%s,\"NETWORK\":{\"HTTP_ERROR_RATE\":" GOOD "}}}]",
			 bad[i].target, bad[i].value);
		cr_assert_eq(parse(json, p, 1, &w), 1);
		one_warn(&w, json, bad[i].says, "'svc'", NULL);
		cr_assert_eq(p[0].nitems, 2, "%s", json);
		cr_assert(find(&p[0], TASK_ON_CPU, CMON_PROCESS_CPU));
		cr_assert(find(&p[0], TASK_NETWORK, CMON_HTTP_ERROR_RATE));
	}
	free(p);
}

/* URIList and URIRegex mean nothing outside HTTP monitors: ignored, whatever they hold. */
Test(cpolicy, uris_ignored_on_other_monitors)
{
	struct cpolicy *p = pols(1);
	struct warns w;

	cr_assert_eq(parse("[{\"ServiceName\":\"s\",\"UUID\":\"u\",\"Profiling\":{\"ON_CPU\":{"
			   "\"PROCESS_CPU\":{\"Threshold\":\"1\",\"Period\":1,\"Count\":1,"
			   "\"URIList\":5,\"URIRegex\":[]},"
			   "\"SYSTEM_LOAD\":{\"Threshold\":\"1\",\"Period\":1,\"Count\":1,"
			   "\"URIList\":[\"/a\"],\"URIRegex\":\".*\"}}}}]",
			   p, 1, &w),
		     1);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	cr_assert_eq(p[0].nitems, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(p[0].items[i].nuris, 0);
		cr_assert_str_eq(p[0].items[i].uri_regex, "");
	}
	free(p);
}

/* URIs at their bounds; the list and the regex both kept (the list wins, as upstream). */
Test(cpolicy, uri_bounds)
{
	static char json[8192];
	char uri[CPOLICY_URI_LEN];
	struct cpolicy *p = pols(1);
	struct warns w;
	size_t off;

	memset(uri, 'u', sizeof(uri) - 1);
	uri[0] = '/';
	uri[sizeof(uri) - 1] = '\0';
	off = (size_t)snprintf(json, sizeof(json),
			       "[{\"ServiceName\":\"s\",\"Profiling\":{\"NETWORK\":{"
			       "\"HTTP_AVG_RESPONSE_TIME\":{\"Threshold\":\"500\",\"Period\":3,"
			       "\"Count\":1,\"URIRegex\":\"%s\",\"URIList\":[",
			       uri);
	for (int i = 0; i < CPOLICY_MAX_URIS; i++)
		off += (size_t)snprintf(json + off, sizeof(json) - off, "%s\"%s%d\"", i ? "," : "",
					i ? "/p" : uri, i);
	snprintf(json + off, sizeof(json) - off, "]}}}}]");
	/* The first entry is then one byte too long: that one alone is refused. */
	cr_assert_eq(parse(json, p, 1, &w), 1);
	one_warn(&w, json, "'s'", "NETWORK/HTTP_AVG_RESPONSE_TIME", "URIList",
		 "holds a URI that is too long", NULL);
	cr_assert_eq(p[0].nitems, 0);

	/* Without the digit: CPOLICY_URI_LEN - 1 bytes fit. */
	off = (size_t)snprintf(json, sizeof(json),
			       "[{\"ServiceName\":\"s\",\"Profiling\":{\"NETWORK\":{"
			       "\"HTTP_AVG_RESPONSE_TIME\":{\"Threshold\":\"500\",\"Period\":3,"
			       "\"Count\":1,\"URIRegex\":\"%s\",\"URIList\":[\"%s\"",
			       uri, uri);
	for (int i = 1; i < CPOLICY_MAX_URIS; i++)
		off += (size_t)snprintf(json + off, sizeof(json) - off, ",\"/p%d\"", i);
	snprintf(json + off, sizeof(json) - off, "]}}}}]");
	cr_assert_eq(parse(json, p, 1, &w), 1);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	cr_assert_eq(p[0].nitems, 1);
	cr_assert_eq(p[0].items[0].nuris, CPOLICY_MAX_URIS);
	cr_assert_str_eq(p[0].items[0].uris[0], uri);
	cr_assert_str_eq(p[0].items[0].uris[CPOLICY_MAX_URIS - 1], "/p15");
	cr_assert_str_eq(p[0].items[0].uri_regex, uri);

	/* A regex one byte too long. */
	snprintf(json, sizeof(json),
		 "[{\"ServiceName\":\"s\",\"Profiling\":{\"NETWORK\":{\"HTTP_ERROR_RATE\":"
		 "{\"Threshold\":\"5\",\"Period\":3,\"Count\":1,\"URIRegex\":\"%sx\"}}}}]",
		 uri);
	cr_assert_eq(parse(json, p, 1, &w), 1);
	one_warn(&w, json, "NETWORK/HTTP_ERROR_RATE", "URIRegex is too long", NULL);
	free(p);
}

/*
 * Entries that cannot be a service (no usable ServiceName), or whose UUID does not fit: the
 * entry alone goes, with one reason; the services around it stay.
 */
Test(cpolicy, bad_services)
{
	static char long_name[CPOLICY_NAME_LEN + 64], long_uuid[CPOLICY_UUID_LEN + 64];
	static const struct {
		const char *entry, *says;
	} bad[] = {
		{ "5", "policy 1: not an object" },
		{ "null", "policy 1: not an object" },
		{ "[]", "policy 1: not an object" },
		{ "{\"UUID\":\"u\"}", "policy 1: no ServiceName" },
		{ "{\"ServiceName\":null,\"UUID\":\"u\"}", "policy 1: no ServiceName" },
		{ "{\"ServiceName\":5,\"UUID\":\"u\"}", "policy 1: ServiceName is not a string" },
		{ "{\"ServiceName\":\"\",\"UUID\":\"u\"}", "policy 1: ServiceName is empty" },
		{ "{\"ServiceName\":\"a\\u0000b\"}", "policy 1: ServiceName holds a NUL" },
		{ long_name, "policy 1: ServiceName is too long" },
		{ long_uuid, "service 'long-uuid': UUID is too long" },
		{ "{\"ServiceName\":\"x\",\"UUID\":7}", "service 'x': UUID is not a string" },
		{ "{\"ServiceName\":\"a\",\"UUID\":\"again\"}", "service 'a': given twice" },
	};
	struct cpolicy *p = pols(4);
	char json[2048], name[CPOLICY_NAME_LEN + 1], uuid[CPOLICY_UUID_LEN + 1];
	struct warns w;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(long_name, sizeof(long_name), "{\"ServiceName\":\"%s\"}", name);
	memset(uuid, 'f', sizeof(uuid) - 1);
	uuid[sizeof(uuid) - 1] = '\0';
	snprintf(long_uuid, sizeof(long_uuid), "{\"ServiceName\":\"long-uuid\",\"UUID\":\"%s\"}",
		 uuid);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json),
			 "[{\"ServiceName\":\"a\",\"UUID\":\"ua\",\"Profiling\":{\"ON_CPU\":"
			 "{\"PROCESS_CPU\":" GOOD "}}},%s,{\"ServiceName\":\"b\",\"UUID\":\"ub\"}]",
			 bad[i].entry);
		cr_assert_eq(parse(json, p, 4, &w), 2, "%s", json);
		one_warn(&w, json, bad[i].says, NULL);
		cr_assert_str_eq(p[0].service, "a");
		cr_assert_str_eq(p[0].uuid, "ua");
		cr_assert_eq(p[0].nitems, 1);
		cr_assert_str_eq(p[1].service, "b");
		cr_assert_str_eq(p[1].uuid, "ub");
	}
	/* Control bytes are kept in the name, and shown as '?' in a reason. */
	cr_assert_eq(parse("[{\"ServiceName\":\"\\u0001\\n\"},{\"ServiceName\":\"\\u0001\\n\"}]", p,
			   4, &w),
		     1);
	one_warn(&w, "control bytes", "service '?\?': given twice", NULL);
	cr_assert_str_eq(p[0].service, "\001\n");

	/* CPOLICY_NAME_LEN - 1 and CPOLICY_UUID_LEN - 1 bytes fit. */
	name[sizeof(name) - 2] = '\0';
	uuid[sizeof(uuid) - 2] = '\0';
	snprintf(json, sizeof(json), "[{\"ServiceName\":\"%s\",\"UUID\":\"%s\"}]", name, uuid);
	cr_assert_eq(parse(json, p, 4, &w), 1);
	cr_assert_eq(w.n, 0, "%s", w.r[0]);
	cr_assert_str_eq(p[0].service, name);
	cr_assert_str_eq(p[0].uuid, uuid);
	free(p);
}

/* Not a JSON array: -EINVAL, nothing taken, no reason. */
Test(cpolicy, not_an_array)
{
	static const char *const texts[] = {
		"",	"{}",	  "5",	  "null", "\"[]\"", "[",   "[1,",   "[]]",
		"[] x", "[]\x01", " {} ", "[{]",  "[\"a]",  "tru", "[nul]",
	};
	struct cpolicy *p = pols(1);
	struct warns w = { 0 };
	size_t n = 777;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cr_assert_eq(cpolicy__parse(texts[i], strlen(texts[i]), p, 1, &n, on_warn, &w),
			     -EINVAL, "'%s'", texts[i]);
		cr_assert_eq(n, 777, "ret_n written on failure");
		cr_assert_eq(w.n, 0);
	}
	/* Deeper than any policy: refused as a whole. */
	cr_assert_eq(cpolicy__parse("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
				    66, p, 1, &n, on_warn, &w),
		     -EINVAL);
	/* Empty arrays, white space around. */
	cr_assert_eq(cpolicy__parse(" [ ]\r\n\t", 7, p, 1, &n, NULL, NULL), 0);
	cr_assert_eq(n, 0);
	/* A NUL after the array is text after it. */
	cr_assert_eq(cpolicy__parse(" [ ]\r\n\t", 8, p, 1, &n, NULL, NULL), -EINVAL);
	free(p);
}

/* len bytes are read, not a byte more: the text need not end with a NUL. */
Test(cpolicy, unterminated_input)
{
	static const char text[] = "[{\"ServiceName\":\"a\",\"UUID\":\"u\"}]garbage";
	struct cpolicy *p = pols(1);
	char *buf = malloc(sizeof(text) - 8);
	size_t n = 0;

	cr_assert(buf);
	memcpy(buf, text, sizeof(text) - 8);
	cr_assert_eq(cpolicy__parse(buf, sizeof(text) - 8, p, 1, &n, NULL, NULL), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(p[0].service, "a");
	cr_assert_eq(cpolicy__parse(buf, sizeof(text) - 9, p, 1, &n, NULL, NULL), -EINVAL);
	free(buf);
	free(p);
}

Test(cpolicy, huge_input)
{
	struct cpolicy *p = pols(1);
	char *buf = malloc(CPOLICY_MAX_JSON + 1);
	size_t n = 5;

	cr_assert(buf);
	memset(buf, ' ', CPOLICY_MAX_JSON + 1);
	buf[0] = '[';
	buf[CPOLICY_MAX_JSON - 1] = ']';
	cr_assert_eq(cpolicy__parse(buf, CPOLICY_MAX_JSON + 1, p, 1, &n, NULL, NULL), -E2BIG);
	cr_assert_eq(n, 5);
	cr_assert_eq(cpolicy__parse(buf, CPOLICY_MAX_JSON, p, 1, &n, NULL, NULL), 0);
	cr_assert_eq(n, 0);
	free(buf);
	free(p);
}

/* More services than max: the first max taken, one reason for the rest. */
Test(cpolicy, more_than_max_services)
{
	const size_t total = CPOLICY_MAX_SERVICES + 44;
	struct cpolicy *p = pols(CPOLICY_MAX_SERVICES);
	char *json = malloc(total * 64 + 16);
	size_t off = 0;
	struct warns w;

	cr_assert(json);
	json[off++] = '[';
	for (size_t i = 0; i < total; i++)
		off += (size_t)sprintf(json + off, "%s{\"ServiceName\":\"s%zu\",\"UUID\":\"u\"}",
				       i ? "," : "", i);
	strcpy(json + off, "]");
	cr_assert_eq(parse(json, p, CPOLICY_MAX_SERVICES, &w), CPOLICY_MAX_SERVICES);
	one_warn(&w, json, "more than 256 policies", "the last 44", NULL);
	cr_assert_str_eq(p[CPOLICY_MAX_SERVICES - 1].service, "s255");

	cr_assert_eq(parse(json, p, 2, &w), 2);
	one_warn(&w, json, "more than 2 policies", NULL);
	cr_assert_eq(parse(json, NULL, 0, &w), 0);
	one_warn(&w, json, "more than 0 policies", NULL);
	free(json);
	free(p);
}

/* A backend sending nothing but bad entries gets CPOLICY_MAX_WARNS reasons and a count. */
Test(cpolicy, reasons_are_bounded)
{
	struct cpolicy *p = pols(1);
	char *json = malloc(1000 * 4 + 16);
	size_t off = 0;
	struct warns w;

	cr_assert(json);
	json[off++] = '[';
	for (int i = 0; i < 1000; i++)
		off += (size_t)sprintf(json + off, "%s{}", i ? "," : "");
	strcpy(json + off, "]");
	cr_assert_eq(parse(json, p, 1, &w), 0);
	cr_assert_eq(w.n, CPOLICY_MAX_WARNS + 1);
	cr_assert(strstr(w.r[0], "policy 0: no ServiceName"));
	cr_assert(strstr(w.r[CPOLICY_MAX_WARNS], "936 more"), "%s", w.r[CPOLICY_MAX_WARNS]);
	free(json);
	free(p);
}
