// SPDX-License-Identifier: Apache-2.0
/*
 * The privilege separation, checked on live processes: what each role holds while a task
 * runs, that a forbidden system call kills only the role that made it, and that a killed
 * worker or shipper costs one task at most.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "tests/integration/harness.h"

/* comm is cut at 15 characters. */
#define SUPERVISOR_COMM "rover-superviso"
#define SHIPPER_COMM "rover-shipper"
#define WORKER_COMM "rover-worker"

static char sockdir[4096], serve_log[4096];
static pid_t launcher, target;

static void serve_up(void)
{
	tmp = make_tmpdir();
	cr_assert(tmp);
	snprintf(sockdir, sizeof(sockdir), "%s/sock", tmp);
	snprintf(serve_log, sizeof(serve_log), "%s/serve.log", tmp);
	launcher = serve_start(sockdir, serve_log);
	cr_assert_gt(launcher, 0, "rover serve did not come up");
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

TestSuite(roles, .init = serve_up, .fini = serve_down, .timeout = 180);

/* Starts `rover profile --connect` in the background for target; output in tmp/NAME. */
static pid_t submit(const char *name, const char *duration, char *errpath)
{
	static char pids[32], out[4200];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--connect",
			 sockdir,
			 "--pid",
			 pids,
			 "--duration",
			 (char *)duration,
			 "--dump-period",
			 "5ms",
			 "--output",
			 out,
			 NULL };

	snprintf(pids, sizeof(pids), "%d", (int)target);
	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	snprintf(errpath, 4200, "%s/%s.err", tmp, name);
	return spawn_cmd(argv, errpath);
}

/* Runs a short task to completion and checks its profile holds the target's hot function. */
static void next_task_works(const char *name)
{
	char errpath[4200], out[4200];
	struct folded f;
	char *err;
	pid_t c = submit(name, "1500ms", errpath);
	int rc = wait_cmd(c, 60000);

	err = slurp(errpath, NULL);
	cr_assert_eq(rc, 0, "task %s failed: %s\n--- serve log:\n%s", name, err,
		     slurp(serve_log, NULL));
	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	cr_assert_eq(folded_read(out, &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 50, "no burn_a samples in %s", name);
	folded_free(&f);
	free(err);
}

static void expect_status(pid_t pid, const char *key, const char *want)
{
	char v[256];

	cr_assert_eq(proc_status(pid, key, v, sizeof(v)), 0, "pid %d has no %s", pid, key);
	cr_assert_str_eq(v, want, "pid %d %s: %s, expected %s", pid, key, v, want);
}

static void expect_role(pid_t pid, const char *caps)
{
	char uid[256];

	cr_assert_gt(pid, 0);
	cr_assert_eq(proc_status(pid, "Uid", uid, sizeof(uid)), 0);
	cr_assert(strncmp(uid, "0\t", 2) && !strstr(uid, "\t0\t") && !strstr(uid, "\t0"),
		  "pid %d runs with uid 0 somewhere: %s", pid, uid);
	expect_status(pid, "CapEff", caps);
	expect_status(pid, "CapPrm", caps);
	expect_status(pid, "CapBnd", caps);
	expect_status(pid, "CapInh", "0000000000000000");
	expect_status(pid, "CapAmb", "0000000000000000");
	expect_status(pid, "NoNewPrivs", "1");
	expect_status(pid, "Seccomp", "2");
}

Test(roles, each_role_holds_only_its_privileges_while_a_task_runs)
{
	char errpath[4200];
	pid_t c = submit("priv.folded", "4s", errpath);
	pid_t worker = wait_child(launcher, WORKER_COMM, 5000);

	cr_assert_gt(worker, 0, "no worker appeared");
	sleep_ms(300); /* past its privilege drop */
	expect_role(find_child(launcher, SUPERVISOR_COMM), "0000000000000000");
	expect_role(find_child(launcher, SHIPPER_COMM), "0000000000000000");
	/* CAP_PERFMON (38) and CAP_BPF (39), nothing else. */
	expect_role(worker, "000000c000000000");
	/*
	 * The launcher stays root but keeps only what it uses: SETUID, SETGID, SETPCAP, BPF,
	 * PERFMON, KILL, SYS_PTRACE, CHECKPOINT_RESTORE, DAC_READ_SEARCH. No SYS_ADMIN,
	 * DAC_OVERRIDE; SYSLOG and CHOWN served its set-up only.
	 */
	expect_status(launcher, "CapEff", "000001c0000801e4");
	expect_status(launcher, "CapPrm", "000001c0000801e4");
	expect_status(launcher, "CapBnd", "000001c0000801e4");
	expect_status(launcher, "NoNewPrivs", "1");
	/* And a denylist filter that every process it starts inherits (policy/launcher.c): one
	 * filter in the launcher, its own on top in each role; a worker whose programs are
	 * attached adds worker_attached_policy. */
	expect_status(launcher, "Seccomp", "2");
	expect_status(launcher, "Seccomp_filters", "1");
	expect_status(find_child(launcher, SUPERVISOR_COMM), "Seccomp_filters", "2");
	expect_status(worker, "Seccomp_filters", "3");
	cr_assert_eq(wait_cmd(c, 30000), 0, "task failed: %s", slurp(errpath, NULL));
}

Test(roles, the_worker_links_no_grpc_protobuf_or_yaml)
{
	char cmd[4200], line[512];
	FILE *p;
	int libs = 0;

	snprintf(cmd, sizeof(cmd), "ldd %s", bin("rover-worker"));
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		libs++;
		cr_assert(!strstr(line, "grpc") && !strstr(line, "protobuf") &&
				  !strstr(line, "yaml"),
			  "worker links %s", line);
	}
	pclose(p);
	cr_assert_gt(libs, 2);
}

