// SPDX-License-Identifier: Apache-2.0
/*
 * The shipper: symbolizes raw stacks and writes or uploads profiles. It holds no capability;
 * it reads other processes' maps and binaries only through descriptors the launcher opened
 * (see policy/README.md), and world-readable debug files itself. Uploads go out from one
 * thread through the gRPC client (the shared table in policy/grpc.c) and wait in spool files
 * under the configured spool directory, opened before the filter.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "policy/policy.h"

/* Both variants; a writing open anywhere but in the spool directory kills. */
/* clang-format off */
#define SHIPPER_CALLS \
	{ "read", SC_ALLOW, "framed messages; maps, ELF and debug files" }, \
	{ "pread64", SC_ALLOW, "ELF files" }, \
	{ "write", SC_ALLOW, "profiles to the output descriptor; log lines; spool files" }, \
	{ "sendmsg", SC_ALLOW, "framed messages, descriptor requests" }, \
	{ "recvmsg", SC_ALLOW, "framed messages, descriptors from the launcher" }, \
	{ "recvfrom", SC_ALLOW, "peeking at a reply header: does a descriptor follow" }, \
	/* No Unix socket of its own and no accept: its peers are handed over by the launcher \
	 * (a connection in a container is made before the filter). */ \
	{ "setsockopt", SC_ALLOW, "I/O timeouts on its sockets" }, \
	{ "openat", SC_ALLOW, "world-readable debug files under /usr/lib/debug, /proc/PID/comm, " \
			      "spool files read back: read-only opens, any directory", 2, \
	  O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND, O_RDONLY }, \
	{ "close", SC_ALLOW, "its descriptors" }, \
	{ "fstat", SC_ALLOW, "ELF file sizes" }, \
	{ "newfstatat", SC_ALLOW, "ELF file sizes and identities" }, \
	{ "lseek", SC_ALLOW, "libc stdio, libelf" }, \
	{ "fcntl", SC_ALLOW, "libc stdio (fdopen)" }, \
	{ "dup", SC_ALLOW, "a stdio stream over the output descriptor" }, \
	{ "ftruncate", SC_ALLOW, "output files given as descriptors" }, \
	{ "readlink", SC_ALLOW, "names of mapped files" }, \
	{ "poll", SC_ALLOW, "event loop" }, \
	{ "ppoll", SC_ALLOW, "event loop" }, \
	{ "clock_gettime", SC_ALLOW, "timestamps" }, \
	{ "clock_nanosleep", SC_ALLOW, "reconnect backoff" }, \
	{ "nanosleep", SC_ALLOW, "reconnect backoff" }, \
	/* No executable memory (the same entries as in policy/grpc.c): nothing is loaded once the \
	 * filter is on. */ \
	{ "mmap", SC_ALLOW, "memory; read-only maps of ELF files", 2, PROT_EXEC, 0 }, \
	{ "mmap", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC }, \
	{ "munmap", SC_ALLOW, "memory" }, \
	{ "mprotect", SC_ALLOW, "memory (malloc arenas)", 2, PROT_EXEC, 0 }, \
	{ "mprotect", EPERM, "executable memory", 2, PROT_EXEC, PROT_EXEC }, \
	{ "mremap", SC_ALLOW, "memory (realloc)" }, \
	{ "madvise", SC_ALLOW, "memory (free)" }, \
	{ "brk", SC_ALLOW, "memory" }, \
	{ "futex", SC_ALLOW, "libc locks; the spool's lock and condition variable, joining the upload " \
			     "thread" }, \
	{ "getpid", SC_ALLOW, "log prefix, hello message" }, \
	{ "gettid", SC_ALLOW, "libc" }, \
	{ "getrandom", SC_ALLOW, "libc malloc hardening" }, \
	{ "rt_sigaction", SC_ALLOW, "libc" }, \
	{ "rt_sigprocmask", SC_ALLOW, "libc" }, \
	{ "rt_sigreturn", SC_ALLOW, "signal return" }, \
	{ "exit", SC_ALLOW, "thread exit" }, \
	{ "exit_group", SC_ALLOW, "process exit" }, \
	{ "sysinfo", SC_ALLOW, "libc sysconf(_SC_PHYS_PAGES) when sizing caches" }, \
	{ "sched_getaffinity", SC_ALLOW, "libc CPU count" }, \
	{ "ioctl", SC_ALLOW, "TCGETS: glibc's isatty on stdio", 1, SC_INT, TCGETS }, \
	{ "ioctl", ENOTTY, "any request but these and grpc.c's (TIOCSTI...)", 1, 0, SC_ELSE },

/* clang-format on */

static const struct seccomp_entry calls[] = { SHIPPER_CALLS };

/*
 * The spool directory is the descriptor SPOOL_DIR_FD (shipper/output/spool.c moves it there). The
 * dirfd binds relative names only: an absolute path ignores it, so what confines a writing
 * open to the directory is, in the end, that the shipper runs as the rover user.
 */
static const struct seccomp_entry spool_calls[] = {
	/* clang-format off */
	SHIPPER_CALLS
	{ "openat", SC_ALLOW, "a spool file created under a temporary name (write-only)", 0,
	  SC_INT, SPOOL_DIR_FD, 2, O_ACCMODE, O_WRONLY },
	/* clang-format on */
	{ "renameat", SC_ALLOW, "a spool file written under a temporary name goes into place", 0,
	  SC_INT, SPOOL_DIR_FD, 2, SC_INT, SPOOL_DIR_FD },
	{ "unlinkat", SC_ALLOW,
	  "spool files once sent or dropped; a temporary one left by a "
	  "crash (never a directory)",
	  0, SC_INT, SPOOL_DIR_FD, 2, AT_REMOVEDIR, 0 },
	{ "fsync", SC_ALLOW, "a spool file and its directory before the rename counts as durable" },
};

const struct role_policy shipper_policy = {
	.role = "shipper",
	.caps = NULL,
	.ncaps = 0,
	.seccomp = spool_calls,
	.nseccomp = sizeof(spool_calls) / sizeof(spool_calls[0]),
	/* The upload thread's gRPC client. */
	.shared = grpc_client_calls,
	.nshared = &ngrpc_client_calls,
	.compiled = &rover_filter_shipper_policy,
};

/* No spool directory (none configured, or it could not be opened): no writing open at all. */
const struct role_policy shipper_nospool_policy = {
	.role = "shipper",
	.caps = NULL,
	.ncaps = 0,
	.seccomp = calls,
	.nseccomp = sizeof(calls) / sizeof(calls[0]),
	.shared = grpc_client_calls,
	.nshared = &ngrpc_client_calls,
	.compiled = &rover_filter_shipper_nospool_policy,
};
