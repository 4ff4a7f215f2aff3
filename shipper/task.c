// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "shipper/stacks/knames.h"
#include "shipper/network/network.h"
#include "shipper/network/tlsfind.h"
#include "shipper/task.h"
#include "shipper/output/upload.h"

#define FRAME_NAME_MAX 512
/*
 * Named stacks from snapshots, by content (user stacks in one half, kernel stacks in the
 * other): a stack seen again is not named again. Four ways a set: a stack that finds its set
 * full replaces one the flush being built does not name; only when all four are named does
 * the flush go out early (one more upload stream), which direct mapping did at every
 * collision (8 streams where 3 were due, on 110 distinct stacks).
 */
#define UNWOUND_SLOTS 4096
#define UNWOUND_WAYS 4
#define KERNEL_SUFFIX "_[k]" /* folded-format mark of a kernel frame; not uploaded */

struct stored_stack {
	uint32_t kind;
	uint32_t nr;
	int32_t named_for; /* tgid the names were made for (user stacks) */
	int named;	   /* names[] is complete */
	uint64_t ips[ROVER_MAX_STACK_DEPTH];
	struct py_frame *py; /* npy Python frames, innermost first (unwound stacks) */
	uint32_t npy;
	uint32_t rt;	 /* SC_RT_PYTHON or SC_RT_JAVA: whose frames py holds */
	uint32_t nnames; /* names, outermost first, once named: nr, or the spliced stack's */
	char **names;
	uint32_t unnamed;
	uint32_t py_unknown; /* Python frames named PY_UNKNOWN_NAME */
	uint32_t v8_first; /* 1 << enum v8_line_why of its JavaScript frames named by first lines */
	uint32_t agg_gen;  /* unwound stacks: the aggregation (ship_task.agg_gen) naming it last */
};

static void stored_free(struct stored_stack *s)
{
	if (!s)
		return;
	if (s->names)
		for (uint32_t i = 0; i < s->nnames; i++)
			free(s->names[i]);
	free(s->names);
	free(s->py);
	free(s);
}

struct ship_task *ship_task__new(uint64_t task_id)
{
	struct ship_task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->task_id = task_id;
	t->out_fd = -1;
	return t;
}

/*
 * t->stacks covers id: grown by doubling (256 at first, SHIP_MAX_STACK_ID at most), new slots
 * empty. A task of a few stacks no longer holds the whole 512 KiB index.
 */
static int stacks_cover(struct ship_task *t, int32_t id)
{
	struct stored_stack **p;
	int32_t cap = t->stacks_cap ? t->stacks_cap : 256;

	if (id < t->stacks_cap)
		return 0;
	while (cap <= id)
		cap *= 2;
	if (cap > SHIP_MAX_STACK_ID)
		cap = SHIP_MAX_STACK_ID;
	p = realloc(t->stacks, (size_t)cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + t->stacks_cap, 0, (size_t)(cap - t->stacks_cap) * sizeof(*p));
	t->stacks = p;
	t->stacks_cap = cap;
	return 0;
}

static void pending_free(struct pending_flush *p)
{
	for (uint32_t i = 0; p && i < p->n; i++)
		free(p->g[i].b.data);
	free(p);
}

/* Flushes kept for an upload that will not be: a file output, or the task's end. */
static void drop_pending(struct ship_task *t)
{
	for (; t->npending; t->npending--)
		pending_free(t->pending[t->npending - 1]);
}

void ship_task__free(struct ship_task *t)
{
	if (!t)
		return;
	net_task__free(t->net);
	tls_finder__free(t->tls);
	knames__free(t->knames);
	py_finder__free(t->pyfind);
	if (t->own_pycodes)
		pycodes__free(t->pycodes);
	free(t->net_pending);
	/* Not all 65536 ids: the table's untouched pages stay unmapped (a fault each). */
	for (int32_t i = 0; t->stacks && i < t->stacks_end; i++)
		stored_free(t->stacks[i]);
	free(t->stacks);
	for (size_t i = 0; t->unwound && i < UNWOUND_SLOTS; i++)
		stored_free(t->unwound[i]);
	free(t->unwound);
	free(t->agg);
	drop_pending(t);
	free(t->be);
	profile__free(t->profile);
	if (t->out_fd >= 0)
		close(t->out_fd);
	free(t);
}

static void read_comm(int pid, char comm[16])
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(comm, 16, "pid-%d", pid);
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, 15);
	close(fd);
	if (n <= 0) {
		snprintf(comm, 16, "pid-%d", pid);
		return;
	}
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
}

static int begin_network(struct ship_task *t, const struct task_spec *spec)
{
	struct net_task_opts o = { .task_id = spec->task_id,
				   .report_interval_ms = spec->flush_ms,
				   .meter_prefix = t->net_prefix };

	if (spec->flush_ms < 100)
		return -EPROTO;
	t->net = net_task__new(&o);
	if (!t->net)
		return -errno;
	t->spec = *spec;
	t->have_spec = 1;
	for (uint32_t i = 0; i < spec->npids; i++) {
		read_comm(spec->pids[i], t->comms[i]);
		net_task__set_comm(t->net, spec->pids[i], t->comms[i]);
	}
	if (t->net_pending) {
		int err = ship_task__set_network(t, t->net_pending);

		free(t->net_pending);
		t->net_pending = NULL;
		return err;
	}
	return 0;
}

/* The access log's network task: made by whichever comes first, the supervisor's word or the
 * worker's begin. */
static int alog_net(struct ship_task *t)
{
	struct net_task_opts o = { .task_id = t->task_id, .report_interval_ms = 1000 };

	if (t->net)
		return t->alog ? 0 : -EPROTO;
	t->net = net_task__new(&o);
	if (!t->net)
		return -errno;
	t->alog = 1;
	return 0;
}

int ship_task__set_accesslog(struct ship_task *t, const struct msg_output_accesslog *o)
{
	int err = o->task_id == t->task_id ? alog_net(t) : -EPROTO;

	if (!err)
		err = net_task__access_log(t->net, o);
	if (err)
		return err;
	t->backend = 1;
	t->alog_period_ms = o->flush_period_ms;
	t->alog_max = o->flush_max_count;
	t->alog_next_ms = now_mono_ms() + o->flush_period_ms;
	return 0;
}

int ship_task__alog_flush(struct ship_task *t, uint64_t now_ms, bool last, struct spool_batch *b)
{
	int err;

	if (!t->alog || !t->alog_period_ms)
		return 0;
	if (!last && now_ms < t->alog_next_ms && net_task__alog_pending(t->net) < t->alog_max)
		return 0;
	t->alog_next_ms = now_ms + t->alog_period_ms;
	err = net_task__alog_flush(t->net, last, b);
	return err ? err : b->nmsgs > 0;
}

