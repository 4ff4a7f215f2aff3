// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
/*
 * shipper/network/tlsfind.c on real files: this machine's OpenSSL, Android's BoringSSL
 * (android-libboringssl), node's linked-in OpenSSL and the Go peer of the TLS tests
 * (build/tests/programs/gotls, gotls_stripped; `make unit` builds them). Every offset is
 * checked against what binutils says of the same file (readelf's symbols and segments,
 * objdump's RET instructions), never against libelf, which tlsfind.c itself reads through.
 * Then broken files, and the finder on a live process's mappings.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/netrec.h"
#include "common/tlssite.h"
#include "shipper/opener.h"
#include "shipper/network/tlsfind.h"
#include "tests/elf_header.h"

#define LIBSSL3 "/usr/lib/x86_64-linux-gnu/libssl.so.3"
#define BORINGSSL "/usr/lib/x86_64-linux-gnu/android/libssl.so.0"
#define NODE "/usr/bin/node"
#define MAX_LOADS 32

static char tmpdir[64];
static pid_t child;

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rover-tlstest-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	child = 0;
}

static void teardown(void)
{
	char cmd[128];
	int rc;

	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		rc = system(cmd);
		(void)rc;
	}
}

TestSuite(tlsfind, .init = setup, .fini = teardown);

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

/* A file the test needs from a Debian package: skipped, naming it, where it is not installed. */
static void need(const char *path, const char *package)
{
	if (access(path, R_OK))
		cr_skip("%s not installed (Debian package %s)", path, package);
}

/*
 * build/tests/programs/NAME: $ROVER_BUILD/tests/programs, else next to the runner
 * (OUT/tests/unit/runner).
 */
static void program(const char *name, char *ret_path)
{
	const char *build = getenv("ROVER_BUILD");
	char exe[PATH_MAX];
	ssize_t n;

	if (build) {
		snprintf(ret_path, PATH_MAX, "%s/tests/programs/%s", build, name);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		cr_assert_gt(n, 0);
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		cr_assert_lt(strlen(exe) + strlen(name) + sizeof("/../programs/"), sizeof(exe));
		snprintf(ret_path, PATH_MAX, "%s/../programs/%s", exe, name);
	}
	cr_assert_eq(access(ret_path, R_OK), 0, "%s: %s (built by `make unit`)", ret_path,
		     strerror(errno));
}

/* tlsfind__probes on path; *ret and *ret_why as it left them. */
static int probes_of(const char *path, struct msg_tls_attach *ret, const char **ret_why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	memset(ret, 0, sizeof(*ret));
	*ret_why = NULL;
	err = tlsfind__probes(fd, path, ret, ret_why);
	close(fd);
	return err;
}

/* ---- what binutils says of a file ---- */

struct load {
	uint64_t offset, vaddr, filesz;
	int exec;
};

struct ref {
	struct load load[MAX_LOADS];
	int nloads;
};

/* The PT_LOAD segments of path, from `readelf -lW`. */
static void ref_loads(const char *path, struct ref *ret)
{
	unsigned long long off, vaddr, paddr, filesz, memsz;
	char cmd[PATH_MAX + 64], line[512];
	FILE *p;

	memset(ret, 0, sizeof(*ret));
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx", &off, &vaddr, &paddr, &filesz,
			   &memsz) != 5)
			continue;
		cr_assert_lt(ret->nloads, MAX_LOADS);
		/* The flags column: "R E", "RWE": an E before the alignment. */
		ret->load[ret->nloads++] =
			(struct load){ off, vaddr, filesz,
				       strstr(line, " E ") || strstr(line, "WE ") };
	}
	cr_assert_eq(pclose(p), 0, "%s", cmd);
	cr_assert_gt(ret->nloads, 0, "no LOAD segments in %s", path);
}

/* The file offset of vaddr, which must lie in an executable segment's file bytes. */
static uint64_t ref_offset(const struct ref *r, uint64_t vaddr)
{
	for (int i = 0; i < r->nloads; i++) {
		const struct load *l = &r->load[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz) {
			cr_assert(l->exec, "0x%" PRIx64 " in a segment not executable", vaddr);
			return vaddr - l->vaddr + l->offset;
		}
	}
	cr_assert_fail("0x%" PRIx64 " in no LOAD segment", vaddr);
	return 0;
}

/*
 * The values (and sizes) of the functions names[0..n), any version suffix such as
 * "@@OPENSSL_3.0.0" dropped, from one run of `readelf -W OPT` (--dyn-syms or -s: node's take
 * seconds each). 0 for a name not there.
 */
static void ref_symbols(const char *path, const char *opt, const char *const *names, int n,
			uint64_t *ret_values, uint64_t *ret_sizes)
{
	char cmd[PATH_MAX + 64], line[1024], sym[512], type[32], *at;
	unsigned long long value;
	long long size;
	FILE *p;

	for (int k = 0; k < n; k++)
		ret_values[k] = 0;
	snprintf(cmd, sizeof(cmd), "readelf -W %s '%s'", opt, path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		/* "672: 0000000000035430  131 FUNC  GLOBAL DEFAULT  13 SSL_read@@OPENSSL_3.0.0" */
		if (sscanf(line, " %*u: %llx %lli %31s %*s %*s %*s %511s", &value, &size, type,
			   sym) != 4)
			continue;
		at = strchr(sym, '@');
		if (at)
			*at = '\0';
		if (strcmp(type, "FUNC") || !value)
			continue;
		for (int k = 0; k < n; k++) {
			if (strcmp(sym, names[k]))
				continue;
			cr_assert(!ret_values[k] || ret_values[k] == value, "%s: two values of %s",
				  path, names[k]);
			ret_values[k] = value;
			if (ret_sizes)
				ret_sizes[k] = (uint64_t)size;
		}
	}
	cr_assert_eq(pclose(p), 0, "%s", cmd);
}

