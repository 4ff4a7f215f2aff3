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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "common/util.h"
#include "tests/security/attacker.h"

#define SHIPPER_COMM "rover-shipper"
#define SUPERVISOR_COMM "rover-superviso"

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
	  1 },
	{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
};

/*
 * Sends an ON_CPU task of ms on pid (format fmt), with descriptor fd when it is not -1: the
 * ctl socket, or -errno of the send (-1 when ctl.sock was not reached).
 */
static int submit(pid_t pid, uint32_t fmt, uint32_t ms, int fd)
{
	struct task_spec spec = { .type = TASK_ON_CPU,
				  .format = fmt,
				  .npids = 1,
				  .duration_ms = ms,
				  .period_us = 2000,
				  .flush_ms = 500 };
	int sock = connect_ctl(), err;

	spec.pids[0] = pid;
	if (sock < 0)
		return -1;
	err = ipc_send(sock, MSG_CTL_PROFILE, &spec, sizeof(spec), fd);
	if (err) {
		close(sock);
		return err;
	}
	return sock;
}

/*
 * The task's end on sock: its err (0: written), -1 when the agent said nothing in time. The
 * output's socket, from MSG_CTL_ACCEPTED, in *ret_out when ret_out is not NULL.
 */
static int done_of(int sock, int *ret_out, struct msg_ctl_done *ret)
{
	struct ipc_msg m = { .fd = -1 };
	int err;

	for (;;) {
		err = ipc_recv(sock, replies, 2, &m);
		if (err || m.type != MSG_CTL_ACCEPTED)
			break;
		if (ret_out && *ret_out < 0) {
			*ret_out = m.fd;
			m.fd = -1;
		}
		ipc_msg_release(&m);
	}
	if (err)
		return -1;
	memcpy(ret, m.buf, sizeof(*ret));
	ipc_msg_release(&m);
	return ret->err;
}

/* Root's 1 s task on pid, beside whatever the member did: its time, its bytes, its end. */
static void root_task_runs(pid_t pid, const char *after)
{
	uint64_t t0 = now_mono_ms(), took;
	struct msg_ctl_done d;
	int sock, out = -1;
	size_t got = 0;
	char buf[4096];
	ssize_t n;

	sock = submit(pid, FORMAT_FOLDED, 1000, -1);
	cr_assert_geq(sock, 0, "%s: ctl.sock refused root", after);
	cr_assert_eq(done_of(sock, &out, &d), 0, "%s: root's task: %s\n%s", after, d.text,
		     slurp(serve_log, NULL));
	took = now_mono_ms() - t0;
	cr_assert_lt(took, 8000, "%s: root's 1 s task took %llu ms", after,
		     (unsigned long long)took);
	cr_assert_geq(out, 0, "%s: no output socket came with the task", after);
	while ((n = read(out, buf, sizeof(buf))) > 0)
		got += (size_t)n;
	close(out);
	close(sock);
	cr_assert_gt(got, 0, "%s: root's profile was empty", after);
	cr_assert_gt(d.out.samples, 0, "%s", after);
}

struct member_task {
	pid_t own;
	int go[2];     /* the member's child waits on go[0] before closing its output's end */
	int result[2]; /* and tells the parent its task's err there */
};

/* As the member: its own process profiled, its output socket never read until told. */
static int never_read(void *arg)
{
	struct member_task *t = arg;
	struct msg_ctl_done d;
	int sock, out = -1, err;
	struct ipc_msg m = { .fd = -1 };
	char c;

	sock = submit(t->own, FORMAT_SVG, 1000, -1);
	if (sock < 0)
		return 11;
	/* Accepted, with the output's socket: held, unread. */
	if (ipc_recv(sock, replies, 2, &m) || m.type != MSG_CTL_ACCEPTED || m.fd < 0)
		return 12;
	out = m.fd;
	m.fd = -1;
	ipc_msg_release(&m);
	if (read(t->go[0], &c, 1) != 1)
		return 13;
	close(out);
	err = done_of(sock, NULL, &d);
	return write(t->result[1], &err, sizeof(err)) == sizeof(err) ? 0 : 14;
}

/*
 * A loopback TCP connection whose peer never reads, its send buffer full and a linger of
 * days: its last close waits for the peer (sk_stream_wait_close), in whichever process
 * closes it. Its fd; *ret_peer the accepted end.
 */
