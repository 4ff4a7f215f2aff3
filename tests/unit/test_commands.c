// SPDX-License-Identifier: Apache-2.0
/*
 * EBPFProfilingTaskQuery commands (supervisor/backend/commands.h) as an OAP sends them
 * (skywalking-protocol.md): every arg required and checked, the reason of a refusal naming the
 * arg, and when a parsed task runs.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/msg.h"
#include "common/netrec.h"
#include "supervisor/backend/commands.h"

#define MAX_ARGS 16

struct cmd {
	Skywalking__V3__Command c;
	Skywalking__V3__KeyStringValuePair kv[MAX_ARGS];
	Skywalking__V3__KeyStringValuePair *pkv[MAX_ARGS];
};

static const char *const good[][2] = {
	{ "TaskId", "task-1" },
	{ "ProcessId", "p1,p2" },
	{ "TaskUpdateTime", "1700000000123" },
	{ "TriggerType", "FIXED_TIME" },
	{ "TargetType", "ON_CPU" },
	{ "TaskStartTime", "1700000000000" },
	{ "FixedTriggerDuration", "10" },
	{ "ExtensionConfigJSON", "" },
};
#define NGOOD (sizeof(good) / sizeof(good[0]))

/* The good command with arg `key` set to value (NULL: left out), extra args appended. */
static void make(struct cmd *m, const char *key, const char *value)
{
	size_t n = 0;

	memset(m, 0, sizeof(*m));
	skywalking__v3__command__init(&m->c);
	m->c.command = (char *)"EBPFProfilingTaskQuery";
	for (size_t i = 0; i < NGOOD; i++) {
		const char *v = good[i][1];

		if (key && !strcmp(key, good[i][0])) {
			if (!value)
				continue;
			v = value;
		}
		skywalking__v3__key_string_value_pair__init(&m->kv[n]);
		m->kv[n].key = (char *)good[i][0];
		m->kv[n].value = (char *)v;
		m->pkv[n] = &m->kv[n];
		n++;
	}
	m->c.args = m->pkv;
	m->c.n_args = n;
}

static void add(struct cmd *m, const char *key, const char *value)
{
	size_t n = m->c.n_args;

	skywalking__v3__key_string_value_pair__init(&m->kv[n]);
	m->kv[n].key = (char *)key;
	m->kv[n].value = (char *)value;
	m->pkv[n] = &m->kv[n];
	m->c.n_args = n + 1;
}

static struct sw_task parse_ok(struct cmd *m)
{
	struct sw_task t;
	char why[256] = "";

	cr_assert_eq(sw_task__parse(&m->c, &t, why, sizeof(why)), 0, "%s", why);
	return t;
}

/* Refused, the task untouched, the reason holding every string of want. */
static void refused(struct cmd *m, const char *want1, const char *want2)
{
	struct sw_task t;
	char why[256] = "";

	memset(&t, 0x5a, sizeof(t));
	cr_assert_eq(sw_task__parse(&m->c, &t, why, sizeof(why)), -EINVAL, "accepted");
	cr_assert_eq(((unsigned char *)&t)[0], 0x5a, "ret_task written on failure");
	cr_assert(strstr(why, want1), "'%s' does not say '%s'", why, want1);
	if (want2)
		cr_assert(strstr(why, want2), "'%s' does not say '%s'", why, want2);
}

Test(commands, good_command)
{
	struct cmd m;
	struct sw_task t;

	make(&m, NULL, NULL);
	t = parse_ok(&m);
	cr_assert_str_eq(t.task_id, "task-1");
	cr_assert_eq(t.nprocess_ids, 2);
	cr_assert_str_eq(t.process_ids[0], "p1");
	cr_assert_str_eq(t.process_ids[1], "p2");
	cr_assert_eq(t.update_time_ms, 1700000000123ULL);
	cr_assert_eq(t.start_time_ms, 1700000000000ULL);
	cr_assert_eq(t.duration_s, 10);
	cr_assert_eq(t.target_type, TASK_ON_CPU);
	cr_assert_str_eq(t.extension_json, "");

	/* Unknown extra args are ignored; arg order does not matter. */
	add(&m, "SomethingNewer", "whatever");
	Skywalking__V3__KeyStringValuePair *first = m.pkv[0];
	m.pkv[0] = m.pkv[m.c.n_args - 1];
	m.pkv[m.c.n_args - 1] = first;
	t = parse_ok(&m);
	cr_assert_str_eq(t.task_id, "task-1");

	const char *json =
		"{\"NetworkSamplings\":[{\"URIRegex\":\"/api/.*\",\"MinDuration\":10,"
		"\"When4xx\":true,\"When5xx\":true,\"Settings\":{\"RequireCompleteRequest\":"
		"true,\"MaxRequestSize\":1024}}]}  ";
	make(&m, "ExtensionConfigJSON", json);
	t = parse_ok(&m);
	cr_assert_str_eq(t.extension_json, json);
}

