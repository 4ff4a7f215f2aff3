// SPDX-License-Identifier: Apache-2.0
/*
 * What a role inherits from the launcher, which holds root's descriptors (its listening
 * sockets, kallsyms, the pidfds of every process the supervisor watches): its own
 * descriptors at the numbers it expects and nothing else, stdin on /dev/null, a session of its
 * own, no signal blocked. The launcher (launcher/spawner.c) starts it with posix_spawn; the
 * attack is a launcher with many descriptors open, the role's among them at the very numbers
 * the role expects others at, where a careless shuffle hands a role another one's.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/msg.h"
#include "launcher/spawner.h"

/* Lists its descriptors (link targets), its session and its blocked signals, one a line. */
static const char script[] =
	"for f in /proc/self/fd/*; do n=${f##*/}; echo \"fd $n $(readlink $f)\"; done; "
	"echo \"sid $(cut -d' ' -f6 /proc/self/stat)\"; grep SigBlk /proc/self/status";

Test(spawn, a_role_gets_its_descriptors_at_their_numbers_and_no_other)
{
	enum { N = SPAWNER_CHILD_MAX_FDS };
	char out[] = "/tmp/rover-spawn.XXXXXX", line[512], want[64];
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	int fds[N], filler[200], nfill = 0, outfd, status, seen[N] = { 0 }, others = 0;
	sigset_t block;
	pid_t pid;
	FILE *f;

	/* The launcher's own descriptors, taking the low numbers and those just above where
	 * the role's go (ROLE_FD_LAUNCHER + N), so that the role's land among both. */
	while (nfill < 200) {
		filler[nfill] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		cr_assert_geq(filler[nfill], 0);
		nfill++;
	}
	for (int i = 0; i < nfill; i += 2)
		close(filler[i]);
	for (int i = 0; i < N; i++) {
		char name[16];

		snprintf(name, sizeof(name), "role-fd-%d", i);
		fds[i] = memfd_create(name, MFD_CLOEXEC);
		cr_assert_geq(fds[i], 0);
	}
	/* In reverse: role descriptor i sits where role descriptor N - 1 - i must go. */
	for (int i = 0; i < N / 2; i++) {
		int t = fds[i];

		fds[i] = fds[N - 1 - i];
		fds[N - 1 - i] = t;
	}
	outfd = mkstemp(out);
	cr_assert_geq(outfd, 0);
	cr_assert_eq(fcntl(outfd, F_SETFD, FD_CLOEXEC), 0);
	/* A blocked signal in the launcher (it reads them from a signalfd) is not the role's. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, NULL);
	/* stdout to the file, as the roles' go to the launcher's. */
	{
		int saved = dup(STDOUT_FILENO);

		cr_assert_geq(saved, 0);
		dup2(outfd, STDOUT_FILENO);
		pid = spawner__exec("/bin/sh", argv, fds, N);
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	cr_assert_gt(pid, 0, "spawn: %s", strerror((int)-pid));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	f = fopen(out, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		int n;
		char target[400];

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "fd %d %399[^\n]", &n, target) == 2) {
			if (n == STDIN_FILENO) {
				cr_expect_str_eq(target, "/dev/null", "stdin: %s", target);
			} else if (n >= ROLE_FD_LAUNCHER && n < ROLE_FD_LAUNCHER + N) {
				int i = n - ROLE_FD_LAUNCHER, src = N - 1 - i;

				/* fds[i] holds memfd "role-fd-(N-1-i)" after the reversal. */
				snprintf(want, sizeof(want), "/memfd:role-fd-%d (deleted)", src);
				cr_expect_str_eq(target, want, "fd %d", n);
				seen[i]++;
			} else if (n > STDERR_FILENO) {
				/* The shell's own descriptor for the listing is /proc/self/fd: no
				 * other. */
				if (!strstr(target, "/proc/") || !strstr(target, "/fd")) {
					cr_log_error("fd %d: %s inherited", n, target);
					others++;
				}
			}
		} else if (!strncmp(line, "sid ", 4)) {
			cr_expect_eq(atoi(line + 4), pid, "not a session of its own: %s", line);
		} else if (!strncmp(line, "SigBlk:", 7)) {
			cr_expect(strspn(line + 7, "\t 0") == strlen(line + 7), "blocked: %s",
				  line);
		}
	}
	fclose(f);
	for (int i = 0; i < N; i++)
		cr_expect_eq(seen[i], 1, "fd %d: seen %d times", ROLE_FD_LAUNCHER + i, seen[i]);
	cr_expect_eq(others, 0, "%d of the launcher's descriptors inherited", others);
	unlink(out);
	close(outfd);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	for (int i = 1; i < nfill; i += 2)
		close(filler[i]);
}
