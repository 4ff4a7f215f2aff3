// SPDX-License-Identifier: Apache-2.0
/*
 * Finding TLS calls in a target's files (shipper/network/tlsfind.h). Runs in the shipper, which holds
 * no capability: a hostile target choosing what it maps can at worst make us read its files
 * within the limits below, and make the worker refuse offsets that fail its own checks.
 *
 * C libraries: SSL_read, SSL_write, SSL_read_ex, SSL_write_ex from .dynsym/.symtab, each with
 * an entry and a return probe, or, for SSL_read and SSL_write where their code is the wrapper
 * common/tlssite.h knows, a probe on the call of their _ex twin and one on the jump after it. Go: crypto/tls.(*Conn).Read and .Write from .gopclntab (which
 * `-ldflags=-s` and strip leave), an entry probe and one at each RET instruction, found by
 * decoding the function with Capstone: a uretprobe would rewrite a return address on a stack
 * the Go runtime moves.
 *
 * Everything read from one file is charged to one budget (ELFSYM_FILE_BUDGET, elfsym.h, as
 * symbol loading charges its reads), before it is read: the section names, each symbol table
 * (streamed through a small buffer, never held whole) and its string table, .gopclntab or
 * .data.rel.ro, the Go functions decoded. A file over it is not probed, with a reason. A
 * linker writes one table of each kind (.dynsym, .symtab) and never two over the same bytes:
 * a file that repeats one or overlaps them is refused without reading any.
 */
#define _GNU_SOURCE
#include <byteswap.h>
#include <capstone/capstone.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/netrec.h"
#include "common/tlssite.h"
#include "shipper/stacks/elfsym.h"
#include "shipper/stacks/gopclntab.h"
#include "shipper/network/tlsfind.h"

/* Symbols read from the file at a time (12 KiB). */
#define SYM_CHUNK 512
/* Bytes of a Go function decoded (crypto/tls.(*Conn).Read: ~1 KiB). */
#define GO_FUNC_MAX (64u << 10)
#define MAX_LOADS 64

/* The reason given for a file over its budget, naming it. */
_Static_assert(ELFSYM_FILE_BUDGET == 64u << 20, "OVER_BUDGET names the budget");
#define OVER_BUDGET(what) what " over the budget of 64 MiB read from a file"

struct loads {
	GElf_Phdr ph[MAX_LOADS];
	size_t n;
};

/*
 * Whether p is code whose bytes are all in the file (of size bytes). Only such segments are
 * kept: the worker refuses an offset anywhere else (worker/netcap.c check_offsets), which
 * would come back as the whole library refused; a file's header claiming segments past its
 * end is refused here instead, with a reason. (Found by tests/fuzz/fuzz_tlsfind.c: an SSL_read
 * in a segment at file offset 2^47 became a probe there.)
 */
static bool code_in_file(const GElf_Phdr *p, uint64_t size)
{
	return p->p_type == PT_LOAD && (p->p_flags & PF_X) && p->p_offset <= size &&
	       p->p_filesz <= size - p->p_offset;
}

/* The file offset of vaddr, or -1 when no loaded segment holds it in the file. */
static int64_t file_offset(const struct loads *l, uint64_t vaddr)
{
	for (size_t i = 0; i < l->n; i++) {
		const GElf_Phdr *p = &l->ph[i];

		if (vaddr >= p->p_vaddr && vaddr - p->p_vaddr < p->p_filesz)
			return (int64_t)(vaddr - p->p_vaddr + p->p_offset);
	}
	return -1;
}

enum { SYM_READ, SYM_WRITE, SYM_READ_EX, SYM_WRITE_EX, SYM_BORING, NSYMS };

static const char *const sym_names[NSYMS] = {
	[SYM_READ] = "SSL_read",
	[SYM_WRITE] = "SSL_write",
	[SYM_READ_EX] = "SSL_read_ex",
	[SYM_WRITE_EX] = "SSL_write_ex",
	/* in BoringSSL's libssl only */
	[SYM_BORING] = "SSL_CTX_set_strict_cipher_list",
};

