// SPDX-License-Identifier: Apache-2.0
/*
 * A profile of named stacks merged by content, written as folded text, gzipped pprof or an SVG
 * flame graph. Names are interned once; a stack is a comm id plus frame ids.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
#include "common/hindex.h"
#include "common/msg.h"
#include "common/util.h"
#include "shipper/output/markup.h"
#include "shipper/output/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "proto/pprof/profile.pb-c.h"

/*
 * Limits on what the worker's data can make the shipper allocate. 1M distinct stacks is far
 * beyond what one interval of a real workload produces (BPF stack maps hold 16K-64K); 256
 * frames is above the 127 of the kernel's default perf_event_max_stack, 512 above a Python stack's
 * (127 native, 128 Python and 127 kernel frames). Names longer than
 * PROFILE_MAX_NAME bytes (huge C++ template names) are cut, at a UTF-8 boundary.
 */
#define PROFILE_MAX_STACKS 1000000u
#define PROFILE_MAX_FRAMES 512u
#define PROFILE_MAX_NAME 4096u
#define PROFILE_MAX_STRING_BYTES (256u << 20)

#define NO_ID UINT32_MAX

struct stack {
	uint64_t value;
	uint64_t hash;
	uint32_t comm;
	uint32_t nframes;
	uint32_t frames[]; /* string ids, outermost first */
};

#define PROFILE_MAX_COMMENTS 16
/* Each index starts with this many slots: most profiles never grow it. */
#define PROFILE_INDEX_SLOTS 1024

struct profile {
	/* Interned strings; id 0 is "" so that ids are pprof string_table indices. */
	char **strs;
	size_t nstrs, cap_strs;
	size_t str_bytes;
	struct hindex str_index; /* ids by hash_bytes */

	struct stack **stacks;
	size_t nstacks, cap_stacks;
	struct hindex stack_index; /* indices by stack_hash */

	uint64_t total;
	uint64_t period_ns;
	int64_t comments[PROFILE_MAX_COMMENTS]; /* string ids */
	size_t ncomments;
	uint32_t type_id, unit_id, cpu_id, nanoseconds_id, comm_key_id, fake_file_id;
	bool unit_is_count;

	/* Frames with a source position (profile__frame_source), by the frame's string id. */
	struct frame_src *srcs;
	size_t nsrcs, cap_srcs;
	struct hindex src_index;
};

