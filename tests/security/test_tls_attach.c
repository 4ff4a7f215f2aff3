// SPDX-License-Identifier: Apache-2.0
/*
 * A compromised shipper tries to use the worker's privileges (policy/README.md, "Threat
 * model"). In a NETWORK task the shipper, which holds nothing, parses the targets' files and
 * names the TLS libraries they map (MSG_NET_TLS_ATTACH, with the file's descriptor); the
 * worker, which holds CAP_BPF and CAP_PERFMON and parses nothing, checks the message and links
 * uprobes limited to the one pid (worker/netcap.c netcap__tls_attach).
 *
 * Here the test is the shipper. The worker's code runs in tests/security/tls_attach_worker, as
 * rover-worker runs it: the roles' user, CAP_BPF and CAP_PERFMON only, Landlock, worker_policy
 * then worker_attached_net_policy. Each hostile message must be refused with its errno and
 * leave no uprobe_multi link on any pid, as the kernel lists its links (BPF_LINK_GET_NEXT_ID,
 * BPF_OBJ_GET_INFO_BY_FD). One valid message is attached: to its pid only (the breakpoint is
 * in the target's copy of libssl and in no other process's), and its probes fire. Last, a live
 * rover-worker's own filters, taken from it with PTRACE_SECCOMP_GET_FILTER, refuse
 * perf_event_open, opens and every bpf command but the map ones and BPF_LINK_CREATE.
 *
 * The target is a Python TLS server (tests/programs/tls_py.py) with libssl.so.3 mapped; the
 * bystander another Python that imported ssl and is in no task.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "common/netrec.h"
#include "common/tlssite.h"
#include "tests/integration/harness.h"
#include "tests/elf_header.h"

#define TASK_ID 4242
/* worker/netcap.c TLS_MAX_LINKS: uprobe links a task may hold. */
#define WORKER_MAX_LINKS 512
/* enum bpf_link_type (Linux 6.6), and its flag for return probes. */
#define LINK_TYPE_UPROBE_MULTI 12
#define UPROBE_MULTI_RETURN 1u

static struct tls_cert cert;
static struct tls_proc srv; /* the target */
static pid_t bystander = -1, extra[2] = { -1, -1 }, task = -1;
static char libssl[4096]; /* the file the target maps */
static struct {
	pid_t pid;
	int fd; /* the shipper's end */
} wk = { -1, -1 };
static uint32_t seq;

/* ---- the kernel's list of uprobe_multi links ---- */

/* struct bpf_link_info as far as uprobe_multi goes (Linux 6.6; not in this host's uapi). */
struct um_info {
	uint32_t type, id, prog_id, pad;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t path_size, count, flags, pid;
};

struct um_link {
	uint32_t id, count, flags;
	int32_t pid;
	char path[4096];
	uint64_t offsets[MSG_TLS_MAX_PROBES], cookies[MSG_TLS_MAX_PROBES];
};

static int link_info(int fd, struct um_info *info)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof(*info);
	a.info.info = (uintptr_t)info;
	return (int)syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a));
}

/* The uprobe_multi links limited to pid (0: to no pid, every process), up to max into ret. */
static size_t links_on(pid_t pid, struct um_link *ret, size_t max)
{
	union bpf_attr a;
	uint32_t id = 0;
	size_t n = 0;

	for (;;) {
		struct um_info info;
		struct um_link l;
		int fd;

		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (syscall(SYS_bpf, BPF_LINK_GET_NEXT_ID, &a, sizeof(a)))
			break;
		id = a.next_id;
		memset(&a, 0, sizeof(a));
		a.link_id = id;
		fd = (int)syscall(SYS_bpf, BPF_LINK_GET_FD_BY_ID, &a, sizeof(a));
		if (fd < 0)
			continue; /* gone meanwhile */
		/* The type first: another type's union would take the pointers for its own. */
		memset(&info, 0, sizeof(info));
		if (link_info(fd, &info) || info.type != LINK_TYPE_UPROBE_MULTI) {
			close(fd);
			continue;
		}
		memset(&l, 0, sizeof(l));
		info.path = (uintptr_t)l.path;
		info.path_size = sizeof(l.path);
		info.offsets = (uintptr_t)l.offsets;
		info.cookies = (uintptr_t)l.cookies;
		info.count = MSG_TLS_MAX_PROBES;
		cr_assert_eq(link_info(fd, &info), 0, "link %u: %s", id, strerror(errno));
		close(fd);
		if ((pid_t)info.pid != pid)
			continue;
		l.id = id;
		l.count = info.count;
		l.flags = info.flags;
		l.pid = (int32_t)info.pid;
		if (n < max)
			ret[n] = l;
		n++;
	}
	return n;
}

/* ---- ELF: what the shipper computes, computed here ---- */

struct elf {
	uint8_t *b;
	size_t len;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
};

static void elf_read(const char *path, struct elf *ret)
{
	ret->b = (uint8_t *)slurp(path, &ret->len);
	cr_assert_not_null(ret->b, "reading %s", path);
	cr_assert_geq(ret->len, sizeof(Elf64_Ehdr));
	ret->eh = (const Elf64_Ehdr *)ret->b;
	cr_assert(!memcmp(ret->eh->e_ident, ELFMAG, SELFMAG) &&
			  ret->eh->e_ident[EI_CLASS] == ELFCLASS64,
		  "%s is no ELF64 file", path);
	cr_assert_leq(ret->eh->e_phoff + ret->eh->e_phnum * sizeof(Elf64_Phdr), ret->len);
	ret->ph = (const Elf64_Phdr *)(ret->b + ret->eh->e_phoff);
}

static int elf_in_exec(const struct elf *e, uint64_t off)
{
	for (size_t i = 0; i < e->eh->e_phnum; i++)
		if (e->ph[i].p_type == PT_LOAD && (e->ph[i].p_flags & PF_X) &&
		    off >= e->ph[i].p_offset && off - e->ph[i].p_offset < e->ph[i].p_filesz)
			return 1;
	return 0;
}

static int elf_has_section(const struct elf *e, uint32_t type)
{
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->b + e->eh->e_shoff);

	cr_assert_leq(e->eh->e_shoff + e->eh->e_shnum * sizeof(Elf64_Shdr), e->len);
	for (size_t s = 0; s < e->eh->e_shnum; s++)
		if (sh[s].sh_type == type)
			return 1;
	return 0;
}

