// SPDX-License-Identifier: Apache-2.0
/* Finding a target's CPython interpreter in its mappings (shipper/stacks/pyfind.h). */
#include "shipper/stacks/pyfind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/stackcount.h"
#include "shipper/lines.h"

/* A path of at most PATH_MAX and the fields before it; maps of usual processes: some KiB. */
#define PYFIND_MAX_LINE (4096 + 256)
#define PYFIND_MAX_BYTES (256u << 20)

struct py_sent {
	int32_t pid;
	uint32_t seq;
	uint64_t dev, ino, start;
	int32_t err; /* 1 while no answer came */
	int java;    /* a libjvm.so, not an interpreter; 2: a node executable */
	char path[256];
};

struct py_finder {
	uint64_t task_id;
	uint32_t n, seq;
	int full_said;
	struct py_finder_stats st;
	struct py_sent sent[PYFIND_MAX];
};

/* "3.N" and what may follow N: build flags (d, m, u...). *ret_minor; the rest at *ret_end. */
static bool minor_of(const char *p, unsigned *ret_minor, const char **ret_end)
{
	unsigned n = 0;
	int digits = 0;

	if (strncmp(p, "3.", 2))
		return false;
	for (p += 2; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		n = n * 10 + (unsigned)(*p - '0');
	if (!digits || n < 8 || n > 13)
		return false;
	while (*p >= 'a' && *p <= 'z')
		p++;
	*ret_minor = n;
	*ret_end = p;
	return true;
}

int pyfind__name(const char *base, unsigned *ret_minor)
{
	const char *end;

	/* HotSpot's library: its version is the worker's to read, from the file. */
	if (!strcmp(base, "libjvm.so")) {
		*ret_minor = 0;
		return 3;
	}
	/* node (or a libnode.so): V8's layout is the worker's to read, from the file. */
	if (!strcmp(base, "node") || !strcmp(base, "nodejs") || !strncmp(base, "libnode.so", 10)) {
		*ret_minor = 0;
		return 4;
	}
	if (!strncmp(base, "libpython", 9) && minor_of(base + 9, ret_minor, &end) &&
	    !strncmp(end, ".so", 3) && (end[3] == '\0' || end[3] == '.'))
		return 1;
	if (!strncmp(base, "python", 6) && minor_of(base + 6, ret_minor, &end) && *end == '\0')
		return 2;
	return 0;
}

struct py_finder *py_finder__new(uint64_t task_id)
{
	struct py_finder *f = calloc(1, sizeof(*f));

	if (f)
		f->task_id = task_id;
	return f;
}

void py_finder__free(struct py_finder *f)
{
	free(f);
}

/* The best candidate of one read of the maps. */
struct scan {
	int kind; /* pyfind__name's: 1 beats 2 */
	uint64_t start, end, dev, ino;
	/* Its executable mapping: the launcher opens code mappings only (OPEN_MAPPED_FILE). */
	uint64_t xstart, xend;
	char path[256];
};

/*
 * "start-end perms offset major:minor inode   path": file mappings from offset 0, and the
 * executable mapping of the candidate's file that follows its first.
 */
static int scan_line(void *ctx, const char *line, size_t n)
{
	static const char deleted[] = " (deleted)";
	struct scan *s = ctx;
	unsigned long long start, end, off, ino;
	unsigned maj, min, minor;
	char buf[PYFIND_MAX_LINE + 1], perms[5];
	const char *path, *base;
	char *slash;
	size_t plen;
	int pos = 0, kind;

	if (n > PYFIND_MAX_LINE)
		return 0;
	memcpy(buf, line, n);
	buf[n] = '\0';
	if (sscanf(buf, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
		   &ino, &pos) < 7 ||
	    !pos || buf[pos] != '/' || !ino || start >= end)
		return 0;
	if (s->kind && !s->xstart && perms[2] == 'x' && s->dev == ((uint64_t)maj << 32 | min) &&
	    s->ino == ino) {
		s->xstart = start;
		s->xend = end;
		return 0;
	}
	if (off != 0)
		return 0;
	path = buf + pos;
	plen = strlen(path);
	if (plen > sizeof(deleted) - 1 && !strcmp(path + plen - (sizeof(deleted) - 1), deleted))
		buf[pos + plen - (sizeof(deleted) - 1)] = '\0';
	slash = strrchr(buf + pos, '/');
	base = slash + 1;
	kind = pyfind__name(base, &minor);
	if (!kind || (s->kind && s->kind <= kind))
		return 0;
	*s = (struct scan){ .kind = kind,
			    .start = start,
			    .end = end,
			    .dev = (uint64_t)maj << 32 | min,
			    .ino = ino };
	snprintf(s->path, sizeof(s->path), "%s", path);
	return 0;
}

int py_finder__scan(struct py_finder *f, const struct fd_opener *op, int pid, py_found_fn found,
		    void *ctx)
{
	struct scan s = { 0 };
	struct msg_py_attach m;
	struct py_sent *e;
	int fd, err;

	fd = op->open_maps(op->ctx, pid);
	if (fd < 0)
		return fd;
	err = read_lines(fd, PYFIND_MAX_LINE, PYFIND_MAX_BYTES, true, scan_line, &s);
	close(fd);
	if (err)
		return err;
	if (!s.kind || !s.xstart)
		return 0;
	for (uint32_t i = 0; i < f->n; i++) {
		e = &f->sent[i];
		if (e->pid == pid && e->dev == s.dev && e->ino == s.ino && e->start == s.start)
			return 0;
	}
	if (f->n == PYFIND_MAX) {
		if (!f->full_said)
			log_warn("task %llu: python: %d interpreters sent; no more are",
				 (unsigned long long)f->task_id, PYFIND_MAX);
		f->full_said = 1;
		return 0;
	}
	fd = op->open_mapped_file(op->ctx, pid, s.xstart, s.xend);
	if (fd < 0)
		return fd;
	e = &f->sent[f->n++];
	*e = (struct py_sent){
		.pid = pid, .seq = ++f->seq, .dev = s.dev, .ino = s.ino, .start = s.start, .err = 1
	};
	snprintf(e->path, sizeof(e->path), "%s", s.path);
	m = (struct msg_py_attach){ .task_id = f->task_id,
				    .pid = pid,
				    .seq = e->seq,
				    .start = s.start,
				    .runtime = s.kind == 4   ? SC_RT_NODE
					       : s.kind == 3 ? SC_RT_JAVA
							     : SC_RT_PYTHON };
	e->java = s.kind == 4 ? 2 : s.kind == 3;
	snprintf(m.path, sizeof(m.path), "%s", s.path);
	err = found(ctx, &m, fd);
	close(fd);
	if (err)
		return err;
	f->st.sent++;
	return 1;
}

void py_finder__result(struct py_finder *f, const struct msg_py_result *r)
{
	for (uint32_t i = 0; i < f->n; i++) {
		struct py_sent *e = &f->sent[i];

		if (e->seq != r->seq || e->pid != r->pid || e->err != 1)
			continue;
		e->err = r->err;
		if (r->err) {
			f->st.refused++;
			log_warn("task %llu: %s in pid %d (%s) not read: %s",
				 (unsigned long long)f->task_id,
				 e->java == 2 ? "node"
				 : e->java    ? "java"
					      : "python",
				 e->pid, e->path, strerror(r->err < 0 ? -r->err : r->err));
		} else if (e->java == 2) {
			f->st.found++;
			log_info("task %llu: node (V8 %u.%u) found in pid %d (%s)",
				 (unsigned long long)f->task_id, r->version >> 8, r->version & 0xff,
				 e->pid, e->path);
		} else if (e->java) {
			f->st.found++;
			log_info("task %llu: java %u found in pid %d (%s)",
				 (unsigned long long)f->task_id, r->version, e->pid, e->path);
		} else {
			f->st.found++;
			log_info("task %llu: python %u.%u found in pid %d (%s)",
				 (unsigned long long)f->task_id, (r->version >> 8) & 0xff,
				 r->version & 0xff, e->pid, e->path);
		}
		return;
	}
}

void py_finder__stats(const struct py_finder *f, struct py_finder_stats *ret)
{
	*ret = f ? f->st : (struct py_finder_stats){ 0 };
}
