// SPDX-License-Identifier: Apache-2.0
/*
 * Continuous profiling (supervisor/continuous/continuous.h). Upstream's behaviour is the reference
 * (continuous-and-kubernetes.md A); where it is wrong this is not, each fix marked "Fix":
 *  - CPU % is over the last fetch interval, not the process's lifetime average (A3, A9.11);
 *  - each item is judged on its own Period, `current` is the newest match, an empty second
 *    never matches (cwindow.h; A9.3, A9.4);
 *  - the processes watched are the reported ones of each round, not those of the last
 *    policy change (A9.1);
 *  - a process is checked before a task is reported for it (alive, the same process, not at
 *    its task bound), and a trigger silences its dimension from the report on, whether or not
 *    the task could start: no new OAP task every round (A9.7, A9.8);
 *  - a bad policy item is skipped alone, an unknown target too (A2.5); an empty answer to
 *    reportProfilingTask or one of another shape is an error, not a crash (A9.9).
 */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <errno.h>
#include <pcre2.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/Command.pb-c.h"
#include "common/cwindow.h"
#include "common/ipc.h"
#include "common/linklog.h"
#include "common/log.h"
#include "common/procstat.h"
#include "common/util.h"
#include "ebpf/profiling/Continuous.pb-c.h"
#include "language-agent/Meter.pb-c.h"
#include "supervisor/continuous/continuous.h"
#include "supervisor/continuous/cpolicy.h"

#define M_POLICIES "/skywalking.v3.ContinuousProfilingService/queryPolicies"
#define M_REPORT_TASK "/skywalking.v3.ContinuousProfilingService/reportProfilingTask"
#define M_METERS "/skywalking.v3.MeterReportService/collectBatch"

/* Processes watched at once; trigger dimensions remembered (for their silence). */
#define MAX_PROCS 4096
#define MAX_DIMS 1024
/* Causes in one round. */
#define MAX_CAUSES 512
/*
 * Each watched process's stat file stays open between samples, read again at offset 0: an
 * open and a close a process a second cost the supervisor a third of its time with 200
 * processes watched (docs/performance.md, "Continuous profiling").
 * A descriptor is kept when its number is under half the descriptor limit (numbers are given
 * lowest first: half of them are still free for discovery's pidfds, clients and gRPC);
 * beyond, that process's file is opened at each sample as before.
 */
#define FD_SHARE 2

/* An HTTP item's windows on one process: one per listed URI, or one (regex, or all). */
struct chttp {
	const struct citem *item;
	struct cwindow w[CPOLICY_MAX_URIS];
	uint32_t n;
	pcre2_code *re;
	pcre2_match_data *md;
};

struct cproc {
	char process_id[SW_ID_LEN];
	char service[DISC_NAME_LEN], instance[DISC_NAME_LEN], process[DISC_NAME_LEN];
	char layer[DISC_NAME_LEN];
	int pid;
	uint64_t starttime;	   /* /proc/PID/stat field 22: the process, not just its number */
	struct procstat_file stat; /* its stat file, kept open; free when pid changes */
	uint64_t cpu_ns;	   /* its CPU time at the last sample */
	uint64_t new_ns;	   /* fetch(): this sample's, until confirmed */
	double new_threads;
	int fresh;	 /* fetch(): 1 a sample read, 2 one to confirm */
	uint64_t cpu_ms; /* when */
	int have_cpu;
	struct cwindow cpu, threads; /* n 0: not watched for that monitor */
	struct chttp *http;	     /* one per HTTP item of its policy */
	uint32_t nhttp;
	int policy; /* index in c->pols, -1: none (dropped at the next refresh) */
	int mark;
};

struct cdim {
	char key[2 * DISC_NAME_LEN + SW_ID_LEN + 16];
	uint64_t started_ms; /* monotonic: when its task was reported */
	uint64_t end_ms;     /* when that task ends */
};

struct cause {
	int proc; /* index in c->procs */
	const struct citem *item;
	double current;
	int uri_kind;	 /* HTTP: 1 a listed path, 2 the item's regex, 3 every URI; 0: none */
	const char *uri; /* the path or the regex */
};

struct continuous {
	const struct rover_config *cfg;
	struct oap_conn *conn;
	char proc_root[256];
	struct continuous_ops ops;
	int fd_bound;		 /* stat descriptors are kept below this number */
	struct procstat_set set; /* the watched processes' pidfds: which ended, in one call */

	struct cpolicy *pols;
	size_t npols;
	struct cproc *procs;
	size_t nprocs;
	struct cwindow load; /* n 0: no SYSTEM_LOAD item */

	uint64_t next_query, next_fetch, next_check;
	struct cdim dims[MAX_DIMS];
	size_t ndims, dim_next;
	struct cause causes[MAX_CAUSES];
	size_t ncauses;
	int said_shape, said_cut;
	struct oncelog said; /* warnings about policies: each once, a few per window */
	struct continuous_stats st;
	pcre2_match_context *mctx;
	/* The HTTP monitor: a NETWORK task on the processes with HTTP items. */
	char mon_name[64];
	char (*mon_ids)[SW_ID_LEN];
	size_t nmon_ids;
	uint64_t mon_changed_ms, mon_seq;
	int policy_changed;
};

