// SPDX-License-Identifier: Apache-2.0
/*
 * MongoDB wire protocol of one connection, as shipper/network/protocols/l7.h describes parsers (framing, gaps,
 * pairing and limits: shipper/network/protocols/l7msg.h).
 *
 * Every message has a 16-byte header: messageLength (int32 LE, header included), requestID,
 * responseTo, opCode. Requests carry responseTo 0, replies the requestID they answer: that
 * tells the kind of OP_MSG and OP_COMPRESSED, OP_REPLY is always a reply and the legacy
 * opcodes always requests. A reply pairs with the pending request whose requestID is its
 * responseTo.
 *
 * Handled:
 * - OP_MSG (2013): flagBits (checksumPresent: the last 4 bytes are not sections; moreToCome on
 *   a request: no reply, L7_F_NO_REPLY_EXPECTED; on a reply: more replies follow for the same
 *   request, each answering the previous reply's requestID (exhaust cursors, streaming hello),
 *   all counted in one exchange, complete at the reply without it). Sections: kind 1 and 2
 *   (size-prefixed) are skipped; kind 0 is the body. A request's op is the body's first key
 *   (the command: "find", "insert", "hello"), the target that key's value when a string (the
 *   collection; "$db" is not looked at), for getMore the "collection" field.
 * - Replies (OP_MSG body, first document of an OP_REPLY): ok (double, int32, int64 or bool)
 *   other than 1 is an error with `code` the "code" field (int32, int64 or double; 0 when
 *   absent). With ok 1, a "writeErrors" array is an error with the code of its first element,
 *   and a "writeConcernError" one with its code: the command ran but the write failed. A
 *   legacy "$err" field is an error. A reply whose ok was not captured (it comes last, after
 *   a cursor's batch) counts as success.
 * - OP_QUERY (2004): on "<db>.$cmd" a command, named by the query's first key (inside
 *   "$query" or "query" when wrapped); else op "OP_QUERY", target the collection (the name
 *   after the database's dot). OP_REPLY (1): QueryFailure is an error (code from the
 *   document), CursorNotFound too (code 43 when the document has none).
 * - Legacy writes OP_INSERT, OP_UPDATE, OP_DELETE (target the collection) and
 *   OP_KILL_CURSORS have no reply (L7_F_NO_REPLY_EXPECTED); OP_GET_MORE has.
 * - OP_COMPRESSED (2012): framed and counted, not decompressed: op "OP_COMPRESSED", a reply
 *   is a success, and a compressed moreToCome is not seen (its request waits for a reply).
 *
 * BSON is read from the prefix a message's parser gets (L7MSG_PREFIX_MAX), element by element,
 * every length checked against the document's, the message's and what was captured: a
 * document cut by the capture yields what its captured elements say, one whose lengths do not
 * fit the message counts as malformed. Only top-level keys are read, and two fixed paths one
 * or two levels down (writeErrors[0].code, $query's first key): no recursion.
 */
#include <errno.h>
#include <string.h>

#include "shipper/network/protocols/l7msg.h"

#define HDR 16u
/* The server's maxMessageSizeBytes: it refuses anything longer. */
#define MAX_MESSAGE 48000000u

enum {
	OP_REPLY = 1,
	OP_UPDATE = 2001,
	OP_INSERT = 2002,
	OP_QUERY = 2004,
	OP_GET_MORE = 2005,
	OP_DELETE = 2006,
	OP_KILL_CURSORS = 2007,
	OP_COMPRESSED = 2012,
	OP_MSG = 2013,
};

enum {
	MSG_CHECKSUM = 1u << 0,
	MSG_MORE_TO_COME = 1u << 1,
	/* Bits 0-15 are required: a message with an unknown one must be refused. */
	MSG_REQUIRED_UNKNOWN = 0xfffcu,
};

enum {
	REPLY_CURSOR_NOT_FOUND = 1u << 0,
	REPLY_QUERY_FAILURE = 1u << 1,
};

/* The server's code for CursorNotFound. */
#define CODE_CURSOR_NOT_FOUND 43

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* --- BSON, bounded --- */

