// SPDX-License-Identifier: Apache-2.0
/*
 * Python frames in the shipper (shipper/stacks/python.h): code records, line tables, the
 * splice. The line table decoders follow CPython's own (Objects/codeobject.c,
 * Objects/lnotab_notes.txt, Objects/locations.md of each version), each read bounded by the
 * table's length; tests/unit/test_pylines.c checks them against what PyCode_Addr2Line of each
 * CPython 3.8-3.13 gives (tests/tools/pylines_vectors.py).
 */
#include "shipper/stacks/python.h"
#include "common/stackcount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* ---- line tables ---- */

/* 3.8, 3.9: co_lnotab, (bytecode delta, signed line delta) byte pairs; always a line. */
static bool lnotab_line(const uint8_t *tab, size_t len, int64_t line, uint32_t addrq, int64_t *ret)
{
	uint64_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > addrq)
			break;
		line += (int8_t)tab[i + 1];
	}
	*ret = line;
	return true;
}

/*
 * 3.10: co_linetable, (bytecode delta, signed line delta) pairs; a line delta of -128 is an
 * entry without a line. Ranges of no bytes are stepped over (PyLineTable_NextAddressRange).
 */
static bool linetable310_line(const uint8_t *tab, size_t len, int64_t line, uint32_t addrq,
			      int64_t *ret)
{
	uint64_t start = 0, end = 0;
	size_t pos = 0;
	bool has = false;

	while (end <= addrq) {
		do {
			if (pos + 2 > len)
				return false; /* past the table: CPython's -1 */
			start = end;
			end += tab[pos];
			if ((int8_t)tab[pos + 1] == -128) {
				has = false;
			} else {
				line += (int8_t)tab[pos + 1];
				has = true;
			}
			pos += 2;
		} while (start == end);
	}
	*ret = line;
	return has;
}

/* A varint of the 3.11+ location table at *pos: 6 bits a byte, bit 6 says more follow. */
static bool loc_varint(const uint8_t *tab, size_t len, size_t *pos, uint32_t *ret)
{
	uint32_t val = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > 30)
			return false;
		b = tab[(*pos)++];
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*ret = val;
	return true;
}

/*
 * 3.11-3.13: the location table. An entry starts with a byte of bit 7 set, its code in bits
 * 3-6 and its length in code units - 1 in bits 0-2; code 15 has no location, 14 (long form)
 * and 13 (no column) a signed varint line delta, 10-12 a line delta of 0-2, 0-9 the same line.
 * The bytes after the first up to the next entry's are columns, not read here.
 */
static bool loctable_line(const uint8_t *tab, size_t len, int64_t line, uint32_t addrq,
			  int64_t *ret)
{
	uint64_t end = 0;
	size_t pos = 0;
	bool has = false;

	while (end <= addrq) {
		uint8_t b;
		unsigned code;

		if (pos >= len)
			return false;
		b = tab[pos];
		if (!(b & 0x80))
			return false; /* not an entry's first byte: not a table CPython wrote */
		code = (b >> 3) & 15;
		if (code == 13 || code == 14) {
			size_t p = pos + 1;
			uint32_t u;

			if (!loc_varint(tab, len, &p, &u))
				return false;
			line += (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			line += code - 10;
		}
		has = code != 15;
		end += ((b & 7) + 1) * 2;
		for (pos++; pos < len && !(tab[pos] & 0x80); pos++)
			;
	}
	*ret = line;
	return has;
}

bool pylines__addr2line(uint16_t version, const uint8_t *tab, size_t len, int32_t firstlineno,
			uint32_t addrq, int32_t *ret_line)
{
	int64_t line;
	bool ok;

	if (!tab)
		len = 0;
	if (version == 0x0308 || version == 0x0309)
		ok = lnotab_line(tab, len, firstlineno, addrq, &line);
	else if (version == 0x030a)
		ok = linetable310_line(tab, len, firstlineno, addrq, &line);
	else if (version >= 0x030b && version <= 0x030d)
		ok = loctable_line(tab, len, firstlineno, addrq, &line);
	else
		return false;
	/* A hostile table's deltas add up past an int: no line rather than a wrapped one. */
	if (!ok || line < INT32_MIN || line > INT32_MAX)
		return false;
	*ret_line = (int32_t)line;
	return true;
}

/* ---- Java line tables ---- */

/*
 * One UNSIGNED5 number at *pos (HotSpot's utilities/unsigned5.hpp, Pack200's): a byte below
 * 192 - x ends it, each byte gives 6 bits more, 5 bytes at most; x is the excluded byte count
 * (1 from JDK 20: no byte is 0; 0 before).
 */
static bool u5_read(const uint8_t *tab, size_t len, size_t *pos, unsigned x, uint32_t *ret)
{
	const uint32_t l = 192 - x;
	uint32_t sum = 0;

	for (unsigned i = 0; i < 5; i++) {
		uint32_t b;

		if (*pos >= len)
			return false;
		b = tab[(*pos)++];
		if (b < x)
			return false;
		sum += (b - x) << (6 * i);
		if (b - x < l)
			break;
	}
	*ret = sum;
	return true;
}

bool jlines__bci2line(uint16_t jdk, const uint8_t *tab, size_t len, uint32_t bci, int32_t *ret_line)
{
	/* HotSpot's CompressedLineNumberReadStream and Method::line_number_from_bci: pairs of
	 * (bci delta, line delta), a byte (bci << 3 | line) or 0xff then two signed UNSIGNED5
	 * numbers; 0 ends the table. The exact bci's line, else the nearest before it. */
	unsigned x = jdk >= 20 ? 1 : 0;
	int64_t cbci = 0, line = 0, best_bci = 0, best_line = -1;
	size_t pos = 0;

	if (!tab)
		return false;
	while (pos < len) {
		uint8_t b = tab[pos++];

		if (!b) {
			if (best_line < 0 || best_line > INT32_MAX)
				return false;
			*ret_line = (int32_t)best_line;
			return true;
		}
		if (b == 0xff) {
			uint32_t u, v;

			if (!u5_read(tab, len, &pos, x, &u) || !u5_read(tab, len, &pos, x, &v))
				return false;
			cbci += (int32_t)((u >> 1) ^ -(u & 1));
			line += (int32_t)((v >> 1) ^ -(v & 1));
		} else {
			cbci += b >> 3;
			line += b & 7;
		}
		if (cbci == bci) {
			if (line < 0 || line > INT32_MAX)
				return false;
			*ret_line = (int32_t)line;
			return true;
		}
		if (cbci < bci && cbci >= best_bci) {
			best_bci = cbci;
			best_line = line;
		}
	}
	/* No end in the bytes sent: a later pair may be nearer; no line rather than a wrong one. */
	return false;
}

/* ---- strings ---- */

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

int pystr__utf8(const uint8_t *src, size_t len, unsigned kind, char *out, size_t cap)
{
	size_t o = 0;

	if ((kind != 1 && kind != 2 && kind != 4) || len % kind || !cap)
		return -EINVAL;
	for (size_t i = 0; i < len; i += kind) {
		uint32_t cp = src[i];

		/* CPython keeps a string in the machine's order: little-endian here. */
		if (kind == 2)
			cp |= (uint32_t)src[i + 1] << 8;
		else if (kind == 4)
			cp |= (uint32_t)src[i + 1] << 8 | (uint32_t)src[i + 2] << 16 |
			      (uint32_t)src[i + 3] << 24;
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
			cp = 0xfffd;
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == ';')
			cp = '_';
		if (o + 4 >= cap)
			break; /* cut at a character's boundary */
		o += put_utf8(out + o, cp);
	}
	out[o] = '\0';
	return (int)o;
}

