/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the function symbols of one ELF executable or shared object, read from an
 * untrusted file (a traced process chooses what it maps), and of its separate debug file.
 */
#ifndef ROVER_SHIPPER_ELFSYM_H
#define ROVER_SHIPPER_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELFSYM_BUILD_ID_MAX 64
/* Where separate debug files live; world-readable, opened directly. */
#define ELFSYM_DEBUG_ROOT "/usr/lib/debug"

struct elfsym;

/*
 * Reads the identity of the ELF file in fd (not taken): its type, load segments and build-id.
 * fd must stay open until elfsym__load_symbols() returns. NULL + errno: ENOEXEC when fd is not
 * an ELF executable or shared object (ET_EXEC, ET_DYN) this code accepts.
 */
struct elfsym *elfsym__open(int fd);
/* Same on len bytes at buf, which must stay valid until elfsym__load_symbols() returns. */
struct elfsym *elfsym__open_memory(void *buf, size_t len);

/* The build-id (GNU note) of the file: its length, 0 when it has none. */
size_t elfsym__build_id(const struct elfsym *es, const uint8_t **ret_id);

/*
 * Reads the function symbols (.symtab and .dynsym). When the file has no .symtab, reads the
 * .symtab of its debug file: ELFSYM_DEBUG_ROOT/.build-id/xx/yyyy.debug, else the
 * .gnu_debuglink name in ELFSYM_DEBUG_ROOT/<dir of path>/ or <dir of path>/.debug/ (path: the
 * file's name in its process, NULL to skip this search), else the xz-compressed ELF in its
 * .gnu_debugdata section (MiniDebugInfo). The functions of a Go binary's .gopclntab name
 * what no symbol table does (all of a stripped Go binary). Releases the file in every case.
 * 0 (also when no symbol was found) or -errno.
 */
int elfsym__load_symbols(struct elfsym *es, const char *path);

/*
 * The address, in the file's own virtual address space, of the byte at addr in a mapping
 * that starts at start and maps the file from offset off.
 */
uint64_t elfsym__vaddr(const struct elfsym *es, uint64_t addr, uint64_t start, uint64_t off);

/*
 * Writes the demangled name of the function containing vaddr into buf: 1, or 0 when no
 * function covers vaddr. Demangled names are kept, so elfsym__bytes() may grow.
 */
int elfsym__name(struct elfsym *es, uint64_t vaddr, char *buf, size_t len);

/*
 * Whether reading es went past its budget (ELFSYM_FILE_BUDGET in elfsym.c): true with the
 * bytes the read would have needed and the budget. The tables read within it are kept.
 */
bool elfsym__refused(const struct elfsym *es, uint64_t *ret_bytes, uint64_t *ret_limit);

/* Heap bytes held by es, and its number of function symbols. */
size_t elfsym__bytes(const struct elfsym *es);
size_t elfsym__count(const struct elfsym *es);

void elfsym__free(struct elfsym *es);

/*
 * A libelf handle on fd (ELF_C_READ) after the header checks elfsym__open applies (section
 * and segment counts, sizes within the file), for other readers of untrusted ELF files.
 * NULL + errno.
 */
struct Elf;
struct Elf *elfsym__elf_begin(int fd);

/*
 * What reading one target file may take, whoever reads it in the shipper (symbol loading
 * here, TLS finding in tlsfind.c), since anyone can make the shipper read a file whose sparse
 * tables claim any size: the bytes of its sections read (whether kept or streamed through),
 * and what is built from them. Charged before each read or allocation. The largest files
 * seen need far less: node's .symtab and .strtab take 10 MiB, the largest .gopclntab (a
 * 170 MiB Go binary) 36 MiB.
 */
#define ELFSYM_FILE_BUDGET (64u << 20)

struct file_budget {
	uint64_t left;	  /* of ELFSYM_FILE_BUDGET */
	uint64_t refused; /* bytes the read would have needed, 0: within the budget */
};

void file_budget__init(struct file_budget *b);
/* Counts bytes against b: false (and the refusal kept) when they exceed what is left. */
bool file_budget__charge(struct file_budget *b, uint64_t bytes);
/*
 * The charge for libelf's copy of bytes of a section of elf (elf_getdata), before it is made:
 * twice the bytes for a file of the other byte order, which libelf converts into a second
 * buffer.
 */
bool file_budget__charge_copy(struct file_budget *b, struct Elf *elf, uint64_t bytes);

/*
 * The index of elf's section-name table, for elf_strptr(), which reads that table whole:
 * 0, -ENOENT when there is none, -EFBIG when it is larger than any linker makes (64 KiB).
 */
int elfsym__section_names(struct Elf *elf, size_t *ret_shstrndx);

#endif
