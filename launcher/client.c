// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/util.h"
#include "launcher/client.h"
#include "launcher/trust.h"

static const struct ipc_rule replies[] = {
	{ MSG_CTL_ACCEPTED, sizeof(struct msg_ctl_accepted), sizeof(struct msg_ctl_accepted), 0,
	  1 },
	{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
};

/*
 * The agent behind sockdir is trusted with our output descriptor and terminal only when no
 * other user could have put a listener there: sockdir and every directory above it are root's
 * (or ours) and closed to others (trust_dir), and ctl.sock is reached through that descriptor.
 */
int client_connect(const char *sockdir, unsigned wait_ms)
{
	struct timespec pause = { .tv_nsec = 50000000 };
	uint64_t until = now_mono_ms() + wait_ms;
	char bad[96] = "", at[64];
	int dirfd, fd;

	dirfd = trust_dir(sockdir, geteuid(), 0, bad, sizeof(bad));
	if (dirfd == -EPERM)
		fprintf(stderr,
			"rover: %s: %s could be changed by another user, who could have put "
			"its own ctl.sock there; refusing it\n",
			sockdir, bad);
	if (dirfd < 0)
		return dirfd;
	snprintf(at, sizeof(at), "/proc/self/fd/%d", dirfd);
	for (;;) {
		struct stat st;

		fd = -EPERM;
		/* A socket of root's (or ours), never a link. */
		if (!fstatat(dirfd, "ctl.sock", &st, AT_SYMLINK_NOFOLLOW) &&
		    (!S_ISSOCK(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()))) {
			fprintf(stderr,
				"rover: %s/ctl.sock is not a socket of root's; refusing it\n",
				sockdir);
			break;
		}
		fd = ipc_connect(at, "ctl.sock");
		if (fd >= 0 || now_mono_ms() >= until)
			break;
		nanosleep(&pause, NULL);
	}
	close(dirfd);
	return fd;
}

int client_submit(int sock, const struct task_spec *spec)
{
	return ipc_send(sock, MSG_CTL_PROFILE, spec, sizeof(*spec), -1);
}

int client_copy_output(int out, int file)
{
	char buf[64 * 1024];

	for (;;) {
		ssize_t n = recv(out, buf, sizeof(buf), MSG_DONTWAIT);
		int err;

		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EINTR ? 1 : errno == EAGAIN ? 1 : -errno;
		err = write_full(file, buf, (size_t)n);
		if (err)
			return err;
	}
}

int client_finish_output(int out, int file, unsigned wait_ms)
{
	uint64_t until = now_mono_ms() + wait_ms;
	int rc;

	while ((rc = client_copy_output(out, file)) == 1) {
		struct pollfd p = { .fd = out, .events = POLLIN };
		uint64_t now = now_mono_ms();

		if (now >= until)
			return -ETIMEDOUT;
		poll(&p, 1, (int)(until - now));
	}
	return rc;
}

int client_stop(int sock, uint64_t task_id)
{
	struct msg_ctl_accepted s = { .task_id = task_id };

	return ipc_send(sock, MSG_CTL_STOP, &s, sizeof(s), -1);
}

int client_read(int sock, uint64_t *ret_task_id, int *ret_out, struct msg_ctl_done *ret_done)
{
	struct ipc_msg msg = { .fd = -1 };
	int err = ipc_recv(sock, replies, 2, &msg);

	if (err)
		goto out;
	if (msg.type == MSG_CTL_ACCEPTED) {
		*ret_task_id = ((struct msg_ctl_accepted *)msg.buf)->task_id;
		*ret_out = msg.fd;
		msg.fd = -1;
		err = 1;
	} else {
		memcpy(ret_done, msg.buf, sizeof(*ret_done));
		if (ipc_check_str(ret_done->text, sizeof(ret_done->text)) ||
		    ipc_check_str(ret_done->out.summary, sizeof(ret_done->out.summary)))
			err = -EPROTO;
	}
out:
	ipc_msg_release(&msg);
	return err;
}

void client_report(const struct msg_ctl_done *d, const char *output, uint32_t type)
{
	uint64_t lost = 0;

	if (d->err)
		fprintf(stderr, "rover: task %llu failed: %s\n", (unsigned long long)d->task_id,
			d->text);
	if (!d->task_id)
		return;
	if (type == TASK_NETWORK)
		fprintf(stderr, "rover: %s: %llu HTTP exchanges, %llu socket calls traced\n",
			output, (unsigned long long)d->out.samples,
			(unsigned long long)d->kernel_samples);
	else if (type == TASK_OFF_CPU)
		fprintf(stderr,
			"rover: %s: %.3f s off the CPU in %llu stacks (%llu switches back in)\n",
			output, (double)d->out.samples / 1e6, (unsigned long long)d->out.stacks,
			(unsigned long long)d->kernel_samples);
	else
		fprintf(stderr, "rover: %s: %llu samples in %llu stacks (kernel counted %llu)\n",
			output, (unsigned long long)d->out.samples,
			(unsigned long long)d->out.stacks, (unsigned long long)d->kernel_samples);
	for (int k = 0; k < LOSS_MAX; k++) {
		if (!d->out.losses[k])
			continue;
		lost += d->out.losses[k];
		fprintf(stderr, "rover: lost: %llu %s\n", (unsigned long long)d->out.losses[k],
			loss_name((unsigned)k));
	}
	if (!lost)
		fprintf(stderr, "rover: no %s lost\n",
			type == TASK_NETWORK ? "records" : "samples");
	if (d->out.frames_unnamed)
		fprintf(stderr, "rover: %llu frame samples shown as module+offset or [unknown]\n",
			(unsigned long long)d->out.frames_unnamed);
	if (d->out.summary[0])
		fprintf(stderr, "rover: %s:\n%s",
			type == TASK_NETWORK ? "top endpoints" : "top functions (self)",
			d->out.summary);
}
