/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: one profiling task's data as it arrives from its worker. Counts are named as
 * they arrive (the target may exit at any time, and stack ids are reused by the kernel), and
 * merged into a profile by name. The local output writes the profile at the end; a backend
 * output also makes each flush an upload batch (shipper/output/upload.h) for the spool.
 */
#ifndef ROVER_SHIPPER_TASK_H
#define ROVER_SHIPPER_TASK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "common/msg.h"
#include "common/stackcount.h"
#include "shipper/output/profile.h"
#include "shipper/output/spool.h"
#include "shipper/stacks/python.h"
#include "shipper/stacks/pyfind.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/stacks/unwind.h"

/* Stack ids the shipper accepts: the worker's stack map is smaller. */
#define SHIP_MAX_STACK_ID 65536
/* Flushes kept while the supervisor has not said where the task's data goes. */
#define SHIP_MAX_PENDING 16

/*
 * One flush of a backend task, built and waiting for the spool: a batch per target pid that
 * had samples in it. The pids of one process id go out as one stream (ship_task__next_batch
 * joins them), so their process ids need not be known when the flush is built.
 */
struct pending_flush {
	int64_t now_ms; /* currentTime: when the flush arrived */
	uint32_t n;
	struct pending_group {
		int32_t pid;
		int taken; /* handed to the spool, or joined to another group's batch */
		struct spool_batch b;
	} g[ROVER_MAX_PIDS];
};

struct stored_stack;
struct agg_entry;

struct ship_task {
	uint64_t task_id;
	struct task_spec spec;
	int have_spec;
	int ended;
	uint32_t end_reason;
	int out_fd; /* -1 until the supervisor gives it */
	uint32_t format;
	struct profile *profile;
	struct stored_stack **stacks; /* by id, stacks_cap of them (grown as ids come) */
	int32_t stacks_end; /* ids below it may be set (reads and frees look no further) */
	int32_t stacks_cap;
	struct stored_stack **unwound; /* stacks from snapshots, named, by content hash */
	uint32_t agg_gen;	       /* agg flushes so far (task.c, unwound_get) */
	/* A flush's snapshots by stack pair, uploaded with the flush's counts (one stream). */
	struct agg_entry *agg;
	char comms[ROVER_MAX_PIDS][16];
	int said_children_full; /* TASK_CHILDREN: more processes than ROVER_MAX_PIDS, said once */
	/*
	 * UNWIND_DWARF, by target: the most stack bytes above sp one unwinding read, snapshots
	 * seen, the hint the worker has (0: none yet) and whether a new one is due
	 * (ship_task__stack_hints); snapshot stack bytes received and stacks a hint cut short.
	 */
	uint32_t stack_top[ROVER_MAX_PIDS], stack_seen[ROVER_MAX_PIDS];
	uint32_t stack_hint[ROVER_MAX_PIDS];
	uint8_t stack_hint_due[ROVER_MAX_PIDS];
	uint64_t snap_bytes, stacks_cut;
	uint64_t samples;  /* ON_CPU: samples; OFF_CPU: microseconds off the CPU */
	uint64_t switches; /* OFF_CPU: times switched back in */
	uint64_t frames_unnamed;
	uint64_t losses[LOSS_MAX];

	/*
	 * Python targets: the code records (the shipper's, shared by its tasks; the task's own
	 * when it was given none), how Python frames meet native ones (enum py_native_mode), the
	 * interpreters found and sent to the worker, snapshots by target and enum py_status,
	 * snapshots with a frame whose record was not there, MSG_SHIP_PYCODES frames refused.
	 */
	struct pycodes *pycodes;
	int own_pycodes;
	uint32_t py_mode;
	struct py_finder *pyfind;
	uint64_t maps_seen[ROVER_MAX_PIDS]; /* symbolizer__maps_stamp + 1 at the last look */
	uint64_t py_status[ROVER_MAX_PIDS][PY_ST_MAX];
	uint64_t java_status[ROVER_MAX_PIDS][JAVA_ST_MAX]; /* the same for Java targets */
	uint64_t v8_status[ROVER_MAX_PIDS][V8_ST_MAX];	   /* and for node targets */
	uint64_t py_unknown, py_bad_frames;
	/* Samples with a JavaScript frame named by its function's first line, by enum v8_line_why. */
	uint64_t v8_first_line[V8_LINE_N];

	/*
	 * Backend output: each flush becomes one upload batch. Flushes that arrive before the
	 * supervisor names the output (out_fd or backend) are built and kept, at most
	 * SHIP_MAX_PENDING; a local output discards them.
	 */
	int backend;
	struct msg_output_backend *be;
	struct pending_flush *pending[SHIP_MAX_PENDING];
	uint32_t npending;
	/* Samples (ON_CPU dumpCount, OFF_CPU switchCount) in flushes, handed to the spool, dropped. */
	uint64_t up_taken, up_queued, up_dropped;

