// SPDX-License-Identifier: Apache-2.0
/*
 * policy/launcher.c: the denylist the launcher installs and every process it starts inherits.
 * Applied here in the test's own process (Criterion runs each test in one), as root: the calls
 * it names fail with EPERM even with every capability, and the rest still runs.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/privdrop.h"

Test(launcher_policy, refuses_mounts_namespaces_handles_and_lets_the_rest_run)
{
	struct file_handle *fh = calloc(1, sizeof(*fh) + 128);
	int mount_id, fd;

	cr_assert_eq(sandbox_apply(&launcher_policy), 0);
	errno = 0;
	cr_expect_eq(unshare(0), -1, "unshare(0) is a no-op anywhere else");
	cr_expect_eq(errno, EPERM);
	errno = 0;
	cr_expect_eq(mount("none", "/tmp", "tmpfs", 0, NULL), -1);
	cr_expect_eq(errno, EPERM);
	fh->handle_bytes = 128;
	errno = 0;
	cr_expect_eq(name_to_handle_at(AT_FDCWD, "/", fh, &mount_id, 0), -1);
	cr_expect_eq(errno, EPERM);
	errno = 0;
	cr_expect_eq(syscall(SYS_init_module, NULL, 0, ""), -1);
	cr_expect_eq(errno, EPERM);
	/* What rover does still works: files, processes, BPF's syscall number is not refused. */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	cr_expect_geq(fd, 0);
	close(fd);
	cr_expect_gt(getpid(), 0);
	errno = 0;
	syscall(SYS_bpf, -1, NULL, 0);
	cr_expect_neq(errno, EPERM, "bpf() must reach the kernel (workers need it)");
	free(fh);
}
