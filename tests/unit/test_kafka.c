// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/protocols/kafka.c: recorded conversations of real clients (tests/unit/data/kafka): v0 ones of
 * kcat and kafka-python with sarama's MockBroker, modern ones of kcat (librdkafka 2.0.2 with
 * its defaults: ApiVersions v3, Metadata v4, Produce v7) and kafkajs 2.2.4 (ApiVersions v2,
 * Metadata v6, Produce v7) with tests/tools/kafka_broker.py; fed whole, split at every byte and
 * from the broker's side. Then messages built from Kafka's schemas for what no client here
 * sends (flexible Produce, Metadata and Fetch bodies, tagged fields, other API keys), and
 * hostile sizes, losses, role learning and the pending limit. Every run closes the connection
 * and checks that every byte fed is in an exchange or counted unattributed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shipper/network/protocols/l7.h"
#include "shipper/network/protocols/l7msg.h"
#include "tests/unit/l7_build.h"
#include "tests/unit/l7_replay.h"

#define EG L7_EGRESS
#define IN L7_INGRESS
#define OPS (&l7_kafka_ops)

/* --- building messages --- */

struct kb {
	struct l7b w;
	bool flex; /* a flexible version: compact strings and arrays, tagged fields */
};

static struct kb *kb_new(void)
{
	struct kb *b = calloc(1, sizeof(*b));

	cr_assert(b);
	return b;
}

/* A string, compact in flexible versions; NULL: null. */
static void kstr(struct kb *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (b->flex)
		l7b_uvarint(&b->w, s ? (uint32_t)n + 1 : 0);
	else
		l7b_be(&b->w, s ? (uint16_t)n : 0xffff, 2);
	l7b_put(&b->w, s, n);
}

static void karr(struct kb *b, int32_t n)
{
	if (b->flex)
		l7b_uvarint(&b->w, (uint32_t)(n + 1));
	else
		l7b_be(&b->w, (uint32_t)n, 4);
}

static void ktags(struct kb *b)
{
	if (b->flex)
		l7b_be(&b->w, 0, 1);
}

/* A request header; flex: header v2 (one tagged field, to be skipped) and a flexible body. */
static size_t req_begin(struct kb *b, uint16_t key, uint16_t ver, uint32_t corr, bool flex)
{
	size_t at = b->w.n;

	b->flex = false;
	l7b_be(&b->w, 0, 4);
	l7b_be(&b->w, key, 2);
	l7b_be(&b->w, ver, 2);
	l7b_be(&b->w, corr, 4);
	kstr(b, "rover-test");
	if (flex) {
		/* one tagged field: tag 5, 3 bytes */
		l7b_uvarint(&b->w, 1);
		l7b_uvarint(&b->w, 5);
		l7b_uvarint(&b->w, 3);
		l7b_put(&b->w, "abc", 3);
	}
	b->flex = flex;
	return at;
}

/* A response header; tagged: header v1. */
static size_t resp_begin(struct kb *b, uint32_t corr, bool flex, bool tagged)
{
	size_t at = b->w.n;

	l7b_be(&b->w, 0, 4);
	l7b_be(&b->w, corr, 4);
	if (tagged) {
		l7b_uvarint(&b->w, 2);
		l7b_uvarint(&b->w, 0);
		l7b_uvarint(&b->w, 1);
		l7b_be(&b->w, 7, 1);
		l7b_uvarint(&b->w, 9);
		l7b_uvarint(&b->w, 0);
	}
	b->flex = flex;
	return at;
}

static void kend(struct kb *b, size_t at)
{
	l7b_patch_be(&b->w, at, (uint32_t)(b->w.n - at - 4), 4);
}

static void kfeed(struct l7r_run *r, enum l7_dir dir, uint64_t ts, const struct kb *b)
{
	l7b_feed(r, dir, ts, &b->w);
}

TestSuite(kafka);

/* --- recordings --- */

struct want {
	const char *op, *target;
	int32_t code;
	uint32_t flags;
	uint64_t req, resp;
};

