/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: text from traced processes (frame names, process names, URL paths, a
 * protocol's operations) put into SVG and HTML. Those names are the target's to choose: a
 * hostile one must stay text, whatever markup it holds, in an element or in a quoted
 * attribute.
 */
#ifndef ROVER_SHIPPER_MARKUP_H
#define ROVER_SHIPPER_MARKUP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Decodes one UTF-8 character of s (NUL-terminated) into *cp and returns its byte length; an
 * ill-formed sequence reads as one byte with *cp = U+FFFD.
 */
size_t markup__utf8_next(const unsigned char *s, uint32_t *cp);
/* Characters in s, as markup__utf8_next counts them. */
size_t markup__utf8_count(const char *s);
/*
 * Writes at most max characters of s as XML or HTML text, fit for an element or a quoted
 * attribute: & < > " ' escaped, and what XML 1.0 cannot carry (control characters,
 * ill-formed UTF-8, noncharacters) as '?'.
 */
void markup__put(FILE *f, const char *s, size_t max);

#endif
