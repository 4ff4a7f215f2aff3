// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/Command.pb-c.h"
#include "ebpf/profiling/Process.pb-c.h"
#include "ebpf/profiling/Profile.pb-c.h"
#include "common/ipc.h"
#include "common/linklog.h"
#include "common/log.h"
#include "common/util.h"
#include "supervisor/backend/backend.h"
#include "supervisor/backend/commands.h"
#include "supervisor/continuous/continuous.h"

#define M_REPORT "/skywalking.v3.EBPFProcessService/reportProcesses"
#define M_KEEPALIVE "/skywalking.v3.EBPFProcessService/keepAlive"
#define M_QUERY "/skywalking.v3.EBPFProfilingService/queryTasks"

/* Tasks waiting for their start time, and task ids already handled (the backend may answer
 * the same task again). Bounded: a backend cannot make the supervisor grow. */
#define MAX_PENDING 64
#define MAX_SEEN 512
#define MAX_RUNNING 64
/* At most this many processes per reportProcesses call; more go in the next call. */
#define REPORT_BATCH 256
#define MAX_BAD_LOGGED 32
/* An entity the backend answered without an id is reported again after this long, not at
 * every round: a backend that never names some entity must not get four reports a second. */
#define REPORT_RETRY_MS 10000
/*
 * A run is forgotten this long after its planned end even if the main loop never says it
 * ended: after its worker stops, its last flush still goes through the shipper.
 */
#define RUN_GRACE_MS 60000

struct bk_running {
	struct sw_task t;
	uint64_t end_ms; /* unix ms */
};

struct backend {
	const struct rover_config *cfg;
	struct oap_conn *conn;
	struct discovery *disc;
	const struct host_facts *host;
	int main_fd;
	int main_hup; /* the task thread no longer polls main_fd: it hung up */
	pthread_t report_thr, task_thr;
	int report_started, task_started;
	volatile int stopping;
	volatile int reported_once; /* discovery ran and its entities were reported */
	int wake[2];		    /* written to on stop: threads sleep in poll on it */

	pthread_mutex_t state_lock;
	struct linklog link; /* when a change of the link is logged */

	/* task thread only */
	int64_t latest_update;
	struct sw_task pending[MAX_PENDING];
	int npending;
	char seen[MAX_SEEN][SW_ID_LEN];
	int nseen, seen_next;
	struct bk_running running[MAX_RUNNING];
	int nrunning;
	struct sw_runs runs;	 /* the workers the backend holds: bounded (commands.h) */
	struct continuous *cont; /* continuous profiling, run by the task thread */
	/* Reasons of bad commands already logged: the backend answers them on every poll. */
	char bad_logged[MAX_BAD_LOGGED][320];
	int nbad, bad_next;
};

static void link_state(struct backend *b, int ok, const struct oap_status *st)
{
	unsigned quiet;
	int say;

	pthread_mutex_lock(&b->state_lock);
	say = linklog__change(&b->link, ok, st ? st->code : -1, now_mono_ms(), &quiet);
	if (say && ok)
		log_info("backend %s reachable", b->cfg->backend.addr);
	else if (say)
		log_warn("backend %s unreachable (%s); retrying with backoff, profiling goes on",
			 b->cfg->backend.addr, st ? st->text : "?");
	if (quiet)
		log_info("backend %s: %u changes of state in the previous 10 minutes not logged (a "
			 "backend failing call after call)",
			 b->cfg->backend.addr, quiet);
	pthread_mutex_unlock(&b->state_lock);
}

/* Sleeps up to ms, or until stop. Returns 1 when stopping. */
static int nap(struct backend *b, uint64_t ms)
{
	struct pollfd p = { .fd = b->wake[0], .events = POLLIN };

	if (b->stopping)
		return 1;
	poll(&p, 1, (int)(ms > 60000 ? 60000 : ms));
	return b->stopping;
}

/* ---- processes ---- */

static Skywalking__V3__EBPFProcessEntityMetadata *entity_msg(const struct disc_entity *e,
							     Skywalking__V3__EBPFProcessEntityMetadata
								     *m,
							     char **labels)
{
	*m = (Skywalking__V3__EBPFProcessEntityMetadata)
		SKYWALKING__V3__EBPFPROCESS_ENTITY_METADATA__INIT;
	m->layer = (char *)e->layer;
	m->servicename = (char *)e->service;
	m->instancename = (char *)e->instance;
	m->processname = (char *)e->process;
	for (int i = 0; i < e->nlabels; i++)
		labels[i] = (char *)e->labels[i];
	m->n_labels = (size_t)e->nlabels;
	m->labels = labels;
	return m;
}

struct report_buf {
	Skywalking__V3__EBPFProcessProperties props[REPORT_BATCH], *pprops[REPORT_BATCH];
	Skywalking__V3__EBPFHostProcessMetadata host[REPORT_BATCH];
	Skywalking__V3__EBPFKubernetesProcessMetadata k8s[REPORT_BATCH];
	Skywalking__V3__EBPFProcessEntityMetadata ent[REPORT_BATCH];
	char *labels[REPORT_BATCH][DISC_MAX_LABELS];
	Skywalking__V3__KeyStringValuePair kv[REPORT_BATCH][7], *pkv[REPORT_BATCH][7];
	char pid[REPORT_BATCH][16];
};

/* reportProcesses for ents[0..n), n <= REPORT_BATCH; stores the ids answered. 0 or -EIO. */
static int report(struct backend *b, const struct disc_entity *ents, size_t n,
		  struct report_buf *rb)
{
	Skywalking__V3__EBPFProcessReportList req = SKYWALKING__V3__EBPFPROCESS_REPORT_LIST__INIT;
	Skywalking__V3__EBPFReportProcessDownstream *ans = NULL;
	struct oap_status st;
	size_t matched = 0;
	int err;

