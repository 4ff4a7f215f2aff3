// SPDX-License-Identifier: Apache-2.0
/*
 * Finding: "a hostile OAP cannot name pids, but can ask for 24 h tasks and fan one process id
 * across 32 tasks". The whole agent (`rover run`) against the fake OAP
 * (tests/oap/fake_oap.py) answering 32 tasks of a day each, all naming the one workload this
 * host reports, each with a process id of its own besides (so that no two have the same
 * identity and none replaces another), ON_CPU and OFF_CPU in turn. Two run (one of each
 * type), for profiling.max_task_duration; the other 30 are skipped with one warning each; the
 * agent carries on.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define NTASKS 32
/* Short, so that the two tasks that run end within the test. */
#define MAX_TASK_SECONDS 4

static pid_t started[4];
static int nstarted;

static pid_t track(pid_t pid)
{
	if (pid > 0 && nstarted < 4)
		started[nstarted++] = pid;
	return pid;
}

static void stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	if (wait_cmd(pid, 10000) < 0 || waitpid(pid, NULL, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void bounds_fini(void)
{
	for (int i = nstarted - 1; i >= 0; i--)
		if (waitpid(started[i], NULL, WNOHANG) == 0)
			stop(started[i]);
	nstarted = 0;
	tmp_teardown();
}

TestSuite(backend_bounds, .init = tmp_setup, .fini = bounds_fini, .timeout = 120);

static int count_in_log(const char *text)
{
	char *log = slurp(tmp_path("rover.log"), NULL);
	int n = 0;

	for (char *p = log; p && (p = strstr(p, text)); p++)
		n++;
	free(log);
	return n;
}

static int wait_count(const char *text, int want, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		if (count_in_log(text) >= want)
			return 1;
		sleep_ms(200);
	}
	return 0;
}

static pid_t start_oap(int *ret_port)
{
	char src[4096];
	char *argv[] = { "/usr/bin/python3",
			 src,
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
	pid_t pid;

	snprintf(src, sizeof(src), "%s/tests/oap/fake_oap.py",
		 getenv("ROVER_SRC") ? getenv("ROVER_SRC") : ".");
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

static pid_t start_rover(int port, const char *workload)
{
	char cfg[2048];
	char *argv[] = { (char *)bin("rover"), "run", "--config", tmp_path("rover.yaml"), NULL };

	snprintf(cfg, sizeof(cfg),
		 "core:\n  backend:\n    addr: 127.0.0.1:%d\n"
		 "process_discovery:\n  heartbeat_period: 1s\n  vm:\n    active: true\n"
		 "    period: 500ms\n    finders:\n      - match_cmd_regex: \"/(%s)$\"\n"
		 "        layer: OS_LINUX\n        service_name: \"rover-sec\"\n"
		 "        instance_name: \"{{.Rover.HostName}}\"\n"
		 "        process_name: \"{{.Process.ExeName}}\"\n"
		 "profiling:\n  active: true\n  check_interval: 1s\n  flush_interval: 1s\n"
		 "  max_task_duration: %ds\n",
		 port, workload, MAX_TASK_SECONDS);
	cr_assert_eq(write_file(tmp_path("rover.yaml"), cfg), 0);
	return track(spawn_cmd(argv, tmp_path("rover.log")));
}

/* The hostile answer: NTASKS day-long tasks on the workload and a process id of each's own. */
static void serve_hostile_tasks(const char *workload)
{
	char *json = malloc(NTASKS * 512 + 16);
	size_t o = 0;

	cr_assert_not_null(json);
	o += (size_t)sprintf(json + o, "[");
	for (int i = 0; i < NTASKS; i++)
		o += (size_t)sprintf(
			json + o,
			"%s{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": "
			"\"hostile-%d\", \"ProcessId\": \"@process:%s,elsewhere-%d\", "
			"\"TaskUpdateTime\": \"@now\", \"TriggerType\": \"FIXED_TIME\", "
			"\"TargetType\": \"%s\", \"TaskStartTime\": \"@now\", "
			"\"FixedTriggerDuration\": \"86400\", \"ExtensionConfigJSON\": \"\"}}\n",
			i ? "," : "", i, workload, i, i % 2 ? "OFF_CPU" : "ON_CPU");
	sprintf(json + o, "]\n");
	cr_assert_eq(write_file(tmp_path("tasks.new"), json), 0);
	cr_assert_eq(rename(tmp_path("tasks.new"), tmp_path("tasks.json")), 0);
	free(json);
}

Test(backend_bounds, a_hostile_oap_gets_two_tasks_on_a_process_for_the_maximum_time)
{
	char workload[64], path[4096], cmd[8192], *log;
	pid_t work, oap, rover;
	int port = 0, ran = 0;

	if (geteuid() != 0)
		cr_skip_test("needs root (rover run loads BPF)");
	/* A workload under a name of this test's own: no other test's agent discovers it. */
	snprintf(workload, sizeof(workload), "demo_burn_sec%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", tmp, workload);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin("tests/programs/demo_burn"), path);
	cr_assert_eq(system(cmd), 0);
	work = track(start_program(path, NULL));
	cr_assert_gt(work, 0);

	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(&port);
	rover = start_rover(port, workload);
	serve_hostile_tasks(workload);

	/* Every task is seen once and cut: one warning each. */
	cr_assert(wait_count("86400 s asked, runs 4 s at most (profiling.max_task_duration)",
			     NTASKS, 30000),
		  "not every task was cut:\n%s", slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_count("of its processes skipped: 1 already in 2 tasks", NTASKS - 2, 10000),
		  "%s", slurp(tmp_path("rover.log"), NULL));
	/* The two that ran end after 4 s, not a day, with their data. */
	cr_assert(wait_count(" done: ", 2, 30000), "the two tasks did not end:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	sleep_ms(1500); /* anything more would have started by now */

	log = slurp(tmp_path("rover.log"), NULL);
	cr_assert_not_null(log);
	for (int i = 0; i < NTASKS; i++) {
		char on[64], off[64];

		snprintf(on, sizeof(on), "task hostile-%d: ON_CPU for ", i);
		snprintf(off, sizeof(off), "task hostile-%d: OFF_CPU for ", i);
		if (strstr(log, on) || strstr(log, off)) {
			const char *p = strstr(log, on) ? strstr(log, on) : strstr(log, off);

			ran++;
			p = strstr(p, " for ") + 5;
			cr_expect_leq(atol(p), MAX_TASK_SECONDS * 1000, "hostile-%d runs %ld ms", i,
				      atol(p));
		}
	}
	cr_log_info("backend bounds: %d of %d tasks ran, %d skipped", ran, NTASKS,
		    count_in_log("of its processes skipped"));
	cr_expect_eq(ran, 2, "tasks that ran on the one process:\n%s", log);
	cr_expect_eq(count_in_log("of its processes skipped"), NTASKS - 2, "%s", log);
	cr_expect_eq(count_in_log("86400 s asked"), NTASKS, "one warning per task:\n%s", log);
	cr_expect_eq(waitpid(rover, NULL, WNOHANG), 0, "the agent stopped");
	free(log);
	stop(rover);
	stop(oap);
	stop_program(work);
}