struct continuous *continuous__new(const struct rover_config *cfg, struct oap_conn *conn,
				   const char *proc_root, const struct continuous_ops *ops)
{
	struct continuous *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cfg = cfg;
	c->conn = conn;
	c->ops = *ops;
	snprintf(c->proc_root, sizeof(c->proc_root), "%s", proc_root ? proc_root : "/proc");
	{
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl))
			c->fd_bound =
				(int)((rl.rlim_cur > INT_MAX ? INT_MAX : rl.rlim_cur) / FD_SHARE);
	}
	if (procstat_set__init(&c->set))
		c->set.epfd = -1; /* each process's pidfd then polled at its read */
	c->pols = calloc(CPOLICY_MAX_SERVICES, sizeof(*c->pols));
	c->procs = calloc(MAX_PROCS, sizeof(*c->procs));
	c->mon_ids = calloc(ROVER_MAX_PIDS, SW_ID_LEN);
	/* A hostile backend's regex on a traced process's paths: bounded as the shipper's. */
	c->mctx = pcre2_match_context_create(NULL);
	if (c->mctx) {
		pcre2_set_match_limit(c->mctx, 100000);
		pcre2_set_depth_limit(c->mctx, 1000);
	}
	if (!c->pols || !c->procs || !c->mon_ids || !c->mctx) {
		continuous__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

static void http_release(struct cproc *p)
{
	for (uint32_t i = 0; i < p->nhttp; i++) {
		for (uint32_t k = 0; k < p->http[i].n; k++)
			cwindow__free(&p->http[i].w[k]);
		pcre2_match_data_free(p->http[i].md);
		pcre2_code_free(p->http[i].re);
	}
	free(p->http);
	p->http = NULL;
	p->nhttp = 0;
}

/* Counts what read_stat() did to p's descriptor (had: whether it was open before). */
static void count_kept(struct continuous *c, int had, const struct cproc *p, int err)
{
	int has = procstat_file__kept(&p->stat) > 0;

	c->st.kept += (uint32_t)(has - had);
	if (had && !has && err == -ESRCH)
		c->st.kept_gone++;
}

static void proc_release(struct continuous *c, struct cproc *p)
{
	if (procstat_file__kept(&p->stat))
		c->st.kept--;
	procstat_file__close(&p->stat);
	cwindow__free(&p->cpu);
	cwindow__free(&p->threads);
	memset(&p->cpu, 0, sizeof(p->cpu));
	memset(&p->threads, 0, sizeof(p->threads));
	http_release(p);
}

void continuous__free(struct continuous *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->procs && i < c->nprocs; i++)
		proc_release(c, &c->procs[i]);
	cwindow__free(&c->load);
	procstat_set__free(&c->set);
	pcre2_match_context_free(c->mctx);
	free(c->mon_ids);
	free(c->procs);
	free(c->pols);
	free(c);
}

void continuous__stats(const struct continuous *c, struct continuous_stats *ret)
{
	*ret = c->st;
	ret->services = (uint32_t)c->npols;
	ret->processes = (uint32_t)c->nprocs;
	ret->items = 0;
	for (size_t i = 0; i < c->npols; i++)
		ret->items += c->pols[i].nitems;
}

/* ---- the policies ---- */

static int policy_of(const struct continuous *c, const char *service)
{
	for (size_t i = 0; i < c->npols; i++)
		if (!strcmp(c->pols[i].service, service))
			return (int)i;
	return -1;
}

/* A warning about what the OAP sent: each text once, a few per window (common/linklog.h). */
static void say_policy(struct continuous *c, const char *text)
{
	unsigned quiet;

	if (oncelog__say(&c->said, text, now_mono_ms(), &quiet))
		log_warn("continuous profiling: %s", text);
	if (quiet)
		log_info("continuous profiling: %u more warnings about policies in the previous "
			 "10 minutes not logged",
			 quiet);
}

static void warn_item(void *ctx, const char *reason)
{
	struct continuous *c = ctx;
	char text[512];

	c->st.items_skipped++;
	snprintf(text, sizeof(text), "policy item skipped: %s", reason);
	say_policy(c, text);
}

/* The largest Period of the items of monitor in policy p (0: none). */
static uint32_t longest(const struct cpolicy *p, uint32_t monitor)
{
	uint32_t n = 0;

	for (uint32_t i = 0; p && i < p->nitems; i++)
		if (p->items[i].monitor == monitor && p->items[i].period > n)
			n = p->items[i].period;
	return n;
}

/* A window sized n (0: none), made, resized or dropped as the policy now says. */
static void fit_window(struct cwindow *w, uint32_t n, enum cwindow_agg agg)
{
	if (!n) {
		cwindow__free(w);
		memset(w, 0, sizeof(*w));
	} else if (!w->n) {
		if (cwindow__init(w, n, agg))
			memset(w, 0, sizeof(*w));
	} else if (w->n != n && cwindow__resize(w, n)) {
		log_warn("continuous profiling: resizing a window: %s, ignoring", strerror(ENOMEM));
	}
}

/* The HTTP items' windows of p, made again (their samples start over on a policy change). */
static void fit_http(struct cproc *p, const struct cpolicy *pol)
{
	uint32_t n = 0;

	http_release(p);
	for (uint32_t i = 0; pol && i < pol->nitems; i++)
		n += pol->items[i].monitor == CMON_HTTP_ERROR_RATE ||
		     pol->items[i].monitor == CMON_HTTP_AVG_RESPONSE_TIME;
	if (!n)
		return;
	p->http = calloc(n, sizeof(*p->http));
	if (!p->http)
		return;
	for (uint32_t i = 0; i < pol->nitems; i++) {
		const struct citem *it = &pol->items[i];
		struct chttp *h;
		enum cwindow_agg agg = it->monitor == CMON_HTTP_ERROR_RATE ? CWINDOW_RATE
									   : CWINDOW_MEAN;

		if (it->monitor != CMON_HTTP_ERROR_RATE &&
		    it->monitor != CMON_HTTP_AVG_RESPONSE_TIME)
			continue;
		h = &p->http[p->nhttp++];
		h->item = it;
		h->n = it->nuris ? it->nuris : 1;
		for (uint32_t k = 0; k < h->n; k++)
			if (cwindow__init(&h->w[k], it->period, agg))
				h->n = k;
		if (!it->nuris && it->uri_regex[0]) {
			int code;
			PCRE2_SIZE at;

			h->re = pcre2_compile((PCRE2_SPTR)it->uri_regex, PCRE2_ZERO_TERMINATED, 0,
					      &code, &at, NULL);
			h->md = h->re ? pcre2_match_data_create_from_pattern(h->re, NULL) : NULL;
			if (!h->re || !h->md) {
				/* Upstream drops such an item too. */
				log_warn("continuous profiling: service %s: URIRegex '%s' does not "
					 "compile, its item is skipped",
					 p->service, it->uri_regex);
				h->n = 0;
			}
		}
	}
}

static void fit_windows(struct continuous *c)
{
	uint32_t load = 0;

	for (size_t i = 0; i < c->npols; i++) {
		uint32_t n = longest(&c->pols[i], CMON_SYSTEM_LOAD);

		load = n > load ? n : load;
	}
	fit_window(&c->load, load, CWINDOW_LATEST);
	for (size_t i = 0; i < c->nprocs; i++) {
		struct cproc *p = &c->procs[i];
		const struct cpolicy *pol = p->policy >= 0 ? &c->pols[p->policy] : NULL;

		fit_window(&p->cpu, longest(pol, CMON_PROCESS_CPU), CWINDOW_LATEST);
		fit_window(&p->threads, longest(pol, CMON_PROCESS_THREAD_COUNT), CWINDOW_LATEST);
		if (c->policy_changed || (!p->http && pol))
			fit_http(p, pol);
	}
	c->policy_changed = 0;
}

/*
 * Applies an answer's policies: only the services it names change; UUID "" removes one. How
 * many changed: a policy with the UUID held is the same one (the OAP's UUID is a hash of it).
 */
