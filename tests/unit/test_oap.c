// SPDX-License-Identifier: Apache-2.0
/*
 * The OAP client (common/grpc/oap.c) against the fake OAP (tests/oap/fake_oap.py), started per
 * test on a free port: what arrives at the backend (its record file), what comes back, how
 * long failures take, TLS verification both ways, and calls made under the seccomp filters of
 * the supervisor and the shipper with the gRPC table (policy/grpc.c).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "common/Command.pb-c.h"
#include "common/grpc/oap.h"
#include "tests/unit/listening.h"
#include "common/privdrop.h"
#include "ebpf/profiling/Continuous.pb-c.h"
#include "ebpf/profiling/Process.pb-c.h"
#include "ebpf/profiling/Profile.pb-c.h"
#include "language-agent/Meter.pb-c.h"
#include "policy/policy.h"

#define FAKE_OAP "tests/oap/fake_oap.py"
#define PYTHON "/usr/bin/python3"
#define FAKE_DNS "tests/oap/fake_dns.py"
#define MAX_OAPS 4

static char tmpdir[] = "/tmp/rover-oap.XXXXXX";
static char rec_path[128];
static pid_t oaps[MAX_OAPS];
static int noaps;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	snprintf(rec_path, sizeof(rec_path), "%s/record.jsonl", tmpdir);
}

static void teardown(void)
{
	char cmd[256];

	for (int i = 0; i < noaps; i++) {
		kill(oaps[i], SIGTERM);
		waitpid(oaps[i], NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	(void)!system(cmd);
}

TestSuite(oap, .init = setup, .fini = teardown, .timeout = 60);

/* Starts a helper that prints "listening on PORT" once ready; returns PORT. */
static int spawn_tracked(const char *const *argv)
{
	cr_assert_lt(noaps, MAX_OAPS);
	return spawn_listening(argv, &oaps[noaps++]);
}

/* Starts the fake OAP with extra arguments (NULL-terminated); returns its port. */
static int oap_start(const char *const *extra)
{
	const char *argv[32] = { PYTHON, FAKE_OAP, "--port", "0", "--record", rec_path };
	int argc = 6;

	for (int i = 0; extra && extra[i]; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	return spawn_tracked(argv);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	cr_assert_not_null(buf);
	n = (long)fread(buf, 1, (size_t)n, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The recorded lines of method, in order, joined by '\n'. */
static char *recorded(const char *method)
{
	char *all = slurp(rec_path), *out = calloc(1, strlen(all) + 1), *save = NULL;
	char want[96];

	cr_assert_not_null(out);
	snprintf(want, sizeof(want), "\"method\": \"%s\"", method);
	for (char *line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, want)) {
			strcat(out, line);
			strcat(out, "\n");
		}
	}
	free(all);
	return out;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void addr_of(char *buf, size_t len, const char *host, int port)
{
	snprintf(buf, len, "%s:%d", host, port);
}

/* --- messages ------------------------------------------------------------------------ */

struct ping {
	Skywalking__V3__EBPFProcessPingPkgList list;
	Skywalking__V3__EBPFProcessPingPkg pkg, *pkgs[1];
	Skywalking__V3__EBPFProcessEntityMetadata ent;
};

static void ping_init(struct ping *p, const char *agent)
{
	Skywalking__V3__EBPFProcessPingPkgList l = SKYWALKING__V3__EBPFPROCESS_PING_PKG_LIST__INIT;
	Skywalking__V3__EBPFProcessPingPkg k = SKYWALKING__V3__EBPFPROCESS_PING_PKG__INIT;
	Skywalking__V3__EBPFProcessEntityMetadata e =
		SKYWALKING__V3__EBPFPROCESS_ENTITY_METADATA__INIT;

	p->list = l;
	p->pkg = k;
	p->ent = e;
	p->ent.layer = "OS_LINUX";
	p->ent.servicename = "svc-a";
	p->ent.instancename = "inst-1";
	p->ent.processname = "burner";
	p->pkg.entitymetadata = &p->ent;
	p->pkgs[0] = &p->pkg;
	p->list.n_processes = 1;
	p->list.processes = p->pkgs;
	p->list.ebpfagentid = (char *)agent;
}

static int keepalive(struct oap_conn *c, struct oap_status *st)
{
	struct ping p;
	ProtobufCMessage *ans = NULL;
	int err;

	ping_init(&p, "agent-1");
	err = oap_conn__call(c, "/skywalking.v3.EBPFProcessService/keepAlive", &p.list.base,
			     &skywalking__v3__commands__descriptor, &ans, st);
	if (!err)
		protobuf_c_message_free_unpacked(ans, NULL);
	return err;
}

struct report {
	Skywalking__V3__EBPFProcessReportList list;
	Skywalking__V3__EBPFProcessProperties props[2], *pp[2];
	Skywalking__V3__EBPFHostProcessMetadata host;
	Skywalking__V3__EBPFKubernetesProcessMetadata k8s;
	Skywalking__V3__EBPFProcessEntityMetadata ent[2];
};

static void report_init(struct report *r, const char *name0, const char *name1)
{
	Skywalking__V3__EBPFProcessReportList l = SKYWALKING__V3__EBPFPROCESS_REPORT_LIST__INIT;
	Skywalking__V3__EBPFProcessProperties pr = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__INIT;
	Skywalking__V3__EBPFHostProcessMetadata h = SKYWALKING__V3__EBPFHOST_PROCESS_METADATA__INIT;
	Skywalking__V3__EBPFKubernetesProcessMetadata k =
		SKYWALKING__V3__EBPFKUBERNETES_PROCESS_METADATA__INIT;
	Skywalking__V3__EBPFProcessEntityMetadata e =
		SKYWALKING__V3__EBPFPROCESS_ENTITY_METADATA__INIT;

	r->list = l;
	r->host = h;
	r->k8s = k;
	for (int i = 0; i < 2; i++) {
		r->ent[i] = e;
		r->ent[i].layer = "OS_LINUX";
		r->ent[i].servicename = "svc-a";
		r->ent[i].instancename = "inst-1";
		r->props[i] = pr;
		r->pp[i] = &r->props[i];
	}
	r->ent[0].processname = (char *)name0;
	r->ent[1].processname = (char *)name1;
	r->host.entity = &r->ent[0];
	r->host.pid = 4242;
	r->k8s.entity = &r->ent[1];
	r->k8s.pid = 4343;
	r->props[0].metadata_case = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_HOST_PROCESS;
	r->props[0].hostprocess = &r->host;
	r->props[1].metadata_case = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_K8S_PROCESS;
	r->props[1].k8sprocess = &r->k8s;
	r->list.n_processes = 2;
	r->list.processes = r->pp;
	r->list.ebpfagentid = "agent-1";
}

static Skywalking__V3__EBPFReportProcessDownstream *report_call(struct oap_conn *c,
								struct report *r,
								struct oap_status *st)
{
	ProtobufCMessage *ans = NULL;
	int err = oap_conn__call(c, "/skywalking.v3.EBPFProcessService/reportProcesses",
				 &r->list.base,
				 &skywalking__v3__ebpfreport_process_downstream__descriptor, &ans,
				 st);

	cr_assert_eq(err, 0, "reportProcesses: %d %s", st->code, st->text);
	return (Skywalking__V3__EBPFReportProcessDownstream *)ans;
}

/* --- unary calls ----------------------------------------------------------------------- */

Test(oap, keepalive_round_trip_with_authentication)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .authentication = "secret-token", .deadline_ms = 5000 };
	struct oap_status st = { .code = -1 };
	const char *const extra[] = { "--require-auth", "secret-token", NULL };
	struct oap_conn *c;
	char *lines;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	cr_assert_eq(keepalive(c, &st), 0, "keepAlive: %d %s", st.code, st.text);
	cr_assert_eq(st.code, 0);
	lines = recorded("keepAlive");
	cr_assert_eq(count_lines(lines), 1, "%s", lines);
	cr_assert(strstr(lines, "\"authentication\": \"secret-token\""), "%s", lines);
	cr_assert(strstr(lines, "\"ebpfAgentID\": \"agent-1\""), "%s", lines);
	cr_assert(strstr(lines, "\"processName\": \"burner\""), "%s", lines);
	cr_assert(strstr(lines, "\"serviceName\": \"svc-a\""), "%s", lines);
	free(lines);
	oap_conn__free(c);

	/* A wrong token is refused by the backend and nothing is recorded. */
	o.authentication = "wrong";
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	cr_assert_eq(keepalive(c, &st), -EIO);
	cr_assert_eq(st.code, 16, "UNAUTHENTICATED expected, got %d %s", st.code, st.text);
	lines = recorded("keepAlive");
	cr_assert_eq(count_lines(lines), 1);
	free(lines);
	oap_conn__free(c);
}