/* The addresses of the RET instructions in [start, end) of path, by objdump. */
static int ref_rets(const char *path, uint64_t start, uint64_t end, uint64_t *ret_addrs, int max)
{
	char cmd[PATH_MAX + 128], line[1024], *tab;
	unsigned long long a;
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd),
		 "objdump -d -w --start-address=0x%" PRIx64 " --stop-address=0x%" PRIx64 " '%s'",
		 start, end, path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		/* "  5afd14:\tc3                   \tret    " */
		if (sscanf(line, " %llx:", &a) != 1 || !(tab = strrchr(line, '\t')))
			continue;
		if (strncmp(tab + 1, "ret", 3) || (tab[4] && !strchr(" \n", tab[4])))
			continue;
		cr_assert_lt(n, max);
		ret_addrs[n++] = a;
	}
	cr_assert_eq(pclose(p), 0, "%s", cmd);
	return n;
}

static uint8_t byte_at(const char *path, uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t b = 0;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, (off_t)off), 1, "%s: no byte at 0x%" PRIx64, path, off);
	close(fd);
	return b;
}

/* Writes len bytes at off of path. */
static void patch(const char *path, uint64_t off, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/* ---- C libraries ---- */

/*
 * By objdump: the first call instruction in the 96 bytes from start of path, and the
 * conditional jump after it (past a `test %eax,%eax`): 0 when the code is not that.
 */
static void ref_call_site(const char *path, uint64_t start, uint64_t *ret_call, uint64_t *ret_after)
{
	char cmd[PATH_MAX + 160], line[1024], mnem[32];
	unsigned long long a;
	FILE *p;
	int state = 0;

	*ret_call = *ret_after = 0;
	snprintf(cmd, sizeof(cmd),
		 "objdump -d -w --no-show-raw-insn --start-address=0x%" PRIx64
		 " --stop-address=0x%" PRIx64 " '%s'",
		 start, start + 96, path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		/* "   3599e:\tcall   355a0 <...>" */
		if (sscanf(line, " %llx:\t%31s", &a, mnem) != 2)
			continue;
		if (state == 0 && !strcmp(mnem, "call")) {
			*ret_call = a;
			state = 1;
		} else if (state == 1 && !strcmp(mnem, "test")) {
			state = 2;
		} else if (state == 1 || state == 2) {
			if (mnem[0] == 'j' && strcmp(mnem, "jmp"))
				*ret_after = a;
			state = 3;
		}
	}
	pclose(p);
}

/*
 * A C library's probes: lib, then for each of the nfns functions one entry and one return
 * probe, at the function's file offset from readelf's dynamic symbols and segments; or, for
 * SSL_read and SSL_write, one on the call of their _ex twin and one on the jump after it, where
 * objdump shows them (sites: the functions that must have them).
 */
static void check_c_library(const char *path, uint32_t lib, int nfns, int sites)
{
	static const char *const names[4] = { "SSL_read", "SSL_write", "SSL_read_ex",
					      "SSL_write_ex" };
	static const uint32_t fns[4] = { NET_TLS_FN_READ, NET_TLS_FN_WRITE, NET_TLS_FN_READ_EX,
					 NET_TLS_FN_WRITE_EX };
	uint64_t values[4];
	struct msg_tls_attach m;
	const char *why;
	struct ref r;
	int err, seen[4][4] = { { 0 } }, nprobes = 0;

	err = probes_of(path, &m, &why);
	cr_assert_eq(err, 0, "%s: %s (%s)", path, strerror(-err), why ? why : "no reason");
	cr_expect_eq(m.lib, lib, "%s: lib %s", path, tlsfind__lib_name(m.lib));
	ref_loads(path, &r);
	ref_symbols(path, "--dyn-syms", names, 4, values, NULL);
	for (int k = 0; k < 4; k++) {
		uint64_t v = values[k], call = 0, after = 0;

		if (k >= nfns) {
			cr_assert_eq(v, 0, "%s exports %s", path, names[k]);
			continue;
		}
		cr_assert_neq(v, 0, "readelf finds no %s in %s", names[k], path);
		if (k < 2)
			ref_call_site(path, v, &call, &after);
		for (uint32_t i = 0; i < m.nprobes; i++) {
			const struct msg_tls_probe *p = &m.probes[i];
			uint32_t where = p->cookie >> 16;

			if ((p->cookie & 0xff) != fns[k])
				continue;
			nprobes++;
			cr_expect_eq((p->cookie >> 8) & 0xff, lib);
			cr_assert_leq(p->ret, 1);
			cr_assert_leq(where, 2);
			if (where) {
				uint64_t want = where == 1 ? call : after;

				cr_assert_eq(p->ret, 0);
				cr_assert(k < 2, "%s: a call site on %s", path, names[k]);
				cr_expect_eq(p->offset, ref_offset(&r, want),
					     "%s %s: %s probe at 0x%" PRIx64
					     ", objdump's 0x%" PRIx64,
					     path, names[k], where == 1 ? "call" : "jump",
					     p->offset, ref_offset(&r, want));
				seen[k][1 + where]++;
				continue;
			}
			seen[k][p->ret]++;
			cr_expect_eq(p->offset, ref_offset(&r, v),
				     "%s %s%s: offset 0x%" PRIx64 ", readelf's 0x%" PRIx64, path,
				     names[k], p->ret ? " (return)" : "", p->offset,
				     ref_offset(&r, v));
		}
		if (seen[k][2] || (sites & (1 << k)))
			cr_expect(seen[k][2] == 1 && seen[k][3] == 1 && !seen[k][0] && !seen[k][1],
				  "%s: %s has %d call and %d jump probes, %d entry and %d return",
				  path, names[k], seen[k][2], seen[k][3], seen[k][0], seen[k][1]);
		else
			cr_expect(seen[k][0] == 1 && seen[k][1] == 1,
				  "%s: %s has %d entry and %d return probes", path, names[k],
				  seen[k][0], seen[k][1]);
	}
	cr_assert_eq(m.nprobes, (uint32_t)nprobes, "%s: %u probes", path, m.nprobes);
	cr_assert_eq(m.nprobes, (uint32_t)nfns * 2, "%s: %u probes", path, m.nprobes);
}

Test(tlsfind, openssl_shared)
{
	/* Debian's OpenSSL 3.0: SSL_read and SSL_write are probed on their call sites. */
	check_c_library(LIBSSL3, NET_TLS_OPENSSL, 4, 3);
	cr_expect_str_eq(tlsfind__lib_name(NET_TLS_OPENSSL), "openssl");
}

Test(tlsfind, boringssl_android)
{
	need(BORINGSSL, "android-libboringssl");
	check_c_library(BORINGSSL, NET_TLS_BORINGSSL, 2, 0);
}

Test(tlsfind, node_static_openssl, .timeout = 120)
{
	need(NODE, "nodejs");
	check_c_library(NODE, NET_TLS_NODE, 4, 0);
}

/* ---- Go ---- */

struct go_fn {
	const char *name;
	uint32_t fn, ret_fn;
};

static const struct go_fn go_fns[3] = {
	{ "crypto/tls.(*Conn).Read", NET_TLS_FN_GO_READ, NET_TLS_FN_GO_RET },
	{ "crypto/tls.(*Conn).Write", NET_TLS_FN_GO_WRITE, NET_TLS_FN_GO_RET },
	{ "crypto/tls.(*Conn).handshakeContext", NET_TLS_FN_GO_HANDSHAKE, NET_TLS_FN_GO_HS_RET },
};

/*
 * Go probes come as each function's entry followed by its RETs. Checks that, each RET on a
 * 0xc3 byte of the file, and returns the index of each function's entry probe in ret_entry.
 */
static void check_go_shape(const char *path, const struct msg_tls_attach *m, uint32_t ret_entry[3])
{
	int cur = -1;

	cr_assert_eq(m->lib, NET_TLS_GO, "%s: lib %s", path, tlsfind__lib_name(m->lib));
	for (int k = 0; k < 3; k++)
		ret_entry[k] = UINT32_MAX;
	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		uint32_t fn = p->cookie & 0xff;

		cr_expect_eq(p->cookie >> 8, NET_TLS_GO);
		/* A uretprobe would rewrite a return address on a stack Go moves. */
		cr_expect_eq(p->ret, 0, "%s: probe %u is a return probe", path, i);
		for (int k = 0; k < 3; k++)
			if (fn == go_fns[k].fn) {
				cr_assert_eq(ret_entry[k], UINT32_MAX, "%s: two %s", path,
					     go_fns[k].name);
				ret_entry[k] = i;
				cur = k;
			}
		if (fn == go_fns[0].fn || fn == go_fns[1].fn || fn == go_fns[2].fn)
			continue;
		cr_assert_geq(cur, 0, "%s: a RET probe before any entry", path);
		cr_expect_eq(fn, go_fns[cur].ret_fn, "%s: probe %u (fn %u) after %s", path, i, fn,
			     go_fns[cur].name);
		cr_expect_gt(p->offset, m->probes[ret_entry[cur]].offset);
		cr_expect_eq(byte_at(path, p->offset), 0xc3,
			     "%s: RET probe at 0x%" PRIx64 " on byte 0x%02x", path, p->offset,
			     byte_at(path, p->offset));
	}
	for (int k = 0; k < 3; k++) {
		uint32_t e = ret_entry[k];

		cr_assert_neq(e, UINT32_MAX, "%s: no entry probe of %s", path, go_fns[k].name);
		cr_expect(e + 1 < m->nprobes &&
				  (m->probes[e + 1].cookie & 0xff) == go_fns[k].ret_fn,
			  "%s: no RET probe of %s", path, go_fns[k].name);
	}
}

