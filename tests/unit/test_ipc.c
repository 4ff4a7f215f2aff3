// SPDX-License-Identifier: Apache-2.0
/*
 * common/ipc.c over real AF_UNIX stream socketpairs (frames, limits, descriptors, peers that
 * close or stall), and the shipper's checks of worker content in shipper/task.c. Frames that
 * break the rules are written by hand (raw header + SCM_RIGHTS), as a hostile peer would.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "shipper/stacks/knames.h"
#include "shipper/output/profile.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/task.h"

#define NRULES(r) (sizeof(r) / sizeof((r)[0]))
#define T_DATA 7
#define T_FD 8

/* Payloads of 8 to 64 bytes in steps of 4, and one that must carry a descriptor. */
static const struct ipc_rule rules[] = {
	{ T_DATA, 8, 64, 4, 0 },
	{ T_FD, 4, 4, 0, 1 },
};

static void pair(int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0, "socketpair: %s",
		     strerror(errno));
}

/* Descriptors open in this process (the directory's own one included, every time). */
static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "opendir /proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int tmp_fd(void)
{
	int fd = memfd_create("rover-test-ipc", MFD_CLOEXEC);

	cr_assert_geq(fd, 0, "memfd_create: %s", strerror(errno));
	return fd;
}

/* The task's output into its out_fd, as the shipper renders it. 0 or -errno. */
static int write_out(struct ship_task *t, struct msg_output_written *w)
{
	FILE *f = fdopen(dup(t->out_fd), "w");
	int err;

	if (!f)
		return -errno;
	err = ship_task__write(t, f, w);
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* One sendmsg of hdr + payload with nfds descriptors attached, as any peer could send it. */
static void send_raw(int sock, const struct ipc_hdr *hdr, const void *payload, size_t len,
		     const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = {
		{ .iov_base = (void *)hdr, .iov_len = hdr ? sizeof(*hdr) : 0 },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	cr_assert_leq(nfds, 8);
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	cr_assert_eq(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t)(iov[0].iov_len + len),
		     "sendmsg: %s", strerror(errno));
}

static struct ipc_hdr hdr_of(uint16_t type, uint32_t len, uint8_t nfds)
{
	return (struct ipc_hdr){ .len = len, .type = type, .version = IPC_VERSION, .nfds = nfds };
}

Test(ipc, roundtrip_without_fd)
{
	struct ipc_msg m = { .fd = -1 };
	char payload[12] = "hello rover";
	int sv[2];

	pair(sv);
	cr_assert_eq(ipc_send(sv[0], T_DATA, payload, sizeof(payload), -1), 0);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(m.type, T_DATA);
	cr_assert_eq(m.len, sizeof(payload));
	cr_assert_eq(m.fd, -1);
	cr_assert_arr_eq(m.buf, payload, sizeof(payload));

	/* A smaller frame reuses the buffer. */
	cr_assert_eq(ipc_send(sv[0], T_DATA, "abcdefgh", 8, -1), 0);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(m.len, 8);
	cr_assert_eq(m.cap, sizeof(payload));
	cr_assert_arr_eq(m.buf, "abcdefgh", 8);
	ipc_msg_release(&m);
	cr_assert_null(m.buf);
	cr_assert_eq(m.cap, 0);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, roundtrip_empty_payload)
{
	static const struct ipc_rule empty[] = { { MSG_TASK_STOP, 0, 0, 0, 0 } };
	struct ipc_msg m = { .fd = -1 };
	int sv[2];

	pair(sv);
	cr_assert_eq(ipc_send(sv[0], MSG_TASK_STOP, NULL, 0, -1), 0);
	cr_assert_eq(ipc_recv_expect(sv[1], empty, 1, MSG_TASK_STOP, &m), 0);
	cr_assert_eq(m.len, 0);
	cr_assert_eq(m.fd, -1);
	ipc_msg_release(&m);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, roundtrip_with_fd)
{
	struct ipc_msg m = { .fd = -1 };
	struct stat a, b;
	uint32_t v = 0xdeadbeef;
	int sv[2], fd = tmp_fd(), flags;

	pair(sv);
	cr_assert_eq(ipc_send(sv[0], T_FD, &v, sizeof(v), fd), 0);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(m.type, T_FD);
	cr_assert_eq(m.len, sizeof(v));
	cr_assert_eq(*(uint32_t *)m.buf, v);
	cr_assert_geq(m.fd, 0);
	cr_assert_neq(m.fd, fd);
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(fstat(m.fd, &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino, "the received descriptor is another file");
	cr_assert_eq(a.st_dev, b.st_dev);
	flags = fcntl(m.fd, F_GETFD);
	cr_assert(flags >= 0 && (flags & FD_CLOEXEC), "received descriptor without O_CLOEXEC");
	/* Both name one open file description: a write through one shows through the other. */
	cr_assert_eq(write(fd, "x", 1), 1);
	cr_assert_eq(lseek(m.fd, 0, SEEK_CUR), 1);
	ipc_msg_release(&m);
	cr_assert_eq(m.fd, -1);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, two_frames_in_one_write)
{
	struct ipc_msg m = { .fd = -1 };
	unsigned char both[2 * sizeof(struct ipc_hdr) + 8 + 12];
	struct ipc_hdr h1 = hdr_of(T_DATA, 8, 0), h2 = hdr_of(T_DATA, 12, 0);
	int sv[2];

	memcpy(both, &h1, sizeof(h1));
	memset(both + sizeof(h1), 'a', 8);
	memcpy(both + sizeof(h1) + 8, &h2, sizeof(h2));
	memset(both + 2 * sizeof(h1) + 8, 'b', 12);
	pair(sv);
	cr_assert_eq(write(sv[0], both, sizeof(both)), (ssize_t)sizeof(both));
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(m.len, 8);
	cr_assert_eq(((char *)m.buf)[7], 'a');
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(m.len, 12);
	cr_assert_eq(((char *)m.buf)[0], 'b');
	cr_assert_eq(((char *)m.buf)[11], 'b');
	ipc_msg_release(&m);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, header_over_max_payload_rejected_before_allocation)
{
	static const struct ipc_rule anything[] = { { T_DATA, 0, UINT32_MAX, 0, 0 } };
	struct ipc_msg m = { .fd = -1 };
	struct ipc_hdr h = hdr_of(T_DATA, IPC_MAX_PAYLOAD + 1, 1);
	int sv[2], fd = tmp_fd(), before;

	pair(sv);
	send_raw(sv[0], &h, NULL, 0, &fd, 1);
	before = fd_count();
	cr_assert_eq(ipc_recv(sv[1], anything, 1, &m), -EPROTO);
	cr_assert_eq(m.cap, 0, "allocated %zu bytes for a frame over the limit", m.cap);
	cr_assert_null(m.buf);
	cr_assert_eq(m.fd, -1);
	cr_assert_eq(fd_count(), before, "the descriptor of a rejected frame was kept");

	h = hdr_of(T_DATA, UINT32_MAX, 0);
	send_raw(sv[0], &h, NULL, 0, NULL, 0);
	cr_assert_eq(ipc_recv(sv[1], anything, 1, &m), -EPROTO);
	cr_assert_eq(m.cap, 0);
	ipc_msg_release(&m);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

/* A frame that breaks the rules: -EPROTO, nothing handed out, every descriptor closed. */
struct bad_frame {
	struct ipc_hdr hdr;
	uint32_t send_len; /* payload bytes actually sent */
	int nfds;	   /* descriptors attached to the frame */
};

static void expect_rejected(const struct bad_frame *bf)
{
	struct ipc_msg m = { .fd = -1 };
	unsigned char payload[128] = { 0 };
	int sv[2], fds[8], before;

	cr_assert_leq(bf->send_len, sizeof(payload));
	for (int i = 0; i < bf->nfds; i++)
		fds[i] = tmp_fd();
	pair(sv);
	send_raw(sv[0], &bf->hdr, payload, bf->send_len, fds, bf->nfds);
	before = fd_count();
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), -EPROTO);
	cr_assert_eq(m.fd, -1);
	cr_assert_eq(m.len, 0);
	cr_assert_eq(fd_count(), before, "%d descriptors left open by a rejected frame",
		     fd_count() - before);
	ipc_msg_release(&m);
	for (int i = 0; i < bf->nfds; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, reject_longer_than_rule)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 68, 1), 68, 1 });
}