static void check_rec(const char *name, const struct want *w, size_t n, uint64_t unparsed,
		      uint64_t orphans)
{
	struct l7r_rec *rec = l7r_load("kafka", name);
	struct l7r_run *r = l7r_play(OPS, rec, L7R_PLAY(0));
	struct l7_stats st;

	cr_assert_eq(r->n, n, "%s: %zu exchanges", name, r->n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(r->x[i].op, w[i].op, "%s %zu", name, i);
		cr_assert_str_eq(r->x[i].target, w[i].target, "%s %zu", name, i);
		cr_assert_eq(r->x[i].code, w[i].code, "%s %zu", name, i);
		cr_assert_eq(r->x[i].error, w[i].code != 0, "%s %zu", name, i);
		cr_assert_eq(r->x[i].flags, w[i].flags, "%s %zu: flags %#x", name, i,
			     r->x[i].flags);
		cr_assert_eq(r->x[i].req_bytes, w[i].req, "%s %zu: req %llu", name, i,
			     (unsigned long long)r->x[i].req_bytes);
		cr_assert_eq(r->x[i].resp_bytes, w[i].resp, "%s %zu: resp %llu", name, i,
			     (unsigned long long)r->x[i].resp_bytes);
	}
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	r->ops->stats(r->c, &st);
	cr_assert_eq(st.bytes_seen, rec->bytes);
	cr_assert_eq(st.bytes_unattributed, 0);
	cr_assert_eq(st.orphan_responses, orphans);
	cr_assert_eq(st.malformed + st.resyncs + st.unanswered, 0, "%s", name);
	cr_assert_eq(l7msg__bodies_unparsed(r->c), unparsed, "%s", name);
	l7r_free(r);
	l7r_rec_free(rec);
}

Test(kafka, v0_recordings)
{
	static const struct want produce[] = {
		{ "Metadata", "t", 0, 0, 28, 70 },
		{ "Produce", "t", 0, 0, 83, 33 },
	};
	static const struct want error[] = {
		{ "Metadata", "bad", 0, 0, 30, 72 },
		/* MESSAGE_TOO_LARGE in the partition */
		{ "Produce", "bad", 10, 0, 82, 35 },
	};
	/* clang-format off */
	static const struct want consume[] = {
		{ "Metadata", "t", 0, 0, 28, 70 },
		{ "Metadata", "t", 0, 0, 28, 70 },
		{ "ListOffsets", "", 0, 0, 52, 37 },
		{ "Fetch", "t", 0, 0, 60, 74 },
		{ "Fetch", "t", 0, 0, 60, 37 },
	};
	/* clang-format on */
	static const struct want kpy_produce[] = {
		{ "Produce", "t", 0, 0, 79, 33 },
		{ "Produce", "t", 0, 0, 83, 33 },
	};
	/* sarama's mock answers acks=0 anyway, a real broker does not */
	static const struct want kpy_acks0[] = {
		{ "Produce", "t", 0, L7_F_NO_REPLY_EXPECTED, 79, 0 },
		{ "", "", 0, L7_F_NO_REQUEST, 0, 33 },
	};
	static const struct want kpy_consume[] = {
		{ "ListOffsets", "", 0, 0, 50, 37 },
		{ "Fetch", "t", 0, 0, 58, 74 },
	};

	check_rec("kcat_v0_produce", produce, 2, 0, 0);
	check_rec("kcat_v0_error", error, 2, 0, 0);
	check_rec("kcat_v0_consume", consume, 5, 1, 0);
	check_rec("kpy_v0_produce", kpy_produce, 2, 0, 0);
	check_rec("kpy_v0_acks0", kpy_acks0, 2, 0, 1);
	check_rec("kpy_v0_consume", kpy_consume, 2, 1, 0);
}

Test(kafka, modern_recordings)
{
	/* ApiVersions v3: request header v2 with tagged fields, response header v0 */
	static const struct want produce[] = {
		{ "ApiVersions", "", 0, 0, 40, 37 },
		{ "Metadata", "t", 0, 0, 29, 101 },
		{ "Produce", "t", 0, 0, 85, 53 },
	};
	static const struct want error[] = {
		{ "ApiVersions", "", 0, 0, 40, 37 },
		{ "Metadata", "bad", 0, 0, 31, 103 },
		{ "Produce", "bad", 10, 0, 84, 55 },
	};
	/* UNKNOWN_TOPIC_OR_PARTITION in the topic */
	static const struct want unknown[] = {
		{ "ApiVersions", "", 0, 0, 40, 37 },
		{ "Metadata", "nope", 3, 0, 32, 78 },
		{ "Metadata", "nope", 3, 0, 32, 78 },
	};
	static const struct want acks0[] = {
		{ "ApiVersions", "", 0, 0, 40, 37 },
		{ "Metadata", "t", 0, 0, 29, 101 },
		{ "Produce", "t", 0, L7_F_NO_REPLY_EXPECTED, 79, 0 },
	};
	/* kafkajs: correlation ids from 0, ApiVersions v2 */
	static const struct want kafkajs[] = {
		{ "ApiVersions", "", 0, 0, 17, 36 },
		{ "Metadata", "t", 0, 0, 25, 105 },
		{ "Produce", "t", 0, 0, 123, 53 },
		{ "Metadata", "bad", 0, 0, 30, 147 },
		{ "Produce", "bad", 10, 0, 115, 55 },
		{ "Produce", "t", 0, L7_F_NO_REPLY_EXPECTED, 117, 0 },
	};

	check_rec("kcat_produce", produce, 3, 0, 0);
	check_rec("kcat_error", error, 3, 0, 0);
	check_rec("kcat_unknown_topic", unknown, 3, 0, 0);
	check_rec("kcat_acks0", acks0, 3, 0, 0);
	check_rec("kafkajs", kafkajs, 6, 0, 0);
}