/* The file offset of symbol name (dynamic or static), its size in *ret_size. */
static uint64_t elf_sym(const struct elf *e, const char *name, uint64_t *ret_size)
{
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->b + e->eh->e_shoff);

	cr_assert_leq(e->eh->e_shoff + e->eh->e_shnum * sizeof(Elf64_Shdr), e->len);
	for (size_t s = 0; s < e->eh->e_shnum; s++) {
		const Elf64_Shdr *str = &sh[sh[s].sh_link];

		if (sh[s].sh_type != SHT_DYNSYM && sh[s].sh_type != SHT_SYMTAB)
			continue;
		for (size_t k = 0; k < sh[s].sh_size / sizeof(Elf64_Sym); k++) {
			const Elf64_Sym *y = (const Elf64_Sym *)(e->b + sh[s].sh_offset) + k;

			if (!y->st_value || y->st_shndx == SHN_UNDEF ||
			    strcmp((const char *)e->b + str->sh_offset + y->st_name, name))
				continue;
			for (size_t i = 0; i < e->eh->e_phnum; i++) {
				const Elf64_Phdr *p = &e->ph[i];

				if (p->p_type == PT_LOAD && y->st_value >= p->p_vaddr &&
				    y->st_value - p->p_vaddr < p->p_filesz) {
					if (ret_size)
						*ret_size = y->st_size;
					return y->st_value - p->p_vaddr + p->p_offset;
				}
			}
		}
	}
	cr_assert_fail("no symbol %s", name);
	return 0;
}

/* ---- the worker, and the test as its shipper ---- */

