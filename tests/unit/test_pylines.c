// SPDX-License-Identifier: Apache-2.0
/*
 * Python line numbers (shipper/stacks/python.c): every code object of the samples of
 * tests/tools/pylines_vectors.py, at every byte offset of its bytecode, gets the line that
 * PyCode_Addr2Line of its own CPython (3.8 to 3.13) gave; and hostile tables end without a
 * read past them.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/stacks/python.h"
#include "tests/unit/pylines_vectors.h"

Test(pylines, every_offset_of_every_vector_has_cpythons_line)
{
	size_t n = sizeof(pyl_vectors) / sizeof(pyl_vectors[0]);
	uint32_t versions = 0;

	for (size_t i = 0; i < n; i++) {
		const struct pyl_vector *v = &pyl_vectors[i];

		versions |= 1u << (v->version & 0xf);
		for (uint32_t k = 0; k < v->nlines; k++) {
			int32_t line = -1;

			if (!pylines__addr2line(v->version, (const uint8_t *)v->table, v->table_len,
						v->firstlineno, k * 2, &line))
				line = -1;
			cr_assert_eq(line, v->lines[k], "%x %s offset %u: %d, CPython %d",
				     v->version, v->what, k * 2, line, v->lines[k]);
		}
	}
	/* 3.8 to 3.13, each */
	cr_assert_eq(versions, 0x3f00, "versions %#x", versions);
	cr_assert_gt(n, 100);
}

Test(pylines, another_version_gives_no_line)
{
	int32_t line = 7;

	cr_assert(!pylines__addr2line(0x0307, (const uint8_t *)"\x02\x01", 2, 1, 4, &line));
	cr_assert(!pylines__addr2line(0x030e, (const uint8_t *)"\x80", 1, 1, 0, &line));
	cr_assert_eq(line, 7, "written on failure");
}

/* Tables cut anywhere, or made of any bytes: an answer, never a read past them (ASan). */
Test(pylines, hostile_tables_are_read_within_their_length)
{
	static const uint16_t versions[] = { 0x0308, 0x030a, 0x030b, 0x030c, 0x030d };
	uint8_t tab[64];
	int32_t line;

	srand(25);
	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)rand() % sizeof(tab);
		uint8_t *copy;

		for (size_t i = 0; i < len; i++)
			tab[i] = (uint8_t)rand();
		copy = malloc(len ? len : 1);
		memcpy(copy, tab, len);
		for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
			for (uint32_t q = 0; q < 300; q += 7)
				(void)pylines__addr2line(versions[v], copy, len, INT32_MAX - 3, q,
							 &line);
		free(copy);
	}
	/* A varint that never ends, deltas that add up past an int. */
	memset(tab, 0x7f, sizeof(tab));
	tab[0] = 0xf0; /* long form, 1 unit */
	cr_assert(!pylines__addr2line(0x030b, tab, sizeof(tab), 1, 0, &line));
	for (size_t i = 0; i < sizeof(tab); i += 2) {
		tab[i] = 0;
		tab[i + 1] = 0x7f;
	}
	cr_assert(!pylines__addr2line(0x0308, tab, sizeof(tab), INT32_MAX - 10, 0, &line));
	cr_assert(pylines__addr2line(0x0308, tab, sizeof(tab), 1, 0, &line));
	cr_assert_eq(line, 1 + 32 * 127);
}
