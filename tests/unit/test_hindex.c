// SPDX-License-Identifier: Apache-2.0
/* common/hindex.c: items found by hash through growth, colliding hashes included. */
#include <criterion/criterion.h>

#include "common/hindex.h"

#define N 5000

static uint64_t hashes[N];

static uint64_t hash_of(const void *ctx, uint32_t item)
{
	(void)ctx;
	return hashes[item];
}

/* Whether item is among the candidates for its hash. */
static int found(const struct hindex *x, uint32_t item)
{
	size_t pos = hindex__start(x, hashes[item]);
	uint32_t slot;

	while ((slot = hindex__next(x, &pos)))
		if (slot == item + 1)
			return 1;
	return 0;
}

Test(hindex, every_item_is_found_after_each_growth)
{
	struct hindex x = { 0 };

	cr_assert_eq(hindex__next(&x, &(size_t){ 0 }), 0, "an empty index names nothing");
	for (uint32_t i = 0; i < N; i++) {
		/* A third of them share one hash: their run crosses every growth. */
		hashes[i] = i % 3 ? i * 0x9e3779b97f4a7c15ull : 42;
		cr_assert_eq(hindex__reserve(&x, 16, hash_of, NULL), 0);
		hindex__put(&x, hashes[i], i);
		cr_assert_leq((size_t)x.n * 2, x.mask + 1, "more than half full");
	}
	for (uint32_t i = 0; i < N; i++)
		cr_assert(found(&x, i), "item %u lost", i);
	hindex__free(&x);
	cr_assert_null(x.slots);
}

Test(hindex, starts_at_the_asked_size)
{
	struct hindex x = { 0 };

	hashes[0] = 7;
	cr_assert_eq(hindex__reserve(&x, 1000, hash_of, NULL), 0);
	cr_assert_eq(x.mask + 1, 1024);
	hindex__put(&x, 7, 0);
	cr_assert(found(&x, 0));
	hindex__free(&x);
}
