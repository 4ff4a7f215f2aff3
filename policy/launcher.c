// SPDX-License-Identifier: Apache-2.0
/*
 * The launcher keeps root and eleven capabilities (launcher/main.c launcher_caps), and every
 * process it starts inherits its seccomp filter on top of its own. So this filter is a
 * denylist, not an allowlist: it cannot know every call of the roles' libraries, but it takes
 * away, from the whole process tree, the calls that turn those capabilities into a way out of
 * the host's control. Denied calls fail with EPERM; nothing here is used by rover.
 */
#include <errno.h>

#include "policy/policy.h"

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
};
