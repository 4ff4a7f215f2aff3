// SPDX-License-Identifier: Apache-2.0
/*
 * Whole user stacks from snapshots (README "Whole stacks").
 *
 * Why snapshots unwound here rather than unwinding in BPF: CFI is a per-address table of rules
 * (where the caller's frame starts, where the return address and rbp were saved) with
 * expressions in it; evaluating it in the kernel needs the tables turned into BPF maps for
 * every file of every target and a bounded interpreter the verifier accepts. Here libdw reads
 * the files' own .eh_frame, lazily, once per file, and unwinding costs the shipper a few
 * microseconds per stack. The price is the copy of the stack top in the kernel (measured by
 * `make bench`) and stacks deeper than the copy end early.
 *
 * Only rip, rsp and rbp are known (the snapshot holds those): a rule that needs another
 * register ends the CFI walk, and the frame-pointer step takes over when rbp looks like a
 * frame pointer, as it does for code built with them and for code without CFI (JIT, Go).
 *
 * Mapped files are untrusted: read with ELF_C_READ (pread, no mmap a truncation could turn
 * into SIGBUS, see shipper/elfsym.c), header counts and .eh_frame size checked first.
 */
#define _GNU_SOURCE
#include "shipper/unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNWIND_MAX_LOADS 16
#define UNWIND_MAX_PHDRS 4096
#define UNWIND_MAX_SHDRS 32768
/* Stack machine depth of a CFI expression: PLT rules use four. */
#define EXPR_STACK 16
/* x86_64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16

struct load {
	uint64_t off, vaddr, filesz;
};

struct cfi_file {
	uint64_t dev, ino;
	uint64_t used; /* LRU clock */
	Elf *elf;
	Dwarf_CFI *cfi; /* NULL: the file has no usable CFI, remembered */
	struct load loads[UNWIND_MAX_LOADS];
	int nloads;
};

struct unwinder {
	struct symbolizer *sym;
	struct cfi_file files[UNWIND_MAX_FILES];
	int nfiles;
	uint64_t clock;
	struct unwind_stats stats;
};

struct unwinder *unwinder__new(struct symbolizer *sym)
{
	struct unwinder *u;

	if (!sym) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->sym = sym;
	elf_version(EV_CURRENT);
	return u;
}

static void cfi_file__release(struct cfi_file *f)
{
	if (f->cfi)
		dwarf_cfi_end(f->cfi);
	if (f->elf)
		elf_end(f->elf);
	f->cfi = NULL;
	f->elf = NULL;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (int i = 0; i < u->nfiles; i++)
		cfi_file__release(&u->files[i]);
	free(u);
}

/* The ELF header checks libelf does not do before allocating per header. 0 or -errno. */
static int ehdr_check(int fd)
{
	Elf64_Ehdr eh;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	n = pread(fd, &eh, sizeof(eh), 0);
	if (n != (ssize_t)sizeof(eh))
		return -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    eh.e_phnum > UNWIND_MAX_PHDRS || eh.e_shnum > UNWIND_MAX_SHDRS ||
	    eh.e_shnum == 0 /* extended numbering */ || eh.e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	return 0;
}

/* .eh_frame (and its header) within limits: libdw reads them whole. */
static bool eh_frame_size_ok(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return false;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr")) &&
		    sh.sh_size > UNWIND_MAX_EH_FRAME)
			return false;
	}
	return true;
}

/* Reads the CFI and load segments of the file in fd into f (fd stays the caller's). */
static void cfi_file__read(struct cfi_file *f, int fd)
{
	size_t nph;

	if (ehdr_check(fd))
		return;
	f->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!f->elf)
		return;
	if (elf_getphdrnum(f->elf, &nph))
		goto fail;
	for (size_t i = 0; i < nph && f->nloads < UNWIND_MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		f->loads[f->nloads++] =
			(struct load){ .off = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz };
	}
	if (!f->nloads || !eh_frame_size_ok(f->elf))
		goto fail;
	/* Reads .eh_frame and .eh_frame_hdr into memory now, so the descriptor can go. */
	f->cfi = dwarf_getcfi_elf(f->elf);
	if (!f->cfi)
		goto fail;
	elf_cntl(f->elf, ELF_C_FDDONE);
	return;
