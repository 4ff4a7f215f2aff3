// SPDX-License-Identifier: Apache-2.0
/*
 * HPACK decoding for the HTTP/2 parser (see hpack.h). One state machine per direction, fed
 * bytes as they come: a representation's first byte, its integer, its strings' headers and
 * their bytes; strings are consumed in runs, Huffman ones through a 12-bit table that decodes
 * up to two symbols a lookup (most of a header value's symbols are 5 to 8 bits long), longer
 * codes by the code's canonical order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/hpack.h"

enum st {
	ST_OP,	     /* a representation's first byte */
	ST_INT,	     /* its integer's continuation bytes */
	ST_SLEN,     /* a string's first byte */
	ST_SLEN_INT, /* its length's continuation bytes */
	ST_STR,	     /* its bytes */
};

enum rep {
	R_INDEXED,
	R_LITERAL,
	R_SIZE,
};

struct hpack_entry {
	uint32_t nlen, vlen;
	uint32_t voff; /* of the kept value in vals */
	uint16_t vkept;
	uint8_t id;
};

#define ENTS_MIN 16u
#define VALS_MIN 256u

/* RFC 7541 appendix A. */
static const char *const static_table[HPACK_STATIC_LAST + 1][2] = {
	{ "", "" },
	{ ":authority", "" },
	{ ":method", "GET" },
	{ ":method", "POST" },
	{ ":path", "/" },
	{ ":path", "/index.html" },
	{ ":scheme", "http" },
	{ ":scheme", "https" },
	{ ":status", "200" },
	{ ":status", "204" },
	{ ":status", "206" },
	{ ":status", "304" },
	{ ":status", "400" },
	{ ":status", "404" },
	{ ":status", "500" },
	{ "accept-charset", "" },
	{ "accept-encoding", "gzip, deflate" },
	{ "accept-language", "" },
	{ "accept-ranges", "" },
	{ "accept", "" },
	{ "access-control-allow-origin", "" },
	{ "age", "" },
	{ "allow", "" },
	{ "authorization", "" },
	{ "cache-control", "" },
	{ "content-disposition", "" },
	{ "content-encoding", "" },
	{ "content-language", "" },
	{ "content-length", "" },
	{ "content-location", "" },
	{ "content-range", "" },
	{ "content-type", "" },
	{ "cookie", "" },
	{ "date", "" },
	{ "etag", "" },
	{ "expect", "" },
	{ "expires", "" },
	{ "from", "" },
	{ "host", "" },
	{ "if-match", "" },
	{ "if-modified-since", "" },
	{ "if-none-match", "" },
	{ "if-range", "" },
	{ "if-unmodified-since", "" },
	{ "last-modified", "" },
	{ "link", "" },
	{ "location", "" },
	{ "max-forwards", "" },
	{ "proxy-authenticate", "" },
	{ "proxy-authorization", "" },
	{ "range", "" },
	{ "referer", "" },
	{ "refresh", "" },
	{ "retry-after", "" },
	{ "server", "" },
	{ "set-cookie", "" },
	{ "strict-transport-security", "" },
	{ "transfer-encoding", "" },
	{ "user-agent", "" },
	{ "vary", "" },
	{ "via", "" },
	{ "www-authenticate", "" },
};

/* RFC 7541 appendix B: the code's length of each symbol, 256 the EOS; the code is canonical. */
static const uint8_t huff_len[257] = {
	13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28,
	30, 28, 28, 28, 28, 28, 28, 28, 28, 28, 6,  10, 10, 12, 13, 6,	8,  11, 10, 10, 8,  11,
	8,  6,	6,  6,	5,  5,	5,  6,	6,  6,	6,  6,	6,  6,	7,  8,	15, 6,	12, 10, 13, 6,
	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,
	8,  7,	8,  13, 19, 13, 14, 6,	15, 5,	6,  5,	6,  5,	6,  6,	6,  5,	7,  7,	6,  6,
	6,  5,	6,  7,	6,  5,	5,  6,	7,  7,	7,  7,	7,  15, 11, 14, 13, 28, 20, 22, 20, 20,
	22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21,
	22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
	21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23,
	22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26,
	28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27,
	26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
};

