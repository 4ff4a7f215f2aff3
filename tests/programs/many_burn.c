// SPDX-License-Identifier: Apache-2.0
/*
 * Many light CPU users for tests/integration/test_endurance.c: COUNT processes, each with a
 * command line of its own (`many_burn --child K TAG`, so a finder can make each one an entity)
 * and the comm mb-K (so a folded profile tells them apart), each burning BURN_US (default
 * 2000) of CPU time in burn_many() every 200 ms on average (180-220 ms, at random): 64 of
 * them take 0.64 of a core. Not shorter
 * periods: 64 processes waking every 20 ms starve everything else on a VM where each wakeup
 * costs a trip through the hypervisor (a Python program took 46 s instead of 1.5 s to start).
 * The parent prints "ready" once every child runs its own command line, then sleeps; the
 * children die with it.
 * usage: many_burn COUNT TAG [BURN_US]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_NS 200000000L

volatile unsigned long sink;

static long cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

__attribute__((noinline)) void burn_many(long ns)
{
	long until = cpu_ns() + ns;

	while (cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i ^ (sink >> 3);
}

static int child(int k, long burn_us)
{
	unsigned int seed = (unsigned int)getpid();
	struct timespec next;
	char comm[16];

	snprintf(comm, sizeof(comm), "mb-%d", k);
	prctl(PR_SET_NAME, comm);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		burn_many(burn_us * 1000);
		/* 180-220 ms, at random: a fixed period locks some children's bursts to the
		 * sampling timer's phase (a run had 50 samples for some, none for others). */
		next.tv_nsec += PERIOD_NS - 20000000L + (long)(rand_r(&seed) % 40000) * 1000;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}

/* Whether pid's command line already is a child's (it has exec'd). */
static int execd(pid_t pid)
{
	char path[64], buf[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	return strstr(buf, "--child") != NULL;
}

int main(int argc, char **argv)
{
	long count, burn_us = 2000;
	pid_t *kids;

	if (argc == 5 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]), atol(argv[4]));
	if (argc < 3 || argc > 4 || (count = atol(argv[1])) <= 0 || count > 4096 ||
	    (argc == 4 && (burn_us = atol(argv[3])) <= 0)) {
		fprintf(stderr, "usage: many_burn COUNT TAG [BURN_US]\n");
		return 2;
	}
	kids = calloc((size_t)count, sizeof(*kids));
	if (!kids)
		return 1;
	for (long i = 0; i < count; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("fork");
			return 1;
		}
		if (kids[i] == 0) {
			char k[16], us[24];

			/* Children go with the parent: nothing is left behind by a killed test. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			snprintf(k, sizeof(k), "%ld", i);
			snprintf(us, sizeof(us), "%ld", burn_us);
			execl("/proc/self/exe", "many_burn", "--child", k, argv[2], us,
			      (char *)NULL);
			_exit(127);
		}
	}
	for (long i = 0; i < count; i++)
		while (!execd(kids[i]))
			usleep(1000);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
