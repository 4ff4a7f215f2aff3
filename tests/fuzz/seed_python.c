// SPDX-License-Identifier: Apache-2.0
/*
 * Seeds of fuzz_pyattach (`make fuzz-corpus`): a small shared object that exports what the
 * worker looks for in a CPython interpreter: _PyRuntime in writable data and the version,
 * Py_Version (-DVERSION=0x030c01f0) or the function 3.8-3.10 added (-DADDED=...), and for
 * 3.13 the _Py_DebugOffsets its _PyRuntime starts with (-DDEBUG_OFFSETS). Not a fuzz target.
 */
#include <stdint.h>

#ifdef DEBUG_OFFSETS
/* cookie, version, free_threaded, runtime_state, interpreter_state, thread_state, frame, code */
__attribute__((visibility("default"))) uint64_t _PyRuntime[2048] = {
	0x7970677562656478ull, /* "xdebugpy", little-endian */
	0x030d00f0,
	0,
	1024,
	0,
	632, /* runtime_state: size, finalizing, interpreters_head */
	8192,
	0,
	0,
	7344,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0, /* interpreter_state */
	512,
	0,
	8,
	16,
	72,
	152,
	160,
	0,
	0, /* thread_state */
	80,
	8,
	0,
	56,
	72,
	70, /* interpreter_frame */
	256,
	112,
	120,
	128,
	136,
	68,
	52, /* code_object */
};
#else
__attribute__((visibility("default"))) uint64_t _PyRuntime[2048] = { 1 };
#endif

#ifdef VERSION
__attribute__((visibility("default"))) const unsigned long Py_Version = VERSION;
#endif

#ifdef ADDED
__attribute__((visibility("default"))) int ADDED(void)
{
	return 0;
}
#endif
