/* SPDX-License-Identifier: Apache-2.0 */
/* ABI between bpf/oncpu.bpf.c and the worker that loads it: fixed-width types only. */
#ifndef ROVER_COMMON_ONCPU_H
#define ROVER_COMMON_ONCPU_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ONCPU_MAX_TARGETS 64
#define ONCPU_STACK_DEPTH 127

struct oncpu_key {
	__u32 tgid;
	__s32 ustack; /* -1: none */
	__s32 kstack; /* -1: none (the sample was taken in user mode) */
	__u32 pad;
};

/* Per-CPU counters the program keeps; the worker turns them into losses. */
enum oncpu_stat {
	ONCPU_STAT_SAMPLES,
	ONCPU_STAT_USTACK_COLLISION,
	ONCPU_STAT_KSTACK_COLLISION,
	ONCPU_STAT_STACK_MAP_FULL,
	ONCPU_STAT_USTACK_MISSING,
	ONCPU_STAT_COUNTS_FULL,
	ONCPU_STAT_MAX,
};

#endif
