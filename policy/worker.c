// SPDX-License-Identifier: Apache-2.0
/*
 * The worker: loads and attaches BPF for one task, drains its maps, ships raw counts.
 *
 * Two filters, stacked. worker_policy, from the drop on: what loading and attaching takes
 * (load_calls) and what draining takes (drain_calls). worker_attached_policy, once every
 * program is attached (worker/main.c): drain_calls and nothing else, so a worker taken over
 * while it parses nothing but its own maps can no longer load a program, open a perf event
 * or a file, whatever the first filter allows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "policy/policy.h"

static const int caps[] = {
	CAP_BPF,     /* load programs, create maps, read them */
	CAP_PERFMON, /* system-wide perf events, stack traces, perf_event programs */
};

/* From the drop until the programs are attached (open_targets, profiler__start). */
static const struct seccomp_entry load_calls[] = {
	{ "bpf", SC_ALLOW, "load programs, create maps, attach, probe features (any command)" },
	{ "perf_event_open", SC_ALLOW, "one CPU-clock event per CPU; libbpf's perf-link probe" },
	{ "ioctl", SC_ALLOW, "PERF_EVENT_IOC_SET_BPF: libbpf attaches where there is no perf link",
	  1, SC_INT, PERF_EVENT_IOC_SET_BPF },
	{ "pidfd_open", SC_ALLOW, "notice when a target exits" },
	{ "openat", SC_ALLOW,
	  "libbpf reads /sys/devices/system/cpu/possible and kernel BTF: "
	  "read-only opens only",
	  2, O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND, O_RDONLY },
	{ "faccessat2", SC_ALLOW, "libbpf checks for kernel BTF" },
	{ "access", SC_ALLOW, "libbpf checks for kernel BTF" },
	{ "statfs", SC_ALLOW, "libbpf checks bpffs/tracefs mounts" },
	{ "dup", SC_ALLOW, "libbpf duplicates descriptors" },
	{ "dup3", SC_ALLOW, "libbpf duplicates descriptors" },
	{ "uname", SC_ALLOW, "libbpf reads the kernel version for programs that need it" },
	{ "getrlimit", SC_ALLOW, "libbpf memlock probe" },
	{ "prlimit64", SC_ALLOW, "libbpf memlock probe" },
	{ "setrlimit", EPERM, "libbpf may try to raise memlock; memcg accounting makes it moot" },
	{ "epoll_create1", SC_ALLOW, "libbpf's ring buffer reader (stack snapshots)" },
	{ "epoll_ctl", SC_ALLOW, "libbpf's ring buffer reader (stack snapshots)" },
	{ "sched_getaffinity", SC_ALLOW, "libc CPU count" },
	{ "sysinfo", SC_ALLOW, "libc" },
	/* Also in attached_net_calls: a stacked filter narrows, so both must allow it. */
	{ "pread64", SC_ALLOW, "the program headers of a TLS library handed over (NETWORK)" },
	/* Installing worker_attached_policy (libseccomp): a filter only ever narrows. */
	{ "seccomp", SC_ALLOW, "SECCOMP_SET_MODE_FILTER only", 0, SC_INT, SECCOMP_SET_MODE_FILTER },
	{ "prctl", SC_ALLOW, "PR_SET_NO_NEW_PRIVS, already set", 0, SC_INT, PR_SET_NO_NEW_PRIVS },
};

/* clang-format off */
#define MAP_CMD(cmd, why) { "bpf", SC_ALLOW, why, 0, SC_INT, cmd }
/* clang-format on */