static int lingering_socket(int *ret_peer)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	struct linger lg = { .l_onoff = 1, .l_linger = 1000000 };
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c, small = 4096;
	char junk[4096] = { 0 };

	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &len))
		return -1;
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	*ret_peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	setsockopt(*ret_peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	while (send(c, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	if (*ret_peer < 0 || setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		return -1;
	return c;
}

/*
 * As the member: a task sent with a descriptor, a pipe and then the lingering socket, each
 * refused by the kernel at the send (ctl.sock takes no descriptor, SO_PASSRIGHTS 0): 0 when
 * both were. The socket's linger is lifted before it is closed here.
 */
static int send_descriptors(void *arg)
{
	struct linger off = { 0 };
	int p[2], peer = -1, tcp, rc = 0;
	pid_t own = *(pid_t *)arg;

	if (pipe2(p, O_CLOEXEC))
		return 10;
	if (submit(own, FORMAT_FOLDED, 500, p[1]) != -EPERM)
		rc = 11;
	tcp = lingering_socket(&peer);
	if (tcp < 0)
		return 12;
	if (!rc && submit(own, FORMAT_FOLDED, 500, tcp) != -EPERM)
		rc = 13;
	setsockopt(tcp, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
	close(tcp);
	close(peer);
	return rc;
}

/*
 * Finding 2, and what its review found: a member's output never read, then closed, stalls
 * the shipper for nobody and kills nothing; a descriptor of the member's choosing (a pipe, a
 * TCP socket whose last close would wait for days) is refused by the kernel before any role
 * holds it. Root's task beside each ends in its own time, by the same roles.
 */
Test(followed, a_client_output_never_read_stalls_nobody_and_kills_nothing)
{
	struct who me = member();
	struct member_task t;
	pid_t root_target, shipper, supervisor, child;
	int err = -1, status, rc;
	char c = 'x';

	root_target = kept(start_program(bin("tests/programs/demo_burn"), NULL));
	t.own = kept(start_program_as(me, bin("tests/programs/demo_burn")));
	cr_assert_gt(root_target, 0);
	cr_assert_gt(t.own, 0);
	shipper = wait_child(launcher, SHIPPER_COMM, 5000);
	supervisor = wait_child(launcher, SUPERVISOR_COMM, 5000);
	cr_assert_gt(shipper, 0);
	cr_assert_gt(supervisor, 0);

	rc = as_user(me, send_descriptors, &t.own);
	cr_assert_eq(rc, 0, "a descriptor was taken with a task (%d)", rc);
	root_task_runs(root_target, "after the member's descriptors");

	cr_assert_eq(pipe2(t.go, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(t.result, O_CLOEXEC), 0);
	child = fork();
	if (child == 0)
		_exit(become(me) ? 126 : never_read(&t));
	kept(child);
	close(t.go[0]);
	close(t.result[1]);
	/* The member's 1 s task has ended; its output waits on a socket nobody reads. */
	sleep_ms(2500);
	root_task_runs(root_target, "beside an output never read");

	/* The member closes its end: its task ends, written or not, the roles live. */
	cr_assert_eq(write(t.go[1], &c, 1), 1);
	cr_assert_eq(read(t.result[0], &err, sizeof(err)), (ssize_t)sizeof(err));
	cr_assert_eq(waitpid(child, &status, 0), child);
	programs[nprograms - 1] = 0; /* the child, reaped */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "member's side: %d", status);
	cr_assert(err == 0 || err == EPIPE, "the member's task ended with %d", err);
	cr_assert_eq(wait_child(launcher, SHIPPER_COMM, 1000), shipper,
		     "the shipper was restarted");
	cr_assert_eq(wait_child(launcher, SUPERVISOR_COMM, 1000), supervisor,
		     "the supervisor was restarted");
}

struct hog {
	pid_t own;
	int go[2], result[2];
};

/*
 * As the member: tasks of 30 s on its own process until one is refused; how many it holds goes
 * to the parent, which checks root's meanwhile; told to, it lets them all go.
 */
static int hold_every_slot(void *arg)
{
	struct hog *h = arg;
	int socks[32], n = 0, refused = 0;
	char c;

	while (n < 32 && !refused) {
		int sock = submit(h->own, FORMAT_FOLDED, 30000, -1), out = -1;
		struct ipc_msg m = { .fd = -1 };

		if (sock < 0)
			return 100;
		if (ipc_recv(sock, replies, 2, &m))
			return 101;
		if (m.type == MSG_CTL_DONE) {
			refused = ((struct msg_ctl_done *)m.buf)->err == EBUSY;
			ipc_msg_release(&m);
			close(sock);
			break;
		}
		out = m.fd;
		m.fd = -1;
		ipc_msg_release(&m);
		close(out);
		socks[n++] = sock;
	}
	if (write(h->result[1], &n, sizeof(n)) != sizeof(n) || read(h->go[0], &c, 1) != 1)
		return 102;
	/* A client gone: its tasks stop. */
	for (int i = 0; i < n; i++)
		close(socks[i]);
	return refused ? 0 : 103;
}

/*
 * Review of the client-output fix, finding 6: a member holding task slots (long tasks, or
 * outputs never read) cannot hold them all: past its share it is refused, and root still gets
 * a task.
 */
Test(followed, a_member_cannot_take_every_task_slot, .timeout = 150)
{
	struct who me = member();
	struct hog h;
	pid_t root_target, child;
	int taken = -1, status;
	char c = 'x';

	root_target = kept(start_program(bin("tests/programs/demo_burn"), NULL));
	h.own = kept(start_program_as(me, bin("tests/programs/demo_burn")));
	cr_assert_gt(root_target, 0);
	cr_assert_gt(h.own, 0);
	cr_assert_eq(pipe2(h.go, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(h.result, O_CLOEXEC), 0);
	child = fork();
	if (child == 0)
		_exit(become(me) ? 126 : hold_every_slot(&h));
	kept(child);
	close(h.go[0]);
	close(h.result[1]);
	cr_assert_eq(read(h.result[0], &taken, sizeof(taken)), (ssize_t)sizeof(taken));
	cr_assert_eq(taken, 8, "the member held %d tasks at once", taken);
	root_task_runs(root_target, "with the member's tasks held");
	cr_assert_eq(write(h.go[1], &c, 1), 1);
	cr_assert_eq(waitpid(child, &status, 0), child);
	programs[nprograms - 1] = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "member's side: %d", status);
}
