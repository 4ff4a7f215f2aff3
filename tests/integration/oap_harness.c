// SPDX-License-Identifier: Apache-2.0
/* The fake OAP and the whole agent for integration tests (oap_harness.h). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/oap_harness.h"

#define MAX_TRACKED 16

static pid_t started[MAX_TRACKED];
static int nstarted;

pid_t track(pid_t pid)
{
	if (pid > 0 && nstarted < MAX_TRACKED)
		started[nstarted++] = pid;
	return pid;
}

void stop_tracked(void)
{
	for (int i = nstarted - 1; i >= 0; i--)
		if (waitpid(started[i], NULL, WNOHANG) == 0)
			stop(started[i], SIGTERM); /* still ours and running */
	nstarted = 0;
}

void stop(pid_t pid, int sig)
{
	if (pid <= 0)
		return;
	kill(pid, sig);
	if (wait_cmd(pid, 10000) < 0 || waitpid(pid, NULL, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static pid_t start_oap_argv(int port, int *ret_port, int tls, int hostile_seed)
{
	/* Copies: tmp_path's buffers are few, and this takes more paths than it has. */
	char portarg[16], seedarg[16], paths[7][4096];
	static const char *const names[7] = { "oap.port",      "rec.jsonl",  "tasks.json",
					      "policies.json", "server.pem", "server.key",
					      "oap.control" };
	char *argv[] = { "/usr/bin/python3",
			 (char *)src("tests/oap/fake_oap.py"),
			 "--port",
			 portarg,
			 "--bind",
			 "127.0.0.1",
			 "--port-file",
			 paths[0],
			 "--record",
			 paths[1],
			 "--tasks",
			 paths[2],
			 "--policies",
			 paths[3],
			 tls ? "--tls-cert" : NULL,
			 paths[4],
			 "--tls-key",
			 paths[5],
			 NULL };
	pid_t pid;

	for (int i = 0; i < 7; i++)
		snprintf(paths[i], sizeof(paths[i]), "%s", tmp_path(names[i]));
	snprintf(portarg, sizeof(portarg), "%d", port);
	snprintf(seedarg, sizeof(seedarg), "%d", hostile_seed);
	/* The hostile mode's arguments in place of TLS's (never both). */
	if (hostile_seed >= 0) {
		argv[14] = "--hostile";
		argv[15] = seedarg;
		argv[16] = "--hostile-control";
		argv[17] = paths[6];
	}
	unlink(paths[0]);
	pid = track(spawn_cmd(argv, tmp_path("oap.log")));
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

pid_t start_oap_tls(int port, int *ret_port, int tls)
{
	return start_oap_argv(port, ret_port, tls, -1);
}

pid_t start_oap(int port, int *ret_port)
{
	return start_oap_argv(port, ret_port, 0, -1);
}

pid_t start_oap_hostile(int seed, int *ret_port)
{
	return start_oap_argv(0, ret_port, 0, seed);
}

void oap_set_sane(int sane)
{
	cr_assert_eq(write_file(tmp_path("oap.control.new"), sane ? "sane\n" : "hostile\n"), 0);
	cr_assert_eq(rename(tmp_path("oap.control.new"), tmp_path("oap.control")), 0);
}

struct json_object **records(size_t *ret_n)
{
	char *text = slurp(tmp_path("rec.jsonl"), NULL), *save = NULL, *line;
	struct json_object **out = NULL;
	size_t n = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct json_object *o = json_tokener_parse(line);

		if (!o)
			continue; /* a line being written */
		out = realloc(out, (n + 1) * sizeof(*out));
		out[n++] = o;
	}
	free(text);
	*ret_n = n;
	return out;
}

void records_free(struct json_object **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_put(r[i]);
	free(r);
}

const char *method_of(struct json_object *r)
{
	struct json_object *m;

	return json_object_object_get_ex(r, "method", &m) ? json_object_get_string(m) : "";
}

struct json_object *at(struct json_object *o, const char *path)
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

const char *str_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v ? json_object_get_string(v) : NULL;
}

double num_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v ? json_object_get_double(v) : 0;
}

size_t count_method(struct json_object **r, size_t n, const char *method)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += !strcmp(method_of(r[i]), method);
	return c;
}

pid_t start_rover_cfg(const char *cfg)
{
	/* The socket directory is the agent's own (/tmp/rover.XXXXXX): the rover user must reach
	 * it, and the test's directory is closed to it. */
	char *argv[] = { (char *)bin("rover"), "run", "--config", tmp_path("rover.yaml"), NULL };

	cr_assert_eq(write_file(tmp_path("rover.yaml"), cfg), 0);
	return track(spawn_cmd(argv, tmp_path("rover.log")));
}

struct json_object *wait_reported(pid_t pid, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		size_t n;
		struct json_object **r = records(&n);

		for (size_t i = 0; i < n; i++) {
			struct json_object *procs = at(r[i], "message.processes");

			if (strcmp(method_of(r[i]), "reportProcesses") || !procs)
				continue;
			for (size_t k = 0; k < json_object_array_length(procs); k++) {
				struct json_object *h =
					at(json_object_array_get_idx(procs, k), "hostProcess");
				struct json_object *p = h ? at(h, "pid") : NULL;

				if (p && json_object_get_int(p) == pid) {
					struct json_object *ret = json_object_get(h);

					if (at(r[i], "metadata"))
						json_object_object_add(
							ret, "_metadata",
							json_object_get(at(r[i], "metadata")));
					records_free(r, n);
					return ret;
				}
			}
		}
		records_free(r, n);
		sleep_ms(200);
	}
	return NULL;
}

int wait_log(const char *text, int timeout_ms)
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

int count_in_log(const char *text)
{
	char *log = slurp(tmp_path("rover.log"), NULL);
	int n = 0;

	for (char *p = log; p && (p = strstr(p, text)); p++)
		n++;
	free(log);
	return n;
}

int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pid_t start_named_workload(char *name, size_t len)
{
	char path[4096], cmd[8192];

	snprintf(name, len, "demo_burn_%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin("tests/programs/demo_burn"), path);
	cr_assert_eq(system(cmd), 0);
	return track(start_program(path, NULL));
}

void oap_suite_fini(void)
{
	stop_tracked();
	tmp_teardown();
}
