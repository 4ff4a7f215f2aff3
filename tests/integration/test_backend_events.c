// SPDX-License-Identifier: Apache-2.0
/*
 * A backend NETWORK task whose sampling rule requires complete requests and responses, run by
 * the whole agent (`rover run --config`) against the fake OAP (tests/oap/fake_oap.py): a
 * traced HTTP server answers requests that carry an sw8 header, and the OAP gets, besides the
 * sampled trace's log, one SpanAttachedEvent per message through
 * SpanAttachedEventReportService/collect, with upstream's names, tags and trace reference.
 * (The setup is a trimmed copy of test_backend.c's.)
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

static pid_t started[4];
static int nstarted;
static char server_name[64];

static pid_t track(pid_t pid)
{
	if (pid > 0 && nstarted < 4)
		started[nstarted++] = pid;
	return pid;
}

static void stop(pid_t pid, int sig)
{
	if (pid <= 0)
		return;
	kill(pid, sig);
	if (wait_cmd(pid, 10000) < 0 || waitpid(pid, NULL, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void events_fini(void)
{
	for (int i = nstarted - 1; i >= 0; i--)
		if (waitpid(started[i], NULL, WNOHANG) == 0)
			stop(started[i], SIGTERM);
	nstarted = 0;
	tmp_teardown();
}

TestSuite(backend_events, .init = tmp_setup, .fini = events_fini, .timeout = 150);

static char *src_path(const char *rel)
{
	static char buf[4096];
	const char *src = getenv("ROVER_SRC");

	snprintf(buf, sizeof(buf), "%s/%s", src ? src : ".", rel);
	return buf;
}

static pid_t start_oap(int *ret_port)
{
	char *argv[] = { "/usr/bin/python3",
			 src_path("tests/oap/fake_oap.py"),
			 "--port",
			 "0",
			 "--bind",
			 "127.0.0.1",
			 "--port-file",
			 tmp_path("oap.port"),
			 "--record",
			 tmp_path("rec.jsonl"),
			 "--tasks",
			 tmp_path("tasks.json"),
			 NULL };
	pid_t pid = track(spawn_cmd(argv, tmp_path("oap.log")));

	cr_assert_gt(pid, 0);
	for (int i = 0; i < 300; i++) {
		char *s = slurp(tmp_path("oap.port"), NULL);

		if (s && atoi(s) > 0) {
			*ret_port = atoi(s);
			free(s);
			return pid;
		}
		free(s);
		sleep_ms(50);
	}
	cr_assert_fail("fake OAP did not start: %s", slurp(tmp_path("oap.log"), NULL));
	return -1;
}

static const char *config_fmt = "logger:\n"
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
				"      - match_cmd_regex: \"/(%s) [0-9]+$\"\n"
				"        layer: OS_LINUX\n"
				"        service_name: \"rover-ev\"\n"
				"        instance_name: \"inst-ev\"\n"
				"        process_name: \"{{.Process.ExeName}}\"\n"
				"profiling:\n"
				"  active: true\n"
				"  check_interval: 1s\n"
				"  task:\n"
				"    network:\n"
				"      report_interval: 1s\n";

static pid_t start_rover(int port)
{
	char cfg[4096];
	char *argv[] = { (char *)bin("rover"), "run", "--config", tmp_path("rover.yaml"), NULL };

	snprintf(cfg, sizeof(cfg), config_fmt, port, server_name);
	cr_assert_eq(write_file(tmp_path("rover.yaml"), cfg), 0);
	return track(spawn_cmd(argv, tmp_path("rover.log")));
}

static struct json_object **records(size_t *ret_n)
{
	char *text = slurp(tmp_path("rec.jsonl"), NULL), *save = NULL, *line;
	struct json_object **out = NULL;
	size_t n = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct json_object *o = json_tokener_parse(line);

		if (!o)
			continue;
		out = realloc(out, (n + 1) * sizeof(*out));
		out[n++] = o;
	}
	free(text);
	*ret_n = n;
	return out;
}

static void records_free(struct json_object **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_put(r[i]);
	free(r);
}

static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		else if (!json_object_object_get_ex(o, k, &o))
			o = NULL;
	}
	return o;
}

static const char *str_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v ? json_object_get_string(v) : NULL;
}

static int count_method(const char *method)
{
	size_t n;
	struct json_object **r = records(&n);
	int c = 0;

	for (size_t i = 0; i < n; i++)
		c += str_at(r[i], "method") && !strcmp(str_at(r[i], "method"), method);
	records_free(r, n);
	return c;
}

static int wait_log(const char *text, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		char *log = slurp(tmp_path("rover.log"), NULL);
		int found = log && strstr(log, text);

		free(log);
		if (found)
			return 1;
		sleep_ms(200);
	}
	return 0;
}

/* The tag key of an event's message, or NULL. */
static const char *tag(struct json_object *m, const char *key)
{
	struct json_object *tags = at(m, "tags");

	for (size_t i = 0; tags && i < json_object_array_length(tags); i++) {
		struct json_object *t = json_object_array_get_idx(tags, i);

		if (str_at(t, "key") && !strcmp(str_at(t, "key"), key))
			return str_at(t, "value");
	}
	return NULL;
}

