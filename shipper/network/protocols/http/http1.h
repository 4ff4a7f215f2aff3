/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: HTTP/1.x over one TCP connection, as one traced process saw it. The bytes
 * come from that process (a worker captured a bounded prefix of each read and write), so they
 * are hostile: nothing here trusts a length, a terminator or the order of what arrives.
 *
 * Input is two byte streams, egress (what the process wrote) and ingress (what it read), fed
 * as segments: the first `captured` bytes of a syscall that moved `actual` bytes. The rest of
 * the syscall is a gap, skipped without being read; a lost segment (the worker dropped it)
 * is a gap of known or unknown size with no bytes at all. Any split of the same bytes into
 * segments gives the same exchanges, as long as there are no gaps.
 *
 * Handled: request and status lines, header fields split anywhere, bodies by Content-Length,
 * chunked (sizes, extensions, trailers; Transfer-Encoding wins over Content-Length), none
 * (requests without either; responses to HEAD; 1xx, 204, 304), or until the connection
 * closes (responses without either). 1xx other than 101 are interim: their bytes count with
 * the final response; a request no final response answered by close is NO_RESPONSE, its
 * interim responses' bytes unattributed (as those of a final response that did not parse).
 * 101, and 2xx to CONNECT, end HTTP on the connection (a tunnel): both directions stop being
 * parsed. Pipelining: responses pair FIFO with requests.
 *
 * Pairing: a response pairs with the oldest request not yet answered, unless it began before
 * that request's header block was complete (then it answers something not seen and is a
 * NO_REQUEST exchange). A server that answers before reading a whole header block (431, 400)
 * therefore leaves that request to pair with the next response.
 *
 * Role: the first direction to carry a valid request line makes the process the client
 * (requests egress) or the server (requests ingress); a status line first decides the other
 * way. From then on a direction accepts only its kind of start line.
 *
 * Gaps and losses: inside a body of known length a gap of known size is counted and parsing
 * goes on (sizes stay exact). Anywhere else the message is flagged and the direction
 * resynchronizes: it skips to the next candidate message start (the start of a segment, or
 * the byte after a line feed) that parses as a start line, and every byte skipped until then
 * counts to the interrupted message. A response whose header block was cut therefore
 * completes when the next response starts, or at close.
 *
 * Limits, per connection: the state, one line buffer of HTTP1_LINE_MAX per direction (a longer
 * line keeps its prefix and flags the header block truncated; the message is still framed),
 * about 21 KiB in all, and up to HTTP1_MAX_PENDING exchanges of about 2 KiB each, waiting for a
 * response or to be popped (allocated as needed, by doubling from 4). A request beyond that is counted as dropped and its response is counted as
 * dropped when it comes, so pairing stays in order. Memory never depends on body sizes.
 * Header values kept (Host, Content-Type, sw8, b3, X-B3-*) are bounded copies. A direction
 * whose first HTTP1_MAX_BAD_STARTS candidate starts all fail, before any valid message, is
 * abandoned (not HTTP) without affecting the other.
 *
 * Counted in struct http1_stats: every byte seen ends up either in an exchange's req_bytes or
 * resp_bytes, or in bytes_unattributed (skipped garbage, gaps between messages, messages
 * whose exchange was dropped, interim responses of a request left unanswered, bytes after a
 * tunnel or in an abandoned direction); after http1__close() and popping everything, the two
 * add up to bytes_seen.
 *
 * Not thread-safe: one connection is fed by one thread. Pop with next() after each feed:
 * exchanges that wait to be popped count against HTTP1_MAX_PENDING.
 */
#ifndef ROVER_SHIPPER_HTTP1_H
#define ROVER_SHIPPER_HTTP1_H

#include <stddef.h>
#include <stdint.h>

#include "shipper/network/protocols/l7.h"

/* A header line (or start line) longer than this keeps its prefix. */
#define HTTP1_LINE_MAX 8192u
/* Exchanges waiting for a response or to be popped; must be a power of two. */
#define HTTP1_MAX_PENDING 64u
/* Failed candidate starts after which a direction that never carried HTTP is abandoned. */
#define HTTP1_MAX_BAD_STARTS 8u

/* Bounds of the copies in struct http1_exchange, NUL excluded. */
#define HTTP1_METHOD_MAX 7u
#define HTTP1_URI_MAX 256u
#define HTTP1_HOST_MAX 256u
#define HTTP1_CTYPE_MAX 128u
#define HTTP1_TRACE_MAX 512u
#define HTTP1_B3_ID_MAX 64u

enum http1_dir {
	HTTP1_EGRESS = 0,  /* written by the traced process */
	HTTP1_INGRESS = 1, /* read by the traced process */
};

enum http1_role {
	HTTP1_ROLE_UNKNOWN = 0,
	HTTP1_ROLE_CLIENT, /* requests are egress */
	HTTP1_ROLE_SERVER, /* requests are ingress */
};

/* http1__detect() results. */
enum {
	HTTP1_DETECT_REQUEST = 1,
	HTTP1_DETECT_RESPONSE = 2,
};

