// SPDX-License-Identifier: Apache-2.0
/*
 * Maps large shared libraries and waits to be killed: one of the processes of the
 * symbolization benchmark (tests/bench/bench_symbolize.c), which names addresses inside them.
 *
 *   llvm_map [LIBRARY...]    default: Debian's libLLVM-15
 *
 * Prints "ready PID" once every library is mapped, "dlopen: ERROR" and exits 1 when one is
 * not. glibc 2.34 and later have dlopen in libc: no -ldl. libLLVM-14 and -15 version their
 * symbols (LLVM_14, LLVM_15), so one process can map both.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#define LLVM_MAP_DEFAULT "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1"

int main(int argc, char **argv)
{
	for (int i = argc > 1 ? 1 : 0; i < (argc > 1 ? argc : 1); i++) {
		const char *path = argc > 1 ? argv[i] : LLVM_MAP_DEFAULT;

		/* RTLD_LAZY: the benchmark needs the mappings, not resolved symbols. */
		if (!dlopen(path, RTLD_LAZY | RTLD_LOCAL)) {
			printf("dlopen: %s\n", dlerror());
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
