/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shared library a role loads at run time, only when its work needs it (libcurl in the
 * supervisor, libcapstone in the shipper), before the role's seccomp filter.
 */
#ifndef ROVER_COMMON_DYNLOAD_H
#define ROVER_COMMON_DYNLOAD_H

#include <stddef.h>

struct dynload_sym {
	const char *name;
	void *slot; /* where its address goes: a function pointer's storage */
};

/*
 * dlopen(soname, RTLD_NOW | RTLD_LOCAL: nothing left to resolve under the filter) and every
 * symbol into its slot. 0; -ELIBACC when it does not load (dlerror's text in why); -ELIBBAD
 * when a symbol is missing (*ret_missing names it; the library is closed, every slot NULL).
 */
int dynload(const char *soname, const struct dynload_sym *syms, size_t n, const char **ret_missing,
	    char *why, size_t whylen);

#endif
