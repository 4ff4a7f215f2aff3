// SPDX-License-Identifier: Apache-2.0
/*
 * The seccomp findings of the privilege review, written as the attack. Each attack runs in a
 * forked child that stacks the filters as a live process does: the launcher's denylist, then
 * its role's allowlist (and, for an attached worker, worker_attached_policy). The child is
 * root with every capability, so only the filter stands between it and the attack.
 *
 * A call a table does not list kills the child with SIGSYS; a call a table denies with an
 * errno exits the child with that errno. When two stacked filters both return an errno, the
 * kernel takes the later filter's (the role's): TIOCSTI under a role fails with ENOTTY.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/privdrop.h"
#include "tests/integration/harness.h"

extern char **environ;

static const struct role_policy *const launcher_only[] = { &launcher_policy, NULL };
static const struct role_policy *const supervisor_chain[] = { &launcher_policy, &supervisor_policy,
							      NULL };
static const struct role_policy *const worker_chain[] = { &launcher_policy, &worker_policy, NULL };
static const struct role_policy *const attached_chain[] = { &launcher_policy, &worker_policy,
							    &worker_attached_policy, NULL };
static const struct role_policy *const attached_norun_chain[] = { &launcher_policy, &worker_policy,
								  &worker_attached_norun_policy,
								  NULL };
static const struct role_policy *const attached_net_chain[] = { &launcher_policy, &worker_policy,
								&worker_attached_net_policy, NULL };
static const struct role_policy *const shipper_chain[] = { &launcher_policy, &shipper_policy,
							   NULL };
static const struct role_policy *const nospool_chain[] = { &launcher_policy,
							   &shipper_nospool_policy, NULL };

static const struct role_policy *const *const every_role[] = {
	supervisor_chain,   worker_chain,  attached_chain,
	attached_net_chain, shipper_chain, nospool_chain,
};
static const char *const role_name[] = { "supervisor",	    "worker",
					 "attached worker", "attached NETWORK worker",
					 "shipper",	    "shipper without spool" };
#define NROLES (sizeof(every_role) / sizeof(every_role[0]))

/* An attack: 0 when the call worked, else the errno it failed with. */
typedef int (*attack_fn)(void *arg);

/* The wait status of a child that stacked chain's filters and then ran fn. */
static int under(const struct role_policy *const *chain, attack_fn fn, void *arg)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		for (size_t i = 0; chain[i]; i++)
			if (sandbox_apply(chain[i]))
				_exit(250);
		_exit(fn(arg));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

#define expect_killed(st, what)                                  \
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,     \
		  "%s: expected a SIGSYS kill, got %s %d", what, \
		  WIFSIGNALED(st) ? "signal" : "exit",           \
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st))
#define expect_exit(st, code, what)                                                              \
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == (code), "%s: expected exit %d, got %s %d", \
		  what, (int)(code), WIFSIGNALED(st) ? "signal" : "exit",                        \
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st))

static int result(long rc)
{
	return rc >= 0 ? 0 : errno;
}

/* ---- the terminal of whoever started rover ---- */

static int pty_master = -1, pty_slave = -1;

