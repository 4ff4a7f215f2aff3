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
#include "worker/tlscheck.h"

#define MAX_PHDRS 64
/* Dynamic entries read: libssl has about 30, node 35; the tags wanted come first. */
#define MAX_DYN 512
/* Symbols compared along one hash chain (libssl's longest holds 5, node's about 20). */
#define MAX_CHAIN 4096
/* Section headers read: a Go binary has about 25, node 40. */
#define MAX_SHDRS 256
/* Candidate table headers in an externally linked Go binary's .data.rel.ro, as the shipper. */
#define MAX_MERGED 16
/* Functions in a Go table (shipper/stacks/gopclntab.h GOPCLNTAB_MAX_FUNCS). */
#define GO_MAX_FUNCS (4u << 20)
/* Bytes of .data.rel.ro read at a time while looking for a Go table's header. */
#define SCAN_CHUNK (16u << 10)
#define NONE UINT64_MAX

struct file {
	int fd;
	uint64_t size;
	uint64_t left; /* bytes it may still read */
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHDRS];
	size_t nph;
};

/* n bytes at file offset off into buf: 0, -EFAULT when the file has them not, or -E2BIG. */
static int rd(struct file *f, void *buf, uint64_t n, uint64_t off)
{
	if (n > f->left)
		return -E2BIG;
	f->left -= n;
	if (off > f->size || n > f->size - off || pread(f->fd, buf, n, (off_t)off) != (ssize_t)n)
		return -EFAULT;
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int load_headers(struct file *f, int fd)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -EBADF;
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->size = (uint64_t)st.st_size;
	f->left = TLSCHECK_MAX_READ;
	if (rd(f, &f->eh, sizeof(f->eh), 0) || memcmp(f->eh.e_ident, ELFMAG, SELFMAG) ||
	    f->eh.e_ident[EI_CLASS] != ELFCLASS64 || f->eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !f->eh.e_phnum || f->eh.e_phnum > MAX_PHDRS)
		return -ENOEXEC;
	f->nph = f->eh.e_phnum;
	if (rd(f, f->ph, f->nph * sizeof(f->ph[0]), f->eh.e_phoff))
		return -ENOEXEC;
	return 0;
}

/* The executable segment whose bytes in the file hold offset off, or NULL. */
static const Elf64_Phdr *code_at(const struct file *f, uint64_t off)
{
	for (size_t k = 0; k < f->nph; k++) {
		const Elf64_Phdr *p = &f->ph[k];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && off >= p->p_offset &&
		    off - p->p_offset < p->p_filesz && off < f->size)
			return p;
	}
	return NULL;
}

/* The file offset of vaddr in the bytes of a loaded segment (an executable one: code), or NONE. */
static uint64_t file_offset(const struct file *f, uint64_t vaddr, bool code)
{
	for (size_t k = 0; k < f->nph; k++) {
		const Elf64_Phdr *p = &f->ph[k];

		if (p->p_type == PT_LOAD && (!code || (p->p_flags & PF_X)) && vaddr >= p->p_vaddr &&
		    vaddr - p->p_vaddr < p->p_filesz && p->p_offset <= f->size &&
		    vaddr - p->p_vaddr < f->size - p->p_offset)
			return vaddr - p->p_vaddr + p->p_offset;
	}
	return NONE;
}

/* Whether the bytes at off are the string name and its terminator: 1, 0 or -errno. */
static int name_is(struct file *f, uint64_t off, const char *name)
{
	char buf[64];
	size_t n = strlen(name) + 1;
	int err;

	if (n > sizeof(buf))
		return 0;
	err = rd(f, buf, n, off);
	if (err)
		return err == -EFAULT ? 0 : err;
	return !memcmp(buf, name, n);
}

/* ---- C libraries: the dynamic symbol table ---- */

struct dyn {
	uint64_t symtab, strtab, strsz, gnu_hash, hash; /* file offsets, NONE when absent */
};

