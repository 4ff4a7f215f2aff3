// SPDX-License-Identifier: Apache-2.0
/*
 * A syscall-heavy process that no task targets, for the NETWORK bench: what do hooks on every
 * process's socket calls cost the ones that are not profiled?
 *   sock_writes unix|tcp MS
 * writes 64 bytes into one end of a connected pair and reads them from the other, over and
 * over for MS milliseconds (unix: socketpair; tcp: a connection over 127.0.0.1), then prints
 *   ops N ns_per_op X
 * where an op is one write and one read.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tcp_pair(int fds[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		return -1;
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	fds[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	if (fds[1] < 0)
		return -1;
	setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

int main(int argc, char **argv)
{
	char buf[64];
	uint64_t start, end, deadline, ops = 0;
	long ms;
	int fds[2];

	if (argc != 3 || (ms = strtol(argv[2], NULL, 10)) <= 0 ||
	    (strcmp(argv[1], "unix") && strcmp(argv[1], "tcp"))) {
		fprintf(stderr, "usage: sock_writes unix|tcp MS\n");
		return 2;
	}
	if (!strcmp(argv[1], "unix") ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds)
				     : tcp_pair(fds)) {
		perror("sock_writes: making the pair");
		return 1;
	}
	memset(buf, 'x', sizeof(buf));
	start = now_ns();
	deadline = start + (uint64_t)ms * 1000000u;
	do {
		/* The clock is read once per 256 ops: its cost stays out of the figure. */
		for (int i = 0; i < 256; i++) {
			size_t got = 0;

			if (write(fds[0], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				return 1;
			while (got < sizeof(buf)) {
				ssize_t n = read(fds[1], buf + got, sizeof(buf) - got);

				if (n <= 0)
					return 1;
				got += (size_t)n;
			}
		}
		ops += 256;
		end = now_ns();
	} while (end < deadline);
	printf("ops %llu ns_per_op %.1f\n", (unsigned long long)ops, (double)(end - start) / ops);
	return 0;
}
