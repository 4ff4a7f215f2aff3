// SPDX-License-Identifier: Apache-2.0
/*
 * EBPFProfilingTaskQuery commands from the backend (skywalking-protocol.md, "Commands the
 * backend sends"). Every arg is a string and every one is required; an arg given twice makes
 * the command ambiguous and it is refused; args this agent does not know are ignored, so a
 * newer OAP that adds one still gets its tasks run.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json_tokener.h>
#include <json-c/json_object.h>

#include "common/msg.h"
#include "common/netrec.h"
#include "supervisor/backend/commands.h"

#define SW_TASK_QUERY "EBPFProfilingTaskQuery"
/* Nesting the extension config needs is 4 ({"NetworkSamplings":[{"Settings":{}}]}). */
#define EXT_JSON_DEPTH 16

enum {
	ARG_TASK_ID,
	ARG_PROCESS_ID,
	ARG_UPDATE_TIME,
	ARG_TRIGGER_TYPE,
	ARG_TARGET_TYPE,
	ARG_START_TIME,
	ARG_DURATION,
	ARG_EXTENSION,
	ARG_COUNT,
};

static const char *const arg_names[ARG_COUNT] = {
	[ARG_TASK_ID] = "TaskId",
	[ARG_PROCESS_ID] = "ProcessId",
	[ARG_UPDATE_TIME] = "TaskUpdateTime",
	[ARG_TRIGGER_TYPE] = "TriggerType",
	[ARG_TARGET_TYPE] = "TargetType",
	[ARG_START_TIME] = "TaskStartTime",
	[ARG_DURATION] = "FixedTriggerDuration",
	[ARG_EXTENSION] = "ExtensionConfigJSON",
};