/* ---- the cache ---- */

struct pylink {
	struct pylink *prev, *next;
};

struct pycode {
	struct pylink l; /* first: the LRU list, most recent first */
	struct pycode *hnext;
	uint64_t code;
	int32_t tgid;
	uint32_t stamp;
	int32_t firstlineno;
	uint16_t version; /* Python's 0x030b; a Java method's JDK major */
	uint16_t lines_len;
	uint8_t java; /* a Java method (struct sc_jmethod); 2: a JavaScript function (sc_v8func) */
	size_t bytes; /* charged */
	char *name;   /* UTF-8, in this allocation */
	char *file;   /* NULL: unreadable */
	uint8_t lines[];
};

/* Buckets of the hash table, fixed: a full cache holds some 100 000 small records. */
#define PYCODES_BUCKETS (1u << 16)

struct pycodes {
	struct pycode **b;
	struct pylink lru; /* list head: lru.next the most recent */
	size_t budget;
	struct pycodes_stats st;
};

static size_t bucket_of(int32_t tgid, uint64_t code, uint32_t stamp)
{
	uint64_t h = code ^ ((uint64_t)(uint32_t)tgid << 32 | stamp);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (size_t)(h & (PYCODES_BUCKETS - 1));
}

struct pycodes *pycodes__new(size_t budget_bytes)
{
	struct pycodes *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->b = calloc(PYCODES_BUCKETS, sizeof(*c->b));
	if (!c->b) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->budget = budget_bytes ? budget_bytes : PYCODES_CACHE_BYTES;
	c->lru.next = c->lru.prev = &c->lru;
	return c;
}

static void lru_del(struct pycode *e)
{
	e->l.prev->next = e->l.next;
	e->l.next->prev = e->l.prev;
}

static void lru_add(struct pycodes *c, struct pycode *e)
{
	e->l.next = c->lru.next;
	e->l.prev = &c->lru;
	c->lru.next->prev = &e->l;
	c->lru.next = &e->l;
}

static struct pycode *of_link(struct pylink *l)
{
	return (struct pycode *)l;
}

/* The entry of key, and the link that points to it. */
static struct pycode **find_link(struct pycodes *c, int32_t tgid, uint64_t code, uint32_t stamp)
{
	struct pycode **l = &c->b[bucket_of(tgid, code, stamp)];

	for (; *l; l = &(*l)->hnext)
		if ((*l)->code == code && (*l)->tgid == tgid && (*l)->stamp == stamp)
			return l;
	return l;
}

static void drop(struct pycodes *c, struct pycode *e)
{
	struct pycode **l = find_link(c, e->tgid, e->code, e->stamp);

	if (*l == e)
		*l = e->hnext;
	lru_del(e);
	c->st.bytes -= e->bytes;
	c->st.entries--;
	free(e);
}

void pycodes__free(struct pycodes *c)
{
	if (!c)
		return;
	while (c->lru.next != &c->lru) {
		struct pycode *e = of_link(c->lru.next);

		lru_del(e);
		free(e);
	}
	free(c->b);
	free(c);
}

void pycodes__forget_pid(struct pycodes *c, int32_t tgid)
{
	if (!c)
		return;
	for (struct pylink *l = c->lru.next, *n; l != &c->lru; l = n) {
		n = l->next;
		if (of_link(l)->tgid == tgid)
			drop(c, of_link(l));
	}
}

/* One record's fixed part, as checked (struct sc_pycode or sc_jmethod up to data). */
struct rec_view {
	struct sc_pycode h;   /* data[] not copied */
	struct sc_jmethod j;  /* instead, when java */
	struct sc_v8func v;   /* instead, when java == 2 (data[] not copied) */
	struct sc_jnmethod n; /* instead, when java == 3 (data[] not copied) */
	int java;
	const uint8_t *data;
	size_t size; /* the record's bytes in the frame, padding included */
};

#define REC_HEAD offsetof(struct sc_pycode, data)

static bool kind_ok(uint8_t kind, uint16_t len, uint16_t max)
{
	if (kind == 0)
		return len == 0;
	return (kind == 1 || kind == 2 || kind == 4) && len <= max && len % kind == 0;
}

static bool is_target(const int32_t *tgids, uint32_t n, int32_t tgid)
{
	for (uint32_t i = 0; i < n; i++)
		if (tgids[i] == tgid)
			return true;
	return false;
}

#define JREC_HEAD offsetof(struct sc_jmethod, data)
#define JREC_BYTES(lines_len) ((JREC_HEAD + JAVA_STRINGS + (size_t)(lines_len) + 7) & ~(size_t)7)

/* A Java method record at off of buf[len]: 0 with ret filled, or -EBADMSG with *why. */
static int jrec_at(const uint8_t *buf, size_t len, size_t off, const int32_t *tgids,
		   uint32_t ntgids, struct rec_view *ret, const char **why)
{
	size_t rest = len - off;
	const struct sc_jmethod *j = &ret->j;

	if (rest < JREC_HEAD + JAVA_STRINGS) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	memcpy(&ret->j, buf + off, JREC_HEAD);
	ret->data = buf + off + JREC_HEAD;
	ret->java = 1;
	if (!is_target(tgids, ntgids, (int32_t)j->tgid)) {
		*why = "a record of a process not among the task's targets";
		return -EBADMSG;
	}
	if (j->lines_len > JAVA_LINES_MAX || !j->class_len || j->class_len > JAVA_CLASS_MAX ||
	    !j->name_len || j->name_len > JAVA_NAME_MAX || j->sig_len > JAVA_SIG_MAX ||
	    j->file_len > JAVA_FILE_MAX) {
		*why = "a Java record with a bad string or table length";
		return -EBADMSG;
	}
	if (!j->stamp || j->jdk < 9 || j->jdk > 99) {
		*why = "a Java record without a stamp or of a JDK not read";
		return -EBADMSG;
	}
	ret->size = JREC_BYTES(j->lines_len);
	if (rest < ret->size) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	return 0;
}

#define NREC_HEAD offsetof(struct sc_jnmethod, data)
#define NREC_BYTES(len) ((NREC_HEAD + (size_t)(len) + 7) & ~(size_t)7)

/* A Java nmethod record at off of buf[len]: 0 with ret filled, or -EBADMSG with *why. */
static int nrec_at(const uint8_t *buf, size_t len, size_t off, const int32_t *tgids,
		   uint32_t ntgids, struct rec_view *ret, const char **why)
{
	const struct sc_jnmethod *n = &ret->n;
	int32_t last = INT32_MIN;

	if (len - off < NREC_HEAD) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	memcpy(&ret->n, buf + off, NREC_HEAD);
	ret->data = buf + off + NREC_HEAD;
	ret->java = 3;
	if (!is_target(tgids, ntgids, (int32_t)n->tgid)) {
		*why = "a record of a process not among the task's targets";
		return -EBADMSG;
	}
	if (!n->stamp || !n->method || !n->method_stamp || n->jdk < 9 || n->jdk > 99) {
		*why = "a Java nmethod record without a stamp, a method or of a JDK not read";
		return -EBADMSG;
	}
	if (n->nmeta > JAVA_NM_META_MAX || n->pcs_len > JAVA_NM_PCS_MAX ||
	    n->scopes_len > JAVA_NM_SCOPES_MAX || n->pc_size < 8 || n->pc_size > 64 ||
	    n->pc_off > n->pc_size - 4 || n->scope_off > n->pc_size - 4 ||
	    n->pcs_len % n->pc_size) {
		*why = "a Java nmethod record with a bad length or PcDesc layout";
		return -EBADMSG;
	}
	ret->size = NREC_BYTES((size_t)n->pcs_len + n->scopes_len);
	if (len - off < ret->size) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	/* HotSpot's PcDescs go up by pc: the search relies on it. */
	for (size_t i = 0; i < n->pcs_len; i += n->pc_size) {
		int32_t pc;

		memcpy(&pc, ret->data + i + n->pc_off, sizeof(pc));
		if (pc < last) {
			*why = "a Java nmethod record with PcDescs out of order";
			return -EBADMSG;
		}
		last = pc;
	}
	return 0;
}