static const char *const recordings[] = {
	"kcat_v0_produce",    "kcat_v0_error",	"kcat_v0_consume", "kpy_v0_produce",
	"kpy_v0_acks0",	      "kpy_v0_consume", "kcat_produce",	   "kcat_error",
	"kcat_unknown_topic", "kcat_acks0",	"kafkajs",
};

Test(kafka, broker_side)
{
	for (size_t k = 0; k < sizeof(recordings) / sizeof(recordings[0]); k++) {
		struct l7r_rec *rec = l7r_load("kafka", recordings[k]);
		struct l7r_run *cl = l7r_play(OPS, rec, L7R_PLAY(0));
		struct l7r_run *sv = l7r_play(OPS, rec, L7R_PLAY(.as_server = true));

		cr_assert_eq(sv->ops->role(sv->c), L7_ROLE_SERVER);
		cr_assert_eq(sv->n, cl->n);
		for (size_t i = 0; i < sv->n; i++) {
			cr_assert_eq(sv->x[i].req_dir, IN);
			cr_assert_str_eq(sv->x[i].op, cl->x[i].op);
			cr_assert_eq(sv->x[i].req_bytes, cl->x[i].req_bytes);
			cr_assert_eq(sv->x[i].resp_bytes, cl->x[i].resp_bytes);
			cr_assert_eq(sv->x[i].code, cl->x[i].code);
		}
		l7r_free(cl);
		l7r_free(sv);
		l7r_rec_free(rec);
	}
}

/* --- built from the schemas --- */

/* Produce v9 (flexible) to two topics, the second partition failing; header tags both ways. */
Test(kafka, produce_flexible)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	struct l7_stats st;
	size_t m;

	m = req_begin(q, 0, 9, 77, true);
	kstr(q, NULL); /* transactional_id */
	l7b_be(&q->w, (uint16_t)-1, 2);
	l7b_be(&q->w, 30000, 4);
	karr(q, 2);
	kstr(q, "orders");
	karr(q, 1);
	l7b_be(&q->w, 0, 4);
	l7b_uvarint(&q->w, 1 + 10); /* compact records */
	l7b_put(&q->w, "0123456789", 10);
	ktags(q);
	ktags(q);
	kstr(q, "audit");
	karr(q, 0);
	ktags(q);
	ktags(q);
	kend(q, m);
	kfeed(r, EG, 1, q);

	m = resp_begin(a, 77, true, true);
	karr(a, 2);
	kstr(a, "orders");
	karr(a, 2);
	for (int p = 0; p < 2; p++) {
		l7b_be(&a->w, (uint32_t)p, 4);
		l7b_be(&a->w, p ? 6 : 0, 2); /* NOT_LEADER_OR_FOLLOWER */
		l7b_be(&a->w, 42, 8);
		l7b_be(&a->w, (uint64_t)-1, 8);
		l7b_be(&a->w, 0, 8);
		karr(a, 1); /* record_errors */
		l7b_be(&a->w, 3, 4);
		kstr(a, "bad record");
		ktags(a);
		kstr(a, NULL);
		ktags(a);
	}
	ktags(a);
	kstr(a, "audit");
	karr(a, 0);
	ktags(a);
	l7b_be(&a->w, 0, 4);
	ktags(a);
	kend(a, m);
	kfeed(r, IN, 2, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "Produce");
	cr_assert_str_eq(r->x[0].target, "orders");
	cr_assert_eq(r->x[0].code, 6);
	cr_assert_eq(r->x[0].error, 1);
	cr_assert_eq(r->x[0].req_bytes, q->w.n);
	cr_assert_eq(r->x[0].resp_bytes, a->w.n);

	/* acks 0 in v9: nothing will answer */
	q->w.n = 0;
	m = req_begin(q, 0, 9, 78, true);
	kstr(q, "txn-1");
	l7b_be(&q->w, 0, 2);
	l7b_be(&q->w, 30000, 4);
	karr(q, 1);
	kstr(q, "fire");
	karr(q, 0);
	ktags(q);
	ktags(q);
	kend(q, m);
	kfeed(r, EG, 3, q);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[1].target, "fire");
	cr_assert_eq(r->x[1].flags, L7_F_NO_REPLY_EXPECTED);
	st = l7r_finish(r, 4);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

