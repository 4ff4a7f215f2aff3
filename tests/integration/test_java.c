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

/* A program of tests/programs/java (file: its source's name) compiled by jdk's javac into
 * classes. */
static void compile(const char *jdk, const char *classes, const char *file)
{
	char javac[512], path[512], *err = NULL;
	char *argv[] = { javac, "-d", (char *)classes, path, NULL };

	snprintf(path, sizeof(path), "%s", src(file));

	snprintf(javac, sizeof(javac), "%s/bin/javac", jdk);
	cr_assert_eq(run_cmd(argv, &err), 0, "%s: %s", javac, err);
	free(err);
}

/* Starts class main (rover.test.NAME) of classes with jdk's java, its arguments seconds and
 * arg (NULL: none), and waits for its "ready". */
static int jprog_start(const char *jdk, const char *classes, const char *main, const char *seconds,
		       const char *arg, struct jprog *ret)
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
		execl(java, java, "-cp", classes, main, seconds, arg, (char *)NULL);
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
		compile(jdks[v], classes, "tests/programs/java/TwoThreads.java");
		cr_assert_eq(jprog_start(jdks[v], classes, "rover.test.TwoThreads", "7", NULL, &p),
			     0, "%s", jdks[v]);
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

/*
 * OFF_CPU: tests/programs/java/Blocked.java's four threads block over and over, each in its
 * own method, in Thread.sleep, Object.wait, a socket read and LockSupport.parkNanos. Every
 * sample is taken in the kernel, the thread in native or VM code: its Java frames come from its
 * last Java frame (the JavaThread's anchor). Each thread's blocked time (about the task's 4 s)
 * must be on its methods, under their callers in order.
 */
Test(java, off_cpu_blocked_time_on_the_java_methods_on_both_jdks)
{
	static const char *const names[] = { "sleep", "wait", "read", "park" };
	static const char *const calls[] = { "java.lang.Thread.sleep", "java.lang.Object.wait", "",
					     "jdk.internal.misc.Unsafe.park" };

	for (size_t v = 0; v < NJDKS; v++) {
		char classes[512], out[512], pids[32], *err = NULL;
		char *argv[] = {
			(char *)bin("rover"), "profile", "--type",   "off_cpu", "--pid", pids,
			"--duration",	      "4s",	 "--output", out,	NULL
		};
		struct jprog p = { 0 };
		struct folded f;

		snprintf(classes, sizeof(classes), "%s/classes-%zu", tmp, v);
		snprintf(out, sizeof(out), "%s/off-%zu.folded", tmp, v);
		compile(jdks[v], classes, "tests/programs/java/Blocked.java");
		cr_assert_eq(jprog_start(jdks[v], classes, "rover.test.Blocked", "6", NULL, &p), 0,
			     "%s", jdks[v]);
		snprintf(pids, sizeof(pids), "%d", (int)p.pid);
		cr_assert_eq(run_cmd(argv, &err), 0, "%s: rover: %s", jdks[v], err);
		jprog_end(&p);
		cr_assert_eq(folded_read(out, &f), 0);
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			char outer[128], in[128];
			const char *chain[4] = { "java.lang.Thread.run (Thread.java:", outer, in,
						 calls[k] };
			uint64_t t_in, t_chain;

			snprintf(outer, sizeof(outer),
				 "rover.test.Blocked.%sOuter (Blocked.java:", names[k]);
			snprintf(in, sizeof(in),
				 "rover.test.Blocked.%sIn (Blocked.java:", names[k]);
			/* Values are microseconds off the CPU. */
			t_in = with_chain(&f, (const char *const[]){ in }, 1);
			t_chain = with_chain(&f, chain, calls[k][0] ? 4 : 3);
			cr_log_info("%s: %sIn %.3f s off the CPU, %.3f s under its callers",
				    jdks[v], names[k], (double)t_in / 1e6, (double)t_chain / 1e6);
			cr_assert_gt(t_in, 3000000, "%s: %sIn blocked %.3f s of 4 s\n%s", jdks[v],
				     names[k], (double)t_in / 1e6, f.n ? f.stacks[0] : "");
			cr_assert_gt(t_chain, t_in * 9 / 10, "%s: %sIn: callers out of order\n%s",
				     jdks[v], names[k], f.n ? f.stacks[0] : "");
		}
		folded_free(&f);
		free(err);
	}
}

/* Samples whose stack has a frame starting with a and a frame starting with b. */
static uint64_t with_both(const struct folded *f, const char *a, const char *b)
{
	return with_chain(f, (const char *const[]){ a, b }, 2) +
	       with_chain(f, (const char *const[]){ b, a }, 2);
}

/*
 * Class unloading: tests/programs/java/Unload.java loads two classes by throwaway class loaders
 * over and over and has them unloaded (hundreds a second), their methods' memory reused. Burn1
 * is called only from runOne, Burn2 only from runTwo: no sample may hold one under the other's
 * caller (a method record taken for another method), and most samples name them.
 */
Test(java, unloaded_classes_are_never_misnamed_on_both_jdks)
{
	for (size_t v = 0; v < NJDKS; v++) {
		char classes[512], plug[512], out[512], pids[32], line[256], *err = NULL;
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
		long unloaded = -1;
		uint64_t one, two, bad;
		struct folded f;

		snprintf(classes, sizeof(classes), "%s/classes-%zu", tmp, v);
		snprintf(plug, sizeof(plug), "%s/plug-%zu", tmp, v);
		snprintf(out, sizeof(out), "%s/unload-%zu.folded", tmp, v);
		compile(jdks[v], classes, "tests/programs/java/Unload.java");
		compile(jdks[v], plug, "tests/programs/java/plug/Burn1.java");
		compile(jdks[v], plug, "tests/programs/java/plug/Burn2.java");
		cr_assert_eq(jprog_start(jdks[v], classes, "rover.test.Unload", "7", plug, &p), 0,
			     "%s", jdks[v]);
		snprintf(pids, sizeof(pids), "%d", (int)p.pid);
		cr_assert_eq(run_cmd(argv, &err), 0, "%s: rover: %s", jdks[v], err);
		while (fgets(line, sizeof(line), p.out))
			(void)sscanf(line, "unloaded %ld", &unloaded);
		jprog_end(&p);
		cr_assert_eq(folded_read(out, &f), 0);
		one = with_chain(&f,
				 (const char *const[]){ "rover.test.Unload.runOne (",
							"rover.plug.Burn1.burnOne (" },
				 2);
		two = with_chain(&f,
				 (const char *const[]){ "rover.test.Unload.runTwo (",
							"rover.plug.Burn2.burnTwo (" },
				 2);
		bad = with_both(&f, "rover.test.Unload.runOne (", "rover.plug.Burn2.") +
		      with_both(&f, "rover.test.Unload.runTwo (", "rover.plug.Burn1.");
		cr_log_info("%s: %ld classes unloaded; burnOne %lu, burnTwo %lu, misnamed %lu of "
			    "%lu samples",
			    jdks[v], unloaded, one, two, bad, f.total);
		cr_assert_gt(unloaded, 100, "%s: the JVM unloaded %ld classes", jdks[v], unloaded);
		cr_assert_eq(bad, 0, "%s: %lu samples with a frame of the other class", jdks[v],
			     bad);
		cr_assert_gt(one + two, f.total * 3 / 10,
			     "%s: the loaded classes named in %lu of %lu", jdks[v], one + two,
			     f.total);
		folded_free(&f);
		free(err);
	}
}
