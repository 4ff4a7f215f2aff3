// SPDX-License-Identifier: Apache-2.0
/*
 * Names addresses for the shipper. Four caches:
 *  - per pid, a snapshot of its executable file mappings (read from /proc/PID/maps);
 *  - per pid, the symbols of its perf map (/tmp/perf-PID.map, written by JITs), for addresses
 *    in no file mapping, under a budget of their own (PERF_MAP_CACHE_BYTES);
 *  - per ELF file, its function symbols (struct elfsym), shared by every process that maps
 *    the same build-id, or the same dev+inode when the file has none, and evicted least
 *    recently used beyond budget_bytes;
 *  - the kernel's symbols, read once from /proc/kallsyms and kept.
 * cache_bytes counts the ELF tables, the demangled names they keep included: what
 * budget_bytes bounds. The pid snapshots have limits of their own (SYMBOLIZER_PIDS_*), and the
 * kernel table, a few MiB, is paid once per machine. Not thread-safe.
 */
#include "shipper/lines.h"
#include "shipper/stacks/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shipper/stacks/elfsym.h"
#include "shipper/stacks/kallsyms.h"

#define SYMBOLIZER_DEFAULT_BUDGET (64u << 20)
/*
 * A process has tens of executable file mappings; the rest bounds what a traced process can
 * make us hold by mapping the same file many times, or by having many processes.
 */
#define SYMBOLIZER_MAX_MAPPINGS 16384
#define SYMBOLIZER_MAX_PATH_BYTES (1u << 20)
#define SYMBOLIZER_PIDS_MAX 65536
#define SYMBOLIZER_PIDS_MAX_BYTES (64u << 20)
/* A path of at most PATH_MAX and the fields before it. */
#define MAPS_MAX_LINE (4096 + 256)
/* vm.max_map_count (65530 by default) lines of usual length make about 10 MiB. */
#define MAPS_MAX_BYTES (256u << 20)
/*
 * A process maps new code (dlopen) after its snapshot was taken, so an address in no mapping
 * re-reads the maps; JIT code is in no file mapping at all and would re-read them on every
 * sample, hence once a second at most.
 */
#define SYMBOLIZER_REFRESH_NS 1000000000ull
/*
 * Perf maps: "START SIZE name" per line, appended by the JIT for each function it compiles;
 * re-read, whole, on a miss at most every SYMBOLIZER_REFRESH_NS. V8 names run to a few hundred
 * bytes (function, script URL, line); longer lines are skipped.
 */
#define PERF_MAP_MAX_LINE 8192
#define PERF_MAP_MAX_SYMS (1u << 20)
/* The opener refuses larger files; this bounds a file that grows while it is read. */
#define PERF_MAP_MAX_BYTES (64u << 20)
/* All perf maps together; the one just read always stays. */
#define PERF_MAP_CACHE_BYTES (128u << 20)
/* How far back a lookup searches for an older symbol enclosing the address. */
#define PERF_MAP_ENCLOSING_SCAN 16

static const char unknown[] = "[unknown]";

struct list {
	struct list *prev, *next;
};

static void list__init(struct list *h)
{
	h->prev = h->next = h;
}

static void list__del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

static void list__add_head(struct list *h, struct list *n)
{
	n->next = h->next;
	n->prev = h;
	h->next->prev = n;
	h->next = n;
}

static void list__touch(struct list *h, struct list *n)
{
	list__del(n);
	list__add_head(h, n);
}

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct hnode {
	struct hnode *next;
	uint64_t hash;
};

struct htab {
	struct hnode **b;
	size_t nb; /* a power of two */
	size_t n;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return mix64(h);
}

static int htab__add(struct htab *t, struct hnode *node, uint64_t hash)
{
	struct hnode **nb, *n, *next;
	size_t size, i;

	if (t->n >= t->nb) {
		size = t->nb ? t->nb * 2 : 64;
		nb = calloc(size, sizeof(*nb));
		if (nb) {
			for (i = 0; i < t->nb; i++) {
				for (n = t->b[i]; n; n = next) {
					next = n->next;
					n->next = nb[n->hash & (size - 1)];
					nb[n->hash & (size - 1)] = n;
				}
			}
			free(t->b);
			t->b = nb;
			t->nb = size;
		} else if (!t->b) {
			return -ENOMEM;
		}
		/* Else longer chains: still correct. */
	}
	node->hash = hash;
	node->next = t->b[hash & (t->nb - 1)];
	t->b[hash & (t->nb - 1)] = node;
	t->n++;
	return 0;
}

static void htab__del(struct htab *t, struct hnode *node)
{
	struct hnode **pp = &t->b[node->hash & (t->nb - 1)];

	while (*pp && *pp != node)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = node->next;
		t->n--;
	}
}