/* Makes pid call fork(2) through gdb: a call no role's policy allows. */
static void inject_forbidden_syscall(pid_t pid)
{
	char p[32];
	char *argv[] = { "/usr/bin/gdb", "-p", p, "-batch", "-ex", "call (long)syscall(57)", NULL };

	snprintf(p, sizeof(p), "%d", (int)pid);
	run_cmd(argv, NULL);
}

static int killed_by(pid_t pid, int timeout_ms)
{
	for (int w = 0; w < timeout_ms; w += 20) {
		if (kill(pid, 0))
			return 1;
		sleep_ms(20);
	}
	return 0;
}

Test(roles, a_forbidden_syscall_kills_that_role_and_the_rest_carry_on)
{
	char errpath[4200], *err, *log;
	pid_t shipper = find_child(launcher, SHIPPER_COMM), c, worker, supervisor;

	/* The shipper: killed, restarted, and the next task's data arrives. */
	inject_forbidden_syscall(shipper);
	cr_assert(killed_by(shipper, 5000), "shipper survived a forbidden syscall");
	next_task_works("after-shipper.folded");

	/* A worker: its task fails with the reason, the next one works. */
	c = submit("killed.folded", "20s", errpath);
	worker = wait_child(launcher, WORKER_COMM, 5000);
	cr_assert_gt(worker, 0);
	sleep_ms(500);
	inject_forbidden_syscall(worker);
	cr_assert(killed_by(worker, 5000), "worker survived a forbidden syscall");
	cr_assert_neq(wait_cmd(c, 30000), 0, "a task whose worker died reported success");
	err = slurp(errpath, NULL);
	cr_assert(strstr(err, "signal 31"), "failure reason missing: %s", err);
	free(err);
	next_task_works("after-worker.folded");

	/* The supervisor: restarted by the launcher, and tasks run again. */
	supervisor = find_child(launcher, SUPERVISOR_COMM);
	inject_forbidden_syscall(supervisor);
	cr_assert(killed_by(supervisor, 5000), "supervisor survived a forbidden syscall");
	cr_assert_gt(wait_child(launcher, SUPERVISOR_COMM, 5000), 0, "supervisor not restarted");
	sleep_ms(500);
	next_task_works("after-supervisor.folded");

	log = slurp(serve_log, NULL);
	cr_assert(strstr(log, "shipper") && strstr(log, "Bad system call"), "%s", log);
	free(log);
}

Test(roles, kill_9_of_a_worker_or_the_shipper_costs_at_most_one_task)
{
	char errpath[4200], *err;
	pid_t c = submit("w.folded", "20s", errpath), worker, shipper;

	worker = wait_child(launcher, WORKER_COMM, 5000);
	cr_assert_gt(worker, 0);
	sleep_ms(500);
	kill(worker, SIGKILL);
	cr_assert_neq(wait_cmd(c, 30000), 0, "task whose worker was killed reported success");
	err = slurp(errpath, NULL);
	cr_assert(strstr(err, "failed") && strstr(err, "signal 9"), "no failure reported: %s", err);
	free(err);
	next_task_works("after-kill-worker.folded");

	shipper = find_child(launcher, SHIPPER_COMM);
	cr_assert_gt(shipper, 0);
	kill(shipper, SIGKILL);
	cr_assert(killed_by(shipper, 5000));
	cr_assert_gt(wait_child(launcher, SHIPPER_COMM, 5000), 0, "shipper not restarted");
	next_task_works("after-kill-shipper.folded");
}

