/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HotSpot Java frames of the current thread, for a snapshot (bpf/stackcount.bpf.h
 * take_snapshot), through the same path as Python's (bpf/python.bpf.h): the frames are struct
 * py_frame after the kernel frames, a method met for the first time goes to the shipper as a
 * record (struct sc_jmethod). The layout is the worker's, read from the libjvm.so file (map
 * java_procs, worker/jvmstructs.c); every read of the target is of the current task's own
 * memory with bpf_probe_read_user, bounded in count: a target that lies in its memory only
 * garbles its own frames, which the shipper takes as hostile anyway.
 *
 * The walk starts from the sampled registers when the pc is in the code cache (the thread runs
 * Java code), else from the thread's last Java frame (its JavaThread's frame anchor, which
 * HotSpot sets whenever Java code calls into the VM or native code: every thread blocked in a
 * Java method, OFF_CPU's samples): interpreted frames by their frame pointer, compiled frames
 * and stubs by their code blob's frame size, the blob found through its code heap's segment
 * map. At the call stub's return address (the entry frame: native frames follow) it records
 * the entry frame for the shipper's native unwinding and goes on at the Java frames before the
 * native ones (java_entry); it stops at a pc outside the code cache.
 */
#ifndef ROVER_BPF_JAVA_H
#define ROVER_BPF_JAVA_H

#include "common/jvmframes.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct java_proc);
	__uint(max_entries, SC_MAX_TARGETS);
} java_procs SEC(".maps");

struct java_method_key {
	__u64 method;
	__u32 tgid;
	__u32 pad;
};

/* Methods whose record went to the shipper, and with what stamp. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct java_method_key);
	__type(value, __u32);
	__uint(max_entries, JAVA_METHODS_ENTRIES);
} java_methods SEC(".maps");

struct java_nmethod_key {
	__u64 nmethod;
	__u32 tgid;
	__u32 pad;
};

/* nmethods whose record went to the shipper, and with what stamp. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct java_nmethod_key);
	__type(value, __u32);
	__uint(max_entries, JAVA_NMETHODS_ENTRIES);
} java_nmethods SEC(".maps");

/*
 * The walk's state between the steps of its bpf_loop, in the map rather than on the stack for
 * the reason py_walk_state gives: a count the verifier can follow makes it check the callback
 * once per value.
 */
struct java_walk_state {
	__u64 pc, sp, fp;
	__u64 r13; /* the innermost interpreted frame's bytecode pointer */
	__u32 tgid;
	__u32 kb; /* bytes of kernel frames before the Java frames in the snapshot */
	__u32 n;
	__u32 status;
	__u32 new_methods;
	__u32 first; /* the frame is the innermost: its registers are the sampled ones */
	__u32 kind;  /* JAVA_FRAME_*: of the frame being recorded */
	__u32 pad;
	__u64 cm; /* java_method_rec's: the method's ConstMethod */
};

/* An interpreted frame's words from slot -9 to +1 (from its frame pointer). */
#define JAVA_IFRAME_LO 9
#define JAVA_IFRAME_WORDS 11
/* Bytes of a code blob's header read at once: every field the walker and an nmethod's record
 * take lies in it (JDK 17's nmethod::_compile_id at 304 the last); JAVA_BLOB_MIN when a blob
 * (a small stub at the end of the code cache) has less readable. */
#define JAVA_BLOB_READ 320
#define JAVA_BLOB_MIN 128
/* Bytes of a ConstMethod read at once (its fields up to the signature index). */
#define JAVA_CM_READ 48

struct java_scratch {
	struct java_walk_state walk;
	struct java_proc p;
	__u64 frame[JAVA_IFRAME_WORDS];
	__u8 blob[JAVA_BLOB_READ];
	__u8 cm[JAVA_CM_READ];
	__u8 anchor[24]; /* a JavaFrameAnchor: sp, pc and fp */
	__u8 sym[8];
	__u64 syms[4]; /* JAVA_SYM_*: the Symbol* of a method's record */
	__u16 lens[4];
	struct sc_jmethod rec;
	/* An nmethod's record being made: its metadata as read, Method's vtable (a Method* in
	 * the metadata is an entry whose first word is it), whether a method's record waits. */
	__u64 meta_raw[JAVA_NM_META_MAX];
	__u64 method_vt;
	__u32 nmeta;
	__u32 meta_pending;
	struct sc_jnmethod nrec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct java_scratch);
	__uint(max_entries, 1);
} java_scratch SEC(".maps");

/* A field of the layout in a buffer read from the target: 0 when it lies outside. */
#define JF64(buf, f) ((f).off <= sizeof(buf) - 8 ? *(__u64 *)((buf) + (f).off) : 0)
#define JF32(buf, f) ((f).off <= sizeof(buf) - 4 ? *(__u32 *)((buf) + (f).off) : 0)
#define JF16(buf, f) ((f).off <= sizeof(buf) - 2 ? *(__u16 *)((buf) + (f).off) : 0)
#define JF8(buf, f) ((f).off <= sizeof(buf) - 1 ? *(__u8 *)((buf) + (f).off) : 0)

