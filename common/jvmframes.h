/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Java (HotSpot) frames: what the worker learns about a target's libjvm.so from the file alone
 * (worker/jvmstructs.c), for the frame walker that reads the target's memory at each sample.
 * Fixed-width types only.
 *
 * HotSpot describes its own C++ classes in four tables it exports for its serviceability agent
 * (gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants, gHotSpotVMLongConstants). In
 * the file, the tables' names and static addresses are relocations and the field offsets are
 * stores in the library's static initializer (docs/java-frames.md says how each is found):
 * nothing here was read from a process. A field is where it sits from the start of its class,
 * with its width in bytes; width 0 means this JDK has no such field. A static address is the
 * variable's address less the address the library's first byte is mapped at.
 */
#ifndef ROVER_COMMON_JVMFRAMES_H
#define ROVER_COMMON_JVMFRAMES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct jvm_field {
	__u16 off;
	__u8 size; /* bytes (an embedded class's size, 255 when larger); 0: absent in this JDK */
	__u8 pad;
};

/* struct jvm_layout flags: what changed between JDKs, as the tables show it. */
/* CodeBlob's code begin and end are int offsets from the blob (JDK 23+), not pointers. */
#define JVM_F_BLOB_OFFSETS 1u
/* An nmethod's scope descriptors and pc descriptors lie in its _immutable_data (JDK 23+), at
 * the nmethod's offsets; before, the pc descriptors are at an offset from the nmethod and the
 * scope data at CompiledMethod::_scopes_data_begin. */
#define JVM_F_IMMUTABLE_DATA 2u
/* An nmethod's metadata (the Method* of inlined scopes) follows its relocations in
 * CodeBlob::_mutable_data (JDK 25+); before, it is at nmethod::_metadata_offset. */
#define JVM_F_MUTABLE_METADATA 4u
/* CodeBlob::_kind tells an nmethod (JDK 23+); before, only its _name ("nmethod") does. */
#define JVM_F_BLOB_KIND 8u
/* ConstMethod::_flags is the 32-bit ConstMethodFlags (JDK 21+); before, a u2. */
#define JVM_F_CM_FLAGS32 16u

/*
 * Slots of an interpreted frame, in words from its saved frame pointer. HotSpot's
 * vmStructs hold only the first two (checked against these); the rest are fixed by the
 * interpreter's generator for each architecture (src/hotspot/cpu/x86/frame_x86.hpp), the same
 * from JDK 9 to 25 on x86-64.
 */
struct jvm_interp_frame {
	__s8 sender_sp;	 /* -1: the caller's stack pointer */
	__s8 last_sp;	 /* -2 */
	__s8 method;	 /* -3: the Method* */
	__s8 mirror;	 /* -4 (JDK 9+) */
	__s8 mdp;	 /* -5 */
	__s8 cache;	 /* -6 */
	__s8 locals;	 /* -7: relative to the frame pointer from JDK 21, absolute before */
	__s8 bcp;	 /* -8: the bytecode pointer, saved at calls (r13 holds it while running) */
	__s8 initial_sp; /* -9 */
	__s8 link;	 /* 0: the caller's frame pointer */
	__s8 ret;	 /* 1: the return address */
	__s8 pad[5];
};

struct jvm_layout {
	/* The JDK: Abstract_VM_Version's numbers, as the file initializes them. */
	__u16 major, minor, security, build;
	__u32 flags; /* JVM_F_* */
	__u32 pad0;

	/* Static variables, from the library's load address. */
	__u64 code_heaps;    /* CodeCache::_heaps: GrowableArray<CodeHeap*>* */
	__u64 code_low;	     /* CodeCache::_low_bound: address */
	__u64 code_high;     /* CodeCache::_high_bound: address */
	__u64 call_stub_ret; /* StubRoutines::_call_stub_return_address: address */
	__u64 interp_code;   /* AbstractInterpreter::_code: StubQueue* */
	__u64 vm_release;    /* Abstract_VM_Version::_s_vm_release: const char* */
	__u64 thread_list;   /* ThreadsSMRSupport::_java_thread_list: ThreadsList* */

