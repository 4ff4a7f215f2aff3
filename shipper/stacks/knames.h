/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the names a task's worker gave its kernel frames (MSG_SHIP_KSYMS), checked
 * and kept for the task. A frame the worker did not name is named from kallsyms.
 */
#ifndef ROVER_SHIPPER_KNAMES_H
#define ROVER_SHIPPER_KNAMES_H

#include <stddef.h>
#include <stdint.h>

/* Addresses one task may name: the worker stops at 32768 (worker/ksyms.c). */
#define KNAMES_MAX 32768u

struct knames;

struct knames *knames__new(void);
void knames__free(struct knames *k);

/*
 * Takes a MSG_SHIP_KSYMS payload (header included). -EPROTO for a frame that is not as
 * common/msg.h says (a record past the end, a name too long or with a byte a symbol has not,
 * address 0, task_id not the task's), -ENOSPC past KNAMES_MAX; nothing of a refused frame is
 * kept. An address named again keeps its first name.
 */
int knames__add_frame(struct knames *k, uint64_t task_id, const void *buf, size_t len);

/*
 * 1 and the name in *ret_name when the worker named addr (an empty name: the kernel has no
 * symbol there), 0 when it did not.
 */
int knames__get(const struct knames *k, uint64_t addr, const char **ret_name);

#endif
