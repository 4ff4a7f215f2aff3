// SPDX-License-Identifier: Apache-2.0
/*
 * The worker's reading of V8's v8dbg_ globals from a node file (worker/v8structs.c): on this
 * machine's node, each value against an independent reading of the file (libelf: the dynamic
 * symbol's section, not the program headers), against a running node's memory, and the
 * offsets V8 does not export against the objects of a running node as %DebugPrint shows them;
 * then files a hostile shipper could hand instead: cut, renamed, pointed outside themselves,
 * with counts past the file, of another V8.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shipper/stacks/python.h"
#include "tests/unit/v8_build.h"
#include "worker/v8structs.h"

static const char *node_path(void)
{
	static char buf[PATH_MAX];

	if (!realpath("/usr/bin/node", buf))
		cr_skip_test("no node on this machine");
	return buf;
}

static int parse_fd(int fd, struct v8_layout *l, const char **why)
{
	*why = NULL;
	return v8structs__file(fd, l, why);
}

static int parse(const char *path, struct v8_layout *l, const char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	err = parse_fd(fd, l, why);
	close(fd);
	return err;
}

/* The int in struct v8_layout that entry (kind, at) fills. */
static int64_t layout_value(const struct v8_layout *l, int kind, unsigned int at)
{
	return vb_value(l, kind, at);
}

/* --- an independent reading: libelf, by sections ----------------------------------------- */

struct ref_sym {
	int found, bss;
	uint64_t addr;
	int32_t value;
};

/* Each wanted symbol of the file at path, found in .dynsym by libelf and read from the bytes
 * of the section it is defined in. */
static void ref_read(const char *path, struct ref_sym *out, unsigned int n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e);
	memset(out, 0, n * sizeof(*out));
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			GElf_Shdr dsh;
			const char *name;

			gelf_getsym(d, (int)i, &s);
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
				continue;
			for (unsigned int k = 0; k < n; k++) {
				if (strcmp(name, v8structs__entry(k, NULL, NULL)))
					continue;
				gelf_getshdr(elf_getscn(e, s.st_shndx), &dsh);
				out[k].found = 1;
				out[k].addr = s.st_value;
				if (dsh.sh_type == SHT_NOBITS) {
					out[k].bss = 1;
				} else {
					cr_assert_eq(pread(fd, &out[k].value, 4,
							   (off_t)(dsh.sh_offset + s.st_value -
								   dsh.sh_addr)),
						     4);
				}
			}
		}
	}
	elf_end(e);
	close(fd);
}

static unsigned int n_entries(void)
{
	unsigned int n = 0;

	while (v8structs__entry(n, NULL, NULL))
		n++;
	return n;
}

/*
 * The shipper's copy of V8 11.3's bytecode lengths (v8_bytecode_sizes, for baseline frames'
 * lines) is node's own: v8::internal::interpreter::Bytecodes::kBytecodeSizes, a uint8_t[3][N]
 * in .rodata, exported.
 */
Test(v8structs, bytecode_sizes_are_nodes)
{
	static const char sym[] = "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE";
	uint8_t file[3 * V8_BYTECODES];
	int fd = open(node_path(), O_RDONLY | O_CLOEXEC), found = 0;
	Elf_Scn *scn = NULL;
	Elf *e;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e);
	while ((scn = elf_nextscn(e, scn)) && !found) {
		GElf_Shdr sh, dsh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !found; i++) {
			GElf_Sym s;
			const char *name;

			gelf_getsym(d, (int)i, &s);
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || strcmp(name, sym) || s.st_shndx == SHN_UNDEF ||
			    s.st_shndx >= SHN_LORESERVE)
				continue;
			cr_assert_eq(s.st_size, sizeof(file), "%s is %lu bytes, not 3 x %d", sym,
				     (unsigned long)s.st_size, V8_BYTECODES);
			gelf_getshdr(elf_getscn(e, s.st_shndx), &dsh);
			cr_assert_eq(pread(fd, file, sizeof(file),
					   (off_t)(dsh.sh_offset + s.st_value - dsh.sh_addr)),
				     (ssize_t)sizeof(file));
			found = 1;
		}
	}
	elf_end(e);
	close(fd);
	cr_assert(found, "%s not in node's .dynsym", sym);
	cr_assert_eq(memcmp(file, v8_bytecode_sizes, sizeof(file)), 0);
}

