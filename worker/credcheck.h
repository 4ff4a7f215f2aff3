/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker (CAP_BPF, CAP_PERFMON) tells a client's task programs whose credentials their
 * targets must keep (bpf/credcheck.bpf.h): the client's uid and gid, from the supervisor,
 * which took them from the client's socket. Root's and the backend's tasks check nothing.
 */
#ifndef ROVER_WORKER_CREDCHECK_H
#define ROVER_WORKER_CREDCHECK_H

#include <stdint.h>

#include "common/msg.h"

static inline void set_cred_check(uint32_t *ret_check, uint32_t *ret_uid, uint32_t *ret_gid,
				  const struct task_spec *spec)
{
	*ret_check = !!(spec->flags & TASK_USER_ONLY);
	*ret_uid = spec->req_uid;
	*ret_gid = spec->req_gid;
}

#endif
