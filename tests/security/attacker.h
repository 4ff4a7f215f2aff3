/* SPDX-License-Identifier: Apache-2.0 */
/* Attacks run as another user: a forked child with that user's ids and no capability. */
#ifndef ROVER_TESTS_SECURITY_ATTACKER_H
#define ROVER_TESTS_SECURITY_ATTACKER_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * A shell of user w on a terminal of its own (a new pty, its controlling one), running
 * script: what a local user does to reach a set-user-ID program that then waits at the
 * terminal (passwd's prompt). stdin is a pipe, *ret_go its write end (-1 when ret_go is
 * NULL: stdin /dev/null), for a script that waits for a line before it goes on; *ret_master
 * the pty's master, which the caller keeps open. Its pid, or -1.
 */
static inline pid_t start_on_pty_as(struct who w, const char *script, int *ret_master, int *ret_go)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), go[2] = { -1, -1 }, execd[2];
	const char *slave;
	char c;
	pid_t pid;

	if (master < 0 || grantpt(master) || unlockpt(master) || !(slave = ptsname(master)) ||
	    (ret_go && pipe2(go, O_CLOEXEC)) || pipe2(execd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int tty, in;

		setsid();
		tty = open(slave, O_RDWR); /* the first terminal a session leader opens: its own */
		in = ret_go ? go[0] : open("/dev/null", O_RDONLY);
		if (tty < 0 || in < 0 || dup2(in, 0) < 0 || dup2(tty, 1) < 0 || dup2(tty, 2) < 0)
			_exit(125);
		if (become(w))
			_exit(126);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	if (go[0] >= 0)
		close(go[0]);
	/* Back once the shell runs as w: its end of execd closed at the exec. */
	close(execd[1]);
	while (pid > 0 && read(execd[0], &c, 1) > 0)
		;
	close(execd[0]);
	if (pid < 0) {
		close(master);
		if (go[1] >= 0)
			close(go[1]);
		return -1;
	}
	*ret_master = master;
	if (ret_go)
		*ret_go = go[1];
	return pid;
}

/* Whether pid runs path now (after an exec), checked for up to timeout_ms. */
static inline int wait_exe(pid_t pid, const char *path, int timeout_ms)
{
	char link[64], exe[4096];

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', !strcmp(exe, path)))
			return 1;
		sleep_ms(20);
	}
	return 0;
}

#endif
