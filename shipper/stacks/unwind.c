// SPDX-License-Identifier: Apache-2.0
/*
 * Whole user stacks from snapshots (docs/profiling.md, "Whole stacks").
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
 * into SIGBUS, see shipper/stacks/elfsym.c), header counts and .eh_frame size checked first.
 *
 * Memory: anyone can start a process that a finder matches, and map files whose sparse
 * .eh_frame claims any size. Each file is charged, before anything is read, its image (the
 * .eh_frame and .eh_frame_hdr bytes) and what libdw may build from it: libdw caches every FDE
 * and CIE it parses, found through the .eh_frame_hdr search table one lookup at a time, and
 * without one by a scan from the start of .eh_frame up to the address. A file is read when
 * its charge fits the per-file cap, after the least recently used files were evicted until it
 * fits the total; one over the cap is remembered as without CFI and reported once.
 */
#define _GNU_SOURCE
#include "shipper/stacks/unwind.h"
#include "common/stackcount.h"

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
/* Section names of linked files take a few hundred bytes. */
#define UNWIND_MAX_SHSTRTAB (64u << 10)
/* Stack machine depth of a CFI expression: PLT rules use four. */
#define EXPR_STACK 16
/* x86_64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16
/*
 * libdw's cache of a file's CFI is dropped and started over after this many lookups, so that
 * it holds the FDEs of at most that many addresses.
 */
#define UNWIND_CFI_LOOKUPS 1024
/*
 * What libdw keeps per FDE it parsed, its CIE and their tree nodes included, rounded up; an
 * FDE takes 16 bytes of .eh_frame at least. Charged per lookup with a search table, per 16
 * bytes of .eh_frame without one.
 */
#define UNWIND_LIBDW_FDE_BYTES 256
#define UNWIND_MIN_FDE 16
/* .eh_frame_hdr as ld writes it: version 1, pcrel|sdata4, udata4 count, datarel|sdata4 table. */
#define EH_HDR_VERSION 1
#define EH_HDR_PTR_ENC 0x1b
#define EH_HDR_COUNT_ENC 0x03
#define EH_HDR_TABLE_ENC 0x3b

struct load {
	uint64_t off, vaddr, filesz;
};

struct cfi_file {
	uint64_t dev, ino;
	uint64_t used; /* LRU clock */
	Elf *elf;
	Dwarf_CFI *cfi;	  /* NULL: the file has no usable CFI, remembered */
	uint8_t *image;	  /* the ELF image elf reads */
	size_t charge;	  /* bytes counted against the budgets, 0 without CFI */
	uint32_t lookups; /* since cfi was made */
	struct load loads[UNWIND_MAX_LOADS];
	int nloads;
};

struct unwinder {
	struct symbolizer *sym;
	struct cfi_file files[UNWIND_MAX_FILES];
	int nfiles;
	uint64_t clock;
	size_t budget, file_budget;
	size_t bytes; /* the charges of the cached files */
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
	u->budget = UNWIND_CACHE_BYTES;
	u->file_budget = UNWIND_MAX_FILE_BYTES;
	elf_version(EV_CURRENT);
	return u;
}

int unwinder__set_budget(struct unwinder *u, size_t total_bytes, size_t file_bytes)
{
	if (!u)
		return -EINVAL;
	total_bytes = total_bytes ? total_bytes : UNWIND_CACHE_BYTES;
	file_bytes = file_bytes ? file_bytes : UNWIND_MAX_FILE_BYTES;
	if (file_bytes > total_bytes)
		return -EINVAL;
	u->budget = total_bytes;
	u->file_budget = file_bytes;
	return 0;
}

static void cfi_file__release(struct cfi_file *f)
{
	if (f->cfi)
		dwarf_cfi_end(f->cfi);
	if (f->elf)
		elf_end(f->elf);
	free(f->image);
	f->cfi = NULL;
	f->elf = NULL;
	f->image = NULL;
	f->charge = 0;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (int i = 0; i < u->nfiles; i++)
		cfi_file__release(&u->files[i]);
	free(u);
}

static int pread_exact(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENOEXEC;
		done += (size_t)n;
	}
	return 0;
}

