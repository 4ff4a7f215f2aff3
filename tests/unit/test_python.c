// SPDX-License-Identifier: Apache-2.0
/*
 * Python frames in the shipper (shipper/stacks/python.c, pyfind.c, task.c): the splice of
 * Python groups into native stacks, the code record parser (lengths, kinds, strings of each
 * kind), the cache's budget, interpreter file names, and a snapshot of this process through a
 * function named like CPython's evaluation loop, spliced and written as folded.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stackcount.h"
#include "shipper/stacks/pyfind.h"
#include "shipper/stacks/python.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/stacks/unwind.h"
#include "shipper/task.h"

/* ---- the splice ---- */

/*
 * nat: a native frame per character, outermost first: 'e' the loop (in the interpreter's
 * file), 'i' another frame of the interpreter's file, 'x' of another file. py: a Python frame
 * per character, innermost first: 'E' an entry frame, 'f' another. Returns the spliced stack,
 * outermost first: "nK" native frame K, "pK" Python frame K.
 */
static char *splice(const char *nat, const char *py, enum py_native_mode mode)
{
	struct py_native n[64];
	struct py_frame f[64];
	struct py_item items[128];
	size_t nn = strlen(nat), np = strlen(py), k;
	static char out[1024];
	size_t o = 0;

	for (size_t i = 0; i < nn; i++)
		n[i] = (struct py_native){ .eval = nat[i] == 'e', .interp = nat[i] != 'x' };
	for (size_t i = 0; i < np; i++)
		f[i] = (struct py_frame){ .code = 0x1000 + i,
					  .stamp = 1,
					  .instr = py[i] == 'E' ? PY_FRAME_ENTRY : 0 };
	k = py_splice(n, nn, f, np, mode, items, 128);
	out[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		cr_assert((items[i].native < 0) != (items[i].py < 0));
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%c%d", i ? " " : "",
				      items[i].native >= 0 ? 'n' : 'p',
				      items[i].native >= 0 ? items[i].native : items[i].py);
	}
	return out;
}

Test(pysplice, groups_take_the_loop_frames_innermost_first)
{
	/*
	 * main(x) Py_RunMain(i) loop(e) call(i) loop(e) ext(x) loop(e) leaf(i); groups
	 * [p0 p1] [p2] [p3 p4]: the innermost to n6, then n4, then n2. The interpreter's call
	 * between loops hidden, the extension's frame kept, the leaf and main kept.
	 */
	cr_assert_str_eq(splice("xieiexei", "fEEfE", PY_NATIVE_SPLICED),
			 "n0 n1 p4 p3 p2 n5 p1 p0 n7");
	cr_assert_str_eq(splice("xieiexei", "fEEfE", PY_NATIVE_ALL),
			 "n0 n1 n2 p4 p3 n3 n4 p2 n5 n6 p1 p0 n7");
	/* Two loops (3.8-3.10: every frame its own call). */
	cr_assert_str_eq(splice("xeiie", "EE", PY_NATIVE_SPLICED), "n0 p1 p0");
	cr_assert_str_eq(splice("xeiie", "EE", PY_NATIVE_ALL), "n0 n1 p1 n2 n3 n4 p0");
}

Test(pysplice, leftovers)
{
	/*
	 * More groups than loop frames (the native unwinding stopped): at the outermost end.
	 * Groups [p0] [p1 p2] [p3]: [p0] to the loop, the two others before everything.
	 */
	cr_assert_str_eq(splice("iei", "EfEE", PY_NATIVE_SPLICED), "p3 p2 p1 n0 p0 n2");
	/* More loop frames than groups (Python frames cut): the outer ones stay. */
	cr_assert_str_eq(splice("xeieiei", "fE", PY_NATIVE_SPLICED), "n0 n1 n2 n3 n4 p1 p0 n6");
	/* A last group without its entry frame (cut) is still the next loop frame's. */
	cr_assert_str_eq(splice("eie", "Eff", PY_NATIVE_SPLICED), "p2 p1 p0");
	/* No loop frame at all (its file unnamed): every group outermost. */
	cr_assert_str_eq(splice("xix", "EE", PY_NATIVE_SPLICED), "p1 p0 n0 n1 n2");
	/* No Python frame: the native stack as it is. */
	cr_assert_str_eq(splice("xei", "", PY_NATIVE_SPLICED), "n0 n1 n2");
	/* Bounded by the room given. */
	{
		struct py_native n[3] = { { 1, 1 }, { 0, 1 }, { 1, 1 } };
		struct py_frame f[2] = { { 1, 1, PY_FRAME_ENTRY }, { 2, 1, PY_FRAME_ENTRY } };
		struct py_item items[2];

		cr_assert_eq(py_splice(n, 3, f, 2, PY_NATIVE_ALL, items, 2), 2);
	}
}

Test(pysplice, the_loop_by_name)
{
	cr_assert(py_is_eval_loop("_PyEval_EvalFrameDefault"));
	cr_assert(py_is_eval_loop("_PyEval_EvalFrameDefault.cold"));
	cr_assert(!py_is_eval_loop("_PyEval_EvalFrameDefaultX"));
	cr_assert(!py_is_eval_loop("PyEval_EvalFrameEx"));
	cr_assert(!py_is_eval_loop("python3.11+0x1a85ed"));
}

/* ---- records ---- */

struct rec {
	int32_t tgid;
	uint64_t code;
	uint32_t stamp;
	int32_t first;
	uint16_t version;
	const void *name;
	uint16_t name_len;
	uint8_t name_kind;
	const void *file;
	uint16_t file_len;
	uint8_t file_kind;
	const void *lines;
	uint16_t lines_len;
	uint8_t flags;
};

static uint8_t frame_buf[1 << 16];

