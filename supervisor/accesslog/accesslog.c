// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "supervisor/accesslog/accesslog.h"

/* A traced process as last said: its pid and a hash of who it is (a change is said again). */
struct alog_proc {
	int32_t pid;
	uint32_t hash;
	int seen; /* in the current refresh */
};

struct alog_mod {
	const struct rover_config *cfg;
	struct alog_proc *procs; /* sorted by pid */
	size_t nprocs;
	/* this refresh: */
	struct msg_alog_proc *cur;
	size_t ncur;
	uint64_t refused;
	struct alog_changes ch;
	/* The node's interfaces, read at start (before the sandbox closes /sys and netlink). */
	struct msg_alog_netif ifs[ALOG_MAX_IFS];
	uint32_t nifs;
};

static void copy(char *dst, size_t len, const char *s);

static void read_ifs(struct alog_mod *m)
{
	struct if_nameindex *ifs = if_nameindex();
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	for (struct if_nameindex *f = ifs; f && f->if_index && m->nifs < ALOG_MAX_IFS; f++) {
		struct msg_alog_netif *n = &m->ifs[m->nifs++];
		struct ifreq r = { 0 };

		n->index = (int32_t)f->if_index;
		copy(n->name, sizeof(n->name), f->if_name);
		copy(r.ifr_name, sizeof(r.ifr_name), f->if_name);
		if (sock >= 0 && !ioctl(sock, SIOCGIFMTU, &r))
			n->mtu = r.ifr_mtu;
	}
	if (sock >= 0)
		close(sock);
	if (ifs)
		if_freenameindex(ifs);
}