static size_t merge_policies(struct continuous *c, const struct cpolicy *got, size_t n)
{
	size_t changed = 0;

	for (size_t i = 0; i < n; i++) {
		int k = policy_of(c, got[i].service);

		if (!got[i].uuid[0]) {
			if (k >= 0) {
				log_info("continuous profiling: service %s: policy removed",
					 got[i].service);
				c->pols[k] = c->pols[--c->npols];
				changed++;
			}
			continue;
		}
		if (k >= 0 && !strcmp(c->pols[k].uuid, got[i].uuid))
			continue;
		if (k < 0) {
			if (c->npols == CPOLICY_MAX_SERVICES)
				continue;
			k = (int)c->npols++;
		}
		c->pols[k] = got[i];
		log_info("continuous profiling: service %s: policy %.16s... with %u item(s)",
			 got[i].service, got[i].uuid, got[i].nitems);
		changed++;
	}
	if (changed)
		c->st.policy_updates++;
	return changed;
}

static int arg_of(const Skywalking__V3__Command *cmd, const char *key, const char **ret)
{
	for (size_t i = 0; i < cmd->n_args; i++)
		if (cmd->args[i] && cmd->args[i]->key && !strcmp(cmd->args[i]->key, key) &&
		    cmd->args[i]->value) {
			*ret = cmd->args[i]->value;
			return 0;
		}
	return -ENOENT;
}

/* The distinct services of the entities the backend knows (has given an id). */
static size_t services_of(const struct disc_entity *ents, size_t n, const char **ret, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int dup = 0;

		if (!ents[i].process_id[0])
			continue;
		for (size_t j = 0; j < k && !dup; j++)
			dup = !strcmp(ret[j], ents[i].service);
		if (!dup && k < max)
			ret[k++] = ents[i].service;
	}
	return k;
}

/* Whether the policies changed (their processes are then to be looked at again). */
static int query_policies(struct continuous *c)
{
	Skywalking__V3__ContinuousProfilingPolicyQuery req =
		SKYWALKING__V3__CONTINUOUS_PROFILING_POLICY_QUERY__INIT;
	Skywalking__V3__ContinuousProfilingServicePolicyQuery *qs = NULL, **qp = NULL;
	Skywalking__V3__Commands *ans = NULL;
	struct disc_entity *ents = NULL;
	const char **names = NULL;
	struct cpolicy *got = NULL;
	size_t nents = 0, nsvc, ngot = 0;
	struct oap_status status;
	const char *json;
	int err, changed = 0;

	if (c->ops.entities(c->ops.ctx, &ents, &nents))
		return 0;
	names = calloc(CPOLICY_MAX_SERVICES, sizeof(*names));
	if (!names)
		goto cleanup;
	nsvc = services_of(ents, nents, names, CPOLICY_MAX_SERVICES);
	if (!nsvc) {
		/* Nothing reported here: nothing to watch (upstream clears its cache too). */
		if (c->npols) {
			c->npols = 0;
			changed = 1;
		}
		goto cleanup;
	}
	qs = calloc(nsvc, sizeof(*qs));
	qp = calloc(nsvc, sizeof(*qp));
	if (!qs || !qp)
		goto cleanup;
	for (size_t i = 0; i < nsvc; i++) {
		int k = policy_of(c, names[i]);

		skywalking__v3__continuous_profiling_service_policy_query__init(&qs[i]);
		qs[i].servicename = (char *)names[i];
		qs[i].uuid = k >= 0 ? c->pols[k].uuid : "";
		qp[i] = &qs[i];
	}
	req.n_policies = nsvc;
	req.policies = qp;
	c->st.policy_queries++;
	err = oap_conn__call(c->conn, M_POLICIES, &req.base, &skywalking__v3__commands__descriptor,
			     (ProtobufCMessage **)&ans, &status);
	if (err)
		goto cleanup;
	if (!ans->n_commands)
		goto cleanup; /* no change */
	if (ans->n_commands != 1 || !ans->commands[0]->command ||
	    strcmp(ans->commands[0]->command, "ContinuousProfilingPolicyQuery") ||
	    arg_of(ans->commands[0], "ServiceWithPolicyJSON", &json)) {
		if (!c->said_shape)
			log_warn("continuous profiling: queryPolicies answered %zu command(s) of "
				 "another shape than one ContinuousProfilingPolicyQuery with "
				 "ServiceWithPolicyJSON, ignoring",
				 ans->n_commands);
		c->said_shape = 1;
		goto cleanup;
	}
	got = calloc(CPOLICY_MAX_SERVICES, sizeof(*got));
	if (!got)
		goto cleanup;
	err = cpolicy__parse(json, strlen(json), got, CPOLICY_MAX_SERVICES, &ngot, warn_item, c);
	if (err) {
		char text[128];

		snprintf(text, sizeof(text), "ServiceWithPolicyJSON: %s, ignoring", strerror(-err));
		say_policy(c, text);
		goto cleanup;
	}
	changed = merge_policies(c, got, ngot) > 0;
	if (changed)
		c->policy_changed = 1;
cleanup:
	if (ans)
		protobuf_c_message_free_unpacked(&ans->base, NULL);
	free(got);
	free(qs);
	free(qp);
	free(names);
	free(ents);
	return changed;
}

/* ---- the processes ---- */

/*
 * p's stat file, through the descriptor kept for it. 0, or -errno; -ESRCH once its process
 * has ended (a zombie too, common/procstat.c), or when its pid is another process's now.
 */
static int read_stat(struct continuous *c, struct cproc *p, uint64_t *ret_cpu_ns,
		     uint64_t *ret_start, double *ret_threads)
{
	int had = procstat_file__kept(&p->stat) > 0;
	int err = procstat_file__read(&p->stat, c->proc_root, p->pid, c->fd_bound, ret_cpu_ns,
				      ret_start, ret_threads);

	count_kept(c, had, p, err);
	return err;
}

static int read_load(const struct continuous *c, double *ret)
{
	return procstat__load(c->proc_root, ret);
}

static int proc_of(const struct continuous *c, const char *process_id)
{
	for (size_t i = 0; i < c->nprocs; i++)
		if (!strcmp(c->procs[i].process_id, process_id))
			return (int)i;
	return -1;
}

/*
 * The processes watched: every reported entity of a service with a policy, as discovery sees
 * it now. Fix: upstream keeps the set of the last policy change (A9.1).
 */
