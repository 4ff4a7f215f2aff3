/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the unit tests that unwind this process's own stack (test_unwind.c, test_python.c): a
 * snapshot as the BPF programs take one, ip, sp and bp at one point and the stack from sp up
 * (at most SNAP_MAX bytes, never past the stack's mapping). Included once per test file.
 */
#ifndef ROVER_TESTS_UNIT_SELF_SNAPSHOT_H
#define ROVER_TESTS_UNIT_SELF_SNAPSHOT_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shipper/stacks/unwind.h"

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

/* Fills snap_regs, snap_stack and snap_len here. A poisoned rbp: a frame-pointer step has
 * nothing to go on. */
__attribute__((noinline)) static void take_snapshot(void)
{
	uint64_t ip, sp, end;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1" : "=r"(ip), "=r"(sp));
	snap_regs = (struct unwind_regs){ .ip = ip, .sp = sp, .bp = 0x10 };
	end = mapping_end(sp);
	snap_len = end - sp < SNAP_MAX ? end - sp : SNAP_MAX;
	memcpy(snap_stack, (void *)sp, snap_len);
}

#endif