/* Node 20 on this machine: every value as libelf reads it, and what the walker relies on. */
Test(v8structs, node_against_libelf)
{
	const char *path = node_path();
	unsigned int n = n_entries(), bss = 0;
	struct ref_sym ref[128];
	struct v8_layout l;
	const char *why;
	int err;

	cr_assert_leq(n, 128);
	err = parse(path, &l, &why);
	cr_assert_eq(err, 0, "%s: %d %s", path, err, why);
	ref_read(path, ref, n);
	for (unsigned int i = 0; i < n; i++) {
		int kind;
		unsigned int at;
		const char *name = v8structs__entry(i, &kind, &at);

		cr_assert(ref[i].found, "%s: libelf finds no %s", path, name);
		cr_assert_eq(layout_value(&l, kind, at), ref[i].value, "%s: %ld, libelf %d", name,
			     (long)layout_value(&l, kind, at), ref[i].value);
		bss += ref[i].bss && strncmp(name, "_ZN", 3);
	}
	cr_assert_eq(l.n_bss, bss, "%u in .bss, libelf says %u", l.n_bss, bss);
	cr_assert_eq(l.n_symbols, n - 4);
	/* Node 20's V8 and what docs/node-frames.md says of it. */
	cr_assert_eq(l.major, 11);
	cr_assert_eq(l.minor, 3);
	cr_assert_eq(l.tagged_size, 8, "node 20 is built without pointer compression");
	cr_assert_eq(l.fp_context, -8);
	cr_assert_eq(l.fp_function, -16);
	cr_assert_eq(l.fp_bytecode_array, -32);
	cr_assert_eq(l.fp_bytecode_offset, -40);
	cr_assert_eq(l.flags, V8_F_CODE_START_PTR);
	cr_assert_eq(l.type_js_function_last, l.type_js_function_first + 15);
}

/* The version agrees with the one node says it runs. */
Test(v8structs, version_as_node_says)
{
	struct v8_layout l;
	const char *why;
	char want[64], got[64];
	FILE *p;

	cr_assert_eq(parse(node_path(), &l, &why), 0);
	p = popen("node -p process.versions.v8", "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(want, sizeof(want), p));
	pclose(p);
	snprintf(got, sizeof(got), "%u.%u.%u.%u", l.major, l.minor, l.build, l.patch);
	cr_assert_eq(strncmp(want, got, strlen(got)), 0, "file %s, node %s", got, want);
}

/* --- a running node ------------------------------------------------------------------------ */

/* Starts node with args, its stdout on a pipe (*ret_out); the pid. */
static pid_t start_node(const char *const *args, FILE **ret_out)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(node_path(), (char *const *)args);
		_exit(127);
	}
	close(p[1]);
	*ret_out = fdopen(p[0], "r");
	return pid;
}

static void stop_node(pid_t pid, FILE *out)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (out)
		fclose(out);
}

