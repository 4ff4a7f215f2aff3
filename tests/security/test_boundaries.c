// SPDX-License-Identifier: Apache-2.0
/*
 * The review's findings 1, 2 and 7, tried as the attacker: a process of the roles' uid and
 * one of another unprivileged uid against a live `rover serve`, each step failing while a
 * normal task still works (policy/README.md, "Threat model").
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "tests/security/attacker.h"

#define SUPERVISOR_COMM "rover-superviso"
#define SHIPPER_COMM "rover-shipper"
#define WORKER_COMM "rover-worker"

static char sockdir[4096], serve_log[4096];
static pid_t launcher, target;

/* Another unprivileged user, outside the rover group. */
static const struct who stranger = { 65534, 65534, (gid_t)-1 };

static void serve_up(void)
{
	tmp = make_tmpdir();
	cr_assert(tmp);
	/* Other users may pass through the test's directory: the socket directory must
	 * hold on its own. */
	chmod(tmp, 0755);
	snprintf(sockdir, sizeof(sockdir), "%s/sock", tmp);
	snprintf(serve_log, sizeof(serve_log), "%s/serve.log", tmp);
	launcher = serve_start(sockdir, serve_log);
	cr_assert_gt(launcher, 0, "rover serve did not come up: %s", slurp(serve_log, NULL));
	target = start_program(bin("tests/programs/demo_burn"), NULL);
	cr_assert_gt(target, 0);
}

static void serve_down(void)
{
	stop_program(target);
	if (launcher > 0) {
		kill(launcher, SIGTERM);
		wait_cmd(launcher, 10000);
	}
	rm_rf(tmp);
	free(tmp);
}

TestSuite(boundary, .init = serve_up, .fini = serve_down, .timeout = 120);

static int connect_ctl(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", sockdir) >=
	    (int)sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || ipc_set_timeouts(fd))
		return -errno;
	return fd;
}

