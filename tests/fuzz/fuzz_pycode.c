// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: what a Python target makes the worker send the shipper. Code records
 * (MSG_SHIP_PYCODES: names, file names and line tables are the target's bytes), snapshots
 * carrying Python frames (code addresses, stamps, offsets and flags the target's memory gave),
 * Java method and nmethod records and frames (SC_REC_JMETHOD, SC_REC_JNMETHOD, SC_RT_JAVA
 * snapshots: the same path; a compiled frame named a frame per inlined scope), the line tables
 * and a compiled frame's scopes decoded at every offset, JavaScript function records (their
 * position tables and source heads) and frames with bytecode offsets, V8's position tables and
 * lines decoded at every offset, and the splice of Python groups into native frames.
 *
 * Input: 1 byte of mode (bit 0: --python-native all; bits 1-3: the version of the direct line
 * table decoding, 3.8 + n; bit 4: pprof; bit 5: the direct Java line table and scope decoding
 * as JDK 25's, else 17's), 2 bytes little-endian N and N bytes of a MSG_SHIP_PYCODES payload
 * (its task id set to the task's), 2 bytes M and M bytes of native frames for py_splice (bit 0
 * of each: the loop, bit 1: the interpreter's file) whose Python frames are the snapshot
 * payload's first bytes, then a MSG_SHIP_SNAPSHOTS payload of pid 42 (its task id set too).
 * Nothing may crash, leak or read out of bounds; refusals are -EPROTO (snapshots) or counted
 * (records); every spliced frame is one of the input's, each once; the profile is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/msg.h"
#include "shipper/stacks/python.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/stacks/unwind.h"
#include "shipper/task.h"

#define FUZZ_PID 42

static const char fake_maps[] = "00400000-00500000 r-xp 00000000 08:01 4242 /usr/bin/python3.11\n";

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static int fake_open_maps(void *ctx, int pid)
{
	(void)ctx;
	(void)pid;
	return memfd_with(fake_maps, strlen(fake_maps));
}

static int fake_open_mapped_file(void *ctx, int pid, uint64_t start, uint64_t end)
{
	(void)ctx;
	(void)pid;
	(void)start;
	(void)end;
	return -ENOENT;
}

static int fake_open_kallsyms(void *ctx)
{
	(void)ctx;
	return -EACCES;
}

static const struct fd_opener fake_opener = {
	.open_maps = fake_open_maps,
	.open_mapped_file = fake_open_mapped_file,
	.open_kallsyms = fake_open_kallsyms,
};

/* A copy of its own size, so that reads past it are caught; task id patched in. */
static uint8_t *copy_of(const uint8_t *p, size_t n, size_t hdr_min, uint64_t task_id)
{
	uint8_t *c = malloc(n ? n : 1);

	if (!c)
		abort();
	memcpy(c, p, n);
	if (n >= hdr_min)
		memcpy(c, &task_id, sizeof(task_id));
	return c;
}

static void check_splice(const uint8_t *nat_bytes, size_t nn, const uint8_t *pyb, size_t pylen,
			 enum py_native_mode mode)
{
	struct py_native nat[2 * ROVER_MAX_STACK_DEPTH];
	struct py_frame py[PY_MAX_FRAMES];
	struct py_item items[2 * ROVER_MAX_STACK_DEPTH + PY_MAX_FRAMES];
	uint8_t seen_n[2 * ROVER_MAX_STACK_DEPTH] = { 0 }, seen_p[PY_MAX_FRAMES] = { 0 };
	size_t np = pylen / sizeof(struct py_frame), k;

	if (nn > 2 * ROVER_MAX_STACK_DEPTH)
		nn = 2 * ROVER_MAX_STACK_DEPTH;
	if (np > PY_MAX_FRAMES)
		np = PY_MAX_FRAMES;
	for (size_t i = 0; i < nn; i++)
		nat[i] = (struct py_native){ .eval = nat_bytes[i] & 1,
					     .interp = !!(nat_bytes[i] & 2) };
	memcpy(py, pyb, np * sizeof(struct py_frame));
	k = py_splice(nat, nn, py, np, mode, items, sizeof(items) / sizeof(items[0]));
	if (k > sizeof(items) / sizeof(items[0]))
		abort();
	for (size_t i = 0; i < k; i++) {
		if ((items[i].native < 0) == (items[i].py < 0))
			abort();
		if (items[i].native >= 0 &&
		    ((size_t)items[i].native >= nn || seen_n[items[i].native]++))
			abort();
		if (items[i].py >= 0 && ((size_t)items[i].py >= np || seen_p[items[i].py]++))
			abort();
	}
	/* Every Python frame is placed: none is lost to the splice. */
	for (size_t i = 0; i < np; i++)
		if (!seen_p[i])
			abort();
}

/*
 * The same bytes as a compiled frame's debug information (jnm__scopes): the first quarter as
 * PcDescs, the rest as scope data, at pcs at and past each PcDesc's, both ways. Every scope's
 * method is one of the metadata's or unknown; never more scopes than room.
 */
static void check_jnm_scopes(const uint8_t *b, size_t n, uint16_t jdk)
{
	static const struct jnm_meta meta[3] = { { .method = 0x10, .stamp = 1 },
						 { .method = 0 },
						 { .method = 0x30, .stamp = 3 } };
	size_t npcs = n / 4 / sizeof(struct jnm_pc), slen = n - npcs * sizeof(struct jnm_pc);
	struct jnm_pc *pcs = malloc(npcs ? npcs * sizeof(*pcs) : 1);
	uint8_t *scopes = malloc(slen ? slen : 1);
	struct jscope s[JAVA_MAX_SCOPES];

	if (!pcs || !scopes)
		abort();
	memcpy(pcs, b, npcs * sizeof(*pcs));
	memcpy(scopes, b + npcs * sizeof(*pcs), slen);
	for (size_t i = 0; i <= npcs && i < 16; i++) {
		uint32_t off = i < npcs ? (uint32_t)pcs[i].pc_offset : 0;

		for (int top = 0; top < 2; top++) {
			size_t k = jnm__scopes(jdk, pcs, npcs, scopes, slen, meta, 3, off, top, s,
					       i % 2 ? 3 : JAVA_MAX_SCOPES);

			if (k > (i % 2 ? 3 : JAVA_MAX_SCOPES))
				abort();
			for (size_t q = 0; q < k; q++)
				if (s[q].stamp && s[q].method != 0x10 && s[q].method != 0x30)
					abort();
		}
	}
	free(pcs);
	free(scopes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_spec spec = { .task_id = 7,
				  .type = TASK_ON_CPU,
				  .format = FORMAT_FOLDED,
				  .unwind = UNWIND_DWARF,
				  .npids = 1,
				  .pids = { FUZZ_PID },
				  .period_us = 10000 };
	struct msg_output_written w;
	struct symbolizer *sym;
	struct unwinder *unw;
	struct ship_task *t;
	uint8_t mode, *codes, *snaps;
	size_t n, m, off, slen;
	char *out = NULL;
	size_t olen = 0;
	FILE *f;
	int err;

	if (size < 5)
		return 0;
	mode = data[0];
	n = (size_t)data[1] | (size_t)data[2] << 8;
	if (n > size - 3)
		return 0;
	off = 3 + n;
	if (size - off < 2)
		return 0;
	m = (size_t)data[off] | (size_t)data[off + 1] << 8;
	off += 2;
	if (m > size - off)
		return 0;
	slen = size - off - m;
	check_splice(data + off, m, data + off + m, slen,
		     mode & 1 ? PY_NATIVE_ALL : PY_NATIVE_SPLICED);
	/* The line tables: any bytes, any offset. */
	for (uint32_t q = 0; q < 64; q += 2) {
		int32_t line;

		(void)pylines__addr2line((uint16_t)(0x0308 + ((mode >> 1) & 7)), data + 3, n, 1, q,
					 &line);
		(void)jlines__bci2line(mode & 32 ? 25 : 17, data + 3, n, q, &line);
	}
	/* The same bytes as a V8 position table, at any offset; its position as a line in them;
	 * their halves as a baseline Code's bytecode offset table and its bytecodes. */
	for (uint32_t q = 0; q < 256; q += 3) {
		uint32_t pos, bo;
		int32_t line;

		if (v8bl__bytecode(data + 3, n / 2, data + 3 + n / 2, n - n / 2, q * 4, &bo) &&
		    bo >= n - n / 2)
			abort();

		if (v8pos__find(data + 3, n, q, &pos)) {
			if (pos > INT32_MAX)
				abort();
			if (v8pos__line(data + 3, n, (uint32_t)q, 1, pos, &line) &&
			    (line < 1 || (size_t)line > n + 1))
				abort();
		}
	}
	check_jnm_scopes(data + 3, n, mode & 32 ? 25 : 17);

	codes = copy_of(data + 3, n, sizeof(struct ship_pycodes_hdr), spec.task_id);
	snaps = copy_of(data + off + m, slen, sizeof(struct ship_snapshots_hdr), spec.task_id);
	spec.flags = mode & 1 ? TASK_PYTHON_NATIVE_ALL : 0;
	sym = symbolizer__new(&fake_opener, 0);
	unw = sym ? unwinder__new(sym) : NULL;
	t = ship_task__new(spec.task_id);
	if (!unw || !t || ship_task__begin(t, &spec, sym))
		abort();
	err = ship_task__pycodes(t, codes, n);
	if (err && err != -ENOMEM)
		abort();
	err = ship_task__snapshots(t, snaps, slen, sym, unw);
	if (err && err != -EPROTO && err != -ENOMEM)
		abort();
	t->format = mode & 16 ? FORMAT_PPROF : FORMAT_FOLDED;
	f = open_memstream(&out, &olen);
	if (!f)
		abort();
	if (ship_task__write(t, f, &w))
		abort();
	fclose(f);
	if (t->format == FORMAT_FOLDED && olen && memchr(out, '\0', olen))
		abort();
	free(out);
	ship_task__free(t);
	unwinder__free(unw);
	symbolizer__free(sym);
	free(codes);
	free(snaps);
	return 0;
}
