// SPDX-License-Identifier: Apache-2.0
/*
 * HotSpot's tables read from a libjvm.so file (see worker/jvmstructs.h, docs/java-frames.md).
 *
 * The four tables are arrays of fixed entries that end with an entry whose name is NULL. In
 * the file, each name (and each static field's address) is a dynamic relocation, since the
 * library is position independent; field offsets are not in the file's data at all: HotSpot
 * computes them with offsetof-like expressions that the compiler cannot fold into constant
 * data, so the library's static initializer stores each one at load time, as a
 * `movq $imm32, table+k*48+32(%rip)`. The reader therefore takes names and addresses from the
 * relocations, sizes and constants from the data, and offsets from those stores, scanned for in
 * the code the DT_INIT_ARRAY functions start in. Every read goes through elf_rd's budget.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/elffile.h"
#include "worker/jvmstructs.h"

/*
 * Entries read per table at most: JDK 17's gHotSpotVMStructs has 788, its types 768, its int
 * constants 398; JDK 8's were larger, none near these.
 */
#define MAX_STRUCTS 4096
#define MAX_TYPES 4096
#define MAX_INTS 4096
#define MAX_LONGS 1024
/*
 * The entries' layout, fixed by vmStructs.hpp since JDK 6 (the exported
 * gHotSpotVM*Offset and *Stride variables that say so are zero in the file: the same
 * initializer sets them). VMStructEntry: type name, field name, type string, isStatic (int32),
 * offset (uint64), address. VMTypeEntry: type name, superclass name, three int32 flags, size
 * (uint64). The constants: name, value.
 */
#define STRUCT_STRIDE 48
#define ST_TYPE 0
#define ST_FIELD 8
#define ST_TYPESTR 16
#define ST_STATIC 24
#define ST_OFFSET 32
#define ST_ADDRESS 40
#define TYPE_STRIDE 40
#define TY_SIZE 32
#define CONST_STRIDE 16
#define CO_VALUE 8
/* Bytes of a name compared: the longest wanted is under 64. */
#define NAME_MAX_LEN 80
/*
 * Code scanned for the initializer's stores: from the first DT_INIT_ARRAY function on, to
 * SCAN_TAIL past the last one's start. The functions lie together (214 KiB in JDK 17, 329 KiB
 * in Temurin 25); vmStructs.cpp's is 6-8 KiB.
 */
#define SCAN_MAX (2u << 20)
#define SCAN_TAIL (64u << 10)
#define SCAN_CHUNK (64u << 10)
/* The longest store recognized: REX.W C7 05 disp32 imm32. */
#define STORE_LEN 11

#define R_RELATIVE 8 /* R_X86_64_RELATIVE */
#define R_64 1	     /* R_X86_64_64 */

enum { V_NONE = 0, V_KNOWN = 1, V_DYNAMIC = 2 };

/* One of the four tables, as far as the file holds it. */
struct table {
	const char *sym;
	uint64_t stride, max;
	uint64_t ptr;  /* the exported pointer variable's address */
	uint64_t base; /* the array's address: the pointer's relocation */
	uint32_t n;    /* entries before the terminator */
	uint32_t stores;
	uint64_t *name;	 /* [max] the first name's address, 0 for none */
	uint64_t *field; /* [max] structs: the field name's */
	uint64_t *tstr;	 /* [max] structs: the type string's */
	uint64_t *addr;	 /* [max] structs: a static field's address */
	int64_t *val;	 /* [max] offset, size or value */
	uint8_t *vstate; /* [max] V_* of val: what the initializer's stores said */
};

enum { T_STRUCTS, T_TYPES, T_INTS, T_LONGS, T_N };

/* A wanted entry. Rows naming the same slot are one JDK's name or another's: the first
 * found wins. */
struct want {
	const char *type, *field; /* field NULL: a type's size or (JVMS_INT) a constant */
	uint16_t at;		  /* where in struct jvm_layout */
	uint8_t kind;		  /* enum jvmstructs_kind */
	uint8_t must;
};

#define L(m) ((uint16_t)offsetof(struct jvm_layout, m))
/* Constants only checked (not kept) land in struct scratch; offsets past jvm_layout. */
#define X(m) ((uint16_t)(sizeof(struct jvm_layout) + offsetof(struct scratch, m)))

struct scratch {
	__s32 sender_sp, last_sp;
};

