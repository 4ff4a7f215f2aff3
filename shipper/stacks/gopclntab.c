// SPDX-License-Identifier: Apache-2.0
/*
 * The layouts are those the Go linker writes (cmd/link/internal/ld/pcln.go) and that
 * debug/gosym reads (pclntab.go, parsePclnTab and go12Funcs); runtime/symtab.go declares
 * pcHeader, functab and _func. All offsets are 64-bit here and checked against len before any
 * byte is read: a table is as untrusted as the file it comes from.
 */
#include "shipper/stacks/gopclntab.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define GO12_MAGIC 0xfffffffbu	/* Go 1.2 to 1.15 */
#define GO116_MAGIC 0xfffffffau /* Go 1.16, 1.17 */
#define GO118_MAGIC 0xfffffff0u /* Go 1.18, 1.19 */
#define GO120_MAGIC 0xfffffff1u /* Go 1.20 on: the layout of 1.18 */

/* The header: magic, two zero bytes, the pc quantum, the pointer size, then pointer words. */
#define HDR_WORDS 8

enum layout { GO12, GO116, GO118 };

struct pcln {
	const unsigned char *p;
	uint64_t len;
	bool big;
	unsigned ptr; /* 4 or 8 */
	enum layout layout;
	uint64_t nfunc;
	uint64_t text_start; /* GO118: added to every entry offset */
	uint64_t names;	     /* funcnametab: [names, names_end) */
	uint64_t names_end;
	uint64_t functab;  /* nfunc + 1 entries of two fields, the last one of its pc only */
	uint64_t field;	   /* bytes per functab field: 4 from 1.18, a pointer before */
	uint64_t funcdata; /* base of functab's func offsets */
};

static uint64_t rd(const struct pcln *t, uint64_t off, unsigned n)
{
	const unsigned char *p = t->p + off;
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[t->big ? n - 1 - i : i] << (8 * i);
	return v;
}

/* Whether [off, off + n) lies inside the table. */
static bool inside(const struct pcln *t, uint64_t off, uint64_t n)
{
	return off <= t->len && n <= t->len - off;
}

static int pcln__init(struct pcln *t, const void *data, size_t len)
{
	uint64_t w[HDR_WORDS], fsz, functab_bytes;
	unsigned i, nwords, first_off = 0;
	uint32_t magic;

	*t = (struct pcln){ .p = data, .len = len };
	if (!data || len < 8 || t->p[4] != 0 || t->p[5] != 0)
		return -ENOEXEC;
	if (t->p[6] != 1 && t->p[6] != 2 && t->p[6] != 4)
		return -ENOEXEC; /* the pc quantum, 1 (x86) to 4 (arm64, ppc64, riscv) */
	t->ptr = t->p[7];
	if (t->ptr != 4 && t->ptr != 8)
		return -ENOEXEC;
	magic = (uint32_t)rd(t, 0, 4);
	if (magic != GO12_MAGIC && magic != GO116_MAGIC && magic != GO118_MAGIC &&
	    magic != GO120_MAGIC) {
		t->big = true;
		magic = (uint32_t)rd(t, 0, 4);
	}
	switch (magic) {
	case GO12_MAGIC:
		t->layout = GO12;
		nwords = 1;
		break;
	case GO116_MAGIC:
		t->layout = GO116;
		nwords = 7;
		break;
	case GO118_MAGIC:
	case GO120_MAGIC:
		t->layout = GO118;
		nwords = 8;
		break;
	default:
		return -ENOEXEC;
	}
	if (!inside(t, 8, (uint64_t)nwords * t->ptr))
		return -ENOEXEC;
	for (i = 0; i < nwords; i++)
		w[i] = rd(t, 8 + (uint64_t)i * t->ptr, t->ptr);
	t->nfunc = w[0];
	switch (t->layout) {
	case GO12:
		/* Everything is relative to the table: names, funcs, the functab after nfunc. */
		t->names = 0;
		t->names_end = t->len;
		t->functab = 8 + t->ptr;
		t->field = t->ptr;
		t->funcdata = 0;
		break;
	case GO116:
		/* nfunc, nfiles, funcnametab, cutab, filetab, pctab, pclntab (functab, funcs). */
		t->names = w[2];
		t->functab = t->funcdata = w[6];
		first_off = 2;
		t->field = t->ptr;
		break;
	case GO118:
		/* nfunc, nfiles, textStart, funcnametab, cutab, filetab, pctab, pclntab. */
		/*
		 * runtime.text, which the linker writes in place even where a dynamic relocation
		 * sets it again at run time (GNU ld writes RELA addends in place too). Without it
		 * the entries cannot be placed: .text, which debug/gosym takes instead, starts
		 * with C start-up code when an external linker made the file.
		 */
		t->text_start = w[2];
		if (!t->text_start)
			return -ENOEXEC;
		t->names = w[3];
		t->functab = t->funcdata = w[7];
		first_off = 3;
		t->field = 4;
		break;
	}
	if (t->layout != GO12) {
		/* The name table ends where the next table the header places after it begins. */
		t->names_end = t->len;
		for (i = first_off; i < nwords; i++)
			if (w[i] > t->names && w[i] < t->names_end)
				t->names_end = w[i];
		if (t->names >= t->names_end)
			return -ENOEXEC;
	}
	if (t->nfunc > GOPCLNTAB_MAX_FUNCS)
		t->nfunc = GOPCLNTAB_MAX_FUNCS;
	/* nfunc is at most 2^22 and a field 8 bytes: no overflow. */
	fsz = t->field;
	functab_bytes = (t->nfunc * 2 + 1) * fsz;
	if (!inside(t, t->functab, functab_bytes))
		return -ENOEXEC;
	return 0;
}

