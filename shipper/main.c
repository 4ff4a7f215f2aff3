// SPDX-License-Identifier: Apache-2.0
/*
 * rover-shipper: receives raw stack-id counts from workers, names them and writes (later also
 * uploads) profiles. Runs as the rover user with no capabilities, NoNewPrivs and a seccomp
 * allowlist; descriptors it may not open itself come from the launcher (shipper/opener.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/config/config.h"
#include "common/config/passed.h"
#include "common/grpc/oap.h"
#include "common/ipc.h"
#include "common/log.h"
#include "common/formats.h"
#include "common/msg.h"
#include "common/util.h"
#include "common/privdrop.h"
#include "shipper/capstone_load.h"
#include "shipper/output/clientout.h"
#include "shipper/network/network.h"
#include "shipper/opener.h"
#include "shipper/network/tlsfind.h"
#include "shipper/output/spool.h"
#include "shipper/stacks/pyfind.h"
#include "shipper/stacks/python.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/task.h"
#include "shipper/output/upload.h"
#include "shipper/stacks/unwind.h"

#define MAX_PEERS 64
#define MAX_TASKS 64
/* At SIGTERM, the upload thread's time to send what waits before the spool goes to disk. */
#define UPLOAD_GRACE_MS 2000

enum peer_kind { PEER_NEW, PEER_WORKER, PEER_SUPERVISOR };

struct peer {
	int fd;
	enum peer_kind kind;
	uint32_t expect; /* the role the launcher said this connection is (ROLE_*) */
	int32_t pid;
	uint64_t task_id; /* a worker's task, once it began */
};

struct shipper {
	int peers_fd; /* from the launcher: new connections (workers, the supervisor) */
	int opener;   /* to the launcher: files opened for us */
	uid_t uid;
	struct symbolizer *sym;
	const struct fd_opener *fdop; /* the launcher's opener, or -1 in opener */
	struct unwinder *unw;
	struct pycodes *pycodes; /* Python code records, of every task (a budget for all) */
	struct peer peers[MAX_PEERS];
	struct ship_task *tasks[MAX_TASKS];
	struct client_out outs[MAX_TASKS]; /* clients' outputs still being sent */
	int supervisor;			   /* index in peers, -1 */
	struct ipc_msg msg;
	/* Backend output, with --config-fd only. */
	struct rover_config *cfg;
	struct spool *spool;
	struct uploader *up;
	int landlocked;
};

static const struct ipc_rule launcher_rules[] = {
	{ MSG_PEER_CONN, sizeof(struct msg_peer_conn), sizeof(struct msg_peer_conn), 0, 1 },
};

static const struct ipc_rule hello_rules[] = {
	{ MSG_HELLO, sizeof(struct msg_hello), sizeof(struct msg_hello), 0, 0 },
};

static const struct ipc_rule worker_rules[] = {
	{ MSG_SHIP_BEGIN, sizeof(struct task_spec), sizeof(struct task_spec), 0, 0 },
	{ MSG_SHIP_STACKS, sizeof(struct ship_stack), 1000 * sizeof(struct ship_stack),
	  sizeof(struct ship_stack), 0 },
	{ MSG_SHIP_COUNTS, sizeof(struct ship_counts_hdr), IPC_MAX_PAYLOAD,
	  sizeof(struct ship_count), 0 },
	{ MSG_SHIP_END, sizeof(struct ship_end), sizeof(struct ship_end), 0, 0 },
	{ MSG_SHIP_SNAPSHOTS, sizeof(struct ship_snapshots_hdr), IPC_MAX_PAYLOAD, 0, 0 },
	{ MSG_SHIP_NET_DATA, sizeof(struct ship_net_hdr), IPC_MAX_PAYLOAD, 0, 0 },
	{ MSG_SHIP_NET_CONNS, sizeof(struct ship_net_hdr), IPC_MAX_PAYLOAD, 0, 0 },
	{ MSG_NET_TLS_RESULT, sizeof(struct msg_tls_result), sizeof(struct msg_tls_result), 0, 0 },
	{ MSG_SHIP_KSYMS, sizeof(struct ship_ksyms_hdr), IPC_MAX_PAYLOAD, 0, 0 },
	{ MSG_SHIP_PY_RESULT, sizeof(struct msg_py_result), sizeof(struct msg_py_result), 0, 0 },
	{ MSG_SHIP_PYCODES, sizeof(struct ship_pycodes_hdr), IPC_MAX_PAYLOAD, 0, 0 },
};

static const struct ipc_rule supervisor_rules[] = {
	{ MSG_OUTPUT_OPEN, sizeof(struct msg_output), sizeof(struct msg_output), 0, 1 },
	{ MSG_OUTPUT_ABORT, sizeof(struct msg_output_abort), sizeof(struct msg_output_abort), 0,
	  0 },
	{ MSG_OUTPUT_BACKEND, sizeof(struct msg_output_backend), sizeof(struct msg_output_backend),
	  0, 0 },
	{ MSG_OUTPUT_NETWORK, sizeof(struct msg_output_network), sizeof(struct msg_output_network),
	  0, 0 },
	{ MSG_OUTPUT_ACCESSLOG, sizeof(struct msg_output_accesslog),
	  sizeof(struct msg_output_accesslog), 0, 0 },
	{ MSG_ALOG_PROCS, sizeof(struct msg_alog_procs_hdr),
	  sizeof(struct msg_alog_procs_hdr) + MSG_ALOG_PROCS_MAX * sizeof(struct msg_alog_proc),
	  sizeof(struct msg_alog_proc), 0 },
};

#define NRULES(r) (sizeof(r) / sizeof((r)[0]))

/* One line per file a memory budget refused (shipper/stacks/unwind.c, shipper/stacks/elfsym.c). */
static void log_refusal(void *ctx, const struct budget_refusal *r)
{
	(void)ctx;
	log_warn("%s: %s would take %llu KiB, over the budget of %llu KiB per file: "
		 "frames there unwound with frame pointers or named module+offset, ignoring",
		 r->path, r->what, (unsigned long long)(r->bytes >> 10),
		 (unsigned long long)(r->limit >> 10));
}

static struct ship_task **task_slot(struct shipper *s, uint64_t id, int create)
{
	struct ship_task **free_slot = NULL;

