// SPDX-License-Identifier: Apache-2.0
/*
 * rover-supervisor: owns profiling tasks. Takes them from clients on ctl.sock and, with a
 * config (`rover run`), from the SkyWalking OAP (supervisor/backend/backend.c), asks the launcher for a
 * worker per task, hands the worker its task and the shipper its output, and reports how each
 * task ended. Discovers processes (supervisor/discovery/discovery.c) from its main loop. Runs as the
 * rover user with no capabilities at all, NoNewPrivs and a seccomp allowlist; the only files
 * it opens are under /proc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/log.h"
#include "common/formats.h"
#include "common/msg.h"
#include "common/privdrop.h"
#include "common/util.h"
#include "common/config/config.h"
#include "common/config/passed.h"
#include "common/grpc/oap.h"
#include "supervisor/accesslog/accesslog.h"
#include "supervisor/backend/backend.h"
#include "supervisor/discovery/children.h"
#include "supervisor/discovery/curl_load.h"
#include "supervisor/discovery/discovery.h"
#include "supervisor/discovery/k8s.h"

#define MAX_CLIENTS 16
#define MAX_TASKS 32
/*
 * Tasks one client uid other than root may hold at once: a member of the rover group cannot
 * take every slot (with long tasks, or outputs it never reads) and leave root and the backend
 * none.
 */
#define MAX_TASKS_PER_UID 8
/* Descriptors the supervisor asks for (discovery's pidfds, supervisor/discovery/discovery.c). */
#define SUPERVISOR_NOFILE 65536
#define NRULES(r) (sizeof(r) / sizeof((r)[0]))
#define SIZED(t, s) t, sizeof(s), sizeof(s)

enum task_state { T_FREE, T_SPAWNING, T_STARTING, T_RUNNING, T_WRAPPING };

/*
 * A worker must be running this soon after it was asked for: loading BPF takes milliseconds,
 * a stuck spawn or load must not hold a task (and its client) forever.
 */
#define TASK_START_TIMEOUT_MS 30000

struct sv_task {
	enum task_state state;
	uint64_t accepted_ms;
	struct task_spec spec;
	int client; /* fd, -1 once gone */
	int worker; /* fd, -1 until spawned or once gone */
	int32_t worker_pid;
	int worker_done, written, failed, at_shipper;
	int backend; /* from the backend: bk says where its data goes */
	struct msg_output_backend bk;
	/* A backend NETWORK task: its processes' labels, sent again with new rules. */
	struct msg_output_network *net;
	struct msg_task_done done;
	struct msg_output_written out;
	char why[ROVER_ERRMSG_LEN];
};

/* Who a ctl.sock client is, from the kernel (SO_PEERCRED, SO_PEERGROUPS). */
struct client_cred {
	uint32_t uid, gid, ngroups;
	uint32_t groups[ROVER_MAX_GROUPS];
	/* The launcher that started us, itself the client (`rover profile` run as the roles'
	 * user with the service's capabilities): served as root's are. */
	int launcher;
};

struct supervisor {
	const char *dir; /* containers: the socket directory shared with the launcher; else NULL */
	uid_t uid;
	pid_t launcher;		     /* the parent, read before the filter (which has no getppid) */
	int lsock, spawner, shipper; /* ctl.sock and the shipper link come from the launcher */
	int clients[MAX_CLIENTS];
	struct client_cred creds[MAX_CLIENTS];
	struct sv_task tasks[MAX_TASKS];
	uint64_t next_id;
	struct ipc_msg msg;
	/* With a config: discovery and the backend threads. */
	struct rover_config *cfg;
	struct host_facts host;
	struct discovery *disc;
	struct k8s_client *k8s; /* process_discovery.kubernetes, when active */
	struct backend *bk;
	int bk_fd;		  /* main loop's end of the socketpair to the backend threads */
	uint64_t monitor_dropped; /* HTTP monitor counts the backend thread had no room for */
	int disc_fd;		  /* discovery connection to the launcher */
	int config_refused;
	uint64_t next_scan_ms;
	/* The access-log module (access_log.active with Kubernetes discovery): its one task. */
	struct alog_mod *alog;
	uint64_t alog_task;	/* its task's id; 0: none running */
	uint64_t alog_retry_ms; /* a new worker not before (after one ended) */
	uint32_t alog_backoff_ms;
	uint64_t alog_restarts;
	int alog_said_refused;
	/* The descendants of TASK_CHILDREN tasks' processes; NULL when it could not be set up. */
	struct children *kids;
	uint64_t next_kids_ms;
};

static const struct ipc_rule from_client[] = {
	/* No descriptor: ctl.sock refuses them (launcher/spawner.c, IPC_NO_RIGHTS). */
	{ SIZED(MSG_CTL_PROFILE, struct task_spec), 0, 0 },
	{ SIZED(MSG_CTL_STOP, struct msg_ctl_accepted), 0, 0 },
};
static const struct ipc_rule from_spawner[] = {
	{ SIZED(MSG_PEER_CONN, struct msg_peer_conn), 0, 1 },
	/* The launcher's word on a TASK_CHILDREN task's new children. */
	{ MSG_TASK_TARGETS, sizeof(struct msg_task_targets_hdr),
	  sizeof(struct msg_task_targets_hdr) + MSG_TARGETS_MAX * sizeof(struct msg_task_target),
	  sizeof(struct msg_task_target), 0 },
	{ SIZED(MSG_WORKER_SPAWNED, struct msg_worker), 0, 1 },
	{ SIZED(MSG_SPAWN_FAILED, struct msg_error), 0, 0 },
	{ SIZED(MSG_WORKER_EXITED, struct msg_worker_exit), 0, 0 },
};
static const struct ipc_rule from_worker_starting[] = {
	{ SIZED(MSG_TASK_STARTED, struct msg_task_started), 0, 0 },
	{ SIZED(MSG_TASK_ERROR, struct msg_error), 0, 0 },
};
static const struct ipc_rule from_worker_running[] = {
	{ SIZED(MSG_TASK_DONE, struct msg_task_done), 0, 0 },
	{ SIZED(MSG_TASK_ERROR, struct msg_error), 0, 0 },
};
static const struct ipc_rule from_shipper[] = {
	{ SIZED(MSG_OUTPUT_WRITTEN, struct msg_output_written), 0, 0 },
	{ MSG_NET_MONITOR, sizeof(struct msg_net_monitor),
	  sizeof(struct msg_net_monitor) +
		  MSG_NET_MONITOR_MAX * sizeof(struct msg_net_monitor_entry),
	  sizeof(struct msg_net_monitor_entry), 0 },
};
static const struct ipc_rule from_backend[] = {
	{ SIZED(MSG_BK_START, struct msg_bk_start), 0, 0 },
	{ SIZED(MSG_BK_STOP, struct msg_bk_stop), 0, 0 },
	{ SIZED(MSG_BK_NET_START, struct msg_bk_net_start), 0, 0 },
	{ SIZED(MSG_BK_NET_EXTEND, struct msg_bk_net_extend), 0, 0 },
};
static const struct ipc_rule from_launcher_proc[] = {
	{ SIZED(MSG_PROC_INFO, struct msg_proc_info), 0, 0 },
};