/* The lengths of static_table's strings. */
static uint8_t static_len[HPACK_STATIC_LAST + 1][2];

#define HUFF_EOS 256u
#define HUFF_MAX_LEN 30u
#define FAST_BITS 12u

/* The symbols a 12-bit window begins with: n of them (0: the first code is longer). */
struct fast {
	uint8_t n, bits, len0, s0, s1;
};

static struct {
	uint32_t first[HUFF_MAX_LEN + 1]; /* the first code of each length */
	uint16_t count[HUFF_MAX_LEN + 1];
	uint16_t offset[HUFF_MAX_LEN + 1]; /* into sorted[] */
	uint16_t sorted[257];		   /* symbols by code */
	struct fast fast[1u << FAST_BITS];
} huff;

static pthread_once_t huff_once = PTHREAD_ONCE_INIT;

/*
 * The symbol whose code begins the 30 bits w (most significant first), and its length, known
 * to be from l on.
 */
static unsigned huff_slow(uint32_t w, unsigned l, unsigned *ret_len)
{
	for (; l <= HUFF_MAX_LEN; l++) {
		uint32_t c = w >> (HUFF_MAX_LEN - l);

		if (c - huff.first[l] < huff.count[l]) {
			*ret_len = l;
			return huff.sorted[huff.offset[l] + c - huff.first[l]];
		}
	}
	/* Not reached: the code is complete. */
	*ret_len = HUFF_MAX_LEN + 1;
	return HUFF_EOS;
}

static void huff_build(void)
{
	uint32_t code = 0;
	uint16_t n = 0;

	for (unsigned i = 0; i <= HPACK_STATIC_LAST; i++)
		for (unsigned k = 0; k < 2; k++)
			static_len[i][k] = (uint8_t)strlen(static_table[i][k]);

	for (unsigned l = 1; l <= HUFF_MAX_LEN; l++) {
		huff.first[l] = code;
		huff.offset[l] = n;
		for (unsigned s = 0; s <= HUFF_EOS; s++)
			if (huff_len[s] == l)
				huff.sorted[n++] = (uint16_t)s, code++;
		huff.count[l] = (uint16_t)(n - huff.offset[l]);
		code <<= 1;
	}
	for (uint32_t x = 0; x < 1u << FAST_BITS; x++) {
		struct fast *f = &huff.fast[x];
		uint32_t w = x << (HUFF_MAX_LEN - FAST_BITS);
		unsigned l, s = huff_slow(w, 5, &l);

		if (l > FAST_BITS)
			continue;
		f->n = 1, f->bits = f->len0 = (uint8_t)l, f->s0 = (uint8_t)s;
		s = huff_slow(w << l & ((1u << HUFF_MAX_LEN) - 1), 5, &l);
		if (f->bits + l <= FAST_BITS) {
			f->n = 2;
			f->bits = (uint8_t)(f->bits + l);
			f->s1 = (uint8_t)s;
		}
	}
}

const char *hpack__static_name(unsigned idx, const char **ret_value)
{
	if (!idx || idx > HPACK_STATIC_LAST)
		return NULL;
	if (ret_value)
		*ret_value = static_table[idx][1];
	return static_table[idx][0];
}

/* --- memory --- */

static void *mem_realloc(struct hpack *h, void *p, size_t old, size_t size)
{
	void *n;

	if (size > h->mem->max || h->mem->used - old + size > h->mem->max) {
		(*h->mem->failures)++;
		return NULL;
	}
	n = realloc(p, size);
	if (!n) {
		(*h->mem->failures)++;
		return NULL;
	}
	h->mem->used = h->mem->used - old + size;
	return n;
}