static void open_pty(void)
{
	pty_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(pty_master, 0);
	cr_assert_eq(grantpt(pty_master), 0);
	cr_assert_eq(unlockpt(pty_master), 0);
	pty_slave = open(ptsname(pty_master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(pty_slave, 0);
}

static int tiocsti(void *arg)
{
	char c = 'x';

	(void)arg;
	return result(ioctl(pty_slave, TIOCSTI, &c));
}

static int tioclinux(void *arg)
{
	char sub = 6; /* TIOCL_GETFGCONSOLE-like subcode: never reached */

	(void)arg;
	return result(ioctl(pty_slave, TIOCLINUX, &sub));
}

static int tcgets(void *arg)
{
	(void)arg;
	return isatty(pty_slave) ? 0 : errno;
}

Test(seccomp, tiocsti_into_the_terminal_fails_in_every_role)
{
	open_pty();
	/* The attack works without a filter: root pushes a byte into the terminal's input. */
	cr_assert_eq(tiocsti(NULL), 0);
	expect_exit(under(launcher_only, tiocsti, NULL), EPERM, "launcher TIOCSTI");
	expect_exit(under(launcher_only, tioclinux, NULL), EPERM, "launcher TIOCLINUX");
	for (size_t r = 0; r < NROLES; r++) {
		expect_exit(under(every_role[r], tiocsti, NULL), ENOTTY, role_name[r]);
		expect_exit(under(every_role[r], tioclinux, NULL), ENOTTY, role_name[r]);
		/* glibc's isatty (TCGETS) still answers: listed before the catch-all. */
		expect_exit(under(every_role[r], tcgets, NULL), 0, role_name[r]);
	}
}

/* ---- sockets ---- */

static int sock(void *arg)
{
	const int *dt = arg;
	int fd = socket(dt[0], dt[1] | SOCK_CLOEXEC, dt[2]);

	return fd >= 0 ? 0 : errno;
}

static int pair_of(void *arg)
{
	const int *dt = arg;
	int sv[2];

	return socketpair(dt[0], dt[1] | SOCK_CLOEXEC, dt[2], sv) ? errno : 0;
}

Test(seccomp, sockets_by_family_and_type)
{
	static const int netlink[] = { AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */ };
	static const int packet[] = { AF_PACKET, SOCK_RAW, 0 };
	static const int tcp[] = { AF_INET, SOCK_STREAM, 0 };
	static const int udp6[] = { AF_INET6, SOCK_DGRAM, 0 };
	static const int raw[] = { AF_INET, SOCK_RAW, 1 /* ICMP */ };
	static const int unix_stream[] = { AF_UNIX, SOCK_STREAM, 0 };
	static const int unix_dgram[] = { AF_UNIX, SOCK_DGRAM, 0 };

	for (size_t r = 0; r < NROLES; r++) {
		expect_killed(under(every_role[r], sock, (void *)netlink), role_name[r]);
		expect_killed(under(every_role[r], sock, (void *)packet), role_name[r]);
		expect_killed(under(every_role[r], sock, (void *)raw), role_name[r]);
		expect_killed(under(every_role[r], sock, (void *)unix_dgram), role_name[r]);
		/* Its connections are the launcher's to make: no Unix socket of its own, so no
		 * way to reach another user's socket (or an abstract one) from a role. */
		expect_killed(under(every_role[r], sock, (void *)unix_stream), role_name[r]);
	}
	/* The worker reaches no network; the gRPC roles reach the OAP and DNS. */
	expect_killed(under(worker_chain, sock, (void *)tcp), "worker TCP");
	expect_killed(under(attached_chain, sock, (void *)tcp), "attached worker TCP");
	expect_killed(under(worker_chain, sock, (void *)udp6), "worker UDP");
	expect_exit(under(supervisor_chain, sock, (void *)tcp), 0, "supervisor TCP");
	expect_exit(under(supervisor_chain, sock, (void *)udp6), 0, "supervisor UDP");
	expect_exit(under(shipper_chain, sock, (void *)tcp), 0, "shipper TCP");
	expect_exit(under(nospool_chain, sock, (void *)udp6), 0, "shipper UDP");
	/* An anonymous stream pair, reaching nobody: the supervisor's clients' outputs. No other
	 * kind of pair, and no pair in any other role. */
	expect_exit(under(supervisor_chain, pair_of, (void *)unix_stream), 0, "supervisor pair");
	expect_killed(under(supervisor_chain, pair_of, (void *)unix_dgram),
		      "supervisor dgram pair");
	for (size_t r = 1; r < NROLES; r++)
		expect_killed(under(every_role[r], pair_of, (void *)unix_stream), role_name[r]);
}

/* ---- signals ---- */

static int send_signal(void *arg)
{
	const int *a = arg;

	return result(kill(a[0], a[1]));
}

/*
 * Discovery holds a pidfd of each process with an entity: a compromised supervisor may open
 * one (it learns nothing kill(pid, 0) did not tell) but signal nothing through it, nor take
 * the process's descriptors (pidfd_getfd) or its memory (process_madvise): each dies with
 * SIGSYS (not in its allowlist) or gets EPERM (the launcher's denylist).
 */
static int pidfd_attack(void *arg)
{
	const int *a = arg;
	int fd = (int)syscall(SYS_pidfd_open, a[0], 0);

	if (fd < 0)
		return 200; /* opening must work: discovery needs it */
	switch (a[1]) {
	case 0:
		return result(syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0));
	case 1:
		return result(syscall(SYS_pidfd_getfd, fd, 0, 0));
	default:
		return result(syscall(SYS_process_madvise, fd, NULL, 0, 0, 0));
	}
}

/*
 * The supervisor may ask whether a pid exists (signal 0: discovery), and send nothing: a
 * compromised supervisor killing the shipper, a worker or the launcher (the same uid, or root
 * in this test) gets EPERM. A signal through tgkill, a queue or a pidfd dies with SIGSYS.
 */
Test(seccomp, supervisor_asks_if_a_process_lives_and_signals_nothing)
{
	pid_t victim = fork();
	int status;

	cr_assert_geq(victim, 0);
	if (victim == 0) {
		pause();
		_exit(0);
	}
	{
		const int probe[] = { victim, 0 }, term[] = { victim, SIGTERM },
			  killsig[] = { victim, SIGKILL }, stop[] = { victim, SIGSTOP },
			  group[] = { 0, SIGKILL };

		expect_exit(under(supervisor_chain, send_signal, (void *)probe), 0, "signal 0");
		expect_exit(under(supervisor_chain, send_signal, (void *)term), EPERM, "SIGTERM");
		expect_exit(under(supervisor_chain, send_signal, (void *)killsig), EPERM,
			    "SIGKILL");
		expect_exit(under(supervisor_chain, send_signal, (void *)stop), EPERM, "SIGSTOP");
		expect_exit(under(supervisor_chain, send_signal, (void *)group), EPERM,
			    "SIGKILL to its process group");
	}
	{
		const int sig[] = { victim, 0 }, getfd[] = { victim, 1 }, madv[] = { victim, 2 };
		int st = under(supervisor_chain, pidfd_attack, (void *)getfd);

		expect_killed(under(supervisor_chain, pidfd_attack, (void *)sig),
			      "pidfd_send_signal(SIGKILL)");
		cr_expect((WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) ||
				  (WIFEXITED(st) && WEXITSTATUS(st) == EPERM),
			  "pidfd_getfd: neither SIGSYS nor EPERM (status %#x)", st);
		expect_killed(under(supervisor_chain, pidfd_attack, (void *)madv),
			      "process_madvise");
	}
	cr_expect_eq(waitpid(victim, &status, WNOHANG), 0, "the victim still runs");
	kill(victim, SIGKILL);
	waitpid(victim, &status, 0);
}

/* ---- executable memory ---- */

static int map_exec(void *arg)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	return p == MAP_FAILED ? errno : 0;
}

