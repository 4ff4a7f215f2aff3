// SPDX-License-Identifier: Apache-2.0
/*
 * What the gRPC C core (1.51, with OpenSSL 3 and the c-ares resolver) calls in a client of
 * the OAP: linked into the supervisor and the shipper (their policies point here), never the
 * worker or the launcher. Taken from `strace -f` of plaintext and TLS unary calls and client
 * streams, refused connections, failed handshakes and a name resolved by DNS, from
 * oap_conn__new to exit; proven by tests/unit/test_oap.c, which makes those calls under each
 * role's filter plus this table, with the filter loaded before and after oap_conn__new.
 *
 * grpc_init() (the first oap_conn__new) starts its threads (timer manager, executors, event
 * engine); the role's filter, loaded with TSYNC, covers them whether it comes before or after.
 * More threads start later when the executor grows, hence clone here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/prctl.h>

#include "policy/policy.h"

const struct seccomp_entry grpc_client_calls[] = {
	/* Threads. */
	{ "clone", SC_ALLOW, "gRPC's timer, executor and event-engine threads; never a process", 0,
	  CLONE_THREAD, CLONE_THREAD },
	{ "clone3", ENOSYS, "glibc falls back to clone, whose flags the filter can see" },
	{ "set_robust_list", SC_ALLOW, "thread start (glibc)" },
	{ "rseq", SC_ALLOW, "thread start (glibc)" },
	{ "rt_sigprocmask", SC_ALLOW, "glibc blocks signals around thread creation" },
	{ "rt_sigaction", SC_ALLOW,
	  "glibc installs its set-id signal handler at the first thread" },
	{ "prctl", SC_ALLOW, "gRPC names its threads (PR_SET_NAME only)", 0, 0xffffffffu,
	  PR_SET_NAME },
	{ "mmap", SC_ALLOW, "thread stacks, memory (never executable)", 2, PROT_EXEC, 0 },
	{ "mmap", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC },
	{ "mprotect", SC_ALLOW, "thread stack guard pages (never executable)", 2, PROT_EXEC, 0 },
	{ "mprotect", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC },
	{ "munmap", SC_ALLOW, "thread stacks, memory" },
	{ "madvise", SC_ALLOW, "glibc returns an exited thread's stack" },
	{ "brk", SC_ALLOW, "memory" },
	{ "futex", SC_ALLOW, "gRPC mutexes, condition variables and timed waits" },
	{ "exit", SC_ALLOW, "thread exit" },
	{ "gettid", SC_ALLOW, "gRPC log lines and thread ids" },
	{ "sched_getaffinity", SC_ALLOW, "CPU count (sizing the executor) when /sys is not read" },
	{ "sched_getparam", SC_ALLOW, "pthread_getattr_np of the main thread (stack bounds)" },
	{ "sched_getscheduler", SC_ALLOW, "pthread_getattr_np of the main thread (stack bounds)" },
	{ "sched_yield", SC_ALLOW,
	  "gRPC event engine threads back off while another holds a lock" },
	/* The event engine (epoll1 poller) and its wakeups. */
	{ "epoll_create1", SC_ALLOW, "poller" },
	{ "epoll_ctl", SC_ALLOW, "poller" },
	{ "epoll_wait", SC_ALLOW, "poller" },
	{ "epoll_pwait", SC_ALLOW, "poller (architectures without epoll_wait)" },
	{ "eventfd2", SC_ALLOW, "poller wakeups" },
	{ "read", SC_ALLOW, "eventfd wakeups; the files below" },
	{ "write", SC_ALLOW, "eventfd wakeups" },
	{ "close", SC_ALLOW, "sockets, eventfds, files" },
	{ "clock_gettime", SC_ALLOW, "deadlines and timers (when the vDSO does not answer)" },
	{ "clock_nanosleep", SC_ALLOW, "timer manager" },
	{ "nanosleep", SC_ALLOW, "timer manager" },
	/* The connection to the OAP. */
	/* IPv4 and IPv6, TCP and UDP only: no netlink, packet or raw socket. */
	{ "socket", SC_ALLOW, "TCP to the OAP (IPv4)", 0, SC_INT, AF_INET, 1, SC_SOCK_TYPE,
	  SOCK_STREAM },
	{ "socket", SC_ALLOW, "TCP to the OAP (IPv6)", 0, SC_INT, AF_INET6, 1, SC_SOCK_TYPE,
	  SOCK_STREAM },
	{ "socket", SC_ALLOW, "UDP: c-ares DNS, the address sort (RFC 6724)", 0, SC_INT, AF_INET, 1,
	  SC_SOCK_TYPE, SOCK_DGRAM },
	{ "socket", SC_ALLOW, "UDP: c-ares DNS, the address sort (RFC 6724)", 0, SC_INT, AF_INET6,
	  1, SC_SOCK_TYPE, SOCK_DGRAM },
	{ "connect", SC_ALLOW, "TCP to the OAP; UDP for DNS and for the address sort (RFC 6724)" },
	{ "bind", SC_ALLOW, "gRPC probes once whether [::1] is usable (binds [::1]:0)" },
	{ "getsockname", SC_ALLOW, "local address of a connection; the address sort" },
	{ "setsockopt", SC_ALLOW,
	  "TCP_NODELAY, TCP_USER_TIMEOUT, SO_REUSEADDR, IPV6_V6ONLY, TCP_INQ" },
	{ "getsockopt", SC_ALLOW, "SO_ERROR after a non-blocking connect; option checks" },
	{ "fcntl", SC_ALLOW, "O_NONBLOCK and FD_CLOEXEC on new sockets" },
	{ "sendmsg", SC_ALLOW, "HTTP/2 frames out" },
	{ "recvmsg", SC_ALLOW, "HTTP/2 frames in" },
	{ "shutdown", SC_ALLOW, "closing a connection" },
	{ "sendto", SC_ALLOW, "DNS queries by c-ares (an OAP given by name)" },
	{ "recvfrom", SC_ALLOW, "DNS answers" },
	{ "ioctl", SC_ALLOW, "c-ares asks FIONREAD of a DNS socket (FIONREAD only)", 1, 0xffffffffu,
	  FIONREAD },
	/* Files, read-only: OpenSSL reads openssl.cnf at the first handshake and /dev/urandom;
	 * c-ares /etc/hosts, /etc/resolv.conf, /etc/nsswitch.conf at every resolution; glibc
	 * /etc/localtime (time stamps) and /sys/devices/system/cpu/online (CPU count). */
	{ "openat", SC_ALLOW, "the read-only files above", 2,
	  O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND, O_RDONLY },
	{ "newfstatat", SC_ALLOW, "stdio on those files" },
	{ "fstat", SC_ALLOW, "stdio on those files" },
	{ "lseek", SC_ALLOW, "stdio on those files" },
	{ "uname", SC_ALLOW, "c-ares, OpenSSL (host name)" },
	{ "sysinfo", SC_ALLOW, "OpenSSL's entropy pool sizing at the first handshake" },
	{ "getpid", SC_ALLOW, "OpenSSL's fork check on every random draw" },
	{ "getrandom", SC_ALLOW, "TLS randomness; gRPC's own random numbers" },
	{ "exit_group", SC_ALLOW, "process exit" },
	{ "restart_syscall", SC_ALLOW,
	  "a poll or sleep resumed after a stop (SIGSTOP and SIGCONT, "
	  "a cgroup freeze, a tracer): the kernel's own call" },
	/* Not seen in the tests' traces but imported by the libraries on paths they may take
	 * (an exhausted channel, a resolver retry, a peer gone): a kill there would cost the
	 * role's data, and none of these reaches beyond the process's own descriptors. */
	{ "prlimit64", SC_ALLOW, "getrlimit: descriptor limit (event engine)" },
	{ "getpeername", SC_ALLOW, "peer address of a connection (logging, channelz)" },
	{ "writev", SC_ALLOW, "socket writes on some transports" },
	{ "poll", SC_ALLOW, "c-ares and OpenSSL waits" },
	{ "ppoll", SC_ALLOW, "c-ares and OpenSSL waits" },
	{ "pselect6", SC_ALLOW, "c-ares select()" },
	{ "pipe2", SC_ALLOW, "wakeup fds where eventfd is refused" },
	{ "getcpu", SC_ALLOW, "sched_getcpu (per-CPU stats) when the vDSO does not answer" },
	{ "gettimeofday", SC_ALLOW, "timestamps when the vDSO does not answer" },
	{ "getuid", SC_ALLOW, "glibc secure_getenv" },
	{ "geteuid", SC_ALLOW, "glibc secure_getenv" },
	{ "getgid", SC_ALLOW, "glibc secure_getenv" },
	{ "getegid", SC_ALLOW, "glibc secure_getenv" },
};
const size_t ngrpc_client_calls = sizeof(grpc_client_calls) / sizeof(grpc_client_calls[0]);
