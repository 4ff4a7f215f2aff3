// SPDX-License-Identifier: Apache-2.0
/*
 * The whole agent (`rover run --config`) against a hostile OAP (tests/oap/fake_oap.py
 * --hostile, tests/oap/README.md "Hostile mode"): every rpc it calls is answered with one kind
 * of bad answer after another (huge, truncated, wrong wire types, absurd numbers, colliding
 * ids, endless streams, answers past the deadline, odd statuses). What a user would check: the
 * agent keeps running (the same supervisor and shipper all along), its memory stays bounded,
 * its log says each kind of trouble rather than a line per bad answer, and once the OAP is
 * sane again the agent reports its processes, keeps them alive, and runs and uploads a task.
 * `make test` runs it for HOSTILE_S (25 s by default), `make soak` for 10 minutes
 * (SOAK_HOSTILE_S, SOAK_SCALE).
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
#include "tests/integration/oap_harness.h"

#define SUPERVISOR_COMM "rover-superviso"
#define SHIPPER_COMM "rover-shipper"
/*
 * Peak RSS bounds. The soak measured 15 MB for the supervisor and 25 MB for the shipper
 * (docs/performance.md). A call's answer holds at most 4 MiB on the wire, its 4 MiB copy and
 * 8 MiB decoded (common/grpc/oap.c, MAX_DECODED), 16 MiB; the supervisor has three threads
 * that call (reports, tasks, policies), the shipper one that uploads and its meters' thread.
 */
#define SUPERVISOR_HWM_KB (80 * 1024)
#define SHIPPER_HWM_KB (64 * 1024)
/*
 * Lines the agent may log while the OAP is hostile, per 10-minute window of its damping
 * (common/linklog.h): a few per kind of bad answer and per role, however many answers (about
 * 4 calls a second here). Without the damping, 120 s gave 488 lines.
 */
#define MAX_HOSTILE_LOG_LINES 120

static const char *const kinds[] = {
	"many_entries",	   "many_empty",     "huge_string",   "over_limit",	 "unknown_fields",
	"wrong_wire_type", "absurd_numbers", "colliding_ids", "absurd_policies", "garbage",
	"truncated",	   "empty_answer",   "two_answers",   "endless_stream",	 "never_ends",
	"slow_answer",	   "odd_status",
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static char workload_name[64];

static pid_t start_workload(void)
{
	return start_named_workload(workload_name, sizeof(workload_name));
}

/* No suite timeout: under `make soak` the test runs for minutes (scripts/soak.sh gives the
 * runner its own), and every wait below is bounded. */
TestSuite(hostile_oap, .init = tmp_setup, .fini = oap_suite_fini);

/* How long the OAP stays hostile: HOSTILE_S, or under `make soak` (ROVER_SOAK) SOAK_HOSTILE_S
 * or 600 s times SOAK_SCALE; 25 s in `make test`. */
static long hostile_seconds(void)
{
	const char *v = getenv("HOSTILE_S"), *soak = getenv("ROVER_SOAK"), *s;
	double scale;
	long x;

	if (v && atol(v) > 0)
		return atol(v);
	if (!soak || !*soak || !strcmp(soak, "0"))
		return 25;
	v = getenv("SOAK_HOSTILE_S");
	if (v && atol(v) > 0)
		return atol(v);
	s = getenv("SOAK_SCALE");
	scale = s && atof(s) > 0 ? atof(s) : 1.0;
	x = (long)(600 * scale);
	return x < 25 ? 25 : x;
}

static const char *config_fmt = "logger:\n"
				"  level: INFO\n"
				"core:\n"
				"  backend:\n"
				"    addr: 127.0.0.1:%d\n"
				"    call_timeout: 2s\n"
				"process_discovery:\n"
				"  heartbeat_period: 1s\n"
				"  properties_report_period: 3\n"
				"  vm:\n"
				"    active: true\n"
				"    period: 500ms\n"
				"    finders:\n"
				"      - match_cmd_regex: \"/(demo_burn_[0-9]+)$\"\n"
				"        layer: OS_LINUX\n"
				"        service_name: \"rover-hostile\"\n"
				"        instance_name: \"{{.Rover.HostName}}\"\n"
				"        process_name: \"{{.Process.ExeName}}\"\n"
				"profiling:\n"
				"  active: true\n"
				"  check_interval: 1s\n"
				"  flush_interval: 1s\n"
				"  continuous:\n"
				"    check_interval: 1s\n"
				"  task:\n"
				"    on_cpu:\n"
				"      dump_period: 5ms\n";

static void set_task(const char *id, int seconds)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "[{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"%s\", "
		 "\"ProcessId\": \"@process:%s\", \"TaskUpdateTime\": \"@now\", "
		 "\"TriggerType\": \"FIXED_TIME\", \"TargetType\": \"ON_CPU\", \"TaskStartTime\": "
		 "\"@now\", \"FixedTriggerDuration\": \"%d\", \"ExtensionConfigJSON\": \"\"}}]\n",
		 id, workload_name, seconds);
	cr_assert_eq(write_file(tmp_path("tasks.json.new"), text), 0);
	cr_assert_eq(rename(tmp_path("tasks.json.new"), tmp_path("tasks.json")), 0);
}

