/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit test helpers for every parser behind shipper/network/protocols/l7.h, HTTP's included:
 * a run (one connection fed segment by segment through the interface, exchanges popped after
 * each feed, close checking that every byte is accounted for), the check that any split of a
 * conversation gives the same exchanges, and recordings of real conversations made by
 * tests/tools/tcp_record.py, found under $ROVER_SRC or the current directory.
 *
 * A recording is tests/unit/data/<proto>/<name>.c2s (what the client sent) and .s2c (what the
 * server sent), one line per segment the recording proxy read: "SEQ HEX", or "SEQ SECONDS HEX"
 * where the proxy noted the time since the first segment (tcp_record.py without --no-times).
 * SEQ numbers the segments of both files together, from 0, in the order they were read.
 * Lines starting with '#' are comments.
 */
#ifndef ROVER_TESTS_L7_REPLAY_H
#define ROVER_TESTS_L7_REPLAY_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/protocols/l7.h"
#include "tests/unit/l7_same.h"

#define L7R_MAX_X 512
#define L7R_MAX_SEGS 256
/* A recording without times plays segment i at (i + 1) * L7R_TICK. */
#define L7R_TICK 1000ull
/* One with times plays a segment at L7R_T0 plus its recorded time. */
#define L7R_T0 (1000 * 1000000000ull)
/* struct l7r_play's split_at: the segment fed one byte at a time. */
#define L7R_BYTEWISE SIZE_MAX
/* l7r_all_splits() cuts each segment in two at every one of its first this many bytes. */
#define L7R_SPLIT_MAX 2048u

struct l7r_seg {
	unsigned long seq;
	bool c2s;    /* written by the client */
	uint64_t ts; /* when l7r_play() feeds it */
	size_t len;
	uint8_t *data;
};

struct l7r_rec {
	struct l7r_seg seg[L7R_MAX_SEGS]; /* in SEQ order */
	size_t n;
	uint64_t bytes;
	bool timed; /* the files had times */
};

struct l7r_run {
	const struct l7_ops *ops;
	void *c;
	struct l7_exchange x[L7R_MAX_X]; /* the first ones popped */
	/* their HTTP part (x[i].http, x[i].http2 point here): the parser's is the next one's */
	struct http2_exchange hx[L7R_MAX_X];
	size_t n;
	size_t popped; /* all of them */
	uint64_t sum;  /* their bytes */
};

/* --- runs --- */

static inline struct l7r_run *l7r_new_flags(const struct l7_ops *ops, unsigned flags)
{
	struct l7r_run *r = calloc(1, sizeof(*r));

	cr_assert(r);
	r->ops = ops;
	r->c = ops->new_conn(flags);
	cr_assert(r->c);
	return r;
}

static inline struct l7r_run *l7r_new(const struct l7_ops *ops)
{
	return l7r_new_flags(ops, 0);
}

static inline void l7r_pop(struct l7r_run *r)
{
	struct l7_exchange x;

	while (r->ops->next(r->c, &x) == 1) {
		cr_assert_leq(x.start_ns, x.end_ns, "exchange %zu ends before it starts",
			      r->popped);
		r->popped++;
		r->sum += x.req_bytes + x.resp_bytes;
		if (r->n == L7R_MAX_X)
			continue;
		l7_x_keep(&x, &r->x[r->n], &r->hx[r->n]);
		r->n++;
	}
}

static inline void l7r_seg(struct l7r_run *r, enum l7_dir dir, uint64_t ts, const void *p,
			   size_t captured, size_t actual)
{
	cr_assert_eq(r->ops->feed(r->c, dir, ts, p, captured, actual), 0);
	l7r_pop(r);
}

