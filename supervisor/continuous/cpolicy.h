/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (no capability): continuous profiling policies as the OAP sends them
 * (queryPolicies' ContinuousProfilingPolicyQuery command, arg ServiceWithPolicyJSON; reference
 * continuous-and-kubernetes.md A2), parsed with json-c and checked item by item: a bad item
 * is skipped with its reason, the rest of its service's policy stands. Untrusted input (a
 * hostile backend): every string, count and number is bounded.
 */
#ifndef ROVER_SUPERVISOR_CPOLICY_H
#define ROVER_SUPERVISOR_CPOLICY_H

#include <stddef.h>
#include <stdint.h>

#define CPOLICY_MAX_SERVICES 256
#define CPOLICY_MAX_ITEMS 16 /* per service: 3 targets x 5 monitors fit */
#define CPOLICY_MAX_URIS 16  /* URIList entries per item */
#define CPOLICY_URI_LEN 256
#define CPOLICY_NAME_LEN 256
#define CPOLICY_UUID_LEN 160	/* the OAP's are 128 hex digits */
#define CPOLICY_MAX_PERIOD 3600 /* seconds */
#define CPOLICY_MAX_JSON (4u << 20)
#define CPOLICY_MAX_WARNS 64 /* reasons per parse, then one that counts the rest */

enum cmonitor {
	CMON_PROCESS_CPU, /* % of one CPU over the last fetch interval */
	CMON_PROCESS_THREAD_COUNT,
	CMON_SYSTEM_LOAD,	     /* 1-minute load average */
	CMON_HTTP_ERROR_RATE,	     /* % of server responses with status >= 500 */
	CMON_HTTP_AVG_RESPONSE_TIME, /* ms */
	CMON_MAX,
};

struct citem {
	uint32_t target; /* enum task_type (common/msg.h): TASK_ON_CPU, TASK_OFF_CPU, TASK_NETWORK */
	uint32_t monitor; /* enum cmonitor */
	double threshold;
	uint32_t period; /* seconds, 1..CPOLICY_MAX_PERIOD */
	uint32_t count;	 /* 1..period */
	/*
	 * HTTP monitors: the URIs watched (exact paths, each once), or a regex, or neither: all.
	 * When both are given the list wins, as upstream. The regex is not compiled here.
	 */
	char uris[CPOLICY_MAX_URIS][CPOLICY_URI_LEN];
	uint32_t nuris;
	char uri_regex[CPOLICY_URI_LEN];
};

struct cpolicy {
	char service[CPOLICY_NAME_LEN];
	char uuid[CPOLICY_UUID_LEN]; /* "": the policy was removed */
	struct citem items[CPOLICY_MAX_ITEMS];
	uint32_t nitems;
};

/* Names as the OAP spells them: "PROCESS_CPU"..., and the meters' lower-case suffixes. */
const char *cmonitor__name(uint32_t monitor);
const char *cmonitor__meter(uint32_t monitor);

/*
 * Parses ServiceWithPolicyJSON (len bytes, not necessarily terminated) into ret (max entries),
 * *ret_n of them. An entry without a ServiceName, with a ServiceName or UUID that does not
 * fit, or naming a service already taken is skipped; entries beyond max are skipped together.
 * An absent UUID is "" (removed). An item that is not valid (unknown target or monitor, a
 * threshold that is not a number or out of its range, Period or Count out of range, Count >
 * Period, more URIs than fit, a URI too long, a field of the wrong JSON type...) is skipped.
 * Nothing is truncated. Each skip calls warn(ctx, reason) once (reason names the service,
 * target, monitor and what was wrong), up to CPOLICY_MAX_WARNS, then once more with the count
 * of the rest; warn may be NULL. 0, or -EINVAL when the text is not a JSON array (nothing
 * taken), -E2BIG when longer than CPOLICY_MAX_JSON, -ENOMEM.
 */
int cpolicy__parse(const char *json, size_t len, struct cpolicy *ret, size_t max, size_t *ret_n,
		   void (*warn)(void *ctx, const char *reason), void *ctx);

#endif
