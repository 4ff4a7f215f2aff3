// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
/*
 * Symbolizer tests against real processes: each test compiles its own programs with gcc into a
 * temporary directory, runs them, reads the runtime addresses of their functions from their
 * stdout and names those addresses through the symbolizer. Debug-file tests write under
 * /usr/lib/debug (root) and remove what they wrote.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <elf.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/safeopen.h"
#include "shipper/stacks/demangle.h"
#include "shipper/stacks/elfsym.h"
#include "shipper/stacks/kallsyms.h"
#include "shipper/stacks/symbolize.h"

#define MAX_CHILDREN 16
#define MAX_CLEANUP 16
#define MAX_ADDRS 16

static char tmpdir[64];
static struct {
	pid_t pid;
	int in;
	FILE *out;
} children[MAX_CHILDREN];
static int nchildren;
/* Paths outside tmpdir to remove at the end, in reverse order (files, then directories). */
static char cleanup_paths[MAX_CLEANUP][PATH_MAX];
static int ncleanup;

struct sym_addr {
	char name[64];
	uint64_t addr;
};

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rover-symtest-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	nchildren = 0;
	ncleanup = 0;
}

static void reap(int i)
{
	if (children[i].pid <= 0)
		return;
	kill(children[i].pid, SIGKILL);
	waitpid(children[i].pid, NULL, 0);
	if (children[i].out)
		fclose(children[i].out);
	close(children[i].in);
	children[i].pid = 0;
}

static void teardown(void)
{
	char cmd[128];
	int i, rc;

	for (i = 0; i < nchildren; i++)
		reap(i);
	for (i = ncleanup - 1; i >= 0; i--)
		if (unlink(cleanup_paths[i]) && errno == EISDIR)
			rmdir(cleanup_paths[i]);
	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		rc = system(cmd);
		(void)rc;
	}
}

TestSuite(symbolize, .init = setup, .fini = teardown);

static void add_cleanup(const char *path)
{
	cr_assert_lt(ncleanup, MAX_CLEANUP);
	snprintf(cleanup_paths[ncleanup++], PATH_MAX, "%s", path);
}

/* mkdir -p that records each directory it creates for teardown. */
static void mkdirs(const char *path)
{
	char p[PATH_MAX];
	size_t i;

	snprintf(p, sizeof(p), "%s", path);
	for (i = 1; p[i]; i++) {
		if (p[i] != '/')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) == 0)
			add_cleanup(p);
		p[i] = '/';
	}
	if (mkdir(p, 0755) == 0)
		add_cleanup(p);
}

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	cr_assert(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "command failed: %s", cmd);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/*
 * The C test program: functions with known names, a static one (in .symtab only), and
 * rover_anchor, a 1-byte sized function followed by 64 bytes no symbol covers. It prints
 * "name address" lines, "ready", and waits for stdin to close. TAG makes each build (and so
 * its build-id) unique to the test.
 */
static const char prog_c[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"__attribute__((noinline)) int rover_alpha(int x)\n"
	"{ volatile int s = 0; for (int i = 0; i < x; i++) s += i * 3; return s; }\n"
	"__attribute__((noinline)) static int rover_gamma(int x)\n"
	"{ volatile int s = 1; for (int i = 0; i < x; i++) s *= i + 7; return s; }\n"
	"extern void rover_anchor(void);\n"
	"__asm__(\".pushsection .text\\n.globl rover_anchor\\n.type rover_anchor,@function\\n\"\n"
	"        \"rover_anchor:\\n\\tret\\n.size rover_anchor, 1\\n\\t.fill 64, 1, 0x90\\n\"\n"
	"        \".popsection\\n\");\n"
	"const char *rover_tag = TAG;\n"
	"int main(void)\n"
	"{\n"
	"\tchar c;\n"
	"\tprintf(\"rover_alpha %p\\n\", (void *)rover_alpha);\n"
	"\tprintf(\"rover_gamma %p\\n\", (void *)rover_gamma);\n"
	"\tprintf(\"rover_anchor %p\\n\", (void *)rover_anchor);\n"
	"\tprintf(\"ready %s\\n\", rover_tag);\n"
	"\tfflush(stdout);\n"
	"\twhile (read(0, &c, 1) > 0)\n"
	"\t\t;\n"
	"\treturn rover_alpha(2) + rover_gamma(2);\n"
	"}\n";

/* Builds prog_c as dir/name with extra gcc flags; returns the path in ret_path. */
static void build_prog(const char *name, const char *flags, char *ret_path)
{
	char src[PATH_MAX];

	snprintf(src, sizeof(src), "%s/prog.c", tmpdir);
	write_file(src, prog_c);
	snprintf(ret_path, PATH_MAX, "%s/%s", tmpdir, name);
	sh("gcc -O1 -g -fno-inline %s '-DTAG=\"%s/%s\"' %s -o %s", flags, tmpdir, name, src,
	   ret_path);
}

/* Starts exe [arg1 [arg2]], reads its "name address" lines up to "ready". Returns the pid. */
static pid_t spawn_args(const char *exe, const char *arg1, const char *arg2,
			struct sym_addr *ret_addrs, int *ret_n)
{
	int in[2], out[2], n = 0;
	char line[512];
	unsigned long long a;
	pid_t pid;
	FILE *f;

	cr_assert_lt(nchildren, MAX_CHILDREN);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(exe, exe, arg1, arg2, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f = fdopen(out[0], "r");
	cr_assert_not_null(f);
	children[nchildren].pid = pid;
	children[nchildren].in = in[1];
	children[nchildren].out = f;
	nchildren++;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ready", 5)) {
			*ret_n = n;
			return pid;
		}
		if (n < MAX_ADDRS && sscanf(line, "%63s %llx", ret_addrs[n].name, &a) == 2) {
			ret_addrs[n].addr = a;
			n++;
		}
	}
	cr_assert_fail("%s exited before printing ready", exe);
	return -1;
}

static pid_t spawn(const char *exe, struct sym_addr *ret_addrs, int *ret_n)
{
	return spawn_args(exe, NULL, NULL, ret_addrs, ret_n);
}

static uint64_t addr_of(const struct sym_addr *addrs, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(addrs[i].name, name))
			return addrs[i].addr;
	cr_assert_fail("no address printed for %s", name);
	return 0;
}

/* "base+0xOFF" as the fallback should name addr of pid, from the test's own read of maps. */
static void expected_fallback(int pid, uint64_t addr, char *buf, size_t len)
{
	unsigned long long start, end, off;
	char path[PATH_MAX], line[PATH_MAX + 256], *base;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start, &end, &off, path) < 3)
			continue;
		if (addr >= start && addr < end) {
			fclose(f);
			base = strrchr(path, '/');
			snprintf(buf, len, "%s+0x%" PRIx64, base ? base + 1 : path,
				 (uint64_t)(addr - start + off));
			return;
		}
	}
	fclose(f);
	cr_assert_fail("0x%" PRIx64 " not mapped in %d", addr, pid);
}

static void expect_user(struct symbolizer *sym, int pid, uint64_t addr, const char *want,
			int want_rc)
{
	char buf[256];
	int rc;

	rc = symbolizer__user(sym, pid, addr, buf, sizeof(buf));
	cr_expect_eq(rc, want_rc, "0x%" PRIx64 ": rc %d, want %d (%s)", addr, rc, want_rc, buf);
	cr_expect_str_eq(buf, want, "0x%" PRIx64 ": got \"%s\", want \"%s\"", addr, buf, want);
}

static void check_prog(struct symbolizer *sym, const char *exe)
{
	struct sym_addr addrs[MAX_ADDRS];
	char want[PATH_MAX];
	uint64_t anchor;
	pid_t pid;
	int n;

	pid = spawn(exe, addrs, &n);
	expect_user(sym, pid, addr_of(addrs, n, "rover_alpha"), "rover_alpha", 1);
	expect_user(sym, pid, addr_of(addrs, n, "rover_alpha") + 4, "rover_alpha", 1);
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, "rover_gamma", 1);
	expect_user(sym, pid, addr_of(addrs, n, "rover_anchor"), "rover_anchor", 1);
	/* Inside the 64 bytes after rover_anchor that no symbol covers. */
	anchor = addr_of(addrs, n, "rover_anchor");
	expected_fallback(pid, anchor + 16, want, sizeof(want));
	expect_user(sym, pid, anchor + 16, want, 0);
}

Test(symbolize, pie_executable)
{
	struct symbolizer *sym;
	char exe[PATH_MAX];

	build_prog("pie", "-fPIE -pie", exe);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	check_prog(sym, exe);
	symbolizer__free(sym);
}

Test(symbolize, non_pie_executable)
{
	struct symbolizer *sym;
	char exe[PATH_MAX];

	build_prog("nopie", "-fno-pie -no-pie", exe);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	check_prog(sym, exe);
	symbolizer__free(sym);
}

Test(symbolize, unmapped_and_bad_arguments)
{
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char exe[PATH_MAX], buf[64];
	pid_t pid;
	int n;

	build_prog("pie", "-fPIE -pie", exe);
	pid = spawn(exe, addrs, &n);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expect_user(sym, pid, 0x10, "[unknown]", 0);
	expect_user(sym, pid, 0xffffffffffff0000ull, "[unknown]", 0);
	/* A pid that does not exist. */
	expect_user(sym, 0x3fffffff, addr_of(addrs, n, "rover_alpha"), "[unknown]", 0);
	cr_expect_eq(symbolizer__user(sym, -1, 0x1000, buf, sizeof(buf)), -EINVAL);
	cr_expect_str_eq(buf, "[unknown]");
	cr_expect_eq(symbolizer__user(NULL, pid, 0x1000, buf, sizeof(buf)), -EINVAL);
	cr_expect_str_eq(buf, "[unknown]");
	/* Truncation still terminates. */
	memset(buf, 'x', sizeof(buf));
	cr_expect_eq(symbolizer__user(sym, pid, addr_of(addrs, n, "rover_alpha"), buf, 6), 1);
	cr_expect_str_eq(buf, "rover");
	cr_expect_eq(symbolizer__load_pid(sym, 0x3fffffff), -ENOENT);
	symbolizer__free(sym);
	cr_expect_null(symbolizer__new(NULL, 0));
}