/* A segment captured whole. */
static inline void l7r_feed(struct l7r_run *r, enum l7_dir dir, uint64_t ts, const void *p,
			    size_t len)
{
	l7r_seg(r, dir, ts, p, len, len);
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

static inline void l7r_same(const struct l7r_run *a, const struct l7r_run *b, const char *what)
{
	cr_assert_eq(a->n, b->n, "%s: %zu exchanges, not %zu", what, b->n, a->n);
	cr_assert_eq(a->popped, b->popped, "%s: %zu popped, not %zu", what, b->popped, a->popped);
	for (size_t i = 0; i < a->n; i++)
		cr_assert(l7_x_same(&a->x[i], &b->x[i]), "%s: exchange %zu differs", what, i);
}

/* --- recordings --- */

static inline struct l7r_rec *l7r_rec_new(void)
{
	struct l7r_rec *rec = calloc(1, sizeof(*rec));

	cr_assert(rec);
	return rec;
}

/* Appends a copy of p[0..len) as the next segment, at the next tick: for hand-made ones. */
static inline void l7r_rec_add(struct l7r_rec *rec, bool c2s, const void *p, size_t len)
{
	struct l7r_seg *s;

	cr_assert_lt(rec->n, L7R_MAX_SEGS);
	s = &rec->seg[rec->n];
	*s = (struct l7r_seg){
		.seq = rec->n, .c2s = c2s, .ts = (rec->n + 1) * L7R_TICK, .len = len
	};
	s->data = malloc(len ? len : 1);
	cr_assert(s->data);
	memcpy(s->data, p, len);
	rec->bytes += len;
	rec->n++;
}

static inline void l7r_rec_free(struct l7r_rec *rec)
{
	if (!rec)
		return;
	for (size_t i = 0; i < rec->n; i++)
		free(rec->seg[i].data);
	free(rec);
}

static inline int l7r_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Reads one direction's file into rec, times and all; l7r_load() puts them in order. */
static inline void l7r_load_dir(struct l7r_rec *rec, const char *path, bool c2s)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;

	cr_assert(f, "open %s: %s (set ROVER_SRC to the source tree)", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		char *p, *end;
		size_t tok, hex;
		struct l7r_seg *s;
		double t = 0;
		bool timed;

		if (line[0] == '#' || line[0] == '\n' || line[0] == '\r')
			continue;
		cr_assert_lt(rec->n, L7R_MAX_SEGS, "%s: too many segments", path);
		s = &rec->seg[rec->n];
		s->seq = strtoul(line, &end, 10);
		cr_assert(end != line && (*end == ' ' || *end == '\n' || *end == '\r'), "%s: %s",
			  path, line);
		/* "SEQ SECONDS HEX", or "SEQ HEX": a time has a dot, hex never does */
		p = end + strspn(end, " ");
		tok = strcspn(p, " \r\n");
		timed = p[tok] == ' ' || memchr(p, '.', tok);
		if (timed) {
			t = strtod(p, &end);
			cr_assert(end == p + tok, "%s: bad time in %s", path, line);
			p = end + strspn(end, " ");
		}
		if (!rec->n)
			rec->timed = timed;
		cr_assert_eq(timed, rec->timed, "%s: times on some lines only", path);
		hex = strcspn(p, "\r\n");
		cr_assert_eq(hex % 2, 0, "%s: odd hex in segment %lu", path, s->seq);
		s->c2s = c2s;
		s->ts = timed ? L7R_T0 + (uint64_t)(t * 1e9) : 0;
		s->len = hex / 2;
		s->data = malloc(s->len ? s->len : 1);
		cr_assert(s->data);
		for (size_t i = 0; i < s->len; i++) {
			int hi = l7r_hex(p[2 * i]), lo = l7r_hex(p[2 * i + 1]);

			cr_assert(hi >= 0 && lo >= 0, "%s: bad hex in segment %lu", path, s->seq);
			s->data[i] = (uint8_t)(hi << 4 | lo);
		}
		rec->bytes += s->len;
		rec->n++;
	}
	free(line);
	fclose(f);
}

