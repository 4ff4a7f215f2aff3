// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the text parsers of the symbolizer, all on the same input.
 *
 * - /proc/kallsyms text (shipper/stacks/kallsyms.c), through kallsyms__load() on a memfd, then
 *   lookups around every address the input names.
 * - /proc/PID/maps text (the static parser of shipper/stacks/symbolize.c), through the symbolizer with
 *   an opener that hands out the input as the maps of a fake pid, then user lookups around
 *   every mapping the input names. The mapped files themselves cannot be opened: names fall
 *   back to module+offset, which exercises the path handling.
 * - a JIT's perf map (/tmp/perf-PID.map, "START SIZE name" lines), handed out as the perf map
 *   of the same fake pid: addresses in no file mapping are named from it.
 *
 * The maps of a traced process are the kernel's, but their paths are chosen by whoever named
 * the files; a perf map is written by the traced process itself; kallsyms comes from the
 * launcher. None may crash or leak the shipper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shipper/stacks/kallsyms.h"
#include "shipper/stacks/symbolize.h"

#define FAKE_PID 4242
/* Addresses looked up per input, at most: a lookup is cheap, but inputs can have many lines. */
#define MAX_PROBES 64

struct input {
	const uint8_t *data;
	size_t size;
};

static int memfd_of(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	if (lseek(fd, 0, SEEK_SET) != 0)
		abort();
	return fd;
}

static int input_maps(void *ctx, int pid)
{
	const struct input *in = ctx;

	if (pid != FAKE_PID)
		abort();
	return memfd_of(in->data, in->size);
}

static int input_perf_map(void *ctx, int pid)
{
	const struct input *in = ctx;

	if (pid != FAKE_PID)
		abort();
	return memfd_of(in->data, in->size);
}

static int no_mapped_file(void *ctx, int pid, uint64_t start, uint64_t end)
{
	(void)ctx;
	(void)start;
	(void)end;
	if (pid != FAKE_PID)
		abort();
	return -ENOENT;
}

static int no_kallsyms(void *ctx)
{
	(void)ctx;
	return -ENOENT;
}

/* The leading hex number of each line, up to max of them: where the input says things are. */
static size_t line_addrs(const uint8_t *data, size_t size, uint64_t *ret, size_t max)
{
	size_t n = 0, i = 0;

	while (i < size && n < max) {
		uint64_t v = 0;
		size_t digits = 0;

		/* Perf maps may write "0x". */
		if (size - i > 2 && data[i] == '0' && (data[i + 1] | 0x20) == 'x')
			i += 2;
		for (; i < size && digits < 16; i++, digits++) {
			uint8_t c = data[i];

			if (c >= '0' && c <= '9')
				v = v << 4 | (uint64_t)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v = v << 4 | (uint64_t)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				v = v << 4 | (uint64_t)(c - 'A' + 10);
			else
				break;
		}
		if (digits)
			ret[n++] = v;
		while (i < size && data[i] != '\n')
			i++;
		i++;
	}
	return n;
}

static void check_name(const char *buf, size_t len)
{
	/* Always terminated inside the buffer, never empty. */
	if (!memchr(buf, '\0', len) || !buf[0])
		abort();
}

static void fuzz_kallsyms(const uint8_t *data, size_t size, const uint64_t *addrs, size_t n)
{
	static const int64_t deltas[] = { -1, 0, 1, 0x10000 };
	struct kallsyms *ks;
	int fd = memfd_of(data, size);

	ks = kallsyms__load(fd);
	close(fd);
	if (!ks) {
		if (errno != ENODATA && errno != EFBIG) {
			fprintf(stderr, "kallsyms__load: unexpected %s\n", strerror(errno));
			abort();
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
			const char *name = kallsyms__lookup(ks, addrs[i] + (uint64_t)deltas[k]);

			/* Names are never empty, and contain neither a blank nor a line break. */
			if (name && (!name[0] || strpbrk(name, " \n")))
				abort();
		}
	}
	(void)kallsyms__lookup(ks, 0);
	(void)kallsyms__lookup(ks, UINT64_MAX);
	kallsyms__free(ks);
}

static void fuzz_maps(const uint8_t *data, size_t size, const uint64_t *addrs, size_t n)
{
	struct input in = { data, size };
	struct fd_opener op = {
		.open_maps = input_maps,
		.open_mapped_file = no_mapped_file,
		.open_kallsyms = no_kallsyms,
		.ctx = &in,
		.open_perf_map = input_perf_map,
	};
	struct symbolizer *sym = symbolizer__new(&op, 0);
	char buf[256];
	int err;

	if (!sym)
		abort();
	err = symbolizer__load_pid(sym, FAKE_PID);
	if (err && err != -EFBIG) {
		fprintf(stderr, "symbolizer__load_pid: unexpected %s\n", strerror(-err));
		abort();
	}
	for (size_t i = 0; i < n; i++) {
		/* The start of a mapping, inside it, and its last byte if it was 4 KiB. */
		static const uint64_t deltas[] = { 0, 1, 0xfff };

		for (size_t k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
			if (symbolizer__user(sym, FAKE_PID, addrs[i] + deltas[k], buf,
					     sizeof(buf)) < 0)
				abort();
			check_name(buf, sizeof(buf));
		}
	}
	/* A tiny buffer truncates; none at all writes nothing. */
	if (n) {
		if (symbolizer__user(sym, FAKE_PID, addrs[0], buf, 3) < 0)
			abort();
		check_name(buf, 3);
		(void)symbolizer__user(sym, FAKE_PID, addrs[0], NULL, 0);
	}
	symbolizer__forget_pid(sym, FAKE_PID);
	symbolizer__free(sym);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t addrs[MAX_PROBES];
	size_t n = line_addrs(data, size, addrs, MAX_PROBES);

	fuzz_kallsyms(data, size, addrs, n);
	fuzz_maps(data, size, addrs, n);
	return 0;
}
