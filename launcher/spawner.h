/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launcher's spawner role: it makes every connection between the roles (socketpairs, no
 * paths), spawns a worker per task for the supervisor once the requester may trace the task's
 * processes, and opens for the shipper the few files it may read. Runs as root in the launcher.
 */
#ifndef ROVER_LAUNCHER_SPAWNER_H
#define ROVER_LAUNCHER_SPAWNER_H

#include <stdint.h>
#include <sys/types.h>

struct spawner;

struct spawner_config {
	int dirfd;	    /* the socket directory, root's: ctl.sock (and spawner.sock) go in it */
	const char *bindir; /* where rover-worker is */
	const char *user;   /* passed to workers */
	uid_t uid;	    /* the rover user: the only uid (besides root) spawner.sock admits */
	gid_t gid;	    /* its group: ctl.sock and spawner.sock are root's and this group's */
	int listen; /* roles in containers of their own reach the launcher by spawner.sock */
};

/* Binds ctl.sock (and spawner.sock) and opens kallsyms: call it while CAP_CHOWN and
 * CAP_SYSLOG are still held. NULL with errno set. */
struct spawner *spawner__new(const struct spawner_config *cfg);
void spawner__free(struct spawner *sp);

/*
 * The two connections of a role the launcher starts (ROLE_SUPERVISOR or ROLE_SHIPPER): its
 * ends become peers here, the role's ends are returned for the child to find at
 * ROLE_FD_LAUNCHER and ROLE_FD_SECOND. A previous process of the role loses its connections.
 */
int spawner__role_fds(struct spawner *sp, int role, int ret_child_fds[2]);
/* The pid of the process started with those descriptors (0: it could not be started). */
void spawner__set_role_pid(struct spawner *sp, int role, pid_t pid);

/* Descriptors to poll for POLLIN, into fds[0..max); returns how many. */
int spawner__fds(struct spawner *sp, int *fds, int max);
/* Handles whatever is ready on fd. */
void spawner__handle(struct spawner *sp, int fd);
/* A child ended: when it was a worker, the supervisor hears of it. Returns 1 if it was one. */
int spawner__child_exited(struct spawner *sp, pid_t pid, int status);
/* Stops every worker (SIGTERM) */
void spawner__stop_workers(struct spawner *sp);

#define SPAWNER_CHILD_MAX_FDS (2 + 64) /* a worker's two connections and its targets' pidfds */

/*
 * Starts exe (a role) with argv: fds[0..n) at ROLE_FD_LAUNCHER onwards (the only descriptors
 * kept across exec: every other one of the launcher's is close-on-exec), stdin on /dev/null,
 * a session of its own (no controlling terminal: nothing it does reaches the launcher's
 * terminal as input), no signal blocked or caught. posix_spawn shares the launcher's memory
 * until the exec instead of copying it: no page tables copied and torn down, no copy-on-write
 * faults (4-5 ms of CPU a start here). Its pid, or -errno (exec failures included).
 */
pid_t spawner__exec(const char *exe, char *const argv[], const int *fds, int n);

#endif
