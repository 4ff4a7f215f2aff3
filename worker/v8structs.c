// SPDX-License-Identifier: Apache-2.0
/*
 * V8's v8dbg_* globals read from a node file (see worker/v8structs.h, docs/node-frames.md).
 *
 * Each v8dbg_ symbol is an `int` that V8's build initializes with a constant, so its value is
 * in the file: in .data, or in .bss when it is 0 (the compiler's choice, not a run-time
 * store: the tests compare them with a running node's). They are found through the dynamic
 * symbols' hash table (node exports them), or, when a file exports none, by one pass over the
 * static symbol table. Every read goes through elf_rd's budget; every address a symbol gives
 * is checked against the segments before its bytes are read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/elffile.h"
#include "worker/v8structs.h"

/* Section headers read at most: node 20 has 40. */
#define MAX_SHDRS 1024
/* Static symbols read at once (24 bytes each). */
#define SYM_CHUNK 512
/* Bytes of a symbol's name compared: the longest wanted has 65 with its terminator. */
#define NAME_LEN 96

/* struct want flags. */
#define MUST 1u	   /* refused without it */
#define NONZERO 2u /* 0 is not a value it can have: refused when it is 0 */

struct want {
	const char *name;
	uint16_t at;  /* where in struct v8_layout */
	uint8_t kind; /* enum v8structs_kind */
	uint8_t flags;
};

#define L(m) ((uint16_t)offsetof(struct v8_layout, m))
#define V8(n) "v8dbg_" n

