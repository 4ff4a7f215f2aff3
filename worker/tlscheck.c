// SPDX-License-Identifier: Apache-2.0
/*
 * The file is the target's code as the launcher opened it (OPEN_MAPPED_FILE), or any file the
 * shipper could read: its tables are as untrusted as its bytes, and every offset read from them
 * is checked against the file before it is read. What the check trusts is only that a file
 * names its own functions: whoever wrote the file wrote the code the target runs.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/netrec.h"
#include "common/tlssite.h"
#include "worker/elffile.h"
#include "worker/tlscheck.h"

/* Section headers read: a Go binary has about 25, node 40. */
#define MAX_SHDRS 256
/* Candidate table headers in an externally linked Go binary's .data.rel.ro, as the shipper. */
#define MAX_MERGED 16
/* Functions in a Go table (shipper/stacks/gopclntab.h GOPCLNTAB_MAX_FUNCS). */
#define GO_MAX_FUNCS (4u << 20)
/* Bytes of .data.rel.ro read at a time while looking for a Go table's header. */
#define SCAN_CHUNK (16u << 10)

/* A function defined at file offset *arg. */
static int func_at(struct elf_file *f, const Elf64_Sym *s, void *arg)
{
	return ELF64_ST_TYPE(s->st_info) == STT_FUNC && s->st_value &&
	       elf_file_offset(f, s->st_value, true) == *(const uint64_t *)arg;
}

/* Whether the dynamic symbol table defines the function name at file offset off: 1, 0, -errno. */
static int dynsym_has(struct elf_file *f, const struct elf_dyn *d, const char *name, uint64_t off)
{
	return elf_dynsym_find(f, d, name, func_at, &off);
}

static const char *const ssl_names[] = {
	[NET_TLS_FN_READ] = "SSL_read",
	[NET_TLS_FN_WRITE] = "SSL_write",
	[NET_TLS_FN_READ_EX] = "SSL_read_ex",
	[NET_TLS_FN_WRITE_EX] = "SSL_write_ex",
};

/* The file offset of a function named as wanted, into *arg. */
static int func_offset(struct elf_file *f, const Elf64_Sym *s, void *arg)
{
	uint64_t off;

	if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || !s->st_value)
		return 0;
	off = elf_file_offset(f, s->st_value, true);
	if (off == ELF_NONE)
		return 0;
	*(uint64_t *)arg = off;
	return 1;
}

/* The probe of m at offset off with cookie, or NULL. */
static const struct msg_tls_probe *probe_at(const struct msg_tls_attach *m, uint64_t off,
					    uint32_t cookie, int ret)
{
	for (uint32_t j = 0; j < m->nprobes; j++)
		if (m->probes[j].offset == off && m->probes[j].cookie == cookie &&
		    !m->probes[j].ret == !ret)
			return &m->probes[j];
	return NULL;
}

/*
 * A call-site probe p (common/tlssite.h): where this worker finds the call site of the function
 * its cookie names, from the function's own bytes, with its twin on the jump after it.
 */
static int check_site(struct elf_file *f, const struct elf_dyn *d, const struct msg_tls_attach *m,
		      const struct msg_tls_probe *p)
{
	uint32_t where = p->cookie & ~0xffffu, base = p->cookie & 0xffffu;
	uint8_t code[TLS_SITE_SCAN];
	struct tls_site site;
	uint64_t entry = 0;
	int r;

	r = elf_dynsym_find(f, d, ssl_names[p->cookie & 0xff], func_offset, &entry);
	if (r <= 0)
		return r ? r : -EFAULT;
	if ((r = elf_rd(f, code, sizeof(code), entry)))
		return r == -E2BIG ? r : -EFAULT;
	if (tls_site_find(code, sizeof(code), &site))
		return -EFAULT;
	if (p->offset != entry + (where == NET_TLS_AT_SITE ? site.call_off : site.after_off))
		return -EFAULT;
	/* Its twin: each jump's program pairs with its own call's. */
	if (!probe_at(m, entry + (where == NET_TLS_AT_SITE ? site.after_off : site.call_off),
		      base | (where == NET_TLS_AT_SITE ? NET_TLS_AT_AFTER : NET_TLS_AT_SITE), 0))
		return -EINVAL;
	return 0;
}

