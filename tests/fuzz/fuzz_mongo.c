// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a traced TCP connection's bytes as the shipper's MongoDB parser gets them
 * (shipper/mongo.c through l7_mongo_ops). Input format and contracts: tests/fuzz/fuzz_l7.h.
 */
#include "tests/fuzz/fuzz_l7.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_l7(&l7_mongo_ops, data, size);
}
