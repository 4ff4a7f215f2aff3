// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/http/hpack.c against libnghttp2 (the Debian library the parser
 * used before, and what every h2 server and client in the tests speaks): header lists
 * encoded by libnghttp2's deflater (Huffman where it is shorter, literals with and without
 * indexing and never indexed, table size updates down and up, evictions, entries larger
 * than the table), decoded by ours fed in random pieces and by libnghttp2's inflater; the
 * fields the reader asks for must come out the same, in the same order, with the same
 * lengths and kept bytes, and the dynamic tables must hold the same entries (name and
 * value lengths) after every block. Then the same blocks mutated (bytes flipped, cut,
 * inserted): both decoders must accept or refuse each alike, and agree on what they emit
 * and hold when they accept. Every Huffman code is checked against libnghttp2's encoding.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "shipper/network/protocols/http/hpack.h"

enum { ID_NONE, ID_METHOD, ID_PATH, ID_STATUS, ID_CTYPE, ID_KEEP, ID_SHORT, ID_COUNT };

static const char *const id_names[ID_COUNT] = {
	[ID_METHOD] = ":method",     [ID_PATH] = ":path",  [ID_STATUS] = ":status",
	[ID_CTYPE] = "content-type", [ID_KEEP] = "x-keep", [ID_SHORT] = "x-short",
};

static unsigned t_name_of(const uint8_t *n, size_t len)
{
	for (unsigned i = 1; i < ID_COUNT; i++)
		if (strlen(id_names[i]) == len && !memcmp(n, id_names[i], len))
			return i;
	return ID_NONE;
}

static const uint16_t t_keep[ID_COUNT] = {
	[ID_METHOD] = 7,
	[ID_PATH] = 256,
	[ID_STATUS] = 3,
	[ID_CTYPE] = 128,
	[ID_KEEP] = HPACK_VALUE_KEEP,
	[ID_SHORT] = 4,
};

static uint8_t t_static_id[HPACK_STATIC_LAST + 1];

static struct hpack_conf t_conf = {
	.name_of = t_name_of,
	.static_id = t_static_id,
	.keep = t_keep,
	.ids = ID_COUNT,
	.table_max = 65536,
};

#define MAX_F 256

struct field {
	unsigned id;
	size_t len;
	uint8_t v[HPACK_VALUE_KEEP];
};

struct out {
	struct field f[MAX_F];
	size_t n;
};

static void t_emit(void *user, unsigned id, const uint8_t *v, size_t len)
{
	struct out *o = user;
	struct field *f;
	size_t k = len < t_keep[id] ? len : t_keep[id];

	cr_assert(id > 0 && id < ID_COUNT);
	cr_assert_lt(o->n, MAX_F);
	f = &o->f[o->n++];
	f->id = id;
	f->len = len;
	memcpy(f->v, v, k);
}

static void setup(void)
{
	for (unsigned i = 1; i <= HPACK_STATIC_LAST; i++) {
		const char *n = hpack__static_name(i, NULL);

		t_static_id[i] = (uint8_t)t_name_of((const uint8_t *)n, strlen(n));
	}
}

/* libnghttp2's decoding of a block: the fields of a non-zero id; -1 if it refused it. */
static int ref_decode(nghttp2_hd_inflater *inf, const uint8_t *p, size_t n, struct out *o)
{
	o->n = 0;
	for (;;) {
		nghttp2_nv nv;
		int fl = 0;
		ssize_t r = nghttp2_hd_inflate_hd2(inf, &nv, &fl, p, n, 1);

		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
		if (fl & NGHTTP2_HD_INFLATE_EMIT) {
			unsigned id = t_name_of(nv.name, nv.namelen);

			if (id)
				t_emit(o, id, nv.value, nv.valuelen);
		}
		if (fl & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(inf);
			return 0;
		}
		if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && !n)
			return 0;
	}
}

