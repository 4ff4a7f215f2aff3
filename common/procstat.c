// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
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
	*f = (struct procstat_file){ .fd = -1, .pidfd = -1, .taskfd = -1, .setfd = -1 };
}

static void close_fds(struct procstat_file *f)
{
	/* Out of the set first: a copy of the descriptor (a child forked meanwhile) would keep
	 * it there after the close. */
	if (f->setfd >= 0 && f->pidfd >= 0)
		epoll_ctl(f->setfd, EPOLL_CTL_DEL, f->pidfd, NULL);
	f->setfd = -1;
	if (f->fd >= 0)
		close(f->fd);
	if (f->pidfd >= 0)
		close(f->pidfd);
	if (f->taskfd >= 0)
		close(f->taskfd);
	f->fd = f->pidfd = f->taskfd = -1;
}

void procstat_file__close(struct procstat_file *f)
{
	close_fds(f);
	procstat_file__init(f);
}

int procstat_file__kept(const struct procstat_file *f)
{
	return (f->fd >= 0) + (f->pidfd >= 0) + (f->taskfd >= 0);
}

/* The process of f has ended: its descriptors go, and no read opens one again. */
static int file_gone(struct procstat_file *f)
{
	close_fds(f);
	f->gone = 1;
	return -ESRCH;
}

/* Whether the process of pidfd has ended (a zombie too): 1, 0, or -errno. */
static int pidfd_ended(int pidfd)
{
	struct pollfd q = { .fd = pidfd, .events = POLLIN };
	int n = poll(&q, 1, 0);

	if (n < 0)
		return -errno;
	return n > 0 && (q.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
}

/* /proc/PID/task's link count less the directory's own two: the process's threads. */
static int task_threads(int taskfd, double *ret)
{
	struct stat st;

	if (fstat(taskfd, &st))
		return -errno;
	if (st.st_nlink < 3)
		return -ESRCH; /* no thread left: it has ended */
	*ret = (double)(st.st_nlink - 2);
	return 0;
}

/*
 * The id of pid's process CPU clock, as the kernel makes it (linux/posix-timers_types.h:
 * MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)): glibc's clock_getcpuclockid() would check it
 * with a clock_getres() call each time, which the supervisor's filter does not allow, and
 * the first clock_gettime() tells as well that no process has the number.
 */
static clockid_t process_clock(int pid)
{
	return (clockid_t)(((unsigned int)~pid << 3) | 2);
}

/*
 * The reads of the own /proc (see the header): the clock and the task directory, then the
 * pidfd. 0, -ESRCH (ended: the caller forgets it) or another -errno.
 */
static int read_clock(struct procstat_file *f, int check, uint64_t *ret_cpu_ns, double *ret_threads)
{
	struct timespec ts;
	int err;

	/* A number no process holds reads EINVAL. */
	if (clock_gettime((clockid_t)f->clock, &ts))
		return errno == EINVAL || errno == ESRCH ? -ESRCH : -errno;
	if (ret_threads) {
		err = task_threads(f->taskfd, ret_threads);
		if (err)
			return err;
	}
	err = check ? pidfd_ended(f->pidfd) : 0;
	if (err)
		return err > 0 ? -ESRCH : err;
	*ret_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

/* The stat file's text (terminated) through fd (pread at 0), or opened by path when fd < 0. */
static ssize_t stat_text(int fd, const char *proc_root, int pid, char *buf, size_t len)
{
	char path[320];
	ssize_t n;

	if (fd >= 0) {
		n = pread(fd, buf, len - 1, 0);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf[n] = '\0';
		return n;
	}
	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
	return read_small(path, buf, len);
}

/*
 * The first read of an own-/proc file, or one whose descriptors were not kept: the pidfd
 * first, then stat for the start time (a zombie has ended) and the task directory, then the
 * clock; the pidfd still open after them says every one was this process's.
 */
static int read_first(struct procstat_file *f, struct procstat_set *set, const char *proc_root,
		      int keep_below, uint64_t *ret_cpu_ns, uint64_t *ret_start,
		      double *ret_threads)
{
	char buf[1024], path[320];
	uint64_t ticks, start;
	double threads;
	ssize_t n;
	int err;

	f->pidfd = (int)syscall(SYS_pidfd_open, f->pid, 0);
	if (f->pidfd < 0) {
		err = -errno;
		f->pidfd = -1;
		return err == -ESRCH ? file_gone(f) : err;
	}
	n = stat_text(-1, proc_root, f->pid, buf, sizeof(buf));
	if (n < 0) {
		err = (int)n;
		goto fail;
	}
	err = parse_stat(buf, &ticks, &start, &threads);
	if (!err && f->start && start != f->start)
		err = -ESRCH; /* opened anew: its number is another process's now */
	if (err)
		goto fail;
	f->clock = (int)process_clock(f->pid);
	snprintf(path, sizeof(path), "%s/%d/task", proc_root, f->pid);
	f->taskfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->taskfd < 0) {
		err = -errno;
		goto fail;
	}
	err = read_clock(f, 1, ret_cpu_ns, ret_threads);
	if (err)
		goto fail;
	f->start = start;
	*ret_start = start;
	if (f->pidfd >= keep_below || f->taskfd >= keep_below) {
		close_fds(f);
	} else if (set && set->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = f->pidfd };

		/* Not in the set: it is checked alone at each read (one poll more). */
		if (!epoll_ctl(set->epfd, EPOLL_CTL_ADD, f->pidfd, &ev))
			f->setfd = set->epfd;
	}
	return 0;
fail:
	if (err == -ESRCH || err == -ENOENT)
		return file_gone(f);
	close_fds(f);
	return err;
}