static int mem_read(int mem, uint64_t addr, void *buf, size_t n)
{
	return pread(mem, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* Each symbol read from the running node's memory at its address (node is not position
 * independent: loaded where the file says), against the file's reading. */
Test(v8structs, node_against_live, .timeout = 60)
{
	static const char *const args[] = { "node", "-e",
					    "console.log('up'); setInterval(() => {}, 1000)",
					    NULL };
	const char *path = node_path();
	unsigned int n = n_entries();
	struct ref_sym ref[128];
	int32_t live[128];
	struct v8_layout l;
	const char *why;
	char line[64], fn[64];
	FILE *out;
	pid_t pid;
	int mem, bad = -1;

	cr_assert_eq(parse(path, &l, &why), 0);
	ref_read(path, ref, n);
	pid = start_node(args, &out);
	if (!fgets(line, sizeof(line), out)) {
		stop_node(pid, out);
		cr_assert_fail("node did not start");
	}
	snprintf(fn, sizeof(fn), "/proc/%d/mem", pid);
	mem = open(fn, O_RDONLY | O_CLOEXEC);
	for (unsigned int i = 0; mem >= 0 && i < n; i++)
		if (mem_read(mem, ref[i].addr, &live[i], 4) && bad < 0)
			bad = (int)i;
	if (mem >= 0)
		close(mem);
	stop_node(pid, out);
	cr_assert_geq(mem, 0, "%s: %s", fn, strerror(errno));
	cr_assert_lt(bad, 0, "reading %s live", bad < 0 ? "" : v8structs__entry(bad, NULL, NULL));
	for (unsigned int i = 0; i < n; i++) {
		int kind;
		unsigned int at;
		const char *name = v8structs__entry(i, &kind, &at);

		cr_assert_eq(layout_value(&l, kind, at), live[i], "%s: %ld in the file, %d live",
			     name, (long)layout_value(&l, kind, at), live[i]);
	}
}

/* A heap object's instance type, through its map. */
static int obj_type(int mem, const struct v8_layout *l, uint64_t tagged, uint16_t *ret)
{
	uint64_t map;

	if ((tagged & l->heap_object_tag_mask) != l->heap_object_tag ||
	    mem_read(mem, tagged - l->heap_object_tag + l->heap_object_map, &map, 8) ||
	    (map & l->heap_object_tag_mask) != l->heap_object_tag)
		return -1;
	return mem_read(mem, map - l->heap_object_tag + l->map_instance_type, ret, 2);
}

struct printed {
	uint64_t fn, shared, code;
	char kind[64];
};

/*
 * The offsets from the version table, on live objects: a running node prints functions with
 * %DebugPrint (their address, shared info, code and its kind); the test reads the same from
 * its memory through the layout. Hot is optimized by TurboFan; K is a class constructor and
 * Int8Array, Array, Promise and RegExp are the other subtypes of JSFunction; the bound function
 * is not one.
 */
Test(v8structs, unexported_offsets_live, .timeout = 60)
{
	static const char *const args[] = {
		"node", "--allow-natives-syntax", "-e",
		"class K {}\n"
		"function hot(a) { let s = 0; for (let i = 0; i < a; i++) s += i; return s }\n"
		"for (let i = 0; i < 200000; i++) hot(100);\n"
		"for (const f of [hot, K, Int8Array, BigUint64Array, Array, Promise, RegExp, "
		"Math.max, hot.bind(null)]) %DebugPrint(f);\n"
		"console.log('END'); setInterval(() => {}, 1000)",
		NULL
	};
	struct printed pr[16] = { 0 };
	struct v8_layout l;
	const char *why;
	char line[512], fn[64];
	unsigned int np = 0;
	uint16_t types[16] = { 0 }, code_types[16] = { 0 };
	uint64_t shared[16] = { 0 }, code[16] = { 0 }, start[16] = { 0 };
	uint32_t flags[16] = { 0 };
	int32_t size[16] = { 0 };
	FILE *out;
	pid_t pid;
	int mem, failed = 0;

	cr_assert_eq(parse(node_path(), &l, &why), 0);
	pid = start_node(args, &out);
	while (fgets(line, sizeof(line), out) && strncmp(line, "END", 3)) {
		unsigned long long a;
		char kind[64];

		if (sscanf(line, "DebugPrint: 0x%llx", &a) == 1 && np < 16)
			pr[np++].fn = a;
		else if (np && sscanf(line, " - shared_info: 0x%llx", &a) == 1)
			pr[np - 1].shared = a;
		else if (np && sscanf(line, " - code: 0x%llx <Code %63[^>]>", &a, kind) == 2) {
			pr[np - 1].code = a;
			snprintf(pr[np - 1].kind, sizeof(pr[np - 1].kind), "%s", kind);
		}
	}
	snprintf(fn, sizeof(fn), "/proc/%d/mem", pid);
	mem = open(fn, O_RDONLY | O_CLOEXEC);
	for (unsigned int i = 0; mem >= 0 && i < np; i++) {
		uint64_t o = pr[i].fn - l.heap_object_tag;

		failed |= obj_type(mem, &l, pr[i].fn, &types[i]);
		if (!pr[i].code)
			continue;
		failed |= mem_read(mem, o + l.js_function_shared, &shared[i], 8);
		failed |= mem_read(mem, o + l.js_function_code, &code[i], 8);
		failed |= obj_type(mem, &l, code[i], &code_types[i]);
		o = code[i] - l.heap_object_tag;
		failed |= mem_read(mem, o + l.code_instruction_start, &start[i], 8);
		failed |= mem_read(mem, o + l.code_flags, &flags[i], 4);
		failed |= mem_read(mem, o + l.code_instruction_size, &size[i], 4);
	}
	if (mem >= 0)
		close(mem);
	stop_node(pid, out);
	cr_assert_geq(mem, 0, "%s", fn);
	cr_assert_eq(np, 9, "%u functions printed", np);
	cr_assert_eq(failed, 0, "reading the objects");
	for (unsigned int i = 0; i < np; i++) {
		bool bound = i == np - 1;
		unsigned int kind = (flags[i] & l.codekind_mask) >> l.codekind_shift;

		cr_assert_eq(bound,
			     types[i] < l.type_js_function_first ||
				     types[i] > l.type_js_function_last,
			     "function %u: type %u, JSFunction %u..%u", i, types[i],
			     l.type_js_function_first, l.type_js_function_last);
		if (bound)
			continue;
		cr_assert_eq(shared[i], pr[i].shared, "function %u: JSFunction::shared", i);
		cr_assert_eq(code[i], pr[i].code, "function %u: JSFunction::code", i);
		cr_assert_eq(code_types[i], l.type_code, "function %u: Code's type", i);
		cr_assert_gt(size[i], 0, "function %u: Code::instruction_size %d", i, size[i]);
		cr_assert_neq(start[i], 0, "function %u: Code::instruction_start", i);
		if (!strcmp(pr[i].kind, "TURBOFAN"))
			cr_assert_gt(kind, l.codekind_baseline, "hot: kind %u", kind);
		else
			cr_assert_lt(kind, l.codekind_interpreted, "%s: kind %u", pr[i].kind, kind);
	}
	cr_assert_eq(strcmp(pr[0].kind, "TURBOFAN"), 0, "hot is %s", pr[0].kind);
	cr_assert_eq(types[1], l.type_js_function_last, "a class constructor is the last type");
}

/* --- hostile files ------------------------------------------------------------------------ */

static struct vb built;

/* The layout of this machine's node written as a small file (mode: 0 or VB_SYMTAB_ONLY). */
static void build(struct v8_layout *l, unsigned int mode)
{
	const char *why;

	cr_assert_eq(parse(node_path(), l, &why), 0);
	vb_build(&built, l, mode);
}

static int parse_bytes(const void *b, size_t n, struct v8_layout *l, const char **why)
{
	int fd = memfd_create("v8structs", MFD_CLOEXEC), err;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	err = parse_fd(fd, l, why);
	close(fd);
	return err;
}

/* The small file reads as the node it was built from, through either symbol table. */
Test(v8structs, built_round_trip)
{
	for (unsigned int mode = 0; mode < 2; mode++) {
		struct v8_layout l, m;
		const char *why;
		int err;

		build(&l, mode);
		memset(&m, 0xa5, sizeof(m));
		err = parse_bytes(built.b, built.len, &m, &why);
		cr_assert_eq(err, 0, "mode %u: %d %s", mode, err, why);
		cr_assert_eq(memcmp(&l, &m, sizeof(l)), 0, "mode %u", mode);
	}
}

/* Cut at every 8th byte, through either table: an error with a reason, never a crash, and
 * nothing written; or, through the dynamic symbols, the same layout once the cut is past all
 * they need (the section headers come last). */
Test(v8structs, built_every_cut, .timeout = 60)
{
	for (unsigned int mode = 0; mode < 2; mode++) {
		struct v8_layout l, m;

		build(&l, mode);
		for (uint32_t cut = 0; cut < built.len; cut += 8) {
			const char *why;
			int err;

			memset(&m, 0xa5, sizeof(m));
			err = parse_bytes(built.b, cut, &m, &why);
			if (!mode && cut >= built.shdrs) {
				cr_assert_eq(err, 0, "cut %u: %d", cut, err);
				cr_assert_eq(memcmp(&l, &m, sizeof(l)), 0);
				continue;
			}
			cr_assert(err == -ENOEXEC || err == -ENOENT, "mode %u cut %u: %d", mode,
				  cut, err);
			cr_assert(why && why[0], "mode %u cut %u: no reason", mode, cut);
			cr_assert_eq(((uint8_t *)&m)[0], 0xa5, "written on failure");
		}
	}
}

/* The real node cut at a few points: at the start of .data, where the values are, in .rodata,
 * in the dynamic symbols, in its headers (one copy in a memfd, cut shorter and shorter). Whole
 * up to the end of .data it reads as node. */
Test(v8structs, node_truncated, .timeout = 120)
{
	static const uint64_t cuts[] = { 0x525b4c0, 0x523d000,	 0x523b000, 0x2201000, 0x76f000,
					 0x479ff8,  64 + 56 * 3, 63,	    0 };
	int src = open(node_path(), O_RDONLY | O_CLOEXEC);
	int fd = memfd_create("node_cut", MFD_CLOEXEC);
	static char buf[1 << 20];
	ssize_t n;
	off_t off = 0;

	cr_assert_geq(src, 0);
	cr_assert_geq(fd, 0);
	while ((n = pread(src, buf, sizeof(buf), off)) > 0 && off < (off_t)cuts[0]) {
		cr_assert_eq(write(fd, buf, (size_t)n), n);
		off += n;
	}
	close(src);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct v8_layout l;
		const char *why;
		int err;

		cr_assert_eq(ftruncate(fd, (off_t)cuts[i]), 0);
		err = parse_fd(fd, &l, &why);
		if (!i) {
			cr_assert_eq(err, 0, "whole to .bss: %d %s", err, why);
			continue;
		}
		cr_assert(err == -ENOEXEC || err == -ENOENT, "cut at %#lx: %d %s",
			  (unsigned long)cuts[i], err, why ? why : "");
		cr_assert(why && why[0]);
	}
	close(fd);
}

