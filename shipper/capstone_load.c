// SPDX-License-Identifier: Apache-2.0
/*
 * libcapstone for the Go TLS finder (tlsfind.c: the RET instructions of crypto/tls functions),
 * loaded by its SONAME only when the shipper may serve a NETWORK task. Linked, it had ld.so
 * apply its 77 000 relocations (its instruction tables are pointers) at every start of the
 * shipper, about 15 ms of CPU, three quarters of the shipper's whole start, which a one-shot
 * ON_CPU or OFF_CPU `rover profile` paid for nothing (docs/performance.md, "One-shot start-up").
 * tlsfind.c calls cs_* as it always did; these definitions forward to the library.
 *
 * Not linked into the unit and fuzz runners: they link tlsfind.c with -lcapstone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "common/dynload.h"
#include "shipper/capstone_load.h"

/* Debian's libcapstone4, as the shipper linked it before. */
#define CAPSTONE_SONAME "libcapstone.so.4"

/* Set once, by capstone__load before the shipper starts any thread; read-only after. */
static struct {
	__typeof__(cs_open) *open;
	__typeof__(cs_close) *close;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_free) *free;
	__typeof__(cs_disasm_iter) *disasm_iter;
} fn;
static int loaded;

int capstone__load(char *why, size_t whylen)
{
	const struct dynload_sym syms[] = {
		{ "cs_open", &fn.open },
		{ "cs_close", &fn.close },
		{ "cs_malloc", &fn.malloc },
		{ "cs_free", &fn.free },
		{ "cs_disasm_iter", &fn.disasm_iter },
	};
	const char *missing = NULL;
	char err[256];
	int rc;

	if (loaded)
		return 0;
	rc = dynload(CAPSTONE_SONAME, syms, sizeof(syms) / sizeof(syms[0]), &missing, err,
		     sizeof(err));
	if (rc == -ELIBACC)
		snprintf(why, whylen,
			 "loading the disassembler for Go TLS: %s; install libcapstone4", err);
	else if (rc)
		snprintf(why, whylen, "%s has no %s", CAPSTONE_SONAME, missing);
	loaded = !rc;
	return rc;
}

/* Without the library cs_open fails, and nothing else is reached (tlsfind.c stops there). */

cs_err cs_open(cs_arch arch, cs_mode mode, csh *handle)
{
	return loaded ? fn.open(arch, mode, handle) : CS_ERR_HANDLE;
}

cs_err cs_close(csh *handle)
{
	return loaded ? fn.close(handle) : CS_ERR_HANDLE;
}

cs_insn *cs_malloc(csh handle)
{
	return loaded ? fn.malloc(handle) : NULL;
}

void cs_free(cs_insn *insn, size_t count)
{
	if (loaded)
		fn.free(insn, count);
}

bool cs_disasm_iter(csh handle, const uint8_t **code, size_t *size, uint64_t *address,
		    cs_insn *insn)
{
	return loaded ? fn.disasm_iter(handle, code, size, address, insn) : false;
}
