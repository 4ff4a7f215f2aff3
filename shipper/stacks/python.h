/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side (no privileges): Python frames. The worker's programs read a CPython thread's
 * frames in the target (bpf/python.bpf.h) and send, per frame, the code object's address, a
 * stamp and the bytecode offset (common/pyframes.h); each code object met for the first time
 * in a process comes once as a record with its names and line table (MSG_SHIP_PYCODES), ahead
 * of the snapshots that use it. Here: those records, checked and converted to UTF-8 and kept
 * in a cache under a byte budget; line numbers computed from a line table exactly as the
 * target's CPython computes them (PyCode_Addr2Line); and the splice of a snapshot's Python
 * frames into its native stack, at the frames of the evaluation loop's C calls.
 *
 * Every byte of a record after its kind and tgid is the target's: lengths and kinds are
 * checked, strings converted with invalid characters replaced, line tables decoded with every
 * read bounded. The shipper never reads a target's memory (policy/README.md, "Python frames").
 */
#ifndef ROVER_SHIPPER_PYTHON_H
#define ROVER_SHIPPER_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jvmframes.h"
#include "common/msg.h"
#include "common/pyframes.h"

/*
 * Bytes of code records kept (names, file names and line tables, as converted), over every
 * process: a record takes 100 bytes to 5 KiB, so some thousands of code objects at least.
 * Least recently used go first (counted); a frame whose record went is named PY_UNKNOWN_NAME.
 */
#define PYCODES_CACHE_BYTES (16u << 20)
/* A frame whose code object's record never came or was evicted: never a guessed name. */
#define PY_UNKNOWN_NAME "<python code>"
/* The C function of CPython's evaluation loop, 3.8 to 3.13: where Python frames are spliced. */
#define PY_EVAL_LOOP "_PyEval_EvalFrameDefault"

/* The bytes of a record of lines_len bytes of line table in a frame, padding included. */
#define PYCODE_REC_BYTES(lines_len)                                                            \
	((offsetof(struct sc_pycode, data) + PY_NAME_MAX + PY_FILE_MAX + (size_t)(lines_len) + \
	  7) &                                                                                 \
	 ~(size_t)7)

/*
 * The line of byte offset addrq in a code object of CPython version (0x030b for 3.11) whose
 * line table is tab (co_lnotab before 3.10, co_linetable after) and first line firstlineno:
 * what PyCode_Addr2Line returns. true with *ret_line, false when the table gives no line there
 * (an instruction of none, an offset past a cut table, a malformed table, another version).
 */
bool pylines__addr2line(uint16_t version, const uint8_t *tab, size_t len, int32_t firstlineno,
			uint32_t addrq, int32_t *ret_line);

/*
 * A string of a record as UTF-8 into out (cap bytes, NUL included; 4 * PY_NAME_MAX + 1 always
 * suffice): len bytes of kind 1 (Latin-1), 2 (UCS-2) or 4 (UCS-4) characters. Code points no
 * UTF-8 can carry (surrogates, past U+10FFFF, U+FFFE/U+FFFF) become U+FFFD; control characters
 * and ';' (the folded format's separator) become '_', as the folded writer does to native names.
 * Returns the bytes written (NUL excluded), or -EINVAL for a kind or length that is not one.
 */
int pystr__utf8(const uint8_t *src, size_t len, unsigned kind, char *out, size_t cap);

struct pycodes;

struct pycodes_stats {
	uint64_t records;    /* records taken */
	uint64_t bad_frames; /* MSG_SHIP_PYCODES frames refused whole */
	uint64_t evicted;    /* records evicted for the budget */
	uint64_t lookups;    /* frames named */
	uint64_t unknown;    /* of which with no record: PY_UNKNOWN_NAME */
	uint64_t entries;    /* kept now */
	uint64_t bytes;	     /* charged now */
	uint32_t bad_utf8;   /* invalid sequences in Java names (jutf8__decode), replaced */
};

/* budget_bytes: 0 for PYCODES_CACHE_BYTES. NULL + errno. */
struct pycodes *pycodes__new(size_t budget_bytes);
void pycodes__free(struct pycodes *c);

