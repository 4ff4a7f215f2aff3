// SPDX-License-Identifier: Apache-2.0
/*
 * A stack that deepens: for the first 2.5 s main burns the CPU in shallow_burn, one frame
 * below main; then in deep_leaf, under 24 frames of deep_step holding 256 bytes each (about
 * 7 KiB more stack). The shipper's stack hint, learnt on the shallow stacks, must grow to keep
 * the deep ones whole (tests/integration/test_unwind.c).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long burn(unsigned long x)
{
	for (unsigned long i = 0; i < 200000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul + (x >> 17);
	return x;
}

__attribute__((noinline)) unsigned long shallow_burn(unsigned long n)
{
	unsigned long x = burn(n);

	sink = x; /* no tail call */
	return x + 1;
}

__attribute__((noinline)) unsigned long deep_leaf(unsigned long n)
{
	for (;;)
		sink = n = burn(n);
}

__attribute__((noinline)) unsigned long deep_step(int depth, unsigned long n)
{
	volatile unsigned char room[256];
	unsigned long x;

	room[depth % 256] = (unsigned char)n;
	x = depth ? deep_step(depth - 1, n + room[depth % 256]) : deep_leaf(n);
	sink = x + room[0]; /* no tail call, the room kept */
	return x;
}

int main(void)
{
	double start = now_s();
	unsigned long n = 1;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (now_s() - start < 2.5)
		n = shallow_burn(n) + 3;
	return (int)deep_step(24, n);
}