static const struct want wanted[] = {
	{ "_ZN2v88internal7Version6major_E", L(major), V8S_VERSION, MUST | NONZERO },
	{ "_ZN2v88internal7Version6minor_E", L(minor), V8S_VERSION, MUST },
	{ "_ZN2v88internal7Version6build_E", L(build), V8S_VERSION, MUST },
	{ "_ZN2v88internal7Version6patch_E", L(patch), V8S_VERSION, 0 },
	{ V8("HeapObjectTag"), L(heap_object_tag), V8S_U8, MUST | NONZERO },
	{ V8("HeapObjectTagMask"), L(heap_object_tag_mask), V8S_U8, MUST | NONZERO },
	{ V8("SmiTag"), L(smi_tag), V8S_U8, MUST },
	{ V8("SmiTagMask"), L(smi_tag_mask), V8S_U8, MUST | NONZERO },
	/* Named so by gen-postmortem-metadata.py, the value is kSmiTagSize. */
	{ V8("SmiValueShift"), L(smi_tag_size), V8S_U8, MUST | NONZERO },
	{ V8("SmiShiftSize"), L(smi_shift_size), V8S_U8, MUST },
	{ V8("TaggedSize"), L(tagged_size), V8S_U8, MUST | NONZERO },
	{ V8("SystemPointerSize"), L(pointer_size), V8S_U8, MUST | NONZERO },
	{ V8("off_fp_context_or_frame_type"), L(fp_context_or_type), V8S_S8, MUST | NONZERO },
	{ V8("off_fp_context"), L(fp_context), V8S_S8, MUST | NONZERO },
	{ V8("off_fp_function"), L(fp_function), V8S_S8, MUST | NONZERO },
	{ V8("off_fp_bytecode_array"), L(fp_bytecode_array), V8S_S8, MUST | NONZERO },
	{ V8("off_fp_bytecode_offset"), L(fp_bytecode_offset), V8S_S8, MUST | NONZERO },
	{ V8("off_fp_args"), L(fp_args), V8S_S8, MUST | NONZERO },
	{ V8("frametype_EntryFrame"), L(ft_entry), V8S_U8, MUST | NONZERO },
	{ V8("frametype_ConstructEntryFrame"), L(ft_construct_entry), V8S_U8, MUST | NONZERO },
	{ V8("frametype_ExitFrame"), L(ft_exit), V8S_U8, MUST | NONZERO },
	{ V8("frametype_BuiltinExitFrame"), L(ft_builtin_exit), V8S_U8, MUST | NONZERO },
	{ V8("frametype_InterpretedFrame"), L(ft_interpreted), V8S_U8, MUST | NONZERO },
	{ V8("frametype_BaselineFrame"), L(ft_baseline), V8S_U8, MUST | NONZERO },
	{ V8("frametype_MaglevFrame"), L(ft_maglev), V8S_U8, MUST | NONZERO },
	{ V8("frametype_TurbofanFrame"), L(ft_turbofan), V8S_U8, MUST | NONZERO },
	{ V8("frametype_StubFrame"), L(ft_stub), V8S_U8, MUST | NONZERO },
	{ V8("frametype_BuiltinFrame"), L(ft_builtin), V8S_U8, MUST | NONZERO },
	{ V8("frametype_InternalFrame"), L(ft_internal), V8S_U8, MUST | NONZERO },
	{ V8("frametype_ConstructFrame"), L(ft_construct), V8S_U8, MUST | NONZERO },
	{ V8("frametype_NativeFrame"), L(ft_native), V8S_U8, MUST | NONZERO },
	{ V8("frametype_BuiltinContinuationFrame"), L(ft_builtin_continuation), V8S_U8,
	  MUST | NONZERO },
	{ V8("frametype_JavaScriptBuiltinContinuationFrame"), L(ft_js_builtin_continuation), V8S_U8,
	  MUST | NONZERO },
	{ V8("type_JSFunction__JS_FUNCTION_TYPE"), L(type_js_function_first), V8S_U16,
	  MUST | NONZERO },
	{ V8("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"), L(type_shared_function_info),
	  V8S_U16, MUST | NONZERO },
	{ V8("type_Code__CODE_TYPE"), L(type_code), V8S_U16, MUST | NONZERO },
	{ V8("type_BytecodeArray__BYTECODE_ARRAY_TYPE"), L(type_bytecode_array), V8S_U16,
	  MUST | NONZERO },
	{ V8("type_Script__SCRIPT_TYPE"), L(type_script), V8S_U16, MUST | NONZERO },
	{ V8("type_ScopeInfo__SCOPE_INFO_TYPE"), L(type_scope_info), V8S_U16, MUST | NONZERO },
	{ V8("type_FixedArray__FIXED_ARRAY_TYPE"), L(type_fixed_array), V8S_U16, MUST | NONZERO },
	{ V8("type_ByteArray__BYTE_ARRAY_TYPE"), L(type_byte_array), V8S_U16, MUST | NONZERO },
	{ V8("type_Map__MAP_TYPE"), L(type_map), V8S_U16, MUST | NONZERO },
	{ V8("FirstNonstringType"), L(first_nonstring_type), V8S_U16, MUST | NONZERO },
	{ V8("StringEncodingMask"), L(string_encoding_mask), V8S_U8, MUST | NONZERO },
	{ V8("OneByteStringTag"), L(string_one_byte_tag), V8S_U8, MUST | NONZERO },
	{ V8("StringRepresentationMask"), L(string_repr_mask), V8S_U8, MUST | NONZERO },
	{ V8("SeqStringTag"), L(string_seq_tag), V8S_U8, MUST },
	{ V8("ConsStringTag"), L(string_cons_tag), V8S_U8, MUST | NONZERO },
	{ V8("ExternalStringTag"), L(string_external_tag), V8S_U8, MUST | NONZERO },
	{ V8("SlicedStringTag"), L(string_sliced_tag), V8S_U8, MUST | NONZERO },
	{ V8("ThinStringTag"), L(string_thin_tag), V8S_U8, MUST | NONZERO },
	{ V8("class_HeapObject__map__Map"), L(heap_object_map), V8S_U16, MUST },
	{ V8("class_Map__instance_type__uint16_t"), L(map_instance_type), V8S_U16, MUST | NONZERO },
	{ V8("class_JSFunction__shared__SharedFunctionInfo"), L(js_function_shared), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_JSFunction__context__Context"), L(js_function_context), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_SharedFunctionInfo__function_data__Object"), L(sfi_function_data), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_SharedFunctionInfo__name_or_scope_info__Object"), L(sfi_name_or_scope_info),
	  V8S_U16, MUST | NONZERO },
	{ V8("class_SharedFunctionInfo__script_or_debug_info__HeapObject"),
	  L(sfi_script_or_debug_info), V8S_U16, MUST | NONZERO },
	{ V8("class_Script__source__Object"), L(script_source), V8S_U16, MUST | NONZERO },
	{ V8("class_Script__name__Object"), L(script_name), V8S_U16, MUST | NONZERO },
	{ V8("class_Script__line_ends__Object"), L(script_line_ends), V8S_U16, MUST | NONZERO },
	{ V8("class_Code__source_position_table__ByteArray"), L(code_source_position_table),
	  V8S_U16, MUST | NONZERO },
	{ V8("class_Code__deoptimization_data__FixedArray"), L(code_deoptimization_data), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_BytecodeArray__data__uintptr_t"), L(bytecode_array_data), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_FixedArrayBase__length__SMI"), L(fixed_array_length), V8S_U16, MUST | NONZERO },
	{ V8("class_FixedArray__data__uintptr_t"), L(fixed_array_data), V8S_U16, MUST | NONZERO },
	{ V8("class_String__length__int32_t"), L(string_length), V8S_U16, MUST | NONZERO },
	{ V8("class_SeqOneByteString__chars__char"), L(seq_one_byte_chars), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_SeqTwoByteString__chars__char"), L(seq_two_byte_chars), V8S_U16,
	  MUST | NONZERO },
	{ V8("class_ConsString__first__String"), L(cons_first), V8S_U16, MUST | NONZERO },
	{ V8("class_ConsString__second__String"), L(cons_second), V8S_U16, MUST | NONZERO },
	{ V8("class_ThinString__actual__String"), L(thin_actual), V8S_U16, MUST | NONZERO },
	{ V8("class_SlicedString__offset__SMI"), L(sliced_offset), V8S_U16, MUST | NONZERO },
	{ V8("class_ExternalString__resource__Object"), L(external_resource), V8S_U16,
	  MUST | NONZERO },
	{ V8("CodeKindFieldMask"), L(codekind_mask), V8S_U32, MUST | NONZERO },
	{ V8("CodeKindFieldShift"), L(codekind_shift), V8S_U8, MUST },
	{ V8("CodeKindInterpretedFunction"), L(codekind_interpreted), V8S_U8, MUST | NONZERO },
	{ V8("CodeKindBaseline"), L(codekind_baseline), V8S_U8, MUST | NONZERO },
	{ V8("DeoptimizationDataInlinedFunctionCountIndex"), L(deopt_inlined_count), V8S_U8,
	  MUST | NONZERO },
	{ V8("DeoptimizationDataLiteralArrayIndex"), L(deopt_literal_array), V8S_U8,
	  MUST | NONZERO },
	{ V8("DeoptimizationDataSharedFunctionInfoIndex"), L(deopt_shared_info), V8S_U8,
	  MUST | NONZERO },
	{ V8("DeoptimizationDataInliningPositionsIndex"), L(deopt_inlining_positions), V8S_U8,
	  MUST | NONZERO },
};

