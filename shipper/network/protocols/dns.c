// SPDX-License-Identifier: Apache-2.0
/*
 * Shipper side: DNS (RFC 1035) of one socket, behind the l7 interface (shipper/network/protocols/l7.h, whose
 * contract this keeps).
 *
 * Framing. Over UDP (new_conn(L7_F_DATAGRAM)) each segment is one message; one with captured
 * < actual is a message cut by the capture: its header and question are read if captured.
 * Over TCP and DNS over TLS (RFC 7766, RFC 7858: the same bytes once decrypted) each message
 * has a 2-byte big-endian length before it; messages may share a segment or be split across
 * segments anywhere, the length prefix included (resolvers often write it alone).
 *
 * What is read: the header (id, QR, opcode, RCODE, the four counts) and the first question
 * (QNAME, QTYPE; QCLASS is skipped). Names follow compression pointers, but only backwards:
 * each pointer must land before the start of the labels it was found in, so a chain ends in
 * at most as many jumps as there are bytes before the name; and a name is at most 255 bytes
 * of wire form (RFC 1035 2.3.4), hence at most 127 labels (128 is checked too). A label of the
 * 0x40 or 0x80 types (extended and reserved; RFC 6891 retired the only extended one) makes
 * the question malformed. Answer, authority
 * and additional records are not parsed: the EDNS extended RCODE (in the OPT record) is not
 * added to `code`, and ANCOUNT is read but nothing in l7_exchange carries it.
 *
 * Exchange: op is the query type's name ("A", "AAAA", "HTTPS", "TYPE99"), target the query
 * name without its trailing dot ("." for the root), as sent (case kept), both "" when the
 * question was not captured or did not parse; code is the header's RCODE (0 NOERROR, 2
 * SERVFAIL, 3 NXDOMAIN, 5 REFUSED) and error says it is not 0. req_bytes and resp_bytes are
 * the messages' sizes on the wire, TCP length prefixes included.
 *
 * Pairing. A message with QR=0 is a query, QR=1 a response. A response pairs with the oldest
 * query still unanswered, sent the other way, with the same id and, when both questions were
 * read, the same QTYPE and QNAME (compared without case: resolvers randomize it, the "0x20"
 * draft), since a resolver keeps many queries in flight on one socket and UDP answers come in
 * any order, or never. A query unanswered at close is NO_RESPONSE; so is one still unanswered
 * when a segment comes more than DNS_EXPIRE_NS after it was sent (a UDP socket lives as long
 * as its process), its end_ns that segment's time; an answer after that is NO_REQUEST. Pieces
 * of one segment (same time) expire nothing the first piece did not, so splits agree. A
 * retransmitted query (same id and question) is a second exchange: the answer pairs with the
 * first one, so its duration is what the caller waited, and the retry ends NO_RESPONSE. Zone
 * transfers (AXFR, IXFR) over TCP answer with several messages of the same id: they are one
 * exchange, complete when a response message with another id comes the same way, at close,
 * or DNS_EXPIRE_NS after its last message. Exchanges pop in query order among the completed
 * ones: an unanswered query does not hold back the answered ones behind it.
 *
 * Role: the first message read decides it (a query written: client; read: server). Queries
 * are still accepted both ways afterwards: multicast DNS sockets send and answer queries.
 *
 * Robustness. Until a direction has carried a valid message, and after it lost its framing,
 * a message start is only taken where it is likely (the start of the stream, the start of a
 * segment after the framing was lost) and only if its header is plausible (see plausible());
 * after DNS_MAX_BAD_STARTS failed starts before any valid message the direction is abandoned.
 * Once in step, lengths are followed without judging the content: a message too short for a
 * header, or whose question breaks a rule, counts in `malformed` and framing goes on. A gap
 * of known size inside a message is skipped (the kept prefix stops there, sizes stay exact);
 * a gap between messages, over a message's end or of unknown size loses the framing (the
 * message in progress ends truncated, the bytes up to the next likely start are
 * unattributed). Datagrams are all checked with plausible() and count in `malformed` when
 * they fail.
 *
 * Memory per connection: about 1.7 KiB of state (mostly the first DNS_KEEP bytes of the TCP
 * message in progress, per direction) and up to L7_MAX_PENDING exchanges of 368 bytes,
 * allocated by doubling from 4 (24 KiB at most). The keys of the last DROPPED_KEYS queries
 * dropped over that limit are kept so that their answers count as dropped too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7.h"

#define DNS_HDR 12u
/* Wire form of a name, length octets and the root's zero included (RFC 1035 2.3.4). */
#define DNS_NAME_MAX 255u
#define DNS_LABELS_MAX 128u
/* Of a TCP message, what the header and a question need: 12 + 255 + 4, rounded up. */
#define DNS_KEEP 512u
#define DNS_EXPIRE_NS 10000000000ull
#define DNS_MAX_BAD_STARTS 8u
#define DROPPED_KEYS 16u
#define SLOTS_MIN 4u