Test(symbolize, shared_library)
{
	static const char lib_c[] =
		"__attribute__((noinline)) static int rover_lib_hidden(int x)\n"
		"{ volatile int s = 0; for (int i = 0; i < x; i++) s += i ^ 5; return s; }\n"
		"__attribute__((noinline)) int rover_lib_work(int x) { return rover_lib_hidden(x) "
		"+ 1; }\n"
		"void *rover_lib_where(void) { return (void *)rover_lib_hidden; }\n";
	static const char main_c[] =
		"#include <stdio.h>\n#include <unistd.h>\n"
		"int rover_lib_work(int x);\nvoid *rover_lib_where(void);\n"
		"int main(void) {\n\tchar c;\n"
		"\tprintf(\"work %p\\n\", (void *)rover_lib_work);\n"
		"\tprintf(\"hidden %p\\n\", rover_lib_where());\n"
		"\tprintf(\"ready\\n\");\n\tfflush(stdout);\n"
		"\twhile (read(0, &c, 1) > 0)\n\t\t;\n\treturn rover_lib_work(1);\n}\n";
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char path[PATH_MAX];
	int i, n;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/lib.c", tmpdir);
	write_file(path, lib_c);
	snprintf(path, sizeof(path), "%s/main.c", tmpdir);
	write_file(path, main_c);
	/*
	 * Two layouts: the usual one (text vaddr == file offset), and one whose text segment
	 * sits at vaddr 0x8000 but file offset 0x2000, which needs the PT_LOAD translation.
	 */
	sh("cd %s && gcc -O1 -g -fno-inline -shared -fPIC -o librovera.so lib.c", tmpdir);
	sh("cd %s && gcc -O1 -g -fno-inline -shared -fPIC -o libroverb.so lib.c "
	   "-Wl,--section-start=.text=0x8000",
	   tmpdir);
	sh("cd %s && gcc -O1 -fPIE -pie -o use_a main.c -L. -lrovera -Wl,-rpath,%s", tmpdir,
	   tmpdir);
	sh("cd %s && gcc -O1 -fPIE -pie -o use_b main.c -L. -lroverb -Wl,-rpath,%s", tmpdir,
	   tmpdir);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/use_%c", tmpdir, 'a' + i);
		pid = spawn(path, addrs, &n);
		cr_assert_eq(symbolizer__load_pid(sym, pid), 0);
		expect_user(sym, pid, addr_of(addrs, n, "work") + 1, "rover_lib_work", 1);
		expect_user(sym, pid, addr_of(addrs, n, "hidden") + 3, "rover_lib_hidden", 1);
	}
	symbolizer__free(sym);
}

Test(symbolize, cplusplus_demangled)
{
	static const char prog_cc[] =
		"#include <cstdio>\n#include <unistd.h>\n"
		"namespace demo {\n"
		"struct Burner {\n"
		"\t__attribute__((noinline)) static long spin(int n)\n"
		"\t{ volatile long s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n"
		"\tlong burn(int n) const;\n"
		"\tlong k = 3;\n"
		"};\n"
		"__attribute__((noinline)) long Burner::burn(int n) const\n"
		"{ volatile long s = k; for (int i = 0; i < n; i++) s ^= i; return s; }\n"
		"template <typename T> __attribute__((noinline)) T twice(T v)\n"
		"{ volatile T x = v; return x + x; }\n"
		"}\n"
		"int main()\n{\n\tchar c;\n\tdemo::Burner b;\n"
		"\tstd::printf(\"spin %p\\n\", (void *)&demo::Burner::spin);\n"
		"\tstd::printf(\"burn %p\\n\", (void *)(b.*(&demo::Burner::burn)));\n"
		"\tstd::printf(\"twice %p\\n\", (void *)&demo::twice<int>);\n"
		"\tstd::printf(\"ready\\n\");\n\tstd::fflush(stdout);\n"
		"\twhile (read(0, &c, 1) > 0)\n\t\t;\n"
		"\treturn (int)(b.burn(1) + demo::twice(1) + demo::Burner::spin(1));\n}\n";
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char path[PATH_MAX];
	pid_t pid;
	int n;

	snprintf(path, sizeof(path), "%s/prog.cc", tmpdir);
	write_file(path, prog_cc);
	sh("cd %s && g++ -O1 -g -fno-inline -Wno-pmf-conversions -o cxx prog.cc", tmpdir);
	snprintf(path, sizeof(path), "%s/cxx", tmpdir);
	pid = spawn(path, addrs, &n);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expect_user(sym, pid, addr_of(addrs, n, "spin") + 2, "demo::Burner::spin", 1);
	expect_user(sym, pid, addr_of(addrs, n, "burn") + 2, "demo::Burner::burn", 1);
	expect_user(sym, pid, addr_of(addrs, n, "twice") + 1, "demo::twice<int>", 1);
	/* The second lookup reads the cached demangled name. */
	expect_user(sym, pid, addr_of(addrs, n, "spin") + 1, "demo::Burner::spin", 1);
	symbolizer__free(sym);
}

Test(symbolize, demangle_names)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "_ZN4demo6Burner4spinEi", "demo::Burner::spin" },
		{ "_ZNK4demo6Burner3getEv", "demo::Burner::get" },
		{ "_Z3maxIiET_S0_S0_", "max<int>" },
		{ "_ZN3std2rt10lang_start17h0123456789abcdefE", "std::rt::lang_start" },
		{ "_ZN4core3ptr13drop_in_place17h00112233aabbccddE", "core::ptr::drop_in_place" },
		{ "_RNvCs1234_7mycrate3foo", "mycrate::foo" },
	};
	char buf[256], small[8];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(demangle__name(cases[i].in, buf, sizeof(buf)), 1, "%s", cases[i].in);
		cr_expect_str_eq(buf, cases[i].out);
	}
	cr_expect_eq(demangle__name("main", buf, sizeof(buf)), 0);
	cr_expect_eq(demangle__name("_Znotmangled", buf, sizeof(buf)), 0);
	cr_expect_eq(demangle__name("_ZN4demo6Burner4spinEi", small, sizeof(small)), 1);
	cr_expect_str_eq(small, "demo::B");
}

/* The build-id of exe in hex, as readelf shows it: ret_hex holds 128 bytes. */
static void read_build_id(const char *exe, char *ret_hex)
{
	char cmd[PATH_MAX + 64], line[512], *p;
	FILE *f;

	ret_hex[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n %s", exe);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "Build ID: ");
		if (p)
			sscanf(p + 10, "%127s", ret_hex);
	}
	pclose(f);
	cr_assert_gt(strlen(ret_hex), 2, "%s has no build-id", exe);
}

Test(symbolize, stripped_with_build_id_debug_file)
{
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char exe[PATH_MAX], id[128], dir[512], dbg[1024], want[PATH_MAX];
	pid_t pid;
	int n;

	build_prog("stripped", "-fPIE -pie -Wl,--build-id=sha1", exe);
	read_build_id(exe, id);
	snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", ELFSYM_DEBUG_ROOT, id);
	snprintf(dbg, sizeof(dbg), "%s/%s.debug", dir, id + 2);
	sh("objcopy --only-keep-debug %s %s.debug && strip -s %s", exe, exe, exe);
	mkdirs(dir);
	add_cleanup(dbg);
	sh("cp %s.debug %s", exe, dbg);

	pid = spawn(exe, addrs, &n);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	/* rover_gamma is static: only the debug file's .symtab knows it. */
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, "rover_gamma", 1);
	expect_user(sym, pid, addr_of(addrs, n, "rover_alpha") + 2, "rover_alpha", 1);
	symbolizer__free(sym);

	/* Without the debug file: the fallback names file and offset. */
	cr_assert_eq(unlink(dbg), 0);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expected_fallback(pid, addr_of(addrs, n, "rover_gamma") + 2, want, sizeof(want));
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, want, 0);
	symbolizer__free(sym);
}

Test(symbolize, stripped_with_debuglink)
{
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char exe[PATH_MAX], dir[512], dbg[1024], want[PATH_MAX];
	pid_t pid;
	int n;

	/* No build-id: only the debuglink can find the debug file. */
	build_prog("linked", "-fPIE -pie -Wl,--build-id=none", exe);
	sh("cd %s && objcopy --only-keep-debug linked linked.dbg && strip -s linked && "
	   "objcopy --add-gnu-debuglink=linked.dbg linked && mv linked.dbg kept.dbg",
	   tmpdir);

	/* ELFSYM_DEBUG_ROOT/<dir>/<name>. */
	snprintf(dir, sizeof(dir), "%s%s", ELFSYM_DEBUG_ROOT, tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/linked.dbg", dir);
	mkdirs(dir);
	add_cleanup(dbg);
	sh("cp %s/kept.dbg %s", tmpdir, dbg);
	pid = spawn(exe, addrs, &n);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, "rover_gamma", 1);
	symbolizer__free(sym);
	cr_assert_eq(unlink(dbg), 0);

	/* <dir>/.debug/<name>. */
	sh("mkdir %s/.debug && cp %s/kept.dbg %s/.debug/linked.dbg", tmpdir, tmpdir, tmpdir);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, "rover_gamma", 1);
	symbolizer__free(sym);

	/* A debug file whose CRC does not match is not used. */
	sh("printf x >> %s/.debug/linked.dbg", tmpdir);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expected_fallback(pid, addr_of(addrs, n, "rover_gamma") + 2, want, sizeof(want));
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, want, 0);
	symbolizer__free(sym);
}

Test(symbolize, shared_by_build_id_and_kept_after_exit)
{
	struct sym_addr a1[MAX_ADDRS], a2[MAX_ADDRS];
	struct symbolizer_stats st;
	struct symbolizer *sym, *early;
	char exe[PATH_MAX];
	uint64_t gamma;
	pid_t p1, p2;
	int n1, n2;

	build_prog("one", "-fPIE -pie -Wl,--build-id=sha1", exe);
	/* A copy: another inode, the same build-id. */
	sh("cp %s %s/two", exe, tmpdir);
	p1 = spawn(exe, a1, &n1);
	snprintf(exe, sizeof(exe), "%s/two", tmpdir);
	p2 = spawn(exe, a2, &n2);

	sym = symbolizer__new(&fd_opener_direct, 0);
	early = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	cr_assert_not_null(early);
	expect_user(sym, p1, addr_of(a1, n1, "rover_alpha"), "rover_alpha", 1);
	expect_user(sym, p2, addr_of(a2, n2, "rover_gamma"), "rover_gamma", 1);
	symbolizer__stats(sym, &st);
	cr_expect_eq(st.elf_loaded, 1, "elf_loaded %" PRIu64, st.elf_loaded);
	cr_expect_eq(st.lookups, 2);
	cr_expect_eq(st.unnamed, 0);
	cr_expect_gt(st.cache_bytes, 0);

	/* early only loaded p1 (maps and files) before it exited, and named nothing yet. */
	cr_assert_eq(symbolizer__load_pid(early, p1), 0);
	gamma = addr_of(a1, n1, "rover_gamma");
	reap(0);
	/* The mappings and the symbol table outlive the process. */
	expect_user(sym, p1, gamma, "rover_gamma", 1);
	/* What load_pid read outlives the process: a short-lived target is still named. */
	expect_user(early, p1, gamma, "rover_gamma", 1);

	symbolizer__forget_pid(sym, p1);
	expect_user(sym, p1, gamma, "[unknown]", 0);
	symbolizer__free(sym);
	symbolizer__free(early);
}