/* Submits a 1 s task for pid into out; the error the agent answers (0: profile written). */
static int submit_raw(pid_t pid, const char *out)
{
	static const struct ipc_rule replies[] = {
		{ MSG_CTL_ACCEPTED, sizeof(struct msg_ctl_accepted),
		  sizeof(struct msg_ctl_accepted), 0, 1 },
		{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
	};
	struct task_spec spec = { .type = TASK_ON_CPU,
				  .format = FORMAT_FOLDED,
				  .npids = 1,
				  .duration_ms = 1000,
				  .period_us = 5000,
				  .flush_ms = 5000 };
	struct ipc_msg m = { .fd = -1 };
	int sock = connect_ctl(), ofd, err, got = -1;
	char buf[4096];
	ssize_t n;

	if (sock < 0)
		return 200;
	ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	spec.pids[0] = pid;
	if (ofd < 0 || ipc_send(sock, MSG_CTL_PROFILE, &spec, sizeof(spec), -1))
		return 201;
	/* The output comes back on the socket the task is accepted with, as `rover profile
	 * --connect` takes it. */
	for (;;) {
		err = ipc_recv(sock, replies, 2, &m);
		if (err || m.type != MSG_CTL_ACCEPTED)
			break;
		got = m.fd;
		m.fd = -1;
	}
	if (err)
		return 202;
	err = ((struct msg_ctl_done *)m.buf)->err;
	/* The shipper closed its end before the task was said done: all of it is here. */
	while (got >= 0 && (n = read(got, buf, sizeof(buf))) > 0)
		if (write(ofd, buf, (size_t)n) != n)
			return 203;
	if (got >= 0)
		close(got);
	close(ofd);
	return err > 0 && err < 200 ? err : 0;
}

static int try_connect(void *arg)
{
	int fd = connect_ctl();

	(void)arg;
	return fd >= 0 ? 0 : -fd;
}

Test(boundary, another_user_cannot_reach_ctl_sock)
{
	cr_assert_eq(as_user(stranger, try_connect, NULL), EACCES,
		     "a user outside the rover group reached ctl.sock");
	/* The roles' group may connect: what it may ask is checked per task (below). */
	cr_assert_eq(as_user(role_who(), try_connect, NULL), 0);
}

static int profile_root_target(void *arg)
{
	char out[4200];

	(void)arg;
	snprintf(out, sizeof(out), "/tmp/rover-attack-%d.folded", (int)getpid());
	int err = submit_raw(target, out);

	unlink(out);
	return err;
}

/* Finding 1: any process of the roles' uid could submit a task on a root process. */
Test(boundary, the_roles_uid_cannot_profile_a_root_process)
{
	char out[4200], *log;
	struct folded f;

	cr_assert_eq(as_user(role_who(), profile_root_target, NULL), EPERM,
		     "a process of the roles' uid profiled a root process");
	log = slurp(serve_log, NULL);
	cr_assert(log && strstr(log, "may not trace process"), "refusal not logged: %s", log);
	free(log);
	/* root still may. */
	snprintf(out, sizeof(out), "%s/root.folded", tmp);
	cr_assert_eq(submit_raw(target, out), 0);
	cr_assert_eq(folded_read(out, &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 0);
	folded_free(&f);
}

struct by_name {
	char regex[4200], out[4200], err[4200];
};

/* `rover profile --connect --name REGEX` as the attacker, its stderr in b->err: its status. */
static int profile_by_name(void *arg)
{
	struct by_name *b = arg;
	char *argv[] = { (char *)bin("rover"), "profile", "--connect", sockdir, "--name", b->regex,
			 "--duration",	       "1s",	  "--output",  b->out,	NULL };
	pid_t pid = spawn_cmd(argv, b->err);

	return pid > 0 ? wait_cmd(pid, 30000) : 125;
}

/*
 * The same attack by name: a client in the rover group names root's process by its command
 * line (which any user may read). The name is found, said, and the task refused as with
 * --pid: the launcher's check applies to every pid chosen, and nothing of root's process is
 * written.
 */
Test(boundary, a_client_naming_a_root_process_by_name_is_refused_as_with_pid)
{
	struct who me = stranger;
	struct by_name b;
	char said[128], *err, *log;
	struct stat st;
	int rc;

	me.extra = role_who().gid;
	snprintf(b.regex, sizeof(b.regex), "^%s$", bin("tests/programs/demo_burn"));
	snprintf(b.out, sizeof(b.out), "%s/byname.folded", tmp);
	snprintf(b.err, sizeof(b.err), "%s/byname.err", tmp);
	close(open(b.out, O_WRONLY | O_CREAT | O_TRUNC, 0666));
	close(open(b.err, O_WRONLY | O_CREAT | O_TRUNC, 0666));
	chmod(b.out, 0666);
	chmod(b.err, 0666);
	rc = as_user(me, profile_by_name, &b);
	err = slurp(b.err, NULL);
	log = slurp(serve_log, NULL);
	cr_assert_neq(rc, 0, "a client profiled root's process by name: %s", err);
	snprintf(said, sizeof(said), "process %d (demo_burn) matched by its command line",
		 (int)target);
	cr_assert(err && strstr(err, said), "the match was not said: %s", err);
	snprintf(said, sizeof(said), "may not trace process %d", (int)target);
	cr_assert(err && strstr(err, said), "not refused as --pid is: %s", err);
	cr_assert(log && strstr(log, said), "refusal not logged: %s", log);
	cr_assert_eq(stat(b.out, &st), 0);
	cr_assert_eq(st.st_size, 0, "something of root's process was written");
	free(err);
	free(log);
}

struct own_task {
	pid_t own;
	char out[4200];
};

static int profile_own_then_root(void *arg)
{
	struct own_task *t = arg;
	int err = submit_raw(t->own, t->out);

	if (err)
		return 10 + err % 100;
	return submit_raw(target, "/dev/null") == EPERM ? 0 : 1;
}

/* A user in the rover group profiles its own process, and still not root's. */
Test(boundary, a_client_profiles_what_it_could_trace_itself_and_nothing_else)
{
	struct who me = stranger;
	struct own_task t;
	struct folded f;
	int rc;

	me.extra = role_who().gid;
	t.own = start_program_as(me, bin("tests/programs/demo_burn"));
	cr_assert_gt(t.own, 0);
	snprintf(t.out, sizeof(t.out), "%s/own.folded", tmp);
	/* The stranger writes its profile where it may. */
	close(open(t.out, O_WRONLY | O_CREAT | O_TRUNC, 0666));
	chmod(t.out, 0666);
	rc = as_user(me, profile_own_then_root, &t);
	stop_program(t.own);
	cr_assert_eq(rc, 0, "own task or refusal went wrong (%d): %s", rc, slurp(serve_log, NULL));
	cr_assert_eq(folded_read(t.out, &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 0, "no burn_a in the client's own profile");
	folded_free(&f);
}

/* Samples with a kernel frame (suffix _[k]) in a folded profile. */
static uint64_t kernel_samples(const char *path)
{
	struct folded f;
	uint64_t n = 0;

	cr_assert_eq(folded_read(path, &f), 0, "%s", path);
	for (size_t i = 0; i < f.n; i++)
		if (strstr(f.stacks[i], "_[k]"))
			n += f.counts[i];
	folded_free(&f);
	return n;
}

static int profile_own(void *arg)
{
	struct own_task *t = arg;

	return submit_raw(t->own, t->out);
}

/*
 * A client that is not root gets its processes' user frames only, as perf_event_paranoid
 * gives unprivileged users: the kernel's frames, which root sees in the same process, are
 * not shown to it.
 */
Test(boundary, a_client_that_is_not_root_sees_no_kernel_frame)
{
	struct who me = stranger;
	struct own_task t;
	char root_out[4200];
	uint64_t k;

	me.extra = role_who().gid;
	t.own = fork();
	if (t.own == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		if (become(me))
			_exit(126);
		/* Most of its time is the kernel's: reading zeros, writing them nowhere. */
		execl("/bin/dd", "dd", "if=/dev/zero", "of=/dev/null", "bs=1M", (char *)NULL);
		_exit(127);
	}
	sleep_ms(200);
	snprintf(root_out, sizeof(root_out), "%s/dd-root.folded", tmp);
	cr_assert_eq(submit_raw(t.own, root_out), 0);
	snprintf(t.out, sizeof(t.out), "%s/dd-own.folded", tmp);
	close(open(t.out, O_WRONLY | O_CREAT | O_TRUNC, 0666));
	chmod(t.out, 0666);
	cr_assert_eq(as_user(me, profile_own, &t), 0);
	stop_program(t.own);
	k = kernel_samples(root_out);
	cr_assert_gt(k, 10, "the workload shows too few kernel frames to tell (%llu)",
		     (unsigned long long)k);
	k = kernel_samples(t.out);
	cr_assert_eq(k, 0, "%llu samples with kernel frames went to uid %u", (unsigned long long)k,
		     me.uid);
}

static int plant_in_sockdir(void *arg)
{
	char path[4200], to[4200];
	int fd;

	(void)arg;
	snprintf(path, sizeof(path), "%s/shipper.sock", sockdir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >=
		    (int)sizeof(sa.sun_path))
			return 4;
		if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return 1;
	}
	snprintf(path, sizeof(path), "%s/ctl.sock", sockdir);
	snprintf(to, sizeof(to), "%s/ctl.sock.old", sockdir);
	if (!rename(path, to))
		return 2;
	snprintf(path, sizeof(path), "%s/link", sockdir);
	if (!symlink("/etc/shadow", path))
		return 3;
	return 0;
}

/* Findings 1 and 2: nothing of the roles' uid can be renamed over, or planted for root. */
Test(boundary, the_socket_directory_is_roots_and_holds_no_role_socket)
{
	struct stat st;
	char path[4200];

	cr_assert_eq(stat(sockdir, &st), 0);
	cr_assert_eq(st.st_uid, 0, "socket directory owned by %u", st.st_uid);
	cr_assert_eq(st.st_mode & 07777, 0750, "socket directory mode %o", st.st_mode & 07777);
	snprintf(path, sizeof(path), "%s/ctl.sock", sockdir);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISSOCK(st.st_mode) && st.st_uid == 0 && (st.st_mode & 0777) == 0660);
	/* No role is found by a path: nothing to pose as. */
	snprintf(path, sizeof(path), "%s/shipper.sock", sockdir);
	cr_assert_neq(access(path, F_OK), 0, "shipper.sock exists");
	snprintf(path, sizeof(path), "%s/spawner.sock", sockdir);
	cr_assert_neq(access(path, F_OK), 0, "spawner.sock exists");
	cr_assert_eq(as_user(role_who(), plant_in_sockdir, NULL), 0,
		     "the roles' uid wrote in the socket directory");
	cr_assert_eq(as_user(stranger, plant_in_sockdir, NULL), 0);
}

struct fake_agent {
	char dir[4200];
	int lsock;
};

static int listen_as_agent(void *arg)
{
	struct fake_agent *a = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), c;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", a->dir) >=
	    (int)sizeof(sa.sun_path))
		return 3;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4))
		return 1;
	/* Waits for root's client; anything that connects is a win for the attacker. */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 40; i++) {
		c = accept4(fd, NULL, NULL, SOCK_NONBLOCK);
		if (c >= 0)
			return 2;
		sleep_ms(100);
	}
	return 0;
}

