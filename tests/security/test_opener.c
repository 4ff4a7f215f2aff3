// SPDX-License-Identifier: Apache-2.0
/*
 * Findings 1 and 6, tried as a compromised shipper and a compromised supervisor against the
 * launcher's real spawner (launcher/spawner.c, run in this process as the launcher runs it):
 * what the opener hands over for a pid, and which pids a task may name for whom.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "launcher/spawner.h"
#include "tests/security/attacker.h"

static struct spawner *sp;
static int sup[2], ship[2]; /* the roles' ends: we play both */
static int dirfd_ = -1;
static struct ipc_msg m = { .fd = -1 };
static pid_t workers[8], others[4];
static int nworkers, nothers;

/* Lets the spawner handle what waits for it until fd has something for us. */
static int pump_until(int fd, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 10) {
		struct pollfd us = { .fd = fd, .events = POLLIN };
		int fds[16], n = spawner__fds(sp, fds, 16);

		for (int i = 0; i < n; i++) {
			struct pollfd p = { .fd = fds[i], .events = POLLIN };

			if (poll(&p, 1, 0) > 0)
				spawner__handle(sp, fds[i]);
		}
		if (poll(&us, 1, 10) > 0)
			return 0;
	}
	return -ETIMEDOUT;
}

/* The next frame on fd, whatever its type, with its descriptor if it has one. */
static int next_frame(int fd)
{
	static const struct ipc_rule any[] = {
		{ MSG_PEER_CONN, sizeof(struct msg_peer_conn), sizeof(struct msg_peer_conn), 0, 1 },
		{ MSG_WORKER_SPAWNED, sizeof(struct msg_worker), sizeof(struct msg_worker), 0, 1 },
		{ MSG_SPAWN_FAILED, sizeof(struct msg_error), sizeof(struct msg_error), 0, 0 },
		{ MSG_WORKER_EXITED, sizeof(struct msg_worker_exit), sizeof(struct msg_worker_exit),
		  0, 0 },
	};
	static const struct ipc_rule reply[] = {
		{ MSG_OPEN_REPLY, sizeof(struct msg_open_reply), sizeof(struct msg_open_reply), 0,
		  0 },
	};
	static const struct ipc_rule reply_fd[] = {
		{ MSG_OPEN_REPLY, sizeof(struct msg_open_reply), sizeof(struct msg_open_reply), 0,
		  1 },
	};
	struct ipc_hdr h;

	if (pump_until(fd, 5000))
		return -ETIMEDOUT;
	if (recv(fd, &h, sizeof(h), MSG_PEEK) != sizeof(h))
		return -EPROTO;
	ipc_msg_release(&m);
	if (h.type == MSG_OPEN_REPLY)
		return ipc_recv(fd, h.nfds ? reply_fd : reply, 1, &m);
	return ipc_recv(fd, any, 4, &m);
}

/* Asks the opener as the shipper; the errno it answers (0: a descriptor, in *ret_fd). */
static int ask_open(uint32_t what, pid_t pid, uint64_t start, uint64_t end, int *ret_fd)
{
	struct msg_open req = { .what = what, .pid = pid, .start = start, .end = end };
	const struct msg_open_reply *rep;

	cr_assert_eq(ipc_send(ship[0], MSG_OPEN_REQUEST, &req, sizeof(req), -1), 0);
	cr_assert_eq(next_frame(ship[0]), 0);
	rep = m.buf;
	if (ret_fd) {
		*ret_fd = m.fd;
		m.fd = -1;
	}
	return rep->err;
}

/* Asks for a worker as the supervisor: 0 when spawned, else the errno of MSG_SPAWN_FAILED. */
static int ask_spawn(struct msg_spawn *req, char *ret_text, size_t len)
{
	cr_assert_eq(ipc_send(sup[0], MSG_SPAWN_WORKER, req, sizeof(*req), -1), 0);
	for (;;) {
		cr_assert_eq(next_frame(sup[0]), 0);
		if (m.type == MSG_WORKER_SPAWNED) {
			workers[nworkers++] = ((struct msg_worker *)m.buf)->pid;
			/* The shipper hears of the worker from the launcher, with its socket. */
			cr_assert_eq(next_frame(ship[1]), 0);
			cr_assert_eq(m.type, MSG_PEER_CONN);
			cr_assert_eq(((struct msg_peer_conn *)m.buf)->role, ROLE_WORKER);
			return 0;
		}
		if (m.type == MSG_SPAWN_FAILED) {
			const struct msg_error *e = m.buf;

			snprintf(ret_text, len, "%s", e->text);
			return e->err;
		}
	}
}

