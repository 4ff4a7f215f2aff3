// SPDX-License-Identifier: Apache-2.0
/*
 * The protocols beyond HTTP against the (fake) OAP: a NETWORK task of the backend on a DNS
 * server (unbound) that the agent discovered, and what MeterReportService/collectBatch
 * carries for it: the <prefix>_dns_* meters (docs/network.md, "Against the OAP"; the rules of
 * deploy/oap/network-profiling-protocols.yaml read them), with upstream's labels in upstream's
 * order and the protocol's own codes, every count what the client (kdig) printed.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"
#include "tests/integration/oap_harness.h"

#define SERVICE "rover-proto-test"

static struct tls_proc ub;

static void init(void)
{
	memset(&ub, 0, sizeof(ub));
	tmp_setup();
}

static void fini(void)
{
	stop_tracked();
	unbound_stop(&ub);
	tmp_teardown();
}

TestSuite(backend_proto, .init = init, .fini = fini, .timeout = 150);

static const char *const cfg_fmt = "logger:\n"
				   "  level: INFO\n"
				   "core:\n"
				   "  backend:\n"
				   "    addr: 127.0.0.1:%d\n"
				   "process_discovery:\n"
				   "  heartbeat_period: 1s\n"
				   "  vm:\n"
				   "    active: true\n"
				   "    period: 500ms\n"
				   "    finders:\n"
				   "      - match_cmd_regex: \"^unbound -d -c %s.conf$\"\n"
				   "        layer: OS_LINUX\n"
				   "        service_name: \"" SERVICE "\"\n"
				   "        instance_name: \"{{.Rover.HostName}}\"\n"
				   "        process_name: \"dns_server\"\n"
				   "profiling:\n"
				   "  active: true\n"
				   "  check_interval: 1s\n"
				   "  flush_interval: 1s\n"
				   "  task:\n"
				   "    network:\n"
				   "      report_interval: 1s\n";

struct dns_meters {
	double requests, errors, code[16], duration_count;
	int problems;
	char why[1024];
};

static void problem(struct dns_meters *m, const char *what, struct json_object *o)
{
	if (!m->problems++)
		snprintf(m->why, sizeof(m->why), "%s: %s", what, json_object_to_json_string(o));
}

/* Every collectBatch so far: the dns meters summed, their labels checked. */
static void dns_meters_read(struct dns_meters *m)
{
	static const char *const want[5] = { "server_process_id", "client_local", "side",
					     "protocol", "is_ssl" };
	static const char *const value[5] = { NULL, "true", "server", "dns", "false" };
	size_t n;
	struct json_object **r = records(&n);

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < n; i++) {
		struct json_object *md = at(r[i], "message.meterData");

		if (strcmp(method_of(r[i]), "collectBatch") || !md)
			continue;
		for (size_t k = 0; k < json_object_array_length(md); k++) {
			struct json_object *d = json_object_array_get_idx(md, k);
			struct json_object *v = at(d, "singleValue") ? at(d, "singleValue")
								     : at(d, "histogram");
			struct json_object *labels = v ? at(v, "labels") : NULL;
			const char *name = v ? str_at(v, "name") : NULL;
			size_t nl = labels ? json_object_array_length(labels) : 0;
			int code = -1;

			if (!name || strncmp(name, "rover_net_p_dns_", 16))
				continue;
			name += 16;
			if (nl != 5 + !strcmp(name, "response_status_counter")) {
				problem(m, name, d);
				continue;
			}
			for (size_t l = 0; l < nl; l++) {
				struct json_object *lb = json_object_array_get_idx(labels, l);
				const char *ln = str_at(lb, "name"), *lv = str_at(lb, "value");

				if (l == 5 && ln && !strcmp(ln, "code") && lv)
					code = atoi(lv);
				else if (l == 5 || !ln || strcmp(ln, want[l]) || !lv || !*lv ||
					 (value[l] && strcmp(lv, value[l])))
					problem(m, "labels", labels);
			}
			if (!strcmp(name, "request_counter"))
				m->requests += num_at(v, "value");
			else if (!strcmp(name, "error_counter"))
				m->errors += num_at(v, "value");
			else if (!strcmp(name, "response_status_counter") && code >= 0 && code < 16)
				m->code[code] += num_at(v, "value");
			else if (!strcmp(name, "server_duration_histogram")) {
				struct json_object *vals = at(v, "values");

				if (!vals || json_object_array_length(vals) != 45)
					problem(m, "duration buckets", d);
				for (size_t b = 0; vals && b < json_object_array_length(vals); b++)
					m->duration_count +=
						num_at(json_object_array_get_idx(vals, b), "count");
			}
		}
	}
	records_free(r, n);
}

