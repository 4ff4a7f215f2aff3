// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/safeopen.h"
#include "common/util.h"
#include "launcher/spawner.h"

#define MAX_PEERS 8
#define MAX_WORKERS 32
/* The shipper names a task's stacks after its worker ended: it may open files that long after. */
#define OPEN_GRACE_MS (5 * 60 * 1000)
#define SIZED(t, s) t, sizeof(s), sizeof(s)

enum peer_kind { PEER_NEW, PEER_SUPERVISOR, PEER_SHIPPER, PEER_DISCOVERY };

struct sp_peer {
	int fd;
	enum peer_kind kind;
	pid_t pid;
};

struct sp_worker {
	pid_t pid; /* 0: free slot */
	uint64_t task_id;
	uint32_t npids;
	int32_t pids[ROVER_MAX_PIDS];
	uint64_t open_until_ms; /* 0 while it runs */
};

struct spawner {
	struct spawner_config cfg;
	int lsock;
	struct sp_peer peers[MAX_PEERS];
	struct sp_worker workers[MAX_WORKERS];
	struct ipc_msg msg;
};

static const struct ipc_rule hello_rules[] = {
	{ SIZED(MSG_HELLO, struct msg_hello), 0, 0 },
};
static const struct ipc_rule supervisor_rules[] = {
	{ SIZED(MSG_SPAWN_WORKER, struct msg_spawn), 0, 0 },
};
static const struct ipc_rule shipper_rules[] = {
	{ SIZED(MSG_OPEN_REQUEST, struct msg_open), 0, 0 },
};
static const struct ipc_rule discovery_rules[] = {
	{ SIZED(MSG_PROC_QUERY, struct msg_proc_query), 0, 0 },
};

struct spawner *spawner__new(const struct spawner_config *cfg)
{
	struct spawner *sp = calloc(1, sizeof(*sp));
	int err;

	if (!sp)
		return NULL;
	sp->cfg = *cfg;
	sp->msg.fd = -1;
	for (int i = 0; i < MAX_PEERS; i++)
		sp->peers[i].fd = -1;
	sp->lsock = ipc_listen(cfg->sockdir, "spawner.sock");
	if (sp->lsock < 0) {
		err = sp->lsock;
		goto cleanup;
	}
	{
		char path[4096];

		/* Only the rover user (and root) may connect: the directory is 0700 and theirs. */
		snprintf(path, sizeof(path), "%s/spawner.sock", cfg->sockdir);
		if (geteuid() == 0 && chown(path, cfg->uid, (gid_t)-1)) {
			err = -errno;
			goto cleanup;
		}
	}
	return sp;
cleanup:
	spawner__free(sp);
	errno = -err;
	return NULL;
}

void spawner__free(struct spawner *sp)
{
	if (!sp)
		return;
	if (sp->lsock >= 0)
		close(sp->lsock);
	for (int i = 0; i < MAX_PEERS; i++)
		if (sp->peers[i].fd >= 0)
			close(sp->peers[i].fd);
	ipc_msg_release(&sp->msg);
	free(sp);
}

void spawner__set_role_pid(struct spawner *sp, int role, pid_t pid)
{
	if (role == ROLE_SUPERVISOR)
		sp->cfg.supervisor_pid = pid;
	else if (role == ROLE_SHIPPER)
		sp->cfg.shipper_pid = pid;
}

int spawner__fds(struct spawner *sp, int *fds, int max)
{
	int n = 0;

	if (n < max)
		fds[n++] = sp->lsock;
	for (int i = 0; i < MAX_PEERS && n < max; i++)
		if (sp->peers[i].fd >= 0)
			fds[n++] = sp->peers[i].fd;
	return n;
}

static struct sp_peer *peer_of_kind(struct spawner *sp, enum peer_kind kind)
{
	for (int i = 0; i < MAX_PEERS; i++)
		if (sp->peers[i].fd >= 0 && sp->peers[i].kind == kind)
			return &sp->peers[i];
	return NULL;
}

static void drop_peer(struct sp_peer *p, const char *why)
{
	if (why)
		log_warn("peer pid %d: %s, disconnecting", p->pid, why);
	close(p->fd);
	p->fd = -1;
}

static void send_spawn_failed(int fd, uint64_t task_id, int err, const char *what)
{
	struct msg_error e = { .task_id = task_id, .err = err };

	snprintf(e.text, sizeof(e.text), "%s: %s", what, strerror(err));
	ipc_send(fd, MSG_SPAWN_FAILED, &e, sizeof(e), -1);
}

