// SPDX-License-Identifier: Apache-2.0
/*
 * The whole agent (`rover run --config`) against a fake SkyWalking OAP (tests/oap/fake_oap.py)
 * that speaks the real protocol and records every message: a workload is discovered and
 * reported with the entity its config renders, a task served for it runs, and the uploads
 * carry its metadata, its hot functions and as many samples as the kernel took, through a
 * backend restart too.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

/* What a test started, stopped in the fini even when an assertion ended the test early: a
 * leftover agent or workload would be found by the next test's discovery. */
static pid_t started[8];
static int nstarted;

static pid_t track(pid_t pid)
{
	if (pid > 0 && nstarted < 8)
		started[nstarted++] = pid;
	return pid;
}

static void stop(pid_t pid, int sig);

/*
 * The workload under a name of this test's own (demo_burn_PID): discovery matches it by that
 * name and nothing else, so another demo_burn on the host (a test running alongside) is
 * another entity.
 */
static char workload_name[64];

static pid_t start_workload(void)
{
	char path[4096], cmd[8192];

	snprintf(workload_name, sizeof(workload_name), "demo_burn_%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", tmp, workload_name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin("tests/programs/demo_burn"), path);
	cr_assert_eq(system(cmd), 0);
	return track(start_program(path, NULL));
}

static void backend_fini(void)
{
	for (int i = nstarted - 1; i >= 0; i--)
		if (waitpid(started[i], NULL, WNOHANG) == 0)
			stop(started[i], SIGTERM); /* still ours and running */
	nstarted = 0;
	tmp_teardown();
}

TestSuite(backend, .init = tmp_setup, .fini = backend_fini, .timeout = 150);

static char *src_path(const char *rel)
{
	static char buf[8][4096];
	static int k;
	const char *src = getenv("ROVER_SRC");

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", src ? src : ".", rel);
	return buf[k];
}

/* Starts the fake OAP; port 0 picks one. Returns its pid, the port in *ret_port. With tls,
 * it serves TLS with tmp/server.pem (make_certs). */
