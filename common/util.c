// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

int parse_duration_us(const char *s, uint64_t *ret_us)
{
	static const struct {
		const char *suffix;
		uint64_t us;
	} units[] = { { "us", 1 },	    { "ms", 1000 },	    { "s", 1000000 },
		      { "m", 60000000ULL }, { "h", 3600000000ULL }, { "", 1000000 } };
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (v > UINT64_MAX / units[i].us)
			return -ERANGE;
		*ret_us = v * units[i].us;
		return 0;
	}
	return -EINVAL;
}

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t now_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

uint64_t now_unix_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

uint64_t cpu_used_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int write_full(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void heap_prefault(size_t bytes)
{
	const uintptr_t page = 4096;
	uintptr_t from, to;
	char *p;

	if (!bytes)
		return;
	/*
	 * Large blocks from the heap, and the heap kept: what is populated stays for reuse. Both
	 * thresholds above bytes: a block of bytes over the first would be mapped and unmapped
	 * apart from the heap, one over the second given back when freed.
	 */
	mallopt(M_MMAP_THRESHOLD,
		bytes + (1 << 20) > (8 << 20) ? (int)(bytes + (1 << 20)) : 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 2 * bytes > (16 << 20) ? (int)(2 * bytes) : 16 << 20);
	p = malloc(bytes);
	if (!p)
		return;
	from = ((uintptr_t)p + page - 1) & ~(page - 1);
	to = ((uintptr_t)p + bytes) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
	free(p);
}
