// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

enum peer_kind { PEER_NEW, PEER_SUPERVISOR, PEER_SHIPPER, PEER_DISCOVERY, PEER_SHIPPER_PEERS };

struct sp_peer {
	int fd;
	enum peer_kind kind;
	pid_t pid; /* 0 until the process started for it is known */
};

struct sp_worker {
	pid_t pid; /* 0: free slot */
	uint64_t task_id;
	uint32_t npids;
	int32_t pids[ROVER_MAX_PIDS];
	/* Taken before the worker starts: a pid is allowed only while it is the same process. */
	int pidfds[ROVER_MAX_PIDS];
	uint64_t open_until_ms; /* 0 while it runs */
	/* A client's task: its pids are opened for only while still that client's to trace. */
	int check_access, said_refused;
	uint32_t req_uid, req_gid;
	/*
	 * The access log's worker (msg_spawn.access_log): its processes come and go
	 * (MSG_TASK_TARGETS), each pinned here while it is one, up to ALOG_MAX_PIDS. A
	 * TASK_CHILDREN worker's children the same way, up to ROVER_MAX_CHILDREN, each checked
	 * first as its spawn's pids were (for a client, with its groups below).
	 */
	int access_log, children;
	uint32_t ngroups;
	uint32_t groups[ROVER_MAX_GROUPS];
	uint32_t nx;
	int32_t *xpids;
	int *xpidfds;
};

struct spawner {
	struct spawner_config cfg;
	int lsock;     /* spawner.sock, roles in containers; -1 when the launcher starts them */
	int ctl_lsock; /* ctl.sock, handed to each supervisor */
	int kallsyms;  /* opened with CAP_SYSLOG, which the launcher then drops */
	int linked;    /* the current supervisor and shipper hold a link made by us */
	struct sp_peer peers[MAX_PEERS];
	struct sp_worker workers[MAX_WORKERS];
	struct ipc_msg msg;
};

static const struct ipc_rule hello_rules[] = {
	{ SIZED(MSG_HELLO, struct msg_hello), 0, 0 },
};
static const struct ipc_rule supervisor_rules[] = {
	{ SIZED(MSG_SPAWN_WORKER, struct msg_spawn), 0, 0 },
	{ MSG_TASK_TARGETS, sizeof(struct msg_task_targets_hdr),
	  sizeof(struct msg_task_targets_hdr) + MSG_TARGETS_MAX * sizeof(struct msg_task_target),
	  sizeof(struct msg_task_target), 0 },
};
static const struct ipc_rule shipper_rules[] = {
	{ SIZED(MSG_OPEN_REQUEST, struct msg_open), 0, 0 },
};
static const struct ipc_rule discovery_rules[] = {
	{ SIZED(MSG_PROC_QUERY, struct msg_proc_query), 0, 0 },
};

static void worker_release(struct sp_worker *w)
{
	for (uint32_t i = 0; i < w->npids; i++)
		if (w->pidfds[i] >= 0)
			close(w->pidfds[i]);
	for (uint32_t i = 0; i < w->nx; i++)
		close(w->xpidfds[i]);
	free(w->xpids);
	free(w->xpidfds);
	*w = (struct sp_worker){ 0 };
}

struct spawner *spawner__new(const struct spawner_config *cfg)
{
	struct spawner *sp = calloc(1, sizeof(*sp));
	int err;

