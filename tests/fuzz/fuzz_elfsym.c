// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: an ELF file a traced process chose to map, as shipper/stacks/elfsym.c reads it
 * (elfsym__open_memory: the header checks, then libelf on a private copy), its build-id,
 * symbol tables and .gnu_debuglink, and lookups at addresses the file itself names.
 *
 * The debuglink search runs against a directory that does not exist, so the outcome does not
 * depend on this machine's files; the build-id search looks under /usr/lib/debug as it would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/stacks/elfsym.h"

#define MAX_PROBES 64
#define FAKE_PATH "/nonexistent-rover-fuzz/bin/prog"

static void probe(struct elfsym *es, uint64_t vaddr)
{
	char buf[128];
	int named;

	memset(buf, 'x', sizeof(buf));
	named = elfsym__name(es, vaddr, buf, sizeof(buf));
	if (named != 0 && named != 1)
		abort();
	if (named && (!memchr(buf, '\0', sizeof(buf)) || !buf[0]))
		abort(); /* a symbol is never shown without a name */
	/* A short buffer truncates, a missing one is not written. */
	if (named && elfsym__name(es, vaddr, buf, 2) != 1)
		abort();
	(void)elfsym__name(es, vaddr, NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *id;
	struct elfsym *es;
	size_t stride, idlen;
	uint8_t *copy;
	int err;

	/* libelf may convert in place, and a copy of the exact size lets ASan see overreads. */
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	es = elfsym__open_memory(copy, size);
	if (!es) {
		if (errno != ENOEXEC && errno != ENOMEM) {
			fprintf(stderr, "elfsym__open_memory: unexpected %s\n", strerror(errno));
			abort();
		}
		free(copy);
		return 0;
	}
	idlen = elfsym__build_id(es, &id);
	if (idlen > ELFSYM_BUILD_ID_MAX || (idlen && !id))
		abort();
	err = elfsym__load_symbols(es, FAKE_PATH);
	if (err && err != -ENOMEM && err != -EFBIG) {
		fprintf(stderr, "elfsym__load_symbols: unexpected %s\n", strerror(-err));
		abort();
	}
	/* The file is released: the copy must no longer be needed. */
	memset(copy, 0xa5, size);
	free(copy);
	if (elfsym__load_symbols(es, FAKE_PATH) != -EINVAL)
		abort();
	(void)elfsym__bytes(es);
	(void)elfsym__count(es);

	/* Addresses the input spells somewhere (symbol values among them), and around them. */
	stride = size / MAX_PROBES;
	stride = stride < 8 ? 8 : stride & ~(size_t)7;
	for (size_t off = 0; off + 8 <= size; off += stride) {
		uint64_t v;

		memcpy(&v, data + off, 8);
		probe(es, v);
		probe(es, v + 1);
		probe(es, v - 1);
		(void)elfsym__vaddr(es, v, v & ~(uint64_t)0xfff, off);
	}
	probe(es, 0);
	probe(es, UINT64_MAX);
	elfsym__free(es);
	return 0;
}
