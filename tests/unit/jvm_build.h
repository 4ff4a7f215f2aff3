/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small libjvm.so as worker/jvmstructs.c reads one, built from a struct jvm_layout: the four
 * table pointers exported and relocated, the tables holding the entries jvmstructs__entry
 * lists (the first name of each filled slot), and one static initializer that stores the
 * field offsets with `movq $imm32, disp32(%rip)` as GCC's does in a real libjvm. Reading it
 * gives back the layout it was built from; the fuzz target's seeds are such files
 * (tests/fuzz/seed_jvm.c), a few KiB where a real libjvm has 20 MB.
 *
 * One PT_LOAD (read, write, execute) maps the whole file at address 0, so addresses are file
 * offsets.
 */
#ifndef ROVER_TESTS_JVM_BUILD_H
#define ROVER_TESTS_JVM_BUILD_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/jvmstructs.h"

#define JB_MAX (64u << 10)

struct jb {
	uint8_t b[JB_MAX];
	uint32_t len;
	Elf64_Rela rel[1024];
	uint32_t nrel;
};

static uint32_t jb_put(struct jb *j, const void *p, uint32_t n, uint32_t align)
{
	uint32_t at = (j->len + align - 1) & ~(align - 1);

	if (at + n > JB_MAX)
		abort();
	memcpy(j->b + at, p, n);
	j->len = at + n;
	return at;
}

/* n zero bytes reserved (the buffer starts zeroed). */
static uint32_t jb_zero(struct jb *j, uint32_t n, uint32_t align)
{
	uint32_t at = (j->len + align - 1) & ~(align - 1);

	if (at + n > JB_MAX)
		abort();
	j->len = at + n;
	return at;
}

static uint32_t jb_str(struct jb *j, const char *s)
{
	return jb_put(j, s, (uint32_t)strlen(s) + 1, 1);
}

static void jb_w64(struct jb *j, uint32_t at, uint64_t v)
{
	memcpy(j->b + at, &v, 8);
}

static void jb_reloc(struct jb *j, uint32_t at, uint64_t value)
{
	if (j->nrel >= sizeof(j->rel) / sizeof(j->rel[0]))
		abort();
	j->rel[j->nrel++] = (Elf64_Rela){ .r_offset = at,
					  .r_info = ELF64_R_INFO(0, R_X86_64_RELATIVE),
					  .r_addend = (int64_t)value };
}

/* A type string whose size the types table gives: "void*" for a pointer-sized field. */
static const char *jb_type_of(unsigned int size, char *buf, size_t n)
{
	snprintf(buf, n, size == 8 ? "void*" : "T%u", size);
	return buf;
}

/*
 * Builds into *j the file for layout l. 0, or -1 when a slot of l cannot be said (a field
 * offset the stores' imm32 cannot hold).
 */