/* tls_attach_worker on task TASK_ID with targets pids; returns once its capture is loaded. */
static void wk_start(const pid_t *pids, size_t n)
{
	static const struct ipc_rule rules[] = {
		{ MSG_TASK_STARTED, sizeof(struct msg_task_started),
		  sizeof(struct msg_task_started), 0, 0 },
	};
	char ids[ROVER_MAX_PIDS][16], tid[32];
	char *argv[4 + ROVER_MAX_PIDS] = { (char *)bin("tests/security/tls_attach_worker"),
					   (char *)role_user(), tid };
	struct timeval tv = { .tv_sec = 30 };
	struct ipc_msg msg = { .fd = -1 };
	int sv[2];

	snprintf(tid, sizeof(tid), "%d", TASK_ID);
	for (size_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%d", (int)pids[i]);
		argv[3 + i] = ids[i];
	}
	cr_assert_eq(ipc_pair(sv), 0);
	wk.pid = fork();
	cr_assert_geq(wk.pid, 0);
	if (wk.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(sv[1], 3) != 3 || fcntl(3, F_SETFD, 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(sv[1]);
	wk.fd = sv[0];
	cr_assert_eq(setsockopt(wk.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	cr_assert_eq(ipc_recv_expect(wk.fd, rules, 1, MSG_TASK_STARTED, &msg), 0,
		     "tls_attach_worker did not start (as %s)", role_user());
	ipc_msg_release(&msg);
}

/* Sends m with descriptor fd (the shipper's attack); the worker's answer. */
static int attack(const struct msg_tls_attach *m, int fd, struct msg_tls_result *ret)
{
	static const struct ipc_rule rules[] = {
		{ MSG_NET_TLS_RESULT, sizeof(struct msg_tls_result), sizeof(struct msg_tls_result),
		  0, 0 },
	};
	struct ipc_msg msg = { .fd = -1 };

	cr_assert_eq(ipc_send(wk.fd, MSG_NET_TLS_ATTACH, m, sizeof(*m), fd), 0);
	cr_assert_eq(ipc_recv_expect(wk.fd, rules, 1, MSG_NET_TLS_RESULT, &msg), 0,
		     "the worker did not answer (killed by its filter?)");
	memcpy(ret, msg.buf, sizeof(*ret));
	ipc_msg_release(&msg);
	cr_assert_eq(ret->seq, m->seq);
	return ret->err;
}

/*
 * Stops the worker: it detaches, flushes and exits; the TLS calls its program counted (the
 * NET_STAT_TLS_CALLS of its MSG_SHIP_NET_CONNS).
 */
static uint64_t wk_stop(void)
{
	static const struct ipc_rule rules[] = {
		{ MSG_SHIP_NET_DATA, sizeof(struct ship_net_hdr), IPC_MAX_PAYLOAD, 0, 0 },
		{ MSG_SHIP_NET_CONNS, sizeof(struct ship_net_hdr), IPC_MAX_PAYLOAD,
		  sizeof(struct net_conn), 0 },
	};
	struct ipc_msg msg = { .fd = -1 };
	uint64_t calls = 0;

	_Static_assert(NET_STAT_TLS_CALLS < 16, "in ship_net_hdr.stats");
	if (wk.pid <= 0)
		return 0;
	if (ipc_send(wk.fd, MSG_TASK_STOP, NULL, 0, -1) == 0)
		while (ipc_recv(wk.fd, rules, 2, &msg) == 0) {
			const struct ship_net_hdr *h = msg.buf;

			if (msg.type == MSG_SHIP_NET_CONNS)
				calls += h->stats[NET_STAT_TLS_CALLS];
		}
	ipc_msg_release(&msg);
	close(wk.fd);
	wait_cmd(wk.pid, 5000); /* then SIGKILL */
	wk.pid = -1;
	wk.fd = -1;
	return calls;
}

static struct msg_tls_attach msg_of(pid_t pid, uint32_t lib)
{
	struct msg_tls_attach m = { .task_id = TASK_ID, .pid = pid, .lib = lib, .seq = ++seq };

	snprintf(m.path, sizeof(m.path), "%.*s", (int)sizeof(m.path) - 1, libssl);
	return m;
}

static void add(struct msg_tls_attach *m, uint64_t off, uint32_t fn, uint32_t lib, uint32_t ret)
{
	m->probes[m->nprobes++] =
		(struct msg_tls_probe){ off, (uint32_t)NET_TLS_COOKIE(fn, lib), ret };
}

/* SSL_read_ex and SSL_write_ex of libssl, entries and returns: what the shipper sends. */
static struct msg_tls_attach valid_msg(pid_t pid)
{
	struct msg_tls_attach m = msg_of(pid, NET_TLS_OPENSSL);
	struct elf e;

	elf_read(libssl, &e);
	add(&m, elf_sym(&e, "SSL_read_ex", NULL), NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	add(&m, elf_sym(&e, "SSL_read_ex", NULL), NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 1);
	add(&m, elf_sym(&e, "SSL_write_ex", NULL), NET_TLS_FN_WRITE_EX, NET_TLS_OPENSSL, 0);
	add(&m, elf_sym(&e, "SSL_write_ex", NULL), NET_TLS_FN_WRITE_EX, NET_TLS_OPENSSL, 1);
	free(e.b);
	return m;
}

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	return fd;
}

/* m, with descriptor fd, is refused with -want, and no link is left on any pid it named. */
static void expect_refused(const struct msg_tls_attach *m, int fd, int want, const char *what)
{
	struct msg_tls_result r;
	int err = attack(m, fd, &r);

	cr_expect_eq(err, -want, "%s: expected -%s, got %d (%s)", what, strerrorname_np(want), err,
		     strerror(-err));
	cr_expect_eq(r.attached, 0, "%s: %u probes attached", what, r.attached);
	cr_expect_eq(links_on(m->pid > 0 ? m->pid : 0, NULL, 0), 0, "%s: a link on pid %d", what,
		     m->pid);
	cr_expect_eq(links_on(srv.pid, NULL, 0), 0, "%s: a link on the target", what);
	cr_expect_eq(links_on(bystander, NULL, 0), 0, "%s: a link on the bystander", what);
}

/* The address in pid of file offset off of libssl (its maps), 0 if it maps none there. */
static uint64_t libssl_addr(pid_t pid, uint64_t off)
{
	char path[64], line[4096], file[4096];
	uint64_t addr = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (!addr && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, moff;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &moff,
			   file) == 5 &&
		    !strcmp(file, libssl) && perms[2] == 'x' && off >= moff && off - moff < hi - lo)
			addr = lo + off - moff;
	}
	fclose(f);
	return addr;
}

/* The byte at file offset off of libssl as process pid sees it (its memory). */
static int libssl_byte(pid_t pid, uint64_t off)
{
	char path[64];
	uint64_t addr = libssl_addr(pid, off);
	uint8_t b;
	int fd;

	cr_assert_neq(addr, 0, "pid %d maps no code of %s at %#llx", (int)pid, libssl,
		      (unsigned long long)off);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open_ro(path);
	cr_assert_eq(pread(fd, &b, 1, (off_t)addr), 1);
	close(fd);
	return b;
}

/* A Python with ssl imported (libssl mapped), in no task; its pid once it said "ready". */
static pid_t python_with_ssl(void)
{
	const char *script = tmp_path("bystander.py");
	pid_t pid;

	cr_assert_eq(write_file(script, "import ssl, time\nprint('ready', flush=True)\n"
					"time.sleep(600)\n"),
		     0);
	pid = start_program("/usr/bin/python3", script);
	cr_assert_gt(pid, 0);
	return pid;
}

static void setup(void)
{
	char path[64], line[4096];
	FILE *f;
	int port;

	tmp_setup();
	memset(&srv, 0, sizeof(srv));
	bystander = extra[0] = extra[1] = task = -1;
	libssl[0] = '\0';
	if (tls_cert_make(tmp, &cert))
		abort();
	port = free_port(18500, 18519);
	if (port < 0 || tls_server_start(TLS_PEER_PY, port, &cert, &srv))
		abort();
	bystander = python_with_ssl();
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)srv.pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libssl.so.3\n")) {
			snprintf(libssl, sizeof(libssl), "%s", p);
			libssl[strcspn(libssl, "\n")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
}

static void teardown(void)
{
	wk_stop();
	if (task > 0)
		wait_cmd(task, 1);
	for (size_t i = 0; i < 2; i++)
		stop_program(extra[i]);
	stop_program(bystander);
	if (srv.pid > 0)
		tls_server_stop(&srv, NULL);
	tmp_teardown();
}

TestSuite(tls_attach, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the attacks ---- */

/* Only the task's own targets: not another process, not pid 0 (every process), not another task. */
Test(tls_attach, a_pid_or_task_not_the_worker_s_is_refused)
{
	struct msg_tls_attach m;
	int fd = open_ro(libssl);

	cr_assert_str_neq(libssl, "", "the target maps no libssl.so.3");
	wk_start(&srv.pid, 1);
	m = valid_msg(bystander);
	expect_refused(&m, fd, EPERM, "a process in no task");
	m = valid_msg(0);
	expect_refused(&m, fd, EPERM, "pid 0 (no pid filter: every process)");
	m = valid_msg(-1);
	expect_refused(&m, fd, EPERM, "pid -1");
	m = valid_msg(getpid());
	expect_refused(&m, fd, EPERM, "the test itself (root)");
	m = valid_msg(srv.pid);
	m.task_id = TASK_ID + 1;
	expect_refused(&m, fd, EPERM, "another task's id");
	close(fd);
}

/* At least one probe and at most MSG_TLS_MAX_PROBES; a library kind the program knows. */
Test(tls_attach, counts_and_library_kinds_out_of_range_are_refused)
{
	struct msg_tls_attach m;
	int fd = open_ro(libssl);

	wk_start(&srv.pid, 1);
	m = valid_msg(srv.pid);
	m.nprobes = 0;
	expect_refused(&m, fd, EINVAL, "no probe");
	m.nprobes = MSG_TLS_MAX_PROBES + 1;
	expect_refused(&m, fd, EINVAL, "65 probes");
	m.nprobes = UINT32_MAX;
	expect_refused(&m, fd, EINVAL, "2^32-1 probes");
	m = valid_msg(srv.pid);
	m.lib = NET_TLS_NONE;
	expect_refused(&m, fd, EINVAL, "library NONE");
	m.lib = NET_TLS_MAX;
	expect_refused(&m, fd, EINVAL, "library NET_TLS_MAX");
	m.lib = UINT32_MAX;
	expect_refused(&m, fd, EINVAL, "library 2^32-1");
	close(fd);
}

/* A probe's cookie names the message's library, a function of that library, and no more. */
Test(tls_attach, cookies_inconsistent_with_the_library_are_refused)
{
	struct msg_tls_attach m;
	uint64_t off;
	struct elf e;
	int fd = open_ro(libssl);

	elf_read(libssl, &e);
	off = elf_sym(&e, "SSL_read_ex", NULL);
	free(e.b);
	wk_start(&srv.pid, 1);

	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, off, NET_TLS_FN_GO_READ, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, EINVAL, "a Go function on an OpenSSL library");
	m = msg_of(srv.pid, NET_TLS_GO);
	add(&m, off, NET_TLS_FN_READ_EX, NET_TLS_GO, 0);
	expect_refused(&m, fd, EINVAL, "an OpenSSL function on a Go library");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, off, NET_TLS_FN_READ_EX, NET_TLS_BORINGSSL, 0);
	expect_refused(&m, fd, EINVAL, "a cookie of another library");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, off, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	m.probes[0].cookie |= 1u << 16;
	expect_refused(&m, fd, EINVAL, "bits above the library's");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, off, 0, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, EINVAL, "function 0");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, off, NET_TLS_FN_MAX, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, EINVAL, "function NET_TLS_FN_MAX");
	/* One bad probe among good ones: the whole message is refused. */
	m = valid_msg(srv.pid);
	add(&m, off, NET_TLS_FN_GO_WRITE, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, EINVAL, "a bad probe after four good ones");
	close(fd);
}

/*
 * Go: no return probes (a uretprobe rewrites the return address on a stack Go moves), and its
 * RET probes only on a RET byte (0xc3). build/tests/programs/gotls, crypto/tls.(*Conn).Read.
 */
