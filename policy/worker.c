// SPDX-License-Identifier: Apache-2.0
/* The worker: loads and attaches BPF for one task, drains its maps, ships raw counts. */
#include <errno.h>
#include <linux/capability.h>

#include "policy/policy.h"

static const int caps[] = {
	CAP_BPF,      /* load programs, create maps, read them */
	CAP_PERFMON,  /* system-wide perf events, stack traces, perf_event programs */
};

static const struct seccomp_entry calls[] = {
	{ "bpf", SC_ALLOW, "load programs, create and drain maps" },
	{ "perf_event_open", SC_ALLOW, "one CPU-clock event per CPU" },
	{ "ioctl", SC_ALLOW, "PERF_EVENT_IOC_SET_BPF/ENABLE/DISABLE on its perf events" },
	{ "pidfd_open", SC_ALLOW, "notice when a target exits" },
	{ "read", SC_ALLOW, "framed messages; sysfs CPU lists; BTF" },
	{ "write", SC_ALLOW, "log lines to stderr" },
	{ "sendmsg", SC_ALLOW, "framed messages to supervisor and shipper" },
	{ "recvmsg", SC_ALLOW, "framed messages from the supervisor" },
	{ "socket", SC_ALLOW, "a Unix socket to reach a restarted shipper" },
	{ "connect", SC_ALLOW, "to the shipper's socket in the socket directory" },
	{ "setsockopt", SC_ALLOW, "I/O timeouts on its sockets" },
	{ "openat", SC_ALLOW, "libbpf reads /sys/devices/system/cpu/possible and kernel BTF" },
	{ "close", SC_ALLOW, "its descriptors" },
	{ "faccessat2", SC_ALLOW, "libbpf checks for kernel BTF" },
	{ "access", SC_ALLOW, "libbpf checks for kernel BTF" },
	{ "fstat", SC_ALLOW, "libc stdio and libbpf file reads" },
	{ "newfstatat", SC_ALLOW, "libc stdio and libbpf file reads" },
	{ "statfs", SC_ALLOW, "libbpf checks bpffs/tracefs mounts" },
	{ "lseek", SC_ALLOW, "libc stdio" },
	{ "fcntl", SC_ALLOW, "libbpf duplicates map descriptors (F_DUPFD_CLOEXEC)" },
	{ "dup", SC_ALLOW, "libbpf duplicates descriptors" },
	{ "dup3", SC_ALLOW, "libbpf duplicates descriptors" },
	{ "uname", SC_ALLOW, "libbpf reads the kernel version for programs that need it" },
	{ "getrlimit", SC_ALLOW, "libbpf memlock probe" },
	{ "prlimit64", SC_ALLOW, "libbpf memlock probe" },
	{ "setrlimit", EPERM, "libbpf may try to raise memlock; memcg accounting makes it moot" },
	{ "poll", SC_ALLOW, "wait for the supervisor, targets and the flush timer" },
	{ "epoll_create1", SC_ALLOW, "libbpf's ring buffer reader (stack snapshots)" },
	{ "epoll_ctl", SC_ALLOW, "libbpf's ring buffer reader (stack snapshots)" },
	{ "ppoll", SC_ALLOW, "wait for the supervisor, targets and the flush timer" },
	{ "clock_gettime", SC_ALLOW, "flush and task timers" },
	{ "clock_nanosleep", SC_ALLOW, "let in-flight programs finish after a map flip" },
	{ "nanosleep", SC_ALLOW, "let in-flight programs finish after a map flip" },
	{ "mmap", SC_ALLOW, "memory; libbpf maps the program's global data" },
	{ "munmap", SC_ALLOW, "memory" },
	{ "mprotect", SC_ALLOW, "memory (malloc arenas)" },
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
	{ "sched_getaffinity", SC_ALLOW, "libc CPU count" },
	{ "sysinfo", SC_ALLOW, "libc" },
};

const struct role_policy worker_policy = {
	.role = "worker",
	.caps = caps,
	.ncaps = sizeof(caps) / sizeof(caps[0]),
	.seccomp = calls,
	.nseccomp = sizeof(calls) / sizeof(calls[0]),
};
