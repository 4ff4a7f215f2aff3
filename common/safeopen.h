/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening, with privilege, a file whose path a less trusted process controls. The launcher
 * (root) opens these for the shipper; the shipper's direct opener (tests, a shipper that runs
 * as root) calls the same code, so both refuse the same files.
 */
#ifndef ROVER_COMMON_SAFEOPEN_H
#define ROVER_COMMON_SAFEOPEN_H

#include <sys/types.h>

/* node --perf-basic-prof writes about 100 bytes per compiled function: 64 MiB is ~600k. */
#define SAFEOPEN_PERF_MAP_MAX_BYTES (64ll << 20)

/*
 * The perf map of pid: /tmp/perf-NSPID.map in pid's mount namespace (NSPID: pid as pid sees
 * itself, in its own pid namespace), read through /proc/PID/root. Returns an O_RDONLY|O_CLOEXEC
 * descriptor or -errno: -ENOENT when there is none, -EPERM when /tmp is a symbolic link or the
 * file is not a regular file owned by pid's real uid, with one link, of at most
 * SAFEOPEN_PERF_MAP_MAX_BYTES.
 */
int safeopen_perf_map(pid_t pid);

#endif