static int why_set(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A value as a reason shows it: at most 64 bytes, control bytes as '?'. */
static const char *shown(const char *v, char buf[68])
{
	size_t i = 0;

	for (; v[i] && i < 64; i++)
		buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	if (v[i]) {
		memcpy(buf + 64, "...", 3);
		i = 67;
	}
	buf[i] = '\0';
	return buf;
}

static int has_control(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 1;
	return 0;
}

/* Decimal digits only, as the OAP writes its longs; no sign, no space, no overflow. */
static int parse_decimal(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t x = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (x > (max - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*ret = x;
	return 0;
}

static int parse_ids(const char *v, struct sw_task *t, char *why, size_t whylen)
{
	char buf[68];
	const char *p = v;

	for (;;) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *s = p, *e = end;

		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (s == e)
			return why_set(why, whylen, "ProcessId: empty process id in '%s'",
				       shown(v, buf));
		if ((size_t)(e - s) >= SW_ID_LEN || has_control(s, (size_t)(e - s)))
			return why_set(why, whylen, "ProcessId: bad process id in '%s'",
				       shown(v, buf));
		if (t->nprocess_ids == SW_MAX_PROCESSES) {
			/* Still checked above, so a bad one anywhere is refused as before. */
			t->ids_left_out++;
		} else {
			memcpy(t->process_ids[t->nprocess_ids], s, (size_t)(e - s));
			t->process_ids[t->nprocess_ids][e - s] = '\0';
			for (uint32_t i = 0; i < t->nprocess_ids; i++)
				if (!strcmp(t->process_ids[i], t->process_ids[t->nprocess_ids]))
					return why_set(why, whylen,
						       "ProcessId: process id given twice in '%s'",
						       shown(v, buf));
			t->nprocess_ids++;
		}
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/*
 * Valid JSON, one object or null, nothing after it but white space. 0 and *ret_obj (NULL for
 * null: Gson writes a missing config so), or -EINVAL with why.
 */
static int parse_json(const char *v, size_t len, struct json_object **ret_obj, char *why,
		      size_t whylen)
{
	struct json_tokener *tok = json_tokener_new_ex(EXT_JSON_DEPTH);
	struct json_object *obj;
	enum json_tokener_error jerr;
	int r = 0;

	if (!tok)
		return -ENOMEM;
	/* With the NUL: a top-level literal (null) ends there instead of waiting for more. */
	obj = json_tokener_parse_ex(tok, v, v[len] ? (int)len : (int)len + 1);
	jerr = json_tokener_get_error(tok);
	if (jerr != json_tokener_success) {
		r = why_set(why, whylen, "ExtensionConfigJSON: %s at %zu",
			    jerr == json_tokener_continue ? "unexpected end"
							  : json_tokener_error_desc(jerr),
			    json_tokener_get_parse_end(tok));
	} else if (obj && !json_object_is_type(obj, json_type_object)) {
		r = why_set(why, whylen, "ExtensionConfigJSON: not a JSON object");
	} else {
		for (size_t i = json_tokener_get_parse_end(tok); i < len && !r; i++)
			if (v[i] != ' ' && v[i] != '\t' && v[i] != '\r' && v[i] != '\n')
				r = why_set(why, whylen,
					    "ExtensionConfigJSON: text after the object at %zu", i);
	}
	json_tokener_free(tok);
	if (r) {
		json_object_put(obj);
		return r;
	}
	*ret_obj = obj;
	return 0;
}

/* A field of a rule: NULL when absent or null, as Gson leaves out what is null. */
static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int get_bool(struct json_object *o, const char *key, uint8_t *ret)
{
	struct json_object *v = field(o, key);

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	*ret = json_object_get_boolean(v) ? 1 : 0;
	return 0;
}

/* An integer from 0 to max, as Gson writes Java's ints and longs. */
static int get_count(struct json_object *o, const char *key, int64_t max, int64_t *ret)
{
	struct json_object *v = field(o, key);
	int64_t x;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	errno = 0;
	x = json_object_get_int64(v);
	if (errno || x < 0 || x > max)
		return -EINVAL;
	*ret = x;
	return 0;
}

/* One element of NetworkSamplings. 0, or -EINVAL with *what naming the field. */
static int net_rule(struct json_object *o, struct msg_net_rule *ret, const char **what)
{
	struct msg_net_rule r = { .min_duration_ms = -1 };
	struct json_object *v, *set;
	int64_t x;

	if (!json_object_is_type(o, json_type_object))
		return *what = "not an object", -EINVAL;
	v = field(o, "URIRegex");
	if (v) {
		const char *re = json_object_get_string(v);
		size_t len = re ? strlen(re) : 0;

		if (!json_object_is_type(v, json_type_string) || len >= sizeof(r.uri_regex) ||
		    has_control(re, len) || (size_t)json_object_get_string_len(v) != len)
			return *what = "URIRegex", -EINVAL;
		memcpy(r.uri_regex, re, len + 1);
	}
	x = -1;
	if (get_count(o, "MinDuration", INT32_MAX, &x))
		return *what = "MinDuration", -EINVAL;
	r.min_duration_ms = (int32_t)x;
	if (get_bool(o, "When4xx", &r.when_4xx))
		return *what = "When4xx", -EINVAL;
	if (get_bool(o, "When5xx", &r.when_5xx))
		return *what = "When5xx", -EINVAL;
	set = field(o, "Settings");
	if (set) {
		if (!json_object_is_type(set, json_type_object))
			return *what = "Settings", -EINVAL;
		if (get_bool(set, "RequireCompleteRequest", &r.require_complete_request))
			return *what = "Settings.RequireCompleteRequest", -EINVAL;
		if (get_bool(set, "RequireCompleteResponse", &r.require_complete_response))
			return *what = "Settings.RequireCompleteResponse", -EINVAL;
		x = 0;
		if (get_count(set, "MaxRequestSize", UINT32_MAX, &x))
			return *what = "Settings.MaxRequestSize", -EINVAL;
		r.max_request_size = (uint32_t)x;
		x = 0;
		if (get_count(set, "MaxResponseSize", UINT32_MAX, &x))
			return *what = "Settings.MaxResponseSize", -EINVAL;
		r.max_response_size = (uint32_t)x;
	}
	*ret = r;
	return 0;
}

/*
 * NETWORK: ExtensionConfigJSON (v, len bytes) into t->rules. A config that cannot be used is
 * not a reason to skip the task: t gets no rules and ext_note says why.
 */
static void net_rules(const char *v, size_t len, struct sw_task *t)
{
	struct json_object *cfg = NULL, *list;
	size_t n;

	t->nrules = 0;
	if (len >= sizeof(t->extension_json)) {
		snprintf(t->ext_note, sizeof(t->ext_note),
			 "ExtensionConfigJSON: longer than %zu bytes",
			 sizeof(t->extension_json) - 1);
		return;
	}
	if (!len || parse_json(v, len, &cfg, t->ext_note, sizeof(t->ext_note)))
		return;
	list = cfg ? field(cfg, "NetworkSamplings") : NULL;
	if (list && !json_object_is_type(list, json_type_array)) {
		snprintf(t->ext_note, sizeof(t->ext_note),
			 "ExtensionConfigJSON: NetworkSamplings is not a list");
		list = NULL;
	}
	n = list ? json_object_array_length(list) : 0;
	for (size_t i = 0; i < n && i < ROVER_NET_MAX_RULES; i++) {
		const char *what = "?";

		if (net_rule(json_object_array_get_idx(list, i), &t->rules[i], &what)) {
			snprintf(t->ext_note, sizeof(t->ext_note),
				 "ExtensionConfigJSON: NetworkSamplings[%zu]: bad %s", i, what);
			t->nrules = 0;
			memset(t->rules, 0, sizeof(t->rules));
			goto cleanup;
		}
		t->nrules++;
	}
	if (n > ROVER_NET_MAX_RULES)
		snprintf(t->ext_note, sizeof(t->ext_note),
			 "ExtensionConfigJSON: %zu sampling rules, only the first %d are used", n,
			 ROVER_NET_MAX_RULES);
cleanup:
	json_object_put(cfg);
}

int sw_task__parse(const Skywalking__V3__Command *cmd, struct sw_task *ret_task, char *why,
		   size_t whylen)
{
	const char *val[ARG_COUNT] = { 0 };
	struct sw_task t;
	char buf[68];
	uint64_t x;
	size_t len;
	int r;

	if (!cmd || !cmd->command)
		return why_set(why, whylen, "command without a name");
	if (strcmp(cmd->command, SW_TASK_QUERY)) {
		why_set(why, whylen, "not an %s command: '%s'", SW_TASK_QUERY,
			shown(cmd->command, buf));
		return -ENOENT;
	}
	if (cmd->n_args && !cmd->args)
		return why_set(why, whylen, "broken args");
	for (size_t i = 0; i < cmd->n_args; i++) {
		const Skywalking__V3__KeyStringValuePair *kv = cmd->args[i];

		if (!kv || !kv->key)
			continue;
		for (int a = 0; a < ARG_COUNT; a++) {
			if (strcmp(kv->key, arg_names[a]))
				continue;
			if (val[a])
				return why_set(why, whylen, "arg %s given twice", arg_names[a]);
			val[a] = kv->value ? kv->value : "";
		}
	}
	for (int a = 0; a < ARG_COUNT; a++)
		if (!val[a])
			return why_set(why, whylen, "missing arg %s", arg_names[a]);

	memset(&t, 0, sizeof(t));

	len = strlen(val[ARG_TASK_ID]);
	if (!len)
		return why_set(why, whylen, "TaskId: empty");
	if (len >= SW_ID_LEN || has_control(val[ARG_TASK_ID], len))
		return why_set(why, whylen, "TaskId: bad task id '%s'",
			       shown(val[ARG_TASK_ID], buf));
	memcpy(t.task_id, val[ARG_TASK_ID], len + 1);

	r = parse_ids(val[ARG_PROCESS_ID], &t, why, whylen);
	if (r)
		return r;

	if (parse_decimal(val[ARG_UPDATE_TIME], UINT64_MAX, &t.update_time_ms))
		return why_set(why, whylen, "TaskUpdateTime: not a decimal number '%s'",
			       shown(val[ARG_UPDATE_TIME], buf));
	if (parse_decimal(val[ARG_START_TIME], UINT64_MAX, &t.start_time_ms))
		return why_set(why, whylen, "TaskStartTime: not a decimal number '%s'",
			       shown(val[ARG_START_TIME], buf));
	if (parse_decimal(val[ARG_DURATION], UINT32_MAX, &x))
		return why_set(why, whylen,
			       "FixedTriggerDuration: not a decimal number of seconds '%s'",
			       shown(val[ARG_DURATION], buf));
	if (!x)
		return why_set(why, whylen, "FixedTriggerDuration: zero seconds '%s'",
			       val[ARG_DURATION]);
	t.duration_s = (uint32_t)x;

	if (strcmp(val[ARG_TRIGGER_TYPE], "FIXED_TIME"))
		return why_set(why, whylen, "TriggerType: only FIXED_TIME is supported, not '%s'",
			       shown(val[ARG_TRIGGER_TYPE], buf));

	if (!strcmp(val[ARG_TARGET_TYPE], "ON_CPU"))
		t.target_type = TASK_ON_CPU;
	else if (!strcmp(val[ARG_TARGET_TYPE], "OFF_CPU"))
		t.target_type = TASK_OFF_CPU;
	else if (!strcmp(val[ARG_TARGET_TYPE], "NETWORK"))
		t.target_type = TASK_NETWORK;
	else
		return why_set(why, whylen, "TargetType: unknown target type '%s'",
			       shown(val[ARG_TARGET_TYPE], buf));

	len = strlen(val[ARG_EXTENSION]);
	if (t.target_type == TASK_NETWORK) {
		net_rules(val[ARG_EXTENSION], len, &t);
		if (len < sizeof(t.extension_json))
			memcpy(t.extension_json, val[ARG_EXTENSION], len + 1);
		*ret_task = t;
		return 0;
	}
	if (len >= sizeof(t.extension_json))
		return why_set(why, whylen, "ExtensionConfigJSON: longer than %zu bytes",
			       sizeof(t.extension_json) - 1);
	if (len) {
		struct json_object *cfg = NULL;

		r = parse_json(val[ARG_EXTENSION], len, &cfg, why, whylen);
		if (r)
			return r;
		json_object_put(cfg);
	}
	memcpy(t.extension_json, val[ARG_EXTENSION], len + 1);

	*ret_task = t;
	return 0;
}

enum sw_task_when sw_task__when(const struct sw_task *t, uint64_t now_ms, uint64_t *ret_run_ms)
{
	uint64_t dur_ms = (uint64_t)t->duration_s * 1000;
	uint64_t end = t->start_time_ms > UINT64_MAX - dur_ms ? UINT64_MAX
							      : t->start_time_ms + dur_ms;

	if (end <= now_ms) {
		if (ret_run_ms)
			*ret_run_ms = 0;
		return SW_TASK_EXPIRED;
	}
	if (t->start_time_ms > now_ms) {
		if (ret_run_ms)
			*ret_run_ms = dur_ms;
		return SW_TASK_LATER;
	}
	if (ret_run_ms)
		*ret_run_ms = end - now_ms;
	return SW_TASK_NOW;
}

/* Process ids compare as sets: the backend's order of a list is not part of a task. */
int sw_task__same_identity(const struct sw_task *a, const struct sw_task *b)
{
	if (a->target_type != b->target_type || a->nprocess_ids != b->nprocess_ids)
		return 0;
	/* Trigger type: FIXED_TIME is the only one sw_task__parse() lets through. */
	for (uint32_t i = 0; i < a->nprocess_ids; i++) {
		uint32_t j;

		for (j = 0; j < b->nprocess_ids; j++)
			if (!strcmp(a->process_ids[i], b->process_ids[j]))
				break;
		if (j == b->nprocess_ids)
			return 0;
	}
	return 1;
}

int sw_task__renew(struct sw_task *run, uint64_t *end_ms, const struct sw_task *cmd, uint32_t max_s)
{
	uint32_t dur_s = cmd->duration_s, nrules = run->nrules;
	uint64_t end;
	int moved = 0;

	if (run->target_type != TASK_NETWORK || cmd->target_type != TASK_NETWORK ||
	    strcmp(run->task_id, cmd->task_id) || cmd->update_time_ms <= run->update_time_ms)
		return 0;
	run->update_time_ms = cmd->update_time_ms;
	if (max_s && dur_s > max_s)
		dur_s = max_s;
	end = run->start_time_ms + (uint64_t)dur_s * 1000;
	if (end > *end_ms) {
		*end_ms = end;
		run->duration_s = dur_s;
		moved = 1;
	}
	for (uint32_t i = 0; i < cmd->nrules && run->nrules < ROVER_NET_MAX_RULES; i++)
		run->rules[run->nrules++] = cmd->rules[i];
	return moved || run->nrules > nrules;
}

int sw_task__cap_duration(struct sw_task *t, uint32_t max_s)
{
	if (!max_s || t->duration_s <= max_s)
		return 0;
	t->duration_s = max_s;
	return 1;
}

static uint32_t capture_for(uint32_t cur, uint32_t max_size)
{
	uint32_t want = max_size && max_size < NET_CAPTURE_MAX ? max_size : NET_CAPTURE_MAX;

	return want > cur ? want : cur;
}

uint32_t sw_task__capture_bytes(const struct sw_task *t)
{
	uint32_t want = SW_NET_CAPTURE;

	for (uint32_t i = 0; i < t->nrules && i < ROVER_NET_MAX_RULES; i++) {
		const struct msg_net_rule *r = &t->rules[i];

		if (r->require_complete_request)
			want = capture_for(want, r->max_request_size);
		if (r->require_complete_response)
			want = capture_for(want, r->max_response_size);
	}
	return want;
}

int sw_runs__busy(const struct sw_runs *r, const char *process_id, uint32_t type)
{
	int net = type == TASK_NETWORK, on_process = 0;

	for (int i = 0; i < r->n; i++) {
		if (r->run[i].stopping || (r->run[i].type == TASK_NETWORK) != net)
			continue;
		for (uint32_t k = 0; k < r->run[i].nprocess_ids; k++)
			on_process += !strcmp(r->run[i].process_ids[k], process_id);
	}
	return on_process >= (net ? SW_MAX_NET_TASKS_PER_PROCESS : SW_MAX_TASKS_PER_PROCESS);
}

int sw_runs__add_set(struct sw_runs *r, const char *task_id, uint32_t type,
		     const char (*ids)[SW_ID_LEN], uint32_t n, uint64_t gone_ms)
{
	struct sw_run *run;

	if (!n || n > SW_MAX_PROCESSES)
		return -EINVAL;
	if (r->n >= SW_MAX_RUNS)
		return -ENOSPC;
	for (uint32_t k = 0; k < n; k++)
		if (sw_runs__busy(r, ids[k], type))
			return -EBUSY;
	run = &r->run[r->n++];
	memset(run, 0, sizeof(*run));
	snprintf(run->task_id, sizeof(run->task_id), "%s", task_id);
	for (uint32_t k = 0; k < n; k++)
		snprintf(run->process_ids[k], sizeof(run->process_ids[k]), "%s", ids[k]);
	run->nprocess_ids = n;
	run->type = type;
	run->gone_ms = gone_ms;
	return 0;
}

int sw_runs__add(struct sw_runs *r, const char *task_id, const char *process_id, uint64_t gone_ms)
{
	char id[1][SW_ID_LEN];

	snprintf(id[0], sizeof(id[0]), "%s", process_id);
	return sw_runs__add_set(r, task_id, TASK_ON_CPU, (const char(*)[SW_ID_LEN])id, 1, gone_ms);
}

void sw_runs__ended(struct sw_runs *r, const char *task_id, const char *process_id)
{
	for (int i = 0; i < r->n; i++) {
		if (strcmp(r->run[i].task_id, task_id) ||
		    strcmp(r->run[i].process_ids[0], process_id))
			continue;
		r->run[i] = r->run[--r->n];
		return;
	}
}

void sw_runs__extend(struct sw_runs *r, const char *task_id, uint64_t gone_ms)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->run[i].task_id, task_id) && r->run[i].gone_ms < gone_ms)
			r->run[i].gone_ms = gone_ms;
}

void sw_runs__stopping(struct sw_runs *r, const char *task_id)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->run[i].task_id, task_id))
			r->run[i].stopping = 1;
}

void sw_runs__expire(struct sw_runs *r, uint64_t now_ms)
{
	for (int i = 0; i < r->n; i++)
		if (r->run[i].gone_ms <= now_ms)
			r->run[i--] = r->run[--r->n];
}