/* The entry of function i, as stored: an offset from text_start (1.18 on) or an address. */
static uint64_t pcln__pc(const struct pcln *t, uint64_t i)
{
	return rd(t, t->functab + 2 * i * t->field, (unsigned)t->field);
}

/*
 * The name of function i, when its _func lies inside the table, agrees on the entry, and its
 * name is a terminated, non-empty string of the name table. *ret_name is not terminated.
 */
static bool pcln__name(const struct pcln *t, uint64_t i, uint64_t pc, const char **ret_name,
		       size_t *ret_len)
{
	uint64_t func, entry_sz, nameoff, max;
	const unsigned char *name, *nul;

	func = rd(t, t->functab + (2 * i + 1) * t->field, (unsigned)t->field);
	/* _func: the entry (a uint32 offset from 1.18, a pointer before), then int32 nameoff. */
	entry_sz = t->layout == GO118 ? 4 : t->ptr;
	if (func > UINT64_MAX - t->funcdata)
		return false;
	func += t->funcdata;
	if (!inside(t, func, entry_sz + 4) || rd(t, func, (unsigned)entry_sz) != pc)
		return false;
	nameoff = rd(t, func + entry_sz, 4);
	/* An int32: a negative one is out of the table. */
	if (nameoff & 0x80000000u)
		return false;
	if (nameoff >= t->names_end - t->names)
		return false;
	name = t->p + t->names + nameoff;
	max = t->names_end - t->names - nameoff;
	nul = memchr(name, '\0', max);
	if (!nul || nul == name)
		return false;
	*ret_name = (const char *)name;
	*ret_len = (size_t)(nul - name);
	return true;
}

long gopclntab__walk(const void *data, size_t len, gopclntab_fn fn, void *ctx)
{
	uint64_t i, pc, next, name_bytes = 0;
	struct pcln t;
	const char *name;
	size_t nlen;
	long n = 0;
	int err;

	err = pcln__init(&t, data, len);
	if (err)
		return err;
	if (t.nfunc == 0)
		return 0;
	pc = pcln__pc(&t, 0);
	for (i = 0; i < t.nfunc; i++, pc = next) {
		/* Entry i + 1 is the end of function i: the last one is the end of the text. */
		next = pcln__pc(&t, i + 1);
		/* The table is sorted: past a step back, what follows is not trusted. */
		if (next < pc)
			break;
		if (next == pc || !pcln__name(&t, i, pc, &name, &nlen))
			continue;
		if (nlen > GOPCLNTAB_MAX_NAME_BYTES - name_bytes)
			break;
		name_bytes += nlen;
		err = fn(ctx, t.layout == GO118 ? t.text_start + pc : pc, next - pc, name, nlen);
		if (err < 0)
			return err;
		if (err > 0)
			break;
		n++;
	}
	return n;
}
