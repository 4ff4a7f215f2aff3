// SPDX-License-Identifier: Apache-2.0
/*
 * A process of many idle threads, for the continuous profiling thread-count monitor: main and
 * N - 1 threads blocked in pause(), so /proc/PID/status says "Threads: N" once "ready" is out.
 * usage: many_threads [N]   (default 16, at least 1)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16;

	for (int i = 1; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, idle, NULL)) {
			perror("pthread_create");
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