Test(commands, target_types)
{
	static const struct {
		const char *name;
		uint32_t type;
	} types[] = { { "ON_CPU", TASK_ON_CPU },
		      { "OFF_CPU", TASK_OFF_CPU },
		      { "NETWORK", TASK_NETWORK } };
	struct cmd m;

	for (size_t i = 0; i < 3; i++) {
		make(&m, "TargetType", types[i].name);
		cr_assert_eq(parse_ok(&m).target_type, types[i].type, "%s", types[i].name);
	}
	make(&m, "TargetType", "on_cpu");
	refused(&m, "TargetType", "'on_cpu'");
	make(&m, "TargetType", "MEMORY");
	refused(&m, "TargetType", "'MEMORY'");
}

Test(commands, each_missing_arg)
{
	struct cmd m;

	for (size_t i = 0; i < NGOOD; i++) {
		make(&m, good[i][0], NULL);
		refused(&m, "missing arg", good[i][0]);
	}
}

Test(commands, not_ours)
{
	struct cmd m;
	struct sw_task t;
	char why[128] = "";

	make(&m, NULL, NULL);
	m.c.command = (char *)"ContinuousProfilingPolicyQuery";
	cr_assert_eq(sw_task__parse(&m.c, &t, why, sizeof(why)), -ENOENT);
	m.c.command = (char *)"";
	cr_assert_eq(sw_task__parse(&m.c, &t, why, sizeof(why)), -ENOENT);
}

Test(commands, duplicate_arg)
{
	struct cmd m;

	make(&m, NULL, NULL);
	add(&m, "TaskId", "task-2");
	refused(&m, "TaskId", "twice");
}

Test(commands, non_numeric_values)
{
	static const char *const keys[] = { "TaskUpdateTime", "TaskStartTime",
					    "FixedTriggerDuration" };
	static const char *const bad[] = { "",	  "abc", "12a", "-5",	"+5",
					   " 10", "10 ", "1e3", "0x10", "99999999999999999999999" };
	struct cmd m;

	for (size_t k = 0; k < 3; k++)
		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
			make(&m, keys[k], bad[b]);
			refused(&m, keys[k], "not a decimal");
		}
	make(&m, "FixedTriggerDuration", "4294967296");
	refused(&m, "FixedTriggerDuration", "not a decimal");
	make(&m, "FixedTriggerDuration", "0");
	refused(&m, "FixedTriggerDuration", "zero");
	make(&m, "FixedTriggerDuration", "4294967295");
	cr_assert_eq(parse_ok(&m).duration_s, 4294967295u);
}

Test(commands, trigger_type)
{
	struct cmd m;

	make(&m, "TriggerType", "CONTINUOUS_PROFILING");
	refused(&m, "TriggerType", "'CONTINUOUS_PROFILING'");
	make(&m, "TriggerType", "");
	refused(&m, "TriggerType", NULL);
}

