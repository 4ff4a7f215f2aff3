// SPDX-License-Identifier: Apache-2.0
/*
 * A CPU-bound program with two hot functions at a known ratio: burn_a does three units of
 * work for every one of burn_b, so a profile should give them 75% and 25% of their samples.
 * usage: demo_burn [SECONDS]   (default: run until killed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define UNIT 200000

volatile unsigned long sink;

__attribute__((noinline)) void burn_a(int units)
{
	for (long i = 0; i < (long)units * UNIT; i++)
		sink += i ^ (sink >> 3);
}

__attribute__((noinline)) void burn_b(int units)
{
	for (long i = 0; i < (long)units * UNIT; i++)
		sink += i ^ (sink >> 3);
}

__attribute__((noinline)) void work_loop(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		burn_a(3);
		burn_b(1);
		if (seconds > 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
				return;
		}
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	work_loop(seconds);
	return 0;
}
