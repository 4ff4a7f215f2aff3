/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ABI between the stack-counting BPF programs (bpf/oncpu.bpf.c, bpf/offcpu.bpf.c) and the
 * worker that drains them: fixed-width types only.
 */
#ifndef ROVER_COMMON_STACKCOUNT_H
#define ROVER_COMMON_STACKCOUNT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SC_MAX_TARGETS 64
#define SC_STACK_DEPTH 127

struct sc_key {
	__u32 tgid;
	__s32 ustack; /* -1: none */
	__s32 kstack; /* -1: none (an ON_CPU sample taken in user mode) */
	__u32 pad;
};

struct sc_value {
	__u64 value;  /* ON_CPU: samples; OFF_CPU: nanoseconds off the CPU */
	__u64 value2; /* OFF_CPU: switches */
};

/* Per-CPU counters the programs keep; the worker turns them into losses. */
enum sc_stat {
	SC_STAT_EVENTS, /* samples (ON_CPU) or switches back in (OFF_CPU) of the targets */
	SC_STAT_USTACK_COLLISION,
	SC_STAT_KSTACK_COLLISION,
	SC_STAT_STACK_MAP_FULL,
	SC_STAT_USTACK_MISSING,
	SC_STAT_COUNTS_FULL,
	SC_STAT_STARTS_FULL, /* OFF_CPU: no room to remember a switched-out thread */
	SC_STAT_MAX,
};

#endif
