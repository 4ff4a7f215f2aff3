// SPDX-License-Identifier: Apache-2.0
/* The one table of output formats (common/formats.c): what `rover profile` makes of --format
 * and of the output's name. */
#include <criterion/criterion.h>
#include <errno.h>

#include "common/formats.h"
#include "common/msg.h"

static uint32_t fmt(const char *name, const char *path, int network)
{
	uint32_t f = 0;

	cr_assert_eq(output_format_of(name, path, network, &f), 0, "%s %s", name, path);
	return f;
}

Test(formats, a_name_chooses_among_its_kind_only)
{
	uint32_t f = 77;

	cr_assert_eq(fmt("folded", "x.svg", 0), FORMAT_FOLDED);
	cr_assert_eq(fmt("pprof", "x", 0), FORMAT_PPROF);
	cr_assert_eq(fmt("svg", "x.folded", 0), FORMAT_SVG);
	cr_assert_eq(fmt("json", "x.txt", 1), FORMAT_NET_JSON);
	cr_assert_eq(fmt("txt", "x.json", 1), FORMAT_NET_TXT);
	cr_assert_eq(output_format_of("json", "x", 0, &f), -EINVAL);
	cr_assert_eq(output_format_of("svg", "x", 1, &f), -EINVAL);
	cr_assert_eq(fmt("html", "x.svg", 0), FORMAT_HTML);
	cr_assert_eq(fmt("html", "x.json", 1), FORMAT_NET_HTML);
	cr_assert_eq(output_format_of("pdf", "x", 0, &f), -EINVAL);
	cr_assert_eq(f, 77, "written on failure");
}

Test(formats, the_ending_chooses_else_the_kind_s_fallback)
{
	cr_assert_eq(fmt(NULL, "/tmp/a.pb.gz", 0), FORMAT_PPROF);
	cr_assert_eq(fmt(NULL, "a.svg", 0), FORMAT_SVG);
	cr_assert_eq(fmt(NULL, "a.folded", 0), FORMAT_FOLDED);
	cr_assert_eq(fmt(NULL, "a.out", 0), FORMAT_FOLDED);
	cr_assert_eq(fmt(NULL, ".svg", 0), FORMAT_FOLDED, "a name that is only the ending");
	cr_assert_eq(fmt(NULL, "report.json", 1), FORMAT_NET_JSON);
	cr_assert_eq(fmt(NULL, "report.svg", 1), FORMAT_NET_TXT);
	cr_assert_eq(fmt(NULL, "report", 1), FORMAT_NET_TXT);
	cr_assert_eq(fmt(NULL, "p.html", 0), FORMAT_HTML);
	cr_assert_eq(fmt(NULL, "report.html", 1), FORMAT_NET_HTML);
}

Test(formats, every_format_has_one_entry)
{
	for (uint32_t f = FORMAT_FOLDED; f <= FORMAT_NET_HTML; f++) {
		cr_assert_not_null(output_format_info(f), "format %u", f);
		cr_assert_eq(output_format_info(f)->format, f);
	}
	cr_assert_null(output_format_info(0));
	cr_assert_null(output_format_info(FORMAT_NET_HTML + 1));
}
