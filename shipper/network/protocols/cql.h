/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the Cassandra CQL native protocol of one TCP connection, behind
 * `l7_cql_ops` (shipper/network/protocols/l7.h keeps the contract; this header only adds what is particular
 * to CQL).
 *
 * Framing: frames of a 9-byte header (version with the response bit 0x80, flags, a signed
 * 16-bit stream id, opcode, a 32-bit body length) and a body, protocol v3 and v4 (and DSE's
 * 0x41 and 0x42, framed the same way). Every header is checked (version, flags, an opcode of
 * its direction, a stream id of its kind, a length of at most CQL_MAX_FRAME): one that fails
 * loses the framing. A prefix of CQL_BODY_KEEP body bytes is kept of each frame; nothing is
 * allocated by a length from the wire.
 *
 * Protocol v5 is not claimed: its STARTUP, OPTIONS and their answers come in the same frames
 * and are parsed (counted in v5_frames), but once a v5 STARTUP is answered READY or
 * AUTHENTICATE the connection changes to v5's framing (segments with CRCs): both directions
 * stop being parsed (v5_switches; the bytes count to bytes_unattributed).
 *
 * Requests: STARTUP, OPTIONS, QUERY (target: the query string's prefix), PREPARE (same),
 * EXECUTE (the query of the prepared id if it was prepared on this connection, from a map of
 * CQL_MAX_PREPARED ids, least recently used out; else ""), BATCH (its first statement, text
 * or prepared id, the same way), REGISTER, AUTH_RESPONSE; op is the opcode's name. Requests
 * may carry a custom payload (skipped) before their body.
 * Responses pair with the pending request of their stream id, in whatever order they come;
 * a request on a stream id still pending means the older request's answer was not seen (it
 * becomes NO_RESPONSE, counted in streams_reused). A response that began before its request
 * was complete, or whose stream has nothing pending, is a NO_REQUEST exchange. RESULT (Void,
 * Rows, Set_keyspace, Prepared, Schema_change; the Prepared id is remembered), READY,
 * SUPPORTED, AUTHENTICATE, AUTH_CHALLENGE, AUTH_SUCCESS give code 0; ERROR gives its error
 * code (0x2200 Invalid, ...) with error = 1. A tracing id, warnings and a custom payload
 * before a response's body are skipped. EVENT (stream -1) is a server push: counted in
 * events, no exchange, its bytes unattributed. A compressed body (flag 0x01, LZ4 or Snappy as
 * STARTUP chose) is not parsed: counted in compressed, the sizes are still exact, an ERROR's
 * code is then 0.
 * Exchanges are popped oldest request first among those complete, so one slow request does
 * not hold the others back.
 *
 * Gaps and losses: a gap of known size inside a frame is skipped (sizes stay exact); past its
 * end, or a loss of unknown size, framing is lost: the frame in progress ends there (its
 * exchange flagged truncated) and the direction resynchronizes on a later segment that
 * begins with a valid header whose frame fits in the segment (for a response, on a pending
 * stream or an EVENT); the bytes in between count to bytes_unattributed. While neither
 * direction ever carried a valid frame, CQL_MAX_BAD_STARTS failed starts abandon both.
 *
 * Limits, per connection: about 1.2 KiB of state (a body prefix per direction), up to
 * L7_MAX_PENDING exchanges of 360 bytes (allocated as needed, by doubling from 4), the stream
 * ids of as many dropped requests, and, once an id is prepared, CQL_MAX_PREPARED texts of 304
 * bytes: 29 KiB at most. A request over L7_MAX_PENDING is dropped (counted), and so is its
 * response when it comes.
 */
#ifndef ROVER_SHIPPER_CQL_H
#define ROVER_SHIPPER_CQL_H

#include <stdint.h>

#include "shipper/network/protocols/l7.h"

/* Body bytes kept of a frame: a custom payload's start, a BATCH's header, the query's prefix. */
#define CQL_BODY_KEEP (64u + 8u + L7_TARGET_MAX)
/* Prepared ids whose query text is remembered per connection. */
#define CQL_MAX_PREPARED 16u
/* Bytes of a prepared id compared (Cassandra's are 16-byte MD5 digests). */
#define CQL_ID_MAX 32u
/* Cassandra's native_transport_max_frame_size is 16 MiB by default, 256 MiB at most. */
#define CQL_MAX_FRAME (256u << 20)
/* Failed frame starts after which a connection never seen to carry CQL is abandoned. */
#define CQL_MAX_BAD_STARTS 256u

struct cql_stats {
	uint64_t events;	   /* EVENT frames pushed by the server */
	uint64_t compressed;	   /* frames whose body was compressed, not parsed */
	uint64_t v5_frames;	   /* frames of protocol v5 */
	uint64_t v5_switches;	   /* v5 connections past STARTUP: nothing parsed after */
	uint64_t bad_starts;	   /* candidate frame starts that were not a valid header */
	uint64_t streams_reused;   /* requests on a stream id still pending */
	uint64_t prepared_unknown; /* EXECUTE or BATCH of an id not in the map */
	uint64_t prepared_evicted; /* ids pushed out of the map by newer ones */
};

/* c from l7_cql_ops.new_conn(). 0, or -EINVAL. */
int cql__stats(const void *c, struct cql_stats *ret);

#endif