static void table_free(struct hpack *h)
{
	free(h->ents);
	free(h->vals);
	h->mem->used -= (size_t)h->ecap * sizeof(*h->ents) + h->vcap;
	h->ents = NULL;
	h->vals = NULL;
	h->ecap = h->ehead = h->elen = 0;
	h->vcap = h->vhead = h->vused = 0;
	h->size = 0;
}

void hpack__init(struct hpack *h, const struct hpack_conf *conf, struct hpack_mem *mem)
{
	pthread_once(&huff_once, huff_build);
	memset(h, 0, sizeof(*h));
	h->conf = conf;
	h->mem = mem;
	h->known = true;
	h->max_size = HPACK_TABLE_DEFAULT;
}

void hpack__fini(struct hpack *h)
{
	if (h && h->mem)
		table_free(h);
}

void hpack__forget(struct hpack *h)
{
	h->known = false;
	table_free(h);
}

void hpack__begin(struct hpack *h)
{
	h->st = ST_OP;
	h->field_seen = false;
	h->unknown = 0;
}

/* --- the table --- */

static struct hpack_entry *entry(struct hpack *h, uint32_t i)
{
	return &h->ents[(h->ehead - i) & (h->ecap - 1)];
}

static void evict_one(struct hpack *h)
{
	struct hpack_entry *e = entry(h, h->elen);

	h->size -= e->nlen + e->vlen + HPACK_ENTRY_OVERHEAD;
	h->vused -= e->vkept;
	h->elen--;
}

static void evict_to(struct hpack *h, uint32_t size)
{
	while (h->elen && h->size > size)
		evict_one(h);
}