/* A MSG_SHIP_PYCODES payload of task 5 holding n records: its length. */
static size_t frame_of(const struct rec *r, uint32_t n)
{
	struct ship_pycodes_hdr h = { .task_id = 5, .count = n };
	size_t off = sizeof(h);

	memset(frame_buf, 0, sizeof(frame_buf));
	memcpy(frame_buf, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		struct sc_pycode *p = (struct sc_pycode *)(frame_buf + off);

		p->kind = SC_REC_PYCODE;
		p->tgid = (uint32_t)r[i].tgid;
		p->code = r[i].code;
		p->stamp = r[i].stamp;
		p->firstlineno = r[i].first;
		p->version = r[i].version;
		p->name_len = r[i].name_len;
		p->name_kind = r[i].name_kind;
		p->file_len = r[i].file_len;
		p->file_kind = r[i].file_kind;
		p->lines_len = r[i].lines_len;
		p->flags = r[i].flags;
		memcpy(p->data, r[i].name, r[i].name_len);
		memcpy(p->data + PY_NAME_MAX, r[i].file, r[i].file_len);
		memcpy(p->data + PY_NAME_MAX + PY_FILE_MAX, r[i].lines, r[i].lines_len);
		off += PYCODE_REC_BYTES(r[i].lines_len);
	}
	return off;
}

static const int32_t tgids[] = { 100, 200 };

/* 3.11: RESUME on the first line, then two units one line below. */
static const uint8_t lines311[] = { 0x80, 0x00, 0xd9, 0x04, 0x05 };

static struct rec good(uint64_t code, const char *name)
{
	return (struct rec){ .tgid = 100,
			     .code = code,
			     .stamp = 7,
			     .first = 10,
			     .version = 0x030b,
			     .name = name,
			     .name_len = (uint16_t)strlen(name),
			     .name_kind = 1,
			     .file = "/srv/app/main.py",
			     .file_len = 16,
			     .file_kind = 1,
			     .lines = lines311,
			     .lines_len = sizeof(lines311) };
}

static const char *name_of(struct pycodes *c, int32_t tgid, uint64_t code, uint32_t instr)
{
	static char buf[2048];
	struct py_frame f = { .code = code, .stamp = 7, .instr = instr };

	pycodes__name(c, tgid, &f, buf, sizeof(buf), NULL);
	return buf;
}

Test(pycodes, records_name_frames_with_their_lines)
{
	struct pycodes *c = pycodes__new(0);
	struct rec r[2] = { good(0xa0, "Worker.run"), good(0xb0, "main") };
	struct pycodes_stats st;
	struct py_frame_src src;
	struct py_frame f = { .code = 0xa0, .stamp = 7, .instr = 2 };
	const char *why = NULL;
	char buf[256];
	size_t len;

	r[1].tgid = 200;
	len = frame_of(r, 2);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, &why), 0);
	cr_assert_str_eq(name_of(c, 100, 0xa0, 0), "Worker.run (main.py:10)");
	cr_assert_str_eq(name_of(c, 100, 0xa0, 2), "Worker.run (main.py:11)");
	cr_assert_str_eq(name_of(c, 100, 0xa0, 4), "Worker.run (main.py:11)");
	/* Past the table: no line. Offset unknown: the first line. */
	cr_assert_str_eq(name_of(c, 100, 0xa0, 6), "Worker.run (main.py)");
	cr_assert_str_eq(name_of(c, 100, 0xa0, PY_FRAME_NO_INSTR | PY_FRAME_ENTRY | 4),
			 "Worker.run (main.py:10)");
	/* Another process, another stamp, another address: not this record. */
	cr_assert_str_eq(name_of(c, 200, 0xa0, 0), PY_UNKNOWN_NAME);
	cr_assert_str_eq(name_of(c, 200, 0xb0, 0), "main (main.py:10)");
	f.stamp = 8;
	cr_assert_eq(pycodes__name(c, 100, &f, buf, sizeof(buf), NULL), 0);
	cr_assert_str_eq(buf, PY_UNKNOWN_NAME);
	f.stamp = 7;
	cr_assert_eq(pycodes__name(c, 100, &f, buf, sizeof(buf), &src), 1);
	cr_assert_str_eq(src.qualname, "Worker.run");
	cr_assert_str_eq(src.file, "/srv/app/main.py");
	cr_assert_eq(src.line, 11);
	pycodes__stats(c, &st);
	cr_assert_eq(st.records, 2);
	cr_assert_eq(st.entries, 2);
	cr_assert_eq(st.unknown, 2);
	pycodes__forget_pid(c, 200);
	cr_assert_str_eq(name_of(c, 200, 0xb0, 0), PY_UNKNOWN_NAME);
	pycodes__free(c);
}