static void refresh_procs(struct continuous *c)
{
	struct disc_entity *ents = NULL;
	size_t n = 0;

	if (!c->npols) {
		for (size_t i = 0; i < c->nprocs; i++)
			proc_release(c, &c->procs[i]);
		c->nprocs = 0;
		return;
	}
	if (c->ops.entities(c->ops.ctx, &ents, &n))
		return;
	for (size_t i = 0; i < c->nprocs; i++)
		c->procs[i].mark = 0;
	for (size_t i = 0; i < n; i++) {
		const struct disc_entity *e = &ents[i];
		int pol = e->process_id[0] ? policy_of(c, e->service) : -1, k;
		struct cproc *p;

		if (pol < 0 || !c->pols[pol].nitems)
			continue;
		k = proc_of(c, e->process_id);
		if (k < 0) {
			if (c->nprocs == MAX_PROCS)
				continue;
			k = (int)c->nprocs++;
			memset(&c->procs[k], 0, sizeof(c->procs[k]));
			procstat_file__init(&c->procs[k].stat);
		}
		p = &c->procs[k];
		if (p->pid != e->pid) {
			/* Another process for the entity: its samples start again. */
			proc_release(c, p);
			p->have_cpu = 0;
			p->starttime = 0;
		}
		ipc_strlcpy(p->process_id, e->process_id, sizeof(p->process_id));
		ipc_strlcpy(p->service, e->service, sizeof(p->service));
		ipc_strlcpy(p->instance, e->instance, sizeof(p->instance));
		ipc_strlcpy(p->process, e->process, sizeof(p->process));
		ipc_strlcpy(p->layer, e->layer, sizeof(p->layer));
		p->pid = e->pid;
		p->policy = pol;
		p->mark = 1;
	}
	free(ents);
	for (size_t i = 0; i < c->nprocs; i++) {
		if (c->procs[i].mark)
			continue;
		proc_release(c, &c->procs[i]);
		c->procs[i--] = c->procs[--c->nprocs];
	}
	fit_windows(c);
}

/*
 * The processes whose pidfds say they ended, after fetch()'s reads: their samples to confirm
 * are not taken (a clock asked by number may have been another process's) and their
 * descriptors close; the next refresh drops them.
 */
static void ended(struct continuous *c)
{
	int fds[64], n, closed;

	do {
		n = procstat_set__ended(&c->set, fds, 64);
		closed = 0;
		for (int k = 0; k < n; k++) {
			for (size_t i = 0; i < c->nprocs; i++) {
				struct cproc *p = &c->procs[i];

				if (p->stat.pidfd != fds[k])
					continue;
				p->fresh = 0;
				procstat_file__gone(&p->stat);
				count_kept(c, 1, p, -ESRCH);
				closed++;
				break;
			}
		}
	} while (n == 64 && closed); /* each one answered leaves the set once closed */
}

/*
 * Every fetch_interval: the samples of each window, stamped at (the tick's scheduled time:
 * one sample a second lands in one slot each, whatever the thread's jitter; an empty slot
 * never matches). CPU % is over the time really elapsed between two reads (now).
 */
static void fetch(struct continuous *c, uint64_t at, uint64_t now)
{
	double v;

	c->st.samples++;
	if (c->load.n && !read_load(c, &v))
		cwindow__add(&c->load, (int64_t)at, v, 0);
	/* The reads, then which of the processes ended since (see common/procstat.h). */
	for (size_t i = 0; i < c->nprocs; i++) {
		struct cproc *p = &c->procs[i];
		int had = procstat_file__kept(&p->stat) > 0, r;
		uint64_t start;

		p->fresh = 0;
		if (!p->cpu.n && !p->threads.n)
			continue;
		r = procstat_file__sample(&p->stat, &c->set, c->proc_root, p->pid, c->fd_bound,
					  &p->new_ns, &start,
					  p->threads.n ? &p->new_threads : NULL);
		count_kept(c, had, p, r < 0 ? r : 0);
		if (r < 0)
			continue; /* gone: the next refresh drops it */
		if (p->starttime && start != p->starttime) {
			/* Its number is another process's now: no sample is its. */
			p->have_cpu = 0;
			continue;
		}
		p->starttime = start;
		p->fresh = 1 + r;
	}
	ended(c);
	for (size_t i = 0; i < c->nprocs; i++) {
		struct cproc *p = &c->procs[i];
		uint64_t ns = p->new_ns;

		if (!p->fresh)
			continue;
		/* Fix: CPU % over this interval (upstream: since the process started, A3). */
		if (p->cpu.n && p->have_cpu && now > p->cpu_ms && ns >= p->cpu_ns)
			cwindow__add(&p->cpu, (int64_t)at,
				     (double)(ns - p->cpu_ns) / 1e7 /
					     ((double)(now - p->cpu_ms) / 1000.0),
				     0);
		p->cpu_ns = ns;
		p->cpu_ms = now;
		p->have_cpu = 1;
		if (p->threads.n)
			cwindow__add(&p->threads, (int64_t)at, p->new_threads, 0);
	}
}

/* ---- checks, causes and triggers ---- */

static void dim_key(const struct cproc *p, uint32_t target, char *out, size_t len)
{
	/* ON_CPU / OFF_CPU: one process; NETWORK: its service's instance (reference A7.1). */
	if (target == TASK_NETWORK)
		snprintf(out, len, "N/%s_%s", p->service, p->instance);
	else
		snprintf(out, len, "%u/%s", target, p->process_id);
}

static struct cdim *dim_find(struct continuous *c, const char *key)
{
	for (size_t i = 0; i < c->ndims; i++)
		if (!strcmp(c->dims[i].key, key))
			return &c->dims[i];
	return NULL;
}

/*
 * Whether a dimension may trigger at now: never triggered, or its task over and the silence
 * (counted from its start, as upstream) past.
 */
static int may_trigger(struct continuous *c, const struct cproc *p, uint32_t target, uint64_t now)
{
	char key[sizeof(c->dims[0].key)];
	const struct cdim *d;

	dim_key(p, target, key, sizeof(key));
	d = dim_find(c, key);
	if (!d)
		return 1;
	if (now < d->end_ms)
		return 0;
	return now - d->started_ms >= c->cfg->profiling.trigger_silence_duration_ms;
}

static void dim_started(struct continuous *c, const char *key, uint64_t now, uint64_t run_ms)
{
	struct cdim *d = dim_find(c, key);

	if (!d) {
		if (c->ndims < MAX_DIMS) {
			d = &c->dims[c->ndims++];
		} else {
			d = &c->dims[c->dim_next];
			c->dim_next = (c->dim_next + 1) % MAX_DIMS;
		}
		ipc_strlcpy(d->key, key, sizeof(d->key));
	}
	d->started_ms = now;
	d->end_ms = now + run_ms;
}