	/* Sizes of classes: where what follows an object starts. */
	__u16 size_heap_block; /* a code heap block's header: the CodeBlob follows */
	__u16 size_code_blob;
	__u16 size_nmethod;
	__u16 size_method;
	__u16 size_const_method;  /* the bytecodes follow */
	__u16 size_constant_pool; /* the pool's entries (8 bytes each) follow */
	__u16 size_symbol;
	__u16 size_pc_desc;

	/* Code cache: the heaps, their memory and segment maps. */
	struct jvm_field array_len;   /* GrowableArrayBase::_len */
	struct jvm_field array_data;  /* GrowableArray<int>::_data: the same for any element */
	struct jvm_field heap_memory; /* CodeHeap::_memory: VirtualSpace */
	struct jvm_field heap_segmap; /* CodeHeap::_segmap: VirtualSpace */
	struct jvm_field heap_log2_segment; /* CodeHeap::_log2_segment_size */
	struct jvm_field vs_low_boundary;   /* VirtualSpace::_low_boundary */
	struct jvm_field vs_high_boundary;  /* VirtualSpace::_high_boundary */
	struct jvm_field vs_high;	    /* VirtualSpace::_high: committed end */

	/* CodeBlob and nmethod. */
	struct jvm_field blob_name; /* const char*: "nmethod", "Interpreter", ... */
	struct jvm_field blob_size;
	struct jvm_field blob_kind;	      /* JDK 23+ */
	struct jvm_field blob_frame_complete; /* offset in the code where the frame is built */
	struct jvm_field blob_frame_size;     /* in words */
	struct jvm_field blob_code_begin;     /* pointer, or (JVM_F_BLOB_OFFSETS) offset */
	struct jvm_field blob_code_end;	      /* pointer, or CodeBlob::_data_offset */
	struct jvm_field blob_mutable_data;   /* JDK 25+ */
	struct jvm_field blob_relocation_size;
	struct jvm_field blob_mutable_size; /* JDK 25+: the metadata ends with the mutable data */
	struct jvm_field nm_method;	    /* Method* (CompiledMethod's before JDK 23) */
	struct jvm_field nm_compile_id;	    /* tells a freed and reused nmethod apart */
	struct jvm_field nm_entry_bci;	    /* -1 but for on-stack-replacement code */
	struct jvm_field nm_orig_pc_offset; /* where a deoptimized frame keeps its pc */
	struct jvm_field nm_deopt_handler;  /* pointer before JDK 23, offset after */
	struct jvm_field nm_scopes_pcs;	    /* offset of the PcDesc array */
	struct jvm_field nm_scopes_data;    /* pointer before JDK 23, offset after */
	struct jvm_field nm_metadata;	    /* offset, before JDK 25 */
	struct jvm_field nm_dependencies;   /* offset: the end of the pc descriptors, < JDK 23 */
	struct jvm_field nm_immutable_data; /* JDK 23+ */
	struct jvm_field nm_immutable_size; /* JDK 23+ */
	struct jvm_field pc_pc_offset;	    /* PcDesc */
	struct jvm_field pc_scope_decode;
	struct jvm_field pc_flags;

	/* Methods and their names. */
	struct jvm_field m_const_method; /* Method::_constMethod */
	struct jvm_field cm_constants;	 /* ConstMethod::_constants: ConstantPool* */
	struct jvm_field cm_flags;
	struct jvm_field cm_code_size;
	struct jvm_field cm_name_index;
	struct jvm_field cm_signature_index;
	struct jvm_field cp_pool_holder; /* ConstantPool::_pool_holder: InstanceKlass* */
	struct jvm_field cp_source_file; /* ConstantPool::_source_file_name_index */
	struct jvm_field klass_name;	 /* Klass::_name: Symbol* */
	struct jvm_field sym_length;	 /* Symbol::_length */
	struct jvm_field sym_body;	 /* Symbol::_body: the UTF-8 bytes */
	struct jvm_field sym_hash; /* Symbol::_hash_and_refcount: a random hash in the top 16 bits */