Test(ipc, reject_shorter_than_rule)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 4, 1), 4, 1 });
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 0, 0), 0, 0 });
}

Test(ipc, reject_not_a_multiple_of_elem_size)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 10, 1), 10, 1 });
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 63, 0), 63, 0 });
}

Test(ipc, reject_unknown_type)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA + 100, 8, 1), 8, 1 });
	expect_rejected(&(struct bad_frame){ hdr_of(0, 8, 0), 8, 0 });
}

Test(ipc, reject_wrong_version)
{
	struct bad_frame bf = { hdr_of(T_DATA, 8, 1), 8, 1 };

	bf.hdr.version = IPC_VERSION + 1;
	expect_rejected(&bf);
	bf.hdr.version = 0;
	expect_rejected(&bf);
}

Test(ipc, reject_fd_where_none_allowed)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 8, 1), 8, 1 });
	/* The header hides it: still refused, still closed. */
	expect_rejected(&(struct bad_frame){ hdr_of(T_DATA, 8, 0), 8, 1 });
}

Test(ipc, reject_missing_fd)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_FD, 4, 0), 4, 0 });
	/* The header promises one that never comes. */
	expect_rejected(&(struct bad_frame){ hdr_of(T_FD, 4, 1), 4, 0 });
}

Test(ipc, reject_too_many_fds)
{
	expect_rejected(&(struct bad_frame){ hdr_of(T_FD, 4, 2), 4, 2 });
	expect_rejected(&(struct bad_frame){ hdr_of(T_FD, 4, 1), 4, 2 });
	/* More than the receiver's control buffer holds: the kernel truncates, all are closed. */
	expect_rejected(&(struct bad_frame){ hdr_of(T_FD, 4, 6), 4, 6 });
	expect_rejected(&(struct bad_frame){ hdr_of(T_FD, 4, 1), 4, 8 });
}

