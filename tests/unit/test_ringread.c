// SPDX-License-Identifier: Apache-2.0
/*
 * worker/ringread.c against a real BPF ring buffer: a tiny syscall program (BPF_PROG_RUN) puts
 * records of chosen sizes in, the reader must give every one back whole and in order, across
 * the ring's end too, and map the data once (its resident set grows by the ring, not twice).
 * Needs CAP_BPF, as every test of the worker's BPF.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "worker/ringread.h"

#define DATA_MAX 4000

struct ring_fixture {
	int ring_fd, data_fd, prog_fd;
	uint8_t data[DATA_MAX];
};

/*
 * The producer: bpf_ringbuf_output(ring, data map's value, ctx->len, 0), its result in r0;
 * -1 for a length past DATA_MAX.
 */
static int load_producer(int ring_fd, int data_fd)
{
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = 6, .src_reg = 1 },
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = 3, .src_reg = 6, .off = 0 },
		{ .code = BPF_JMP | BPF_JGT | BPF_K, .dst_reg = 3, .off = 7, .imm = DATA_MAX },
		{ .code = BPF_LD | BPF_DW | BPF_IMM,
		  .dst_reg = 2,
		  .src_reg = BPF_PSEUDO_MAP_VALUE,
		  .imm = data_fd },
		{ .imm = 0 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM,
		  .dst_reg = 1,
		  .src_reg = BPF_PSEUDO_MAP_FD,
		  .imm = ring_fd },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 4, .imm = 0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_ringbuf_output },
		{ .code = BPF_JMP | BPF_EXIT },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = -1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .prog_flags = BPF_F_SLEEPABLE);

	return bpf_prog_load(BPF_PROG_TYPE_SYSCALL, "ringfill", "GPL", prog,
			     sizeof(prog) / sizeof(prog[0]), &o);
}

static void fixture_open(struct ring_fixture *f, uint32_t ring_bytes)
{
	f->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ringtest", 0, 0, ring_bytes, NULL);
	cr_assert_geq(f->ring_fd, 0, "ring buffer map: %s", strerror(errno));
	f->data_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ringdata", 4, DATA_MAX, 1, NULL);
	cr_assert_geq(f->data_fd, 0, "array map: %s", strerror(errno));
	f->prog_fd = load_producer(f->ring_fd, f->data_fd);
	cr_assert_geq(f->prog_fd, 0, "producer program: %s", strerror(errno));
}

static void fixture_close(struct ring_fixture *f)
{
	close(f->prog_fd);
	close(f->data_fd);
	close(f->ring_fd);
}

/* Record seq's bytes: its number, then a pattern of it. */
static void fill(uint8_t *b, uint32_t seq, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seq * 31 + i);
	if (len >= 4)
		memcpy(b, &seq, 4);
}

/* Record seq of len bytes into the ring: the helper's result (0, or -EAGAIN when full). */
static int produce(struct ring_fixture *f, uint32_t seq, uint32_t len)
{
	uint32_t key = 0, ctx[2] = { len, 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = sizeof(ctx));

	fill(f->data, seq, DATA_MAX);
	cr_assert_eq(bpf_map_update_elem(f->data_fd, &key, f->data, 0), 0);
	cr_assert_eq(bpf_prog_test_run_opts(f->prog_fd, &o), 0, "run: %s", strerror(errno));
	return (int)o.retval;
}

struct seen {
	uint32_t next_seq, bad, stop_at;
	uint32_t lens[64];
};

static int check_record(void *ctx, void *data, size_t len)
{
	struct seen *s = ctx;
	uint8_t want[DATA_MAX];
	uint32_t seq = s->next_seq++;

	fill(want, seq, (uint32_t)len);
	if (len != s->lens[seq % 64] || memcmp(want, data, len))
		s->bad++;
	if (s->stop_at && seq + 1 == s->stop_at)
		return -EINTR;
	return 0;
}