static __always_inline __u32 java_read32(__u64 addr)
{
	__u32 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/*
 * Whether p's libjvm.so is mapped where the worker said (checked once, as py_mapped does). A
 * mapping that is not what it was said to be drops the process, counted.
 */
static __always_inline int java_mapped(struct java_proc *p, __u32 tgid)
{
	struct py_vma_check c = { .start = p->start, .size = p->size };
	long err;

	if (p->checked)
		return 1;
	err = bpf_find_vma(bpf_get_current_task_btf(), p->start, py_vma_cb, &c, 0);
	if (err == -EBUSY)
		return 0; /* the mm's lock is taken: a later sample checks */
	if (err || !c.ok) {
		if (!bpf_map_delete_elem(&java_procs, &tgid))
			stat_inc(SC_STAT_JAVA_MAP_BAD);
		return 0;
	}
	p->checked = 1;
	return 1;
}

/*
 * The code cache's bounds, heaps, interpreter and call stub, read once into p (the map's
 * value) when the JVM has made them: p->ready then. Nothing of it moves afterwards. Run as the
 * one step of a bpf_loop: checked once by the verifier, not once per path to it.
 */
static long java_ready_step(__u32 i, void *ctx)
{
	struct java_proc *p = *(struct java_proc **)ctx;
	const struct jvm_layout *l;
	__u64 heaps, data, q;
	__u32 len;

	if (!p)
		return 1;
	l = &p->l;
	heaps = py_read64(p->start + l->code_heaps);
	q = py_read64(p->start + l->interp_code);
	if (!heaps || !q)
		return 1; /* not yet made */
	p->code_low = py_read64(p->start + l->code_low);
	p->code_high = py_read64(p->start + l->code_high);
	p->call_stub_ret = py_read64(p->start + l->call_stub_ret);
	p->interp_low = py_read64(q + l->sq_stub_buffer.off);
	p->interp_high = p->interp_low + java_read32(q + l->sq_buffer_limit.off);
	len = java_read32(heaps + l->array_len.off);
	data = py_read64(heaps + l->array_data.off);
	if (!p->code_low || p->code_high <= p->code_low || !p->call_stub_ret || !p->interp_low ||
	    !data || !len)
		return 1;
	if (len > JAVA_MAX_HEAPS)
		len = JAVA_MAX_HEAPS;
	for (__u32 k = 0; k < JAVA_MAX_HEAPS; k++) {
		struct java_heap *hp = &p->heaps[k];
		__u64 h;

		if (k >= len)
			break;
		h = py_read64(data + k * 8);
		if (!h)
			return 1;
		hp->low = py_read64(h + l->heap_memory.off + l->vs_low_boundary.off);
		hp->high = py_read64(h + l->heap_memory.off + l->vs_high_boundary.off);
		hp->segmap = py_read64(h + l->heap_segmap.off + l->vs_low_boundary.off);
		hp->log2_segment = java_read32(h + l->heap_log2_segment.off);
		if (!hp->segmap || hp->high <= hp->low || hp->log2_segment < 4 ||
		    hp->log2_segment > 16)
			return 1;
	}
	p->nheaps = len;
	p->ready = 1;
	return 1;
}

static __always_inline int java_ready(struct java_proc *p)
{
	if (!p->ready)
		bpf_loop(1, java_ready_step, &p, 0);
	return p->ready;
}

struct java_segmap_walk {
	__u64 segmap, seg;
	int found; /* 1 at the block's start, -1 on a free or unreadable segment */
};

/* One step back through a code heap's segment map: each byte says how many segments back
 * the block's start is, 0 at it and 0xff for a free segment. */
static long java_segmap_step(__u32 i, void *ctx)
{
	struct java_segmap_walk *s = ctx;
	__u8 b;

	if (bpf_probe_read_user(&b, 1, (void *)(s->segmap + s->seg)) || b == 0xff || b > s->seg) {
		s->found = -1;
		return 1;
	}
	if (!b) {
		s->found = 1;
		return 1;
	}
	s->seg -= b;
	return 0;
}

/* The code blob that holds pc (in the code cache, not the interpreter's): its address, or 0. */
static __always_inline __u64 java_find_blob(const struct java_proc *p, __u64 pc)
{
	struct java_segmap_walk s = {};
	__u64 low = 0;
	__u32 log2 = 0;

	for (__u32 i = 0; i < JAVA_MAX_HEAPS; i++) {
		if (i < p->nheaps && pc >= p->heaps[i].low && pc < p->heaps[i].high) {
			low = p->heaps[i].low;
			s.segmap = p->heaps[i].segmap;
			log2 = p->heaps[i].log2_segment & 31;
			break;
		}
	}
	if (!s.segmap)
		return 0;
	s.seg = (pc - low) >> log2;
	bpf_loop(JAVA_SEGMAP_HOPS, java_segmap_step, &s, 0);
	if (s.found != 1)
		return 0;
	return low + (s.seg << log2) + p->l.size_heap_block;
}

/*
 * The stamp of a method: never 0, 0 when it could not be read. A freed Method's address may
 * come back for another method; its ConstMethod, constant pool and indexes tell them apart,
 * but not always: a class unloaded and another of the same shape loaded in the freed metaspace
 * (tests/programs/java/Unload.java) gets every one of them back, its class's name Symbol's
 * address too (a freed Symbol's memory reused). The Symbol's hash, random at its making
 * (os::random), tells the two names apart but once in 65 536. sc->cm holds the ConstMethod's
 * first bytes after it.
 */
static __always_inline __u32 java_stamp(struct java_scratch *sc, __u64 method, __u64 *ret_cm)
{
	const struct jvm_layout *l = &sc->p.l;
	__u64 cm, cp, h, holder, name;

	cm = py_read64(method + l->m_const_method.off);
	if (!cm || bpf_probe_read_user(sc->cm, sizeof(sc->cm), (void *)cm))
		return 0;
	*ret_cm = cm;
	cp = JF64(sc->cm, l->cm_constants);
	holder = cp ? py_read64(cp + l->cp_pool_holder.off) : 0;
	name = holder ? py_read64(holder + l->klass_name.off) : 0;
	h = py_mix(method, cm);
	h = py_mix(h, cp);
	if (name && l->sym_hash.size == 4)
		h = py_mix(h, name ^ (__u64)(java_read32(name + l->sym_hash.off) >> 16) << 48);
	h = py_mix(h, (__u64)JF16(sc->cm, l->cm_code_size) |
			      (__u64)JF16(sc->cm, l->cm_name_index) << 16 |
			      (__u64)JF16(sc->cm, l->cm_signature_index) << 32);
	h ^= h >> 32;
	return (__u32)h ? (__u32)h : 1;
}

/* The four strings of a record: where each goes in its data and its room there. */
#define JAVA_SYM_CLASS 0
#define JAVA_SYM_NAME 1
#define JAVA_SYM_SIG 2
#define JAVA_SYM_FILE 3

/* One Symbol's bytes into the record (a step of a bpf_loop over the four: one check). */
static long java_sym_step(__u32 i, void *ctx)
{
	struct java_scratch *sc = *(struct java_scratch **)ctx;
	__u32 k = i & 3, off, cap;
	__u64 sym, n;

	if (!sc)
		return 1;
	off = k == JAVA_SYM_CLASS  ? 0
	      : k == JAVA_SYM_NAME ? JAVA_CLASS_MAX
	      : k == JAVA_SYM_SIG  ? JAVA_CLASS_MAX + JAVA_NAME_MAX
				   : JAVA_CLASS_MAX + JAVA_NAME_MAX + JAVA_SIG_MAX;
	cap = k == JAVA_SYM_CLASS  ? JAVA_CLASS_MAX
	      : k == JAVA_SYM_NAME ? JAVA_NAME_MAX
	      : k == JAVA_SYM_SIG  ? JAVA_SIG_MAX
				   : JAVA_FILE_MAX;
	sym = sc->syms[k];
	sc->lens[k] = 0;
	if (!sym || bpf_probe_read_user(sc->sym, sizeof(sc->sym), (void *)sym))
		return 0;
	n = JF16(sc->sym, sc->p.l.sym_length);
	if (n > cap) {
		n = cap;
		sc->rec.flags |= JAVA_M_CUT;
	}
	asm volatile("" : "+r"(n)); /* the bound is checked on the register the read takes */
	if (!n || n > 256 || off > JAVA_STRINGS - 128 ||
	    bpf_probe_read_user(sc->rec.data + off, n, (void *)(sym + sc->p.l.sym_body.off)))
		return 0;
	sc->lens[k] = (__u16)n;
	return 0;
}

/* Puts method's record into the ring buffer: 0, or -1 (nothing sent, counted). */
static __always_inline int java_send_method(struct java_scratch *sc, __u32 tgid, __u64 method,
					    __u64 cm, __u32 stamp)
{
	const struct jvm_layout *l = &sc->p.l;
	struct sc_jmethod *r = &sc->rec;
	__u64 cp, holder, pool, size, lines, n;
	__u32 cmflags;
	__u16 fidx;

	cp = JF64(sc->cm, l->cm_constants);
	if (!cp) {
		stat_inc(SC_STAT_JAVA_METHOD_LOST);
		return -1;
	}
	pool = cp + l->size_constant_pool;
	r->kind = SC_REC_JMETHOD;
	r->tgid = tgid;
	r->method = method;
	r->stamp = stamp;
	r->jdk = l->major;
	r->flags = 0;
	r->code_size = JF16(sc->cm, l->cm_code_size);
	cmflags = l->cm_flags.size == 4 ? JF32(sc->cm, l->cm_flags) : JF16(sc->cm, l->cm_flags);
	holder = py_read64(cp + l->cp_pool_holder.off);
	sc->syms[JAVA_SYM_CLASS] = holder ? py_read64(holder + l->klass_name.off) : 0;
	sc->syms[JAVA_SYM_NAME] = py_read64(pool + 8 * (__u64)JF16(sc->cm, l->cm_name_index));
	sc->syms[JAVA_SYM_SIG] = py_read64(pool + 8 * (__u64)JF16(sc->cm, l->cm_signature_index));
	fidx = 0;
	bpf_probe_read_user(&fidx, sizeof(fidx), (void *)(cp + l->cp_source_file.off));
	sc->syms[JAVA_SYM_FILE] = fidx ? py_read64(pool + 8 * (__u64)fidx) : 0;
	bpf_loop(4, java_sym_step, &sc, 0);
	r->class_len = sc->lens[JAVA_SYM_CLASS];
	r->name_len = sc->lens[JAVA_SYM_NAME];
	r->sig_len = sc->lens[JAVA_SYM_SIG];
	r->file_len = sc->lens[JAVA_SYM_FILE];
	/* The table's length is not kept: as much as reads, the shipper stops at its end. */
	r->lines_len = 0;
	if (cmflags & (__u32)l->linenumber_flag) {
		r->flags |= JAVA_M_HAS_LINES;
		lines = cm + l->size_const_method + r->code_size;
		n = JAVA_LINES_MAX;
		if (bpf_probe_read_user(r->data + JAVA_STRINGS, JAVA_LINES_MAX, (void *)lines)) {
			/* Near the end of its memory: the page's rest. */
			n = SC_SNAP_PAGE - (lines & (SC_SNAP_PAGE - 1));
			asm volatile("" : "+r"(n));
			if (n > JAVA_LINES_MAX || !n ||
			    bpf_probe_read_user(r->data + JAVA_STRINGS, n, (void *)lines))
				n = 0;
		}
		r->lines_len = (__u16)n;
		if (n == JAVA_LINES_MAX)
			r->flags |= JAVA_M_LINES_CUT;
	}
	size = __builtin_offsetof(struct sc_jmethod, data) + JAVA_STRINGS + r->lines_len;
	if (size > sizeof(*r) || bpf_ringbuf_output(&snaps, r, size, snap_wake_flag())) {
		stat_inc(SC_STAT_JAVA_METHOD_LOST);
		return -1;
	}
	return 0;
}

/* java_method_rec's result: the method's record is still to be sent (a later sample's). */
#define JAVA_REC_PENDING (1ll << 32)

/*
 * The stamp of method, its record sent if the programs have not sent it yet and the sample's
 * budget (JAVA_NEW_METHODS) allows: the stamp, with JAVA_REC_PENDING when its record is still
 * to be sent; 0 when the method could not be read. sc->cm holds its ConstMethod's first bytes
 * after, the walk's cm its address. A global function: the verifier checks it once, not at
 * each of its callers (a frame, an nmethod's metadata).
 */
__noinline long java_method_rec(__u64 method)
{
	struct java_method_key key = {};
	struct java_walk_state *w;
	struct java_scratch *sc;
	__u32 zero = 0, stamp, *known;
	__u64 cm = 0;

	sc = bpf_map_lookup_elem(&java_scratch, &zero);
	if (!sc || !method)
		return 0;
	w = &sc->walk;
	stamp = java_stamp(sc, method, &cm);
	if (!stamp)
		return 0;
	w->cm = cm;
	key.method = method;
	key.tgid = w->tgid;
	known = bpf_map_lookup_elem(&java_methods, &key);
	if (known && *known == stamp)
		return stamp;
	if (w->new_methods >= JAVA_NEW_METHODS)
		return stamp | JAVA_REC_PENDING; /* a later sample reads it */
	w->new_methods++;
	if (java_send_method(sc, w->tgid, method, cm, stamp))
		return stamp | JAVA_REC_PENDING;
	bpf_map_update_elem(&java_methods, &key, &stamp, BPF_ANY);
	return stamp;
}

/*
 * A py_threads value (tid -> the thread's JavaThread*: a process is Python or Java, never
 * both, and a tid is one thread's) with this bit set: the thread is no JavaThread of the
 * thread list at the address in the other bits (a JavaThread* is aligned). A new list (a
 * thread started or ended) asks again.
 */
#define JAVA_THREAD_NOT 1ull

struct java_thread_walk {
	__u64 threads; /* ThreadsList::_threads: the array of JavaThread* */
	__u64 found;
	__u32 len, tid;
	__u32 osthread, thread_id; /* the layout's offsets */
};

/* One JavaThread of the list: whether its OSThread's tid is the one looked for. */
static long java_thread_step(__u32 i, void *ctx)
{
	struct java_thread_walk *t = ctx;
	__u64 jt, os;

	if (i >= t->len)
		return 1;
	jt = py_read64(t->threads + 8 * (__u64)i);
	os = jt ? py_read64(jt + t->osthread) : 0;
	if (os && java_read32(os + t->thread_id) == t->tid) {
		t->found = jt;
		return 1;
	}
	return 0;
}

/*
 * The current thread's JavaThread, 0 when it is none (or the JVM has no list yet): cached by
 * tid in py_threads and checked at each use against the tid its OSThread holds, found again
 * through ThreadsSMRSupport::_java_thread_list when that fails. A thread that is no JavaThread
 * (the GC's, the VM thread) is remembered as such for as long as the list is the same.
 */
static __always_inline __u64 java_thread(const struct java_proc *p, __u32 tid)
{
	const struct jvm_layout *l = &p->l;
	struct java_thread_walk t = { .tid = tid,
				      .osthread = l->jt_osthread.off,
				      .thread_id = l->os_thread_id.off };
	__u64 *cached, list, c, os;

	if (!l->thread_list || !l->tl_threads.size || !l->tl_length.size || !l->jt_osthread.size ||
	    !l->os_thread_id.size || !l->jt_anchor.size)
		return 0;
	list = py_read64(p->start + l->thread_list);
	cached = bpf_map_lookup_elem(&py_threads, &tid);
	c = cached ? *cached : 0;
	if (c & JAVA_THREAD_NOT) {
		if ((c & ~JAVA_THREAD_NOT) == list)
			return 0;
	} else if (c) {
		os = py_read64(c + t.osthread);
		if (os && java_read32(os + t.thread_id) == tid)
			return c;
	}
	if (!list)
		return 0;
	t.len = java_read32(list + l->tl_length.off);
	t.threads = py_read64(list + l->tl_threads.off);
	if (!t.threads || !t.len)
		return 0;
	bpf_loop(JAVA_MAX_THREADS, java_thread_step, &t, 0);
	c = t.found ? t.found : list | JAVA_THREAD_NOT;
	bpf_map_update_elem(&py_threads, &tid, &c, BPF_ANY);
	return t.found;
}

/*
 * The walk goes on (or starts) at the last Java frame a JavaFrameAnchor at addr holds, into
 * the walk's state: JAVA_ST_OK, or JAVA_ST_NOT_IN_JAVA when it holds none. HotSpot writes the
 * anchor's sp last when it sets it and first when it clears it, for profilers that read it
 * asynchronously; a pc of 0 means the frame's return address is the word below its sp. The
 * frame is on this thread's stack, above the frames walked (w->sp): another thread's anchor
 * (a JavaThread freed and its memory reused while its tid was cached) is not walked. A global
 * function: checked once for its two callers (the thread's anchor, an entry frame's).
 */
__noinline int java_anchor(__u64 addr)
{
	struct java_scratch *sc;
	struct java_walk_state *w;
	const struct jvm_layout *l;
	__u32 zero = 0;
	__u64 sp, pc;

	sc = bpf_map_lookup_elem(&java_scratch, &zero);
	if (!sc)
		return JAVA_ST_FAULT;
	w = &sc->walk;
	l = &sc->p.l;
	if (bpf_probe_read_user(sc->anchor, sizeof(sc->anchor), (void *)addr))
		return JAVA_ST_FAULT;
	sp = JF64(sc->anchor, l->anchor_sp);
	if (!sp)
		return JAVA_ST_NOT_IN_JAVA;
	if (sp < w->sp || sp - w->sp > JAVA_ANCHOR_MAX_DEPTH)
		return JAVA_ST_FAULT;
	pc = JF64(sc->anchor, l->anchor_pc);
	w->pc = pc ? pc : py_read64(sp - 8);
	w->sp = sp;
	w->fp = JF64(sc->anchor, l->anchor_fp);
	w->first = 0;
	return JAVA_ST_OK;
}

/* Where the walk starts for a thread not in Java code: its last Java frame, from its
 * JavaThread's frame anchor. JAVA_ST_OK, or why there is none. */
static __always_inline __u32 java_from_anchor(struct java_scratch *sc, __u32 tid)
{
	__u64 jt = java_thread(&sc->p, tid);

	if (!jt)
		return JAVA_ST_NO_THREAD;
	return (__u32)java_anchor(jt + sc->p.l.jt_anchor.off);
}

/* The callback's context: two pointers, whose targets hold the state (java_walk_state). */
struct java_walk {
	struct java_scratch *sc;
	struct sc_snap_scratch *ss;
};

/* Records an interpreted frame of method at bcp and sends the method's record if it is new. */
static __always_inline void java_put_frame(struct java_scratch *sc, struct sc_snap_scratch *ss,
					   __u64 method, __u64 bcp)
{
	struct java_walk_state *w = &sc->walk;
	struct py_frame *f;
	__u32 at, stamp, instr = JAVA_FRAME_INTERPRETED | JAVA_FRAME_NO_BCI;
	__u64 base;

	stamp = (__u32)java_method_rec(method);
	if (!stamp) {
		w->status = JAVA_ST_FAULT;
		return;
	}
	if (bcp) {
		base = w->cm + sc->p.l.size_const_method;
		if (bcp >= base && bcp - base < JF16(sc->cm, sc->p.l.cm_code_size))
			instr = JAVA_FRAME_INTERPRETED | (__u32)(bcp - base);
	}
	if (w->kb > SC_STACK_DEPTH * 8)
		return;
	at = w->kb + w->n * sizeof(struct py_frame);
	if (at > SC_STACK_DEPTH * 8 + (PY_MAX_FRAMES - 1) * sizeof(struct py_frame))
		return;
	f = (struct py_frame *)(ss->s.data + at);
	f->code = method;
	f->stamp = stamp;
	f->instr = instr;
	w->n++;
}

/* One metadata entry of the nmethod whose record is being made (a step of a bpf_loop): a
 * Method* is kept with its stamp, its record sent (or, past the budget, left pending). */
static long java_meta_step(__u32 i, void *ctx)
{
	struct java_scratch *sc = *(struct java_scratch **)ctx;
	struct jnm_meta *e;
	__u64 m, k;
	long rec;

	if (!sc || i >= sc->nmeta)
		return 1;
	k = i & (JAVA_NM_META_MAX - 1);
	asm volatile("" : "+r"(k)); /* the mask on the register the index takes */
	e = &sc->nrec.meta[k];
	e->method = 0;
	e->stamp = 0;
	m = sc->meta_raw[k];
	if (!m || (m & 7) || py_read64(m) != sc->method_vt)
		return 0;
	rec = java_method_rec(m);
	if (!(__u32)rec)
		return 0;
	if (rec & JAVA_REC_PENDING)
		sc->meta_pending = 1;
	e->method = m;
	e->stamp = (__u32)rec;
	return 0;
}

/* A field of an nmethod that is an int offset, or (8 bytes wide) a pointer. */
static __always_inline __u64 java_nm_word(struct java_scratch *sc, struct jvm_field f)
{
	return f.size == 8 ? JF64(sc->blob, f) : JF32(sc->blob, f);
}

/*
 * Sends the record of the nmethod at blob (its header in sc->blob) after the records of the
 * methods it names: 0, or -1 when it waits for a later sample (a method's record pending, the
 * ring full). Its PcDescs, scope data and metadata lie in the nmethod (JDK 17), in its
 * immutable data (JDK 23+) and its mutable data (JDK 25+): where the layout's flags say.
 */
static __always_inline int java_nm_send(struct java_scratch *sc, __u32 tgid, __u64 blob,
					__u32 stamp)
{
	const struct jvm_layout *l = &sc->p.l;
	struct sc_jnmethod *r = &sc->nrec;
	__u64 method, pcs, pcs_end, scopes, scopes_end, meta = 0, meta_end = 0, imm, mut, n, k;
	__u32 size;
	long rec;

	method = JF64(sc->blob, l->nm_method);
	rec = java_method_rec(method);
	if (!(__u32)rec || (rec & JAVA_REC_PENDING))
		return -1;
	r->kind = SC_REC_JNMETHOD;
	r->tgid = tgid;
	r->nmethod = blob;
	r->stamp = stamp;
	r->jdk = l->major;
	r->flags = 0;
	r->method = method;
	r->method_stamp = (__u32)rec;
	r->pc_size = (__u8)l->size_pc_desc;
	r->pc_off = (__u8)l->pc_pc_offset.off;
	r->scope_off = (__u8)l->pc_scope_decode.off;
	if (l->flags & JVM_F_IMMUTABLE_DATA) {
		imm = JF64(sc->blob, l->nm_immutable_data);
		pcs = imm + java_nm_word(sc, l->nm_scopes_pcs);
		pcs_end = imm + java_nm_word(sc, l->nm_scopes_data);
		scopes = pcs_end;
		scopes_end = imm + JF32(sc->blob, l->nm_immutable_size);
	} else {
		pcs = blob + java_nm_word(sc, l->nm_scopes_pcs);
		pcs_end = blob + java_nm_word(sc, l->nm_dependencies);
		scopes = java_nm_word(sc, l->nm_scopes_data);
		scopes_end = pcs;
	}
	if (l->flags & JVM_F_MUTABLE_METADATA) {
		mut = JF64(sc->blob, l->blob_mutable_data);
		meta = mut + JF32(sc->blob, l->blob_relocation_size);
		meta_end = l->blob_mutable_size.size ? mut + JF32(sc->blob, l->blob_mutable_size)
						     : meta + JAVA_NM_META_MAX * 8;
	} else if (l->nm_metadata.size) {
		meta = blob + java_nm_word(sc, l->nm_metadata);
		meta_end = l->flags & JVM_F_IMMUTABLE_DATA ? meta + JAVA_NM_META_MAX * 8 : scopes;
	}
	/* The metadata: Method* told from the rest by their vtable, the nmethod's method's. */
	n = meta && meta_end > meta ? (meta_end - meta) / 8 : 0;
	if (n > JAVA_NM_META_MAX) {
		n = JAVA_NM_META_MAX;
		r->flags |= JAVA_NM_META_CUT;
	}
	asm volatile("" : "+r"(n));
	if (n > JAVA_NM_META_MAX || !n || bpf_probe_read_user(sc->meta_raw, n * 8, (void *)meta))
		n = 0;
	sc->nmeta = (__u32)n;
	sc->method_vt = py_read64(method);
	sc->meta_pending = 0;
	bpf_loop(JAVA_NM_META_MAX, java_meta_step, &sc, 0);
	if (sc->meta_pending)
		return -1;
	r->nmeta = (__u16)n;
	/* The PcDescs, whole ones. */
	n = pcs_end > pcs ? pcs_end - pcs : 0;
	if (n > JAVA_NM_PCS_MAX) {
		n = JAVA_NM_PCS_MAX;
		r->flags |= JAVA_NM_PCS_CUT;
	}
	if (l->size_pc_desc)
		n -= n % l->size_pc_desc;
	asm volatile("" : "+r"(n));
	if (n > JAVA_NM_PCS_MAX || !n || bpf_probe_read_user(r->data, n, (void *)pcs))
		n = 0;
	r->pcs_len = (__u16)n;
	/* The scope data, or as much of it as its page holds. */
	k = scopes_end > scopes ? scopes_end - scopes : 0;
	if (k > JAVA_NM_SCOPES_MAX) {
		k = JAVA_NM_SCOPES_MAX;
		r->flags |= JAVA_NM_SCOPES_CUT;
	}
	asm volatile("" : "+r"(k));
	if (n > JAVA_NM_PCS_MAX || k > JAVA_NM_SCOPES_MAX || !k ||
	    bpf_probe_read_user(r->data + n, k, (void *)scopes)) {
		k = SC_SNAP_PAGE - (scopes & (SC_SNAP_PAGE - 1));
		r->flags |= JAVA_NM_SCOPES_CUT;
		asm volatile("" : "+r"(k));
		if (!scopes || n > JAVA_NM_PCS_MAX || k > JAVA_NM_SCOPES_MAX || !k ||
		    bpf_probe_read_user(r->data + n, k, (void *)scopes))
			k = 0;
	}
	r->scopes_len = (__u16)k;
	size = __builtin_offsetof(struct sc_jnmethod, data) + (__u32)n + (__u32)k;
	if (size > sizeof(*r) || bpf_ringbuf_output(&snaps, r, size, snap_wake_flag())) {
		stat_inc(SC_STAT_JAVA_METHOD_LOST);
		return -1;
	}
	return 0;
}

/*
 * Records the compiled frame of the nmethod at blob (its header in the scratch's blob) at pc
 * offset off from its code begin (top: the sampled pc) and sends the nmethod's record if it is
 * new. A global function: checked once, on its own.
 */
__noinline int java_put_nm(__u64 blob, __u64 off, __u32 top)
{
	struct java_nmethod_key key = {};
	struct sc_snap_scratch *ss;
	struct java_walk_state *w;
	struct java_scratch *sc;
	const struct jvm_layout *l;
	struct py_frame *f;
	__u32 zero = 0, at, stamp, *known;
	__u64 h;

	sc = bpf_map_lookup_elem(&java_scratch, &zero);
	ss = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!sc || !ss)
		return 0;
	w = &sc->walk;
	l = &sc->p.l;
	/* A freed nmethod's memory reused for another: another compile id (and method). */
	h = py_mix(blob, JF64(sc->blob, l->nm_method));
	h = py_mix(h, JF32(sc->blob, l->nm_compile_id));
	h ^= h >> 32;
	stamp = (__u32)h ? (__u32)h : 1;
	if (w->kb > SC_STACK_DEPTH * 8 || w->n >= PY_MAX_FRAMES)
		return 0;
	at = w->kb + w->n * sizeof(struct py_frame);
	if (at > SC_STACK_DEPTH * 8 + (PY_MAX_FRAMES - 1) * sizeof(struct py_frame))
		return 0;
	f = (struct py_frame *)(ss->s.data + at);
	f->code = blob;
	f->stamp = stamp;
	f->instr = JAVA_FRAME_COMPILED | (top ? JAVA_FRAME_TOP : 0) |
		   (off <= JAVA_FRAME_PC_MASK ? (__u32)off : JAVA_FRAME_NO_BCI);
	w->n++;
	key.nmethod = blob;
	key.tgid = w->tgid;
	known = bpf_map_lookup_elem(&java_nmethods, &key);
	if ((known && *known == stamp) || w->new_methods >= JAVA_NEW_METHODS)
		return 0;
	w->new_methods++;
	if (!java_nm_send(sc, w->tgid, blob, stamp))
		bpf_map_update_elem(&java_nmethods, &key, &stamp, BPF_ANY);
	return 0;
}