Test(oap, no_authentication_header_when_not_configured)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .authentication = "" };
	struct oap_status st;
	struct oap_conn *c;
	char *lines;

	addr_of(addr, sizeof(addr), "localhost", oap_start(NULL));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	cr_assert_eq(keepalive(c, &st), 0, "%d %s", st.code, st.text);
	lines = recorded("keepAlive");
	cr_assert_eq(count_lines(lines), 1);
	cr_assert_null(strstr(lines, "authentication"), "%s", lines);
	free(lines);
	oap_conn__free(c);
}

Test(oap, report_processes_answer_carries_process_ids)
{
	char addr[64];
	struct oap_opts o = { .addr = addr };
	struct oap_status st;
	Skywalking__V3__EBPFReportProcessDownstream *a, *b;
	struct report r;
	struct oap_conn *c;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(NULL));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	report_init(&r, "burner", "sleeper");
	a = report_call(c, &r, &st);
	cr_assert_eq(a->n_processes, 2);
	cr_assert_eq(a->processes[0]->process_case,
		     SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS);
	cr_assert_eq(a->processes[0]->hostprocess->pid, 4242);
	cr_assert_str_eq(a->processes[0]->hostprocess->entitymetadata->processname, "burner");
	cr_assert_eq(a->processes[1]->process_case,
		     SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_K8S_PROCESS);
	cr_assert_eq(a->processes[1]->k8sprocess->pid, 4343);
	cr_assert_str_eq(a->processes[1]->k8sprocess->entitymetadata->servicename, "svc-a");
	cr_assert_gt(strlen(a->processes[0]->processid), 0);
	cr_assert_str_neq(a->processes[0]->processid, a->processes[1]->processid);

	/* A re-report, with another pid, gets the same ids. */
	r.host.pid = 7;
	b = report_call(c, &r, &st);
	cr_assert_eq(b->n_processes, 2);
	cr_assert_eq(b->processes[0]->hostprocess->pid, 7);
	cr_assert_str_eq(a->processes[0]->processid, b->processes[0]->processid);
	cr_assert_str_eq(a->processes[1]->processid, b->processes[1]->processid);
	protobuf_c_message_free_unpacked(&a->base, NULL);
	protobuf_c_message_free_unpacked(&b->base, NULL);
	oap_conn__free(c);
}

