// SPDX-License-Identifier: Apache-2.0
/*
 * A PIE executable whose hot function lives in a shared library the build makes
 * (lib/libburn.c): lib_burn_hot takes 2/3 of the samples, main_burn_local 1/3.
 */
#include <stdio.h>
#include <unistd.h>

void lib_burn_hot(int units);

volatile unsigned long local_sink;

__attribute__((noinline)) void main_burn_local(int units)
{
	for (long i = 0; i < (long)units * 200000; i++)
		local_sink += i ^ (local_sink >> 3);
}

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		lib_burn_hot(2);
		main_burn_local(1);
	}
}