struct bson {
	const uint8_t *p;
	size_t size;  /* as declared */
	size_t avail; /* of it captured */
	size_t off;
};

struct bson_el {
	uint8_t type;
	const uint8_t *name;
	size_t name_len;
	const uint8_t *val;
	size_t val_len;	  /* as declared */
	size_t val_avail; /* of it captured */
};

/*
 * A document at p: avail bytes captured from there, room bytes of the message from there.
 * 0, -EAGAIN if not even its size was captured, -EBADMSG if it does not fit.
 */
static int bson_open(struct bson *b, const uint8_t *p, size_t avail, uint64_t room)
{
	uint32_t size;

	if (room < 5)
		return -EBADMSG;
	if (avail < 4)
		return -EAGAIN;
	size = le32(p);
	if (size < 5 || size > room)
		return -EBADMSG;
	b->p = p;
	b->size = size;
	b->avail = avail < size ? avail : size;
	b->off = 4;
	return 0;
}

/* A cstring from off, ending before lim: its length, -EAGAIN or -EBADMSG. */
static long bson_cstring(const struct bson *b, size_t off, size_t lim)
{
	size_t end = lim < b->avail ? lim : b->avail;
	const uint8_t *z;

	if (off < end) {
		z = memchr(b->p + off, 0, end - off);
		if (z)
			return (long)(z - (b->p + off));
	}
	return end < lim ? -EAGAIN : -EBADMSG;
}

/* 1 with the next element in *el, 0 at the document's end, -EAGAIN when cut, -EBADMSG. */
static int bson_next(struct bson *b, struct bson_el *el)
{
	size_t last = b->size - 1; /* the terminating NUL */
	uint64_t vlen, l = 0;
	size_t voff;
	long k;

	if (b->off >= b->avail)
		return -EAGAIN;
	el->type = b->p[b->off];
	if (!el->type)
		return b->off == last ? 0 : -EBADMSG;
	k = bson_cstring(b, b->off + 1, last);
	if (k < 0)
		return (int)k;
	el->name = b->p + b->off + 1;
	el->name_len = (size_t)k;
	voff = b->off + 1 + (size_t)k + 1;
	switch (el->type) {
	case 0x02: /* string */
	case 0x0d: /* JavaScript code */
	case 0x0e: /* symbol */
	case 0x03: /* document */
	case 0x04: /* array */
	case 0x05: /* binary */
	case 0x0c: /* DBPointer */
	case 0x0f: /* code with scope */
		if (voff + 4 > last)
			return -EBADMSG;
		if (voff + 4 > b->avail)
			return -EAGAIN;
		l = le32(b->p + voff);
		if (l > INT32_MAX)
			return -EBADMSG;
		break;
	default:
		break;
	}
	switch (el->type) {
	case 0x01: /* double */
	case 0x09: /* UTC datetime */
	case 0x11: /* timestamp */
	case 0x12: /* int64 */
		vlen = 8;
		break;
	case 0x02:
	case 0x0d:
	case 0x0e:
		if (l < 1)
			return -EBADMSG;
		vlen = 4 + l;
		break;
	case 0x03:
	case 0x04:
		if (l < 5)
			return -EBADMSG;
		vlen = l;
		break;
	case 0x05:
		vlen = 4 + 1 + l;
		break;
	case 0x0c:
		if (l < 1)
			return -EBADMSG;
		vlen = 4 + l + 12;
		break;
	case 0x0f:
		if (l < 14)
			return -EBADMSG;
		vlen = l;
		break;
	case 0x06: /* undefined */
	case 0x0a: /* null */
	case 0x7f: /* max key */
	case 0xff: /* min key */
		vlen = 0;
		break;
	case 0x07: /* ObjectId */
		vlen = 12;
		break;
	case 0x08: /* bool */
		vlen = 1;
		break;
	case 0x0b: { /* regex: pattern and options, two cstrings */
		long k2;

		k = bson_cstring(b, voff, last);
		if (k < 0)
			return (int)k;
		k2 = bson_cstring(b, voff + (size_t)k + 1, last);
		if (k2 < 0)
			return (int)k2;
		vlen = (uint64_t)k + 1 + (uint64_t)k2 + 1;
		break;
	}
	case 0x10: /* int32 */
		vlen = 4;
		break;
	case 0x13: /* decimal128 */
		vlen = 16;
		break;
	default:
		return -EBADMSG;
	}
	if (voff + vlen > last)
		return -EBADMSG;
	el->val = b->p + voff;
	el->val_len = (size_t)vlen;
	el->val_avail = b->avail - voff < vlen ? b->avail - voff : (size_t)vlen;
	b->off = voff + (size_t)vlen;
	return 1;
}