static const char *find_kernel_symbol(const char *const *names, uint64_t *ret_addr)
{
	char line[1024], name[512], type;
	unsigned long long a;
	FILE *f;
	size_t i;

	f = fopen("/proc/kallsyms", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %511s", &a, &type, name) != 3 ||
		    (type != 'T' && type != 't'))
			continue;
		for (i = 0; names[i]; i++) {
			if (!strcmp(name, names[i]) && a) {
				fclose(f);
				*ret_addr = a;
				return names[i];
			}
		}
	}
	fclose(f);
	return NULL;
}

Test(symbolize, kernel_function)
{
	static const char *const names[] = { "schedule", "do_sys_openat2", "vfs_read", NULL };
	struct symbolizer *sym;
	const char *name;
	uint64_t addr = 0;
	char buf[128];

	name = find_kernel_symbol(names, &addr);
	if (!name)
		cr_skip_test("/proc/kallsyms shows no addresses here");
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	cr_expect_eq(symbolizer__kernel(sym, addr + 1, buf, sizeof(buf)), 1);
	cr_expect_str_eq(buf, name);
	cr_expect_eq(symbolizer__kernel(sym, addr, buf, sizeof(buf)), 1);
	cr_expect_str_eq(buf, name);
	cr_expect_eq(symbolizer__kernel(sym, 0x1000, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "[unknown]");
	symbolizer__free(sym);
}

/*
 * An opener serving fixed text for kallsyms and maps, fixed bytes for every mapped file, and
 * perf_map_len bytes of perf_map (strlen when 0) as every perf map.
 */
struct fake {
	const char *kallsyms;
	const char *maps;
	const void *file;
	size_t file_len;
	const char *perf_map;
	size_t perf_map_len;
	int perf_map_opens;
};

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("rover-test", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (len && write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static int fake_open_maps(void *ctx, int pid)
{
	const struct fake *f = ctx;

	(void)pid;
	return f->maps ? memfd_with(f->maps, strlen(f->maps)) : -ENOENT;
}

static int fake_open_mapped_file(void *ctx, int pid, uint64_t start, uint64_t end)
{
	const struct fake *f = ctx;

	(void)pid;
	(void)start;
	(void)end;
	return f->file ? memfd_with(f->file, f->file_len) : -ENOENT;
}

static int fake_open_kallsyms(void *ctx)
{
	const struct fake *f = ctx;

	return f->kallsyms ? memfd_with(f->kallsyms, strlen(f->kallsyms)) : -ENOENT;
}

static int fake_open_perf_map(void *ctx, int pid)
{
	struct fake *f = ctx;

	(void)pid;
	f->perf_map_opens++;
	if (!f->perf_map)
		return -ENOENT;
	return memfd_with(f->perf_map, f->perf_map_len ? f->perf_map_len : strlen(f->perf_map));
}

static struct symbolizer *fake_symbolizer(struct fake *f, size_t budget)
{
	struct fd_opener o = {
		.open_maps = fake_open_maps,
		.open_mapped_file = fake_open_mapped_file,
		.open_kallsyms = fake_open_kallsyms,
		.ctx = f,
		.open_perf_map = fake_open_perf_map,
	};
	struct symbolizer *sym = symbolizer__new(&o, budget);

	cr_assert_not_null(sym);
	return sym;
}

static void expect_kernel(struct symbolizer *sym, uint64_t addr, const char *want)
{
	char buf[128];

	symbolizer__kernel(sym, addr, buf, sizeof(buf));
	cr_expect_str_eq(buf, want, "0x%" PRIx64 ": got %s, want %s", addr, buf, want);
}

Test(symbolize, kallsyms_parsing)
{
	struct fake f = {
		.kallsyms = "ffffffff81000000 T _stext\n"
			    "ffffffff81000000 t startup_64\n"
			    "ffffffff81001000 T do_one\n"
			    "ffffffff81001000 t do_one_alias\n"
			    "ffffffff81002000 T do_two\n"
			    "ffffffff81003000 D some_data\n"
			    "ffffffff81004000 T _etext\n"
			    "garbage line without fields\n"
			    "ffffffffzzzz T bad_hex\n"
			    "ffffffffc0002000 t mod_b_fn\t[mod_b]\n"
			    "ffffffffc0001000 t mod_a_fn\t[mod_a]\n"
			    "ffffffffc0001100 t mod_a_fn2\t[mod_a]\n"
			    "ffffffffc0001200 t broken\t[mod_a\n"
			    "0000000000000000 A fixed_percpu\n"
			    "ffffffffc0003000 T last_fn\t[mod_c]",
	};
	struct symbolizer *sym = fake_symbolizer(&f, 0);

	expect_kernel(sym, 0xffffffff81000010ull, "_stext");
	expect_kernel(sym, 0xffffffff81001010ull, "do_one");
	expect_kernel(sym, 0xffffffff81002fffull, "do_two");
	/* Data and what follows _etext are not functions. */
	expect_kernel(sym, 0xffffffff81003010ull, "[unknown]");
	expect_kernel(sym, 0xffffffff81004010ull, "[unknown]");
	expect_kernel(sym, 0xffffffff80000000ull, "[unknown]");
	expect_kernel(sym, 0xffffffffc0001004ull, "mod_a_fn");
	expect_kernel(sym, 0xffffffffc0001204ull, "mod_a_fn2");
	/* The last function of a module ends within 64 KiB. */
	expect_kernel(sym, 0xffffffffc0002100ull, "mod_b_fn");
	expect_kernel(sym, 0xffffffffc0003100ull, "last_fn");
	expect_kernel(sym, 0xffffffffc0103000ull, "[unknown]");
	symbolizer__free(sym);

	/* What an unprivileged reader sees: every address 0. */
	f.kallsyms = "0000000000000000 T _stext\n0000000000000000 T schedule\n";
	sym = fake_symbolizer(&f, 0);
	expect_kernel(sym, 0, "[unknown]");
	expect_kernel(sym, 0xffffffff81000000ull, "[unknown]");
	symbolizer__free(sym);

	f.kallsyms = NULL;
	sym = fake_symbolizer(&f, 0);
	expect_kernel(sym, 0xffffffff81000000ull, "[unknown]");
	symbolizer__free(sym);
}

static void fill_random(unsigned char *p, size_t n, unsigned *seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rand_r(seed);
}

static void *read_whole(const char *path, size_t *ret_len)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	p = malloc((size_t)st.st_size);
	cr_assert_not_null(p);
	cr_assert_eq(read(fd, p, (size_t)st.st_size), st.st_size);
	close(fd);
	*ret_len = (size_t)st.st_size;
	return p;
}

/* Opens, loads and queries one candidate ELF image; any outcome but a crash is fine. */
static void poke_elf(void *buf, size_t len, bool via_fd)
{
	struct elfsym *es;
	char name[128];
	uint64_t a;
	int fd = -1;

	if (via_fd) {
		fd = memfd_with(buf, len);
		cr_assert_geq(fd, 0);
		es = elfsym__open(fd);
	} else {
		es = elfsym__open_memory(buf, len);
	}
	if (es) {
		elfsym__load_symbols(es, "/nonexistent/dir/file");
		for (a = 0; a < 0x3000; a += 0x40)
			elfsym__name(es, elfsym__vaddr(es, a + 0x1000, 0x1000, 0), name,
				     sizeof(name));
		elfsym__free(es);
	}
	if (fd >= 0)
		close(fd);
}

Test(symbolize, garbage_elf_files)
{
	unsigned char *orig, *buf;
	unsigned seed = 12345;
	char exe[PATH_MAX];
	size_t len, cut, i, j, flips;

	build_prog("fuzzme", "-fPIE -pie", exe);
	orig = read_whole(exe, &len);
	buf = malloc(len);
	cr_assert_not_null(buf);

	/* Random bytes, with and without a valid ELF identification. */
	for (i = 0; i < 500; i++) {
		cut = (size_t)rand_r(&seed) % len;
		fill_random(buf, cut, &seed);
		if (i % 2 && cut >= EI_NIDENT)
			memcpy(buf, orig, EI_NIDENT);
		poke_elf(buf, cut, i % 4 == 0);
	}
	/* Truncations of the real file. */
	for (cut = 0; cut < len; cut += len / 97 + 1) {
		memcpy(buf, orig, cut);
		poke_elf(buf, cut, cut % 2);
	}
	/* The real file with bytes changed: headers, tables, string tables. */
	for (i = 0; i < 3000; i++) {
		memcpy(buf, orig, len);
		flips = 1 + (size_t)rand_r(&seed) % 16;
		for (j = 0; j < flips; j++) {
			size_t at = (size_t)rand_r(&seed) % (i % 2 ? 256 : len);

			buf[at] = (unsigned char)rand_r(&seed);
		}
		poke_elf(buf, len, i % 8 == 0);
	}
	/* The unchanged file still gives its functions. */
	memcpy(buf, orig, len);
	{
		struct elfsym *es = elfsym__open_memory(buf, len);
		char name[64];
		size_t k;
		bool found = false;

		cr_assert_not_null(es);
		cr_assert_eq(elfsym__load_symbols(es, NULL), 0);
		cr_assert_gt(elfsym__count(es), 0);
		for (k = 0; k < 0x4000 && !found; k++)
			found = elfsym__name(es, k, name, sizeof(name)) == 1 &&
				!strcmp(name, "rover_alpha");
		cr_expect(found, "rover_alpha not found in the unchanged file");
		elfsym__free(es);
	}
	free(buf);
	free(orig);
}

Test(symbolize, garbage_through_the_opener)
{
	static const char maps[] =
		"00400000-00500000 r-xp 00000000 08:01 1234 /fake/junk.so\n"
		"00600000-00700000 r-xp 00001000 08:01 1235 /fake/other.so (deleted)\n"
		"00800000-00900000 rw-p 00000000 08:01 1236 /fake/data\n"
		"00a00000-00b00000 r-xp 00000000 00:00 0 \n"
		"zzzz-yyyy r-xp 0 0:0 1 /bad\n"
		"00c00000-00b00000 r-xp 00000000 08:01 1237 /fake/reversed\n"
		"00d00000-00e00000 r-xp 00000000 08:01 1238 /fake/no-newline";
	unsigned char junk[4096];
	unsigned seed = 7;
	struct symbolizer_stats st;
	struct symbolizer *sym;
	struct fake f = { .maps = maps, .file = junk, .file_len = sizeof(junk) };
	int i;

	fill_random(junk, sizeof(junk), &seed);
	memcpy(junk, ELFMAG, SELFMAG);
	sym = fake_symbolizer(&f, 0);
	expect_user(sym, 42, 0x400010, "junk.so+0x10", 0);
	expect_user(sym, 42, 0x600010, "other.so+0x1010", 0);
	expect_user(sym, 42, 0x800010, "[unknown]", 0);
	expect_user(sym, 42, 0xa00010, "[unknown]", 0);
	expect_user(sym, 42, 0xc00010, "[unknown]", 0);
	expect_user(sym, 42, 0xd00010, "no-newline+0x10", 0);
	/* The non-ELF file is remembered, not read again. */
	expect_user(sym, 43, 0x400020, "junk.so+0x20", 0);
	symbolizer__stats(sym, &st);
	cr_expect_eq(st.elf_loaded, 0);
	cr_expect_eq(st.unnamed, st.lookups);
	symbolizer__free(sym);

	/* Random maps text: anything but a crash. */
	for (i = 0; i < 200; i++) {
		char text[2048];
		char buf[64];
		size_t k;

		for (k = 0; k < sizeof(text) - 1; k++)
			text[k] = "0123456789abcdef- :/rwxp\n"[rand_r(&seed) % 25];
		text[k] = '\0';
		f.maps = text;
		sym = fake_symbolizer(&f, 0);
		symbolizer__user(sym, 42, (uint64_t)rand_r(&seed) << 8, buf, sizeof(buf));
		symbolizer__free(sym);
	}
}

Test(symbolize, garbage_kallsyms)
{
	unsigned seed = 99;
	struct kallsyms *ks;
	char text[8192];
	size_t k;
	int i, fd;

	for (i = 0; i < 300; i++) {
		for (k = 0; k < sizeof(text) - 1; k++)
			text[k] = "0123456789abcdef tTwWdD\t[]\nx"[rand_r(&seed) % 28];
		fd = memfd_with(text, sizeof(text) - 1);
		cr_assert_geq(fd, 0);
		ks = kallsyms__load(fd);
		close(fd);
		for (k = 0; k < 64; k++)
			kallsyms__lookup(ks, (uint64_t)rand_r(&seed) << (k % 40));
		kallsyms__free(ks);
	}
}

/* A program with nfuncs functions, printing the addresses of a few of them. */
static void build_many(const char *name, int tag, int nfuncs, char *ret_path)
{
	char src[PATH_MAX];
	FILE *f;
	int i;

	snprintf(src, sizeof(src), "%s/%s.c", tmpdir, name);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	fprintf(f, "#include <stdio.h>\n#include <unistd.h>\n");
	for (i = 0; i < nfuncs; i++)
		fprintf(f,
			"__attribute__((noinline)) int rover_f%d_%d(int x) { return x * %d + %d; "
			"}\n",
			tag, i, i + 1, tag);
	fprintf(f, "int main(void)\n{\n\tchar c;\n");
	for (i = 0; i < nfuncs; i += nfuncs / 4)
		fprintf(f, "\tprintf(\"rover_f%d_%d %%p\\n\", (void *)rover_f%d_%d);\n", tag, i,
			tag, i);
	fprintf(f, "\tprintf(\"ready\\n\");\n\tfflush(stdout);\n"
		   "\twhile (read(0, &c, 1) > 0)\n\t\t;\n\treturn 0;\n}\n");
	cr_assert_eq(fclose(f), 0);
	snprintf(ret_path, PATH_MAX, "%s/%s", tmpdir, name);
	sh("gcc -O0 -fPIE -pie -o %s %s", ret_path, src);
}

Test(symbolize, budget_evicts)
{
	enum { NPROGS = 4, NFUNCS = 800, BUDGET = 64 << 10 };
	struct sym_addr addrs[NPROGS][MAX_ADDRS];
	struct symbolizer_stats st;
	struct symbolizer *sym;
	char exe[PATH_MAX], name[32];
	int n[NPROGS], round, p, k;
	pid_t pids[NPROGS];

	for (p = 0; p < NPROGS; p++) {
		snprintf(name, sizeof(name), "many%d", p);
		build_many(name, p, NFUNCS, exe);
		pids[p] = spawn(exe, addrs[p], &n[p]);
		cr_assert_eq(n[p], 4);
	}
	sym = symbolizer__new(&fd_opener_direct, BUDGET);
	cr_assert_not_null(sym);
	for (round = 0; round < 3; round++) {
		for (p = 0; p < NPROGS; p++) {
			for (k = 0; k < n[p]; k++) {
				expect_user(sym, pids[p], addrs[p][k].addr + 1, addrs[p][k].name,
					    1);
				symbolizer__stats(sym, &st);
				cr_assert_leq(st.cache_bytes, BUDGET, "cache_bytes %" PRIu64,
					      st.cache_bytes);
			}
		}
	}
	symbolizer__stats(sym, &st);
	cr_expect_gt(st.elf_evicted, 0);
	cr_expect_gt(st.elf_loaded, NPROGS, "elf_loaded %" PRIu64, st.elf_loaded);
	cr_expect_eq(st.lookups, 3 * NPROGS * 4);
	cr_expect_eq(st.unnamed, 0);
	symbolizer__free(sym);

	/* With the default budget every table stays. */
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	for (round = 0; round < 2; round++)
		for (p = 0; p < NPROGS; p++)
			expect_user(sym, pids[p], addrs[p][0].addr, addrs[p][0].name, 1);
	symbolizer__stats(sym, &st);
	cr_expect_eq(st.elf_evicted, 0);
	cr_expect_eq(st.elf_loaded, NPROGS);
	cr_expect_gt(st.cache_bytes, BUDGET);
	symbolizer__free(sym);
}

/* ---- JIT code named from perf maps ---- */

/*
 * A process with 64 KiB of anonymous executable memory, as a JIT has: it prints "region
 * ADDRESS" and "pid PID" (its pid as /proc here names it). "chroot DIR" runs it chrooted to
 * DIR; "ns" in a new mount and pid namespace (pid 1 there) with a tmpfs of its own on /tmp.
 */
static const char jit_c[] =
	"#define _GNU_SOURCE\n"
	"#include <sched.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	"#include <sys/mman.h>\n#include <sys/mount.h>\n#include <sys/wait.h>\n"
	"#include <unistd.h>\n"
	"static long self_pid(void)\n"
	"{\n\tchar b[32];\n\tssize_t n = readlink(\"/proc/self\", b, sizeof(b) - 1);\n"
	"\tif (n <= 0)\n\t\texit(1);\n\tb[n] = 0;\n\treturn strtol(b, NULL, 10);\n}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tlong pid = self_pid();\n"
	"\tpid_t child;\n\tvoid *region;\n\tchar c;\n"
	"\tif (argc > 2 && !strcmp(argv[1], \"chroot\") && (chroot(argv[2]) || chdir(\"/\")))\n"
	"\t\treturn 1;\n"
	"\tif (argc > 1 && !strcmp(argv[1], \"ns\")) {\n"
	"\t\tif (unshare(CLONE_NEWNS | CLONE_NEWPID) ||\n"
	"\t\t    mount(NULL, \"/\", NULL, MS_REC | MS_PRIVATE, NULL))\n"
	"\t\t\treturn 1;\n"
	"\t\tchild = fork();\n"
	"\t\tif (child < 0)\n\t\t\treturn 1;\n"
	"\t\tif (child > 0) {\n\t\t\twaitpid(child, NULL, 0);\n\t\t\treturn 0;\n\t\t}\n"
	"\t\tif (mount(\"rover\", \"/tmp\", \"tmpfs\", 0, NULL))\n\t\t\treturn 1;\n"
	"\t\tpid = self_pid();\n"
	"\t}\n"
	"\tregion = mmap(NULL, 1 << 16, PROT_READ | PROT_EXEC,\n"
	"\t\t      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"\tif (region == MAP_FAILED)\n\t\treturn 1;\n"
	"\tprintf(\"region %p\\npid 0x%lx\\nready\\n\", region, pid);\n"
	"\tfflush(stdout);\n"
	"\twhile (read(0, &c, 1) > 0)\n\t\t;\n"
	"\treturn 0;\n"
	"}\n";

static void build_jit(char *ret_path)
{
	char src[PATH_MAX];

	snprintf(src, sizeof(src), "%s/jit.c", tmpdir);
	write_file(src, jit_c);
	snprintf(ret_path, PATH_MAX, "%s/jit", tmpdir);
	sh("gcc -O1 -o %s %s", ret_path, src);
}

/* The two symbols every JIT test writes: 0x100 bytes at region, 0x80 at region + 0x200. */
static void write_perf_map(const char *path, uint64_t region)
{
	char text[256];

	snprintf(text, sizeof(text),
		 "%" PRIx64 " 100 jit_one\n"
		 "%" PRIx64 " 80 LazyCompile:~two /srv/app.js:3\n",
		 region, region + 0x200);
	write_file(path, text);
}

/* region + 0x10 names jit_one (want_named) or nothing, through a new direct symbolizer. */
static void expect_jit(int pid, uint64_t region, bool want_named)
{
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);

	cr_assert_not_null(sym);
	expect_user(sym, pid, region + 0x10, want_named ? "jit_one" : "[unknown]", want_named);
	symbolizer__free(sym);
}

Test(symbolize, jit_perf_map)
{
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer_stats st;
	struct symbolizer *sym;
	char exe[PATH_MAX], map[64], line[128];
	uint64_t region;
	pid_t pid;
	FILE *f;
	int n;

	build_jit(exe);
	pid = spawn(exe, addrs, &n);
	region = addr_of(addrs, n, "region");
	cr_assert_eq(addr_of(addrs, n, "pid"), (uint64_t)pid);
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)pid);
	add_cleanup(map);
	write_perf_map(map, region);

	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	cr_assert_eq(symbolizer__load_pid(sym, pid), 0);
	expect_user(sym, pid, region, "jit_one", 1);
	expect_user(sym, pid, region + 0xff, "jit_one", 1);
	/* Names are shown as written, spaces and all. */
	expect_user(sym, pid, region + 0x200, "LazyCompile:~two /srv/app.js:3", 1);
	expect_user(sym, pid, region + 0x27f, "LazyCompile:~two /srv/app.js:3", 1);
	/* Between and after the symbols, and outside the region. */
	expect_user(sym, pid, region + 0x100, "[unknown]", 0);
	expect_user(sym, pid, region + 0x280, "[unknown]", 0);
	expect_user(sym, pid, region + 0x10000, "[unknown]", 0);
	symbolizer__stats(sym, &st);
	cr_expect_eq(st.perf_map_reads, 1, "perf_map_reads %" PRIu64, st.perf_map_reads);
	cr_expect_gt(st.perf_map_bytes, 0);

	/* The JIT appends: read again on a miss, but not more than once a second. */
	f = fopen(map, "a");
	cr_assert_not_null(f);
	snprintf(line, sizeof(line), "%" PRIx64 " 40 jit_three\n", region + 0x400);
	fputs(line, f);
	cr_assert_eq(fclose(f), 0);
	expect_user(sym, pid, region + 0x410, "[unknown]", 0);
	usleep(1100 * 1000);
	expect_user(sym, pid, region + 0x410, "jit_three", 1);
	expect_user(sym, pid, region + 0x10, "jit_one", 1);
	symbolizer__stats(sym, &st);
	cr_expect_eq(st.perf_map_reads, 2, "perf_map_reads %" PRIu64, st.perf_map_reads);

	/* What was read outlives the process (its /proc/PID/root does not). */
	reap(0);
	expect_user(sym, pid, region + 0x410, "jit_three", 1);
	symbolizer__forget_pid(sym, pid);
	expect_user(sym, pid, region + 0x410, "[unknown]", 0);
	symbolizer__free(sym);
}