/* Finding 1: posing as ctl.sock to root's `rover profile --connect`. */
Test(boundary, root_refuses_an_agent_directory_another_user_controls)
{
	struct fake_agent a;
	char out[4200], pid[32], *err = NULL;
	char *argv[] = { (char *)bin("rover"), "profile", "--connect", a.dir, "--pid", pid,
			 "--duration",	       "1s",	  "--output",  out,   NULL };
	struct who rw = role_who();
	pid_t fake;
	int rc, status;

	snprintf(a.dir, sizeof(a.dir), "%s/fake", tmp);
	snprintf(out, sizeof(out), "%s/fake.folded", tmp);
	snprintf(pid, sizeof(pid), "%d", (int)target);
	cr_assert_eq(mkdir(a.dir, 0755), 0);
	cr_assert_eq(chown(a.dir, rw.uid, rw.gid), 0);
	fake = fork();
	if (fake == 0)
		_exit(become(rw) ? 126 : listen_as_agent(&a));
	sleep_ms(300);
	rc = run_cmd(argv, &err);
	waitpid(fake, &status, 0);
	cr_assert_neq(rc, 0, "root's client used a directory of uid %u", rw.uid);
	cr_assert(err && strstr(err, "refusing it"), "%s", err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the fake agent got a connection from root's client (status %d)", status);
	free(err);

	/* Root's own directory, 0750, but under one the other user controls: it could be
	 * renamed away and replaced, so it is refused too. */
	snprintf(a.dir, sizeof(a.dir), "%s/fake/roots", tmp);
	cr_assert_eq(mkdir(a.dir, 0750), 0);
	rc = run_cmd(argv, &err);
	cr_assert_neq(rc, 0, "root's client used a directory under one of uid %u", rw.uid);
	cr_assert(err && strstr(err, "a parent directory") && strstr(err, "refusing it"), "%s",
		  err);
	free(err);
}

/* Finding 2: a socket directory another user controls, or a link to root's files. */
Test(boundary, a_socket_directory_another_user_could_swap_is_refused)
{
	char parent[4200], dir[4200], victim[4200], link[4200], *err = NULL;
	char *in_theirs[] = { (char *)bin("rover"), "serve", "--socket-dir", dir, NULL };
	char *via_link[] = { (char *)bin("rover"), "serve", "--socket-dir", link, NULL };
	struct who rw = role_who();
	struct stat st;

	snprintf(parent, sizeof(parent), "%s/theirs", tmp);
	snprintf(dir, sizeof(dir), "%s/theirs/sock", tmp);
	cr_assert_eq(mkdir(parent, 0755), 0);
	cr_assert_eq(chown(parent, rw.uid, rw.gid), 0);
	cr_assert_neq(run_cmd(in_theirs, &err), 0, "served in a directory of uid %u", rw.uid);
	cr_assert(err && strstr(err, "not root's alone"), "%s", err);
	free(err);

	/* A planted link to a root-owned directory: never followed, never chowned. */
	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	snprintf(link, sizeof(link), "%s/sock-link", tmp);
	cr_assert_eq(mkdir(victim, 0700), 0);
	cr_assert_eq(symlink(victim, link), 0);
	cr_assert_neq(run_cmd(via_link, &err), 0, "served through a symbolic link");
	free(err);
	cr_assert_eq(stat(victim, &st), 0);
	cr_assert(st.st_uid == 0 && st.st_gid == 0 && (st.st_mode & 07777) == 0700,
		  "the link's target changed: uid %u gid %u mode %o", st.st_uid, st.st_gid,
		  st.st_mode & 07777);
}

/* Field 6 (session) and 7 (tty_nr) of /proc/PID/stat. */
static void session_of(pid_t pid, long *ret_sid, long *ret_tty)
{
	char path[64], *buf, *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	buf = slurp(path, NULL);
	cr_assert(buf);
	p = strrchr(buf, ')');
	cr_assert(p);
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %ld %ld", ret_sid, ret_tty), 2);
	free(buf);
}

static void expect_detached(pid_t pid)
{
	char path[64], fd0[256] = "";
	long sid, tty;

	cr_assert_gt(pid, 0);
	session_of(pid, &sid, &tty);
	cr_assert_eq(sid, pid, "pid %d is not in a session of its own (session %ld)", pid, sid);
	cr_assert_eq(tty, 0, "pid %d has a controlling terminal (%ld)", pid, tty);
	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)pid);
	cr_assert_gt(readlink(path, fd0, sizeof(fd0) - 1), 0);
	cr_assert_str_eq(fd0, "/dev/null", "pid %d stdin is %s", pid, fd0);
}

