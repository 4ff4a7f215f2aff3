/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An open-addressing map of nonzero 64-bit keys to 32-bit values, kept at most half full and
 * bounded: the worker's set of kernel addresses it named (worker/ksyms.c), the shipper's
 * names of them (shipper/stacks/knames.c). Zero-initialised is empty.
 */
#ifndef ROVER_COMMON_U64MAP_H
#define ROVER_COMMON_U64MAP_H

#include <stdint.h>

struct u64map {
	uint64_t *keys; /* 0: an empty slot */
	uint32_t *vals;
	uint32_t cap, n;
};

void u64map__free(struct u64map *m);
/* Room for `more` keys beyond n, max keys in all: 0, -ENOSPC past max, -ENOMEM. */
int u64map__reserve(struct u64map *m, uint32_t more, uint32_t max);
/* 1 when key (nonzero) was added with val, 0 when it was there (its value kept); reserve first. */
int u64map__add(struct u64map *m, uint64_t key, uint32_t val);
/* 1 and *ret_val when key is there, else 0. */
int u64map__get(const struct u64map *m, uint64_t key, uint32_t *ret_val);

#endif
