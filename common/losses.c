// SPDX-License-Identifier: Apache-2.0
#include <stddef.h>

#include "common/msg.h"

const char *loss_name(unsigned kind)
{
	static const char *const names[LOSS_MAX] = {
		[LOSS_USTACK_COLLISION] = "user stack id collisions",
		[LOSS_KSTACK_COLLISION] = "kernel stack id collisions",
		[LOSS_STACK_MAP_FULL] = "stack map full",
		[LOSS_USTACK_MISSING] = "no user stack",
		[LOSS_COUNTS_FULL] = "counts map full",
		[LOSS_STACK_EVICTED] = "stacks evicted before read",
		[LOSS_SEND_FAILED] = "flushes the shipper did not take",
		[LOSS_STARTS_FULL] = "switches out not remembered (thread table full)",
		[LOSS_SNAP_RINGBUF_FULL] =
			"stack snapshots not taken (ring buffer full), frame pointers used",
		[LOSS_SNAP_FAULT] =
			"stack snapshots with no readable user stack, frame pointers used",
		[LOSS_SNAP_UNMATCHED] = "OFF_CPU stack snapshots whose time was lost",
		[LOSS_NET_CONNS_FULL] = "connections not tracked (connection map full)",
		[LOSS_NET_SYSCALLS] = "socket calls not traced (argument table full)",
		[LOSS_NET_SEGMENTS] =
			"payload segments not delivered (ring buffer full or byte budget spent)",
		[LOSS_NET_CLOSES] = "connection closes whose last counters were lost",
		[LOSS_NET_RECORDS] = "network records the shipper did not take",
		[LOSS_NET_TLS] = "TLS calls not traced or not joined to a connection",
		[LOSS_NET_PARSERS] =
			"connections not parsed (the task's bound of parsers), L4 only",
		[LOSS_TARGETS_CRED] =
			"processes dropped: no longer the client's to trace (set-user-ID exec, setuid or not dumpable)",
		[LOSS_PY_CODES] =
			"Python code objects whose names were not sent (their frames unnamed)",
	};

	return kind < LOSS_MAX && names[kind] ? names[kind] : "unknown loss";
}