/* Ours, fed in pieces of random lengths (1 to max_piece bytes). */
static int our_decode(struct hpack *h, const uint8_t *p, size_t n, struct out *o, size_t max_piece)
{
	size_t off = 0;

	o->n = 0;
	hpack__begin(h);
	while (off < n) {
		size_t k = 1 + (size_t)rand() % max_piece;

		if (k > n - off)
			k = n - off;
		if (hpack__feed(h, p + off, k, t_emit, o))
			return -1;
		off += k;
	}
	return hpack__end(h) ? -1 : 0;
}

static void same_out(const struct out *a, const struct out *b, unsigned block)
{
	cr_assert_eq(a->n, b->n, "block %u: %zu fields, libnghttp2 %zu", block, a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		size_t k = a->f[i].len < t_keep[a->f[i].id] ? a->f[i].len : t_keep[a->f[i].id];

		cr_assert_eq(a->f[i].id, b->f[i].id, "block %u field %zu", block, i);
		cr_assert_eq(a->f[i].len, b->f[i].len, "block %u field %zu", block, i);
		cr_assert(!memcmp(a->f[i].v, b->f[i].v, k), "block %u field %zu", block, i);
	}
}

static void same_table(struct hpack *h, nghttp2_hd_inflater *inf, unsigned block)
{
	size_t n = nghttp2_hd_inflate_get_num_table_entries(inf) - HPACK_STATIC_LAST;

	cr_assert_eq(h->elen, n, "block %u: %u entries, libnghttp2 %zu", block, h->elen, n);
	cr_assert_eq(h->size, nghttp2_hd_inflate_get_dynamic_table_size(inf), "block %u", block);
	cr_assert_eq(h->max_size, nghttp2_hd_inflate_get_max_dynamic_table_size(inf), "block %u",
		     block);
	for (uint32_t i = 1; i <= n; i++) {
		const nghttp2_nv *nv =
			nghttp2_hd_inflate_get_table_entry(inf, HPACK_STATIC_LAST + i);
		uint32_t nlen, vlen;
		unsigned id;

		cr_assert_eq(hpack__entry(h, i, &id, &nlen, &vlen), 0);
		cr_assert_eq(nlen, nv->namelen, "block %u entry %u", block, i);
		cr_assert_eq(vlen, nv->valuelen, "block %u entry %u", block, i);
		cr_assert_eq(id, t_name_of(nv->name, nv->namelen), "block %u entry %u", block, i);
	}
}

static const char *const pool[] = {
	":method",    ":path",	    ":status",	    "content-type",  "x-keep",
	"x-short",    ":authority", ":scheme",	    "server",	     "date",
	"user-agent", "accept",	    "cookie",	    "x-custom-name", "grpc-status",
	"te",	      "host",	    "x-request-id", "set-cookie",    "content-length",
};

/* A value: text (Huffman shorter), bytes of any value (raw shorter), or repeats. */
static size_t rand_value(uint8_t *v, size_t cap)
{
	static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789/-_.,: ;=ABCXYZ";
	size_t len;

	switch (rand() % 8) {
	case 0:
		len = 0;
		break;
	case 1:
		len = (size_t)rand() % 3000 + 1000; /* evicts most of a 4096-byte table */
		break;
	default:
		len = (size_t)rand() % 80;
		break;
	}
	if (len > cap)
		len = cap;
	if (rand() % 4) {
		for (size_t i = 0; i < len; i++)
			v[i] = (uint8_t)text[rand() % (int)(sizeof(text) - 1)];
	} else {
		for (size_t i = 0; i < len; i++)
			v[i] = (uint8_t)rand();
	}
	return len;
}

#define BLK_MAX (1u << 17)