/* lc_answer_spawn: a new worker for the supervisor's task, connected to it by a socketpair. */
static void lc_answer_spawn(struct spawner *sp, struct sp_peer *p, const struct msg_spawn *req)
{
	struct sp_worker *w = NULL;
	struct msg_worker rep;
	char exe[4096];
	int sv[2];
	pid_t pid;

	if (!req->task_id || !req->npids || req->npids > ROVER_MAX_PIDS) {
		drop_peer(p, "malformed spawn request");
		return;
	}
	for (int i = 0; i < MAX_WORKERS && !w; i++)
		if (!sp->workers[i].pid ||
		    (sp->workers[i].open_until_ms && sp->workers[i].open_until_ms < now_mono_ms()))
			w = &sp->workers[i];
	if (!w) {
		send_spawn_failed(p->fd, req->task_id, EBUSY, "too many workers");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		send_spawn_failed(p->fd, req->task_id, errno, "socketpair");
		return;
	}
	snprintf(exe, sizeof(exe), "%s/rover-worker", sp->cfg.bindir);
	pid = fork();
	if (pid < 0) {
		send_spawn_failed(p->fd, req->task_id, errno, "fork");
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (pid == 0) {
		char *argv[] = { "rover-worker", "--socket-dir", (char *)sp->cfg.sockdir, "--user",
				 (char *)(sp->cfg.user ? sp->cfg.user : ""), NULL };
		sigset_t all;

		/* fd 3 is the supervisor's socket; dup2 leaves it open across exec. */
		if (dup2(sv[1], 3) < 0)
			_exit(127);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setpgid(0, 0);
		execv(exe, argv);
		_exit(127);
	}
	close(sv[1]);
	*w = (struct sp_worker){ .pid = pid, .task_id = req->task_id, .npids = req->npids };
	memcpy(w->pids, req->pids, sizeof(w->pids));
	rep = (struct msg_worker){ .task_id = req->task_id, .pid = pid };
	if (ipc_send(p->fd, MSG_WORKER_SPAWNED, &rep, sizeof(rep), sv[0]))
		kill(pid, SIGKILL);
	close(sv[0]);
	log_info("task %llu: worker %d started", (unsigned long long)req->task_id, (int)pid);
}

static int pid_allowed(struct spawner *sp, int32_t pid)
{
	uint64_t now = now_mono_ms();

	for (int i = 0; i < MAX_WORKERS; i++) {
		struct sp_worker *w = &sp->workers[i];

		if (!w->pid || (w->open_until_ms && w->open_until_ms < now))
			continue;
		for (uint32_t k = 0; k < w->npids; k++)
			if (w->pids[k] == pid)
				return 1;
	}
	return 0;
}

/* lc_answer_open: opens one of the four kinds of file the shipper may ask for, nothing else. */
static void lc_answer_open(struct spawner *sp, struct sp_peer *p, const struct msg_open *req)
{
	struct msg_open_reply rep = { .what = req->what };
	char path[128];
	int fd = -1;

	switch (req->what) {
	case OPEN_MAPS:
	case OPEN_MAPPED_FILE:
		/* Only processes that a task profiles, while it runs and a while after. */
		if (req->pid <= 0 || !pid_allowed(sp, req->pid)) {
			rep.err = EPERM;
			break;
		}
		if (req->what == OPEN_MAPS)
			snprintf(path, sizeof(path), "/proc/%d/maps", req->pid);
		else if (req->start < req->end)
			snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", req->pid,
				 (unsigned long long)req->start, (unsigned long long)req->end);
		else {
			rep.err = EINVAL;
			break;
		}
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		rep.err = fd < 0 ? errno : 0;
		break;
	case OPEN_PERF_MAP:
		/*
		 * A path inside the target's own file system, chosen by the target: only a regular
		 * file of the target's user, reached without symbolic links (common/safeopen.c).
		 */
		if (req->pid <= 0 || !pid_allowed(sp, req->pid)) {
			rep.err = EPERM;
			break;
		}
		fd = safeopen_perf_map(req->pid);
		if (fd < 0) {
			rep.err = -fd;
			fd = -1;
		}
		break;
	case OPEN_KALLSYMS:
		/* kallsyms shows real addresses to readers whose opener could see them. */
		fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
		rep.err = fd < 0 ? errno : 0;
		break;
	default:
		drop_peer(p, "unknown open request");
		return;
	}
	if (fd >= 0) {
		struct stat st;

		/* Regular files only: never a FIFO or device a crafted mapping could point to. */
		if (req->what == OPEN_MAPPED_FILE && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
			rep.err = EPERM;
		}
	}
	if (ipc_send(p->fd, MSG_OPEN_REPLY, &rep, sizeof(rep), fd))
		drop_peer(p, "reply failed");
	if (fd >= 0)
		close(fd);
}

/*
 * lc_answer_proc: the executable and working directory of any process, for discovery's names
 * ({{.Process.ExeName}}, {{.Process.WorkDir}}). Paths only, never a descriptor: the rover user
 * learns what `ps` would nearly show it anyway, and opens nothing through this.
 */
