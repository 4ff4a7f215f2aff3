// SPDX-License-Identifier: Apache-2.0
/* Framing shared by every rover process; see ipc.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/ipc.h"

static int write_full(int sock, struct msghdr *mh)
{
	/* Only the first sendmsg carries the descriptor; later ones finish the bytes. */
	while (mh->msg_iovlen > 0) {
		ssize_t n = sendmsg(sock, mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		mh->msg_control = NULL;
		mh->msg_controllen = 0;
		while (n > 0 && mh->msg_iovlen > 0) {
			struct iovec *iov = mh->msg_iov;

			if ((size_t)n >= iov->iov_len) {
				n -= (ssize_t)iov->iov_len;
				mh->msg_iov++;
				mh->msg_iovlen--;
			} else {
				iov->iov_base = (char *)iov->iov_base + n;
				iov->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

int ipc_send(int sock, uint16_t type, const void *payload, uint32_t len, int fd)
{
	struct ipc_hdr hdr = { .len = len, .type = type, .version = IPC_VERSION, .nfds = fd >= 0 };
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	if (len > IPC_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return write_full(sock, &mh);
}

/* Reads exactly len bytes; the first read may also collect descriptors. */
static int read_full(int sock, void *buf, size_t len, int *fds, int *nfds, int maxfds, int first)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = (char *)buf + got, .iov_len = len - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (fds) {
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof(ctl.buf);
		}
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		if (n == 0)
			return (first && got == 0) ? -EPIPE : -EPROTO;
		if (fds) {
			struct cmsghdr *c;

			for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
				size_t k, cnt;

				if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
					continue;
				cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (k = 0; k < cnt; k++) {
					int d;

					memcpy(&d, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
					if (*nfds < maxfds)
						fds[(*nfds)++] = d;
					else
						close(d);
				}
			}
			if (mh.msg_flags & MSG_CTRUNC)
				*nfds = maxfds + 1; /* more than anyone may send: rejected below */
		}
		got += (size_t)n;
	}
	return 0;
}

static void close_fds(int *fds, int nfds)
{
	for (int i = 0; i < nfds && i < 4; i++)
		close(fds[i]);
}

int ipc_recv(int sock, const struct ipc_rule *rules, size_t nrules, struct ipc_msg *msg)
{
	const struct ipc_rule *rule = NULL;
	struct ipc_hdr hdr;
	int fds[4], nfds = 0, err;

	msg->fd = -1;
	msg->len = 0;
	err = read_full(sock, &hdr, sizeof(hdr), fds, &nfds, 4, 1);
	if (err)
		goto fail;
	err = -EPROTO;
	if (hdr.version != IPC_VERSION || hdr.len > IPC_MAX_PAYLOAD)
		goto fail;
	for (size_t i = 0; i < nrules; i++) {
		if (rules[i].type == hdr.type) {
			rule = &rules[i];
			break;
		}
	}
	if (!rule || hdr.len < rule->min_len || hdr.len > rule->max_len)
		goto fail;
	if (rule->elem_size && (hdr.len - rule->min_len) % rule->elem_size)
		goto fail;
	if (hdr.len > msg->cap) {
		void *nb = realloc(msg->buf, hdr.len);

		if (!nb) {
			err = -ENOMEM;
			goto fail;
		}
		msg->buf = nb;
		msg->cap = hdr.len;
	}
	err = read_full(sock, msg->buf, hdr.len, NULL, NULL, 0, 0);
	if (err)
		goto fail;
	err = -EPROTO;
	if (nfds != hdr.nfds || nfds != (rule->fd ? 1 : 0))
		goto fail;
	msg->type = hdr.type;
	msg->len = hdr.len;
	msg->fd = nfds ? fds[0] : -1;
	return 0;
fail:
	close_fds(fds, nfds);
	return err;
}

int ipc_recv_expect(int sock, const struct ipc_rule *rules, size_t nrules, uint16_t type,
		    struct ipc_msg *msg)
{
	int err = ipc_recv(sock, rules, nrules, msg);

	if (err)
		return err;
	if (msg->type != type) {
		if (msg->fd >= 0)
			close(msg->fd);
		msg->fd = -1;
		return -EPROTO;
	}
	return 0;
}

void ipc_msg_release(struct ipc_msg *msg)
{
	if (msg->fd >= 0)
		close(msg->fd);
	free(msg->buf);
	msg->buf = NULL;
	msg->cap = 0;
	msg->fd = -1;
}

int ipc_set_timeouts(int sock)
{
	struct timeval tv = { .tv_sec = IPC_IO_TIMEOUT_MS / 1000,
			      .tv_usec = (IPC_IO_TIMEOUT_MS % 1000) * 1000 };

	if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

static int sockaddr_for(const char *dir, const char *name, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, name) >=
	    sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

int ipc_listen(const char *dir, const char *name)
{
	struct sockaddr_un sa;
	int fd, err;

	err = sockaddr_for(dir, name, &sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83 /* Linux 6.16 */
#endif

int ipc_listen_at(int dirfd, const char *name, unsigned gid, unsigned mode, unsigned flags)
{
	char dir[64];
	mode_t old;
	int fd, err, no = 0;

	snprintf(dir, sizeof(dir), "/proc/self/fd/%d", dirfd);
	/* Root's alone from bind() until its group and mode are set: no connection from
	 * anyone else can slip in before. */
	old = umask(0177);
	fd = ipc_listen(dir, name);
	umask(old);
	if (fd < 0)
		return fd;
	if ((flags & IPC_NO_RIGHTS) && setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &no, sizeof(no))) {
		err = errno == EINVAL ? -ENOPROTOOPT : -errno;
		close(fd);
		return err;
	}
	/* Root's, or (a launcher running as the roles' user) its own: the owner stays. */
	if (fchownat(dirfd, name, geteuid() ? (uid_t)-1 : 0, (gid_t)gid, AT_SYMLINK_NOFOLLOW) ||
	    fchmodat(dirfd, name, (mode_t)mode, 0)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ipc_is_socket(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISSOCK(st.st_mode);
}

int ipc_pair(int ret_fds[2])
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	ret_fds[0] = sv[0];
	ret_fds[1] = sv[1];
	return 0;
}

int ipc_connect(const char *dir, const char *name)
{
	struct sockaddr_un sa;
	int fd, err;

	err = sockaddr_for(dir, name, &sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	err = ipc_set_timeouts(fd);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int ipc_accept(int lsock, uint32_t *ret_uid, int32_t *ret_pid)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd, err;

	fd = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || ipc_set_timeouts(fd)) {
		err = -errno;
		close(fd);
		return err;
	}
	*ret_uid = cred.uid;
	*ret_pid = cred.pid;
	return fd;
}

void ipc_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n;

	if (!size)
		return;
	n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int ipc_check_str(const char *field, size_t size)
{
	return memchr(field, '\0', size) ? 0 : -EPROTO;
}