/* One block of random fields from the deflater, maybe after a change of its table size. */
static size_t rand_block(nghttp2_hd_deflater *def, uint8_t *blk, uint8_t (*vals)[5000])
{
	static const size_t sizes[] = { 0, 32, 100, 1024, 4096, 8192, 65536 };
	nghttp2_nv nv[16];
	size_t nf = (size_t)rand() % 16;
	ssize_t r;

	if (rand() % 10 == 0)
		cr_assert_eq(nghttp2_hd_deflate_change_table_size(def, sizes[rand() % 7]), 0);
	for (size_t i = 0; i < nf; i++) {
		const char *name = pool[rand() % (int)(sizeof(pool) / sizeof(pool[0]))];

		nv[i].name = (uint8_t *)(uintptr_t)name;
		nv[i].namelen = strlen(name);
		nv[i].value = vals[i];
		nv[i].valuelen = rand_value(vals[i], sizeof(vals[i]));
		nv[i].flags = rand() % 8 ? NGHTTP2_NV_FLAG_NONE : NGHTTP2_NV_FLAG_NO_INDEX;
		/* Repeats, for indexed fields. */
		if (rand() % 3 == 0 && nv[i].valuelen > 10)
			nv[i].valuelen = 10;
	}
	r = nghttp2_hd_deflate_hd(def, blk, BLK_MAX, nv, nf);
	cr_assert_geq(r, 0);
	return (size_t)r;
}

static nghttp2_hd_inflater *ref_new(void)
{
	nghttp2_hd_inflater *inf;

	cr_assert_eq(nghttp2_hd_inflate_new(&inf), 0);
	cr_assert_eq(nghttp2_hd_inflate_change_table_size(inf, 65536), 0);
	return inf;
}

TestSuite(hpack, .init = setup);

Test(hpack, same_as_libnghttp2_on_its_encoding)
{
	static uint8_t blk[BLK_MAX], vals[16][5000];
	static struct out a, b;
	struct hpack_mem mem = { .max = 1u << 20 };
	uint64_t failures = 0;
	unsigned sizes_seen = 0;

	mem.failures = &failures;
	srand(27);
	for (int conn = 0; conn < 40; conn++) {
		nghttp2_hd_deflater *def;
		nghttp2_hd_inflater *inf = ref_new();
		struct hpack h;

		cr_assert_eq(nghttp2_hd_deflate_new(&def, 65536), 0);
		hpack__init(&h, &t_conf, &mem);
		for (unsigned i = 0; i < 200; i++) {
			size_t n = rand_block(def, blk, vals);

			if (n && (blk[0] & 0xe0) == 0x20)
				sizes_seen++;
			cr_assert_eq(ref_decode(inf, blk, n, &b), 0);
			cr_assert_eq(our_decode(&h, blk, n, &a, 1 + (size_t)rand() % 64), 0,
				     "conn %d block %u", conn, i);
			same_out(&a, &b, i);
			same_table(&h, inf, i);
		}
		hpack__fini(&h);
		cr_assert_eq(mem.used, 0);
		nghttp2_hd_deflate_del(def);
		nghttp2_hd_inflate_del(inf);
	}
	cr_assert_gt(sizes_seen, 50);
	cr_assert_eq(failures, 0);
}

/*
 * Mutated blocks: whatever libnghttp2 refuses ours refuses, and the other way round; where
 * both accept, the same fields and tables. A refused block ends the connection's decoding
 * (the parser then forgets the table), so each mutation runs on a copy of the state:
 * both decoders replay the connection's blocks so far.
 */