/* Room for one more entry and kept bytes more of values, the oldest first in vals. */
static int table_grow(struct hpack *h, uint32_t kept)
{
	if (h->elen == h->ecap) {
		uint32_t ncap = h->ecap ? h->ecap * 2 : ENTS_MIN;
		struct hpack_entry *n = mem_realloc(h, NULL, 0, (size_t)ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (uint32_t i = 0; i < h->elen; i++)
			n[h->elen - 1 - i] = *entry(h, i + 1);
		free(h->ents);
		h->mem->used -= (size_t)h->ecap * sizeof(*n);
		h->ents = n;
		h->ecap = ncap;
		h->ehead = h->elen;
	}
	if (h->vused + kept > h->vcap) {
		uint32_t ncap = h->vcap ? h->vcap : VALS_MIN;
		uint32_t at = 0;
		uint8_t *n;

		while (ncap < h->vused + kept)
			ncap *= 2;
		n = mem_realloc(h, NULL, 0, ncap);
		if (!n)
			return -ENOMEM;
		/* The kept values in order, oldest first, from 0. */
		for (uint32_t i = h->elen; i >= 1; i--) {
			struct hpack_entry *e = entry(h, i);

			for (uint32_t k = 0; k < e->vkept; k++)
				n[at + k] = h->vals[(e->voff + k) & (h->vcap - 1)];
			e->voff = at;
			at += e->vkept;
		}
		free(h->vals);
		h->mem->used -= h->vcap;
		h->vals = n;
		h->vcap = ncap;
		h->vhead = at;
	}
	return 0;
}

/* RFC 7541 4.4: evicts for room, then adds, unless the entry is larger than the table. */
static int table_add(struct hpack *h, unsigned id, uint32_t nlen, uint32_t vlen, const uint8_t *v,
		     uint32_t kept)
{
	uint64_t room = (uint64_t)nlen + vlen + HPACK_ENTRY_OVERHEAD;
	struct hpack_entry *e;
	int err;

	while (h->elen && h->size + room > h->max_size)
		evict_one(h);
	if (room > h->max_size)
		return 0;
	err = table_grow(h, kept);
	if (err)
		return err;
	e = &h->ents[h->ehead & (h->ecap - 1)];
	h->ehead++;
	h->elen++;
	h->size += (uint32_t)room;
	e->nlen = nlen;
	e->vlen = vlen;
	e->id = (uint8_t)id;
	e->vkept = (uint16_t)kept;
	e->voff = h->vhead;
	if (kept) {
		uint32_t first = h->vcap - h->vhead < kept ? h->vcap - h->vhead : kept;

		memcpy(h->vals + h->vhead, v, first);
		memcpy(h->vals, v + first, kept - first);
		h->vhead = (h->vhead + kept) & (h->vcap - 1);
	}
	h->vused += kept;
	return 0;
}

int hpack__entry(const struct hpack *h, uint32_t i, unsigned *ret_id, uint32_t *ret_nlen,
		 uint32_t *ret_vlen)
{
	const struct hpack_entry *e;

	if (!h->known || !i || i > h->elen)
		return -ENOENT;
	e = &h->ents[(h->ehead - i) & (h->ecap - 1)];
	*ret_id = e->id;
	*ret_nlen = e->nlen;
	*ret_vlen = e->vlen;
	return 0;
}

/* The kept value of dynamic entry i, contiguous: in the ring, or copied to h->value. */
static const uint8_t *entry_value(struct hpack *h, const struct hpack_entry *e)
{
	uint32_t mask = h->vcap - 1;

	if (!e->vkept)
		return h->value;
	if ((e->voff & mask) + e->vkept <= h->vcap)
		return h->vals + (e->voff & mask);
	for (uint32_t k = 0; k < e->vkept; k++)
		h->value[k] = h->vals[(e->voff + k) & mask];
	return h->value;
}

/* --- Huffman --- */

/*
 * k bytes of the Huffman string in progress; final: its last ones. Decoded symbols go to
 * h->value or h->name while fewer than h->keep came, all are counted in h->out.
 */
static int huff_feed(struct hpack *h, const uint8_t *p, size_t k, bool final)
{
	const uint8_t *end = p + k;
	uint8_t *dst = h->in_name ? h->name : h->value;
	uint32_t keep = h->keep, o = h->out;
	uint64_t acc = h->acc;
	uint32_t nb = h->nb;

	for (;;) {
		struct fast f;

		if (end - p >= 8) {
			uint64_t w;

			/* Whole bytes only: the bits past nb are those of the next byte. */
			memcpy(&w, p, 8);
			acc |= __builtin_bswap64(w) >> nb;
			p += (63 - nb) >> 3;
			nb |= 56;
		} else {
			while (nb <= 56 && p < end) {
				acc |= (uint64_t)*p++ << (56 - nb);
				nb += 8;
			}
		}
		if (nb < HUFF_MAX_LEN)
			break;
		do {
			f = huff.fast[acc >> (64 - FAST_BITS)];
			if (f.n) {
				if (o < keep)
					dst[o] = f.s0;
				o++;
				if (f.n == 2) {
					if (o < keep)
						dst[o] = f.s1;
					o++;
				}
				acc <<= f.bits;
				nb -= f.bits;
			} else {
				unsigned l, s = huff_slow((uint32_t)(acc >> (64 - HUFF_MAX_LEN)),
							  FAST_BITS + 1, &l);

				if (s == HUFF_EOS)
					return -EPROTO;
				if (o < keep)
					dst[o] = (uint8_t)s;
				o++;
				acc <<= l;
				nb -= l;
			}
		} while (nb >= HUFF_MAX_LEN);
	}
	/*
	 * Fewer than 30 bits left, all of the bytes given: a code may not be whole yet. The bits
	 * past nb are 0 (only whole bytes of the string were loaded).
	 */
	if (final) {
		while (nb) {
			struct fast f = huff.fast[acc >> (64 - FAST_BITS)];
			unsigned l, s;

			/* RFC 7541 5.2: at most 7 bits of padding, the EOS code's first ones. */
			if (nb <= 7 && acc >> (64 - nb) == (1u << nb) - 1)
				break;
			/* A code is whole only if it ends within nb. */
			if (f.n == 2 && f.bits <= nb) {
				if (o < keep)
					dst[o] = f.s0;
				o++;
				s = f.s1, l = f.bits;
			} else if (f.n && f.len0 <= nb) {
				s = f.s0, l = f.len0;
			} else {
				s = huff_slow((uint32_t)(acc >> (64 - HUFF_MAX_LEN)), 5, &l);
				if (s == HUFF_EOS || l > nb)
					return -EPROTO;
			}
			if (o < keep)
				dst[o] = (uint8_t)s;
			o++;
			acc <<= l;
			nb -= l;
		}
		acc = 0;
		nb = 0;
	}
	h->acc = acc;
	h->nb = nb;
	h->out = o;
	return 0;
}

/* --- representations --- */

/* The integer in h->val is whole: 0, or -EPROTO when it is over max. */
static int int_check(const struct hpack *h, uint64_t max)
{
	return h->val > max ? -EPROTO : 0;
}

/* A continuation byte of the integer in progress; 1 when it ends it (as libnghttp2 takes it). */
static int int_more(struct hpack *h, uint8_t b)
{
	if (h->shift >= 32)
		return -EPROTO;
	h->val += (uint64_t)(b & 0x7f) << h->shift;
	if (h->val > UINT32_MAX)
		return -EPROTO;
	h->shift += 7;
	return !(b & 0x80);
}

static void emit_static(struct hpack *h, uint32_t idx, hpack_emit_fn emit, void *user)
{
	unsigned id = h->conf->static_id[idx];
	const char *v = static_table[idx][1];

	if (id)
		emit(user, id, (const uint8_t *)v, static_len[idx][1]);
}

/* The representation's integer is known. */
static int rep_int_done(struct hpack *h, hpack_emit_fn emit, void *user)
{
	uint64_t dyn = h->known ? h->elen : UINT32_MAX - HPACK_STATIC_LAST;
	uint32_t idx;
	int err;

	switch (h->rep) {
	case R_SIZE:
		err = int_check(h, h->conf->table_max);
		if (err)
			return err;
		h->max_size = (uint32_t)h->val;
		if (h->known)
			evict_to(h, h->max_size);
		h->st = ST_OP;
		return 0;
	case R_INDEXED:
		err = int_check(h, HPACK_STATIC_LAST + dyn);
		if (err || !h->val)
			return -EPROTO;
		idx = (uint32_t)h->val;
		h->field_seen = true;
		h->st = ST_OP;
		if (idx <= HPACK_STATIC_LAST) {
			emit_static(h, idx, emit, user);
		} else if (!h->known) {
			h->unknown++;
		} else {
			struct hpack_entry *e = entry(h, idx - HPACK_STATIC_LAST);

			if (e->id)
				emit(user, e->id, entry_value(h, e), e->vlen);
		}
		return 0;
	case R_LITERAL:
		err = int_check(h, HPACK_STATIC_LAST + dyn);
		if (err)
			return err;
		idx = (uint32_t)h->val;
		h->field_seen = true;
		h->name_unknown = false;
		if (!idx) {
			h->in_name = true;
		} else if (idx <= HPACK_STATIC_LAST) {
			h->in_name = false;
			h->id = h->conf->static_id[idx];
			h->nlen = static_len[idx][0];
		} else if (!h->known) {
			h->in_name = false;
			h->name_unknown = true;
			h->id = 0;
		} else {
			struct hpack_entry *e = entry(h, idx - HPACK_STATIC_LAST);

			h->in_name = false;
			h->id = e->id;
			h->nlen = e->nlen;
		}
		h->st = ST_SLEN;
		return 0;
	}
	return -EPROTO;
}

static int literal_done(struct hpack *h, hpack_emit_fn emit, void *user)
{
	uint32_t kept = h->out < h->keep ? h->out : h->keep;

	h->st = ST_OP;
	if (h->name_unknown) {
		h->unknown++;
		return 0;
	}
	if (h->id)
		emit(user, h->id, h->value, h->out);
	if (h->incremental && h->known)
		return table_add(h, h->id, h->nlen, h->out, h->value, kept);
	return 0;
}

/* The string in progress ended. */
static int string_done(struct hpack *h, hpack_emit_fn emit, void *user)
{
	if (h->in_name) {
		h->nlen = h->out;
		h->id = h->out <= HPACK_NAME_KEEP ? h->conf->name_of(h->name, h->out) : 0;
		if (h->id >= h->conf->ids)
			h->id = 0;
		h->in_name = false;
		h->st = ST_SLEN;
		return 0;
	}
	return literal_done(h, emit, user);
}

/* The string's length is known. */
static int string_len(struct hpack *h, hpack_emit_fn emit, void *user)
{
	int err = int_check(h, HPACK_STRING_MAX);

	if (err)
		return err;
	h->left = (uint32_t)h->val;
	h->out = 0;
	h->acc = 0;
	h->nb = 0;
	if (h->in_name)
		h->keep = HPACK_NAME_KEEP;
	else
		h->keep = h->id ? h->conf->keep[h->id] : 0;
	if (h->left) {
		h->st = ST_STR;
		return 0;
	}
	return string_done(h, emit, user);
}

int hpack__feed(struct hpack *h, const uint8_t *p, size_t n, hpack_emit_fn emit, void *user)
{
	size_t i = 0;
	int err = 0;

	while (i < n && !err) {
		uint8_t b = p[i];
		uint32_t k;

		switch (h->st) {
		case ST_OP:
			i++;
			h->shift = 0;
			if (b & 0x80) {
				h->rep = R_INDEXED;
				h->pfx = 0x7f;
			} else if (b & 0x40) {
				h->rep = R_LITERAL;
				h->pfx = 0x3f;
				h->incremental = true;
			} else if (b & 0x20) {
				/* RFC 7541 4.2: at the beginning of a block only. */
				if (h->field_seen) {
					err = -EPROTO;
					break;
				}
				h->rep = R_SIZE;
				h->pfx = 0x1f;
			} else {
				h->rep = R_LITERAL;
				h->pfx = 0x0f;
				h->incremental = false;
			}
			h->val = b & h->pfx;
			if (h->val == h->pfx)
				h->st = ST_INT;
			else
				err = rep_int_done(h, emit, user);
			break;
		case ST_INT:
			i++;
			err = int_more(h, b);
			if (err == 1)
				err = rep_int_done(h, emit, user);
			break;
		case ST_SLEN:
			i++;
			h->huff = b & 0x80;
			h->val = b & 0x7f;
			h->shift = 0;
			if (h->val == 0x7f)
				h->st = ST_SLEN_INT;
			else
				err = string_len(h, emit, user);
			break;
		case ST_SLEN_INT:
			i++;
			err = int_more(h, b);
			if (err == 1)
				err = string_len(h, emit, user);
			break;
		case ST_STR:
			k = n - i < h->left ? (uint32_t)(n - i) : h->left;
			h->left -= k;
			if (h->huff) {
				err = huff_feed(h, p + i, k, !h->left);
			} else {
				uint8_t *dst = h->in_name ? h->name : h->value;

				if (h->out < h->keep)
					memcpy(dst + h->out, p + i,
					       h->keep - h->out < k ? h->keep - h->out : k);
				h->out += k;
			}
			i += k;
			if (!err && !h->left)
				err = string_done(h, emit, user);
			break;
		}
	}
	return err < 0 ? err : 0;
}

int hpack__end(struct hpack *h)
{
	return h->st == ST_OP ? 0 : -EPROTO;
}
