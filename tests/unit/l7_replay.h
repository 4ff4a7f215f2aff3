/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit test helpers for the parsers behind shipper/l7.h: a run (one connection fed segment by
 * segment, exchanges popped after each feed, close checking that every byte is accounted
 * for), and recordings of real conversations made by tests/tools/tcp_record.py
 * (tests/unit/data/<proto>/<name>.c2s and .s2c, "SEQ HEX" per segment), found under
 * $ROVER_SRC or the current directory.
 */
#ifndef ROVER_TESTS_L7_REPLAY_H
#define ROVER_TESTS_L7_REPLAY_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/l7.h"

#define L7R_MAX_X 512
#define L7R_MAX_SEGS 256

struct l7r_seg {
	int c2s; /* written by the client */
	size_t len;
	uint8_t *data;
};

struct l7r_rec {
	struct l7r_seg seg[L7R_MAX_SEGS];
	size_t n;
	uint64_t bytes;
};

struct l7r_run {
	const struct l7_ops *ops;
	void *c;
	struct l7_exchange x[L7R_MAX_X]; /* the first ones popped */
	size_t n;
	size_t popped; /* all of them */
	uint64_t sum;  /* their bytes */
};

static inline int l7r_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Reads one direction's file into rec, each segment at its sequence number. */
static inline void l7r_load_dir(struct l7r_rec *rec, const char *path, int c2s)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	cr_assert(f, "open %s: %s", path, strerror(errno));
	while ((len = getline(&line, &cap, f)) > 0) {
		char *sp = strchr(line, ' ');
		unsigned long seq;
		struct l7r_seg *s;
		size_t hex;

		if (line[0] == '#' || !sp)
			continue;
		seq = strtoul(line, NULL, 10);
		cr_assert_lt(seq, L7R_MAX_SEGS, "%s: segment %lu", path, seq);
		s = &rec->seg[seq];
		cr_assert_null(s->data, "%s: segment %lu twice", path, seq);
		hex = strcspn(sp + 1, "\r\n");
		cr_assert_eq(hex % 2, 0);
		s->len = hex / 2;
		s->data = malloc(s->len ? s->len : 1);
		cr_assert(s->data);
		for (size_t i = 0; i < s->len; i++) {
			int hi = l7r_hex(sp[1 + 2 * i]), lo = l7r_hex(sp[2 + 2 * i]);

			cr_assert(hi >= 0 && lo >= 0, "%s: bad hex", path);
			s->data[i] = (uint8_t)(hi << 4 | lo);
		}
		s->c2s = c2s;
		rec->bytes += s->len;
		if (seq + 1 > rec->n)
			rec->n = seq + 1;
	}
	free(line);
	fclose(f);
}

static inline struct l7r_rec *l7r_load(const char *proto, const char *name)
{
	const char *src = getenv("ROVER_SRC");
	struct l7r_rec *rec = calloc(1, sizeof(*rec));
	char path[4096];

	cr_assert(rec);
	snprintf(path, sizeof(path), "%s/tests/unit/data/%s/%s.c2s", src ? src : ".", proto, name);
	l7r_load_dir(rec, path, 1);
	snprintf(path, sizeof(path), "%s/tests/unit/data/%s/%s.s2c", src ? src : ".", proto, name);
	l7r_load_dir(rec, path, 0);
	for (size_t i = 0; i < rec->n; i++)
		cr_assert(rec->seg[i].data, "%s: segment %zu missing", name, i);
	return rec;
}

static inline void l7r_rec_free(struct l7r_rec *rec)
{
	if (!rec)
		return;
	for (size_t i = 0; i < rec->n; i++)
		free(rec->seg[i].data);
	free(rec);
}

static inline struct l7r_run *l7r_new(const struct l7_ops *ops)
{
	struct l7r_run *r = calloc(1, sizeof(*r));

	cr_assert(r);
	r->ops = ops;
	r->c = ops->new_conn(0);
	cr_assert(r->c);
	return r;
}

static inline void l7r_pop(struct l7r_run *r)
{
	struct l7_exchange x;

	while (r->ops->next(r->c, &x) == 1) {
		r->popped++;
		r->sum += x.req_bytes + x.resp_bytes;
		if (r->n < L7R_MAX_X)
			r->x[r->n++] = x;
	}
}

static inline void l7r_seg(struct l7r_run *r, enum l7_dir dir, uint64_t ts, const void *p,
		    size_t captured, size_t actual)
{
	cr_assert_eq(r->ops->feed(r->c, dir, ts, p, captured, actual), 0);
	l7r_pop(r);
}

static inline void l7r_lost(struct l7r_run *r, enum l7_dir dir, uint64_t nbytes)
{
	cr_assert_eq(r->ops->lost(r->c, dir, nbytes), 0);
	l7r_pop(r);
}

/* Closes, pops what is left, checks that the bytes add up; returns the stats. */
static inline struct l7_stats l7r_finish(struct l7r_run *r, uint64_t ts)
{
	struct l7_stats st;

	r->ops->close(r->c, ts);
	l7r_pop(r);
	cr_assert_eq(r->ops->next(r->c, NULL), 0);
	r->ops->stats(r->c, &st);
	cr_assert_eq(r->sum + st.bytes_unattributed, st.bytes_seen,
		     "exchanges %llu + unattributed %llu != seen %llu", (unsigned long long)r->sum,
		     (unsigned long long)st.bytes_unattributed, (unsigned long long)st.bytes_seen);
	cr_assert_eq(st.exchanges, r->popped);
	return st;
}

static inline void l7r_free(struct l7r_run *r)
{
	if (!r)
		return;
	r->ops->free_conn(r->c);
	free(r);
}

/* The segment's direction as the traced process sees it: the client's, or the server's. */
static inline enum l7_dir l7r_dir(const struct l7r_seg *s, bool as_server)
{
	return s->c2s != as_server ? L7_EGRESS : L7_INGRESS;
}

/*
 * Plays segments [from, rec->n) of a recording, segment i at time (i + 1) * 1000, each in
 * pieces of `piece` bytes (0: whole), and closes at (rec->n + 1) * 1000.
 */
static inline struct l7r_run *l7r_play(const struct l7_ops *ops, const struct l7r_rec *rec,
				bool as_server, size_t piece, size_t from)
{
	struct l7r_run *r = l7r_new(ops);

	for (size_t i = from; i < rec->n; i++) {
		const struct l7r_seg *s = &rec->seg[i];
		size_t step = piece ? piece : s->len;

		for (size_t off = 0; off < s->len; off += step) {
			size_t k = s->len - off < step ? s->len - off : step;

			l7r_seg(r, l7r_dir(s, as_server), (i + 1) * 1000, s->data + off, k, k);
		}
	}
	l7r_finish(r, (rec->n + 1) * 1000);
	return r;
}

static inline void l7r_same(const struct l7r_run *a, const struct l7r_run *b, const char *what)
{
	cr_assert_eq(a->n, b->n, "%s: %zu exchanges, not %zu", what, b->n, a->n);
	for (size_t i = 0; i < a->n; i++)
		cr_assert(!memcmp(&a->x[i], &b->x[i], sizeof(a->x[i])), "%s: exchange %zu differs",
			  what, i);
}

#endif
