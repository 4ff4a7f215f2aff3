// SPDX-License-Identifier: Apache-2.0
/*
 * MySQL/MariaDB parser of one connection (see mysql.h and l7.h). Each direction frames
 * packets (header, payload prefix kept, continuations joined); a packet whose framing is not
 * yet confirmed is a candidate, validated by its first bytes before anything is believed.
 * Whole packets go to the phase they belong to: the handshake, a command (client), or the
 * response state machine (server), which knows what the pending command's answer looks like.
 * Exchanges live in one FIFO ring in request order.
 */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7.h"
#include "shipper/network/protocols/l7msg.h"
#include "shipper/network/protocols/mysql.h"

/* Enough to see a greeting's version string end (MariaDB's are long), or a statement's start. */
#define VALIDATE_LEN 96u
#define TEXT_CHECK 32u
#define MAX_PHYS 0xffffffu
#define NONE_CMD 0x100u

#define CLIENT_COMPRESS 0x20u
#define CLIENT_PROTOCOL_41 0x200u
#define CLIENT_SSL 0x800u
#define CLIENT_DEPRECATE_EOF (1u << 24)
#define CLIENT_ZSTD (1u << 26)
#define CLIENT_QUERY_ATTRIBUTES (1u << 27)

#define SERVER_MORE_RESULTS 0x0008u
#define SERVER_CURSOR_EXISTS 0x0040u
/* A MariaDB progress report is an ERR packet with this number. */
#define PROGRESS_ERRNO 0xffffu

_Static_assert((L7_MAX_PENDING & (L7_MAX_PENDING - 1)) == 0, "a power of two");
_Static_assert(MYSQL_PKT_KEEP >= VALIDATE_LEN, "validation looks at kept bytes only");

enum {
	COM_QUIT = 0x01,
	COM_INIT_DB = 0x02,
	COM_QUERY = 0x03,
	COM_FIELD_LIST = 0x04,
	COM_CREATE_DB = 0x05,
	COM_DROP_DB = 0x06,
	COM_STATISTICS = 0x09,
	COM_PROCESS_INFO = 0x0a,
	COM_PROCESS_KILL = 0x0c,
	COM_DEBUG = 0x0d,
	COM_PING = 0x0e,
	COM_CHANGE_USER = 0x11,
	COM_BINLOG_DUMP = 0x12,
	COM_STMT_PREPARE = 0x16,
	COM_STMT_EXECUTE = 0x17,
	COM_STMT_SEND_LONG_DATA = 0x18,
	COM_STMT_CLOSE = 0x19,
	COM_STMT_RESET = 0x1a,
	COM_SET_OPTION = 0x1b,
	COM_STMT_FETCH = 0x1c,
	COM_BINLOG_DUMP_GTID = 0x1e,
	COM_RESET_CONNECTION = 0x1f,
	COM_STMT_BULK_EXECUTE = 0xfa, /* MariaDB */
};

/* clang-format off */
static const char *const cmd_names[0x20] = {
	"COM_SLEEP",	     "COM_QUIT",	   "COM_INIT_DB",	  "COM_QUERY",
	"COM_FIELD_LIST",    "COM_CREATE_DB",	   "COM_DROP_DB",	  "COM_REFRESH",
	"COM_SHUTDOWN",	     "COM_STATISTICS",	   "COM_PROCESS_INFO",	  "COM_CONNECT",
	"COM_PROCESS_KILL",  "COM_DEBUG",	   "COM_PING",		  "COM_TIME",
	"COM_DELAYED_INSERT", "COM_CHANGE_USER",   "COM_BINLOG_DUMP",	  "COM_TABLE_DUMP",
	"COM_CONNECT_OUT",   "COM_REGISTER_SLAVE", "COM_STMT_PREPARE",	  "COM_STMT_EXECUTE",
	"COM_STMT_SEND_LONG_DATA", "COM_STMT_CLOSE", "COM_STMT_RESET",	  "COM_SET_OPTION",
	"COM_STMT_FETCH",    "COM_DAEMON",	   "COM_BINLOG_DUMP_GTID", "COM_RESET_CONNECTION",
};
/* clang-format on */

enum phase {
	P_START,     /* nothing validated yet */
	P_HANDSHAKE, /* greeting or HandshakeResponse seen, no OK/ERR yet */
	P_COMMAND,
	P_OFF, /* TLS or compression: nothing parsed any more */
};

/* What the server's next packet may be, for the response in progress. */
enum rstate {
	R_IDLE,
	R_FIRST,      /* OK, ERR, EOF, LOCAL INFILE or a result set's column count */
	R_COLDEFS,    /* `left` column definitions */
	R_EOF1,	      /* an EOF may end the definitions */
	R_ROWS,	      /* rows up to an EOF/OK with a 0xfe header, or an ERR */
	R_INFILE,     /* the client sends its file; then OK or ERR */
	R_AUTH,	      /* COM_CHANGE_USER: auth packets up to OK or ERR */
	R_ONE,	      /* one packet of any content (COM_STATISTICS) */
	R_UNTIL_END,  /* packets up to an EOF or ERR (COM_FIELD_LIST, binlog dumps) */
	R_PREP_FIRST, /* STMT_PREPARE_OK or ERR */
	R_PREP_PARAMS,
	R_PREP_EOF1, /* after the parameters: an EOF unless CLIENT_DEPRECATE_EOF */
	R_PREP_COLS,
	R_PREP_EOF2, /* after the columns: same */
	R_LOST,	     /* content unknown: ends with the next command or at close */
};

enum verdict {
	V_MORE,
	V_NO,
	V_YES,
};

struct entry {
	struct l7_exchange x;
	uint64_t id;  /* unique in the connection, never 0 */
	uint64_t seq; /* number of a request that expects a response, else 0 */
	uint16_t cmd;
	bool done;
	bool want_last; /* statement id -1: the one the pending prepare will make */
	uint64_t event; /* feed or loss that completed the request */
};

struct stmt {
	uint32_t id;
	bool used;
	bool cut;
	uint64_t used_at;
	char text[L7_TARGET_MAX + 1];
};

