// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer's cost with many processes mapping large libraries (issue 4, "Symbols
 * everywhere"): PROCS processes (tests/programs/llvm_map) each dlopen every LIBRARY, then the
 * shipper's symbolizer (fd_opener_direct: run as root) names ADDRS addresses inside the
 * libraries' function symbols, the first block of them in the first library and so on, address
 * j in process j % PROCS; twice: cold (nothing cached: every process's maps, each library's
 * symbol table, each name's demangling), then warm.
 *
 *   bench_symbolize [-p PROCS] [-n ADDRS] [LIBRARY...]
 *   defaults: 50 processes, 20000 addresses, Debian's libLLVM-15 and libLLVM-14 (those present)
 *
 * Two libraries with two build-ids make a working set (two tables of about 4 MB each, .dynsym
 * only: Debian strips .symtab) that the small budget cannot hold: each library's block then
 * evicts the other's table, and the warm pass reads both again.
 *
 * Each budget runs in a child of its own, so that its peak RSS (VmHWM, what a shipper shows)
 * is its own. The baseline, measured in the same run over the same addresses as file offsets:
 * llvm-symbolizer (one process, "FILE ADDRESS" lines, so no /proc/PID/maps to read) and
 * addr2line on a tenth of the first library's (it scans the symbol table for each address).
 * llvm-symbolizer's warm rate comes from a run with every address twice, less the run with them
 * once. LLVM_MAP names the llvm_map binary (default: ../programs/llvm_map next to this one).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shipper/stacks/symbolize.h"

#define LIB_DIR "/usr/lib/x86_64-linux-gnu/"
#define DEFAULT_PROCS 50
#define DEFAULT_ADDRS 20000
#define MAX_LIBS 8
#define NAME_MAX_LEN 4096

struct func {
	uint64_t start, size;
};

struct lib {
	const char *path;
	struct stat st;
	uint64_t load_vaddr; /* of the first load segment's page */
	size_t nfuncs;
	size_t first, n; /* its block of addresses */
};

/* An address of a library, in the file's own address space. */
struct addr {
	uint64_t vaddr;
	int lib;
};

struct setup {
	const struct lib *libs;
	int nlibs;
	const pid_t *pids;
	int procs;
	const uint64_t *bases; /* [proc * nlibs + lib]: where the library's load_vaddr is */
	const struct addr *addrs;
	size_t naddrs;
};

/* What a budget's child reports to the parent, through shared memory. */
struct run {
	double cold_s, warm_s;
	uint64_t named_cold, named_warm;
	uint64_t cache_bytes, elf_loaded, elf_evicted;
	uint64_t rss_start_kb, hwm_kb;
	int err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static int func_cmp(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The function symbols of the ELF64 file at path (.symtab and .dynsym), by address, one per
 * address, and the vaddr of its first load segment. The file is trusted here: the benchmark
 * chose it.
 */
static int read_funcs(const char *path, struct func **ret_funcs, size_t *ret_n,
		      uint64_t *ret_load_vaddr)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;
	struct func *f = NULL;
	size_t n = 0, cap = 0, k;
	uint64_t load_vaddr = UINT64_MAX;
	struct stat st;
	void *map;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err)
		return err;
	eh = map;
	if ((size_t)st.st_size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64) {
		err = -ENOEXEC;
		goto cleanup;
	}
	ph = (const Elf64_Phdr *)((const char *)map + eh->e_phoff);
	for (k = 0; k < eh->e_phnum; k++)
		if (ph[k].p_type == PT_LOAD && ph[k].p_vaddr < load_vaddr)
			load_vaddr = ph[k].p_vaddr & ~(uint64_t)0xfff;
	sh = (const Elf64_Shdr *)((const char *)map + eh->e_shoff);
	for (k = 0; k < eh->e_shnum; k++) {
		const Elf64_Sym *syms;
		size_t i, nsyms;

		if (sh[k].sh_type != SHT_SYMTAB && sh[k].sh_type != SHT_DYNSYM)
			continue;
		syms = (const Elf64_Sym *)((const char *)map + sh[k].sh_offset);
		nsyms = sh[k].sh_size / sizeof(*syms);
		for (i = 0; i < nsyms; i++) {
			unsigned type = ELF64_ST_TYPE(syms[i].st_info);

			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    syms[i].st_shndx == SHN_UNDEF || !syms[i].st_size)
				continue;
			if (n == cap) {
				void *p = realloc(f, (cap = cap ? 2 * cap : 4096) * sizeof(*f));

				if (!p) {
					err = -ENOMEM;
					goto cleanup;
				}
				f = p;
			}
			f[n++] = (struct func){ syms[i].st_value, syms[i].st_size };
		}
	}
	qsort(f, n, sizeof(*f), func_cmp);
	for (size_t i = k = 0; i < n; i++)
		if (!k || f[k - 1].start != f[i].start)
			f[k++] = f[i];
	n = k;
	if (!n || load_vaddr == UINT64_MAX)
		err = -ENOENT;
cleanup:
	munmap(map, (size_t)st.st_size);
	if (err) {
		free(f);
		return err;
	}
	*ret_funcs = f;
	*ret_n = n;
	*ret_load_vaddr = load_vaddr;
	return 0;
}