static inline int l7r_seq_cmp(const void *a, const void *b)
{
	const struct l7r_seg *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* tests/unit/data/PROTO/NAME.{c2s,s2c}, merged back in the order the proxy read them. */
static inline struct l7r_rec *l7r_load(const char *proto, const char *name)
{
	const char *src = getenv("ROVER_SRC");
	struct l7r_rec *rec = l7r_rec_new();
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/unit/data/%s/%s.c2s", src ? src : ".", proto, name);
	l7r_load_dir(rec, path, true);
	snprintf(path, sizeof(path), "%s/tests/unit/data/%s/%s.s2c", src ? src : ".", proto, name);
	l7r_load_dir(rec, path, false);
	qsort(rec->seg, rec->n, sizeof(rec->seg[0]), l7r_seq_cmp);
	for (size_t i = 0; i < rec->n; i++) {
		cr_assert_eq(rec->seg[i].seq, i, "%s/%s: segment %zu missing or twice", proto, name,
			     i);
		if (!rec->timed)
			rec->seg[i].ts = (i + 1) * L7R_TICK;
	}
	return rec;
}

/* The segment's direction as the traced process sees it: the client's, or the server's. */
static inline enum l7_dir l7r_dir(const struct l7r_seg *s, bool as_server)
{
	return s->c2s != as_server ? L7_EGRESS : L7_INGRESS;
}

/* How l7r_play() feeds a recording; all 0: whole segments, as the client, then closed. */
struct l7r_play {
	bool as_server; /* the traced process is the server: the client's segments come in */
	unsigned flags; /* new_conn()'s (L7_F_DATAGRAM) */
	size_t from;	/* the first segment fed */
	size_t piece;	/* every segment in pieces of this many bytes */
	size_t cut;	/* every segment longer than this in two, cut at this byte */
	/*
	 * With split, segment split_seg in two at byte split_at (0 or its length: one of them
	 * empty), or one byte at a time if split_at is L7R_BYTEWISE; before piece and cut.
	 */
	bool split;
	size_t split_seg, split_at;
	bool open; /* not closed: the caller ends the run with l7r_finish() */
};

#define L7R_PLAY(...) ((struct l7r_play){ __VA_ARGS__ })

/*
 * Plays segments [o.from, rec->n) of a recording, each at its ts, and unless o.open closes
 * one tick after the last one.
 */
static inline struct l7r_run *l7r_play(const struct l7_ops *ops, const struct l7r_rec *rec,
				       struct l7r_play o)
{
	struct l7r_run *r = l7r_new_flags(ops, o.flags);

	for (size_t i = o.from; i < rec->n; i++) {
		const struct l7r_seg *s = &rec->seg[i];
		enum l7_dir dir = l7r_dir(s, o.as_server);
		size_t step = o.piece ? o.piece : s->len;

		if (o.split && i == o.split_seg && o.split_at == L7R_BYTEWISE) {
			for (size_t k = 0; k < s->len; k++)
				l7r_feed(r, dir, s->ts, s->data + k, 1);
		} else if (o.split && i == o.split_seg) {
			cr_assert_leq(o.split_at, s->len);
			l7r_feed(r, dir, s->ts, s->data, o.split_at);
			l7r_feed(r, dir, s->ts, s->data + o.split_at, s->len - o.split_at);
		} else if (o.cut && o.cut < s->len) {
			l7r_feed(r, dir, s->ts, s->data, o.cut);
			l7r_feed(r, dir, s->ts, s->data + o.cut, s->len - o.cut);
		} else {
			for (size_t off = 0; off < s->len; off += step) {
				size_t k = s->len - off < step ? s->len - off : step;

				l7r_feed(r, dir, s->ts, s->data + off, k);
			}
		}
	}
	if (!o.open)
		l7r_finish(r, (rec->n ? rec->seg[rec->n - 1].ts : 0) + L7R_TICK);
	return r;
}

/*
 * As the client and as the server, every segment fed in pieces of each size gives the
 * exchanges of the whole, with as many requests and bytes unattributed, and no resync.
 */
static inline void l7r_pieces_same(const struct l7_ops *ops, const struct l7r_rec *rec,
				   const size_t *pieces, size_t npieces, const char *what)
{
	char how[256];

	for (int as_server = 0; as_server < 2; as_server++) {
		struct l7r_run *whole = l7r_play(ops, rec, L7R_PLAY(.as_server = as_server));
		struct l7_stats b;

		whole->ops->stats(whole->c, &b);
		for (size_t p = 0; p < npieces; p++) {
			struct l7r_play o = { .as_server = as_server, .piece = pieces[p] };
			struct l7r_run *r = l7r_play(ops, rec, o);
			struct l7_stats a;

			snprintf(how, sizeof(how), "%s as the %s in pieces of %zu", what,
				 as_server ? "server" : "client", pieces[p]);
			r->ops->stats(r->c, &a);
			l7r_same(whole, r, how);
			cr_assert_eq(a.bytes_unattributed, b.bytes_unattributed, "%s", how);
			cr_assert_eq(a.requests, b.requests, "%s", how);
			cr_assert_eq(a.resyncs, 0, "%s", how);
			l7r_free(r);
		}
		l7r_free(whole);
	}
}

/*
 * Every split gives the exchanges of the whole: l7r_pieces_same(), and each segment in two at
 * every byte (of its first L7R_SPLIT_MAX), its first or its second half empty too.
 */
static inline void l7r_all_splits(const struct l7_ops *ops, const struct l7r_rec *rec,
				  const char *what)
{
	static const size_t pieces[] = { 1, 2, 3, 5, 7, 9, 16, 64 };
	struct l7r_run *whole = l7r_play(ops, rec, L7R_PLAY(0));
	char how[256];

	l7r_pieces_same(ops, rec, pieces, sizeof(pieces) / sizeof(pieces[0]), what);
	for (size_t i = 0; i < rec->n; i++) {
		for (size_t at = 0; at <= rec->seg[i].len && at <= L7R_SPLIT_MAX; at++) {
			struct l7r_run *r =
				l7r_play(ops, rec,
					 L7R_PLAY(.split = true, .split_seg = i, .split_at = at));

			snprintf(how, sizeof(how), "%s: segment %zu split at %zu", what, i, at);
			l7r_same(whole, r, how);
			l7r_free(r);
		}
	}
	l7r_free(whole);
}

#endif
