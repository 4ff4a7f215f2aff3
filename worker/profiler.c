// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <malloc.h>
#include <inttypes.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/stackcount.h"
#include "common/kofs.h"
#include "offcpu.skel.h"
#include "oncpu.skel.h"
#include "worker/credcheck.h"
#include "worker/kbtf.h"
#include "worker/ksyms.h"
#include "worker/profiler.h"
#include "worker/ringread.h"
#include "worker/snaprec.h"
#include "worker/stackhint.h"

/*
 * Stack map size: distinct stacks of a busy process over two flushes fit comfortably; ids of
 * stacks not counted for two flushes are freed (see evict_stale_stacks).
 */
#define STACK_MAP_ENTRIES 16384
#define COUNTS_ENTRIES 16384
/*
 * With snapshots the two maps hold only the events whose snapshot failed (ring buffer full,
 * no stack byte readable). The kernel preallocates both maps whole, the stack map at about
 * 1 KiB an entry, and its creation costs about 3 us an entry here (16384: 36 ms of the
 * worker's CPU, 1024: 3.4 ms, 256: 0.4 ms), more than the task's snapshots cost to read. An
 * event whose stack finds no room is counted (SC_STAT_*_COLLISION, SC_STAT_STACK_MAP_FULL).
 */
#define FALLBACK_ENTRIES 256
/* OFF_CPU: threads of the targets off the CPU at once. */
#define STARTS_ENTRIES 16384
/*
 * OFF_CPU snapshots waiting for their time (taken at switch-out, timed at switch-in): one per
 * thread of the targets that is off the CPU, each up to SC_SNAP_STACK bytes.
 */
#define PENDING_MAX 4096
#define PENDING_BUCKETS 1024

struct pending {
	struct pending *next;
	uint32_t pid;
	uint64_t ts;
	struct ship_snapshot s;
	uint64_t kips[SC_STACK_DEPTH];
	uint8_t data[]; /* s.npy Python frames, then s.stack_len bytes of stack */
};

