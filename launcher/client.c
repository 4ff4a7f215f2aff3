// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/util.h"
#include "launcher/client.h"

static const struct ipc_rule replies[] = {
	{ MSG_CTL_ACCEPTED, sizeof(struct msg_ctl_accepted), sizeof(struct msg_ctl_accepted), 0, 0 },
	{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
};

/*
 * Whether the agent behind dir can be trusted with our output file and terminal: dir and its
 * ctl.sock belong to root or to us, and nobody else may write in dir (else another user could
 * have put its own listener there). 0 or -EPERM.
 */
static int trusted_sockdir(const char *dir)
{
	struct stat st;
	char path[4096];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		fprintf(stderr,
			"rover: %s belongs to uid %u with mode %o: another user could have put "
			"its own ctl.sock there; refusing it\n",
			dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		err = -EPERM;
	} else if (!fstatat(fd, "ctl.sock", &st, AT_SYMLINK_NOFOLLOW) &&
		   (!S_ISSOCK(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()))) {
		snprintf(path, sizeof(path), "%s/ctl.sock", dir);
		fprintf(stderr, "rover: %s is not a socket of root's; refusing it\n", path);
		err = -EPERM;
	}
	close(fd);
	return err;
}

int client_connect(const char *sockdir, unsigned wait_ms)
{
	struct timespec pause = { .tv_nsec = 50000000 };
	uint64_t until = now_mono_ms() + wait_ms;
	int fd;

	fd = trusted_sockdir(sockdir);
	if (fd < 0)
		return fd;
	for (;;) {
		fd = ipc_connect(sockdir, "ctl.sock");
		if (fd >= 0 || now_mono_ms() >= until)
			return fd;
		nanosleep(&pause, NULL);
	}
}

int client_submit(int sock, const struct task_spec *spec, int out_fd)
{
	return ipc_send(sock, MSG_CTL_PROFILE, spec, sizeof(*spec), out_fd);
}

int client_stop(int sock, uint64_t task_id)
{
	struct msg_ctl_accepted s = { .task_id = task_id };

	return ipc_send(sock, MSG_CTL_STOP, &s, sizeof(s), -1);
}

int client_read(int sock, uint64_t *ret_task_id, struct msg_ctl_done *ret_done)
{
	struct ipc_msg msg = { .fd = -1 };
	int err = ipc_recv(sock, replies, 2, &msg);

	if (err)
		goto out;
	if (msg.type == MSG_CTL_ACCEPTED) {
		*ret_task_id = ((struct msg_ctl_accepted *)msg.buf)->task_id;
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
	if (type == TASK_OFF_CPU)
		fprintf(stderr, "rover: %s: %.3f s off the CPU in %llu stacks (%llu switches back in)\n",
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
		fprintf(stderr, "rover: no samples lost\n");
	if (d->out.frames_unnamed)
		fprintf(stderr, "rover: %llu frame samples shown as module+offset or [unknown]\n",
			(unsigned long long)d->out.frames_unnamed);
	if (d->out.summary[0])
		fprintf(stderr, "rover: top functions (self):\n%s", d->out.summary);
}
