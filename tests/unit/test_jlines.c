// SPDX-License-Identifier: Apache-2.0
/*
 * Java line number tables (shipper/stacks/python.c jlines__bci2line): tables written by hand
 * the way HotSpot's CompressedLineNumberWriteStream writes them, in the number format of JDK 17
 * (UNSIGNED5 with no excluded byte) and of JDK 20+ (the zero byte excluded); the method
 * records (SC_REC_JMETHOD) that carry them, checked and kept by pycodes__add_frame; compiled
 * frames' scopes (jnm__scopes: PcDescs and scope data written the way HotSpot's
 * DebugInformationRecorder writes them) and the nmethod records (SC_REC_JNMETHOD) that carry
 * them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- Compiled frames: nmethod records (SC_REC_JNMETHOD) and their scopes ---- */

/* One UNSIGNED5 number as HotSpot's CompressedWriteStream writes it (x: 1 from JDK 20). */
static size_t u5(uint8_t *out, uint32_t v, unsigned x)
{
	const uint32_t l = 192 - x;
	size_t n = 0;

	for (int i = 0; i < 4 && v >= l; i++) {
		v -= l;
		out[n++] = (uint8_t)(l + v % 64 + x);
		v /= 64;
	}
	out[n++] = (uint8_t)(v + x);
	return n;
}

/* A scope (sender offset, method index, bci) at *at of buf: its offset. */
static uint32_t scope(uint8_t *buf, size_t *at, uint32_t sender, uint32_t mi, int32_t bci,
		      unsigned x)
{
	uint32_t off = (uint32_t)*at;

	*at += u5(buf + *at, sender, x);
	*at += u5(buf + *at, mi, x);
	*at += u5(buf + *at, (uint32_t)(bci + 1), x);
	/* locals, expressions, monitors: none */
	for (int i = 0; i < 3; i++)
		*at += u5(buf + *at, 0, x);
	return off;
}

/*
 * The nmethod of the tests below: method 0xa0 (burn, tab17's lines) inlines 0xb0 (mix, its
 * table tabm) at bci 5, which inlines 0xc0 (step) at bci 300 (a large number: two bytes).
 * PcDescs: the sentinel -1, pc 0x10 in burn at bci 9, 0x40 in mix inlined at burn's 5 (bci 2),
 * 0x80 in step (bci 4) inlined in mix (300) inlined in burn (5), 0x90 without a scope, then the
 * end sentinel. Metadata: a Klass (no stamp), 0xa0, 0xb0, 0xc0.
 */
struct nm_build {
	struct jnm_pc pcs[8];
	size_t npcs;
	uint8_t scopes[256];
	size_t slen;
	struct jnm_meta meta[4];
	size_t nmeta;
};

static void nm_build(struct nm_build *b, unsigned x)
{
	uint32_t s_burn, s_mix, s_step, s_burn2, s_mix2;

	memset(b, 0, sizeof(*b));
	b->slen = 1; /* HotSpot's stream starts past offset 0: 0 is "no scope" */
	s_burn = scope(b->scopes, &b->slen, 0, 2, 9, x);
	s_burn2 = scope(b->scopes, &b->slen, 0, 2, 5, x);
	s_mix = scope(b->scopes, &b->slen, s_burn2, 3, 2, x);
	s_mix2 = scope(b->scopes, &b->slen, s_burn2, 3, 300, x);
	s_step = scope(b->scopes, &b->slen, s_mix2, 4, 4, x);
	b->pcs[b->npcs++] = (struct jnm_pc){ -1, 0 };
	b->pcs[b->npcs++] = (struct jnm_pc){ 0x10, (int32_t)s_burn };
	b->pcs[b->npcs++] = (struct jnm_pc){ 0x40, (int32_t)s_mix };
	b->pcs[b->npcs++] = (struct jnm_pc){ 0x80, (int32_t)s_step };
	b->pcs[b->npcs++] = (struct jnm_pc){ 0x90, 0 };
	b->pcs[b->npcs++] = (struct jnm_pc){ INT32_MAX, 0 };
	b->meta[0] = (struct jnm_meta){ .method = 0x5000 }; /* a Klass: no stamp */
	b->meta[1] = (struct jnm_meta){ .method = 0xa0, .stamp = 7 };
	b->meta[2] = (struct jnm_meta){ .method = 0xb0, .stamp = 8 };
	b->meta[3] = (struct jnm_meta){ .method = 0xc0, .stamp = 9 };
	b->nmeta = 4;
}

