/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON): a stack snapshot record from the ring buffer
 * (struct sc_snap, written by bpf/stackcount.bpf.h), checked and turned into the snapshot the
 * worker sends the shipper.
 */
#ifndef ROVER_WORKER_SNAPREC_H
#define ROVER_WORKER_SNAPREC_H

#include <stddef.h>
#include <stdint.h>

#include "common/msg.h"
#include "common/stackcount.h"

/*
 * The snapshot record r of size bytes: its kernel frames (*ret_kips, ret->nkips of them, the
 * trailing zeros dropped), its Python frames (*ret_py, ret->npy of them) and its stack
 * (*ret_stack, ret->stack_len bytes from sp), all pointing into r, the stack trimmed to limit bytes (0: none). ret->flags has
 * SHIP_SNAP_TRIMMED when that or the kernel's copy (which read the limit from snap_limits)
 * cut it. -EINVAL for a record that is not what the programs write: lengths past its size or
 * their bounds, kernel frames not whole, more than PY_MAX_FRAMES Python frames, a stack not starting at sp.
 */
int snaprec__convert(const struct sc_snap *r, size_t size, uint32_t limit,
		     struct ship_snapshot *ret, const uint64_t **ret_kips,
		     const struct py_frame **ret_py, const uint8_t **ret_stack);

#endif
