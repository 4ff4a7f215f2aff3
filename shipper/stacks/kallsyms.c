// SPDX-License-Identifier: Apache-2.0
#include "shipper/stacks/kallsyms.h"
#include "shipper/lines.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A 6.18 x86_64 kernel lists about 120k text symbols, a distribution kernel with its modules
 * loaded about 300k: these limits leave an order of magnitude of room and still bound what
 * a bogus descriptor can make us allocate.
 */
#define KALLSYMS_MAX_SYMS (4u << 20)
#define KALLSYMS_MAX_STRINGS (128u << 20)
#define KALLSYMS_MAX_BYTES (512u << 20)
#define KALLSYMS_MAX_MODULES 65535u
/* KSYM_NAME_LEN is 512 and MODULE_NAME_LEN 56: a longer line is not a kallsyms line. */
#define KALLSYMS_MAX_LINE 1024
/*
 * kallsyms has no sizes, so the last text symbol of a module (or of the core kernel) has no
 * end. The largest function of a 6.18 x86_64 build (hidinput_connect) is about 20 KiB; an
 * address further than this past the last symbol of its region is not in any function we know.
 */
#define KALLSYMS_TAIL_MAX (64u << 10)

/* Symbols sharing an address: the global name wins over the local one, text over a marker. */
enum ksym_rank { RANK_T, RANK_t, RANK_W, RANK_w, RANK_BOUNDARY };
#define NO_NAME UINT32_MAX

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset in strs; NO_NAME for a boundary (a non-text symbol) */
	uint16_t region; /* 0: the core kernel, else 1 + index in modules */
	uint8_t rank;
};

struct kallsyms {
	struct ksym *syms;
	size_t nsyms;
	size_t syms_cap;
	char *strs;
	size_t strs_len;
	size_t strs_cap;
	uint32_t *modules; /* name offsets in strs */
	size_t nmodules;
	size_t modules_cap;
	uint16_t last_region;
	bool any_nonzero;
};

static int grow(void **arr, size_t *cap, size_t need, size_t elem, size_t max)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -EFBIG;
	ncap = *cap ? *cap : 1024;
	while (ncap < need)
		ncap *= 2;
	if (ncap > max)
		ncap = max;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int kallsyms__add_string(struct kallsyms *ks, const char *s, size_t n, uint32_t *ret_off)
{
	int err;

	err = grow((void **)&ks->strs, &ks->strs_cap, ks->strs_len + n + 1, 1,
		   KALLSYMS_MAX_STRINGS);
	if (err)
		return err;
	memcpy(ks->strs + ks->strs_len, s, n);
	ks->strs[ks->strs_len + n] = '\0';
	*ret_off = (uint32_t)ks->strs_len;
	ks->strs_len += n + 1;
	return 0;
}

