/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the function table of a Go binary, from its .gopclntab section (the runtime's
 * own table, which `go build -ldflags=-s` and `strip` leave in place). Read from an untrusted
 * file: every offset is checked against the section.
 */
#ifndef ROVER_SHIPPER_GOPCLNTAB_H
#define ROVER_SHIPPER_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

/* More functions than the largest Go binaries have (kubelet: ~100k); the rest are not read. */
#define GOPCLNTAB_MAX_FUNCS (4u << 20)
/* Name bytes reported in all; functions past this are not read. */
#define GOPCLNTAB_MAX_NAME_BYTES (128u << 20)

/*
 * One function: [entry, entry + size), its name as in the file (len bytes, not terminated; a
 * Go name such as "main.burnA" or "runtime.mallocgc"). Returns 0 to go on, 1 to end the walk
 * there, or -errno to end it with that error.
 */
typedef int (*gopclntab_fn)(void *ctx, uint64_t entry, uint64_t size, const char *name, size_t len);

/*
 * Calls fn for each function of the .gopclntab at data (len bytes), in address order, skipping
 * those whose entry is not consistent or whose name does not lie inside the section. Layouts:
 * Go 1.2-1.15 (magic 0xfffffffb), 1.16-1.17 (0xfffffffa), 1.18-1.19 (0xfffffff0) and 1.20+
 * (0xfffffff1), either byte order, 4- or 8-byte pointers.
 * Returns the number of functions reported, the -errno fn returned, or -ENOEXEC when data is
 * no table this code reads.
 */
long gopclntab__walk(const void *data, size_t len, gopclntab_fn fn, void *ctx);

#endif