Test(commands, process_id_lists)
{
	struct cmd m;
	struct sw_task t;
	char many[SW_MAX_PROCESSES * 8] = "";

	make(&m, "ProcessId", "only");
	t = parse_ok(&m);
	cr_assert_eq(t.nprocess_ids, 1);
	cr_assert_str_eq(t.process_ids[0], "only");

	make(&m, "ProcessId", " a ,\tb,c ");
	t = parse_ok(&m);
	cr_assert_eq(t.nprocess_ids, 3);
	cr_assert_str_eq(t.process_ids[0], "a");
	cr_assert_str_eq(t.process_ids[1], "b");
	cr_assert_str_eq(t.process_ids[2], "c");

	static const char *const bad[] = { "", ",", "a,", ",a", "a,,b", "a, ,b", " " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make(&m, "ProcessId", bad[i]);
		refused(&m, "ProcessId", "empty");
	}
	make(&m, "ProcessId", "a,b,a");
	refused(&m, "ProcessId", "twice");

	for (int i = 0; i < SW_MAX_PROCESSES; i++)
		sprintf(many + strlen(many), "%sp%d", i ? "," : "", i);
	make(&m, "ProcessId", many);
	cr_assert_eq(parse_ok(&m).nprocess_ids, SW_MAX_PROCESSES);
	/* One task takes SW_MAX_PROCESSES: the rest are counted, the task still runs. */
	strcat(many, ",one-more,two-more");
	make(&m, "ProcessId", many);
	t = parse_ok(&m);
	cr_assert_eq(t.nprocess_ids, SW_MAX_PROCESSES);
	cr_assert_eq(t.ids_left_out, 2);
	cr_assert_str_eq(t.process_ids[SW_MAX_PROCESSES - 1], "p63");
	/* Ids past the bound are still checked: a bad one refuses the command. */
	strcat(many, ",,");
	make(&m, "ProcessId", many);
	refused(&m, "ProcessId", "empty");

	char longid[SW_ID_LEN + 1];
	memset(longid, 'x', SW_ID_LEN);
	longid[SW_ID_LEN] = '\0';
	make(&m, "ProcessId", longid);
	refused(&m, "ProcessId", "bad process id");
	longid[SW_ID_LEN - 1] = '\0';
	make(&m, "ProcessId", longid);
	cr_assert_eq(strlen(parse_ok(&m).process_ids[0]), SW_ID_LEN - 1);
}

Test(commands, task_id_and_json_bounds)
{
	struct cmd m;
	char big[5000];

	make(&m, "TaskId", "");
	refused(&m, "TaskId", "empty");
	make(&m, "TaskId", "a\nb");
	refused(&m, "TaskId", NULL);
	memset(big, 'a', SW_ID_LEN);
	big[SW_ID_LEN] = '\0';
	make(&m, "TaskId", big);
	refused(&m, "TaskId", NULL);

	static const char *const bad_json[] = { "{",	"{\"a\":}", "[1,2]",	 "\"s\"",
						"{} x", "not json", "{\"a\":1}}" };
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		make(&m, "ExtensionConfigJSON", bad_json[i]);
		refused(&m, "ExtensionConfigJSON", NULL);
	}
	/* Deeper than any extension config: refused, not recursed into. */
	strcpy(big, "{\"a\":");
	for (int i = 0; i < 40; i++)
		strcat(big, "[");
	for (int i = 0; i < 40; i++)
		strcat(big, "]");
	strcat(big, "}");
	make(&m, "ExtensionConfigJSON", big);
	refused(&m, "ExtensionConfigJSON", NULL);

	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';
	make(&m, "ExtensionConfigJSON", big);
	refused(&m, "ExtensionConfigJSON", "longer than");
}

Test(commands, when)
{
	struct sw_task t = { .start_time_ms = 100000, .duration_s = 10 };
	uint64_t run = 12345;

	/* Started 3 s ago with 10 s: 7 s left. */
	cr_assert_eq(sw_task__when(&t, 103000, &run), SW_TASK_NOW);
	cr_assert_eq(run, 7000);
	cr_assert_eq(sw_task__when(&t, 100000, &run), SW_TASK_NOW);
	cr_assert_eq(run, 10000);
	cr_assert_eq(sw_task__when(&t, 109999, &run), SW_TASK_NOW);
	cr_assert_eq(run, 1);
	cr_assert_eq(sw_task__when(&t, 99999, &run), SW_TASK_LATER);
	cr_assert_eq(sw_task__when(&t, 110000, &run), SW_TASK_EXPIRED);
	cr_assert_eq(sw_task__when(&t, 500000, NULL), SW_TASK_EXPIRED);

	/* A start time at the end of the clock does not wrap around into the past. */
	t.start_time_ms = UINT64_MAX - 5;
	cr_assert_eq(sw_task__when(&t, 1000, &run), SW_TASK_LATER);
}