Test(symbolize, jit_perf_map_refused)
{
	struct sym_addr addrs[MAX_ADDRS];
	char exe[PATH_MAX], map[64], other[PATH_MAX];
	uint64_t region;
	pid_t pid;
	int n, fd;

	build_jit(exe);
	pid = spawn(exe, addrs, &n);
	region = addr_of(addrs, n, "region");
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)pid);
	snprintf(other, sizeof(other), "%s/other.map", tmpdir);
	write_perf_map(other, region);
	add_cleanup(map);

	cr_expect_eq(safeopen_perf_map(pid), -ENOENT);
	expect_jit(pid, region, false);

	/* The control: a regular file of the target's user. */
	write_perf_map(map, region);
	fd = safeopen_perf_map(pid);
	cr_expect_geq(fd, 0, "safeopen_perf_map: %s", strerror(-fd));
	if (fd >= 0)
		close(fd);
	expect_jit(pid, region, true);
	cr_assert_eq(unlink(map), 0);

	/* A symbolic link, to a file that would pass every other check. */
	cr_assert_eq(symlink(other, map), 0);
	cr_expect_eq(safeopen_perf_map(pid), -EPERM);
	expect_jit(pid, region, false);
	cr_assert_eq(unlink(map), 0);

	/* A hard link: two links to the file. */
	cr_assert_eq(link(other, map), 0);
	cr_expect_eq(safeopen_perf_map(pid), -EPERM);
	expect_jit(pid, region, false);
	cr_assert_eq(unlink(map), 0);

	/* Another user's file. */
	write_perf_map(map, region);
	cr_assert_eq(chown(map, 65534, 65534), 0);
	cr_expect_eq(safeopen_perf_map(pid), -EPERM);
	expect_jit(pid, region, false);
	cr_assert_eq(unlink(map), 0);

	/* A FIFO: refused without waiting for a writer. */
	cr_assert_eq(mkfifo(map, 0600), 0);
	cr_expect_eq(safeopen_perf_map(pid), -EPERM);
	expect_jit(pid, region, false);
	cr_assert_eq(unlink(map), 0);

	/* Larger than the limit (sparse). */
	write_perf_map(map, region);
	cr_assert_eq(truncate(map, SAFEOPEN_PERF_MAP_MAX_BYTES + 1), 0);
	cr_expect_eq(safeopen_perf_map(pid), -EPERM);
	expect_jit(pid, region, false);
	cr_assert_eq(unlink(map), 0);

	cr_expect_eq(safeopen_perf_map(0), -EINVAL);
	cr_expect_eq(safeopen_perf_map(0x3fffffff), -ENOENT);
}