static Elf64_Sym *built_sym(const char *name)
{
	Elf64_Sym *s = (Elf64_Sym *)(built.b + built.symtab);

	for (uint32_t i = 1; i < built.nsyms; i++)
		if (!strcmp((char *)built.b + built.strtab + s[i].st_name, name))
			return &s[i];
	cr_assert_fail("no %s", name);
	return NULL;
}

/* A mandatory symbol missing (renamed): refused, naming it. */
Test(v8structs, missing_symbol_named)
{
	static const char *const names[] = { "v8dbg_off_fp_function", "v8dbg_type_Code__CODE_TYPE",
					     "v8dbg_class_HeapObject__map__Map",
					     "_ZN2v88internal7Version6major_E" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		for (unsigned int mode = 0; mode < 2; mode++) {
			struct v8_layout l;
			const char *why;
			char *p;
			int err;

			build(&l, mode);
			p = (char *)built.b + built.strtab + built_sym(names[i])->st_name;
			p[strlen(p) - 1] ^= 0x20;
			err = parse_bytes(built.b, built.len, &l, &why);
			cr_assert_eq(err, -ENOEXEC, "%s mode %u: %d", names[i], mode, err);
			cr_assert_str_eq(why, names[i]);
		}
	}
}

/* A symbol whose address is in no segment, or across the end of the file's bytes. */
Test(v8structs, symbol_outside)
{
	static const uint64_t addrs[] = { 0, VB_BASE - 4, VB_BASE + (64u << 20), UINT64_MAX - 1 };

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		struct v8_layout l;
		const char *why;
		int err;

		build(&l, 0);
		built_sym("v8dbg_off_fp_context")->st_value = addrs[i];
		err = parse_bytes(built.b, built.len, &l, &why);
		cr_assert_eq(err, -ENOEXEC, "%#lx: %d", (unsigned long)addrs[i], err);
		cr_assert_str_eq(why, "v8dbg_off_fp_context");
	}
}

