// SPDX-License-Identifier: Apache-2.0
/*
 * How the NETWORK program turns a target's calls into payload segments, seen from the report:
 * a read that got exactly the few bytes it asked for (a packet's header, which MariaDB reads
 * before the packet's payload) is held by the program and sent with the next call as one
 * segment (bpf/net.bpf.c, holdable()); the request must still start when the header was read.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/netreport.h"

static pid_t task = -1, client = -1, db = -1;

static void setup(void)
{
	task = client = db = -1;
	tmp_setup();
}

static void teardown(void)
{
	if (task > 0)
		wait_cmd(task, 1);
	if (client > 0)
		wait_cmd(client, 1);
	if (db > 0) {
		kill(db, SIGTERM);
		wait_cmd(db, 20000);
	}
	tmp_teardown();
}

TestSuite(capture, .init = setup, .fini = teardown, .timeout = 180);

/* The endpoint's latency percentile (ms), or the test fails. */
static double latency_ms(struct json_object *e, const char *pct)
{
	struct json_object *l, *v;

	cr_assert(json_object_object_get_ex(e, "latency_ms", &l) &&
			  json_object_object_get_ex(l, pct, &v),
		  "no latency_ms.%s: %s", pct, nr_dump(e));
	return json_object_get_double(v);
}

/*
 * tests/tools/mysql_split.py writes each COM_QUERY's header, then its payload 200 ms later:
 * MariaDB's read of the header returns 200 ms before its read of the payload. Every query is
 * in the server's report, and each took at least those 200 ms: the request began with its
 * header, though the program sent the header with the payload.
 */
Test(capture, a_header_read_alone_starts_its_request)
{
	int port = free_port(13300, 13399), queries = 5;
	char portarg[16], nq[16], pid[16], *log, *out;
	char *argv[] = { "/usr/bin/python3",
			 (char *)src("tests/tools/mysql_split.py"),
			 portarg,
			 nq,
			 "0.2",
			 NULL };
	struct json_object *r, *e;
	struct nr_sum s;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	snprintf(nq, sizeof(nq), "%d", queries);
	db = nr_mariadb_start(port, NULL);
	snprintf(pid, sizeof(pid), "%d", (int)db);
	task = nr_start(pid, "8s", "split.json", 1);
	client = spawn_cmd(argv, tmp_path("split.out"));
	cr_assert_gt(client, 0);
	cr_assert_eq(wait_cmd(client, 30000), 0, "%s", slurp(tmp_path("split.out"), NULL));
	client = -1;
	out = slurp(tmp_path("split.out"), NULL);
	cr_assert(out && strstr(out, "queries 5"), "%s", out);
	r = nr_end(task, "split.json", &log);
	task = -1;

	e = nr_endpoint(r, db, "server", "mysql", "COM_QUERY", "SELECT 1");
	cr_assert_not_null(e, "%s", nr_dump(nr_array(r, "endpoints")));
	cr_assert_eq(nr_int(e, "requests"), queries, "%s", nr_dump(e));
	cr_assert_eq(nr_code(e, 0), queries, "%s", nr_dump(e));
	cr_assert_geq(latency_ms(e, "p50"), 200.0, "%s", nr_dump(e));
	cr_assert_lt(latency_ms(e, "p99"), 2000.0, "%s", nr_dump(e));
	/* The login and the quit too, every byte in a request: nothing left unparsed. */
	nr_sum(r, db, "mysql", &s);
	cr_assert_eq(s.requests, queries + 1, "%s", nr_dump(r));
	cr_assert_eq(s.errors, 0, "%s", nr_dump(r));
	json_object_put(r);
	free(out);
	free(log);
}