Test(commands, identity)
{
	struct cmd m;
	struct sw_task a, b;

	make(&m, NULL, NULL);
	a = parse_ok(&m);
	/* Another task id, times and duration, same process set (other order), same type. */
	make(&m, "ProcessId", "p2, p1");
	m.kv[0].value = (char *)"task-2";
	m.kv[2].value = (char *)"1700000009999";
	m.kv[6].value = (char *)"60";
	b = parse_ok(&m);
	cr_assert(sw_task__same_identity(&a, &b));
	cr_assert(sw_task__same_identity(&b, &a));

	make(&m, "TargetType", "OFF_CPU");
	b = parse_ok(&m);
	cr_assert(!sw_task__same_identity(&a, &b));

	make(&m, "ProcessId", "p1");
	b = parse_ok(&m);
	cr_assert(!sw_task__same_identity(&a, &b));
	cr_assert(!sw_task__same_identity(&b, &a));

	make(&m, "ProcessId", "p1,p3");
	b = parse_ok(&m);
	cr_assert(!sw_task__same_identity(&a, &b));
}

/* A hostile OAP asks for a day: the task runs profiling.max_task_duration (1 h by default). */
Test(commands, a_24h_task_is_cut_to_the_maximum)
{
	struct cmd m;
	struct sw_task t;
	uint64_t run;

	make(&m, "FixedTriggerDuration", "86400");
	t = parse_ok(&m);
	cr_assert_eq(t.duration_s, 86400);
	cr_assert_eq(sw_task__cap_duration(&t, 3600), 1);
	cr_assert_eq(t.duration_s, 3600);
	/* Counted from its start: 10 s in, 3590 s are left, not 86390. */
	cr_assert_eq(sw_task__when(&t, t.start_time_ms + 10000, &run), SW_TASK_NOW);
	cr_assert_eq(run, 3590 * 1000);
	/* One that started over an hour ago is over. */
	cr_assert_eq(sw_task__when(&t, t.start_time_ms + 3600 * 1000, &run), SW_TASK_EXPIRED);

	/* Within the bound, or at it: left alone. */
	make(&m, "FixedTriggerDuration", "3600");
	t = parse_ok(&m);
	cr_assert_eq(sw_task__cap_duration(&t, 3600), 0);
	cr_assert_eq(t.duration_s, 3600);
	make(&m, "FixedTriggerDuration", "300");
	t = parse_ok(&m);
	cr_assert_eq(sw_task__cap_duration(&t, 3600), 0);
	cr_assert_eq(t.duration_s, 300);
}

/* 32 tasks all naming one process: SW_MAX_TASKS_PER_PROCESS run, the rest are refused. */
Test(commands, one_process_fanned_across_32_tasks)
{
	struct sw_runs r = { 0 };
	char id[32];
	int ran = 0, busy = 0;

	for (int i = 0; i < 32; i++) {
		int err;

		snprintf(id, sizeof(id), "task-%d", i);
		err = sw_runs__add(&r, id, "p1", 1000);
		cr_assert(err == 0 || err == -EBUSY, "task %d: %d", i, err);
		ran += !err;
		busy += err == -EBUSY;
	}
	cr_assert_eq(ran, SW_MAX_TASKS_PER_PROCESS);
	cr_assert_eq(busy, 32 - SW_MAX_TASKS_PER_PROCESS);
	cr_assert_eq(r.n, SW_MAX_TASKS_PER_PROCESS);
	/* Other processes are not held up by p1's. */
	cr_assert_eq(sw_runs__add(&r, "task-x", "p2", 1000), 0);

	/* One of p1's ends: one more may start. */
	sw_runs__ended(&r, "task-0", "p1");
	cr_assert_eq(sw_runs__add(&r, "task-y", "p1", 1000), 0);
	cr_assert_eq(sw_runs__add(&r, "task-z", "p1", 1000), -EBUSY);

	/* A replaced task no longer holds its process, its worker still counts until it ends. */
	sw_runs__stopping(&r, "task-1");
	cr_assert_eq(sw_runs__add(&r, "task-1b", "p1", 1000), 0);
	cr_assert_eq(r.n, 4);
	sw_runs__ended(&r, "task-1", "p1");
	cr_assert_eq(r.n, 3);

	/* An end the main loop never reported: forgotten at gone_ms. */
	sw_runs__expire(&r, 999);
	cr_assert_eq(r.n, 3);
	sw_runs__expire(&r, 1000);
	cr_assert_eq(r.n, 0);
}