#define F_QR 0x8000u
#define F_Z 0x0040u

#define T_IXFR 251u
#define T_AXFR 252u

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

_Static_assert(L7_MAX_PENDING >= SLOTS_MIN, "the table grows by doubling from SLOTS_MIN");
_Static_assert(DNS_KEEP >= DNS_HDR + DNS_NAME_MAX + 4, "a whole question fits");

/* What pairs a response with its query. */
struct qkey {
	uint64_t hash; /* of the lowercased wire name */
	uint16_t id;
	uint16_t qtype;
	bool has_q; /* the question was read */
};

enum estate {
	E_PENDING, /* query sent, no answer yet */
	E_OPEN,	   /* zone transfer answered: more messages of its id may come */
	E_DONE,	   /* ready to pop */
};

struct entry {
	struct l7_exchange x;
	struct qkey k;
	uint64_t seq; /* creation order */
	enum estate st;
};

/* What one message says. */
struct msg {
	struct qkey k;
	bool qr;
	bool q_bad;	 /* the question broke a rule */
	bool target_cut; /* target[] holds a prefix */
	uint8_t rcode;
	char op[L7_OP_MAX + 1];
	char target[L7_TARGET_MAX + 1];
};

enum sstate {
	S_LEN,	/* the 2-byte length */
	S_BODY, /* msg_len bytes */
	S_SKIP, /* framing lost: up to the next segment */
	S_DEAD, /* abandoned, or a datagram direction that never carried DNS */
};

struct dir {
	enum sstate st;
	bool synced; /* the message in progress (or the next) is where framing says */
	bool ever_valid;
	bool holed;   /* keep[] stopped at a gap */
	bool trunc;   /* bytes of the message in progress were not captured */
	uint32_t bad; /* failed starts while never valid */
	unsigned len_have;
	uint8_t len_buf[2];
	uint32_t msg_len; /* after the prefix */
	uint32_t msg_got; /* of those, seen or skipped */
	uint64_t start_ns;
	uint64_t last_ts; /* segment that last gave bytes to the message in progress */
	uint64_t seg_ts;  /* last segment of this direction: the time of a loss */
	size_t keep_len;
	uint8_t keep[DNS_KEEP];
};

struct dns_conn {
	bool datagram;
	bool closed;
	bool fed;
	enum l7_role role;
	uint64_t expire_ts; /* of the last feed */
	uint64_t next_seq;
	struct entry *slots;
	unsigned cap, count;
	struct dropped {
		struct qkey k;
		bool live;
	} dropped[DROPPED_KEYS];
	unsigned dropped_next;
	struct l7_stats st;
	struct dir d[2];
};

static const struct {
	uint16_t type;
	const char *name;
} type_names[] = {
	{ 1, "A" },	 { 2, "NS" },	  { 5, "CNAME" },   { 6, "SOA" },   { 12, "PTR" },
	{ 15, "MX" },	 { 16, "TXT" },	  { 28, "AAAA" },   { 33, "SRV" },  { 35, "NAPTR" },
	{ 41, "OPT" },	 { 43, "DS" },	  { 48, "DNSKEY" }, { 64, "SVCB" }, { 65, "HTTPS" },
	{ 251, "IXFR" }, { 252, "AXFR" }, { 255, "ANY" },   { 257, "CAA" },
};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint8_t lower(uint8_t ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch;
}

