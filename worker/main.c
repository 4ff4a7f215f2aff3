// SPDX-License-Identifier: Apache-2.0
/*
 * rover-worker: one per profiling task. Started by the launcher as root, it drops at once to
 * the rover user holding only CAP_BPF and CAP_PERFMON, enters its seccomp sandbox, receives
 * its task from the supervisor on fd 3, loads and attaches the BPF programs, and ships raw
 * counts keyed by stack ids to the shipper until the task ends. It never parses traced data.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/netrec.h"
#include "common/privdrop.h"
#include "common/util.h"
#include "worker/ship.h"
#include "worker/worker.h"

#define SUPERVISOR_FD ROLE_FD_LAUNCHER
#define SHIPPER_FD ROLE_FD_SECOND

static const struct ipc_rule from_supervisor[] = {
	{ MSG_TASK_START, sizeof(struct task_spec), sizeof(struct task_spec), 0, 0 },
	{ MSG_TASK_STOP, 0, 0, 0, 0 },
	{ MSG_TASK_EXTEND, sizeof(struct msg_task_extend), sizeof(struct msg_task_extend), 0, 0 },
	{ MSG_TASK_TARGETS, sizeof(struct msg_task_targets_hdr),
	  sizeof(struct msg_task_targets_hdr) + MSG_TARGETS_MAX * sizeof(struct msg_task_target),
	  sizeof(struct msg_task_target), 0 },
};

static void wk_send_error(int sv, uint64_t task_id, int err, const char *what)
{
	struct msg_error e = { .task_id = task_id, .err = err };

	snprintf(e.text, sizeof(e.text), "%s: %s", what, strerror(err));
	log_err("task %llu: %s", (unsigned long long)task_id, e.text);
	ipc_send(sv, MSG_TASK_ERROR, &e, sizeof(e), -1);
}

static int check_spec(const struct task_spec *s)
{
	if (s->type != TASK_ON_CPU && s->type != TASK_OFF_CPU && s->type != TASK_NETWORK &&
	    s->type != TASK_ACCESS_LOG)
		return -EOPNOTSUPP;
	/* The access log's targets come and go (MSG_TASK_TARGETS): it may start with none. */
	if ((!s->npids && s->type != TASK_ACCESS_LOG) || s->npids > ROVER_MAX_PIDS)
		return -EINVAL;
	for (uint32_t i = 0; i < s->npids; i++)
		if (s->pids[i] <= 0)
			return -EINVAL;
	if (s->type == TASK_ACCESS_LOG)
		return s->flush_ms < 100 || s->duration_ms || s->capture_bytes > NET_CAPTURE_MAX
			       ? -EINVAL
			       : 0;
	if (s->type == TASK_NETWORK)
		return s->flush_ms < 100 || !s->duration_ms || s->attach > ATTACH_SYSCALLS ||
				       s->capture_bytes > NET_CAPTURE_MAX
			       ? -EINVAL
			       : 0;
	if (s->period_us < 1000 || s->period_us > 1000000 || s->flush_ms < 100 || !s->duration_ms ||
	    s->attach > ATTACH_RAW_TP || s->unwind > UNWIND_DWARF)
		return -EINVAL;
	return 0;
}

/* The pid a pidfd is of (its fdinfo), 0 when gone or not a pidfd. */
static int32_t pidfd_pid(int fd)
{
	char path[64], buf[512], *p;
	int32_t pid = 0;
	ssize_t n;
	int info;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	info = open(path, O_RDONLY | O_CLOEXEC);
	if (info < 0)
		return 0;
	n = read(info, buf, sizeof(buf) - 1);
	close(info);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strstr(buf, "\nPid:\t");
	if (p && sscanf(p + 6, "%d", &pid) != 1)
		pid = 0;
	return pid > 0 ? pid : 0;
}

/*
 * The targets, pinned: the pidfds the launcher took before it checked the task, so the
 * processes profiled are the ones checked, whoever gets their numbers later. A pid with no
 * pidfd (its process already gone) is not watched, and is forgotten once the task starts.
 */
