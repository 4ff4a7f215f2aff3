// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a file a shipper hands over as a target's CPython interpreter, as the
 * worker checks it (worker/pyattach.c pyattach__file: ELF and program headers, PT_DYNAMIC, the
 * dynamic symbol table through DT_GNU_HASH or DT_HASH, Py_Version and 3.13's debug offsets, all
 * read with pread from the descriptor, a memfd here as the launcher's descriptor is a file).
 *
 * worker/pyattach.c is compiled into this target (the fuzz build takes the shipper's sources,
 * not the worker's), with pread counted: besides sanitizer reports, it aborts on an errno that
 * worker/pyattach.h does not list, on more bytes read than the check's budget, and on an
 * accepted file whose offsets would send the programs' reads of a code object out of their
 * window, or whose _PyRuntime lies before the file's first page.
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
#include "worker/pyattach.c"
#include "worker/pyoffsets.c"
#undef pread

#define START 0x7f0000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct py_proc p;
	int err;

	if (fd < 0) {
		fd = memfd_create("fuzz_pyattach", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	read_bytes = 0;
	err = pyattach__file(fd, START, &p);
	if (read_bytes > PYATTACH_MAX_READ) {
		fprintf(stderr, "%llu bytes read\n", (unsigned long long)read_bytes);
		abort();
	}
	switch (-err) {
	case 0:
		if (!pyoffsets__find(p.o.version) || !code_window_ok(&p.o) || p.start != START ||
		    p.size != size || p.runtime) {
			fprintf(stderr, "accepted: version %#x, size %llu\n", p.o.version,
				(unsigned long long)p.size);
			abort();
		}
		break;
	case EBADF:
	case ENOEXEC:
	case ENOENT:
	case EPROTONOSUPPORT:
	case E2BIG:
	case EFAULT:
		break;
	default:
		fprintf(stderr, "pyattach__file: %d (%s)\n", err, strerror(-err));
		abort();
	}
	return 0;
}