/*
 * An entry and a return probe each: the return program pairs with the thread's last entry and
 * reads as many bytes from its buffer as the call returned, so that a return of one function
 * paired with the entry of another (say SSL_write's 16 KiB with a 5-byte SSL_read) would read
 * past a buffer. With both probes on every function, each return follows its own entry. So
 * for the call sites of SSL_read and SSL_write: a probe on the call and one on the jump after
 * it, both where this worker finds them itself.
 */
static int check_ssl(struct elf_file *f, const struct msg_tls_attach *m)
{
	struct elf_dyn d;
	int err;

	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];

		if (!(p->cookie >> 16) && !probe_at(m, p->offset, p->cookie, !p->ret))
			return -EINVAL;
	}
	err = elf_load_dynamic(f, &d);
	if (err)
		return err;
	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		bool seen = false;
		int r;

		for (uint32_t j = 0; j < i && !seen; j++)
			seen = m->probes[j].offset == p->offset && m->probes[j].cookie == p->cookie;
		if (seen)
			continue;
		if (p->cookie >> 16) {
			if ((r = check_site(f, &d, m, p)))
				return r;
			continue;
		}
		r = dynsym_has(f, &d, ssl_names[p->cookie & 0xff], p->offset);
		if (r <= 0)
			return r ? r : -EFAULT;
	}
	return 0;
}

/* ---- Go: the runtime's function table ---- */

/* A Go 1.18+ table (runtime pcHeader, functab, _func; shipper/stacks/gopclntab.c reads them all). */
struct gotab {
	uint64_t off, len;		      /* in the file */
	uint64_t nfunc, text, names, functab; /* the header's, offsets from off */
};

static int go_header(struct elf_file *f, struct gotab *t)
{
	uint8_t h[8 + 8 * 8];
	int err;

	if (t->len < sizeof(h))
		return -EFAULT;
	if ((err = elf_rd(f, h, sizeof(h), t->off)))
		return err;
	/* Magic (1.18, 1.20), two zero bytes, pc quantum 1 (x86), 8-byte pointers. */
	if ((h[0] != 0xf0 && h[0] != 0xf1) || h[1] != 0xff || h[2] != 0xff || h[3] != 0xff ||
	    h[4] || h[5] || h[6] != 1 || h[7] != 8)
		return -EFAULT;
	/* nfunc, nfiles, textStart, funcnametab, cutab, filetab, pctab, pclntab. */
	t->nfunc = elf_rd64(h + 8);
	t->text = elf_rd64(h + 8 + 2 * 8);
	t->names = elf_rd64(h + 8 + 3 * 8);
	t->functab = elf_rd64(h + 8 + 7 * 8);
	if (!t->text || !t->nfunc || t->nfunc > GO_MAX_FUNCS || t->names >= t->len ||
	    t->functab > t->len || (2 * t->nfunc + 1) * 4 > t->len - t->functab)
		return -EFAULT;
	return 0;
}

/*
 * The function of t that holds vaddr v: its entry in *ret_entry; 1 when it is called name (or
 * name is NULL), 0 when it is not or no function holds v, or -errno.
 */