struct frame_src {
	uint32_t name, function, file;
	int64_t line;
};

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t hash_mix(uint64_t h, uint32_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The interned length of s: at most PROFILE_MAX_NAME bytes, not ending inside a UTF-8 sequence. */
static size_t name_len(const char *s)
{
	size_t len = strnlen(s, PROFILE_MAX_NAME + 1);

	if (len > PROFILE_MAX_NAME) {
		len = PROFILE_MAX_NAME;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	return len;
}

static uint32_t strtab_find(const struct profile *p, const char *s, size_t len, uint64_t h)
{
	size_t pos = hindex__start(&p->str_index, h);
	uint32_t slot;

	while ((slot = hindex__next(&p->str_index, &pos))) {
		const char *c = p->strs[slot - 1];

		if (!strncmp(c, s, len) && c[len] == '\0')
			return slot - 1;
	}
	return NO_ID;
}

static uint64_t str_hash_of(const void *ctx, uint32_t id)
{
	const struct profile *p = ctx;

	return hash_bytes(p->strs[id], strlen(p->strs[id]));
}

static int strtab_add(struct profile *p, const char *s, size_t len, uint64_t h, uint32_t *ret_id)
{
	char *copy;
	int err;

	if (p->str_bytes + len + 1 > PROFILE_MAX_STRING_BYTES || p->nstrs >= NO_ID - 1)
		return -ENOSPC;
	err = hindex__reserve(&p->str_index, PROFILE_INDEX_SLOTS, str_hash_of, p);
	if (err)
		return err;
	if (p->nstrs == p->cap_strs) {
		size_t cap = p->cap_strs ? p->cap_strs * 2 : 256;
		char **strs = reallocarray(p->strs, cap, sizeof(*strs));

		if (!strs)
			return -ENOMEM;
		p->strs = strs;
		p->cap_strs = cap;
	}
	copy = strndup(s, len);
	if (!copy)
		return -ENOMEM;
	hindex__put(&p->str_index, h, (uint32_t)p->nstrs);
	p->strs[p->nstrs] = copy;
	p->str_bytes += len + 1;
	*ret_id = p->nstrs++;
	return 0;
}

static int strtab_intern(struct profile *p, const char *s, uint32_t *ret_id)
{
	size_t len = name_len(s);
	uint64_t h = hash_bytes(s, len);
	uint32_t id = strtab_find(p, s, len, h);

	if (id != NO_ID) {
		*ret_id = id;
		return 0;
	}
	return strtab_add(p, s, len, h, ret_id);
}

static uint64_t stack_hash(uint32_t comm, const uint32_t *frames, uint32_t n)
{
	uint64_t h = hash_mix(0x8f1bbcdcbfa53e0bULL, comm);

	for (uint32_t i = 0; i < n; i++)
		h = hash_mix(h, frames[i]);
	return hash_mix(h, n);
}

static struct stack *stack_find(const struct profile *p, uint64_t h, uint32_t comm,
				const uint32_t *frames, uint32_t n)
{
	size_t pos = hindex__start(&p->stack_index, h);
	uint32_t slot;

	while ((slot = hindex__next(&p->stack_index, &pos))) {
		struct stack *st = p->stacks[slot - 1];

		if (st->hash == h && st->comm == comm && st->nframes == n &&
		    !memcmp(st->frames, frames, n * sizeof(*frames)))
			return st;
	}
	return NULL;
}

static uint64_t stack_hash_of(const void *ctx, uint32_t i)
{
	const struct profile *p = ctx;

	return p->stacks[i]->hash;
}

static int stack_insert(struct profile *p, uint64_t h, uint32_t comm, const uint32_t *frames,
			uint32_t n, uint64_t value)
{
	struct stack *st;
	int err;

	err = hindex__reserve(&p->stack_index, PROFILE_INDEX_SLOTS, stack_hash_of, p);
	if (err)
		return err;
	if (p->nstacks == p->cap_stacks) {
		size_t cap = p->cap_stacks ? p->cap_stacks * 2 : 256;
		struct stack **stacks = reallocarray(p->stacks, cap, sizeof(*stacks));

		if (!stacks)
			return -ENOMEM;
		p->stacks = stacks;
		p->cap_stacks = cap;
	}
	st = malloc(sizeof(*st) + n * sizeof(st->frames[0]));
	if (!st)
		return -ENOMEM;
	st->value = value;
	st->hash = h;
	st->comm = comm;
	st->nframes = n;
	memcpy(st->frames, frames, n * sizeof(*frames));
	hindex__put(&p->stack_index, h, (uint32_t)p->nstacks);
	p->stacks[p->nstacks++] = st;
	return 0;
}

struct profile *profile__new(const char *sample_type, const char *unit, uint64_t period_ns)
{
	struct profile *p;
	uint32_t empty;
	int err;

	if (!sample_type || !unit) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->period_ns = period_ns;
	p->unit_is_count = !strcmp(unit, "count");
	err = strtab_intern(p, "", &empty);
	if (!err)
		err = strtab_intern(p, sample_type, &p->type_id);
	if (!err)
		err = strtab_intern(p, unit, &p->unit_id);
	if (!err)
		err = strtab_intern(p, "cpu", &p->cpu_id);
	if (!err)
		err = strtab_intern(p, "nanoseconds", &p->nanoseconds_id);
	if (!err)
		err = strtab_intern(p, "comm", &p->comm_key_id);
	if (!err)
		err = strtab_intern(p, "[rover]", &p->fake_file_id);
	if (err)
		goto cleanup;
	return p;

cleanup:
	profile__free(p);
	errno = -err;
	return NULL;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	for (size_t i = 0; i < p->nstacks; i++)
		free(p->stacks[i]);
	free(p->strs);
	hindex__free(&p->str_index);
	free(p->stacks);
	hindex__free(&p->stack_index);
	free(p->srcs);
	hindex__free(&p->src_index);
	free(p);
}

static uint64_t src_hash(uint32_t name)
{
	return hash_mix(0x5851f42d4c957f2dULL, name);
}

static uint64_t src_hash_of(const void *ctx, uint32_t i)
{
	const struct profile *p = ctx;

	return src_hash(p->srcs[i].name);
}

static const struct frame_src *src_find(const struct profile *p, uint32_t name)
{
	size_t pos = hindex__start(&p->src_index, src_hash(name));
	uint32_t slot;

	while ((slot = hindex__next(&p->src_index, &pos)))
		if (p->srcs[slot - 1].name == name)
			return &p->srcs[slot - 1];
	return NULL;
}

int profile__frame_source(struct profile *p, const char *name, const char *function,
			  const char *file, int64_t line)
{
	struct frame_src src = { .line = line };
	int err;

	if (!p || !name || !function)
		return -EINVAL;
	err = strtab_intern(p, name, &src.name);
	if (!err && src_find(p, src.name))
		return 0; /* the first stays */
	if (!err)
		err = strtab_intern(p, function, &src.function);
	if (!err && file)
		err = strtab_intern(p, file, &src.file);
	if (!err)
		err = hindex__reserve(&p->src_index, PROFILE_INDEX_SLOTS, src_hash_of, p);
	if (err)
		return err;
	if (p->nsrcs == p->cap_srcs) {
		size_t cap = p->cap_srcs ? p->cap_srcs * 2 : 256;
		struct frame_src *v = reallocarray(p->srcs, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->srcs = v;
		p->cap_srcs = cap;
	}
	hindex__put(&p->src_index, src_hash(src.name), (uint32_t)p->nsrcs);
	p->srcs[p->nsrcs++] = src;
	return 0;
}

int profile__add(struct profile *p, const char *comm, const char *const *frames, uint32_t nframes,
		 uint64_t value)
{
	uint32_t ids[1 + PROFILE_MAX_FRAMES];
	bool known = true;
	struct stack *st;
	uint64_t h;
	int err;

	if (!p || !comm || (nframes && !frames))
		return -EINVAL;
	if (nframes > PROFILE_MAX_FRAMES)
		return -E2BIG;
	for (uint32_t i = 0; i <= nframes; i++) {
		const char *s = i ? frames[i - 1] : comm;
		size_t len;

		if (!s)
			return -EINVAL;
		len = name_len(s);
		ids[i] = strtab_find(p, s, len, hash_bytes(s, len));
		known &= ids[i] != NO_ID;
	}
	if (known) {
		h = stack_hash(ids[0], ids + 1, nframes);
		st = stack_find(p, h, ids[0], ids + 1, nframes);
		if (st) {
			st->value = add_sat(st->value, value);
			p->total = add_sat(p->total, value);
			return 0;
		}
	}
	/* Checked before interning: a full profile does not grow its string table either. */
	if (p->nstacks >= PROFILE_MAX_STACKS)
		return -ENOSPC;
	for (uint32_t i = 0; i <= nframes; i++) {
		if (ids[i] != NO_ID)
			continue;
		err = strtab_intern(p, i ? frames[i - 1] : comm, &ids[i]);
		if (err)
			return err;
	}
	h = stack_hash(ids[0], ids + 1, nframes);
	/* A name can repeat within one stack (recursion): the first intern made it known. */
	st = stack_find(p, h, ids[0], ids + 1, nframes);
	if (st) {
		st->value = add_sat(st->value, value);
	} else {
		err = stack_insert(p, h, ids[0], ids + 1, nframes, value);
		if (err)
			return err;
	}
	p->total = add_sat(p->total, value);
	return 0;
}

int profile__add_comment(struct profile *p, const char *text)
{
	uint32_t id;
	int err;

	if (!p || !text)
		return -EINVAL;
	if (p->ncomments >= PROFILE_MAX_COMMENTS)
		return -ENOSPC;
	err = strtab_intern(p, text, &id);
	if (err)
		return err;
	p->comments[p->ncomments++] = id;
	return 0;
}

uint64_t profile__total(const struct profile *p)
{
	return p ? p->total : 0;
}

size_t profile__nstacks(const struct profile *p)
{
	return p ? p->nstacks : 0;
}

/* Part i of a stack's path: 0 is the comm, then the frames outermost first. */
static uint32_t stack_part(const struct stack *st, uint32_t i)
{
	return i ? st->frames[i - 1] : st->comm;
}

static struct stack **stacks_sorted(const struct profile *p,
				    int (*cmp)(const void *, const void *, void *))
{
	struct stack **v = malloc((p->nstacks ? p->nstacks : 1) * sizeof(*v));

	if (!v)
		return NULL;
	if (p->nstacks)
		memcpy(v, p->stacks, p->nstacks * sizeof(*v));
	qsort_r(v, p->nstacks, sizeof(*v), cmp, (void *)p);
	return v;
}

/* ---- folded ---- */

static int folded_byte(unsigned char c)
{
	return c == ';' || c == '\n' || c == '\r' ? '_' : c;
}

/* Walks the bytes of a stack's folded line, "comm;outer;...;inner", sanitised. */
struct folded_cursor {
	const struct profile *p;
	const struct stack *st;
	uint32_t part;
	const unsigned char *s;
};

static void folded_cursor_init(struct folded_cursor *c, const struct profile *p,
			       const struct stack *st)
{
	c->p = p;
	c->st = st;
	c->part = 0;
	c->s = (const unsigned char *)p->strs[st->comm];
}

static int folded_cursor_next(struct folded_cursor *c)
{
	if (*c->s)
		return folded_byte(*c->s++);
	if (c->part >= c->st->nframes)
		return -1;
	c->s = (const unsigned char *)c->p->strs[c->st->frames[c->part++]];
	return ';';
}

/* Byte order of the folded lines, as `LC_ALL=C sort` orders them. */
static int folded_cmp(const void *a, const void *b, void *ctx)
{
	struct folded_cursor x, y;
	int cx, cy;

	folded_cursor_init(&x, ctx, *(struct stack *const *)a);
	folded_cursor_init(&y, ctx, *(struct stack *const *)b);
	do {
		cx = folded_cursor_next(&x);
		cy = folded_cursor_next(&y);
	} while (cx == cy && cx >= 0);
	return cx < cy ? -1 : cx > cy;
}

/* How a stdio stream the writers filled fared: 0 or -errno once flushed. */
static int stream_error(FILE *f)
{
	if (fflush(f) == EOF)
		return -errno;
	return ferror(f) ? -EIO : 0;
}

int profile__write_folded(const struct profile *p, FILE *f)
{
	struct stack **v;
	int err = 0;

	if (!p || !f)
		return -EINVAL;
	v = stacks_sorted(p, folded_cmp);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->nstacks;) {
		uint64_t sum = v[i]->value;
		struct folded_cursor c;
		size_t j;
		int ch;

		/* Names that differ only in sanitised bytes make one line. */
		for (j = i + 1; j < p->nstacks && !folded_cmp(&v[i], &v[j], (void *)p); j++)
			sum = add_sat(sum, v[j]->value);
		folded_cursor_init(&c, p, v[i]);
		while ((ch = folded_cursor_next(&c)) >= 0)
			putc_unlocked(ch, f);
		fprintf(f, " %" PRIu64 "\n", sum);
		i = j;
	}
	err = stream_error(f);
	free(v);
	return err;
}

/* ---- pprof ---- */

/* A protobuf-c output buffer that gzips what it is given into f. */
struct gz_sink {
	ProtobufCBuffer base; /* first: the callback casts back */
	z_stream zs;
	FILE *f;
	int err;
	unsigned char out[64 * 1024];
};

static int gz_deflate(struct gz_sink *g, int flush)
{
	for (;;) {
		int zr = deflate(&g->zs, flush);

		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return -EIO;
		size_t pending = sizeof(g->out) - g->zs.avail_out;

		if (pending == sizeof(g->out) || (zr == Z_STREAM_END && pending)) {
			if (fwrite(g->out, 1, pending, g->f) != pending)
				return -EIO;
			g->zs.next_out = g->out;
			g->zs.avail_out = sizeof(g->out);
		}
		if (flush == Z_FINISH) {
			if (zr == Z_STREAM_END)
				return 0;
		} else if (g->zs.avail_in == 0) {
			return 0;
		}
	}
}

static void gz_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)buf;

	while (len && !g->err) {
		uInt n = len > UINT32_MAX ? UINT32_MAX : (uInt)len;

		g->zs.next_in = (Bytef *)data;
		g->zs.avail_in = n;
		g->err = gz_deflate(g, Z_NO_FLUSH);
		data += n;
		len -= n;
	}
}

