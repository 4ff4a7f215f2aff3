// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <cap-ng.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <grp.h>
#include <pwd.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/privdrop.h"

int privdrop_lookup_user(const char *name, uid_t *ret_uid, gid_t *ret_gid)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(name && *name ? name : "rover");
	if (!pw)
		return errno ? -errno : -ENOENT;
	/* Never root; never nobody, which other daemons (and, in Kubernetes, other pods'
	 * processes) share: the roles' uid must be theirs alone. */
	if (pw->pw_uid == 0 || pw->pw_uid == 65534 || !strcmp(pw->pw_name, "nobody"))
		return -EPERM;
	*ret_uid = pw->pw_uid;
	*ret_gid = pw->pw_gid;
	return 0;
}

static int holds_only(const struct role_policy *pol)
{
	capng_get_caps_process();
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		int want = 0;

		for (size_t i = 0; i < pol->ncaps; i++)
			want |= pol->caps[i] == cap;
		if (capng_have_capability(CAPNG_EFFECTIVE, cap) != want ||
		    capng_have_capability(CAPNG_PERMITTED, cap) != want ||
		    capng_have_capability(CAPNG_INHERITABLE, cap))
			return -EPERM;
	}
	return 0;
}

int privdrop_apply(const struct role_policy *pol, uid_t uid, gid_t gid)
{
	int rc;

	capng_clear(CAPNG_SELECT_ALL);
	for (size_t i = 0; i < pol->ncaps; i++) {
		if (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
				 (unsigned)pol->caps[i]))
			return -EINVAL;
	}
	if (geteuid() == 0) {
		/*
		 * The bounding set first, while CAP_SETPCAP is still held; then the uid change,
		 * which keeps the listed capabilities and drops supplementary groups.
		 */
		if (capng_apply(CAPNG_SELECT_BOUNDS))
			return -EPERM;
		rc = capng_change_id((int)uid, (int)gid, CAPNG_DROP_SUPP_GRP);
		if (rc)
			return -EPERM;
	} else {
		/* Started unprivileged (one container per role): can only shed what it has. Not
		 * as nobody, for the reason privdrop_lookup_user gives. */
		if (geteuid() == 65534)
			return -EPERM;
		if (capng_apply(CAPNG_SELECT_ALL) && capng_apply(CAPNG_SELECT_BOTH))
			return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return -errno;
	/*
	 * A peer that closes its end is an error of the call that wrote to it, never a signal
	 * that ends the role with every task it holds (a client's output socket, a worker gone).
	 */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return -errno;
	/*
	 * Changing ids cleared the parent-death signal: set it again, so a role does not outlive
	 * a launcher killed with SIGKILL. (Started alone, the parent is the container's init.)
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0))
		return -errno;
	/* Prove it: none of these may work any more. */
	if (getuid() == 0 || geteuid() == 0 || setuid(0) == 0 || seteuid(0) == 0 ||
	    setgid(0) == 0 || setgroups(0, NULL) == 0)
		return -EPERM;
	return holds_only(pol);
}

/*
 * The kernel's Landlock ABI as of ABI 6 (Linux 6.12): Debian 12's headers stop at ABI 2, so
 * the later fields and flags are spelled here; the kernel takes the shorter struct from an
 * older ABI (the size tells it which).
 */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;	     /* ABI 6 */
};
#define LL_ACCESS_FS_TRUNCATE (1ULL << 14)	  /* ABI 3 */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)		  /* ABI 6 */

int sandbox_landlock(int writable_dirfd)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t attr_size = sizeof(attr);
	uint64_t write_rights;
	int abi, rfd, err = 0;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	/* EPERM: a filter above rover (a service manager's, a container runtime's) refuses it. */
	if (abi < 1)
		return abi < 0 && errno == EPERM ? -EPERM : -EOPNOTSUPP;
	write_rights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
		       LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
		       LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		       LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
		       LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		write_rights |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		write_rights |= LL_ACCESS_FS_TRUNCATE;
	/* Reads are not handled: what a role may read is its seccomp table's and its uid's. */
	attr.handled_access_fs = write_rights;
	/* A role signals nothing outside itself (not the launcher, not another role), and
	 * reaches no abstract Unix socket. The fields exist from ABI 6. */
	if (abi >= 6)
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
	else
		attr_size = offsetof(struct ll_ruleset_attr, handled_access_net);
	rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (rfd < 0)
		return -errno;
	if (writable_dirfd >= 0) {
		struct landlock_path_beneath_attr pb = {
			.allowed_access =
				LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG |
				LANDLOCK_ACCESS_FS_REMOVE_FILE |
				(write_rights & (LANDLOCK_ACCESS_FS_REFER | LL_ACCESS_FS_TRUNCATE)),
			.parent_fd = writable_dirfd,
		};

		if (syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
			err = -errno;
	}
	if (!err && syscall(SYS_landlock_restrict_self, rfd, 0))
		err = -errno;
	close(rfd);
	return err;
}

int role_landlock(int writable_dirfd)
{
	int err = sandbox_landlock(writable_dirfd);

	if (err == -EOPNOTSUPP || err == -EPERM) {
		log_info("Landlock %s: writes and signals are bounded by seccomp and the uid only",
			 err == -EPERM ? "refused by a seccomp filter rover runs under (allow "
					 "landlock_* there)"
				       : "is not in this kernel");
		return 0;
	}
	return err;
}

#if ROVER_DEBUG
/* Debug builds trap instead of killing, and name the call that broke the policy. */
static void sigsys_handler(int sig, siginfo_t *si, void *uctx)
{
	char line[128];
	int n;

	(void)sig;
	(void)uctx;
	n = snprintf(line, sizeof(line),
		     "seccomp: forbidden syscall %d (its name: ausyscall %d, or scmp_sys_resolver)\n",
		     si->si_syscall, si->si_syscall);
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n);
	_exit(128 + SIGSYS);
}
#endif

/*
 * The program was compiled from the policy's table at build time (policy/filtergen.c): the
 * kernel gets it as is, with every thread of the process synchronised to it, as libseccomp
 * loaded it when it compiled it here at each start.
 */
int sandbox_apply(const struct role_policy *pol)
{
	long rc;

#if ROVER_DEBUG
	struct sigaction sa = { .sa_sigaction = sigsys_handler, .sa_flags = SA_SIGINFO };

	if (sigaction(SIGSYS, &sa, NULL))
		return -errno;
#endif
	if (!pol->compiled || !pol->compiled->len)
		return -ENOENT; /* a binary built without $(OUT)/policy/filters.o */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
		     pol->compiled);
	if (rc < 0)
		return -errno;
	return rc ? -ESRCH : 0; /* rc: a thread that could not take the filter */
}
