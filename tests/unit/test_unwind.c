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
#include "shipper/symbolize.h"
#include "shipper/unwind.h"

#define SNAP_MAX (16 << 10)

static struct unwind_regs snap_regs;
static uint8_t snap_stack[SNAP_MAX];
static size_t snap_len;

/* End of the mapping of this process that holds addr, from /proc/self/maps. */
static uint64_t mapping_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long s, e;
	char line[512];
	uint64_t end = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && addr >= s && addr < e)
			end = e;
	fclose(f);
	return end;
}

/* What the BPF programs take: ip, sp, bp at one point, and the stack from sp up. */
__attribute__((noinline)) static void take_snapshot(void)
{
	uint64_t ip, sp, end;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1" : "=r"(ip), "=r"(sp));
	/* A poisoned rbp: a frame-pointer step has nothing to go on. */
	snap_regs = (struct unwind_regs){ .ip = ip, .sp = sp, .bp = 0x10 };
	end = mapping_end(sp);
	snap_len = end - sp < SNAP_MAX ? end - sp : SNAP_MAX;
	memcpy(snap_stack, (void *)sp, snap_len);
}

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
		symbolizer__user(sym, getpid(), i ? ips[i] - 1 : ips[i], names[i], sizeof(names[i]));
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
				    .sp = 0x7ffc00000000, .bp = 0x7ffc00000010 };
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
		struct ship_snapshot s = { .tgid = 42, .nkips = nkips, .stack_len = stack_len,
					   .value = i + 1, .ip = 0x1000, .sp = 0x2000 };

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