/* The drain loop, the end of the task (detach, close, free) and everything in between. */
static const struct seccomp_entry drain_calls[] = {
	MAP_CMD(BPF_MAP_LOOKUP_ELEM, "counts, stacks and stats (profiler__drain)"),
	MAP_CMD(BPF_MAP_UPDATE_ELEM, "the targets map"),
	MAP_CMD(BPF_MAP_DELETE_ELEM, "drained counts, stale stack ids"),
	MAP_CMD(BPF_MAP_GET_NEXT_KEY, "walking counts and stacks"),
	{ "ioctl", SC_ALLOW, "PERF_EVENT_IOC_ENABLE after attaching", 1, SC_INT,
	  PERF_EVENT_IOC_ENABLE },
	{ "ioctl", SC_ALLOW, "PERF_EVENT_IOC_DISABLE when libbpf detaches", 1, SC_INT,
	  PERF_EVENT_IOC_DISABLE },
	{ "ioctl", SC_ALLOW, "TCGETS: glibc's isatty on stdio", 1, SC_INT, TCGETS },
	{ "ioctl", ENOTTY, "any other request (TIOCSTI...)", 1, 0, SC_ELSE },
	{ "read", SC_ALLOW, "framed messages; sysfs CPU lists; BTF" },
	{ "write", SC_ALLOW, "log lines to stderr" },
	{ "sendmsg", SC_ALLOW, "framed messages to supervisor and shipper (inherited sockets)" },
	{ "recvmsg", SC_ALLOW, "framed messages from the supervisor" },
	/* No socket() and no connect(): both its connections (supervisor, shipper) are made by
	 * the launcher and inherited; nothing is reached by a path. */
	{ "setsockopt", SC_ALLOW, "I/O timeouts on its sockets" },
	{ "close", SC_ALLOW, "its descriptors; detaching (links, perf events)" },
	{ "fstat", SC_ALLOW, "libc stdio and libbpf file reads" },
	{ "newfstatat", SC_ALLOW, "libc stdio and libbpf file reads" },
	{ "lseek", SC_ALLOW, "libc stdio" },
	{ "fcntl", SC_ALLOW, "libbpf duplicates map descriptors (F_DUPFD_CLOEXEC)" },
	{ "poll", SC_ALLOW, "wait for the supervisor, targets and the flush timer" },
	{ "ppoll", SC_ALLOW, "wait for the supervisor, targets and the flush timer" },
	{ "restart_syscall", SC_ALLOW,
	  "a poll or sleep resumed after a stop (SIGSTOP and SIGCONT, "
	  "a cgroup freeze, a tracer): the kernel's own call" },
	{ "clock_gettime", SC_ALLOW, "flush and task timers" },
	{ "clock_nanosleep", SC_ALLOW, "let in-flight programs finish after a map flip" },
	{ "nanosleep", SC_ALLOW, "let in-flight programs finish after a map flip" },
	/* No executable memory: nothing is loaded once the filter is on. */
	{ "mmap", SC_ALLOW, "memory; libbpf maps global data and the ring buffer", 2, PROT_EXEC,
	  0 },
	{ "mmap", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC },
	{ "mprotect", SC_ALLOW, "memory (malloc arenas)", 2, PROT_EXEC, 0 },
	{ "mprotect", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC },
	{ "munmap", SC_ALLOW, "memory" },
	{ "mremap", SC_ALLOW, "memory (realloc)" },
	{ "madvise", SC_ALLOW, "memory (free)" },
	{ "brk", SC_ALLOW, "memory" },
	{ "futex", SC_ALLOW, "libc locks" },
	{ "getpid", SC_ALLOW, "log prefix, hello message" },
	{ "gettid", SC_ALLOW, "libc" },
	{ "getrandom", SC_ALLOW, "libc malloc hardening" },
	{ "rt_sigaction", SC_ALLOW, "libc" },
	{ "rt_sigprocmask", SC_ALLOW, "libc" },
	{ "rt_sigreturn", SC_ALLOW, "signal return (debug trap handler)" },
	{ "exit", SC_ALLOW, "thread exit" },
	{ "exit_group", SC_ALLOW, "process exit" },
};
static const size_t ndrain_calls = sizeof(drain_calls) / sizeof(drain_calls[0]);

/*
 * Once attached: a late open (libc's lazy files, such as the time zone for a log line) gets
 * EACCES and the task goes on; BPF_PROG_RUN is added to drain_calls for the kernel frames'
 * names, so a program load, any other bpf command and perf_event_open kill the worker.
 */
