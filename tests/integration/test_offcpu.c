// SPDX-License-Identifier: Apache-2.0
/* OFF_CPU through the whole pipeline: blocked time per stack, against a known pattern. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

TestSuite(offcpu, .init = tmp_setup, .fini = tmp_teardown, .timeout = 120);

static void blocked_time_test(const char *attach, const char *logged)
{
	pid_t pid = start_program(bin("tests/programs/block_two"), NULL);
	char pids[32], out[4096];
	char *argv[] = { (char *)bin("rover"), "profile", "--type", "off_cpu",	  "--attach",
			 (char *)attach,       "--pid",	  pids,	    "--duration", "4s",
			 "--output",	       out,	  NULL };
	uint64_t a, b;
	struct folded f;
	char *err = NULL;
	double share, total_s;

	cr_assert_gt(pid, 0);
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	snprintf(out, sizeof(out), "%s/off.folded", tmp);
	cr_assert_eq(run_cmd(argv, &err), 0, "rover: %s", err);
	stop_program(pid);
	cr_assert_eq(folded_read(out, &f), 0);
	/* Values are microseconds off the CPU. */
	a = folded_with_frame(&f, "wait_30ms");
	b = folded_with_frame(&f, "wait_10ms");
	share = 100.0 * (double)a / (double)(a + b);
	total_s = (double)f.total / 1e6;
	cr_log_info("wait_30ms %lu us, wait_10ms %lu us, total %.3f s", a, b, total_s);
	cr_assert(share > 71.0 && share < 79.0, "wait_30ms share %.1f%% (75%% expected)", share);
	cr_assert(total_s > 3.6 && total_s < 4.4, "blocked %.3f s in a 4 s task", total_s);
	/* The kernel side of the wait is there, without the tracing machinery above it. */
	cr_assert_gt(folded_with_frame(&f, "do_nanosleep_[k]"), f.total * 9 / 10);
	cr_assert_eq(folded_with_frame(&f, "bpf_trace_run4_[k]"), 0);
	cr_assert(strstr(err, "s off the CPU"), "%s", err);
	cr_assert(strstr(err, logged), "attach method not logged as '%s': %s", logged, err);
	folded_free(&f);
	free(err);
}

Test(offcpu, blocked_time_splits_75_25_and_adds_up_to_the_wall_time)
{
	/* auto: this kernel takes the BTF tracepoint. */
	blocked_time_test("auto", "attached with tp_btf sched_switch");
}

Test(offcpu, the_raw_tracepoint_fallback_gives_the_same_profile)
{
	blocked_time_test("raw_tp", "attached with raw_tp sched_switch");
}
