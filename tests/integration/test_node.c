// SPDX-License-Identifier: Apache-2.0
/*
 * JavaScript (V8) frames through the whole pipeline with no node flag: tests/programs/node/
 * split.js burns CPU in two functions, alpha and beta, called by timed() from outer(), and
 * measures its own split with process.cpuUsage() around each call; `rover profile` must name
 * both, "function (split.js:LINE)" with the line each is declared on, with the program's split, under their callers in order. Run as
 * node runs by default (Ignition, then Sparkplug and TurboFan code), and with node's own
 * --no-opt (interpreted and baseline frames only) and --jitless (interpreted frames only)
 * so that each kind of frame is seen, and with --perf-basic-prof (node's perf map names its JIT
 * code too: the same names must come out), and against node --cpu-prof's hottest functions.
 * churn.js makes and drops functions in a loop: no frame
 * may be named with a function that was not running.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(node, .init = tmp_setup, .fini = tmp_teardown, .timeout = 300);

struct nprog {
	pid_t pid;
	FILE *out; /* its stdout, past "ready" */
};

/* node [flag] script args...: started, past its "ready". */
static int nprog_start(const char *flag, const char *script, const char *a1, const char *a2,
		       const char *a3, struct nprog *ret)
{
	char line[256];
	int pfd[2];

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	ret->pid = fork();
	if (ret->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		/* Files node may write (--perf-basic-prof: its isolate log) go in the test's directory. */
		if (chdir(tmp))
			_exit(126);
		if (flag)
			execlp("node", "node", flag, script, a1, a2, a3, (char *)NULL);
		else
			execlp("node", "node", script, a1, a2, a3, (char *)NULL);
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
static double nprog_share(struct nprog *p, const char *name)
{
	char line[256], fn[128];
	double share = -1, v;

	while (fgets(line, sizeof(line), p->out))
		if (sscanf(line, "share %127s %lf", fn, &v) == 2 && !strcmp(fn, name))
			share = v;
	return share;
}

static void nprog_end(struct nprog *p)
{
	if (p->out)
		fclose(p->out);
	p->out = NULL;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
}

/*
 * Whether frame s names the function want names: "fn (script.js:LINE)" the same up to the
 * line, which is the line the frame runs (an interpreted frame's) or its function's first.
 */
static int same_fn(const char *s, const char *want)
{
	const char *a = strrchr(s, ':'), *b = strrchr(want, ':');

	if (!a || !b || !strstr(s, " (") || !strstr(want, " ("))
		return !strcmp(s, want);
	return a - s == b - want && !strncmp(s, want, (size_t)(a - s));
}

/* Samples whose stack holds frames of the functions names[0..n) (same_fn) in that order. */
static uint64_t with_chain(const struct folded *f, const char *const *names, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *save = NULL;
		size_t k = 0;

		for (char *s = strtok_r(copy, ";", &save); s && k < n;
		     s = strtok_r(NULL, ";", &save))
			if (same_fn(s, names[k]))
				k++;
		if (k == n)
			sum += f->counts[i];
		free(copy);
	}
	return sum;
}

/* Samples with a frame that holds part. */
static uint64_t with_part(const struct folded *f, const char *part)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *save = NULL;

		for (char *s = strtok_r(copy, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
			if (strstr(s, part)) {
				sum += f->counts[i];
				break;
			}
		}
		free(copy);
	}
	return sum;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* rover profile of pid for seconds into out. */
static void profile(pid_t pid, const char *seconds, const char *out)
{
	char pids[32], *err = NULL;
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--type",
			 "on_cpu",
			 "--pid",
			 pids,
			 "--duration",
			 (char *)seconds,
			 "--dump-period",
			 "2ms",
			 "--output",
			 (char *)out,
			 NULL };

	snprintf(pids, sizeof(pids), "%d", (int)pid);
	cr_assert_eq(run_cmd(argv, &err), 0, "rover: %s", err);
	free(err);
}

/* "fn (split.js:LINE)", LINE the one split.js declares fn on. */
static const char *split_name(const char *fn)
{
	static char names[4][128];
	static int next;
	char want[64], line[512], *name = names[next++ % 4];
	FILE *f = fopen(src("tests/programs/node/split.js"), "r");
	int n = 0;

	cr_assert(f);
	snprintf(want, sizeof(want), "function %s(", fn);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (!strncmp(line, want, strlen(want)))
			break;
	}
	fclose(f);
	snprintf(name, 128, "%s (split.js:%d)", fn, n);
	return name;
}