int ship_task__begin(struct ship_task *t, const struct task_spec *spec, struct symbolizer *sym)
{
	if (!t->have_spec && spec->type == TASK_ACCESS_LOG && spec->task_id == t->task_id &&
	    spec->npids <= ROVER_MAX_PIDS && spec->flush_ms >= 100) {
		int err = alog_net(t);

		if (err)
			return err;
		t->spec = *spec;
		t->have_spec = 1;
		return 0;
	}
	if (t->have_spec || spec->task_id != t->task_id || !spec->npids ||
	    spec->npids > ROVER_MAX_PIDS ||
	    (spec->type != TASK_ON_CPU && spec->type != TASK_OFF_CPU && spec->type != TASK_NETWORK))
		return -EPROTO;
	if (spec->type == TASK_NETWORK)
		return begin_network(t, spec);
	t->spec = *spec;
	t->have_spec = 1;
	t->py_mode = spec->flags & TASK_PYTHON_NATIVE_ALL ? PY_NATIVE_ALL : PY_NATIVE_SPLICED;
	/* OFF_CPU values are nanoseconds off the CPU; profiles show microseconds. */
	t->profile = spec->type == TASK_OFF_CPU
			     ? profile__new("off_cpu", "microseconds", 0)
			     : profile__new("samples", "count", (uint64_t)spec->period_us * 1000);
	if (!t->profile)
		return -ENOMEM;
	for (uint32_t i = 0; i < spec->npids; i++) {
		read_comm(spec->pids[i], t->comms[i]);
		/* Mappings now, while the process surely exists; failures show up as [unknown]. */
		symbolizer__load_pid(sym, spec->pids[i]);
	}
	return 0;
}

int ship_task__stacks(struct ship_task *t, const struct ship_stack *s, size_t n)
{
	if (!t->have_spec)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		struct stored_stack *st;

		if (s[i].id < 0 || s[i].id >= SHIP_MAX_STACK_ID || s[i].kind > 1 ||
		    s[i].nr > ROVER_MAX_STACK_DEPTH)
			return -EPROTO;
		if (stacks_cover(t, s[i].id))
			return -ENOMEM;
		st = calloc(1, sizeof(*st));
		if (!st)
			return -ENOMEM;
		st->kind = s[i].kind;
		st->nr = s[i].nr;
		memcpy(st->ips, s[i].ips, sizeof(st->ips[0]) * s[i].nr);
		/* A reused id: the counts sent before were already named with the old content. */
		stored_free(t->stacks[s[i].id]);
		t->stacks[s[i].id] = st;
		if (s[i].id >= t->stacks_end)
			t->stacks_end = s[i].id + 1;
	}
	return 0;
}

int ship_task__ksyms(struct ship_task *t, const void *buf, size_t len)
{
	if (!t->have_spec || t->net)
		return -EPROTO;
	if (!t->knames && !(t->knames = knames__new()))
		return -ENOMEM;
	return knames__add_frame(t->knames, t->task_id, buf, len);
}

int ship_task__pycodes(struct ship_task *t, const void *buf, size_t len)
{
	const char *why = "";
	int err;

	if (!t->have_spec || t->net)
		return -EPROTO;
	if (!t->pycodes) {
		t->pycodes = pycodes__new(0);
		if (!t->pycodes)
			return -ENOMEM;
		t->own_pycodes = 1;
	}
	err = pycodes__add_frame(t->pycodes, t->task_id, t->spec.pids, t->spec.npids, buf, len,
				 &why);
	if (err != -EBADMSG)
		return err;
	/* The records are the targets': a bad one costs their names, not the task. */
	if (!t->py_bad_frames++)
		log_warn("task %llu: Python code records refused: %s; their frames are named %s "
			 "(counted, said once)",
			 (unsigned long long)t->task_id, why, PY_UNKNOWN_NAME);
	return 0;
}

/* Statuses said at the end: those of a sample that has no Python frames, or not all. */
static int py_status_said(uint32_t st)
{
	return st == PY_ST_NO_THREAD || st == PY_ST_IDLE || st == PY_ST_FAULT || st == PY_ST_CUT;
}

/*
 * The runtimes whose samples are counted by status (Python, Java, node): the statuses said at
 * the end, each a sample with no frames of the runtime or only its innermost ones.
 */
enum { RT_PY, RT_JAVA, RT_V8, RT_N };
static const struct {
	const char *label, *frames;
	uint32_t max;
} rt_kinds[RT_N] = {
	[RT_PY] = { "python", "Python", PY_ST_MAX },
	[RT_JAVA] = { "java", "Java", JAVA_ST_MAX },
	[RT_V8] = { "node", "JavaScript", V8_ST_MAX },
};

/* Samples of target i in status st of runtime rt, 0 for a status not said. */
static uint64_t rt_status(const struct ship_task *t, unsigned rt, uint32_t i, uint32_t st)
{
	switch (rt) {
	case RT_PY:
		return py_status_said(st) ? t->py_status[i][st] : 0;
	case RT_JAVA:
		return st >= JAVA_ST_NOT_IN_JAVA ? t->java_status[i][st] : 0;
	default:
		return st >= V8_ST_NO_JS ? t->v8_status[i][st] : 0;
	}
}

/* "without" or "with only the innermost", and the status's name. */
static const char *rt_which(unsigned rt, uint32_t st)
{
	int cut = rt == RT_PY	  ? st == PY_ST_CUT
		  : rt == RT_JAVA ? st == JAVA_ST_CUT
				  : st != V8_ST_NO_JS;

	return cut ? "with only the innermost" : "without";
}

static const char *rt_name(unsigned rt, uint32_t st)
{
	return rt == RT_PY     ? py_status_name(st)
	       : rt == RT_JAVA ? java_status_name(st)
			       : v8_status_name(st);
}

void ship_task__py_log(struct ship_task *t)
{
	for (unsigned rt = 0; rt < RT_N; rt++)
		for (uint32_t i = 0; t->have_spec && !t->net && i < t->spec.npids; i++)
			for (uint32_t st = 0; st < rt_kinds[rt].max; st++)
				if (rt_status(t, rt, i, st))
					log_info("task %llu: pid %d: %llu samples %s %s frames: %s",
						 (unsigned long long)t->task_id, t->spec.pids[i],
						 (unsigned long long)rt_status(t, rt, i, st),
						 rt_which(rt, st), rt_kinds[rt].frames,
						 rt_name(rt, st));
	if (t->py_unknown)
		log_info("task %llu: %llu samples with Python frames whose code record was not "
			 "there, named %s",
			 (unsigned long long)t->task_id, (unsigned long long)t->py_unknown,
			 PY_UNKNOWN_NAME);
	if (t->v8_first_line[V8_LINE_NO_OFFSET] + t->v8_first_line[V8_LINE_NO_TABLE] +
	    t->v8_first_line[V8_LINE_NOT_FOUND])
		log_info("task %llu: samples with JavaScript frames named by their function's first "
			 "line: %llu with no offset (optimized code), %llu without a source "
			 "position table, %llu whose table or source gave no line",
			 (unsigned long long)t->task_id,
			 (unsigned long long)t->v8_first_line[V8_LINE_NO_OFFSET],
			 (unsigned long long)t->v8_first_line[V8_LINE_NO_TABLE],
			 (unsigned long long)t->v8_first_line[V8_LINE_NOT_FOUND]);
	if (t->py_bad_frames)
		log_warn("task %llu: %llu frames of Python code records refused",
			 (unsigned long long)t->task_id, (unsigned long long)t->py_bad_frames);
}

/*
 * A kernel frame's name: the worker's when it gave one, else kallsyms' (read at the first such
 * frame: a worker without the kernel's lookup, or past its bound). 1 when named.
 */
static int kernel_name(const struct knames *kn, struct symbolizer *sym, uint64_t ip, char *buf,
		       size_t len)
{
	const char *name;

	if (!knames__get(kn, ip, &name))
		return symbolizer__kernel(sym, ip, buf, len);
	return symbolizer__kernel_named(sym, name, buf, len);
}

