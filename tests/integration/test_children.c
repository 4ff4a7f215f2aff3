// SPDX-License-Identifier: Apache-2.0
/*
 * Choosing processes as a person would: by name (`rover profile --name`) and with their
 * children (`--children`), through the whole pipeline. A child started after the task began
 * is profiled (its function is in the profile); nginx named by its command line, its two
 * workers found as the master's children, every request they served counted.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

static struct nginx ng;
static pid_t prog = -1, task = -1;

static void setup(void)
{
	memset(&ng, 0, sizeof(ng));
	prog = task = -1;
	tmp_setup();
}

static void teardown(void)
{
	if (task > 0)
		wait_cmd(task, 1);
	stop_program(prog);
	nginx_free(&ng);
	tmp_teardown();
}

TestSuite(children, .init = setup, .fini = teardown, .timeout = 120);

/* Starts rover profile with argv's options (after "profile"), log in tmp/name.log; returns once
 * the worker runs the task. */
static pid_t start(const char *const *opts, const char *name)
{
	char *argv[32] = { (char *)bin("rover"), "profile" };
	char log[4200];
	int n = 2;

	for (; *opts && n < 31; opts++)
		argv[n++] = (char *)*opts;
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s/%s.log", tmp, name);
	task = spawn_cmd(argv, log);
	cr_assert_gt(task, 0);
	for (int i = 0; i < 300; i++) {
		char *text = slurp(log, NULL);
		int running = text && strstr(text, "running in worker");

		free(text);
		if (running)
			return task;
		sleep_ms(50);
	}
	cr_assert_fail("the task did not start: %s", slurp(log, NULL));
	return -1;
}

static char *finish(const char *name)
{
	char path[4200];
	int rc = wait_cmd(task, 60000);
	char *log;

	task = -1;
	snprintf(path, sizeof(path), "%s/%s.log", tmp, name);
	log = slurp(path, NULL);
	cr_assert_eq(rc, 0, "rover profile: %s", log);
	return log;
}

/* The "found N ms after it started" of the supervisor's line on child pid, -1 when none. */
static long found_after(const char *log, pid_t pid)
{
	char needle[64];
	const char *p;

	snprintf(needle, sizeof(needle), "process %d, a child of", (int)pid);
	p = log ? strstr(log, needle) : NULL;
	p = p ? strstr(p, "found ") : NULL;
	return p ? atol(p + 6) : -1;
}

/*
 * ON_CPU: the parent only waits; once the task runs it is told to fork, and its child burns
 * 1.5 s in late_child_burn. The child is found within a look (100 ms) and its samples are
 * in the profile: at least half of the 1.5 s at 111 Hz, and none without --children.
 */
static uint64_t late_child_samples(int children, char **ret_log)
{
	const char *with[] = { "--pid", NULL,	    "--children", "--duration",
			       "4s",	"--output", NULL,	  NULL };
	const char *without[] = { "--pid", NULL, "--duration", "4s", "--output", NULL, NULL };
	char pid[16], out[4200];
	struct folded f;
	uint64_t n;

	prog = start_program(bin("tests/programs/late_child"), "30000");
	cr_assert_gt(prog, 0);
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	snprintf(out, sizeof(out), "%s/late%d.folded", tmp, children);
	with[1] = without[1] = pid;
	with[6] = without[5] = out;
	start(children ? with : without, children ? "late1" : "late0");
	cr_assert_eq(kill(prog, SIGUSR1), 0);
	*ret_log = finish(children ? "late1" : "late0");
	cr_assert_eq(folded_read(out, &f), 0, "%s", *ret_log);
	n = folded_with_frame(&f, "late_child_burn");
	folded_free(&f);
	stop_program(prog);
	prog = -1;
	return n;
}

Test(children, a_child_started_during_the_task_is_profiled)
{
	char *log = NULL;
	uint64_t n = late_child_samples(1, &log);
	const char *p = strstr(log, "a child of");
	long after;

	cr_assert_not_null(p, "no child found: %s", log);
	/* The child's pid is the one before " , a child of" on its line. */
	while (p > log && p[-1] != '\n')
		p--;
	p = strstr(p, "process ");
	cr_assert_not_null(p);
	after = found_after(log, (pid_t)atoi(p + 8));
	cr_log_info("children: the child was found %ld ms after it started; %llu samples of "
		    "late_child_burn",
		    after, (unsigned long long)n);
	cr_assert_geq(after, 0, "%s", log);
	cr_assert_lt(after, 1000, "found %ld ms after it started", after);
	cr_assert_gt(n, 80, "late_child_burn in %llu samples only: %s", (unsigned long long)n, log);
	free(log);
}