static const struct want wanted[] = {
	{ "CodeCache", "_heaps", L(code_heaps), JVMS_STATIC, 1 },
	{ "CodeCache", "_low_bound", L(code_low), JVMS_STATIC, 1 },
	{ "CodeCache", "_high_bound", L(code_high), JVMS_STATIC, 1 },
	{ "StubRoutines", "_call_stub_return_address", L(call_stub_ret), JVMS_STATIC, 1 },
	{ "AbstractInterpreter", "_code", L(interp_code), JVMS_STATIC, 1 },
	{ "Abstract_VM_Version", "_s_vm_release", L(vm_release), JVMS_STATIC, 0 },
	{ "ThreadsSMRSupport", "_java_thread_list", L(thread_list), JVMS_STATIC, 0 },
	{ "Abstract_VM_Version", "_vm_major_version", L(major), JVMS_VERSION, 1 },
	{ "Abstract_VM_Version", "_vm_minor_version", L(minor), JVMS_VERSION, 0 },
	{ "Abstract_VM_Version", "_vm_security_version", L(security), JVMS_VERSION, 0 },
	{ "Abstract_VM_Version", "_vm_build_number", L(build), JVMS_VERSION, 0 },
	{ "HeapBlock", NULL, L(size_heap_block), JVMS_SIZE, 1 },
	{ "CodeBlob", NULL, L(size_code_blob), JVMS_SIZE, 1 },
	{ "nmethod", NULL, L(size_nmethod), JVMS_SIZE, 1 },
	{ "Method", NULL, L(size_method), JVMS_SIZE, 1 },
	{ "ConstMethod", NULL, L(size_const_method), JVMS_SIZE, 1 },
	{ "ConstantPool", NULL, L(size_constant_pool), JVMS_SIZE, 1 },
	{ "Symbol", NULL, L(size_symbol), JVMS_SIZE, 1 },
	{ "PcDesc", NULL, L(size_pc_desc), JVMS_SIZE, 1 },
	{ "GrowableArrayBase", "_len", L(array_len), JVMS_FIELD, 1 },
	{ "GenericGrowableArray", "_len", L(array_len), JVMS_FIELD, 1 },
	{ "GrowableArray<int>", "_data", L(array_data), JVMS_FIELD, 1 },
	{ "CodeHeap", "_memory", L(heap_memory), JVMS_FIELD, 1 },
	{ "CodeHeap", "_segmap", L(heap_segmap), JVMS_FIELD, 1 },
	{ "CodeHeap", "_log2_segment_size", L(heap_log2_segment), JVMS_FIELD, 1 },
	{ "VirtualSpace", "_low_boundary", L(vs_low_boundary), JVMS_FIELD, 1 },
	{ "VirtualSpace", "_high_boundary", L(vs_high_boundary), JVMS_FIELD, 1 },
	{ "VirtualSpace", "_high", L(vs_high), JVMS_FIELD, 0 },
	{ "CodeBlob", "_name", L(blob_name), JVMS_FIELD, 1 },
	{ "CodeBlob", "_size", L(blob_size), JVMS_FIELD, 1 },
	{ "CodeBlob", "_kind", L(blob_kind), JVMS_FIELD, 0 },
	{ "CodeBlob", "_frame_complete_offset", L(blob_frame_complete), JVMS_FIELD, 1 },
	{ "CodeBlob", "_frame_size", L(blob_frame_size), JVMS_FIELD, 1 },
	{ "CodeBlob", "_code_begin", L(blob_code_begin), JVMS_FIELD, 1 },
	{ "CodeBlob", "_code_offset", L(blob_code_begin), JVMS_FIELD, 1 },
	{ "CodeBlob", "_code_end", L(blob_code_end), JVMS_FIELD, 1 },
	{ "CodeBlob", "_data_offset", L(blob_code_end), JVMS_FIELD, 1 },
	{ "CodeBlob", "_mutable_data", L(blob_mutable_data), JVMS_FIELD, 0 },
	{ "CodeBlob", "_relocation_size", L(blob_relocation_size), JVMS_FIELD, 0 },
	{ "CodeBlob", "_mutable_data_size", L(blob_mutable_size), JVMS_FIELD, 0 },
	{ "nmethod", "_method", L(nm_method), JVMS_FIELD, 1 },
	{ "CompiledMethod", "_method", L(nm_method), JVMS_FIELD, 1 },
	{ "nmethod", "_compile_id", L(nm_compile_id), JVMS_FIELD, 1 },
	{ "nmethod", "_entry_bci", L(nm_entry_bci), JVMS_FIELD, 0 },
	{ "nmethod", "_orig_pc_offset", L(nm_orig_pc_offset), JVMS_FIELD, 1 },
	{ "nmethod", "_deopt_handler_offset", L(nm_deopt_handler), JVMS_FIELD, 1 },
	{ "nmethod", "_deopt_handler_entry_offset", L(nm_deopt_handler), JVMS_FIELD, 1 },
	{ "CompiledMethod", "_deopt_handler_begin", L(nm_deopt_handler), JVMS_FIELD, 1 },
	{ "nmethod", "_scopes_pcs_offset", L(nm_scopes_pcs), JVMS_FIELD, 1 },
	{ "nmethod", "_scopes_data_offset", L(nm_scopes_data), JVMS_FIELD, 1 },
	{ "CompiledMethod", "_scopes_data_begin", L(nm_scopes_data), JVMS_FIELD, 1 },
	{ "nmethod", "_metadata_offset", L(nm_metadata), JVMS_FIELD, 0 },
	{ "nmethod", "_dependencies_offset", L(nm_dependencies), JVMS_FIELD, 0 },
	{ "nmethod", "_immutable_data", L(nm_immutable_data), JVMS_FIELD, 0 },
	{ "nmethod", "_immutable_data_size", L(nm_immutable_size), JVMS_FIELD, 0 },
	{ "PcDesc", "_pc_offset", L(pc_pc_offset), JVMS_FIELD, 1 },
	{ "PcDesc", "_scope_decode_offset", L(pc_scope_decode), JVMS_FIELD, 1 },
	{ "PcDesc", "_flags", L(pc_flags), JVMS_FIELD, 0 },
	{ "Method", "_constMethod", L(m_const_method), JVMS_FIELD, 1 },
	{ "ConstMethod", "_constants", L(cm_constants), JVMS_FIELD, 1 },
	{ "ConstMethod", "_flags._flags", L(cm_flags), JVMS_FIELD, 1 },
	{ "ConstMethod", "_flags", L(cm_flags), JVMS_FIELD, 1 },
	{ "ConstMethod", "_code_size", L(cm_code_size), JVMS_FIELD, 1 },
	{ "ConstMethod", "_name_index", L(cm_name_index), JVMS_FIELD, 1 },
	{ "ConstMethod", "_signature_index", L(cm_signature_index), JVMS_FIELD, 1 },
	{ "ConstantPool", "_pool_holder", L(cp_pool_holder), JVMS_FIELD, 1 },
	{ "ConstantPool", "_source_file_name_index", L(cp_source_file), JVMS_FIELD, 0 },
	{ "Klass", "_name", L(klass_name), JVMS_FIELD, 1 },
	{ "Symbol", "_length", L(sym_length), JVMS_FIELD, 1 },
	{ "Symbol", "_body", L(sym_body), JVMS_FIELD, 1 },
	{ "Symbol", "_hash_and_refcount", L(sym_hash), JVMS_FIELD, 0 },
	{ "JavaThread", "_anchor", L(jt_anchor), JVMS_FIELD, 0 },
	{ "JavaThread", "_thread_state", L(jt_state), JVMS_FIELD, 0 },
	{ "Thread", "_osthread", L(jt_osthread), JVMS_FIELD, 0 },
	{ "JavaThread", "_osthread", L(jt_osthread), JVMS_FIELD, 0 },
	{ "OSThread", "_thread_id", L(os_thread_id), JVMS_FIELD, 0 },
	{ "ThreadsList", "_length", L(tl_length), JVMS_FIELD, 0 },
	{ "ThreadsList", "_threads", L(tl_threads), JVMS_FIELD, 0 },
	{ "JavaFrameAnchor", "_last_Java_sp", L(anchor_sp), JVMS_FIELD, 0 },
	{ "JavaFrameAnchor", "_last_Java_pc", L(anchor_pc), JVMS_FIELD, 0 },
	{ "JavaFrameAnchor", "_last_Java_fp", L(anchor_fp), JVMS_FIELD, 0 },
	{ "JavaCallWrapper", "_anchor", L(call_wrapper_anchor), JVMS_FIELD, 0 },
	{ "StubQueue", "_stub_buffer", L(sq_stub_buffer), JVMS_FIELD, 0 },
	{ "StubQueue", "_buffer_limit", L(sq_buffer_limit), JVMS_FIELD, 0 },
	{ "ConstMethodFlags::_misc_has_linenumber_table", NULL, L(linenumber_flag), JVMS_INT, 1 },
	{ "ConstMethod::_has_linenumber_table", NULL, L(linenumber_flag), JVMS_INT, 1 },
	{ "frame::entry_frame_call_wrapper_offset", NULL, L(entry_frame_call_wrapper), JVMS_INT,
	  1 },
	{ "frame::interpreter_frame_sender_sp_offset", NULL, X(sender_sp), JVMS_INT, 1 },
	{ "frame::interpreter_frame_last_sp_offset", NULL, X(last_sp), JVMS_INT, 1 },
	{ "_thread_in_Java", NULL, L(thread_in_java), JVMS_INT, 0 },
	{ "_thread_in_native", NULL, L(thread_in_native), JVMS_INT, 0 },
	{ "_thread_in_vm", NULL, L(thread_in_vm), JVMS_INT, 0 },
	{ "CodeBlobKind::Nmethod", NULL, L(kind_nmethod), JVMS_INT, 0 },
};

