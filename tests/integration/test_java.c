// SPDX-License-Identifier: Apache-2.0
/*
 * Java (HotSpot) frames through the whole pipeline with no JVM flag, on both JDKs of this
 * machine (Debian's OpenJDK 17, Temurin 25): tests/programs/java/TwoThreads.java, compiled here
 * with the JDK's javac, burns CPU in two methods on two threads and measures its own split
 * (ThreadMXBean) while rover runs; `rover profile` must name both methods, package.Class.method,
 * with the program's split, under their callers in order, and JDK Flight Recorder's execution
 * samples of the same run must name the same two hottest methods.
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
#include <time.h>
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
	char *argv[] = { javac, "-encoding", "UTF-8", "-d", (char *)classes, path, NULL };

	snprintf(path, sizeof(path), "%s", src(file));

	snprintf(javac, sizeof(javac), "%s/bin/javac", jdk);
	cr_assert_eq(run_cmd(argv, &err), 0, "%s: %s", javac, err);
	free(err);
}

/* Starts path with argv (NULL-ended) and waits for its "ready" (lines before it, as JFR's at
 * its start, skipped). */
static int prog_start(const char *path, const char *const *argv, struct jprog *ret)
{
	char line[512];
	int pfd[2], found = 0;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	ret->pid = fork();
	if (ret->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	ret->out = fdopen(pfd[0], "r");
	for (int k = 0; ret->out && k < 4096 && !found && fgets(line, sizeof(line), ret->out); k++)
		found = !strncmp(line, "ready", 5);
	if (!found) {
		kill(ret->pid, SIGKILL);
		waitpid(ret->pid, NULL, 0);
		return -EIO;
	}
	return 0;
}

/* Starts class main (rover.test.NAME) of classes with jdk's java, the JVM's options opts (NULL
 * or NULL-ended), its arguments seconds and arg (NULL: none), and waits for its "ready". */
static int jprog_start_opts(const char *jdk, const char *const *opts, const char *classes,
			    const char *main, const char *seconds, const char *arg,
			    struct jprog *ret)
{
	char java[512];
	const char *argv[32];
	size_t n = 0;

	snprintf(java, sizeof(java), "%s/bin/java", jdk);
	argv[n++] = java;
	for (size_t i = 0; opts && opts[i] && n < 24; i++)
		argv[n++] = opts[i];
	argv[n++] = "-cp";
	argv[n++] = classes;
	argv[n++] = main;
	argv[n++] = seconds;
	argv[n++] = arg;
	argv[n] = NULL;
	return prog_start(java, argv, ret);
}

static int jprog_start(const char *jdk, const char *classes, const char *main, const char *seconds,
		       const char *arg, struct jprog *ret)
{
	return jprog_start_opts(jdk, NULL, classes, main, seconds, arg, ret);
}

/*
 * Waits for it to end and reads its "cpu NANOTIME A B" lines (tests/programs/java/
 * TwoThreads.java): thread A's share of the two threads' CPU time between CLOCK_MONOTONIC
 * times t0 and t1 (the profile's own time), in percent, or -1.
 */
static double jprog_share_between(struct jprog *p, uint64_t t0, uint64_t t1)
{
	unsigned long long t, a, b, a0 = 0, b0 = 0, a1 = 0, b1 = 0;
	char line[256];
	int have0 = 0, have1 = 0;

	while (fgets(line, sizeof(line), p->out)) {
		if (sscanf(line, "cpu %llu %llu %llu", &t, &a, &b) != 3)
			continue;
		if (t <= t0 || !have0) {
			a0 = a, b0 = b;
			have0 = 1;
		}
		if (t <= t1 || !have1) {
			a1 = a, b1 = b;
			have1 = 1;
		}
	}
	if (!have0 || !have1 || a1 + b1 <= a0 + b0)
		return -1;
	return 100.0 * (double)(a1 - a0) / (double)(a1 - a0 + b1 - b0);
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* ---- JDK Flight Recorder, the second reference ---- */

/* Methods by samples: JFR's or rover's innermost Java frame of each sample. */
struct mcount {
	char name[256];
	uint64_t n;
};
struct mtop {
	struct mcount m[128];
	size_t n;
	uint64_t total;
};

static void mtop_add(struct mtop *t, const char *name, size_t len, uint64_t n)
{
	size_t i;

	if (len >= sizeof(t->m[0].name))
		len = sizeof(t->m[0].name) - 1;
	t->total += n;
	for (i = 0; i < t->n; i++)
		if (strlen(t->m[i].name) == len && !strncmp(t->m[i].name, name, len))
			break;
	if (i == t->n) {
		if (t->n == sizeof(t->m) / sizeof(t->m[0]))
			return;
		memcpy(t->m[i].name, name, len);
		t->m[i].name[len] = '\0';
		t->n++;
	}
	t->m[i].n += n;
}

static int mcount_cmp(const void *a, const void *b)
{
	const struct mcount *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : strcmp(x->name, y->name);
}

/* The k most sampled methods' names joined by ",", sorted by name (a set to compare). */
static const char *mtop_names(struct mtop *t, size_t k, char *buf, size_t len)
{
	const char *pick[8];
	size_t o = 0;

	qsort(t->m, t->n, sizeof(t->m[0]), mcount_cmp);
	if (k > t->n)
		k = t->n;
	if (k > 8)
		k = 8;
	for (size_t i = 0; i < k; i++)
		pick[i] = t->m[i].name;
	for (size_t i = 0; i < k; i++) /* by name */
		for (size_t j = i + 1; j < k; j++)
			if (strcmp(pick[j], pick[i]) < 0) {
				const char *x = pick[i];

				pick[i] = pick[j];
				pick[j] = x;
			}
	buf[0] = '\0';
	for (size_t i = 0; i < k; i++)
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", i ? "," : "",
				      pick[i]);
	return buf;
}

static uint64_t mtop_of(const struct mtop *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->m[i].name, name))
			return t->m[i].n;
	return 0;
}

