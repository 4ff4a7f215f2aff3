// SPDX-License-Identifier: Apache-2.0
/*
 * A PIE executable whose hot function lives in a shared library the build makes
 * (lib/libburn.c): lib_burn_hot burns 2 ms for every 1 ms of main_burn_local, so they get
 * 2/3 and 1/3 of the samples.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void lib_burn_hot(int ms);

volatile unsigned long local_sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void main_burn_local(int ms)
{
	double end = now() + ms / 1000.0;

	while (now() < end)
		for (int i = 0; i < 20000; i++)
			local_sink += i ^ (local_sink >> 3);
}

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		lib_burn_hot(20);
		main_burn_local(10);
	}
}