	if (!sp)
		return NULL;
	sp->cfg = *cfg;
	sp->msg.fd = -1;
	sp->lsock = sp->ctl_lsock = sp->kallsyms = -1;
	for (int i = 0; i < MAX_PEERS; i++)
		sp->peers[i].fd = -1;
	/* root and the rover group: clients in that group may ask for processes they could
	 * trace themselves (checked per task), root for any. */
	/*
	 * A client sends no descriptor: its output comes back on a socket the supervisor makes
	 * (policy/README.md, "Client outputs"). One it could send would be closed by the
	 * supervisor, and the last close of a TCP socket that lingers on unsent data waits for
	 * a peer that may never read.
	 */
	sp->ctl_lsock = ipc_listen_at(cfg->dirfd, "ctl.sock", cfg->gid, 0660, IPC_NO_RIGHTS);
	if (sp->ctl_lsock == -ENOPROTOOPT) {
		log_warn("this kernel cannot refuse descriptors on ctl.sock (SO_PASSRIGHTS, Linux "
			 "6.16): a member of the rover group could stall the supervisor, ignoring");
		sp->ctl_lsock = ipc_listen_at(cfg->dirfd, "ctl.sock", cfg->gid, 0660, 0);
	}
	if (sp->ctl_lsock < 0) {
		err = sp->ctl_lsock;
		goto cleanup;
	}
	if (cfg->listen) {
		sp->lsock = ipc_listen_at(cfg->dirfd, "spawner.sock", cfg->gid, 0660, 0);
		if (sp->lsock < 0) {
			err = sp->lsock;
			goto cleanup;
		}
	}
	/*
	 * Every worker pins up to ROVER_MAX_PIDS processes (and ROVER_MAX_CHILDREN children) with
	 * pidfds, held through its grace:
	 * room for all of them, whatever soft limit we were started with (systemd's is 1024).
	 */
	{
		struct rlimit rl;
		rlim_t want = MAX_WORKERS * (ROVER_MAX_PIDS + ROVER_MAX_CHILDREN) + 256;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < want) {
			rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
			if (setrlimit(RLIMIT_NOFILE, &rl))
				log_warn("raising the descriptor limit to %llu: %s, ignoring",
					 (unsigned long long)want, strerror(errno));
		}
	}
	/* The kernel shows real addresses to readers of a descriptor whose opener held
	 * CAP_SYSLOG (file->f_cred): opened once now, the capability is dropped after. */
	sp->kallsyms = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (sp->kallsyms < 0)
		log_warn("opening /proc/kallsyms: %s; kernel frames will not be named",
			 strerror(errno));
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
	if (sp->ctl_lsock >= 0)
		close(sp->ctl_lsock);
	if (sp->kallsyms >= 0)
		close(sp->kallsyms);
	for (int i = 0; i < MAX_PEERS; i++)
		if (sp->peers[i].fd >= 0)
			close(sp->peers[i].fd);
	for (int i = 0; i < MAX_WORKERS; i++)
		worker_release(&sp->workers[i]);
	ipc_msg_release(&sp->msg);
	free(sp);
}

