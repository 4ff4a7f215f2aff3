// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/privdrop.h"
#include "common/util.h"
#include "launcher/client.h"
#include "launcher/trust.h"

static const struct ipc_rule replies[] = {
	{ MSG_CTL_ACCEPTED, sizeof(struct msg_ctl_accepted), sizeof(struct msg_ctl_accepted), 0,
	  1 },
	{ MSG_CTL_DONE, sizeof(struct msg_ctl_done), sizeof(struct msg_ctl_done), 0, 0 },
};

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/*
 * Whether the listener behind fd is a launcher running as the roles' user: it listened as
 * agent (all four uids) holding CAP_BPF and CAP_PERFMON, which no other process of that uid
 * holds (the roles have none but a worker's two, and a worker makes no socket). Read through
 * /proc/PID while a pidfd of the listener shows it alive, so the pid is still its own.
 */
static int peer_is_agent(int fd, uid_t agent)
{
	const unsigned long long need = (1ULL << CAP_BPF) | (1ULL << CAP_PERFMON);
	struct ucred uc;
	socklen_t len = sizeof(uc), plen = sizeof(int);
	unsigned long long eff = 0;
	unsigned u[4];
	int pidfd = -1, uids = 0, ok = 0;
	char path[64], line[256];
	FILE *f;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) || uc.uid != agent ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &plen) || pidfd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)uc.pid);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4)
				uids = u[0] == agent && u[1] == agent && u[2] == agent &&
				       u[3] == agent;
			else
				sscanf(line, "CapEff: %llx", &eff);
		}
		fclose(f);
		ok = uids && (eff & need) == need;
	}
	{
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		ok = ok && poll(&p, 1, 0) == 0; /* not exited: the pid was not reused */
	}
	close(pidfd);
	return ok;
}

/*
 * The agent behind sockdir is trusted with our output descriptor and terminal only when no
 * other user could have put a listener there: sockdir and every directory above it are root's
 * (or ours) and closed to others (trust_dir), and ctl.sock is reached through that descriptor.
 * An agent whose launcher runs as the roles' user (deploy/systemd/rover.service: User=rover)
 * owns its directory, which that user could as well have made to pose as an agent: there,
 * before a byte is sent, the listener must be such a launcher (peer_is_agent).
 */
int client_connect(const char *sockdir, unsigned wait_ms)
{
	struct timespec pause = { .tv_nsec = 50000000 };
	uint64_t until = now_mono_ms() + wait_ms;
	char bad[96] = "", at[64];
	uid_t agent = geteuid();
	gid_t agent_gid;
	int dirfd, fd, check_peer = 0;

	dirfd = trust_dir(sockdir, geteuid(), geteuid(), 0, bad, sizeof(bad));
	/* The agent's own directory (/run/rover): only the last component may be the agent's,
	 * every one above it as trusted as before. */
	if (dirfd == -EPERM && !privdrop_lookup_user(getenv("ROVER_USER"), &agent, &agent_gid)) {
		char bad2[96];

		dirfd = trust_dir(sockdir, geteuid(), agent, 0, bad2, sizeof(bad2));
		check_peer = dirfd >= 0;
	}
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
		/* A socket of root's (or ours, or the agent's), never a link. */
		if (!fstatat(dirfd, "ctl.sock", &st, AT_SYMLINK_NOFOLLOW) &&
		    (!S_ISSOCK(st.st_mode) ||
		     (st.st_uid != 0 && st.st_uid != geteuid() && st.st_uid != agent))) {
			fprintf(stderr,
				"rover: %s/ctl.sock is not a socket of root's or the agent's; "
				"refusing it\n",
				sockdir);
			break;
		}
		fd = ipc_connect(at, "ctl.sock");
		if (fd >= 0 && check_peer && !peer_is_agent(fd, agent)) {
			fprintf(stderr,
				"rover: %s/ctl.sock: its listener is not a rover launcher of uid %u "
				"(one holding CAP_BPF and CAP_PERFMON); refusing it\n",
				sockdir, (unsigned)agent);
			close(fd);
			fd = -EPERM;
			break;
		}
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
