// SPDX-License-Identifier: Apache-2.0
/*
 * Finding "shipper memory DoS through the CFI cache": a process anyone can start maps files
 * whose sparse .eh_frame, .eh_frame_hdr, .symtab and .strtab each claim just under 64 MiB
 * (the old per-section caps) while taking a few KiB of disk, and runs code in them. The
 * shipper used to read and keep the CFI of every such file (up to 128 of them) and read each
 * symbol table whole. Its peak RSS must stay under the figure docs/profiling.md states, and the
 * profile must still be written and name the target's own function.
 *
 * Finding 3 of the second privilege review (issue 23): the same through TLS finding. A
 * NETWORK task looks at every libssl* its targets map r-x; a 256 MiB sparse one with 13
 * .dynsym headers over the same bytes had each read whole (3.15 GB of VmHWM, a 4 s task took
 * 28 s).
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/elf_header.h"

/* docs/profiling.md, "Whole stacks": the shipper's peak RSS with default budgets. */
#define SHIPPER_PEAK_RSS_KIB (400u << 10)
#define NFILES 16
/* Just under the old caps (UNWIND_MAX_EH_FRAME, 64 MiB). */
#define BIG_SECTION ((64u << 20) - (64u << 10))
#define BIG_OFFSET (64u << 10)
/* Where mapped_code_burn calls each file: 4 Mi iterations of dec/jnz, then ret. */
#define CODE_OFFSET (4096 - 16)
/* The hostile libssl: its size on the file system, and its overlapping .dynsym headers. */
#define EVIL_FILE_SIZE (256u << 20)
#define EVIL_DYNSYMS 13
/* A NETWORK task of TASK_SECONDS must end this long after it started, at most. */
#define TASK_SECONDS 4
#define TASK_SLACK_SECONDS 10
/*
 * The shipper's CPU time over the whole task, at most: refusing the file takes it well under
 * a millisecond, reading its 13 tables took 3.9-6.5 s on a 2-core VM, whose wall-clock time
 * under load varies more than that.
 */
#define SHIPPER_CPU_MAX_S 2.0

static const uint8_t burn_code[] = { 0xb9, 0x00, 0x00, 0x40, 0x00, /* mov $0x400000, %ecx */
				     0xff, 0xc9,		   /* dec %ecx */
				     0x75, 0xfc,		   /* jnz .-2 */
				     0xc3 };			   /* ret */

TestSuite(shipper_memory, .init = tmp_setup, .fini = tmp_teardown, .timeout = 240);

/*
 * An ELF shared object of a few KiB on disk: one executable page, and sections that all
 * point at one sparse region of BIG_SECTION zero bytes past it.
 */