/*
 * One container per role: each started alone, unprivileged roles as the roles' user, sharing
 * a directory that is root's (the spawner's) and the roles' group's.
 */
Test(roles, each_role_started_alone_through_a_socket_directory)
{
	char dir[4200], out[4200], pids[32], ctl[4300];
	char *spawner[] = { (char *)bin("rover"), "spawner", "--socket-dir", dir, NULL };
	char *shipper[] = { "/usr/sbin/runuser",
			    "-u",
			    (char *)role_user(),
			    "--",
			    (char *)bin("rover-shipper"),
			    "--socket-dir",
			    dir,
			    NULL };
	char *supervisor[] = { "/usr/sbin/runuser",
			       "-u",
			       (char *)role_user(),
			       "--",
			       (char *)bin("rover-supervisor"),
			       "--socket-dir",
			       dir,
			       NULL };
	char *client[] = { (char *)bin("rover"), "profile", "--connect", dir, "--pid", pids,
			   "--duration",	 "1500ms",  "--output",	 out, NULL };
	pid_t sp, sh, sv;
	struct folded f;
	char *err = NULL;
	int rc;

	snprintf(dir, sizeof(dir), "%s/alone", tmp);
	snprintf(out, sizeof(out), "%s/alone.folded", tmp);
	snprintf(ctl, sizeof(ctl), "%s/ctl.sock", dir);
	snprintf(pids, sizeof(pids), "%d", (int)target);
	/* The roles' user is one agent's alone: the suite's agent goes first. */
	kill(launcher, SIGTERM);
	wait_cmd(launcher, 10000);
	launcher = 0;
	chmod(tmp, 0755); /* the roles go through it to the sockets */
	sp = spawn_cmd(spawner, NULL);
	sleep_ms(300);
	sh = spawn_cmd(shipper, NULL);
	sleep_ms(300);
	sv = spawn_cmd(supervisor, NULL);
	for (int i = 0; i < 100 && access(ctl, F_OK); i++)
		sleep_ms(50);
	rc = run_cmd(client, &err);
	kill(sv, SIGTERM);
	kill(sh, SIGTERM);
	kill(sp, SIGTERM);
	wait_cmd(sv, 5000);
	wait_cmd(sh, 5000);
	wait_cmd(sp, 5000);
	cr_assert_eq(rc, 0, "task through separately started roles failed: %s", err);
	cr_assert_eq(folded_read(out, &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 50);
	folded_free(&f);
	free(err);
}

static int count_fds(pid_t pid)
{
	char path[64], cmd[128];
	int n = -1;
	FILE *p;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	snprintf(cmd, sizeof(cmd), "ls %s | wc -l", path);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

/* A client's refused tasks cost the supervisor nothing: no output socket is made for them. */
Test(roles, refused_tasks_leak_no_descriptors)
{
	/* A NETWORK task cannot be written as a profile. */
	struct task_spec bad = { .type = TASK_NETWORK,
				 .format = FORMAT_FOLDED,
				 .npids = 1,
				 .duration_ms = 1000,
				 .period_us = 9000,
				 .flush_ms = 5000 };
	static const struct ipc_rule replies[] = {
		{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
	};
	pid_t supervisor = find_child(launcher, SUPERVISOR_COMM);
	struct ipc_msg m = { .fd = -1 };
	int before, after, sock, out;

	cr_assert_gt(supervisor, 0);
	bad.pids[0] = target;
	sock = ipc_connect(sockdir, "ctl.sock");
	cr_assert_geq(sock, 0);
	sleep_ms(200);
	before = count_fds(supervisor);
	for (int i = 0; i < 50; i++) {
		/* A descriptor with it is refused by the kernel (ctl.sock: SO_PASSRIGHTS 0). */
		out = open("/dev/null", O_WRONLY | O_CLOEXEC);
		cr_assert_eq(ipc_send(sock, MSG_CTL_PROFILE, &bad, sizeof(bad), out), -EPERM);
		close(out);
		cr_assert_eq(ipc_send(sock, MSG_CTL_PROFILE, &bad, sizeof(bad), -1), 0);
		cr_assert_eq(ipc_recv_expect(sock, replies, 1, MSG_CTL_DONE, &m), 0);
		cr_assert_eq(((struct msg_ctl_done *)m.buf)->err, EINVAL);
	}
	after = count_fds(supervisor);
	ipc_msg_release(&m);
	close(sock);
	cr_assert_eq(after, before, "supervisor descriptors %d -> %d over 50 refused tasks", before,
		     after);
}
