// SPDX-License-Identifier: Apache-2.0
/*
 * Kafka protocol of one connection, as shipper/network/protocols/l7.h describes parsers (framing, gaps, pairing
 * and limits: shipper/network/protocols/l7msg.h). Field layouts follow Kafka's message schemas
 * (apache/kafka clients/src/main/resources/common/message, as of 2024-10, API keys
 * 0-87).
 *
 * A request is int32 size (big-endian, itself excluded), int16 api_key, int16 api_version,
 * int32 correlation_id, then the client_id (an int16-length nullable string; none in the v0
 * header of ControlledShutdown v0) and, in the flexible versions of the API (header v2), tagged
 * fields. A response is int32 size, int32 correlation_id and, in flexible versions but for
 * ApiVersions (whose response header is always v0), tagged fields. Responses pair with the
 * pending request of the same correlation id; op is the API key's name ("Produce",
 * "ApiVersions"; "ApiKey100" past the table), and API keys past the table are taken as
 * flexible from v0 as every API added since KIP-482 is.
 *
 * A message is a request when the role is known and it goes the request way; before that
 * when its header looks like one (api_key 0-127, api_version 0-31, a client_id that fits and
 * has no control bytes), which sets the role; else it is framed by its size and not counted.
 * After lost framing a response is taken only with a correlation id a request waits for.
 *
 * Parsed bodies (others: code 0, counted by l7msg__bodies_unparsed):
 * - Produce v0-11: request target the first topic, acks 0 is L7_F_NO_REPLY_EXPECTED;
 *   response code the first non-zero partition error_code.
 * - Fetch v0-17: request target the first topic (none from v13: topic ids); response code
 *   the top-level error_code (v7+), else the first non-zero partition one.
 * - Metadata v0-12: request target the first topic; response code the first non-zero topic or
 *   partition error_code.
 * - ApiVersions (all versions), SaslHandshake v0-1, SaslAuthenticate v0-2: the error_code
 *   that begins the body; FindCoordinator v0-3, JoinGroup v0-9, Heartbeat v0-4, LeaveGroup
 *   v0-5, SyncGroup v0-5, InitProducerId v0-5: the error_code after throttle_time_ms where
 *   the version has one.
 * The walk reads what was captured of a message (L7MSG_PREFIX_MAX at most): a partition
 * error past that (after a Fetch's records, say) is not seen, and the code is then 0.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "shipper/network/protocols/l7msg.h"

/* Beyond what a broker accepts (socket.request.max.bytes, 100 MiB) or a fetch returns. */
#define MAX_SIZE (256u << 20)
#define MAX_API_KEY 127
#define MAX_API_VERSION 31
/* Bytes of a client_id looked at when telling a request. */
#define CLIENT_ID_PEEK 64u
/* Elements of one array walked at most: each takes bytes, this only bounds a hostile count. */
#define MAX_ELEMENTS 4096u

enum {
	K_PRODUCE = 0,
	K_FETCH = 1,
	K_METADATA = 3,
	K_CONTROLLED_SHUTDOWN = 7,
	K_FIND_COORDINATOR = 10,
	K_JOIN_GROUP = 11,
	K_HEARTBEAT = 12,
	K_LEAVE_GROUP = 13,
	K_SYNC_GROUP = 14,
	K_SASL_HANDSHAKE = 17,
	K_API_VERSIONS = 18,
	K_INIT_PRODUCER_ID = 22,
	K_SASL_AUTHENTICATE = 36,
};

struct api {
	const char *name;
	int8_t flexible; /* first flexible version, -1 for none */
	int8_t max;	 /* highest version in the schemas */
};

