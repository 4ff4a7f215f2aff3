/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON): the shipper's stack hints (MSG_SHIP_STACK_HINT), by
 * target. The shipper is the less trusted peer (it parses the targets' files): a hint can only
 * shorten the stacks the worker sends of the task's own targets, never below
 * SHIP_STACK_HINT_MIN, and names no other process.
 */
#ifndef ROVER_WORKER_STACKHINT_H
#define ROVER_WORKER_STACKHINT_H

#include <stdint.h>

#include "common/msg.h"

struct stack_hints {
	int32_t pid[ROVER_MAX_PIDS];
	uint32_t bytes[ROVER_MAX_PIDS]; /* 0: no hint, all the stack copied is sent */
	uint32_t n;
};

/* The task's targets, none hinted yet. */
void stack_hints__init(struct stack_hints *h, const int32_t *pids, uint32_t npids);
/* A hint from the shipper: 0, or -ESRCH when tgid is not a target (nothing changed). */
int stack_hints__set(struct stack_hints *h, int32_t tgid, uint32_t bytes);
/* The most user stack bytes to send of tgid's snapshots, 0: no limit. */
uint32_t stack_hints__limit(const struct stack_hints *h, uint32_t tgid);

#endif
