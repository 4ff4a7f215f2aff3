// SPDX-License-Identifier: Apache-2.0
/*
 * The time windows of continuous profiling (common/cwindow.h). The slots stay an array
 * from oldest to newest, as the header lays them out: a move shifts it with memmove, at most
 * CWINDOW_MAX_SLOTS * 24 bytes once per second per window.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cwindow.h"

#define SLOT_MS 1000

int cwindow__init(struct cwindow *w, uint32_t n, enum cwindow_agg agg)
{
	struct cwindow_slot *slots;

	if (!n || n > CWINDOW_MAX_SLOTS ||
	    (agg != CWINDOW_LATEST && agg != CWINDOW_RATE && agg != CWINDOW_MEAN))
		return -EINVAL;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	w->agg = agg;
	w->n = n;
	w->slots = slots;
	return 0;
}

void cwindow__free(struct cwindow *w)
{
	if (!w)
		return;
	free(w->slots);
	w->slots = NULL;
	w->n = 0;
}

/* The slot's value: 1 with *ret, or 0 when it holds none. */
static int slot_value(enum cwindow_agg agg, const struct cwindow_slot *s, double *ret)
{
	if (!s->has)
		return 0;
	switch (agg) {
	case CWINDOW_LATEST:
		*ret = s->a;
		return 1;
	case CWINDOW_RATE:
		if (s->a <= 0)
			return 0;
		*ret = s->b / s->a * 100;
		return 1;
	case CWINDOW_MEAN:
		if (s->a <= 0)
			return 0;
		*ret = s->b / s->a;
		return 1;
	}
	return 0;
}

/* The window on by k >= 1 slots: the k oldest go, k empty ones come at the newest end. */
static void move_on(struct cwindow *w, uint64_t k)
{
	if (k >= w->n) {
		memset(w->slots, 0, w->n * sizeof(*w->slots));
		return;
	}
	memmove(w->slots, w->slots + k, (w->n - k) * sizeof(*w->slots));
	memset(w->slots + (w->n - k), 0, k * sizeof(*w->slots));
}

void cwindow__add(struct cwindow *w, int64_t t_ms, double a, double b)
{
	struct cwindow_slot *s;
	uint64_t back;

	if (!w->slots || !isfinite(a) || (w->agg != CWINDOW_LATEST && !isfinite(b)))
		return;
	if (!w->started) {
		w->started = 1;
		w->end_ms = t_ms;
	}
	if (t_ms >= w->end_ms) {
		/* Unsigned: the distance of two int64 fits in a uint64. */
		uint64_t k = ((uint64_t)t_ms - (uint64_t)w->end_ms) / SLOT_MS;

		if (k) {
			move_on(w, k);
			/* Whole slots, so that boundaries stay those of the first sample. */
			w->end_ms = (int64_t)((uint64_t)w->end_ms + k * SLOT_MS);
		}
		back = 0;
	} else {
		uint64_t d = (uint64_t)w->end_ms - (uint64_t)t_ms;

		/* Slot k back covers [end - k s, end - (k - 1) s). */
		back = d / SLOT_MS + (d % SLOT_MS != 0);
		if (back >= w->n)
			return;
	}
	s = &w->slots[w->n - 1 - back];
	if (w->agg == CWINDOW_LATEST) {
		s->a = a;
	} else {
		s->a += a;
		s->b += b;
	}
	s->has = 1;
}

int cwindow__match(const struct cwindow *w, uint32_t period, uint32_t count, double threshold,
		   double *ret_current)
{
	uint32_t matched = 0;
	double current = 0, v;

	if (!w->slots || !w->started || !period || !count || count > period)
		return 0;
	if (period > w->n)
		period = w->n;
	for (uint32_t i = 0; i < period; i++) {
		if (!slot_value(w->agg, &w->slots[w->n - 1 - i], &v) || !(v >= threshold))
			continue;
		if (!matched)
			current = v;
		matched++;
	}
	if (!matched)
		return 0;
	if (ret_current)
		*ret_current = current;
	return matched >= count;
}

int cwindow__flush_newest(struct cwindow *w, double *ret)
{
	if (!w->slots || !w->started || (w->flushed && w->flushed_ms >= w->end_ms))
		return 0;
	w->flushed = 1;
	w->flushed_ms = w->end_ms;
	return slot_value(w->agg, &w->slots[w->n - 1], ret);
}

int cwindow__resize(struct cwindow *w, uint32_t n)
{
	struct cwindow_slot *slots;
	uint32_t keep;

	if (!n || n > CWINDOW_MAX_SLOTS || !w->slots)
		return -EINVAL;
	if (n == w->n)
		return 0;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	keep = n < w->n ? n : w->n;
	memcpy(slots + (n - keep), w->slots + (w->n - keep), keep * sizeof(*slots));
	free(w->slots);
	w->slots = slots;
	w->n = n;
	return 0;
}