#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))
#define N_VERSION 4 /* the first rows: v8::internal::Version's */

/*
 * The versions whose layout was checked against a running node (tests/unit/test_v8structs.c),
 * with what V8 does not export there. The anchors are exported offsets next to the ones taken
 * from here: a build where they moved has another layout and is refused.
 */
struct checked {
	uint16_t major, minor;
	uint32_t flags;
	/* Anchors, as exported. */
	uint16_t js_function_shared, js_function_context, code_source_position_table,
		bytecode_array_data, type_js_function_first;
	/* Not exported. */
	uint16_t js_function_code, code_instruction_start, code_flags, code_instruction_size,
		bytecode_array_source_position_table;
	uint16_t n_js_function_types; /* JSFunction and its subtypes, from the first */
};

static const struct checked versions[] = {
	/*
	 * V8 11.3 (node 20). JSFunction: map, properties, elements, shared, context,
	 * feedback_cell, code. Code (the former CodeDataContainer): map, relocation_info,
	 * deoptimization data, position table, instruction_stream, then raw fields
	 * instruction_start (a pointer), flags (u32), builtin_id (u16), kind-specific flags (u16),
	 * instruction_size. BytecodeArray: map, length, constant_pool, handler_table,
	 * source_position_table. The JSFunction types: JS_FUNCTION_TYPE, eleven typed-array
	 * constructors, Array's, Promise's, RegExp's, then class constructors: 16.
	 */
	{ 11, 3, V8_F_CODE_START_PTR, 24, 32, 24, 54, 2066, 48, 40, 48, 56, 32, 16 },
};

struct ctx {
	struct elf_file f;
	struct elf_dyn d;
	bool have_dyn;
	int64_t val[N_WANTED];
	uint8_t found[N_WANTED];
	uint8_t bss[N_WANTED];
	unsigned int cur; /* the wanted row being looked up */
	const char *why;
	int err; /* a value's read failed: kept past elf_dynsym_find */
};

const char *v8structs__entry(unsigned int i, int *ret_kind, unsigned int *ret_at)
{
	if (i >= N_WANTED)
		return NULL;
	if (ret_kind)
		*ret_kind = wanted[i].kind;
	if (ret_at)
		*ret_at = wanted[i].at;
	return wanted[i].name;
}

