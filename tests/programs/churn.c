// SPDX-License-Identifier: Apache-2.0
/*
 * Short-lived processes at a steady rate, for the churn soak (tests/integration/
 * test_endurance.c): RATE a second, each sleeping LIFE_MS and exiting. A child writes its slot
 * (its number modulo SLOTS) over the placeholder "cPP" of its command line, in place (the
 * kernel reads /proc/PID/cmdline from the process's own memory), so a finder sees
 * `churn RATE LIFE_MS SLOTS cNN TAG` and can render SLOTS entities whose processes come and go;
 * the parent keeps "cPP" and matches none. Forked, never exec'd: the host pays for the
 * processes, not for loading a program 200 times a second. The parent prints "ready PID", then
 * "started N" every second; the children die with it.
 * usage: churn RATE LIFE_MS SLOTS cPP TAG
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void add_ns(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

int main(int argc, char **argv)
{
	long rate, life_ms, slots, started = 0;
	struct timespec next, report;

	if (argc != 6 || (rate = atol(argv[1])) <= 0 || rate > 100000 ||
	    (life_ms = atol(argv[2])) < 0 || (slots = atol(argv[3])) <= 0 || slots > 100 ||
	    strcmp(argv[4], "cPP")) {
		fprintf(stderr, "usage: churn RATE LIFE_MS SLOTS cPP TAG\n");
		return 2;
	}
	/* Reaped by the kernel: the parent never waits. */
	signal(SIGCHLD, SIG_IGN);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &next);
	report = next;
	add_ns(&report, 1000000000L);
	for (;;) {
		pid_t p = fork();

		if (p == 0) {
			struct timespec life = { life_ms / 1000, (life_ms % 1000) * 1000000L };

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			snprintf(argv[4], 4, "c%02ld", started % slots);
			nanosleep(&life, NULL);
			_exit(0);
		}
		if (p > 0)
			started++;
		add_ns(&next, 1000000000L / rate);
		if (next.tv_sec > report.tv_sec ||
		    (next.tv_sec == report.tv_sec && next.tv_nsec >= report.tv_nsec)) {
			printf("started %ld\n", started);
			fflush(stdout);
			add_ns(&report, 1000000000L);
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}