Test(pycodes, names_of_every_kind_become_utf8)
{
	struct pycodes *c = pycodes__new(0);
	/* Latin-1 "café;\n" */
	static const uint8_t latin1[] = { 'c', 'a', 'f', 0xe9, ';', '\n' };
	/* UCS-2: U+4E2D, a lone surrogate, U+0085 (a C1 control) */
	static const uint8_t ucs2[] = { 0x2d, 0x4e, 0x00, 0xd8, 0x85, 0x00 };
	/* UCS-4: U+1F600, past U+10FFFF, U+FFFE, 'x' */
	static const uint8_t ucs4[] = { 0x00, 0xf6, 0x01, 0x00, 0x00, 0x00, 0x11, 0x00,
					0xfe, 0xff, 0x00, 0x00, 'x',  0,    0,	  0 };
	/* a file name in UCS-2: "/d/é.py" */
	static const uint8_t file2[] = { '/', 0, 'd', 0, '/', 0, 0xe9, 0, '.', 0, 'p', 0, 'y', 0 };
	struct rec r[4] = { good(1, ""), good(2, ""), good(3, ""), good(4, "") };
	size_t len;

	r[0].name = latin1, r[0].name_len = sizeof(latin1);
	r[1].name = ucs2, r[1].name_len = sizeof(ucs2), r[1].name_kind = 2;
	r[2].name = ucs4, r[2].name_len = sizeof(ucs4), r[2].name_kind = 4;
	r[3].file = file2, r[3].file_len = sizeof(file2), r[3].file_kind = 2;
	r[3].name = "long", r[3].name_len = 4, r[3].flags = PY_CODE_NAME_CUT | PY_CODE_FILE_TAIL;
	len = frame_of(r, 4);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, NULL), 0);
	cr_assert_str_eq(name_of(c, 100, 1, 0), "caf\xc3\xa9__ (main.py:10)");
	cr_assert_str_eq(name_of(c, 100, 2, 0), "\xe4\xb8\xad\xef\xbf\xbd_ (main.py:10)");
	cr_assert_str_eq(name_of(c, 100, 3, 0),
			 "\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbdx (main.py:10)");
	cr_assert_str_eq(name_of(c, 100, 4, 0), "long... (\xc3\xa9.py:10)");
	pycodes__free(c);
}

Test(pycodes, unreadable_strings_are_said_so)
{
	struct pycodes *c = pycodes__new(0);
	struct rec r = good(1, "");
	struct py_frame_src src;
	struct py_frame f = { .code = 1, .stamp = 7 };
	char buf[128];

	r.name_kind = 0, r.name_len = 0, r.file_kind = 0, r.file_len = 0;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, frame_of(&r, 1), NULL), 0);
	cr_assert_eq(pycodes__name(c, 100, &f, buf, sizeof(buf), &src), 1);
	cr_assert_str_eq(buf, PY_UNKNOWN_NAME " (?:10)");
	cr_assert_null(src.file);
	pycodes__free(c);
}

/* Every bad frame is refused whole: no record of it kept, counted, never read past. */
Test(pycodes, bad_frames_are_refused_whole)
{
	struct pycodes *c = pycodes__new(0);
	struct rec base[2] = { good(0xa0, "ok"), good(0xb0, "bad") };
	struct pycodes_stats st;
	const char *why;
	size_t len;
	int bad = 0;

	for (int k = 0; k < 12; k++) {
		struct rec r[2] = { base[0], base[1] };
		uint64_t task = 5;

		switch (k) {
		case 0:
			r[1].name_kind = 3;
			break;
		case 1:
			r[1].name_kind = 2, r[1].name_len = 3; /* not whole characters */
			break;
		case 2:
			r[1].name_kind = 0; /* unreadable, yet bytes */
			break;
		case 3:
			r[1].file_kind = 4, r[1].file_len = 6;
			break;
		case 4:
			r[1].tgid = 300; /* not a target */
			break;
		case 5:
			r[1].stamp = 0;
			break;
		case 6:
			r[1].version = 0x0307;
			break;
		case 7:
			r[1].version = 0x030e;
			break;
		case 8:
			task = 6;
			break;
		default:
			break;
		}
		len = frame_of(r, 2);
		if (k == 9)
			((struct sc_pycode *)(frame_buf + sizeof(struct ship_pycodes_hdr) +
					      PYCODE_REC_BYTES(r[0].lines_len)))
				->lines_len = PY_LINES_MAX + 1;
		if (k == 10)
			((struct sc_pycode *)(frame_buf + sizeof(struct ship_pycodes_hdr)))->kind =
				SC_REC_SNAP;
		if (k == 11)
			len += 8; /* bytes after the records */
		why = NULL;
		cr_assert_eq(pycodes__add_frame(c, task, tgids, 2, frame_buf, len, &why), -EBADMSG,
			     "case %d taken", k);
		cr_assert_not_null(why);
		bad++;
		cr_assert_str_eq(name_of(c, 100, 0xa0, 0), PY_UNKNOWN_NAME, "case %d", k);
	}
	/* Cut anywhere: refused. */
	len = frame_of(base, 2);
	for (size_t cut = 0; cut < len; cut += 8) {
		uint8_t *copy = malloc(cut ? cut : 1);

		memcpy(copy, frame_buf, cut);
		cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, copy, cut, NULL), -EBADMSG,
			     "cut at %zu", cut);
		free(copy);
		bad++;
	}
	pycodes__stats(c, &st);
	cr_assert_eq(st.bad_frames, (uint64_t)bad);
	cr_assert_eq(st.records, 0);
	/* The whole one is taken. */
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, NULL), 0);
	cr_assert_str_eq(name_of(c, 100, 0xb0, 2), "bad (main.py:11)");
	pycodes__free(c);
}

Test(pycodes, the_budget_evicts_the_least_recently_used)
{
	struct pycodes *c = pycodes__new(4096);
	struct pycodes_stats st;
	char name[32];

	for (uint64_t i = 0; i < 100; i++) {
		struct rec r;

		snprintf(name, sizeof(name), "f%llu", (unsigned long long)i);
		r = good(0x1000 + i, name);
		cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, frame_of(&r, 1), NULL),
			     0);
		/* The first stays the most recently used. */
		cr_assert_str_eq(name_of(c, 100, 0x1000, 0), "f0 (main.py:10)");
	}
	pycodes__stats(c, &st);
	cr_assert_leq(st.bytes, 4096);
	cr_assert_gt(st.evicted, 50);
	cr_assert_eq(st.entries + st.evicted, 100);
	cr_assert_str_eq(name_of(c, 100, 0x1001, 0), PY_UNKNOWN_NAME);
	cr_assert_str_eq(name_of(c, 100, 0x1000 + 99, 0), "f99 (main.py:10)");
	pycodes__free(c);
}