static int64_t clamp_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/*
 * Writes the Profile as a sequence of Profile messages, one per sample, location or slice of
 * the string table: protobuf concatenation appends repeated fields, so the reader sees one
 * Profile while memory stays at one sample instead of the whole message.
 */
static int pprof_emit(const struct profile *p, struct gz_sink *g)
{
	Perftools__Profiles__Profile msg;
	Perftools__Profiles__ValueType stype = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType ptype = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType *stypes[] = { &stype };
	Perftools__Profiles__Sample sample;
	Perftools__Profiles__Sample *samples[] = { &sample };
	Perftools__Profiles__Label label = PERFTOOLS__PROFILES__LABEL__INIT;
	Perftools__Profiles__Label *labels[] = { &label };
	Perftools__Profiles__Location loc;
	Perftools__Profiles__Location *locs[] = { &loc };
	Perftools__Profiles__Line line;
	Perftools__Profiles__Line *lines[] = { &line };
	Perftools__Profiles__Function fn;
	Perftools__Profiles__Function *fns[] = { &fn };
	Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT;
	Perftools__Profiles__Mapping *maps[] = { &map };
	uint64_t loc_ids[PROFILE_MAX_FRAMES];
	uint32_t *loc_of = NULL, *fn_name = NULL, nfn = 0;
	struct timespec now;
	int64_t value;
	int err = 0;

	/* Location and function k (k >= 1) name string fn_name[k - 1]; loc_of maps back. */
	loc_of = calloc(p->nstrs, sizeof(*loc_of));
	fn_name = calloc(p->nstrs, sizeof(*fn_name));
	if (!loc_of || !fn_name) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct stack *st = p->stacks[i];

		for (uint32_t k = 0; k < st->nframes; k++) {
			if (!loc_of[st->frames[k]]) {
				fn_name[nfn] = st->frames[k];
				loc_of[st->frames[k]] = ++nfn;
			}
		}
	}

	perftools__profiles__profile__init(&msg);
	stype.type = p->type_id;
	stype.unit = p->unit_id;
	msg.n_sample_type = 1;
	msg.sample_type = stypes;
	if (p->period_ns) {
		ptype.type = p->cpu_id;
		ptype.unit = p->nanoseconds_id;
		msg.period_type = &ptype;
		msg.period = clamp_i64(p->period_ns);
	}
	/* One mapping that says the names are final: pprof then looks for no binary to symbolize. */
	msg.n_mapping = 1;
	msg.mapping = maps;
	map.id = 1;
	map.filename = p->fake_file_id;
	map.has_functions = true;
	msg.n_comment = p->ncomments;
	msg.comment = (int64_t *)p->comments;
	clock_gettime(CLOCK_REALTIME, &now);
	msg.time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	perftools__profiles__profile__pack_to_buffer(&msg, &g->base);

	label.key = p->comm_key_id;
	for (size_t i = 0; i < p->nstacks && !g->err; i++) {
		const struct stack *st = p->stacks[i];

		perftools__profiles__sample__init(&sample);
		for (uint32_t k = 0; k < st->nframes; k++)
			loc_ids[k] = loc_of[st->frames[st->nframes - 1 - k]];
		sample.n_location_id = st->nframes;
		sample.location_id = loc_ids;
		value = clamp_i64(st->value);
		sample.n_value = 1;
		sample.value = &value;
		label.str = st->comm;
		sample.n_label = 1;
		sample.label = labels;

		perftools__profiles__profile__init(&msg);
		msg.n_sample = 1;
		msg.sample = samples;
		perftools__profiles__profile__pack_to_buffer(&msg, &g->base);
	}

	for (uint32_t k = 1; k <= nfn && !g->err; k++) {
		const struct frame_src *src;

		perftools__profiles__location__init(&loc);
		loc.mapping_id = 1;
		perftools__profiles__line__init(&line);
		perftools__profiles__function__init(&fn);
		line.function_id = k;
		loc.id = k;
		loc.n_line = 1;
		loc.line = lines;
		fn.id = k;
		fn.name = fn_name[k - 1];
		fn.system_name = fn_name[k - 1];
		src = src_find(p, fn_name[k - 1]);
		if (src) {
			fn.name = src->function;
			fn.system_name = src->function;
			fn.filename = src->file;
			line.line = src->line;
		}

		perftools__profiles__profile__init(&msg);
		msg.n_location = 1;
		msg.location = locs;
		msg.n_function = 1;
		msg.function = fns;
		perftools__profiles__profile__pack_to_buffer(&msg, &g->base);
	}

	for (size_t i = 0; i < p->nstrs && !g->err; i += 1024) {
		perftools__profiles__profile__init(&msg);
		msg.n_string_table = p->nstrs - i < 1024 ? p->nstrs - i : 1024;
		msg.string_table = p->strs + i;
		perftools__profiles__profile__pack_to_buffer(&msg, &g->base);
	}
	err = g->err;

