// SPDX-License-Identifier: Apache-2.0
/* shipper/output/spool.c: order, memory then disk, drops at the bound, restart, corrupt files. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "shipper/output/spool.h"

static char dir[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rover-spool.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(spool, .init = mkdir_tmp, .fini = rm_tmp);

/* A batch of task id with n messages of size bytes each, bytes derived from id. */
static struct spool_batch make(uint64_t id, uint32_t n, size_t size)
{
	struct spool_batch b = { .task_id = id, .samples = id * 10 };

	for (uint32_t i = 0; i < n; i++) {
		uint8_t *p;

		cr_assert_eq(spool_batch__reserve(&b, size, &p), 0);
		for (size_t k = 0; k < size; k++)
			p[k] = (uint8_t)(id + i + k);
	}
	return b;
}

/* Takes the next batch, checks it is make(id, n, size) and marks it sent. */
static void expect_next(struct spool *sp, uint64_t id, uint32_t n, size_t size)
{
	struct spool_batch b;
	const uint8_t *msg;
	size_t off = 0, len;
	uint32_t i = 0;

	cr_assert_eq(spool__take(sp, 0, &b), 0, "no batch where task %llu was expected",
		     (unsigned long long)id);
	cr_assert_eq(b.task_id, id, "got task %llu, expected %llu", (unsigned long long)b.task_id,
		     (unsigned long long)id);
	cr_assert_eq(b.samples, id * 10);
	cr_assert_eq(b.nmsgs, n);
	while (spool_batch__next(&b, &off, &msg, &len) == 1) {
		cr_assert_eq(len, size);
		for (size_t k = 0; k < size; k++)
			cr_assert_eq(msg[k], (uint8_t)(id + i + k));
		i++;
	}
	cr_assert_eq(i, n);
	spool__done(sp, b.seq);
}

static int count_files(const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);

		n += l > s && !strcmp(de->d_name + l - s, suffix);
	}
	closedir(d);
	return n;
}

struct drops {
	int calls, episodes, corrupt;
	uint64_t samples;
	char last_detail[64];
};

static void on_drop(void *ctx, const struct spool_drop *d)
{
	struct drops *x = ctx;

	x->calls++;
	x->episodes += d->first_of_episode;
	if (d->why == SPOOL_DROP_CORRUPT) {
		x->corrupt++;
		snprintf(x->last_detail, sizeof(x->last_detail), "%s", d->detail);
	} else {
		x->samples += d->samples;
	}
}

Test(spool, memory_fifo_order)
{
	struct spool_opts o = { .mem_bytes = 1 << 20 };
	struct spool *sp = spool__new(&o);
	struct spool_batch b;

	cr_assert_not_null(sp);
	for (uint64_t id = 1; id <= 20; id++) {
		b = make(id, (uint32_t)id, 100);
		cr_assert_eq(spool__put(sp, &b), 0);
		cr_assert_null(b.data);
	}
	for (uint64_t id = 1; id <= 20; id++)
		expect_next(sp, id, (uint32_t)id, 100);
	cr_assert_eq(spool__take(sp, 0, &b), -ETIMEDOUT);
	spool__free(sp);
}

Test(spool, untaken_stays_first_and_taken_is_not_dropped)
{
	/* Room for two batches of ~1 KiB in memory, no disk. */
	struct drops x = { 0 };
	struct spool_opts o = { .mem_bytes = 2 * 1030, .on_drop = on_drop, .ctx = &x };
	struct spool *sp = spool__new(&o);
	struct spool_batch b, t;

	cr_assert_not_null(sp);
	b = make(1, 1, 1024);
	cr_assert_eq(spool__put(sp, &b), 0);
	b = make(2, 1, 1024);
	cr_assert_eq(spool__put(sp, &b), 0);
	cr_assert_eq(spool__take(sp, 0, &t), 0);
	cr_assert_eq(t.task_id, 1);
	cr_assert_eq(spool__take(sp, 0, &b), -EBUSY);
	/* Full: the oldest that is not in flight (2) goes, 1 is being sent. */
	b = make(3, 1, 1024);
	cr_assert_eq(spool__put(sp, &b), 0);
	cr_assert_eq(x.calls, 1);
	cr_assert_eq(x.samples, 20);
	spool__untake(sp, t.seq);
	expect_next(sp, 1, 1, 1024);
	expect_next(sp, 3, 1, 1024);
	spool__free(sp);
}

