// SPDX-License-Identifier: Apache-2.0
/*
 * The two struct fd_opener of the shipper: fd_opener_launcher_ops asks the launcher (the
 * shipper's own case), fd_opener_direct opens the same paths itself (tests, a shipper that runs
 * as root). Both apply one set of checks to perf maps, common/safeopen.c; the direct opener is
 * here and not in symbolize.c so that the symbolizer itself needs nothing from common/.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "common/safeopen.h"
#include "shipper/opener.h"

static const struct ipc_rule open_replies[] = {
	{ MSG_OPEN_REPLY, sizeof(struct msg_open_reply), sizeof(struct msg_open_reply), 0, 0 },
};
static const struct ipc_rule open_replies_fd[] = {
	{ MSG_OPEN_REPLY, sizeof(struct msg_open_reply), sizeof(struct msg_open_reply), 0, 1 },
};

int sh_ask_open(int sock, uint32_t what, int pid, uint64_t start, uint64_t end)
{
	struct msg_open req = { .what = what, .pid = pid, .start = start, .end = end };
	struct ipc_msg msg = { .fd = -1 };
	struct msg_open_reply rep;
	char peek[sizeof(struct ipc_hdr)];
	int err, fd;

	if (sock < 0)
		return -ENOTCONN;
	err = ipc_send(sock, MSG_OPEN_REQUEST, &req, sizeof(req), -1);
	if (err)
		return err;
	/* The header says whether a descriptor follows: a reply with an error carries none. */
	if (recv(sock, peek, sizeof(peek), MSG_PEEK | MSG_WAITALL) != sizeof(peek))
		return -EPROTO;
	err = ipc_recv_expect(sock, ((struct ipc_hdr *)peek)->nfds ? open_replies_fd : open_replies,
			      1, MSG_OPEN_REPLY, &msg);
	if (err)
		goto cleanup;
	rep = *(struct msg_open_reply *)msg.buf;
	if (rep.what != what || rep.err < 0 || (rep.err == 0) != (msg.fd >= 0)) {
		err = -EPROTO;
		goto cleanup;
	}
	if (rep.err) {
		err = -rep.err;
		goto cleanup;
	}
	fd = msg.fd;
	msg.fd = -1;
	ipc_msg_release(&msg);
	return fd;
cleanup:
	ipc_msg_release(&msg);
	return err;
}

static int op_maps(void *ctx, int pid)
{
	return sh_ask_open(*(int *)ctx, OPEN_MAPS, pid, 0, 0);
}

static int op_mapped(void *ctx, int pid, uint64_t start, uint64_t end)
{
	return sh_ask_open(*(int *)ctx, OPEN_MAPPED_FILE, pid, start, end);
}

static int op_kallsyms(void *ctx)
{
	return sh_ask_open(*(int *)ctx, OPEN_KALLSYMS, 0, 0, 0);
}

static int op_perf_map(void *ctx, int pid)
{
	return sh_ask_open(*(int *)ctx, OPEN_PERF_MAP, pid, 0, 0);
}

const struct fd_opener fd_opener_launcher_ops = {
	.open_maps = op_maps,
	.open_mapped_file = op_mapped,
	.open_kallsyms = op_kallsyms,
	.open_perf_map = op_perf_map,
};

static int direct_open_maps(void *ctx, int pid)
{
	char path[64];
	int fd;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int direct_open_mapped_file(void *ctx, int pid, uint64_t start, uint64_t end)
{
	char path[96];
	int fd;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int direct_open_kallsyms(void *ctx)
{
	int fd;

	(void)ctx;
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int direct_open_perf_map(void *ctx, int pid)
{
	(void)ctx;
	return safeopen_perf_map(pid);
}

const struct fd_opener fd_opener_direct = {
	.open_maps = direct_open_maps,
	.open_mapped_file = direct_open_mapped_file,
	.open_kallsyms = direct_open_kallsyms,
	.open_perf_map = direct_open_perf_map,
};