/* The framing's message is the logical packet: `remaining` is of its physical packet. */
struct dir {
	L7MSG_FRAME_HEAD;
	bool checked;	  /* the packet in progress is believed */
	bool cont;	  /* the physical packet in progress (or next) continues a logical one */
	uint8_t seq;	  /* of the logical packet's first physical packet */
	uint8_t phys_seq; /* of its last physical packet */
	uint32_t first_len;
	uint64_t total; /* payload bytes of the logical packet so far */
	uint64_t sink;	/* exchange that skipped bytes count to, 0 for none */
	size_t keep_len;
	uint8_t keep[MYSQL_PKT_KEEP];
};

struct mysql_conn {
	enum l7_role role;
	enum phase phase;
	struct l7_seg sg;
	int req_dir; /* direction of the client's packets, -1 unknown */
	bool compress_after_auth;
	bool saw_handshake;   /* a greeting or HandshakeResponse was validated */
	uint32_t server_caps; /* all bits until a greeting says */
	bool qattrs;
	uint32_t bad_unknown; /* failed starts while req_dir is unknown */
	/* the response in progress */
	enum rstate rst;
	uint64_t resp_id;
	uint64_t left;
	uint16_t prep_cols;
	uint64_t resp_last_ts;
	bool resp_trunc;
	uint64_t req_id;	/* latest request, for the client packets that follow it */
	uint8_t resp_first_seq; /* sequence id the answer to the latest command begins with */
	uint64_t req_seq;	/* requests expecting a response, dropped ones included */
	uint64_t resp_seq;	/* of those, answered (or dropped) */
	uint64_t next_id;
	uint64_t stmt_clock;
	uint32_t last_stmt;
	bool have_last_stmt;
	struct stmt *stmts;
	struct l7_ring q; /* of struct entry */
	struct l7_stats st;
	struct mysql_stats my;
	struct dir d[2];
};

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le24(const uint8_t *p)
{
	return le16(p) | (uint32_t)p[2] << 16;
}

static uint32_t le32(const uint8_t *p)
{
	return le24(p) | (uint32_t)p[3] << 24;
}

/* A length-encoded integer at p[0..n): bytes used, 0 if cut or not one (0xfb, 0xff). */
static size_t lenenc(const uint8_t *p, size_t n, uint64_t *ret)
{
	size_t k;

	if (!n || p[0] == 0xfb || p[0] == 0xff)
		return 0;
	if (p[0] < 0xfb) {
		*ret = p[0];
		return 1;
	}
	k = p[0] == 0xfc ? 2 : p[0] == 0xfd ? 3 : 8;
	if (n < 1 + k)
		return 0;
	*ret = 0;
	for (size_t i = k; i > 0; i--)
		*ret = *ret << 8 | p[i];
	return 1 + k;
}

/* --- the exchange ring --- */

static struct entry *ring_at(struct mysql_conn *c, unsigned i)
{
	return l7_ring__at(&c->q, sizeof(struct entry), i);
}

static struct entry *ring_push(struct mysql_conn *c)
{
	struct entry *e = l7_ring__push(&c->q, sizeof(*e), L7_MAX_PENDING, &c->st.alloc_failures);

	if (!e)
		return NULL;
	e->id = ++c->next_id;
	e->cmd = NONE_CMD;
	return e;
}

static struct entry *find_id(struct mysql_conn *c, uint64_t id)
{
	return l7_ring__find(&c->q, sizeof(struct entry), offsetof(struct entry, id), id);
}

static struct entry *find_seq(struct mysql_conn *c, uint64_t seq)
{
	return l7_ring__find(&c->q, sizeof(struct entry), offsetof(struct entry, seq), seq);
}

/* n bytes of direction di to exchange id, or to bytes_unattributed if it is gone or done. */
static void give(struct mysql_conn *c, uint64_t id, int di, uint64_t n)
{
	struct entry *e = find_id(c, id);

	if (!e || e->done) {
		c->st.bytes_unattributed += n;
		return;
	}
	if (di == e->x.req_dir)
		e->x.req_bytes += n;
	else
		e->x.resp_bytes += n;
}

/* Bytes of direction di skipped while its framing is lost: to what they interrupted. */
static void give_skipped(struct mysql_conn *c, int di, uint64_t n)
{
	struct dir *d = &c->d[di];

	give(c, d->sink, di, n);
	/* A response that ends unseen ends, as far as is known, with its last bytes. */
	if (d->sink && d->sink == c->resp_id)
		c->resp_last_ts = c->sg.ts[di];
}

static void complete(struct mysql_conn *c, struct entry *e)
{
	e->done = true;
	c->st.exchanges++;
	for (int i = 0; i < 2; i++)
		if (c->d[i].sink == e->id)
			c->d[i].sink = 0;
	if (c->req_id == e->id)
		c->req_id = 0;
}

/* --- prepared statements --- */

static struct stmt *stmt_find(struct mysql_conn *c, uint32_t id)
{
	for (unsigned i = 0; c->stmts && i < MYSQL_MAX_STMTS; i++)
		if (c->stmts[i].used && c->stmts[i].id == id)
			return &c->stmts[i];
	return NULL;
}

static void stmt_put(struct mysql_conn *c, uint32_t id, const char *text, bool cut)
{
	struct stmt *s = stmt_find(c, id);

	if (!c->stmts) {
		c->stmts = calloc(MYSQL_MAX_STMTS, sizeof(*c->stmts));
		if (!c->stmts) {
			c->st.alloc_failures++;
			return;
		}
	}
	for (unsigned i = 0; !s && i < MYSQL_MAX_STMTS; i++)
		if (!c->stmts[i].used)
			s = &c->stmts[i];
	if (!s) {
		s = &c->stmts[0];
		for (unsigned i = 1; i < MYSQL_MAX_STMTS; i++)
			if (c->stmts[i].used_at < s->used_at)
				s = &c->stmts[i];
		c->my.stmts_evicted++;
	}
	s->id = id;
	s->used = true;
	s->cut = cut;
	s->used_at = ++c->stmt_clock;
	memcpy(s->text, text, sizeof(s->text));
	s->text[L7_TARGET_MAX] = '\0';
	c->last_stmt = id;
	c->have_last_stmt = true;
}

