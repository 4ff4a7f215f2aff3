/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capability): continuous profiling (reference
 * continuous-and-kubernetes.md part A). Runs in the backend's task thread, a tick at a time:
 * queries the OAP's policies for the services this agent reported (every
 * profiling.check_interval), samples the monitored processes and the host from /proc (every
 * profiling.continuous.fetch_interval: CPU over that interval, threads, load), and every
 * profiling.continuous.check_interval sends the monitors' meters and judges each policy item
 * on its own window; an item that holds reports its causes (reportProfilingTask) and starts
 * the task the OAP names, through the same path as the OAP's own tasks. Upstream's bugs are
 * fixed (docs/continuous.md lists them).
 */
#ifndef ROVER_SUPERVISOR_CONTINUOUS_H
#define ROVER_SUPERVISOR_CONTINUOUS_H

#include <stdint.h>

#include "common/config/config.h"
#include "common/grpc/oap.h"
#include "supervisor/backend/commands.h"
#include "supervisor/discovery/discovery.h"

/* What the continuous checker needs of the backend thread that runs it. */
struct continuous_ops {
	void *ctx;
	/* The reported entities (with their backend process ids); free() the copy. 0 or -errno. */
	int (*entities)(void *ctx, struct disc_entity **ret, size_t *ret_n);
	/*
	 * Starts t now for run_ms as the backend's own tasks start; returns how many rover
	 * tasks started (0: none could).
	 */
	int (*start)(void *ctx, const struct sw_task *t, uint64_t run_ms);
	/* Whether process_id cannot take one more task of type (its tasks are at their bound). */
	int (*busy)(void *ctx, const char *process_id, uint32_t type);
	/*
	 * Starts the HTTP monitor (a light NETWORK task) named name on the processes ids, whose
	 * counts come back through continuous__http(); stops one. 0 or -errno.
	 */
	int (*monitor)(void *ctx, const char *name, const char (*ids)[SW_ID_LEN], size_t n);
	void (*stop)(void *ctx, const char *name);
};

struct continuous;

/* proc_root: "/proc" or the host's procfs in a container. NULL + errno. */
struct continuous *continuous__new(const struct rover_config *cfg, struct oap_conn *conn,
				   const char *proc_root, const struct continuous_ops *ops);
void continuous__free(struct continuous *c);

/* One tick of the task thread: does whatever is due at now_ms (monotonic). */
void continuous__tick(struct continuous *c, uint64_t now_ms);
/*
 * The monotonic time at which continuous__tick() has work next (a policy query, a fetch, a
 * check; now_ms when something waits already): the task thread sleeps until then.
 */
uint64_t continuous__due(const struct continuous *c, uint64_t now_ms);

/* The HTTP monitor's counts of a flush (struct msg_net_monitor, len bytes, from the main
 * loop), taken as samples at now_ms. Counts of processes not watched are ignored. */
void continuous__http(struct continuous *c, const void *buf, size_t len, uint64_t now_ms);

/* What it did so far, for tests and logs. */
struct continuous_stats {
	uint64_t policy_queries, policy_updates, items_skipped;
	uint64_t samples, rounds, meters_sent, meter_batches_failed;
	uint64_t triggers, reports_failed, tasks_started;
	uint32_t services, items, processes;
	uint32_t kept;	    /* watched processes whose descriptors are kept now */
	uint64_t kept_gone; /* closed because their process ended */
};
void continuous__stats(const struct continuous *c, struct continuous_stats *ret);

#endif
