// SPDX-License-Identifier: Apache-2.0
/* Shipper side: what the request/response parsers of shipper/network/protocols/l7.h share. */
#include "shipper/network/protocols/l7.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int l7__copy_str(char *out, size_t cap, const uint8_t *s, size_t n)
{
	size_t k;

	if (!cap)
		return n > 0;
	k = n < cap - 1 ? n : cap - 1;
	for (size_t i = 0; i < k; i++)
		out[i] = s[i] < 0x20 || s[i] == 0x7f ? '?' : (char)s[i];
	out[k] = '\0';
	return k < n;
}

size_t l7__take(uint8_t *buf, size_t *len, size_t max, const uint8_t *p, size_t n)
{
	size_t room = *len < max ? max - *len : 0;

	if (n > room)
		n = room;
	if (n)
		memcpy(buf + *len, p, n);
	*len += n;
	return n;
}

int l7__name_is(const uint8_t *p, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	if (n != k)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = p[i] >= 'A' && p[i] <= 'Z' ? p[i] + ('a' - 'A') : p[i];

		if (ch != (uint8_t)lit[i])
			return 0;
	}
	return 1;
}

size_t l7__copy_text(char *dst, size_t cap, const uint8_t *src, size_t n, uint32_t *flags,
		     uint32_t cut_flag)
{
	size_t k = n < cap ? n : cap;

	for (size_t i = 0; i < k; i++)
		dst[i] = (src[i] < 0x20 && src[i] != '\t') || src[i] == 0x7f ? '?' : (char)src[i];
	dst[k] = '\0';
	if (n > k)
		*flags |= cut_flag;
	return k;
}

int l7__seg_feed(void *c, struct l7_seg *s, struct l7_seg_counts *n, const struct l7_seg_ops *o,
		 enum l7_dir dir, uint64_t ts, const uint8_t *data, size_t captured, size_t actual)
{
	if ((dir != L7_EGRESS && dir != L7_INGRESS) || captured > actual || (captured && !data))
		return -EINVAL;
	if (s->closed)
		return -EPIPE;
	s->events++;
	s->ts[dir] = ts;
	s->last = ts;
	n->segments++;
	n->bytes_seen += actual;
	if (captured || o->read_empty)
		o->read(c, dir, ts, data, captured, actual);
	if (actual > captured) {
		n->gap_bytes += actual - captured;
		o->skip(c, dir, actual - captured, true, ts);
	}
	return 0;
}

int l7__seg_lost(void *c, struct l7_seg *s, struct l7_seg_counts *n, const struct l7_seg_ops *o,
		 enum l7_dir dir, uint64_t nbytes)
{
	if (dir != L7_EGRESS && dir != L7_INGRESS)
		return -EINVAL;
	if (s->closed)
		return -EPIPE;
	s->events++;
	n->lost_segments++;
	n->lost_bytes += nbytes;
	n->bytes_seen += nbytes;
	o->skip(c, dir, nbytes, nbytes != 0, o->loss_at_last ? s->last : s->ts[dir]);
	return 0;
}

void *l7__stream_new(size_t size, unsigned flags)
{
	void *c;

	if (flags & L7_F_DATAGRAM) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, size);
	if (!c)
		errno = ENOMEM;
	return c;
}

void *l7_ring__at(const struct l7_ring *r, size_t size, unsigned i)
{
	return (char *)r->v + ((r->head + i) & (r->cap - 1)) * size;
}

void *l7_ring__push(struct l7_ring *r, size_t size, unsigned max, uint64_t *alloc_failures)
{
	void *e;

	if (r->count == max)
		return NULL;
	if (r->count == r->cap) {
		unsigned ncap = r->cap ? r->cap * 2 : L7_RING_MIN;
		char *n = calloc(ncap, size);

		if (!n) {
			(*alloc_failures)++;
			return NULL;
		}
		for (unsigned i = 0; i < r->count; i++)
			memcpy(n + i * size, l7_ring__at(r, size, i), size);
		free(r->v);
		r->v = n;
		r->cap = ncap;
		r->head = 0;
	}
	e = l7_ring__at(r, size, r->count++);
	memset(e, 0, size);
	return e;
}

void *l7_ring__find(const struct l7_ring *r, size_t size, size_t off, uint64_t v)
{
	for (unsigned i = 0; v && i < r->count; i++) {
		char *e = l7_ring__at(r, size, i);
		uint64_t k;

		memcpy(&k, e + off, sizeof(k));
		if (k == v)
			return e;
	}
	return NULL;
}

void l7_ring__drop(struct l7_ring *r)
{
	r->head = (r->head + 1) & (r->cap - 1);
	r->count--;
}

void *l7_ring__pop_done(struct l7_ring *r, size_t size, size_t done_off)
{
	char *e;
	bool done;

	if (!r->count)
		return NULL;
	e = l7_ring__at(r, size, 0);
	memcpy(&done, e + done_off, sizeof(done));
	if (!done)
		return NULL;
	l7_ring__drop(r);
	return e;
}
