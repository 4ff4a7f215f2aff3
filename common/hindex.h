/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An open-addressing index of items by a 64-bit hash of their content, for tables whose
 * items the caller compares itself (the shipper's profile strings and stacks): slots hold
 * item numbers + 1, at most half full, linear probing. Items are never removed. For integer
 * keys with one value each, common/u64map.h. Zero-initialised is empty.
 */
#ifndef ROVER_COMMON_HINDEX_H
#define ROVER_COMMON_HINDEX_H

#include <stddef.h>
#include <stdint.h>

struct hindex {
	uint32_t *slots;
	size_t mask; /* slots - 1, a power of two minus one; 0 while empty */
	uint32_t n;
};

void hindex__free(struct hindex *x);
/*
 * Room for one more item (at least min_slots slots, a power of two): when it would be more
 * than half full the slots double and every item is placed again by hash_of(ctx, item).
 * 0 or -ENOMEM (the index unchanged).
 */
int hindex__reserve(struct hindex *x, size_t min_slots,
		    uint64_t (*hash_of)(const void *ctx, uint32_t item), const void *ctx);
/* Adds item under hash h; reserve first. */
void hindex__put(struct hindex *x, uint64_t h, uint32_t item);
/*
 * The items that may have hash h, one at a time: *pos starts at hindex__start(x, h);
 * hindex__next returns item + 1, or 0 once the run ends (then none matched).
 */
size_t hindex__start(const struct hindex *x, uint64_t h);
uint32_t hindex__next(const struct hindex *x, size_t *pos);

#endif
