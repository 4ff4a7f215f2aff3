/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The protocol of a connection by the first bytes of one call: one test per protocol, and
 * net_detect() asking them in turn. Binary protocols are told by a header whose length field
 * agrees with the call's size where the protocol's peers write a message per call, and by
 * fields with few valid values. The shipper's parsers check everything again.
 */
#ifndef ROVER_BPF_NET_DETECT_H
#define ROVER_BPF_NET_DETECT_H

#include "common/netrec.h"

struct det_bytes {
	__u8 b[16];
};

/* net_detect()'s modes: what the bytes are known to be. */
enum {
	DET_STREAM = 0,	    /* the first call of a stream */
	DET_DATAGRAM = 1,   /* a UDP datagram, or a DNS message whose length came alone */
	DET_KAFKA_BODY = 2, /* the rest of a message whose 4-byte size came alone */
	DET_MIDSTREAM = 3,  /* a call of a stream met mid-way (or of TLS plaintext) */
};

static __always_inline __u32 be16(const __u8 *p)
{
	return (__u32)p[0] << 8 | p[1];
}

static __always_inline __u32 be24(const __u8 *p)
{
	return (__u32)p[0] << 16 | (__u32)p[1] << 8 | p[2];
}

static __always_inline __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static __always_inline __u32 le24(const __u8 *p)
{
	return p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16;
}

static __always_inline __u32 le32(const __u8 *p)
{
	return p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 | (__u32)p[3] << 24;
}

/* The start of an HTTP/1 response (n >= 5). */
static __always_inline bool http1_response(const __u8 *p)
{
	return p[0] == 'H' && p[1] == 'T' && p[2] == 'T' && p[3] == 'P' && p[4] == '/';
}

/* The method of an HTTP/1 request (n >= 5). */
static __always_inline bool http1_request(const __u8 *p)
{
	return (p[0] == 'G' && p[1] == 'E' && p[2] == 'T' && p[3] == ' ') ||
	       (p[0] == 'P' && p[1] == 'U' && p[2] == 'T' && p[3] == ' ') ||
	       (p[0] == 'P' && p[1] == 'O' && p[2] == 'S' && p[3] == 'T' && p[4] == ' ') ||
	       (p[0] == 'H' && p[1] == 'E' && p[2] == 'A' && p[3] == 'D' && p[4] == ' ') ||
	       (p[0] == 'D' && p[1] == 'E' && p[2] == 'L' && p[3] == 'E' && p[4] == 'T') ||
	       (p[0] == 'P' && p[1] == 'A' && p[2] == 'T' && p[3] == 'C' && p[4] == 'H') ||
	       (p[0] == 'O' && p[1] == 'P' && p[2] == 'T' && p[3] == 'I' && p[4] == 'O') ||
	       (p[0] == 'C' && p[1] == 'O' && p[2] == 'N' && p[3] == 'N' && p[4] == 'E') ||
	       (p[0] == 'T' && p[1] == 'R' && p[2] == 'A' && p[3] == 'C' && p[4] == 'E');
}

/*
 * Either side of the HTTP/2 connection preface (n >= 5): the client's
 * "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", or the server's, which it may write before it reads the
 * client's: a SETTINGS frame (type 4, no ACK, stream 0) of whole 6-byte settings.
 */
static __always_inline bool http2_preface(const __u8 *p, __u32 n, __u64 actual)
{
	__u32 len;

	if (p[0] == 'P' && p[1] == 'R' && p[2] == 'I' && p[3] == ' ' && p[4] == '*')
		return true;
	len = be24(p);
	return n >= 9 && p[3] == 4 && p[4] == 0 && !p[5] && !p[6] && !p[7] && !p[8] &&
	       len % 6 == 0 && len <= 120 && (!actual || len + 9 <= actual);
}

/*
 * HTTP/2 met mid-way: a whole frame, or several, beginning this call: a length that fits, a
 * type whose flags and stream id are all valid (HEADERS or DATA on a stream, SETTINGS, PING or
 * WINDOW_UPDATE of their fixed shapes). The other protocols' headers do not begin like this.
 */
static __always_inline bool http2_frames(const __u8 *p, __u32 n, __u64 actual)
{
	__u32 flen, sid;
	__u8 type, fl;

	if (n < 9 || !actual)
		return false;
	flen = be24(p);
	type = p[3];
	fl = p[4];
	sid = be32(p + 5);
	return flen + 9 <= actual && flen <= 16384 && !(sid >> 31) &&
	       ((type == 1 && sid && !(fl & ~0x2du)) || (type == 0 && sid && !(fl & ~0x09u)) ||
		(type == 4 && !sid && !(fl & ~1u) && flen % 6 == 0 && (!(fl & 1) || !flen)) ||
		(type == 6 && !sid && !(fl & ~1u) && flen == 8) || (type == 8 && flen == 4));
}

