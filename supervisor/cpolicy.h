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
#define CPOLICY_MAX_ITEMS 16   /* per service: 3 targets x 5 monitors fit */
#define CPOLICY_MAX_URIS 16    /* URIList entries per item */
#define CPOLICY_URI_LEN 256
#define CPOLICY_NAME_LEN 256
#define CPOLICY_UUID_LEN 160   /* the OAP's are 128 hex digits */
#define CPOLICY_MAX_PERIOD 3600 /* seconds */
#define CPOLICY_MAX_JSON (4u << 20)

enum cmonitor {
	CMON_PROCESS_CPU,	   /* % of one CPU over the last fetch interval */
	CMON_PROCESS_THREAD_COUNT,
	CMON_SYSTEM_LOAD,	   /* 1-minute load average */
	CMON_HTTP_ERROR_RATE,	   /* % of server responses with status >= 500 */
	CMON_HTTP_AVG_RESPONSE_TIME, /* ms */
	CMON_MAX,
};

struct citem {
	uint32_t target; /* enum task_type (common/msg.h): TASK_ON_CPU, TASK_OFF_CPU, TASK_NETWORK */
	uint32_t monitor; /* enum cmonitor */
	double threshold;
	uint32_t period; /* seconds, 1..CPOLICY_MAX_PERIOD */
	uint32_t count;	 /* 1..period */
	/* HTTP monitors: the URIs watched (exact paths), or a regex, or neither: all. */
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
 * *ret_n of them. An entry without a ServiceName, or beyond max, is skipped; an item that is
 * not valid (unknown target or monitor, a threshold that is not a number or out of its range,
 * Period or Count out of range, Count > Period, more URIs than fit...) is skipped. Each skip
 * calls warn(ctx, reason) once (reason names the service, target, monitor and what was
 * wrong); warn may be NULL. 0, or -EINVAL when the text is not a JSON array (nothing taken),
 * -E2BIG when longer than CPOLICY_MAX_JSON, -ENOMEM.
 */
int cpolicy__parse(const char *json, size_t len, struct cpolicy *ret, size_t max, size_t *ret_n,
		   void (*warn)(void *ctx, const char *reason), void *ctx);

#endif
