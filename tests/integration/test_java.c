// SPDX-License-Identifier: Apache-2.0
/*
 * Java (HotSpot) frames through the whole pipeline with no JVM flag, on both JDKs of this
 * machine (Debian's OpenJDK 17, Temurin 25): tests/programs/java/TwoThreads.java, compiled here
 * with the JDK's javac, burns CPU in two methods on two threads and measures its own split
 * (ThreadMXBean); `rover profile` must name both methods, package.Class.method, with the
 * program's split, under their callers in order.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(java, .init = tmp_setup, .fini = tmp_teardown, .timeout = 600);

static const char *const jdks[] = { "/usr/lib/jvm/java-17-openjdk-amd64",
				    "/usr/lib/jvm/temurin-25-jdk-amd64" };
#define NJDKS (sizeof(jdks) / sizeof(jdks[0]))

struct jprog {
	pid_t pid;
	FILE *out; /* its stdout, past "ready" */
};

/* TwoThreads compiled by jdk's javac into tmp/classes-N. */
static void compile(const char *jdk, const char *classes)
{
	char javac[512], *err = NULL;
	char *argv[] = { javac, "-d", (char *)classes,
			 (char *)src("tests/programs/java/TwoThreads.java"), NULL };

	snprintf(javac, sizeof(javac), "%s/bin/javac", jdk);
	cr_assert_eq(run_cmd(argv, &err), 0, "%s: %s", javac, err);
	free(err);
}

static int jprog_start(const char *jdk, const char *classes, const char *seconds, struct jprog *ret)
{
	char java[512], line[256];
	int pfd[2];

	snprintf(java, sizeof(java), "%s/bin/java", jdk);
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	ret->pid = fork();
	if (ret->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		execl(java, java, "-cp", classes, "rover.test.TwoThreads", seconds, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	ret->out = fdopen(pfd[0], "r");
	if (!ret->out || !fgets(line, sizeof(line), ret->out) || strncmp(line, "ready", 5)) {
		kill(ret->pid, SIGKILL);
		waitpid(ret->pid, NULL, 0);
		return -EIO;
	}
	return 0;
}

/* Waits for it to end and reads "share NAME PERCENT" for name: the percent, or -1. */
static double jprog_share(struct jprog *p, const char *name)
{
	char line[256], fn[128];
	double share = -1, v;

	while (fgets(line, sizeof(line), p->out))
		if (sscanf(line, "share %127s %lf", fn, &v) == 2 && !strcmp(fn, name))
			share = v;
	return share;
}

static void jprog_end(struct jprog *p)
{
	if (p->out)
		fclose(p->out);
	p->out = NULL;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
}

/* Samples whose stack holds frames starting with prefixes[0..n) in that order. */
static uint64_t with_chain(const struct folded *f, const char *const *prefixes, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *save = NULL;
		size_t k = 0;

		for (char *s = strtok_r(copy, ";", &save); s && k < n;
		     s = strtok_r(NULL, ";", &save))
			if (!strncmp(s, prefixes[k], strlen(prefixes[k])))
				k++;
		if (k == n)
			sum += f->counts[i];
		free(copy);
	}
	return sum;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

Test(java, on_cpu_java_frames_on_both_jdks)
{
	for (size_t v = 0; v < NJDKS; v++) {
		static const char *const chain_a[] = {
			"java.lang.Thread.run (Thread.java:",
			"rover.test.TwoThreads.lambda$main$0 "
			"(TwoThreads.java:33)",
			"rover.test.TwoThreads.burnA (TwoThreads.java"
		};
		char classes[512], out[512], pids[32], *err = NULL;
		char *argv[] = { (char *)bin("rover"),
				 "profile",
				 "--type",
				 "on_cpu",
				 "--pid",
				 pids,
				 "--duration",
				 "5s",
				 "--dump-period",
				 "2ms",
				 "--output",
				 out,
				 NULL };
		struct jprog p = { 0 };
		struct folded f;
		uint64_t a, b;
		double want;

		snprintf(classes, sizeof(classes), "%s/classes-%zu", tmp, v);
		snprintf(out, sizeof(out), "%s/on-%zu.folded", tmp, v);
		compile(jdks[v], classes);
		cr_assert_eq(jprog_start(jdks[v], classes, "7", &p), 0, "%s", jdks[v]);
		snprintf(pids, sizeof(pids), "%d", (int)p.pid);
		cr_assert_eq(run_cmd(argv, &err), 0, "%s: rover: %s", jdks[v], err);
		want = jprog_share(&p, "burnA");
		jprog_end(&p);
		cr_assert_eq(folded_read(out, &f), 0);
		a = with_chain(&f, (const char *const[]){ "rover.test.TwoThreads.burnA (" }, 1);
		b = with_chain(&f, (const char *const[]){ "rover.test.TwoThreads.burnB (" }, 1);
		cr_log_info("%s: burnA %lu, burnB %lu of %lu; the program measured %.1f%%", jdks[v],
			    a, b, f.total, want);
		cr_assert_gt(a + b, f.total * 8 / 10, "%s: Java frames in %lu of %lu samples\n%s",
			     jdks[v], a + b, f.total, f.n ? f.stacks[0] : "");
		cr_assert_gt(want, 0, "%s: the program said no share", jdks[v]);
		cr_assert(pct(a, a + b) > want - 5 && pct(a, a + b) < want + 5,
			  "%s: burnA %.1f%% in the profile, %.1f%% measured", jdks[v],
			  pct(a, a + b), want);
		cr_assert_gt(with_chain(&f, chain_a, 3), a * 8 / 10,
			     "%s: callers out of order or missing\n%s", jdks[v],
			     f.n ? f.stacks[0] : "");
		folded_free(&f);
		free(err);
	}
}
