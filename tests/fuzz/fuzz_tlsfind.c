// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a file a traced process maps, as shipper/network/tlsfind.c reads it to find TLS
 * calls to probe (tlsfind__probes: ELF headers and symbol tables through libelf, .gopclntab,
 * Capstone over the Go functions it names). The input is handed over as a file, a memfd, as
 * the launcher hands the shipper a descriptor.
 *
 * Besides sanitizer reports, it aborts on broken contracts: output written on failure, a
 * failure other than "no TLS" or no memory without a reason, probes of another library than
 * the one announced, and a probe the worker would refuse (the segment and 0xc3 rules of
 * worker/tlscheck.c tlscheck__probes: each offset inside an executable PT_LOAD segment's bytes
 * in the file, each Go RET probe on a 0xc3 byte), which loses the whole library at attach time. A file whose ELF header the
 * worker does not take (32-bit, odd e_phentsize, more than 64 program headers) is refused by
 * it whole, with its own error: not checked further here.
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

/*
 * The worker's segment and 0xc3 rules (worker/tlscheck.c tlscheck__probes), on the bytes of
 * the file: NULL when it takes the probes or refuses the file's header, else which probe it refuses.
 */
static const char *worker_refuses(const uint8_t *data, size_t size, const struct msg_tls_attach *m)
{
	Elf64_Phdr ph[64];
	Elf64_Ehdr eh;
	size_t nph;

	if (size < sizeof(eh))
		return NULL;
	memcpy(&eh, data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum || eh.e_phnum > 64)
		return NULL;
	nph = eh.e_phnum;
	if (eh.e_phoff > size || nph * sizeof(ph[0]) > size - eh.e_phoff)
		return NULL;
	memcpy(ph, data + eh.e_phoff, nph * sizeof(ph[0]));
	for (uint32_t i = 0; i < m->nprobes; i++) {
		uint64_t off = m->probes[i].offset;
		uint32_t fn = m->probes[i].cookie & 0xff;
		int inside = 0;

		for (size_t k = 0; k < nph && !inside; k++)
			inside = ph[k].p_type == PT_LOAD && (ph[k].p_flags & PF_X) &&
				 off >= ph[k].p_offset && off - ph[k].p_offset < ph[k].p_filesz &&
				 off < size;
		if (!inside)
			return "an offset outside the executable segments";
		if ((fn == NET_TLS_FN_GO_RET || fn == NET_TLS_FN_GO_HS_RET) && data[off] != 0xc3)
			return "a Go RET probe not on 0xc3";
	}
	return NULL;
}

static void check_probes(const uint8_t *data, size_t size, const struct msg_tls_attach *m)
{
	const char *refused;
	int go = m->lib == NET_TLS_GO;

	if (m->lib == NET_TLS_NONE || m->lib >= NET_TLS_MAX || !m->nprobes ||
	    m->nprobes > MSG_TLS_MAX_PROBES) {
		fprintf(stderr, "lib %u, %u probes\n", m->lib, m->nprobes);
		abort();
	}
	for (uint32_t i = 0; i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		uint32_t fn = p->cookie & 0xff, where = p->cookie >> 16;

		/* The worker's rules (worker/netcap.c): a call site (NET_TLS_AT_SITE, _AT_AFTER)
		 * only of SSL_read or SSL_write, never with a return probe. */
		if (((p->cookie >> 8) & 0xff) != m->lib || p->ret > 1 || (go && p->ret) ||
		    where > NET_TLS_AT_AFTER >> 16 ||
		    (where &&
		     (go || p->ret || (fn != NET_TLS_FN_READ && fn != NET_TLS_FN_WRITE))) ||
		    (go ? fn < NET_TLS_FN_GO_READ || fn >= NET_TLS_FN_MAX
			: fn < NET_TLS_FN_READ || fn > NET_TLS_FN_WRITE_EX)) {
			fprintf(stderr, "lib %u: probe %u: cookie 0x%x ret %u\n", m->lib, i,
				p->cookie, p->ret);
			abort();
		}
	}
	refused = worker_refuses(data, size, m);
	if (refused) {
		fprintf(stderr, "lib %u, %u probes the worker would refuse: %s\n", m->lib,
			m->nprobes, refused);
		abort();
	}
}

/* tlsfind__probes on fd as path: 0 or the -errno, the contracts of its header checked. */
static int probe(int fd, const char *path, const uint8_t *data, size_t size,
		 struct msg_tls_attach *ret)
{
	static const char marker[] = "untouched";
	const char *why = NULL;
	struct msg_tls_attach before;
	int err;

	memset(ret, 0xa5, sizeof(*ret));
	snprintf(ret->path, sizeof(ret->path), "%s", marker);
	before = *ret;
	err = tlsfind__probes(fd, path, ret, &why);
	if (err > 0)
		abort();
	if (err) {
		if (memcmp(ret, &before, sizeof(before))) {
			fprintf(stderr, "%s: output written on failure (%s)\n", path,
				strerror(-err));
			abort();
		}
		if (err != -ENOENT && err != -ENOMEM && (!why || !why[0])) {
			fprintf(stderr, "%s: %s without a reason\n", path, strerror(-err));
			abort();
		}
		return err;
	}
	/* ret->path, pid and task_id are the caller's. */
	if (strcmp(ret->path, marker) || ret->pid != before.pid || ret->task_id != before.task_id)
		abort();
	check_probes(data, size, ret);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct msg_tls_attach a, b;
	size_t done = 0;

	/* One memfd for the run, rewritten for each input. */
	if (fd < 0) {
		fd = memfd_create("fuzz_tlsfind", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0))
		abort();
	while (done < size) {
		ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	if (probe(fd, "/usr/lib/x86_64-linux-gnu/libssl.so.3", data, size, &a))
		return 0;
	/* The same file as node: the same probes, of node's OpenSSL (Go's stay Go's). */
	if (probe(fd, "/usr/bin/node", data, size, &b))
		abort();
	if (a.nprobes != b.nprobes ||
	    b.lib != (a.lib == NET_TLS_GO ? (uint32_t)NET_TLS_GO : (uint32_t)NET_TLS_NODE))
		abort();
	for (uint32_t i = 0; i < a.nprobes; i++)
		if (a.probes[i].offset != b.probes[i].offset ||
		    (a.probes[i].cookie & 0xff) != (b.probes[i].cookie & 0xff) ||
		    a.probes[i].ret != b.probes[i].ret)
			abort();
	return 0;
}