/* Many tasks over many processes: at most SW_MAX_RUNS workers for the backend. */
Test(commands, backend_workers_are_bounded)
{
	struct sw_runs r = { 0 };
	char task[32], proc[32];
	int ran = 0, full = 0;

	for (int i = 0; i < 32; i++) {
		for (int j = 0; j < SW_MAX_PROCESSES; j++) {
			int err;

			snprintf(task, sizeof(task), "task-%d", i);
			snprintf(proc, sizeof(proc), "p%d", i * SW_MAX_PROCESSES + j);
			err = sw_runs__add(&r, task, proc, 1000);
			cr_assert(err == 0 || err == -ENOSPC, "%s on %s: %d", task, proc, err);
			ran += !err;
			full += err == -ENOSPC;
		}
	}
	cr_assert_eq(ran, SW_MAX_RUNS);
	cr_assert_eq(full, 32 * SW_MAX_PROCESSES - SW_MAX_RUNS);
	/* Within MAX_WORKERS (32, launcher/spawner.c), with room for local tasks. */
	cr_assert_leq(SW_MAX_RUNS, 16);
	/* Stopping runs still hold a worker: no room is made by replacing. */
	sw_runs__stopping(&r, "task-0");
	cr_assert_eq(sw_runs__add(&r, "task-new", "p-new", 1000), -ENOSPC);
	sw_runs__ended(&r, "task-0", "p0");
	cr_assert_eq(sw_runs__add(&r, "task-new", "p-new", 1000), 0);
}

/* ---- NETWORK (reference network-profiling.md §1) ---- */

/* The good command as a NETWORK task with ExtensionConfigJSON json. */
static struct sw_task parse_net(const char *json)
{
	struct cmd m;

	make(&m, "ExtensionConfigJSON", json);
	m.kv[4].value = (char *)"NETWORK";
	cr_assert_str_eq(m.kv[4].key, "TargetType");
	return parse_ok(&m);
}

Test(commands, network_rules_are_read_exactly)
{
	struct sw_task t = parse_net(
		"{\"NetworkSamplings\":[{\"URIRegex\":\"/api/.*\",\"MinDuration\":100,"
		"\"When4xx\":false,\"When5xx\":true,\"Settings\":{\"RequireCompleteRequest\":true,"
		"\"MaxRequestSize\":2048,\"RequireCompleteResponse\":true,\"MaxResponseSize\":4096}},"
		"{\"When5xx\":false,\"Settings\":{\"RequireCompleteResponse\":true},\"Newer\":[1]},"
		"{\"URIRegex\":null,\"MinDuration\":0,\"Settings\":null}]}");

	cr_assert_eq(t.target_type, TASK_NETWORK);
	cr_assert_str_eq(t.ext_note, "");
	cr_assert_eq(t.nrules, 3);
	cr_assert_str_eq(t.rules[0].uri_regex, "/api/.*");
	cr_assert_eq(t.rules[0].min_duration_ms, 100);
	cr_assert_eq(t.rules[0].when_4xx, 0);
	cr_assert_eq(t.rules[0].when_5xx, 1);
	cr_assert_eq(t.rules[0].require_complete_request, 1);
	cr_assert_eq(t.rules[0].require_complete_response, 1);
	cr_assert_eq(t.rules[0].max_request_size, 2048);
	cr_assert_eq(t.rules[0].max_response_size, 4096);
	/* Absent fields (Gson leaves out nulls): the default rule, no minimum, no limits;
	 * unknown fields are ignored. */
	cr_assert_str_eq(t.rules[1].uri_regex, "");
	cr_assert_eq(t.rules[1].min_duration_ms, -1);
	cr_assert_eq(t.rules[1].when_4xx, 0);
	cr_assert_eq(t.rules[1].when_5xx, 0);
	cr_assert_eq(t.rules[1].require_complete_request, 0);
	cr_assert_eq(t.rules[1].require_complete_response, 1);
	cr_assert_eq(t.rules[1].max_request_size, 0);
	cr_assert_eq(t.rules[1].max_response_size, 0);
	cr_assert_str_eq(t.rules[2].uri_regex, "");
	cr_assert_eq(t.rules[2].min_duration_ms, 0);
	cr_assert_eq(t.rules[2].require_complete_response, 0);
}