Test(pyfind, interpreter_names)
{
	unsigned minor = 0;

	cr_assert_eq(pyfind__name("libpython3.11.so.1.0", &minor), 1);
	cr_assert_eq(minor, 11);
	cr_assert_eq(pyfind__name("libpython3.8d.so", &minor), 1);
	cr_assert_eq(minor, 8);
	cr_assert_eq(pyfind__name("python3.13", &minor), 2);
	cr_assert_eq(minor, 13);
	cr_assert_eq(pyfind__name("python3.9d", &minor), 2);
	cr_assert_eq(pyfind__name("python3.7", &minor), 0);
	cr_assert_eq(pyfind__name("python3.14", &minor), 0);
	cr_assert_eq(pyfind__name("python3", &minor), 0);
	cr_assert_eq(pyfind__name("python3.11-config", &minor), 0);
	cr_assert_eq(pyfind__name("libpython3.11.a", &minor), 0);
	cr_assert_eq(pyfind__name("libpython3.11.sox", &minor), 0);
	cr_assert_eq(pyfind__name("node", &minor), 4);
	cr_assert_eq(pyfind__name("libnode.so.115", &minor), 4);
	cr_assert_eq(pyfind__name("nodes", &minor), 0);
	cr_assert_eq(pyfind__name("python2.7", &minor), 0);
}

/* ---- a snapshot of this process, spliced ---- */

#include "tests/unit/self_snapshot.h"

/* Named as CPython's loop, in this file: the "interpreter" of this test. */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(int depth);

__attribute__((noinline)) void py_glue_frame(int depth)
{
	_PyEval_EvalFrameDefault(depth);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void _PyEval_EvalFrameDefault(int depth)
{
	if (depth)
		py_glue_frame(depth - 1);
	else
		take_snapshot();
	__asm__ volatile("" ::: "memory");
}

static size_t snapshot_payload(uint8_t *buf, const struct py_frame *py, uint32_t npy)
{
	struct ship_snapshots_hdr h = { .task_id = 5, .count = 1 };
	struct ship_snapshot s = { .tgid = getpid(),
				   .stack_len = (uint32_t)snap_len,
				   .value = 3,
				   .ip = snap_regs.ip,
				   .sp = snap_regs.sp,
				   .bp = snap_regs.bp,
				   .npy = npy,
				   .pystatus = PY_ST_OK };
	size_t off = 0;

	memcpy(buf + off, &h, sizeof(h));
	off += sizeof(h);
	memcpy(buf + off, &s, sizeof(s));
	off += sizeof(s);
	memcpy(buf + off, py, npy * sizeof(*py));
	off += npy * sizeof(*py);
	memcpy(buf + off, snap_stack, snap_len);
	off += (snap_len + 7) & ~(size_t)7;
	return off;
}

static char *folded_of(uint32_t mode)
{
	static uint8_t buf[1 << 17];
	struct symbolizer *sym = symbolizer__new(&fd_opener_direct, 0);
	struct unwinder *u = unwinder__new(sym);
	struct task_spec spec = {
		.task_id = 5, .type = TASK_ON_CPU, .unwind = UNWIND_DWARF, .npids = 1, .flags = mode
	};
	struct ship_task *t = ship_task__new(5);
	int32_t me = getpid();
	struct rec r[3] = { good(0xa0, "inner"), good(0xb0, "middle"), good(0xc0, "outer") };
	/* innermost first: inner and middle ran in the inner loop call, outer in the outer */
	struct py_frame py[3] = { { 0xa0, 7, 2 },
				  { 0xb0, 7, 0 | PY_FRAME_ENTRY },
				  { 0xc0, 7, 4 | PY_FRAME_ENTRY } };
	struct msg_output_written w;
	char *out = NULL;
	size_t olen = 0, len;
	FILE *f;

	cr_assert(sym && u && t);
	spec.pids[0] = me;
	for (int i = 0; i < 3; i++)
		r[i].tgid = me;
	_PyEval_EvalFrameDefault(1);
	cr_assert_eq(symbolizer__load_pid(sym, me), 0);
	cr_assert_eq(unwinder__load_pid(u, me), 0);
	cr_assert_eq(ship_task__begin(t, &spec, sym), 0);
	len = frame_of(r, 3);
	cr_assert_eq(ship_task__pycodes(t, frame_buf, len), 0);
	len = snapshot_payload(buf, py, 3);
	cr_assert_eq(ship_task__snapshots(t, buf, len, sym, u), 0);
	t->format = FORMAT_FOLDED;
	f = open_memstream(&out, &olen);
	cr_assert_eq(ship_task__write(t, f, &w), 0);
	fclose(f);
	ship_task__free(t);
	unwinder__free(u);
	symbolizer__free(sym);
	return out;
}

Test(pysplice, a_snapshot_of_this_process_is_spliced_and_named)
{
	char *spliced = folded_of(0), *all = folded_of(TASK_PYTHON_NATIVE_ALL);

	cr_log_info("spliced: %s", spliced);
	cr_log_info("all: %s", all);
	cr_assert_not_null(strstr(spliced, ";outer (main.py:11);middle (main.py:10);inner "
					   "(main.py:11);take_snapshot 3"),
			   "%s", spliced);
	cr_assert_null(strstr(spliced, "_PyEval_EvalFrameDefault"), "%s", spliced);
	cr_assert_null(strstr(spliced, "py_glue_frame"), "hidden: %s", spliced);
	cr_assert_not_null(strstr(all, ";_PyEval_EvalFrameDefault;outer (main.py:11);py_glue_frame;"
				       "_PyEval_EvalFrameDefault;middle (main.py:10);inner "
				       "(main.py:11);take_snapshot 3"),
			   "%s", all);
	free(spliced);
	free(all);
}

/* ---- JavaScript (V8) frames: records, names and the splice ---- */

/* A MSG_SHIP_PYCODES payload of task 5 holding n V8 function records: its length. */
static size_t v8_frame_of(const struct sc_v8func *r, uint32_t n)
{
	struct ship_pycodes_hdr h = { .task_id = 5, .count = n };
	size_t off = sizeof(h);

	memset(frame_buf, 0, sizeof(frame_buf));
	memcpy(frame_buf, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		size_t len = V8_REC_LEN(&r[i]);

		memcpy(frame_buf + off, &r[i], len);
		off += (len + 7) & ~(size_t)7;
	}
	return off;
}

static struct sc_v8func v8rec(uint64_t sfi, const char *name, const char *inferred,
			      const char *file)
{
	struct sc_v8func r = { .kind = SC_REC_V8FUNC, .tgid = 100, .sfi = sfi, .stamp = 9 };

	r.name_len = (uint16_t)strlen(name);
	r.name_kind = r.name_len ? 1 : 0;
	memcpy(r.data, name, r.name_len);
	r.inferred_len = (uint16_t)strlen(inferred);
	r.inferred_kind = r.inferred_len ? 1 : 0;
	memcpy(r.data + V8_NAME_MAX, inferred, r.inferred_len);
	r.file_len = (uint16_t)strlen(file);
	r.file_kind = r.file_len ? 1 : 0;
	memcpy(r.data + 2 * V8_NAME_MAX, file, r.file_len);
	return r;
}

static const char *v8_name_of(struct pycodes *c, uint64_t sfi, uint32_t stamp)
{
	static char buf[1024];
	struct py_frame f = { .code = sfi, .stamp = stamp };

	v8funcs__name(c, 100, &f, buf, sizeof(buf), NULL);
	return buf;
}

/* The name of a frame of sfi at bytecode offset + 1 off1 (0: none), and why in *why. */
static const char *v8_name_at(struct pycodes *c, uint64_t sfi, uint32_t off1, uint32_t *why)
{
	static char buf[1024];
	struct py_frame f = { .code = sfi | (uint64_t)off1 << V8_FRAME_SFI_BITS, .stamp = 9 };
	struct py_frame_src src;

	v8funcs__name(c, 100, &f, buf, sizeof(buf), &src);
	*why = src.v8_why;
	return buf;
}

/*
 * A real table: node 20's for probe.js's cold(n) (V8 11.3, read from a running node's
 * BytecodeArray), whose source starts at script offset 190 on line 9; every entry is on line 9
 * but for the ones given below.
 */
static const uint8_t cold_tab[] = { 0x01, 0xfc, 0x05, 0x02, 0x38, 0x04, 0x40, 0x04,
				    0x14, 0x05, 0x00, 0x0a, 0x28, 0x05, 0x14, 0x0e,
				    0x23, 0x0b, 0x5f, 0x08, 0x90, 0x01, 0x04, 0x24 };

Test(v8pos, a_real_table_gives_the_last_position_at_or_before_the_offset)
{
	/* V8's entries: (0, 190) (1, 204) (3, 220) (5, 225) (7, 225) (12, 235) (14, 240)
	 * (21, 231) (26, 207) (30, 243) (32, 252). */
	static const uint32_t off[] = { 0, 1, 2, 3, 12, 13, 21, 25, 26, 31, 32, 1000 };
	static const uint32_t want[] = {
		190, 204, 204, 220, 235, 235, 231, 231, 207, 243, 252, 252
	};
	uint32_t pos;

	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		cr_assert(v8pos__find(cold_tab, sizeof(cold_tab), off[i], &pos), "offset %u",
			  off[i]);
		cr_assert_eq(pos, want[i], "offset %u: %u, not %u", off[i], pos, want[i]);
	}
}