static const struct api apis[] = {
	{ "Produce", 9, 11 },
	{ "Fetch", 12, 17 },
	{ "ListOffsets", 6, 10 },
	{ "Metadata", 9, 12 },
	{ "LeaderAndIsr", 4, 7 },
	{ "StopReplica", 2, 4 },
	{ "UpdateMetadata", 6, 8 },
	{ "ControlledShutdown", 3, 3 },
	{ "OffsetCommit", 8, 9 },
	{ "OffsetFetch", 6, 9 },
	{ "FindCoordinator", 3, 6 },
	{ "JoinGroup", 6, 9 },
	{ "Heartbeat", 4, 4 },
	{ "LeaveGroup", 4, 5 },
	{ "SyncGroup", 4, 5 },
	{ "DescribeGroups", 5, 5 },
	{ "ListGroups", 3, 5 },
	{ "SaslHandshake", -1, 1 },
	{ "ApiVersions", 3, 4 },
	{ "CreateTopics", 5, 7 },
	{ "DeleteTopics", 4, 6 },
	{ "DeleteRecords", 2, 2 },
	{ "InitProducerId", 2, 5 },
	{ "OffsetForLeaderEpoch", 4, 4 },
	{ "AddPartitionsToTxn", 3, 5 },
	{ "AddOffsetsToTxn", 3, 4 },
	{ "EndTxn", 3, 5 },
	{ "WriteTxnMarkers", 1, 1 },
	{ "TxnOffsetCommit", 3, 4 },
	{ "DescribeAcls", 2, 3 },
	{ "CreateAcls", 2, 3 },
	{ "DeleteAcls", 2, 3 },
	{ "DescribeConfigs", 4, 4 },
	{ "AlterConfigs", 2, 2 },
	{ "AlterReplicaLogDirs", 2, 2 },
	{ "DescribeLogDirs", 2, 4 },
	{ "SaslAuthenticate", 2, 2 },
	{ "CreatePartitions", 2, 3 },
	{ "CreateDelegationToken", 2, 3 },
	{ "RenewDelegationToken", 2, 2 },
	{ "ExpireDelegationToken", 2, 2 },
	{ "DescribeDelegationToken", 2, 3 },
	{ "DeleteGroups", 2, 2 },
	{ "ElectLeaders", 2, 2 },
	{ "IncrementalAlterConfigs", 1, 1 },
	{ "AlterPartitionReassignments", 0, 0 },
	{ "ListPartitionReassignments", 0, 0 },
	{ "OffsetDelete", -1, 0 },
	{ "DescribeClientQuotas", 1, 1 },
	{ "AlterClientQuotas", 1, 1 },
	{ "DescribeUserScramCredentials", 0, 0 },
	{ "AlterUserScramCredentials", 0, 0 },
	{ "Vote", 0, 1 },
	{ "BeginQuorumEpoch", 1, 1 },
	{ "EndQuorumEpoch", 1, 1 },
	{ "DescribeQuorum", 0, 2 },
	{ "AlterPartition", 0, 3 },
	{ "UpdateFeatures", 0, 2 },
	{ "Envelope", 0, 0 },
	{ "FetchSnapshot", 0, 1 },
	{ "DescribeCluster", 0, 1 },
	{ "DescribeProducers", 0, 0 },
	{ "BrokerRegistration", 0, 4 },
	{ "BrokerHeartbeat", 0, 1 },
	{ "UnregisterBroker", 0, 0 },
	{ "DescribeTransactions", 0, 0 },
	{ "ListTransactions", 0, 1 },
	{ "AllocateProducerIds", 0, 0 },
	{ "ConsumerGroupHeartbeat", 0, 1 },
	{ "ConsumerGroupDescribe", 0, 0 },
	{ "ControllerRegistration", 0, 0 },
	{ "GetTelemetrySubscriptions", 0, 0 },
	{ "PushTelemetry", 0, 0 },
	{ "AssignReplicasToDirs", 0, 0 },
	{ "ListClientMetricsResources", 0, 0 },
	{ "DescribeTopicPartitions", 0, 0 },
	{ "ShareGroupHeartbeat", 0, 0 },
	{ "ShareGroupDescribe", 0, 0 },
	{ "ShareFetch", 0, 0 },
	{ "ShareAcknowledge", 0, 0 },
	{ "AddRaftVoter", 0, 0 },
	{ "RemoveRaftVoter", 0, 0 },
	{ "UpdateRaftVoter", 0, 0 },
	{ "InitializeShareGroupState", 0, 0 },
	{ "ReadShareGroupState", 0, 0 },
	{ "WriteShareGroupState", 0, 0 },
	{ "DeleteShareGroupState", 0, 0 },
	{ "ReadShareGroupStateSummary", 0, 0 },
};

