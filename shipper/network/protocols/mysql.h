/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the MySQL/MariaDB client/server protocol of one TCP connection, behind
 * `l7_mysql_ops` (shipper/network/protocols/l7.h keeps the contract; this header only adds what is particular
 * to MySQL).
 *
 * Framing: packets of a 3-byte little-endian length and a sequence id; a packet of 0xffffff
 * bytes continues in the next one (one logical packet, sizes summed). Each direction keeps a
 * prefix of MYSQL_PKT_KEEP payload bytes of the packet in progress; nothing is allocated by
 * a length from the wire.
 *
 * Phases: a server greeting (protocol 10) makes its direction the server's; the client's
 * HandshakeResponse, auth switch and auth "more data" packets up to the server's OK or ERR
 * are the handshake: not requests, their bytes count to bytes_unattributed. The client's
 * capabilities give CLIENT_DEPRECATE_EOF (else it is learnt from the first result set: an
 * EOF of 5 bytes after the column definitions) and CLIENT_QUERY_ATTRIBUTES. An SSLRequest
 * (a 32-byte HandshakeResponse with CLIENT_SSL) turns the rest of the stream into TLS
 * ciphertext, and a negotiated CLIENT_COMPRESS or zstd compression wraps every packet after
 * the handshake: either way both directions stop being parsed (counted in struct
 * mysql_stats; the bytes count to bytes_unattributed). The plaintext of TLS comes from the TLS
 * probes, to another parser instance that starts mid-conversation.
 *
 * Commands are client packets with sequence id 0; one exchange each, paired FIFO with the
 * server's responses. op is the command's name ("COM_QUERY", "COM_STMT_EXECUTE",
 * "COM_UNKNOWN" for a byte with none); target is the statement's prefix (COM_QUERY,
 * COM_STMT_PREPARE; the statement of the id for COM_STMT_EXECUTE, _FETCH, _RESET,
 * _SEND_LONG_DATA, _CLOSE and MariaDB's COM_STMT_BULK_EXECUTE if it was prepared on this
 * connection, from a map of MYSQL_MAX_STMTS ids, least recently used out; else ""), the
 * schema (COM_INIT_DB, COM_CREATE_DB, COM_DROP_DB) or the table (COM_FIELD_LIST).
 * COM_QUIT, COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA have no response
 * (L7_F_NO_REPLY_EXPECTED). Client packets with another sequence id (LOCAL INFILE data,
 * COM_CHANGE_USER's auth data) count to the request they follow.
 *
 * Responses: OK (code 0), ERR (code = its error number, error = 1), EOF, result sets (column
 * count, definitions unless MariaDB's metadata cache or MySQL's optional metadata left them
 * out, EOF unless CLIENT_DEPRECATE_EOF, text or binary rows, and an EOF or OK with a 0xfe
 * header), STMT_PREPARE_OK with its parameter and column definitions, LOCAL INFILE (0xfb:
 * the client's data follows, then the server's OK or ERR), COM_STATISTICS' text, and the
 * auth exchange of COM_CHANGE_USER. SERVER_MORE_RESULTS_EXISTS continues the same exchange
 * (a CALL's results); MariaDB's progress reports (ERR 0xffff) do not end one.
 *
 * Starting without a greeting (the task began on an open connection; the plaintext of TLS):
 * each direction frames from its first byte, and its first packet must look like a greeting,
 * a HandshakeResponse (sequence 1 or 2, CLIENT_PROTOCOL_41, zero filler), a command (sequence
 * 0, a known command byte with a plausible length and, for statements, text) or, once a
 * command is pending, its response (sequence 1, a first byte a response may begin with).
 * A direction whose first packet does not, or that lost its framing (a gap or loss outside a
 * packet of known length), resynchronizes on a later segment that begins with such a packet
 * and, for a command, whose length is the segment's (a response may be followed by more in
 * its segment). A command while a response is still in progress ends that response as
 * truncated: the protocol is one command at a time. Bytes skipped count to the message that
 * was interrupted, or to bytes_unattributed. While neither direction ever carried a valid
 * packet, MYSQL_MAX_BAD_STARTS failed starts abandon both directions (not MySQL).
 *
 * Limits, per connection: about 1.2 KiB of state (a packet prefix per direction), up to
 * L7_MAX_PENDING exchanges of 368 bytes (allocated as needed, by doubling from 4) and, once a
 * statement is prepared, MYSQL_MAX_STMTS texts of 272 bytes: 29 KiB at most.
 *
 * Not handled: compressed packets, query attributes with parameters (target ""), the
 * X Protocol, replication event contents, pipelined responses out of order (there are none).
 */
#ifndef ROVER_SHIPPER_MYSQL_H
#define ROVER_SHIPPER_MYSQL_H

#include <stdint.h>

#include "shipper/network/protocols/l7.h"

/* Payload bytes kept of a packet: a command byte, query attributes' counts, the target. */
#define MYSQL_PKT_KEEP (1u + 18u + L7_TARGET_MAX)
/* Prepared statements whose text is remembered per connection. */
#define MYSQL_MAX_STMTS 16u
/* Failed packet starts after which a connection never seen to carry MySQL is abandoned. */
#define MYSQL_MAX_BAD_STARTS 256u

struct mysql_stats {
	uint64_t tls_upgrades;	   /* SSLRequests: nothing parsed after them */
	uint64_t compressed;	   /* compression negotiated: nothing parsed after the handshake */
	uint64_t local_infile;	   /* LOCAL INFILE requests from the server */
	uint64_t progress_reports; /* MariaDB progress packets */
	uint64_t midstream_syncs;  /* directions synchronized without a greeting */
	uint64_t bad_starts;	   /* candidate first packets that did not look like MySQL */
	uint64_t stmts_unknown;	   /* statement ids not in the map */
	uint64_t stmts_evicted;	   /* statements pushed out of the map by newer ones */
	int8_t deprecate_eof;	   /* CLIENT_DEPRECATE_EOF: 1, 0, or -1 not known (yet) */
};

/* c from l7_mysql_ops.new_conn(). 0, or -EINVAL. */
int mysql__stats(const void *c, struct mysql_stats *ret);

#endif