	for (int i = 0; i < MAX_TASKS; i++) {
		if (s->tasks[i] && s->tasks[i]->task_id == id)
			return &s->tasks[i];
		if (!s->tasks[i] && !free_slot)
			free_slot = &s->tasks[i];
	}
	if (!create || !free_slot)
		return NULL;
	*free_slot = ship_task__new(id);
	return *free_slot ? free_slot : NULL;
}

static void drop_peer(struct shipper *s, int i, const char *why)
{
	struct peer *p = &s->peers[i];

	if (why)
		log_warn("peer pid %d (%s): %s, disconnecting", p->pid,
			 p->kind == PEER_WORKER	      ? "worker"
			 : p->kind == PEER_SUPERVISOR ? "supervisor"
						      : "new",
			 why);
	close(p->fd);
	p->fd = -1;
	if (s->supervisor == i)
		s->supervisor = -1;
}

/* Hands the task's finished flushes to the spool; the upload thread takes them from there. */
static void queue_batches(struct shipper *s, struct ship_task *t)
{
	struct spool_batch b;
	int r;

	while ((r = ship_task__next_batch(t, &b))) {
		uint64_t n;

		if (r < 0) {
			log_warn("task %llu: building an upload: %s, dropped",
				 (unsigned long long)t->task_id, strerror(-r));
			continue;
		}
		n = b.samples;
		/* A batch the spool refuses is counted by spool_dropped(). */
		if (!spool__put(s->spool, &b))
			t->up_queued += n;
	}
}

/*
 * A task's targets' mappings go with it, unless another task still profiles them: kept, the
 * processes of a host where they come and go (tasks on each) would fill the cache with the
 * dead's, up to its 64 MiB. A later task on a pid takes its snapshot afresh anyway
 * (ship_task__begin); symbol tables stay, cached by file.
 */
static void forget_targets(struct shipper *s, const struct ship_task *t)
{
	for (uint32_t i = 0; t->have_spec && i < t->spec.npids; i++) {
		int shared = 0;

		for (int k = 0; k < MAX_TASKS && !shared; k++) {
			const struct ship_task *o = s->tasks[k];

			for (uint32_t j = 0; o && o != t && o->have_spec && j < o->spec.npids; j++)
				shared |= o->spec.pids[j] == t->spec.pids[i];
		}
		if (!shared) {
			symbolizer__forget_pid(s->sym, t->spec.pids[i]);
			pycodes__forget_pid(s->pycodes, t->spec.pids[i]);
		}
	}
}

/* sh_answer_written: the profile of a task is out, tell the supervisor and forget the task. */
static void output_written(struct shipper *s, const struct msg_output_written *w)
{
	if (s->supervisor >= 0 &&
	    ipc_send(s->peers[s->supervisor].fd, MSG_OUTPUT_WRITTEN, w, sizeof(*w), -1))
		drop_peer(s, s->supervisor, "send failed");
}

/*
 * Sends what the client's socket takes of o now; once it is all sent or cannot be, the
 * supervisor hears how the task ended and o's slot is free.
 */
static void push_output(struct shipper *s, struct client_out *o)
{
	int rc = clientout__push(o, now_mono_ms());

	if (!rc)
		return;
	if (rc < 0) {
		log_warn("task %llu: output not delivered (%zu of %zu bytes taken): %s%s",
			 (unsigned long long)o->w.task_id, o->off, o->len, strerror(-rc),
			 rc == -ENOTSOCK ? " (a client's output must be a stream socket)" : "");
		if (!o->w.err)
			o->w.err = -rc;
	}
	output_written(s, &o->w);
	clientout__end(o);
}

/*
 * A client's profile or report, rendered in memory and handed to push_output: the client's
 * end of the socket decides when it is taken, never our loop. 0, or -errno with ret's err set.
 */
static int render_output(struct shipper *s, struct ship_task *t, struct msg_output_written *ret)
{
	struct client_out *o = NULL;
	size_t len = 0;
	char *buf = NULL;
	FILE *f;
	int err;

	for (int i = 0; i < MAX_TASKS && !o; i++)
		if (s->outs[i].fd < 0)
			o = &s->outs[i];
	f = open_memstream(&buf, &len);
	if (!o || !f) {
		/* One slot per task slot: a full table is a bug, said as such. */
		err = o ? -errno : -ENOSPC;
		if (f)
			fclose(f);
		free(buf);
		memset(ret, 0, sizeof(*ret));
		ret->task_id = t->task_id;
		ret->err = -err;
		return err;
	}
	err = ship_task__write(t, f, ret);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		ret->err = -err;
		free(buf);
		return err;
	}
	clientout__start(o, t->out_fd, buf, len, now_mono_ms(), ret);
	t->out_fd = -1;
	push_output(s, o);
	return 0;
}

/* The access log's batch when one is due (last: the task ends): to the spool. */
static void alog_flush(struct shipper *s, struct ship_task *t, bool last)
{
	struct spool_batch b = { .task_id = t->task_id, .kind = SPOOL_ACCESSLOG };
	int r = ship_task__alog_flush(t, now_mono_ms(), last, &b);

	if (r < 0)
		log_warn("task %llu: access log: %s", (unsigned long long)t->task_id, strerror(-r));
	/* A batch the spool refuses is counted by spool_dropped(). */
	if (r > 0 && s->spool)
		spool__put(s->spool, &b);
	free(b.data);
	if (r > 0 || last) {
		/*
		 * What the module lost so far, said when it first grows, then at most once a
		 * minute of flushes while it still grows, and at the end.
		 */
		struct net_stats st;
		uint64_t lost;

		net_task__stats(t->net, &st);
		lost = st.alog_logs_dropped + st.alog_conns_dropped + st.alog_bad_procs +
		       st.kernel[NET_STAT_CALL_RINGBUF] + st.kernel[NET_STAT_PKT_FULL] +
		       st.kernel[NET_STAT_DATA_RINGBUF] + st.kernel[NET_STAT_INFLIGHT_FULL] +
		       st.kernel[NET_STAT_CONNS_FULL] + st.bad_records + st.bad_frames;
		t->alog_flushes++;
		if ((lost > t->alog_lost_said && (!t->alog_lost_said || !(t->alog_flushes % 60))) ||
		    (last && lost))
			log_warn("access log: lost so far: %llu logs over the pending bound "
				 "(2 x flush.max_count), %llu of connections over queue_size, "
				 "%llu of processes never named; kernel: %llu call records "
				 "(ring full), %llu packets not joined, %llu payload segments, "
				 "%llu calls not traced, %llu connections not tracked; %llu bad "
				 "records, %llu bad frames, %llu bad process entries",
				 (unsigned long long)st.alog_logs_dropped,
				 (unsigned long long)st.alog_conns_dropped,
				 (unsigned long long)st.alog_unknown_pids,
				 (unsigned long long)st.kernel[NET_STAT_CALL_RINGBUF],
				 (unsigned long long)st.kernel[NET_STAT_PKT_FULL],
				 (unsigned long long)st.kernel[NET_STAT_DATA_RINGBUF],
				 (unsigned long long)st.kernel[NET_STAT_INFLIGHT_FULL],
				 (unsigned long long)st.kernel[NET_STAT_CONNS_FULL],
				 (unsigned long long)st.bad_records,
				 (unsigned long long)st.bad_frames,
				 (unsigned long long)st.alog_bad_procs);
		if (lost > t->alog_lost_said && (!t->alog_lost_said || !(t->alog_flushes % 60)))
			t->alog_lost_said = lost;
	}
}

