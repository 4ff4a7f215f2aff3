// SPDX-License-Identifier: Apache-2.0
/*
 * Continuous profiling (supervisor/continuous/continuous.c; reference continuous-and-kubernetes.md A)
 * with the whole agent (`rover run --config`) against the fake OAP, which serves the
 * policies of tmp/policies.json and records what the agent sends: what a user would check in
 * the OAP's UI. A policy that holds reports its cause and starts the task the OAP names, whose
 * uploads carry that TaskId; a policy that does not hold reports nothing; silence, removed
 * policies, bad items, processes that come later or end are each one test.
 *
 * Times: discovery every 500 ms, policies queried every 2 s (profiling.check_interval), samples
 * every second, a check round every 2 s unless a test says otherwise.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/oap_harness.h"

#define SVC "cp-svc"
#define INST "inst1"

static void cont_fini(void)
{
	stop_tracked();
	tmp_teardown();
}

TestSuite(continuous, .init = tmp_setup, .fini = cont_fini, .timeout = 60);

/*
 * tests/programs/<program> copied to tmp/<prefix>_<test pid> and started with arg: discovery
 * matches that name (a finder's regex) and nothing else on the host. Its name in ret_name
 * (the process_name the finder renders: the ExeName).
 */
static pid_t start_named(const char *program, const char *prefix, const char *arg, char *ret_name,
			 size_t len)
{
	char path[4096], cmd[8192];

	snprintf(ret_name, len, "%s_%d", prefix, (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", tmp, ret_name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin(program), path);
	cr_assert_eq(system(cmd), 0);
	return track(start_program(path, arg));
}

/* Serves json as the policies from the next queryPolicies on (written whole: a rename). */
static void set_policies(const char *json)
{
	cr_assert_eq(write_file(tmp_path("policies.new"), json), 0);
	cr_assert_eq(rename(tmp_path("policies.new"), tmp_path("policies.json")), 0);
}

/* One finder: processes whose command is /<prefix>_<digits> [ARGS], of service svc. */
#define FINDER(prefix, svc)                                          \
	"      - match_cmd_regex: \"/(" prefix "_[0-9]+)( .*)?$\"\n" \
	"        layer: OS_LINUX\n"                                  \
	"        service_name: \"" svc "\"\n"                        \
	"        instance_name: \"" INST "\"\n"                      \
	"        process_name: \"{{.Process.ExeName}}\"\n"

static const char *config_fmt = "logger:\n"
				"  level: ${ROVER_TEST_LOG_LEVEL:INFO}\n"
				"core:\n"
				"  backend:\n"
				"    addr: 127.0.0.1:%d\n"
				"process_discovery:\n"
				"  heartbeat_period: 1s\n"
				"  properties_report_period: 3\n"
				"  vm:\n"
				"    active: true\n"
				"    period: 500ms\n"
				"    finders:\n"
				"%s"
				"profiling:\n"
				"  active: true\n"
				"  check_interval: 2s\n"
				"  flush_interval: 1s\n"
				"  task:\n"
				"    on_cpu:\n"
				"      dump_period: 5ms\n"
				"  continuous:\n"
				"    fetch_interval: 1s\n"
				"    check_interval: %s\n"
				"    trigger:\n"
				"      execute_duration: %s\n"
				"      silence_duration: %s\n";

struct agent {
	pid_t oap, rover;
	int port;
};

/* The fake OAP (no task, policies as set_policies left them) and the agent with finders. */
static void start_agent(struct agent *a, const char *finders, const char *check,
			const char *execute, const char *silence)
{
	char cfg[8192];

	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	a->oap = start_oap(0, &a->port);
	snprintf(cfg, sizeof(cfg), config_fmt, a->port, finders, check, execute, silence);
	a->rover = start_rover_cfg(cfg);
}

static void stop_agent(struct agent *a)
{
	stop(a->rover, SIGTERM);
	stop(a->oap, SIGTERM);
}

static void expect_reported(pid_t pid)
{
	struct json_object *h = wait_reported(pid, 20000);

	cr_assert_not_null(h, "pid %d not reported; rover log:\n%s", (int)pid,
			   slurp(tmp_path("rover.log"), NULL));
	json_object_put(h);
}

/* The reportProfilingTask records for process (NULL: any), in order, up to max (new refs). */
static size_t reports_of(const char *process, struct json_object **ret, size_t max)
{
	size_t n, k = 0;
	struct json_object **r = records(&n);

	for (size_t i = 0; i < n; i++) {
		const char *pn = str_at(r[i], "message.processName");

		if (strcmp(method_of(r[i]), "reportProfilingTask") ||
		    (process && (!pn || strcmp(pn, process))))
			continue;
		if (k < max)
			ret[k] = json_object_get(r[i]);
		k++;
	}
	records_free(r, n);
	return k;
}

static void put_all(struct json_object **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_put(r[i]);
}

/* The first reportProfilingTask for process, waiting up to timeout_ms; a new ref or NULL. */
static struct json_object *wait_report(const char *process, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		struct json_object *r = NULL;

		if (reports_of(process, &r, 1)) {
			return r;
		}
		sleep_ms(200);
	}
	return NULL;
}

/* A cause's type: MessageToDict leaves the enum's 0 (ProcessCPU) out. */
static const char *cause_type(struct json_object *cause)
{
	const char *t = str_at(cause, "type");

	return t ? t : "ProcessCPU";
}

/* Checks a report's entity and its single cause; the cause's current value. */
static double expect_one_cause(struct json_object *rep, const char *process, const char *type,
			       double threshold)
{
	struct json_object *causes = at(rep, "message.causes");

	cr_expect_str_eq(str_at(rep, "message.layer"), "OS_LINUX");
	cr_expect_str_eq(str_at(rep, "message.serviceName"), SVC);
	cr_expect_str_eq(str_at(rep, "message.instanceName"), INST);
	cr_expect_str_eq(str_at(rep, "message.processName"), process);
	cr_assert_not_null(causes, "no causes: %s", json_object_to_json_string(rep));
	cr_assert_eq(json_object_array_length(causes), 1, "causes: %s",
		     json_object_to_json_string(causes));
	cr_expect_str_eq(cause_type(json_object_array_get_idx(causes, 0)), type);
	cr_expect(fabs(num_at(rep, "message.causes.0.singleValue.threshold") - threshold) < 1e-9,
		  "threshold %g, %g expected",
		  num_at(rep, "message.causes.0.singleValue.threshold"), threshold);
	cr_expect_not_null(at(rep, "message.onCPU"), "not an ON_CPU task: %s",
			   json_object_to_json_string(rep));
	cr_expect_not_null(str_at(rep, "answer_task_id"));
	return num_at(rep, "message.causes.0.singleValue.current");
}

/* Meters named name for process (continuous meters: process_name and layer labels); their
 * values into vals (up to max), how many; every one checked for its labels and entity. */
static size_t meters_of(const char *name, const char *process, const char *svc, double *vals,
			size_t max)
{
	size_t n, k = 0;
	struct json_object **r = records(&n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *md = at(r[i], "message.meterData");

		if (strcmp(method_of(r[i]), "collectBatch") || !md)
			continue;
		for (size_t j = 0; j < json_object_array_length(md); j++) {
			struct json_object *d = json_object_array_get_idx(md, j);
			struct json_object *first = json_object_array_get_idx(md, 0);
			const char *mn = str_at(d, "singleValue.name");
			const char *pn = str_at(d, "singleValue.labels.0.value");

			/* One collection per (service, instance): the OAP takes them so. */
			cr_expect_str_eq(str_at(d, "service"), str_at(first, "service"));
			cr_expect_str_eq(str_at(d, "serviceInstance"),
					 str_at(first, "serviceInstance"));

			if (!mn || strcmp(mn, name) || !pn || strcmp(pn, process))
				continue;
			cr_expect_str_eq(str_at(d, "singleValue.labels.0.name"), "process_name");
			cr_expect_str_eq(str_at(d, "singleValue.labels.1.name"), "layer");
			cr_expect_str_eq(str_at(d, "singleValue.labels.1.value"), "OS_LINUX");
			cr_expect_str_eq(str_at(d, "service"), svc);
			cr_expect_str_eq(str_at(d, "serviceInstance"), INST);
			cr_expect_gt(num_at(d, "timestamp"), 0);
			if (k < max)
				vals[k] = num_at(d, "singleValue.value");
			k++;
		}
	}
	records_free(r, n);
	return k;
}

/* All collectBatch meters for svc so far. */
static size_t meters_of_service(const char *svc)
{
	size_t n, k = 0;
	struct json_object **r = records(&n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *md = at(r[i], "message.meterData");

		if (strcmp(method_of(r[i]), "collectBatch") || !md)
			continue;
		for (size_t j = 0; j < json_object_array_length(md); j++) {
			const char *s = str_at(json_object_array_get_idx(md, j), "service");

			k += s && !strcmp(s, svc);
		}
	}
	records_free(r, n);
	return k;
}

/* The fake OAP's processId of a process of SVC/INST (tests/oap/README.md), on our own. */
static void oap_process_id(const char *name, char *out, size_t len)
{
	char cmd[1024];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "printf '%%s\\000%%s\\000%%s' '%s' '%s' '%s' | sha256sum", SVC,
		 INST, name);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(out, (int)len, f));
	pclose(f);
	cr_assert_geq(strlen(out), 32);
	out[32] = '\0';
}

