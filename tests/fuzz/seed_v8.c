// SPDX-License-Identifier: Apache-2.0
/*
 * Seeds of fuzz_v8structs: this machine's node read as worker/v8structs.c reads it, written
 * back as small files (tests/unit/v8_build.h) that read the same, one exporting the symbols
 * through DT_HASH and one keeping them only in a static symbol table. Run by
 * `make fuzz-corpus`: seed_v8 OUTDIR NODE.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/unit/v8_build.h"
#include "worker/v8structs.h"

int main(int argc, char **argv)
{
	static const char *const names[] = { "node20.dynsym", "node20.symtab" };
	static struct vb v;
	struct v8_layout l;
	const char *why = "";
	int fd, err;

	if (argc != 3)
		return 2;
	fd = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: not here, skipped\n", argv[2]);
		return 0;
	}
	err = v8structs__file(fd, &l, &why);
	close(fd);
	if (err) {
		fprintf(stderr, "%s: %s (%d)\n", argv[2], why, err);
		return 1;
	}
	for (unsigned int mode = 0; mode < 2; mode++) {
		char out[4096];

		vb_build(&v, &l, mode ? VB_SYMTAB_ONLY : 0);
		snprintf(out, sizeof(out), "%s/%s", argv[1], names[mode]);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, v.b, v.len) != (ssize_t)v.len || close(fd))
			return 1;
	}
	return 0;
}