/* JVM options that record JFR's execution samples (settings=profile: every 10 ms per thread)
 * into file until the JVM exits. */
static void jfr_opts(const char *file, char *buf, size_t len, const char *opts[2])
{
	snprintf(buf, len, "-XX:StartFlightRecording=filename=%s,settings=profile,dumponexit=true",
		 file);
	opts[0] = buf;
	opts[1] = NULL;
}

/* jdk's `jfr print` of a recording's execution samples, depth frames each, into *ret
 * (malloc'd text). */
static void jfr_print(const char *jdk, const char *file, int depth, char **ret)
{
	char jfr[512], d[16];
	char *argv[] = { jfr, "print",	    "--events", "jdk.ExecutionSample", "--stack-depth",
			 d,   (char *)file, NULL };
	int rc;

	snprintf(jfr, sizeof(jfr), "%s/bin/jfr", jdk);
	snprintf(d, sizeof(d), "%d", depth);
	*ret = NULL;
	rc = run_capture(NULL, argv, 120000, ret);
	cr_assert_eq(rc, 0, "%s: %s", jfr, *ret ? *ret : "");
	cr_assert_not_null(*ret);
}

/* JFR's samples by their top frame's method ("pkg.Class.method", no parameters). */
static void jfr_leaves(const char *text, struct mtop *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (const char *l = strstr(text, "stackTrace = ["); l;
	     l = strstr(l + 1, "stackTrace = [")) {
		const char *f = strchr(l, '\n'), *paren;

		if (!f)
			break;
		f++;
		while (*f == ' ')
			f++;
		paren = strchr(f, '(');
		if (paren && paren < strchr(f, '\n'))
			mtop_add(ret, f, (size_t)(paren - f), 1);
	}
}

