/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The output formats a client may ask for, one table: its name (`--format`), the file name
 * ending that picks it, and the kind of task it is for. The launcher's client reads it to
 * parse `rover profile`, the shipper's writers (shipper/output/profile.c) are keyed by it.
 */
#ifndef ROVER_COMMON_FORMATS_H
#define ROVER_COMMON_FORMATS_H

#include <stdint.h>

struct output_format_info {
	uint32_t format; /* enum output_format */
	const char *name;
	const char *ending; /* a file name ending so chooses it; NULL: only by name */
	int network;	    /* for NETWORK tasks (else the stack tasks) */
	int fallback;	    /* the kind's format when neither name nor ending says */
};

/*
 * The format for a task of that kind (network or not): by name when name is not NULL, else by
 * path's ending, else the kind's fallback. 0, or -EINVAL for a name that is none of the kind's.
 */
int output_format_of(const char *name, const char *path, int network, uint32_t *ret);

/* The entry of format, or NULL. */
const struct output_format_info *output_format_info(uint32_t format);

#endif