static void finish_task(struct shipper *s, struct ship_task **slot, int aborted)
{
	struct ship_task *t = *slot;
	struct msg_output_written w;
	int err, pending = 0;

	if (t->alog)
		alog_flush(s, t, true);
	if (t->backend) {
		ship_task__end_uploads(t);
		queue_batches(s, t);
		ship_task__summarize(t, &w);
		log_info("task %llu: to the backend: %llu samples taken, %llu queued, %llu dropped "
			 "by the spool so far%s",
			 (unsigned long long)t->task_id, (unsigned long long)t->up_taken,
			 (unsigned long long)t->up_queued, (unsigned long long)t->up_dropped,
			 aborted ? " (task aborted)" : "");
	} else if ((err = render_output(s, t, &w))) {
		log_warn("task %llu: writing profile: %s", (unsigned long long)t->task_id,
			 strerror(-err));
	} else {
		pending = 1;
		log_info("task %llu: profile made: %llu samples, %llu stacks%s",
			 (unsigned long long)t->task_id, (unsigned long long)w.samples,
			 (unsigned long long)w.stacks, aborted ? " (task aborted)" : "");
	}
	ship_task__py_log(t);
	if (t->stacks_cut)
		log_info("task %llu: %llu user stacks lost outer frames to a stack hint too short "
			 "(each raised it)",
			 (unsigned long long)t->task_id, (unsigned long long)t->stacks_cut);
	log_debug("task %llu: %llu bytes of user stack in snapshots",
		  (unsigned long long)t->task_id, (unsigned long long)t->snap_bytes);
	/* A client's output says so once the client took it (push_output). */
	if (!pending)
		output_written(s, &w);
	forget_targets(s, t);
	ship_task__free(t);
	*slot = NULL;
}

/* Continuous profiling's HTTP monitor: this flush's counts to the supervisor. */
static void send_monitor(struct shipper *s, struct ship_task *t)
{
	size_t len = sizeof(struct msg_net_monitor) +
		     MSG_NET_MONITOR_MAX * sizeof(struct msg_net_monitor_entry);
	struct msg_net_monitor *m = malloc(len);
	int err;

	if (!m)
		return;
	m->task_id = t->task_id;
	m->count = (uint32_t)net_task__monitor_take(t->net, (struct msg_net_monitor_entry *)(m + 1),
						    MSG_NET_MONITOR_MAX, &m->dropped);
	len = sizeof(*m) + m->count * sizeof(struct msg_net_monitor_entry);
	err = ipc_send(s->peers[s->supervisor].fd, MSG_NET_MONITOR, m, len, -1);
	if (err)
		log_warn("task %llu: HTTP monitor counts to the supervisor: %s",
			 (unsigned long long)t->task_id, strerror(-err));
	free(m);
}

/*
 * A NETWORK frame. Bad records are counted by the analysis and do not end the worker's
 * connection; only a frame of another task does.
 */
static int on_net_frame(struct shipper *s, struct ship_task *t, struct ipc_msg *m)
{
	struct spool_batch meters = { .task_id = t->task_id, .kind = SPOOL_METERS };
	struct spool_batch logs = { .task_id = t->task_id, .kind = SPOOL_LOGS };
	struct spool_batch events = { .task_id = t->task_id, .kind = SPOOL_EVENTS };
	const struct ship_net_hdr *h = m->buf;
	int err;

	if (h->task_id != t->task_id)
		return -EPROTO;
	err = ship_task__net_frame(t, m->type, m->buf, m->len, &meters, &logs, &events);
	if (err && err != -EBADMSG)
		log_warn("task %llu: network frame: %s", (unsigned long long)t->task_id,
			 strerror(-err));
	if (t->net) {
		/* How TLS calls found their connections, said once a task when it is not plain. */
		struct net_stats st;

		net_task__stats(t->net, &st);
		if (!t->said_adjacent && st.kernel[NET_STAT_TLS_ADJACENT]) {
			t->said_adjacent = 1;
			log_info("task %llu: TLS calls that made no socket call (a memory BIO, as "
				 "node's) are joined to their thread's last socket call "
				 "(tls_adjacent)",
				 (unsigned long long)t->task_id);
		}
		if (!t->said_unbound && st.kernel[NET_STAT_TLS_UNBOUND]) {
			t->said_unbound = 1;
			log_warn("task %llu: TLS calls on no connection that could be named: their "
				 "plaintext is not used, counted lost (kernel_tls_unbound)",
				 (unsigned long long)t->task_id);
		}
	}
	if (t->monitor && m->type == MSG_SHIP_NET_CONNS && s->supervisor >= 0)
		send_monitor(s, t);
	if (t->alog)
		alog_flush(s, t, false);
	if (meters.nmsgs && s->spool)
		spool__put(s->spool, &meters);
	if (logs.nmsgs && s->spool)
		spool__put(s->spool, &logs);
	if (events.nmsgs && s->spool)
		spool__put(s->spool, &events);
	free(meters.data);
	free(logs.data);
	free(events.data);
	return 0;
}

