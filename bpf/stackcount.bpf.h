/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the stack-counting programs share: target filter, stack map, the two count maps the
 * worker alternates between, and loss counters. Counts are keyed by (tgid, user stack id,
 * kernel stack id) so the worker's work grows with distinct stacks, not with events.
 */
#ifndef ROVER_BPF_STACKCOUNT_H
#define ROVER_BPF_STACKCOUNT_H

#include "common/stackcount.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/credcheck.bpf.h"

#define EFAULT 14
#define ENOMEM 12
#define EEXIST 17

/* Index of the count map being filled; the worker flips it at each flush. */
volatile __u32 active_counts;

/* Set by the worker before load: take stack snapshots (unwind mode "dwarf"). */
const volatile __u32 unwind_dwarf;
/*
 * Set by the worker before load: ring buffer bytes waiting to be read above which a record
 * wakes the worker. Below it nobody is woken and the worker reads at its flush; a wakeup per
 * record would cost the worker more than the records themselves.
 */
const volatile __u64 snap_wake_bytes = 1;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, SC_MAX_TARGETS);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SC_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384); /* the worker resizes it before load */
} stacks SEC(".maps");

/* Stack snapshots and OFF_CPU times for them; a page when unused, sized by the worker. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} snaps SEC(".maps");

/*
 * Bytes of user stack above sp a target's snapshots need (the shipper's stack hint, set by
 * the worker): bytes past them are not copied. No entry: all SC_SNAP_STACK.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, SC_MAX_TARGETS);
} snap_limits SEC(".maps");

/*
 * Where a snapshot is made before the ring buffer takes the bytes it holds, no more. The slack
 * is for the verifier only: a piece of stack starts at an offset it knows only as bounded
 * (after the kernel frames and the pieces before it), never past the data's end.
 */
struct sc_snap_scratch {
	struct sc_snap s;
	__u8 slack[SC_SNAP_PAGE];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct sc_snap_scratch);
	__uint(max_entries, 1);
} snap_scratch SEC(".maps");

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct sc_key);
	__type(value, struct sc_value);
	__uint(max_entries, 16384);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, SC_STAT_MAX);
} stats SEC(".maps");

/* Kernel addresses to name and their names (common/stackcount.h), in the mmapped .bss. */
__u64 ksym_addrs[SC_KSYM_BATCH];
__s32 ksym_lens[SC_KSYM_BATCH];
char ksym_out[SC_KSYM_BATCH][SC_KSYM_SLOT];

/*
 * Names ksym_addrs up to the first 0, each name's length (NUL included, as bpf_snprintf
 * counts it: more than SC_KSYM_SLOT when cut) in ksym_lens. Run by the worker
 * (BPF_PROG_RUN), never on a target's path.
 */
SEC("syscall")
int ksym_names(void *ctx)
{
	static const char fmt[] = "%ps";

	for (__u32 i = 0; i < SC_KSYM_BATCH; i++) {
		__u64 addr = ksym_addrs[i];

		if (!addr)
			break;
		ksym_lens[i] = bpf_snprintf(ksym_out[i], SC_KSYM_SLOT, fmt, &addr, sizeof(addr));
	}
	return 0;
}

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
}

static __always_inline __u64 snap_wake_flag(void)
{
	return bpf_ringbuf_query(&snaps, BPF_RB_AVAIL_DATA) >= snap_wake_bytes ? BPF_RB_FORCE_WAKEUP
									       : BPF_RB_NO_WAKEUP;
}

static __always_inline int is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/*
 * tgid is a target and the current thread, one of its own, may be recorded: for a client's
 * task, still the client's to trace (bpf/credcheck.bpf.h). A target that is not is deleted
 * from the targets (the worker sees it gone and says so) and counted once.
 */
static __always_inline int is_traced(__u32 tgid)
{
	enum cred_verdict v;

	if (!is_target(tgid))
		return 0;
	if (!cred_check)
		return 1;
	v = cred_judge();
	if (v == CRED_DROP && !bpf_map_delete_elem(&targets, &tgid))
		stat_inc(SC_STAT_CRED_DROPPED);
	return v == CRED_OK;
}