	for (size_t i = 0; i < n; i++) {
		const struct disc_entity *e = &ents[i];
		/* Upstream's properties, in its order (the k8s ones: K/finder.go). */
		const char *hkeys[4] = { "host_ip", "pid", "command_line",
					 "support_ebpf_profiling" };
		const char *hvals[4] = { b->host->host_ip, rb->pid[i], e->cmdline, "true" };
		const char *kkeys[7] = {
			"host_ip", "container_ip", "container_name",	    "pod_name",
			"pid",	   "command_line", "support_ebpf_profiling"
		};
		const char *kvals[7] = { e->host_ip, e->container_ip, e->container, e->pod,
					 rb->pid[i], e->cmdline,      "true" };
		int nk = e->k8s ? 7 : 4;

		snprintf(rb->pid[i], sizeof(rb->pid[i]), "%d", e->pid);
		for (int k = 0; k < nk; k++) {
			rb->kv[i][k] = (Skywalking__V3__KeyStringValuePair)
				SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT;
			rb->kv[i][k].key = (char *)(e->k8s ? kkeys[k] : hkeys[k]);
			rb->kv[i][k].value = (char *)(e->k8s ? kvals[k] : hvals[k]);
			rb->pkv[i][k] = &rb->kv[i][k];
		}
		rb->props[i] = (Skywalking__V3__EBPFProcessProperties)
			SKYWALKING__V3__EBPFPROCESS_PROPERTIES__INIT;
		if (e->k8s) {
			rb->k8s[i] = (Skywalking__V3__EBPFKubernetesProcessMetadata)
				SKYWALKING__V3__EBPFKUBERNETES_PROCESS_METADATA__INIT;
			rb->k8s[i].entity = entity_msg(e, &rb->ent[i], rb->labels[i]);
			rb->k8s[i].pid = e->pid;
			rb->k8s[i].n_properties = (size_t)nk;
			rb->k8s[i].properties = rb->pkv[i];
			rb->props[i].metadata_case =
				SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_K8S_PROCESS;
			rb->props[i].k8sprocess = &rb->k8s[i];
		} else {
			rb->host[i] = (Skywalking__V3__EBPFHostProcessMetadata)
				SKYWALKING__V3__EBPFHOST_PROCESS_METADATA__INIT;
			rb->host[i].entity = entity_msg(e, &rb->ent[i], rb->labels[i]);
			rb->host[i].pid = e->pid;
			rb->host[i].n_properties = (size_t)nk;
			rb->host[i].properties = rb->pkv[i];
			rb->props[i].metadata_case =
				SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_HOST_PROCESS;
			rb->props[i].hostprocess = &rb->host[i];
		}
		rb->pprops[i] = &rb->props[i];
	}
	req.n_processes = n;
	req.processes = rb->pprops;
	req.ebpfagentid = (char *)b->host->instance_id;
	err = oap_conn__call(b->conn, M_REPORT, &req.base,
			     &skywalking__v3__ebpfreport_process_downstream__descriptor,
			     (ProtobufCMessage **)&ans, &st);
	link_state(b, !err, &st);
	if (err)
		return err;
	for (size_t i = 0; i < ans->n_processes; i++) {
		const Skywalking__V3__EBPFProcessDownstream *d = ans->processes[i];
		const Skywalking__V3__EBPFProcessEntityMetadata *e;
		int32_t pid;

		/* Either branch: the entity as sent, and the pid, tell which process it is. */
		if (d->process_case ==
			    SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS &&
		    d->hostprocess) {
			e = d->hostprocess->entitymetadata;
			pid = d->hostprocess->pid;
		} else if (d->process_case ==
				   SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_K8S_PROCESS &&
			   d->k8sprocess) {
			e = d->k8sprocess->entitymetadata;
			pid = d->k8sprocess->pid;
		} else {
			continue;
		}
		if (!e || !d->processid || !d->processid[0] ||
		    strlen(d->processid) >= ROVER_SW_ID_LEN)
			continue;
		matched += (size_t)discovery__set_process_id(b->disc, pid, e->layer, e->servicename,
							     e->instancename, e->processname,
							     d->processid);
	}
	if (matched < n)
		log_debug("reportProcesses: %zu of %zu processes got an id", matched, n);
	protobuf_c_message_free_unpacked(&ans->base, NULL);
	return 0;
}

static int keep_alive(struct backend *b, const struct disc_entity *ents, size_t n)
{
	Skywalking__V3__EBPFProcessPingPkgList req =
		SKYWALKING__V3__EBPFPROCESS_PING_PKG_LIST__INIT;
	Skywalking__V3__KeyStringValuePair kv = SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT;
	Skywalking__V3__KeyStringValuePair *pkv = &kv;
	Skywalking__V3__EBPFProcessPingPkg *pk = calloc(n ? n : 1, sizeof(*pk));
	Skywalking__V3__EBPFProcessPingPkg **ppk = calloc(n ? n : 1, sizeof(*ppk));
	Skywalking__V3__EBPFProcessEntityMetadata *em = calloc(n ? n : 1, sizeof(*em));
	char *(*labels)[DISC_MAX_LABELS] = calloc(n ? n : 1, sizeof(*labels));
	ProtobufCMessage *ans = NULL;
	struct oap_status st;
	int err = -ENOMEM;

	if (!pk || !ppk || !em || !labels)
		goto cleanup;
	kv.key = "support_ebpf_profiling";
	kv.value = "true";
	for (size_t i = 0; i < n; i++) {
		pk[i] = (Skywalking__V3__EBPFProcessPingPkg)
			SKYWALKING__V3__EBPFPROCESS_PING_PKG__INIT;
		pk[i].entitymetadata = entity_msg(&ents[i], &em[i], labels[i]);
		pk[i].n_properties = 1;
		pk[i].properties = &pkv;
		ppk[i] = &pk[i];
	}
	req.n_processes = n;
	req.processes = ppk;
	req.ebpfagentid = (char *)b->host->instance_id;
	err = oap_conn__call(b->conn, M_KEEPALIVE, &req.base, &skywalking__v3__commands__descriptor,
			     &ans, &st);
	link_state(b, !err, &st);
	if (ans)
		protobuf_c_message_free_unpacked(ans, NULL);
cleanup:
	free(pk);
	free(ppk);
	free(em);
	free(labels);
	return err;
}

