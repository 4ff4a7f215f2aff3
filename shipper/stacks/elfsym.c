// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE /* memrchr, qsort_r */
/*
 * Every byte read here comes from a file a traced process chose to map: sizes and offsets are
 * checked before they are used, and each allocation has a limit below.
 *
 * libelf reads with ELF_C_READ (pread into the heap) rather than from an mmap of the file: the
 * owner of a mapped file can truncate it while we read, and a read past the end of a file
 * mapping is a SIGBUS, where pread just comes back short.
 */
#include "shipper/stacks/elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "shipper/stacks/demangle.h"
#include "shipper/stacks/gopclntab.h"

/* Linked executables and libraries have about a dozen program headers. */
#define ELFSYM_MAX_PHDRS 4096
/*
 * libelf allocates a descriptor per section header in elf_begin(), before this code sees any:
 * linked files have tens of sections, and extended numbering (more than 65279) is refused.
 */
#define ELFSYM_MAX_SHDRS 32768
#define ELFSYM_MAX_LOADS 32
#define ELFSYM_MAX_NOTE (64u << 10)
/* One symbol or string table, read whole into memory by libelf. */
#define ELFSYM_MAX_SECTION (256u << 20)
/*
 * What loading one file's symbols charges to its budget (ELFSYM_FILE_BUDGET, elfsym.h): the
 * section data libelf reads (notes, symbol and string tables, .gopclntab, a Go file's
 * .data.rel.ro, the same of the debug file), the symbols gathered, the decompressed
 * MiniDebugInfo and the names kept (the gathered symbols point into the tables until then).
 * The final symbol array is half the size of the gathered one at most, so a read peaks below
 * one and a half times the budget. A file over it keeps what was read within it, is reported
 * once, and its other addresses are named module+offset.
 */
#define ELFSYM_MAX_SYMS (8u << 20)
/*
 * Names as in the file, and demangled names (made later, at lookups) each: below 2^30, as a
 * name offset is 30 bits of struct esym, and within the symbol cache's default budget.
 */
#define ELFSYM_MAX_STRINGS (64u << 20)
/* Longer names are kept truncated; DEMANGLE_MAX_INPUT bounds what demangling would accept. */
#define ELFSYM_MAX_NAME DEMANGLE_MAX_INPUT
#define ELFSYM_MAX_DEBUGLINK 4096
/*
 * The debuglink CRC covers the whole debug file. A file in <dir>/.debug/ belongs to whoever
 * owns <dir>, who could make it a huge sparse file: larger ones are not read, hence refused.
 */
#define ELFSYM_MAX_CRC_BYTES (1ull << 30)
/* Functions are nowhere near 4 GiB: st_size is clamped to 32 bits. */
#define ELFSYM_MAX_FUNC_SIZE UINT32_MAX
/* How far back a lookup searches for a sized symbol enclosing the address. */
#define ELFSYM_ENCLOSING_SCAN 8
/*
 * MiniDebugInfo (.gnu_debugdata, Fedora and CentOS): an xz-compressed ELF whose .symtab holds
 * the functions .dynsym lacks. Those of a distribution's largest binaries are a few MiB, and
 * decompress to a few times that. An xz bomb stops at ELFSYM_MAX_MINIDEBUG bytes of output.
 */
#define ELFSYM_MAX_DEBUGDATA (16u << 20)
#define ELFSYM_MAX_MINIDEBUG (64u << 20)
/* What liblzma may allocate for its dictionary: xz -9 (64 MiB) decodes within this. */
#define ELFSYM_LZMA_MEMLIMIT (68u << 20)
/*
 * A pcHeader found by a scan of .data.rel.ro is taken when its first functions check out: a
 * real table has hundreds (the runtime alone), stray bytes pass no one.
 */
#define ELFSYM_GO_PROBE_FUNCS 8
/* Each header probed may cost a walk of GOPCLNTAB_MAX_FUNCS entries: a file gets this many. */
#define ELFSYM_GO_PROBE_HEADERS 16

struct elf_load {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct esym {
	uint64_t addr;
	uint32_t size;	    /* 0: unknown (assembly without .size) */
	uint32_t name : 30; /* offset in strs, or in dstrs when demangled */
	uint32_t demangled : 1;
	uint32_t final : 1; /* name is demangled already, or needs no demangling */
};

struct strbuf {
	char *p;
	size_t len;
	size_t cap;
};

/*
 * A symbol read from a table, before the merge picks one per address. Its name stays where
 * the table's strings are (libelf's copy of the section, or the decompressed MiniDebugInfo)
 * until the merge copies the kept ones: no copy of every name first.
 */
struct cand {
	uint64_t addr;
	uint64_t size;
	const char *name; /* len bytes, not terminated */
	uint32_t len;
	uint8_t bind; /* 0 global, 1 weak, 2 local, 3 .gopclntab: the order of preference */
};

struct cands {
	struct cand *v;
	size_t n;
	size_t cap;
	/* Where the names of v are, beside the file's own handle: ended after the merge. */
	Elf *held[3];
	void *held_buf; /* the decompressed MiniDebugInfo */
};

struct elfsym {
	Elf *elf; /* until elfsym__load_symbols() */
	uint16_t type;
	uint16_t machine;
	uint8_t build_id[ELFSYM_BUILD_ID_MAX];
	size_t build_id_len;
	struct elf_load loads[ELFSYM_MAX_LOADS];
	size_t nloads;
	struct esym *syms;
	size_t nsyms;
	struct strbuf strs; /* names as in the file */
	/*
	 * Demangled names, made on first use: demangling every name of a large C++ library up
	 * front would cost seconds and memory for names no sample ever hits.
	 */
	struct strbuf dstrs;
	struct file_budget budget; /* while the file is read */
};

void file_budget__init(struct file_budget *b)
{
	*b = (struct file_budget){ .left = ELFSYM_FILE_BUDGET };
}

bool file_budget__charge(struct file_budget *b, uint64_t bytes)
{
	if (bytes <= b->left) {
		b->left -= bytes;
		return true;
	}
	if (!b->refused)
		b->refused = ELFSYM_FILE_BUDGET - b->left + bytes;
	return false;
}

bool file_budget__charge_copy(struct file_budget *b, Elf *elf, uint64_t bytes)
{
	const char *ident = elf_getident(elf, NULL);
	bool native = ident &&
		      ident[EI_DATA] == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
										   : ELFDATA2MSB);

