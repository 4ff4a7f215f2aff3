/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JavaScript (V8) frames of the current thread of a node target, for a snapshot
 * (bpf/stackcount.bpf.h take_snapshot), through the same path as Python's and Java's: the
 * frames are struct py_frame after the kernel frames, a function met for the first time goes to
 * the shipper as a record (struct sc_v8func). The layout is the worker's, read from the node
 * file's v8dbg_ symbols (map v8_procs, worker/v8structs.c); every read of the target is of the
 * current task's own memory with bpf_probe_read_user, bounded in count.
 *
 * node and V8's generated code keep frame pointers (node is built with them, V8's frames always
 * have them), so the walk follows the frame pointer chain from the sampled rbp to its end,
 * native frames included, and takes the frames V8 marks as JavaScript: a Context (a heap
 * object, where a typed frame holds a Smi marker) below the saved frame pointer and a
 * JSFunction below it, whose SharedFunctionInfo has a Script. Interpreted (Ignition), baseline
 * (Sparkplug) and optimized (TurboFan; Maglev is not built into node 20) frames all have that
 * shape; V8's builtins with JavaScript linkage have no Script and stay native. Each frame keeps
 * the pc it runs at, which the shipper matches with its own unwinding of the same stack.
 */
#ifndef ROVER_BPF_V8_H
#define ROVER_BPF_V8_H

#include "common/v8frames.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct v8_proc);
	__uint(max_entries, SC_MAX_TARGETS);
} v8_procs SEC(".maps");

struct v8_func_key {
	__u64 sfi;
	__u32 tgid;
	__u32 pad;
};

/* Functions whose record went to the shipper: with what stamp, and the baseline Code whose
 * tables it held (0: none). */
struct v8_func_sent {
	__u32 stamp;
	__u32 pad;
	__u64 code;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct v8_func_key);
	__type(value, struct v8_func_sent);
	__uint(max_entries, V8_FUNCS_ENTRIES);
} v8_funcs SEC(".maps");

/* The walk's state between the steps of its bpf_loop (as java_walk_state, in the map). */
struct v8_walk_state {
	__u64 pc, fp;
	__u32 tgid;
	__u32 kb; /* bytes of kernel frames before the JavaScript frames in the snapshot */
	__u32 n;
	__u32 status;
	__u32 new_funcs;
	__u32 scanned; /* the chain was taken up again from a frame pointer found in the stack */
};

/* A frame's words from fp-40 to fp+8: the slots V8 11.3 uses, the saved fp and return address. */
#define V8_FRAME_LO 5
#define V8_FRAME_WORDS 7
/* A SharedFunctionInfo's first words: map, function data, name or scope info, outer scope
 * info, script or debug info. */
#define V8_SFI_WORDS 5
/* Bytes of stack above sp searched for a frame pointer when rbp is not one. */
#define V8_SCAN_REACH 1024
/* A ScopeInfo's words read at once: map, flags, parameter count, context local count. */
#define V8_SI_HEAD 4

struct v8_scratch {
	struct v8_walk_state walk;
	struct v8_proc p;
	__u64 frame[V8_FRAME_WORDS];
	__u64 sfi[V8_SFI_WORDS];
	__u64 si[V8_SI_HEAD];
	__u64 names[5];
	__u64 scan_sp;	 /* the stack searched for a frame pointer from here */
	__u64 found;	 /* what v8_scan found */
	__u64 src;	 /* the source's first character */
	__u32 src_len;	 /* bytes before the function's start */
	__u32 newlines;	 /* counted so far */
	__u32 src_total; /* the source's length, bytes */
	__u32 start;	 /* the function's start position */
	__u64 r9, r12;	 /* the sampled thread's: the interpreter's bytecode offset and array */
	__u64 ip0;	 /* the sampled pc */
	__u64 code[3];	 /* a Code's instruction start, flags and instruction size */
	__u64 rec_code;	 /* the baseline Code whose tables the record being made holds, or 0 */
	__u64 chunk[V8_SRC_CHUNK / 8];
	__u64 strs[3]; /* the record's strings: name, inferred name, script name */
	__u16 lens[3];
	__u8 kinds[3];
	__u8 pad[7];
	struct sc_v8func rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct v8_scratch);
	__uint(max_entries, 1);
} v8_scratch SEC(".maps");

