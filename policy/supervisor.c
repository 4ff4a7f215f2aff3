// SPDX-License-Identifier: Apache-2.0
/*
 * The supervisor: owns tasks, talks to clients and the backend (gRPC: the shared table in
 * policy/grpc.c), discovers processes from /proc, asks the launcher for workers. It holds no
 * capability; the only files it opens are /proc's and, with Kubernetes discovery, the
 * service-account token (at every API request) and CA, all read-only. libcurl's multi handle
 * (its wake-up socket pair) and TLS state are made before this filter; its transfers use the
 * calls the gRPC table allows (socket, connect, poll, sendto, recvfrom).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "policy/policy.h"

static const struct seccomp_entry calls[] = {
	{ "read", SC_ALLOW, "framed messages" },
	{ "write", SC_ALLOW, "log lines to stderr" },
	{ "sendmsg", SC_ALLOW, "framed messages, descriptor passing" },
	{ "recvmsg", SC_ALLOW, "framed messages, descriptor passing" },
	/* No Unix socket of its own: ctl.sock and the shipper link are handed over by the
	 * launcher (a connection in a container is made before the filter). */
	{ "accept4", SC_ALLOW, "client connections on ctl.sock" },
	/* An anonymous pair reaches nobody: a client's output, one end to the client, the
	 * other to the shipper (supervisor/main.c output_pair). socket(AF_UNIX) stays a kill. */
	{ "socketpair", SC_ALLOW, "a client's output socket", 0, SC_INT, AF_UNIX, 1, SC_SOCK_TYPE,
	  SOCK_STREAM },
	{ "getsockopt", SC_ALLOW, "SO_PEERCRED and SO_PEERGROUPS of clients" },
	{ "setsockopt", SC_ALLOW, "I/O timeouts on its sockets" },
	{ "close", SC_ALLOW, "its descriptors" },
	{ "poll", SC_ALLOW, "event loop; whether a watched process's pidfd says it ended" },
	{ "ppoll", SC_ALLOW, "event loop" },
	{ "clock_gettime", SC_ALLOW,
	  "timers; continuous profiling's CPU time of a watched process (its process clock)" },
	{ "clock_nanosleep", SC_ALLOW, "waits (libc)" },
	{ "nanosleep", SC_ALLOW, "waits (libc)" },
	/* No executable memory (the same entries as in policy/grpc.c): nothing is loaded once the
	 * filter is on; PCRE2 is not asked to JIT. */
	{ "mmap", SC_ALLOW, "memory", 2, PROT_EXEC, 0 },
	{ "mmap", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC },
	{ "munmap", SC_ALLOW, "memory" },
	{ "mprotect", SC_ALLOW, "memory (malloc arenas)", 2, PROT_EXEC, 0 },
	{ "mprotect", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC },
	{ "mremap", SC_ALLOW, "memory (realloc)" },
	{ "madvise", SC_ALLOW, "memory (free)" },
	{ "brk", SC_ALLOW, "memory" },
	{ "futex", SC_ALLOW, "libc locks" },
	{ "getpid", SC_ALLOW, "log prefix, hello message" },
	{ "gettid", SC_ALLOW, "libc" },
	{ "getrandom", SC_ALLOW, "libc malloc hardening" },
	{ "rt_sigaction", SC_ALLOW, "libc" },
	{ "rt_sigprocmask", SC_ALLOW, "libc" },
	{ "rt_sigreturn", SC_ALLOW, "signal return" },
	{ "exit", SC_ALLOW, "thread exit" },
	{ "exit_group", SC_ALLOW, "process exit" },
	{ "openat", SC_ALLOW, "discovery reads /proc/PID/{stat,cmdline}: read-only opens only", 2,
	  O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND, O_RDONLY },
	/* Writing opens get a clean error (libc probes), not a kill: */
	{ "openat", EACCES, "no writing", 2, O_WRONLY, O_WRONLY },
	{ "openat", EACCES, "no writing", 2, O_RDWR, O_RDWR },
	{ "openat", EACCES, "no creating", 2, O_CREAT, O_CREAT },
	{ "getdents64", SC_ALLOW, "discovery lists /proc" },
	{ "pread64", SC_ALLOW,
	  "continuous profiling with another namespace's procfs reads each watched process's "
	  "/proc/PID/stat again through the descriptor it keeps (offset 0: the figures of now)" },
	/* Signal 0 sends nothing: whether a pid still exists, for discovery's processes with an
	 * entity at every scan (a path lookup in /proc costs 5 times more). Any signal: EPERM. */
	{ "pidfd_open", SC_ALLOW,
	  "discovery: a process with an entity is watched for its end; so is each child a "
	  "--children task follows (supervisor/discovery/children.c) and each process "
	  "continuous profiling watches (common/procstat.c) "
	  "(its pidfd gives no signal: pidfd_send_signal is not allowed)" },
	{ "epoll_ctl", SC_ALLOW, "discovery and --children: the sets of those pidfds" },
	{ "epoll_wait", SC_ALLOW, "discovery: which of them ended, once a scan" },
	{ "epoll_pwait", SC_ALLOW, "discovery: as epoll_wait (architectures without it)" },
	{ "kill", SC_ALLOW, "signal 0 only: is a process alive", 1, SC_INT, 0 },
	{ "kill", EPERM, "no signal to anyone", 1, 0, SC_ELSE },
	{ "lseek", SC_ALLOW, "libc readdir" },
	{ "clone", SC_ALLOW, "the backend threads; threads only, never a process", 0, CLONE_THREAD,
	  CLONE_THREAD },
	{ "clone3", ENOSYS, "glibc falls back to clone, whose flags the filter can see" },
	{ "set_robust_list", SC_ALLOW, "thread start" },
	{ "rseq", SC_ALLOW, "thread start" },
	{ "uname", SC_ALLOW, "host name" },
	{ "newfstatat", SC_ALLOW, "libc stdio on stderr" },
	{ "fstat", SC_ALLOW,
	  "libc stdio on stderr; a watched process's thread count, the link count of its "
	  "/proc/PID/task" },
	{ "ioctl", SC_ALLOW, "TCGETS: glibc's isatty on stdio", 1, SC_INT, TCGETS },
	{ "ioctl", ENOTTY, "any request but these and grpc.c's (TIOCSTI...)", 1, 0, SC_ELSE },
};

const struct role_policy supervisor_policy = {
	.role = "supervisor",
	.caps = NULL,
	.ncaps = 0,
	.seccomp = calls,
	.nseccomp = sizeof(calls) / sizeof(calls[0]),
	.shared = grpc_client_calls,
	.nshared = &ngrpc_client_calls,
	.compiled = &rover_filter_supervisor_policy,
};
