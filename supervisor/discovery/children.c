// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/config/procmatch.h"
#include "common/log.h"
#include "common/util.h"
#include "supervisor/discovery/children.h"

/* More pids given out between two looks than this: a listing instead (as discovery does). */
#define CHILDREN_PROBE_MAX 1024
#define CHILDREN_MAX_TASKS 32

enum child_state {
	C_FIRST,   /* one of the task's pids at its start: the worker watches it, we do not */
	C_PENDING, /* found, asked of the launcher */
	C_MEMBER,  /* let on: the worker traces it until it ends */
};

struct child {
	uint64_t task_id;
	int32_t pid;
	int32_t ppid;
	uint64_t starttime; /* tells the process from a later one of its number */
	int pidfd;	    /* C_PENDING, C_MEMBER: in the epoll set; else -1 */
	int gone;	    /* C_PENDING: ended before the launcher answered */
	enum child_state state;
};

struct children {
	char proc_root[256];
	int dirfd;	  /* proc_root */
	int epfd;	  /* the children's pidfds */
	int probe;	  /* 1: new pids from loadavg's last pid; 0: list /proc */
	int32_t last_pid; /* loadavg's last pid at the previous look */
	uint64_t tasks[CHILDREN_MAX_TASKS];
	size_t ntasks;
	struct child *v;
	size_t n, cap;
	long hz;
	int said_full;
};

struct children *children__new(const char *proc_root)
{
	struct children *c = calloc(1, sizeof(*c));
	char buf[64];

	if (!c)
		return NULL;
	snprintf(c->proc_root, sizeof(c->proc_root), "%s", proc_root);
	c->dirfd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Made now, before the sandbox, which has no epoll_create1 (discovery's is made so). */
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->dirfd < 0 || c->epfd < 0) {
		int err = errno;

		children__free(c);
		errno = err;
		return NULL;
	}
	/* loadavg counts in the reader's pid namespace: only ours tells our pids. */
	c->probe = procmatch__read(c->dirfd, "self/stat", buf, sizeof(buf)) > 0 &&
		   atoi(buf) == getpid();
	c->hz = sysconf(_SC_CLK_TCK);
	if (c->hz <= 0)
		c->hz = 100;
	return c;
}

void children__free(struct children *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].pidfd >= 0)
			close(c->v[i].pidfd);
	free(c->v);
	if (c->dirfd >= 0)
		close(c->dirfd);
	if (c->epfd >= 0)
		close(c->epfd);
	free(c);
}

/* loadavg's last field: the last pid the kernel gave out ("0.1 0.2 0.3 1/200 LAST"). */
static int32_t last_pid(struct children *c)
{
	char buf[128], *p;
	long v;

	if (!c->probe || procmatch__read(c->dirfd, "loadavg", buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ' ');
	v = p ? strtol(p + 1, NULL, 10) : 0;
	return v > 0 && v <= INT32_MAX ? (int32_t)v : 0;
}

static struct child *find(struct children *c, uint64_t task_id, int32_t pid)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].task_id == task_id && c->v[i].pid == pid)
			return &c->v[i];
	return NULL;
}

static size_t live_children(const struct children *c, uint64_t task_id)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++)
		n += c->v[i].task_id == task_id && c->v[i].state != C_FIRST;
	return n;
}

static struct child *add(struct children *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct child *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		c->v = v;
		c->cap = cap;
	}
	return &c->v[c->n++];
}

static void del(struct children *c, struct child *e)
{
	if (e->pidfd >= 0)
		close(e->pidfd); /* leaves the epoll set with its last descriptor */
	*e = c->v[--c->n];
}

/* Whether pid is a process (its thread group's leader) rather than one of its threads. */
static int is_process(struct children *c, int32_t pid)
{
	char path[32], buf[512];
	const char *t;

	snprintf(path, sizeof(path), "%d/status", pid);
	if (procmatch__read(c->dirfd, path, buf, sizeof(buf)) <= 0)
		return 0;
	t = strstr(buf, "\nTgid:");
	return t && atoi(t + 6) == pid;
}

