// SPDX-License-Identifier: Apache-2.0
/*
 * Python frames through the whole pipeline, on every interpreter of this machine (pyenv's
 * 3.8-3.13 with the interpreter in libpython3.X.so, Debian's python3.11 with it in a non-PIE
 * executable): programs that measure their own split (tests/programs/python/), profiled by
 * `rover profile` with no flag; the frames' shares must match theirs.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(python, .init = tmp_setup, .fini = tmp_teardown, .timeout = 600);

/* An interpreter: pyenv's X.Y, or Debian's /usr/bin/python3.11. */
static const char *interpreter(const char *minor, char *buf, size_t len)
{
	const char *root = getenv("PYENV_ROOT");
	char pat[512];
	glob_t g;

	if (!strcmp(minor, "debian"))
		return "/usr/bin/python3.11";
	snprintf(pat, sizeof(pat), "%s/versions/%s.*/bin/python%s", root ? root : "/root/.pyenv",
		 minor, minor);
	if (glob(pat, 0, NULL, &g) || !g.gl_pathc) {
		globfree(&g);
		return NULL;
	}
	snprintf(buf, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return buf;
}

static const char *const versions[] = { "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "debian" };
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

struct pyprog {
	pid_t pid;
	FILE *out; /* its stdout, past "ready" */
};

/* python script seconds, once it printed "ready". */
static int pyprog_start(const char *python, const char *script, const char *seconds,
			struct pyprog *ret)
{
	char line[256];
	int pfd[2];

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	ret->pid = fork();
	if (ret->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		execl(python, python, src(script), seconds, (char *)NULL);
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
static double pyprog_share(struct pyprog *p, const char *name)
{
	char line[256], fn[128];
	double share = -1, v;

	while (fgets(line, sizeof(line), p->out))
		if (sscanf(line, "share %127s %lf", fn, &v) == 2 && !strcmp(fn, name))
			share = v;
	return share;
}

static void pyprog_end(struct pyprog *p)
{
	if (p->out)
		fclose(p->out);
	p->out = NULL;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
}

/* `rover profile` of pid for duration (type on_cpu or off_cpu) into tmp/name, read back. */
static int profile(pid_t pid, const char *type, const char *duration, const char *name,
		   struct folded *ret, char **ret_err)
{
	char pids[32], out[4096];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--type",
			 (char *)type,
			 "--pid",
			 pids,
			 "--duration",
			 (char *)duration,
			 "--dump-period",
			 "2ms",
			 "--output",
			 out,
			 NULL };
	int rc;

	snprintf(pids, sizeof(pids), "%d", (int)pid);
	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	rc = run_cmd(argv, ret_err);
	if (rc == 0)
		cr_assert_eq(folded_read(out, ret), 0);
	return rc;
}

/* The frames of a folded stack, split in place: their count. */
static size_t split_frames(char *stack, char **frames, size_t max)
{
	size_t n = 0;

	for (char *s = strtok(stack, ";"); s && n < max; s = strtok(NULL, ";"))
		frames[n++] = s;
	return n;
}

/* The index of the first frame (outermost first) starting with prefix after from, or -1. */
static long frame_at(char *const *frames, size_t n, size_t from, const char *prefix)
{
	for (size_t i = from; i < n; i++)
		if (!strncmp(frames[i], prefix, strlen(prefix)))
			return (long)i;
	return -1;
}

/*
 * Samples whose stack holds the Python frames prefixes[0..n) in that order, outermost first,
 * each "qualname (" of a frame.
 */
static uint64_t with_chain(const struct folded *f, const char *const *prefixes, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < f->n; i++) {
		char *copy = strdup(f->stacks[i]), *frames[512];
		size_t nf = split_frames(copy, frames, 512);
		long at = -1;
		size_t k;

		for (k = 0; k < n; k++) {
			at = frame_at(frames, nf, (size_t)(at + 1), prefixes[k]);
			if (at < 0)
				break;
		}
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

/*
 * ON_CPU: two threads, each 3:1 between hot_outer_a and hot_outer_b, each through hot_inner
 * and spin. The profile's split is the program's own within 3 points, the Python callers in
 * order under the thread's native frames, for every version.
 */
Test(python, on_cpu_python_frames_at_every_version)
{
	for (size_t v = 0; v < NVERSIONS; v++) {
		static const char *const chain_a[] = {
			"start_thread", "worker (two_funcs.py:", "hot_outer_a (two_funcs.py:",
			"hot_inner (two_funcs.py:", "spin (two_funcs.py:"
		};
		char buf[512], *err = NULL;
		const char *py = interpreter(versions[v], buf, sizeof(buf));
		struct pyprog p;
		struct folded f;
		uint64_t a, b;
		double want;

		cr_assert_not_null(py, "no Python %s on this machine", versions[v]);
		cr_assert_eq(pyprog_start(py, "tests/programs/python/two_funcs.py", "7", &p), 0,
			     "%s", py);
		cr_assert_eq(profile(p.pid, "on_cpu", "5s", "on.folded", &f, &err), 0,
			     "%s: rover: %s", py, err);
		want = pyprog_share(&p, "hot_outer_a");
		pyprog_end(&p);
		a = with_chain(&f, (const char *const[]){ "hot_outer_a (two_funcs.py:" }, 1);
		b = with_chain(&f, (const char *const[]){ "hot_outer_b (two_funcs.py:" }, 1);
		cr_log_info("%s: hot_outer_a %lu, hot_outer_b %lu of %lu; the program measured "
			    "%.1f%%",
			    py, a, b, f.total, want);
		cr_assert_gt(a + b, f.total / 2, "%s: Python frames in %lu of %lu samples\n%s", py,
			     a + b, f.total, f.n ? f.stacks[0] : "");
		cr_assert_gt(want, 0, "%s: the program said no share", py);
		/*
		 * Within 3 points of the program's own split, or 4.5 binomial standard deviations
		 * of the samples taken where fewer: 5 000 samples when the two threads have their
		 * CPU (500 Hz, 5 s), a loaded machine gives them a few hundred (+-3 points needs
		 * 4 200 at 75%; +-7.8 at 500). A false failure about once in 100 000 runs, whatever
		 * the load; a wrong split of the frames still fails.
		 */
		cr_assert_gt(a + b, 300, "%s: too few samples: %lu of %lu", py, a + b, f.total);
		{
			double sd = 100.0 *
				    sqrt(want / 100.0 * (1 - want / 100.0) / (double)(a + b)),
			       tol = 4.5 * sd > 3 ? 4.5 * sd : 3;

			cr_assert(fabs(pct(a, a + b) - want) < tol,
				  "%s: hot_outer_a %.1f%% in the profile (%lu samples), %.1f%% "
				  "measured, +-%.1f allowed",
				  py, pct(a, a + b), a + b, want, tol);
		}
		cr_assert_gt(with_chain(&f, chain_a, 5), a * 8 / 10,
			     "%s: callers out of order or missing\n%s", py, f.n ? f.stacks[0] : "");
		folded_free(&f);
		free(err);
	}
}

/* OFF_CPU: one thread blocked 3:1 in a sleep and in a pipe read, per its own clock. */
Test(python, off_cpu_python_frames_at_every_version)
{
	for (size_t v = 0; v < NVERSIONS; v++) {
		char buf[512], *err = NULL;
		const char *py = interpreter(versions[v], buf, sizeof(buf));
		struct pyprog p;
		struct folded f;
		uint64_t a, b;
		double want;

		cr_assert_not_null(py, "no Python %s on this machine", versions[v]);
		cr_assert_eq(pyprog_start(py, "tests/programs/python/block_two.py", "6", &p), 0);
		cr_assert_eq(profile(p.pid, "off_cpu", "4s", "off.folded", &f, &err), 0,
			     "%s: rover: %s", py, err);
		want = pyprog_share(&p, "wait_in_sleep");
		pyprog_end(&p);
		a = with_chain(&f, (const char *const[]){ "wait_in_sleep (block_two.py:" }, 1);
		b = with_chain(&f, (const char *const[]){ "wait_in_pipe (block_two.py:" }, 1);
		cr_log_info("%s: wait_in_sleep %lu us, wait_in_pipe %lu us; measured %.1f%%", py, a,
			    b, want);
		cr_assert_gt(want, 0, "%s: the program said no share", py);
		cr_assert(pct(a, a + b) > want - 5 && pct(a, a + b) < want + 5,
			  "%s: wait_in_sleep %.1f%% in the profile, %.1f%% measured", py,
			  pct(a, a + b), want);
		folded_free(&f);
		free(err);
	}
}

/*
 * Python calling C calling Python: libc's qsort calling back into a Python comparison, and
 * sorted() calling a Python key. The frames interleave as they run.
 */
Test(python, python_c_python_frames_interleave)
{
	static const char *const qsort_chain[] = { "sort_with_qsort (callback.py:", "qsort",
						   "burn_in_compare (callback.py:" };
	static const char *const key_chain[] = { "sort_with_key (callback.py:",
						 "burn_in_key (callback.py:" };
	char buf[512], *err = NULL;
	const char *py = interpreter("3.12", buf, sizeof(buf));
	struct pyprog p;
	struct folded f;
	uint64_t q, k;

	cr_assert_not_null(py);
	cr_assert_eq(pyprog_start(py, "tests/programs/python/callback.py", "6", &p), 0);
	cr_assert_eq(profile(p.pid, "on_cpu", "4s", "cb.folded", &f, &err), 0, "rover: %s", err);
	pyprog_end(&p);
	q = with_chain(&f, qsort_chain, 3);
	k = with_chain(&f, key_chain, 2);
	cr_log_info("qsort chain %lu, key chain %lu of %lu", q, k, f.total);
	cr_assert_gt(q, f.total / 5, "Python, qsort, Python not in order\n%s",
		     f.n ? f.stacks[0] : "");
	cr_assert_gt(k, f.total / 5, "sorted's key not under its caller\n%s",
		     f.n ? f.stacks[0] : "");
	folded_free(&f);
	free(err);
}

/*
 * Code objects freed and their addresses reused, before 3.12 (no version stamp) and after:
 * every generated function's frame names its own file and a line of its own body.
 */
Test(python, reused_code_objects_are_never_misnamed)
{
	static const char *const vs[] = { "3.10", "3.12" };

	for (size_t v = 0; v < sizeof(vs) / sizeof(vs[0]); v++) {
		char buf[512], *err = NULL;
		const char *py = interpreter(vs[v], buf, sizeof(buf));
		struct pyprog p;
		struct folded f;
		uint64_t good = 0, bad = 0;
		unsigned generated = 0, distinct = 0;
		static unsigned char seen[1 << 16];
		char line[128];

		memset(seen, 0, sizeof(seen));
		cr_assert_not_null(py);
		cr_assert_eq(pyprog_start(py, "tests/programs/python/codegen.py", "6", &p), 0);
		cr_assert_eq(profile(p.pid, "on_cpu", "4s", "gen.folded", &f, &err), 0, "rover: %s",
			     err);
		while (fgets(line, sizeof(line), p.out))
			sscanf(line, "generated %u", &generated);
		pyprog_end(&p);
		for (size_t i = 0; i < f.n; i++) {
			char *copy = strdup(f.stacks[i]), *frames[512];
			size_t nf = split_frames(copy, frames, 512);

			for (size_t j = 0; j < nf; j++) {
				unsigned n, line, file_n, at;

				if (sscanf(frames[j], "gen_%u_%u (gen_%u.py:%u)", &n, &line,
					   &file_n, &at) != 4)
					continue;
				if (n == file_n && at >= line && at <= line + 3) {
					good += f.counts[i];
					if (n < sizeof(seen) && !seen[n]++)
						distinct++;
				} else {
					bad += f.counts[i];
					cr_log_error("%s: misnamed: %s", py, frames[j]);
				}
			}
			free(copy);
		}
		cr_log_info("%s: %lu samples named rightly, %lu not; %u functions of %u generated "
			    "seen",
			    py, good, bad, distinct, generated);
		/* About 4 s of the 6 s: a name kept for a reused address would repeat a few. */
		cr_assert_gt(distinct, generated / 3, "%s: %u distinct functions of %u generated",
			     py, distinct, generated);
		cr_assert_gt(good, f.total / 4, "%s: generated functions missing (%lu of %lu)", py,
			     good, f.total);
		cr_assert_eq(bad, 0, "%s: %lu samples misnamed", py, bad);
		folded_free(&f);
		free(err);
	}
}

/*
 * A C program embedding libpython (tests/programs/python/embed.c, built here against pyenv's
 * 3.12): its Python frames sit under its own main, and its own C function, called from Python
 * through ctypes, sits between them.
 */
Test(python, a_c_program_embedding_libpython)
{
	static const char *const chain[] = { "main",
					     "embedded_calls_c (<string>:", "embed_native_burn" };
	char buf[512], cmd[8192], exe[1024], *err = NULL, *dir;
	const char *py = interpreter("3.12", buf, sizeof(buf));
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	struct pyprog p = { 0 };
	struct folded f;
	uint64_t py_only, chained;

	cr_assert_not_null(py);
	dir = strdup(py);
	*strrchr(dir, '/') = '\0'; /* .../bin */
	snprintf(exe, sizeof(exe), "%s/embed", tmp);
	snprintf(cmd, sizeof(cmd),
		 "cc -Wno-deprecated-declarations '%s' -o '%s' $('%s/python3.12-config' --cflags) "
		 "$('%s/python3.12-config' --ldflags --embed) -Wl,-rpath,'%s/../lib' -rdynamic",
		 src("tests/programs/python/embed.c"), exe, dir, dir, dir);
	cr_assert_eq(run_cmd(sh, &err), 0, "building embed: %s", err);
	free(err);
	err = NULL;
	/* pyprog_start runs python script seconds: here the program is the interpreter. */
	{
		int pfd[2];
		char line[64];

		cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
		p.pid = fork();
		if (p.pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			dup2(pfd[1], 1);
			execl(exe, exe, "6", (char *)NULL);
			_exit(127);
		}
		close(pfd[1]);
		p.out = fdopen(pfd[0], "r");
		cr_assert(p.out && fgets(line, sizeof(line), p.out) && !strncmp(line, "ready", 5));
	}
	cr_assert_eq(profile(p.pid, "on_cpu", "4s", "embed.folded", &f, &err), 0, "rover: %s", err);
	pyprog_end(&p);
	py_only = with_chain(&f, (const char *const[]){ "embedded_python_burn (<string>:" }, 1);
	chained = with_chain(&f, chain, 3);
	cr_log_info("embedded_python_burn %lu, main > embedded_calls_c > embed_native_burn %lu of "
		    "%lu",
		    py_only, chained, f.total);
	cr_assert_gt(py_only, f.total / 10, "no Python frame in the embedding program\n%s",
		     f.n ? f.stacks[0] : "");
	cr_assert_gt(chained, f.total / 10, "the C function not between its Python caller\n%s",
		     f.n ? f.stacks[0] : "");
	folded_free(&f);
	free(err);
	free(dir);
}