/*
 * The int a symbol of size bytes at address v holds: from a segment's file bytes, or 0 when it
 * lies in a segment's zero-filled tail (.bss). 0, -ENOEXEC (in no segment, or across the end
 * of the file bytes) or -E2BIG.
 */
static int sym_value(struct ctx *c, uint64_t v, uint64_t size, int64_t *ret, bool *ret_bss)
{
	for (size_t k = 0; k < c->f.nph; k++) {
		const Elf64_Phdr *p = &c->f.ph[k];
		uint64_t rel = v - p->p_vaddr;
		uint8_t b[8];
		int err;

		if (p->p_type != PT_LOAD || v < p->p_vaddr || rel >= p->p_memsz ||
		    size > p->p_memsz - rel)
			continue;
		if (rel >= p->p_filesz) {
			*ret = 0;
			*ret_bss = true;
			return 0;
		}
		if (size > p->p_filesz - rel || p->p_offset > UINT64_MAX - rel)
			return -ENOEXEC;
		err = elf_rd(&c->f, b, size, p->p_offset + rel);
		if (err)
			return err == -EFAULT ? -ENOEXEC : err;
		*ret = size == 4 ? (int64_t)(int32_t)elf_rd32(b) : (int64_t)elf_rd64(b);
		*ret_bss = false;
		return 0;
	}
	return -ENOEXEC;
}

/* Keeps the value of a defined int symbol for wanted row i. 1, 0 (not an int), -errno. */
static int take(struct ctx *c, unsigned int i, const Elf64_Sym *s)
{
	bool bss = false;
	int64_t v;
	int err;

	if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || (s->st_size != 4 && s->st_size != 8) ||
	    s->st_shndx == SHN_UNDEF)
		return 0;
	err = sym_value(c, s->st_value, s->st_size, &v, &bss);
	if (err) {
		c->why = wanted[i].name;
		return err;
	}
	c->val[i] = v;
	c->bss[i] = bss;
	c->found[i] = 1;
	return 1;
}

static int dyn_ok(struct elf_file *f, const Elf64_Sym *s, void *arg)
{
	struct ctx *c = arg;

	(void)f;
	return take(c, c->cur, s);
}

/* Looks every wanted symbol up in the dynamic symbols: 0 or -errno. */
static int from_dynsym(struct ctx *c)
{
	for (unsigned int i = 0; i < N_WANTED; i++) {
		int r;

		c->cur = i;
		r = elf_dynsym_find(&c->f, &c->d, wanted[i].name, dyn_ok, c);
		if (r < 0) {
			if (!c->why)
				c->why = "dynamic symbols";
			return r;
		}
	}
	return 0;
}

/* The wanted row called name (NUL-terminated within NAME_LEN), or -1. */
static int wanted_row(const char *name)
{
	if (strncmp(name, "v8dbg_", 6) && strncmp(name, "_ZN2v88internal7Version", 23))
		return -1;
	for (unsigned int i = 0; i < N_WANTED; i++)
		if (!strcmp(name, wanted[i].name))
			return (int)i;
	return -1;
}

/*
 * One pass over the static symbol table (SHT_SYMTAB and the string table it links), for a file
 * that exports none of the symbols: 0 or -errno.
 */