int spawner__fds(struct spawner *sp, int *fds, int max)
{
	int n = 0;

	if (n < max && sp->lsock >= 0)
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

static void drop_peer(struct spawner *sp, struct sp_peer *p, const char *why)
{
	if (why)
		log_warn("peer pid %d: %s, disconnecting", p->pid, why);
	if (p->kind == PEER_SUPERVISOR || p->kind == PEER_SHIPPER_PEERS)
		sp->linked = 0;
	close(p->fd);
	p->fd = -1;
}

static struct sp_peer *add_peer(struct spawner *sp, int fd, enum peer_kind kind, pid_t pid)
{
	for (int i = 0; i < MAX_PEERS; i++) {
		if (sp->peers[i].fd < 0) {
			sp->peers[i] = (struct sp_peer){ .fd = fd, .kind = kind, .pid = pid };
			return &sp->peers[i];
		}
	}
	return NULL;
}

/* Hands the peer a connection (or listening socket) of the given role; drops it on failure. */
static int hand_over(struct spawner *sp, struct sp_peer *p, uint32_t role, pid_t pid,
		     uint64_t task_id, int fd)
{
	struct msg_peer_conn c = { .role = role, .pid = pid, .task_id = task_id };
	int err = ipc_send(p->fd, MSG_PEER_CONN, &c, sizeof(c), fd);

	if (err)
		drop_peer(sp, p, "handing over a connection failed");
	return err;
}

/* The supervisor gets ctl.sock once, and a link to the shipper whenever both are new. */
static void link_roles(struct spawner *sp)
{
	struct sp_peer *sv = peer_of_kind(sp, PEER_SUPERVISOR);
	struct sp_peer *sh = peer_of_kind(sp, PEER_SHIPPER_PEERS);
	int pair[2];

	if (sp->linked || !sv || !sh || ipc_pair(pair))
		return;
	if (!hand_over(sp, sv, ROLE_SHIPPER, sh->pid, 0, pair[0]) &&
	    !hand_over(sp, sh, ROLE_SUPERVISOR, sv->pid, 0, pair[1]))
		sp->linked = 1;
	close(pair[0]);
	close(pair[1]);
}

static void supervisor_arrived(struct spawner *sp, struct sp_peer *p)
{
	if (!hand_over(sp, p, ROLE_CLIENT, 0, 0, sp->ctl_lsock))
		link_roles(sp);
}

int spawner__role_fds(struct spawner *sp, int role, int ret_child_fds[2])
{
	static const enum peer_kind sup[2] = { PEER_SUPERVISOR, PEER_DISCOVERY };
	static const enum peer_kind shp[2] = { PEER_SHIPPER, PEER_SHIPPER_PEERS };
	const enum peer_kind *kinds = role == ROLE_SUPERVISOR ? sup : shp;
	int pairs[2][2] = { { -1, -1 }, { -1, -1 } };
	int err = 0;

	if (role != ROLE_SUPERVISOR && role != ROLE_SHIPPER)
		return -EINVAL;
	for (int i = 0; i < 2; i++) {
		struct sp_peer *old = peer_of_kind(sp, kinds[i]);

		if (old)
			drop_peer(sp, old, NULL);
	}
	/* A role that stops reading, or sends half a frame, must not hold the launcher: our
	 * ends time out as accepted connections do. */
	for (int i = 0; i < 2 && !err; i++) {
		err = ipc_pair(pairs[i]);
		if (!err)
			err = ipc_set_timeouts(pairs[i][0]);
	}
	for (int i = 0; i < 2 && !err; i++) {
		if (!add_peer(sp, pairs[i][0], kinds[i], 0)) {
			err = -EMFILE;
			break;
		}
		pairs[i][0] = -1;
	}
	if (err) {
		for (int i = 0; i < 2; i++) {
			struct sp_peer *p = peer_of_kind(sp, kinds[i]);

			if (p)
				drop_peer(sp, p, NULL);
			for (int k = 0; k < 2; k++)
				if (pairs[i][k] >= 0)
					close(pairs[i][k]);
		}
		return err;
	}
	ret_child_fds[0] = pairs[0][1];
	ret_child_fds[1] = pairs[1][1];
	return 0;
}

void spawner__set_role_pid(struct spawner *sp, int role, pid_t pid)
{
	enum peer_kind a = role == ROLE_SUPERVISOR ? PEER_SUPERVISOR : PEER_SHIPPER;
	enum peer_kind b = role == ROLE_SUPERVISOR ? PEER_DISCOVERY : PEER_SHIPPER_PEERS;

	for (int i = 0; i < MAX_PEERS; i++) {
		struct sp_peer *p = &sp->peers[i];

		if (p->fd < 0 || (p->kind != a && p->kind != b))
			continue;
		if (pid <= 0)
			drop_peer(sp, p, NULL);
		else
			p->pid = pid;
	}
	if (pid <= 0)
		return;
	if (role == ROLE_SUPERVISOR) {
		struct sp_peer *sv = peer_of_kind(sp, PEER_SUPERVISOR);

		if (sv)
			supervisor_arrived(sp, sv);
	} else {
		link_roles(sp);
	}
}

pid_t spawner__exec(const char *exe, char *const argv[], const int *fds, int n)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int err, high = ROLE_FD_LAUNCHER + SPAWNER_CHILD_MAX_FDS;
	pid_t pid = -1;

	if (n > SPAWNER_CHILD_MAX_FDS)
		return -EINVAL;
	/* Above every source: a copy must never land on one not yet copied. */
	for (int i = 0; i < n; i++)
		if (fds[i] >= high)
			high = fds[i] + 1;
	if (posix_spawn_file_actions_init(&fa))
		return -ENOMEM;
	if (posix_spawnattr_init(&attr)) {
		posix_spawn_file_actions_destroy(&fa);
		return -ENOMEM;
	}
	sigemptyset(&none);
	sigfillset(&all);
	/* Out of the way first, so that moving one never closes another; then in place (dup2
	 * clears close-on-exec: only these are kept) and the copies closed. */
	err = 0;
	for (int i = 0; !err && i < n; i++)
		err = posix_spawn_file_actions_adddup2(&fa, fds[i], high + i);
	for (int i = 0; !err && i < n; i++)
		err = posix_spawn_file_actions_adddup2(&fa, high + i, ROLE_FD_LAUNCHER + i);
	for (int i = 0; !err && i < n; i++)
		err = posix_spawn_file_actions_addclose(&fa, high + i);
	if (!err)
		err = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (!err)
		err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
							      POSIX_SPAWN_SETSIGDEF);
	if (!err)
		err = posix_spawnattr_setsigmask(&attr, &none);
	if (!err)
		err = posix_spawnattr_setsigdefault(&attr, &all);
	if (!err)
		err = posix_spawn(&pid, exe, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return err ? -err : pid;
}

static void send_spawn_failed(int fd, uint64_t task_id, int err, const char *what)
{
	struct msg_error e = { .task_id = task_id, .err = err };

	snprintf(e.text, sizeof(e.text), "%s: %s", what, strerror(err));
	ipc_send(fd, MSG_SPAWN_FAILED, &e, sizeof(e), -1);
}

static int pidfd_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

/*
 * Whether the requester could ptrace every pid itself: a child takes its exact credentials
 * (uid, gid, groups; no capability survives the uid change) and opens /proc/PID/mem, which
 * the kernel allows only under the ptrace attach rules (uids, dumpable, Yama), and reads
 * /proc/PID/exe, which a kernel thread has not. 0, or -EPERM naming the first refused pid.
 */