Test(tlsfind, go_unstripped, .timeout = 60)
{
	const char *names[3] = { go_fns[0].name, go_fns[1].name, go_fns[2].name };
	uint64_t rets[64], values[3], sizes[3], value, size;
	struct msg_tls_attach m;
	char path[PATH_MAX];
	uint32_t entry[3];
	const char *why;
	struct ref r;
	int err;

	program("gotls", path);
	err = probes_of(path, &m, &why);
	cr_assert_eq(err, 0, "%s: %s (%s)", path, strerror(-err), why ? why : "no reason");
	check_go_shape(path, &m, entry);
	ref_loads(path, &r);
	ref_symbols(path, "-s", names, 3, values, sizes);
	for (int k = 0; k < 3; k++) {
		uint32_t next = k < 2 ? entry[k + 1] : m.nprobes;
		int n;

		value = values[k];
		size = sizes[k];
		cr_assert_neq(value, 0, "%s: readelf finds no %s in .symtab", path, go_fns[k].name);
		cr_expect_eq(m.probes[entry[k]].offset, ref_offset(&r, value),
			     "%s: entry 0x%" PRIx64 ", .symtab's 0x%" PRIx64, go_fns[k].name,
			     m.probes[entry[k]].offset, ref_offset(&r, value));
		/* Every RET objdump sees in the function, in order, and no other. */
		n = ref_rets(path, value, value + size, rets, 64);
		cr_assert_gt(n, 0, "objdump sees no RET in %s", go_fns[k].name);
		cr_expect_eq(next - entry[k] - 1, (uint32_t)n, "%s: %u RET probes, objdump sees %d",
			     go_fns[k].name, next - entry[k] - 1, n);
		for (int i = 0; i < n && entry[k] + 1 + (uint32_t)i < next; i++)
			cr_expect_eq(m.probes[entry[k] + 1 + i].offset, ref_offset(&r, rets[i]),
				     "%s: RET %d at 0x%" PRIx64 ", objdump's 0x%" PRIx64,
				     go_fns[k].name, i, m.probes[entry[k] + 1 + i].offset,
				     ref_offset(&r, rets[i]));
	}
}

