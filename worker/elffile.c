// SPDX-License-Identifier: Apache-2.0
/*
 * Worker side: reading an ELF file a shipper handed over, with pread only and a byte budget.
 * See worker/elffile.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/elffile.h"

/* n bytes at file offset off into buf: 0, -EFAULT when the file has them not, or -E2BIG. */
int elf_rd(struct elf_file *f, void *buf, uint64_t n, uint64_t off)
{
	if (n > f->left)
		return -E2BIG;
	f->left -= n;
	if (off > f->size || n > f->size - off || pread(f->fd, buf, n, (off_t)off) != (ssize_t)n)
		return -EFAULT;
	return 0;
}

uint32_t elf_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t elf_rd64(const uint8_t *p)
{
	return (uint64_t)elf_rd32(p) | (uint64_t)elf_rd32(p + 4) << 32;
}

int elf_file__open(struct elf_file *f, int fd, uint64_t budget)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -EBADF;
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->size = (uint64_t)st.st_size;
	f->left = budget;
	if (elf_rd(f, &f->eh, sizeof(f->eh), 0) || memcmp(f->eh.e_ident, ELFMAG, SELFMAG) ||
	    f->eh.e_ident[EI_CLASS] != ELFCLASS64 || f->eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !f->eh.e_phnum || f->eh.e_phnum > ELF_MAX_PHDRS)
		return -ENOEXEC;
	f->nph = f->eh.e_phnum;
	if (elf_rd(f, f->ph, f->nph * sizeof(f->ph[0]), f->eh.e_phoff))
		return -ENOEXEC;
	return 0;
}

/* The executable segment whose bytes in the file hold offset off, or NULL. */
const Elf64_Phdr *elf_code_at(const struct elf_file *f, uint64_t off)
{
	for (size_t k = 0; k < f->nph; k++) {
		const Elf64_Phdr *p = &f->ph[k];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && off >= p->p_offset &&
		    off - p->p_offset < p->p_filesz && off < f->size)
			return p;
	}
	return NULL;
}

/* The file offset of vaddr in the bytes of a loaded segment (an executable one: code), or ELF_NONE. */
uint64_t elf_file_offset(const struct elf_file *f, uint64_t vaddr, bool code)
{
	for (size_t k = 0; k < f->nph; k++) {
		const Elf64_Phdr *p = &f->ph[k];

		if (p->p_type == PT_LOAD && (!code || (p->p_flags & PF_X)) && vaddr >= p->p_vaddr &&
		    vaddr - p->p_vaddr < p->p_filesz && p->p_offset <= f->size &&
		    vaddr - p->p_vaddr < f->size - p->p_offset)
			return vaddr - p->p_vaddr + p->p_offset;
	}
	return ELF_NONE;
}

/* Whether the bytes at off are the string name and its terminator: 1, 0 or -errno. */
int elf_name_is(struct elf_file *f, uint64_t off, const char *name)
{
	/* V8's v8dbg_ names reach 65 bytes with the terminator. */
	char buf[128];
	size_t n = strlen(name) + 1;
	int err;

	if (n > sizeof(buf))
		return 0;
	err = elf_rd(f, buf, n, off);
	if (err)
		return err == -EFAULT ? 0 : err;
	return !memcmp(buf, name, n);
}