static int requester_may_trace(const struct msg_spawn *req, int32_t *ret_refused)
{
	int status, pfd[2];
	int32_t refused = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		gid_t groups[ROVER_MAX_GROUPS];
		int32_t bad = -1;

		close(pfd[0]);
		for (uint32_t i = 0; i < req->ngroups; i++)
			groups[i] = (gid_t)req->groups[i];
		if (setgroups(req->ngroups, groups) ||
		    setresgid(req->req_gid, req->req_gid, req->req_gid) ||
		    setresuid(req->req_uid, req->req_uid, req->req_uid))
			_exit(2);
		for (uint32_t i = 0; i < req->npids && bad < 0; i++) {
			char path[64], link[16];
			int fd;

			snprintf(path, sizeof(path), "/proc/%d/mem", req->pids[i]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			snprintf(path, sizeof(path), "/proc/%d/exe", req->pids[i]);
			if (fd < 0 || readlink(path, link, sizeof(link)) < 0)
				bad = req->pids[i];
			if (fd >= 0)
				close(fd);
		}
		(void)!write(pfd[1], &bad, sizeof(bad));
		_exit(bad < 0 ? 0 : 1);
	}
	close(pfd[1]);
	if (read(pfd[0], &refused, sizeof(refused)) != sizeof(refused))
		refused = 0;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	*ret_refused = refused;
	return -EPERM;
}

/* A worker for nw's task, its supervisor and shipper links at sv and sh: its pid or -errno. */
static pid_t exec_worker(const struct spawner *sp, const struct sp_worker *nw, int sv, int sh)
{
	char exe[PATH_MAX + 32], npin[16];
	char *argv[] = { "rover-worker", "--user", (char *)(sp->cfg.user ? sp->cfg.user : ""),
			 "--pidfds",	 npin,	   NULL };
	int fds[2 + ROVER_MAX_PIDS] = { sv, sh };
	uint32_t nfds = 0;

	/* The processes checked are the ones it profiles: it gets our pidfds. */
	for (uint32_t i = 0; i < nw->npids; i++)
		if (nw->pidfds[i] >= 0)
			fds[2 + nfds++] = nw->pidfds[i];
	snprintf(npin, sizeof(npin), "%u", nfds);
	snprintf(exe, sizeof(exe), "%s/rover-worker", sp->cfg.bindir);
	return spawner__exec(exe, argv, fds, 2 + (int)nfds);
}

/*
 * MSG_TASK_TARGETS: the access-log worker's processes from now on, pinned as a task's are at
 * its spawn, so that the shipper may open their files exactly while they are its targets; or a
 * TASK_CHILDREN worker's children, pinned and, for a client's task, checked as its spawn's
 * pids were (requester_may_trace), the verdict sent back to the supervisor, which tells the
 * worker of those let on only. Refused for any other task (whose targets were checked once
 * and never change); entries past the bound refused. Said, never fatal: the supervisor is the
 * only one that sends it.
 */