static const struct seccomp_entry attached_calls[] = {
	{ "openat", EACCES, "nothing is opened once attached" },
	{ "open", EACCES, "nothing is opened once attached" },
	MAP_CMD(BPF_PROG_RUN, "naming kernel frames: runs its loaded ksym_names program, which "
			      "asks the kernel for the names of addresses (worker/ksyms.c)"),
	{ "pread64", SC_ALLOW, "the headers and dynamic symbols of a handed Python interpreter" },
};

/*
 * A stack task's that runs no program of its own, once attached: an OFF_CPU task on raw_tp, or
 * a kernel that refused the kernel-frame namer. Without BPF_PROG_RUN: a raw_tp program can be
 * run on made-up arguments, and the OFF_CPU one reads through the task pointers it is given,
 * a read of any kernel word for a compromised worker. Its kernel frames are named by the
 * shipper from kallsyms instead.
 */
static const struct seccomp_entry attached_norun_calls[] = {
	{ "openat", EACCES, "nothing is opened once attached" },
	{ "open", EACCES, "nothing is opened once attached" },
	{ "pread64", SC_ALLOW, "the headers and dynamic symbols of a handed Python interpreter" },
};

/*
 * A NETWORK task's, once attached: the TLS libraries a target maps are found as it runs (the
 * shipper hands each file's descriptor over), so it may still link its loaded uprobe programs
 * to them (BPF_LINK_CREATE, uprobe_multi limited to one target) and read the file's program
 * headers to check the offsets. Still no open and no perf_event_open.
 */
static const struct seccomp_entry attached_net_calls[] = {
	{ "openat", EACCES, "nothing is opened once attached" },
	{ "open", EACCES, "nothing is opened once attached" },
	MAP_CMD(BPF_LINK_CREATE, "uprobes on a target's TLS library (uprobe_multi, one pid)"),
	{ "pread64", SC_ALLOW, "the ELF header and program headers of a handed TLS library" },
	/* Also in load_calls: a stacked filter narrows, so both must allow it. */
	{ "pidfd_open", SC_ALLOW,
	  "the access log: a pidfd of a target its supervisor added, held while one of its TLS "
	  "libraries is probed (a handle to see it exit; no signal can be sent with it here)" },
};

const struct role_policy worker_policy = {
	.role = "worker",
	.caps = caps,
	.ncaps = sizeof(caps) / sizeof(caps[0]),
	.seccomp = load_calls,
	.nseccomp = sizeof(load_calls) / sizeof(load_calls[0]),
	.shared = drain_calls,
	.nshared = &ndrain_calls,
	.compiled = &rover_filter_worker_policy,
};

const struct role_policy worker_attached_policy = {
	.role = "worker",
	.caps = caps,
	.ncaps = sizeof(caps) / sizeof(caps[0]),
	.seccomp = attached_calls,
	.nseccomp = sizeof(attached_calls) / sizeof(attached_calls[0]),
	.shared = drain_calls,
	.nshared = &ndrain_calls,
	.compiled = &rover_filter_worker_attached_policy,
};

const struct role_policy worker_attached_norun_policy = {
	.role = "worker",
	.caps = caps,
	.ncaps = sizeof(caps) / sizeof(caps[0]),
	.seccomp = attached_norun_calls,
	.nseccomp = sizeof(attached_norun_calls) / sizeof(attached_norun_calls[0]),
	.shared = drain_calls,
	.nshared = &ndrain_calls,
	.compiled = &rover_filter_worker_attached_norun_policy,
};

const struct role_policy worker_attached_net_policy = {
	.role = "worker",
	.caps = caps,
	.ncaps = sizeof(caps) / sizeof(caps[0]),
	.seccomp = attached_net_calls,
	.nseccomp = sizeof(attached_net_calls) / sizeof(attached_net_calls[0]),
	.shared = drain_calls,
	.nshared = &ndrain_calls,
	.compiled = &rover_filter_worker_attached_net_policy,
};
