/* SPDX-License-Identifier: Apache-2.0 */
/* Shipper side: kernel function names from a /proc/kallsyms descriptor. */
#ifndef ROVER_SHIPPER_KALLSYMS_H
#define ROVER_SHIPPER_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct kallsyms;

/*
 * Reads /proc/kallsyms text from fd (from its current offset; fd is not closed) into a sorted
 * table of text symbols, modules included. NULL + errno: ENODATA when every address reads 0
 * (kptr_restrict hides them from this reader) or no text symbol is present, EFBIG beyond
 * the limits of kallsyms.c.
 */
struct kallsyms *kallsyms__load(int fd);
void kallsyms__free(struct kallsyms *ks);

/* Name of the kernel function containing addr, or NULL when none does. */
const char *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr);

#endif