static void add_cause(struct continuous *c, int proc, const struct citem *item, double current)
{
	if (c->ncauses < MAX_CAUSES)
		c->causes[c->ncauses++] = (struct cause){ proc, item, current, 0, NULL };
}

static Skywalking__V3__ContinuousProfilingTriggeredMonitorType cause_type(uint32_t monitor)
{
	switch (monitor) {
	case CMON_PROCESS_THREAD_COUNT:
		return SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__ProcessThreadCount;
	case CMON_SYSTEM_LOAD:
		return SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__SystemLoad;
	case CMON_HTTP_ERROR_RATE:
		return SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__HTTPErrorRate;
	case CMON_HTTP_AVG_RESPONSE_TIME:
		return SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__HTTPAvgResponseTime;
	}
	return SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__ProcessCPU;
}

/*
 * reportProfilingTask for the causes of main (those of ncauses in idx), target and run_ms;
 * the TaskId the OAP answers into ret_id. 0 or -errno.
 */
static int report_task(struct continuous *c, const struct cproc *main_p, uint32_t target,
		       const size_t *idx, size_t n, uint32_t duration_s, char *ret_id, size_t len)
{
	Skywalking__V3__ContinuousProfilingReport req =
		SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__INIT;
	Skywalking__V3__ContinuousOnCPUProfilingTask on =
		SKYWALKING__V3__CONTINUOUS_ON_CPUPROFILING_TASK__INIT;
	Skywalking__V3__ContinuousOffCPUProfilingTask off =
		SKYWALKING__V3__CONTINUOUS_OFF_CPUPROFILING_TASK__INIT;
	Skywalking__V3__ContinuousNetworkProfilingTask net =
		SKYWALKING__V3__CONTINUOUS_NETWORK_PROFILING_TASK__INIT;
	Skywalking__V3__ContinuousProfilingCause *cs = calloc(n, sizeof(*cs)),
						 **cp = calloc(n, sizeof(*cp));
	Skywalking__V3__ContinuousProfilingSingleValueCause *sv = calloc(n, sizeof(*sv));
	Skywalking__V3__ContinuousProfilingURICause *uc = calloc(n, sizeof(*uc));
	char **regexes = calloc(n, sizeof(char *));
	Skywalking__V3__Commands *ans = NULL;
	struct oap_status status;
	const char *id;
	int err = -ENOMEM;

	if (!cs || !cp || !sv || !uc || !regexes)
		goto cleanup;
	req.layer = (char *)main_p->layer;
	req.servicename = (char *)main_p->service;
	req.instancename = (char *)main_p->instance;
	req.processname = (char *)main_p->process;
	req.duration = (int32_t)duration_s;
	for (size_t i = 0; i < n; i++) {
		const struct cause *k = &c->causes[idx[i]];

		skywalking__v3__continuous_profiling_cause__init(&cs[i]);
		cs[i].type = cause_type(k->item->monitor);
		cp[i] = &cs[i];
		if (k->uri_kind) {
			skywalking__v3__continuous_profiling_uricause__init(&uc[i]);
			uc[i].threshold = k->item->threshold;
			uc[i].current = k->current;
			if (k->uri_kind == 2) {
				uc[i].uri_case =
					SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__URI_REGEX;
				uc[i].regex = (char *)k->uri;
			} else {
				/* Every URI: the path "" (reference A6). */
				uc[i].uri_case =
					SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__URI_PATH;
				uc[i].path = (char *)(k->uri_kind == 1 ? k->uri : "");
			}
			cs[i].cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_URI;
			cs[i].uri = &uc[i];
			if (net.n_samplinguriregexes < n)
				regexes[net.n_samplinguriregexes++] =
					(char *)(k->uri_kind == 3 ? "" : k->uri);
			continue;
		}
		skywalking__v3__continuous_profiling_single_value_cause__init(&sv[i]);
		sv[i].threshold = k->item->threshold;
		sv[i].current = k->current;
		cs[i].cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_SINGLE_VALUE;
		cs[i].singlevalue = &sv[i];
	}
	net.samplinguriregexes = regexes;
	req.n_causes = n;
	req.causes = cp;
	if (target == TASK_ON_CPU) {
		req.target_task_case =
			SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_ON_CPU;
		req.oncpu = &on;
	} else if (target == TASK_OFF_CPU) {
		req.target_task_case =
			SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_OFF_CPU;
		req.offcpu = &off;
	} else {
		req.target_task_case =
			SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_NETWORK;
		req.network = &net;
	}
	err = oap_conn__call(c->conn, M_REPORT_TASK, &req.base,
			     &skywalking__v3__commands__descriptor, (ProtobufCMessage **)&ans,
			     &status);
	if (err)
		goto cleanup;
	/* Fix: upstream reads commands[0] before it checks there is one (A9.9). */
	if (ans->n_commands != 1 || !ans->commands[0]->command ||
	    strcmp(ans->commands[0]->command, "ContinuousProfilingReportTask") ||
	    arg_of(ans->commands[0], "TaskId", &id) || !id[0] || strlen(id) >= len) {
		err = -EPROTO;
		goto cleanup;
	}
	memcpy(ret_id, id, strlen(id) + 1);
	err = 0;
cleanup:
	if (ans)
		protobuf_c_message_free_unpacked(&ans->base, NULL);
	free(cs);
	free(cp);
	free(sv);
	free(uc);
	free(regexes);
	return err;
}

/* Whether p is still the process it was, and may take one more task of target. */
static int profilable(struct continuous *c, struct cproc *p, uint32_t target, const char **ret_why)
{
	uint64_t ns, start;

	if (read_stat(c, p, &ns, &start, NULL) || (p->starttime && start != p->starttime)) {
		*ret_why = "it ended";
		return 0;
	}
	if (c->ops.busy(c->ops.ctx, p->process_id, target)) {
		*ret_why = "it is at its bound of tasks";
		return 0;
	}
	return 1;
}

/* Copies s into out as a regex matching it literally; 0, or -ENAMETOOLONG. */
static int regex_quote(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s; s++) {
		if (strchr("\\^$.|?*+()[]{}", *s)) {
			if (o + 1 >= len)
				return -ENAMETOOLONG;
			out[o++] = '\\';
		}
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		out[o++] = *s;
	}
	out[o] = '\0';
	return 0;
}

/*
 * A NETWORK trigger's sampling rules: each HTTP cause's URI (a listed path matched as itself,
 * fix: upstream sends the path as a regex, A9.14; a regex as it is), every request sampled,
 * whole (reference A7.7); a cause on every URI, or none with a URI: one rule for all.
 */