static void write_sparse_elf(const char *path)
{
	static const char shstr[] = "\0.eh_frame\0.eh_frame_hdr\0.symtab\0.strtab\0.shstrtab";
	uint8_t page[8192] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)page;
	Elf64_Phdr *ph = (Elf64_Phdr *)(page + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(page + 4096);
	size_t str_off = 4096 + 6 * sizeof(Elf64_Shdr);
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
	memcpy(page + CODE_OFFSET, burn_code, sizeof(burn_code));
	sh[1] = (Elf64_Shdr){ .sh_name = 1,
			      .sh_type = SHT_PROGBITS,
			      .sh_flags = SHF_ALLOC,
			      .sh_addr = BIG_OFFSET,
			      .sh_offset = BIG_OFFSET,
			      .sh_size = BIG_SECTION };
	sh[2] = sh[1];
	sh[2].sh_name = 11;
	sh[3] = (Elf64_Shdr){ .sh_name = 25,
			      .sh_type = SHT_SYMTAB,
			      .sh_offset = BIG_OFFSET,
			      .sh_size = BIG_SECTION,
			      .sh_link = 4,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[4] = (Elf64_Shdr){ .sh_name = 33,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = BIG_OFFSET,
			      .sh_size = BIG_SECTION };
	sh[5] = (Elf64_Shdr){
		.sh_name = 41, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(shstr)
	};
	memcpy(page + str_off, shstr, sizeof(shstr));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	cr_assert_eq(ftruncate(fd, BIG_OFFSET + BIG_SECTION), 0);
	close(fd);
}

static unsigned long kib_of(pid_t pid, const char *key)
{
	char v[64];

	return proc_status(pid, key, v, sizeof(v)) ? 0 : strtoul(v, NULL, 10);
}

Test(shipper_memory, files_with_huge_sparse_tables_do_not_blow_up_the_shipper)
{
	char dir[4096], path[4200], out[4096], pids[32], errlog[4096];
	char *argv[] = { (char *)bin("rover"), "profile", "--pid", pids, "--duration", "5s",
			 "--output",	       out,	  NULL };
	unsigned long hwm = 0, v, disk = 0;
	pid_t target, launcher, shipper = 0;
	struct folded f;
	struct stat st;
	char *log;
	int rc = -1, status;

	snprintf(dir, sizeof(dir), "%s/maps", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/lib%02d.so", dir, i);
		write_sparse_elf(path);
		cr_assert_eq(stat(path, &st), 0);
		disk += (unsigned long)st.st_blocks * 512;
	}
	cr_log_info("%d files, %lu KiB on disk in all", NFILES, disk >> 10);
	target = start_program(bin("tests/programs/mapped_code_burn"), dir);
	cr_assert_gt(target, 0, "mapped_code_burn did not start");

	snprintf(pids, sizeof(pids), "%d", (int)target);
	snprintf(out, sizeof(out), "%s/x.folded", tmp);
	snprintf(errlog, sizeof(errlog), "%s/rover.log", tmp);
	launcher = spawn_cmd(argv, errlog);
	cr_assert_gt(launcher, 0);
	for (int waited = 0; waited < 60000; waited += 20) {
		if (!shipper)
			shipper = find_child(launcher, "rover-shipper");
		if (shipper && (v = kib_of(shipper, "VmHWM")) > hwm)
			hwm = v;
		if (waitpid(launcher, &status, WNOHANG) == launcher) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
		sleep_ms(20);
	}
	if (rc < 0) {
		kill(launcher, SIGKILL);
		waitpid(launcher, NULL, 0);
	}
	stop_program(target);
	log = slurp(errlog, NULL);
	cr_log_info("shipper peak RSS: %lu KiB (limit %u KiB)", hwm, SHIPPER_PEAK_RSS_KIB);
	if (getenv("ROVER_TEST_SHOW_LOG"))
		cr_log_info("%s", log ? log : "");
	cr_assert_eq(rc, 0, "rover profile: %d\n%s", rc, log ? log : "");
	cr_assert_gt(hwm, 0, "the shipper was never seen");
	cr_assert_lt(hwm, SHIPPER_PEAK_RSS_KIB, "shipper peak RSS %lu KiB\n%s", hwm,
		     log ? log : "");
	cr_assert_eq(folded_read(out, &f), 0, "no profile written");
	cr_assert_gt(folded_with_frame(&f, "burn_own"), 0, "burn_own not in the profile");
	folded_free(&f);
	free(log);
}

/*
 * The library of finding 3: EVIL_FILE_SIZE bytes, of which a few KiB are on disk: one
 * executable page, EVIL_DYNSYMS SHT_DYNSYM headers each covering every byte from BIG_OFFSET
 * to the end (zeros: no symbol in them), a small .dynstr and the section names.
 */
static void write_overlapping_dynsym_elf(const char *path)
{
	static const char shstr[] = "\0.dynsym\0.dynstr\0.shstrtab";
	enum { DYNSTR = EVIL_DYNSYMS + 1, SHSTRTAB, NSECTIONS };
	uint8_t page[8192] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)page;
	Elf64_Phdr *ph = (Elf64_Phdr *)(page + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(page + 4096);
	size_t str_off = 4096 + NSECTIONS * sizeof(Elf64_Shdr);
	int fd;

	test_elf64_header(eh, ET_DYN);
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = 4096;
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = NSECTIONS;
	eh->e_shstrndx = SHSTRTAB;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
			    .p_flags = PF_R | PF_X,
			    .p_filesz = 4096,
			    .p_memsz = 4096,
			    .p_align = 4096 };
	memcpy(page + CODE_OFFSET, burn_code, sizeof(burn_code));
	for (int i = 1; i <= EVIL_DYNSYMS; i++)
		sh[i] = (Elf64_Shdr){ .sh_name = 1,
				      .sh_type = SHT_DYNSYM,
				      .sh_flags = SHF_ALLOC,
				      .sh_offset = BIG_OFFSET,
				      .sh_size = EVIL_FILE_SIZE - BIG_OFFSET,
				      .sh_link = DYNSTR,
				      .sh_info = 1,
				      .sh_entsize = sizeof(Elf64_Sym) };
	/* .dynstr: the first byte of the section names, a NUL. */
	sh[DYNSTR] = (Elf64_Shdr){ .sh_name = 9,
				   .sh_type = SHT_STRTAB,
				   .sh_flags = SHF_ALLOC,
				   .sh_offset = str_off,
				   .sh_size = 1 };
	sh[SHSTRTAB] = (Elf64_Shdr){
		.sh_name = 17, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(shstr)
	};
	memcpy(page + str_off, shstr, sizeof(shstr));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	cr_assert_eq(ftruncate(fd, EVIL_FILE_SIZE), 0);
	close(fd);
}

