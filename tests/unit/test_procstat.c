// SPDX-License-Identifier: Apache-2.0
/*
 * The figures continuous profiling reads of each watched process once a second
 * (common/procstat.h, procstat_file): read again they give the figures of now; the descriptors
 * of a process that ended are closed and not opened again; a pid reused by another process
 * never reads as the old one, whether the descriptors were kept or opened anew. Each both
 * ways: through the own /proc (CPU clock, task directory, pidfd) and through another procfs
 * path (OTHER_ROOT: the same procfs under another name, read as a host's in a container
 * would be, its stat file kept). On real processes (children of the test) and the real /proc.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/procstat.h"

/* A procfs path other than "/proc": procstat_file keeps its stat file, as for a host's. */
#define OTHER_ROOT "/proc/."
#define MS 1000000ull

/* A clock tick of stat's times, in ns. */
static uint64_t tick_ns(void)
{
	return 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
}

/* This process's descriptors now. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the listing's own */
}

/* A child that waits for a byte on a pipe, then burns about ms of CPU, then waits again. */
static pid_t start_child(int *ret_go, int ms)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		char b;

		close(p[1]);
		while (read(p[0], &b, 1) == 1) {
			struct timespec t0, t;

			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
			do
				clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
			while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
			       ms);
		}
		_exit(0);
	}
	close(p[0]);
	*ret_go = p[1];
	return pid;
}

static void end_child(pid_t pid, int go)
{
	close(go);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

/* Until pid has used at least ticks clock ticks (the child burns after a byte). */
static void wait_ticks(pid_t pid, uint64_t ticks)
{
	for (int i = 0; i < 500; i++) {
		uint64_t t, s;

		if (!procstat__cpu("/proc", pid, &t, &s) && t >= ticks)
			return;
		usleep(10000);
	}
	cr_assert_fail("pid %d did not burn", (int)pid);
}

/* What f holds once kept: a pidfd and the task directory (own /proc), or the stat file. */
static int kept_fds(const char *root)
{
	return strcmp(root, "/proc") ? 1 : 2;
}

static void expect_figures_of_now(const char *root)
{
	struct procstat_file f;
	uint64_t t0, t1, s0, s1, ps, ticks0;
	double threads = 0;
	int go, base = count_fds();
	pid_t pid = start_child(&go, 100);

	procstat_file__init(&f);
	cr_assert_eq(procstat__cpu("/proc", pid, &ticks0, &ps), 0);
	cr_assert_eq(procstat_file__read(&f, root, pid, INT_MAX, &t0, &s0, &threads), 0);
	cr_assert_eq(procstat_file__kept(&f), kept_fds(root), "not kept");
	cr_expect_eq(threads, 1);
	cr_expect_eq(s0, ps, "start time %llu, /proc says %llu", (unsigned long long)s0,
		     (unsigned long long)ps);
	cr_expect_eq(count_fds(), base + 1 + kept_fds(root)); /* the pipe's end and f's */
	cr_assert_eq(write(go, "x", 1), 1);
	wait_ticks(pid, ticks0 + 6);
	cr_assert_eq(procstat_file__read(&f, root, pid, INT_MAX, &t1, &s1, NULL), 0);
	cr_expect_eq(count_fds(), base + 1 + kept_fds(root), "opened again");
	/* 6 ticks more than at the first read, which was less than one tick past ticks0. */
	cr_expect_geq(t1, t0 + 40 * MS, "the old figures: %llu then %llu ns",
		      (unsigned long long)t0, (unsigned long long)t1);
	cr_expect_eq(s1, s0);
	procstat_file__close(&f);
	cr_expect_eq(procstat_file__kept(&f), 0);
	cr_expect_eq(count_fds(), base + 1);
	end_child(pid, go);
}

Test(procstat, a_kept_file_reads_the_figures_of_now)
{
	expect_figures_of_now("/proc");
}

Test(procstat, a_kept_stat_file_of_another_procfs_reads_the_figures_of_now)
{
	expect_figures_of_now(OTHER_ROOT);
}

static void *park(void *arg)
{
	(void)!read(*(int *)arg, &(char){ 0 }, 1);
	return NULL;
}

/*
 * The thread count as stat's field 20 gives it, both ways, kept or not: this process with 7
 * more threads (the test runner's own are counted in both).
 */
Test(procstat, the_thread_count_agrees_with_stat)
{
	static const char *roots[] = { "/proc", OTHER_ROOT };
	pthread_t th[7];
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i < 7; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, park, &p[0]), 0);
	for (size_t r = 0; r < 2; r++) {
		struct procstat_file f;
		uint64_t ns, s, ticks, ps;
		double threads = 0, want = 0;

		procstat_file__init(&f);
		for (int again = 0; again < 2; again++) {
			cr_assert_eq(procstat_file__read(&f, roots[r], getpid(), INT_MAX, &ns, &s,
							 &threads),
				     0);
			cr_assert_eq(procstat__stat("/proc", getpid(), &ticks, &ps, &want), 0);
			cr_expect_eq(threads, want, "%s, read %d: %g threads, stat says %g",
				     roots[r], again, threads, want);
			cr_expect_geq(threads, 8);
		}
		procstat_file__close(&f);
	}
	cr_assert_eq(close(p[1]), 0);
	for (int i = 0; i < 7; i++)
		pthread_join(th[i], NULL);
	close(p[0]);
}

