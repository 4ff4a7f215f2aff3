/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the request/response protocols beyond HTTP (MySQL, Cassandra CQL, MongoDB,
 * Kafka, DNS), one parser file each behind one table of operations, so the NETWORK analysis
 * (shipper/network/network.c) feeds, pops and accounts them all the same way. HTTP/1 and HTTP/2 have
 * their own interfaces (shipper/network/protocols/http/http1.h, shipper/network/protocols/http/http2.h): their exchanges feed the `http`
 * meters and the sampled traces.
 *
 * The contract every parser keeps, as shipper/network/protocols/http/http1.c does (read its header first):
 * - Input is two byte streams of one connection, egress (written by the traced process) and
 *   ingress (read by it), fed as segments: the first `captured` bytes of a syscall that moved
 *   `actual` bytes; the rest of the syscall is a gap, skipped unread. A lost segment is a gap
 *   of known size (or 0: unknown) with no bytes. Bytes come from a traced, possibly hostile
 *   process: no length, count or offset is trusted, a truncated message never reads past
 *   what was captured, and garbage is counted, not an error.
 * - Any split of the same bytes into segments gives the same exchanges when there are no gaps.
 *   A gap inside a message of known length is skipped and counted (sizes stay exact); framing
 *   lost anywhere else makes the direction resynchronize on a later segment start that parses
 *   as a message header of its protocol (the bytes in between count to bytes_unattributed, or,
 *   where the protocol says they still belong to the message that was cut, a MySQL result set
 *   larger than the capture, to that message, as shipper/network/protocols/http/http1.c does).
 * - For datagram protocols (DNS over UDP) each segment is one whole message (L7_F_DATAGRAM
 *   given to new()).
 * - Memory per connection is bounded and never depends on message sizes; at most
 *   L7_MAX_PENDING exchanges are held (waiting for a response or to be popped). A request
 *   over that is counted in requests_dropped, and its response too when it comes.
 * - Every byte seen ends in an exchange's req_bytes or resp_bytes or in bytes_unattributed:
 *   after close() and popping everything the two add up to bytes_seen (checked by the fuzz
 *   targets).
 * - Role: which direction carries requests is learnt from the first message whose kind can be
 *   told (e.g. a MySQL greeting is written by the server; a Kafka request by the client).
 * - Not thread-safe: one connection is fed by one thread.
 *
 * Strings in an exchange are NUL-terminated, bytes below 0x20 and 0x7f replaced by '?', cut to
 * their bound (L7_F_TARGET_TRUNCATED). `code` is the protocol's own result code, with 0 for
 * success where the protocol has one; `error` says whether the protocol counts the answer as a
 * failure (a MySQL ERR packet, a CQL ERROR, a Mongo reply with ok: 0, a Kafka error code other
 * than 0 (the first non-zero one found), a DNS rcode other than NOERROR).
 */
#ifndef ROVER_SHIPPER_L7_H
#define ROVER_SHIPPER_L7_H

#include <stddef.h>
#include <stdint.h>

/* Exchanges waiting for a response or to be popped; a power of two. */
#define L7_MAX_PENDING 64u
#define L7_OP_MAX 31u
#define L7_TARGET_MAX 255u

enum l7_dir {
	L7_EGRESS = 0,	/* written by the traced process (NET_DIR_EGRESS) */
	L7_INGRESS = 1, /* read by it (NET_DIR_INGRESS) */
};

enum l7_role {
	L7_ROLE_UNKNOWN = 0,
	L7_ROLE_CLIENT, /* requests are egress */
	L7_ROLE_SERVER, /* requests are ingress */
};

/* new() options. */
enum l7_new_flags {
	L7_F_DATAGRAM = 1u << 0, /* each segment is one message (UDP) */
};

enum l7_xflags {
	L7_F_REQ_TRUNCATED = 1u << 0,	  /* request bytes not captured, lost or mis-framed */
	L7_F_RESP_TRUNCATED = 1u << 1,	  /* same for the response */
	L7_F_NO_REQUEST = 1u << 2,	  /* a response nothing pending matched */
	L7_F_NO_RESPONSE = 1u << 3,	  /* unanswered at close (or pushed out, see below) */
	L7_F_TARGET_TRUNCATED = 1u << 4,  /* target[] holds a prefix */
	L7_F_NO_REPLY_EXPECTED = 1u << 5, /* a request the protocol answers with nothing (a
					   * Kafka Produce with acks=0, a Mongo moreToCome):
					   * complete when sent, never NO_RESPONSE */
};

