/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Matching processes by a regular expression, one way for every caller: the discovery
 * finders' match_cmd_regex (the supervisor, as the rover user) and `rover profile --name` /
 * `rover watch --name` (the command, before any role starts). PCRE2, compiled as the config's
 * finders always were (UTF, invalid UTF never matching, no \C), matched with the same bounds
 * (command lines are written by any user: a match gives up past PROCMATCH_MATCH_LIMIT steps),
 * against the command line as discovery reads it (arguments joined by spaces).
 */
#ifndef ROVER_COMMON_CONFIG_PROCMATCH_H
#define ROVER_COMMON_CONFIG_PROCMATCH_H

#include <stddef.h>
#include <stdint.h>

#define PROCMATCH_MATCH_LIMIT 100000
#define PROCMATCH_DEPTH_LIMIT 10000
#define PROCMATCH_CMDLINE_LEN 4096

/* The regex compiled (a pcre2_code *), or NULL with its error and offset in ret_err. */
void *procmatch__compile(const char *re, size_t max_len, char *ret_err, size_t errlen);
void procmatch__free(void *re);

/* A match context holding the bounds above (a pcre2_match_context *), or NULL. */
void *procmatch__context_new(void);
void procmatch__context_free(void *mctx);

/*
 * Matches subject against re within mctx's bounds. The match groups, when ret_groups is not
 * NULL: up to max_groups of them copied into store (storelen bytes), each NUL-terminated,
 * pointed to from ret_groups. 1 when it matched, 0 when not (or when it gave up at a bound),
 * -ENOMEM.
 */
int procmatch__match(void *re, void *mctx, const char *subject, const char **ret_groups,
		     int max_groups, int *ret_ngroups, char *store, size_t storelen);

/* A small file under dirfd (a /proc), NUL-terminated: its length, or -errno. */
ssize_t procmatch__read(int dirfd, const char *path, char *buf, size_t len);

/*
 * PID's command line under dirfd with its NULs as spaces, trailing ones dropped; argv0 gets
 * the basename of its first word. 0, -ENOENT for a kernel thread (or one gone), -ENAMETOOLONG.
 */
int procmatch__cmdline(int dirfd, int pid, char *buf, size_t len, char *argv0, size_t argv0len);

/* PID's command name (/proc/PID/comm, its newline dropped). 0 or -errno. */
int procmatch__comm(int dirfd, int pid, char *buf, size_t len);

/* PID's parent and start time (clock ticks after boot) from its stat. 0 or -errno. */
int procmatch__stat(int dirfd, int pid, int32_t *ret_ppid, uint64_t *ret_starttime);

#endif
