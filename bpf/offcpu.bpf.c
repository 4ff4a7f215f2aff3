// SPDX-License-Identifier: GPL-2.0
/*
 * OFF_CPU: when a target thread is switched out, remember the time and its stacks; when it is
 * switched back in, add the time it spent off the CPU to those stacks. sched_switch runs in
 * the context of the task leaving the CPU, so the stacks taken there are prev's.
 *
 * Two attach variants over one body, chosen by the worker at run time: tp_btf (typed, BTF)
 * and raw_tp (for kernels without BTF-typed tracepoints). kprobes on finish_task_switch, the
 * upstream agent's hook, are not needed: both variants see every switch.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/stackcount.bpf.h"

#define TASK_DEAD 0x80

struct off_start {
	__u64 ts;
	struct sc_key key;
	__u64 snap; /* 1: a snapshot keyed by (pid, ts) is in the ring buffer, key unused */
};

/* Threads of the targets currently off the CPU, by thread id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct off_start);
	__uint(max_entries, 16384);
} starts SEC(".maps");

static __always_inline int on_switch(void *ctx, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tgid = BPF_CORE_READ(prev, tgid), next_pid = BPF_CORE_READ(next, pid);
	struct off_start *start;
	__u64 now = bpf_ktime_get_ns();

	/*
	 * A thread switched out for the last time (exiting) never comes back: skip it. prev is
	 * the current thread, whose credentials is_traced judges (after its one target lookup).
	 */
	if (is_traced(prev_tgid) && !(BPF_CORE_READ(prev, __state) & TASK_DEAD)) {
		struct off_start s = { .ts = now };
		__u32 pid = BPF_CORE_READ(prev, pid);

		s.key.tgid = prev_tgid;
		/* sched_switch runs in prev's context: current is prev, its user stack is mapped. */
		if (unwind_dwarf) {
			__u64 ip, sp, bp, r13;

			user_regs(&ip, &sp, &bp, &r13);
			s.snap = !take_snapshot(ctx, ip, sp, bp, r13, 2, prev_tgid, pid, now, 0);
		}
		/* The program's own frame and bpf_trace_runN sit above __schedule. */
		if (!s.snap)
			take_stacks(ctx, &s.key, 2);
		if (bpf_map_update_elem(&starts, &pid, &s, BPF_ANY))
			stat_inc(SC_STAT_STARTS_FULL);
	}
	start = bpf_map_lookup_elem(&starts, &next_pid);
	if (!start)
		return 0;
	if (now > start->ts) {
		stat_inc(SC_STAT_EVENTS);
		if (start->snap) {
			struct sc_done d = { .kind = SC_REC_DONE,
					     .pid = next_pid,
					     .ts = start->ts,
					     .value = now - start->ts,
					     .value2 = 1 };

			if (bpf_ringbuf_output(&snaps, &d, sizeof(d), snap_wake_flag()))
				stat_inc(SC_STAT_SNAP_RINGBUF_FULL);
		} else {
			count_stack(&start->key, now - start->ts, 1);
		}
	}
	bpf_map_delete_elem(&starts, &next_pid);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(off_cpu_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(off_cpu_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next);
}

char LICENSE[] SEC("license") = "GPL";
