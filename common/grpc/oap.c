// SPDX-License-Identifier: Apache-2.0
/*
 * The OAP client on the gRPC C core (1.51). One channel per oap_conn, shared by every thread;
 * one completion queue per call, plucked only by the thread that made the call, so no caller
 * ever waits on another's completion. Calls are fail-fast (no wait_for_ready): while the
 * backend is unreachable they end at once with UNAVAILABLE, and the channel reconnects in the
 * background with its own bounded backoff.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "common/grpc/oap.h"

#define DEFAULT_DEADLINE_MS 10000u
/* System roots are read into memory when the channel is made, never later: a role's seccomp
 * filter may forbid opening files by the time the first TLS handshake runs. */
#define MAX_ROOTS_FILE (8u << 20)
/* After the call's own deadline has passed, gRPC ends the batch; this is a bound on how late
 * that may be before the call is cancelled by hand. */
#define PLUCK_GRACE_MS 2000
/*
 * What decoding one answer may allocate. OAP_MAX_ANSWER bounds the bytes on the wire, not what
 * they decode to: an entry of a repeated field costs 2 bytes on the wire and a structure, a
 * pointer and malloc's overhead in memory, so 4 MiB of empty commands (a hostile or broken
 * OAP's, tests/oap/README.md "Hostile mode") decoded to 230 MB in the supervisor. A real
 * answer (tasks, policies, process ids) decodes to kilobytes.
 */
#define MAX_DECODED (8u << 20)

enum { TAG_START = 1, TAG_SEND, TAG_CLOSE, TAG_RECV };

struct oap_conn {
	grpc_channel *ch;
	int has_auth;
	grpc_slice auth_key, auth_value;
	uint32_t deadline_ms;
};

struct oap_stream {
	struct oap_conn *c;
	grpc_completion_queue *cq;
	grpc_call *call;
	grpc_slice method;
	gpr_timespec deadline;
	int broken;
	int recv_started;
	grpc_metadata md;
	grpc_metadata_array initial_md, trailing_md;
	grpc_byte_buffer *answer;
	grpc_status_code status;
	grpc_slice details;
};

OAP_EXPORT const struct oap_module_abi oap_module_abi = {
	.version = OAP_MODULE_ABI,
	.opts_size = sizeof(struct oap_opts),
	.status_size = sizeof(struct oap_status),
};

static pthread_once_t grpc_once = PTHREAD_ONCE_INIT;

/* gRPC's own log lines (a failed handshake, a refused connection) would repeat at every
 * attempt; every failure reaches the caller as a status, which the caller logs once. */
static void grpc_log_none(gpr_log_func_args *args)
{
	(void)args;
}

static void grpc_init_once(void)
{
	if (!getenv("GRPC_VERBOSITY") && !getenv("GRPC_TRACE"))
		gpr_set_log_function(grpc_log_none);
	/*
	 * Calls fail fast, so while the backend is down no call is open, and no thread polls
	 * the channel's reconnect attempts: their completion is seen only by gRPC's backup
	 * poller, every 5 s by default. At 1 s a backend that comes back is used within the
	 * reconnect backoff (5 s at most) plus 1 s. 1.51 reads it only from the environment,
	 * at grpc_init().
	 */
	setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "1000", 0);
	grpc_init();
}

static const char *const roots_files[] = {
	"/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine */
	"/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
	"/etc/ssl/ca-bundle.pem",	      /* openSUSE */
	"/etc/ssl/cert.pem",		      /* others */
};

/* The system's root certificates as one PEM string, or NULL (gRPC then uses its own). */
static char *roots__read(void)
{
	for (size_t i = 0; i < sizeof(roots_files) / sizeof(roots_files[0]); i++) {
		int fd = open(roots_files[i], O_RDONLY | O_CLOEXEC | O_NOCTTY);
		struct stat st;
		char *buf;
		size_t off = 0;

		if (fd < 0)
			continue;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
		    (uint64_t)st.st_size > MAX_ROOTS_FILE) {
			close(fd);
			continue;
		}
		buf = malloc((size_t)st.st_size + 1);
		if (!buf) {
			close(fd);
			return NULL;
		}
		while (off < (size_t)st.st_size) {
			ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		close(fd);
		if (off == 0) {
			free(buf);
			continue;
		}
		buf[off] = '\0';
		return buf;
	}
	return NULL;
}