/* -s -w: no .symtab; the same functions found through .gopclntab alone. */
Test(tlsfind, go_stripped_same_structure, .timeout = 60)
{
	struct msg_tls_attach a, b;
	char plain[PATH_MAX], stripped[PATH_MAX];
	uint32_t ea[3], eb[3];
	const char *why;
	int err;

	program("gotls", plain);
	program("gotls_stripped", stripped);
	sh("! readelf -SW '%s' | grep -q ' \\.symtab '", stripped);
	err = probes_of(plain, &a, &why);
	cr_assert_eq(err, 0, "%s: %s", plain, strerror(-err));
	err = probes_of(stripped, &b, &why);
	cr_assert_eq(err, 0, "%s: %s (%s)", stripped, strerror(-err), why ? why : "no reason");
	check_go_shape(stripped, &b, eb);
	check_go_shape(plain, &a, ea);
	cr_assert_eq(a.nprobes, b.nprobes);
	for (uint32_t i = 0; i < a.nprobes; i++) {
		int k = i >= ea[2] ? 2 : i >= ea[1] ? 1 : 0;

		/* The same probe, at the same place in its function. */
		cr_expect_eq(a.probes[i].cookie, b.probes[i].cookie, "probe %u", i);
		cr_expect_eq(a.probes[i].offset - a.probes[ea[k]].offset,
			     b.probes[i].offset - b.probes[eb[k]].offset, "probe %u", i);
	}
	for (int k = 0; k < 3; k++)
		cr_expect_eq(ea[k], eb[k]);
	/* And the functions as far apart: the same code, laid out alike. */
	cr_expect_eq(a.probes[ea[1]].offset - a.probes[ea[0]].offset,
		     b.probes[eb[1]].offset - b.probes[eb[0]].offset);
	cr_expect_eq(a.probes[ea[2]].offset - a.probes[ea[0]].offset,
		     b.probes[eb[2]].offset - b.probes[eb[0]].offset);
}

/* A PIE names its table .data.rel.ro.gopclntab: the same probes, in their own places. */
Test(tlsfind, go_pie, .timeout = 60)
{
	struct msg_tls_attach a, b;
	char plain[PATH_MAX], pie[PATH_MAX];
	uint32_t ea[3], eb[3];
	const char *why;
	int err;

	program("gotls", plain);
	program("gotls_pie", pie);
	sh("readelf -SW '%s' | grep -q ' \\.data\\.rel\\.ro\\.gopclntab '", pie);
	err = probes_of(plain, &a, &why);
	cr_assert_eq(err, 0, "%s: %s", plain, strerror(-err));
	err = probes_of(pie, &b, &why);
	cr_assert_eq(err, 0, "%s: %s (%s)", pie, strerror(-err), why ? why : "no reason");
	check_go_shape(pie, &b, eb);
	check_go_shape(plain, &a, ea);
	cr_assert_eq(b.lib, NET_TLS_GO);
	for (int k = 0; k < 3; k++)
		cr_expect_eq(ea[k], eb[k], "function %d has other RETs as a PIE", k);
}

/* A Go 1.16/1.17 table (magic 0xfffffffa): the stack ABI, which the probes do not read. */
Test(tlsfind, go_before_1_18_refused, .timeout = 60)
{
	unsigned long long off;
	struct msg_tls_attach m;
	char src[PATH_MAX], path[PATH_MAX], cmd[PATH_MAX + 64], line[512];
	static const uint8_t magic[4] = { 0xfa, 0xff, 0xff, 0xff };
	const char *why;
	int err, found = 0;
	FILE *p;

	program("gotls_stripped", src);
	snprintf(path, sizeof(path), "%s/gotls_go116", tmpdir);
	sh("cp '%s' '%s'", src, path);
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " [%*d] .gopclntab %*s %*x %llx", &off) == 1)
			found = 1;
	cr_assert_eq(pclose(p), 0);
	cr_assert(found, "no .gopclntab in %s", path);
	cr_assert_eq(byte_at(path, off), 0xf0, "not a Go 1.18 table: 0x%02x", byte_at(path, off));
	patch(path, off, magic, sizeof(magic));
	err = probes_of(path, &m, &why);
	cr_expect_eq(err, -EOPNOTSUPP, "%s", strerror(-err));
	cr_assert_not_null(why);
	cr_expect(strstr(why, "Go 1.18"), "reason: %s", why);
}

/* ---- files without TLS, and broken ones ---- */

Test(tlsfind, no_tls_quietly_enoent)
{
	struct msg_tls_attach m;
	const char *why;

	cr_expect_eq(probes_of("/bin/true", &m, &why), -ENOENT);
	/* Most files a target maps have no TLS: nothing to log. */
	cr_expect_null(why, "reason: %s", why);
	cr_expect_eq(m.nprobes, 0);
	cr_expect_eq(m.lib, NET_TLS_NONE);
}

/* A libssl without the calls (stripped of them, or not OpenSSL's): said, since it is odd. */
Test(tlsfind, libssl_without_ssl_read, .timeout = 60)
{
	struct msg_tls_attach m;
	char src[PATH_MAX], lib[PATH_MAX];
	const char *why;
	FILE *f;

	snprintf(src, sizeof(src), "%s/fake.c", tmpdir);
	snprintf(lib, sizeof(lib), "%s/libssl-fake.so", tmpdir);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	/* SSL_write alone: one of the two is not enough. */
	fputs("int SSL_write(void *s, const void *b, int n) { (void)s; (void)b; return n; }\n"
	      "int SSL_peek(void *s, void *b, int n) { (void)s; (void)b; return n; }\n",
	      f);
	cr_assert_eq(fclose(f), 0);
	sh("gcc -shared -fPIC -O1 '%s' -o '%s'", src, lib);
	{
		static const char *const names[2] = { "SSL_write", "SSL_read" };
		uint64_t v[2];

		ref_symbols(lib, "--dyn-syms", names, 2, v, NULL);
		cr_assert(v[0] && !v[1]);
	}
	cr_expect_eq(probes_of(lib, &m, &why), -ENOENT);
	cr_assert_not_null(why);
	cr_expect(strstr(why, "SSL_read"), "reason: %s", why);
	cr_expect_eq(m.nprobes, 0);
}

