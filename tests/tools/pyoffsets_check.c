// SPDX-License-Identifier: Apache-2.0
/*
 * Checks worker/pyoffsets.c against one CPython's own headers, internal ones included: built
 * by tests/tools/pyoffsets.sh once per installed version, with that version's include path.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#else
#include "frameobject.h"
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_runtime.h"
#endif
#include "internal/pycore_pystate.h"
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_interp.h"
#endif
#endif
#include "worker/pyoffsets.c"

static int bad;
/* One field: the table's value against the headers' (PY_NONE in the table: not compared). */
#define P(name, val)                                                                       \
	do {                                                                               \
		if (o->name != PY_NONE && o->name != (val)) {                              \
			printf("%s: %s is %u in worker/pyoffsets.c, %zu in the headers\n", \
			       PY_VERSION, #name, o->name, (size_t)(val));                 \
			bad = 1;                                                           \
		}                                                                          \
	} while (0)
int main(void)
{
	const struct py_offsets *o = pyoffsets__find(PY_VERSION_HEX >> 16);

	if (!o) {
		printf("%s: no entry in worker/pyoffsets.c\n", PY_VERSION);
		return 1;
	}
	P(rt_interp_head, offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX >= 0x030b0000
	P(is_threads_head, offsetof(PyInterpreterState, threads.head));
#else
	P(is_threads_head, offsetof(PyInterpreterState, tstate_head));
#endif
	P(ts_next, offsetof(PyThreadState, next));
	P(ts_thread_id, offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030d0000
	P(ts_frame, offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030b0000
	P(ts_frame, offsetof(PyThreadState, cframe));
	P(cf_current_frame, offsetof(_PyCFrame, current_frame));
#else
	P(ts_frame, offsetof(PyThreadState, frame));
#endif
#if PY_VERSION_HEX >= 0x030d0000
	P(fr_previous, offsetof(_PyInterpreterFrame, previous));
	P(fr_code, offsetof(_PyInterpreterFrame, f_executable));
	P(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
	P(fr_owner, offsetof(_PyInterpreterFrame, owner));
#elif PY_VERSION_HEX >= 0x030b0000
	P(fr_previous, offsetof(_PyInterpreterFrame, previous));
	P(fr_code, offsetof(_PyInterpreterFrame, f_code));
	P(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
	P(fr_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
	P(fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
#endif
#else
	P(fr_previous, offsetof(PyFrameObject, f_back));
	P(fr_code, offsetof(PyFrameObject, f_code));
	P(fr_instr, offsetof(PyFrameObject, f_lasti));
#endif
	P(co_name, offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	P(co_qualname, offsetof(PyCodeObject, co_qualname));
	P(co_code, offsetof(PyCodeObject, co_code_adaptive));
#else
	P(co_qualname, offsetof(PyCodeObject, co_name));
	P(co_code, offsetof(PyCodeObject, co_code));
#endif
	P(co_filename, offsetof(PyCodeObject, co_filename));
	P(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030a0000
	P(co_linetable, offsetof(PyCodeObject, co_linetable));
#else
	P(co_linetable, offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030c0000
	P(co_version, offsetof(PyCodeObject, co_version));
#endif
	P(str_ascii_size, sizeof(PyASCIIObject));
	P(str_compact_size, sizeof(PyCompactUnicodeObject));
	P(str_state, offsetof(PyASCIIObject, state));
	P(str_length, offsetof(PyASCIIObject, length));
	P(bytes_size, offsetof(PyVarObject, ob_size));
	P(bytes_sval, offsetof(PyBytesObject, ob_sval));
	if (!bad)
		printf("%s: worker/pyoffsets.c agrees with the headers\n", PY_VERSION);
	return bad;
}
