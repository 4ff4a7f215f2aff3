/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A role_policy turned into a seccomp filter by libseccomp. Runs at build time only
 * (policy/filtergen.c writes each policy's filter into the binaries) and in tests; no role
 * links libseccomp.
 */
#ifndef ROVER_POLICY_COMPILE_H
#define ROVER_POLICY_COMPILE_H

#include <linux/filter.h>
#include <seccomp.h>
#include <stddef.h>

#include "policy/policy.h"

/*
 * The policy's filter: a denylist (default_allow) or an allowlist whose default kills the
 * process (ROVER_DEBUG: traps, so that the role can name the call), synchronised to every
 * thread at load. 0 or -errno; *ret for seccomp_release.
 */
int policy_compile(const struct role_policy *pol, scmp_filter_ctx *ret);

/* The policy's program as libseccomp exports it, *ret_n instructions (free it); NULL, errno. */
struct sock_filter *policy_export(const struct role_policy *pol, size_t *ret_n);

#endif
