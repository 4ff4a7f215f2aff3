// SPDX-License-Identifier: Apache-2.0
#include <errno.h>

#include "worker/snaprec.h"

int snaprec__convert(const struct sc_snap *r, size_t size, uint32_t limit,
		     struct ship_snapshot *ret, const uint64_t **ret_kips,
		     const struct py_frame **ret_py, const uint8_t **ret_stack)
{
	size_t hdr = offsetof(struct sc_snap, data), kb, pyb;
	const uint64_t *kips;

	if (size < hdr)
		return -EINVAL;
	kb = r->kbytes > 0 ? (size_t)r->kbytes : 0;
	kips = (const uint64_t *)(const void *)r->data;
	if (r->npy > PY_MAX_FRAMES || !sc_rt_status_ok(r->pystatus))
		return -EINVAL;
	pyb = r->npy * sizeof(struct py_frame);
	if (kb > SC_STACK_DEPTH * 8 || kb % 8 || !r->stack_len || r->stack_len > SC_SNAP_STACK ||
	    r->stack_start != r->sp || size - hdr < kb + pyb + r->stack_len)
		return -EINVAL;
	*ret = (struct ship_snapshot){
		.tgid = (int32_t)r->tgid,
		.nkips = (uint32_t)(kb / 8),
		.stack_len = r->stack_len,
		.value = r->value,
		.ip = r->ip,
		.sp = r->sp,
		.bp = r->bp,
		.npy = r->npy,
		.pystatus = r->pystatus,
	};
	if (r->flags & SC_SNAP_LIMITED)
		ret->flags = SHIP_SNAP_TRIMMED;
	if (limit && ret->stack_len > limit) {
		ret->stack_len = limit;
		ret->flags = SHIP_SNAP_TRIMMED;
	}
	while (ret->nkips && !kips[ret->nkips - 1])
		ret->nkips--;
	*ret_kips = kips;
	*ret_py = (const struct py_frame *)(const void *)(r->data + kb);
	*ret_stack = r->data + kb + pyb;
	return 0;
}