Test(symbolize, jit_perf_map_through_the_process_root)
{
	struct sym_addr addrs[MAX_ADDRS];
	char exe[PATH_MAX], root[512], path[PATH_MAX], decoy[64];
	uint64_t region;
	pid_t pid;
	int n;

	build_jit(exe);

	/* Chrooted: its /tmp is DIR/tmp, and /tmp/perf-PID.map outside is not its own. */
	snprintf(root, sizeof(root), "%s/root", tmpdir);
	sh("mkdir -p %s/tmp", root);
	pid = spawn_args(exe, "chroot", root, addrs, &n);
	region = addr_of(addrs, n, "region");
	snprintf(decoy, sizeof(decoy), "/tmp/perf-%d.map", (int)pid);
	add_cleanup(decoy);
	write_file(decoy, "0 ffffffffffff decoy_outside_the_root\n");
	expect_jit(pid, region, false);
	snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", root, (int)pid);
	write_perf_map(path, region);
	expect_jit(pid, region, true);

	/* Its /tmp is a symbolic link (to a directory holding a good perf map): refused. */
	snprintf(root, sizeof(root), "%s/root2", tmpdir);
	sh("mkdir -p %s/elsewhere && ln -s elsewhere %s/tmp", root, root);
	pid = spawn_args(exe, "chroot", root, addrs, &n);
	region = addr_of(addrs, n, "region");
	snprintf(path, sizeof(path), "%s/elsewhere/perf-%d.map", root, (int)pid);
	write_perf_map(path, region);
	cr_expect_eq(safeopen_perf_map(pid), -EPERM);
	expect_jit(pid, region, false);
}

Test(symbolize, jit_perf_map_in_other_namespaces)
{
	struct sym_addr addrs[MAX_ADDRS];
	char exe[PATH_MAX], path[PATH_MAX], decoy[64];
	uint64_t region;
	int n, pid;

	build_jit(exe);
	/* pid 1 of its pid namespace, with a /tmp of its own: the map is /tmp/perf-1.map there. */
	spawn_args(exe, "ns", NULL, addrs, &n);
	pid = (int)addr_of(addrs, n, "pid");
	region = addr_of(addrs, n, "region");
	snprintf(decoy, sizeof(decoy), "/tmp/perf-%d.map", pid);
	add_cleanup(decoy);
	write_file(decoy, "0 ffffffffffff decoy_in_the_wrong_namespace\n");
	expect_jit(pid, region, false);
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-1.map", pid);
	write_perf_map(path, region);
	expect_jit(pid, region, true);
}

static void expect_fake_jit(struct symbolizer *sym, uint64_t addr, const char *want)
{
	expect_user(sym, 42, addr, want, strcmp(want, "[unknown]") != 0);
}

Test(symbolize, perf_map_parsing)
{
	static const char text[] =
		"1000 10 plain\n"
		"0x2000 0x10 with_0x\n"
		"3A00 1F Upper Case Hex\n"
		"4000 10  leading space kept\n"
		"5000 0 empty_function\n"
		"6000 10 \n"
		"fffffffffffffff0 20 wraps_around\n"
		"10000000000000000 10 seventeen_digits\n"
		"70zz 10 bad_hex\n"
		"8000 10\n"
		"9000  10 two_spaces\n"
		/* Re-JIT: newer code over older, a later line for the same start. */
		"a000 100 old_long\n"
		"a040 20 new_inside\n"
		"b000 10 first_b\n"
		"b000 10 second_b\n"
		"c000 10 tab\tin name\n"
		"d000 10 unterminated";
	struct fake f = { .perf_map = text };
	struct symbolizer_stats st;
	struct symbolizer *sym = fake_symbolizer(&f, 0);

	expect_fake_jit(sym, 0x1000, "plain");
	expect_fake_jit(sym, 0x100f, "plain");
	expect_fake_jit(sym, 0x1010, "[unknown]");
	expect_fake_jit(sym, 0x2008, "with_0x");
	expect_fake_jit(sym, 0x3a1e, "Upper Case Hex");
	expect_fake_jit(sym, 0x4000, " leading space kept");
	expect_fake_jit(sym, 0x5000, "[unknown]");
	expect_fake_jit(sym, 0x6000, "[unknown]");
	expect_fake_jit(sym, 0xfffffffffffffff8ull, "[unknown]");
	expect_fake_jit(sym, 0x7000, "[unknown]");
	expect_fake_jit(sym, 0x8000, "[unknown]");
	expect_fake_jit(sym, 0x9000, "[unknown]");
	expect_fake_jit(sym, 0xa010, "old_long");
	expect_fake_jit(sym, 0xa050, "new_inside");
	expect_fake_jit(sym, 0xa070, "old_long");
	expect_fake_jit(sym, 0xb008, "second_b");
	expect_fake_jit(sym, 0xc000, "tab\tin name");
	/* A last line without its newline may be half written: not read yet. */
	expect_fake_jit(sym, 0xd000, "[unknown]");
	symbolizer__stats(sym, &st);
	cr_expect_eq(st.perf_map_reads, 1);
	cr_expect_eq(f.perf_map_opens, 1);
	symbolizer__free(sym);

	/* A NUL inside a line drops that line only. */
	{
		static const char nul[] = "1000 10 be\0fore\n2000 10 after\n";

		f = (struct fake){ .perf_map = nul, .perf_map_len = sizeof(nul) - 1 };
		sym = fake_symbolizer(&f, 0);
		expect_fake_jit(sym, 0x1000, "[unknown]");
		expect_fake_jit(sym, 0x2000, "after");
		symbolizer__free(sym);
	}

	/* A line longer than the limit is skipped, and the next one read. */
	{
		size_t len = 3 * 8192;
		char *big = malloc(len + 64);
		int k;

		cr_assert_not_null(big);
		k = snprintf(big, len + 64, "1000 10 ");
		memset(big + k, 'x', len - (size_t)k);
		snprintf(big + len, 64, "\n2000 10 after_long\n");
		f = (struct fake){ .perf_map = big };
		sym = fake_symbolizer(&f, 0);
		expect_fake_jit(sym, 0x1000, "[unknown]");
		expect_fake_jit(sym, 0x2000, "after_long");
		symbolizer__free(sym);
		free(big);
	}

	/* No perf map: asked again at most once a second, however many misses. */
	f = (struct fake){ 0 };
	sym = fake_symbolizer(&f, 0);
	for (int i = 0; i < 100; i++)
		expect_fake_jit(sym, 0x1000 + (uint64_t)i, "[unknown]");
	cr_expect_eq(f.perf_map_opens, 1);
	symbolizer__free(sym);
}

