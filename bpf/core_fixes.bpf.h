/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel structures that changed shape across the kernels rover runs on, one shim each with
 * what changed; CO-RE picks the layout of the running kernel at load time. And what differs
 * between the architectures rover builds for (x86-64 and arm64, __TARGET_ARCH_* from the
 * Makefile): registers and system call numbers.
 */
#ifndef ROVER_BPF_CORE_FIXES_H
#define ROVER_BPF_CORE_FIXES_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

/*
 * The system calls NETWORK follows, X(number, kind of bpf/net/call.bpf.h): the numbers of
 * arch/x86/entry/syscalls/syscall_64.tbl and of include/uapi/asm-generic/unistd.h (arm64).
 * Elsewhere none is known and NETWORK's system call hooks see no call.
 */
/* clang-format off */
#if defined(__TARGET_ARCH_x86)
#define NET_SYSCALLS(X)                                                                        \
	X(0, K_READ) X(1, K_WRITE) X(3, K_CLOSE) X(19, K_READV) X(20, K_WRITEV)                \
	X(40, K_SENDFILE) X(42, K_CONNECT) X(43, K_ACCEPT) X(44, K_SENDTO) X(45, K_RECVFROM)   \
	X(46, K_SENDMSG) X(47, K_RECVMSG) X(288, K_ACCEPT) X(299, K_RECVMMSG)                  \
	X(307, K_SENDMMSG)
#elif defined(__TARGET_ARCH_arm64)
#define NET_SYSCALLS(X)                                                                        \
	X(63, K_READ) X(64, K_WRITE) X(57, K_CLOSE) X(65, K_READV) X(66, K_WRITEV)             \
	X(71, K_SENDFILE) X(203, K_CONNECT) X(202, K_ACCEPT) X(206, K_SENDTO)                  \
	X(207, K_RECVFROM) X(211, K_SENDMSG) X(212, K_RECVMSG) X(242, K_ACCEPT)                \
	X(243, K_RECVMMSG) X(269, K_SENDMMSG)
#else
#define NET_SYSCALLS(X)
#endif
/* clang-format on */

/* The system call number in a task's saved user registers, read through CO-RE. */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ((struct user_pt_regs *)regs, regs[8]);
#else
	return -1;
#endif
}

/*
 * The system call's number and arguments, from the registers bpf_task_pt_regs() gives: a BTF
 * pointer, read with plain loads (BPF_CORE_READ is a bpf_probe_read_kernel() call each, five
 * a call). arm64 keeps the first argument in orig_x0 (x0 takes the return value).
 */
#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(r) ((long)(r)->orig_ax)
#define SYSCALL_ARG1(r) ((r)->di)
#define SYSCALL_ARG2(r) ((r)->si)
#define SYSCALL_ARG3(r) ((r)->dx)
#define SYSCALL_ARG5(r) ((r)->r8)
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(r) ((long)(r)->regs[8])
#define SYSCALL_ARG1(r) ((r)->orig_x0)
#define SYSCALL_ARG2(r) ((r)->regs[1])
#define SYSCALL_ARG3(r) ((r)->regs[2])
#define SYSCALL_ARG5(r) ((r)->regs[4])
#else
#define SYSCALL_NR(r) syscall_nr(r)
#define SYSCALL_ARG1(r) PT_REGS_PARM1_CORE_SYSCALL(r)
#define SYSCALL_ARG2(r) PT_REGS_PARM2_CORE_SYSCALL(r)
#define SYSCALL_ARG3(r) PT_REGS_PARM3_CORE_SYSCALL(r)
#define SYSCALL_ARG5(r) PT_REGS_PARM5_CORE_SYSCALL(r)
#endif

/*
 * x86-64 registers as struct pt_regs lays them out: the layout perf's sample registers and
 * ptrace expose to user space (uapi asm/ptrace.h), so it does not drift between kernels. Read
 * at these fixed offsets (this struct, declared after vmlinux.h, has no preserve_access_index)
 * the ON_CPU program carries no CO-RE relocation, and libbpf does not parse the kernel's BTF
 * (5.5 MB here, ~11 ms of every worker's start). The verifier still checks each access
 * against the kernel's own struct pt_regs.
 */
struct rover_pt_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax;
	__u64 ip, cs, flags, sp, ss;
};

/*
 * Go's register ABI (Go >= 1.17) on x86-64: the goroutine's g in R14, integer arguments and
 * results in RAX, RBX, RCX, ... Go's TLS probe follows x86-64 only; elsewhere GO_REGS_G is not
 * defined and the probe does nothing.
 */
#if defined(__TARGET_ARCH_x86)
#define GO_REGS_G(r) ((r)->r14)
#define GO_REGS_ARG1(r) ((r)->ax)
#define GO_REGS_ARG2(r) ((r)->bx)
#define GO_REGS_ARG3(r) ((r)->cx)
#define GO_REGS_RET1(r) ((r)->ax)
#endif

#endif