/* The same without --children: the parent alone, and not one sample of its child. */
Test(children, without_children_the_child_is_not_profiled)
{
	char *log = NULL;
	uint64_t n = late_child_samples(0, &log);

	cr_assert_eq(n, 0, "late_child_burn in %llu samples without --children: %s",
		     (unsigned long long)n, log);
	cr_assert_null(strstr(log, "a child of"), "%s", log);
	free(log);
}

static int64_t jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/* Exchanges of status code at pid's server endpoint for path. */
static int64_t served(struct json_object *r, pid_t pid, const char *path, int code)
{
	struct json_object *eps, *st, *v;
	char key[8];

	cr_assert(json_object_object_get_ex(r, "endpoints", &eps));
	snprintf(key, sizeof(key), "%d", code);
	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *e = json_object_array_get_idx(eps, i);

		if (jint(e, "pid") == pid && !strcmp(jstr(e, "role"), "server") &&
		    !strcmp(jstr(e, "path"), path) && json_object_object_get_ex(e, "status", &st) &&
		    json_object_object_get_ex(st, key, &v))
			return json_object_get_int64(v);
	}
	return 0;
}

/*
 * NETWORK: nginx with two workers, named by its master's command line (the test's own prefix
 * directory: other nginx processes on the host must not be chosen), --children bringing in
 * both workers. 20 connections of 3 requests each and one of 5 to a missing page: both
 * workers served some, and the report counts each worker's exactly, in all what curl sent and
 * nginx logged.
 */
Test(children, name_and_children_count_both_nginx_workers_requests_exactly)
{
	int port = free_port(18140, 18149);
	const char *opts[] = { "--type",     "network", "--name",   NULL, "--children",
			       "--duration", "6s",	"--output", NULL, NULL };
	char out[4200], url[128], line[64], *log;
	struct http_totals logged, cu, miss;
	struct json_object *r;
	pid_t workers[4];
	int64_t ok = 0, missing = 0;

	cr_assert_gt(port, 0);
	cr_assert_eq(nginx_start_workers(port, 2, &ng), 0);
	cr_assert_eq(nginx_workers(&ng, workers, 4), 2);
	snprintf(out, sizeof(out), "%s/nginx.json", tmp);
	opts[3] = ng.dir;
	opts[8] = out;
	start(opts, "nginx");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ok", port);
	memset(&cu, 0, sizeof(cu));
	for (int i = 0; i < 20; i++) {
		struct http_totals one;

		cr_assert_eq(curl_run(url, 3, &one), 0);
		cu.status[200] += one.status[200];
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/missing", port);
	cr_assert_eq(curl_run(url, 5, &miss), 0);
	log = finish("nginx");
	/* One line says what matched: the master, by its command line. */
	snprintf(line, sizeof(line), "process %d (nginx) matched by its command line",
		 (int)ng.master);
	nginx_stop(&ng);
	cr_assert_eq(nginx_access_log_counts(&ng, &logged), 0);
	cr_assert(strstr(log, line), "%s", log);
	cr_assert(strstr(log, "2 child process(es) of its processes running"), "%s", log);
	r = json_object_from_file(out);
	cr_assert_not_null(r, "%s", log);
	for (int i = 0; i < 2; i++) {
		int64_t w = served(r, workers[i], "/ok", 200);

		cr_log_info("nginx worker %d served %lld of the /ok requests", (int)workers[i],
			    (long long)w);
		cr_assert_gt(w, 0, "worker %d is not in the report: %s", (int)workers[i], log);
		ok += w;
		missing += served(r, workers[i], "/missing", 404);
	}
	cr_assert_eq(cu.status[200], 60);
	cr_assert_eq(ok, 60, "the report counts %lld /ok requests", (long long)ok);
	cr_assert_eq(ok, (int64_t)logged.status[200]);
	cr_assert_eq(missing, 5);
	cr_assert_eq(missing, (int64_t)logged.status[404]);
	json_object_put(r);
	free(log);
}
