/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capabilities): the descendants of TASK_CHILDREN tasks'
 * processes (`rover profile --children`). At a task's start, one listing of /proc adds those
 * already running to its pids. While it runs, every CHILDREN_TICK_MS the pids the kernel gave
 * out since the last look are read, as discovery finds new processes (/proc/loadavg's last
 * pid: the cost follows the processes started, not those that exist), and a process whose
 * parent is one of the task's is its child; a pidfd of each child, in one epoll set, tells
 * when it ends. The supervisor asks the launcher about each new child before the worker hears
 * of it (MSG_TASK_TARGETS).
 */
#ifndef ROVER_SUPERVISOR_CHILDREN_H
#define ROVER_SUPERVISOR_CHILDREN_H

#include <stddef.h>
#include <stdint.h>

#include "common/msg.h"

/* How often the new pids are read while a TASK_CHILDREN task runs. */
#define CHILDREN_TICK_MS 100
/* Where /proc is not our pid namespace's, no last pid tells the new ones: a listing, this often. */
#define CHILDREN_LIST_MS 1000

struct children;

/* A child found, or one that ended. */
struct child_event {
	uint64_t task_id;
	int32_t pid;
	int32_t ppid;
	uint64_t age_ms; /* how long it had run when found (10 ms clock ticks) */
};

/* proc_root: "/proc", or ROVER_HOST_PROC_MAPPING's value. NULL, errno set. */
struct children *children__new(const char *proc_root);
void children__free(struct children *c);

/*
 * spec's processes' descendants running now, added to spec->pids (up to ROVER_MAX_PIDS in all),
 * and the task followed from now on. Returns how many were added, or -errno; -E2BIG when more
 * were running than fit.
 */
int children__start(struct children *c, struct task_spec *spec);

/* The task is over: its children are no longer watched. */
void children__stop(struct children *c, uint64_t task_id);

/* Whether a task is followed (then children__tick is due every children__period_ms). */
int children__active(const struct children *c);
unsigned children__period_ms(const struct children *c);

/*
 * The pids given out since the last look: the new children of the followed tasks, up to max
 * into ret, each pinned (pending until children__settle). Returns how many.
 */
size_t children__tick(struct children *c, struct child_event *ret, size_t max);

/*
 * The launcher's word on a pending child: let on (1), it stays the task's until it ends;
 * refused (0), it is forgotten. Returns 1 when the child is still alive and let on (the
 * worker is to hear of it), 0 otherwise.
 */
int children__settle(struct children *c, uint64_t task_id, int32_t pid, int on);

/* The epoll descriptor that turns readable when a followed child ends; -1 when none. */
int children__fd(const struct children *c);

/* The children that ended, up to max into ret, each forgotten. Returns how many. */
size_t children__exits(struct children *c, struct child_event *ret, size_t max);

#endif
