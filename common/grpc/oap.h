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
 *
 * The client (oap.c) is built as a module, librover-oap.so, that the two roles load with
 * oap__load() only when a backend is configured: gRPC, abseil, OpenSSL and c-ares are then
 * mapped only by an agent that talks to an OAP (oap_load.c says why). The oap_backoff__*
 * helpers call no gRPC and stay in the binaries (backoff.c).
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
	int insecure_skip_verify;   /* TLS without checking the server's certificate */
	const char *authentication; /* sent as metadata "authentication" when non-empty */
	uint32_t deadline_ms;	    /* per call; 0: 10 s */
};

/* How a call ended: the gRPC status code (0 OK, 4 DEADLINE_EXCEEDED, 14 UNAVAILABLE, ...)
 * and its text, for the log. */
struct oap_status {
	int code;
	char text[256];
};

#define OAP_E_TOO_BIG 1000 /* status code used for an oversized answer */
#define OAP_E_DECODE 1001  /* status code used for an answer that does not decode */

/* The module's file name, found in the directory of the role's executable. */
#define OAP_MODULE "librover-oap.so"
/*
 * What the module and the binaries must agree on, checked at load: raise it with any change
 * to a signature or a structure of this header (an older module left beside newer binaries
 * is then refused by name, not called with the wrong layout).
 */
#define OAP_MODULE_ABI 1u
/* The entry points the module exports; everything else in it is hidden (-fvisibility). */
#define OAP_EXPORT __attribute__((visibility("default")))
struct oap_module_abi {
	uint32_t version; /* OAP_MODULE_ABI */
	uint32_t opts_size, status_size;
};
/* In the module only (oap.c): what it was built against. */
OAP_EXPORT extern const struct oap_module_abi oap_module_abi;

/*
 * Loads OAP_MODULE from beside /proc/self/exe (RTLD_NOW, RTLD_LOCAL) and resolves every entry
 * point; once is enough, a second call returns 0. Before the role's seccomp filter: it opens
 * files and maps code, which the filter forbids. 0, or -errno with a sentence for the user
 * in why (the path and what is wrong). Without it, oap_conn__new and oap_stream__open fail
 * with ELIBACC and oap_conn__call returns -ELIBACC.
 */
int oap__load(char *why, size_t whylen);

struct oap_conn;

/* NULL with errno set (EINVAL for bad options, ENOMEM). Calls grpc_init() once per process. */
OAP_EXPORT struct oap_conn *oap_conn__new(const struct oap_opts *opts);
OAP_EXPORT void oap_conn__free(struct oap_conn *c);

/*
 * A unary call to method, e.g. "/skywalking.v3.EBPFProcessService/keepAlive". On OK, returns 0
 * and *ret_answer (free with protobuf_c_message_free_unpacked(*ret_answer, NULL)); otherwise
 * -EIO with st filled (st may be NULL). Never longer than the deadline.
 */
OAP_EXPORT int oap_conn__call(struct oap_conn *c, const char *method, const ProtobufCMessage *req,
			      const ProtobufCMessageDescriptor *answer_desc,
			      ProtobufCMessage **ret_answer, struct oap_status *st);

/*
 * A client stream (collectProfilingData, MeterReportService/collectBatch): open, send any
 * number of messages, finish. The whole stream shares one deadline, counted from open.
 * send returns 0 or -EIO (the stream is then broken: finish it to learn the status).
 * finish half-closes, waits for the answer and status, frees s; 0 when the status is OK.
 */
struct oap_stream;
OAP_EXPORT struct oap_stream *oap_stream__open(struct oap_conn *c, const char *method);
OAP_EXPORT int oap_stream__send(struct oap_stream *s, const ProtobufCMessage *msg);
/* Sends bytes that are already a packed message (from the spool). */
OAP_EXPORT int oap_stream__send_packed(struct oap_stream *s, const void *buf, size_t len);
OAP_EXPORT int oap_stream__finish(struct oap_stream *s,
				  const ProtobufCMessageDescriptor *answer_desc,
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