/* The symbol tables pointing outside the file, and counts far past it. */
Test(v8structs, tables_outside_and_huge_counts, .timeout = 30)
{
	struct v8_layout l;
	const char *why;
	Elf64_Dyn *d;
	Elf64_Shdr *sh;
	int err;

	build(&l, 0);
	d = (Elf64_Dyn *)(built.b + built.dynamic);
	d[1].d_un.d_ptr = VB_BASE + (1u << 30); /* DT_SYMTAB */
	{
		struct v8_layout m;

		/* No dynamic symbols to read: the static ones are. */
		err = parse_bytes(built.b, built.len, &m, &why);
		cr_assert_eq(err, 0, "DT_SYMTAB outside: %d", err);
		cr_assert_eq(memcmp(&l, &m, sizeof(l)), 0);
	}
	((Elf64_Ehdr *)built.b)->e_shoff = 0;
	err = parse_bytes(built.b, built.len, &l, &why);
	cr_assert_eq(err, -ENOENT, "DT_SYMTAB outside, no sections: %d", err);

	build(&l, 0);
	((uint32_t *)(built.b + built.hash))[0] = UINT32_MAX; /* nbucket */
	err = parse_bytes(built.b, built.len, &l, &why);
	cr_assert_eq(err, 0, "nbucket: %d (the static symbols are read)", err);
	((Elf64_Ehdr *)built.b)->e_shoff = 0;
	err = parse_bytes(built.b, built.len, &l, &why);
	cr_assert_eq(err, -ENOENT, "nbucket, no sections: %d", err);

	build(&l, VB_SYMTAB_ONLY);
	sh = (Elf64_Shdr *)(built.b + built.shdrs);
	sh[1].sh_size = UINT64_MAX / 2;
	err = parse_bytes(built.b, built.len, &l, &why);
	cr_assert_eq(err, -ENOEXEC, "symtab size: %d", err);
	cr_assert_str_eq(why, ".symtab");

	build(&l, VB_SYMTAB_ONLY);
	((Elf64_Ehdr *)built.b)->e_shnum = 0xffff;
	err = parse_bytes(built.b, built.len, &l, &why);
	cr_assert_eq(err, -ENOEXEC, "e_shnum: %d", err);

	build(&l, VB_SYMTAB_ONLY);
	sh = (Elf64_Shdr *)(built.b + built.shdrs);
	sh[2].sh_offset = UINT64_MAX - 8;
	err = parse_bytes(built.b, built.len, &l, &why);
	cr_assert_eq(err, -ENOEXEC, "strtab offset: %d", err);
}

