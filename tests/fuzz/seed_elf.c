// SPDX-License-Identifier: Apache-2.0
/*
 * Source of the ELF seeds of fuzz_elfsym (`make fuzz-corpus`): a few functions of each binding,
 * a mangled name, a build-id, linked without libc and with 16-byte pages so that each file
 * stays around 2 KiB. Not a fuzz target.
 */
int seed_leaf(int x);
int seed_weak(int x);
int seed_mangled(int x) __asm__("_ZN5rover4seed7mangledEi");
void _start(void);

int seed_leaf(int x)
{
	return x * 3 + 1;
}

static __attribute__((noinline)) int seed_local(int x)
{
	return seed_leaf(x) ^ 5;
}

__attribute__((weak)) int seed_weak(int x)
{
	return seed_local(x) + 2;
}

int seed_mangled(int x)
{
	return seed_weak(x) - 1;
}

void _start(void)
{
	seed_mangled(1);
	for (;;)
		;
}