/* Names st's frames (outermost first) for tgid, once. 0 or -errno. */
static int name_stack(struct stored_stack *st, int32_t tgid, struct symbolizer *sym,
		      const struct knames *kn)
{
	char buf[FRAME_NAME_MAX];

	if (st->named && (st->kind == 0 || st->named_for == tgid))
		return 0;
	st->named = 0;
	/* Named before (for another process), maybe spliced: that array has nnames entries, not
	 * nr; a new one of nr. */
	if (st->names) {
		for (uint32_t i = 0; i < st->nnames; i++)
			free(st->names[i]);
		free(st->names);
		st->nnames = 0;
	}
	st->names = calloc(st->nr ? st->nr : 1, sizeof(char *));
	if (!st->names)
		return -ENOMEM;
	st->unnamed = 0;
	st->nnames = st->nr;
	for (uint32_t i = 0; i < st->nr; i++) {
		uint64_t ip = st->ips[st->nr - 1 - i];
		int named;

		if (st->kind == 0) {
			size_t len;

			named = kernel_name(kn, sym, ip, buf, sizeof(buf) - 4);
			len = strlen(buf);
			memcpy(buf + len, KERNEL_SUFFIX, sizeof(KERNEL_SUFFIX));
		} else {
			/*
			 * Return addresses point after the call: look up ip - 1 so a call that
			 * ends a function is named after its caller, as perf does.
			 */
			named = symbolizer__user(sym, tgid, i == st->nr - 1 ? ip : ip - 1, buf,
						 sizeof(buf));
		}
		st->unnamed += named != 1;
		st->names[i] = strdup(buf);
		if (!st->names[i])
			return -ENOMEM;
	}
	st->named_for = tgid;
	st->named = 1;
	return 0;
}

/* The index of tgid among the task's targets, -1 for none. */
static int target_of(const struct ship_task *t, int32_t tgid)
{
	for (uint32_t i = 0; i < t->spec.npids; i++)
		if (t->spec.pids[i] == tgid)
			return (int)i;
	return -1;
}

/*
 * The index of tgid among the task's targets; for a TASK_CHILDREN task, a process the task
 * took on while it ran (its worker traces the children the launcher let on) becomes a target
 * here when its first record comes, up to ROVER_MAX_PIDS in all, its name and mappings read
 * now. The files of a process the launcher never pinned are refused to us all the same, so a
 * worker naming any other process gets nothing of it. -1 for none.
 */
static int target_or_child(struct ship_task *t, int32_t tgid, struct symbolizer *sym,
			   int *ret_added)
{
	int i = target_of(t, tgid);

	*ret_added = 0;
	if (i >= 0 || !(t->spec.flags & TASK_CHILDREN) || tgid <= 0 || (uint32_t)tgid >> 22)
		return i;
	if (t->spec.npids >= ROVER_MAX_PIDS) {
		if (!t->said_children_full++)
			log_warn("task %llu: more than %d processes with its children: the samples "
				 "of the later ones are not kept",
				 (unsigned long long)t->task_id, ROVER_MAX_PIDS);
		return -1;
	}
	i = (int)t->spec.npids++;
	t->spec.pids[i] = tgid;
	read_comm(tgid, t->comms[i]);
	symbolizer__load_pid(sym, tgid);
	*ret_added = 1;
	return i;
}

/* A flush's upload being built: a batch per target (by its index in the spec). */
struct flush_build {
	struct spool_batch b[ROVER_MAX_PIDS];
};

static void build_init(struct ship_task *t, struct flush_build *fb)
{
	for (uint32_t i = 0; i < ROVER_MAX_PIDS; i++)
		fb->b[i] = (struct spool_batch){ .task_id = t->task_id };
}

static void build_free(struct flush_build *fb)
{
	for (uint32_t i = 0; i < ROVER_MAX_PIDS; i++)
		free(fb->b[i].data);
}

/*
 * Keeps a flush's batches until they can go to the spool; the oldest flush goes when there is
 * no room. The batches are the flush's from here (fb is left empty). 0 or -ENOMEM.
 */
static int keep_pending(struct ship_task *t, struct flush_build *fb)
{
	struct pending_flush *p = NULL;
	uint64_t samples = 0;

	for (uint32_t i = 0; i < t->spec.npids && i < ROVER_MAX_PIDS; i++) {
		if (!fb->b[i].nmsgs)
			continue;
		if (!p && !(p = calloc(1, sizeof(*p))))
			return -ENOMEM;
		p->g[p->n].pid = t->spec.pids[i];
		p->g[p->n++].b = fb->b[i];
		samples += fb->b[i].samples;
		fb->b[i] = (struct spool_batch){ .task_id = t->task_id };
	}
	if (!p)
		return 0;
	t->up_taken += samples;
	p->now_ms = (int64_t)now_unix_ms();
	if (t->npending == SHIP_MAX_PENDING) {
		for (uint32_t i = 0; i < t->pending[0]->n; i++)
			if (!t->pending[0]->g[i].taken)
				t->up_dropped += t->pending[0]->g[i].b.samples;
		pending_free(t->pending[0]);
		memmove(&t->pending[0], &t->pending[1],
			sizeof(t->pending[0]) * (SHIP_MAX_PENDING - 1));
		t->npending--;
	}
	t->pending[t->npending++] = p;
	return 0;
}

static void upload_stack_of(struct upload_stack *u, const struct stored_stack *st, int32_t id)
{
	*u = (struct upload_stack){ .id = -1 };
	if (!st)
		return;
	u->id = id;
	u->nr = st->nnames;
	u->names = st->names;
	u->cut = st->kind == 0 ? strlen(KERNEL_SUFFIX) : 0;
}

/* Names one count, adds it to the profile and, when fb is given, to the upload. */
static int count_one(struct ship_task *t, const struct ship_count *c, struct symbolizer *sym,
		     const char **frames, struct flush_build *fb)
{
	struct stored_stack *us = NULL, *ks = NULL;
	int added, target = target_or_child(t, c->tgid, sym, &added);
	uint64_t value;
	uint32_t nf = 0;
	int err;

	if (target < 0 && (t->spec.flags & TASK_CHILDREN) && c->tgid > 0)
		return 0; /* a child past the bound, said */
	if (target < 0 || c->ustack < -1 || c->ustack >= SHIP_MAX_STACK_ID || c->kstack < -1 ||
	    c->kstack >= SHIP_MAX_STACK_ID)
		return -EPROTO;
	if (c->ustack >= 0) {
		us = c->ustack < t->stacks_end ? t->stacks[c->ustack] : NULL;
		if (!us || us->kind != 1)
			return -EPROTO; /* counts must follow their stacks */
	}
	if (c->kstack >= 0) {
		ks = c->kstack < t->stacks_end ? t->stacks[c->kstack] : NULL;
		if (!ks || ks->kind != 0)
			return -EPROTO;
	}
	if (us) {
		err = name_stack(us, c->tgid, sym, t->knames);
		if (err)
			return err;
		for (uint32_t k = 0; k < us->nnames; k++)
			frames[nf++] = us->names[k];
		t->frames_unnamed += us->unnamed * c->value;
	}
	if (ks) {
		err = name_stack(ks, c->tgid, sym, t->knames);
		if (err)
			return err;
		for (uint32_t k = 0; k < ks->nnames; k++)
			frames[nf++] = ks->names[k];
	}
	if (!nf)
		frames[nf++] = "[no stack]";
	value = t->spec.type == TASK_OFF_CPU ? (c->value + 500) / 1000 : c->value;
	if (value) {
		err = profile__add(t->profile, t->comms[target], frames, nf, value);
		if (err)
			return err;
	}
	t->samples += value;
	t->switches += c->value2;
	if (fb && (c->value || c->value2)) {
		struct upload_stack uk, uu;

		upload_stack_of(&uk, ks, c->kstack);
		upload_stack_of(&uu, us, c->ustack);
		err = upload__add(&fb->b[target], t->spec.type, &uk, &uu, c->value, c->value2);
		if (err)
			return err;
	}
	return 0;
}