/* libssl.so.3 cut short: an error with a reason at every length, never probes. */
Test(tlsfind, truncated_libssl)
{
	struct msg_tls_attach m;
	char path[PATH_MAX];
	struct stat st;
	const char *why;
	off_t cuts[] = { 100, 0, 1, 63, 64, 4096, 0, 0 };

	cr_assert_eq(stat(LIBSSL3, &st), 0);
	cuts[6] = st.st_size / 2;
	cuts[7] = st.st_size - 1;
	snprintf(path, sizeof(path), "%s/libssl.so.3", tmpdir);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		int err;

		sh("head -c %lld '%s' > '%s'", (long long)cuts[i], LIBSSL3, path);
		err = probes_of(path, &m, &why);
		cr_expect_lt(err, 0, "%lld bytes: accepted, %u probes", (long long)cuts[i],
			     m.nprobes);
		cr_expect_not_null(why, "%lld bytes: %s without a reason", (long long)cuts[i],
				   strerror(-err));
		if (why)
			cr_log_info("%lld bytes: %s: %s", (long long)cuts[i], strerror(-err), why);
	}
}

/* A descriptor that is no regular file (a pipe): refused before any read blocks on it. */
Test(tlsfind, not_a_regular_file)
{
	struct msg_tls_attach m;
	const char *why = NULL;
	int pfd[2];

	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	memset(&m, 0, sizeof(m));
	cr_expect_eq(tlsfind__probes(pfd[0], "/usr/lib/libssl.so.3", &m, &why), -ENOEXEC);
	cr_expect_not_null(why);
	close(pfd[0]);
	close(pfd[1]);
}

/* A copy of libssl.so.3 whose code segment the header places past the end of the file. */
Test(tlsfind, code_segment_past_the_file)
{
	unsigned long long phoff = 0;
	struct msg_tls_attach m;
	char path[PATH_MAX], cmd[PATH_MAX + 64], line[512];
	uint64_t far = 1ull << 47;
	const char *why;
	int i = 0, code = -1, in_phdrs = 0, err;
	FILE *p;

	snprintf(path, sizeof(path), "%s/libssl.so.3", tmpdir);
	sh("cp '%s' '%s'", LIBSSL3, path);
	/* The program headers' offset, and which of them is the executable LOAD. */
	snprintf(cmd, sizeof(cmd), "readelf -hlW '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, " Start of program headers: %llu", &phoff) == 1)
			continue;
		if (!strncmp(line, "Program Headers:", 16)) {
			in_phdrs = 1;
			continue;
		}
		/* One line per header after the column titles, up to a blank line. */
		if (!in_phdrs || strstr(line, "VirtAddr") || strstr(line, "[Requesting"))
			continue;
		if (line[0] == '\n')
			break;
		if (!strncmp(line, "  LOAD ", 7) && strstr(line, " R E ") && code < 0)
			code = i;
		i++;
	}
	cr_assert_eq(pclose(p), 0);
	cr_assert(phoff && code >= 0, "no program headers or no code segment in %s", path);
	patch(path, phoff + (uint64_t)code * 56 + 8, &far, sizeof(far)); /* p_offset */
	err = probes_of(path, &m, &why);
	cr_expect_eq(err, -ERANGE, "%s", strerror(-err));
	cr_assert_not_null(why);
	cr_expect(strstr(why, "SSL"), "reason: %s", why);
}

/* A Go RET made "ret imm16" (0xc2): a return the worker would not probe, so none are. */
Test(tlsfind, go_ret_other_than_c3, .timeout = 60)
{
	struct msg_tls_attach m;
	char src[PATH_MAX], path[PATH_MAX];
	static const uint8_t c2 = 0xc2;
	const char *why;
	int err;

	program("gotls_stripped", src);
	snprintf(path, sizeof(path), "%s/gotls_c2", tmpdir);
	sh("cp '%s' '%s'", src, path);
	err = probes_of(path, &m, &why);
	cr_assert_eq(err, 0, "%s", strerror(-err));
	cr_assert_eq(m.probes[1].cookie & 0xff, NET_TLS_FN_GO_RET);
	patch(path, m.probes[1].offset, &c2, 1);
	err = probes_of(path, &m, &why);
	cr_expect_eq(err, -EILSEQ, "%s", strerror(-err));
	cr_assert_not_null(why);
	cr_expect(strstr(why, "RET"), "reason: %s", why);
}

/*
 * ---- files written here: one table of each kind, one budget per file ----
 *
 * A 64-bit shared object: one executable page (SSL_read at FAKE_READ, SSL_write at
 * FAKE_WRITE, file offset = address), the section headers and names at 0x1000, .dynstr at
 * 0x1400, .dynsym at FAKE_SYMS. The caller sets the sizes and adds headers from sh[4] on; the
 * file is f.size bytes, sparse past what is written (zeros: no symbols, no table).
 */
#define FAKE_READ 0x100
#define FAKE_WRITE 0x200
#define FAKE_SYMS 0x2000u
enum { FAKE_DYNSTR = 1, FAKE_DYNSYM, FAKE_SHSTRTAB, FAKE_NSH_MAX = 8 };
/* Offsets of the names in fake_shstr. */
enum { NAME_DYNSTR = 1, NAME_DYNSYM = 9, NAME_SHSTRTAB = 17, NAME_SYMTAB = 27, NAME_PCLN = 35 };
static const char fake_shstr[] = "\0.dynstr\0.dynsym\0.shstrtab\0.symtab\0.gopclntab";
static const char fake_dynstr[] = "\0SSL_read\0SSL_write";

