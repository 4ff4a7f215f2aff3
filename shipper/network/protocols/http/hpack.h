/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: an HPACK decoder (RFC 7541) for a parser that reads a few header fields and
 * must keep the dynamic table exact for the rest. It accepts and refuses what libnghttp2
 * 1.52's inflater does (the settings' maximum table size as HTTP2_HPACK_TABLE_MAX, strings up
 * to 65536 bytes, integers of 32 bits, a size update only before a block's first field, the
 * Huffman code's EOS and padding rules), streams a block as it comes (split anywhere), and
 * keeps of each field only what its reader asked for:
 *
 *  - names are classed once, when a literal name or a table entry is seen (conf->name_of), as
 *    an id: 0 for a name nobody reads;
 *  - a field's value is kept (up to conf->keep[id] bytes, its whole length counted) only for
 *    an id that is not 0; every other string is decoded only to count its length (a table
 *    entry's size needs it) and to refuse an invalid Huffman string, without being stored;
 *  - a dynamic table entry is its name's id and length, its value's length, and the bytes
 *    kept of it: 16 bytes of index plus those, in two rings grown as needed.
 *
 * The table is either known (every block of the direction since its start was decoded) or
 * not (hpack__forget()): then a field that refers to it is skipped and counted (unknown), a
 * size update is checked but applies to nothing, and no entry is added.
 *
 * Every length and index comes from a traced process and is checked before use; memory is
 * taken from a budget shared by the decoders of a connection (struct hpack_mem).
 */
#ifndef ROVER_SHIPPER_HPACK_H
#define ROVER_SHIPPER_HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 7541 appendix A: entries of the static table. */
#define HPACK_STATIC_LAST 61u
/* RFC 7541 4.1: an entry's size is its name, its value and 32. */
#define HPACK_ENTRY_OVERHEAD 32u
/* RFC 7541 4.2 / RFC 9113 6.5.2: the table's size before any update. */
#define HPACK_TABLE_DEFAULT 4096u
/* The longest string taken, encoded (libnghttp2's NGHTTP2_HD_MAX_NV). */
#define HPACK_STRING_MAX 65536u
/* Bytes of a literal name kept to class it: longer names are id 0. */
#define HPACK_NAME_KEEP 16u
/* The most of a value any id may keep. */
#define HPACK_VALUE_KEEP 512u

/* Names to ids, and how much of each id's value is kept. */
struct hpack_conf {
	/* 0 for a name not read, else an id below ids. */
	unsigned (*name_of)(const uint8_t *name, size_t len);
	/* name_of() of each static table entry's name, [1..HPACK_STATIC_LAST]. */
	const uint8_t *static_id;
	/* Value bytes kept by id, at most HPACK_VALUE_KEEP. */
	const uint16_t *keep;
	unsigned ids;
	/* The largest table size an update may set (the receiver's SETTINGS_HEADER_TABLE_SIZE). */
	uint32_t table_max;
};

/* Memory the decoders sharing it may hold together. */
struct hpack_mem {
	size_t used, max;
	uint64_t *failures; /* counted at each refusal */
};

/*
 * A field of a non-zero id: value holds min(len, keep[id]) bytes, len is its whole length.
 * Valid during the call.
 */
typedef void (*hpack_emit_fn)(void *user, unsigned id, const uint8_t *value, size_t len);

struct hpack_entry;

struct hpack {
	const struct hpack_conf *conf;
	struct hpack_mem *mem;
	bool known;

	/* the dynamic table: entries newest first from ehead - 1, their kept values in vals */
	struct hpack_entry *ents;
	uint32_t ecap, ehead, elen;
	uint8_t *vals;
	uint32_t vcap, vhead, vused;
	uint32_t size, max_size;

	/* the block in progress */
	uint8_t st, rep, pfx;
	bool incremental;
	bool field_seen;
	bool name_unknown; /* refers to an entry of the unknown table */
	bool in_name;	   /* the string in progress is the name */
	bool huff;
	uint32_t shift;
	uint64_t val;
	uint32_t left; /* string bytes left */
	uint32_t keep; /* of the string in progress */
	uint32_t out;  /* its decoded length so far */
	uint64_t acc;  /* Huffman bits not yet decoded, most significant first */
	uint32_t nb;
	unsigned id;
	uint32_t nlen;
	uint32_t unknown; /* fields skipped in this block: they need the unknown table */
	uint8_t name[HPACK_NAME_KEEP];
	uint8_t value[HPACK_VALUE_KEEP];
};

/* An empty table, known, of HPACK_TABLE_DEFAULT. */
void hpack__init(struct hpack *h, const struct hpack_conf *conf, struct hpack_mem *mem);
void hpack__fini(struct hpack *h);
/* The table is unknown from now on (a block was lost or refused): its memory is given back. */
void hpack__forget(struct hpack *h);
/* A header block begins (the previous one may have been left unfinished). */
void hpack__begin(struct hpack *h);
/*
 * n bytes of the block. 0, or -EPROTO (malformed: the block and the table are lost; call
 * hpack__forget()) or -ENOMEM (out of budget: the same).
 */
int hpack__feed(struct hpack *h, const uint8_t *p, size_t n, hpack_emit_fn emit, void *user);
/* The block ended there: 0, or -EPROTO when it ended inside a representation. */
int hpack__end(struct hpack *h);

/* Dynamic entry i (1: the newest) of a known table: 0, or -ENOENT. */
int hpack__entry(const struct hpack *h, uint32_t i, unsigned *ret_id, uint32_t *ret_nlen,
		 uint32_t *ret_vlen);

/* The static table's entry idx (1..HPACK_STATIC_LAST): its name, and its value. */
const char *hpack__static_name(unsigned idx, const char **ret_value);

#endif