	/* libelf converts the data of a file of the other byte order into a second buffer. */
	return file_budget__charge(b, native || bytes > ELFSYM_FILE_BUDGET ? bytes : 2 * bytes);
}

static bool elfsym__charge(struct elfsym *es, uint64_t bytes)
{
	return file_budget__charge(&es->budget, bytes);
}

/* The charge for libelf's copy of section sh of elf, before elf_getdata() makes it. */
static bool elfsym__charge_section(struct elfsym *es, Elf *elf, const GElf_Shdr *sh)
{
	return file_budget__charge_copy(&es->budget, elf, sh->sh_size);
}

static uint64_t rd(const unsigned char *p, size_t n, bool big)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

/* What libelf would allocate for this header, checked before libelf sees it. */
static int ehdr_check(const unsigned char *p, size_t n)
{
	uint64_t shoff, phnum, shnum;
	bool big;

	if (n < EI_NIDENT || memcmp(p, ELFMAG, SELFMAG))
		return -ENOEXEC;
	if (p[EI_DATA] != ELFDATA2LSB && p[EI_DATA] != ELFDATA2MSB)
		return -ENOEXEC;
	big = p[EI_DATA] == ELFDATA2MSB;
	if (p[EI_CLASS] == ELFCLASS64) {
		if (n < sizeof(Elf64_Ehdr))
			return -ENOEXEC;
		shoff = rd(p + offsetof(Elf64_Ehdr, e_shoff), 8, big);
		phnum = rd(p + offsetof(Elf64_Ehdr, e_phnum), 2, big);
		shnum = rd(p + offsetof(Elf64_Ehdr, e_shnum), 2, big);
	} else if (p[EI_CLASS] == ELFCLASS32) {
		if (n < sizeof(Elf32_Ehdr))
			return -ENOEXEC;
		shoff = rd(p + offsetof(Elf32_Ehdr, e_shoff), 4, big);
		phnum = rd(p + offsetof(Elf32_Ehdr, e_phnum), 2, big);
		shnum = rd(p + offsetof(Elf32_Ehdr, e_shnum), 2, big);
	} else {
		return -ENOEXEC;
	}
	if (phnum > ELFSYM_MAX_PHDRS || shnum > ELFSYM_MAX_SHDRS || (shnum == 0 && shoff != 0))
		return -ENOEXEC;
	return 0;
}

/* The GNU build-id note in d, if any: its length (0: none). */
static size_t notes_build_id(Elf_Data *d, uint8_t *ret_id)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return 0;
	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp((const char *)d->d_buf + name_off, ELF_NOTE_GNU,
			    sizeof(ELF_NOTE_GNU)) &&
		    nh.n_descsz > 0 && nh.n_descsz <= ELFSYM_BUILD_ID_MAX) {
			memcpy(ret_id, (const char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

/* From the note sections, else (no section headers) from the PT_NOTE segments. */
static size_t elf_build_id(struct elfsym *es, Elf *elf, uint8_t *ret_id)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t len, phnum, i;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    sh.sh_size > ELFSYM_MAX_NOTE || (sh.sh_flags & SHF_COMPRESSED))
			continue;
		/* Each note section is read and kept until elf_end(): 32768 of them add up. */
		if (!elfsym__charge_section(es, elf, &sh))
			return 0;
		len = notes_build_id(elf_getdata(scn, NULL), ret_id);
		if (len)
			return len;
	}
	if (elf_getphdrnum(elf, &phnum))
		return 0;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > ELFSYM_MAX_NOTE)
			continue;
		if (!elfsym__charge_section(es, elf, &(GElf_Shdr){ .sh_size = ph.p_filesz }))
			return 0;
		len = notes_build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
							  ph.p_align == 8 ? ELF_T_NHDR8
									  : ELF_T_NHDR),
				     ret_id);
		if (len)
			return len;
	}
	return 0;
}

static int elfsym__init(struct elfsym *es)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t phnum, i;

	if (elf_kind(es->elf) != ELF_K_ELF || !gelf_getehdr(es->elf, &eh))
		return -ENOEXEC;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC;
	es->type = eh.e_type;
	es->machine = eh.e_machine;
	if (elf_getphdrnum(es->elf, &phnum))
		phnum = 0;
	for (i = 0; i < phnum && es->nloads < ELFSYM_MAX_LOADS; i++) {
		if (!gelf_getphdr(es->elf, (int)i, &ph))
			break;
		if (ph.p_type != PT_LOAD)
			continue;
		es->loads[es->nloads++] = (struct elf_load){
			.vaddr = ph.p_vaddr,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
		};
	}
	es->build_id_len = elf_build_id(es, es->elf, es->build_id);
	return 0;
}

