// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/msg.h"
#include "common/u64map.h"
#include "shipper/stacks/knames.h"

struct knames {
	struct u64map names; /* address -> name offset in strs */
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
	u64map__free(&k->names);
	free(k->strs);
	free(k);
}

/* Room for more entries and bytes of names. */
static int reserve(struct knames *k, uint32_t more, size_t bytes)
{
	int err = u64map__reserve(&k->names, more, KNAMES_MAX);

	if (err)
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

static int name_ok(const char *s, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (!ship_ksym_byte_ok(s[i]))
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

		memcpy(&r, p + o, sizeof(r));
		o += (uint32_t)(sizeof(r) + ((r.len + 7u) & ~7u));
		/* Named before: the first name stays. */
		if (!u64map__add(&k->names, r.addr, (uint32_t)k->strs_len))
			continue;
		memcpy(k->strs + k->strs_len, p + o - ((r.len + 7u) & ~7u), r.len);
		k->strs[k->strs_len + r.len] = '\0';
		k->strs_len += r.len + 1;
	}
	return 0;
}

int knames__get(const struct knames *k, uint64_t addr, const char **ret_name)
{
	uint32_t off;

	if (!k || !u64map__get(&k->names, addr, &off))
		return 0;
	*ret_name = k->strs + off;
	return 1;
}