#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))

/* What the tables said for one wanted row. */
struct found {
	uint8_t ok;
	uint8_t size;  /* a field's width */
	int64_t value; /* offset, size, constant, or (static) address */
	uint64_t tstr; /* a field's type string */
	char tname[NAME_MAX_LEN];
};

/* The "Type::field" names of the rows, for errors: built once, static strings after. */
static char names[N_WANTED][NAME_MAX_LEN];

struct ctx {
	struct elf_file f;
	struct elf_dyn d;
	struct table t[T_N];
	uint64_t init_lo, init_hi; /* the DT_INIT_ARRAY functions' first and last address */
	uint32_t n_init;
	struct found found[N_WANTED];
	uint8_t code[SCAN_CHUNK + STORE_LEN];
	/* The tables' columns, allocated once with the context. */
	uint64_t s_name[MAX_STRUCTS], s_field[MAX_STRUCTS], s_tstr[MAX_STRUCTS],
		s_addr[MAX_STRUCTS];
	int64_t s_val[MAX_STRUCTS];
	uint8_t s_state[MAX_STRUCTS];
	uint64_t ty_name[MAX_TYPES];
	int64_t ty_val[MAX_TYPES];
	uint8_t ty_state[MAX_TYPES];
	uint64_t i_name[MAX_INTS];
	int64_t i_val[MAX_INTS];
	uint8_t i_state[MAX_INTS];
	uint64_t l_name[MAX_LONGS];
	int64_t l_val[MAX_LONGS];
	uint8_t l_state[MAX_LONGS];
};

const char *jvmstructs__entry(unsigned int i, int *ret_kind, unsigned int *ret_at)
{
	if (i >= N_WANTED)
		return NULL;
	if (ret_kind)
		*ret_kind = wanted[i].kind;
	if (ret_at)
		*ret_at = wanted[i].at;
	if (!names[i][0]) {
		if (wanted[i].field)
			snprintf(names[i], sizeof(names[i]), "%s::%s", wanted[i].type,
				 wanted[i].field);
		else
			snprintf(names[i], sizeof(names[i]), "%s", wanted[i].type);
	}
	return names[i];
}

