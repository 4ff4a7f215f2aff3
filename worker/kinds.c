// SPDX-License-Identifier: Apache-2.0
/*
 * rover-worker (the rover user; CAP_BPF and CAP_PERFMON until attached, then map commands
 * only): the two kinds of task behind one table (worker/worker.h). Stack tasks count samples
 * or switches by stack id in the kernel and send counts and snapshots; NETWORK tasks send the
 * capture's records as they come and probe the TLS libraries the shipper names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/log.h"
#include "policy/policy.h"
#include "worker/netcap.h"
#include "worker/profiler.h"
#include "worker/jvmstructs.h"
#include "worker/v8structs.h"
#include "worker/pyattach.h"
#include "worker/worker.h"

void worker_lost_shipper(struct worker *w, int err, const char *what)
{
	if (w->shipper < 0)
		return;
	log_warn("task %llu: %s to shipper: %s; its %s are counted lost",
		 (unsigned long long)w->spec.task_id, what, strerror(-err),
		 w->net ? "records" : "samples");
	close(w->shipper);
	w->shipper = -1;
}

/* ---- stack tasks: ON_CPU, OFF_CPU ---- */

static int stacks_start(struct worker *w, struct msg_task_started *ret, const char **ret_what)
{
	w->prof = profiler__start(&w->spec, ret);
	if (w->prof)
		return 0;
	*ret_what = w->spec.type == TASK_ON_CPU ? "loading the ON_CPU sampler"
						: "loading the OFF_CPU tracer";
	return -errno;
}

static const struct role_policy *stacks_policy(const struct worker *w)
{
	/* A worker without the kernel-frame namer runs no program of its own (policy/README.md,
	 * "The worker once attached"). */
	return profiler__runs_programs(w->prof) ? &worker_attached_policy
						: &worker_attached_norun_policy;
}

static void stacks_flush(struct worker *w)
{
	int err = profiler__drain(w->prof, &w->batch);

	if (!err && w->shipper >= 0)
		err = wk_send_snapshots(w->shipper, w->spec.task_id, &w->batch);
	if (!err && w->shipper >= 0)
		err = wk_send_batch(w->shipper, w->spec.task_id, &w->batch);
	else if (!err)
		err = -EPIPE;
	if (err) {
		for (size_t i = 0; i < w->batch.ncounts; i++)
			w->send_lost += w->batch.counts[i].value;
		w->send_lost += w->batch.snaps_value;
		worker_lost_shipper(w, err, "flush");
	}
	ship_batch_reset(&w->batch);
}

static void stacks_read(struct worker *w)
{
	int err = profiler__read_snapshots(w->prof, &w->batch);

	if (!err &&
	    (w->batch.snaps_len >= SHIP_SNAPS_SEND_AT ||
	     w->batch.nsnaps >= SHIP_SNAPS_SEND_COUNT) &&
	    w->shipper >= 0)
		err = wk_send_snapshots(w->shipper, w->spec.task_id, &w->batch);
	if (err)
		worker_lost_shipper(w, err, "snapshots");
	if (w->shipper < 0) {
		/* Nowhere to go: counted lost as the flushes' counts are. */
		w->send_lost += w->batch.snaps_value;
		w->batch.snaps_len = 0;
		w->batch.snaps_value = 0;
		w->batch.nsnaps = 0;
	}
}

static int stacks_events_fd(const struct worker *w)
{
	return profiler__snapshots_fd(w->prof);
}

/*
 * A target's libjvm.so the shipper found: its layout from the file (jvmstructs__file), where
 * it is mapped for the programs, which check the mapping. 0 with *ret filled, or -errno.
 */
static int java_attach(int fd, uint64_t start, struct java_proc *ret, const char **ret_why)
{
	struct stat st;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (start % 4096)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	err = jvmstructs__file(fd, &ret->l, ret_why);
	if (err)
		return err;
	ret->start = start;
	ret->size = (uint64_t)st.st_size;
	return 0;
}

/* A target's runtime the shipper found: Java's libjvm.so (java_attach) or a CPython interpreter
 * (pyattach__file). */
static void stacks_java_attach(struct worker *w, const struct msg_py_attach *m, int fd,
			       struct msg_py_result *r)
{
	const char *why = NULL;
	struct java_proc jp;
	int err;

