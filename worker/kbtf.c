// SPDX-License-Identifier: Apache-2.0
/*
 * rover-worker (CAP_BPF + CAP_PERFMON, before load): kernel structure offsets from the
 * kernel's BTF in one pass. See worker/kbtf.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/btf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/kbtf.h"

/* The kernel's BTF is 5-6 MB; a file past this is not one. */
#define KBTF_MAX_FILE (64u << 20)
/* Structures named in the wants, at most. */
#define KBTF_MAX_NAMES 16
/* Steps through typedefs and qualifiers, and nested anonymous members, at most. */
#define KBTF_MAX_CHAIN 16
#define KBTF_MAX_NEST 6

/*
 * Where every KBTF_STEP-th type's record starts: a type is found from the one before it on
 * that grid, at most KBTF_STEP - 1 records on. The kernel's 160 000 types take 10 KiB this
 * way, not 640 KiB of index (page faults the worker would pay at every start).
 */
#define KBTF_STEP 64u

struct kbtf {
	const uint8_t *types; /* the type section */
	uint32_t types_len;
	const char *strs;
	uint32_t strs_len;
	uint32_t *grid; /* grid[i]: offset in types of type id i * KBTF_STEP (id 0: void) */
	uint32_t ntypes;
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The name at off, or NULL when it does not end inside the string section. */
static const char *name_at(const struct kbtf *b, uint32_t off)
{
	if (off >= b->strs_len || !memchr(b->strs + off, '\0', b->strs_len - off))
		return NULL;
	return b->strs + off;
}

/* Bytes after a record's 12-byte head, by kind; -1 for a kind this kernel does not know. */
static int64_t tail_len(uint32_t info)
{
	uint32_t vlen = BTF_INFO_VLEN(info);

	switch (BTF_INFO_KIND(info)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	case BTF_KIND_ARRAY:
		return (int64_t)sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return (int64_t)vlen * (int64_t)sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (int64_t)vlen * (int64_t)sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return (int64_t)vlen * (int64_t)sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return (int64_t)vlen * (int64_t)sizeof(struct btf_var_secinfo);
	case BTF_KIND_ENUM64:
		return (int64_t)vlen * (int64_t)sizeof(struct btf_enum64);
	default:
		return -1;
	}
}

/* The records' lengths were checked by the scan that made the grid. */
static uint32_t record_len(const struct kbtf *b, uint32_t pos)
{
	return (uint32_t)(sizeof(struct btf_type) + (uint64_t)tail_len(rd32(b->types + pos + 4)));
}

static const struct btf_type *type_of(const struct kbtf *b, uint32_t id)
{
	uint32_t pos, from;

	if (!id || id > b->ntypes)
		return NULL;
	from = id / KBTF_STEP * KBTF_STEP;
	pos = b->grid[id / KBTF_STEP];
	if (!from)
		from = 1; /* void has no record: the grid's first entry is type 1's */
	for (; from < id; from++)
		pos += record_len(b, pos);
	return (const struct btf_type *)(const void *)(b->types + pos);
}

/* id with its typedefs and qualifiers taken off, or 0. */
static uint32_t strip(const struct kbtf *b, uint32_t id)
{
	for (int i = 0; i < KBTF_MAX_CHAIN; i++) {
		const struct btf_type *t = type_of(b, id);

		if (!t)
			return 0;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = t->type;
			break;
		default:
			return id;
		}
	}
	return 0;
}

/* The size in bytes of a member's type, or UINT32_MAX when it has none known. */
static uint32_t size_of(const struct kbtf *b, uint32_t id, int depth)
{
	const struct btf_type *t = type_of(b, strip(b, id));
	const struct btf_array *a;
	uint32_t elem;

	if (!t || depth > KBTF_MAX_CHAIN)
		return UINT32_MAX;
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
	case BTF_KIND_FLOAT:
		return t->size;
	case BTF_KIND_PTR:
		return 8;
	case BTF_KIND_ARRAY:
		a = (const struct btf_array *)(const void *)(t + 1);
		elem = size_of(b, a->type, depth + 1);
		if (elem == UINT32_MAX || (a->nelems && elem > UINT32_MAX / a->nelems))
			return UINT32_MAX;
		return elem * a->nelems;
	default:
		return UINT32_MAX;
	}
}

static int is_aggregate(const struct btf_type *t)
{
	return t && (BTF_INFO_KIND(t->info) == BTF_KIND_STRUCT ||
		     BTF_INFO_KIND(t->info) == BTF_KIND_UNION);
}

