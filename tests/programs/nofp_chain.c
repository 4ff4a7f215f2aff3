// SPDX-License-Identifier: Apache-2.0
/*
 * Built entirely with -O2 -fomit-frame-pointer (Makefile): main calls chain_a, which calls
 * chain_b, which burns the CPU. rbp is an ordinary register here, so only CFI finds callers.
 */
#include <stdio.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long chain_b(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul + (x >> 17);
	return x;
}

__attribute__((noinline)) unsigned long chain_a(unsigned long n)
{
	unsigned long x = chain_b(n) ^ n;

	sink = x; /* work after the call: no tail call */
	return x + 1;
}

int main(void)
{
	unsigned long n = 1;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		n = chain_a(n) + 3;
	return 0;
}