Test(v8pos, hostile_tables_give_no_position)
{
	/* zigzag: 2k is k, 2k + 1 is -(k + 1); a position is (script offset + 1) << 1. */
	static const uint8_t external[] = { 0x00, 0x06 }; /* position 3: bit 0 set */
	static const uint8_t inlined[] = { 0x00, 0x84, 0x80, 0x80, 0x80, 0x10 }; /* id 0 + 1 */
	static const uint8_t none[] = { 0x00, 0x00 };		 /* script offset field 0 */
	static const uint8_t negative[] = { 0x00, 0x03 };	 /* position -2 */
	static const uint8_t cut[] = { 0x00, 0x08, 0x02, 0x88 }; /* a number's last byte gone */
	static const uint8_t later[] = { 0x0a, 0x08 };		 /* offset 5: script offset 1 */
	static const uint8_t code_big[] = { 0xfe, 0xff, 0xff, 0xff, 0x1f, 0x08 };
	uint8_t long_num[16];
	uint32_t pos = 77;

	cr_assert_not(v8pos__find(cold_tab, 0, 0, &pos));
	cr_assert_not(v8pos__find(NULL, 4, 0, &pos));
	cr_assert_not(v8pos__find(external, sizeof(external), 0, &pos));
	cr_assert_not(v8pos__find(inlined, sizeof(inlined), 0, &pos));
	cr_assert_not(v8pos__find(none, sizeof(none), 0, &pos));
	cr_assert_not(v8pos__find(negative, sizeof(negative), 0, &pos));
	cr_assert_not(v8pos__find(cut, sizeof(cut), 100, &pos));
	cr_assert_not(v8pos__find(later, sizeof(later), 4, &pos));
	cr_assert(v8pos__find(later, sizeof(later), 5, &pos) && pos == 1);
	cr_assert_not(v8pos__find(code_big, sizeof(code_big), 0, &pos));
	/* More than 64 bits of continuation bytes. */
	memset(long_num, 0xff, sizeof(long_num));
	cr_assert_not(v8pos__find(long_num, sizeof(long_num), 0, &pos));
	/* Every cut of the real table decodes no further than its bytes: positions it gives are
	 * the whole table's at the same offset or an earlier entry's. */
	for (size_t n = 0; n < sizeof(cold_tab); n++)
		for (uint32_t off = 0; off < 40; off++)
			if (v8pos__find(cold_tab, n, off, &pos))
				cr_assert(pos >= 190 && pos <= 252);
	cr_assert_eq(pos == 77, false);
}