/* A descriptor riding on payload bytes, not the header, is dropped by the kernel: no leak. */
Test(ipc, fd_sent_with_payload_is_dropped)
{
	struct ipc_msg m = { .fd = -1 };
	struct ipc_hdr h = hdr_of(T_DATA, 8, 0);
	int sv[2], fd = tmp_fd(), before;

	pair(sv);
	cr_assert_eq(write(sv[0], &h, sizeof(h)), (ssize_t)sizeof(h));
	send_raw(sv[0], NULL, "12345678", 8, &fd, 1);
	before = fd_count();
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(m.fd, -1);
	cr_assert_eq(fd_count(), before);
	ipc_msg_release(&m);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, send_over_max_payload)
{
	static char small[16];
	char c;
	int sv[2], fd = tmp_fd();

	pair(sv);
	/* Refused before the payload is read, so a short buffer is fine. */
	cr_assert_eq(ipc_send(sv[0], T_DATA, small, IPC_MAX_PAYLOAD + 1, -1), -EMSGSIZE);
	cr_assert_eq(ipc_send(sv[0], T_DATA, small, UINT32_MAX, fd), -EMSGSIZE);
	cr_assert_eq(recv(sv[1], &c, 1, MSG_DONTWAIT), -1, "a refused frame was sent");
	cr_assert_eq(errno, EAGAIN);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, peer_closes_between_frames)
{
	struct ipc_msg m = { .fd = -1 };
	int sv[2];

	pair(sv);
	cr_assert_eq(ipc_send(sv[0], T_DATA, "abcdefgh", 8, -1), 0);
	close(sv[0]);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), 0);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), -EPIPE);
	/* Sending to a closed peer is an error, not a SIGPIPE. */
	cr_assert_eq(ipc_send(sv[1], T_DATA, "abcdefgh", 8, -1), -EPIPE);
	ipc_msg_release(&m);
	close(sv[1]);
}

Test(ipc, peer_closes_mid_header)
{
	struct ipc_msg m = { .fd = -1 };
	struct ipc_hdr h = hdr_of(T_DATA, 8, 0);
	int sv[2];

	pair(sv);
	cr_assert_eq(write(sv[0], &h, 3), 3);
	close(sv[0]);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), -EPROTO);
	ipc_msg_release(&m);
	close(sv[1]);
}

Test(ipc, peer_closes_mid_payload)
{
	struct ipc_msg m = { .fd = -1 };
	struct ipc_hdr h = hdr_of(T_FD, 4, 1);
	int sv[2], fd = tmp_fd(), before;

	pair(sv);
	send_raw(sv[0], &h, "ab", 2, &fd, 1);
	close(sv[0]);
	before = fd_count();
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), -EPROTO);
	cr_assert_eq(m.fd, -1);
	cr_assert_eq(fd_count(), before);
	ipc_msg_release(&m);
	close(fd);
	close(sv[1]);
}