/*
 * How often a NETWORK task's targets are looked through again for TLS libraries: a task's,
 * and a continuous-profiling monitor's (TASK_MONITOR), whose processes are many, long-lived
 * and looked through when they become its targets.
 */
#define TLS_RESCAN_MS 5000
#define TLS_RESCAN_MONITOR_MS 30000

struct tls_send {
	struct peer *worker;
	struct ship_task *t;
};

/* A TLS library found: to the worker with the file's descriptor, and into the report. */
static int send_tls(void *ctx, const struct msg_tls_attach *m, int fd)
{
	struct tls_send *ts = ctx;
	struct net_tls_file l = { .pid = m->pid, .lib = m->lib, .probes = m->nprobes, .err = 1 };

	snprintf(l.path, sizeof(l.path), "%s", m->path);
	net_task__tls_lib(ts->t->net, &l);
	return ipc_send(ts->worker->fd, MSG_NET_TLS_ATTACH, m, sizeof(*m), fd);
}

/*
 * The TLS libraries of a NETWORK task's targets: looked for when the task begins and at each
 * flush after, so that one mapped later (a Python import, a dlopen) is probed from then on.
 */
static void find_tls(struct shipper *s, struct peer *p, struct ship_task *t)
{
	struct tls_send ts = { p, t };

	if (!t->net || s->opener < 0)
		return;
	if (!t->tls) {
		t->tls = tls_finder__new(t->task_id);
		if (!t->tls)
			return;
	}
	if (t->alog) {
		/* The access log's processes are the supervisor's word, not the spec's. */
		int32_t *pids = malloc(ALOG_MAX_PIDS * sizeof(*pids));
		size_t n = pids ? net_task__alog_pids(t->net, pids, ALOG_MAX_PIDS) : 0;

		for (size_t i = 0; i < n && p->fd >= 0; i++)
			(void)tls_finder__scan(t->tls, s->fdop, pids[i], send_tls, &ts);
		free(pids);
		return;
	}
	for (uint32_t i = 0; i < t->spec.npids && p->fd >= 0; i++)
		(void)tls_finder__scan(t->tls, s->fdop, t->spec.pids[i], send_tls, &ts);
}

static void on_tls_result(struct ship_task *t, const struct msg_tls_result *r)
{
	const struct tls_probed *pr;
	uint32_t n;

	if (!t->tls || r->task_id != t->task_id)
		return;
	tls_finder__result(t->tls, r);
	pr = tls_finder__probed(t->tls, &n);
	for (uint32_t i = 0; i < n; i++) {
		struct net_tls_file l = { .pid = pr[i].pid,
					  .lib = pr[i].lib,
					  .probes = pr[i].nprobes,
					  .attached = pr[i].attached,
					  .err = pr[i].err };

		if (pr[i].seq != r->seq)
			continue;
		snprintf(l.path, sizeof(l.path), "%s", pr[i].path);
		net_task__tls_lib(t->net, &l);
	}
}

/*
 * The stack bytes the worker should send of each target (MSG_SHIP_STACK_HINT). Not sent, the
 * worker goes on sending whole snapshots: nothing is lost, so a failure is only said.
 */
static void send_stack_hints(struct ship_task *t, struct peer *p)
{
	struct msg_stack_hint h[ROVER_MAX_PIDS];
	size_t n = ship_task__stack_hints(t, h, ROVER_MAX_PIDS);

	for (size_t i = 0; i < n; i++) {
		int err = ipc_send(p->fd, MSG_SHIP_STACK_HINT, &h[i], sizeof(h[i]), -1);

		if (err) {
			log_debug("task %llu: stack hint to the worker: %s",
				  (unsigned long long)t->task_id, strerror(-err));
			return;
		}
		log_debug("task %llu: snapshots of process %d: %u bytes of stack",
			  (unsigned long long)t->task_id, h[i].tgid, h[i].bytes);
	}
}

/* An interpreter found: to the worker, with the file's descriptor. */
static int send_py(void *ctx, const struct msg_py_attach *m, int fd)
{
	struct peer *worker = ctx;

	return ipc_send(worker->fd, MSG_SHIP_PY_ATTACH, m, sizeof(*m), fd);
}

/*
 * The CPython interpreters of a stack task's targets (--unwind dwarf: the worker reads Python
 * frames with its snapshots): looked for at the task's begin, and again for a target whose
 * mappings the symbolizer read again since (an address in none of them: new code mapped, or
 * an exec), which it does once a second at most.
 */
static void find_python(struct shipper *s, struct peer *p, struct ship_task *t)
{
	if (t->net || t->spec.unwind == UNWIND_FP || (t->spec.flags & TASK_PYTHON_OFF) ||
	    s->opener < 0)
		return;
	if (!t->pyfind && !(t->pyfind = py_finder__new(t->task_id)))
		return;
	for (uint32_t i = 0; i < t->spec.npids && p->fd >= 0; i++) {
		uint64_t stamp = symbolizer__maps_stamp(s->sym, t->spec.pids[i]);
		int err;

		/* + 1: a target never looked at holds 0 (its stamp is 0 when no maps are held). */
		if (stamp + 1 == t->maps_seen[i])
			continue;
		t->maps_seen[i] = stamp + 1;
		err = py_finder__scan(t->pyfind, s->fdop, t->spec.pids[i], send_py, p);
		if (err < 0 && err != -ENOENT && err != -ESRCH)
			log_debug("task %llu: python in pid %d: %s", (unsigned long long)t->task_id,
				  t->spec.pids[i], strerror(-err));
	}
}

