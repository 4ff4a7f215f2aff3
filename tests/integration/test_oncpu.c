// SPDX-License-Identifier: Apache-2.0
/*
 * ON_CPU through the whole pipeline on the real kernel: `rover profile` on programs with hot
 * functions at known ratios; the shares in the profile must match within 3 points.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(oncpu, .init = tmp_setup, .fini = tmp_teardown, .timeout = 120);

/* Profiles pid into tmp/NAME and reads it back; rover's stderr into *ret_err. */
static int profile_pid(pid_t pid, const char *name, const char *duration, const char *period,
		       struct folded *ret, char **ret_err)
{
	char pids[32], out[4096];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--pid",
			 pids,
			 "--duration",
			 (char *)duration,
			 "--dump-period",
			 (char *)period,
			 "--output",
			 out,
			 NULL };
	int rc;

	snprintf(pids, sizeof(pids), "%d", (int)pid);
	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	rc = run_cmd(argv, ret_err);
	if (rc == 0 && ret)
		cr_assert_eq(folded_read(out, ret), 0);
	return rc;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

Test(oncpu, two_functions_at_a_known_ratio)
{
	pid_t pid = start_program(bin("tests/programs/demo_burn"), NULL);
	struct folded f;
	char *err = NULL;
	uint64_t a, b;

	cr_assert_gt(pid, 0);
	cr_assert_eq(profile_pid(pid, "p.folded", "6s", "2ms", &f, &err), 0, "rover: %s", err);
	stop_program(pid);
	a = folded_with_leaf(&f, "burn_a");
	b = folded_with_leaf(&f, "burn_b");
	cr_log_info("burn_a %lu burn_b %lu total %lu", a, b, f.total);
	/* 6 s at 500 Hz of one busy thread: about 3000 samples. */
	cr_assert_gt(a + b, 1500, "too few samples: %lu\n%s", a + b, err);
	cr_assert_gt(a + b, f.total * 9 / 10, "hot functions hold only %lu of %lu", a + b, f.total);
	cr_assert(pct(a, a + b) > 72.0 && pct(a, a + b) < 78.0,
		  "burn_a share %.1f%% (75%% expected)", pct(a, a + b));
	/* Whole stacks: main calls work_loop calls burn_a. */
	cr_assert_gt(folded_with_frame(&f, "work_loop"), (a + b) * 9 / 10);
	cr_assert_gt(folded_with_frame(&f, "main"), (a + b) * 9 / 10);
	cr_assert(strstr(f.stacks[0], "demo_burn;") == f.stacks[0], "comm first: %s", f.stacks[0]);
	cr_assert(strstr(err, "no samples lost"), "losses reported: %s", err);
	folded_free(&f);
	free(err);
}

Test(oncpu, pie_executable_calling_a_shared_library)
{
	pid_t pid = start_program(bin("tests/programs/pie_lib_main"), NULL);
	struct folded f;
	char *err = NULL;
	uint64_t lib, local;

	cr_assert_gt(pid, 0);
	cr_assert_eq(profile_pid(pid, "pie.folded", "5s", "2ms", &f, &err), 0, "rover: %s", err);
	stop_program(pid);
	lib = folded_with_leaf(&f, "lib_burn_hot");
	local = folded_with_leaf(&f, "main_burn_local");
	cr_log_info("lib %lu local %lu total %lu", lib, local, f.total);
	cr_assert_gt(lib + local, 1000, "too few samples\n%s", err);
	cr_assert(pct(lib, lib + local) > 63.67 && pct(lib, lib + local) < 69.67,
		  "lib_burn_hot share %.1f%% (66.7%% expected)", pct(lib, lib + local));
	folded_free(&f);
	free(err);
}