Test(symbolize, perf_map_many_symbols_and_garbage)
{
	enum { NSYMS = 200000 };
	unsigned seed = 4242;
	struct symbolizer_stats st;
	struct symbolizer *sym;
	struct fake f;
	char *text, want[32];
	size_t at = 0, cap = (size_t)NSYMS * 40;
	int i;

	/* Many symbols, written out of order: found by binary search. */
	text = malloc(cap);
	cr_assert_not_null(text);
	for (i = NSYMS - 1; i >= 0; i--)
		at += (size_t)snprintf(text + at, cap - at, "%x 10 fn_%d\n", 0x100000 + i * 0x20,
				       i);
	f = (struct fake){ .perf_map = text };
	sym = fake_symbolizer(&f, 0);
	for (i = 0; i < NSYMS; i += 997) {
		snprintf(want, sizeof(want), "fn_%d", i);
		expect_fake_jit(sym, 0x100000 + (uint64_t)i * 0x20 + 0xf, want);
		expect_fake_jit(sym, 0x100000 + (uint64_t)i * 0x20 + 0x10, "[unknown]");
	}
	symbolizer__stats(sym, &st);
	cr_expect_lt(st.perf_map_bytes, (uint64_t)NSYMS * 64, "%" PRIu64, st.perf_map_bytes);
	symbolizer__free(sym);

	/* Random text: anything but a crash. */
	for (i = 0; i < 200; i++) {
		char buf[64];
		size_t k;

		for (k = 0; k < 4095; k++)
			text[k] = "0123456789abcdefxX \n\t;"[rand_r(&seed) % 22];
		text[k] = '\0';
		f = (struct fake){ .perf_map = text };
		sym = fake_symbolizer(&f, 0);
		for (k = 0; k < 32; k++)
			symbolizer__user(sym, 42, (uint64_t)rand_r(&seed) << (k % 40), buf,
					 sizeof(buf));
		symbolizer__free(sym);
	}
	free(text);
}

/* ---- MiniDebugInfo ---- */

/* The address of name in exe's own symbol table, by nm. */
static uint64_t nm_addr(const char *exe, const char *name)
{
	char cmd[PATH_MAX + 64], line[512], sym[256];
	unsigned long long a;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm %s", exe);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %*c %255s", &a, sym) == 2 && !strcmp(sym, name)) {
			pclose(f);
			return a;
		}
	}
	pclose(f);
	cr_assert_fail("nm: no %s in %s", name, exe);
	return 0;
}

/*
 * Builds prog_c as tmpdir/name with a MiniDebugInfo made as Fedora's find-debuginfo does: the
 * function symbols that .dynsym lacks, kept in a copy of the debug file without its debug
 * sections, compressed with xz into .gnu_debugdata of the stripped binary. tmpdir/name.full
 * keeps the unstripped binary, tmpdir/name.mini.xz the section.
 */
static void build_minidebug(const char *name, char *ret_path)
{
	build_prog(name, "-fPIE -pie", ret_path);
	sh("cd %s && n=%s && cp $n $n.full && "
	   "nm -D $n --format=posix --defined-only | awk '{ print $1 }' | sort > $n.dynsyms && "
	   "nm $n --format=sysv --defined-only | awk -F '|' '{ if ($4 ~ \"FUNC\") print $1 }' | "
	   "sort > $n.funcsyms && comm -13 $n.dynsyms $n.funcsyms > $n.keep && "
	   "objcopy --only-keep-debug $n $n.debug && "
	   "objcopy -S --remove-section .gdb_index --remove-section .comment "
	   "--keep-symbols=$n.keep $n.debug $n.mini && "
	   "xz -f $n.mini && strip -s $n && objcopy --add-section .gnu_debugdata=$n.mini.xz $n",
	   tmpdir, name);
}

Test(symbolize, minidebuginfo)
{
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char exe[PATH_MAX];
	pid_t pid;
	int n;

	build_minidebug("mdi", exe);
	/* No .symtab left, and no debug file anywhere: only .gnu_debugdata can name these. */
	sh("! readelf -S %s | grep -q '\\.symtab' && readelf -S %s | grep -q '\\.gnu_debugdata'",
	   exe, exe);
	pid = spawn(exe, addrs, &n);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expect_user(sym, pid, addr_of(addrs, n, "rover_alpha") + 2, "rover_alpha", 1);
	/* Static: in no .dynsym either. */
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, "rover_gamma", 1);
	expect_user(sym, pid, addr_of(addrs, n, "rover_anchor"), "rover_anchor", 1);
	symbolizer__free(sym);
}

/* Whether the ELF file at path names vaddr as name; loading it must not fail. */
static bool elf_names(const char *path, uint64_t vaddr, const char *name)
{
	struct elfsym *es;
	char buf[128];
	bool named;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	es = elfsym__open(fd);
	cr_assert_not_null(es, "%s: %s", path, strerror(errno));
	cr_assert_eq(elfsym__load_symbols(es, path), 0);
	close(fd);
	named = elfsym__name(es, vaddr, buf, sizeof(buf)) == 1 && !strcmp(buf, name);
	elfsym__free(es);
	return named;
}

static long maxrss_kib(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

Test(symbolize, minidebuginfo_damaged, .timeout = 120)
{
	static const struct {
		const char *name, *make; /* a shell command writing the section to $s */
	} cases[] = {
		{ "random", "head -c 4096 /dev/urandom > $s" },
		{ "truncated", "head -c $(($(stat -c %s mdi.mini.xz) / 2)) mdi.mini.xz > $s" },
		{ "not_elf", "head -c 100000 /dev/urandom | xz > $s" },
		{ "xz_of_text", "seq 1 100000 | xz > $s" },
		{ "empty_xz", "printf '' | xz > $s" },
		{ "lzma_alone", "printf 'hello' | xz --format=lzma > $s" },
	};
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char exe[PATH_MAX], path[PATH_MAX + 16], want[PATH_MAX];
	uint64_t gamma;
	long before;
	pid_t pid;
	int n;
	size_t i;

	build_minidebug("mdi", exe);
	snprintf(path, sizeof(path), "%s.full", exe);
	gamma = nm_addr(path, "rover_gamma");
	cr_assert(elf_names(exe, gamma + 2, "rover_gamma"), "the good one is not read");

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sh("cd %s && s=%s.sec && %s && cp mdi.full %s && strip -s %s && "
		   "objcopy --add-section .gnu_debugdata=$s %s",
		   tmpdir, cases[i].name, cases[i].make, cases[i].name, cases[i].name,
		   cases[i].name);
		snprintf(path, sizeof(path), "%s/%s", tmpdir, cases[i].name);
		cr_expect(!elf_names(path, gamma + 2, "rover_gamma"), "%s", cases[i].name);
	}

	/*
	 * A bomb: 1 GiB of zeros in 150 KiB. Decompression stops at its limit, so the memory
	 * this process ever held grows by about that much, not by a GiB.
	 */
	sh("cd %s && head -c 1G /dev/zero | xz -0 -T1 > bomb.xz && cp mdi.full bomb && "
	   "strip -s bomb && objcopy --add-section .gnu_debugdata=bomb.xz bomb",
	   tmpdir);
	snprintf(path, sizeof(path), "%s/bomb", tmpdir);
	before = maxrss_kib();
	cr_expect(!elf_names(path, gamma + 2, "rover_gamma"));
	cr_log_info("bomb: max RSS grew by %ld KiB", maxrss_kib() - before);
	cr_expect_lt(maxrss_kib() - before, 160 << 10, "max RSS grew by %ld KiB",
		     maxrss_kib() - before);

	/* Through the symbolizer: the fallback name, file and offset. */
	pid = spawn(path, addrs, &n);
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	expected_fallback(pid, addr_of(addrs, n, "rover_gamma") + 2, want, sizeof(want));
	expect_user(sym, pid, addr_of(addrs, n, "rover_gamma") + 2, want, 0);
	symbolizer__free(sym);
}

/* ---- Go binaries: .gopclntab ---- */

/* Here rather than at the top: the Go tests are appended as one block. */
#include "shipper/stacks/gopclntab.h"
#include "tests/elf_header.h"