static struct hnode *htab__first(const struct htab *t, uint64_t hash)
{
	struct hnode *n;

	if (!t->nb)
		return NULL;
	for (n = t->b[hash & (t->nb - 1)]; n && n->hash != hash; n = n->next)
		;
	return n;
}

static struct hnode *htab__next(struct hnode *n)
{
	uint64_t hash = n->hash;

	for (n = n->next; n && n->hash != hash; n = n->next)
		;
	return n;
}

struct mapping {
	uint64_t start;
	uint64_t end;
	uint64_t off;
	uint64_t dev;
	uint64_t ino;
	uint32_t path;	 /* offset in pid_maps.paths */
	bool unreadable; /* the opener failed: fall back without asking again */
};

struct pid_maps {
	struct hnode node;
	struct list lru;
	int pid;
	struct mapping *maps;
	size_t n;
	char *paths;
	size_t paths_len;
	size_t bytes;
	uint64_t loaded_ns;
};

struct perf_sym {
	uint64_t start;
	uint64_t end;
	uint32_t name; /* offset in perf_map.strs */
	uint32_t seq;  /* line order: a later line for the same code (re-JIT) wins */
};

/* A pid's perf map: kept also when it could not be read, to time the next attempt. */
struct perf_map {
	struct hnode node;
	struct list lru;
	int pid;
	struct perf_sym *syms;
	size_t n;
	char *strs;
	size_t bytes;
	uint64_t loaded_ns; /* the last attempt, whatever its outcome */
};

struct file_alias;

struct elf_entry {
	struct hnode by_build_id; /* hashed only when es has a build-id */
	struct list lru;
	struct elfsym *es; /* NULL: not an ELF file we read, remembered so as not to retry */
	struct file_alias *aliases;
	size_t bytes;
};

/* One dev+inode naming an entry: a file with one build-id may have several. */
struct file_alias {
	struct hnode node;
	uint64_t dev;
	uint64_t ino;
	struct elf_entry *entry;
	struct file_alias *next;
};