/* The CPU time pid has used, in seconds (user and system); -1 when it cannot be read. */
static double cpu_s(pid_t pid)
{
	unsigned long long utime, stime;
	char path[64], *stat, *p;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = slurp(path, NULL);
	/* After the command name, which may hold spaces: state is field 3, utime 14. */
	p = stat ? strrchr(stat, ')') : NULL;
	n = p ? sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		       &stime)
	      : 0;
	free(stat);
	return n == 2 ? (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK) : -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(shipper_memory, libssl_with_overlapping_sparse_symbol_tables)
{
	char dir[4096], path[4200], out[4096], pids[32], errlog[4096], dur[16];
	char *argv[] = { (char *)bin("rover"), "profile", "--type",   "network", "--pid", pids,
			 "--duration",	       dur,	  "--output", out,	 NULL };
	unsigned long hwm = 0, v;
	pid_t target, launcher, shipper = 0;
	double start, took = -1, cpu = -1, c;
	struct stat st;
	char *log;
	int rc = -1, status;

	snprintf(dir, sizeof(dir), "%s/maps", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/libssl-evil.so", dir);
	write_overlapping_dynsym_elf(path);
	cr_assert_eq(stat(path, &st), 0);
	cr_log_info("%s: %lld bytes, %lld KiB on disk", path, (long long)st.st_size,
		    (long long)st.st_blocks / 2);
	target = start_program(bin("tests/programs/mapped_code_burn"), dir);
	cr_assert_gt(target, 0, "mapped_code_burn did not start");
	log = proc_maps_grep(target, "libssl-evil.so");
	cr_assert(log && strstr(log, " r-xp "), "libssl-evil.so not mapped r-x: %s", log);
	free(log);

	snprintf(pids, sizeof(pids), "%d", (int)target);
	snprintf(dur, sizeof(dur), "%ds", TASK_SECONDS);
	snprintf(out, sizeof(out), "%s/x.txt", tmp);
	snprintf(errlog, sizeof(errlog), "%s/rover.log", tmp);
	start = now_s();
	launcher = spawn_cmd(argv, errlog);
	cr_assert_gt(launcher, 0);
	/* Sampled until well past the time allowed, so that a late task's peak is seen too. */
	for (int waited = 0; waited < 60000; waited += 20) {
		if (!shipper)
			shipper = find_child(launcher, "rover-shipper");
		if (shipper && (v = kib_of(shipper, "VmHWM")) > hwm)
			hwm = v;
		if (shipper && (c = cpu_s(shipper)) > cpu)
			cpu = c;
		if (waitpid(launcher, &status, WNOHANG) == launcher) {
			took = now_s() - start;
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
		sleep_ms(20);
	}
	if (rc < 0) {
		kill(launcher, SIGKILL);
		waitpid(launcher, NULL, 0);
	}
	stop_program(target);
	log = slurp(errlog, NULL);
	cr_log_info("shipper peak RSS: %lu KiB (limit %u KiB), CPU %.2f s; the %d s task took "
		    "%.1f s",
		    hwm, SHIPPER_PEAK_RSS_KIB, cpu, TASK_SECONDS, took);
	if (getenv("ROVER_TEST_SHOW_LOG"))
		cr_log_info("%s", log ? log : "");
	cr_assert_eq(rc, 0, "rover profile: %d\n%s", rc, log ? log : "");
	cr_assert_gt(hwm, 0, "the shipper was never seen");
	/* The file was looked at, and said to be left alone. */
	cr_assert(log && strstr(log, "libssl-evil.so") && strstr(log, "not probed"),
		  "libssl-evil.so not looked at:\n%s", log ? log : "");
	cr_expect_lt(hwm, SHIPPER_PEAK_RSS_KIB, "shipper peak RSS %lu KiB\n%s", hwm, log);
	cr_expect_lt(took, TASK_SECONDS + TASK_SLACK_SECONDS, "the %d s task took %.1f s\n%s",
		     TASK_SECONDS, took, log);
	cr_expect(cpu >= 0 && cpu < SHIPPER_CPU_MAX_S, "the shipper used %.2f s of CPU\n%s", cpu,
		  log);
	cr_assert_eq(access(out, R_OK), 0, "no report written\n%s", log);
	free(log);
}