Test(v8pos, a_position_is_a_line_of_the_source_sent)
{
	static const char src[] = "(n) {\n\ta();\n\n\tb();\n}";
	int32_t line = 0;

	cr_assert(v8pos__line((const uint8_t *)src, strlen(src), 100, 7, 100, &line) && line == 7);
	cr_assert(v8pos__line((const uint8_t *)src, strlen(src), 100, 7, 107, &line) && line == 8);
	cr_assert(v8pos__line((const uint8_t *)src, strlen(src), 100, 7, 114, &line) && line == 10);
	/* At the source's end, not past it. */
	cr_assert(v8pos__line((const uint8_t *)src, strlen(src), 100, 7, 100 + strlen(src), &line));
	cr_assert_not(v8pos__line((const uint8_t *)src, strlen(src), 100, 7, 101 + strlen(src),
				  &line));
	cr_assert_not(v8pos__line((const uint8_t *)src, strlen(src), 100, 7, 99, &line));
	cr_assert_not(v8pos__line((const uint8_t *)src, strlen(src), 100, 0, 107, &line));
	cr_assert_not(v8pos__line(NULL, 4, 100, 7, 101, &line));
	cr_assert_not(v8pos__line((const uint8_t *)src, strlen(src), UINT32_MAX, 1, 5, &line));
}

/*
 * probe.js's hot(n) under node --no-opt: its baseline Code's bytecode offset table and its
 * bytecodes, read from a running node 20 (its Code's instructions are 604 bytes; the table's
 * 35 entries end at 602, its 34 bytecodes at the array's 69 bytes).
 */
static const uint8_t hot_bot[] = {
	0x17, 0x0a, 0x04, 0x08, 0x2f, 0x1c, 0x11, 0x04, 0x1d, 0x04, 0x18, 0x07,
	0x04, 0x08, 0x2f, 0x04, 0x3a, 0x02, 0x04, 0x04, 0x0e, 0x1b, 0x04, 0x14,
	0x04, 0x04, 0x0e, 0x0c, 0x04, 0x04, 0x0a, 0x04, 0x7c, 0x04, 0x11,
};
static const uint8_t hot_bc[] = {
	0x0d, 0x01, 0xc4, 0x16, 0x02, 0xaa, 0x00, 0x97, 0x1a, 0x21, 0x01, 0x00, 0xc2, 0x69,
	0xf8, 0xfa, 0x00, 0x02, 0xc2, 0x2d, 0xf8, 0x02, 0x04, 0x12, 0xc2, 0x16, 0x02, 0xaa,
	0x00, 0x0b, 0xf8, 0x25, 0x02, 0x0c, 0xc3, 0x0b, 0x03, 0x6d, 0xf9, 0x06, 0x99, 0x1a,
	0x0b, 0xfa, 0x46, 0x1f, 0x09, 0xc2, 0x0b, 0xf9, 0x38, 0xf8, 0x08, 0x4a, 0x00, 0x07,
	0xc4, 0x0b, 0xf9, 0x50, 0x0a, 0xc3, 0x89, 0x1b, 0x00, 0x0b, 0x0b, 0xfa, 0xa9,
};

Test(v8pos, a_baseline_pc_is_the_bytecode_v8_says)
{
	/* (bytecode, pc start, pc end] as V8's BytecodeOffsetIterator walks them. */
	static const uint32_t pc[] = { 24, 33, 34, 37, 38, 92, 93, 326, 327, 580, 581, 582, 602 };
	static const uint32_t want[] = { 0, 0, 2, 2, 3, 5, 7, 31, 33, 62, 62, 66, 68 };
	uint32_t off = 0;

	for (size_t i = 0; i < sizeof(pc) / sizeof(pc[0]); i++) {
		cr_assert(v8bl__bytecode(hot_bot, sizeof(hot_bot), hot_bc, sizeof(hot_bc), pc[i],
					 &off),
			  "pc %u", pc[i]);
		cr_assert_eq(off, want[i], "pc %u: bytecode %u, not %u", pc[i], off, want[i]);
	}
	/* The prologue (up to 23) and past the last bytecode's code: none. */
	cr_assert_not(v8bl__bytecode(hot_bot, sizeof(hot_bot), hot_bc, sizeof(hot_bc), 0, &off));
	cr_assert_not(v8bl__bytecode(hot_bot, sizeof(hot_bot), hot_bc, sizeof(hot_bc), 23, &off));
	cr_assert_not(v8bl__bytecode(hot_bot, sizeof(hot_bot), hot_bc, sizeof(hot_bc), 603, &off));
}

