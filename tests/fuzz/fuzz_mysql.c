// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a traced TCP connection's bytes as the shipper's MySQL parser gets them
 * (shipper/network/protocols/mysql.c through l7_mysql_ops), in the input format and with the checks of
 * l7_fuzz.h. A run is clean for the split check only if no candidate packet was refused:
 * resynchronizing on a segment start depends on where segments begin.
 */
#include "shipper/network/protocols/mysql.h"
#include "tests/fuzz/l7_fuzz.h"

static int mysql_clean(void *c)
{
	struct mysql_stats my;

	if (mysql__stats(c, &my))
		abort();
	if (my.deprecate_eof < -1 || my.deprecate_eof > 1)
		abort();
	return !my.bad_starts;
}

static const struct l7f_target target = {
	.ops = &l7_mysql_ops,
	.check_x = l7f_check_named_cut,
	.clean = mysql_clean,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return l7f_run(&target, data, size);
}