static bool flexible(unsigned key, unsigned version)
{
	if (key >= sizeof(apis) / sizeof(apis[0]))
		return true;
	return apis[key].flexible >= 0 && version >= (unsigned)apis[key].flexible;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* --- a bounded reader --- */

struct rd {
	const uint8_t *p;
	size_t n;	/* captured */
	uint64_t total; /* the message's length */
	uint64_t off;
	int err; /* 0, -EAGAIN: past what was captured, -EBADMSG: past the message */
	bool flex;
};

static bool rd_need(struct rd *r, uint64_t k)
{
	if (r->err)
		return false;
	if (r->off + k > r->total) {
		r->err = -EBADMSG;
		return false;
	}
	if (r->off + k > r->n) {
		r->err = -EAGAIN;
		return false;
	}
	return true;
}

static int64_t rd_int(struct rd *r, unsigned bytes)
{
	uint64_t v = 0;

	if (!rd_need(r, bytes))
		return 0;
	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | r->p[r->off + i];
	r->off += bytes;
	/* Sign-extend. */
	if (bytes < 8 && (v >> (bytes * 8 - 1)) & 1)
		v |= ~(uint64_t)0 << (bytes * 8);
	return (int64_t)v;
}

static void rd_skip(struct rd *r, uint64_t k)
{
	if (r->err)
		return;
	if (k > r->total - r->off) {
		r->err = -EBADMSG;
		return;
	}
	r->off += k;
}

/* An unsigned varint of 32 bits at most. */
static uint32_t rd_uvarint(struct rd *r)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < 5; i++) {
		uint8_t b;

		if (!rd_need(r, 1))
			return 0;
		b = r->p[r->off++];
		if (i == 4 && b > 0x0f) {
			r->err = -EBADMSG;
			return 0;
		}
		v |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	return v;
}

/* An array's element count, -1 if null. */
static int64_t rd_array(struct rd *r, bool nullable)
{
	int64_t n = r->flex ? (int64_t)rd_uvarint(r) - 1 : rd_int(r, 4);

	if (r->err)
		return 0;
	if (n < -1 || (n == -1 && !nullable)) {
		r->err = -EBADMSG;
		return 0;
	}
	return n;
}

/* A string: *s and *len its text as captured (NULL if null), its whole length skipped. */
static void rd_string(struct rd *r, bool nullable, const uint8_t **s, size_t *len, bool *cut)
{
	int64_t l = r->flex ? (int64_t)rd_uvarint(r) - 1 : rd_int(r, 2);

	*s = NULL;
	*len = 0;
	*cut = false;
	if (r->err)
		return;
	if (l < -1 || (l == -1 && !nullable)) {
		r->err = -EBADMSG;
		return;
	}
	if (l < 0)
		return;
	if (r->off < r->n) {
		*s = r->p + r->off;
		*len = r->n - r->off < (uint64_t)l ? r->n - (size_t)r->off : (size_t)l;
	} else if (l) {
		*s = r->p + r->n;
	} else {
		*s = r->p + r->off;
	}
	*cut = *len < (uint64_t)l;
	rd_skip(r, (uint64_t)l);
}

static void rd_skip_string(struct rd *r, bool nullable)
{
	const uint8_t *s;
	size_t len;
	bool cut;

	rd_string(r, nullable, &s, &len, &cut);
}

static void rd_skip_bytes(struct rd *r)
{
	int64_t l = r->flex ? (int64_t)rd_uvarint(r) - 1 : rd_int(r, 4);

	if (r->err)
		return;
	if (l < -1) {
		r->err = -EBADMSG;
		return;
	}
	if (l > 0)
		rd_skip(r, (uint64_t)l);
}