static struct sv_task *task_by_id(struct supervisor *s, uint64_t id)
{
	for (int i = 0; i < MAX_TASKS; i++)
		if (s->tasks[i].state != T_FREE && s->tasks[i].spec.task_id == id)
			return &s->tasks[i];
	return NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* sv_answer_done: the task's last word to its client; the task is forgotten. */
static void task_complete(struct supervisor *s, struct sv_task *t)
{
	struct msg_ctl_done d = { .task_id = t->spec.task_id };

	d.out = t->out;
	d.out.task_id = t->spec.task_id;
	if (t->worker_done) {
		d.kernel_samples = t->done.samples;
		/*
		 * NETWORK: the shipper's counts hold the kernel's (they came with the records)
		 * and its own refusals; the worker's, what never reached the shipper.
		 */
		for (int k = 0; k < LOSS_MAX; k++)
			d.out.losses[k] = t->spec.type == TASK_NETWORK &&
							  t->out.losses[k] > t->done.losses[k]
						  ? t->out.losses[k]
						  : t->done.losses[k];
	}
	d.err = t->failed ? (t->failed > 0 ? t->failed : EIO) : t->out.err;
	ipc_strlcpy(d.text,
		    t->failed	 ? t->why
		    : t->out.err ? strerror(t->out.err)
				 : "ok",
		    sizeof(d.text));
	if (t->failed)
		log_warn("task %llu failed: %s", (unsigned long long)t->spec.task_id, t->why);
	else
		log_info("task %llu done: %llu samples", (unsigned long long)t->spec.task_id,
			 (unsigned long long)t->out.samples);
	if (t->client >= 0)
		ipc_send(t->client, MSG_CTL_DONE, &d, sizeof(d), -1);
	if (t->backend && s->bk_fd >= 0) {
		struct msg_bk_ended e = { .err = d.err,
					  .samples = t->out.samples,
					  .kernel_samples = d.kernel_samples,
					  .nprocs = t->bk.nprocs };

		ipc_strlcpy(e.sw_task_id, t->bk.sw_task_id, sizeof(e.sw_task_id));
		ipc_strlcpy(e.process_id, t->bk.process_id[0], sizeof(e.process_id));
		ipc_send(s->bk_fd, MSG_BK_ENDED, &e, sizeof(e), -1);
	}
	close_fd(&t->worker);
	free(t->net);
	t->net = NULL;
	if (t->spec.flags & TASK_CHILDREN)
		children__stop(s->kids, t->spec.task_id);
	t->state = T_FREE;
}

static void task_fail(struct supervisor *s, struct sv_task *t, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Marks t failed; its data at the shipper is written as far as it got, then it completes. */
static void task_fail(struct supervisor *s, struct sv_task *t, int err, const char *fmt, ...)
{
	va_list ap;

	if (t->failed)
		return;
	t->failed = err ? err : EIO;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	close_fd(&t->worker);
	if (t->spec.flags & TASK_CHILDREN)
		children__stop(s->kids, t->spec.task_id);
	if (t->at_shipper && !t->written && s->shipper >= 0) {
		struct msg_output_abort a = { .task_id = t->spec.task_id };

		ipc_strlcpy(a.reason, t->why, sizeof(a.reason));
		if (!ipc_send(s->shipper, MSG_OUTPUT_ABORT, &a, sizeof(a), -1)) {
			t->state = T_WRAPPING;
			return; /* completes when the shipper answers */
		}
	}
	task_complete(s, t);
}

static void maybe_complete(struct supervisor *s, struct sv_task *t)
{
	if (t->written && (t->worker_done || t->failed))
		task_complete(s, t);
}

/* profiling.task.network.report_interval, also without a config (`rover serve`). */
static uint32_t report_interval_ms(const struct supervisor *s)
{
	return s->cfg ? (uint32_t)s->cfg->profiling.network_report_interval_ms : 2000;
}

/*
 * A task as a client (or the backend threads) asked for it. NETWORK samples nothing, so it has
 * no period; its flush interval is the report interval unless one is given.
 */
static int check_client_spec(const struct supervisor *s, struct task_spec *spec, char *why,
			     size_t len)
{
	int net = spec->type == TASK_NETWORK;

	if (spec->type != TASK_ON_CPU && spec->type != TASK_OFF_CPU && !net)
		return snprintf(why, len, "unknown task type %u", spec->type), -EINVAL;
	if (!spec->npids || spec->npids > ROVER_MAX_PIDS)
		return snprintf(why, len, "1 to %d pids expected", ROVER_MAX_PIDS), -EINVAL;
	for (uint32_t i = 0; i < spec->npids; i++)
		if (spec->pids[i] <= 0)
			return snprintf(why, len, "bad pid %d", spec->pids[i]), -EINVAL;
	if (!net && (spec->period_us < 1000 || spec->period_us > 1000000))
		return snprintf(why, len, "dump period must be 1ms..1s"), -EINVAL;
	if (spec->duration_ms < 100 || spec->duration_ms > 24u * 3600 * 1000)
		return snprintf(why, len, "duration must be 100ms..24h"), -EINVAL;
	if (net && !spec->flush_ms)
		spec->flush_ms = report_interval_ms(s);
	if (spec->flush_ms < 100 || spec->flush_ms > 600000)
		return snprintf(why, len, "flush interval must be 100ms..10m"), -EINVAL;
	if (spec->attach > (spec->type == TASK_NETWORK ? ATTACH_SYSCALLS : ATTACH_RAW_TP))
		return snprintf(why, len, "unknown attach choice %u", spec->attach), -EINVAL;
	if (!output_format_info(spec->format) || !output_format_info(spec->format)->network != !net)
		return snprintf(why, len, "output format %u is not one of a%s task", spec->format,
				net ? " NETWORK" : " profiling"),
		       -EINVAL;
	return 0;
}

static void reject_client(int fd, int err, const char *why)
{
	struct msg_ctl_done d = { .err = -err };

	ipc_strlcpy(d.text, why, sizeof(d.text));
	ipc_send(fd, MSG_CTL_DONE, &d, sizeof(d), -1);
}

static int on_spawner(struct supervisor *s);

/*
 * The shipper link comes from the launcher (at start, and again when either of us was
 * restarted): wait for it up to wait_ms, handling whatever else the launcher says meanwhile.
 * 0, -EAGAIN when it did not come, or the launcher connection's error.
 */
static int wait_shipper(struct supervisor *s, unsigned wait_ms)
{
	uint64_t until = now_mono_ms() + wait_ms;

	while (s->shipper < 0) {
		struct pollfd p = { .fd = s->spawner, .events = POLLIN };
		uint64_t now = now_mono_ms();
		int err;

		if (now >= until)
			return -EAGAIN;
		if (poll(&p, 1, (int)(until - now)) <= 0)
			continue;
		err = on_spawner(s);
		if (err)
			return err;
	}
	return 0;
}

static void shipper_lost(struct supervisor *s, int err);
static volatile sig_atomic_t stopping; /* SIGTERM: the launcher ends the agent */

/*
 * Takes slot t for spec: the output goes to the shipper (out_fd, its end of a client's output
 * socket; bk for the backend), then a worker is asked for. 0, or -errno once the task has
 * failed.
 */
static int task_begin(struct supervisor *s, struct sv_task *t, const struct task_spec *spec,
		      int client, const struct client_cred *cred,
		      const struct msg_output_backend *bk, const struct msg_output_network *net,
		      int out_fd)
{
	struct msg_spawn sp = { 0 };
	int err;

	memset(t, 0, sizeof(*t));
	t->spec = *spec;
	/* Ours to set, whatever a client wrote there, but the client's own choices. */
	t->spec.flags &= TASK_CLIENT_FLAGS;
	if (net && net->monitor)
		t->spec.flags |= TASK_READ_AT_FLUSH | TASK_MONITOR;
	t->spec.req_uid = t->spec.req_gid = 0;
	t->spec.task_id = ++s->next_id;
	t->spec.start_unix_ms = now_unix_ms();
	t->client = client;
	t->worker = -1;
	t->state = T_SPAWNING;
	t->accepted_ms = now_mono_ms();
	if (t->spec.flags & TASK_CHILDREN) {
		/* Those running now are among its pids from the start: checked with them. */
		int n = s->kids ? children__start(s->kids, &t->spec) : -ENOSYS;

		if (n < 0) {
			task_fail(s, t, -n, "--children: %s",
				  n == -E2BIG ? "its processes and their children are more than 64"
					      : strerror(-n));
			return n;
		}
		log_info("task %llu: %d child process(es) of its processes running, profiled too; "
			 "the ones they start are looked for every %u ms",
			 (unsigned long long)t->spec.task_id, n, children__period_ms(s->kids));
	}
	if (bk && net) {
		/* The shipper turns a NETWORK task's traffic into meters and logs, not profiles. */
		t->backend = 1;
		t->bk = *bk;
		t->bk.task_id = t->spec.task_id;
		t->net = malloc(sizeof(*t->net));
		if (!t->net) {
			task_fail(s, t, ENOMEM, "%s", strerror(ENOMEM));
			return -ENOMEM;
		}
		*t->net = *net;
		t->net->task_id = t->spec.task_id;
		t->net->start_unix_ms = (int64_t)t->spec.start_unix_ms;
		err = ipc_send(s->shipper, MSG_OUTPUT_NETWORK, t->net, sizeof(*t->net), -1);
	} else if (bk) {
		t->backend = 1;
		t->bk = *bk;
		t->bk.task_id = t->spec.task_id;
		err = ipc_send(s->shipper, MSG_OUTPUT_BACKEND, &t->bk, sizeof(t->bk), -1);
	} else {
		struct msg_output o = { .task_id = t->spec.task_id,
					.format = spec->format,
					.type = spec->type };

		err = ipc_send(s->shipper, MSG_OUTPUT_OPEN, &o, sizeof(o), out_fd);
	}
	if (err) {
		/* The others it held are lost with it: they fail now, not wait forever. */
		shipper_lost(s, err);
		task_fail(s, t, -err, "handing the output to the shipper: %s", strerror(-err));
		return err;
	}
	t->at_shipper = 1;
	sp.task_id = t->spec.task_id;
	sp.npids = t->spec.npids;
	memcpy(sp.pids, t->spec.pids, sizeof(sp.pids));
	sp.children = !!(t->spec.flags & TASK_CHILDREN);
	/* A client other than root may profile only what it could trace itself: the launcher
	 * checks with its credentials. Backend tasks name processes discovery reported. */
	if (cred && cred->uid != 0 && !cred->launcher) {
		/* The worker's programs drop a target that stops being the client's to trace. */
		t->spec.flags |= TASK_USER_ONLY;
		t->spec.req_uid = cred->uid;
		t->spec.req_gid = cred->gid;
		sp.check_access = 1;
		sp.req_uid = cred->uid;
		sp.req_gid = cred->gid;
		sp.ngroups = cred->ngroups;
		memcpy(sp.groups, cred->groups, sizeof(sp.groups));
	}
	err = ipc_send(s->spawner, MSG_SPAWN_WORKER, &sp, sizeof(sp), -1);
	if (err) {
		task_fail(s, t, -err, "asking for a worker: %s", strerror(-err));
		return err;
	}
	log_info("task %llu accepted", (unsigned long long)t->spec.task_id);
	return 0;
}

/* Tasks held now on behalf of a client of uid (not root). */
static int tasks_of_uid(const struct supervisor *s, uint32_t uid)
{
	int n = 0;

	for (int i = 0; i < MAX_TASKS; i++)
		n += s->tasks[i].state != T_FREE && (s->tasks[i].spec.flags & TASK_USER_ONLY) &&
		     s->tasks[i].spec.req_uid == uid;
	return n;
}

static struct sv_task *free_task(struct supervisor *s)
{
	for (int i = 0; i < MAX_TASKS; i++)
		if (s->tasks[i].state == T_FREE)
			return &s->tasks[i];
	return NULL;
}

/* A backend task that cannot run here: its thread hears that it ended. */
static void backend_refuse(struct supervisor *s, const struct msg_output_backend *out, int err,
			   const char *why)
{
	struct msg_bk_ended e = { .err = -err };

	log_warn("backend task %s: %s", out->sw_task_id, why);
	ipc_strlcpy(e.sw_task_id, out->sw_task_id, sizeof(e.sw_task_id));
	ipc_strlcpy(e.process_id, out->process_id[0], sizeof(e.process_id));
	e.nprocs = out->nprocs;
	ipc_send(s->bk_fd, MSG_BK_ENDED, &e, sizeof(e), -1);
}

static int backend_start(struct supervisor *s, struct task_spec *spec,
			 const struct msg_output_backend *out, const struct msg_output_network *net)
{
	char why[ROVER_ERRMSG_LEN];
	struct sv_task *t;
	int err = check_client_spec(s, spec, why, sizeof(why));

	/* One try: the main loop never waits for a restarting shipper on the backend's
	 * behalf (a task over many processes would hold it that many times). */
	if (!err && s->shipper < 0) {
		err = -EAGAIN;
		snprintf(why, sizeof(why), "the shipper is not available");
	}
	t = err ? NULL : free_task(s);
	if (!err && !t) {
		err = -EBUSY;
		snprintf(why, sizeof(why), "too many tasks");
	}
	if (err) {
		backend_refuse(s, out, err, why);
		return 0;
	}
	task_begin(s, t, spec, -1, NULL, out, net, -1);
	log_info("task %llu is backend task %s for process %s%s (%u pid(s))",
		 (unsigned long long)t->spec.task_id, out->sw_task_id, out->process_id[0],
		 net		   ? " and the others of its instance"
		 : out->nprocs > 1 ? " and the others it names"
				   : "",
		 t->spec.npids);
	return 0;
}

/*
 * A backend task's identity from our own threads, checked as a peer's would be: its process
 * ids, and a process id for each pid of spec that it names (the shipper uploads by them).
 */
static int check_bk_out(const struct msg_output_backend *o, const struct task_spec *spec)
{
	if (ipc_check_str(o->sw_task_id, sizeof(o->sw_task_id)) || !o->nprocs ||
	    o->nprocs > ROVER_MAX_PIDS || o->npids > ROVER_MAX_PIDS)
		return -EPROTO;
	for (uint32_t i = 0; i < o->nprocs; i++)
		if (ipc_check_str(o->process_id[i], sizeof(o->process_id[i])) ||
		    !o->process_id[i][0])
			return -EPROTO;
	for (uint32_t i = 0; i < o->npids; i++) {
		int known = 0;

		for (uint32_t k = 0; k < spec->npids && k < ROVER_MAX_PIDS; k++)
			known |= spec->pids[k] == o->pid_proc[i].pid;
		if (!known || o->pid_proc[i].proc >= o->nprocs)
			return -EPROTO;
	}
	return 0;
}

/* Our own threads' NETWORK task, checked as a peer's would be. */
static int check_net_start(const struct msg_bk_net_start *m)
{
	const struct msg_output_network *n = &m->net;

	if (check_bk_out(&m->out, &m->spec) ||
	    ipc_check_str(n->sw_task_id, sizeof(n->sw_task_id)) || m->spec.type != TASK_NETWORK ||
	    n->nprocs > ROVER_MAX_PIDS || n->nprocs != m->spec.npids ||
	    n->nrules > ROVER_NET_MAX_RULES || n->monitor > 1)
		return -EPROTO;
	for (uint32_t i = 0; i < n->nprocs; i++) {
		const struct msg_net_process *p = &n->procs[i];

		if (p->pid != m->spec.pids[i] ||
		    ipc_check_str(p->process_id, sizeof(p->process_id)) ||
		    ipc_check_str(p->service, sizeof(p->service)) ||
		    ipc_check_str(p->instance, sizeof(p->instance)) ||
		    ipc_check_str(p->name, sizeof(p->name)) ||
		    ipc_check_str(p->layer, sizeof(p->layer)))
			return -EPROTO;
	}
	for (uint32_t i = 0; i < n->nrules; i++)
		if (ipc_check_str(n->rules[i].uri_regex, sizeof(n->rules[i].uri_regex)))
			return -EPROTO;
	return 0;
}

/*
 * A keep-alive of a running backend NETWORK task: its worker runs until end_unix_ms (a whole
 * duration counted from the task's start, never shorter than before, 24 h at most) and the
 * shipper gets the new rules, which it appends to the task's.
 */
static int backend_extend(struct supervisor *s, const struct msg_bk_net_extend *x)
{
	const uint64_t max_ms = 24ull * 3600 * 1000;
	struct sv_task *t = NULL;
	uint64_t dur;

	if (ipc_check_str(x->sw_task_id, sizeof(x->sw_task_id)) || x->nrules > ROVER_NET_MAX_RULES)
		return -EPROTO;
	for (uint32_t i = 0; i < x->nrules; i++)
		if (ipc_check_str(x->rules[i].uri_regex, sizeof(x->rules[i].uri_regex)))
			return -EPROTO;
	for (int i = 0; i < MAX_TASKS && !t; i++)
		if (s->tasks[i].state != T_FREE && s->tasks[i].backend && s->tasks[i].net &&
		    !s->tasks[i].failed && !s->tasks[i].worker_done &&
		    !strcmp(s->tasks[i].bk.sw_task_id, x->sw_task_id))
			t = &s->tasks[i];
	if (!t) {
		log_info("backend task %s: keep-alive for a task that is over, ignoring",
			 x->sw_task_id);
		return 0;
	}
	dur = x->end_unix_ms > t->spec.start_unix_ms ? x->end_unix_ms - t->spec.start_unix_ms : 0;
	if (dur > max_ms)
		dur = max_ms;
	if (dur > t->spec.duration_ms) {
		struct msg_task_extend e = { .task_id = t->spec.task_id,
					     .duration_ms = (uint32_t)dur };

		/* Before MSG_TASK_START the spec still goes out whole, with the new duration. */
		t->spec.duration_ms = (uint32_t)dur;
		if (t->worker >= 0 && ipc_send(t->worker, MSG_TASK_EXTEND, &e, sizeof(e), -1))
			log_warn("task %llu: extending: worker unreachable",
				 (unsigned long long)t->spec.task_id);
		else
			log_info("task %llu: runs %u ms in all",
				 (unsigned long long)t->spec.task_id, e.duration_ms);
	}
	if (x->nrules && s->shipper >= 0) {
		struct msg_output_network *n = malloc(sizeof(*n));
		int err;

		if (!n)
			return -ENOMEM;
		*n = *t->net;
		n->nrules = x->nrules;
		memset(n->rules, 0, sizeof(n->rules));
		memcpy(n->rules, x->rules, x->nrules * sizeof(x->rules[0]));
		err = ipc_send(s->shipper, MSG_OUTPUT_NETWORK, n, sizeof(*n), -1);
		free(n);
		if (err)
			shipper_lost(s, err);
	}
	return 0;
}

/* A task from the backend threads. Their messages come from our own threads, but are held to
 * the same rules as any peer's. */
static int on_backend(struct supervisor *s)
{
	struct sv_task *t;
	int err = ipc_recv(s->bk_fd, from_backend, NRULES(from_backend), &s->msg);

	if (err)
		return err;
	switch (s->msg.type) {
	case MSG_BK_STOP: {
		const struct msg_bk_stop *st = s->msg.buf;

		if (ipc_check_str(st->sw_task_id, sizeof(st->sw_task_id)))
			return -EPROTO;
		for (int i = 0; i < MAX_TASKS; i++) {
			t = &s->tasks[i];
			if (t->state == T_FREE || !t->backend || t->failed ||
			    strcmp(t->bk.sw_task_id, st->sw_task_id))
				continue;
			if (t->worker >= 0)
				ipc_send(t->worker, MSG_TASK_STOP, NULL, 0, -1);
			else if (t->state == T_SPAWNING)
				/* Its worker, when it comes, is stale and sent away. */
				task_fail(s, t, ECANCELED, "replaced before it started");
		}
		return 0;
	}
	case MSG_BK_START: {
		const struct msg_bk_start *m = s->msg.buf;
		struct task_spec spec = m->spec;

		if (check_bk_out(&m->out, &spec) || spec.type == TASK_NETWORK)
			return -EPROTO;
		return backend_start(s, &spec, &m->out, NULL);
	}
	case MSG_BK_NET_START: {
		const struct msg_bk_net_start *m = s->msg.buf;
		struct task_spec spec = m->spec;

		if (check_net_start(m))
			return -EPROTO;
		return backend_start(s, &spec, &m->out, &m->net);
	}
	case MSG_BK_NET_EXTEND:
		return backend_extend(s, s->msg.buf);
	}
	return -EPROTO;
}

/*
 * A client's output: a socket pair of ours, one end for the shipper, the other for the client
 * (with MSG_CTL_ACCEPTED). The shipper's end is shut for reading, so the client can queue
 * nothing there (no descriptor whose last close could block whoever closes it); the shipper
 * sends to it without ever blocking (shipper/output/clientout.h). 0 or -errno.
 */
static int output_pair(int ret[2])
{
	int err = ipc_pair(ret);

	if (!err && shutdown(ret[0], SHUT_RD)) {
		err = -errno;
		close(ret[0]);
		close(ret[1]);
	}
	return err;
}

static void on_client(struct supervisor *s, int idx)
{
	int *cfd = &s->clients[idx], out[2] = { -1, -1 };
	struct task_spec spec;
	struct sv_task *t = NULL;
	char why[ROVER_ERRMSG_LEN];
	int err = ipc_recv(*cfd, from_client, NRULES(from_client), &s->msg);

	if (err) {
		/* Gone, or broke the rules: its tasks stop, it is cut off. */
		for (int i = 0; i < MAX_TASKS; i++) {
			if (s->tasks[i].state != T_FREE && s->tasks[i].client == *cfd) {
				s->tasks[i].client = -1;
				if (s->tasks[i].worker >= 0)
					ipc_send(s->tasks[i].worker, MSG_TASK_STOP, NULL, 0, -1);
			}
		}
		if (err != -EPIPE)
			log_warn("client: %s, disconnecting", strerror(-err));
		close_fd(cfd);
		return;
	}
	if (s->msg.type == MSG_CTL_STOP) {
		const struct msg_ctl_accepted *stop = s->msg.buf;

		t = task_by_id(s, stop->task_id);
		if (t && t->client == *cfd && t->worker >= 0)
			ipc_send(t->worker, MSG_TASK_STOP, NULL, 0, -1);
		return;
	}
	memcpy(&spec, s->msg.buf, sizeof(spec));
	err = check_client_spec(s, &spec, why, sizeof(why));
	if (!err && s->shipper < 0 && wait_shipper(s, 3000)) {
		err = -EAGAIN;
		snprintf(why, sizeof(why), "the shipper is not available");
	}
	if (!err && s->creds[idx].uid != 0 &&
	    tasks_of_uid(s, s->creds[idx].uid) >= MAX_TASKS_PER_UID) {
		err = -EBUSY;
		snprintf(why, sizeof(why), "uid %u holds %d tasks already, the most one user may",
			 s->creds[idx].uid, MAX_TASKS_PER_UID);
	}
	if (!err)
		t = free_task(s);
	if (!err && !t) {
		err = -EBUSY;
		snprintf(why, sizeof(why), "too many tasks");
	}
	if (!err && (err = output_pair(out)))
		snprintf(why, sizeof(why), "no socket for its output: %s", strerror(-err));
	if (err) {
		reject_client(*cfd, err, why);
		return;
	}
	err = task_begin(s, t, &spec, *cfd, &s->creds[idx], NULL, NULL, out[0]);
	close_fd(&out[0]);
	if (!err) {
		struct msg_ctl_accepted a = { .task_id = t->spec.task_id };

		/* Its end of the output comes with the task's id. */
		ipc_send(*cfd, MSG_CTL_ACCEPTED, &a, sizeof(a), out[1]);
	}
	close_fd(&out[1]);
}

/*
 * The access log's task (docs/access-log.md): the shipper told where its logs go, then one
 * worker asked for, with no process yet; the processes follow once it runs (alog_tick). The
 * supervisor's own task, never a client's or the backend's.
 */
static int alog_begin(struct supervisor *s, struct sv_task *t)
{
	struct msg_output_accesslog o;
	struct msg_spawn sp = { 0 };
	const char *node = s->cfg->discovery.k8s_node_name[0] ? s->cfg->discovery.k8s_node_name
							      : s->host.host_name;
	int err;

	memset(t, 0, sizeof(*t));
	t->spec.type = TASK_ACCESS_LOG;
	t->spec.task_id = ++s->next_id;
	t->spec.start_unix_ms = now_unix_ms();
	t->spec.flush_ms = 1000;
	t->spec.attach = ATTACH_SYSCALLS;
	t->client = -1;
	t->worker = -1;
	t->state = T_SPAWNING;
	t->accepted_ms = now_mono_ms();
	alog__reset(s->alog);
	alog__output(s->alog, node, t->spec.task_id, &o);
	err = ipc_send(s->shipper, MSG_OUTPUT_ACCESSLOG, &o, sizeof(o), -1);
	if (err) {
		shipper_lost(s, err);
		task_fail(s, t, -err, "handing the access log to the shipper: %s", strerror(-err));
		return err;
	}
	t->at_shipper = 1;
	sp.task_id = t->spec.task_id;
	sp.access_log = 1;
	err = ipc_send(s->spawner, MSG_SPAWN_WORKER, &sp, sizeof(sp), -1);
	if (err) {
		task_fail(s, t, -err, "asking for a worker: %s", strerror(-err));
		return err;
	}
	s->alog_task = t->spec.task_id;
	log_info("access log: task %llu accepted (node %s, flush every %llu ms)",
		 (unsigned long long)t->spec.task_id, node,
		 (unsigned long long)s->cfg->access_log.flush_period_ms);
	return 0;
}

/* Sends n entries of size each after a header, in frames of at most per: 0 or -errno. */
static int send_frames(int fd, uint16_t type, uint64_t task_id, const void *v, size_t n,
		       size_t size, size_t per)
{
	uint8_t *buf = malloc(sizeof(struct msg_task_targets_hdr) + per * size);
	int err = 0;

	_Static_assert(sizeof(struct msg_task_targets_hdr) == sizeof(struct msg_alog_procs_hdr),
		       "one header shape");
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i += per) {
		size_t k = n - i < per ? n - i : per;
		struct msg_task_targets_hdr h = { .task_id = task_id, .count = (uint32_t)k };

		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), (const uint8_t *)v + i * size, k * size);
		err = ipc_send(fd, type, buf, sizeof(h) + k * size, -1);
	}
	free(buf);
	return err;
}

