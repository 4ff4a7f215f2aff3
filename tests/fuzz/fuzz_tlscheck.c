// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a file a traced process maps and the TLS probes a shipper names in it, as
 * the worker checks them before it links them (worker/tlscheck.c tlscheck__probes: ELF and
 * program headers, PT_DYNAMIC, the dynamic symbol table through DT_GNU_HASH or DT_HASH, the
 * section headers and a Go function table, all read with pread from the descriptor, a memfd
 * here as the launcher's descriptor is a file).
 *
 * Input: two bytes that make the message, then the file. The message is the one a shipper
 * sends (tlsfind__probes on the same file) or, when it finds none, an SSL call's pair or a Go
 * Read and one RET at an offset byte 1 gives; bits 0-1 of byte 0 then change one probe (byte
 * 1 picks it): its offset moved by bits 2-7, its function changed, or the probe dropped.
 *
 * worker/tlscheck.c is compiled into this target (the fuzz build takes the shipper's sources,
 * not the worker's), with pread counted: besides sanitizer reports, it aborts on an errno that
 * worker/tlscheck.h does not list, on more bytes read than TLSCHECK_MAX_READ, and on probes
 * taken that break the rules on the file's bytes: an offset outside an executable segment's
 * bytes, a Go RET not on 0xc3, an SSL probe without its twin (a call site without its jump,
 * one not on a call, a jump not on a conditional jump), a Go RET without an entry
 * probe, a function whose name (with its terminator) the file does not hold.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/netrec.h"
#include "shipper/network/tlsfind.h"

#include "tests/fuzz/counted_pread.h"

#define pread counted_pread
#include "worker/elffile.c"
#include "worker/tlscheck.c"
#undef pread

static const char *fn_name(uint32_t fn)
{
	switch (fn) {
	case NET_TLS_FN_READ:
		return "SSL_read";
	case NET_TLS_FN_WRITE:
		return "SSL_write";
	case NET_TLS_FN_READ_EX:
		return "SSL_read_ex";
	case NET_TLS_FN_WRITE_EX:
		return "SSL_write_ex";
	case NET_TLS_FN_GO_READ:
		return "crypto/tls.(*Conn).Read";
	case NET_TLS_FN_GO_WRITE:
		return "crypto/tls.(*Conn).Write";
	case NET_TLS_FN_GO_HANDSHAKE:
		return "crypto/tls.(*Conn).handshakeContext";
	}
	return NULL;
}

/* Whether the file holds name and its terminator. */
static int holds(const uint8_t *data, size_t size, const char *name)
{
	return memmem(data, size, name, strlen(name) + 1) != NULL;
}

/* Aborts when m, taken by the check, breaks a rule on the file's bytes. */
static void check_taken(const uint8_t *data, size_t size, const struct msg_tls_attach *m)
{
	Elf64_Ehdr eh;

	/* Taken: the file holds its ELF and program headers. Copied: data is not aligned. */
	memcpy(&eh, data, sizeof(eh));
	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		uint32_t fn = p->cookie & 0xff;
		const char *name = fn_name(fn), *why = NULL;
		int inside = 0, twin = 0;

		for (size_t k = 0; k < eh.e_phnum && !inside; k++) {
			Elf64_Phdr ph;

			memcpy(&ph, data + eh.e_phoff + k * sizeof(ph), sizeof(ph));
			inside = ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
				 p->offset >= ph.p_offset &&
				 p->offset - ph.p_offset < ph.p_filesz && p->offset < size;
		}
		for (uint32_t j = 0; j < m->nprobes && !twin; j++) {
			uint32_t e = m->probes[j].cookie & 0xff;

			if (fn < NET_TLS_FN_GO_READ && (p->cookie >> 16))
				/* a call site and the jump after it, with the same function */
				twin = m->probes[j].cookie ==
					       (p->cookie ^ (NET_TLS_AT_SITE | NET_TLS_AT_AFTER)) &&
				       !m->probes[j].ret && !p->ret;
			else if (fn < NET_TLS_FN_GO_READ)
				twin = m->probes[j].offset == p->offset &&
				       m->probes[j].cookie == p->cookie &&
				       !m->probes[j].ret != !p->ret;
			else if (name)
				twin = 1;
			else if (fn == NET_TLS_FN_GO_RET)
				twin = e == NET_TLS_FN_GO_READ || e == NET_TLS_FN_GO_WRITE;
			else
				twin = e == NET_TLS_FN_GO_HANDSHAKE;
		}
		if (!inside)
			why = "an offset outside the executable segments";
		else if ((fn == NET_TLS_FN_GO_RET || fn == NET_TLS_FN_GO_HS_RET) &&
			 data[p->offset] != 0xc3)
			why = "a Go RET not on 0xc3";
		else if ((p->cookie >> 16) == NET_TLS_AT_SITE >> 16 && data[p->offset] != 0xe8)
			why = "a call-site probe not on a call";
		else if ((p->cookie >> 16) == NET_TLS_AT_AFTER >> 16 &&
			 !(data[p->offset] >= 0x70 && data[p->offset] <= 0x7f) &&
			 !(data[p->offset] == 0x0f && p->offset + 1 < size &&
			   data[p->offset + 1] >= 0x80 && data[p->offset + 1] <= 0x8f))
			why = "a jump probe not on a conditional jump";
		else if (!twin)
			why = "a probe without its twin or entry";
		else if (name && !holds(data, size, name))
			why = "a function the file does not name";
		if (why) {
			fprintf(stderr, "probe %u (cookie 0x%x, ret %u, offset %#llx) taken: %s\n",
				i, p->cookie, p->ret, (unsigned long long)p->offset, why);
			abort();
		}
	}
}

/* The message when the shipper finds none: an SSL call's pair, or a Go Read with one RET. */
static void default_msg(uint8_t b0, uint8_t b1, struct msg_tls_attach *m)
{
	uint64_t off = (uint64_t)b1 * 4;

	memset(m, 0, sizeof(*m));
	if (b0 & 0x80) {
		m->lib = NET_TLS_GO;
		m->probes[0] =
			(struct msg_tls_probe){ off, NET_TLS_COOKIE(NET_TLS_FN_GO_READ, NET_TLS_GO),
						0 };
		m->probes[1] =
			(struct msg_tls_probe){ off + (b0 & 0x3f),
						NET_TLS_COOKIE(NET_TLS_FN_GO_RET, NET_TLS_GO), 0 };
	} else {
		uint32_t fn = NET_TLS_FN_READ + (b0 >> 2 & 3);

		m->lib = NET_TLS_OPENSSL;
		m->probes[0] =
			(struct msg_tls_probe){ off, NET_TLS_COOKIE(fn, NET_TLS_OPENSSL), 0 };
		m->probes[1] =
			(struct msg_tls_probe){ off, NET_TLS_COOKIE(fn, NET_TLS_OPENSSL), 1 };
	}
	m->nprobes = 2;
}

/* Bits 0-1 of b0: 0 none; 1 probe b1 moved by bits 2-7 (signed); 2 its function; 3 dropped. */
static void change(uint8_t b0, uint8_t b1, struct msg_tls_attach *m)
{
	uint32_t i = b1 % m->nprobes, lib = m->lib;
	struct msg_tls_probe *p = &m->probes[i];

	switch (b0 & 3) {
	case 1:
		p->offset += (uint64_t)(int64_t)((int8_t)b0 >> 2);
		break;
	case 2:
		/* A function of the same family: the worker's caller refuses the others. */
		p->cookie = (uint32_t)NET_TLS_COOKIE(lib == NET_TLS_GO
							     ? NET_TLS_FN_GO_READ + (b0 >> 2) % 5
							     : NET_TLS_FN_READ + (b0 >> 2) % 4,
						     lib);
		break;
	case 3:
		if (m->nprobes > 1) {
			memmove(p, p + 1, (m->nprobes - i - 1) * sizeof(*p));
			m->nprobes--;
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct msg_tls_attach m;
	const uint8_t *file = data + 2;
	const char *why = NULL;
	size_t len;
	int err;

	if (size < 2)
		return 0;
	len = size - 2;
	if (fd < 0) {
		fd = memfd_create("fuzz_tlscheck", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, file, len, 0) != (ssize_t)len)
		abort();
	memset(&m, 0, sizeof(m));
	if (tlsfind__probes(fd, "/usr/lib/x86_64-linux-gnu/libssl.so.3", &m, &why))
		default_msg(data[0], data[1], &m);
	change(data[0], data[1], &m);
	read_bytes = 0;
	err = tlscheck__probes(fd, &m);
	if (read_bytes > TLSCHECK_MAX_READ) {
		fprintf(stderr, "%llu bytes read\n", (unsigned long long)read_bytes);
		abort();
	}
	switch (-err) {
	case 0:
		check_taken(file, len, &m);
		break;
	case ENOEXEC:
	case ERANGE:
	case EILSEQ:
	case EINVAL:
	case EFAULT:
	case E2BIG:
		break;
	default:
		fprintf(stderr, "tlscheck__probes: %d (%s)\n", err, strerror(-err));
		abort();
	}
	return 0;
}