static int protect_exec(void *arg)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (p == MAP_FAILED)
		return 200; /* plain memory must work */
	return result(mprotect(p, 4096, PROT_READ | PROT_EXEC));
}

static int pkey_exec(void *arg)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (p == MAP_FAILED)
		return 200;
	return result(syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_EXEC, -1));
}

Test(seccomp, no_executable_memory_in_any_role)
{
	for (size_t r = 0; r < NROLES; r++) {
		expect_exit(under(every_role[r], map_exec, NULL), EPERM, role_name[r]);
		expect_exit(under(every_role[r], protect_exec, NULL), EPERM, role_name[r]);
		expect_killed(under(every_role[r], pkey_exec, NULL), role_name[r]);
	}
}

/* ---- the launcher's denylist, inherited by everything it starts ---- */

static char secret[] = "a sibling's secret";
static pid_t sibling;

static void start_sibling(void)
{
	sibling = fork();
	cr_assert_geq(sibling, 0);
	if (sibling == 0) {
		for (;;)
			pause();
	}
}

static void stop_sibling(void)
{
	kill(sibling, SIGKILL);
	waitpid(sibling, NULL, 0);
}

static int vm_read(void *arg)
{
	char buf[sizeof(secret)] = "";
	struct iovec local = { buf, sizeof(buf) }, remote = { secret, sizeof(secret) };
	ssize_t n;

	(void)arg;
	n = process_vm_readv(sibling, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno;
	return strcmp(buf, secret) ? 201 : 0;
}

static int vm_write(void *arg)
{
	char buf[] = "x";
	struct iovec local = { buf, 1 }, remote = { secret, 1 };

	(void)arg;
	return result(process_vm_writev(sibling, &local, 1, &remote, 1, 0));
}

static int getfd(void *arg)
{
	int pidfd = (int)syscall(SYS_pidfd_open, sibling, 0);

	(void)arg;
	if (pidfd < 0)
		return 202;
	return result(syscall(SYS_pidfd_getfd, pidfd, 0, 0));
}

static int mem_open(void *arg)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)sibling);
	return result(syscall(SYS_open, path, *(int *)arg | O_CLOEXEC, 0));
}

