/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The world-readable figures of a process and of the host that continuous profiling watches,
 * from a procfs (/proc, or the host's in a container): CPU ticks, threads, load.
 */
#ifndef ROVER_COMMON_PROCSTAT_H
#define ROVER_COMMON_PROCSTAT_H

#include <stdint.h>

/*
 * utime + stime (clock ticks) and starttime (field 22: which process holds the number) of pid
 * from proc_root/PID/stat. 0 or -errno: -ESRCH for a zombie (it has ended).
 */
int procstat__cpu(const char *proc_root, int pid, uint64_t *ret_ticks, uint64_t *ret_start);
/* The same and the thread count (field 20: one read gives both). */
int procstat__stat(const char *proc_root, int pid, uint64_t *ret_ticks, uint64_t *ret_start,
		   double *ret_threads);
/*
 * What continuous profiling reads of a watched process once a second, kept between reads (an
 * open and a close each time were most of its cost, then the kernel formatting the 52 fields
 * of stat was: about 2 us a read on this VM, 6 us under load, where the CPU clock below is
 * 0.2 us). The file is for one process, told by its pid and start time (stat's field 22) at
 * the first read; a process that is gone (ended, a zombie, its number now another process's)
 * stays gone: every later read fails with -ESRCH and opens nothing, until
 * procstat_file__close() makes it free for another process.
 *
 * With the reader's own /proc (proc_root "/proc"), stat is read once, for the start time;
 * then each read takes the process's CPU clock (clock_gettime of its process clock: any
 * process's may be read, in nanoseconds), the thread count from the link count of its
 * /proc/PID/task (the kernel adds the threads to the directory's two links, at each fstat of
 * a descriptor that holds the process) and whether it has ended from a pidfd, polled after
 * the clock: the clock is asked by number, so a number reused after the process ended would
 * read another process, and the pidfd, which holds the process itself, says whether it was
 * still there when the clock was read. A procfs of another pid namespace (the host's, in a
 * container) has numbers the clock does not know: its stat file is kept open and read again
 * (pread at offset 0; the descriptor holds the process, ESRCH once it ended).
 */
struct procstat_file {
	int fd;		/* another namespace's procfs: its stat file; -1: none open */
	int pidfd;	/* own /proc: the process's pidfd; -1: none */
	int taskfd;	/* own /proc: its /proc/PID/task, held with pidfd */
	int clock;	/* own /proc: its process CPU clock (a clockid_t) */
	int setfd;	/* the epoll set its pidfd is in, -1: none */
	int pid;	/* 0: free */
	int gone;	/* the process ended: its descriptors closed */
	uint64_t start; /* its start time, from the first read */
};

/* An empty one (fd -1): what procstat_file__close() leaves too. */
void procstat_file__init(struct procstat_file *f);
/*
 * pid's CPU time in nanoseconds (user and system, every thread), its start time (stat's
 * field 22, in clock ticks since boot) and, when ret_threads is not NULL, its thread count,
 * through f: with the descriptors kept from an earlier read, else opened now and kept when
 * every one of them is below keep_below (0: never kept). A file of another pid is closed
 * first. 0 or -errno: -ESRCH when the process of f has ended (its descriptors closed then).
 */
int procstat_file__read(struct procstat_file *f, const char *proc_root, int pid, int keep_below,
			uint64_t *ret_cpu_ns, uint64_t *ret_start, double *ret_threads);
/*
 * The reads of many processes at once: each file's kept pidfd joins an epoll set (the caller's
 * procstat_set), procstat_file__sample() reads the clock and the task directory without
 * polling it, and one procstat_set__ended() after the reads tells which of them ended (their
 * pidfds are readable): a figure of those is not taken, and procstat_file__gone() closes
 * their descriptors. 200 processes a second: 200 poll calls less (about 15% of the
 * supervisor's samples, scripts/bench_continuous.sh under perf).
 */
struct procstat_set {
	int epfd; /* -1: none (every sample then checked alone) */
};

/* An epoll set made now (the supervisor's filter allows it once gRPC is loaded). 0 or -errno. */
int procstat_set__init(struct procstat_set *s);
void procstat_set__free(struct procstat_set *s);
/*
 * As procstat_file__read(), into s: 1 when the figures are to be confirmed by
 * procstat_set__ended() (a kept pidfd not polled), 0 when they were checked already (a file
 * opened now, or another namespace's procfs), or -errno (-ESRCH: ended).
 */
int procstat_file__sample(struct procstat_file *f, struct procstat_set *s, const char *proc_root,
			  int pid, int keep_below, uint64_t *ret_cpu_ns, uint64_t *ret_start,
			  double *ret_threads);
/*
 * The pidfds of s whose processes have ended, up to max (call again while it returns max):
 * their count, or -errno. Level-triggered: a process that ended stays in the answer until its
 * file is closed.
 */
int procstat_set__ended(struct procstat_set *s, int *ret_pidfds, int max);
/* f's process ended (its pidfd was in procstat_set__ended()'s answer): -ESRCH, closed. */
int procstat_file__gone(struct procstat_file *f);

/* How many descriptors f holds now (0: none kept). */
int procstat_file__kept(const struct procstat_file *f);
/* Closes its descriptors, if any, and makes it free for another process. */
void procstat_file__close(struct procstat_file *f);

/* The Threads: line of proc_root/PID/status. 0 or -errno. */
int procstat__threads(const char *proc_root, int pid, double *ret);
/* The 1-minute load average, proc_root/loadavg's first field. 0 or -errno. */
int procstat__load(const char *proc_root, double *ret);

#endif
