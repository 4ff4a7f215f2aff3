/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON, or none once attached): an ELF file a shipper handed over
 * (the launcher opened it from a target's /proc/PID/map_files), read with pread64 only and
 * no more than a budget of bytes. Every table in it is as untrusted as its bytes: each offset
 * read from one is checked against the file before it is read. Used by the TLS probe check
 * (worker/tlscheck.c), the Python interpreter check (worker/pyattach.c) and the reading of
 * HotSpot's tables (worker/jvmstructs.c).
 */
#ifndef ROVER_WORKER_ELFFILE_H
#define ROVER_WORKER_ELFFILE_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_MAX_PHDRS 64
/* Dynamic entries read: libssl has about 30, node 35; the tags wanted come first. */
#define ELF_MAX_DYN 512
/* Symbols compared along one hash chain (libssl's longest holds 5, node's about 20). */
#define ELF_MAX_CHAIN 4096
/* Relocations read at once by elf_rela_each (24 bytes each). */
#define ELF_RELA_CHUNK 512
#define ELF_NONE UINT64_MAX

struct elf_file {
	int fd;
	uint64_t size;
	uint64_t left; /* bytes it may still read */
	Elf64_Ehdr eh;
	Elf64_Phdr ph[ELF_MAX_PHDRS];
	size_t nph;
};

struct elf_dyn {
	uint64_t symtab, strtab, strsz, gnu_hash, hash; /* file offsets, ELF_NONE when absent */
	uint64_t rela, relasz;		   /* DT_RELA's file offset and DT_RELASZ; ELF_NONE, 0 */
	uint64_t init_array, init_arraysz; /* DT_INIT_ARRAY's address (not offset) and size */
};

/* Reads fd's ELF and program headers: 0, -EBADF (not a regular file), -ENOEXEC. */
int elf_file__open(struct elf_file *f, int fd, uint64_t budget);
/* n bytes at file offset off into buf: 0, -EFAULT when the file has them not, or -E2BIG. */
int elf_rd(struct elf_file *f, void *buf, uint64_t n, uint64_t off);
uint32_t elf_rd32(const uint8_t *p);
uint64_t elf_rd64(const uint8_t *p);
/* The executable segment whose bytes in the file hold offset off, or NULL. */
const Elf64_Phdr *elf_code_at(const struct elf_file *f, uint64_t off);
/* The file offset of vaddr in the bytes of a loaded segment (an executable one: code), or
 * ELF_NONE. */
uint64_t elf_file_offset(const struct elf_file *f, uint64_t vaddr, bool code);
/* Whether the bytes at off are the string name and its terminator: 1, 0 or -errno. */
int elf_name_is(struct elf_file *f, uint64_t off, const char *name);
/* The tables PT_DYNAMIC names, as file offsets. 0, or -EFAULT when there are none. */
int elf_load_dynamic(struct elf_file *f, struct elf_dyn *ret);

/*
 * Calls each(rel, arg) on every entry of DT_RELA, read ELF_RELA_CHUNK at a time: 0, the first
 * nonzero return of each, -EFAULT when the table is not in the file, or -E2BIG.
 */
int elf_rela_each(struct elf_file *f, const struct elf_dyn *d,
		  int (*each)(const Elf64_Rela *rel, void *arg), void *arg);
/* Dynamic symbol i, read whole: 0, -EFAULT (not in the file) or -E2BIG. */
int elf_dynsym_at(struct elf_file *f, const struct elf_dyn *d, uint32_t i, Elf64_Sym *ret);

/* Whether a defined symbol found by name is the one wanted: 1, 0 or -errno. */
typedef int (*elf_sym_ok)(struct elf_file *f, const Elf64_Sym *s, void *arg);
/*
 * Looks name up in the dynamic symbol table as ld.so does (DT_GNU_HASH when there is one, else
 * DT_HASH): 1 when a defined symbol of that name passes ok, 0 when none does, or -errno.
 */
int elf_dynsym_find(struct elf_file *f, const struct elf_dyn *d, const char *name, elf_sym_ok ok,
		    void *arg);

#endif