/* A static symbol table larger than the budget: -E2BIG, not 8 MiB read and on. */
Test(v8structs, over_budget, .timeout = 30)
{
	int fd = memfd_create("v8big", MFD_CLOEXEC), err;
	struct v8_layout l;
	const char *why;
	Elf64_Shdr *sh;

	build(&l, VB_SYMTAB_ONLY);
	sh = (Elf64_Shdr *)(built.b + built.shdrs);
	sh[1].sh_size = (uint64_t)(V8STRUCTS_MAX_READ + (1u << 20)) / 24 * 24;
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, built.b, built.len), (ssize_t)built.len);
	cr_assert_eq(ftruncate(fd, (off_t)(built.symtab + sh[1].sh_size)), 0);
	err = parse_fd(fd, &l, &why);
	close(fd);
	cr_assert_eq(err, -E2BIG, "%d %s", err, why ? why : "");
}

/* Another V8, pointer compression, another tagging, a value out of its slot's range. */
Test(v8structs, refusals)
{
	struct v8_layout l, m;
	const char *why;
	int err;

	build(&l, 0);
	m = l;
	m.minor = 4;
	vb_build(&built, &m, 0);
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -EPROTONOSUPPORT);
	cr_assert_not_null(strstr(why, "V8 11.4"), "%s", why);

	m = l;
	m.major = 12;
	m.minor = 4;
	vb_build(&built, &m, VB_SYMTAB_ONLY);
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -EPROTONOSUPPORT);
	cr_assert_not_null(strstr(why, "V8 12.4"), "%s", why);

	m = l;
	m.tagged_size = 4;
	vb_build(&built, &m, 0);
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -EPROTONOSUPPORT);
	cr_assert_not_null(strstr(why, "pointer compression"), "%s", why);

	m = l;
	m.smi_shift_size = 0;
	vb_build(&built, &m, 0);
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -EPROTONOSUPPORT, "%d %s", err, why);

	m = l;
	m.js_function_shared = 32;
	vb_build(&built, &m, 0);
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -EPROTONOSUPPORT, "moved JSFunction::shared: %d", err);

	vb_build(&built, &l, 0);
	{
		int32_t big = 300;
		Elf64_Sym *s = built_sym("v8dbg_frametype_EntryFrame");

		memcpy(built.b + (s->st_value - VB_BASE), &big, 4);
	}
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -ENOEXEC);
	cr_assert_str_eq(why, "v8dbg_frametype_EntryFrame");

	vb_build(&built, &l, 0);
	built_sym("v8dbg_off_fp_function")->st_value = VB_BASE + built.len + 8; /* .bss: 0 */
	err = parse_bytes(built.b, built.len, &m, &why);
	cr_assert_eq(err, -ENOEXEC, "a frame slot of 0");
	cr_assert_str_eq(why, "v8dbg_off_fp_function");
}

/* Files that are not a node with the symbols. */
Test(v8structs, not_node)
{
	struct v8_layout l;
	const char *why;
	int p[2], err;

	err = parse("/bin/true", &l, &why);
	cr_assert_eq(err, -ENOENT, "/bin/true: %d %s", err, why);
	cr_assert_not_null(strstr(why, "v8dbg_"));
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(parse_fd(p[0], &l, &why), -EBADF);
	close(p[0]);
	close(p[1]);
	build(&l, 0);
	((Elf64_Ehdr *)built.b)->e_machine = EM_AARCH64;
	cr_assert_eq(parse_bytes(built.b, built.len, &l, &why), -EPROTONOSUPPORT);
}
