/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: a backend task's data to the SkyWalking OAP. Each flush of a task becomes one
 * batch, the packed EBPFProfilingData messages of one collectProfilingData stream: one message
 * per (user stack, kernel stack) count of the flush, the first one also carrying the task's
 * EBPFProfilingTaskMetadata. A NETWORK task's flush makes batches of other kinds (meters, logs,
 * events: enum spool_kind), each sent as one stream of its own rpc. Batches wait in the spool
 * (shipper/output/spool.h); an upload thread sends them oldest first and never holds the main loop.
 */
#ifndef ROVER_SHIPPER_UPLOAD_H
#define ROVER_SHIPPER_UPLOAD_H

#include <stdint.h>

#include "common/grpc/oap.h"
#include "shipper/output/spool.h"

#define UPLOAD_METHOD "/skywalking.v3.EBPFProfilingService/collectProfilingData"
#define UPLOAD_METHOD_METERS "/skywalking.v3.MeterReportService/collectBatch"
#define UPLOAD_METHOD_LOGS "/skywalking.v3.LogReportService/collect"
#define UPLOAD_METHOD_EVENTS "/skywalking.v3.SpanAttachedEventReportService/collect"
#define UPLOAD_METHOD_ACCESSLOG "/skywalking.v3.EBPFAccessLogService/collect"

/*
 * The client-streaming rpc a batch of that kind (enum spool_kind) goes to, NULL for none.
 * Every one of them answers skywalking.v3.Commands.
 */
const char *upload__method(uint32_t kind);

/* One stack of a count, as task.c keeps it. */
struct upload_stack {
	int32_t id; /* -1: absent, left out of the message */
	uint32_t nr;
	char *const *names; /* nr names, outermost first */
	size_t cut;	    /* bytes cut from the end of every name (a folded-format suffix) */
};

/*
 * Appends to b (being built) the message of one count of a flush of a task of type (enum
 * task_type): ON_CPU onCPU{stacks, dumpCount = value}; OFF_CPU offCPU{stacks, switchCount =
 * value2, duration = value ns}. stacks: the kernel stack, then the user stack, each innermost
 * frame first. b->samples grows by dumpCount (ON_CPU) or switchCount (OFF_CPU). 0 or -errno.
 */
int upload__add(struct spool_batch *b, uint32_t type, const struct upload_stack *kstack,
		const struct upload_stack *ustack, uint64_t value, uint64_t value2);

struct upload_meta {
	const char *task_id;	/* SkyWalking task id */
	const char *process_id; /* SkyWalking process id */
	int64_t start_ms;	/* profilingStartTime */
	int64_t now_ms;		/* currentTime */
};

/*
 * Makes the first message of b also carry task = EBPFProfilingTaskMetadata(m). A batch with no
 * message gets one with only the metadata. 0 or -errno (b unchanged).
 */
int upload__finish(struct spool_batch *b, const struct upload_meta *m);

struct uploader_opts {
	struct spool *spool;
	struct oap_opts oap;
	uint32_t backoff_min_ms, backoff_max_ms; /* 0: 1 s and 30 s */
};

struct uploader_stats {
	uint64_t streams_ok, streams_failed;
	uint64_t messages, bytes; /* sent in streams that ended OK */
	int reachable;		  /* the last stream ended OK */
};

struct uploader;

/* Connects (lazily: gRPC connects on the first call) and starts the thread. NULL + errno. */
struct uploader *uploader__start(const struct uploader_opts *opts);
/*
 * Lets the thread send what waits for at most grace_ms, then stops it. 1 when the thread has
 * ended (what it did not send is still in the spool), 0 when it is still inside a call after
 * the grace: it is then left running and u must not be freed.
 */
int uploader__stop(struct uploader *u, uint32_t grace_ms);
/* After a stop that returned 1. */
void uploader__free(struct uploader *u);
void uploader__stats(struct uploader *u, struct uploader_stats *ret);

#endif
