// SPDX-License-Identifier: Apache-2.0
/* Burns the CPU for a given time, so that shares do not depend on how the code was built. */
#include <time.h>

volatile unsigned long lib_sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void lib_burn_hot(int ms)
{
	double end = now() + ms / 1000.0;

	while (now() < end)
		for (int i = 0; i < 20000; i++)
			lib_sink += i ^ (lib_sink >> 3);
}
