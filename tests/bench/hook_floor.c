// SPDX-License-Identifier: Apache-2.0
/*
 * hook_floor SECONDS: attaches tests/bench/hook_floor.bpf.c (empty programs on the NETWORK
 * capture's default tracepoints), prints "attached", and holds them for SECONDS or until
 * SIGTERM. Root only; for scripts/bench_network.sh.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hook_floor.skel.h"

static void on_term(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	struct hook_floor_bpf *obj;
	int seconds = argc > 1 ? atoi(argv[1]) : 0;

	if (seconds <= 0) {
		fprintf(stderr, "usage: hook_floor SECONDS\n");
		return 2;
	}
	obj = hook_floor_bpf__open_and_load();
	if (!obj || hook_floor_bpf__attach(obj)) {
		fprintf(stderr, "hook_floor: %s\n", strerror(errno));
		hook_floor_bpf__destroy(obj);
		return 1;
	}
	signal(SIGTERM, on_term);
	printf("attached\n");
	fflush(stdout);
	sleep((unsigned)seconds); /* a SIGTERM ends it early */
	hook_floor_bpf__destroy(obj);
	return 0;
}