Test(oap, fail_first_calls_are_unavailable)
{
	char addr[64];
	struct oap_opts o = { .addr = addr };
	const char *const extra[] = { "--fail-first", "3", NULL };
	Skywalking__V3__MeterDataCollection m = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
	struct oap_status st;
	struct oap_stream *s;
	struct oap_conn *c;
	char *lines;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	cr_assert_eq(keepalive(c, &st), -EIO);
	cr_assert_eq(st.code, 14, "%d %s", st.code, st.text);
	cr_assert_eq(keepalive(c, &st), -EIO);
	cr_assert_eq(st.code, 14);
	/* A stream the backend refuses: sends may or may not notice, finish does. */
	s = oap_stream__open(c, "/skywalking.v3.MeterReportService/collectBatch");
	cr_assert_not_null(s);
	(void)oap_stream__send(s, &m.base);
	(void)oap_stream__send(s, &m.base);
	cr_assert_eq(oap_stream__finish(s, &skywalking__v3__commands__descriptor, NULL, &st), -EIO);
	cr_assert_eq(st.code, 14, "%d %s", st.code, st.text);
	cr_assert_eq(keepalive(c, &st), 0, "%d %s", st.code, st.text);
	lines = slurp(rec_path);
	cr_assert_eq(count_lines(lines), 1, "refused calls were recorded: %s", lines);
	free(lines);
	oap_conn__free(c);
}

/* --- scripted tasks ------------------------------------------------------------------- */

static Skywalking__V3__Commands *query_tasks(struct oap_conn *c, int64_t latest)
{
	Skywalking__V3__EBPFProfilingTaskQuery q = SKYWALKING__V3__EBPFPROFILING_TASK_QUERY__INIT;
	ProtobufCMessage *ans = NULL;
	struct oap_status st;

	q.roverinstanceid = "rover-1";
	q.latestupdatetime = latest;
	cr_assert_eq(oap_conn__call(c, "/skywalking.v3.EBPFProfilingService/queryTasks", &q.base,
				    &skywalking__v3__commands__descriptor, &ans, &st),
		     0, "queryTasks: %d %s", st.code, st.text);
	return (Skywalking__V3__Commands *)ans;
}

static const char *arg_of(const Skywalking__V3__Command *cmd, const char *key)
{
	for (size_t i = 0; i < cmd->n_args; i++)
		if (!strcmp(cmd->args[i]->key, key))
			return cmd->args[i]->value;
	cr_assert_fail("command %s has no arg %s", cmd->command, key);
	return NULL;
}

static const Skywalking__V3__Command *task_by_id(const Skywalking__V3__Commands *cs, const char *id)
{
	for (size_t i = 0; i < cs->n_commands; i++)
		if (!strcmp(arg_of(cs->commands[i], "TaskId"), id))
			return cs->commands[i];
	return NULL;
}

Test(oap, query_tasks_serves_scripted_tasks)
{
	char addr[64], tasks[160], tmp[168], cmd[1024];
	struct oap_opts o = { .addr = addr };
	const char *extra[] = { "--tasks", tasks, NULL };
	Skywalking__V3__EBPFReportProcessDownstream *rep;
	Skywalking__V3__Commands *a, *b;
	const Skywalking__V3__Command *t1;
	struct oap_status st;
	struct report r;
	struct oap_conn *c;
	struct timespec now;
	long long upd, start;
	FILE *f;

	snprintf(tasks, sizeof(tasks), "%s/tasks.json", tmpdir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", tasks);
	f = fopen(tmp, "w");
	cr_assert_not_null(f);
	fputs("[{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"t1\", "
	      "\"ProcessId\": \"@process:burner,@process:sleeper\", \"TaskUpdateTime\": \"@now\", "
	      "\"TaskStartTime\": \"@now+5000\", \"TriggerType\": \"FIXED_TIME\", "
	      "\"TargetType\": \"ON_CPU\", \"FixedTriggerDuration\": \"10\", "
	      "\"ExtensionConfigJSON\": \"\"}},\n"
	      " {\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"t2\", "
	      "\"ProcessId\": \"p\", \"TaskUpdateTime\": \"1000\"}}]\n",
	      f);
	fclose(f);
	cr_assert_eq(rename(tmp, tasks), 0);
	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);

	/* t1 waits for its processes to be reported. */
	a = query_tasks(c, 0);
	cr_assert_eq(a->n_commands, 1);
	cr_assert_not_null(task_by_id(a, "t2"));
	protobuf_c_message_free_unpacked(&a->base, NULL);

	report_init(&r, "burner", "sleeper");
	rep = report_call(c, &r, &st);
	a = query_tasks(c, 0);
	cr_assert_eq(a->n_commands, 2);
	t1 = task_by_id(a, "t1");
	cr_assert_not_null(t1);
	cr_assert_str_eq(t1->command, "EBPFProfilingTaskQuery");
	snprintf(cmd, sizeof(cmd), "%s,%s", rep->processes[0]->processid,
		 rep->processes[1]->processid);
	cr_assert_str_eq(arg_of(t1, "ProcessId"), cmd);
	cr_assert_str_eq(arg_of(t1, "TargetType"), "ON_CPU");
	upd = atoll(arg_of(t1, "TaskUpdateTime"));
	start = atoll(arg_of(t1, "TaskStartTime"));
	clock_gettime(CLOCK_REALTIME, &now);
	cr_assert(llabs(upd - ((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000)) < 60000,
		  "TaskUpdateTime %lld is not now", upd);
	cr_assert(start - upd >= 5000 && start - upd < 5100, "start %lld, update %lld", start, upd);

	/* Stable across queries; only newer tasks once latestUpdateTime is given. */
	b = query_tasks(c, 0);
	cr_assert_str_eq(arg_of(task_by_id(b, "t1"), "TaskUpdateTime"),
			 arg_of(t1, "TaskUpdateTime"));
	cr_assert_str_eq(arg_of(task_by_id(b, "t1"), "TaskStartTime"), arg_of(t1, "TaskStartTime"));
	protobuf_c_message_free_unpacked(&b->base, NULL);
	b = query_tasks(c, 999);
	cr_assert_eq(b->n_commands, 2);
	protobuf_c_message_free_unpacked(&b->base, NULL);
	b = query_tasks(c, 1000);
	cr_assert_eq(b->n_commands, 1);
	cr_assert_not_null(task_by_id(b, "t1"));
	protobuf_c_message_free_unpacked(&b->base, NULL);
	b = query_tasks(c, upd);
	cr_assert_eq(b->n_commands, 0);
	protobuf_c_message_free_unpacked(&b->base, NULL);

	/* The query itself is recorded. */
	char *lines = recorded("queryTasks");

	cr_assert_eq(count_lines(lines), 6);
	cr_assert(strstr(lines, "\"roverInstanceId\": \"rover-1\""), "%s", lines);
	free(lines);
	protobuf_c_message_free_unpacked(&a->base, NULL);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	oap_conn__free(c);
}

Test(oap, report_profiling_task_gets_a_task_id)
{
	char addr[64];
	struct oap_opts o = { .addr = addr };
	Skywalking__V3__ContinuousProfilingReport rep =
		SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__INIT;
	Skywalking__V3__Commands *a, *b;
	struct oap_status st;
	struct oap_conn *c;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(NULL));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	rep.servicename = "svc-a";
	rep.processname = "burner";
	rep.duration = 10;
	cr_assert_eq(oap_conn__call(c,
				    "/skywalking.v3.ContinuousProfilingService/reportProfilingTask",
				    &rep.base, &skywalking__v3__commands__descriptor,
				    (ProtobufCMessage **)&a, &st),
		     0, "%d %s", st.code, st.text);
	cr_assert_eq(oap_conn__call(c,
				    "/skywalking.v3.ContinuousProfilingService/reportProfilingTask",
				    &rep.base, &skywalking__v3__commands__descriptor,
				    (ProtobufCMessage **)&b, &st),
		     0);
	cr_assert_eq(a->n_commands, 1);
	cr_assert_str_eq(a->commands[0]->command, "ContinuousProfilingReportTask");
	cr_assert_gt(strlen(arg_of(a->commands[0], "TaskId")), 0);
	cr_assert_str_neq(arg_of(a->commands[0], "TaskId"), arg_of(b->commands[0], "TaskId"));
	protobuf_c_message_free_unpacked(&a->base, NULL);
	protobuf_c_message_free_unpacked(&b->base, NULL);
	oap_conn__free(c);
}

