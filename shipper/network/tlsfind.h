/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side (no capability): the TLS libraries a NETWORK task's targets map, and where
 * their read and write calls are, for the worker to probe (MSG_NET_TLS_ATTACH). The files are
 * the targets' own, so every byte read from them is untrusted: offsets and sizes are checked
 * against the file, and the worker checks the offsets again before it attaches anything.
 *
 * Looked for: a mapped libssl* (OpenSSL 1.1/3.x, BoringSSL), libnode*, and the executable
 * itself (OpenSSL linked in, as node has it; Go's crypto/tls, found through .gopclntab, so a
 * stripped Go binary is found too).
 */
#ifndef ROVER_SHIPPER_TLSFIND_H
#define ROVER_SHIPPER_TLSFIND_H

#include <stdint.h>

#include "common/msg.h"
#include "shipper/stacks/symbolize.h"

/* Files looked at per task (each (pid, file) once); more are not looked at, and counted. */
#define TLSFIND_MAX_FILES 1024

/*
 * The probes of the ELF file fd (not taken), whose name in its process is path, into
 * ret->lib, ret->nprobes and ret->probes (ret->path, pid, task_id untouched). 0, -ENOENT when
 * it has no TLS calls we probe, or another -errno with *ret_why saying what was wrong with it
 * (a static string).
 */
int tlsfind__probes(int fd, const char *path, struct msg_tls_attach *ret, const char **ret_why);

struct tls_finder;

/* What was sent to the worker, and what became of it (for the report). */
struct tls_probed {
	int32_t pid;
	uint32_t lib;	  /* enum net_tls_lib */
	uint32_t nprobes; /* sent */
	uint32_t seq;
	int32_t err;	   /* the worker's answer; 1 while none came */
	uint32_t attached; /* probes the worker attached */
	char path[256];
};

struct tls_finder *tls_finder__new(uint64_t task_id);

/*
 * A library found: m (task, pid, path, lib, probes, seq set) and the file's descriptor fd,
 * which stays the caller's. 0 or -errno (the worker is gone: the scan stops).
 */
typedef int (*tls_found_fn)(void *ctx, const struct msg_tls_attach *m, int fd);

/*
 * Looks through pid's mappings (from opener) for the files above not looked at before in this
 * task, and calls found for each that has TLS calls. A file without them, or that cannot be
 * read, is logged once. Returns the number found, or -errno when pid's mappings could not be
 * had (a process gone: nothing to do).
 */
int tls_finder__scan(struct tls_finder *f, const struct fd_opener *opener, int pid,
		     tls_found_fn found, void *ctx);

/* The worker's answer to the attach numbered seq (a result of another seq is ignored). */
void tls_finder__result(struct tls_finder *f, const struct msg_tls_result *r);

/* What was sent, in order; *ret_n entries. */
const struct tls_probed *tls_finder__probed(const struct tls_finder *f, uint32_t *ret_n);

/* Library names for logs and reports: "openssl", "boringssl", "go", "node". */
const char *tlsfind__lib_name(uint32_t lib);

void tls_finder__free(struct tls_finder *f);

#endif