/*
 * Reports what has no id yet (new processes, or all of them on a re-report), in batches.
 * A failure leaves the rest for the next round: ids come only from answers.
 */
static int report_entities(struct backend *b, struct disc_entity *ents, size_t n, int all,
			   struct report_buf *rb)
{
	struct disc_entity *batch = malloc(REPORT_BATCH * sizeof(*batch));
	size_t nb = 0;
	int err = 0;

	if (!batch)
		return -ENOMEM;
	uint64_t now = now_mono_ms();

	for (size_t i = 0; i <= n && !err; i++) {
		if (i < n &&
		    (all || (!ents[i].process_id[0] &&
			     (!ents[i].tried_ms || now - ents[i].tried_ms >= REPORT_RETRY_MS))))
			batch[nb++] = ents[i];
		if (nb && (nb == REPORT_BATCH || i == n)) {
			err = report(b, batch, nb, rb);
			if (!err)
				discovery__mark_tried(b->disc, batch, nb, now);
			nb = 0;
		}
	}
	free(batch);
	return err;
}

/*
 * How long the report thread may sleep: 250 ms while entities wait for an id or the first
 * report has not been made (retries come at their time), else until the next heartbeat or
 * the backoff's next attempt, 5 s at most: a scan that leaves an entity to report wakes it
 * sooner (discovery__kick_fd). It was a look every 250 ms, four wakeups a second.
 */
static uint64_t report_wait_ms(struct backend *b, uint64_t next_hb, const struct oap_backoff *bo)
{
	uint64_t now = now_mono_ms(), due = next_hb;

	if (!b->reported_once || discovery__kick_fd(b->disc) < 0 ||
	    discovery__unreported(b->disc, now, 0))
		return 250;
	if (bo->next_ms > due)
		due = bo->next_ms;
	if (due <= now)
		return 1;
	return due - now > 5000 ? 5000 : due - now;
}

/* Sleeps up to ms, until a scan leaves something to report or the backend stops. */
static void report_nap(struct backend *b, uint64_t ms)
{
	int kick = discovery__kick_fd(b->disc);
	struct pollfd p[2] = { { .fd = b->wake[0], .events = POLLIN },
			       { .fd = kick, .events = POLLIN } };
	char buf[64];

	if (b->stopping)
		return;
	poll(p, 2, (int)ms);
	if (kick >= 0)
		while (read(kick, buf, sizeof(buf)) > 0)
			;
}

static void *report_main(void *arg)
{
	struct backend *b = arg;
	struct report_buf *rb = malloc(sizeof(*rb));
	uint64_t hb = b->cfg->discovery.heartbeat_period_ms ? b->cfg->discovery.heartbeat_period_ms
							    : 20000;
	uint32_t every = b->cfg->discovery.properties_report_period
				 ? b->cfg->discovery.properties_report_period
				 : 10;
	uint64_t next_hb = now_mono_ms() + hb, beats = 0;
	struct oap_backoff bo;

	if (!rb)
		return NULL;
	oap_backoff__init(&bo, 1000, 30000);
	while (!b->stopping) {
		struct disc_entity *ents = NULL;
		size_t n = 0;
		uint64_t now = now_mono_ms();

		/* Discovery ran and nothing waits for an id: tasks may be looked up. */
		if (!b->reported_once && discovery__scans(b->disc) &&
		    !discovery__unreported(b->disc, now, 0))
			b->reported_once = 1;
		/* Copies of the entities only when there is something to send. */
		if (oap_backoff__ready(&bo, now) && discovery__scans(b->disc) &&
		    (now >= next_hb || discovery__unreported(b->disc, now, REPORT_RETRY_MS)) &&
		    !discovery__entities(b->disc, &ents, &n)) {
			int err = 0;

			if (now >= next_hb) {
				beats++;
				next_hb = now + hb;
				/* Every Nth heartbeat re-reports everything, as upstream does. */
				if (beats % every == 0)
					err = report_entities(b, ents, n, 1, rb);
				else if (n)
					err = keep_alive(b, ents, n);
			}
			if (!err)
				err = report_entities(b, ents, n, 0, rb);
			if (err) {
				oap_backoff__failed(&bo, now_mono_ms());
			} else {
				oap_backoff__success(&bo);
				/* Tasks name processes by the ids these answers gave. */
				b->reported_once = 1;
			}
			free(ents);
		}
		report_nap(b, report_wait_ms(b, next_hb, &bo));
	}
	free(rb);
	return NULL;
}

/* ---- tasks ---- */

static int seen_task(struct backend *b, const char *id)
{
	for (int i = 0; i < b->nseen; i++)
		if (!strcmp(b->seen[i], id))
			return 1;
	return 0;
}

static void remember_task(struct backend *b, const char *id)
{
	snprintf(b->seen[b->seen_next], SW_ID_LEN, "%s", id);
	b->seen_next = (b->seen_next + 1) % MAX_SEEN;
	if (b->nseen < MAX_SEEN)
		b->nseen++;
}