/* Whether [off, off + size) lies inside a file of file_size bytes. */
static bool in_file(uint64_t off, uint64_t size, uint64_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * The string table sh links to, read whole into *ret_strs (*ret_len bytes) and charged to b.
 * 0 or -errno with *why.
 */
static int read_strtab(int fd, Elf *elf, const GElf_Shdr *sh, uint64_t file_size,
		       struct file_budget *b, char **ret_strs, size_t *ret_len, const char **why)
{
	Elf_Scn *scn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr str;
	char *strs;
	ssize_t n;

	if (!scn || !gelf_getshdr(scn, &str) || str.sh_type != SHT_STRTAB || !str.sh_size ||
	    (str.sh_flags & SHF_COMPRESSED)) {
		*why = "a symbol table without a string table";
		return -ENOEXEC;
	}
	if (!in_file(str.sh_offset, str.sh_size, file_size)) {
		*why = "the file is shorter than its headers say";
		return -EIO;
	}
	if (!file_budget__charge(b, str.sh_size)) {
		*why = OVER_BUDGET("symbol and string tables");
		return -EFBIG;
	}
	strs = malloc(str.sh_size);
	if (!strs)
		return -ENOMEM;
	n = pread_full(fd, strs, str.sh_size, str.sh_offset);
	if (n != (ssize_t)str.sh_size) {
		free(strs);
		*why = n < 0 ? "the file could not be read"
			     : "the file is shorter than its headers say";
		return n < 0 ? (int)n : -EIO;
	}
	*ret_strs = strs;
	*ret_len = str.sh_size;
	return 0;
}

/* A symbol of a 64-bit table as it is in the file, in this machine's byte order. */
static void sym_native(Elf64_Sym *s, bool swap)
{
	if (!swap)
		return;
	s->st_name = bswap_32(s->st_name);
	s->st_shndx = bswap_16(s->st_shndx);
	s->st_value = bswap_64(s->st_value);
	s->st_size = bswap_64(s->st_size);
}

/*
 * The SSL calls among the functions of the symbol table sh (of a 64-bit file) into addr. The
 * table is read SYM_CHUNK symbols at a time; its bytes and its string table are charged to b.
 * 0 or -errno with *why.
 */
static int scan_symbols(int fd, Elf *elf, const GElf_Shdr *sh, uint64_t file_size,
			struct file_budget *b, uint64_t addr[NSYMS], const char **why)
{
	const char *ident = elf_getident(elf, NULL);
	bool swap = ident &&
		    ident[EI_DATA] !=
			    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB);
	Elf64_Sym chunk[SYM_CHUNK];
	uint64_t count, done;
	char *strs = NULL;
	size_t strs_len = 0;
	int err;

	if (sh->sh_entsize != sizeof(Elf64_Sym) || (sh->sh_flags & SHF_COMPRESSED)) {
		*why = "a symbol table of entries this reader does not take";
		return -ENOEXEC;
	}
	if (!in_file(sh->sh_offset, sh->sh_size, file_size)) {
		*why = "the file is shorter than its headers say";
		return -EIO;
	}
	if (!file_budget__charge(b, sh->sh_size)) {
		*why = OVER_BUDGET("symbol and string tables");
		return -EFBIG;
	}
	count = sh->sh_size / sizeof(Elf64_Sym);
	if (!count)
		return 0;
	err = read_strtab(fd, elf, sh, file_size, b, &strs, &strs_len, why);
	if (err)
		return err;
	for (done = 0; done < count;) {
		size_t n = count - done < SYM_CHUNK ? (size_t)(count - done) : SYM_CHUNK;
		ssize_t got = pread_full(fd, chunk, n * sizeof(Elf64_Sym),
					 sh->sh_offset + done * sizeof(Elf64_Sym));

		if (got != (ssize_t)(n * sizeof(Elf64_Sym))) {
			err = got < 0 ? (int)got : -EIO;
			*why = got < 0 ? "the file could not be read"
				       : "the file is shorter than its headers say";
			break;
		}
		done += n;
		for (size_t i = 0; i < n; i++) {
			Elf64_Sym *s = &chunk[i];
			const char *name;
			size_t len;

			sym_native(s, swap);
			if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
			    !s->st_value || s->st_name >= strs_len || strs[s->st_name] != 'S')
				continue;
			name = strs + s->st_name;
			/* A name not ended inside the table is none of ours. */
			len = strnlen(name, strs_len - s->st_name);
			for (int k = 0; k < NSYMS; k++)
				if (!addr[k] && len == strlen(sym_names[k]) &&
				    !memcmp(name, sym_names[k], len))
					addr[k] = s->st_value;
		}
	}
	free(strs);
	return err;
}

struct go_funcs {
	uint64_t entry[3], size[3]; /* Read, Write, handshakeContext */
};

