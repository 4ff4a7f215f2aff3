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
/* The Threads: line of proc_root/PID/status. 0 or -errno. */
int procstat__threads(const char *proc_root, int pid, double *ret);
/* The 1-minute load average, proc_root/loadavg's first field. 0 or -errno. */
int procstat__load(const char *proc_root, double *ret);

#endif
