// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a worker sends as MSG_SHIP_SNAPSHOTS (registers, kernel stack, user
 * stack bytes), unwound with the CFI of a mapped file whose bytes come from the input too: a
 * target process chooses both its stack contents and the files it maps.
 *
 * Input: 2 bytes little-endian N, N bytes served as the file mapped at 0x400000-0x500000 of
 * pid 42, then the MSG_SHIP_SNAPSHOTS payload handed to ship_task__snapshots() as
 * shipper/main.c does. Nothing may crash, leak or read out of bounds; a malformed payload is
 * refused with -EPROTO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/msg.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/task.h"
#include "shipper/stacks/unwind.h"

#define FUZZ_PID 42

static const char fake_maps[] = "00400000-00500000 r-xp 00000000 08:01 4242 /usr/bin/fuzzed\n";
static const char fake_kallsyms[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000100 T fuzz_kernel_fn\n"
				    "ffffffff82000000 D _etext\n";

static const uint8_t *file_data;
static size_t file_len;

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static int fake_open_maps(void *ctx, int pid)
{
	(void)ctx;
	(void)pid;
	return memfd_with(fake_maps, strlen(fake_maps));
}

static int fake_open_mapped_file(void *ctx, int pid, uint64_t start, uint64_t end)
{
	(void)ctx;
	(void)pid;
	(void)start;
	(void)end;
	return memfd_with(file_data, file_len);
}

static int fake_open_kallsyms(void *ctx)
{
	(void)ctx;
	return memfd_with(fake_kallsyms, strlen(fake_kallsyms));
}

static const struct fd_opener fake_opener = {
	.open_maps = fake_open_maps,
	.open_mapped_file = fake_open_mapped_file,
	.open_kallsyms = fake_open_kallsyms,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_spec spec = { .type = TASK_ON_CPU,
				  .format = FORMAT_FOLDED,
				  .npids = 1,
				  .pids = { FUZZ_PID },
				  .period_us = 10000 };
	struct ship_snapshots_hdr hdr;
	struct symbolizer *sym;
	struct unwinder *unw;
	struct ship_task *t;
	uint8_t *payload;
	size_t n, plen, nh;
	struct msg_stack_hint hints[ROVER_MAX_PIDS];
	int err;

	if (size < 2)
		return 0;
	n = (size_t)data[0] | (size_t)data[1] << 8;
	if (n > size - 2)
		return 0;
	file_data = data + 2;
	file_len = n;
	plen = size - 2 - n;
	/* A copy of its own size, so that reads past the payload are caught. */
	payload = malloc(plen ? plen : 1);
	if (!payload)
		return 0;
	memcpy(payload, data + 2 + n, plen);
	sym = symbolizer__new(&fake_opener, 0);
	unw = sym ? unwinder__new(sym) : NULL;
	if (!unw)
		abort();
	/* The task the payload claims, so that the fuzzer gets past the task check. */
	spec.task_id = 1;
	if (plen >= sizeof(hdr)) {
		memcpy(&hdr, payload, sizeof(hdr));
		spec.task_id = hdr.task_id ? hdr.task_id : 1;
	}
	t = ship_task__new(spec.task_id);
	if (!t || ship_task__begin(t, &spec, sym))
		abort();
	(void)unwinder__load_pid(unw, FUZZ_PID);
	err = ship_task__snapshots(t, payload, plen, sym, unw);
	if (err && err != -EPROTO && err != -ENOMEM) {
		fprintf(stderr, "ship_task__snapshots: %d (%s)\n", err, strerror(-err));
		abort();
	}
	/* Hints for the task's own targets only, within a snapshot's bounds. */
	nh = ship_task__stack_hints(t, hints, ROVER_MAX_PIDS);
	for (size_t i = 0; i < nh; i++)
		if (hints[i].tgid != FUZZ_PID || hints[i].bytes < SHIP_STACK_HINT_MIN ||
		    hints[i].bytes > SHIP_SNAPSHOT_MAX_STACK || hints[i].task_id != spec.task_id)
			abort();
	ship_task__free(t);
	unwinder__free(unw);
	symbolizer__free(sym);
	free(payload);
	return 0;
}