/* Rover's samples by their innermost Java frame's method (a frame "NAME (File.java...)"). */
static void rover_leaves(const struct folded *f, struct mtop *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *save = NULL, *last = NULL;

		for (char *s = strtok_r(copy, ";", &save); s; s = strtok_r(NULL, ";", &save))
			if (strstr(s, ".java"))
				last = s;
		if (last && strstr(last, " ("))
			mtop_add(ret, last, (size_t)(strstr(last, " (") - last), f->counts[i]);
		free(copy);
	}
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
		char jfr[512], jfropt[600], set_jfr[600], set_rover[600], *text;
		const char *opts[2];
		struct mtop jtop, rtop;
		uint64_t t0, t1;
		struct jprog p = { 0 };
		struct folded f;
		uint64_t a, b, jit;
		double want;

		snprintf(classes, sizeof(classes), "%s/classes-%zu", tmp, v);
		snprintf(out, sizeof(out), "%s/on-%zu.folded", tmp, v);
		snprintf(jfr, sizeof(jfr), "%s/on-%zu.jfr", tmp, v);
		jfr_opts(jfr, jfropt, sizeof(jfropt), opts);
		compile(jdks[v], classes, "tests/programs/java/TwoThreads.java");
		cr_assert_eq(jprog_start_opts(jdks[v], opts, classes, "rover.test.TwoThreads", "7",
					      NULL, &p),
			     0, "%s", jdks[v]);
		snprintf(pids, sizeof(pids), "%d", (int)p.pid);
		t0 = mono_ns();
		cr_assert_eq(run_cmd(argv, &err), 0, "%s: rover: %s", jdks[v], err);
		t1 = mono_ns();
		/* To its end (its recording written): its split while rover ran. */
		want = jprog_share_between(&p, t0, t1);
		jprog_end(&p);
		cr_assert_eq(folded_read(out, &f), 0);
		/* The second reference: JFR's execution samples of the same run name the same two
		 * hottest methods as rover's innermost Java frames. */
		jfr_print(jdks[v], jfr, 1, &text);
		jfr_leaves(text, &jtop);
		free(text);
		rover_leaves(&f, &rtop);
		cr_log_info("%s: JFR: burnA %lu, burnB %lu of %lu samples (burnA %.1f%%); rover's "
			    "hottest: %s; JFR's: %s",
			    jdks[v], mtop_of(&jtop, "rover.test.TwoThreads.burnA"),
			    mtop_of(&jtop, "rover.test.TwoThreads.burnB"), jtop.total,
			    pct(mtop_of(&jtop, "rover.test.TwoThreads.burnA"),
				mtop_of(&jtop, "rover.test.TwoThreads.burnA") +
					mtop_of(&jtop, "rover.test.TwoThreads.burnB")),
			    mtop_names(&rtop, 2, set_rover, sizeof(set_rover)),
			    mtop_names(&jtop, 2, set_jfr, sizeof(set_jfr)));
		cr_assert_gt(jtop.total, 100, "%s: JFR recorded %lu execution samples", jdks[v],
			     jtop.total);
		cr_assert_str_eq(set_jfr, "rover.test.TwoThreads.burnA,rover.test.TwoThreads.burnB",
				 "%s: JFR's hottest methods", jdks[v]);
		cr_assert_str_eq(set_rover, set_jfr, "%s: rover's hottest methods against JFR's",
				 jdks[v]);
		a = with_chain(&f, (const char *const[]){ "rover.test.TwoThreads.burnA (" }, 1);
		b = with_chain(&f, (const char *const[]){ "rover.test.TwoThreads.burnB (" }, 1);
		cr_log_info("%s: burnA %lu, burnB %lu of %lu; the program measured %.1f%%", jdks[v],
			    a, b, f.total, want);
		/* The JIT compiler's threads run no Java (C2 compiling burnA and burnB took a
		 * quarter of a loaded machine's samples in one CI run): of the others, the two
		 * burners' Java frames are most. */
		jit = with_chain(&f, (const char *const[]){ "CompileBroker::compiler_thread_loop" },
				 1);
		cr_assert_gt(a + b, (f.total - jit) * 8 / 10,
			     "%s: Java frames in %lu of %lu samples (%lu more in the JIT compiler)\n%s",
			     jdks[v], a + b, f.total - jit, jit, f.n ? f.stacks[0] : "");
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

/* ---- Inlined methods: frames of their own ---- */

/* "pkg.Class.method:LINE" (LINE "-" when none) of a JFR frame line ("pkg.Class.method(long,
 * int) line: 12") or of rover's frame ("pkg.Class.method (File.java:12)"), appended to out. */