#define VREC_HEAD offsetof(struct sc_v8func, data)
#define VREC_BYTES(n) ((VREC_HEAD + V8_STRINGS + (size_t)(n) + 7) & ~(size_t)7)

static bool v8_kind_ok(uint8_t kind, uint16_t len, uint16_t max)
{
	if (kind == 0)
		return len == 0;
	return (kind == 1 || kind == 2) && len <= max && len % kind == 0;
}

/* A JavaScript function record at off of buf[len]: 0 with ret filled, or -EBADMSG with *why. */
static int vrec_at(const uint8_t *buf, size_t len, size_t off, const int32_t *tgids,
		   uint32_t ntgids, struct rec_view *ret, const char **why)
{
	const struct sc_v8func *v = &ret->v;

	if (len - off < VREC_BYTES(0)) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	memcpy(&ret->v, buf + off, VREC_HEAD);
	ret->data = buf + off + VREC_HEAD;
	ret->java = 2;
	if (!is_target(tgids, ntgids, (int32_t)v->tgid)) {
		*why = "a record of a process not among the task's targets";
		return -EBADMSG;
	}
	if (!v->stamp || !v8_kind_ok(v->name_kind, v->name_len, V8_NAME_MAX) ||
	    !v8_kind_ok(v->inferred_kind, v->inferred_len, V8_NAME_MAX) ||
	    !v8_kind_ok(v->file_kind, v->file_len, V8_FILE_MAX)) {
		*why = "a JavaScript record without a stamp or with a bad string";
		return -EBADMSG;
	}
	if (v->pos_len > V8_POS_MAX || v->bot_len > V8_BOT_MAX || v->bc_len > V8_BC_MAX ||
	    v->src_len > V8_SRC_HEAD ||
	    (v->src_len && (uint64_t)v->start + v->src_len > INT32_MAX)) {
		*why = "a JavaScript record with a bad table or source length";
		return -EBADMSG;
	}
	ret->size = VREC_BYTES((size_t)v->pos_len + v->bot_len + v->bc_len + v->src_len);
	if (len - off < ret->size) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	return 0;
}

/* The record at off of buf[len]: 0 with ret filled, or -EBADMSG with *why. */
static int rec_at(const uint8_t *buf, size_t len, size_t off, const int32_t *tgids, uint32_t ntgids,
		  struct rec_view *ret, const char **why)
{
	size_t rest = len - off;
	uint32_t kind;

	if (rest >= sizeof(kind)) {
		memcpy(&kind, buf + off, sizeof(kind));
		if (kind == SC_REC_JMETHOD)
			return jrec_at(buf, len, off, tgids, ntgids, ret, why);
		if (kind == SC_REC_JNMETHOD)
			return nrec_at(buf, len, off, tgids, ntgids, ret, why);
		if (kind == SC_REC_V8FUNC)
			return vrec_at(buf, len, off, tgids, ntgids, ret, why);
	}
	ret->java = 0;
	if (rest < REC_HEAD + PY_NAME_MAX + PY_FILE_MAX) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	memcpy(&ret->h, buf + off, REC_HEAD);
	ret->data = buf + off + REC_HEAD;
	if (ret->h.kind != SC_REC_PYCODE) {
		*why = "a record of another kind";
		return -EBADMSG;
	}
	if (!is_target(tgids, ntgids, (int32_t)ret->h.tgid)) {
		*why = "a record of a process not among the task's targets";
		return -EBADMSG;
	}
	if (ret->h.lines_len > PY_LINES_MAX ||
	    !kind_ok(ret->h.name_kind, ret->h.name_len, PY_NAME_MAX) ||
	    !kind_ok(ret->h.file_kind, ret->h.file_len, PY_FILE_MAX)) {
		*why = "a record with a bad string or table length or kind";
		return -EBADMSG;
	}
	if (!ret->h.stamp || ret->h.version < 0x0308 || ret->h.version > 0x030d) {
		*why = "a record without a stamp or of a version not read";
		return -EBADMSG;
	}
	ret->size = PYCODE_REC_BYTES(ret->h.lines_len);
	if (rest < ret->size) {
		*why = "a record cut short";
		return -EBADMSG;
	}
	return 0;
}

static void insert(struct pycodes *c, struct pycode *e);

/* Whether in[i] (of n) is a continuation byte. */
static bool mutf8_cont(const uint8_t *in, size_t n, size_t i)
{
	return i < n && (in[i] & 0xc0) == 0x80;
}

/* The character of a 3-byte form at in[i] (of n): 0 when there is none there (a sequence cut
 * short, an overlong form). */
static uint32_t mutf8_3(const uint8_t *in, size_t n, size_t i)
{
	uint32_t cp;

	if (i >= n || (in[i] & 0xf0) != 0xe0 || !mutf8_cont(in, n, i + 1) ||
	    !mutf8_cont(in, n, i + 2))
		return 0;
	cp = (uint32_t)(in[i] & 0x0f) << 12 | (uint32_t)(in[i + 1] & 0x3f) << 6 |
	     (uint32_t)(in[i + 2] & 0x3f);
	return cp >= 0x800 ? cp : 0;
}

size_t jutf8__decode(const uint8_t *in, size_t n, bool dots, char *out, size_t cap,
		     uint32_t *ret_bad)
{
	size_t o = 0, i = 0;

	if (!cap)
		return 0;
	while (i < n) {
		uint8_t b = in[i];
		uint32_t cp = 0, lo;
		size_t k = 0;

		if (b >= 0x01 && b < 0x80) {
			cp = b;
			k = 1;
		} else if ((b & 0xe0) == 0xc0 && mutf8_cont(in, n, i + 1)) {
			/* U+0000 is C0 80; any other overlong form is none. */
			cp = (uint32_t)(b & 0x1f) << 6 | (uint32_t)(in[i + 1] & 0x3f);
			k = cp >= 0x80 || !cp ? 2 : 0;
		} else if ((cp = mutf8_3(in, n, i))) {
			k = 3;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				/* A character past U+FFFF: its two surrogates, 3 bytes each. */
				lo = mutf8_3(in, n, i + 3);
				if (lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					k = 6;
				}
			}
			if (cp >= 0xd800 && cp <= 0xdfff) {
				/* A lone surrogate: one replacement for its 3 bytes. */
				cp = 0xfffd;
				if (ret_bad)
					(*ret_bad)++;
			}
		}
		if (!k) {
			/* One replacement a byte that starts no character: a raw 0, a stray
			 * continuation byte, a 4-byte form (UTF-8's, never modified UTF-8's), a
			 * sequence cut short, an overlong form. */
			cp = 0xfffd;
			k = 1;
			if (ret_bad)
				(*ret_bad)++;
		}
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == ';')
			cp = '_';
		else if (dots && cp == '/')
			cp = '.';
		if (o + 4 >= cap)
			break; /* cut at a character's boundary */
		o += put_utf8(out + o, cp);
		i += k;
	}
	out[o] = '\0';
	return o;
}

/* Cuts s (made by snprintf into len bytes: maybe cut inside a character, its names being
 * valid UTF-8) before a character left incomplete. */