/* A port nothing listens on at the moment (bound, read, closed). */
static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

Test(oap, backend_that_comes_back_is_used_within_seconds)
{
	char addr[64], port_s[16];
	struct oap_opts o = { .addr = addr, .deadline_ms = 1000 };
	struct oap_status st;
	struct oap_conn *c;
	int port = free_port(), i;
	uint64_t t0, ms;

	addr_of(addr, sizeof(addr), "127.0.0.1", port);
	snprintf(port_s, sizeof(port_s), "%d", port);
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	/* Down: several failures put the channel into its reconnect backoff. */
	for (i = 0; i < 3; i++) {
		t0 = mono_ms();
		cr_assert_eq(keepalive(c, &st), -EIO);
		cr_assert_eq(st.code, 14, "%d %s", st.code, st.text);
		cr_assert_lt(mono_ms() - t0, 500, "a refused call took %llu ms",
			     (unsigned long long)(mono_ms() - t0));
		usleep(300000);
	}
	const char *const up[] = { "--port", port_s, NULL };

	oap_start(up);
	/* Reconnects at most 5 s apart, seen within 1 s (oap.c): retry every 100 ms. */
	for (t0 = mono_ms();; usleep(100000)) {
		if (!keepalive(c, &st))
			break;
		cr_assert_lt(mono_ms() - t0, 7000, "backend up but calls still fail: %d %s",
			     st.code, st.text);
	}
	ms = mono_ms() - t0;
	cr_log_info("backend used %llu ms after it listened", (unsigned long long)ms);
	oap_conn__free(c);
}

struct hammer_arg {
	struct oap_conn *c;
	int ok;
};

static void *hammer(void *p)
{
	struct hammer_arg *a = p;
	struct oap_status st;

	for (int i = 0; i < 25; i++) {
		if (i % 5 == 4) {
			Skywalking__V3__MeterDataCollection m =
				SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
			struct oap_stream *s =
				oap_stream__open(a->c,
						 "/skywalking.v3.MeterReportService/collectBatch");

			if (s && !oap_stream__send(s, &m.base) &&
			    !oap_stream__finish(s, &skywalking__v3__commands__descriptor, NULL,
						&st))
				a->ok++;
		} else if (!keepalive(a->c, &st)) {
			a->ok++;
		}
	}
	return NULL;
}

