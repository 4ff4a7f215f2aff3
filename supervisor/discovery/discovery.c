// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/config/procmatch.h"
#include "common/log.h"
#include "supervisor/discovery/discovery.h"
#include "supervisor/discovery/k8s.h"

/*
 * What a scan reads. The directory listing of /proc (getdents) gives the pids; a pid not in
 * the table is new: its stat (start time) and cmdline are read and matched. A pid missing from
 * the listing has exited and is dropped. A known pid is read again (stat, then cmdline, which
 * is matched again only when its hash changed) only when due: at each of the DISC_YOUNG_SCANS
 * scans after it was first seen or changed (wrappers that exec soon after they start: `sh -c
 * exec app`), then once every DISC_RECHECK_SCANS scans, spread by pid so that each scan reads
 * about 1/DISC_RECHECK_SCANS of them. Nothing cheaper tells an exec: it keeps the pid, the
 * start time and /proc/PID's inode, and no field of a file we would not read anyway changes.
 * A pid reused between two listings is told by its start time at the next of these reads.
 *
 * The listing itself is most of a scan's cost on a host of many processes (the kernel looks
 * up a dentry for each pid it lists: 1.2% of a core for 10 000 pids a second here), so most
 * scans do without it. The kernel gives pids out in increasing order, wrapping at pid_max, and
 * /proc/loadavg's last field is the last one it gave out: the pids after the previous scan's
 * value up to this one's are the only new ones, each looked up alone (its status tells a
 * process from another thread, which also takes a pid). A process with an entity holds a
 * pidfd in an epoll set: the kernel makes it readable when the process ends, and one
 * epoll_wait a scan returns those that ended, so telling exits costs what exits there were,
 * not a syscall per process (2000 of them: 0.45% of a core on a host starting 20 processes a
 * second). Where no pidfd could be had (descriptors short, a kernel before 5.3), the process
 * is checked alive when tasks came or went (loadavg's count of tasks or its last pid moved)
 * with kill and signal 0, the one signal the supervisor's filter lets through; a process due for
 * its exec check has its command line read (its stat only when that changed: a reused pid
 * is a new one of the range); the others are checked alive when due, and all
 * of them at the full listing, which comes every DISC_RECHECK_SCANS scans, and at once when
 * the range wrapped or is wider than DISC_PROBE_MAX pids. This needs /proc to be of our own
 * pid namespace (loadavg counts in the reader's): when it is not (a container given the
 * host's /proc), every scan lists. A pid set by hand (clone3's set_tid, ns_last_pid: CRIU)
 * can fall outside the range: it is found at the next full listing.
 *
 * Memory per known process, matching or not: the 32-byte record below, plus 2 index slots of
 * 4 bytes per record allocated (capacity doubles: 40 bytes each, at most 80 just after a
 * growth); a process with an entity also holds a descriptor. Growth is the only allocation
 * of a scan, and follows new processes.
 */
struct disc_proc {
	int32_t pid;
	uint32_t cmd_hash;  /* of its command line: an exec or an argv rewrite changes it */
	uint64_t starttime; /* /proc/PID/stat field 22: tells a reused pid apart */
	uint16_t seen;	    /* the last scan (low 16 bits) whose listing had it */
	uint16_t due;	    /* the scan (low 16 bits) at which it is read again */
	int16_t entity;	    /* index into entities, -1: matched no finder */
	uint8_t young;	    /* scans left at which it is read every time */
	uint8_t pad;
	int32_t pidfd; /* with an entity: in discovery.epfd until it ends; else -1 */
};

_Static_assert(sizeof(struct disc_proc) == 32, "the per-process cost stated above");
_Static_assert(DISC_MAX_ENTITIES <= INT16_MAX, "entity indexes are int16_t");
_Static_assert(DISC_RECHECK_SCANS < 32768 / 2, "due scans compare in 16 bits");

/* New pids looked up one by one at most; more take a listing. */
#define DISC_PROBE_MAX 1024

/* Descriptors left to the rest of the supervisor (clients, tasks, gRPC) below the limit. */
#define DISC_FDS_KEPT 256

/* Processes followed at most: /proc/sys/kernel/pid_max's highest value. */
#define DISC_MAX_PROCS (4 * 1024 * 1024)

/*
 * A process in a container (its cgroup names a container id): Kubernetes discovery's record,
 * beside its disc_proc. What the analyzers need is kept (the launcher's answer is asked once),
 * so that a pod or service change renders its entities again without reading anything.
 * About 200 bytes plus its command line, for the processes of containers only.
 */
#define DISC_K8S_IDS 2
#define DISC_K8S_ENTS 8 /* entities of one process: one per matching analyzer */
#define DISC_MAX_KPROCS 65536

struct disc_kproc {
	int32_t pid;
	uint8_t nids, nents;
	uint64_t starttime;
	struct k8s_cgroup_id ids[DISC_K8S_IDS];
	int16_t ents[DISC_K8S_ENTS];
	char *cmdline, *argv0, *exe, *cwd;
};

/*
 * What a render fills, on the stack, each name at its bound; entity_add keeps it packed
 * (struct disc_entity's strings in one allocation of their lengths, strs below).
 */
struct disc_draft {
	char layer[DISC_NAME_LEN];
	char service[DISC_NAME_LEN];
	char instance[DISC_NAME_LEN];
	char process[DISC_NAME_LEN];
	char labels[DISC_MAX_LABELS][DISC_NAME_LEN];
	int nlabels;
	int pid;
	char cmdline[DISC_CMDLINE_LEN];
	int k8s;
	char pod[DISC_NAME_LEN], container[DISC_NAME_LEN], ns[DISC_NAME_LEN];
	char container_ip[64], host_ip[64];
};

struct disc_slot {
	struct disc_entity e;
	char *strs; /* what e's strings point into, owned */
	uint64_t seen;
	int used;
	int oldest_pid; /* during a scan's end */
	uint64_t oldest_start;
};

struct discovery {
	const struct rover_config *cfg;
	const struct host_facts *host;
	char proc_root[256];
	disc_proc_info_fn info;
	void *info_arg;
	pthread_mutex_t lock;
	uint64_t scan;
	uint64_t generation;
	struct disc_proc *procs; /* dense: [0, nprocs) are live */
	size_t nprocs, cap;
	int32_t *index; /* 2 * cap slots (a power of two): proc index + 1, 0 empty */
	size_t nslots;
	struct disc_slot *ents;
	size_t nents;
	char last_err[256]; /* the last render error logged: each distinct one is logged once */
	void *mctx;	    /* procmatch__context_new() */
	struct k8s_client *k8s;
	struct disc_kproc *kprocs;
	size_t nkprocs, kcap;
	int probe; /* 1: new pids from loadavg's last pid; 0: list /proc; -1: not known yet */
	int32_t last_pid; /* loadavg's last pid at the previous scan, 0: none */
	int32_t tasks;	  /* and its count of tasks */
	uint64_t k8s_gen; /* the store's generation the entities were rendered for */
	int k8s_dirty;	  /* processes came or went since */
	int epfd;	  /* the pidfds of processes with an entity; -1: none (kill(pid, 0)) */
	int kick[2];	  /* a byte after a scan that left entities to report; -1: none */
	size_t npidfds, max_pidfds;
};