/* Metadata v12: request topics by id and name, the error in the second topic's partition. */
Test(kafka, metadata_v12)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	uint8_t uuid[16] = { 1, 2, 3 };
	size_t m;

	m = req_begin(q, 3, 12, 5, true);
	karr(q, 2);
	l7b_put(&q->w, uuid, 16);
	kstr(q, "clicks");
	ktags(q);
	l7b_put(&q->w, uuid, 16);
	kstr(q, NULL);
	ktags(q);
	l7b_be(&q->w, 1, 1);
	l7b_be(&q->w, 0, 1);
	ktags(q);
	kend(q, m);
	kfeed(r, EG, 1, q);

	m = resp_begin(a, 5, true, true);
	l7b_be(&a->w, 0, 4);
	karr(a, 1);
	l7b_be(&a->w, 1, 4);
	kstr(a, "localhost");
	l7b_be(&a->w, 9092, 4);
	kstr(a, NULL);
	ktags(a);
	kstr(a, "cluster");
	l7b_be(&a->w, 1, 4);
	karr(a, 2);
	for (int t = 0; t < 2; t++) {
		l7b_be(&a->w, 0, 2);
		kstr(a, t ? "views" : "clicks");
		l7b_put(&a->w, uuid, 16);
		l7b_be(&a->w, 0, 1);
		karr(a, 1);
		l7b_be(&a->w, t ? 5 : 0, 2); /* LEADER_NOT_AVAILABLE */
		l7b_be(&a->w, 0, 4);
		l7b_be(&a->w, 1, 4);
		l7b_be(&a->w, 7, 4);
		karr(a, 3);
		l7b_be(&a->w, 1, 4);
		l7b_be(&a->w, 2, 4);
		l7b_be(&a->w, 3, 4);
		karr(a, 1);
		l7b_be(&a->w, 1, 4);
		karr(a, 0);
		ktags(a);
		l7b_be(&a->w, 0x80000000u, 4);
		ktags(a);
	}
	ktags(a);
	kend(a, m);
	kfeed(r, IN, 2, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "Metadata");
	cr_assert_str_eq(r->x[0].target, "clicks");
	cr_assert_eq(r->x[0].code, 5);
	cr_assert_eq(l7r_finish(r, 3).malformed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

static void fetch_request(struct kb *q, uint16_t v, uint32_t corr)
{
	size_t m = req_begin(q, 1, v, corr, v >= 12);

	if (v <= 14)
		l7b_be(&q->w, (uint32_t)-1, 4);
	l7b_be(&q->w, 500, 4);
	l7b_be(&q->w, 1, 4);
	if (v >= 3)
		l7b_be(&q->w, 52428800, 4);
	if (v >= 4)
		l7b_be(&q->w, 0, 1);
	if (v >= 7) {
		l7b_be(&q->w, 0, 4);
		l7b_be(&q->w, (uint32_t)-1, 4);
	}
	karr(q, 1);
	if (v <= 12) {
		kstr(q, "events");
	} else {
		static const uint8_t id[16] = { 9 };

		l7b_put(&q->w, id, 16);
	}
	karr(q, 1);
	l7b_be(&q->w, 0, 4);
	if (v >= 9)
		l7b_be(&q->w, (uint32_t)-1, 4);
	l7b_be(&q->w, 100, 8);
	if (v >= 12)
		l7b_be(&q->w, (uint32_t)-1, 4);
	if (v >= 5)
		l7b_be(&q->w, 0, 8);
	l7b_be(&q->w, 1048576, 4);
	ktags(q);
	ktags(q);
	if (v >= 7)
		karr(q, 0);
	if (v >= 11)
		kstr(q, "");
	ktags(q);
	kend(q, m);
}

/* A Fetch response: topic-level error `top` (v7+), partition 1 with `perr` after a record set. */
static void fetch_response(struct kb *a, uint16_t v, uint32_t corr, uint16_t top, uint16_t perr)
{
	size_t m = resp_begin(a, corr, v >= 12, v >= 12);

	if (v >= 1)
		l7b_be(&a->w, 0, 4);
	if (v >= 7) {
		l7b_be(&a->w, top, 2);
		l7b_be(&a->w, 0, 4);
	}
	karr(a, 1);
	if (v <= 12) {
		kstr(a, "events");
	} else {
		static const uint8_t id[16] = { 9 };

		l7b_put(&a->w, id, 16);
	}
	karr(a, 2);
	for (int p = 0; p < 2; p++) {
		l7b_be(&a->w, (uint32_t)p, 4);
		l7b_be(&a->w, p ? perr : 0, 2);
		l7b_be(&a->w, 100, 8);
		if (v >= 4)
			l7b_be(&a->w, 100, 8);
		if (v >= 5)
			l7b_be(&a->w, 0, 8);
		if (v >= 4) {
			karr(a, 1);
			l7b_be(&a->w, 7, 8);
			l7b_be(&a->w, 90, 8);
			ktags(a);
		}
		if (v >= 11)
			l7b_be(&a->w, (uint32_t)-1, 4);
		if (a->flex)
			l7b_uvarint(&a->w, 1 + 20);
		else
			l7b_be(&a->w, 20, 4);
		memset(a->w.b + a->w.n, 0x5a, 20);
		a->w.n += 20;
		ktags(a);
	}
	ktags(a);
	ktags(a);
	kend(a, m);
}

Test(kafka, fetch_versions)
{
	static const uint16_t versions[] = { 0, 1, 4, 5, 7, 11, 12, 13, 15, 17 };
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	struct l7_stats st;
	size_t i;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		uint16_t v = versions[i];

		q->w.n = a->w.n = 0;
		fetch_request(q, v, 100 + v);
		fetch_response(a, v, 100 + v, 0, 1); /* OFFSET_OUT_OF_RANGE */
		kfeed(r, EG, 2 * i + 1, q);
		kfeed(r, IN, 2 * i + 2, a);
		cr_assert_eq(r->n, i + 1);
		cr_assert_str_eq(r->x[i].op, "Fetch");
		cr_assert_str_eq(r->x[i].target, v <= 12 ? "events" : "", "v%u", v);
		cr_assert_eq(r->x[i].code, 1, "v%u: code %d", v, r->x[i].code);
		cr_assert_eq(r->x[i].resp_bytes, a->w.n);
	}
	/* v7+: the top-level error comes first */
	q->w.n = a->w.n = 0;
	fetch_request(q, 11, 500);
	fetch_response(a, 11, 500, 70, 1); /* FETCH_SESSION_ID_NOT_FOUND */
	kfeed(r, EG, 50, q);
	kfeed(r, IN, 51, a);
	cr_assert_eq(r->x[i].code, 70);
	st = l7r_finish(r, 60);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(l7msg__bodies_unparsed(r->c), 0);
	free(q);
	free(a);
	l7r_free(r);
}

