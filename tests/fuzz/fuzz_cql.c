// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a traced TCP connection's bytes as the shipper's CQL parser gets them
 * (shipper/network/protocols/cql.c through l7_cql_ops), in the input format and with the checks of
 * l7_fuzz.h. A run is clean for the split check only if no candidate frame start was
 * refused: resynchronizing on a segment start depends on where segments begin.
 */
#include "shipper/network/protocols/cql.h"
#include "tests/fuzz/l7_fuzz.h"

static int cql_clean(void *c)
{
	struct cql_stats cq;

	if (cql__stats(c, &cq))
		abort();
	return !cq.bad_starts;
}

static const struct l7f_target target = {
	.ops = &l7_cql_ops,
	.check_x = l7f_check_named_cut,
	.clean = cql_clean,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return l7f_run(&target, data, size);
}