static void opener_up(void)
{
	struct who rw = role_who();
	struct spawner_config cfg;
	static char bindir[4096];
	const char *root = getenv("ROVER_BUILD");

	tmp = make_tmpdir();
	cr_assert(tmp);
	dirfd_ = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(bindir, sizeof(bindir), "%s", root ? root : "build");
	cfg = (struct spawner_config){
		.dirfd = dirfd_, .bindir = bindir, .user = role_user(), .uid = rw.uid, .gid = rw.gid
	};
	sp = spawner__new(&cfg);
	cr_assert(sp, "spawner: %s", strerror(errno));
	cr_assert_eq(spawner__role_fds(sp, ROLE_SUPERVISOR, sup), 0);
	spawner__set_role_pid(sp, ROLE_SUPERVISOR, getpid());
	cr_assert_eq(spawner__role_fds(sp, ROLE_SHIPPER, ship), 0);
	spawner__set_role_pid(sp, ROLE_SHIPPER, getpid());
	/* ctl.sock, then the link to the shipper. */
	cr_assert_eq(next_frame(sup[0]), 0);
	cr_assert_eq(((struct msg_peer_conn *)m.buf)->role, ROLE_CLIENT);
	cr_assert_eq(next_frame(sup[0]), 0);
	cr_assert_eq(((struct msg_peer_conn *)m.buf)->role, ROLE_SHIPPER);
	cr_assert_eq(next_frame(ship[1]), 0);
	cr_assert_eq(((struct msg_peer_conn *)m.buf)->role, ROLE_SUPERVISOR);
}

static void opener_down(void)
{
	for (int i = 0; i < nworkers; i++)
		stop_program(workers[i]);
	for (int i = 0; i < nothers; i++)
		stop_program(others[i]);
	spawner__free(sp);
	ipc_msg_release(&m);
	rm_rf(tmp);
	free(tmp);
}

TestSuite(opener, .init = opener_up, .fini = opener_down, .timeout = 60);

struct regions {
	uint64_t shared, memfd, data;
};

/* A target holding what a shipper must not read: shared memory, a memfd, a data file. */
static pid_t start_target(struct regions *ret)
{
	char data[4200];
	int pfd[2];
	pid_t pid;

	snprintf(data, sizeof(data), "%s/data", tmp);
	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	if (pid == 0) {
		struct regions r;
		char *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		int mfd = memfd_create("jit-code", 0), dfd;

		strcpy(shared, "SECRET in shared memory");
		if (mfd < 0 || ftruncate(mfd, 4096))
			_exit(1);
		r.memfd = (uint64_t)(uintptr_t)mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE,
						    mfd, 0);
		dfd = open(data, O_RDWR | O_CREAT, 0600);
		if (dfd < 0 || write(dfd, "SECRET in a data file", 21) != 21)
			_exit(1);
		r.data = (uint64_t)(uintptr_t)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, dfd, 0);
		r.shared = (uint64_t)(uintptr_t)shared;
		if (write(pfd[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	others[nothers++] = pid;
	cr_assert_eq(read(pfd[0], ret, sizeof(*ret)), (ssize_t)sizeof(*ret));
	close(pfd[0]);
	return pid;
}

/* The [start, end) of pid's executable mapping of its own binary. */
static void code_range(pid_t pid, uint64_t *ret_start, uint64_t *ret_end)
{
	char path[64], exe[4096] = "", line[4600];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	cr_assert_gt(readlink(path, exe, sizeof(exe) - 1), 0);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char perms[5];

		if (sscanf(line, "%llx-%llx %4s", &s, &e, perms) == 3 && !strcmp(perms, "r-xp") &&
		    strstr(line, exe)) {
			*ret_start = s;
			*ret_end = e;
			fclose(f);
			return;
		}
	}
	fclose(f);
	cr_assert_fail("no r-xp mapping of %s", exe);
}

static uint64_t page_end(uint64_t start)
{
	return start + 4096;
}

Test(opener, a_shipper_gets_code_and_nothing_else_of_a_task_s_process)
{
	struct regions r;
	struct msg_spawn req = { .task_id = 1, .npids = 1 };
	char why[256], path[64];
	uint64_t cs, ce;
	struct stat a, b;
	pid_t t = start_target(&r);
	int fd = -1;

	/* Before any task names it: nothing. */
	cr_assert_eq(ask_open(OPEN_MAPS, t, 0, 0, NULL), EPERM);
	req.pids[0] = t;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), 0, "%s", why);

	cr_assert_eq(ask_open(OPEN_MAPPED_FILE, t, r.shared, page_end(r.shared), &fd), EPERM,
		     "a MAP_SHARED anonymous mapping was handed over");
	cr_assert_eq(ask_open(OPEN_MAPPED_FILE, t, r.memfd, page_end(r.memfd), &fd), EPERM,
		     "a memfd mapping was handed over");
	cr_assert_eq(ask_open(OPEN_MAPPED_FILE, t, r.data, page_end(r.data), &fd), EPERM,
		     "a data file mapping was handed over");
	cr_assert_eq(ask_open(OPEN_MAPPED_FILE, t, r.shared, r.shared + 8192, &fd), EPERM,
		     "a range that is no mapping was handed over");
	/* Its code: yes, the very file it runs. */
	code_range(t, &cs, &ce);
	cr_assert_eq(ask_open(OPEN_MAPPED_FILE, t, cs, ce, &fd), 0);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t);
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(stat(path, &b), 0);
	cr_assert(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	close(fd);
	/* Not a pid of no task, such as ours. */
	cr_assert_eq(ask_open(OPEN_MAPS, getpid(), 0, 0, NULL), EPERM);

	/* Once the process is gone its number names nothing: pinned by a pidfd. */
	stop_program(t);
	cr_assert_neq(ask_open(OPEN_MAPS, t, 0, 0, &fd), 0, "maps of an exited task process");
}