static void send_stop(struct backend *b, const char *sw_task_id)
{
	struct msg_bk_stop s = { 0 };

	ipc_strlcpy(s.sw_task_id, sw_task_id, sizeof(s.sw_task_id));
	if (ipc_send(b->main_fd, MSG_BK_STOP, &s, sizeof(s), -1))
		log_warn("task %s: stopping: main loop unreachable", sw_task_id);
}

static void keep_running(struct backend *b, const struct sw_task *t, uint64_t run_ms)
{
	if (b->nrunning == MAX_RUNNING)
		return;
	b->running[b->nrunning].t = *t;
	b->running[b->nrunning++].end_ms = now_unix_ms() + run_ms;
}

/* A worker's duration: what is left of the task, within what a worker accepts. */
static uint32_t worker_ms(uint64_t run_ms)
{
	if (run_ms > 24ull * 3600 * 1000)
		return 24u * 3600 * 1000;
	return run_ms < 100 ? 100 : (uint32_t)run_ms;
}

/*
 * Live pids of a process id counted beyond what a task takes: enough to say how many were
 * left out, without copying all of a process id that names thousands.
 */
#define COUNT_PIDS_MAX 4096

/* What a task could not take on this host, said once when it starts. */
struct left_out {
	uint32_t busy;	   /* process ids already in as many tasks of the kind as they may be */
	uint32_t ids_cut;  /* process ids none of whose pids fit in the task */
	uint32_t pids_cut; /* pids over ROVER_MAX_PIDS, those of ids_cut included */
};

static void log_left_out(const struct sw_task *t, const struct left_out *l)
{
	if (l->busy && t->target_type == TASK_NETWORK)
		log_warn("task %s: %u of its processes left out: already in %d NETWORK task(s)",
			 t->task_id, l->busy, SW_MAX_NET_TASKS_PER_PROCESS);
	else if (l->busy)
		log_warn("task %s: %u of its processes skipped: %u already in %d tasks", t->task_id,
			 l->busy, l->busy, SW_MAX_TASKS_PER_PROCESS);
	if (l->ids_cut || l->pids_cut || t->ids_left_out)
		log_warn("task %s: %u process id(s) and %u pid(s) left out: one task takes %d "
			 "process ids and %d pids, in the order the backend lists them",
			 t->task_id, l->ids_cut + t->ids_left_out, l->pids_cut, SW_MAX_PROCESSES,
			 ROVER_MAX_PIDS);
}

/*
 * How many of a process id's live pids, of n, a task with npids already may take; the rest
 * counted in l.
 */
static int pids_room(uint32_t npids, int n, struct left_out *l)
{
	int room = ROVER_MAX_PIDS - (int)npids;

	if (!room) {
		l->ids_cut++;
		l->pids_cut += (uint32_t)n;
		return 0;
	}
	if (n > room)
		l->pids_cut += (uint32_t)(n - room);
	return n > room ? room : n;
}

/*
 * A NETWORK task: one rover task over every pid of its processes found here (upstream runs
 * one analysis for all of them). Processes already in SW_MAX_NET_TASKS_PER_PROCESS NETWORK
 * tasks are left out, and so is what is over ROVER_MAX_PIDS pids. Returns 1 when it started,
 * 0 when it could not.
 */
static int start_network(struct backend *b, const struct sw_task *t, uint64_t run_ms)
{
	struct msg_bk_net_start *m = calloc(1, sizeof(*m));
	int32_t *all = calloc(COUNT_PIDS_MAX, sizeof(*all));
	struct left_out l = { 0 };
	int err, started = 0;

	if (!m || !all) {
		log_warn("task %s: %s, skipping", t->task_id, strerror(ENOMEM));
		goto cleanup;
	}
	for (uint32_t i = 0; i < t->nprocess_ids; i++) {
		const char *id = t->process_ids[i];
		int n = discovery__pids_of(b->disc, id, all, COUNT_PIDS_MAX), take;

		if (n <= 0) {
			log_info("task %s: process %s is not one of this host's, skipping it",
				 t->task_id, id);
			continue;
		}
		if (sw_runs__busy(&b->runs, id, TASK_NETWORK)) {
			l.busy++;
			continue;
		}
		take = pids_room(m->net.nprocs, n, &l);
		if (!take)
			continue;
		/* Taken again with the names: the set may have moved since, by a pid or two. */
		n = discovery__net_procs_of(b->disc, id, m->net.procs + m->net.nprocs, take);
		if (n <= 0)
			continue;
		ipc_strlcpy(m->out.process_id[m->out.nprocs++], id, sizeof(m->out.process_id[0]));
		m->net.nprocs += (uint32_t)n;
	}
	log_left_out(t, &l);
	if (!m->out.nprocs) {
		if (l.busy)
			log_warn("task %s: all of its processes here are already in %d NETWORK "
				 "task(s), skipping",
				 t->task_id, SW_MAX_NET_TASKS_PER_PROCESS);
		goto cleanup;
	}
	err = sw_runs__add_set(&b->runs, t->task_id, TASK_NETWORK,
			       (const char(*)[SW_ID_LEN])m->out.process_id, m->out.nprocs,
			       now_unix_ms() + run_ms + RUN_GRACE_MS);
	if (err) {
		log_warn("task %s: over the %d backend workers at once, skipping", t->task_id,
			 SW_MAX_RUNS);
		goto cleanup;
	}
	m->spec.type = TASK_NETWORK;
	m->spec.format = FORMAT_NET_JSON; /* unused: the data goes to the backend */
	m->spec.npids = m->net.nprocs;
	for (uint32_t i = 0; i < m->net.nprocs; i++)
		m->spec.pids[i] = m->net.procs[i].pid;
	m->spec.duration_ms = worker_ms(run_ms);
	m->spec.flush_ms = (uint32_t)b->cfg->profiling.network_report_interval_ms;
	m->spec.attach = b->cfg->profiling.network_attach;
	m->spec.capture_bytes = sw_task__capture_bytes(t);
	m->out.type = TASK_NETWORK;
	m->out.start_unix_ms = now_unix_ms();
	ipc_strlcpy(m->out.sw_task_id, t->task_id, sizeof(m->out.sw_task_id));
	m->net.start_unix_ms = (int64_t)m->out.start_unix_ms;
	ipc_strlcpy(m->net.sw_task_id, t->task_id, sizeof(m->net.sw_task_id));
	m->net.nrules = t->nrules;
	memcpy(m->net.rules, t->rules, sizeof(m->net.rules));
	if (ipc_send(b->main_fd, MSG_BK_NET_START, m, sizeof(*m), -1)) {
		log_warn("task %s: main loop unreachable", t->task_id);
		sw_runs__ended(&b->runs, t->task_id, m->out.process_id[0]);
		goto cleanup;
	}
	keep_running(b, t, run_ms);
	log_info("task %s: NETWORK for %llu ms on %u process(es), %u pid(s), %u sampling rule(s)",
		 t->task_id, (unsigned long long)run_ms, m->out.nprocs, m->net.nprocs, t->nrules);
	started = 1;
cleanup:
	free(m);
	free(all);
	return started;
}

