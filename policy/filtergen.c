// SPDX-License-Identifier: Apache-2.0
/*
 * Build time: writes every role's seccomp filter, compiled by libseccomp from its table
 * (policy/compile.c), as C the roles link ($(OUT)/policy/filters.c). Compiling at each start
 * cost each role 1.5 to 2.5 ms of CPU (the worker twice) and the map and relocations of
 * libseccomp; the roles now hand the kernel the finished program (common/privdrop.c,
 * sandbox_apply). tests/unit/test_policy_compiled.c checks the written programs against libseccomp's.
 *
 * usage: filtergen > filters.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/compile.h"

static const struct {
	const struct role_policy *pol;
	const char *name;
} policies[] = {
	{ &launcher_policy, "launcher_policy" },
	{ &supervisor_policy, "supervisor_policy" },
	{ &worker_policy, "worker_policy" },
	{ &worker_attached_policy, "worker_attached_policy" },
	{ &worker_attached_norun_policy, "worker_attached_norun_policy" },
	{ &worker_attached_net_policy, "worker_attached_net_policy" },
	{ &shipper_policy, "shipper_policy" },
	{ &shipper_nospool_policy, "shipper_nospool_policy" },
};

int main(void)
{
	printf("/* Written at build time by policy/filtergen from the tables in policy/: do not edit. */\n"
	       "#include <linux/filter.h>\n");
	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
		size_t n;
		struct sock_filter *f = policy_export(policies[p].pol, &n);

		if (!f) {
			fprintf(stderr, "filtergen: %s: %s\n", policies[p].name, strerror(errno));
			return 1;
		}
		printf("\nstatic const struct sock_filter %s_insns[%zu] = {\n", policies[p].name,
		       n);
		for (size_t i = 0; i < n; i++)
			printf("\t{ 0x%04x, %u, %u, 0x%08x },\n", f[i].code, f[i].jt, f[i].jf,
			       f[i].k);
		printf("};\nconst struct sock_fprog rover_filter_%s = {\n"
		       "\t.len = %zu,\n\t.filter = (struct sock_filter *)%s_insns,\n};\n",
		       policies[p].name, n, policies[p].name);
		free(f);
	}
	return fflush(stdout) ? 1 : 0;
}