static int on_worker(struct shipper *s, struct peer *p)
{
	struct ipc_msg *m = &s->msg;
	struct ship_task **slot;
	int err = ipc_recv(p->fd, worker_rules, NRULES(worker_rules), m);

	if (err)
		return err;
	if (m->type == MSG_SHIP_BEGIN) {
		const struct task_spec *spec = m->buf;

		if (p->task_id || !spec->task_id)
			return -EPROTO;
		int created = !task_slot(s, spec->task_id, 0);

		slot = task_slot(s, spec->task_id, 1);
		if (!slot)
			return -ENOSPC;
		p->task_id = spec->task_id;
		(*slot)->net_prefix = s->cfg ? s->cfg->profiling.network_meter_prefix : NULL;
		err = ship_task__begin(*slot, spec, s->sym);
		/* CFI now, as the mappings: the target may be gone by the first snapshot. */
		for (uint32_t i = 0; !err && spec->unwind != UNWIND_FP && i < spec->npids; i++)
			(void)unwinder__load_pid(s->unw, spec->pids[i]);
		if (err && created) {
			/* Not the supervisor's: a worker sending bad BEGINs must not fill the table. */
			ship_task__free(*slot);
			*slot = NULL;
		}
		if (!err) {
			(*slot)->pycodes = s->pycodes;
			find_tls(s, p, *slot);
			find_python(s, p, *slot);
		}
		return err;
	}
	slot = p->task_id ? task_slot(s, p->task_id, 0) : NULL;
	if (!slot)
		return p->task_id ? 0 : -EPROTO; /* task written or aborted: the rest is moot */
	if ((m->type == MSG_SHIP_NET_DATA || m->type == MSG_SHIP_NET_CONNS ||
	     m->type == MSG_NET_TLS_RESULT) != !!(*slot)->net &&
	    m->type != MSG_SHIP_END)
		return -EPROTO; /* a frame of another task type */
	switch (m->type) {
	case MSG_SHIP_PY_RESULT: {
		const struct msg_py_result *r = m->buf;

		if (r->task_id != (*slot)->task_id)
			return -EPROTO;
		if ((*slot)->pyfind)
			py_finder__result((*slot)->pyfind, r);
		return 0;
	}
	case MSG_SHIP_PYCODES:
		return ship_task__pycodes(*slot, m->buf, m->len);
	case MSG_NET_TLS_RESULT:
		on_tls_result(*slot, m->buf);
		return 0;
	case MSG_SHIP_NET_CONNS:
		err = on_net_frame(s, *slot, m);
		/*
		 * Libraries mapped since: looked for at most every TLS_RESCAN_MS (each look asks
		 * the launcher for and reads every target's maps; an HTTP monitor flushes every
		 * second).
		 */
		if (!err && !(*slot)->ended && now_mono_ms() >= (*slot)->tls_next_ms) {
			find_tls(s, p, *slot);
			(*slot)->tls_next_ms = now_mono_ms() + ((*slot)->spec.flags & TASK_MONITOR
									? TLS_RESCAN_MONITOR_MS
									: TLS_RESCAN_MS);
		}
		return err;
	case MSG_SHIP_NET_DATA:
		return on_net_frame(s, *slot, m);
	case MSG_SHIP_STACKS:
		return ship_task__stacks(*slot, m->buf, m->len / sizeof(struct ship_stack));
	case MSG_SHIP_KSYMS:
		return ship_task__ksyms(*slot, m->buf, m->len);
	case MSG_SHIP_COUNTS:
		err = ship_task__counts(*slot, m->buf,
					(const struct ship_count *)((char *)m->buf +
								    sizeof(struct ship_counts_hdr)),
					(m->len - sizeof(struct ship_counts_hdr)) /
						sizeof(struct ship_count),
					s->sym);
		if (!err && (*slot)->backend)
			queue_batches(s, *slot);
		return err;
	case MSG_SHIP_SNAPSHOTS:
		err = ship_task__snapshots(*slot, m->buf, m->len, s->sym, s->unw);
		if (!err)
			send_stack_hints(*slot, p);
		if (!err && !(*slot)->ended)
			find_python(s, p, *slot);
		if (!err && (*slot)->backend)
			queue_batches(s, *slot);
		return err;
	case MSG_SHIP_END: {
		const struct ship_end *e = m->buf;

		if (e->task_id != p->task_id)
			return -EPROTO;
		(*slot)->ended = 1;
		(*slot)->end_reason = e->reason;
		if ((*slot)->out_fd >= 0 || (*slot)->backend)
			finish_task(s, slot, 0);
		return 0;
	}
	}
	return -EPROTO;
}

/* A task whose data should go to a backend this shipper has none of: dropped, said so. */
static int refuse_backend(struct shipper *s, uint64_t task_id)
{
	struct msg_output_written w = { .task_id = task_id, .err = ENOTCONN };
	struct ship_task **slot = task_slot(s, task_id, 0);

	if (slot) {
		forget_targets(s, *slot);
		ship_task__free(*slot);
		*slot = NULL;
	}
	log_warn("task %llu: no backend configured, its data is dropped",
		 (unsigned long long)task_id);
	if (ipc_send(s->peers[s->supervisor].fd, MSG_OUTPUT_WRITTEN, &w, sizeof(w), -1))
		return -EPIPE;
	return 0;
}

/* sh_answer_backend: the task's data goes to the backend; refused (ENOTCONN) without one. */
static int on_output_backend(struct shipper *s, const struct msg_output_backend *b)
{
	struct ship_task **slot;
	int err;

	if (!b->task_id)
		return -EPROTO;
	if (!s->spool)
		return refuse_backend(s, b->task_id);
	slot = task_slot(s, b->task_id, 1);
	if (!slot)
		return -ENOSPC;
	err = ship_task__set_backend(*slot, b);
	if (err)
		return err;
	queue_batches(s, *slot);
	if ((*slot)->ended)
		finish_task(s, slot, 0);
	return 0;
}

/*
 * The backend half of a NETWORK task: its meters and sampled traces go to the backend every
 * report interval; again for the same task: rules added (keep-alive).
 */
static int on_output_network(struct shipper *s, const struct msg_output_network *o)
{
	struct ship_task **slot;

	if (!o->task_id)
		return -EPROTO;
	if (!s->spool)
		return refuse_backend(s, o->task_id);
	slot = task_slot(s, o->task_id, 0);
	if (!slot) {
		/* The worker's begin comes after the supervisor's word: keep it for then. */
		slot = task_slot(s, o->task_id, 1);
		if (!slot)
			return -ENOSPC;
	}
	if (!(*slot)->net) {
		struct ship_task *t = *slot;

		free(t->net_pending);
		t->net_pending = malloc(sizeof(*o));
		if (!t->net_pending)
			return -ENOMEM;
		memcpy(t->net_pending, o, sizeof(*o));
		return 0;
	}
	return ship_task__set_network(*slot, o);
}