Test(hpack, refuses_what_libnghttp2_refuses)
{
	static uint8_t blk[BLK_MAX], mut[BLK_MAX + 8], vals[16][5000];
	static uint8_t hist[64][2048];
	static size_t hist_n[64];
	static struct out a, b;
	struct hpack_mem mem = { .max = 1u << 20 };
	uint64_t failures = 0;
	unsigned refused = 0, accepted = 0;

	mem.failures = &failures;
	srand(2727);
	for (int conn = 0; conn < 60; conn++) {
		nghttp2_hd_deflater *def;
		unsigned nh = 0;

		cr_assert_eq(nghttp2_hd_deflate_new(&def, 65536), 0);
		for (unsigned i = 0; i < 40; i++) {
			size_t n = rand_block(def, blk, vals), m = n;
			nghttp2_hd_inflater *inf = ref_new();
			struct hpack h;
			int ra, rb;

			if (n > sizeof(hist[0])) /* long values: not kept for replay */
				break;
			hpack__init(&h, &t_conf, &mem);
			for (unsigned k = 0; k < nh; k++) {
				cr_assert_eq(ref_decode(inf, hist[k], hist_n[k], &b), 0);
				cr_assert_eq(our_decode(&h, hist[k], hist_n[k], &a, 4096), 0);
			}
			memcpy(mut, blk, n);
			switch (rand() % 4) {
			case 0:
				if (m)
					mut[rand() % (int)m] ^= (uint8_t)(1u << (rand() % 8));
				break;
			case 1:
				if (m)
					m = (size_t)rand() % m;
				break;
			case 2:
				if (m)
					mut[rand() % (int)m] = (uint8_t)rand();
				break;
			default: {
				size_t at = m ? (size_t)rand() % m : 0;

				memmove(mut + at + 1, mut + at, m - at);
				mut[at] = (uint8_t)rand();
				m++;
				break;
			}
			}
			rb = ref_decode(inf, mut, m, &b);
			ra = our_decode(&h, mut, m, &a, 1 + (size_t)rand() % 16);
			cr_assert_eq(ra, rb, "conn %d block %u: ours %d, libnghttp2 %d", conn, i,
				     ra, rb);
			if (!ra) {
				accepted++;
				same_out(&a, &b, i);
				same_table(&h, inf, i);
			} else {
				refused++;
			}
			hpack__fini(&h);
			nghttp2_hd_inflate_del(inf);
			if (nh < 64) {
				memcpy(hist[nh], blk, n);
				hist_n[nh++] = n;
			} else {
				break;
			}
		}
		nghttp2_hd_deflate_del(def);
	}
	cr_assert_gt(refused, 50);
	cr_assert_gt(accepted, 50);
	cr_assert_eq(mem.used, 0);
}

/* Every symbol's code, and strings of each symbol alone, as libnghttp2 encodes them. */
Test(hpack, every_huffman_code)
{
	struct hpack_mem mem = { .max = 1u << 20 };
	uint64_t failures = 0;
	nghttp2_hd_deflater *def;
	nghttp2_hd_inflater *inf = ref_new();
	static struct out a, b;
	static uint8_t blk[4096];
	struct hpack h;

	mem.failures = &failures;
	cr_assert_eq(nghttp2_hd_deflate_new(&def, 0), 0);
	hpack__init(&h, &t_conf, &mem);
	for (unsigned s = 0; s < 256; s++) {
		for (size_t len = 1; len <= 40; len += 13) {
			uint8_t v[64];
			nghttp2_nv nv = { (uint8_t *)"x-keep", v, 6, len, NGHTTP2_NV_FLAG_NONE };
			ssize_t n;

			/* The symbol among letters, so that Huffman is the shorter. */
			for (size_t i = 0; i < len; i++)
				v[i] = i % 3 == 1 ? (uint8_t)s : 'e';
			n = nghttp2_hd_deflate_hd(def, blk, sizeof(blk), &nv, 1);
			cr_assert_gt(n, 0);
			cr_assert_eq(ref_decode(inf, blk, (size_t)n, &b), 0);
			cr_assert_eq(our_decode(&h, blk, (size_t)n, &a, 3), 0, "symbol %u", s);
			same_out(&a, &b, s);
			cr_assert_eq(a.n, 1);
			cr_assert(!memcmp(a.f[0].v, v, len));
		}
	}
	hpack__fini(&h);
	nghttp2_hd_deflate_del(def);
	nghttp2_hd_inflate_del(inf);
}

