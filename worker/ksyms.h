/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON): names the kernel frames of a task's stacks with the
 * kernel's own symbol lookup (the ksym_names program of bpf/stackcount.bpf.h), so that the
 * shipper need not read /proc/kallsyms. Each address is named once per task; the names go to
 * the shipper ahead of the stacks that hold them (MSG_SHIP_KSYMS).
 */
#ifndef ROVER_WORKER_KSYMS_H
#define ROVER_WORKER_KSYMS_H

#include <bpf/libbpf.h>
#include <stdint.h>

#include "common/stackcount.h"
#include "worker/ship.h"

struct ksym_namer;

/*
 * Over the loaded ksym_names program of bpf/stackcount.bpf.h and its arrays in the object's
 * mmapped .bss. NULL + errno.
 */
struct ksym_namer *ksym_namer__new(struct bpf_program *prog, uint64_t *addrs, int32_t *lens,
				   char (*out)[SC_KSYM_SLOT]);
void ksym_namer__free(struct ksym_namer *k);

/* Remembers the addresses among ips that were never named. */
void ksym_namer__want(struct ksym_namer *k, const uint64_t *ips, uint32_t n);

/*
 * Names what was wanted since the last call into b's ksym records. 0 or -errno (ENOMEM); a
 * run that fails is said once and the namer stops: the shipper then names those frames
 * from kallsyms, as it does for a worker without the iterator.
 */
int ksym_namer__name(struct ksym_namer *k, struct ship_batch *b);

#endif