/*
 * The entry frame (the call stub's: native code called the Java frames walked): recorded as a
 * frame of its own (JAVA_FRAME_ENTRY with its frame pointer), from which the shipper unwinds
 * the native frames that called it. The walk goes on at the Java frames that called those
 * native frames, if any: the thread's last Java frame when it entered them, which the call's
 * JavaCallWrapper saved (HotSpot's frame::sender_for_entry_frame); none (a sp of 0) where the
 * thread started in native code (its start routine, a program that created the JVM). 1: the
 * walk ends, 0: it goes on.
 */
static __always_inline long java_entry(struct java_scratch *sc, struct sc_snap_scratch *ss)
{
	const struct jvm_layout *l = &sc->p.l;
	struct java_walk_state *w = &sc->walk;
	struct py_frame *f;
	__u64 jcw;
	__u32 at;
	int st;

	if (w->n >= PY_MAX_FRAMES) {
		w->status = JAVA_ST_CUT;
		return 1;
	}
	at = w->kb + w->n * sizeof(struct py_frame);
	if (w->kb > SC_STACK_DEPTH * 8 ||
	    at > SC_STACK_DEPTH * 8 + (PY_MAX_FRAMES - 1) * sizeof(struct py_frame))
		return 1;
	f = (struct py_frame *)(ss->s.data + at);
	f->code = w->fp;
	f->stamp = 0;
	f->instr = JAVA_FRAME_ENTRY;
	w->n++;
	jcw = py_read64(w->fp + (__s64)l->entry_frame_call_wrapper * 8);
	if (!jcw || !l->call_wrapper_anchor.size)
		return 1;
	st = java_anchor(jcw + l->call_wrapper_anchor.off);
	if (st == JAVA_ST_OK)
		return 0;
	if (st != JAVA_ST_NOT_IN_JAVA)
		w->status = st;
	return 1;
}

