/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side: a target's CPython interpreter, for the Python frame reader (bpf/python.bpf.h).
 * The shipper finds a mapping that looks like one (libpython3.X.so or a python3.X executable)
 * and hands its file over (MSG_SHIP_PY_ATTACH, the descriptor the launcher opened from
 * /proc/PID/map_files); the worker reads that file's dynamic symbols for the version and
 * _PyRuntime, takes the offsets from its own table, never from the shipper, and tells the
 * programs where the file is mapped. The programs check the mapping themselves at their first
 * use of it (bpf_find_vma): the mapping must start where the shipper said, be of a file of the
 * handed file's size, and map its first page.
 */
#ifndef ROVER_WORKER_PYATTACH_H
#define ROVER_WORKER_PYATTACH_H

#include <stdint.h>

#include "common/pyframes.h"

/*
 * Checks the ELF file fd, mapped from its first byte at start in a target, as a CPython
 * interpreter: 0 with *ret filled for the programs (runtime 0: they check the mapping), or
 * -EINVAL (start not page-aligned), -EBADF, -ENOEXEC (not an ELF file whose _PyRuntime lies in
 * writable data), -ENOENT (no _PyRuntime: not an interpreter), -EPROTONOSUPPORT (a version
 * other than 3.8-3.13), -E2BIG.
 */
int pyattach__file(int fd, uint64_t start, struct py_proc *ret);

/* The offsets of a minor version (0x030b), NULL for one rover does not read. */
const struct py_offsets *pyoffsets__find(unsigned int version);

#endif
