/* SPDX-License-Identifier: Apache-2.0 */
/* Worker side (CAP_BPF + CAP_PERFMON): the ON_CPU sampler and its in-kernel counts. */
#ifndef ROVER_WORKER_ONCPU_H
#define ROVER_WORKER_ONCPU_H

#include <stdint.h>

#include "common/msg.h"
#include "worker/ship.h"

struct oncpu;

/* Loads, configures and attaches the sampler for spec's targets. NULL + errno. */
struct oncpu *oncpu__start(const struct task_spec *spec, struct msg_task_started *ret_started);

/*
 * Moves everything counted since the previous drain into batch: count deltas, the stacks the
 * shipper has not been sent with their current content, and loss deltas. Then removes stacks
 * no longer counted, so a long task does not fill the stack map. 0 or -errno.
 */
int oncpu__drain(struct oncpu *o, struct ship_batch *batch);

/* Stops sampling; a drain afterwards collects the last counts. */
void oncpu__stop(struct oncpu *o);

void oncpu__totals(const struct oncpu *o, uint64_t *ret_samples, uint64_t ret_losses[LOSS_MAX]);

void oncpu__free(struct oncpu *o);

#endif
