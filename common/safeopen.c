// SPDX-License-Identifier: Apache-2.0
/*
 * The threat: a profiled process, of any user, chooses what sits at /tmp/perf-PID.map in its
 * mount namespace, and the opener runs as root. A symbolic link or a hard link there could make
 * root open /etc/shadow, a FIFO could block the opener, a device node could do what opening it
 * does. What is let through is a regular file that pid's own user owns and could read anyway,
 * so the worst a target can make the shipper read is text it could have written itself.
 */
#define _GNU_SOURCE
#include "common/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* /proc/PID/status is about 1.5 KiB; Uid: and NSpid: are in its first half. */
#define STATUS_MAX 8192

/* The first number on the line that starts with key, or with last, the last one. */
static int status_field(const char *text, const char *key, int last, long long *ret)
{
	size_t klen = strlen(key);
	const char *p = text, *eol;
	long long v = -1;
	char *end;

	/* Line by line: the Name: line above is the target's to choose (newlines escaped). */
	while (strncmp(p, key, klen)) {
		p = strchr(p, '\n');
		if (!p)
			return -ENOENT;
		p++;
	}
	p += klen;
	eol = strchr(p, '\n');
	if (!eol)
		eol = p + strlen(p);
	while (p < eol) {
		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		if (p == eol)
			break;
		errno = 0;
		v = strtoll(p, &end, 10);
		if (errno || end == p || v < 0)
			return -EINVAL;
		p = end;
		if (!last)
			break;
	}
	if (v < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* pid's real uid, and its pid in its innermost pid namespace (NSpid, Linux 4.1). */
static int read_status(int procfd, pid_t pid, uid_t *ret_uid, pid_t *ret_nspid)
{
	char text[STATUS_MAX];
	long long uid, nspid;
	size_t have = 0;
	ssize_t n;
	int fd, err;

	fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (have < sizeof(text) - 1) {
		n = read(fd, text + have, sizeof(text) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	text[have] = '\0';
	err = status_field(text, "Uid:", 0, &uid);
	if (err)
		return err;
	if (status_field(text, "NSpid:", 1, &nspid))
		nspid = pid;
	if (uid > (uid_t)-1 - 1 || nspid <= 0 || nspid > 0x7fffffff)
		return -EINVAL;
	*ret_uid = (uid_t)uid;
	*ret_nspid = (pid_t)nspid;
	return 0;
}

static int perf_map_acceptable(const struct stat *st, uid_t uid)
{
	/*
	 * One link: a hard link that a user made to someone else's file (possible where
	 * fs.protected_hardlinks is 0) would otherwise pass as the target's own.
	 */
	if (!S_ISREG(st->st_mode) || st->st_uid != uid || st->st_nlink != 1 || st->st_size < 0 ||
	    st->st_size > SAFEOPEN_PERF_MAP_MAX_BYTES)
		return -EPERM;
	return 0;
}

int safeopen_perf_map(pid_t pid)
{
	char path[32], name[32];
	struct stat st, reopened;
	pid_t nspid;
	uid_t uid;
	int procfd, tmpfd = -1, pathfd = -1, fd = -1, err;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	/*
	 * Every later lookup goes through this descriptor: it names one process, and if pid exits
	 * and the number is reused, lookups through it fail (ESRCH) instead of reaching the new
	 * process. The uid, the namespace pid and the root below are all the same process's.
	 */
	procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return -errno;
	err = read_status(procfd, pid, &uid, &nspid);
	if (err)
		goto cleanup;
	/*
	 * "root" is a magic link to pid's root directory in pid's mount namespace (the kernel
	 * checks ptrace read access to pid first); as an inner component it is followed whatever
	 * the flags, which is what reaches a container's /tmp. O_NOFOLLOW covers the last
	 * component, "tmp": with O_PATH|O_DIRECTORY a symbolic link there fails with ENOTDIR.
	 * openat2(RESOLVE_NO_SYMLINKS) would say the same for both components at once; this
	 * works on every kernel and the path has only these two. Whatever is mounted on that
	 * /tmp is the target's choice all the same: the checks on the file itself, made before
	 * it is opened and again after, are what bound what it can make us open and read.
	 */
	tmpfd = openat(procfd, "root/tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tmpfd < 0) {
		err = errno == ENOTDIR || errno == ELOOP ? -EPERM : -errno;
		goto cleanup;
	}
	snprintf(name, sizeof(name), "perf-%d.map", (int)nspid);
	/*
	 * The target can swap what sits at that name at any moment (rename, a bind mount on
	 * it), so the name is resolved once, into pathfd, and everything after acts on that
	 * descriptor. An O_PATH open calls no driver's or filesystem's open and, with
	 * O_NOFOLLOW, gives the symbolic link itself: nothing has been opened yet when its
	 * fstat says what it is. Opening the name again after that check would look it up
	 * again; reopening /proc/self/fd/N reaches the very file the check was made on.
	 */
	pathfd = openat(tmpfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pathfd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstat(pathfd, &st)) {
		err = -errno;
		goto cleanup;
	}
	err = perf_map_acceptable(&st, uid);
	if (err)
		goto cleanup;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pathfd);
	/* O_NONBLOCK, O_NOCTTY: no effect on a regular file, kept as a second line should the
	 * check above ever let through something else. */
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstat(fd, &reopened)) {
		err = -errno;
		goto cleanup;
	}
	/* Size and links can change after the first look: the file is the target's to write. */
	err = perf_map_acceptable(&reopened, uid);
	if (!err && (reopened.st_dev != st.st_dev || reopened.st_ino != st.st_ino))
		err = -EPERM;
cleanup:
	if (err && fd >= 0)
		close(fd);
	if (pathfd >= 0)
		close(pathfd);
	if (tmpfd >= 0)
		close(tmpfd);
	close(procfd);
	return err ? err : fd;
}