Test(oap, many_threads_on_one_connection)
{
	char addr[64];
	struct oap_opts o = { .addr = addr };
	struct hammer_arg a[4] = { 0 };
	pthread_t th[4];
	char *lines;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(NULL));
	struct oap_conn *c = oap_conn__new(&o);

	cr_assert_not_null(c);
	for (int i = 0; i < 4; i++) {
		a[i].c = c;
		cr_assert_eq(pthread_create(&th[i], NULL, hammer, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(a[i].ok, 25, "thread %d: %d of 25 calls ok", i, a[i].ok);
	}
	lines = recorded("keepAlive");
	cr_assert_eq(count_lines(lines), 80);
	free(lines);
	lines = recorded("collectBatch");
	cr_assert_eq(count_lines(lines), 20);
	free(lines);
	oap_conn__free(c);
}

/* --- client streams -------------------------------------------------------------------- */

Test(oap, profiling_stream_arrives_in_order)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .authentication = "tok" };
	Skywalking__V3__EBPFProfilingTaskMetadata task =
		SKYWALKING__V3__EBPFPROFILING_TASK_METADATA__INIT;
	Skywalking__V3__EBPFProfilingStackMetadata
		stack = SKYWALKING__V3__EBPFPROFILING_STACK_METADATA__INIT,
		*stacks[1] = { &stack };
	char *syms[] = { "hot_leaf", "caller", "main" };
	Skywalking__V3__EBPFOnCPUProfiling cpu = SKYWALKING__V3__EBPFON_CPUPROFILING__INIT;
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;
	ProtobufCMessage *ans = NULL;
	struct oap_status st;
	struct oap_stream *s;
	struct oap_conn *c;
	char *lines, *p;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(NULL));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	s = oap_stream__open(c, "/skywalking.v3.EBPFProfilingService/collectProfilingData");
	cr_assert_not_null(s);

	task.taskid = "task-1";
	task.processid = "proc-1";
	task.profilingstarttime = 1700000000000;
	task.currenttime = 1700000005000;
	stack.stacktype = SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE;
	stack.n_stacksymbols = 3;
	stack.stacksymbols = syms;
	cpu.n_stacks = 1;
	cpu.stacks = stacks;
	d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU;
	d.oncpu = &cpu;
	for (int i = 0; i < 3; i++) {
		d.task = i == 0 ? &task : NULL;
		stack.stackid = 10 + i;
		cpu.dumpcount = 100 + i;
		if (i == 2) {
			/* The spool's path: bytes packed earlier. */
			size_t len = protobuf_c_message_get_packed_size(&d.base);
			uint8_t *buf = malloc(len);

			protobuf_c_message_pack(&d.base, buf);
			cr_assert_eq(oap_stream__send_packed(s, buf, len), 0);
			free(buf);
		} else {
			cr_assert_eq(oap_stream__send(s, &d.base), 0);
		}
	}
	cr_assert_eq(oap_stream__finish(s, &skywalking__v3__commands__descriptor, &ans, &st), 0,
		     "finish: %d %s", st.code, st.text);
	cr_assert_eq(st.code, 0);
	cr_assert_not_null(ans);
	protobuf_c_message_free_unpacked(ans, NULL);

	lines = recorded("collectProfilingData");
	cr_assert_eq(count_lines(lines), 3, "%s", lines);
	p = lines;
	for (int i = 0; i < 3; i++) {
		char want[64];
		char *eol = strchr(p, '\n');

		*eol = '\0';
		snprintf(want, sizeof(want), "\"index\": %d", i);
		cr_assert(strstr(p, want), "line %d: %s", i, p);
		snprintf(want, sizeof(want), "\"dumpCount\": %d", 100 + i);
		cr_assert(strstr(p, want), "line %d: %s", i, p);
		snprintf(want, sizeof(want), "\"stackId\": %d", 10 + i);
		cr_assert(strstr(p, want), "line %d: %s", i, p);
		cr_assert(strstr(p, "\"stackSymbols\": [\"hot_leaf\", \"caller\", \"main\"]"), "%s",
			  p);
		cr_assert(strstr(p, "\"authentication\": \"tok\""), "%s", p);
		cr_assert_eq(!!strstr(p, "\"taskId\": \"task-1\""), i == 0, "line %d: %s", i, p);
		p = eol + 1;
	}
	cr_assert(strstr(lines, "\"profilingStartTime\": \"1700000000000\""), "%s", lines);
	free(lines);
	oap_conn__free(c);
}

Test(oap, stream_to_unreachable_backend_fails_cleanly)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char addr[64];
	struct oap_opts o = { .addr = addr, .deadline_ms = 2000 };
	Skywalking__V3__MeterDataCollection m = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
	struct oap_status st = { .code = 0 };
	struct oap_stream *s;
	struct oap_conn *c;
	uint64_t t0;
	int fd, sent;

	/* A bound port that does not listen: connections are refused. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	addr_of(addr, sizeof(addr), "127.0.0.1", ntohs(sa.sin_port));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	t0 = mono_ms();
	s = oap_stream__open(c, "/skywalking.v3.MeterReportService/collectBatch");
	cr_assert_not_null(s);
	sent = oap_stream__send(s, &m.base);
	(void)sent; /* may be accepted locally before the failure is known */
	cr_assert_eq(oap_stream__finish(s, &skywalking__v3__commands__descriptor, NULL, &st), -EIO);
	cr_assert_eq(st.code, 14, "%d %s", st.code, st.text);
	cr_assert_lt(mono_ms() - t0, 1000, "refused connection took %llu ms",
		     (unsigned long long)(mono_ms() - t0));
	oap_conn__free(c);
	close(fd);
}

/* --- deadlines and threads ------------------------------------------------------------- */

Test(oap, stalled_method_ends_at_deadline)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .deadline_ms = 1000 };
	const char *const extra[] = { "--stall", "keepAlive:10", NULL };
	struct oap_status st;
	struct oap_conn *c;
	uint64_t t0, ms;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	t0 = mono_ms();
	cr_assert_eq(keepalive(c, &st), -EIO);
	ms = mono_ms() - t0;
	cr_assert_eq(st.code, 4, "DEADLINE_EXCEEDED expected, got %d %s", st.code, st.text);
	cr_assert(ms >= 900 && ms <= 2000, "took %llu ms for a 1000 ms deadline",
		  (unsigned long long)ms);
	oap_conn__free(c);
}

Test(oap, stalled_stream_ends_at_deadline)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .deadline_ms = 1500 };
	const char *const extra[] = { "--stall", "collectProfilingData:10", NULL };
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;
	struct oap_status st;
	struct oap_stream *s;
	struct oap_conn *c;
	uint64_t t0, ms;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	t0 = mono_ms();
	s = oap_stream__open(c, "/skywalking.v3.EBPFProfilingService/collectProfilingData");
	cr_assert_not_null(s);
	cr_assert_eq(oap_stream__send(s, &d.base), 0);
	cr_assert_eq(oap_stream__finish(s, &skywalking__v3__commands__descriptor, NULL, &st), -EIO);
	ms = mono_ms() - t0;
	cr_assert_eq(st.code, 4, "%d %s", st.code, st.text);
	cr_assert(ms >= 1400 && ms <= 2500, "took %llu ms for a 1500 ms deadline",
		  (unsigned long long)ms);
	oap_conn__free(c);
}