/*
 * One flush's snapshots that unwound to the same (kernel stack, user stack) become one upload
 * message with the values added up, as counts from the kernel's map do: the OAP gets one
 * message per distinct stack pair, not one per sample. They are held across the flush's
 * snapshot frames and sent in the batch of its counts, which the worker sends last.
 */
#define AGG_SLOTS 1024

struct agg_entry {
	int32_t kid, uid; /* uid 0 with kid 0: free (ids of unwound stacks are > 0) */
	int32_t target;	  /* the target's index: its batch */
	struct stored_stack *ks, *us;
	uint64_t value, value2;
};

/* Adds every entry to its target's batch and empties the table. 0 or -errno. */
static int agg_flush(struct ship_task *t, struct agg_entry *agg, struct flush_build *fb)
{
	int err = 0;

	/* Stacks named by the entries below may now be replaced (unwound_get). */
	t->agg_gen++;
	for (size_t i = 0; i < AGG_SLOTS; i++) {
		struct upload_stack uk, uu;

		if (!agg[i].uid && !agg[i].kid)
			continue;
		upload_stack_of(&uk, agg[i].ks, agg[i].kid);
		upload_stack_of(&uu, agg[i].us, agg[i].uid);
		if (!err)
			err = upload__add(&fb->b[agg[i].target], t->spec.type, &uk, &uu,
					  agg[i].value, agg[i].value2);
		memset(&agg[i], 0, sizeof(agg[i]));
	}
	return err;
}

/*
 * Adds values to the entry of (target, kid, uid); a full table is flushed first. 0 or -errno.
 * A user stack is one target's (unwound_get), a kernel stack may be any target's.
 */
static int agg_add(struct ship_task *t, struct agg_entry *agg, struct flush_build *fb,
		   int32_t target, struct stored_stack *ks, int32_t kid, struct stored_stack *us,
		   int32_t uid, uint64_t value, uint64_t value2)
{
	size_t h = ((size_t)(uint32_t)kid * 2654435761u) ^ (size_t)(uint32_t)uid ^
		   ((size_t)(uint32_t)target << 20);

	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < AGG_SLOTS; k++) {
			struct agg_entry *e = &agg[(h + k) % AGG_SLOTS];

			if (!e->uid && !e->kid) {
				*e = (struct agg_entry){
					.kid = kid, .uid = uid, .target = target, .ks = ks, .us = us
				};
			} else if (e->kid != kid || e->uid != uid || e->target != target) {
				continue;
			}
			/* Named by this aggregation: unwound_get keeps them until it is flushed. */
			if (ks)
				ks->agg_gen = t->agg_gen;
			if (us)
				us->agg_gen = t->agg_gen;
			e->value += value;
			e->value2 += value2;
			return 0;
		}
		int err = agg_flush(t, agg, fb);

		if (err)
			return err;
	}
	return -ENOSPC;
}

int ship_task__counts(struct ship_task *t, const struct ship_counts_hdr *hdr,
		      const struct ship_count *c, size_t n, struct symbolizer *sym)
{
	const char *frames[2 * ROVER_MAX_STACK_DEPTH + 1];
	/* Until the output is known to be a file, the flush may have to be uploaded. */
	int upload = t->backend || t->out_fd < 0;
	struct flush_build fb;
	int err = 0;

	/* Counts are a stack task's: a NETWORK task has no profile to count into. */
	if (!t->have_spec || hdr->task_id != t->task_id || !t->profile)
		return -EPROTO;
	build_init(t, &fb);
	for (int k = 0; k < LOSS_MAX; k++)
		t->losses[k] += hdr->losses[k];
	for (size_t i = 0; i < n && !err; i++)
		err = count_one(t, &c[i], sym, frames, upload ? &fb : NULL);
	/* The flush's counts come after its snapshots: one stream carries both. */
	if (!err && upload && t->agg)
		err = agg_flush(t, t->agg, &fb);
	if (!err && upload)
		err = keep_pending(t, &fb);
	build_free(&fb);
	return err;
}

/* The address of st's native frame i (outermost first) that naming looked up. */
static uint64_t lookup_addr(const struct stored_stack *st, uint32_t i)
{
	uint64_t ip = st->ips[st->nr - 1 - i];

	return i == st->nr - 1 ? ip : ip - 1;
}

/*
 * name (NULL: no memory) as the next of names[*n] (cap at most, outermost first): past cap the
 * outermost is dropped, the innermost names kept. 0 or -ENOMEM.
 */
static int names_push(char **names, size_t *n, size_t cap, char *name)
{
	if (!name)
		return -ENOMEM;
	if (*n == cap) {
		free(names[0]);
		memmove(names, names + 1, (cap - 1) * sizeof(*names));
		(*n)--;
	}
	names[(*n)++] = name;
	return 0;
}

/*
 * st's names (native, from name_stack) become the spliced stack's: its Python frames named
 * and put in place of the evaluation loop's frames (py_splice, shipper/stacks/python.h). The
 * interpreter's file is the one the innermost loop frame is in. Java's and JavaScript's frames
 * go where their splices say; a compiled Java frame becomes a frame per method inlined at its
 * pc, each with its line. 0 or -ENOMEM.
 */
static int splice_names(struct ship_task *t, struct stored_stack *st, int32_t tgid,
			struct symbolizer *sym)
{
	struct py_native nat[ROVER_MAX_STACK_DEPTH];
	struct py_item items[ROVER_MAX_STACK_DEPTH + PY_MAX_FRAMES];
	struct jscope scopes[JAVA_MAX_SCOPES];
	struct sym_mapping interp, m;
	char buf[FRAME_NAME_MAX];
	int have_interp = 0;
	char **names;
	size_t n, nn = 0, cap;