/* The addresses of e's string fields (its labels included); returns how many. */
#define ENT_MAX_STRS (10 + DISC_MAX_LABELS)
static int ent_strs(struct disc_entity *e, const char **f[ENT_MAX_STRS])
{
	int n = 0;

	f[n++] = &e->layer;
	f[n++] = &e->service;
	f[n++] = &e->instance;
	f[n++] = &e->process;
	f[n++] = &e->cmdline;
	f[n++] = &e->pod;
	f[n++] = &e->container;
	f[n++] = &e->ns;
	f[n++] = &e->container_ip;
	f[n++] = &e->host_ip;
	for (int i = 0; i < e->nlabels; i++)
		f[n++] = &e->labels[i];
	return n;
}

/* Bytes e's strings take, their NULs included. */
static size_t ent_size(const struct disc_entity *e)
{
	struct disc_entity c = *e;
	const char **f[ENT_MAX_STRS];
	int n = ent_strs(&c, f);
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += strlen(*f[i]) + 1;
	return len;
}

/* Copies e's strings to buf (ent_size(e) bytes of room) and points e at the copies. */
static size_t ent_move(struct disc_entity *e, char *buf)
{
	const char **f[ENT_MAX_STRS];
	int n = ent_strs(e, f);
	size_t off = 0;

	for (int i = 0; i < n; i++) {
		size_t len = strlen(*f[i]) + 1;

		memcpy(buf + off, *f[i], len);
		*f[i] = buf + off;
		off += len;
	}
	return off;
}

/* Gives the slot's entity strings of its own (whatever they pointed to, its old ones
 * included, which are freed then). 0 or -ENOMEM (the slot unchanged). */
static int slot_own(struct disc_slot *s)
{
	char *strs = malloc(ent_size(&s->e));

	if (!strs)
		return -ENOMEM;
	ent_move(&s->e, strs);
	free(s->strs);
	s->strs = strs;
	return 0;
}

static void slot_release(struct disc_slot *s)
{
	free(s->strs);
	s->strs = NULL;
	s->used = 0;
}

int host_facts__gather(struct host_facts *ret)
{
	struct host_facts h = { 0 };
	struct ifaddrs *ifa = NULL;
	unsigned char r[16];
	struct utsname u;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -EIO;
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* UUID version 4 */
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(h.instance_id, sizeof(h.instance_id),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
		 r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
		 r[15]);
	if (!uname(&u))
		snprintf(h.host_name, sizeof(h.host_name), "%s", u.nodename);
	if (!getifaddrs(&ifa)) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			int fam, k;

			if (!i->ifa_addr || !i->ifa_name)
				continue;
			fam = i->ifa_addr->sa_family;
			if (fam != AF_INET && fam != AF_INET6)
				continue;
			for (k = 0; k < h.nifs; k++)
				if (!strcmp(h.ifs[k].name, i->ifa_name))
					break;
			if (k == h.nifs) {
				if (h.nifs == (int)(sizeof(h.ifs) / sizeof(h.ifs[0])))
					continue;
				snprintf(h.ifs[h.nifs++].name, sizeof(h.ifs[0].name), "%s",
					 i->ifa_name);
			}
			if (fam == AF_INET && !h.ifs[k].v4[0]) {
				inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
					  h.ifs[k].v4, sizeof(h.ifs[k].v4));
				if (!h.host_ip[0] && !(i->ifa_flags & IFF_LOOPBACK))
					snprintf(h.host_ip, sizeof(h.host_ip), "%s", h.ifs[k].v4);
			} else if (fam == AF_INET6 && !h.ifs[k].v6[0]) {
				inet_ntop(AF_INET6,
					  &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
					  h.ifs[k].v6, sizeof(h.ifs[k].v6));
			}
		}
		freeifaddrs(ifa);
	}
	if (!h.host_ip[0])
		snprintf(h.host_ip, sizeof(h.host_ip), "127.0.0.1");
	*ret = h;
	return 0;
}

static int host_ip(void *arg, const char *ifname, int family6, char *buf, size_t len)
{
	const struct host_facts *h = arg;

	for (int i = 0; i < h->nifs; i++) {
		const char *ip = family6 ? h->ifs[i].v6 : h->ifs[i].v4;

		if (strcmp(h->ifs[i].name, ifname))
			continue;
		if (!ip[0])
			return -ENOENT;
		snprintf(buf, len, "%s", ip);
		return 0;
	}
	/*
	 * Upstream's default instance name asks for "en0", which Linux hosts rarely have: rather
	 * than skip every process, a missing interface gives the host's address, said once.
	 */
	if (!family6) {
		static int warned;

		if (!warned++)
			log_warn("discovery: no interface '%s'; using the host address %s instead",
				 ifname, h->host_ip);
		snprintf(buf, len, "%s", h->host_ip);
		return 0;
	}
	return -ENODEV;
}

