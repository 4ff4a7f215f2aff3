/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side (no privileges): turns a stack snapshot from a worker (user registers and the
 * top of the user stack, docs/profiling.md, "Whole stacks") into the return addresses of the
 * whole user stack, with the call frame information (.eh_frame) of the files the target maps,
 * and frame pointers where a file has none (JIT code, Go). Snapshot bytes and mapped files are
 * both untrusted: every read is bounds-checked, every cache bounded.
 */
#ifndef ROVER_SHIPPER_UNWIND_H
#define ROVER_SHIPPER_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/msg.h"
#include "common/pyframes.h"
#include "shipper/stacks/symbolize.h"

/* Files whose CFI stays cached (a file's CFI is its .eh_frame, read whole). */
#define UNWIND_MAX_FILES 128
/*
 * Bytes of CFI cached over all files, and for one file: what is charged is the file's
 * .eh_frame and .eh_frame_hdr, read whole, and what libdw may build from them (unwind.c).
 * The largest .eh_frame of a Debian package (libLLVM-15) has 5 MiB; a file whose charge is
 * over the per-file cap is not read at all, and its frames are unwound with frame pointers.
 * 64 MiB in all keeps the CFI of a few hundred ordinary libraries.
 */
#define UNWIND_CACHE_BYTES (64u << 20)
#define UNWIND_MAX_FILE_BYTES (16u << 20)

struct unwinder;

struct unwind_regs {
	uint64_t ip, sp, bp;
};

struct unwind_stats {
	uint64_t stacks;
	uint64_t frames;
	uint64_t cfi_steps; /* frames found through CFI */
	uint64_t fp_steps;  /* frames found through frame pointers */
	uint64_t outermost; /* stacks that ended where CFI or the frame chain says they end */
	uint64_t files_loaded;
	uint64_t files_evicted;
	uint64_t files_over_budget; /* files whose CFI was not read: over UNWIND_MAX_FILE_BYTES */
	uint64_t cache_bytes;	    /* what the cached CFI is charged, now */
};

/* Mappings and file descriptors come through sym (which must outlive it). NULL + errno. */
struct unwinder *unwinder__new(struct symbolizer *sym);
void unwinder__free(struct unwinder *u);

/*
 * Sets the byte budgets (0: UNWIND_CACHE_BYTES, UNWIND_MAX_FILE_BYTES); the per-file cap is
 * at most the total. Call before the first load. 0 or -EINVAL.
 */
int unwinder__set_budget(struct unwinder *u, size_t total_bytes, size_t file_bytes);

/*
 * Reads the CFI of the files pid maps now: they are opened through /proc/PID/map_files,
 * gone with the process. Call after symbolizer__load_pid(). 0 or -errno.
 */
int unwinder__load_pid(struct unwinder *u, int pid);

/*
 * Unwinds the user stack of pid from regs and stack (stack_len bytes of its memory from
 * regs->sp): writes up to max addresses into ips, innermost first, ips[0] = regs->ip, the
 * others return addresses. Returns how many (at least 1 when max > 0).
 */
size_t unwinder__unwind(struct unwinder *u, int pid, const struct unwind_regs *regs,
			const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max);

/*
 * What an unwinding read of the stack bytes it was given: top, the bytes above sp up to the
 * end of the highest word read; cut, a read wanted bytes past the end of what was given (the
 * unwinding may have ended there for want of them).
 */
struct unwind_reach {
	uint32_t top;
	bool cut;
};

/* unwinder__unwind, saying in *ret_reach what it read of stack. */
size_t unwinder__unwind_reach(struct unwinder *u, int pid, const struct unwind_regs *regs,
			      const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max,
			      struct unwind_reach *ret_reach);

void unwinder__stats(const struct unwinder *u, struct unwind_stats *ret_stats);

/* One record of a MSG_SHIP_SNAPSHOTS payload, pointing into it. */
struct snapshot_view {
	struct ship_snapshot s;
	const uint8_t *kips; /* s.nkips little-endian uint64_t, maybe unaligned */
	const uint8_t *py;   /* s.npy struct py_frame (common/pyframes.h), maybe unaligned */
	const uint8_t *stack;
};

struct snapshot_iter {
	const uint8_t *buf;
	size_t len, off;
	uint32_t count, seen;
	uint64_t task_id;
};

/* Starts a walk of a MSG_SHIP_SNAPSHOTS payload (len bytes at buf). 0 or -EPROTO. */
int snapshots__begin(struct snapshot_iter *it, const void *buf, size_t len);

/*
 * The next record: 1 with ret filled, 0 after the last one (the header's count of records
 * must end the payload exactly), -EPROTO on anything malformed.
 */
int snapshots__next(struct snapshot_iter *it, struct snapshot_view *ret);

#endif
