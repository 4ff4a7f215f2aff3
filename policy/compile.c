// SPDX-License-Identifier: Apache-2.0
/* Build time and tests only: see compile.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/compile.h"

int policy_compile(const struct role_policy *pol, scmp_filter_ctx *ret)
{
	size_t nshared = pol->nshared ? *pol->nshared : 0;
	scmp_filter_ctx ctx;
	int err;

#if ROVER_DEBUG
	ctx = seccomp_init(pol->default_allow ? SCMP_ACT_ALLOW : SCMP_ACT_TRAP);
#else
	ctx = seccomp_init(pol->default_allow ? SCMP_ACT_ALLOW : SCMP_ACT_KILL_PROCESS);
#endif
	if (!ctx)
		return -ENOMEM;
	/* Threads a library started before the filter (gRPC's) get it too. */
	err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	for (size_t i = 0; !err && i < pol->nseccomp + nshared; i++) {
		const struct seccomp_entry *e = i < pol->nseccomp ? &pol->seccomp[i]
								  : &pol->shared[i - pol->nseccomp];
		int nr = seccomp_syscall_resolve_name(e->name);
		uint32_t action = e->action == SC_ALLOW ? SCMP_ACT_ALLOW
							: SCMP_ACT_ERRNO((unsigned)e->action);
		struct scmp_arg_cmp cmp[2];
		unsigned ncmp = 0;

		if (nr == __NR_SCMP_ERROR)
			continue; /* not a call of this architecture */
		if (!e->mask && e->value == SC_ELSE)
			cmp[ncmp++] = SCMP_CMP(e->argno, SCMP_CMP_GE, 0);
		else if (e->mask)
			cmp[ncmp++] = SCMP_CMP(e->argno, SCMP_CMP_MASKED_EQ, e->mask, e->value);
		if (e->mask2)
			cmp[ncmp++] = SCMP_CMP(e->argno2, SCMP_CMP_MASKED_EQ, e->mask2, e->value2);
		err = seccomp_rule_add_array(ctx, action, nr, ncmp, cmp);
		if (err == -EEXIST)
			err = 0; /* listed by the role and by a shared table */
	}
	if (err) {
		seccomp_release(ctx);
		return err;
	}
	*ret = ctx;
	return 0;
}

struct sock_filter *policy_export(const struct role_policy *pol, size_t *ret_n)
{
	struct sock_filter *insns = NULL;
	scmp_filter_ctx ctx;
	off_t len;
	int fd, err = policy_compile(pol, &ctx);

	if (err) {
		errno = -err;
		return NULL;
	}
	fd = memfd_create("filter", MFD_CLOEXEC);
	err = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (!err && ((len = lseek(fd, 0, SEEK_END)) <= 0 || len % sizeof(*insns)))
		err = -EINVAL;
	if (!err && !(insns = malloc((size_t)len)))
		err = -ENOMEM;
	if (!err && pread(fd, insns, (size_t)len, 0) != len)
		err = -EIO;
	if (fd >= 0)
		close(fd);
	if (err) {
		free(insns);
		errno = -err;
		return NULL;
	}
	*ret_n = (size_t)len / sizeof(*insns);
	return insns;
}