/* Commands sent with statement id -1 after the prepare e, before its answer, use its text. */
static void last_stmt_users(struct mysql_conn *c, const struct entry *e)
{
	for (unsigned i = 0; i < c->q.count; i++) {
		struct entry *u = ring_at(c, i);

		if (!u->want_last || u->id < e->id)
			continue;
		u->want_last = false;
		memcpy(u->x.target, e->x.target, sizeof(u->x.target));
		u->x.flags |= e->x.flags & L7_F_TARGET_TRUNCATED;
	}
}

static bool is_stmt_cmd(unsigned cmd)
{
	return cmd == COM_STMT_EXECUTE || cmd == COM_STMT_SEND_LONG_DATA || cmd == COM_STMT_CLOSE ||
	       cmd == COM_STMT_RESET || cmd == COM_STMT_FETCH || cmd == COM_STMT_BULK_EXECUTE;
}

/* --- validation of candidate first packets --- */

static bool is_ws(uint8_t b)
{
	return b == '\t' || b == '\r' || b == '\n';
}

/* Statement text: no control bytes but tab, CR and LF (UTF-8 and other bytes pass). */
static bool text_ok(const uint8_t *p, size_t n)
{
	if (n > TEXT_CHECK)
		n = TEXT_CHECK;
	for (size_t i = 0; i < n; i++)
		if ((p[i] < 0x20 && !is_ws(p[i])) || p[i] == 0x7f)
			return false;
	return true;
}

/* Query attributes with no parameters: a count 0 and a parameter set count 1. */
static size_t qattr_skip(const uint8_t *p, size_t n)
{
	return n >= 3 && p[1] == 0x00 && p[2] == 0x01 ? 2 : 0;
}

/* A command packet of len payload bytes, p[0..n) captured. */
static enum verdict looks_command(const uint8_t *p, size_t n, uint64_t len, bool final)
{
	size_t need = len < VALIDATE_LEN ? (size_t)len : VALIDATE_LEN, k;

	if (n < need && !final)
		return V_MORE;
	/* The same bytes decide however the packet arrived. */
	if (n > need)
		n = need;
	if (!n)
		return V_NO;
	switch (p[0]) {
	case COM_QUIT:
	case COM_STATISTICS:
	case COM_PROCESS_INFO:
	case COM_DEBUG:
	case COM_PING:
	case COM_RESET_CONNECTION:
		return len == 1 ? V_YES : V_NO;
	case COM_STMT_CLOSE:
	case COM_STMT_RESET:
	case COM_PROCESS_KILL:
		return len == 5 ? V_YES : V_NO;
	case COM_SET_OPTION:
		return len == 3 ? V_YES : V_NO;
	case COM_STMT_FETCH:
		return len == 9 ? V_YES : V_NO;
	case COM_STMT_SEND_LONG_DATA:
		return len >= 7 ? V_YES : V_NO;
	case COM_STMT_EXECUTE:
		/* id, cursor flags, iteration count 1 */
		if (len < 10 || n < 10)
			return V_NO;
		return (p[5] & 0x70) == 0 && le32(p + 6) == 1 ? V_YES : V_NO;
	case COM_QUERY:
	case COM_STMT_PREPARE:
	case COM_INIT_DB:
		k = p[0] == COM_QUERY ? qattr_skip(p, n) : 0;
		if (len < 2 + k || n < 2 + k)
			return V_NO;
		return text_ok(p + 1 + k, n - 1 - k) ? V_YES : V_NO;
	default:
		return V_NO;
	}
}

/* Protocol 10: 0x0a, a printable version string and its NUL, connection id, salt... */
static enum verdict looks_greeting(const uint8_t *p, size_t n, uint64_t len, bool final)
{
	size_t need = len < VALIDATE_LEN ? (size_t)len : VALIDATE_LEN;

	if (n < need && !final)
		return V_MORE;
	/* The same bytes decide however the packet arrived. */
	if (n > need)
		n = need;
	if (!n || p[0] != 0x0a || len < 32 || len > 1024)
		return V_NO;
	for (size_t i = 1; i < n; i++) {
		if (!p[i])
			return i > 1 ? V_YES : V_NO;
		if (p[i] < 0x20 || p[i] >= 0x7f)
			return V_NO;
	}
	return V_NO;
}

/* HandshakeResponse41 (or SSLRequest): capabilities, max packet, charset, 23 filler bytes. */
static enum verdict looks_hsresp(const uint8_t *p, size_t n, uint64_t len, bool final)
{
	if (n < 32 && !final && len >= 32)
		return V_MORE;
	if (len < 32 || n < 32 || !(le32(p) & CLIENT_PROTOCOL_41))
		return V_NO;
	/* MariaDB keeps its extended capabilities in the filler's last 4 bytes. */
	for (size_t i = 9; i < 28; i++)
		if (p[i])
			return V_NO;
	return V_YES;
}

/* OK, ERR, EOF, LOCAL INFILE or a column count: not a 3-byte count (over 65535 columns). */
static bool resp_start_byte(uint8_t b)
{
	return b != 0xfd;
}

/*
 * The server's framing was lost and is found again at the answer to the latest command:
 * the commands before it, one at a time, were answered in what was not seen.
 */
static void answers_lost(struct mysql_conn *c, uint64_t ts)
{
	while (c->resp_seq + 1 < c->req_seq) {
		struct entry *e = find_seq(c, ++c->resp_seq);

		if (!e || e->done)
			continue;
		e->x.flags |= L7_F_NO_RESPONSE;
		e->x.end_ns = ts;
		e->done = true;
		c->st.unanswered++;
		c->st.exchanges++;
	}
}

static void set_req_dir(struct mysql_conn *c, int di)
{
	c->req_dir = di;
	c->role = di == L7_EGRESS ? L7_ROLE_CLIENT : L7_ROLE_SERVER;
}

static enum verdict validate(struct mysql_conn *c, int di, bool final)
{
	struct dir *d = &c->d[di];
	const uint8_t *p = d->keep;
	size_t n = d->keep_len;
	uint64_t len = d->first_len;
	uint64_t wire = len + 4;
	bool may_client = c->req_dir < 0 || c->req_dir == di;
	bool may_server = c->req_dir < 0 || c->req_dir != di;
	bool more = false;
	enum verdict v;

