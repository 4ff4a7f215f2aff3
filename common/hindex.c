// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include "common/hindex.h"

void hindex__free(struct hindex *x)
{
	free(x->slots);
	x->slots = NULL;
	x->mask = 0;
	x->n = 0;
}

static void place(uint32_t *slots, size_t mask, uint64_t h, uint32_t item)
{
	size_t i = h & mask;

	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = item + 1;
}

int hindex__reserve(struct hindex *x, size_t min_slots,
		    uint64_t (*hash_of)(const void *ctx, uint32_t item), const void *ctx)
{
	size_t cap = x->slots ? x->mask + 1 : 0, want = cap;
	uint32_t *slots;

	while (want < min_slots || (size_t)(x->n + 1) * 2 > want)
		want = want ? want * 2 : 2;
	if (want == cap)
		return 0;
	slots = calloc(want, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t item = 0; item < x->n; item++)
		place(slots, want - 1, hash_of(ctx, item), item);
	free(x->slots);
	x->slots = slots;
	x->mask = want - 1;
	return 0;
}

void hindex__put(struct hindex *x, uint64_t h, uint32_t item)
{
	place(x->slots, x->mask, h, item);
	x->n++;
}

size_t hindex__start(const struct hindex *x, uint64_t h)
{
	return h & x->mask;
}

uint32_t hindex__next(const struct hindex *x, size_t *pos)
{
	uint32_t slot;

	if (!x->slots)
		return 0;
	slot = x->slots[*pos];
	*pos = (*pos + 1) & x->mask;
	return slot;
}