static int open_targets(struct worker *w)
{
	for (uint32_t i = 0; i < w->spec.npids; i++) {
		long fd = -1;

		for (int k = 0; k < w->inherited && fd < 0; k++) {
			int cand = ROLE_FD_SECOND + 1 + k;

			if (pidfd_pid(cand) == w->spec.pids[i])
				fd = fcntl(cand, F_DUPFD_CLOEXEC, 0);
		}
		if (fd >= 0) {
			w->pidfd_pid[w->npidfds] = w->spec.pids[i];
			w->pidfds[w->npidfds++] = (int)fd;
		}
	}
	for (int k = 0; k < w->inherited; k++)
		close(ROLE_FD_SECOND + 1 + k);
	return w->npidfds || w->spec.type == TASK_ACCESS_LOG ? 0 : -ESRCH;
}

/*
 * A client's targets that the programs dropped (no longer the client's to trace: a
 * set-user-ID exec, a setuid, not dumpable; bpf/credcheck.bpf.h): said, and forgotten as an
 * exited one is. Their count.
 */
static int forget_dropped(struct worker *w)
{
	int n = 0;

	for (int i = 0; i < w->npidfds; i++) {
		int32_t pid = w->pidfd_pid[i];

		if (w->pidfds[i] < 0 || w->kind->tracing(w, pid))
			continue;
		log_warn("task %llu: process %d dropped: it is no longer its client's to trace "
			 "(a set-user-ID or file-capability exec, a setuid, or not dumpable)",
			 (unsigned long long)w->spec.task_id, pid);
		close(w->pidfds[i]);
		w->pidfds[i] = -1;
		n++;
		if (w->kind->forget(w, pid))
			log_warn("task %llu: forgetting dropped target %d: %s",
				 (unsigned long long)w->spec.task_id, pid, strerror(errno));
	}
	return n;
}

/*
 * MSG_TASK_TARGETS: the access log's processes from now on, or a TASK_CHILDREN task's children
 * (those the launcher let on; the supervisor says when each ends, having its pidfd). For
 * another task a frame is refused (its targets were checked at spawn and never change); a
 * bad one is said and left. Returns how many targets it added less those it removed.
 */
static int on_targets(struct worker *w, const struct ipc_msg *m)
{
	struct msg_task_targets_hdr h;
	const struct msg_task_target *t;
	int alog = w->spec.type == TASK_ACCESS_LOG, delta = 0;

	memcpy(&h, m->buf, sizeof(h));
	if ((!alog && !(w->spec.flags & TASK_CHILDREN)) || h.task_id != w->spec.task_id ||
	    h.count != (m->len - sizeof(h)) / sizeof(*t) || !w->kind->set_target) {
		log_warn("task %llu: a targets frame refused (not this access-log or --children "
			 "task's, or its count does not match its length)",
			 (unsigned long long)w->spec.task_id);
		return 0;
	}
	t = (const struct msg_task_target *)((const uint8_t *)m->buf + sizeof(h));
	for (uint32_t i = 0; i < h.count; i++) {
		int was;

		if (t[i].pid <= 0 || (uint32_t)t[i].pid >> 22) {
			log_warn("task %llu: target %d refused: not a pid",
				 (unsigned long long)w->spec.task_id, t[i].pid);
			continue;
		}
		was = w->kind->tracing(w, t[i].pid);
		if (w->kind->set_target(w, t[i].pid, t[i].on != 0))
			continue;
		delta += (t[i].on != 0) - (was != 0);
		/* One line a change: tests and people follow the set by them. */
		if (t[i].on)
			log_info("%s: tracing pid %d (task %llu)", alog ? "access log" : "children",
				 t[i].pid, (unsigned long long)w->spec.task_id);
		else
			log_info("%s: no longer tracing pid %d (task %llu)",
				 alog ? "access log" : "children", t[i].pid,
				 (unsigned long long)w->spec.task_id);
	}
	return delta;
}

