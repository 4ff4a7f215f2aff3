// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/oncpu.h"
#include "oncpu.skel.h"
#include "worker/oncpu.h"

/*
 * Stack map size: distinct stacks of a busy process over two flushes fit comfortably; ids of
 * stacks not counted for two flushes are freed (see oncpu__drain).
 */
#define STACK_MAP_ENTRIES 16384
#define COUNTS_ENTRIES 16384

struct oncpu {
	struct oncpu_bpf *skel;
	struct bpf_link **links;
	int *pfds;
	int ncpus;
	uint64_t flush_no;
	uint64_t *sent_hash; /* per stack id: content hash last sent to the shipper, 0: none */
	uint64_t *last_seen; /* per stack id: flush number it was last counted in */
	uint64_t stat_prev[ONCPU_STAT_MAX];
	uint64_t samples;
	uint64_t losses[LOSS_MAX];
	struct oncpu_key *keys;
	uint64_t *vals;
};

static int perf_open_cpu_clock(int cpu, uint64_t freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq,
		.freq = 1,
	};
	long fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

void oncpu__free(struct oncpu *o)
{
	if (!o)
		return;
	oncpu__stop(o);
	free(o->links);
	free(o->pfds);
	free(o->sent_hash);
	free(o->last_seen);
	free(o->keys);
	free(o->vals);
	oncpu_bpf__destroy(o->skel);
	free(o);
}

void oncpu__stop(struct oncpu *o)
{
	for (int i = 0; i < o->ncpus; i++) {
		bpf_link__destroy(o->links[i]);
		o->links[i] = NULL;
		if (o->pfds[i] >= 0)
			close(o->pfds[i]);
		o->pfds[i] = -1;
	}
}

struct oncpu *oncpu__start(const struct task_spec *spec, struct msg_task_started *ret_started)
{
	struct oncpu *o;
	uint64_t freq = 1000000 / spec->period_us;
	int err, attached = 0;
	uint8_t one = 1;

	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->ncpus = libbpf_num_possible_cpus();
	if (o->ncpus <= 0) {
		err = o->ncpus ? o->ncpus : -ENODEV;
		o->ncpus = 0;
		goto cleanup;
	}
	o->links = calloc((size_t)o->ncpus, sizeof(*o->links));
	o->pfds = malloc((size_t)o->ncpus * sizeof(int));
	o->sent_hash = calloc(STACK_MAP_ENTRIES, sizeof(uint64_t));
	o->last_seen = calloc(STACK_MAP_ENTRIES, sizeof(uint64_t));
	o->keys = malloc(COUNTS_ENTRIES * sizeof(*o->keys));
	o->vals = malloc(COUNTS_ENTRIES * sizeof(*o->vals));
	if (!o->links || !o->pfds || !o->sent_hash || !o->last_seen || !o->keys || !o->vals) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < o->ncpus; i++)
		o->pfds[i] = -1;

	o->skel = oncpu_bpf__open();
	if (!o->skel) {
		err = -errno;
		goto cleanup;
	}
	bpf_map__set_max_entries(o->skel->maps.stacks, STACK_MAP_ENTRIES);
	bpf_map__set_max_entries(o->skel->maps.counts0, COUNTS_ENTRIES);
	bpf_map__set_max_entries(o->skel->maps.counts1, COUNTS_ENTRIES);
	err = oncpu_bpf__load(o->skel);
	if (err)
		goto cleanup;
	for (uint32_t i = 0; i < spec->npids; i++) {
		uint32_t tgid = (uint32_t)spec->pids[i];

		if (bpf_map_update_elem(bpf_map__fd(o->skel->maps.targets), &tgid, &one, BPF_ANY)) {
			err = -errno;
			goto cleanup;
		}
	}
	for (int cpu = 0; cpu < o->ncpus; cpu++) {
		int fd = perf_open_cpu_clock(cpu, freq);

		if (fd == -ENODEV)
			continue; /* possible but offline CPU */
		if (fd < 0) {
			err = fd;
			goto cleanup;
		}
		o->pfds[cpu] = fd;
		o->links[cpu] = bpf_program__attach_perf_event(o->skel->progs.on_cpu_sample, fd);
		if (!o->links[cpu]) {
			err = -errno;
			goto cleanup;
		}
		attached++;
	}
	if (!attached) {
		err = -ENODEV;
		goto cleanup;
	}
	memset(ret_started, 0, sizeof(*ret_started));
	ret_started->task_id = spec->task_id;
	ret_started->ncpus = (uint32_t)attached;
	ret_started->freq_hz = (uint32_t)freq;
	snprintf(ret_started->attach, sizeof(ret_started->attach), "perf_event cpu-clock x%d",
		 attached);
	return o;
cleanup:
	oncpu__free(o);
	errno = -err;
	return NULL;
}

static uint64_t hash_ips(const uint64_t *ips, uint32_t nr)
{
	uint64_t h = 1469598103934665603ULL;

	for (uint32_t i = 0; i < nr; i++) {
		h ^= ips[i];
		h *= 1099511628211ULL;
	}
	return h | 1; /* never 0: 0 means "not sent" */
}

