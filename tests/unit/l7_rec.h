/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit test helpers for the parsers of shipper/l7.h: a connection run through a struct l7_ops
 * that pops after every feed and checks the byte accounting at its end, and recordings of
 * real conversations (tests/tools/tcp_record.py: NAME.c2s and NAME.s2c, one "SEQ HEX" line
 * per chunk the proxy read, SEQ ordering both files) read from tests/unit/data/PROTO/
 * under $ROVER_SRC, else the current directory.
 */
#ifndef ROVER_TESTS_UNIT_L7_REC_H
#define ROVER_TESTS_UNIT_L7_REC_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/l7.h"

#define L7T_MAX_X 512
#define L7T_MAX_SEGS 256

struct l7t_run {
	const struct l7_ops *ops;
	void *c;
	struct l7_exchange x[L7T_MAX_X];
	size_t n;
};

static inline struct l7t_run *l7t_new(const struct l7_ops *ops)
{
	struct l7t_run *r = calloc(1, sizeof(*r));

	cr_assert(r);
	r->ops = ops;
	r->c = ops->new_conn(0);
	cr_assert(r->c);
	return r;
}

static inline void l7t_pop(struct l7t_run *r)
{
	while (r->n < L7T_MAX_X && r->ops->next(r->c, &r->x[r->n]) == 1)
		r->n++;
}

static inline void l7t_seg(struct l7t_run *r, enum l7_dir dir, uint64_t ts, const void *p,
			   size_t captured, size_t actual)
{
	cr_assert_eq(r->ops->feed(r->c, dir, ts, p, captured, actual), 0);
	l7t_pop(r);
}

static inline void l7t_lost(struct l7t_run *r, enum l7_dir dir, uint64_t n)
{
	cr_assert_eq(r->ops->lost(r->c, dir, n), 0);
	l7t_pop(r);
}

/* Closes, pops what is left, checks that the bytes add up; returns the stats. */
static inline struct l7_stats l7t_finish(struct l7t_run *r, uint64_t ts)
{
	struct l7_stats st;
	uint64_t sum = 0;

	r->ops->close(r->c, ts);
	l7t_pop(r);
	cr_assert_eq(r->ops->next(r->c, NULL), 0);
	r->ops->stats(r->c, &st);
	for (size_t i = 0; i < r->n; i++) {
		sum += r->x[i].req_bytes + r->x[i].resp_bytes;
		cr_assert_leq(r->x[i].start_ns, r->x[i].end_ns, "exchange %zu", i);
	}
	cr_assert_eq(sum + st.bytes_unattributed, st.bytes_seen,
		     "exchanges %llu + unattributed %llu != seen %llu", (unsigned long long)sum,
		     (unsigned long long)st.bytes_unattributed, (unsigned long long)st.bytes_seen);
	cr_assert_eq(st.exchanges, r->n);
	return st;
}

static inline void l7t_free(struct l7t_run *r)
{
	if (!r)
		return;
	r->ops->free_conn(r->c);
	free(r);
}

struct l7t_seg {
	long seq;
	bool c2s;
	size_t n;
	uint8_t *b;
};

struct l7t_rec {
	struct l7t_seg s[L7T_MAX_SEGS];
	size_t n;
	size_t bytes;
};

static inline void l7t_load_dir(struct l7t_rec *rec, const char *path, bool c2s)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	cr_assert(f, "open %s (set ROVER_SRC to the source tree)", path);
	while (getline(&line, &cap, f) > 0) {
		struct l7t_seg *s;
		char *hex;
		size_t len;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		cr_assert_lt(rec->n, L7T_MAX_SEGS);
		s = &rec->s[rec->n++];
		s->seq = strtol(line, &hex, 10);
		cr_assert_eq(*hex, ' ', "%s: %s", path, line);
		hex++;
		len = strcspn(hex, "\n");
		cr_assert(len % 2 == 0 && len, "%s: odd hex", path);
		s->c2s = c2s;
		s->n = len / 2;
		s->b = malloc(s->n);
		cr_assert(s->b);
		for (size_t i = 0; i < s->n; i++)
			cr_assert_eq(sscanf(hex + 2 * i, "%2hhx", &s->b[i]), 1);
		rec->bytes += s->n;
	}
	free(line);
	fclose(f);
}