/*
 * n bytes at address vaddr as the loaded library holds them before it runs: the file's bytes,
 * or zeros past a segment's file part (.bss). -EFAULT when no segment holds them all.
 */
static int rd_vaddr(struct elf_file *f, uint64_t vaddr, void *buf, uint64_t n)
{
	for (size_t k = 0; k < f->nph; k++) {
		const Elf64_Phdr *p = &f->ph[k];
		uint64_t at, in_file;

		if (p->p_type != PT_LOAD || vaddr < p->p_vaddr || vaddr - p->p_vaddr > p->p_memsz ||
		    n > p->p_memsz - (vaddr - p->p_vaddr))
			continue;
		at = vaddr - p->p_vaddr;
		in_file = at < p->p_filesz ? p->p_filesz - at : 0;
		if (in_file > n)
			in_file = n;
		memset(buf, 0, n);
		if (in_file) {
			if (p->p_offset > f->size || at > f->size - p->p_offset)
				return -EFAULT;
			return elf_rd(f, buf, in_file, p->p_offset + at);
		}
		return 0;
	}
	return -EFAULT;
}

/* The NUL-terminated string at vaddr into buf (NAME_MAX_LEN): 1, 0 when longer or unreadable,
 * or -E2BIG. */
static int rd_name(struct elf_file *f, uint64_t vaddr, char *buf)
{
	uint64_t off = elf_file_offset(f, vaddr, false), n = NAME_MAX_LEN;
	int err;

	if (!vaddr || off == ELF_NONE)
		return 0;
	if (n > f->size - off)
		n = f->size - off;
	err = elf_rd(f, buf, n, off);
	if (err)
		return err == -EFAULT ? 0 : err;
	return memchr(buf, 0, n) != NULL;
}

/* A relocation's value: the address it puts in its slot, 0 for one of another kind. */
static uint64_t rel_value(struct ctx *c, const Elf64_Rela *r)
{
	Elf64_Sym s;

	switch (ELF64_R_TYPE(r->r_info)) {
	case R_RELATIVE:
		return (uint64_t)r->r_addend;
	case R_64:
		if (elf_dynsym_at(&c->f, &c->d, ELF64_R_SYM(r->r_info), &s) ||
		    s.st_shndx == SHN_UNDEF)
			return 0;
		return s.st_value + (uint64_t)r->r_addend;
	}
	return 0;
}

/* First pass over the relocations: the tables' pointers and the initializers. */
static int pass_pointers(const Elf64_Rela *r, void *arg)
{
	struct ctx *c = arg;

	for (int i = 0; i < T_N; i++)
		if (c->t[i].ptr && r->r_offset == c->t[i].ptr)
			c->t[i].base = rel_value(c, r);
	if (c->d.init_arraysz && r->r_offset >= c->d.init_array &&
	    r->r_offset - c->d.init_array < c->d.init_arraysz) {
		uint64_t fn = rel_value(c, r);

		if (fn && elf_file_offset(&c->f, fn, true) != ELF_NONE) {
			if (!c->n_init || fn < c->init_lo)
				c->init_lo = fn;
			if (!c->n_init || fn > c->init_hi)
				c->init_hi = fn;
			c->n_init++;
		}
	}
	return 0;
}

/* Second pass: the names and addresses in the tables' entries. */
static int pass_tables(const Elf64_Rela *r, void *arg)
{
	struct ctx *c = arg;

	for (int i = 0; i < T_N; i++) {
		struct table *t = &c->t[i];
		uint64_t k, at;

		if (!t->base || r->r_offset < t->base ||
		    r->r_offset - t->base >= t->max * t->stride)
			continue;
		k = (r->r_offset - t->base) / t->stride;
		at = (r->r_offset - t->base) % t->stride;
		if (at == ST_TYPE)
			t->name[k] = rel_value(c, r);
		else if (i == T_STRUCTS && at == ST_FIELD)
			t->field[k] = rel_value(c, r);
		else if (i == T_STRUCTS && at == ST_TYPESTR)
			t->tstr[k] = rel_value(c, r);
		else if (i == T_STRUCTS && at == ST_ADDRESS)
			t->addr[k] = rel_value(c, r);
	}
	return 0;
}

static int32_t s32_at(const uint8_t *p)
{
	return (int32_t)elf_rd32(p);
}

/* A store of the initializer to target: its value when imm, else from a register (unknown). */
static void store(struct ctx *c, uint64_t target, bool imm, int64_t v, unsigned int width)
{
	static const struct {
		int table;
		uint64_t at, width;
	} cols[] = { { T_STRUCTS, ST_OFFSET, 8 },
		     { T_TYPES, TY_SIZE, 8 },
		     { T_INTS, CO_VALUE, 4 },
		     { T_LONGS, CO_VALUE, 8 } };

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		struct table *t = &c->t[cols[i].table];
		uint64_t k;

		if (!t->base || target < t->base || target - t->base >= t->max * t->stride ||
		    (target - t->base) % t->stride != cols[i].at)
			continue;
		/* A narrower store into a 64-bit slot leaves its upper half unknown. */
		if (width < cols[i].width && imm)
			return;
		k = (target - t->base) / t->stride;
		t->stores++;
		if (!imm || (t->vstate[k] == V_KNOWN && t->val[k] != v))
			t->vstate[k] = V_DYNAMIC;
		else if (t->vstate[k] == V_NONE)
			t->vstate[k] = V_KNOWN, t->val[k] = v;
		return;
	}
}

