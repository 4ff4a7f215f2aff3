// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a message of a traced connection turned into a span attached event's
 * data_content (shipper/network/netevent.c net__http_content): header fields, chunked framing and gzip
 * data as the traced process wrote or read them.
 *
 * Input: u16 max size, little-endian (0: unlimited), then the message's bytes (a copy of
 * exactly that size, so that a read past it is caught). Contracts checked: the length returned
 * is the string's; within max but for the "[not plain, ...]" note (NET_CONTENT_SLACK); valid
 * UTF-8 without NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/netpriv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t max;
	size_t out_len, n;
	uint8_t *msg;
	char *out;

	if (size < 2)
		return 0;
	max = (uint32_t)data[0] | (uint32_t)data[1] << 8;
	out_len = (max ? max : 4096) + NET_CONTENT_SLACK;
	msg = malloc(size - 2 ? size - 2 : 1);
	out = malloc(out_len);
	if (!msg || !out)
		abort();
	memcpy(msg, data + 2, size - 2);
	n = net__http_content(msg, size - 2, max, out, out_len);
	if (n >= out_len || strlen(out) != n)
		abort();
	for (size_t i = 0; i < n;) {
		const uint8_t *p = (const uint8_t *)out;
		size_t k = p[i] < 0x80		   ? 1
			   : (p[i] & 0xe0) == 0xc0 ? 2
			   : (p[i] & 0xf0) == 0xe0 ? 3
			   : (p[i] & 0xf8) == 0xf0 ? 4
						   : 0;

		if (!k || i + k > n)
			abort();
		for (size_t j = 1; j < k; j++)
			if ((p[i + j] & 0xc0) != 0x80)
				abort();
		i += k;
	}
	free(msg);
	free(out);
	return 0;
}