/* The one slow test: IPC_IO_TIMEOUT_MS is not configurable. */
Test(ipc, stalled_peer_times_out, .timeout = 30)
{
	struct ipc_msg m = { .fd = -1 };
	struct ipc_hdr h = hdr_of(T_DATA, 8, 0);
	struct timespec t0, t1;
	double secs;
	int sv[2];

	pair(sv);
	cr_assert_eq(ipc_set_timeouts(sv[1]), 0);
	cr_assert_eq(write(sv[0], &h, sizeof(h) / 2), (ssize_t)(sizeof(h) / 2));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(ipc_recv(sv[1], rules, NRULES(rules), &m), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert(secs > IPC_IO_TIMEOUT_MS / 1000.0 - 0.5 && secs < IPC_IO_TIMEOUT_MS / 1000.0 + 5,
		  "timed out after %.1f s", secs);
	ipc_msg_release(&m);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, recv_expect_other_type)
{
	static const struct ipc_rule both[] = { { 1, 4, 4, 0, 1 }, { 2, 4, 4, 0, 1 } };
	struct ipc_msg m = { .fd = -1 };
	int sv[2], fd = tmp_fd(), before;

	pair(sv);
	cr_assert_eq(ipc_send(sv[0], 2, "abcd", 4, fd), 0);
	before = fd_count();
	cr_assert_eq(ipc_recv_expect(sv[1], both, 2, 1, &m), -EPROTO);
	cr_assert_eq(m.fd, -1);
	cr_assert_eq(fd_count(), before, "the descriptor of an unexpected reply was kept");

	cr_assert_eq(ipc_send(sv[0], 1, "abcd", 4, fd), 0);
	cr_assert_eq(ipc_recv_expect(sv[1], both, 2, 1, &m), 0);
	cr_assert_eq(m.type, 1);
	cr_assert_geq(m.fd, 0);
	ipc_msg_release(&m);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

struct writer {
	int sock;
	const void *buf;
	uint32_t len;
	int fd;
	int err;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	w->err = ipc_send(w->sock, T_DATA, w->buf, w->len, w->fd);
	return NULL;
}

/* Frames far larger than the socket buffers: the writer blocks until the reader drains. */
static void cross_large(uint32_t len, int with_fd)
{
	static const struct ipc_rule big[] = { { T_DATA, 0, IPC_MAX_PAYLOAD, 0, 0 } };
	static const struct ipc_rule big_fd[] = { { T_DATA, 0, IPC_MAX_PAYLOAD, 0, 1 } };
	struct ipc_msg m = { .fd = -1 };
	struct writer w = { .len = len, .fd = with_fd ? tmp_fd() : -1 };
	struct stat a, b;
	pthread_t th;
	uint32_t *p = malloc(len);
	int sv[2];

	cr_assert_not_null(p);
	for (uint32_t i = 0; i < len / 4; i++)
		p[i] = i * 2654435761u;
	w.buf = p;
	pair(sv);
	w.sock = sv[0];
	cr_assert_eq(pthread_create(&th, NULL, writer_main, &w), 0);
	cr_assert_eq(ipc_recv(sv[1], with_fd ? big_fd : big, 1, &m), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(w.err, 0, "ipc_send: %s", strerror(-w.err));
	cr_assert_eq(m.len, len);
	cr_assert(memcmp(m.buf, p, len) == 0, "the large frame arrived altered");
	if (with_fd) {
		cr_assert_geq(m.fd, 0);
		cr_assert_eq(fstat(w.fd, &a), 0);
		cr_assert_eq(fstat(m.fd, &b), 0);
		cr_assert_eq(a.st_ino, b.st_ino);
		close(w.fd);
	} else {
		cr_assert_eq(m.fd, -1);
	}
	ipc_msg_release(&m);
	free(p);
	close(sv[0]);
	close(sv[1]);
}

Test(ipc, large_frame_crosses)
{
	cross_large(3u << 20, 0);
}

Test(ipc, large_frame_with_fd_crosses)
{
	cross_large(3u << 20, 1);
}

Test(ipc, max_payload_frame_crosses)
{
	cross_large(IPC_MAX_PAYLOAD, 0);
}

Test(ipc, check_str)
{
	char full[8], ok[8] = "abc";

	memset(full, 'x', sizeof(full));
	cr_assert_eq(ipc_check_str(ok, sizeof(ok)), 0);
	cr_assert_eq(ipc_check_str(full, sizeof(full)), -EPROTO);
	full[7] = '\0';
	cr_assert_eq(ipc_check_str(full, sizeof(full)), 0);
	/* The NUL must be inside the field, not just after it. */
	cr_assert_eq(ipc_check_str(full, 7), -EPROTO);
	cr_assert_eq(ipc_check_str(ok, 0), -EPROTO);
	cr_assert_eq(ipc_check_str("", 1), 0);
}

Test(ipc, strlcpy)
{
	char dst[8];

	ipc_strlcpy(dst, "abc", sizeof(dst));
	cr_assert_str_eq(dst, "abc");
	ipc_strlcpy(dst, "1234567", sizeof(dst));
	cr_assert_str_eq(dst, "1234567");
	memset(dst, 'z', sizeof(dst));
	ipc_strlcpy(dst, "123456789abc", sizeof(dst));
	cr_assert_str_eq(dst, "1234567");
	ipc_strlcpy(dst, "", sizeof(dst));
	cr_assert_str_eq(dst, "");
	memset(dst, 'z', sizeof(dst));
	ipc_strlcpy(dst, "abc", 1);
	cr_assert_eq(dst[0], '\0');
	cr_assert_eq(dst[1], 'z');
	memset(dst, 'z', sizeof(dst));
	ipc_strlcpy(dst, "abc", 0);
	cr_assert_eq(dst[0], 'z', "size 0 wrote into dst");
	cr_assert_eq(dst[1], 'z');
	/* Fills a field that ipc_check_str() then accepts, whatever the source. */
	ipc_strlcpy(dst, "a much longer source string", sizeof(dst));
	cr_assert_eq(ipc_check_str(dst, sizeof(dst)), 0);
}

/* ---- shipper/task.c: worker content that breaks the rules ---- */

#define TASK_ID 42

static int deny_maps(void *ctx, int pid)
{
	(void)ctx;
	(void)pid;
	return -ENOENT;
}

static int deny_mapped(void *ctx, int pid, uint64_t start, uint64_t end)
{
	(void)ctx;
	(void)pid;
	(void)start;
	(void)end;
	return -ENOENT;
}

static int deny_kallsyms(void *ctx)
{
	(void)ctx;
	return -ENOENT;
}

/* Validation does not need names: an opener that opens nothing keeps these tests fast. */
static const struct fd_opener deny_opener = { deny_maps, deny_mapped, deny_kallsyms, NULL };

static struct symbolizer *sym;
static struct ship_task *task;

static struct task_spec spec_of(int32_t pid)
{
	return (struct task_spec){ .task_id = TASK_ID,
				   .type = TASK_ON_CPU,
				   .format = FORMAT_FOLDED,
				   .duration_ms = 1000,
				   .period_us = 10000,
				   .flush_ms = 1000,
				   .npids = 1,
				   .pids = { pid } };
}

static void task_setup(void)
{
	struct task_spec spec = spec_of(getpid());

	sym = symbolizer__new(&deny_opener, 0);
	cr_assert_not_null(sym);
	task = ship_task__new(TASK_ID);
	cr_assert_not_null(task);
	cr_assert_eq(ship_task__begin(task, &spec, sym), 0);
}

static void task_teardown(void)
{
	ship_task__free(task);
	symbolizer__free(sym);
	task = NULL;
	sym = NULL;
}

static struct ship_stack stack_of(int32_t id, uint32_t kind, uint32_t nr)
{
	struct ship_stack s = { .id = id, .kind = kind, .nr = nr };

	for (uint32_t i = 0; i < nr && i < ROVER_MAX_STACK_DEPTH; i++)
		s.ips[i] = 0x1000 + i;
	return s;
}

static int counts1(int32_t tgid, int32_t ustack, int32_t kstack, uint64_t value)
{
	struct ship_counts_hdr h = { .task_id = TASK_ID };
	struct ship_count c = { .tgid = tgid, .ustack = ustack, .kstack = kstack, .value = value };

	return ship_task__counts(task, &h, &c, 1, sym);
}

static int stacks1(struct ship_stack s)
{
	return ship_task__stacks(task, &s, 1);
}

Test(ipc, task_counts_unknown_stack, .init = task_setup, .fini = task_teardown)
{
	cr_assert_eq(counts1(getpid(), 5, -1, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), -1, 7, 1), -EPROTO);
	cr_assert_eq(stacks1(stack_of(5, 1, 2)), 0);
	cr_assert_eq(counts1(getpid(), 5, 7, 1), -EPROTO, "kernel stack 7 was never sent");
	cr_assert_eq(counts1(getpid(), 5, -1, 1), 0);
	cr_assert_eq(task->samples, 1);
}

Test(ipc, task_stack_ids_out_of_range, .init = task_setup, .fini = task_teardown)
{
	cr_assert_eq(stacks1(stack_of(-1, 1, 1)), -EPROTO);
	cr_assert_eq(stacks1(stack_of(SHIP_MAX_STACK_ID, 1, 1)), -EPROTO);
	cr_assert_eq(stacks1(stack_of(INT32_MIN, 0, 1)), -EPROTO);
	cr_assert_eq(stacks1(stack_of(SHIP_MAX_STACK_ID - 1, 1, 1)), 0);
	cr_assert_eq(counts1(getpid(), SHIP_MAX_STACK_ID, -1, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), -2, -1, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), INT32_MIN, -1, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), -1, SHIP_MAX_STACK_ID, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), -1, -2, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), SHIP_MAX_STACK_ID - 1, -1, 1), 0);
}

