// SPDX-License-Identifier: Apache-2.0
/*
 * The second review's findings 1 and 2, tried as the attacker, a member of the rover group,
 * against a live `rover serve` (policy/README.md, "Threat model"): a target that execs a
 * set-user-ID program under the client's task, and a client output that is never read.
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
#include "common/util.h"
#include "tests/security/attacker.h"

#define SHIPPER_COMM "rover-shipper"

static char sockdir[4096], serve_log[4096];
static pid_t launcher;
/* The tests' programs, stopped at the end whatever failed on the way. */
static pid_t programs[4];
static int nprograms;

static pid_t kept(pid_t pid)
{
	if (pid > 0 && nprograms < 4)
		programs[nprograms++] = pid;
	return pid;
}

/* Ends pid (if still kept) and reaps it: not ended twice, whoever gets its number. */
static void release(pid_t pid)
{
	for (int i = 0; i < nprograms && pid > 0; i++) {
		if (programs[i] != pid)
			continue;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		programs[i] = 0;
	}
}

static void serve_up(void)
{
	tmp = make_tmpdir();
	cr_assert(tmp);
	chmod(tmp, 0755);
	snprintf(sockdir, sizeof(sockdir), "%s/sock", tmp);
	snprintf(serve_log, sizeof(serve_log), "%s/serve.log", tmp);
	launcher = serve_start(sockdir, serve_log);
	cr_assert_gt(launcher, 0, "rover serve did not come up: %s", slurp(serve_log, NULL));
}

static void serve_down(void)
{
	for (int i = 0; i < nprograms; i++)
		release(programs[i]);
	if (launcher > 0) {
		kill(launcher, SIGTERM);
		wait_cmd(launcher, 10000);
	}
	rm_rf(tmp);
	free(tmp);
}

/* A user outside the roles' uid, in the rover group: it may submit tasks. */
static struct who member(void)
{
	return (struct who){ 65534, 65534, role_who().gid };
}

/* A file in tmp that the member may write. */
static void shared_file(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", tmp, name);
	close(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
	chmod(path, 0666);
}

struct client_run {
	char pid[16], out[4200], log[4200];
};

/* `rover profile --connect` as the member, OFF_CPU for 6 s: its exit status. */
static int run_client(void *arg)
{
	const struct client_run *c = arg;
	int fd = open(c->log, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		return 125;
	execl(bin("rover"), "rover", "profile", "--connect", sockdir, "--pid", c->pid, "--type",
	      "off_cpu", "--duration", "6s", "--output", c->out, (char *)NULL);
	return 127;
}

TestSuite(followed, .init = serve_up, .fini = serve_down, .timeout = 120);

/*
 * The member profiles its own shell, which then execs passwd (set-user-ID root) at the
 * terminal: the kernel's perf code would stop there, and so must the task. Nothing of
 * passwd reaches the member's profile; the drop is counted and said.
 */
Test(followed, a_client_s_target_that_execs_a_setuid_program_is_dropped)
{
	struct who me = member();
	struct client_run c;
	int master = -1, rc;
	char *log, *out;
	pid_t sh;

	sh = kept(start_on_pty_as(me,
			     "i=0; while [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; "
			     "exec /usr/bin/passwd </dev/tty",
			     &master, NULL));
	cr_assert_gt(sh, 0, "no shell on a pty");
	snprintf(c.pid, sizeof(c.pid), "%d", (int)sh);
	shared_file(c.out, sizeof(c.out), "own.folded");
	shared_file(c.log, sizeof(c.log), "client.log");
	rc = as_user(me, run_client, &c);
	/* Still passwd, waiting at its prompt: the exec happened inside the task. */
	cr_assert(wait_exe(sh, "/usr/bin/passwd", 0), "the target is not passwd now");
	release(sh);
	close(master);
	log = slurp(c.log, NULL);
	out = slurp(c.out, NULL);
	cr_assert_eq(rc, 0, "rover profile: %d\n%s\n%s", rc, log, slurp(serve_log, NULL));
	cr_assert(out && strstr(out, ";"), "no stack of the shell before its exec:\n%s", out);
	cr_assert_null(strstr(out, "passwd"), "passwd's stacks reached the member:\n%s", out);
	cr_assert_null(strstr(out, "pam"), "PAM's frames reached the member:\n%s", out);
	cr_assert_null(strstr(out, "misc_conv"), "PAM's frames reached the member:\n%s", out);
	cr_assert(strstr(log, "lost: 1 processes dropped"), "the drop was not said:\n%s", log);
	cr_assert(strstr(slurp(serve_log, NULL), "dropped: it is no longer its client's"),
		  "the worker did not say which process it dropped");
	free(log);
	free(out);
}

static int connect_ctl(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", sockdir) >=
	    (int)sizeof(sa.sun_path))
		return -1;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || ipc_set_timeouts(fd))
		return -1;
	return fd;
}