/* A parent of a task still the process we took for it (its number may be another's now). */
static const struct child *parent_in(struct children *c, int32_t ppid, size_t *from)
{
	for (size_t i = *from; i < c->n; i++) {
		struct child *e = &c->v[i];
		uint64_t st;

		if (e->pid != ppid || (e->state == C_PENDING && e->gone))
			continue;
		*from = i + 1;
		if (procmatch__stat(c->dirfd, ppid, NULL, &st) || st != e->starttime)
			continue;
		return e;
	}
	return NULL;
}

static uint64_t age_ms(const struct children *c, uint64_t starttime)
{
	struct timespec ts;
	uint64_t now;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0;
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	starttime = starttime * 1000 / (uint64_t)c->hz;
	return now > starttime ? now - starttime : 0;
}

/*
 * pid, with ppid and starttime read from its stat, if its parent is one of a followed task's:
 * pinned and made pending for each such task, up to max events into ret. Returns how many.
 */
static size_t consider(struct children *c, int32_t pid, int32_t ppid, uint64_t starttime,
		       struct child_event *ret, size_t max)
{
	size_t n = 0, from = 0;
	const struct child *parent;

	while (n < max && (parent = parent_in(c, ppid, &from))) {
		uint64_t task = parent->task_id;
		struct epoll_event ev = { .events = EPOLLIN };
		struct child *e;
		uint64_t st;
		int fd;

		if (find(c, task, pid))
			continue;
		if (!is_process(c, pid))
			return n;
		if (live_children(c, task) >= ROVER_MAX_CHILDREN) {
			if (!c->said_full++)
				log_warn("task %llu: more than %d children at once: the others are "
					 "not followed",
					 (unsigned long long)task, ROVER_MAX_CHILDREN);
			continue;
		}
		/* Pinned, then read again: the pidfd holds the process whose parent we saw. */
		fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd < 0)
			return n;
		if (procmatch__stat(c->dirfd, pid, NULL, &st) || st != starttime || !(e = add(c))) {
			close(fd);
			return n;
		}
		*e = (struct child){ .task_id = task,
				     .pid = pid,
				     .ppid = ppid,
				     .starttime = starttime,
				     .pidfd = fd,
				     .state = C_PENDING };
		ev.data.u64 = (uint64_t)(uint32_t)pid << 32 | (uint32_t)fd;
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			del(c, e);
			return n;
		}
		ret[n++] = (struct child_event){
			.task_id = task, .pid = pid, .ppid = ppid, .age_ms = age_ms(c, starttime)
		};
		/* from: the record moved by a del is never ours; e itself is past it. */
	}
	return n;
}

/* Every process of proc_root, in increasing pid order, considered. */
static size_t list_all(struct children *c, struct child_event *ret, size_t max)
{
	int32_t *pids = NULL;
	size_t npids = 0, cap = 0, n = 0;
	struct dirent *de;
	DIR *d;
	int fd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		if (npids == cap) {
			int32_t *v = realloc(pids, (cap ? cap * 2 : 1024) * sizeof(*v));

			if (!v)
				break;
			pids = v;
			cap = cap ? cap * 2 : 1024;
		}
		pids[npids++] = (int32_t)pid;
	}
	closedir(d);
	/*
	 * Parents before children, as pids are given out: a grandchild is considered after its
	 * parent joined. A listing in one order misses a child of a higher pid than its own
	 * (the pids wrapped between them), so it goes round until nothing more is added.
	 */
	for (int changed = 1; changed && n < max;) {
		changed = 0;
		for (size_t i = 0; i < npids && n < max; i++) {
			int32_t ppid;
			uint64_t st;
			size_t got;

			if (procmatch__stat(c->dirfd, pids[i], &ppid, &st))
				continue;
			got = consider(c, pids[i], ppid, st, ret + n, max - n);
			n += got;
			changed |= got != 0;
		}
	}
	free(pids);
	return n;
}