/* What the worker copies per syscall follows what the rules want whole. */
Test(commands, network_capture_bytes)
{
	struct sw_task t = parse_net("{\"NetworkSamplings\":[{\"MinDuration\":0}]}");

	cr_assert_eq(sw_task__capture_bytes(&t), 1024, "no Require*: the default");
	t = parse_net("{\"NetworkSamplings\":[{\"Settings\":{\"RequireCompleteRequest\":true,"
		      "\"MaxRequestSize\":512,\"MaxResponseSize\":4000}}]}");
	cr_assert_eq(sw_task__capture_bytes(&t), 1024, "at least the default");
	t = parse_net("{\"NetworkSamplings\":[{\"URIRegex\":\"/a\",\"Settings\":{"
		      "\"RequireCompleteRequest\":true,\"MaxRequestSize\":2048}},"
		      "{\"Settings\":{\"RequireCompleteResponse\":true,\"MaxResponseSize\":3000,"
		      "\"MaxRequestSize\":9000}}]}");
	cr_assert_eq(sw_task__capture_bytes(&t), 3000, "the largest required");
	t = parse_net("{\"NetworkSamplings\":[{\"Settings\":{\"RequireCompleteResponse\":true,"
		      "\"MaxResponseSize\":100000}}]}");
	cr_assert_eq(sw_task__capture_bytes(&t), NET_CAPTURE_MAX);
	t = parse_net("{\"NetworkSamplings\":[{\"Settings\":{\"RequireCompleteResponse\":true}}]}");
	cr_assert_eq(sw_task__capture_bytes(&t), NET_CAPTURE_MAX, "unlimited");
}

/* A real OAP fills When4xx from When5xx (CommandService.convertExtension): taken as sent. */
Test(commands, network_when4xx_is_taken_as_the_oap_sends_it)
{
	/* Asked in the UI: 5xx only. Sent by the OAP: both. */
	struct sw_task t =
		parse_net("{\"NetworkSamplings\":[{\"URIRegex\":\"/a\",\"When4xx\":true,"
			  "\"When5xx\":true,\"Settings\":{\"RequireCompleteRequest\":true}}]}");

	cr_assert_eq(t.nrules, 1);
	cr_assert_eq(t.rules[0].when_4xx, 1);
	cr_assert_eq(t.rules[0].when_5xx, 1);
	/* An OAP without the bug: still exactly what it says. */
	t = parse_net("{\"NetworkSamplings\":[{\"When4xx\":true,\"When5xx\":false}]}");
	cr_assert_eq(t.rules[0].when_4xx, 1);
	cr_assert_eq(t.rules[0].when_5xx, 0);
}

Test(commands, network_without_a_config_has_no_rules)
{
	static const char *const none[] = { "",
					    "null",
					    " null\n",
					    "{}",
					    "{\"NetworkSamplings\":null}",
					    "{\"NetworkSamplings\":[]}" };
	struct cmd m;

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		struct sw_task t = parse_net(none[i]);

		cr_assert_eq(t.nrules, 0, "'%s'", none[i]);
		cr_assert_str_eq(t.ext_note, "", "'%s': %s", none[i], t.ext_note);
	}
	/* "null" is what the OAP sends for a task without a config, of any type. */
	make(&m, "ExtensionConfigJSON", "null");
	cr_assert_eq(parse_ok(&m).target_type, TASK_ON_CPU);
}