/*
 * A MSG_SHIP_PYCODES payload (len bytes at buf) of task task_id, whose records may only be of
 * the processes tgids[ntgids]. Every record is checked before any is kept: 0, or -EBADMSG with
 * *ret_why (a static string) when the frame is refused whole, -ENOMEM.
 */
int pycodes__add_frame(struct pycodes *c, uint64_t task_id, const int32_t *tgids, uint32_t ntgids,
		       const void *buf, size_t len, const char **ret_why);

/* Drops every record of tgid (its process ended: the pid may be reused). */
void pycodes__forget_pid(struct pycodes *c, int32_t tgid);

/* Where a Python frame is, for pprof: valid until the cache changes. */
struct py_frame_src {
	const char *qualname; /* PY_UNKNOWN_NAME without a record */
	const char *file;     /* NULL without a record */
	int32_t line;	      /* 0: none */
	uint32_t v8_why;      /* a JavaScript frame: enum v8_line_why */
};

/* Why a JavaScript frame is named with the line its function starts on, not its own. */
enum v8_line_why {
	V8_LINE_OWN = 0,   /* named with its own line */
	V8_LINE_NO_OFFSET, /* no offset: an optimized frame (or one the walk could not tell) */
	V8_LINE_NO_TABLE,  /* the record has no position table (or no baseline table) */
	V8_LINE_NOT_FOUND, /* the table or the source sent gives none at its offset */
	V8_LINE_N,
};

/*
 * The name of frame f of process tgid into buf: "qualname (file.py:LINE)" (file's base name;
 * "qualname (file.py)" where the table gives no line), PY_UNKNOWN_NAME without a record. The
 * record becomes the most recently used. 1 when named from a record, 0 for PY_UNKNOWN_NAME.
 */
int pycodes__name(struct pycodes *c, int32_t tgid, const struct py_frame *f, char *buf, size_t len,
		  struct py_frame_src *ret_src);

void pycodes__stats(const struct pycodes *c, struct pycodes_stats *ret);

/* ---- the splice ---- */

/* One native frame of a user stack, outermost first, as the splice sees it. */
struct py_native {
	uint8_t eval;	/* a frame of the evaluation loop's C function (PY_EVAL_LOOP) */
	uint8_t interp; /* in the file of the innermost such frame: the interpreter's */
	uint8_t jit;	/* in no file's executable mapping: code a JIT made (Java's code cache) */
};

/* One frame of a spliced stack: a native frame's index, or a Python frame's (the other -1). */
struct py_item {
	int16_t native;
	int16_t py;
};

enum py_native_mode {
	PY_NATIVE_SPLICED = 0, /* each Python group replaces its evaluation loop frame; the
				* interpreter's frames between spliced ones are hidden */
	PY_NATIVE_ALL = 1,     /* every native frame stays; each group follows its loop frame */
};

/*
 * Merges nat[nn] (native frames, outermost first) and py[npy] (Python frames, innermost first,
 * as the programs send them) into ret (outermost first, at most max items): returns how many.
 *
 * The Python frames split into groups at PY_FRAME_ENTRY: a group is the frames up to and
 * including an entry frame (the last group may lack one: its outer frames were cut), the frames
 * one C call of the evaluation loop ran. The innermost group takes the place of the innermost
 * evaluation loop frame, the next group the next one outwards, and so on. Groups left over
 * (the native unwinding stopped short) go at the outermost end; loop frames left over (the
 * Python frames were cut) stay as they are. With PY_NATIVE_SPLICED, native frames of the
 * interpreter's file strictly between the outermost and the innermost spliced loop frames are
 * hidden (the interpreter's glue between Python calls); frames of other files (C extensions,
 * libffi, libc), frames inner to the innermost Python frame (the C work it called) and outer
 * to the outermost one stay. With PY_NATIVE_ALL nothing is hidden and each loop frame stays,
 * its group after it.
 */
size_t py_splice(const struct py_native *nat, size_t nn, const struct py_frame *py, size_t npy,
		 enum py_native_mode mode, struct py_item *ret, size_t max);

/* Whether a native function name is the evaluation loop's (its .cold part included). */
bool py_is_eval_loop(const char *name);

