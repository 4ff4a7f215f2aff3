/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side (no capability): the CPython interpreters a stack task's targets map, for the
 * worker to read their frames (MSG_SHIP_PY_ATTACH with the file, which the launcher opens).
 * Looked for in a target's mappings: a file mapped from offset 0 whose name is
 * libpython3.N[flags].so[.*] or python3.N[flags], N 8 to 13; libpython when both are mapped
 * (pyenv's python3.N executable is a small program that links libpython3.N.so). The worker
 * checks the file and the mapping itself: a name is only where to look.
 */
#ifndef ROVER_SHIPPER_PYFIND_H
#define ROVER_SHIPPER_PYFIND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/msg.h"
#include "shipper/stacks/symbolize.h"

/* Interpreters sent per task ((pid, file, address) each once); more are not, and said. */
#define PYFIND_MAX 256

/*
 * Whether a mapped file's base name is one of a CPython 3.8-3.13 interpreter: 1 for
 * libpython3.N, 2 for the python3.N executable, 3 for HotSpot's libjvm.so, 4 for node or
 * libnode.so (*ret_minor 0: the
 * worker reads its version), 0 for none; *ret_minor = N. A lower kind wins in a process.
 */
int pyfind__name(const char *base, unsigned *ret_minor);

struct py_finder;

struct py_finder *py_finder__new(uint64_t task_id);
void py_finder__free(struct py_finder *f);

/*
 * An interpreter found: m (task, pid, seq, start, path set) and the file's descriptor fd,
 * which stays the caller's. 0 or -errno (the worker is gone: the scan stops).
 */
typedef int (*py_found_fn)(void *ctx, const struct msg_py_attach *m, int fd);

/*
 * Reads pid's mappings (from opener) and calls found for its interpreter when it was not sent
 * before for this (pid, file, address). 1 when one was sent, 0 when none was due, -errno when
 * the mappings or the file could not be had (a process gone: nothing to do).
 */
int py_finder__scan(struct py_finder *f, const struct fd_opener *opener, int pid, py_found_fn found,
		    void *ctx);

/* The worker's answer to the attach numbered r->seq: logged, one line. */
void py_finder__result(struct py_finder *f, const struct msg_py_result *r);

struct py_finder_stats {
	uint32_t sent, found, refused;
};
void py_finder__stats(const struct py_finder *f, struct py_finder_stats *ret);

#endif