struct uploads {
	size_t messages;
	long dump_count, busy; /* busy: samples whose leaf user frame is burn_a or burn_b */
	char process_id[64];
};

/* The collectProfilingData streams of task_id added up. */
static void uploads_of(const char *task_id, struct uploads *u)
{
	size_t n;
	struct json_object **r = records(&n);
	long mine_stream = -1;

	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = at(r[i], "message"), *stacks;
		long stream = (long)num_at(r[i], "stream");
		long dc;
		int busy = 0;

		if (strcmp(method_of(r[i]), "collectProfilingData"))
			continue;
		if (num_at(r[i], "index") == 0) {
			/* The first message of a stream names its task. */
			const char *tid = str_at(m, "task.taskId");

			mine_stream = tid && !strcmp(tid, task_id) ? stream : -1;
			if (mine_stream >= 0 && str_at(m, "task.processId"))
				snprintf(u->process_id, sizeof(u->process_id), "%s",
					 str_at(m, "task.processId"));
		}
		if (stream != mine_stream)
			continue;
		u->messages++;
		dc = (long)num_at(m, "onCPU.dumpCount");
		u->dump_count += dc;
		stacks = at(m, "onCPU.stacks");
		for (size_t k = 0; stacks && k < json_object_array_length(stacks); k++) {
			struct json_object *st = json_object_array_get_idx(stacks, k);
			const char *type = str_at(st, "stackType");
			const char *leaf = str_at(st, "stackSymbols.0");

			if (type && !strcmp(type, "PROCESS_USER_SPACE") && leaf &&
			    (!strcmp(leaf, "burn_a") || !strcmp(leaf, "burn_b")))
				busy = 1;
		}
		u->busy += busy ? dc : 0;
	}
	records_free(r, n);
}

#define CPU_POLICY(uuid, threshold, period, count)                                             \
	"[{\"ServiceName\": \"" SVC "\", \"UUID\": \"" uuid "\", \"Profiling\": {\"ON_CPU\": " \
	"{\"PROCESS_CPU\": {\"Threshold\": \"" threshold "\", \"Period\": " #period            \
	", \"Count\": " #count "}}}}]\n"

