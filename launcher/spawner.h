/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Launcher side (root, or the spawner container's CAP_BPF + CAP_PERFMON): starts workers when
 * the supervisor asks, tells it how they ended, and opens for the shipper the few files the
 * shipper may not open itself. It parses only fixed-size requests; never backend or traced data.
 */
#ifndef ROVER_LAUNCHER_SPAWNER_H
#define ROVER_LAUNCHER_SPAWNER_H

#include <stdint.h>
#include <sys/types.h>

struct spawner;

struct spawner_config {
	const char *sockdir;
	const char *bindir; /* where rover-worker is */
	const char *user;   /* passed to workers */
	uid_t uid;          /* the only uid (besides root) allowed to connect */
	pid_t supervisor_pid; /* 0: any process of uid may be the supervisor */
	pid_t shipper_pid;    /* 0: any process of uid may be the shipper */
};

struct spawner *spawner__new(const struct spawner_config *cfg);
void spawner__free(struct spawner *sp);

/* Descriptors to poll for POLLIN, into fds[0..max); returns how many. */
int spawner__fds(struct spawner *sp, int *fds, int max);
/* Handles whatever is ready on fd. */
void spawner__handle(struct spawner *sp, int fd);
/* A child ended: when it was a worker, the supervisor hears of it. Returns 1 if it was one. */
int spawner__child_exited(struct spawner *sp, pid_t pid, int status);
void spawner__set_role_pid(struct spawner *sp, int role, pid_t pid);
/* Stops every worker (SIGTERM) */
void spawner__stop_workers(struct spawner *sp);

#endif