static size_t scopes_of(const struct nm_build *b, uint16_t jdk, uint32_t off, bool top,
			struct jscope *ret)
{
	return jnm__scopes(jdk, b->pcs, b->npcs, b->scopes, b->slen, b->meta, b->nmeta, off, top,
			   ret, JAVA_MAX_SCOPES);
}

Test(jnm, the_scopes_of_a_pc_innermost_first_on_both_number_formats)
{
	static const uint16_t jdks[] = { 17, 25 };

	for (size_t v = 0; v < 2; v++) {
		struct nm_build b;
		struct jscope s[JAVA_MAX_SCOPES];

		nm_build(&b, jdks[v] >= 20);
		/* A return address: its own PcDesc. */
		cr_assert_eq(scopes_of(&b, jdks[v], 0x80, false, s), 3, "jdk %u", jdks[v]);
		cr_assert(s[0].method == 0xc0 && s[0].stamp == 9 && s[0].bci == 4);
		cr_assert(s[1].method == 0xb0 && s[1].stamp == 8 && s[1].bci == 300);
		cr_assert(s[2].method == 0xa0 && s[2].stamp == 7 && s[2].bci == 5);
		/* The sampled pc: the next PcDesc past it, even at a PcDesc's own pc. */
		cr_assert_eq(scopes_of(&b, jdks[v], 0x40, true, s), 3);
		cr_assert_eq(s[0].method, 0xc0);
		cr_assert_eq(scopes_of(&b, jdks[v], 0x3f, true, s), 2);
		cr_assert(s[0].method == 0xb0 && s[0].bci == 2 && s[1].method == 0xa0 &&
			  s[1].bci == 5);
		cr_assert_eq(scopes_of(&b, jdks[v], 0x0, false, s), 1);
		cr_assert(s[0].method == 0xa0 && s[0].bci == 9);
		/* A PcDesc without a scope, and past the last one: none (the caller's fallback). */
		cr_assert_eq(scopes_of(&b, jdks[v], 0x90, false, s), 0);
		cr_assert_eq(scopes_of(&b, jdks[v], 0x85, false, s), 0);
		/* Another JDK's numbers: wrong scopes, but never past the data or the room. */
		cr_assert_leq(scopes_of(&b, jdks[v] >= 20 ? 17 : 25, 0x80, false, s),
			      JAVA_MAX_SCOPES);
	}
}

Test(jnm, bad_scopes_end_the_chain)
{
	struct jscope s[JAVA_MAX_SCOPES];
	struct nm_build b;
	size_t at;
	uint32_t a, c;

	/* A sender after its scope (a loop, or a hostile table): the chain ends there. */
	nm_build(&b, 0);
	at = b.slen;
	a = scope(b.scopes, &at, (uint32_t)at + 40, 2, 1, 0);
	b.slen = at;
	b.pcs[1].scope = (int32_t)a;
	cr_assert_eq(scopes_of(&b, 17, 0x10, false, s), 1);
	/* A scope whose sender is itself. */
	at = b.slen;
	c = (uint32_t)at;
	(void)scope(b.scopes, &at, c, 3, 1, 0);
	b.slen = at;
	b.pcs[1].scope = (int32_t)c;
	cr_assert_eq(scopes_of(&b, 17, 0x10, false, s), 1);
	/* A method index past the metadata, or 0, or the Klass's: a scope of no known method. */
	at = b.slen;
	a = scope(b.scopes, &at, 0, 9, 1, 0);
	b.slen = at;
	b.pcs[1].scope = (int32_t)a;
	cr_assert_eq(scopes_of(&b, 17, 0x10, false, s), 1);
	cr_assert_eq(s[0].stamp, 0);
	at = b.slen;
	a = scope(b.scopes, &at, 0, 1, 1, 0);
	b.slen = at;
	b.pcs[1].scope = (int32_t)a;
	cr_assert_eq(scopes_of(&b, 17, 0x10, false, s), 1);
	cr_assert_eq(s[0].stamp, 0);
	/* A bci past any method's code: no bci. */
	at = b.slen;
	a = scope(b.scopes, &at, 0, 2, 70000, 0);
	b.slen = at;
	b.pcs[1].scope = (int32_t)a;
	cr_assert_eq(scopes_of(&b, 17, 0x10, false, s), 1);
	cr_assert_eq(s[0].bci, -1);
	/* A scope offset past the data, or data cut inside a number. */
	b.pcs[1].scope = (int32_t)b.slen + 3;
	cr_assert_eq(scopes_of(&b, 17, 0x10, false, s), 0);
	nm_build(&b, 0);
	b.slen = (size_t)b.pcs[3].scope + 1;
	cr_assert_eq(scopes_of(&b, 17, 0x80, false, s), 0);
	/* No room: as many as asked for. */
	nm_build(&b, 0);
	cr_assert_eq(jnm__scopes(17, b.pcs, b.npcs, b.scopes, b.slen, b.meta, b.nmeta, 0x80, false,
				 s, 2),
		     2);
	cr_assert_eq(jnm__scopes(17, NULL, 0, b.scopes, b.slen, b.meta, b.nmeta, 0x80, false, s, 2),
		     0);
}

