// SPDX-License-Identifier: Apache-2.0
#include "shipper/output/markup.h"

size_t markup__utf8_next(const unsigned char *s, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		*cp = 0xfffd;
		return 1;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*cp = 0xfffd;
			return 1;
		}
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
		*cp = 0xfffd;
		return 1;
	}
	*cp = c;
	return n;
}

size_t markup__utf8_count(const char *s)
{
	size_t n = 0;
	uint32_t cp;

	for (const unsigned char *u = (const unsigned char *)s; *u; n++)
		u += markup__utf8_next(u, &cp);
	return n;
}

void markup__put(FILE *f, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t k = 0; *u && k < max; k++) {
		uint32_t cp;
		size_t n = markup__utf8_next(u, &cp);

		switch (cp) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			if (cp < 0x20 || cp == 0x7f || cp == 0xfffd || cp == 0xfffe || cp == 0xffff)
				putc('?', f);
			else
				fwrite(u, 1, n, f);
		}
		u += n;
	}
}