/* Tagged fields, in flexible versions only. */
static void rd_tags(struct rd *r)
{
	uint32_t n;

	if (!r->flex)
		return;
	n = rd_uvarint(r);
	for (uint32_t i = 0; i < n && !r->err; i++) {
		rd_uvarint(r);
		rd_skip(r, rd_uvarint(r));
	}
}

/* An array of int32. */
static void rd_skip_int32s(struct rd *r)
{
	int64_t n = rd_array(r, false);

	if (n > 0)
		rd_skip(r, (uint64_t)n * 4);
}

static void target_of(struct l7_exchange *x, const uint8_t *s, size_t len, bool cut)
{
	if (!s)
		return;
	if (l7__copy_str(x->target, sizeof(x->target), s, len) || cut)
		x->flags |= L7_F_TARGET_TRUNCATED;
}

/* --- request bodies --- */

/* Produce: target the first topic; *acks. False if the version is not parsed. */
static bool produce_request(struct rd *r, unsigned v, struct l7_exchange *x, int *acks)
{
	const uint8_t *s;
	size_t len;
	bool cut;

	if (v > 11)
		return false;
	if (v >= 3)
		rd_skip_string(r, true);
	*acks = (int)rd_int(r, 2);
	if (r->err)
		*acks = -1;
	rd_skip(r, 4);
	if (rd_array(r, false) < 1)
		return true;
	rd_string(r, false, &s, &len, &cut);
	target_of(x, s, len, cut);
	return true;
}

static bool fetch_request(struct rd *r, unsigned v, struct l7_exchange *x)
{
	const uint8_t *s;
	size_t len;
	bool cut;

	if (v > 17)
		return false;
	/* replica_id (v0-14), max_wait_ms, min_bytes, max_bytes (v3+) */
	rd_skip(r, (v <= 14 ? 4 : 0) + 4 + 4 + (v >= 3 ? 4 : 0));
	if (v >= 4)
		rd_skip(r, 1); /* isolation_level */
	if (v >= 7)
		rd_skip(r, 8); /* session_id, session_epoch */
	if (v >= 13 || rd_array(r, false) < 1)
		return true;
	rd_string(r, false, &s, &len, &cut);
	target_of(x, s, len, cut);
	return true;
}

static bool metadata_request(struct rd *r, unsigned v, struct l7_exchange *x)
{
	const uint8_t *s;
	size_t len;
	bool cut;

	if (v > 12)
		return false;
	if (rd_array(r, v >= 1) < 1)
		return true;
	if (v >= 10)
		rd_skip(r, 16); /* topic_id */
	rd_string(r, v >= 10, &s, &len, &cut);
	target_of(x, s, len, cut);
	return true;
}

/* --- response bodies: the first non-zero error code --- */

static int16_t produce_response(struct rd *r, unsigned v)
{
	int64_t topics = rd_array(r, false);

	for (int64_t t = 0; t < topics && t < MAX_ELEMENTS && !r->err; t++) {
		int64_t parts;

		rd_skip_string(r, false);
		parts = rd_array(r, false);
		for (int64_t p = 0; p < parts && p < MAX_ELEMENTS && !r->err; p++) {
			int16_t err;

			rd_skip(r, 4); /* index */
			err = (int16_t)rd_int(r, 2);
			if (!r->err && err)
				return err;
			/* base_offset, log_append_time_ms (v2+), log_start_offset (v5+) */
			rd_skip(r, 8 + (v >= 2 ? 8 : 0) + (v >= 5 ? 8 : 0));
			if (v >= 8) {
				int64_t errs = rd_array(r, false);

				for (int64_t i = 0; i < errs && i < MAX_ELEMENTS && !r->err; i++) {
					rd_skip(r, 4);
					rd_skip_string(r, true);
					rd_tags(r);
				}
				rd_skip_string(r, true);
			}
			rd_tags(r);
		}
		rd_tags(r);
	}
	return 0;
}

