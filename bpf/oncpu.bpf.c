// SPDX-License-Identifier: GPL-2.0
/* ON_CPU sampling: runs on a per-CPU CPU-clock perf event and counts samples of the targets. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/stackcount.bpf.h"

SEC("perf_event")
int on_cpu_sample(void *ctx)
{
	/* The context starts with the sampled registers (struct bpf_perf_event_data). */
	struct rover_pt_regs *regs = ctx;

	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sc_key key = {};

	if (!is_traced(tgid))
		return 0;
	stat_inc(SC_STAT_EVENTS);
	if (unwind_dwarf) {
		/* The context gives pt_regs fields only as whole 8-byte words: cs is read whole. */
		__u64 cs = regs->cs;
		__u64 ip = regs->ip, sp = regs->sp, bp = regs->bp, r13 = regs->r13;

		/* Loads from the context stay here: merged with the pt_regs ones below, they fail. */
		asm volatile("" : "+r"(ip), "+r"(sp), "+r"(bp), "+r"(cs));
		asm volatile("" : "+r"(r13));
		/* A sample in user mode has the user registers; else they are the task's saved ones. */
		if ((cs & 3) != 3)
			user_regs(&ip, &sp, &bp, &r13);
		if (!take_snapshot(ctx, ip, sp, bp, r13, 0, tgid, (__u32)bpf_get_current_pid_tgid(),
				   0, 1))
			return 0;
	}
	key.tgid = tgid;
	take_stacks(ctx, &key, 0);
	count_stack(&key, 1, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
