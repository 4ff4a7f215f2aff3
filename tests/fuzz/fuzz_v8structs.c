// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a file a shipper hands over as a target's node executable, as the worker
 * reads V8's v8dbg_ globals from it (worker/v8structs.c v8structs__file: ELF and program
 * headers, PT_DYNAMIC, the dynamic symbols' hash chains, or the section headers and the static
 * symbol table, and each symbol's value in its segment), all with pread from a memfd.
 *
 * worker/v8structs.c is compiled into this target with pread counted: besides sanitizer
 * reports, it aborts on an errno that worker/v8structs.h does not list, on more bytes read
 * than V8STRUCTS_MAX_READ, on a failure without a reason, and on an accepted layout the walker
 * could not use: frame slots that are not words, a tagging other than 64-bit V8's, a V8 other
 * than the checked one. Seeds are small files built from this machine's node
 * (tests/fuzz/seed_v8.c, tests/unit/v8_build.h), not the 95 MB executable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/counted_pread.h"

#define pread counted_pread
#include "worker/elffile.c"
#include "worker/v8structs.c"
#undef pread

static void check_layout(const struct v8_layout *l)
{
	if (l->major != 11 || l->minor != 3 || l->tagged_size != 8 || l->heap_object_tag != 1 ||
	    l->smi_shift_size != 31 || l->fp_function % 8 || !l->fp_function ||
	    l->fp_bytecode_offset % 8 || l->js_function_code != 48 ||
	    l->type_js_function_last < l->type_js_function_first) {
		fprintf(stderr, "accepted V8 %u.%u, tagged %u, fp_function %d\n", l->major,
			l->minor, l->tagged_size, l->fp_function);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct v8_layout l;
	const char *why = NULL;
	int err;

	if (fd < 0) {
		fd = memfd_create("fuzz_v8structs", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	read_bytes = 0;
	err = v8structs__file(fd, &l, &why);
	if (read_bytes > V8STRUCTS_MAX_READ) {
		fprintf(stderr, "%llu bytes read\n", (unsigned long long)read_bytes);
		abort();
	}
	switch (-err) {
	case 0:
		check_layout(&l);
		break;
	case EBADF:
	case ENOEXEC:
	case ENOENT:
	case EPROTONOSUPPORT:
	case E2BIG:
	case ENOMEM:
		if (!why || !why[0]) {
			fprintf(stderr, "v8structs__file: %d without a reason\n", err);
			abort();
		}
		break;
	default:
		fprintf(stderr, "v8structs__file: %d (%s)\n", err, strerror(-err));
		abort();
	}
	return 0;
}
