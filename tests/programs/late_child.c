// SPDX-License-Identifier: Apache-2.0
/*
 * A parent that only waits, and a child it starts later: `late_child DELAY_MS BURN_MS` prints
 * "ready PID", waits DELAY_MS or until SIGUSR1, forks a child that burns the CPU in late_child_burn for
 * BURN_MS and exits, waits for it, then sleeps until killed. late_child_burn runs in the child
 * only: a profile of the parent holds it only if the child was followed (rover profile
 * --children, tests/integration/test_children.c). The child prints "child PID" on stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void late_child_burn(double ms)
{
	double end = now_ms() + ms;

	while (now_ms() < end)
		for (unsigned long i = 0; i < 100000; i++)
			sink += i ^ (sink >> 3);
}

int main(int argc, char **argv)
{
	long delay = argc > 1 ? atol(argv[1]) : 1000, burn = argc > 2 ? atol(argv[2]) : 1500;
	struct timespec wait = { delay / 1000, (delay % 1000) * 1000000 };
	pid_t child;
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigtimedwait(&usr1, NULL, &wait);
	child = fork();
	if (child == 0) {
		fprintf(stderr, "child %d\n", (int)getpid());
		late_child_burn((double)burn);
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	for (;;)
		pause();
}
