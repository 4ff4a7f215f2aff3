/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON, before its programs load): the offsets of the few kernel
 * structure fields the stack programs read (common/kofs.h), found by one pass over the
 * kernel's BTF (/sys/kernel/btf/vmlinux) instead of libbpf's CO-RE, which parses and indexes
 * all of it at every load. The kernel writes that file; it is still checked as bytes: every
 * offset and count bounded by the buffer, chains of types followed a bounded number of steps.
 */
#ifndef ROVER_WORKER_KBTF_H
#define ROVER_WORKER_KBTF_H

#include <stddef.h>
#include <stdint.h>

#include "common/kofs.h"

#define KBTF_PATH "/sys/kernel/btf/vmlinux"

/* A field wanted: "struct_name", "member[.member...]", its size bounds, where its offset goes. */
struct kbtf_want {
	const char *type;
	const char *path;
	uint32_t size_min, size_max;
	uint32_t *ret;
	int optional; /* missing: *ret = KOFS_NONE rather than an error */
};

/*
 * Finds each of n wanted fields in the BTF of len bytes: 0, -ENOEXEC (not BTF, or a record
 * out of bounds), -ENOENT naming the first field missing in *ret_missing, or -ERANGE (a field
 * of an unexpected size or a bitfield, named the same way).
 */
int kbtf_find(const uint8_t *btf, size_t len, const struct kbtf_want *want, size_t n,
	      const char **ret_missing);

/* The stack programs' offsets from the BTF at path (KBTF_PATH: the kernel's): 0 or -errno. */
int kbtf_kofs(const char *path, struct kofs *ret);

/*
 * The running kernel's, found at the first call of a worker and kept (a load tried again, or
 * the NETWORK object after a stack one, takes them as found); a failure is logged once.
 */
int kbtf_kernel(struct kofs *ret);

#endif