	err = java_attach(fd, m->start, &jp, &why);
	if (!err)
		err = profiler__java_attach(w->prof, m->pid, &jp);
	r->err = err;
	r->version = err ? 0 : jp.l.major;
	if (err)
		log_warn("task %llu: Java frames of process %d (%s) not read: %s%s%s",
			 (unsigned long long)w->spec.task_id, m->pid, m->path, strerror(-err),
			 why ? ": " : "", why ? why : "");
	else
		log_info("task %llu: Java %u.%u.%u frames of process %d read (%s)",
			 (unsigned long long)w->spec.task_id, jp.l.major, jp.l.minor, jp.l.security,
			 m->pid, m->path);
	err = ipc_send(w->shipper, MSG_SHIP_PY_RESULT, r, sizeof(*r), -1);
	if (err)
		worker_lost_shipper(w, err, "Java result");
}

/* A target's node executable the shipper found: V8's layout from the file (v8structs__file). */
static void stacks_v8_attach(struct worker *w, const struct msg_py_attach *m, int fd,
			     struct msg_py_result *r)
{
	const char *why = NULL;
	struct v8_proc vp;
	struct stat st;
	int err = 0;

	memset(&vp, 0, sizeof(vp));
	if (m->start % 4096)
		err = -EINVAL;
	else if (fstat(fd, &st))
		err = -errno;
	if (!err)
		err = v8structs__file(fd, &vp.l, &why);
	vp.start = m->start;
	vp.size = (uint64_t)st.st_size;
	if (!err)
		err = profiler__v8_attach(w->prof, m->pid, &vp);
	r->err = err;
	r->version = err ? 0 : (uint32_t)vp.l.major << 8 | vp.l.minor;
	if (err)
		log_warn("task %llu: JavaScript frames of process %d (%s) not read: %s%s%s",
			 (unsigned long long)w->spec.task_id, m->pid, m->path, strerror(-err),
			 why ? ": " : "", why ? why : "");
	else
		log_info("task %llu: V8 %u.%u.%u frames of process %d read (%s)",
			 (unsigned long long)w->spec.task_id, vp.l.major, vp.l.minor, vp.l.build,
			 m->pid, m->path);
	err = ipc_send(w->shipper, MSG_SHIP_PY_RESULT, r, sizeof(*r), -1);
	if (err)
		worker_lost_shipper(w, err, "node result");
}

static void stacks_py_attach(struct worker *w, const struct ipc_msg *msg)
{
	struct msg_py_attach m;
	struct msg_py_result r = { 0 };
	struct py_proc py;
	int err;

	memcpy(&m, msg->buf, sizeof(m));
	m.path[sizeof(m.path) - 1] = '\0';
	r.task_id = m.task_id;
	r.pid = m.pid;
	r.seq = m.seq;
	if (m.task_id == w->spec.task_id && m.pid > 0 && m.runtime == SC_RT_JAVA) {
		stacks_java_attach(w, &m, msg->fd, &r);
		return;
	}
	if (m.task_id == w->spec.task_id && m.pid > 0 && m.runtime == SC_RT_NODE) {
		stacks_v8_attach(w, &m, msg->fd, &r);
		return;
	}
	if (m.task_id != w->spec.task_id || m.pid <= 0 || m.runtime != SC_RT_PYTHON)
		err = -EPERM;
	else
		err = pyattach__file(msg->fd, m.start, &py);
	if (!err)
		err = profiler__py_attach(w->prof, m.pid, &py);
	r.err = err;
	r.version = err ? 0 : py.o.version;
	if (err)
		log_warn("task %llu: Python frames of process %d (%s) not read: %s",
			 (unsigned long long)w->spec.task_id, m.pid, m.path, strerror(-err));
	else
		log_info("task %llu: Python %u.%u frames of process %d read (%s)",
			 (unsigned long long)w->spec.task_id, py.o.version >> 8,
			 py.o.version & 0xff, m.pid, m.path);
	err = ipc_send(w->shipper, MSG_SHIP_PY_RESULT, &r, sizeof(r), -1);
	if (err)
		worker_lost_shipper(w, err, "Python result");
}

