// SPDX-License-Identifier: Apache-2.0
/*
 * A C program embedding libpython: its main runs Python code that calls back into a C
 * function of its own (through ctypes) that burns the CPU, and a Python function that does.
 * Built by tests/integration/test_python.c against pyenv's 3.12 (python3.12-config --embed).
 */
#include <Python.h>

/* Called from Python through ctypes: the native frame between two Python ones. */
__attribute__((noinline)) long embed_native_burn(long n)
{
	volatile long x = 0;

	for (long i = 0; i < n; i++)
		x += i;
	return x;
}

static const char program[] = "import ctypes, sys, time\n"
			      "me = ctypes.CDLL(None)\n"
			      "me.embed_native_burn.restype = ctypes.c_long\n"
			      "def embedded_python_burn():\n"
			      "    x = 0\n"
			      "    for i in range(200000):\n"
			      "        x += i\n"
			      "def embedded_calls_c():\n"
			      "    me.embed_native_burn(3000000)\n"
			      "print('ready', flush=True)\n"
			      "end = time.monotonic() + float(sys.argv[1])\n"
			      "while time.monotonic() < end:\n"
			      "    embedded_python_burn()\n"
			      "    embedded_calls_c()\n";

int main(int argc, char **argv)
{
	wchar_t *args[2] = { L"embed", L"5" };
	wchar_t seconds[32];

	if (argc > 1) {
		mbstowcs(seconds, argv[1], 31);
		seconds[31] = 0;
		args[1] = seconds;
	}
	Py_Initialize();
	PySys_SetArgvEx(2, args, 0);
	return PyRun_SimpleString(program) ? 1 : 0;
}