static bool have_go(void)
{
	int rc = system("command -v go >/dev/null 2>&1");

	return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

/* tests/programs/go/burn.go, from the directory the runner is started in or from its own. */
static void go_source(char *ret_path)
{
	char exe[PATH_MAX - 64];
	const char *slash = strrchr(__FILE__, '/');
	ssize_t n;

	snprintf(exe, sizeof(exe), "%.*s/../programs/go/burn.go",
		 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	if (realpath(exe, ret_path))
		return;
	/* build/tests/unit/runner: the sources are three directories up. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	cr_assert_lt(strlen(exe) + sizeof("/../../../tests/programs/go/burn.go"), sizeof(exe));
	strcat(exe, "/../../../tests/programs/go/burn.go");
	cr_assert_not_null(realpath(exe, ret_path), "%s: %s", exe, strerror(errno));
}

/*
 * Builds burn.go as tmpdir/name with go build flags, offline, with caches in tmpdir; strip
 * runs strip -s on the result.
 */
static void build_go(const char *name, const char *flags, bool strip, char *ret_path)
{
	char src[PATH_MAX];

	go_source(src);
	snprintf(ret_path, PATH_MAX, "%s/%s", tmpdir, name);
	sh("cd %s && HOME=%s GOCACHE=%s/gocache GOPATH=%s/gopath GO111MODULE=off GOFLAGS=-mod=mod "
	   "GOPROXY=off GOTOOLCHAIN=local go build %s -o %s %s%s%s",
	   tmpdir, tmpdir, tmpdir, tmpdir, flags, ret_path, src, strip ? " && strip -s " : "",
	   strip ? ret_path : "");
}

Test(symbolize, go_binaries, .timeout = 300)
{
	static const struct {
		const char *name, *flags;
		bool strip, symtab;
	} builds[] = {
		{ "go_plain", "", false, true },
		{ "go_stripped", "-ldflags='-s -w'", true, false },
		/* PIE: the Go linker names the table .data.rel.ro.gopclntab. */
		{ "go_pie_stripped", "-buildmode=pie -ldflags='-s -w'", true, false },
		/* An external linker merges it into .data.rel.ro: found by its header. */
		{ "go_ext_stripped", "-buildmode=pie -ldflags='-linkmode=external -s -w'", true,
		  false },
	};
	struct sym_addr addrs[MAX_ADDRS];
	struct symbolizer *sym;
	char exe[PATH_MAX];
	uint64_t a, b;
	size_t i;
	pid_t pid;
	int n;

	if (!have_go())
		cr_skip("no Go toolchain (go on PATH): Go binaries cannot be built");
	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		build_go(builds[i].name, builds[i].flags, builds[i].strip, exe);
		sh("%sreadelf -S -W %s | grep -q ' \\.symtab '", builds[i].symtab ? "" : "! ", exe);
		pid = spawn_args(exe, "burn", NULL, addrs, &n);
		a = addr_of(addrs, n, "main.burnA");
		b = addr_of(addrs, n, "main.burnB");
		cr_assert_lt(a, b, "%s: burnA after burnB", builds[i].name);
		/* A new symbolizer for each: the cache would answer the second from the first. */
		sym = symbolizer__new(&fd_opener_direct, 0);
		cr_assert_not_null(sym);
		cr_log_info("%s", builds[i].name);
		expect_user(sym, pid, a, "main.burnA", 1);
		expect_user(sym, pid, a + 4, "main.burnA", 1);
		/* Past its end a .symtab leaves the padding unnamed: not asked here. */
		expect_user(sym, pid, a + 0x10, "main.burnA", 1);
		expect_user(sym, pid, b, "main.burnB", 1);
		expect_user(sym, pid, b + 8, "main.burnB", 1);
		symbolizer__free(sym);
		reap(nchildren - 1);
	}
}

/* ---- .gopclntab tables made by hand, and garbage ---- */

struct go_seen {
	const unsigned char *data;
	size_t len;
	int n;
	uint64_t entry[8], size[8];
	char name[8][32];
	bool outside; /* a name not inside the table, or not followed by its NUL */
};

static int go_collect(void *ctx, uint64_t entry, uint64_t size, const char *name, size_t len)
{
	struct go_seen *s = ctx;
	const unsigned char *p = (const unsigned char *)name;

	if (p < s->data || p >= s->data + s->len || len == 0 ||
	    len >= (size_t)(s->data + s->len - p) || p[len] != '\0' || memchr(p, '\0', len))
		s->outside = true;
	if (s->n < 8 && !s->outside) {
		s->entry[s->n] = entry;
		s->size[s->n] = size;
		snprintf(s->name[s->n], sizeof(s->name[0]), "%.*s", (int)len, name);
	}
	s->n++;
	return 0;
}

static void go_put(unsigned char *p, size_t off, uint64_t v, unsigned n, bool big)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[off + (big ? n - 1 - i : i)] = (unsigned char)(v >> (8 * i));
}

enum go_layout { GO_12, GO_116, GO_118, GO_120 };

/*
 * A table of the given layout with three functions, "main.one" at text + 0x100 (0x40 bytes),
 * "main.two" at text + 0x140 (0x20), "runtime.three" at text + 0x160 (0x80), laid out as
 * cmd/link/internal/ld/pcln.go writes it. Returns its length.
 */
static size_t go_table(unsigned char *t, size_t cap, enum go_layout layout, unsigned ptr, bool big,
		       uint64_t text)
{
	static const char *const names[] = { "main.one", "main.two", "runtime.three" };
	static const uint64_t off[] = { 0x100, 0x140, 0x160, 0x1e0 };
	static const uint32_t magic[] = { 0xfffffffb, 0xfffffffa, 0xfffffff0, 0xfffffff1 };
	uint64_t nameoff[3], at, names_at, functab, funcs, field, fsz, entry;
	unsigned nwords, i;
	size_t len;

	memset(t, 0, cap);
	go_put(t, 0, magic[layout], 4, big);
	t[6] = 1;
	t[7] = (unsigned char)ptr;
	nwords = layout == GO_12 ? 1 : layout == GO_116 ? 7 : 8;
	field = layout >= GO_118 ? 4 : ptr;
	/* Go 1.2: the functab right after nfunc, names and funcs after it, all table-relative. */
	functab = layout == GO_12 ? 8 + ptr : 0;
	names_at = layout == GO_12 ? functab + 7 * field + 4 : 8 + (uint64_t)nwords * ptr;
	at = names_at;
	for (i = 0; i < 3; i++) {
		nameoff[i] = (layout == GO_12 ? at : at - names_at);
		memcpy(t + at, names[i], strlen(names[i]) + 1);
		at += strlen(names[i]) + 1;
	}
	at = (at + 7) & ~7ull;
	if (layout != GO_12)
		functab = at;
	funcs = layout == GO_12 ? at : functab + 7 * field + 8;
	fsz = 48;
	for (i = 0; i < 4; i++) {
		entry = layout >= GO_118 ? off[i] : text + off[i];
		go_put(t, functab + 2 * i * field, entry, (unsigned)field, big);
		if (i == 3)
			break;
		go_put(t, functab + (2 * i + 1) * field,
		       funcs + i * fsz - (layout == GO_12 ? 0 : functab), (unsigned)field, big);
		go_put(t, funcs + i * fsz, entry, layout >= GO_118 ? 4 : ptr, big);
		go_put(t, funcs + i * fsz + (layout >= GO_118 ? 4 : ptr), nameoff[i], 4, big);
	}
	len = funcs + 3 * fsz;
	cr_assert_leq(len, cap);
	go_put(t, 8, 3, ptr, big); /* nfunc */
	if (layout == GO_12)
		return len;
	go_put(t, 8 + ptr, 0, ptr, big); /* nfiles */
	i = 2;
	if (layout >= GO_118)
		go_put(t, 8 + (i++) * ptr, text, ptr, big);
	go_put(t, 8 + (i++) * ptr, names_at, ptr, big);
	/* cutab, filetab, pctab: empty, where the names end. */
	go_put(t, 8 + (i++) * ptr, functab, ptr, big);
	go_put(t, 8 + (i++) * ptr, functab, ptr, big);
	go_put(t, 8 + (i++) * ptr, functab, ptr, big);
	go_put(t, 8 + (i++) * ptr, functab, ptr, big);
	cr_assert_eq(i, nwords);
	return len;
}

Test(symbolize, gopclntab_layouts)
{
	static const char *const want[] = { "main.one", "main.two", "runtime.three" };
	static const uint64_t start[] = { 0x100, 0x140, 0x160 }, size[] = { 0x40, 0x20, 0x80 };
	unsigned char t[1024];
	struct go_seen s;
	enum go_layout layout;
	const uint64_t text = 0x401000;
	unsigned ptr, big, i;
	size_t len;

	for (layout = GO_12; layout <= GO_120; layout++) {
		for (ptr = 4; ptr <= 8; ptr += 4) {
			for (big = 0; big < 2; big++) {
				len = go_table(t, sizeof(t), layout, ptr, big, text);
				s = (struct go_seen){ .data = t, .len = len };
				cr_expect_eq(gopclntab__walk(t, len, go_collect, &s), 3,
					     "layout %d ptr %u big %u", layout, ptr, big);
				cr_expect_not(s.outside);
				for (i = 0; i < 3 && (int)i < s.n; i++) {
					cr_expect_str_eq(s.name[i], want[i],
							 "layout %d ptr %u big %u", layout, ptr,
							 big);
					cr_expect_eq(s.entry[i], text + start[i]);
					cr_expect_eq(s.size[i], size[i]);
				}
				/* Every shorter table is refused or gives names inside itself. */
				for (; len > 0; len--) {
					s = (struct go_seen){ .data = t, .len = len };
					gopclntab__walk(t, len, go_collect, &s);
					cr_expect_not(s.outside, "cut at %zu", len);
				}
			}
		}
	}
	/* No magic, a bad pointer size: not a table. */
	len = go_table(t, sizeof(t), GO_118, 8, false, text);
	t[0] = 0xf5;
	cr_expect_eq(gopclntab__walk(t, len, go_collect, &s), -ENOEXEC);
	len = go_table(t, sizeof(t), GO_118, 8, false, text);
	t[7] = 6;
	cr_expect_eq(gopclntab__walk(t, len, go_collect, &s), -ENOEXEC);
	/* A 1.18 table without textStart cannot place its functions. */
	len = go_table(t, sizeof(t), GO_118, 8, false, 0);
	cr_expect_eq(gopclntab__walk(t, len, go_collect, &s), -ENOEXEC);
	/* An nfunc far past the data: refused, not read past the end. */
	len = go_table(t, sizeof(t), GO_120, 8, false, text);
	go_put(t, 8, 0x7fffffffffffffffull, 8, false);
	cr_expect_eq(gopclntab__walk(t, len, go_collect, &s), -ENOEXEC);
	/* A name offset past the names, a negative one: those functions only are skipped. */
	len = go_table(t, sizeof(t), GO_120, 8, false, text);
	s = (struct go_seen){ .data = t, .len = len };
	go_put(t, len - 2 * 48 + 4, 0x7ffffff0, 4, false);
	go_put(t, len - 48 + 4, 0xfffffff0, 4, false);
	cr_expect_eq(gopclntab__walk(t, len, go_collect, &s), 1);
	cr_expect_str_eq(s.name[0], "main.one");
}

/* [off, off + size) of the section called name in the 64-bit ELF image p; 0 when absent. */
static size_t elf64_section(const unsigned char *p, size_t len, const char *name, size_t *ret_off)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
	const Elf64_Shdr *sh, *str;
	size_t i;

	cr_assert_geq(len, sizeof(*eh));
	cr_assert_eq(eh->e_ident[EI_CLASS], ELFCLASS64);
	cr_assert_leq(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh), len);
	sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	str = &sh[eh->e_shstrndx];
	for (i = 0; i < eh->e_shnum; i++) {
		if (strcmp((const char *)p + str->sh_offset + sh[i].sh_name, name))
			continue;
		cr_assert_leq(sh[i].sh_offset + sh[i].sh_size, len);
		*ret_off = sh[i].sh_offset;
		return sh[i].sh_size;
	}
	return 0;
}