/* The agent's word that task id ended: the samples it took, or -1 after timeout_ms. */
static long wait_task_done(const char *id, int timeout_ms)
{
	char needle[128];

	snprintf(needle, sizeof(needle), "task %s on process ", id);
	for (int waited = 0; waited < timeout_ms; waited += 250) {
		char *log = slurp(tmp_path("rover.log"), NULL),
		     *p = log ? strstr(log, needle) : NULL;
		char *d = p ? strstr(p, " done: ") : NULL;
		long v = d ? atol(d + 7) : -1;

		free(log);
		if (v >= 0)
			return v;
		sleep_ms(250);
	}
	return -1;
}

/* Whether a sane answer (no "hostile_kind") to method came after since_ms; with pid > 0, a
 * reportProcesses holding that pid. */
static int sane_call_since(const char *method, int64_t since_ms, pid_t pid)
{
	size_t n;
	struct json_object **r = records(&n);
	int found = 0;

	for (size_t i = 0; i < n && !found; i++) {
		struct json_object *procs = at(r[i], "message.processes");

		if (strcmp(method_of(r[i]), method) || at(r[i], "hostile_kind") ||
		    at(r[i], "hostile") || num_at(r[i], "time_ms") < (double)since_ms)
			continue;
		if (pid <= 0) {
			found = 1;
			continue;
		}
		for (size_t k = 0; procs && k < json_object_array_length(procs); k++)
			found |= num_at(json_object_array_get_idx(procs, k), "hostProcess.pid") ==
				 (double)pid;
	}
	records_free(r, n);
	return found;
}

static int wait_sane_call(const char *method, int64_t since_ms, pid_t pid, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		if (sane_call_since(method, since_ms, pid))
			return 1;
		sleep_ms(200);
	}
	return 0;
}

/* The samples of task id's uploads the fake recorded (onCPU dumpCounts). */
static long uploaded_samples(const char *id)
{
	size_t n;
	struct json_object **r = records(&n);
	long sum = 0;
	int ours = 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *m = at(r[i], "message");

		if (strcmp(method_of(r[i]), "collectProfilingData"))
			continue;
		/* The first message of a stream names its task; the rest belong to it. */
		if (num_at(r[i], "index") == 0) {
			const char *tid = str_at(m, "task.taskId");

			ours = tid && !strcmp(tid, id);
		}
		if (ours)
			sum += (long)num_at(m, "onCPU.dumpCount");
	}
	records_free(r, n);
	return sum;
}

/* How many hostile answers of each kind the fake sent (its "hostile" record lines). */
static void count_kinds(size_t counts[NKINDS])
{
	size_t n;
	struct json_object **r = records(&n);

	memset(counts, 0, NKINDS * sizeof(counts[0]));
	for (size_t i = 0; i < n; i++) {
		const char *k = str_at(r[i], "hostile");

		for (size_t j = 0; k && j < NKINDS; j++)
			counts[j] += !strcmp(k, kinds[j]);
	}
	records_free(r, n);
}

/* The run's figures for people: the test's log, and $SOAK_REPORT (appended) when set. */
static void report(const char *line)
{
	const char *path = getenv("SOAK_REPORT");
	FILE *f = path && *path ? fopen(path, "a") : NULL;

	cr_log_info("%s", line);
	if (f) {
		fprintf(f, "%s\n", line);
		fclose(f);
	}
}

static long vm_hwm_kb(pid_t pid)
{
	char buf[64];

	cr_assert_eq(proc_status(pid, "VmHWM", buf, sizeof(buf)), 0, "no VmHWM of %d", (int)pid);
	return atol(buf);
}

/* Lines of the agent's log from byte offset from on, printed for whoever reads the run. */
static int log_lines_from(size_t from)
{
	size_t len;
	char *log = slurp(tmp_path("rover.log"), &len);
	int n = 0;

	for (char *p = log && from < len ? log + from : NULL, *nl; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		cr_log_info("agent: %.300s", p);
		n++;
	}
	free(log);
	return n;
}

static size_t log_size(void)
{
	size_t len = 0;
	char *log = slurp(tmp_path("rover.log"), &len);

	free(log);
	return log ? len : 0;
}

