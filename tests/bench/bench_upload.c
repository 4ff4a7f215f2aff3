// SPDX-License-Identifier: Apache-2.0
/*
 * The cost of the backend upload per 1000 distinct stacks: CPU (getrusage of the whole
 * process, gRPC's threads included) to build a flush's batch from named stacks, and to send
 * it through the spool and the upload thread to an OAP; bytes on the wire (protobuf messages
 * plus gRPC's 5-byte message prefix; HTTP/2 frame headers not counted).
 *
 *   bench_upload HOST:PORT [ROUNDS]
 *
 * Stacks: user stacks 12 to 40 frames deep with C++-like names of 20 to 60 characters, half
 * of the counts with a kernel stack of 6 to 14 frames, as a busy service shows them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/msg.h"
#include "common/util.h"
#include "shipper/output/spool.h"
#include "shipper/output/upload.h"

#define NSTACKS 1000
#define NNAMES 4000

static char *names[NNAMES];

struct bstack {
	uint32_t nr;
	char *frames[ROVER_MAX_STACK_DEPTH];
};

static struct bstack ustacks[NSTACKS], kstacks[NSTACKS];

static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void make_names(void)
{
	static const char *const ns[] = { "std", "app", "net", "db", "rpc", "util", "proto" };
	static const char *const verbs[] = { "handle", "process",   "encode", "decode", "dispatch",
					     "lookup", "serialize", "read",   "write",	"flush" };
	uint32_t s = 42;

	for (int i = 0; i < NNAMES; i++) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%s::%sComponent%u::%s%sRequest%u", ns[rnd(&s) % 7],
			 verbs[rnd(&s) % 10], rnd(&s) % 97, verbs[rnd(&s) % 10],
			 rnd(&s) % 2 ? "Async" : "", (unsigned)i);
		names[i] = strdup(buf);
	}
}

static void make_stacks(void)
{
	uint32_t s = 7;

	for (int i = 0; i < NSTACKS; i++) {
		ustacks[i].nr = 12 + rnd(&s) % 29;
		for (uint32_t k = 0; k < ustacks[i].nr; k++)
			ustacks[i].frames[k] = names[rnd(&s) % NNAMES];
		kstacks[i].nr = 6 + rnd(&s) % 9;
		for (uint32_t k = 0; k < kstacks[i].nr; k++)
			kstacks[i].frames[k] = names[rnd(&s) % 64]; /* few distinct kernel names */
	}
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* One flush of NSTACKS counts as one batch. 0 or -errno. */
static int build(struct spool_batch *b, int round)
{
	struct upload_meta m = { .task_id = "bench-task",
				 .process_id = "bench-process",
				 .start_ms = (int64_t)now_unix_ms(),
				 .now_ms = (int64_t)now_unix_ms() };
	int err = 0;

	*b = (struct spool_batch){ .task_id = (uint64_t)round + 1 };
	for (int i = 0; i < NSTACKS && !err; i++) {
		struct upload_stack us = { .id = i,
					   .nr = ustacks[i].nr,
					   .names = ustacks[i].frames };
		struct upload_stack ks = { .id = NSTACKS + i,
					   .nr = kstacks[i].nr,
					   .names = kstacks[i].frames };

		err = upload__add(b, TASK_ON_CPU, i % 2 ? &ks : NULL, &us, 1 + (uint64_t)i % 5, 0);
	}
	return err ? err : upload__finish(b, &m);
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 20;
	struct spool_opts so = { .mem_bytes = 256u << 20 };
	struct uploader_opts uo = { 0 };
	struct uploader *u;
	struct uploader_stats us;
	struct spool_stats st;
	struct spool *sp;
	double c0, c1, c2;
	uint64_t wire = 0, msgs = 0;
	struct timespec tick = { .tv_nsec = 1000000L };

	if (argc < 2 || rounds <= 0) {
		fprintf(stderr, "usage: bench_upload HOST:PORT [ROUNDS]\n");
		return 2;
	}
	make_names();
	make_stacks();
	sp = spool__new(&so);
	uo.spool = sp;
	uo.oap = (struct oap_opts){ .addr = argv[1], .deadline_ms = 10000 };
	u = sp ? uploader__start(&uo) : NULL;
	if (!u) {
		fprintf(stderr, "bench_upload: %s\n", strerror(errno));
		return 1;
	}

	/* Building: named stacks to packed messages, no network. */
	c0 = cpu_s();
	for (int r = 0; r < rounds; r++) {
		struct spool_batch b;

		if (build(&b, r)) {
			fprintf(stderr, "bench_upload: building a batch failed\n");
			return 1;
		}
		wire += b.len - 4ull * b.nmsgs + 5ull * b.nmsgs;
		msgs += b.nmsgs;
		free(b.data);
	}
	c1 = cpu_s();

	/* Sending: the same batches through the spool and the upload thread. */
	for (int r = 0; r < rounds; r++) {
		struct spool_batch b;

		if (build(&b, r) || spool__put(sp, &b)) {
			fprintf(stderr, "bench_upload: queueing a batch failed\n");
			return 1;
		}
	}
	for (uint64_t end = now_mono_ms() + 120000; now_mono_ms() < end; nanosleep(&tick, NULL)) {
		spool__stats(sp, &st);
		if (st.sent_batches == (uint64_t)rounds)
			break;
	}
	c2 = cpu_s();
	uploader__stats(u, &us);
	if (st.sent_batches != (uint64_t)rounds) {
		fprintf(stderr, "bench_upload: %llu of %d batches sent (%llu streams failed)\n",
			(unsigned long long)st.sent_batches, rounds,
			(unsigned long long)us.streams_failed);
		return 1;
	}
	printf("== upload to the OAP: %d flushes of %d distinct stacks (user 12-40 frames, "
	       "half with 6-14 kernel frames) ==\n",
	       rounds, NSTACKS);
	printf("%-44s %8.2f ms\n", "CPU per 1000 stacks, building the messages",
	       1e3 * (c1 - c0) / rounds);
	printf("%-44s %8.2f ms\n", "CPU per 1000 stacks, building + sending",
	       1e3 * (c2 - c1) / rounds);
	printf("%-44s %8.1f KB\n", "bytes on the wire per 1000 stacks",
	       (double)wire / rounds / 1024.0);
	printf("%-44s %8.0f B\n", "  per message (one stack pair)", (double)wire / (double)msgs);
	fflush(stdout);
	uploader__stop(u, 2000);
	uploader__free(u);
	spool__free(sp);
	return 0;
}