/* A child's CPU time by both ways, while it is stopped: equal but for stat's rounding down. */
Test(procstat, the_cpu_clock_is_stat_time_to_the_nanosecond)
{
	struct procstat_file f, g;
	uint64_t ns, ns2, s, ticks, ps;
	int go;
	pid_t pid = start_child(&go, 100);

	/* stat rounds user and system time down each: 100 ms may show as 9 ticks. */
	cr_assert_eq(write(go, "x", 1), 1);
	wait_ticks(pid, 8);
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	cr_assert_eq(waitpid(pid, NULL, WUNTRACED), pid);
	procstat_file__init(&f);
	procstat_file__init(&g);
	cr_assert_eq(procstat_file__read(&f, "/proc", pid, INT_MAX, &ns, &s, NULL), 0);
	cr_assert_eq(procstat_file__read(&g, OTHER_ROOT, pid, INT_MAX, &ns2, &s, NULL), 0);
	cr_assert_eq(procstat__cpu("/proc", pid, &ticks, &ps), 0);
	cr_expect_geq(ns, ticks * tick_ns(), "clock %llu ns, stat %llu ticks",
		      (unsigned long long)ns, (unsigned long long)ticks);
	/* utime and stime are each rounded down to a tick. */
	cr_expect_lt(ns, (ticks + 2) * tick_ns(), "clock %llu ns, stat %llu ticks",
		     (unsigned long long)ns, (unsigned long long)ticks);
	cr_expect_eq(ns2, ticks * tick_ns(), "stat's way: %llu ns", (unsigned long long)ns2);
	procstat_file__close(&f);
	procstat_file__close(&g);
	kill(pid, SIGCONT);
	end_child(pid, go);
}

static void expect_kept_below_bound(const char *root)
{
	struct procstat_file f;
	uint64_t t, s;
	int go, base = count_fds();
	pid_t pid = start_child(&go, 1);

	procstat_file__init(&f);
	cr_assert_eq(procstat_file__read(&f, root, pid, 0, &t, &s, NULL), 0);
	cr_expect_eq(procstat_file__kept(&f), 0, "kept with a bound of 0");
	cr_expect_eq(count_fds(), base + 1);
	cr_assert_eq(procstat_file__read(&f, root, pid, INT_MAX, &t, &s, NULL), 0);
	cr_expect_eq(procstat_file__kept(&f), kept_fds(root));
	procstat_file__close(&f);
	end_child(pid, go);
	cr_expect_eq(count_fds(), base);
}

Test(procstat, descriptors_are_kept_only_below_the_bound)
{
	expect_kept_below_bound("/proc");
	expect_kept_below_bound(OTHER_ROOT);
}

/* The file of a process that was reaped or is a zombie: closed, and never opened again. */
static void expect_gone_after(const char *root, int reap)
{
	struct procstat_file f;
	uint64_t t = 7, s = 7;
	int go, base = count_fds();
	pid_t pid = start_child(&go, 1);

	procstat_file__init(&f);
	cr_assert_eq(procstat_file__read(&f, root, pid, INT_MAX, &t, &s, NULL), 0);
	cr_assert_eq(procstat_file__kept(&f), kept_fds(root));
	close(go);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	if (reap) {
		cr_assert_eq(waitpid(pid, NULL, 0), pid);
	} else {
		/* A zombie once /proc says so. */
		cr_assert_eq(waitid(P_PID, (id_t)pid, &(siginfo_t){ 0 }, WEXITED | WNOWAIT), 0);
	}
	t = s = 7;
	cr_expect_eq(procstat_file__read(&f, root, pid, INT_MAX, &t, &s, NULL), -ESRCH);
	cr_expect_eq(procstat_file__kept(&f), 0, "descriptors of an ended process still open");
	cr_expect(f.gone);
	cr_expect(t == 7 && s == 7, "written on failure");
	cr_expect_eq(count_fds(), base);
	/* Gone for good: nothing opened again, whatever holds the number now. */
	cr_expect_eq(procstat_file__read(&f, root, pid, INT_MAX, &t, &s, NULL), -ESRCH);
	cr_expect_eq(procstat_file__kept(&f), 0);
	cr_expect_eq(count_fds(), base);
	if (!reap)
		cr_assert_eq(waitpid(pid, NULL, 0), pid);
	/* Free again: another process's file may be read through it. */
	procstat_file__close(&f);
	cr_expect_eq(procstat_file__read(&f, root, getpid(), INT_MAX, &t, &s, NULL), 0);
	cr_expect_eq(count_fds(), base + kept_fds(root));
	procstat_file__close(&f);
}

