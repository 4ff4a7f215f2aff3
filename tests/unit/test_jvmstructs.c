// SPDX-License-Identifier: Apache-2.0
/*
 * The worker's reading of HotSpot's tables from a libjvm.so file (worker/jvmstructs.c), on
 * the JDKs of this machine (Debian's OpenJDK 17, Temurin 25), checked field for field against
 * the same tables read from a running JVM's memory; and on files a hostile shipper could hand
 * instead: cut, renamed, pointed outside themselves.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <glob.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/jvm_build.h"
#include "worker/jvmstructs.h"

#define JDK17 "/usr/lib/jvm/java-17-openjdk-amd64"
#define JDK25 "/usr/lib/jvm/temurin-25-jdk-amd64"

static int parse(const char *path, struct jvm_layout *l, const char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	err = jvmstructs__file(fd, l, why);
	close(fd);
	return err;
}

static const char *libjvm(const char *jdk, char *buf, size_t n)
{
	struct stat st;

	snprintf(buf, n, "%s/lib/server/libjvm.so", jdk);
	if (stat(buf, &st))
		cr_skip_test("no %s on this machine", buf);
	return buf;
}

/* --- the live tables, read from a JVM's memory ------------------------------------------- */

#define LIVE_MAX 4096

struct live_struct {
	char type[80], field[80], tstr[80];
	int is_static;
	uint64_t off, addr;
};

struct live {
	uint64_t base;
	uint64_t strides[4]; /* structs, types, ints, longs */
	uint64_t st_offs[6], ty_offs[6], co_offs[2];
	uint32_t ns, nt, ni;
	struct live_struct s[LIVE_MAX];
	struct {
		char name[80];
		uint64_t size;
	} t[LIVE_MAX];
	struct {
		char name[80];
		int32_t value;
	} i[LIVE_MAX];
	int32_t versions[4]; /* the ints Abstract_VM_Version's entries point at */
};

static uint64_t dynsym(const char *path, const char *name)
{
	uint64_t value = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(d, (int)i, &s) &&
			    (n = elf_strptr(e, sh.sh_link, s.st_name)) && !strcmp(n, name))
				value = s.st_value;
		}
	}
	elf_end(e);
	close(fd);
	cr_assert_neq(value, 0, "%s has no %s", path, name);
	return value;
}

/* Where .rela.dyn is in the file. */
static void rela_dyn(const char *path, uint64_t *ret_off, uint64_t *ret_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstr;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e);
	cr_assert_eq(elf_getshdrstrndx(e, &shstr), 0);
	*ret_size = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(e, shstr, sh.sh_name)) &&
		    !strcmp(n, ".rela.dyn")) {
			*ret_off = sh.sh_offset;
			*ret_size = sh.sh_size;
		}
	}
	elf_end(e);
	close(fd);
	cr_assert_neq(*ret_size, 0, "%s has no .rela.dyn", path);
}

static int mem_rd(int mem, uint64_t at, void *buf, size_t n)
{
	return pread(mem, buf, n, (off_t)at) == (ssize_t)n ? 0 : -1;
}

static uint64_t mem_u64(int mem, uint64_t at)
{
	uint64_t v = 0;

	mem_rd(mem, at, &v, 8);
	return v;
}

static void mem_str(int mem, uint64_t at, char *buf, size_t n)
{
	buf[0] = 0;
	if (!at || pread(mem, buf, n - 1, (off_t)at) <= 0)
		buf[0] = 0;
	buf[n - 1] = 0;
}

/* The load address of path in pid, 0 when not mapped yet. */
static uint64_t mapped_at(pid_t pid, const char *path)
{
	char fn[64], line[512], real[PATH_MAX];
	uint64_t base = 0;
	FILE *f;

	if (!realpath(path, real))
		return 0;
	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "re");
	if (!f)
		return 0;
	while (!base && fgets(line, sizeof(line), f)) {
		unsigned long lo, off;
		char file[PATH_MAX] = "";

		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %s", &lo, &off, file) == 3 && !off &&
		    !strcmp(file, real))
			base = lo;
	}
	fclose(f);
	return base;
}