enum http1_flags {
	HTTP1_F_REQ_TRUNCATED = 1u << 0,      /* request bytes not captured, lost, or mis-framed */
	HTTP1_F_RESP_TRUNCATED = 1u << 1,     /* same for the response (or close before its end) */
	HTTP1_F_REQ_HDR_TRUNCATED = 1u << 2,  /* request header block incomplete: fields may miss */
	HTTP1_F_RESP_HDR_TRUNCATED = 1u << 3, /* same for the response */
	HTTP1_F_URI_TRUNCATED = 1u << 4,      /* the target is longer than uri[] holds */
	HTTP1_F_VALUE_TRUNCATED = 1u << 5,    /* a kept header value was cut to its bound */
	HTTP1_F_NO_REQUEST = 1u << 6,	      /* a response nothing was pending for */
	HTTP1_F_NO_RESPONSE = 1u << 7,	      /* still unanswered at http1__close() */
	HTTP1_F_TUNNEL = 1u << 8,	      /* 101, or 2xx to CONNECT: HTTP ends here */
};

/*
 * One request and its response. Strings are NUL-terminated, bytes below 0x20 (but tab) and
 * 0x7f replaced by '?'; an absent header is "".
 */
struct http1_exchange {
	uint64_t start_ns; /* segment of the request's first byte (response's, if NO_REQUEST) */
	/*
	 * Segment that completed the response; for a body until close or one whose framing
	 * was lost, the last segment that carried its bytes; http1__close()'s ts if NO_RESPONSE.
	 */
	uint64_t end_ns;
	uint64_t req_bytes;  /* start line to end of body, gaps included; 0 if NO_REQUEST */
	uint64_t resp_bytes; /* interim responses included; 0 if NO_RESPONSE */
	/* Of those, the start line and header block (the final response's); 0 if not seen. */
	uint64_t req_hdr_bytes, resp_hdr_bytes;
	uint32_t flags;	     /* enum http1_flags */
	uint16_t status;     /* 0 if NO_RESPONSE */
	uint8_t req_version; /* 10 or 11 for HTTP/1.0 or 1.1, 0 if unknown */
	uint8_t resp_version;
	uint8_t req_dir;   /* enum http1_dir the request went (came, if NO_REQUEST) */
	uint16_t uri_len;  /* strlen(uri) */
	uint16_t path_len; /* uri up to its '?' */
	char method[HTTP1_METHOD_MAX + 1];
	char uri[HTTP1_URI_MAX + 1]; /* the request target as sent */
	char host[HTTP1_HOST_MAX + 1];
	char req_content_type[HTTP1_CTYPE_MAX + 1];
	char resp_content_type[HTTP1_CTYPE_MAX + 1];
	char sw8[HTTP1_TRACE_MAX + 1];
	char b3[HTTP1_TRACE_MAX + 1];
	char x_b3_traceid[HTTP1_B3_ID_MAX + 1];
	char x_b3_spanid[HTTP1_B3_ID_MAX + 1];
};

/* bytes_unattributed: see above */
struct http1_stats {
	L7_STATS_HEAD;
	uint64_t requests;	    /* request header blocks */
	uint64_t responses;	    /* final responses */
	uint64_t interim;	    /* 1xx but 101 */
	uint64_t exchanges;	    /* completed, unanswered ones included */
	uint64_t unanswered;	    /* pending at close */
	uint64_t orphan_responses;  /* no request pending */
	uint64_t requests_dropped;  /* over HTTP1_MAX_PENDING (or out of memory) */
	uint64_t responses_dropped; /* to a dropped request, or orphans over the limit */
	uint64_t resyncs;	    /* framing lost, skipping to a next start */
	uint64_t bad_starts;	    /* candidate starts that were not a start line */
	uint64_t framing_errors;    /* bad Content-Length, chunk size, Transfer-Encoding */
	uint64_t bad_header_lines;  /* no colon */
	uint64_t long_lines;	    /* over HTTP1_LINE_MAX */
	uint64_t dirs_abandoned;    /* not HTTP */
	uint64_t tunnels;
	uint64_t alloc_failures;
};

/*
 * The parser is l7_http1_ops (shipper/network/protocols/l7.h): new_conn, feed, lost, close,
 * next and the rest as every protocol has them; its exchanges carry this struct
 * (l7_exchange.http), and a 101 that switched protocols is L7_F_SWITCH (HTTP/2 may follow:
 * l7_http2_ops.starts). counts() gives struct http1_stats.
 */

/*
 * 1 for a request line start, 2 for a status line start (HTTP1_DETECT_*, as L7_DETECT_*), 0
 * for neither, -EAGAIN if p[0..n) is too short to tell but could begin either. Looks at 16
 * bytes at most.
 */
int http1__detect(const uint8_t *p, size_t n);

/* Exchanges held by connection c: pending, or complete but not popped. At most HTTP1_MAX_PENDING. */
unsigned http1__pending(const void *c);

/* The exchange of the latest 101 connection c yielded, NULL if none. */
const struct http1_exchange *http1__switched(const void *c);

/* The interface's view of x, which stays where it is (ret->http is x). */
void http1__as_l7(const struct http1_exchange *x, struct l7_exchange *ret);

/* struct l7_stats' members from HTTP/1's or HTTP/2's stats s, as they name them. */
#define HTTP_AS_L7_STATS(s)                                                    \
	.seg = (s).seg, .requests = (s).requests, .responses = (s).responses,  \
	.exchanges = (s).exchanges, .unanswered = (s).unanswered,              \
	.orphan_responses = (s).orphan_responses, .resyncs = (s).resyncs,      \
	.malformed = (s).framing_errors, .dirs_abandoned = (s).dirs_abandoned, \
	.alloc_failures = (s).alloc_failures

#endif