static int mem_openat(void *arg)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)sibling);
	return result(syscall(SYS_openat, AT_FDCWD, path, *(int *)arg | O_CLOEXEC, 0));
}

static int uring(void *arg)
{
	struct io_uring_params p = { 0 };

	(void)arg;
	return result(syscall(SYS_io_uring_setup, 4, &p));
}

static int clone_ns(void *arg)
{
	long pid = syscall(SYS_clone, *(long *)arg | SIGCHLD, 0, 0, 0, 0);

	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		waitpid((pid_t)pid, NULL, 0);
		return 0;
	}
	return errno;
}

static int unshare_ns(void *arg)
{
	return result(unshare((int)*(long *)arg));
}

static int clone3_ns(void *arg)
{
	struct clone_args ca = { .flags = (uint64_t) * (long *)arg, .exit_signal = SIGCHLD };
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));

	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		waitpid((pid_t)pid, NULL, 0);
		return 0;
	}
	return errno;
}

static int openat2_call(void *arg)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = { O_RDWR, 0, 0 };

	(void)arg;
	return result(syscall(SYS_openat2, AT_FDCWD, "/dev/null", &how, sizeof(how)));
}

Test(seccomp, launcher_denylist_refuses_escapes)
{
	static const long ns[] = { CLONE_NEWUSER, CLONE_NEWNS,	CLONE_NEWPID,	CLONE_NEWNET,
				   CLONE_NEWUTS,  CLONE_NEWIPC, CLONE_NEWCGROUP };
	int rdwr = O_RDWR, rdonly = O_RDONLY;

	start_sibling();
	/* Each attack works without the filter: the child is root. */
	cr_expect_eq(vm_read(NULL), 0);
	cr_expect_eq(getfd(NULL), 0);
	expect_exit(under(launcher_only, vm_read, NULL), EPERM, "process_vm_readv");
	expect_exit(under(launcher_only, vm_write, NULL), EPERM, "process_vm_writev");
	expect_exit(under(launcher_only, getfd, NULL), EPERM, "pidfd_getfd");
	expect_exit(under(launcher_only, mem_open, &rdwr), EACCES, "open /proc/PID/mem O_RDWR");
	expect_exit(under(launcher_only, mem_openat, &rdwr), EACCES, "openat /proc/PID/mem O_RDWR");
	expect_exit(under(launcher_only, mem_openat, &rdonly), 0, "read-only opens still work");
	expect_exit(under(launcher_only, uring, NULL), EPERM, "io_uring_setup");
	expect_exit(under(launcher_only, openat2_call, NULL), ENOSYS, "openat2");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		expect_exit(under(launcher_only, clone_ns, (void *)&ns[i]), EPERM,
			    "clone(CLONE_NEW*)");
		expect_exit(under(launcher_only, unshare_ns, (void *)&ns[i]), EPERM, "unshare");
		expect_exit(under(launcher_only, clone3_ns, (void *)&ns[i]), ENOSYS, "clone3");
	}
	/* Under a role too: the role's table kills, or the launcher's errno shows. */
	for (size_t r = 0; r < NROLES; r++) {
		int st = under(every_role[r], vm_read, NULL);

		cr_expect(WIFSIGNALED(st) || WEXITSTATUS(st) == EPERM, "%s: process_vm_readv",
			  role_name[r]);
		st = under(every_role[r], uring, NULL);
		cr_expect(WIFSIGNALED(st) || WEXITSTATUS(st) == EPERM, "%s: io_uring_setup",
			  role_name[r]);
		st = under(every_role[r], clone_ns, (void *)&ns[0]);
		cr_expect(WIFSIGNALED(st) || WEXITSTATUS(st) == EPERM, "%s: clone(CLONE_NEWUSER)",
			  role_name[r]);
	}
	stop_sibling();
}