	if (st->rt == SC_RT_NODE) {
		n = v8_splice(st->ips, st->nr, st->py, st->npy, items,
			      sizeof(items) / sizeof(items[0]));
		goto named;
	}
	if (st->rt == SC_RT_JAVA) {
		/* Java: where the native unwinder stopped in code no file holds (JIT code). */
		for (uint32_t i = 0; i < st->nr; i++) {
			nat[i] = (struct py_native){ 0 };
			nat[i].jit = symbolizer__mapping(sym, tgid, lookup_addr(st, i), &m) != 1;
		}
		n = java_splice(nat, st->nr, st->py, st->npy, items,
				sizeof(items) / sizeof(items[0]));
		goto named;
	}
	for (uint32_t i = st->nr; i-- > 0 && !have_interp;)
		if (py_is_eval_loop(st->names[i]))
			have_interp = symbolizer__mapping(sym, tgid, lookup_addr(st, i), &interp) ==
				      1;
	for (uint32_t i = 0; i < st->nr; i++) {
		nat[i].eval = py_is_eval_loop(st->names[i]);
		nat[i].interp = have_interp &&
				symbolizer__mapping(sym, tgid, lookup_addr(st, i), &m) == 1 &&
				m.dev == interp.dev && m.ino == interp.ino;
	}
	n = py_splice(nat, st->nr, st->py, st->npy, t->py_mode, items,
		      sizeof(items) / sizeof(items[0]));
named:
	/* A compiled Java frame is a frame per method inlined at its pc: more names than items,
	 * up to the items' bound (the outermost dropped past it). */
	cap = sizeof(items) / sizeof(items[0]);
	names = calloc(cap, sizeof(*names));
	if (!names)
		return -ENOMEM;
	st->py_unknown = 0;
	st->v8_first = 0;
	for (size_t k = 0; k < n; k++) {
		struct py_frame_src src;
		const struct py_frame *f;
		size_t ns = 1;

		if (items[k].native >= 0) {
			/* A copy: a splice of a hostile target's records may name a native
			 * frame twice, and each name must be one (never a NULL taken before). */
			if (names_push(names, &nn, cap, strdup(st->names[items[k].native])))
				goto nomem;
			continue;
		}
		f = &st->py[items[k].py];
		if (st->rt == SC_RT_JAVA &&
		    (f->instr & JAVA_FRAME_KIND_MASK) == JAVA_FRAME_COMPILED) {
			ns = jnmethods__scopes(t->pycodes, tgid, f, scopes, JAVA_MAX_SCOPES);
			if (!ns) {
				st->py_unknown++;
				if (names_push(names, &nn, cap, strdup(JAVA_UNKNOWN_NAME)))
					goto nomem;
				continue;
			}
		}
		/* Outermost first: a compiled frame's scopes come innermost first. */
		for (size_t q = ns; q-- > 0;) {
			struct py_frame sf = *f;
			int named;

			if (st->rt == SC_RT_JAVA &&
			    (f->instr & JAVA_FRAME_KIND_MASK) == JAVA_FRAME_COMPILED)
				sf = (struct py_frame){ .code = scopes[q].method,
							.stamp = scopes[q].stamp,
							.instr = JAVA_FRAME_INTERPRETED |
								 (scopes[q].bci >= 0
									  ? (uint32_t)scopes[q].bci
									  : JAVA_FRAME_NO_BCI) };
			named = st->rt == SC_RT_NODE ? v8funcs__name(t->pycodes, tgid, &sf, buf,
								     sizeof(buf), &src)
				: st->rt == SC_RT_JAVA
					? sf.stamp && jmethods__name(t->pycodes, tgid, &sf, buf,
								     sizeof(buf), &src)
					: pycodes__name(t->pycodes, tgid, &sf, buf, sizeof(buf),
							&src);
			if (!named) {
				st->py_unknown++;
				if (st->rt == SC_RT_JAVA && !sf.stamp)
					snprintf(buf, sizeof(buf), "%s", JAVA_UNKNOWN_NAME);
			} else {
				if (st->rt == SC_RT_NODE && src.v8_why < V8_LINE_N)
					st->v8_first |= (1u << src.v8_why) & ~1u;
				if (t->profile)
					(void)profile__frame_source(t->profile, buf, src.qualname,
								    src.file, src.line);
			}
			if (names_push(names, &nn, cap, strdup(buf)))
				goto nomem;
		}
	}
	/* The native frames hidden. */
	for (uint32_t i = 0; i < st->nr; i++)
		free(st->names[i]);
	free(st->names);
	st->names = names;
	st->nnames = (uint32_t)nn;
	return 0;
nomem:
	for (size_t j = 0; j < nn; j++)
		free(names[j]);
	free(names);
	return -ENOMEM;
}

/*
 * The named stack of this content for tgid: from the cache, else made and named. *ret_old:
 * a stack it replaced that the flush being built names (the caller flushes, then frees it).
 */
static int unwound_get(struct ship_task *t, uint32_t kind, int32_t tgid, const uint64_t *ips,
		       uint32_t nr, const struct py_frame *py, uint32_t npy, uint32_t rt,
		       struct symbolizer *sym, struct stored_stack **ret, int32_t *ret_id,
		       struct stored_stack **ret_old)
{
	uint64_t h = 1469598103934665603ULL ^ (uint32_t)tgid;
	struct stored_stack **set, **slot = NULL, *st;
	int err;

	for (uint32_t i = 0; i < nr; i++)
		h = (h ^ ips[i]) * 1099511628211ULL;
	for (uint32_t i = 0; i < npy; i++)
		h = (h ^ py[i].code ^ ((uint64_t)py[i].stamp << 32 | py[i].instr)) *
		    1099511628211ULL;
	set = &t->unwound[(h >> 7) % (UNWOUND_SLOTS / 2 / UNWOUND_WAYS) * UNWOUND_WAYS +
			  (kind ? UNWOUND_SLOTS / 2 : 0)];
	for (int w = 0; w < UNWOUND_WAYS; w++) {
		st = set[w];
		if (st && st->named_for == tgid && st->nr == nr &&
		    !memcmp(st->ips, ips, nr * sizeof(*ips)) && st->npy == npy && st->rt == rt &&
		    (!npy || !memcmp(st->py, py, npy * sizeof(*py)))) {
			st->agg_gen = t->agg_gen;
			/* Upload stack ids of these stacks: above those of the worker's stack map. */
			*ret_id = SHIP_MAX_STACK_ID + (int32_t)(&set[w] - t->unwound);
			*ret = st;
			return 0;
		}
	}
	/* An empty way, else one no pending entry names, else (all four named) any. */
	for (int w = 0; w < UNWOUND_WAYS && !slot; w++)
		if (!set[w])
			slot = &set[w];
	for (int w = 0; w < UNWOUND_WAYS && !slot; w++)
		if (set[w]->agg_gen != t->agg_gen)
			slot = &set[w];
	if (!slot)
		slot = &set[(h >> 40) % UNWOUND_WAYS];
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->kind = kind;
	st->nr = nr;
	memcpy(st->ips, ips, nr * sizeof(*ips));
	if (npy) {
		st->py = malloc(npy * sizeof(*py));
		if (!st->py) {
			free(st);
			return -ENOMEM;
		}
		memcpy(st->py, py, npy * sizeof(*py));
		st->npy = npy;
		st->rt = rt;
	}
	err = name_stack(st, tgid, sym, t->knames);
	if (!err && npy)
		err = splice_names(t, st, tgid, sym);
	if (err) {
		stored_free(st);
		return err;
	}
	st->agg_gen = t->agg_gen;
	if (*slot && (*slot)->agg_gen != t->agg_gen)
		stored_free(*slot); /* named by no entry, nor by any upload still to be built */
	else
		*ret_old = *slot;
	*slot = st;
	*ret_id = SHIP_MAX_STACK_ID + (int32_t)(slot - t->unwound);
	*ret = st;
	return 0;
}

int ship_task__end_uploads(struct ship_task *t)
{
	struct flush_build fb;
	int err = 0;

	build_init(t, &fb);
	if (t->agg)
		err = agg_flush(t, t->agg, &fb);
	if (!err)
		err = keep_pending(t, &fb);
	build_free(&fb);
	return err;
}

/*
 * Snapshots of a target unwound before its first hint: the stack its threads use is seen by
 * then (they are its busiest), and the first flush brings that many at 100 Hz.
 */
#define STACK_HINT_LEARN 16

