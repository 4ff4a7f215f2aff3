/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the request/response protocols (HTTP/1, HTTP/2, MySQL, Cassandra CQL, MongoDB,
 * Kafka, DNS), one parser each behind one table of operations, so the NETWORK analysis
 * (shipper/network/) detects, feeds, closes, pops and accounts them all the same way. What only
 * HTTP has (the fields of sampled traces and span attached events) comes with the exchanges
 * HTTP's members yield (l7_exchange.http), not from the parsers.
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

#include <stdbool.h>
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
	L7_F_NO_RESULT = 1u << 6,	  /* answered, but its result code was not read (an
					   * HTTP/2 :status not decoded) */
	L7_F_SWITCH = 1u << 7,		  /* the connection leaves the protocol after it (an
					   * HTTP 101): ops->then may take the rest */
};

/* detect() results. */
enum l7_detect {
	L7_DETECT_REQUEST = 1,	/* p begins a request */
	L7_DETECT_RESPONSE = 2, /* p begins a response */
};

struct http1_exchange;
struct http2_exchange;

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
	/*
	 * HTTP/1 and HTTP/2 (op and target ""): the exchange where the HTTP parser keeps it
	 * (method, uri, headers, trace context; http2: the stream's), not copied: valid until
	 * the connection's next feed, lost, close or free. NULL for the other protocols.
	 */
	const struct http1_exchange *http;
	const struct http2_exchange *http2;
};

/*
 * The counts every parser's stats begin with, in this order (struct l7_seg_counts), kept by
 * l7__seg_feed() and l7__seg_lost().
 */
#define L7_SEG_COUNTS                                                                             \
	struct {                                                                                  \
		uint64_t segments;                                                                \
		uint64_t bytes_seen;	     /* actual bytes of every segment, plus lost bytes */ \
		uint64_t bytes_unattributed; /* of those, in no exchange */                       \
		uint64_t gap_bytes;	     /* not captured */                                   \
		uint64_t lost_segments;                                                           \
		uint64_t lost_bytes;                                                              \
	}

struct l7_seg_counts {
	L7_SEG_COUNTS;
};

/* The head of a parser's stats: the counts by name, or as one struct l7_seg_counts. */
#define L7_STATS_HEAD                     \
	union {                           \
		struct l7_seg_counts seg; \
		L7_SEG_COUNTS;            \
	}

struct l7_stats {
	L7_STATS_HEAD;
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
	/* "http" (HTTP/1 and HTTP/2), "mysql", "cql", "mongodb", "kafka", "dns": meters, report */
	const char *name;
	/* Its connections hold more (HTTP/2: HPACK tables): a task keeps fewer of them. */
	bool heavy;
	/*
	 * Its messages begin at a segment's or a line's start and detect() finds them again in
	 * kept bytes (HTTP/1): what span attached events need.
	 */
	bool keepable;
	/*
	 * L7_DETECT_REQUEST or _RESPONSE when p[0..n) begins a message of the protocol, 0 when
	 * it does not, -EAGAIN when it is too short to tell. NULL: the kernel's word only.
	 */
	int (*detect)(const uint8_t *p, size_t n);
	void *(*new_conn)(unsigned flags); /* enum l7_new_flags */
	/* The protocol an L7_F_SWITCH exchange may hand the connection to, or NULL. */
	const struct l7_ops *then;
	/*
	 * For a `then`: whether the first segment after the switch, in dir, begins this protocol
	 * (prev: the connection of the protocol that switched), and a parser for the rest.
	 */
	bool (*starts)(const void *prev, enum l7_dir dir, const uint8_t *p, size_t n);
	void *(*new_after)(const void *prev);
	void (*free_conn)(void *c); /* accepts NULL */
	/* -EINVAL (captured > actual, data NULL with captured > 0, bad dir), -EPIPE after close. */
	int (*feed)(void *c, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data, size_t captured,
		    size_t actual);
	int (*lost)(void *c, enum l7_dir dir, uint64_t nbytes);
	/* Messages in progress are truncated; pending requests become NO_RESPONSE exchanges. */
	void (*close)(void *c, uint64_t ts_ns);
	/* 1 with the oldest completed exchange in *ret, 0 if none is ready. */
	int (*next)(void *c, struct l7_exchange *ret);
	enum l7_role (*role)(const void *c);
	void (*stats)(const void *c, struct l7_stats *ret);
	/*
	 * A protocol that counts more than struct l7_stats: its own counters (a struct of
	 * uint64_t, counts_size bytes: struct http1_stats, struct http2_stats); else NULL.
	 */
	void (*counts)(const void *c, void *ret);
	size_t counts_size;
	/* Its name for people, as the HTML report heads its endpoints: "HTTP/1.x", "MySQL". */
	const char *title;
};

extern const struct l7_ops l7_http1_ops;
extern const struct l7_ops l7_http2_ops;
extern const struct l7_ops l7_mysql_ops;
extern const struct l7_ops l7_cql_ops;
extern const struct l7_ops l7_mongo_ops;
extern const struct l7_ops l7_kafka_ops;
extern const struct l7_ops l7_dns_ops;