/*
 * After a scan, and once its worker runs: the access log's processes as discovery sees them
 * now, the changes to the shipper (who they are), the launcher (pinned for the shipper's opens)
 * and the worker (traced). A worker that ended is replaced, after a backoff (1 s, doubling to
 * a minute).
 */
static void alog_tick(struct supervisor *s)
{
	struct sv_task *t = s->alog_task ? task_by_id(s, s->alog_task) : NULL;
	struct alog_changes ch;
	uint64_t now = now_mono_ms();
	int err;

	if (!t || t->failed) {
		if (s->alog_task && !t) {
			s->alog_task = 0;
			s->alog_restarts++;
			s->alog_backoff_ms = s->alog_backoff_ms ? s->alog_backoff_ms * 2 : 1000;
			if (s->alog_backoff_ms > 60000)
				s->alog_backoff_ms = 60000;
			s->alog_retry_ms = now + s->alog_backoff_ms;
			log_warn("access log: its task ended (%llu time(s) so far); another in %u ms",
				 (unsigned long long)s->alog_restarts, s->alog_backoff_ms);
		}
		if (t || now < s->alog_retry_ms || s->shipper < 0)
			return;
		t = free_task(s);
		if (t)
			alog_begin(s, t);
		return;
	}
	if (t->state != T_RUNNING)
		return;
	/* A worker that keeps dying is not restarted at once each time: the backoff goes back
	 * to a second only after a minute of running. */
	if (now - t->accepted_ms > 60000)
		s->alog_backoff_ms = 0;
	if (alog__refresh(s->alog, s->disc, &ch))
		return;
	if (ch.refused && !s->alog_said_refused++)
		log_warn("access log: %llu process(es) not traced: over %u at once",
			 (unsigned long long)ch.refused, ALOG_MAX_PIDS);
	err = send_frames(s->shipper, MSG_ALOG_PROCS, t->spec.task_id, ch.procs, ch.nprocs,
			  sizeof(*ch.procs), MSG_ALOG_PROCS_MAX);
	if (!err)
		err = send_frames(s->spawner, MSG_TASK_TARGETS, t->spec.task_id, ch.targets,
				  ch.ntargets, sizeof(*ch.targets), MSG_TARGETS_MAX);
	if (!err)
		err = send_frames(t->worker, MSG_TASK_TARGETS, t->spec.task_id, ch.targets,
				  ch.ntargets, sizeof(*ch.targets), MSG_TARGETS_MAX);
	if (err) {
		/* What was said is not known: a new worker starts from nothing. */
		task_fail(s, t, -err, "access log: sending its processes: %s", strerror(-err));
		return;
	}
	if (ch.ntargets)
		log_info("access log: %zu process(es) traced (%zu change(s))", alog__count(s->alog),
			 ch.ntargets);
}