static bool el_is(const struct bson_el *el, const char *name)
{
	size_t n = strlen(name);

	return el->name_len == n && !memcmp(el->name, name, n);
}

/* A number's value as an int64 (doubles truncated); false if not a whole number read. */
static bool el_int(const struct bson_el *el, int64_t *ret)
{
	if (el->val_avail < el->val_len)
		return false;
	switch (el->type) {
	case 0x10:
		*ret = (int32_t)le32(el->val);
		return true;
	case 0x12:
		*ret = (int64_t)le64(el->val);
		return true;
	case 0x01: {
		uint64_t bits = le64(el->val);
		double v;

		memcpy(&v, &bits, sizeof(v));
		/* NaN fails both comparisons. */
		if (!(v >= -2147483648.0 && v <= 2147483647.0))
			return false;
		*ret = (int64_t)v;
		return true;
	}
	case 0x08:
		*ret = el->val[0] != 0;
		return true;
	default:
		return false;
	}
}

/* ok is a double: 0.5 is not 1. */
static bool el_is_one(const struct bson_el *el, bool *ret)
{
	int64_t v;

	if (el->type == 0x01 && el->val_avail == 8) {
		uint64_t bits = le64(el->val);
		double d;

		memcpy(&d, &bits, sizeof(d));
		*ret = d == 1.0;
		return true;
	}
	if (!el_int(el, &v))
		return false;
	*ret = v == 1;
	return true;
}