static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* An Elf reading fd, after the checks of ehdr_check(). NULL + errno. */
Elf *elfsym__elf_begin(int fd)
{
	unsigned char hdr[sizeof(Elf64_Ehdr)];
	struct stat st;
	ssize_t n;
	Elf *elf;
	int err;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	n = pread_full(fd, hdr, sizeof(hdr), 0);
	if (n < 0) {
		errno = (int)-n;
		return NULL;
	}
	err = ehdr_check(hdr, (size_t)n);
	if (err) {
		errno = -err;
		return NULL;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	return elf;
}

static struct elfsym *elfsym__open_elf(Elf *elf)
{
	struct elfsym *es;
	int err;

	es = calloc(1, sizeof(*es));
	if (!es) {
		elf_end(elf);
		errno = ENOMEM;
		return NULL;
	}
	es->elf = elf;
	file_budget__init(&es->budget);
	err = elfsym__init(es);
	if (err) {
		elfsym__free(es);
		errno = -err;
		return NULL;
	}
	return es;
}

struct elfsym *elfsym__open(int fd)
{
	Elf *elf;

	elf = elfsym__elf_begin(fd);
	if (!elf)
		return NULL;
	return elfsym__open_elf(elf);
}

struct elfsym *elfsym__open_memory(void *buf, size_t len)
{
	Elf *elf;
	int err;

	if (!buf) {
		errno = EINVAL;
		return NULL;
	}
	err = ehdr_check(buf, len);
	if (err) {
		errno = -err;
		return NULL;
	}
	elf_version(EV_CURRENT);
	elf = elf_memory(buf, len);
	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	return elfsym__open_elf(elf);
}

size_t elfsym__build_id(const struct elfsym *es, const uint8_t **ret_id)
{
	if (!es || !es->build_id_len)
		return 0;
	*ret_id = es->build_id;
	return es->build_id_len;
}

/* Appends a name; growth is charged to budget (NULL: none). -EFBIG past the limits. */
static int strbuf__add(struct strbuf *sb, const char *s, size_t n, uint32_t *ret_off,
		       struct elfsym *budget)
{
	size_t need = sb->len + n + 1, ncap;
	char *p;

	if (need > ELFSYM_MAX_STRINGS)
		return -EFBIG;
	if (need > sb->cap) {
		ncap = sb->cap ? sb->cap : 1024;
		while (ncap < need)
			ncap *= 2;
		if (ncap > ELFSYM_MAX_STRINGS)
			ncap = ELFSYM_MAX_STRINGS;
		if (budget && !elfsym__charge(budget, ncap - sb->cap))
			return -EFBIG;
		p = realloc(sb->p, ncap);
		if (!p)
			return -ENOMEM;
		sb->p = p;
		sb->cap = ncap;
	}
	memcpy(sb->p + sb->len, s, n);
	sb->p[sb->len + n] = '\0';
	*ret_off = (uint32_t)sb->len;
	sb->len = need;
	return 0;
}

static void strbuf__free(struct strbuf *sb)
{
	free(sb->p);
	*sb = (struct strbuf){};
}

static bool section_readable(const GElf_Shdr *sh)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size > 0 && sh->sh_size <= ELFSYM_MAX_SECTION &&
	       !(sh->sh_flags & SHF_COMPRESSED);
}

/*
 * Room for one more candidate in c: 0, -ENOSPC at ELFSYM_MAX_SYMS or past the budget of es,
 * or -ENOMEM.
 */
static int cands__reserve(struct cands *c, struct elfsym *es)
{
	struct cand *v;
	size_t ncap;

	if (c->n < c->cap)
		return 0;
	if (c->cap >= ELFSYM_MAX_SYMS)
		return -ENOSPC;
	ncap = c->cap ? c->cap * 2 : 1024;
	if (ncap > ELFSYM_MAX_SYMS)
		ncap = ELFSYM_MAX_SYMS;
	if (!elfsym__charge(es, (ncap - c->cap) * sizeof(*v)))
		return -ENOSPC;
	v = realloc(c->v, ncap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->v = v;
	c->cap = ncap;
	return 0;
}

/*
 * Adds the functions of one symbol table to c. Stops quietly at the limits: a file past them
 * keeps the symbols read so far. Returns the number of functions added or -errno (ENOMEM).
 */
static long elfsym__add_table(struct elfsym *es, struct cands *c, Elf *elf, Elf_Scn *scn,
			      const GElf_Shdr *sh, uint16_t machine)
{
	Elf_Scn *str_scn;
	Elf_Data *d, *sd;
	GElf_Shdr str_sh;
	GElf_Sym sym;
	size_t entsize, count, i, len;
	const char *strs, *name, *at;
	long added = 0;
	struct cand *v;
	uint8_t type, bind;
	int err;

	if (!section_readable(sh))
		return 0;
	str_scn = elf_getscn(elf, sh->sh_link);
	if (!str_scn || !gelf_getshdr(str_scn, &str_sh) || str_sh.sh_type != SHT_STRTAB ||
	    !section_readable(&str_sh))
		return 0;
	/* Tables sharing a string table are charged it each time: libelf reads it once. */
	if (!elfsym__charge_section(es, elf, sh) || !elfsym__charge_section(es, elf, &str_sh))
		return 0;
	d = elf_getdata(scn, NULL);
	sd = elf_getdata(str_scn, NULL);
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!d || !sd || !sd->d_buf || !entsize)
		return 0;
	strs = sd->d_buf;
	count = d->d_size / entsize;
	for (i = 0; i < count; i++) {
		if (!gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 ||
		    sym.st_shndx == SHN_UNDEF || sym.st_name == 0 || sym.st_name >= sd->d_size)
			continue;
		name = strs + sym.st_name;
		len = strnlen(name, sd->d_size - sym.st_name);
		if (len == 0 || len == sd->d_size - sym.st_name)
			continue; /* empty, or not terminated inside the table */
		/*
		 * .symtab spells versioned definitions "name@VERSION" or "name@@VERSION" (.symver):
		 * one function, one name. Mangled names never contain '@'.
		 */
		at = memchr(name, '@', len);
		if (at && at != name)
			len = (size_t)(at - name);
		if (len > ELFSYM_MAX_NAME)
			len = ELFSYM_MAX_NAME;
		err = cands__reserve(c, es);
		if (err == -ENOSPC)
			break;
		if (err)
			return err;
		v = &c->v[c->n];
		v->name = name;
		v->addr = sym.st_value;
		/* On 32-bit ARM the low bit of a function address selects Thumb code. */
		if (machine == EM_ARM && type == STT_FUNC)
			v->addr &= ~(uint64_t)1;
		v->size = sym.st_size;
		v->len = (uint32_t)len;
		v->bind = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		c->n++;
		added++;
	}
	return added;
}