static void net_rules(struct continuous *c, const size_t *idx, size_t n, struct sw_task *t)
{
	int all = 1;

	for (size_t i = 0; i < n && t->nrules < ROVER_NET_MAX_RULES; i++) {
		const struct cause *k = &c->causes[idx[i]];
		struct msg_net_rule *r;

		if (!k->uri_kind)
			continue;
		if (k->uri_kind == 3) {
			all = 1;
			break;
		}
		all = 0;
		r = &t->rules[t->nrules];
		memset(r, 0, sizeof(*r));
		if (k->uri_kind == 1) {
			if (regex_quote(k->uri, r->uri_regex, sizeof(r->uri_regex)))
				continue;
		} else {
			if (strlen(k->uri) >= sizeof(r->uri_regex))
				continue;
			memcpy(r->uri_regex, k->uri, strlen(k->uri) + 1);
		}
		t->nrules++;
	}
	if (all)
		t->nrules = 0;
	if (!t->nrules)
		t->nrules = 1; /* the default rule: uri_regex "" */
	for (uint32_t i = 0; i < t->nrules; i++) {
		struct msg_net_rule *r = &t->rules[i];

		if (all)
			memset(r, 0, sizeof(*r));
		r->min_duration_ms = 0;
		r->when_4xx = r->when_5xx = 1;
		r->require_complete_request = r->require_complete_response = 1;
	}
}

/* The causes of one dimension (same target and key): one report, one task. */
static void trigger(struct continuous *c, uint32_t target, const size_t *idx, size_t n,
		    uint64_t now)
{
	uint64_t run_ms = c->cfg->profiling.trigger_execute_duration_ms;
	struct cproc *main_p = &c->procs[c->causes[idx[0]].proc];
	size_t mine[MAX_CAUSES], nmine = 0;
	struct sw_task *t;
	char key[sizeof(c->dims[0].key)];
	const char *why = NULL;
	int err;

	dim_key(main_p, target, key, sizeof(key));
	/* The main process's causes are the report's (reference A7.2). */
	for (size_t i = 0; i < n; i++)
		if (c->causes[idx[i]].proc == c->causes[idx[0]].proc)
			mine[nmine++] = idx[i];
	if (!profilable(c, main_p, target, &why)) {
		log_info("continuous profiling: %s (pid %d) crossed a threshold but %s: no task "
			 "reported",
			 main_p->process, main_p->pid, why);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	c->st.triggers++;
	err = report_task(c, main_p, target, mine, nmine, (uint32_t)(run_ms / 1000), t->task_id,
			  sizeof(t->task_id));
	if (err) {
		c->st.reports_failed++;
		log_warn("continuous profiling: reportProfilingTask for %s: %s", main_p->process,
			 strerror(-err));
		free(t);
		return;
	}
	/* Fix: silenced from the report on, whether or not the task starts (A9.7, A9.8). */
	dim_started(c, key, now, run_ms);
	t->target_type = target;
	t->start_time_ms = (uint64_t)now_unix_ms();
	t->update_time_ms = t->start_time_ms;
	t->duration_s = (uint32_t)(run_ms / 1000);
	for (size_t i = 0; i < n && t->nprocess_ids < SW_MAX_PROCESSES; i++) {
		const struct cproc *p = &c->procs[c->causes[idx[i]].proc];
		int dup = 0;

		for (uint32_t k = 0; k < t->nprocess_ids && !dup; k++)
			dup = !strcmp(t->process_ids[k], p->process_id);
		if (!dup)
			ipc_strlcpy(t->process_ids[t->nprocess_ids++], p->process_id, SW_ID_LEN);
		if (target != TASK_NETWORK)
			break; /* ON_CPU, OFF_CPU: the main process only */
	}
	if (target == TASK_NETWORK)
		net_rules(c, idx, n, t);
	if (c->ops.start(c->ops.ctx, t, run_ms) > 0) {
		c->st.tasks_started++;
		log_info("continuous profiling: task %s: %s of %s (pid %d) for %llu s", t->task_id,
			 target == TASK_ON_CPU	  ? "ON_CPU"
			 : target == TASK_OFF_CPU ? "OFF_CPU"
						  : "NETWORK",
			 main_p->process, main_p->pid, (unsigned long long)(run_ms / 1000));
	} else {
		log_warn("continuous profiling: task %s reported but not started", t->task_id);
	}
	free(t);
}

/* An HTTP item on process i: each listed URI's window, or its one window. */
static void check_http(struct continuous *c, int i, const struct citem *it)
{
	const struct cproc *p = &c->procs[i];

	for (uint32_t h = 0; h < p->nhttp; h++) {
		const struct chttp *x = &p->http[h];

		if (x->item != it)
			continue;
		for (uint32_t k = 0; k < x->n; k++) {
			double cur;

			if (!cwindow__match(&x->w[k], it->period, it->count, it->threshold, &cur))
				continue;
			add_cause(c, i, it, cur);
			if (!c->ncauses)
				continue;
			c->causes[c->ncauses - 1].uri_kind = it->nuris		? 1
							     : it->uri_regex[0] ? 2
										: 3;
			c->causes[c->ncauses - 1].uri = it->nuris ? it->uris[k] : it->uri_regex;
		}
	}
}

/*
 * Each item of each watched process's policy on its window: a SYSTEM_LOAD item that holds is
 * a cause for every process of the service, as upstream (one trigger per process).
 */
static void check_items(struct continuous *c, uint64_t now)
{
	c->ncauses = 0;
	for (size_t i = 0; i < c->nprocs; i++) {
		struct cproc *p = &c->procs[i];
		const struct cpolicy *pol = p->policy >= 0 ? &c->pols[p->policy] : NULL;

		for (uint32_t k = 0; pol && k < pol->nitems; k++) {
			const struct citem *it = &pol->items[k];
			const struct cwindow *w = it->monitor == CMON_PROCESS_CPU ? &p->cpu
						  : it->monitor == CMON_PROCESS_THREAD_COUNT
							  ? &p->threads
						  : it->monitor == CMON_SYSTEM_LOAD ? &c->load
										    : NULL;
			double cur;

			if (!may_trigger(c, p, it->target, now))
				continue;
			if (!w) {
				check_http(c, (int)i, it);
				continue;
			}
			if (w->n && cwindow__match(w, it->period, it->count, it->threshold, &cur))
				add_cause(c, (int)i, it, cur);
		}
	}
}

static void trigger_all(struct continuous *c, uint64_t now)
{
	int done[MAX_CAUSES] = { 0 };

	for (size_t i = 0; i < c->ncauses; i++) {
		size_t idx[MAX_CAUSES], n = 0;
		uint32_t target = c->causes[i].item->target;
		char key[sizeof(c->dims[0].key)];

		if (done[i])
			continue;
		dim_key(&c->procs[c->causes[i].proc], target, key, sizeof(key));
		for (size_t j = i; j < c->ncauses; j++) {
			char kj[sizeof(key)];

			if (done[j] || c->causes[j].item->target != target)
				continue;
			dim_key(&c->procs[c->causes[j].proc], target, kj, sizeof(kj));
			if (strcmp(kj, key))
				continue;
			done[j] = 1;
			idx[n++] = j;
		}
		trigger(c, target, idx, n, now);
	}
}

/* ---- meters ---- */

struct meter_batch {
	Skywalking__V3__MeterDataCollection col;
	Skywalking__V3__MeterData **data;
	size_t n, cap;
};

/* uri: the HTTP meters' label (a listed path, the item's regex, or "global"); else NULL. */
static Skywalking__V3__MeterData *meter_new(const char *prefix, uint32_t monitor,
					    const struct cproc *p, const char *uri, double v,
					    int64_t ts)
{
	struct {
		Skywalking__V3__MeterData d;
		Skywalking__V3__MeterSingleValue sv;
		Skywalking__V3__Label l[3];
		Skywalking__V3__Label *lp[3];
		char name[192];
	} *m = calloc(1, sizeof(*m));
	int nl = 0;

	if (!m)
		return NULL;
	skywalking__v3__meter_data__init(&m->d);
	skywalking__v3__meter_single_value__init(&m->sv);
	snprintf(m->name, sizeof(m->name), "%s_%s", prefix, cmonitor__meter(monitor));
	m->sv.name = m->name;
	m->sv.value = v;
	for (int i = 0; i < 3; i++) {
		skywalking__v3__label__init(&m->l[i]);
		m->lp[i] = &m->l[i];
	}
	if (uri) {
		m->l[nl].name = "uri";
		m->l[nl++].value = (char *)uri;
	}
	m->l[nl].name = "process_name";
	m->l[nl++].value = (char *)p->process;
	m->l[nl].name = "layer";
	m->l[nl++].value = (char *)p->layer;
	m->sv.n_labels = (size_t)nl;
	m->sv.labels = m->lp;
	m->d.metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
	m->d.singlevalue = &m->sv;
	m->d.service = (char *)p->service;
	m->d.serviceinstance = (char *)p->instance;
	m->d.timestamp = ts;
	/* One allocation: freeing &m->d frees it all. */
	return &m->d;
}

static void batch_add(struct meter_batch *b, Skywalking__V3__MeterData *d)
{
	if (!d)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		Skywalking__V3__MeterData **p = realloc(b->data, cap * sizeof(*p));

		if (!p) {
			free(d);
			return;
		}
		b->data = p;
		b->cap = cap;
	}
	b->data[b->n++] = d;
}

