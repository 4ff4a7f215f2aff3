// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/trust.h"

static int judge(int fd, uid_t also, int last, int create, const char *name, char *ret_bad,
		 size_t badlen)
{
	struct stat st;
	int open_to_others;

	if (fstat(fd, &st))
		return -errno;
	/* A parent may be sticky (/tmp); the directory itself must be closed to others, unless
	 * the launcher is about to set its owner and mode itself. */
	if (!last)
		open_to_others = (st.st_mode & 022) && !(st.st_mode & S_ISVTX);
	else
		open_to_others = !create && (st.st_mode & 022);
	if ((st.st_uid != 0 && st.st_uid != also) || open_to_others) {
		snprintf(ret_bad, badlen, "%s (uid %u, mode %o)", name, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int trust_dir(const char *path, uid_t also, uid_t also_last, int create, char *ret_bad,
	      size_t badlen)
{
	char buf[PATH_MAX], *save = NULL, *tok, *next;
	int fd, err;

	if (path[0] != '/' || snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -EINVAL;
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (tok = strtok_r(buf, "/", &save); tok; tok = next) {
		int last, nfd;

		next = strtok_r(NULL, "/", &save);
		last = !next;
		err = judge(fd, also, 0, create, "a parent directory", ret_bad, badlen);
		if (err)
			goto fail;
		if (last && create && mkdirat(fd, tok, 0700) && errno != EEXIST) {
			err = -errno;
			goto fail;
		}
		nfd = openat(fd, tok,
			     (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			err = errno == ELOOP ? -ENOTDIR : -errno;
			goto fail;
		}
		close(fd);
		fd = nfd;
	}
	err = judge(fd, also, 1, create, "it", ret_bad, badlen);
	if (err == -EPERM && also_last != also)
		err = judge(fd, also_last, 1, create, "it", ret_bad, badlen);
	if (err)
		goto fail;
	return fd;
fail:
	close(fd);
	return err;
}