struct fake_elf {
	Elf64_Shdr sh[FAKE_NSH_MAX];
	unsigned nsh;
	uint64_t size;
	/* The index in .dynsym of SSL_write, SSL_read after it; 0: neither is there. */
	uint64_t ssl_at;
};

/* .dynsym of nsyms symbols, SSL_write and SSL_read the last two. */
static void fake_elf_init(struct fake_elf *f, uint64_t nsyms)
{
	memset(f, 0, sizeof(*f));
	f->nsh = FAKE_SHSTRTAB + 1;
	f->sh[FAKE_DYNSTR] = (Elf64_Shdr){ .sh_name = NAME_DYNSTR,
					   .sh_type = SHT_STRTAB,
					   .sh_offset = 0x1400,
					   .sh_size = sizeof(fake_dynstr) };
	f->sh[FAKE_DYNSYM] = (Elf64_Shdr){ .sh_name = NAME_DYNSYM,
					   .sh_type = SHT_DYNSYM,
					   .sh_offset = FAKE_SYMS,
					   .sh_size = nsyms * sizeof(Elf64_Sym),
					   .sh_link = FAKE_DYNSTR,
					   .sh_info = 1,
					   .sh_entsize = sizeof(Elf64_Sym) };
	f->sh[FAKE_SHSTRTAB] = (Elf64_Shdr){ .sh_name = NAME_SHSTRTAB,
					     .sh_type = SHT_STRTAB,
					     .sh_offset = 0x1200,
					     .sh_size = sizeof(fake_shstr) };
	f->ssl_at = nsyms >= 3 ? nsyms - 2 : 0;
	f->size = FAKE_SYMS + nsyms * sizeof(Elf64_Sym);
}

static void fake_elf_write(const struct fake_elf *f, const char *path)
{
	static const uint8_t ret = 0xc3;
	uint8_t head[FAKE_SYMS] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)head;
	Elf64_Phdr *ph = (Elf64_Phdr *)(head + sizeof(*eh));
	Elf64_Sym ssl[2] = {
		{ .st_name = 10,
		  .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
		  .st_shndx = 1,
		  .st_value = FAKE_WRITE,
		  .st_size = 1 },
		{ .st_name = 1,
		  .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
		  .st_shndx = 1,
		  .st_value = FAKE_READ,
		  .st_size = 1 },
	};
	int fd;

	test_elf64_header(eh, ET_DYN);
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = 0x1000;
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = (uint16_t)f->nsh;
	eh->e_shstrndx = FAKE_SHSTRTAB;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
			    .p_flags = PF_R | PF_X,
			    .p_filesz = 0x1000,
			    .p_memsz = 0x1000,
			    .p_align = 0x1000 };
	head[FAKE_READ] = ret;
	head[FAKE_WRITE] = ret;
	memcpy(head + 0x1000, f->sh, f->nsh * sizeof(Elf64_Shdr));
	memcpy(head + 0x1200, fake_shstr, sizeof(fake_shstr));
	memcpy(head + 0x1400, fake_dynstr, sizeof(fake_dynstr));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, head, sizeof(head)), (ssize_t)sizeof(head));
	if (f->ssl_at)
		cr_assert_eq(pwrite(fd, ssl, sizeof(ssl),
				    FAKE_SYMS + f->ssl_at * sizeof(Elf64_Sym)),
			     (ssize_t)sizeof(ssl));
	cr_assert_eq(ftruncate(fd, (off_t)f->size), 0);
	close(fd);
}

/* The largest resident set of this test's process so far (Criterion runs each in its own). */
static long maxrss_kib(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* Past the first chunk of symbols read, and in a table of 48 MiB: found, and never held. */
Test(tlsfind, symbols_streamed_not_held)
{
	uint64_t counts[2] = { 3000, (48u << 20) / sizeof(Elf64_Sym) };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/libssl-fake.so", tmpdir);
	for (int i = 0; i < 2; i++) {
		struct msg_tls_attach m;
		struct fake_elf f;
		const char *why;
		long before;
		int err;

		fake_elf_init(&f, counts[i]);
		fake_elf_write(&f, path);
		before = maxrss_kib();
		err = probes_of(path, &m, &why);
		cr_log_info("%llu symbols: the test's peak RSS grew %ld KiB",
			    (unsigned long long)counts[i], maxrss_kib() - before);
		cr_assert_eq(err, 0, "%llu symbols: %s: %s", (unsigned long long)counts[i],
			     strerror(-err), why ? why : "");
		cr_expect_eq(m.lib, NET_TLS_OPENSSL);
		cr_assert_eq(m.nprobes, 4);
		cr_expect_eq(m.probes[0].offset, FAKE_READ);
		cr_expect_eq(m.probes[1].offset, FAKE_READ);
		cr_expect_eq(m.probes[2].offset, FAKE_WRITE);
		cr_expect_eq(m.probes[3].offset, FAKE_WRITE);
		/* The table read whole would be 48 MiB here. */
		cr_expect_lt(maxrss_kib() - before, 4096, "%llu symbols: held",
			     (unsigned long long)counts[i]);
	}
}

/*
 * A linker writes one .dynsym and one .symtab, over bytes of their own: a second table of a
 * kind, or a .symtab over the .dynsym's bytes, makes the file refused, read or not.
 */
Test(tlsfind, repeated_or_overlapping_symbol_tables_refused)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/libssl-fake.so", tmpdir);
	for (int i = 0; i < 3; i++) {
		struct msg_tls_attach m;
		struct fake_elf f;
		const char *why;
		int err;

		fake_elf_init(&f, 100);
		f.sh[f.nsh] = f.sh[FAKE_DYNSYM];
		if (i == 1) {
			/* Another .dynsym, over bytes of its own. */
			f.sh[f.nsh].sh_offset += f.sh[FAKE_DYNSYM].sh_size;
			f.size += f.sh[FAKE_DYNSYM].sh_size;
		} else if (i == 2) {
			/* A .symtab sharing one symbol's bytes with .dynsym. */
			f.sh[f.nsh].sh_name = NAME_SYMTAB;
			f.sh[f.nsh].sh_type = SHT_SYMTAB;
			f.sh[f.nsh].sh_offset += f.sh[FAKE_DYNSYM].sh_size - sizeof(Elf64_Sym);
			f.size += f.sh[FAKE_DYNSYM].sh_size;
		}
		f.nsh++;
		fake_elf_write(&f, path);
		err = probes_of(path, &m, &why);
		cr_expect_eq(err, -ENOEXEC, "case %d: %s", i, strerror(-err));
		cr_expect_eq(m.nprobes, 0);
		cr_assert_not_null(why, "case %d: no reason", i);
		cr_expect(strstr(why, "symbol tables"), "case %d: reason: %s", i, why);
	}
	/* The same .symtab beside the .dynsym: taken. */
	{
		struct msg_tls_attach m;
		struct fake_elf f;
		const char *why;
		int err;

		fake_elf_init(&f, 100);
		f.sh[f.nsh] = f.sh[FAKE_DYNSYM];
		f.sh[f.nsh].sh_name = NAME_SYMTAB;
		f.sh[f.nsh].sh_type = SHT_SYMTAB;
		f.sh[f.nsh].sh_offset += f.sh[FAKE_DYNSYM].sh_size;
		f.size += f.sh[FAKE_DYNSYM].sh_size;
		f.nsh++;
		fake_elf_write(&f, path);
		err = probes_of(path, &m, &why);
		cr_expect_eq(err, 0, "%s: %s", strerror(-err), why ? why : "");
		cr_expect_eq(m.nprobes, 4);
	}
}

