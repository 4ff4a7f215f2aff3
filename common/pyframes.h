/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Python frames: the ABI between the stack-counting programs (bpf/python.bpf.h), the worker
 * that tells them where a target's interpreter lives (worker/pyattach.c) and the shipper that
 * names what they record (shipper/stacks/python.c). Fixed-width types only.
 *
 * The programs read a CPython thread's frame chain from the target's memory, in the target's
 * own context, and record per frame what identifies its code: the code object's address, a
 * stamp that tells a reused address apart, and the bytecode offset. A code object the
 * programs have not met in the process before (or met with another stamp) is read once more,
 * whole: its names and line table go to the shipper as a record (struct sc_pycode), so the
 * shipper never reads a target's memory (policy/README.md, "Python frames").
 */
#ifndef ROVER_COMMON_PYFRAMES_H
#define ROVER_COMMON_PYFRAMES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Python frames recorded per stack at most; deeper ones are cut (PY_ST_CUT). */
#define PY_MAX_FRAMES 128
/* Thread states walked to find the current thread's, once per thread (then cached). */
#define PY_MAX_THREADS 256
/* New code objects read per sample at most; the rest wait for a later sample. */
#define PY_NEW_CODES 4
/* Bytes of a code object's qualified name, its file name and its line table sent at most. */
#define PY_NAME_MAX 256
#define PY_FILE_MAX 256
#define PY_LINES_MAX 4096
/* Code objects per process the programs remember having sent (LRU, all targets). */
#define PY_CODES_ENTRIES 16384
/* Bytes of a frame and of a code object read at once (the fields any version needs). */
#define PY_FRAME_READ 128
#define PY_CODE_READ 128

/* An offset a version does not have. */
#define PY_NONE 0xffff

/* How a frame says where it is: what CPython passes to PyCode_Addr2Line, in bytes. */
enum py_instr_kind {
	PY_INSTR_LASTI_BYTES = 1, /* 3.8, 3.9: int f_lasti, bytes */
	PY_INSTR_LASTI_UNITS = 2, /* 3.10: int f_lasti, 2-byte code units */
	PY_INSTR_POINTER = 3,	  /* 3.11-3.13: a pointer into co_code_adaptive */
};

/*
 * Where the fields are, for one minor version (worker/pyoffsets.c). Offsets are from the start
 * of the structure they name; co_* offsets are read within a PY_CODE_READ window that starts
 * at co_read (so each is < co_read + PY_CODE_READ, checked by the worker).
 */
struct py_offsets {
	__u16 version;		/* 0x030b for 3.11 */
	__u8 instr_kind;	/* enum py_instr_kind */
	__u8 entry_kind;	/* enum py_entry_kind */
	__u16 rt_interp_head;	/* _PyRuntimeState.interpreters.head */
	__u16 is_threads_head;	/* PyInterpreterState: its first thread state */
	__u16 ts_next;		/* PyThreadState.next */
	__u16 ts_thread_id;	/* PyThreadState.thread_id: pthread_self(), the thread's fsbase */
	__u16 ts_frame;		/* the current frame, or (3.11, 3.12) the _PyCFrame pointer */
	__u16 cf_current_frame; /* _PyCFrame.current_frame; PY_NONE: ts_frame is the frame */
	__u16 fr_previous;
	__u16 fr_code;
	__u16 fr_instr;
	__u16 fr_owner;	   /* PY_NONE before 3.11 */
	__u16 fr_is_entry; /* 3.11 only */
	__u16 co_read;	   /* start of the code object's window */
	__u16 co_name;
	__u16 co_qualname; /* co_name before 3.11 */
	__u16 co_filename;
	__u16 co_firstlineno;
	__u16 co_linetable;	/* co_lnotab before 3.10 */
	__u16 co_version;	/* 3.12+: a number no other code object of the process has */
	__u16 co_code;		/* 3.11+: co_code_adaptive, where the bytecode starts */
	__u16 str_ascii_size;	/* sizeof(PyASCIIObject): a compact ASCII string's data */
	__u16 str_compact_size; /* sizeof(PyCompactUnicodeObject): other compact strings' */
	__u16 str_length;
	__u16 str_state;
	__u16 bytes_size; /* PyVarObject.ob_size */
	__u16 bytes_sval; /* PyBytesObject.ob_sval */
	__u16 fr_read;	  /* bytes of a frame the fields above lie in (the worker's sum) */
};

