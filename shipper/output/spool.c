// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/util.h"
#include "shipper/output/spool.h"

#define NAME_LEN 32 /* "%016" PRIx64 ".batch" and the temporary ".%016" PRIx64 ".tmp" */
/* Files found at start beyond this many are left alone (a directory that is not ours). */
#define MAX_LOADED 1000000

struct entry {
	struct entry *next;
	uint64_t seq, task_id, samples;
	uint32_t nmsgs, len, kind;
	uint8_t *data; /* memory batch, or a taken disk batch read back */
	int on_disk;   /* a file holds it (memory batches persisted at shutdown may have both) */
	int taken;
};

struct spool {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a put, an interrupt */
	struct spool_opts opts;
	int dirfd; /* -1: memory only */
	struct entry *head, *tail;
	uint64_t next_seq;
	uint64_t mem_used, disk_used;
	int interrupted;
	int dropping; /* in a drop episode */
	struct spool_stats st;
};

static uint64_t file_size(uint32_t len)
{
	return sizeof(struct spool_file_hdr) + (uint64_t)len;
}

static void name_of(char name[NAME_LEN], uint64_t seq)
{
	snprintf(name, NAME_LEN, "%016" PRIx64 ".batch", seq);
}

static uint32_t batch_crc(const struct spool_file_hdr *h, const uint8_t *data, uint32_t len)
{
	struct spool_file_hdr z = *h;
	uLong crc = crc32(0L, Z_NULL, 0);

	z.crc = 0;
	crc = crc32(crc, (const Bytef *)&z, sizeof(z));
	crc = crc32(crc, data, len);
	return (uint32_t)crc;
}

/* Called with the lock held. */
static void report(struct spool *sp, const struct spool_drop *d)
{
	if (sp->opts.on_drop)
		sp->opts.on_drop(sp->opts.ctx, d);
}

static void unlink_entry(struct spool *sp, struct entry *e, struct entry *prev)
{
	if (prev)
		prev->next = e->next;
	else
		sp->head = e->next;
	if (sp->tail == e)
		sp->tail = prev;
	sp->st.batches--;
	sp->st.samples -= e->samples;
	if (e->on_disk) {
		char name[NAME_LEN];

		name_of(name, e->seq);
		unlinkat(sp->dirfd, name, 0);
		sp->disk_used -= file_size(e->len);
		sp->st.disk_batches--;
	} else {
		sp->mem_used -= e->len;
	}
	free(e->data);
	free(e);
}

static struct entry *find(struct spool *sp, uint64_t seq, struct entry **ret_prev)
{
	struct entry *prev = NULL;

	for (struct entry *e = sp->head; e; prev = e, e = e->next) {
		if (e->seq == seq) {
			*ret_prev = prev;
			return e;
		}
	}
	return NULL;
}

/* Drops the oldest batch older than stop (NULL: any) that is not taken. 0, or -ENOENT. */
static int drop_oldest(struct spool *sp, const struct entry *stop)
{
	struct entry *prev = NULL, *e;
	struct spool_drop d = { .why = SPOOL_DROP_BOUND };

	for (e = sp->head; e && e != stop && e->taken; prev = e, e = e->next)
		;
	if (!e || e == stop)
		return -ENOENT;
	d.task_id = e->task_id;
	d.samples = e->samples;
	d.first_of_episode = !sp->dropping;
	sp->dropping = 1;
	sp->st.dropped_batches++;
	sp->st.dropped_samples += e->samples;
	report(sp, &d);
	unlink_entry(sp, e, prev);
	return 0;
}