	if (!d->started)
		return final ? V_NO : V_MORE;

	if (may_server && c->phase == P_START && d->seq == 0 &&
	    (!d->resync || wire == d->seg_actual)) {
		v = looks_greeting(p, n, len, final);
		if (v == V_YES) {
			set_req_dir(c, !di);
			c->phase = P_HANDSHAKE;
			c->saw_handshake = true;
			return V_YES;
		}
		more |= v == V_MORE;
	}
	if (may_client && c->phase <= P_HANDSHAKE && (d->seq == 1 || d->seq == 2) &&
	    (!d->resync || wire == d->seg_actual)) {
		v = looks_hsresp(p, n, len, final);
		if (v == V_YES) {
			set_req_dir(c, di);
			c->phase = P_HANDSHAKE;
			c->saw_handshake = true;
			return V_YES;
		}
		more |= v == V_MORE;
	}
	if (may_client && d->seq == 0 && (!d->resync || wire == d->seg_actual)) {
		v = looks_command(p, n, len, final);
		if (v == V_YES) {
			set_req_dir(c, di);
			if (c->phase == P_START)
				c->phase = P_COMMAND;
			c->my.midstream_syncs += !c->saw_handshake;
			return V_YES;
		}
		more |= v == V_MORE;
	}
	if (may_server && c->req_dir >= 0 && (!d->resync || wire <= d->seg_actual)) {
		if (!n && !final)
			return V_MORE;
		if (c->phase == P_COMMAND && d->seq == c->resp_first_seq &&
		    c->resp_seq < c->req_seq && n && resp_start_byte(p[0])) {
			c->my.midstream_syncs += !c->saw_handshake;
			if (d->resync)
				answers_lost(c, d->start_ns);
			return V_YES;
		}
		if (c->phase == P_HANDSHAKE && d->seq >= 2 && n &&
		    (p[0] == 0x00 || p[0] == 0xff || p[0] == 0xfe || p[0] == 0x01))
			return V_YES;
	}
	return more && !final ? V_MORE : V_NO;
}

/* --- responses --- */

static void start_skip(struct mysql_conn *c, int di);
static void set_off(struct mysql_conn *c);

/* The response in progress ends; its exchange (if any) completes at end_ns. */
static void resp_end(struct mysql_conn *c, int32_t code, bool error, uint64_t end_ns)
{
	struct entry *e = find_id(c, c->resp_id);

	if (e) {
		e->x.code = code;
		e->x.error = error;
		e->x.end_ns = end_ns;
		if (c->resp_trunc)
			e->x.flags |= L7_F_RESP_TRUNCATED;
		complete(c, e);
	}
	c->rst = R_IDLE;
	c->resp_id = 0;
	c->resp_trunc = false;
}

static bool maybe_eof_state(enum rstate r)
{
	return r == R_PREP_EOF1 || r == R_PREP_EOF2;
}

/* A response packet of dir d is an EOF packet (not an OK with a 0xfe header). */
static bool is_eof(const struct dir *d)
{
	return d->keep_len && d->keep[0] == 0xfe && d->first_len < 7;
}

/* Status flags of an OK (0x00 or 0xfe header) or EOF packet; 0 if not captured. */
static uint32_t end_status(const struct dir *d)
{
	const uint8_t *p = d->keep;
	size_t n = d->keep_len, off = 1, k;
	uint64_t v;

	if (is_eof(d))
		return n >= 5 ? le16(p + 3) : 0;
	for (int i = 0; i < 2; i++) {
		k = lenenc(p + off, off < n ? n - off : 0, &v);
		if (!k)
			return 0;
		off += k;
	}
	return off + 2 <= n ? le16(p + off) : 0;
}

static void resp_begin(struct mysql_conn *c, int di, uint64_t start_ns, uint64_t start_event)
{
	struct entry *e = NULL;
	unsigned cmd = NONE_CMD;

	c->st.responses++;
	if (c->resp_seq < c->req_seq)
		e = find_seq(c, c->resp_seq + 1);
	/* A packet that began before the command was complete does not answer it. */
	if (c->resp_seq < c->req_seq && !(e && e->event > start_event)) {
		c->resp_seq++;
		if (!e)
			c->st.responses_dropped++;
	} else {
		e = NULL;
		c->st.orphan_responses++;
		e = ring_push(c);
		if (!e) {
			c->st.responses_dropped++;
		} else {
			e->x.flags = L7_F_NO_REQUEST;
			e->x.start_ns = start_ns;
			e->x.req_dir = (uint8_t)!di;
		}
	}
	if (e)
		cmd = e->cmd;
	switch (cmd) {
	case COM_STMT_PREPARE:
		c->rst = R_PREP_FIRST;
		break;
	case COM_STATISTICS:
		c->rst = R_ONE;
		break;
	case COM_FIELD_LIST:
	case COM_BINLOG_DUMP:
	case COM_BINLOG_DUMP_GTID:
		c->rst = R_UNTIL_END;
		break;
	case COM_CHANGE_USER:
		c->rst = R_AUTH;
		break;
	case COM_STMT_FETCH:
		c->rst = R_ROWS;
		break;
	default:
		c->rst = R_FIRST;
	}
	c->resp_id = e ? e->id : 0;
	c->resp_trunc = false;
	c->left = 0;
}

static void learn_deprecate(struct mysql_conn *c, bool v)
{
	if (c->my.deprecate_eof < 0)
		c->my.deprecate_eof = v;
}

/* An OK or ERR that may be followed by more results (or a progress report: nothing). */
static void result_end(struct mysql_conn *c, const struct dir *d, uint64_t ts)
{
	if (end_status(d) & SERVER_MORE_RESULTS)
		c->rst = R_FIRST;
	else
		resp_end(c, 0, false, ts);
}

static void err_packet(struct mysql_conn *c, const struct dir *d, uint64_t ts)
{
	uint32_t no = d->keep_len >= 3 ? le16(d->keep + 1) : 0;

	if (no == PROGRESS_ERRNO) {
		c->my.progress_reports++;
		return;
	}
	resp_end(c, (int32_t)no, true, ts);
}