/* Runs the task to its end; returns the end reason. */
static uint32_t run(struct worker *w)
{
	uint64_t start = now_mono_ms(), next_flush = start + w->spec.flush_ms;
	/* The access log runs until stopped, whatever its targets do. */
	int alog = w->spec.type == TASK_ACCESS_LOG;
	uint64_t end = alog ? UINT64_MAX : start + w->spec.duration_ms;
	struct ipc_msg msg = { .fd = -1 };
	struct pollfd pfd[3 + ROVER_MAX_PIDS];
	int alive = w->npidfds, ship_idx;
	int snap_fd = w->kind->events_fd(w);
	uint32_t read_every = w->spec.flags & TASK_READ_AT_FLUSH ? 0 : w->kind->read_every_ms;

	for (;;) {
		uint64_t now = now_mono_ms(), wake = next_flush < end ? next_flush : end;
		int n = 0, rc;

		if (read_every && wake > now + read_every)
			wake = now + read_every;
		if (snap_fd >= 0)
			w->kind->read(w);

		if (now >= end)
			return END_DURATION;
		if (now >= next_flush) {
			w->kind->flush(w);
			next_flush += w->spec.flush_ms;
			if (w->spec.flags & TASK_USER_ONLY)
				alive -= forget_dropped(w);
			if (!alive && !alog)
				return END_TARGETS_EXITED;
			continue;
		}
		pfd[n++] = (struct pollfd){ .fd = w->sv, .events = POLLIN };
		for (int i = 0; i < w->npidfds; i++)
			pfd[n++] = (struct pollfd){ .fd = w->pidfds[i], .events = POLLIN };
		/* The programs wake it once a part of the ring buffer is full. */
		if (snap_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = snap_fd, .events = POLLIN };
		/* NETWORK: the shipper names the TLS libraries it finds in the targets; stack
		 * snapshots: it says how much stack they need (w->kind->on_shipper). */
		ship_idx = -1;
		if (w->shipper >= 0) {
			ship_idx = n;
			pfd[n++] = (struct pollfd){ .fd = w->shipper, .events = POLLIN };
		}
		rc = poll(pfd, (nfds_t)n, wake > now ? (int)(wake - now) : 0);
		if (rc < 0 && errno != EINTR)
			return END_STOPPED;
		if (rc <= 0)
			continue;
		if (ship_idx >= 0 && pfd[ship_idx].revents)
			w->kind->on_shipper(w);
		if (pfd[0].revents) {
			/* A stop, or the supervisor gone: either way the task ends now. */
			int err = ipc_recv(w->sv, from_supervisor, 4, &msg);

			if (!err && msg.type == MSG_TASK_TARGETS) {
				/* A child counts as a target while it lives: the task ends when
				 * none is left. */
				alive += on_targets(w, &msg);
				ipc_msg_release(&msg);
				continue;
			}

			if (!err && msg.type == MSG_TASK_EXTEND) {
				struct msg_task_extend x;

				memcpy(&x, msg.buf, sizeof(x));
				ipc_msg_release(&msg);
				if (x.task_id == w->spec.task_id && x.duration_ms) {
					end = start + x.duration_ms;
					log_info("task %llu: extended to %u ms",
						 (unsigned long long)w->spec.task_id,
						 x.duration_ms);
				}
				continue;
			}
			ipc_msg_release(&msg);
			return END_STOPPED;
		}
		for (int i = 1; i <= w->npidfds; i++) {
			if (pfd[i].revents && w->pidfds[i - 1] >= 0) {
				close(w->pidfds[i - 1]);
				w->pidfds[i - 1] = -1;
				alive--;
				/* Its number may go to another process: not counted from here. */
				if (w->kind->forget(w, w->pidfd_pid[i - 1]))
					log_warn("task %llu: forgetting exited target %d: %s",
						 (unsigned long long)w->spec.task_id,
						 w->pidfd_pid[i - 1], strerror(errno));
			}
		}
		if (!alive && !alog)
			return END_TARGETS_EXITED;
		/* Closed pidfds stay in the array as -1: poll ignores negative fds. */
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: rover-worker [--user USER] [--pidfds N]\n"
			"  started by the rover launcher with its supervisor on fd 3, its shipper "
			"on fd 4 and N pidfds of its targets from fd 5\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "user", required_argument, NULL, 'u' },
					      { "pidfds", required_argument, NULL, 'p' },
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	struct worker w = { .sv = SUPERVISOR_FD, .shipper = -1 };
	struct msg_task_started started;
	struct msg_task_done done = { 0 };
	struct ipc_msg msg = { .fd = -1 };
	const char *user = NULL, *what = "";
	uid_t uid;
	gid_t gid;
	int c, err;

	log_init("rover-worker");
	while ((c = getopt_long(argc, argv, "u:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			w.inherited = atoi(optarg);
			if (w.inherited < 0 || w.inherited > ROVER_MAX_PIDS)
				w.inherited = 0;
			break;
		case 'u':
			user = optarg;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	err = privdrop_lookup_user(user, &uid, &gid);
	if (!err)
		err = privdrop_apply(&worker_policy, uid, gid);
	if (!err)
		err = role_landlock(-1);
	if (!err)
		err = sandbox_apply(&worker_policy);
	if (err) {
		log_err("dropping privileges: %s", strerror(-err));
		return 1;
	}
	err = ipc_set_timeouts(w.sv);
	if (!err)
		err = ipc_recv_expect(w.sv, from_supervisor, 2, MSG_TASK_START, &msg);
	if (err) {
		log_err("receiving task: %s", strerror(-err));
		return 1;
	}
	memcpy(&w.spec, msg.buf, sizeof(w.spec));
	ipc_msg_release(&msg);

	err = check_spec(&w.spec);
	if (err) {
		wk_send_error(w.sv, w.spec.task_id, -err, "task spec");
		return 1;
	}
	err = open_targets(&w);
	if (err) {
		wk_send_error(w.sv, w.spec.task_id, -err, "target processes");
		return 1;
	}
	/*
	 * The heap of loading populated in one call, not a page fault of 10 us each on this kind
	 * of VM; given back once the programs are loaded (malloc_trim). OFF_CPU, NETWORK and the
	 * access log have libbpf parse the kernel's BTF (tp_btf, CO-RE: about 12 MB); ON_CPU
	 * reads its few kernel offsets itself (worker/kbtf.c) and needs its object and snapshot
	 * batches only.
	 */
	heap_prefault(w.spec.type == TASK_ON_CPU ? 2u << 20 : 14u << 20);
	w.kind = task_kind_of(w.spec.type);
	err = w.kind->start(&w, &started, &what);
	if (err) {
		wk_send_error(w.sv, w.spec.task_id, -err, what);
		return 1;
	}
	/* A target already gone has no pidfd: its number is not counted either. */
	for (uint32_t i = 0; i < w.spec.npids; i++) {
		int pinned = 0;

		if (w.spec.type == TASK_ACCESS_LOG)
			log_info("access log: tracing pid %d (task %llu)", w.spec.pids[i],
				 (unsigned long long)w.spec.task_id);

		for (int k = 0; k < w.npidfds; k++)
			pinned |= w.pidfd_pid[k] == w.spec.pids[i];
		if (pinned)
			continue;
		w.kind->forget(&w, w.spec.pids[i]);
	}
	err = sandbox_apply(w.kind->attached_policy(&w));
	if (err) {
		wk_send_error(w.sv, w.spec.task_id, -err, "narrowing the sandbox");
		return 1;
	}
	/* The launcher connected us to the shipper before we started: no path to trust. */
	w.shipper = SHIPPER_FD;
	err = ipc_set_timeouts(w.shipper);
	if (!err)
		err = wk_send_begin(w.shipper, &w.spec);
	if (err) {
		wk_send_error(w.sv, w.spec.task_id, -err, "reaching the shipper");
		return 1;
	}
	ipc_send(w.sv, MSG_TASK_STARTED, &started, sizeof(started), -1);
	log_info("task %llu: %s of %u process(es) on %u CPUs, attached with %s",
		 (unsigned long long)w.spec.task_id,
		 w.spec.type == TASK_ON_CPU	  ? "ON_CPU"
		 : w.spec.type == TASK_OFF_CPU	  ? "OFF_CPU"
		 : w.spec.type == TASK_ACCESS_LOG ? "the access log"
						  : "NETWORK",
		 w.spec.npids, started.ncpus, started.attach);
	log_debug("task %llu: started after %llu us of CPU", (unsigned long long)w.spec.task_id,
		  (unsigned long long)cpu_used_us());

	done.reason = run(&w);
	w.kind->stop(&w);
	w.kind->flush(&w);
	if (w.shipper >= 0 && wk_send_end(w.shipper, w.spec.task_id, done.reason))
		log_warn("task %llu: end to shipper failed", (unsigned long long)w.spec.task_id);
	done.task_id = w.spec.task_id;
	w.kind->totals(&w, &done);
	done.losses[LOSS_SEND_FAILED] += w.send_lost;
	ipc_send(w.sv, MSG_TASK_DONE, &done, sizeof(done), -1);
	w.kind->free(&w);
	ship_batch_free(&w.batch);
	return 0;
}
