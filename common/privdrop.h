/* SPDX-License-Identifier: Apache-2.0 */
/* Dropping to a role's privileges, in a fixed order, and proving it. */
#ifndef ROVER_COMMON_PRIVDROP_H
#define ROVER_COMMON_PRIVDROP_H

#include <stddef.h>
#include <sys/types.h>

#include "policy/policy.h"

/* The user roles run as: `name` when given, else "rover"; -EPERM for root or nobody. */
int privdrop_lookup_user(const char *name, uid_t *ret_uid, gid_t *ret_gid);

/*
 * Becomes uid/gid (when started as root) holding exactly the policy's capabilities in the
 * effective, permitted and bounding sets and none inheritable or ambient, with NoNewPrivs set
 * and ptrace/core dumps refused; then tries to regain root and fails with -EPERM if it can.
 * 0 or -errno; the caller must exit on failure.
 */
int privdrop_apply(const struct role_policy *pol, uid_t uid, gid_t gid);

/* Installs the policy's seccomp filter. 0 or -errno. */
int sandbox_apply(const struct role_policy *pol);

/*
 * Landlock, under the seccomp filter and before it (its calls are not in the roles' tables),
 * and before the role starts a thread (it binds the calling thread and the threads it starts
 * later): no file may be written, made, removed or renamed anywhere but under writable_dirfd
 * (-1: nowhere), whatever the path; no signal to a process outside the role, no abstract Unix
 * socket. 0, -EOPNOTSUPP on a kernel without Landlock, -EPERM when a filter rover runs under
 * refuses its calls (the caller logs either and goes on), or -errno.
 */
int sandbox_landlock(int writable_dirfd);
/* sandbox_landlock for a role: a kernel without Landlock is logged once and tolerated. */
int role_landlock(int writable_dirfd);

#endif