static int go_func(struct elf_file *f, const struct gotab *t, uint64_t v, const char *name,
		   uint64_t *ret_entry)
{
	uint64_t pc, lo = 0, hi = t->nfunc, fn;
	uint8_t b[8];
	uint32_t entry, end, nameoff;
	int err;

	if (v < t->text || v - t->text > UINT32_MAX)
		return 0;
	pc = v - t->text;
	/* The last entry at or below pc: the linker writes them in ascending order. */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if ((err = elf_rd(f, b, 4, t->off + t->functab + mid * 8)))
			return err;
		if (elf_rd32(b) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if ((err = elf_rd(f, b, 8, t->off + t->functab + lo * 8)))
		return err;
	entry = elf_rd32(b);
	fn = elf_rd32(b + 4);
	/* Entry nfunc is the end of the last function. */
	if ((err = elf_rd(f, b, 4, t->off + t->functab + (lo + 1) * 8)))
		return err;
	end = elf_rd32(b);
	if (pc < entry || pc >= end)
		return 0;
	/* _func, from the functab's start: entryOff (uint32), nameOff (int32). */
	fn += t->functab;
	if (fn > t->len || t->len - fn < 8)
		return 0;
	if ((err = elf_rd(f, b, 8, t->off + fn)))
		return err;
	nameoff = elf_rd32(b + 4);
	if (elf_rd32(b) != entry || (nameoff & 0x80000000u))
		return 0;
	*ret_entry = t->text + entry;
	if (!name)
		return 1;
	if (t->names + nameoff > t->len || strlen(name) + 1 > t->len - t->names - nameoff)
		return 0;
	return elf_name_is(f, t->off + t->names + nameoff, name);
}

/* Each Go probe of m (vaddr: where each lies) against table t: 0 or -errno. */
static int go_check(struct elf_file *f, struct gotab *t, const struct msg_tls_attach *m,
		    const uint64_t *vaddr)
{
	int err = go_header(f, t);

	for (uint32_t i = 0; !err && i < m->nprobes; i++) {
		uint32_t fn = m->probes[i].cookie & 0xff;
		const char *name = fn == NET_TLS_FN_GO_READ    ? "crypto/tls.(*Conn).Read"
				   : fn == NET_TLS_FN_GO_WRITE ? "crypto/tls.(*Conn).Write"
				   : fn == NET_TLS_FN_GO_HANDSHAKE
					   ? "crypto/tls.(*Conn).handshakeContext"
					   : NULL;
		uint64_t entry = 0;
		bool probed = false;
		int r = go_func(f, t, vaddr[i], name, &entry);

		if (r <= 0)
			return r ? r : -EFAULT;
		if (name) {
			if (entry != vaddr[i])
				err = -EFAULT;
			continue;
		}
		/*
		 * A RET: of a function whose entry is probed too, as a Read or Write (a RET) or as
		 * handshakeContext (a handshake's RET), which that probe's own check names. The
		 * program pairs a RET with the goroutine's last entry and reads as many bytes as it
		 * returns: a Write's RET after a Read's entry could read past the Read's buffer.
		 */
		for (uint32_t j = 0; j < m->nprobes && !probed; j++) {
			uint32_t e = m->probes[j].cookie & 0xff;

			probed = vaddr[j] == entry &&
				 (fn == NET_TLS_FN_GO_RET
					  ? e == NET_TLS_FN_GO_READ || e == NET_TLS_FN_GO_WRITE
					  : e == NET_TLS_FN_GO_HANDSHAKE);
		}
		if (!probed)
			err = -EFAULT;
	}
	return err;
}

/*
 * The file's Go tables, up to max: the section the Go linker names (.gopclntab, or
 * .data.rel.ro.gopclntab in a PIE), else the headers found in .data.rel.ro, where an external
 * linker merges it. The count, or -errno.
 */
static int go_tables(struct elf_file *f, struct gotab *ret, int max)
{
	Elf64_Shdr sh[MAX_SHDRS];
	const Elf64_Shdr *str, *relro = NULL;
	uint64_t nsh = f->eh.e_shnum;
	uint8_t buf[SCAN_CHUNK + 8];
	int err, n = 0;

	if (f->eh.e_shentsize != sizeof(Elf64_Shdr) || !nsh || nsh > MAX_SHDRS ||
	    f->eh.e_shstrndx >= nsh)
		return 0;
	if ((err = elf_rd(f, sh, nsh * sizeof(sh[0]), f->eh.e_shoff)))
		return err == -EFAULT ? 0 : err;
	str = &sh[f->eh.e_shstrndx];
	if (str->sh_offset > f->size || str->sh_size > f->size - str->sh_offset)
		return 0;
	for (uint64_t i = 0; i < nsh; i++) {
		static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab",
						     ".data.rel.ro" };
		const Elf64_Shdr *s = &sh[i];
		char name[24];
		uint64_t len = str->sh_size - s->sh_name;
		int which = -1;

		if (s->sh_type == SHT_NOBITS || s->sh_offset > f->size ||
		    s->sh_size > f->size - s->sh_offset || s->sh_name >= str->sh_size)
			continue;
		if (len > sizeof(name))
			len = sizeof(name);
		if ((err = elf_rd(f, name, len, str->sh_offset + s->sh_name)))
			return err;
		for (int k = 0; k < 3 && which < 0; k++)
			if (strlen(names[k]) + 1 <= len &&
			    !memcmp(name, names[k], strlen(names[k]) + 1))
				which = k;
		if (which == 2) {
			relro = s;
		} else if (which >= 0) {
			ret[0] = (struct gotab){ .off = s->sh_offset, .len = s->sh_size };
			return 1;
		}
	}
	if (!relro)
		return 0;
	for (uint64_t at = 0; at + 8 <= relro->sh_size && n < max; at += SCAN_CHUNK) {
		uint64_t len = relro->sh_size - at < sizeof(buf) ? relro->sh_size - at
								 : sizeof(buf);

		if ((err = elf_rd(f, buf, len, relro->sh_offset + at)))
			return err == -EFAULT ? n : err;
		for (uint64_t k = 0; k < SCAN_CHUNK && k + 8 <= len && n < max; k += 4)
			if ((buf[k] == 0xf0 || buf[k] == 0xf1) && buf[k + 1] == 0xff &&
			    buf[k + 2] == 0xff && buf[k + 3] == 0xff && !buf[k + 4] && !buf[k + 5])
				ret[n++] = (struct gotab){ .off = relro->sh_offset + at + k,
							   .len = relro->sh_size - at - k };
	}
	return n;
}

