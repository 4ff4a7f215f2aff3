/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offsets of the kernel structure fields the stack programs read (bpf/credcheck.bpf.h,
 * bpf/python.bpf.h), shared by the worker, which finds them in the kernel's BTF
 * (worker/kbtf.c), and the programs, which take them as read-only data set before load.
 *
 * Not CO-RE: a CO-RE relocation has libbpf parse the kernel's whole BTF at every load (126 000
 * types, about 19 ms and 3000 page faults of the worker here) to place a dozen fields; the
 * worker's scan for them costs a fraction of it. Every field is a byte offset from the start of
 * its structure; the programs read them with bpf_probe_read_kernel.
 */
#ifndef ROVER_COMMON_KOFS_H
#define ROVER_COMMON_KOFS_H

#ifndef __bpf__
#include <stdint.h>
typedef uint32_t kofs_u32;
#else
typedef __u32 kofs_u32;
#endif

/* A field the kernel does not have (thread.fsbase outside x86-64): never read. */
#define KOFS_NONE 0xffffffffu

struct kofs {
	kofs_u32 task_real_cred; /* struct task_struct */
	kofs_u32 task_mm;
	kofs_u32 task_fsbase; /* thread.fsbase, x86-64 only */
	kofs_u32 cred_uid;    /* struct cred: kuid_t / kgid_t, 4 bytes each */
	kofs_u32 cred_euid;
	kofs_u32 cred_suid;
	kofs_u32 cred_gid;
	kofs_u32 cred_egid;
	kofs_u32 cred_sgid;
	kofs_u32 cred_cap_permitted; /* kernel_cap_t: 8 bytes (one u64 since 6.3, two u32 before) */
	kofs_u32 mm_flags;	     /* struct mm_struct: its flags' first word */
	kofs_u32 vma_start;	     /* struct vm_area_struct */
	kofs_u32 vma_pgoff;
	kofs_u32 vma_file;
	kofs_u32 file_inode; /* struct file */
	kofs_u32 inode_size; /* struct inode: i_size */
};

#endif
