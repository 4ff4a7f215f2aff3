/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each rover process may hold and call. One table per role, one reason per entry: a
 * reviewer reads the whole privilege of a process here and nowhere else. See policy/README.md.
 */
#ifndef ROVER_POLICY_H
#define ROVER_POLICY_H

#include <linux/filter.h>
#include <stddef.h>

#define SC_ALLOW 0

/*
 * With mask 0: the entry applies to every value of arg[argno] that no other entry of the same
 * call matches (ioctl: the requests not listed get an errno, not a kill). It is built as
 * "arg >= 0", which libseccomp tests after the masked comparisons of that argument
 * (tests/security/test_seccomp.c proves the order).
 */
#define SC_ELSE 0xffffffffffffffffULL
/* An int or unsigned int argument: the kernel ignores the upper half of its register. */
#define SC_INT 0xffffffffULL
/* The type bits of socket()'s second argument, without SOCK_CLOEXEC and SOCK_NONBLOCK. */
#define SC_SOCK_TYPE 0xfULL
/*
 * The shipper's spool directory, moved to this descriptor number before the filter
 * (shipper/output/spool.c, spool_opts.fixed_dirfd): its policy allows writing opens, renames and
 * unlinks relative to this descriptor only.
 */
#define SPOOL_DIR_FD 100

struct seccomp_entry {
	const char *name; /* syscall name, resolved for the running architecture */
	int action;	  /* SC_ALLOW, or a positive errno returned instead of running it */
	const char *why;
	/* Optional condition: only when (arg[argno] & mask) == value; mask 0 means always. */
	unsigned argno;
	unsigned long long mask, value;
	/* Optional second condition, and-ed with the first: (arg[argno2] & mask2) == value2. */
	unsigned argno2;
	unsigned long long mask2, value2;
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
	/* The filter the tables above make, compiled at build time (below); NULL: none. */
	const struct sock_fprog *compiled;
};

/*
 * Each policy's seccomp program, written at build time by policy/filtergen.c (libseccomp,
 * from the tables) into $(OUT)/policy/filters.c, which every binary that applies a policy
 * links. Weak: the generator links the tables without them (NULL there).
 */
#define POLICY_COMPILED(name) \
	extern const struct sock_fprog rover_filter_##name __attribute__((weak))
POLICY_COMPILED(launcher_policy);
POLICY_COMPILED(supervisor_policy);
POLICY_COMPILED(worker_policy);
POLICY_COMPILED(worker_attached_policy);
POLICY_COMPILED(worker_attached_norun_policy);
POLICY_COMPILED(worker_attached_net_policy);
POLICY_COMPILED(shipper_policy);
POLICY_COMPILED(shipper_nospool_policy);

/* What the gRPC C core of an OAP client calls (supervisor, shipper). */
extern const struct seccomp_entry grpc_client_calls[];
extern const size_t ngrpc_client_calls;

extern const struct role_policy supervisor_policy;
extern const struct role_policy worker_policy;
/*
 * The worker once its programs are loaded and attached (worker/main.c): stacked on
 * worker_policy, it leaves bpf() the map commands of the drain loop and BPF_PROG_RUN (the
 * kernel-frame namer) only, and no perf_event_open or open.
 */
extern const struct role_policy worker_attached_policy;
/* The same without BPF_PROG_RUN: a worker without the namer (OFF_CPU on raw_tp). */
extern const struct role_policy worker_attached_norun_policy;
/* NETWORK tasks: also BPF_LINK_CREATE and pread64 (TLS libraries found as the task runs). */
extern const struct role_policy worker_attached_net_policy;
/* The shipper with a spool directory at SPOOL_DIR_FD, and without one (no writing open). */
extern const struct role_policy shipper_policy;
extern const struct role_policy shipper_nospool_policy;
extern const struct role_policy launcher_policy;

#endif
