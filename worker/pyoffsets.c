// SPDX-License-Identifier: Apache-2.0
/*
 * Where CPython 3.8 to 3.13 (x86-64, default build: GIL, no debug) keep what the Python frame
 * reader needs. Made by tests/tools/pyoffsets.sh, which compiles offsetof() against each
 * version's own headers (the internal ones included) and checks this table against them;
 * 3.13's are checked again at attach against the _Py_DebugOffsets the interpreter's file
 * carries (worker/pyattach.c). A minor version keeps these for all its releases: the
 * structures are internal but CPython does not change their layout after a release candidate.
 */
#include <stddef.h>

#include "worker/pyattach.h"

/* clang-format off */
static const struct py_offsets table[] = {
	{ .version = 0x0308, .instr_kind = PY_INSTR_LASTI_BYTES, .entry_kind = PY_ENTRY_EVERY,
	  .rt_interp_head = 32, .is_threads_head = 8, .ts_next = 8, .ts_thread_id = 176,
	  .ts_frame = 24, .cf_current_frame = PY_NONE,
	  .fr_previous = 24, .fr_code = 32, .fr_instr = 104, .fr_owner = PY_NONE, .fr_is_entry = PY_NONE,
	  .co_read = 32, .co_name = 112, .co_qualname = 112, .co_filename = 104,
	  .co_firstlineno = 40, .co_linetable = 120, .co_version = PY_NONE, .co_code = 48,
	  .str_ascii_size = 48, .str_compact_size = 72, .str_length = 16, .str_state = 32,
	  .bytes_size = 16, .bytes_sval = 32 },
	{ .version = 0x0309, .instr_kind = PY_INSTR_LASTI_BYTES, .entry_kind = PY_ENTRY_EVERY,
	  .rt_interp_head = 32, .is_threads_head = 8, .ts_next = 8, .ts_thread_id = 176,
	  .ts_frame = 24, .cf_current_frame = PY_NONE,
	  .fr_previous = 24, .fr_code = 32, .fr_instr = 104, .fr_owner = PY_NONE, .fr_is_entry = PY_NONE,
	  .co_read = 32, .co_name = 112, .co_qualname = 112, .co_filename = 104,
	  .co_firstlineno = 40, .co_linetable = 120, .co_version = PY_NONE, .co_code = 48,
	  .str_ascii_size = 48, .str_compact_size = 72, .str_length = 16, .str_state = 32,
	  .bytes_size = 16, .bytes_sval = 32 },
	{ .version = 0x030a, .instr_kind = PY_INSTR_LASTI_UNITS, .entry_kind = PY_ENTRY_EVERY,
	  .rt_interp_head = 32, .is_threads_head = 8, .ts_next = 8, .ts_thread_id = 176,
	  .ts_frame = 24, .cf_current_frame = PY_NONE,
	  .fr_previous = 24, .fr_code = 32, .fr_instr = 96, .fr_owner = PY_NONE, .fr_is_entry = PY_NONE,
	  .co_read = 32, .co_name = 112, .co_qualname = 112, .co_filename = 104,
	  .co_firstlineno = 40, .co_linetable = 120, .co_version = PY_NONE, .co_code = 48,
	  .str_ascii_size = 48, .str_compact_size = 72, .str_length = 16, .str_state = 32,
	  .bytes_size = 16, .bytes_sval = 32 },
	{ .version = 0x030b, .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_FLAG,
	  .rt_interp_head = 40, .is_threads_head = 16, .ts_next = 8, .ts_thread_id = 152,
	  .ts_frame = 56, .cf_current_frame = 8,
	  .fr_previous = 48, .fr_code = 32, .fr_instr = 56, .fr_owner = 69, .fr_is_entry = 68,
	  .co_read = 64, .co_name = 120, .co_qualname = 128, .co_filename = 112,
	  .co_firstlineno = 72, .co_linetable = 136, .co_version = PY_NONE, .co_code = 184,
	  .str_ascii_size = 48, .str_compact_size = 72, .str_length = 16, .str_state = 32,
	  .bytes_size = 16, .bytes_sval = 32 },
	{ .version = 0x030c, .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_SHIM,
	  .rt_interp_head = 40, .is_threads_head = 72, .ts_next = 8, .ts_thread_id = 136,
	  .ts_frame = 56, .cf_current_frame = 0,
	  .fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = PY_NONE,
	  .co_read = 64, .co_name = 120, .co_qualname = 128, .co_filename = 112,
	  .co_firstlineno = 68, .co_linetable = 136, .co_version = 92, .co_code = 192,
	  .str_ascii_size = 40, .str_compact_size = 56, .str_length = 16, .str_state = 32,
	  .bytes_size = 16, .bytes_sval = 32 },
	{ .version = 0x030d, .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_SHIM,
	  .rt_interp_head = 632, .is_threads_head = 7344, .ts_next = 8, .ts_thread_id = 152,
	  .ts_frame = 72, .cf_current_frame = PY_NONE,
	  .fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = PY_NONE,
	  .co_read = 64, .co_name = 120, .co_qualname = 128, .co_filename = 112,
	  .co_firstlineno = 68, .co_linetable = 136, .co_version = 92, .co_code = 200,
	  .str_ascii_size = 40, .str_compact_size = 56, .str_length = 16, .str_state = 32,
	  .bytes_size = 16, .bytes_sval = 32 },
};
/* clang-format on */

const struct py_offsets *pyoffsets__find(unsigned int version)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].version == version)
			return &table[i];
	return NULL;
}