/*
 * What a parser keeps of the segments it is given, and how it reads them: read() the captured
 * bytes of a segment, skip() bytes it cannot see (a gap of a segment, of known
 * size; a loss, known when n is not 0), at ts.
 */
struct l7_seg {
	uint64_t events; /* feeds and losses so far: orders the two directions */
	uint64_t ts[2];	 /* each direction's latest segment: the time of a loss */
	uint64_t last;	 /* the latest segment of either */
	bool closed;
};

struct l7_seg_ops {
	void (*read)(void *c, int dir, uint64_t ts, const uint8_t *p, size_t n, size_t actual);
	void (*skip)(void *c, int dir, uint64_t n, bool known, uint64_t ts);
	bool loss_at_last; /* a loss is at the latest segment of either direction */
	bool read_empty;   /* read() gets segments that captured nothing too */
};

/*
 * A parser's feed() and lost() (c the parser's connection, s and n in it): the segment checked
 * and counted, then read and its gap skipped; a loss counted and skipped at its direction's
 * latest time (or the latest of either). 0, -EINVAL (captured > actual, no data, a bad dir)
 * or -EPIPE after close.
 */
int l7__seg_feed(void *c, struct l7_seg *s, struct l7_seg_counts *n, const struct l7_seg_ops *o,
		 enum l7_dir dir, uint64_t ts, const uint8_t *data, size_t captured, size_t actual);
int l7__seg_lost(void *c, struct l7_seg *s, struct l7_seg_counts *n, const struct l7_seg_ops *o,
		 enum l7_dir dir, uint64_t nbytes);

/*
 * The exchanges a parser holds in order, oldest first: at most max entries of size bytes (max a
 * power of two), allocated as needed by doubling from L7_RING_MIN.
 */
#define L7_RING_MIN 4u
struct l7_ring {
	void *v;
	unsigned cap, head, count;
};
void *l7_ring__at(const struct l7_ring *r, size_t size, unsigned i);
/* A zeroed entry after the others; NULL when max are held, or out of memory (counted). */
void *l7_ring__push(struct l7_ring *r, size_t size, unsigned max, uint64_t *alloc_failures);
/* The oldest entry goes. */
void l7_ring__drop(struct l7_ring *r);
/* The first entry whose uint64_t at off is v, or NULL (always for v 0: no entry's). */
void *l7_ring__find(const struct l7_ring *r, size_t size, size_t off, uint64_t v);
/*
 * The oldest entry leaves the ring when it is complete (the bool at done_off in it is set):
 * it, its bytes kept until the next push; else NULL.
 */
void *l7_ring__pop_done(struct l7_ring *r, size_t size, size_t done_off);

/*
 * pfx_feed() and pfx_lost() (scope: static or nothing) of a parser whose connections (type)
 * hold `sg` and `st`, over its struct l7_seg_ops seg_ops.
 */
#define L7_DEFINE_SEG(scope, pfx, type)                                                          \
	scope int pfx##_feed(void *p, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data,      \
			     size_t captured, size_t actual)                                     \
	{                                                                                        \
		type *c = p;                                                                     \
                                                                                                 \
		return c ? l7__seg_feed(c, &c->sg, &c->st.seg, &seg_ops, dir, ts_ns, data,       \
					captured, actual)                                        \
			 : -EINVAL;                                                              \
	}                                                                                        \
	scope int pfx##_lost(void *p, enum l7_dir dir, uint64_t nbytes)                          \
	{                                                                                        \
		type *c = p;                                                                     \
                                                                                                 \
		return c ? l7__seg_lost(c, &c->sg, &c->st.seg, &seg_ops, dir, nbytes) : -EINVAL; \
	}

/* The members of a struct l7_ops every parser has, by its functions' names pfx_new, pfx_free... */
#define L7_OPS_OF(pfx)                                                                          \
	.new_conn = pfx##_new, .free_conn = pfx##_free, .feed = pfx##_feed, .lost = pfx##_lost, \
	.close = pfx##_close, .next = pfx##_next, .role = pfx##_role, .stats = pfx##_stats

/* pfx_role() and pfx_stats() of a parser whose connections (type) hold `role` and `st`. */
#define L7_DEFINE_GETTERS(pfx, type)                                 \
	static enum l7_role pfx##_role(const void *p)                \
	{                                                            \
		const type *c = p;                                   \
                                                                     \
		return c ? c->role : L7_ROLE_UNKNOWN;                \
	}                                                            \
	static void pfx##_stats(const void *p, struct l7_stats *ret) \
	{                                                            \
		const type *c = p;                                   \
                                                                     \
		if (c && ret)                                        \
			*ret = c->st;                                \
	}

/* A zeroed connection of size bytes for a parser over TCP; NULL with errno set (EINVAL for
 * L7_F_DATAGRAM). */
void *l7__stream_new(size_t size, unsigned flags);

/* Appends what fits of p[0..n) to buf[*len..max), *len grown; returns the bytes taken. */
size_t l7__take(uint8_t *buf, size_t *len, size_t max, const uint8_t *p, size_t n);

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
