// SPDX-License-Identifier: GPL-2.0
/*
 * ON_CPU sampling: runs on a per-CPU CPU-clock perf event and counts, in the kernel, samples of
 * the target processes by (tgid, user stack id, kernel stack id). Two count maps alternate so
 * the worker can drain one completely while the other fills.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common/oncpu.h"

#define EFAULT 14
#define ENOMEM 12
#define EEXIST 17

/* Index of the count map being filled; the worker flips it at each flush. */
volatile __u32 active_counts;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, ONCPU_MAX_TARGETS);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ONCPU_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384); /* the worker resizes it before load */
} stacks SEC(".maps");

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct oncpu_key);
	__type(value, __u64);
	__uint(max_entries, 16384);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, ONCPU_STAT_MAX);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
}

static __always_inline void count(void *map, struct oncpu_key *key)
{
	__u64 one = 1, *v;

	v = bpf_map_lookup_elem(map, key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	if (!bpf_map_update_elem(map, key, &one, BPF_NOEXIST))
		return;
	/* Another CPU may have inserted the key between the lookup and the update. */
	v = bpf_map_lookup_elem(map, key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		stat_inc(ONCPU_STAT_COUNTS_FULL);
}

static __always_inline __s32 stack_id(long id, __u32 collision_stat)
{
	if (id >= 0)
		return id;
	if (id == -EEXIST)
		stat_inc(collision_stat);
	else if (id == -ENOMEM)
		stat_inc(ONCPU_STAT_STACK_MAP_FULL);
	return -1;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct oncpu_key key = {};
	long id;

	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	stat_inc(ONCPU_STAT_SAMPLES);
	key.tgid = tgid;
	/* -EFAULT for the kernel stack means the sample hit user mode: no kernel frames. */
	id = bpf_get_stackid(ctx, &stacks, 0);
	key.kstack = stack_id(id, ONCPU_STAT_KSTACK_COLLISION);
	id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (id == -EFAULT)
		stat_inc(ONCPU_STAT_USTACK_MISSING);
	key.ustack = stack_id(id, ONCPU_STAT_USTACK_COLLISION);

	if (active_counts)
		count(&counts1, &key);
	else
		count(&counts0, &key);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