static inline int l7t_seq_cmp(const void *a, const void *b)
{
	const struct l7t_seg *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* tests/unit/data/PROTO/NAME.{c2s,s2c}, in the order the proxy read them. */
static inline struct l7t_rec *l7t_load(const char *proto, const char *name)
{
	const char *src = getenv("ROVER_SRC");
	struct l7t_rec *rec = calloc(1, sizeof(*rec));
	char path[4096];

	cr_assert(rec);
	snprintf(path, sizeof(path), "%s/tests/unit/data/%s/%s.c2s", src ? src : ".", proto, name);
	l7t_load_dir(rec, path, true);
	snprintf(path, sizeof(path), "%s/tests/unit/data/%s/%s.s2c", src ? src : ".", proto, name);
	l7t_load_dir(rec, path, false);
	qsort(rec->s, rec->n, sizeof(rec->s[0]), l7t_seq_cmp);
	return rec;
}

static inline void l7t_rec_free(struct l7t_rec *rec)
{
	if (!rec)
		return;
	for (size_t i = 0; i < rec->n; i++)
		free(rec->s[i].b);
	free(rec);
}

/*
 * Plays a recording as the client (c2s egress) or the server (c2s ingress) saw it, segment i
 * at time i + 1, each segment cut into pieces of `piece` bytes (0: whole), or, with split_at,
 * segment `split_seg` cut in two at byte split_at. Closes at time n + 1.
 */
static inline struct l7t_run *l7t_play(const struct l7_ops *ops, const struct l7t_rec *rec,
				       bool server, size_t piece, size_t split_seg, size_t split_at)
{
	struct l7t_run *r = l7t_new(ops);

	for (size_t i = 0; i < rec->n; i++) {
		const struct l7t_seg *s = &rec->s[i];
		enum l7_dir dir = s->c2s != server ? L7_EGRESS : L7_INGRESS;
		size_t step = piece ? piece : s->n;

		if (split_at && i == split_seg && split_at < s->n) {
			l7t_seg(r, dir, i + 1, s->b, split_at, split_at);
			l7t_seg(r, dir, i + 1, s->b + split_at, s->n - split_at, s->n - split_at);
			continue;
		}
		for (size_t off = 0; off < s->n; off += step) {
			size_t k = s->n - off < step ? s->n - off : step;

			l7t_seg(r, dir, i + 1, s->b + off, k, k);
		}
	}
	l7t_finish(r, rec->n + 1);
	return r;
}

static inline void l7t_same(const struct l7t_run *a, const struct l7t_run *b, const char *how)
{
	cr_assert_eq(a->n, b->n, "%s: %zu exchanges, not %zu", how, b->n, a->n);
	for (size_t i = 0; i < a->n; i++)
		cr_assert(!memcmp(&a->x[i], &b->x[i], sizeof(a->x[i])), "%s: exchange %zu differs",
			  how, i);
}

/* Every split gives the exchanges of the whole: bytewise, pieces, and two at every byte. */
static inline void l7t_all_splits(const struct l7_ops *ops, const struct l7t_rec *rec)
{
	struct l7t_run *whole = l7t_play(ops, rec, false, 0, 0, 0);
	size_t pieces[] = { 1, 2, 3, 5, 7, 16 };
	char how[64];

	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		struct l7t_run *r = l7t_play(ops, rec, false, pieces[p], 0, 0);

		snprintf(how, sizeof(how), "pieces of %zu", pieces[p]);
		l7t_same(whole, r, how);
		l7t_free(r);
	}
	for (size_t i = 0; i < rec->n; i++) {
		for (size_t at = 1; at < rec->s[i].n; at++) {
			struct l7t_run *r = l7t_play(ops, rec, false, 0, i, at);

			snprintf(how, sizeof(how), "segment %zu split at %zu", i, at);
			l7t_same(whole, r, how);
			l7t_free(r);
		}
	}
	l7t_free(whole);
}

#endif