static int go_find(void *ctx, uint64_t entry, uint64_t size, const char *name, size_t len)
{
	static const char *const want[3] = { "crypto/tls.(*Conn).Read", "crypto/tls.(*Conn).Write",
					     "crypto/tls.(*Conn).handshakeContext" };
	struct go_funcs *g = ctx;

	for (int k = 0; k < 3; k++)
		if (len == strlen(want[k]) && !memcmp(name, want[k], len)) {
			g->entry[k] = entry;
			g->size[k] = size;
		}
	return g->entry[0] && g->entry[1] && g->entry[2] ? 1 : 0;
}

/*
 * The Go runtime's table inside .data.rel.ro (an externally linked Go binary): its header,
 * pointer-aligned, that names the crypto/tls functions. At most 16 candidate headers are
 * walked. The section is charged to b. 0, -ENOENT, or -EFBIG over the budget.
 */
static int find_merged_table(Elf *elf, Elf_Scn *relro, struct file_budget *b,
			     const uint8_t **ret_tab, size_t *ret_len, struct go_funcs *go)
{
	const uint8_t *p;
	GElf_Shdr sh;
	Elf_Data *d;
	int tries = 0;

	if (!gelf_getshdr(relro, &sh))
		return -ENOENT;
	if (!file_budget__charge_copy(b, elf, sh.sh_size))
		return -EFBIG;
	d = elf_getdata(relro, NULL);
	if (!d || !d->d_buf)
		return -ENOENT;
	p = d->d_buf;
	for (size_t off = 0; off + 8 <= d->d_size && tries < 16; off += 4) {
		if ((p[off] != 0xf0 && p[off] != 0xf1) || p[off + 1] != 0xff ||
		    p[off + 2] != 0xff || p[off + 3] != 0xff || p[off + 4] || p[off + 5])
			continue;
		tries++;
		memset(go, 0, sizeof(*go));
		if (gopclntab__walk(p + off, d->d_size - off, go_find, go) >= 0 && go->entry[0] &&
		    go->entry[1]) {
			*ret_tab = p + off;
			*ret_len = d->d_size - off;
			return 0;
		}
	}
	return -ENOENT;
}

/* fn: the function, with NET_TLS_AT_SITE or NET_TLS_AT_AFTER where it is not the entry. */
static void add_probe(struct msg_tls_attach *m, uint64_t off, uint32_t fn, uint32_t lib, int ret)
{
	struct msg_tls_probe *p = &m->probes[m->nprobes++];

	p->offset = off;
	p->cookie = (uint32_t)NET_TLS_COOKIE(fn & 0xff, lib) | (fn & ~0xffu);
	p->ret = (uint32_t)ret;
}

/* The call site of the C function at file offset off (common/tlssite.h): 0 or -errno. */
static int call_site(int fd, struct file_budget *b, uint64_t off, struct tls_site *ret)
{
	uint8_t code[TLS_SITE_SCAN];

	if (!file_budget__charge(b, sizeof(code)) ||
	    pread(fd, code, sizeof(code), (off_t)off) != (ssize_t)sizeof(code))
		return -EIO;
	return tls_site_find(code, sizeof(code), ret);
}

/*
 * The entry and each RET of one Go function into m, its bytes charged to b. 0 or -errno with
 * *why.
 */