static void lc_answer_targets(struct spawner *sp, struct sp_peer *p, const struct ipc_msg *m)
{
	struct msg_task_targets_hdr h;
	const struct msg_task_target *t;
	struct sp_worker *w = NULL;
	struct {
		struct msg_task_targets_hdr h;
		struct msg_task_target t[MSG_TARGETS_MAX];
	} *rep = NULL;
	uint32_t refused = 0, max;

	memcpy(&h, m->buf, sizeof(h));
	for (int i = 0; i < MAX_WORKERS && !w; i++)
		if (sp->workers[i].pid && !sp->workers[i].open_until_ms &&
		    sp->workers[i].task_id == h.task_id)
			w = &sp->workers[i];
	if (!w || (!w->access_log && !w->children) ||
	    h.count != (m->len - sizeof(h)) / sizeof(*t)) {
		log_warn("task %llu: targets refused: not a running access-log or --children "
			 "worker's, or a count that does not match its length",
			 (unsigned long long)h.task_id);
		return;
	}
	max = w->access_log ? ALOG_MAX_PIDS : ROVER_MAX_CHILDREN;
	if (w->children) {
		rep = calloc(1, sizeof(*rep));
		if (!rep) {
			log_warn("task %llu: children refused: no memory",
				 (unsigned long long)h.task_id);
			return;
		}
		rep->h.task_id = h.task_id;
	}
	t = (const struct msg_task_target *)((const uint8_t *)m->buf + sizeof(h));
	for (uint32_t i = 0; i < h.count; i++) {
		uint32_t k;
		int fd;

		for (k = 0; k < w->nx && w->xpids[k] != t[i].pid; k++)
			;
		if (!t[i].on) {
			if (k < w->nx) {
				close(w->xpidfds[k]);
				w->xpids[k] = w->xpids[w->nx - 1];
				w->xpidfds[k] = w->xpidfds[w->nx - 1];
				w->nx--;
			}
			continue;
		}
		if (t[i].pid <= 0)
			continue;
		if (k < w->nx) {
			if (rep)
				rep->t[rep->h.count++] = (struct msg_task_target){ t[i].pid, 1 };
			continue;
		}
		if (w->nx >= max) {
			refused++;
			if (rep)
				rep->t[rep->h.count++] = (struct msg_task_target){ t[i].pid, 0 };
			continue;
		}
		fd = (int)syscall(SYS_pidfd_open, t[i].pid, 0);
		if (fd >= 0 && w->check_access) {
			/* Pinned first: the process checked is the one the pidfd holds. */
			struct msg_spawn one = { .npids = 1,
						 .pids = { t[i].pid },
						 .req_uid = w->req_uid,
						 .req_gid = w->req_gid,
						 .ngroups = w->ngroups };
			int32_t bad = 0;

			memcpy(one.groups, w->groups, sizeof(one.groups));
			if (requester_may_trace(&one, &bad) || !pidfd_alive(fd)) {
				log_warn("task %llu: uid %u may not trace process %d, a child of "
					 "its processes: refused",
					 (unsigned long long)h.task_id, w->req_uid, t[i].pid);
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0) {
			/* Gone already, or refused: nothing of it to open or trace. */
			if (rep)
				rep->t[rep->h.count++] = (struct msg_task_target){ t[i].pid, 0 };
			continue;
		}
		w->xpidfds[w->nx] = fd;
		w->xpids[w->nx++] = t[i].pid;
		if (rep)
			rep->t[rep->h.count++] = (struct msg_task_target){ t[i].pid, 1 };
	}
	if (refused)
		log_warn("task %llu: %u target(s) refused: over %u processes",
			 (unsigned long long)h.task_id, refused, max);
	if (rep && rep->h.count &&
	    ipc_send(p->fd, MSG_TASK_TARGETS, rep,
		     sizeof(rep->h) + rep->h.count * sizeof(rep->t[0]), -1))
		drop_peer(sp, p, "reply failed");
	free(rep);
}

/* lc_answer_spawn: a new worker for the supervisor's task, connected to it and to the shipper. */
static void lc_answer_spawn(struct spawner *sp, struct sp_peer *p, const struct msg_spawn *req)
{
	struct sp_peer *ship = peer_of_kind(sp, PEER_SHIPPER_PEERS);
	int sv[2] = { -1, -1 }, sh[2] = { -1, -1 };
	struct sp_worker *w = NULL, nw = { 0 };
	struct msg_worker rep;
	char why[96];
	int32_t refused = 0;
	uint32_t alive = 0;
	int free_slot;
	pid_t pid;
	int err;

	/* The access log may start with no process; it is never a client's. */
	if (!req->task_id || (!req->npids && !req->access_log) || req->npids > ROVER_MAX_PIDS ||
	    req->ngroups > ROVER_MAX_GROUPS || (req->access_log && req->check_access) ||
	    (req->access_log && req->children)) {
		drop_peer(sp, p, "malformed spawn request");
		return;
	}
	if (req->access_log) {
		for (int i = 0; i < MAX_WORKERS; i++)
			if (sp->workers[i].pid && !sp->workers[i].open_until_ms &&
			    sp->workers[i].access_log) {
				send_spawn_failed(p->fd, req->task_id, EBUSY,
						  "an access-log worker runs already");
				return;
			}
		nw.xpids = calloc(ALOG_MAX_PIDS, sizeof(*nw.xpids));
		nw.xpidfds = calloc(ALOG_MAX_PIDS, sizeof(*nw.xpidfds));
		if (!nw.xpids || !nw.xpidfds) {
			worker_release(&nw);
			send_spawn_failed(p->fd, req->task_id, ENOMEM, "no memory");
			return;
		}
		nw.access_log = 1;
	}
	if (req->children) {
		nw.xpids = calloc(ROVER_MAX_CHILDREN, sizeof(*nw.xpids));
		nw.xpidfds = calloc(ROVER_MAX_CHILDREN, sizeof(*nw.xpidfds));
		if (!nw.xpids || !nw.xpidfds) {
			worker_release(&nw);
			send_spawn_failed(p->fd, req->task_id, ENOMEM, "no memory");
			return;
		}
		nw.children = 1;
	}
	for (int i = 0; i < MAX_WORKERS && !w; i++)
		if (!sp->workers[i].pid ||
		    (sp->workers[i].open_until_ms && sp->workers[i].open_until_ms < now_mono_ms()))
			w = &sp->workers[i];
	free_slot = w != NULL;
	/*
	 * Else the ended worker whose grace ends first: tasks back to back would otherwise find
	 * every slot held by a grace (MAX_WORKERS tasks in OPEN_GRACE_MS) and no worker at all.
	 * Its shipper's late opens are refused from here; frames fall back to module+offset.
	 */
	for (int i = 0; i < MAX_WORKERS && !free_slot; i++) {
		struct sp_worker *c = &sp->workers[i];

		if (c->open_until_ms && (!w || c->open_until_ms < w->open_until_ms))
			w = c;
	}
	if (!w) {
		send_spawn_failed(p->fd, req->task_id, EBUSY, "too many workers");
		return;
	}
	if (!ship) {
		send_spawn_failed(p->fd, req->task_id, EAGAIN, "no shipper is running");
		return;
	}
	/*
	 * Each pid pinned to its process now: checked, opened for and profiled as that one.
	 * npids counts the pidfds taken so far, which worker_release closes. A process that has
	 * exited since discovery named it (a backend task over processes that come and go) is
	 * left out, -1, as the worker leaves out a target that exits while it runs; the task
	 * needs one.
	 */
	for (uint32_t i = 0; i < req->npids; i++) {
		nw.pids[i] = req->pids[i];
		nw.pidfds[i] = req->pids[i] > 0 ? (int)syscall(SYS_pidfd_open, req->pids[i], 0)
						: -1;
		nw.npids = i + 1;
		if (nw.pidfds[i] >= 0) {
			alive++;
		} else if (errno != ESRCH || req->pids[i] <= 0 || req->check_access) {
			/* A client's pids are all its own to check: one gone fails its task. */
			snprintf(why, sizeof(why), "process %d: %s", req->pids[i], strerror(errno));
			worker_release(&nw);
			send_spawn_failed(p->fd, req->task_id, ESRCH, why);
			return;
		}
	}
	if (!alive && !req->access_log) {
		worker_release(&nw);
		snprintf(why, sizeof(why), "its %u process(es) have exited", req->npids);
		send_spawn_failed(p->fd, req->task_id, ESRCH, why);
		return;
	}
	if (alive < nw.npids)
		log_info("task %llu: %u of its %u processes exited before it started, left out",
			 (unsigned long long)req->task_id, nw.npids - alive, nw.npids);
	if (req->check_access) {
		err = requester_may_trace(req, &refused);
		for (uint32_t i = 0; !err && i < nw.npids; i++)
			if (nw.pidfds[i] >= 0 && !pidfd_alive(nw.pidfds[i]))
				err = -ESRCH, refused = nw.pids[i];
		if (err) {
			log_warn("task %llu: uid %u may not trace process %d: refused",
				 (unsigned long long)req->task_id, req->req_uid, refused);
			worker_release(&nw);
			snprintf(why, sizeof(why), "uid %u may not trace process %d", req->req_uid,
				 refused);
			send_spawn_failed(p->fd, req->task_id, -err, why);
			return;
		}
	}
	err = ipc_pair(sv);
	if (!err)
		err = ipc_pair(sh);
	if (err) {
		worker_release(&nw);
		send_spawn_failed(p->fd, req->task_id, -err, "socketpair");
		goto out;
	}
	pid = exec_worker(sp, &nw, sv[1], sh[1]);
	if (pid < 0) {
		worker_release(&nw);
		send_spawn_failed(p->fd, req->task_id, (int)-pid, "starting rover-worker");
		goto out;
	}
	if (w->pid)
		worker_release(w);
	*w = nw;
	w->pid = pid;
	w->task_id = req->task_id;
	w->check_access = req->check_access;
	w->req_uid = req->req_uid;
	w->req_gid = req->req_gid;
	w->ngroups = req->ngroups;
	memcpy(w->groups, req->groups, sizeof(w->groups));
	/* The shipper learns of the worker from us, with the connection: never by a path. */
	if (hand_over(sp, ship, ROLE_WORKER, pid, req->task_id, sh[0]))
		kill(pid, SIGKILL);
	rep = (struct msg_worker){ .task_id = req->task_id, .pid = pid };
	if (ipc_send(p->fd, MSG_WORKER_SPAWNED, &rep, sizeof(rep), sv[0]))
		kill(pid, SIGKILL);
	log_info("task %llu: worker %d started", (unsigned long long)req->task_id, (int)pid);
out:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (sh[i] >= 0)
			close(sh[i]);
	}
}