/* The tables PT_DYNAMIC names, as file offsets. 0, or -EFAULT when there are none. */
static int load_dynamic(struct file *f, struct dyn *ret)
{
	uint64_t v[5] = { NONE, NONE, NONE, NONE, NONE }; /* symtab, strtab, strsz, gnu, hash */
	const Elf64_Phdr *dp = NULL;
	bool end = false;
	int err;

	for (size_t k = 0; k < f->nph && !dp; k++)
		if (f->ph[k].p_type == PT_DYNAMIC)
			dp = &f->ph[k];
	if (!dp || dp->p_offset > f->size || dp->p_filesz > f->size - dp->p_offset)
		return -EFAULT;
	for (uint64_t i = 0; !end && i < MAX_DYN && i < dp->p_filesz / sizeof(Elf64_Dyn);) {
		Elf64_Dyn d[32];
		uint64_t n = dp->p_filesz / sizeof(Elf64_Dyn) - i;

		if (n > 32)
			n = 32;
		err = rd(f, d, n * sizeof(d[0]), dp->p_offset + i * sizeof(d[0]));
		if (err)
			return err;
		for (uint64_t k = 0; k < n && !end; k++) {
			switch (d[k].d_tag) {
			case DT_NULL:
				end = true;
				break;
			case DT_SYMTAB:
				v[0] = d[k].d_un.d_ptr;
				break;
			case DT_STRTAB:
				v[1] = d[k].d_un.d_ptr;
				break;
			case DT_STRSZ:
				v[2] = d[k].d_un.d_val;
				break;
			case DT_GNU_HASH:
				v[3] = d[k].d_un.d_ptr;
				break;
			case DT_HASH:
				v[4] = d[k].d_un.d_ptr;
				break;
			case DT_SYMENT:
				if (d[k].d_un.d_val != sizeof(Elf64_Sym))
					return -EFAULT;
				break;
			}
		}
		i += n;
	}
	ret->symtab = v[0] == NONE ? NONE : file_offset(f, v[0], false);
	ret->strtab = v[1] == NONE ? NONE : file_offset(f, v[1], false);
	ret->strsz = v[2];
	ret->gnu_hash = v[3] == NONE ? NONE : file_offset(f, v[3], false);
	ret->hash = v[4] == NONE ? NONE : file_offset(f, v[4], false);
	if (ret->symtab == NONE || ret->strtab == NONE || ret->strsz == NONE ||
	    (ret->gnu_hash == NONE && ret->hash == NONE))
		return -EFAULT;
	return 0;
}