Test(procstat, an_ended_process_closes_its_descriptors)
{
	expect_gone_after("/proc", 1);
	expect_gone_after(OTHER_ROOT, 1);
}

Test(procstat, a_zombie_has_ended)
{
	expect_gone_after("/proc", 0);
	expect_gone_after(OTHER_ROOT, 0);
}

static void expect_another_pid_closes(const char *root)
{
	struct procstat_file f;
	uint64_t t, s;
	int go, base = count_fds();
	pid_t pid = start_child(&go, 1);

	procstat_file__init(&f);
	cr_assert_eq(procstat_file__read(&f, root, pid, INT_MAX, &t, &s, NULL), 0);
	cr_assert_eq(procstat_file__read(&f, root, getpid(), INT_MAX, &t, &s, NULL), 0);
	cr_expect_eq(count_fds(), base + 1 + kept_fds(root), "the first file is still open");
	cr_expect_eq(f.pid, getpid());
	procstat_file__close(&f);
	end_child(pid, go);
}

Test(procstat, another_pid_closes_the_file_of_the_first)
{
	expect_another_pid_closes("/proc");
	expect_another_pid_closes(OTHER_ROOT);
}

/* A child with the pid want (clone3's set_tid: root), which waits on go; -errno. */
static pid_t child_with_pid(pid_t want, int *ret_go)
{
	pid_t tid[1] = { want };
	struct clone_args args = { .exit_signal = SIGCHLD,
				   .set_tid = (uint64_t)(uintptr_t)tid,
				   .set_tid_size = 1 };
	int p[2];
	long pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		char b;

		close(p[1]);
		(void)!read(p[0], &b, 1);
		_exit(0);
	}
	close(p[0]);
	*ret_go = p[1];
	return (pid_t)pid;
}

/*
 * The pid of a process whose file was read goes to another process: neither the descriptor
 * kept (it is the first process's) nor a file opened anew (another start time) gives the new
 * process's figures as the old one's.
 */
static void expect_reuse_not_taken(const char *root, int keep_below)
{
	struct procstat_file f;
	uint64_t t, s, t2, s2;
	int go, go2 = -1, base = count_fds();
	pid_t pid = start_child(&go, 1), again;

	procstat_file__init(&f);
	cr_assert_eq(procstat_file__read(&f, root, pid, keep_below, &t, &s, NULL), 0);
	end_child(pid, go);
	/* Its start time in ticks: the new process must start in a later tick. */
	usleep(30000);
	again = child_with_pid(pid, &go2);
	if (again == -EPERM || again == -ENOSYS || again == -EEXIST) {
		procstat_file__close(&f);
		cr_skip("clone3 with set_tid (pid reuse on purpose): %s", strerror(-again));
	}
	cr_assert_eq(again, pid, "clone3: %s", again < 0 ? strerror(-again) : "another pid");
	cr_assert_eq(procstat__cpu("/proc", pid, &t2, &s2), 0);
	cr_assert_neq(s2, s, "the same start time: the test cannot tell them apart");
	cr_expect_eq(procstat_file__read(&f, root, pid, keep_below, &t, &s, NULL), -ESRCH,
		     "the new process read as the old one");
	cr_expect_eq(procstat_file__kept(&f), 0);
	cr_expect_eq(count_fds(), base + 1); /* the new child's pipe */
	procstat_file__close(&f);
	/* Free again, it reads the new one. */
	cr_expect_eq(procstat_file__read(&f, root, pid, keep_below, &t, &s, NULL), 0);
	cr_expect_eq(s, s2);
	procstat_file__close(&f);
	end_child(again, go2);
}

Test(procstat, a_reused_pid_is_not_the_process_of_a_kept_file)
{
	expect_reuse_not_taken("/proc", INT_MAX);
	expect_reuse_not_taken(OTHER_ROOT, INT_MAX);
}

Test(procstat, a_reused_pid_is_not_the_process_of_a_file_opened_anew)
{
	expect_reuse_not_taken("/proc", 0);
	expect_reuse_not_taken(OTHER_ROOT, 0);
}

/*
 * Many processes read at once (continuous profiling's fetch): kept pidfds in a set, samples
 * to confirm, one call for the ended ones. A zombie's clock still reads: the set names it. A
 * pid reused after its process ended and was reaped reads the new process's clock by number:
 * the set names the old pidfd, so the caller drops that figure.
 */