/* APIs whose error code begins the body (after throttle_time_ms in later versions). */
Test(kafka, leading_error_codes)
{
	static const struct {
		uint16_t key, ver;
		bool throttle;
		uint16_t err;
		const char *op;
		bool parsed;
	} cases[] = {
		{ 12, 4, true, 27, "Heartbeat", true },	       /* REBALANCE_IN_PROGRESS, flexible */
		{ 12, 0, false, 16, "Heartbeat", true },       /* NOT_COORDINATOR */
		{ 10, 1, true, 15, "FindCoordinator", true },  /* COORDINATOR_NOT_AVAILABLE */
		{ 10, 4, true, 15, "FindCoordinator", false }, /* v4: an array, not read */
		{ 11, 5, true, 25, "JoinGroup", true },	       /* UNKNOWN_MEMBER_ID */
		{ 11, 1, false, 25, "JoinGroup", true },
		{ 14, 4, true, 22, "SyncGroup", true }, /* ILLEGAL_GENERATION */
		{ 13, 2, true, 25, "LeaveGroup", true },
		{ 17, 1, false, 33, "SaslHandshake", true },	/* UNSUPPORTED_SASL_MECHANISM */
		{ 36, 2, false, 58, "SaslAuthenticate", true }, /* SASL_AUTHENTICATION_FAILED */
		{ 22, 3, true, 53, "InitProducerId", true },	/* TRANSACTIONAL_ID_AUTHORIZATION */
		{ 18, 4, false, 35, "ApiVersions", true },	/* UNSUPPORTED_VERSION, header v0 */
		{ 2, 7, true, 3, "ListOffsets", false },
		{ 100, 0, false, 0, "ApiKey100", false },
	};
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	uint64_t unparsed = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* header v2 from the first flexible version (all versions past the table) */
		static const int8_t flex_from[] = {
			[2] = 6,  [10] = 3,  [11] = 6, [12] = 4, [13] = 4,
			[14] = 4, [17] = -1, [18] = 3, [22] = 2, [36] = 2
		};
		bool flex = cases[i].key >= 100 || (flex_from[cases[i].key] >= 0 &&
						    cases[i].ver >= flex_from[cases[i].key]);
		size_t m;

		q->w.n = a->w.n = 0;
		m = req_begin(q, cases[i].key, cases[i].ver, (uint32_t)i, flex);
		l7b_be(&q->w, 0x01020304, 4);
		kend(q, m);
		m = resp_begin(a, (uint32_t)i, flex, flex && cases[i].key != 18);
		if (cases[i].throttle)
			l7b_be(&a->w, 100, 4);
		l7b_be(&a->w, cases[i].err, 2);
		l7b_be(&a->w, 0, 4);
		kend(a, m);
		kfeed(r, EG, 2 * i + 1, q);
		kfeed(r, IN, 2 * i + 2, a);
		cr_assert_eq(r->n, i + 1);
		cr_assert_str_eq(r->x[i].op, cases[i].op);
		cr_assert_eq(r->x[i].code, cases[i].parsed ? cases[i].err : 0, "%s v%u: %d",
			     cases[i].op, cases[i].ver, r->x[i].code);
		unparsed += !cases[i].parsed;
	}
	cr_assert_eq(l7msg__bodies_unparsed(r->c), unparsed);
	cr_assert_eq(l7r_finish(r, 100).bytes_unattributed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

Test(kafka, controlled_shutdown_v0_header)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	size_t m;

	/* request header v0: no client_id */
	m = q->w.n;
	l7b_be(&q->w, 0, 4);
	l7b_be(&q->w, 7, 2);
	l7b_be(&q->w, 0, 2);
	l7b_be(&q->w, 9, 4);
	l7b_be(&q->w, 3, 4); /* broker_id */
	kend(q, m);
	m = resp_begin(a, 9, false, false);
	l7b_be(&a->w, 41, 2); /* NOT_CONTROLLER */
	karr(a, 0);
	kend(a, m);
	kfeed(r, EG, 1, q);
	kfeed(r, IN, 2, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].op, "ControlledShutdown");
	cr_assert_eq(r->x[0].req_bytes, 16);
	l7r_finish(r, 3);
	free(q);
	free(a);
	l7r_free(r);
}