/* A config that cannot be used costs the rules, not the task. */
Test(commands, network_bad_config_runs_without_rules)
{
	static const struct {
		const char *json, *says;
	} bad[] = {
		{ "{", "unexpected end" },
		{ "not json", "ExtensionConfigJSON" },
		{ "[1,2]", "not a JSON object" },
		{ "{} x", "text after" },
		{ "{\"NetworkSamplings\":{}}", "not a list" },
		{ "{\"NetworkSamplings\":[1]}", "[0]: bad not an object" },
		{ "{\"NetworkSamplings\":[{},{\"MinDuration\":\"100\"}]}", "[1]: bad MinDuration" },
		{ "{\"NetworkSamplings\":[{\"MinDuration\":-1}]}", "MinDuration" },
		{ "{\"NetworkSamplings\":[{\"MinDuration\":2147483648}]}", "MinDuration" },
		{ "{\"NetworkSamplings\":[{\"MinDuration\":1.5}]}", "MinDuration" },
		{ "{\"NetworkSamplings\":[{\"When4xx\":1}]}", "When4xx" },
		{ "{\"NetworkSamplings\":[{\"When5xx\":\"true\"}]}", "When5xx" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":5}]}", "URIRegex" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"a\\nb\"}]}", "URIRegex" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"a\\u0000b\"}]}", "URIRegex" },
		{ "{\"NetworkSamplings\":[{\"Settings\":[]}]}", "Settings" },
		{ "{\"NetworkSamplings\":[{\"Settings\":{\"MaxRequestSize\":-5}}]}",
		  "Settings.MaxRequestSize" },
		{ "{\"NetworkSamplings\":[{\"Settings\":{\"MaxResponseSize\":4294967296}}]}",
		  "Settings.MaxResponseSize" },
		{ "{\"NetworkSamplings\":[{\"Settings\":{\"RequireCompleteRequest\":\"yes\"}}]}",
		  "Settings.RequireCompleteRequest" },
	};
	char big[5000], re[300];
	struct sw_task t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = parse_net(bad[i].json);
		cr_assert_eq(t.target_type, TASK_NETWORK);
		cr_assert_eq(t.nrules, 0, "'%s'", bad[i].json);
		cr_assert(strstr(t.ext_note, bad[i].says), "'%s': '%s' does not say '%s'",
			  bad[i].json, t.ext_note, bad[i].says);
	}
	/* A good rule before a bad one is not kept either: the config is one. */
	t = parse_net("{\"NetworkSamplings\":[{\"URIRegex\":\"/a\"},{\"When4xx\":0}]}");
	cr_assert_eq(t.nrules, 0);
	cr_assert_eq(t.rules[0].uri_regex[0], '\0');

	memset(re, 'a', sizeof(re) - 1);
	re[sizeof(re) - 1] = '\0';
	snprintf(big, sizeof(big), "{\"NetworkSamplings\":[{\"URIRegex\":\"%s\"}]}", re);
	t = parse_net(big);
	cr_assert_eq(t.nrules, 0);
	cr_assert(strstr(t.ext_note, "URIRegex"));

	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';
	t = parse_net(big);
	cr_assert_eq(t.nrules, 0);
	cr_assert(strstr(t.ext_note, "longer than"), "%s", t.ext_note);
}

Test(commands, network_rules_beyond_the_bound_are_left_out)
{
	char json[4096] = "{\"NetworkSamplings\":[";
	struct sw_task t;

	for (int i = 0; i < ROVER_NET_MAX_RULES + 4; i++)
		sprintf(json + strlen(json), "%s{\"URIRegex\":\"/r%d\"}", i ? "," : "", i);
	strcat(json, "]}");
	t = parse_net(json);
	cr_assert_eq(t.nrules, ROVER_NET_MAX_RULES);
	cr_assert_str_eq(t.rules[0].uri_regex, "/r0");
	cr_assert_str_eq(t.rules[ROVER_NET_MAX_RULES - 1].uri_regex, "/r15");
	cr_assert(strstr(t.ext_note, "only the first 16"), "%s", t.ext_note);
}