/* A MSG_SHIP_PYCODES payload of task 5: jframe's method record of 0xa0, records of 0xb0 and
 * 0xc0, then the nmethod 0xe0 (stamp 11) of nm_build's data as JDK 17 lays it out: its
 * length; *ret the nmethod record. */
static size_t nmframe(struct sc_jnmethod **ret)
{
	struct ship_pycodes_hdr h = { .task_id = 5, .count = 4 };
	struct sc_jmethod *j;
	struct sc_jnmethod *n;
	struct nm_build b;
	size_t off = jframe(&j);

	memcpy(jbuf, &h, sizeof(h));
	for (int k = 0; k < 2; k++) {
		struct sc_jmethod *m = (struct sc_jmethod *)(jbuf + off);

		memcpy(m, j, JREC_LEN(sizeof(tab17)));
		m->method = k ? 0xc0 : 0xb0;
		m->stamp = k ? 9 : 8;
		memcpy(m->data + JAVA_CLASS_MAX, k ? "step" : "mix_", 4);
		off += JREC_LEN(sizeof(tab17));
	}
	nm_build(&b, 0);
	n = (struct sc_jnmethod *)(jbuf + off);
	memset(n, 0, offsetof(struct sc_jnmethod, data));
	*n = (struct sc_jnmethod){ .kind = SC_REC_JNMETHOD,
				   .tgid = 100,
				   .nmethod = 0xe0,
				   .stamp = 11,
				   .jdk = 17,
				   .method = 0xa0,
				   .method_stamp = 7,
				   .nmeta = (uint16_t)b.nmeta,
				   .pcs_len = (uint16_t)(b.npcs * 16),
				   .scopes_len = (uint16_t)b.slen,
				   .pc_size = 16,
				   .pc_off = 0,
				   .scope_off = 4 };
	memcpy(n->meta, b.meta, sizeof(b.meta));
	for (size_t i = 0; i < b.npcs; i++) {
		memset(n->data + 16 * i, 0, 16);
		memcpy(n->data + 16 * i, &b.pcs[i].pc_offset, 4);
		memcpy(n->data + 16 * i + 4, &b.pcs[i].scope, 4);
	}
	memcpy(n->data + b.npcs * 16, b.scopes, b.slen);
	off += (offsetof(struct sc_jnmethod, data) + b.npcs * 16 + b.slen + 7) & ~7ul;
	*ret = n;
	return off;
}

/* The names of compiled frame (0xe0, stamp, instr), outermost first, joined by ";". */
static const char *cname(struct pycodes *c, uint32_t stamp, uint32_t instr)
{
	static char out[2048];
	struct py_frame f = { .code = 0xe0, .stamp = stamp, .instr = instr };
	struct jscope s[JAVA_MAX_SCOPES];
	size_t n = jnmethods__scopes(c, 100, &f, s, JAVA_MAX_SCOPES);

	out[0] = '\0';
	for (size_t q = n; q-- > 0;) {
		char buf[512];
		struct py_frame sf = { .code = s[q].method,
				       .stamp = s[q].stamp,
				       .instr = JAVA_FRAME_INTERPRETED |
						(s[q].bci >= 0 ? (uint32_t)s[q].bci
							       : JAVA_FRAME_NO_BCI) };

		jmethods__name(c, 100, &sf, buf, sizeof(buf), NULL);
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", q + 1 < n ? ";" : "",
			 buf);
	}
	return out;
}