static int on_supervisor(struct shipper *s, struct peer *p)
{
	struct ipc_msg *m = &s->msg;
	struct ship_task **slot;
	int err = ipc_recv(p->fd, supervisor_rules, NRULES(supervisor_rules), m);

	if (err)
		return err;
	if (m->type == MSG_OUTPUT_OPEN) {
		const struct msg_output *o = m->buf;
		int fd = m->fd;

		/* The descriptor is ours from here: kept by the task, or closed. */
		m->fd = -1;
		if (!o->task_id || !output_format_info(o->format)) {
			close(fd);
			return -EPROTO;
		}
		slot = task_slot(s, o->task_id, 1);
		if (!slot || (*slot)->out_fd >= 0) {
			close(fd);
			return slot ? -EPROTO : -ENOSPC;
		}
		(*slot)->out_fd = fd;
		(*slot)->format = o->format;
		if ((*slot)->ended)
			finish_task(s, slot, 0);
		return 0;
	}
	if (m->type == MSG_OUTPUT_BACKEND)
		return on_output_backend(s, m->buf);
	if (m->type == MSG_OUTPUT_NETWORK)
		return on_output_network(s, m->buf);
	if (m->type == MSG_OUTPUT_ACCESSLOG) {
		const struct msg_output_accesslog *o = m->buf;

		if (!o->task_id)
			return -EPROTO;
		if (!s->spool)
			return refuse_backend(s, o->task_id);
		slot = task_slot(s, o->task_id, 1);
		if (!slot)
			return -ENOSPC;
		return ship_task__set_accesslog(*slot, o);
	}
	if (m->type == MSG_ALOG_PROCS) {
		struct msg_alog_procs_hdr h;

		memcpy(&h, m->buf, sizeof(h));
		if (h.count != (m->len - sizeof(h)) / sizeof(struct msg_alog_proc))
			return -EPROTO;
		slot = task_slot(s, h.task_id, 0);
		if (!slot || !(*slot)->alog)
			return 0; /* a task given up meanwhile */
		return net_task__alog_procs((*slot)->net,
					    (const struct msg_alog_proc *)((const uint8_t *)m->buf +
									   sizeof(h)),
					    h.count);
	}
	/* MSG_OUTPUT_ABORT: write what was collected, the supervisor reports the failure. */
	{
		const struct msg_output_abort *a = m->buf;

		slot = task_slot(s, a->task_id, 0);
		if (slot && ((*slot)->out_fd >= 0 || (*slot)->backend))
			finish_task(s, slot, 1);
		else if (slot) {
			forget_targets(s, *slot);
			ship_task__free(*slot);
			*slot = NULL;
		}
	}
	return 0;
}

static void on_hello(struct shipper *s, int i)
{
	struct peer *p = &s->peers[i];
	const struct msg_hello *h;

	if (ipc_recv_expect(p->fd, hello_rules, 1, MSG_HELLO, &s->msg)) {
		drop_peer(s, i, "bad hello");
		return;
	}
	h = s->msg.buf;
	/* The launcher made the connection and said whose it is: the hello must agree. */
	if (h->role != p->expect) {
		drop_peer(s, i, "hello of another role than the launcher said");
	} else if (h->role == ROLE_WORKER) {
		p->kind = PEER_WORKER;
	} else {
		if (s->supervisor >= 0)
			drop_peer(s, s->supervisor, "replaced by a new supervisor");
		p->kind = PEER_SUPERVISOR;
		s->supervisor = i;
	}
}

/*
 * A connection the launcher made for us: a worker it started, or the supervisor. No role
 * reaches us by a path, so nothing else can pose as one. 0, or -errno when the launcher's
 * channel broke (the launcher restarts us).
 */
static int take_peer(struct shipper *s)
{
	const struct msg_peer_conn *c;
	int err = ipc_recv(s->peers_fd, launcher_rules, NRULES(launcher_rules), &s->msg);
	int fd;

	if (err)
		return err;
	c = s->msg.buf;
	fd = s->msg.fd;
	s->msg.fd = -1;
	if (c->role != ROLE_WORKER && c->role != ROLE_SUPERVISOR) {
		close(fd);
		return -EPROTO;
	}
	if (ipc_set_timeouts(fd)) {
		close(fd);
		return 0;
	}
	for (int i = 0; i < MAX_PEERS; i++) {
		if (s->peers[i].fd < 0) {
			s->peers[i] = (struct peer){
				.fd = fd, .kind = PEER_NEW, .pid = c->pid, .expect = c->role
			};
			return 0;
		}
	}
	log_warn("too many peers, refusing pid %d", c->pid);
	close(fd);
	return 0;
}

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static int loop(struct shipper *s)
{
	struct pollfd pfd[MAX_PEERS + 1 + MAX_TASKS];
	int idx[MAX_PEERS + 1 + MAX_TASKS];

	while (!stopping) {
		int n = 0, npeers, timeout = -1;
		uint64_t now = now_mono_ms();

		pfd[n] = (struct pollfd){ .fd = s->peers_fd, .events = POLLIN };
		idx[n++] = -1;
		for (int i = 0; i < MAX_PEERS; i++) {
			if (s->peers[i].fd < 0)
				continue;
			pfd[n] = (struct pollfd){ .fd = s->peers[i].fd, .events = POLLIN };
			idx[n++] = i;
		}
		npeers = n;
		/* Clients' outputs: woken when their socket takes more, or at their deadline. */
		for (int i = 0; i < MAX_TASKS; i++) {
			struct client_out *o = &s->outs[i];
			uint64_t left;

			if (o->fd < 0)
				continue;
			pfd[n] = (struct pollfd){ .fd = o->fd, .events = POLLOUT };
			idx[n++] = i;
			left = o->deadline_ms > now ? o->deadline_ms - now : 0;
			if (timeout < 0 || left < (uint64_t)timeout)
				timeout = (int)left;
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int k = npeers; k < n; k++) {
			struct client_out *o = &s->outs[idx[k]];

			if (o->fd >= 0 && (pfd[k].revents || now_mono_ms() >= o->deadline_ms))
				push_output(s, o);
		}
		n = npeers;
		if (pfd[0].revents) {
			int err = take_peer(s);

			if (err) {
				log_err("launcher connection: %s", strerror(-err));
				return err;
			}
		}
		for (int k = 1; k < n; k++) {
			struct peer *p = &s->peers[idx[k]];
			int err;

			if (!pfd[k].revents || p->fd < 0)
				continue;
			if (p->kind == PEER_NEW) {
				on_hello(s, idx[k]);
				continue;
			}
			err = p->kind == PEER_WORKER ? on_worker(s, p) : on_supervisor(s, p);
			if (err && err != -EPIPE)
				log_debug("peer %d: message type %u len %u: %s", p->pid,
					  s->msg.type, s->msg.len, strerror(-err));
			if (err == -EPIPE)
				drop_peer(s, idx[k], NULL);
			else if (err)
				drop_peer(s, idx[k], strerror(-err));
		}
	}
	return 0;
}

