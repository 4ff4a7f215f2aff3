/* SPDX-License-Identifier: Apache-2.0 */
/* Shipper side: reading untrusted line-oriented text (maps, kallsyms, perf maps) with limits. */
#ifndef ROVER_SHIPPER_LINES_H
#define ROVER_SHIPPER_LINES_H

#include <stdbool.h>
#include <stddef.h>

/* Lines are read through a buffer of this size: max_line must be below it. */
#define LINES_READ_SIZE (64u << 10)

/*
 * Calls line(ctx, p, n) on each line of fd, without its newline. Lines of max_line bytes or
 * more are skipped (max_line below LINES_READ_SIZE). A last line without a newline is passed
 * too when partial_last. Stops with -EFBIG past max_bytes, with the error line returns, or
 * quietly when it returns 1 (enough).
 */
int read_lines(int fd, size_t max_line, size_t max_bytes, bool partial_last,
	       int (*line)(void *ctx, const char *p, size_t n), void *ctx);

#endif
