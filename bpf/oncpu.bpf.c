// SPDX-License-Identifier: GPL-2.0
/* ON_CPU sampling: runs on a per-CPU CPU-clock perf event and counts samples of the targets. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/stackcount.bpf.h"

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sc_key key = {};

	if (!is_target(tgid))
		return 0;
	stat_inc(SC_STAT_EVENTS);
	key.tgid = tgid;
	take_stacks(ctx, &key, 0);
	count_stack(&key, 1, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
