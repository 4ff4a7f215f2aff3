/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython frames of the current thread, for a snapshot (bpf/stackcount.bpf.h take_snapshot):
 * the layout is common/pyframes.h's, the interpreter's address and offsets the worker's
 * (map py_procs, worker/pyattach.c). Every read is of the current task's own memory with
 * bpf_probe_read_user, bounded in count: a target that lies in its memory only garbles its
 * own frames, which the shipper takes as hostile anyway.
 *
 * The thread's state is the one whose thread_id (pthread_self(): the thread's fsbase on
 * x86-64) is the thread's, found by walking the interpreter's list once and then cached by
 * thread id (checked again at each use: a thread state freed and made anew for another
 * thread is not taken).
 */
#ifndef ROVER_BPF_PYTHON_H
#define ROVER_BPF_PYTHON_H

#include "common/pyframes.h"

#ifndef EBUSY
#define EBUSY 16
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct py_proc);
	__uint(max_entries, SC_MAX_TARGETS);
} py_procs SEC(".maps");

/* Thread id -> its thread state's address. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 8192);
} py_threads SEC(".maps");

struct py_code_key {
	__u64 code;
	__u32 tgid;
	__u32 pad;
};

/* Code objects whose record went to the shipper, and with what stamp. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct py_code_key);
	__type(value, __u32);
	__uint(max_entries, PY_CODES_ENTRIES);
} py_codes SEC(".maps");

/*
 * A CPU's own memory of code objects whose records went out, direct-mapped: a frame whose code
 * it holds costs no map lookup. A slot taken by another code object falls back on py_codes.
 */
#define PY_SEEN_SLOTS 512
struct py_seen {
	__u64 code;
	__u32 tgid;
	__u32 stamp;
};

/*
 * Where the frame walk keeps its state between the steps of its bpf_loop. In the map, not on
 * the stack: the verifier checks a loop's callback again until its state stops changing, and
 * a frame count it can follow on the stack (0, 1, 2...) made it walk the callback once per
 * count: 38 000 instructions and 35 ms at every load. A map value's fields are unknown to it,
 * so the callback converges at once (11 700 instructions, 2.4 ms).
 */
struct py_walk_state {
	__u64 frame;
	__u32 tgid;
	__u32 kb; /* bytes of kernel frames before the Python frames in the snapshot */
	__u32 n;
	__u32 status;
	__u32 new_codes;
};

struct py_scratch {
	struct py_walk_state walk;
	struct py_seen seen[PY_SEEN_SLOTS];
	struct py_proc p;
	__u8 frame[PY_FRAME_READ];
	__u8 code[PY_CODE_READ];
	__u8 str[64];
	struct sc_pycode rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_scratch);
	__uint(max_entries, 1);
} py_scratch SEC(".maps");

/* The field of size 8 at off in buf (size bytes), 0 when it lies outside. */
#define PY_FIELD64(buf, off) ((off) <= sizeof(buf) - 8 ? *(__u64 *)((buf) + (off)) : 0)
#define PY_FIELD32(buf, off) ((off) <= sizeof(buf) - 4 ? *(__u32 *)((buf) + (off)) : 0)
#define PY_FIELD8(buf, off) ((off) <= sizeof(buf) - 1 ? *(__u8 *)((buf) + (off)) : 0)

static __always_inline __u64 py_read64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

static __always_inline __u64 py_fsbase(void)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *t = bpf_get_current_task_btf();

	return kread64((__u64)t, kofs.task_fsbase);
#else
	return 0; /* pthread_self() is not the thread pointer elsewhere: no thread state found */
#endif
}

struct py_thread_walk {
	__u64 ts;
	__u64 fs;
	__u16 next, thread_id;
	__u64 found;
};