/* The tables PT_DYNAMIC names, as file offsets. 0, or -EFAULT when there are none. */
int elf_load_dynamic(struct elf_file *f, struct elf_dyn *ret)
{
	uint64_t v[5] = { ELF_NONE, ELF_NONE, ELF_NONE, ELF_NONE,
			  ELF_NONE }; /* symtab, strtab, strsz, gnu, hash */
	uint64_t rela = ELF_NONE, relasz = 0, init = ELF_NONE, initsz = 0;
	const Elf64_Phdr *dp = NULL;
	bool end = false;
	int err;

	for (size_t k = 0; k < f->nph && !dp; k++)
		if (f->ph[k].p_type == PT_DYNAMIC)
			dp = &f->ph[k];
	if (!dp || dp->p_offset > f->size || dp->p_filesz > f->size - dp->p_offset)
		return -EFAULT;
	for (uint64_t i = 0; !end && i < ELF_MAX_DYN && i < dp->p_filesz / sizeof(Elf64_Dyn);) {
		Elf64_Dyn d[32];
		uint64_t n = dp->p_filesz / sizeof(Elf64_Dyn) - i;

		if (n > 32)
			n = 32;
		err = elf_rd(f, d, n * sizeof(d[0]), dp->p_offset + i * sizeof(d[0]));
		if (err)
			return err;
		for (uint64_t k = 0; k < n && !end; k++) {
			switch (d[k].d_tag) {
			case DT_NULL:
				end = true;
				break;
			case DT_SYMTAB:
				v[0] = d[k].d_un.d_ptr;
				break;
			case DT_STRTAB:
				v[1] = d[k].d_un.d_ptr;
				break;
			case DT_STRSZ:
				v[2] = d[k].d_un.d_val;
				break;
			case DT_GNU_HASH:
				v[3] = d[k].d_un.d_ptr;
				break;
			case DT_HASH:
				v[4] = d[k].d_un.d_ptr;
				break;
			case DT_SYMENT:
				if (d[k].d_un.d_val != sizeof(Elf64_Sym))
					return -EFAULT;
				break;
			case DT_RELA:
				rela = d[k].d_un.d_ptr;
				break;
			case DT_RELASZ:
				relasz = d[k].d_un.d_val;
				break;
			case DT_RELAENT:
				if (d[k].d_un.d_val != sizeof(Elf64_Rela))
					return -EFAULT;
				break;
			case DT_INIT_ARRAY:
				init = d[k].d_un.d_ptr;
				break;
			case DT_INIT_ARRAYSZ:
				initsz = d[k].d_un.d_val;
				break;
			}
		}
		i += n;
	}
	ret->symtab = v[0] == ELF_NONE ? ELF_NONE : elf_file_offset(f, v[0], false);
	ret->strtab = v[1] == ELF_NONE ? ELF_NONE : elf_file_offset(f, v[1], false);
	ret->strsz = v[2];
	ret->gnu_hash = v[3] == ELF_NONE ? ELF_NONE : elf_file_offset(f, v[3], false);
	ret->hash = v[4] == ELF_NONE ? ELF_NONE : elf_file_offset(f, v[4], false);
	ret->rela = rela == ELF_NONE ? ELF_NONE : elf_file_offset(f, rela, false);
	ret->relasz = ret->rela == ELF_NONE ? 0 : relasz;
	ret->init_array = init;
	ret->init_arraysz = init == ELF_NONE ? 0 : initsz;
	if (ret->symtab == ELF_NONE || ret->strtab == ELF_NONE || ret->strsz == ELF_NONE ||
	    (ret->gnu_hash == ELF_NONE && ret->hash == ELF_NONE))
		return -EFAULT;
	return 0;
}

int elf_rela_each(struct elf_file *f, const struct elf_dyn *d,
		  int (*each)(const Elf64_Rela *rel, void *arg), void *arg)
{
	Elf64_Rela r[ELF_RELA_CHUNK];
	uint64_t n;
	int err;

	if (d->rela == ELF_NONE || d->rela > f->size || d->relasz > f->size - d->rela)
		return d->relasz ? -EFAULT : 0;
	n = d->relasz / sizeof(r[0]);
	for (uint64_t i = 0; i < n;) {
		uint64_t k = n - i < ELF_RELA_CHUNK ? n - i : ELF_RELA_CHUNK;

		err = elf_rd(f, r, k * sizeof(r[0]), d->rela + i * sizeof(r[0]));
		if (err)
			return err;
		for (uint64_t j = 0; j < k; j++)
			if ((err = each(&r[j], arg)))
				return err;
		i += k;
	}
	return 0;
}

