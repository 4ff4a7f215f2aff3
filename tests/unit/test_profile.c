// SPDX-License-Identifier: Apache-2.0
/* shipper/output/profile.c: merging, limits, and the folded, pprof, SVG and top outputs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r, open_memstream */
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "proto/pprof/profile.pb-c.h"
#include "common/msg.h"
#include "shipper/output/profile.h"

#define ADD(p, comm, value, ...)                                                                  \
	do {                                                                                      \
		const char *fr_[] = { __VA_ARGS__ };                                              \
		cr_assert_eq(profile__add(p, comm, fr_, sizeof(fr_) / sizeof(fr_[0]), value), 0); \
	} while (0)

/* Runs a writer on a memory stream and returns what it wrote (caller frees). */
static char *capture_folded(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(profile__write_folded(p, f), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

static char *capture_svg(const struct profile *p, const char *title)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(profile__write_svg(p, f, title), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

Test(profile, merge_and_counts)
{
	struct profile *p = profile__new("samples", "count", 0);

	cr_assert_not_null(p);
	ADD(p, "app", 2, "main", "foo");
	ADD(p, "app", 3, "main", "foo");
	ADD(p, "other", 1, "main", "foo");
	ADD(p, "app", 4, "main");
	cr_assert_eq(profile__nstacks(p), 3);
	cr_assert_eq(profile__total(p), 10);
	cr_assert_eq(profile__add(p, "app", NULL, 0, 5), 0);
	cr_assert_eq(profile__nstacks(p), 4);
	cr_assert_eq(profile__add(NULL, "app", NULL, 0, 1), -EINVAL);
	cr_assert_eq(profile__add(p, NULL, NULL, 0, 1), -EINVAL);
	cr_assert_eq(profile__add(p, "app", NULL, 1, 1), -EINVAL);
	profile__free(p);
	profile__free(NULL);
	errno = 0;
	cr_assert_null(profile__new(NULL, "count", 0));
	cr_assert_eq(errno, EINVAL);
}

Test(profile, folded_exact)
{
	struct profile *p = profile__new("samples", "count", 0);
	char *out;

	cr_assert_not_null(p);
	ADD(p, "app", 2, "main", "foo", "bar");
	ADD(p, "sh", 4, "start_[k]");
	ADD(p, "app", 3, "main", "foo", "bar");
	ADD(p, "app", 1, "main", "a;b");
	ADD(p, "app", 2, "main", "a_b"); /* same line as "a;b" once sanitised */
	ADD(p, "app", 7, "main");
	ADD(p, "my;app\n", 1, "operator new(unsigned long)");
	out = capture_folded(p);
	cr_assert_str_eq(out, "app;main 7\n"
			      "app;main;a_b 3\n"
			      "app;main;foo;bar 5\n"
			      "my_app_;operator new(unsigned long) 1\n"
			      "sh;start_[k] 4\n");
	free(out);
	profile__free(p);
}

Test(profile, folded_empty)
{
	struct profile *p = profile__new("samples", "count", 0);
	char *out = capture_folded(p);

	cr_assert_str_eq(out, "");
	free(out);
	profile__free(p);
}

Test(profile, limits)
{
	struct profile *p = profile__new("samples", "count", 0);
	/* 127 native, 128 Python and 127 kernel frames fit (512). */
	const char *frames[513];
	char *long_a = malloc(10001), *long_b = malloc(10001), *out;

	cr_assert_not_null(p);
	for (int i = 0; i < 513; i++)
		frames[i] = i % 2 ? "odd" : "even";
	cr_assert_eq(profile__add(p, "app", frames, 513, 1), -E2BIG);
	cr_assert_eq(profile__nstacks(p), 0);
	cr_assert_eq(profile__add(p, "app", frames, 512, 1), 0);
	cr_assert_eq(profile__nstacks(p), 1);

	/* Names are cut at 4096 bytes: two that differ later merge. */
	memset(long_a, 'x', 10000);
	long_a[10000] = '\0';
	memcpy(long_b, long_a, 10001);
	long_b[9000] = 'y';
	profile__free(p);
	p = profile__new("samples", "count", 0);
	cr_assert_eq(profile__add(p, "app", (const char *const *)&long_a, 1, 1), 0);
	cr_assert_eq(profile__add(p, "app", (const char *const *)&long_b, 1, 1), 0);
	cr_assert_eq(profile__nstacks(p), 1);
	out = capture_folded(p);
	cr_assert_eq(strlen(out), strlen("app;") + 4096 + strlen(" 2\n"));
	free(out);
	free(long_a);
	free(long_b);
	profile__free(p);
}

Test(profile, max_stacks, .timeout = 60)
{
	struct profile *p = profile__new("samples", "count", 0);
	char names[1000][16];

	cr_assert_not_null(p);
	for (int i = 0; i < 1000; i++)
		snprintf(names[i], sizeof(names[i]), "f%d", i);
	for (int i = 0; i < 1000; i++) {
		for (int j = 0; j < 1000; j++) {
			const char *fr[] = { names[i], names[j] };

			if (profile__add(p, "app", fr, 2, 1))
				cr_assert_fail("add %d/%d failed", i, j);
		}
	}
	cr_assert_eq(profile__nstacks(p), 1000000);
	{
		const char *fresh[] = { "new" };
		const char *known[] = { names[3], names[4] };

		cr_assert_eq(profile__add(p, "app", fresh, 1, 1), -ENOSPC);
		cr_assert_eq(profile__add(p, "app", known, 2, 1), 0);
	}
	cr_assert_eq(profile__total(p), 1000001);
	profile__free(p);
}

/* The pprof writer into fd, as the shipper's FILE would take it. 0 or -errno. */
static int write_pprof_fd(const struct profile *p, int fd)
{
	FILE *f = fdopen(dup(fd), "w");
	int err;

	if (!f)
		return -errno;
	err = profile__write_pprof(p, f);
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* Reads fd from the start, gunzips it and unpacks the Profile. */
static Perftools__Profiles__Profile *read_pprof(int fd)
{
	size_t zlen = 0, zcap = 1 << 16, len = 0, cap = 1 << 16;
	unsigned char *z = malloc(zcap), *raw = malloc(cap);
	Perftools__Profiles__Profile *prof;
	z_stream zs = { 0 };
	ssize_t n;
	int zr;

	cr_assert(z && raw);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	while ((n = read(fd, z + zlen, zcap - zlen)) > 0) {
		zlen += n;
		if (zlen == zcap)
			z = realloc(z, zcap *= 2);
	}
	cr_assert_eq(n, 0);
	cr_assert(zlen > 2 && z[0] == 0x1f && z[1] == 0x8b, "not gzip");
	cr_assert_eq(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = z;
	zs.avail_in = zlen;
	do {
		if (len == cap)
			raw = realloc(raw, cap *= 2);
		zs.next_out = raw + len;
		zs.avail_out = cap - len;
		zr = inflate(&zs, Z_NO_FLUSH);
		len = cap - zs.avail_out;
		cr_assert(zr == Z_OK || zr == Z_STREAM_END, "inflate: %d", zr);
	} while (zr != Z_STREAM_END);
	inflateEnd(&zs);
	prof = perftools__profiles__profile__unpack(NULL, len, raw);
	cr_assert_not_null(prof, "unpack failed");
	free(z);
	free(raw);
	return prof;
}

static const char *str_at(const Perftools__Profiles__Profile *prof, int64_t i)
{
	cr_assert(i >= 0 && (size_t)i < prof->n_string_table, "string index %ld", (long)i);
	return prof->string_table[i];
}

static const Perftools__Profiles__Function *function_by_id(const Perftools__Profiles__Profile *prof,
							   uint64_t id)
{
	for (size_t i = 0; i < prof->n_function; i++)
		if (prof->function[i]->id == id)
			return prof->function[i];
	cr_assert_fail("no function %lu", (unsigned long)id);
	return NULL;
}

static const char *location_name(const Perftools__Profiles__Profile *prof, uint64_t id)
{
	for (size_t i = 0; i < prof->n_location; i++) {
		const Perftools__Profiles__Location *l = prof->location[i];

		if (l->id == id) {
			cr_assert_eq(l->n_line, 1);
			return str_at(prof, function_by_id(prof, l->line[0]->function_id)->name);
		}
	}
	cr_assert_fail("no location %lu", (unsigned long)id);
	return NULL;
}

static int temp_fd(void)
{
	char path[] = "/tmp/rover-profile-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);

	cr_assert(fd >= 0);
	unlink(path);
	return fd;
}

Test(profile, pprof)
{
	struct profile *p = profile__new("samples", "count", 10000000);
	Perftools__Profiles__Profile *prof;
	int64_t sum = 0;
	bool seen_app = false;
	int fd = temp_fd();

	cr_assert_not_null(p);
	ADD(p, "app", 5, "main", "foo", "bar");
	ADD(p, "app", 2, "main", "foo");
	ADD(p, "worker", 3, "start_thread", "foo", "sys_read_[k]");
	ADD(p, "app", 1, "main", "foo", "bar");
	cr_assert_eq(write_pprof_fd(p, fd), 0);
	prof = read_pprof(fd);

	cr_assert(prof->n_string_table > 0);
	cr_assert_str_eq(prof->string_table[0], "");
	cr_assert_eq(prof->n_sample_type, 1);
	cr_assert_str_eq(str_at(prof, prof->sample_type[0]->type), "samples");
	cr_assert_str_eq(str_at(prof, prof->sample_type[0]->unit), "count");
	cr_assert_not_null(prof->period_type);
	cr_assert_str_eq(str_at(prof, prof->period_type->type), "cpu");
	cr_assert_str_eq(str_at(prof, prof->period_type->unit), "nanoseconds");
	cr_assert_eq(prof->period, 10000000);
	cr_assert(prof->time_nanos > 1600000000LL * 1000000000LL);

	/*
	 * One function and one location per distinct frame name, ids unique and non-zero, all in
	 * one mapping that says the names are final (pprof then looks for no binary).
	 */
	cr_assert_eq(prof->n_mapping, 1);
	cr_assert_eq(prof->mapping[0]->id, 1);
	cr_assert(prof->mapping[0]->has_functions);
	cr_assert_eq(prof->n_function, 5);
	cr_assert_eq(prof->n_location, 5);
	for (size_t i = 0; i < prof->n_location; i++) {
		cr_assert_neq(prof->location[i]->id, 0);
		cr_assert_eq(prof->location[i]->mapping_id, 1);
		for (size_t j = 0; j < i; j++)
			cr_assert_neq(prof->location[i]->id, prof->location[j]->id);
	}

	cr_assert_eq(prof->n_sample, 3);
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Sample *s = prof->sample[i];
		const char *comm;

		cr_assert_eq(s->n_value, 1);
		sum += s->value[0];
		cr_assert_eq(s->n_label, 1);
		cr_assert_str_eq(str_at(prof, s->label[0]->key), "comm");
		comm = str_at(prof, s->label[0]->str);
		if (!strcmp(comm, "app") && s->n_location_id == 3) {
			seen_app = true;
			cr_assert_eq(s->value[0], 6);
			cr_assert_str_eq(location_name(prof, s->location_id[0]), "bar");
			cr_assert_str_eq(location_name(prof, s->location_id[1]), "foo");
			cr_assert_str_eq(location_name(prof, s->location_id[2]), "main");
		} else if (!strcmp(comm, "worker")) {
			cr_assert_eq(s->n_location_id, 3);
			cr_assert_str_eq(location_name(prof, s->location_id[0]), "sys_read_[k]");
			cr_assert_str_eq(location_name(prof, s->location_id[2]), "start_thread");
		}
	}
	cr_assert(seen_app);
	cr_assert_eq(sum, 11);
	cr_assert_eq((uint64_t)sum, profile__total(p));

	perftools__profiles__profile__free_unpacked(prof, NULL);
	close(fd);
	profile__free(p);
}

/* A Python frame: pprof gets its function, file and line; folded shows the name. */
Test(profile, pprof_frames_with_a_source_position)
{
	struct profile *p = profile__new("samples", "count", 0);
	const char *frames[] = { "main", "work (app.py:12)", "leaf" };
	Perftools__Profiles__Profile *prof;
	int fd = temp_fd(), seen = 0;
	char *out;

	cr_assert_eq(profile__frame_source(p, frames[1], "work", "/srv/app.py", 12), 0);
	/* The first holds. */
	cr_assert_eq(profile__frame_source(p, frames[1], "other", "/x.py", 3), 0);
	cr_assert_eq(profile__add(p, "app", frames, 3, 5), 0);
	out = capture_folded(p);
	cr_assert_str_eq(out, "app;main;work (app.py:12);leaf 5\n");
	free(out);
	cr_assert_eq(write_pprof_fd(p, fd), 0);
	prof = read_pprof(fd);
	for (size_t i = 0; i < prof->n_location; i++) {
		const Perftools__Profiles__Location *l = prof->location[i];
		const Perftools__Profiles__Function *fn =
			function_by_id(prof, l->line[0]->function_id);

		if (strcmp(str_at(prof, fn->name), "work"))
			continue;
		seen++;
		cr_assert_str_eq(str_at(prof, fn->filename), "/srv/app.py");
		cr_assert_eq(l->line[0]->line, 12);
	}
	cr_assert_eq(seen, 1);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	close(fd);
	profile__free(p);
}

Test(profile, pprof_no_period)
{
	struct profile *p = profile__new("off_cpu", "microseconds", 0);
	Perftools__Profiles__Profile *prof;
	int fd = temp_fd();

	ADD(p, "app", 1500, "main", "poll");
	cr_assert_eq(write_pprof_fd(p, fd), 0);
	prof = read_pprof(fd);
	cr_assert_null(prof->period_type);
	cr_assert_eq(prof->period, 0);
	cr_assert_str_eq(str_at(prof, prof->sample_type[0]->type), "off_cpu");
	cr_assert_str_eq(str_at(prof, prof->sample_type[0]->unit), "microseconds");
	cr_assert_eq(prof->n_sample, 1);
	cr_assert_eq(prof->sample[0]->value[0], 1500);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	close(fd);
	profile__free(p);

	cr_assert_eq(profile__write_pprof(NULL, stdout), -EINVAL);
}

/* Losses travel inside the file: pprof comments, SVG <desc>. */
Test(profile, comments_carry_losses)
{
	struct profile *p = profile__new("samples", "count", 9000000);
	Perftools__Profiles__Profile *prof;
	int fd = temp_fd();
	char *svg;
	size_t len;
	FILE *f;

	ADD(p, "app", 10, "main", "work");
	cr_assert_eq(profile__add_comment(p, "rover ON_CPU profile, task 1"), 0);
	cr_assert_eq(profile__add_comment(p, "lost: 3 stack map full"), 0);
	cr_assert_eq(write_pprof_fd(p, fd), 0);
	prof = read_pprof(fd);
	cr_assert_eq(prof->n_comment, 2);
	cr_assert_str_eq(str_at(prof, prof->comment[0]), "rover ON_CPU profile, task 1");
	cr_assert_str_eq(str_at(prof, prof->comment[1]), "lost: 3 stack map full");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	close(fd);

	f = open_memstream(&svg, &len);
	cr_assert_eq(profile__write_svg(p, f, "t"), 0);
	fclose(f);
	cr_assert(strstr(svg,
			 "<desc>rover ON_CPU profile, task 1\nlost: 3 stack map full\n</desc>"),
		  "%s", svg);
	free(svg);

	for (int i = 2; i < 16; i++)
		cr_assert_eq(profile__add_comment(p, "x"), 0);
	cr_assert_eq(profile__add_comment(p, "one too many"), -ENOSPC);
	profile__free(p);
}

/* Each profile format through the one entry point; the reports' are not a profile's. */
Test(profile, written_by_format)
{
	struct profile *p = profile__new("samples", "count", 0);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ADD(p, "app", 3, "main", "work");
	cr_assert_eq(profile__write(p, FORMAT_FOLDED, f, "t"), 0);
	fflush(f);
	cr_assert_str_eq(out, "app;main;work 3\n");
	cr_assert_eq(profile__write(p, FORMAT_SVG, f, "a title"), 0);
	fflush(f);
	cr_assert_not_null(strstr(out, "a title"));
	cr_assert_eq(profile__write(p, FORMAT_NET_JSON, f, "t"), -EINVAL);
	cr_assert_eq(profile__write(p, 0, f, "t"), -EINVAL);
	fclose(f);
	free(out);
	profile__free(p);
}

Test(profile, pprof_write_error)
{
	struct profile *p = profile__new("samples", "count", 0);
	/* Every write fails there (ENOSPC): said, not lost in the FILE's buffer. */
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

	cr_assert(fd >= 0);
	ADD(p, "app", 1, "main");
	cr_assert_eq(write_pprof_fd(p, fd), -EIO);
	close(fd);
	profile__free(p);
}

/*
 * A well-formedness check sufficient for what the writer emits: balanced tags, quoted
 * attributes, no raw '<' or '&' in text or attribute values, CDATA and the declaration skipped.
 */
static bool entity_ok(const char *s)
{
	static const char *const ents[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };

	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		if (!strncmp(s, ents[i], strlen(ents[i])))
			return true;
	return s[1] == '#' && strchr(s, ';');
}

static void check_xml(const char *s)
{
	const char *stack[64];
	size_t depth = 0, namelen;
	bool root_seen = false;

	while (*s) {
		if (!strncmp(s, "<?", 2)) {
			s = strstr(s, "?>");
			cr_assert_not_null(s);
			s += 2;
		} else if (!strncmp(s, "<![CDATA[", 9)) {
			cr_assert(depth > 0);
			s = strstr(s, "]]>");
			cr_assert_not_null(s);
			s += 3;
		} else if (!strncmp(s, "</", 2)) {
			s += 2;
			namelen = strcspn(s, " >");
			cr_assert(depth > 0, "close tag without open");
			depth--;
			cr_assert(!strncmp(stack[depth], s, namelen) && stack[depth][namelen] &&
					  strchr(" >/\n", stack[depth][namelen]),
				  "mismatched </%.*s>", (int)namelen, s);
			s += namelen;
			cr_assert_eq(*s, '>');
			s++;
		} else if (*s == '<') {
			const char *name = ++s;

			namelen = strcspn(s, " />\n");
			cr_assert(namelen > 0);
			if (depth == 0) {
				cr_assert(!root_seen, "two root elements");
				root_seen = true;
			}
			s += namelen;
			for (;;) {
				while (*s == ' ' || *s == '\n')
					s++;
				if (*s == '>' || !strncmp(s, "/>", 2))
					break;
				/* name="value" */
				while (*s && *s != '=' && *s != '>')
					s++;
				cr_assert(s[0] == '=' && s[1] == '"', "unquoted attribute");
				for (s += 2; *s != '"'; s++) {
					cr_assert(*s && *s != '<', "bad attribute value");
					if (*s == '&')
						cr_assert(entity_ok(s), "raw & in attribute");
				}
				s++;
			}
			if (*s == '>') {
				cr_assert(depth < 64);
				stack[depth++] = name;
				s++;
			} else {
				s += 2;
			}
		} else {
			cr_assert(depth > 0 || *s == '\n' || *s == ' ', "text outside the root");
			if (*s == '&')
				cr_assert(entity_ok(s), "raw & in text: %.20s", s);
			cr_assert_neq(*s, '>', "raw > in text");
			s++;
		}
	}
	cr_assert_eq(depth, 0, "unclosed element");
	cr_assert(root_seen);
}

/* The <g> of the frame whose title starts with "name (". */
static const char *svg_frame(const char *svg, const char *name)
{
	char key[256];

	snprintf(key, sizeof(key), "<title>%s (", name);
	return strstr(svg, key);
}

static double attr_num(const char *from, const char *attr)
{
	char key[64];
	const char *a;

	snprintf(key, sizeof(key), " %s=\"", attr);
	a = strstr(from, key);
	cr_assert_not_null(a, "no %s", attr);
	return strtod(a + strlen(key), NULL);
}

Test(profile, svg)
{
	struct profile *p = profile__new("samples", "count", 0);
	const char *g;
	char *svg;
	FILE *f;

	cr_assert_not_null(p);
	ADD(p, "app", 6, "main", "a<b>&c", "leaf");
	ADD(p, "app", 2, "main", "it's \"quoted\"");
	ADD(p, "app", 1, "main", "sys_write_[k]");
	ADD(p, "app", 1, "main");
	ADD(p, "bad\x01utf\xff", 1, "main");
	svg = capture_svg(p, "CPU <test> & co");

	check_xml(svg);
	cr_assert_not_null(strstr(svg, "CPU &lt;test&gt; &amp; co"));
	cr_assert_null(strstr(svg, "a<b>&c"));
	cr_assert_not_null(svg_frame(svg, "a&lt;b&gt;&amp;c"));
	cr_assert_not_null(svg_frame(svg, "it&apos;s &quot;quoted&quot;"));
	cr_assert_not_null(svg_frame(svg, "bad?utf?"));
	cr_assert_not_null(strstr(svg, "<title>leaf (6 samples, 54.55%)</title>"));
	cr_assert_not_null(strstr(svg, "<title>main (10 samples, 90.91%)</title>"));

	/* Every frame has a rect, and the root spans the whole width (1200 - 2 * 10). */
	g = strstr(svg, "<title>all (11 samples, 100.00%)</title>");
	cr_assert_not_null(g);
	cr_assert_float_eq(attr_num(g, "width"), 1180.0, 0.01);
	cr_assert_float_eq(attr_num(g, "x"), 10.0, 0.01);
	g = svg_frame(svg, "a&lt;b&gt;&amp;c");
	cr_assert_float_eq(attr_num(g, "width"), 1180.0 * 6 / 11, 0.1);

	/* Root at the bottom: deeper frames sit higher up. */
	cr_assert(attr_num(svg_frame(svg, "leaf"), "y") < attr_num(svg_frame(svg, "main"), "y"));
	cr_assert(attr_num(svg_frame(svg, "main"), "y") < attr_num(svg_frame(svg, "all"), "y"));

	/* Kernel frames are blue, user frames warm. */
	g = strstr(svg_frame(svg, "sys_write_[k]"), "fill=\"rgb(");
	{
		unsigned r, gr, b;

		cr_assert_eq(sscanf(g, "fill=\"rgb(%u,%u,%u)", &r, &gr, &b), 3);
		cr_assert(b >= 200 && r < 200);
		g = strstr(svg_frame(svg, "leaf"), "fill=\"rgb(");
		cr_assert_eq(sscanf(g, "fill=\"rgb(%u,%u,%u)", &r, &gr, &b), 3);
		cr_assert(r >= 205 && b <= 55);
	}

	/* When xmllint is there, it has the last word. */
	if (!system("command -v xmllint >/dev/null 2>&1")) {
		char path[] = "/tmp/rover-svg-XXXXXX", cmd[128];
		int fd = mkostemp(path, O_CLOEXEC);

		cr_assert(fd >= 0);
		f = fdopen(fd, "w");
		fputs(svg, f);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
		cr_assert_eq(system(cmd), 0, "xmllint rejects the SVG");
		unlink(path);
	}
	free(svg);
	profile__free(p);
}

Test(profile, svg_omits_narrow_frames_and_grows)
{
	struct profile *p = profile__new("samples", "count", 0);
	const char *deep[12] = { "d0", "d1", "d2", "d3", "d4",	"d5",
				 "d6", "d7", "d8", "d9", "d10", "d11" };
	char *svg;
	double h1, h2;

	ADD(p, "app", 10000, "main", "hot");
	ADD(p, "app", 5, "main", "tiny", "tinier");
	svg = capture_svg(p, NULL);
	check_xml(svg);
	cr_assert_not_null(svg_frame(svg, "hot"));
	cr_assert_null(strstr(svg, "tiny"));
	cr_assert_null(strstr(svg, "tinier"));
	h1 = attr_num(svg, "height");
	free(svg);

	cr_assert_eq(profile__add(p, "app", deep, 12, 5000), 0);
	svg = capture_svg(p, NULL);
	check_xml(svg);
	cr_assert_not_null(svg_frame(svg, "d11"));
	h2 = attr_num(svg, "height");
	/* depth 3 (app;main;hot) to 13 (app;d0..d11): ten more rows. */
	cr_assert_float_eq(h2 - h1, 10 * 16.0, 0.01);
	free(svg);
	profile__free(p);

	/* An empty profile is still a drawing: only the root. */
	p = profile__new("samples", "count", 0);
	svg = capture_svg(p, "empty");
	check_xml(svg);
	cr_assert_not_null(strstr(svg, "<title>all (0 samples, 100.00%)</title>"));
	free(svg);
	profile__free(p);
}

Test(profile, svg_units)
{
	struct profile *p = profile__new("off_cpu", "microseconds", 0);
	char *svg;

	ADD(p, "app", 250, "main", "poll");
	svg = capture_svg(p, NULL);
	cr_assert_not_null(strstr(svg, "<title>poll (250 microseconds, 100.00%)</title>"));
	free(svg);
	profile__free(p);
}

Test(profile, top)
{
	struct profile *p = profile__new("samples", "count", 0);
	char buf[256];

	cr_assert_not_null(p);
	ADD(p, "app", 6, "main", "foo");
	ADD(p, "app", 3, "main", "baz");
	ADD(p, "app", 3, "main", "bar");
	ADD(p, "sh", 2, "other", "foo");
	ADD(p, "app", 1, "main");
	profile__top(p, 10, buf, sizeof(buf));
	cr_assert_str_eq(buf, "  53.3%  foo\n"
			      "  20.0%  bar\n"
			      "  20.0%  baz\n"
			      "   6.7%  main\n");

	profile__top(p, 2, buf, sizeof(buf));
	cr_assert_str_eq(buf, "  53.3%  foo\n"
			      "  20.0%  bar\n");

	/* Whole lines only: room for one line and a half gives one. */
	profile__top(p, 10, buf, 20);
	cr_assert_str_eq(buf, "  53.3%  foo\n");
	profile__top(p, 10, buf, 5);
	cr_assert_str_eq(buf, "");
	profile__free(p);

	/* One function is 100%; control characters do not reach a terminal. */
	p = profile__new("samples", "count", 0);
	ADD(p, "app", 4, "ev\x1b[2Jil");
	profile__top(p, 5, buf, sizeof(buf));
	cr_assert_str_eq(buf, " 100.0%  ev?[2Jil\n");
	profile__free(p);
}

/*
 * The HTML page: hostile frame names as text, self and total per function (recursion counted
 * once per stack), and the one script allowed by the hash the page's policy names, the hash of
 * exactly the script's text (a browser refuses the script otherwise).
 */
Test(profile, html)
{
	struct profile *p = profile__new("samples", "count", 0);
	char *page = NULL, *js, *end, want[192], *csp;
	unsigned char md[EVP_MAX_MD_SIZE], b64[128];
	unsigned int mdlen = 0;
	size_t len = 0, scripts = 0;
	FILE *f;

	cr_assert_not_null(p);
	ADD(p, "app", 6, "main", "rec", "rec", "<script>leaf");
	ADD(p, "app", 3, "main", "rec");
	ADD(p, "app", 1, "main");
	f = open_memstream(&page, &len);
	cr_assert_eq(profile__write_html(p, f, "t </title><script>"), 0);
	cr_assert_eq(fclose(f), 0);
	for (const char *s = page; (s = strstr(s, "<script")); s++)
		scripts++;
	cr_assert_eq(scripts, 1, "%s", page);
	cr_assert(strstr(page, "<td>&lt;script&gt;leaf</td><td>6</td><td>60.00%</td><td>6</td>"),
		  "%s", page);
	/* rec: self 3 (the stack it ends), total 9 (two stacks, however deep it recurses) */
	cr_assert(strstr(page, "<td>rec</td><td>3</td><td>30.00%</td><td>9</td><td>90.00%</td>"),
		  "%s", page);
	cr_assert(strstr(page, "<td>main</td><td>1</td><td>10.00%</td><td>10</td>"), "%s", page);
	cr_assert(strstr(page, "<title>t &lt;/title&gt;&lt;script&gt;</title>"), "%s", page);
	js = strstr(page, "<script>");
	cr_assert_not_null(js);
	js += strlen("<script>");
	end = strstr(js, "</script>");
	cr_assert_not_null(end);
	cr_assert_eq(EVP_Digest(js, (size_t)(end - js), md, &mdlen, EVP_sha256(), NULL), 1);
	EVP_EncodeBlock(b64, md, (int)mdlen);
	snprintf(want, sizeof(want), "script-src 'sha256-%s'", b64);
	csp = strstr(page, "Content-Security-Policy");
	cr_assert(csp && strstr(csp, want), "the policy does not name %s", want);
	cr_assert(strstr(page, "default-src 'none'"));
	free(page);
	profile__free(p);
}
