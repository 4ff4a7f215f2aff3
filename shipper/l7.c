// SPDX-License-Identifier: Apache-2.0
/* Shipper side: what the request/response parsers of shipper/l7.h share. */
#include "shipper/l7.h"

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
