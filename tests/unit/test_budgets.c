// SPDX-License-Identifier: Apache-2.0
/*
 * The shipper's memory budgets against files written as the attack: sparse ELF files, a few
 * KiB on disk, whose .eh_frame or symbol table claims tens of MiB, mapped executable into
 * this very process. A file over a per-file cap is refused before its bytes are read (this
 * process's peak RSS does not grow by them), and the CFI cache's total evicts.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "shipper/stacks/symbolize.h"
#include "shipper/stacks/unwind.h"
#include "tests/elf_header.h"

#define BIG_OFFSET (64u << 10)
#define HDR_OFFSET 2048

struct refusals {
	int n;
	char what[64];
	char path[4096];
};

static void count_refusal(void *ctx, const struct budget_refusal *r)
{
	struct refusals *rf = ctx;

	rf->n++;
	snprintf(rf->what, sizeof(rf->what), "%s", r->what);
	snprintf(rf->path, sizeof(rf->path), "%s", r->path);
}

/*
 * A shared object with one executable page, an .eh_frame of frame_size zero bytes (sparse)
 * and, when search_table, an .eh_frame_hdr with a binary search table as ld writes it; with
 * symtab_size, a .symtab and .strtab of that many zero bytes (sparse).
 */
static void write_sparse_elf(const char *path, size_t frame_size, bool search_table,
			     size_t symtab_size)
{
	static const char shstr[] = "\0.eh_frame\0.eh_frame_hdr\0.symtab\0.strtab\0.shstrtab";
	uint8_t page[8192] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)page;
	Elf64_Phdr *ph = (Elf64_Phdr *)(page + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(page + 4096);
	size_t str_off = 4096 + 6 * sizeof(Elf64_Shdr), end = BIG_OFFSET + frame_size;
	uint8_t hdr[20] = { 1, 0x1b, 0x03, 0x3b };
	uint32_t one = 1;
	int fd;

	test_elf64_header(eh, ET_DYN);
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = 4096;
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 6;
	eh->e_shstrndx = 5;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
			    .p_flags = PF_R | PF_X,
			    .p_filesz = 4096,
			    .p_memsz = 4096,
			    .p_align = 4096 };
	page[4000] = 0xc3;
	sh[1] = (Elf64_Shdr){ .sh_name = 1,
			      .sh_type = SHT_PROGBITS,
			      .sh_flags = SHF_ALLOC,
			      .sh_addr = BIG_OFFSET,
			      .sh_offset = BIG_OFFSET,
			      .sh_size = frame_size };
	if (search_table) {
		memcpy(hdr + 8, &one, sizeof(one));
		memcpy(page + HDR_OFFSET, hdr, sizeof(hdr));
		sh[2] = (Elf64_Shdr){ .sh_name = 11,
				      .sh_type = SHT_PROGBITS,
				      .sh_flags = SHF_ALLOC,
				      .sh_addr = HDR_OFFSET,
				      .sh_offset = HDR_OFFSET,
				      .sh_size = sizeof(hdr) };
	}
	if (symtab_size) {
		sh[3] = (Elf64_Shdr){ .sh_name = 25,
				      .sh_type = SHT_SYMTAB,
				      .sh_offset = BIG_OFFSET,
				      .sh_size = symtab_size,
				      .sh_link = 4,
				      .sh_entsize = sizeof(Elf64_Sym) };
		sh[4] = (Elf64_Shdr){ .sh_name = 33,
				      .sh_type = SHT_STRTAB,
				      .sh_offset = BIG_OFFSET,
				      .sh_size = symtab_size };
		if (BIG_OFFSET + symtab_size > end)
			end = BIG_OFFSET + symtab_size;
	}
	sh[5] = (Elf64_Shdr){
		.sh_name = 41, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(shstr)
	};
	memcpy(page + str_off, shstr, sizeof(shstr));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	cr_assert_eq(ftruncate(fd, (off_t)end), 0);
	close(fd);
}

/* Maps path's first page executable into this process: its address. */
static uint8_t *map_exec(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p;

	cr_assert_geq(fd, 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	cr_assert_neq(p, MAP_FAILED);
	return p;
}

static long peak_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static char dir[] = "/tmp/rover-budgets.XXXXXX";

static void dir_setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void dir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		cr_log_warn("%s failed", cmd);
}

TestSuite(budgets, .init = dir_setup, .fini = dir_teardown);