cleanup:
	free(loc_of);
	free(fn_name);
	return err;
}

int profile__write_pprof(const struct profile *p, FILE *f)
{
	struct gz_sink *g;
	int err;

	if (!p || !f)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->base.append = gz_append;
	g->f = f;
	/* windowBits 15 + 16: a gzip wrapper, which `go tool pprof` expects. */
	if (deflateInit2(&g->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	g->zs.next_out = g->out;
	g->zs.avail_out = sizeof(g->out);

	err = pprof_emit(p, g);
	if (!err)
		err = gz_deflate(g, Z_FINISH);
	if (!err && (fflush(f) || ferror(f)))
		err = -EIO;
	deflateEnd(&g->zs);
	free(g);
	return err;
}

/* ---- SVG flame graph ---- */

#define FG_WIDTH 1200
#define FG_XPAD 10
#define FG_FRAME_HEIGHT 16
#define FG_FONT_SIZE 12
#define FG_FONT_WIDTH 0.59 /* average glyph width per point of Verdana */
#define FG_YPAD_TOP (FG_FONT_SIZE * 3)
#define FG_YPAD_BOTTOM (FG_FONT_SIZE + 8)
/* Frames narrower than 1/FG_MIN_FRACTION of the total are left out, with their children. */
#define FG_MIN_FRACTION 1000

struct flamegraph {
	const struct profile *p;
	FILE *f;
	bool emit;
	uint32_t max_depth; /* of the frames wide enough to draw */
	uint32_t height;
};

static bool fg_visible(const struct flamegraph *fg, uint64_t value)
{
	return fg->p->total && (double)value * FG_MIN_FRACTION >= (double)fg->p->total;
}

static void fg_color(const char *name, unsigned rgb[3])
{
	size_t len = strlen(name);
	uint64_t h = hash_bytes(name, len);
	double v1 = (h & 0xffff) / 65535.0, v2 = (h >> 16 & 0xffff) / 65535.0,
	       v3 = (h >> 32 & 0xffff) / 65535.0;

	if (len >= 4 && !strcmp(name + len - 4, "_[k]")) {
		/* Kernel: blues, apart from the warm user-space palette. */
		rgb[0] = 50 + 60 * v1;
		rgb[1] = 130 + 70 * v2;
		rgb[2] = 200 + 55 * v3;
	} else {
		rgb[0] = 205 + 50 * v3;
		rgb[1] = 230 * v1;
		rgb[2] = 55 * v2;
	}
}

static void fg_frame(struct flamegraph *fg, const char *name, uint32_t depth, uint64_t start,
		     uint64_t value)
{
	const double inner = FG_WIDTH - 2 * FG_XPAD;
	const uint64_t total = fg->p->total;
	double x, w, y, pct;
	size_t fit, len;
	unsigned rgb[3];
	FILE *f = fg->f;

	if (depth && !fg_visible(fg, value))
		return;
	if (depth > fg->max_depth)
		fg->max_depth = depth;
	if (!fg->emit)
		return;

	x = FG_XPAD + (total ? (double)start / total * inner : 0);
	w = total ? (double)value / total * inner : inner;
	y = fg->height - FG_YPAD_BOTTOM - (depth + 1.0) * FG_FRAME_HEIGHT;
	pct = total ? 100.0 * value / total : 100.0;
	fg_color(name, rgb);

	fprintf(f, "<g class=\"f\" data-s=\"%" PRIu64 "\" data-v=\"%" PRIu64 "\" data-d=\"%u\">",
		start, value, depth);
	fputs("<title>", f);
	markup__put(f, name, SIZE_MAX);
	fprintf(f, " (%" PRIu64 " ", value);
	if (fg->p->unit_is_count)
		fputs("samples", f);
	else
		markup__put(f, fg->p->strs[fg->p->unit_id], SIZE_MAX);
	fprintf(f, ", %.2f%%)</title>", pct);
	fprintf(f,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
		"fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>",
		x, y, w, FG_FRAME_HEIGHT - 1, rgb[0], rgb[1], rgb[2]);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FG_FRAME_HEIGHT - 4.5);
	fit = w > 6 ? (size_t)((w - 6) / (FG_FONT_SIZE * FG_FONT_WIDTH)) : 0;
	if (fit >= 3) {
		len = markup__utf8_count(name);
		if (len <= fit) {
			markup__put(f, name, len);
		} else {
			markup__put(f, name, fit - 2);
			fputs("..", f);
		}
	}
	fputs("</text></g>\n", f);
}

/* Path order, part by part: a frame's callees are contiguous, and sorted by name. */
static int fg_cmp(const void *a, const void *b, void *ctx)
{
	const struct profile *p = ctx;
	const struct stack *x = *(struct stack *const *)a, *y = *(struct stack *const *)b;

	for (uint32_t i = 0; i <= x->nframes && i <= y->nframes; i++) {
		uint32_t u = stack_part(x, i), v = stack_part(y, i);

		if (u != v)
			return strcmp(p->strs[u], p->strs[v]);
	}
	return x->nframes < y->nframes ? -1 : x->nframes > y->nframes;
}

/*
 * Lays out the sorted stacks left to right: a frame spans the run of consecutive stacks that
 * share its path, so no tree is built. Called once to size the image, once to draw it.
 */
static void fg_sweep(struct flamegraph *fg, struct stack **v)
{
	uint64_t start[1 + PROFILE_MAX_FRAMES], x = 0;
	const struct stack *prev = NULL;
	uint32_t nopen = 0;

	for (size_t i = 0; i < fg->p->nstacks; i++) {
		const struct stack *st = v[i];
		uint32_t len = st->nframes + 1, common = 0;

		while (common < nopen && common < len &&
		       stack_part(prev, common) == stack_part(st, common))
			common++;
		while (nopen > common) {
			nopen--;
			fg_frame(fg, fg->p->strs[stack_part(prev, nopen)], nopen + 1, start[nopen],
				 x - start[nopen]);
		}
		for (; nopen < len; nopen++)
			start[nopen] = x;
		x += st->value;
		prev = st;
	}
	while (nopen > 0) {
		nopen--;
		fg_frame(fg, fg->p->strs[stack_part(prev, nopen)], nopen + 1, start[nopen],
			 x - start[nopen]);
	}
	fg_frame(fg, "all", 0, 0, fg->p->total);
}

/*
 * Click a frame to zoom to it, the root to zoom out. Labels are re-cut from the <title>, whose
 * text is "name (value ...)". The geometry is read from the <svg>'s data- attributes, so that
 * the text is the same in every file: the HTML page allows this script by its hash.
 */
#define FG_ZOOM_JS                                                                                  \
	"(function () {\n"                                                                          \
	"  var S = document.querySelector('svg[data-fg]');\n"                                       \
	"  var X = +S.getAttribute('data-x'), W = +S.getAttribute('data-w');\n"                     \
	"  var FW = +S.getAttribute('data-fw');\n"                                                  \
	"  function num(g, a) { return +g.getAttribute(a); }\n"                                     \
	"  function place(g, x, w) {\n"                                                             \
	"    var r = g.querySelector('rect'), t = g.querySelector('text');\n"                       \
	"    var s = g.querySelector('title').textContent, n = s.slice(0, s.lastIndexOf(' ('));\n"  \
	"    var c = Math.floor((w - 6) / FW);\n"                                                   \
	"    r.setAttribute('x', x.toFixed(1));\n"                                                  \
	"    r.setAttribute('width', w.toFixed(1));\n"                                              \
	"    t.setAttribute('x', (x + 3).toFixed(1));\n"                                            \
	"    t.textContent = c < 3 ? '' : n.length <= c ? n : n.slice(0, c - 2) + '..';\n"          \
	"  }\n"                                                                                     \
	"  function zoom(z) {\n"                                                                    \
	"    var zs = num(z, 'data-s'), zv = num(z, 'data-v'), zd = num(z, 'data-d');\n"            \
	"    if (!(zv > 0)) return;\n"                                                              \
	"    var all = S.querySelectorAll('g.f');\n"                                                \
	"    for (var i = 0; i < all.length; i++) {\n"                                              \
	"      var g = all[i], s = num(g, 'data-s'), v = num(g, 'data-v'), d = num(g, 'data-d');\n" \
	"      if (d < zd && s <= zs && s + v >= zs + zv) {\n"                                      \
	"        g.style.display = ''; g.style.opacity = '0.6'; place(g, X, W);\n"                  \
	"      } else if (d >= zd && s >= zs && s + v <= zs + zv) {\n"                              \
	"        g.style.display = ''; g.style.opacity = '';\n"                                     \
	"        place(g, X + (s - zs) / zv * W, v / zv * W);\n"                                    \
	"      } else {\n"                                                                          \
	"        g.style.display = 'none';\n"                                                       \
	"      }\n"                                                                                 \
	"    }\n"                                                                                   \
	"  }\n"                                                                                     \
	"  S.addEventListener('click', function (e) {\n"                                            \
	"    var g = e.target.closest ? e.target.closest('g.f') : null;\n"                          \
	"    if (g) zoom(g);\n"                                                                     \
	"  });\n"                                                                                   \
	"})();\n"

static const char fg_script[] = "<script type=\"text/ecmascript\"><![CDATA[\n" FG_ZOOM_JS
				"]]></script>\n";

/*
 * The page's search: frames whose name matches (a regular expression, else the text as it is)
 * turn magenta, the share of the total they cover is shown (nested matches counted once), and
 * the table keeps only the matching functions. The box is hidden until this runs: without
 * JavaScript the page shows the graph and the table, and nothing that does not work.
 */
#define FG_SEARCH_JS                                                                                     \
	"(function () {\n"                                                                               \
	"  var S = document.querySelector('svg[data-fg]'), total = +S.getAttribute('data-total');\n"     \
	"  var frames = S.querySelectorAll('g.f'), rows = document.querySelectorAll('#top tbody tr');\n" \
	"  var q = document.getElementById('q'), found = document.getElementById('found');\n"            \
	"  function nameOf(g) {\n"                                                                       \
	"    var s = g.querySelector('title').textContent;\n"                                            \
	"    return s.slice(0, s.lastIndexOf(' ('));\n"                                                  \
	"  }\n"                                                                                          \
	"  function matcher(s) {\n"                                                                      \
	"    if (!s) return null;\n"                                                                     \
	"    try { var re = new RegExp(s); return function (n) { return re.test(n); }; }\n"              \
	"    catch (e) { return function (n) { return n.indexOf(s) >= 0; }; }\n"                         \
	"  }\n"                                                                                          \
	"  function search() {\n"                                                                        \
	"    var m = matcher(q.value), hits = [], sum = 0, end = -1, i;\n"                               \
	"    for (i = 0; i < frames.length; i++) {\n"                                                    \
	"      var g = frames[i], r = g.querySelector('rect');\n"                                        \
	"      var on = !!m && +g.getAttribute('data-d') > 0 && m(nameOf(g));\n"                         \
	"      if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n" \
	"      r.setAttribute('fill', on ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"           \
	"      if (on) hits.push([+g.getAttribute('data-s'), +g.getAttribute('data-v')]);\n"             \
	"    }\n"                                                                                        \
	"    hits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"                       \
	"    for (i = 0; i < hits.length; i++)\n"                                                        \
	"      if (hits[i][0] >= end) { sum += hits[i][1]; end = hits[i][0] + hits[i][1]; }\n"           \
	"    found.textContent = !m ? '' : 'matched: ' + sum + ' of ' + total + ' (' +\n"                \
	"      (total ? (100 * sum / total).toFixed(2) : '0.00') + '%) in the frames drawn';\n"          \
	"    for (i = 0; i < rows.length; i++)\n"                                                        \
	"      rows[i].hidden = !!m && !m(rows[i].getAttribute('data-name'));\n"                         \
	"  }\n"                                                                                          \
	"  q.addEventListener('input', search);\n"                                                       \
	"  document.getElementById('search').hidden = false;\n"                                          \
	"})();\n"

/*
 * The page's one script, and its hash in the page's Content-Security-Policy: the browser runs
 * no other script (a name that got past the escaping would still not run) and fetches nothing.
 * The hash is of these bytes (tests/unit/test_profile.c checks it): change both together.
 */
static const char fg_page_js[] = FG_ZOOM_JS FG_SEARCH_JS;
#define FG_PAGE_JS_SHA256 "sha256-MLNzpLEDrUIk89+wOXGN4Gl1ZChqGuzQ1B4Fm+z6zMA="

/*
 * The flame graph's <svg>: standalone (an XML document with its own zoom script) or inline in
 * the HTML page, whose script does the zooming and the search.
 */
static int fg_write(const struct profile *p, FILE *f, const char *title, bool inline_svg)
{
	struct flamegraph fg = { .p = p, .f = f };
	struct stack **v;

	v = stacks_sorted(p, fg_cmp);
	if (!v)
		return -ENOMEM;

	fg_sweep(&fg, v);
	fg.height = FG_YPAD_TOP + (fg.max_depth + 1) * FG_FRAME_HEIGHT + FG_YPAD_BOTTOM;
	fg.emit = true;

	if (!inline_svg)
		fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%u\" viewBox=\"0 0 %d %u\" data-fg=\"\" data-x=\"%d\" data-w=\"%d\" "
		"data-fw=\"%.2f\" data-total=\"%" PRIu64 "\">\n",
		FG_WIDTH, fg.height, FG_WIDTH, fg.height, FG_XPAD, FG_WIDTH - 2 * FG_XPAD,
		FG_FONT_SIZE * FG_FONT_WIDTH, p->total);
	fprintf(f,
		"<style>text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; } "
		"g.f text { pointer-events: none; } "
		"g.f:hover rect { stroke: #000; stroke-width: 0.5; } "
		".title { font-size: %dpx; text-anchor: middle; }</style>\n",
		FG_FONT_SIZE, FG_FONT_SIZE + 5);
	if (!inline_svg)
		fputs(fg_script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%u\" fill=\"#f8f8f0\"/>\n",
		FG_WIDTH, fg.height);
	fprintf(f, "<text class=\"title\" x=\"%d\" y=\"%d\">", FG_WIDTH / 2, FG_FONT_SIZE * 2);
	markup__put(f, title ? title : "Flame Graph", SIZE_MAX);
	fputs("</text>\n", f);
	if (p->ncomments) {
		fputs("<desc>", f);
		for (size_t i = 0; i < p->ncomments; i++) {
			markup__put(f, p->strs[p->comments[i]], SIZE_MAX);
			fputs("\n", f);
		}
		fputs("</desc>\n", f);
	}
	fg_sweep(&fg, v);
	fputs("</svg>\n", f);
	free(v);
	return 0;
}