/* Hand-made blocks that libnghttp2 refuses: ours too. */
Test(hpack, malformed)
{
	static const struct {
		const char *what;
		uint8_t b[16];
		size_t n;
	} bad[] = {
		{ "index 0", { 0x80 }, 1 },
		{ "index past the table", { 0xbe }, 1 },
		{ "size update after a field", { 0x82, 0x20 }, 2 },
		{ "size update over the maximum", { 0x3f, 0xe2, 0xff, 0x03 }, 4 },
		{ "integer of 6 continuation bytes",
		  { 0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 },
		  7 },
		{ "integer over 32 bits", { 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f }, 6 },
		{ "string over 64 KiB", { 0x00, 0x7f, 0x82, 0x80, 0x04 }, 5 },
		{ "block ends in a string", { 0x00, 0x03, 'a', 'b' }, 4 },
		{ "block ends in an integer", { 0xff }, 1 },
		{ "Huffman EOS", { 0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00 }, 7 },
		{ "Huffman padding of 8 bits", { 0x00, 0x82, 0x1f, 0xff, 0x00 }, 5 },
		{ "Huffman padding of zeros", { 0x00, 0x81, 0x00, 0x00 }, 4 },
		/* '&' (8 bits), then a byte of ones. */
		{ "Huffman padding of 8 ones", { 0x00, 0x82, 0xf8, 0xff, 0x00 }, 5 },
	};
	struct hpack_mem mem = { .max = 1u << 20 };
	uint64_t failures = 0;
	static struct out a, b;

	mem.failures = &failures;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nghttp2_hd_inflater *inf = ref_new();
		struct hpack h;

		hpack__init(&h, &t_conf, &mem);
		cr_assert_eq(ref_decode(inf, bad[i].b, bad[i].n, &b), -1, "%s", bad[i].what);
		cr_assert_eq(our_decode(&h, bad[i].b, bad[i].n, &a, 1), -1, "%s", bad[i].what);
		cr_assert_eq(our_decode(&h, bad[i].b, bad[i].n, &a, 16), -1, "%s", bad[i].what);
		hpack__fini(&h);
		nghttp2_hd_inflate_del(inf);
	}
}

/* An unknown table: fields that refer to it are counted, the others still decoded. */
Test(hpack, unknown_table)
{
	/* :method GET, index 70, :path literal "/x" with static name, literal name index 65. */
	static const uint8_t blk[] = { 0x82, 0xc6, 0x04, 0x02, '/', 'x', 0x7f, 0x02, 0x01, 'v' };
	struct hpack_mem mem = { .max = 1u << 20 };
	uint64_t failures = 0;
	static struct out a;
	struct hpack h;

	mem.failures = &failures;
	hpack__init(&h, &t_conf, &mem);
	hpack__forget(&h);
	cr_assert_eq(our_decode(&h, blk, sizeof(blk), &a, 1), 0);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(a.f[0].id, ID_METHOD);
	cr_assert_eq(a.f[1].id, ID_PATH);
	cr_assert_eq(a.f[1].len, 2);
	cr_assert_eq(h.unknown, 2);
	cr_assert_eq(h.elen, 0);
	hpack__fini(&h);
}

/* The table's memory comes from the shared budget: out of it, the block is refused. */
Test(hpack, memory_budget)
{
	static uint8_t blk[8192];
	struct hpack_mem mem = { .max = 200 };
	uint64_t failures = 0;
	static struct out a;
	struct hpack h;
	/* A literal with incremental indexing, name "x-keep", value "v". */
	static const uint8_t lit[] = { 0x40, 0x06, 'x', '-', 'k', 'e', 'e', 'p', 0x01, 'v' };

	mem.failures = &failures;
	memcpy(blk, lit, sizeof(lit));
	hpack__init(&h, &t_conf, &mem);
	cr_assert_eq(our_decode(&h, blk, sizeof(lit), &a, 64), -1);
	cr_assert_gt(failures, 0);
	hpack__fini(&h);
	cr_assert_eq(mem.used, 0);
}