static const char *const g_structs[] = { "TypeName", "FieldName", "TypeString",
					 "IsStatic", "Offset",	  "Address" };
static const char *const g_types[] = { "TypeName",	"SuperclassName", "IsOopType",
				       "IsIntegerType", "IsUnsigned",	  "Size" };

/* Reads the four tables of the JVM pid through /proc/PID/mem with its own strides and offsets. */
static int read_live(pid_t pid, const char *lib, struct live *lv)
{
	char fn[64], sym[96];
	uint64_t t;
	int mem;

	snprintf(fn, sizeof(fn), "/proc/%d/mem", pid);
	mem = open(fn, O_RDONLY | O_CLOEXEC);
	if (mem < 0)
		return -1;
	lv->strides[0] = mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMStructEntryArrayStride"));
	lv->strides[1] = mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMTypeEntryArrayStride"));
	lv->strides[2] =
		mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMIntConstantEntryArrayStride"));
	for (int i = 0; i < 6; i++) {
		snprintf(sym, sizeof(sym), "gHotSpotVMStructEntry%sOffset", g_structs[i]);
		lv->st_offs[i] = mem_u64(mem, lv->base + dynsym(lib, sym));
		snprintf(sym, sizeof(sym), "gHotSpotVMTypeEntry%sOffset", g_types[i]);
		lv->ty_offs[i] = mem_u64(mem, lv->base + dynsym(lib, sym));
	}
	lv->co_offs[0] =
		mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMIntConstantEntryNameOffset"));
	lv->co_offs[1] =
		mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMIntConstantEntryValueOffset"));
	t = mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMStructs"));
	for (lv->ns = 0; lv->ns < LIVE_MAX; lv->ns++, t += lv->strides[0]) {
		struct live_struct *s = &lv->s[lv->ns];
		uint8_t e[256];

		if (!lv->strides[0] || lv->strides[0] > sizeof(e) ||
		    mem_rd(mem, t, e, lv->strides[0]))
			break;
		uint64_t type;

		memcpy(&type, e + lv->st_offs[0], 8);
		if (!type)
			break;
		mem_str(mem, type, s->type, sizeof(s->type));
		mem_str(mem, *(uint64_t *)(e + lv->st_offs[1]), s->field, sizeof(s->field));
		mem_str(mem, *(uint64_t *)(e + lv->st_offs[2]), s->tstr, sizeof(s->tstr));
		s->is_static = *(int32_t *)(e + lv->st_offs[3]);
		s->off = *(uint64_t *)(e + lv->st_offs[4]);
		s->addr = *(uint64_t *)(e + lv->st_offs[5]);
		if (s->is_static && !strcmp(s->type, "Abstract_VM_Version")) {
			static const char *const v[4] = { "_vm_major_version", "_vm_minor_version",
							  "_vm_security_version",
							  "_vm_build_number" };

			for (int k = 0; k < 4; k++)
				if (!strcmp(s->field, v[k]))
					mem_rd(mem, s->addr, &lv->versions[k], 4);
		}
	}
	t = mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMTypes"));
	for (lv->nt = 0; lv->nt < LIVE_MAX; lv->nt++, t += lv->strides[1]) {
		uint8_t e[256];
		uint64_t name;

		if (!lv->strides[1] || lv->strides[1] > sizeof(e) ||
		    mem_rd(mem, t, e, lv->strides[1]))
			break;
		memcpy(&name, e + lv->ty_offs[0], 8);
		if (!name)
			break;
		mem_str(mem, name, lv->t[lv->nt].name, sizeof(lv->t[0].name));
		lv->t[lv->nt].size = *(uint64_t *)(e + lv->ty_offs[5]);
	}
	t = mem_u64(mem, lv->base + dynsym(lib, "gHotSpotVMIntConstants"));
	for (lv->ni = 0; lv->ni < LIVE_MAX; lv->ni++, t += lv->strides[2]) {
		uint8_t e[256];
		uint64_t name;

		if (!lv->strides[2] || lv->strides[2] > sizeof(e) ||
		    mem_rd(mem, t, e, lv->strides[2]))
			break;
		memcpy(&name, e + lv->co_offs[0], 8);
		if (!name)
			break;
		mem_str(mem, name, lv->i[lv->ni].name, sizeof(lv->i[0].name));
		lv->i[lv->ni].value = *(int32_t *)(e + lv->co_offs[1]);
	}
	close(mem);
	return 0;
}