/*
 * The pidfd pinning pid in a task that may still be opened for, and that task's worker: 0, or
 * -EPERM when none.
 */
static int pid_allowed(struct spawner *sp, int32_t pid, int *ret_pidfd, struct sp_worker **ret_w)
{
	uint64_t now = now_mono_ms();

	for (int i = 0; i < MAX_WORKERS; i++) {
		struct sp_worker *w = &sp->workers[i];

		if (!w->pid || (w->open_until_ms && w->open_until_ms < now))
			continue;
		for (uint32_t k = 0; k < w->npids; k++) {
			if (w->pids[k] != pid || w->pidfds[k] < 0)
				continue;
			*ret_pidfd = w->pidfds[k];
			*ret_w = w;
			return 0;
		}
		for (uint32_t k = 0; k < w->nx; k++) {
			if (w->xpids[k] != pid)
				continue;
			*ret_pidfd = w->xpidfds[k];
			*ret_w = w;
			return 0;
		}
	}
	return -EPERM;
}

/*
 * Whether [start, end) is a private, executable mapping of a file in pid's maps: code, the
 * only thing the shipper names. Not shared memory, memfds or data files, whose bytes may be
 * the target's secrets. Read a line at a time (a line holds at most a path, PATH_MAX): the
 * launcher's memory does not grow with the target's mappings. 0 or -EPERM.
 */