Test(hostile_oap, agent_survives_a_hostile_oap_and_recovers)
{
	const char *seed_env = getenv("HOSTILE_SEED");
	/* Seed 11: queryTasks' first hostile answer is 20 000 commands (tests/oap/README.md). */
	int seed = seed_env && *seed_env ? atoi(seed_env) : 11, port = 0;
	long secs = hostile_seconds(), samples;
	pid_t work, rover, sup, ship;
	size_t counts[NKINDS], log_from;
	char cfg[4096], *log;
	int64_t sane_at;
	int lines;

	cr_log_info("hostile OAP: seed %d, %ld s", seed, secs);
	work = start_workload();
	cr_assert_gt(work, 0);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	/* Sane first: the workload gets its id and a task runs, so that uploads go on while the
	 * OAP turns hostile. */
	oap_set_sane(1);
	start_oap_hostile(seed, &port);
	snprintf(cfg, sizeof(cfg), config_fmt, port);
	rover = start_rover_cfg(cfg);
	cr_assert(wait_sane_call("reportProcesses", 0, work, 20000),
		  "workload not reported; rover log:\n%s", slurp(tmp_path("rover.log"), NULL));
	sup = wait_child(rover, SUPERVISOR_COMM, 5000);
	ship = wait_child(rover, SHIPPER_COMM, 5000);
	cr_assert_gt(sup, 0);
	cr_assert_gt(ship, 0);
	set_task("before-hostile", (int)secs + 5);
	cr_assert(wait_log("task before-hostile: ON_CPU", 15000),
		  "the first task did not start; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));

	log_from = log_size();
	oap_set_sane(0);
	/* The agent must outlive every kind: polled each second, the same pids all along. */
	for (long t = 0; t < secs; t++) {
		cr_assert_eq(waitpid(rover, NULL, WNOHANG), 0, "rover exited at %ld s; log:\n%s", t,
			     slurp(tmp_path("rover.log"), NULL));
		cr_assert_eq(find_child(rover, SUPERVISOR_COMM), sup,
			     "the supervisor died or was restarted at %ld s", t);
		cr_assert_eq(find_child(rover, SHIPPER_COMM), ship,
			     "the shipper died or was restarted at %ld s", t);
		sleep_ms(1000);
	}
	lines = log_lines_from(log_from);
	count_kinds(counts);
	for (size_t j = 0; j < NKINDS; j++)
		cr_expect_gt(counts[j], 0, "the fake never sent %s", kinds[j]);
	{
		char line[2048];
		size_t len, total = 0;

		len = (size_t)snprintf(line, sizeof(line),
				       "hostile_oap: seed %d, %ld s hostile, answers by kind:",
				       seed, secs);
		for (size_t j = 0; j < NKINDS && len < sizeof(line) - 64; j++) {
			total += counts[j];
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %s %zu", kinds[j],
						counts[j]);
		}
		snprintf(line + len, sizeof(line) - len,
			 "; %zu in all; agent log %d lines; peak RSS supervisor %ld kB, shipper "
			 "%ld kB",
			 total, lines, vm_hwm_kb(sup), vm_hwm_kb(ship));
		report(line);
	}
	cr_expect_leq(lines, MAX_HOSTILE_LOG_LINES * (1 + secs / 600),
		      "the agent flooded its log (above)");
	/* Skipped commands are said once per kind of reason (supervisor/backend/backend.c keeps
	 * 32), not per command: the 20 000 commands have 5 000 names of their own. */
	cr_expect_leq(count_in_log("backend command skipped"), 32,
		      "a line per bad command: %d lines", count_in_log("backend command skipped"));
	cr_expect_leq(vm_hwm_kb(sup), SUPERVISOR_HWM_KB, "supervisor peak RSS");
	cr_expect_leq(vm_hwm_kb(ship), SHIPPER_HWM_KB, "shipper peak RSS");
	log = slurp(tmp_path("rover.log"), NULL);
	/* A status text of the OAP's with a newline must not make a line of its own. */
	cr_expect_null(strstr(log ? log : "", "\nERROR forged"), "a forged log line:\n%s", log);
	free(log);

	/* Sane again: the agent reports, keeps alive, and runs and uploads a new task. */
	sane_at = wall_ms();
	oap_set_sane(1);
	cr_assert(wait_sane_call("keepAlive", sane_at, 0, 20000),
		  "no keepAlive after the OAP was sane again; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_sane_call("reportProcesses", sane_at, work, 20000),
		  "the workload was not reported again; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	set_task("after-hostile", 2);
	samples = wait_task_done("after-hostile", 30000);
	cr_assert_gt(samples, 0, "the task after the hostile OAP did not run; rover log:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	for (int i = 0; i < 40 && uploaded_samples("after-hostile") < samples; i++)
		sleep_ms(250);
	cr_expect_eq(uploaded_samples("after-hostile"), samples,
		     "the OAP got not all the samples of the task after the hostile OAP");
	cr_expect_eq(find_child(rover, SUPERVISOR_COMM), sup);
	cr_expect_eq(find_child(rover, SHIPPER_COMM), ship);
	stop(rover, SIGTERM);
}