/* How the frames of one C call of the evaluation loop are told apart from the next. */
enum py_entry_kind {
	PY_ENTRY_EVERY = 1, /* 3.8-3.10: a C call of the loop per frame */
	PY_ENTRY_FLAG = 2,  /* 3.11: the frame's is_entry */
	PY_ENTRY_SHIM = 3,  /* 3.12+: a frame owned by the C stack sits below each call's frames */
};

/* _PyInterpreterFrame.owner of a 3.12+ shim frame (FRAME_OWNED_BY_CSTACK). */
#define PY_OWNED_BY_CSTACK 3

/*
 * A target's interpreter, as the worker found it (map py_procs, by tgid). The programs check
 * the mapping at their first use of it (bpf_find_vma) and only then set runtime.
 */
struct py_proc {
	__u64 start;   /* where the interpreter's file is mapped from its first byte */
	__u64 size;    /* the file's size */
	__u64 rel;     /* _PyRuntime's address less start */
	__u64 runtime; /* start + rel once checked; 0 before */
	struct py_offsets o;
};

/*
 * One frame, innermost first. instr holds the bytecode offset in bytes (what CPython passes
 * to PyCode_Addr2Line) and two flags: the frame is the outermost of one C call of the
 * evaluation loop, where the shipper splices the group into the native stack; the offset was
 * not readable.
 */
#define PY_FRAME_ENTRY (1u << 31)
#define PY_FRAME_NO_INSTR (1u << 30)
#define PY_FRAME_INSTR_MASK (PY_FRAME_NO_INSTR - 1)

struct py_frame {
	__u64 code;
	__u32 stamp; /* never 0 */
	__u32 instr; /* offset | PY_FRAME_* */
};

/* Why a stack of a Python target holds no Python frames, or not all of them. */
enum py_status {
	PY_ST_NONE = 0,	 /* not a Python process (or not yet found to be one) */
	PY_ST_OK = 1,	 /* every frame up to the first */
	PY_ST_NO_THREAD, /* no thread state is the thread's: a thread Python never ran on */
	PY_ST_IDLE,	 /* the thread's state has no frame: it runs no Python code now */
	PY_ST_FAULT,	 /* a read of the interpreter's state or a frame failed */
	PY_ST_CUT,	 /* deeper than PY_MAX_FRAMES: the outermost frames are left out */
	PY_ST_MAX,
};

/* struct sc_pycode flags */
#define PY_CODE_NAME_CUT 1u  /* the name was longer than PY_NAME_MAX bytes: its start sent */
#define PY_CODE_FILE_TAIL 2u /* the file name was longer than PY_FILE_MAX: its end sent */
#define PY_CODE_LINES_CUT 4u /* the line table was longer than PY_LINES_MAX: its start sent */

/*
 * A code object met for the first time in a process (SC_REC_PYCODE in the snapshot ring).
 * Strings as CPython holds them: kind 1 (Latin-1, ASCII included), 2 (UCS-2) or 4 (UCS-4)
 * bytes a character, 0 when it could not be read. The name sits at data[0], the file name at
 * data[PY_NAME_MAX], the line table at data[PY_NAME_MAX + PY_FILE_MAX]: a record is as long as
 * its line table needs. Every field comes from the target's memory: hostile.
 */
struct sc_pycode {
	__u32 kind; /* SC_REC_PYCODE */
	__u32 tgid;
	__u64 code;
	__u32 stamp;
	__s32 firstlineno;
	__u16 version;	/* struct py_offsets version: how to read the line table */
	__u16 name_len; /* bytes */
	__u16 file_len;
	__u16 lines_len;
	__u8 name_kind;
	__u8 file_kind;
	__u8 flags; /* PY_CODE_* */
	__u8 pad[5];
	__u8 data[PY_NAME_MAX + PY_FILE_MAX + PY_LINES_MAX];
};

#endif
