// SPDX-License-Identifier: Apache-2.0
/*
 * The shipper's unwinder on a snapshot of this very process: registers and stack top taken in
 * a chain of functions, with rbp poisoned so that only CFI can find the callers. And the
 * parser of MSG_SHIP_SNAPSHOTS payloads against malformed input.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/msg.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/task.h"
#include "shipper/stacks/unwind.h"
#include "worker/snaprec.h"
#include "worker/stackhint.h"

#include "tests/unit/self_snapshot.h"

__attribute__((noinline)) void unwind_level3(void)
{
	take_snapshot();
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

__attribute__((noinline)) void unwind_level2(void)
{
	unwind_level3();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void unwind_level1(void)
{
	unwind_level2();
	__asm__ volatile("" ::: "memory");
}

Test(unwind, a_snapshot_of_this_process_unwinds_through_its_callers)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	uint64_t ips[ROVER_MAX_STACK_DEPTH];
	char names[ROVER_MAX_STACK_DEPTH][256], all[8192] = "";
	size_t used = 0;
	struct unwind_stats st;
	size_t n;

	cr_assert_not_null(u);
	unwind_level1();
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	n = unwinder__unwind(u, getpid(), &snap_regs, snap_stack, snap_len, ips,
			     ROVER_MAX_STACK_DEPTH);
	for (size_t i = 0; i < n; i++) {
		symbolizer__user(sym, getpid(), i ? ips[i] - 1 : ips[i], names[i],
				 sizeof(names[i]));
		used += (size_t)snprintf(all + used, sizeof(all) - used, "%s;", names[i]);
		if (used >= sizeof(all))
			used = sizeof(all) - 1;
	}
	cr_log_info("%zu frames: %s", n, all);
	cr_assert_geq(n, 5, "%s", all);
	cr_assert_str_eq(names[0], "take_snapshot");
	cr_assert_str_eq(names[1], "unwind_level3");
	cr_assert_str_eq(names[2], "unwind_level2");
	cr_assert_str_eq(names[3], "unwind_level1");
	cr_assert(strstr(all, "a_snapshot_of_this_process_unwinds_through_its_callers"), "%s", all);
	unwinder__stats(u, &st);
	cr_assert_geq(st.cfi_steps, 4);
	unwinder__free(u);
	symbolizer__free(sym);
}

Test(unwind, garbage_stacks_end_within_bounds)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	uint64_t ips[ROVER_MAX_STACK_DEPTH], words[1024];
	struct unwind_regs regs = { .ip = (uint64_t)(uintptr_t)&unwind_level1 + 4,
				    .sp = 0x7ffc00000000,
				    .bp = 0x7ffc00000010 };
	size_t n;

	srand(1);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < 1024; i++)
			/* Return addresses into this binary and pointers into the "stack". */
			words[i] = rand() % 3 == 0   ? regs.sp + (uint64_t)(rand() % 9000)
				   : rand() % 2 == 0 ? (uint64_t)(uintptr_t)&unwind_level2 + 9
						     : ((uint64_t)rand() << 32 | (uint64_t)rand());
		n = unwinder__unwind(u, getpid(), &regs, (const uint8_t *)words, sizeof(words), ips,
				     ROVER_MAX_STACK_DEPTH);
		cr_assert(n >= 1 && n <= ROVER_MAX_STACK_DEPTH);
		cr_assert_eq(ips[0], regs.ip);
	}
	/* Nothing to read: the first frame only, or a step through CFI that needs no memory. */
	n = unwinder__unwind(u, getpid(), &regs, NULL, 0, ips, ROVER_MAX_STACK_DEPTH);
	cr_assert_eq(n, 1);
	cr_assert_eq(unwinder__unwind(u, getpid(), &regs, NULL, 0, ips, 0), 0);
	unwinder__free(u);
	symbolizer__free(sym);
}

