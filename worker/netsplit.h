/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side: a NETWORK ring buffer record split into the programs' records it holds. One
 * record, or two: a server's request kept on its connection for its answer, then the answer's
 * (bpf/net/capture.bpf.h, data_out()), one ring record where a record each cost the program
 * about 120 ns more a request. Pure, so that fuzz_netrec runs it as the worker does.
 */
#ifndef ROVER_WORKER_NETSPLIT_H
#define ROVER_WORKER_NETSPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/netrec.h"

/* The largest record a program writes. */
#define NETSPLIT_REC_MAX (sizeof(struct net_rec_close) + NET_CAPTURE_MAX)
/* The largest ring record: a kept request ahead of a record. */
#define NETSPLIT_RING_MAX (NET_PEND_MAX + NETSPLIT_REC_MAX)

/*
 * The length of the record at off in the ring record data of len bytes (at most
 * NETSPLIT_RING_MAX), 0 when fewer than a header's bytes are left. A length that does not fit
 * makes the rest one record, as a ring record always was before kept requests: the shipper
 * judges it (a program writes records a multiple of 8 long, so nothing is left after the
 * last).
 */
static inline size_t netsplit_next(const void *data, size_t len, size_t off)
{
	struct net_rec_hdr h;
	size_t rl;

	if (off > len || len - off < sizeof(h))
		return 0;
	memcpy(&h, (const uint8_t *)data + off, sizeof(h));
	rl = h.len;
	if (rl < sizeof(h) || rl > len - off || rl > NETSPLIT_REC_MAX)
		rl = len - off;
	return rl;
}

#endif
