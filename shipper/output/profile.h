/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: a profile of named stacks merged by content, and its local output formats
 * (folded, pprof gzipped protobuf, SVG flame graph).
 */
#ifndef ROVER_SHIPPER_PROFILE_H
#define ROVER_SHIPPER_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct profile;

/*
 * sample_type/unit name the value, e.g. "samples"/"count" (ON_CPU) or "off_cpu"/"microseconds";
 * period_ns is the sampling period pprof records (0 when not sampled).
 */
struct profile *profile__new(const char *sample_type, const char *unit, uint64_t period_ns);
void profile__free(struct profile *p);

/*
 * Adds value to the stack comm;frames[0];...;frames[n-1] (outermost first; kernel frames carry
 * the "_[k]" suffix already). Identical stacks merge. 0 or -errno.
 */
int profile__add(struct profile *p, const char *comm, const char *const *frames, uint32_t nframes,
		 uint64_t value);

/*
 * A frame name that stands for a place in source (a Python frame, "qualname (file.py:LINE)"):
 * pprof gets function, file (NULL: none) and line for it; the other formats show the name. The
 * first call for a name holds. 0 or -errno.
 */
int profile__frame_source(struct profile *p, const char *name, const char *function,
			  const char *file, int64_t line);

/*
 * A line about the whole profile (what was profiled, what was lost): pprof comments, and the
 * SVG's <desc>. At most 16. 0 or -errno.
 */
int profile__add_comment(struct profile *p, const char *text);

uint64_t profile__total(const struct profile *p);
size_t profile__nstacks(const struct profile *p);

/* One line per distinct stack, "comm;outer;...;inner COUNT\n". 0 or -errno. */
int profile__write_folded(const struct profile *p, FILE *f);
/* pprof profile.proto, gzipped, as `go tool pprof` reads it. 0 or -errno. */
int profile__write_pprof(const struct profile *p, FILE *f);
/* A self-contained SVG flame graph (root at the bottom, hover titles). 0 or -errno. */
int profile__write_svg(const struct profile *p, FILE *f, const char *title);
/*
 * One self-contained HTML page (nothing fetched): the flame graph, inline, with a search (its
 * only script, allowed by hash), and the top functions by self and total value. 0 or -errno.
 */
int profile__write_html(const struct profile *p, FILE *f, const char *title);
/*
 * The profile in format (enum output_format: folded, pprof, svg or html; title for those that show
 * one), through the writer its entry in the table of formats names. 0, -EINVAL for a format
 * that is not a profile's, or the writer's -errno.
 */
int profile__write(const struct profile *p, uint32_t format, FILE *f, const char *title);

/* The n hottest functions by self value, "  12.3%  name\n" lines, into buf. */
void profile__top(const struct profile *p, unsigned n, char *buf, size_t len);

#endif