static long java_frame_step(__u32 i, void *ctx)
{
	struct java_walk *wk = ctx;
	struct sc_snap_scratch *ss = wk->ss;
	struct java_scratch *sc = wk->sc;
	struct java_walk_state *w;
	const struct java_proc *p;
	__u64 pc, blob, code, method = 0, bcp = 0, npc, nsp, nfp;
	__u32 fsize, complete, kind = 0;
	int nm;

	if (!sc || !ss)
		return 1;
	w = &sc->walk;
	p = &sc->p;
	pc = w->pc;
	if (pc == p->call_stub_ret)
		return java_entry(sc, ss);
	if (pc < p->code_low || pc >= p->code_high) {
		if (w->first)
			w->status = JAVA_ST_NOT_IN_JAVA;
		return 1;
	}
	if (w->n >= PY_MAX_FRAMES) {
		w->status = JAVA_ST_CUT;
		return 1;
	}
	if (pc >= p->interp_low && pc < p->interp_high) {
		__s32 m = p->l.interp.method + JAVA_IFRAME_LO, b = p->l.interp.bcp + JAVA_IFRAME_LO,
		      s = p->l.interp.sender_sp + JAVA_IFRAME_LO,
		      lk = p->l.interp.link + JAVA_IFRAME_LO, r = p->l.interp.ret + JAVA_IFRAME_LO;

		if (!w->fp || m < 0 || m >= JAVA_IFRAME_WORDS || b < 0 || b >= JAVA_IFRAME_WORDS ||
		    s < 0 || s >= JAVA_IFRAME_WORDS || lk < 0 || lk >= JAVA_IFRAME_WORDS || r < 0 ||
		    r >= JAVA_IFRAME_WORDS ||
		    bpf_probe_read_user(sc->frame, sizeof(sc->frame),
					(void *)(w->fp - JAVA_IFRAME_LO * 8))) {
			w->status = JAVA_ST_FAULT;
			return 1;
		}
		method = sc->frame[m];
		bcp = w->first ? w->r13 : sc->frame[b];
		kind = JAVA_FRAME_INTERPRETED;
		/* The caller's sp is the one it had before the interpreter extended its frame. */
		npc = sc->frame[r];
		nsp = sc->frame[s];
		nfp = sc->frame[lk];
	} else {
		blob = java_find_blob(p, pc);
		if (!blob) {
			w->status = JAVA_ST_FAULT;
			return 1;
		}
		if (bpf_probe_read_user(sc->blob, sizeof(sc->blob), (void *)blob)) {
			/* A small stub at the end of what is readable: no nmethod. */
			__builtin_memset(sc->blob + JAVA_BLOB_MIN, 0,
					 JAVA_BLOB_READ - JAVA_BLOB_MIN);
			if (bpf_probe_read_user(sc->blob, JAVA_BLOB_MIN, (void *)blob)) {
				w->status = JAVA_ST_FAULT;
				return 1;
			}
		}
		if (p->l.flags & JVM_F_BLOB_OFFSETS)
			code = blob + JF32(sc->blob, p->l.blob_code_begin);
		else
			code = JF64(sc->blob, p->l.blob_code_begin);
		fsize = JF32(sc->blob, p->l.blob_frame_size);
		complete = p->l.blob_frame_complete.size == 2
				   ? (__u32)(__s16)JF16(sc->blob, p->l.blob_frame_complete)
				   : JF32(sc->blob, p->l.blob_frame_complete);
		if (p->l.flags & JVM_F_BLOB_KIND) {
			nm = JF8(sc->blob, p->l.blob_kind) == (__u32)p->l.kind_nmethod;
		} else {
			__u64 name = 0, at = JF64(sc->blob, p->l.blob_name);

			/* "nmethod", or "native nmethod": a native method's wrapper, its frame
			 * the native method's. */
			bpf_probe_read_user(&name, sizeof(name), (void *)at);
			nm = name == 0x00646f6874656d6eull;  /* "nmethod\0" */
			if (name == 0x6e2065766974616eull) { /* "native n" */
				name = 0;
				bpf_probe_read_user(&name, 7, (void *)(at + 8));
				nm = name == 0x00646f6874656dull; /* "method\0" */
			}
		}
		if (fsize > 4096 || pc < code) {
			w->status = JAVA_ST_FAULT;
			return 1;
		}
		/* Before its frame is complete, the innermost frame's sp is at its return address
		 * and its caller's frame pointer still in rbp. */
		if (w->first && pc - code < complete) {
			nsp = w->sp + 8;
			nfp = w->fp;
		} else {
			nsp = w->sp + fsize * 8;
			nfp = py_read64(nsp - 16);
		}
		npc = py_read64(nsp - 8);
		if (nm)
			java_put_nm(blob, pc - code, w->first);
	}
	if (kind) {
		java_put_frame(sc, ss, method, bcp);
		if (w->status != JAVA_ST_OK)
			return 1;
	}
	w->pc = npc;
	w->sp = nsp;
	w->fp = nfp;
	w->first = 0;
	return 0;
}