static int is_code_mapping(int32_t pid, uint64_t start, uint64_t end)
{
	char path[64], line[PATH_MAX + 256];
	int err = -EPERM, partial = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[5], dev[16];
		unsigned long ino;
		int pathpos = 0, cont = partial;

		partial = !strchr(line, '\n');
		if (cont)
			continue; /* the rest of a line too long to be a mapping we name */
		if (sscanf(line, "%llx-%llx %4s %llx %15s %lu %n", &s, &e, perms, &off, dev, &ino,
			   &pathpos) < 6 ||
		    s != start || e != end)
			continue;
		if (perms[2] == 'x' && perms[3] == 'p' && ino && pathpos && line[pathpos] == '/' &&
		    strncmp(line + pathpos, "/memfd:", 7) && strncmp(line + pathpos, "/dev/", 5))
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

/*
 * Whether pid is still a process uid (gid) could ptrace: its real, effective and saved uids
 * and gids theirs, no permitted capability (ptrace wants the target's a subset of the
 * tracer's, and the client holds none: a file-capability exec under fs.suid_dumpable 1 keeps
 * the uids and the dumpable flag), and dumpable, which /proc/PID's owner tells (root's once
 * the mm is not dumpable: a set-user-ID exec, a setuid, PR_SET_DUMPABLE 0). What the worker's programs
 * ask of every event (bpf/credcheck.bpf.h), asked of the files the shipper wants: a task
 * started by a client names nothing of a process that left the client's hands. 0 or -EPERM.
 */
static int still_traceable(int32_t pid, uint32_t uid, uint32_t gid)
{
	char path[64], line[256];
	unsigned long r, e, s;
	unsigned long long caps;
	int ok = 0, err;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) || st.st_uid != uid)
		return -EPERM;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -EPERM;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu %lu", &r, &e, &s) == 3)
			ok += r == uid && e == uid && s == uid;
		else if (sscanf(line, "Gid: %lu %lu %lu", &r, &e, &s) == 3)
			ok += r == gid && e == gid && s == gid;
		else if (sscanf(line, "CapPrm: %llx", &caps) == 1)
			ok += caps == 0;
	}
	err = ferror(f) || ok != 3 ? -EPERM : 0;
	fclose(f);
	return err;
}

/* lc_answer_open: opens one of the four kinds of file the shipper may ask for, nothing else. */
static void lc_answer_open(struct spawner *sp, struct sp_peer *p, const struct msg_open *req)
{
	struct msg_open_reply rep = { .what = req->what };
	struct sp_worker *w = NULL;
	char path[128];
	int fd = -1, pidfd = -1;

	switch (req->what) {
	case OPEN_MAPS:
	case OPEN_MAPPED_FILE:
	case OPEN_PERF_MAP:
		/* Only processes that a task profiles, while it runs and a while after. */
		if (req->pid <= 0 || pid_allowed(sp, req->pid, &pidfd, &w)) {
			rep.err = EPERM;
			break;
		}
		if (req->what == OPEN_MAPS) {
			snprintf(path, sizeof(path), "/proc/%d/maps", req->pid);
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
			rep.err = fd < 0 ? errno : 0;
		} else if (req->what == OPEN_MAPPED_FILE) {
			if (req->start >= req->end) {
				rep.err = EINVAL;
				break;
			}
			rep.err = -is_code_mapping(req->pid, req->start, req->end);
			if (rep.err)
				break;
			snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", req->pid,
				 (unsigned long long)req->start, (unsigned long long)req->end);
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
			rep.err = fd < 0 ? errno : 0;
		} else {
			/*
			 * A path inside the target's own file system, chosen by the target: only
			 * a regular file of the target's user, reached without symbolic links
			 * (common/safeopen.c).
			 */
			fd = safeopen_perf_map(req->pid);
			if (fd < 0) {
				rep.err = -fd;
				fd = -1;
			}
		}
		/*
		 * Opened by number: still the process the task pinned, or the answer is void. And
		 * for a client, still its to trace once opened: a change after it leaves this
		 * descriptor on what the process was before (the maps, the code of the old mm).
		 */
		if (fd >= 0 && !pidfd_alive(pidfd)) {
			close(fd);
			fd = -1;
			rep.err = ESRCH;
		} else if (fd >= 0 && w->check_access &&
			   (still_traceable(req->pid, w->req_uid, w->req_gid) ||
			    !pidfd_alive(pidfd))) {
			/* Judged by number: still the pinned process after, or void. */
			if (!w->said_refused++)
				log_warn("task %llu: process %d is no longer uid %u's to trace: its "
					 "files refused to the shipper",
					 (unsigned long long)w->task_id, req->pid, w->req_uid);
			close(fd);
			fd = -1;
			rep.err = EPERM;
		}
		break;
	case OPEN_KALLSYMS:
		if (sp->kallsyms < 0) {
			rep.err = ENOENT;
			break;
		}
		/* The one description, shared: each reader starts from the top. */
		lseek(sp->kallsyms, 0, SEEK_SET);
		fd = fcntl(sp->kallsyms, F_DUPFD_CLOEXEC, 0);
		rep.err = fd < 0 ? errno : 0;
		break;
	default:
		drop_peer(sp, p, "unknown open request");
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
		drop_peer(sp, p, "reply failed");
	if (fd >= 0)
		close(fd);
}

