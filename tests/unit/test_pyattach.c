// SPDX-License-Identifier: Apache-2.0
/*
 * The worker's check of a CPython interpreter the shipper hands over (worker/pyattach.c), on
 * the interpreters of this machine: pyenv's libpython3.8-3.13 and Debian's python3.11
 * executable (non-PIE, no .symtab), and on files a hostile shipper could hand instead.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/pyattach.h"

#define START 0x7f1234000000ull

/* _PyRuntime's address less the file's first page's, from the full symbol tables (libelf). */
static uint64_t runtime_rel(const char *path)
{
	uint64_t value = 0, base = UINT64_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t n;

	cr_assert_geq(fd, 0, "%s", path);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e);
	cr_assert_eq(elf_getphdrnum(e, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0)
			base = ph.p_vaddr & ~0xfffull;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && !strcmp(name, "_PyRuntime"))
				value = s.st_value;
		}
	}
	elf_end(e);
	close(fd);
	cr_assert_neq(value, 0, "%s has no _PyRuntime", path);
	return value - base;
}

static int attach(const char *path, uint64_t start, struct py_proc *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	err = pyattach__file(fd, start, ret);
	close(fd);
	return err;
}

static const char *pyenv_lib(const char *minor, char *buf, size_t len)
{
	const char *root = getenv("PYENV_ROOT");
	char pat[512];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/versions/%s.*/lib/libpython%s.so.1.0",
		 root ? root : "/root/.pyenv", minor, minor);
	if (glob(pat, 0, NULL, &g) || !g.gl_pathc) {
		globfree(&g);
		return NULL;
	}
	snprintf(buf, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return buf;
}

Test(pyattach, every_interpreter_here_is_found_with_its_version_and_runtime)
{
	static const struct {
		const char *minor;
		unsigned int version;
	} v[] = { { "3.8", 0x0308 },  { "3.9", 0x0309 },  { "3.10", 0x030a },
		  { "3.11", 0x030b }, { "3.12", 0x030c }, { "3.13", 0x030d } };
	char path[512];
	struct py_proc p;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_assert_not_null(pyenv_lib(v[i].minor, path, sizeof(path)),
				   "no pyenv libpython%s on this machine", v[i].minor);
		cr_assert_eq(attach(path, START, &p), 0, "%s", path);
		cr_assert_eq(p.o.version, v[i].version, "%s: version %#x", path, p.o.version);
		cr_assert_eq(p.rel, runtime_rel(path), "%s: _PyRuntime misplaced", path);
		cr_assert_eq(p.start, START);
		cr_assert_eq(p.runtime, 0,
			     "the programs, not the worker, say the mapping is checked");
	}
	/* Debian's: the interpreter in a non-PIE executable without a full symbol table. */
	cr_assert_eq(attach("/usr/bin/python3.11", 0x400000, &p), 0);
	cr_assert_eq(p.o.version, 0x030b);
	cr_assert_eq(p.rel, runtime_rel("/usr/bin/python3.11"));
}

/*
 * 3.13 reads its offsets from the _Py_DebugOffsets its _PyRuntime starts with: a copy of the
 * library whose debug offsets say interpreters.head moved is read with the moved offset.
 */
Test(pyattach, python_3_13_offsets_are_the_file_s_own)
{
	char path[512], copy[] = "/tmp/rover-py313-XXXXXX", cmd[1200];
	uint64_t moved = 648, off;
	struct py_proc p;
	int fd;

	cr_assert_not_null(pyenv_lib("3.13", path, sizeof(path)));
	cr_assert_eq(attach(path, START, &p), 0);
	cr_assert_eq(p.o.rt_interp_head, pyoffsets__find(0x030d)->rt_interp_head);
	fd = mkstemp(copy);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, copy);
	cr_assert_eq(system(cmd), 0);
	/* The file offset of _PyRuntime: its address less its segment's, plus the segment's. */
	snprintf(cmd, sizeof(cmd),
		 "readelf -W -sD '%s' | awk '$NF==\"_PyRuntime\"{print $2; exit}'", path);
	{
		FILE *f = popen(cmd, "r");
		unsigned long long v = 0;

		cr_assert_not_null(f);
		cr_assert_eq(fscanf(f, "%llx", &v), 1);
		pclose(f);
		off = v;
	}
	fd = open(copy, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	{
		/* The data segment's vaddr and offset differ by a constant: find it from the headers. */
		Elf *e;
		size_t n;

		elf_version(EV_CURRENT);
		e = elf_begin(fd, ELF_C_READ, NULL);
		cr_assert_eq(elf_getphdrnum(e, &n), 0);
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    off >= ph.p_vaddr && off < ph.p_vaddr + ph.p_filesz) {
				off = off - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
		elf_end(e);
	}
	/* cookie, version, free_threaded, runtime_state.size, .finalizing: interpreters_head. */
	cr_assert_eq(pwrite(fd, &moved, 8, (off_t)(off + 5 * 8)), 8);
	cr_assert_eq(pyattach__file(fd, START, &p), 0);
	cr_assert_eq(p.o.rt_interp_head, moved, "the table's offset, not the file's: %u",
		     p.o.rt_interp_head);
	close(fd);
	unlink(copy);
}

/* What a hostile or mistaken shipper could hand over instead. */
Test(pyattach, files_that_are_not_an_interpreter_are_refused)
{
	char path[512], tmp[] = "/tmp/rover-pyattach-XXXXXX";
	struct py_proc p;
	int fd;

	cr_assert_eq(attach("/bin/ls", START, &p), -ENOENT, "an ELF without _PyRuntime");
	cr_assert_not_null(pyenv_lib("3.12", path, sizeof(path)));
	cr_assert_eq(attach(path, START + 12, &p), -EINVAL, "a mapping start not page-aligned");
	if (pyenv_lib("3.7", path, sizeof(path)))
		cr_assert_eq(attach(path, START, &p), -EPROTONOSUPPORT, "3.7");
	fd = mkstemp(tmp);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "\177ELF but not really", 19), 19);
	cr_assert_eq(pyattach__file(fd, START, &p), -ENOEXEC, "a truncated ELF header");
	cr_assert_eq(pyattach__file(-1, START, &p), -EBADF);
	close(fd);
	unlink(tmp);
}

/*
 * Made-up interpreters (the fuzz seeds, tests/fuzz/seed_python.c): the version from Py_Version
 * or from the function a release added, 3.7 refused.
 */
Test(pyattach, the_version_comes_from_py_version_or_the_functions_a_release_added)
{
	static const struct {
		const char *file;
		int err;
		unsigned int version;
	} seeds[] = {
		{ "py312.so", 0, 0x030c },	    { "py313.so", 0, 0x030d },
		{ "py310.so", 0, 0x030a },	    { "py38.so", 0, 0x0308 },
		{ "py37.so", -EPROTONOSUPPORT, 0 },
	};
	const char *srcdir = getenv("ROVER_SRC");
	char path[4096];
	struct py_proc p;

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_pyattach/%s",
			 srcdir ? srcdir : ".", seeds[i].file);
		cr_assert_eq(attach(path, START, &p), seeds[i].err, "%s", seeds[i].file);
		if (!seeds[i].err)
			cr_assert_eq(p.o.version, seeds[i].version, "%s: %#x", seeds[i].file,
				     p.o.version);
	}
	/* The made-up 3.13's debug offsets are the table's: taken, and the same. */
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_pyattach/py313.so",
		 srcdir ? srcdir : ".");
	cr_assert_eq(attach(path, START, &p), 0);
	cr_assert_eq(p.o.is_threads_head, 7344);
}