/*
 * unbound, discovered and reported; the OAP's NETWORK task on it; kdig asks five questions
 * over TCP, two of them for a name that does not exist: the meters say 5 requests, 2 errors,
 * codes 0 x3 and 3 x2 (NXDOMAIN), 5 durations, with upstream's labels and protocol "dns".
 */
Test(backend_proto, dns_meters_reach_the_oap_with_their_codes)
{
	int port = free_port(15500, 15599), oport = 0;
	char cfg[4096], text[2048], portarg[16], *err = NULL;
	char *kdig[] = { "/usr/bin/kdig",
			 "@127.0.0.1",
			 "-p",
			 portarg,
			 "+tcp",
			 "+keepopen",
			 "+retry=0",
			 "+timeout=5",
			 "example.test",
			 "A",
			 "example.test",
			 "A",
			 "example.test",
			 "AAAA",
			 "nope.example.test",
			 "A",
			 "nope.example.test",
			 "A",
			 NULL };
	struct json_object *h;
	struct dns_meters m;
	pid_t rover;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	cr_assert_eq(unbound_start(port, NULL, &ub), 0);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	start_oap(0, &oport);
	/* this unbound only, by its configuration file */
	snprintf(cfg, sizeof(cfg), cfg_fmt, oport, ub.out);
	rover = start_rover_cfg(cfg);
	cr_assert_gt(rover, 0);
	h = wait_reported(ub.pid, 20000);
	cr_assert_not_null(h, "unbound not reported: %s", slurp(tmp_path("rover.log"), NULL));
	cr_assert_str_eq(str_at(h, "entity.processName"), "dns_server");
	json_object_put(h);
	snprintf(text, sizeof(text),
		 "[{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"dns-1\", "
		 "\"ProcessId\": \"@process:dns_server\", \"TaskUpdateTime\": \"@now\", "
		 "\"TriggerType\": \"FIXED_TIME\", \"TargetType\": \"NETWORK\", \"TaskStartTime\": "
		 "\"@now\", \"FixedTriggerDuration\": \"20\", \"ExtensionConfigJSON\": \"null\"}}]\n");
	cr_assert_eq(write_file(tmp_path("tasks.new"), text), 0);
	rename(tmp_path("tasks.new"), tmp_path("tasks.json"));
	cr_assert(wait_log("attached with", 15000), "%s", slurp(tmp_path("rover.log"), NULL));
	cr_assert_eq(run_cmd(kdig, &err), 0, "%s", err);
	free(err);

	for (int i = 0; i < 60; i++) {
		dns_meters_read(&m);
		if (m.requests >= 5)
			break;
		sleep_ms(250);
	}
	sleep_ms(2500); /* two report intervals more: a late or doubled count would show */
	dns_meters_read(&m);
	cr_expect_eq(m.problems, 0, "%s", m.why);
	cr_expect_eq(m.requests, 5, "dns_request_counter adds up to %g", m.requests);
	cr_expect_eq(m.errors, 2, "dns_error_counter adds up to %g", m.errors);
	cr_expect_eq(m.code[0], 3, "code 0: %g", m.code[0]);
	cr_expect_eq(m.code[3], 2, "code 3: %g", m.code[3]);
	cr_expect_eq(m.duration_count, 5, "durations: %g", m.duration_count);
	stop(rover, SIGTERM);
}