static void type_name(uint16_t type, char *out)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (type_names[i].type == type) {
			snprintf(out, L7_OP_MAX + 1, "%s", type_names[i].name);
			return;
		}
	}
	snprintf(out, L7_OP_MAX + 1, "TYPE%u", type);
}

/*
 * A message of len bytes whose header is h could be DNS: a known opcode, the Z bit clear, at
 * most one question (RFC 9619), no RCODE in a query, and room in len for the smallest
 * question (5 bytes) and records (11 bytes) its counts announce.
 */
static bool plausible(const uint8_t *h, uint64_t len)
{
	uint16_t flags = be16(h + 2);
	unsigned opcode = flags >> 11 & 0xf;
	uint64_t need;

	if (len < DNS_HDR || opcode == 3 || opcode > 6 || (flags & F_Z) || be16(h + 4) > 1)
		return false;
	if (!(flags & F_QR) && (flags & 0xf))
		return false;
	need = DNS_HDR + 5ull * be16(h + 4) +
	       11ull * ((uint64_t)be16(h + 6) + be16(h + 8) + be16(h + 10));
	return need <= len;
}

/*
 * The name at p[off..have): its text (no trailing dot, "" for the root) in text[], which has
 * room for DNS_NAME_MAX bytes, the hash of its lowercased wire form, and the offset after it.
 * 0, -EAGAIN when the captured bytes end first, -EBADMSG when it breaks a rule.
 */
static int parse_name(const uint8_t *p, size_t have, size_t off, char *text, size_t *ret_len,
		      uint64_t *ret_hash, size_t *ret_end)
{
	size_t pos = off, limit = off, end = 0, wire = 1, tl = 0;
	uint64_t h = FNV_OFFSET;
	unsigned labels = 0;

	for (;;) {
		uint8_t b;

		if (pos >= have)
			return -EAGAIN;
		b = p[pos];
		if ((b & 0xc0) == 0xc0) {
			size_t ptr;

			if (pos + 1 >= have)
				return -EAGAIN;
			ptr = (size_t)(b & 0x3f) << 8 | p[pos + 1];
			/* Strictly decreasing landings: no loop can form. */
			if (ptr >= limit)
				return -EBADMSG;
			if (!end)
				end = pos + 2;
			limit = ptr;
			pos = ptr;
			continue;
		}
		if (b & 0xc0)
			return -EBADMSG;
		if (!b)
			break;
		wire += 1u + b;
		if (wire > DNS_NAME_MAX || ++labels > DNS_LABELS_MAX)
			return -EBADMSG;
		if (pos + 1 + b > have)
			return -EAGAIN;
		h = (h ^ b) * FNV_PRIME;
		if (tl)
			text[tl++] = '.';
		for (size_t i = 0; i < b; i++) {
			h = (h ^ lower(p[pos + 1 + i])) * FNV_PRIME;
			text[tl++] = (char)p[pos + 1 + i];
		}
		pos += 1u + b;
	}
	*ret_len = tl;
	*ret_hash = h;
	*ret_end = end ? end : pos + 1;
	return 0;
}

/*
 * The header and the question of a message of len bytes of which p[0..have) were captured,
 * have >= DNS_HDR. What could not be read is left empty.
 */
static void parse_msg(const uint8_t *p, size_t have, uint64_t len, struct msg *m)
{
	char text[DNS_NAME_MAX + 1];
	size_t tl, end;
	uint64_t hash;
	int r;

	memset(m, 0, sizeof(*m));
	m->k.id = be16(p);
	m->qr = (be16(p + 2) & F_QR) != 0;
	m->rcode = p[3] & 0xf;
	if (!be16(p + 4))
		return;
	r = parse_name(p, have, DNS_HDR, text, &tl, &hash, &end);
	if (!r && end + 4 > have)
		r = -EAGAIN;
	/* Not cut by the capture but by the message's own end. */
	if (r == -EAGAIN && have >= len)
		r = -EBADMSG;
	if (r) {
		m->q_bad = r == -EBADMSG;
		return;
	}
	m->k.has_q = true;
	m->k.hash = hash;
	m->k.qtype = be16(p + end);
	type_name(m->k.qtype, m->op);
	if (!tl)
		m->target_cut = l7__copy_str(m->target, sizeof(m->target), (const uint8_t *)".", 1);
	else
		m->target_cut =
			l7__copy_str(m->target, sizeof(m->target), (const uint8_t *)text, tl);
}

