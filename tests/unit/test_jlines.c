// SPDX-License-Identifier: Apache-2.0
/*
 * Java line number tables (shipper/stacks/python.c jlines__bci2line): tables written by hand
 * the way HotSpot's CompressedLineNumberWriteStream writes them, in the number format of JDK 17
 * (UNSIGNED5 with no excluded byte) and of JDK 20+ (the zero byte excluded).
 */
#include <criterion/criterion.h>

#include "shipper/stacks/python.h"

/* (bci 0, line 10) escaped, (5, 12) in one byte, (9, 11) escaped (a negative line delta). */
static const uint8_t tab17[] = { 0xff, 0x00, 0x14, 0x2a, 0xff, 0x08, 0x01, 0x00 };
static const uint8_t tab25[] = { 0xff, 0x01, 0x15, 0x2a, 0xff, 0x09, 0x02, 0x00 };

static void check(uint16_t jdk, const uint8_t *tab, size_t len)
{
	static const uint32_t bci[] = { 0, 3, 5, 7, 9, 20 };
	static const int32_t want[] = { 10, 10, 12, 12, 11, 11 };

	for (size_t i = 0; i < sizeof(bci) / sizeof(bci[0]); i++) {
		int32_t line = -7;

		cr_assert(jlines__bci2line(jdk, tab, len, bci[i], &line), "jdk %u bci %u", jdk,
			  bci[i]);
		cr_assert_eq(line, want[i], "jdk %u bci %u: line %d, want %d", jdk, bci[i], line,
			     want[i]);
	}
}

Test(jlines, both_number_formats)
{
	check(17, tab17, sizeof(tab17));
	check(25, tab25, sizeof(tab25));
}

Test(jlines, a_table_without_its_end_gives_no_line)
{
	int32_t line = 0;

	/* Cut before the last pair: bci 9's line could be further on. */
	cr_assert_not(jlines__bci2line(17, tab17, 4, 9, &line));
	/* Cut inside an escaped pair. */
	cr_assert_not(jlines__bci2line(17, tab17, 6, 9, &line));
	cr_assert_not(jlines__bci2line(17, NULL, 0, 0, &line));
}

Test(jlines, the_wrong_format_never_reads_past_the_table)
{
	int32_t line = 0;
	/* JDK 25's excluded byte: a 0 inside a number is not one. */
	static const uint8_t bad[] = { 0xff, 0x00, 0x15, 0x00 };

	cr_assert_not(jlines__bci2line(25, bad, sizeof(bad), 0, &line));
	/* Five high bytes end a number: no read past it. */
	static const uint8_t high[] = { 0xff, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x02, 0x00 };

	(void)jlines__bci2line(17, high, sizeof(high), 0, &line);
}
