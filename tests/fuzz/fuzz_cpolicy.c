// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the continuous profiling policies a backend answers queryPolicies with
 * (ServiceWithPolicyJSON), through cpolicy__parse() (supervisor/continuous/cpolicy.c). The input is
 * copied to a buffer of its exact size with no NUL after it, so a read past len is caught;
 * it is parsed into a short array as well, so the "more than max" path runs.
 *
 * Contracts checked: 0 with every service and item within the header's ranges, or -EINVAL
 * with nothing written and no reason; each reason non-empty and terminated, at most
 * CPOLICY_MAX_WARNS + 1 of them.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msg.h"
#include "supervisor/continuous/cpolicy.h"

#define MAX_POLICIES 8

static size_t nwarns;

static void on_warn(void *ctx, const char *reason)
{
	(void)ctx;
	if (!reason || !reason[0] || strlen(reason) >= 512)
		abort();
	if (++nwarns > CPOLICY_MAX_WARNS + 1)
		abort();
}

static int terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static void check_item(const struct citem *it)
{
	int http = it->monitor == CMON_HTTP_ERROR_RATE ||
		   it->monitor == CMON_HTTP_AVG_RESPONSE_TIME;

	if (it->target != TASK_ON_CPU && it->target != TASK_OFF_CPU && it->target != TASK_NETWORK)
		abort();
	if (it->monitor >= CMON_MAX || !cmonitor__name(it->monitor) ||
	    !cmonitor__meter(it->monitor))
		abort();
	if (!isfinite(it->threshold) || !(it->threshold > 0))
		abort();
	if (it->monitor == CMON_HTTP_ERROR_RATE && it->threshold > 100)
		abort();
	if (it->period < 1 || it->period > CPOLICY_MAX_PERIOD || it->count < 1 ||
	    it->count > it->period)
		abort();
	if (it->nuris > CPOLICY_MAX_URIS || !terminated(it->uri_regex, CPOLICY_URI_LEN))
		abort();
	if (!http && (it->nuris || it->uri_regex[0]))
		abort();
	for (uint32_t i = 0; i < it->nuris; i++) {
		if (!terminated(it->uris[i], CPOLICY_URI_LEN))
			abort();
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(it->uris[i], it->uris[j]))
				abort();
	}
}

static void check(const struct cpolicy *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!terminated(p[i].service, CPOLICY_NAME_LEN) || !p[i].service[0] ||
		    !terminated(p[i].uuid, CPOLICY_UUID_LEN) || p[i].nitems > CPOLICY_MAX_ITEMS)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p[i].service, p[j].service))
				abort();
		for (uint32_t k = 0; k < p[i].nitems; k++) {
			check_item(&p[i].items[k]);
			for (uint32_t l = 0; l < k; l++)
				if (p[i].items[k].target == p[i].items[l].target &&
				    p[i].items[k].monitor == p[i].items[l].monitor)
					abort();
		}
	}
}

static void run(const char *json, size_t size, struct cpolicy *p, size_t max)
{
	size_t n = SIZE_MAX;
	int r;

	nwarns = 0;
	r = cpolicy__parse(json, size, p, max, &n, on_warn, NULL);
	if (r == 0) {
		if (n > max)
			abort();
		check(p, n);
	} else if (r != -EINVAL || n != SIZE_MAX || nwarns) {
		fprintf(stderr, "cpolicy__parse: unexpected %d, n %zu, %zu reasons\n", r, n,
			nwarns);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cpolicy p[MAX_POLICIES];
	char *json = malloc(size ? size : 1);

	if (!json)
		abort();
	memcpy(json, data, size);
	run(json, size, p, MAX_POLICIES);
	run(json, size, p, 1);
	free(json);
	return 0;
}