static int go_probes(int fd, const struct loads *l, struct file_budget *b, uint64_t entry,
		     uint64_t size, uint32_t fn, uint32_t ret_fn, struct msg_tls_attach *m,
		     const char **why)
{
	int64_t off = file_offset(l, entry);
	const uint8_t *code;
	uint64_t addr = entry;
	size_t left;
	uint8_t *buf;
	csh cs;
	cs_insn *insn;
	int err = 0;

	if (off < 0 || !size || size > GO_FUNC_MAX || file_offset(l, entry + size - 1) < 0) {
		*why = "a crypto/tls function outside the file's loaded code";
		return -ERANGE;
	}
	if (!file_budget__charge(b, size)) {
		*why = OVER_BUDGET("tables and code");
		return -EFBIG;
	}
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	if (pread(fd, buf, size, off) != (ssize_t)size) {
		free(buf);
		*why = "the file is shorter than its headers say";
		return -EIO;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		/* The shipper loads the library unless it serves no NETWORK task (capstone_load.c). */
		free(buf);
		*why = "no disassembler: libcapstone is not loaded in this shipper";
		return -ELIBACC;
	}
	insn = cs_malloc(cs);
	if (!insn) {
		cs_close(&cs);
		free(buf);
		return -ENOMEM;
	}
	/* Said, as below: a failure without a reason is not logged. */
	if (m->nprobes >= MSG_TLS_MAX_PROBES) {
		err = -E2BIG;
		*why = "more RET instructions than the probes a library may have";
	} else {
		add_probe(m, (uint64_t)off, fn, NET_TLS_GO, 0);
	}
	code = buf;
	left = size;
	while (!err && left && cs_disasm_iter(cs, &code, &left, &addr, insn)) {
		if (insn->id != X86_INS_RET)
			continue;
		/*
		 * Capstone's RET is also "ret imm16" (c2) and a prefixed c3, which the Go
		 * compiler does not emit and the worker refuses (it wants the byte 0xc3);
		 * skipped, that return would go unprobed. (Found by tests/fuzz/fuzz_tlsfind.c.)
		 */
		if (insn->size != 1 || insn->bytes[0] != 0xc3) {
			err = -EILSEQ;
			*why = "a crypto/tls function with a RET other than 0xc3";
			break;
		}
		if (m->nprobes >= MSG_TLS_MAX_PROBES) {
			err = -E2BIG;
			*why = "more RET instructions than the probes a library may have";
			break;
		}
		add_probe(m, (uint64_t)off + (insn->address - entry), ret_fn, NET_TLS_GO, 0);
	}
	/* Bytes left undecoded: a RET among them would go unprobed and leak calls. */
	if (!err && left) {
		err = -EILSEQ;
		*why = "a crypto/tls function that does not decode as x86-64 code";
	}
	cs_free(insn, 1);
	cs_close(&cs);
	free(buf);
	return err;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

int tlsfind__probes(int fd, const char *path, struct msg_tls_attach *ret, const char **ret_why)
{
	uint64_t addr[NSYMS] = { 0 };
	struct msg_tls_attach m;
	struct go_funcs go = { { 0 } };
	struct loads l = { .n = 0 };
	const char *why = NULL, *base = base_name(path);
	Elf_Scn *scn = NULL, *pcln = NULL, *relro = NULL;
	const uint8_t *tab = NULL;
	size_t tab_len = 0;
	int gonote = 0;
	size_t nph = 0, shstrndx = SHN_UNDEF;
	/* .dynsym and .symtab, in the file's order */
	GElf_Shdr tables[2];
	size_t ntables = 0;
	struct file_budget budget;
	struct stat st;
	GElf_Ehdr eh;
	Elf *elf;
	int err = 0;

	memset(&m, 0, sizeof(m));
	file_budget__init(&budget);
	elf = (Elf *)elfsym__elf_begin(fd);
	if (!elf) {
		*ret_why = "not an ELF file this reader takes";
		return -errno;
	}
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph) ||
	    elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		why = "unreadable ELF headers";
		goto cleanup;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		why = "a file that cannot be looked at";
		goto cleanup;
	}
	for (size_t i = 0; i < nph && l.n < MAX_LOADS; i++)
		if (gelf_getphdr(elf, (int)i, &l.ph[l.n]) &&
		    code_in_file(&l.ph[l.n], (uint64_t)st.st_size))
			l.n++;
	/* elf_strptr() reads the section-name table whole; without one no section is named. */
	err = elfsym__section_names(elf, &shstrndx);
	if (err == -EFBIG) {
		why = "a section-name table larger than a linker makes";
		goto cleanup;
	}
	if (!err) {
		GElf_Shdr names;

		if (!gelf_getshdr(elf_getscn(elf, shstrndx), &names) ||
		    !file_budget__charge(&budget, names.sh_size)) {
			err = -ENOEXEC;
			why = "unreadable ELF headers";
			goto cleanup;
		}
	} else {
		shstrndx = SHN_UNDEF;
	}
	err = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) {
			/* Of two kinds: a third repeats one. */
			for (size_t i = 0; i < ntables; i++)
				if (tables[i].sh_type == sh.sh_type)
					err = -ENOEXEC;
			if (err) {
				why = "two symbol tables of one kind (a linker writes one)";
				goto cleanup;
			}
			tables[ntables++] = sh;
		}
		name = shstrndx == SHN_UNDEF ? NULL : elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || sh.sh_type == SHT_NOBITS)
			continue;
		/* The Go linker names it .data.rel.ro.gopclntab where there is a RELRO segment
		 * (PIE); an external link merges it into .data.rel.ro. */
		if (!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab"))
			pcln = scn;
		else if (!strcmp(name, ".data.rel.ro"))
			relro = scn;
		else if (!strcmp(name, ".note.go.buildid"))
			gonote = 1;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
		err = -ENOEXEC;
		why = "not a 64-bit ELF file (only 64-bit code is probed)";
		goto cleanup;
	}
	if (ntables == 2 && tables[0].sh_size && tables[1].sh_size &&
	    in_file(tables[0].sh_offset, tables[0].sh_size, (uint64_t)st.st_size) &&
	    in_file(tables[1].sh_offset, tables[1].sh_size, (uint64_t)st.st_size) &&
	    tables[0].sh_offset < tables[1].sh_offset + tables[1].sh_size &&
	    tables[1].sh_offset < tables[0].sh_offset + tables[0].sh_size) {
		err = -ENOEXEC;
		why = "symbol tables over the same bytes (a linker never writes them so)";
		goto cleanup;
	}
	for (size_t i = 0; i < ntables; i++) {
		err = scan_symbols(fd, elf, &tables[i], (uint64_t)st.st_size, &budget, addr, &why);
		if (err)
			goto cleanup;
	}
	if (addr[SYM_READ] && addr[SYM_WRITE]) {
		/* The SSL calls are probed: no Go table is read. */
	} else if (pcln) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(pcln, &sh)) {
			err = -ENOEXEC;
			why = "an unreadable .gopclntab";
			goto cleanup;
		}
		if (!file_budget__charge_copy(&budget, elf, sh.sh_size)) {
			err = -EFBIG;
			why = OVER_BUDGET(".gopclntab and symbol tables");
			goto cleanup;
		}
		d = elf_getdata(pcln, NULL);
		if (!d || !d->d_buf || d->d_size < 8) {
			err = -ENOEXEC;
			why = "an unreadable .gopclntab";
			goto cleanup;
		}
		tab = d->d_buf;
		tab_len = d->d_size;
	} else if (gonote && relro) {
		err = find_merged_table(elf, relro, &budget, &tab, &tab_len, &go);
		if (err == -EFBIG)
			why = OVER_BUDGET(".data.rel.ro and symbol tables");
		if (err == -EFBIG || err == -ENOMEM)
			goto cleanup;
		err = 0;
	}
	if (addr[SYM_READ] && addr[SYM_WRITE]) {
		uint32_t lib = !strncmp(base, "node", 4) || !strncmp(base, "libnode", 7)
				       ? NET_TLS_NODE
			       : addr[SYM_BORING] ? NET_TLS_BORINGSSL
						  : NET_TLS_OPENSSL;
		static const uint32_t fns[4] = { NET_TLS_FN_READ, NET_TLS_FN_WRITE,
						 NET_TLS_FN_READ_EX, NET_TLS_FN_WRITE_EX };
		struct tls_site site;

		m.lib = lib;
		for (int k = 0; k < 4; k++) {
			int64_t off;

			if (!addr[k])
				continue;
			off = file_offset(&l, addr[k]);
			if (off < 0) {
				err = -ERANGE;
				why = "an SSL call outside the file's loaded code";
				goto cleanup;
			}
			/* SSL_read and SSL_write: on their _ex call where it is found, no single-step. */
			if (k < 2 && !call_site(fd, &budget, (uint64_t)off, &site)) {
				add_probe(&m, (uint64_t)off + site.call_off,
					  fns[k] | NET_TLS_AT_SITE, lib, 0);
				add_probe(&m, (uint64_t)off + site.after_off,
					  fns[k] | NET_TLS_AT_AFTER, lib, 0);
				continue;
			}
			add_probe(&m, (uint64_t)off, fns[k], lib, 0);
			add_probe(&m, (uint64_t)off, fns[k], lib, 1);
		}
	} else if (tab) {
		long walked;

		if (eh.e_machine != EM_X86_64) {
			err = -EOPNOTSUPP;
			why = "a Go binary not for x86-64 (Go TLS is probed on x86-64 only)";
			goto cleanup;
		}
		/* The register ABI that the probes read arguments from: Go 1.17; its table: 1.18. */
		if (memcmp(tab, "\xf0\xff\xff\xff", 4) && memcmp(tab, "\xf1\xff\xff\xff", 4)) {
			err = -EOPNOTSUPP;
			why = "a Go binary older than Go 1.18";
			goto cleanup;
		}
		memset(&go, 0, sizeof(go));
		walked = gopclntab__walk(tab, tab_len, go_find, &go);
		if (walked < 0) {
			err = (int)walked;
			why = "an unreadable .gopclntab";
			goto cleanup;
		}
		if (!go.entry[0] || !go.entry[1]) {
			err = -ENOENT;
			goto cleanup;
		}
		m.lib = NET_TLS_GO;
		err = go_probes(fd, &l, &budget, go.entry[0], go.size[0], NET_TLS_FN_GO_READ,
				NET_TLS_FN_GO_RET, &m, &why);
		if (!err)
			err = go_probes(fd, &l, &budget, go.entry[1], go.size[1],
					NET_TLS_FN_GO_WRITE, NET_TLS_FN_GO_RET, &m, &why);
		/* Without it (a Go that names it otherwise), a first request read with the
		 * handshake is missed and counted: not worth refusing the rest for. */
		if (!err && go.entry[2])
			err = go_probes(fd, &l, &budget, go.entry[2], go.size[2],
					NET_TLS_FN_GO_HANDSHAKE, NET_TLS_FN_GO_HS_RET, &m, &why);
	} else {
		err = -ENOENT;
		if (!strncmp(base, "libssl", 6))
			why = "no SSL_read and SSL_write symbols (stripped?)";
	}