static bool key_match(const struct qkey *a, const struct qkey *b)
{
	if (a->id != b->id)
		return false;
	if (!a->has_q || !b->has_q)
		return true;
	return a->hash == b->hash && a->qtype == b->qtype;
}

/* --- the exchanges --- */

static struct entry *slot_new(struct dns_conn *c)
{
	struct entry *e;

	if (c->count == L7_MAX_PENDING)
		return NULL;
	if (c->count == c->cap) {
		unsigned ncap = c->cap ? c->cap * 2 : SLOTS_MIN;
		struct entry *n = realloc(c->slots, ncap * sizeof(*n));

		if (!n) {
			c->st.alloc_failures++;
			return NULL;
		}
		c->slots = n;
		c->cap = ncap;
	}
	e = &c->slots[c->count++];
	memset(e, 0, sizeof(*e));
	e->seq = ++c->next_seq;
	return e;
}

static void done(struct dns_conn *c, struct entry *e)
{
	e->st = E_DONE;
	c->st.exchanges++;
}

static void unanswered(struct dns_conn *c, struct entry *e, uint64_t ts)
{
	e->x.flags |= L7_F_NO_RESPONSE;
	e->x.end_ns = ts > e->x.start_ns ? ts : e->x.start_ns;
	c->st.unanswered++;
	done(c, e);
}

static bool too_old(uint64_t then, uint64_t now)
{
	return now > then && now - then > DNS_EXPIRE_NS;
}

static void expire(struct dns_conn *c, uint64_t ts)
{
	for (unsigned i = 0; i < c->count; i++) {
		struct entry *e = &c->slots[i];

		if (e->st == E_PENDING && too_old(e->x.start_ns, ts))
			unanswered(c, e, ts);
		else if (e->st == E_OPEN && too_old(e->x.end_ns, ts))
			done(c, e);
	}
}

static void drop_query(struct dns_conn *c, const struct qkey *k)
{
	struct dropped *q = &c->dropped[c->dropped_next++ % DROPPED_KEYS];

	c->st.requests_dropped++;
	q->k = *k;
	q->live = true;
}

/* A response to a query that was dropped: forgets the query. */
static bool was_dropped(struct dns_conn *c, const struct qkey *k)
{
	for (unsigned i = 0; i < DROPPED_KEYS; i++) {
		struct dropped *q = &c->dropped[i];

		if (q->live && key_match(&q->k, k)) {
			q->live = false;
			return true;
		}
	}
	return false;
}

static void fill(struct l7_exchange *x, const struct msg *m)
{
	memcpy(x->op, m->op, sizeof(x->op));
	memcpy(x->target, m->target, sizeof(x->target));
	if (m->target_cut)
		x->flags |= L7_F_TARGET_TRUNCATED;
}

static void query(struct dns_conn *c, int di, const struct msg *m, uint64_t wire, bool trunc,
		  uint64_t start_ns)
{
	struct entry *e;

	c->st.requests++;
	e = slot_new(c);
	if (!e) {
		drop_query(c, &m->k);
		c->st.bytes_unattributed += wire;
		return;
	}
	e->k = m->k;
	e->st = E_PENDING;
	e->x.start_ns = start_ns;
	e->x.req_bytes = wire;
	e->x.req_dir = (uint8_t)di;
	if (trunc)
		e->x.flags |= L7_F_REQ_TRUNCATED;
	fill(&e->x, m);
}

static bool is_xfr(uint16_t qtype)
{
	return qtype == T_AXFR || qtype == T_IXFR;
}

