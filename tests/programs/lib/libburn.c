// SPDX-License-Identifier: Apache-2.0
volatile unsigned long lib_sink;

__attribute__((noinline)) void lib_burn_hot(int units)
{
	for (long i = 0; i < (long)units * 200000; i++)
		lib_sink += i ^ (lib_sink >> 3);
}