/* One MSG_TASK_TARGETS frame of n entries, all of task_id's, to fd. 0 or -errno. */
static int send_targets(int fd, uint64_t task_id, const struct msg_task_target *v, size_t n)
{
	return n ? send_frames(fd, MSG_TASK_TARGETS, task_id, v, n, sizeof(*v), MSG_TARGETS_MAX)
		 : 0;
}

/*
 * New children (ev, n of them, found by children__tick) asked of the launcher, a frame per
 * task; the worker hears of those the launcher lets on (kids_settled).
 */
static void kids_found(struct supervisor *s, const struct child_event *ev, size_t n)
{
	struct msg_task_target v[64];

	for (size_t i = 0; i < n;) {
		uint64_t task = ev[i].task_id;
		size_t k = 0;

		for (; i < n && ev[i].task_id == task && k < 64; i++) {
			log_info("task %llu: process %d, a child of %d, found %llu ms after it started",
				 (unsigned long long)task, ev[i].pid, ev[i].ppid,
				 (unsigned long long)ev[i].age_ms);
			v[k++] = (struct msg_task_target){ .pid = ev[i].pid, .on = 1 };
		}
		if (send_targets(s->spawner, task, v, k))
			log_warn("task %llu: asking the launcher about its children failed",
				 (unsigned long long)task);
	}
}