struct discovery *discovery__new(const struct rover_config *cfg, const struct host_facts *host,
				 const char *proc_root, disc_proc_info_fn info, void *info_arg)
{
	struct discovery *d = calloc(1, sizeof(*d));
	struct rlimit rl;

	if (!d)
		return NULL;
	d->epfd = -1;
	d->kick[0] = d->kick[1] = -1;
	d->cfg = cfg;
	d->host = host;
	d->info = info;
	d->info_arg = info_arg;
	snprintf(d->proc_root, sizeof(d->proc_root), "%s", proc_root ? proc_root : "/proc");
	d->probe = -1;
	d->cap = 1024;
	d->nslots = 2 * d->cap;
	d->procs = calloc(d->cap, sizeof(*d->procs));
	d->ents = calloc(DISC_MAX_ENTITIES, sizeof(*d->ents));
	d->index = calloc(d->nslots, sizeof(*d->index));
	if (!d->procs || !d->ents || !d->index) {
		discovery__free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->mctx = procmatch__context_new();
	if (!d->mctx) {
		discovery__free(d);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	/* Pidfds up to the descriptor limit less what the rest of the supervisor may hold. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur > DISC_FDS_KEPT)
		d->max_pidfds = (size_t)(rl.rlim_cur - DISC_FDS_KEPT);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pipe2(d->kick, O_CLOEXEC | O_NONBLOCK))
		d->kick[0] = d->kick[1] = -1; /* the report thread then looks every 250 ms */
	return d;
}

static void kproc_clear(struct disc_kproc *kp)
{
	free(kp->cmdline);
	free(kp->argv0);
	free(kp->exe);
	free(kp->cwd);
	memset(kp, 0, sizeof(*kp));
}

void discovery__set_k8s(struct discovery *d, struct k8s_client *k)
{
	d->k8s = k;
}

void discovery__free(struct discovery *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nkprocs; i++)
		kproc_clear(&d->kprocs[i]);
	free(d->kprocs);
	procmatch__context_free(d->mctx);
	for (size_t i = 0; d->procs && i < d->nprocs; i++)
		if (d->procs[i].pidfd >= 0)
			close(d->procs[i].pidfd);
	if (d->epfd >= 0)
		close(d->epfd);
	for (int i = 0; i < 2; i++)
		if (d->kick[i] >= 0)
			close(d->kick[i]);
	free(d->index);
	free(d->procs);
	for (size_t i = 0; i < d->nents; i++)
		slot_release(&d->ents[i]);
	free(d->ents);
	free(d);
}

/* Reads a small file under dirfd into buf (NUL-terminated); length, or -errno. */
static ssize_t read_small(int dirfd, const char *path, char *buf, size_t len)
{
	return procmatch__read(dirfd, path, buf, len);
}

static int read_starttime(int dirfd, int pid, uint64_t *ret)
{
	return procmatch__stat(dirfd, pid, NULL, ret);
}

/* The command line with NULs as spaces; argv0 gets the basename of its first word. */
static int read_cmdline(int dirfd, int pid, char *buf, size_t len, char *argv0, size_t argv0len)
{
	return procmatch__cmdline(dirfd, pid, buf, len, argv0, argv0len);
}

static size_t pid_slot(const struct discovery *d, int pid)
{
	return ((size_t)(uint32_t)pid * 2654435761u) & (d->nslots - 1);
}

static void index_add(struct discovery *d, size_t i)
{
	size_t h = pid_slot(d, d->procs[i].pid);

	while (d->index[h])
		h = (h + 1) & (d->nslots - 1);
	d->index[h] = (int32_t)i + 1;
}

/* The slot holding pid, or nslots. */
static size_t slot_of(const struct discovery *d, int pid)
{
	for (size_t h = pid_slot(d, pid); d->index[h]; h = (h + 1) & (d->nslots - 1))
		if (d->procs[d->index[h] - 1].pid == pid)
			return h;
	return d->nslots;
}

static struct disc_proc *proc_find(struct discovery *d, int pid)
{
	size_t h = slot_of(d, pid);

	return h == d->nslots ? NULL : &d->procs[d->index[h] - 1];
}

/* Linear probing's deletion: later entries of the run move back into the hole. */
static void index_del(struct discovery *d, size_t h)
{
	size_t mask = d->nslots - 1, j = h;

	d->index[h] = 0;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!d->index[j])
			return;
		home = pid_slot(d, d->procs[d->index[j] - 1].pid);
		/* Stays when its home lies cyclically in (h, j]. */
		if (h <= j ? (h < home && home <= j) : (h < home || home <= j))
			continue;
		d->index[h] = d->index[j];
		d->index[j] = 0;
		h = j;
	}
}

/* Closes p's pidfd, which takes it out of the epoll set. */
static void pidfd_drop(struct discovery *d, struct disc_proc *p)
{
	if (p->pidfd < 0)
		return;
	close(p->pidfd);
	p->pidfd = -1;
	d->npidfds--;
}

/*
 * A pidfd for p (of our own pid namespace's /proc only: the pids of another /proc are not
 * ours to open), watched for the process's end. Without one, kill(pid, 0) tells.
 */
static void pidfd_watch(struct discovery *d, struct disc_proc *p)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (p->pidfd >= 0 || d->epfd < 0 || d->probe != 1 || d->npidfds >= d->max_pidfds)
		return;
	fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (fd < 0)
		return;
	/* Both halves: a record found by pid holds this very descriptor, not a reused one. */
	ev.data.u64 = (uint64_t)(uint32_t)fd << 32 | (uint32_t)p->pid;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return;
	}
	p->pidfd = fd;
	d->npidfds++;
}

/* Marks the processes whose pidfd says they ended as not seen by this scan. */
static void pidfd_exits(struct discovery *d, uint16_t now)
{
	struct epoll_event ev[64];
	int n;

	do {
		n = d->epfd < 0 ? 0 : epoll_wait(d->epfd, ev, 64, 0);
		for (int i = 0; i < n; i++) {
			struct disc_proc *p = proc_find(d, (int32_t)(uint32_t)ev[i].data.u64);

			if (!p || p->pidfd != (int)(ev[i].data.u64 >> 32))
				continue; /* not reached: a closed descriptor leaves the set */
			pidfd_drop(d, p);
			p->seen = (uint16_t)(now - 1);
		}
	} while (n == 64);
}

/* Forgets procs[i]: the last record moves into its place. */
static void proc_del(struct discovery *d, size_t i)
{
	size_t last = d->nprocs - 1;

	pidfd_drop(d, &d->procs[i]);
	index_del(d, slot_of(d, d->procs[i].pid));
	if (i != last) {
		d->index[slot_of(d, d->procs[last].pid)] = (int32_t)i + 1;
		d->procs[i] = d->procs[last];
	}
	d->nprocs--;
}

/* A new record for pid (its index entry made), or NULL when full or out of memory. */
static struct disc_proc *proc_add(struct discovery *d, int pid)
{
	if (d->nprocs == d->cap) {
		size_t cap = 2 * d->cap;
		struct disc_proc *procs;
		int32_t *index;

		if (cap > DISC_MAX_PROCS)
			return NULL;
		procs = realloc(d->procs, cap * sizeof(*procs));
		if (!procs)
			return NULL;
		d->procs = procs;
		index = calloc(2 * cap, sizeof(*index));
		if (!index)
			return NULL;
		free(d->index);
		d->index = index;
		d->cap = cap;
		d->nslots = 2 * cap;
		for (size_t i = 0; i < d->nprocs; i++)
			index_add(d, i);
	}
	d->procs[d->nprocs] = (struct disc_proc){ .pid = pid, .entity = -1, .pidfd = -1 };
	index_add(d, d->nprocs);
	return &d->procs[d->nprocs++];
}

/*
 * Its next read: the next scan while young, else the next scan of its phase (a hash of its pid
 * modulo DISC_RECHECK_SCANS), so that no process waits more than DISC_RECHECK_SCANS scans and
 * each scan re-reads an even share.
 */
