// SPDX-License-Identifier: Apache-2.0
/*
 * check-unit-seccomp LIST FAMILIES MDWE CMD [ARG...]: runs CMD under an allowlist of system
 * calls, one name a line in LIST, every other call failing with EPERM; socket(2) only for the
 * address families in FAMILIES (numbers, comma-separated; "-" for any); MDWE "1" refuses
 * memory that is or becomes both writable and executable (PR_SET_MDWE). scripts/check-unit.sh
 * gives it what it read from deploy/systemd/rover.service (SystemCallFilter=,
 * SystemCallErrorNumber=EPERM, RestrictAddressFamilies=, MemoryDenyWriteExecute=), so the
 * unit's filters can be tried where systemd is not PID 1. Names this architecture does not
 * know are skipped, as systemd skips them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	char line[128];
	FILE *f;
	int nr, err, socket_listed = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: %s LIST FAMILIES MDWE CMD [ARG...]\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "re");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		nr = seccomp_syscall_resolve_name(line);
		if (nr == __NR_SCMP_ERROR)
			continue;
		if (nr == SCMP_SYS(socket) && strcmp(argv[2], "-")) {
			socket_listed = 1; /* allowed below, per family */
			continue;
		}
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (err) {
			fprintf(stderr, "%s: %s\n", line, strerror(-err));
			return 1;
		}
	}
	fclose(f);
	for (char *p = argv[2], *end; socket_listed && *p; p = end + (*end == ',')) {
		long fam = strtol(p, &end, 10);

		if (end == p)
			return 2;
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam));
		if (err)
			return 1;
	}
	/* PR_SET_MDWE (65), PR_MDWE_REFUSE_EXEC_GAIN (1): kept across fork and exec. */
	if (!strcmp(argv[3], "1") && prctl(65, 1, 0, 0, 0)) {
		perror("PR_SET_MDWE");
		return 1;
	}
	/* SystemCallArchitectures=native: the native architecture only (libseccomp's default). */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("PR_SET_NO_NEW_PRIVS");
		return 1;
	}
	err = seccomp_load(ctx);
	if (err) {
		fprintf(stderr, "loading the filter: %s\n", strerror(-err));
		return 1;
	}
	seccomp_release(ctx);
	execvp(argv[4], argv + 4);
	perror(argv[4]);
	return 127;
}