Test(oap, unreachable_address_fails_within_deadline)
{
	/* TEST-NET-1 (RFC 5737): never routed, so the SYN gets no answer (or the network is
	 * unreachable at once); either way the call ends by its deadline. */
	struct oap_opts o = { .addr = "192.0.2.1:11800", .deadline_ms = 1500 };
	struct oap_status st;
	struct oap_conn *c = oap_conn__new(&o);
	uint64_t t0, ms;

	cr_assert_not_null(c);
	t0 = mono_ms();
	cr_assert_eq(keepalive(c, &st), -EIO);
	ms = mono_ms() - t0;
	cr_assert(st.code == 4 || st.code == 14, "%d %s", st.code, st.text);
	cr_assert_leq(ms, 1500 + 1000, "took %llu ms", (unsigned long long)ms);
	oap_conn__free(c);
}

struct stalled_arg {
	struct oap_conn *c;
	struct oap_status st;
	int err;
	uint64_t ms;
};

static void *stalled_call(void *p)
{
	struct stalled_arg *a = p;
	uint64_t t0 = mono_ms();

	a->err = keepalive(a->c, &a->st);
	a->ms = mono_ms() - t0;
	return NULL;
}

Test(oap, stalled_call_holds_no_other_thread)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .deadline_ms = 4000 };
	const char *const extra[] = { "--stall", "keepAlive:10", NULL };
	struct stalled_arg a = { 0 };
	struct oap_status st;
	struct report r;
	Skywalking__V3__EBPFReportProcessDownstream *ans;
	pthread_t th;
	uint64_t t0, ms;
	char *lines;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	a.c = oap_conn__new(&o);
	cr_assert_not_null(a.c);
	cr_assert_eq(pthread_create(&th, NULL, stalled_call, &a), 0);
	/* The fake OAP records a request before it stalls: wait for that, so the other call
	 * surely runs while the stalled one is open. */
	for (t0 = mono_ms();; usleep(10000)) {
		lines = recorded("keepAlive");
		int n = count_lines(lines);

		free(lines);
		if (n)
			break;
		cr_assert_lt(mono_ms() - t0, 4000, "keepAlive never arrived");
	}
	report_init(&r, "burner", "sleeper");
	t0 = mono_ms();
	ans = report_call(a.c, &r, &st);
	ms = mono_ms() - t0;
	cr_assert_eq(ans->n_processes, 2);
	protobuf_c_message_free_unpacked(&ans->base, NULL);
	cr_assert_lt(ms, 1000, "the second call took %llu ms", (unsigned long long)ms);
	pthread_join(th, NULL);
	cr_assert_eq(a.err, -EIO);
	cr_assert_eq(a.st.code, 4, "%d %s", a.st.code, a.st.text);
	cr_assert_geq(a.ms, 3900);
	oap_conn__free(a.c);
}

/* --- answers that do not fit ----------------------------------------------------------- */

Test(oap, undecodable_answer_is_a_decode_error)
{
	char addr[64];
	struct oap_opts o = { .addr = addr };
	struct oap_status st;
	ProtobufCMessage *ans = (ProtobufCMessage *)0x1;
	struct report r;
	struct oap_conn *c;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(NULL));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	report_init(&r, "burner", "sleeper");
	/* The answer's field 1 is a message (length-delimited); MeterBucketValue's is a double
	 * (fixed64): protobuf-c refuses the wire type. */
	cr_assert_eq(oap_conn__call(c, "/skywalking.v3.EBPFProcessService/reportProcesses",
				    &r.list.base, &skywalking__v3__meter_bucket_value__descriptor,
				    &ans, &st),
		     -EIO);
	cr_assert_eq(st.code, OAP_E_DECODE, "%d %s", st.code, st.text);
	cr_assert_eq(ans, (ProtobufCMessage *)0x1, "ret_answer written on failure");
	/* The connection is still good. */
	cr_assert_eq(keepalive(c, &st), 0);
	oap_conn__free(c);
}

Test(oap, oversized_answer_is_refused)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .deadline_ms = 20000 };
	struct oap_status st;
	ProtobufCMessage *ans = NULL;
	struct report r;
	struct oap_conn *c;
	size_t big = OAP_MAX_ANSWER + 4096;
	char *name = malloc(big + 1);

	cr_assert_not_null(name);
	memset(name, 'x', big);
	name[big] = '\0';
	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(NULL));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	/* reportProcesses echoes the entity: the answer is larger than OAP_MAX_ANSWER. */
	report_init(&r, name, "sleeper");
	cr_assert_eq(oap_conn__call(c, "/skywalking.v3.EBPFProcessService/reportProcesses",
				    &r.list.base,
				    &skywalking__v3__ebpfreport_process_downstream__descriptor,
				    &ans, &st),
		     -EIO);
	cr_assert_eq(st.code, OAP_E_TOO_BIG, "%d %s", st.code, st.text);
	cr_assert_null(ans);
	cr_assert_eq(keepalive(c, &st), 0, "%d %s", st.code, st.text);
	oap_conn__free(c);
	free(name);
}

/*
 * 4 MiB of empty commands (2 bytes each on the wire) from the fake's hostile mode: decoded
 * whole they took 230 MB; the client's decoding budget refuses them as too big, and this
 * process's peak RSS stays far below what decoding them would have cost.
 */
Test(oap, an_answer_that_decodes_too_large_is_refused)
{
	const char *extra[] = { "--hostile", "0", "--hostile-kinds", "many_empty", NULL };
	char addr[64];
	struct oap_opts o = { .addr = addr, .deadline_ms = 20000 };
	struct oap_status st;
	struct rusage ru;
	struct oap_conn *c;

	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	cr_assert_eq(keepalive(c, &st), -EIO);
	cr_assert_eq(st.code, OAP_E_TOO_BIG, "%d %s", st.code, st.text);
	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	cr_expect_lt(ru.ru_maxrss, 100 * 1024, "peak RSS %ld kB", ru.ru_maxrss);
	oap_conn__free(c);
}

/* Every kind of hostile answer ends the call with an error or an answer, within the
 * deadline and its grace, and the connection carries the next call. */
