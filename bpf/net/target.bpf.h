/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NETWORK's targets, who among their threads may be recorded, and the loss counters every
 * path adds to.
 */
#ifndef ROVER_BPF_NET_TARGET_H
#define ROVER_BPF_NET_TARGET_H

#include "common/netrec.h"
#include "bpf/credcheck.bpf.h"

/*
 * The targets, one bit per tgid (pid_max is at most 2^22): the test every socket call of the
 * host makes is one load, not a hash lookup. The worker sets and clears bits through the
 * mapped .bss, with no system call.
 */
#define TARGET_WORDS (1u << 16)
__u64 target_bits[TARGET_WORDS] = {};

static __always_inline int is_target(__u32 tgid)
{
	return (target_bits[(tgid >> 6) & (TARGET_WORDS - 1)] >> (tgid & 63)) & 1;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, NET_STAT_MAX);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += n;
}

/*
 * tgid is a target and the current thread, one of its own, may be recorded: for a client's
 * task, still the client's to trace (bpf/credcheck.bpf.h). A target that is not loses its bit
 * (the worker sees it gone and says so), counted once.
 */
static __always_inline int is_traced(__u32 tgid)
{
	__u64 bit = 1ull << (tgid & 63);
	enum cred_verdict v;

	if (!is_target(tgid))
		return 0;
	if (!cred_check)
		return 1;
	v = cred_judge();
	if (v == CRED_DROP &&
	    (__sync_fetch_and_and(&target_bits[(tgid >> 6) & (TARGET_WORDS - 1)], ~bit) & bit))
		stat_add(NET_STAT_CRED_DROPPED, 1);
	return v == CRED_OK;
}

#endif
