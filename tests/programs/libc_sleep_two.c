// SPDX-License-Identifier: Apache-2.0
/*
 * Sleeps 30 ms in sleep_30ms, then 10 ms in sleep_10ms, over and over, through libc's
 * nanosleep. This program's own code has frame pointers; Debian's libc has none, so a
 * frame-pointer unwinder loses both callers of the libc call (`clock_nanosleep <- main`).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void sleep_30ms(void)
{
	struct timespec ts = { .tv_nsec = 30000000 };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void sleep_10ms(void)
{
	struct timespec ts = { .tv_nsec = 10000000 };

	nanosleep(&ts, NULL);
}

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		sleep_30ms();
		sleep_10ms();
	}
}