Test(ipc, task_kind_mismatch, .init = task_setup, .fini = task_teardown)
{
	cr_assert_eq(stacks1(stack_of(3, 0, 1)), 0);
	cr_assert_eq(stacks1(stack_of(4, 1, 1)), 0);
	cr_assert_eq(counts1(getpid(), 3, -1, 1), -EPROTO, "a kernel stack used as a user stack");
	cr_assert_eq(counts1(getpid(), -1, 4, 1), -EPROTO, "a user stack used as a kernel stack");
	cr_assert_eq(stacks1(stack_of(5, 2, 1)), -EPROTO, "kind 2 does not exist");
	cr_assert_eq(counts1(getpid(), 4, 3, 1), 0);
}

Test(ipc, task_tgid_not_in_task, .init = task_setup, .fini = task_teardown)
{
	int32_t other = getpid() == 1 ? 2 : 1;

	cr_assert_eq(counts1(other, -1, -1, 1), -EPROTO);
	cr_assert_eq(counts1(0, -1, -1, 1), -EPROTO);
	cr_assert_eq(counts1(-1, -1, -1, 1), -EPROTO);
	cr_assert_eq(counts1(getpid(), -1, -1, 1), 0);
}

Test(ipc, task_begin_twice, .init = task_setup, .fini = task_teardown)
{
	struct task_spec spec = spec_of(getpid());

	cr_assert_eq(ship_task__begin(task, &spec, sym), -EPROTO);
}

Test(ipc, task_begin_rejects_bad_spec)
{
	struct symbolizer *s = symbolizer__new(&deny_opener, 0);
	struct task_spec bad[5];

	cr_assert_not_null(s);
	for (int i = 0; i < 5; i++)
		bad[i] = spec_of(getpid());
	bad[0].task_id = TASK_ID + 1;
	bad[1].npids = 0;
	bad[2].npids = ROVER_MAX_PIDS + 1;
	bad[3].type = TASK_NETWORK;
	bad[3].flush_ms = 0; /* a report interval of nothing */
	bad[4].type = 0;
	for (int i = 0; i < 5; i++) {
		struct ship_task *t = ship_task__new(TASK_ID);

		cr_assert_not_null(t);
		cr_assert_eq(ship_task__begin(t, &bad[i], s), -EPROTO, "bad spec %d accepted", i);
		ship_task__free(t);
	}
	symbolizer__free(s);
}

Test(ipc, task_content_before_begin)
{
	struct ship_task *t = ship_task__new(TASK_ID);
	struct ship_stack s = stack_of(1, 1, 1);
	struct ship_counts_hdr h = { .task_id = TASK_ID };
	struct ship_count c = { .tgid = getpid(), .ustack = -1, .kstack = -1, .value = 1 };

	cr_assert_not_null(t);
	cr_assert_eq(ship_task__stacks(t, &s, 1), -EPROTO);
	cr_assert_eq(ship_task__counts(t, &h, &c, 1, NULL), -EPROTO);
	ship_task__free(t);
}

Test(ipc, task_counts_of_another_task, .init = task_setup, .fini = task_teardown)
{
	struct ship_counts_hdr h = { .task_id = TASK_ID + 1 };
	struct ship_count c = { .tgid = getpid(), .ustack = -1, .kstack = -1, .value = 1 };

	cr_assert_eq(ship_task__counts(task, &h, &c, 1, sym), -EPROTO);
}