/*
 * One budget for what a file makes us read (ELFSYM_FILE_BUDGET: 64 MiB): a .dynsym over it,
 * a .dynsym and a .symtab of 40 MiB each, a .gopclntab over it. Each refused with a reason
 * naming the budget, before the bytes are read.
 */
Test(tlsfind, one_budget_per_file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/libssl-fake.so", tmpdir);
	for (int i = 0; i < 3; i++) {
		struct msg_tls_attach m;
		struct fake_elf f;
		const char *why;
		long before;
		int err;

		if (i == 0) {
			fake_elf_init(&f, (65u << 20) / sizeof(Elf64_Sym));
		} else if (i == 1) {
			fake_elf_init(&f, (40u << 20) / sizeof(Elf64_Sym));
			f.sh[f.nsh] = f.sh[FAKE_DYNSYM];
			f.sh[f.nsh].sh_name = NAME_SYMTAB;
			f.sh[f.nsh].sh_type = SHT_SYMTAB;
			f.sh[f.nsh].sh_offset += f.sh[FAKE_DYNSYM].sh_size;
			f.size += f.sh[FAKE_DYNSYM].sh_size;
			f.nsh++;
		} else {
			/* No SSL calls: the Go table is looked at. */
			fake_elf_init(&f, 1);
			f.sh[f.nsh++] = (Elf64_Shdr){ .sh_name = NAME_PCLN,
						      .sh_type = SHT_PROGBITS,
						      .sh_offset = f.size,
						      .sh_size = 65u << 20 };
			f.size += 65u << 20;
		}
		fake_elf_write(&f, path);
		before = maxrss_kib();
		err = probes_of(path, &m, &why);
		cr_expect_eq(err, -EFBIG, "case %d: %s", i, strerror(-err));
		cr_expect_eq(m.nprobes, 0);
		cr_assert_not_null(why, "case %d: no reason", i);
		cr_expect(strstr(why, "budget of 64 MiB"), "case %d: reason: %s", i, why);
		cr_expect_lt(maxrss_kib() - before, 4096, "case %d: read", i);
	}
}

/* ---- the finder on a live process ---- */

struct found_log {
	int calls;
	struct msg_tls_attach m;
	struct stat st; /* of the descriptor handed over */
};

static int on_found(void *ctx, const struct msg_tls_attach *m, int fd)
{
	struct found_log *log = ctx;

	log->calls++;
	log->m = *m;
	cr_assert_eq(fstat(fd, &log->st), 0);
	return 0;
}

