// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the bytes at a function's entry, as the shipper and the worker decode
 * them for the call site of SSL_read or SSL_write (common/tlssite.c tls_site_find).
 *
 * Contracts checked besides the sanitizers': a site found is a call (0xe8 and its 4 bytes)
 * inside the bytes given and at most TLS_SITE_SCAN in, followed (past at most a 2-byte test)
 * by a conditional jump whose bytes are inside too; the same bytes give the same answer twice
 * and more bytes after them never change it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tlssite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_site s, t;
	uint8_t longer[TLS_SITE_SCAN + 16];
	size_t n = size < TLS_SITE_SCAN ? size : TLS_SITE_SCAN;
	int rc = tls_site_find(data, size, &s);

	if (rc != 0 && rc != -ENOENT)
		abort();
	if (rc)
		return 0;
	if (s.call_off + 5 > n || data[s.call_off] != 0xe8 || s.after_off < s.call_off + 5 ||
	    s.after_off > s.call_off + 7)
		abort();
	if (!((s.after_off + 2 <= n && data[s.after_off] >= 0x70 && data[s.after_off] <= 0x7f) ||
	      (s.after_off + 6 <= n && data[s.after_off] == 0x0f && data[s.after_off + 1] >= 0x80 &&
	       data[s.after_off + 1] <= 0x8f)))
		abort();
	if (tls_site_find(data, size, &t) || memcmp(&s, &t, sizeof(s)))
		abort();
	/* The answer depends on the bytes up to the jump only. */
	memset(longer, 0xcc, sizeof(longer));
	memcpy(longer, data, n);
	if (tls_site_find(longer, sizeof(longer), &t) || memcmp(&s, &t, sizeof(s)))
		abort();
	return 0;
}