struct profiler {
	uint32_t type;
	int user_only;		   /* TASK_USER_ONLY: no kernel frame leaves the worker */
	uint32_t req_uid, req_gid; /* and the client whose targets must stay its own */
	/* Its targets map's size: room for followed children too (TASK_CHILDREN). */
	uint32_t max_targets;
	struct oncpu_bpf *on;
	struct offcpu_bpf *off;
	struct bpf_link **links;
	int nlinks;
	int *pfds;
	int ncpus;
	/* the maps both programs share, by fd */
	int counts_fd[2], stacks_fd, stats_fd, targets_fd, limits_fd, pyprocs_fd, javaprocs_fd,
		v8procs_fd;
	volatile __u32 *active;
	uint64_t flush_no;
	uint64_t *sent_hash; /* per stack id: content hash last sent to the shipper, 0: none */
	uint64_t *last_seen; /* per stack id: flush number it was last counted in */
	uint64_t stat_prev[SC_STAT_MAX];
	uint64_t events;
	uint64_t ring_records, ring_bytes;	     /* snapshot records read, their bytes */
	uint64_t ring_unhinted, ring_unhinted_bytes; /* of them, copied before a stack hint */
	uint64_t losses[LOSS_MAX];
	struct sc_key *keys;
	struct sc_value *vals;
	/* unwind mode dwarf */
	struct ringread *rb;
	struct ship_batch *rb_batch; /* where records go during profiler__read_snapshots */
	int rb_err;
	struct pending *pending[PENDING_BUCKETS];
	uint32_t npending;
	struct ksym_namer *kn;	  /* NULL: the shipper names kernel frames from kallsyms */
	struct stack_hints hints; /* the user stack bytes the shipper wants of each target */
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

void profiler__stop(struct profiler *p)
{
	for (int i = 0; i < p->nlinks; i++) {
		bpf_link__destroy(p->links[i]);
		p->links[i] = NULL;
	}
	for (int i = 0; p->pfds && i < p->ncpus; i++) {
		if (p->pfds[i] >= 0)
			close(p->pfds[i]);
		p->pfds[i] = -1;
	}
}

static void pending_clear(struct profiler *p)
{
	for (int i = 0; i < PENDING_BUCKETS; i++) {
		while (p->pending[i]) {
			struct pending *n = p->pending[i]->next;

			free(p->pending[i]);
			p->pending[i] = n;
		}
	}
	p->npending = 0;
}

void profiler__free(struct profiler *p)
{
	if (!p)
		return;
	profiler__stop(p);
	ringread__free(p->rb);
	ksym_namer__free(p->kn);
	pending_clear(p);
	free(p->links);
	free(p->pfds);
	free(p->sent_hash);
	free(p->last_seen);
	free(p->keys);
	free(p->vals);
	oncpu_bpf__destroy(p->on);
	offcpu_bpf__destroy(p->off);
	free(p);
}

/*
 * Ring buffer bytes for rate snapshots a second: SNAP_RING_MS of them, a power of two within
 * the bounds of common/stackcount.h. The programs wake the worker once a quarter of it waits
 * (snap_wake_bytes), so a reader late by a few milliseconds still finds room.
 */
#define SNAP_RING_MS 200

static uint32_t snap_ring_bytes(uint64_t rate)
{
	uint64_t want = rate * SNAP_RING_MS / 1000 * sizeof(struct sc_snap);
	uint32_t bytes = SC_SNAP_RINGBUF_MIN;

	while (bytes < SC_SNAP_RINGBUF_MAX && bytes < want)
		bytes <<= 1;
	return bytes;
}

static void size_maps(struct bpf_map *stacks, struct bpf_map *c0, struct bpf_map *c1,
		      struct bpf_map *snaps, uint32_t snap_bytes)
{
	bpf_map__set_max_entries(stacks, snap_bytes ? FALLBACK_ENTRIES : STACK_MAP_ENTRIES);
	bpf_map__set_max_entries(c0, snap_bytes ? FALLBACK_ENTRIES : COUNTS_ENTRIES);
	bpf_map__set_max_entries(c1, snap_bytes ? FALLBACK_ENTRIES : COUNTS_ENTRIES);
	if (snap_bytes)
		bpf_map__set_max_entries(snaps, snap_bytes);
}

static int dwarf_mode(const struct task_spec *spec)
{
	return spec->unwind != UNWIND_FP;
}

static int load_on_cpu(struct profiler *p, const struct task_spec *spec, int namer)
{
	uint64_t freq = 1000000 / spec->period_us;
	uint32_t ring;
	int err;

	p->on = oncpu_bpf__open();
	if (!p->on)
		return -errno;
	err = kbtf_kernel(&p->on->rodata->kofs);
	if (err) {
		oncpu_bpf__destroy(p->on);
		p->on = NULL;
		return err;
	}
	ring = dwarf_mode(spec) ? snap_ring_bytes(freq * (uint64_t)p->ncpus) : 0;
	size_maps(p->on->maps.stacks, p->on->maps.counts0, p->on->maps.counts1, p->on->maps.snaps,
		  ring);
	bpf_map__set_max_entries(p->on->maps.targets, p->max_targets);
	p->on->rodata->unwind_dwarf = dwarf_mode(spec);
	p->on->rodata->snap_wake_bytes = ring / 4;
	set_cred_check(&p->on->rodata->cred_check, &p->on->rodata->cred_uid,
		       &p->on->rodata->cred_gid, spec);
	/*
	 * The kernel-frame namer's program comes with the task's (one object), unless the task
	 * keeps kernel frames to itself; a kernel that refuses it (before 5.14: no "syscall"
	 * programs) gets the object without it (start_on_cpu, load_off_cpu_namer).
	 */
	bpf_program__set_autoload(p->on->progs.ksym_names, namer);
	err = oncpu_bpf__load(p->on);
	if (err) {
		oncpu_bpf__destroy(p->on);
		p->on = NULL;
	}
	return err;
}

static int start_on_cpu(struct profiler *p, const struct task_spec *spec,
			struct msg_task_started *ret)
{
	uint64_t freq = 1000000 / spec->period_us;
	int err;

