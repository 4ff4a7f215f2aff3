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

	/* Threads: where the last Java frame is when a thread is in native or VM code. */
	struct jvm_field jt_anchor;	      /* JavaThread::_anchor: JavaFrameAnchor */
	struct jvm_field jt_state;	      /* JavaThread::_thread_state */
	struct jvm_field jt_osthread;	      /* Thread::_osthread (JavaThread's in JDK 17) */
	struct jvm_field os_thread_id;	      /* OSThread::_thread_id: the kernel's tid */
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

#endif
