// SPDX-License-Identifier: Apache-2.0
/*
 * Spends its CPU time inside libc's memcpy (no frame pointers there), called from two
 * functions of its own: copy_three copies three times as much as copy_one, so ON_CPU samples
 * under the libc frame split 75% / 25% between them when the callers are kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (256 << 10)

static char *src, *dst;

__attribute__((noinline)) void copy_three(void)
{
	for (int i = 0; i < 3; i++)
		memcpy(dst, src, CHUNK);
}

__attribute__((noinline)) void copy_one(void)
{
	memcpy(dst, src, CHUNK);
}

int main(void)
{
	src = malloc(CHUNK);
	dst = malloc(CHUNK);
	if (!src || !dst)
		return 1;
	memset(src, 1, CHUNK);
	memset(dst, 2, CHUNK);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		copy_three();
		copy_one();
	}
}
