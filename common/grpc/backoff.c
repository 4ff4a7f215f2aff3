// SPDX-License-Identifier: Apache-2.0
/*
 * The OAP clients' retry spacing (common/grpc/oap.h), apart from oap.c: it calls no gRPC, so it
 * stays in the supervisor and the shipper when the client itself is a module that only a
 * configured backend loads (oap_load.c).
 */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "common/grpc/oap.h"

/* xorshift32: jitter needs spread, not secrecy. */
static uint32_t backoff__rand(struct oap_backoff *b)
{
	uint32_t x = b->seed ? b->seed : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	b->seed = x;
	return x;
}

void oap_backoff__init(struct oap_backoff *b, uint32_t min_ms, uint32_t max_ms)
{
	struct timespec ts;

	b->min_ms = min_ms ? min_ms : 1000;
	b->max_ms = max_ms ? max_ms : 60000;
	if (b->max_ms < b->min_ms)
		b->max_ms = b->min_ms;
	b->cur_ms = 0;
	b->next_ms = 0;
	/* Agents started together should not retry in step. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	b->seed = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16) ^ (uint32_t)(uintptr_t)b;
	if (!b->seed)
		b->seed = 1;
}

int oap_backoff__ready(const struct oap_backoff *b, uint64_t now_ms)
{
	return now_ms >= b->next_ms;
}

void oap_backoff__failed(struct oap_backoff *b, uint64_t now_ms)
{
	uint32_t d, half;

	if (!b->cur_ms)
		d = b->min_ms;
	else if (b->cur_ms > b->max_ms / 2)
		d = b->max_ms;
	else
		d = b->cur_ms * 2;
	b->cur_ms = d;
	half = d / 2;
	b->next_ms = now_ms + half + backoff__rand(b) % (d - half + 1);
}

void oap_backoff__success(struct oap_backoff *b)
{
	b->cur_ms = 0;
	b->next_ms = 0;
}