/* The ELF header, checked: 64-bit little-endian executable or shared object. 0 or -errno. */
static int read_ehdr(int fd, Elf64_Ehdr *eh)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || pread_exact(fd, eh, sizeof(*eh), 0))
		return -ENOEXEC;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) || eh->e_phnum > UNWIND_MAX_PHDRS ||
	    eh->e_shnum > UNWIND_MAX_SHDRS || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shstrndx >= eh->e_shnum)
		return -ENOEXEC;
	return 0;
}

/* The executable load segments, for file offset to address. 0 or -errno. */
static int read_loads(int fd, const Elf64_Ehdr *eh, struct cfi_file *f)
{
	size_t bytes = (size_t)eh->e_phnum * sizeof(Elf64_Phdr);
	Elf64_Phdr *ph = malloc(bytes ? bytes : 1);
	int err;

	if (!ph)
		return -ENOMEM;
	err = pread_exact(fd, ph, bytes, eh->e_phoff);
	for (size_t i = 0; !err && i < eh->e_phnum && f->nloads < UNWIND_MAX_LOADS; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
			f->loads[f->nloads++] = (struct load){ .off = ph[i].p_offset,
							       .vaddr = ph[i].p_vaddr,
							       .filesz = ph[i].p_filesz };
	free(ph);
	return err ? err : f->nloads ? 0 : -ENOEXEC;
}

/* The headers of .eh_frame and .eh_frame_hdr (sh_type 0: absent). 0 or -errno. */
static int find_eh_frame(int fd, const Elf64_Ehdr *eh, Elf64_Shdr *ret_frame, Elf64_Shdr *ret_hdr)
{
	size_t bytes = (size_t)eh->e_shnum * sizeof(Elf64_Shdr);
	Elf64_Shdr *sh = malloc(bytes ? bytes : 1), str;
	char *names = NULL;
	int err;

	memset(ret_frame, 0, sizeof(*ret_frame));
	memset(ret_hdr, 0, sizeof(*ret_hdr));
	if (!sh)
		return -ENOMEM;
	err = pread_exact(fd, sh, bytes, eh->e_shoff);
	if (err)
		goto out;
	str = sh[eh->e_shstrndx];
	err = -ENOEXEC;
	if (str.sh_type != SHT_STRTAB || !str.sh_size || str.sh_size > UNWIND_MAX_SHSTRTAB)
		goto out;
	names = malloc(str.sh_size + 1);
	err = names ? pread_exact(fd, names, str.sh_size, str.sh_offset) : -ENOMEM;
	if (err)
		goto out;
	names[str.sh_size] = '\0';
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const char *name = sh[i].sh_name < str.sh_size ? names + sh[i].sh_name : "";

		if (sh[i].sh_type == SHT_NOBITS || !sh[i].sh_size)
			continue;
		if (!strcmp(name, ".eh_frame") && !ret_frame->sh_type)
			*ret_frame = sh[i];
		else if (!strcmp(name, ".eh_frame_hdr") && !ret_hdr->sh_type)
			*ret_hdr = sh[i];
	}
	err = ret_frame->sh_type ? 0 : -ENOEXEC;
out:
	free(sh);
	free(names);
	return err;
}

/*
 * Reads the CFI of the file in fd (not taken) into f. libelf and libdw never see the file:
 * they get an ELF image made here, holding the file's .eh_frame_hdr and .eh_frame at their
 * addresses (their pointers are relative to those) and headers written here. libelf trusts
 * the headers of what it reads, and leaks or over-allocates on malformed ones (fuzz_unwind
 * found such files); libdw then parses only the CFI bytes, which is what it is built for.
 */
struct cfi_plan {
	Elf64_Ehdr eh;
	Elf64_Shdr frame, hdr;
	size_t len;    /* of the image */
	size_t charge; /* image and libdw's share */
};

/* Whether hdr holds a binary search table libdw will use rather than scan .eh_frame. */
static bool eh_hdr_table(int fd, const Elf64_Shdr *hdr)
{
	uint8_t h[12];
	uint32_t count;

	if (!hdr->sh_type || hdr->sh_size < sizeof(h) ||
	    pread_exact(fd, h, sizeof(h), hdr->sh_offset))
		return false;
	if (h[0] != EH_HDR_VERSION || h[1] != EH_HDR_PTR_ENC || h[2] != EH_HDR_COUNT_ENC ||
	    h[3] != EH_HDR_TABLE_ENC)
		return false;
	memcpy(&count, h + 8, sizeof(count));
	return count > 0 && (uint64_t)count * 8 <= hdr->sh_size - sizeof(h);
}

