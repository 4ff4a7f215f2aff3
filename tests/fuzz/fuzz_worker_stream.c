// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the bytes a worker writes to shipper.sock. The input goes into one end of
 * a socketpair as one byte stream; the other end runs what shipper/main.c's on_worker() does
 * with each frame (ipc_recv() against the worker rules, then ship_task__begin / __ksyms / __stacks /
 * __counts, and the profile written at MSG_SHIP_END or when the stream stops, as the
 * supervisor's MSG_OUTPUT_ABORT would) until an error ends the peer. Nothing may crash, leak,
 * block, or fail other than as a rejected peer does.
 *
 * The symbolizer gets a fixed opener: maps with two executable mappings whose files cannot be
 * opened, no perf map, and a five-line kallsyms, so that naming runs (fallback names, kernel
 * lookups) without this machine's processes or kernel deciding the outcome. The parsers behind
 * the opener have their own targets (fuzz_maps_kallsyms, fuzz_elfsym).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ipc.h"
#include "common/msg.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/task.h"

/*
 * A copy of worker_rules in shipper/main.c (static there, and main.c has main()): keep the two
 * in step.
 */
static const struct ipc_rule worker_rules[] = {
	{ MSG_SHIP_BEGIN, sizeof(struct task_spec), sizeof(struct task_spec), 0, 0 },
	{ MSG_SHIP_STACKS, sizeof(struct ship_stack), 1000 * sizeof(struct ship_stack),
	  sizeof(struct ship_stack), 0 },
	{ MSG_SHIP_COUNTS, sizeof(struct ship_counts_hdr), IPC_MAX_PAYLOAD,
	  sizeof(struct ship_count), 0 },
	{ MSG_SHIP_END, sizeof(struct ship_end), sizeof(struct ship_end), 0, 0 },
	{ MSG_SHIP_KSYMS, sizeof(struct ship_ksyms_hdr), IPC_MAX_PAYLOAD, 0, 0 },
	{ MSG_SHIP_PY_RESULT, sizeof(struct msg_py_result), sizeof(struct msg_py_result), 0, 0 },
	{ MSG_SHIP_PYCODES, sizeof(struct ship_pycodes_hdr), IPC_MAX_PAYLOAD, 0, 0 },
};

#define NRULES(r) (sizeof(r) / sizeof((r)[0]))

static const char fake_maps[] =
	"00400000-00401000 r--p 00000000 08:01 4242 /usr/bin/fuzzed\n"
	"00401000-00500000 r-xp 00001000 08:01 4242 /usr/bin/fuzzed\n"
	"7f0000000000-7f0000100000 r-xp 00000000 08:01 4343 /usr/lib/libgone.so (deleted)\n";
static const char fake_kallsyms[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000100 T fuzz_kernel_fn\n"
				    "ffffffff81000200 t fuzz_local_fn\n"
				    "ffffffffc0000000 t fuzz_mod_fn\t[fuzzmod]\n"
				    "ffffffff82000000 D _etext\n";

static int memfd_with(const char *text)
{
	size_t len = strlen(text);
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static int fake_open_maps(void *ctx, int pid)
{
	(void)ctx;
	(void)pid;
	return memfd_with(fake_maps);
}

static int fake_open_mapped_file(void *ctx, int pid, uint64_t start, uint64_t end)
{
	(void)ctx;
	(void)pid;
	(void)start;
	(void)end;
	return -ENOENT;
}

static int fake_open_kallsyms(void *ctx)
{
	(void)ctx;
	return memfd_with(fake_kallsyms);
}

static const struct fd_opener fake_opener = {
	.open_maps = fake_open_maps,
	.open_mapped_file = fake_open_mapped_file,
	.open_kallsyms = fake_open_kallsyms,
};

struct feeder {
	int sock;
	const uint8_t *data;
	size_t size;
};

/* Writes the whole input, then EOF. Stops early when the reader has closed its end. */
static void *feeder_main(void *arg)
{
	struct feeder *f = arg;
	size_t off = 0;

	while (off < f->size) {
		ssize_t n = send(f->sock, f->data + off, f->size - off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		off += (size_t)n;
	}
	shutdown(f->sock, SHUT_WR);
	return NULL;
}

/* What the supervisor's MSG_OUTPUT_OPEN and finish_task() do: write the profile, here to /dev/null. */
static void finish(struct ship_task *t)
{
	struct msg_output_written w;
	int err;

	FILE *f = fopen("/dev/null", "we");

	if (!f)
		abort();
	t->format = FORMAT_FOLDED + (uint32_t)(t->task_id % 3);
	err = ship_task__write(t, f, &w);
	fclose(f);
	if (err || w.task_id != t->task_id || w.samples != t->samples ||
	    !memchr(w.summary, '\0', sizeof(w.summary))) {
		fprintf(stderr, "ship_task__write: %d (%s), samples %llu of %llu\n", err,
			strerror(-err), (unsigned long long)w.samples,
			(unsigned long long)t->samples);
		abort();
	}
	ship_task__free(t);
}

/* One worker peer, as shipper/main.c on_worker() handles it. Returns the error that ended it. */
static int run_peer(int sock, struct symbolizer *sym)
{
	struct ipc_msg m = { .fd = -1 };
	struct ship_task *t = NULL;
	uint64_t task_id = 0; /* the peer's task, once it began */
	int err;

	for (;;) {
		err = ipc_recv(sock, worker_rules, NRULES(worker_rules), &m);
		if (err)
			break;
		/* No worker rule admits a descriptor. */
		if (m.fd != -1)
			abort();
		if (m.type == MSG_SHIP_BEGIN) {
			const struct task_spec *spec = m.buf;

			err = -EPROTO;
			if (task_id || !spec->task_id)
				break;
			t = ship_task__new(spec->task_id);
			if (!t) {
				err = -ENOMEM;
				break;
			}
			task_id = spec->task_id;
			err = ship_task__begin(t, spec, sym);
			if (err)
				break;
			continue;
		}
		if (!t) {
			/* Task written already: the rest is moot. Before any BEGIN: a violation. */
			if (task_id)
				continue;
			err = -EPROTO;
			break;
		}
		switch (m.type) {
		case MSG_SHIP_STACKS:
			err = ship_task__stacks(t, m.buf, m.len / sizeof(struct ship_stack));
			break;
		case MSG_SHIP_KSYMS:
			err = ship_task__ksyms(t, m.buf, m.len);
			break;
		case MSG_SHIP_PYCODES:
			err = ship_task__pycodes(t, m.buf, m.len);
			break;
		case MSG_SHIP_PY_RESULT:
			break; /* logged by the shipper's finder: nothing to parse */
		case MSG_SHIP_COUNTS:
			err = ship_task__counts(t, m.buf,
						(const struct ship_count
							 *)((char *)m.buf +
							    sizeof(struct ship_counts_hdr)),
						(m.len - sizeof(struct ship_counts_hdr)) /
							sizeof(struct ship_count),
						sym);
			break;
		case MSG_SHIP_END: {
			const struct ship_end *e = m.buf;

			if (e->task_id != task_id) {
				err = -EPROTO;
				break;
			}
			t->ended = 1;
			t->end_reason = e->reason;
			finish(t);
			t = NULL;
			break;
		}
		default:
			abort(); /* ipc_recv() let through a type outside the rules */
		}
		if (err)
			break;
	}
	/* The supervisor aborts a task whose worker went away: what was collected is written. */
	if (t)
		finish(t);
	ipc_msg_release(&m);
	return err;
}

/*
 * A frame-aware mutator. Byte-level mutations of a stream of ~1 KiB structs rarely keep the
 * framing intact while landing a boundary value (nr 128, stack id 65536, tgid -1) in a field:
 * half the time, mutate within one frame or reorder frames instead, keeping every header true.
 */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

#define MAX_FRAMES 256

static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Offsets of the frames of data whose header and payload are complete. */
static size_t frames_of(const uint8_t *data, size_t size, size_t *offs)
{
	size_t n = 0, off = 0;

	while (n < MAX_FRAMES && size - off >= sizeof(struct ipc_hdr)) {
		struct ipc_hdr h;

		memcpy(&h, data + off, sizeof(h));
		if (h.len > size - off - sizeof(h))
			break;
		offs[n++] = off;
		off += sizeof(h) + h.len;
	}
	return n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static const int32_t interesting[] = { 0,    1,	   2,	  -1,	 -2,	    3,
					       64,   65,   126,	  127,	 128,	    129,
					       1000, 1001, 65535, 65536, INT32_MAX, INT32_MIN };
	uint32_t r = seed | 1, type;
	size_t offs[MAX_FRAMES], n = frames_of(data, size, offs), k, off, len, at;
	struct ipc_hdr h;
	int32_t v;

	if (n == 0 || next_rand(&r) % 2)
		return LLVMFuzzerMutate(data, size, max_size);
	k = next_rand(&r) % n;
	off = offs[k];
	memcpy(&h, data + off, sizeof(h));
	len = sizeof(h) + h.len;
	switch (next_rand(&r) % 5) {
	case 0: /* a boundary value into an aligned 32-bit field of the payload */
		if (h.len < 4)
			break;
		v = interesting[next_rand(&r) % (sizeof(interesting) / sizeof(interesting[0]))];
		at = off + sizeof(h) + (next_rand(&r) % (h.len / 4)) * 4;
		memcpy(data + at, &v, sizeof(v));
		break;
	case 1: /* byte mutations inside the payload only, at its size */
		if (h.len) {
			size_t got = LLVMFuzzerMutate(data + off + sizeof(h), h.len, h.len);

			memset(data + off + sizeof(h) + got, 0, h.len - got);
		}
		break;
	case 2: /* the frame again, at the end: a second BEGIN, a reused id, counts after END */
		if (size + len <= max_size) {
			memmove(data + size, data + off, len);
			size += len;
		}
		break;
	case 3: /* the frame gone */
		memmove(data + off, data + off + len, size - off - len);
		size -= len;
		break;
	case 4: /* another worker message type (the payload stays) */
		type = MSG_SHIP_BEGIN + next_rand(&r) % (MSG_SHIP_END - MSG_SHIP_BEGIN + 1);
		h.type = (uint16_t)type;
		memcpy(data + off, &h, sizeof(h));
		break;
	}
	return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct feeder f = { .data = data, .size = size };
	struct symbolizer *sym;
	pthread_t th;
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	f.sock = sv[0];
	if (pthread_create(&th, NULL, feeder_main, &f))
		abort();
	sym = symbolizer__new(&fake_opener, 0);
	if (!sym)
		abort();
	err = run_peer(sv[1], sym);
	/* Only a clean close or a rejected stream may end a peer; no frame may leak its error. */
	if (err != -EPIPE && err != -EPROTO) {
		fprintf(stderr, "worker stream ended with %d (%s)\n", err, strerror(-err));
		abort();
	}
	/* Unblocks the feeder if the reader stopped before the end of the input. */
	close(sv[1]);
	pthread_join(th, NULL);
	close(sv[0]);
	symbolizer__free(sym);
	return 0;
}