static void split_under(const char *flag, const char *tag)
{
	const char *chain_a[] = { split_name("outer"), split_name("timed"), split_name("alpha") };
	const char *chain_b[] = { chain_a[0], chain_a[1], split_name("beta") };
	char out[512];
	struct nprog p = { 0 };
	struct folded f;
	uint64_t a, b, js;
	double want;

	snprintf(out, sizeof(out), "%s/split-%s.folded", tmp, tag);
	/* Less work per call without a JIT: calls still take a millisecond or more. */
	cr_assert_eq(nprog_start(flag, src("tests/programs/node/split.js"), "7",
				 flag && !strcmp(flag, "--jitless") ? "900" : "3000",
				 flag && !strcmp(flag, "--jitless") ? "2100" : "7000", &p),
		     0, "%s: node did not start", tag);
	profile(p.pid, "5s", out);
	want = nprog_share(&p, "alpha");
	nprog_end(&p);
	if (flag && !strcmp(flag, "--perf-basic-prof")) {
		char map[64];

		snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)p.pid);
		unlink(map);
	}
	cr_assert_eq(folded_read(out, &f), 0);
	a = with_chain(&f, chain_a + 2, 1);
	b = with_chain(&f, chain_b + 2, 1);
	js = with_part(&f, " (split.js");
	cr_log_info("node %s: alpha %lu, beta %lu, with JS frames %lu of %lu; alpha %.1f%% in the "
		    "profile, %.1f%% measured",
		    tag, a, b, js, f.total, pct(a, a + b), want);
	cr_assert_gt(js, f.total * 8 / 10, "%s: JavaScript frames in %lu of %lu samples\n%s", tag,
		     js, f.total, f.n ? f.stacks[0] : "");
	cr_assert_gt(want, 0, "%s: the program said no share", tag);
	cr_assert(pct(a, a + b) > want - 5 && pct(a, a + b) < want + 5,
		  "%s: alpha %.1f%% in the profile, %.1f%% measured", tag, pct(a, a + b), want);
	cr_assert_gt(with_chain(&f, chain_a, 3), a * 9 / 10, "%s: alpha's callers out of order",
		     tag);
	cr_assert_gt(with_chain(&f, chain_b, 3), b * 9 / 10, "%s: beta's callers out of order",
		     tag);
	folded_free(&f);
}

Test(node, on_cpu_js_frames_default)
{
	split_under(NULL, "default");
}

Test(node, on_cpu_js_frames_interpreted_and_baseline)
{
	split_under("--no-opt", "no-opt");
}

Test(node, on_cpu_js_frames_interpreted_only)
{
	split_under("--jitless", "jitless");
}

/* node's own perf map names JIT code too: the walk's names agree with it and win. */
Test(node, on_cpu_js_frames_with_perf_basic_prof)
{
	split_under("--perf-basic-prof", "perf-basic-prof");
}

/*
 * lines.js: hot()'s two loops on two lines, its split between them measured by the program.
 * Interpreted and baseline frames are named with the line they run: the two lines' shares of
 * hot's samples within 5 points of the program's. Optimized frames have no offset yet
 * (docs/node-frames.md): by default, where hot runs TurboFan code, its frames keep the line
 * it starts on, none another.
 */
static int line_of(const char *name, const char *prefix);

