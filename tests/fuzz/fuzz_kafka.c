// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a traced TCP connection's bytes as the shipper's Kafka parser gets them
 * (shipper/kafka.c through l7_kafka_ops). Input format and contracts: tests/fuzz/fuzz_l7.h.
 */
#include "tests/fuzz/fuzz_l7.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_l7(&l7_kafka_ops, data, size);
}
