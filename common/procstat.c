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

/* Fields of a stat file's text (terminated). 0 or -errno: -ESRCH for a zombie. */
static int parse_stat(char *buf, uint64_t *ret_ticks, uint64_t *ret_start, double *ret_threads)
{
	unsigned long long ut, st, start;
	long threads;
	char *p, state;

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

int procstat__stat(const char *proc_root, int pid, uint64_t *ret_ticks, uint64_t *ret_start,
		   double *ret_threads)
{
	char path[320], buf[1024];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return parse_stat(buf, ret_ticks, ret_start, ret_threads);
}

void procstat_file__init(struct procstat_file *f)
{
	*f = (struct procstat_file){ .fd = -1 };
}

void procstat_file__close(struct procstat_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	procstat_file__init(f);
}

/* The process of f has ended: its descriptor goes, and no read opens one again. */
static int file_gone(struct procstat_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->gone = 1;
	return -ESRCH;
}

int procstat_file__read(struct procstat_file *f, const char *proc_root, int pid, int keep_below,
			uint64_t *ret_ticks, uint64_t *ret_start, double *ret_threads)
{
	char buf[1024];
	uint64_t ticks, start;
	double threads;
	int err, opened = 0;
	ssize_t n;

	if (f->pid != pid) {
		procstat_file__close(f);
		f->pid = pid;
	}
	if (f->gone)
		return -ESRCH;
	if (f->fd < 0) {
		char path[320];

		snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
		f->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0) {
			err = -errno;
			return err == -ENOENT || err == -ESRCH ? file_gone(f) : err;
		}
		opened = 1;
	}
	/* A descriptor of /proc/PID reads its process's figures again at offset 0 (seq_file
	 * starts over); once the process has ended the read fails with ESRCH. */
	n = pread(f->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		err = n < 0 ? -errno : -EIO;
		if (err == -ESRCH || err == -ENOENT)
			return file_gone(f);
		close(f->fd);
		f->fd = -1;
		return err;
	}
	buf[n] = '\0';
	err = parse_stat(buf, &ticks, &start, &threads);
	if (err == -ESRCH || (!err && f->start && start != f->start))
		return file_gone(f); /* a zombie; or, opened anew, another process's number */
	if (err || (opened && f->fd >= keep_below)) {
		close(f->fd);
		f->fd = -1;
	}
	if (err)
		return err;
	f->start = start;
	*ret_ticks = ticks;
	*ret_start = start;
	if (ret_threads)
		*ret_threads = threads;
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
