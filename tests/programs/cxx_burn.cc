// SPDX-License-Identifier: Apache-2.0
// A C++ program whose hot method must appear demangled: demo::Burner::spin.
#include <cstdio>
#include <unistd.h>

namespace demo {
struct Burner {
	volatile unsigned long sink = 0;
	__attribute__((noinline)) void spin(int units);
};

void Burner::spin(int units)
{
	for (long i = 0; i < (long)units * 200000; i++)
		sink += i ^ (sink >> 3);
}
} // namespace demo

int main()
{
	demo::Burner b;

	std::printf("ready %d\n", (int)getpid());
	std::fflush(stdout);
	for (;;)
		b.spin(1);
}