cleanup:
	elf_end(elf);
	if (err) {
		*ret_why = why;
		return err;
	}
	ret->lib = m.lib;
	ret->nprobes = m.nprobes;
	memcpy(ret->probes, m.probes, sizeof(m.probes));
	return 0;
}

/* ---- the per-task finder ---- */

/* Opens of a file that failed (a dlopen still mapping it) before it is given up on. */
#define OPEN_TRIES 3

struct seen {
	int32_t pid;
	uint32_t dev;
	uint64_t ino;
	uint32_t failed; /* opens that failed; it is looked at again until OPEN_TRIES */
};

struct tls_finder {
	uint64_t task_id;
	struct seen seen[TLSFIND_MAX_FILES];
	uint32_t nseen;
	uint32_t full_logged;
	struct tls_probed probed[TLSFIND_MAX_FILES];
	uint32_t nprobed;
	uint32_t seq;
};

struct tls_finder *tls_finder__new(uint64_t task_id)
{
	struct tls_finder *f = calloc(1, sizeof(*f));

	if (f)
		f->task_id = task_id;
	return f;
}

void tls_finder__free(struct tls_finder *f)
{
	free(f);
}

const char *tlsfind__lib_name(uint32_t lib)
{
	switch (lib) {
	case NET_TLS_OPENSSL:
		return "openssl";
	case NET_TLS_BORINGSSL:
		return "boringssl";
	case NET_TLS_GO:
		return "go";
	case NET_TLS_NODE:
		return "node";
	}
	return "none";
}