Test(jnm, a_compiled_frame_is_a_frame_per_inlined_method_with_lines)
{
	struct pycodes *c = pycodes__new(0);
	struct sc_jnmethod *n;
	size_t len = nmframe(&n);
	const char *why = NULL;

	cr_assert_eq(pycodes__add_frame(c, 5, jtgids, 1, jbuf, len, &why), 0, "%s", why);
	/* tab17: bci 5 line 12, 9 line 11, 2 and 4 line 10, 300 line 11. */
	cr_assert_str_eq(cname(c, 11, JAVA_FRAME_COMPILED | 0x80),
			 "rover.test.A.burn (A.java:12);rover.test.A.mix_ (A.java:11);"
			 "rover.test.A.step (A.java:10)");
	cr_assert_str_eq(cname(c, 11, JAVA_FRAME_COMPILED | JAVA_FRAME_TOP | 0x10),
			 "rover.test.A.burn (A.java:12);rover.test.A.mix_ (A.java:10)");
	/* No scope at the pc, or no pc: the nmethod's own method, no line. */
	cr_assert_str_eq(cname(c, 11, JAVA_FRAME_COMPILED | 0x90), "rover.test.A.burn (A.java)");
	cr_assert_str_eq(cname(c, 11, JAVA_FRAME_COMPILED | JAVA_FRAME_NO_BCI),
			 "rover.test.A.burn (A.java)");
	/* Another stamp: an nmethod freed and its memory reused, no names. */
	cr_assert_str_eq(cname(c, 12, JAVA_FRAME_COMPILED | 0x80), "");
	/* A method record is not an nmethod's, nor the other way. */
	cr_assert_str_eq(jname(c, 0xe0, 11, JAVA_FRAME_INTERPRETED | 1), JAVA_UNKNOWN_NAME);
	pycodes__free(c);
}

/* A bad nmethod record refuses its frame whole: nothing of it kept, its method records neither. */
Test(jnm, bad_nmethod_records_are_refused_whole)
{
	for (int k = 0; k < 15; k++) {
		struct pycodes *c = pycodes__new(0);
		struct sc_jnmethod *n;
		size_t len = nmframe(&n);
		const char *why = NULL;
		int32_t pc;

		switch (k) {
		case 0:
			n->stamp = 0;
			break;
		case 1:
			n->method = 0;
			break;
		case 2:
			n->method_stamp = 0;
			break;
		case 3:
			n->jdk = 8;
			break;
		case 4:
			n->nmeta = JAVA_NM_META_MAX + 1;
			break;
		case 5:
			n->pcs_len = JAVA_NM_PCS_MAX + 16;
			break;
		case 6:
			n->scopes_len = JAVA_NM_SCOPES_MAX + 1;
			break;
		case 7:
			n->pc_size = 4;
			break;
		case 8:
			n->pc_off = 13;
			break;
		case 9:
			n->scope_off = 200;
			break;
		case 10:
			n->pcs_len -= 8; /* not whole PcDescs */
			break;
		case 11:
			pc = 0x100; /* the second PcDesc past the third: out of order */
			memcpy(n->data + 16, &pc, 4);
			break;
		case 12:
			n->tgid = 300;
			break;
		case 13:
			len -= 8;
			break;
		case 14:
			n->scopes_len += 64; /* more than the frame holds */
			break;
		}
		cr_assert_eq(pycodes__add_frame(c, 5, jtgids, 1, jbuf, len, &why), -EBADMSG,
			     "case %d taken", k);
		cr_assert_not_null(why, "case %d", k);
		cr_assert_str_eq(cname(c, 11, JAVA_FRAME_COMPILED | 0x80), "", "case %d", k);
		cr_assert_str_eq(jname(c, 0xa0, 7, JAVA_FRAME_INTERPRETED | 5), JAVA_UNKNOWN_NAME,
				 "case %d", k);
		pycodes__free(c);
	}
}