static void first_packet(struct mysql_conn *c, const struct dir *d, uint64_t ts)
{
	const uint8_t *p = d->keep;
	uint64_t cols;
	size_t k;

	switch (p[0]) {
	case 0x00:
		result_end(c, d, ts);
		return;
	case 0xff:
		err_packet(c, d, ts);
		return;
	case 0xfe:
		/* EOF: the answer to COM_SET_OPTION, COM_DEBUG, COM_SHUTDOWN */
		if (is_eof(d) && (end_status(d) & SERVER_MORE_RESULTS))
			return;
		resp_end(c, 0, false, ts);
		return;
	case 0xfb:
		c->my.local_infile++;
		c->rst = R_INFILE;
		return;
	}
	k = lenenc(p, d->keep_len, &cols);
	if (!k || !cols) {
		c->st.malformed++;
		c->resp_trunc = true;
		c->rst = R_LOST;
		return;
	}
	/* A metadata-follows byte of 0: no definitions and no EOF (MariaDB cache, MySQL). */
	if (d->total > k && d->keep_len > k && p[k] == 0) {
		c->rst = R_ROWS;
		return;
	}
	c->left = cols;
	c->rst = R_COLDEFS;
}

static void rows_packet(struct mysql_conn *c, const struct dir *d, uint64_t ts)
{
	if (d->keep[0] == 0xfe && d->first_len < MAX_PHYS)
		result_end(c, d, ts);
	else if (d->keep[0] == 0xff)
		err_packet(c, d, ts);
}

static void prep_next(struct mysql_conn *c, enum rstate after, uint64_t ts)
{
	if (after == R_PREP_COLS && c->prep_cols) {
		c->left = c->prep_cols;
		c->rst = R_PREP_COLS;
	} else {
		resp_end(c, 0, false, ts);
	}
}

/* One packet of a response; p[0] exists. */
static void resp_step(struct mysql_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];
	const uint8_t *p = d->keep;
	struct entry *e;

	switch (c->rst) {
	case R_IDLE:
	case R_FIRST:
		first_packet(c, d, ts);
		return;
	case R_COLDEFS:
		if (p[0] == 0xff) {
			err_packet(c, d, ts);
			return;
		}
		if (!--c->left)
			c->rst = R_EOF1;
		return;
	case R_EOF1:
		if (is_eof(d)) {
			learn_deprecate(c, false);
			if (end_status(d) & SERVER_CURSOR_EXISTS)
				resp_end(c, 0, false, ts);
			else
				c->rst = R_ROWS;
			return;
		}
		learn_deprecate(c, true);
		c->rst = R_ROWS;
		rows_packet(c, d, ts);
		return;
	case R_ROWS:
		rows_packet(c, d, ts);
		return;
	case R_INFILE:
		if (p[0] == 0x00)
			result_end(c, d, ts);
		else if (p[0] == 0xff)
			err_packet(c, d, ts);
		else
			c->st.malformed++;
		return;
	case R_AUTH:
		if (p[0] == 0x00)
			resp_end(c, 0, false, ts);
		else if (p[0] == 0xff)
			err_packet(c, d, ts);
		return;
	case R_ONE:
		if (p[0] == 0xff)
			err_packet(c, d, ts);
		else
			resp_end(c, 0, false, ts);
		return;
	case R_UNTIL_END:
		if (p[0] == 0xff)
			err_packet(c, d, ts);
		else if (is_eof(d))
			resp_end(c, 0, false, ts);
		return;
	case R_PREP_FIRST:
		if (p[0] == 0xff) {
			err_packet(c, d, ts);
			return;
		}
		if (p[0] != 0x00 || d->keep_len < 9) {
			c->st.malformed++;
			c->resp_trunc = true;
			c->rst = R_LOST;
			return;
		}
		e = find_id(c, c->resp_id);
		if (e) {
			stmt_put(c, le32(p + 1), e->x.target, e->x.flags & L7_F_TARGET_TRUNCATED);
			last_stmt_users(c, e);
		}
		c->prep_cols = (uint16_t)le16(p + 5);
		c->left = le16(p + 7);
		if (c->left)
			c->rst = R_PREP_PARAMS;
		else
			prep_next(c, R_PREP_COLS, ts);
		return;
	case R_PREP_PARAMS:
		if (--c->left)
			return;
		if (c->my.deprecate_eof == 1)
			prep_next(c, R_PREP_COLS, ts);
		else
			c->rst = R_PREP_EOF1;
		return;
	case R_PREP_COLS:
		if (--c->left)
			return;
		if (c->my.deprecate_eof == 1)
			resp_end(c, 0, false, ts);
		else
			c->rst = R_PREP_EOF2;
		return;
	case R_PREP_EOF1:
	case R_PREP_EOF2:
		/* Only an EOF comes here (see server_packet). */
		learn_deprecate(c, false);
		prep_next(c, c->rst == R_PREP_EOF1 ? R_PREP_COLS : R_IDLE, ts);
		return;
	case R_LOST:
		return;
	}
}

/* The server's capabilities: what the client asks for is not always what it gets. */
static void greeting_caps(struct mysql_conn *c, const struct dir *d)
{
	const uint8_t *p = d->keep, *nul = memchr(p, 0, d->keep_len);
	size_t off;

	if (!nul)
		return;
	/* version NUL, connection id, 8 bytes of salt, a filler: the capabilities' low half */
	off = (size_t)(nul - p) + 1 + 4 + 8 + 1;
	if (off + 2 > d->keep_len)
		return;
	c->server_caps = le16(p + off);
	/* then the charset and the status: the high half */
	if (off + 7 <= d->keep_len)
		c->server_caps |= le16(p + off + 5) << 16;
	else if (d->keep_len < d->total)
		c->server_caps |= 0xffff0000u; /* not captured: anything goes */
}