static __always_inline void add_to(void *map, struct sc_key *key, __u64 value, __u64 value2)
{
	struct sc_value init = { .value = value, .value2 = value2 }, *v;

	v = bpf_map_lookup_elem(map, key);
	if (!v) {
		if (!bpf_map_update_elem(map, key, &init, BPF_NOEXIST))
			return;
		/* Another CPU may have inserted the key between the lookup and the update. */
		v = bpf_map_lookup_elem(map, key);
		if (!v) {
			stat_inc(SC_STAT_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->value, value);
	if (value2)
		__sync_fetch_and_add(&v->value2, value2);
}

static __always_inline void count_stack(struct sc_key *key, __u64 value, __u64 value2)
{
	/* Two call sites, one per map: the verifier tracks one map per helper call. */
	if (active_counts)
		add_to(&counts1, key, value, value2);
	else
		add_to(&counts0, key, value, value2);
}

static __always_inline __s32 stack_id(long id, __u32 collision_stat)
{
	if (id >= 0)
		return id;
	if (id == -EEXIST)
		stat_inc(collision_stat);
	else if (id == -ENOMEM)
		stat_inc(SC_STAT_STACK_MAP_FULL);
	return -1;
}

/*
 * The current task's stacks, into key (ctx: the program's context). kskip kernel frames are
 * left out: the tracing machinery between the traced function and the program.
 */
static __always_inline void take_stacks(void *ctx, struct sc_key *key, __u32 kskip)
{
	long id;

	/* -EFAULT for the kernel stack means no kernel frames (user mode): not a loss. */
	id = bpf_get_stackid(ctx, &stacks, kskip & BPF_F_SKIP_FIELD_MASK);
	key->kstack = stack_id(id, SC_STAT_KSTACK_COLLISION);
	id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (id == -EFAULT)
		stat_inc(SC_STAT_USTACK_MISSING);
	key->ustack = stack_id(id, SC_STAT_USTACK_COLLISION);
}

#include "bpf/python.bpf.h"
#include "bpf/java.bpf.h"
#include "bpf/v8.bpf.h"

/*
 * The current thread's runtime frames (Python, Java or JavaScript: a process is one) into
 * the snapshot being made in snap_scratch, after its kb bytes of kernel frames; the user
 * registers are the snapshot's ip, sp and bp (set before the call), and r13. Returns the frame
 * count in the low 16 bits and the status (its runtime kind included) above them.
 *
 * A global function: the verifier checks it once, on its own, and its caller sees one unknown
 * number come back. Inlined, every way the two walks could end was a state of its own that the
 * verifier carried through the stack copy after them (about 37 000 instructions at each load,
 * three times the program without Java; see docs/performance.md).
 */
__noinline int rt_frames(__u32 tgid, __u32 pid, __u32 kb, __u64 r13)
{
	struct sc_snap_scratch *scratch;
	__u32 zero = 0, n, status;

	scratch = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!scratch)
		return 0;
	n = py_frames(tgid, pid, kb, &status);
	if (status == PY_ST_NONE) {
		n = java_frames(tgid, pid, kb, scratch->s.ip, scratch->s.sp, scratch->s.bp, r13,
				&status);
		if (status != JAVA_ST_NONE)
			status = SC_RT_STATUS(SC_RT_JAVA, status);
	}
	if (status == PY_ST_NONE) {
		int rt = v8_frames(tgid, kb, scratch->s.ip, scratch->s.sp, scratch->s.bp);

		n = (__u32)rt & 0xffff;
		status = (__u32)rt >> 16;
		if (status != V8_ST_NONE)
			status = SC_RT_STATUS(SC_RT_NODE, status & 0xff);
	}
	if (n > 0xffff)
		n = 0;
	return (int)((status & 0x7fff) << 16 | n);
}

/*
 * Puts a snapshot of the current task into the ring buffer: user registers ip, sp, bp, the
 * kernel stack (kskip as in take_stacks) and the user stack from sp up, as much of it as the
 * target's limit in snap_limits covers. The record is as long as what it holds (about 2 KiB
 * with a hint and no kernel frames, not 17): the ring buffer holds more of them, the worker
 * is woken less often and the target's CPU copies less. 0, or -1 when none was taken
 * (counted): the caller then takes frame-pointer stacks instead, so the event still counts.
 * The worker is woken only once snap_wake_bytes wait in the ring buffer.
 */
static __always_inline int take_snapshot(void *ctx, __u64 ip, __u64 sp, __u64 bp, __u64 r13,
					 __u32 kskip, __u32 tgid, __u32 pid, __u64 ts, __u64 value)
{
	__u64 pos = sp, end = sp + SC_SNAP_STACK, size;
	__u32 zero = 0, len = 0, *limit, off, flags = 0, npy, pystatus, pyb;
	struct sc_snap_scratch *scratch;
	struct sc_snap *s;
	long kb;
	int rt;

	scratch = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!scratch) {
		stat_inc(SC_STAT_SNAP_RINGBUF_FULL);
		return -1;
	}
	s = &scratch->s;
	if (!sp) {
		stat_inc(SC_STAT_SNAP_FAULT);
		return -1;
	}
	limit = bpf_map_lookup_elem(&snap_limits, &tgid);
	if (limit && *limit < SC_SNAP_STACK) {
		end = sp + *limit;
		flags = SC_SNAP_LIMITED;
	}
	kb = bpf_get_stack(ctx, s->data, SC_STACK_DEPTH * 8, kskip & BPF_F_SKIP_FIELD_MASK);
	off = kb > 0 && kb <= SC_STACK_DEPTH * 8 ? (__u32)kb : 0;
	/* A Python or Java target's frames follow the kernel frames (rt_frames). */
	s->ip = ip;
	s->sp = sp;
	s->bp = bp;
	rt = rt_frames(tgid, pid, off, r13);
	npy = (__u32)rt & 0xffff;
	pystatus = (__u32)rt >> 16;
	pyb = npy * sizeof(struct py_frame);
	if (pyb > PY_MAX_FRAMES * sizeof(struct py_frame))
		pyb = npy = 0;
		/*
	 * Piece by piece, none crossing a page: a read that crosses into an unmapped or absent
	 * page fails whole, so a failing piece ends the copy with what came before it. In the
	 * sched_switch and perf event contexts a page fault cannot be served, only present pages
	 * are copied.
	 */
#pragma unroll
	for (int i = 0; i <= SC_SNAP_PAGES; i++) {
		__u64 next = (pos | (SC_SNAP_PAGE - 1)) + 1, n;
		__u64 at = pyb;

		/* Kept from the compiler's reuse of an unbounded copy: the bound below is at's. */
		asm volatile("" : "+r"(at));
		if (pos >= end)
			break;
		if (next > end)
			next = end;
		n = next - pos;
		/* Always true; bounds the verifier can see. */
		if (n > SC_SNAP_PAGE || len > SC_SNAP_STACK || off > SC_STACK_DEPTH * 8 ||
		    at > PY_MAX_FRAMES * sizeof(struct py_frame))
			break;
		if (bpf_probe_read_user(s->data + off + at + len, n, (void *)pos))
			break;
		len += n;
		pos = next;
	}
	if (!len) {
		stat_inc(SC_STAT_SNAP_FAULT);
		return -1;
	}
	s->kind = SC_REC_SNAP;
	s->tgid = tgid;
	s->pid = pid;
	s->ts = ts;
	s->value = value;
	s->ip = ip;
	s->sp = sp;
	s->bp = bp;
	s->stack_start = sp;
	s->stack_len = len;
	/* Cut by the limit only if the copy reached it: the stack may go on above. */
	s->flags = pos == end ? flags : 0;
	s->kbytes = (__s32)off;
	s->npy = npy;
	s->pystatus = pystatus;
	size = __builtin_offsetof(struct sc_snap, data) + off + pyb + len;
	/* Never true (off and len are bounded above); the verifier needs the bound. */
	if (size > sizeof(*s)) {
		stat_inc(SC_STAT_SNAP_FAULT);
		return -1;
	}
	if (bpf_ringbuf_output(&snaps, s, size, snap_wake_flag())) {
		stat_inc(SC_STAT_SNAP_RINGBUF_FULL);
		return -1;
	}
	return 0;
}

/* The current task's user registers when it entered the kernel. */
static __always_inline void user_regs(__u64 *ip, __u64 *sp, __u64 *bp, __u64 *r13)
{
	struct rover_pt_regs *r =
		(struct rover_pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	*ip = r->ip;
	*sp = r->sp;
	*bp = r->bp;
	*r13 = r->r13;
}

#endif