/*
 * The bytes a target's snapshots should hold when its unwindings read up to top: twice that
 * and 1 KiB more, for the deeper calls not seen yet, in 256-byte steps.
 */
static uint32_t stack_hint_for(uint64_t top)
{
	uint64_t want = (top * 2 + 1024 + 255) & ~(uint64_t)255;

	if (want > SHIP_SNAPSHOT_MAX_STACK)
		return SHIP_SNAPSHOT_MAX_STACK;
	return want < SHIP_STACK_HINT_MIN ? SHIP_STACK_HINT_MIN : (uint32_t)want;
}

/*
 * What one unwinding of target's snapshot read, for its next hint. A stack cut short by the
 * hint lifts it (the worker sends whole snapshots again) and the hint is learnt anew, so that
 * the deeper stacks are in what it learns; otherwise it only grows.
 */
static void stack_reach_seen(struct ship_task *t, int target, const struct ship_snapshot *s,
			     const struct unwind_reach *r)
{
	uint32_t want;

	t->snap_bytes += s->stack_len;
	if (r->cut && (s->flags & SHIP_SNAP_TRIMMED)) {
		/* Its outer frames are lost. Sent before the hint was lifted: counted only. */
		t->stacks_cut++;
		if (t->stack_hint[target] < SHIP_SNAPSHOT_MAX_STACK) {
			t->stack_hint[target] = SHIP_SNAPSHOT_MAX_STACK;
			t->stack_hint_due[target] = 1;
			t->stack_seen[target] = 0;
		}
		return;
	}
	if (r->top > t->stack_top[target])
		t->stack_top[target] = r->top;
	if (t->stack_seen[target] < STACK_HINT_LEARN) {
		/* Learnt from whole snapshots only: those cut before a lift arrive after it. */
		if ((s->flags & SHIP_SNAP_TRIMMED) || ++t->stack_seen[target] < STACK_HINT_LEARN)
			return;
		/* Learnt: the hint, smaller than a lifted one or not. */
		t->stack_hint[target] = stack_hint_for(t->stack_top[target]);
		t->stack_hint_due[target] = 1;
		return;
	}
	want = stack_hint_for(t->stack_top[target]);
	if (want > t->stack_hint[target]) {
		t->stack_hint[target] = want;
		t->stack_hint_due[target] = 1;
	}
}

size_t ship_task__stack_hints(struct ship_task *t, struct msg_stack_hint *ret, size_t max)
{
	size_t n = 0;

	for (uint32_t i = 0; i < t->spec.npids && n < max; i++) {
		if (!t->stack_hint_due[i])
			continue;
		t->stack_hint_due[i] = 0;
		ret[n++] = (struct msg_stack_hint){ .task_id = t->task_id,
						    .tgid = t->spec.pids[i],
						    .bytes = t->stack_hint[i] };
	}
	return n;
}

/* Whether a native frame's address (a return address unless it is the sampled pc) is in no
 * file's mapping: code a JIT made, Java's code cache. */
static bool in_jit(struct symbolizer *sym, int32_t tgid, uint64_t ip, bool sampled)
{
	struct sym_mapping m;

	return symbolizer__mapping(sym, tgid, sampled ? ip : ip - 1, &m) != 1;
}

/*
 * The native frames outside a Java stack's Java frames (java_splice): for each entry frame of
 * py[npy] (JAVA_FRAME_ENTRY, the call stub's frame pointer in code), the native frames that
 * called it, unwound from the caller's frame pointer and return address that the call stub's
 * frame holds at fp and fp + 8 (in v's stack copy) and appended to ips[*nu..max), up to the
 * first in JIT code (the next Java frames'); the entry frame's stamp becomes their count and
 * its code 0 (a stack address would make each sample's stack another). The frames of the
 * sampled registers' unwinding are cut the same way first. What each unwinding read joins
 * *reach (an entry frame past the copy is a cut: the hint then grows).
 */
static void java_outside(struct unwinder *unw, struct symbolizer *sym,
			 const struct snapshot_view *v, uint64_t *ips, uint32_t *nu, uint32_t max,
			 struct py_frame *py, uint32_t npy, struct unwind_reach *reach)
{
	uint32_t n = 0;
	bool any = false;

	for (uint32_t k = 0; k < npy; k++)
		any |= (py[k].instr & JAVA_FRAME_KIND_MASK) == JAVA_FRAME_ENTRY;
	if (!any)
		return;
	while (n < *nu && !in_jit(sym, v->s.tgid, ips[n], n == 0))
		n++;
	for (uint32_t k = 0; k < npy; k++) {
		struct unwind_reach r;
		struct unwind_regs regs;
		uint64_t fp = py[k].code, off = fp - v->s.sp, got;
		uint32_t c = 0;

		if ((py[k].instr & JAVA_FRAME_KIND_MASK) != JAVA_FRAME_ENTRY)
			continue;
		py[k].code = 0;
		py[k].stamp = 0;
		py[k].instr = JAVA_FRAME_ENTRY;
		if (fp < v->s.sp || off > v->s.stack_len || v->s.stack_len - off < 16) {
			if (fp >= v->s.sp && off < SHIP_SNAPSHOT_MAX_STACK) {
				reach->cut = true;
				if (off + 16 > reach->top)
					reach->top = (uint32_t)(off + 16);
			}
			continue;
		}
		memcpy(&regs.bp, v->stack + off, 8);
		memcpy(&regs.ip, v->stack + off + 8, 8);
		regs.sp = fp + 16;
		if (n >= max)
			continue;
		got = unwinder__unwind_reach(unw, v->s.tgid, &regs, v->stack + off + 16,
					     v->s.stack_len - off - 16, ips + n, max - n, &r);
		while (c < got && !in_jit(sym, v->s.tgid, ips[n + c], false))
			c++;
		n += c;
		py[k].stamp = c;
		if (r.top && off + 16 + r.top > reach->top)
			reach->top = (uint32_t)(off + 16 + r.top);
		reach->cut |= r.cut;
	}
	*nu = n;
}

int ship_task__snapshots(struct ship_task *t, const void *buf, size_t len, struct symbolizer *sym,
			 struct unwinder *unw)
{
	const char *frames[2 * ROVER_MAX_STACK_DEPTH + PY_MAX_FRAMES + 1];
	uint64_t uips[ROVER_MAX_STACK_DEPTH], kips[ROVER_MAX_STACK_DEPTH];
	struct py_frame py[PY_MAX_FRAMES];
	/* As ship_task__counts: until the output is known to be a file, it may be uploaded. */
	int upload = t->backend || t->out_fd < 0;
	struct flush_build fb;
	struct agg_entry *agg = NULL;
	struct snapshot_iter it;
	struct snapshot_view v;
	int rc;