/* The order of a spliced stack's items, outermost first: "nI" a native frame, "jK" a Java one. */
static void splice_order(const struct py_native *nat, size_t nn, const struct py_frame *java,
			 size_t njava, char *buf, size_t len)
{
	struct py_item items[64];
	size_t n = java_splice(nat, nn, java, njava, items, 64), o = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < n; k++)
		o += (size_t)snprintf(buf + o, len - o, "%s%c%d", k ? " " : "",
				      items[k].native >= 0 ? 'n' : 'j',
				      items[k].native >= 0 ? items[k].native : items[k].py);
}

/*
 * A C program's JNI callback under Java code that C code called: the sampled registers'
 * unwinding (callback, JNI function, then JIT code), the entry frame's (call_helper, main,
 * _start); the Java frames between. Counts that do not add up are ignored, and a stack without
 * an entry frame keeps the order it always had.
 */
Test(jsplice, native_frames_go_on_both_sides_of_the_java_frames)
{
	/* Outermost first: _start, main, call_helper | JIT, JIT wrapper, JNI function, callback. */
	static const struct py_native nat[7] = { [3] = { .jit = 1 }, [4] = { .jit = 1 } };
	struct py_frame java[4] = {
		{ .code = 0x10, .stamp = 1, .instr = JAVA_FRAME_COMPILED },
		{ .code = 0x20, .stamp = 1, .instr = JAVA_FRAME_COMPILED | 4 },
		{ .code = 0x30, .stamp = 1, .instr = JAVA_FRAME_INTERPRETED | 2 },
		{ .code = 0, .stamp = 3, .instr = JAVA_FRAME_ENTRY },
	};
	char buf[256];

	splice_order(nat, 7, java, 4, buf, sizeof(buf));
	cr_assert_str_eq(buf, "n0 n1 n2 j2 j1 j0 n5 n6");
	/* Two entry frames: Java called by native code called by Java called by C. */
	{
		static const struct py_native nat2[6] = { [3] = { .jit = 1 } };
		struct py_frame j2[5] = {
			{ .code = 0x10, .stamp = 1, .instr = JAVA_FRAME_COMPILED },
			{ .code = 0, .stamp = 2, .instr = JAVA_FRAME_ENTRY },
			{ .code = 0x30, .stamp = 1, .instr = JAVA_FRAME_INTERPRETED | 2 },
			{ .code = 0x40, .stamp = 1, .instr = JAVA_FRAME_INTERPRETED | 3 },
			{ .code = 0, .stamp = 1, .instr = JAVA_FRAME_ENTRY },
		};

		/* ips: [0..2] sampled (native, native, JIT), [3..4] first entry, [5] second. */
		splice_order(nat2, 6, j2, 5, buf, sizeof(buf));
		cr_assert_str_eq(buf, "n0 j3 j2 n1 n2 j0 n4 n5");
	}
	java[3].stamp = 100;
	splice_order(nat, 7, java, 4, buf, sizeof(buf));
	cr_assert_str_eq(buf, "j2 j1 j0 n5 n6");
	splice_order(nat, 7, java, 3, buf, sizeof(buf));
	cr_assert_str_eq(buf, "j2 j1 j0 n5 n6");
	splice_order(nat, 0, java, 4, buf, sizeof(buf));
	cr_assert_str_eq(buf, "j2 j1 j0");
}

