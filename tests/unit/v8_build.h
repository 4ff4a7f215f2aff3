/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small node executable as worker/v8structs.c reads one, built from a struct v8_layout: an
 * int object symbol for each entry v8structs__entry lists, its value in the data when it is
 * not 0 and in the zero-filled tail (.bss) when it is, as GCC places node's. Exported through
 * DT_SYMTAB and DT_HASH (vb_build), or only in a static symbol table, as a node that exports
 * nothing would keep them (VB_SYMTAB_ONLY). Reading it gives back the layout it was built
 * from; the fuzz target's seeds are such files (tests/fuzz/seed_v8.c), 8 KiB where node has
 * 95 MB.
 *
 * One PT_LOAD maps the whole file at VB_BASE, plus VB_BSS bytes of zeros past its end.
 */
#ifndef ROVER_TESTS_V8_BUILD_H
#define ROVER_TESTS_V8_BUILD_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/v8structs.h"

#define VB_MAX (32u << 10)
#define VB_BASE 0x400000u
#define VB_BSS 4096u
#define VB_NBUCKET 17u
#define VB_SYMTAB_ONLY 1u

struct vb {
	uint8_t b[VB_MAX];
	uint32_t len;
	/* Where the parts landed: for tests that break one. */
	uint32_t symtab, nsyms, strtab, hash, dynamic, shdrs;
};

static uint32_t vb_at(struct vb *v, uint32_t n, uint32_t align)
{
	uint32_t at = (v->len + align - 1) & ~(align - 1);

	if (at + n > VB_MAX)
		abort();
	v->len = at + n;
	return at;
}

static uint32_t vb_sysv_hash(const char *s)
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

/* The value a layout holds for entry i, as the file's int. */
static int32_t vb_value(const struct v8_layout *l, int kind, unsigned int at)
{
	const uint8_t *p = (const uint8_t *)l + at;
	uint16_t h;
	uint32_t u;

	switch (kind) {
	case V8S_U8:
		return p[0];
	case V8S_S8:
		return (int8_t)p[0];
	case V8S_U16:
	case V8S_VERSION:
		memcpy(&h, p, 2);
		return h;
	default:
		memcpy(&u, p, 4);
		return (int32_t)u;
	}
}

static int vb_build(struct vb *v, const struct v8_layout *l, unsigned int flags)
{
	uint32_t n = 0, names, data, strsz, bucket[VB_NBUCKET] = { 0 }, *chain;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Sym *syms;
	int kind;
	unsigned int at;

	memset(v, 0, sizeof(*v));
	while (v8structs__entry(n, NULL, NULL))
		n++;
	v->nsyms = n + 1; /* symbol 0 is the null one */
	vb_at(v, sizeof(Elf64_Ehdr), 8);
	vb_at(v, 2 * sizeof(Elf64_Phdr), 8);
	/* Strings: a leading NUL, then the names. */
	names = vb_at(v, 1, 1);
	v->strtab = names;
	for (unsigned int i = 0; i < n; i++) {
		const char *s = v8structs__entry(i, NULL, NULL);
		uint32_t o = vb_at(v, (uint32_t)strlen(s) + 1, 1);

		memcpy(v->b + o, s, strlen(s) + 1);
	}
	strsz = v->len - names;
	data = vb_at(v, 4 * n, 8);
	v->symtab = vb_at(v, v->nsyms * sizeof(Elf64_Sym), 8);
	syms = (Elf64_Sym *)(v->b + v->symtab);
	{
		uint32_t o = 1;

		for (unsigned int i = 0; i < n; i++) {
			const char *s = v8structs__entry(i, &kind, &at);
			int32_t val = vb_value(l, kind, at);
			Elf64_Sym *y = &syms[i + 1];

			y->st_name = o;
			y->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
			y->st_shndx = 1;
			y->st_size = 4;
			if (val) {
				memcpy(v->b + data + 4 * i, &val, 4);
				y->st_value = VB_BASE + data + 4 * i;
			} else {
				y->st_value = 0; /* set below: in the zero-filled tail */
			}
			o += (uint32_t)strlen(s) + 1;
		}
	}
	v->hash = vb_at(v, (2 + VB_NBUCKET + v->nsyms) * 4, 8);
	chain = (uint32_t *)(v->b + v->hash) + 2 + VB_NBUCKET;
	for (uint32_t i = 1; i < v->nsyms; i++) {
		uint32_t h = vb_sysv_hash(v8structs__entry(i - 1, NULL, NULL)) % VB_NBUCKET;

		chain[i] = bucket[h];
		bucket[h] = i;
	}
	((uint32_t *)(v->b + v->hash))[0] = VB_NBUCKET;
	((uint32_t *)(v->b + v->hash))[1] = v->nsyms;
	memcpy(v->b + v->hash + 8, bucket, sizeof(bucket));
	v->dynamic = vb_at(v, 6 * sizeof(Elf64_Dyn), 8);
	{
		Elf64_Dyn *d = (Elf64_Dyn *)(v->b + v->dynamic);

		d[0] = (Elf64_Dyn){ DT_HASH, { VB_BASE + v->hash } };
		d[1] = (Elf64_Dyn){ DT_SYMTAB, { VB_BASE + v->symtab } };
		d[2] = (Elf64_Dyn){ DT_STRTAB, { VB_BASE + names } };
		d[3] = (Elf64_Dyn){ DT_STRSZ, { strsz } };
		d[4] = (Elf64_Dyn){ DT_SYMENT, { sizeof(Elf64_Sym) } };
		d[5] = (Elf64_Dyn){ DT_NULL, { 0 } };
	}
	/* Section headers: the null one, the static symbol table and its strings. */
	v->shdrs = vb_at(v, 3 * sizeof(Elf64_Shdr), 8);
	{
		Elf64_Shdr *sh = (Elf64_Shdr *)(v->b + v->shdrs);

		sh[1] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB,
				      .sh_offset = v->symtab,
				      .sh_size = v->nsyms * sizeof(Elf64_Sym),
				      .sh_link = 2,
				      .sh_entsize = sizeof(Elf64_Sym) };
		sh[2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = names, .sh_size = strsz };
	}
	/* The zeros: past the file's bytes, 8 apart. */
	for (uint32_t i = 1; i < v->nsyms; i++)
		if (!syms[i].st_value)
			syms[i].st_value = VB_BASE + ((v->len + 7u) & ~7u) + 8 * i;
	if (((v->len + 7u) & ~7u) + 8 * v->nsyms > v->len + VB_BSS)
		abort();
	eh = (Elf64_Ehdr *)v->b;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = v->shdrs;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = flags & VB_SYMTAB_ONLY ? 1 : 2;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	ph = (Elf64_Phdr *)(v->b + sizeof(Elf64_Ehdr));
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W,
			      .p_offset = 0,
			      .p_vaddr = VB_BASE,
			      .p_paddr = VB_BASE,
			      .p_filesz = v->len,
			      .p_memsz = v->len + VB_BSS,
			      .p_align = 4096 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_DYNAMIC,
			      .p_flags = PF_R | PF_W,
			      .p_offset = v->dynamic,
			      .p_vaddr = VB_BASE + v->dynamic,
			      .p_filesz = 6 * sizeof(Elf64_Dyn),
			      .p_memsz = 6 * sizeof(Elf64_Dyn),
			      .p_align = 8 };
	return 0;
}

#endif
