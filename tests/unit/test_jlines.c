// SPDX-License-Identifier: Apache-2.0
/*
 * Java line number tables (shipper/stacks/python.c jlines__bci2line): tables written by hand
 * the way HotSpot's CompressedLineNumberWriteStream writes them, in the number format of JDK 17
 * (UNSIGNED5 with no excluded byte) and of JDK 20+ (the zero byte excluded); and the method
 * records (SC_REC_JMETHOD) that carry them, checked and kept by pycodes__add_frame.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/jvmframes.h"
#include "common/msg.h"
#include "common/stackcount.h"
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

/* ---- Java method records (SC_REC_JMETHOD) through pycodes__add_frame and jmethods__name ---- */

static uint8_t jbuf[1 << 14];
static const int32_t jtgids[] = { 100 };

#define JREC_LEN(lines) ((offsetof(struct sc_jmethod, data) + JAVA_STRINGS + (lines) + 7) & ~7ul)

/* A MSG_SHIP_PYCODES payload of task 5: one record of method 0xa0 (tgid 100, stamp 7), JDK 17,
 * class rover/test/A, name burn, file A.java, tab17 as its table; its length. */
static size_t jframe(struct sc_jmethod **ret)
{
	struct ship_pycodes_hdr h = { .task_id = 5, .count = 1 };
	struct sc_jmethod *j = (struct sc_jmethod *)(jbuf + sizeof(h));

	memset(jbuf, 0, sizeof(jbuf));
	memcpy(jbuf, &h, sizeof(h));
	*j = (struct sc_jmethod){ .kind = SC_REC_JMETHOD,
				  .tgid = 100,
				  .method = 0xa0,
				  .stamp = 7,
				  .jdk = 17,
				  .code_size = 20,
				  .class_len = 12,
				  .name_len = 4,
				  .sig_len = 3,
				  .file_len = 6,
				  .lines_len = sizeof(tab17),
				  .flags = JAVA_M_HAS_LINES };
	memcpy(j->data, "rover/test/A", 12);
	memcpy(j->data + JAVA_CLASS_MAX, "burn", 4);
	memcpy(j->data + JAVA_CLASS_MAX + JAVA_NAME_MAX, "()V", 3);
	memcpy(j->data + JAVA_CLASS_MAX + JAVA_NAME_MAX + JAVA_SIG_MAX, "A.java", 6);
	memcpy(j->data + JAVA_STRINGS, tab17, sizeof(tab17));
	*ret = j;
	return sizeof(h) + JREC_LEN(sizeof(tab17));
}

static const char *jname(struct pycodes *c, uint64_t method, uint32_t stamp, uint32_t instr)
{
	static char buf[1024];
	struct py_frame f = { .code = method, .stamp = stamp, .instr = instr };

	jmethods__name(c, 100, &f, buf, sizeof(buf), NULL);
	return buf;
}

Test(jmethods, a_record_names_interpreted_and_compiled_frames)
{
	struct pycodes *c = pycodes__new(0);
	struct sc_jmethod *j;
	size_t len = jframe(&j);

	cr_assert_eq(pycodes__add_frame(c, 5, jtgids, 1, jbuf, len, NULL), 0);
	cr_assert_str_eq(jname(c, 0xa0, 7, JAVA_FRAME_INTERPRETED | 5),
			 "rover.test.A.burn (A.java:12)");
	cr_assert_str_eq(jname(c, 0xa0, 7, JAVA_FRAME_INTERPRETED | JAVA_FRAME_NO_BCI | 5),
			 "rover.test.A.burn (A.java)");
	cr_assert_str_eq(jname(c, 0xa0, 7, JAVA_FRAME_COMPILED), "rover.test.A.burn (A.java)");
	/* Another stamp: a method freed and its memory reused, never named after this one. */
	cr_assert_str_eq(jname(c, 0xa0, 8, JAVA_FRAME_COMPILED), JAVA_UNKNOWN_NAME);
	pycodes__free(c);
}

/* A bad record refuses its frame whole: nothing of it kept. */
Test(jmethods, bad_records_are_refused_whole)
{
	for (int k = 0; k < 9; k++) {
		struct pycodes *c = pycodes__new(0);
		struct sc_jmethod *j;
		size_t len = jframe(&j);
		const char *why = NULL;

		switch (k) {
		case 0:
			j->class_len = 0;
			break;
		case 1:
			j->name_len = JAVA_NAME_MAX + 1;
			break;
		case 2:
			j->sig_len = JAVA_SIG_MAX + 1;
			break;
		case 3:
			j->file_len = JAVA_FILE_MAX + 1;
			break;
		case 4:
			j->lines_len = JAVA_LINES_MAX + 1;
			break;
		case 5:
			j->stamp = 0;
			break;
		case 6:
			j->jdk = 8;
			break;
		case 7:
			j->tgid = 300; /* not a target */
			break;
		case 8:
			len -= 8; /* cut short */
			break;
		}
		cr_assert_eq(pycodes__add_frame(c, 5, jtgids, 1, jbuf, len, &why), -EBADMSG,
			     "case %d taken", k);
		cr_assert_not_null(why, "case %d", k);
		cr_assert_str_eq(jname(c, 0xa0, 7, JAVA_FRAME_COMPILED), JAVA_UNKNOWN_NAME,
				 "case %d", k);
		pycodes__free(c);
	}
}