/* Which tables elfsym__scan reads. */
#define SCAN_SYMTAB 1u
#define SCAN_DYNSYM 2u

/*
 * Adds the functions of elf's tables that which names (SCAN_SYMTAB, SCAN_DYNSYM).
 * *ret_symtab tells whether a .symtab with contents was present, read or not.
 */
static int elfsym__scan(struct elfsym *es, struct cands *c, Elf *elf, unsigned which,
			bool *ret_symtab, uint16_t machine)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool symtab = false;
	long n;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			if (section_readable(&sh))
				symtab = true;
			if (!(which & SCAN_SYMTAB))
				continue;
		} else if (sh.sh_type != SHT_DYNSYM || !(which & SCAN_DYNSYM)) {
			continue;
		}
		n = elfsym__add_table(es, c, elf, scn, &sh, machine);
		if (n < 0)
			return (int)n;
	}
	*ret_symtab = symtab;
	return 0;
}

/* Opens a candidate debug file: a regular file only (a FIFO would block us). */
static int open_debug_file(const char *path)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

/*
 * Keeps elf (its data holds the names of the candidates from n on) until the merge; ends it
 * now when none came from it.
 */
static void cands__hold(struct cands *c, Elf *elf, size_t n)
{
	for (size_t i = 0; c->n > n && i < sizeof(c->held) / sizeof(c->held[0]); i++) {
		if (!c->held[i]) {
			c->held[i] = elf;
			return;
		}
	}
	c->n = n < c->n ? n : c->n;
	elf_end(elf);
}

static void cands__release(struct cands *c)
{
	for (size_t i = 0; i < sizeof(c->held) / sizeof(c->held[0]); i++)
		elf_end(c->held[i]);
	free(c->held_buf);
	free(c->v);
	*c = (struct cands){};
}

/* Adds the .symtab functions of the debug file fd when it passes check. 1 if used. */
static int elfsym__add_debug_file(struct elfsym *es, struct cands *c, int fd, bool by_build_id)
{
	uint8_t id[ELFSYM_BUILD_ID_MAX];
	bool symtab = false;
	size_t n = c->n;
	Elf *elf;
	int err = 0;

	elf = elfsym__elf_begin(fd);
	if (!elf)
		return 0;
	if (elf_kind(elf) != ELF_K_ELF)
		goto cleanup;
	if (by_build_id && (elf_build_id(es, elf, id) != es->build_id_len ||
			    memcmp(id, es->build_id, es->build_id_len)))
		goto cleanup;
	err = elfsym__scan(es, c, elf, SCAN_SYMTAB, &symtab, es->machine);
	if (!err && symtab)
		err = 1;
cleanup:
	/* libelf read the tables whole: the file itself is not read again. */
	cands__hold(c, elf, n);
	return err;
}

static int elfsym__debug_by_build_id(struct elfsym *es, struct cands *c)
{
	char path[PATH_MAX];
	size_t i, at;
	int fd, err, n;

	if (es->build_id_len < 2)
		return 0;
	n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", ELFSYM_DEBUG_ROOT, es->build_id[0]);
	at = (size_t)n;
	for (i = 1; i < es->build_id_len; i++, at += 2)
		snprintf(path + at, sizeof(path) - at, "%02x", es->build_id[i]);
	snprintf(path + at, sizeof(path) - at, ".debug");
	fd = open_debug_file(path);
	if (fd < 0)
		return 0;
	err = elfsym__add_debug_file(es, c, fd, true);
	close(fd);
	return err;
}

int elfsym__section_names(Elf *elf, size_t *ret_shstrndx)
{
	Elf_Scn *str_scn;
	GElf_Shdr str_sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	str_scn = elf_getscn(elf, shstrndx);
	if (!str_scn || !gelf_getshdr(str_scn, &str_sh) || str_sh.sh_type == SHT_NOBITS ||
	    !str_sh.sh_size || (str_sh.sh_flags & SHF_COMPRESSED))
		return -ENOENT;
	if (str_sh.sh_size > ELFSYM_MAX_NOTE)
		return -EFBIG;
	*ret_shstrndx = shstrndx;
	return 0;
}