/* Writes a batch's file: temporary name, sync, rename. 0 or -errno (nothing left behind). */
static int write_file(struct spool *sp, const struct entry *e)
{
	struct spool_file_hdr h = { .magic = SPOOL_MAGIC,
				    .version = SPOOL_VERSION,
				    .seq = e->seq,
				    .task_id = e->task_id,
				    .samples = e->samples,
				    .nmsgs = e->nmsgs,
				    .len = e->len,
				    .kind = e->kind };
	char tmp[NAME_LEN], name[NAME_LEN];
	int fd, err;

	h.crc = batch_crc(&h, e->data, e->len);
	snprintf(tmp, sizeof(tmp), ".%016" PRIx64 ".tmp", e->seq);
	name_of(name, e->seq);
	fd = openat(sp->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	err = write_full(fd, &h, sizeof(h));
	if (!err)
		err = write_full(fd, e->data, e->len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(sp->dirfd, tmp, sp->dirfd, name))
		err = -errno;
	if (err) {
		unlinkat(sp->dirfd, tmp, 0);
		return err;
	}
	/* The rename itself is durable once the directory is synced. */
	fsync(sp->dirfd);
	return 0;
}

/* Moves memory entry e to disk. 0 or -errno (e unchanged). */
static int to_disk(struct spool *sp, struct entry *e)
{
	int err = write_file(sp, e);

	if (err) {
		sp->st.disk_errors++;
		return err;
	}
	e->on_disk = 1;
	sp->mem_used -= e->len;
	sp->disk_used += file_size(e->len);
	sp->st.disk_batches++;
	if (!e->taken) {
		free(e->data);
		e->data = NULL;
	}
	return 0;
}

static void append(struct spool *sp, struct entry *e)
{
	e->next = NULL;
	if (sp->tail)
		sp->tail->next = e;
	else
		sp->head = e;
	sp->tail = e;
	sp->st.batches++;
	sp->st.samples += e->samples;
}

/* Inserts a loaded file's entry in seq order (files come from readdir in any order). */
static void insert_sorted(struct spool *sp, struct entry *e)
{
	struct entry *prev = NULL, *cur = sp->head;

	while (cur && cur->seq < e->seq) {
		prev = cur;
		cur = cur->next;
	}
	e->next = cur;
	if (prev)
		prev->next = e;
	else
		sp->head = e;
	if (!cur)
		sp->tail = e;
	sp->st.batches++;
	sp->st.samples += e->samples;
}

static void report_corrupt(struct spool *sp, const char *name, const char *detail)
{
	struct spool_drop d = { .why = SPOOL_DROP_CORRUPT, .file = name, .detail = detail };

	sp->st.corrupt_files++;
	report(sp, &d);
}

static void drop_corrupt(struct spool *sp, const char *name, const char *detail)
{
	report_corrupt(sp, name, detail);
	unlinkat(sp->dirfd, name, 0);
}

static int parse_name(const char *name, uint64_t *ret_seq)
{
	char *end;
	uint64_t seq;

	if (strlen(name) != 22 || strcmp(name + 16, ".batch"))
		return -EINVAL;
	for (int i = 0; i < 16; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return -EINVAL;
	errno = 0;
	seq = strtoull(name, &end, 16);
	/* Far below the wrap: a crafted name must not make new batches reuse loaded ones' seqs. */
	if (errno || end != name + 16 || seq >= (1ull << 62))
		return -EINVAL;
	*ret_seq = seq;
	return 0;
}

/* Reads a file's header and checks it against the file size. 0, or -EBADMSG with *detail. */
static int read_header(int fd, uint64_t seq, struct spool_file_hdr *h, const char **detail)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st))
		return -errno;
	n = pread(fd, h, sizeof(*h), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(*h)) {
		*detail = "truncated header";
		return -EBADMSG;
	}
	if (h->magic != SPOOL_MAGIC) {
		*detail = "bad magic";
		return -EBADMSG;
	}
	if (h->version != SPOOL_VERSION && h->version != 1) {
		*detail = "unknown version";
		return -EBADMSG;
	}
	if (h->version == 1) {
		h->kind = SPOOL_PROFILE; /* its padding: 0, and covered as such by its CRC */
	} else if (h->kind >= SPOOL_KIND_MAX) {
		*detail = "unknown kind";
		return -EBADMSG;
	}
	if (h->seq != seq || h->len > SPOOL_MAX_BATCH) {
		*detail = "bad header";
		return -EBADMSG;
	}
	if ((uint64_t)st.st_size != file_size(h->len)) {
		*detail = (uint64_t)st.st_size < file_size(h->len) ? "truncated" : "trailing bytes";
		return -EBADMSG;
	}
	return 0;
}

