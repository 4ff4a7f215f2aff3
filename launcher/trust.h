/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directories that only root (or one trusted user) can change, opened without following a
 * link: the socket directory the launcher makes, and the one a client trusts with its output.
 * Runs in the launcher and in `rover profile --connect` clients.
 */
#ifndef ROVER_LAUNCHER_TRUST_H
#define ROVER_LAUNCHER_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Opens path, absolute, as a directory: every component reached from / with O_NOFOLLOW, each
 * owned by root or by `also` and writable by nobody else (or sticky, as /tmp: others cannot
 * rename what is not theirs in it); the last one owned by root, `also` or `also_last` (pass
 * `also` again for none) and, unless create
 * (the launcher then sets its mode itself), writable by nobody else at all. create: the last
 * component is made (0700) when missing. A descriptor (O_CLOEXEC), or -errno; -EPERM names the
 * component at fault in ret_bad.
 */
int trust_dir(const char *path, uid_t also, uid_t also_last, int create, char *ret_bad,
	      size_t badlen);

#endif