static int kallsyms__region(struct kallsyms *ks, const char *mod, size_t n, uint16_t *ret_region)
{
	uint32_t off;
	size_t i;
	int err;

	if (!mod) {
		*ret_region = 0;
		return 0;
	}
	/* A module's symbols come in one block: the previous line's module is the likely one. */
	if (ks->last_region) {
		const char *last = ks->strs + ks->modules[ks->last_region - 1];

		if (strlen(last) == n && !memcmp(last, mod, n)) {
			*ret_region = ks->last_region;
			return 0;
		}
	}
	for (i = 0; i < ks->nmodules; i++) {
		const char *m = ks->strs + ks->modules[i];

		if (strlen(m) == n && !memcmp(m, mod, n)) {
			ks->last_region = (uint16_t)(i + 1);
			*ret_region = ks->last_region;
			return 0;
		}
	}
	err = grow((void **)&ks->modules, &ks->modules_cap, ks->nmodules + 1, sizeof(*ks->modules),
		   KALLSYMS_MAX_MODULES);
	if (err)
		return err;
	err = kallsyms__add_string(ks, mod, n, &off);
	if (err)
		return err;
	ks->modules[ks->nmodules++] = off;
	ks->last_region = (uint16_t)ks->nmodules;
	*ret_region = ks->last_region;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Linker markers that end a text section: what follows them is not in the function before. */
static bool is_text_end_marker(const char *name, size_t n)
{
	static const char suffix[] = "_text_end";
	const size_t slen = sizeof(suffix) - 1;

	if ((n == 6 && !memcmp(name, "_etext", 6)) || (n == 10 && !memcmp(name, "_einittext", 10)))
		return true;
	return n > slen + 2 && !memcmp(name, "__", 2) && !memcmp(name + n - slen, suffix, slen);
}

/* "ffffffff81000000 T _stext" or "ffffffffc0201000 t name\t[module]". Malformed: skipped. */
static int kallsyms__parse_line(struct kallsyms *ks, const char *p, size_t n)
{
	const char *end = p + n, *name, *name_end, *mod = NULL;
	struct ksym sym = {};
	size_t digits = 0, mod_len = 0;
	int v, err;

	/* Names are kept as C strings: one cut short (or emptied) by a NUL would be another name. */
	if (memchr(p, '\0', n))
		return 0;
	while (p < end && (v = hexval(*p)) >= 0) {
		if (++digits > 16)
			return 0;
		sym.addr = sym.addr << 4 | (uint64_t)v;
		p++;
	}
	if (digits == 0 || end - p < 3 || p[0] != ' ' || p[2] != ' ')
		return 0;
	if (sym.addr)
		ks->any_nonzero = true;
	switch (p[1]) {
	case 'T':
		sym.rank = RANK_T;
		break;
	case 't':
		sym.rank = RANK_t;
		break;
	case 'W':
		sym.rank = RANK_W;
		break;
	case 'w':
		sym.rank = RANK_w;
		break;
	case 'a':
	case 'A':
	case 'U':
	case 'u':
		/* Absolute and undefined symbols are not addresses in the kernel image. */
		return 0;
	default:
		sym.rank = RANK_BOUNDARY;
		break;
	}
	name = p + 3;
	name_end = memchr(name, '\t', (size_t)(end - name));
	if (name_end) {
		mod = name_end + 1;
		if (end - mod < 3 || mod[0] != '[' || end[-1] != ']')
			return 0;
		mod++;
		mod_len = (size_t)(end - 1 - mod);
	} else {
		name_end = end;
	}
	if (name_end == name || memchr(name, ' ', (size_t)(name_end - name)))
		return 0;
	if (sym.rank != RANK_BOUNDARY && is_text_end_marker(name, (size_t)(name_end - name)))
		sym.rank = RANK_BOUNDARY;

	err = kallsyms__region(ks, mod, mod_len, &sym.region);
	if (err)
		return err;
	sym.name = NO_NAME;
	if (sym.rank != RANK_BOUNDARY) {
		err = kallsyms__add_string(ks, name, (size_t)(name_end - name), &sym.name);
		if (err)
			return err;
	}
	err = grow((void **)&ks->syms, &ks->syms_cap, ks->nsyms + 1, sizeof(*ks->syms),
		   KALLSYMS_MAX_SYMS);
	if (err)
		return err;
	ks->syms[ks->nsyms++] = sym;
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	/* Name offsets grow in file order: the first listed name wins, as in the kernel. */
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return 0;
}

static int kallsyms__line(void *ctx, const char *p, size_t n)
{
	return kallsyms__parse_line(ctx, p, n);
}

static int kallsyms__read(struct kallsyms *ks, int fd)
{
	/* Lines of KALLSYMS_MAX_LINE or more are skipped; so is a last line without newline. */
	return read_lines(fd, KALLSYMS_MAX_LINE, KALLSYMS_MAX_BYTES, true, kallsyms__line, ks);
}

struct kallsyms *kallsyms__load(int fd)
{
	struct kallsyms *ks;
	size_t i, j;
	bool any_text = false;
	int err;

	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return NULL;
	err = kallsyms__read(ks, fd);
	if (err)
		goto cleanup;
	if (!ks->any_nonzero) {
		err = -ENODATA;
		goto cleanup;
	}
	/* The kernel lists them in address order (modules and BPF included, on the kernels
	 * here): sorted already, the sort (a fifth of a one-shot shipper's CPU) is skipped. */
	for (i = 1; i < ks->nsyms && ksym_cmp(&ks->syms[i - 1], &ks->syms[i]) <= 0; i++)
		;
	if (i < ks->nsyms)
		qsort(ks->syms, ks->nsyms, sizeof(*ks->syms), ksym_cmp);
	for (i = 0, j = 0; i < ks->nsyms; i++) {
		const struct ksym *s = &ks->syms[i];

		if (j > 0 && ks->syms[j - 1].addr == s->addr)
			continue;
		if (s->rank == RANK_BOUNDARY && (j == 0 || ks->syms[j - 1].rank == RANK_BOUNDARY))
			continue;
		if (s->rank != RANK_BOUNDARY)
			any_text = true;
		ks->syms[j++] = *s;
	}
	ks->nsyms = j;
	if (!any_text) {
		err = -ENODATA;
		goto cleanup;
	}
	return ks;
cleanup:
	kallsyms__free(ks);
	errno = -err;
	return NULL;
}

void kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->strs);
	free(ks->modules);
	free(ks);
}

const char *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr)
{
	const struct ksym *s;
	size_t lo = 0, hi, mid;

	if (!ks)
		return NULL;
	hi = ks->nsyms;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &ks->syms[lo - 1];
	if (s->rank == RANK_BOUNDARY)
		return NULL;
	if ((lo == ks->nsyms || ks->syms[lo].region != s->region) &&
	    addr - s->addr >= KALLSYMS_TAIL_MAX)
		return NULL;
	return ks->strs + s->name;
}
