// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/procmatch.h"
#include "launcher/select.h"

/* Ancestors followed at most: a chain of shells, sudo, a terminal, init. */
#define SELECT_MAX_ANCESTORS 64

/* This process and those it runs under, to pid 1. Their count. */
static int ancestors(int dirfd, int32_t *ret, int max)
{
	int32_t pid = getpid();
	int n = 0;

	while (pid > 0 && n < max) {
		int32_t ppid;

		ret[n++] = pid;
		if (procmatch__stat(dirfd, pid, &ppid, NULL) || ppid == pid)
			break;
		pid = ppid;
	}
	return n;
}

static int listed(const int32_t *v, uint32_t n, int32_t pid)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

int select__by_name(const char *regex, int32_t *pids, uint32_t *npids, uint32_t max, FILE *say)
{
	int32_t anc[SELECT_MAX_ANCESTORS];
	char err[160];
	void *re, *mctx = NULL;
	int dirfd = -1, nanc, found = 0, rc = 0;
	DIR *d = NULL;
	struct dirent *de;

	re = procmatch__compile(regex, 4096, err, sizeof(err));
	if (!re) {
		fprintf(say, "rover: bad --name '%s': %s\n", regex, err);
		return -EINVAL;
	}
	mctx = procmatch__context_new();
	dirfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!mctx || dirfd < 0) {
		rc = -ENOMEM;
		goto out;
	}
	nanc = ancestors(dirfd, anc, SELECT_MAX_ANCESTORS);
	d = fdopendir(dirfd);
	if (!d) {
		rc = -errno;
		close(dirfd);
		goto out;
	}
	while ((de = readdir(d))) {
		char cmdline[PROCMATCH_CMDLINE_LEN], argv0[PROCMATCH_CMDLINE_LEN], comm[64];
		char exe[PATH_MAX], path[64];
		const char *what[3];
		int nwhat = 0;
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		ssize_t n;

		if (*end || pid <= 0 || pid > INT32_MAX ||
		    listed(anc, (uint32_t)nanc, (int32_t)pid) || listed(pids, *npids, (int32_t)pid))
			continue;
		/* A kernel thread (or a zombie) has no command line: nothing to profile. */
		if (procmatch__cmdline(dirfd, (int)pid, cmdline, sizeof(cmdline), argv0,
				       sizeof(argv0)) ||
		    !cmdline[0])
			continue;
		if (procmatch__comm(dirfd, (int)pid, comm, sizeof(comm)))
			continue;
		/* Another user's is unreadable to a user not root: matched by the other two. */
		snprintf(path, sizeof(path), "%ld/exe", pid);
		n = readlinkat(dirfd, path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		if (procmatch__match(re, mctx, comm, NULL, 0, NULL, NULL, 0) == 1)
			what[nwhat++] = "command name";
		if (exe[0] && procmatch__match(re, mctx, exe, NULL, 0, NULL, NULL, 0) == 1)
			what[nwhat++] = "executable";
		if (procmatch__match(re, mctx, cmdline, NULL, 0, NULL, NULL, 0) == 1)
			what[nwhat++] = "command line";
		if (!nwhat)
			continue;
		if (*npids >= max) {
			fprintf(say,
				"rover: --name '%s' matches more than %u processes; narrow it\n",
				regex, max);
			rc = -E2BIG;
			goto out;
		}
		pids[(*npids)++] = (int32_t)pid;
		found++;
		fprintf(say, "rover: --name '%s': process %ld (%s) matched by its %s%s%s%s%s\n",
			regex, pid, comm, what[0], nwhat > 1 ? (nwhat > 2 ? ", " : " and ") : "",
			nwhat > 1 ? what[1] : "", nwhat > 2 ? " and " : "",
			nwhat > 2 ? what[2] : "");
	}
	rc = found;
out:
	if (d)
		closedir(d);
	procmatch__context_free(mctx);
	procmatch__free(re);
	return rc;
}