/* What the launcher and the roles do with processes and threads still works. */

static void *thread_main(void *arg)
{
	return arg;
}

static int processes_and_threads(void *arg)
{
	char *const argv[] = { "true", NULL };
	pthread_t t;
	void *ret = NULL;
	int status;
	pid_t pid;

	(void)arg;
	if (pthread_create(&t, NULL, thread_main, (void *)1) || pthread_join(t, &ret) || !ret)
		return 1;
	pid = fork();
	if (pid == 0) {
		execve("/bin/true", argv, environ);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 2;
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) ||
	    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 3;
	return 0;
}

static int threads_only(void *arg)
{
	pthread_t t;
	void *ret = NULL;

	(void)arg;
	if (pthread_create(&t, NULL, thread_main, (void *)1) || pthread_join(t, &ret) || !ret)
		return 1;
	return 0;
}

Test(seccomp, fork_exec_and_threads_run_under_the_denylist)
{
	expect_exit(under(launcher_only, processes_and_threads, NULL), 0, "launcher");
	/* clone3 gets ENOSYS and glibc falls back to clone with CLONE_THREAD. */
	expect_exit(under(supervisor_chain, threads_only, NULL), 0, "supervisor threads");
	expect_exit(under(shipper_chain, threads_only, NULL), 0, "shipper threads");
}

/* ---- the worker once attached ---- */

static int map_fd = -1;

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int map_lookup(void *arg)
{
	uint32_t key = 0;
	uint64_t value = 0;
	union bpf_attr a = { .map_fd = (uint32_t)map_fd,
			     .key = (uintptr_t)&key,
			     .value = (uintptr_t)&value };

	(void)arg;
	if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a))
		return errno;
	return value == 42 ? 0 : 203;
}

static int prog_load(void *arg)
{
	static const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a = { .prog_type = BPF_PROG_TYPE_SOCKET_FILTER,
			     .insns = (uintptr_t)insns,
			     .insn_cnt = 2,
			     .license = (uintptr_t) "GPL" };

	(void)arg;
	return result(sys_bpf(BPF_PROG_LOAD, &a));
}

static int map_create(void *arg)
{
	union bpf_attr a = {
		.map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 1
	};

	(void)arg;
	return result(sys_bpf(BPF_MAP_CREATE, &a));
}

static int perf_open(void *arg)
{
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE,
					.size = sizeof(attr),
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.sample_period = 1000000 };

	(void)arg;
	return result(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

static int open_ro(void *arg)
{
	(void)arg;
	return result(openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC));
}

/* Any bpf command, with a zeroed attribute: whatever the kernel says of it, if it gets it. */
static int bpf_cmd(void *arg)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	return result(sys_bpf((int)(intptr_t)arg, &a));
}

/* Every bpf command under chain: those in allowed[n] reach the kernel, the others kill. */
static void expect_bpf_commands(const struct role_policy *const *chain, const int *allowed,
				size_t n, const char *who)
{
	for (int cmd = 0; cmd < 64; cmd++) {
		char what[96];
		int ok = 0, st;

		for (size_t i = 0; i < n; i++)
			ok |= cmd == allowed[i];
		snprintf(what, sizeof(what), "bpf command %d, %s", cmd, who);
		st = under(chain, bpf_cmd, (void *)(intptr_t)cmd);
		if (ok)
			cr_expect(WIFEXITED(st), "%s: killed", what);
		else
			expect_killed(st, what);
	}
}

/* map_fd: a one-entry array map holding 42 at key 0, for the map commands a filter allows. */
static void make_map(void)
{
	union bpf_attr a = {
		.map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 1
	};
	uint32_t key = 0;
	uint64_t value = 42;

	map_fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
	cr_assert_geq(map_fd, 0, "BPF map: %s", strerror(errno));
	a = (union bpf_attr){ .map_fd = (uint32_t)map_fd,
			      .key = (uintptr_t)&key,
			      .value = (uintptr_t)&value };
	cr_assert_eq(sys_bpf(BPF_MAP_UPDATE_ELEM, &a), 0);
}