/* A whole server packet of `bytes` wire bytes (dir d's prefix). */
static void server_packet(struct mysql_conn *c, int di, uint64_t ts, uint64_t bytes)
{
	struct dir *d = &c->d[di];

	if (c->phase == P_HANDSHAKE) {
		c->st.bytes_unattributed += bytes;
		if (!d->seq && d->keep_len && d->keep[0] == 0x0a) {
			greeting_caps(c, d);
			return;
		}
		/* The OK or ERR that ends authentication. */
		if (d->seq && d->keep_len && (d->keep[0] == 0x00 || d->keep[0] == 0xff)) {
			c->phase = P_COMMAND;
			if (d->keep[0] == 0x00 && c->compress_after_auth) {
				c->my.compressed++;
				set_off(c);
			}
		}
		return;
	}
	/* Where an EOF may follow but something else came, it was CLIENT_DEPRECATE_EOF. */
	if (maybe_eof_state(c->rst) && d->keep_len && !is_eof(d)) {
		learn_deprecate(c, true);
		if (c->rst == R_PREP_EOF1 && c->prep_cols) {
			c->left = c->prep_cols;
			c->rst = R_PREP_COLS;
		} else {
			resp_end(c, 0, false, c->resp_last_ts);
		}
	}
	if (c->rst == R_IDLE)
		resp_begin(c, di, d->start_ns, d->start_event);
	give(c, c->resp_id, di, bytes);
	c->resp_last_ts = ts;
	if (d->trunc)
		c->resp_trunc = true;
	if (!d->keep_len) {
		/* Nothing of it captured (or an empty packet): what it was is unknown. */
		c->st.malformed += !d->total;
		c->resp_trunc = true;
		c->rst = R_LOST;
		return;
	}
	resp_step(c, di, ts);
}

/* --- requests --- */

static bool prepare_pending(struct mysql_conn *c)
{
	for (unsigned i = 0; i < c->q.count; i++)
		if (!ring_at(c, i)->done && ring_at(c, i)->cmd == COM_STMT_PREPARE)
			return true;
	return false;
}

static void op_target(struct mysql_conn *c, struct entry *e, const struct dir *d)
{
	const uint8_t *p = d->keep;
	size_t n = d->keep_len, k = 0;
	uint64_t full = d->total ? d->total - 1 : 0;
	unsigned cmd = p[0];
	const char *name = cmd < 0x20			  ? cmd_names[cmd]
			   : cmd == COM_STMT_BULK_EXECUTE ? "COM_STMT_BULK_EXECUTE"
							  : NULL;
	struct stmt *s;

	if (!name) {
		name = "COM_UNKNOWN";
		c->st.malformed++;
	}
	memcpy(e->x.op, name, strlen(name) + 1);
	switch (cmd) {
	case COM_QUERY:
		/*
		 * A client may announce query attributes to a server without them (mysql2 to
		 * MariaDB) and the greeting may not have been seen: text never begins with a
		 * control byte, a parameter count below 32 does.
		 */
		if (c->qattrs && n > 1 && (p[1] >= 0xfb || (p[1] < 0x20 && !is_ws(p[1])))) {
			uint64_t params = 0, sets;
			size_t a = lenenc(p + 1, n - 1, &params), b = 0;

			if (a)
				b = lenenc(p + 1 + a, n - 1 - a, &sets);
			/* Parameters come before the text: not looked through. */
			if (!a || !b || params)
				break;
			k = a + b;
		} else {
			k = qattr_skip(p, n);
		}
		/* fall through */
	case COM_STMT_PREPARE:
	case COM_INIT_DB:
	case COM_CREATE_DB:
	case COM_DROP_DB:
	case COM_FIELD_LIST:
		if (n < 1 + k)
			break;
		n -= 1 + k;
		full = full > k ? full - k : 0;
		if (cmd == COM_FIELD_LIST) {
			const uint8_t *nul = memchr(p + 1, 0, n);

			if (nul)
				n = full = (size_t)(nul - p - 1);
		}
		if (l7__copy_str(e->x.target, sizeof(e->x.target), p + 1 + k, n) || n < full)
			e->x.flags |= L7_F_TARGET_TRUNCATED;
		break;
	default:
		if (!is_stmt_cmd(cmd) || n < 5)
			break;
		/* MariaDB's pipelined prepare and execute: id -1 is the statement last prepared. */
		if (le32(p + 1) == 0xffffffffu && prepare_pending(c)) {
			e->want_last = true;
			break;
		}
		s = stmt_find(c, le32(p + 1));
		if (!s && le32(p + 1) == 0xffffffffu && c->have_last_stmt)
			s = stmt_find(c, c->last_stmt);
		if (!s) {
			c->my.stmts_unknown++;
			break;
		}
		s->used_at = ++c->stmt_clock;
		memcpy(e->x.target, s->text, sizeof(e->x.target));
		if (s->cut)
			e->x.flags |= L7_F_TARGET_TRUNCATED;
		break;
	}
}

static void stmt_drop(struct mysql_conn *c, const struct dir *d)
{
	struct stmt *s;

	if (d->keep_len < 5)
		return;
	s = stmt_find(c, le32(d->keep + 1));
	if (s)
		s->used = false;
}

/* Bytes that went to the message in progress of direction di. */
static uint64_t cur_sink(const struct mysql_conn *c, int di)
{
	if (c->req_dir < 0)
		return 0;
	return di == c->req_dir ? c->req_id : c->resp_id;
}

/* A command ends a response still in progress: the protocol answers one at a time. */
static void end_open_response(struct mysql_conn *c)
{
	int sdi = !c->req_dir;
	struct dir *s = &c->d[sdi];

	if (c->rst == R_IDLE)
		return;
	if (maybe_eof_state(c->rst)) {
		learn_deprecate(c, true);
		resp_end(c, 0, false, c->resp_last_ts);
		return;
	}
	if (s->synced && (s->st == L7MSG_FR_BODY || s->cont || s->hdr_len)) {
		/* The response's framing was wrong: the packet in progress is its own. */
		give(c, c->resp_id, sdi, s->bytes);
		s->bytes = 0;
		start_skip(c, sdi);
	}
	c->resp_trunc = true;
	resp_end(c, 0, false, c->resp_last_ts);
}