Test(continuous, cpu_policy_triggers_an_on_cpu_task_of_the_busy_process)
{
	char name[64], needle[256], want_id[64];
	struct json_object *rep;
	struct agent a;
	struct uploads u;
	const char *task_id;
	double current, vals[64];
	size_t nm;
	pid_t burn;
	int64_t began = wall_ms();

	set_policies(CPU_POLICY("u1", "50", 5, 3));
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "4s", "60s");
	expect_reported(burn);

	rep = wait_report(name, 20000);
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	current = expect_one_cause(rep, name, "ProcessCPU", 50);
	/* CPU % of one CPU over a second: a burner of one thread is near 100. */
	cr_expect(current >= 50 && current <= 100.0 * sysconf(_SC_NPROCESSORS_ONLN), "current %g",
		  current);
	cr_expect_eq((int)num_at(rep, "message.duration"), 4);
	task_id = str_at(rep, "answer_task_id");
	cr_assert_not_null(task_id);
	cr_log_info("reported after %lld ms, current %.1f, task %s",
		    (long long)(num_at(rep, "time_ms") - began), current, task_id);

	/* The task the OAP named ran on that process and uploaded its stacks under that id. */
	snprintf(needle, sizeof(needle), "task %s on process ", task_id);
	cr_assert(wait_log(needle, 15000), "task %s did not end; rover log:\n%s", task_id,
		  slurp(tmp_path("rover.log"), NULL));
	for (int i = 0; i < 20; i++) {
		uploads_of(task_id, &u);
		if (u.dump_count > 0 && wait_log(" done: ", 1))
			break;
		sleep_ms(250);
	}
	sleep_ms(500); /* the last flush may trail the end */
	uploads_of(task_id, &u);
	oap_process_id(name, want_id, sizeof(want_id));
	cr_log_info("uploads: %zu messages, %ld samples, %ld in burn_a/burn_b", u.messages,
		    u.dump_count, u.busy);
	cr_expect_gt(u.messages, 0, "no upload of task %s", task_id);
	cr_expect_str_eq(u.process_id, want_id, "the task's process");
	/* 4 s at 200 Hz of a busy thread; most of it in the two hot functions. */
	cr_expect_gt(u.dump_count, 200);
	cr_expect_gt(u.busy, u.dump_count * 7 / 10, "burn_a/burn_b %ld of %ld", u.busy,
		     u.dump_count);

	/* The monitor's meters: one per round, upstream's name and labels. */
	nm = meters_of("rover_con_p_process_cpu", name, SVC, vals, 64);
	cr_expect_geq(nm, 2, "%zu process_cpu meters", nm);
	for (size_t i = 0; i < nm && i < 64; i++)
		cr_expect(vals[i] >= 0 && vals[i] <= 100.0 * sysconf(_SC_NPROCESSORS_ONLN) + 5,
			  "meter %zu: %g", i, vals[i]);
	cr_expect_geq(nm ? vals[nm < 64 ? nm - 1 : 63] : 0, 50, "the burner's last CPU meter");
	json_object_put(rep);
	stop_agent(&a);
	stop_program(burn);
}

Test(continuous, thread_count_policy)
{
	char lo[64], hi[64];
	struct json_object *rep, *none[4];
	struct agent a;
	double vals[64];
	size_t nm;
	pid_t plo, phi;

	/* Two services: the same 12-thread program under each, thresholds 10 and 13. */
	set_policies("[{\"ServiceName\": \"" SVC "\", \"UUID\": \"t1\", \"Profiling\": "
		     "{\"ON_CPU\": {\"PROCESS_THREAD_COUNT\": {\"Threshold\": \"10\", "
		     "\"Period\": 3, \"Count\": 2}}}},\n"
		     " {\"ServiceName\": \"cp-hi\", \"UUID\": \"t2\", \"Profiling\": "
		     "{\"ON_CPU\": {\"PROCESS_THREAD_COUNT\": {\"Threshold\": \"13\", "
		     "\"Period\": 3, \"Count\": 2}}}}]\n");
	plo = start_named("tests/programs/many_threads", "cp_thr_lo", "12", lo, sizeof(lo));
	phi = start_named("tests/programs/many_threads", "cp_thr_hi", "12", hi, sizeof(hi));
	cr_assert_gt(plo, 0);
	cr_assert_gt(phi, 0);
	start_agent(&a, FINDER("cp_thr_lo", SVC) FINDER("cp_thr_hi", "cp-hi"), "2s", "3s", "60s");
	expect_reported(plo);
	expect_reported(phi);

	rep = wait_report(lo, 20000);
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(expect_one_cause(rep, lo, "ProcessThreadCount", 10), 12);
	json_object_put(rep);

	/* Four more rounds: the other one was watched (its meters say 12) and never held. */
	sleep_ms(8000);
	nm = meters_of("rover_con_p_process_thread_count", hi, "cp-hi", vals, 64);
	cr_expect_geq(nm, 4, "%zu thread meters of the 13-threshold process", nm);
	for (size_t i = 0; i < nm && i < 64; i++)
		cr_expect_eq(vals[i], 12, "meter %zu: %g", i, vals[i]);
	nm = reports_of(hi, none, 4);
	cr_expect_eq(nm, 0, "reported under its threshold: %s",
		     nm ? json_object_to_json_string(none[0]) : "");
	put_all(none, nm < 4 ? nm : 4);
	stop_agent(&a);
	stop_program(plo);
	stop_program(phi);
}

/* /proc/loadavg's first field. */
static double loadavg(void)
{
	char *s = slurp("/proc/loadavg", NULL);
	double v = s ? strtod(s, NULL) : -1;

	free(s);
	return v;
}

Test(continuous, system_load_policy)
{
	struct {
		int64_t t;
		double v;
	} seen[256];
	size_t nseen = 0;
	char name[64];
	struct json_object *rep = NULL;
	struct agent a;
	double current, lo = 1e9, hi = -1, vals[64];
	int64_t when;
	size_t nm;
	pid_t burn;

	set_policies("[{\"ServiceName\": \"" SVC "\", \"UUID\": \"l1\", \"Profiling\": "
		     "{\"ON_CPU\": {\"SYSTEM_LOAD\": {\"Threshold\": \"0.01\", \"Period\": 3, "
		     "\"Count\": 2}}}}]\n");
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "3s", "60s");
	expect_reported(burn);
	/* /proc/loadavg as the agent saw it meanwhile, with when we read it. */
	for (int waited = 0; waited < 20000 && !rep; waited += 200) {
		if (nseen < 256)
			seen[nseen++] = (typeof(seen[0])){ wall_ms(), loadavg() };
		rep = wait_report(name, 1);
		if (!rep)
			sleep_ms(200);
	}
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	current = expect_one_cause(rep, name, "SystemLoad", 0.01);
	when = (int64_t)num_at(rep, "time_ms");
	/* The newest sample before the round: a second or so before the report. The kernel
	 * moves the average every 5 s, by little. */
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].t >= when - 3000 && seen[i].t <= when + 200) {
			lo = seen[i].v < lo ? seen[i].v : lo;
			hi = seen[i].v > hi ? seen[i].v : hi;
		}
	cr_assert_geq(hi, 0, "no loadavg read near the report");
	cr_expect(current >= lo - 0.02 && current <= hi + 0.02,
		  "current %.2f, /proc/loadavg read %.2f..%.2f around the report", current, lo, hi);
	cr_log_info("load current %.2f, loadavg %.2f..%.2f", current, lo, hi);
	nm = meters_of("rover_con_p_system_load", name, SVC, vals, 64);
	cr_expect_geq(nm, 1, "no system_load meter");
	json_object_put(rep);
	stop_agent(&a);
	stop_program(burn);
}