int elf_dynsym_at(struct elf_file *f, const struct elf_dyn *d, uint32_t i, Elf64_Sym *ret)
{
	Elf64_Sym s;
	int err;

	/* i is a 32-bit index: no overflow. */
	err = elf_rd(f, &s, sizeof(s), d->symtab + (uint64_t)i * sizeof(s));
	if (err)
		return err;
	*ret = s;
	return 0;
}

/* Whether dynamic symbol i is called name and ok(f, its entry, arg) says yes: 1, 0 or -errno. */
static int sym_is(struct elf_file *f, const struct elf_dyn *d, uint64_t i, const char *name,
		  elf_sym_ok ok, void *arg)
{
	Elf64_Sym s;
	int err;

	/* i is a 32-bit index: no overflow. */
	err = elf_rd(f, &s, sizeof(s), d->symtab + i * sizeof(s));
	if (err)
		return err == -EFAULT ? 0 : err;
	if (s.st_shndx == SHN_UNDEF || s.st_name >= d->strsz)
		return 0;
	if (strlen(name) + 1 > d->strsz - s.st_name)
		return 0;
	err = elf_name_is(f, d->strtab + s.st_name, name);
	return err == 1 ? ok(f, &s, arg) : err;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0, g;

	for (; *s; s++) {
		h = (h << 4) + (uint8_t)*s;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

int elf_dynsym_find(struct elf_file *f, const struct elf_dyn *d, const char *name, elf_sym_ok ok,
		    void *arg)
{
	uint8_t b[16];
	uint32_t h, i;
	int err, r;

	if (d->gnu_hash != ELF_NONE) {
		uint64_t buckets, chains;
		uint32_t nbuckets, symoff, nbloom;

		h = gnu_hash(name);
		if ((err = elf_rd(f, b, 16, d->gnu_hash)))
			return err == -EFAULT ? 0 : err;
		nbuckets = elf_rd32(b);
		symoff = elf_rd32(b + 4);
		nbloom = elf_rd32(b + 8);
		if (!nbuckets)
			return 0;
		/* The bloom filter is skipped: it only saves a look at the chain. */
		buckets = d->gnu_hash + 16 + (uint64_t)nbloom * 8;
		chains = buckets + (uint64_t)nbuckets * 4;
		if ((err = elf_rd(f, b, 4, buckets + (uint64_t)(h % nbuckets) * 4)))
			return err == -EFAULT ? 0 : err;
		i = elf_rd32(b);
		if (!i || i < symoff)
			return 0;
		for (uint32_t n = 0; n < ELF_MAX_CHAIN; n++, i++) {
			uint32_t c;

			if ((err = elf_rd(f, b, 4, chains + (uint64_t)(i - symoff) * 4)))
				return err == -EFAULT ? 0 : err;
			c = elf_rd32(b);
			if ((c | 1) == (h | 1) && (r = sym_is(f, d, i, name, ok, arg)))
				return r;
			if ((c & 1) || i == UINT32_MAX)
				break;
		}
		return 0;
	}
	{
		uint32_t nbucket, nchain;

		h = sysv_hash(name);
		if ((err = elf_rd(f, b, 8, d->hash)))
			return err == -EFAULT ? 0 : err;
		nbucket = elf_rd32(b);
		nchain = elf_rd32(b + 4);
		if (!nbucket)
			return 0;
		if ((err = elf_rd(f, b, 4, d->hash + 8 + (uint64_t)(h % nbucket) * 4)))
			return err == -EFAULT ? 0 : err;
		i = elf_rd32(b);
		for (uint32_t n = 0; i != STN_UNDEF && i < nchain && n < ELF_MAX_CHAIN; n++) {
			if ((r = sym_is(f, d, i, name, ok, arg)))
				return r;
			if ((err = elf_rd(f, b, 4, d->hash + 8 + ((uint64_t)nbucket + i) * 4)))
				return err == -EFAULT ? 0 : err;
			i = elf_rd32(b);
		}
		return 0;
	}
}