static void response(struct dns_conn *c, int di, const struct msg *m, uint64_t wire, bool trunc,
		     uint64_t start_ns, uint64_t end_ns)
{
	struct entry *e = NULL;

	c->st.responses++;
	/* More of a zone transfer, or the end of one. */
	for (unsigned i = 0; i < c->count; i++) {
		struct entry *o = &c->slots[i];

		if (o->st != E_OPEN || o->x.req_dir == di)
			continue;
		if (key_match(&o->k, &m->k)) {
			o->x.resp_bytes += wire;
			o->x.end_ns = end_ns > o->x.end_ns ? end_ns : o->x.end_ns;
			if (trunc)
				o->x.flags |= L7_F_RESP_TRUNCATED;
			return;
		}
		done(c, o);
	}
	for (unsigned i = 0; i < c->count; i++) {
		struct entry *q = &c->slots[i];

		if (q->st == E_PENDING && q->x.req_dir != di && key_match(&q->k, &m->k) &&
		    (!e || q->seq < e->seq))
			e = q;
	}
	if (!e) {
		if (was_dropped(c, &m->k)) {
			c->st.responses_dropped++;
			c->st.bytes_unattributed += wire;
			return;
		}
		c->st.orphan_responses++;
		e = slot_new(c);
		if (!e) {
			c->st.responses_dropped++;
			c->st.bytes_unattributed += wire;
			return;
		}
		e->k = m->k;
		e->x.flags = L7_F_NO_REQUEST;
		e->x.start_ns = start_ns;
		e->x.req_dir = (uint8_t)!di;
		fill(&e->x, m);
	} else if (!e->x.op[0] && !e->x.target[0] && m->k.has_q) {
		/* The query's question was not captured: the answer repeats it. */
		fill(&e->x, m);
	}
	e->x.resp_bytes = wire;
	e->x.end_ns = end_ns > e->x.start_ns ? end_ns : e->x.start_ns;
	e->x.code = m->rcode;
	e->x.error = m->rcode != 0;
	if (trunc)
		e->x.flags |= L7_F_RESP_TRUNCATED;
	if (!c->datagram && !(e->x.flags & L7_F_NO_REQUEST) && !m->rcode &&
	    is_xfr(e->k.has_q ? e->k.qtype : m->k.qtype))
		e->st = E_OPEN;
	else
		done(c, e);
}

/*
 * A whole message (or what is left of it) of di: len bytes announced, p[0..have) captured in
 * one piece from its start, wire bytes on the wire.
 */
static void message(struct dns_conn *c, int di, const uint8_t *p, size_t have, uint64_t len,
		    uint64_t wire, bool trunc, uint64_t start_ns, uint64_t end_ns)
{
	struct msg m;

	if (have < DNS_HDR) {
		c->st.malformed++;
		c->st.bytes_unattributed += wire;
		return;
	}
	parse_msg(p, have, len, &m);
	if (m.q_bad)
		c->st.malformed++;
	if (c->role == L7_ROLE_UNKNOWN)
		c->role = !m.qr == (di == L7_EGRESS) ? L7_ROLE_CLIENT : L7_ROLE_SERVER;
	if (m.qr)
		response(c, di, &m, wire, trunc, start_ns, end_ns);
	else
		query(c, di, &m, wire, trunc, start_ns);
}

/* --- directions --- */

static void bad_start(struct dns_conn *c, struct dir *d)
{
	if (!d->ever_valid && ++d->bad >= DNS_MAX_BAD_STARTS) {
		d->st = S_DEAD;
		c->st.dirs_abandoned++;
	}
}

static void datagram(struct dns_conn *c, int di, uint64_t ts, const uint8_t *p, size_t captured,
		     size_t actual)
{
	struct dir *d = &c->d[di];

	if (d->st == S_DEAD) {
		c->st.bytes_unattributed += actual;
		return;
	}
	if (captured < DNS_HDR || !plausible(p, actual)) {
		c->st.malformed++;
		c->st.bytes_unattributed += actual;
		/* A header not captured says nothing against the direction. */
		if (captured >= DNS_HDR || actual < DNS_HDR)
			bad_start(c, d);
		return;
	}
	d->ever_valid = true;
	message(c, di, p, captured, actual, actual, captured < actual, ts, ts);
}