static int from_symtab(struct ctx *c)
{
	const Elf64_Ehdr *eh = &c->f.eh;
	Elf64_Shdr sym, str;
	uint64_t n, shnum = eh->e_shnum;
	bool have = false;
	int err;

	c->why = "section headers";
	if (!eh->e_shoff || !shnum)
		return -ENOENT;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || shnum > MAX_SHDRS)
		return -ENOEXEC;
	for (uint64_t k = 0; k < shnum && !have; k++) {
		if (eh->e_shoff > UINT64_MAX - k * sizeof(sym))
			return -ENOEXEC;
		if ((err = elf_rd(&c->f, &sym, sizeof(sym), eh->e_shoff + k * sizeof(sym))))
			return err == -EFAULT ? -ENOEXEC : err;
		have = sym.sh_type == SHT_SYMTAB;
	}
	if (!have)
		return -ENOENT;
	c->why = ".symtab";
	if (sym.sh_entsize != sizeof(Elf64_Sym) || sym.sh_link >= shnum ||
	    sym.sh_offset > c->f.size || sym.sh_size > c->f.size - sym.sh_offset)
		return -ENOEXEC;
	if ((err = elf_rd(&c->f, &str, sizeof(str), eh->e_shoff + sym.sh_link * sizeof(str))))
		return err == -EFAULT ? -ENOEXEC : err;
	if (str.sh_type != SHT_STRTAB || str.sh_offset > c->f.size ||
	    str.sh_size > c->f.size - str.sh_offset)
		return -ENOEXEC;
	n = sym.sh_size / sizeof(Elf64_Sym);
	for (uint64_t i = 0; i < n;) {
		Elf64_Sym s[SYM_CHUNK];
		uint64_t k = n - i < SYM_CHUNK ? n - i : SYM_CHUNK;

		if ((err = elf_rd(&c->f, s, k * sizeof(s[0]), sym.sh_offset + i * sizeof(s[0]))))
			return err == -EFAULT ? -ENOEXEC : err;
		for (uint64_t j = 0; j < k; j++) {
			char name[NAME_LEN];
			uint64_t len;
			int row;

			if (ELF64_ST_TYPE(s[j].st_info) != STT_OBJECT ||
			    (s[j].st_size != 4 && s[j].st_size != 8) ||
			    s[j].st_shndx == SHN_UNDEF || s[j].st_name >= str.sh_size)
				continue;
			len = str.sh_size - s[j].st_name;
			if (len > sizeof(name))
				len = sizeof(name);
			if ((err = elf_rd(&c->f, name, len, str.sh_offset + s[j].st_name)))
				return err == -EFAULT ? -ENOEXEC : err;
			if (!memchr(name, 0, len))
				continue;
			row = wanted_row(name);
			if (row < 0 || c->found[row])
				continue;
			if ((err = take(c, (unsigned int)row, &s[j])) < 0)
				return err;
		}
		i += k;
	}
	return 0;
}

static bool fits(int kind, int64_t v)
{
	switch (kind) {
	case V8S_U8:
		return v >= 0 && v <= UINT8_MAX;
	case V8S_S8:
		return v >= INT8_MIN && v <= INT8_MAX;
	case V8S_U16:
	case V8S_VERSION:
		return v >= 0 && v <= UINT16_MAX;
	case V8S_U32:
		return v >= 0 && v <= UINT32_MAX;
	}
	return false;
}

static void put(struct v8_layout *l, const struct want *w, int64_t v)
{
	uint8_t *p = (uint8_t *)l + w->at;

	switch (w->kind) {
	case V8S_U8:
	case V8S_S8: {
		uint8_t b = (uint8_t)v;

		memcpy(p, &b, 1);
		break;
	}
	case V8S_U16:
	case V8S_VERSION: {
		uint16_t h = (uint16_t)v;

		memcpy(p, &h, 2);
		break;
	}
	case V8S_U32: {
		uint32_t u = (uint32_t)v;

		memcpy(p, &u, 4);
		break;
	}
	}
}

static __thread char why_version[96];