static void new_command(struct mysql_conn *c, int di, uint64_t ts, uint64_t bytes)
{
	struct dir *d = &c->d[di];
	unsigned cmd = d->keep[0];
	bool no_reply = cmd == COM_QUIT || cmd == COM_STMT_CLOSE || cmd == COM_STMT_SEND_LONG_DATA;
	struct entry *e;

	end_open_response(c);
	c->resp_first_seq = (uint8_t)(d->phys_seq + 1);
	c->st.requests++;
	e = ring_push(c);
	if (!e) {
		c->st.requests_dropped++;
		c->st.bytes_unattributed += bytes;
		if (!no_reply)
			c->req_seq++;
		c->req_id = 0;
		if (cmd == COM_STMT_CLOSE)
			stmt_drop(c, d);
		return;
	}
	e->cmd = (uint16_t)cmd;
	e->event = c->sg.events;
	l7msg__frame_request(&e->x, &d->f, di, bytes);
	op_target(c, e, d);
	if (cmd == COM_STMT_CLOSE)
		stmt_drop(c, d);
	c->req_id = e->id;
	if (no_reply) {
		e->x.flags |= L7_F_NO_REPLY_EXPECTED;
		e->x.end_ns = ts;
		complete(c, e);
	} else {
		e->seq = ++c->req_seq;
	}
}

/* A whole client packet of `bytes` wire bytes (dir d's prefix). */
static void client_packet(struct mysql_conn *c, int di, uint64_t ts, uint64_t bytes)
{
	struct dir *d = &c->d[di];

	if (c->phase == P_HANDSHAKE && d->seq) {
		c->st.bytes_unattributed += bytes;
		if ((d->seq == 1 || d->seq == 2) && d->total >= 32 && d->keep_len >= 32 &&
		    (le32(d->keep) & CLIENT_PROTOCOL_41)) {
			uint32_t caps = le32(d->keep) & c->server_caps;

			c->my.deprecate_eof = !!(caps & CLIENT_DEPRECATE_EOF);
			c->qattrs = caps & CLIENT_QUERY_ATTRIBUTES;
			if (d->total == 32 && (caps & CLIENT_SSL)) {
				c->my.tls_upgrades++;
				set_off(c);
				return;
			}
			c->compress_after_auth = caps & (CLIENT_COMPRESS | CLIENT_ZSTD);
		}
		return;
	}
	if (d->seq) {
		/* LOCAL INFILE data, COM_CHANGE_USER's auth: part of the request before. */
		give(c, c->req_id, di, bytes);
		return;
	}
	/* A command (if still in the handshake, its end was not seen). */
	c->phase = P_COMMAND;
	if (!d->keep_len) {
		c->st.malformed++;
		c->st.bytes_unattributed += bytes;
		return;
	}
	new_command(c, di, ts, bytes);
}

/* --- one direction's framing --- */

static void pkt_reset(struct dir *d)
{
	l7msg__frame_reset(&d->f);
	d->cont = false;
	d->checked = false;
	d->total = 0;
	d->keep_len = 0;
	d->first_len = 0;
	d->seq = 0;
}

static const struct l7msg_frame_ops frame_ops;

static void set_off(struct mysql_conn *c)
{
	c->phase = P_OFF;
	c->st.bytes_unattributed += l7msg__frames_stop(c, &c->d[0].f, &c->d[1].f, &frame_ops);
}

/* The direction lost its framing: skip to a later segment start. */
static void start_skip(struct mysql_conn *c, int di)
{
	struct dir *d = &c->d[di];

	if (d->synced)
		c->st.resyncs++;
	d->sink = cur_sink(c, di);
	d->synced = false;
	d->resync = false;
	pkt_reset(d);
	d->st = L7MSG_FR_SKIP;
}

/* A packet ended (whole, or cut with what was captured): to its phase. */
static void packet_done(struct mysql_conn *c, int di, uint64_t ts)
{
	struct dir *d = &c->d[di];
	uint64_t bytes = d->bytes;

	d->bytes = 0;
	if (c->phase == P_OFF || c->req_dir < 0)
		c->st.bytes_unattributed += bytes;
	else if (di == c->req_dir)
		client_packet(c, di, ts, bytes);
	else
		server_packet(c, di, ts, bytes);
	if (d->st != L7MSG_FR_DEAD && d->st != L7MSG_FR_SKIP) {
		pkt_reset(d);
		d->st = L7MSG_FR_HDR;
	}
}

/* Checks the candidate in progress; false if it was refused (the direction then skips). */
static bool candidate_check(struct mysql_conn *c, int di, bool final)
{
	struct dir *d = &c->d[di];
	enum verdict v = validate(c, di, final);

	if (v == V_MORE)
		return true;
	if (v == V_YES) {
		d->checked = true;
		d->synced = true;
		d->resync = false;
		return true;
	}
	c->my.bad_starts++;
	give_skipped(c, di, d->bytes);
	pkt_reset(d);
	d->st = L7MSG_FR_SKIP;
	d->resync = false;
	if (c->req_dir < 0 && ++c->bad_unknown >= MYSQL_MAX_BAD_STARTS) {
		c->st.bytes_unattributed +=
			l7msg__frames_stop(c, &c->d[0].f, &c->d[1].f, &frame_ops);
		c->st.dirs_abandoned += 2;
	}
	return false;
}

static void phys_end(void *cv, int di, uint64_t ts)
{
	struct mysql_conn *c = cv;
	struct dir *d = &c->d[di];

	if (d->cont) {
		d->st = L7MSG_FR_HDR;
		return;
	}
	if (!d->checked && !candidate_check(c, di, true))
		return;
	packet_done(c, di, ts);
}

static void header_done(void *cv, int di, uint64_t ts)
{
	struct mysql_conn *c = cv;
	struct dir *d = &c->d[di];
	uint32_t len = le24(d->hdr);

	d->hdr_len = 0;
	d->phys_seq = d->hdr[3];
	if (!d->started) {
		d->started = true;
		d->seq = d->hdr[3];
		d->first_len = len;
		d->checked = d->synced;
	}
	d->cont = len == MAX_PHYS;
	d->remaining = len;
	d->st = L7MSG_FR_BODY;
	if (!len)
		phys_end(c, di, ts);
}