/* TLS that checks nothing about the server: no chain check, no host name check. */
static grpc_channel_credentials *creds__insecure_tls(const struct oap_opts *o, const char *roots)
{
	grpc_tls_credentials_options *opts = grpc_tls_credentials_options_create();
	grpc_tls_identity_pairs *pairs = NULL;
	grpc_tls_certificate_provider *prov;
	grpc_tls_certificate_verifier *ver;

	if (!opts)
		return NULL;
	if (o->cert_pem && o->key_pem) {
		pairs = grpc_tls_identity_pairs_create();
		grpc_tls_identity_pairs_add_pair(pairs, o->key_pem, o->cert_pem);
	}
	/* Roots are given even though unused: without them the connector would load the
	 * system's from disk at handshake time. The provider takes pairs. */
	prov = grpc_tls_certificate_provider_static_data_create(roots, pairs);
	grpc_tls_credentials_options_set_certificate_provider(opts, prov);
	grpc_tls_certificate_provider_release(prov);
	if (roots)
		grpc_tls_credentials_options_watch_root_certs(opts);
	if (pairs)
		grpc_tls_credentials_options_watch_identity_key_cert_pairs(opts);
	grpc_tls_credentials_options_set_verify_server_cert(opts, 0);
	ver = grpc_tls_certificate_verifier_no_op_create();
	grpc_tls_credentials_options_set_certificate_verifier(opts, ver);
	grpc_tls_certificate_verifier_release(ver);
	grpc_tls_credentials_options_set_check_call_host(opts, 0);
	return grpc_tls_credentials_create(opts); /* takes opts */
}

static grpc_channel_credentials *creds__new(const struct oap_opts *o)
{
	grpc_ssl_pem_key_cert_pair pair = { .private_key = o->key_pem, .cert_chain = o->cert_pem };
	grpc_channel_credentials *creds;
	char *roots = NULL;

	if (!o->tls)
		return grpc_insecure_credentials_create();
	if (!o->ca_pem)
		roots = roots__read();
	if (o->insecure_skip_verify)
		creds = creds__insecure_tls(o, o->ca_pem ? o->ca_pem : roots);
	else
		creds = grpc_ssl_credentials_create_ex(o->ca_pem ? o->ca_pem : roots,
						       o->cert_pem && o->key_pem ? &pair : NULL,
						       NULL, NULL);
	free(roots);
	return creds;
}

struct oap_conn *oap_conn__new(const struct oap_opts *opts)
{
	grpc_arg args[] = {
		/* The answer bound is enforced by the transport before any allocation of it. */
		{ GRPC_ARG_INTEGER,
		  GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  { .integer = (int)OAP_MAX_ANSWER } },
		/* Reconnects: 1 s, growing to 5 s at most, so a backend that comes back is used
		 * within seconds; callers space their own attempts with oap_backoff. */
		{ GRPC_ARG_INTEGER, GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, { .integer = 1000 } },
		{ GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, { .integer = 5000 } },
		/* Minimum connect timeout: a SYN that gets no answer is given up after 5 s. */
		{ GRPC_ARG_INTEGER, GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, { .integer = 5000 } },
		/* A ping only while calls are open and at most every 5 min (what a Java OAP
		 * permits without ENHANCE_YOUR_CALM); it also sets TCP_USER_TIMEOUT, so a peer
		 * that vanished without a reset is noticed in 20 s, not at TCP's 15 min. */
		{ GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, { .integer = 300000 } },
		{ GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, { .integer = 20000 } },
		/* A failed call is reported, never replayed behind the caller's back. */
		{ GRPC_ARG_INTEGER, GRPC_ARG_ENABLE_RETRIES, { .integer = 0 } },
		/* No service config from DNS TXT records: the backend's DNS cannot change how
		 * the agent calls. */
		{ GRPC_ARG_INTEGER, GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, { .integer = 1 } },
		{ GRPC_ARG_STRING, GRPC_ARG_PRIMARY_USER_AGENT_STRING, { .string = "rover" } },
	};
	grpc_channel_args cargs = { .num_args = sizeof(args) / sizeof(args[0]), .args = args };
	grpc_channel_credentials *creds;
	struct oap_conn *c;