static const char cfi_shstr[] = "\0.eh_frame_hdr\0.eh_frame\0.shstrtab";

/* What reading the CFI of fd would cost, and where it is, before anything large is read. */
static int cfi_file__plan(struct cfi_file *f, int fd, struct cfi_plan *ret)
{
	uint64_t len, libdw;
	int err;

	err = read_ehdr(fd, &ret->eh);
	if (!err)
		err = read_loads(fd, &ret->eh, f);
	if (!err)
		err = find_eh_frame(fd, &ret->eh, &ret->frame, &ret->hdr);
	if (err)
		return err;
	/* Sizes from the file are 64-bit: saturate rather than wrap, the caps refuse them. */
	if (ret->frame.sh_size > SIZE_MAX / 32 || ret->hdr.sh_size > SIZE_MAX / 32) {
		ret->len = ret->charge = SIZE_MAX;
		return 0;
	}
	len = sizeof(Elf64_Ehdr) + ((ret->hdr.sh_size + 7) & ~7ul) +
	      ((ret->frame.sh_size + 7) & ~7ul) + ((sizeof(cfi_shstr) + 7) & ~7ul) +
	      4 * sizeof(Elf64_Shdr);
	libdw = eh_hdr_table(fd, &ret->hdr)
			? (uint64_t)UNWIND_CFI_LOOKUPS * UNWIND_LIBDW_FDE_BYTES
			: ret->frame.sh_size / UNWIND_MIN_FDE * UNWIND_LIBDW_FDE_BYTES;
	ret->len = len;
	ret->charge = len + libdw;
	return 0;
}

static void cfi_file__read(struct cfi_file *f, int fd, const struct cfi_plan *p)
{
	const char *shstr = cfi_shstr;
	Elf64_Shdr frame = p->frame, hdr = p->hdr, out[4] = {};
	Elf64_Ehdr eh = p->eh, img_eh;
	size_t off, len = p->len;
	uint8_t *img;

	img = calloc(1, len);
	if (!img)
		return;
	off = sizeof(eh);
	if (hdr.sh_type) {
		out[1] = (Elf64_Shdr){ .sh_name = 1,
				       .sh_type = SHT_PROGBITS,
				       .sh_flags = SHF_ALLOC,
				       .sh_addr = hdr.sh_addr,
				       .sh_offset = off,
				       .sh_size = hdr.sh_size,
				       .sh_addralign = 4 };
		if (pread_exact(fd, img + off, hdr.sh_size, hdr.sh_offset))
			goto fail;
		off += (hdr.sh_size + 7) & ~7ul;
	}
	out[2] = (Elf64_Shdr){ .sh_name = 15,
			       .sh_type = SHT_PROGBITS,
			       .sh_flags = SHF_ALLOC,
			       .sh_addr = frame.sh_addr,
			       .sh_offset = off,
			       .sh_size = frame.sh_size,
			       .sh_addralign = 8 };
	if (pread_exact(fd, img + off, frame.sh_size, frame.sh_offset))
		goto fail;
	off += (frame.sh_size + 7) & ~7ul;
	out[3] = (Elf64_Shdr){ .sh_name = 25,
			       .sh_type = SHT_STRTAB,
			       .sh_offset = off,
			       .sh_size = sizeof(cfi_shstr),
			       .sh_addralign = 1 };
	memcpy(img + off, shstr, sizeof(cfi_shstr));
	off += (sizeof(cfi_shstr) + 7) & ~7ul;
	memcpy(img + off, out, sizeof(out));
	img_eh = (Elf64_Ehdr){ .e_type = eh.e_type,
			       .e_machine = eh.e_machine,
			       .e_version = EV_CURRENT,
			       .e_shoff = off,
			       .e_ehsize = sizeof(eh),
			       .e_shentsize = sizeof(Elf64_Shdr),
			       .e_shnum = 4,
			       .e_shstrndx = 3 };
	memcpy(img_eh.e_ident, eh.e_ident, EI_NIDENT);
	img_eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(img, &img_eh, sizeof(img_eh));
	f->image = img;
	f->elf = elf_memory((char *)img, len);
	if (f->elf)
		f->cfi = dwarf_getcfi_elf(f->elf);
	if (!f->cfi)
		cfi_file__release(f);
	else
		f->charge = p->charge;
	return;
fail:
	free(img);
}