struct symbolizer {
	struct fd_opener opener;
	size_t budget;
	struct htab pids;
	struct htab files;
	struct htab build_ids;
	struct htab perf_maps;
	struct list pid_lru;
	struct list elf_lru;
	struct list perf_lru;
	size_t pids_bytes;
	size_t elf_bytes;
	size_t perf_bytes;
	struct kallsyms *ks;
	bool ks_tried;
	budget_refusal_fn on_refusal;
	void *refusal_ctx;
	struct symbolizer_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void write_name(char *buf, size_t len, const char *name)
{
	if (buf && len)
		snprintf(buf, len, "%s", name);
}

/* ---- pid snapshots ---- */

struct maps_builder {
	struct mapping *maps;
	size_t n;
	size_t cap;
	char *paths;
	size_t paths_len;
	size_t paths_cap;
};

static bool parse_hex(const char **pp, const char *end, char stop, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;
	size_t digits = 0;
	int d;

	for (; p < end && *p != stop; p++) {
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			return false;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (p == end || digits == 0)
		return false;
	*pp = p + 1;
	*ret = v;
	return true;
}

static bool parse_dec(const char **pp, const char *end, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (p == end || *p < '0' || *p > '9')
		return false;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*pp = p;
	*ret = v;
	return true;
}

/* "start-end perms offset major:minor inode   path": executable file mappings only. */
static int maps_builder__line(void *ctx, const char *p, size_t n)
{
	struct maps_builder *b = ctx;
	const char *end = p + n, *perms;
	struct mapping m = {};
	uint64_t major, minor;
	size_t plen, ncap;
	void *np;

	if (!parse_hex(&p, end, '-', &m.start) || !parse_hex(&p, end, ' ', &m.end))
		return 0;
	if (end - p < 5 || p[4] != ' ')
		return 0;
	perms = p;
	p += 5;
	if (!parse_hex(&p, end, ' ', &m.off) || !parse_hex(&p, end, ':', &major) ||
	    !parse_hex(&p, end, ' ', &minor) || !parse_dec(&p, end, &m.ino))
		return 0;
	while (p < end && *p == ' ')
		p++;
	if (perms[2] != 'x' || m.ino == 0 || m.start >= m.end || p == end || *p != '/')
		return 0;
	m.dev = major << 32 | (minor & 0xffffffffu);
	plen = (size_t)(end - p);
	if (b->n >= SYMBOLIZER_MAX_MAPPINGS)
		return 0;

	if (b->n > 0 && strlen(b->paths + b->maps[b->n - 1].path) == plen &&
	    !memcmp(b->paths + b->maps[b->n - 1].path, p, plen)) {
		m.path = b->maps[b->n - 1].path;
	} else {
		if (b->paths_len + plen + 1 > SYMBOLIZER_MAX_PATH_BYTES)
			return 0;
		if (b->paths_len + plen + 1 > b->paths_cap) {
			ncap = b->paths_cap ? b->paths_cap : 1024;
			while (ncap < b->paths_len + plen + 1)
				ncap *= 2;
			np = realloc(b->paths, ncap);
			if (!np)
				return -ENOMEM;
			b->paths = np;
			b->paths_cap = ncap;
		}
		memcpy(b->paths + b->paths_len, p, plen);
		b->paths[b->paths_len + plen] = '\0';
		m.path = (uint32_t)b->paths_len;
		b->paths_len += plen + 1;
	}
	if (b->n == b->cap) {
		ncap = b->cap ? b->cap * 2 : 32;
		np = realloc(b->maps, ncap * sizeof(*b->maps));
		if (!np)
			return -ENOMEM;
		b->maps = np;
		b->cap = ncap;
	}
	b->maps[b->n++] = m;
	return 0;
}

static int mapping_cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static void pid_maps__free(struct pid_maps *pm)
{
	if (!pm)
		return;
	free(pm->maps);
	free(pm->paths);
	free(pm);
}

static struct pid_maps *pid_maps__find(const struct symbolizer *sym, int pid)
{
	struct hnode *n;

	for (n = htab__first(&sym->pids, mix64((uint64_t)pid)); n; n = htab__next(n)) {
		struct pid_maps *pm = container_of(n, struct pid_maps, node);

		if (pm->pid == pid)
			return pm;
	}
	return NULL;
}

static void symbolizer__drop_pid(struct symbolizer *sym, struct pid_maps *pm)
{
	htab__del(&sym->pids, &pm->node);
	list__del(&pm->lru);
	sym->pids_bytes -= pm->bytes;
	pid_maps__free(pm);
}

/* pid's executable file mappings now. NULL + errno. */
static struct pid_maps *symbolizer__snapshot(struct symbolizer *sym, int pid)
{
	struct maps_builder b = {};
	struct pid_maps *pm = NULL;
	int fd, err;

	fd = sym->opener.open_maps(sym->opener.ctx, pid);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	err = read_lines(fd, MAPS_MAX_LINE, MAPS_MAX_BYTES, true, maps_builder__line, &b);
	close(fd);
	if (err)
		goto cleanup;
	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (b.n)
		qsort(b.maps, b.n, sizeof(*b.maps), mapping_cmp);
	pm->pid = pid;
	pm->maps = b.maps;
	pm->n = b.n;
	pm->paths = b.paths;
	pm->paths_len = b.paths_len;
	pm->bytes = sizeof(*pm) + b.cap * sizeof(*b.maps) + b.paths_cap;
	pm->loaded_ns = now_ns();
	list__init(&pm->lru);
	return pm;
cleanup:
	free(b.maps);
	free(b.paths);
	errno = -err;
	return NULL;
}

/* Replaces pid's snapshot; on failure the previous one, if any, stays. */
static int symbolizer__load(struct symbolizer *sym, int pid, struct pid_maps **ret_pm)
{
	struct pid_maps *pm, *old;
	struct list *tail;
	int err = 0;

	pm = symbolizer__snapshot(sym, pid);
	if (!pm)
		return -errno;
	old = pid_maps__find(sym, pid);
	if (old)
		symbolizer__drop_pid(sym, old);
	err = htab__add(&sym->pids, &pm->node, mix64((uint64_t)pid));
	if (err) {
		pid_maps__free(pm);
		return err;
	}
	list__add_head(&sym->pid_lru, &pm->lru);
	sym->pids_bytes += pm->bytes;
	while ((sym->pids.n > SYMBOLIZER_PIDS_MAX || sym->pids_bytes > SYMBOLIZER_PIDS_MAX_BYTES) &&
	       (tail = sym->pid_lru.prev) != &pm->lru)
		symbolizer__drop_pid(sym, container_of(tail, struct pid_maps, lru));
	if (ret_pm)
		*ret_pm = pm;
	return 0;
}

static struct mapping *pid_maps__lookup(struct pid_maps *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pm->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= pm->maps[lo - 1].end)
		return NULL;
	return &pm->maps[lo - 1];
}

/* ---- perf maps ---- */

struct perf_builder {
	struct perf_sym *syms;
	size_t n;
	size_t cap;
	char *strs;
	size_t strs_len;
	size_t strs_cap;
};

/* A hex number ("0x" allowed, as some writers print it) and the one space after it. */
static bool perf_hex(const char **pp, const char *end, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;
	size_t digits = 0;
	int d;

	if (end - p > 2 && p[0] == '0' && p[1] == 'x')
		p += 2;
	for (; p < end && *p != ' '; p++) {
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'f')
			d = (*p | 0x20) - 'a' + 10;
		else
			return false;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (p == end || digits == 0)
		return false;
	*pp = p + 1;
	*ret = v;
	return true;
}

/*
 * "START SIZE name": the name is everything after the one space that follows SIZE, spaces
 * included, as perf reads it. Lines that do not parse, and empty functions, are skipped.
 */
static int perf_builder__line(void *ctx, const char *p, size_t n)
{
	struct perf_builder *b = ctx;
	const char *end = p + n;
	uint64_t start, size;
	size_t nlen, ncap;
	void *np;

	/* Names are kept as C strings: one with a NUL in it would be another name. */
	if (memchr(p, '\0', n) || !perf_hex(&p, end, &start) || !perf_hex(&p, end, &size))
		return 0;
	nlen = (size_t)(end - p);
	if (nlen == 0 || size == 0 || start > UINT64_MAX - size)
		return 0;
	if (b->n >= PERF_MAP_MAX_SYMS)
		return 1;
	if (b->n == b->cap) {
		ncap = b->cap ? b->cap * 2 : 256;
		np = realloc(b->syms, ncap * sizeof(*b->syms));
		if (!np)
			return -ENOMEM;
		b->syms = np;
		b->cap = ncap;
	}
	if (b->strs_len + nlen + 1 > b->strs_cap) {
		ncap = b->strs_cap ? b->strs_cap : 4096;
		while (ncap < b->strs_len + nlen + 1)
			ncap *= 2;
		np = realloc(b->strs, ncap);
		if (!np)
			return -ENOMEM;
		b->strs = np;
		b->strs_cap = ncap;
	}
	memcpy(b->strs + b->strs_len, p, nlen);
	b->strs[b->strs_len + nlen] = '\0';
	b->syms[b->n] = (struct perf_sym){
		.start = start,
		.end = start + size,
		.name = (uint32_t)b->strs_len,
		.seq = (uint32_t)b->n,
	};
	b->strs_len += nlen + 1;
	b->n++;
	return 0;
}

/* By start; for one start, the latest line first. */
static int perf_sym_cmp(const void *a, const void *b)
{
	const struct perf_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq > y->seq ? -1 : 1;
	return 0;
}

static struct perf_map *perf_map__find(const struct symbolizer *sym, int pid)
{
	struct hnode *n;