/* Runs a JVM of jdk that sleeps, reads its tables, and ends it: no JVM is left behind, even
 * when a check fails later. */
static void live_tables(const char *jdk, struct live *lv)
{
	char java[512], lib[512], src[] = "/tmp/rover-jvmsXXXXXX", file[600];
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pid_t pid;
	FILE *f;
	int st;

	snprintf(java, sizeof(java), "%s/bin/java", jdk);
	snprintf(lib, sizeof(lib), "%s/lib/server/libjvm.so", jdk);
	cr_assert_not_null(mkdtemp(src));
	snprintf(file, sizeof(file), "%s/Sleep.java", src);
	f = fopen(file, "we");
	cr_assert_not_null(f);
	fputs("public class Sleep { public static void main(String[] a) throws Exception "
	      "{ Thread.sleep(60000); } }\n",
	      f);
	fclose(f);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execl(java, "java", "-Xint", "-Xmx64m", file, (char *)NULL);
		_exit(127);
	}
	/* The tables are whole once the initializer stored the strides, its last stores. */
	for (int i = 0; i < 400; i++) {
		char fn[64];
		int mem;

		nanosleep(&ts, NULL);
		if (!(lv->base = mapped_at(pid, lib)))
			continue;
		snprintf(fn, sizeof(fn), "/proc/%d/mem", pid);
		mem = open(fn, O_RDONLY | O_CLOEXEC);
		if (mem < 0)
			continue;
		uint64_t stride =
			mem_u64(mem,
				lv->base + dynsym(lib, "gHotSpotVMIntConstantEntryArrayStride"));

		close(mem);
		if (stride) {
			nanosleep(&ts, NULL);
			break;
		}
	}
	st = lv->base ? read_live(pid, lib, lv) : -1;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(file);
	rmdir(src);
	cr_assert_eq(st, 0, "%s: no JVM tables read", jdk);
}

static const struct live_struct *live_find(const struct live *lv, const char *name)
{
	char type[96], *field;

	snprintf(type, sizeof(type), "%s", name);
	field = strstr(type, "::");
	if (!field)
		return NULL;
	*field = 0;
	for (uint32_t k = 0; k < lv->ns; k++)
		if (!strcmp(lv->s[k].type, type) && !strcmp(lv->s[k].field, field + 2))
			return &lv->s[k];
	return NULL;
}

static int live_type(const struct live *lv, const char *name, uint64_t *ret)
{
	for (uint32_t k = 0; k < lv->nt; k++)
		if (!strcmp(lv->t[k].name, name)) {
			*ret = lv->t[k].size;
			return 1;
		}
	return 0;
}

static int live_int(const struct live *lv, const char *name, int32_t *ret)
{
	for (uint32_t k = 0; k < lv->ni; k++)
		if (!strcmp(lv->i[k].name, name)) {
			*ret = lv->i[k].value;
			return 1;
		}
	return 0;
}

