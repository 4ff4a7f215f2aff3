/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capabilities, seccomp): the two threads that talk to the
 * SkyWalking OAP. The report thread reports discovered processes (reportProcesses), keeps them
 * alive (keepAlive every heartbeat, a full re-report every properties_report_period
 * heartbeats) and stores the process ids the backend answers. The task thread polls queryTasks
 * every check_interval, checks each command, schedules future ones and hands tasks to the main
 * loop as MSG_BK_START / MSG_BK_STOP over a socketpair, one per (task, process id).
 * Each thread makes its own calls with their own deadline: a slow backend delays only the
 * thread that waits on it, never discovery (main loop) or profiling (workers).
 */
#ifndef ROVER_SUPERVISOR_BACKEND_H
#define ROVER_SUPERVISOR_BACKEND_H

#include "common/config/config.h"
#include "common/grpc/oap.h"
#include "supervisor/discovery/discovery.h"

struct backend;

/* main_fd: the backend's end of the socketpair to the main loop (taken over); proc_root: the
 * host's procfs (continuous profiling samples it). NULL, errno. */
struct backend *backend__new(const struct rover_config *cfg, const struct oap_opts *opts,
			     struct discovery *disc, const struct host_facts *host, int main_fd,
			     const char *proc_root);
/* Starts both threads. 0 or -errno. */
int backend__start(struct backend *b);
/* Stops and joins the threads (each ends within one call deadline), frees b. */
void backend__free(struct backend *b);

#endif