/* The OAP's keep-alive: the same TaskId, newer, 600 s longer, config "null". */
Test(commands, network_keep_alive_extends_the_running_task)
{
	struct cmd m;
	struct sw_task run, ka;
	uint64_t end;

	make(&m, "TargetType", "NETWORK");
	m.kv[6].value = (char *)"600";
	cr_assert_str_eq(m.kv[6].key, "FixedTriggerDuration");
	run = parse_ok(&m);
	end = run.start_time_ms + 600 * 1000;

	m.kv[2].value = (char *)"1700000500000"; /* TaskUpdateTime */
	m.kv[6].value = (char *)"1200";
	m.kv[7].value = (char *)"null";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 3600), 1);
	cr_assert_eq(end, run.start_time_ms + 1200 * 1000, "counted from the task's start");
	cr_assert_eq(run.duration_s, 1200);
	cr_assert_eq(run.update_time_ms, 1700000500000ULL);
	cr_assert_eq(run.nrules, 0);

	/* The same answer again (a poll that was not filtered): nothing. */
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 3600), 0);
	cr_assert_eq(end, run.start_time_ms + 1200 * 1000);

	/* Newer but shorter: the task is not cut. */
	m.kv[2].value = (char *)"1700000600000";
	m.kv[6].value = (char *)"300";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 3600), 0);
	cr_assert_eq(end, run.start_time_ms + 1200 * 1000);

	/* One with rules: appended, the end unchanged. */
	m.kv[2].value = (char *)"1700000700000";
	m.kv[6].value = (char *)"1200";
	m.kv[7].value = (char *)"{\"NetworkSamplings\":[{\"URIRegex\":\"/x\"}]}";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 3600), 1);
	cr_assert_eq(run.nrules, 1);
	cr_assert_str_eq(run.rules[0].uri_regex, "/x");
	cr_assert_eq(end, run.start_time_ms + 1200 * 1000);

	/* Kept alive past profiling.max_task_duration: it ends at the bound. */
	m.kv[2].value = (char *)"1700000800000";
	m.kv[6].value = (char *)"86400";
	m.kv[7].value = (char *)"null";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 3600), 1);
	cr_assert_eq(end, run.start_time_ms + 3600 * 1000);
	m.kv[2].value = (char *)"1700000900000";
	m.kv[6].value = (char *)"90000";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 3600), 0);

	/* Another task, or not a NETWORK one: not a keep-alive. */
	m.kv[2].value = (char *)"1700001000000";
	m.kv[0].value = (char *)"task-2";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 0), 0);
	make(&m, NULL, NULL);
	m.kv[2].value = (char *)"1700001000000";
	m.kv[6].value = (char *)"99999";
	ka = parse_ok(&m);
	cr_assert_eq(sw_task__renew(&run, &end, &ka, 0), 0);
	cr_assert_eq(end, run.start_time_ms + 3600 * 1000);
}

/*
 * One NETWORK worker over several processes: one run, counted on each of its processes, apart
 * from their profiling tasks.
 */
Test(commands, network_run_holds_all_its_processes)
{
	struct sw_runs r = { 0 };
	const char ids[2][SW_ID_LEN] = { "p1", "p2" };

	cr_assert_eq(sw_runs__add_set(&r, "net-1", TASK_NETWORK, ids, 2, 1000), 0);
	cr_assert_eq(r.n, 1, "one worker");
	/* Its processes' ON_CPU and OFF_CPU tasks still run beside it. */
	for (int i = 0; i < SW_MAX_TASKS_PER_PROCESS; i++) {
		char task[16];

		snprintf(task, sizeof(task), "cpu-%d", i);
		cr_assert_eq(sw_runs__add(&r, task, "p2", 1000), 0);
	}
	cr_assert_eq(sw_runs__add(&r, "cpu-x", "p2", 1000), -EBUSY);
	cr_assert(sw_runs__busy(&r, "p2", TASK_ON_CPU));
	cr_assert(!sw_runs__busy(&r, "p1", TASK_OFF_CPU));
	/* A second NETWORK task on any of its processes: one too many. */
	cr_assert(sw_runs__busy(&r, "p1", TASK_NETWORK));
	cr_assert(!sw_runs__busy(&r, "p3", TASK_NETWORK));
	cr_assert_eq(sw_runs__add_set(&r, "net-2", TASK_NETWORK, ids + 1, 1, 1000), -EBUSY);
	/* Replaced: no longer a task on them. */
	sw_runs__stopping(&r, "net-1");
	cr_assert_eq(sw_runs__add_set(&r, "net-2", TASK_NETWORK, ids, 2, 1000), 0);
	cr_assert_eq(r.n, 2 + SW_MAX_TASKS_PER_PROCESS);

	/* A keep-alive moves its end; the end is reported by its first process. */
	sw_runs__extend(&r, "net-2", 5000);
	sw_runs__expire(&r, 1000);
	cr_assert_eq(r.n, 1);
	sw_runs__ended(&r, "net-2", "p2");
	cr_assert_eq(r.n, 1);
	sw_runs__ended(&r, "net-2", "p1");
	cr_assert_eq(r.n, 0);
}