Test(continuous, silence_is_honoured)
{
	char name[64];
	struct json_object *reps[8];
	struct agent a;
	size_t n;
	pid_t burn;

	set_policies(CPU_POLICY("s1", "50", 3, 2));
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	/* The task lasts 2 s, the silence a minute: the condition holds all along. */
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "2s", "60s");
	expect_reported(burn);
	reps[0] = wait_report(name, 20000);
	cr_assert_not_null(reps[0], "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	json_object_put(reps[0]);
	/* 9 more rounds after the first task ended, the process as busy as before. */
	sleep_ms(18000);
	n = reports_of(name, reps, 8);
	cr_expect_eq(n, 1, "%zu reports within the silence; rover log:\n%s", n,
		     slurp(tmp_path("rover.log"), NULL));
	put_all(reps, n < 8 ? n : 8);
	cr_expect_geq(meters_of("rover_con_p_process_cpu", name, SVC, NULL, 0), 8,
		      "the monitor stopped during the silence");
	stop_agent(&a);
	stop_program(burn);
}

Test(continuous, a_short_silence_lets_a_second_task_come_after_the_first_ended)
{
	char name[64], needle[256];
	struct json_object *reps[8];
	struct agent a;
	int64_t t0, t1;
	size_t n = 0;
	pid_t burn;
	char *log, *p, *q;

	set_policies(CPU_POLICY("s2", "50", 3, 2));
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	/* The task lasts 3 s, the silence 1 s: the task's end is what holds the next one. */
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "3s", "1s");
	expect_reported(burn);
	for (int waited = 0; waited < 25000; waited += 250) {
		n = reports_of(name, reps, 8);
		put_all(reps, n < 8 ? n : 8);
		if (n >= 2)
			break;
		sleep_ms(250);
	}
	cr_assert_geq(n, 2, "%zu reports; rover log:\n%s", n, slurp(tmp_path("rover.log"), NULL));
	n = reports_of(name, reps, 8);
	t0 = (int64_t)num_at(reps[0], "time_ms");
	t1 = (int64_t)num_at(reps[1], "time_ms");
	cr_log_info("second report %lld ms after the first", (long long)(t1 - t0));
	cr_expect_geq(t1 - t0, 3000, "the second came %lld ms after the first, whose task runs 3 s",
		      (long long)(t1 - t0));
	/* Within two rounds of the first one's end. */
	cr_expect_leq(t1 - t0, 3000 + 2 * 2000 + 500);
	/* The first task had ended (the agent said so) before the second was reported. */
	snprintf(needle, sizeof(needle), "task %s on process ", str_at(reps[0], "answer_task_id"));
	log = slurp(tmp_path("rover.log"), NULL);
	p = log ? strstr(log, needle) : NULL;
	snprintf(needle, sizeof(needle), "task %s: ON_CPU", str_at(reps[1], "answer_task_id"));
	q = log ? strstr(log, needle) : NULL;
	cr_expect(p && q && p < q,
		  "the first task's end is not logged before the second's "
		  "start:\n%s",
		  log);
	free(log);
	put_all(reps, n < 8 ? n : 8);
	stop_agent(&a);
	stop_program(burn);
}

Test(continuous, a_removed_policy_stops_watching)
{
	char name[64];
	struct json_object *reps[64];
	struct agent a;
	size_t meters, nrep, n = 0;
	pid_t burn;

	set_policies(CPU_POLICY("r1", "50", 3, 2));
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	/* No silence and short tasks: while watched, a report comes every round or two. */
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "1s", "0s");
	expect_reported(burn);
	/* Two reports: while the policy holds they keep coming. */
	for (int waited = 0; waited < 25000; waited += 250) {
		n = reports_of(name, reps, 64);
		put_all(reps, n < 64 ? n : 64);
		if (n >= 2)
			break;
		sleep_ms(250);
	}
	cr_assert_geq(n, 2, "%zu reports; rover log:\n%s", n, slurp(tmp_path("rover.log"), NULL));

	/* The OAP drops the service's policy: it answers {"UUID": ""} at the next query. */
	set_policies("[]\n");
	cr_assert(wait_log("service " SVC ": policy removed", 6000), "not removed; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	sleep_ms(300);
	meters = meters_of_service(SVC);
	nrep = reports_of(name, reps, 64);
	put_all(reps, nrep < 64 ? nrep : 64);
	cr_log_info("%zu meters and %zu reports before the removal", meters, nrep);
	cr_expect_geq(meters, 2);
	/* Four rounds later: nothing more. */
	sleep_ms(8000);
	cr_expect_eq(meters_of_service(SVC), meters, "meters after the removal");
	n = reports_of(name, reps, 64);
	put_all(reps, n < 64 ? n : 64);
	cr_expect_eq(n, nrep, "reports after the removal");
	cr_expect_eq(waitpid(a.rover, NULL, WNOHANG), 0, "the agent stopped");
	stop_agent(&a);
	stop_program(burn);
}

