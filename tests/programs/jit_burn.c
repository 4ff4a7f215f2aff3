// SPDX-License-Identifier: Apache-2.0
/*
 * A program that runs JIT code, as node or a JVM does: it copies the machine code of a counting
 * loop into anonymous memory (written, then made executable), names it "jitted_spin" in
 * /tmp/perf-PID.map the way JITs do, and calls it in a loop from C. Nearly every sample of a
 * profile has jitted_spin as its leaf. The code has no frame of its own, so a frame-pointer
 * unwinder skips its caller, call_jitted.
 * usage: jit_burn [--symlink]   --symlink: /tmp/perf-PID.map is a symbolic link to the map
 * Runs until killed. Machine code for x86-64 only: elsewhere it says so and exits 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
/* mov ecx, 0x100000; 1: dec rcx; jnz 1b; ret: about a millisecond per call. */
static const unsigned char spin_code[] = { 0xb9, 0x00, 0x00, 0x10, 0x00, 0x48,
					   0xff, 0xc9, 0x75, 0xfb, 0xc3 };
#endif

typedef void (*spin_fn)(void);

__attribute__((noinline)) void call_jitted(spin_fn f)
{
	f();
}

__attribute__((noinline)) void work_loop(spin_fn f)
{
	for (;;)
		call_jitted(f);
}

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	int symlinked = argc > 1 && !strcmp(argv[1], "--symlink");
	char map[64], target[64];
	void *code;
	FILE *f;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, spin_code, sizeof(spin_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	snprintf(target, sizeof(target), "/tmp/perf-%d.map.real", (int)getpid());
	f = fopen(symlinked ? target : map, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jitted_spin\n", (unsigned long)code, sizeof(spin_code));
	if (fclose(f) || (symlinked && symlink(target, map)))
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	work_loop((spin_fn)code);
	return 0;
#else
	(void)argc;
	(void)argv;
	(void)call_jitted;
	(void)work_loop;
	printf("unsupported: no machine code for this architecture\n");
	return 77;
#endif
}