/* A payload of count records (nkips kernel frames, stack_len stack bytes each). */
static size_t build_payload(uint8_t *buf, uint32_t count, uint32_t nkips, uint32_t stack_len)
{
	struct ship_snapshots_hdr h = { .task_id = 7, .count = count };
	size_t off = sizeof(h);

	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < count; i++) {
		struct ship_snapshot s = { .tgid = 42,
					   .nkips = nkips,
					   .stack_len = stack_len,
					   .value = i + 1,
					   .ip = 0x1000,
					   .sp = 0x2000 };

		memcpy(buf + off, &s, sizeof(s));
		off += sizeof(s);
		memset(buf + off, 0xab, nkips * 8 + ((stack_len + 7) & ~7u));
		off += nkips * 8 + ((stack_len + 7) & ~7u);
	}
	return off;
}

Test(unwind, snapshot_payloads_are_walked_and_malformed_ones_refused)
{
	static uint8_t buf[1 << 20];
	struct snapshot_iter it;
	struct snapshot_view v;
	size_t len = build_payload(buf, 3, 5, 13);
	struct ship_snapshot s;
	int n = 0, rc;

	cr_assert_eq(snapshots__begin(&it, buf, len), 0);
	cr_assert_eq(it.task_id, 7);
	while ((rc = snapshots__next(&it, &v)) == 1) {
		n++;
		cr_assert_eq(v.s.value, (uint64_t)n);
		cr_assert_eq(v.s.nkips, 5);
		cr_assert_eq(v.stack - v.kips, 40);
		cr_assert_eq(v.stack[12], 0xab);
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(n, 3);

	/* Every truncation is refused, never read past. */
	for (size_t cut = 0; cut < len; cut++) {
		if (snapshots__begin(&it, buf, cut))
			continue;
		while ((rc = snapshots__next(&it, &v)) == 1)
			;
		cr_assert_eq(rc, -EPROTO, "cut at %zu of %zu accepted", cut, len);
	}
	/* A count that does not match the records, trailing bytes, limits. */
	len = build_payload(buf, 2, 1, 8);
	((struct ship_snapshots_hdr *)buf)->count = 3;
	cr_assert_eq(snapshots__begin(&it, buf, len), 0);
	while ((rc = snapshots__next(&it, &v)) == 1)
		;
	cr_assert_eq(rc, -EPROTO);
	((struct ship_snapshots_hdr *)buf)->count = 1;
	cr_assert_eq(snapshots__begin(&it, buf, len), 0);
	cr_assert_eq(snapshots__next(&it, &v), 1);
	cr_assert_eq(snapshots__next(&it, &v), -EPROTO);
	len = build_payload(buf, 1, 0, 0);
	memcpy(&s, buf + sizeof(struct ship_snapshots_hdr), sizeof(s));
	s.nkips = ROVER_MAX_STACK_DEPTH + 1;
	memcpy(buf + sizeof(struct ship_snapshots_hdr), &s, sizeof(s));
	cr_assert_eq(snapshots__begin(&it, buf, sizeof(buf)), 0);
	cr_assert_eq(snapshots__next(&it, &v), -EPROTO);
	s.nkips = 0;
	s.stack_len = SHIP_SNAPSHOT_MAX_STACK + 1;
	memcpy(buf + sizeof(struct ship_snapshots_hdr), &s, sizeof(s));
	cr_assert_eq(snapshots__next(&it, &v), -EPROTO);
	s.stack_len = 0;
	s.tgid = 0;
	memcpy(buf + sizeof(struct ship_snapshots_hdr), &s, sizeof(s));
	cr_assert_eq(snapshots__begin(&it, buf, len), 0);
	cr_assert_eq(snapshots__next(&it, &v), -EPROTO);
	cr_assert_eq(snapshots__begin(&it, buf, 3), -EPROTO);
}

/*
 * The stack hint's ground: an unwinding says how far above sp it read; given exactly that
 * many bytes it finds the same frames, given fewer it loses callers and says it was cut.
 */
Test(unwind, an_unwinding_says_how_much_of_the_stack_it_read)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	uint64_t ips[ROVER_MAX_STACK_DEPTH], again[ROVER_MAX_STACK_DEPTH];
	struct unwind_reach all, exact, half;
	size_t n, n_exact, n_half;

	cr_assert_not_null(u);
	unwind_level1();
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	n = unwinder__unwind_reach(u, getpid(), &snap_regs, snap_stack, snap_len, ips,
				   ROVER_MAX_STACK_DEPTH, &all);
	cr_log_info("%zu frames read %u of %zu bytes", n, all.top, snap_len);
	cr_assert_geq(n, 5);
	cr_assert_gt(all.top, 0);
	cr_assert_leq(all.top, snap_len);
	n_exact = unwinder__unwind_reach(u, getpid(), &snap_regs, snap_stack, all.top, again,
					 ROVER_MAX_STACK_DEPTH, &exact);
	cr_assert_eq(n_exact, n, "%u bytes found %zu frames of %zu", all.top, n_exact, n);
	cr_assert_eq(memcmp(again, ips, n * sizeof(ips[0])), 0);
	cr_assert_eq(exact.top, all.top);
	n_half = unwinder__unwind_reach(u, getpid(), &snap_regs, snap_stack, all.top / 2, again,
					ROVER_MAX_STACK_DEPTH, &half);
	cr_assert_lt(n_half, n);
	cr_assert(half.cut, "an unwinding short of bytes did not say so");
	cr_assert_leq(half.top, all.top / 2);
	unwinder__free(u);
	symbolizer__free(sym);
}

