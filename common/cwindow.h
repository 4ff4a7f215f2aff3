/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time windows of continuous profiling (the supervisor's checker, `rover watch`), as
 * upstream's (reference continuous-and-kubernetes.md A5) with its bugs fixed:
 *  - each policy item is judged on its own Period (the newest `period` slots), not on the
 *    longest window that shares the slots (A9.3);
 *  - `current` is the latest matching value, not the oldest (A9.4);
 *  - an empty slot (no sample in that second) never matches (upstream takes it as 0, or NaN);
 *  - resizing keeps the newest slots and drops or adds at the oldest end (A9.5).
 * Slots are one second each, relative to the first sample; a sample less than a second newer
 * than the newest slot goes into it. Pure arithmetic: no clock, no I/O.
 */
#ifndef ROVER_COMMON_CWINDOW_H
#define ROVER_COMMON_CWINDOW_H

#include <stdint.h>

/* Slots a window may have: the longest Period accepted (cpolicy.h). */
#define CWINDOW_MAX_SLOTS 3600

enum cwindow_agg {
	CWINDOW_LATEST, /* a sample replaces the slot's value (CPU, threads, load) */
	CWINDOW_RATE,	/* a: requests, b: errors; value = b / a * 100 (0 requests: empty) */
	CWINDOW_MEAN,	/* a: count, b: sum; value = b / a (0 count: empty) */
};

struct cwindow_slot {
	double a, b;
	uint8_t has; /* a sample came for this second */
};

struct cwindow {
	enum cwindow_agg agg;
	uint32_t n;		    /* slots */
	struct cwindow_slot *slots; /* [0] oldest .. [n - 1] newest */
	int64_t end_ms;		    /* time of the newest slot; valid when started */
	int started;
	int64_t flushed_ms; /* end_ms at the last flush; valid when flushed */
	int flushed;
};

/* n slots (1..CWINDOW_MAX_SLOTS). 0 or -errno. */
int cwindow__init(struct cwindow *w, uint32_t n, enum cwindow_agg agg);
void cwindow__free(struct cwindow *w);

/*
 * A sample at t_ms: CWINDOW_LATEST takes a as the value (b unused); RATE and MEAN add a and
 * b to the slot. A sample a second or more newer than the newest slot moves the window on
 * by whole seconds (slots in between are empty; more than n of them empty them all); one
 * older than the newest slot goes into the slot of its second, or is dropped when older than
 * the window. A value that is not finite is dropped.
 */
void cwindow__add(struct cwindow *w, int64_t t_ms, double a, double b);

/*
 * Whether at least count of the newest period slots (period <= n; a longer one is judged on
 * the n slots) hold a value >= threshold; *ret_current: the newest such value, set whenever
 * one slot holds one, even fewer than count (untouched when none). 1 or 0; 0 too for period
 * 0, count 0 or count > period. ret_current may be NULL.
 */
int cwindow__match(const struct cwindow *w, uint32_t period, uint32_t count, double threshold,
		   double *ret_current);

/* The newest slot's value, once per new newest slot (meters): 1 with *ret, or 0. */
int cwindow__flush_newest(struct cwindow *w, double *ret);

/* To n slots, keeping the newest. 0 or -errno (the window unchanged). */
int cwindow__resize(struct cwindow *w, uint32_t n);

#endif