/* A meter and its place in the batch, for sorting. */
struct meter_at {
	Skywalking__V3__MeterData *d;
	size_t at;
};

static int same_instance(const struct meter_at *x, const struct meter_at *y)
{
	return !strcmp(x->d->service, y->d->service) &&
	       !strcmp(x->d->serviceinstance, y->d->serviceinstance);
}

/* By service, then instance, then the order the meters were made in. */
static int by_instance(const void *a, const void *b)
{
	const struct meter_at *x = a, *y = b;
	int d = strcmp(x->d->service, y->d->service);

	if (!d)
		d = strcmp(x->d->serviceinstance, y->d->serviceinstance);
	return d ? d : (x->at > y->at) - (x->at < y->at);
}

/*
 * The newest value of each watched window, per process, as upstream names them: one
 * MeterDataCollection per (service, instance), the OAP takes them per collection.
 */
static void send_meters(struct continuous *c)
{
	const char *prefix = c->cfg->profiling.continuous_meter_prefix;
	int64_t ts = now_unix_ms();
	double load = 0, v;
	int have_load = c->load.n && cwindow__flush_newest(&c->load, &load);
	struct meter_batch all = { 0 };
	Skywalking__V3__MeterData **grp = NULL;
	struct meter_at *ord = NULL;
	struct oap_stream *s;
	size_t sent = 0;
	int err = 0;

	for (size_t i = 0; i < c->nprocs; i++) {
		struct cproc *p = &c->procs[i];

		if (p->cpu.n && cwindow__flush_newest(&p->cpu, &v))
			batch_add(&all, meter_new(prefix, CMON_PROCESS_CPU, p, NULL, v, ts));
		if (p->threads.n && cwindow__flush_newest(&p->threads, &v))
			batch_add(&all,
				  meter_new(prefix, CMON_PROCESS_THREAD_COUNT, p, NULL, v, ts));
		if (have_load && p->policy >= 0 && longest(&c->pols[p->policy], CMON_SYSTEM_LOAD))
			batch_add(&all, meter_new(prefix, CMON_SYSTEM_LOAD, p, NULL, load, ts));
		for (uint32_t h = 0; h < p->nhttp; h++) {
			const struct citem *it = p->http[h].item;

			for (uint32_t k = 0; k < p->http[h].n; k++)
				if (cwindow__flush_newest(&p->http[h].w[k], &v))
					batch_add(&all, meter_new(prefix, it->monitor, p,
								  it->nuris	     ? it->uris[k]
								  : it->uri_regex[0] ? it->uri_regex
										     : "global",
								  v, ts));
		}
	}
	if (!all.n)
		goto cleanup;
	s = oap_stream__open(c->conn, M_METERS);
	if (!s) {
		err = -ENOMEM;
		goto cleanup;
	}
	/*
	 * Grouped by (service, instance), one collection each, in the order the meters were made
	 * within a group: sorted rather than searched (730 meters for 200 processes and 64 HTTP
	 * monitors: the pairwise search was 10% of the supervisor's time).
	 */
	ord = malloc(all.n * sizeof(*ord));
	grp = malloc(all.n * sizeof(*grp));
	if (!ord || !grp) {
		err = -ENOMEM;
		goto finish;
	}
	for (size_t i = 0; i < all.n; i++)
		ord[i] = (struct meter_at){ all.data[i], i };
	qsort(ord, all.n, sizeof(*ord), by_instance);
	for (size_t i = 0; i < all.n && !err;) {
		Skywalking__V3__MeterDataCollection col =
			SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
		size_t ng = 0;

		do
			grp[ng++] = ord[i++].d;
		while (i < all.n && same_instance(&ord[i - 1], &ord[i]));
		col.n_meterdata = ng;
		col.meterdata = grp;
		err = oap_stream__send(s, &col.base);
		sent += ng;
	}
finish:
	free(ord);
	free(grp);
	{
		struct oap_status status;
		int ferr =
			oap_stream__finish(s, &skywalking__v3__commands__descriptor, NULL, &status);

		err = err ? err : ferr;
	}
	if (err)
		c->st.meter_batches_failed++;
	else
		c->st.meters_sent += sent;
cleanup:
	for (size_t i = 0; i < all.n; i++)
		free(all.data[i]);
	free(all.data);
}