/*
 * The stores of constants (and of registers) to RIP-relative addresses in the initializers'
 * code. The compiler emits each offset as one `movq $imm32, disp32(%rip)` (REX.W C7 05); a
 * 32-bit constant as `movl` (C7 05); a value it computes at load time as a register store
 * (REX? 89 /r with mod 00, r/m 101), which only marks the slot as unknown. Matching bytes
 * rather than decoding instructions can only add a store at an address no instruction writes:
 * one landing exactly on a table slot is not met in practice, and a second value for a slot
 * makes it unknown rather than wrong.
 */
static int scan_code(struct ctx *c)
{
	uint64_t lo = c->init_lo, hi, seg_end;
	const Elf64_Phdr *p = NULL;
	int err;

	for (size_t k = 0; k < c->f.nph && !p; k++) {
		const Elf64_Phdr *q = &c->f.ph[k];

		if (q->p_type == PT_LOAD && (q->p_flags & PF_X) && lo >= q->p_vaddr &&
		    lo - q->p_vaddr < q->p_filesz)
			p = q;
	}
	if (!p)
		return -ENOEXEC;
	seg_end = p->p_vaddr + p->p_filesz;
	hi = c->init_hi < seg_end - SCAN_TAIL && seg_end > SCAN_TAIL ? c->init_hi + SCAN_TAIL
								     : seg_end;
	if (hi - lo > SCAN_MAX)
		hi = lo + SCAN_MAX;
	for (uint64_t at = lo; at < hi; at += SCAN_CHUNK) {
		uint64_t n = hi - at < SCAN_CHUNK ? hi - at : SCAN_CHUNK, tail, off;

		/* The chunk and the bytes a store that starts in it may run into. */
		tail = seg_end - at - n < STORE_LEN - 1 ? seg_end - at - n : STORE_LEN - 1;
		off = elf_file_offset(&c->f, at, true);
		if (off == ELF_NONE)
			return -ENOEXEC;
		memset(c->code, 0, sizeof(c->code));
		err = elf_rd(&c->f, c->code, n + tail, off);
		if (err)
			return err;
		for (uint64_t i = 0; i < n; i++) {
			const uint8_t *b = c->code + i;
			uint64_t v = at + i;

			if (b[0] == 0x48 && b[1] == 0xc7 && b[2] == 0x05)
				store(c, v + 11 + (uint64_t)(int64_t)s32_at(b + 3), true,
				      s32_at(b + 7), 8);
			else if (b[0] == 0xc7 && b[1] == 0x05)
				store(c, v + 10 + (uint64_t)(int64_t)s32_at(b + 2), true,
				      s32_at(b + 6), 4);
			if ((b[0] & 0xf0) == 0x40 && b[1] == 0x89 && (b[2] & 0xc7) == 0x05)
				store(c, v + 7 + (uint64_t)(int64_t)s32_at(b + 3), false, 0, 8);
			else if (b[0] == 0x89 && (b[1] & 0xc7) == 0x05)
				store(c, v + 6 + (uint64_t)(int64_t)s32_at(b + 2), false, 0, 4);
		}
	}
	return 0;
}

/* Reads table t's entries from the file: where it ends, and the data its entries hold. */
static int walk_table(struct ctx *c, int which)
{
	struct table *t = &c->t[which];
	uint8_t e[STRUCT_STRIDE];
	int err;

	for (uint64_t k = 0; k < t->max; k++) {
		err = rd_vaddr(&c->f, t->base + k * t->stride, e, t->stride);
		if (err)
			return err;
		/* A pointer the file holds itself (no relocation): a library linked at its
		 * address. */
		if (!t->name[k])
			t->name[k] = elf_rd64(e);
		if (!t->name[k]) {
			t->n = (uint32_t)k;
			return 0;
		}
		switch (which) {
		case T_STRUCTS:
			if (!t->field[k])
				t->field[k] = elf_rd64(e + ST_FIELD);
			if (!t->tstr[k])
				t->tstr[k] = elf_rd64(e + ST_TYPESTR);
			if (elf_rd32(e + ST_STATIC)) {
				if (!t->addr[k])
					t->addr[k] = elf_rd64(e + ST_ADDRESS);
				/* A static field's offset is not used: its address is. */
				t->vstate[k] = V_NONE;
				t->val[k] = -1;
			} else if (!t->stores) {
				/* No store to any offset: the data holds them. */
				t->vstate[k] = V_KNOWN;
				t->val[k] = (int64_t)elf_rd64(e + ST_OFFSET);
			}
			break;
		case T_TYPES:
			if (t->vstate[k] == V_NONE)
				t->vstate[k] = V_KNOWN, t->val[k] = (int64_t)elf_rd64(e + TY_SIZE);
			break;
		case T_INTS:
			if (t->vstate[k] == V_NONE)
				t->vstate[k] = V_KNOWN, t->val[k] = s32_at(e + CO_VALUE);
			break;
		case T_LONGS:
			if (t->vstate[k] == V_NONE)
				t->vstate[k] = V_KNOWN, t->val[k] = (int64_t)elf_rd64(e + CO_VALUE);
			break;
		}
	}
	return -ENOEXEC; /* no terminator within MAX entries */
}

/* Whether name is one of the wanted rows' types (or constants) of a kind. */
static bool type_wanted(const char *name, bool structs)
{
	for (size_t i = 0; i < N_WANTED; i++)
		if ((structs ? wanted[i].field != NULL : wanted[i].kind == JVMS_SIZE) &&
		    !strcmp(wanted[i].type, name))
			return true;
	return false;
}