Test(oap, each_kind_of_hostile_answer_ends_the_call, .timeout = 120)
{
	const char *extra[] = { "--hostile", "0", "--hostile-control", NULL, NULL };
	char addr[64], control[256], path[300];
	struct oap_opts o = { .addr = addr, .deadline_ms = 1000 };
	struct oap_status st;
	struct oap_conn *c;
	FILE *f;

	snprintf(control, sizeof(control), "%s/control", tmpdir);
	extra[3] = control;
	/* One fake per kind would be slow: --hostile-kinds is fixed at start, so the kinds go
	 * in turn (seed 0 starts at the first of HOSTILE_KINDS) and the test just calls. */
	addr_of(addr, sizeof(addr), "127.0.0.1", oap_start(extra));
	c = oap_conn__new(&o);
	cr_assert_not_null(c);
	for (size_t i = 0; i < 17; i++) { /* tests/oap/fake_oap.py's HOSTILE_KINDS */
		uint64_t t0 = mono_ms();
		int err = keepalive(c, &st);

		cr_log_info("hostile answer %zu: %d, status %d %s", i, err, st.code, st.text);
		cr_expect_leq(mono_ms() - t0, 1000 + 2500, "call %zu took %llu ms", i,
			      (unsigned long long)(mono_ms() - t0));
	}
	snprintf(path, sizeof(path), "%s.new", control);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("sane\n", f);
	fclose(f);
	cr_assert_eq(rename(path, control), 0);
	cr_assert_eq(keepalive(c, &st), 0, "after the hostile answers: %d %s", st.code, st.text);
	oap_conn__free(c);
}

/* --- TLS ------------------------------------------------------------------------------- */

static char *read_pem(const char *name)
{
	char path[256];
	char *s;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	s = slurp(path);
	cr_assert_gt(strlen(s), 0, "%s is empty", path);
	return s;
}

/* A CA, a server certificate it signs for localhost and 127.0.0.1, a client certificate, and
 * a second CA that signed none of them. */
static void make_certs(void)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; exec 2>openssl.log;"
		 "for ca in ca wrongca; do openssl req -x509 -newkey ec -pkeyopt "
		 "ec_paramgen_curve:prime256v1 -nodes -keyout $ca.key -out $ca.pem -days 2 "
		 "-subj /CN=rover-test-$ca >/dev/null; done;"
		 "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.cnf;"
		 "for n in server client; do openssl req -newkey ec -pkeyopt "
		 "ec_paramgen_curve:prime256v1 -nodes -keyout $n.key -out $n.csr "
		 "-subj /CN=$n >/dev/null;"
		 "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		 "-out $n.pem -days 2 -extfile san.cnf >/dev/null; done",
		 tmpdir);
	cr_assert_eq(system(cmd), 0, "openssl failed, see %s/openssl.log", tmpdir);
}

static int tls_start(void)
{
	char cert[256], key[256];
	const char *extra[] = { "--tls-cert", cert, "--tls-key", key, NULL };

	make_certs();
	snprintf(cert, sizeof(cert), "%s/server.pem", tmpdir);
	snprintf(key, sizeof(key), "%s/server.key", tmpdir);
	return oap_start(extra);
}

static int tls_keepalive(struct oap_opts *o, struct oap_status *st)
{
	struct oap_conn *c = oap_conn__new(o);
	int err;

	cr_assert_not_null(c, "oap_conn__new: %s", strerror(errno));
	err = keepalive(c, st);
	oap_conn__free(c);
	return err;
}

Test(oap, tls_verifies_the_server)
{
	char addr[64];
	struct oap_opts o = { .addr = addr, .tls = 1, .deadline_ms = 5000 };
	struct oap_status st;
	int port = tls_start();
	char *ca = read_pem("ca.pem"), *wrong = read_pem("wrongca.pem");
	char *ccert = read_pem("client.pem"), *ckey = read_pem("client.key");

	addr_of(addr, sizeof(addr), "localhost", port);
	o.ca_pem = ca;
	cr_assert_eq(tls_keepalive(&o, &st), 0, "right CA: %d %s", st.code, st.text);

	addr_of(addr, sizeof(addr), "127.0.0.1", port);
	o.cert_pem = ccert;
	o.key_pem = ckey;
	cr_assert_eq(tls_keepalive(&o, &st), 0, "IP SAN, client cert: %d %s", st.code, st.text);
	o.cert_pem = o.key_pem = NULL;

	o.ca_pem = wrong;
	cr_assert_eq(tls_keepalive(&o, &st), -EIO, "a server the CA did not sign was accepted");
	cr_assert_eq(st.code, 14, "%d %s", st.code, st.text);

	/* No CA: the system roots, which do not know the test CA. */
	o.ca_pem = NULL;
	cr_assert_eq(tls_keepalive(&o, &st), -EIO, "system roots accepted the test CA");

	/* Plaintext to a TLS server fails. */
	o.tls = 0;
	cr_assert_eq(tls_keepalive(&o, &st), -EIO);
	cr_assert_eq(count_lines(recorded("keepAlive")), 2);
	free(ca);
	free(wrong);
	free(ccert);
	free(ckey);
}

Test(oap, tls_insecure_skip_verify_skips_the_check)
{
	char addr[64];
	struct oap_opts o = {
		.addr = addr, .tls = 1, .insecure_skip_verify = 1, .deadline_ms = 5000
	};
	struct oap_status st;
	int port = tls_start();
	char *wrong = read_pem("wrongca.pem");

	addr_of(addr, sizeof(addr), "127.0.0.1", port);
	cr_assert_eq(tls_keepalive(&o, &st), 0, "no CA: %d %s", st.code, st.text);
	/* Even a CA that did not sign the server's certificate is not checked. */
	o.ca_pem = wrong;
	cr_assert_eq(tls_keepalive(&o, &st), 0, "wrong CA: %d %s", st.code, st.text);
	/* A name the certificate does not carry (resolved by the fake's own bind). */
	addr_of(addr, sizeof(addr), "localhost", port);
	cr_assert_eq(tls_keepalive(&o, &st), 0, "%d %s", st.code, st.text);
	cr_assert_eq(count_lines(recorded("keepAlive")), 3);
	free(wrong);
}

