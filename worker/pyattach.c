// SPDX-License-Identifier: Apache-2.0
/*
 * The check of a CPython interpreter a shipper hands over (MSG_SHIP_PY_ATTACH): what the
 * frame reader is told comes from the file itself and from worker/pyoffsets.c, never from the
 * shipper, which only says which mapping to look at. See worker/pyattach.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "worker/elffile.h"
#include "worker/pyattach.h"

/*
 * Bytes read from the file at most: headers, the hash chains of four lookups and 3.13's debug
 * offsets (a few KiB for every interpreter here).
 */
#define PYATTACH_MAX_READ (1u << 20)
#define PAGE 4096u

struct sym_found {
	uint64_t value, size;
};

static int object_sym(struct elf_file *f, const Elf64_Sym *s, void *arg)
{
	struct sym_found *ret = arg;

	(void)f;
	if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || !s->st_value)
		return 0;
	ret->value = s->st_value;
	ret->size = s->st_size;
	return 1;
}

static int any_sym(struct elf_file *f, const Elf64_Sym *s, void *arg)
{
	(void)f;
	(void)arg;
	return s->st_value != 0;
}

/*
 * The minor version (0x030b): 3.11 and later say it in Py_Version (PY_VERSION_HEX, an unsigned long in the
 * file's read-only data); before, the first function each release added tells it.
 */
static int version_of(struct elf_file *f, const struct elf_dyn *d, unsigned int *ret)
{
	static const struct {
		const char *sym;
		unsigned int version;
	} added[] = {
		{ "PyAIter_Check", 0x030a },
		{ "PyType_FromModuleAndSpec", 0x0309 },
		{ "PyCode_NewWithPosOnlyArgs", 0x0308 },
	};
	struct sym_found v = { 0 };
	uint64_t off;
	uint8_t b[4];
	int r;

	r = elf_dynsym_find(f, d, "Py_Version", object_sym, &v);
	if (r < 0)
		return r;
	if (r) {
		off = elf_file_offset(f, v.value, false);
		if ((v.size != 4 && v.size != 8) || off == ELF_NONE || elf_rd(f, b, 4, off))
			return -ENOEXEC;
		*ret = elf_rd32(b) >> 16;
		return 0;
	}
	for (size_t i = 0; i < sizeof(added) / sizeof(added[0]); i++) {
		r = elf_dynsym_find(f, d, added[i].sym, any_sym, NULL);
		if (r < 0)
			return r;
		if (r) {
			*ret = added[i].version;
			return 0;
		}
	}
	return -EPROTONOSUPPORT; /* 3.7 or older */
}

/* _Py_DebugOffsets (3.13), the start of _PyRuntime: the fields the frame reader takes. */
struct debug_offsets {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	uint64_t rt[3];	 /* size, finalizing, interpreters_head */
	uint64_t is[13]; /* size, id, next, threads_head, ... */
	uint64_t ts[9];	 /* size, prev, next, interp, current_frame, thread_id, ... */
	uint64_t fr[6];	 /* size, previous, executable, instr_ptr, localsplus, owner */
	uint64_t co[7];	 /* size, filename, name, qualname, linetable, firstlineno, argcount */
};

static int fits(uint64_t v, uint16_t *ret)
{
	if (v >= 0x8000)
		return 0;
	*ret = (uint16_t)v;
	return 1;
}

/*
 * 3.13's own offsets, as the file's initial _PyRuntime holds them, over the table's: a release
 * that moved a field is read right. A file whose cookie or version is not 3.13's keeps the
 * table's. 1 when the file's were taken, -1 for a free-threaded build.
 */
static int debug_offsets(struct elf_file *f, uint64_t runtime, struct py_offsets *o)
{
	struct debug_offsets d;
	struct py_offsets n = *o;
	uint64_t off = elf_file_offset(f, runtime, false);

	if (off == ELF_NONE || elf_rd(f, &d, sizeof(d), off) || memcmp(d.cookie, "xdebugpy", 8) ||
	    (d.version >> 16) != o->version)
		return 0;
	if (d.free_threaded)
		return -1; /* objects of another layout: not read */
	if (!fits(d.rt[2], &n.rt_interp_head) || !fits(d.is[3], &n.is_threads_head) ||
	    !fits(d.ts[2], &n.ts_next) || !fits(d.ts[5], &n.ts_thread_id) ||
	    !fits(d.ts[4], &n.ts_frame) || !fits(d.fr[1], &n.fr_previous) ||
	    !fits(d.fr[2], &n.fr_code) || !fits(d.fr[3], &n.fr_instr) ||
	    !fits(d.fr[5], &n.fr_owner) || !fits(d.co[1], &n.co_filename) ||
	    !fits(d.co[2], &n.co_name) || !fits(d.co[3], &n.co_qualname) ||
	    !fits(d.co[4], &n.co_linetable) || !fits(d.co[5], &n.co_firstlineno))
		return 0;
	*o = n;
	return 1;
}

