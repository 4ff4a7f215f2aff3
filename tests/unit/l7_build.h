/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit test helper: the one byte builder the parsers' tests make hand-built messages with (what
 * real peers do not send): bytes appended, integers of 1 to 8 bytes in either byte order,
 * varints, lengths patched in once known, and the whole fed through the interface as one
 * segment (tests/unit/l7_replay.h). Each protocol's test builds its framing on these.
 */
#ifndef ROVER_TESTS_L7_BUILD_H
#define ROVER_TESTS_L7_BUILD_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/l7_replay.h"

struct l7b {
	uint8_t b[1 << 18];
	size_t n;
};

static inline struct l7b *l7b_new(void)
{
	struct l7b *b = calloc(1, sizeof(*b));

	cr_assert(b);
	return b;
}

static inline void l7b_put(struct l7b *b, const void *p, size_t n)
{
	cr_assert_leq(n, sizeof(b->b) - b->n);
	if (n)
		memcpy(b->b + b->n, p, n);
	b->n += n;
}

/* A string literal, its NUL excluded. */
#define L7B_LIT(b, lit) l7b_put(b, lit, sizeof(lit) - 1)

/* v in its `bytes` low bytes at b->b[at], most significant first (be) or last (le). */
static inline void l7b_patch_be(struct l7b *b, size_t at, uint64_t v, unsigned bytes)
{
	cr_assert_leq(at + bytes, b->n);
	for (unsigned i = 0; i < bytes; i++)
		b->b[at + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

static inline void l7b_patch_le(struct l7b *b, size_t at, uint64_t v, unsigned bytes)
{
	cr_assert_leq(at + bytes, b->n);
	for (unsigned i = 0; i < bytes; i++)
		b->b[at + i] = (uint8_t)(v >> (8 * i));
}

static inline void l7b_be(struct l7b *b, uint64_t v, unsigned bytes)
{
	cr_assert_leq(bytes, sizeof(b->b) - b->n);
	b->n += bytes;
	l7b_patch_be(b, b->n - bytes, v, bytes);
}

static inline void l7b_le(struct l7b *b, uint64_t v, unsigned bytes)
{
	cr_assert_leq(bytes, sizeof(b->b) - b->n);
	b->n += bytes;
	l7b_patch_le(b, b->n - bytes, v, bytes);
}

/* Unsigned LEB128: 7 bits a byte, least significant first. */
static inline void l7b_uvarint(struct l7b *b, uint64_t v)
{
	while (v >= 0x80) {
		l7b_le(b, (v & 0x7f) | 0x80, 1);
		v >>= 7;
	}
	l7b_le(b, v, 1);
}

/* What b holds as one segment of dir, captured whole. */
static inline void l7b_feed(struct l7r_run *r, enum l7_dir dir, uint64_t ts, const struct l7b *b)
{
	l7r_seg(r, dir, ts, b->b, b->n, b->n);
}

/* The same, b then empty. */
static inline void l7b_send(struct l7r_run *r, enum l7_dir dir, uint64_t ts, struct l7b *b)
{
	l7b_feed(r, dir, ts, b);
	b->n = 0;
}

#endif
