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

#include "common/pyframes.h"
#include "common/jvmframes.h"
#include "common/v8frames.h"

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
	SC_STAT_STARTS_FULL,	   /* OFF_CPU: no room to remember a switched-out thread */
	SC_STAT_SNAP_RINGBUF_FULL, /* snapshot or its OFF_CPU time not in the ring buffer */
	SC_STAT_SNAP_FAULT,	   /* not one byte of user stack readable */
	SC_STAT_CRED_DROPPED,	   /* a client's target dropped: no longer the client's to trace */
	SC_STAT_PY_CODE_LOST,	   /* a new Python code object's record not in the ring buffer */
	SC_STAT_PY_MAP_BAD,	  /* an interpreter not mapped where the worker was told: dropped */
	SC_STAT_JAVA_METHOD_LOST, /* a new Java method's record not in the ring buffer */
	SC_STAT_JAVA_MAP_BAD,	  /* a libjvm.so not mapped where the worker was told: dropped */
	SC_STAT_V8_FUNC_LOST,	  /* a new JavaScript function's record not in the ring buffer */
	SC_STAT_V8_MAP_BAD,	  /* a node executable not mapped where the worker was told */
	SC_STAT_MAX,
};

/*
 * Stack snapshots (unwind mode "dwarf"), through the ring buffer: the user registers and the
 * user stack from sp up to SC_SNAP_STACK bytes (or the target's limit), copied a page at a
 * time so that the end of the stack mapping (or a page not present) ends the copy instead of
 * failing it: the first piece runs from sp to its page's end, the last stops at the limit.
 */
#define SC_SNAP_PAGE 4096
#define SC_SNAP_PAGES 4
#define SC_SNAP_STACK (SC_SNAP_PAGE * SC_SNAP_PAGES)
/*
 * Ring buffer bytes in dwarf mode, sized by the worker for the event rate between these
 * bounds, counting every record whole (about 17 KiB) as it is before the shipper's first stack
 * hint; with one, a record holds the bytes the hint covers (about 2 KiB), so the ring holds
 * several times the 200 ms the rule asks. The kernel allocates and zeroes it at the map's
 * creation (2 MiB cost the worker 2.8 ms of its start on this VM), and it is mapped into the
 * worker, so its size is the worker's memory. The default rate on two CPUs gets 1 MiB.
 */
#define SC_SNAP_RINGBUF_MIN (512u << 10)
#define SC_SNAP_RINGBUF_MAX (8u << 20)

/*
 * Naming kernel frames without /proc/kallsyms: the worker writes up to SC_KSYM_BATCH kernel
 * addresses its stacks hold into ksym_addrs (then a 0) and runs ksym_names, which asks the
 * kernel's own lookup (bpf_snprintf "%ps") for each: a binary search in the kernel, where
 * reading kallsyms formats 120 000 lines (about 40 ms of CPU here) for the few hundred
 * addresses a task has. A "syscall" program: its load needs no kernel BTF, which would cost
 * the worker more than kallsyms costs the shipper. Names longer than a slot are left to
 * kallsyms; "0x..." is the kernel saying no symbol holds the address.
 */
#define SC_KSYM_BATCH 128
#define SC_KSYM_SLOT 256

enum sc_rec_kind {
	SC_REC_SNAP = 1,    /* struct sc_snap */
	SC_REC_DONE = 2,    /* struct sc_done: OFF_CPU time of the snapshot taken at switch-out */
	SC_REC_PYCODE = 3,  /* struct sc_pycode (common/pyframes.h): a Python code object's names */
	SC_REC_JMETHOD = 4, /* struct sc_jmethod (common/jvmframes.h): a Java method's names */
	SC_REC_V8FUNC = 5,  /* struct sc_v8func (common/v8frames.h): a JavaScript function's */
	SC_REC_JNMETHOD = 6, /* struct sc_jnmethod (common/jvmframes.h): a Java method's JIT code */
};

/* The copy stopped at the target's limit (snap_limits), not at the stack's end or SC_SNAP_STACK. */
#define SC_SNAP_LIMITED 1u

/*
 * A snapshot's runtime frames are Python's, Java's or JavaScript's (a process is one): the
 * status word says which runtime in its bits 8-15 and that runtime's status in bits 0-7.
 */
#define SC_RT_PYTHON 0u
#define SC_RT_JAVA 1u
#define SC_RT_NODE 2u
#define SC_RT_STATUS(rt, st) ((rt) << 8 | (st))
#define SC_RT_OF(word) ((word) >> 8)
#define SC_RT_ST(word) ((word)&0xffu)

/* A status word the programs may write. */
static inline int sc_rt_status_ok(__u32 word)
{
	return SC_RT_OF(word) == SC_RT_PYTHON ? SC_RT_ST(word) < PY_ST_MAX
	       : SC_RT_OF(word) == SC_RT_JAVA ? SC_RT_ST(word) < JAVA_ST_MAX && SC_RT_ST(word)
	       : SC_RT_OF(word) == SC_RT_NODE ? SC_RT_ST(word) < V8_ST_MAX && SC_RT_ST(word)
					      : 0;
}

struct sc_snap {
	__u32 kind;
	__u32 tgid;
	__u32 pid;
	__s32 kbytes; /* bytes of kernel frames at the start of data, <= 0: none */
	__u64 ts;     /* OFF_CPU: switch-out time, with pid the key of the sc_done; ON_CPU: 0 */
	__u64 value;  /* ON_CPU: 1 */
	__u64 ip, sp, bp;
	__u64 stack_start; /* the address of the first stack byte: sp */
	__u32 stack_len;   /* bytes of stack in data, after the kernel frames */
	__u32 flags;	   /* SC_SNAP_LIMITED */
	__u32 npy;	   /* runtime frames (struct py_frame) after the kernel frames */
	__u32 pystatus;	   /* SC_RT_STATUS: enum py_status, java_status or v8_status */
	/* The kernel frames (kbytes of them, none when <= 0), the Python frames (npy), then the
	 * stack: a record is as long as what it holds. */
	__u8 data[SC_STACK_DEPTH * 8 + PY_MAX_FRAMES * 16 + SC_SNAP_STACK];
};

struct sc_done {
	__u32 kind;
	__u32 pid;
	__u64 ts;
	__u64 value;  /* nanoseconds off the CPU */
	__u64 value2; /* switches: 1 */
};

#endif
