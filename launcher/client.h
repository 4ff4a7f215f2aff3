/* SPDX-License-Identifier: Apache-2.0 */
/* The client side of ctl.sock: what `rover profile` sends and how it reports the result. */
#ifndef ROVER_LAUNCHER_CLIENT_H
#define ROVER_LAUNCHER_CLIENT_H

#include "common/msg.h"

/* Connects to DIR/ctl.sock, retrying for up to wait_ms while the supervisor starts. */
int client_connect(const char *sockdir, unsigned wait_ms);

/* Sends the task with its output descriptor; 0 or -errno. */
int client_submit(int sock, const struct task_spec *spec, int out_fd);

/*
 * Reads one reply: ACCEPTED fills *ret_task_id and returns 1; DONE fills *ret_done and
 * returns 0; -errno otherwise.
 */
int client_read(int sock, uint64_t *ret_task_id, struct msg_ctl_done *ret_done);

int client_stop(int sock, uint64_t task_id);

/* Prints the outcome for a user: where the profile went, what it holds, what was lost. */
void client_report(const struct msg_ctl_done *d, const char *output, uint32_t type);

#endif
