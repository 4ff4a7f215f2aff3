/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel structures that changed shape across the kernels rover runs on, one shim each with
 * what changed. CO-RE picks the layout of the running kernel at load time.
 */
#ifndef ROVER_BPF_CORE_FIXES_H
#define ROVER_BPF_CORE_FIXES_H

#include <bpf/bpf_core_read.h>

/*
 * mm_struct.flags was an unsigned long until Linux 6.17 made it mm_flags_t, a bitmap whose
 * first word holds the same bits (MMF_DUMPABLE and the rest). Only the first word is read.
 */
struct mm_struct___flags_word {
	unsigned long flags;
} __attribute__((preserve_access_index));

static __always_inline __u64 mm_flags_word(struct mm_struct *mm)
{
	struct mm_struct___flags_word *old = (void *)mm;

	if (bpf_core_field_exists(old->flags))
		return BPF_CORE_READ(old, flags);
	return BPF_CORE_READ(mm, flags.__mm_flags[0]);
}

#endif
