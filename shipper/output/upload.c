// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/Command.pb-c.h"
#include "common/linklog.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/util.h"
#include "ebpf/profiling/Profile.pb-c.h"
#include "shipper/output/upload.h"

typedef Skywalking__V3__EBPFProfilingStackMetadata stack_md;

/*
 * Fills md from s, innermost frame first. Names with a suffix to cut are copied into *arena
 * (one allocation per stack, freed by the caller). 0 or -ENOMEM.
 */
static int fill_stack(stack_md *md, Skywalking__V3__EBPFProfilingStackType type,
		      const struct upload_stack *s, char **syms, char **arena)
{
	size_t total = 0;
	char *p;

	skywalking__v3__ebpfprofiling_stack_metadata__init(md);
	md->stacktype = type;
	md->stackid = s->id;
	md->n_stacksymbols = s->nr;
	md->stacksymbols = syms;
	if (!s->cut) {
		for (uint32_t i = 0; i < s->nr; i++)
			syms[i] = s->names[s->nr - 1 - i];
		return 0;
	}
	for (uint32_t i = 0; i < s->nr; i++)
		total += strlen(s->names[i]) + 1;
	p = *arena = malloc(total ? total : 1);
	if (!p)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nr; i++) {
		const char *n = s->names[s->nr - 1 - i];
		size_t len = strlen(n);

		len = len >= s->cut ? len - s->cut : len;
		memcpy(p, n, len);
		p[len] = '\0';
		syms[i] = p;
		p += len + 1;
	}
	return 0;
}

