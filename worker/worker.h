/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rover-worker (the rover user, CAP_BPF and CAP_PERFMON until attached, then map commands
 * only): one task's state, and the table of what each kind of task does with it. The loop in
 * worker/main.c is the same for every kind; worker/kinds.c holds the two kinds: the stack
 * tasks (ON_CPU, OFF_CPU: worker/profiler.c) and NETWORK (worker/netcap.c).
 */
#ifndef ROVER_WORKER_WORKER_H
#define ROVER_WORKER_WORKER_H

#include <stdint.h>

#include "common/msg.h"
#include "common/privdrop.h"
#include "worker/ship.h"

struct worker {
	int sv;	     /* supervisor */
	int shipper; /* -1 once lost */
	struct task_spec spec;
	int pidfds[ROVER_MAX_PIDS];
	int32_t pidfd_pid[ROVER_MAX_PIDS]; /* the target each pidfd is of */
	int npidfds;
	int inherited; /* pidfds the launcher pinned, at ROLE_FD_SECOND + 1 onwards */
	const struct task_kind *kind;
	struct profiler *prof; /* stack tasks */
	struct netcap *net;    /* NETWORK */
	struct ship_batch batch;
	uint64_t send_lost;
};

struct task_kind {
	/* Loads and attaches the task's programs: 0, or -errno with what failed in *ret_what. */
	int (*start)(struct worker *w, struct msg_task_started *ret, const char **ret_what);
	/* The filter stacked once attached (policy/worker.c). */
	const struct role_policy *(*attached_policy)(const struct worker *w);
	/* A flush's data to the shipper; what cannot go is counted lost. */
	void (*flush)(struct worker *w);
	/* The ring buffer's records, read when it wakes the worker (and at least every
	 * read_every_ms when that is not 0). */
	void (*read)(struct worker *w);
	uint32_t read_every_ms;
	int (*events_fd)(const struct worker *w); /* the ring buffer, -1 when none */
	/* A message from the shipper (a TLS library, a stack hint); a bad one loses it. */
	void (*on_shipper)(struct worker *w);
	/* Whether the programs still trace pid (bpf/credcheck.bpf.h may have dropped it). */
	int (*tracing)(const struct worker *w, int32_t pid);
	/* pid ended or was dropped: not traced any more. 0 or -errno. */
	int (*forget)(struct worker *w, int32_t pid);
	/* The access log's processes and a TASK_CHILDREN task's children: pid traced from now
	 * on (on), or no longer (its connections closed out as an exited target's). 0 or
	 * -errno. */
	int (*set_target)(struct worker *w, int32_t pid, int on);
	void (*stop)(struct worker *w);
	/* Events and losses since the start, into the task's end. */
	void (*totals)(struct worker *w, struct msg_task_done *ret);
	void (*free)(struct worker *w);
};

/* The kind that runs a task of type (enum task_type), or NULL. */
const struct task_kind *task_kind_of(uint32_t type);

/* The shipper is gone (err, during what): its data is counted lost from here. */
void worker_lost_shipper(struct worker *w, int err, const char *what);

#endif