static long py_thread_step(__u32 i, void *ctx)
{
	struct py_thread_walk *w = ctx;

	if (!w->ts)
		return 1;
	if (py_read64(w->ts + w->thread_id) == w->fs) {
		w->found = w->ts;
		return 1;
	}
	w->ts = py_read64(w->ts + w->next);
	return 0;
}

struct py_vma_check {
	__u64 start, size;
	int ok;
};

static long py_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct py_vma_check *c = ctx;
	__u64 f = kread64((__u64)vma, kofs.vma_file);

	c->ok = kread64((__u64)vma, kofs.vma_start) == c->start &&
		kread64((__u64)vma, kofs.vma_pgoff) == 0 && f &&
		kread64(kread64(f, kofs.file_inode), kofs.inode_size) == c->size;
	return 0;
}

/*
 * Whether p's interpreter is mapped where the worker said (checked once: runtime is set
 * then). A mapping that is not what it was said to be drops the process, counted.
 */
static __always_inline int py_mapped(struct py_proc *p, __u32 tgid)
{
	struct py_vma_check c = { .start = p->start, .size = p->size };
	long err;

	if (p->runtime)
		return 1;
	err = bpf_find_vma(bpf_get_current_task_btf(), p->start, py_vma_cb, &c, 0);
	if (err == -EBUSY)
		return 0; /* the mm's lock is taken: a later sample checks */
	if (err || !c.ok) {
		if (!bpf_map_delete_elem(&py_procs, &tgid))
			stat_inc(SC_STAT_PY_MAP_BAD);
		return 0;
	}
	p->runtime = p->start + p->rel;
	return 1;
}

/* The current thread's thread state in the process of p, 0 when none is. */
static __always_inline __u64 py_thread_state(const struct py_proc *p, __u32 tid)
{
	struct py_thread_walk w = { .fs = py_fsbase(),
				    .next = p->o.ts_next,
				    .thread_id = p->o.ts_thread_id };
	__u64 *cached = bpf_map_lookup_elem(&py_threads, &tid), interp;

	if (!w.fs)
		return 0;
	if (cached && *cached && py_read64(*cached + p->o.ts_thread_id) == w.fs)
		return *cached;
	interp = py_read64(p->runtime + p->o.rt_interp_head);
	if (!interp)
		return 0;
	w.ts = py_read64(interp + p->o.is_threads_head);
	bpf_loop(PY_MAX_THREADS, py_thread_step, &w, 0);
	if (w.found)
		bpf_map_update_elem(&py_threads, &tid, &w.found, BPF_ANY);
	return w.found;
}