/*
 * The entry of (pid, dev, ino), made on first sight, in *ret; 1 when it was looked at for good
 * already, 0 when it is to be looked at, -ENOSPC when the table is full.
 */
static int mark_seen(struct tls_finder *f, int32_t pid, uint32_t dev, uint64_t ino,
		     struct seen **ret)
{
	for (uint32_t i = 0; i < f->nseen; i++)
		if (f->seen[i].pid == pid && f->seen[i].dev == dev && f->seen[i].ino == ino) {
			*ret = &f->seen[i];
			return f->seen[i].failed && f->seen[i].failed < OPEN_TRIES ? 0 : 1;
		}
	if (f->nseen >= TLSFIND_MAX_FILES)
		return -ENOSPC;
	f->seen[f->nseen] = (struct seen){ pid, dev, ino, 0 };
	*ret = &f->seen[f->nseen++];
	return 0;
}

static void look_at(struct tls_finder *f, const struct fd_opener *op, int pid, uint64_t start,
		    uint64_t end, const char *path, tls_found_fn found, void *ctx, int *ret_found,
		    int *ret_stop, struct seen *sn)
{
	struct msg_tls_attach m;
	const char *why = NULL;
	int fd, err;

	fd = op->open_mapped_file(op->ctx, pid, start, end);
	if (fd < 0) {
		/* Tried again at the next scans: a library being mapped may not be there yet. */
		if (++sn->failed >= OPEN_TRIES)
			log_warn("task %llu: TLS: %s of process %d could not be opened: %s; not "
				 "probed",
				 (unsigned long long)f->task_id, path, pid, strerror(-fd));
		return;
	}
	sn->failed = 0;
	memset(&m, 0, sizeof(m));
	/* Replaced on disk while mapped: the descriptor is of the copy the process runs. */
	if (strlen(path) > 10 && !strcmp(path + strlen(path) - 10, " (deleted)"))
		log_info("task %llu: TLS: %s of process %d was replaced since it was mapped: the "
			 "mapped copy is probed",
			 (unsigned long long)f->task_id, path, pid);
	err = tlsfind__probes(fd, path, &m, &why);
	if (err) {
		if (why)
			log_warn("task %llu: TLS: %s of process %d: %s; not probed",
				 (unsigned long long)f->task_id, path, pid, why);
		close(fd);
		return;
	}
	m.task_id = f->task_id;
	m.pid = pid;
	m.seq = ++f->seq;
	snprintf(m.path, sizeof(m.path), "%s", path);
	if (f->nprobed < TLSFIND_MAX_FILES) {
		struct tls_probed *p = &f->probed[f->nprobed++];

		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->lib = m.lib;
		p->nprobes = m.nprobes;
		p->seq = m.seq;
		p->err = 1;
		snprintf(p->path, sizeof(p->path), "%s", path);
	}
	if (found(ctx, &m, fd))
		*ret_stop = 1;
	else
		(*ret_found)++;
	close(fd);
}