/* A payload of count copies of a snapshot (regs, stack), stack_len bytes of it, flags. */
static size_t own_payload(uint8_t *buf, const struct unwind_regs *regs, const uint8_t *stack,
			  uint32_t count, uint32_t stack_len, uint32_t flags)
{
	struct ship_snapshots_hdr h = { .task_id = 9, .count = count };
	struct ship_snapshot s = { .tgid = getpid(),
				   .stack_len = stack_len,
				   .flags = flags,
				   .value = 1,
				   .ip = regs->ip,
				   .sp = regs->sp,
				   .bp = regs->bp };
	size_t off = sizeof(h), sb = (stack_len + 7) & ~7u;

	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < count; i++) {
		memcpy(buf + off, &s, sizeof(s));
		off += sizeof(s);
		memset(buf + off, 0, sb);
		memcpy(buf + off, stack, stack_len);
		off += sb;
	}
	return off;
}

/* shipper/task.c STACK_HINT_LEARN: whole snapshots of a target before its hint. */
#define STACK_HINT_LEARN_N 16

static struct unwind_regs deep_regs;
static uint8_t deep_stack[SNAP_MAX];
static size_t deep_len;

/* A snapshot taken n frames of 512 bytes deeper than unwind_level1's, into deep_*. */
__attribute__((noinline)) static int deep_chain(int n)
{
	volatile char pad[512];
	int r;

	pad[0] = (char)n;
	if (n == 0) {
		unwind_level1();
		deep_regs = snap_regs;
		deep_len = snap_len;
		memcpy(deep_stack, snap_stack, snap_len);
		return pad[0];
	}
	r = deep_chain(n - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call */
	return r + pad[0];
}

/*
 * The shipper's side of the hint: none before the first snapshots were unwound, then one with
 * room over what they read; a deeper stack the worker trimmed to it is cut short, counted,
 * and raises it at once, enough for that stack.
 */
Test(unwind, the_stack_hint_follows_what_unwinding_read)
{
	static uint8_t buf[1 << 20];
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	struct task_spec spec = {
		.task_id = 9, .type = TASK_ON_CPU, .unwind = UNWIND_DWARF, .npids = 1
	};
	uint64_t ips[ROVER_MAX_STACK_DEPTH];
	struct msg_stack_hint h[ROVER_MAX_PIDS];
	struct ship_task *t = ship_task__new(9);
	struct unwind_reach all, deep;
	uint32_t first;
	size_t len, n_deep;

	cr_assert(u && t);
	spec.pids[0] = getpid();
	unwind_level1();
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	cr_assert_eq(ship_task__begin(t, &spec, sym), 0);
	unwinder__unwind_reach(u, getpid(), &snap_regs, snap_stack, snap_len, ips,
			       ROVER_MAX_STACK_DEPTH, &all);

	len = own_payload(buf, &snap_regs, snap_stack, 15, (uint32_t)snap_len, 0);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(ship_task__stack_hints(t, h, ROVER_MAX_PIDS), 0, "a hint before 16 stacks");
	len = own_payload(buf, &snap_regs, snap_stack, 1, (uint32_t)snap_len, 0);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(ship_task__stack_hints(t, h, ROVER_MAX_PIDS), 1);
	cr_assert_eq(h[0].task_id, 9);
	cr_assert_eq(h[0].tgid, getpid());
	cr_assert_geq(h[0].bytes, 2 * all.top, "%u bytes for stacks reading %u", h[0].bytes,
		      all.top);
	first = h[0].bytes;
	/* The same stacks again: nothing new to say. */
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(ship_task__stack_hints(t, h, ROVER_MAX_PIDS), 0);

	/* A stack deeper than the hint (frames of 512 bytes past it), trimmed to it. */
	deep_chain((int)(first / 512) + 2);
	n_deep = unwinder__unwind_reach(u, getpid(), &deep_regs, deep_stack, deep_len, ips,
					ROVER_MAX_STACK_DEPTH, &deep);
	cr_log_info("hint %u for stacks reading %u; a deeper one reads %u of %zu, %zu frames",
		    first, all.top, deep.top, deep_len, n_deep);
	cr_assert_gt(deep.top, first);
	cr_assert_lt(deep.top, SNAP_MAX, "the deeper stack does not fit a snapshot");
	len = own_payload(buf, &deep_regs, deep_stack, 1, first, SHIP_SNAP_TRIMMED);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(t->stacks_cut, 1);
	cr_assert_eq(ship_task__stack_hints(t, h, ROVER_MAX_PIDS), 1, "a cut raised no hint");
	cr_assert_geq(h[0].bytes, deep.top, "the hint was not lifted");
	/*
	 * Learnt again from whole snapshots only: shallow ones trimmed before the lift, still
	 * arriving, teach nothing; 16 whole deep ones give a hint that holds the deep stack.
	 */
	unwind_level1(); /* the shallow snapshot again (deep_chain took its place) */
	len = own_payload(buf, &snap_regs, snap_stack, STACK_HINT_LEARN_N, first,
			  SHIP_SNAP_TRIMMED);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(ship_task__stack_hints(t, h, ROVER_MAX_PIDS), 0,
		     "relearnt from snapshots trimmed before the lift");
	len = own_payload(buf, &deep_regs, deep_stack, STACK_HINT_LEARN_N, (uint32_t)deep_len, 0);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(ship_task__stack_hints(t, h, ROVER_MAX_PIDS), 1);
	cr_assert_geq(h[0].bytes, 2 * deep.top, "%u bytes for a stack reading %u", h[0].bytes,
		      deep.top);
	/* Trimmed to a hint that holds it, the deeper stack is whole: not cut. */
	first = (uint32_t)t->stacks_cut;
	len = own_payload(buf, &deep_regs, deep_stack, 1,
			  h[0].bytes < deep_len ? h[0].bytes : (uint32_t)deep_len,
			  SHIP_SNAP_TRIMMED);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	cr_assert_eq(t->stacks_cut, first, "a stack whole within the hint counted as cut");
	ship_task__free(t);
	unwinder__free(u);
	symbolizer__free(sym);
}

/*
 * The worker's side, against a hostile shipper (the peer that parses the targets' files): a
 * hint can name only the task's targets and only shorten what is sent, never below
 * SHIP_STACK_HINT_MIN; the largest number lifts the limit, it cannot overflow one.
 */
Test(unwind, a_hostile_shipper_can_only_shorten_its_own_stacks)
{
	int32_t pids[3] = { 100, 200, 0 };
	struct stack_hints h;

	stack_hints__init(&h, pids, 3);
	cr_assert_eq(h.n, 2, "pid 0 taken for a target");
	cr_assert_eq(stack_hints__limit(&h, 100), 0, "a limit before any hint");
	/* Processes of no target, and pid 0 or negative: refused, nothing changed. */
	cr_assert_eq(stack_hints__set(&h, 300, 1024), -ESRCH);
	cr_assert_eq(stack_hints__set(&h, 0, 1024), -ESRCH);
	cr_assert_eq(stack_hints__set(&h, -100, 1024), -ESRCH);
	cr_assert_eq(stack_hints__limit(&h, 300), 0);
	cr_assert_eq(stack_hints__limit(&h, 100), 0);
	cr_assert_eq(stack_hints__limit(&h, 200), 0);
	/* Nothing at all, or one byte: the floor. */
	cr_assert_eq(stack_hints__set(&h, 100, 0), 0);
	cr_assert_eq(stack_hints__limit(&h, 100), SHIP_STACK_HINT_MIN);
	cr_assert_eq(stack_hints__set(&h, 100, 1), 0);
	cr_assert_eq(stack_hints__limit(&h, 100), SHIP_STACK_HINT_MIN);
	cr_assert_eq(stack_hints__limit(&h, 200), 0, "a hint for one target moved another");
	/* The largest: no shorter than what the kernel copied, i.e. no limit in effect. */
	cr_assert_eq(stack_hints__set(&h, 200, UINT32_MAX), 0);
	cr_assert_eq(stack_hints__limit(&h, 200), UINT32_MAX);
	cr_assert_eq(stack_hints__set(&h, 200, 4096), 0);
	cr_assert_eq(stack_hints__limit(&h, 200), 4096);
	/* More targets than a task holds: only the first ROVER_MAX_PIDS. */
	{
		int32_t many[ROVER_MAX_PIDS + 8];

		for (int i = 0; i < ROVER_MAX_PIDS + 8; i++)
			many[i] = 1000 + i;
		stack_hints__init(&h, many, ROVER_MAX_PIDS + 8);
		cr_assert_eq(h.n, ROVER_MAX_PIDS);
		cr_assert_eq(stack_hints__set(&h, 1000 + ROVER_MAX_PIDS, 1024), -ESRCH);
	}
}

/* A ring record as the programs write it: 5 kernel frame slots (2 of them zero), 64 bytes of
 * stack from sp. Returns its size. */
static size_t snap_record(struct sc_snap *r)
{
	uint64_t k[5] = { 0xffffffff81000010ull, 0xffffffff81000020ull, 0xffffffff81000030ull };

	memset(r, 0, sizeof(*r));
	r->kind = SC_REC_SNAP;
	r->tgid = 100;
	r->pid = 101;
	r->value = 1;
	r->ip = 0x401000;
	r->sp = r->stack_start = 0x7ffe0000f000;
	r->bp = 0x7ffe0000f040;
	r->kbytes = (int32_t)sizeof(k);
	memcpy(r->data, k, sizeof(k));
	r->stack_len = 64;
	for (int i = 0; i < 64; i++)
		r->data[sizeof(k) + i] = (uint8_t)i;
	return offsetof(struct sc_snap, data) + sizeof(k) + 64;
}

/*
 * The worker's check of the ring buffer's snapshot records (worker/snaprec.c): a record as
 * the programs write it comes out whole, the kernel's "cut by the limit" and the worker's own
 * limit both flag it, and a record whose lengths do not add up is refused (the worker counts
 * it lost) instead of being read past its end.
 */
Test(unwind, ring_snapshot_records_are_checked_before_they_are_read)
{
	struct sc_snap *r = calloc(1, sizeof(*r));
	struct ship_snapshot s;
	const struct py_frame *py;
	const uint64_t *kips;
	const uint8_t *stack;
	size_t size;

	cr_assert_not_null(r);
	size = snap_record(r);
	cr_assert_eq(snaprec__convert(r, size, 0, &s, &kips, &py, &stack), 0);
	cr_assert_eq(s.tgid, 100);
	cr_assert_eq(s.nkips, 3, "trailing empty kernel frames kept: %u", s.nkips);
	cr_assert_eq(kips[2], 0xffffffff81000030ull);
	cr_assert_eq(s.stack_len, 64);
	cr_assert_eq(stack, r->data + 40, "the stack does not follow the kernel frames");
	cr_assert_eq(stack[63], 63);
	cr_assert_eq(s.sp, 0x7ffe0000f000ull);
	cr_assert_eq(s.flags, 0);
	/* No kernel frames (user mode): the stack starts the data. */
	r->kbytes = -14;
	memmove(r->data, r->data + 40, 64);
	cr_assert_eq(snaprec__convert(r, size - 40, 0, &s, &kips, &py, &stack), 0);
	cr_assert_eq(s.nkips, 0);
	cr_assert_eq(stack, r->data);
	/* Cut: by the kernel at the target's limit, or by the worker's own limit. */
	size = snap_record(r);
	r->flags = SC_SNAP_LIMITED;
	cr_assert_eq(snaprec__convert(r, size, 0, &s, &kips, &py, &stack), 0);
	cr_assert_eq(s.flags, SHIP_SNAP_TRIMMED);
	r->flags = 0;
	cr_assert_eq(snaprec__convert(r, size, 32, &s, &kips, &py, &stack), 0);
	cr_assert_eq(s.stack_len, 32);
	cr_assert_eq(s.flags, SHIP_SNAP_TRIMMED);
	cr_assert_eq(snaprec__convert(r, size, 64, &s, &kips, &py, &stack), 0);
	cr_assert_eq(s.flags, 0, "a limit that cut nothing flagged the stack");
	/* Refused: each length wrong in turn. */
	cr_assert_eq(snaprec__convert(r, offsetof(struct sc_snap, data) - 1, 0, &s, &kips, &py,
				      &stack),
		     -EINVAL, "a record shorter than its header");
	cr_assert_eq(snaprec__convert(r, size - 1, 0, &s, &kips, &py, &stack), -EINVAL,
		     "a stack past the record's end");
	r->kbytes = 41;
	cr_assert_eq(snaprec__convert(r, size + 1, 0, &s, &kips, &py, &stack), -EINVAL,
		     "kernel frames not whole");
	r->kbytes = SC_STACK_DEPTH * 8 + 8;
	cr_assert_eq(snaprec__convert(r, sizeof(*r), 0, &s, &kips, &py, &stack), -EINVAL,
		     "more kernel frames than a stack has");
	size = snap_record(r);
	r->stack_len = 0;
	cr_assert_eq(snaprec__convert(r, size, 0, &s, &kips, &py, &stack), -EINVAL, "no stack");
	r->stack_len = SC_SNAP_STACK + 8;
	cr_assert_eq(snaprec__convert(r, sizeof(*r), 0, &s, &kips, &py, &stack), -EINVAL,
		     "more stack than the kernel copies");
	size = snap_record(r);
	r->stack_start = r->sp - 4096;
	cr_assert_eq(snaprec__convert(r, size, 0, &s, &kips, &py, &stack), -EINVAL,
		     "a stack that does not start at sp");
	/* Python frames sit between the kernel frames and the stack, and count in the length. */
	size = snap_record(r);
	memmove(r->data + 40 + 2 * sizeof(struct py_frame), r->data + 40, 64);
	r->npy = 2;
	r->pystatus = PY_ST_OK;
	((struct py_frame *)(r->data + 40))[1].code = 0x7f0000001000ull;
	cr_assert_eq(snaprec__convert(r, size + 2 * sizeof(struct py_frame), 0, &s, &kips, &py,
				      &stack),
		     0);
	cr_assert_eq(s.npy, 2);
	cr_assert_eq(s.pystatus, PY_ST_OK);
	cr_assert_eq(py[1].code, 0x7f0000001000ull);
	cr_assert_eq(stack[63], 63, "the stack does not follow the Python frames");
	cr_assert_eq(snaprec__convert(r, size + 2 * sizeof(struct py_frame) - 1, 0, &s, &kips, &py,
				      &stack),
		     -EINVAL, "Python frames counted out of the record's length");
	r->npy = PY_MAX_FRAMES + 1;
	cr_assert_eq(snaprec__convert(r, sizeof(*r), 0, &s, &kips, &py, &stack), -EINVAL,
		     "more Python frames than the programs record");
	r->npy = 0;
	r->pystatus = PY_ST_MAX;
	cr_assert_eq(snaprec__convert(r, size, 0, &s, &kips, &py, &stack), -EINVAL,
		     "a Python status the programs do not write");
	free(r);
}