/*
 * Starts t now for run_ms: one rover task, so one worker, for all of its processes found here
 * (upstream runs one profiler per task too), each flush uploaded per process id. Returns 1 when
 * it started, 0 when it could not, -ENOENT when none of its processes is known here (yet).
 */
static int start_task(struct backend *b, const struct sw_task *t, uint64_t run_ms)
{
	struct msg_bk_start *m;
	struct left_out l = { 0 };
	int32_t *all, one;
	int known = 0, started = 0;

	for (uint32_t i = 0; i < t->nprocess_ids && !known; i++)
		known = discovery__pids_of(b->disc, t->process_ids[i], &one, 1) > 0;
	if (!known)
		return -ENOENT;
	/* A new task of the same identity replaces the one running. */
	for (int i = 0; i < b->nrunning; i++) {
		if (!sw_task__same_identity(&b->running[i].t, t) ||
		    !strcmp(b->running[i].t.task_id, t->task_id))
			continue;
		log_info("task %s replaces task %s", t->task_id, b->running[i].t.task_id);
		send_stop(b, b->running[i].t.task_id);
		sw_runs__stopping(&b->runs, b->running[i].t.task_id);
		b->running[i] = b->running[--b->nrunning];
		i--;
	}
	if (t->target_type == TASK_NETWORK)
		return start_network(b, t, run_ms);
	m = calloc(1, sizeof(*m));
	all = calloc(COUNT_PIDS_MAX, sizeof(*all));
	if (!m || !all) {
		log_warn("task %s: %s, skipping", t->task_id, strerror(ENOMEM));
		goto cleanup;
	}
	for (uint32_t i = 0; i < t->nprocess_ids; i++) {
		const char *id = t->process_ids[i];
		int n = discovery__pids_of(b->disc, id, all, COUNT_PIDS_MAX), take;

		if (n <= 0) {
			log_info("task %s: process %s is not one of this host's, skipping it",
				 t->task_id, id);
			continue;
		}
		if (sw_runs__busy(&b->runs, id, t->target_type)) {
			l.busy++;
			continue;
		}
		take = pids_room(m->spec.npids, n, &l);
		for (int k = 0; k < take; k++) {
			m->out.pid_proc[m->out.npids++] =
				(struct msg_bk_pid){ .pid = all[k], .proc = m->out.nprocs };
			m->spec.pids[m->spec.npids++] = all[k];
		}
		if (take)
			ipc_strlcpy(m->out.process_id[m->out.nprocs++], id,
				    sizeof(m->out.process_id[0]));
	}
	/* Not kept to retry: a backend that asks for more than the bounds is not waited for. */
	log_left_out(t, &l);
	if (!m->out.nprocs)
		goto cleanup;
	if (sw_runs__add_set(&b->runs, t->task_id, t->target_type,
			     (const char(*)[SW_ID_LEN])m->out.process_id, m->out.nprocs,
			     now_unix_ms() + run_ms + RUN_GRACE_MS)) {
		log_warn("task %s: over the %d backend workers at once, skipping", t->task_id,
			 SW_MAX_RUNS);
		goto cleanup;
	}
	m->spec.type = t->target_type;
	m->spec.format = FORMAT_FOLDED;
	m->spec.duration_ms = worker_ms(run_ms);
	m->spec.period_us = (uint32_t)b->cfg->profiling.dump_period_us;
	m->spec.flush_ms = (uint32_t)b->cfg->profiling.flush_interval_ms;
	m->out.type = t->target_type;
	m->out.start_unix_ms = now_unix_ms();
	ipc_strlcpy(m->out.sw_task_id, t->task_id, sizeof(m->out.sw_task_id));
	if (ipc_send(b->main_fd, MSG_BK_START, m, sizeof(*m), -1)) {
		log_warn("task %s: main loop unreachable", t->task_id);
		sw_runs__ended(&b->runs, t->task_id, m->out.process_id[0]);
		goto cleanup;
	}
	keep_running(b, t, run_ms);
	log_info("task %s: %s for %llu ms on %u process(es), %u pid(s), one worker", t->task_id,
		 t->target_type == TASK_ON_CPU ? "ON_CPU" : "OFF_CPU", (unsigned long long)run_ms,
		 m->out.nprocs, m->spec.npids);
	started = 1;
cleanup:
	free(m);
	free(all);
	return started;
}

/* Keeps t to try again at each tick until it starts or its time is over. */
static void keep_pending(struct backend *b, const struct sw_task *t, const char *why)
{
	if (b->npending == MAX_PENDING) {
		log_warn("task %s: %d tasks already wait, skipping", t->task_id, MAX_PENDING);
		return;
	}
	b->pending[b->npending++] = *t;
	log_info("task %s %s", t->task_id, why);
}