Test(procstat, a_set_names_the_processes_that_ended_after_their_samples)
{
	struct procstat_set set;
	struct procstat_file f[3];
	uint64_t t, s;
	int go[3], go2 = -1, fds[64], n;
	pid_t pid[3], again;

	cr_assert_eq(procstat_set__init(&set), 0);
	for (int i = 0; i < 3; i++) {
		pid[i] = start_child(&go[i], 1);
		procstat_file__init(&f[i]);
		/* The first read checks by itself: 0. */
		cr_assert_eq(procstat_file__sample(&f[i], &set, "/proc", pid[i], INT_MAX, &t, &s,
						   NULL),
			     0);
	}
	for (int i = 0; i < 3; i++)
		cr_expect_eq(procstat_file__sample(&f[i], &set, "/proc", pid[i], INT_MAX, &t, &s,
						   NULL),
			     1, "a kept file's sample is not to be confirmed");
	cr_expect_eq(procstat_set__ended(&set, fds, 64), 0, "none ended yet");

	/* 1 a zombie; 2 reaped, its pid given to a new process. */
	close(go[1]);
	cr_assert_eq(kill(pid[1], SIGKILL), 0);
	cr_assert_eq(waitid(P_PID, (id_t)pid[1], &(siginfo_t){ 0 }, WEXITED | WNOWAIT), 0);
	end_child(pid[2], go[2]);
	usleep(30000);
	again = child_with_pid(pid[2], &go2);
	if (again < 0) {
		for (int i = 0; i < 3; i++)
			procstat_file__close(&f[i]);
		kill(pid[0], SIGKILL);
		cr_skip("clone3 with set_tid: %s", strerror(-again));
	}
	cr_assert_eq(again, pid[2]);
	cr_expect_eq(procstat_file__sample(&f[1], &set, "/proc", pid[1], INT_MAX, &t, &s, NULL), 1,
		     "a zombie's clock reads: to be confirmed");
	cr_expect_eq(procstat_file__sample(&f[2], &set, "/proc", pid[2], INT_MAX, &t, &s, NULL), 1,
		     "the new process's clock reads by number: to be confirmed");
	n = procstat_set__ended(&set, fds, 64);
	cr_assert_eq(n, 2, "%d ended, 2 did", n);
	cr_expect((fds[0] == f[1].pidfd && fds[1] == f[2].pidfd) ||
			  (fds[1] == f[1].pidfd && fds[0] == f[2].pidfd),
		  "not the pidfds of the two that ended");
	cr_expect_eq(procstat_file__gone(&f[1]), -ESRCH);
	cr_expect_eq(procstat_file__gone(&f[2]), -ESRCH);
	cr_expect_eq(procstat_set__ended(&set, fds, 64), 0, "closed files still in the set");
	cr_expect_eq(procstat_file__sample(&f[2], &set, "/proc", pid[2], INT_MAX, &t, &s, NULL),
		     -ESRCH, "gone stays gone");
	cr_expect_eq(procstat_file__sample(&f[0], &set, "/proc", pid[0], INT_MAX, &t, &s, NULL), 1);
	for (int i = 0; i < 3; i++)
		procstat_file__close(&f[i]);
	cr_assert_eq(waitpid(pid[1], NULL, 0), pid[1]);
	end_child(pid[0], go[0]);
	end_child(again, go2);
	procstat_set__free(&set);
}

/*
 * A file kept by a read of its own (procstat_file__read(): continuous profiling's check
 * before a trigger) is in no set. Sampled later into a set, its process gone and its pid
 * another process's: the sample must not pass the new process's clock as the old one's
 * for the set to confirm, as the set will never name that pidfd.
 */
Test(procstat, a_file_kept_outside_the_set_is_checked_by_itself)
{
	struct procstat_set set;
	struct procstat_file f;
	uint64_t t, s;
	int go, go2 = -1, fds[64];
	pid_t pid = start_child(&go, 1), again;

	cr_assert_eq(procstat_set__init(&set), 0);
	procstat_file__init(&f);
	cr_assert_eq(procstat_file__read(&f, "/proc", pid, INT_MAX, &t, &s, NULL), 0);
	cr_assert_eq(procstat_file__kept(&f), 2);
	end_child(pid, go);
	usleep(30000);
	again = child_with_pid(pid, &go2);
	if (again < 0) {
		procstat_file__close(&f);
		procstat_set__free(&set);
		cr_skip("clone3 with set_tid: %s", strerror(-again));
	}
	cr_assert_eq(again, pid);
	cr_expect_eq(procstat_file__sample(&f, &set, "/proc", pid, INT_MAX, &t, &s, NULL), -ESRCH,
		     "the new process's clock taken for the old one's");
	cr_expect_eq(procstat_set__ended(&set, fds, 64), 0);
	procstat_file__close(&f);
	end_child(again, go2);
	procstat_set__free(&set);
}
