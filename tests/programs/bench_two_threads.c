// SPDX-License-Identifier: Apache-2.0
/* The benchmark's workload: two threads, each burning a core in its own function. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sinks[2][16];

__attribute__((noinline)) static void spin_thread_one(void)
{
	for (unsigned long i = 0;; i++)
		sinks[0][0] += i ^ (sinks[0][0] >> 3);
}

__attribute__((noinline)) static void spin_thread_two(void)
{
	for (unsigned long i = 0;; i++)
		sinks[1][0] += i ^ (sinks[1][0] >> 5);
}

static void *run(void *arg)
{
	if (arg)
		spin_thread_two();
	else
		spin_thread_one();
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pthread_create(&t[0], NULL, run, NULL);
	pthread_create(&t[1], NULL, run, (void *)1);
	pthread_join(t[0], NULL);
	return 0;
}