/*
 * Told by the spool of every batch it drops. Drops at the bound happen in put and persist, so
 * in this (the main) thread, where tasks may be looked at; corrupt files show up in the
 * upload thread's take too and touch no task.
 */
static void spool_dropped(void *ctx, const struct spool_drop *d)
{
	struct shipper *s = ctx;

	if (d->why == SPOOL_DROP_CORRUPT) {
		log_warn("spool: %s: %s, dropped", d->file, d->detail);
		return;
	}
	{
		struct ship_task **slot = task_slot(s, d->task_id, 0);

		if (slot)
			(*slot)->up_dropped += d->samples;
	}
	if (d->why == SPOOL_DROP_TOO_BIG)
		log_warn("task %llu: an upload of %llu samples is larger than the spool, dropped",
			 (unsigned long long)d->task_id, (unsigned long long)d->samples);
	else if (d->first_of_episode)
		log_warn("spool full: dropping the oldest uploads (first: task %llu, %llu samples); "
			 "counted, not logged again until the spool has room",
			 (unsigned long long)d->task_id, (unsigned long long)d->samples);
}

static void config_warn(void *ctx, const char *msg)
{
	(void)ctx;
	log_warn("config: %s", msg);
}

/*
 * The backend output: config, spool (its files picked up) and the upload thread. Before the
 * sandbox: the descriptors are read and the spool directory is opened here; the seccomp
 * filter, installed after, covers the upload thread and gRPC's own (TSYNC). 0 or -errno.
 */
static int backend_setup(struct shipper *s, struct config_passed *passed)
{
	struct uploader_opts uo = { 0 };
	struct spool_opts so = { 0 };
	char errbuf[512];
	int err;

	s->cfg = calloc(1, sizeof(*s->cfg));
	if (!s->cfg) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = config__passed_load(passed, s->cfg, errbuf, sizeof(errbuf), config_warn, NULL);
	if (err) {
		log_err("%s", errbuf);
		free(s->cfg);
		s->cfg = NULL;
		goto cleanup;
	}
	/* ROVER_LOG_LEVEL, for troubleshooting, wins over the config. */
	if (!getenv("ROVER_LOG_LEVEL"))
		log_set_level_name(s->cfg->logger_level);
	so.dir = s->cfg->backend.spool_dir;
	so.fixed_dirfd = SPOOL_DIR_FD; /* where the seccomp policy lets it write */
	so.mem_bytes = s->cfg->backend.spool_memory_bytes;
	so.disk_bytes = s->cfg->backend.spool_disk_bytes;
	so.on_drop = spool_dropped;
	so.ctx = s;
	s->spool = spool__new(&so);
	if (!s->spool && so.dir && so.dir[0]) {
		log_warn("spool directory %s: %s; uploads wait in memory only", so.dir,
			 strerror(errno));
		so.dir = NULL;
		s->spool = spool__new(&so);
	}
	if (!s->spool) {
		err = -errno;
		log_err("spool: %s", strerror(errno));
		goto cleanup;
	}
	{
		struct spool_stats st;

		spool__stats(s->spool, &st);
		if (st.loaded_files)
			log_info("spool: %llu batches (%llu samples) from before the restart wait",
				 (unsigned long long)st.batches, (unsigned long long)st.samples);
	}
	/* Before the upload thread and gRPC's: they are bound by Landlock too. */
	err = role_landlock(spool__dirfd(s->spool));
	if (err)
		goto cleanup;
	s->landlocked = 1;
	uo.spool = s->spool;
	uo.oap = (struct oap_opts){ .addr = s->cfg->backend.addr,
				    .tls = s->cfg->backend.enable_tls,
				    .ca_pem = passed->bytes[PASSED_CA],
				    .cert_pem = passed->bytes[PASSED_CERT],
				    .key_pem = passed->bytes[PASSED_KEY],
				    .insecure_skip_verify = s->cfg->backend.insecure_skip_verify,
				    .authentication = s->cfg->backend.authentication,
				    .deadline_ms = (uint32_t)s->cfg->backend.call_timeout_ms };
	s->up = uploader__start(&uo);
	if (!s->up) {
		err = -errno;
		log_err("upload thread: %s", strerror(errno));
		goto cleanup;
	}
	log_info("uploads to %s%s, spool %s (memory %llu bytes, disk %llu bytes)",
		 s->cfg->backend.addr, s->cfg->backend.enable_tls ? " (TLS)" : "",
		 so.dir && so.dir[0] ? so.dir : "in memory only", (unsigned long long)so.mem_bytes,
		 (unsigned long long)(so.dir && so.dir[0] ? so.disk_bytes : 0));
cleanup:
	/* PEM bytes: gRPC copied them into its credentials. */
	config__passed_free(passed);
	return err;
}