/* --- backoff --------------------------------------------------------------------------- */

Test(oap, backoff_bounds)
{
	struct oap_backoff b;
	uint64_t now = 1000000;
	uint32_t want[] = { 1000, 2000, 4000, 8000, 8000, 8000 };

	oap_backoff__init(&b, 1000, 8000);
	cr_assert(oap_backoff__ready(&b, now));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t wait;

		oap_backoff__failed(&b, now);
		wait = b.next_ms - now;
		cr_assert(wait >= want[i] / 2 && wait <= want[i],
			  "attempt %zu: waits %llu, want [%u, %u]", i, (unsigned long long)wait,
			  want[i] / 2, want[i]);
		cr_assert_not(oap_backoff__ready(&b, b.next_ms - 1));
		cr_assert(oap_backoff__ready(&b, b.next_ms));
		now = b.next_ms;
	}
	oap_backoff__success(&b);
	cr_assert(oap_backoff__ready(&b, now));
	oap_backoff__failed(&b, now);
	cr_assert(b.next_ms - now >= 500 && b.next_ms - now <= 1000, "after a reset: %llu",
		  (unsigned long long)(b.next_ms - now));

	/* Defaults 1 s to 60 s; the jitter spreads over the range. */
	oap_backoff__init(&b, 0, 0);
	uint64_t lo = UINT64_MAX, hi = 0;

	for (int i = 0; i < 12; i++)
		oap_backoff__failed(&b, 0);
	cr_assert(b.next_ms >= 30000 && b.next_ms <= 60000, "%llu", (unsigned long long)b.next_ms);
	for (int i = 0; i < 200; i++) {
		oap_backoff__success(&b);
		oap_backoff__failed(&b, 0);
		lo = b.next_ms < lo ? b.next_ms : lo;
		hi = b.next_ms > hi ? b.next_ms : hi;
	}
	cr_assert(lo >= 500 && hi <= 1000 && hi - lo >= 250, "jitter in [%llu, %llu]",
		  (unsigned long long)lo, (unsigned long long)hi);
}

/* --- under the roles' seccomp filters -------------------------------------------------- */

/* In a child: filter (before or after the connection), then unary, stream and TLS calls. */
static int sandboxed_calls(const struct role_policy *role, int filter_first, int port, int tls_port,
			   const char *ca, int dns_port)
{
	char addr[64], tls_addr[64], dns_addr[96];
	struct oap_opts o = { .addr = addr, .authentication = "tok", .deadline_ms = 5000 };
	struct oap_opts t = { .addr = tls_addr, .tls = 1, .ca_pem = ca, .deadline_ms = 5000 };
	struct oap_opts d = { .addr = dns_addr, .deadline_ms = 5000 };
	Skywalking__V3__MeterDataCollection m = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
	struct oap_conn *c = NULL, *tc = NULL, *dc = NULL;
	struct oap_status st;
	struct oap_stream *s;

	addr_of(addr, sizeof(addr), "127.0.0.1", port);
	/* localhost: from /etc/hosts; oap.test: a DNS query (UDP) to the fake DNS server. */
	addr_of(tls_addr, sizeof(tls_addr), "localhost", tls_port);
	snprintf(dns_addr, sizeof(dns_addr), "dns://127.0.0.1:%d/oap.test:%d", dns_port, port);
	if (filter_first && sandbox_apply(role))
		return 10;
	c = oap_conn__new(&o);
	tc = oap_conn__new(&t);
	dc = oap_conn__new(&d);
	if (!c || !tc || !dc)
		return 11;
	if (!filter_first && sandbox_apply(role))
		return 10;
	if (keepalive(c, &st))
		return 12;
	s = oap_stream__open(c, "/skywalking.v3.MeterReportService/collectBatch");
	if (!s || oap_stream__send(s, &m.base) || oap_stream__send(s, &m.base))
		return 13;
	if (oap_stream__finish(s, &skywalking__v3__commands__descriptor, NULL, &st))
		return 14;
	if (keepalive(tc, &st))
		return 15;
	if (keepalive(dc, &st))
		return 16;
	oap_conn__free(c);
	oap_conn__free(tc);
	oap_conn__free(dc);
	return 0;
}

static void run_sandboxed(const struct role_policy *role, int filter_first)
{
	const char *const dns_argv[] = { PYTHON, FAKE_DNS, NULL };
	int port, tls_port, dns_port, status;
	char *ca;
	pid_t pid;

	port = oap_start(NULL);
	tls_port = tls_start();
	dns_port = spawn_tracked(dns_argv);
	ca = read_pem("ca.pem");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(sandboxed_calls(role, filter_first, port, tls_port, ca, dns_port));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_not(WIFSIGNALED(status),
		      "%s child killed by signal %d (a call the filter forbids)", role->role,
		      WTERMSIG(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "%s child failed at step %d", role->role,
		     WEXITSTATUS(status));
	cr_assert_eq(count_lines(recorded("keepAlive")), 3);
	cr_assert_eq(count_lines(recorded("collectBatch")), 2);
	free(ca);
}

Test(oap, calls_under_supervisor_filter_installed_after_connect)
{
	run_sandboxed(&supervisor_policy, 0);
}

Test(oap, calls_under_shipper_filter_installed_after_connect)
{
	run_sandboxed(&shipper_policy, 0);
}

Test(oap, calls_under_supervisor_filter_installed_before_connect)
{
	run_sandboxed(&supervisor_policy, 1);
}

Test(oap, calls_under_shipper_filter_installed_before_connect)
{
	run_sandboxed(&shipper_policy, 1);
}
