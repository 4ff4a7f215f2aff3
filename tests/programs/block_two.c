// SPDX-License-Identifier: Apache-2.0
/*
 * Blocks 30 ms in wait_30ms, then 10 ms in wait_10ms, over and over: an OFF_CPU profile should
 * give them 75% and 25% of the blocked time. The sleeps are raw system calls from the
 * functions themselves, so that a frame-pointer unwinder keeps the callers (libc's
 * clock_nanosleep is built without frame pointers).
 */
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void raw_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000 };
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
}

__attribute__((noinline)) void wait_30ms(void)
{
	raw_sleep_ms(30);
}

__attribute__((noinline)) void wait_10ms(void)
{
	raw_sleep_ms(10);
}

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		wait_30ms();
		wait_10ms();
	}
}
