// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker/ringread.h"

struct ringread {
	size_t page, size, mask;
	unsigned long *consumer;       /* page 0 of the map: ours to write */
	const unsigned long *producer; /* page 1, then the data once */
	const uint8_t *data;
	uint8_t *bounce; /* a record crossing the end, made whole */
	size_t bounce_cap;
	ringread_fn fn;
	void *ctx;
};

struct ringread *ringread__new(int map_fd, size_t size, ringread_fn fn, void *ctx)
{
	struct ringread *r;
	long page = sysconf(_SC_PAGESIZE);
	void *m;

	/* The kernel's rule for a ring's size: a power of two, whole pages. */
	if (page <= 0 || !size || size & (size - 1) || size % (size_t)page) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->page = (size_t)page;
	r->size = size;
	r->mask = size - 1;
	r->fn = fn;
	r->ctx = ctx;
	m = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	r->consumer = m;
	/* The producer's page and the first of the two copies of the data the kernel offers. */
	m = mmap(NULL, r->page + size, PROT_READ, MAP_SHARED, map_fd, (off_t)r->page);
	if (m == MAP_FAILED)
		goto fail;
	r->producer = m;
	r->data = (const uint8_t *)m + r->page;
	return r;
fail:
	ringread__free(r);
	return NULL;
}

/* A record of len bytes at ring offset off, whole: in place, or copied when it wraps. */
static void *record_at(struct ringread *r, size_t off, size_t len)
{
	size_t first;

	if (off + len <= r->size)
		return (void *)(uintptr_t)(r->data + off);
	if (len > r->bounce_cap) {
		uint8_t *b = realloc(r->bounce, len);

		if (!b)
			return NULL;
		r->bounce = b;
		r->bounce_cap = len;
	}
	first = r->size - off;
	memcpy(r->bounce, r->data + off, first);
	memcpy(r->bounce + first, r->data, len - first);
	return r->bounce;
}

int ringread__consume(struct ringread *r)
{
	unsigned long cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE), prod;
	int cnt = 0, more;

	do {
		more = 0;
		prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);
		while (cons < prod) {
			/* Headers are 8-byte aligned in a ring of whole pages: never split. */
			size_t at = cons & r->mask, body;
			/* Headers are 8-byte aligned in a ring of whole pages: never split. */
			const uint32_t *hdr = (const uint32_t *)(const void *)(r->data + at);
			uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

			if (len & BPF_RINGBUF_BUSY_BIT)
				goto done; /* reserved, not yet committed */
			more = 1;
			body = len & ~(uint32_t)(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
			cons += (BPF_RINGBUF_HDR_SZ + body + 7) & ~(size_t)7;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				void *rec = record_at(r, (at + BPF_RINGBUF_HDR_SZ) & r->mask, body);
				int err = rec ? r->fn(r->ctx, rec, body) : -ENOMEM;

				if (err < 0) {
					__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
					return err;
				}
				if (cnt < INT32_MAX)
					cnt++;
			}
			__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
		}
	} while (more);
done:
	return cnt;
}

size_t ringread__avail(const struct ringread *r)
{
	unsigned long cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);
	unsigned long prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);

	return prod > cons ? (size_t)(prod - cons) : 0;
}

void ringread__free(struct ringread *r)
{
	if (!r)
		return;
	if (r->producer)
		munmap((void *)(uintptr_t)r->producer, r->page + r->size);
	if (r->consumer)
		munmap(r->consumer, r->page);
	free(r->bounce);
	free(r);
}