static void framing_lost(struct dns_conn *c, struct dir *d)
{
	d->st = S_SKIP;
	d->len_have = 0;
	d->synced = false;
	c->st.resyncs++;
}

/* The message in progress ends here, whole or not. */
static void end_body(struct dns_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];

	if (d->msg_got < d->msg_len)
		d->trunc = true;
	d->st = S_LEN;
	d->len_have = 0;
	message(c, di, d->keep, d->keep_len, d->msg_len, 2ull + d->msg_got, d->trunc, d->start_ns,
		ts);
}

/* The candidate message start in S_BODY failed its check (counted) or lost its chance. */
static void cand_fail(struct dns_conn *c, int di, bool counted)
{
	struct dir *d = &c->d[di];

	c->st.bytes_unattributed += 2ull + d->msg_got;
	framing_lost(c, d);
	if (counted)
		bad_start(c, d);
}

static bool cand_checked(const struct dir *d)
{
	return d->synced || d->keep_len >= DNS_HDR;
}

static void begin_body(struct dns_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];

	d->msg_len = be16(d->len_buf);
	d->msg_got = 0;
	d->keep_len = 0;
	d->holed = false;
	d->trunc = false;
	d->st = S_BODY;
	d->len_have = 0;
	if (!d->synced && d->msg_len < DNS_HDR) {
		cand_fail(c, di, true);
		return;
	}
	if (!d->msg_len)
		end_body(c, di, ts);
}

static void stream_feed(struct dns_conn *c, int di, uint64_t ts, const uint8_t *p, size_t n)
{
	struct dir *d = &c->d[di];
	size_t off = 0;

	/* A syscall's data is the likeliest place for a message to begin. */
	if (d->st == S_SKIP) {
		d->st = S_LEN;
		d->len_have = 0;
	}
	while (off < n) {
		size_t k;

		switch (d->st) {
		case S_DEAD:
		case S_SKIP:
			c->st.bytes_unattributed += n - off;
			return;
		case S_LEN:
			if (!d->len_have)
				d->start_ns = ts;
			d->len_buf[d->len_have++] = p[off++];
			d->last_ts = ts;
			if (d->len_have == 2)
				begin_body(c, di, ts);
			break;
		case S_BODY:
			k = n - off;
			if (k > d->msg_len - d->msg_got)
				k = d->msg_len - d->msg_got;
			if (!d->holed)
				l7__take(d->keep, &d->keep_len, DNS_KEEP, p + off, k);
			d->msg_got += (uint32_t)k;
			d->last_ts = ts;
			off += k;
			if (!d->synced && d->keep_len >= DNS_HDR) {
				if (!plausible(d->keep, d->msg_len)) {
					cand_fail(c, di, true);
					break;
				}
				d->synced = true;
				d->ever_valid = true;
				d->bad = 0;
			}
			if (d->msg_got == d->msg_len)
				end_body(c, di, ts);
			break;
		}
	}
}

/* n bytes of di not seen: known says n is their count, else it is unknown (and 0). */
static void stream_skip(struct dns_conn *c, int di, uint64_t n, bool known, uint64_t ts)
{
	struct dir *d = &c->d[di];
	uint64_t left;

	switch (d->st) {
	case S_DEAD:
	case S_SKIP:
		c->st.bytes_unattributed += n;
		return;
	case S_LEN:
		c->st.bytes_unattributed += d->len_have + n;
		framing_lost(c, d);
		return;
	case S_BODY:
		break;
	}
	if (!cand_checked(d)) {
		c->st.bytes_unattributed += n;
		cand_fail(c, di, false);
		return;
	}
	d->holed = true;
	d->trunc = true;
	d->last_ts = ts;
	left = d->msg_len - d->msg_got;
	if (known && n <= left) {
		d->msg_got += (uint32_t)n;
		if (d->msg_got == d->msg_len)
			end_body(c, di, ts);
		return;
	}
	if (known) {
		d->msg_got = d->msg_len;
		c->st.bytes_unattributed += n - left;
	}
	end_body(c, di, ts);
	framing_lost(c, d);
}