Test(seccomp, attached_worker_keeps_map_commands_only)
{
	make_map();

	/* Loading: the first filter lets every bpf command and perf_event_open reach the kernel. */
	expect_exit(under(worker_chain, prog_load, NULL), 0, "worker loads a program");
	expect_exit(under(worker_chain, perf_open, NULL), 0, "worker opens a perf event");
	expect_exit(under(worker_chain, open_ro, NULL), 0, "worker opens BTF and sysfs files");

	/*
	 * Attached: the drain loop's map commands and BPF_PROG_RUN (the worker runs its loaded
	 * ksym_names program to name kernel frames), and nothing that loads, opens or attaches.
	 */
	expect_exit(under(attached_chain, map_lookup, NULL), 0, "lookup on a real map");
	{
		static const int allowed[] = { BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM,
					       BPF_MAP_DELETE_ELEM, BPF_MAP_GET_NEXT_KEY,
					       BPF_PROG_RUN };

		expect_bpf_commands(attached_chain, allowed, sizeof(allowed) / sizeof(allowed[0]),
				    "once attached");
	}
	expect_killed(under(attached_chain, prog_load, NULL), "BPF_PROG_LOAD once attached");
	expect_killed(under(attached_chain, map_create, NULL), "BPF_MAP_CREATE once attached");
	expect_killed(under(attached_chain, perf_open, NULL), "perf_event_open once attached");
	expect_exit(under(attached_chain, open_ro, NULL), EACCES, "openat once attached");
	close(map_fd);
}

/*
 * A worker that runs no program of its own once attached (an OFF_CPU task on raw_tp): the map
 * commands only. Its raw_tp program reads through the task pointers it is handed, so
 * BPF_PROG_RUN on made-up ones would read any kernel word: that is a kill.
 */
Test(seccomp, a_raw_tp_worker_cannot_run_its_program)
{
	static const int allowed[] = { BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM,
				       BPF_MAP_DELETE_ELEM, BPF_MAP_GET_NEXT_KEY };

	make_map();
	expect_exit(under(attached_norun_chain, map_lookup, NULL), 0, "lookup on a real map");
	expect_bpf_commands(attached_norun_chain, allowed, sizeof(allowed) / sizeof(allowed[0]),
			    "running no program, once attached");
	expect_killed(under(attached_norun_chain, prog_load, NULL), "BPF_PROG_LOAD");
	expect_killed(under(attached_norun_chain, perf_open, NULL), "perf_event_open");
	expect_exit(under(attached_norun_chain, open_ro, NULL), EACCES, "openat");
	close(map_fd);
}

/* The newest seccomp filter of a live process (root: PTRACE_SECCOMP_GET_FILTER); n: its size. */
static struct sock_filter *newest_filter(pid_t pid, long *ret_n)
{
	struct sock_filter *f = NULL;
	long n, i;
	int status;

	cr_assert_eq(ptrace(PTRACE_SEIZE, pid, 0, 0), 0, "seize %d: %s", (int)pid, strerror(errno));
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
	cr_assert_eq(waitpid(pid, &status, __WALL), pid);
	for (i = 0; ptrace(PTRACE_SECCOMP_GET_FILTER, pid, i, NULL) > 0; i++)
		;
	cr_assert_gt(i, 0, "process %d has no filter", (int)pid);
	n = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, i - 1, NULL);
	f = calloc((size_t)n, sizeof(*f));
	cr_assert_not_null(f);
	cr_assert_eq(ptrace(PTRACE_SECCOMP_GET_FILTER, pid, i - 1, f), n);
	cr_assert_eq(ptrace(PTRACE_DETACH, pid, 0, 0), 0);
	*ret_n = n;
	return f;
}