static void unwinder__drop(struct unwinder *u, int i)
{
	u->bytes -= u->files[i].charge;
	cfi_file__release(&u->files[i]);
	u->files[i] = u->files[--u->nfiles];
	u->stats.files_evicted++;
}

/* Evicts the least recently used files with CFI until charge more bytes fit the total. */
static void unwinder__make_room(struct unwinder *u, size_t charge)
{
	while (u->bytes > u->budget - charge) {
		int lru = -1;

		for (int i = 0; i < u->nfiles; i++)
			if (u->files[i].charge &&
			    (lru < 0 || u->files[i].used < u->files[lru].used))
				lru = i;
		if (lru < 0)
			break;
		unwinder__drop(u, lru);
	}
}

/* A slot for a new file: a free one, else the least recently used one, emptied. */
static struct cfi_file *unwinder__slot(struct unwinder *u)
{
	int lru = 0;

	if (u->nfiles < UNWIND_MAX_FILES)
		return &u->files[u->nfiles++];
	for (int i = 1; i < u->nfiles; i++)
		if (u->files[i].used < u->files[lru].used)
			lru = i;
	u->bytes -= u->files[lru].charge;
	cfi_file__release(&u->files[lru]);
	u->stats.files_evicted++;
	return &u->files[lru];
}

/* The cached CFI of mapping m of pid, read on a miss. NULL: none. */
static struct cfi_file *unwinder__file(struct unwinder *u, int pid, const struct sym_mapping *m)
{
	struct cfi_file nf = { .dev = m->dev, .ino = m->ino }, *f;
	struct cfi_plan plan;
	int fd;

	for (int i = 0; i < u->nfiles; i++) {
		if (u->files[i].dev == m->dev && u->files[i].ino == m->ino) {
			f = &u->files[i];
			f->used = ++u->clock;
			return f->cfi ? f : NULL;
		}
	}
	/* Any failure is remembered as a file without CFI: no retry for every frame. */
	fd = symbolizer__open_mapping(u->sym, pid, m);
	if (fd >= 0 && !cfi_file__plan(&nf, fd, &plan)) {
		if (plan.charge > u->file_budget) {
			u->stats.files_over_budget++;
			symbolizer__refused(u->sym, pid, m, "CFI (.eh_frame)", plan.charge,
					    u->file_budget);
		} else {
			unwinder__make_room(u, plan.charge);
			cfi_file__read(&nf, fd, &plan);
		}
	}
	if (fd >= 0)
		close(fd);
	f = unwinder__slot(u);
	*f = nf;
	f->used = ++u->clock;
	u->bytes += f->charge;
	u->stats.files_loaded += f->cfi != NULL;
	return f->cfi ? f : NULL;
}

/*
 * libdw's FDE cache of f, started over every UNWIND_CFI_LOOKUPS lookups (its charge holds
 * that many). false: f lost its CFI.
 */
static bool unwinder__cfi_lookup(struct unwinder *u, struct cfi_file *f)
{
	if (++f->lookups <= UNWIND_CFI_LOOKUPS)
		return true;
	dwarf_cfi_end(f->cfi);
	f->cfi = dwarf_getcfi_elf(f->elf);
	f->lookups = 1;
	if (f->cfi)
		return true;
	u->bytes -= f->charge;
	cfi_file__release(f);
	return false;
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
	struct unwind_reach *reach; /* what the reads asked for */
};