static __always_inline __u64 py_mix(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/*
 * A string of the target into dst (cap bytes at most, a power of two): its kind and length in
 * bytes, 0 when unreadable. tail: keep the end of a longer string, else its start.
 */
static __always_inline __u32 py_read_str(struct py_scratch *sc, __u64 str, __u8 *dst, __u32 cap,
					 int tail, __u8 *ret_kind, __u8 *ret_flags, __u8 cut_flag)
{
	const struct py_offsets *o = &sc->p.o;
	__u64 len, data, bytes;
	__u8 state, kind;

	*ret_kind = 0;
	if (!str || bpf_probe_read_user(sc->str, 48, (void *)str))
		return 0;
	len = PY_FIELD64(sc->str, o->str_length);
	state = PY_FIELD8(sc->str, o->str_state);
	kind = (state >> 2) & 7;
	if (!(state & (1 << 5)) || (kind != 1 && kind != 2 && kind != 4) || len > (1 << 20))
		return 0; /* not compact: never a code object's name */
	data = str + ((state & (1 << 6)) ? o->str_ascii_size : o->str_compact_size);
	bytes = len * kind;
	if (bytes > cap) {
		*ret_flags |= cut_flag;
		if (tail)
			data += bytes - cap;
		bytes = cap;
	}
	asm volatile("" : "+r"(bytes)); /* the bound is checked on the register the read takes */
	if (bytes > cap || bpf_probe_read_user(dst, bytes, (void *)data))
		return 0;
	*ret_kind = kind;
	return (__u32)bytes;
}

/* The code object's fields the programs read (its window) into sc->code: 0 or -1. */
static __always_inline int py_read_code(struct py_scratch *sc, __u64 code)
{
	return bpf_probe_read_user(sc->code, sizeof(sc->code), (void *)(code + sc->p.o.co_read))
		       ? -1
		       : 0;
}

/* Puts code's record into the ring buffer: 0, or -1 (nothing sent, counted). */
static __always_inline int py_send_code(struct py_scratch *sc, __u32 tgid, __u64 code, __u32 stamp)
{
	const struct py_offsets *o = &sc->p.o;
	struct sc_pycode *r = &sc->rec;
	__u64 name, file, lines, size, n;

	if (py_read_code(sc, code)) {
		stat_inc(SC_STAT_PY_CODE_LOST);
		return -1;
	}
	r->kind = SC_REC_PYCODE;
	r->tgid = tgid;
	r->code = code;
	r->stamp = stamp;
	r->version = o->version;
	r->flags = 0;
	r->firstlineno = (__s32)PY_FIELD32(sc->code, (__u32)(o->co_firstlineno - o->co_read));
	name = PY_FIELD64(sc->code, (__u32)(o->co_qualname - o->co_read));
	file = PY_FIELD64(sc->code, (__u32)(o->co_filename - o->co_read));
	lines = PY_FIELD64(sc->code, (__u32)(o->co_linetable - o->co_read));
	r->name_len = py_read_str(sc, name, r->data, PY_NAME_MAX, 0, &r->name_kind, &r->flags,
				  PY_CODE_NAME_CUT);
	r->file_len = py_read_str(sc, file, r->data + PY_NAME_MAX, PY_FILE_MAX, 1, &r->file_kind,
				  &r->flags, PY_CODE_FILE_TAIL);
	r->lines_len = 0;
	if (lines && !bpf_probe_read_user(sc->str, 8, (void *)(lines + o->bytes_size))) {
		__u64 len = *(__u64 *)sc->str;

		if (len > PY_LINES_MAX) {
			len = PY_LINES_MAX;
			r->flags |= PY_CODE_LINES_CUT;
		}
		n = len;
		asm volatile("" : "+r"(n));
		if (n <= PY_LINES_MAX && !bpf_probe_read_user(r->data + PY_NAME_MAX + PY_FILE_MAX,
							      n, (void *)(lines + o->bytes_sval)))
			r->lines_len = (__u16)n;
	}
	size = __builtin_offsetof(struct sc_pycode, data) + PY_NAME_MAX + PY_FILE_MAX +
	       r->lines_len;
	if (size > sizeof(*r) || bpf_ringbuf_output(&snaps, r, size, snap_wake_flag())) {
		stat_inc(SC_STAT_PY_CODE_LOST);
		return -1;
	}
	return 0;
}

/* The callback's context: two pointers, whose targets hold the state (py_walk_state). */
struct py_walk {
	struct py_scratch *sc;	    /* this CPU's, looked up once a sample */
	struct sc_snap_scratch *ss; /* the snapshot being made */
};

/*
 * The stamp of code: never 0, 0 when it could not be read. 3.12+ give each code object a
 * version of its own (co_version, 4 bytes read); before, a freed code object's address, names
 * and line table may all come back for another: its window's fields and its name's length,
 * hash and first bytes tell them apart (two reads more).
 */
static __always_inline __u32 py_stamp(struct py_scratch *sc, __u64 code)
{
	const struct py_offsets *o = &sc->p.o;
	__u32 version = 0;
	__u64 h, name, x = 0;

	if (o->co_version != PY_NONE &&
	    bpf_probe_read_user(&version, sizeof(version), (void *)(code + o->co_version)))
		return 0;
	if (version) {
		h = py_mix(code, version);
	} else {
		if (py_read_code(sc, code))
			return 0;
		name = PY_FIELD64(sc->code, (__u32)(o->co_qualname - o->co_read));
		h = code ^ PY_FIELD32(sc->code, (__u32)(o->co_firstlineno - o->co_read));
		h = py_mix(h, name ^ PY_FIELD64(sc->code, (__u32)(o->co_filename - o->co_read)));
		h = py_mix(h, PY_FIELD64(sc->code, (__u32)(o->co_linetable - o->co_read)));
		if (bpf_probe_read_user(sc->str, 64, (void *)(name + 16)) &&
		    bpf_probe_read_user(sc->str, 32, (void *)(name + 16)))
			__builtin_memset(sc->str, 0, 64);
		/* Folded by rotations into one word (cheaper than a mix each): length, hash,
		 * state and the first bytes. */
		for (int i = 0; i < 8; i++) {
			__u64 v = *(__u64 *)(sc->str + i * 8);

			x = ((x << 7) | (x >> 57)) ^ v;
		}
		h = py_mix(h, x);
	}
	h ^= h >> 32;
	return (__u32)h ? (__u32)h : 1;
}

static __always_inline void py_mark_entry(struct sc_snap_scratch *ss, __u32 kb, __u32 n)
{
	__u32 at;

	if (!n || n > PY_MAX_FRAMES || kb > SC_STACK_DEPTH * 8)
		return;
	at = kb + (n - 1) * sizeof(struct py_frame);
	if (at <= SC_STACK_DEPTH * 8 + (PY_MAX_FRAMES - 1) * sizeof(struct py_frame))
		((struct py_frame *)(ss->s.data + at))->instr |= PY_FRAME_ENTRY;
}

static long py_frame_step(__u32 i, void *ctx)
{
	struct py_walk *wk = ctx;
	struct sc_snap_scratch *ss = wk->ss;
	struct py_scratch *sc = wk->sc;
	struct py_walk_state *w;
	const struct py_offsets *o;
	struct py_frame *f;
	__u32 at, instr, stamp;
	__u64 code, prev, len;

	if (!sc || !ss)
		return 1;
	w = &sc->walk;
	if (!w->frame)
		return 1;
	o = &sc->p.o;
	/* The fields of a frame, no more: a frame near the end of its memory reads whole. */
	len = o->fr_read;
	asm volatile("" : "+r"(len));
	if (!len || len > sizeof(sc->frame) ||
	    bpf_probe_read_user(sc->frame, len, (void *)w->frame)) {
		w->status = PY_ST_FAULT;
		return 1;
	}
	prev = PY_FIELD64(sc->frame, o->fr_previous);
	code = PY_FIELD64(sc->frame, o->fr_code);
	if (o->entry_kind == PY_ENTRY_SHIM &&
	    PY_FIELD8(sc->frame, o->fr_owner) == PY_OWNED_BY_CSTACK) {
		/* Not a frame of Python code: the frames above it are one C call's. */
		py_mark_entry(ss, w->kb, w->n);
		w->frame = prev;
		return 0;
	}
	if (w->n >= PY_MAX_FRAMES) {
		w->status = PY_ST_CUT;
		return 1;
	}
	stamp = code ? py_stamp(sc, code) : 0;
	if (!stamp) {
		w->status = PY_ST_FAULT;
		return 1;
	}
	if (o->instr_kind == PY_INSTR_POINTER) {
		__u64 ptr = PY_FIELD64(sc->frame, o->fr_instr), start = code + o->co_code;

		instr = ptr >= start && ptr - start < PY_FRAME_NO_INSTR ? (__u32)(ptr - start)
									: PY_FRAME_NO_INSTR;
	} else {
		__s32 lasti = (__s32)PY_FIELD32(sc->frame, o->fr_instr);

		instr = lasti < 0 ? PY_FRAME_NO_INSTR
				  : (__u32)lasti * (o->instr_kind == PY_INSTR_LASTI_UNITS ? 2 : 1);
		instr &= PY_FRAME_INSTR_MASK | PY_FRAME_NO_INSTR;
	}
	if (o->entry_kind == PY_ENTRY_EVERY ||
	    (o->entry_kind == PY_ENTRY_FLAG && PY_FIELD8(sc->frame, o->fr_is_entry)))
		instr |= PY_FRAME_ENTRY;
	if (w->kb > SC_STACK_DEPTH * 8)
		return 1;
	at = w->kb + w->n * sizeof(struct py_frame);
	if (at > SC_STACK_DEPTH * 8 + (PY_MAX_FRAMES - 1) * sizeof(struct py_frame))
		return 1;
	f = (struct py_frame *)(ss->s.data + at);
	f->code = code;
	f->stamp = stamp;
	f->instr = instr;
	w->n++;
	{
		__u32 slot = (__u32)((code >> 4) ^ (code >> 13)) & (PY_SEEN_SLOTS - 1);
		struct py_seen *seen = &sc->seen[slot];
		struct py_code_key key = { .code = code, .tgid = w->tgid };
		__u32 *known;

		if (seen->code == code && seen->tgid == w->tgid && seen->stamp == stamp)
			goto next;
		if (w->new_codes >= PY_NEW_CODES)
			goto next; /* a later sample reads it */
		known = bpf_map_lookup_elem(&py_codes, &key);
		if (!known || *known != stamp) {
			w->new_codes++;
			if (py_send_code(sc, w->tgid, code, stamp))
				goto next;
			bpf_map_update_elem(&py_codes, &key, &stamp, BPF_ANY);
		}
		seen->code = code;
		seen->tgid = w->tgid;
		seen->stamp = stamp;
	}
next:
	w->frame = prev;
	return 0;
}

/*
 * The current thread's Python frames into the snapshot in snap_scratch, after its kb bytes of
 * kernel frames: their count, and the status in *ret_status (PY_ST_NONE for a process that
 * is not Python).
 */
static __always_inline __u32 py_frames(__u32 tgid, __u32 tid, __u32 kb, __u32 *ret_status)
{
	struct py_walk wk = {};
	struct py_walk_state *w;
	struct sc_snap_scratch *ss;
	struct py_scratch *sc;
	struct py_proc *p;
	__u32 zero = 0;
	__u64 ts;

	*ret_status = PY_ST_NONE;
	p = bpf_map_lookup_elem(&py_procs, &tgid);
	sc = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!p || !sc || !py_mapped(p, tgid))
		return 0;
	sc->p = *p;
	w = &sc->walk;
	w->tgid = tgid;
	w->kb = kb;
	w->n = 0;
	w->new_codes = 0;
	w->status = PY_ST_OK;
	ts = py_thread_state(&sc->p, tid);
	if (!ts) {
		*ret_status = PY_ST_NO_THREAD;
		return 0;
	}
	w->frame = py_read64(ts + sc->p.o.ts_frame);
	if (w->frame && sc->p.o.cf_current_frame != PY_NONE)
		w->frame = py_read64(w->frame + sc->p.o.cf_current_frame);
	if (!w->frame) {
		*ret_status = PY_ST_IDLE;
		return 0;
	}
	ss = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!ss)
		return 0;
	wk.sc = sc;
	wk.ss = ss;
	bpf_loop(PY_MAX_FRAMES + 16, py_frame_step, &wk, 0);
	if (w->status == PY_ST_OK && w->frame && w->n >= PY_MAX_FRAMES)
		w->status = PY_ST_CUT;
	if (w->status == PY_ST_OK)
		py_mark_entry(ss, kb, w->n); /* the outermost frame ends its C call's group */
	*ret_status = w->n || w->status != PY_ST_OK ? w->status : PY_ST_IDLE;
	return w->n;
}

#endif