int profile__write_svg(const struct profile *p, FILE *f, const char *title)
{
	int err;

	if (!p || !f)
		return -EINVAL;
	err = fg_write(p, f, title, false);
	return err ? err : stream_error(f);
}

/* ---- functions by self and total value ---- */

struct fn_value {
	uint64_t self, total;
	const char *name;
};

static int fn_cmp(const void *a, const void *b)
{
	const struct fn_value *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Every function's self value (stacks it ends) and total (stacks it is in, once per stack
 * however often it recurses), sorted by self, then total, then name: *ret_v (malloc'd), *ret_n.
 * A stack without frames counts for its command. 0 or -ENOMEM.
 */
static int fn_values(const struct profile *p, struct fn_value **ret_v, size_t *ret_n)
{
	struct fn_value *all = calloc(p->nstrs ? p->nstrs : 1, sizeof(*all)), *v = NULL;
	size_t *seen = calloc(p->nstrs ? p->nstrs : 1, sizeof(*seen)), n = 0;
	int err = 0;

	if (!all || !seen) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct stack *st = p->stacks[i];
		uint32_t first = st->nframes ? 1 : 0;

		all[stack_part(st, st->nframes)].self =
			add_sat(all[stack_part(st, st->nframes)].self, st->value);
		for (uint32_t k = first; k <= st->nframes; k++) {
			uint32_t id = stack_part(st, k);

			/* seen holds the last stack (+1) that counted id: recursion counts once. */
			if (seen[id] == i + 1)
				continue;
			seen[id] = i + 1;
			all[id].total = add_sat(all[id].total, st->value);
		}
	}
	v = malloc((p->nstrs ? p->nstrs : 1) * sizeof(*v));
	if (!v) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t id = 0; id < p->nstrs; id++)
		if (all[id].total)
			v[n++] = (struct fn_value){ all[id].self, all[id].total, p->strs[id] };
	qsort(v, n, sizeof(*v), fn_cmp);
	*ret_v = v;
	*ret_n = n;
	v = NULL;