void continuous__http(struct continuous *c, const void *buf, size_t len, uint64_t now)
{
	const struct msg_net_monitor *m = buf;
	const struct msg_net_monitor_entry *e = (const void *)(m + 1);

	if (len < sizeof(*m) || m->count > (len - sizeof(*m)) / sizeof(*e))
		return;
	for (uint32_t i = 0; i < m->count; i++) {
		char path[sizeof(e[i].path)];

		memcpy(path, e[i].path, sizeof(path));
		path[sizeof(path) - 1] = '\0';
		for (size_t k = 0; k < c->nprocs; k++) {
			struct cproc *p = &c->procs[k];

			if (p->pid != e[i].pid)
				continue;
			for (uint32_t h = 0; h < p->nhttp; h++) {
				struct chttp *x = &p->http[h];
				const struct citem *it = x->item;
				double b = it->monitor == CMON_HTTP_ERROR_RATE
						   ? (double)e[i].errors
						   : (double)e[i].sum_us / 1000.0;
				int slot = 0;

				if (!x->n)
					continue;
				if (it->nuris) {
					/* Listed URIs: by equality, each its own window (A4). */
					slot = -1;
					for (uint32_t u = 0; u < it->nuris && slot < 0; u++)
						if (!strcmp(it->uris[u], path))
							slot = (int)u;
					if (slot < 0 || (uint32_t)slot >= x->n)
						continue;
				} else if (x->re && pcre2_match(x->re, (PCRE2_SPTR)path,
								PCRE2_ZERO_TERMINATED, 0, 0, x->md,
								c->mctx) < 0) {
					continue; /* unanchored, as Go's MatchString */
				}
				cwindow__add(&x->w[slot], (int64_t)now, (double)e[i].requests, b);
			}
		}
	}
}

/*
 * The HTTP monitor follows the processes that have HTTP items: when that set changes (a
 * policy, a process come or gone), the monitor is started again on the new set, at most every
 * 5 s.
 */
static void keep_monitor(struct continuous *c, uint64_t now)
{
	char(*want)[SW_ID_LEN] = calloc(ROVER_MAX_PIDS, SW_ID_LEN);
	size_t n = 0;
	int same;

	if (!want)
		return;
	for (size_t i = 0; i < c->nprocs; i++) {
		if (!c->procs[i].nhttp)
			continue;
		if (n == ROVER_MAX_PIDS) {
			if (!c->said_cut)
				log_warn("continuous profiling: more than %d processes have HTTP "
					 "items: the HTTP monitor watches %d of them",
					 ROVER_MAX_PIDS, ROVER_MAX_PIDS);
			c->said_cut = 1;
			break;
		}
		memcpy(want[n++], c->procs[i].process_id, SW_ID_LEN);
	}
	same = n == c->nmon_ids;
	for (size_t i = 0; same && i < n; i++) {
		int found = 0;

		for (size_t k = 0; k < c->nmon_ids && !found; k++)
			found = !strcmp(want[i], c->mon_ids[k]);
		same = found;
	}
	if (same || (c->mon_changed_ms && now - c->mon_changed_ms < 5000)) {
		free(want);
		return;
	}
	if (c->mon_name[0]) {
		c->ops.stop(c->ops.ctx, c->mon_name);
		c->mon_name[0] = '\0';
	}
	c->nmon_ids = 0;
	c->mon_changed_ms = now;
	if (n) {
		int err;

		snprintf(c->mon_name, sizeof(c->mon_name), "rover-http-monitor-%llu",
			 (unsigned long long)++c->mon_seq);
		err = c->ops.monitor(c->ops.ctx, c->mon_name, (const char(*)[SW_ID_LEN])want, n);
		if (err) {
			log_warn("continuous profiling: the HTTP monitor on %zu process(es) did not "
				 "start: %s",
				 n, strerror(-err));
			c->mon_name[0] = '\0';
		} else {
			memcpy(c->mon_ids, want, n * SW_ID_LEN);
			c->nmon_ids = n;
			log_info("continuous profiling: HTTP monitor %s on %zu process(es)",
				 c->mon_name, n);
		}
	}
	free(want);
}

void continuous__tick(struct continuous *c, uint64_t now)
{
	const struct rover_config *cfg = c->cfg;

	if (now >= c->next_query) {
		/*
		 * The processes of changed services are looked at again at once. Fix: an answer
		 * moved the next round a whole interval on, and one that changed nothing did too,
		 * so an OAP that answers at every query (it does for an entry this agent skips)
		 * held the rounds back for good when queries come as often as rounds.
		 */
		if (query_policies(c))
			refresh_procs(c);
		c->next_query = now + (cfg->profiling.check_interval_ms
					       ? cfg->profiling.check_interval_ms
					       : 10000);
	}
	if (!c->npols) {
		if (c->mon_name[0])
			keep_monitor(c, now);
		return;
	}
	if (!c->next_check)
		c->next_check = now + cfg->profiling.continuous_check_interval_ms;
	if (now >= c->next_fetch) {
		uint64_t every = cfg->profiling.continuous_fetch_interval_ms, at = c->next_fetch;

		/* On a fixed cadence; a thread held up (a slow backend call) skips what it missed. */
		if (!at || now - at >= every)
			at = now;
		fetch(c, at, now);
		c->next_fetch = at + every;
	}
	if (now >= c->next_check) {
		c->st.rounds++;
		send_meters(c);
		check_items(c, now);
		trigger_all(c, now);
		refresh_procs(c);
		keep_monitor(c, now);
		c->next_check = now + cfg->profiling.continuous_check_interval_ms;
	}
}

uint64_t continuous__due(const struct continuous *c, uint64_t now)
{
	uint64_t due = c->next_query;

	if (!c->npols)
		return c->mon_name[0] ? now : due; /* a monitor to stop */
	if (!c->next_fetch || !c->next_check)
		return now;
	if (c->next_fetch < due)
		due = c->next_fetch;
	if (c->next_check < due)
		due = c->next_check;
	return due;
}
