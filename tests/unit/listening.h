/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For unit tests that need a helper process listening on a port it picks (the fake OAP, the
 * fake DNS server): starts argv, waits for its "listening on PORT" line.
 */
#ifndef ROVER_TESTS_UNIT_LISTENING_H
#define ROVER_TESTS_UNIT_LISTENING_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* Starts argv[0] with argv; its pid into *ret_pid; returns the port it printed. */
static inline int spawn_listening(const char *const *argv, pid_t *ret_pid)
{
	int fds[2], port = 0;
	char buf[256] = "";
	size_t len = 0;
	pid_t pid;

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	*ret_pid = pid;
	/* protoc and the grpc import take about a second; 30 s covers a loaded machine. */
	for (uint64_t end = now_mono_ms() + 30000; now_mono_ms() < end && !strchr(buf, '\n');) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 500) <= 0)
			continue;
		n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
	}
	close(fds[0]);
	cr_assert(sscanf(buf, "listening on %d", &port) == 1, "%s did not start: '%s'", argv[1],
		  buf);
	return port;
}

#endif
