// SPDX-License-Identifier: Apache-2.0
/*
 * A target that forks and execs RATE times a second (default 1000), for the soak
 * (tests/integration/test_endurance.c): THREADS threads (default 4) each spawn their share,
 * every child execing this program again as `fork_storm --child TAG`, which exits at once.
 * The main thread burns BURN_PCT (default 30) percent of each millisecond in storm_burn(), the
 * function a profile of it must show. It prints "ready PID", then "spawned N" every second. A
 * fork and exec cost 1.4 to 4 ms of CPU on a VM whose hypervisor makes page table changes dear:
 * there the threads spawn as fast as they can, never in a burst, and the count says how fast
 * that was.
 * usage: fork_storm RATE TAG [BURN_PCT [THREADS]]
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
volatile unsigned long sink;
static char self[PATH_MAX], *tag;
static long per_thread_ns;
static unsigned long spawned;

static long mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void sleep_until(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

__attribute__((noinline)) void storm_burn(long ns)
{
	long until = mono_ns() + ns;

	while (mono_ns() < until)
		for (int i = 0; i < 200; i++)
			sink += (unsigned long)i ^ (sink >> 3);
}

static void *spawner(void *arg)
{
	long next = mono_ns() + (long)(size_t)arg * 1000;

	for (;;) {
		char *cargv[] = { "fork_storm", "--child", tag, NULL };
		pid_t pid;

		if (!posix_spawn(&pid, self, NULL, NULL, cargv, environ))
			__atomic_add_fetch(&spawned, 1, __ATOMIC_RELAXED);
		next += per_thread_ns;
		/* Behind (a slow exec): on at once, never catching up in a burst. */
		if (next < mono_ns())
			next = mono_ns();
		else
			sleep_until(next);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long rate = 1000, pct = 30, threads = 4, next, report;
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "--child"))
		return 0;
	if (argc < 3 || argc > 5 || (rate = atol(argv[1])) <= 0 || rate > 100000 ||
	    (argc >= 4 && ((pct = atol(argv[3])) < 0 || pct > 90)) ||
	    (argc == 5 && ((threads = atol(argv[4])) < 1 || threads > 64))) {
		fprintf(stderr, "usage: fork_storm RATE TAG [BURN_PCT [THREADS]]\n");
		return 2;
	}
	tag = argv[2];
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	/* Reaped by the kernel: nobody waits. */
	signal(SIGCHLD, SIG_IGN);
	per_thread_ns = 1000000000L / rate * threads;
	for (long i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, spawner, (void *)(size_t)i))
			return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	next = mono_ns();
	report = next + 1000000000L;
	for (;;) {
		storm_burn(1000000L * pct / 100);
		next += 1000000L;
		if (mono_ns() >= report) {
			printf("spawned %lu\n", __atomic_load_n(&spawned, __ATOMIC_RELAXED));
			fflush(stdout);
			report += 1000000000L;
		}
		if (next < mono_ns())
			next = mono_ns();
		else
			sleep_until(next);
	}
}