static __always_inline int v8_is_heap(const struct v8_layout *l, __u64 w)
{
	return (w & l->heap_object_tag_mask) == l->heap_object_tag;
}

/*
 * The instance type of the heap object w (tagged: its low bits mask are tag), 0xffff when
 * unreadable; map_off and type_off are HeapObject::map and Map::instance_type. A global
 * function: checked once, not at each of its callers.
 */
__noinline __u32 v8_type_of(__u64 w, __u64 tag, __u64 mask, __u64 map_off, __u64 type_off)
{
	__u64 map = 0;
	__u16 t = 0xffff;

	if ((w & mask) != tag ||
	    bpf_probe_read_user(&map, sizeof(map), (void *)(w - tag + map_off)) ||
	    (map & mask) != tag ||
	    bpf_probe_read_user(&t, sizeof(t), (void *)(map - tag + type_off)))
		return 0xffff;
	return t;
}

static __always_inline __u32 v8_type(const struct v8_layout *l, __u64 w)
{
	return v8_type_of(w, l->heap_object_tag, l->heap_object_tag_mask, l->heap_object_map,
			  l->map_instance_type);
}

/*
 * Whether p's node file is mapped where the worker said (checked once, as py_mapped does). A
 * mapping that is not what it was said to be drops the process, counted.
 */
static __always_inline int v8_mapped(struct v8_proc *p, __u32 tgid)
{
	struct py_vma_check c = { .start = p->start, .size = p->size };
	long err;

	if (p->checked)
		return 1;
	err = bpf_find_vma(bpf_get_current_task_btf(), p->start, py_vma_cb, &c, 0);
	if (err == -EBUSY)
		return 0;
	if (err || !c.ok) {
		if (!bpf_map_delete_elem(&v8_procs, &tgid))
			stat_inc(SC_STAT_V8_MAP_BAD);
		return 0;
	}
	p->checked = 1;
	return 1;
}

/*
 * One string of a record (a step of a bpf_loop over the three: checked once): a sequential
 * string, one- or two-byte, or a thin string pointing at one. The name's start or the script
 * name's end when longer than its room.
 */
static long v8_str_step(__u32 i, void *ctx)
{
	struct v8_scratch *sc = *(struct v8_scratch **)ctx;
	const struct v8_layout *l;
	__u32 k = i, t, off, cap, len = 0, one;
	__u64 s, n, from;

	asm volatile("" : "+r"(k)); /* bounded here, on the register used below */
	if (!sc || k > 2)
		return 1;
	l = &sc->p.l;
	sc->lens[k] = 0;
	sc->kinds[k] = 0;
	s = sc->strs[k];
	off = k == 0 ? 0 : k == 1 ? V8_NAME_MAX : 2 * V8_NAME_MAX;
	cap = k == 2 ? V8_FILE_MAX : V8_NAME_MAX;
	t = v8_type(l, s);
	if (t >= l->first_nonstring_type)
		return 0;
	if ((t & l->string_repr_mask) == l->string_thin_tag) {
		s = py_read64(s - l->heap_object_tag + l->thin_actual);
		t = v8_type(l, s);
		if (t >= l->first_nonstring_type)
			return 0;
	}
	if ((t & l->string_repr_mask) != l->string_seq_tag ||
	    bpf_probe_read_user(&len, sizeof(len),
				(void *)(s - l->heap_object_tag + l->string_length)))
		return 0;
	one = (t & l->string_encoding_mask) == l->string_one_byte_tag;
	n = one ? (__u64)len : (__u64)len * 2;
	if (n > 1u << 20)
		return 0;
	from = s - l->heap_object_tag + (one ? l->seq_one_byte_chars : l->seq_two_byte_chars);
	if (n > cap) {
		if (k == 2) {
			from += n - cap;
			sc->rec.flags |= V8_F_FILE_TAIL;
		} else {
			sc->rec.flags |= V8_F_NAME_CUT;
		}
		n = cap;
	}
	if (!one && (n & 1))
		n--;		    /* the tail of a two-byte string: whole characters */
	asm volatile("" : "+r"(n)); /* the bound is checked on the register the read takes */
	if (n > V8_FILE_MAX || off > V8_STRINGS - V8_FILE_MAX)
		return 0;
	if (n && bpf_probe_read_user(sc->rec.data + off, n, (void *)from))
		return 0;
	sc->lens[k] = (__u16)n;
	sc->kinds[k] = one ? 1 : 2;
	return 0;
}

