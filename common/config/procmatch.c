// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/procmatch.h"

void *procmatch__compile(const char *re, size_t max_len, char *ret_err, size_t errlen)
{
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	pcre2_code *code;
	PCRE2_SIZE off = 0;
	int rc;

	if (!cc) {
		snprintf(ret_err, errlen, "no memory");
		return NULL;
	}
	pcre2_set_max_pattern_length(cc, max_len);
	/* Command lines need not be UTF-8: invalid sequences never match, they are no error. */
	code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
			     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C, &rc,
			     &off, cc);
	pcre2_compile_context_free(cc);
	if (!code) {
		PCRE2_UCHAR msg[120];

		pcre2_get_error_message(rc, msg, sizeof(msg));
		snprintf(ret_err, errlen, "%s at %zu", (char *)msg, (size_t)off);
	}
	return code;
}

void procmatch__free(void *re)
{
	pcre2_code_free(re);
}

void *procmatch__context_new(void)
{
	pcre2_match_context *m = pcre2_match_context_create(NULL);

	if (!m)
		return NULL;
	pcre2_set_match_limit(m, PROCMATCH_MATCH_LIMIT);
	pcre2_set_depth_limit(m, PROCMATCH_DEPTH_LIMIT);
	return m;
}

void procmatch__context_free(void *mctx)
{
	pcre2_match_context_free(mctx);
}

int procmatch__match(void *re, void *mctx, const char *subject, const char **ret_groups,
		     int max_groups, int *ret_ngroups, char *store, size_t storelen)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	PCRE2_SIZE *ov;
	size_t used = 0;
	int rc;

	if (!md)
		return -ENOMEM;
	rc = pcre2_match(re, (PCRE2_SPTR)subject, PCRE2_ZERO_TERMINATED, 0, 0, md, mctx);
	if (rc < 0) {
		pcre2_match_data_free(md);
		return 0;
	}
	ov = pcre2_get_ovector_pointer(md);
	if (rc == 0)
		rc = (int)pcre2_get_ovector_count(md);
	if (ret_ngroups)
		*ret_ngroups = 0;
	for (int g = 0; ret_groups && g < rc && g < max_groups; g++) {
		size_t len = ov[2 * g] == PCRE2_UNSET ? 0 : ov[2 * g + 1] - ov[2 * g];

		if (used + len + 1 > storelen)
			break;
		if (len)
			memcpy(store + used, subject + ov[2 * g], len);
		store[used + len] = 0;
		ret_groups[(*ret_ngroups)++] = store + used;
		used += len + 1;
	}
	pcre2_match_data_free(md);
	return 1;
}

ssize_t procmatch__read(int dirfd, const char *path, char *buf, size_t len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n, got = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	n = got;
	close(fd);
	buf[n] = 0;
	return n;
}

int procmatch__cmdline(int dirfd, int pid, char *buf, size_t len, char *argv0, size_t argv0len)
{
	char path[32];
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), "%d/cmdline", pid);
	n = procmatch__read(dirfd, path, buf, len);
	if (n <= 0)
		return -ENOENT; /* a kernel thread, or gone */
	while (n > 0 && buf[n - 1] == 0)
		n--;
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	if (strlen(base) >= argv0len)
		return -ENAMETOOLONG;
	memcpy(argv0, base, strlen(base) + 1);
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
	return 0;
}

int procmatch__comm(int dirfd, int pid, char *buf, size_t len)
{
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "%d/comm", pid);
	n = procmatch__read(dirfd, path, buf, len);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int procmatch__stat(int dirfd, int pid, int32_t *ret_ppid, uint64_t *ret_starttime)
{
	char path[32], buf[1024], *p;
	unsigned long long st;
	int ppid;

	snprintf(path, sizeof(path), "%d/stat", pid);
	if (procmatch__read(dirfd, path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	/* comm may hold spaces and parentheses: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1,
			 " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			 "%*d %*d %llu",
			 &ppid, &st) != 2)
		return -EINVAL;
	if (ret_ppid)
		*ret_ppid = ppid;
	if (ret_starttime)
		*ret_starttime = st;
	return 0;
}