	/* Threads: where the last Java frame is when a thread is in native or VM code. */
	struct jvm_field jt_anchor;	      /* JavaThread::_anchor: JavaFrameAnchor */
	struct jvm_field jt_state;	      /* JavaThread::_thread_state */
	struct jvm_field jt_osthread;	      /* Thread::_osthread (JavaThread's in JDK 17) */
	struct jvm_field os_thread_id;	      /* OSThread::_thread_id: the kernel's tid */
	struct jvm_field tl_length;	      /* ThreadsList::_length */
	struct jvm_field tl_threads;	      /* ThreadsList::_threads: JavaThread *const * */
	struct jvm_field anchor_sp;	      /* JavaFrameAnchor::_last_Java_sp */
	struct jvm_field anchor_pc;	      /* JavaFrameAnchor::_last_Java_pc */
	struct jvm_field anchor_fp;	      /* JavaFrameAnchor::_last_Java_fp */
	struct jvm_field call_wrapper_anchor; /* JavaCallWrapper::_anchor */
	struct jvm_field sq_stub_buffer;      /* StubQueue: the interpreter's code */
	struct jvm_field sq_buffer_limit;

	/* Constants. */
	__s32 linenumber_flag; /* ConstMethod's flag: a line number table follows the code */
	__s32 entry_frame_call_wrapper; /* frame::entry_frame_call_wrapper_offset, in words */
	__s32 thread_in_java;		/* JavaThreadState values */
	__s32 thread_in_native;
	__s32 thread_in_vm;
	__s32 kind_nmethod; /* CodeBlobKind::Nmethod (JVM_F_BLOB_KIND), else 0 */
	struct jvm_interp_frame interp;

	/* What the tables held: for the logs and the docs. */
	__u16 n_structs, n_types, n_ints, n_longs;
};

/* ---- The frame walker (bpf/java.bpf.h) and what it records ---- */

/* Code heaps of a code cache the walker reads (HotSpot has at most three: non-nmethods,
 * profiled and non-profiled nmethods). */
#define JAVA_MAX_HEAPS 4
/* Steps back through a code heap's segment map to a block's start: each byte says how many
 * segments back to go (at most 254), so this bounds a blob to 64 steps of 254 segments (1 MiB
 * with 64-byte segments; the interpreter, larger, is found by its own range first). */
#define JAVA_SEGMAP_HOPS 64
/* New methods whose record is read per sample at most; the rest wait for a later sample. */
#define JAVA_NEW_METHODS 4
/* JavaThreads of a process's thread list looked through at most for the current thread. */
#define JAVA_MAX_THREADS 1024
/* Bytes of native frames between the sampled sp and the last Java frame at most: a thread's
 * stack (8 MiB by default, HotSpot's 1 MiB for Java threads). */
#define JAVA_ANCHOR_MAX_DEPTH (16u << 20)
/* Methods per process the programs remember having sent (LRU, all targets). */
#define JAVA_METHODS_ENTRIES 16384

/* A code heap, read from the target once its code cache exists. */
struct java_heap {
	__u64 low, high; /* CodeHeap::_memory's reserved range: blocks lie in it */
	__u64 segmap;	 /* CodeHeap::_segmap's low boundary: a byte per segment */
	__u32 log2_segment;
	__u32 pad;
};

/*
 * A target's JVM as the worker found it (map java_procs, by tgid): where libjvm.so is mapped
 * and its layout (worker/jvmstructs.c). The programs check the mapping at their first use
 * (bpf_find_vma, as for Python) and set checked; at the first sample after the JVM made its
 * code cache they read its bounds, heaps, interpreter and call stub once and set ready: these
 * never move once made.
 */
