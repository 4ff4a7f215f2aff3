// SPDX-License-Identifier: Apache-2.0
/*
 * The time windows of continuous profiling (common/cwindow.h): upstream's semantics that
 * still hold (windows_test.go, reference continuous-and-kubernetes.md A5), and each fix as a
 * case that upstream's windows.go would fail.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "common/cwindow.h"

#define T0 1700000000000LL
/* s seconds after T0. */
#define AT(s) (T0 + (int64_t)(s)*1000)

/* The slot values, oldest first; NAN for a slot without one. */
static void values(const struct cwindow *w, double *out)
{
	for (uint32_t i = 0; i < w->n; i++) {
		const struct cwindow_slot *s = &w->slots[i];

		if (!s->has)
			out[i] = NAN;
		else if (w->agg == CWINDOW_LATEST)
			out[i] = s->a;
		else if (s->a <= 0)
			out[i] = NAN;
		else
			out[i] = w->agg == CWINDOW_RATE ? s->b / s->a * 100 : s->b / s->a;
	}
}

static void expect(const struct cwindow *w, const double *want, uint32_t n)
{
	double got[16];

	cr_assert_eq(w->n, n);
	values(w, got);
	for (uint32_t i = 0; i < n; i++) {
		if (isnan(want[i]))
			cr_assert(isnan(got[i]), "slot %u: %g, expected empty", i, got[i]);
		else
			cr_assert_float_eq(got[i], want[i], 1e-9, "slot %u: %g, expected %g", i,
					   got[i], want[i]);
	}
}

static struct cwindow latest(uint32_t n)
{
	struct cwindow w;

	cr_assert_eq(cwindow__init(&w, n, CWINDOW_LATEST), 0);
	return w;
}

/* windows_test.go TestAdd "normal" and "out of count". */
Test(cwindow, slots_in_order_oldest_go)
{
	struct cwindow w = latest(3);

	cwindow__add(&w, AT(1), 1, 0);
	cwindow__add(&w, AT(2), 2, 0);
	cwindow__add(&w, AT(3), 3, 0);
	expect(&w, (double[]){ 1, 2, 3 }, 3);
	cwindow__add(&w, AT(4), 4, 0);
	expect(&w, (double[]){ 2, 3, 4 }, 3);
	cwindow__free(&w);
	cwindow__free(&w);
	cwindow__free(NULL);
}

/* TestAdd "add older data": a late sample goes into its second's slot, or is dropped. */
Test(cwindow, late_samples)
{
	struct cwindow w = latest(3);

	for (int s = 1; s <= 4; s++)
		cwindow__add(&w, AT(s), s, 0);
	cwindow__add(&w, AT(2), 4, 0);
	cwindow__add(&w, AT(1), 8, 0);
	cwindow__add(&w, AT(0), 10, 0);
	cwindow__add(&w, INT64_MIN, 10, 0);
	expect(&w, (double[]){ 4, 3, 4 }, 3);
	cwindow__free(&w);
}

/* TestAdd "add new data which bigger than windows count", and a jump past every slot. */
Test(cwindow, jumps)
{
	struct cwindow w = latest(3);

	cwindow__add(&w, AT(1), 1, 0);
	cwindow__add(&w, AT(4), 2, 0);
	expect(&w, (double[]){ NAN, NAN, 2 }, 3);
	cwindow__add(&w, AT(5), 3, 0);
	cwindow__add(&w, AT(7), 5, 0);
	expect(&w, (double[]){ 3, NAN, 5 }, 3);
	cwindow__add(&w, AT(100), 6, 0);
	expect(&w, (double[]){ NAN, NAN, 6 }, 3);
	cwindow__add(&w, AT(98), 7, 0);
	expect(&w, (double[]){ 7, NAN, 6 }, 3);
	/* Far apart int64 times: no overflow, the window starts over. */
	cwindow__add(&w, INT64_MAX, 8, 0);
	expect(&w, (double[]){ NAN, NAN, 8 }, 3);
	cwindow__free(&w);

	w = latest(3);
	cwindow__add(&w, INT64_MIN, 1, 0);
	cwindow__add(&w, INT64_MAX, 2, 0);
	expect(&w, (double[]){ NAN, NAN, 2 }, 3);
	cwindow__free(&w);
}

/*
 * Slots are whole seconds from the first sample. Upstream re-anchors on the sample that moved
 * the window (endTime = t at 1.5 s), so its 2.0 s sample would overwrite the 1.5 s one.
 */