static const struct ipc_rule replies[] = {
	{ MSG_CTL_ACCEPTED, sizeof(struct msg_ctl_accepted), sizeof(struct msg_ctl_accepted), 0,
	  0 },
	{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
};

/* Sends an ON_CPU task of ms on pid with output out (format fmt); the ctl socket, or -1. */
static int submit(pid_t pid, uint32_t fmt, uint32_t ms, int out)
{
	struct task_spec spec = { .type = TASK_ON_CPU, .format = fmt, .npids = 1,
				  .duration_ms = ms, .period_us = 2000, .flush_ms = 500 };
	int sock = connect_ctl();

	spec.pids[0] = pid;
	if (sock < 0 || ipc_send(sock, MSG_CTL_PROFILE, &spec, sizeof(spec), out)) {
		if (sock >= 0)
			close(sock);
		return -1;
	}
	return sock;
}

/* The task's end on sock: its err (0: written), -1 when the agent said nothing in time. */
static int done_of(int sock, struct msg_ctl_done *ret)
{
	struct ipc_msg m = { .fd = -1 };
	int err;

	do {
		err = ipc_recv(sock, replies, 2, &m);
	} while (!err && m.type == MSG_CTL_ACCEPTED);
	if (err)
		return -1;
	memcpy(ret, m.buf, sizeof(*ret));
	ipc_msg_release(&m);
	return ret->err;
}

struct stall {
	pid_t own;
	int go[2];	/* the member's child waits on go[0] to close its output's end */
	int result[2];	/* and tells the parent its task's err there */
};

/*
 * As the member: its own process profiled into a socket that is full before the task starts
 * (the member filled it and never reads it) and, told to, it closes its end.
 */
static int stall_the_shipper(void *arg)
{
	struct stall *s = arg;
	struct msg_ctl_done d;
	int pair[2], sock, err;
	char c, junk[4096] = { 0 };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair))
		return 10;
	while (send(pair[1], junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	if (errno != EAGAIN)
		return 14;
	sock = submit(s->own, FORMAT_SVG, 1000, pair[1]);
	close(pair[1]);
	if (sock < 0)
		return 11;
	if (read(s->go[0], &c, 1) != 1)
		return 12;
	close(pair[0]);
	err = done_of(sock, &d);
	return write(s->result[1], &err, sizeof(err)) == sizeof(err) ? 0 : 13;
}

/* A pipe as a client's output: refused before it reaches the shipper. */
static int send_a_pipe(void *arg)
{
	struct msg_ctl_done d;
	int p[2], sock;

	if (pipe2(p, O_CLOEXEC))
		return 10;
	sock = submit(*(pid_t *)arg, FORMAT_FOLDED, 500, p[1]);
	if (sock < 0)
		return 11;
	return done_of(sock, &d) == ENOTSOCK && strstr(d.text, "stream socket") ? 0 : 12;
}

/*
 * Finding 2: a member's output that is never read (a socket whose send buffer fills at
 * once), then closed, neither stalls the shipper for anyone else nor kills it; a pipe is
 * not taken at all.
 */
Test(followed, a_client_output_never_read_stalls_nobody_and_kills_nothing)
{
	struct who me = member();
	struct stall s;
	struct msg_ctl_done d;
	pid_t root_target, shipper, child;
	int sock, pair[2], err = -1, status;
	uint64_t t0;
	char buf[4096], c = 'x';
	size_t got = 0;
	ssize_t n;

	root_target = kept(start_program(bin("tests/programs/demo_burn"), NULL));
	s.own = kept(start_program_as(me, bin("tests/programs/demo_burn")));
	cr_assert_gt(root_target, 0);
	cr_assert_gt(s.own, 0);
	shipper = wait_child(launcher, SHIPPER_COMM, 5000);
	cr_assert_gt(shipper, 0);
	cr_assert_eq(as_user(me, send_a_pipe, &s.own), 0, "a pipe was taken as an output");

	cr_assert_eq(pipe2(s.go, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(s.result, O_CLOEXEC), 0);
	child = fork();
	if (child == 0)
		_exit(become(me) ? 126 : stall_the_shipper(&s));
	kept(child);
	close(s.go[0]);
	close(s.result[1]);
	/* The member's 1 s task has ended and its output waits on the full socket. */
	sleep_ms(2500);

	/* Root's task meanwhile: done in its own time, its profile whole. */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	t0 = now_mono_ms();
	sock = submit(root_target, FORMAT_FOLDED, 1000, pair[1]);
	close(pair[1]);
	cr_assert_geq(sock, 0);
	cr_assert_eq(done_of(sock, &d), 0, "root's task: %s\n%s", d.text, slurp(serve_log, NULL));
	cr_assert_lt(now_mono_ms() - t0, 8000, "root's 1 s task took %llu ms beside a stalled client",
		     (unsigned long long)(now_mono_ms() - t0));
	while ((n = read(pair[0], buf, sizeof(buf))) > 0)
		got += (size_t)n;
	close(pair[0]);
	close(sock);
	cr_assert_gt(got, 0, "root's profile was empty");
	cr_assert_gt(d.out.samples, 0);
	cr_assert_eq(d.out.losses[LOSS_SEND_FAILED], 0);

	/* The member closes its end: its task fails, the shipper lives. */
	cr_assert_eq(write(s.go[1], &c, 1), 1);
	cr_assert_eq(read(s.result[0], &err, sizeof(err)), (ssize_t)sizeof(err));
	cr_assert_eq(waitpid(child, &status, 0), child);
	programs[nprograms - 1] = 0; /* the child, reaped */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "member's side: %d", status);
	cr_assert_eq(err, EPIPE, "the member's task ended with %d, not EPIPE", err);
	cr_assert_eq(kill(shipper, 0), 0, "the shipper died");
	cr_assert_eq(wait_child(launcher, SHIPPER_COMM, 1000), shipper, "the shipper was restarted");
}
