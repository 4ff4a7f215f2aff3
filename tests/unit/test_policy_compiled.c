// SPDX-License-Identifier: Apache-2.0
/*
 * The seccomp programs the roles load were compiled at build time (policy/filtergen.c,
 * $(OUT)/policy/filters.c): each must be, instruction for instruction, what libseccomp makes
 * of its policy's table now. A table edited without the program rebuilt, or a program edited
 * by hand, fails here; the security suite attacks the loaded programs themselves.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/privdrop.h"
#include "policy/compile.h"

static void expect_same(const struct role_policy *pol, const char *name)
{
	size_t n;
	struct sock_filter *now = policy_export(pol, &n);

	cr_assert_not_null(pol->compiled, "%s: no compiled program linked", name);
	cr_assert_not_null(now, "%s: %s", name, strerror(errno));
	cr_expect_eq(n, pol->compiled->len, "%s: %zu instructions from the table, %u compiled",
		     name, n, pol->compiled->len);
	for (size_t i = 0; i < n && n == pol->compiled->len; i++)
		cr_expect(!memcmp(&now[i], &pol->compiled->filter[i], sizeof(*now)),
			  "%s: instruction %zu differs", name, i);
	free(now);
}

Test(policy_compiled, every_program_is_what_its_table_compiles_to)
{
	expect_same(&launcher_policy, "launcher");
	expect_same(&supervisor_policy, "supervisor");
	expect_same(&worker_policy, "worker");
	expect_same(&worker_attached_policy, "attached worker");
	expect_same(&worker_attached_norun_policy, "attached worker running no program");
	expect_same(&worker_attached_net_policy, "attached NETWORK worker");
	expect_same(&shipper_policy, "shipper");
	expect_same(&shipper_nospool_policy, "shipper without spool");
}

/* A policy without its program (a binary that did not link filters.o) is refused, not skipped. */
Test(policy_compiled, a_policy_without_its_program_is_refused)
{
	struct role_policy pol = supervisor_policy;

	pol.compiled = NULL;
	cr_expect_eq(sandbox_apply(&pol), -ENOENT);
}