fail:
	cfi_file__release(f);
}

/* The cached CFI of mapping m of pid, read on a miss. NULL: none. */
static struct cfi_file *unwinder__file(struct unwinder *u, int pid, const struct sym_mapping *m)
{
	struct cfi_file *f = NULL;
	int fd;

	for (int i = 0; i < u->nfiles; i++) {
		if (u->files[i].dev == m->dev && u->files[i].ino == m->ino) {
			f = &u->files[i];
			f->used = ++u->clock;
			return f->cfi ? f : NULL;
		}
	}
	if (u->nfiles < UNWIND_MAX_FILES) {
		f = &u->files[u->nfiles++];
	} else {
		f = &u->files[0];
		for (int i = 1; i < u->nfiles; i++)
			if (u->files[i].used < f->used)
				f = &u->files[i];
		cfi_file__release(f);
		u->stats.files_evicted++;
	}
	memset(f, 0, sizeof(*f));
	f->dev = m->dev;
	f->ino = m->ino;
	f->used = ++u->clock;
	fd = symbolizer__open_mapping(u->sym, pid, m);
	if (fd < 0)
		return NULL; /* remembered as without CFI: no retry for every frame */
	cfi_file__read(f, fd);
	close(fd);
	u->stats.files_loaded += f->cfi != NULL;
	return f->cfi ? f : NULL;
}

int unwinder__load_pid(struct unwinder *u, int pid)
{
	struct sym_mapping maps[256];
	size_t n;

	if (!u || pid <= 0)
		return -EINVAL;
	n = symbolizer__mappings(u->sym, pid, maps, sizeof(maps) / sizeof(maps[0]));
	for (size_t i = 0; i < n; i++)
		(void)unwinder__file(u, pid, &maps[i]);
	return 0;
}

/* The machine state of one frame, as far as it is known. */
struct frame {
	uint64_t ip, sp, bp;
	bool bp_known;
};

struct stack_mem {
	const uint8_t *bytes;
	uint64_t start; /* address of bytes[0] */
	size_t len;
};

static bool mem_read(const struct stack_mem *m, uint64_t addr, uint64_t *ret)
{
	if (addr < m->start || addr - m->start > m->len || m->len - (addr - m->start) < 8)
		return false;
	memcpy(ret, m->bytes + (addr - m->start), 8);
	return true;
}

static bool reg_value(const struct frame *fr, unsigned reg, uint64_t *ret)
{
	switch (reg) {
	case REG_RSP:
		*ret = fr->sp;
		return true;
	case REG_RBP:
		*ret = fr->bp;
		return fr->bp_known;
	case REG_RIP:
		*ret = fr->ip;
		return true;
	}
	return false;
}

/*
 * Evaluates a CFI expression of libdw (DWARF operations) with cfa for DW_OP_call_frame_cfa.
 * *ret_is_value: the expression ended with DW_OP_stack_value (else it gives an address).
 */
