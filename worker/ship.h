/* SPDX-License-Identifier: Apache-2.0 */
/* Worker side (CAP_BPF + CAP_PERFMON): what the worker sends to the shipper. */
#ifndef ROVER_WORKER_SHIP_H
#define ROVER_WORKER_SHIP_H

#include <stddef.h>
#include <stdint.h>

#include "common/msg.h"
#include "common/pyframes.h"

/* A flush in the making: stacks the shipper has not seen, and count deltas. */
struct ship_batch {
	struct ship_stack *stacks;
	size_t nstacks, cap_stacks;
	struct ship_count *counts;
	size_t ncounts, cap_counts;
	uint64_t losses[LOSS_MAX];
	/* stack snapshots (unwind mode dwarf): packed records as MSG_SHIP_SNAPSHOTS carries them */
	uint8_t *snaps;
	size_t snaps_len, snaps_cap;
	uint64_t snaps_value; /* sum of their values, counted lost if they are not sent */
	uint32_t nsnaps;
	/* kernel frames' names: packed records as MSG_SHIP_KSYMS carries them, sent first */
	uint8_t *ksyms;
	size_t ksyms_len, ksyms_cap;
	/* Python code objects' records: as MSG_SHIP_PYCODES carries them, sent with the names */
	uint8_t *pycodes;
	size_t pycodes_len, pycodes_cap;
};

/*
 * Snapshot bytes, or snapshots, a batch holds before the worker sends them without waiting
 * for the flush. The count keeps the shipper's stack hints (MSG_SHIP_STACK_HINT) timely once
 * they made snapshots small: about 6 sends a second at 100 Hz on 2 CPUs.
 */
#define SHIP_SNAPS_SEND_AT (1u << 20)
#define SHIP_SNAPS_SEND_COUNT 32

int ship_batch_add_stack(struct ship_batch *b, const struct ship_stack *s);
int ship_batch_add_count(struct ship_batch *b, const struct ship_count *c);
/*
 * Appends a snapshot record: s (nkips, npy, stack_len set), then kips, the Python frames and
 * stack_len bytes of stack.
 * 0 or -errno.
 */
int ship_batch_add_snapshot(struct ship_batch *b, const struct ship_snapshot *s, const void *kips,
			    const struct py_frame *py, const uint8_t *stack);
/* Appends a Python code record as the programs wrote it (size bytes). 0 or -errno. */
int ship_batch_add_pycode(struct ship_batch *b, const struct sc_pycode *c, size_t size);
/* Appends the name of kernel address addr (len 0: none). 0 or -errno. */
int ship_batch_add_ksym(struct ship_batch *b, uint64_t addr, const char *name, size_t len);
void ship_batch_reset(struct ship_batch *b);
void ship_batch_free(struct ship_batch *b);

int wk_send_begin(int sock, const struct task_spec *spec);
/*
 * Sends the batch's kernel names, stacks, then its counts (names and stacks first: counts refer
 * to them). 0 or -errno.
 */
int wk_send_batch(int sock, uint64_t task_id, struct ship_batch *b);
/*
 * Sends the batch's kernel names, then its snapshots (frames of at most 1 MiB), and forgets
 * them. 0 or -errno.
 */
int wk_send_snapshots(int sock, uint64_t task_id, struct ship_batch *b);
int wk_send_end(int sock, uint64_t task_id, uint32_t reason);

#endif
