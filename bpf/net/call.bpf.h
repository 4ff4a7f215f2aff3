/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A call a target makes on a socket: its kind, the arguments rover reads, and the user
 * buffers its payload is in.
 */
#ifndef ROVER_BPF_NET_CALL_H
#define ROVER_BPF_NET_CALL_H

#include "common/netrec.h"
#include "bpf/core_fixes.bpf.h"

enum kind {
	K_NONE,
	K_READ,
	K_WRITE,
	K_READV,
	K_WRITEV,
	K_SENDTO,
	K_RECVFROM,
	K_SENDMSG,
	K_RECVMSG,
	K_SENDMMSG,
	K_RECVMMSG,
	K_SENDFILE,
	K_CONNECT,
	K_ACCEPT,
	K_CLOSE,
};

struct args {
	__u64 ts;
	__u64 a0, a1, a2;
	__u64 a4; /* sendto's destination address */
	__u32 kind;
	__u32 pad;
};

/* The kind of system call id, from the architecture's table (bpf/core_fixes.bpf.h). */
#define KIND_CASE(nr, kind) \
	case nr:            \
		return kind;

static __always_inline __u32 kind_of(long id)
{
	switch (id) {
		NET_SYSCALLS(KIND_CASE)
	}
	return K_NONE;
}

static __always_inline __u8 fn_of(__u32 kind)
{
	/* clang-format off */
	switch (kind) {
	case K_READ: return NET_FN_READ;
	case K_WRITE: return NET_FN_WRITE;
	case K_READV: return NET_FN_READV;
	case K_WRITEV: return NET_FN_WRITEV;
	case K_SENDTO: return NET_FN_SENDTO;
	case K_RECVFROM: return NET_FN_RECVFROM;
	case K_SENDMSG: return NET_FN_SENDMSG;
	case K_RECVMSG: return NET_FN_RECVMSG;
	case K_SENDMMSG: return NET_FN_SENDMMSG;
	case K_RECVMMSG: return NET_FN_RECVMMSG;
	case K_SENDFILE: return NET_FN_SENDFILE;
	}
	/* clang-format on */
	return 0;
}

static __always_inline __u32 dir_of(__u32 kind)
{
	return kind == K_WRITE || kind == K_WRITEV || kind == K_SENDTO || kind == K_SENDMSG ||
			       kind == K_SENDMMSG || kind == K_SENDFILE
		       ? NET_DIR_EGRESS
		       : NET_DIR_INGRESS;
}

/* The first user buffer of a call and how many iovecs follow it. */
struct bufs {
	__u64 base; /* a plain buffer, or NULL */
	__u64 iov;  /* struct iovec array */
	__u32 iovcnt;
};

static __always_inline int bufs_of(const struct args *a, struct bufs *b)
{
	struct user_msghdr msg;
	struct mmsghdr mm;

	b->base = 0;
	b->iov = 0;
	b->iovcnt = 0;
	switch (a->kind) {
	case K_READ:
	case K_WRITE:
	case K_SENDTO:
	case K_RECVFROM:
		b->base = a->a1;
		return 0;
	case K_READV:
	case K_WRITEV:
		b->iov = a->a1;
		b->iovcnt = a->a2;
		return 0;
	case K_SENDMSG:
	case K_RECVMSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a->a1))
			return -1;
		b->iov = (__u64)msg.msg_iov;
		b->iovcnt = msg.msg_iovlen;
		return 0;
	case K_SENDMMSG:
	case K_RECVMMSG:
		if (bpf_probe_read_user(&mm, sizeof(mm), (void *)a->a1))
			return -1;
		b->iov = (__u64)mm.msg_hdr.msg_iov;
		b->iovcnt = mm.msg_hdr.msg_iovlen;
		return 0;
	}
	return -1;
}

#define MAX_IOV 4

/* Bytes moved by a sendmmsg/recvmmsg that handled n messages (the first MAX_IOV counted). */
static __always_inline __u64 mmsg_bytes(__u64 vec, long n)
{
	__u64 total = 0;

	for (int i = 0; i < MAX_IOV; i++) {
		struct mmsghdr mm;

		if (i >= n)
			break;
		if (bpf_probe_read_user(&mm, sizeof(mm), (void *)(vec + i * sizeof(mm))))
			break;
		total += mm.msg_len;
	}
	return total;
}

#endif
