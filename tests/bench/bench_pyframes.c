// SPDX-License-Identifier: Apache-2.0
/*
 * The shipper's naming of Python frames (shipper/stacks/python.c), warm: NCODES code objects of
 * one process given as MSG_SHIP_PYCODES frames, their line tables those CPython 3.12 made for
 * the unit tests' samples (tests/unit/pylines_vectors.h), then NFRAMES frames named at random
 * offsets of random code objects, as `qualname (file.py:LINE)`. Prints the rate; issue 25's
 * target is at least 1M frames/s. scripts/bench_python.sh runs it.
 *
 *   bench_pyframes [-c NCODES] [-n NFRAMES]     defaults: 2000 codes, 2000000 frames
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/stackcount.h"
#include "shipper/stacks/python.h"
#include "tests/unit/pylines_vectors.h"

#define TGID 100

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The vectors of one version, as indexes into pyl_vectors. */
static size_t vectors_of(uint16_t version, size_t *ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(pyl_vectors) / sizeof(pyl_vectors[0]) && n < max; i++)
		if (pyl_vectors[i].version == version && pyl_vectors[i].nlines &&
		    pyl_vectors[i].table_len <= PY_LINES_MAX)
			ret[n++] = i;
	return n;
}

int main(int argc, char **argv)
{
	uint32_t ncodes = 2000, nframes = 2000000;
	size_t vec[256], nvec;
	struct pycodes *c;
	uint8_t *frame;
	size_t at;
	int32_t tgid = TGID;
	const char *why = NULL;
	uint64_t sum = 0;
	double t0, t1;
	int opt;

	while ((opt = getopt(argc, argv, "c:n:")) != -1) {
		if (opt == 'c')
			ncodes = (uint32_t)strtoul(optarg, NULL, 10);
		else if (opt == 'n')
			nframes = (uint32_t)strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	nvec = vectors_of(0x030c, vec, 256);
	c = pycodes__new(0);
	frame = calloc(1, sizeof(struct ship_pycodes_hdr) + 64 * PYCODE_REC_BYTES(PY_LINES_MAX));
	if (!nvec || !c || !frame)
		return 1;
	/* Records, 64 a frame. */
	for (uint32_t i = 0; i < ncodes;) {
		struct ship_pycodes_hdr hdr = { .task_id = 1 };

		at = sizeof(hdr);
		for (; i < ncodes && hdr.count < 64; i++, hdr.count++) {
			const struct pyl_vector *v = &pyl_vectors[vec[i % nvec]];
			struct sc_pycode *r = (struct sc_pycode *)(void *)(frame + at);
			int nl = snprintf((char *)r->data, PY_NAME_MAX, "Service.handler_%u", i);
			int fl = snprintf((char *)r->data + PY_NAME_MAX, PY_FILE_MAX,
					  "/srv/app/handlers/module_%u.py", i % 97);

			memset(r, 0, offsetof(struct sc_pycode, data));
			r->kind = SC_REC_PYCODE;
			r->tgid = TGID;
			r->code = 0x7f0000100000ull + (uint64_t)i * 512;
			r->stamp = i + 1;
			r->firstlineno = v->firstlineno;
			r->version = v->version;
			r->name_len = (uint16_t)nl;
			r->file_len = (uint16_t)fl;
			r->name_kind = r->file_kind = 1;
			r->lines_len = (uint16_t)v->table_len;
			memcpy(r->data + PY_NAME_MAX + PY_FILE_MAX, v->table, v->table_len);
			at += PYCODE_REC_BYTES(v->table_len);
		}
		memcpy(frame, &hdr, sizeof(hdr));
		if (pycodes__add_frame(c, 1, &tgid, 1, frame, at, &why)) {
			fprintf(stderr, "bench_pyframes: records refused: %s\n", why ? why : "?");
			return 1;
		}
	}
	/* Twice: the first pass warms the caches, the second is timed. */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t x = 88172645463325252ull;

		t0 = now_s();
		for (uint32_t k = 0; k < nframes; k++) {
			uint32_t i;
			const struct pyl_vector *v;
			struct py_frame f;
			struct py_frame_src src;
			char buf[512];

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			i = (uint32_t)(x % ncodes);
			v = &pyl_vectors[vec[i % nvec]];
			f.code = 0x7f0000100000ull + (uint64_t)i * 512;
			f.stamp = i + 1;
			f.instr = (uint32_t)((x >> 32) % v->nlines) * 2;
			sum += (uint64_t)pycodes__name(c, TGID, &f, buf, sizeof(buf), &src);
		}
		t1 = now_s();
	}
	printf("python frames named (warm): %u frames of %u code objects in %.3f s: %.2f M "
	       "frames/s (target >= 1 M/s)\n",
	       nframes, ncodes, t1 - t0, nframes / (t1 - t0) / 1e6);
	pycodes__free(c);
	free(frame);
	return sum ? 0 : 1;
}
