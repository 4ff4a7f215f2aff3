/* SPDX-License-Identifier: Apache-2.0 */
/* Shipper side: C++ and Rust symbol names as a profile shows them. */
#ifndef ROVER_SHIPPER_DEMANGLE_H
#define ROVER_SHIPPER_DEMANGLE_H

#include <stddef.h>

/* Longest mangled name demangle__name() accepts: see demangle.c for why there is one. */
#define DEMANGLE_MAX_INPUT 4096

/*
 * Writes the demangled form of name into buf (truncated to len, always terminated when
 * len > 0): Itanium C++ (_Z...), Rust v0 (_R...) and legacy Rust (_ZN...17h<hash>E, hash
 * dropped). Names carry no parameter list. Returns 1 when name was demangled, 0 when it is not
 * a name these schemes demangle (buf may then hold a partial result: ignore it).
 */
int demangle__name(const char *name, char *buf, size_t len);

#endif