static void frame_key(const char *f, size_t n, bool jfr, char *out, size_t len)
{
	const char *paren = memchr(f, '(', n), *at;
	size_t o = strlen(out), mn;
	int line = -1;

	if (!paren)
		return;
	mn = (size_t)(paren - f);
	if (!jfr && mn && f[mn - 1] == ' ')
		mn--;
	if (jfr && (at = strstr(f, ") line: ")) && at < f + n)
		line = atoi(at + 8);
	if (!jfr && (at = memchr(paren, ':', n - (size_t)(paren - f))))
		line = atoi(at + 1);
	if (line >= 0)
		snprintf(out + o, len - o, "%s%.*s:%d", o ? ";" : "", (int)mn, f, line);
	else
		snprintf(out + o, len - o, "%s%.*s:-", o ? ";" : "", (int)mn, f);
}

/* JFR's samples by their innermost depth frames, "m:line;caller:line;..." innermost first. */
static void jfr_chains(const char *text, size_t depth, struct mtop *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (const char *l = strstr(text, "stackTrace = ["); l;
	     l = strstr(l + 1, "stackTrace = [")) {
		char key[512] = "";
		const char *f = strchr(l, '\n');
		size_t k = 0;

		while (f && k < depth) {
			const char *end;

			f++;
			while (*f == ' ')
				f++;
			end = strchr(f, '\n');
			if (!end || *f == ']' || !strncmp(f, "...", 3))
				break;
			frame_key(f, (size_t)(end - f), true, key, sizeof(key));
			k++;
			f = end;
		}
		if (k == depth)
			mtop_add(ret, key, strlen(key), 1);
	}
}

/* Rover's samples by their innermost depth Java frames (NAME (File.java...)), as jfr_chains. */
static void rover_chains(const struct folded *f, size_t depth, struct mtop *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *save = NULL, *java[256], key[512] = "";
		size_t nj = 0;

		for (char *s = strtok_r(copy, ";", &save); s && nj < 256;
		     s = strtok_r(NULL, ";", &save))
			if (strstr(s, ".java"))
				java[nj++] = s;
		if (nj >= depth) {
			for (size_t k = 0; k < depth; k++)
				frame_key(java[nj - 1 - k], strlen(java[nj - 1 - k]), false, key,
					  sizeof(key));
			mtop_add(ret, key, strlen(key), f->counts[i]);
		}
		free(copy);
	}
}

/*
 * C2 inlines tests/programs/java/Inline.java's step() into mid() and mid() into hot() (the
 * JVM's own log says so: -Xlog:jit+inlining, no change to what it compiles): hot's compiled
 * frame holds all three. Rover must show them as three frames, step under mid under hot, each
 * with its line, in most samples, and JDK Flight Recorder's execution samples of the same run
 * must have the same innermost three frames and lines most often.
 */