	/* NETWORK: the analysis (shipper/network/network.h) in place of a profile. */
	struct net_task *net;
	struct tls_finder *tls; /* the targets' TLS libraries (NETWORK) */
	struct knames *knames;	/* kernel frames the worker named; NULL: none yet */
	int monitor; /* continuous profiling's HTTP monitor: counts to the supervisor, no upload */
	uint64_t tls_next_ms;		 /* monotonic: the next look for TLS libraries */
	int said_adjacent, said_unbound; /* TLS calls named by adjacency, or not at all */
	uint64_t net_frames;
	const char *net_prefix; /* profiling.task.network.meter_prefix; NULL: the default */
	/* MSG_OUTPUT_NETWORK that came before the worker's begin, applied then */
	struct msg_output_network *net_pending;
	/*
	 * The access log (TASK_ACCESS_LOG, docs/access-log.md): its records become
	 * EBPFAccessLogService batches every alog_period_ms, or sooner once alog_max logs wait.
	 */
	int alog;
	uint32_t alog_period_ms, alog_max;
	uint64_t alog_next_ms;
	uint64_t alog_lost_said, alog_flushes; /* losses last logged; flushes so far */
};

struct ship_task *ship_task__new(uint64_t task_id);
void ship_task__free(struct ship_task *t);

/* From the worker. Each returns 0, or -EPROTO for content that breaks the rules. */
int ship_task__begin(struct ship_task *t, const struct task_spec *spec, struct symbolizer *sym);
int ship_task__stacks(struct ship_task *t, const struct ship_stack *s, size_t n);
/* MSG_SHIP_KSYMS (shipper/stacks/knames.h): names of kernel frames from the worker. 0 or -errno. */
int ship_task__ksyms(struct ship_task *t, const void *buf, size_t len);
/*
 * MSG_SHIP_PYCODES (shipper/stacks/python.h): code records from the worker, into t->pycodes
 * (the task's own when the caller set none). A frame refused whole is counted and logged, 0;
 * -EPROTO for a task that takes none, -ENOMEM.
 */
int ship_task__pycodes(struct ship_task *t, const void *buf, size_t len);
/* What Python frames lacked, one line per target and reason, logged. */
void ship_task__py_log(struct ship_task *t);
int ship_task__counts(struct ship_task *t, const struct ship_counts_hdr *hdr,
		      const struct ship_count *c, size_t n, struct symbolizer *sym);

/* Uploads what the task holds back (snapshots of a flush whose counts never came, the
 * worker having ended). 0 or -errno. */
int ship_task__end_uploads(struct ship_task *t);

/* A MSG_SHIP_SNAPSHOTS payload: each snapshot unwound, named and counted. */
int ship_task__snapshots(struct ship_task *t, const void *buf, size_t len, struct symbolizer *sym,
			 struct unwinder *unw);

/*
 * The stack hints due to the worker since the last call (struct msg_stack_hint, at most max):
 * each target's first once STACK_HINT_LEARN of its snapshots were unwound, then a larger one
 * whenever an unwinding read near or past the hint. Returns how many.
 */
size_t ship_task__stack_hints(struct ship_task *t, struct msg_stack_hint *ret, size_t max);

/* Writes the profile or report to f in format. 0 or -errno; fills ret (summary included). */
int ship_task__write(struct ship_task *t, FILE *f, struct msg_output_written *ret);

/*
 * The data goes to the backend with be's identity, each pid's under its process id. 0, or
 * -EPROTO (bad strings or counts, output known), -ENOMEM.
 */
int ship_task__set_backend(struct ship_task *t, const struct msg_output_backend *be);

/*
 * NETWORK: a worker frame (MSG_SHIP_NET_DATA, MSG_SHIP_NET_CONNS). A conns frame ends a report
 * interval; for a backend task its meters, sampled traces and their span attached events are
 * then appended to meters, logs and events (kinds set by the caller, nothing added when the
 * interval had nothing). 0 or -errno.
 */
int ship_task__net_frame(struct ship_task *t, uint32_t type, const void *buf, size_t len,
			 struct spool_batch *meters, struct spool_batch *logs,
			 struct spool_batch *events);
/* NETWORK: the backend half of the task (labels, sampling rules); again to add rules. */
int ship_task__set_network(struct ship_task *t, const struct msg_output_network *o);
/* The access log's output (MSG_OUTPUT_ACCESSLOG), before or after the worker's begin. 0 or
 * -errno (-EPROTO: malformed). */
int ship_task__set_accesslog(struct ship_task *t, const struct msg_output_accesslog *o);
/* The access log's batch now if one is due (now_ms; last: the task ends), into b (kind set by
 * the caller). 1 when b was built, 0 when nothing was due, -errno. */
int ship_task__alog_flush(struct ship_task *t, uint64_t now_ms, bool last, struct spool_batch *b);
/*
 * The oldest stream ready for the spool, the samples of one process id in one flush, its first
 * message carrying the task metadata: 1 and *ret (the caller owns ret->data), 0 when none is
 * ready, -errno when that stream could not be finished (it is dropped and counted in
 * up_dropped: call again for the next).
 */
int ship_task__next_batch(struct ship_task *t, struct spool_batch *ret);
/* What the supervisor is told at the end of a backend task: ret filled, err 0. */
void ship_task__summarize(struct ship_task *t, struct msg_output_written *ret);

#endif
