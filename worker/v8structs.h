/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side: a target's node executable (or libnode.so), for the JavaScript frame walker.
 * The shipper finds the mapping of node and hands its file over (the descriptor the launcher
 * opened from /proc/PID/map_files); the worker reads V8's description of its own objects and
 * frames, the v8dbg_* globals, from that file, never from the shipper and never from the
 * target's memory (which it may not read). docs/node-frames.md says which are taken.
 */
#ifndef ROVER_WORKER_V8STRUCTS_H
#define ROVER_WORKER_V8STRUCTS_H

#include "common/v8frames.h"

/*
 * Bytes read from the file at most. Through the dynamic symbols' hash table a node costs about
 * 9 KiB; without it (a node that does not export the symbols) the static symbol table is read
 * whole, 2.6 MB in node 20, with the names of the 4-byte objects in it.
 */
#define V8STRUCTS_MAX_READ (8u << 20)

/*
 * Reads the v8dbg_ globals of the node executable or libnode.so open at fd into *ret (written
 * only on success). 0, or -EBADF (not a regular file), -ENOEXEC (not an ELF file, or one whose
 * symbols or values are not whole: a missing mandatory symbol, a value out of range, a symbol
 * outside the file's segments), -ENOENT (no v8dbg_ symbols: not V8, or built without its
 * postmortem metadata), -EPROTONOSUPPORT (not x86-64, pointer compression, another tagging, or
 * a V8 version whose layout has not been checked), -E2BIG (more than V8STRUCTS_MAX_READ bytes
 * needed). On failure *ret_why, when ret_why is not NULL, names the symbol or the step that
 * failed (a static string, for the caller's one log line).
 */
int v8structs__file(int fd, struct v8_layout *ret, const char **ret_why);

/* How a symbol's int is kept in struct v8_layout (v8structs__entry's *ret_kind). */
enum v8structs_kind {
	V8S_U8 = 1,
	V8S_S8 = 2,
	V8S_U16 = 3,
	V8S_U32 = 4,
	V8S_VERSION = 5, /* a u16 of the version: from v8::internal::Version, not a v8dbg_ */
};

/*
 * The symbols read, in order, with the kind of their slot in *ret_kind and where it is in
 * struct v8_layout in *ret_at: for tests and tools that build or check a file. Entries with the
 * same *ret_at are one version's name and another's; the first found wins. NULL past the last.
 */
const char *v8structs__entry(unsigned int i, int *ret_kind, unsigned int *ret_at);

#endif