static int jb_build(struct jb *j, const struct jvm_layout *l)
{
	static const char *const syms[4] = { "gHotSpotVMStructs", "gHotSpotVMTypes",
					     "gHotSpotVMIntConstants", "gHotSpotVMLongConstants" };
	const uint8_t *lb = (const uint8_t *)l;
	uint8_t done[sizeof(*l) + 64] = { 0 };
	uint32_t ehoff, phoff, dyn, symtab, strtab, strsz, hash, rela, ptrs, structs, types, ints,
		longs, code, init, data, nstructs = 0, ntypes = 0, nints = 0, sizes[16], nsizes = 0;
	struct {
		uint32_t entry; /* struct entry */
		uint32_t off;
	} st[128];
	uint32_t nst = 0;
	char tb[32];

	memset(j, 0, sizeof(*j));
	ehoff = jb_zero(j, sizeof(Elf64_Ehdr), 8);
	phoff = jb_zero(j, 2 * sizeof(Elf64_Phdr), 8);
	/* Names and strings. */
	strtab = j->len;
	jb_put(j, "", 1, 1);
	uint32_t symname[4];

	for (int i = 0; i < 4; i++)
		symname[i] = jb_str(j, syms[i]) - strtab;
	strsz = j->len - strtab;
	symtab = jb_zero(j, sizeof(Elf64_Sym), 8);
	for (int i = 0; i < 4; i++)
		jb_zero(j, sizeof(Elf64_Sym), 8);
	{
		/* DT_HASH: one bucket, every symbol on its chain. */
		uint32_t h[2 + 1 + 5] = { 1, 5, 4, 0, 0, 1, 2, 3 };

		hash = jb_put(j, h, sizeof(h), 8);
	}
	ptrs = jb_zero(j, 32, 8);
	for (int i = 0; i < 4; i++) {
		Elf64_Sym s = { .st_name = symname[i],
				.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
				.st_shndx = 1,
				.st_value = ptrs + 8u * i,
				.st_size = 8 };

		memcpy(j->b + symtab + sizeof(s) * (i + 1), &s, sizeof(s));
	}
	/* Version numbers and static variables' storage. */
	data = jb_zero(j, 64, 8);

	/* gHotSpotVMStructs. */
	structs = jb_zero(j, 48 * 100, 8);
	types = jb_zero(j, 40 * 40, 8);
	ints = jb_zero(j, 16 * 40, 8);
	longs = jb_zero(j, 16, 8);
	for (unsigned int i = 0;; i++) {
		unsigned int at;
		int kind;
		const char *name = jvmstructs__entry(i, &kind, &at);
		char type[96], *field;
		struct jvm_field jf;
		uint32_t e;

		if (!name)
			break;
		if (at >= sizeof(*l) || done[at])
			continue;
		snprintf(type, sizeof(type), "%s", name);
		field = strstr(type, "::");
		if (kind == JVMS_FIELD || kind == JVMS_STATIC || kind == JVMS_VERSION) {
			uint64_t addr = 0;

			if (kind == JVMS_FIELD) {
				memcpy(&jf, lb + at, sizeof(jf));
				if (!jf.size)
					continue;
			} else if (kind == JVMS_STATIC) {
				memcpy(&addr, lb + at, 8);
				if (!addr)
					continue;
			} else {
				uint16_t v;

				memcpy(&v, lb + at, 2);
				addr = data +
				       4u * (uint32_t)(at - offsetof(struct jvm_layout, major)) / 2;
				memcpy(j->b + addr, &(uint32_t){ v }, 4);
			}
			if (!field || nstructs >= 99)
				return -1;
			*field = 0;
			e = structs + 48 * nstructs++;
			jb_reloc(j, e + 0, jb_str(j, type));
			jb_reloc(j, e + 8, jb_str(j, field + 2));
			if (kind == JVMS_FIELD) {
				if (jf.size == 255 || nst >= 128)
					return -1;
				st[nst].entry = e;
				st[nst++].off = jf.off;
				/* Symbol::_body, an array of bytes, has no type string. */
				if (!strcmp(name, "Symbol::_body"))
					continue;
				jb_reloc(j, e + 16, jb_str(j, jb_type_of(jf.size, tb, sizeof(tb))));
				if (jf.size != 8) {
					uint32_t k;

					for (k = 0; k < nsizes && sizes[k] != jf.size; k++)
						;
					if (k == nsizes && nsizes < 16)
						sizes[nsizes++] = jf.size;
				}
			} else {
				memcpy(j->b + e + 24, &(int32_t){ 1 }, 4);
				jb_reloc(j, e + 40, addr);
			}
		} else if (kind == JVMS_SIZE) {
			uint16_t v;

			memcpy(&v, lb + at, 2);
			if (!v || ntypes >= 39)
				return -1;
			e = types + 40 * ntypes++;
			jb_reloc(j, e, jb_str(j, name));
			jb_w64(j, e + 32, v);
		} else if (kind == JVMS_INT) {
			int32_t v;

			memcpy(&v, lb + at, 4);
			if (nints >= 39)
				return -1;
			e = ints + 16 * nints++;
			jb_reloc(j, e, jb_str(j, name));
			memcpy(j->b + e + 8, &v, 4);
		}
		done[at] = 1;
	}
	/* The two constants only checked, and the sizes of the field types. */
	{
		static const struct {
			const char *name;
			int32_t v;
		} c[] = { { "frame::interpreter_frame_sender_sp_offset", -1 },
			  { "frame::interpreter_frame_last_sp_offset", -2 } };

		for (size_t i = 0; i < 2; i++) {
			uint32_t e = ints + 16 * nints++;

			jb_reloc(j, e, jb_str(j, c[i].name));
			memcpy(j->b + e + 8, &c[i].v, 4);
		}
	}
	for (uint32_t k = 0; k < nsizes; k++) {
		uint32_t e = types + 40 * ntypes++;

		jb_reloc(j, e, jb_str(j, jb_type_of(sizes[k], tb, sizeof(tb))));
		jb_w64(j, e + 32, sizes[k]);
	}
	jb_reloc(j, ptrs + 0, structs);
	jb_reloc(j, ptrs + 8, types);
	jb_reloc(j, ptrs + 16, ints);
	jb_reloc(j, ptrs + 24, longs);
	/* The initializer: one store per field offset, then ret. */
	code = j->len;
	for (uint32_t k = 0; k < nst; k++) {
		uint8_t s[11] = { 0x48, 0xc7, 0x05 };
		uint32_t end = code + 11 * (k + 1);
		int32_t disp = (int32_t)(st[k].entry + 32) - (int32_t)end;

		memcpy(s + 3, &disp, 4);
		memcpy(s + 7, &(int32_t){ (int32_t)st[k].off }, 4);
		jb_put(j, s, 11, 1);
	}
	jb_put(j, "\xc3", 1, 1);
	init = jb_zero(j, 8, 8);
	jb_reloc(j, init, code);
	rela = jb_put(j, j->rel, j->nrel * (uint32_t)sizeof(Elf64_Rela), 8);
	{
		Elf64_Dyn d[] = {
			{ DT_SYMTAB, { symtab } },
			{ DT_STRTAB, { strtab } },
			{ DT_STRSZ, { strsz } },
			{ DT_SYMENT, { sizeof(Elf64_Sym) } },
			{ DT_HASH, { hash } },
			{ DT_RELA, { rela } },
			{ DT_RELASZ, { j->nrel * sizeof(Elf64_Rela) } },
			{ DT_RELAENT, { sizeof(Elf64_Rela) } },
			{ DT_INIT_ARRAY, { init } },
			{ DT_INIT_ARRAYSZ, { 8 } },
			{ DT_NULL, { 0 } },
		};

		dyn = jb_put(j, d, sizeof(d), 8);
	}
	{
		Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
					       ELFDATA2LSB, EV_CURRENT },
				  .e_type = ET_DYN,
				  .e_machine = EM_X86_64,
				  .e_version = EV_CURRENT,
				  .e_phoff = phoff,
				  .e_ehsize = sizeof(Elf64_Ehdr),
				  .e_phentsize = sizeof(Elf64_Phdr),
				  .e_phnum = 2 };
		Elf64_Phdr ph[2] = {
			{ .p_type = PT_LOAD,
			  .p_flags = PF_R | PF_W | PF_X,
			  .p_filesz = j->len,
			  .p_memsz = j->len,
			  .p_align = 4096 },
			{ .p_type = PT_DYNAMIC,
			  .p_flags = PF_R | PF_W,
			  .p_offset = dyn,
			  .p_vaddr = dyn,
			  .p_filesz = j->len - dyn,
			  .p_memsz = j->len - dyn,
			  .p_align = 8 },
		};

		memcpy(j->b + ehoff, &eh, sizeof(eh));
		memcpy(j->b + phoff, ph, sizeof(ph));
	}
	return 0;
}

#endif
