// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/msg.h"
#include "common/stackcount.h"
#include "common/u64map.h"
#include "worker/ksyms.h"

/*
 * Addresses named in one task, at most (the shipper's KNAMES_MAX): a task's kernel frames are
 * a few thousand addresses; past this the shipper names the rest from kallsyms (nothing is
 * lost, it costs more).
 */
#define SEEN_MAX (1u << 15)

struct ksym_namer {
	int prog_fd;
	uint64_t *addrs; /* the program's arrays, in the mmapped .bss */
	int32_t *lens;
	char (*out)[SC_KSYM_SLOT];
	struct u64map seen; /* addresses wanted once (values unused) */
	uint64_t *want;
	uint32_t nwant;
	int broken;
};

struct ksym_namer *ksym_namer__new(struct bpf_program *prog, uint64_t *addrs, int32_t *lens,
				   char (*out)[SC_KSYM_SLOT])
{
	struct ksym_namer *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->prog_fd = bpf_program__fd(prog);
	k->addrs = addrs;
	k->lens = lens;
	k->out = out;
	k->want = malloc(SEEN_MAX * sizeof(*k->want));
	if (k->prog_fd < 0 || !k->want) {
		ksym_namer__free(k);
		errno = ENOMEM;
		return NULL;
	}
	return k;
}

void ksym_namer__free(struct ksym_namer *k)
{
	if (!k)
		return;
	u64map__free(&k->seen);
	free(k->want);
	free(k);
}

/* 1 when addr was never wanted (and now is), 0 when it was or the set is full. */
static int seen_add(struct ksym_namer *k, uint64_t addr)
{
	return !u64map__reserve(&k->seen, 1, SEEN_MAX) && u64map__add(&k->seen, addr, 0);
}

void ksym_namer__want(struct ksym_namer *k, const uint64_t *ips, uint32_t n)
{
	if (!k || k->broken)
		return;
	for (uint32_t i = 0; i < n; i++)
		if (ips[i] && seen_add(k, ips[i]))
			k->want[k->nwant++] = ips[i];
}

/* A name the kernel printed: symbol characters only (no separator of the folded format). */
static size_t name_len(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && ship_ksym_byte_ok(s[n]))
		n++;
	return n;
}

/* One run of the program over addrs[0..n); its names into b. */
static int name_run(struct ksym_namer *k, uint32_t n, struct ship_batch *b)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int err;

	if (n < SC_KSYM_BATCH)
		k->addrs[n] = 0;
	if (bpf_prog_test_run_opts(k->prog_fd, &opts))
		return -errno;
	for (uint32_t i = 0; i < n; i++) {
		const char *name = k->out[i];
		size_t len;

		/* Cut (a name longer than a slot) or failed: left for kallsyms. */
		if (k->lens[i] <= 0 || k->lens[i] > SC_KSYM_SLOT)
			continue;
		len = name_len(name, (size_t)k->lens[i] - 1);
		/* "0x..." is the kernel saying it has no symbol there. */
		if (len > 2 && name[0] == '0' && name[1] == 'x')
			len = 0;
		err = ship_batch_add_ksym(b, k->addrs[i], name, len);
		if (err)
			return err;
	}
	return 0;
}

int ksym_namer__name(struct ksym_namer *k, struct ship_batch *b)
{
	uint32_t done = 0;
	int err;

	if (!k || k->broken)
		return 0;
	while (done < k->nwant) {
		uint32_t n = k->nwant - done < SC_KSYM_BATCH ? k->nwant - done : SC_KSYM_BATCH;

		memcpy(k->addrs, k->want + done, n * sizeof(uint64_t));
		err = name_run(k, n, b);
		if (err == -ENOMEM)
			return err;
		if (err) {
			log_warn("naming kernel frames with the kernel's lookup: %s; the shipper "
				 "reads kallsyms instead",
				 strerror(-err));
			k->broken = 1;
			break;
		}
		done += n;
	}
	k->nwant = 0;
	return 0;
}