/* The first section of that type called name, and its header. NULL: none. */
static Elf_Scn *elf_named_scn(Elf *elf, const char *name, uint32_t type, GElf_Shdr *ret_sh)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *secname;
	size_t shstrndx;

	if (elfsym__section_names(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		secname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!secname || strcmp(secname, name))
			continue;
		*ret_sh = sh;
		return scn;
	}
	return NULL;
}

/*
 * The data of the first SHT_PROGBITS section called name, of at most max bytes, charged to
 * es. NULL: none.
 */
static Elf_Data *elf_progbits(struct elfsym *es, Elf *elf, const char *name, size_t max)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf_Data *d;

	scn = elf_named_scn(elf, name, SHT_PROGBITS, &sh);
	if (!scn || sh.sh_size > max || !section_readable(&sh) ||
	    !elfsym__charge_section(es, elf, &sh))
		return NULL;
	d = elf_getdata(scn, NULL);
	return d && d->d_buf && d->d_size ? d : NULL;
}

/* The .gnu_debuglink of elf: file name (no directory) and CRC32. 0, or -ENOENT. */
static int elf_debuglink(struct elfsym *es, Elf *elf, char *ret_name, size_t name_len,
			 uint32_t *ret_crc)
{
	GElf_Ehdr eh;
	const char *p;
	Elf_Data *d;
	size_t len, crc_off;

	if (!gelf_getehdr(elf, &eh))
		return -ENOENT;
	d = elf_progbits(es, elf, ".gnu_debuglink", ELFSYM_MAX_DEBUGLINK);
	if (!d)
		return -ENOENT;
	p = d->d_buf;
	len = strnlen(p, d->d_size);
	/* The name, NUL, padding to 4 bytes, then the CRC in the file's byte order. */
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || len >= name_len || crc_off + 4 > d->d_size)
		return -ENOENT;
	memcpy(ret_name, p, len + 1);
	*ret_crc = (uint32_t)rd((const unsigned char *)p + crc_off, 4,
				eh.e_ident[EI_DATA] == ELFDATA2MSB);
	return 0;
}

static int file_crc32(int fd, uint32_t *ret_crc)
{
	const size_t chunk = 256u << 10;
	uLong crc = crc32(0, NULL, 0);
	uint64_t total = 0;
	unsigned char *buf;
	struct stat st;
	ssize_t n;
	int err = 0;

	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size > ELFSYM_MAX_CRC_BYTES)
		return -EFBIG;
	buf = malloc(chunk);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = pread_full(fd, buf, chunk, (off_t)total);
		if (n < 0) {
			err = (int)n;
			goto cleanup;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > ELFSYM_MAX_CRC_BYTES) {
			err = -EFBIG;
			goto cleanup;
		}
		crc = crc32(crc, buf, (uInt)n);
	}
	*ret_crc = (uint32_t)crc;
cleanup:
	free(buf);
	return err;
}

static int elfsym__debug_by_link(struct elfsym *es, struct cands *c, const char *path)
{
	static const char deleted[] = " (deleted)";
	char name[NAME_MAX + 1], dir[PATH_MAX], cand[PATH_MAX];
	const char *slash;
	size_t dir_len, plen;
	uint32_t want_crc, crc = 0;
	int fd, i, n, err;

	if (!path || path[0] != '/' || elf_debuglink(es, es->elf, name, sizeof(name), &want_crc))
		return 0;
	if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	/* The kernel appends " (deleted)" to the maps path of an unlinked file. */
	plen = strlen(path);
	if (plen >= sizeof(deleted) && !strcmp(path + plen - (sizeof(deleted) - 1), deleted))
		plen -= sizeof(deleted) - 1;
	slash = memrchr(path, '/', plen);
	dir_len = (size_t)(slash - path);
	if (dir_len >= sizeof(dir))
		return 0;
	memcpy(dir, path, dir_len);
	dir[dir_len] = '\0';

	for (i = 0; i < 2; i++) {
		if (i == 0)
			n = snprintf(cand, sizeof(cand), "%s%s/%s", ELFSYM_DEBUG_ROOT, dir, name);
		else
			n = snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, name);
		if (n < 0 || (size_t)n >= sizeof(cand))
			continue;
		fd = open_debug_file(cand);
		if (fd < 0)
			continue;
		err = file_crc32(fd, &crc);
		if (!err && crc == want_crc)
			err = elfsym__add_debug_file(es, c, fd, false);
		else
			err = 0;
		close(fd);
		if (err)
			return err;
	}
	return 0;
}

/*
 * in (len bytes, one xz stream) decompressed into a malloc'd buffer of at most max bytes,
 * grown as the output comes: a bomb costs that much and no more. The buffer's size goes to
 * *ret_cap. 0, or -errno: EFBIG past the limit, EBADMSG for data that is not a whole, intact
 * stream.
 */