static int16_t fetch_response(struct rd *r, unsigned v)
{
	int64_t topics;

	if (v >= 1)
		rd_skip(r, 4); /* throttle_time_ms */
	if (v >= 7) {
		int16_t err = (int16_t)rd_int(r, 2);

		if (!r->err && err)
			return err;
		rd_skip(r, 4); /* session_id */
	}
	topics = rd_array(r, false);
	for (int64_t t = 0; t < topics && t < MAX_ELEMENTS && !r->err; t++) {
		int64_t parts;

		if (v <= 12)
			rd_skip_string(r, false);
		else
			rd_skip(r, 16);
		parts = rd_array(r, false);
		for (int64_t p = 0; p < parts && p < MAX_ELEMENTS && !r->err; p++) {
			int16_t err;

			rd_skip(r, 4); /* partition_index */
			err = (int16_t)rd_int(r, 2);
			if (!r->err && err)
				return err;
			/* high_watermark, last_stable_offset (v4+), log_start_offset (v5+) */
			rd_skip(r, 8 + (v >= 4 ? 8 : 0) + (v >= 5 ? 8 : 0));
			if (v >= 4) {
				int64_t aborted = rd_array(r, true);

				for (int64_t i = 0; i < aborted && i < MAX_ELEMENTS && !r->err;
				     i++) {
					rd_skip(r, 16);
					rd_tags(r);
				}
			}
			if (v >= 11)
				rd_skip(r, 4); /* preferred_read_replica */
			rd_skip_bytes(r);      /* records */
			rd_tags(r);
		}
		rd_tags(r);
	}
	return 0;
}

static int16_t metadata_response(struct rd *r, unsigned v)
{
	int64_t brokers, topics;

	if (v >= 3)
		rd_skip(r, 4); /* throttle_time_ms */
	brokers = rd_array(r, false);
	for (int64_t b = 0; b < brokers && b < MAX_ELEMENTS && !r->err; b++) {
		rd_skip(r, 4); /* node_id */
		rd_skip_string(r, false);
		rd_skip(r, 4); /* port */
		if (v >= 1)
			rd_skip_string(r, true); /* rack */
		rd_tags(r);
	}
	if (v >= 2)
		rd_skip_string(r, true); /* cluster_id */
	if (v >= 1)
		rd_skip(r, 4); /* controller_id */
	topics = rd_array(r, false);
	for (int64_t t = 0; t < topics && t < MAX_ELEMENTS && !r->err; t++) {
		int64_t parts;
		int16_t err = (int16_t)rd_int(r, 2);

		if (!r->err && err)
			return err;
		rd_skip_string(r, v >= 12);
		if (v >= 10)
			rd_skip(r, 16); /* topic_id */
		if (v >= 1)
			rd_skip(r, 1); /* is_internal */
		parts = rd_array(r, false);
		for (int64_t p = 0; p < parts && p < MAX_ELEMENTS && !r->err; p++) {
			err = (int16_t)rd_int(r, 2);
			if (!r->err && err)
				return err;
			/* partition_index, leader_id, leader_epoch (v7+) */
			rd_skip(r, 4 + 4 + (v >= 7 ? 4 : 0));
			rd_skip_int32s(r); /* replica_nodes */
			rd_skip_int32s(r); /* isr_nodes */
			if (v >= 5)
				rd_skip_int32s(r); /* offline_replicas */
			rd_tags(r);
		}
		if (v >= 8)
			rd_skip(r, 4); /* topic_authorized_operations */
		rd_tags(r);
	}
	return 0;
}

/*
 * APIs whose response body begins with error_code, after throttle_time_ms from version
 * `throttle` on (-1: never), up to version `max`.
 */
