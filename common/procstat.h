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
 * A process's stat file kept open between reads (continuous profiling reads one a second per
 * watched process: an open and a close each time were most of its cost). The descriptor
 * holds the process it was opened for, not its number: once that process has ended, a read
 * fails (ESRCH) even when the number is another process's, so nothing of a new process is
 * taken for the old one's. The file is opened for one process, told by its pid and start time
 * (field 22) at the first read; a process that is gone (ended, a zombie, its number now
 * another process's) stays gone: every later read fails with -ESRCH and opens nothing, until
 * procstat_file__close() makes it free for another process.
 */
struct procstat_file {
	int fd;		/* -1: none open */
	int pid;	/* 0: free */
	int gone;	/* the process ended: its descriptor closed */
	uint64_t start; /* its start time, from the first read */
};

/* An empty one (fd -1): what procstat_file__close() leaves too. */
void procstat_file__init(struct procstat_file *f);
/*
 * Reads pid's proc_root/PID/stat as procstat__stat() does, through f: with the descriptor
 * kept from an earlier read (pread at offset 0), else one opened now, which is kept when its
 * number is below keep_below (0: never kept). A file of another pid is closed first. 0 or
 * -errno: -ESRCH when the process of f has ended (its descriptor closed then).
 */
int procstat_file__read(struct procstat_file *f, const char *proc_root, int pid, int keep_below,
			uint64_t *ret_ticks, uint64_t *ret_start, double *ret_threads);
/* Closes its descriptor, if any, and makes it free for another process. */
void procstat_file__close(struct procstat_file *f);

/* The Threads: line of proc_root/PID/status. 0 or -errno. */
int procstat__threads(const char *proc_root, int pid, double *ret);
/* The 1-minute load average, proc_root/loadavg's first field. 0 or -errno. */
int procstat__load(const char *proc_root, double *ret);

#endif