static int sample(struct procstat_file *f, struct procstat_set *set, const char *proc_root, int pid,
		  int keep_below, uint64_t *ret_cpu_ns, uint64_t *ret_start, double *ret_threads)
{
	char buf[1024];
	uint64_t ticks, start, ns;
	double threads;
	int err, opened = 0, check;
	ssize_t n;
	long tck;

	if (f->pid != pid) {
		procstat_file__close(f);
		f->pid = pid;
	}
	if (f->gone)
		return -ESRCH;
	if (!strcmp(proc_root, "/proc")) {
		if (f->pidfd < 0)
			return read_first(f, set, proc_root, keep_below, ret_cpu_ns, ret_start,
					  ret_threads);
		/* Only a pidfd in this very set is asked by the caller: any other file (kept by
		 * procstat_file__read(), or its epoll_ctl refused) is polled here. */
		check = !set || set->epfd < 0 || f->setfd != set->epfd;
		err = read_clock(f, check, &ns, ret_threads ? &threads : NULL);
		if (err == -ESRCH)
			return file_gone(f);
		if (err) {
			close_fds(f);
			return err;
		}
		*ret_cpu_ns = ns;
		*ret_start = f->start;
		if (ret_threads)
			*ret_threads = threads;
		return !check;
	}
	if (f->fd < 0) {
		char path[320];

		snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
		f->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0) {
			err = -errno;
			f->fd = -1;
			return err == -ENOENT || err == -ESRCH ? file_gone(f) : err;
		}
		opened = 1;
	}
	/* A descriptor of /proc/PID reads its process's figures again at offset 0 (seq_file
	 * starts over); once the process has ended the read fails with ESRCH. */
	n = stat_text(f->fd, proc_root, pid, buf, sizeof(buf));
	if (n < 0) {
		err = (int)n;
		if (err == -ESRCH || err == -ENOENT)
			return file_gone(f);
		close_fds(f);
		return err;
	}
	err = parse_stat(buf, &ticks, &start, &threads);
	if (err == -ESRCH || (!err && f->start && start != f->start))
		return file_gone(f); /* a zombie; or, opened anew, another process's number */
	if (err || (opened && f->fd >= keep_below))
		close_fds(f);
	if (err)
		return err;
	tck = sysconf(_SC_CLK_TCK);
	f->start = start;
	*ret_cpu_ns = ticks * (1000000000ull / (uint64_t)(tck > 0 ? tck : 100));
	*ret_start = start;
	if (ret_threads)
		*ret_threads = threads;
	return 0;
}

int procstat_file__read(struct procstat_file *f, const char *proc_root, int pid, int keep_below,
			uint64_t *ret_cpu_ns, uint64_t *ret_start, double *ret_threads)
{
	return sample(f, NULL, proc_root, pid, keep_below, ret_cpu_ns, ret_start, ret_threads);
}

int procstat_file__sample(struct procstat_file *f, struct procstat_set *s, const char *proc_root,
			  int pid, int keep_below, uint64_t *ret_cpu_ns, uint64_t *ret_start,
			  double *ret_threads)
{
	return sample(f, s, proc_root, pid, keep_below, ret_cpu_ns, ret_start, ret_threads);
}

int procstat_file__gone(struct procstat_file *f)
{
	return file_gone(f);
}

int procstat_set__init(struct procstat_set *s)
{
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	return s->epfd < 0 ? -errno : 0;
}

void procstat_set__free(struct procstat_set *s)
{
	if (s->epfd >= 0)
		close(s->epfd);
	s->epfd = -1;
}

int procstat_set__ended(struct procstat_set *s, int *ret_pidfds, int max)
{
	struct epoll_event ev[64];
	int n;

	if (s->epfd < 0)
		return 0;
	if (max > 64)
		max = 64;
	n = epoll_wait(s->epfd, ev, max, 0);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++)
		ret_pidfds[i] = ev[i].data.fd;
	return n;
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