int tls_finder__scan(struct tls_finder *f, const struct fd_opener *op, int pid, tls_found_fn found,
		     void *ctx)
{
	char exe[512] = "", *line = NULL;
	size_t cap = 0;
	int fd, nfound = 0, stop = 0;
	FILE *maps;

	fd = op->open_maps(op->ctx, pid);
	if (fd < 0)
		return fd;
	maps = fdopen(fd, "re");
	if (!maps) {
		close(fd);
		return -ENOMEM;
	}
	while (!stop && getline(&line, &cap, maps) > 0) {
		unsigned long long s, e, off;
		unsigned int maj, min;
		unsigned long ino;
		char perms[5];
		int pos = 0, seen;
		const char *path, *base;
		struct seen *sn = NULL;
		size_t len;

		if (sscanf(line, "%llx-%llx %4s %llx %x:%x %lu %n", &s, &e, perms, &off, &maj, &min,
			   &ino, &pos) < 7 ||
		    !pos || line[pos] != '/' || !ino)
			continue;
		path = line + pos;
		len = strcspn(path, "\n");
		line[pos + len] = '\0';
		/* The executable is the first file mapped (lowest address, PIE or not). */
		if (!exe[0] && len < sizeof(exe))
			memcpy(exe, path, len + 1);
		if (strcmp(perms, "r-xp"))
			continue;
		base = base_name(path);
		if (strcmp(path, exe) && strncmp(base, "libssl", 6) && strncmp(base, "libnode", 7))
			continue;
		seen = mark_seen(f, pid, maj << 20 | min, ino, &sn);
		if (seen == -ENOSPC && !f->full_logged) {
			f->full_logged = 1;
			log_warn("task %llu: TLS: %d files looked at; no more are",
				 (unsigned long long)f->task_id, TLSFIND_MAX_FILES);
		}
		if (seen)
			continue;
		look_at(f, op, pid, s, e, path, found, ctx, &nfound, &stop, sn);
	}
	free(line);
	fclose(maps);
	return nfound;
}

void tls_finder__result(struct tls_finder *f, const struct msg_tls_result *r)
{
	for (uint32_t i = 0; i < f->nprobed; i++) {
		struct tls_probed *p = &f->probed[i];

		if (p->seq != r->seq || p->pid != r->pid)
			continue;
		p->err = r->err;
		p->attached = r->attached;
		if (r->err)
			log_warn("task %llu: TLS: %s of process %d: the worker refused its probes: %s",
				 (unsigned long long)f->task_id, p->path, p->pid,
				 strerror(-r->err));
		else
			log_info("task %llu: TLS: %s (%s) of process %d: %u probes attached",
				 (unsigned long long)f->task_id, p->path, tlsfind__lib_name(p->lib),
				 p->pid, r->attached);
		return;
	}
}

const struct tls_probed *tls_finder__probed(const struct tls_finder *f, uint32_t *ret_n)
{
	*ret_n = f->nprobed;
	return f->probed;
}
