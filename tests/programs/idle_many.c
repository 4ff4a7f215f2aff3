// SPDX-License-Identifier: Apache-2.0
/*
 * Many idle processes for scripts/bench_discovery.sh: COUNT with itself. It forks COUNT - 1
 * children that sleep in pause() until SIGTERM, BATCH at a time with a short rest between
 * batches (so the host's fork rate stays ordinary), writes "ready" to stdout, then sleeps too. The children share
 * the parent's command line, TAG included, which is all a finder sees.
 * usage: idle_many COUNT BATCH TAG
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	struct timespec rest = { 0, 20 * 1000 * 1000 };
	long count, batch;

	if (argc != 4 || (count = atol(argv[1])) <= 0 || (batch = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: idle_many COUNT BATCH TAG\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	for (long i = 1; i < count; i++) {
		pid_t p = fork();

		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			/* Children go with the parent: nothing is left behind by a killed bench. */
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() == 1)
				_exit(0);
			for (;;)
				pause();
		}
		if (i % batch == 0)
			nanosleep(&rest, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