Test(kafka, pipelined_and_out_of_order)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	struct l7_stats st;
	size_t m;

	for (uint32_t c = 1; c <= 3; c++) {
		m = req_begin(q, 18, 0, c, false);
		kend(q, m);
	}
	kfeed(r, EG, 1, q);
	/* 2 first: paired by id; 1, older and unanswered, is pushed out */
	m = resp_begin(a, 2, false, false);
	l7b_be(&a->w, 0, 2);
	karr(a, 0);
	kend(a, m);
	kfeed(r, IN, 2, a);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[0].end_ns, 2);
	cr_assert_eq(r->x[1].flags, 0);
	cr_assert_eq(r->x[1].resp_bytes, a->w.n);
	/* then 3 and a late 1, which nothing waits for */
	a->w.n = 0;
	m = resp_begin(a, 3, false, false);
	l7b_be(&a->w, 0, 2);
	karr(a, 0);
	kend(a, m);
	m = resp_begin(a, 1, false, false);
	l7b_be(&a->w, 35, 2);
	karr(a, 0);
	kend(a, m);
	kfeed(r, IN, 3, a);
	st = l7r_finish(r, 4);
	cr_assert_eq(r->n, 4);
	cr_assert_eq(r->x[2].flags, 0);
	cr_assert_eq(r->x[3].flags, L7_F_NO_REQUEST);
	cr_assert_str_eq(r->x[3].op, "");
	cr_assert_eq(r->x[3].code, 0);
	cr_assert_eq(st.unanswered, 1);
	cr_assert_eq(st.orphan_responses, 1);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