cleanup:
	free(all);
	free(seen);
	free(v);
	return err;
}

/* ---- HTML page ---- */

/* Rows of the page's table of functions: the rest are counted under it. */
#define FG_TOP_ROWS 100

static const char fg_page_css[] =
	"body { font-family: sans-serif; margin: 1em 2em; color: #222; }\n"
	"h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }\n"
	"ul.about { color: #444; font-size: 0.9em; }\n"
	"#search { margin: 0.5em 0; } #q { width: 24em; } #found { margin-left: 1em; }\n"
	"#graph { overflow-x: auto; }\n"
	"table { border-collapse: collapse; font-size: 0.9em; }\n"
	"th, td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right; }\n"
	"th:first-child, td:first-child { text-align: left; font-family: monospace; "
	"max-width: 60em; overflow-wrap: anywhere; }\n";

static void fg_cell(FILE *f, uint64_t v, uint64_t total)
{
	fprintf(f, "<td>%" PRIu64 "</td><td>%.2f%%</td>", v, total ? 100.0 * v / total : 0.0);
}

int profile__write_html(const struct profile *p, FILE *f, const char *title)
{
	const char *unit;
	struct fn_value *v = NULL;
	size_t n = 0;
	int err;

	if (!p || !f)
		return -EINVAL;
	if (!title)
		title = "Flame Graph";
	unit = p->unit_is_count ? "samples" : p->strs[p->unit_id];
	err = fn_values(p, &v, &n);
	if (err)
		return err;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
	fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src '" FG_PAGE_JS_SHA256 "'; base-uri 'none'; "
	      "form-action 'none'\">\n",
	      f);
	fputs("<title>", f);
	markup__put(f, title, SIZE_MAX);
	fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", fg_page_css);
	markup__put(f, title, SIZE_MAX);
	fputs("</h1>\n<ul class=\"about\">\n", f);
	for (size_t i = 0; i < p->ncomments; i++) {
		fputs("<li>", f);
		markup__put(f, p->strs[p->comments[i]], SIZE_MAX);
		fputs("</li>\n", f);
	}
	fprintf(f, "<li>%" PRIu64 " ", p->total);
	markup__put(f, unit, SIZE_MAX);
	fprintf(f,
		" in %zu distinct stacks, %zu functions; frames narrower than 1/%d of the "
		"total are not drawn (the table has them)</li>\n</ul>\n",
		p->nstacks, n, FG_MIN_FRACTION);
	fputs("<div id=\"search\" hidden><label>Search functions (a regular expression) "
	      "<input id=\"q\" type=\"search\" autocomplete=\"off\"></label><span id=\"found\">"
	      "</span></div>\n<div id=\"graph\">\n",
	      f);
	err = fg_write(p, f, title, true);
	if (err)
		goto cleanup;
	fprintf(f, "</div>\n<h2>Top functions</h2>\n<p>By self value (the stacks a function "
		   "ends), then total (the stacks it is in, once per stack), in ");
	markup__put(f, unit, SIZE_MAX);
	fputs(".</p>\n<table id=\"top\">\n<thead><tr><th>function</th><th>self</th><th>self %</th>"
	      "<th>total</th><th>total %</th></tr></thead>\n<tbody>\n",
	      f);
	for (size_t i = 0; i < n && i < FG_TOP_ROWS; i++) {
		fputs("<tr data-name=\"", f);
		markup__put(f, v[i].name, SIZE_MAX);
		fputs("\"><td>", f);
		markup__put(f, v[i].name, SIZE_MAX);
		fputs("</td>", f);
		fg_cell(f, v[i].self, p->total);
		fg_cell(f, v[i].total, p->total);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
	if (n > FG_TOP_ROWS)
		fprintf(f, "<p>%zu more functions below these.</p>\n", n - FG_TOP_ROWS);
	fprintf(f, "<script>%s</script>\n</body>\n</html>\n", fg_page_js);
	err = stream_error(f);
cleanup:
	free(v);
	return err;
}