struct java_proc {
	__u64 start; /* where libjvm.so is mapped from its first byte: static addresses are from here */
	__u64 size; /* the file's size */
	__u32 checked;
	__u32 ready;
	__u64 code_low, code_high;     /* CodeCache::_low_bound, _high_bound */
	__u64 interp_low, interp_high; /* the template interpreter's code */
	__u64 call_stub_ret;	       /* where Java code returns into the entry frame */
	__u32 nheaps;
	__u32 pad;
	struct java_heap heaps[JAVA_MAX_HEAPS];
	struct jvm_layout l;
};

/*
 * One Java frame travels as a struct py_frame (common/pyframes.h: the snapshot's runtime
 * frames, 16 bytes). An interpreted frame: code is the Method*, stamp tells a freed and reused
 * Method apart (never 0), instr holds the kind and the bytecode index. A compiled frame: code
 * is the nmethod (its CodeBlob), stamp tells a freed and reused nmethod apart (its compile id
 * and Method* mixed in), instr holds the kind and the pc's offset from the nmethod's code
 * begin, and JAVA_FRAME_TOP when that pc is the sampled one (not a return address): the
 * shipper names the frame from the nmethod's record (struct sc_jnmethod), one frame per
 * inlined method. An entry frame (the call stub's, where native code called the Java frames
 * walked before it): code is its frame pointer, stamp and the rest of instr 0; the native
 * frames that called it are unwound from there by the shipper (the call stub's frame holds the
 * caller's frame pointer and return address at fp and fp + 8) and go between the Java frames
 * walked before and after it.
 */
#define JAVA_FRAME_INTERPRETED (1u << 28)
#define JAVA_FRAME_COMPILED (2u << 28)
#define JAVA_FRAME_ENTRY (3u << 28)
#define JAVA_FRAME_KIND_MASK (3u << 28)
#define JAVA_FRAME_NO_BCI (1u << 30) /* PY_FRAME_NO_INSTR: the bci (or pc) was not readable */
#define JAVA_FRAME_TOP (1u << 31)    /* compiled: the sampled pc, not a return address */
#define JAVA_FRAME_BCI_MASK 0xffffu
#define JAVA_FRAME_PC_MASK 0x0fffffffu

/* Why a stack of a Java target holds no Java frames, or not all of them (the snapshot's
 * runtime status, with SC_RT_JAVA as its runtime). */
enum java_status {
	JAVA_ST_NONE = 0,    /* not a Java process (or not yet found to be one) */
	JAVA_ST_OK = 1,	     /* every frame down to the outermost entry frame */
	JAVA_ST_NOT_IN_JAVA, /* not in Java code, and no last Java frame (none yet, or a leaf call) */
	JAVA_ST_NO_CODE,     /* the JVM has no code cache yet */
	JAVA_ST_FAULT,	     /* a read of the target failed, or a frame was not one */
	JAVA_ST_CUT,	     /* deeper than the frames recorded: the outermost left out */
	JAVA_ST_NO_THREAD,   /* not in Java code and not a JavaThread (GC, VM thread) */
	JAVA_ST_MAX,
};

/* Bytes of a method record's strings and line table sent at most. */
#define JAVA_CLASS_MAX 256
#define JAVA_NAME_MAX 128
#define JAVA_SIG_MAX 256
#define JAVA_FILE_MAX 128
#define JAVA_LINES_MAX 512
#define JAVA_STRINGS (JAVA_CLASS_MAX + JAVA_NAME_MAX + JAVA_SIG_MAX + JAVA_FILE_MAX)