static void schedule(struct discovery *d, struct disc_proc *p)
{
	uint64_t phase = (uint32_t)p->pid * 2654435761u % DISC_RECHECK_SCANS;
	uint64_t next = d->scan + 1;

	if (p->young) {
		p->young--;
		p->due = (uint16_t)next;
		return;
	}
	p->due = (uint16_t)(next + (phase + DISC_RECHECK_SCANS - next % DISC_RECHECK_SCANS) %
					   DISC_RECHECK_SCANS);
}

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void log_render_error(struct discovery *d, const char *what, const char *err)
{
	char line[256];

	snprintf(line, sizeof(line), "%s: %s", what, err);
	if (strcmp(line, d->last_err)) {
		log_warn("discovery: %s, skipping the process", line);
		snprintf(d->last_err, sizeof(d->last_err), "%s", line);
	}
}

static int render(struct discovery *d, const struct tmpl *t, const struct tmpl_ctx *ctx,
		  const char *what, char *out, size_t len)
{
	char err[200];

	if (!t) {
		out[0] = 0;
		return 0;
	}
	if (tmpl__render(t, ctx, out, len, err, sizeof(err))) {
		log_render_error(d, what, err);
		return -EINVAL;
	}
	return 0;
}

/* Renders the entity of a matching process. 0, or -errno when a template fails. */
static int make_entity(struct discovery *d, const struct config_finder *f, int pid,
		       const char *cmdline, const char *argv0, const char **groups, int ngroups,
		       struct disc_draft *e)
{
	struct msg_proc_info info = { 0 };
	struct tmpl_ctx ctx = { 0 };
	const char *base;
	char labels[DISC_NAME_LEN * 2], *save = NULL, *tok;
	int err;

	err = d->info ? d->info(d->info_arg, pid, &info) : -ENOSYS;
	if (err == -ESRCH)
		return err;
	/* Without the launcher's answer ExeName and friends fall back to the command line. */
	if (err)
		info.exe[0] = info.cwd[0] = 0;
	base = strrchr(info.exe, '/');
	ctx.instance_id = d->host->instance_id;
	ctx.host_name = d->host->host_name;
	ctx.exe_path = info.exe[0] ? info.exe : argv0;
	ctx.exe_name = info.exe[0] ? (base ? base + 1 : info.exe) : argv0;
	ctx.cmdline = cmdline;
	ctx.pid = pid;
	ctx.workdir = info.cwd;
	ctx.exe_name_in_cmdline = argv0;
	ctx.layer = f->layer;
	for (int i = 0; i < ngroups && i < TMPL_MAX_GROUPS; i++)
		ctx.groups[i] = groups[i];
	ctx.ngroups = ngroups < TMPL_MAX_GROUPS ? ngroups : TMPL_MAX_GROUPS;
	ctx.host_ip = host_ip;
	ctx.host_ip_arg = (void *)d->host;

	memset(e, 0, sizeof(*e));
	snprintf(e->layer, sizeof(e->layer), "%s", f->layer ? f->layer : "OS_LINUX");
	if (render(d, f->service_name, &ctx, "service_name", e->service, sizeof(e->service)) ||
	    render(d, f->instance_name, &ctx, "instance_name", e->instance, sizeof(e->instance)) ||
	    render(d, f->process_name, &ctx, "process_name", e->process, sizeof(e->process)) ||
	    render(d, f->labels, &ctx, "labels", labels, sizeof(labels)))
		return -EINVAL;
	if (!e->service[0] || !e->process[0]) {
		log_render_error(d, "names", "a service or process name rendered empty");
		return -EINVAL;
	}
	if (d->cfg->cluster_name && d->cfg->cluster_name[0]) {
		char svc[DISC_NAME_LEN];

		snprintf(svc, sizeof(svc), "%s::%s", d->cfg->cluster_name, e->service);
		memcpy(e->service, svc, sizeof(svc));
	}
	for (tok = strtok_r(labels, ",", &save); tok && e->nlabels < DISC_MAX_LABELS;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (*tok)
			snprintf(e->labels[e->nlabels++], DISC_NAME_LEN, "%s", tok);
	}
	e->pid = pid;
	snprintf(e->cmdline, sizeof(e->cmdline), "%s", cmdline);
	return 0;
}

static int same_entity(const struct disc_entity *a, const struct disc_entity *b)
{
	if (strcmp(a->layer, b->layer) || strcmp(a->service, b->service) ||
	    strcmp(a->instance, b->instance) || strcmp(a->process, b->process) ||
	    a->nlabels != b->nlabels)
		return 0;
	for (int i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i], b->labels[i]))
			return 0;
	return 1;
}

/* The draft as an entity whose strings are the draft's. */
static struct disc_entity *draft_view(const struct disc_draft *r, struct disc_entity *e)
{
	*e = (struct disc_entity){
		.layer = r->layer,
		.service = r->service,
		.instance = r->instance,
		.process = r->process,
		.nlabels = r->nlabels,
		.pid = r->pid,
		.cmdline = r->cmdline,
		.k8s = r->k8s,
		.pod = r->pod,
		.container = r->container,
		.ns = r->ns,
		.container_ip = r->container_ip,
		.host_ip = r->host_ip,
	};
	for (int i = 0; i < r->nlabels; i++)
		e->labels[i] = r->labels[i];
	return e;
}

/* Finds or adds the entity; index, or -ENOSPC / -ENOMEM. */
static int entity_add(struct discovery *d, const struct disc_draft *e)
{
	struct disc_entity view_mem, *view = draft_view(e, &view_mem);
	struct disc_slot *s;
	int free_slot = -1;

	for (size_t i = 0; i < d->nents; i++) {
		if (d->ents[i].used && same_entity(&d->ents[i].e, view))
			return (int)i;
		if (!d->ents[i].used && free_slot < 0)
			free_slot = (int)i;
	}
	if (free_slot < 0) {
		if (d->nents == DISC_MAX_ENTITIES)
			return -ENOSPC;
		free_slot = (int)d->nents++;
	}
	s = &d->ents[free_slot];
	s->e = *view;
	s->e.generation = ++d->generation;
	s->strs = NULL;
	if (slot_own(s))
		return -ENOMEM;
	s->used = 1;
	/* Kubernetes entities are added after a scan's count of processes per entity began:
	 * a new one starts that count empty. */
	s->oldest_pid = 0;
	s->oldest_start = UINT64_MAX;
	return free_slot;
}