/* ---- top ---- */

struct top_entry {
	uint64_t value;
	const char *name;
};

static int top_cmp(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return strcmp(x->name, y->name);
}

void profile__top(const struct profile *p, unsigned n, char *buf, size_t len)
{
	struct top_entry *v = NULL;
	uint64_t *self = NULL;
	size_t nv = 0, used = 0;

	if (!buf || !len)
		return;
	buf[0] = '\0';
	if (!p || !n)
		return;
	self = calloc(p->nstrs, sizeof(*self));
	v = calloc(p->nstrs, sizeof(*v));
	if (!self || !v)
		goto cleanup;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct stack *st = p->stacks[i];
		uint32_t leaf = stack_part(st, st->nframes);

		self[leaf] = add_sat(self[leaf], st->value);
	}
	for (size_t id = 0; id < p->nstrs; id++) {
		if (self[id])
			v[nv++] = (struct top_entry){ self[id], p->strs[id] };
	}
	qsort(v, nv, sizeof(*v), top_cmp);

	/* Whole lines only; names go to terminals, so control characters become '?'. */
	for (size_t i = 0; i < nv && i < n; i++) {
		double pct = p->total ? 100.0 * v[i].value / p->total : 0.0;
		size_t nlen = strlen(v[i].name);
		char head[32];
		int hlen = snprintf(head, sizeof(head), "%6.1f%%  ", pct);

		if (hlen < 0 || used + hlen + nlen + 2 > len)
			break;
		memcpy(buf + used, head, hlen);
		used += hlen;
		for (size_t k = 0; k < nlen; k++) {
			unsigned char c = v[i].name[k];

			buf[used++] = c < 0x20 || c == 0x7f ? '?' : c;
		}
		buf[used++] = '\n';
		buf[used] = '\0';
	}

cleanup:
	free(self);
	free(v);
}

/* ---- the writers by format ---- */

static int write_folded(const struct profile *p, FILE *f, const char *title)
{
	(void)title;
	return profile__write_folded(p, f);
}

static int write_pprof(const struct profile *p, FILE *f, const char *title)
{
	(void)title;
	return profile__write_pprof(p, f);
}

static const struct {
	uint32_t format;
	int (*write)(const struct profile *p, FILE *f, const char *title);
} writers[] = {
	{ FORMAT_FOLDED, write_folded },
	{ FORMAT_PPROF, write_pprof },
	{ FORMAT_SVG, profile__write_svg },
	{ FORMAT_HTML, profile__write_html },
};

int profile__write(const struct profile *p, uint32_t format, FILE *f, const char *title)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (writers[i].format == format)
			return writers[i].write(p, f, title);
	return -EINVAL;
}