static void lines_under(const char *flag, const char *tag, int own_lines)
{
	const char *loop1 = "\tfor (let i = 0; i < a;", *loop2 = "\tfor (let i = 0; i < b;";
	char out[512], first[64], l1[64], l2[64];
	struct nprog p = { 0 };
	struct folded f;
	uint64_t n1, n2, nfirst, hot;
	double want;

	snprintf(out, sizeof(out), "%s/lines-%s.folded", tmp, tag);
	snprintf(first, sizeof(first), "hot (lines.js:%d)", line_of("lines.js", "function hot("));
	snprintf(l1, sizeof(l1), "hot (lines.js:%d)", line_of("lines.js", loop1));
	snprintf(l2, sizeof(l2), "hot (lines.js:%d)", line_of("lines.js", loop2));
	cr_assert_eq(nprog_start(flag, src("tests/programs/node/lines.js"), "7",
				 own_lines ? "30000" : "300000", own_lines ? "70000" : "700000",
				 &p),
		     0, "%s: node did not start", tag);
	profile(p.pid, "5s", out);
	want = nprog_share(&p, "first");
	nprog_end(&p);
	cr_assert_eq(folded_read(out, &f), 0);
	n1 = with_part(&f, l1);
	n2 = with_part(&f, l2);
	nfirst = with_part(&f, first);
	hot = with_part(&f, "hot (lines.js:");
	cr_log_info("node %s: %s %lu, %s %lu, %s %lu of %lu samples in hot, %lu in all; the "
		    "first loop %.1f%% in the profile, %.1f%% measured",
		    tag, l1, n1, l2, n2, first, nfirst, hot, f.total, pct(n1, n1 + n2), want);
	cr_assert_gt(hot, f.total * 7 / 10, "%s: hot in %lu of %lu samples", tag, hot, f.total);
	cr_assert_gt(want, 0, "%s: the program said no share", tag);
	if (own_lines) {
		cr_assert_gt(n1 + n2, hot * 9 / 10, "%s: the loops' lines in %lu of hot's %lu", tag,
			     n1 + n2, hot);
		cr_assert(pct(n1, n1 + n2) > want - 5 && pct(n1, n1 + n2) < want + 5,
			  "%s: the first loop %.1f%% in the profile, %.1f%% measured", tag,
			  pct(n1, n1 + n2), want);
	} else {
		cr_assert_gt(nfirst, hot * 9 / 10, "%s: hot's first line in %lu of its %lu", tag,
			     nfirst, hot);
		cr_assert_lt(n1 + n2, hot / 20, "%s: the loops' lines in %lu of hot's %lu", tag,
			     n1 + n2, hot);
	}
	folded_free(&f);
}

Test(node, on_cpu_lines_of_interpreted_frames)
{
	lines_under("--jitless", "jitless", 1);
}

/* --no-opt: hot is interpreted, then runs baseline code (Sparkplug) within milliseconds. */
Test(node, on_cpu_lines_of_baseline_frames)
{
	lines_under("--no-opt", "no-opt", 1);
}

Test(node, on_cpu_lines_of_optimized_frames_are_their_functions_first)
{
	lines_under(NULL, "default", 0);
}

