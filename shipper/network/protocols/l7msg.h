/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: what the length-prefixed protocols of shipper/network/protocols/l7.h (MongoDB, Kafka) share:
 * framing of each direction by a length at a message's start, the bounded prefix of a message
 * its parser reads, gaps, losses and resynchronization, and the ring of exchanges paired by
 * an id the response carries (MongoDB responseTo, Kafka correlation id), not in FIFO order.
 * The contract is l7.h's; this file says how it is kept. CQL and MySQL, which pair in ways
 * of their own, use only the framing under it (struct l7msg_frame, at the end).
 *
 * A direction is a sequence of messages. A message begins with a header the protocol's head()
 * checks as its bytes arrive (it asks for more, up to L7MSG_PREFIX_MAX, until it can tell the
 * length and the kind); its bytes are then counted up to that length, the first
 * L7MSG_PREFIX_MAX of them kept, and its parser's done() reads that prefix once the message
 * has ended. So any split of the same bytes gives the same messages.
 *
 * Gaps and losses: inside a message of known length a gap of known size is counted (sizes
 * stay exact, the prefix stops at the gap, the message is flagged). Anywhere else (a loss of
 * unknown size, a gap before the length is known or past the message's end, a header head()
 * refuses) framing is lost: the direction skips to the start of a later segment (a syscall's
 * data is where a message is likeliest to begin) and tries a header there, with head() told
 * it is resynchronizing (Kafka then wants a correlation id it waits for). Bytes skipped count
 * to bytes_unattributed; a message ended by a loss of unknown size keeps what was seen of it.
 * A direction whose first L7MSG_MAX_BAD_STARTS candidate headers all fail is abandoned.
 *
 * Pairing: a request makes an entry keyed by its id; a response completes the pending entry
 * with its key, else it is a NO_REQUEST exchange. Responses come back in request order on
 * these protocols' connections (MongoDB serves a connection's requests one at a time, Kafka
 * guarantees order), so when a request is answered, older ones still without any answer are
 * pushed out as NO_RESPONSE exchanges (their end_ns the answer's): a lost response then never
 * holds later exchanges back. A request with no answer to come (Kafka acks=0, MongoDB
 * moreToCome) is complete when it ends. A request over L7_MAX_PENDING is dropped and its id
 * remembered (the last L7MSG_DROPPED_IDS of them), so that its response counts as dropped too.
 *
 * Memory per connection: the state with two prefixes of L7MSG_PREFIX_MAX (about 9 KiB), and
 * up to L7_MAX_PENDING entries of about 330 bytes, allocated as needed by doubling from 4.
 */
#ifndef ROVER_SHIPPER_L7MSG_H
#define ROVER_SHIPPER_L7MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shipper/network/protocols/l7.h"

/* A message's bytes a parser reads: what a worker captures of one syscall (NET_CAPTURE_MAX). */
#define L7MSG_PREFIX_MAX 4096u
/* Failed candidate headers after which a direction that never carried the protocol is dropped. */
#define L7MSG_MAX_BAD_STARTS 8u
/* Ids of dropped requests remembered, so that their responses count as dropped. */
#define L7MSG_DROPPED_IDS 16u

/* head() results. */
enum l7msg_verdict {
	L7MSG_BAD = -1, /* not a message start */
	L7MSG_MORE = 0, /* `need` bytes are wanted before deciding */
	L7MSG_OK = 1,	/* a message of `total` bytes, of kind `kind` */
};

enum l7msg_kind {
	L7MSG_UNKNOWN = 0, /* framed, but whether request or response cannot be told */
	L7MSG_REQUEST,
	L7MSG_RESPONSE,
};

struct l7msg_head {
	uint64_t total;	      /* bytes of the message, length field included; 0 until known */
	size_t need;	      /* MORE: bytes wanted (clamped to total and L7MSG_PREFIX_MAX) */
	enum l7msg_kind kind; /* OK */
};

/* A message that ended, as done() gets it. */
struct l7msg_msg {
	const uint8_t *p; /* its first n bytes, as captured (contiguous from its start) */
	size_t n;
	uint64_t total;	   /* its length on the wire */
	uint64_t bytes;	   /* bytes of it seen, gaps included (total unless ended early) */
	uint64_t start_ns; /* segment of its first byte */
	uint64_t end_ns;   /* segment of its last byte seen */
	bool cut;	   /* some of it was not captured, lost, or never came */
	bool is_req;
	enum l7_dir dir;
};

struct l7msg_entry {
	struct l7_exchange x;
	uint64_t key; /* the id an answer carries */
	uint32_t aux; /* the protocol's own (Kafka: API key and version) */
	bool done;
	bool answered; /* a response was paired (more may follow) */
};

struct l7msg_conn;

struct l7msg_proto {
	const char *name;
	size_t hdr_min; /* bytes the first head() call gets */
	/*
	 * p[0..n) is a candidate message's start. `final`: no more bytes of it will be seen
	 * (a gap, a loss, close): decide with these (MORE then counts as BAD). `resync`: the
	 * candidate follows lost framing. The role (l7msg__role) may be unknown.
	 */
	enum l7msg_verdict (*head)(struct l7msg_conn *c, enum l7_dir dir, const uint8_t *p,
				   size_t n, bool final, bool resync, struct l7msg_head *ret);
	/*
	 * A message ended. Returns the entry its bytes go to (req_bytes or resp_bytes by
	 * m->is_req; the entry may be done already), or NULL: its bytes are unattributed.
	 */
	struct l7msg_entry *(*done)(struct l7msg_conn *c, const struct l7msg_msg *m);
};

/* NULL with errno set (EINVAL for L7_F_DATAGRAM: these protocols run over TCP). */
struct l7msg_conn *l7msg__new(const struct l7msg_proto *proto, unsigned flags);
void l7msg__free(void *cv);
int l7msg__feed(void *cv, enum l7_dir dir, uint64_t ts_ns, const uint8_t *data, size_t captured,
		size_t actual);
int l7msg__lost(void *cv, enum l7_dir dir, uint64_t nbytes);
void l7msg__close(void *cv, uint64_t ts_ns);
int l7msg__next(void *cv, struct l7_exchange *ret);
enum l7_role l7msg__role(const void *cv);
void l7msg__stats(const void *cv, struct l7_stats *ret);
/* Members of a struct l7_ops whose protocol these functions serve: all but name and new_conn. */
#define L7MSG_OPS                                                                                  \
	.free_conn = l7msg__free, .feed = l7msg__feed, .lost = l7msg__lost, .close = l7msg__close, \
	.next = l7msg__next, .role = l7msg__role, .stats = l7msg__stats

/* Exchanges held: pending, or complete and not popped. */
unsigned l7msg__pending(const struct l7msg_conn *c);
/* Responses whose body the protocol does not parse (Kafka: API keys and versions). */
uint64_t l7msg__bodies_unparsed(const struct l7msg_conn *c);

/* For the protocols' head() and done(). */
struct l7_stats *l7msg__st(struct l7msg_conn *c);
void l7msg__count_unparsed(struct l7msg_conn *c);
/* A new pending entry for request m with key, or NULL (dropped, counted, id remembered). */
struct l7msg_entry *l7msg__request(struct l7msg_conn *c, const struct l7msg_msg *m, uint64_t key);
/* The entry m (a request) made is complete now: no answer is to come. */
void l7msg__no_reply(struct l7msg_conn *c, struct l7msg_entry *e, const struct l7msg_msg *m);
/* The pending entry waiting for key, or NULL. */
struct l7msg_entry *l7msg__find(struct l7msg_conn *c, uint64_t key);
/*
 * Response m answers e: older entries without an answer are pushed out. `last`: no more
 * responses follow (e is complete); else e waits for its next one (the caller re-keys it).
 */
void l7msg__answer(struct l7msg_conn *c, struct l7msg_entry *e, const struct l7msg_msg *m,
		   bool last);
/*
 * Response m with key and no pending request: NULL if the request was dropped (counted),
 * else a complete NO_REQUEST entry (NULL if the ring is full: counted as dropped).
 */
struct l7msg_entry *l7msg__orphan(struct l7msg_conn *c, const struct l7msg_msg *m, uint64_t key);

/*
 * The framing below pairing, for the length-prefixed protocols that pair on their own (CQL by
 * stream id in any order, MySQL strictly in order by sequence): one direction's messages each
 * begin with a header of hdr_size bytes that gives the length of a body after it (a MySQL
 * packet of the longest length continues in another header and body). l7msg__frame_read() is a
 * direction's struct l7_seg_ops read(): it collects each header, counts its body's bytes and
 * hands them to the parser, and after lost framing starts a candidate at the next segment's
 * first byte (resync, seg_actual that segment's size). What a header or body means, gaps,
 * losses, bad starts and where skipped bytes go are the parser's, through struct
 * l7msg_frame_ops.
 */
enum l7msg_frame_state {
	L7MSG_FR_HDR,  /* collecting a header */
	L7MSG_FR_BODY, /* `remaining` bytes of the body in progress */
	L7MSG_FR_SKIP, /* framing lost or never found: up to the next segment start */
	L7MSG_FR_DEAD, /* not parsed any more */
};

#define L7MSG_FRAME_HDR_MAX 16u

/* A direction's framing: the head of the parser's own struct of a direction (L7MSG_FRAME_HEAD). */
#define L7MSG_FRAME_FIELDS                                                                 \
	struct {                                                                           \
		enum l7msg_frame_state st;                                                 \
		bool synced;  /* framing confirmed by a valid header */                    \
		bool resync;  /* the message in progress began a segment after a loss */   \
		bool trunc;   /* bytes of the message in progress not captured */          \
		bool started; /* its first header is complete (a continuation follows) */  \
		uint8_t hdr[L7MSG_FRAME_HDR_MAX];                                          \
		size_t hdr_len;                                                            \
		uint64_t remaining; /* of the body in progress */                          \
		uint64_t bytes;	    /* of the message so far, headers and gaps included */ \
		uint64_t start_ns;                                                         \
		uint64_t start_event; /* feed or loss that brought its first byte */       \
		uint64_t seg_actual;  /* bytes moved by the segment a resync began */      \
	}

struct l7msg_frame {
	L7MSG_FRAME_FIELDS;
};

/* The framing by name, or as one struct l7msg_frame f. */
#define L7MSG_FRAME_HEAD              \
	union {                       \
		struct l7msg_frame f; \
		L7MSG_FRAME_FIELDS;   \
	}

/* A parser's part, called with its connection c and a direction di. */
struct l7msg_frame_ops {
	size_t hdr_size; /* at most L7MSG_FRAME_HDR_MAX */
	/* A candidate begins at a segment start after lost framing: the message's state reset. */
	void (*reset)(void *c, int di);
	/* The header is complete: the parser sets st (L7MSG_FR_BODY with remaining, or not). */
	void (*header)(void *c, int di, uint64_t ts);
	/* k body bytes at p (counted in bytes and remaining): false if that refused the message. */
	bool (*body)(void *c, int di, const uint8_t *p, size_t k);
	/* The body's last byte came: remaining is 0. */
	void (*end)(void *c, int di, uint64_t ts);
	/* n bytes seen while skipping or dead. */
	void (*skipped)(void *c, int di, uint64_t n);
	/* After the segment, when it did not end skipping or dead. */
	void (*seg_end)(void *c, int di);
};

/* Direction di of c, whose framing is f, reads n captured bytes of a segment of actual bytes. */
void l7msg__frame_read(void *c, struct l7msg_frame *f, const struct l7msg_frame_ops *o, int di,
		       uint64_t ts, uint64_t event, const uint8_t *p, size_t n, size_t actual);
/*
 * frame_ops and dir_feed() (its struct l7_seg_ops read()) of a parser whose connections (type)
 * hold `sg` and d[2] headed by L7MSG_FRAME_HEAD, with headers of hdr_size bytes, over its
 * functions dir_reset(), header_done(), body_bytes(), end(), skipped() and seg_end().
 */
#define L7MSG_DEFINE_FRAMES(type, hdr_len, end_fn)                                                 \
	static const struct l7msg_frame_ops frame_ops = {                                          \
		.hdr_size = (hdr_len),                                                             \
		.reset = dir_reset,                                                                \
		.header = header_done,                                                             \
		.body = body_bytes,                                                                \
		.end = end_fn,                                                                     \
		.skipped = skipped,                                                                \
		.seg_end = seg_end,                                                                \
	};                                                                                         \
	static void dir_feed(void *cv, int di, uint64_t ts, const uint8_t *p, size_t n,            \
			     size_t actual)                                                        \
	{                                                                                          \
		type *c = cv;                                                                      \
                                                                                                   \
		l7msg__frame_read(c, &c->d[di].f, &frame_ops, di, ts, c->sg.events, p, n, actual); \
	}

/* The framing's state of a new message. */
void l7msg__frame_reset(struct l7msg_frame *f);
/* x begins with the request that framing f of direction di ended, of `bytes` on the wire. */
void l7msg__frame_request(struct l7_exchange *x, const struct l7msg_frame *f, int di,
			  uint64_t bytes);
/*
 * Both directions of c (their framings d0 and d1) are parsed no more, reset: returns the bytes
 * of the messages they had in progress.
 */
uint64_t l7msg__frames_stop(void *c, struct l7msg_frame *d0, struct l7msg_frame *d1,
			    const struct l7msg_frame_ops *o);

#endif