/* Whether dynamic symbol i is a function called name, defined at file offset off: 1, 0, -errno. */
static int sym_is(struct file *f, const struct dyn *d, uint64_t i, const char *name, uint64_t off)
{
	Elf64_Sym s;
	int err;

	/* i is a 32-bit index: no overflow. */
	err = rd(f, &s, sizeof(s), d->symtab + i * sizeof(s));
	if (err)
		return err == -EFAULT ? 0 : err;
	if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || !s.st_value ||
	    s.st_name >= d->strsz || file_offset(f, s.st_value, true) != off)
		return 0;
	if (strlen(name) + 1 > d->strsz - s.st_name)
		return 0;
	return name_is(f, d->strtab + s.st_name, name);
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0, g;

	for (; *s; s++) {
		h = (h << 4) + (uint8_t)*s;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/*
 * Whether the file's dynamic symbol table, looked up by name as ld.so does (DT_GNU_HASH when
 * there is one, else DT_HASH), defines the function name at file offset off: 1, 0 or -errno.
 */
static int dynsym_has(struct file *f, const struct dyn *d, const char *name, uint64_t off)
{
	uint8_t b[16];
	uint32_t h, i;
	int err, r;

	if (d->gnu_hash != NONE) {
		uint64_t buckets, chains;
		uint32_t nbuckets, symoff, nbloom;

		h = gnu_hash(name);
		if ((err = rd(f, b, 16, d->gnu_hash)))
			return err == -EFAULT ? 0 : err;
		nbuckets = rd32(b);
		symoff = rd32(b + 4);
		nbloom = rd32(b + 8);
		if (!nbuckets)
			return 0;
		/* The bloom filter is skipped: it only saves a look at the chain. */
		buckets = d->gnu_hash + 16 + (uint64_t)nbloom * 8;
		chains = buckets + (uint64_t)nbuckets * 4;
		if ((err = rd(f, b, 4, buckets + (uint64_t)(h % nbuckets) * 4)))
			return err == -EFAULT ? 0 : err;
		i = rd32(b);
		if (!i || i < symoff)
			return 0;
		for (uint32_t n = 0; n < MAX_CHAIN; n++, i++) {
			uint32_t c;

			if ((err = rd(f, b, 4, chains + (uint64_t)(i - symoff) * 4)))
				return err == -EFAULT ? 0 : err;
			c = rd32(b);
			if ((c | 1) == (h | 1) && (r = sym_is(f, d, i, name, off)))
				return r;
			if ((c & 1) || i == UINT32_MAX)
				break;
		}
		return 0;
	}
	{
		uint32_t nbucket, nchain;

		h = sysv_hash(name);
		if ((err = rd(f, b, 8, d->hash)))
			return err == -EFAULT ? 0 : err;
		nbucket = rd32(b);
		nchain = rd32(b + 4);
		if (!nbucket)
			return 0;
		if ((err = rd(f, b, 4, d->hash + 8 + (uint64_t)(h % nbucket) * 4)))
			return err == -EFAULT ? 0 : err;
		i = rd32(b);
		for (uint32_t n = 0; i != STN_UNDEF && i < nchain && n < MAX_CHAIN; n++) {
			if ((r = sym_is(f, d, i, name, off)))
				return r;
			if ((err = rd(f, b, 4, d->hash + 8 + ((uint64_t)nbucket + i) * 4)))
				return err == -EFAULT ? 0 : err;
			i = rd32(b);
		}
		return 0;
	}
}

static const char *const ssl_names[] = {
	[NET_TLS_FN_READ] = "SSL_read",
	[NET_TLS_FN_WRITE] = "SSL_write",
	[NET_TLS_FN_READ_EX] = "SSL_read_ex",
	[NET_TLS_FN_WRITE_EX] = "SSL_write_ex",
};

/*
 * An entry and a return probe each: the return program pairs with the thread's last entry and
 * reads as many bytes from its buffer as the call returned, so that a return of one function
 * paired with the entry of another (say SSL_write's 16 KiB with a 5-byte SSL_read) would read
 * past a buffer. With both probes on every function, each return follows its own entry.
 */
static int check_ssl(struct file *f, const struct msg_tls_attach *m)
{
	struct dyn d;
	int err;

	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		bool twin = false;

		for (uint32_t j = 0; j < m->nprobes && !twin; j++)
			twin = m->probes[j].offset == p->offset &&
			       m->probes[j].cookie == p->cookie && !m->probes[j].ret != !p->ret;
		if (!twin)
			return -EINVAL;
	}
	err = load_dynamic(f, &d);
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

static int go_header(struct file *f, struct gotab *t)
{
	uint8_t h[8 + 8 * 8];
	int err;

	if (t->len < sizeof(h))
		return -EFAULT;
	if ((err = rd(f, h, sizeof(h), t->off)))
		return err;
	/* Magic (1.18, 1.20), two zero bytes, pc quantum 1 (x86), 8-byte pointers. */
	if ((h[0] != 0xf0 && h[0] != 0xf1) || h[1] != 0xff || h[2] != 0xff || h[3] != 0xff ||
	    h[4] || h[5] || h[6] != 1 || h[7] != 8)
		return -EFAULT;
	/* nfunc, nfiles, textStart, funcnametab, cutab, filetab, pctab, pclntab. */
	t->nfunc = rd64(h + 8);
	t->text = rd64(h + 8 + 2 * 8);
	t->names = rd64(h + 8 + 3 * 8);
	t->functab = rd64(h + 8 + 7 * 8);
	if (!t->text || !t->nfunc || t->nfunc > GO_MAX_FUNCS || t->names >= t->len ||
	    t->functab > t->len || (2 * t->nfunc + 1) * 4 > t->len - t->functab)
		return -EFAULT;
	return 0;
}

/*
 * The function of t that holds vaddr v: its entry in *ret_entry; 1 when it is called name (or
 * name is NULL), 0 when it is not or no function holds v, or -errno.
 */
static int go_func(struct file *f, const struct gotab *t, uint64_t v, const char *name,
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

		if ((err = rd(f, b, 4, t->off + t->functab + mid * 8)))
			return err;
		if (rd32(b) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if ((err = rd(f, b, 8, t->off + t->functab + lo * 8)))
		return err;
	entry = rd32(b);
	fn = rd32(b + 4);
	/* Entry nfunc is the end of the last function. */
	if ((err = rd(f, b, 4, t->off + t->functab + (lo + 1) * 8)))
		return err;
	end = rd32(b);
	if (pc < entry || pc >= end)
		return 0;
	/* _func, from the functab's start: entryOff (uint32), nameOff (int32). */
	fn += t->functab;
	if (fn > t->len || t->len - fn < 8)
		return 0;
	if ((err = rd(f, b, 8, t->off + fn)))
		return err;
	nameoff = rd32(b + 4);
	if (rd32(b) != entry || (nameoff & 0x80000000u))
		return 0;
	*ret_entry = t->text + entry;
	if (!name)
		return 1;
	if (t->names + nameoff > t->len || strlen(name) + 1 > t->len - t->names - nameoff)
		return 0;
	return name_is(f, t->off + t->names + nameoff, name);
}

/* Each Go probe of m (vaddr: where each lies) against table t: 0 or -errno. */
static int go_check(struct file *f, struct gotab *t, const struct msg_tls_attach *m,
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
static int go_tables(struct file *f, struct gotab *ret, int max)
{
	Elf64_Shdr sh[MAX_SHDRS];
	const Elf64_Shdr *str, *relro = NULL;
	uint64_t nsh = f->eh.e_shnum;
	uint8_t buf[SCAN_CHUNK + 8];
	int err, n = 0;

	if (f->eh.e_shentsize != sizeof(Elf64_Shdr) || !nsh || nsh > MAX_SHDRS ||
	    f->eh.e_shstrndx >= nsh)
		return 0;
	if ((err = rd(f, sh, nsh * sizeof(sh[0]), f->eh.e_shoff)))
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
		if ((err = rd(f, name, len, str->sh_offset + s->sh_name)))
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

		if ((err = rd(f, buf, len, relro->sh_offset + at)))
			return err == -EFAULT ? n : err;
		for (uint64_t k = 0; k < SCAN_CHUNK && k + 8 <= len && n < max; k += 4)
			if ((buf[k] == 0xf0 || buf[k] == 0xf1) && buf[k + 1] == 0xff &&
			    buf[k + 2] == 0xff && buf[k + 3] == 0xff && !buf[k + 4] && !buf[k + 5])
				ret[n++] = (struct gotab){ .off = relro->sh_offset + at + k,
							   .len = relro->sh_size - at - k };
	}
	return n;
}

static int check_go(struct file *f, const struct msg_tls_attach *m, const uint64_t *vaddr)
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
	struct file f;
	int err;

	if (!m->nprobes || m->nprobes > MSG_TLS_MAX_PROBES)
		return -EINVAL;
	err = load_headers(&f, fd);
	if (err)
		return err;
	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		const Elf64_Phdr *ph = code_at(&f, p->offset);
		uint32_t fn = p->cookie & 0xff;

		if (!ph)
			return -ERANGE;
		vaddr[i] = ph->p_vaddr + (p->offset - ph->p_offset);
		if (fn == NET_TLS_FN_GO_RET || fn == NET_TLS_FN_GO_HS_RET) {
			uint8_t b = 0;

			if ((err = rd(&f, &b, 1, p->offset)))
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
