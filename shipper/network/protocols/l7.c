// SPDX-License-Identifier: Apache-2.0
/* Shipper side: what the request/response parsers of shipper/network/protocols/l7.h share. */
#include "shipper/network/protocols/l7.h"

#include <string.h>

int l7__copy_str(char *out, size_t cap, const uint8_t *s, size_t n)
{
	size_t k;

	if (!cap)
		return n > 0;
	k = n < cap - 1 ? n : cap - 1;
	for (size_t i = 0; i < k; i++)
		out[i] = s[i] < 0x20 || s[i] == 0x7f ? '?' : (char)s[i];
	out[k] = '\0';
	return k < n;
}

int l7__name_is(const uint8_t *p, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	if (n != k)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = p[i] >= 'A' && p[i] <= 'Z' ? p[i] + ('a' - 'A') : p[i];

		if (ch != (uint8_t)lit[i])
			return 0;
	}
	return 1;
}

size_t l7__copy_text(char *dst, size_t cap, const uint8_t *src, size_t n, uint32_t *flags,
		     uint32_t cut_flag)
{
	size_t k = n < cap ? n : cap;

	for (size_t i = 0; i < k; i++)
		dst[i] = (src[i] < 0x20 && src[i] != '\t') || src[i] == 0x7f ? '?' : (char)src[i];
	dst[k] = '\0';
	if (n > k)
		*flags |= cut_flag;
	return k;
}