/* Which finder matches cmdline first; its match groups into groups (pointers into store). */
static const struct config_finder *match(struct discovery *d, const char *cmdline,
					 const char **groups, int *ngroups, char *store,
					 size_t storelen)
{
	for (size_t i = 0; i < d->cfg->discovery.nfinders; i++) {
		const struct config_finder *f = &d->cfg->discovery.finders[i];
		int rc;

		if (!f->re)
			continue;
		/* Command lines are written by any user: a bounded match, whatever the regex. */
		rc = procmatch__match(f->re, d->mctx, cmdline, groups, TMPL_MAX_GROUPS, ngroups,
				      store, storelen);
		if (rc < 0)
			return NULL;
		if (rc)
			return f;
	}
	return NULL;
}

/* ---- Kubernetes: containers' processes and the analyzers ---- */

static struct disc_kproc *kproc_find(struct discovery *d, int pid)
{
	for (size_t i = 0; i < d->nkprocs; i++)
		if (d->kprocs[i].pid == pid)
			return &d->kprocs[i];
	return NULL;
}

static void kproc_del(struct discovery *d, size_t i)
{
	kproc_clear(&d->kprocs[i]);
	if (i != d->nkprocs - 1) {
		d->kprocs[i] = d->kprocs[d->nkprocs - 1];
		memset(&d->kprocs[d->nkprocs - 1], 0, sizeof(d->kprocs[0]));
	}
	d->nkprocs--;
	d->k8s_dirty = 1;
}

/* The containers /proc/PID/cgroup names, into ids; how many (0: not in a container). */
static int read_container_ids(int dirfd, int pid, struct k8s_cgroup_id *ids)
{
	char path[32], buf[8192];

	snprintf(path, sizeof(path), "%d/cgroup", pid);
	if (read_small(dirfd, path, buf, sizeof(buf)) <= 0)
		return 0;
	return k8sobj__cgroup_ids(buf, ids, DISC_K8S_IDS);
}