/*
 * The current thread's (tid's) Java frames into the snapshot in snap_scratch, after its kb
 * bytes of kernel frames, from its user registers or, when they are not in Java code, from its
 * last Java frame: their count, and the status in *ret_status (JAVA_ST_NONE for a process
 * that is not Java).
 */
static __always_inline __u32 java_frames(__u32 tgid, __u32 tid, __u32 kb, __u64 ip, __u64 sp,
					 __u64 bp, __u64 r13, __u32 *ret_status)
{
	struct java_walk wk = {};
	struct java_walk_state *w;
	struct sc_snap_scratch *ss;
	struct java_scratch *sc;
	struct java_proc *p;
	__u32 zero = 0;

	*ret_status = JAVA_ST_NONE;
	p = bpf_map_lookup_elem(&java_procs, &tgid);
	sc = bpf_map_lookup_elem(&java_scratch, &zero);
	if (!p || !sc || !java_mapped(p, tgid))
		return 0;
	if (!java_ready(p)) {
		*ret_status = JAVA_ST_NO_CODE;
		return 0;
	}
	sc->p = *p;
	w = &sc->walk;
	w->tgid = tgid;
	w->kb = kb;
	w->n = 0;
	w->new_methods = 0;
	w->status = JAVA_ST_OK;
	w->pc = ip;
	w->sp = sp;
	w->fp = bp;
	w->r13 = r13;
	w->first = 1;
	if (ip < sc->p.code_low || ip >= sc->p.code_high) {
		w->status = java_from_anchor(sc, tid);
		if (w->status != JAVA_ST_OK) {
			*ret_status = w->status;
			return 0;
		}
	}
	ss = bpf_map_lookup_elem(&snap_scratch, &zero);
	if (!ss)
		return 0;
	wk.sc = sc;
	wk.ss = ss;
	bpf_loop(PY_MAX_FRAMES + 16, java_frame_step, &wk, 0);
	*ret_status = w->status;
	return w->n;
}

#endif
