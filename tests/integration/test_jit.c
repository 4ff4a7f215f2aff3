// SPDX-License-Identifier: Apache-2.0
/*
 * JIT code through the whole pipeline: the shipper names code in anonymous memory from the
 * target's perf map, which the launcher opens for it (OPEN_PERF_MAP), and only when the file
 * passes the launcher's checks.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(jit, .init = tmp_setup, .fini = tmp_teardown, .timeout = 120);

/* Profiles jit_burn [arg] for 3 s into tmp/NAME. The perf map files are removed after. */
static void profile_jit(const char *arg, const char *name, struct folded *ret, char **ret_err)
{
	char pids[32], out[4096], path[64];
	char *argv[] = { (char *)bin("rover"), "profile", "--pid",    pids, "--duration", "3s",
			 "--dump-period",      "2ms",	  "--output", out,  NULL };
	pid_t pid;
	int rc;

#ifndef __x86_64__
	cr_skip_test("jit_burn has machine code for x86-64 only");
#endif
	pid = start_program(bin("tests/programs/jit_burn"), arg);
	cr_assert_gt(pid, 0);
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	rc = run_cmd(argv, ret_err);
	stop_program(pid);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map.real", (int)pid);
	unlink(path);
	cr_assert_eq(rc, 0, "rover: %s", *ret_err);
	cr_assert_eq(folded_read(out, ret), 0);
}

Test(jit, jitted_code_is_named_from_the_perf_map)
{
	struct folded f;
	char *err = NULL;
	uint64_t leaf;

	profile_jit(NULL, "jit.folded", &f, &err);
	leaf = folded_with_leaf(&f, "jitted_spin");
	cr_log_info("jitted_spin %lu of %lu", leaf, f.total);
	/* 3 s at 500 Hz of one busy thread: about 1500 samples. */
	cr_assert_gt(f.total, 700, "too few samples: %lu\n%s", f.total, err);
	/* Only the leaf: the unwinder skips call_jitted, the caller of frameless code. */
	cr_assert_gt(leaf, f.total * 9 / 10, "jitted_spin is the leaf of %lu of %lu samples:\n%s",
		     leaf, f.total, f.n ? f.stacks[0] : "");
	folded_free(&f);
	free(err);
}

Test(jit, a_symlinked_perf_map_is_not_read)
{
	struct folded f;
	char *err = NULL;

	/* The launcher, as root, refuses the link (it could point at any file). */
	profile_jit("--symlink", "link.folded", &f, &err);
	cr_assert_gt(f.total, 700, "too few samples: %lu\n%s", f.total, err);
	cr_assert_eq(folded_with_frame(&f, "jitted_spin"), 0);
	cr_assert_gt(folded_with_leaf(&f, "[unknown]"), f.total * 9 / 10);
	folded_free(&f);
	free(err);
}