	if (!opts || !opts->addr || !*opts->addr ||
	    (opts->tls && !opts->cert_pem != !opts->key_pem)) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&grpc_once, grpc_init_once);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->deadline_ms = opts->deadline_ms ? opts->deadline_ms : DEFAULT_DEADLINE_MS;
	creds = creds__new(opts);
	if (!creds) {
		free(c);
		errno = EINVAL;
		return NULL;
	}
	c->ch = grpc_channel_create(opts->addr, creds, &cargs);
	grpc_channel_credentials_release(creds);
	if (!c->ch) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	if (opts->authentication && *opts->authentication) {
		c->has_auth = 1;
		c->auth_key = grpc_slice_from_static_string("authentication");
		c->auth_value = grpc_slice_from_copied_string(opts->authentication);
	}
	return c;
}

void oap_conn__free(struct oap_conn *c)
{
	if (!c)
		return;
	grpc_channel_destroy(c->ch);
	if (c->has_auth)
		grpc_slice_unref(c->auth_value);
	free(c);
}

static void status__set(struct oap_status *st, int code, const char *text, size_t len)
{
	if (!st)
		return;
	st->code = code;
	if (len >= sizeof(st->text))
		len = sizeof(st->text) - 1;
	memcpy(st->text, text, len);
	st->text[len] = '\0';
}

static void status__str(struct oap_status *st, int code, const char *text)
{
	status__set(st, code, text, strlen(text));
}

/* Waits for tag; the call's deadline bounds it, the grace and a cancel make sure of it. */
static int stream__pluck(struct oap_stream *s, intptr_t tag)
{
	gpr_timespec until =
		gpr_time_add(s->deadline, gpr_time_from_millis(PLUCK_GRACE_MS, GPR_TIMESPAN));
	grpc_event ev = grpc_completion_queue_pluck(s->cq, (void *)tag, until, NULL);

	if (ev.type == GRPC_QUEUE_TIMEOUT) {
		grpc_call_cancel_with_status(s->call, GRPC_STATUS_DEADLINE_EXCEEDED,
					     "deadline passed", NULL);
		ev = grpc_completion_queue_pluck(s->cq, (void *)tag,
						 gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
	}
	return ev.type == GRPC_OP_COMPLETE && ev.success;
}

static grpc_slice pack(const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	grpc_slice sl = grpc_slice_malloc(len);

	protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(sl));
	return sl;
}

/* Creates the call and sends its initial metadata; the receiving side starts at once so that
 * an early status from the server is kept. */
static struct oap_stream *stream__start(struct oap_conn *c, const char *method)
{
	struct oap_stream *s;
	grpc_op ops[4] = { 0 };
	grpc_call_error ce;

	if (!c || !method || method[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->c = c;
	s->cq = grpc_completion_queue_create_for_pluck(NULL);
	if (!s->cq) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
				   gpr_time_from_millis(c->deadline_ms, GPR_TIMESPAN));
	s->method = grpc_slice_from_copied_string(method);
	s->call = grpc_channel_create_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq, s->method,
					   NULL, s->deadline, NULL);
	grpc_metadata_array_init(&s->initial_md);
	grpc_metadata_array_init(&s->trailing_md);
	s->status = GRPC_STATUS_UNKNOWN;
	s->details = grpc_empty_slice();
	if (!s->call) {
		s->broken = 1;
		return s;
	}

	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	/* Fail fast, whatever a service config would say. */
	ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
	if (c->has_auth) {
		s->md.key = c->auth_key;
		s->md.value = c->auth_value;
		ops[0].data.send_initial_metadata.count = 1;
		ops[0].data.send_initial_metadata.metadata = &s->md;
	}
	ce = grpc_call_start_batch(s->call, ops, 1, (void *)(intptr_t)TAG_START, NULL);
	if (ce != GRPC_CALL_OK || !stream__pluck(s, TAG_START))
		s->broken = 1;

	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[0].data.recv_initial_metadata.recv_initial_metadata = &s->initial_md;
	ops[1].op = GRPC_OP_RECV_MESSAGE;
	ops[1].data.recv_message.recv_message = &s->answer;
	ops[2].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[2].data.recv_status_on_client.trailing_metadata = &s->trailing_md;
	ops[2].data.recv_status_on_client.status = &s->status;
	ops[2].data.recv_status_on_client.status_details = &s->details;
	ce = grpc_call_start_batch(s->call, ops, 3, (void *)(intptr_t)TAG_RECV, NULL);
	if (ce == GRPC_CALL_OK)
		s->recv_started = 1;
	else
		s->broken = 1;
	return s;
}