Test(cwindow, slot_boundaries_from_the_first_sample)
{
	struct cwindow w = latest(3);

	cwindow__add(&w, AT(0), 1, 0);
	cwindow__add(&w, AT(1) + 500, 2, 0);
	cwindow__add(&w, AT(1) + 999, 3, 0);
	expect(&w, (double[]){ NAN, 1, 3 }, 3);
	cwindow__add(&w, AT(2), 4, 0);
	expect(&w, (double[]){ 1, 3, 4 }, 3);
	cr_assert_eq(w.end_ms, AT(2));
	/* Just before the newest slot: the slot before it. */
	cwindow__add(&w, AT(2) - 1, 5, 0);
	expect(&w, (double[]){ 1, 5, 4 }, 3);
	cwindow__free(&w);
}

/* Sub-second samples: LATEST overwrites, RATE and MEAN accumulate. */
Test(cwindow, sub_second_samples)
{
	struct cwindow w = latest(2);

	cwindow__add(&w, AT(0), 10, 0);
	cwindow__add(&w, AT(0) + 300, 20, 0);
	cwindow__add(&w, AT(0) + 900, 30, 0);
	expect(&w, (double[]){ NAN, 30 }, 2);
	cwindow__free(&w);

	cr_assert_eq(cwindow__init(&w, 2, CWINDOW_RATE), 0);
	cwindow__add(&w, AT(0), 1, 0);
	cwindow__add(&w, AT(0) + 300, 1, 1);
	cwindow__add(&w, AT(0) + 900, 1, 0);
	cwindow__add(&w, AT(0) + 999, 1, 0);
	cr_assert_float_eq(w.slots[1].a, 4, 1e-9);
	cr_assert_float_eq(w.slots[1].b, 1, 1e-9);
	cwindow__free(&w);

	cr_assert_eq(cwindow__init(&w, 2, CWINDOW_MEAN), 0);
	cwindow__add(&w, AT(0), 1, 10);
	cwindow__add(&w, AT(0) + 500, 1, 30);
	cr_assert_float_eq(w.slots[1].a, 2, 1e-9);
	cr_assert_float_eq(w.slots[1].b, 40, 1e-9);
	cwindow__free(&w);
}

/* RATE: errors / requests * 100; MEAN: sum / count; a late sample adds to its own slot. */
Test(cwindow, rate_and_mean_values)
{
	struct cwindow w;
	double v = -1;

	cr_assert_eq(cwindow__init(&w, 3, CWINDOW_RATE), 0);
	for (int i = 0; i < 4; i++)
		cwindow__add(&w, AT(0) + i * 100, 1, i == 2);
	cwindow__add(&w, AT(1), 2, 2);
	cwindow__add(&w, AT(0) + 800, 4, 0); /* late: into second 0 */
	expect(&w, (double[]){ NAN, 12.5, 100 }, 3);
	cr_assert_eq(cwindow__match(&w, 3, 2, 12.5, &v), 1);
	cr_assert_float_eq(v, 100, 1e-9);
	cr_assert_eq(cwindow__match(&w, 3, 2, 12.6, &v), 0);
	cwindow__free(&w);

	cr_assert_eq(cwindow__init(&w, 2, CWINDOW_MEAN), 0);
	cwindow__add(&w, AT(0), 1, 100);
	cwindow__add(&w, AT(0), 1, 200);
	cwindow__add(&w, AT(0), 1, 600);
	cwindow__add(&w, AT(1), 2, 5);
	expect(&w, (double[]){ 300, 2.5 }, 2);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 1);
	cr_assert_float_eq(v, 2.5, 1e-9);
	cwindow__free(&w);
}

/*
 * Each item is judged on its own Period: a 3-second item on a 10-slot window (shared with a
 * 10-second item of the same pid) looks at the newest 3 slots only. Upstream scans all 10
 * and finds the 3 old high values.
 */
Test(cwindow, own_period)
{
	struct cwindow w = latest(10);
	double v = -1;

	for (int s = 0; s < 10; s++)
		cwindow__add(&w, AT(s), s < 3 ? 90 : 10, 0);
	cr_assert_eq(cwindow__match(&w, 3, 2, 50, &v), 0);
	cr_assert_float_eq(v, -1, 0, "current set without a match");
	cr_assert_eq(cwindow__match(&w, 10, 3, 50, &v), 1);
	cr_assert_float_eq(v, 90, 1e-9);
	cr_assert_eq(cwindow__match(&w, 10, 4, 50, &v), 0);
	/* Now the newest 3 are high. */
	for (int s = 10; s < 13; s++)
		cwindow__add(&w, AT(s), 60 + s, 0);
	cr_assert_eq(cwindow__match(&w, 3, 3, 50, &v), 1);
	cr_assert_float_eq(v, 72, 1e-9);
	cwindow__free(&w);
}