/* Records (or refreshes) a container's process; lock held. 0 or -ENOMEM/-ENOSPC. */
static int kproc_put(struct discovery *d, int pid, uint64_t st, struct k8s_cgroup_id *ids, int nids,
		     const char *cmdline, const char *argv0, const struct msg_proc_info *info)
{
	struct disc_kproc *kp = kproc_find(d, pid);

	if (!kp) {
		if (d->nkprocs == d->kcap) {
			size_t cap = d->kcap ? 2 * d->kcap : 64;
			struct disc_kproc *n;

			if (cap > DISC_MAX_KPROCS)
				return -ENOSPC;
			n = realloc(d->kprocs, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			d->kprocs = n;
			d->kcap = cap;
		}
		kp = &d->kprocs[d->nkprocs++];
		memset(kp, 0, sizeof(*kp));
	} else {
		kproc_clear(kp);
	}
	kp->pid = pid;
	kp->starttime = st;
	kp->nids = (uint8_t)nids;
	for (int i = 0; i < nids; i++)
		kp->ids[i] = ids[i];
	kp->cmdline = strdup(cmdline);
	kp->argv0 = strdup(argv0);
	kp->exe = strdup(info ? info->exe : "");
	kp->cwd = strdup(info ? info->cwd : "");
	d->k8s_dirty = 1;
	if (!kp->cmdline || !kp->argv0 || !kp->exe || !kp->cwd) {
		kproc_del(d, (size_t)(kp - d->kprocs));
		return -ENOMEM;
	}
	return 0;
}

struct k8s_render {
	struct discovery *d;
	struct disc_kproc *kp;
};

static void tmpl_kvs(const struct k8s_kv *in, int n, struct tmpl_kv *out)
{
	for (int i = 0; i < n; i++) {
		out[i].key = in[i].key;
		out[i].value = in[i].value;
	}
}

/* Under the store's lock (k8s__with_container): every active analyzer that matches gives an
 * entity; each is added (or found) and kept on the process. */
static void on_container(void *arg, const struct k8s_view *v)
{
	struct k8s_render *r = arg;
	struct discovery *d = r->d;
	struct disc_kproc *kp = r->kp;
	const struct k8s_pod *p = v->pod;
	struct tmpl_kv labels[K8S_MAX_LABELS], env[K8S_MAX_ENV], owners[K8S_MAX_CHAIN];
	const char *names[K8S_MAX_CONTAINERS];
	struct tmpl_pod tp = { 0 };
	struct tmpl_container tc = { 0 };
	struct tmpl_ctx ctx = { 0 };
	const char *base = strrchr(kp->exe, '/');

	tmpl_kvs(p->labels, p->nlabels, labels);
	tmpl_kvs(v->container->env, v->container->nenv, env);
	tmpl_kvs(v->owners, v->nowners, owners);
	for (int i = 0; i < p->ncontainers; i++)
		names[i] = p->containers[i].name;
	tp.name = p->name;
	tp.ns = p->ns;
	tp.node = p->node;
	tp.service_name = v->service_name;
	tp.labels = labels;
	tp.nlabels = p->nlabels;
	tp.containers = names;
	tp.ncontainers = p->ncontainers;
	tp.owners = owners;
	tp.nowners = v->nowners;
	tc.name = v->container->name;
	tc.id = v->container->id;
	tc.env = env;
	tc.nenv = v->container->nenv;

	ctx.instance_id = d->host->instance_id;
	ctx.host_name = d->host->host_name;
	ctx.exe_path = kp->exe[0] ? kp->exe : kp->argv0;
	ctx.exe_name = kp->exe[0] ? (base ? base + 1 : kp->exe) : kp->argv0;
	ctx.cmdline = kp->cmdline;
	ctx.pid = kp->pid;
	ctx.workdir = kp->cwd;
	ctx.exe_name_in_cmdline = kp->argv0;
	ctx.host_ip = host_ip;
	ctx.host_ip_arg = (void *)d->host;
	ctx.pod = &tp;
	ctx.container = &tc;

	for (size_t a = 0; a < d->cfg->discovery.nanalyzers && kp->nents < DISC_K8S_ENTS; a++) {
		const struct config_analyzer *an = &d->cfg->discovery.analyzers[a];
		struct disc_draft e;
		char err[200];
		int match = 1, idx;

		if (!an->active)
			continue;
		for (size_t f = 0; f < an->nfilters && match; f++) {
			if (tmpl__filter(an->filters[f], &ctx, &match, err, sizeof(err))) {
				log_render_error(d, "analyzer filter", err);
				match = 0;
			}
		}
		if (!match)
			continue;
		memset(&e, 0, sizeof(e));
		ctx.layer = an->layer;
		snprintf(e.layer, sizeof(e.layer), "%s", an->layer ? an->layer : "");
		if (render(d, an->service_name, &ctx, "service_name", e.service,
			   sizeof(e.service)) ||
		    render(d, an->instance_name, &ctx, "instance_name", e.instance,
			   sizeof(e.instance)) ||
		    render(d, an->process_name, &ctx, "process_name", e.process, sizeof(e.process)))
			continue;
		if (!e.service[0] || !e.instance[0] || !e.process[0]) {
			log_render_error(d, "names",
					 "a service, instance or process name rendered "
					 "empty");
			continue;
		}
		/* Upstream's rule: the cluster prefixes a service that has none. */
		if (d->cfg->cluster_name && d->cfg->cluster_name[0] && !strstr(e.service, "::")) {
			char svc[DISC_NAME_LEN];

			snprintf(svc, sizeof(svc), "%s::%s", d->cfg->cluster_name, e.service);
			memcpy(e.service, svc, sizeof(svc));
		}
		for (size_t l = 0; l < an->nlabels && e.nlabels < DISC_MAX_LABELS; l++)
			snprintf(e.labels[e.nlabels++], DISC_NAME_LEN, "%s", an->labels[l]);
		e.pid = kp->pid;
		snprintf(e.cmdline, sizeof(e.cmdline), "%s", kp->cmdline);
		e.k8s = 1;
		snprintf(e.pod, sizeof(e.pod), "%s", p->name);
		snprintf(e.container, sizeof(e.container), "%s", v->container->name);
		snprintf(e.ns, sizeof(e.ns), "%s", p->ns ? p->ns : "");
		snprintf(e.container_ip, sizeof(e.container_ip), "%s", p->ip);
		snprintf(e.host_ip, sizeof(e.host_ip), "%s",
			 p->host_ip && p->host_ip[0] ? p->host_ip : d->host->host_ip);
		idx = entity_add(d, &e);
		if (idx < 0) {
			log_render_error(d, "entities", "too many, ignoring new ones");
			return;
		}
		/* Facts that are not part of the identity follow the pod. */
		if (strcmp(d->ents[idx].e.container_ip, e.container_ip)) {
			struct disc_slot *slot = &d->ents[idx];
			const char *was = slot->e.container_ip;

			slot->e.container_ip = e.container_ip;
			if (slot_own(slot))
				slot->e.container_ip = was; /* the next render tries again */
		}
		kp->ents[kp->nents++] = (int16_t)idx;
	}
}

/* Renders every container process's entities again when the store or the processes changed. */
static void k8s_pass(struct discovery *d)
{
	uint64_t gen = k8s__generation(d->k8s);

	if (gen == d->k8s_gen && !d->k8s_dirty)
		return;
	d->k8s_gen = gen;
	d->k8s_dirty = 0;
	for (size_t i = 0; i < d->nkprocs; i++) {
		struct disc_kproc *kp = &d->kprocs[i];
		struct k8s_render r = { d, kp };

		kp->nents = 0;
		for (int k = 0; k < kp->nids; k++)
			if (k8s__with_container(d->k8s, &kp->ids[k], on_container, &r))
				break;
	}
}

/*
 * A new pid, or a known one that is due (p): reads it and matches it when new or changed.
 * Returns with the lock held, as on entry; when the process went, or matching must be tried
 * again, a known record is left unseen so that this scan drops it.
 */
static void scan_one(struct discovery *d, int dirfd, int pid, struct disc_proc *p)
{
	char cmdline[DISC_CMDLINE_LEN], argv0[DISC_CMDLINE_LEN];
	char store[DISC_CMDLINE_LEN + TMPL_MAX_GROUPS];
	const char *groups[TMPL_MAX_GROUPS];
	uint16_t now = (uint16_t)d->scan;
	const struct config_finder *f;
	struct disc_draft e;
	int ngroups = 0, idx = -1;
	uint32_t hash;
	uint64_t st;

	if (read_starttime(dirfd, pid, &st))
		goto gone;
	/* A kernel thread or a zombie has none: followed all the same, matching nothing. */
	if (read_cmdline(dirfd, pid, cmdline, sizeof(cmdline), argv0, sizeof(argv0)))
		cmdline[0] = argv0[0] = 0;
	hash = hash_str(cmdline);
	if (p && p->starttime == st && p->cmd_hash == hash) {
		schedule(d, p);
		return; /* matched or not, as it was */
	}
	if (d->k8s) {
		struct k8s_cgroup_id ids[DISC_K8S_IDS];
		int nids = cmdline[0] ? read_container_ids(dirfd, pid, ids) : 0;
		struct disc_kproc *kp = kproc_find(d, pid);

		if (nids) {
			struct msg_proc_info info = { 0 };
			int err;

			/* The launcher's answer (exe, cwd) once per process, as below. */
			pthread_mutex_unlock(&d->lock);
			err = d->info ? d->info(d->info_arg, pid, &info) : -ENOSYS;
			pthread_mutex_lock(&d->lock);
			if (err == -ESRCH)
				goto gone;
			if (kproc_put(d, pid, st, ids, nids, cmdline, argv0, err ? NULL : &info))
				log_render_error(d, "container processes",
						 "too many to follow, ignoring new ones");
		} else if (kp) {
			kproc_del(d, (size_t)(kp - d->kprocs));
		}
	}
	f = cmdline[0] && d->cfg->discovery.vm_active
		    ? match(d, cmdline, groups, &ngroups, store, sizeof(store))
		    : NULL;
	if (f) {
		int err;

		/* The lock is dropped while the launcher answers: readers never wait on it. Only
		 * scans change the records, so p stays where it is. */
		pthread_mutex_unlock(&d->lock);
		err = make_entity(d, f, pid, cmdline, argv0, groups, ngroups, &e);
		pthread_mutex_lock(&d->lock);
		if (err == -ESRCH)
			goto gone;
		if (!err) {
			idx = entity_add(d, &e);
			if (idx < 0) {
				log_render_error(d, "entities", "too many, ignoring new ones");
				goto gone; /* tried again next scan */
			}
		}
	}
	if (!p)
		p = proc_add(d, pid);
	if (!p) {
		log_render_error(d, "processes", "too many to follow, ignoring new ones");
		return;
	}
	/* The same process (an exec) keeps its pidfd while it has an entity; a new one does not. */
	if (p->starttime != st || idx < 0)
		pidfd_drop(d, p);
	*p = (struct disc_proc){ .pid = pid,
				 .starttime = st,
				 .cmd_hash = hash,
				 .seen = now,
				 .entity = (int16_t)idx,
				 .young = DISC_YOUNG_SCANS,
				 .pidfd = p->pidfd };
	if (idx >= 0)
		pidfd_watch(d, p);
	schedule(d, p);
	return;
gone:
	if (p)
		p->seen = (uint16_t)(now - 1);
}

/* Whether proc_root is our pid namespace's /proc: its "self" is us. */
static int own_namespace(int dirfd)
{
	char buf[64];

	return read_small(dirfd, "self/stat", buf, sizeof(buf)) > 0 && atoi(buf) == getpid();
}

/* loadavg's last two fields: tasks (threads) that exist and the last pid given out, in the
 * reader's pid namespace ("0.10 0.20 0.30 RUNNING/TASKS LAST"). */
static int read_loadavg(int dirfd, int32_t *ret_tasks, int32_t *ret_last)
{
	char buf[128], *p, *slash, *end;
	long last, tasks;

	if (read_small(dirfd, "loadavg", buf, sizeof(buf)) <= 0)
		return -EIO;
	p = strrchr(buf, ' ');
	slash = strrchr(buf, '/');
	if (!p || !slash || slash > p)
		return -EINVAL;
	last = strtol(p + 1, &end, 10);
	if (end == p + 1 || (*end && *end != '\n') || last <= 0 || last > INT32_MAX)
		return -EINVAL;
	tasks = strtol(slash + 1, &end, 10);
	if (end == slash + 1 || end != p || tasks < 0 || tasks > INT32_MAX)
		return -EINVAL;
	*ret_tasks = (int32_t)tasks;
	*ret_last = (int32_t)last;
	return 0;
}

/* Whether pid is a process (its thread group's leader) rather than one of its threads. */
static int is_process(int dirfd, int pid)
{
	char path[32], buf[512];
	const char *t;

	snprintf(path, sizeof(path), "%d/status", pid);
	if (read_small(dirfd, path, buf, sizeof(buf)) <= 0)
		return 0;
	t = strstr(buf, "\nTgid:");
	return t && atoi(t + 6) == pid;
}

/* Whether pid exists (signal 0 sends nothing; EPERM: another user's, alive). Only in our
 * own pid namespace, as the lookups of new pids. */
static int alive(int pid)
{
	return !kill(pid, 0) || errno == EPERM;
}

/*
 * A due process in a scan without the listing: its command line alone (a reused pid is a new
 * pid of the range, and its stat is read then), read in full again only when it changed.
 */
static void recheck(struct discovery *d, int dirfd, struct disc_proc *p)
{
	char cmdline[DISC_CMDLINE_LEN], argv0[DISC_CMDLINE_LEN];

	if (read_cmdline(dirfd, p->pid, cmdline, sizeof(cmdline), argv0, sizeof(argv0)))
		cmdline[0] = 0; /* a kernel thread, or gone (seen at its check or the listing) */
	if (hash_str(cmdline) == p->cmd_hash)
		schedule(d, p);
	else
		scan_one(d, dirfd, p->pid, p); /* p stays: only a new pid adds records */
}

/*
 * A scan without the listing: the pids (from, to] are the new ones (see the top). Whether a
 * process with an entity still lives is asked only when tasks came or went since the last
 * scan (exits: loadavg's task count moved, or pids were given out).
 */
static void probe_scan(struct discovery *d, int dirfd, int32_t from, int32_t to, int exits)
{
	uint16_t now = (uint16_t)d->scan;

	for (size_t k = 0; k < d->nprocs; k++) {
		struct disc_proc *p = &d->procs[k];

		p->seen = now;
		if ((int16_t)(uint16_t)(p->due - now) <= 0)
			recheck(d, dirfd, p);
		else if (exits && p->entity >= 0 && p->pidfd < 0 && !alive(p->pid))
			p->seen = (uint16_t)(now - 1);
	}
	pidfd_exits(d, now);
	for (size_t k = 0; k < d->nkprocs && exits; k++) {
		struct disc_proc *p;

		if (alive(d->kprocs[k].pid))
			continue;
		p = proc_find(d, d->kprocs[k].pid);
		if (p)
			p->seen = (uint16_t)(now - 1);
	}
	for (int32_t pid = from + 1; pid > from && pid <= to; pid++) {
		struct disc_proc *p = proc_find(d, pid);

		if (!is_process(dirfd, pid)) {
			/* Gone already, or a thread: a record of that pid is a process that went. */
			if (p)
				p->seen = (uint16_t)(now - 1);
			continue;
		}
		if (p)
			p->seen = now;
		scan_one(d, dirfd, pid, p);
	}
}

int discovery__scan(struct discovery *d)
{
	struct dirent *de;
	int32_t last = 0, tasks = 0;
	int full;
	DIR *dir;
	uint16_t now;
	int n = 0, unreported = 0;

	if (!d->cfg->discovery.present || (!d->cfg->discovery.vm_active && !d->k8s))
		return 0;
	dir = opendir(d->proc_root);
	if (!dir)
		return -errno;
	pthread_mutex_lock(&d->lock);
	d->scan++;
	now = (uint16_t)d->scan;
	if (d->probe < 0)
		d->probe = own_namespace(dirfd(dir));
	/* Read before the listing or the lookups: a pid given out meanwhile is looked up (again)
	 * at the next scan. */
	if (d->probe && read_loadavg(dirfd(dir), &tasks, &last))
		last = 0;
	full = !last || !d->last_pid || d->scan % DISC_RECHECK_SCANS == 1 || last < d->last_pid ||
	       last - d->last_pid > DISC_PROBE_MAX;
	if (!full)
		probe_scan(d, dirfd(dir), d->last_pid, last,
			   last != d->last_pid || tasks != d->tasks);
	d->last_pid = last;
	d->tasks = tasks;
	/* readdir is getdents64 underneath: one call per 32 KiB of names, no per-pid syscall. */
	while (full && (de = readdir(dir))) {
		struct disc_proc *p;
		char *end;
		long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		p = proc_find(d, (int)pid);
		if (p) {
			p->seen = now;
			if ((int16_t)(uint16_t)(p->due - now) > 0)
				continue; /* known and not due: nothing read */
		}
		scan_one(d, dirfd(dir), (int)pid, p);
	}
	closedir(dir);
	/* Exited processes are forgotten; an entity lives while one of its processes does. */
	for (size_t i = 0; i < d->nents; i++) {
		d->ents[i].oldest_pid = 0;
		d->ents[i].oldest_start = UINT64_MAX;
	}
	for (size_t k = d->nprocs; k-- > 0;) {
		struct disc_proc *p = &d->procs[k];
		struct disc_slot *e;

		if (p->seen != now) {
			proc_del(d, k); /* the record moved here was visited already */
			continue;
		}
		if (p->entity < 0 || (size_t)p->entity >= d->nents)
			continue;
		e = &d->ents[p->entity];
		if (p->starttime < e->oldest_start) {
			e->oldest_start = p->starttime;
			e->oldest_pid = p->pid;
		}
	}
	if (d->k8s) {
		/* Container processes that exited (or whose pid was reused) go; the rest render
		 * again if anything changed, then count for their entities as above. */
		for (size_t k = d->nkprocs; k-- > 0;) {
			struct disc_proc *p = proc_find(d, d->kprocs[k].pid);

			if (!p || p->starttime != d->kprocs[k].starttime)
				kproc_del(d, k);
		}
		k8s_pass(d);
		for (size_t k = 0; k < d->nkprocs; k++) {
			const struct disc_kproc *kp = &d->kprocs[k];

			for (int j = 0; j < kp->nents; j++) {
				struct disc_slot *e = &d->ents[kp->ents[j]];

				if (kp->starttime < e->oldest_start) {
					e->oldest_start = kp->starttime;
					e->oldest_pid = kp->pid;
				}
			}
		}
	}
	for (size_t i = 0; i < d->nents; i++) {
		struct disc_slot *s = &d->ents[i];

		if (!s->used)
			continue;
		if (!s->oldest_pid) {
			slot_release(s);
			continue;
		}
		/* The oldest process stands for the entity; the backend hears of a change. */
		if (s->e.pid != s->oldest_pid) {
			s->e.pid = s->oldest_pid;
			s->e.process_id[0] = 0;
			s->e.tried_ms = 0;
			s->e.generation = ++d->generation;
		}
		unreported += !s->e.process_id[0];
		n++;
	}
	pthread_mutex_unlock(&d->lock);
	/* The report thread sleeps until there is something to report (or the first scan). */
	if (d->kick[1] >= 0 && (unreported || d->scan == 1))
		(void)!write(d->kick[1], "s", 1); /* full: a byte waits already */
	return n;
}

int discovery__k8s_procs(struct discovery *d,
			 void (*fn)(void *arg, int32_t pid, const struct disc_entity *e), void *arg)
{
	int n = 0;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nkprocs; i++) {
		const struct disc_kproc *kp = &d->kprocs[i];

		if (!kp->nents || kp->ents[0] < 0 || (size_t)kp->ents[0] >= d->nents ||
		    !d->ents[kp->ents[0]].used)
			continue;
		fn(arg, kp->pid, &d->ents[kp->ents[0]].e);
		n++;
	}
	pthread_mutex_unlock(&d->lock);
	return n;
}

