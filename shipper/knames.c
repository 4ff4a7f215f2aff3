// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/msg.h"
#include "shipper/knames.h"

struct kname {
	uint64_t addr; /* 0: an empty slot (no kernel text is at 0) */
	uint32_t name; /* offset in strs */
};

struct knames {
	struct kname *slots;
	uint32_t cap, n;
	char *strs;
	size_t strs_len, strs_cap;
};

struct knames *knames__new(void)
{
	return calloc(1, sizeof(struct knames));
}

void knames__free(struct knames *k)
{
	if (!k)
		return;
	free(k->slots);
	free(k->strs);
	free(k);
}

static uint32_t slot_of(uint64_t addr, uint32_t cap)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct kname *find(const struct knames *k, uint64_t addr)
{
	if (!k->cap)
		return NULL;
	for (uint32_t i = slot_of(addr, k->cap);; i = (i + 1) & (k->cap - 1)) {
		if (k->slots[i].addr == addr || !k->slots[i].addr)
			return &k->slots[i];
	}
}

static int grow_slots(struct knames *k, uint32_t cap)
{
	struct kname *grown = calloc(cap, sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	for (uint32_t i = 0; i < k->cap; i++) {
		uint32_t j;

		if (!k->slots[i].addr)
			continue;
		for (j = slot_of(k->slots[i].addr, cap); grown[j].addr; j = (j + 1) & (cap - 1))
			;
		grown[j] = k->slots[i];
	}
	free(k->slots);
	k->slots = grown;
	k->cap = cap;
	return 0;
}

/* Room for more entries and bytes of names: the table stays at most half full. */
static int reserve(struct knames *k, uint32_t more, size_t bytes)
{
	uint32_t cap = k->cap ? k->cap : 256;
	int err;

	if (k->n + more > KNAMES_MAX)
		return -ENOSPC;
	while ((k->n + more) * 2 > cap)
		cap *= 2;
	if (cap != k->cap && (err = grow_slots(k, cap)))
		return err;
	if (k->strs_len + bytes > k->strs_cap) {
		size_t scap = k->strs_cap ? k->strs_cap : 4096;
		char *p;

		while (k->strs_len + bytes > scap)
			scap *= 2;
		p = realloc(k->strs, scap);
		if (!p)
			return -ENOMEM;
		k->strs = p;
		k->strs_cap = scap;
	}
	return 0;
}

/* Bytes a kernel symbol has: what the worker keeps (worker/ksyms.c), and never ';'. */
static int name_ok(const char *s, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == ';')
			return 0;
	return 1;
}

/* Checked whole before anything of it is kept. */
int knames__add_frame(struct knames *k, uint64_t task_id, const void *buf, size_t len)
{
	const struct ship_ksyms_hdr *hdr = buf;
	const uint8_t *p = buf;
	size_t off = sizeof(*hdr), bytes = 0;
	int err;

	if (len < sizeof(*hdr) || hdr->task_id != task_id || hdr->pad)
		return -EPROTO;
	for (uint32_t i = 0; i < hdr->count; i++) {
		struct ship_ksym r;

		if (len - off < sizeof(r))
			return -EPROTO;
		memcpy(&r, p + off, sizeof(r));
		if (!r.addr || r.pad || r.len > SHIP_KSYM_NAME_MAX ||
		    len - off - sizeof(r) < ((r.len + 7u) & ~7u) ||
		    !name_ok((const char *)p + off + sizeof(r), r.len))
			return -EPROTO;
		off += sizeof(r) + ((r.len + 7u) & ~7u);
		bytes += r.len + 1;
	}
	if (off != len)
		return -EPROTO;
	err = reserve(k, hdr->count, bytes);
	if (err)
		return err;
	for (uint32_t i = 0, o = sizeof(*hdr); i < hdr->count; i++) {
		struct ship_ksym r;
		struct kname *slot;

		memcpy(&r, p + o, sizeof(r));
		o += (uint32_t)(sizeof(r) + ((r.len + 7u) & ~7u));
		slot = find(k, r.addr);
		if (slot->addr)
			continue; /* named before: the first name stays */
		slot->addr = r.addr;
		slot->name = (uint32_t)k->strs_len;
		memcpy(k->strs + k->strs_len, p + o - ((r.len + 7u) & ~7u), r.len);
		k->strs[k->strs_len + r.len] = '\0';
		k->strs_len += r.len + 1;
		k->n++;
	}
	return 0;
}

int knames__get(const struct knames *k, uint64_t addr, const char **ret_name)
{
	const struct kname *slot;

	if (!k || !addr)
		return 0;
	slot = find(k, addr);
	if (!slot || !slot->addr)
		return 0;
	*ret_name = k->strs + slot->name;
	return 1;
}