Test(java, inlined_methods_are_frames_of_their_own_on_both_jdks)
{
	for (size_t v = 0; v < NJDKS; v++) {
		char classes[512], out[512], jfr[512], jfropt[600], ilog[512], ilogopt[600],
			pids[32];
		char *err = NULL, *text, *log;
		char *argv[] = { (char *)bin("rover"),
				 "profile",
				 "--type",
				 "on_cpu",
				 "--pid",
				 pids,
				 "--duration",
				 "4s",
				 "--dump-period",
				 "2ms",
				 "--output",
				 out,
				 NULL };
		const char *opts[3];
		struct mtop jtop, rtop;
		struct jprog p = { 0 };
		struct folded f;
		uint64_t chain;

		snprintf(classes, sizeof(classes), "%s/classes-%zu", tmp, v);
		snprintf(out, sizeof(out), "%s/inline-%zu.folded", tmp, v);
		snprintf(jfr, sizeof(jfr), "%s/inline-%zu.jfr", tmp, v);
		snprintf(ilog, sizeof(ilog), "%s/inline-%zu.log", tmp, v);
		jfr_opts(jfr, jfropt, sizeof(jfropt), opts);
		snprintf(ilogopt, sizeof(ilogopt), "-Xlog:jit+inlining=debug:file=%s", ilog);
		opts[1] = ilogopt;
		opts[2] = NULL;
		compile(jdks[v], classes, "tests/programs/java/Inline.java");
		cr_assert_eq(jprog_start_opts(jdks[v], opts, classes, "rover.test.Inline", "6",
					      NULL, &p),
			     0, "%s", jdks[v]);
		snprintf(pids, sizeof(pids), "%d", (int)p.pid);
		cr_assert_eq(run_cmd(argv, &err), 0, "%s: rover: %s", jdks[v], err);
		while (fgets(jfropt, sizeof(jfropt), p.out))
			; /* to its end: its recording written */
		jprog_end(&p);
		log = slurp(ilog, NULL);
		cr_assert_not_null(log, "%s: no inlining log", jdks[v]);
		cr_assert(strstr(log, "rover.test.Inline::step (") &&
				  strstr(log, "rover.test.Inline::mid (") &&
				  strstr(log, "inline (hot)"),
			  "%s: C2 did not inline step and mid:\n%s", jdks[v], log);
		free(log);
		cr_assert_eq(folded_read(out, &f), 0);
		jfr_print(jdks[v], jfr, 3, &text);
		jfr_chains(text, 3, &jtop);
		free(text);
		rover_chains(&f, 3, &rtop);
		(void)mtop_names(&jtop, 1, jfropt, sizeof(jfropt));
		(void)mtop_names(&rtop, 1, ilogopt, sizeof(ilogopt));
		chain = rtop.n ? rtop.m[0].n : 0;
		cr_log_info("%s: rover: %s in %lu of %lu samples; JFR: %s in %lu of %lu", jdks[v],
			    ilogopt, chain, f.total, jfropt, jtop.n ? jtop.m[0].n : 0, jtop.total);
		cr_assert(!strncmp(ilogopt, "rover.test.Inline.step:", 23) &&
				  strstr(ilogopt, ";rover.test.Inline.mid:") &&
				  strstr(ilogopt, ";rover.test.Inline.hot:") &&
				  !strstr(ilogopt, ":-"),
			  "%s: rover's innermost frames most often: %s", jdks[v], ilogopt);
		cr_assert_gt(chain, f.total / 2, "%s: step, mid, hot in %lu of %lu samples\n%s",
			     jdks[v], chain, f.total, f.n ? f.stacks[0] : "");
		cr_assert_str_eq(ilogopt, jfropt, "%s: rover's innermost frames against JFR's",
				 jdks[v]);
		folded_free(&f);
		free(err);
	}
}

/*
 * Native frames on both sides of the Java frames: tests/programs/java/jni_host, a C program,
 * creates a JVM (JNI_CreateJavaVM on its main thread) and calls JniHost.run from its
 * host_call_java; the Java code burns CPU in größe and in the native method nativeBurn (called
 * from 本地), the C program's host_native_burn. Java code's samples must have main and
 * host_call_java under the Java frames (the native frames that called the entry frame), the
 * native method's host_native_burn above them, every frame's callers in order, and the two
 * methods' names decoded from modified UTF-8. The native method calls back into Java
 * (JniHost.inner, from host_call_back): its samples must have every caller down to main.
 */