/* Whether s[n] is valid UTF-8 (no surrogates, nothing overlong, nothing past U+10FFFF). */
static bool utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t b = (uint8_t)s[i];
		size_t k = b < 0x80		? 1
			   : (b & 0xe0) == 0xc0 ? 2
			   : (b & 0xf0) == 0xe0 ? 3
			   : (b & 0xf8) == 0xf0 ? 4
						: 0;
		uint32_t cp = k == 1 ? b : k == 2 ? b & 0x1fu : k == 3 ? b & 0x0fu : b & 0x07u;

		if (!k || !b || i + k > n)
			return false;
		for (size_t j = 1; j < k; j++) {
			if (((uint8_t)s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | ((uint8_t)s[i + j] & 0x3fu);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k;
	}
	return true;
}

static const char *mutf8(const char *in, size_t n, bool dots, uint32_t *bad)
{
	static char out[256];

	*bad = 0;
	jutf8__decode((const uint8_t *)in, n, dots, out, sizeof(out), bad);
	return out;
}

/* HotSpot's modified UTF-8 as UTF-8: what javac writes for non-ASCII names, and hostile bytes
 * (each replaced, counted, the output valid UTF-8 whatever comes in). */
Test(jutf8, modified_utf8_is_decoded_and_bad_bytes_replaced)
{
	uint32_t bad;
	char out[64];

	cr_assert_str_eq(mutf8("rover/test/Gr\xc3\xb6\xc3\x9f"
			       "e",
			       18, true, &bad),
			 "rover.test.Gr\xc3\xb6\xc3\x9f"
			 "e");
	cr_assert_eq(bad, 0);
	cr_assert_str_eq(mutf8("\xe8\xae\xa1\xe7\xae\x97", 6, false, &bad),
			 "\xe8\xae\xa1\xe7\xae\x97");
	cr_assert_eq(bad, 0);
	/* U+0000 as C0 80: a character a folded line cannot hold, as ';'. */
	cr_assert_str_eq(mutf8("a\xc0\x80;b/c", 7, false, &bad), "a__b/c");
	cr_assert_eq(bad, 0);
	/* U+1F600 as its surrogates, 3 bytes each: one 4-byte character. */
	cr_assert_str_eq(mutf8("x\xed\xa0\xbd\xed\xb8\x80y", 8, false, &bad), "x\xf0\x9f\x98\x80y");
	cr_assert_eq(bad, 0);
	/* A lone surrogate, high or low; a high one before a non-surrogate. */
	cr_assert_str_eq(mutf8("\xed\xa0\xbd"
			       "a",
			       4, false, &bad),
			 "\xef\xbf\xbd"
			 "a");
	cr_assert_eq(bad, 1);
	cr_assert_str_eq(mutf8("\xed\xb8\x80", 3, false, &bad), "\xef\xbf\xbd");
	cr_assert_eq(bad, 1);
	cr_assert_str_eq(mutf8("\xed\xa0\xbd\xe4\xb8\xad", 6, false, &bad),
			 "\xef\xbf\xbd\xe4\xb8\xad");
	cr_assert_eq(bad, 1);
	/* UTF-8's 4-byte form, a raw 0, overlong forms, a stray continuation, a cut sequence. */
	cr_assert_str_eq(mutf8("\xf0\x9f\x98\x80", 4, false, &bad),
			 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	cr_assert_eq(bad, 4);
	cr_assert_str_eq(mutf8("a\0b", 3, false, &bad), "a\xef\xbf\xbd"
							"b");
	cr_assert_eq(bad, 1);
	cr_assert_str_eq(mutf8("\xc1\x81\xe0\x81\x81", 5, false, &bad),
			 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	cr_assert_eq(bad, 5);
	cr_assert_str_eq(mutf8("\x80z\xe4\xb8", 4, false, &bad),
			 "\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd");
	cr_assert_eq(bad, 3);
	/* C1 controls (U+0080 is C2 80) as '_'. */
	cr_assert_str_eq(mutf8("\xc2\x80\xc2\xa0", 4, false, &bad), "_\xc2\xa0");
	/* A small output: cut at a character's boundary, always ended. */
	cr_assert_eq(jutf8__decode((const uint8_t *)"ab\xe4\xb8\xad", 5, false, out, 6, NULL), 2);
	cr_assert_str_eq(out, "ab");
	cr_assert_eq(jutf8__decode((const uint8_t *)"ab", 2, false, out, 1, NULL), 0);
	cr_assert_str_eq(out, "");
	/* Any bytes: valid UTF-8 out, within its room. */
	srand(28);
	for (int round = 0; round < 20000; round++) {
		uint8_t in[24];
		char big[3 * sizeof(in) + 8];
		size_t n = (size_t)rand() % sizeof(in), o;
		static const uint8_t pick[] = { 0x00, 0x2f, 0x3b, 0x41, 0x7f, 0x80, 0xa0,
						0xbd, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0,
						0xed, 0xef, 0xf0, 0xf4, 0xf8, 0xff };

		for (size_t i = 0; i < n; i++)
			in[i] = rand() % 2 ? pick[rand() % sizeof(pick)] : (uint8_t)rand();
		o = jutf8__decode(in, n, round % 2, big, sizeof(big), NULL);
		cr_assert_lt(o, sizeof(big));
		cr_assert_eq(strlen(big), o);
		cr_assert(utf8_valid(big, o), "round %d: invalid UTF-8 out", round);
	}
}