Test(kafka, capture_cut_produce)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	struct l7_stats st;
	size_t m, head;
	uint64_t records = 1 << 20;

	/* Produce v7 of 1 MiB of records, 1 KiB of it captured */
	m = req_begin(q, 0, 7, 41, false);
	kstr(q, NULL);
	l7b_be(&q->w, 1, 2);
	l7b_be(&q->w, 30000, 4);
	karr(q, 1);
	kstr(q, "big-topic");
	karr(q, 1);
	l7b_be(&q->w, 0, 4);
	l7b_be(&q->w, (uint32_t)records, 4);
	head = q->w.n;
	l7b_patch_be(&q->w, m, (uint32_t)(head - 4 + records), 4);
	memset(q->w.b + q->w.n, 0x33, 1024);
	q->w.n += 1024;
	l7r_seg(r, EG, 1, q->w.b, 1024, head + records);
	m = resp_begin(a, 41, false, false);
	karr(a, 1);
	kstr(a, "big-topic");
	karr(a, 1);
	l7b_be(&a->w, 0, 4);
	l7b_be(&a->w, 0, 2);
	l7b_be(&a->w, 5, 8);
	l7b_be(&a->w, (uint64_t)-1, 8);
	l7b_be(&a->w, 0, 8);
	l7b_be(&a->w, 0, 4);
	kend(a, m);
	kfeed(r, IN, 2, a);
	cr_assert_eq(r->n, 1);
	cr_assert_str_eq(r->x[0].target, "big-topic");
	cr_assert_eq(r->x[0].req_bytes, head + records);
	cr_assert_eq(r->x[0].flags, L7_F_REQ_TRUNCATED);
	cr_assert_eq(r->x[0].code, 0);

	/* a response cut by the capture before its error: code 0, flagged */
	q->w.n = a->w.n = 0;
	m = req_begin(q, 3, 0, 42, false);
	karr(q, 0);
	kend(q, m);
	kfeed(r, EG, 3, q);
	m = resp_begin(a, 42, false, false);
	karr(a, 1);
	l7b_be(&a->w, 1, 4);
	kstr(a, "host");
	l7b_be(&a->w, 9092, 4);
	karr(a, 1);
	l7b_be(&a->w, 3, 2);
	kstr(a, "gone");
	karr(a, 0);
	kend(a, m);
	l7r_seg(r, IN, 4, a->w.b, 20, a->w.n);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[1].code, 0);
	cr_assert_eq(r->x[1].flags, L7_F_RESP_TRUNCATED);
	cr_assert_eq(r->x[1].resp_bytes, a->w.n);
	st = l7r_finish(r, 5);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.resyncs, 0);
	cr_assert_eq(st.bytes_unattributed, 0);
	free(q);
	free(a);
	l7r_free(r);
}

Test(kafka, hostile_sizes_and_resync)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new(), *g = kb_new();
	struct l7_stats st;
	size_t m, junk = 0;

	/* a valid request first: the role is known */
	m = req_begin(q, 18, 0, 1, false);
	kend(q, m);
	kfeed(r, EG, 1, q);
	/* requests that are none: size 2, size 1 GiB, negative, version 40, a client_id
	 * past the end, one with control bytes */
	l7b_be(&g->w, 2, 4);
	l7b_be(&g->w, 0, 4);
	kfeed(r, EG, 2, g);
	junk += g->w.n;
	g->w.n = 0;
	l7b_be(&g->w, 1u << 30, 4);
	l7b_be(&g->w, 0x00120000, 4);
	kfeed(r, EG, 3, g);
	junk += g->w.n;
	g->w.n = 0;
	l7b_be(&g->w, 0xfffffff0u, 4);
	l7b_be(&g->w, 0, 4);
	kfeed(r, EG, 4, g);
	junk += g->w.n;
	g->w.n = 0;
	m = req_begin(g, 3, 40, 7, false);
	kend(g, m);
	kfeed(r, EG, 5, g);
	junk += g->w.n;
	g->w.n = 0;
	m = g->w.n;
	l7b_be(&g->w, 0, 4);
	l7b_be(&g->w, 3, 2);
	l7b_be(&g->w, 1, 2);
	l7b_be(&g->w, 8, 4);
	l7b_be(&g->w, 500, 2);
	l7b_put(&g->w, "abc", 3);
	kend(g, m);
	kfeed(r, EG, 6, g);
	junk += g->w.n;
	g->w.n = 0;
	m = g->w.n;
	l7b_be(&g->w, 0, 4);
	l7b_be(&g->w, 3, 2);
	l7b_be(&g->w, 1, 2);
	l7b_be(&g->w, 8, 4);
	kstr(g, "a\x01z");
	karr(g, 0);
	kend(g, m);
	kfeed(r, EG, 7, g);
	junk += g->w.n;
	/* a response after lost framing is taken only with a correlation id waited for */
	g->w.n = 0;
	m = resp_begin(g, 555, false, false);
	l7b_be(&g->w, 0, 2);
	kend(g, m);
	l7r_lost(r, IN, 0);
	kfeed(r, IN, 8, g);
	junk += g->w.n;
	m = resp_begin(a, 1, false, false);
	l7b_be(&a->w, 0, 2);
	karr(a, 0);
	kend(a, m);
	kfeed(r, IN, 9, a);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->x[0].flags, 0);
	cr_assert_eq(r->x[0].resp_bytes, a->w.n);

	/* huge tagged field and array counts: no crash, counted */
	q->w.n = 0;
	m = req_begin(q, 3, 9, 2, true);
	l7b_uvarint(&q->w, 0x7fffffff); /* topics */
	kstr(q, "x");
	kend(q, m);
	kfeed(r, EG, 10, q);
	a->w.n = 0;
	m = resp_begin(a, 2, true, false);
	l7b_uvarint(&a->w, 3);
	l7b_uvarint(&a->w, 1);
	l7b_uvarint(&a->w, 0xffffff0); /* a tagged field past the end */
	kend(a, m);
	kfeed(r, IN, 11, a);
	cr_assert_eq(r->n, 2);
	cr_assert_str_eq(r->x[1].target, "x");
	cr_assert_eq(r->x[1].code, 0);
	st = l7r_finish(r, 12);
	cr_assert_eq(st.malformed, 1);
	cr_assert_eq(st.resyncs, 2);
	cr_assert_eq(st.dirs_abandoned, 0);
	cr_assert_eq(st.bytes_unattributed, junk);
	free(q);
	free(a);
	free(g);
	l7r_free(r);
}

