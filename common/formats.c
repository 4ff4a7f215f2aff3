// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/formats.h"
#include "common/msg.h"

/* clang-format off */
static const struct output_format_info formats[] = {
	{ FORMAT_FOLDED, "folded", ".folded", 0, 1 },
	{ FORMAT_PPROF, "pprof", ".pb.gz", 0, 0 },
	{ FORMAT_SVG, "svg", ".svg", 0, 0 },
	{ FORMAT_NET_TXT, "txt", ".txt", 1, 1 },
	{ FORMAT_NET_JSON, "json", ".json", 1, 0 },
	{ FORMAT_HTML, "html", ".html", 0, 0 },
	{ FORMAT_NET_HTML, "html", ".html", 1, 0 },
};
/* clang-format on */

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static int ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), k = strlen(end);

	return n > k && !strcmp(s + n - k, end);
}

int output_format_of(const char *name, const char *path, int network, uint32_t *ret)
{
	const struct output_format_info *fallback = NULL;

	for (size_t i = 0; i < NFORMATS; i++) {
		const struct output_format_info *f = &formats[i];

		if (!f->network != !network)
			continue;
		if (name ? !strcmp(name, f->name)
			 : path && f->ending && ends_with(path, f->ending)) {
			*ret = f->format;
			return 0;
		}
		if (f->fallback)
			fallback = f;
	}
	if (name || !fallback)
		return -EINVAL;
	*ret = fallback->format;
	return 0;
}

const struct output_format_info *output_format_info(uint32_t format)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i].format == format)
			return &formats[i];
	return NULL;
}