static int match_structs(struct ctx *c)
{
	struct table *t = &c->t[T_STRUCTS];
	char type[NAME_MAX_LEN], field[NAME_MAX_LEN];
	int r;

	for (uint32_t k = 0; k < t->n; k++) {
		if ((r = rd_name(&c->f, t->name[k], type)) < 0)
			return r;
		if (!r || !type_wanted(type, true))
			continue;
		if ((r = rd_name(&c->f, t->field[k], field)) < 0)
			return r;
		if (!r)
			continue;
		for (size_t i = 0; i < N_WANTED; i++) {
			const struct want *w = &wanted[i];
			struct found *fd = &c->found[i];

			if (!w->field || fd->ok || strcmp(w->type, type) || strcmp(w->field, field))
				continue;
			if (w->kind == JVMS_FIELD) {
				if (t->addr[k] || t->vstate[k] != V_KNOWN || t->val[k] < 0 ||
				    t->val[k] >= 0x8000)
					continue; /* unknown at file time, or not a field */
				fd->value = t->val[k];
				fd->tstr = t->tstr[k];
			} else {
				if (!t->addr[k])
					continue;
				fd->value = (int64_t)t->addr[k];
			}
			fd->ok = 1;
		}
	}
	return 0;
}

/*
 * A field's width from its type string: 8 for a pointer, else the size gHotSpotVMTypes gives
 * the type (a qualifier dropped); Symbol::_body's array has no type string: bytes.
 */
static int field_sizes(struct ctx *c)
{
	struct table *t = &c->t[T_TYPES];
	char name[NAME_MAX_LEN];
	int r;

	for (size_t i = 0; i < N_WANTED; i++) {
		struct found *fd = &c->found[i];
		char *s = fd->tname;

		if (!fd->ok || wanted[i].kind != JVMS_FIELD)
			continue;
		if (!fd->tstr) {
			fd->size = 1;
			continue;
		}
		if ((r = rd_name(&c->f, fd->tstr, s)) < 0)
			return r;
		if (!r) {
			fd->ok = 0;
			continue;
		}
		if (strchr(s, '*')) {
			fd->size = 8;
			continue;
		}
		if (!strncmp(s, "volatile ", 9))
			memmove(s, s + 9, strlen(s + 9) + 1);
		if (!strncmp(s, "const ", 6))
			memmove(s, s + 6, strlen(s + 6) + 1);
		for (char *q; (q = strstr(s, " volatile")) || (q = strstr(s, " const"));)
			*q = 0;
	}
	for (uint32_t k = 0; k < t->n; k++) {
		if ((r = rd_name(&c->f, t->name[k], name)) < 0)
			return r;
		if (!r)
			continue;
		for (size_t i = 0; i < N_WANTED; i++) {
			struct found *fd = &c->found[i];

			if (wanted[i].kind == JVMS_SIZE && !fd->ok &&
			    !strcmp(wanted[i].type, name) && t->vstate[k] == V_KNOWN &&
			    t->val[k] > 0 && t->val[k] < 0x10000) {
				fd->ok = 1;
				fd->value = t->val[k];
			}
			/* An embedded class (CodeHeap's VirtualSpace) has its own size. */
			if (wanted[i].kind == JVMS_FIELD && fd->ok && !fd->size &&
			    !strcmp(fd->tname, name) && t->vstate[k] == V_KNOWN && t->val[k] > 0)
				fd->size = t->val[k] > 255 ? 255 : (uint8_t)t->val[k];
		}
	}
	/* A field whose type the table does not size cannot be read. */
	for (size_t i = 0; i < N_WANTED; i++)
		if (wanted[i].kind == JVMS_FIELD && c->found[i].ok && !c->found[i].size)
			c->found[i].ok = 0;
	return 0;
}

static int match_ints(struct ctx *c)
{
	struct table *t = &c->t[T_INTS];
	char name[NAME_MAX_LEN];
	int r;

	for (uint32_t k = 0; k < t->n; k++) {
		if ((r = rd_name(&c->f, t->name[k], name)) < 0)
			return r;
		if (!r)
			continue;
		for (size_t i = 0; i < N_WANTED; i++)
			if (wanted[i].kind == JVMS_INT && !c->found[i].ok &&
			    t->vstate[k] == V_KNOWN && !strcmp(wanted[i].type, name)) {
				c->found[i].ok = 1;
				c->found[i].value = t->val[k];
			}
	}
	return 0;
}

/* Version numbers: the static ints Abstract_VM_Version's entries point at, as initialized. */
static int read_versions(struct ctx *c)
{
	for (size_t i = 0; i < N_WANTED; i++) {
		struct found *fd = &c->found[i];
		uint8_t b[4];
		int err;

		if (wanted[i].kind != JVMS_VERSION || !fd->ok)
			continue;
		err = rd_vaddr(&c->f, (uint64_t)fd->value, b, 4);
		if (err == -E2BIG)
			return err;
		fd->ok = !err && s32_at(b) >= 0 && s32_at(b) < 0x10000;
		fd->value = fd->ok ? s32_at(b) : 0;
	}
	return 0;
}

