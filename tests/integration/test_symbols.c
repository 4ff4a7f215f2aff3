// SPDX-License-Identifier: Apache-2.0
/*
 * Frames named end to end where symbols are hard to reach: a Go binary, a binary deleted
 * while it runs, and a binary that exists only inside the target's own mount namespace.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(symbols, .init = tmp_setup, .fini = tmp_teardown, .timeout = 180);

static void profile_into(pid_t pid, const char *name, struct folded *ret)
{
	char pids[32], out[4096];
	char *argv[] = { (char *)bin("rover"), "profile", "--pid",    pids, "--duration", "2s",
			 "--dump-period",      "5ms",	  "--output", out,  NULL };
	char *err = NULL;
	int rc;

	snprintf(pids, sizeof(pids), "%d", (int)pid);
	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	rc = run_cmd(argv, &err);
	cr_assert_eq(rc, 0, "rover: %s", err);
	free(err);
	cr_assert_eq(folded_read(out, ret), 0);
}

Test(symbols, a_go_program_is_named)
{
	char cmd[8192], exe[4096];
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	struct folded f;
	pid_t shell, pid;

	if (access("/usr/bin/go", X_OK))
		cr_skip_test("no Go toolchain (/usr/bin/go): Debian's golang-go is not installed");
	snprintf(exe, sizeof(exe), "%s/goburn", tmp);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && HOME=%s GOCACHE=%s/cache GOPATH=%s/gopath GO111MODULE=off GOFLAGS= "
		 "go build -o %s %s/tests/programs/go/burn.go",
		 tmp, tmp, tmp, tmp, exe, getenv("ROVER_SRC") ? getenv("ROVER_SRC") : ".");
	cr_assert_eq(run_cmd(sh, NULL), 0, "go build failed: %s", cmd);
	snprintf(cmd, sizeof(cmd), "sleep 60 | exec %s burn > /dev/null", exe);
	shell = spawn_cmd(sh, NULL);
	pid = wait_child(shell, "goburn", 5000);
	cr_assert_gt(pid, 0, "the Go program did not start");
	sleep_ms(300);
	profile_into(pid, "go.folded", &f);
	stop_program(pid);
	stop_program(shell);
	cr_assert_gt(folded_with_frame(&f, "main.burnA") + folded_with_frame(&f, "main.burnB"),
		     f.total / 2, "Go functions not named:\n%s", f.n ? f.stacks[0] : "(empty)");
	folded_free(&f);
}

Test(symbols, a_binary_deleted_while_it_runs_is_named)
{
	char exe[4096], cmd[8300];
	struct folded f;
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/deleted_burn", tmp);
	snprintf(cmd, sizeof(cmd), "cp %s %s", bin("tests/programs/demo_burn"), exe);
	cr_assert_eq(system(cmd), 0);
	pid = start_program(exe, NULL);
	cr_assert_gt(pid, 0);
	cr_assert_eq(unlink(exe), 0);
	profile_into(pid, "deleted.folded", &f);
	stop_program(pid);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), f.total / 2,
		     "burn_a not named in a deleted binary");
	folded_free(&f);
}

Test(symbols, a_binary_only_in_the_targets_mount_namespace_is_named)
{
	char dir[1024], cmd[12000];
	char *argv[] = {
		"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", cmd, NULL
	};
	struct folded f;
	struct stat st;
	pid_t pid;

	/* Inside: a tmpfs over dir holds the binary; outside, dir stays empty. */
	snprintf(dir, sizeof(dir), "%s/ns", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(cmd, sizeof(cmd),
		 "mount -t tmpfs none %s && cp %s %s/ns_burn && exec %s/ns_burn > /dev/null", dir,
		 bin("tests/programs/demo_burn"), dir, dir);
	pid = spawn_cmd(argv, NULL);
	sleep_ms(700);
	snprintf(cmd, sizeof(cmd), "%s/ns_burn", dir);
	cr_assert_neq(stat(cmd, &st), 0, "the binary leaked into the host's namespace");
	profile_into(pid, "ns.folded", &f);
	stop_program(pid);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), f.total / 2,
		     "burn_a not named in another mount namespace");
	folded_free(&f);
}