	for (n = htab__first(&sym->perf_maps, mix64((uint64_t)pid)); n; n = htab__next(n)) {
		struct perf_map *pm = container_of(n, struct perf_map, node);

		if (pm->pid == pid)
			return pm;
	}
	return NULL;
}

static void symbolizer__drop_perf_map(struct symbolizer *sym, struct perf_map *pm)
{
	htab__del(&sym->perf_maps, &pm->node);
	list__del(&pm->lru);
	sym->perf_bytes -= pm->bytes;
	free(pm->syms);
	free(pm->strs);
	free(pm);
}

/*
 * (Re-)reads pm's file. On failure the symbols read before stay: after the process exits
 * its perf map cannot be reached any more, and what was read is still right.
 */
static void symbolizer__read_perf_map(struct symbolizer *sym, struct perf_map *pm)
{
	struct perf_builder b = {};
	struct list *tail;
	size_t i, n = 0;
	void *np;
	int fd, err;

	pm->loaded_ns = now_ns();
	list__touch(&sym->perf_lru, &pm->lru);
	fd = sym->opener.open_perf_map(sym->opener.ctx, pm->pid);
	if (fd < 0)
		return;
	sym->stats.perf_map_reads++;
	/*
	 * A line without its newline may be one the JIT is writing now: left for the next read.
	 * Past PERF_MAP_MAX_BYTES (the file grew after it was opened) what was read is kept.
	 */
	err = read_lines(fd, PERF_MAP_MAX_LINE, PERF_MAP_MAX_BYTES, false, perf_builder__line, &b);
	close(fd);
	if (err && err != -EFBIG)
		goto cleanup;
	if (b.n) {
		qsort(b.syms, b.n, sizeof(*b.syms), perf_sym_cmp);
		for (i = 0; i < b.n; i++)
			if (!n || b.syms[n - 1].start != b.syms[i].start)
				b.syms[n++] = b.syms[i];
		/* Shrinking: what stays is what the budget counts. */
		np = realloc(b.syms, n * sizeof(*b.syms));
		if (np) {
			b.syms = np;
			b.cap = n;
		}
		np = realloc(b.strs, b.strs_len);
		if (np) {
			b.strs = np;
			b.strs_cap = b.strs_len;
		}
	}
	free(pm->syms);
	free(pm->strs);
	pm->syms = b.syms;
	pm->n = n;
	pm->strs = b.strs;
	sym->perf_bytes -= pm->bytes;
	pm->bytes = sizeof(*pm) + b.cap * sizeof(*b.syms) + b.strs_cap;
	sym->perf_bytes += pm->bytes;
	while (sym->perf_bytes > PERF_MAP_CACHE_BYTES && (tail = sym->perf_lru.prev) != &pm->lru)
		symbolizer__drop_perf_map(sym, container_of(tail, struct perf_map, lru));
	return;
cleanup:
	free(b.syms);
	free(b.strs);
}

/* pid's perf map entry, made and read on first use. NULL: out of memory. */
static struct perf_map *symbolizer__perf_map(struct symbolizer *sym, int pid)
{
	struct perf_map *pm = perf_map__find(sym, pid);
	struct list *tail;