Test(opener, a_task_from_a_client_names_only_what_that_client_could_trace)
{
	struct who rw = role_who(), stranger = { 65534, 65534, (gid_t)-1 };
	struct msg_spawn req = { .task_id = 7, .npids = 1, .check_access = 1 };
	pid_t root_target = start_program(bin("tests/programs/demo_burn"), NULL);
	/* Started by exec as that user: dumpable, as a user's own programs are. */
	pid_t own = start_program_as(stranger, bin("tests/programs/demo_burn"));
	char why[256] = "";
	int err;

	others[nothers++] = root_target;
	others[nothers++] = own;
	cr_assert_gt(root_target, 0);
	cr_assert_gt(own, 0);
	/* The roles' uid asking for root's process: refused, with the reason. */
	req.req_uid = rw.uid;
	req.req_gid = rw.gid;
	req.pids[0] = root_target;
	err = ask_spawn(&req, why, sizeof(why));
	cr_assert_eq(err, EPERM, "spawned for uid %u on a root process (%d)", rw.uid, err);
	cr_assert(strstr(why, "may not trace"), "%s", why);
	/* Another uid, on its own process: spawned. And on root's, with root among its groups
	 * claimed: still refused (the check runs with its ids, not its word). */
	req.task_id = 8;
	req.req_uid = stranger.uid;
	req.req_gid = stranger.gid;
	req.pids[0] = own;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), 0, "%s", why);
	req.task_id = 9;
	req.ngroups = 1;
	req.groups[0] = 0;
	req.pids[0] = root_target;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), EPERM);
	/* A pid that does not exist, before one that does: without an access check (a
	 * backend task, whose processes may have exited since discovery named them) it starts
	 * without it; with none left, refused. Either way nothing of the launcher's (its stdin
	 * included) is closed on the way. */
	req.task_id = 11;
	req.check_access = 0;
	req.npids = 2;
	req.pids[0] = 999999999;
	req.pids[1] = root_target;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), 0, "%s", why);
	cr_assert_neq(fcntl(STDIN_FILENO, F_GETFD), -1, "the launcher's stdin was closed");
	req.task_id = 12;
	req.npids = 1;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), ESRCH);
	cr_assert_neq(fcntl(STDIN_FILENO, F_GETFD), -1, "the launcher's stdin was closed");
	/* A client's pid that does not exist fails its task, as it did. */
	req.task_id = 13;
	req.check_access = 1;
	req.req_uid = stranger.uid;
	req.req_gid = stranger.gid;
	req.npids = 2;
	req.pids[1] = own;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), ESRCH, "%s", why);
	req.npids = 1;
	/* A kernel thread has no user memory to trace: refused too. */
	req.task_id = 10;
	req.ngroups = 0;
	req.pids[0] = 2;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), EPERM);
}

/*
 * A client's own process that then execs a set-user-ID program (passwd, at its prompt on a
 * terminal of its own): what was the client's to name is not any more, though the pid and
 * the process are the same (policy/README.md, "Targets follow their credentials").
 */