Test(kafka, role_from_first_request)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	struct l7_stats st;
	size_t m;

	/* the capture begins with a response: framed, kind unknown, not counted */
	m = resp_begin(a, 0x7ff00001, false, false);
	l7b_be(&a->w, 0, 2);
	karr(a, 0);
	kend(a, m);
	kfeed(r, IN, 1, a);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_UNKNOWN);
	m = req_begin(q, 18, 1, 2, false);
	kend(q, m);
	kfeed(r, EG, 2, q);
	cr_assert_eq(r->ops->role(r->c), L7_ROLE_CLIENT);
	kfeed(r, IN, 3, a);
	st = l7r_finish(r, 4);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->x[0].flags, L7_F_NO_RESPONSE);
	cr_assert_eq(r->x[1].flags, L7_F_NO_REQUEST);
	cr_assert_eq(st.responses, 1);
	cr_assert_eq(st.bytes_unattributed, a->w.n);
	free(q);
	free(a);
	l7r_free(r);
}

Test(kafka, pending_limit)
{
	struct l7r_run *r = l7r_new(OPS);
	struct kb *q = kb_new(), *a = kb_new();
	struct l7_stats st;
	size_t m, qn = 0, an = 0;

	for (uint32_t c = 0; c < 100; c++) {
		m = req_begin(q, 18, 0, c, false);
		kend(q, m);
		qn = q->w.n - m;
	}
	kfeed(r, EG, 1, q);
	for (uint32_t c = 0; c < 100; c++) {
		a->w.n = 0;
		m = resp_begin(a, c, false, false);
		l7b_be(&a->w, 0, 2);
		karr(a, 0);
		kend(a, m);
		an = a->w.n;
		kfeed(r, IN, 2, a);
	}
	st = l7r_finish(r, 3);
	cr_assert_eq(r->n, L7_MAX_PENDING + 100 - L7_MAX_PENDING - L7MSG_DROPPED_IDS);
	cr_assert_eq(st.requests_dropped, 100 - L7_MAX_PENDING);
	cr_assert_eq(st.responses_dropped, L7MSG_DROPPED_IDS);
	cr_assert_eq(st.bytes_unattributed, qn * (100 - L7_MAX_PENDING) + an * L7MSG_DROPPED_IDS);
	free(q);
	free(a);
	l7r_free(r);
}

Test(kafka, hand_built_split_anywhere)
{
	struct l7r_rec *rec = l7r_rec_new();
	struct kb *q = kb_new(), *a = kb_new();

	fetch_request(q, 12, 1);
	fetch_request(q, 4, 2);
	fetch_response(a, 12, 1, 0, 1);
	fetch_response(a, 4, 2, 0, 0);
	l7r_rec_add(rec, true, q->w.b, q->w.n);
	l7r_rec_add(rec, false, a->w.b, a->w.n);
	l7r_all_splits(OPS, rec, "hand-built");
	l7r_rec_free(rec);
	free(q);
	free(a);
}

Test(kafka, bad_arguments)
{
	void *c = OPS->new_conn(0);

	cr_assert(c);
	cr_assert_eq(OPS->feed(c, EG, 1, (const uint8_t *)"x", 2, 1), -EINVAL);
	cr_assert_eq(OPS->feed(c, EG, 1, NULL, 1, 1), -EINVAL);
	cr_assert_eq(OPS->lost(c, (enum l7_dir)5, 1), -EINVAL);
	OPS->close(c, 1);
	cr_assert_eq(OPS->feed(c, IN, 1, (const uint8_t *)"x", 1, 1), -EPIPE);
	OPS->free_conn(c);
	OPS->free_conn(NULL);
	errno = 0;
	cr_assert_null(OPS->new_conn(L7_F_DATAGRAM));
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(OPS->name, "kafka");
}
