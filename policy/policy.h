/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each rover process may hold and call. One table per role, one reason per entry: a
 * reviewer reads the whole privilege of a process here and nowhere else. See policy/README.md.
 */
#ifndef ROVER_POLICY_H
#define ROVER_POLICY_H

#include <stddef.h>

#define SC_ALLOW 0

struct seccomp_entry {
	const char *name; /* syscall name, resolved for the running architecture */
	int action;       /* SC_ALLOW, or a positive errno returned instead of running it */
	const char *why;
	/* Optional condition: only when (arg[argno] & mask) == value; mask 0 means always. */
	unsigned argno;
	unsigned long long mask, value;
};

struct role_policy {
	const char *role;
	const int *caps; /* exactly these in effective, permitted and bounding; nothing else */
	size_t ncaps;
	const struct seccomp_entry *seccomp;
	size_t nseccomp;
	/* A table shared by roles that link the same library (policy/grpc.c), or NULL. */
	const struct seccomp_entry *shared;
	const size_t *nshared;
	/* A denylist (the launcher's, inherited by all it starts): calls not listed run. */
	int default_allow;
};

/* What the gRPC C core of an OAP client calls (supervisor, shipper). */
extern const struct seccomp_entry grpc_client_calls[];
extern const size_t ngrpc_client_calls;

extern const struct role_policy supervisor_policy;
extern const struct role_policy worker_policy;
extern const struct role_policy shipper_policy;
extern const struct role_policy launcher_policy;

#endif
