// SPDX-License-Identifier: Apache-2.0
/*
 * The worker's side of MSG_NET_TLS_ATTACH, alone, for tests/security/test_tls_attach.c, which
 * plays a compromised shipper on the other end of fd 3.
 *
 *   tls_attach_worker USER TASK_ID PID...
 *
 * Started as root, it does what rover-worker does for a NETWORK task up to its run loop: pins
 * its targets with pidfds (the launcher's job), drops to USER with CAP_BPF and CAP_PERFMON
 * only (privdrop_apply(&worker_policy)), takes Landlock and worker_policy, loads the capture
 * (netcap__start), forgets the targets it could not pin, and stacks
 * worker_attached_net_policy. Only the launcher's denylist, first in a live worker's stack,
 * is missing: it refuses nothing the two after it allow.
 *
 * Then, on fd 3: MSG_TASK_STARTED once ready; each MSG_NET_TLS_ATTACH answered as
 * worker/main.c on_shipper answers it (netcap__tls_attach, MSG_NET_TLS_RESULT); MSG_TASK_STOP
 * detaches, flushes (netcap__flush: the capture's records and counters, to fd 3) and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "common/privdrop.h"
#include "worker/netcap.h"

#define SHIPPER_FD 3

int main(int argc, char **argv)
{
	static const struct ipc_rule from_shipper[] = {
		{ MSG_NET_TLS_ATTACH, sizeof(struct msg_tls_attach), sizeof(struct msg_tls_attach),
		  0, 1 },
		{ MSG_TASK_STOP, 0, 0, 0, 0 },
	};
	struct task_spec spec = { .type = TASK_NETWORK, .duration_ms = 600000, .flush_ms = 1000 };
	int pidfds[ROVER_MAX_PIDS];
	struct msg_task_started started;
	struct netcap *n;
	uid_t uid;
	gid_t gid;
	int err;

	if (argc < 4 || argc - 3 > ROVER_MAX_PIDS) {
		fprintf(stderr, "usage: tls_attach_worker USER TASK_ID PID...\n");
		return 2;
	}
	spec.task_id = strtoull(argv[2], NULL, 10);
	for (int i = 3; i < argc; i++) {
		spec.pids[spec.npids] = atoi(argv[i]);
		pidfds[spec.npids++] = (int)syscall(SYS_pidfd_open, atoi(argv[i]), 0);
	}
	err = privdrop_lookup_user(argv[1], &uid, &gid);
	if (!err)
		err = privdrop_apply(&worker_policy, uid, gid);
	if (!err)
		err = role_landlock(-1);
	if (!err)
		err = sandbox_apply(&worker_policy);
	if (err) {
		fprintf(stderr, "tls_attach_worker: dropping privileges: %s\n", strerror(-err));
		return 1;
	}
	n = netcap__start(&spec, &started);
	if (!n) {
		fprintf(stderr, "tls_attach_worker: loading the capture: %s\n", strerror(errno));
		return 1;
	}
	for (uint32_t i = 0; i < spec.npids; i++)
		if (pidfds[i] < 0)
			netcap__forget(n, spec.pids[i], -1);
	err = sandbox_apply(&worker_attached_net_policy);
	if (!err)
		err = ipc_send(SHIPPER_FD, MSG_TASK_STARTED, &started, sizeof(started), -1);
	while (!err) {
		struct ipc_msg msg = { .fd = -1 };
		struct msg_tls_attach m;
		struct msg_tls_result r;
		int pidfd = -1;

		/* Blocking, without the worker's I/O timeouts: the test takes its time. */
		err = ipc_recv(SHIPPER_FD, from_shipper, 2, &msg);
		if (err || msg.type == MSG_TASK_STOP)
			break;
		memcpy(&m, msg.buf, sizeof(m));
		for (uint32_t i = 0; i < spec.npids; i++)
			if (spec.pids[i] == m.pid)
				pidfd = pidfds[i];
		netcap__tls_attach(n, &m, msg.fd, pidfd, &r);
		ipc_msg_release(&msg);
		err = ipc_send(SHIPPER_FD, MSG_NET_TLS_RESULT, &r, sizeof(r), -1);
	}
	netcap__stop(n);
	if (!err)
		err = netcap__flush(n, SHIPPER_FD);
	netcap__free(n);
	if (err)
		fprintf(stderr, "tls_attach_worker: %s\n", strerror(-err));
	return err ? 1 : 0;
}
