// SPDX-License-Identifier: Apache-2.0
/* When the backend link's changes and the backend's bad answers are logged (common/linklog.h). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "common/linklog.h"

Test(linklog, an_outage_is_one_line_each_way)
{
	struct linklog l;
	unsigned quiet;

	linklog__init(&l);
	cr_expect_eq(linklog__change(&l, 1, 0, 1000, &quiet), 1);
	cr_expect_eq(linklog__change(&l, 1, 0, 2000, &quiet), 0, "no change, no line");
	cr_expect_eq(linklog__change(&l, 0, 14, 3000, &quiet), 1);
	cr_expect_eq(linklog__change(&l, 0, 14, 4000, &quiet), 0);
	cr_expect_eq(linklog__change(&l, 1, 0, 5000, &quiet), 1);
	cr_expect_eq(quiet, 0);
}

Test(linklog, a_backend_failing_call_after_call_is_said_once_per_code)
{
	struct linklog l;
	unsigned quiet, said = 0;
	uint64_t t = 1000;

	linklog__init(&l);
	/* 1000 changes in a minute with two codes: the free ones, then each code once. */
	for (int i = 0; i < 1000; i++, t += 60)
		said += (unsigned)linklog__change(&l, i % 2, i % 4 == 0 ? 4 : 1001, t, &quiet);
	cr_expect_leq(said, LINKLOG_FREE_CHANGES + 2, "%u lines", said);
	/* The first change of the next window says what was not said. */
	cr_expect_eq(linklog__change(&l, 0, 4, t + LINKLOG_WINDOW_MS, &quiet), 1);
	cr_expect_eq(quiet, 1000 - said);
	/* A new code is said even while damped. */
	for (int i = 0; i < 20; i++)
		linklog__change(&l, i % 2, 4, t + LINKLOG_WINDOW_MS + 1 + (uint64_t)i, NULL);
	cr_expect_eq(linklog__change(&l, 0, 13, t + LINKLOG_WINDOW_MS + 100, NULL), 1);
}

Test(linklog, a_text_is_said_once_and_new_texts_a_few_per_window)
{
	struct oncelog o = { 0 };
	unsigned quiet, said = 0;
	char text[32];

	cr_expect_eq(oncelog__say(&o, "same", 1, &quiet), 1);
	for (int i = 0; i < 100; i++)
		cr_expect_eq(oncelog__say(&o, "same", 2, &quiet), 0);
	for (int i = 0; i < 1000; i++) {
		snprintf(text, sizeof(text), "item %d", i);
		said += (unsigned)oncelog__say(&o, text, 3, &quiet);
	}
	cr_expect_eq(said, ONCELOG_PER_WINDOW - 1);
	cr_expect_eq(oncelog__say(&o, "later", 3 + LINKLOG_WINDOW_MS, &quiet), 1);
	cr_expect_eq(quiet, 1000 - said);
}