static void utf8_trim(char *s, size_t len)
{
	size_t n = strnlen(s, len), start = n, need;
	uint8_t lead;

	while (start > 0 && n - start < 3 && ((uint8_t)s[start - 1] & 0xc0) == 0x80)
		start--;
	if (!start)
		return;
	lead = (uint8_t)s[start - 1];
	if (lead < 0xc0)
		return;
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	if (n - (start - 1) < need)
		s[start - 1] = '\0';
}

static int keep_java(struct pycodes *c, const struct rec_view *r)
{
	const struct sc_jmethod *j = &r->j;
	/* A byte decodes to 3 at most (U+FFFD). */
	char name[3 * (JAVA_CLASS_MAX + JAVA_NAME_MAX) + 16], file[3 * JAVA_FILE_MAX + 8];
	size_t nl = 0, fl = 0;
	struct pycode *e;

	nl = jutf8__decode(r->data, j->class_len, true, name, 3 * JAVA_CLASS_MAX + 8,
			   &c->st.bad_utf8);
	name[nl++] = '.';
	nl += jutf8__decode(r->data + JAVA_CLASS_MAX, j->name_len, false, name + nl,
			    3 * JAVA_NAME_MAX + 8, &c->st.bad_utf8);
	if (j->flags & JAVA_M_CUT) {
		memcpy(name + nl, "...", 3);
		nl += 3;
	}
	name[nl] = '\0';
	if (j->file_len) {
		fl = jutf8__decode(r->data + JAVA_CLASS_MAX + JAVA_NAME_MAX + JAVA_SIG_MAX,
				   j->file_len, false, file, sizeof(file), &c->st.bad_utf8);
		file[fl++] = '\0';
	}
	e = malloc(sizeof(*e) + j->lines_len + nl + 1 + fl);
	if (!e)
		return -ENOMEM;
	*e = (struct pycode){ .code = j->method,
			      .tgid = (int32_t)j->tgid,
			      .stamp = j->stamp,
			      .version = j->jdk,
			      .java = 1,
			      .lines_len = j->lines_len,
			      .bytes = sizeof(*e) + j->lines_len + nl + 1 + fl };
	memcpy(e->lines, r->data + JAVA_STRINGS, j->lines_len);
	e->name = (char *)e->lines + j->lines_len;
	memcpy(e->name, name, nl + 1);
	if (fl) {
		e->file = e->name + nl + 1;
		memcpy(e->file, file, fl);
	}
	insert(c, e);
	return 0;
}

/* What an nmethod's entry holds in its lines[]: this, then its metadata, PcDescs and scopes. */
struct jnm_head {
	uint64_t method;
	uint32_t method_stamp;
	uint16_t nmeta, npcs;
	uint32_t slen;
	uint32_t pad;
};

static int keep_jnm(struct pycodes *c, const struct rec_view *r)
{
	const struct sc_jnmethod *n = &r->n;
	size_t npcs = n->pcs_len / n->pc_size;
	size_t body = sizeof(struct jnm_head) + n->nmeta * sizeof(struct jnm_meta) +
		      npcs * sizeof(struct jnm_pc) + n->scopes_len;
	struct jnm_head h = { .method = n->method,
			      .method_stamp = n->method_stamp,
			      .nmeta = n->nmeta,
			      .npcs = (uint16_t)npcs,
			      .slen = n->scopes_len };
	struct jnm_meta *meta;
	struct jnm_pc *pcs;
	struct pycode *e;

	e = malloc(sizeof(*e) + body + 1);
	if (!e)
		return -ENOMEM;
	*e = (struct pycode){ .code = n->nmethod,
			      .tgid = (int32_t)n->tgid,
			      .stamp = n->stamp,
			      .version = n->jdk,
			      .java = 3,
			      .bytes = sizeof(*e) + body + 1 };
	memcpy(e->lines, &h, sizeof(h));
	meta = (struct jnm_meta *)(void *)(e->lines + sizeof(h));
	memcpy(meta, n->meta, n->nmeta * sizeof(*meta));
	pcs = (struct jnm_pc *)(void *)(meta + n->nmeta);
	for (size_t i = 0; i < npcs; i++) {
		memcpy(&pcs[i].pc_offset, r->data + i * n->pc_size + n->pc_off, sizeof(int32_t));
		memcpy(&pcs[i].scope, r->data + i * n->pc_size + n->scope_off, sizeof(int32_t));
	}
	memcpy(pcs + npcs, r->data + n->pcs_len, n->scopes_len);
	e->name = (char *)e->lines + body; /* none: an empty string */
	e->name[0] = '\0';
	insert(c, e);
	return 0;
}

/*
 * A V8 string's bytes (kind 1: Latin-1, 2: UTF-16) as a name's: ASCII kept, what a folded line
 * cannot hold and any other character as '_': its length (out holds n bytes at least).
 */
static size_t v8name_put(char *out, const uint8_t *in, size_t n, uint8_t kind)
{
	size_t o = 0;

	if (kind != 1 && kind != 2)
		return 0;
	for (size_t i = 0; i + kind <= n; i += kind) {
		uint16_t ch = kind == 2 ? (uint16_t)(in[i] | in[i + 1] << 8) : in[i];

		out[o++] = ch < 0x20 || ch >= 0x7f || ch == ';' ? '_' : (char)ch;
	}
	return o;
}

/* V8's name of a function without one: what its stack traces and profiles show. */
#define V8_ANONYMOUS "(anonymous)"

/* What a JavaScript function's entry holds in its lines[]: this, its position table, its
 * baseline code's bytecode offset table and bytecodes, its source from its start position. */
struct v8_head {
	uint32_t start;
	uint16_t pos_len, bot_len, bc_len, src_len;
};

static int keep_v8(struct pycodes *c, const struct rec_view *r)
{
	const struct sc_v8func *v = &r->v;
	char name[V8_NAME_MAX + 8], file[V8_FILE_MAX + 8];
	struct v8_head h = { .start = v->start,
			     .pos_len = v->pos_len,
			     .bot_len = v->bot_len,
			     .bc_len = v->bc_len,
			     .src_len = v->src_len };
	size_t nl, fl = 0, body;
	struct pycode *e;

	nl = v8name_put(name, r->data, v->name_len, v->name_kind);
	if (!nl)
		nl = v8name_put(name, r->data + V8_NAME_MAX, v->inferred_len, v->inferred_kind);
	if (!nl) {
		nl = strlen(V8_ANONYMOUS);
		memcpy(name, V8_ANONYMOUS, nl);
	} else if (v->flags & V8_F_NAME_CUT) {
		memcpy(name + nl, "...", 3);
		nl += 3;
	}
	name[nl] = '\0';
	if (v->file_len) {
		size_t at = v->flags & V8_F_FILE_TAIL ? 3 : 0;

		memcpy(file, "...", at);
		fl = at +
		     v8name_put(file + at, r->data + 2 * V8_NAME_MAX, v->file_len, v->file_kind);
		file[fl++] = '\0';
	}
	body = sizeof(h) + (size_t)v->pos_len + v->bot_len + v->bc_len + v->src_len;
	e = malloc(sizeof(*e) + body + nl + 1 + fl);
	if (!e)
		return -ENOMEM;
	*e = (struct pycode){ .code = v->sfi,
			      .tgid = (int32_t)v->tgid,
			      .stamp = v->stamp,
			      .firstlineno = v->line <= INT32_MAX ? (int32_t)v->line : 0,
			      .java = 2,
			      .bytes = sizeof(*e) + body + nl + 1 + fl };
	memcpy(e->lines, &h, sizeof(h));
	memcpy(e->lines + sizeof(h), r->data + V8_STRINGS, body - sizeof(h));
	e->name = (char *)e->lines + body;
	memcpy(e->name, name, nl + 1);
	if (fl) {
		e->file = e->name + nl + 1;
		memcpy(e->file, file, fl);
	}
	insert(c, e);
	return 0;
}

