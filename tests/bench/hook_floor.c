// SPDX-License-Identifier: Apache-2.0
/*
 * hook_floor SECONDS: attaches tests/bench/hook_floor.bpf.c (empty programs on the NETWORK
 * capture's default tracepoints), prints "attached", and holds them for SECONDS or until
 * SIGTERM. Root only; for scripts/bench_network.sh.
 *
 * hook_floor SECONDS PID LIBRARY [entry]: the empty TLS programs instead, where the worker
 * attaches its own (uprobe_multi links in process PID only) on SSL_read, SSL_write,
 * SSL_read_ex and SSL_write_ex of LIBRARY (the path PID maps): SSL_read's and SSL_write's on
 * the call of their _ex twin and the jump after it where common/tlssite.h finds them, the
 * others (all four with "entry") at the entry with a return probe. For
 * scripts/bench_network_tls.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/tlssite.h"
#include "hook_floor.skel.h"

/* libbpf 1.1 (Debian 12) predates uprobe_multi: worker/netcap.c's values (Linux 6.6 UAPI). */
#define FLOOR_BPF_TRACE_UPROBE_MULTI 48
#define FLOOR_BPF_F_UPROBE_MULTI_RETURN 1u

static const char *const tls_syms[] = { "SSL_read", "SSL_write", "SSL_read_ex", "SSL_write_ex" };
#define NSYMS (sizeof(tls_syms) / sizeof(tls_syms[0]))

static void on_term(int sig)
{
	(void)sig;
}

/* The file offsets of tls_syms in path's .dynsym, in ret_offs. 0 or -errno. */
static int tls_offsets(const char *path, uint64_t ret_offs[NSYMS])
{
	uint64_t offs[NSYMS] = { 0 };
	Elf_Scn *scn = NULL;
	size_t nph, found = 0;
	Elf *elf = NULL;
	int fd, err = -ENOENT;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &nph))
		goto cleanup;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value || !(name = elf_strptr(elf, sh.sh_link, s.st_name)))
				continue;
			for (size_t k = 0; k < NSYMS; k++) {
				if (offs[k] || strcmp(name, tls_syms[k]))
					continue;
				for (size_t p = 0; p < nph; p++) {
					GElf_Phdr ph;

					if (gelf_getphdr(elf, (int)p, &ph) &&
					    ph.p_type == PT_LOAD && s.st_value >= ph.p_vaddr &&
					    s.st_value < ph.p_vaddr + ph.p_filesz) {
						offs[k] = s.st_value - ph.p_vaddr + ph.p_offset;
						found++;
						break;
					}
				}
			}
		}
	}
	if (found == NSYMS) {
		memcpy(ret_offs, offs, sizeof(offs));
		err = 0;
	}
cleanup:
	elf_end(elf);
	close(fd);
	return err;
}

/* One uprobe_multi link of prog on offs of path, in process pid only: its fd or -errno. */
static int link_uprobes(int prog_fd, const char *path, int pid, const uint64_t *offs, uint32_t cnt,
			uint32_t flags)
{
	/* union bpf_attr's link_create, as far as uprobe_multi goes. */
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, um_flags, pid, pad;
	} attr;
	long rc;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = FLOOR_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offs;
	attr.cnt = cnt;
	attr.um_flags = flags;
	attr.pid = (uint32_t)pid;
	rc = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return rc < 0 ? -errno : (int)rc;
}

/*
 * Where the probes go: entries (and call sites) in ret_enter, returns in ret_ret, jumps after
 * call sites in ret_after; their counts in n[3].
 */
static void placements(const char *path, const uint64_t offs[NSYMS], int entry_only,
		       uint64_t ret_enter[NSYMS], uint64_t ret_ret[NSYMS],
		       uint64_t ret_after[NSYMS], uint32_t n[3])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	n[0] = n[1] = n[2] = 0;
	for (size_t k = 0; k < NSYMS; k++) {
		uint8_t code[TLS_SITE_SCAN];
		struct tls_site site;

		if (!entry_only && k < 2 && fd >= 0 &&
		    pread(fd, code, sizeof(code), (off_t)offs[k]) == (ssize_t)sizeof(code) &&
		    !tls_site_find(code, sizeof(code), &site)) {
			ret_enter[n[0]++] = offs[k] + site.call_off;
			ret_after[n[2]++] = offs[k] + site.after_off;
			continue;
		}
		ret_enter[n[0]++] = offs[k];
		ret_ret[n[1]++] = offs[k];
	}
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	struct hook_floor_bpf *obj;
	int seconds = argc > 1 ? atoi(argv[1]) : 0, tls = argc == 4 || argc == 5, pid = 0, err = 0;
	uint64_t offs[NSYMS], enter[NSYMS], ret[NSYMS], after[NSYMS];
	uint32_t n[3] = { 0 };

	if (seconds <= 0 || (argc != 2 && !tls) || (tls && (pid = atoi(argv[2])) <= 0) ||
	    (argc == 5 && strcmp(argv[4], "entry"))) {
		fprintf(stderr, "usage: hook_floor SECONDS [PID LIBRARY [entry]]\n");
		return 2;
	}
	if (tls && (err = tls_offsets(argv[3], offs))) {
		fprintf(stderr, "hook_floor: %s: no SSL_read/SSL_write symbols: %s\n", argv[3],
			strerror(-err));
		return 1;
	}
	if (tls)
		placements(argv[3], offs, argc == 5, enter, ret, after, n);
	obj = hook_floor_bpf__open();
	if (!obj)
		err = -errno;
	if (!err) {
		bpf_program__set_autoload(obj->progs.floor_send, !tls);
		bpf_program__set_autoload(obj->progs.floor_recv, !tls);
		bpf_program__set_autoload(obj->progs.floor_tls_enter, tls);
		bpf_program__set_autoload(obj->progs.floor_tls_exit, tls);
		bpf_program__set_expected_attach_type(obj->progs.floor_tls_enter,
						      (enum bpf_attach_type)
							      FLOOR_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(obj->progs.floor_tls_exit,
						      (enum bpf_attach_type)
							      FLOOR_BPF_TRACE_UPROBE_MULTI);
		err = hook_floor_bpf__load(obj);
	}
	if (!err && !tls)
		err = hook_floor_bpf__attach(obj);
	/* The links stay open until the process exits. */
	if (!err && tls) {
		int exit_fd = bpf_program__fd(obj->progs.floor_tls_exit);

		err = link_uprobes(bpf_program__fd(obj->progs.floor_tls_enter), argv[3], pid, enter,
				   n[0], 0);
		if (err > 0 && n[1])
			err = link_uprobes(exit_fd, argv[3], pid, ret, n[1],
					   FLOOR_BPF_F_UPROBE_MULTI_RETURN);
		if (err > 0 && n[2])
			err = link_uprobes(exit_fd, argv[3], pid, after, n[2], 0);
		if (err > 0)
			err = 0;
	}
	if (err) {
		fprintf(stderr, "hook_floor: %s\n", strerror(err < 0 ? -err : errno));
		hook_floor_bpf__destroy(obj);
		return 1;
	}
	signal(SIGTERM, on_term);
	printf("attached: %u entries or call sites, %u returns, %u jumps after calls\n", n[0], n[1],
	       n[2]);
	fflush(stdout);
	sleep((unsigned)seconds); /* a SIGTERM ends it early */
	hook_floor_bpf__destroy(obj);
	return 0;
}