/*
 * The member called name (len bytes) of the structure or union id, looked for in its
 * anonymous members too, as C does: 1 with its offset in bits and type, 0 when absent,
 * -ERANGE for a bitfield.
 */
static int member_find(const struct kbtf *b, uint32_t id, const char *name, size_t len, int depth,
		       uint64_t *ret_bits, uint32_t *ret_type)
{
	const struct btf_type *t = type_of(b, id);
	const struct btf_member *m;
	int kflag, r;

	if (!is_aggregate(t) || depth > KBTF_MAX_NEST)
		return 0;
	kflag = BTF_INFO_KFLAG(t->info);
	m = (const struct btf_member *)(const void *)(t + 1);
	for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++, m++) {
		uint64_t bits = kflag ? BTF_MEMBER_BIT_OFFSET(m->offset) : m->offset;
		const char *n;

		if (!m->name_off) {
			uint64_t inner;

			r = member_find(b, strip(b, m->type), name, len, depth + 1, &inner,
					ret_type);
			if (r) {
				*ret_bits = bits + inner;
				return r;
			}
			continue;
		}
		n = name_at(b, m->name_off);
		if (!n || strlen(n) != len || memcmp(n, name, len))
			continue;
		if (kflag && BTF_MEMBER_BITFIELD_SIZE(m->offset))
			return -ERANGE;
		*ret_bits = bits;
		*ret_type = m->type;
		return 1;
	}
	return 0;
}

/* One want's offset: 0, -ENOENT or -ERANGE. */
static int resolve(const struct kbtf *b, uint32_t sid, const struct kbtf_want *w)
{
	const char *p = w->path;
	uint64_t bits = 0;
	uint32_t id = sid, type = 0, size;

	for (;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		uint64_t at;
		int r = member_find(b, id, p, len, 0, &at, &type);

		if (r < 0)
			return r;
		if (!r)
			return -ENOENT;
		bits += at;
		if (!dot)
			break;
		id = strip(b, type);
		p = dot + 1;
	}
	size = size_of(b, type, 0);
	if (bits % 8 || bits / 8 >= KOFS_NONE || size == UINT32_MAX || size < w->size_min ||
	    size > w->size_max)
		return -ERANGE;
	*w->ret = (uint32_t)(bits / 8);
	return 0;
}

int kbtf_find(const uint8_t *btf, size_t len, const struct kbtf_want *want, size_t n,
	      const char **ret_missing)
{
	struct btf_header h;
	struct kbtf b = { 0 };
	uint32_t sid[KBTF_MAX_NAMES] = { 0 }, pos = 0, cap;
	const char *names[KBTF_MAX_NAMES];
	size_t nnames = 0;
	int err = 0;

	*ret_missing = NULL;
	if (len < sizeof(h))
		return -ENOEXEC;
	memcpy(&h, btf, sizeof(h));
	if (h.magic != BTF_MAGIC || h.version != BTF_VERSION || h.hdr_len < sizeof(h) ||
	    h.hdr_len > len || h.type_off > len - h.hdr_len ||
	    h.type_len > len - h.hdr_len - h.type_off || h.str_off > len - h.hdr_len ||
	    h.str_len > len - h.hdr_len - h.str_off || !h.str_len)
		return -ENOEXEC;
	b.types = btf + h.hdr_len + h.type_off;
	b.types_len = h.type_len;
	b.strs = (const char *)btf + h.hdr_len + h.str_off;
	b.strs_len = h.str_len;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;

		while (j < nnames && strcmp(names[j], want[i].type))
			j++;
		if (j == nnames) {
			if (nnames == KBTF_MAX_NAMES)
				return -E2BIG;
			names[nnames++] = want[i].type;
		}
	}
	/* Every record is at least 12 bytes: this many ids at most (id 0 is void). */
	cap = b.types_len / sizeof(struct btf_type) + 1;
	b.grid = malloc(((size_t)cap / KBTF_STEP + 1) * sizeof(*b.grid));
	if (!b.grid)
		return -ENOMEM;
	while (pos < b.types_len) {
		const struct btf_type *t;
		int64_t tail;

		if (b.types_len - pos < sizeof(*t) || b.ntypes + 1 >= cap) {
			err = -ENOEXEC;
			goto out;
		}
		t = (const struct btf_type *)(const void *)(b.types + pos);
		tail = tail_len(rd32(b.types + pos + 4));
		if (tail < 0 || (uint64_t)tail > b.types_len - pos - sizeof(*t)) {
			err = -ENOEXEC;
			goto out;
		}
		if (++b.ntypes % KBTF_STEP == 0 || b.ntypes == 1)
			b.grid[b.ntypes / KBTF_STEP] = pos;
		if (is_aggregate(t) && BTF_INFO_KIND(t->info) == BTF_KIND_STRUCT &&
		    BTF_INFO_VLEN(t->info) && t->name_off) {
			const char *name = name_at(&b, t->name_off);

			for (size_t j = 0; name && j < nnames; j++)
				if (!sid[j] && name[0] == names[j][0] && !strcmp(name, names[j]))
					sid[j] = b.ntypes;
		}
		pos += (uint32_t)(sizeof(*t) + (uint64_t)tail);
	}
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;

		while (strcmp(names[j], want[i].type))
			j++;
		err = sid[j] ? resolve(&b, sid[j], &want[i]) : -ENOENT;
		if (err == -ENOENT && want[i].optional) {
			*want[i].ret = KOFS_NONE;
			err = 0;
		}
		if (err) {
			*ret_missing = want[i].path;
			goto out;
		}
	}
