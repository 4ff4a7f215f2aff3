/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framing of every message between rover processes: a fixed header (length, type, version,
 * descriptor count) and a payload whose size the receiver checks against its own table before
 * it allocates anything. A peer that sends something malformed, unknown or not permitted at
 * that point is cut off; the receiver never tries to resynchronise.
 */
#ifndef ROVER_COMMON_IPC_H
#define ROVER_COMMON_IPC_H

#include <stddef.h>
#include <stdint.h>

#define IPC_VERSION 1
/* The largest frame any peer may send: a flush of 1000 stacks is ~1 MiB. */
#define IPC_MAX_PAYLOAD (4u << 20)
/* A peer that starts a frame must finish it within this time, or it is cut off. */
#define IPC_IO_TIMEOUT_MS 5000

struct ipc_hdr {
	uint32_t len;
	uint16_t type;
	uint8_t version;
	uint8_t nfds;
};

/* What a receiver accepts in one phase: anything not listed ends the peer. */
struct ipc_rule {
	uint16_t type;
	uint32_t min_len;
	uint32_t max_len;
	uint32_t elem_size; /* when non-zero, (len - min_len) must be a multiple of it */
	uint8_t fd;	    /* 1: exactly one descriptor must come with it; 0: none may */
};

struct ipc_msg {
	uint16_t type;
	uint32_t len;
	int fd; /* -1 when none */
	void *buf;
	size_t cap;
};

/* 0 or -errno. fd < 0 sends no descriptor. */
int ipc_send(int sock, uint16_t type, const void *payload, uint32_t len, int fd);

/*
 * Receives one frame checked against rules[0..nrules). Returns 0, -EPIPE when the peer closed
 * cleanly between frames, -EPROTO when the frame breaks the rules, or another -errno. On
 * success msg->buf holds msg->len bytes (reused across calls) and msg->fd any descriptor,
 * which the caller owns.
 */
int ipc_recv(int sock, const struct ipc_rule *rules, size_t nrules, struct ipc_msg *msg);

/* ipc_recv() for a reply: anything other than `type` is -EPROTO. */
int ipc_recv_expect(int sock, const struct ipc_rule *rules, size_t nrules, uint16_t type,
		    struct ipc_msg *msg);

void ipc_msg_release(struct ipc_msg *msg);

/* Applies IPC_IO_TIMEOUT_MS to both directions of sock. */
int ipc_set_timeouts(int sock);

/* Unix stream sockets in a socket directory. */
int ipc_listen(const char *dir, const char *name);
int ipc_connect(const char *dir, const char *name);
/*
 * Binds name in the directory open as dirfd (never through the directory's path, which
 * could be swapped), owned by root and group gid with mode, set before the socket takes
 * connections. The caller must be root with CAP_CHOWN. With IPC_NO_RIGHTS its connections
 * refuse descriptors (SO_PASSRIGHTS 0, inherited by each accepted connection: a sender's
 * SCM_RIGHTS fails with EPERM, nothing is queued), or -ENOPROTOOPT where the kernel has no
 * such option (before Linux 6.16). Listening fd or -errno.
 */
#define IPC_NO_RIGHTS 1u
int ipc_listen_at(int dirfd, const char *name, unsigned gid, unsigned mode, unsigned flags);
/* Whether fd is an open socket (a role checks the connections it inherits). */
int ipc_is_socket(int fd);
/* A connected pair for two peers, both ends O_CLOEXEC. 0 or -errno. */
int ipc_pair(int ret_fds[2]);
/* Accepts one connection; returns fd or -errno, and the peer's uid and pid. */
int ipc_accept(int lsock, uint32_t *ret_uid, int32_t *ret_pid);

/* Fills a fixed-size string field; always NUL-terminated, truncating. */
void ipc_strlcpy(char *dst, const char *src, size_t size);
/* 0 when the fixed field holds a NUL within size, -EPROTO otherwise. */
int ipc_check_str(const char *field, size_t size);

#endif