static void load_one(struct spool *sp, const char *name)
{
	struct spool_file_hdr h;
	const char *detail = "unreadable";
	struct entry *e;
	uint64_t seq;
	int fd, err;

	if (name[0] == '.' && strstr(name, ".tmp")) {
		unlinkat(sp->dirfd, name, 0); /* a write cut short by a crash */
		return;
	}
	if (parse_name(name, &seq))
		return;
	fd = openat(sp->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		drop_corrupt(sp, name, "cannot open");
		return;
	}
	err = read_header(fd, seq, &h, &detail);
	close(fd);
	if (err) {
		drop_corrupt(sp, name, detail);
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return; /* stays on disk for the next start */
	*e = (struct entry){ .seq = seq,
			     .task_id = h.task_id,
			     .samples = h.samples,
			     .nmsgs = h.nmsgs,
			     .len = h.len,
			     .kind = h.kind,
			     .on_disk = 1 };
	insert_sorted(sp, e);
	sp->disk_used += file_size(h.len);
	sp->st.disk_batches++;
	sp->st.loaded_files++;
	if (seq >= sp->next_seq)
		sp->next_seq = seq + 1;
}

static int load_dir(struct spool *sp)
{
	int fd = dup(sp->dirfd);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int err = -errno;

		close(fd);
		return err;
	}
	while ((de = readdir(d)) && sp->st.loaded_files < MAX_LOADED)
		if (de->d_type == DT_REG || de->d_type == DT_UNKNOWN)
			load_one(sp, de->d_name);
	closedir(d);
	/* The bound may have shrunk since the files were written. */
	while (sp->disk_used > sp->opts.disk_bytes && !drop_oldest(sp, NULL))
		;
	return 0;
}

/*
 * Moves *fd to the number want, which must be free: the shipper's seccomp policy names it
 * (SPOOL_DIR_FD), so taking over a descriptor already there would hand its rights to another
 * file.
 */
static int move_fd(int *fd, int want)
{
	if (fcntl(want, F_GETFD) >= 0)
		return -EBUSY;
	if (dup3(*fd, want, O_CLOEXEC) < 0)
		return -errno;
	close(*fd);
	*fd = want;
	return 0;
}

int spool__dirfd(struct spool *sp)
{
	return sp->dirfd;
}

struct spool *spool__new(const struct spool_opts *opts)
{
	struct spool *sp;
	pthread_condattr_t ca;
	int err;

