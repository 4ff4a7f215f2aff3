/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (the rover user, no capability): the access-log module's choice of processes
 * (docs/access-log.md). From Kubernetes discovery's container processes it keeps the set the
 * capture worker traces: every process an analyzer gave an entity, outside the excluded
 * namespaces, not rover's own; and says what changed since the last look, as the frames the
 * shipper (who each pid is), the launcher and the worker (the targets) take.
 */
#ifndef ROVER_SUPERVISOR_ACCESSLOG_H
#define ROVER_SUPERVISOR_ACCESSLOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/config/config.h"
#include "common/msg.h"
#include "supervisor/discovery/discovery.h"

struct alog_mod;

/* What changed: procs for the shipper (gone ones flagged), targets for the launcher and worker. */
struct alog_changes {
	struct msg_alog_proc *procs;
	size_t nprocs;
	struct msg_task_target *targets;
	size_t ntargets;
	uint64_t refused; /* processes past ALOG_MAX_PIDS this time */
};

/* NULL with errno set. cfg must outlive it. Reads the node's interfaces: call before the
 * sandbox. */
struct alog_mod *alog__new(const struct rover_config *cfg);
void alog__free(struct alog_mod *m);

/* Forgets what was sent: the next refresh says every process again (a new worker). */
void alog__reset(struct alog_mod *m);

/*
 * The set now, from discovery, against the one last said: the changes into *ret (valid until
 * the next call). 0 or -ENOMEM.
 */
int alog__refresh(struct alog_mod *m, struct discovery *d, struct alog_changes *ret);

/* How many processes are traced now. */
size_t alog__count(const struct alog_mod *m);

/* The node's facts for the shipper (EBPFAccessLogNodeInfo) and the flush settings. */
void alog__output(const struct alog_mod *m, const char *node_name, uint64_t task_id,
		  struct msg_output_accesslog *ret);

#endif