static void lc_answer_proc(struct sp_peer *p, const struct msg_proc_query *req)
{
	struct msg_proc_info rep = { .pid = req->pid };
	const char *what[2] = { "exe", "cwd" };
	char *dst[2] = { rep.exe, rep.cwd };
	char path[64];

	for (int i = 0; i < 2 && req->pid > 0; i++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/%s", req->pid, what[i]);
		n = readlink(path, dst[i], ROVER_PROC_PATH_LEN);
		if (n < 0) {
			/* A kernel thread has no exe: that is an answer, not an error. */
			if (errno != ENOENT || i == 0)
				rep.err = errno == ENOENT ? ESRCH : errno;
			dst[i][0] = 0;
		} else if (n >= ROVER_PROC_PATH_LEN) {
			dst[i][0] = 0;
			rep.err = ENAMETOOLONG;
		} else {
			dst[i][n] = 0;
		}
		if (rep.err)
			break;
	}
	if (req->pid <= 0)
		rep.err = EINVAL;
	if (ipc_send(p->fd, MSG_PROC_INFO, &rep, sizeof(rep), -1))
		drop_peer(p, "reply failed");
}

static void on_hello(struct spawner *sp, struct sp_peer *p)
{
	const struct msg_hello *h;
	enum peer_kind kind;
	pid_t want;

	if (ipc_recv_expect(p->fd, hello_rules, 1, MSG_HELLO, &sp->msg)) {
		drop_peer(p, "bad hello");
		return;
	}
	h = sp->msg.buf;
	if (h->role == ROLE_SUPERVISOR || h->role == ROLE_DISCOVERY)
		want = sp->cfg.supervisor_pid;
	else if (h->role == ROLE_SHIPPER)
		want = sp->cfg.shipper_pid;
	else {
		drop_peer(p, "unexpected role");
		return;
	}
	/* The kernel's word on who connected, not the hello's. */
	if (want && p->pid != want) {
		drop_peer(p, "not the process started for that role");
		return;
	}
	kind = h->role == ROLE_SUPERVISOR ? PEER_SUPERVISOR
	       : h->role == ROLE_SHIPPER  ? PEER_SHIPPER
					  : PEER_DISCOVERY;
	if (peer_of_kind(sp, kind)) {
		drop_peer(p, "role already connected");
		return;
	}
	p->kind = kind;
}

void spawner__handle(struct spawner *sp, int fd)
{
	if (fd == sp->lsock) {
		uint32_t uid;
		int32_t pid;
		int c = ipc_accept(sp->lsock, &uid, &pid);

		if (c < 0)
			return;
		if (uid != sp->cfg.uid && uid != 0) {
			log_warn("connection from uid %u refused", uid);
			close(c);
			return;
		}
		for (int i = 0; i < MAX_PEERS; i++) {
			if (sp->peers[i].fd < 0) {
				sp->peers[i] = (struct sp_peer){ .fd = c, .kind = PEER_NEW, .pid = pid };
				return;
			}
		}
		close(c);
		return;
	}
	for (int i = 0; i < MAX_PEERS; i++) {
		struct sp_peer *p = &sp->peers[i];
		int err;

		if (p->fd != fd)
			continue;
		if (p->kind == PEER_NEW) {
			on_hello(sp, p);
			return;
		}
		if (p->kind == PEER_SUPERVISOR) {
			err = ipc_recv(fd, supervisor_rules, 1, &sp->msg);
			if (!err)
				lc_answer_spawn(sp, p, sp->msg.buf);
		} else if (p->kind == PEER_DISCOVERY) {
			err = ipc_recv(fd, discovery_rules, 1, &sp->msg);
			if (!err)
				lc_answer_proc(p, sp->msg.buf);
		} else {
			err = ipc_recv(fd, shipper_rules, 1, &sp->msg);
			if (!err)
				lc_answer_open(sp, p, sp->msg.buf);
		}
		if (err)
			drop_peer(p, err == -EPIPE ? NULL : strerror(-err));
		return;
	}
}

int spawner__child_exited(struct spawner *sp, pid_t pid, int status)
{
	for (int i = 0; i < MAX_WORKERS; i++) {
		struct sp_worker *w = &sp->workers[i];
		struct msg_worker_exit x;
		struct sp_peer *sv;

		if (w->pid != pid || w->open_until_ms)
			continue;
		x = (struct msg_worker_exit){ .task_id = w->task_id, .pid = pid };
		if (WIFSIGNALED(status)) {
			x.exit_code = -1;
			x.signal = WTERMSIG(status);
			log_warn("task %llu: worker %d killed by signal %d",
				 (unsigned long long)w->task_id, (int)pid, x.signal);
		} else {
			x.exit_code = WEXITSTATUS(status);
		}
		w->open_until_ms = now_mono_ms() + OPEN_GRACE_MS;
		sv = peer_of_kind(sp, PEER_SUPERVISOR);
		if (sv && ipc_send(sv->fd, MSG_WORKER_EXITED, &x, sizeof(x), -1))
			drop_peer(sv, "send failed");
		return 1;
	}
	return 0;
}

void spawner__stop_workers(struct spawner *sp)
{
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sp->workers[i].pid && !sp->workers[i].open_until_ms)
			kill(sp->workers[i].pid, SIGTERM);
}