/* The launcher's answer about new children: the worker traces those it let on. */
static void kids_settled(struct supervisor *s, const struct ipc_msg *m)
{
	struct msg_task_targets_hdr h;
	const struct msg_task_target *t;
	struct msg_task_target on[MSG_TARGETS_MAX], off[MSG_TARGETS_MAX];
	size_t non = 0, noff = 0;
	struct sv_task *task;

	memcpy(&h, m->buf, sizeof(h));
	if (h.count != (m->len - sizeof(h)) / sizeof(*t))
		return;
	t = (const struct msg_task_target *)((const uint8_t *)m->buf + sizeof(h));
	task = task_by_id(s, h.task_id);
	for (uint32_t i = 0; i < h.count; i++) {
		int live = s->kids && children__settle(s->kids, h.task_id, t[i].pid, t[i].on != 0);

		if (live && task && task->worker >= 0)
			on[non++] = (struct msg_task_target){ .pid = t[i].pid, .on = 1 };
		else if (t[i].on)
			/* Gone meanwhile (or the task is): the launcher's pin goes too. */
			off[noff++] = (struct msg_task_target){ .pid = t[i].pid, .on = 0 };
	}
	if (task && task->worker >= 0 && send_targets(task->worker, h.task_id, on, non))
		log_warn("task %llu: telling the worker of its children failed",
			 (unsigned long long)h.task_id);
	send_targets(s->spawner, h.task_id, off, noff);
}

/* Children that ended: neither the worker nor the launcher hold them from now on. */
static void kids_ended(struct supervisor *s)
{
	struct child_event ev[64];
	size_t n = children__exits(s->kids, ev, 64);

	for (size_t i = 0; i < n; i++) {
		struct msg_task_target off = { .pid = ev[i].pid, .on = 0 };
		struct sv_task *t = task_by_id(s, ev[i].task_id);

		if (t && t->worker >= 0)
			send_targets(t->worker, ev[i].task_id, &off, 1);
		send_targets(s->spawner, ev[i].task_id, &off, 1);
	}
}

/* Whether a TASK_CHILDREN task waits for its worker: new pids are looked at once it runs. */
static int kids_starting(const struct supervisor *s)
{
	for (int i = 0; i < MAX_TASKS; i++) {
		const struct sv_task *t = &s->tasks[i];

		if ((t->spec.flags & TASK_CHILDREN) && !t->failed &&
		    (t->state == T_SPAWNING || t->state == T_STARTING))
			return 1;
	}
	return 0;
}

static void on_worker(struct supervisor *s, struct sv_task *t);