/*
 * The function's name and the name V8 inferred for it: the ScopeInfo's (a compiled function)
 * or the name string (not compiled yet) into sc->strs[0], [1].
 */
static __always_inline void v8_func_names(struct v8_scratch *sc, __u64 nsi)
{
	const struct v8_layout *l = &sc->p.l;
	__u64 flags, nlocals, idx;
	__u32 t = v8_type(l, nsi);

	sc->strs[0] = 0;
	sc->strs[1] = 0;
	sc->src_len = 0;
	if (t < l->first_nonstring_type) {
		sc->strs[0] = nsi;
		return;
	}
	if (t != l->type_scope_info ||
	    bpf_probe_read_user(sc->si, sizeof(sc->si), (void *)(nsi - l->heap_object_tag)))
		return;
	flags = sc->si[1] >> 32;
	nlocals = sc->si[3] >> 32;
	if (nlocals > 4096)
		return;
	idx = V8_SI_FIRST_LOCAL + (nlocals < V8_SI_INLINED_LOCALS ? nlocals : 1) + nlocals +
	      ((flags >> V8_SI_SAVED_CLASS_BIT) & 1);
	if (bpf_probe_read_user(sc->names, sizeof(sc->names),
				(void *)(nsi - l->heap_object_tag + idx * 8)))
		return;
	idx = 0;
	if ((flags >> V8_SI_FUNCTION_VAR_SHIFT) & 3) {
		sc->strs[0] = sc->names[0];
		idx = 2;
	}
	if ((flags >> V8_SI_INFERRED_BIT) & 1) {
		sc->strs[1] = idx ? sc->names[2] : sc->names[0];
		idx++;
	}
	/* The start position: a Smi where a function scope has it. */
	if (idx < 4 && !(sc->names[idx & 3] & l->smi_tag_mask))
		sc->src_len = (__u32)(sc->names[idx & 3] >> 32);
}

/*
 * Newlines in the next V8_SRC_CHUNK bytes of the source before the function's start (a step of
 * a bpf_loop, checked once): 8 bytes a time, each byte equal to '\n' found without a branch.
 */