static int32_t clamp32(int64_t v)
{
	return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* A string element's text into out; sets L7_F_TARGET_TRUNCATED if cut. False if no string. */
static bool el_string(const struct bson_el *el, char *out, size_t cap, uint32_t *flags)
{
	size_t len, have;

	if (el->type != 0x02 || el->val_avail < 4)
		return false;
	len = el->val_len - 4 - 1;
	have = el->val_avail - 4;
	if (have > len)
		have = len;
	if (l7__copy_str(out, cap, el->val + 4, have) || have < len)
		*flags |= L7_F_TARGET_TRUNCATED;
	return true;
}

/* The "code" of a document-valued element (writeErrors[0], writeConcernError). */
static int32_t sub_code(const struct bson_el *el, bool array)
{
	struct bson d, inner;
	struct bson_el e;
	int r;

	if (bson_open(&d, el->val, el->val_avail, el->val_len))
		return 0;
	if (array) {
		if (bson_next(&d, &e) != 1 || e.type != 0x03)
			return 0;
		if (bson_open(&inner, e.val, e.val_avail, e.val_len))
			return 0;
		d = inner;
	}
	while ((r = bson_next(&d, &e)) == 1) {
		int64_t v;

		if (el_is(&e, "code") && el_int(&e, &v))
			return clamp32(v);
	}
	return 0;
}

/* --- messages --- */

struct result {
	bool error;
	int32_t code;
	bool more; /* more replies follow */
	bool malformed;
};

/* A reply document's verdict: ok, code, writeErrors, writeConcernError, $err. */
static void reply_doc(const uint8_t *p, size_t avail, uint64_t room, struct result *res)
{
	bool has_ok = false, ok_one = true, has_code = false, has_we = false, has_wce = false;
	bool has_err = false;
	int32_t code = 0, we_code = 0, wce_code = 0;
	struct bson b;
	struct bson_el el;
	int r;

	r = bson_open(&b, p, avail, room);
	if (r) {
		res->malformed = r == -EBADMSG;
		return;
	}
	while ((r = bson_next(&b, &el)) == 1) {
		int64_t v;

		if (el_is(&el, "ok")) {
			has_ok = el_is_one(&el, &ok_one);
		} else if (el_is(&el, "code")) {
			if (el_int(&el, &v)) {
				has_code = true;
				code = clamp32(v);
			}
		} else if (el_is(&el, "writeErrors") && el.type == 0x04) {
			if (!has_we) {
				has_we = true;
				we_code = sub_code(&el, true);
			}
		} else if (el_is(&el, "writeConcernError") && el.type == 0x03) {
			has_wce = true;
			wce_code = sub_code(&el, false);
		} else if (el_is(&el, "$err")) {
			has_err = true;
		}
	}
	if (r == -EBADMSG)
		res->malformed = true;
	if (has_ok && !ok_one) {
		res->error = true;
		res->code = has_code ? code : 0;
	} else if (has_we) {
		res->error = true;
		res->code = we_code;
	} else if (has_wce) {
		res->error = true;
		res->code = wce_code;
	} else if (has_err) {
		res->error = true;
		res->code = has_code ? code : 0;
	}
}

/*
 * The kind 0 section of an OP_MSG: its offset in the message, 0 if not captured, -1 if the
 * sections do not fit the message.
 */
static long msg_body(const uint8_t *p, size_t n, uint64_t end)
{
	uint64_t off = HDR + 4;

	while (off < end) {
		uint32_t size;

		if (off >= n)
			return 0;
		if (p[off] == 0)
			return (long)off + 1;
		if (p[off] > 2)
			return -1;
		if (off + 5 > end)
			return -1;
		if (off + 5 > n)
			return 0;
		size = le32(p + off + 1);
		if (size < 5 || off + 1 + size > end)
			return -1;
		off += 1 + (uint64_t)size;
	}
	return -1;
}

/* OP_MSG: where its sections end (before a checksum). */
static uint64_t msg_end(const struct l7msg_msg *m)
{
	uint32_t flags = m->n >= HDR + 4 ? le32(m->p + HDR) : 0;

	return m->total - (flags & MSG_CHECKSUM ? 4 : 0);
}

static void collection_of(const uint8_t *name, size_t len, bool cut, struct l7_exchange *x)
{
	const uint8_t *dot = memchr(name, '.', len);

	if (dot) {
		len -= (size_t)(dot + 1 - name);
		name = dot + 1;
	}
	if (l7__copy_str(x->target, sizeof(x->target), name, len) || cut)
		x->flags |= L7_F_TARGET_TRUNCATED;
}

/*
 * A command document: op its first key (inside $query/query when wrapped: one level), target
 * that key's string value (getMore: "collection"). False if no key could be read.
 */
static bool command_doc(const uint8_t *p, size_t avail, uint64_t room, struct l7_exchange *x,
			bool *malformed)
{
	struct bson b, q;
	struct bson_el el;
	bool get_more;
	int r;

	r = bson_open(&b, p, avail, room);
	if (!r && (r = bson_next(&b, &el)) == 1 && el.type == 0x03 &&
	    (el_is(&el, "$query") || el_is(&el, "query"))) {
		r = bson_open(&q, el.val, el.val_avail, el.val_len);
		if (!r) {
			b = q;
			r = bson_next(&b, &el);
		}
	}
	if (r != 1) {
		*malformed = r == -EBADMSG || r == 0;
		return false;
	}
	/* An empty key is valid BSON but names no command. */
	if (!el.name_len)
		return false;
	l7__copy_str(x->op, sizeof(x->op), el.name, el.name_len);
	get_more = el_is(&el, "getMore");
	if (!get_more) {
		el_string(&el, x->target, sizeof(x->target), &x->flags);
		return true;
	}
	while ((r = bson_next(&b, &el)) == 1) {
		if (el_is(&el, "collection")) {
			el_string(&el, x->target, sizeof(x->target), &x->flags);
			break;
		}
	}
	*malformed = r == -EBADMSG;
	return true;
}

static void set_op(struct l7_exchange *x, const char *op)
{
	l7__copy_str(x->op, sizeof(x->op), (const uint8_t *)op, strlen(op));
}

/* A request's op and target; *no_reply when the server answers it with nothing. */
static void parse_request(const struct l7msg_msg *m, struct l7_exchange *x, bool *no_reply,
			  bool *malformed)
{
	const uint8_t *p = m->p;
	size_t n = m->n;
	uint32_t opcode = le32(p + 12);
	const uint8_t *name = p + HDR + 4, *z = NULL;
	size_t name_len = 0;
	bool name_cut = false;

	*no_reply = false;
	if (opcode == OP_MSG) {
		uint64_t end = msg_end(m);
		long body;

		set_op(x, "OP_MSG");
		if (n < HDR + 4)
			return;
		*no_reply = le32(p + HDR) & MSG_MORE_TO_COME;
		body = msg_body(p, n, end);
		if (body < 0)
			*malformed = true;
		if (body <= 0)
			return;
		if (!command_doc(p + body, n - (size_t)body, end - (uint64_t)body, x, malformed))
			set_op(x, "OP_MSG");
		return;
	}
	if (opcode == OP_COMPRESSED) {
		set_op(x, "OP_COMPRESSED");
		return;
	}
	if (opcode == OP_KILL_CURSORS) {
		set_op(x, "OP_KILL_CURSORS");
		*no_reply = true;
		return;
	}
	/* The rest begin with an int32 and a cstring full collection name. */
	if (n > HDR + 4) {
		z = memchr(name, 0, n - (HDR + 4));
		name_len = z ? (size_t)(z - name) : n - (HDR + 4);
		name_cut = !z;
		if (!z && n == m->total)
			*malformed = true;
	}
	switch (opcode) {
	case OP_QUERY: {
		static const char cmd[] = ".$cmd";
		size_t doc = HDR + 4 + name_len + 1 + 8;

		if (z && name_len >= sizeof(cmd) - 1 &&
		    !memcmp(name + name_len - (sizeof(cmd) - 1), cmd, sizeof(cmd) - 1) &&
		    doc < m->total && doc <= n &&
		    command_doc(p + doc, n - doc, m->total - doc, x, malformed))
			return;
		set_op(x, "OP_QUERY");
		break;
	}
	case OP_INSERT:
		set_op(x, "OP_INSERT");
		*no_reply = true;
		break;
	case OP_UPDATE:
		set_op(x, "OP_UPDATE");
		*no_reply = true;
		break;
	case OP_DELETE:
		set_op(x, "OP_DELETE");
		*no_reply = true;
		break;
	case OP_GET_MORE:
		set_op(x, "OP_GET_MORE");
		break;
	}
	if (name_len || name_cut)
		collection_of(name, name_len, name_cut, x);
}

static void parse_reply(const struct l7msg_msg *m, struct result *res)
{
	const uint8_t *p = m->p;
	size_t n = m->n;
	uint32_t opcode = le32(p + 12);

	if (opcode == OP_MSG) {
		uint64_t end = msg_end(m);
		long body;

		if (n < HDR + 4)
			return;
		res->more = le32(p + HDR) & MSG_MORE_TO_COME;
		body = msg_body(p, n, end);
		if (body < 0)
			res->malformed = true;
		if (body > 0)
			reply_doc(p + body, n - (size_t)body, end - (uint64_t)body, res);
		return;
	}
	if (opcode != OP_REPLY || n < HDR + 20)
		return;
	{
		uint32_t flags = le32(p + HDR);
		uint32_t returned = le32(p + HDR + 16);

		if (returned && m->total > HDR + 20)
			reply_doc(p + HDR + 20, n - (HDR + 20), m->total - (HDR + 20), res);
		if (flags & REPLY_QUERY_FAILURE) {
			res->error = true;
		} else if (flags & REPLY_CURSOR_NOT_FOUND) {
			if (!res->error)
				res->code = CODE_CURSOR_NOT_FOUND;
			res->error = true;
		}
	}
}

static enum l7msg_verdict mongo_head(struct l7msg_conn *c, enum l7_dir dir, const uint8_t *p,
				     size_t n, bool final, bool resync, struct l7msg_head *ret)
{
	uint32_t len, response_to, opcode, min;
	bool reply;

	(void)c;
	(void)dir;
	(void)resync;
	if (n < HDR) {
		if (final)
			return L7MSG_BAD;
		ret->need = HDR;
		return L7MSG_MORE;
	}
	len = le32(p);
	response_to = le32(p + 8);
	opcode = le32(p + 12);
	switch (opcode) {
	case OP_MSG:
		/* flagBits, a section kind and a 5-byte document at least */
		min = HDR + 4 + 1 + 5;
		reply = response_to != 0;
		break;
	case OP_COMPRESSED:
		/* originalOpcode, uncompressedSize, compressorId */
		min = HDR + 9;
		reply = response_to != 0;
		break;
	case OP_REPLY:
		/* responseFlags, cursorID, startingFrom, numberReturned */
		min = HDR + 20;
		reply = true;
		break;
	case OP_QUERY:
		/* flags, a cstring, numberToSkip, numberToReturn, a document */
		min = HDR + 4 + 1 + 8 + 5;
		reply = false;
		break;
	case OP_UPDATE:
	case OP_INSERT:
	case OP_DELETE:
	case OP_GET_MORE:
		min = HDR + 4 + 1;
		reply = false;
		break;
	case OP_KILL_CURSORS:
		min = HDR + 8;
		reply = false;
		break;
	default:
		return L7MSG_BAD;
	}
	if (len < min || len > MAX_MESSAGE)
		return L7MSG_BAD;
	/* Legacy requests never answer anything. */
	if (!reply && response_to != 0)
		return L7MSG_BAD;
	ret->total = len;
	if (opcode == OP_MSG) {
		if (n < HDR + 5 && !final) {
			ret->need = HDR + 5;
			return L7MSG_MORE;
		}
		if (n >= HDR + 4 && (le32(p + HDR) & MSG_REQUIRED_UNKNOWN))
			return L7MSG_BAD;
		if (n >= HDR + 5 && p[HDR + 4] > 2)
			return L7MSG_BAD;
		if (n >= HDR + 4 && (le32(p + HDR) & MSG_CHECKSUM) && len < min + 4)
			return L7MSG_BAD;
	}
	ret->kind = reply ? L7MSG_RESPONSE : L7MSG_REQUEST;
	return L7MSG_OK;
}

static struct l7msg_entry *mongo_done(struct l7msg_conn *c, const struct l7msg_msg *m)
{
	uint32_t request_id = le32(m->p + 4), response_to = le32(m->p + 8);
	struct l7msg_entry *e;
	struct result res = { 0 };

	if (m->is_req) {
		struct l7_exchange x = { 0 };
		bool no_reply = false, malformed = false;

		parse_request(m, &x, &no_reply, &malformed);
		if (malformed)
			l7msg__st(c)->malformed++;
		e = l7msg__request(c, m, request_id);
		if (!e)
			return NULL;
		memcpy(e->x.op, x.op, sizeof(x.op));
		memcpy(e->x.target, x.target, sizeof(x.target));
		e->x.flags |= x.flags;
		if (no_reply)
			l7msg__no_reply(c, e, m);
		return e;
	}
	parse_reply(m, &res);
	if (res.malformed)
		l7msg__st(c)->malformed++;
	e = l7msg__find(c, response_to);
	if (!e) {
		e = l7msg__orphan(c, m, response_to);
		if (e) {
			e->x.error = res.error;
			e->x.code = res.code;
		}
		return e;
	}
	/* Of a stream of replies, the first failure tells. */
	if (res.error && !e->x.error) {
		e->x.error = 1;
		e->x.code = res.code;
	}
	l7msg__answer(c, e, m, !res.more);
	if (res.more)
		e->key = request_id;
	return e;
}

static const struct l7msg_proto mongo_proto = {
	.name = "mongodb",
	.hdr_min = HDR,
	.head = mongo_head,
	.done = mongo_done,
};

static void *mongo_new(unsigned flags)
{
	return l7msg__new(&mongo_proto, flags);
}

const struct l7_ops l7_mongo_ops = {
	.name = "mongodb",
	.title = "MongoDB",
	.new_conn = mongo_new,
	L7MSG_OPS,
};
