/* SPDX-License-Identifier: Apache-2.0 */
/* The client side of ctl.sock: what `rover profile` sends and how it reports the result. */
#ifndef ROVER_LAUNCHER_CLIENT_H
#define ROVER_LAUNCHER_CLIENT_H

#include "common/msg.h"

/* Connects to DIR/ctl.sock, retrying for up to wait_ms while the supervisor starts. */
int client_connect(const char *sockdir, unsigned wait_ms);

/*
 * Sends the task. Its output comes back on a socket the supervisor makes and hands over with
 * MSG_CTL_ACCEPTED (client_read): the shipper sends the profile there and this client writes
 * it to its file (client_copy_output), so no role ever writes to, waits on or closes a
 * descriptor of a client's choice. 0 or -errno.
 */
int client_submit(int sock, const struct task_spec *spec);

/*
 * Copies what came on out into file, without waiting: 1 while more may come, 0 once the
 * shipper closed its end (all of it came), -errno (a failed write to file).
 */
int client_copy_output(int out, int file);

/* The rest of the output, once the task has ended: until its end or wait_ms. 0 or -errno. */
int client_finish_output(int out, int file, unsigned wait_ms);

/*
 * Reads one reply: ACCEPTED fills *ret_task_id and *ret_out (the output's socket, which the
 * caller closes) and returns 1; DONE fills *ret_done and returns 0; -errno otherwise.
 */
int client_read(int sock, uint64_t *ret_task_id, int *ret_out, struct msg_ctl_done *ret_done);

int client_stop(int sock, uint64_t task_id);

/* Prints the outcome for a user: where the profile went, what it holds, what was lost. */
void client_report(const struct msg_ctl_done *d, const char *output, uint32_t type);

#endif