	err = load_on_cpu(p, spec, !p->user_only);
	if (err && !p->user_only)
		err = load_on_cpu(p, spec, 0);
	if (err)
		return err;
	p->counts_fd[0] = bpf_map__fd(p->on->maps.counts0);
	p->counts_fd[1] = bpf_map__fd(p->on->maps.counts1);
	p->stacks_fd = bpf_map__fd(p->on->maps.stacks);
	p->stats_fd = bpf_map__fd(p->on->maps.stats);
	p->targets_fd = bpf_map__fd(p->on->maps.targets);
	p->limits_fd = bpf_map__fd(p->on->maps.snap_limits);
	p->pyprocs_fd = bpf_map__fd(p->on->maps.py_procs);
	p->javaprocs_fd = bpf_map__fd(p->on->maps.java_procs);
	p->v8procs_fd = bpf_map__fd(p->on->maps.v8_procs);
	p->active = &p->on->bss->active_counts;
	for (int cpu = 0; cpu < p->ncpus; cpu++) {
		int fd = perf_open_cpu_clock(cpu, freq);

		if (fd == -ENODEV)
			continue; /* possible but offline CPU */
		if (fd < 0)
			return fd;
		p->pfds[cpu] = fd;
		p->links[p->nlinks] =
			bpf_program__attach_perf_event(p->on->progs.on_cpu_sample, fd);
		if (!p->links[p->nlinks])
			return -errno;
		p->nlinks++;
	}
	if (!p->nlinks)
		return -ENODEV;
	ret->ncpus = (uint32_t)p->nlinks;
	ret->freq_hz = (uint32_t)freq;
	snprintf(ret->attach, sizeof(ret->attach), "perf_event cpu-clock x%d", p->nlinks);
	return 0;
}

/*
 * Loads the OFF_CPU object with one of its two sched_switch variants. tp_btf first (typed
 * arguments from kernel BTF); raw_tp where the kernel refuses it. Probed by loading, not by
 * kernel version.
 */
static int load_off_cpu(struct profiler *p, int use_btf, int dwarf, int namer)
{
	int err;

	p->off = offcpu_bpf__open();
	if (!p->off)
		return -errno;
	err = kbtf_kernel(&p->off->rodata->kofs);
	if (err) {
		offcpu_bpf__destroy(p->off);
		p->off = NULL;
		return err;
	}
	bpf_program__set_autoload(p->off->progs.off_cpu_btf, use_btf);
	bpf_program__set_autoload(p->off->progs.off_cpu_raw, !use_btf);
	/* Switches have no rate known in advance: the largest ring. */
	size_maps(p->off->maps.stacks, p->off->maps.counts0, p->off->maps.counts1,
		  p->off->maps.snaps, dwarf ? SC_SNAP_RINGBUF_MAX : 0);
	bpf_map__set_max_entries(p->off->maps.targets, p->max_targets);
	p->off->rodata->unwind_dwarf = dwarf;
	p->off->rodata->snap_wake_bytes = SC_SNAP_RINGBUF_MAX / 4;
	p->off->rodata->cred_check = (uint32_t)p->user_only;
	p->off->rodata->cred_uid = p->req_uid;
	p->off->rodata->cred_gid = p->req_gid;
	bpf_map__set_max_entries(p->off->maps.starts, STARTS_ENTRIES);
	bpf_program__set_autoload(p->off->progs.ksym_names, namer); /* as in load_on_cpu */
	err = offcpu_bpf__load(p->off);
	if (err) {
		offcpu_bpf__destroy(p->off);
		p->off = NULL;
	}
	return err;
}

/*
 * With the namer, then (a kernel without "syscall" programs) without it. On raw_tp, never: the
 * namer needs BPF_PROG_RUN, which would let a compromised worker run the raw_tp program too,
 * on made-up task pointers (policy/README.md); the shipper names kernel frames from kallsyms.
 */
static int load_off_cpu_namer(struct profiler *p, int use_btf, int dwarf)
{
	int namer = !p->user_only && use_btf;
	int err = load_off_cpu(p, use_btf, dwarf, namer);

	if (err && namer)
		err = load_off_cpu(p, use_btf, dwarf, 0);
	return err;
}

static int start_off_cpu(struct profiler *p, const struct task_spec *spec,
			 struct msg_task_started *ret)
{
	uint32_t attach = spec->attach;
	struct bpf_program *prog;
	int use_btf = attach != ATTACH_RAW_TP, err;