Test(ringread, records_across_the_end_come_back_whole_and_in_order)
{
	struct ring_fixture f;
	struct seen s = { 0 };
	struct ringread *r;
	uint32_t seq = 0;

	fixture_open(&f, 4096);
	r = ringread__new(f.ring_fd, 4096, check_record, &s);
	cr_assert_not_null(r, "%s", strerror(errno));
	/* 3 of 1000 bytes (1008 each with the header), then 1500 bytes from 3024: past 4096. */
	for (int i = 0; i < 3; i++) {
		s.lens[seq % 64] = 1000;
		cr_assert_eq(produce(&f, seq++, 1000), 0);
	}
	cr_assert_eq(ringread__avail(r), 3 * 1008);
	cr_assert_eq(ringread__consume(r), 3);
	cr_assert_eq(ringread__avail(r), 0);
	for (int round = 0; round < 20; round++) {
		uint32_t len = 1500 + (uint32_t)round * 37 % 1000;

		s.lens[seq % 64] = len;
		cr_assert_eq(produce(&f, seq++, len), 0);
		cr_assert_eq(ringread__consume(r), 1);
	}
	cr_assert_eq(s.next_seq, seq);
	cr_assert_eq(s.bad, 0, "%u records came back altered", s.bad);
	ringread__free(r);
	fixture_close(&f);
}

Test(ringread, a_full_ring_refuses_and_gives_back_all_it_took)
{
	struct ring_fixture f;
	struct seen s = { 0 };
	struct ringread *r;
	uint32_t seq = 0, taken = 0;

	fixture_open(&f, 8192);
	r = ringread__new(f.ring_fd, 8192, check_record, &s);
	cr_assert_not_null(r);
	for (int round = 0; round < 5; round++) {
		uint32_t before = seq;

		/* Fill until the kernel refuses, read all back, again: the end crossed each time. */
		for (;;) {
			uint32_t len = 700 + seq * 13 % 300;
			int rc;

			s.lens[seq % 64] = len;
			rc = produce(&f, seq, len);
			if (rc) {
				cr_assert_eq(rc, -EAGAIN);
				break;
			}
			seq++;
		}
		cr_assert_gt(seq - before, 5);
		taken += seq - before;
		cr_assert_eq(ringread__consume(r), (int)(seq - before));
	}
	cr_assert_eq(s.next_seq, taken);
	cr_assert_eq(s.bad, 0);
	ringread__free(r);
	fixture_close(&f);
}

Test(ringread, a_failing_reader_stops_and_the_rest_waits)
{
	struct ring_fixture f;
	struct seen s = { .stop_at = 2 };
	struct ringread *r;

	fixture_open(&f, 4096);
	r = ringread__new(f.ring_fd, 4096, check_record, &s);
	cr_assert_not_null(r);
	for (uint32_t seq = 0; seq < 3; seq++) {
		s.lens[seq] = 100;
		cr_assert_eq(produce(&f, seq, 100), 0);
	}
	/* The second record's reader fails: it is consumed (as libbpf does), the third is not. */
	cr_assert_eq(ringread__consume(r), -EINTR);
	cr_assert_eq(ringread__avail(r), 112);
	s.stop_at = 0;
	cr_assert_eq(ringread__consume(r), 1);
	cr_assert_eq(s.next_seq, 3);
	cr_assert_eq(s.bad, 0);
	ringread__free(r);
	fixture_close(&f);
}

static long rss_file_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *fp = fopen("/proc/self/status", "r");

	cr_assert_not_null(fp);
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "RssFile: %ld", &kb) == 1)
			break;
	fclose(fp);
	return kb;
}

Test(ringread, the_data_is_mapped_once)
{
	struct ring_fixture f;
	struct seen s = { 0 };
	struct ringread *r;
	long before, after;

	fixture_open(&f, 16u << 20);
	before = rss_file_kb();
	r = ringread__new(f.ring_fd, 16u << 20, check_record, &s);
	cr_assert_not_null(r);
	after = rss_file_kb();
	/* The kernel maps every page at mmap: 16 MiB and two pages, where libbpf's reader maps 32. */
	cr_assert_geq(after - before, 16 * 1024, "mapped %ld kB", after - before);
	cr_assert_lt(after - before, 17 * 1024, "mapped %ld kB: the data twice?", after - before);
	ringread__free(r);
	fixture_close(&f);
}

Test(ringread, sizes_the_kernel_cannot_have_are_refused)
{
	cr_assert_null(ringread__new(-1, 0, check_record, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(ringread__new(-1, 12288, check_record, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(ringread__new(-1, 1000, check_record, NULL));
	cr_assert_eq(errno, EINVAL);
}