/* MySQL: a 3-byte length and sequence 0, the whole packet in this call (n >= 5). */
static __always_inline bool mysql_packet(const __u8 *p, __u32 n, __u64 actual)
{
	__u32 len = le24(p), v = p[4];

	if (p[3] != 0 || !actual || len + 4 != actual || len < 1)
		return false;
	/* the server's greeting: protocol 10, a version that starts with a digit */
	if (v == 0x0a && n >= 6 && p[5] >= '0' && p[5] <= '9')
		return true;
	/* COM_QUIT, INIT_DB, QUERY, PING, STMT_PREPARE, STMT_EXECUTE, STMT_CLOSE, STMT_RESET */
	return v == 0x01 || v == 0x02 || v == 0x03 || v == 0x0e || v == 0x16 || v == 0x17 ||
	       v == 0x19 || v == 0x1a;
}

/* A DNS header (12 bytes) with one question, a standard query: answers only in a response. */
static __always_inline bool dns_header(const __u8 *h)
{
	return (h[2] & 0x78) == 0 && h[4] == 0 && h[5] == 1 &&
	       ((h[2] & 0x80) || (h[6] == 0 && h[7] == 0));
}

/* A DNS message over UDP. */
static __always_inline bool dns_datagram(const __u8 *p, __u32 n, __u64 actual)
{
	return n >= 12 && actual >= 17 && dns_header(p);
}

/* DNS over TCP: a 2-byte length, then the message. */
static __always_inline bool dns_stream(const __u8 *p, __u32 n, __u64 actual)
{
	__u32 len;

	if (n < 14)
		return false;
	len = be16(p);
	return actual && len + 2 == actual && len >= 17 && dns_header(p + 2);
}

/* CQL: version 3-5 (0x80: a response), flags, stream, opcode, length (n >= 9). */
static __always_inline bool cql_frame(const __u8 *p, __u64 actual)
{
	__u32 v = p[0] & 0x7f, len = be32(p + 5);

	return (v == 3 || v == 4 || v == 5) && p[1] <= 0x1f && p[4] <= 0x10 && len < (1u << 28) &&
	       (!actual || len + 9 <= actual);
}

/* MongoDB: messageLength, requestID, responseTo, opCode (2013, 2004, 2012), LE (n >= 16). */
static __always_inline bool mongo_msg(const __u8 *p)
{
	__u32 len = le32(p), v = le32(p + 12);

	return (v == 2013 || v == 2004 || v == 2012) && len >= 16 && len <= (48u << 20);
}

/*
 * A Kafka request's header after its size (10 bytes): api_key (0-127), api_version (0-31),
 * correlation id, client id length (-1 or short), big-endian. The bounds are the shipper's
 * parser's (shipper/network/protocols/kafka.c).
 */
static __always_inline bool kafka_header(const __u8 *h)
{
	return h[0] == 0 && h[1] <= 127 && h[2] == 0 && h[3] <= 31 &&
	       ((h[8] == 0xff && h[9] == 0xff) || h[8] == 0);
}

/* Kafka: size and header, the whole request in this call (clients write one per call). */
static __always_inline bool kafka_request(const __u8 *p, __u64 actual)
{
	__u32 len = be32(p);

	return actual && len + 4 == actual && len >= 10 && kafka_header(p + 4);
}

/*
 * The protocol of n captured bytes of a call that moved actual (0: not known, the bytes were
 * gathered from several calls). Unrecognized bytes: NONE; too few to tell: UNKNOWN; the caller
 * decides whether that is final.
 *
 * A global function: verified once on its own, its result unknown to the callers. Inlined, its
 * branches multiplied with theirs past the verifier's bound (1M instructions).
 */
__noinline int net_detect(const struct det_bytes *d, __u32 n, __u64 actual, __u32 mode)
{
	const __u8 *p;

	if (!d)
		return NET_PROTO_UNKNOWN;
	p = d->b;
	if (mode == DET_KAFKA_BODY)
		return n >= 10 && kafka_header(p) ? NET_PROTO_KAFKA : NET_PROTO_NONE;
	if (mode == DET_MIDSTREAM && http2_frames(p, n, actual))
		return NET_PROTO_HTTP2;
	if (mode == DET_DATAGRAM)
		return dns_datagram(p, n, actual) ? NET_PROTO_DNS : NET_PROTO_NONE;
	if (n < 5)
		return NET_PROTO_UNKNOWN;
	if (http1_response(p) || http1_request(p))
		return NET_PROTO_HTTP1;
	if (http2_preface(p, n, actual))
		return NET_PROTO_HTTP2;
	if (mysql_packet(p, n, actual))
		return NET_PROTO_MYSQL;
	if (dns_stream(p, n, actual))
		return NET_PROTO_DNS;
	if (n < 9)
		return NET_PROTO_UNKNOWN;
	if (cql_frame(p, actual))
		return NET_PROTO_CQL;
	if (n < 16)
		return NET_PROTO_UNKNOWN;
	if (mongo_msg(p))
		return NET_PROTO_MONGO;
	if (kafka_request(p, actual))
		return NET_PROTO_KAFKA;
	return NET_PROTO_NONE;
}

#endif
