// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target, differential: shipper/network/protocols/http/hpack.c against libnghttp2's
 * inflater (which the HTTP/2 parser used before it, with the same settings: a 65536-byte
 * table allowed). Input: a byte of the pieces' length (1 + byte % 32: how the blocks are
 * split for ours), then blocks, each a 2-byte big-endian length and its bytes. Each block is
 * decoded by both; they must accept or refuse it alike; when they accept, emit the same
 * fields of the ids read (value lengths and kept bytes) in the same order and hold the same
 * dynamic table (entry count, sizes, each entry's name and value lengths and id). The first
 * refused block ends the run (the parser forgets the table then). Memory: ours must give all
 * of it back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "shipper/network/protocols/http/hpack.h"

enum { ID_NONE, ID_METHOD, ID_PATH, ID_STATUS, ID_CTYPE, ID_KEEP, ID_SHORT, ID_COUNT };

static const char *const id_names[ID_COUNT] = {
	[ID_METHOD] = ":method",     [ID_PATH] = ":path",  [ID_STATUS] = ":status",
	[ID_CTYPE] = "content-type", [ID_KEEP] = "x-keep", [ID_SHORT] = "x-short",
};

static const uint16_t keep[ID_COUNT] = {
	[ID_METHOD] = 7,
	[ID_PATH] = 256,
	[ID_STATUS] = 3,
	[ID_CTYPE] = 128,
	[ID_KEEP] = HPACK_VALUE_KEEP,
	[ID_SHORT] = 4,
};

static unsigned name_of(const uint8_t *n, size_t len)
{
	for (unsigned i = 1; i < ID_COUNT; i++)
		if (strlen(id_names[i]) == len && !memcmp(n, id_names[i], len))
			return i;
	return ID_NONE;
}

static uint8_t static_id[HPACK_STATIC_LAST + 1];

static const struct hpack_conf conf = {
	.name_of = name_of,
	.static_id = static_id,
	.keep = keep,
	.ids = ID_COUNT,
	.table_max = 65536,
};

#define MAX_F 4096

struct field {
	unsigned id;
	size_t len;
	uint8_t v[HPACK_VALUE_KEEP];
};

struct out {
	struct field f[MAX_F];
	size_t n;
	int over;
};

static void emit(void *user, unsigned id, const uint8_t *v, size_t len)
{
	struct out *o = user;
	size_t k = len < keep[id] ? len : keep[id];

	if (!id || id >= ID_COUNT)
		abort();
	if (o->n == MAX_F) {
		o->over = 1;
		return;
	}
	o->f[o->n].id = id;
	o->f[o->n].len = len;
	memcpy(o->f[o->n].v, v, k);
	o->n++;
}

static int ref_block(nghttp2_hd_inflater *inf, const uint8_t *p, size_t n, struct out *o)
{
	o->n = 0;
	o->over = 0;
	for (;;) {
		nghttp2_nv nv;
		int fl = 0;
		ssize_t r = nghttp2_hd_inflate_hd2(inf, &nv, &fl, p, n, 1);

		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
		if (fl & NGHTTP2_HD_INFLATE_EMIT) {
			unsigned id = name_of(nv.name, nv.namelen);

			if (id)
				emit(o, id, nv.value, nv.valuelen);
		}
		if (fl & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(inf);
			return 0;
		}
		if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && !n)
			return 0;
	}
}

static int our_block(struct hpack *h, const uint8_t *p, size_t n, size_t piece, struct out *o)
{
	o->n = 0;
	o->over = 0;
	hpack__begin(h);
	for (size_t off = 0; off < n; off += piece) {
		size_t k = n - off < piece ? n - off : piece;

		if (hpack__feed(h, p + off, k, emit, o))
			return -1;
	}
	return hpack__end(h) ? -1 : 0;
}

static void compare(const struct out *a, const struct out *b)
{
	if (a->n != b->n || a->over != b->over)
		abort();
	for (size_t i = 0; i < a->n; i++) {
		size_t k = a->f[i].len < keep[a->f[i].id] ? a->f[i].len : keep[a->f[i].id];

		if (a->f[i].id != b->f[i].id || a->f[i].len != b->f[i].len ||
		    memcmp(a->f[i].v, b->f[i].v, k))
			abort();
	}
}

static void same_table(const struct hpack *h, nghttp2_hd_inflater *inf)
{
	size_t n = nghttp2_hd_inflate_get_num_table_entries(inf) - HPACK_STATIC_LAST;

	if (h->elen != n || h->size != nghttp2_hd_inflate_get_dynamic_table_size(inf) ||
	    h->max_size != nghttp2_hd_inflate_get_max_dynamic_table_size(inf))
		abort();
	for (uint32_t i = 1; i <= n; i++) {
		const nghttp2_nv *nv =
			nghttp2_hd_inflate_get_table_entry(inf, HPACK_STATIC_LAST + i);
		uint32_t nlen, vlen;
		unsigned id;

		if (hpack__entry(h, i, &id, &nlen, &vlen) || nlen != nv->namelen ||
		    vlen != nv->valuelen || id != name_of(nv->name, nv->namelen))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct out a, b;
	uint64_t failures = 0;
	struct hpack_mem mem = { .max = 1u << 20, .failures = &failures };
	nghttp2_hd_inflater *inf;
	struct hpack h;
	size_t piece, off = 1;

	if (!size)
		return 0;
	if (!static_id[2])
		for (unsigned i = 1; i <= HPACK_STATIC_LAST; i++) {
			const char *n = hpack__static_name(i, NULL);

			static_id[i] = (uint8_t)name_of((const uint8_t *)n, strlen(n));
		}
	piece = 1 + data[0] % 32;
	if (nghttp2_hd_inflate_new(&inf))
		return 0;
	if (nghttp2_hd_inflate_change_table_size(inf, 65536)) {
		nghttp2_hd_inflate_del(inf);
		return 0;
	}
	hpack__init(&h, &conf, &mem);
	while (off + 2 <= size) {
		size_t n = (size_t)data[off] << 8 | data[off + 1];
		int ra, rb;

		off += 2;
		if (n > size - off)
			n = size - off;
		rb = ref_block(inf, data + off, n, &b);
		ra = our_block(&h, data + off, n, piece, &a);
		off += n;
		if (ra != rb)
			abort();
		if (ra)
			break;
		compare(&a, &b);
		same_table(&h, inf);
	}
	hpack__fini(&h);
	if (mem.used || failures)
		abort();
	nghttp2_hd_inflate_del(inf);
	return 0;
}