/*
 * A NETWORK command whose TaskId was seen: a keep-alive (reference network-profiling.md §1:
 * the OAP re-sends the task with a longer FixedTriggerDuration, a newer TaskUpdateTime and,
 * usually, "null" for its config). A running task ends later and gets the rules the command
 * brings; nothing is started again. A task still waiting to start takes it all before it does.
 */
static void renew_task(struct backend *b, struct sw_task *t)
{
	uint32_t cap_s = (uint32_t)(b->cfg->profiling.max_task_duration_ms / 1000);
	struct msg_bk_net_extend *m;
	struct bk_running *r = NULL;
	uint32_t had_rules;

	for (int i = 0; i < b->npending; i++) {
		struct sw_task *p = &b->pending[i];
		/* Counted from its start like a running one: the same rule gives the same end. */
		uint64_t end = p->start_time_ms + (uint64_t)p->duration_s * 1000;

		if (!strcmp(p->task_id, t->task_id)) {
			sw_task__renew(p, &end, t, cap_s);
			return;
		}
	}
	for (int i = 0; i < b->nrunning && !r; i++)
		if (!strcmp(b->running[i].t.task_id, t->task_id))
			r = &b->running[i];
	had_rules = r ? r->t.nrules : 0;
	if (!r || !sw_task__renew(&r->t, &r->end_ms, t, cap_s))
		return;
	if (cap_s && t->duration_s > cap_s)
		log_warn("task %s: kept alive up to profiling.max_task_duration, %u s after its start",
			 t->task_id, cap_s);
	m = calloc(1, sizeof(*m));
	if (!m) {
		log_warn("task %s: keep-alive: %s, ignoring", t->task_id, strerror(ENOMEM));
		return;
	}
	ipc_strlcpy(m->sw_task_id, t->task_id, sizeof(m->sw_task_id));
	m->end_unix_ms = r->end_ms;
	m->nrules = r->t.nrules - had_rules;
	memcpy(m->rules, r->t.rules + had_rules, m->nrules * sizeof(m->rules[0]));
	if (ipc_send(b->main_fd, MSG_BK_NET_EXTEND, m, sizeof(*m), -1)) {
		log_warn("task %s: keep-alive: main loop unreachable", t->task_id);
	} else {
		log_info("task %s: kept alive, now ends in %lld ms, %u sampling rule(s) added",
			 t->task_id, (long long)(r->end_ms - now_unix_ms()), m->nrules);
		sw_runs__extend(&b->runs, t->task_id, r->end_ms + RUN_GRACE_MS);
	}
	free(m);
}

static void handle_task(struct backend *b, struct sw_task *t)
{
	uint32_t asked = t->duration_s;
	uint64_t run_ms = 0;

	if (seen_task(b, t->task_id)) {
		if (t->target_type == TASK_NETWORK)
			renew_task(b, t);
		return;
	}
	remember_task(b, t->task_id);
	if (t->ext_note[0])
		log_warn("task %s: %s%s", t->task_id, t->ext_note,
			 t->nrules ? "" : "; it runs without sampling rules");
	if (sw_task__cap_duration(t, (uint32_t)(b->cfg->profiling.max_task_duration_ms / 1000)))
		log_warn("task %s: %u s asked, runs %u s at most (profiling.max_task_duration)",
			 t->task_id, asked, t->duration_s);
	switch (sw_task__when(t, now_unix_ms(), &run_ms)) {
	case SW_TASK_NOW:
		/* Its processes may not be discovered or reported yet (just after a restart). */
		if (start_task(b, t, run_ms) == -ENOENT)
			keep_pending(b, t, "waits for its processes to be discovered here");
		break;
	case SW_TASK_LATER: {
		char why[64];

		snprintf(why, sizeof(why), "scheduled to start in %lld ms",
			 (long long)(t->start_time_ms - now_unix_ms()));
		keep_pending(b, t, why);
		break;
	}
	case SW_TASK_EXPIRED:
		log_info("task %s ended before it reached this agent, skipping", t->task_id);
		break;
	}
}

static int query(struct backend *b)
{
	Skywalking__V3__EBPFProfilingTaskQuery req = SKYWALKING__V3__EBPFPROFILING_TASK_QUERY__INIT;
	Skywalking__V3__Commands *ans = NULL;
	struct oap_status st;
	struct sw_task *t = malloc(sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	req.roverinstanceid = (char *)b->host->instance_id;
	req.latestupdatetime = b->latest_update;
	err = oap_conn__call(b->conn, M_QUERY, &req.base, &skywalking__v3__commands__descriptor,
			     (ProtobufCMessage **)&ans, &st);
	link_state(b, !err, &st);
	if (err) {
		free(t);
		return err;
	}
	for (size_t i = 0; i < ans->n_commands; i++) {
		char why[256], line[sizeof(why) + 64];

		err = sw_task__parse(ans->commands[i], t, why, sizeof(why));
		if (err == -ENOENT) {
			snprintf(why, sizeof(why), "unknown command '%.64s'",
				 ans->commands[i]->command ? ans->commands[i]->command : "");
		}
		if (err) {
			int seen = 0;

			/*
			 * Logged once per kind: the backend answers the same command on every
			 * poll, and a broken one may answer thousands of commands each with a
			 * value of its own. The kind is the reason up to its quoted value
			 * ("unknown command '", "TaskUpdateTime: not a decimal number '").
			 */
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(why, "'"), why);
			for (int k = 0; k < b->nbad && !seen; k++)
				seen = !strcmp(b->bad_logged[k], line);
			if (!seen) {
				log_warn("backend command skipped: %s", why);
				ipc_strlcpy(b->bad_logged[b->bad_next], line,
					    sizeof(b->bad_logged[0]));
				b->bad_next = (b->bad_next + 1) % MAX_BAD_LOGGED;
				if (b->nbad < MAX_BAD_LOGGED)
					b->nbad++;
			}
			continue;
		}
		if ((int64_t)t->update_time_ms > b->latest_update)
			b->latest_update = (int64_t)t->update_time_ms;
		handle_task(b, t);
	}
	protobuf_c_message_free_unpacked(&ans->base, NULL);
	free(t);
	return 0;
}