static int on_spawner(struct supervisor *s)
{
	struct sv_task *t;
	int err = ipc_recv(s->spawner, from_spawner, NRULES(from_spawner), &s->msg);

	if (err)
		return err;
	switch (s->msg.type) {
	case MSG_PEER_CONN: {
		const struct msg_peer_conn *c = s->msg.buf;
		int fd = s->msg.fd;

		s->msg.fd = -1;
		if (c->role == ROLE_CLIENT) {
			close_fd(&s->lsock);
			s->lsock = fd;
			return 0;
		}
		if (c->role != ROLE_SHIPPER) {
			close(fd);
			return -EPROTO;
		}
		if (s->shipper >= 0)
			shipper_lost(s, -ECONNRESET);
		err = ipc_set_timeouts(fd);
		if (!err)
			err = ipc_send(fd, MSG_HELLO,
				       &(struct msg_hello){ .role = ROLE_SUPERVISOR,
							    .proto_version = IPC_VERSION,
							    .pid = (int32_t)getpid() },
				       sizeof(struct msg_hello), -1);
		if (err) {
			close(fd);
			log_warn("shipper link from the launcher: %s", strerror(-err));
			return 0;
		}
		s->shipper = fd;
		log_info("linked to shipper %d", c->pid);
		return 0;
	}
	case MSG_TASK_TARGETS:
		kids_settled(s, &s->msg);
		return 0;
	case MSG_WORKER_SPAWNED: {
		const struct msg_worker *w = s->msg.buf;

		t = task_by_id(s, w->task_id);
		if (!t || t->state != T_SPAWNING) {
			close_fd(&s->msg.fd); /* stale: the task was given up meanwhile */
			return 0;
		}
		t->worker = s->msg.fd;
		s->msg.fd = -1;
		t->worker_pid = w->pid;
		t->state = T_STARTING;
		err = ipc_set_timeouts(t->worker);
		if (!err)
			err = ipc_send(t->worker, MSG_TASK_START, &t->spec, sizeof(t->spec), -1);
		if (err)
			task_fail(s, t, -err, "starting worker: %s", strerror(-err));
		return 0;
	}
	case MSG_SPAWN_FAILED: {
		const struct msg_error *e = s->msg.buf;

		t = task_by_id(s, e->task_id);
		if (t && !ipc_check_str(e->text, sizeof(e->text)))
			task_fail(s, t, e->err, "no worker: %s", e->text);
		return 0;
	}
	case MSG_WORKER_EXITED: {
		/* A copy: reading the worker's last words below reuses s->msg. */
		const struct msg_worker_exit xc = *(const struct msg_worker_exit *)s->msg.buf;
		const struct msg_worker_exit *x = &xc;

		t = task_by_id(s, x->task_id);
		/* Its last words may still wait in its socket: read them before judging. */
		while (t && t->worker >= 0 && !t->worker_done && !t->failed) {
			struct pollfd wp = { .fd = t->worker, .events = POLLIN };

			if (poll(&wp, 1, 0) <= 0)
				break;
			on_worker(s, t);
		}
		if (!t || t->state == T_FREE || t->spec.task_id != x->task_id || t->worker_done ||
		    t->failed)
			return 0;
		if (x->signal)
			task_fail(s, t, EINTR, "worker %d killed by signal %d (%s)", x->pid,
				  x->signal, strsignal(x->signal));
		else
			task_fail(s, t, EIO, "worker %d exited with status %d before finishing",
				  x->pid, x->exit_code);
		return 0;
	}
	}
	return -EPROTO;
}

static void on_worker(struct supervisor *s, struct sv_task *t)
{
	const struct ipc_rule *rules = t->state == T_STARTING ? from_worker_starting
							      : from_worker_running;
	int err = ipc_recv(t->worker, rules, 2, &s->msg);

	if (err) {
		/* The launcher reports how it ended; stop listening to it now. */
		if (err != -EPIPE)
			task_fail(s, t, EPROTO, "worker broke the protocol (%s)", strerror(-err));
		else
			close_fd(&t->worker);
		return;
	}
	switch (s->msg.type) {
	case MSG_TASK_STARTED:
		t->state = T_RUNNING;
		log_info("task %llu running in worker %d", (unsigned long long)t->spec.task_id,
			 t->worker_pid);
		if (t->spec.type == TASK_ACCESS_LOG && s->alog)
			alog_tick(s);
		break;
	case MSG_TASK_ERROR: {
		const struct msg_error *e = s->msg.buf;

		if (ipc_check_str(e->text, sizeof(e->text)) || e->task_id != t->spec.task_id)
			task_fail(s, t, EPROTO, "worker broke the protocol");
		else
			task_fail(s, t, e->err > 0 ? e->err : EIO, "%s", e->text);
		break;
	}
	case MSG_TASK_DONE:
		memcpy(&t->done, s->msg.buf, sizeof(t->done));
		if (t->done.task_id != t->spec.task_id) {
			task_fail(s, t, EPROTO, "worker broke the protocol");
			break;
		}
		t->worker_done = 1;
		t->state = T_WRAPPING;
		close_fd(&t->worker);
		maybe_complete(s, t);
		break;
	}
}

static int on_shipper(struct supervisor *s)
{
	const struct msg_output_written *w;
	struct sv_task *t;
	int err = ipc_recv(s->shipper, from_shipper, NRULES(from_shipper), &s->msg);

	if (err)
		return err;
	if (s->msg.type == MSG_NET_MONITOR) {
		const struct msg_net_monitor *m = s->msg.buf;

		/* Continuous profiling's HTTP counts: the backend thread's, checked there. */
		if (m->count != (s->msg.len - sizeof(*m)) / sizeof(struct msg_net_monitor_entry))
			return -EPROTO;
		/*
		 * Only when the backend thread has room now: a shipper sending faster than that
		 * thread reads (or a backend call holding it) must not stall the main loop. A
		 * second's counts dropped is a second the windows see as empty.
		 */
		if (s->bk_fd >= 0) {
			struct pollfd out = { .fd = s->bk_fd, .events = POLLOUT };

			if (poll(&out, 1, 0) != 1 || !(out.revents & POLLOUT) ||
			    ipc_send(s->bk_fd, MSG_NET_MONITOR, s->msg.buf, s->msg.len, -1)) {
				s->monitor_dropped++;
				if (s->monitor_dropped == 1 || !(s->monitor_dropped % 60))
					log_warn("continuous profiling: %llu second(s) of HTTP monitor "
						 "counts dropped so far: the backend thread had no room",
						 (unsigned long long)s->monitor_dropped);
			}
		}
		return 0;
	}
	w = s->msg.buf;
	if (ipc_check_str(w->summary, sizeof(w->summary)))
		return -EPROTO;
	t = task_by_id(s, w->task_id);
	if (!t)
		return 0;
	t->out = *w;
	t->written = 1;
	if (t->failed)
		task_complete(s, t);
	else
		maybe_complete(s, t);
	return 0;
}

static void shipper_lost(struct supervisor *s, int err)
{
	if (stopping)
		log_debug("shipper connection closed (%s) while ending", strerror(-err));
	else
		log_warn("shipper connection lost (%s); tasks it held fail until the launcher "
			 "links a new one",
			 strerror(-err));
	close_fd(&s->shipper);
	for (int i = 0; i < MAX_TASKS; i++) {
		struct sv_task *t = &s->tasks[i];

		if (t->state == T_FREE || !t->at_shipper || t->written)
			continue;
		t->at_shipper = 0;
		if (t->failed) {
			task_complete(s, t);
			continue;
		}
		if (t->worker >= 0)
			ipc_send(t->worker, MSG_TASK_STOP, NULL, 0, -1);
		task_fail(s, t, EPIPE, "the shipper stopped; the task's data was lost");
	}
}

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/*
 * ctl.sock is root's and the rover group's (mode 0660): whoever reaches it may ask, for the
 * processes it could trace itself (the launcher checks each task with these credentials).
 */
static void accept_client(struct supervisor *s)
{
	struct client_cred cred = { 0 };
	gid_t groups[ROVER_MAX_GROUPS];
	socklen_t glen = sizeof(groups);
	struct ucred uc;
	socklen_t clen = sizeof(uc);
	uint32_t uid;
	int32_t pid;
	int fd = ipc_accept(s->lsock, &uid, &pid);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &clen) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen)) {
		log_warn("client pid %d uid %u: its credentials: %s, refused", pid, uid,
			 strerror(errno));
		reject_client(fd, -EPERM, "more supplementary groups than rover can check");
		close(fd);
		return;
	}
	cred.uid = uc.uid;
	cred.gid = uc.gid;
	/* Our parent, whose death would have ended us (a parent-death signal): not a pid
	 * reused by another. Not in a container of our own, where the parent is not rover's. */
	cred.launcher = !s->dir && uc.pid == s->launcher && uc.uid == s->uid;
	cred.ngroups = glen / sizeof(gid_t);
	for (uint32_t i = 0; i < cred.ngroups; i++)
		cred.groups[i] = groups[i];
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (s->clients[i] < 0) {
			s->clients[i] = fd;
			s->creds[i] = cred;
			return;
		}
	}
	reject_client(fd, -EBUSY, "too many clients");
	close(fd);
}