struct alog_mod *alog__new(const struct rover_config *cfg)
{
	struct alog_mod *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cfg = cfg;
	read_ifs(m);
	m->procs = calloc(ALOG_MAX_PIDS, sizeof(*m->procs));
	m->cur = calloc(ALOG_MAX_PIDS, sizeof(*m->cur));
	m->ch.procs = calloc(2 * ALOG_MAX_PIDS, sizeof(*m->ch.procs));
	m->ch.targets = calloc(2 * ALOG_MAX_PIDS, sizeof(*m->ch.targets));
	if (!m->procs || !m->cur || !m->ch.procs || !m->ch.targets) {
		alog__free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void alog__free(struct alog_mod *m)
{
	if (!m)
		return;
	free(m->procs);
	free(m->cur);
	free(m->ch.procs);
	free(m->ch.targets);
	free(m);
}

void alog__reset(struct alog_mod *m)
{
	m->nprocs = 0;
}

size_t alog__count(const struct alog_mod *m)
{
	return m->nprocs;
}

static int excluded_ns(const struct rover_config *cfg, const char *ns)
{
	for (size_t i = 0; i < cfg->access_log.nexclude_namespaces; i++)
		if (!strcmp(cfg->access_log.exclude_namespaces[i], ns))
			return 1;
	return 0;
}

/* rover's own roles, when the agent runs in a pod of the node it watches: never traced. */
static int is_rover(int32_t pid)
{
	char path[64], comm[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	return n >= 5 && !strncmp(comm, "rover", 5);
}

static uint32_t fnv(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return (h ^ 0xff) * 16777619u;
}

static void copy(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

/*
 * Upstream's exclude_cluster: a process whose service name is "CLUSTER::name" (discovery
 * prefixes core.cluster_name) with CLUSTER excluded (a comma list).
 */
static int excluded_cluster(const struct rover_config *cfg, const char *service)
{
	const char *xc = cfg->access_log.exclude_cluster,
		   *sep = service ? strstr(service, "::") : NULL;

	while (xc && *xc && sep) {
		size_t n = strcspn(xc, ",");

		while (n && xc[n - 1] == ' ')
			n--;
		if (n && (size_t)(sep - service) == n && !strncmp(service, xc, n))
			return 1;
		xc += strcspn(xc, ",");
		while (*xc == ',' || *xc == ' ')
			xc++;
	}
	return 0;
}

static void on_proc(void *arg, int32_t pid, const struct disc_entity *e)
{
	struct alog_mod *m = arg;
	struct msg_alog_proc *p;

	if (pid <= 0 || !e->k8s || excluded_ns(m->cfg, e->ns ? e->ns : "") ||
	    excluded_cluster(m->cfg, e->service))
		return;
	if (m->ncur >= ALOG_MAX_PIDS) {
		m->refused++;
		return;
	}
	p = &m->cur[m->ncur++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	copy(p->ns, sizeof(p->ns), e->ns);
	copy(p->service, sizeof(p->service), e->service);
	copy(p->pod, sizeof(p->pod), e->pod);
	copy(p->container, sizeof(p->container), e->container);
	copy(p->process, sizeof(p->process), e->process);
	if (e->container_ip && inet_pton(AF_INET, e->container_ip, p->addr) == 1)
		p->family = AF_INET;
	else if (e->container_ip && inet_pton(AF_INET6, e->container_ip, p->addr) == 1)
		p->family = AF_INET6;
}

static int by_pid(const void *a, const void *b)
{
	int32_t x = ((const struct msg_alog_proc *)a)->pid,
		y = ((const struct msg_alog_proc *)b)->pid;

	return (x > y) - (x < y);
}

static uint32_t hash_of(const struct msg_alog_proc *p)
{
	uint32_t h = 2166136261u;

	h = fnv(h, p->ns);
	h = fnv(h, p->service);
	h = fnv(h, p->pod);
	h = fnv(h, p->container);
	h = fnv(h, p->process);
	for (int i = 0; i < 16; i++)
		h = (h ^ p->addr[i]) * 16777619u;
	return h ^ p->family;
}

int alog__refresh(struct alog_mod *m, struct discovery *d, struct alog_changes *ret)
{
	struct alog_proc *next;
	size_t nnext = 0, i = 0;

	m->ncur = 0;
	m->refused = 0;
	m->ch.nprocs = m->ch.ntargets = 0;
	discovery__k8s_procs(d, on_proc, m);
	/* Processes of several entities come once: the first entity names them. */
	qsort(m->cur, m->ncur, sizeof(*m->cur), by_pid);
	next = malloc((m->ncur ? m->ncur : 1) * sizeof(*next));
	if (!next)
		return -ENOMEM;
	for (size_t c = 0; c < m->ncur; c++) {
		const struct msg_alog_proc *p = &m->cur[c];
		uint32_t h;

		if ((c && m->cur[c - 1].pid == p->pid) || is_rover(p->pid))
			continue;
		h = hash_of(p);
		/* Those said before and gone now. */
		while (i < m->nprocs && m->procs[i].pid < p->pid) {
			m->ch.procs[m->ch.nprocs++] =
				(struct msg_alog_proc){ .pid = m->procs[i].pid, .gone = 1 };
			m->ch.targets[m->ch.ntargets++] =
				(struct msg_task_target){ .pid = m->procs[i].pid, .on = 0 };
			i++;
		}
		if (i < m->nprocs && m->procs[i].pid == p->pid) {
			if (m->procs[i].hash != h)
				m->ch.procs[m->ch.nprocs++] = *p;
			i++;
		} else {
			m->ch.procs[m->ch.nprocs++] = *p;
			m->ch.targets[m->ch.ntargets++] =
				(struct msg_task_target){ .pid = p->pid, .on = 1 };
		}
		next[nnext++] = (struct alog_proc){ .pid = p->pid, .hash = h };
	}
	for (; i < m->nprocs; i++) {
		m->ch.procs[m->ch.nprocs++] =
			(struct msg_alog_proc){ .pid = m->procs[i].pid, .gone = 1 };
		m->ch.targets[m->ch.ntargets++] =
			(struct msg_task_target){ .pid = m->procs[i].pid, .on = 0 };
	}
	memcpy(m->procs, next, nnext * sizeof(*next));
	m->nprocs = nnext;
	free(next);
	m->ch.refused = m->refused;
	*ret = m->ch;
	return 0;
}

void alog__output(const struct alog_mod *m, const char *node_name, uint64_t task_id,
		  struct msg_output_accesslog *ret)
{
	const struct rover_config *cfg = m->cfg;
	struct timespec rt, mono;

	memset(ret, 0, sizeof(*ret));
	ret->task_id = task_id;
	ret->flush_max_count = cfg->access_log.flush_max_count;
	ret->flush_period_ms = (uint32_t)cfg->access_log.flush_period_ms;
	ret->queue_size = cfg->access_log.queue_size;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	ret->boot_unix_ns = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll +
			    ((int64_t)rt.tv_nsec - mono.tv_nsec);
	copy(ret->node_name, sizeof(ret->node_name), node_name);
	copy(ret->cluster, sizeof(ret->cluster), cfg->cluster_name);
	for (size_t i = 0; i < cfg->access_log.nexclude_namespaces && i < ALOG_MAX_EXCLUDE; i++)
		copy(ret->exclude[ret->nexclude++], sizeof(ret->exclude[0]),
		     cfg->access_log.exclude_namespaces[i]);
	memcpy(ret->ifs, m->ifs, sizeof(ret->ifs));
	ret->nifs = m->nifs;
}