static void drain_main(struct backend *b)
{
	static const struct ipc_rule rules[] = {
		{ MSG_BK_ENDED, sizeof(struct msg_bk_ended), sizeof(struct msg_bk_ended), 0, 0 },
		{ MSG_NET_MONITOR, sizeof(struct msg_net_monitor),
		  sizeof(struct msg_net_monitor) +
			  MSG_NET_MONITOR_MAX * sizeof(struct msg_net_monitor_entry),
		  sizeof(struct msg_net_monitor_entry), 0 },
	};
	struct ipc_msg msg = { .fd = -1 };

	for (;;) {
		struct pollfd p = { .fd = b->main_fd, .events = POLLIN };
		const struct msg_bk_ended *e;
		int err;

		if (b->main_hup || poll(&p, 1, 0) <= 0)
			break;
		err = ipc_recv(b->main_fd, rules, 2, &msg);
		if (err == -EINTR || err == -EAGAIN)
			break;
		if (err) {
			/* A stream that failed once is out of step for good: the task thread stops
			 * reading it (else its poll would wake at once, for ever). */
			log_err("backend: the main thread's messages: %s; no more are read",
				strerror(-err));
			b->main_hup = 1;
			break;
		}
		if (msg.type == MSG_NET_MONITOR) {
			if (b->cont)
				continuous__http(b->cont, msg.buf, msg.len, now_mono_ms());
			continue;
		}
		e = msg.buf;
		if (ipc_check_str(e->sw_task_id, sizeof(e->sw_task_id)) ||
		    ipc_check_str(e->process_id, sizeof(e->process_id)))
			break;
		sw_runs__ended(&b->runs, e->sw_task_id, e->process_id);
		/* " done: N samples": the tests and the soak read that number. */
		if (e->err)
			log_warn("task %s on process %s failed (%s)", e->sw_task_id, e->process_id,
				 strerror(e->err));
		else
			log_info("task %s on process %s done: %llu samples uploaded or queued, "
				 "%llu counted in the kernel, %u process id(s)",
				 e->sw_task_id, e->process_id, (unsigned long long)e->samples,
				 (unsigned long long)e->kernel_samples, e->nprocs);
	}
	ipc_msg_release(&msg);
}

static int cont_entities(void *ctx, struct disc_entity **ret, size_t *ret_n)
{
	struct backend *b = ctx;

	return discovery__entities(b->disc, ret, ret_n);
}

/* A task the OAP named for a trigger: started as its own tasks are, and remembered. */
static int cont_start(void *ctx, const struct sw_task *t, uint64_t run_ms)
{
	struct backend *b = ctx;
	int n;

	remember_task(b, t->task_id);
	n = start_task(b, t, run_ms);
	return n > 0 ? n : 0;
}

static int cont_busy(void *ctx, const char *process_id, uint32_t type)
{
	struct backend *b = ctx;

	return sw_runs__busy(&b->runs, process_id, type);
}

/*
 * Continuous profiling's HTTP monitor on the pids of ids (a light NETWORK task the supervisor
 * runs for itself, not one of the OAP's: outside sw_runs' bounds), named name. 0 or -errno.
 */
static int cont_monitor(void *ctx, const char *name, const char (*ids)[SW_ID_LEN], size_t n)
{
	struct backend *b = ctx;
	struct msg_bk_net_start *m = calloc(1, sizeof(*m));
	int err = 0;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < n && m->net.nprocs < ROVER_MAX_PIDS; i++) {
		int k = discovery__net_procs_of(b->disc, ids[i], m->net.procs + m->net.nprocs,
						ROVER_MAX_PIDS - (int)m->net.nprocs);

		if (k > 0)
			m->net.nprocs += (uint32_t)k;
	}
	if (!m->net.nprocs) {
		free(m);
		return -ESRCH;
	}
	m->net.monitor = 1;
	m->spec.type = TASK_NETWORK;
	m->spec.format = FORMAT_NET_JSON;
	m->spec.npids = m->net.nprocs;
	for (uint32_t i = 0; i < m->net.nprocs; i++)
		m->spec.pids[i] = m->net.procs[i].pid;
	m->spec.duration_ms = worker_ms(24ull * 3600 * 1000);
	m->spec.flush_ms = (uint32_t)b->cfg->profiling.continuous_fetch_interval_ms;
	if (m->spec.flush_ms < 100)
		m->spec.flush_ms = 100;
	m->spec.attach = b->cfg->profiling.network_attach;
	/* A request line and a status line are all it reads. */
	m->spec.capture_bytes = 512;
	m->out.type = TASK_NETWORK;
	m->out.start_unix_ms = now_unix_ms();
	ipc_strlcpy(m->out.sw_task_id, name, sizeof(m->out.sw_task_id));
	ipc_strlcpy(m->out.process_id[0], ids[0], sizeof(m->out.process_id[0]));
	m->out.nprocs = 1;
	m->net.start_unix_ms = (int64_t)m->out.start_unix_ms;
	ipc_strlcpy(m->net.sw_task_id, name, sizeof(m->net.sw_task_id));
	if (ipc_send(b->main_fd, MSG_BK_NET_START, m, sizeof(*m), -1))
		err = -EPIPE;
	free(m);
	return err;
}