Test(spool, memory_then_disk_in_order)
{
	struct spool_opts o = { .dir = dir, .mem_bytes = 3 * 1030, .disk_bytes = 1 << 20 };
	struct spool *sp = spool__new(&o);
	struct spool_stats st;
	struct spool_batch b;

	cr_assert_not_null(sp);
	for (uint64_t id = 1; id <= 8; id++) {
		b = make(id, 1, 1024);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	spool__stats(sp, &st);
	cr_assert_eq(st.batches, 8);
	cr_assert_eq(st.disk_batches, 5, "memory holds 3 batches, the other 5 go to disk: %llu",
		     (unsigned long long)st.disk_batches);
	cr_assert_eq(count_files(".batch"), 5);
	cr_assert_eq(count_files(".tmp"), 0);
	cr_assert_eq(st.mem_bytes, 3 * 1028);
	/* Sending two from memory makes room: the next put stays in memory, after the disk ones. */
	expect_next(sp, 1, 1, 1024);
	expect_next(sp, 2, 1, 1024);
	b = make(9, 1, 1024);
	cr_assert_eq(spool__put(sp, &b), 0);
	cr_assert_eq(count_files(".batch"), 5);
	for (uint64_t id = 3; id <= 9; id++)
		expect_next(sp, id, 1, 1024);
	cr_assert_eq(count_files(".batch"), 0, "a sent batch's file is removed");
	spool__stats(sp, &st);
	cr_assert_eq(st.batches, 0);
	cr_assert_eq(st.disk_bytes, 0);
	cr_assert_eq(st.mem_bytes, 0);
	cr_assert_eq(st.sent_batches, 9);
	spool__free(sp);
}

Test(spool, drops_oldest_at_the_bound_counted_once_per_episode)
{
	struct drops x = { 0 };
	size_t file = sizeof(struct spool_file_hdr) + 1028;
	struct spool_opts o = { .dir = dir,
				.mem_bytes = 2 * 1028,
				.disk_bytes = 3 * file,
				.on_drop = on_drop,
				.ctx = &x };
	struct spool *sp = spool__new(&o);
	struct spool_stats st;
	struct spool_batch b;

	cr_assert_not_null(sp);
	for (uint64_t id = 1; id <= 9; id++) {
		b = make(id, 1, 1024);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	/* 5 fit (2 in memory, 3 on disk): 1..4 dropped, oldest first. */
	spool__stats(sp, &st);
	cr_assert_eq(st.batches, 5);
	cr_assert_eq(st.dropped_batches, 4);
	cr_assert_eq(st.dropped_samples, 10 + 20 + 30 + 40);
	cr_assert_eq(x.samples, 10 + 20 + 30 + 40);
	cr_assert_eq(x.episodes, 1, "one episode, logged once: %d", x.episodes);
	cr_assert_eq(st.samples, 50 + 60 + 70 + 80 + 90);
	for (uint64_t id = 5; id <= 9; id++)
		expect_next(sp, id, 1, 1024);
	/* A put that needs no drop ends the episode; the next drop starts a new one. */
	for (uint64_t id = 10; id <= 16; id++) {
		b = make(id, 1, 1024);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	cr_assert_eq(x.episodes, 2);
	/* Larger than memory and disk together: dropped itself, counted. */
	b = make(100, 1, 8192);
	cr_assert_eq(spool__put(sp, &b), -E2BIG);
	spool__stats(sp, &st);
	cr_assert_eq(st.dropped_batches, 4 + 2 + 1);
	spool__free(sp);
}

Test(spool, memory_only_drops_oldest)
{
	struct drops x = { 0 };
	struct spool_opts o = { .mem_bytes = 4 * 1028, .on_drop = on_drop, .ctx = &x };
	struct spool *sp = spool__new(&o);
	struct spool_batch b;

	cr_assert_not_null(sp);
	for (uint64_t id = 1; id <= 10; id++) {
		b = make(id, 1, 1024);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	cr_assert_eq(x.calls, 6);
	cr_assert_eq(count_files(".batch"), 0);
	for (uint64_t id = 7; id <= 10; id++)
		expect_next(sp, id, 1, 1024);
	spool__free(sp);
}

Test(spool, restart_picks_up_disk_and_persisted_memory)
{
	/* Batches of 3 x (4 + 1024) bytes: two fit in memory. */
	struct spool_opts o = { .dir = dir, .mem_bytes = 2 * 3084 + 10, .disk_bytes = 1 << 20 };
	struct spool *sp = spool__new(&o);
	struct spool_stats st;
	struct spool_batch b;

	cr_assert_not_null(sp);
	for (uint64_t id = 1; id <= 6; id++) {
		b = make(id, 3, 1024);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	expect_next(sp, 1, 3, 1024);
	/* Shutdown: memory batches (2) go to disk too. */
	cr_assert_eq(spool__persist(sp), 0);
	cr_assert_eq(count_files(".batch"), 5);
	spool__free(sp);

	sp = spool__new(&o);
	cr_assert_not_null(sp);
	spool__stats(sp, &st);
	cr_assert_eq(st.loaded_files, 5);
	cr_assert_eq(st.batches, 5);
	cr_assert_eq(st.samples, 20 + 30 + 40 + 50 + 60);
	b = make(7, 1, 10);
	cr_assert_eq(spool__put(sp, &b), 0);
	for (uint64_t id = 2; id <= 6; id++)
		expect_next(sp, id, 3, 1024);
	expect_next(sp, 7, 1, 10);
	spool__free(sp);
	cr_assert_eq(count_files(".batch"), 0);
}

/* The path of the i-th (0-based) .batch file in name order. */
static void nth_file(int i, char *path, size_t len)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort), k = 0;

	cr_assert_gt(n, 0);
	path[0] = '\0';
	for (int j = 0; j < n; j++) {
		if (strstr(list[j]->d_name, ".batch") && k++ == i)
			snprintf(path, len, "%s/%s", dir, list[j]->d_name);
		free(list[j]);
	}
	free(list);
	cr_assert_neq(path[0], '\0');
}

Test(spool, corrupt_files_dropped_counted_never_crash)
{
	struct drops x = { 0 };
	struct spool_opts o = {
		.dir = dir, .mem_bytes = 0, .disk_bytes = 1 << 20, .on_drop = on_drop, .ctx = &x
	};
	struct spool *sp = spool__new(&o);
	struct spool_stats st;
	struct spool_batch b;
	char path[512];
	int fd;

	cr_assert_not_null(sp);
	for (uint64_t id = 1; id <= 6; id++) {
		b = make(id, 2, 512);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	spool__free(sp);
	cr_assert_eq(count_files(".batch"), 6);

	/* 2: a payload byte flipped (CRC). */
	nth_file(1, path, sizeof(path));
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, "\xff", 1, sizeof(struct spool_file_hdr) + 100), 1);
	close(fd);
	/* 3: truncated. */
	nth_file(2, path, sizeof(path));
	cr_assert_eq(truncate(path, 600), 0);
	/* 4: bad magic. */
	nth_file(3, path, sizeof(path));
	fd = open(path, O_RDWR);
	cr_assert_eq(pwrite(fd, "XXXX", 4, 0), 4);
	close(fd);
	/* 5: shorter than a header. */
	nth_file(4, path, sizeof(path));
	cr_assert_eq(truncate(path, 7), 0);
	/* A temporary file left by a crash, and a file that is none of ours. */
	snprintf(path, sizeof(path), "%s/.00000000000000ff.tmp", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	snprintf(path, sizeof(path), "%s/README", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);

	sp = spool__new(&o);
	cr_assert_not_null(sp);
	spool__stats(sp, &st);
	cr_assert_eq(st.corrupt_files, 3, "truncated, bad magic, short header: %llu",
		     (unsigned long long)st.corrupt_files);
	cr_assert_eq(count_files(".tmp"), 0);
	cr_assert_eq(access(path, F_OK), 0, "files not ours are left alone");
	expect_next(sp, 1, 2, 512);
	/* 2 fails its CRC when read back: dropped, the next one comes instead. */
	expect_next(sp, 6, 2, 512);
	spool__stats(sp, &st);
	cr_assert_eq(st.corrupt_files, 4);
	cr_assert_eq(x.corrupt, 4);
	cr_assert_str_eq(x.last_detail, "CRC mismatch");
	cr_assert_eq(count_files(".batch"), 0);
	spool__free(sp);
}

/* A batch file as a shipper of header version `version` writes it, one message of len bytes. */
static void write_batch_file(uint64_t seq, uint32_t version, uint32_t kind, uint64_t task_id,
			     size_t len)
{
	struct spool_file_hdr h = { .magic = SPOOL_MAGIC,
				    .version = version,
				    .seq = seq,
				    .task_id = task_id,
				    .samples = task_id * 10,
				    .nmsgs = 1,
				    .len = (uint32_t)(4 + len),
				    .kind = kind };
	uint8_t payload[4 + 256];
	char path[512];
	uLong crc = crc32(0L, Z_NULL, 0);
	int fd;

	cr_assert_leq(len, 256);
	payload[0] = (uint8_t)len;
	payload[1] = payload[2] = payload[3] = 0;
	for (size_t k = 0; k < len; k++)
		payload[4 + k] = (uint8_t)(task_id + k);
	crc = crc32(crc, (const Bytef *)&h, sizeof(h));
	h.crc = (uint32_t)crc32(crc, payload, h.len);
	snprintf(path, sizeof(path), "%s/%016llx.batch", dir, (unsigned long long)seq);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	cr_assert_eq(write(fd, payload, h.len), (ssize_t)h.len);
	close(fd);
}

/* A batch's kind (which rpc it goes to) is kept through memory and disk, and a restart. */
Test(spool, kinds_survive_disk_and_restart)
{
	struct spool_opts o = { .dir = dir, .mem_bytes = 600, .disk_bytes = 1 << 20 };
	struct spool *sp = spool__new(&o);
	struct spool_batch b;

	cr_assert_not_null(sp);
	/* Every kind twice; the first batch fits in memory, the others go to disk. */
	const uint64_t k = SPOOL_KIND_MAX;

	for (uint64_t id = 1; id <= 2 * k; id++) {
		b = make(id, 1, 500);
		b.kind = (uint32_t)((id - 1) % SPOOL_KIND_MAX);
		cr_assert_eq(spool__put(sp, &b), 0);
	}
	b = make(2 * k + 1, 1, 10);
	b.kind = SPOOL_KIND_MAX;
	cr_assert_eq(spool__put(sp, &b), -EINVAL, "unknown kind taken");
	cr_assert_null(b.data);
	for (uint64_t id = 1; id <= k; id++) {
		cr_assert_eq(spool__take(sp, 0, &b), 0);
		cr_assert_eq(b.task_id, id);
		cr_assert_eq(b.kind, (uint32_t)(id - 1), "task %llu: kind %u",
			     (unsigned long long)id, b.kind);
		spool__done(sp, b.seq);
	}
	cr_assert_eq(spool__persist(sp), 0);
	spool__free(sp);

	sp = spool__new(&o);
	cr_assert_not_null(sp);
	for (uint64_t id = k + 1; id <= 2 * k; id++) {
		cr_assert_eq(spool__take(sp, 0, &b), 0);
		cr_assert_eq(b.task_id, id);
		cr_assert_eq(b.kind, (uint32_t)(id - k - 1));
		/* Given back and taken again: read from its file a second time. */
		spool__untake(sp, b.seq);
		cr_assert_eq(spool__take(sp, 0, &b), 0);
		cr_assert_eq(b.kind, (uint32_t)(id - k - 1));
		spool__done(sp, b.seq);
	}
	spool__free(sp);
}

/* Files of an older shipper (version 1, no kind) are profiles; an unknown kind is corrupt. */
Test(spool, version_1_files_load_as_profiles)
{
	struct drops x = { 0 };
	struct spool_opts o = { .dir = dir,
				.mem_bytes = 1 << 20,
				.disk_bytes = 1 << 20,
				.on_drop = on_drop,
				.ctx = &x };
	struct spool_stats st;
	struct spool_batch b;
	struct spool *sp;

	write_batch_file(0x10, 1, 0, 1, 100);
	write_batch_file(0x11, SPOOL_VERSION, SPOOL_KIND_MAX, 2, 100);
	write_batch_file(0x12, SPOOL_VERSION, SPOOL_LOGS, 3, 100);
	write_batch_file(0x13, SPOOL_VERSION + 1, 0, 4, 100);
	sp = spool__new(&o);
	cr_assert_not_null(sp);
	spool__stats(sp, &st);
	cr_assert_eq(st.loaded_files, 2);
	cr_assert_eq(st.corrupt_files, 2, "unknown kind, unknown version");
	cr_assert_eq(x.corrupt, 2);
	cr_assert_eq(spool__take(sp, 0, &b), 0);
	cr_assert_eq(b.task_id, 1);
	cr_assert_eq(b.kind, SPOOL_PROFILE);
	cr_assert_eq(b.nmsgs, 1);
	cr_assert_eq(b.data[4 + 99], (uint8_t)(1 + 99), "payload read back");
	spool__done(sp, b.seq);
	cr_assert_eq(spool__take(sp, 0, &b), 0);
	cr_assert_eq(b.task_id, 3);
	cr_assert_eq(b.kind, SPOOL_LOGS);
	spool__done(sp, b.seq);
	/* New batches come after the loaded ones and are written in the new version. */
	b = make(5, 1, 10);
	cr_assert_eq(spool__put(sp, &b), 0);
	cr_assert_gt(b.seq, 0x12);
	spool__free(sp);
	cr_assert_eq(count_files(".batch"), 0);
}

Test(spool, interrupt_ends_waits_not_pending_batches)
{
	struct spool_opts o = { .mem_bytes = 1 << 20 };
	struct spool *sp = spool__new(&o);
	struct spool_batch b;

	cr_assert_not_null(sp);
	b = make(1, 1, 10);
	cr_assert_eq(spool__put(sp, &b), 0);
	spool__interrupt(sp);
	cr_assert_eq(spool__sleep(sp, 10000), -EINTR);
	expect_next(sp, 1, 1, 10);
	cr_assert_eq(spool__take(sp, -1, &b), -EINTR);
	spool__free(sp);
}

struct producer {
	struct spool *sp;
	int n;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (int i = 1; i <= p->n; i++) {
		struct spool_batch b = make((uint64_t)i, 1, 64);

		cr_assert_eq(spool__put(p->sp, &b), 0);
	}
	return NULL;
}

Test(spool, threads_put_and_take_in_order)
{
	/* 16 batches in memory, the rest through disk when the taker falls behind. */
	struct spool_opts o = { .dir = dir, .mem_bytes = 16 * 68, .disk_bytes = 1 << 30 };
	struct producer p = { .n = 300 };
	pthread_t th;

	p.sp = spool__new(&o);
	cr_assert_not_null(p.sp);
	cr_assert_eq(pthread_create(&th, NULL, produce, &p), 0);
	for (int i = 1; i <= p.n; i++) {
		struct spool_batch b;

		cr_assert_eq(spool__take(p.sp, 10000, &b), 0);
		cr_assert_eq(b.task_id, (uint64_t)i);
		spool__done(p.sp, b.seq);
	}
	pthread_join(th, NULL);
	spool__free(p.sp);
}