/* Every entry the file gave, against the running JVM's; every slot the JVM has, filled. */
static void against_live(const char *jdk)
{
	static struct live lv;
	struct jvm_layout l;
	const char *why = NULL, *name;
	uint8_t claimed[sizeof(l) + 64] = { 0 };
	const uint8_t *lb = (const uint8_t *)&l;
	char path[512];
	int kind, compared = 0;
	unsigned int at;

	cr_assert_eq(parse(libjvm(jdk, path, sizeof(path)), &l, &why), 0, "%s: %s", jdk, why);
	live_tables(jdk, &lv);
	/* The entries' layout the parser takes as fixed, as the JVM says it. */
	cr_assert_eq(lv.strides[0], 48);
	cr_assert_eq(lv.strides[1], 40);
	cr_assert_eq(lv.strides[2], 16);
	cr_assert_eq(lv.st_offs[0], 0);
	cr_assert_eq(lv.st_offs[1], 8);
	cr_assert_eq(lv.st_offs[2], 16);
	cr_assert_eq(lv.st_offs[3], 24);
	cr_assert_eq(lv.st_offs[4], 32);
	cr_assert_eq(lv.st_offs[5], 40);
	cr_assert_eq(lv.ty_offs[0], 0);
	cr_assert_eq(lv.ty_offs[5], 32);
	cr_assert_eq(lv.co_offs[0], 0);
	cr_assert_eq(lv.co_offs[1], 8);
	cr_assert_eq(l.n_structs, lv.ns, "%s: %u structs in the file, %u live", jdk, l.n_structs,
		     lv.ns);
	cr_assert_eq(l.n_types, lv.nt);
	cr_assert_eq(l.n_ints, lv.ni);
	for (unsigned int i = 0; (name = jvmstructs__entry(i, &kind, &at)); i++) {
		const struct live_struct *s;
		uint64_t v;
		int32_t iv;

		if (claimed[at])
			continue;
		switch (kind) {
		case JVMS_FIELD: {
			struct jvm_field jf;

			if (!(s = live_find(&lv, name)) || s->is_static)
				continue;
			memcpy(&jf, lb + at, sizeof(jf));
			cr_assert_eq(jf.off, s->off, "%s %s: %u in the file, %lu live", jdk, name,
				     jf.off, (unsigned long)s->off);
			if (strchr(s->tstr, '*'))
				cr_assert_eq(jf.size, 8, "%s %s", jdk, name);
			else if (!s->tstr[0])
				cr_assert_eq(jf.size, 1, "%s %s", jdk, name);
			else if (live_type(&lv, s->tstr, &v))
				cr_assert_eq(jf.size, v > 255 ? 255 : v, "%s %s (%s)", jdk, name,
					     s->tstr);
			else
				cr_assert_neq(jf.size, 0, "%s %s", jdk, name);
			break;
		}
		case JVMS_STATIC:
			if (!(s = live_find(&lv, name)) || !s->is_static)
				continue;
			memcpy(&v, lb + at, 8);
			cr_assert_eq(v, s->addr - lv.base, "%s %s", jdk, name);
			break;
		case JVMS_VERSION: {
			uint16_t ver;

			if (!live_find(&lv, name))
				continue;
			memcpy(&ver, lb + at, 2);
			cr_assert_eq(ver,
				     lv.versions[(at - offsetof(struct jvm_layout, major)) / 2],
				     "%s %s", jdk, name);
			break;
		}
		case JVMS_SIZE: {
			uint16_t sz;

			if (!live_type(&lv, name, &v))
				continue;
			memcpy(&sz, lb + at, 2);
			cr_assert_eq(sz, v, "%s sizeof %s", jdk, name);
			break;
		}
		case JVMS_INT:
			if (!live_int(&lv, name, &iv))
				continue;
			if (at < sizeof(l)) {
				int32_t got;

				memcpy(&got, lb + at, 4);
				cr_assert_eq(got, iv, "%s %s", jdk, name);
			}
			break;
		}
		claimed[at] = 1;
		compared++;
	}
	/* A field slot no entry of the JVM fills is empty in the file's layout too. */
	for (unsigned int i = 0; (name = jvmstructs__entry(i, &kind, &at)); i++) {
		struct jvm_field jf;

		if (kind != JVMS_FIELD || claimed[at])
			continue;
		memcpy(&jf, lb + at, sizeof(jf));
		cr_assert_eq(jf.size, 0, "%s %s: in the file, not live", jdk, name);
	}
	cr_assert_gt(compared, 70, "%s: %d entries compared", jdk, compared);
}