/* The rows found, into *l; the checks of what the walker assumes. 0 or -errno, *why set. */
static int assign(struct ctx *c, struct v8_layout *l, const char **why)
{
	uint8_t done[sizeof(*l)] = { 0 };
	const struct checked *v = NULL;
	unsigned int nsym = 0, nbss = 0;

	memset(l, 0, sizeof(*l));
	for (unsigned int i = N_VERSION; i < N_WANTED; i++) {
		nsym += c->found[i];
		nbss += c->found[i] && c->bss[i];
	}
	if (!nsym) {
		*why = "no v8dbg_ symbols (not V8, or built without postmortem metadata)";
		return -ENOENT;
	}
	for (unsigned int i = 0; i < N_WANTED; i++) {
		const struct want *w = &wanted[i];

		/* The version before the rest: a file of another V8 is refused as such, not by
		 * the first symbol it lacks. */
		if (i == N_VERSION) {
			for (size_t k = 0; k < sizeof(versions) / sizeof(versions[0]); k++)
				if (versions[k].major == l->major && versions[k].minor == l->minor)
					v = &versions[k];
			if (!v) {
				snprintf(why_version, sizeof(why_version),
					 "V8 %u.%u.%u, whose layout has not been checked (11.3 is)",
					 l->major, l->minor, l->build);
				*why = why_version;
				return -EPROTONOSUPPORT;
			}
		}
		if (done[w->at])
			continue;
		if (!c->found[i]) {
			bool later = false;

			for (unsigned int j = i + 1; j < N_WANTED; j++)
				later |= wanted[j].at == w->at && c->found[j];
			if ((w->flags & MUST) && !later) {
				*why = w->name;
				return -ENOEXEC;
			}
			continue;
		}
		if (!fits(w->kind, c->val[i]) || ((w->flags & NONZERO) && !c->val[i])) {
			*why = w->name;
			return -ENOEXEC;
		}
		done[w->at] = 1;
		put(l, w, c->val[i]);
	}
	l->n_symbols = (__u16)nsym;
	l->n_bss = (__u16)nbss;
	if (l->tagged_size != 8 || l->pointer_size != 8) {
		*why = "pointer compression (v8dbg_TaggedSize is not 8)";
		return -EPROTONOSUPPORT;
	}
	/* The tags V8 has used on 64-bit machines without pointer compression: an object's
	 * pointer ends in 01, a Smi in 0, its value in the upper 32 bits. */
	if (l->heap_object_tag != 1 || l->heap_object_tag_mask != 3 || l->smi_tag != 0 ||
	    l->smi_tag_mask != 1 || l->smi_tag_size != 1 || l->smi_shift_size != 31) {
		*why = "a tagging other than 64-bit V8's (v8dbg_HeapObjectTag, v8dbg_Smi*)";
		return -EPROTONOSUPPORT;
	}
	{
		const __s8 slots[] = { l->fp_context_or_type, l->fp_context,	     l->fp_function,
				       l->fp_bytecode_array,  l->fp_bytecode_offset, l->fp_args };

		for (size_t k = 0; k < sizeof(slots); k++)
			if (slots[k] % 8) {
				*why = "a frame slot that is not a multiple of 8 (v8dbg_off_fp_*)";
				return -ENOEXEC;
			}
	}
	if (l->js_function_shared != v->js_function_shared ||
	    l->js_function_context != v->js_function_context ||
	    l->code_source_position_table != v->code_source_position_table ||
	    l->bytecode_array_data != v->bytecode_array_data ||
	    l->type_js_function_first != v->type_js_function_first) {
		*why = "JSFunction, Code or BytecodeArray not where this V8 version has them";
		return -EPROTONOSUPPORT;
	}
	l->flags = v->flags;
	l->js_function_code = v->js_function_code;
	l->code_instruction_start = v->code_instruction_start;
	l->code_flags = v->code_flags;
	l->code_instruction_size = v->code_instruction_size;
	l->bytecode_array_source_position_table = v->bytecode_array_source_position_table;
	l->type_js_function_last = (__u16)(l->type_js_function_first + v->n_js_function_types - 1);
	return 0;
}

int v8structs__file(int fd, struct v8_layout *ret, const char **ret_why)
{
	const char *why = "ELF headers";
	struct v8_layout l;
	struct ctx *c;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c) {
		why = "memory";
		err = -ENOMEM;
		goto out;
	}
	err = elf_file__open(&c->f, fd, V8STRUCTS_MAX_READ);
	if (err)
		goto out;
	if (c->f.eh.e_machine != EM_X86_64) {
		why = "not x86-64";
		err = -EPROTONOSUPPORT;
		goto out;
	}
	c->have_dyn = !elf_load_dynamic(&c->f, &c->d) && c->d.symtab != ELF_NONE &&
		      c->d.strtab != ELF_NONE &&
		      (c->d.gnu_hash != ELF_NONE || c->d.hash != ELF_NONE);
	if (c->have_dyn && (err = from_dynsym(c)))
		goto fail;
	{
		bool any = false;

		for (unsigned int i = N_VERSION; i < N_WANTED; i++)
			any |= c->found[i];
		/* Node 20 exports them all; a build that exports none may keep them in its
		 * static symbol table. */
		if (!any) {
			memset(c->found, 0, sizeof(c->found));
			c->why = NULL;
			err = from_symtab(c);
			if (err == -ENOENT) {
				why = "no v8dbg_ symbols (not V8, or built without postmortem "
				      "metadata)";
				goto out;
			}
			if (err)
				goto fail;
		}
	}
	err = assign(c, &l, &why);
	if (!err)
		*ret = l;
	goto out;
fail:
	why = c->why ? c->why : "symbols";
out:
	if (err == -EFAULT)
		err = -ENOEXEC;
	if (err && err != -E2BIG && ret_why)
		*ret_why = why;
	else if (err && ret_why)
		*ret_why = "more bytes than the budget";
	free(c);
	return err;
}