/* Whether the fields the programs read of a frame and of a code object lie in their windows. */
static int code_window_ok(const struct py_offsets *o)
{
	if (o->fr_previous + 8 > PY_FRAME_READ || o->fr_code + 8 > PY_FRAME_READ ||
	    o->fr_instr + 8 > PY_FRAME_READ ||
	    (o->fr_owner != PY_NONE && o->fr_owner >= PY_FRAME_READ) ||
	    (o->fr_is_entry != PY_NONE && o->fr_is_entry >= PY_FRAME_READ))
		return 0;
	const uint16_t f[] = { o->co_name, o->co_qualname, o->co_filename, o->co_linetable };

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] < o->co_read || f[i] + 8 > o->co_read + PY_CODE_READ)
			return 0;
	if (o->co_firstlineno < o->co_read || o->co_firstlineno + 4 > o->co_read + PY_CODE_READ)
		return 0;
	if (o->co_version != PY_NONE &&
	    (o->co_version < o->co_read || o->co_version + 4 > o->co_read + PY_CODE_READ))
		return 0;
	return 1;
}

/* The bytes of a frame its fields lie in: what the programs read of each. */
static uint16_t frame_read(const struct py_offsets *o)
{
	const struct {
		uint16_t off, size;
	} f[] = { { o->fr_previous, 8 },
		  { o->fr_code, 8 },
		  { o->fr_instr, 8 },
		  { o->fr_owner, 1 },
		  { o->fr_is_entry, 1 } };
	uint16_t end = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].off != PY_NONE && f[i].off + f[i].size > end)
			end = f[i].off + f[i].size;
	return end;
}

int pyattach__file(int fd, uint64_t start, struct py_proc *ret)
{
	const struct py_offsets *table;
	struct sym_found rt = { 0 };
	const Elf64_Phdr *first = NULL, *data = NULL;
	struct elf_file f;
	struct elf_dyn d;
	unsigned int version = 0;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (start % PAGE)
		return -EINVAL;
	err = elf_file__open(&f, fd, PYATTACH_MAX_READ);
	if (err)
		return err;
	if (elf_load_dynamic(&f, &d))
		return -ENOEXEC;
	err = elf_dynsym_find(&f, &d, "_PyRuntime", object_sym, &rt);
	if (err <= 0)
		return err ? err : -ENOENT;
	err = version_of(&f, &d, &version);
	if (err)
		return err;
	table = pyoffsets__find(version);
	if (!table)
		return -EPROTONOSUPPORT;
	/* The mapping that starts the file is its first loaded segment's; _PyRuntime is data. */
	for (size_t k = 0; k < f.nph; k++) {
		const Elf64_Phdr *p = &f.ph[k];

		if (p->p_type != PT_LOAD)
			continue;
		if (!first && p->p_offset == 0)
			first = p;
		if ((p->p_flags & PF_W) && rt.value >= p->p_vaddr &&
		    rt.value - p->p_vaddr < p->p_memsz && p->p_memsz - (rt.value - p->p_vaddr) >= 8)
			data = p;
	}
	if (!first || !data || rt.value < (first->p_vaddr & ~(uint64_t)(PAGE - 1)))
		return -ENOEXEC;
	ret->o = *table;
	if (version == 0x030d) {
		int r = debug_offsets(&f, rt.value, &ret->o);

		if (r < 0)
			return -EPROTONOSUPPORT; /* the free-threaded build */
		if (!r)
			log_debug("python 3.13 without its debug offsets: the table's are used");
	}
	if (!code_window_ok(&ret->o) || rt.size < (uint64_t)ret->o.rt_interp_head + 8)
		return -ENOEXEC;
	ret->o.fr_read = frame_read(&ret->o);
	ret->start = start;
	ret->size = f.size;
	ret->rel = rt.value - (first->p_vaddr & ~(uint64_t)(PAGE - 1));
	return 0;
}