static bool expr_eval(const Dwarf_Op *ops, size_t nops, const struct frame *fr, uint64_t cfa,
		      const struct stack_mem *m, uint64_t *ret, bool *ret_is_value)
{
	uint64_t st[EXPR_STACK], a, b;
	size_t sp = 0;

	*ret_is_value = false;
#define PUSH(v)                          \
	do {                             \
		if (sp == EXPR_STACK)    \
			return false;    \
		st[sp++] = (v);          \
	} while (0)
#define POP(v)                           \
	do {                             \
		if (!sp)                 \
			return false;    \
		(v) = st[--sp];          \
	} while (0)
	for (size_t i = 0; i < nops; i++) {
		uint8_t op = ops[i].atom;

		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH((uint64_t)(op - DW_OP_lit0));
		} else if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			if (!reg_value(fr, op - DW_OP_breg0, &a))
				return false;
			PUSH(a + ops[i].number);
		} else {
			switch (op) {
			case DW_OP_bregx:
				if (!reg_value(fr, (unsigned)ops[i].number, &a))
					return false;
				PUSH(a + ops[i].number2);
				break;
			case DW_OP_call_frame_cfa:
				PUSH(cfa);
				break;
			case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
			case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s:
			case DW_OP_const8u: case DW_OP_const8s: case DW_OP_constu: case DW_OP_consts:
				PUSH(ops[i].number);
				break;
			case DW_OP_plus_uconst:
				POP(a);
				PUSH(a + ops[i].number);
				break;
			case DW_OP_deref:
				POP(a);
				if (!mem_read(m, a, &b))
					return false;
				PUSH(b);
				break;
			case DW_OP_dup:
				POP(a);
				PUSH(a);
				PUSH(a);
				break;
			case DW_OP_drop:
				POP(a);
				break;
			case DW_OP_neg:
				POP(a);
				PUSH(-a);
				break;
			case DW_OP_plus: case DW_OP_minus: case DW_OP_and: case DW_OP_or:
			case DW_OP_mul: case DW_OP_shl: case DW_OP_shr: case DW_OP_ge: case DW_OP_gt:
			case DW_OP_le: case DW_OP_lt: case DW_OP_eq: case DW_OP_ne:
				POP(b);
				POP(a);
				PUSH(op == DW_OP_plus ? a + b : op == DW_OP_minus ? a - b
				     : op == DW_OP_and ? a & b : op == DW_OP_or ? a | b
				     : op == DW_OP_mul ? a * b : op == DW_OP_shl ? (b < 64 ? a << b : 0)
				     : op == DW_OP_shr ? (b < 64 ? a >> b : 0)
				     : op == DW_OP_ge ? (int64_t)a >= (int64_t)b
				     : op == DW_OP_gt ? (int64_t)a > (int64_t)b
				     : op == DW_OP_le ? (int64_t)a <= (int64_t)b
				     : op == DW_OP_lt ? (int64_t)a < (int64_t)b
				     : op == DW_OP_eq ? a == b : a != b);
				break;
			case DW_OP_stack_value:
				if (i != nops - 1)
					return false;
				*ret_is_value = true;
				break;
			default:
				return false;
			}
		}
	}
#undef PUSH
#undef POP
	if (!sp)
		return false;
	*ret = st[sp - 1];
	return true;
}

enum step { STEP_OK, STEP_END, STEP_FAIL };

/* Where a register of the caller is, by rule: its value into *ret. */
static enum step caller_reg(Dwarf_Frame *df, int reg, const struct frame *fr, uint64_t cfa,
			    const struct stack_mem *m, uint64_t *ret)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	uint64_t v;
	bool is_value;

	if (dwarf_frame_register(df, reg, mem, &ops, &nops))
		return STEP_FAIL;
	if (!nops)
		/* undefined (ops == mem), or same value (ops == NULL) */
		return ops ? STEP_END : (reg_value(fr, (unsigned)reg, ret) ? STEP_OK : STEP_FAIL);
	if (!expr_eval(ops, nops, fr, cfa, m, &v, &is_value))
		return STEP_FAIL;
	if (!is_value && !mem_read(m, v, &v))
		return STEP_FAIL;
	*ret = v;
	return STEP_OK;
}

/* One CFI step from fr to its caller. */
static enum step cfi_step(struct unwinder *u, int pid, struct frame *fr, bool exact,
			  const struct stack_mem *m)
{
	uint64_t lookup = exact ? fr->ip : fr->ip - 1, cfa, ra, bp = 0;
	struct sym_mapping map;
	struct cfi_file *f;
	Dwarf_Frame *df = NULL;
	Dwarf_Op *ops;
	size_t nops;
	uint64_t foff, vaddr = 0;
	enum step st = STEP_FAIL, bst;
	bool is_value, found = false;

	if (symbolizer__mapping(u->sym, pid, lookup, &map) != 1)
		return STEP_FAIL;
	f = unwinder__file(u, pid, &map);
	if (!f)
		return STEP_FAIL;
	foff = lookup - map.start + map.off;
	for (int i = 0; i < f->nloads && !found; i++) {
		if (foff >= f->loads[i].off && foff - f->loads[i].off < f->loads[i].filesz) {
			vaddr = foff - f->loads[i].off + f->loads[i].vaddr;
			found = true;
		}
	}
	if (!found || dwarf_cfi_addrframe(f->cfi, vaddr, &df))
		return STEP_FAIL;
	if (dwarf_frame_cfa(df, &ops, &nops) || !nops ||
	    !expr_eval(ops, nops, fr, 0, m, &cfa, &is_value))
		goto out;
	st = caller_reg(df, dwarf_frame_info(df, NULL, NULL, NULL), fr, cfa, m, &ra);
	if (st != STEP_OK)
		goto out;
	bst = caller_reg(df, REG_RBP, fr, cfa, m, &bp);
	/* The caller's stack pointer is the CFA, above the callee's frame. */
	if (cfa <= fr->sp) {
		st = STEP_FAIL;
		goto out;
	}
	fr->ip = ra;
	fr->sp = cfa;
	fr->bp = bp;
	fr->bp_known = bst == STEP_OK;
out:
	free(df);
	return st;
}