static const struct {
	int16_t key;
	int8_t throttle;
	int8_t max;
} leading_error[] = {
	{ K_FIND_COORDINATOR, 1, 3 }, { K_JOIN_GROUP, 2, 9 },	    { K_HEARTBEAT, 1, 4 },
	{ K_LEAVE_GROUP, 1, 5 },      { K_SYNC_GROUP, 1, 5 },	    { K_SASL_HANDSHAKE, -1, 1 },
	{ K_API_VERSIONS, -1, 127 },  { K_INIT_PRODUCER_ID, 0, 5 }, { K_SASL_AUTHENTICATE, -1, 2 },
};

/* The response's error code; *parsed false if its body is not one this file reads. */
static int16_t response_error(struct rd *r, unsigned key, unsigned v, bool *parsed)
{
	*parsed = true;
	switch (key) {
	case K_PRODUCE:
		if (v <= 11)
			return produce_response(r, v);
		break;
	case K_FETCH:
		if (v <= 17)
			return fetch_response(r, v);
		break;
	case K_METADATA:
		if (v <= 12)
			return metadata_response(r, v);
		break;
	default:
		for (size_t i = 0; i < sizeof(leading_error) / sizeof(leading_error[0]); i++) {
			if (leading_error[i].key != (int)key || (int)v > leading_error[i].max)
				continue;
			if (leading_error[i].throttle >= 0 && (int)v >= leading_error[i].throttle)
				rd_skip(r, 4);
			return (int16_t)rd_int(r, 2);
		}
		break;
	}
	*parsed = false;
	return 0;
}

/* --- framing --- */

/* 1 if p looks like a request's start, 0 if not, -1 if it needs ret->need bytes. */
static int looks_like_request(const uint8_t *p, size_t n, uint64_t total, bool final,
			      struct l7msg_head *ret)
{
	int16_t key, version, id_len;
	size_t want, have;

	if (n < 12) {
		if (final || total < 12)
			return 0;
		ret->need = 12;
		return -1;
	}
	key = (int16_t)be16(p + 4);
	version = (int16_t)be16(p + 6);
	if (key < 0 || key > MAX_API_KEY || version < 0 || version > MAX_API_VERSION)
		return 0;
	if (key == K_CONTROLLED_SHUTDOWN && version == 0)
		return 1;
	if (total < 14)
		return 0;
	if (n < 14) {
		if (final)
			return 1;
		ret->need = 14;
		return -1;
	}
	id_len = (int16_t)be16(p + 12);
	if (id_len < -1 || 14 + (uint64_t)(id_len < 0 ? 0 : id_len) > total)
		return 0;
	if (id_len <= 0)
		return 1;
	want = 14 + (id_len < (int)CLIENT_ID_PEEK ? (size_t)id_len : CLIENT_ID_PEEK);
	if (n < want && !final) {
		ret->need = want;
		return -1;
	}
	have = (n < want ? n : want) - 14;
	for (size_t i = 0; i < have; i++)
		if (p[14 + i] < 0x20 || p[14 + i] == 0x7f)
			return 0;
	return 1;
}

static enum l7msg_verdict kafka_head(struct l7msg_conn *c, enum l7_dir dir, const uint8_t *p,
				     size_t n, bool final, bool resync, struct l7msg_head *ret)
{
	enum l7_role role = l7msg__role(c);
	enum l7_dir req = role == L7_ROLE_SERVER ? L7_INGRESS : L7_EGRESS;
	uint32_t size;
	int r;

	if (n < 4) {
		if (final)
			return L7MSG_BAD;
		ret->need = 4;
		return L7MSG_MORE;
	}
	size = be32(p);
	if (size < 4 || size > MAX_SIZE)
		return L7MSG_BAD;
	ret->total = 4 + (uint64_t)size;
	if (role != L7_ROLE_UNKNOWN && dir != req) {
		if (n < 8 && !final) {
			ret->need = 8;
			return L7MSG_MORE;
		}
		if (resync && (n < 8 || !l7msg__find(c, be32(p + 4))))
			return L7MSG_BAD;
		ret->kind = L7MSG_RESPONSE;
		return L7MSG_OK;
	}
	r = looks_like_request(p, n, ret->total, final, ret);
	if (r < 0)
		return L7MSG_MORE;
	if (r) {
		ret->kind = L7MSG_REQUEST;
		return L7MSG_OK;
	}
	if (role == L7_ROLE_UNKNOWN && !resync) {
		ret->kind = L7MSG_UNKNOWN;
		return L7MSG_OK;
	}
	return L7MSG_BAD;
}