static int stream__send_slice(struct oap_stream *s, grpc_slice sl)
{
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
	grpc_op op = { 0 };
	int ok;

	grpc_slice_unref(sl);
	if (s->broken) {
		grpc_byte_buffer_destroy(bb);
		return -EIO;
	}
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = bb;
	ok = grpc_call_start_batch(s->call, &op, 1, (void *)(intptr_t)TAG_SEND, NULL) ==
		     GRPC_CALL_OK &&
	     stream__pluck(s, TAG_SEND);
	grpc_byte_buffer_destroy(bb);
	if (!ok) {
		s->broken = 1;
		return -EIO;
	}
	return 0;
}

static void stream__free(struct oap_stream *s)
{
	if (s->call)
		grpc_call_unref(s->call);
	grpc_completion_queue_shutdown(s->cq);
	grpc_completion_queue_destroy(s->cq);
	grpc_metadata_array_destroy(&s->initial_md);
	grpc_metadata_array_destroy(&s->trailing_md);
	if (s->answer)
		grpc_byte_buffer_destroy(s->answer);
	grpc_slice_unref(s->details);
	grpc_slice_unref(s->method);
	free(s);
}

/* protobuf-c's allocator with a budget: an answer that would decode to more fails to decode.
 * Blocks are malloc's, so protobuf_c_message_free_unpacked(m, NULL) frees them. */
struct budget {
	size_t left;
	int refused;
};