	if (pm) {
		list__touch(&sym->perf_lru, &pm->lru);
		return pm;
	}
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	pm->pid = pid;
	pm->bytes = sizeof(*pm);
	if (htab__add(&sym->perf_maps, &pm->node, mix64((uint64_t)pid))) {
		free(pm);
		return NULL;
	}
	list__init(&pm->lru);
	list__add_head(&sym->perf_lru, &pm->lru);
	sym->perf_bytes += pm->bytes;
	while (sym->perf_maps.n > SYMBOLIZER_PIDS_MAX && (tail = sym->perf_lru.prev) != &pm->lru)
		symbolizer__drop_perf_map(sym, container_of(tail, struct perf_map, lru));
	symbolizer__read_perf_map(sym, pm);
	return pm;
}

/* The symbol covering addr, the latest written when several do. NULL: none. */
static const struct perf_sym *perf_map__lookup(const struct perf_map *pm, uint64_t addr)
{
	const struct perf_sym *best = NULL;
	size_t lo = 0, hi = pm->n, mid, k;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pm->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* JITs reuse freed code memory: an older, longer symbol may still enclose addr. */
	for (k = lo; k > 0 && lo - k < PERF_MAP_ENCLOSING_SCAN; k--) {
		const struct perf_sym *s = &pm->syms[k - 1];

		if (addr < s->end && (!best || s->seq > best->seq))
			best = s;
	}
	return best;
}

/* Names addr of pid from its perf map: 1 when a name was written, else 0. */
static int symbolizer__jit(struct symbolizer *sym, int pid, uint64_t addr, char *buf, size_t len)
{
	const struct perf_sym *s;
	struct perf_map *pm;

	if (!sym->opener.open_perf_map)
		return 0;
	pm = symbolizer__perf_map(sym, pid);
	if (!pm)
		return 0;
	s = perf_map__lookup(pm, addr);
	if (!s && now_ns() - pm->loaded_ns >= SYMBOLIZER_REFRESH_NS) {
		/* JITs append as they compile: the map may name it now. */
		symbolizer__read_perf_map(sym, pm);
		s = perf_map__lookup(pm, addr);
	}
	if (!s)
		return 0;
	write_name(buf, len, pm->strs + s->name);
	return 1;
}

/* ---- ELF cache ---- */

static uint64_t file_hash(uint64_t dev, uint64_t ino)
{
	return mix64(dev * 0x9e3779b97f4a7c15ull ^ ino);
}

static size_t elf_entry__bytes(const struct elf_entry *e)
{
	const struct file_alias *a;
	size_t bytes = sizeof(*e) + elfsym__bytes(e->es);

	for (a = e->aliases; a; a = a->next)
		bytes += sizeof(*a);
	return bytes;
}

static void symbolizer__evict(struct symbolizer *sym, struct elf_entry *e)
{
	const uint8_t *id;
	struct file_alias *a, *next;

	for (a = e->aliases; a; a = next) {
		next = a->next;
		htab__del(&sym->files, &a->node);
		free(a);
	}
	if (elfsym__build_id(e->es, &id))
		htab__del(&sym->build_ids, &e->by_build_id);
	list__del(&e->lru);
	sym->elf_bytes -= e->bytes;
	elfsym__free(e->es);
	free(e);
}

/* Evicts least recently used entries, keep excepted, until the budget holds. */
static void symbolizer__trim(struct symbolizer *sym, const struct elf_entry *keep)
{
	struct list *tail;

	while (sym->elf_bytes > sym->budget && (tail = sym->elf_lru.prev) != &sym->elf_lru) {
		if (tail == &keep->lru) {
			if (tail->prev == &sym->elf_lru)
				break;
			tail = tail->prev;
		}
		symbolizer__evict(sym, container_of(tail, struct elf_entry, lru));
		sym->stats.elf_evicted++;
	}
}

static void symbolizer__account(struct symbolizer *sym, struct elf_entry *e)
{
	size_t bytes = elf_entry__bytes(e);

	sym->elf_bytes = sym->elf_bytes - e->bytes + bytes;
	e->bytes = bytes;
	symbolizer__trim(sym, e);
}

static struct elf_entry *symbolizer__find_file(const struct symbolizer *sym, uint64_t dev,
					       uint64_t ino)
{
	struct hnode *n;

	for (n = htab__first(&sym->files, file_hash(dev, ino)); n; n = htab__next(n)) {
		struct file_alias *a = container_of(n, struct file_alias, node);

		if (a->dev == dev && a->ino == ino)
			return a->entry;
	}
	return NULL;
}

static struct elf_entry *symbolizer__find_build_id(const struct symbolizer *sym, const uint8_t *id,
						   size_t len)
{
	struct hnode *n;

	for (n = htab__first(&sym->build_ids, hash_bytes(id, len)); n; n = htab__next(n)) {
		struct elf_entry *e = container_of(n, struct elf_entry, by_build_id);
		const uint8_t *eid;

		if (elfsym__build_id(e->es, &eid) == len && !memcmp(eid, id, len))
			return e;
	}
	return NULL;
}

static int symbolizer__add_alias(struct symbolizer *sym, struct elf_entry *e, uint64_t dev,
				 uint64_t ino)
{
	struct file_alias *a;
	int err;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->dev = dev;
	a->ino = ino;
	a->entry = e;
	err = htab__add(&sym->files, &a->node, file_hash(dev, ino));
	if (err) {
		free(a);
		return err;
	}
	a->next = e->aliases;
	e->aliases = a;
	return 0;
}

/* A new entry for es (taken; NULL for a file that is not a readable ELF). */
static struct elf_entry *symbolizer__new_entry(struct symbolizer *sym, struct elfsym *es)
{
	struct elf_entry *e;
	const uint8_t *id;
	size_t len;