Test(ipc, task_stack_too_deep, .init = task_setup, .fini = task_teardown)
{
	struct ship_stack s = stack_of(1, 1, ROVER_MAX_STACK_DEPTH);

	cr_assert_eq(ship_task__stacks(task, &s, 1), 0);
	s.nr = ROVER_MAX_STACK_DEPTH + 1;
	cr_assert_eq(ship_task__stacks(task, &s, 1), -EPROTO);
	s.nr = UINT32_MAX;
	cr_assert_eq(ship_task__stacks(task, &s, 1), -EPROTO);
	/* The deepest user and kernel stacks together still fit one sample. */
	cr_assert_eq(stacks1(stack_of(2, 0, ROVER_MAX_STACK_DEPTH)), 0);
	cr_assert_eq(counts1(getpid(), 1, 2, 1), 0);
}

/* ---- shipper/task.c: valid content, named for real ---- */

__attribute__((noipa, used)) int ipc_test_leaf_fn(int x)
{
	return x * 3 + 1;
}

__attribute__((noipa, used)) int ipc_test_root_fn(int x)
{
	return ipc_test_leaf_fn(x) + 7;
}

/* The address of a core-kernel text symbol, 0 when kallsyms hides addresses. */
static uint64_t kallsyms_addr(const char *name)
{
	char line[512], want[128];
	uint64_t addr = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	snprintf(want, sizeof(want), " T %s\n", name);
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');

		if (sp && !strcmp(sp, want)) {
			addr = strtoull(line, NULL, 16);
			break;
		}
	}
	fclose(f);
	return addr;
}

static char *read_all(int fd)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf;

	cr_assert_geq(size, 0);
	buf = calloc(1, (size_t)size + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, (size_t)size, 0), size);
	return buf;
}

Test(ipc, task_valid_content_totals)
{
	struct symbolizer *s = symbolizer__new(&fd_opener_direct, 0);
	struct ship_task *t = ship_task__new(TASK_ID);
	struct task_spec spec = spec_of(getpid());
	struct ship_stack st[2] = { stack_of(1, 1, 2), stack_of(2, 0, 1) };
	struct ship_counts_hdr h = { .task_id = TASK_ID };
	struct ship_count c[3] = {
		{ .tgid = getpid(), .ustack = 1, .kstack = 2, .value = 5 },
		{ .tgid = getpid(), .ustack = 1, .kstack = -1, .value = 3 },
		{ .tgid = getpid(), .ustack = -1, .kstack = -1, .value = 2 },
	};
	uint64_t kaddr = kallsyms_addr("schedule");
	struct msg_output_written w;
	char comm[32] = "", line[256], *out;
	FILE *f;

	cr_assert_not_null(s);
	cr_assert_not_null(t);
	f = fopen("/proc/self/comm", "re");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';

	cr_assert_eq(ship_task__begin(t, &spec, s), 0);
	/* Innermost first; return addresses (all but the innermost) are looked up at ip - 1. */
	st[0].ips[0] = (uint64_t)(uintptr_t)ipc_test_leaf_fn + 1;
	st[0].ips[1] = (uint64_t)(uintptr_t)ipc_test_root_fn + 1;
	st[1].ips[0] = kaddr + 1;
	cr_assert_eq(ship_task__stacks(t, st, 2), 0);
	h.losses[LOSS_COUNTS_FULL] = 4;
	h.losses[LOSS_STACK_EVICTED] = 1;
	cr_assert_eq(ship_task__counts(t, &h, c, 3, s), 0);
	cr_assert_eq(t->samples, 10);
	cr_assert_eq(profile__total(t->profile), 10);
	cr_assert_eq(profile__nstacks(t->profile), 3);
	cr_assert_eq(t->frames_unnamed, 0, "%" PRIu64 " frames left unnamed", t->frames_unnamed);
	/* A second flush of the same stacks merges into them. */
	cr_assert_eq(ship_task__counts(t, &h, c, 3, s), 0);
	cr_assert_eq(t->samples, 20);
	cr_assert_eq(profile__total(t->profile), 20);
	cr_assert_eq(profile__nstacks(t->profile), 3);
	cr_assert_eq(t->losses[LOSS_COUNTS_FULL], 8);
	cr_assert_eq(t->losses[LOSS_STACK_EVICTED], 2);

	t->out_fd = tmp_fd();
	t->format = FORMAT_FOLDED;
	cr_assert_eq(write_out(t, &w), 0);
	cr_assert_eq(w.task_id, TASK_ID);
	cr_assert_eq(w.err, 0);
	cr_assert_eq(w.samples, 20);
	cr_assert_eq(w.stacks, 3);
	cr_assert_eq(w.losses[LOSS_COUNTS_FULL], 8);
	cr_assert_eq(ipc_check_str(w.summary, sizeof(w.summary)), 0);
	out = read_all(t->out_fd);
	snprintf(line, sizeof(line), "%s;ipc_test_root_fn;ipc_test_leaf_fn;%s_[k] 10\n", comm,
		 kaddr ? "schedule" : "[unknown]");
	cr_assert_not_null(strstr(out, line), "no line \"%s\" in:\n%s", line, out);
	snprintf(line, sizeof(line), "%s;ipc_test_root_fn;ipc_test_leaf_fn 6\n", comm);
	cr_assert_not_null(strstr(out, line), "no line \"%s\" in:\n%s", line, out);
	snprintf(line, sizeof(line), "%s;[no stack] 4\n", comm);
	cr_assert_not_null(strstr(out, line), "no line \"%s\" in:\n%s", line, out);
	free(out);
	ship_task__free(t);
	symbolizer__free(s);
}

