// SPDX-License-Identifier: Apache-2.0
/*
 * The launcher keeps root and eleven capabilities (launcher/main.c launcher_caps), and every
 * process it starts inherits its seccomp filter on top of its own. So this filter is a
 * denylist, not an allowlist: it cannot know every call of the roles' libraries, but it takes
 * away, from the whole process tree, the calls that turn those capabilities into a way out of
 * the host's control. Denied calls fail with an errno (EPERM unless said); nothing here is
 * used by rover.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>

#include "policy/policy.h"

/* clone()'s flags are its first argument on x86-64 and arm64 (not on s390). */
/* clang-format off */
#define NEW_NS(flag, what) { "clone", EPERM, "a process in a new " what " namespace", 0, flag, flag }
/* clang-format on */

static const struct seccomp_entry calls[] = {
	/* CAP_SYS_ADMIN is kept for /proc/PID/map_files: it must not mount or change namespaces. */
	{ "mount", EPERM, "file system changes (CAP_SYS_ADMIN)" },
	{ "umount2", EPERM, "file system changes" },
	{ "pivot_root", EPERM, "file system changes" },
	{ "chroot", EPERM, "file system changes" },
	{ "move_mount", EPERM, "new mount API" },
	{ "open_tree", EPERM, "new mount API" },
	{ "fsopen", EPERM, "new mount API" },
	{ "fsmount", EPERM, "new mount API" },
	{ "fsconfig", EPERM, "new mount API" },
	{ "fspick", EPERM, "new mount API" },
	{ "mount_setattr", EPERM, "new mount API" },
	{ "unshare", EPERM, "new namespaces" },
	/* A process or thread in new namespaces: one masked rule per flag. CLONE_NEWTIME exists
	 * for clone3 and unshare only (for clone, 0x80 is part of the exit signal). */
	NEW_NS(CLONE_NEWNS, "mount"),
	NEW_NS(CLONE_NEWCGROUP, "cgroup"),
	NEW_NS(CLONE_NEWUTS, "UTS"),
	NEW_NS(CLONE_NEWIPC, "IPC"),
	NEW_NS(CLONE_NEWUSER, "user"),
	NEW_NS(CLONE_NEWPID, "pid"),
	NEW_NS(CLONE_NEWNET, "network"),
	/* clone3 passes its flags in a structure that seccomp cannot read: ENOSYS makes glibc
	 * (pthread_create, posix_spawn) fall back to clone, whose flags are checked above;
	 * fork() uses clone already. */
	{ "clone3", ENOSYS, "flags out of seccomp's sight; glibc falls back to clone" },
	{ "setns", EPERM, "entering other namespaces" },
	/* CAP_DAC_READ_SEARCH is kept to read mapped files: not to open any inode by handle, the
	 * classic way out of a container. */
	{ "open_by_handle_at", EPERM, "opening files by handle (CAP_DAC_READ_SEARCH)" },
	{ "name_to_handle_at", EPERM, "file handles" },
	/* The kernel itself. */
	{ "init_module", EPERM, "kernel modules" },
	{ "finit_module", EPERM, "kernel modules" },
	{ "delete_module", EPERM, "kernel modules" },
	{ "kexec_load", EPERM, "replacing the kernel" },
	{ "kexec_file_load", EPERM, "replacing the kernel" },
	{ "reboot", EPERM, "rebooting" },
	{ "swapon", EPERM, "swap" },
	{ "swapoff", EPERM, "swap" },
	{ "iopl", EPERM, "I/O ports" },
	{ "ioperm", EPERM, "I/O ports" },
	{ "acct", EPERM, "process accounting" },
	{ "quotactl", EPERM, "quotas" },
	{ "syslog", EPERM, "the kernel log (CAP_SYSLOG is kept for kallsyms addresses only)" },
	{ "settimeofday", EPERM, "the clock" },
	{ "clock_settime", EPERM, "the clock" },
	{ "clock_adjtime", EPERM, "the clock" },
	{ "adjtimex", EPERM, "the clock" },
	{ "sethostname", EPERM, "host identity" },
	{ "setdomainname", EPERM, "host identity" },
	{ "fanotify_init", EPERM, "watching every file access" },
	/* Other processes' memory and the kernel's keys. */
	{ "ptrace", EPERM, "no rover process debugs another" },
	{ "process_vm_writev", EPERM, "writing other processes' memory" },
	{ "process_vm_readv", EPERM, "reading other processes' memory" },
	{ "pidfd_getfd", EPERM, "taking a descriptor out of another process" },
	/*
	 * /proc/PID/mem opened for reading and writing by a process that may ptrace its owner.
	 * Seccomp cannot see paths: no rover process opens anything O_RDWR once the launcher is
	 * set up (the shipper's spool files are O_WRONLY, libbpf's files O_RDONLY), so every
	 * O_RDWR open is refused. openat2 hides its flags in a structure; glibc never calls it.
	 */
	{ "openat", EACCES, "read-write opens (/proc/PID/mem)", 2, O_ACCMODE, O_RDWR },
	{ "open", EACCES, "read-write opens (/proc/PID/mem)", 1, O_ACCMODE, O_RDWR },
	{ "openat2", ENOSYS, "flags out of seccomp's sight; glibc falls back to openat" },
	/* io_uring runs reads, writes, opens and connects that no seccomp filter sees. */
	{ "io_uring_setup", EPERM, "calls out of seccomp's sight" },
	{ "io_uring_enter", EPERM, "calls out of seccomp's sight" },
	{ "io_uring_register", EPERM, "calls out of seccomp's sight" },
	/* Typing into, or reading the screen of, the terminal of whoever started rover. */
	{ "ioctl", EPERM, "TIOCSTI: faking input on a terminal", 1, SC_INT, TIOCSTI },
	{ "ioctl", EPERM, "TIOCLINUX: console selection and input", 1, SC_INT, TIOCLINUX },
	{ "keyctl", EPERM, "kernel keyrings" },
	{ "add_key", EPERM, "kernel keyrings" },
	{ "request_key", EPERM, "kernel keyrings" },
	{ "userfaultfd", EPERM, "a tool of kernel exploits; unused" },
};

const struct role_policy launcher_policy = {
	.role = "launcher",
	.caps = NULL, /* its capabilities are set in launcher/main.c */
	.ncaps = 0,
	.seccomp = calls,
	.nseccomp = sizeof(calls) / sizeof(calls[0]),
	.default_allow = 1,
	.compiled = &rover_filter_launcher_policy,
};
