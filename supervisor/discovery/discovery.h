/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capabilities): plain-host process discovery. Every scan
 * period the main loop lists /proc and reads what is new or due (command lines are
 * world-readable; the executable and the working directory of other users' processes come
 * from the launcher), matches command lines against the configured finders (the first that matches wins) and renders each match into an
 * entity: layer, service, instance, process name and labels. Processes that render to the same
 * entity are one entity. The backend thread reports entities and stores the process id the
 * backend gave each; the task thread looks pids up by that id. All three go through here,
 * under one lock, and only copies leave.
 */
#ifndef ROVER_SUPERVISOR_DISCOVERY_H
#define ROVER_SUPERVISOR_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "common/config/config.h"
#include "common/msg.h"

#define DISC_NAME_LEN 256
#define DISC_MAX_LABELS 16
#define DISC_CMDLINE_LEN 4096
#define DISC_MAX_ENTITIES 4096
/*
 * A scan reads the files of new processes only, and of known ones when due: at each of the
 * DISC_YOUNG_SCANS scans after one was first seen or changed, then once every
 * DISC_RECHECK_SCANS scans. An exec is noticed within DISC_RECHECK_SCANS scans of it (a
 * minute at a 1 s period), within one scan in a process's first DISC_YOUNG_SCANS.
 */
#define DISC_YOUNG_SCANS 2
#define DISC_RECHECK_SCANS 60

/* Everything the agent knows of its host, gathered before the sandbox. */
struct host_facts {
	char instance_id[64]; /* this agent's id: ebpfAgentID, .Rover.InstanceID */
	char host_name[256];
	char host_ip[64]; /* first non-loopback IPv4, the host_ip property */
	struct {
		char name[32];
		char v4[64], v6[64];
	} ifs[32];
	int nifs;
};

/* Fills facts from uname, getifaddrs and getrandom. 0 or -errno. */
int host_facts__gather(struct host_facts *ret);

/*
 * An entity as the supervisor keeps it and hands it out: its names point into memory owned
 * with it (an entity's own allocation inside discovery, the copy's block outside), so that an
 * entity costs its strings' lengths, not their bounds (a few hundred bytes, not 10 KiB: 2000
 * entities copied at every heartbeat). Names are at most DISC_NAME_LEN - 1 bytes, the command
 * line DISC_CMDLINE_LEN - 1; the Kubernetes ones are "" for a host process.
 */
struct disc_entity {
	const char *layer, *service, *instance, *process;
	const char *labels[DISC_MAX_LABELS];
	int nlabels;
	int pid; /* the process reported for it: the oldest still alive */
	const char *cmdline;
	char process_id[ROVER_SW_ID_LEN]; /* the backend's id; "" until it answered */
	uint64_t generation;		  /* bumped when first seen or when its pid changed */
	uint64_t tried_ms; /* last report without an id in the answer (monotonic ms), 0: none */
	/* Found through Kubernetes (reported as a k8sProcess), with its pod's facts: */
	int k8s;
	const char *pod, *container, *ns;   /* ns: the pod's namespace */
	const char *container_ip, *host_ip; /* status.podIP, status.hostIP */
};

/* The launcher's answer about a pid; 0 or -errno. */
typedef int (*disc_proc_info_fn)(void *arg, int pid, struct msg_proc_info *ret);

struct discovery;
struct k8s_client;

/* proc_root: "/proc", or ROVER_HOST_PROC_MAPPING's value in a container. NULL, errno set. */
struct discovery *discovery__new(const struct rover_config *cfg, const struct host_facts *host,
				 const char *proc_root, disc_proc_info_fn info, void *info_arg);
void discovery__free(struct discovery *d);

/* Kubernetes discovery (process_discovery.kubernetes): containers' processes are matched to
 * the pods k reports (k8s.h) by their cgroup, and the analyzers render their entities, again
 * whenever a pod or service changes. Set before the first scan; k outlives d. */
void discovery__set_k8s(struct discovery *d, struct k8s_client *k);

/* One pass over /proc. Returns the number of entities, or -errno when /proc is unreadable. */
int discovery__scan(struct discovery *d);

/* A copy of every entity, their strings in the same block (one free() frees all). 0 or
 * -ENOMEM. */
int discovery__entities(struct discovery *d, struct disc_entity **ret, size_t *ret_n);
/*
 * Calls fn for every process of a container that an analyzer gave an entity (its first), under
 * discovery's lock (fn must not block; e valid during the call only). The calls' count.
 */
int discovery__k8s_procs(struct discovery *d,
			 void (*fn)(void *arg, int32_t pid, const struct disc_entity *e),
			 void *arg);

/* The backend's answer for the entity reported with pid: stores its process id. 1 when an
 * entity matched, 0 when none did (it exited meanwhile, or the answer is not ours). */
int discovery__set_process_id(struct discovery *d, int pid, const char *layer, const char *service,
			      const char *instance, const char *process, const char *process_id);

/* Reports of these entities were sent (now_ms, monotonic): those still without an id are
 * not sent again before a retry delay. */
void discovery__mark_tried(struct discovery *d, const struct disc_entity *ents, size_t n,
			   uint64_t now_ms);

/* How many entities have no id and were not tried in the last retry_ms. */
size_t discovery__unreported(struct discovery *d, uint64_t now_ms, uint64_t retry_ms);
/*
 * Readable after a scan that left entities without an id (and after the first scan): the
 * report thread sleeps on it; it reads what waits (non-blocking). -1: none.
 */
int discovery__kick_fd(const struct discovery *d);

/* Scans done so far. */
uint64_t discovery__scans(struct discovery *d);

/* The live pids of the entity with that backend process id, at most max. Returns how many. */
int discovery__pids_of(struct discovery *d, const char *process_id, int32_t *pids, int max);

/* The same processes with their entity's names (NETWORK meters' labels), at most max. */
int discovery__net_procs_of(struct discovery *d, const char *process_id,
			    struct msg_net_process *ret, int max);

#endif