/* Kernel frames the worker named (MSG_SHIP_KSYMS): a frame of these (addr, name) records. */
struct ksym_rec {
	uint64_t addr;
	const char *name;
};

static size_t ksyms_frame(uint8_t *buf, size_t cap, uint64_t task_id, const struct ksym_rec *r,
			  uint32_t n)
{
	struct ship_ksyms_hdr h = { .task_id = task_id, .count = n };
	size_t off = sizeof(h);

	memset(buf, 0, cap);
	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		struct ship_ksym k = { .addr = r[i].addr, .len = (uint32_t)strlen(r[i].name) };

		cr_assert_leq(off + sizeof(k) + k.len + 8, cap);
		memcpy(buf + off, &k, sizeof(k));
		memcpy(buf + off + sizeof(k), r[i].name, k.len);
		off += sizeof(k) + ((k.len + 7u) & ~7u);
	}
	return off;
}

static int kallsyms_opens;

static int count_kallsyms(void *ctx)
{
	(void)ctx;
	kallsyms_opens++;
	return open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
}

/*
 * A worker that named its kernel frames: the names are used as given (and "no symbol" as
 * [unknown]), and kallsyms is not read; a frame it did not name still is, from kallsyms.
 */
Test(ipc, kernel_frames_named_by_the_worker_need_no_kallsyms)
{
	const struct fd_opener opener = { deny_maps, deny_mapped, count_kallsyms, NULL };
	struct symbolizer *s = symbolizer__new(&opener, 0);
	struct ship_task *t = ship_task__new(TASK_ID);
	struct task_spec spec = spec_of(getpid());
	struct ship_stack st[2] = { stack_of(1, 0, 2), stack_of(2, 0, 1) };
	struct ship_counts_hdr h = { .task_id = TASK_ID };
	struct ship_count c[2] = {
		{ .tgid = getpid(), .ustack = -1, .kstack = 1, .value = 3 },
		{ .tgid = getpid(), .ustack = -1, .kstack = 2, .value = 4 },
	};
	uint64_t kaddr = kallsyms_addr("schedule");
	const struct ksym_rec named[2] = { { 0xffffffff81000010ull, "worker_named_fn" },
					   { 0xffffffff81000020ull, "" } };
	struct msg_output_written w;
	uint8_t frame[512];
	size_t len;
	char *out;

	cr_assert_not_null(s);
	cr_assert_not_null(t);
	kallsyms_opens = 0;
	cr_assert_eq(ship_task__begin(t, &spec, s), 0);
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, named, 2);
	cr_assert_eq(ship_task__ksyms(t, frame, len), 0);
	/* Innermost first: the caller (outermost) is the unnamed one. */
	st[0].ips[0] = named[0].addr;
	st[0].ips[1] = named[1].addr;
	cr_assert_eq(ship_task__stacks(t, st, 1), 0);
	cr_assert_eq(ship_task__counts(t, &h, c, 1, s), 0);
	cr_assert_eq(kallsyms_opens, 0, "kallsyms was read for frames the worker named");
	/* A frame it did not name: from kallsyms, once. */
	st[1].ips[0] = kaddr + 1;
	cr_assert_eq(ship_task__stacks(t, st + 1, 1), 0);
	cr_assert_eq(ship_task__counts(t, &h, c + 1, 1, s), 0);
	cr_assert_eq(kallsyms_opens, 1);

	t->out_fd = tmp_fd();
	t->format = FORMAT_FOLDED;
	cr_assert_eq(write_out(t, &w), 0);
	out = read_all(t->out_fd);
	cr_assert_not_null(strstr(out, ";[unknown]_[k];worker_named_fn_[k] 3\n"), "%s", out);
	if (kaddr)
		cr_assert_not_null(strstr(out, ";schedule_[k] 4\n"), "%s", out);
	free(out);
	ship_task__free(t);
	symbolizer__free(s);
}

/*
 * A compromised worker naming kernel frames: names that would forge frames or columns of the
 * folded output, records past the frame, lengths past the bound, another task's frame. Each
 * is refused whole; the names of the good frame before stay, and stay first.
 */
