// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a file a shipper hands over as a target's libjvm.so, as the worker reads
 * HotSpot's tables from it (worker/jvmstructs.c jvmstructs__file: ELF and program headers,
 * PT_DYNAMIC, the dynamic symbols, every dynamic relocation twice, the static initializers'
 * code, the four tables and their names), all with pread from a memfd.
 *
 * worker/jvmstructs.c is compiled into this target with pread counted: besides sanitizer
 * reports, it aborts on an errno that worker/jvmstructs.h does not list, on more bytes read
 * than JVMSTRUCTS_MAX_READ, on a failure without a reason, and on an accepted layout that the
 * walker could not use: a field past 0x8000, a JDK before 9, interpreter slots other than
 * x86-64's. Seeds are small files built from the layouts of this machine's JDKs
 * (tests/fuzz/seed_jvm.c, tests/unit/jvm_build.h), not the 20 MB libraries.
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
#include "worker/jvmstructs.c"
#undef pread

static void check_layout(const struct jvm_layout *l)
{
	const uint8_t *b = (const uint8_t *)l;

	for (unsigned int i = 0;; i++) {
		unsigned int at;
		int kind;
		struct jvm_field jf;

		if (!jvmstructs__entry(i, &kind, &at))
			break;
		if (kind != JVMS_FIELD || at >= sizeof(*l))
			continue;
		memcpy(&jf, b + at, sizeof(jf));
		if (jf.size && jf.off >= 0x8000) {
			fprintf(stderr, "entry %u at %u\n", i, jf.off);
			abort();
		}
	}
	if (l->major < 9 || l->interp.method != -3 || l->interp.bcp != -8) {
		fprintf(stderr, "accepted JDK %u\n", l->major);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct jvm_layout l;
	const char *why = NULL;
	int err;

	if (fd < 0) {
		fd = memfd_create("fuzz_jvmstructs", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	read_bytes = 0;
	err = jvmstructs__file(fd, &l, &why);
	if (read_bytes > JVMSTRUCTS_MAX_READ) {
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
			fprintf(stderr, "jvmstructs__file: %d without a reason\n", err);
			abort();
		}
		break;
	default:
		fprintf(stderr, "jvmstructs__file: %d (%s)\n", err, strerror(-err));
		abort();
	}
	return 0;
}
