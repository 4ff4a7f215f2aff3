// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/procstat.h"

/* The file's first len - 1 bytes, terminated. Its length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	return n;
}

int procstat__cpu(const char *proc_root, int pid, uint64_t *ret_ticks, uint64_t *ret_start)
{
	return procstat__stat(proc_root, pid, ret_ticks, ret_start, NULL);
}

int procstat__stat(const char *proc_root, int pid, uint64_t *ret_ticks, uint64_t *ret_start,
		   double *ret_threads)
{
	char path[320], buf[1024], *p, state;
	unsigned long long ut, st, start;
	long threads;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* The command name may hold spaces and parentheses: fields count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			 "%ld %*d %llu",
			 &state, &ut, &st, &threads, &start) != 5)
		return -EINVAL;
	/* A zombie has ended, though /proc keeps it until its parent waits: no CPU, no task. */
	if (state == 'Z' || state == 'X')
		return -ESRCH;
	*ret_ticks = ut + st;
	*ret_start = start;
	if (ret_threads)
		*ret_threads = (double)threads;
	return 0;
}

int procstat__threads(const char *proc_root, int pid, double *ret)
{
	char path[320], buf[4096], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/status", proc_root, pid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strstr(buf, "\nThreads:");
	if (!p)
		return -EINVAL;
	*ret = strtod(p + 9, NULL);
	return 0;
}

int procstat__load(const char *proc_root, double *ret)
{
	char path[320], buf[128];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/loadavg", proc_root);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	*ret = strtod(buf, NULL);
	return 0;
}