	if (!t->have_spec || snapshots__begin(&it, buf, len) || it.task_id != t->task_id)
		return -EPROTO;
	build_init(t, &fb);
	if (upload && !t->agg && !(t->agg = calloc(AGG_SLOTS, sizeof(*t->agg))))
		return -ENOMEM;
	agg = upload ? t->agg : NULL;
	if (!t->unwound) {
		t->unwound = calloc(UNWOUND_SLOTS, sizeof(*t->unwound));
		if (!t->unwound)
			return -ENOMEM;
	}
	while ((rc = snapshots__next(&it, &v)) == 1) {
		struct unwind_regs regs = { .ip = v.s.ip, .sp = v.s.sp, .bp = v.s.bp };
		int added, target = target_or_child(t, v.s.tgid, sym, &added);
		struct unwind_reach reach;
		struct stored_stack *us, *ks = NULL;
		int32_t uid, kid = -1;
		uint32_t nu, nf = 0;
		uint64_t value;
		struct stored_stack *old[2] = { NULL, NULL };

		if (target < 0 && (t->spec.flags & TASK_CHILDREN))
			continue; /* a child past the bound, said */
		if (target < 0) {
			rc = -EPROTO;
			break;
		}
		/* A child's CFI at its first snapshot (the first pids' were read at the begin). */
		if (added)
			(void)unwinder__load_pid(unw, v.s.tgid);
		nu = (uint32_t)unwinder__unwind_reach(unw, v.s.tgid, &regs, v.stack, v.s.stack_len,
						      uips, ROVER_MAX_STACK_DEPTH, &reach);
		memcpy(kips, v.kips, v.s.nkips * sizeof(uint64_t));
		memcpy(py, v.py, v.s.npy * sizeof(struct py_frame));
		if (SC_RT_OF(v.s.pystatus) == SC_RT_JAVA)
			java_outside(unw, sym, &v, uips, &nu, ROVER_MAX_STACK_DEPTH, py, v.s.npy,
				     &reach);
		stack_reach_seen(t, target, &v.s, &reach);
		if (SC_RT_OF(v.s.pystatus) == SC_RT_JAVA)
			t->java_status[target][SC_RT_ST(v.s.pystatus)]++;
		else if (SC_RT_OF(v.s.pystatus) == SC_RT_NODE)
			t->v8_status[target][SC_RT_ST(v.s.pystatus)]++;
		else
			t->py_status[target][SC_RT_ST(v.s.pystatus)]++;
		if (v.s.npy && !t->pycodes) {
			/* Frames before any record: named PY_UNKNOWN_NAME, from an empty cache. */
			t->pycodes = pycodes__new(0);
			if (!t->pycodes) {
				rc = -ENOMEM;
				break;
			}
			t->own_pycodes = 1;
		}
		rc = unwound_get(t, 1, v.s.tgid, uips, nu, py, v.s.npy, SC_RT_OF(v.s.pystatus), sym,
				 &us, &uid, &old[0]);
		if (!rc && v.s.nkips)
			rc = unwound_get(t, 0, v.s.tgid, kips, v.s.nkips, NULL, 0, 0, sym, &ks,
					 &kid, &old[1]);
		/* A stack that took the slot of another: entries naming the old one go out first. */
		if (!rc && (old[0] || old[1]) && agg)
			rc = agg_flush(t, agg, &fb);
		stored_free(old[0]);
		stored_free(old[1]);
		if (rc)
			break;
		for (uint32_t k = 0; k < us->nnames; k++)
			frames[nf++] = us->names[k];
		t->frames_unnamed += us->unnamed * v.s.value;
		t->py_unknown += us->py_unknown > 0;
		for (uint32_t w = 1; w < V8_LINE_N; w++)
			t->v8_first_line[w] += (us->v8_first >> w) & 1;
		for (uint32_t k = 0; ks && k < ks->nnames; k++)
			frames[nf++] = ks->names[k];
		if (!nf)
			frames[nf++] = "[no stack]";
		value = t->spec.type == TASK_OFF_CPU ? (v.s.value + 500) / 1000 : v.s.value;
		if (value) {
			rc = profile__add(t->profile, t->comms[target], frames, nf, value);
			if (rc)
				break;
		}
		t->samples += value;
		t->switches += v.s.value2;
		if (upload && (v.s.value || v.s.value2)) {
			rc = agg_add(t, agg, &fb, target, ks, kid, us, uid, v.s.value, v.s.value2);
			if (rc)
				break;
		}
	}
	/* What agg holds goes with the flush's counts (ship_task__counts); fb has only what a
	 * replaced cache slot forced out. */
	if (!rc && upload)
		rc = keep_pending(t, &fb);
	build_free(&fb);
	return rc;
}

static void net_summarize(struct ship_task *t, struct msg_output_written *ret)
{
	struct net_stats st;

	net_task__stats(t->net, &st);
	ret->samples = st.http_exchanges;
	ret->stacks = st.conns_seen;
	memcpy(ret->losses, t->losses, sizeof(ret->losses));
	ret->losses[LOSS_NET_CONNS_FULL] += st.kernel[NET_STAT_CONNS_FULL] + st.conns_refused;
	ret->losses[LOSS_NET_SYSCALLS] += st.kernel[NET_STAT_INFLIGHT_FULL];
	ret->losses[LOSS_NET_SEGMENTS] +=
		st.kernel[NET_STAT_DATA_RINGBUF] + st.kernel[NET_STAT_DATA_BUDGET];
	ret->losses[LOSS_NET_CLOSES] += st.kernel[NET_STAT_CLOSE_RINGBUF];
	ret->losses[LOSS_NET_RECORDS] += st.bad_frames + st.bad_records;
	ret->losses[LOSS_NET_PARSERS] += st.parsers_refused;
	ret->losses[LOSS_TARGETS_CRED] += st.kernel[NET_STAT_CRED_DROPPED];
}

static int net_write(struct ship_task *t, FILE *f, struct msg_output_written *ret)
{
	int err;

	/* The last interval: what moved since the last conns frame. */
	net_task__interval(t->net, now_mono_ms() * 1000000ull);
	if (t->format == FORMAT_NET_HTML) {
		struct net_report_head h = {
			.start_unix_ms = t->spec.start_unix_ms,
			.duration_ms = t->spec.duration_ms,
			.npids = t->spec.npids,
			.complete = t->ended,
		};

		memcpy(h.pids, t->spec.pids, sizeof(h.pids));
		net_task__set_head(t->net, &h);
	}
	err = net_task__write_report(t->net, f,
				     t->format == FORMAT_NET_JSON   ? NET_REPORT_JSON
				     : t->format == FORMAT_NET_HTML ? NET_REPORT_HTML
								    : NET_REPORT_TXT,
				     ret->summary, sizeof(ret->summary));
	net_summarize(t, ret);
	ret->err = -err;
	return err;
}