Test(opener, a_client_s_target_that_execs_a_setuid_program_is_not_opened_for)
{
	struct who stranger = { 65534, 65534, (gid_t)-1 };
	struct msg_spawn req = { .task_id = 21, .npids = 1, .check_access = 1 };
	int master = -1, go = -1, fd = -1;
	char why[256] = "";
	uint64_t cs, ce;
	pid_t own;

	own = start_on_pty_as(stranger, "read x; exec /usr/bin/passwd </dev/tty", &master, &go);
	cr_assert_gt(own, 0);
	others[nothers++] = own;
	req.req_uid = stranger.uid;
	req.req_gid = stranger.gid;
	req.pids[0] = own;
	cr_assert_eq(ask_spawn(&req, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(ask_open(OPEN_MAPS, own, 0, 0, &fd), 0, "the client's own shell refused");
	close(fd);
	cr_assert_eq(write(go, "\n", 1), 1);
	cr_assert(wait_exe(own, "/usr/bin/passwd", 5000), "the shell did not exec passwd");
	cr_assert_eq(ask_open(OPEN_MAPS, own, 0, 0, &fd), EPERM,
		     "passwd's maps were opened for a client's task");
	code_range(own, &cs, &ce);
	cr_assert_eq(ask_open(OPEN_MAPPED_FILE, own, cs, ce, &fd), EPERM,
		     "passwd's code was opened for a client's task");
	close(go);
	close(master);
}

/* ask_spawn, keeping the worker's supervisor socket (so that it waits for its task). */
static int ask_spawn_keep(struct msg_spawn *req, int *ret_sv)
{
	cr_assert_eq(ipc_send(sup[0], MSG_SPAWN_WORKER, req, sizeof(*req), -1), 0);
	for (;;) {
		cr_assert_eq(next_frame(sup[0]), 0);
		if (m.type == MSG_WORKER_SPAWNED) {
			workers[nworkers++] = ((struct msg_worker *)m.buf)->pid;
			*ret_sv = m.fd;
			m.fd = -1;
			cr_assert_eq(next_frame(ship[1]), 0);
			cr_assert_eq(m.type, MSG_PEER_CONN);
			return 0;
		}
		if (m.type == MSG_SPAWN_FAILED)
			return ((struct msg_error *)m.buf)->err;
	}
}

/* MSG_TASK_TARGETS as the supervisor: one pid on or off, then the launcher has its turn. */
static void send_target(uint64_t task_id, pid_t pid, int on)
{
	struct {
		struct msg_task_targets_hdr h;
		struct msg_task_target t;
	} f = { { .task_id = task_id, .count = 1 }, { .pid = pid, .on = (uint32_t)on } };

	cr_assert_eq(ipc_send(sup[0], MSG_TASK_TARGETS, &f, sizeof(f), -1), 0);
	/* Nothing answers a targets frame: the launcher handles it on its next turn. */
	(void)pump_until(ship[0], 200);
}

/*
 * The access log's targets change while its worker runs (MSG_TASK_TARGETS). Tried as a
 * compromised supervisor widening another task: refused, the shipper still opens nothing of the
 * added process; for the access-log worker the shipper may open a target's files exactly while
 * it is one; a second access-log worker is refused.
 */
Test(opener, only_the_access_log_s_targets_change_and_only_while_they_are_targets)
{
	struct regions r;
	struct msg_spawn net = { .task_id = 11, .npids = 1 }, alog = { .task_id = 12 };
	pid_t t = start_target(&r), u = start_target(&r);
	int sv_net = -1, sv_alog = -1, fd = -1;

	net.pids[0] = t;
	cr_assert_eq(ask_spawn_keep(&net, &sv_net), 0);
	/* Another task widened: refused, u stays closed to the shipper. */
	send_target(11, u, 1);
	cr_assert_eq(ask_open(OPEN_MAPS, u, 0, 0, NULL), EPERM,
		     "a NETWORK task's targets were widened by a targets frame");

	alog.access_log = 1;
	cr_assert_eq(ask_spawn_keep(&alog, &sv_alog), 0, "an access-log worker with no process");
	cr_assert_eq(ask_open(OPEN_MAPS, u, 0, 0, NULL), EPERM);
	send_target(12, u, 1);
	cr_assert_eq(ask_open(OPEN_MAPS, u, 0, 0, &fd), 0, "the access log's new target");
	close(fd);
	send_target(12, u, 0);
	cr_assert_eq(ask_open(OPEN_MAPS, u, 0, 0, NULL), EPERM, "a target no longer");
	{
		struct msg_spawn again = { .task_id = 13, .access_log = 1 };

		cr_assert_eq(ask_spawn_keep(&again, &fd), EBUSY, "a second access-log worker");
	}
	close(sv_net);
	close(sv_alog);
}