static long v8_line_step(__u32 i, void *ctx)
{
	struct v8_scratch *sc = *(struct v8_scratch **)ctx;
	__u64 at, left;

	if (!sc)
		return 1;
	at = (__u64)i * V8_SRC_CHUNK;
	if (at >= sc->src_len)
		return 1;
	left = sc->src_len - at;
	if (bpf_probe_read_user(sc->chunk, sizeof(sc->chunk), (void *)(sc->src + at))) {
		sc->newlines = 0;
		sc->src_len = 0; /* not whole: no line */
		return 1;
	}
	for (__u32 k = 0; k < V8_SRC_CHUNK / 8; k++) {
		__u64 y = sc->chunk[k] ^ 0x0a0a0a0a0a0a0a0aull, z, keep;

		if (k * 8 >= left)
			break;
		/* 0x80 in each byte of y that is 0: where x held '\n'. */
		z = ~(((y & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | y |
		      0x7f7f7f7f7f7f7f7full);
		keep = left - k * 8;
		if (keep < 8)
			z &= (1ull << (keep * 8)) - 1;
		sc->newlines += (__u32)(((z >> 7) * 0x0101010101010101ull) >> 56);
	}
	return 0;
}

/* The function's first line from its start position (sc->src_len) and the script: 0 if not
 * found (no position, a source that is not a sequential one-byte string, too far in). */
static __always_inline __u32 v8_func_line(struct v8_scratch *sc, __u64 script)
{
	const struct v8_layout *l = &sc->p.l;
	__u64 src;
	__u32 t, len = 0;

	sc->src_total = 0;
	if (!sc->src_len || sc->src_len > V8_SRC_MAX)
		return 0;
	src = py_read64(script - l->heap_object_tag + l->script_source);
	t = v8_type(l, src);
	if (t >= l->first_nonstring_type || (t & l->string_repr_mask) != l->string_seq_tag ||
	    (t & l->string_encoding_mask) != l->string_one_byte_tag ||
	    bpf_probe_read_user(&len, sizeof(len),
				(void *)(src - l->heap_object_tag + l->string_length)) ||
	    len < sc->src_len)
		return 0;
	sc->src = src - l->heap_object_tag + l->seq_one_byte_chars;
	sc->src_total = len;
	sc->start = sc->src_len;
	sc->newlines = 0;
	bpf_loop(V8_SRC_MAX / V8_SRC_CHUNK, v8_line_step, &sc, 0);
	return sc->src_len ? sc->newlines + 1 : 0;
}

/*
 * n bytes (at most max) of the ByteArray-like object at tagged w from its byte off into the
 * record's data at V8_STRINGS + at: the bytes copied (0 when none could be), *cut set when
 * there were more. len_off is where its length (a Smi) is.
 */
static __always_inline __u64 v8_copy(struct v8_scratch *sc, __u64 w, __u64 len_off, __u64 off,
				     __u64 at, __u64 max, int *cut)
{
	const struct v8_layout *l = &sc->p.l;
	__u64 len = 0, n;

	if (bpf_probe_read_user(&len, sizeof(len), (void *)(w - l->heap_object_tag + len_off)) ||
	    (len & l->smi_tag_mask))
		return 0;
	n = len >> 32;
	if (n > max) {
		n = max;
		*cut = 1;
	}
	asm volatile("" : "+r"(n), "+r"(at));
	if (n > V8_BC_MAX || at > V8_POS_MAX + V8_BOT_MAX || !n)
		return 0;
	if (bpf_probe_read_user(sc->rec.data + V8_STRINGS + at, n,
				(void *)(w - l->heap_object_tag + off)))
		return 0;
	return n;
}

/*
 * The function's source position table, its baseline code's tables and its source from its
 * start position into the record, one after the other after its strings. The table is its
 * BytecodeArray's: the SharedFunctionInfo's function data is the BytecodeArray, or baseline
 * Code whose deoptimization data slot holds it (V8 11.3's bytecode_or_interpreter_data) and
 * whose source position table slot holds its bytecode offset table; the tables are ByteArrays
 * once V8 made them (V8_F_NO_POS: no position table). The source only where the first line was
 * counted in it: a sequential one-byte string. sc->rec_code: the baseline Code whose tables
 * went, else 0.
 */
static __always_inline void v8_func_positions(struct v8_scratch *sc)
{
	const struct v8_layout *l = &sc->p.l;
	struct sc_v8func *r = &sc->rec;
	__u64 fd = sc->sfi[1], bl = 0, tbl = 0, n, at, len;
	int cut = 0;
	__u32 t;

	r->pos_len = 0;
	r->bot_len = 0;
	r->bc_len = 0;
	r->src_len = 0;
	r->start = 0;
	sc->rec_code = 0;
	t = v8_type(l, fd);
	if (t == l->type_code) {
		bl = fd;
		fd = py_read64(fd - l->heap_object_tag + l->code_deoptimization_data);
		t = v8_type(l, fd);
	}
	if (t == l->type_bytecode_array)
		tbl = py_read64(fd - l->heap_object_tag + l->bytecode_array_source_position_table);
	/* A ByteArray's bytes follow its map and length, as a FixedArray's elements do. */
	n = 0;
	if (tbl && v8_type(l, tbl) == l->type_byte_array)
		n = v8_copy(sc, tbl, l->fixed_array_length, l->fixed_array_data, 0, V8_POS_MAX,
			    &cut);
	if (cut)
		r->flags |= V8_F_POS_CUT;
	if (!n)
		r->flags |= V8_F_NO_POS;
	r->pos_len = (__u16)n;
	at = n;
	/* Tried once for this Code: a frame of it does not send the record again. */
	sc->rec_code = bl;
	if (bl && n && t == l->type_bytecode_array) {
		cut = 0;
		tbl = py_read64(bl - l->heap_object_tag + l->code_source_position_table);
		n = 0;
		if (tbl && v8_type(l, tbl) == l->type_byte_array)
			n = v8_copy(sc, tbl, l->fixed_array_length, l->fixed_array_data, at,
				    V8_BOT_MAX, &cut);
		r->bot_len = (__u16)n;
		at += n;
		if (n)
			n = v8_copy(sc, fd, l->fixed_array_length, l->bytecode_array_data, at,
				    V8_BC_MAX, &cut);
		r->bc_len = (__u16)n;
		at += n;
		if (cut)
			r->flags |= V8_F_BL_CUT;
	}
	if (!sc->src_total || sc->start >= sc->src_total)
		return;
	len = sc->src_total - sc->start;
	if (len > V8_SRC_HEAD)
		len = V8_SRC_HEAD;
	asm volatile("" : "+r"(len), "+r"(at));
	if (len > V8_SRC_HEAD || at > V8_POS_MAX + V8_BOT_MAX + V8_BC_MAX || !len)
		return;
	if (bpf_probe_read_user(r->data + V8_STRINGS + at, len, (void *)(sc->src + sc->start)))
		return;
	r->start = sc->start;
	r->src_len = (__u16)len;
}

/*
 * Puts the record of the function whose SharedFunctionInfo the scratch's sfi holds into the
 * ring buffer: 0, or -1 (nothing sent, counted). A global function, as v8_record.
 */
__noinline int v8_send_func(__u32 tgid, __u64 sfi, __u32 stamp)
{
	struct v8_scratch *sc;
	struct sc_v8func *r;
	__u32 zero = 0;
	__u64 size;

	sc = bpf_map_lookup_elem(&v8_scratch, &zero);
	if (!sc)
		return -1;
	r = &sc->rec;
	r->kind = SC_REC_V8FUNC;
	r->tgid = tgid;
	r->sfi = sfi;
	r->stamp = stamp;
	r->flags = 0;
	v8_func_names(sc, sc->sfi[2]);
	sc->strs[2] = py_read64(sc->sfi[4] - sc->p.l.heap_object_tag + sc->p.l.script_name);
	bpf_loop(3, v8_str_step, &sc, 0);
	r->line = v8_func_line(sc, sc->sfi[4]);
	v8_func_positions(sc);
	r->name_len = sc->lens[0];
	r->inferred_len = sc->lens[1];
	r->file_len = sc->lens[2];
	r->name_kind = sc->kinds[0];
	r->inferred_kind = sc->kinds[1];
	r->file_kind = sc->kinds[2];
	size = V8_REC_LEN(r);
	asm volatile("" : "+r"(size));
	if (size > sizeof(*r))
		return -1;
	if (bpf_ringbuf_output(&snaps, r, size, snap_wake_flag())) {
		stat_inc(SC_STAT_V8_FUNC_LOST);
		return -1;
	}
	return 0;
}

/*
 * Whether the frame whose words are in the scratch, running at pc, is interpreted, and its
 * bytecode offset then: it runs the interpreter, whose code is in the node file (embedded
 * builtins), its BytecodeArray slot holds its function's BytecodeArray (the
 * SharedFunctionInfo's data, or the baseline Code's bytecode slot when it has one) and its
 * offset slot a Smi, the offset from the BytecodeArray's tagged pointer, saved there at each
 * call. The innermost frame, sampled in a bytecode handler (r12 its BytecodeArray), has it in
 * r9. The pc test is needed: TurboFan code entered by on-stack replacement keeps the
 * unoptimized frame's slots, the offset then stale. V8 may run its builtins from a copy of
 * node's text in anonymous memory near its code (short builtin calls, not under --jitless):
 * frames interpreted there are not told apart yet and keep their function's first line.
 */
static __always_inline __u64 v8_interp_off(struct v8_scratch *sc, __u64 pc, __u64 ba_obj, int top)
{
	const struct v8_layout *l = &sc->p.l;
	__s32 bo = V8_FRAME_LO - (__s32)((__u32)-l->fp_bytecode_offset >> 3);
	__s32 ba = V8_FRAME_LO - (__s32)((__u32)-l->fp_bytecode_array >> 3);
	__s64 raw;

	if (pc - sc->p.start >= sc->p.size || bo < 0 || bo >= V8_FRAME_LO || ba < 0 ||
	    ba >= V8_FRAME_LO || sc->frame[ba] != ba_obj || !v8_is_heap(l, ba_obj))
		return 0;
	if (top && sc->r12 == ba_obj)
		raw = (__s64)sc->r9;
	else if (sc->frame[bo] & l->smi_tag_mask)
		return 0;
	else
		raw = (__s64)sc->frame[bo] >> 32;
	raw -= (__s64)l->bytecode_array_data - l->heap_object_tag;
	if (raw < 0 || raw >= V8_FRAME_OFF_MAX)
		return 0;
	return (__u64)raw + 1;
}

/*
 * The offset + 1 of the frame of the function whose SharedFunctionInfo words are in the
 * scratch, running at pc (0: none; see V8_FRAME_SFI_BITS), and in *ret_bl its baseline Code
 * when it runs that. A function with baseline code runs it when pc is in its instructions; the
 * innermost frame, sampled in one of the builtins baseline code calls without a frame (the
 * _Baseline variants of the operators, which V8 may run from a copy of node's text near its
 * code), runs it at the return address at sp. A baseline pc offset is plus one for the
 * sampled pc (not a return address), as V8 maps it to a bytecode (BytecodeOffsetIterator).
 * Else the frame may be interpreted (v8_interp_off).
 */
static __always_inline __u64 v8_frame_off(struct v8_scratch *sc, __u64 pc, __u64 *ret_bl)
{
	const struct v8_layout *l = &sc->p.l;
	__u64 fd = sc->sfi[1], h, off;
	int top = pc == sc->ip0 && !sc->walk.n, in_text = pc - sc->p.start < sc->p.size;

	/* A frame that runs node's text and is not the innermost is not baseline: no read. */
	if (in_text && !top) {
		off = v8_interp_off(sc, pc, fd, top);
		if (off || !v8_is_heap(l, fd) || v8_type(l, fd) != l->type_code)
			return off;
		return v8_interp_off(sc, pc,
				     py_read64(fd - l->heap_object_tag +
					       l->code_deoptimization_data),
				     top);
	}
	if (!v8_is_heap(l, fd) || l->code_flags != l->code_instruction_start + 8 ||
	    l->code_instruction_size != l->code_instruction_start + 16 ||
	    bpf_probe_read_user(sc->code, sizeof(sc->code),
				(void *)(fd - l->heap_object_tag + l->code_instruction_start)) ||
	    ((__u32)sc->code[1] & l->codekind_mask) >> l->codekind_shift != l->codekind_baseline)
		return v8_interp_off(sc, pc, fd, top); /* fd a BytecodeArray (or else none) */
	h = pc - sc->code[0];
	if (h < (__u32)sc->code[2]) {
		h += top;
	} else {
		h = top ? py_read64(sc->scan_sp) - sc->code[0] : (__u64)-1;
		if (h >= (__u32)sc->code[2])
			return in_text ? v8_interp_off(sc, pc,
						       py_read64(fd - l->heap_object_tag +
								 l->code_deoptimization_data),
						       top)
				       : 0;
	}
	if (h >= V8_FRAME_OFF_MAX)
		return 0;
	*ret_bl = fd;
	return h + 1;
}

/*
 * Records the frame of function fn (a JSFunction, checked) running at pc, if its
 * SharedFunctionInfo has a Script, and sends the function's record if it is new; the walk's
 * state is in the scratch map. A global function: the verifier checks it once, on its own,
 * not once per way the walk's step reaches it.
 */
__noinline int v8_record(__u64 fn, __u64 pc)
{
	struct v8_func_key key = {};
	struct sc_snap_scratch *ss;
	struct v8_walk_state *w;
	const struct v8_layout *l;
	struct v8_scratch *sc;
	struct py_frame *f;
	struct v8_func_sent *known, sent = {};
	__u32 zero = 0, at, stamp;
	__u64 sfi, h, bl = 0, off1;

	sc = bpf_map_lookup_elem(&v8_scratch, &zero);
	ss = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!sc || !ss)
		return 0;
	w = &sc->walk;
	l = &sc->p.l;
	sfi = py_read64(fn - l->heap_object_tag + l->js_function_shared);
	/* Above 2^47 is not a user address here: the frame's code keeps its top bits for off1. */
	if ((sfi >> 47) || v8_type(l, sfi) != l->type_shared_function_info ||
	    bpf_probe_read_user(sc->sfi, sizeof(sc->sfi), (void *)(sfi - l->heap_object_tag))) {
		w->status = V8_ST_FAULT;
		return 0;
	}
	/* A builtin with JavaScript linkage (no Script): its native frame says what it is. */
	if (v8_type(l, sc->sfi[4]) != l->type_script)
		return 0;
	off1 = v8_frame_off(sc, pc, &bl);
	/*
	 * The collector moves objects: a SharedFunctionInfo at an address another one had is told
	 * apart by its name (or scope info) and script, which are its own objects.
	 */
	h = py_mix(sfi, sc->sfi[2]);
	h = py_mix(h, sc->sfi[4]);
	h ^= h >> 32;
	stamp = (__u32)h ? (__u32)h : 1;
	at = w->kb + w->n * sizeof(struct py_frame);
	if (w->kb > SC_STACK_DEPTH * 8 || w->n >= PY_MAX_FRAMES ||
	    at > SC_STACK_DEPTH * 8 + (PY_MAX_FRAMES - 1) * sizeof(struct py_frame))
		return 0;
	f = (struct py_frame *)(ss->s.data + at);
	f->code = sfi | (bl ? V8_FRAME_BASELINE : 0) | (off1 & 0xffff) << V8_FRAME_SFI_BITS;
	f->stamp = stamp;
	f->instr = (__u32)pc;
	w->n++;
	if (w->new_funcs >= V8_NEW_FUNCS)
		return 0; /* a later sample reads it */
	key.sfi = sfi;
	key.tgid = w->tgid;
	known = bpf_map_lookup_elem(&v8_funcs, &key);
	/* A baseline frame of a function sent before it had this baseline code: sent again. */
	if (known && known->stamp == stamp && (!bl || known->code == bl))
		return 0;
	w->new_funcs++;
	sent.stamp = stamp;
	if (!v8_send_func(w->tgid, sfi, stamp)) {
		sent.code = sc->rec_code;
		bpf_map_update_elem(&v8_funcs, &key, &sent, BPF_ANY);
	}
	return 0;
}

/*
 * One word of the stack above sp (a step of a bpf_loop): the first that points higher in the
 * stack (within 64 times the reach) at a frame pointer chain of two links going up is taken
 * as a frame pointer. For a thread stopped in code without frame pointers (libc), where rbp
 * is not one; the frames walked from it are checked as any others are.
 */
static long v8_scan_step(__u32 i, void *ctx)
{
	struct v8_scratch *sc = *(struct v8_scratch **)ctx;
	__u64 at, top, c, c1, c2;

	if (!sc)
		return 1;
	at = sc->scan_sp + (__u64)i * 8;
	top = sc->scan_sp + V8_SCAN_REACH * 64;
	if (bpf_probe_read_user(&c, sizeof(c), (void *)at))
		return 1;
	if ((c & 7) || c <= at || c >= top)
		return 0;
	c1 = py_read64(c);
	if ((c1 & 7) || c1 <= c || c1 >= top)
		return 0;
	c2 = py_read64(c1);
	if (c2 && ((c2 & 7) || c2 <= c1 || c2 >= top))
		return 0;
	sc->found = c;
	return 1;
}

/*
 * The frame pointer found in the stack above the scratch's scan_sp (v8_scan_step), or 0. A
 * global function: checked once, not at each way the walk's step reaches it.
 */
__noinline __u64 v8_scan(void)
{
	struct v8_scratch *sc;
	__u32 zero = 0;

	sc = bpf_map_lookup_elem(&v8_scratch, &zero);
	if (!sc)
		return 0;
	sc->found = 0;
	bpf_loop(V8_SCAN_REACH / 8, v8_scan_step, &sc, 0);
	return sc->found;
}

/*
 * The chain ended at step i: the walk's end (1), unless it ended at once with no JavaScript
 * frame: then rbp was not a frame pointer (a thread stopped in libc, built without them), and
 * the walk goes on (0) from the first frame pointer found in the stack, once.
 */
static __always_inline long v8_chain_end(struct v8_scratch *sc, __u32 i)
{
	struct v8_walk_state *w = &sc->walk;
	__u64 fp;

	if (w->n || w->scanned || i > 1 || !sc->scan_sp)
		return 1;
	w->scanned = 1;
	fp = v8_scan();
	if (!fp)
		return 1;
	w->fp = fp;
	w->pc = 0;
	return 0;
}

static long v8_frame_step(__u32 i, void *ctx)
{
	struct v8_scratch *sc = *(struct v8_scratch **)ctx;
	const struct v8_layout *l;
	struct v8_walk_state *w;
	__s32 c, fn;
	__u64 fp, t;

	if (!sc)
		return 1;
	w = &sc->walk;
	l = &sc->p.l;
	fp = w->fp;
	/* The chain's end: the thread's first frame, or a frame pointer that is not one. */
	if (!fp || (fp & 7) ||
	    bpf_probe_read_user(sc->frame, sizeof(sc->frame), (void *)(fp - V8_FRAME_LO * 8)))
		return v8_chain_end(sc, i);
	/* Slots below fp: -8 is word V8_FRAME_LO - 1 (no signed division in BPF). */
	c = V8_FRAME_LO - (__s32)((__u32)-l->fp_context_or_type >> 3);
	fn = V8_FRAME_LO - (__s32)((__u32)-l->fp_function >> 3);
	if (c >= 0 && c < V8_FRAME_LO && fn >= 0 && fn < V8_FRAME_LO &&
	    v8_is_heap(l, sc->frame[c]) && v8_is_heap(l, sc->frame[fn])) {
		t = v8_type(l, sc->frame[fn]);
		if (t >= l->type_js_function_first && t <= l->type_js_function_last) {
			if (w->n >= PY_MAX_FRAMES) {
				w->status = V8_ST_CUT;
				return 1;
			}
			v8_record(sc->frame[fn], w->pc);
			if (w->status != V8_ST_OK)
				return 1;
		}
	}
	/*
	 * A chain goes up the stack. Below the thread's first frame the saved word is whatever
	 * the thread's start left there (0, or a value below): the end, not an error. A frame
	 * that names itself is a loop.
	 */
	if (sc->frame[V8_FRAME_LO] <= fp) {
		if (sc->frame[V8_FRAME_LO] == fp) {
			w->status = V8_ST_LOOP;
			return 1;
		}
		return v8_chain_end(sc, i);
	}
	w->pc = sc->frame[V8_FRAME_LO + 1];
	w->fp = sc->frame[V8_FRAME_LO];
	if (i == V8_MAX_STEPS - 1)
		w->status = V8_ST_CUT;
	return 0;
}

/*
 * The current thread's JavaScript frames into the snapshot in snap_scratch, after its kb bytes
 * of kernel frames, from its user registers: their count, and the status in *ret_status
 * (V8_ST_NONE for a process that is not node).
 */

static __always_inline __u32 v8_frames_in(__u32 tgid, __u32 kb, __u64 ip, __u64 sp, __u64 bp,
					  __u32 *ret_status)
{
	struct rover_pt_regs *regs;
	struct v8_walk_state *w;
	struct v8_scratch *sc;
	struct v8_proc *p;
	__u32 zero = 0;

	*ret_status = V8_ST_NONE;
	p = bpf_map_lookup_elem(&v8_procs, &tgid);
	sc = bpf_map_lookup_elem(&v8_scratch, &zero);
	if (!p || !sc || !v8_mapped(p, tgid))
		return 0;
	sc->p = *p;
	regs = (struct rover_pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	sc->r9 = regs->r9;
	sc->r12 = regs->r12;
	sc->ip0 = ip;
	w = &sc->walk;
	w->tgid = tgid;
	w->kb = kb;
	w->n = 0;
	w->new_funcs = 0;
	w->status = V8_ST_OK;
	w->pc = ip;
	w->fp = bp;
	w->scanned = 0;
	sc->scan_sp = sp;
	bpf_loop(V8_MAX_STEPS, v8_frame_step, &sc, 0);
	if (w->status == V8_ST_OK && !w->n)
		w->status = V8_ST_NO_JS;
	*ret_status = w->status;
	return w->n;
}

/*
 * v8_frames_in as a global function: the count in the low 16 bits, the status above. Inlined
 * after the Java walk in rt_frames, each way that walk ends was a state the verifier carried
 * through this one (about 7 000 more instructions at each load); as a global function, it is
 * checked once and its caller sees one unknown number come back.
 */
__noinline int v8_frames(__u32 tgid, __u32 kb, __u64 ip, __u64 sp, __u64 bp)
{
	__u32 status, n;

	n = v8_frames_in(tgid, kb, ip, sp, bp, &status);
	if (n > 0xffff)
		n = 0;
	return (int)((status & 0x7fff) << 16 | n);
}

#endif