/* current is the newest matching value; upstream reports the oldest. */
Test(cwindow, current_is_the_newest_match)
{
	struct cwindow w = latest(5);
	double v = -1;

	cwindow__add(&w, AT(0), 60, 0);
	cwindow__add(&w, AT(1), 70, 0);
	cwindow__add(&w, AT(2), 80, 0);
	cwindow__add(&w, AT(3), 10, 0);
	cr_assert_eq(cwindow__match(&w, 5, 3, 50, &v), 1);
	cr_assert_float_eq(v, 80, 1e-9);
	/* Fewer matches than count: no match, but current says the newest that did. */
	v = -1;
	cr_assert_eq(cwindow__match(&w, 5, 4, 50, &v), 0);
	cr_assert_float_eq(v, 80, 1e-9);
	cr_assert_eq(cwindow__match(&w, 5, 3, 50, NULL), 1);
	cwindow__free(&w);
}

/*
 * An empty slot never matches, whatever the threshold: upstream reads it as 0 (NaN for the
 * mean), so a threshold of 0 or below counts every gap.
 */
Test(cwindow, empty_slots_never_match)
{
	struct cwindow w = latest(3);
	double v = -1;

	cwindow__add(&w, AT(0), 0.5, 0);
	cwindow__add(&w, AT(2), 0.5, 0); /* second 1: no sample */
	cr_assert_eq(cwindow__match(&w, 3, 2, 0.0001, &v), 1);
	cr_assert_eq(cwindow__match(&w, 3, 3, 0.0001, &v), 0);
	cr_assert_eq(cwindow__match(&w, 3, 3, 0, &v), 0);
	cr_assert_eq(cwindow__match(&w, 3, 3, -1, &v), 0);
	cwindow__free(&w);

	/* Before any sample: nothing matches, current untouched. */
	w = latest(3);
	v = -1;
	cr_assert_eq(cwindow__match(&w, 3, 1, -1, &v), 0);
	cr_assert_float_eq(v, -1, 0);
	cwindow__free(&w);

	/* A RATE slot of 0 requests holds no value (upstream: 0 %). */
	cr_assert_eq(cwindow__init(&w, 2, CWINDOW_RATE), 0);
	cwindow__add(&w, AT(0), 0, 0);
	cwindow__add(&w, AT(1), 1, 0);
	cr_assert_eq(cwindow__match(&w, 2, 2, 0, &v), 0);
	cr_assert_eq(cwindow__match(&w, 2, 1, 0, &v), 1);
	cwindow__free(&w);

	/* A MEAN slot of 0 requests holds no value (upstream: NaN). */
	cr_assert_eq(cwindow__init(&w, 2, CWINDOW_MEAN), 0);
	cwindow__add(&w, AT(0), 0, 0);
	cwindow__add(&w, AT(1), 1, 0);
	cr_assert_eq(cwindow__match(&w, 2, 2, -1, &v), 0);
	cwindow__free(&w);
}

Test(cwindow, match_arguments)
{
	struct cwindow w = latest(3);
	double v = -1;

	for (int s = 0; s < 3; s++)
		cwindow__add(&w, AT(s), 100, 0);
	cr_assert_eq(cwindow__match(&w, 0, 1, 50, &v), 0);
	cr_assert_eq(cwindow__match(&w, 3, 0, 50, &v), 0);
	cr_assert_eq(cwindow__match(&w, 2, 3, 50, &v), 0);
	cr_assert_eq(cwindow__match(&w, 3600, 3, 50, &v), 1, "a longer period: the n slots");
	cr_assert_eq(cwindow__match(&w, 3, 3, NAN, &v), 0);
	cr_assert_eq(cwindow__match(&w, 3, 3, 100, &v), 1, ">= threshold");
	cwindow__free(&w);
}

Test(cwindow, non_finite_samples_dropped)
{
	struct cwindow w = latest(2);
	struct cwindow r;

	cwindow__add(&w, AT(0), NAN, 0);
	cr_assert_eq(w.started, 0);
	cwindow__add(&w, AT(0), 1, NAN); /* b unused by LATEST */
	cwindow__add(&w, AT(1), INFINITY, 0);
	expect(&w, (double[]){ NAN, 1 }, 2);
	cwindow__free(&w);

	cr_assert_eq(cwindow__init(&r, 2, CWINDOW_RATE), 0);
	cwindow__add(&r, AT(0), 1, 0);
	cwindow__add(&r, AT(0), 1, -INFINITY);
	cr_assert_float_eq(r.slots[1].a, 1, 0);
	cwindow__free(&r);
}

