/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side: a target's HotSpot libjvm.so, for the Java frame walker. The shipper finds the
 * mapping of a libjvm.so and hands its file over (the descriptor the launcher opened from
 * /proc/PID/map_files); the worker reads HotSpot's own description of its classes from that
 * file, never from the shipper and never from the target's memory (which it may not read).
 * docs/java-frames.md says which entries are taken and how the file holds them.
 */
#ifndef ROVER_WORKER_JVMSTRUCTS_H
#define ROVER_WORKER_JVMSTRUCTS_H

#include <stdint.h>

#include "common/jvmframes.h"

/*
 * Bytes read from the file at most: the dynamic relocations twice (3 MB in Temurin 25's
 * libjvm), the static initializers' code (330 KiB), the tables and their names (under 1 MiB).
 */
#define JVMSTRUCTS_MAX_READ (16u << 20)

/*
 * Reads the tables of the libjvm.so open at fd into *ret (written only on success). 0, or
 * -EBADF (not a regular file), -ENOEXEC (not an ELF file, or tables that are not whole: a
 * missing or unreadable entry), -ENOENT (no gHotSpotVMStructs: not HotSpot), -EPROTONOSUPPORT
 * (not x86-64, a JDK before 9, or an interpreter frame of another shape), -E2BIG (more than
 * JVMSTRUCTS_MAX_READ bytes needed), -ENOMEM. On failure *ret_why, when ret_why is not NULL,
 * names the entry or the step that failed (a static string, for the caller's one log line).
 */
int jvmstructs__file(int fd, struct jvm_layout *ret, const char **ret_why);

/*
 * The wanted entries, in order, as "Type::field", a type's name or a constant's name, with
 * their kind (enum jvmstructs_kind) in *ret_kind and where their value goes in struct
 * jvm_layout in *ret_at (at or past its size: a constant only checked): for tests and tools
 * that build or check a table. Entries with the same *ret_at are one JDK's name and another's;
 * the first found wins. NULL past the last.
 */
const char *jvmstructs__entry(unsigned int i, int *ret_kind, unsigned int *ret_at);

/* Kinds jvmstructs__entry reports. */
enum jvmstructs_kind {
	JVMS_FIELD = 1,	  /* a field's offset (gHotSpotVMStructs) */
	JVMS_STATIC = 2,  /* a static variable's address (gHotSpotVMStructs) */
	JVMS_VERSION = 3, /* a static int the file initializes: a version number */
	JVMS_SIZE = 4,	  /* a class's size (gHotSpotVMTypes) */
	JVMS_INT = 5,	  /* gHotSpotVMIntConstants */
};

#endif