static const char *api_name(unsigned key, char *buf, size_t cap)
{
	if (key < sizeof(apis) / sizeof(apis[0]))
		return apis[key].name;
	snprintf(buf, cap, "ApiKey%u", key);
	return buf;
}

static struct l7msg_entry *kafka_request(struct l7msg_conn *c, const struct l7msg_msg *m)
{
	struct rd r = { .p = m->p, .n = m->n, .total = m->total, .off = 12 };
	unsigned key = be16(m->p + 4), v = be16(m->p + 6);
	struct l7_exchange x = { 0 };
	struct l7msg_entry *e;
	char buf[16];
	const char *name = api_name(key, buf, sizeof(buf));
	bool parsed = true;
	int acks = -1;

	l7__copy_str(x.op, sizeof(x.op), (const uint8_t *)name, strlen(name));
	if (!(key == K_CONTROLLED_SHUTDOWN && v == 0))
		rd_skip_string(&r, true); /* client_id, an int16 length in every header version */
	r.flex = flexible(key, v);
	rd_tags(&r);
	switch (key) {
	case K_PRODUCE:
		parsed = produce_request(&r, v, &x, &acks);
		break;
	case K_FETCH:
		parsed = fetch_request(&r, v, &x);
		break;
	case K_METADATA:
		parsed = metadata_request(&r, v, &x);
		break;
	default:
		break;
	}
	if (r.err == -EBADMSG)
		l7msg__st(c)->malformed++;
	e = l7msg__request(c, m, be32(m->p + 8));
	if (!e)
		return NULL;
	memcpy(e->x.op, x.op, sizeof(x.op));
	memcpy(e->x.target, x.target, sizeof(x.target));
	e->x.flags |= x.flags;
	e->aux = key << 16 | v;
	if (key == K_PRODUCE && parsed && acks == 0)
		l7msg__no_reply(c, e, m);
	return e;
}

static struct l7msg_entry *kafka_response(struct l7msg_conn *c, const struct l7msg_msg *m)
{
	struct rd r = { .p = m->p, .n = m->n, .total = m->total, .off = 8 };
	struct l7msg_entry *e;
	unsigned key, v;
	bool parsed;
	int16_t err;

	if (m->n < 8)
		return l7msg__orphan(c, m, UINT64_MAX);
	e = l7msg__find(c, be32(m->p + 4));
	if (!e)
		return l7msg__orphan(c, m, be32(m->p + 4));
	key = e->aux >> 16;
	v = e->aux & 0xffff;
	r.flex = flexible(key, v);
	if (key != K_API_VERSIONS)
		rd_tags(&r);
	err = response_error(&r, key, v, &parsed);
	if (!parsed)
		l7msg__count_unparsed(c);
	else if (r.err == -EBADMSG)
		l7msg__st(c)->malformed++;
	e->x.code = err;
	e->x.error = err != 0;
	l7msg__answer(c, e, m, true);
	return e;
}

static struct l7msg_entry *kafka_done(struct l7msg_conn *c, const struct l7msg_msg *m)
{
	return m->is_req ? kafka_request(c, m) : kafka_response(c, m);
}

static const struct l7msg_proto kafka_proto = {
	.name = "kafka",
	.hdr_min = 4,
	.head = kafka_head,
	.done = kafka_done,
};

static void *kafka_new(unsigned flags)
{
	return l7msg__new(&kafka_proto, flags);
}

const struct l7_ops l7_kafka_ops = {
	.name = "kafka",
	.title = "Kafka",
	.new_conn = kafka_new,
	L7MSG_OPS,
};