Test(v8pos, hostile_baseline_tables_give_no_bytecode)
{
	static const uint8_t wide_last[] = { 0x0b, 0x00 }; /* a prefix as the last byte */
	static const uint8_t two_prefixes[] = { 0x00, 0x01, 0x0b };
	static const uint8_t past_last[] = { 0x0b, 0xff }; /* 0x0b takes 0xff as its operand */
	static const uint8_t tab2[] = { 0x01, 0x01, 0x01 };
	static const uint8_t long_num[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	uint32_t off = 0;

	cr_assert_not(v8bl__bytecode(NULL, 4, hot_bc, sizeof(hot_bc), 30, &off));
	cr_assert_not(v8bl__bytecode(hot_bot, sizeof(hot_bot), NULL, 4, 30, &off));
	cr_assert_not(v8bl__bytecode(hot_bot, 0, hot_bc, sizeof(hot_bc), 30, &off));
	/* The table cut inside a number, or before the pc: none. */
	cr_assert_not(v8bl__bytecode(long_num, sizeof(long_num), hot_bc, sizeof(hot_bc), 1, &off));
	cr_assert_not(v8bl__bytecode(hot_bot, 5, hot_bc, sizeof(hot_bc), 300, &off));
	/* The bytecodes cut: none past them. */
	cr_assert_not(v8bl__bytecode(hot_bot, sizeof(hot_bot), hot_bc, 10, 300, &off));
	cr_assert_not(v8bl__bytecode(tab2, sizeof(tab2), wide_last + 1, 1, 2, &off));
	cr_assert(v8bl__bytecode(tab2, sizeof(tab2), wide_last, sizeof(wide_last), 2, &off) &&
		  off == 0);
	cr_assert_not(v8bl__bytecode(tab2, sizeof(tab2), two_prefixes, sizeof(two_prefixes), 2,
				     &off));
	cr_assert(v8bl__bytecode(tab2, sizeof(tab2), past_last, sizeof(past_last), 2, &off) &&
		  off == 0);
	cr_assert_not(v8bl__bytecode(tab2, sizeof(tab2), past_last, sizeof(past_last), 3, &off));
	/* Every cut of the real table and bytecodes gives one of the real bytecodes or none. */
	for (size_t t = 0; t <= sizeof(hot_bot); t++)
		for (size_t b = 0; b <= sizeof(hot_bc); b += 7)
			for (uint32_t p = 0; p < 640; p += 13)
				if (v8bl__bytecode(hot_bot, t, hot_bc, b, p, &off))
					cr_assert(off < b);
}

Test(v8funcs, frames_are_named_with_the_line_they_run)
{
	static const char src[] = "(n) {\n\tfor (;;) a();\n\tfor (;;) b();\n}";
	/* Bytecodes 0, 4 and 8 at script offsets 40, 40 + 15 and 40 + 30. */
	static const uint8_t tab[] = { 0x00, 0xa4, 0x01, 0x08, 0x40, 0x08, 0x3c };
	struct pycodes *c = pycodes__new(0);
	struct sc_v8func r[2] = { v8rec(0x11, "alpha", "", "/srv/app/lines.js"),
				  v8rec(0x21, "beta", "", "/srv/app/lines.js") };
	const char *why = NULL;
	uint32_t w;

	r[0].line = 3;
	r[0].start = 40;
	r[0].pos_len = sizeof(tab);
	r[0].src_len = (uint16_t)strlen(src);
	memcpy(r[0].data + V8_STRINGS, tab, sizeof(tab));
	memcpy(r[0].data + V8_STRINGS + sizeof(tab), src, strlen(src));
	/* beta: no table (V8 had built none), a source. */
	r[1].line = 12;
	r[1].start = 400;
	r[1].src_len = (uint16_t)strlen(src);
	r[1].flags = V8_F_NO_POS;
	memcpy(r[1].data + V8_STRINGS, src, strlen(src));
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why), 0,
		     "%s", why);
	cr_assert_str_eq(v8_name_at(c, 0x11, 1, &w), "alpha (lines.js:3)");
	cr_assert_eq(w, V8_LINE_OWN);
	cr_assert_str_eq(v8_name_at(c, 0x11, 5, &w), "alpha (lines.js:4)");
	cr_assert_str_eq(v8_name_at(c, 0x11, 8, &w), "alpha (lines.js:4)");
	cr_assert_str_eq(v8_name_at(c, 0x11, 9, &w), "alpha (lines.js:5)");
	cr_assert_str_eq(v8_name_at(c, 0x11, 0xffff, &w), "alpha (lines.js:5)");
	cr_assert_eq(w, V8_LINE_OWN);
	/* No offset (a baseline or optimized frame): the first line, said why. */
	cr_assert_str_eq(v8_name_at(c, 0x11, 0, &w), "alpha (lines.js:3)");
	cr_assert_eq(w, V8_LINE_NO_OFFSET);
	cr_assert_str_eq(v8_name_at(c, 0x21, 9, &w), "beta (lines.js:12)");
	cr_assert_eq(w, V8_LINE_NO_TABLE);
	pycodes__free(c);

	/* A position outside the source sent: the first line. */
	c = pycodes__new(0);
	r[0].src_len = 10;
	memcpy(r[0].data + V8_STRINGS + sizeof(tab), src, 10);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 1), &why), 0,
		     "%s", why);
	cr_assert_str_eq(v8_name_at(c, 0x11, 9, &w), "alpha (lines.js:3)");
	cr_assert_eq(w, V8_LINE_NOT_FOUND);
	pycodes__free(c);
}

Test(v8funcs, bad_table_or_source_lengths_are_refused_whole)
{
	struct pycodes *c = pycodes__new(0);
	struct sc_v8func r[2] = { v8rec(0x11, "alpha", "", "a.js"), v8rec(0x21, "b", "", "b.js") };
	const char *why = NULL;
	size_t len;

	r[1].pos_len = V8_POS_MAX + 1;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 1), &why), 0);
	len = v8_frame_of(r, 2);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, &why), -EBADMSG);
	r[1].pos_len = 0;
	r[1].src_len = V8_SRC_HEAD + 1;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, &why), -EBADMSG);
	/* A source that would run past 2^31. */
	r[1].src_len = 16;
	r[1].start = INT32_MAX - 8;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why),
		     -EBADMSG);
	/* A table longer than the frame holds: cut short. */
	r[1].start = 0;
	r[1].src_len = 0;
	r[1].pos_len = 64;
	len = v8_frame_of(r, 2);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len - 8, &why), -EBADMSG);
	cr_assert_str_eq(why, "a record cut short");
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, &why), 0);
	pycodes__free(c);
}