/* For logs: "no thread state" for PY_ST_NO_THREAD, and so on. */
const char *py_status_name(uint32_t status);

/* ---- Java (HotSpot) frames, through the same records, cache and splice ---- */

/* A Java frame whose method's record never came, was evicted or did not check out. */
#define JAVA_UNKNOWN_NAME "<java code>"

/*
 * n bytes of a Java Symbol (HotSpot's modified UTF-8: U+0000 as C0 80, a character past U+FFFF
 * as its two UTF-16 surrogates of 3 bytes each) as UTF-8 into out[cap], '\0'-ended and cut at
 * a character's boundary: '/' as '.' when dots, what a folded line cannot hold (controls,
 * U+0000, ';') as '_', a lone surrogate and each byte that starts no valid sequence (a
 * sequence cut short, an overlong form, a 4-byte form, a stray continuation byte) as U+FFFD,
 * each counted in *ret_bad (may be NULL). Returns the length.
 */
size_t jutf8__decode(const uint8_t *in, size_t n, bool dots, char *out, size_t cap,
		     uint32_t *ret_bad);

/*
 * The line of bytecode index bci in a method's compressed line number table (HotSpot's
 * CompressedLineNumberReadStream; jdk: the JDK's major version, which tells the number
 * format), len bytes of it: true with *ret_line, false when the table gives none or ends
 * before its terminator (a line further on might be nearer).
 */
bool jlines__bci2line(uint16_t jdk, const uint8_t *tab, size_t len, uint32_t bci,
		      int32_t *ret_line);

/*
 * As pycodes__name, for an interpreted Java frame or a compiled frame's scope (code: the
 * Method*, instr: JAVA_FRAME_INTERPRETED and the bci): "pkg.Class.method (File.java:LINE)",
 * without the line where the bci or the table gives none, JAVA_UNKNOWN_NAME without a record.
 * 1 when named from a record, 0 otherwise.
 */
int jmethods__name(struct pycodes *c, int32_t tgid, const struct py_frame *f, char *buf, size_t len,
		   struct py_frame_src *ret_src);

/* Scopes of one compiled frame named at most: HotSpot inlines 15 levels deep by default. */
#define JAVA_MAX_SCOPES 32

/* One scope of a compiled frame: a method (its record's key) and where in it, -1 unknown. */
struct jscope {
	uint64_t method;
	uint32_t stamp; /* 0: the scope's method is not known (a metadata entry not sent) */
	int32_t bci;
};

/* A PcDesc as an nmethod's record gives it: the pc's offset from the code begin, the offset
 * of its innermost scope in the scope data (0: none). */
struct jnm_pc {
	int32_t pc_offset;
	int32_t scope;
};

/*
 * The scopes at pc offset off of an nmethod (HotSpot's PcDesc search and ScopeDesc chain):
 * pcs[npcs] sorted by pc offset, scope data scopes[slen], metadata meta[nmeta] (index i + 1 is
 * meta[i]); top: off is the sampled pc (the first PcDesc past it), not a return address (the
 * first at it or past it). Into ret[max], innermost first: their count, 0 when no PcDesc or
 * scope says (the caller names the nmethod's own method). Every number checked: a chain that
 * does not go outwards (a sender at or after its scope) or past the data ends there.
 */
size_t jnm__scopes(uint16_t jdk, const struct jnm_pc *pcs, size_t npcs, const uint8_t *scopes,
		   size_t slen, const struct jnm_meta *meta, size_t nmeta, uint32_t off, bool top,
		   struct jscope *ret, size_t max);

/*
 * A compiled Java frame's scopes (f->code: the nmethod) from its nmethod's record, innermost
 * first, into ret[max] (max >= 1): their count, 1 with the nmethod's own method (bci -1) when
 * no scope says more, 0 when there is no record.
 */
size_t jnmethods__scopes(struct pycodes *c, int32_t tgid, const struct py_frame *f,
			 struct jscope *ret, size_t max);