/*
 * A stack task's messages from the shipper: how much user stack its snapshots need, and the
 * interpreters of its Python targets.
 */
static void stacks_on_shipper(struct worker *w)
{
	static const struct ipc_rule from_shipper[] = {
		{ MSG_SHIP_STACK_HINT, sizeof(struct msg_stack_hint), sizeof(struct msg_stack_hint),
		  0, 0 },
		{ MSG_SHIP_PY_ATTACH, sizeof(struct msg_py_attach), sizeof(struct msg_py_attach), 0,
		  1 },
	};
	struct ipc_msg msg = { .fd = -1 };
	struct msg_stack_hint h;
	int err = ipc_recv(w->shipper, from_shipper, 2, &msg);

	if (err) {
		worker_lost_shipper(w, err, "receiving");
		return;
	}
	if (msg.type == MSG_SHIP_PY_ATTACH) {
		stacks_py_attach(w, &msg);
		ipc_msg_release(&msg);
		return;
	}
	memcpy(&h, msg.buf, sizeof(h));
	ipc_msg_release(&msg);
	/* Another task's, or a process not ours: nothing to do with this task. */
	if (h.task_id == w->spec.task_id && !profiler__stack_hint(w->prof, h.tgid, h.bytes))
		log_debug("task %llu: snapshots of process %d cut to %u bytes of stack",
			  (unsigned long long)w->spec.task_id, h.tgid, h.bytes);
}

static int stacks_tracing(const struct worker *w, int32_t pid)
{
	return profiler__tracing(w->prof, pid);
}

static int stacks_forget(struct worker *w, int32_t pid)
{
	return profiler__forget(w->prof, pid);
}

static int stacks_set_target(struct worker *w, int32_t pid, int on)
{
	return on ? profiler__trace(w->prof, pid) : profiler__forget(w->prof, pid);
}

static void stacks_stop(struct worker *w)
{
	profiler__stop(w->prof);
}

static void stacks_totals(struct worker *w, struct msg_task_done *ret)
{
	uint64_t records[2], bytes[2];

	profiler__totals(w->prof, &ret->samples, ret->losses);
	profiler__ring_totals(w->prof, records, bytes);
	if (records[0])
		log_debug("task %llu: %llu snapshot records, %llu bytes of them from the kernel; "
			  "%llu records, %llu bytes, before a stack hint",
			  (unsigned long long)w->spec.task_id, (unsigned long long)records[0],
			  (unsigned long long)bytes[0], (unsigned long long)records[1],
			  (unsigned long long)bytes[1]);
}

static void stacks_free(struct worker *w)
{
	profiler__free(w->prof);
	w->prof = NULL;
}

static const struct task_kind stacks_kind = {
	.start = stacks_start,
	.attached_policy = stacks_policy,
	.flush = stacks_flush,
	.read = stacks_read,
	.events_fd = stacks_events_fd,
	.on_shipper = stacks_on_shipper,
	.tracing = stacks_tracing,
	.forget = stacks_forget,
	.set_target = stacks_set_target,
	.stop = stacks_stop,
	.totals = stacks_totals,
	.free = stacks_free,
};

/* ---- NETWORK ---- */

static int net_start(struct worker *w, struct msg_task_started *ret, const char **ret_what)
{
	w->net = netcap__start(&w->spec, ret);
	if (w->net)
		return 0;
	*ret_what = "loading the NETWORK capture";
	return -errno;
}

static const struct role_policy *net_policy(const struct worker *w)
{
	(void)w;
	return &worker_attached_net_policy;
}

static void net_flush(struct worker *w)
{
	int err = netcap__flush(w->net, w->shipper);

	if (err)
		worker_lost_shipper(w, err, "flush");
}

static void net_read(struct worker *w)
{
	int err = netcap__read(w->net, w->shipper);

	if (err)
		worker_lost_shipper(w, err, "records");
}

static int net_events_fd(const struct worker *w)
{
	return netcap__events_fd(w->net);
}

