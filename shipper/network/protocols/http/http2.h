/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: HTTP/2 (h2c, or h2 as TLS probes hand it over in plaintext) and gRPC over one
 * TCP connection, as one traced process saw it. The segment contract is shipper/network/protocols/http/http1.h's:
 * two byte streams, egress (written by the process) and ingress (read by it), fed as segments
 * of `captured` bytes out of `actual` moved, the rest a gap; lost segments; close; pop. Every
 * byte is hostile: no length, count or index from the wire is trusted or allocated by.
 *
 * Framing: the client preface, then 9-byte frame headers and payloads. DATA, HEADERS
 * (padding, priority), CONTINUATION, PUSH_PROMISE, RST_STREAM, SETTINGS, PING, GOAWAY,
 * WINDOW_UPDATE and PRIORITY are read; other types are skipped by their length. A frame longer
 * than the receiver allows (16 KiB, or what its SETTINGS_MAX_FRAME_SIZE raised it to; any
 * 24-bit length on a connection seen mid-stream) or of impossible shape (SETTINGS on a
 * stream, RST_STREAM of 3 bytes) is a framing error: the direction resynchronizes.
 *
 * Gaps: a gap of known size inside a frame payload is skipped and counted (the frame's
 * stream is flagged truncated; inside a header block, that block is undecodable). A gap
 * beyond the frame, of unknown size or between frames loses the framing: the direction
 * waits for a later segment that begins with a plausible frame header (known type, defined
 * flags, a length and stream id the type allows, and the next header plausible too when the
 * segment holds it); the bytes in between count as unattributed, every open stream's side of
 * that direction is flagged truncated.
 *
 * HPACK: one decoder per direction (hpack.h: it accepts and refuses what libnghttp2's
 * inflater does, and is tested against it), header blocks streamed through it as they come
 * (split across frames and segments, never buffered whole). Of each field it keeps only what
 * the parser reads: the pseudo-headers, host, content-type, grpc-status and the trace
 * headers, up to the bytes the exchange keeps of each; every other string is decoded only to
 * count its length (a dynamic table entry's size) and to refuse a malformed one, never
 * stored; a dynamic table entry of a name nobody reads is its two lengths. A size update
 * after a field, or a string longer than 65536 bytes, fails the block. A direction's dynamic table
 * is known only while every header block it carried since its first byte was decoded: its
 * first bytes were the preface (the client), or its first frame was a SETTINGS frame of a
 * connection whose preface was seen (the server), or the connection was switched to
 * HTTP/2 by an h2c upgrade. A direction seen mid-stream, a header block cut by a gap or a
 * framing loss, or one the decoder refused, makes that direction's table unknown for good
 * (no guessing: indices would point at entries never seen). From then on each header block
 * is still walked, and only its fields that need no dynamic table entry (static table
 * references, literals) are decoded; the others are counted (fields_unknown) and the block
 * counts as undecodable. An exchange with such a block has HTTP2_F2_REQ_HPACK_UNKNOWN (or
 * RESP_), HTTP1_F_REQ_HDR_TRUNCATED (or RESP_), and: method "" if :method was not decoded,
 * uri "*" if :path was not, status 0 if no :status was. SETTINGS_HEADER_TABLE_SIZE does
 * not resize the decoders: each allows table size updates up to HTTP2_HPACK_TABLE_MAX
 * from the start, and the encoder announces the size it uses in the header blocks (RFC 7541
 * 4.2, 6.3); applying the setting when seen would race with the peer, which applies it when
 * it receives it. A larger update fails the block. The decoders' tables grow from a budget
 * of HTTP2_HPACK_MEM_MAX per connection; running out fails the block (alloc_failures).
 *
 * Streams: a request is the client's HEADERS (+CONTINUATION) (+DATA) up to END_STREAM; its
 * response the server's HEADERS (1xx interim ones too), DATA and trailers. An exchange
 * completes when both sides ended the stream, at an RST_STREAM, when a GOAWAY refuses it
 * (stream above the last one the GOAWAY's sender processed), or at close; also when the
 * response ends on a stream whose request was never seen (it was sent before the capture
 * began: a NO_REQUEST exchange). Exchanges pop in completion order. At most
 * HTTP2_MAX_STREAMS streams are open; a new stream over that first evicts the lowest open
 * stream whose bytes may have been lost (framing lost while it was open, or opened before the
 * capture) and completes it truncated, else it is dropped (streams_dropped): its frames count
 * as unattributed. Completed exchanges wait to be popped in at most as many more slots
 * (HTTP2_MAX_HELD in all, about 2.4 KiB each, allocated as needed); a stream that finds them
 * all taken is dropped too. Frames on a stream already completed,
 * dropped or, on a connection seen from its start, never opened are unattributed
 * (stray_frames). PUSH_PROMISE opens the promised stream as an exchange (HTTP2_F2_PUSHED)
 * with the promised request's fields and no request bytes: the frame itself counts to the
 * stream it was sent on.
 *
 * Bytes: an exchange's req_bytes and resp_bytes are the frames of its stream, 9-byte frame
 * headers included, of types HEADERS, CONTINUATION, DATA and PUSH_PROMISE, gaps included;
 * everything else (the preface, connection and flow-control frames, RST_STREAM, unknown
 * types, garbage, stray frames) counts in bytes_unattributed (the preface and control
 * frames also in bytes_control). After close() and popping everything, exchanges'
 * bytes plus bytes_unattributed equal bytes_seen.
 *
 * Role: the preface's direction is the client's. Without it, the first decoded request
 * pseudo-header (:method, :path, :scheme, :authority) or :status tells, or a PUSH_PROMISE
 * (only servers send them). Until then header fields are taken by name from both directions;
 * an exchange that completes before the role is known has HTTP2_F2_ROLE_UNKNOWN, and req_dir
 * is the direction of the first frame seen on its stream.
 *
 * h2c upgrade: the HTTP/1.1 parser ends at a 101 (HTTP1_F_TUNNEL); l7_http2_ops.new_after()
 * then takes the rest of the connection: its stream 1 is that request's response (RFC 9113
 * 3.2 / RFC 7540 3.2), an exchange with the HTTP/1 request's fields (req_bytes 0: those
 * bytes are the HTTP/1 parser's), HTTP2_F2_UPGRADED. Both directions begin at the start of
 * HTTP/2: the client's preface, the server's SETTINGS.
 *
 * Not thread-safe: one connection is fed by one thread. Pop with next() after each
 * feed: exchanges that wait to be popped count against HTTP2_MAX_HELD.
 */
#ifndef ROVER_SHIPPER_HTTP2_H
#define ROVER_SHIPPER_HTTP2_H

#include <stddef.h>
#include <stdint.h>

#include "shipper/network/protocols/http/http1.h"

/* Open streams per connection. */
#define HTTP2_MAX_STREAMS 128u
/* Streams held: open, or completed and waiting to be popped. */
#define HTTP2_MAX_HELD (2u * HTTP2_MAX_STREAMS)
/* Largest dynamic table (RFC 7541 size units) a header block may ask for. */
#define HTTP2_HPACK_TABLE_MAX 65536u
/* Memory the two HPACK decoders' tables of a connection may hold together. */
#define HTTP2_HPACK_MEM_MAX (512u * 1024u)
/* Segments in a row that fail to resynchronize a direction that never carried a frame. */
#define HTTP2_MAX_BAD_STARTS 8u
/* RFC 9113 3.4. */
#define HTTP2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define HTTP2_PREFACE_LEN 24u

enum http2_flags2 {
	HTTP2_F2_GRPC = 1u << 0,	      /* a content-type application/grpc* */
	HTTP2_F2_RESET_BY_CLIENT = 1u << 1,   /* ended by RST_STREAM in the request direction */
	HTTP2_F2_RESET_BY_SERVER = 1u << 2,   /* ended by RST_STREAM in the response direction */
	HTTP2_F2_REFUSED = 1u << 3,	      /* above a GOAWAY's last stream id */
	HTTP2_F2_PUSHED = 1u << 4,	      /* a server push: the request is a PUSH_PROMISE */
	HTTP2_F2_UPGRADED = 1u << 5,	      /* stream 1 after an h2c upgrade */
	HTTP2_F2_REQ_HPACK_UNKNOWN = 1u << 6, /* request fields not decoded (table unknown) */
	HTTP2_F2_RESP_HPACK_UNKNOWN = 1u << 7,
	HTTP2_F2_INTERIM = 1u << 8,	  /* 1xx response(s) before the final one */
	HTTP2_F2_TRAILERS = 1u << 9,	  /* a response header block after the final one */
	HTTP2_F2_ROLE_UNKNOWN = 1u << 10, /* req_dir is the stream's first frame's */
	HTTP2_F2_EVICTED = 1u << 11,	  /* completed early to make room (see above) */
};

/*
 * One stream. `h` as the HTTP/1 parser fills it: method = :method, uri = :path, host =
 * :authority (else Host), status = the final :status, content types of each side, sw8, b3,
 * X-B3-*; req_version = resp_version = 20. HTTP1_F_NO_REQUEST: no request frame was seen on
 * the stream (sent before the capture began); HTTP1_F_NO_RESPONSE: no response frame.
 */
struct http2_exchange {
	struct http1_exchange h;
	int32_t grpc_status; /* grpc-status of the response (trailers win), -1 absent */
	uint32_t stream_id;
	uint32_t flags2; /* enum http2_flags2 */
};

/* bytes_unattributed: see above */
struct http2_stats {
	L7_STATS_HEAD;
	uint64_t bytes_control; /* of bytes_unattributed, the preface and frames of no exchange */
	uint64_t frames;	/* frame headers read */
	uint64_t streams;	/* exchanges opened (streams and pushes) */
	uint64_t requests;	/* exchanges whose request was seen (at completion) */
	uint64_t responses;	/* exchanges with a final response header block (same) */
	uint64_t interim;	/* 1xx header blocks */
	uint64_t exchanges;	/* completed, unanswered ones included */
	uint64_t unanswered;	/* NO_RESPONSE exchanges */
	uint64_t orphan_responses;    /* NO_REQUEST exchanges */
	uint64_t header_blocks;	      /* HEADERS or PUSH_PROMISE blocks, CONTINUATIONs included */
	uint64_t headers_undecodable; /* blocks not wholly decoded (cut, refused, table unknown) */
	uint64_t hpack_missed_before_start; /* of those, in a direction seen mid-stream */
	uint64_t fields_unknown;	    /* header fields skipped: they need the unknown table */
	uint64_t rst_streams;
	uint64_t goaway;
	uint64_t pushes;
	uint64_t settings;	  /* SETTINGS frames but ACKs */
	uint64_t streams_dropped; /* over HTTP2_MAX_STREAMS (or out of memory) */
	uint64_t streams_evicted; /* completed early to make room */
	uint64_t stray_frames;	  /* on a stream completed, dropped or never opened */
	uint64_t unknown_frames;  /* types this parser does not read, skipped */
	uint64_t framing_errors;  /* impossible frames, protocol errors */
	uint64_t resyncs;	  /* framing lost, looking for a next frame header */
	uint64_t bad_starts;	  /* segments that did not begin with a plausible frame */
	uint64_t dirs_abandoned;  /* never carried HTTP/2 */
	uint64_t alloc_failures;
};

/*
 * The parser is l7_http2_ops (shipper/network/protocols/l7.h), as every protocol's; its
 * exchanges carry this struct (l7_exchange.http2, and .http its `h`); new_after() takes a
 * connection from l7_http1_ops after a 101 (see above). counts() gives struct http2_stats.
 */

/*
 * 1 if p[0..n) begins with the client preface, -EAGAIN if it is a proper prefix of it (or
 * empty), 0 otherwise.
 */
int http2__detect(const uint8_t *p, size_t n);

/* Streams held by connection c: open, or complete but not popped. At most HTTP2_MAX_HELD. */
unsigned http2__pending(const void *c);

#endif