/* CPython mapping libssl.so.3 when it imports ssl (its _ssl module links it). */
Test(tlsfind, scan_live_python, .timeout = 60)
{
	struct found_log log = { 0 };
	const struct tls_probed *probed;
	struct msg_tls_result res;
	struct tls_finder *f;
	struct stat want;
	char ready[16];
	uint32_t n;
	FILE *rd;
	int out[2], rc;

	need("/usr/bin/python3", "python3");
	cr_assert_eq(stat(LIBSSL3, &want), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		dup2(out[1], 1);
		/* "ready" once ssl is imported: libssl is mapped whole, no dlopen under way. */
		execl("/usr/bin/python3", "python3", "-c",
		      "import ssl,time; print('ready', flush=True); time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	rd = fdopen(out[0], "re");
	cr_assert_not_null(rd);
	/* Python may write "ready" and its newline apart. */
	cr_assert_not_null(fgets(ready, sizeof(ready), rd), "python3 -c 'import ssl' failed");
	cr_assert_str_eq(ready, "ready\n");
	fclose(rd);

	f = tls_finder__new(42);
	cr_assert_not_null(f);
	rc = tls_finder__scan(f, &fd_opener_direct, child, on_found, &log);
	cr_assert_eq(rc, 1, "scan: %d", rc);
	cr_assert_eq(log.calls, 1);
	cr_expect_str_eq(log.m.path, LIBSSL3);
	cr_expect_eq(log.m.task_id, 42);
	cr_expect_eq(log.m.pid, child);
	cr_expect_eq(log.m.lib, NET_TLS_OPENSSL);
	cr_expect_eq(log.m.nprobes, 8);
	cr_expect_neq(log.m.seq, 0);
	cr_expect(log.st.st_dev == want.st_dev && log.st.st_ino == want.st_ino,
		  "the descriptor handed over is not libssl.so.3's");

	/* The same process again: every file was looked at. */
	log.calls = 0;
	rc = tls_finder__scan(f, &fd_opener_direct, child, on_found, &log);
	cr_expect_eq(rc, 0);
	cr_expect_eq(log.calls, 0);

	probed = tls_finder__probed(f, &n);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(probed[0].path, LIBSSL3);
	cr_expect_eq(probed[0].pid, child);
	cr_expect_eq(probed[0].lib, NET_TLS_OPENSSL);
	cr_expect_eq(probed[0].nprobes, 8);
	cr_expect_eq(probed[0].seq, log.m.seq);
	cr_expect_eq(probed[0].err, 1, "an answer before the worker gave one");

	/* Another attach's answer changes nothing; this one's is kept. */
	res = (struct msg_tls_result){
		.task_id = 42, .pid = child, .seq = log.m.seq + 1, .err = -EPERM
	};
	tls_finder__result(f, &res);
	probed = tls_finder__probed(f, &n);
	cr_expect_eq(probed[0].err, 1);
	res = (struct msg_tls_result){
		.task_id = 42, .pid = child, .seq = log.m.seq, .attached = 8
	};
	tls_finder__result(f, &res);
	probed = tls_finder__probed(f, &n);
	cr_assert_eq(n, 1);
	cr_expect_eq(probed[0].err, 0);
	cr_expect_eq(probed[0].attached, 8);
	tls_finder__free(f);
}

static int never_found(void *ctx, const struct msg_tls_attach *m, int fd)
{
	(void)ctx;
	(void)m;
	(void)fd;
	cr_assert_fail("found in a process that is gone");
	return 0;
}

/* A process gone before its scan: its maps cannot be had, nothing is found. */
Test(tlsfind, scan_gone_process)
{
	struct tls_finder *f = tls_finder__new(1);
	pid_t pid = fork();
	uint32_t n;

	cr_assert_not_null(f);
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_expect_lt(tls_finder__scan(f, &fd_opener_direct, pid, never_found, NULL), 0);
	tls_finder__probed(f, &n);
	cr_expect_eq(n, 0);
	tls_finder__free(f);
	/* NULL is freed as nothing. */
	tls_finder__free(NULL);
}

/* ---- call sites (common/tlssite.c) ---- */

/* OpenSSL 3.0's SSL_write as Debian 12 builds it, to its test of the _ex call's result. */
static const uint8_t ssl_write_30[] = {
	0x48, 0x83, 0xec, 0x18,			     /* sub $0x18,%rsp */
	0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0, /* mov %fs:0x28,%rax */
	0x48, 0x89, 0x44, 0x24, 0x08,		     /* mov %rax,0x8(%rsp) */
	0x31, 0xc0,				     /* xor %eax,%eax */
	0x85, 0xd2,				     /* test %edx,%edx */
	0x78, 0x2f,				     /* js +0x2f */
	0x48, 0x89, 0xe1,			     /* mov %rsp,%rcx */
	0x48, 0x63, 0xd2,			     /* movslq %edx,%rdx */
	0xe8, 0xfd, 0xfb, 0xff, 0xff,		     /* call */
	0x85, 0xc0,				     /* test %eax,%eax */
	0x7e, 0x03,				     /* jle +3 */
	0x8b, 0x04, 0x24,			     /* mov (%rsp),%eax */
};

static int site_of(const uint8_t *code, size_t len, struct tls_site *s)
{
	return tls_site_find(code, len, s);
}

Test(tlssite, openssl_30_wrapper_is_found)
{
	struct tls_site s;

	cr_assert_eq(site_of(ssl_write_30, sizeof(ssl_write_30), &s), 0);
	cr_expect_eq(s.call_off, 0x1e);
	cr_expect_eq(s.after_off, 0x25);
}

/* Each change below could make the probes read the wrong registers: the entry is kept. */
Test(tlssite, prologues_that_could_change_the_arguments_are_refused)
{
	struct {
		size_t at, n;
		const char *bytes, *why;
	} edits[] = {
		{ 24, 3, "\x31\xc9\x90", "xor %ecx,%ecx (OpenSSL 3.3's flags argument)" },
		{ 24, 3, "\x48\x89\xd6", "mov %rdx,%rsi" },
		{ 27, 3, "\x48\x89\xfa", "mov %rdi,%rdx" },
		{ 22, 2, "\x78\xf0", "a jump backwards" },
		{ 22, 2, "\x78\x0b", "a jump into the call's test" },
		{ 35, 2, "\x90\x90", "no test and jump after the call" },
		{ 13, 5, "\x48\x89\x4c\x24\x08", "a store of %rcx (unknown: not in the list)" },
	};

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		uint8_t code[sizeof(ssl_write_30)];
		struct tls_site s;

		memcpy(code, ssl_write_30, sizeof(code));
		memcpy(code + edits[i].at, edits[i].bytes, edits[i].n);
		cr_expect_eq(site_of(code, sizeof(code), &s), -ENOENT, "accepted with %s",
			     edits[i].why);
	}
}

Test(tlssite, code_cut_short_is_refused)
{
	struct tls_site s;

	for (size_t len = 0; len < 39; len++)
		cr_expect_eq(site_of(ssl_write_30, len, &s), -ENOENT, "accepted in %zu bytes", len);
	cr_expect_eq(site_of(ssl_write_30, 39, &s), 0);
}