/* Starts llvm_map on argv with its stdout on a pipe: the pid and the pipe's read end, or -errno. */
static pid_t spawn_mapper(char *const argv[], int *ret_fd)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	*ret_fd = pfd[0];
	return pid;
}

static int wait_ready(int fd)
{
	char line[256] = { 0 };
	size_t got = 0;

	while (got < sizeof(line) - 1) {
		ssize_t n = read(fd, line + got, 1);

		if (n <= 0 || line[got] == '\n')
			break;
		got++;
	}
	close(fd);
	if (strncmp(line, "ready", 5)) {
		fprintf(stderr, "bench_symbolize: llvm_map: %s\n", got ? line : "no output");
		return -EIO;
	}
	return 0;
}

/* Where lib is loaded in pid: the address of its first load segment's page. */
static int load_base(int pid, const struct stat *lib, uint64_t *ret_base)
{
	char path[64], line[PATH_MAX + 128];
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &start, &end, &off, &maj, &min,
			   &ino) != 6)
			continue;
		if (ino == lib->st_ino && makedev(maj, min) == lib->st_dev && off == 0) {
			*ret_base = start;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static uint64_t status_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			kb = strtoull(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

/* One pass over every address: how many were named (the rest: module+offset). */
static uint64_t pass(struct symbolizer *sym, const struct setup *su, FILE *names)
{
	char buf[NAME_MAX_LEN];
	uint64_t named = 0;

	for (size_t j = 0; j < su->naddrs; j++) {
		const struct addr *a = &su->addrs[j];
		int p = (int)(j % (size_t)su->procs);
		uint64_t at =
			su->bases[p * su->nlibs + a->lib] + a->vaddr - su->libs[a->lib].load_vaddr;

		if (symbolizer__user(sym, su->pids[p], at, buf, sizeof(buf)) == 1)
			named++;
		if (names)
			fprintf(names, "%s\n", buf);
	}
	return named;
}

/* The child's work for one budget; fills r. names_path: where the names go, or NULL. */
static void run_budget(size_t budget, const struct setup *su, const char *names_path, struct run *r)
{
	struct symbolizer_stats st;
	struct symbolizer *sym;
	FILE *names = NULL;
	double t0, t1, t2;
	int fd;

	/* "5" resets VmHWM to the current RSS: the peak is then this child's own. */
	fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "5", 1) != 1)
			r->err = -errno;
		close(fd);
	}
	r->rss_start_kb = status_kb("VmRSS");
	if (names_path) {
		names = fopen(names_path, "we");
		if (!names) {
			r->err = -errno;
			return;
		}
	}
	sym = symbolizer__new(&fd_opener_direct, budget);
	if (!sym) {
		r->err = -errno;
		if (names)
			fclose(names);
		return;
	}
	t0 = now_s();
	r->named_cold = pass(sym, su, NULL);
	t1 = now_s();
	r->named_warm = pass(sym, su, NULL);
	t2 = now_s();
	r->cold_s = t1 - t0;
	r->warm_s = t2 - t1;
	symbolizer__stats(sym, &st);
	r->cache_bytes = st.cache_bytes;
	r->elf_loaded = st.elf_loaded;
	r->elf_evicted = st.elf_evicted;
	r->hwm_kb = status_kb("VmHWM");
	if (names) {
		/* After the timed passes: writing names would count in the rate. */
		pass(sym, su, names);
		fclose(names);
	}
	symbolizer__free(sym);
}

