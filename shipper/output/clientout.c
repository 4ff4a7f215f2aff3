// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shipper/output/clientout.h"

void clientout__start(struct client_out *o, int fd, char *buf, size_t len, uint64_t now_ms,
		      const struct msg_output_written *w)
{
	o->fd = fd;
	o->buf = buf;
	o->len = len;
	o->off = 0;
	o->deadline_ms = now_ms + CLIENTOUT_DEADLINE_MS;
	o->w = *w;
}

int clientout__push(struct client_out *o, uint64_t now_ms)
{
	while (o->off < o->len) {
		/*
		 * MSG_DONTWAIT, not O_NONBLOCK: the flag of the open file, which the client shares
		 * and may clear again at any time; this one is the call's own. MSG_NOSIGNAL: a
		 * client that closed its end is an error here, not a signal.
		 */
		ssize_t n =
			send(o->fd, o->buf + o->off, o->len - o->off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			o->off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		return now_ms >= o->deadline_ms ? -ETIMEDOUT : 0;
	}
	return 1;
}

void clientout__end(struct client_out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	free(o->buf);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}