/* Fields that must lie inside the class they belong to, with the size slot of that class. */
static const struct {
	uint16_t field, size;
} inside[] = {
	{ L(blob_name), L(size_code_blob) },
	{ L(blob_size), L(size_code_blob) },
	{ L(blob_frame_complete), L(size_code_blob) },
	{ L(blob_frame_size), L(size_code_blob) },
	{ L(blob_code_begin), L(size_code_blob) },
	{ L(blob_code_end), L(size_code_blob) },
	{ L(blob_mutable_data), L(size_code_blob) },
	{ L(blob_relocation_size), L(size_code_blob) },
	{ L(blob_mutable_size), L(size_code_blob) },
	{ L(nm_method), L(size_nmethod) },
	{ L(nm_compile_id), L(size_nmethod) },
	{ L(nm_orig_pc_offset), L(size_nmethod) },
	{ L(nm_deopt_handler), L(size_nmethod) },
	{ L(nm_scopes_pcs), L(size_nmethod) },
	{ L(nm_scopes_data), L(size_nmethod) },
	{ L(nm_metadata), L(size_nmethod) },
	{ L(nm_dependencies), L(size_nmethod) },
	{ L(nm_immutable_data), L(size_nmethod) },
	{ L(nm_immutable_size), L(size_nmethod) },
	{ L(pc_pc_offset), L(size_pc_desc) },
	{ L(pc_scope_decode), L(size_pc_desc) },
	{ L(m_const_method), L(size_method) },
	{ L(cm_constants), L(size_const_method) },
	{ L(cm_flags), L(size_const_method) },
	{ L(cm_code_size), L(size_const_method) },
	{ L(cm_name_index), L(size_const_method) },
	{ L(cm_signature_index), L(size_const_method) },
	{ L(cp_pool_holder), L(size_constant_pool) },
	{ L(cp_source_file), L(size_constant_pool) },
	{ L(sym_length), L(size_symbol) },
};

/* The rows found put in their slots, the first row of a slot first; the checks of a whole
 * layout. 0 or -ENOEXEC / -EPROTONOSUPPORT with *why. */
static int assign(struct ctx *c, uint64_t load_base, struct jvm_layout *l, const char **why)
{
	uint8_t done[sizeof(struct jvm_layout) + sizeof(struct scratch)] = { 0 };
	struct scratch x = { 0 };
	uint8_t *base = (uint8_t *)l;

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < N_WANTED; i++) {
		const struct want *w = &wanted[i];
		const struct found *fd = &c->found[i];
		uint8_t *p = w->at >= sizeof(*l) ? (uint8_t *)&x + (w->at - sizeof(*l))
						 : base + w->at;

		if (done[w->at])
			continue;
		if (!fd->ok) {
			/* Missing: fatal when no later row of the slot is found. */
			bool later = false;

			for (size_t j = i + 1; j < N_WANTED; j++)
				later |= wanted[j].at == w->at && c->found[j].ok;
			if (w->must && !later) {
				*why = jvmstructs__entry((unsigned int)i, NULL, NULL);
				return -ENOEXEC;
			}
			continue;
		}
		done[w->at] = 1;
		switch (w->kind) {
		case JVMS_FIELD: {
			struct jvm_field jf = { .off = (__u16)fd->value, .size = fd->size };

			memcpy(p, &jf, sizeof(jf));
			break;
		}
		case JVMS_STATIC: {
			uint64_t rel = (uint64_t)fd->value - load_base;

			if ((uint64_t)fd->value < load_base) {
				*why = jvmstructs__entry((unsigned int)i, NULL, NULL);
				return -ENOEXEC;
			}
			memcpy(p, &rel, sizeof(rel));
			break;
		}
		case JVMS_VERSION:
		case JVMS_SIZE: {
			__u16 v = (__u16)fd->value;

			memcpy(p, &v, sizeof(v));
			break;
		}
		case JVMS_INT: {
			__s32 v = (__s32)fd->value;

			memcpy(p, &v, sizeof(v));
			break;
		}
		}
	}
	for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
		struct jvm_field jf;
		__u16 size;

		memcpy(&jf, base + inside[i].field, sizeof(jf));
		memcpy(&size, base + inside[i].size, sizeof(size));
		if (jf.size && jf.off + jf.size > size) {
			*why = "a field past the end of its class";
			return -ENOEXEC;
		}
	}
	if (l->major < 9) {
		*why = "a JDK before 9";
		return -EPROTONOSUPPORT;
	}
	/* The slots below these two are not in the tables: the layout they start must be the one
	 * the rest is taken from. */
	if (x.sender_sp != -1 || x.last_sp != -2) {
		*why = "frame::interpreter_frame_sender_sp_offset";
		return -EPROTONOSUPPORT;
	}
	l->interp = (struct jvm_interp_frame){ .sender_sp = -1,
					       .last_sp = -2,
					       .method = -3,
					       .mirror = -4,
					       .mdp = -5,
					       .cache = -6,
					       .locals = -7,
					       .bcp = -8,
					       .initial_sp = -9,
					       .link = 0,
					       .ret = 1 };
	if (l->blob_code_begin.size == 4)
		l->flags |= JVM_F_BLOB_OFFSETS;
	if (l->nm_immutable_data.size) {
		l->flags |= JVM_F_IMMUTABLE_DATA;
		if (!l->nm_immutable_size.size) {
			*why = "nmethod::_immutable_data_size";
			return -ENOEXEC;
		}
	} else if (!l->nm_dependencies.size) {
		*why = "nmethod::_dependencies_offset";
		return -ENOEXEC;
	}
	if (l->blob_mutable_data.size) {
		l->flags |= JVM_F_MUTABLE_METADATA;
		if (!l->blob_relocation_size.size) {
			*why = "CodeBlob::_relocation_size";
			return -ENOEXEC;
		}
	} else if (!l->nm_metadata.size) {
		*why = "nmethod::_metadata_offset";
		return -ENOEXEC;
	}
	if (l->blob_kind.size && l->kind_nmethod)
		l->flags |= JVM_F_BLOB_KIND;
	if (l->cm_flags.size == 4)
		l->flags |= JVM_F_CM_FLAGS32;
	l->n_structs = (__u16)c->t[T_STRUCTS].n;
	l->n_types = (__u16)c->t[T_TYPES].n;
	l->n_ints = (__u16)c->t[T_INTS].n;
	l->n_longs = (__u16)c->t[T_LONGS].n;
	return 0;
}