Test(jvmstructs, jdk17_against_live, .timeout = 60)
{
	against_live(JDK17);
}

Test(jvmstructs, jdk25_against_live, .timeout = 60)
{
	against_live(JDK25);
}

/* What each JDK's layout says of its kind of nmethod and its version. */
Test(jvmstructs, versions_and_flags)
{
	struct jvm_layout l;
	const char *why = NULL;
	char path[512];

	cr_assert_eq(parse(libjvm(JDK17, path, sizeof(path)), &l, &why), 0, "%s", why);
	cr_expect_eq(l.major, 17);
	cr_expect_eq(l.minor, 0);
	cr_expect_eq(l.flags, 0);
	cr_expect_eq(l.nm_scopes_data.size, 8); /* CompiledMethod::_scopes_data_begin */
	cr_expect_eq(l.interp.method, -3);
	cr_expect_eq(l.interp.bcp, -8);
	cr_assert_eq(parse(libjvm(JDK25, path, sizeof(path)), &l, &why), 0, "%s", why);
	cr_expect_eq(l.major, 25);
	cr_expect_eq(l.flags, JVM_F_BLOB_OFFSETS | JVM_F_IMMUTABLE_DATA | JVM_F_MUTABLE_METADATA |
				      JVM_F_BLOB_KIND | JVM_F_CM_FLAGS32);
	cr_expect_eq(l.kind_nmethod, 1);
}

/* --- hostile files ----------------------------------------------------------------------- */

struct copy {
	uint8_t *b;
	size_t n;
};

static void load(const char *path, struct copy *c)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	c->n = (size_t)st.st_size;
	c->b = malloc(c->n);
	cr_assert_not_null(c->b);
	cr_assert_eq(pread(fd, c->b, c->n, 0), (ssize_t)c->n);
	close(fd);
}

static int parse_bytes(const uint8_t *b, size_t n, struct jvm_layout *l, const char **why)
{
	int fd = memfd_create("jvmstructs", MFD_CLOEXEC), err;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	err = jvmstructs__file(fd, l, why);
	close(fd);
	return err;
}

static void listed(int err)
{
	cr_assert(err == 0 || err == -ENOEXEC || err == -ENOENT || err == -EPROTONOSUPPORT ||
			  err == -E2BIG || err == -EBADF,
		  "unlisted error %d", err);
}

/* Cut anywhere before the end of the tables: an error, never a crash or a hang. */
Test(jvmstructs, truncated, .timeout = 60)
{
	static const double at[] = { 0, 0.00001, 0.01, 0.1, 0.25, 0.5, 0.7, 0.78 };
	struct jvm_layout l;
	struct copy c;
	char path[512];

	load(libjvm(JDK17, path, sizeof(path)), &c);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const char *why = NULL;
		int err = parse_bytes(c.b, (size_t)(at[i] * (double)c.n), &l, &why);

		listed(err);
		cr_expect_neq(err, 0, "cut at %zu read", (size_t)(at[i] * (double)c.n));
	}
	free(c.b);
}

static void replace_all(struct copy *c, const char *from, const char *to)
{
	size_t n = strlen(from) + 1, hits = 0;

	for (uint8_t *p = c->b; (p = memmem(p, c->n - (size_t)(p - c->b), from, n)); p += n, hits++)
		memcpy(p, to, n);
	cr_assert_gt(hits, 0, "no %s", from);
}

/* A mandatory entry renamed away: named in the error. */
Test(jvmstructs, missing_entry_named)
{
	struct jvm_layout l;
	const char *why = NULL;
	struct copy c;
	char path[512];

	load(libjvm(JDK25, path, sizeof(path)), &c);
	replace_all(&c, "_frame_complete_offset", "_frame_complete_offsex");
	cr_assert_eq(parse_bytes(c.b, c.n, &l, &why), -ENOEXEC);
	cr_assert_str_eq(why, "CodeBlob::_frame_complete_offset");
	free(c.b);
}