static int keep(struct pycodes *c, const struct rec_view *r)
{
	char name[4 * PY_NAME_MAX + 8], file[4 * PY_FILE_MAX + 8];
	size_t nl = 0, fl = 0;
	struct pycode *e;
	int n;

	if (r->h.name_kind) {
		n = pystr__utf8(r->data, r->h.name_len, r->h.name_kind, name, sizeof(name) - 3);
		if (n < 0)
			return n;
		nl = (size_t)n;
	}
	if (!nl) {
		nl = strlen(PY_UNKNOWN_NAME);
		memcpy(name, PY_UNKNOWN_NAME, nl + 1);
	} else if (r->h.flags & PY_CODE_NAME_CUT) {
		memcpy(name + nl, "...", 4);
		nl += 3;
	}
	if (r->h.file_kind) {
		size_t at = r->h.flags & PY_CODE_FILE_TAIL ? 3 : 0;

		n = pystr__utf8(r->data + PY_NAME_MAX, r->h.file_len, r->h.file_kind, file + at,
				sizeof(file) - at);
		if (n < 0)
			return n;
		if (n) {
			memcpy(file, "...", at);
			fl = (size_t)n + at + 1;
		}
	}
	e = malloc(sizeof(*e) + r->h.lines_len + nl + 1 + fl);
	if (!e)
		return -ENOMEM;
	*e = (struct pycode){ .code = r->h.code,
			      .tgid = (int32_t)r->h.tgid,
			      .stamp = r->h.stamp,
			      .firstlineno = r->h.firstlineno,
			      .version = r->h.version,
			      .lines_len = r->h.lines_len,
			      .bytes = sizeof(*e) + r->h.lines_len + nl + 1 + fl };
	memcpy(e->lines, r->data + PY_NAME_MAX + PY_FILE_MAX, r->h.lines_len);
	e->name = (char *)e->lines + r->h.lines_len;
	memcpy(e->name, name, nl + 1);
	if (fl) {
		e->file = e->name + nl + 1;
		memcpy(e->file, file, fl);
	}
	insert(c, e);
	return 0;
}

/* e into the cache, over the entry of its key if any, within the budget. */
static void insert(struct pycodes *c, struct pycode *e)
{
	struct pycode **l;

	/* Sent again (the programs forgot they had sent it): the newer one. */
	l = find_link(c, e->tgid, e->code, e->stamp);
	if (*l)
		drop(c, *l);
	l = &c->b[bucket_of(e->tgid, e->code, e->stamp)];
	e->hnext = *l;
	*l = e;
	lru_add(c, e);
	c->st.bytes += e->bytes;
	c->st.entries++;
	c->st.records++;
	while (c->st.bytes > c->budget && c->lru.prev != &e->l) {
		drop(c, of_link(c->lru.prev));
		c->st.evicted++;
	}
}

int pycodes__add_frame(struct pycodes *c, uint64_t task_id, const int32_t *tgids, uint32_t ntgids,
		       const void *buf, size_t len, const char **ret_why)
{
	const uint8_t *b = buf;
	struct ship_pycodes_hdr hdr;
	struct rec_view r;
	const char *why = "";
	size_t off;
	int err = 0;

	if (!c || !buf || len < sizeof(hdr)) {
		why = "shorter than its header";
		err = -EBADMSG;
		goto cleanup;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.task_id != task_id) {
		why = "of another task";
		err = -EBADMSG;
		goto cleanup;
	}
	/* Every record checked first: a frame is taken whole or not at all. */
	off = sizeof(hdr);
	for (uint32_t i = 0; i < hdr.count; i++) {
		err = rec_at(b, len, off, tgids, ntgids, &r, &why);
		if (err)
			goto cleanup;
		off += r.size;
	}
	if (off != len) {
		why = "bytes after its records";
		err = -EBADMSG;
		goto cleanup;
	}
	off = sizeof(hdr);
	for (uint32_t i = 0; i < hdr.count; i++) {
		(void)rec_at(b, len, off, tgids, ntgids, &r, &why);
		err = r.java == 3   ? keep_jnm(c, &r)
		      : r.java == 2 ? keep_v8(c, &r)
		      : r.java	    ? keep_java(c, &r)
				    : keep(c, &r);
		if (err)
			return err;
		off += r.size;
	}
	return 0;
cleanup:
	if (c)
		c->st.bad_frames++;
	if (ret_why)
		*ret_why = why;
	return err;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int pycodes__name(struct pycodes *c, int32_t tgid, const struct py_frame *f, char *buf, size_t len,
		  struct py_frame_src *ret_src)
{
	struct pycode *e = NULL;
	struct py_frame_src src = { .qualname = PY_UNKNOWN_NAME };
	int32_t line = 0;

	if (c) {
		c->st.lookups++;
		e = *find_link(c, tgid, f->code, f->stamp);
	}
	if (!e) {
		if (c)
			c->st.unknown++;
		if (len)
			snprintf(buf, len, "%s", PY_UNKNOWN_NAME);
		if (ret_src)
			*ret_src = src;
		return 0;
	}
	lru_del(e);
	lru_add(c, e);
	if (f->instr & PY_FRAME_NO_INSTR)
		line = e->firstlineno;
	else if (!pylines__addr2line(e->version, e->lines, e->lines_len, e->firstlineno,
				     f->instr & PY_FRAME_INSTR_MASK, &line))
		line = 0;
	src = (struct py_frame_src){ .qualname = e->name, .file = e->file, .line = line };
	if (len) {
		const char *file = e->file ? base_name(e->file) : "?";

		if (line > 0)
			snprintf(buf, len, "%s (%s:%d)", e->name, file, line);
		else
			snprintf(buf, len, "%s (%s)", e->name, file);
	}
	if (ret_src)
		*ret_src = src;
	return 1;
}

int jmethods__name(struct pycodes *c, int32_t tgid, const struct py_frame *f, char *buf, size_t len,
		   struct py_frame_src *ret_src)
{
	struct pycode *e = NULL;
	struct py_frame_src src = { .qualname = JAVA_UNKNOWN_NAME };
	int32_t line = 0;

	if (c) {
		c->st.lookups++;
		e = *find_link(c, tgid, f->code, f->stamp);
	}
	if (!e || e->java != 1) {
		if (c)
			c->st.unknown++;
		if (len)
			snprintf(buf, len, "%s", JAVA_UNKNOWN_NAME);
		if (ret_src)
			*ret_src = src;
		return 0;
	}
	lru_del(e);
	lru_add(c, e);
	if ((f->instr & JAVA_FRAME_KIND_MASK) == JAVA_FRAME_INTERPRETED &&
	    !(f->instr & JAVA_FRAME_NO_BCI) &&
	    !jlines__bci2line(e->version, e->lines, e->lines_len, f->instr & JAVA_FRAME_BCI_MASK,
			      &line))
		line = 0;
	src = (struct py_frame_src){ .qualname = e->name, .file = e->file, .line = line };
	if (len) {
		if (e->file && line > 0)
			snprintf(buf, len, "%s (%s:%d)", e->name, e->file, line);
		else if (e->file)
			snprintf(buf, len, "%s (%s)", e->name, e->file);
		else
			snprintf(buf, len, "%s", e->name);
		utf8_trim(buf, len);
	}
	if (ret_src)
		*ret_src = src;
	return 1;
}

size_t jnm__scopes(uint16_t jdk, const struct jnm_pc *pcs, size_t npcs, const uint8_t *scopes,
		   size_t slen, const struct jnm_meta *meta, size_t nmeta, uint32_t off, bool top,
		   struct jscope *ret, size_t max)
{
	/* HotSpot's DebugInfoReadStream: CompressedReadStream's numbers, UNSIGNED5 with the zero
	 * byte excluded from JDK 20 (as the line tables). */
	unsigned x = jdk >= 20 ? 1 : 0;
	size_t lo = 0, hi = npcs, n = 0;
	int64_t want = top ? (int64_t)off + 1 : (int64_t)off;
	uint32_t at;

	if (!pcs || !max)
		return 0;
	/* The first PcDesc at or past want: the PcDesc of a call's return address is at it, the
	 * sampled pc's state is the next point HotSpot recorded (AsyncGetCallTrace's pc + 1). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pcs[mid].pc_offset < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == npcs || pcs[lo].scope <= 0)
		return 0;
	at = (uint32_t)pcs[lo].scope;
	while (n < max) {
		uint32_t sender, mi, bci1;
		size_t pos = at;

		if (!scopes || pos >= slen || !u5_read(scopes, slen, &pos, x, &sender) ||
		    !u5_read(scopes, slen, &pos, x, &mi) || !u5_read(scopes, slen, &pos, x, &bci1))
			break;
		ret[n] = (struct jscope){ .bci = -1 };
		if (mi >= 1 && mi <= nmeta && meta[mi - 1].method && meta[mi - 1].stamp) {
			ret[n].method = meta[mi - 1].method;
			ret[n].stamp = meta[mi - 1].stamp;
		}
		/* The bci is stored plus one (InvocationEntryBci is -1). */
		if (bci1 >= 1 && bci1 <= JAVA_FRAME_BCI_MASK + 1)
			ret[n].bci = (int32_t)bci1 - 1;
		n++;
		/* Outwards only: HotSpot writes a caller's scope before those inlined into it. */
		if (!sender || sender >= at)
			break;
		at = sender;
	}
	return n;
}