int children__start(struct children *c, struct task_spec *spec)
{
	struct child_event found[ROVER_MAX_PIDS + 1];
	size_t n, added = 0;
	int32_t last;
	int err = 0;

	if (c->ntasks >= CHILDREN_MAX_TASKS)
		return -EBUSY;
	/* Read before the listing: a pid given out meanwhile is looked at again at the tick. */
	last = last_pid(c);
	if (!c->ntasks || (last && last < c->last_pid) || !c->last_pid)
		c->last_pid = last;
	for (uint32_t i = 0; i < spec->npids; i++) {
		struct child *e;
		uint64_t st;

		if (procmatch__stat(c->dirfd, spec->pids[i], NULL, &st))
			continue; /* gone: the launcher says so */
		e = add(c);
		if (!e)
			return -ENOMEM;
		*e = (struct child){ .task_id = spec->task_id,
				     .pid = spec->pids[i],
				     .starttime = st,
				     .pidfd = -1,
				     .state = C_FIRST };
	}
	c->tasks[c->ntasks++] = spec->task_id;
	/* One more than fits: a task with too many to start with is refused, not cut short. */
	n = list_all(c, found, ROVER_MAX_PIDS + 1);
	for (size_t i = 0; i < n; i++) {
		struct child *e = find(c, spec->task_id, found[i].pid);

		if (spec->npids >= ROVER_MAX_PIDS) {
			err = -E2BIG;
			break;
		}
		/* Checked by the launcher with the spawn's pids, watched by the worker. */
		spec->pids[spec->npids++] = found[i].pid;
		if (e) {
			close(e->pidfd);
			e->pidfd = -1;
			e->state = C_FIRST;
		}
		added++;
	}
	if (err) {
		children__stop(c, spec->task_id);
		return err;
	}
	return (int)added;
}

void children__stop(struct children *c, uint64_t task_id)
{
	for (size_t i = c->n; i-- > 0;)
		if (c->v[i].task_id == task_id)
			del(c, &c->v[i]);
	for (size_t i = 0; i < c->ntasks; i++)
		if (c->tasks[i] == task_id) {
			c->tasks[i] = c->tasks[--c->ntasks];
			break;
		}
}

int children__active(const struct children *c)
{
	return c && c->ntasks;
}

unsigned children__period_ms(const struct children *c)
{
	return c->probe ? CHILDREN_TICK_MS : CHILDREN_LIST_MS;
}

size_t children__tick(struct children *c, struct child_event *ret, size_t max)
{
	int32_t last = last_pid(c);
	size_t n = 0;

	if (!c->ntasks)
		return 0;
	if (!last || !c->last_pid || last < c->last_pid ||
	    last - c->last_pid > CHILDREN_PROBE_MAX) {
		c->last_pid = last;
		return list_all(c, ret, max);
	}
	/* Only the pids given out since the last look, in order: parents before children. */
	for (int32_t pid = c->last_pid + 1; pid > c->last_pid && pid <= last && n < max; pid++) {
		int32_t ppid;
		uint64_t st;

		if (!procmatch__stat(c->dirfd, pid, &ppid, &st))
			n += consider(c, pid, ppid, st, ret + n, max - n);
	}
	c->last_pid = last;
	return n;
}

int children__settle(struct children *c, uint64_t task_id, int32_t pid, int on)
{
	struct child *e = find(c, task_id, pid);
	int live;

	if (!e || e->state != C_PENDING)
		return 0;
	live = on && !e->gone;
	if (!live) {
		del(c, e);
		return 0;
	}
	e->state = C_MEMBER;
	return 1;
}

int children__fd(const struct children *c)
{
	return c ? c->epfd : -1;
}

size_t children__exits(struct children *c, struct child_event *ret, size_t max)
{
	struct epoll_event evs[64];
	size_t n = 0;
	int got = epoll_wait(c->epfd, evs, 64, 0);

	for (int i = 0; i < got; i++) {
		int32_t pid = (int32_t)(evs[i].data.u64 >> 32);
		int fd = (int)(uint32_t)evs[i].data.u64;

		for (size_t k = 0; k < c->n; k++) {
			struct child *e = &c->v[k];

			if (e->pid != pid || e->pidfd != fd)
				continue;
			if (e->state == C_PENDING) {
				/* Settled (and forgotten) when the launcher answers. */
				e->gone = 1;
				epoll_ctl(c->epfd, EPOLL_CTL_DEL, fd, NULL);
				break;
			}
			if (n < max)
				ret[n++] = (struct child_event){ .task_id = e->task_id,
								 .pid = pid,
								 .ppid = e->ppid };
			del(c, e);
			break;
		}
	}
	return n;
}