/* The tables' pointer sent outside the file, into code (no terminator, garbage names), or a
 * relocation table longer than the file. */
static void patch_pointer(struct copy *c, const char *path, uint64_t to)
{
	uint64_t want[2] = { dynsym(path, "gHotSpotVMStructs"), R_X86_64_RELATIVE }, lo, n;
	uint8_t *p;

	/* In .rela.dyn only: the symbol's own entries (value, size 8) read the same. */
	rela_dyn(path, &lo, &n);
	p = memmem(c->b + lo, n, want, sizeof(want));
	cr_assert_not_null(p, "no relocation of gHotSpotVMStructs");
	memcpy(p + 16, &to, 8);
}

Test(jvmstructs, pointer_outside, .timeout = 30)
{
	struct jvm_layout l;
	const char *why = NULL;
	struct copy c;
	char path[512];
	int err;

	libjvm(JDK17, path, sizeof(path));
	load(path, &c);
	patch_pointer(&c, path, 0x7fff00000000ull);
	err = parse_bytes(c.b, c.n, &l, &why);
	cr_assert_eq(err, -ENOEXEC, "%d", err);
	cr_assert_str_eq(why, "gHotSpotVMStructs");
	/* Into the code: 4096 entries of garbage at most, then no terminator. */
	patch_pointer(&c, path, dynsym(path, "JVM_GetClassMethodsCount"));
	err = parse_bytes(c.b, c.n, &l, &why);
	cr_assert_eq(err, -ENOEXEC, "%d", err);
	free(c.b);
}

Test(jvmstructs, other_machine)
{
	struct jvm_layout l;
	const char *why = NULL;
	struct copy c;
	char path[512];
	uint16_t m = EM_AARCH64;

	load(libjvm(JDK17, path, sizeof(path)), &c);
	memcpy(c.b + offsetof(Elf64_Ehdr, e_machine), &m, 2);
	cr_assert_eq(parse_bytes(c.b, c.n, &l, &why), -EPROTONOSUPPORT);
	free(c.b);
}

/* --- built files ------------------------------------------------------------------------- */

/* A small file built from each JDK's layout reads back as that layout. */
Test(jvmstructs, built_round_trip)
{
	static struct jb j;
	const char *jdks[] = { JDK17, JDK25 };

	for (size_t i = 0; i < 2; i++) {
		struct jvm_layout l, back;
		const char *why = NULL;
		char path[512];

		cr_assert_eq(parse(libjvm(jdks[i], path, sizeof(path)), &l, &why), 0);
		cr_assert_eq(jb_build(&j, &l), 0);
		cr_assert_eq(parse_bytes(j.b, j.len, &back, &why), 0, "%s: %s", jdks[i], why);
		back.n_structs = l.n_structs;
		back.n_types = l.n_types;
		back.n_ints = l.n_ints;
		back.n_longs = l.n_longs;
		cr_assert_eq(memcmp(&l, &back, sizeof(l)), 0, "%s: the built file reads otherwise",
			     jdks[i]);
	}
}

/* The built file cut at every length: an error or the same layout, nothing else. */
Test(jvmstructs, built_every_cut, .timeout = 60)
{
	static struct jb j;
	struct jvm_layout l, back;
	const char *why = NULL;
	char path[512];

	cr_assert_eq(parse(libjvm(JDK25, path, sizeof(path)), &l, &why), 0);
	cr_assert_eq(jb_build(&j, &l), 0);
	for (uint32_t n = 0; n < j.len; n += 7) {
		int err = parse_bytes(j.b, n, &back, &why);

		listed(err);
		cr_assert_neq(err, 0, "cut at %u of %u read", n, j.len);
	}
}