/* Lines of tmp/rover.log that hold both a and b. */
static int lines_with(const char *a, const char *b)
{
	char *log = slurp(tmp_path("rover.log"), NULL), *save = NULL;
	int n = 0;

	for (char *l = log ? strtok_r(log, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
		n += strstr(l, a) && strstr(l, b);
	free(log);
	return n;
}

Test(continuous, malformed_items_are_skipped_one_by_one)
{
	char name[64];
	struct json_object *rep, **r;
	struct agent a;
	size_t n, alive;
	pid_t burn;

	/* Of three items, a threshold that is not a number and a Count over its Period are
	 * skipped; the good one stands. */
	set_policies("[{\"ServiceName\": \"" SVC
		     "\", \"UUID\": \"m1\", \"Profiling\": {\"ON_CPU\": "
		     "{\"PROCESS_THREAD_COUNT\": {\"Threshold\": \"abc\", \"Period\": 3, "
		     "\"Count\": 2}, "
		     "\"SYSTEM_LOAD\": {\"Threshold\": \"0.01\", \"Period\": 2, \"Count\": 3}, "
		     "\"PROCESS_CPU\": {\"Threshold\": \"50\", \"Period\": 3, \"Count\": 2}}}}]\n");
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "2s", "60s");
	expect_reported(burn);
	rep = wait_report(name, 20000);
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	/* The good item alone: one ProcessCPU cause (SYSTEM_LOAD 0.01 would hold too). */
	expect_one_cause(rep, name, "ProcessCPU", 50);
	json_object_put(rep);
	cr_expect_eq(count_in_log("policy item skipped"), 2, "one line per bad item:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(lines_with("policy item skipped", "PROCESS_THREAD_COUNT"), 1,
		     "the bad threshold's line:\n%s", slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(lines_with("policy item skipped", "SYSTEM_LOAD"), 1,
		     "the bad Count's line:\n%s", slurp(tmp_path("rover.log"), NULL));
	cr_expect(wait_log("with 1 item(s)", 1), "%s", slurp(tmp_path("rover.log"), NULL));

	/* Not JSON at all: a warning, the policy held stays, the agent goes on. */
	set_policies("{\"raw\": \"not json\"}\n");
	cr_assert(wait_log("ServiceWithPolicyJSON", 6000), "no warning; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	r = records(&n);
	alive = count_method(r, n, "keepAlive");
	records_free(r, n);
	sleep_ms(3000);
	r = records(&n);
	cr_expect_gt(count_method(r, n, "keepAlive"), alive, "keepAlive stopped");
	records_free(r, n);
	cr_expect_eq(waitpid(a.rover, NULL, WNOHANG), 0, "the agent stopped");
	stop_agent(&a);
	stop_program(burn);
}

Test(continuous, a_process_started_later_is_watched)
{
	char idle[64], name[64];
	struct json_object *rep;
	struct agent a;
	pid_t pidle, burn;
	int64_t started;

	/* The service's policy comes for an idle process; the busy one starts afterwards. */
	set_policies(CPU_POLICY("p1", "50", 3, 2));
	pidle = start_named("tests/programs/many_threads", "cp_idle", "1", idle, sizeof(idle));
	cr_assert_gt(pidle, 0);
	start_agent(&a, FINDER("cp_idle", SVC) FINDER("cp_burn", SVC), "2s", "2s", "60s");
	expect_reported(pidle);
	cr_assert(wait_log("service " SVC ": policy", 10000), "no policy; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	sleep_ms(2500); /* a round with the idle process alone */
	started = wall_ms();
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	rep = wait_report(name, 15000);
	cr_assert_not_null(rep, "the later process was not watched; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	cr_log_info("reported %lld ms after it started",
		    (long long)(num_at(rep, "time_ms") - started));
	expect_one_cause(rep, name, "ProcessCPU", 50);
	json_object_put(rep);
	cr_expect_eq(reports_of(idle, NULL, 0), 0, "the idle process reported");
	stop_agent(&a);
	stop_program(burn);
	stop_program(pidle);
}

/* time_ms of the first collectBatch with a meter of process, or 0. */
static int64_t first_meter_of(const char *process)
{
	size_t n;
	struct json_object **r = records(&n);
	int64_t t = 0;

	for (size_t i = 0; i < n && !t; i++) {
		struct json_object *md = at(r[i], "message.meterData");

		if (strcmp(method_of(r[i]), "collectBatch") || !md)
			continue;
		for (size_t j = 0; j < json_object_array_length(md); j++) {
			const char *pn = str_at(json_object_array_get_idx(md, j),
						"singleValue.labels.0.value");

			if (pn && !strcmp(pn, process))
				t = (int64_t)num_at(r[i], "time_ms");
		}
	}
	records_free(r, n);
	return t;
}

/*
 * Processes whose window held but which ended before the round that would report them get
 * no task: one gone from /proc (killed and reaped), one a zombie (killed, its parent has not
 * waited yet: /proc still has it, as when any parent is slow to reap). Rounds every 10 s, the
 * item Count 3 of Period 5. Both burners idle until a round has seen them (their first
 * meter), then burn for 6 s (their windows hold from then on: no sample comes once they end,
 * so the newest five stay busy) and end 3 s or more before the next round, which finds the
 * windows holding and the processes ended. An idle process keeps the service reported.
 */
Test(continuous, a_process_that_ended_gets_no_task, .timeout = 90)
{
	char idle[64], gone[64], zomb[64];
	double vals[4];
	struct json_object *r[4];
	struct agent a;
	int64_t t1 = 0;
	size_t n;
	pid_t pidle, pgone, pzomb;

	/* 20%: a burner on a machine busy with other work gets well under a core. */
	set_policies(CPU_POLICY("e1", "20", 5, 3));
	pidle = start_named("tests/programs/many_threads", "cp_idle", "1", idle, sizeof(idle));
	pgone = start_named("tests/programs/idle_burn", "cp_gone", NULL, gone, sizeof(gone));
	pzomb = start_named("tests/programs/idle_burn", "cp_zomb", NULL, zomb, sizeof(zomb));
	cr_assert_gt(pidle, 0);
	cr_assert_gt(pgone, 0);
	cr_assert_gt(pzomb, 0);
	start_agent(&a, FINDER("cp_idle", SVC) FINDER("cp_gone", SVC) FINDER("cp_zomb", SVC), "10s",
		    "2s", "60s");
	for (int64_t until = wall_ms() + 25000; wall_ms() < until;) {
		t1 = first_meter_of(gone);
		if (t1 && first_meter_of(zomb))
			break;
		t1 = 0;
		sleep_ms(100);
	}
	cr_assert(t1 && first_meter_of(zomb), "no CPU meter of the burners; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_assert_lt(wall_ms(), t1 + 2000, "the round that saw them is long past");
	cr_assert_eq(kill(pgone, SIGUSR1), 0);
	cr_assert_eq(kill(pzomb, SIGUSR1), 0);
	while (wall_ms() < t1 + 7000)
		sleep_ms(50);
	cr_assert_eq(reports_of(NULL, r, 4), 0, "reported before its window could hold");
	stop_program(pgone);
	cr_assert_eq(kill(pzomb, SIGKILL), 0);
	cr_assert(wait_log("crossed a threshold but it ended: no task reported", 8000),
		  "the next round did not find the windows holding; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	sleep_ms(500);
	cr_expect_eq(count_in_log("crossed a threshold but it ended"), 2, "%s",
		     slurp(tmp_path("rover.log"), NULL));
	n = reports_of(NULL, r, 4);
	cr_expect_eq(n, 0, "a task reported for a process that ended: %s",
		     n ? json_object_to_json_string(r[0]) : "");
	put_all(r, n < 4 ? n : 4);
	/* Reaped now; the later rounds forget both. */
	cr_assert_eq(waitpid(pzomb, NULL, 0), pzomb);
	cr_expect_eq(reports_of(NULL, NULL, 0), 0);
	cr_expect_gt(meters_of("rover_con_p_process_cpu", idle, SVC, vals, 4), 0,
		     "the idle process is not watched");
	stop_agent(&a);
	stop_program(pidle);
}

/* Whether t is "/proc/PID/stat". */
static int is_task_path(const char *t)
{
	const char *p = t + 6;

	if (strncmp(t, "/proc/", 6) || *p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return !strcmp(p, "/task");
}

/*
 * The supervisor's descriptors of /proc/PID/task, which it keeps with a pidfd for each watched
 * process (common/procstat.h): of pid (0: of any process). Nothing else of the supervisor
 * opens a task directory; callers wait for a count.
 */
static int stat_fds(pid_t sup, pid_t pid)
{
	char path[64], want[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)sup);
	snprintf(want, sizeof(want), "/proc/%d/task", (int)pid);
	d = opendir(path);
	cr_assert_not_null(d, "%s: %s", path, strerror(errno));
	while ((de = readdir(d))) {
		char link[400], target[128];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue; /* closed since the listing */
		target[len] = '\0';
		n += pid ? !strcmp(target, want) : is_task_path(target);
	}
	closedir(d);
	return n;
}

/* Until the supervisor holds n descriptors of pid's task directory (pid 0: of any), up to ms. */
static int wait_stat_fds(pid_t sup, pid_t pid, int n, int ms)
{
	for (int waited = 0; waited < ms; waited += 100) {
		if (stat_fds(sup, pid) == n)
			return 1;
		sleep_ms(100);
	}
	return stat_fds(sup, pid) == n;
}

/*
 * The supervisor keeps each watched process's descriptors (its task directory and a pidfd,
 * read again every second, common/procstat.h): a process that ended, reaped or a zombie, has
 * them closed within a sample or two, the others keep theirs, none is opened twice; a removed
 * policy closes them all.
 */
Test(continuous, watched_processes_keep_descriptors_closed_when_they_end, .timeout = 90)
{
	char na[64], nb[64], nc[64];
	struct agent a;
	pid_t pa, pb, pc, sup;

	set_policies(CPU_POLICY("k1", "99", 3, 2));
	pa = start_named("tests/programs/idle_burn", "cp_ka", NULL, na, sizeof(na));
	pb = start_named("tests/programs/idle_burn", "cp_kb", NULL, nb, sizeof(nb));
	pc = start_named("tests/programs/idle_burn", "cp_kc", NULL, nc, sizeof(nc));
	cr_assert(pa > 0 && pb > 0 && pc > 0);
	start_agent(&a, FINDER("cp_ka", SVC) FINDER("cp_kb", SVC) FINDER("cp_kc", SVC), "2s", "2s",
		    "60s");
	expect_reported(pa);
	expect_reported(pb);
	expect_reported(pc);
	sup = wait_child(a.rover, "rover-superviso", 5000);
	cr_assert_gt(sup, 0);
	cr_assert(wait_log("service " SVC ": policy", 10000), "no policy; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_stat_fds(sup, pa, 1, 8000) && wait_stat_fds(sup, pb, 1, 3000) &&
			  wait_stat_fds(sup, pc, 1, 3000),
		  "not one task descriptor each: %d %d %d; rover log:\n%s", stat_fds(sup, pa),
		  stat_fds(sup, pb), stat_fds(sup, pc), slurp(tmp_path("rover.log"), NULL));
	/* Read every second through the same descriptors: none opened again. */
	sleep_ms(3000);
	cr_expect(wait_stat_fds(sup, 0, 3, 1000), "task descriptors after 3 samples: %d",
		  stat_fds(sup, 0));
	cr_expect_eq(meters_of("rover_con_p_process_cpu", na, SVC, NULL, 0) > 0, 1,
		     "no CPU meter from the kept descriptors");

	/* b ends and is reaped; c ends and stays a zombie. */
	stop_program(pb);
	cr_assert_eq(kill(pc, SIGKILL), 0);
	cr_assert_eq(waitid(P_PID, (id_t)pc, &(siginfo_t){ 0 }, WEXITED | WNOWAIT), 0);
	cr_expect(wait_stat_fds(sup, pb, 0, 3000), "the descriptors of a reaped process kept");
	cr_expect(wait_stat_fds(sup, pc, 0, 3000), "the descriptors of a zombie kept");
	cr_expect_eq(stat_fds(sup, pa), 1, "the live process's descriptor closed");
	cr_expect(wait_stat_fds(sup, 0, 1, 1000), "%d task descriptors for one process",
		  stat_fds(sup, 0));
	cr_assert_eq(waitpid(pc, NULL, 0), pc);

	/* No policy: nothing watched, nothing open. */
	set_policies("[]\n");
	cr_assert(wait_log("service " SVC ": policy removed", 6000), "not removed; rover log:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_expect(wait_stat_fds(sup, 0, 0, 3000), "%d task descriptors with no policy",
		  stat_fds(sup, 0));
	cr_expect_eq(waitpid(a.rover, NULL, WNOHANG), 0, "the agent stopped");
	stop_agent(&a);
	stop_program(pa);
}

/* Context switches of pid so far (voluntary: each a wait that ended in a wakeup). */
static long voluntary_switches(pid_t pid)
{
	char buf[64];

	cr_assert_eq(proc_status(pid, "voluntary_ctxt_switches", buf, sizeof(buf)), 0);
	return atol(buf);
}

/*
 * The HTTP monitor's worker on processes that serve nothing reads its ring buffer at each
 * flush (fetch_interval, 1 s), not every 100 ms: about a wakeup a second, where ten a second
 * were most of what the monitor cost. Its counts are tested by the HTTP tests above.
 */
Test(continuous, the_http_monitor_of_quiet_processes_wakes_once_a_flush)
{
	char name[64];
	struct agent a;
	pid_t pid, worker;
	long v0, v1;

	set_policies("[{\"ServiceName\":\"" SVC "\",\"UUID\":\"q1\",\"Profiling\":{\"NETWORK\":"
		     "{\"HTTP_ERROR_RATE\":{\"Threshold\":\"100\",\"Period\":4,\"Count\":2}}}}]");
	pid = start_named("tests/programs/idle_burn", "cp_quiet", NULL, name, sizeof(name));
	cr_assert_gt(pid, 0);
	start_agent(&a, FINDER("cp_quiet", SVC), "2s", "10s", "60s");
	expect_reported(pid);
	cr_assert(wait_log("HTTP monitor rover-http-monitor-1 on 1 process", 15000), "%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_log("running in worker", 10000), "%s", slurp(tmp_path("rover.log"), NULL));
	worker = wait_child(a.rover, "rover-worker", 5000);
	cr_assert_gt(worker, 0, "no worker; rover log:\n%s", slurp(tmp_path("rover.log"), NULL));
	sleep_ms(1500);
	v0 = voluntary_switches(worker);
	sleep_ms(5000);
	v1 = voluntary_switches(worker);
	cr_log_info("the monitor's worker: %ld wakeups in 5 s", v1 - v0);
	/* Five flushes and what they send; every 100 ms would be 50 and more. */
	cr_expect_leq(v1 - v0, 20, "%ld wakeups in 5 s", v1 - v0);
	cr_expect_eq(waitpid(a.rover, NULL, WNOHANG), 0, "the agent stopped");
	stop_agent(&a);
	stop_program(pid);
}

/*
 * An OAP that sends the same policy at every query (here: served raw, whatever UUID the
 * agent holds; a real one does so for an entry the agent cannot take) must not hold the
 * checks back: they keep their own interval.
 */
Test(continuous, a_policy_sent_at_every_query_still_triggers)
{
	char name[64];
	struct json_object *rep;
	struct agent a;
	pid_t burn;

	set_policies("{\"raw\": \"[{\\\"ServiceName\\\": \\\"" SVC "\\\", \\\"UUID\\\": "
		     "\\\"a1\\\", \\\"Profiling\\\": {\\\"ON_CPU\\\": {\\\"PROCESS_CPU\\\": "
		     "{\\\"Threshold\\\": \\\"50\\\", \\\"Period\\\": 3, \\\"Count\\\": 2}}}}]\"}\n");
	burn = start_named("tests/programs/demo_burn", "cp_burn", NULL, name, sizeof(name));
	cr_assert_gt(burn, 0);
	start_agent(&a, FINDER("cp_burn", SVC), "2s", "2s", "60s");
	expect_reported(burn);
	rep = wait_report(name, 15000);
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	expect_one_cause(rep, name, "ProcessCPU", 50);
	json_object_put(rep);
	cr_expect_gt(meters_of("rover_con_p_process_cpu", name, SVC, NULL, 0), 0);
	stop_agent(&a);
	stop_program(burn);
}

/* n GETs of path to 127.0.0.1:port over one connection (tests/programs/http_client). */
static void http_gets(int port, const char *path, int n)
{
	struct http_totals t;

	cr_assert_eq(http_client_run(NULL, "127.0.0.1", port, path, n, 1, &t), 0);
}

/*
 * The HTTP meters name of process for path uri (labels uri, process_name, layer, in that
 * order): how many, the largest value in *ret_max.
 */
static size_t http_meters(const char *name, const char *process, const char *uri, double *ret_max)
{
	size_t n, k = 0;
	struct json_object **r = records(&n);

	*ret_max = -1;
	for (size_t i = 0; i < n; i++) {
		struct json_object *md = at(r[i], "message.meterData");

		if (strcmp(method_of(r[i]), "collectBatch") || !md)
			continue;
		for (size_t j = 0; j < json_object_array_length(md); j++) {
			struct json_object *d = json_object_array_get_idx(md, j);
			struct json_object *first = json_object_array_get_idx(md, 0);
			const char *mn = str_at(d, "singleValue.name");
			const char *u = str_at(d, "singleValue.labels.0.value");
			const char *pn = str_at(d, "singleValue.labels.1.value");

			/* One collection per (service, instance): the OAP takes them so. */
			cr_expect_str_eq(str_at(d, "service"), str_at(first, "service"));
			cr_expect_str_eq(str_at(d, "serviceInstance"),
					 str_at(first, "serviceInstance"));

			if (!mn || strcmp(mn, name) || !pn || strcmp(pn, process) || !u ||
			    strcmp(u, uri))
				continue;
			cr_expect_str_eq(str_at(d, "singleValue.labels.0.name"), "uri");
			cr_expect_str_eq(str_at(d, "singleValue.labels.1.name"), "process_name");
			cr_expect_str_eq(str_at(d, "singleValue.labels.2.name"), "layer");
			cr_expect_str_eq(str_at(d, "service"), SVC);
			if (num_at(d, "singleValue.value") > *ret_max)
				*ret_max = num_at(d, "singleValue.value");
			k++;
		}
	}
	records_free(r, n);
	return k;
}

/* The cause of rep for the HTTP monitors: its "uri" object, checked to be of type. */
static struct json_object *uri_cause(struct json_object *rep, const char *type)
{
	struct json_object *c = at(rep, "message.causes.0");

	cr_assert_not_null(c, "%s", json_object_to_json_string(rep));
	cr_assert_str_eq(cause_type(c), type, "%s", json_object_to_json_string(rep));
	cr_assert_null(at(rep, "message.causes.1"), "%s", json_object_to_json_string(rep));
	cr_assert_not_null(at(c, "uri"), "not a URI cause: %s", json_object_to_json_string(rep));
	return at(c, "uri");
}

/*
 * HTTP_ERROR_RATE with a URIList, on a server answering /fail with 500 and /ok with 200: the
 * HTTP monitor (a light NETWORK task of the agent's own) counts what it serves; /fail's window
 * holds (100% errors), /ok's does not. The report's cause names the path /fail with the rate
 * seen, the NETWORK task the OAP names starts with /fail sampled, and the meters carry each
 * path's rate under the label uri.
 */
Test(continuous, http_error_rate_on_a_listed_path_triggers_a_network_task)
{
	char web[64], portarg[16];
	struct json_object *rep, *u;
	double top;
	struct agent a;
	int port = free_port(32000, 39999);
	pid_t pid;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	set_policies("[{\"ServiceName\":\"" SVC "\",\"UUID\":\"h1\",\"Profiling\":{\"NETWORK\":"
		     "{\"HTTP_ERROR_RATE\":{\"Threshold\":\"20\",\"Period\":4,\"Count\":2,"
		     "\"URIList\":[\"/fail\",\"/ok\"]}}}}]");
	pid = start_named("tests/programs/http_server", "cp_web", portarg, web, sizeof(web));
	cr_assert_gt(pid, 0);
	start_agent(&a, FINDER("cp_web", SVC), "2s", "10s", "60s");
	expect_reported(pid);
	cr_assert(wait_log("HTTP monitor rover-http-monitor-1 on 1 process", 15000), "%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_log("running in worker", 10000), "%s", slurp(tmp_path("rover.log"), NULL));
	rep = NULL;
	for (int i = 0; i < 40 && !rep; i++) {
		http_gets(port, "/fail", 3);
		http_gets(port, "/ok", 3);
		rep = wait_report(web, 10);
		if (!rep)
			sleep_ms(300);
	}
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	u = uri_cause(rep, "HTTPErrorRate");
	cr_expect_str_eq(str_at(u, "path"), "/fail");
	cr_expect_eq(num_at(u, "threshold"), 20);
	cr_expect_eq(num_at(u, "current"), 100, "%s", json_object_to_json_string(rep));
	cr_expect_str_eq(str_at(rep, "message.network.samplingURIRegexes.0"), "/fail");
	cr_expect_null(at(rep, "message.network.samplingURIRegexes.1"));
	cr_assert(wait_log("NETWORK of", 10000), "the task did not start: %s",
		  slurp(tmp_path("rover.log"), NULL));
	json_object_put(rep);
	cr_expect_gt(http_meters("rover_con_p_http_error_rate", web, "/fail", &top), 0);
	cr_expect_eq(top, 100, "the rate of /fail");
	cr_expect_gt(http_meters("rover_con_p_http_error_rate", web, "/ok", &top), 0);
	cr_expect_eq(top, 0, "the rate of /ok");
	stop_agent(&a);
}

/*
 * HTTP_AVG_RESPONSE_TIME over every URI on a slow endpoint: requests taking 300 ms against a
 * threshold of 200 ms hold the window; the cause is the global one (path ""), its current the
 * mean seen, and the NETWORK task it starts samples every URI (one rule, "").
 */
Test(continuous, http_average_response_time_over_every_uri)
{
	char web[64], portarg[16];
	struct json_object *rep, *u;
	struct agent a;
	int port = free_port(32000, 39999);
	pid_t pid;

	cr_assert_gt(port, 0);
	snprintf(portarg, sizeof(portarg), "%d", port);
	set_policies("[{\"ServiceName\":\"" SVC "\",\"UUID\":\"h2\",\"Profiling\":{\"NETWORK\":"
		     "{\"HTTP_AVG_RESPONSE_TIME\":{\"Threshold\":\"200\",\"Period\":4,"
		     "\"Count\":2}}}}]");
	pid = start_named("tests/programs/http_server", "cp_slow", portarg, web, sizeof(web));
	cr_assert_gt(pid, 0);
	start_agent(&a, FINDER("cp_slow", SVC), "2s", "5s", "60s");
	expect_reported(pid);
	cr_assert(wait_log("HTTP monitor rover-http-monitor-1", 15000), "%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_log("running in worker", 10000), "%s", slurp(tmp_path("rover.log"), NULL));
	rep = NULL;
	for (int i = 0; i < 40 && !rep; i++) {
		http_gets(port, "/delay/300", 2);
		rep = wait_report(web, 10);
	}
	cr_assert_not_null(rep, "no reportProfilingTask; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	u = uri_cause(rep, "HTTPAvgResponseTime");
	cr_expect_str_eq(str_at(u, "path") ? str_at(u, "path") : "", "");
	cr_expect_eq(num_at(u, "threshold"), 200);
	cr_expect(num_at(u, "current") >= 300 && num_at(u, "current") < 1000, "%s",
		  json_object_to_json_string(rep));
	cr_expect_str_eq(str_at(rep, "message.network.samplingURIRegexes.0") ?: "", "", "%s",
			 json_object_to_json_string(rep));
	cr_expect_not_null(at(rep, "message.network"), "%s", json_object_to_json_string(rep));
	json_object_put(rep);
	cr_expect(wait_log("NETWORK of", 10000), "the task did not start: %s",
		  slurp(tmp_path("rover.log"), NULL));
	stop_agent(&a);
}