/* A TLS library the shipper found in a target, to probe (checked by netcap__tls_attach). */
static void net_on_shipper(struct worker *w)
{
	static const struct ipc_rule from_shipper[] = {
		{ MSG_NET_TLS_ATTACH, sizeof(struct msg_tls_attach), sizeof(struct msg_tls_attach),
		  0, 1 },
	};
	struct ipc_msg msg = { .fd = -1 };
	struct msg_tls_attach m;
	struct msg_tls_result r;
	int pidfd = -1, own = -1, err;

	err = ipc_recv(w->shipper, from_shipper, 1, &msg);
	if (err) {
		worker_lost_shipper(w, err, "receiving");
		return;
	}
	memcpy(&m, msg.buf, sizeof(m));
	m.path[sizeof(m.path) - 1] = '\0';
	/* An ended target's pidfd is closed (-1): its number names nothing. */
	for (int k = 0; k < w->npidfds; k++)
		if (w->pidfds[k] >= 0 && w->pidfd_pid[k] == m.pid)
			pidfd = w->pidfds[k];
	/*
	 * The access log's targets come with no pidfd (MSG_TASK_TARGETS; the launcher pins them
	 * and opened this file for the pinned process): one of its own, for a pid it traces now,
	 * so that an exit during the attach is seen as for any target.
	 */
	if (pidfd < 0 && w->spec.type == TASK_ACCESS_LOG && netcap__tracing(w->net, m.pid)) {
		own = (int)syscall(SYS_pidfd_open, m.pid, 0);
		pidfd = own;
	}
	err = netcap__tls_attach(w->net, &m, msg.fd, pidfd, &r);
	if (own >= 0)
		close(own);
	ipc_msg_release(&msg);
	if (err)
		log_warn("task %llu: TLS probes on %s of process %d not attached: %s",
			 (unsigned long long)w->spec.task_id, m.path, m.pid, strerror(-err));
	else
		log_info("task %llu: TLS probes on %s of process %d: %u attached",
			 (unsigned long long)w->spec.task_id, m.path, m.pid, r.attached);
	err = ipc_send(w->shipper, MSG_NET_TLS_RESULT, &r, sizeof(r), -1);
	if (err)
		worker_lost_shipper(w, err, "TLS result");
}

static int net_tracing(const struct worker *w, int32_t pid)
{
	return netcap__tracing(w->net, pid);
}

static int net_forget(struct worker *w, int32_t pid)
{
	return netcap__forget(w->net, pid, w->shipper);
}

static void net_stop(struct worker *w)
{
	netcap__stop(w->net);
}

static void net_totals(struct worker *w, struct msg_task_done *ret)
{
	netcap__totals(w->net, &ret->samples, ret->losses);
}

static void net_free(struct worker *w)
{
	netcap__free(w->net);
	w->net = NULL;
}

static int net_set_target(struct worker *w, int32_t pid, int on)
{
	if (!on)
		return w->net ? netcap__forget(w->net, pid, w->shipper) : -ESRCH;
	return w->net ? netcap__trace(w->net, pid) : -ESRCH;
}

static const struct task_kind net_kind = {
	.start = net_start,
	.attached_policy = net_policy,
	.flush = net_flush,
	.read = net_read,
	/* The program wakes the worker only once records pile up: it reads them at least
	 * this often, so that a quiet connection's exchange is not held back. */
	.read_every_ms = 100,
	.events_fd = net_events_fd,
	.on_shipper = net_on_shipper,
	.tracing = net_tracing,
	.forget = net_forget,
	.set_target = net_set_target,
	.stop = net_stop,
	.totals = net_totals,
	.free = net_free,
};

/* The access log: NETWORK's capture in access-log mode, its targets changing as it runs. */
static const struct task_kind alog_kind = {
	.start = net_start,
	.attached_policy = net_policy,
	.flush = net_flush,
	.read = net_read,
	.read_every_ms = 100,
	.events_fd = net_events_fd,
	.on_shipper = net_on_shipper,
	.tracing = net_tracing,
	.forget = net_forget,
	.set_target = net_set_target,
	.stop = net_stop,
	.totals = net_totals,
	.free = net_free,
};

const struct task_kind *task_kind_of(uint32_t type)
{
	switch (type) {
	case TASK_ON_CPU:
	case TASK_OFF_CPU:
		return &stacks_kind;
	case TASK_NETWORK:
		return &net_kind;
	case TASK_ACCESS_LOG:
		return &alog_kind;
	default:
		return NULL;
	}
}
