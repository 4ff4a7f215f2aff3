// SPDX-License-Identifier: Apache-2.0
/*
 * Every parser behind shipper/network/protocols/l7.h, through the interface alone: each one's
 * conversations (tests/unit/data/<proto>/), fed whole, in pieces of every small size as the
 * client and as the server, and with each segment cut in two at every byte, give the same
 * exchanges, with no resynchronization, and every byte fed ends in an exchange or counted
 * unattributed. What the exchanges hold is checked in each protocol's own file.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "shipper/network/protocols/l7.h"
#include "tests/unit/l7_replay.h"

#define RECS_MAX 12

/*
 * Stream conversations only: a datagram (DNS over UDP) is whole by definition. HTTP/2's two
 * 100 KiB downloads, and its h2c upgrades (two members one after the other), are played in
 * tests/unit/test_http2.c.
 */
static const struct member {
	const struct l7_ops *ops;
	const char *dir;
	const char *recs[RECS_MAX];
} members[] = {
	{ &l7_http1_ops, "http1", { "every_framing" } },
	{ &l7_http2_ops, "http2", { "grpc", "curl_post", "nghttp_push" } },
	{ &l7_mysql_ops,
	  "mysql",
	  { "cli_query", "cli_call_infile", "admin_ping", "mysql2_execute", "mysql2_call",
	    "cli_tls" } },
	{ &l7_cql_ops,
	  "cql",
	  { "session", "control", "node_session", "negotiate_v5", "negotiate_dse" } },
	{ &l7_mongo_ops, "mongo", { "pymongo", "node" } },
	{ &l7_kafka_ops,
	  "kafka",
	  { "kcat_v0_produce", "kcat_v0_error", "kcat_v0_consume", "kpy_v0_produce", "kpy_v0_acks0",
	    "kpy_v0_consume", "kcat_produce", "kcat_error", "kcat_unknown_topic", "kcat_acks0",
	    "kafkajs" } },
	{ &l7_dns_ops,
	  "dns",
	  { "dig_tcp_a", "dig_tcp_nxdomain", "dig_tcp_refused", "kdig_tcp_a",
	    "kdig_tcp_keepopen" } },
};

static void check_member(const struct member *m)
{
	size_t exchanges = 0;
	char what[64];

	for (size_t i = 0; i < RECS_MAX && m->recs[i]; i++) {
		struct l7r_rec *rec = l7r_load(m->dir, m->recs[i]);
		struct l7r_run *r = l7r_play(m->ops, rec, L7R_PLAY(0));

		exchanges += r->n;
		l7r_free(r);
		snprintf(what, sizeof(what), "%s/%s", m->dir, m->recs[i]);
		l7r_all_splits(m->ops, rec, what);
		l7r_rec_free(rec);
	}
	/* conversations with nothing in them would make every split trivially the same */
	cr_assert_gt(exchanges, 0, "%s: no exchange", m->dir);
}

TestSuite(l7);

/* One test per member, so that they run side by side and a failure names its protocol. */
#define MEMBER_TEST(k, name)                             \
	Test(l7, name##_split_anywhere_same_exchanges)   \
	{                                                \
		cr_assert_str_eq(members[k].dir, #name); \
		check_member(&members[k]);               \
	}

MEMBER_TEST(0, http1)
MEMBER_TEST(1, http2)
MEMBER_TEST(2, mysql)
MEMBER_TEST(3, cql)
MEMBER_TEST(4, mongo)
MEMBER_TEST(5, kafka)
MEMBER_TEST(6, dns)