/* close(): what a direction has in progress ends, truncated. */
static void stream_abort(struct dns_conn *c, int di)
{
	struct dir *d = &c->d[di];

	if (d->st == S_LEN) {
		c->st.bytes_unattributed += d->len_have;
		d->len_have = 0;
	} else if (d->st == S_BODY) {
		if (cand_checked(d))
			end_body(c, di, d->last_ts);
		else
			cand_fail(c, di, false);
	}
	d->st = S_DEAD;
}

/* --- l7_ops --- */

static void *dns_new(unsigned flags)
{
	struct dns_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->datagram = (flags & L7_F_DATAGRAM) != 0;
	return c;
}

static void dns_free(void *cv)
{
	struct dns_conn *c = cv;

	if (!c)
		return;
	free(c->slots);
	free(c);
}

static int dns_feed(void *cv, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data, size_t captured,
		    size_t actual)
{
	struct dns_conn *c = cv;

	if (!c || (dir != L7_EGRESS && dir != L7_INGRESS) || captured > actual ||
	    (captured && !data))
		return -EINVAL;
	if (c->closed)
		return -EPIPE;
	c->st.segments++;
	c->st.bytes_seen += actual;
	c->st.gap_bytes += actual - captured;
	c->d[dir].seg_ts = ts_ns;
	/*
	 * Segments of one time (one syscall fed in pieces) expire nothing more than the first:
	 * a query that completes in the middle of a segment waits for a later one.
	 */
	if (!c->fed || ts_ns != c->expire_ts)
		expire(c, ts_ns);
	c->fed = true;
	c->expire_ts = ts_ns;
	if (c->datagram) {
		datagram(c, dir, ts_ns, data, captured, actual);
		return 0;
	}
	if (captured)
		stream_feed(c, dir, ts_ns, data, captured);
	if (actual > captured)
		stream_skip(c, dir, actual - captured, true, ts_ns);
	return 0;
}

static int dns_lost(void *cv, enum l7_dir dir, uint64_t nbytes)
{
	struct dns_conn *c = cv;

	if (!c || (dir != L7_EGRESS && dir != L7_INGRESS))
		return -EINVAL;
	if (c->closed)
		return -EPIPE;
	c->st.lost_segments++;
	c->st.lost_bytes += nbytes;
	c->st.bytes_seen += nbytes;
	if (c->datagram)
		c->st.bytes_unattributed += nbytes;
	else
		stream_skip(c, dir, nbytes, nbytes != 0, c->d[dir].seg_ts);
	return 0;
}

static void dns_close(void *cv, uint64_t ts_ns)
{
	struct dns_conn *c = cv;

	if (!c || c->closed)
		return;
	if (!c->datagram) {
		/* A query in progress first, so that an answer in progress finds it. */
		for (int i = 0; i < 2; i++) {
			struct dir *d = &c->d[i];

			if (d->st == S_BODY && cand_checked(d) && d->keep_len >= 3 &&
			    !(d->keep[2] & 0x80))
				stream_abort(c, i);
		}
		stream_abort(c, L7_EGRESS);
		stream_abort(c, L7_INGRESS);
	}
	for (unsigned i = 0; i < c->count; i++) {
		struct entry *e = &c->slots[i];

		if (e->st == E_OPEN)
			done(c, e);
		else if (e->st == E_PENDING)
			unanswered(c, e, ts_ns);
	}
	c->closed = true;
}

static int dns_next(void *cv, struct l7_exchange *ret)
{
	struct dns_conn *c = cv;
	unsigned best = 0;
	bool found = false;

	if (!c)
		return 0;
	for (unsigned i = 0; i < c->count; i++) {
		if (c->slots[i].st == E_DONE && (!found || c->slots[i].seq < c->slots[best].seq)) {
			best = i;
			found = true;
		}
	}
	if (!found)
		return 0;
	if (ret)
		*ret = c->slots[best].x;
	c->slots[best] = c->slots[--c->count];
	return 1;
}

L7_DEFINE_GETTERS(dns, struct dns_conn)

const struct l7_ops l7_dns_ops = {
	.name = "dns",
	.title = "DNS",
	L7_OPS_OF(dns),
};