/* SIGTERM: a short grace to send what waits, then memory batches go to disk. */
static void backend_stop(struct shipper *s)
{
	struct spool_stats st;
	int ended;

	if (!s->up)
		return;
	ended = uploader__stop(s->up, UPLOAD_GRACE_MS);
	spool__stats(s->spool, &st);
	if (st.batches && st.batches > st.disk_batches) {
		int err = spool__persist(s->spool);

		if (err == -ENOTDIR)
			log_warn("stopping: %llu upload batches (%llu samples) lost: no spool_dir",
				 (unsigned long long)st.batches, (unsigned long long)st.samples);
		else if (err)
			log_warn("stopping: writing the spool: %s", strerror(-err));
	}
	spool__stats(s->spool, &st);
	if (st.batches)
		log_info("stopping: %llu upload batches (%llu samples) wait on disk",
			 (unsigned long long)st.disk_batches, (unsigned long long)st.samples);
	if (!ended)
		return; /* the thread is in a call: the spool stays for it until the exit */
	uploader__free(s->up);
	spool__free(s->spool);
	config__free(s->cfg);
	free(s->cfg);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "socket-dir", required_argument, NULL, 'd' },
					      { "user", required_argument, NULL, 'u' },
					      { "stack-only", no_argument, NULL, 'S' },
					      CONFIG_PASSED_OPTIONS,
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	struct config_passed passed;
	char why[512];
	struct shipper s = { .supervisor = -1, .opener = -1, .peers_fd = -1, .msg = { .fd = -1 } };
	struct fd_opener opener = fd_opener_launcher_ops;
	struct msg_hello hello = { .role = ROLE_SHIPPER, .proto_version = IPC_VERSION };
	const char *dir = NULL, *user = NULL;
	struct sigaction sa = { .sa_handler = on_term };
	gid_t gid;
	int c, err, stack_only = 0;

	log_init("rover-shipper");
	/* Its message buffer, the targets' symbol tables and CFI, the profile. */
	heap_prefault(1u << 20);
	config__passed_init(&passed);
	while ((c = getopt_long(argc, argv, "d:u:h", opts, NULL)) != -1) {
		int r = config__passed_option(&passed, c, optarg, why, sizeof(why));

		if (r < 0) {
			fprintf(stderr, "rover-shipper: %s\n", why);
			return 2;
		}
		if (r)
			continue;
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'S':
			stack_only = 1;
			break;
		default:
			fprintf(stderr, "usage: rover-shipper [--socket-dir DIR] [--user USER] "
					"[--stack-only] " CONFIG_PASSED_USAGE "\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!config__passed_given(&passed) &&
	    (passed.fd[PASSED_CA] >= 0 || passed.fd[PASSED_CERT] >= 0 ||
	     passed.fd[PASSED_KEY] >= 0)) {
		fprintf(stderr, "rover-shipper: TLS files need a config\n");
		return 2;
	}
	for (int i = 0; i < MAX_PEERS; i++)
		s.peers[i].fd = -1;
	for (int i = 0; i < MAX_TASKS; i++)
		s.outs[i].fd = -1;
	/* Started unprivileged (a container of its own), it stays who it is. */
	s.uid = geteuid();
	gid = getegid();
	err = geteuid() == 0 ? privdrop_lookup_user(user, &s.uid, &gid) : 0;
	if (!err)
		err = privdrop_apply(&shipper_policy, s.uid, gid);
	if (err) {
		log_err("dropping privileges: %s", strerror(-err));
		return 1;
	}
	/*
	 * The Go TLS finder's disassembler, unless the launcher says no NETWORK task comes (a
	 * one-shot ON_CPU or OFF_CPU task): before Landlock and the filter forbid mapping it.
	 * Without it NETWORK tasks still run; their Go TLS libraries report why they have no
	 * probes.
	 */
	if (!stack_only && (err = capstone__load(why, sizeof(why))))
		log_warn("%s: Go TLS traffic will not be decrypted", why);
	/* A config names a backend: its client module, before the filter forbids mapping code. */
	if (config__passed_given(&passed) && (err = oap__load(why, sizeof(why)))) {
		log_err("loading the OAP client: %s; it is built with the binaries and installed "
			"beside them (make, make install): put it back, or profile without a backend "
			"(rover profile)",
			why);
		return 78; /* EX_CONFIG: the launcher stops; a restart would find the same file */
	}
	if (config__passed_given(&passed) && backend_setup(&s, &passed))
		return 1;
	if (dir) {
		/* A container of its own: two connections to the launcher's spawner.sock. */
		struct msg_hello peers_hello = { .role = ROLE_SHIPPER_PEERS,
						 .proto_version = IPC_VERSION };

		hello.pid = peers_hello.pid = (int32_t)getpid();
		s.opener = ipc_connect(dir, "spawner.sock");
		if (s.opener >= 0 && !ipc_send(s.opener, MSG_HELLO, &hello, sizeof(hello), -1))
			s.peers_fd = ipc_connect(dir, "spawner.sock");
		if (s.peers_fd < 0 ||
		    ipc_send(s.peers_fd, MSG_HELLO, &peers_hello, sizeof(peers_hello), -1)) {
			log_err("connecting to the launcher in %s: %s", dir,
				s.opener < 0 ? strerror(-s.opener) : "hello failed");
			return 1;
		}
		/* Peers come when the launcher has one for us: no timeout on waiting for them. */
		setsockopt(s.peers_fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 0 },
			   sizeof(struct timeval));
	} else if (ipc_is_socket(ROLE_FD_LAUNCHER) && ipc_is_socket(ROLE_FD_SECOND)) {
		s.opener = ROLE_FD_LAUNCHER;
		s.peers_fd = ROLE_FD_SECOND;
		/* An open the launcher does not answer in time fails; the task goes on. */
		if (ipc_set_timeouts(s.opener)) {
			log_err("launcher connection: %s", strerror(errno));
			return 1;
		}
	} else {
		log_err("started without --socket-dir and without the launcher's connections: run "
			"it through rover (rover run, rover serve)");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (!s.landlocked && (err = role_landlock(-1))) {
		log_err("landlock: %s", strerror(-err));
		return 1;
	}
	/* Writing opens only with a spool directory, relative to it. */
	err = sandbox_apply(s.spool && spool__dirfd(s.spool) == SPOOL_DIR_FD
				    ? &shipper_policy
				    : &shipper_nospool_policy);
	if (err) {
		log_err("seccomp: %s", strerror(-err));
		return 1;
	}
	opener.ctx = &s.opener;
	s.fdop = &opener;
	s.sym = symbolizer__new(&opener, s.cfg ? (size_t)s.cfg->profiling.symbol_cache_bytes : 0);
	if (s.sym) {
		symbolizer__on_refusal(s.sym, log_refusal, NULL);
		s.unw = unwinder__new(s.sym);
	}
	if (s.sym)
		s.pycodes = pycodes__new(0);
	if (!s.sym || !s.unw || !s.pycodes) {
		log_err("symbolizer: %s", strerror(errno));
		return 1;
	}
	log_info("ready");
	log_debug("ready after %llu us of CPU", (unsigned long long)cpu_used_us());
	err = loop(&s);
	backend_stop(&s);
	unwinder__free(s.unw);
	pycodes__free(s.pycodes);
	symbolizer__free(s.sym);
	return err ? 1 : 0;
}
