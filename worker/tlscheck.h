/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side: the check of the TLS probes a shipper asks for (MSG_NET_TLS_ATTACH) against the
 * file it handed over. The kernel links a uprobe at any offset of any file; this check is all
 * that keeps a compromised shipper from pointing the capture at any function of its targets
 * (policy/README.md, "A compromised shipper, through a NETWORK worker").
 *
 * A probe must be at the function its cookie names, as the file itself names it: SSL_read,
 * SSL_write, SSL_read_ex or SSL_write_ex in its dynamic symbol table (found through its hash
 * table: PT_DYNAMIC's DT_GNU_HASH or DT_HASH), an entry and a return probe in pairs, or for
 * SSL_read and SSL_write a probe on their _ex call and one on the jump after it, in pairs, each
 * where this worker finds it in the function's own bytes (common/tlssite.h); Go's
 * crypto/tls.(*Conn).Read, .Write and .handshakeContext in the runtime's function table
 * (.gopclntab, which strip leaves), each RET probe on a 0xc3 byte inside one of them whose
 * entry the message probes too. The file is read with pread64 only (the attached worker opens
 * nothing), and no more than TLSCHECK_MAX_READ bytes for a message.
 */
#ifndef ROVER_WORKER_TLSCHECK_H
#define ROVER_WORKER_TLSCHECK_H

#include "common/msg.h"

/*
 * Bytes read from the file for one message at most: its headers, hash chains, symbols and
 * names (a few KiB for libssl or node), and, for a Go binary linked by an external linker, the
 * .data.rel.ro searched for the table's header (a few MiB for the largest Go programs).
 */
#define TLSCHECK_MAX_READ (32u << 20)

/*
 * 0 when every probe of m may be linked in the ELF file fd. m's count and cookies are checked
 * already (netcap__tls_attach): each names m->lib, a Go function only for NET_TLS_GO, no Go
 * return probe. Else, the first of: -EBADF (not a regular file), -ENOEXEC (not an ELF64 file
 * with readable program headers), -ERANGE (an offset outside the bytes of an executable
 * segment), -EILSEQ (a Go RET probe not on a 0xc3 byte), -EINVAL (an SSL probe without its
 * entry or return twin), -EFAULT (an offset that is not the function its cookie names, or a Go
 * RET in none whose entry is probed), -E2BIG (more than TLSCHECK_MAX_READ bytes to read).
 */
int tlscheck__probes(int fd, const struct msg_tls_attach *m);

#endif
