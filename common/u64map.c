// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include "common/u64map.h"

static uint32_t slot_of(uint64_t key, uint32_t cap)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* The slot holding key, or the empty one where it would go; cap > 0. */
static uint32_t find(const struct u64map *m, uint64_t key)
{
	uint32_t i = slot_of(key, m->cap);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

void u64map__free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct u64map){ 0 };
}

int u64map__reserve(struct u64map *m, uint32_t more, uint32_t max)
{
	struct u64map g = { 0 };
	uint32_t cap = m->cap ? m->cap : 256;

	if (more > max || m->n > max - more)
		return -ENOSPC;
	while ((uint64_t)(m->n + more) * 2 > cap)
		cap *= 2;
	if (cap == m->cap)
		return 0;
	g.cap = cap;
	g.keys = calloc(cap, sizeof(*g.keys));
	g.vals = malloc(cap * sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		u64map__free(&g);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			u64map__add(&g, m->keys[i], m->vals[i]);
	u64map__free(m);
	*m = g;
	return 0;
}

int u64map__add(struct u64map *m, uint64_t key, uint32_t val)
{
	uint32_t i = find(m, key);

	if (m->keys[i])
		return 0;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 1;
}

int u64map__get(const struct u64map *m, uint64_t key, uint32_t *ret_val)
{
	uint32_t i;

	if (!m->cap || !key)
		return 0;
	i = find(m, key);
	if (!m->keys[i])
		return 0;
	*ret_val = m->vals[i];
	return 1;
}