Test(v8funcs, records_name_frames)
{
	struct pycodes *c = pycodes__new(0);
	struct sc_v8func r[4] = { v8rec(0x11, "alpha", "", "/srv/app/split.js"),
				  v8rec(0x21, "", "Foo.bar", "/srv/app/split.js"),
				  v8rec(0x31, "", "", "node:internal/main/run_main_module"),
				  v8rec(0x41, "f12", "", "") };
	const char *why = NULL;

	r[0].line = 9;
	r[2].line = 3;
	r[3].line = 2; /* no script name: no line shown */
	/* Two-byte (UTF-16) name: "h\u00e9" */
	r[3].name_kind = 2;
	r[3].name_len = 4;
	memcpy(r[3].data, "h\0\xe9\0", 4);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 4), &why), 0,
		     "%s", why);
	cr_assert_str_eq(v8_name_of(c, 0x11, 9), "alpha (split.js:9)");
	cr_assert_str_eq(v8_name_of(c, 0x21, 9), "Foo.bar (split.js)");
	cr_assert_str_eq(v8_name_of(c, 0x31, 9),
			 "(anonymous) (node:internal/main/run_main_module:3)");
	cr_assert_str_eq(v8_name_of(c, 0x41, 9), "h_");
	/* Another stamp: moved or another function at the address. */
	cr_assert_str_eq(v8_name_of(c, 0x11, 10), V8_UNKNOWN_NAME);
	pycodes__free(c);
}

Test(v8funcs, bad_records_are_refused_whole)
{
	struct pycodes *c = pycodes__new(0);
	struct sc_v8func r[2] = { v8rec(0x11, "alpha", "", "a.js"), v8rec(0x21, "b", "", "b.js") };
	const char *why = NULL;
	size_t len;

	r[1].name_kind = 3;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why),
		     -EBADMSG);
	cr_assert_str_eq(v8_name_of(c, 0x11, 9), V8_UNKNOWN_NAME);
	r[1] = v8rec(0x21, "b", "", "b.js");
	r[1].name_kind = 2; /* an odd byte count of two-byte characters */
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why),
		     -EBADMSG);
	r[1] = v8rec(0x21, "b", "", "b.js");
	r[1].file_len = V8_FILE_MAX + 1;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why),
		     -EBADMSG);
	r[1] = v8rec(0x21, "b", "", "b.js");
	r[1].tgid = 300;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why),
		     -EBADMSG);
	r[1] = v8rec(0x21, "b", "", "b.js");
	r[1].stamp = 0;
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, v8_frame_of(r, 2), &why),
		     -EBADMSG);
	/* Cut short. */
	r[1] = v8rec(0x21, "b", "", "b.js");
	len = v8_frame_of(r, 2);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len - 8, &why), -EBADMSG);
	cr_assert_eq(pycodes__add_frame(c, 5, tgids, 2, frame_buf, len, &why), 0);
	cr_assert_str_eq(v8_name_of(c, 0x21, 9), "b (b.js)");
	pycodes__free(c);
}

/*
 * ips: native pcs innermost first; js: the JavaScript frames' pcs innermost first. Returns the
 * spliced stack outermost first: "nK" the name of native frame K (outermost first), "jK" JS
 * frame K.
 */
static char *v8_splice_of(const uint64_t *ips, size_t nn, const uint32_t *js, size_t nj)
{
	struct py_frame f[16];
	struct py_item items[64];
	static char out[512];
	size_t k, o = 0;

	for (size_t i = 0; i < nj; i++)
		f[i] = (struct py_frame){ .code = 0x100 + i, .stamp = 1, .instr = js[i] };
	k = v8_splice(ips, nn, f, nj, items, 64);
	out[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		cr_assert((items[i].native < 0) != (items[i].py < 0));
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%c%d", i ? " " : "",
				      items[i].native >= 0 ? 'n' : 'j',
				      items[i].native >= 0 ? items[i].native : items[i].py);
	}
	return out;
}

Test(v8splice, frames_take_the_native_frames_at_their_pcs)
{
	/* Innermost first: a C++ leaf, JIT f, trampoline g, JSEntry, main. */
	static const uint64_t ips[] = { 0x1000, 0x7f0000002000, 0x3000, 0x4000, 0x5000 };
	static const uint32_t both[] = { 0x2000, 0x3000 };
	static const uint32_t lost[] = { 0x2000, 0x9999, 0x3000 };
	static const uint32_t none[] = { 0x8888 };

	/* names outermost first: n0 main, n1 JSEntry, n2 g's native, n3 f's native, n4 leaf */
	cr_assert_str_eq(v8_splice_of(ips, 5, both, 2), "n0 n1 j1 j0 n4");
	/* A frame the unwinding did not meet: next to its callee, callers kept in order. */
	cr_assert_str_eq(v8_splice_of(ips, 5, lost, 3), "n0 n1 j2 j1 j0 n4");
	/* None met (the unwinding stopped short): the JavaScript frames outermost. */
	cr_assert_str_eq(v8_splice_of(ips, 5, none, 1), "j0 n0 n1 n2 n3 n4");
	cr_assert_str_eq(v8_splice_of(ips, 5, NULL, 0), "n0 n1 n2 n3 n4");
}