/*
 * lc_answer_proc: the executable and working directory of any process, for discovery's names
 * ({{.Process.ExeName}}, {{.Process.WorkDir}}). Paths only, never a descriptor: the rover user
 * learns what `ps` would nearly show it anyway, and opens nothing through this.
 */
static void lc_answer_proc(struct spawner *sp, struct sp_peer *p, const struct msg_proc_query *req)
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
		drop_peer(sp, p, "reply failed");
}

/* spawner.sock (roles in containers): who a peer is comes from its hello and its uid. */
static void on_hello(struct spawner *sp, struct sp_peer *p)
{
	const struct msg_hello *h;
	enum peer_kind kind;

	if (ipc_recv_expect(p->fd, hello_rules, 1, MSG_HELLO, &sp->msg)) {
		drop_peer(sp, p, "bad hello");
		return;
	}
	h = sp->msg.buf;
	switch (h->role) {
	case ROLE_SUPERVISOR:
		kind = PEER_SUPERVISOR;
		break;
	case ROLE_DISCOVERY:
		kind = PEER_DISCOVERY;
		break;
	case ROLE_SHIPPER:
		kind = PEER_SHIPPER;
		break;
	case ROLE_SHIPPER_PEERS:
		kind = PEER_SHIPPER_PEERS;
		break;
	default:
		drop_peer(sp, p, "unexpected role");
		return;
	}
	if (peer_of_kind(sp, kind)) {
		drop_peer(sp, p, "role already connected");
		return;
	}
	p->kind = kind;
	if (kind == PEER_SUPERVISOR)
		supervisor_arrived(sp, p);
	else if (kind == PEER_SHIPPER_PEERS)
		link_roles(sp);
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
		if (!add_peer(sp, c, PEER_NEW, pid))
			close(c);
		return;
	}
	for (int i = 0; i < MAX_PEERS; i++) {
		struct sp_peer *p = &sp->peers[i];
		int err;

		if (p->fd != fd)
			continue;
		switch (p->kind) {
		case PEER_NEW:
			on_hello(sp, p);
			return;
		case PEER_SUPERVISOR:
			err = ipc_recv(fd, supervisor_rules, 2, &sp->msg);
			if (!err && sp->msg.type == MSG_TASK_TARGETS)
				lc_answer_targets(sp, p, &sp->msg);
			else if (!err)
				lc_answer_spawn(sp, p, sp->msg.buf);
			break;
		case PEER_DISCOVERY:
			err = ipc_recv(fd, discovery_rules, 1, &sp->msg);
			if (!err)
				lc_answer_proc(sp, p, sp->msg.buf);
			break;
		case PEER_SHIPPER:
			err = ipc_recv(fd, shipper_rules, 1, &sp->msg);
			if (!err)
				lc_answer_open(sp, p, sp->msg.buf);
			break;
		default:
			/* The shipper's peers channel carries nothing our way: only its end. */
			err = ipc_recv(fd, NULL, 0, &sp->msg);
			if (!err)
				err = -EPROTO;
			break;
		}
		if (err && p->fd >= 0)
			drop_peer(sp, p, err == -EPIPE ? NULL : strerror(-err));
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
		/* A target that has exited has nothing left to open: its pidfd goes now. */
		for (uint32_t k = 0; k < w->npids; k++) {
			struct pollfd pf = { .fd = w->pidfds[k], .events = POLLIN };

			if (w->pidfds[k] >= 0 && poll(&pf, 1, 0) == 1) {
				close(w->pidfds[k]);
				w->pidfds[k] = -1;
			}
		}
		sv = peer_of_kind(sp, PEER_SUPERVISOR);
		if (sv && ipc_send(sv->fd, MSG_WORKER_EXITED, &x, sizeof(x), -1))
			drop_peer(sp, sv, "send failed");
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
