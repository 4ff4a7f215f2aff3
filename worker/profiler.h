/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON): a task's BPF programs and their in-kernel counts, for
 * ON_CPU (CPU-clock sampling) and OFF_CPU (time between switch-out and switch-in).
 */
#ifndef ROVER_WORKER_PROFILER_H
#define ROVER_WORKER_PROFILER_H

#include <stdint.h>

#include "common/msg.h"
#include "common/pyframes.h"
#include "common/stackcount.h"
#include "worker/ship.h"

struct profiler;

/* Loads, configures and attaches the programs for spec's type and targets. NULL + errno. */
struct profiler *profiler__start(const struct task_spec *spec,
				 struct msg_task_started *ret_started);

/*
 * Moves everything counted since the previous drain into batch: count deltas, the stacks the
 * shipper has not been sent with their current content, and loss deltas. Then removes stacks
 * no longer counted, so a long task does not fill the stack map. 0 or -errno.
 */
int profiler__drain(struct profiler *p, struct ship_batch *batch);

/*
 * Unwind mode dwarf: moves the stack snapshots (with their values) from the ring buffer into
 * batch; profiler__drain() does it too. 0 or -errno.
 */
int profiler__read_snapshots(struct profiler *p, struct ship_batch *batch);

/*
 * When the programs take stack snapshots: a descriptor that polls readable once enough of them
 * wait to be read (profiler__read_snapshots). Else -1.
 */
int profiler__snapshots_fd(const struct profiler *p);

/*
 * The shipper's hint (MSG_SHIP_STACK_HINT): tgid's snapshots carry at most bytes of user stack
 * above sp (at least SHIP_STACK_HINT_MIN), flagged SHIP_SNAP_TRIMMED when cut. 0, or -ESRCH
 * when tgid is not a target of the task.
 */
int profiler__stack_hint(struct profiler *p, int32_t tgid, uint32_t bytes);
/*
 * Tells the programs where target tgid's interpreter is (worker/pyattach.c checked the file):
 * 0, -EOPNOTSUPP (no snapshots: frame-pointer unwinding), -EPERM (not a target traced).
 */
int profiler__py_attach(struct profiler *p, int32_t tgid, const struct py_proc *py);
/* As profiler__py_attach, for a Java target's libjvm.so (bpf/java.bpf.h). */
int profiler__java_attach(struct profiler *p, int32_t tgid, const struct java_proc *jp);
/* As profiler__py_attach, for a node target's executable (bpf/v8.bpf.h). */
int profiler__v8_attach(struct profiler *p, int32_t tgid, const struct v8_proc *vp);

/* Whether the worker runs a program of its own (the kernel-frame namer, BPF_PROG_RUN). */
int profiler__runs_programs(const struct profiler *p);

/* Stops the programs; a drain afterwards collects the last counts. */
void profiler__stop(struct profiler *p);
/* A child of the targets (TASK_CHILDREN) counted from now on. 0 or -errno. */
int profiler__trace(struct profiler *p, int32_t pid);
/* A target exited: its pid is not counted any more, whoever gets the number next. 0 or -errno. */
int profiler__forget(struct profiler *p, int32_t pid);
/*
 * Whether the programs still count pid: 0 once they dropped it, a client's target that stopped
 * being the client's to trace (bpf/credcheck.bpf.h).
 */
int profiler__tracing(const struct profiler *p, int32_t pid);

/* Events counted in the kernel (samples, or switches back in) and losses, since the start. */
void profiler__totals(const struct profiler *p, uint64_t *ret_events,
		      uint64_t ret_losses[LOSS_MAX]);

/*
 * Snapshot records read from the ring buffer and their bytes, since the start ([0]); [1]: of
 * them, those the programs copied whole (up to SC_SNAP_STACK) before the target's stack hint.
 */
void profiler__ring_totals(const struct profiler *p, uint64_t ret_records[2],
			   uint64_t ret_bytes[2]);

void profiler__free(struct profiler *p);

#endif