/* struct sc_jmethod flags */
#define JAVA_M_CUT 1u	    /* a string was longer than its room: its start sent */
#define JAVA_M_HAS_LINES 2u /* ConstMethod says a line number table follows the bytecodes */
#define JAVA_M_LINES_CUT 4u /* lines_len bytes of it were read, it may go on */

/*
 * A method met for the first time in a process (SC_REC_JMETHOD in the snapshot ring): the
 * Symbols of its class, name, signature and source file (modified UTF-8, as HotSpot keeps
 * them: '/' between a class's packages), and the compressed line number table after its
 * bytecodes. The strings sit at data[0], data[JAVA_CLASS_MAX], ... in that order, the table at
 * data[JAVA_STRINGS]: a record is as long as its table needs. Every field after tgid comes from
 * the target's memory: hostile.
 */
struct sc_jmethod {
	__u32 kind; /* SC_REC_JMETHOD */
	__u32 tgid;
	__u64 method;
	__u32 stamp;
	__u16 jdk; /* the JDK's major version: how to read the line table */
	__u16 code_size;
	__u16 class_len, name_len, sig_len, file_len;
	__u16 lines_len;
	__u8 flags; /* JAVA_M_* */
	__u8 pad[5];
	__u8 data[JAVA_STRINGS + JAVA_LINES_MAX];
};

/*
 * An nmethod's record: what naming its frames needs, read once per nmethod (map
 * java_nmethods) and bounded. HotSpot's debug information for a pc is a PcDesc (the pc's offset
 * from the code begin, the offset of its innermost scope in the scope data); a scope is three
 * UNSIGNED5 numbers, the offset of its sender (the caller it was inlined into, 0 at the
 * outermost), its method's index in the nmethod's metadata (from 1) and its bci + 1. The
 * shipper decodes them (shipper/stacks/python.c jnm__scopes).
 */
#define JAVA_NM_META_MAX 64	   /* metadata entries sent (each a Method* or another kind) */
#define JAVA_NM_PCS_MAX 4096	   /* bytes of PcDescs sent: 256 of JDK 17's and 25's */
#define JAVA_NM_SCOPES_MAX 4096	   /* bytes of scope data sent */
#define JAVA_NMETHODS_ENTRIES 8192 /* nmethods the programs remember having sent (LRU) */

/* struct sc_jnmethod flags */
#define JAVA_NM_PCS_CUT 1u    /* more PcDescs than sent: pcs past the last one are not named */
#define JAVA_NM_SCOPES_CUT 2u /* more scope data than sent */
#define JAVA_NM_META_CUT 4u   /* more metadata than sent */

/* One metadata entry: a Method* (with its stamp, its record sent before this one) or 0. */
struct jnm_meta {
	__u64 method;
	__u32 stamp;
	__u32 pad;
};

/*
 * An nmethod met for the first time in a process (SC_REC_JNMETHOD in the snapshot ring), sent
 * after the method records of every Method* it names. data holds pcs_len bytes of PcDescs as
 * HotSpot lays them out (pc_size bytes each, the pc offset and the scope's decode offset at
 * pc_off and scope_off in each), then scopes_len bytes of scope data; a record is as long as
 * they need. Every field after tgid but jdk and the PcDesc layout comes from the target's
 * memory: hostile.
 */
struct sc_jnmethod {
	__u32 kind; /* SC_REC_JNMETHOD */
	__u32 tgid;
	__u64 nmethod;
	__u32 stamp;
	__u16 jdk;
	__u16 flags;	    /* JAVA_NM_* */
	__u64 method;	    /* the nmethod's own Method*: its frames' name without a scope */
	__u32 method_stamp; /* 0: no record of it */
	__u16 nmeta;
	__u16 pcs_len;
	__u16 scopes_len;
	__u8 pc_size, pc_off, scope_off;
	__u8 pad[3];
	struct jnm_meta meta[JAVA_NM_META_MAX];
	__u8 data[JAVA_NM_PCS_MAX + JAVA_NM_SCOPES_MAX];
};

#endif