/* TestFlushData "normal[most recent]" and "has older data[most recent]". */
Test(cwindow, flush_newest_once_per_newest_slot)
{
	struct cwindow w = latest(3);
	double v = -1;

	cr_assert_eq(cwindow__flush_newest(&w, &v), 0, "nothing yet");
	cwindow__add(&w, AT(1), 1, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 1);
	cr_assert_float_eq(v, 1, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0);
	cwindow__add(&w, AT(1) + 500, 9, 0); /* same slot */
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0);
	cwindow__add(&w, AT(2), 2, 0);
	cwindow__add(&w, AT(3), 3, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 1);
	cr_assert_float_eq(v, 3, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0);

	cwindow__add(&w, AT(4), 4, 0);
	cwindow__add(&w, AT(1), 9, 0); /* dropped */
	cwindow__add(&w, AT(3), 8, 0); /* late, into second 3 */
	cr_assert_eq(cwindow__flush_newest(&w, &v), 1);
	cr_assert_float_eq(v, 4, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0);
	cwindow__free(&w);

	/* A newest RATE slot with no request has nothing to flush, once. */
	cr_assert_eq(cwindow__init(&w, 2, CWINDOW_RATE), 0);
	cwindow__add(&w, AT(0), 0, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0);
	cwindow__add(&w, AT(0), 2, 1);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0, "same slot: already flushed");
	cwindow__add(&w, AT(1), 2, 1);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 1);
	cr_assert_float_eq(v, 50, 1e-9);
	cwindow__free(&w);
}

/* Resizing keeps the newest slots; upstream adds and drops at the newest end. */
Test(cwindow, resize_keeps_the_newest)
{
	struct cwindow w = latest(5);
	double v = -1;

	for (int s = 1; s <= 5; s++)
		cwindow__add(&w, AT(s), s, 0);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 1);
	cr_assert_eq(cwindow__resize(&w, 3), 0);
	expect(&w, (double[]){ 3, 4, 5 }, 3);
	cr_assert_eq(cwindow__flush_newest(&w, &v), 0, "the newest slot was flushed already");
	cr_assert_eq(cwindow__resize(&w, 6), 0);
	expect(&w, (double[]){ NAN, NAN, NAN, 3, 4, 5 }, 6);
	cr_assert_eq(cwindow__match(&w, 2, 2, 4, &v), 1);
	cwindow__add(&w, AT(6), 6, 0);
	cwindow__add(&w, AT(2), 2, 0); /* the slot of second 2 came back empty */
	expect(&w, (double[]){ NAN, 2, 3, 4, 5, 6 }, 6);
	cr_assert_eq(cwindow__resize(&w, 6), 0);
	cr_assert_eq(cwindow__resize(&w, 0), -EINVAL);
	cr_assert_eq(cwindow__resize(&w, CWINDOW_MAX_SLOTS + 1), -EINVAL);
	expect(&w, (double[]){ NAN, 2, 3, 4, 5, 6 }, 6);
	cr_assert_eq(cwindow__resize(&w, 1), 0);
	expect(&w, (double[]){ 6 }, 1);
	cwindow__free(&w);
}

Test(cwindow, init_bounds)
{
	struct cwindow w;

	cr_assert_eq(cwindow__init(&w, 0, CWINDOW_LATEST), -EINVAL);
	cr_assert_eq(cwindow__init(&w, CWINDOW_MAX_SLOTS + 1, CWINDOW_LATEST), -EINVAL);
	cr_assert_eq(cwindow__init(&w, 3, (enum cwindow_agg)7), -EINVAL);
	cr_assert_eq(cwindow__init(&w, CWINDOW_MAX_SLOTS, CWINDOW_MEAN), 0);
	cr_assert_eq(w.n, CWINDOW_MAX_SLOTS);
	cr_assert_eq(w.started, 0);
	cr_assert_eq(w.flushed, 0);
	/* A whole hour of samples, then one more: the first goes. */
	for (int s = 0; s <= CWINDOW_MAX_SLOTS; s++)
		cwindow__add(&w, AT(s), 1, s);
	cr_assert_float_eq(w.slots[0].b, 1, 0);
	cr_assert_float_eq(w.slots[CWINDOW_MAX_SLOTS - 1].b, CWINDOW_MAX_SLOTS, 0);
	cr_assert_eq(cwindow__match(&w, CWINDOW_MAX_SLOTS, CWINDOW_MAX_SLOTS, 1, NULL), 1);
	cwindow__free(&w);
}
