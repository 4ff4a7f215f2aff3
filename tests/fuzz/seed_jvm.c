// SPDX-License-Identifier: Apache-2.0
/*
 * Seeds of fuzz_jvmstructs: for each libjvm.so named, its layout as worker/jvmstructs.c reads
 * it, written back as a small libjvm (tests/unit/jvm_build.h) that reads the same. Run by
 * `make fuzz-corpus`: seed_jvm OUTDIR NAME=LIBJVM...
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/jvm_build.h"
#include "worker/jvmstructs.h"

int main(int argc, char **argv)
{
	static struct jb j;

	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '='), out[4096];
		struct jvm_layout l;
		const char *why = "";
		int fd, err;

		if (!eq)
			return 2;
		*eq = 0;
		fd = open(eq + 1, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "%s: not here, skipped\n", eq + 1);
			continue;
		}
		err = jvmstructs__file(fd, &l, &why);
		close(fd);
		if (err || jb_build(&j, &l)) {
			fprintf(stderr, "%s: %s (%d)\n", eq + 1, why, err);
			return 1;
		}
		snprintf(out, sizeof(out), "%s/%s", argv[1], argv[i]);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, j.b, j.len) != (ssize_t)j.len || close(fd))
			return 1;
	}
	return 0;
}
