/* SPDX-License-Identifier: Apache-2.0 */
/* Attacks run as another user: a forked child with that user's ids and no capability. */
#ifndef ROVER_TESTS_SECURITY_ATTACKER_H
#define ROVER_TESTS_SECURITY_ATTACKER_H

#define _GNU_SOURCE
#include <grp.h>
#include <pwd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

struct who {
	uid_t uid;
	gid_t gid;
	gid_t extra; /* a supplementary group, or (gid_t)-1 */
};

/* The roles' user (rover, or $ROVER_USER), as a process of that uid would run. */
static inline struct who role_who(void)
{
	struct passwd *pw = getpwnam(role_user());

	return pw ? (struct who){ pw->pw_uid, pw->pw_gid, (gid_t)-1 }
		  : (struct who){ (uid_t)-1, (gid_t)-1, (gid_t)-1 };
}

/* Becomes w in a child (no capability survives); nonzero on failure. */
static inline int become(struct who w)
{
	if (w.extra != (gid_t)-1 ? setgroups(1, &w.extra) : setgroups(0, NULL))
		return -1;
	return setresgid(w.gid, w.gid, w.gid) || setresuid(w.uid, w.uid, w.uid);
}

/*
 * Runs fn(arg) as w in a child; returns its exit status (fn's return value, 0..125),
 * 126 when the ids could not be taken, 128+N when killed by signal N.
 */
static inline int as_user(struct who w, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(become(w) ? 126 : fn(arg));
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A busy program (tests/programs/demo_burn) of user w: its pid, or -1. */
static inline pid_t start_program_as(struct who w, const char *path)
{
	int pfd[2];
	char c = 0;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 1);
		if (become(w))
			_exit(126);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	/* "ready" once it runs */
	if (read(pfd[0], &c, 1) != 1 || c != 'r') {
		close(pfd[0]);
		stop_program(pid);
		return -1;
	}
	close(pfd[0]);
	return pid;
}

#endif
