// SPDX-License-Identifier: Apache-2.0
/*
 * Landlock under each role (common/privdrop.c sandbox_landlock), tried as a compromised role:
 * writing a file anywhere by absolute path, signalling the launcher or another role, reaching
 * an abstract Unix socket. Each attack runs in a child that took the role's Landlock domain.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/privdrop.h"
#include "tests/integration/harness.h"

TestSuite(landlock, .init = tmp_setup, .fini = tmp_teardown, .timeout = 30);

/* Runs fn in a child under Landlock (writable: a directory it may write in, or NULL). */
static int under_landlock(const char *writable, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int dfd = writable ? open(writable, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		int err;

		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		err = sandbox_landlock(dfd);
		if (err == -EOPNOTSUPP)
			_exit(125);
		if (err)
			_exit(124);
		_exit(fn(arg));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child killed by %d", WTERMSIG(status));
	if (WEXITSTATUS(status) == 125)
		cr_skip_test("Landlock is not in this kernel");
	return WEXITSTATUS(status);
}

static int create_file(void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

Test(landlock, a_role_writes_nowhere_but_its_directory)
{
	char spool[4200], inside[4300], outside[4300], renamed[4300];

	snprintf(spool, sizeof(spool), "%s/spool", tmp);
	snprintf(inside, sizeof(inside), "%s/batch", spool);
	snprintf(outside, sizeof(outside), "%s/planted", tmp);
	snprintf(renamed, sizeof(renamed), "%s/batch.done", spool);
	cr_assert_eq(mkdir(spool, 0700), 0);
	/* The attack works without Landlock: root writes where it likes. */
	cr_assert_eq(create_file(outside), 0);
	cr_assert_eq(unlink(outside), 0);
	/* Without a writable directory (supervisor, worker): nowhere. */
	cr_assert_eq(under_landlock(NULL, create_file, outside), EACCES);
	cr_assert_eq(under_landlock(NULL, create_file, inside), EACCES);
	/* The shipper: its spool, by any path, and nothing else. */
	cr_assert_eq(under_landlock(spool, create_file, inside), 0);
	cr_assert_eq(under_landlock(spool, create_file, outside), EACCES);
	cr_assert_neq(access(outside, F_OK), 0, "a file was planted outside the spool");
	cr_assert_eq(rename(inside, renamed), 0);
}

static int rename_out(void *arg)
{
	char **paths = arg;

	return rename(paths[0], paths[1]) ? errno : 0;
}

Test(landlock, nothing_moves_out_of_the_writable_directory)
{
	char spool[4200], inside[4300], outside[4300];
	char *paths[2] = { inside, outside };

	snprintf(spool, sizeof(spool), "%s/spool", tmp);
	snprintf(inside, sizeof(inside), "%s/batch", spool);
	snprintf(outside, sizeof(outside), "%s/moved", tmp);
	cr_assert_eq(mkdir(spool, 0700), 0);
	cr_assert_eq(create_file(inside), 0);
	cr_assert_neq(under_landlock(spool, rename_out, paths), 0);
	cr_assert_eq(access(inside, F_OK), 0);
}

static int signal_parent(void *arg)
{
	(void)arg;
	return kill(getppid(), SIGUSR1) ? errno : 0;
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* A compromised role cannot kill the launcher or another role (same uid or not). */
Test(landlock, a_role_signals_nothing_outside_itself)
{
	signal(SIGUSR1, on_usr1);
	cr_assert_eq(under_landlock(NULL, signal_parent, NULL), EPERM);
	cr_assert_eq(got_usr1, 0, "the signal arrived");
}

static int connect_abstract(void *arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	size_t n = strlen(arg);

	memcpy(sa.sun_path + 1, arg, n);
	return connect(fd, (struct sockaddr *)&sa,
		       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))
		       ? errno
		       : 0;
}

Test(landlock, a_role_reaches_no_abstract_socket)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char name[64];
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	size_t n;

	snprintf(name, sizeof(name), "rover-test-%d", (int)getpid());
	n = strlen(name);
	memcpy(sa.sun_path + 1, name, n);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)),
		     0);
	cr_assert_eq(listen(l, 1), 0);
	cr_assert_eq(connect_abstract(name), 0); /* reachable without Landlock */
	cr_assert_eq(under_landlock(NULL, connect_abstract, name), EPERM);
	close(l);
}