/* Finding 7: a role cannot type into the launcher's terminal (TIOCSTI). */
Test(boundary, roles_hold_no_terminal_and_read_nothing_from_it)
{
	char pids[32], out[4200];
	char *argv[] = { (char *)bin("rover"), "profile", "--connect", sockdir, "--pid", pids,
			 "--duration",	       "3s",	  "--output",  out,	NULL };
	pid_t c, worker;

	snprintf(pids, sizeof(pids), "%d", (int)target);
	snprintf(out, sizeof(out), "%s/tty.folded", tmp);
	c = spawn_cmd(argv, NULL);
	worker = wait_child(launcher, WORKER_COMM, 5000);
	expect_detached(find_child(launcher, SUPERVISOR_COMM));
	expect_detached(find_child(launcher, SHIPPER_COMM));
	expect_detached(worker);
	cr_assert_eq(wait_cmd(c, 30000), 0);
}

/* Finding 1: the roles' uid must be rover's alone; a process of it rover did not start. */
Test(uid, an_agent_refuses_a_uid_that_another_process_holds, .timeout = 60)
{
	char out[] = "/tmp/rover-uid-test.folded", pids[32], *err = NULL;
	char *argv[] = { (char *)bin("rover"), "profile", "--pid", pids, "--duration", "1s",
			 "--output",	       out,	  NULL };
	pid_t squatter = start_program_as(role_who(), bin("tests/programs/demo_burn"));
	pid_t t = start_program(bin("tests/programs/demo_burn"), NULL);
	int rc;

	cr_assert_gt(squatter, 0);
	snprintf(pids, sizeof(pids), "%d", (int)t);
	rc = run_cmd(argv, &err);
	stop_program(squatter);
	cr_assert_neq(rc, 0, "an agent started while uid of %s ran another process", role_user());
	cr_assert(err && strstr(err, "which this agent did not start"), "%s", err);
	free(err);
	/* Once it is the roles' alone again, the agent runs. */
	rc = run_cmd(argv, &err);
	stop_program(t);
	unlink(out);
	cr_assert_eq(rc, 0, "%s", err);
	free(err);
}