	err = load_off_cpu_namer(p, use_btf, dwarf_mode(spec));
	if (err && attach == ATTACH_AUTO) {
		use_btf = 0;
		err = load_off_cpu_namer(p, 0, dwarf_mode(spec));
	}
	if (err)
		return err;
	prog = use_btf ? p->off->progs.off_cpu_btf : p->off->progs.off_cpu_raw;
	p->counts_fd[0] = bpf_map__fd(p->off->maps.counts0);
	p->counts_fd[1] = bpf_map__fd(p->off->maps.counts1);
	p->stacks_fd = bpf_map__fd(p->off->maps.stacks);
	p->stats_fd = bpf_map__fd(p->off->maps.stats);
	p->targets_fd = bpf_map__fd(p->off->maps.targets);
	p->limits_fd = bpf_map__fd(p->off->maps.snap_limits);
	p->pyprocs_fd = bpf_map__fd(p->off->maps.py_procs);
	p->javaprocs_fd = bpf_map__fd(p->off->maps.java_procs);
	p->v8procs_fd = bpf_map__fd(p->off->maps.v8_procs);
	p->active = &p->off->bss->active_counts;
	p->links[0] = use_btf ? bpf_program__attach(prog)
			      : bpf_program__attach_raw_tracepoint(prog, "sched_switch");
	if (!p->links[0])
		return -errno;
	p->nlinks = 1;
	ret->ncpus = (uint32_t)p->ncpus;
	snprintf(ret->attach, sizeof(ret->attach), "%s sched_switch",
		 use_btf ? "tp_btf" : "raw_tp");
	return 0;
}

static struct pending **pending_slot(struct profiler *p, uint32_t pid)
{
	struct pending **pp = &p->pending[(pid * 2654435761u) % PENDING_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

int profiler__py_attach(struct profiler *p, int32_t tgid, const struct py_proc *py)
{
	uint32_t key = (uint32_t)tgid;

	if (!p->rb)
		return -EOPNOTSUPP; /* Python frames ride in snapshots: unwind mode dwarf only */
	if (!profiler__tracing(p, tgid))
		return -EPERM;
	return bpf_map_update_elem(p->pyprocs_fd, &key, py, BPF_ANY) ? -errno : 0;
}

int profiler__java_attach(struct profiler *p, int32_t tgid, const struct java_proc *jp)
{
	uint32_t key = (uint32_t)tgid;

	if (!p->rb)
		return -EOPNOTSUPP; /* Java frames ride in snapshots: unwind mode dwarf only */
	if (!profiler__tracing(p, tgid))
		return -EPERM;
	return bpf_map_update_elem(p->javaprocs_fd, &key, jp, BPF_ANY) ? -errno : 0;
}

int profiler__v8_attach(struct profiler *p, int32_t tgid, const struct v8_proc *vp)
{
	uint32_t key = (uint32_t)tgid;

	if (!p->rb)
		return -EOPNOTSUPP; /* JavaScript frames ride in snapshots: unwind mode dwarf only */
	if (!profiler__tracing(p, tgid))
		return -EPERM;
	return bpf_map_update_elem(p->v8procs_fd, &key, vp, BPF_ANY) ? -errno : 0;
}

int profiler__stack_hint(struct profiler *p, int32_t tgid, uint32_t bytes)
{
	uint32_t key = (uint32_t)tgid, limit;
	int err = stack_hints__set(&p->hints, tgid, bytes);

	if (err)
		return err;
	/* The programs then copy only the bytes it covers; records copied before this update
	 * are cut to it by snaprec__convert. */
	limit = stack_hints__limit(&p->hints, key);
	if (bpf_map_update_elem(p->limits_fd, &key, &limit, BPF_ANY))
		log_debug("stack hint of process %d for the programs: %s", tgid, strerror(errno));
	else
		log_debug("stack hint of process %d: %u bytes", tgid, limit);
	return 0;
}

/*
 * Ring buffer records: ON_CPU snapshots and Python code records go to the batch as they are; an
 * OFF_CPU snapshot waits, by thread, for the sc_done that carries its time.
 */
static int on_record(void *ctx, void *data, size_t size)
{
	struct profiler *p = ctx;
	struct ship_batch *b = p->rb_batch;
	const struct py_frame *py;
	const uint64_t *kips;
	const uint8_t *stack;
	struct pending **pp, *pe;
	struct ship_snapshot s;
	uint32_t kind;
	size_t pb;

	if (size < sizeof(kind) || !b)
		return 0;
	memcpy(&kind, data, sizeof(kind));
	/* A snapshot record holds its header, kernel frames and the stack bytes copied. */
	if (kind == SC_REC_SNAP && size >= offsetof(struct sc_snap, data)) {
		const struct sc_snap *r = data;

		uint32_t limit = stack_hints__limit(&p->hints, r->tgid);

		p->ring_records++;
		p->ring_bytes += size;
		if (!(r->flags & SC_SNAP_LIMITED) && (!limit || r->stack_len > limit)) {
			p->ring_unhinted++;
			p->ring_unhinted_bytes += size;
		}
		if (snaprec__convert(r, size, limit, &s, &kips, &py, &stack)) {
			b->losses[LOSS_SNAP_UNMATCHED]++;
			return 0;
		}
		if (p->user_only)
			s.nkips = 0;
		if (!r->ts) {
			ksym_namer__want(p->kn, kips, s.nkips);
			p->rb_err = ship_batch_add_snapshot(b, &s, kips, py, stack);
			return p->rb_err;
		}
		pp = pending_slot(p, r->pid);
		if (*pp) {
			/* Its time never came (lost in a full ring buffer): replaced. */
			b->losses[LOSS_SNAP_UNMATCHED]++;
			pe = *pp;
			*pp = pe->next;
			free(pe);
			p->npending--;
		}
		if (p->npending >= PENDING_MAX) {
			b->losses[LOSS_SNAP_UNMATCHED]++;
			return 0;
		}
		pb = s.npy * sizeof(struct py_frame);
		pe = malloc(sizeof(*pe) + pb + s.stack_len);
		if (!pe) {
			b->losses[LOSS_SNAP_UNMATCHED]++;
			return 0;
		}
		pe->pid = r->pid;
		pe->ts = r->ts;
		pe->s = s;
		memcpy(pe->kips, kips, s.nkips * sizeof(uint64_t));
		memcpy(pe->data, py, pb);
		memcpy(pe->data + pb, stack, s.stack_len);
		pe->next = p->pending[(r->pid * 2654435761u) % PENDING_BUCKETS];
		p->pending[(r->pid * 2654435761u) % PENDING_BUCKETS] = pe;
		p->npending++;
	} else if (kind == SC_REC_DONE && size >= sizeof(struct sc_done)) {
		const struct sc_done *d = data;

		pp = pending_slot(p, d->pid);
		pe = *pp;
		if (!pe || pe->ts != d->ts)
			return 0;
		*pp = pe->next;
		p->npending--;
		pe->s.value = d->value;
		pe->s.value2 = d->value2;
		ksym_namer__want(p->kn, pe->kips, pe->s.nkips);
		pb = pe->s.npy * sizeof(struct py_frame);
		p->rb_err = ship_batch_add_snapshot(b, &pe->s, pe->kips,
						    (const struct py_frame *)(const void *)pe->data,
						    pe->data + pb);
		free(pe);
		return p->rb_err;
	} else if (kind == SC_REC_PYCODE || kind == SC_REC_JMETHOD || kind == SC_REC_JNMETHOD ||
		   kind == SC_REC_V8FUNC) {
		/* Names of a code object or a method, ahead of the snapshots that hold it. */
		if (ship_batch_add_pycode(b, data, size))
			b->losses[LOSS_PY_CODES]++;
	}
	return 0;
}

int profiler__read_snapshots(struct profiler *p, struct ship_batch *b)
{
	int n;

	if (!p->rb)
		return 0;
	p->rb_batch = b;
	p->rb_err = 0;
	n = ringread__consume(p->rb);
	p->rb_batch = NULL;
	if (p->rb_err)
		return p->rb_err;
	if (n < 0)
		return n;
	return ksym_namer__name(p->kn, b);
}

int profiler__snapshots_fd(const struct profiler *p)
{
	/* The ring buffer map polls readable while it holds records; wakeups are the programs'. */
	if (!p->rb)
		return -1;
	return bpf_map__fd(p->on ? p->on->maps.snaps : p->off->maps.snaps);
}

/* Without a namer the shipper reads kallsyms: slower, not wrong; said once. */
static void start_namer(struct profiler *p)
{
	struct bpf_program *prog = p->on ? p->on->progs.ksym_names : p->off->progs.ksym_names;

	if (p->user_only)
		return;
	if (bpf_program__autoload(prog))
		p->kn = p->on ? ksym_namer__new(prog, (uint64_t *)p->on->bss->ksym_addrs,
						p->on->bss->ksym_lens, p->on->bss->ksym_out)
			      : ksym_namer__new(prog, (uint64_t *)p->off->bss->ksym_addrs,
						p->off->bss->ksym_lens, p->off->bss->ksym_out);
	if (!p->kn)
		log_info("kernel frames named by the shipper from kallsyms: %s",
			 p->off && !bpf_program__autoload(p->off->progs.off_cpu_btf)
				 ? "a raw_tp worker runs no program of its own"
				 : "the kernel refused our symbol lookup program");
}

int profiler__runs_programs(const struct profiler *p)
{
	return p->kn != NULL;
}

struct profiler *profiler__start(const struct task_spec *spec, struct msg_task_started *ret_started)
{
	struct profiler *p;
	uint8_t one = 1;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->type = spec->type;
	p->user_only = !!(spec->flags & TASK_USER_ONLY);
	p->req_uid = spec->req_uid;
	p->req_gid = spec->req_gid;
	p->max_targets = SC_MAX_TARGETS;
	if (spec->flags & TASK_CHILDREN)
		p->max_targets += ROVER_MAX_CHILDREN;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		err = p->ncpus ? p->ncpus : -ENODEV;
		p->ncpus = 0;
		goto cleanup;
	}
	p->links = calloc((size_t)p->ncpus + 1, sizeof(*p->links));
	p->pfds = malloc((size_t)p->ncpus * sizeof(int));
	p->sent_hash = calloc(STACK_MAP_ENTRIES, sizeof(uint64_t));
	p->last_seen = calloc(STACK_MAP_ENTRIES, sizeof(uint64_t));
	p->keys = malloc(COUNTS_ENTRIES * sizeof(*p->keys));
	p->vals = malloc(COUNTS_ENTRIES * sizeof(*p->vals));
	if (!p->links || !p->pfds || !p->sent_hash || !p->last_seen || !p->keys || !p->vals) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < p->ncpus; i++)
		p->pfds[i] = -1;
	memset(ret_started, 0, sizeof(*ret_started));
	ret_started->task_id = spec->task_id;
	err = spec->type == TASK_ON_CPU	   ? start_on_cpu(p, spec, ret_started)
	      : spec->type == TASK_OFF_CPU ? start_off_cpu(p, spec, ret_started)
					   : -EOPNOTSUPP;
	if (err)
		goto cleanup;
	/*
	 * The heap of loading (the kernel's BTF for tp_btf and CO-RE: about 12 MB, populated
	 * at the worker's start) given back, whichever the unwind mode.
	 */
	malloc_trim(0);
	start_namer(p);
	if (dwarf_mode(spec)) {
		struct bpf_map *snaps = p->on ? p->on->maps.snaps : p->off->maps.snaps;
		size_t n = strlen(ret_started->attach);

		p->rb = ringread__new(bpf_map__fd(snaps), bpf_map__max_entries(snaps), on_record,
				      p);
		if (!p->rb) {
			err = -errno;
			goto cleanup;
		}
		snprintf(ret_started->attach + n, sizeof(ret_started->attach) - n,
			 ", stack snapshots");
	}
	stack_hints__init(&p->hints, spec->pids, spec->npids);
	for (uint32_t i = 0; i < spec->npids; i++) {
		uint32_t tgid = (uint32_t)spec->pids[i];

		if (bpf_map_update_elem(p->targets_fd, &tgid, &one, BPF_ANY)) {
			err = -errno;
			goto cleanup;
		}
	}
	return p;
cleanup:
	profiler__free(p);
	errno = -err;
	return NULL;
}

int profiler__forget(struct profiler *p, int32_t pid)
{
	uint32_t tgid = (uint32_t)pid;

	if (bpf_map_delete_elem(p->targets_fd, &tgid) && errno != ENOENT)
		return -errno;
	/* Its interpreter's place is no other process's that gets its number. */
	bpf_map_delete_elem(p->pyprocs_fd, &tgid);
	bpf_map_delete_elem(p->javaprocs_fd, &tgid);
	bpf_map_delete_elem(p->v8procs_fd, &tgid);
	return 0;
}

int profiler__trace(struct profiler *p, int32_t pid)
{
	uint32_t tgid = (uint32_t)pid;
	uint8_t one = 1;

	if (pid <= 0 || (uint32_t)pid >> 22)
		return -EINVAL;
	if (bpf_map_update_elem(p->targets_fd, &tgid, &one, BPF_ANY))
		return -errno;
	return 0;
}

int profiler__tracing(const struct profiler *p, int32_t pid)
{
	uint32_t tgid = (uint32_t)pid;
	uint8_t v;

	return !bpf_map_lookup_elem(p->targets_fd, &tgid, &v);
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
static int take_stack(struct profiler *p, int32_t id, uint32_t kind, struct ship_batch *b,
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
	if (bpf_map_lookup_elem(p->stacks_fd, &id, st.ips)) {
		/* Freed between the event and this drain: the count stays, the stack is lost. */
		b->losses[LOSS_STACK_EVICTED]++;
		*ret_id = -1;
		return 0;
	}
	while (nr < SC_STACK_DEPTH && st.ips[nr])
		nr++;
	st.nr = nr;
	p->last_seen[id] = p->flush_no;
	h = hash_ips(st.ips, nr) ^ kind;
	if (p->sent_hash[id] == h)
		return 0;
	p->sent_hash[id] = h;
	if (kind == 0)
		ksym_namer__want(p->kn, st.ips, nr);
	return ship_batch_add_stack(b, &st);
}

static void drain_stats(struct profiler *p, struct ship_batch *b)
{
	static const int loss_of[SC_STAT_MAX] = {
		[SC_STAT_EVENTS] = -1,
		[SC_STAT_USTACK_COLLISION] = LOSS_USTACK_COLLISION,
		[SC_STAT_KSTACK_COLLISION] = LOSS_KSTACK_COLLISION,
		[SC_STAT_STACK_MAP_FULL] = LOSS_STACK_MAP_FULL,
		[SC_STAT_USTACK_MISSING] = LOSS_USTACK_MISSING,
		[SC_STAT_COUNTS_FULL] = LOSS_COUNTS_FULL,
		[SC_STAT_STARTS_FULL] = LOSS_STARTS_FULL,
		[SC_STAT_SNAP_RINGBUF_FULL] = LOSS_SNAP_RINGBUF_FULL,
		[SC_STAT_SNAP_FAULT] = LOSS_SNAP_FAULT,
		[SC_STAT_CRED_DROPPED] = LOSS_TARGETS_CRED,
		[SC_STAT_PY_CODE_LOST] = LOSS_PY_CODES,
		[SC_STAT_PY_MAP_BAD] = -2, /* said, not a loss: the samples keep native frames */
		[SC_STAT_JAVA_METHOD_LOST] = LOSS_PY_CODES,
		[SC_STAT_JAVA_MAP_BAD] = -2,
		[SC_STAT_V8_FUNC_LOST] = LOSS_PY_CODES,
		[SC_STAT_V8_MAP_BAD] = -2,
	};
	uint64_t *percpu = calloc((size_t)p->ncpus, sizeof(uint64_t));

	if (!percpu)
		return;
	for (uint32_t k = 0; k < SC_STAT_MAX; k++) {
		uint64_t sum = 0, delta;

		if (bpf_map_lookup_elem(p->stats_fd, &k, percpu))
			continue;
		for (int c = 0; c < p->ncpus; c++)
			sum += percpu[c];
		delta = sum - p->stat_prev[k];
		p->stat_prev[k] = sum;
		if (loss_of[k] == -2 && delta)
			log_warn("%" PRIu64
				 " runtimes (Python, Java or node) were not mapped where the "
				 "shipper said: their frames are not read",
				 delta);
		else if (loss_of[k] < 0)
			p->events += delta;
		else
			b->losses[loss_of[k]] += delta;
	}
	free(percpu);
}

/* Frees stack ids counted neither in this drain nor in the one before. */
static void evict_stale_stacks(struct profiler *p)
{
	uint32_t key, next, *prev = NULL;

	while (!bpf_map_get_next_key(p->stacks_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (key >= STACK_MAP_ENTRIES || p->last_seen[key] + 1 >= p->flush_no)
			continue;
		if (!bpf_map_delete_elem(p->stacks_fd, &key))
			p->sent_hash[key] = 0;
	}
}

int profiler__drain(struct profiler *p, struct ship_batch *b)
{
	struct timespec settle = { .tv_nsec = 1000000 };
	struct sc_key key, next, *prev = NULL;
	uint32_t n = 0;
	int map_fd, err = 0;

	p->flush_no++;
	err = profiler__read_snapshots(p, b);
	if (err)
		return err;
	/*
	 * Flip the map events go to, then let programs that already read the old index finish:
	 * they run for microseconds, with preemption disabled.
	 */
	*p->active = !*p->active;
	nanosleep(&settle, NULL);
	map_fd = p->counts_fd[!*p->active];

	while (n < COUNTS_ENTRIES && !bpf_map_get_next_key(map_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(map_fd, &key, &p->vals[n]))
			continue;
		p->keys[n++] = key;
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(map_fd, &p->keys[i]);

	drain_stats(p, b);
	for (uint32_t i = 0; i < n; i++) {
		struct ship_count c = { .tgid = (int32_t)p->keys[i].tgid,
					.value = p->vals[i].value,
					.value2 = p->vals[i].value2 };

		err = take_stack(p, p->keys[i].ustack, 1, b, &c.ustack);
		if (!err && p->user_only)
			c.kstack = -1;
		else if (!err)
			err = take_stack(p, p->keys[i].kstack, 0, b, &c.kstack);
		if (!err)
			err = ship_batch_add_count(b, &c);
		if (err)
			return err;
	}
	evict_stale_stacks(p);
	for (int k = 0; k < LOSS_MAX; k++)
		p->losses[k] += b->losses[k];
	return ksym_namer__name(p->kn, b);
}

void profiler__ring_totals(const struct profiler *p, uint64_t ret_records[2], uint64_t ret_bytes[2])
{
	ret_records[0] = p->ring_records;
	ret_bytes[0] = p->ring_bytes;
	ret_records[1] = p->ring_unhinted;
	ret_bytes[1] = p->ring_unhinted_bytes;
}

void profiler__totals(const struct profiler *p, uint64_t *ret_events, uint64_t ret_losses[LOSS_MAX])
{
	*ret_events = p->events;
	memcpy(ret_losses, p->losses, sizeof(p->losses));
}