static int32_t clamp32(uint64_t v)
{
	return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

int upload__add(struct spool_batch *b, uint32_t type, const struct upload_stack *kstack,
		const struct upload_stack *ustack, uint64_t value, uint64_t value2)
{
	char *ksyms[ROVER_MAX_STACK_DEPTH], *usyms[ROVER_MAX_STACK_DEPTH];
	char *karena = NULL, *uarena = NULL;
	stack_md md[2], *mdp[2];
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;
	Skywalking__V3__EBPFOnCPUProfiling on = SKYWALKING__V3__EBPFON_CPUPROFILING__INIT;
	Skywalking__V3__EBPFOffCPUProfiling off = SKYWALKING__V3__EBPFOFF_CPUPROFILING__INIT;
	size_t n = 0, len;
	uint8_t *dst;
	int err = 0;

	if ((type != TASK_ON_CPU && type != TASK_OFF_CPU) ||
	    (kstack && kstack->nr > ROVER_MAX_STACK_DEPTH) ||
	    (ustack && ustack->nr > ROVER_MAX_STACK_DEPTH))
		return -EINVAL;
	/* The kernel stack first, as the upstream agent sends them: the OAP joins them so. */
	if (kstack && kstack->id >= 0) {
		err = fill_stack(&md[n],
				 SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_KERNEL_SPACE,
				 kstack, ksyms, &karena);
		if (err)
			goto cleanup;
		mdp[n] = &md[n];
		n++;
	}
	if (ustack && ustack->id >= 0) {
		err = fill_stack(&md[n],
				 SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE,
				 ustack, usyms, &uarena);
		if (err)
			goto cleanup;
		mdp[n] = &md[n];
		n++;
	}
	if (type == TASK_ON_CPU) {
		on.n_stacks = n;
		on.stacks = mdp;
		on.dumpcount = clamp32(value);
		d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU;
		d.oncpu = &on;
	} else {
		off.n_stacks = n;
		off.stacks = mdp;
		off.switchcount = clamp32(value2);
		off.duration = value > INT64_MAX ? INT64_MAX : (int64_t)value;
		d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU;
		d.offcpu = &off;
	}
	len = skywalking__v3__ebpfprofiling_data__get_packed_size(&d);
	err = spool_batch__reserve(b, len, &dst);
	if (err)
		goto cleanup;
	skywalking__v3__ebpfprofiling_data__pack(&d, dst);
	b->samples += (uint64_t)(type == TASK_ON_CPU ? on.dumpcount : off.switchcount);
cleanup:
	free(karena);
	free(uarena);
	return err;
}

int upload__finish(struct spool_batch *b, const struct upload_meta *m)
{
	Skywalking__V3__EBPFProfilingTaskMetadata md =
		SKYWALKING__V3__EBPFPROFILING_TASK_METADATA__INIT;
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;
	size_t off = 0, first_len = 0, head_len, total;
	const uint8_t *first = NULL;
	uint8_t *out, *p;
	int r;

	md.taskid = (char *)m->task_id;
	md.processid = (char *)m->process_id;
	md.profilingstarttime = m->start_ms;
	md.currenttime = m->now_ms;
	d.task = &md;
	head_len = skywalking__v3__ebpfprofiling_data__get_packed_size(&d);
	if (b->len) {
		r = spool_batch__next(b, &off, &first, &first_len);
		if (r != 1)
			return r ? r : -EINVAL;
	}
	/*
	 * Protobuf decoders merge concatenated encodings of one message: field 1 (task) followed
	 * by the first message's field 2 or 3 is that message with task set, byte for byte what
	 * packing it whole gives (fields go out in number order).
	 */
	total = (size_t)b->len + head_len + (b->len ? 0 : 4);
	if (total > SPOOL_MAX_BATCH)
		return -E2BIG;
	out = malloc(total);
	if (!out)
		return -ENOMEM;
	p = out;
	{
		size_t l = head_len + first_len;

		p[0] = (uint8_t)l;
		p[1] = (uint8_t)(l >> 8);
		p[2] = (uint8_t)(l >> 16);
		p[3] = (uint8_t)(l >> 24);
	}
	p += 4;
	skywalking__v3__ebpfprofiling_data__pack(&d, p);
	p += head_len;
	if (b->len) {
		memcpy(p, first, first_len);
		p += first_len;
		memcpy(p, b->data + off, b->len - off);
	} else {
		b->nmsgs = 1;
	}
	free(b->data);
	b->data = out;
	b->len = (uint32_t)total;
	b->cap = (uint32_t)total;
	return 0;
}

struct uploader {
	struct spool *sp;
	struct oap_opts opts;  /* strings copied: the channel is made again after failures */
	struct oap_conn *conn; /* NULL: made at the next attempt */
	struct oap_backoff backoff;
	pthread_t thread;
	pthread_mutex_t lock; /* stats, draining */
	struct uploader_stats st;
	int draining;
	uint64_t drain_end_ms; /* monotonic */
	struct linklog link;   /* when a change of the link is logged */
};

const char *upload__method(uint32_t kind)
{
	static const char *const methods[SPOOL_KIND_MAX] = {
		[SPOOL_PROFILE] = UPLOAD_METHOD,
		[SPOOL_METERS] = UPLOAD_METHOD_METERS,
		[SPOOL_LOGS] = UPLOAD_METHOD_LOGS,
		[SPOOL_EVENTS] = UPLOAD_METHOD_EVENTS,
		[SPOOL_ACCESSLOG] = UPLOAD_METHOD_ACCESSLOG,
	};

	return kind < SPOOL_KIND_MAX ? methods[kind] : NULL;
}

/* One batch, one stream. 0 when the OAP answered OK; -EIO with st filled otherwise. */
static int send_batch(struct uploader *u, const struct spool_batch *b, struct oap_status *st)
{
	const char *method = upload__method(b->kind);
	struct oap_stream *s;
	ProtobufCMessage *answer = NULL;
	const uint8_t *msg;
	size_t off = 0, len;
	int err = 0, r;

	if (!method) {
		/* The spool takes no batch of an unknown kind: this is a bug, not the network. */
		st->code = OAP_E_DECODE;
		snprintf(st->text, sizeof(st->text), "batch of unknown kind %u", b->kind);
		return -EIO;
	}

	if (!u->conn) {
		u->conn = oap_conn__new(&u->opts);
		if (!u->conn) {
			st->code = 14;
			snprintf(st->text, sizeof(st->text), "making a channel: %s",
				 strerror(errno));
			return -EIO;
		}
	}
	s = oap_stream__open(u->conn, method);
	if (!s) {
		st->code = 14;
		snprintf(st->text, sizeof(st->text), "opening a stream: %s", strerror(errno));
		return -EIO;
	}
	while ((r = spool_batch__next(b, &off, &msg, &len)) == 1)
		if (oap_stream__send_packed(s, msg, len))
			break;
	err = oap_stream__finish(s, &skywalking__v3__commands__descriptor, &answer, st);
	if (answer)
		protobuf_c_message_free_unpacked(answer, NULL);
	if (!err && r) {
		/* Not a send failure with an OK status: the spool checked the framing already. */
		st->code = OAP_E_DECODE;
		snprintf(st->text, sizeof(st->text), "bad batch framing");
		err = -EIO;
	}
	return err ? -EIO : 0;
}

static int draining(struct uploader *u, uint64_t now)
{
	int d;

	pthread_mutex_lock(&u->lock);
	d = !u->draining ? 0 : now >= u->drain_end_ms ? 2 : 1;
	pthread_mutex_unlock(&u->lock);
	return d;
}

static void *upload_main(void *arg)
{
	struct uploader *u = arg;

	for (;;) {
		uint64_t now = now_mono_ms();
		int drain = draining(u, now);
		struct spool_stats ss;
		struct spool_batch b;
		struct oap_status st = { 0 };
		unsigned quiet;
		int err;

		if (drain == 2)
			break;
		if (!oap_backoff__ready(&u->backoff, now)) {
			/* While draining a backend that just failed, waiting is pointless. */
			if (drain || spool__sleep(u->sp, u->backoff.next_ms - now) == -EINTR)
				break;
			continue;
		}
		/* An interrupt (stop) makes take return what waits, then -EINTR instead of waiting. */
		err = spool__take(u->sp, -1, &b);
		if (err == -EINTR)
			break;
		if (err) {
			/* Out of memory reading a batch back: wait as after a failed send. */
			oap_backoff__failed(&u->backoff, now_mono_ms());
			continue;
		}
		err = send_batch(u, &b, &st);
		pthread_mutex_lock(&u->lock);
		if (err) {
			u->st.streams_failed++;
			u->st.reachable = 0;
		} else {
			u->st.streams_ok++;
			u->st.messages += b.nmsgs;
			u->st.bytes += b.len;
			u->st.reachable = 1;
		}
		pthread_mutex_unlock(&u->lock);
		if (err) {
			log_debug("upload of batch %llu: %s (status %d)", (unsigned long long)b.seq,
				  st.text, st.code);
			/*
			 * A fresh channel for the next attempt: gRPC 1.51's channel, with fail-fast
			 * calls and nobody polling between them, was seen to keep answering the old
			 * "connection refused" long after the backend was back on the same port.
			 */
			oap_conn__free(u->conn);
			u->conn = NULL;
			spool__untake(u->sp, b.seq);
			oap_backoff__failed(&u->backoff, now_mono_ms());
			if (linklog__change(&u->link, 0, st.code, now_mono_ms(), &quiet))
				log_warn("backend unreachable: %s (status %d), uploads wait in the spool",
					 st.text, st.code);
			if (quiet)
				log_info("backend: %u changes of state in the previous 10 minutes not "
					 "logged (a backend failing call after call)",
					 quiet);
			continue;
		}
		spool__done(u->sp, b.seq);
		oap_backoff__success(&u->backoff);
		if (linklog__change(&u->link, 1, 0, now_mono_ms(), &quiet)) {
			spool__stats(u->sp, &ss);
			log_info("backend reachable, %llu batches waiting",
				 (unsigned long long)ss.batches);
		}
		if (quiet)
			log_info("backend: %u changes of state in the previous 10 minutes not logged "
				 "(a backend failing call after call)",
				 quiet);
	}
	return NULL;
}

static void free_opts(struct oap_opts *o)
{
	free((char *)o->addr);
	free((char *)o->ca_pem);
	free((char *)o->cert_pem);
	if (o->key_pem) {
		explicit_bzero((char *)o->key_pem, strlen(o->key_pem));
		free((char *)o->key_pem);
	}
	free((char *)o->authentication);
}

struct uploader *uploader__start(const struct uploader_opts *opts)
{
	struct uploader *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return NULL;
	u->sp = opts->spool;
	pthread_mutex_init(&u->lock, NULL);
	oap_backoff__init(&u->backoff, opts->backoff_min_ms ? opts->backoff_min_ms : 1000,
			  opts->backoff_max_ms ? opts->backoff_max_ms : 30000);
	linklog__init(&u->link);
	u->opts = opts->oap;
	u->opts.addr = opts->oap.addr ? strdup(opts->oap.addr) : NULL;
	u->opts.ca_pem = opts->oap.ca_pem ? strdup(opts->oap.ca_pem) : NULL;
	u->opts.cert_pem = opts->oap.cert_pem ? strdup(opts->oap.cert_pem) : NULL;
	u->opts.key_pem = opts->oap.key_pem ? strdup(opts->oap.key_pem) : NULL;
	u->opts.authentication = opts->oap.authentication ? strdup(opts->oap.authentication) : NULL;
	if ((opts->oap.addr && !u->opts.addr) || (opts->oap.ca_pem && !u->opts.ca_pem) ||
	    (opts->oap.cert_pem && !u->opts.cert_pem) || (opts->oap.key_pem && !u->opts.key_pem) ||
	    (opts->oap.authentication && !u->opts.authentication)) {
		err = ENOMEM;
		goto fail;
	}
	/* Made now, before the sandbox: it checks the options and reads the system roots. */
	u->conn = oap_conn__new(&u->opts);
	if (!u->conn) {
		err = errno;
		goto fail;
	}
	err = pthread_create(&u->thread, NULL, upload_main, u);
	if (err)
		goto fail;
	return u;
fail:
	oap_conn__free(u->conn);
	free_opts(&u->opts);
	pthread_mutex_destroy(&u->lock);
	free(u);
	errno = err;
	return NULL;
}

int uploader__stop(struct uploader *u, uint32_t grace_ms)
{
	struct timespec ts;

	pthread_mutex_lock(&u->lock);
	u->draining = 1;
	u->drain_end_ms = now_mono_ms() + grace_ms;
	pthread_mutex_unlock(&u->lock);
	spool__interrupt(u->sp);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += grace_ms / 1000;
	ts.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	/* A call in flight ends by its own deadline; past the grace it is left to the exit. */
	return pthread_timedjoin_np(u->thread, NULL, &ts) == 0;
}

void uploader__free(struct uploader *u)
{
	if (!u)
		return;
	oap_conn__free(u->conn);
	free_opts(&u->opts);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void uploader__stats(struct uploader *u, struct uploader_stats *ret)
{
	pthread_mutex_lock(&u->lock);
	*ret = u->st;
	pthread_mutex_unlock(&u->lock);
}