	e = calloc(1, sizeof(*e));
	if (!e) {
		elfsym__free(es);
		return NULL;
	}
	e->es = es;
	list__init(&e->lru);
	len = elfsym__build_id(es, &id);
	if (len && htab__add(&sym->build_ids, &e->by_build_id, hash_bytes(id, len))) {
		elfsym__free(es);
		free(e);
		return NULL;
	}
	list__add_head(&sym->elf_lru, &e->lru);
	return e;
}

/* The cache entry of the file behind m, opened and read on a miss. NULL: not available. */
static struct elf_entry *symbolizer__elf(struct symbolizer *sym, struct pid_maps *pm,
					 struct mapping *m)
{
	struct elf_entry *e;
	struct elfsym *es;
	const uint8_t *id;
	uint64_t refused, limit;
	size_t len;
	int fd;

	e = symbolizer__find_file(sym, m->dev, m->ino);
	if (e) {
		list__touch(&sym->elf_lru, &e->lru);
		return e;
	}
	fd = sym->opener.open_mapped_file(sym->opener.ctx, pm->pid, m->start, m->end);
	if (fd < 0) {
		m->unreadable = true;
		return NULL;
	}
	es = elfsym__open(fd);
	len = elfsym__build_id(es, &id);
	e = len ? symbolizer__find_build_id(sym, id, len) : NULL;
	if (e) {
		elfsym__free(es);
		list__touch(&sym->elf_lru, &e->lru);
	} else {
		/* A failed read leaves es with the symbols it got (maybe none): cached as is. */
		if (es && elfsym__load_symbols(es, pm->paths + m->path) == 0)
			sym->stats.elf_loaded++;
		if (es && elfsym__refused(es, &refused, &limit)) {
			sym->stats.elf_over_budget++;
			if (sym->on_refusal)
				sym->on_refusal(sym->refusal_ctx,
						&(struct budget_refusal){ .what = "symbols",
									  .path = pm->paths +
										  m->path,
									  .bytes = refused,
									  .limit = limit });
		}
		e = symbolizer__new_entry(sym, es);
	}
	close(fd);
	if (!e)
		return NULL;
	/* Without its alias (ENOMEM) e still serves now, and is found by build-id next time. */
	(void)symbolizer__add_alias(sym, e, m->dev, m->ino);
	symbolizer__account(sym, e);
	return e;
}

/* ---- public ---- */

struct symbolizer *symbolizer__new(const struct fd_opener *opener, size_t budget_bytes)
{
	struct symbolizer *sym;