static int xz_decompress(const void *in, size_t len, size_t max, void **ret_buf, size_t *ret_len,
			 size_t *ret_cap)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = 0, ncap;
	uint8_t *buf = NULL, *nb;
	lzma_ret ret;
	int err;

	if (lzma_stream_decoder(&strm, ELFSYM_LZMA_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = in;
	strm.avail_in = len;
	for (;;) {
		if (strm.avail_out == 0) {
			if (cap >= max) {
				err = -EFBIG;
				goto cleanup;
			}
			ncap = cap ? cap * 2 : (len < (16u << 10) ? 64u << 10 : len * 4);
			if (ncap > max)
				ncap = max;
			nb = realloc(buf, ncap);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
			cap = ncap;
			strm.next_out = buf + strm.total_out;
			strm.avail_out = cap - strm.total_out;
		}
		ret = lzma_code(&strm, LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK) {
			err = ret == LZMA_MEM_ERROR ? -ENOMEM : -EBADMSG;
			goto cleanup;
		}
	}
	*ret_buf = buf;
	*ret_len = strm.total_out;
	*ret_cap = cap;
	lzma_end(&strm);
	return 0;
cleanup:
	lzma_end(&strm);
	free(buf);
	return err;
}

/*
 * Adds the .symtab functions of the MiniDebugInfo of es, when it has one that decompresses
 * within the limits into an ELF file. 1 if used. A section that is damaged, too large or
 * not an ELF file is not used, and is no error.
 */
static int elfsym__minidebug(struct elfsym *es, struct cands *c)
{
	size_t len, cap,
		max = ELFSYM_MAX_MINIDEBUG < es->budget.left ? ELFSYM_MAX_MINIDEBUG
							     : es->budget.left;
	bool symtab = false;
	size_t n = c->n;
	Elf_Data *d;
	void *buf;
	Elf *mini;
	int err = 0;

	d = elf_progbits(es, es->elf, ".gnu_debugdata", ELFSYM_MAX_DEBUGDATA);
	if (!d)
		return 0;
	err = xz_decompress(d->d_buf, d->d_size, max, &buf, &len, &cap);
	/* Cut by the budget rather than by ELFSYM_MAX_MINIDEBUG: reported. */
	if (err == -EFBIG && max < ELFSYM_MAX_MINIDEBUG)
		(void)elfsym__charge(es, (uint64_t)max + 1);
	if (err)
		return 0;
	(void)elfsym__charge(es, cap);
	if (ehdr_check(buf, len))
		goto cleanup;
	mini = elf_memory(buf, len);
	if (!mini)
		goto cleanup;
	if (elf_kind(mini) == ELF_K_ELF)
		err = elfsym__scan(es, c, mini, SCAN_SYMTAB, &symtab, es->machine);
	if (!err && symtab)
		err = 1;
	/* The names are in the decompressed file: it stays until the merge. */
	cands__hold(c, mini, n);
	if (c->n > n) {
		c->held_buf = buf;
		return err;
	}
cleanup:
	free(buf);
	return err;
}

struct go_ctx {
	struct elfsym *es;
	struct cands *c;
	unsigned seen; /* go_probe() */
};

static int go_add(void *ctx, uint64_t entry, uint64_t size, const char *name, size_t len)
{
	struct go_ctx *g = ctx;
	struct cand *v;
	int err;

	err = cands__reserve(g->c, g->es);
	if (err == -ENOSPC)
		return 1;
	if (err)
		return err;
	if (len > ELFSYM_MAX_NAME)
		len = ELFSYM_MAX_NAME;
	v = &g->c->v[g->c->n];
	v->name = name;
	v->addr = entry;
	v->size = size;
	v->len = (uint32_t)len;
	v->bind = 3;
	g->c->n++;
	return 0;
}

static int go_probe(void *ctx, uint64_t entry, uint64_t size, const char *name, size_t len)
{
	struct go_ctx *g = ctx;

	(void)entry, (void)size, (void)name, (void)len;
	return ++g->seen >= ELFSYM_GO_PROBE_FUNCS;
}

/*
 * The Go function table of es: its own section, else (an external linker merged it into
 * .data.rel.ro, as for PIE) the first pcHeader in .data.rel.ro whose first functions check
 * out. Go binaries keep their section headers, stripped or not.
 */
static int elfsym__find_gopclntab(struct elfsym *es, const unsigned char **ret_p, size_t *ret_len)
{
	static const unsigned char magics[][4] = {
		{ 0xf1, 0xff, 0xff, 0xff }, { 0xf0, 0xff, 0xff, 0xff }, { 0xfa, 0xff, 0xff, 0xff },
		{ 0xff, 0xff, 0xff, 0xf1 }, { 0xff, 0xff, 0xff, 0xf0 }, { 0xff, 0xff, 0xff, 0xfa },
	};
	struct go_ctx probe = {};
	const unsigned char *p;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t off, i, tries = 0;

	d = elf_progbits(es, es->elf, ".gopclntab", ELFSYM_MAX_SECTION);
	/* The Go linker's own name for it in a file with a RELRO segment (PIE, shared). */
	if (!d)
		d = elf_progbits(es, es->elf, ".data.rel.ro.gopclntab", ELFSYM_MAX_SECTION);
	if (d) {
		*ret_p = d->d_buf;
		*ret_len = d->d_size;
		return 0;
	}
	/* Only in Go files: every file's .data.rel.ro is not worth a scan. */
	if (!elf_named_scn(es->elf, ".note.go.buildid", SHT_NOTE, &sh))
		return -ENOENT;
	d = elf_progbits(es, es->elf, ".data.rel.ro", ELFSYM_MAX_SECTION);
	if (!d)
		return -ENOENT;
	p = d->d_buf;
	/* The header is pointer-aligned in a section that holds pointers. */
	for (off = 0; off + 8 <= d->d_size && tries < ELFSYM_GO_PROBE_HEADERS; off += 4) {
		for (i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
			if (!memcmp(p + off, magics[i], 4))
				break;
		if (i == sizeof(magics) / sizeof(magics[0]) || p[off + 4] || p[off + 5])
			continue;
		tries++;
		probe.seen = 0;
		if (gopclntab__walk(p + off, d->d_size - off, go_probe, &probe) >= 0 &&
		    probe.seen >= ELFSYM_GO_PROBE_FUNCS) {
			*ret_p = p + off;
			*ret_len = d->d_size - off;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Adds the functions of the Go runtime's table, which stripping leaves in place: each runs up
 * to the next one. They come last in the order of preference, so that a .symtab, the same
 * data, names an address first. A table this code cannot read adds nothing and is no error.
 */
static int elfsym__gopclntab(struct elfsym *es, struct cands *c)
{
	struct go_ctx g = { .es = es, .c = c };
	const unsigned char *p;
	size_t len;
	long n;

	if (elfsym__find_gopclntab(es, &p, &len))
		return 0;
	n = gopclntab__walk(p, len, go_add, &g);
	return n < 0 && n != -ENOEXEC ? (int)n : 0;
}

static unsigned leading_underscores(const char *s, uint32_t len)
{
	unsigned n = 0;

	while (n < len && s[n] == '_')
		n++;
	return n;
}

/*
 * Aliases share an address (glibc's malloc and __libc_malloc): one name is kept per address,
 * sized over unsized, global over weak over local, then the fewest leading underscores, then
 * the shortest, then the bytes, so that the choice does not depend on table order. < 0 when
 * x comes first.
 */
static int cand_cmp(const struct cand *x, const struct cand *y)
{
	unsigned ux, uy;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->bind != y->bind)
		return x->bind < y->bind ? -1 : 1;
	ux = leading_underscores(x->name, x->len);
	uy = leading_underscores(y->name, y->len);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->name, y->name, x->len);
}

static void cand_swap(struct cand *a, struct cand *b)
{
	struct cand t = *a;

	*a = *b;
	*b = t;
}

static void cand_heapsort(struct cand *v, size_t n)
{
	/* Heapify, then take the largest out n - 1 times. */
	for (size_t start = n / 2; start-- > 0;) {
		for (size_t root = start, child; (child = 2 * root + 1) < n; root = child) {
			if (child + 1 < n && cand_cmp(&v[child], &v[child + 1]) < 0)
				child++;
			if (cand_cmp(&v[root], &v[child]) >= 0)
				break;
			cand_swap(&v[root], &v[child]);
		}
	}
	for (size_t end = n; end-- > 1;) {
		cand_swap(&v[0], &v[end]);
		for (size_t root = 0, child; (child = 2 * root + 1) < end; root = child) {
			if (child + 1 < end && cand_cmp(&v[child], &v[child + 1]) < 0)
				child++;
			if (cand_cmp(&v[root], &v[child]) >= 0)
				break;
			cand_swap(&v[root], &v[child]);
		}
	}
}

/*
 * Sorts v[0..n) by cand_cmp, in place: quicksort with the comparison inlined (glibc's qsort
 * called it through a pointer and sorted through a copy, half the cost of reading libc's
 * 13 000 symbols), insertion sort for short ranges, and heapsort past 2 log2(n) levels, so
 * that no table, however a hostile file orders it, costs more than n log n.
 */
static void cand_sort(struct cand *v, size_t n)
{
	unsigned depth = 0;

	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	while (n > 16) {
		struct cand *mid = &v[n / 2], *last = &v[n - 1];
		size_t i = 0, j = n - 1;

		if (depth-- == 0) {
			cand_heapsort(v, n);
			return;
		}
		/* Median of three at v[0]: the pivot; v[n - 1] is then no smaller. */
		if (cand_cmp(mid, v) < 0)
			cand_swap(mid, v);
		if (cand_cmp(last, v) < 0)
			cand_swap(last, v);
		if (cand_cmp(last, mid) < 0)
			cand_swap(last, mid);
		cand_swap(v, mid);
		for (;;) {
			while (cand_cmp(&v[++i], v) < 0)
				;
			while (cand_cmp(v, &v[--j]) < 0)
				;
			if (i >= j)
				break;
			cand_swap(&v[i], &v[j]);
		}
		cand_swap(v, &v[j]);
		/* The smaller side by recursion (at most log2(n) deep), the larger in the loop. */
		if (j < n - j - 1) {
			cand_sort(v, j);
			v += j + 1;
			n -= j + 1;
		} else {
			cand_sort(v + j + 1, n - j - 1);
			n = j;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && cand_cmp(&v[k], &v[k - 1]) < 0; k--)
			cand_swap(&v[k], &v[k - 1]);
}

/* Sorts c, keeps one symbol per address, and copies only the kept names. */
static int elfsym__finish(struct elfsym *es, struct cands *c)
{
	size_t i, n = 0, bytes = 0, at = 0;
	struct esym *syms;
	char *strs;

	if (c->n == 0)
		return 0;
	cand_sort(c->v, c->n);
	/*
	 * The kept names are charged as they are copied: many symbols may name the same bytes
	 * of a string table (a hostile file: 2 million addresses, one 4 KiB name), which were
	 * charged once. Past the budget the rest of the addresses go unnamed, and the file is
	 * reported as any other over it. The budget keeps bytes below ELFSYM_MAX_STRINGS.
	 */
	for (i = 0; i < c->n; i++) {
		if (n > 0 && c->v[n - 1].addr == c->v[i].addr)
			continue;
		if (!elfsym__charge(es, c->v[i].len + 1))
			break;
		c->v[n++] = c->v[i];
		bytes += c->v[i].len + 1;
	}
	syms = malloc((n ? n : 1) * sizeof(*syms));
	strs = malloc(bytes ? bytes : 1);
	if (!syms || !strs) {
		free(syms);
		free(strs);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct cand *v = &c->v[i];

		memcpy(strs + at, v->name, v->len);
		strs[at + v->len] = '\0';
		syms[i] = (struct esym){
			.addr = v->addr,
			.size = v->size > ELFSYM_MAX_FUNC_SIZE ? ELFSYM_MAX_FUNC_SIZE
							       : (uint32_t)v->size,
			.name = (uint32_t)at,
			.final = !(strs[at] == '_' && (strs[at + 1] == 'Z' || strs[at + 1] == 'R')),
		};
		at += v->len + 1;
	}
	free(es->strs.p);
	es->strs = (struct strbuf){ .p = strs, .len = bytes, .cap = bytes };
	es->syms = syms;
	es->nsyms = n;
	return 0;
}

int elfsym__load_symbols(struct elfsym *es, const char *path)
{
	struct cands c = {};
	bool symtab = false;
	int err;

	if (!es || !es->elf)
		return -EINVAL;
	err = elfsym__scan(es, &c, es->elf, SCAN_SYMTAB, &symtab, es->machine);
	if (!err && symtab)
		err = elfsym__scan(es, &c, es->elf, SCAN_DYNSYM, &symtab, es->machine);
	if (err)
		goto cleanup;
	if (!symtab) {
		/*
		 * A stripped file: its debug file first. Its .symtab is the whole of the
		 * unstripped file's, .dynsym's functions included, so .dynsym is read only
		 * without one (libc: 100 KiB of tables and 3000 functions not read, sorted and
		 * dropped). MiniDebugInfo holds only what .dynsym lacks.
		 */
		err = elfsym__debug_by_build_id(es, &c);
		if (err == 0)
			err = elfsym__debug_by_link(es, &c, path);
		if (err == 0)
			err = elfsym__scan(es, &c, es->elf, SCAN_DYNSYM, &symtab, es->machine);
		if (err == 0)
			err = elfsym__minidebug(es, &c);
		if (err < 0)
			goto cleanup;
	}
	err = elfsym__gopclntab(es, &c);
	if (err < 0)
		goto cleanup;
	err = elfsym__finish(es, &c);
cleanup:
	if (err < 0)
		strbuf__free(&es->strs);
	cands__release(&c);
	elf_end(es->elf);
	es->elf = NULL;
	return err < 0 ? err : 0;
}

uint64_t elfsym__vaddr(const struct elfsym *es, uint64_t addr, uint64_t start, uint64_t off)
{
	uint64_t foff;
	size_t i;

	if (es->type == ET_EXEC)
		return addr;
	foff = addr - start + off;
	for (i = 0; i < es->nloads; i++) {
		const struct elf_load *l = &es->loads[i];

		if (foff >= l->offset && foff - l->offset < l->filesz)
			return l->vaddr + (foff - l->offset);
	}
	return foff;
}

/* Index of the symbol naming vaddr, or SIZE_MAX. */
static size_t elfsym__find(const struct elfsym *es, uint64_t vaddr)
{
	size_t lo = 0, hi = es->nsyms, mid, i, k;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (es->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return SIZE_MAX;
	i = lo - 1;
	if (es->syms[i].size && vaddr - es->syms[i].addr < es->syms[i].size)
		return i;
	for (k = i; k > 0 && i - k < ELFSYM_ENCLOSING_SCAN;) {
		k--;
		if (es->syms[k].size && vaddr - es->syms[k].addr < es->syms[k].size)
			return k;
	}
	/*
	 * An unsized symbol (assembly without .size) runs up to the next one. Past the end of a
	 * sized one is code no symbol describes (PLT stubs, padding): naming it after the
	 * function before would be a guess.
	 */
	return es->syms[i].size ? SIZE_MAX : i;
}

int elfsym__name(struct elfsym *es, uint64_t vaddr, char *buf, size_t len)
{
	char demangled[ELFSYM_MAX_NAME + 1];
	struct esym *s;
	uint32_t off;
	size_t i;

	if (!es)
		return 0;
	i = elfsym__find(es, vaddr);
	if (i == SIZE_MAX)
		return 0;
	s = &es->syms[i];
	if (!s->final) {
		if (demangle__name(es->strs.p + s->name, demangled, sizeof(demangled))) {
			if (strbuf__add(&es->dstrs, demangled, strlen(demangled), &off, NULL)) {
				/* Not kept (at the limit): shown all the same. */
				if (len)
					snprintf(buf, len, "%s", demangled);
				return 1;
			}
			s->name = off;
			s->demangled = 1;
		}
		s->final = 1;
	}
	if (len)
		snprintf(buf, len, "%s", (s->demangled ? es->dstrs.p : es->strs.p) + s->name);
	return 1;
}

size_t elfsym__bytes(const struct elfsym *es)
{
	if (!es)
		return 0;
	return sizeof(*es) + es->nsyms * sizeof(*es->syms) + es->strs.cap + es->dstrs.cap;
}

bool elfsym__refused(const struct elfsym *es, uint64_t *ret_bytes, uint64_t *ret_limit)
{
	if (!es || !es->budget.refused)
		return false;
	*ret_bytes = es->budget.refused;
	*ret_limit = ELFSYM_FILE_BUDGET;
	return true;
}

size_t elfsym__count(const struct elfsym *es)
{
	return es ? es->nsyms : 0;
}

void elfsym__free(struct elfsym *es)
{
	if (!es)
		return;
	if (es->elf)
		elf_end(es->elf);
	free(es->syms);
	strbuf__free(&es->strs);
	strbuf__free(&es->dstrs);
	free(es);
}