Test(ipc, forged_kernel_names_are_refused, .init = task_setup, .fini = task_teardown)
{
	static const char *const bad_names[] = { "a;b",	 "two words", "tab\there",
						 "nl\n", "del\x7f",   "\x80high" };
	const struct ksym_rec good = { 0xffffffff81000100ull, "good_fn" };
	const struct ksym_rec again = { 0xffffffff81000100ull, "renamed_fn" };
	char longname[SHIP_KSYM_NAME_MAX + 2];
	uint8_t frame[2048];
	struct ship_ksyms_hdr *h = (void *)frame;
	struct ship_ksym *k = (void *)(frame + sizeof(*h));
	size_t len;

	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &good, 1);
	cr_assert_eq(ship_task__ksyms(task, frame, len), 0);
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		const struct ksym_rec r[2] = { { 0xffffffff81000200ull, "fine" },
					       { 0xffffffff81000300ull, bad_names[i] } };

		len = ksyms_frame(frame, sizeof(frame), TASK_ID, r, 2);
		cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "name %zu taken", i);
	}
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	len = ksyms_frame(frame, sizeof(frame), TASK_ID,
			  &(struct ksym_rec){ 0xffffffff81000400ull, longname }, 1);
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "a name past the bound");
	/* Lengths and counts that do not match the frame. */
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &good, 1);
	k->len = 200;
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "a name past the frame");
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &good, 1);
	h->count = 2;
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "a record past the frame");
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &good, 1);
	h->count = 0;
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "bytes after the records");
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &good, 1);
	h->count = UINT32_MAX;
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "a count of 2^32 - 1");
	len = ksyms_frame(frame, sizeof(frame), TASK_ID + 1, &good, 1);
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "another task's names");
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &(struct ksym_rec){ 0, "zero" }, 1);
	cr_assert_eq(ship_task__ksyms(task, frame, len), -EPROTO, "address 0");
	cr_assert_eq(ship_task__ksyms(task, frame, sizeof(*h) - 1), -EPROTO, "a short header");
	/* Named again: the first name stays. */
	len = ksyms_frame(frame, sizeof(frame), TASK_ID, &again, 1);
	cr_assert_eq(ship_task__ksyms(task, frame, len), 0);
	{
		struct ship_stack st = stack_of(3, 0, 1);
		struct msg_output_written w;
		char *out;

		st.ips[0] = good.addr;
		cr_assert_eq(stacks1(st), 0);
		cr_assert_eq(counts1(getpid(), -1, 3, 2), 0);
		task->out_fd = tmp_fd();
		task->format = FORMAT_FOLDED;
		cr_assert_eq(write_out(task, &w), 0);
		out = read_all(task->out_fd);
		cr_assert_not_null(strstr(out, ";good_fn_[k] 2\n"), "%s", out);
		cr_assert_null(strstr(out, "fine"), "a name of a refused frame was kept: %s", out);
		free(out);
	}
}

/* A NETWORK task has no stacks: kernel names for it are a protocol error. */
Test(ipc, kernel_names_for_a_network_task_are_refused)
{
	struct symbolizer *s = symbolizer__new(&deny_opener, 0);
	struct ship_task *t = ship_task__new(TASK_ID);
	struct task_spec spec = spec_of(getpid());
	const struct ksym_rec r = { 0xffffffff81000100ull, "fn" };
	uint8_t frame[64];
	size_t len = ksyms_frame(frame, sizeof(frame), TASK_ID, &r, 1);

	cr_assert_eq(ship_task__ksyms(t, frame, len), -EPROTO, "before the task's begin");
	spec.type = TASK_NETWORK;
	cr_assert_eq(ship_task__begin(t, &spec, s), 0);
	cr_assert_eq(ship_task__ksyms(t, frame, len), -EPROTO);
	ship_task__free(t);
	symbolizer__free(s);
}

/*
 * Many names: the table grows and keeps every one; past KNAMES_MAX a frame is refused whole
 * (a worker never names more: worker/ksyms.c stops at the same bound).
 */
Test(ipc, kernel_names_grow_to_their_bound_and_no_further, .init = task_setup,
     .fini = task_teardown)
{
	const uint32_t per = 4096;
	size_t cap = sizeof(struct ship_ksyms_hdr) + per * (sizeof(struct ship_ksym) + 8);
	uint8_t *frame = malloc(cap);
	uint32_t sent = 0;

	cr_assert_not_null(frame);
	for (int f = 0; sent < 32768; f++) {
		struct ship_ksyms_hdr h = { .task_id = TASK_ID, .count = per };
		size_t off = sizeof(h);

		memcpy(frame, &h, sizeof(h));
		for (uint32_t i = 0; i < per; i++, sent++) {
			struct ship_ksym k = { .addr = 0xffffffff81000000ull + sent * 16,
					       .len = 8 };

			memcpy(frame + off, &k, sizeof(k));
			snprintf((char *)frame + off + sizeof(k), 9, "f%07u", sent);
			off += sizeof(k) + 8;
		}
		cr_assert_eq(ship_task__ksyms(task, frame, off), 0, "frame %d", f);
	}
	for (uint32_t i = 0; i < sent; i += 997) {
		const char *name;
		char want[16];

		snprintf(want, sizeof(want), "f%07u", i);
		cr_assert(knames__get(task->knames, 0xffffffff81000000ull + i * 16, &name));
		cr_assert_str_eq(name, want);
	}
	/* One more address: past the bound. */
	{
		const struct ksym_rec r = { 0xffffffff90000000ull, "one_more" };
		uint8_t small[64];
		size_t len = ksyms_frame(small, sizeof(small), TASK_ID, &r, 1);
		const char *name;

		cr_assert_eq(ship_task__ksyms(task, small, len), -ENOSPC);
		cr_assert_not(knames__get(task->knames, r.addr, &name));
	}
	free(frame);
}