Test(symbolize, gopclntab_garbage, .timeout = 300)
{
	static const uint32_t magics[] = { 0xfffffffb, 0xfffffffa, 0xfffffff0, 0xfffffff1 };
	unsigned char *orig, *buf, *t;
	unsigned seed = 4242;
	char exe[PATH_MAX];
	struct go_seen s;
	size_t len, tlen, toff, cut, i, j;

	/* Random bytes behind each valid header start: no name outside what was given. */
	t = malloc(1 << 16);
	cr_assert_not_null(t);
	for (i = 0; i < 20000; i++) {
		cut = 8 + (size_t)rand_r(&seed) % ((1 << 16) - 8);
		fill_random(t, cut, &seed);
		go_put(t, 0, magics[i % 4], 4, i % 8 >= 4);
		t[4] = t[5] = 0;
		t[6] = 1;
		t[7] = i % 16 < 8 ? 8 : 4;
		/* Small counts and offsets, so that the walk gets past the header at all. */
		if (i % 3) {
			for (j = 0; j < 8; j++)
				go_put(t, 8 + j * t[7], (size_t)rand_r(&seed) % cut, t[7],
				       i % 8 >= 4);
			go_put(t, 8, (size_t)rand_r(&seed) % 64, t[7], i % 8 >= 4);
		}
		s = (struct go_seen){ .data = t, .len = cut };
		gopclntab__walk(t, cut, go_collect, &s);
		cr_assert_not(s.outside, "round %zu", i);
	}
	free(t);

	if (!have_go())
		cr_skip("no Go toolchain (go on PATH): real tables cannot be damaged");
	/* A real table with bytes changed, directly and inside its stripped binary. */
	build_go("go_fuzz", "-ldflags='-s -w'", true, exe);
	orig = read_whole(exe, &len);
	tlen = elf64_section(orig, len, ".gopclntab", &toff);
	cr_assert_gt(tlen, 0);
	buf = malloc(len);
	cr_assert_not_null(buf);
	s = (struct go_seen){ .data = orig + toff, .len = tlen };
	cr_assert_gt(gopclntab__walk(orig + toff, tlen, go_collect, &s), 1000);
	cr_assert_not(s.outside);
	for (i = 0; i < 2000; i++) {
		memcpy(buf, orig, len);
		for (j = 1 + (size_t)rand_r(&seed) % 16; j > 0; j--)
			buf[toff + (size_t)rand_r(&seed) % (i % 2 ? 128 : tlen)] =
				(unsigned char)rand_r(&seed);
		s = (struct go_seen){ .data = buf + toff, .len = tlen };
		gopclntab__walk(buf + toff, tlen, go_collect, &s);
		cr_assert_not(s.outside, "round %zu", i);
		/* Loading the whole file: any outcome but a crash. */
		if (i % 10 == 0)
			poke_elf(buf, len, i % 20 == 0);
	}
	/* Truncated inside the table. */
	for (cut = 0; cut < tlen; cut += tlen / 101 + 1) {
		s = (struct go_seen){ .data = orig + toff, .len = cut };
		gopclntab__walk(orig + toff, cut, go_collect, &s);
		cr_assert_not(s.outside, "cut at %zu", cut);
	}
	free(buf);
	free(orig);
}

/*
 * An ELF64 file in memory with one .symtab of the functions given, in that order: what a
 * hostile binary can choose. With shared, every one of them is named by the same bytes of the
 * string table (their own names unused). Its size to *ret_len.
 */
struct table_sym {
	uint64_t addr;
	uint8_t bind;
	char name[24];
};

static unsigned char *symtab_elf(const struct table_sym *t, size_t n, const char *shared,
				 size_t *ret_len)
{
	static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";
	size_t strsz = 1, off_sym, off_str, off_shstr, off_sh, len;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	Elf64_Sym *st;
	char *strs;

	for (size_t i = 0; i < n && !shared; i++)
		strsz += strlen(t[i].name) + 1;
	if (shared)
		strsz += strlen(shared) + 1;
	off_sym = sizeof(Elf64_Ehdr);
	off_str = off_sym + (n + 1) * sizeof(Elf64_Sym);
	off_shstr = off_str + strsz;
	off_sh = (off_shstr + sizeof(shstr) + 7) & ~(size_t)7;
	len = off_sh + 4 * sizeof(Elf64_Shdr);
	buf = calloc(1, len);
	cr_assert_not_null(buf);
	eh = (Elf64_Ehdr *)buf;
	test_elf64_header(eh, ET_EXEC);
	eh->e_shoff = off_sh;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 4;
	eh->e_shstrndx = 3;
	st = (Elf64_Sym *)(buf + off_sym);
	strs = (char *)buf + off_str;
	if (shared)
		strcpy(strs + 1, shared);
	for (size_t i = 0, at = 1; i < n; i++) {
		st[i + 1] = (Elf64_Sym){ .st_name = (uint32_t)at,
					 .st_info = ELF64_ST_INFO(t[i].bind, STT_FUNC),
					 .st_shndx = 1,
					 .st_value = t[i].addr,
					 .st_size = 16 };
		if (shared)
			continue;
		strcpy(strs + at, t[i].name);
		at += strlen(t[i].name) + 1;
	}
	memcpy(buf + off_shstr, shstr, sizeof(shstr));
	sh = (Elf64_Shdr *)(buf + off_sh);
	sh[1] = (Elf64_Shdr){ .sh_name = 1,
			      .sh_type = SHT_SYMTAB,
			      .sh_offset = off_sym,
			      .sh_size = (n + 1) * sizeof(Elf64_Sym),
			      .sh_link = 2,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[2] = (Elf64_Shdr){
		.sh_name = 9, .sh_type = SHT_STRTAB, .sh_offset = off_str, .sh_size = strsz
	};
	sh[3] = (Elf64_Shdr){ .sh_name = 17,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = off_shstr,
			      .sh_size = sizeof(shstr) };
	*ret_len = len;
	return buf;
}

/*
 * Every order a binary may list its functions in (sorted, reversed, organ pipe, shuffled,
 * one address for thousands of aliases) names every address alike: the alias rule decides,
 * never the table's order or the sort's path through it.
 */
Test(symbolize, any_symbol_order_names_alike)
{
	enum { ADDRS = 3000, ALIASES = 3, CROWD = 2000, N = ADDRS * ALIASES + CROWD };
	struct table_sym *t = calloc(N, sizeof(*t)), *o = calloc(N, sizeof(*o));
	unsigned seed = 7;

	cr_assert(t && o);
	for (size_t i = 0; i < ADDRS; i++) {
		uint64_t addr = 0x10000 + i * 64;

		/* Kept: global over weak, fewer leading underscores. */
		t[i * ALIASES] = (struct table_sym){ addr, STB_WEAK, "" };
		snprintf(t[i * ALIASES].name, sizeof(t->name), "w_%zu", i);
		t[i * ALIASES + 1] = (struct table_sym){ addr, STB_GLOBAL, "" };
		snprintf(t[i * ALIASES + 1].name, sizeof(t->name), "__f_%zu", i);
		t[i * ALIASES + 2] = (struct table_sym){ addr, STB_GLOBAL, "" };
		snprintf(t[i * ALIASES + 2].name, sizeof(t->name), "f_%zu", i);
	}
	/* One address, 2000 names of one length: the bytes decide. */
	for (size_t i = 0; i < CROWD; i++) {
		t[ADDRS * ALIASES + i] = (struct table_sym){ 0x8000, STB_GLOBAL, "" };
		snprintf(t[ADDRS * ALIASES + i].name, sizeof(t->name), "g%04zu", CROWD - 1 - i);
	}
	for (int order = 0; order < 5; order++) {
		struct elfsym *es;
		unsigned char *buf;
		char name[64], want[32];
		size_t len;

		for (size_t i = 0; i < N; i++) {
			size_t k = order == 0	? i
				   : order == 1 ? N - 1 - i
				   : order == 2 ? (i % 2 ? i / 2 : N - 1 - i / 2)
						: i;
			o[i] = t[k];
		}
		if (order == 3)
			for (size_t i = N - 1; i > 0; i--) {
				size_t k = (size_t)rand_r(&seed) % (i + 1);
				struct table_sym x = o[i];

				o[i] = o[k];
				o[k] = x;
			}
		if (order == 4) /* the addresses descending, each one's aliases together */
			for (size_t i = 0; i < ADDRS * ALIASES; i++)
				o[i] = t[(ADDRS - 1 - i / ALIASES) * ALIASES + i % ALIASES];
		buf = symtab_elf(o, N, NULL, &len);
		es = elfsym__open_memory(buf, len);
		cr_assert_not_null(es);
		cr_assert_eq(elfsym__load_symbols(es, NULL), 0);
		cr_assert_eq(elfsym__count(es), ADDRS + 1, "order %d: %zu symbols", order,
			     elfsym__count(es));
		cr_assert_eq(elfsym__name(es, 0x8000, name, sizeof(name)), 1);
		cr_assert_str_eq(name, "g0000", "order %d", order);
		for (size_t i = 0; i < ADDRS; i++) {
			snprintf(want, sizeof(want), "f_%zu", i);
			cr_assert_eq(elfsym__name(es, 0x10000 + i * 64 + 3, name, sizeof(name)), 1);
			cr_assert_str_eq(name, want, "order %d", order);
		}
		elfsym__free(es);
		free(buf);
	}
	free(t);
	free(o);
}

/*
 * A file whose 2 million functions all have the same 4000-byte name: 4 KiB of string table,
 * 8 GB of names if each kept a copy. The names kept are charged to the file's budget: the
 * load stops within it, reports the file, and this process does not grow by gigabytes.
 */
Test(symbolize, one_name_for_millions_of_functions_stays_within_the_budget, .timeout = 120)
{
	enum { N = 2000000 };
	struct table_sym *t = calloc(N, sizeof(*t));
	char *name = malloc(4001), out[64];
	uint64_t bytes = 0, limit = 0;
	struct elfsym *es;
	unsigned char *buf;
	struct rusage ru;
	long before;
	size_t len;

	cr_assert(t && name);
	memset(name, 'a', 4000);
	name[4000] = 0;
	for (size_t i = 0; i < N; i++)
		t[i] = (struct table_sym){ 0x10000 + i * 16, STB_GLOBAL, "" };
	buf = symtab_elf(t, N, name, &len);
	free(t);
	getrusage(RUSAGE_SELF, &ru);
	before = ru.ru_maxrss;
	es = elfsym__open_memory(buf, len);
	cr_assert_not_null(es);
	cr_assert_eq(elfsym__load_symbols(es, NULL), 0);
	getrusage(RUSAGE_SELF, &ru);
	cr_log_info("%zu symbols kept, %zu bytes, peak RSS +%ld KiB", elfsym__count(es),
		    elfsym__bytes(es), ru.ru_maxrss - before);
	cr_expect(elfsym__refused(es, &bytes, &limit), "not reported over its budget");
	cr_expect_lt(elfsym__bytes(es), 128u << 20, "%zu bytes kept", elfsym__bytes(es));
	cr_expect_lt(ru.ru_maxrss - before, 256 << 10, "peak RSS grew by %ld KiB",
		     ru.ru_maxrss - before);
	/* The first addresses are named, the rest module+offset (not here: no name). */
	cr_expect_eq(elfsym__name(es, 0x10000, out, sizeof(out)), 1);
	elfsym__free(es);
	free(buf);
	free(name);
}