/* Adds stack id to the batch unless the shipper already has this content under this id. */
static int take_stack(struct oncpu *o, int32_t id, uint32_t kind, struct ship_batch *b,
		      int32_t *ret_id)
{
	struct ship_stack st = { .id = id, .kind = kind };
	uint32_t nr = 0;
	uint64_t h;

	*ret_id = id;
	if (id < 0)
		return 0;
	if (id >= STACK_MAP_ENTRIES) {
		*ret_id = -1;
		return 0;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(o->skel->maps.stacks), &id, st.ips)) {
		/* Freed between the sample and this drain: the count stays, the stack is lost. */
		b->losses[LOSS_STACK_EVICTED]++;
		*ret_id = -1;
		return 0;
	}
	while (nr < ONCPU_STACK_DEPTH && st.ips[nr])
		nr++;
	st.nr = nr;
	o->last_seen[id] = o->flush_no;
	h = hash_ips(st.ips, nr) ^ kind;
	if (o->sent_hash[id] == h)
		return 0;
	o->sent_hash[id] = h;
	return ship_batch_add_stack(b, &st);
}

static void drain_stats(struct oncpu *o, struct ship_batch *b)
{
	static const int loss_of[ONCPU_STAT_MAX] = {
		[ONCPU_STAT_SAMPLES] = -1,
		[ONCPU_STAT_USTACK_COLLISION] = LOSS_USTACK_COLLISION,
		[ONCPU_STAT_KSTACK_COLLISION] = LOSS_KSTACK_COLLISION,
		[ONCPU_STAT_STACK_MAP_FULL] = LOSS_STACK_MAP_FULL,
		[ONCPU_STAT_USTACK_MISSING] = LOSS_USTACK_MISSING,
		[ONCPU_STAT_COUNTS_FULL] = LOSS_COUNTS_FULL,
	};
	int fd = bpf_map__fd(o->skel->maps.stats);
	uint64_t *percpu = calloc((size_t)o->ncpus, sizeof(uint64_t));

	if (!percpu)
		return;
	for (uint32_t k = 0; k < ONCPU_STAT_MAX; k++) {
		uint64_t sum = 0, delta;

		if (bpf_map_lookup_elem(fd, &k, percpu))
			continue;
		for (int c = 0; c < o->ncpus; c++)
			sum += percpu[c];
		delta = sum - o->stat_prev[k];
		o->stat_prev[k] = sum;
		if (loss_of[k] < 0)
			o->samples += delta;
		else
			b->losses[loss_of[k]] += delta;
	}
	free(percpu);
}

/* Frees stack ids not counted in this drain nor the one before. */
static void evict_stale_stacks(struct oncpu *o)
{
	int fd = bpf_map__fd(o->skel->maps.stacks);
	uint32_t key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (key >= STACK_MAP_ENTRIES || o->last_seen[key] + 1 >= o->flush_no)
			continue;
		if (!bpf_map_delete_elem(fd, &key))
			o->sent_hash[key] = 0;
	}
}

int oncpu__drain(struct oncpu *o, struct ship_batch *b)
{
	struct timespec settle = { .tv_nsec = 1000000 };
	int map_fd, err = 0;
	uint32_t n = 0;
	struct oncpu_key key, next, *prev = NULL;

	o->flush_no++;
	/*
	 * Flip the map samples go to, then let programs that already read the old index finish:
	 * a perf_event program runs for microseconds, in interrupt context.
	 */
	o->skel->bss->active_counts = !o->skel->bss->active_counts;
	nanosleep(&settle, NULL);
	map_fd = !o->skel->bss->active_counts ? bpf_map__fd(o->skel->maps.counts1)
					      : bpf_map__fd(o->skel->maps.counts0);

	while (n < COUNTS_ENTRIES && !bpf_map_get_next_key(map_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(map_fd, &key, &o->vals[n]))
			continue;
		o->keys[n++] = key;
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(map_fd, &o->keys[i]);

	drain_stats(o, b);
	for (uint32_t i = 0; i < n; i++) {
		struct ship_count c = { .tgid = (int32_t)o->keys[i].tgid, .value = o->vals[i] };

		err = take_stack(o, o->keys[i].ustack, 1, b, &c.ustack);
		if (!err)
			err = take_stack(o, o->keys[i].kstack, 0, b, &c.kstack);
		if (!err)
			err = ship_batch_add_count(b, &c);
		if (err)
			return err;
	}
	evict_stale_stacks(o);
	for (int k = 0; k < LOSS_MAX; k++)
		o->losses[k] += b->losses[k];
	return 0;
}

void oncpu__totals(const struct oncpu *o, uint64_t *ret_samples, uint64_t ret_losses[LOSS_MAX])
{
	*ret_samples = o->samples;
	memcpy(ret_losses, o->losses, sizeof(o->losses));
}