static int pointer_sym(struct elf_file *f, const Elf64_Sym *s, void *arg)
{
	(void)f;
	if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || s->st_size != 8 || !s->st_value)
		return 0;
	*(uint64_t *)arg = s->st_value;
	return 1;
}

int jvmstructs__file(int fd, struct jvm_layout *ret, const char **ret_why)
{
	static const char *const syms[T_N] = { "gHotSpotVMStructs", "gHotSpotVMTypes",
					       "gHotSpotVMIntConstants",
					       "gHotSpotVMLongConstants" };
	const char *why = "ELF headers";
	struct jvm_layout l;
	uint64_t load_base = ELF_NONE;
	struct ctx *c;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c) {
		why = "memory";
		err = -ENOMEM;
		goto out;
	}
	err = elf_file__open(&c->f, fd, JVMSTRUCTS_MAX_READ);
	if (err)
		goto out;
	if (c->f.eh.e_machine != EM_X86_64) {
		why = "not x86-64";
		err = -EPROTONOSUPPORT;
		goto out;
	}
	why = "PT_DYNAMIC";
	if (elf_load_dynamic(&c->f, &c->d)) {
		err = -ENOEXEC;
		goto out;
	}
	for (size_t k = 0; k < c->f.nph; k++)
		if (c->f.ph[k].p_type == PT_LOAD && c->f.ph[k].p_offset == 0 &&
		    load_base == ELF_NONE)
			load_base = c->f.ph[k].p_vaddr & ~(uint64_t)4095;
	if (load_base == ELF_NONE) {
		why = "no segment maps the file's start";
		err = -ENOEXEC;
		goto out;
	}
	c->t[T_STRUCTS] = (struct table){ .stride = STRUCT_STRIDE,
					  .max = MAX_STRUCTS,
					  .name = c->s_name,
					  .field = c->s_field,
					  .tstr = c->s_tstr,
					  .addr = c->s_addr,
					  .val = c->s_val,
					  .vstate = c->s_state };
	c->t[T_TYPES] = (struct table){ .stride = TYPE_STRIDE,
					.max = MAX_TYPES,
					.name = c->ty_name,
					.val = c->ty_val,
					.vstate = c->ty_state };
	c->t[T_INTS] = (struct table){ .stride = CONST_STRIDE,
				       .max = MAX_INTS,
				       .name = c->i_name,
				       .val = c->i_val,
				       .vstate = c->i_state };
	c->t[T_LONGS] = (struct table){ .stride = CONST_STRIDE,
					.max = MAX_LONGS,
					.name = c->l_name,
					.val = c->l_val,
					.vstate = c->l_state };
	for (int i = 0; i < T_N; i++) {
		c->t[i].sym = syms[i];
		err = elf_dynsym_find(&c->f, &c->d, syms[i], pointer_sym, &c->t[i].ptr);
		if (err < 0)
			goto out;
		if (!err) {
			why = syms[i];
			err = i == T_STRUCTS ? -ENOENT : -ENOEXEC;
			goto out;
		}
	}
	why = "relocations";
	if ((err = elf_rela_each(&c->f, &c->d, pass_pointers, c)))
		goto out;
	for (int i = 0; i < T_N; i++) {
		uint8_t b[8];

		/* Without a relocation, the pointer the file holds (a library linked at its
		 * address); the array is never at 0. */
		if (!c->t[i].base && !rd_vaddr(&c->f, c->t[i].ptr, b, 8))
			c->t[i].base = elf_rd64(b);
		if (!c->t[i].base) {
			why = syms[i];
			err = -ENOEXEC;
			goto out;
		}
	}
	if ((err = elf_rela_each(&c->f, &c->d, pass_tables, c)))
		goto out;
	why = "static initializers";
	if (!c->n_init) {
		err = -ENOEXEC;
		goto out;
	}
	if ((err = scan_code(c)))
		goto out;
	for (int i = 0; i < T_N; i++) {
		why = syms[i];
		if ((err = walk_table(c, i)))
			goto out;
		if (!c->t[i].n && i != T_LONGS) {
			err = -ENOEXEC;
			goto out;
		}
	}
	why = "table names";
	if ((err = match_structs(c)) || (err = field_sizes(c)) || (err = match_ints(c)) ||
	    (err = read_versions(c)))
		goto out;
	err = assign(c, load_base, &l, &why);
	if (!err)
		*ret = l;
out:
	/* Bytes the file's own tables say it has and it has not: a file not whole. */
	if (err == -EFAULT)
		err = -ENOEXEC;
	if (err && err != -E2BIG && ret_why)
		*ret_why = why;
	else if (err && ret_why)
		*ret_why = "more bytes than the budget";
	free(c);
	return err;
}