static int loop(struct supervisor *s)
{
	enum { K_LISTEN, K_SPAWNER, K_SHIPPER, K_CLIENT, K_WORKER, K_BACKEND, K_KIDS };
	struct pollfd pfd[5 + MAX_CLIENTS + MAX_TASKS];
	int kind[5 + MAX_CLIENTS + MAX_TASKS], ref[5 + MAX_CLIENTS + MAX_TASKS];

	while (!stopping) {
		int n = 0, err;

#define ADD(fd_, k_, r_)                                                   \
	do {                                                               \
		pfd[n] = (struct pollfd){ .fd = (fd_), .events = POLLIN }; \
		kind[n] = (k_);                                            \
		ref[n++] = (r_);                                           \
	} while (0)
		if (s->lsock >= 0)
			ADD(s->lsock, K_LISTEN, 0);
		ADD(s->spawner, K_SPAWNER, 0);
		if (s->shipper >= 0)
			ADD(s->shipper, K_SHIPPER, 0);
		if (s->bk_fd >= 0)
			ADD(s->bk_fd, K_BACKEND, 0);
		if (children__active(s->kids))
			ADD(children__fd(s->kids), K_KIDS, 0);
		for (int i = 0; i < MAX_CLIENTS; i++)
			if (s->clients[i] >= 0)
				ADD(s->clients[i], K_CLIENT, i);
		for (int i = 0; i < MAX_TASKS; i++)
			if (s->tasks[i].state != T_FREE && s->tasks[i].worker >= 0)
				ADD(s->tasks[i].worker, K_WORKER, i);
#undef ADD
		/* Woken for the next discovery scan and a starting task's deadline, else only by
		 * a message or a signal (a wakeup costs about 70 us on this VM). */
		uint64_t now = now_mono_ms(), wake = UINT64_MAX;
		int timeout;

		if (s->disc)
			wake = s->next_scan_ms;
		if (children__active(s->kids) && !kids_starting(s) && s->next_kids_ms < wake)
			wake = s->next_kids_ms;
		for (int i = 0; i < MAX_TASKS; i++) {
			const struct sv_task *t = &s->tasks[i];

			if ((t->state == T_SPAWNING || t->state == T_STARTING) && !t->failed &&
			    t->accepted_ms + TASK_START_TIMEOUT_MS + 1 < wake)
				wake = t->accepted_ms + TASK_START_TIMEOUT_MS + 1;
		}
		timeout = wake == UINT64_MAX   ? -1
			  : wake <= now	       ? 0
			  : wake - now > 60000 ? 60000
					       : (int)(wake - now);
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* Told to end while poll returned: the launcher ends the shipper too, whose
		 * hang-up is no loss to report. */
		if (stopping)
			break;
		for (int i = 0; i < MAX_TASKS; i++) {
			struct sv_task *t = &s->tasks[i];

			if ((t->state == T_SPAWNING || t->state == T_STARTING) && !t->failed &&
			    now_mono_ms() - t->accepted_ms > TASK_START_TIMEOUT_MS)
				task_fail(s, t, ETIMEDOUT, "no worker running after %d s",
					  TASK_START_TIMEOUT_MS / 1000);
		}
		if (children__active(s->kids) && !kids_starting(s) &&
		    now_mono_ms() >= s->next_kids_ms) {
			struct child_event ev[64];
			size_t got = children__tick(s->kids, ev, 64);

			kids_found(s, ev, got);
			s->next_kids_ms = now_mono_ms() + children__period_ms(s->kids);
		}
		if (s->disc && now_mono_ms() >= s->next_scan_ms) {
			int n = discovery__scan(s->disc);

			if (n < 0)
				log_warn("discovery: reading /proc: %s, ignoring", strerror(-n));
			s->next_scan_ms = now_mono_ms() + s->cfg->discovery.scan_period_ms;
			if (s->alog)
				alog_tick(s);
		}
		for (int k = 0; k < n; k++) {
			if (!pfd[k].revents)
				continue;
			switch (kind[k]) {
			case K_LISTEN:
				accept_client(s);
				break;
			case K_SPAWNER:
				err = on_spawner(s);
				if (err) {
					/* Without the launcher no task can run: end, it restarts us. */
					log_err("launcher connection: %s", strerror(-err));
					return err;
				}
				break;
			case K_SHIPPER:
				if (s->shipper != pfd[k].fd)
					break;
				err = on_shipper(s);
				if (err)
					shipper_lost(s, err);
				break;
			case K_CLIENT:
				if (s->clients[ref[k]] == pfd[k].fd)
					on_client(s, ref[k]);
				break;
			case K_WORKER:
				if (s->tasks[ref[k]].worker == pfd[k].fd)
					on_worker(s, &s->tasks[ref[k]]);
				break;
			case K_KIDS:
				kids_ended(s);
				break;
			case K_BACKEND:
				err = on_backend(s);
				if (err) {
					log_err("backend threads: %s", strerror(-err));
					return err;
				}
				break;
			}
		}
	}
	return 0;
}

/* The launcher's answer about a pid, for discovery's names. */
static int proc_info(void *arg, int pid, struct msg_proc_info *ret)
{
	struct supervisor *s = arg;
	struct msg_proc_query q = { .pid = pid };
	const struct msg_proc_info *a;
	int err;

	if (s->disc_fd < 0)
		return -ENOTCONN;
	err = ipc_send(s->disc_fd, MSG_PROC_QUERY, &q, sizeof(q), -1);
	if (!err)
		err = ipc_recv_expect(s->disc_fd, from_launcher_proc, 1, MSG_PROC_INFO, &s->msg);
	if (err) {
		log_warn("discovery connection to the launcher: %s; names fall back to the "
			 "command line",
			 strerror(-err));
		close_fd(&s->disc_fd);
		return err;
	}
	a = s->msg.buf;
	if (a->pid != pid || ipc_check_str(a->exe, sizeof(a->exe)) ||
	    ipc_check_str(a->cwd, sizeof(a->cwd)))
		return -EPROTO;
	if (a->err)
		return -a->err;
	*ret = *a;
	return 0;
}

static void config_warn(void *ctx, const char *msg)
{
	(void)ctx;
	log_warn("config: %s", msg);
}