/* The next fork's pid (as root): /proc/sys/kernel/ns_last_pid. */
static int set_last_pid(pid_t pid)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%d", (int)pid) > 0;
	return fclose(f) || !ok ? -1 : 0;
}

/*
 * A process that takes the number of a profiled process that exited mid-task is not
 * profiled: the task pinned its targets with pidfds and forgets a number when its process ends.
 */
Test(pids, a_process_that_takes_a_profiled_pid_is_not_profiled, .timeout = 90)
{
	char out[] = "/tmp/rover-pid-reuse.folded", pids[64], *err;
	char *argv[] = { (char *)bin("rover"), "profile", "--pid", pids, "--duration", "5s",
			 "--output",	       out,	  NULL };
	pid_t a = start_program(bin("tests/programs/demo_burn"), NULL);
	pid_t b = start_program(bin("tests/programs/demo_burn"), NULL);
	pid_t rover, impostor = -1;
	struct folded f;

	cr_assert(a > 0 && b > 0);
	snprintf(pids, sizeof(pids), "%d,%d", (int)a, (int)b);
	rover = spawn_cmd(argv, "/tmp/rover-pid-reuse.err");
	sleep_ms(1500);
	stop_program(a);
	for (int i = 0; i < 50 && impostor != a; i++) {
		stop_program(impostor);
		cr_assert_eq(set_last_pid(a - 1), 0);
		impostor = start_program(bin("tests/programs/cxx_burn"), NULL);
	}
	if (impostor != a) {
		stop_program(impostor);
		stop_program(b);
		wait_cmd(rover, 30000);
		cr_skip_test("pid %d was taken by another process first, 50 times", (int)a);
	}
	cr_assert_eq(wait_cmd(rover, 30000), 0, "%s", slurp("/tmp/rover-pid-reuse.err", NULL));
	stop_program(impostor);
	stop_program(b);
	cr_assert_eq(folded_read(out, &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 0, "the targets were not profiled");
	/*
	 * The impostor's samples, if any were taken, would be named with the exited target's
	 * mappings ([unknown] frames under its name) or its own: every sample must be the
	 * targets' code, bar a few kernel-only ones.
	 */
	cr_assert_geq(folded_with_frame(&f, "work_loop") * 100, f.total * 97,
		      "%llu of %llu samples are not the targets' (pid %d was taken by cxx_burn "
		      "after its target exited)",
		      (unsigned long long)(f.total - folded_with_frame(&f, "work_loop")),
		      (unsigned long long)f.total, (int)a);
	folded_free(&f);
	unlink(out);
	err = slurp("/tmp/rover-pid-reuse.err", NULL);
	free(err);
	unlink("/tmp/rover-pid-reuse.err");
}
