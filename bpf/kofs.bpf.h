/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel structure fields read at offsets the worker found in the kernel's BTF
 * (common/kofs.h, worker/kbtf.c) rather than by CO-RE: an object without CO-RE relocations
 * spares libbpf its parse of the whole kernel BTF at every load.
 */
#ifndef ROVER_BPF_KOFS_H
#define ROVER_BPF_KOFS_H

#include "common/kofs.h"

/* Set by the worker before load. */
const volatile struct kofs kofs;

/* n bytes of the kernel structure at base, at off: 0, or non-zero (dst zeroed). */
static __always_inline long kread(void *dst, __u32 n, const void *base, __u32 off)
{
	if (!base || off == KOFS_NONE) {
		__builtin_memset(dst, 0, n);
		return -1;
	}
	return bpf_probe_read_kernel(dst, n, (const void *)((unsigned long)base + off));
}

static __always_inline __u64 kread64(__u64 base, __u32 off)
{
	__u64 v = 0;

	if (kread(&v, sizeof(v), (const void *)base, off))
		return 0;
	return v;
}

static __always_inline __u32 kread32(__u64 base, __u32 off)
{
	__u32 v = 0;

	if (kread(&v, sizeof(v), (const void *)base, off))
		return 0;
	return v;
}

#endif