static void cont_stop(void *ctx, const char *name)
{
	send_stop(ctx, name);
}

/*
 * How long the task thread may sleep: until its next query (or the backoff's next attempt), a
 * running task's end or continuous profiling's next work, and 1 s at most; 200 ms while tasks
 * wait to start (their times are looked at then). A message from the main thread wakes it
 * sooner (task_nap). It was a tick every 200 ms, 5 wakeups a second for nothing most of them.
 */
static uint64_t task_wait_ms(const struct backend *b, uint64_t next, const struct oap_backoff *bo)
{
	uint64_t now = now_mono_ms(), unow = now_unix_ms(), due = next;

	if (b->npending)
		return 200;
	if (bo->next_ms > due)
		due = bo->next_ms;
	for (int i = 0; i < b->nrunning; i++) {
		uint64_t end = b->running[i].end_ms > unow ? now + (b->running[i].end_ms - unow)
							   : now;

		if (end < due)
			due = end;
	}
	if (b->cont) {
		uint64_t c = continuous__due(b->cont, now);

		if (c < due)
			due = c;
	}
	if (due <= now)
		return 1;
	return due - now > 1000 ? 1000 : due - now;
}

/* Sleeps up to ms, or until a message of the main thread comes or the backend stops. */
static int task_nap(struct backend *b, uint64_t ms)
{
	struct pollfd p[2] = { { .fd = b->wake[0], .events = POLLIN },
			       { .fd = b->main_hup ? -1 : b->main_fd, .events = POLLIN } };

	if (b->stopping)
		return 1;
	poll(p, 2, (int)ms);
	/* The main thread's end closed: nothing more comes, and a hang-up would wake at once. */
	if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL))
		b->main_hup = 1;
	return b->stopping;
}

static void *task_main(void *arg)
{
	struct backend *b = arg;
	uint64_t every = b->cfg->profiling.check_interval_ms ? b->cfg->profiling.check_interval_ms
							     : 10000;
	uint64_t next = 0, started_ms = now_mono_ms();
	struct oap_backoff bo;

	oap_backoff__init(&bo, 1000, 30000);
	while (!b->stopping) {
		uint64_t now = now_mono_ms(), unow = now_unix_ms();

		drain_main(b);
		/* The first query waits (15 s at most) until the processes are reported: its tasks
		 * name processes by the ids those answers give. */
		if (!b->reported_once && now - started_ms < 15000) {
			nap(b, 200);
			continue;
		}
		if (now >= next && oap_backoff__ready(&bo, now)) {
			if (query(b))
				oap_backoff__failed(&bo, now_mono_ms());
			else
				oap_backoff__success(&bo);
			next = now_mono_ms() + every;
		}
		for (int i = 0; i < b->npending; i++) {
			uint64_t run_ms;

			enum sw_task_when w = sw_task__when(&b->pending[i], unow, &run_ms);

			if (w == SW_TASK_LATER)
				continue;
			if (w == SW_TASK_NOW && start_task(b, &b->pending[i], run_ms) == -ENOENT)
				continue; /* not here yet: again at the next tick, until it expires */
			if (w == SW_TASK_EXPIRED)
				log_info("task %s ended before its processes were found here",
					 b->pending[i].task_id);
			b->pending[i--] = b->pending[--b->npending];
		}
		for (int i = 0; i < b->nrunning; i++)
			if (b->running[i].end_ms <= unow)
				b->running[i--] = b->running[--b->nrunning];
		sw_runs__expire(&b->runs, unow);
		if (b->cont)
			continuous__tick(b->cont, now_mono_ms());
		task_nap(b, task_wait_ms(b, next, &bo));
	}
	return NULL;
}

struct backend *backend__new(const struct rover_config *cfg, const struct oap_opts *opts,
			     struct discovery *disc, const struct host_facts *host, int main_fd,
			     const char *proc_root)
{
	struct backend *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->cfg = cfg;
	b->disc = disc;
	b->host = host;
	b->main_fd = main_fd;
	linklog__init(&b->link);
	b->wake[0] = b->wake[1] = -1;
	pthread_mutex_init(&b->state_lock, NULL);
	if (pipe2(b->wake, O_CLOEXEC))
		goto fail;
	b->conn = oap_conn__new(opts);
	if (!b->conn)
		goto fail;
	if (cfg->profiling.active) {
		struct continuous_ops ops = { b,	 cont_entities, cont_start,
					      cont_busy, cont_monitor,	cont_stop };

		b->cont = continuous__new(cfg, b->conn, proc_root, &ops);
		if (!b->cont)
			goto fail;
	}
	return b;
fail:
	backend__free(b);
	return NULL;
}

int backend__start(struct backend *b)
{
	int err = pthread_create(&b->report_thr, NULL, report_main, b);

	if (err)
		return -err;
	b->report_started = 1;
	if (!b->cfg->profiling.active)
		return 0;
	err = pthread_create(&b->task_thr, NULL, task_main, b);
	if (err)
		return -err;
	b->task_started = 1;
	return 0;
}

void backend__free(struct backend *b)
{
	int saved = errno;

	if (!b)
		return;
	b->stopping = 1;
	if (b->wake[1] >= 0 && write(b->wake[1], "x", 1) < 0)
		log_debug("waking backend threads: %s", strerror(errno));
	if (b->report_started)
		pthread_join(b->report_thr, NULL);
	if (b->task_started)
		pthread_join(b->task_thr, NULL);
	continuous__free(b->cont);
	oap_conn__free(b->conn);
	for (int i = 0; i < 2; i++)
		if (b->wake[i] >= 0)
			close(b->wake[i]);
	if (b->main_fd >= 0)
		close(b->main_fd);
	free(b);
	errno = saved;
}