/* One request and its answer (several response messages of one request count as one). */
struct l7_exchange {
	uint64_t start_ns;   /* segment of the request's first byte (response's, if NO_REQUEST) */
	uint64_t end_ns;     /* segment that completed the response; close()'s if NO_RESPONSE */
	uint64_t req_bytes;  /* on the wire, gaps included; 0 if NO_REQUEST */
	uint64_t resp_bytes; /* 0 if NO_RESPONSE */
	uint32_t flags;	     /* enum l7_xflags */
	int32_t code;	     /* the protocol's result code (see above); 0 if NO_RESPONSE */
	uint8_t error;	     /* the answer is a failure by the protocol's own codes */
	uint8_t req_dir;     /* enum l7_dir the request went (came, if NO_REQUEST) */
	/*
	 * What was asked, as short as the protocol names it: "COM_QUERY", "COM_STMT_EXECUTE";
	 * CQL "QUERY", "EXECUTE"; Mongo the command ("find", "insert"; "OP_QUERY" for a legacy
	 * query that is not a command); Kafka the API key's name ("Produce", "Fetch"); DNS the
	 * query type ("A", "AAAA", "TYPE65").
	 */
	char op[L7_OP_MAX + 1];
	/*
	 * What it was about: the statement text's prefix (MySQL, CQL), the collection (Mongo),
	 * the first topic (Kafka), the query name (DNS); "" when the message has none.
	 */
	char target[L7_TARGET_MAX + 1];
};

struct l7_stats {
	uint64_t segments;
	uint64_t bytes_seen;	     /* actual bytes of every segment, plus lost bytes */
	uint64_t bytes_unattributed; /* of those, in no exchange */
	uint64_t gap_bytes;	     /* not captured */
	uint64_t lost_segments;
	uint64_t lost_bytes;
	uint64_t requests;
	uint64_t responses;
	uint64_t exchanges; /* popped or ready, NO_RESPONSE ones included */
	uint64_t unanswered;
	uint64_t orphan_responses;
	uint64_t requests_dropped; /* over L7_MAX_PENDING (or out of memory) */
	uint64_t responses_dropped;
	uint64_t resyncs;	 /* framing lost, looking for a next message start */
	uint64_t malformed;	 /* messages whose content did not parse (framed, counted) */
	uint64_t dirs_abandoned; /* never carried this protocol */
	uint64_t alloc_failures;
};

/* A parser. Functions return 0 or a negative errno; new() NULL with errno set. */
struct l7_ops {
	const char *name; /* "mysql", "cql", "mongodb", "kafka", "dns": meters and report */
	void *(*new_conn)(unsigned flags); /* enum l7_new_flags */
	void (*free_conn)(void *c);	   /* accepts NULL */
	/* -EINVAL (captured > actual, data NULL with captured > 0, bad dir), -EPIPE after close. */
	int (*feed)(void *c, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data,
		    size_t captured, size_t actual);
	int (*lost)(void *c, enum l7_dir dir, uint64_t nbytes);
	/* Messages in progress are truncated; pending requests become NO_RESPONSE exchanges. */
	void (*close)(void *c, uint64_t ts_ns);
	/* 1 with the oldest completed exchange in *ret, 0 if none is ready. */
	int (*next)(void *c, struct l7_exchange *ret);
	enum l7_role (*role)(const void *c);
	void (*stats)(const void *c, struct l7_stats *ret);
};

extern const struct l7_ops l7_mysql_ops;
extern const struct l7_ops l7_cql_ops;
extern const struct l7_ops l7_mongo_ops;
extern const struct l7_ops l7_kafka_ops;
extern const struct l7_ops l7_dns_ops;

/* Copies s[0..n) into out (cap bytes incl. NUL), control bytes as '?'; 1 if it was cut. */
int l7__copy_str(char *out, size_t cap, const uint8_t *s, size_t n);

/* Helpers the HTTP parsers share with these. */
/* 1 when p[0..n) is lit, whose letters are lower case, in any case. */
int l7__name_is(const uint8_t *p, size_t n, const char *lit);
/*
 * Copies at most cap bytes of src[0..n) and a NUL into dst, control bytes but tab as '?'; sets
 * cut_flag in *flags when it was cut. Returns the length copied.
 */
size_t l7__copy_text(char *dst, size_t cap, const uint8_t *src, size_t n, uint32_t *flags,
		     uint32_t cut_flag);

#endif