/*
 * A Java stack's order, outermost first. nat[nn] are its native frames, outermost first, of
 * the unwindings ship_task__snapshots made (shipper/task.c): from the sampled registers
 * (innermost), then from each entry frame of java[] in turn, the entry frame's stamp their
 * count (an entry's count is set by the shipper, not the programs). java[njava] are the Java
 * frames, innermost first, as the programs walked them, entry frames (JAVA_FRAME_ENTRY) among
 * them. The order: the native frames inside the innermost Java frame (up to the first one in
 * JIT code, nat[].jit: where the native unwinder met Java code), each Java frame, and at each
 * entry frame the native frames that called it (a JNI call, the thread's start). Counts that
 * add up to more than nn are ignored. Items beyond max: the innermost left out.
 */
size_t java_splice(const struct py_native *nat, size_t nn, const struct py_frame *java,
		   size_t njava, struct py_item *ret, size_t max);

const char *java_status_name(uint32_t status);

/* ---- JavaScript (V8) frames, through the same records, cache and splice ---- */

/* A JavaScript frame whose function's record never came, was evicted or did not check out. */
#define V8_UNKNOWN_NAME "<js code>"

/*
 * The script offset of bytecode offset off in V8's source position table tab[len] (as
 * SourcePositionTableIterator reads it: pairs of zigzag VLQ numbers, the code offset's delta,
 * negative for an expression, and the source position's delta): the position of the last
 * entry at or before off, as AbstractCode::SourcePosition gives it for bytecode. true with
 * *ret_pos; false for a table that gives none there, is cut inside an entry, has a number past
 * 64 bits, goes backwards, or holds a position that is not a plain script offset.
 */
bool v8pos__find(const uint8_t *tab, size_t len, uint32_t off, uint32_t *ret_pos);

/* V8 11.3's bytecodes (Bytecode::kLast + 1) and their lengths by operand scale. */
#define V8_BYTECODES 198
extern const uint8_t v8_bytecode_sizes[3][V8_BYTECODES];

/*
 * The bytecode offset of pc offset pc in baseline code whose bytecode offset table is
 * tab[tlen] (V8's BytecodeOffsetIterator: unsigned VLQ pc deltas, the prologue's and then
 * each bytecode's in turn) and whose bytecodes are bc[blen]: the offset of the bytecode whose
 * code ends at or after pc, its prefix's where it has one. true with *ret_off; false in the
 * prologue, past the table or the bytecodes, or on a bytecode V8 11.3 does not have.
 */
bool v8bl__bytecode(const uint8_t *tab, size_t tlen, const uint8_t *bc, size_t blen, uint32_t pc,
		    uint32_t *ret_off);

/*
 * The line of script offset pos in a function that starts at script offset start, on line
 * first_line (from 1), whose source from start is src[len]: first_line plus the newlines
 * before pos. true with *ret_line; false when pos lies outside the source sent or first_line
 * is not known.
 */
bool v8pos__line(const uint8_t *src, size_t len, uint32_t start, int32_t first_line, uint32_t pos,
		 int32_t *ret_line);

/*
 * As pycodes__name, for a JavaScript frame (code: the SharedFunctionInfo, and the bytecode
 * offset + 1 above V8_FRAME_SFI_BITS): "function (script.js:LINE)", a path's base name and the
 * line the frame runs when its offset, its function's position table and source say it, else
 * the line the function starts on (ret_src->v8_why says why), without the line where the
 * record has none; V8_UNKNOWN_NAME without a record. 1 when named from a record, 0 otherwise.
 */
int v8funcs__name(struct pycodes *c, int32_t tgid, const struct py_frame *f, char *buf, size_t len,
		  struct py_frame_src *ret_src);

/*
 * A node stack's order, outermost first: ips[0..nn) the native unwinding, innermost first;
 * js[0..njs) the JavaScript frames, innermost first, each with the low 32 bits of its pc in
 * instr. A JavaScript frame takes the place of the native frame at its pc (its JIT code or
 * the interpreter's builtin, met in the same order); one whose pc the unwinding did not meet
 * goes next to the one before it. Native frames between them are kept. A native item's index
 * is its name's, outermost first (names[nn - 1 - i] is ips[i]'s).
 */
size_t v8_splice(const uint64_t *ips, size_t nn, const struct py_frame *js, size_t njs,
		 struct py_item *ret, size_t max);

const char *v8_status_name(uint32_t status);

#endif