/* One frame-pointer step: [bp] is the caller's bp, [bp + 8] the return address. */
static enum step fp_step(struct frame *fr, const struct stack_mem *m)
{
	uint64_t nbp, ra;

	if (!fr->bp_known || fr->bp < fr->sp || (fr->bp & 7))
		return STEP_FAIL;
	if (!mem_read(m, fr->bp, &nbp) || !mem_read(m, fr->bp + 8, &ra))
		return STEP_FAIL;
	if (!ra)
		return STEP_END;
	fr->ip = ra;
	fr->sp = fr->bp + 16;
	fr->bp = nbp;
	return STEP_OK;
}

size_t unwinder__unwind(struct unwinder *u, int pid, const struct unwind_regs *regs,
			const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max)
{
	struct stack_mem m = { .bytes = stack, .start = regs->sp, .len = stack ? stack_len : 0 };
	struct frame fr = { .ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .bp_known = true };
	size_t n = 0;

	if (!max)
		return 0;
	u->stats.stacks++;
	ips[n++] = fr.ip;
	while (n < max) {
		enum step st = cfi_step(u, pid, &fr, n == 1, &m);

		if (st == STEP_OK) {
			u->stats.cfi_steps++;
		} else if (st == STEP_FAIL) {
			st = fp_step(&fr, &m);
			if (st == STEP_OK)
				u->stats.fp_steps++;
		}
		if (st == STEP_END || (st == STEP_OK && !fr.ip)) {
			u->stats.outermost++;
			break;
		}
		if (st != STEP_OK)
			break;
		ips[n++] = fr.ip;
	}
	u->stats.frames += n;
	return n;
}

void unwinder__stats(const struct unwinder *u, struct unwind_stats *ret_stats)
{
	*ret_stats = u->stats;
}

int snapshots__begin(struct snapshot_iter *it, const void *buf, size_t len)
{
	struct ship_snapshots_hdr hdr;

	if (!buf || len < sizeof(hdr))
		return -EPROTO;
	memcpy(&hdr, buf, sizeof(hdr));
	*it = (struct snapshot_iter){ .buf = buf, .len = len, .off = sizeof(hdr),
				      .count = hdr.count, .task_id = hdr.task_id };
	return 0;
}

int snapshots__next(struct snapshot_iter *it, struct snapshot_view *ret)
{
	size_t rest = it->len - it->off, kb, sb;

	if (it->seen == it->count)
		return rest ? -EPROTO : 0;
	if (rest < sizeof(ret->s))
		return -EPROTO;
	memcpy(&ret->s, it->buf + it->off, sizeof(ret->s));
	if (ret->s.nkips > ROVER_MAX_STACK_DEPTH || ret->s.stack_len > SHIP_SNAPSHOT_MAX_STACK ||
	    ret->s.tgid <= 0)
		return -EPROTO;
	kb = (size_t)ret->s.nkips * 8;
	sb = ((size_t)ret->s.stack_len + 7) & ~(size_t)7;
	if (rest - sizeof(ret->s) < kb + sb)
		return -EPROTO;
	ret->kips = it->buf + it->off + sizeof(ret->s);
	ret->stack = ret->kips + kb;
	it->off += sizeof(ret->s) + kb + sb;
	it->seen++;
	return 1;
}