static void dir_reset(void *cv, int di)
{
	struct mysql_conn *c = cv;

	pkt_reset(&c->d[di]);
}

static bool body_bytes(void *cv, int di, const uint8_t *p, size_t k)
{
	struct mysql_conn *c = cv;
	struct dir *d = &c->d[di];

	l7__take(d->keep, &d->keep_len, MYSQL_PKT_KEEP, p, k);
	d->total += k;
	return d->checked || candidate_check(c, di, false);
}

/* Bytes of a direction skipping go to what they interrupted; of a dead one, to none. */
static void skipped(void *cv, int di, uint64_t n)
{
	struct mysql_conn *c = cv;

	if (c->d[di].st == L7MSG_FR_DEAD)
		c->st.bytes_unattributed += n;
	else
		give_skipped(c, di, n);
}

/* A resynchronizing candidate shows what it is within its own segment. */
static void seg_end(void *cv, int di)
{
	struct mysql_conn *c = cv;
	struct dir *d = &c->d[di];

	if (d->resync && !d->checked && (d->st == L7MSG_FR_HDR || d->st == L7MSG_FR_BODY))
		candidate_check(c, di, true);
}

L7MSG_DEFINE_FRAMES(struct mysql_conn, 4, phys_end)

static void dir_skip(void *cv, int di, uint64_t n, bool known, uint64_t ts)
{
	struct mysql_conn *c = cv;
	struct dir *d = &c->d[di];

	switch (d->st) {
	case L7MSG_FR_DEAD:
	case L7MSG_FR_SKIP:
		skipped(c, di, n);
		return;
	case L7MSG_FR_BODY:
		if (known && n <= d->remaining) {
			d->bytes += n;
			d->total += n;
			d->remaining -= n;
			d->trunc = true;
			if (!d->checked && !candidate_check(c, di, true))
				return;
			if (!d->remaining)
				phys_end(c, di, ts);
			return;
		}
		if (known) {
			d->bytes += d->remaining;
			d->total += d->remaining;
			n -= d->remaining;
		}
		/* Cut here: what was captured of it still says what it was. */
		d->remaining = 0;
		d->trunc = true;
		d->cont = false;
		if (d->checked || candidate_check(c, di, true))
			packet_done(c, di, ts);
		break;
	case L7MSG_FR_HDR:
		if (d->cont && d->checked) {
			d->trunc = true;
			d->cont = false;
			packet_done(c, di, ts);
		} else {
			/* A header cut short, the candidate's first bytes: to what was going on. */
			give(c, d->checked || d->synced ? cur_sink(c, di) : d->sink, di, d->bytes);
			d->bytes = 0;
		}
		break;
	}
	/* Framing is lost: what the gap held is not known. */
	if (d->st != L7MSG_FR_DEAD && d->st != L7MSG_FR_SKIP)
		start_skip(c, di);
	skipped(c, di, n);
}

/* --- l7_ops --- */

static void *mysql_new(unsigned flags)
{
	struct mysql_conn *c = l7__stream_new(sizeof(*c), flags);

	if (!c)
		return NULL;
	c->req_dir = -1;
	c->server_caps = 0xffffffffu;
	c->my.deprecate_eof = -1;
	return c;
}

static void mysql_free(void *p)
{
	struct mysql_conn *c = p;

	if (!c)
		return;
	free(c->stmts);
	free(c->q.v);
	free(c);
}

static const struct l7_seg_ops seg_ops = {
	.read = dir_feed,
	.skip = dir_skip,
	.read_empty = true, /* a segment, empty too, ends a resynchronizing candidate */
};

L7_DEFINE_SEG(static, mysql, struct mysql_conn)

/* Ends what direction di has in progress: a packet that can be believed is processed cut. */
static void dir_close(struct mysql_conn *c, int di)
{
	struct dir *d = &c->d[di];

	if (d->st == L7MSG_FR_DEAD)
		return;
	if (d->st == L7MSG_FR_BODY || d->cont) {
		d->trunc = true;
		d->cont = false;
		if (d->checked || candidate_check(c, di, true))
			packet_done(c, di, c->sg.ts[di]);
	} else if (d->st == L7MSG_FR_HDR) {
		give(c, d->synced ? cur_sink(c, di) : d->sink, di, d->bytes);
	}
	pkt_reset(d);
	d->st = L7MSG_FR_DEAD;
}

static void mysql_close(void *p, uint64_t ts_ns)
{
	struct mysql_conn *c = p;
	int first = c && c->req_dir >= 0 ? c->req_dir : L7_EGRESS;

	if (!c || c->sg.closed)
		return;
	/* What close completes comes after every segment. */
	c->sg.events++;
	/* The request side first, so that a request cut by the close is there to answer. */
	dir_close(c, first);
	dir_close(c, !first);
	if (c->rst != R_IDLE) {
		if (!maybe_eof_state(c->rst))
			c->resp_trunc = true;
		resp_end(c, 0, false, c->resp_last_ts);
	}
	for (unsigned i = 0; i < c->q.count; i++) {
		struct entry *e = ring_at(c, i);

		if (e->done)
			continue;
		e->x.flags |= L7_F_NO_RESPONSE;
		e->x.end_ns = ts_ns;
		e->done = true;
		c->st.unanswered++;
		c->st.exchanges++;
	}
	c->sg.closed = true;
}

static int mysql_next(void *p, struct l7_exchange *ret)
{
	struct mysql_conn *c = p;
	struct entry *e = c ? l7_ring__pop_done(&c->q, sizeof(*e), offsetof(struct entry, done))
			    : NULL;

	if (e && ret)
		*ret = e->x;
	return e != NULL;
}

L7_DEFINE_GETTERS(mysql, struct mysql_conn)

int mysql__stats(const void *p, struct mysql_stats *ret)
{
	const struct mysql_conn *c = p;

	if (!c || !ret)
		return -EINVAL;
	*ret = c->my;
	return 0;
}

const struct l7_ops l7_mysql_ops = {
	.name = "mysql",
	.title = "MySQL",
	L7_OPS_OF(mysql),
};