Test(java, native_frames_around_java_called_from_native_code_on_both_jdks)
{
	for (size_t v = 0; v < NJDKS; v++) {
		static const char *const chain_java[] = {
			"main", "host_call_java", "rover.test.JniHost.run (JniHost.java:",
			"rover.test.JniHost.größe (JniHost.java"
		};
		static const char *const chain_native[] = {
			"main",
			"host_call_java",
			"rover.test.JniHost.run (JniHost.java:",
			"rover.test.JniHost.本地 (JniHost.java:",
			"rover.test.JniHost.nativeBurn (JniHost.java",
			"host_native_burn"
		};
		/* Java under native code under Java: the walk goes on past the inner entry frame
		 * at the Java frames the JavaCallWrapper saved. */
		static const char *const chain_nested[] = {
			"main",
			"host_call_java",
			"rover.test.JniHost.run (JniHost.java:",
			"rover.test.JniHost.本地 (JniHost.java:",
			"rover.test.JniHost.nativeBurn (JniHost.java",
			"host_call_back",
			"rover.test.JniHost.inner (JniHost.java:",
			"rover.test.JniHost.größe (JniHost.java"
		};
		char classes[512], out[512], pids[32], libjvm[512], *err = NULL;
		char *argv[] = { (char *)bin("rover"),
				 "profile",
				 "--type",
				 "on_cpu",
				 "--pid",
				 pids,
				 "--duration",
				 "4s",
				 "--dump-period",
				 "2ms",
				 "--output",
				 out,
				 NULL };
		const char *host = bin("tests/programs/java/jni_host");
		struct jprog p = { 0 };
		uint64_t jb, nb, nj, cj, cn, ib, ci;
		struct folded f;

		snprintf(classes, sizeof(classes), "%s/classes-%zu", tmp, v);
		snprintf(out, sizeof(out), "%s/jni-%zu.folded", tmp, v);
		snprintf(libjvm, sizeof(libjvm), "%s/lib/server/libjvm.so", jdks[v]);
		compile(jdks[v], classes, "tests/programs/java/JniHost.java");
		cr_assert_eq(prog_start(host,
					(const char *const[]){ host, libjvm, classes, "7", NULL },
					&p),
			     0, "%s: %s", jdks[v], host);
		snprintf(pids, sizeof(pids), "%d", (int)p.pid);
		cr_assert_eq(run_cmd(argv, &err), 0, "%s: rover: %s", jdks[v], err);
		jprog_end(&p);
		cr_assert_eq(folded_read(out, &f), 0);
		jb = with_chain(&f, (const char *const[]){ "rover.test.JniHost.größe (" }, 1);
		nb = with_chain(&f, (const char *const[]){ "host_native_burn" }, 1);
		/* A sample whose thread had no last Java frame has no Java frames at all (its
		 * status says so; docs/java-frames.md, Not yet): the order is checked on the
		 * others. */
		nj = with_chain(&f,
				(const char *const[]){ "rover.test.JniHost.", "host_native_burn" },
				2);
		cj = with_chain(&f, chain_java, 4);
		cn = with_chain(&f, chain_native, 6);
		ib = with_chain(&f, (const char *const[]){ "rover.test.JniHost.inner (" }, 1);
		ci = with_chain(&f, chain_nested, 8);
		cr_log_info("%s: größe %lu (%lu under main;host_call_java;run), "
			    "host_native_burn %lu (%lu with Java frames, %lu under "
			    "main;host_call_java;run;本地;nativeBurn) of %lu samples",
			    jdks[v], jb, cj, nb, nj, cn, f.total);
		cr_assert_gt(jb, f.total / 4, "%s: größe in %lu of %lu samples\n%s", jdks[v], jb,
			     f.total, f.n ? f.stacks[0] : "");
		cr_assert_gt(nb, f.total / 8, "%s: host_native_burn in %lu of %lu samples\n%s",
			     jdks[v], nb, f.total, f.n ? f.stacks[0] : "");
		cr_assert_gt(nj, nb * 3 / 4, "%s: host_native_burn with Java frames in %lu of %lu",
			     jdks[v], nj, nb);
		cr_assert_gt(cj, jb * 9 / 10,
			     "%s: größe: native callers missing or out of order\n%s", jdks[v],
			     f.n ? f.stacks[0] : "");
		cr_assert_gt(cn, nj * 9 / 10,
			     "%s: host_native_burn: callers missing or out of order\n%s", jdks[v],
			     f.n ? f.stacks[0] : "");
		cr_log_info("%s: inner %lu (%lu under main;...;nativeBurn;host_call_back)", jdks[v],
			    ib, ci);
		cr_assert_gt(ib, f.total / 20, "%s: inner in %lu of %lu samples", jdks[v], ib,
			     f.total);
		cr_assert_gt(ci, ib * 9 / 10,
			     "%s: inner: callers past the inner entry frame missing or out of order",
			     jdks[v]);
		folded_free(&f);
		free(err);
	}
}