/* The filter a live OFF_CPU worker attached with hook stacked last, against prog. */
static void off_cpu_worker_filter_is(const char *hook, const struct sock_fprog *prog)
{
	char pids[16];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--type",
			 "off_cpu",
			 "--attach",
			 (char *)hook,
			 "--pid",
			 pids,
			 "--duration",
			 "4s",
			 "--output",
			 "/tmp/rover-offcpu-filter.folded",
			 NULL };
	pid_t target = start_program(bin("tests/programs/demo_burn"), NULL), rover, worker;
	struct sock_filter *f;
	long n;

	cr_assert_gt(target, 0);
	snprintf(pids, sizeof(pids), "%d", (int)target);
	rover = spawn_cmd(argv, NULL);
	worker = wait_child(rover, "rover-worker", 10000);
	cr_assert_gt(worker, 0, "no worker");
	sleep_ms(1500); /* attached, its last filter stacked */
	f = newest_filter(worker, &n);
	cr_assert_eq(n, prog->len, "%s worker: a filter of %ld instructions, not %u", hook, n,
		     prog->len);
	cr_assert_eq(memcmp(f, prog->filter, (size_t)n * sizeof(*f)), 0,
		     "%s worker: not the expected filter", hook);
	free(f);
	cr_assert_eq(wait_cmd(rover, 30000), 0);
	stop_program(target);
	unlink("/tmp/rover-offcpu-filter.folded");
}

/* Live: an OFF_CPU worker on raw_tp stacks the filter without BPF_PROG_RUN; on tp_btf, not. */
Test(seccomp, a_live_raw_tp_worker_stacks_the_filter_without_prog_run, .timeout = 90)
{
	off_cpu_worker_filter_is("raw_tp", &rover_filter_worker_attached_norun_policy);
	off_cpu_worker_filter_is("tp_btf", &rover_filter_worker_attached_policy);
}

/* BPF_LINK_CREATE naming no program: the kernel's EBADF once the filters let it through. */
static int link_create(void *arg)
{
	union bpf_attr a;

	(void)arg;
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = (uint32_t)-1;
	return result(sys_bpf(BPF_LINK_CREATE, &a));
}

static int elf_fd = -1;

/* What netcap__tls_attach reads of a handed library: its ELF header. */
static int pread_header(void *arg)
{
	char h[64];

	(void)arg;
	return pread(elf_fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) ? 0 : 204;
}

/*
 * A NETWORK worker once attached (worker_attached_net_policy): still the drain loop's map
 * commands, and BPF_LINK_CREATE and pread64 for the TLS libraries the shipper hands over
 * (uprobe_multi on one pid, tests/security/test_tls_attach.c; a stack worker preads the Python
 * interpreters it is handed, and links nothing); every other bpf command, a
 * program load or a map made among them, and perf_event_open are kills, openat is EACCES.
 */
Test(seccomp, attached_network_worker_links_uprobes_and_nothing_more)
{
	static const int allowed[] = { BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM,
				       BPF_MAP_DELETE_ELEM, BPF_MAP_GET_NEXT_KEY, BPF_LINK_CREATE };

	make_map();
	elf_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(elf_fd, 0);

	expect_exit(under(attached_net_chain, map_lookup, NULL), 0, "lookup on a real map");
	expect_exit(under(attached_net_chain, link_create, NULL), EBADF, "BPF_LINK_CREATE");
	expect_exit(under(attached_net_chain, pread_header, NULL), 0, "pread64");
	/* A stack worker once attached links nothing; it reads the Python interpreters handed over. */
	expect_killed(under(attached_chain, link_create, NULL), "BPF_LINK_CREATE, not NETWORK");
	expect_exit(under(attached_chain, pread_header, NULL), 0, "pread64, a stack worker");
	expect_bpf_commands(attached_net_chain, allowed, sizeof(allowed) / sizeof(allowed[0]),
			    "NETWORK, once attached");
	expect_killed(under(attached_net_chain, prog_load, NULL), "BPF_PROG_LOAD");
	expect_killed(under(attached_net_chain, map_create, NULL), "BPF_MAP_CREATE");
	expect_killed(under(attached_net_chain, perf_open, NULL), "perf_event_open");
	expect_exit(under(attached_net_chain, open_ro, NULL), EACCES, "openat");
	close(elf_fd);
	close(map_fd);
}

/*
 * A worker stopped and continued (SIGSTOP and SIGCONT, a cgroup freeze, a tracer) while it
 * sleeps or polls: the kernel resumes the call with restart_syscall, which must not kill it.
 */