/* Config, host facts, discovery and the backend threads (not started yet). 0 or -errno. */
static int backend_setup(struct supervisor *s, struct config_passed *passed)
{
	struct msg_hello hello = { .role = ROLE_DISCOVERY,
				   .proto_version = IPC_VERSION,
				   .pid = (int32_t)getpid() };
	const char *proc_root = getenv("ROVER_HOST_PROC_MAPPING");
	struct oap_opts opts = { 0 };
	char errbuf[512];
	int sv[2], err;

	s->cfg = calloc(1, sizeof(*s->cfg));
	if (!s->cfg) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = config__passed_load(passed, s->cfg, errbuf, sizeof(errbuf), config_warn, NULL);
	if (err) {
		log_err("%s", errbuf);
		s->config_refused = 1;
		goto cleanup;
	}
	/* ROVER_LOG_LEVEL, for troubleshooting, wins over the config. */
	if (!getenv("ROVER_LOG_LEVEL"))
		log_set_level_name(s->cfg->logger_level);
	err = host_facts__gather(&s->host);
	if (err)
		goto cleanup;
	if (s->dir) {
		s->disc_fd = ipc_connect(s->dir, "spawner.sock");
		if (s->disc_fd >= 0 && ipc_send(s->disc_fd, MSG_HELLO, &hello, sizeof(hello), -1))
			close_fd(&s->disc_fd);
	}
	if (s->disc_fd < 0)
		log_warn("no discovery connection to the launcher; names fall back to the command "
			 "line");
	/* Discovery watches each process with an entity through a pidfd: room for many. */
	{
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < SUPERVISOR_NOFILE &&
		    rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max < SUPERVISOR_NOFILE ? rl.rlim_max
								      : SUPERVISOR_NOFILE;
			(void)setrlimit(RLIMIT_NOFILE, &rl); /* else fewer pidfds, kill(pid, 0) */
		}
	}
	s->disc = discovery__new(s->cfg, &s->host, proc_root && proc_root[0] ? proc_root : "/proc",
				 proc_info, s);
	if (!s->disc) {
		err = -errno;
		goto cleanup;
	}
	if (s->cfg->discovery.present && s->cfg->discovery.k8s_active) {
		/* Loaded only now that Kubernetes is known to be on (curl_load.c); before the
		 * sandbox, which forbids mapping code. */
		err = curl__load(errbuf, sizeof(errbuf));
		if (err) {
			log_err("%s", errbuf);
			s->config_refused = 1;
			goto cleanup;
		}
		/* Before the sandbox: libcurl's sockets and TLS state are made now. */
		s->k8s = k8s__new(s->cfg, s->host.host_name, errbuf, sizeof(errbuf));
		if (!s->k8s) {
			log_err("%s", errbuf);
			s->config_refused = 1;
			err = -EINVAL;
			goto cleanup;
		}
		discovery__set_k8s(s->disc, s->k8s);
	}
	if (s->cfg->access_log.active && !s->k8s) {
		log_warn("access log: needs process_discovery.kubernetes (it watches pods): off");
	} else if (s->cfg->access_log.active) {
		/* Before the sandbox: it reads the node's network interfaces. */
		s->alog = alog__new(s->cfg);
		if (!s->alog) {
			err = -errno;
			goto cleanup;
		}
		log_info("access log: on; the *_analyze per_cpu_buffer and parallels settings are "
			 "accepted and not used (one ring buffer and one thread serve it)");
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		goto cleanup;
	}
	s->bk_fd = sv[0];
	/* Neither side may block the other for good: a send that cannot go in 5 s fails. */
	err = ipc_set_timeouts(sv[0]);
	if (!err)
		err = ipc_set_timeouts(sv[1]);
	if (err) {
		close(sv[1]);
		goto cleanup;
	}
	opts.addr = s->cfg->backend.addr;
	opts.tls = s->cfg->backend.enable_tls;
	opts.ca_pem = passed->bytes[PASSED_CA];
	opts.cert_pem = passed->bytes[PASSED_CERT];
	opts.key_pem = passed->bytes[PASSED_KEY];
	opts.insecure_skip_verify = s->cfg->backend.insecure_skip_verify;
	opts.authentication = s->cfg->backend.authentication;
	opts.deadline_ms = (uint32_t)s->cfg->backend.call_timeout_ms;
	s->bk = backend__new(s->cfg, &opts, s->disc, &s->host, sv[1],
			     proc_root && proc_root[0] ? proc_root : "/proc");
	if (!s->bk) {
		err = -errno;
		close(sv[1]);
		goto cleanup;
	}
	log_info("agent %s: backend %s%s, discovery %s, profiling %s", s->host.instance_id,
		 s->cfg->backend.addr, s->cfg->backend.enable_tls ? " (TLS)" : "",
		 !s->cfg->discovery.present		 ? "off"
		 : s->cfg->discovery.vm_active && s->k8s ? "on (host and kubernetes)"
		 : s->cfg->discovery.vm_active		 ? "on (host)"
		 : s->k8s				 ? "on (kubernetes)"
							 : "off",
		 s->cfg->profiling.active ? "on" : "off");
cleanup:
	/* PEM bytes: gRPC copied them into its credentials. */
	config__passed_free(passed);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "socket-dir", required_argument, NULL, 'd' },
					      { "user", required_argument, NULL, 'u' },
					      CONFIG_PASSED_OPTIONS,
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	/*
	 * Static, not on the stack: its 32 task slots are about 600 KiB, which an initializer
	 * there zeroed page by page at every start (a fault each); the zero pages of .bss are
	 * touched only as slots are used.
	 */
	static struct supervisor s;
	struct config_passed passed;
	char why[512];
	struct msg_hello hello = { .role = ROLE_SUPERVISOR, .proto_version = IPC_VERSION };
	struct sigaction sa = { .sa_handler = on_term };
	const char *user = NULL;
	gid_t gid;
	int c, err;

	log_init("rover-supervisor");
	/*
	 * A fixed threshold: blocks of 1 MiB or more (an OAP answer of up to 4 MiB, its decoding)
	 * are mapped apart and given back when freed. glibc's own grows to the largest block
	 * freed, after which such answers came from the heaps of gRPC's threads and stayed there:
	 * a hostile OAP's answers took the peak from 37 to 88 MB from one run to the next.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	s.lsock = s.spawner = s.shipper = s.msg.fd = s.bk_fd = s.disc_fd = -1;
	config__passed_init(&passed);
	while ((c = getopt_long(argc, argv, "d:u:h", opts, NULL)) != -1) {
		int r = config__passed_option(&passed, c, optarg, why, sizeof(why));

		if (r < 0) {
			fprintf(stderr, "rover-supervisor: %s\n", why);
			return 2;
		}
		if (r)
			continue;
		switch (c) {
		case 'd':
			s.dir = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: rover-supervisor [--socket-dir DIR] [--user USER] " CONFIG_PASSED_USAGE
				"\n");
			return c == 'h' ? 0 : 2;
		}
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		s.clients[i] = -1;
	/* Started unprivileged (a container of its own), it stays who it is. */
	s.uid = geteuid();
	gid = getegid();
	err = geteuid() == 0 ? privdrop_lookup_user(user, &s.uid, &gid) : 0;
	if (!err)
		err = privdrop_apply(&supervisor_policy, s.uid, gid);
	/* Before any thread (gRPC's start in backend_setup): Landlock binds those to come. */
	if (!err)
		err = role_landlock(-1);
	if (err) {
		log_err("dropping privileges: %s", strerror(-err));
		return 1;
	}
	s.uid = geteuid();
	s.launcher = getppid();
	if (s.dir) {
		/* A container of its own: the launcher's spawner.sock, root's and the rover
		 * group's, in the directory the containers share. */
		s.spawner = ipc_connect(s.dir, "spawner.sock");
		hello.pid = (int32_t)getpid();
		if (s.spawner < 0 || ipc_send(s.spawner, MSG_HELLO, &hello, sizeof(hello), -1)) {
			log_err("connecting to the launcher in %s: %s", s.dir,
				s.spawner < 0 ? strerror(-s.spawner) : "hello failed");
			return 1;
		}
	} else if (ipc_is_socket(ROLE_FD_LAUNCHER) && ipc_is_socket(ROLE_FD_SECOND)) {
		s.spawner = ROLE_FD_LAUNCHER;
		s.disc_fd = ROLE_FD_SECOND;
	} else {
		log_err("started without --socket-dir and without the launcher's connections: run "
			"it through rover (rover run, rover serve)");
		return 2;
	}
	/* Spawner replies may take a while to come; no timeout on that connection's reads. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* A config names a backend: its client module, before the filter forbids mapping code. */
	if (config__passed_given(&passed) && (err = oap__load(why, sizeof(why)))) {
		log_err("loading the OAP client: %s; it is built with the binaries and installed "
			"beside them (make, make install): put it back, or profile without a backend "
			"(rover profile)",
			why);
		return 78; /* EX_CONFIG: a restart would find the same file */
	}
	if (config__passed_given(&passed) && backend_setup(&s, &passed)) {
		log_err("backend setup failed");
		/* EX_CONFIG stops the agent (a restart would refuse it again); anything else is
		 * worth a restart. */
		return s.config_refused ? 78 : 1;
	}
	/* Clients are taken once the pipeline is whole; a shipper linked later is taken too. */
	err = wait_shipper(&s, 10000);
	if (err == -EAGAIN)
		log_warn("no shipper linked yet; tasks wait for it");
	else if (err) {
		log_err("launcher connection: %s", strerror(-err));
		return 1;
	}
	{
		const char *proc_root = getenv("ROVER_HOST_PROC_MAPPING");

		/* Before the sandbox: its epoll set is made now. */
		s.kids = children__new(proc_root && proc_root[0] ? proc_root : "/proc");
		if (!s.kids)
			log_warn("following children (--children): %s; such tasks will fail",
				 strerror(errno));
	}
	err = sandbox_apply(&supervisor_policy);
	if (err) {
		log_err("seccomp: %s", strerror(-err));
		return 1;
	}
	if (s.k8s) {
		err = k8s__start(s.k8s);
		if (err) {
			log_err("starting the kubernetes thread: %s", strerror(-err));
			return 1;
		}
	}
	if (s.bk) {
		err = backend__start(s.bk);
		if (err) {
			log_err("starting backend threads: %s", strerror(-err));
			return 1;
		}
	}
	log_info("ready");
	log_debug("ready after %llu us of CPU", (unsigned long long)cpu_used_us());
	err = loop(&s);
	backend__free(s.bk);
	k8s__free(s.k8s);
	return err ? 1 : 0;
}