/* Whether s is "f" and digits: one of churn.js's functions. */
static int is_made(const char *s)
{
	if (*s++ != 'f' || !*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

Test(node, functions_made_and_dropped_never_misnamed)
{
	char out[512];
	struct nprog p = { 0 };
	struct folded f;
	uint64_t made = 0, bad = 0, js;

	snprintf(out, sizeof(out), "%s/churn.folded", tmp);
	cr_assert_eq(nprog_start(NULL, src("tests/programs/node/churn.js"), "7", NULL, NULL, &p),
		     0);
	profile(p.pid, "5s", out);
	nprog_end(&p);
	cr_assert_eq(folded_read(out, &f), 0);
	for (size_t i = 0; i < f.n; i++) {
		char *copy = strdup(f.stacks[i]), *save = NULL, *prev = NULL;
		int seen = 0, wrong = 0;

		for (char *s = strtok_r(copy, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
			if (is_made(s)) {
				/* Made by churn, called by it, and never calling another. */
				wrong |= seen || !prev || strncmp(prev, "churn (churn.js:", 16);
				seen = 1;
			} else if (seen && strstr(s, " (churn.js")) {
				wrong = 1;
			}
			prev = s;
		}
		if (seen)
			made += f.counts[i];
		if (wrong) {
			bad += f.counts[i];
			cr_log_error("misnamed: %s", f.stacks[i]);
		}
		free(copy);
	}
	js = with_part(&f, " (churn.js");
	cr_log_info("churn: %lu samples in made functions, %lu misnamed, of %lu with churn.js "
		    "frames, %lu in all (TurboFan's thread is busy too)",
		    made, bad, js, f.total);
	cr_assert_eq(bad, 0);
	cr_assert_gt(made, js * 7 / 10, "made functions in %lu of %lu samples in churn.js", made,
		     js);
	folded_free(&f);
}

/* A line's number in tests/programs/node/NAME: the first that starts with prefix. */
static int line_of(const char *name, const char *prefix)
{
	char path[256], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "tests/programs/node/%s", name);
	f = fopen(src(path), "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (!strncmp(line, prefix, strlen(prefix)))
			break;
	}
	fclose(f);
	return n;
}

Test(node, off_cpu_blocked_in_libc_shows_the_js_that_blocked)
{
	char out[512], pids[32], waiter[64], loop[64], *err = NULL;
	char *argv[] = { (char *)bin("rover"), "profile", "--type",   "off_cpu", "--pid", pids,
			 "--duration",	       "3s",	  "--output", out,	 NULL };
	const char *chain[2] = { loop, waiter };
	struct nprog p = { 0 };
	struct folded f;
	uint64_t in_js;

	snprintf(out, sizeof(out), "%s/block.folded", tmp);
	snprintf(waiter, sizeof(waiter), "waiter (block.js:%d)",
		 line_of("block.js", "function waiter("));
	snprintf(loop, sizeof(loop), "loop (block.js:%d)", line_of("block.js", "function loop("));
	cr_assert_eq(nprog_start(NULL, src("tests/programs/node/block.js"), "5", NULL, NULL, &p),
		     0);
	snprintf(pids, sizeof(pids), "%d", (int)p.pid);
	cr_assert_eq(run_cmd(argv, &err), 0, "rover: %s", err);
	free(err);
	nprog_end(&p);
	cr_assert_eq(folded_read(out, &f), 0);
	in_js = with_chain(&f, chain, 2);
	cr_log_info("off_cpu: %lu of %lu us blocked under %s;%s", in_js, f.total, loop, waiter);
	cr_assert_gt(in_js, f.total * 8 / 10, "blocked in JavaScript %lu of %lu\n%s", in_js,
		     f.total, f.n ? f.stacks[0] : "");
	folded_free(&f);
}

/*
 * Samples per function of split.js by its innermost split.js frame in f ("fn (split.js:N)"),
 * the two most into top[0] (the most) and top[1].
 */
static void rover_top2(const struct folded *f, char top[2][64])
{
	char names[16][64] = { { 0 } };
	uint64_t counts[16] = { 0 };
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *save = NULL, *last = NULL;

		for (char *s = strtok_r(copy, ";", &save); s; s = strtok_r(NULL, ";", &save))
			if (strstr(s, " (split.js:"))
				last = s;
		if (last) {
			size_t k;

			*strstr(last, " (split.js:") = 0;
			for (k = 0; k < n && strcmp(names[k], last); k++)
				;
			if (k == n && n < 16)
				snprintf(names[n++], 64, "%s", last);
			if (k < n)
				counts[k] += f->counts[i];
		}
		free(copy);
	}
	top[0][0] = top[1][0] = 0;
	for (int r = 0; r < 2; r++) {
		size_t best = n;

		for (size_t k = 0; k < n; k++)
			if (counts[k] && (best == n || counts[k] > counts[best]))
				best = k;
		if (best == n)
			break;
		snprintf(top[r], 64, "%s", names[best]);
		cr_log_info("node: rover's self samples %s %lu", names[best], counts[best]);
		counts[best] = 0;
	}
}

/*
 * node's own profiler as a second reference: the same workload run again under node
 * --cpu-prof; the two functions with the most self samples (innermost frame) in its
 * .cpuprofile, read by tests/programs/node/cpuprof_top.js, are rover's two, in the same
 * order. split.js gives beta 70% and alpha 30%: 40 points apart, no sampling noise turns
 * them round, while a walk that misnamed or lost either would.
 */
Test(node, on_cpu_hottest_functions_are_cpu_profs)
{
	char out[512], dir[512], prof[600], *cap = NULL, want[2][64] = { { 0 } }, got[2][64];
	char *argv[] = { "node",
			 "--cpu-prof",
			 "--cpu-prof-dir",
			 dir,
			 "--cpu-prof-name",
			 "split.cpuprofile",
			 (char *)src("tests/programs/node/split.js"),
			 "4",
			 "3000",
			 "7000",
			 NULL };
	char *top[] = { "node", (char *)src("tests/programs/node/cpuprof_top.js"), prof, "split.js",
			NULL };
	struct nprog p = { 0 };
	struct folded f;
	int r = 0;

	snprintf(out, sizeof(out), "%s/split-top.folded", tmp);
	snprintf(dir, sizeof(dir), "%s/cpuprof", tmp);
	snprintf(prof, sizeof(prof), "%s/split.cpuprofile", dir);
	cr_assert_eq(nprog_start(NULL, src("tests/programs/node/split.js"), "7", "3000", "7000",
				 &p),
		     0, "node did not start");
	profile(p.pid, "5s", out);
	nprog_end(&p);
	cr_assert_eq(folded_read(out, &f), 0);
	rover_top2(&f, got);
	folded_free(&f);

	cr_assert_eq(run_capture(NULL, argv, 60000, &cap), 0, "node --cpu-prof: %s", cap);
	free(cap);
	cap = NULL;
	cr_assert_eq(run_capture(NULL, top, 60000, &cap), 0, "cpuprof_top.js: %s", cap);
	for (char *s = cap, *save = NULL, *l; r < 2 && (l = strtok_r(s, "\n", &save)); s = NULL) {
		char name[64];
		unsigned long n;

		if (sscanf(l, "self %63s %lu", name, &n) == 2) {
			cr_log_info("node: --cpu-prof's self samples %s %lu", name, n);
			snprintf(want[r++], 64, "%s", name);
		}
	}
	free(cap);
	cr_assert_eq(r, 2, "--cpu-prof named %d functions of split.js", r);
	cr_assert_str_eq(got[0], want[0], "hottest: rover %s, --cpu-prof %s", got[0], want[0]);
	cr_assert_str_eq(got[1], want[1], "second: rover %s, --cpu-prof %s", got[1], want[1]);
}

/*
 * Blocked in a synchronous file read: readsync.js waits in fs.readSync on a FIFO the test
 * writes a line to every 250 ms during the 5 s profile (OFF_CPU time is counted when the
 * thread runs again, so a read must end inside it), so its blocked time is the reads',
 * under reader() and loop(), but for the reads that end before the shipper found node (the
 * first, 250 ms at most: 5% of 4.75 s). 18 lines, then "end"; nprog_end kills node whatever
 * happens.
 */
Test(node, off_cpu_blocked_in_read_sync_shows_the_js_that_blocked)
{
	char out[512], fifo[512], pids[32], reader[64], loop[64], line[128];
	char *argv[] = { (char *)bin("rover"), "profile", "--type",   "off_cpu", "--pid", pids,
			 "--duration",	       "5s",	  "--output", out,	 NULL };
	const char *chain[2] = { loop, reader };
	struct nprog p = { 0 };
	struct folded f;
	uint64_t in_js;
	pid_t r;
	int fd, reads = 0;

	snprintf(out, sizeof(out), "%s/readsync.folded", tmp);
	snprintf(fifo, sizeof(fifo), "%s/readsync.fifo", tmp);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(reader, sizeof(reader), "reader (readsync.js:%d)",
		 line_of("readsync.js", "function reader("));
	snprintf(loop, sizeof(loop), "loop (readsync.js:%d)",
		 line_of("readsync.js", "function loop("));
	cr_assert_eq(nprog_start(NULL, src("tests/programs/node/readsync.js"), fifo, NULL, NULL,
				 &p),
		     0);
	snprintf(pids, sizeof(pids), "%d", (int)p.pid);
	r = spawn_cmd(argv, NULL);
	cr_assert_gt(r, 0);
	fd = open(fifo, O_WRONLY | O_NONBLOCK);
	cr_assert_geq(fd, 0);
	for (int i = 0; i <= 18; i++) {
		sleep_ms(250);
		cr_assert_eq(write(fd, i < 18 ? "go\n" : "end\n", i < 18 ? 3 : 4), i < 18 ? 3 : 4);
		/* node's answer: the read ended, so the next write is read on its own. */
		cr_assert(fgets(line, sizeof(line), p.out), "node did not read");
		reads += !strncmp(line, "read ", 5);
	}
	close(fd);
	cr_assert_eq(wait_cmd(r, 30000), 0, "rover profile failed");
	nprog_end(&p);
	cr_assert_eq(reads, 19);
	cr_assert_eq(folded_read(out, &f), 0);
	in_js = with_chain(&f, chain, 2);
	cr_log_info("off_cpu: %lu of %lu us blocked under %s;%s", in_js, f.total, loop, reader);
	cr_assert_gt(in_js, f.total * 8 / 10, "blocked in JavaScript %lu of %lu\n%s", in_js,
		     f.total, f.n ? f.stacks[0] : "");
	folded_free(&f);
}
