/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A gRPC client for the SkyWalking OAP on the gRPC C core library, linked into the two
 * processes that talk to the backend: the supervisor (processes, tasks) and the shipper
 * (profiling data). Both run as the rover user with no capabilities; never the worker or the
 * launcher. Messages are protobuf-c messages, packed and unpacked here.
 *
 * Every call has a deadline. Calls are blocking for the calling thread only: each caller runs
 * its calls from its own thread, so a slow or dead backend holds no other call, no discovery
 * and no profiling. Any number of threads may call on one oap_conn at once.
 */
#ifndef ROVER_COMMON_GRPC_OAP_H
#define ROVER_COMMON_GRPC_OAP_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Answers larger than this are refused (the call fails with OAP_E_TOO_BIG). */
#define OAP_MAX_ANSWER (4u << 20)

struct oap_opts {
	const char *addr; /* "host:port" */
	int tls;
	/* PEM contents (not paths: the launcher reads the files, the callers cannot); NULL: none.
	 * With tls and no ca_pem, the system roots are used. */
	const char *ca_pem;
	const char *cert_pem; /* client certificate, with key_pem */
	const char *key_pem;
	int insecure_skip_verify; /* TLS without checking the server's certificate */
	const char *authentication; /* sent as metadata "authentication" when non-empty */
	uint32_t deadline_ms;       /* per call; 0: 10 s */
};

/* How a call ended: the gRPC status code (0 OK, 4 DEADLINE_EXCEEDED, 14 UNAVAILABLE, ...)
 * and its text, for the log. */
struct oap_status {
	int code;
	char text[256];
};

#define OAP_E_TOO_BIG 1000 /* status code used for an oversized answer */
#define OAP_E_DECODE 1001  /* status code used for an answer that does not decode */

struct oap_conn;

/* NULL with errno set (EINVAL for bad options, ENOMEM). Calls grpc_init() once per process. */
struct oap_conn *oap_conn__new(const struct oap_opts *opts);
void oap_conn__free(struct oap_conn *c);

/*
 * A unary call to method, e.g. "/skywalking.v3.EBPFProcessService/keepAlive". On OK, returns 0
 * and *ret_answer (free with protobuf_c_message_free_unpacked(*ret_answer, NULL)); otherwise
 * -EIO with st filled (st may be NULL). Never longer than the deadline.
 */
int oap_conn__call(struct oap_conn *c, const char *method, const ProtobufCMessage *req,
		   const ProtobufCMessageDescriptor *answer_desc, ProtobufCMessage **ret_answer,
		   struct oap_status *st);

/*
 * A client stream (collectProfilingData, MeterReportService/collectBatch): open, send any
 * number of messages, finish. The whole stream shares one deadline, counted from open.
 * send returns 0 or -EIO (the stream is then broken: finish it to learn the status).
 * finish half-closes, waits for the answer and status, frees s; 0 when the status is OK.
 */
struct oap_stream;
struct oap_stream *oap_stream__open(struct oap_conn *c, const char *method);
int oap_stream__send(struct oap_stream *s, const ProtobufCMessage *msg);
/* Sends bytes that are already a packed message (from the spool). */
int oap_stream__send_packed(struct oap_stream *s, const void *buf, size_t len);
int oap_stream__finish(struct oap_stream *s, const ProtobufCMessageDescriptor *answer_desc,
		       ProtobufCMessage **ret_answer, struct oap_status *st);

/*
 * Exponential backoff with jitter between attempts after failures: 1 s doubling to 60 s by
 * default, each wait drawn uniformly from [d/2, d]. success() resets it.
 */
struct oap_backoff {
	uint32_t min_ms, max_ms, cur_ms;
	uint64_t next_ms; /* monotonic ms before which no attempt is made */
	uint32_t seed;
};
void oap_backoff__init(struct oap_backoff *b, uint32_t min_ms, uint32_t max_ms);
/* 1 when an attempt may be made at now_ms. */
int oap_backoff__ready(const struct oap_backoff *b, uint64_t now_ms);
void oap_backoff__failed(struct oap_backoff *b, uint64_t now_ms);
void oap_backoff__success(struct oap_backoff *b);

#endif