int discovery__entities(struct discovery *d, struct disc_entity **ret, size_t *ret_n)
{
	struct disc_entity *out;
	size_t n = 0, size = 0;
	char *strs;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nents; i++)
		if (d->ents[i].used) {
			size += ent_size(&d->ents[i].e);
			n++;
		}
	out = malloc((n ? n : 1) * sizeof(*out) + size);
	if (!out) {
		pthread_mutex_unlock(&d->lock);
		return -ENOMEM;
	}
	strs = (char *)(out + (n ? n : 1));
	n = 0;
	for (size_t i = 0; i < d->nents; i++)
		if (d->ents[i].used) {
			out[n] = d->ents[i].e;
			strs += ent_move(&out[n++], strs);
		}
	pthread_mutex_unlock(&d->lock);
	*ret = out;
	*ret_n = n;
	return 0;
}

int discovery__set_process_id(struct discovery *d, int pid, const char *layer, const char *service,
			      const char *instance, const char *process, const char *process_id)
{
	int found = 0;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nents && !found; i++) {
		struct disc_entity *e = &d->ents[i].e;

		if (!d->ents[i].used || e->pid != pid || strcmp(e->layer, layer) ||
		    strcmp(e->service, service) || strcmp(e->instance, instance) ||
		    strcmp(e->process, process))
			continue;
		snprintf(e->process_id, sizeof(e->process_id), "%s", process_id);
		found = 1;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

static int kproc_in(const struct disc_kproc *kp, int entity)
{
	for (int j = 0; j < kp->nents; j++)
		if (kp->ents[j] == entity)
			return 1;
	return 0;
}

int discovery__pids_of(struct discovery *d, const char *process_id, int32_t *pids, int max)
{
	int n = 0;

	if (!process_id[0])
		return 0;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nents; i++) {
		if (!d->ents[i].used || strcmp(d->ents[i].e.process_id, process_id))
			continue;
		for (size_t k = 0; k < d->nprocs && n < max; k++)
			if (d->procs[k].entity == (int)i)
				pids[n++] = d->procs[k].pid;
		for (size_t k = 0; k < d->nkprocs && n < max; k++)
			if (kproc_in(&d->kprocs[k], (int)i))
				pids[n++] = d->kprocs[k].pid;
	}
	pthread_mutex_unlock(&d->lock);
	return n;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

int discovery__net_procs_of(struct discovery *d, const char *process_id,
			    struct msg_net_process *ret, int max)
{
	int n = 0;

	if (!process_id[0])
		return 0;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nents; i++) {
		const struct disc_entity *e = &d->ents[i].e;

		if (!d->ents[i].used || strcmp(e->process_id, process_id))
			continue;
		for (size_t k = 0; k < d->nprocs + d->nkprocs && n < max; k++) {
			struct msg_net_process *p = &ret[n];

			if (k < d->nprocs ? d->procs[k].entity != (int)i
					  : !kproc_in(&d->kprocs[k - d->nprocs], (int)i))
				continue;
			memset(p, 0, sizeof(*p));
			p->pid = k < d->nprocs ? d->procs[k].pid : d->kprocs[k - d->nprocs].pid;
			copy_str(p->process_id, sizeof(p->process_id), e->process_id);
			copy_str(p->service, sizeof(p->service), e->service);
			copy_str(p->instance, sizeof(p->instance), e->instance);
			copy_str(p->name, sizeof(p->name), e->process);
			/* Layers are short names (OS_LINUX, K8S_SERVICE): none is near 63 bytes. */
			copy_str(p->layer, sizeof(p->layer), e->layer);
			n++;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return n;
}

void discovery__mark_tried(struct discovery *d, const struct disc_entity *ents, size_t n,
			   uint64_t now_ms)
{
	pthread_mutex_lock(&d->lock);
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < d->nents; i++) {
			struct disc_entity *e = &d->ents[i].e;

			if (d->ents[i].used && e->pid == ents[k].pid && same_entity(e, &ents[k])) {
				e->tried_ms = now_ms;
				break;
			}
		}
	}
	pthread_mutex_unlock(&d->lock);
}

size_t discovery__unreported(struct discovery *d, uint64_t now_ms, uint64_t retry_ms)
{
	size_t n = 0;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nents; i++) {
		const struct disc_entity *e = &d->ents[i].e;

		if (d->ents[i].used && !e->process_id[0] &&
		    (!e->tried_ms || now_ms - e->tried_ms >= retry_ms))
			n++;
	}
	pthread_mutex_unlock(&d->lock);
	return n;
}

uint64_t discovery__scans(struct discovery *d)
{
	uint64_t n;

	pthread_mutex_lock(&d->lock);
	n = d->scan;
	pthread_mutex_unlock(&d->lock);
	return n;
}

int discovery__kick_fd(const struct discovery *d)
{
	return d->kick[0];
}