size_t jnmethods__scopes(struct pycodes *c, int32_t tgid, const struct py_frame *f,
			 struct jscope *ret, size_t max)
{
	const struct jnm_meta *meta;
	const struct jnm_pc *pcs;
	struct jnm_head h;
	struct pycode *e;
	size_t n = 0;

	if (!c || !max)
		return 0;
	e = *find_link(c, tgid, f->code, f->stamp);
	if (!e || e->java != 3) {
		c->st.lookups++;
		c->st.unknown++;
		return 0;
	}
	lru_del(e);
	lru_add(c, e);
	memcpy(&h, e->lines, sizeof(h));
	meta = (const struct jnm_meta *)(const void *)(e->lines + sizeof(h));
	pcs = (const struct jnm_pc *)(const void *)(meta + h.nmeta);
	if (!(f->instr & JAVA_FRAME_NO_BCI))
		n = jnm__scopes(e->version, pcs, h.npcs, (const uint8_t *)(pcs + h.npcs), h.slen,
				meta, h.nmeta, f->instr & JAVA_FRAME_PC_MASK,
				(f->instr & JAVA_FRAME_TOP) != 0, ret, max);
	if (!n) {
		ret[0] = (struct jscope){ .method = h.method, .stamp = h.method_stamp, .bci = -1 };
		n = 1;
	}
	return n;
}

bool v8pos__find(const uint8_t *tab, size_t len, uint32_t off, uint32_t *ret_pos)
{
	int64_t code = 0, pos = 0, found = -1;
	size_t i = 0;

	if (!tab)
		return false;
	while (i < len) {
		int64_t d[2];

		for (int k = 0; k < 2; k++) {
			uint64_t bits = 0;
			unsigned shift = 0;
			uint8_t b;

			do {
				if (i >= len || shift > 63)
					return false;
				b = tab[i++];
				bits |= (uint64_t)(b & 0x7f) << shift;
				shift += 7;
			} while (b & 0x80);
			d[k] = (int64_t)(bits >> 1) ^ -(int64_t)(bits & 1);
		}
		/* A statement's code offset delta is itself, an expression's -(delta + 1). */
		if (d[0] < 0)
			d[0] = -(d[0] + 1);
		if (d[0] < 0 || d[0] > INT32_MAX || d[1] < -(int64_t)INT32_MAX * 8 ||
		    d[1] > (int64_t)INT32_MAX * 8)
			return false;
		code += d[0];
		pos += d[1];
		if (code > INT32_MAX || pos < INT64_MIN / 4 || pos > INT64_MAX / 4)
			return false;
		if (code > off)
			break;
		found = pos;
	}
	/* A SourcePosition: bit 0 external (not a script offset), then the script offset + 1 in
	 * 30 bits and the inlining id + 1 in 16 (0: not inlined, as a BytecodeArray's are). */
	if (found < 0 || (found & 1) || (found >> 31) || !(found >> 1))
		return false;
	*ret_pos = (uint32_t)(found >> 1) - 1;
	return true;
}

/*
 * V8 11.3's bytecode lengths by operand scale (1, then after a Wide prefix, then after an
 * ExtraWide one), as node exports them (v8::internal::interpreter::Bytecodes::kBytecodeSizes;
 * tests/unit/test_v8structs.c compares this copy with the node file's).
 */
const uint8_t v8_bytecode_sizes[3][V8_BYTECODES] = {
	{
		1, 1, 1, 1, 1, 2, 3, 4, 5, 5, 6, 2, 1, 2, 1, 1, 1, 1, 1, 2, 4, 4, 2, 2, 2,
		3, 2, 2, 2, 1, 1, 1, 2, 3, 3, 3, 4, 2, 2, 4, 4, 2, 4, 4, 3, 4, 4, 3, 3, 3,
		4, 4, 4, 5, 4, 5, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
		3, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 4, 5, 5, 4, 5, 6, 5, 3, 4, 5,
		5, 5, 6, 4, 4, 5, 5, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 1, 5, 4, 1, 2, 4,
		1, 4, 3, 4, 2, 3, 3, 3, 3, 1, 1, 1, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
		2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 2, 3, 3, 5, 2, 1, 1, 1, 1, 2, 1, 1, 2, 4,
		5, 4, 4, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	},
	{
		1, 1, 1, 1, 1, 3, 5, 7, 9, 7, 9, 3, 1, 3, 1, 1, 1, 1, 1, 3, 7,	7, 3, 3, 3,
		5, 3, 3, 3, 1, 1, 1, 2, 5, 5, 5, 7, 3, 3, 7, 7, 3, 7, 7, 4, 7,	7, 5, 5, 5,
		7, 7, 7, 8, 7, 8, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,	5, 5, 5, 5,
		5, 5, 5, 5, 5, 3, 3, 3, 3, 1, 1, 1, 3, 3, 3, 7, 9, 9, 7, 9, 11, 9, 5, 7, 9,
		9, 7, 9, 6, 6, 9, 9, 5, 5, 5, 5, 5, 5, 5, 5, 3, 3, 3, 3, 1, 7,	6, 1, 3, 6,
		1, 6, 5, 6, 3, 5, 5, 5, 5, 1, 1, 1, 7, 3, 3, 3, 3, 3, 3, 3, 3,	3, 3, 3, 3,
		3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 7, 3, 5, 5, 9, 3, 1, 1, 1, 1, 3,	1, 1, 3, 7,
		9, 7, 7, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	1, 1,
	},
	{
		1,  1,	1,  1,	1,  5,	9,  13, 17, 11, 15, 5,	1,  5,	1,  1,	1,  1,	1,  5,
		13, 13, 5,  5,	5,  9,	5,  5,	5,  1,	1,  1,	2,  9,	9,  9,	13, 5,	5,  13,
		13, 5,	13, 13, 6,  13, 13, 9,	9,  9,	13, 13, 13, 14, 13, 14, 9,  9,	9,  9,
		9,  9,	9,  9,	9,  9,	9,  9,	9,  9,	9,  9,	9,  9,	9,  9,	9,  9,	9,  9,
		5,  5,	5,  5,	1,  1,	1,  5,	5,  5,	13, 17, 17, 13, 17, 21, 17, 9,	13, 17,
		17, 11, 15, 10, 10, 17, 17, 9,	9,  9,	9,  9,	9,  9,	9,  5,	5,  5,	5,  1,
		11, 10, 1,  5,	10, 1,	10, 9,	10, 5,	9,  9,	9,  9,	1,  1,	1,  13, 5,  5,
		5,  5,	5,  5,	5,  5,	5,  5,	5,  5,	5,  5,	5,  5,	5,  5,	5,  5,	5,  5,
		13, 5,	9,  9,	17, 5,	1,  1,	1,  1,	5,  1,	1,  5,	13, 17, 13, 13, 1,  5,
		5,  1,	1,  1,	1,  1,	1,  1,	1,  1,	1,  1,	1,  1,	1,  1,	1,  1,
	},
};