int ship_task__write(struct ship_task *t, FILE *f, struct msg_output_written *ret)
{
	char title[128];
	int err = 0;

	memset(ret, 0, sizeof(*ret));
	ret->task_id = t->task_id;
	if (!f)
		return -EBADF;
	if (t->net)
		return net_write(t, f, ret);
	/* A file output: flushes kept in case the data went to the backend are moot. */
	drop_pending(t);
	if (!t->profile) {
		t->profile = profile__new("samples", "count", 0);
		if (!t->profile)
			return -ENOMEM;
	}
	/* Losses travel with the profile (pprof comments, SVG <desc> and title), never silent. */
	{
		char line[192];
		uint64_t lost = 0;

		snprintf(line, sizeof(line), "rover %s profile, task %llu, %u process(es), %s",
			 t->spec.type == TASK_OFF_CPU ? "OFF_CPU" : "ON_CPU",
			 (unsigned long long)t->task_id, t->spec.npids,
			 t->ended ? "complete" : "cut short");
		profile__add_comment(t->profile, line);
		for (unsigned k = 0; k < LOSS_MAX; k++) {
			if (!t->losses[k])
				continue;
			lost += t->losses[k];
			snprintf(line, sizeof(line), "lost: %llu %s",
				 (unsigned long long)t->losses[k], loss_name(k));
			profile__add_comment(t->profile, line);
		}
		for (unsigned rt = 0; rt < RT_N; rt++) {
			for (uint32_t st = 0; st < rt_kinds[rt].max; st++) {
				uint64_t n = 0;

				for (uint32_t i = 0; i < t->spec.npids; i++)
					n += rt_status(t, rt, i, st);
				if (!n)
					continue;
				snprintf(line, sizeof(line), "%s: %llu samples %s %s frames: %s",
					 rt_kinds[rt].label, (unsigned long long)n,
					 rt_which(rt, st), rt_kinds[rt].frames, rt_name(rt, st));
				profile__add_comment(t->profile, line);
			}
		}
		if (t->py_unknown) {
			snprintf(line, sizeof(line),
				 "python: %llu samples with frames of unknown code, named %s",
				 (unsigned long long)t->py_unknown, PY_UNKNOWN_NAME);
			profile__add_comment(t->profile, line);
		}
		snprintf(title, sizeof(title), "rover %s profile%s%s",
			 t->spec.type == TASK_OFF_CPU ? "OFF_CPU" : "ON_CPU",
			 lost ? " - events lost, see the description" : "",
			 t->ended ? "" : " - cut short");
	}
	err = profile__write(t->profile, t->format, f, title);
	ret->err = -err;
	ret->samples = t->samples;
	ret->stacks = profile__nstacks(t->profile);
	ret->frames_unnamed = t->frames_unnamed;
	memcpy(ret->losses, t->losses, sizeof(ret->losses));
	profile__top(t->profile, 8, ret->summary, sizeof(ret->summary));
	return err;
}

int ship_task__set_backend(struct ship_task *t, const struct msg_output_backend *be)
{
	if (t->backend || t->out_fd >= 0 || (be->type != TASK_ON_CPU && be->type != TASK_OFF_CPU) ||
	    !memchr(be->sw_task_id, '\0', sizeof(be->sw_task_id)) || !be->sw_task_id[0] ||
	    !be->nprocs || be->nprocs > ROVER_MAX_PIDS || be->npids > ROVER_MAX_PIDS)
		return -EPROTO;
	for (uint32_t i = 0; i < be->nprocs; i++)
		if (!memchr(be->process_id[i], '\0', sizeof(be->process_id[i])) ||
		    !be->process_id[i][0])
			return -EPROTO;
	for (uint32_t i = 0; i < be->npids; i++)
		if (be->pid_proc[i].proc >= be->nprocs)
			return -EPROTO;
	t->be = malloc(sizeof(*t->be));
	if (!t->be)
		return -ENOMEM;
	memcpy(t->be, be, sizeof(*be));
	t->backend = 1;
	return 0;
}

/* The process id pid's samples go under: its own, else the task's first. */
static uint32_t proc_of(const struct ship_task *t, int32_t pid)
{
	for (uint32_t i = 0; i < t->be->npids; i++)
		if (t->be->pid_proc[i].pid == pid)
			return t->be->pid_proc[i].proc;
	return 0;
}

/* Appends the messages of from to into (the same wire format: length-prefixed messages). */
static int batch_join(struct spool_batch *into, struct spool_batch *from)
{
	uint8_t *d;

	if ((uint64_t)into->len + from->len > SPOOL_MAX_BATCH)
		return -E2BIG;
	d = realloc(into->data, (size_t)into->len + from->len);
	if (!d)
		return -ENOMEM;
	memcpy(d + into->len, from->data, from->len);
	into->data = d;
	into->len += from->len;
	into->cap = into->len;
	into->nmsgs += from->nmsgs;
	into->samples += from->samples;
	free(from->data);
	*from = (struct spool_batch){ 0 };
	return 0;
}

int ship_task__next_batch(struct ship_task *t, struct spool_batch *ret)
{
	while (t->backend && t->npending) {
		struct pending_flush *p = t->pending[0];
		struct pending_group *g = NULL;
		struct upload_meta m;
		uint32_t proc;
		int err = 0;

		for (uint32_t i = 0; i < p->n && !g; i++)
			if (!p->g[i].taken)
				g = &p->g[i];
		if (!g) {
			pending_free(p);
			t->npending--;
			memmove(&t->pending[0], &t->pending[1],
				sizeof(t->pending[0]) * t->npending);
			continue;
		}
		/* One stream per process id of the flush: its other pids' batches join this one. */
		proc = proc_of(t, g->pid);
		for (struct pending_group *o = g + 1; o < p->g + p->n && !err; o++)
			if (!o->taken && proc_of(t, o->pid) == proc) {
				err = batch_join(&g->b, &o->b);
				o->taken = !err;
			}
		g->taken = 1;
		m = (struct upload_meta){ .task_id = t->be->sw_task_id,
					  .process_id = t->be->process_id[proc],
					  .start_ms = (int64_t)t->be->start_unix_ms,
					  .now_ms = p->now_ms };
		if (!err)
			err = upload__finish(&g->b, &m);
		if (err) {
			t->up_dropped += g->b.samples;
			free(g->b.data);
			g->b = (struct spool_batch){ 0 };
			return err;
		}
		*ret = g->b;
		g->b = (struct spool_batch){ 0 };
		return 1;
	}
	return 0;
}

int ship_task__net_frame(struct ship_task *t, uint32_t type, const void *buf, size_t len,
			 struct spool_batch *meters, struct spool_batch *logs,
			 struct spool_batch *events)
{
	int err;

	if (!t->net)
		return -EPROTO;
	err = net_task__frame(t->net, type, buf, len);
	if (err || type != MSG_SHIP_NET_CONNS)
		return err;
	t->net_frames++;
	err = net_task__interval(t->net, now_mono_ms() * 1000000ull);
	if (err || !t->backend || t->monitor || t->alog)
		return err;
	err = net_task__meters(t->net, now_unix_ms(), meters, logs);
	return err ? err : net_task__events(t->net, events);
}

int ship_task__set_network(struct ship_task *t, const struct msg_output_network *o)
{
	int err;

	if (!t->net || o->task_id != t->task_id || o->nprocs > ROVER_MAX_PIDS ||
	    o->nrules > ROVER_NET_MAX_RULES || !memchr(o->sw_task_id, '\0', sizeof(o->sw_task_id)))
		return -EPROTO;
	if (o->nprocs) {
		err = net_task__set_processes(t->net, o->procs, o->nprocs);
		if (err)
			return err;
	}
	if (o->nrules) {
		err = net_task__add_rules(t->net, o->rules, o->nrules);
		if (err)
			return err;
	}
	if (o->monitor) {
		t->monitor = 1;
		net_task__monitor(t->net);
	}
	t->backend = 1;
	return 0;
}

void ship_task__summarize(struct ship_task *t, struct msg_output_written *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->task_id = t->task_id;
	if (t->net) {
		struct net_stats st;

		net_summarize(t, ret);
		net_task__stats(t->net, &st);
		snprintf(ret->summary, sizeof(ret->summary),
			 "%llu connections, %llu HTTP exchanges\n",
			 (unsigned long long)st.conns_seen, (unsigned long long)st.http_exchanges);
		return;
	}
	ret->samples = t->samples;
	ret->frames_unnamed = t->frames_unnamed;
	memcpy(ret->losses, t->losses, sizeof(ret->losses));
	if (t->profile) {
		ret->stacks = profile__nstacks(t->profile);
		profile__top(t->profile, 8, ret->summary, sizeof(ret->summary));
	}
}
