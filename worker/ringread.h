/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON): the reader of a BPF ring buffer map whose data pages are
 * mapped once.
 *
 * libbpf's ring_buffer maps a ring's data twice in a row (so that a record crossing the end
 * reads as one piece), and the kernel fills every page table entry of both at mmap: the
 * NETWORK worker's 32 MiB ring was 64 MiB of its resident set from its first second. This
 * reader maps the data once and copies the rare record that crosses the end into a buffer of
 * its own; records are read in the same order, with the same memory ordering as libbpf's
 * (load-acquire of the producer position and of each record's length, store-release of the
 * consumer position), so a record is never read before it is committed nor overwritten before
 * it is read.
 */
#ifndef ROVER_WORKER_RINGREAD_H
#define ROVER_WORKER_RINGREAD_H

#include <stddef.h>

/* A record: data, len bytes (valid during the call only). Negative stops the read, kept. */
typedef int (*ringread_fn)(void *ctx, void *data, size_t len);

struct ringread;

/*
 * The ring buffer map map_fd (BPF_MAP_TYPE_RINGBUF) of size data bytes (its max_entries), read
 * by fn(ctx, ...). NULL with errno set on failure.
 */
struct ringread *ringread__new(int map_fd, size_t size, ringread_fn fn, void *ctx);

/*
 * Every committed record, in order, to fn: the number of records read, or fn's negative
 * return (the records before it consumed, the one that failed consumed too, as libbpf does).
 */
int ringread__consume(struct ringread *r);

/* Bytes of the ring committed and not yet consumed. */
size_t ringread__avail(const struct ringread *r);

void ringread__free(struct ringread *r);

#endif
