// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a traced TCP connection's bytes as the shipper's Kafka parser gets them
 * (shipper/network/protocols/kafka.c over shipper/network/protocols/l7msg.c, through l7_kafka_ops). Input format and contracts:
 * tests/fuzz/l7_fuzz.h, with the pending count of l7msg.
 */
#include "tests/fuzz/l7_fuzz.h"

static const struct l7f_target target = {
	.ops = &l7_kafka_ops,
	.check_x = l7f_check_named,
	.pending = l7f_l7msg_pending,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return l7f_run(&target, data, size);
}