static pid_t start_oap_tls(int port, int *ret_port, int tls)
{
	char portarg[16];
	char *argv[] = { "/usr/bin/python3", src_path("tests/oap/fake_oap.py"), "--port", portarg,
			 "--bind", "127.0.0.1", "--port-file", tmp_path("oap.port"), "--record",
			 tmp_path("rec.jsonl"), "--tasks", tmp_path("tasks.json"),
			 tls ? "--tls-cert" : NULL, tmp_path("server.pem"), "--tls-key",
			 tmp_path("server.key"), NULL };
	pid_t pid;

	snprintf(portarg, sizeof(portarg), "%d", port);
	unlink(tmp_path("oap.port"));
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

static pid_t start_oap(int port, int *ret_port)
{
	return start_oap_tls(port, ret_port, 0);
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

/* Every recorded message, in order. */
static struct json_object **records(size_t *ret_n)
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

static void records_free(struct json_object **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_put(r[i]);
	free(r);
}

static const char *method_of(struct json_object *r)
{
	struct json_object *m;

	return json_object_object_get_ex(r, "method", &m) ? json_object_get_string(m) : "";
}

/* Follows a path of object keys and array indexes ("processes", "0", ...). */
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

static size_t count_method(struct json_object **r, size_t n, const char *method)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += !strcmp(method_of(r[i]), method);
	return c;
}

static const char *config_fmt =
	"logger:\n"
	"  level: ${ROVER_TEST_LOG_LEVEL:INFO}\n"
	"core:\n"
	"  backend:\n"
	"    addr: 127.0.0.1:%d\n"
	"    authentication: \"secret-token\"\n"
	"    spool_dir: \"%s\"\n"
	"process_discovery:\n"
	"  heartbeat_period: 1s\n"
	"  properties_report_period: 3\n"
	"  vm:\n"
	"    active: true\n"
	"    period: 500ms\n"
	"    finders:\n"
	"      - match_cmd_regex: \"/(demo_burn_[0-9]+)$\"\n"
	"        layer: OS_LINUX\n"
	"        service_name: \"rover-it\"\n"
	"        instance_name: \"{{.Rover.HostName}}\"\n"
	"        process_name: \"{{.Process.ExeName}}\"\n"
	"        labels: \"team-a,{{.Finder.RegexMatchGroup 1}}\"\n"
	"profiling:\n"
	"  active: true\n"
	"  check_interval: 1s\n"
	"  flush_interval: 1s\n"
	"  task:\n"
	"    on_cpu:\n"
	"      dump_period: 5ms\n";

static pid_t start_rover_extra(int port, const char *spool, const char *extra)
{
	char cfg[8192];
	/* The socket directory is the agent's own (/tmp/rover.XXXXXX): the rover user must reach
	 * it, and the test's directory is closed to it. */
	char *argv[] = { (char *)bin("rover"), "run", "--config", tmp_path("rover.yaml"), NULL };

	snprintf(cfg, sizeof(cfg), config_fmt, port, spool ? spool : "");
	/* Later keys of a mapping are refused as duplicates: extra replaces whole lines. */
	if (extra) {
		char *p = strstr(cfg, "    authentication:");

		cr_assert_not_null(p);
		memmove(p + strlen(extra), p, strlen(p) + 1);
		memcpy(p, extra, strlen(extra));
	}
	cr_assert_eq(write_file(tmp_path("rover.yaml"), cfg), 0);
	return track(spawn_cmd(argv, tmp_path("rover.log")));
}

static pid_t start_rover(int port, const char *spool)
{
	return start_rover_extra(port, spool, NULL);
}

/* Every thread of pid: no capability, NoNewPrivs, seccomp filter, not root. */
static void expect_unprivileged(pid_t pid, const char *who)
{
	char path[128], buf[256];
	struct dirent *de;
	DIR *dir;
	int threads = 0;

	cr_assert_eq(proc_status(pid, "Uid", buf, sizeof(buf)), 0);
	cr_expect(strncmp(buf, "0", 1) != 0, "%s runs as root: %s", who, buf);
	cr_assert_eq(proc_status(pid, "CapEff", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "0000000000000000", "%s CapEff", who);
	cr_assert_eq(proc_status(pid, "CapPrm", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "0000000000000000", "%s CapPrm", who);
	cr_assert_eq(proc_status(pid, "NoNewPrivs", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "1", "%s NoNewPrivs", who);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((de = readdir(dir))) {
		char status[300], *text;

		if (de->d_name[0] == '.')
			continue;
		snprintf(status, sizeof(status), "/proc/%d/task/%s/status", (int)pid, de->d_name);
		text = slurp(status, NULL);
		if (!text)
			continue; /* the thread ended */
		threads++;
		/* gRPC's threads and ours: the filter covers every one (TSYNC). */
		cr_expect(strstr(text, "\nSeccomp:\t2\n"), "%s thread %s has no seccomp filter",
			  who, de->d_name);
		free(text);
	}
	closedir(dir);
	cr_log_info("%s: %d threads, all filtered", who, threads);
	cr_expect_gt(threads, 2, "%s: the backend threads are missing", who);
}

/* The reportProcesses entry of pid, waiting up to timeout_ms for it. A new reference. */
static struct json_object *wait_reported(pid_t pid, int timeout_ms)
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

static void add_task(const char *id, const char *target, int seconds)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "[{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"%s\", "
		 "\"ProcessId\": \"@process:%s\", \"TaskUpdateTime\": \"@now\", "
		 "\"TriggerType\": \"FIXED_TIME\", \"TargetType\": \"%s\", \"TaskStartTime\": "
		 "\"@now\", \"FixedTriggerDuration\": \"%d\", \"ExtensionConfigJSON\": \"\"}}]\n",
		 id, workload_name, target, seconds);
	cr_assert_eq(write_file(tmp_path("tasks.json.new"), text), 0);
	rename(tmp_path("tasks.json.new"), tmp_path("tasks.json"));
}

/* Waits for the agent's word that the task ended; the samples it took, or -1. */
static long wait_task_done(const char *id, int timeout_ms)
{
	char needle[128];

	snprintf(needle, sizeof(needle), "task %s on process ", id);
	for (int waited = 0; waited < timeout_ms; waited += 250) {
		char *log = slurp(tmp_path("rover.log"), NULL), *p = log ? strstr(log, needle) : NULL;
		char *d = p ? strstr(p, " done: ") : NULL;

		if (d) {
			long v = atol(d + 7);

			free(log);
			return v;
		}
		free(log);
		sleep_ms(250);
	}
	return -1;
}

struct upload_sum {
	long dump_count;
	long burn_a, burn_b;
	size_t messages, streams;
	int metadata_ok;
	char process_id[256];
};

/* Adds up the collectProfilingData messages of task id. */
static void sum_uploads(const char *id, struct upload_sum *s)
{
	size_t n;
	struct json_object **r = records(&n);

	memset(s, 0, sizeof(*s));
	s->metadata_ok = 1;
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = at(r[i], "message"), *stacks, *idx = at(r[i], "index");
		long dc;
		int has_a = 0, has_b = 0;

		if (strcmp(method_of(r[i]), "collectProfilingData"))
			continue;
		if (idx && json_object_get_int(idx) == 0) {
			const char *tid = str_at(m, "task.taskId");
			const char *pid = str_at(m, "task.processId");

			s->streams++;
			if (!tid || strcmp(tid, id))
				continue; /* another task's stream */
			if (!pid || !pid[0] || !str_at(m, "task.profilingStartTime") ||
			    !str_at(m, "task.currentTime"))
				s->metadata_ok = 0;
			else
				snprintf(s->process_id, sizeof(s->process_id), "%s", pid);
		} else if (at(m, "task")) {
			s->metadata_ok = 0; /* only the first message of a stream carries it */
		}
		s->messages++;
		dc = at(m, "onCPU.dumpCount") ? json_object_get_int64(at(m, "onCPU.dumpCount")) : 0;
		s->dump_count += dc;
		stacks = at(m, "onCPU.stacks");
		for (size_t k = 0; stacks && k < json_object_array_length(stacks); k++) {
			struct json_object *st = json_object_array_get_idx(stacks, k);
			struct json_object *syms = at(st, "stackSymbols");
			const char *type = str_at(st, "stackType");

			if (!type || strcmp(type, "PROCESS_USER_SPACE") || !syms)
				continue;
			/* Innermost first: the leaf user frame is the first symbol. */
			if (json_object_array_length(syms)) {
				const char *leaf =
					json_object_get_string(json_object_array_get_idx(syms, 0));

				has_a = !strcmp(leaf, "burn_a");
				has_b = !strcmp(leaf, "burn_b");
			}
		}
		s->burn_a += has_a ? dc : 0;
		s->burn_b += has_b ? dc : 0;
	}
	records_free(r, n);
}

Test(backend, workload_reported_profiled_and_uploaded)
{
	pid_t work = start_workload(), oap, rover;
	struct json_object *h, *labels, *props;
	struct upload_sum s;
	int port = 0;
	long samples;
	size_t n, keepalives, reports;
	struct json_object **r;
	char host[256];

	cr_assert_gt(work, 0);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &port);
	rover = start_rover(port, NULL);

	h = wait_reported(work, 20000);
	cr_assert_not_null(h, "demo_burn not reported; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	gethostname(host, sizeof(host));
	cr_expect_str_eq(str_at(h, "entity.layer"), "OS_LINUX");
	cr_expect_str_eq(str_at(h, "entity.serviceName"), "rover-it");
	cr_expect_str_eq(str_at(h, "entity.instanceName"), host);
	/* ExeName of a root process: only the launcher could read its exe for us. */
	cr_expect_str_eq(str_at(h, "entity.processName"), workload_name);
	labels = at(h, "entity.labels");
	cr_assert_not_null(labels);
	cr_expect_eq(json_object_array_length(labels), 2);
	cr_expect_str_eq(str_at(h, "entity.labels.0"), "team-a");
	cr_expect_str_eq(str_at(h, "entity.labels.1"), workload_name);
	cr_expect_str_eq(str_at(h, "_metadata.authentication"), "secret-token");
	props = at(h, "properties");
	cr_assert_not_null(props);
	{
		int have = 0;

		for (size_t k = 0; k < json_object_array_length(props); k++) {
			const char *key = str_at(json_object_array_get_idx(props, k), "key");
			const char *val = str_at(json_object_array_get_idx(props, k), "value");
			char pidstr[16];

			snprintf(pidstr, sizeof(pidstr), "%d", (int)work);
			if (!strcmp(key, "pid") && !strcmp(val, pidstr))
				have |= 1;
			if (!strcmp(key, "command_line") && strstr(val, "demo_burn"))
				have |= 2;
			if (!strcmp(key, "support_ebpf_profiling") && !strcmp(val, "true"))
				have |= 4;
			if (!strcmp(key, "host_ip") && val[0])
				have |= 8;
		}
		cr_expect_eq(have, 15, "properties incomplete: %s",
			     json_object_to_json_string(props));
	}
	json_object_put(h);
	expect_unprivileged(wait_child(rover, "rover-superviso", 5000), "supervisor");
	expect_unprivileged(wait_child(rover, "rover-shipper", 5000), "shipper");

	add_task("it-task-1", "ON_CPU", 4);
	samples = wait_task_done("it-task-1", 30000);
	cr_assert_gt(samples, 0, "task did not finish; rover log:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	/* The last flush's upload may trail the task's end by a moment. */
	for (int i = 0; i < 40; i++) {
		sum_uploads("it-task-1", &s);
		if (s.dump_count >= samples)
			break;
		sleep_ms(250);
	}
	cr_log_info("samples %ld uploaded %ld in %zu messages, %zu streams; burn_a %ld burn_b %ld",
		    samples, s.dump_count, s.messages, s.streams, s.burn_a, s.burn_b);
	cr_expect(s.metadata_ok, "task metadata missing or misplaced");
	/* One stream per flush (4 s, flush_interval 1 s, and the last partial one). */
	cr_expect_leq(s.streams, 6, "%zu streams for a 4 s task flushed every second", s.streams);
	/* One message per distinct stack pair of a flush, not one per sample. */
	cr_expect_lt(s.messages, (size_t)samples / 2, "%zu messages for %ld samples", s.messages,
		     samples);
	cr_expect(s.process_id[0], "no processId in the uploads");
	cr_expect_eq(s.dump_count, samples, "uploaded %ld dumpCounts for %ld samples", s.dump_count,
		     samples);
	/* 4 s at 200 Hz of one busy thread. */
	cr_expect_gt(samples, 400);
	cr_expect_gt(s.burn_a + s.burn_b, s.dump_count * 8 / 10);
	cr_expect(s.burn_a * 100 > (s.burn_a + s.burn_b) * 70 &&
			  s.burn_a * 100 < (s.burn_a + s.burn_b) * 80,
		  "burn_a %ld of %ld (75%% expected)", s.burn_a, s.burn_a + s.burn_b);

	/* Heartbeats: 1 s apart, every third a full re-report. */
	r = records(&n);
	keepalives = count_method(r, n, "keepAlive");
	reports = count_method(r, n, "reportProcesses");
	records_free(r, n);
	cr_log_info("keepAlive %zu reportProcesses %zu", keepalives, reports);
	cr_expect_geq(keepalives, 3);
	cr_expect_geq(reports, 2);
	cr_expect_geq(count_method(r = records(&n), n, "queryTasks"), 3);
	records_free(r, n);

	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
}

Test(backend, backend_restart_mid_task_loses_nothing)
{
	pid_t work = start_workload(), oap, rover;
	struct upload_sum s;
	struct json_object *h;
	int port = 0, port2 = 0;
	char spool[128];
	long samples;

	cr_assert_gt(work, 0);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &port);
	/* The shipper (rover user) must reach the spool: not under the test's closed directory. */
	snprintf(spool, sizeof(spool), "/tmp/rover-it-spool.%d", (int)getpid());
	rover = start_rover(port, spool);
	h = wait_reported(work, 20000);
	cr_assert_not_null(h, "not reported; rover log:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(h);
	add_task("it-task-2", "ON_CPU", 8);
	/* Let the first uploads land, then take the backend away for 3 s. */
	for (int i = 0; i < 60; i++) {
		sum_uploads("it-task-2", &s);
		if (s.messages)
			break;
		sleep_ms(100);
	}
	cr_assert_gt(s.messages, 0, "no upload before the outage");
	stop(oap, SIGKILL);
	sleep_ms(3000);
	oap = start_oap(port, &port2);
	cr_assert_eq(port2, port);
	samples = wait_task_done("it-task-2", 40000);
	cr_assert_gt(samples, 0, "task did not finish; rover log:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	for (int i = 0; i < 120; i++) {
		sum_uploads("it-task-2", &s);
		if (s.dump_count >= samples)
			break;
		sleep_ms(250);
	}
	cr_log_info("samples %ld uploaded %ld", samples, s.dump_count);
	rm_rf(spool);
	cr_expect_eq(s.dump_count, samples, "uploaded %ld for %ld samples; rover log:\n%s",
		     s.dump_count, samples, slurp(tmp_path("rover.log"), NULL));
	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
}

Test(backend, unreachable_backend_is_retried_quietly)
{
	pid_t rover;
	char *log;
	int lines = 0;

	/* A port nobody listens on. */
	rover = start_rover(1, NULL);
	sleep_ms(6000);
	cr_assert_eq(waitpid(rover, NULL, WNOHANG), 0, "rover run exited: %s",
		     slurp(tmp_path("rover.log"), NULL));
	stop(rover, SIGTERM);
	log = slurp(tmp_path("rover.log"), NULL);
	cr_assert_not_null(log);
	for (char *p = log; (p = strstr(p, "unreachable")); p++)
		lines++;
	cr_expect_eq(lines, 1, "one line per change of state expected, got %d:\n%s", lines, log);
	free(log);
}

Test(backend, bad_config_is_refused_before_start)
{
	char *argv[] = { (char *)bin("rover"), "run", "--config", tmp_path("bad.yaml"), NULL };
	char *err = NULL;
	int rc;

	cr_assert_eq(write_file(tmp_path("bad.yaml"), "profiling:\n  check_interval: ten\n"), 0);
	rc = run_cmd(argv, &err);
	cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
	cr_expect(err && strstr(err, "profiling.check_interval") && strstr(err, "ten"),
		  "error names neither key nor value: %s", err);
	free(err);

	cr_assert_eq(write_file(tmp_path("bad.yaml"), "process_discovery:\n  vm:\n    finders:\n"
						    "      - match_cmd_regex: \"(unclosed\"\n"
						    "        service_name: x\n"),
		     0);
	rc = run_cmd(argv, &err);
	cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
	cr_expect(err && strstr(err, "match_cmd_regex"), "error does not name the key: %s", err);
	free(err);
}

Test(backend, tls_with_the_configured_ca)
{
	pid_t work = start_workload(), oap, rover;
	struct json_object *h;
	char cmd[2048], extra[1024];
	int port = 0;

	cr_assert_gt(work, 0);
	/* A CA and a server certificate it signs for 127.0.0.1; the CA file is root's alone: the
	 * launcher reads it, the supervisor and the shipper get its bytes. */
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; exec 2>openssl.log;"
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout ca.key -out ca.pem -days 2 -subj /CN=rover-it-ca >/dev/null;"
		 "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.cnf;"
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout server.key -out server.csr -subj /CN=server >/dev/null;"
		 "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		 "-out server.pem -days 2 -extfile san.cnf >/dev/null; chmod 600 ca.pem",
		 tmp);
	cr_assert_eq(system(cmd), 0, "openssl: %s", slurp(tmp_path("openssl.log"), NULL));
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap_tls(0, &port, 1);
	snprintf(extra, sizeof(extra), "    enable_TLS: true\n    ca_pem_path: \"%s\"\n",
		 tmp_path("ca.pem"));
	rover = start_rover_extra(port, NULL, extra);
	h = wait_reported(work, 20000);
	cr_expect_not_null(h, "not reported over TLS; rover log:\n%s",
			   slurp(tmp_path("rover.log"), NULL));
	json_object_put(h);
	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
}

/* Waits for a log line containing text; 1 when it came. */
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

static int count_in_log(const char *text)
{
	char *log = slurp(tmp_path("rover.log"), NULL);
	int n = 0;

	for (char *p = log; p && (p = strstr(p, text)); p++)
		n++;
	free(log);
	return n;
}

/* Serves json as the task list from now on, @WL@ standing for the workload's name. */
static void set_tasks(const char *json)
{
	char out[8192];
	size_t o = 0;

	for (const char *p = json; *p && o < sizeof(out) - 64;) {
		if (!strncmp(p, "@WL@", 4)) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", workload_name);
			p += 4;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = 0;
	cr_assert_eq(write_file(tmp_path("tasks.new"), out), 0);
	rename(tmp_path("tasks.new"), tmp_path("tasks.json"));
}

/* The workload, the fake OAP with no task, the agent; returns once the workload is reported. */
static void start_all(pid_t *ret_work, pid_t *ret_oap, pid_t *ret_rover)
{
	struct json_object *h;
	int port = 0;

	*ret_work = start_workload();
	cr_assert_gt(*ret_work, 0);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	*ret_oap = start_oap(0, &port);
	*ret_rover = start_rover(port, NULL);
	h = wait_reported(*ret_work, 20000);
	cr_assert_not_null(h, "not reported; rover log:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(h);
}

#define TASK_ARGS(id, target, start, secs)                                                   \
	"{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"" id "\", "       \
	"\"ProcessId\": \"@process:@WL@\", \"TaskUpdateTime\": \"@now\", \"TriggerType\": " \
	"\"FIXED_TIME\", \"TargetType\": \"" target "\", \"TaskStartTime\": \"" start "\", "      \
	"\"FixedTriggerDuration\": \"" secs "\", \"ExtensionConfigJSON\": \"\"}}"

Test(backend, bad_commands_are_skipped_once_and_good_ones_run)
{
	pid_t work, oap, rover;

	start_all(&work, &oap, &rover);
	set_tasks("[{\"command\": \"SomethingNew\", \"args\": {\"x\": \"1\"}},\n"
		   " {\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"no-rest\"}},\n"
		   " " TASK_ARGS("bad-trigger", "ON_CPU", "@now", "zero") ",\n"
		  " " TASK_ARGS("later-1", "ON_CPU", "@now+3000", "2") "]\n");
	/* The future task starts 3 s later, runs 2 s: by then every bad one was seen often. */
	cr_assert_gt(wait_task_done("later-1", 30000), 0, "scheduled task did not run:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_assert(wait_log("scheduled to start in", 1000), "not scheduled");
	cr_expect_eq(count_in_log("unknown command 'SomethingNew'"), 1, "%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(count_in_log("backend command skipped"), 3, "three bad commands, once each:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(waitpid(rover, NULL, WNOHANG), 0, "the agent stopped");
	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
}

#define NET_TASK(id, update, start, secs, json)                                              \
	"{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"" id "\", "       \
	"\"ProcessId\": \"@process:@WL@\", \"TaskUpdateTime\": \"" update "\", \"TriggerType\": " \
	"\"FIXED_TIME\", \"TargetType\": \"NETWORK\", \"TaskStartTime\": \"" start "\", "         \
	"\"FixedTriggerDuration\": \"" secs "\", \"ExtensionConfigJSON\": \"" json "\"}}"

/*
 * A NETWORK task as the OAP sends it: one rover task for the instance's processes, with the
 * sampling rules of its config; then the OAP's keep-alive (the same TaskId, newer, longer,
 * config "null") moves its end instead of starting it again. Asserted on the supervisor's
 * side only: what the worker and the shipper make of it is tested with them.
 */
Test(backend, network_task_runs_once_and_keep_alive_extends_it)
{
	pid_t work, oap, rover;

	start_all(&work, &oap, &rover);
	set_tasks("[" NET_TASK("net-1", "@now", "@now", "60",
			       "{\\\"NetworkSamplings\\\":[{\\\"URIRegex\\\":\\\"/api/.*\\\","
			       "\\\"When4xx\\\":true,\\\"When5xx\\\":true}]}") "]\n");
	cr_assert(wait_log("task net-1: NETWORK for", 15000), "not started:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_expect(wait_log("on 1 process(es)", 100));
	cr_expect(wait_log("1 sampling rule(s)", 100));
	cr_expect(wait_log("and the others of its instance", 5000), "%s",
		  slurp(tmp_path("rover.log"), NULL));

	/* The keep-alive, as the OAP stores it: a copy with 60 s more, its first start time. */
	set_tasks("[" NET_TASK("net-1", "@now", "@first", "120", "null") "]\n");
	cr_assert(wait_log("task net-1: kept alive", 20000), "no keep-alive:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	sleep_ms(2500);
	cr_expect_eq(count_in_log("task net-1: NETWORK for"), 1, "started again:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(count_in_log("task net-1: kept alive"), 1);
	cr_expect_eq(count_in_log("backend command skipped"), 0);

	/* A config that is not JSON costs the rules, not the task. */
	set_tasks("[" NET_TASK("net-2", "@now", "@now", "5", "{oops") "]\n");
	cr_assert(wait_log("task net-2: NETWORK for", 20000), "not started:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	cr_expect(wait_log("it runs without sampling rules", 100));
	cr_expect(wait_log("task net-2 replaces task net-1", 100), "same processes, same type");
	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
}

Test(backend, same_identity_replaces_the_running_task)
{
	pid_t work, oap, rover;

	start_all(&work, &oap, &rover);
	set_tasks("[" TASK_ARGS("long-1", "ON_CPU", "@now", "60") "]\n");
	cr_assert(wait_log("task long-1: ON_CPU", 10000), "first task did not start");
	sleep_ms(1500);
	set_tasks("[" TASK_ARGS("long-1", "ON_CPU", "@now", "60") ",\n" TASK_ARGS(
		"short-2", "ON_CPU", "@now", "2") "]\n");
	cr_assert(wait_log("task short-2 replaces task long-1", 10000), "%s",
		  slurp(tmp_path("rover.log"), NULL));
	/* The first one ends long before its 60 s, with its data. */
	cr_expect_gt(wait_task_done("long-1", 10000), 0, "%s", slurp(tmp_path("rover.log"), NULL));
	cr_expect_gt(wait_task_done("short-2", 15000), 0);
	stop(rover, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
}

/*
 * One container per role, as deploy/kubernetes/rover-daemonset.yaml runs them: the spawner
 * alone, the supervisor and the shipper as the roles' user reading the config file themselves
 * (--config PATH), all sharing a socket directory.
 */
Test(backend, roles_started_alone_read_their_config)
{
	char dir[128], cfgpath[192], cfg[4096];
	char *spawner[] = { (char *)bin("rover"), "spawner", "--socket-dir", dir, NULL };
	char *shipper[] = { "/usr/sbin/runuser", "-u", (char *)role_user(), "--",
			    (char *)bin("rover-shipper"), "--socket-dir", dir, "--config", cfgpath,
			    NULL };
	char *supervisor[] = { "/usr/sbin/runuser", "-u", (char *)role_user(), "--",
			       (char *)bin("rover-supervisor"), "--socket-dir", dir, "--config",
			       cfgpath, NULL };
	pid_t work, oap, sp, sh, sv;
	struct upload_sum s;
	struct json_object *h;
	int port = 0;
	long samples;

	snprintf(dir, sizeof(dir), "/tmp/rover-it-alone.%d", (int)getpid());
	snprintf(cfgpath, sizeof(cfgpath), "%s/rover.yaml", dir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	work = start_workload();
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &port);
	snprintf(cfg, sizeof(cfg), config_fmt, port, "");
	cr_assert_eq(write_file(cfgpath, cfg), 0);
	chmod(cfgpath, 0644);
	sp = track(spawn_cmd(spawner, tmp_path("spawner.log")));
	sleep_ms(300);
	sh = track(spawn_cmd(shipper, tmp_path("shipper.log")));
	sleep_ms(300);
	/* The supervisor's log is the one the helpers read. */
	sv = track(spawn_cmd(supervisor, tmp_path("rover.log")));
	h = wait_reported(work, 20000);
	cr_assert_not_null(h, "not reported; supervisor log:\n%s\nshipper log:\n%s",
			   slurp(tmp_path("rover.log"), NULL), slurp(tmp_path("shipper.log"), NULL));
	cr_expect_str_eq(str_at(h, "entity.processName"), workload_name,
			 "ExeName through the spawner");
	json_object_put(h);
	add_task("alone-1", "ON_CPU", 3);
	samples = wait_task_done("alone-1", 30000);
	cr_assert_gt(samples, 0, "task did not finish:\n%s\nshipper:\n%s",
		     slurp(tmp_path("rover.log"), NULL), slurp(tmp_path("shipper.log"), NULL));
	for (int i = 0; i < 40; i++) {
		sum_uploads("alone-1", &s);
		if (s.dump_count >= samples)
			break;
		sleep_ms(250);
	}
	cr_expect_eq(s.dump_count, samples);
	stop(sv, SIGTERM);
	stop(sh, SIGTERM);
	stop(sp, SIGTERM);
	stop(oap, SIGTERM);
	stop_program(work);
	rm_rf(dir);
}