Test(seccomp, a_stopped_role_resumes_its_sleep)
{
	const struct role_policy *const *chains[] = { worker_chain,	  attached_chain,
						      attached_net_chain, shipper_chain,
						      nospool_chain,	  supervisor_chain };
	static const char *const names[] = {
		"worker",  "attached worker",	      "attached NETWORK worker",
		"shipper", "shipper without a spool", "supervisor"
	};

	for (size_t c = 0; c < 6; c++) {
		int status;
		pid_t pid = fork();

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct timespec ts = { 0, 400 * 1000 * 1000 };

			for (size_t i = 0; chains[c][i]; i++)
				if (sandbox_apply(chains[c][i]))
					_exit(250);
			_exit(nanosleep(&ts, NULL) ? 201 : 0);
		}
		sleep_ms(100);
		cr_assert_eq(kill(pid, SIGSTOP), 0);
		sleep_ms(50);
		cr_assert_eq(kill(pid, SIGCONT), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		expect_exit(status, 0, names[c]);
	}
}

/* ---- the shipper's spool ---- */

static char *spool;

static void spool_at_its_number(void)
{
	int fd;

	spool = make_tmpdir();
	fd = open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(dup3(fd, SPOOL_DIR_FD, O_CLOEXEC), SPOOL_DIR_FD);
	close(fd);
}

/* What shipper/output/spool.c does with a batch: write it under a temporary name, rename, remove. */
static int spool_cycle(void *arg)
{
	int fd;

	(void)arg;
	fd = openat(SPOOL_DIR_FD, "1.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd < 0)
		return errno;
	if (write(fd, "batch", 5) != 5 || fsync(fd) || close(fd))
		return 204;
	if (renameat(SPOOL_DIR_FD, "1.tmp", SPOOL_DIR_FD, "1.batch"))
		return 205;
	fd = openat(SPOOL_DIR_FD, "1.batch", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 206;
	close(fd);
	if (unlinkat(SPOOL_DIR_FD, "1.batch", 0) || fsync(SPOOL_DIR_FD))
		return 207;
	return 0;
}

static int create_at_cwd(void *arg)
{
	char path[4096];

	(void)arg;
	snprintf(path, sizeof(path), "%s/escaped", spool);
	return result(openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
}

static int rename_out(void *arg)
{
	char path[4096];
	int fd = openat(SPOOL_DIR_FD, "2.batch", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	(void)arg;
	if (fd < 0)
		return 208;
	close(fd);
	snprintf(path, sizeof(path), "%s/../moved-out", spool);
	return result(renameat(SPOOL_DIR_FD, "2.batch", AT_FDCWD, path));
}

static int remove_dir(void *arg)
{
	(void)arg;
	if (mkdirat(SPOOL_DIR_FD, "d", 0700))
		return 209; /* not even mkdirat is listed: this child dies here */
	return result(unlinkat(SPOOL_DIR_FD, "d", AT_REMOVEDIR));
}

static int read_comm(void *arg)
{
	(void)arg;
	return result(openat(AT_FDCWD, "/proc/self/comm", O_RDONLY | O_CLOEXEC));
}

Test(seccomp, shipper_writes_only_in_its_spool)
{
	spool_at_its_number();
	expect_exit(under(shipper_chain, spool_cycle, NULL), 0, "spool file cycle at SPOOL_DIR_FD");
	expect_killed(under(shipper_chain, create_at_cwd, NULL), "O_WRONLY|O_CREAT at AT_FDCWD");
	expect_killed(under(shipper_chain, rename_out, NULL), "renameat out of the spool");
	expect_killed(under(shipper_chain, remove_dir, NULL), "mkdirat/unlinkat(AT_REMOVEDIR)");
	expect_exit(under(shipper_chain, read_comm, NULL), 0, "read-only opens anywhere");
	/* No spool directory: no writing open at all, not even at SPOOL_DIR_FD. */
	expect_killed(under(nospool_chain, spool_cycle, NULL), "no spool: write at SPOOL_DIR_FD");
	expect_exit(under(nospool_chain, read_comm, NULL), 0, "no spool: read-only opens");
	close(SPOOL_DIR_FD);
	rm_rf(spool);
	free(spool);
}