/* An unsigned VLQ number of tab[len] at *i (V8's VLQDecodeUnsigned), up to 32 bits. */
static bool vlq_u32(const uint8_t *tab, size_t len, size_t *i, uint32_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*i >= len || shift > 28)
			return false;
		b = tab[(*i)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

bool v8bl__bytecode(const uint8_t *tab, size_t tlen, const uint8_t *bc, size_t blen, uint32_t pc,
		    uint32_t *ret_off)
{
	uint64_t end;
	uint32_t d;
	size_t i = 0, at = 0;

	if (!tab || !bc || !vlq_u32(tab, tlen, &i, &d))
		return false;
	/* The first entry is the prologue's (V8's kFunctionEntryBytecodeOffset): no bytecode. */
	end = d;
	if (pc <= end)
		return false;
	while (at < blen) {
		unsigned scale = 0, pre = 0;
		uint8_t b = bc[at];

		if (!vlq_u32(tab, tlen, &i, &d))
			return false;
		/* Wide, ExtraWide, DebugBreakWide, DebugBreakExtraWide: a scale for the next. */
		if (b <= 3) {
			if (at + 1 >= blen)
				return false;
			scale = b & 1 ? 2 : 1;
			pre = 1;
			b = bc[at + 1];
		}
		if (b >= V8_BYTECODES || b <= 3)
			return false;
		end += d;
		if (pc <= end) {
			*ret_off = (uint32_t)at;
			return true;
		}
		at += pre + v8_bytecode_sizes[scale][b];
	}
	return false;
}

bool v8pos__line(const uint8_t *src, size_t len, uint32_t start, int32_t first_line, uint32_t pos,
		 int32_t *ret_line)
{
	int64_t line = first_line;

	if (!src || first_line <= 0 || pos < start || pos - start > len)
		return false;
	for (size_t i = 0; i < pos - start; i++)
		line += src[i] == '\n';
	if (line > INT32_MAX)
		return false;
	*ret_line = (int32_t)line;
	return true;
}

int v8funcs__name(struct pycodes *c, int32_t tgid, const struct py_frame *f, char *buf, size_t len,
		  struct py_frame_src *ret_src)
{
	struct pycode *e = NULL;
	struct py_frame_src src = { .qualname = V8_UNKNOWN_NAME };
	uint64_t code = f->code & V8_FRAME_SFI_MASK;
	uint32_t off1 = (uint32_t)(f->code >> V8_FRAME_SFI_BITS), pos, off;
	const uint8_t *tab;
	int32_t line;
	struct v8_head h;

	if (c) {
		c->st.lookups++;
		e = *find_link(c, tgid, code, f->stamp);
	}
	if (!e || e->java != 2) {
		if (c)
			c->st.unknown++;
		if (len)
			snprintf(buf, len, "%s", V8_UNKNOWN_NAME);
		if (ret_src)
			*ret_src = src;
		return 0;
	}
	lru_del(e);
	lru_add(c, e);
	memcpy(&h, e->lines, sizeof(h));
	tab = e->lines + sizeof(h);
	line = e->firstlineno;
	src = (struct py_frame_src){ .qualname = e->name, .file = e->file };
	off = off1 - 1;
	/* A function with no first line (node's own scripts: their source is not sent) has
	 * nothing to fall back from: no reason is counted. */
	if (line <= 0)
		src.v8_why = V8_LINE_OWN;
	else if (!off1)
		src.v8_why = V8_LINE_NO_OFFSET;
	else if (!h.pos_len || ((f->code & V8_FRAME_BASELINE) && !h.bot_len))
		src.v8_why = V8_LINE_NO_TABLE;
	else if (((f->code & V8_FRAME_BASELINE) &&
		  !v8bl__bytecode(tab + h.pos_len, h.bot_len, tab + h.pos_len + h.bot_len, h.bc_len,
				  off1 - 1, &off)) ||
		 !v8pos__find(tab, h.pos_len, off, &pos) ||
		 !v8pos__line(tab + h.pos_len + h.bot_len + h.bc_len, h.src_len, h.start,
			      e->firstlineno, pos, &line))
		src.v8_why = V8_LINE_NOT_FOUND;
	src.line = line;
	if (len) {
		/* A path's base name; node's own scripts ("node:internal/...") whole. */
		const char *file = e->file && e->file[0] == '/' ? base_name(e->file) : e->file;

		if (file && line > 0)
			snprintf(buf, len, "%s (%s:%d)", e->name, file, line);
		else if (file)
			snprintf(buf, len, "%s (%s)", e->name, file);
		else
			snprintf(buf, len, "%s", e->name);
	}
	if (ret_src)
		*ret_src = src;
	return 1;
}

void pycodes__stats(const struct pycodes *c, struct pycodes_stats *ret)
{
	if (c)
		*ret = c->st;
	else
		memset(ret, 0, sizeof(*ret));
}

/* ---- the splice ---- */

bool py_is_eval_loop(const char *name)
{
	size_t n = strlen(PY_EVAL_LOOP);

	/* GCC's hot/cold split keeps the loop's cold blocks in "_PyEval_EvalFrameDefault.cold". */
	return !strncmp(name, PY_EVAL_LOOP, n) && (name[n] == '\0' || name[n] == '.');
}

size_t py_splice(const struct py_native *nat, size_t nn, const struct py_frame *py, size_t npy,
		 enum py_native_mode mode, struct py_item *ret, size_t max)
{
	/* Group g is py[gstart[g]..gend[g]], innermost first. */
	uint16_t gstart[PY_MAX_FRAMES], gend[PY_MAX_FRAMES];
	/* The group each native frame takes, or -1. */
	int16_t takes[2 * ROVER_MAX_STACK_DEPTH];
	size_t ng = 0, n = 0, assigned = 0;
	ssize_t lo = -1, hi = -1;

	if (npy > PY_MAX_FRAMES)
		npy = PY_MAX_FRAMES;
	if (nn > 2 * ROVER_MAX_STACK_DEPTH)
		nn = 2 * ROVER_MAX_STACK_DEPTH;
	for (size_t i = 0; i < npy; i++) {
		if (i == 0 || (py[i - 1].instr & PY_FRAME_ENTRY))
			gstart[ng++] = (uint16_t)i;
		gend[ng - 1] = (uint16_t)i;
	}
	for (size_t i = 0; i < nn; i++)
		takes[i] = -1;
	/* The innermost group to the innermost loop frame, and outwards. */
	for (ssize_t i = (ssize_t)nn - 1; i >= 0 && assigned < ng; i--) {
		if (!nat[i].eval)
			continue;
		takes[i] = (int16_t)assigned++;
		if (hi < 0)
			hi = i;
		lo = i;
	}
	/* Groups left over: at the outermost end, the outermost first. */
	for (size_t g = ng; g-- > assigned;)
		for (size_t k = gend[g] + 1; k-- > gstart[g] && n < max;)
			ret[n++] = (struct py_item){ .native = -1, .py = (int16_t)k };
	for (size_t i = 0; i < nn && n < max; i++) {
		if (takes[i] >= 0) {
			size_t g = (size_t)takes[i];

			if (mode == PY_NATIVE_ALL)
				ret[n++] = (struct py_item){ .native = (int16_t)i, .py = -1 };
			for (size_t k = gend[g] + 1; k-- > gstart[g] && n < max;)
				ret[n++] = (struct py_item){ .native = -1, .py = (int16_t)k };
			continue;
		}
		if (mode == PY_NATIVE_SPLICED && lo >= 0 && (ssize_t)i > lo && (ssize_t)i < hi &&
		    nat[i].interp)
			continue;
		ret[n++] = (struct py_item){ .native = (int16_t)i, .py = -1 };
	}
	return n;
}

size_t java_splice(const struct py_native *nat, size_t nn, const struct py_frame *java,
		   size_t njava, struct py_item *ret, size_t max)
{
	struct py_item in[2 * ROVER_MAX_STACK_DEPTH + PY_MAX_FRAMES];
	size_t n = 0, n0 = nn, pos = 0, outside = 0;

	if (njava > PY_MAX_FRAMES)
		njava = PY_MAX_FRAMES;
	if (nn > 2 * ROVER_MAX_STACK_DEPTH)
		nn = 2 * ROVER_MAX_STACK_DEPTH;
	for (size_t k = 0; k < njava; k++)
		if ((java[k].instr & JAVA_FRAME_KIND_MASK) == JAVA_FRAME_ENTRY)
			outside += java[k].stamp;
	/* Counts that do not add up are no one's: every native frame is the sampled ones'. */
	if (outside > nn)
		outside = 0;
	n0 = nn - outside;
	/* Innermost first: the native frames inside the innermost Java frame, up to the first in
	 * code no file holds (where the unwinder met JIT code); each Java frame; at each entry
	 * frame, the native frames that called it. */
	for (size_t i = 0; i < n0 && !nat[nn - 1 - i].jit; i++)
		in[n++] = (struct py_item){ .native = (int16_t)(nn - 1 - i), .py = -1 };
	pos = n0;
	for (size_t k = 0; k < njava; k++) {
		size_t c = (java[k].instr & JAVA_FRAME_KIND_MASK) == JAVA_FRAME_ENTRY && outside
				   ? java[k].stamp
				   : 0;

		if ((java[k].instr & JAVA_FRAME_KIND_MASK) != JAVA_FRAME_ENTRY) {
			in[n++] = (struct py_item){ .native = -1, .py = (int16_t)k };
			continue;
		}
		for (size_t i = 0; i < c; i++)
			in[n++] =
				(struct py_item){ .native = (int16_t)(nn - 1 - pos - i), .py = -1 };
		pos += c;
	}
	/* Outermost first, as names are; past max the innermost are left out. */
	for (size_t k = 0; k < n && k < max; k++)
		ret[k] = in[n - 1 - k];
	return n < max ? n : max;
}

size_t v8_splice(const uint64_t *ips, size_t nn, const struct py_frame *js, size_t njs,
		 struct py_item *ret, size_t max)
{
	struct py_item in[2 * ROVER_MAX_STACK_DEPTH + PY_MAX_FRAMES];
	size_t n = 0, i = 0;
	bool met = false;

	if (njs > PY_MAX_FRAMES)
		njs = PY_MAX_FRAMES;
	if (nn > 2 * ROVER_MAX_STACK_DEPTH)
		nn = 2 * ROVER_MAX_STACK_DEPTH;
	/* Innermost first: each JavaScript frame takes the place of the native frame at its pc,
	 * the native frames before it kept; one whose pc the unwinding did not meet goes where the
	 * one before it went. When the unwinding met none (it stopped before the JavaScript
	 * code), the JavaScript frames are the outermost, as the Java splice has them. */
	for (size_t k = 0; k < njs && !met; k++)
		for (size_t j = 0; j < nn && !met; j++)
			met = (uint32_t)ips[j] == js[k].instr;
	for (; i < nn && !met; i++)
		in[n++] = (struct py_item){ .native = (int16_t)(nn - 1 - i), .py = -1 };
	for (size_t k = 0; k < njs && !met; k++)
		in[n++] = (struct py_item){ .native = -1, .py = (int16_t)k };
	for (size_t k = 0; k < njs && met; k++) {
		size_t j = i;

		while (j < nn && (uint32_t)ips[j] != js[k].instr)
			j++;
		if (j < nn) {
			for (; i < j; i++)
				in[n++] = (struct py_item){ .native = (int16_t)(nn - 1 - i),
							    .py = -1 };
			i++; /* the native frame the JavaScript one names */
		}
		in[n++] = (struct py_item){ .native = -1, .py = (int16_t)k };
	}
	for (; i < nn; i++)
		in[n++] = (struct py_item){ .native = (int16_t)(nn - 1 - i), .py = -1 };
	/* Outermost first, as names are. */
	for (size_t k = 0; k < n && k < max; k++)
		ret[k] = in[n - 1 - k];
	return n < max ? n : max;
}

const char *v8_status_name(uint32_t status)
{
	switch (status) {
	case V8_ST_NONE:
		return "not read as node";
	case V8_ST_OK:
		return "complete";
	case V8_ST_NO_JS:
		return "no JavaScript frame (the thread ran no JavaScript)";
	case V8_ST_LOOP:
		return "a frame named itself its caller (a loop): walk ended";
	case V8_ST_CUT:
		return "deeper than the frames walked (outermost left out)";
	case V8_ST_FAULT:
		return "a JavaScript frame's function was not readable";
	}
	return "unknown status";
}

const char *java_status_name(uint32_t status)
{
	switch (status) {
	case JAVA_ST_NONE:
		return "not read as Java";
	case JAVA_ST_OK:
		return "complete";
	case JAVA_ST_NOT_IN_JAVA:
		return "the thread was not in Java code and had no last Java frame";
	case JAVA_ST_NO_CODE:
		return "the JVM had no code cache yet";
	case JAVA_ST_FAULT:
		return "a read of the JVM's state or a frame failed";
	case JAVA_ST_CUT:
		return "deeper than 128 frames (outermost left out)";
	case JAVA_ST_NO_THREAD:
		return "not a Java thread (the JVM's own: GC, VM thread)";
	}
	return "unknown status";
}

const char *py_status_name(uint32_t status)
{
	switch (status) {
	case PY_ST_NONE:
		return "not read as Python";
	case PY_ST_OK:
		return "complete";
	case PY_ST_NO_THREAD:
		return "no thread state (a thread Python never ran on)";
	case PY_ST_IDLE:
		return "no frame (the thread ran no Python code)";
	case PY_ST_FAULT:
		return "a read of the interpreter's state failed";
	case PY_ST_CUT:
		return "deeper than 128 frames (outermost left out)";
	}
	return "unknown status";
}
