// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/dynload.h"

int dynload(const char *soname, const struct dynload_sym *syms, size_t n, const char **ret_missing,
	    char *why, size_t whylen)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(why, whylen, "%s", dlerror());
		return -ELIBACC;
	}
	for (size_t i = 0; i < n; i++) {
		void *p = dlsym(h, syms[i].name);

		if (!p) {
			void *none = NULL;

			for (size_t k = 0; k < i; k++)
				memcpy(syms[k].slot, &none, sizeof(none));
			*ret_missing = syms[i].name;
			dlclose(h);
			return -ELIBBAD;
		}
		/* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
		memcpy(syms[i].slot, &p, sizeof(p));
	}
	return 0;
}