	if (!opener || !opener->open_maps || !opener->open_mapped_file || !opener->open_kallsyms) {
		errno = EINVAL;
		return NULL;
	}
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		return NULL;
	sym->opener = *opener;
	sym->budget = budget_bytes ? budget_bytes : SYMBOLIZER_DEFAULT_BUDGET;
	list__init(&sym->pid_lru);
	list__init(&sym->elf_lru);
	list__init(&sym->perf_lru);
	return sym;
}

void symbolizer__free(struct symbolizer *sym)
{
	if (!sym)
		return;
	while (sym->pid_lru.next != &sym->pid_lru)
		symbolizer__drop_pid(sym, container_of(sym->pid_lru.next, struct pid_maps, lru));
	while (sym->elf_lru.next != &sym->elf_lru)
		symbolizer__evict(sym, container_of(sym->elf_lru.next, struct elf_entry, lru));
	while (sym->perf_lru.next != &sym->perf_lru)
		symbolizer__drop_perf_map(sym,
					  container_of(sym->perf_lru.next, struct perf_map, lru));
	free(sym->pids.b);
	free(sym->perf_maps.b);
	free(sym->files.b);
	free(sym->build_ids.b);
	kallsyms__free(sym->ks);
	free(sym);
}

int symbolizer__load_pid(struct symbolizer *sym, int pid)
{
	struct perf_map *pmap;
	struct pid_maps *pm;
	int err;

	if (!sym || pid <= 0)
		return -EINVAL;
	err = symbolizer__load(sym, pid, &pm);
	if (err)
		return err;
	/*
	 * Read every mapped file now: the descriptors come from /proc/PID/map_files, which
	 * vanish with the process, and a short-lived target is gone by the first flush.
	 */
	for (size_t i = 0; i < pm->n; i++)
		if (!pm->maps[i].unreadable)
			(void)symbolizer__elf(sym, pm, &pm->maps[i]);
	/* The perf map too: /proc/PID/root, the way to it, goes with the process. */
	if (sym->opener.open_perf_map) {
		pmap = perf_map__find(sym, pid);
		if (pmap)
			symbolizer__read_perf_map(sym, pmap);
		else
			(void)symbolizer__perf_map(sym, pid);
	}
	return 0;
}

uint64_t symbolizer__maps_stamp(const struct symbolizer *sym, int pid)
{
	const struct pid_maps *pm = sym ? pid_maps__find(sym, pid) : NULL;

	return pm ? pm->loaded_ns : 0;
}

void symbolizer__forget_pid(struct symbolizer *sym, int pid)
{
	struct perf_map *pmap;
	struct pid_maps *pm;

	if (!sym)
		return;
	pm = pid_maps__find(sym, pid);
	if (pm)
		symbolizer__drop_pid(sym, pm);
	pmap = perf_map__find(sym, pid);
	if (pmap)
		symbolizer__drop_perf_map(sym, pmap);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int symbolizer__user(struct symbolizer *sym, int pid, uint64_t addr, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	struct pid_maps *pm;
	struct mapping *m = NULL;
	struct elf_entry *e;
	const char *base;
	size_t blen;

	if (!sym || pid <= 0 || (!buf && len)) {
		write_name(buf, len, unknown);
		return -EINVAL;
	}
	sym->stats.lookups++;
	pm = pid_maps__find(sym, pid);
	if (!pm && symbolizer__load(sym, pid, &pm))
		pm = NULL;
	if (pm) {
		m = pid_maps__lookup(pm, addr);
		if (!m && now_ns() - pm->loaded_ns >= SYMBOLIZER_REFRESH_NS) {
			/* A failed reload keeps the old snapshot: it is still the best we have. */
			if (symbolizer__load(sym, pid, &pm) == 0)
				m = pid_maps__lookup(pm, addr);
			else
				pm->loaded_ns = now_ns();
		}
		list__touch(&sym->pid_lru, &pm->lru);
	}
	if (!m) {
		/* In no file mapping: JIT code, named by the process in its perf map. */
		if (symbolizer__jit(sym, pid, addr, buf, len))
			return 1;
		sym->stats.unnamed++;
		write_name(buf, len, unknown);
		return 0;
	}
	if (!m->unreadable) {
		e = symbolizer__elf(sym, pm, m);
		if (e && e->es &&
		    elfsym__name(e->es, elfsym__vaddr(e->es, addr, m->start, m->off), buf, len)) {
			/* Naming may have kept a demangled name. */
			symbolizer__account(sym, e);
			return 1;
		}
	}
	sym->stats.unnamed++;
	if (len) {
		base = base_name(pm->paths + m->path);
		blen = strlen(base);
		if (blen >= sizeof(deleted) &&
		    !strcmp(base + blen - (sizeof(deleted) - 1), deleted))
			blen -= sizeof(deleted) - 1;
		snprintf(buf, len, "%.*s+0x%" PRIx64, (int)blen, base, addr - m->start + m->off);
	}
	return 0;
}

int symbolizer__mapping(struct symbolizer *sym, int pid, uint64_t addr, struct sym_mapping *ret)
{
	struct pid_maps *pm;
	struct mapping *m;

	if (!sym || pid <= 0)
		return -EINVAL;
	pm = pid_maps__find(sym, pid);
	if (!pm && symbolizer__load(sym, pid, &pm))
		return 0;
	m = pid_maps__lookup(pm, addr);
	if (!m && now_ns() - pm->loaded_ns >= SYMBOLIZER_REFRESH_NS) {
		if (symbolizer__load(sym, pid, &pm) == 0)
			m = pid_maps__lookup(pm, addr);
		else
			pm->loaded_ns = now_ns();
	}
	if (!m)
		return 0;
	*ret = (struct sym_mapping){
		.start = m->start, .end = m->end, .off = m->off, .dev = m->dev, .ino = m->ino
	};
	return 1;
}

size_t symbolizer__mappings(struct symbolizer *sym, int pid, struct sym_mapping *ret, size_t max)
{
	struct pid_maps *pm = sym ? pid_maps__find(sym, pid) : NULL;
	size_t n = 0;

	for (size_t i = 0; pm && i < pm->n && n < max; i++)
		ret[n++] = (struct sym_mapping){ .start = pm->maps[i].start,
						 .end = pm->maps[i].end,
						 .off = pm->maps[i].off,
						 .dev = pm->maps[i].dev,
						 .ino = pm->maps[i].ino };
	return n;
}

int symbolizer__open_mapping(struct symbolizer *sym, int pid, const struct sym_mapping *m)
{
	if (!sym || pid <= 0)
		return -EINVAL;
	return sym->opener.open_mapped_file(sym->opener.ctx, pid, m->start, m->end);
}

void symbolizer__on_refusal(struct symbolizer *sym, budget_refusal_fn fn, void *ctx)
{
	if (!sym)
		return;
	sym->on_refusal = fn;
	sym->refusal_ctx = ctx;
}

void symbolizer__refused(struct symbolizer *sym, int pid, const struct sym_mapping *m,
			 const char *what, uint64_t bytes, uint64_t limit)
{
	struct budget_refusal r = { .what = what, .path = "?", .bytes = bytes, .limit = limit };
	struct pid_maps *pm;
	struct mapping *mp;

	if (!sym || !sym->on_refusal)
		return;
	pm = pid_maps__find(sym, pid);
	mp = pm ? pid_maps__lookup(pm, m->start) : NULL;
	if (mp && mp->dev == m->dev && mp->ino == m->ino)
		r.path = pm->paths + mp->path;
	sym->on_refusal(sym->refusal_ctx, &r);
}

void symbolizer__load_kernel(struct symbolizer *sym)
{
	int fd;

	if (!sym || sym->ks_tried)
		return;
	/* Once: without privilege kallsyms reads as zeros, and will not change. */
	sym->ks_tried = true;
	fd = sym->opener.open_kallsyms(sym->opener.ctx);
	if (fd >= 0) {
		sym->ks = kallsyms__load(fd);
		close(fd);
	}
}

int symbolizer__kernel(struct symbolizer *sym, uint64_t addr, char *buf, size_t len)
{
	const char *name;

	if (!sym || (!buf && len)) {
		write_name(buf, len, unknown);
		return -EINVAL;
	}
	sym->stats.lookups++;
	symbolizer__load_kernel(sym);
	name = kallsyms__lookup(sym->ks, addr);
	if (!name) {
		sym->stats.unnamed++;
		write_name(buf, len, unknown);
		return 0;
	}
	write_name(buf, len, name);
	return 1;
}

int symbolizer__kernel_named(struct symbolizer *sym, const char *name, char *buf, size_t len)
{
	if (!sym || (!buf && len)) {
		write_name(buf, len, unknown);
		return -EINVAL;
	}
	sym->stats.lookups++;
	if (!*name) {
		sym->stats.unnamed++;
		write_name(buf, len, unknown);
		return 0;
	}
	write_name(buf, len, name);
	return 1;
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *ret_stats)
{
	if (!sym || !ret_stats)
		return;
	*ret_stats = sym->stats;
	ret_stats->cache_bytes = sym->elf_bytes;
	ret_stats->perf_map_bytes = sym->perf_bytes;
}