static void *budget__alloc(void *data, size_t size)
{
	struct budget *b = data;

	if (size > b->left) {
		b->refused = 1;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void budget__free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* Half-closes, waits for the status and decodes the answer. 0 or -EIO. */
static int stream__end(struct oap_stream *s, const ProtobufCMessageDescriptor *answer_desc,
		       ProtobufCMessage **ret_answer, struct oap_status *st)
{
	grpc_byte_buffer_reader rd;
	struct budget budget = { MAX_DECODED, 0 };
	ProtobufCAllocator alloc = { budget__alloc, budget__free, &budget };
	ProtobufCMessage *ans;
	grpc_slice all;
	int err = -EIO;

	if (!s->call) {
		status__str(st, GRPC_STATUS_INTERNAL, "cannot create call");
		goto cleanup;
	}
	if (!s->broken) {
		grpc_op op = { .op = GRPC_OP_SEND_CLOSE_FROM_CLIENT };

		if (grpc_call_start_batch(s->call, &op, 1, (void *)(intptr_t)TAG_CLOSE, NULL) !=
		    GRPC_CALL_OK)
			grpc_call_cancel(s->call, NULL);
		else
			stream__pluck(s, TAG_CLOSE);
	} else {
		/* A send failed: the status is what the server or the transport said, unless
		 * the call is still open, which a cancel ends. */
		grpc_call_cancel(s->call, NULL);
	}
	if (!s->recv_started) {
		status__str(st, GRPC_STATUS_INTERNAL, "cannot start receiving");
		goto cleanup;
	}
	stream__pluck(s, TAG_RECV);
	if (s->status != GRPC_STATUS_OK) {
		const char *d = (const char *)GRPC_SLICE_START_PTR(s->details);
		size_t dlen = GRPC_SLICE_LENGTH(s->details);
		static const char big[] = "Received message larger than max";

		if (s->status == GRPC_STATUS_RESOURCE_EXHAUSTED && dlen >= sizeof(big) - 1 &&
		    !memcmp(d, big, sizeof(big) - 1))
			status__set(st, OAP_E_TOO_BIG, d, dlen);
		else
			status__set(st, s->status, d, dlen);
		goto cleanup;
	}
	if (!s->answer) {
		status__str(st, OAP_E_DECODE, "no answer message");
		goto cleanup;
	}
	if (!grpc_byte_buffer_reader_init(&rd, s->answer)) {
		status__str(st, OAP_E_DECODE, "answer not readable");
		goto cleanup;
	}
	all = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	/* The wire copy goes before decoding: at most one copy of the answer and its decoding
	 * are held at once (a 4 MiB answer had three: the message, its flat copy, the decoding). */
	grpc_byte_buffer_destroy(s->answer);
	s->answer = NULL;
	if (GRPC_SLICE_LENGTH(all) > OAP_MAX_ANSWER) {
		grpc_slice_unref(all);
		status__str(st, OAP_E_TOO_BIG, "answer larger than OAP_MAX_ANSWER");
		goto cleanup;
	}
	ans = protobuf_c_message_unpack(answer_desc, &alloc, GRPC_SLICE_LENGTH(all),
					GRPC_SLICE_START_PTR(all));
	grpc_slice_unref(all);
	if (!ans && budget.refused) {
		status__str(st, OAP_E_TOO_BIG, "answer decodes to more than 8 MiB");
		goto cleanup;
	}
	if (!ans) {
		status__str(st, OAP_E_DECODE, "answer does not decode");
		goto cleanup;
	}
	status__str(st, GRPC_STATUS_OK, "");
	if (ret_answer)
		*ret_answer = ans;
	else
		protobuf_c_message_free_unpacked(ans, NULL);
	err = 0;
cleanup:
	stream__free(s);
	return err;
}

int oap_conn__call(struct oap_conn *c, const char *method, const ProtobufCMessage *req,
		   const ProtobufCMessageDescriptor *answer_desc, ProtobufCMessage **ret_answer,
		   struct oap_status *st)
{
	struct oap_stream *s;

	if (!req || !answer_desc) {
		status__str(st, GRPC_STATUS_INVALID_ARGUMENT, "no request or answer type");
		return -EINVAL;
	}
	s = stream__start(c, method);
	if (!s) {
		int err = -errno;

		status__str(st, GRPC_STATUS_INTERNAL, "cannot start call");
		return err;
	}
	stream__send_slice(s, pack(req));
	return stream__end(s, answer_desc, ret_answer, st);
}

/*
 * NULL only for bad arguments or no memory (errno set). A backend that cannot be reached
 * gives a stream whose sends fail and whose finish reports the status.
 */
struct oap_stream *oap_stream__open(struct oap_conn *c, const char *method)
{
	return stream__start(c, method);
}

int oap_stream__send(struct oap_stream *s, const ProtobufCMessage *msg)
{
	if (!s || !msg)
		return -EINVAL;
	return stream__send_slice(s, pack(msg));
}

int oap_stream__send_packed(struct oap_stream *s, const void *buf, size_t len)
{
	if (!s || (!buf && len))
		return -EINVAL;
	return stream__send_slice(s, grpc_slice_from_copied_buffer(buf, len));
}

int oap_stream__finish(struct oap_stream *s, const ProtobufCMessageDescriptor *answer_desc,
		       ProtobufCMessage **ret_answer, struct oap_status *st)
{
	if (!s) {
		status__str(st, GRPC_STATUS_INVALID_ARGUMENT, "no stream");
		return -EINVAL;
	}
	if (!answer_desc) {
		stream__free(s);
		status__str(st, GRPC_STATUS_INVALID_ARGUMENT, "no answer type");
		return -EINVAL;
	}
	return stream__end(s, answer_desc, ret_answer, st);
}
