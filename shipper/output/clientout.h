/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shipper (rover user, no capability): a client's profile or report on its way to the
 * client. The client's descriptor comes from a member of the rover group through the
 * supervisor, so whoever holds its other end decides how fast it drains, or whether it ever
 * does: the output is rendered in memory first and sent only as the client's socket takes
 * it, never blocking, never raising SIGPIPE, within a deadline. A client that stalls delays
 * its own task's end and nobody else's (policy/README.md, "Client outputs").
 */
#ifndef ROVER_SHIPPER_CLIENTOUT_H
#define ROVER_SHIPPER_CLIENTOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/msg.h"

/* How long a client has to take its whole output once it is ready. */
#define CLIENTOUT_DEADLINE_MS 30000

struct client_out {
	int fd; /* the client's stream socket; -1: a free slot */
	char *buf;
	size_t len, off;
	uint64_t deadline_ms;
	struct msg_output_written w; /* said to the supervisor once it is all sent, or failed */
};

/*
 * Takes fd and buf (malloc'd, len bytes) into o, a free slot, for now_ms + the deadline.
 * Nothing is sent yet.
 */
void clientout__start(struct client_out *o, int fd, char *buf, size_t len, uint64_t now_ms,
		      const struct msg_output_written *w);
/*
 * Sends what the socket takes now: 1 once all is sent, 0 while some is left, -errno when the
 * output cannot be delivered (-ENOTSOCK: not a socket; -EPIPE: the client is gone;
 * -ETIMEDOUT: past its deadline). Never blocks.
 */
int clientout__push(struct client_out *o, uint64_t now_ms);
/* Closes the descriptor and frees the bytes: the slot is free again. */
void clientout__end(struct client_out *o);

#endif