/* sw8 of trace "trace-ev", segment "seg-ev", span 7 */
#define SW8 "1-dHJhY2UtZXY=-c2VnLWV2-7-YQ==-YQ==-YQ==-YQ=="

Test(backend_events, required_messages_are_sent_as_span_attached_events)
{
	char path[4096], cmd[8192], portarg[16], url[128], *out = NULL;
	char *curl[] = { "curl", "-s", "-o", "/dev/null", "-H", "sw8: " SW8, url, NULL };
	int port = 0, hport = free_port(20000, 29999), got_req = 0, got_resp = 0;
	pid_t server, oap, rover;
	size_t n;
	struct json_object **r;

	cr_assert_gt(hport, 0);
	snprintf(server_name, sizeof(server_name), "http_server_ev_%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", tmp, server_name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin("tests/programs/http_server"), path);
	cr_assert_eq(system(cmd), 0);
	snprintf(portarg, sizeof(portarg), "%d", hport);
	server = track(start_program(path, portarg));
	cr_assert_gt(server, 0);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(&port);
	rover = start_rover(port);
	for (int i = 0; i < 100 && !count_method("reportProcesses"); i++)
		sleep_ms(200);
	snprintf(cmd, sizeof(cmd),
		 "[{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"net-ev\", "
		 "\"ProcessId\": \"@process:%s\", \"TaskUpdateTime\": \"@now\", \"TriggerType\": "
		 "\"FIXED_TIME\", \"TargetType\": \"NETWORK\", \"TaskStartTime\": \"@now\", "
		 "\"FixedTriggerDuration\": \"60\", \"ExtensionConfigJSON\": \"{\\\"NetworkSamplings\\\":"
		 "[{\\\"MinDuration\\\":0,\\\"Settings\\\":{\\\"RequireCompleteRequest\\\":true,"
		 "\\\"MaxRequestSize\\\":2048,\\\"RequireCompleteResponse\\\":true,"
		 "\\\"MaxResponseSize\\\":2048}}]}\"}}]\n",
		 server_name);
	cr_assert_eq(write_file(tmp_path("tasks.new"), cmd), 0);
	rename(tmp_path("tasks.new"), tmp_path("tasks.json"));
	cr_assert(wait_log("task net-ev: NETWORK for", 30000), "not started:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ok", hport);
	/* Requests until the events come: the worker attaches a moment after the task starts. */
	for (int i = 0; i < 60 && !count_method("SpanAttachedEventReportService/collect"); i++) {
		cr_assert_eq(run_capture(NULL, curl, 5000, &out), 0, "%s", out ? out : "");
		free(out);
		out = NULL;
		sleep_ms(500);
	}
	r = records(&n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = at(r[i], "message");
		const char *type, *content;

		if (!str_at(r[i], "method") ||
		    strcmp(str_at(r[i], "method"), "SpanAttachedEventReportService/collect"))
			continue;
		type = tag(m, "data_type");
		content = tag(m, "data_content");
		cr_assert(type && content, "%s", json_object_to_json_string(m));
		cr_expect_str_eq(str_at(m, "traceContext.traceId"), "trace-ev");
		cr_expect_str_eq(str_at(m, "traceContext.traceSegmentId"), "seg-ev");
		cr_expect_str_eq(str_at(m, "traceContext.spanId"), "7");
		/* SKYWALKING is 0, which the record leaves out as a default */
		cr_expect(!at(m, "traceContext.type") ||
			  !strcmp(str_at(m, "traceContext.type"), "SKYWALKING"));
		cr_expect_str_eq(tag(m, "connection_role"), "server");
		cr_expect_str_eq(tag(m, "service_name"), "rover-ev");
		cr_expect_str_eq(tag(m, "service_instance_name"), "inst-ev");
		cr_expect_str_eq(tag(m, "process_name"), server_name);
		cr_expect(str_at(m, "startTime.seconds"), "no start time");
		if (!strcmp(type, "request")) {
			got_req++;
			cr_expect_str_eq(str_at(m, "event"), "HTTP Request Sampling");
			cr_expect_str_eq(tag(m, "data_direction"), "inbound");
			cr_expect(!strncmp(content, "GET /ok HTTP/1.1\r\n", 18), "%s", content);
			cr_expect(strstr(content, "sw8: " SW8 "\r\n"), "%s", content);
		} else {
			got_resp++;
			cr_expect_str_eq(type, "response");
			cr_expect_str_eq(str_at(m, "event"), "HTTP Response Sampling");
			cr_expect_str_eq(tag(m, "data_direction"), "outbound");
			cr_expect(!strncmp(content, "HTTP/1.1 200 ", 13), "%s", content);
			cr_expect(strstr(content, "Content-Type: text/plain\r\n"), "%s", content);
		}
	}
	records_free(r, n);
	cr_assert_gt(got_req, 0, "no request event; rover log:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_assert_gt(got_resp, 0, "no response event");
	cr_expect_gt(count_method("LogReportService/collect"), 0, "no sampled trace log");
	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(server);
}