Test(tls_attach, a_go_return_probe_or_a_go_ret_off_a_ret_byte_is_refused)
{
	const char *go = bin("tests/programs/gotls");
	struct msg_tls_attach m;
	struct msg_tls_result r;
	struct um_link l;
	uint64_t off, size, ret_at = 0;
	struct elf e;
	int fd = open_ro(go);

	elf_read(go, &e);
	off = elf_sym(&e, "crypto/tls.(*Conn).Read", &size);
	cr_assert_neq(e.b[off], 0xc3);
	for (uint64_t i = 1; i < size && !ret_at; i++)
		ret_at = e.b[off + i] == 0xc3 ? off + i : 0;
	cr_assert_neq(ret_at, 0, "no 0xc3 byte in crypto/tls.(*Conn).Read");
	free(e.b);
	wk_start(&srv.pid, 1);

	m = msg_of(srv.pid, NET_TLS_GO);
	add(&m, off, NET_TLS_FN_GO_READ, NET_TLS_GO, 1);
	expect_refused(&m, fd, EINVAL, "a Go entry flagged as a return probe");
	m = msg_of(srv.pid, NET_TLS_GO);
	add(&m, off, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
	add(&m, off, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
	expect_refused(&m, fd, EILSEQ, "a Go RET probe at the function's entry");
	m = msg_of(srv.pid, NET_TLS_GO);
	add(&m, off, NET_TLS_FN_GO_HS_RET, NET_TLS_GO, 0);
	expect_refused(&m, fd, EILSEQ, "a Go handshake RET probe at the function's entry");

	/* The control: the same probes with the RET on a 0xc3 byte are taken (the target does
	 * not map gotls: the link is made, no breakpoint is). */
	m = msg_of(srv.pid, NET_TLS_GO);
	add(&m, off, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
	add(&m, ret_at, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
	cr_expect_eq(attack(&m, fd, &r), 0, "a RET probe on 0xc3: %s", strerror(-r.err));
	cr_expect_eq(r.attached, 2);
	cr_assert_eq(links_on(srv.pid, &l, 1), 1);
	cr_expect_eq(l.count, 2);
	cr_expect_eq(l.flags, 0);
	close(fd);
}

/* The file of pid's first executable mapping whose path ends in suffix, into ret. */
static void mapped_file(pid_t pid, const char *suffix, char ret[4096])
{
	char path[64], line[4096];
	FILE *f;

	ret[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (!ret[0] && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t n;

		if (!p || !strstr(line, " r-xp "))
			continue;
		n = strcspn(p, "\n");
		p[n] = '\0';
		if (n >= strlen(suffix) && !strcmp(p + n - strlen(suffix), suffix))
			snprintf(ret, 4096, "%s", p);
	}
	fclose(f);
	cr_assert_neq(ret[0], '\0', "process %d maps no %s", (int)pid, suffix);
}

/* An SSL_read pair (entry and return) at off of a library kind lib. */
static struct msg_tls_attach ssl_read_pair(pid_t pid, uint32_t lib, uint64_t off)
{
	struct msg_tls_attach m = msg_of(pid, lib);

	add(&m, off, NET_TLS_FN_READ, lib, 0);
	add(&m, off, NET_TLS_FN_READ, lib, 1);
	return m;
}

/*
 * A fake SSL_read: the capture program takes any (x, ptr, n) function for one, and reads up to
 * capture_bytes from ptr when it returns (policy/README.md, "A compromised shipper, through a
 * NETWORK worker"). So a probe must be at the very function its cookie names, as the file's
 * dynamic symbol table names it: not at another function of libssl (SSL_get_finished copies
 * the handshake's Finished MAC into its buffer; SSL_write is an SSL call, but not SSL_read),
 * not inside SSL_read, not at libc's read() (every read of the target), not as a library that
 * is not one (Go's calls on libssl). And an entry comes with its return: a return pairs with
 * the thread's last entry and reads as many bytes as it returned, from that entry's buffer.
 */
Test(tls_attach, a_fake_ssl_pair_at_a_non_ssl_offset_is_refused)
{
	struct msg_tls_attach m;
	struct msg_tls_result r;
	struct um_link l;
	char libc[4096];
	uint64_t rd, wr, fin, read_at;
	struct elf e;
	int fd = open_ro(libssl), cfd;

	cr_assert_str_neq(libssl, "", "the target maps no libssl.so.3");
	elf_read(libssl, &e);
	rd = elf_sym(&e, "SSL_read", NULL);
	wr = elf_sym(&e, "SSL_write", NULL);
	fin = elf_sym(&e, "SSL_get_finished", NULL);
	cr_assert(elf_in_exec(&e, fin) && elf_in_exec(&e, rd + 4));
	free(e.b);
	mapped_file(srv.pid, "/libc.so.6", libc);
	elf_read(libc, &e);
	read_at = elf_sym(&e, "read", NULL);
	cr_assert(elf_in_exec(&e, read_at));
	free(e.b);
	cfd = open_ro(libc);
	wk_start(&srv.pid, 1);

	m = ssl_read_pair(srv.pid, NET_TLS_OPENSSL, fin);
	expect_refused(&m, fd, EFAULT, "SSL_read at libssl's SSL_get_finished");
	m = ssl_read_pair(srv.pid, NET_TLS_OPENSSL, wr);
	expect_refused(&m, fd, EFAULT, "SSL_read at SSL_write");
	m = ssl_read_pair(srv.pid, NET_TLS_OPENSSL, rd + 4);
	expect_refused(&m, fd, EFAULT, "SSL_read 4 bytes inside SSL_read");
	m = ssl_read_pair(srv.pid, NET_TLS_BORINGSSL, read_at);
	expect_refused(&m, cfd, EFAULT, "SSL_read at libc's read()");
	m = ssl_read_pair(srv.pid, NET_TLS_NODE, read_at);
	expect_refused(&m, cfd, EFAULT, "node's SSL_read at libc's read()");
	/* Among good probes, last: all or nothing. */
	m = valid_msg(srv.pid);
	add(&m, fin, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	add(&m, fin, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 1);
	expect_refused(&m, fd, EFAULT, "SSL_read_ex at SSL_get_finished after four good probes");
	m = msg_of(srv.pid, NET_TLS_GO);
	add(&m, rd, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
	expect_refused(&m, fd, EFAULT, "Go's Read at SSL_read (libssl has no Go table)");

	/* Twins: an entry without its return, a return without its entry, a return of another. */
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, rd, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, EINVAL, "SSL_read's entry alone");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, wr, NET_TLS_FN_WRITE, NET_TLS_OPENSSL, 1);
	expect_refused(&m, fd, EINVAL, "SSL_write's return alone");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, rd, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	add(&m, wr, NET_TLS_FN_WRITE, NET_TLS_OPENSSL, 1);
	expect_refused(&m, fd, EINVAL, "SSL_read's entry with SSL_write's return");

	/* The control: the true SSL_read pair is taken. */
	m = ssl_read_pair(srv.pid, NET_TLS_OPENSSL, rd);
	cr_expect_eq(attack(&m, fd, &r), 0, "SSL_read itself: %s", strerror(-r.err));
	cr_expect_eq(r.attached, 2);
	cr_expect_eq(links_on(srv.pid, &l, 1), 2);
	cr_expect_eq(l.offsets[0], rd);
	close(cfd);
	close(fd);
}

/*
 * Call sites (common/tlssite.h): a probe off SSL_read's entry is taken only on the call the
 * worker finds itself in SSL_read's bytes, with its twin on the jump after it, never for a
 * function the shipper names otherwise: a hostile shipper cannot move the probes to an
 * instruction of its choice (say, inside one, where a breakpoint corrupts the target's code),
 * nor read a result off a jump that does not follow its call.
 */
Test(tls_attach, call_site_probes_only_where_the_worker_finds_them)
{
	uint32_t site = NET_TLS_AT_SITE, after = NET_TLS_AT_AFTER;
	struct msg_tls_attach m;
	struct msg_tls_result r;
	struct tls_site ts;
	uint8_t code[TLS_SITE_SCAN];
	uint64_t rd, wr;
	struct elf e;
	int fd = open_ro(libssl);

	elf_read(libssl, &e);
	rd = elf_sym(&e, "SSL_read", NULL);
	wr = elf_sym(&e, "SSL_write", NULL);
	free(e.b);
	cr_assert_eq(pread(fd, code, sizeof(code), (off_t)rd), (ssize_t)sizeof(code));
	cr_assert_eq(tls_site_find(code, sizeof(code), &ts), 0,
		     "no call site in %s's SSL_read: the test needs Debian's OpenSSL 3.0", libssl);
	wk_start(&srv.pid, 1);

#define SITE_PAIR(fn, call, jump)                        \
	do {                                             \
		m = msg_of(srv.pid, NET_TLS_OPENSSL);    \
		add(&m, call, fn, NET_TLS_OPENSSL, 0);   \
		m.probes[m.nprobes - 1].cookie |= site;  \
		add(&m, jump, fn, NET_TLS_OPENSSL, 0);   \
		m.probes[m.nprobes - 1].cookie |= after; \
	} while (0)
	SITE_PAIR(NET_TLS_FN_READ, rd + ts.call_off + 1, rd + ts.after_off);
	expect_refused(&m, fd, EFAULT, "a call site one byte inside the call");
	SITE_PAIR(NET_TLS_FN_READ, rd + ts.call_off, rd + ts.after_off - 2);
	expect_refused(&m, fd, EINVAL, "the jump probe on the test before it (its call's twin)");
	SITE_PAIR(NET_TLS_FN_WRITE, rd + ts.call_off, rd + ts.after_off);
	expect_refused(&m, fd, EFAULT, "SSL_read's call site named SSL_write's");
	SITE_PAIR(NET_TLS_FN_READ_EX, rd + ts.call_off, rd + ts.after_off);
	expect_refused(&m, fd, EINVAL, "a call site of SSL_read_ex (no wrapper: none taken)");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, rd + ts.call_off, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	m.probes[0].cookie |= site;
	expect_refused(&m, fd, EINVAL, "a call site without the jump after it");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, rd + ts.call_off, NET_TLS_FN_READ, NET_TLS_OPENSSL, 1);
	m.probes[0].cookie |= site;
	add(&m, rd + ts.after_off, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	m.probes[1].cookie |= after;
	expect_refused(&m, fd, EINVAL, "a call site as a return probe");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, rd + ts.call_off, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	m.probes[0].cookie |= 3u << 16;
	expect_refused(&m, fd, EINVAL, "a placement past NET_TLS_AT_AFTER");
#undef SITE_PAIR

	/* The control: the true pairs of SSL_read and SSL_write are taken, 4 probes, 2 links. */
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, rd + ts.call_off, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	m.probes[0].cookie |= site;
	add(&m, rd + ts.after_off, NET_TLS_FN_READ, NET_TLS_OPENSSL, 0);
	m.probes[1].cookie |= after;
	cr_assert_eq(pread(fd, code, sizeof(code), (off_t)wr), (ssize_t)sizeof(code));
	cr_assert_eq(tls_site_find(code, sizeof(code), &ts), 0);
	add(&m, wr + ts.call_off, NET_TLS_FN_WRITE, NET_TLS_OPENSSL, 0);
	m.probes[2].cookie |= site;
	add(&m, wr + ts.after_off, NET_TLS_FN_WRITE, NET_TLS_OPENSSL, 0);
	m.probes[3].cookie |= after;
	cr_expect_eq(attack(&m, fd, &r), 0, "the true call sites: %s", strerror(-r.err));
	cr_expect_eq(r.attached, 4);
	cr_expect_eq(links_on(srv.pid, NULL, 0), 2);
	close(fd);
}

/*
 * The same for Go, on gotls (its .symtab says where each function is) and on gotls_stripped
 * (none: the worker reads the runtime's function table, which names them all the same): a
 * Read entry only at crypto/tls.(*Conn).Read (not at Write, not at net.(*conn).Read, whose
 * arguments have the same registers), a RET only inside a function whose entry is probed as
 * the one its cookie says (a Write's RET after a Read's entry reads past the Read's buffer).
 */
Test(tls_attach, go_probes_at_other_functions_are_refused)
{
	const char *const files[] = { bin("tests/programs/gotls"),
				      bin("tests/programs/gotls_stripped") };
	uint64_t rd, rd_size, wr, wr_size, conn, conn_size, rd_ret = 0, wr_ret = 0, conn_ret = 0;
	struct msg_tls_attach m;
	struct msg_tls_result r;
	struct elf e, s;

	elf_read(files[0], &e);
	rd = elf_sym(&e, "crypto/tls.(*Conn).Read", &rd_size);
	wr = elf_sym(&e, "crypto/tls.(*Conn).Write", &wr_size);
	conn = elf_sym(&e, "net.(*conn).Read", &conn_size);
	for (uint64_t i = 1; i < rd_size && !rd_ret; i++)
		rd_ret = e.b[rd + i] == 0xc3 ? rd + i : 0;
	for (uint64_t i = 1; i < wr_size && !wr_ret; i++)
		wr_ret = e.b[wr + i] == 0xc3 ? wr + i : 0;
	for (uint64_t i = 1; i < conn_size && !conn_ret; i++)
		conn_ret = e.b[conn + i] == 0xc3 ? conn + i : 0;
	cr_assert(rd_ret && wr_ret && conn_ret, "a function without a 0xc3 byte");
	/*
	 * -s -w drops symbols and DWARF, which come after the code: the functions are where they
	 * were (only their references to data moved). The control below proves it: the worker
	 * takes its Read and Write on gotls_stripped by the file's own table.
	 */
	elf_read(files[1], &s);
	cr_assert(!elf_has_section(&s, SHT_SYMTAB), "gotls_stripped has a .symtab");
	cr_assert_lt(conn_ret, s.len);
	cr_assert(s.b[rd_ret] == 0xc3 && s.b[wr_ret] == 0xc3 && s.b[conn_ret] == 0xc3,
		  "gotls_stripped's code is not laid out as gotls's");
	free(s.b);
	free(e.b);
	wk_start(&srv.pid, 1);
	for (size_t f = 0; f < 2; f++) {
		int fd = open_ro(files[f]);

		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, conn, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
		add(&m, conn_ret, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
		expect_refused(&m, fd, EFAULT, "Read and its RET at net.(*conn).Read");
		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, wr, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
		expect_refused(&m, fd, EFAULT, "Read's entry at Write");
		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, rd, NET_TLS_FN_GO_HANDSHAKE, NET_TLS_GO, 0);
		expect_refused(&m, fd, EFAULT, "the handshake's entry at Read");
		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, rd, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
		add(&m, conn_ret, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
		expect_refused(&m, fd, EFAULT, "a RET of net.(*conn).Read after Read's entry");
		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, rd, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
		add(&m, wr_ret, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
		expect_refused(&m, fd, EFAULT, "a RET of Write without Write's entry");
		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, rd, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
		add(&m, rd_ret, NET_TLS_FN_GO_HS_RET, NET_TLS_GO, 0);
		expect_refused(&m, fd, EFAULT, "a handshake's RET in Read");
		m = ssl_read_pair(srv.pid, NET_TLS_OPENSSL, rd);
		expect_refused(&m, fd, EFAULT,
			       "SSL_read at Read (a Go binary exports no SSL_read)");
		close(fd);
	}
	/* The control: Read and Write, each with a RET (the target does not map gotls). */
	for (size_t f = 0; f < 2; f++) {
		int fd = open_ro(files[f]);

		m = msg_of(srv.pid, NET_TLS_GO);
		add(&m, rd, NET_TLS_FN_GO_READ, NET_TLS_GO, 0);
		add(&m, rd_ret, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
		add(&m, wr, NET_TLS_FN_GO_WRITE, NET_TLS_GO, 0);
		add(&m, wr_ret, NET_TLS_FN_GO_RET, NET_TLS_GO, 0);
		cr_expect_eq(attack(&m, fd, &r), 0, "%s: Read and Write: %s", files[f],
			     strerror(-r.err));
		cr_expect_eq(r.attached, 4);
		close(fd);
	}
	cr_expect_eq(links_on(srv.pid, NULL, 0), 2);
}

/*
 * Breakpoints in code only: an offset in libssl's read-only data, its writable data, its ELF
 * header, past its end, or in a segment a crafted file claims past its own end.
 */
Test(tls_attach, offsets_outside_executable_segments_are_refused)
{
	const char *crafted = tmp_path("claims.so");
	struct msg_tls_attach m;
	struct stat st;
	struct elf e;
	size_t nonexec = 0;
	int fd = open_ro(libssl), cfd;

	cr_assert_eq(fstat(fd, &st), 0);
	elf_read(libssl, &e);
	wk_start(&srv.pid, 1);
	for (size_t i = 0; i < e.eh->e_phnum; i++) {
		const Elf64_Phdr *p = &e.ph[i];
		uint64_t off = p->p_offset + p->p_filesz / 2;
		char what[128];

		if (p->p_type != PT_LOAD || (p->p_flags & PF_X) || elf_in_exec(&e, off))
			continue;
		snprintf(what, sizeof(what), "an offset in a %s%s segment (%#llx)",
			 p->p_flags & PF_R ? "R" : "", p->p_flags & PF_W ? "W" : "",
			 (unsigned long long)off);
		m = msg_of(srv.pid, NET_TLS_OPENSSL);
		add(&m, off, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
		expect_refused(&m, fd, ERANGE, what);
		/* Among good probes, last: all or nothing. */
		m = valid_msg(srv.pid);
		add(&m, off, NET_TLS_FN_WRITE_EX, NET_TLS_OPENSSL, 1);
		expect_refused(&m, fd, ERANGE, what);
		nonexec++;
	}
	cr_assert_geq(nonexec, 2, "libssl.so.3 has no read-only and writable segments?");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, 0, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	cr_assert(!elf_in_exec(&e, 0));
	expect_refused(&m, fd, ERANGE, "the ELF header");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, (uint64_t)st.st_size + 4096, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, ERANGE, "past the end of the file");
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, UINT64_MAX, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	expect_refused(&m, fd, ERANGE, "offset 2^64-1");
	free(e.b);

	/* A file whose one executable segment claims 1 GiB in a file of 8 KiB. */
	{
		uint8_t b[8192] = { 0 };
		Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
		Elf64_Phdr *ph = (Elf64_Phdr *)(b + sizeof(*eh));

		test_elf64_header(eh, ET_DYN);
		eh->e_phoff = sizeof(*eh);
		eh->e_phentsize = sizeof(*ph);
		eh->e_phnum = 1;
		*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
				    .p_flags = PF_R | PF_X,
				    .p_offset = 0,
				    .p_filesz = 1u << 30,
				    .p_memsz = 1u << 30,
				    .p_align = 4096 };
		cfd = open(crafted, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		cr_assert_geq(cfd, 0);
		cr_assert_eq(write(cfd, b, sizeof(b)), (ssize_t)sizeof(b));
	}
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, 3 * 4096, NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	expect_refused(&m, cfd, ERANGE, "inside a segment that claims more than the file holds");
	close(cfd);
	close(fd);
}

/* The descriptor must be a regular file (the kernel resolves /proc/self/fd/N): not a pipe,
 * a device, a directory or a socket. */
Test(tls_attach, a_descriptor_that_is_not_a_regular_file_is_refused)
{
	struct msg_tls_attach m;
	int p[2], s[2], null = open_ro("/dev/null"), dir = open_ro("/usr/lib");

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
	wk_start(&srv.pid, 1);
	m = valid_msg(srv.pid);
	expect_refused(&m, p[0], EBADF, "a pipe");
	expect_refused(&m, null, EBADF, "/dev/null");
	expect_refused(&m, dir, EBADF, "a directory");
	expect_refused(&m, s[0], EBADF, "a socket");
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
	close(null);
	close(dir);
}

/* The file must be ELF64 with 1 to 64 program headers, all of them in the file. */
Test(tls_attach, a_file_that_is_not_elf64_is_refused)
{
	static const char *const edits[] = { "ELFCLASS32", "no program header",
					     "65 program headers",
					     "program headers past the end of the file" };
	struct msg_tls_attach m;
	size_t len;
	uint8_t *b = (uint8_t *)slurp(libssl, &len);
	int fd;

	cr_assert_not_null(b);
	wk_start(&srv.pid, 1);
	m = valid_msg(srv.pid);
	fd = open_ro(src("tests/programs/tls_py.py"));
	expect_refused(&m, fd, ENOEXEC, "a Python script");
	close(fd);
	/* libssl.so.3 with one field of its header changed. */
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
		Elf64_Ehdr saved = *eh;

		if (i == 0)
			eh->e_ident[EI_CLASS] = ELFCLASS32;
		else if (i == 1)
			eh->e_phnum = 0;
		else if (i == 2)
			eh->e_phnum = 65;
		else
			eh->e_phoff = len - sizeof(Elf64_Phdr);
		fd = open(tmp_path("edited.so"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, b, len), (ssize_t)len);
		expect_refused(&m, fd, ENOEXEC, edits[i]);
		close(fd);
		*eh = saved;
	}
	free(b);
}

/*
 * The message the shipper sends for CPython: SSL_read_ex and SSL_write_ex, entries and
 * returns. Two links, each limited to the target: the breakpoint (0xcc) is in the target's
 * copy of SSL_read_ex and not in the bystander's, though both map the same file; the
 * program counts the target's TLS calls while a client (another Python, which maps libssl
 * too) makes requests; and nothing is left once the worker is gone.
 */
Test(tls_attach, a_valid_library_is_probed_in_its_target_only)
{
	struct um_link l[4];
	struct msg_tls_attach m;
	struct msg_tls_result r;
	struct http_totals t;
	uint64_t rd, wr, calls;
	int fd = open_ro(libssl), file_byte;
	char url[128];
	struct elf e;

	elf_read(libssl, &e);
	rd = elf_sym(&e, "SSL_read_ex", NULL);
	wr = elf_sym(&e, "SSL_write_ex", NULL);
	file_byte = e.b[rd];
	free(e.b);
	cr_assert_neq(file_byte, 0xcc);
	cr_assert_eq(libssl_byte(srv.pid, rd), file_byte);
	wk_start(&srv.pid, 1);
	m = valid_msg(srv.pid);
	cr_assert_eq(attack(&m, fd, &r), 0, "refused: %s", strerror(-r.err));
	cr_expect_eq(r.attached, 4);
	/* Entries first, then returns: link ids grow. */
	cr_assert_eq(links_on(srv.pid, l, 4), 2);
	for (size_t i = 0; i < 2; i++) {
		cr_expect_str_eq(l[i].path, libssl);
		cr_expect_eq(l[i].pid, srv.pid);
		cr_expect_eq(l[i].count, 2);
		cr_expect_eq(l[i].offsets[0], rd);
		cr_expect_eq(l[i].offsets[1], wr);
		cr_expect_eq(l[i].cookies[0], NET_TLS_COOKIE(NET_TLS_FN_READ_EX, NET_TLS_OPENSSL));
		cr_expect_eq(l[i].cookies[1], NET_TLS_COOKIE(NET_TLS_FN_WRITE_EX, NET_TLS_OPENSSL));
	}
	cr_expect_eq(l[0].flags, 0);
	cr_expect_eq(l[1].flags, UPROBE_MULTI_RETURN);
	cr_expect_eq(links_on(0, NULL, 0), 0, "a link on every process");
	cr_expect_eq(links_on(bystander, NULL, 0), 0);
	cr_expect_eq(libssl_byte(srv.pid, rd), 0xcc, "no breakpoint in the target's SSL_read_ex");
	cr_expect_eq(libssl_byte(bystander, rd), file_byte, "a breakpoint in the bystander");

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/ok", srv.port);
	cr_assert_eq(tls_client_run(TLS_PEER_PY, url, 3, &t), 0);
	cr_assert_eq(t.status[200], 3);
	calls = wk_stop();
	/* Each request: one SSL_read_ex and at least one SSL_write_ex of the server. */
	cr_expect_geq(calls, 6, "the target's TLS calls counted: %llu", (unsigned long long)calls);
	cr_expect_eq(links_on(srv.pid, NULL, 0), 0, "links outlive the worker");
	cr_expect_eq(libssl_byte(srv.pid, rd), file_byte, "a breakpoint outlives the worker");
	close(fd);
}

/* clone3 with set_tid (root: CAP_CHECKPOINT_RESTORE): a Python with ssl imported at pid want. */
static pid_t python_at(pid_t want)
{
	struct clone_args a = { .exit_signal = SIGCHLD,
				.set_tid = (uintptr_t)&want,
				.set_tid_size = 1 };
	const char *script = tmp_path("bystander.py");
	char c = 0;
	int pfd[2];
	pid_t pid;

	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		execl("/usr/bin/python3", "python3", script, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	cr_assert_eq(pid, want, "clone3 at pid %d: %s", (int)want, strerror(errno));
	/* "ready\n", whole: Python dies of EPIPE if its pipe closes before it wrote it all. */
	while (read(pfd[0], &c, 1) == 1 && c != '\n')
		;
	cr_assert_eq(c, '\n');
	close(pfd[0]);
	return pid;
}

/*
 * A pid of the task names the process the launcher pinned, not whoever has the number: once
 * a target is gone, the same number given to another process (here on purpose, with clone3's
 * set_tid) names nothing; nor does a pid of the task that had no process when it began.
 */
Test(tls_attach, a_target_s_pid_taken_by_another_process_is_refused)
{
	struct msg_tls_attach m;
	struct msg_tls_result r;
	pid_t pids[3], gone;
	uint64_t rd;
	struct elf e;
	int fd = open_ro(libssl), file_byte;

	elf_read(libssl, &e);
	rd = elf_sym(&e, "SSL_read_ex", NULL);
	file_byte = e.b[rd];
	free(e.b);
	extra[0] = python_with_ssl();
	gone = fork();
	if (gone == 0)
		_exit(0);
	cr_assert_eq(waitpid(gone, NULL, 0), gone);
	pids[0] = srv.pid;
	pids[1] = extra[0];
	pids[2] = gone;
	wk_start(pids, 3);

	stop_program(extra[0]); /* killed and reaped: its number is free */
	extra[0] = python_at(pids[1]);
	extra[1] = python_at(gone);
	m = valid_msg(pids[1]);
	expect_refused(&m, fd, ESRCH, "a target's pid, now another process's");
	cr_expect_eq(libssl_byte(pids[1], rd), file_byte, "a breakpoint in the pid's new process");
	m = valid_msg(gone);
	expect_refused(&m, fd, EPERM, "a pid with no process when the task began, now one's");
	cr_expect_eq(libssl_byte(gone, rd), file_byte, "a breakpoint in the pid's new process");
	/* The target still alive is still probed. */
	m = valid_msg(srv.pid);
	cr_expect_eq(attack(&m, fd, &r), 0, "the live target: %s", strerror(-r.err));
	close(fd);
}

/* The links a shipper can make the worker hold are bounded: WORKER_MAX_LINKS per task. */
Test(tls_attach, the_links_a_shipper_can_ask_for_are_bounded)
{
	struct msg_tls_attach m;
	struct msg_tls_result r;
	size_t accepted = 0;
	struct elf e;
	int fd = open_ro(libssl), err = 0;

	elf_read(libssl, &e);
	m = msg_of(srv.pid, NET_TLS_OPENSSL);
	add(&m, elf_sym(&e, "SSL_read_ex", NULL), NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 0);
	add(&m, elf_sym(&e, "SSL_read_ex", NULL), NET_TLS_FN_READ_EX, NET_TLS_OPENSSL, 1);
	free(e.b);
	wk_start(&srv.pid, 1);
	/* Two links a message (entries, returns). */
	while (!err && accepted <= WORKER_MAX_LINKS) {
		m.seq = ++seq;
		err = attack(&m, fd, &r);
		accepted += !err;
	}
	cr_expect_eq(err, -ENOSPC, "after %zu messages: %s", accepted, strerror(-err));
	cr_expect_leq(2 * accepted, WORKER_MAX_LINKS);
	cr_expect_geq(2 * accepted, WORKER_MAX_LINKS - 3);
	cr_expect_eq(links_on(srv.pid, NULL, 0), 2 * accepted);
	m.seq = ++seq;
	cr_expect_eq(attack(&m, fd, &r), -ENOSPC, "and again");
	cr_expect_eq(links_on(srv.pid, NULL, 0), 2 * accepted);
	close(fd);
}

/* ---- a live NETWORK worker's own filters ---- */

struct filters {
	size_t n; /* [0] the oldest, as the kernel numbers them (kernel/seccomp.c get_nth_filter) */
	struct sock_fprog prog[8];
};

/* The seccomp filters of a live process, as the kernel holds them (root, CAP_SYS_ADMIN). */
static void take_filters(pid_t pid, struct filters *ret)
{
	int status;

	memset(ret, 0, sizeof(*ret));
	cr_assert_eq(ptrace(PTRACE_SEIZE, pid, 0, 0), 0, "seize %d: %s", (int)pid, strerror(errno));
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
	cr_assert_eq(waitpid(pid, &status, __WALL), pid);
	for (; ret->n < 8; ret->n++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, ret->n, NULL);
		struct sock_filter *f;

		if (len <= 0)
			break;
		f = calloc((size_t)len, sizeof(*f));
		cr_assert_not_null(f);
		cr_assert_eq(ptrace(PTRACE_SECCOMP_GET_FILTER, pid, ret->n, f), len);
		ret->prog[ret->n] = (struct sock_fprog){ (unsigned short)len, f };
	}
	cr_assert_eq(ptrace(PTRACE_DETACH, pid, 0, 0), 0);
}

enum live_call {
	CALL_LINK_CREATE,
	CALL_MAP_LOOKUP,
	CALL_PREAD,
	CALL_BPF, /* arg: the command */
	CALL_PERF_OPEN,
	CALL_OPENAT,
	CALL_OPEN,
	CALL_SOCKET,
};

/* The wait status of a child that stacked f in its order and then made call. */
static int under_filters(const struct filters *f, enum live_call call, int arg)
{
	int status, fd = open_ro("/etc/hostname");
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct perf_event_attr pa = { .type = PERF_TYPE_SOFTWARE,
					      .size = sizeof(pa),
					      .config = PERF_COUNT_SW_CPU_CLOCK };
		union bpf_attr a;
		char c;
		long rc = -1;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			_exit(250);
		for (size_t i = 0; i < f->n; i++)
			if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog[i]))
				_exit(251);
		memset(&a, 0, sizeof(a));
		switch (call) {
		case CALL_LINK_CREATE:
			a.link_create.prog_fd = (uint32_t)-1;
			rc = syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
			break;
		case CALL_MAP_LOOKUP:
			a.map_fd = (uint32_t)-1;
			rc = syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &a, sizeof(a));
			break;
		case CALL_PREAD:
			rc = pread(fd, &c, 1, 0);
			break;
		case CALL_BPF:
			rc = syscall(SYS_bpf, arg, &a, sizeof(a));
			break;
		case CALL_PERF_OPEN:
			rc = syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
			break;
		case CALL_OPENAT:
			rc = openat(AT_FDCWD, "/etc/hostname", O_RDONLY | O_CLOEXEC);
			break;
		case CALL_OPEN:
			rc = syscall(SYS_open, "/etc/hostname", O_RDONLY | O_CLOEXEC);
			break;
		case CALL_SOCKET:
			rc = socket(AF_INET, SOCK_STREAM, 0);
			break;
		}
		_exit(rc >= 0 ? 0 : errno);
	}
	close(fd);
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

/*
 * `rover profile --type network` on the target: once the worker has linked libssl's probes
 * (BPF_LINK_CREATE under its attached filter), its filters, taken from it, still kill
 * perf_event_open, socket and every bpf command but the drain loop's map commands and
 * BPF_LINK_CREATE, and fail openat with EACCES; pread64 (the program headers) works. The
 * worker is stopped to take them (ptrace), and must live through that.
 */
Test(tls_attach, a_live_network_worker_links_uprobes_but_opens_and_loads_nothing)
{
	static const int allowed[] = { BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM,
				       BPF_MAP_DELETE_ELEM, BPF_MAP_GET_NEXT_KEY, BPF_LINK_CREATE };
	char out[4096], log[4096], pids[16], *text = NULL, what[64];
	char *argv[] = { (char *)bin("rover"), "profile", "--type",   "network", "--pid", pids,
			 "--duration",	       "8s",	  "--output", out,	 NULL };
	struct filters f;
	pid_t worker;
	int rc;

	snprintf(pids, sizeof(pids), "%d", (int)srv.pid);
	snprintf(out, sizeof(out), "%s/live.json", tmp);
	snprintf(log, sizeof(log), "%s/live.log", tmp);
	task = spawn_cmd(argv, log);
	cr_assert_gt(task, 0);
	for (int i = 0; i < 300 && !(text && strstr(text, "probes attached")); i++) {
		free(text);
		sleep_ms(50);
		text = slurp(log, NULL);
	}
	cr_assert(text && strstr(text, "libssl.so.3") && strstr(text, "probes attached"),
		  "the live worker attached no TLS probe: %s", text ? text : "");
	free(text);
	worker = wait_child(task, "rover-worker", 5000);
	cr_assert_gt(worker, 0);
	take_filters(worker, &f);
	/* The launcher's, the worker's, and worker_attached_net_policy. */
	cr_assert_eq(f.n, 3, "%zu filters", f.n);

	expect_exit(under_filters(&f, CALL_LINK_CREATE, 0), EBADF, "BPF_LINK_CREATE");
	expect_exit(under_filters(&f, CALL_MAP_LOOKUP, 0), EBADF, "BPF_MAP_LOOKUP_ELEM");
	expect_exit(under_filters(&f, CALL_PREAD, 0), 0, "pread64");
	for (int cmd = 0; cmd < 64; cmd++) {
		int ok = 0;

		for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
			ok |= cmd == allowed[i];
		if (ok)
			continue;
		snprintf(what, sizeof(what), "bpf command %d", cmd);
		expect_killed(under_filters(&f, CALL_BPF, cmd), what);
	}
	expect_killed(under_filters(&f, CALL_PERF_OPEN, 0), "perf_event_open");
	expect_killed(under_filters(&f, CALL_SOCKET, 0), "socket");
	expect_exit(under_filters(&f, CALL_OPENAT, 0), EACCES, "openat");
	/* open(2), which libc no longer calls: worker_policy does not list it, and of stacked
	 * filters the harshest action wins over the attached filter's EACCES. */
	expect_killed(under_filters(&f, CALL_OPEN, 0), "open");
	for (size_t i = 0; i < f.n; i++)
		free(f.prog[i].filter);

	/* The worker lived through it: the task ends as it should. */
	rc = wait_cmd(task, 60000);
	task = -1;
	cr_expect_eq(rc, 0, "rover profile: %s", slurp(log, NULL));
}