static int check_go(struct elf_file *f, const struct msg_tls_attach *m, const uint64_t *vaddr)
{
	struct gotab t[MAX_MERGED];
	int n = go_tables(f, t, MAX_MERGED), err = -EFAULT;

	if (n < 0)
		return n;
	/* Candidates in .data.rel.ro: the first one that names every probe. */
	for (int i = 0; i < n && err && err != -E2BIG; i++)
		err = go_check(f, &t[i], m, vaddr);
	return err;
}

int tlscheck__probes(int fd, const struct msg_tls_attach *m)
{
	uint64_t vaddr[MSG_TLS_MAX_PROBES];
	uint32_t go = 0;
	struct elf_file f;
	int err;

	if (!m->nprobes || m->nprobes > MSG_TLS_MAX_PROBES)
		return -EINVAL;
	err = elf_file__open(&f, fd, TLSCHECK_MAX_READ);
	if (err)
		return err;
	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		const Elf64_Phdr *ph = elf_code_at(&f, p->offset);
		uint32_t fn = p->cookie & 0xff;

		if (!ph)
			return -ERANGE;
		vaddr[i] = ph->p_vaddr + (p->offset - ph->p_offset);
		if (fn == NET_TLS_FN_GO_RET || fn == NET_TLS_FN_GO_HS_RET) {
			uint8_t b = 0;

			if ((err = elf_rd(&f, &b, 1, p->offset)))
				return err == -E2BIG ? err : -EILSEQ;
			if (b != 0xc3)
				return -EILSEQ;
		}
		if (!fn || fn >= NET_TLS_FN_MAX)
			return -EINVAL;
		go += fn >= NET_TLS_FN_GO_READ;
	}
	if (go && go != m->nprobes)
		return -EINVAL;
	return go ? check_go(&f, m, vaddr) : check_ssl(&f, m);
}