out:
	free(b.grid);
	return err;
}

int kbtf_kofs(const char *path, struct kofs *ret)
{
	const struct kbtf_want want[] = {
		{ "task_struct", "real_cred", 8, 8, &ret->task_real_cred, 0 },
		{ "task_struct", "mm", 8, 8, &ret->task_mm, 0 },
		/* Only x86-64's thread_struct has it; elsewhere no thread state is found. */
		{ "task_struct", "thread.fsbase", 8, 8, &ret->task_fsbase, 1 },
		{ "cred", "uid", 4, 4, &ret->cred_uid, 0 },
		{ "cred", "euid", 4, 4, &ret->cred_euid, 0 },
		{ "cred", "suid", 4, 4, &ret->cred_suid, 0 },
		{ "cred", "gid", 4, 4, &ret->cred_gid, 0 },
		{ "cred", "egid", 4, 4, &ret->cred_egid, 0 },
		{ "cred", "sgid", 4, 4, &ret->cred_sgid, 0 },
		{ "cred", "cap_permitted", 8, 8, &ret->cred_cap_permitted, 0 },
		/* An unsigned long until 6.17 made it mm_flags_t, a bitmap whose first word holds the
		 * same bits (MMF_DUMPABLE and the rest): the first word either way. */
		{ "mm_struct", "flags", 8, 64, &ret->mm_flags, 0 },
		{ "vm_area_struct", "vm_start", 8, 8, &ret->vma_start, 0 },
		{ "vm_area_struct", "vm_pgoff", 8, 8, &ret->vma_pgoff, 0 },
		{ "vm_area_struct", "vm_file", 8, 8, &ret->vma_file, 0 },
		{ "file", "f_inode", 8, 8, &ret->file_inode, 0 },
		{ "inode", "i_size", 8, 8, &ret->inode_size, 0 },
	};
	const char *missing;
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, err, mapped = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (st.st_size <= 0 || (uint64_t)st.st_size > KBTF_MAX_FILE) {
		close(fd);
		return st.st_size > 0 ? -EFBIG : -ENOEXEC;
	}
	/*
	 * Mapped where the kernel allows it (6.16 and later: the pages are its own BTF's, mapped
	 * at once, no copy and no fault); read into the heap before.
	 */
	buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (buf != MAP_FAILED) {
		mapped = 1;
		got = (size_t)st.st_size;
	} else {
		buf = malloc((size_t)st.st_size);
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		while (got < (size_t)st.st_size) {
			ssize_t r = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	close(fd);
	err = kbtf_find(buf, got, want, sizeof(want) / sizeof(want[0]), &missing);
	if (mapped)
		munmap(buf, (size_t)st.st_size);
	else
		free(buf);
	if (err && missing)
		log_warn("the kernel's BTF (%s): no field %s of the size expected", path, missing);
	return err;
}

int kbtf_kernel(struct kofs *ret)
{
	static struct kofs found;
	static int err = 1;

	if (err > 0) {
		err = kbtf_kofs(KBTF_PATH, &found);
		if (err)
			log_warn("the kernel's structure offsets not found in %s: %s", KBTF_PATH,
				 strerror(-err));
	}
	if (!err)
		*ret = found;
	return err;
}
