// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "worker/stackhint.h"

void stack_hints__init(struct stack_hints *h, const int32_t *pids, uint32_t npids)
{
	memset(h, 0, sizeof(*h));
	for (uint32_t i = 0; i < npids && i < ROVER_MAX_PIDS; i++)
		if (pids[i] > 0)
			h->pid[h->n++] = pids[i];
}

int stack_hints__set(struct stack_hints *h, int32_t tgid, uint32_t bytes)
{
	for (uint32_t i = 0; tgid > 0 && i < h->n; i++) {
		if (h->pid[i] != tgid)
			continue;
		h->bytes[i] = bytes < SHIP_STACK_HINT_MIN ? SHIP_STACK_HINT_MIN : bytes;
		return 0;
	}
	return -ESRCH;
}

uint32_t stack_hints__limit(const struct stack_hints *h, uint32_t tgid)
{
	for (uint32_t i = 0; i < h->n; i++)
		if ((uint32_t)h->pid[i] == tgid)
			return h->bytes[i];
	return 0;
}