	if (!opts->mem_bytes && (!opts->dir || !opts->dir[0] || !opts->disk_bytes)) {
		errno = EINVAL;
		return NULL;
	}
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return NULL;
	sp->opts = *opts;
	sp->opts.dir = NULL;
	sp->dirfd = -1;
	sp->next_seq = 1;
	pthread_mutex_init(&sp->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sp->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (opts->dir && opts->dir[0]) {
		sp->dirfd = open(opts->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sp->dirfd < 0 && errno == ENOENT && !mkdir(opts->dir, 0700))
			sp->dirfd = open(opts->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sp->dirfd < 0) {
			err = errno;
			spool__free(sp);
			errno = err;
			return NULL;
		}
		err = opts->fixed_dirfd > 0 ? move_fd(&sp->dirfd, opts->fixed_dirfd) : 0;
		if (!err)
			err = load_dir(sp);
		if (err) {
			spool__free(sp);
			errno = -err;
			return NULL;
		}
	} else {
		sp->opts.disk_bytes = 0;
	}
	return sp;
}

void spool__free(struct spool *sp)
{
	if (!sp)
		return;
	while (sp->head) {
		struct entry *e = sp->head;

		sp->head = e->next;
		free(e->data);
		free(e);
	}
	if (sp->dirfd >= 0)
		close(sp->dirfd);
	pthread_cond_destroy(&sp->cond);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

static int check_batch(const struct spool_batch *b)
{
	size_t off = 0, len;
	const uint8_t *msg;
	uint32_t n = 0;
	int r;

	while ((r = spool_batch__next(b, &off, &msg, &len)) == 1)
		n++;
	return r || n != b->nmsgs ? -EINVAL : 0;
}

int spool__put(struct spool *sp, struct spool_batch *b)
{
	struct entry *e;
	int err = 0;

	if (!b->data || !b->len || b->kind >= SPOOL_KIND_MAX || check_batch(b)) {
		free(b->data);
		b->data = NULL;
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		free(b->data);
		b->data = NULL;
		return -ENOMEM;
	}
	*e = (struct entry){ .task_id = b->task_id,
			     .samples = b->samples,
			     .nmsgs = b->nmsgs,
			     .len = b->len,
			     .kind = b->kind,
			     .data = b->data };
	b->data = NULL;

	pthread_mutex_lock(&sp->lock);
	e->seq = sp->next_seq++;
	b->seq = e->seq;
	if (e->len > sp->opts.mem_bytes && file_size(e->len) > sp->opts.disk_bytes) {
		struct spool_drop d = { .why = SPOOL_DROP_TOO_BIG,
					.task_id = e->task_id,
					.samples = e->samples };

		sp->st.dropped_batches++;
		sp->st.dropped_samples += e->samples;
		report(sp, &d);
		err = -E2BIG;
		goto cleanup;
	}
	{
		int dropped = 0, disk_ok = sp->dirfd >= 0;

		for (;;) {
			if (sp->mem_used + e->len <= sp->opts.mem_bytes) {
				sp->mem_used += e->len;
				break;
			}
			if (disk_ok && sp->disk_used + file_size(e->len) <= sp->opts.disk_bytes) {
				sp->mem_used += e->len; /* to_disk moves it from memory to disk */
				if (!to_disk(sp, e))
					break;
				sp->mem_used -= e->len;
				disk_ok = 0;
				continue;
			}
			if (drop_oldest(sp, NULL)) {
				struct spool_drop d = { .why = SPOOL_DROP_BOUND,
							.task_id = e->task_id,
							.samples = e->samples,
							.first_of_episode = !sp->dropping };

				sp->dropping = 1;
				sp->st.dropped_batches++;
				sp->st.dropped_samples += e->samples;
				report(sp, &d);
				err = -E2BIG;
				goto cleanup;
			}
			dropped = 1;
		}
		if (!dropped)
			sp->dropping = 0;
	}
	append(sp, e);
	sp->st.put_batches++;
	sp->st.put_samples += e->samples;
	e = NULL;
	pthread_cond_broadcast(&sp->cond);
cleanup:
	pthread_mutex_unlock(&sp->lock);
	if (e) {
		free(e->data);
		free(e);
	}
	return err;
}

static void deadline_after(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Reads a taken disk entry's file back, checked. Called without the lock. */
static int read_back(int dirfd, const struct entry *e, uint8_t **ret_data, const char **detail)
{
	struct spool_file_hdr h;
	char name[NAME_LEN];
	uint8_t *data = NULL;
	size_t got = 0;
	int fd, err;

	name_of(name, e->seq);
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		*detail = "cannot open";
		return -EBADMSG;
	}
	err = read_header(fd, e->seq, &h, detail);
	if (err)
		goto cleanup;
	if (h.len != e->len || h.nmsgs != e->nmsgs || h.kind != e->kind) {
		*detail = "changed since it was found";
		err = -EBADMSG;
		goto cleanup;
	}
	data = malloc(h.len ? h.len : 1);
	if (!data) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (got < h.len) {
		ssize_t n = pread(fd, data + got, h.len - got, (off_t)(sizeof(h) + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*detail = "truncated";
			err = -EBADMSG;
			goto cleanup;
		}
		got += (size_t)n;
	}
	if (batch_crc(&h, data, h.len) != h.crc) {
		*detail = "CRC mismatch";
		err = -EBADMSG;
		goto cleanup;
	}
	{
		struct spool_batch b = { .nmsgs = h.nmsgs, .len = h.len, .data = data };

		if (check_batch(&b)) {
			*detail = "bad message framing";
			err = -EBADMSG;
			goto cleanup;
		}
	}
	*ret_data = data;
	data = NULL;
cleanup:
	free(data);
	close(fd);
	return err;
}

int spool__take(struct spool *sp, int timeout_ms, struct spool_batch *ret)
{
	struct timespec ts;
	int err = 0;

	if (timeout_ms >= 0)
		deadline_after(&ts, (uint64_t)timeout_ms);
	pthread_mutex_lock(&sp->lock);
	for (;;) {
		struct entry *e = sp->head;
		const char *detail = "unreadable";
		uint8_t *data = NULL;

		if (e && e->taken) {
			err = -EBUSY;
			break;
		}
		if (!e) {
			if (sp->interrupted) {
				err = -EINTR;
				break;
			}
			if (timeout_ms < 0)
				pthread_cond_wait(&sp->cond, &sp->lock);
			else if (pthread_cond_timedwait(&sp->cond, &sp->lock, &ts) == ETIMEDOUT) {
				err = sp->head ? 0 : -ETIMEDOUT;
				if (err)
					break;
			}
			continue;
		}
		e->taken = 1;
		if (!e->data) {
			pthread_mutex_unlock(&sp->lock);
			err = read_back(sp->dirfd, e, &data, &detail);
			pthread_mutex_lock(&sp->lock);
			/* Any failure to read it back (not only a bad header or CRC: EIO, a FIFO
			 * put in its place) drops it: retrying the head forever would hold every
			 * batch behind it, and spin. */
			if (err && err != -ENOMEM) {
				char name[NAME_LEN];
				struct entry *prev = NULL;

				name_of(name, e->seq);
				find(sp, e->seq, &prev);
				report_corrupt(sp, name, err == -EBADMSG ? detail : strerror(-err));
				unlink_entry(sp, e, prev);
				err = 0;
				continue;
			}
			if (err) {
				e->taken = 0;
				break;
			}
			e->data = data;
		}
		*ret = (struct spool_batch){ .seq = e->seq,
					     .task_id = e->task_id,
					     .samples = e->samples,
					     .nmsgs = e->nmsgs,
					     .len = e->len,
					     .kind = e->kind,
					     .data = e->data };
		break;
	}
	pthread_mutex_unlock(&sp->lock);
	return err;
}

void spool__done(struct spool *sp, uint64_t seq)
{
	struct entry *prev, *e;

	pthread_mutex_lock(&sp->lock);
	e = find(sp, seq, &prev);
	if (e && e->taken) {
		sp->st.sent_batches++;
		sp->st.sent_samples += e->samples;
		unlink_entry(sp, e, prev);
	}
	pthread_mutex_unlock(&sp->lock);
}

void spool__untake(struct spool *sp, uint64_t seq)
{
	struct entry *prev, *e;

	pthread_mutex_lock(&sp->lock);
	e = find(sp, seq, &prev);
	if (e && e->taken) {
		e->taken = 0;
		/* A file's copy in memory would count against nothing: read it again next time. */
		if (e->on_disk) {
			free(e->data);
			e->data = NULL;
		}
	}
	pthread_mutex_unlock(&sp->lock);
}

int spool__sleep(struct spool *sp, uint64_t ms)
{
	struct timespec ts;
	int err = 0;

	deadline_after(&ts, ms);
	pthread_mutex_lock(&sp->lock);
	while (!sp->interrupted) {
		if (pthread_cond_timedwait(&sp->cond, &sp->lock, &ts) == ETIMEDOUT)
			break;
	}
	if (sp->interrupted)
		err = -EINTR;
	pthread_mutex_unlock(&sp->lock);
	return err;
}

void spool__interrupt(struct spool *sp)
{
	pthread_mutex_lock(&sp->lock);
	sp->interrupted = 1;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
}

int spool__persist(struct spool *sp)
{
	int err = 0;

	if (sp->dirfd < 0)
		return -ENOTDIR;
	pthread_mutex_lock(&sp->lock);
	for (struct entry *e = sp->head; e; e = e->next) {
		if (e->on_disk)
			continue;
		/* Batches older than e are on disk by now: those make room, never e itself. */
		while (sp->disk_used + file_size(e->len) > sp->opts.disk_bytes &&
		       !drop_oldest(sp, e))
			;
		if (sp->disk_used + file_size(e->len) > sp->opts.disk_bytes)
			continue;
		err = to_disk(sp, e);
		if (err)
			break;
	}
	pthread_mutex_unlock(&sp->lock);
	return err;
}

void spool__stats(struct spool *sp, struct spool_stats *ret)
{
	pthread_mutex_lock(&sp->lock);
	*ret = sp->st;
	ret->mem_bytes = sp->mem_used;
	ret->disk_bytes = sp->disk_used;
	pthread_mutex_unlock(&sp->lock);
}

int spool_batch__next(const struct spool_batch *b, size_t *off, const uint8_t **ret_msg,
		      size_t *ret_len)
{
	uint32_t n;

	if (*off == b->len)
		return 0;
	if (*off > b->len || b->len - *off < 4)
		return -EBADMSG;
	n = (uint32_t)b->data[*off] | (uint32_t)b->data[*off + 1] << 8 |
	    (uint32_t)b->data[*off + 2] << 16 | (uint32_t)b->data[*off + 3] << 24;
	if (n > b->len - *off - 4)
		return -EBADMSG;
	*ret_msg = b->data + *off + 4;
	*ret_len = n;
	*off += 4 + (size_t)n;
	return 1;
}

int spool_batch__reserve(struct spool_batch *b, size_t len, uint8_t **ret_msg)
{
	size_t need = (size_t)b->len + 4 + len;
	uint8_t *p;

	if (need > SPOOL_MAX_BATCH)
		return -E2BIG;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < need)
			cap *= 2;
		if (cap > SPOOL_MAX_BATCH)
			cap = SPOOL_MAX_BATCH;
		p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = (uint32_t)cap;
	}
	p = b->data + b->len;
	p[0] = (uint8_t)len;
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)(len >> 16);
	p[3] = (uint8_t)(len >> 24);
	b->len = (uint32_t)need;
	b->nmsgs++;
	*ret_msg = p + 4;
	return 0;
}
