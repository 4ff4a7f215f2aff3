/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A client's task (TASK_USER_ONLY) follows its targets' credentials. The launcher let the
 * client profile a process because the client could ptrace it; a target that later gains
 * privilege (an exec of a set-user-ID or file-capability program, a setuid call, a
 * PR_SET_DUMPABLE 0) is one the client could no longer ptrace, and the kernel's own perf code
 * stops at such a change, but a filter by tgid alone would not. So each program, before it
 * records anything of a target thread, asks what ptrace_may_access asks of a reader holding
 * the client's uid and gid and no capability: are the thread's real, effective and saved uid
 * the client's, its real, effective and saved gid the client's, its permitted capabilities
 * none (ptrace wants them a subset of the tracer's, and the client's are none: a
 * file-capability exec under fs.suid_dumpable 1 keeps the uids and the dumpable flag), and
 * its mm dumpable (SUID_DUMP_USER)? A target that fails once is dropped for the rest of the task, counted.
 *
 * What ptrace also allows and this does not: a process in a user namespace the client owns
 * (a rootless container of the client's), whose ids are not the client's own. Such a target
 * passes the launcher's check at start and is dropped at its first event: stricter, never
 * looser. Backend and root tasks leave cred_check 0 and the verifier drops all of this.
 */
#ifndef ROVER_BPF_CREDCHECK_H
#define ROVER_BPF_CREDCHECK_H

#include "bpf/core_fixes.bpf.h"
#include "bpf/kofs.bpf.h"

/* Set by the worker before load for a client's task: the client's uid and gid. */
const volatile __u32 cred_check;
const volatile __u32 cred_uid;
const volatile __u32 cred_gid;

#define ROVER_MMF_DUMPABLE_MASK 3 /* MMF_DUMPABLE_BITS: the mm's low two flag bits */
#define ROVER_SUID_DUMP_USER 1

enum cred_verdict {
	CRED_OK,   /* the client could ptrace this thread: record it */
	CRED_SKIP, /* no mm (a thread past exit_mm): nothing to judge or record */
	CRED_DROP, /* no longer the client's to trace: drop its process */
};

/* The current thread, judged as above. Only called when cred_check is set. */
static __always_inline enum cred_verdict cred_judge(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 c, mm, caps = 0;

	/* A read that fails gives 0, never a client's uid or gid (root's tasks are not checked). */
	if (kread(&mm, sizeof(mm), t, kofs.task_mm) || !mm)
		return CRED_SKIP;
	if (kread(&c, sizeof(c), t, kofs.task_real_cred) || !c)
		return CRED_DROP;
	if (kread32(c, kofs.cred_uid) != cred_uid || kread32(c, kofs.cred_euid) != cred_uid ||
	    kread32(c, kofs.cred_suid) != cred_uid || kread32(c, kofs.cred_gid) != cred_gid ||
	    kread32(c, kofs.cred_egid) != cred_gid || kread32(c, kofs.cred_sgid) != cred_gid)
		return CRED_DROP;
	if ((kread64(mm, kofs.mm_flags) & ROVER_MMF_DUMPABLE_MASK) != ROVER_SUID_DUMP_USER)
		return CRED_DROP;
	/* kernel_cap_t: one u64 since Linux 6.3, two u32 before: 8 bytes either way. */
	if (kread(&caps, sizeof(caps), (void *)c, kofs.cred_cap_permitted) || caps)
		return CRED_DROP;
	return CRED_OK;
}

#endif