static int measure_budget(size_t budget, const struct setup *su, const char *names_path,
			  struct run *ret)
{
	struct run *r;
	pid_t pid;
	int status, err = 0;

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return -errno;
	memset(r, 0, sizeof(*r));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (pid == 0) {
		run_budget(budget, su, names_path, r);
		_exit(r->err ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		err = r->err ? r->err : -ECHILD;
		goto cleanup;
	}
	*ret = *r;
cleanup:
	munmap(r, sizeof(*r));
	return err;
}

/*
 * Runs argv with stdin from in_path and stdout to out_path: wall seconds and peak RSS (kB)
 * of the child. -errno, or -ECHILD when it did not exit 0.
 */
static int run_tool(char *const argv[], const char *in_path, const char *out_path, double *ret_s,
		    long *ret_kb)
{
	struct rusage ru;
	double t0 = now_s();
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int in = open(in_path, O_RDONLY | O_CLOEXEC);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (in < 0 || out < 0 || null < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return -errno;
	*ret_s = now_s() - t0;
	*ret_kb = ru.ru_maxrss;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

/* The addresses, as llvm-symbolizer reads them ("FILE 0xADDRESS"), times times over. */
static int write_addrs(const char *path, const struct setup *su, size_t n, int times)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	for (int t = 0; t < times; t++)
		for (size_t j = 0; j < n; j++)
			fprintf(f, "%s 0x%" PRIx64 "\n", su->libs[su->addrs[j].lib].path,
				su->addrs[j].vaddr);
	return fclose(f) ? -errno : 0;
}

/* addr2line takes bare addresses of one file. */
static int write_bare_addrs(const char *path, const struct setup *su, size_t first, size_t n)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	for (size_t j = first; j < first + n; j++)
		fprintf(f, "0x%" PRIx64 "\n", su->addrs[j].vaddr);
	return fclose(f) ? -errno : 0;
}

/*
 * Of the n names in ours (one a line), how many llvm-symbolizer's output (name, file:line and
 * a blank line per address) agrees with: ours followed by its parameter list, or alone.
 */
static size_t agreement(const char *ours_path, const char *llvm_path, size_t n)
{
	FILE *fa = fopen(ours_path, "re"), *fb = fopen(llvm_path, "re");
	char *a = NULL, *b = NULL, *skip = NULL;
	size_t acap = 0, bcap = 0, scap = 0, same = 0, len;

	for (size_t j = 0; fa && fb && j < n; j++) {
		/* Names longer than any fixed buffer exist (C++ templates): whole lines. */
		if (getline(&a, &acap, fa) < 0 || getline(&b, &bcap, fb) < 0 ||
		    getline(&skip, &scap, fb) < 0 || getline(&skip, &scap, fb) < 0)
			break;
		/* llvm-symbolizer also prints a template function's return type. */
		len = strcspn(a, "\n");
		if (a[len] != '\n')
			break;
		a[len] = '(';
		same += !strncmp(a, b, len) && b[len] == '\n' ? 1 : strstr(b, a) != NULL;
	}
	free(a);
	free(b);
	free(skip);
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static int spawn_all(const char *prog, const struct lib *libs, int nlibs, pid_t *pids, int procs,
		     uint64_t *bases, int *ret_started)
{
	char *argv[MAX_LIBS + 2] = { (char *)prog };
	int *fds, p, err = 0;

	fds = calloc((size_t)procs, sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	for (int l = 0; l < nlibs; l++)
		argv[l + 1] = (char *)libs[l].path;
	/* All started at once: each dlopen relocates its library (about 0.1 s of CPU). */
	for (*ret_started = 0; *ret_started < procs; (*ret_started)++) {
		p = *ret_started;
		pids[p] = spawn_mapper(argv, &fds[p]);
		if (pids[p] < 0) {
			err = pids[p];
			break;
		}
	}
	for (p = 0; p < *ret_started; p++) {
		if (!err)
			err = wait_ready(fds[p]);
		else
			close(fds[p]);
		for (int l = 0; !err && l < nlibs; l++)
			err = load_base(pids[p], &libs[l].st, &bases[p * nlibs + l]);
	}
	free(fds);
	return err;
}

int main(int argc, char **argv)
{
	static const char *const default_libs[] = { LIB_DIR "libLLVM-15.so.1",
						    LIB_DIR "libLLVM-14.so.1" };
	static const size_t budgets[] = { 64u << 20, 4u << 20 };
	struct run runs[sizeof(budgets) / sizeof(budgets[0])];
	char prog[PATH_MAX], self[PATH_MAX], dir[] = "/tmp/rover-bench-sym.XXXXXX";
	char in1[PATH_MAX] = "", in2[PATH_MAX] = "", in_a2l[PATH_MAX] = "", out[PATH_MAX] = "";
	char names[PATH_MAX] = "";
	double llvm1_s = 0, llvm2_s = 0, a2l_s = 0;
	long llvm1_kb = 0, llvm2_kb = 0, a2l_kb = 0;
	size_t naddrs = DEFAULT_ADDRS, same = 0, a2l_n = 0, nfuncs = 0;
	int procs = DEFAULT_PROCS, nlibs = 0, started = 0, err, ret = 1, opt;
	struct lib libs[MAX_LIBS] = {};
	struct addr *addrs = NULL;
	uint64_t seed = 1, *bases = NULL;
	pid_t *pids = NULL;
	bool have_dir = false;
	struct setup su;
	ssize_t len;

	while ((opt = getopt(argc, argv, "p:n:")) != -1) {
		if (opt == 'p')
			procs = atoi(optarg);
		else if (opt == 'n')
			naddrs = strtoul(optarg, NULL, 10);
		else
			procs = 0;
	}
	if (procs <= 0 || !naddrs || argc - optind > MAX_LIBS) {
		fprintf(stderr, "usage: bench_symbolize [-p PROCS] [-n ADDRS] [LIBRARY...]\n");
		return 2;
	}
	for (int i = optind; i < argc; i++)
		libs[nlibs++].path = argv[i];
	for (size_t i = 0; optind == argc && i < sizeof(default_libs) / sizeof(*default_libs); i++)
		if (access(default_libs[i], R_OK) == 0)
			libs[nlibs++].path = default_libs[i];
	if (!nlibs) {
		fprintf(stderr, "bench_symbolize: no library (libllvm15 not installed?)\n");
		return 1;
	}
	if (getenv("LLVM_MAP")) {
		snprintf(prog, sizeof(prog), "%s", getenv("LLVM_MAP"));
	} else {
		len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (len < 0) {
			perror("bench_symbolize: /proc/self/exe");
			return 1;
		}
		self[len] = '\0';
		snprintf(prog, sizeof(prog), "%s/../programs/llvm_map", dirname(self));
	}
	addrs = calloc(naddrs, sizeof(*addrs));
	pids = calloc((size_t)procs, sizeof(*pids));
	bases = calloc((size_t)procs * (size_t)nlibs, sizeof(*bases));
	if (!addrs || !pids || !bases) {
		perror("bench_symbolize");
		goto cleanup;
	}
	/* Library l's block: address j inside the function of rank j * nfuncs / n, at random. */
	for (int l = 0; l < nlibs; l++) {
		struct lib *lb = &libs[l];
		struct func *funcs = NULL;

		if (stat(lb->path, &lb->st)) {
			err = -errno;
		} else {
			err = read_funcs(lb->path, &funcs, &lb->nfuncs, &lb->load_vaddr);
		}
		if (err) {
			fprintf(stderr, "bench_symbolize: reading the symbols of %s: %s\n",
				lb->path, strerror(-err));
			goto cleanup;
		}
		lb->first = naddrs * (size_t)l / (size_t)nlibs;
		lb->n = naddrs * (size_t)(l + 1) / (size_t)nlibs - lb->first;
		for (size_t j = 0; j < lb->n; j++) {
			const struct func *f =
				&funcs[(size_t)((unsigned __int128)j * lb->nfuncs / lb->n)];

			addrs[lb->first + j] = (struct addr){ f->start + rnd(&seed) % f->size, l };
		}
		nfuncs += lb->nfuncs;
		free(funcs);
	}
	err = spawn_all(prog, libs, nlibs, pids, procs, bases, &started);
	if (err) {
		fprintf(stderr, "bench_symbolize: starting %d x %s: %s\n", procs, prog,
			strerror(-err));
		goto cleanup;
	}
	su = (struct setup){ libs, nlibs, pids, procs, bases, addrs, naddrs };

	if (!mkdtemp(dir)) {
		perror("bench_symbolize: mkdtemp");
		goto cleanup;
	}
	have_dir = true;
	snprintf(names, sizeof(names), "%s/names", dir);
	for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
		err = measure_budget(budgets[b], &su, b == 0 ? names : NULL, &runs[b]);
		if (err) {
			fprintf(stderr, "bench_symbolize: budget %zu MiB: %s\n", budgets[b] >> 20,
				strerror(-err));
			goto cleanup;
		}
	}

	/* Baselines: llvm-symbolizer over the same addresses once and twice, addr2line. */
	snprintf(in1, sizeof(in1), "%s/addrs1", dir);
	snprintf(in2, sizeof(in2), "%s/addrs2", dir);
	snprintf(in_a2l, sizeof(in_a2l), "%s/addrs_a2l", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	a2l_n = libs[0].n / 10 ? libs[0].n / 10 : 1;
	if (write_addrs(in1, &su, naddrs, 1) || write_addrs(in2, &su, naddrs, 2) ||
	    write_bare_addrs(in_a2l, &su, 0, a2l_n)) {
		perror("bench_symbolize: writing addresses");
		goto cleanup;
	}
	{
		char *llvm_argv[] = { "llvm-symbolizer", NULL };
		char *a2l_argv[] = { "addr2line", "-f", "-C", "-e", (char *)libs[0].path, NULL };

		if (run_tool(llvm_argv, in2, out, &llvm2_s, &llvm2_kb) ||
		    run_tool(llvm_argv, in1, out, &llvm1_s, &llvm1_kb)) {
			llvm1_s = llvm2_s = 0;
			fprintf(stderr, "bench_symbolize: llvm-symbolizer failed, no baseline\n");
		} else {
			same = agreement(names, out, naddrs);
		}
		if (run_tool(a2l_argv, in_a2l, out, &a2l_s, &a2l_kb))
			a2l_s = 0;
	}

	{
		double lc = llvm1_s > 0 ? naddrs / llvm1_s : 0;
		double lw = llvm2_s > llvm1_s ? naddrs / (llvm2_s - llvm1_s) : 0;

		printf("== symbolization: %d processes each mapping", procs);
		for (int l = 0; l < nlibs; l++)
			printf("%s %s", l ? "," : "",
			       strrchr(libs[l].path, '/') ? strrchr(libs[l].path, '/') + 1
							  : libs[l].path);
		printf(" (%zu function symbols), %zu addresses per pass ==\n", nfuncs, naddrs);
		printf("%-36s %11s %11s %7s %8s %11s %9s %13s\n", "", "cold addr/s", "warm addr/s",
		       "named", "cache MB", "read/evict", "peak RSS", "vs llvm-sym");
		for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
			const struct run *r = &runs[b];
			char label[64], ratio[32] = "-", re[32];
			double cold = naddrs / r->cold_s, warm = naddrs / r->warm_s;

			snprintf(label, sizeof(label), "rover symbolizer, budget %zu MiB",
				 budgets[b] >> 20);
			snprintf(re, sizeof(re), "%" PRIu64 "/%" PRIu64, r->elf_loaded,
				 r->elf_evicted);
			if (lc > 0 && lw > 0)
				snprintf(ratio, sizeof(ratio), "%.2f / %.2f", cold / lc, warm / lw);
			printf("%-36s %11.0f %11.0f %6.1f%% %8.1f %11s %6.1f MB %13s\n", label,
			       cold, warm, 100.0 * (double)r->named_warm / (double)naddrs,
			       r->cache_bytes / 1048576.0, re, r->hwm_kb / 1024.0, ratio);
		}
		if (lc > 0)
			printf("%-36s %11.0f %11.0f %7s %8s %11s %6.1f MB %13s\n",
			       "llvm-symbolizer (the files, no pids)", lc, lw, "-", "-", "-",
			       (llvm1_kb > llvm2_kb ? llvm1_kb : llvm2_kb) / 1024.0, "1.00 / 1.00");
		if (a2l_s > 0)
			printf("%-36s %11.0f %11s %7s %8s %11s %6.1f MB\n",
			       "addr2line -f -C (first file, 1/10)", (double)a2l_n / a2l_s, "-",
			       "-", "-", "-", a2l_kb / 1024.0);
		printf("rover: peak RSS (VmHWM) of the symbolizing process, %.1f MB before the "
		       "symbolizer; named: function names, not FILE+0x...;\n"
		       "  read/evict: symbol tables read / evicted over both passes; vs llvm-sym: "
		       "rate ratios, cold / warm\n",
		       runs[0].rss_start_kb / 1024.0);
		if (lc > 0)
			printf("names equal to llvm-symbolizer's (parameter lists aside): %.1f%%\n",
			       100.0 * (double)same / (double)naddrs);
	}
	ret = 0;
cleanup:
	for (int p = 0; p < started; p++) {
		kill(pids[p], SIGKILL);
		waitpid(pids[p], NULL, 0);
	}
	if (have_dir) {
		const char *files[] = { in1, in2, in_a2l, out, names };

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			if (files[i][0])
				unlink(files[i]);
		rmdir(dir);
	}
	free(addrs);
	free(pids);
	free(bases);
	return ret;
}