Test(budgets, cfi_over_the_per_file_cap_is_refused_without_reading_it)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	struct refusals rf = {};
	struct unwind_stats st;
	char path[256];
	long before;

	/* 48 MiB with a search table: under the old 64 MiB cap, over the 16 MiB one. */
	snprintf(path, sizeof(path), "%s/big_cfi.so", dir);
	write_sparse_elf(path, 48u << 20, true, 0);
	map_exec(path);
	symbolizer__on_refusal(sym, count_refusal, &rf);
	before = peak_rss_kib();
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	unwinder__stats(u, &st);
	cr_assert_eq(st.files_over_budget, 1);
	cr_assert_eq(rf.n, 1, "one report per file, not per look-up");
	cr_assert(strstr(rf.path, "big_cfi.so"), "%s", rf.path);
	cr_assert_leq(st.cache_bytes, UNWIND_CACHE_BYTES);
	cr_assert_lt(peak_rss_kib() - before, 8 << 10, "peak RSS grew by %ld KiB",
		     peak_rss_kib() - before);
	unwinder__free(u);
	symbolizer__free(sym);
}

Test(budgets, cfi_without_a_search_table_is_charged_what_libdw_would_scan)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	struct unwind_stats st;
	char path[256];

	/* 4 MiB of .eh_frame, which libdw would parse whole into FDEs on one look-up. */
	snprintf(path, sizeof(path), "%s/no_table.so", dir);
	write_sparse_elf(path, 4u << 20, false, 0);
	map_exec(path);
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	unwinder__stats(u, &st);
	cr_assert_eq(st.files_over_budget, 1);
	unwinder__free(u);
	symbolizer__free(sym);
}

Test(budgets, the_cfi_total_evicts_least_recently_used_files)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	struct unwind_stats st;
	char path[256];

	/* Each charged 128 KiB of image and 256 KiB for libdw: two fit 1 MiB, not three. */
	cr_assert_eq(unwinder__set_budget(u, 1u << 20, 512u << 10), 0);
	cr_assert_eq(unwinder__set_budget(u, 1u << 20, 2u << 20), -EINVAL);
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "%s/small%d.so", dir, i);
		write_sparse_elf(path, 128u << 10, true, 0);
		map_exec(path);
	}
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(unwinder__load_pid(u, getpid()), 0);
	unwinder__stats(u, &st);
	cr_log_info("loaded %llu, evicted %llu, over %llu, %llu bytes",
		    (unsigned long long)st.files_loaded, (unsigned long long)st.files_evicted,
		    (unsigned long long)st.files_over_budget, (unsigned long long)st.cache_bytes);
	cr_assert_geq(st.files_loaded, 8);
	cr_assert_geq(st.files_evicted, 6);
	cr_assert_gt(st.cache_bytes, 0);
	cr_assert_leq(st.cache_bytes, 1u << 20);
	unwinder__free(u);
	symbolizer__free(sym);
}

Test(budgets, symbol_tables_over_the_per_file_budget_are_not_read)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct symbolizer_stats st;
	struct refusals rf = {};
	char path[256], name[256];
	uint8_t *code;
	long before;

	/* .symtab and .strtab of 100 MiB each: under the old 256 MiB cap per table. */
	snprintf(path, sizeof(path), "%s/big_syms.so", dir);
	write_sparse_elf(path, 4096, true, 100u << 20);
	code = map_exec(path);
	symbolizer__on_refusal(sym, count_refusal, &rf);
	before = peak_rss_kib();
	cr_assert_eq(symbolizer__load_pid(sym, getpid()), 0);
	cr_assert_eq(symbolizer__user(sym, getpid(), (uint64_t)(uintptr_t)(code + 4000), name,
				      sizeof(name)),
		     0);
	cr_assert_eq(symbolizer__user(sym, getpid(), (uint64_t)(uintptr_t)(code + 4001), name,
				      sizeof(name)),
		     0);
	cr_assert_str_eq(name, "big_syms.so+0xfa1");
	symbolizer__stats(sym, &st);
	cr_assert_eq(st.elf_over_budget, 1);
	cr_assert_eq(rf.n, 1);
	cr_assert_str_eq(rf.what, "symbols");
	cr_assert_lt(peak_rss_kib() - before, 8 << 10, "peak RSS grew by %ld KiB",
		     peak_rss_kib() - before);
	symbolizer__free(sym);
}