Test(oncpu, cxx_names_are_demangled)
{
	pid_t pid = start_program(bin("tests/programs/cxx_burn"), NULL);
	struct folded f;
	char *err = NULL;

	cr_assert_gt(pid, 0);
	cr_assert_eq(profile_pid(pid, "cxx.folded", "2s", "5ms", &f, &err), 0, "rover: %s", err);
	stop_program(pid);
	cr_assert_gt(folded_with_leaf(&f, "demo::Burner::spin"), f.total / 2,
		     "demo::Burner::spin not the hot leaf:\n%s", f.n ? f.stacks[0] : "");
	folded_free(&f);
	free(err);
}

Test(oncpu, kernel_frames_follow_user_frames)
{
	/* dd spends its time in read/write syscalls: kernel frames, suffixed _[k], come last. */
	char *dd[] = { "/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=2000000000", NULL };
	pid_t pid = spawn_cmd(dd, NULL);
	struct folded f;
	char *err = NULL;
	uint64_t kernel = 0;

	sleep_ms(200);
	cr_assert_eq(profile_pid(pid, "k.folded", "2s", "5ms", &f, &err), 0, "rover: %s", err);
	stop_program(pid);
	for (size_t i = 0; i < f.n; i++) {
		char *copy = strdup(f.stacks[i]), *save = NULL, *fr;
		int in_kernel = 0;

		for (fr = strtok_r(copy, ";", &save); fr; fr = strtok_r(NULL, ";", &save)) {
			size_t n = strlen(fr);
			int k = n > 4 && !strcmp(fr + n - 4, "_[k]");

			cr_assert(!in_kernel || k, "user frame after kernel frame: %s",
				  f.stacks[i]);
			in_kernel |= k;
		}
		if (in_kernel)
			kernel += f.counts[i];
		free(copy);
	}
	cr_assert_gt(kernel, f.total / 3, "few kernel frames: %lu of %lu", kernel, f.total);
	/* Kernel symbols are named, not [unknown]: the shipper got kallsyms through the launcher. */
	cr_assert_lt(folded_with_frame(&f, "[unknown]_[k]"), kernel / 10);
	cr_assert_gt(folded_with_frame(&f, "entry_SYSCALL_64_after_hwframe_[k]") +
			     folded_with_frame(&f, "do_syscall_64_[k]"),
		     kernel / 2);
	folded_free(&f);
	free(err);
}

Test(oncpu, target_exit_ends_the_task_with_its_data)
{
	pid_t pid = start_program(bin("tests/programs/demo_burn"), "1.5");
	struct folded f;
	char *err = NULL;
	time_t t0 = time(NULL);

	cr_assert_gt(pid, 0);
	cr_assert_eq(profile_pid(pid, "exit.folded", "30s", "5ms", &f, &err), 0, "rover: %s", err);
	cr_assert_lt(time(NULL) - t0, 10, "task did not end with its target");
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 50, "data collected before exit was lost");
	folded_free(&f);
	free(err);
	stop_program(pid);
}

Test(oncpu, output_formats_follow_the_extension)
{
	pid_t pid = start_program(bin("tests/programs/demo_burn"), NULL);
	char *err = NULL, path[4096];
	size_t len;
	unsigned char *gz;
	char *svg;

	cr_assert_gt(pid, 0);
	cr_assert_eq(profile_pid(pid, "p.pb.gz", "1s", "5ms", NULL, &err), 0, "rover: %s", err);
	free(err);
	cr_assert_eq(profile_pid(pid, "p.svg", "1s", "5ms", NULL, &err), 0, "rover: %s", err);
	free(err);
	stop_program(pid);
	snprintf(path, sizeof(path), "%s/p.pb.gz", tmp);
	gz = (unsigned char *)slurp(path, &len);
	cr_assert(gz && len > 20 && gz[0] == 0x1f && gz[1] == 0x8b, "not gzip");
	free(gz);
	snprintf(path, sizeof(path), "%s/p.svg", tmp);
	svg = slurp(path, &len);
	cr_assert(svg && strstr(svg, "<svg") && strstr(svg, "burn_a") && strstr(svg, "</svg>"));
	free(svg);
}
