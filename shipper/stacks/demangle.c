// SPDX-License-Identifier: Apache-2.0
#include "shipper/stacks/demangle.h"

#include <string.h>

#include <libiberty/demangle.h>

struct demangle_out {
	char *buf;
	size_t len;
	size_t used;
};

static void demangle__append(const char *s, size_t n, void *opaque)
{
	struct demangle_out *out = opaque;
	size_t room = out->len - 1 - out->used;

	if (n > room)
		n = room;
	memcpy(out->buf + out->used, s, n);
	out->used += n;
}

/*
 * The *_callback demanglers are used rather than cplus_demangle(): they never allocate, so a
 * crafted name cannot make libiberty's xmalloc() abort the process. They keep their parse tree
 * in variable-length arrays on the stack, about 80 bytes per input character, hence
 * DEMANGLE_MAX_INPUT: 4096 characters cost some 330 KiB of stack at worst.
 *
 * No DMGL_PARAMS: a flame graph merges frames by name, and "ns::Klass::method" must be one
 * frame whatever overload or clone (".cold", ".constprop.0") the sample landed in.
 * Rust is tried first because legacy Rust names are also valid Itanium names; without
 * DMGL_VERBOSE rust_demangle drops the "::h0123456789abcdef" hash.
 */
int demangle__name(const char *name, char *buf, size_t len)
{
	struct demangle_out out = { .buf = buf, .len = len };

	if (!name || !buf || len == 0)
		return 0;
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return 0;
	if (strnlen(name, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
		return 0;

	if (!rust_demangle_callback(name, DMGL_RUST, demangle__append, &out)) {
		out.used = 0;
		if (name[1] != 'Z' ||
		    !cplus_demangle_v3_callback(name, DMGL_NO_OPTS, demangle__append, &out))
			return 0;
	}
	if (out.used == 0)
		return 0;
	buf[out.used] = '\0';
	return 1;
}