static bool mem_read(const struct stack_mem *m, uint64_t addr, uint64_t *ret)
{
	if (addr < m->start || addr - m->start > m->len || m->len - (addr - m->start) < 8) {
		/* Above the bytes, within what a snapshot could hold: more bytes might have done. */
		if (addr >= m->start + m->len && addr - m->start < SHIP_SNAPSHOT_MAX_STACK)
			m->reach->cut = true;
		return false;
	}
	memcpy(ret, m->bytes + (addr - m->start), 8);
	if (addr - m->start + 8 > m->reach->top)
		m->reach->top = (uint32_t)(addr - m->start + 8);
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
#define PUSH(v)                       \
	do {                          \
		if (sp == EXPR_STACK) \
			return false; \
		st[sp++] = (v);       \
	} while (0)
#define POP(v)                        \
	do {                          \
		if (!sp)              \
			return false; \
		(v) = st[--sp];       \
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
			case DW_OP_const1u:
			case DW_OP_const1s:
			case DW_OP_const2u:
			case DW_OP_const2s:
			case DW_OP_const4u:
			case DW_OP_const4s:
			case DW_OP_const8u:
			case DW_OP_const8s:
			case DW_OP_constu:
			case DW_OP_consts:
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
			case DW_OP_plus:
			case DW_OP_minus:
			case DW_OP_and:
			case DW_OP_or:
			case DW_OP_mul:
			case DW_OP_shl:
			case DW_OP_shr:
			case DW_OP_ge:
			case DW_OP_gt:
			case DW_OP_le:
			case DW_OP_lt:
			case DW_OP_eq:
			case DW_OP_ne:
				POP(b);
				POP(a);
				PUSH(op == DW_OP_plus	 ? a + b
				     : op == DW_OP_minus ? a - b
				     : op == DW_OP_and	 ? a & b
				     : op == DW_OP_or	 ? a | b
				     : op == DW_OP_mul	 ? a * b
				     : op == DW_OP_shl	 ? (b < 64 ? a << b : 0)
				     : op == DW_OP_shr	 ? (b < 64 ? a >> b : 0)
				     : op == DW_OP_ge	 ? (int64_t)a >= (int64_t)b
				     : op == DW_OP_gt	 ? (int64_t)a > (int64_t)b
				     : op == DW_OP_le	 ? (int64_t)a <= (int64_t)b
				     : op == DW_OP_lt	 ? (int64_t)a < (int64_t)b
				     : op == DW_OP_eq	 ? a == b
							 : a != b);
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
	if (!f || !unwinder__cfi_lookup(u, f))
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
	struct unwind_reach reach;

	return unwinder__unwind_reach(u, pid, regs, stack, stack_len, ips, max, &reach);
}

size_t unwinder__unwind_reach(struct unwinder *u, int pid, const struct unwind_regs *regs,
			      const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max,
			      struct unwind_reach *ret_reach)
{
	struct stack_mem m = {
		.bytes = stack, .start = regs->sp, .len = stack ? stack_len : 0, .reach = ret_reach
	};
	struct frame fr = { .ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .bp_known = true };
	size_t n = 0;

	*ret_reach = (struct unwind_reach){ 0 };
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
	ret_stats->cache_bytes = u->bytes;
}

int snapshots__begin(struct snapshot_iter *it, const void *buf, size_t len)
{
	struct ship_snapshots_hdr hdr;

	if (!buf || len < sizeof(hdr))
		return -EPROTO;
	memcpy(&hdr, buf, sizeof(hdr));
	*it = (struct snapshot_iter){ .buf = buf,
				      .len = len,
				      .off = sizeof(hdr),
				      .count = hdr.count,
				      .task_id = hdr.task_id };
	return 0;
}

int snapshots__next(struct snapshot_iter *it, struct snapshot_view *ret)
{
	size_t rest = it->len - it->off, kb, pb, sb;

	if (it->seen == it->count)
		return rest ? -EPROTO : 0;
	if (rest < sizeof(ret->s))
		return -EPROTO;
	memcpy(&ret->s, it->buf + it->off, sizeof(ret->s));
	if (ret->s.nkips > ROVER_MAX_STACK_DEPTH || ret->s.stack_len > SHIP_SNAPSHOT_MAX_STACK ||
	    ret->s.tgid <= 0 || ret->s.npy > PY_MAX_FRAMES || !sc_rt_status_ok(ret->s.pystatus))
		return -EPROTO;
	kb = (size_t)ret->s.nkips * 8;
	pb = (size_t)ret->s.npy * sizeof(struct py_frame);
	sb = ((size_t)ret->s.stack_len + 7) & ~(size_t)7;
	if (rest - sizeof(ret->s) < kb + pb + sb)
		return -EPROTO;
	ret->kips = it->buf + it->off + sizeof(ret->s);
	ret->py = ret->kips + kb;
	ret->stack = ret->py + pb;
	it->off += sizeof(ret->s) + kb + pb + sb;
	it->seen++;
	return 1;
}
