// SPDX-License-Identifier: Apache-2.0
/*
 * The SkyWalking v3 wire format of proto/ (common, ebpf/profiling, language-agent), checked
 * against encodings computed by hand from /work/shared/reference/skywalking-protocol.md:
 * tag = field_number << 3 | wire_type (0 varint, 1 fixed64, 2 length-delimited). A real OAP
 * decodes these bytes, so a renumbered field or a changed type must fail here. The descriptor
 * tables below repeat the reference's field lists one by one for the fields no encoding covers.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/Command.pb-c.h"
#include "common/Common.pb-c.h"
#include "ebpf/accesslog.pb-c.h"
#include "ebpf/profiling/Continuous.pb-c.h"
#include "ebpf/profiling/Process.pb-c.h"
#include "ebpf/profiling/Profile.pb-c.h"
#include "language-agent/Meter.pb-c.h"
#include "language-agent/Tracing.pb-c.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* IEEE 754 little-endian, as fixed64 carries a double. */
#define D_0_5 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f
#define D_1_5 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n && i < 256; i++)
		sprintf(out + 3 * i, "%02x ", b[i]);
}

static void expect_packed(const ProtobufCMessage *m, const uint8_t *want, size_t want_len)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len + 1);
	char got_hex[3 * 256 + 1] = "", want_hex[3 * 256 + 1] = "";

	cr_assert_not_null(buf);
	cr_assert_eq(protobuf_c_message_pack(m, buf), len);
	hex(got_hex, buf, len);
	hex(want_hex, want, want_len);
	cr_assert(len == want_len && memcmp(buf, want, len) == 0, "%s:\n got  %s\n want %s",
		  m->descriptor->name, got_hex, want_hex);

	/* And back: the same bytes again after a round trip through the decoder. */
	ProtobufCMessage *back = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	cr_assert_not_null(back, "%s does not unpack", m->descriptor->name);
	cr_assert_eq(protobuf_c_message_get_packed_size(back), len);
	uint8_t *again = malloc(len + 1);
	cr_assert_not_null(again);
	protobuf_c_message_pack(back, again);
	cr_assert(memcmp(again, want, len) == 0, "%s: round trip differs", m->descriptor->name);
	protobuf_c_message_free_unpacked(back, NULL);
	free(again);
	free(buf);
}

#define EXPECT(msg, ...)                                                              \
	do {                                                                          \
		static const uint8_t want_[] = { __VA_ARGS__ };                       \
		expect_packed((const ProtobufCMessage *)(msg), want_, sizeof(want_)); \
	} while (0)

/* ---- Common / Command ---- */

Test(wire, commands)
{
	Skywalking__V3__KeyStringValuePair kv = SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT;
	Skywalking__V3__KeyStringValuePair *args[] = { &kv };
	Skywalking__V3__Command cmd = SKYWALKING__V3__COMMAND__INIT;
	Skywalking__V3__Command *cmds[] = { &cmd };
	Skywalking__V3__Commands all = SKYWALKING__V3__COMMANDS__INIT;

	kv.key = "k";
	kv.value = "v";
	EXPECT(&kv, 0x0a, 0x01, 'k', 0x12, 0x01, 'v');

	cmd.command = "C";
	cmd.n_args = 1;
	cmd.args = args;
	EXPECT(&cmd, 0x0a, 0x01, 'C', 0x12, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 'v');

	all.n_commands = 1;
	all.commands = cmds;
	EXPECT(&all, 0x0a, 0x0b, 0x0a, 0x01, 'C', 0x12, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 'v');

	/* keepAlive's answer: an empty Commands is zero bytes. */
	Skywalking__V3__Commands none = SKYWALKING__V3__COMMANDS__INIT;
	cr_assert_eq(protobuf_c_message_get_packed_size(&none.base), 0);
}

/* What queryTasks answers, as an OAP encodes it. */
Test(wire, decode_commands)
{
	/* clang-format off */
	static const uint8_t in[] = {
		0x0a, 0x3c,					/* Commands.commands[0], 60 bytes */
		0x0a, 0x16, 'E', 'B', 'P', 'F', 'P', 'r', 'o', 'f', 'i', 'l', 'i', 'n', 'g', 'T',
		'a', 's', 'k', 'Q', 'u', 'e', 'r', 'y',		/* Command.command */
		0x12, 0x0c,					/* Command.args[0] */
		0x0a, 0x06, 'T', 'a', 's', 'k', 'I', 'd', 0x12, 0x02, 't', '1',
		0x12, 0x14,					/* Command.args[1] */
		0x0a, 0x0a, 'T', 'a', 'r', 'g', 'e', 't', 'T', 'y', 'p', 'e',
		0x12, 0x06, 'O', 'N', '_', 'C', 'P', 'U',
		0x0a, 0x00,					/* Commands.commands[1]: empty */
	};
	/* clang-format on */
	Skywalking__V3__Commands *c = skywalking__v3__commands__unpack(NULL, sizeof(in), in);

	cr_assert_not_null(c);
	cr_assert_eq(c->n_commands, 2);
	cr_assert_str_eq(c->commands[0]->command, "EBPFProfilingTaskQuery");
	cr_assert_eq(c->commands[0]->n_args, 2);
	cr_assert_str_eq(c->commands[0]->args[0]->key, "TaskId");
	cr_assert_str_eq(c->commands[0]->args[0]->value, "t1");
	cr_assert_str_eq(c->commands[0]->args[1]->key, "TargetType");
	cr_assert_str_eq(c->commands[0]->args[1]->value, "ON_CPU");
	cr_assert_str_eq(c->commands[1]->command, "");
	cr_assert_eq(c->commands[1]->n_args, 0);
	skywalking__v3__commands__free_unpacked(c, NULL);

	/* Cut short: refused, not read past the end. */
	cr_assert_null(skywalking__v3__commands__unpack(NULL, sizeof(in) - 3, in));
}

/* ---- ebpf/profiling/Profile.proto ---- */

Test(wire, task_query)
{
	Skywalking__V3__EBPFProfilingTaskQuery q = SKYWALKING__V3__EBPFPROFILING_TASK_QUERY__INIT;

	q.roverinstanceid = "r";
	q.latestupdatetime = 1700000000000LL;
	EXPECT(&q, 0x0a, 0x01, 'r', 0x10, 0x80, 0xd0, 0x95, 0xff, 0xbc, 0x31);
}

Test(wire, task_metadata)
{
	Skywalking__V3__EBPFProfilingTaskMetadata t =
		SKYWALKING__V3__EBPFPROFILING_TASK_METADATA__INIT;

	t.taskid = "t";
	t.processid = "p";
	t.profilingstarttime = 5;
	t.currenttime = 6;
	EXPECT(&t, 0x0a, 0x01, 0x74, 0x12, 0x01, 0x70, 0x18, 0x05, 0x20, 0x06);
}

Test(wire, on_cpu_data)
{
	char *syms[] = { "a", "bc" };
	Skywalking__V3__EBPFProfilingStackMetadata st =
		SKYWALKING__V3__EBPFPROFILING_STACK_METADATA__INIT;
	Skywalking__V3__EBPFProfilingStackMetadata *stacks[] = { &st };
	Skywalking__V3__EBPFOnCPUProfiling on = SKYWALKING__V3__EBPFON_CPUPROFILING__INIT;
	Skywalking__V3__EBPFProfilingTaskMetadata t =
		SKYWALKING__V3__EBPFPROFILING_TASK_METADATA__INIT;
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;

	st.stacktype = SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE;
	st.stackid = 7;
	st.n_stacksymbols = 2;
	st.stacksymbols = syms;
	on.n_stacks = 1;
	on.stacks = stacks;
	on.dumpcount = 3;
	t.taskid = "t";
	d.task = &t;
	d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU;
	d.oncpu = &on;

	EXPECT(&st, 0x08, 0x01, 0x10, 0x07, 0x1a, 0x01, 'a', 0x1a, 0x02, 'b', 'c');
	/* clang-format off */
	EXPECT(&d,
	       0x0a, 0x03, 0x0a, 0x01, 't',		/* task { taskId } */
	       0x12, 0x0f,				/* onCPU */
	       0x0a, 0x0b,				/*   stacks[0] */
	       0x08, 0x01, 0x10, 0x07, 0x1a, 0x01, 'a', 0x1a, 0x02, 'b', 'c',
	       0x10, 0x03);				/*   dumpCount */
	/* clang-format on */

	/* Later messages of a stream carry no task. */
	d.task = NULL;
	EXPECT(&d, 0x12, 0x0f, 0x0a, 0x0b, 0x08, 0x01, 0x10, 0x07, 0x1a, 0x01, 'a', 0x1a, 0x02, 'b',
	       'c', 0x10, 0x03);
}

Test(wire, off_cpu_data)
{
	char *syms[] = { "k" };
	Skywalking__V3__EBPFProfilingStackMetadata st =
		SKYWALKING__V3__EBPFPROFILING_STACK_METADATA__INIT;
	Skywalking__V3__EBPFProfilingStackMetadata *stacks[] = { &st };
	Skywalking__V3__EBPFOffCPUProfiling off = SKYWALKING__V3__EBPFOFF_CPUPROFILING__INIT;
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;

	/* PROCESS_KERNEL_SPACE is proto3's default 0: not on the wire. stackId is int32, not
	 * sint32: -1 is ten bytes of varint. */
	st.stacktype = SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_KERNEL_SPACE;
	st.stackid = -1;
	st.n_stacksymbols = 1;
	st.stacksymbols = syms;
	off.n_stacks = 1;
	off.stacks = stacks;
	off.switchcount = 2;
	off.duration = 300;

	/* clang-format off */
	EXPECT(&off,
	       0x0a, 0x0e,
	       0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x1a, 0x01, 'k',
	       0x10, 0x02,				/* switchCount */
	       0x18, 0xac, 0x02);			/* duration 300 */
	/* clang-format on */

	d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU;
	d.offcpu = &off;
	/* clang-format off */
	EXPECT(&d,
	       0x1a, 0x15, 0x0a, 0x0e,
	       0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x1a, 0x01, 'k',
	       0x10, 0x02, 0x18, 0xac, 0x02);
	/* clang-format on */

	/* duration is int64: beyond 32 bits. */
	off.n_stacks = 0;
	off.switchcount = 0;
	off.duration = 5000000000LL;
	EXPECT(&off, 0x18, 0x80, 0xe4, 0x97, 0xd0, 0x12);
}

/* ---- ebpf/profiling/Process.proto ---- */

Test(wire, process_report)
{
	char *labels[] = { "x", "y" };
	Skywalking__V3__EBPFProcessEntityMetadata e =
		SKYWALKING__V3__EBPFPROCESS_ENTITY_METADATA__INIT;
	Skywalking__V3__KeyStringValuePair kv = SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT;
	Skywalking__V3__KeyStringValuePair *props[] = { &kv };
	Skywalking__V3__EBPFHostProcessMetadata h = SKYWALKING__V3__EBPFHOST_PROCESS_METADATA__INIT;
	Skywalking__V3__EBPFProcessProperties p = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__INIT;
	Skywalking__V3__EBPFProcessProperties *procs[] = { &p };
	Skywalking__V3__EBPFProcessReportList l = SKYWALKING__V3__EBPFPROCESS_REPORT_LIST__INIT;

	e.layer = "L";
	e.servicename = "s";
	e.instancename = "i";
	e.processname = "p";
	e.n_labels = 2;
	e.labels = labels;
	kv.key = "k";
	kv.value = "v";
	h.entity = &e;
	h.pid = 42;
	h.n_properties = 1;
	h.properties = props;
	p.metadata_case = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_HOST_PROCESS;
	p.hostprocess = &h;
	l.n_processes = 1;
	l.processes = procs;
	l.ebpfagentid = "a";

	/* clang-format off */
	EXPECT(&l,
	       0x0a, 0x20,				/* processes[0] */
	       0x0a, 0x1e,				/*   hostProcess */
	       0x0a, 0x12,				/*     entity */
	       0x0a, 0x01, 'L', 0x12, 0x01, 's', 0x1a, 0x01, 'i', 0x22, 0x01, 'p',
	       0x2a, 0x01, 'x', 0x2a, 0x01, 'y',
	       0x10, 0x2a,				/*     pid */
	       0x1a, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 'v', /* properties[0] */
	       0x12, 0x01, 'a');			/* ebpfAgentID */
	/* clang-format on */

	Skywalking__V3__EBPFKubernetesProcessMetadata k =
		SKYWALKING__V3__EBPFKUBERNETES_PROCESS_METADATA__INIT;
	k.pid = 1;
	p.metadata_case = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_K8S_PROCESS;
	p.k8sprocess = &k;
	l.ebpfagentid = "";
	EXPECT(&l, 0x0a, 0x04, 0x12, 0x02, 0x10, 0x01);
}

Test(wire, process_downstream)
{
	Skywalking__V3__EBPFProcessEntityMetadata e =
		SKYWALKING__V3__EBPFPROCESS_ENTITY_METADATA__INIT;
	Skywalking__V3__EBPFHostProcessDownstream h =
		SKYWALKING__V3__EBPFHOST_PROCESS_DOWNSTREAM__INIT;
	Skywalking__V3__EBPFProcessDownstream p = SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__INIT;
	Skywalking__V3__EBPFProcessDownstream *procs[] = { &p };
	Skywalking__V3__EBPFReportProcessDownstream r =
		SKYWALKING__V3__EBPFREPORT_PROCESS_DOWNSTREAM__INIT;

	e.processname = "p";
	h.pid = 42;
	h.entitymetadata = &e;
	p.processid = "id";
	p.process_case = SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS;
	p.hostprocess = &h;
	r.n_processes = 1;
	r.processes = procs;
	EXPECT(&r, 0x0a, 0x0d, 0x0a, 0x02, 'i', 'd', 0x12, 0x07, 0x08, 0x2a, 0x12, 0x03, 0x22, 0x01,
	       'p');

	Skywalking__V3__EBPFKubernetesProcessDownstream k =
		SKYWALKING__V3__EBPFKUBERNETES_PROCESS_DOWNSTREAM__INIT;
	k.pid = 7;
	p.processid = "";
	p.process_case = SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_K8S_PROCESS;
	p.k8sprocess = &k;
	EXPECT(&r, 0x0a, 0x04, 0x1a, 0x02, 0x08, 0x07);

	/* reportProcesses' answer decodes into the host branch. */
	static const uint8_t in[] = { 0x0a, 0x0d, 0x0a, 0x02, 'i',  'd',  0x12, 0x07,
				      0x08, 0x2a, 0x12, 0x03, 0x22, 0x01, 'p' };
	Skywalking__V3__EBPFReportProcessDownstream *d =
		skywalking__v3__ebpfreport_process_downstream__unpack(NULL, sizeof(in), in);
	cr_assert_not_null(d);
	cr_assert_eq(d->n_processes, 1);
	cr_assert_str_eq(d->processes[0]->processid, "id");
	cr_assert_eq(d->processes[0]->process_case,
		     SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS);
	cr_assert_eq(d->processes[0]->hostprocess->pid, 42);
	cr_assert_str_eq(d->processes[0]->hostprocess->entitymetadata->processname, "p");
	skywalking__v3__ebpfreport_process_downstream__free_unpacked(d, NULL);
}

Test(wire, process_ping)
{
	Skywalking__V3__EBPFProcessEntityMetadata e =
		SKYWALKING__V3__EBPFPROCESS_ENTITY_METADATA__INIT;
	Skywalking__V3__KeyStringValuePair kv = SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT;
	Skywalking__V3__KeyStringValuePair *props[] = { &kv };
	Skywalking__V3__EBPFProcessPingPkg p = SKYWALKING__V3__EBPFPROCESS_PING_PKG__INIT;
	Skywalking__V3__EBPFProcessPingPkg *procs[] = { &p };
	Skywalking__V3__EBPFProcessPingPkgList l = SKYWALKING__V3__EBPFPROCESS_PING_PKG_LIST__INIT;

	e.layer = "L";
	kv.key = "k";
	kv.value = "v";
	p.entitymetadata = &e;
	p.n_properties = 1;
	p.properties = props;
	l.n_processes = 1;
	l.processes = procs;
	l.ebpfagentid = "a";
	EXPECT(&l, 0x0a, 0x0d, 0x0a, 0x03, 0x0a, 0x01, 'L', 0x12, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01,
	       'v', 0x12, 0x01, 'a');
}

/* ---- language-agent/Meter.proto ---- */

Test(wire, meter_single)
{
	Skywalking__V3__Label lb = SKYWALKING__V3__LABEL__INIT;
	Skywalking__V3__Label *labels[] = { &lb };
	Skywalking__V3__MeterSingleValue sv = SKYWALKING__V3__METER_SINGLE_VALUE__INIT;
	Skywalking__V3__MeterData md = SKYWALKING__V3__METER_DATA__INIT;

	lb.name = "a";
	lb.value = "b";
	sv.name = "m";
	sv.n_labels = 1;
	sv.labels = labels;
	sv.value = 1.5;
	md.metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
	md.singlevalue = &sv;
	md.service = "s";
	md.serviceinstance = "i";
	md.timestamp = 1000;
	/* clang-format off */
	EXPECT(&md,
	       0x0a, 0x14,				/* singleValue */
	       0x0a, 0x01, 'm', 0x12, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',
	       0x19, D_1_5,				/*   value: fixed64 */
	       0x1a, 0x01, 's', 0x22, 0x01, 'i',	/* service, serviceInstance */
	       0x28, 0xe8, 0x07);			/* timestamp */
	/* clang-format on */
}

Test(wire, meter_histogram)
{
	Skywalking__V3__MeterBucketValue b0 = SKYWALKING__V3__METER_BUCKET_VALUE__INIT;
	Skywalking__V3__MeterBucketValue b1 = SKYWALKING__V3__METER_BUCKET_VALUE__INIT;
	Skywalking__V3__MeterBucketValue *values[] = { &b0, &b1 };
	Skywalking__V3__MeterHistogram h = SKYWALKING__V3__METER_HISTOGRAM__INIT;
	Skywalking__V3__MeterData md = SKYWALKING__V3__METER_DATA__INIT;
	Skywalking__V3__MeterData *mds[] = { &md };
	Skywalking__V3__MeterDataCollection c = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;

	b0.bucket = 0.5;
	b0.count = 3;
	b1.count = 1;
	b1.isnegativeinfinity = 1;
	h.name = "h";
	h.n_values = 2;
	h.values = values;
	md.metric_case = SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM;
	md.histogram = &h;
	c.n_meterdata = 1;
	c.meterdata = mds;

	EXPECT(&b0, 0x09, D_0_5, 0x10, 0x03);
	EXPECT(&b1, 0x10, 0x01, 0x18, 0x01);
	/* clang-format off */
	EXPECT(&c,
	       0x0a, 0x18,				/* meterData[0] */
	       0x12, 0x16,				/*   histogram */
	       0x0a, 0x01, 'h',
	       0x1a, 0x0b, 0x09, D_0_5, 0x10, 0x03,	/*     values[0] */
	       0x1a, 0x04, 0x10, 0x01, 0x18, 0x01);	/*     values[1] */
	/* clang-format on */
}

/* ---- ebpf/profiling/Continuous.proto ---- */

Test(wire, continuous_report)
{
	Skywalking__V3__ContinuousProfilingSingleValueCause sv =
		SKYWALKING__V3__CONTINUOUS_PROFILING_SINGLE_VALUE_CAUSE__INIT;
	Skywalking__V3__ContinuousProfilingURICause u0 =
		SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__INIT;
	Skywalking__V3__ContinuousProfilingURICause u1 =
		SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__INIT;
	Skywalking__V3__ContinuousProfilingCause c0 =
		SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__INIT;
	Skywalking__V3__ContinuousProfilingCause c1 =
		SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__INIT;
	Skywalking__V3__ContinuousProfilingCause c2 =
		SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__INIT;
	Skywalking__V3__ContinuousProfilingCause *causes[] = { &c0, &c1, &c2 };
	Skywalking__V3__ContinuousNetworkProfilingTask net =
		SKYWALKING__V3__CONTINUOUS_NETWORK_PROFILING_TASK__INIT;
	char *regexes[] = { "a", "b" };
	Skywalking__V3__ContinuousProfilingReport r =
		SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__INIT;

	sv.threshold = 0.5;
	sv.current = 1.5;
	c0.type = SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__ProcessCPU;
	c0.cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_SINGLE_VALUE;
	c0.singlevalue = &sv;
	u0.uri_case = SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__URI_REGEX;
	u0.regex = "r";
	u0.threshold = 0.5;
	u0.current = 1.5;
	c1.type = SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__HTTPAvgResponseTime;
	c1.cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_URI;
	c1.uri = &u0;
	u1.uri_case = SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__URI_PATH;
	u1.path = "/";
	c2.type = SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__HTTPErrorRate;
	c2.cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_URI;
	c2.uri = &u1;
	net.n_samplinguriregexes = 2;
	net.samplinguriregexes = regexes;
	r.layer = "L";
	r.servicename = "s";
	r.instancename = "i";
	r.processname = "p";
	r.n_causes = 3;
	r.causes = causes;
	r.duration = 10;
	r.target_task_case = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_NETWORK;
	r.network = &net;

	/* clang-format off */
	EXPECT(&r,
	       0x0a, 0x01, 'L', 0x12, 0x01, 's', 0x1a, 0x01, 'i', 0x22, 0x01, 'p',
	       0x2a, 0x14,				/* causes[0]: type ProcessCPU = 0, not sent */
	       0x12, 0x12, 0x09, D_0_5, 0x11, D_1_5,	/*   singleValue */
	       0x2a, 0x19,				/* causes[1] */
	       0x08, 0x04,				/*   type HTTPAvgResponseTime */
	       0x1a, 0x15, 0x0a, 0x01, 'r', 0x19, D_0_5, 0x21, D_1_5, /* uri { regex } */
	       0x2a, 0x07,				/* causes[2] */
	       0x08, 0x03, 0x1a, 0x03, 0x12, 0x01, '/',	/*   HTTPErrorRate, uri { path } */
	       0x30, 0x0a,				/* duration */
	       0x4a, 0x06, 0x0a, 0x01, 'a', 0x0a, 0x01, 'b'); /* network */
	/* clang-format on */

	/* The CPU tasks have no fields, yet the oneof branch is on the wire, empty. */
	Skywalking__V3__ContinuousOnCPUProfilingTask on =
		SKYWALKING__V3__CONTINUOUS_ON_CPUPROFILING_TASK__INIT;
	Skywalking__V3__ContinuousOffCPUProfilingTask off =
		SKYWALKING__V3__CONTINUOUS_OFF_CPUPROFILING_TASK__INIT;
	Skywalking__V3__ContinuousProfilingReport r2 =
		SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__INIT;
	r2.target_task_case = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_ON_CPU;
	r2.oncpu = &on;
	EXPECT(&r2, 0x3a, 0x00);
	r2.target_task_case = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_OFF_CPU;
	r2.offcpu = &off;
	EXPECT(&r2, 0x42, 0x00);
}

Test(wire, continuous_policy_query)
{
	Skywalking__V3__ContinuousProfilingServicePolicyQuery s =
		SKYWALKING__V3__CONTINUOUS_PROFILING_SERVICE_POLICY_QUERY__INIT;
	Skywalking__V3__ContinuousProfilingServicePolicyQuery *ps[] = { &s };
	Skywalking__V3__ContinuousProfilingPolicyQuery q =
		SKYWALKING__V3__CONTINUOUS_PROFILING_POLICY_QUERY__INIT;

	s.servicename = "s";
	s.uuid = "u";
	q.n_policies = 1;
	q.policies = ps;
	EXPECT(&q, 0x0a, 0x06, 0x0a, 0x01, 's', 0x12, 0x01, 'u');
}

Test(wire, enums)
{
	static const struct {
		const char *name;
		int value;
	} monitor[] = {
		{ "ProcessCPU", 0 }, { "ProcessThreadCount", 1 }, { "SystemLoad", 2 },
		{ "HTTPErrorRate", 3 }, { "HTTPAvgResponseTime", 4 },
	}, stack[] = {
		{ "PROCESS_KERNEL_SPACE", 0 }, { "PROCESS_USER_SPACE", 1 },
	};
	const ProtobufCEnumDescriptor *m =
		&skywalking__v3__continuous_profiling_triggered_monitor_type__descriptor;
	const ProtobufCEnumDescriptor *s = &skywalking__v3__ebpfprofiling_stack_type__descriptor;

	cr_assert_str_eq(m->name, "skywalking.v3.ContinuousProfilingTriggeredMonitorType");
	cr_assert_eq(m->n_values, N(monitor));
	for (size_t i = 0; i < N(monitor); i++) {
		const ProtobufCEnumValue *v =
			protobuf_c_enum_descriptor_get_value_by_name(m, monitor[i].name);
		cr_assert_not_null(v, "%s", monitor[i].name);
		cr_assert_eq(v->value, monitor[i].value, "%s", monitor[i].name);
	}
	cr_assert_str_eq(s->name, "skywalking.v3.EBPFProfilingStackType");
	cr_assert_eq(s->n_values, N(stack));
	for (size_t i = 0; i < N(stack); i++) {
		const ProtobufCEnumValue *v =
			protobuf_c_enum_descriptor_get_value_by_name(s, stack[i].name);
		cr_assert_not_null(v, "%s", stack[i].name);
		cr_assert_eq(v->value, stack[i].value, "%s", stack[i].name);
	}
}

/* ---- services: gRPC paths are /skywalking.v3.<Service>/<rpc> ---- */

static void expect_method(const ProtobufCServiceDescriptor *sd, const char *name, const char *in,
			  const char *out)
{
	const ProtobufCMethodDescriptor *m =
		protobuf_c_service_descriptor_get_method_by_name(sd, name);

	cr_assert_not_null(m, "%s has no %s", sd->name, name);
	cr_assert_str_eq(m->input->name, in, "%s/%s", sd->name, name);
	cr_assert_str_eq(m->output->name, out, "%s/%s", sd->name, name);
}

Test(wire, services)
{
	const ProtobufCServiceDescriptor *proc = &skywalking__v3__ebpfprocess_service__descriptor;
	const ProtobufCServiceDescriptor *prof = &skywalking__v3__ebpfprofiling_service__descriptor;
	const ProtobufCServiceDescriptor *cont =
		&skywalking__v3__continuous_profiling_service__descriptor;
	const ProtobufCServiceDescriptor *meter = &skywalking__v3__meter_report_service__descriptor;
	const ProtobufCServiceDescriptor *ev =
		&skywalking__v3__span_attached_event_report_service__descriptor;
	const ProtobufCEnumDescriptor *ref =
		&skywalking__v3__span_attached_event__span_reference_type__descriptor;

	cr_assert_str_eq(proc->name, "skywalking.v3.EBPFProcessService");
	cr_assert_eq(proc->n_methods, 2);
	cr_assert_str_eq(proc->methods[0].name, "reportProcesses");
	cr_assert_str_eq(proc->methods[1].name, "keepAlive");
	expect_method(proc, "reportProcesses", "skywalking.v3.EBPFProcessReportList",
		      "skywalking.v3.EBPFReportProcessDownstream");
	expect_method(proc, "keepAlive", "skywalking.v3.EBPFProcessPingPkgList",
		      "skywalking.v3.Commands");

	cr_assert_str_eq(prof->name, "skywalking.v3.EBPFProfilingService");
	cr_assert_eq(prof->n_methods, 2);
	cr_assert_str_eq(prof->methods[0].name, "queryTasks");
	cr_assert_str_eq(prof->methods[1].name, "collectProfilingData");
	expect_method(prof, "queryTasks", "skywalking.v3.EBPFProfilingTaskQuery",
		      "skywalking.v3.Commands");
	expect_method(prof, "collectProfilingData", "skywalking.v3.EBPFProfilingData",
		      "skywalking.v3.Commands");

	cr_assert_str_eq(cont->name, "skywalking.v3.ContinuousProfilingService");
	cr_assert_eq(cont->n_methods, 2);
	cr_assert_str_eq(cont->methods[0].name, "queryPolicies");
	cr_assert_str_eq(cont->methods[1].name, "reportProfilingTask");
	expect_method(cont, "queryPolicies", "skywalking.v3.ContinuousProfilingPolicyQuery",
		      "skywalking.v3.Commands");
	expect_method(cont, "reportProfilingTask", "skywalking.v3.ContinuousProfilingReport",
		      "skywalking.v3.Commands");

	cr_assert_str_eq(meter->name, "skywalking.v3.MeterReportService");
	cr_assert_eq(meter->n_methods, 2);
	cr_assert_str_eq(meter->methods[0].name, "collect");
	cr_assert_str_eq(meter->methods[1].name, "collectBatch");
	expect_method(meter, "collect", "skywalking.v3.MeterData", "skywalking.v3.Commands");
	expect_method(meter, "collectBatch", "skywalking.v3.MeterDataCollection",
		      "skywalking.v3.Commands");

	cr_assert_str_eq(ev->name, "skywalking.v3.SpanAttachedEventReportService");
	cr_assert_eq(ev->n_methods, 1);
	expect_method(ev, "collect", "skywalking.v3.SpanAttachedEvent", "skywalking.v3.Commands");
	{
		const ProtobufCServiceDescriptor *al =
			&skywalking__v3__ebpfaccess_log_service__descriptor;

		cr_assert_str_eq(al->name, "skywalking.v3.EBPFAccessLogService");
		cr_assert_eq(al->n_methods, 1);
		expect_method(al, "collect", "skywalking.v3.EBPFAccessLogMessage",
			      "skywalking.v3.EBPFAccessLogDownstream");
	}
	cr_assert_str_eq(ref->name, "skywalking.v3.SpanAttachedEvent.SpanReferenceType");
	cr_assert_eq(ref->n_values, 2);
	cr_assert_eq(protobuf_c_enum_descriptor_get_value_by_name(ref, "SKYWALKING")->value, 0);
	cr_assert_eq(protobuf_c_enum_descriptor_get_value_by_name(ref, "ZIPKIN")->value, 1);
}

/* ---- every field of the reference, by name: number, type, repeated or not ---- */

#define STR PROTOBUF_C_TYPE_STRING
#define I32 PROTOBUF_C_TYPE_INT32
#define I64 PROTOBUF_C_TYPE_INT64
#define DBL PROTOBUF_C_TYPE_DOUBLE
#define BOOL PROTOBUF_C_TYPE_BOOL
#define ENUM PROTOBUF_C_TYPE_ENUM
#define MSG PROTOBUF_C_TYPE_MESSAGE
#define U64 PROTOBUF_C_TYPE_UINT64
#define U32 PROTOBUF_C_TYPE_UINT32

struct field {
	const char *name;
	unsigned id;
	ProtobufCType type;
	int repeated;
	const char *oneof; /* NULL when not in a oneof */
	const char *of;	   /* full name of a message or enum type */
};

struct message {
	const ProtobufCMessageDescriptor *desc;
	const char *name;
	struct field fields[10];
};

#define SW "skywalking.v3."
static const struct message messages[] = {
	{ &skywalking__v3__key_string_value_pair__descriptor,
	  SW "KeyStringValuePair",
	  { { "key", 1, STR }, { "value", 2, STR } } },
	{ &skywalking__v3__command__descriptor,
	  SW "Command",
	  { { "command", 1, STR }, { "args", 2, MSG, 1, NULL, SW "KeyStringValuePair" } } },
	{ &skywalking__v3__commands__descriptor,
	  SW "Commands",
	  { { "commands", 1, MSG, 1, NULL, SW "Command" } } },

	{ &skywalking__v3__ebpfprocess_report_list__descriptor,
	  SW "EBPFProcessReportList",
	  { { "processes", 1, MSG, 1, NULL, SW "EBPFProcessProperties" },
	    { "ebpfAgentID", 2, STR } } },
	{ &skywalking__v3__ebpfprocess_properties__descriptor,
	  SW "EBPFProcessProperties",
	  { { "hostProcess", 1, MSG, 0, "metadata", SW "EBPFHostProcessMetadata" },
	    { "k8sProcess", 2, MSG, 0, "metadata", SW "EBPFKubernetesProcessMetadata" } } },
	{ &skywalking__v3__ebpfhost_process_metadata__descriptor,
	  SW "EBPFHostProcessMetadata",
	  { { "entity", 1, MSG, 0, NULL, SW "EBPFProcessEntityMetadata" },
	    { "pid", 2, I32 },
	    { "properties", 3, MSG, 1, NULL, SW "KeyStringValuePair" } } },
	{ &skywalking__v3__ebpfkubernetes_process_metadata__descriptor,
	  SW "EBPFKubernetesProcessMetadata",
	  { { "entity", 1, MSG, 0, NULL, SW "EBPFProcessEntityMetadata" },
	    { "pid", 2, I32 },
	    { "properties", 3, MSG, 1, NULL, SW "KeyStringValuePair" } } },
	{ &skywalking__v3__ebpfprocess_entity_metadata__descriptor,
	  SW "EBPFProcessEntityMetadata",
	  { { "layer", 1, STR },
	    { "serviceName", 2, STR },
	    { "instanceName", 3, STR },
	    { "processName", 4, STR },
	    { "labels", 5, STR, 1 } } },
	{ &skywalking__v3__ebpfreport_process_downstream__descriptor,
	  SW "EBPFReportProcessDownstream",
	  { { "processes", 1, MSG, 1, NULL, SW "EBPFProcessDownstream" } } },
	{ &skywalking__v3__ebpfprocess_downstream__descriptor,
	  SW "EBPFProcessDownstream",
	  { { "processId", 1, STR },
	    { "hostProcess", 2, MSG, 0, "process", SW "EBPFHostProcessDownstream" },
	    { "k8sProcess", 3, MSG, 0, "process", SW "EBPFKubernetesProcessDownstream" } } },
	{ &skywalking__v3__ebpfhost_process_downstream__descriptor,
	  SW "EBPFHostProcessDownstream",
	  { { "pid", 1, I32 },
	    { "entityMetadata", 2, MSG, 0, NULL, SW "EBPFProcessEntityMetadata" } } },
	{ &skywalking__v3__ebpfkubernetes_process_downstream__descriptor,
	  SW "EBPFKubernetesProcessDownstream",
	  { { "pid", 1, I32 },
	    { "entityMetadata", 2, MSG, 0, NULL, SW "EBPFProcessEntityMetadata" } } },
	{ &skywalking__v3__ebpfprocess_ping_pkg_list__descriptor,
	  SW "EBPFProcessPingPkgList",
	  { { "processes", 1, MSG, 1, NULL, SW "EBPFProcessPingPkg" },
	    { "ebpfAgentID", 2, STR } } },
	{ &skywalking__v3__ebpfprocess_ping_pkg__descriptor,
	  SW "EBPFProcessPingPkg",
	  { { "entityMetadata", 1, MSG, 0, NULL, SW "EBPFProcessEntityMetadata" },
	    { "properties", 2, MSG, 1, NULL, SW "KeyStringValuePair" } } },

	{ &skywalking__v3__ebpfprofiling_task_query__descriptor,
	  SW "EBPFProfilingTaskQuery",
	  { { "roverInstanceId", 1, STR }, { "latestUpdateTime", 2, I64 } } },
	{ &skywalking__v3__ebpfprofiling_data__descriptor,
	  SW "EBPFProfilingData",
	  { { "task", 1, MSG, 0, NULL, SW "EBPFProfilingTaskMetadata" },
	    { "onCPU", 2, MSG, 0, "profiling", SW "EBPFOnCPUProfiling" },
	    { "offCPU", 3, MSG, 0, "profiling", SW "EBPFOffCPUProfiling" } } },
	{ &skywalking__v3__ebpfprofiling_task_metadata__descriptor,
	  SW "EBPFProfilingTaskMetadata",
	  { { "taskId", 1, STR },
	    { "processId", 2, STR },
	    { "profilingStartTime", 3, I64 },
	    { "currentTime", 4, I64 } } },
	{ &skywalking__v3__ebpfprofiling_stack_metadata__descriptor,
	  SW "EBPFProfilingStackMetadata",
	  { { "stackType", 1, ENUM, 0, NULL, SW "EBPFProfilingStackType" },
	    { "stackId", 2, I32 },
	    { "stackSymbols", 3, STR, 1 } } },
	{ &skywalking__v3__ebpfon_cpuprofiling__descriptor,
	  SW "EBPFOnCPUProfiling",
	  { { "stacks", 1, MSG, 1, NULL, SW "EBPFProfilingStackMetadata" },
	    { "dumpCount", 2, I32 } } },
	{ &skywalking__v3__ebpfoff_cpuprofiling__descriptor,
	  SW "EBPFOffCPUProfiling",
	  { { "stacks", 1, MSG, 1, NULL, SW "EBPFProfilingStackMetadata" },
	    { "switchCount", 2, I32 },
	    { "duration", 3, I64 } } },

	{ &skywalking__v3__continuous_profiling_policy_query__descriptor,
	  SW "ContinuousProfilingPolicyQuery",
	  { { "policies", 1, MSG, 1, NULL, SW "ContinuousProfilingServicePolicyQuery" } } },
	{ &skywalking__v3__continuous_profiling_service_policy_query__descriptor,
	  SW "ContinuousProfilingServicePolicyQuery",
	  { { "serviceName", 1, STR }, { "uuid", 2, STR } } },
	{ &skywalking__v3__continuous_profiling_report__descriptor,
	  SW "ContinuousProfilingReport",
	  { { "layer", 1, STR },
	    { "serviceName", 2, STR },
	    { "instanceName", 3, STR },
	    { "processName", 4, STR },
	    { "causes", 5, MSG, 1, NULL, SW "ContinuousProfilingCause" },
	    { "duration", 6, I32 },
	    { "onCPU", 7, MSG, 0, "targetTask", SW "ContinuousOnCPUProfilingTask" },
	    { "offCPU", 8, MSG, 0, "targetTask", SW "ContinuousOffCPUProfilingTask" },
	    { "network", 9, MSG, 0, "targetTask", SW "ContinuousNetworkProfilingTask" } } },
	{ &skywalking__v3__continuous_profiling_cause__descriptor,
	  SW "ContinuousProfilingCause",
	  { { "type", 1, ENUM, 0, NULL, SW "ContinuousProfilingTriggeredMonitorType" },
	    { "singleValue", 2, MSG, 0, "cause", SW "ContinuousProfilingSingleValueCause" },
	    { "uri", 3, MSG, 0, "cause", SW "ContinuousProfilingURICause" } } },
	{ &skywalking__v3__continuous_profiling_single_value_cause__descriptor,
	  SW "ContinuousProfilingSingleValueCause",
	  { { "threshold", 1, DBL }, { "current", 2, DBL } } },
	{ &skywalking__v3__continuous_profiling_uricause__descriptor,
	  SW "ContinuousProfilingURICause",
	  { { "regex", 1, STR, 0, "uri" },
	    { "path", 2, STR, 0, "uri" },
	    { "threshold", 3, DBL },
	    { "current", 4, DBL } } },
	{ &skywalking__v3__continuous_on_cpuprofiling_task__descriptor,
	  SW "ContinuousOnCPUProfilingTask",
	  { { 0 } } },
	{ &skywalking__v3__continuous_off_cpuprofiling_task__descriptor,
	  SW "ContinuousOffCPUProfilingTask",
	  { { 0 } } },
	{ &skywalking__v3__continuous_network_profiling_task__descriptor,
	  SW "ContinuousNetworkProfilingTask",
	  { { "samplingURIRegexes", 1, STR, 1 } } },

	{ &skywalking__v3__label__descriptor,
	  SW "Label",
	  { { "name", 1, STR }, { "value", 2, STR } } },
	{ &skywalking__v3__meter_bucket_value__descriptor,
	  SW "MeterBucketValue",
	  { { "bucket", 1, DBL }, { "count", 2, I64 }, { "isNegativeInfinity", 3, BOOL } } },
	{ &skywalking__v3__meter_single_value__descriptor,
	  SW "MeterSingleValue",
	  { { "name", 1, STR }, { "labels", 2, MSG, 1, NULL, SW "Label" }, { "value", 3, DBL } } },
	{ &skywalking__v3__meter_histogram__descriptor,
	  SW "MeterHistogram",
	  { { "name", 1, STR },
	    { "labels", 2, MSG, 1, NULL, SW "Label" },
	    { "values", 3, MSG, 1, NULL, SW "MeterBucketValue" } } },
	{ &skywalking__v3__meter_data__descriptor,
	  SW "MeterData",
	  { { "singleValue", 1, MSG, 0, "metric", SW "MeterSingleValue" },
	    { "histogram", 2, MSG, 0, "metric", SW "MeterHistogram" },
	    { "service", 3, STR },
	    { "serviceInstance", 4, STR },
	    { "timestamp", 5, I64 } } },
	{ &skywalking__v3__meter_data_collection__descriptor,
	  SW "MeterDataCollection",
	  { { "meterData", 1, MSG, 1, NULL, SW "MeterData" } } },

	{ &skywalking__v3__instant__descriptor,
	  SW "Instant",
	  { { "seconds", 1, I64 }, { "nanos", 2, I32 } } },
	{ &skywalking__v3__key_int_value_pair__descriptor,
	  SW "KeyIntValuePair",
	  { { "key", 1, STR }, { "value", 2, I64 } } },
	{ &skywalking__v3__span_attached_event__descriptor,
	  SW "SpanAttachedEvent",
	  { { "startTime", 1, MSG, 0, NULL, SW "Instant" },
	    { "event", 2, STR },
	    { "endTime", 3, MSG, 0, NULL, SW "Instant" },
	    { "tags", 4, MSG, 1, NULL, SW "KeyStringValuePair" },
	    { "summary", 5, MSG, 1, NULL, SW "KeyIntValuePair" },
	    { "traceContext", 6, MSG, 0, NULL, SW "SpanAttachedEvent.SpanReference" } } },
	{ &skywalking__v3__span_attached_event__span_reference__descriptor,
	  SW "SpanAttachedEvent.SpanReference",
	  { { "type", 1, ENUM, 0, NULL, SW "SpanAttachedEvent.SpanReferenceType" },
	    { "traceId", 2, STR },
	    { "traceSegmentId", 3, STR },
	    { "spanId", 4, STR } } },

	/* ebpf/accesslog.proto (reference access-log.md, "every field") */
	{ &skywalking__v3__ebpfaccess_log_message__descriptor,
	  SW "EBPFAccessLogMessage",
	  { { "node", 1, MSG, 0, NULL, SW "EBPFAccessLogNodeInfo" },
	    { "connection", 2, MSG, 0, NULL, SW "AccessLogConnection" },
	    { "kernelLogs", 3, MSG, 1, NULL, SW "AccessLogKernelLog" },
	    { "protocolLog", 4, MSG, 0, NULL, SW "AccessLogProtocolLogs" } } },
	{ &skywalking__v3__ebpfaccess_log_node_info__descriptor,
	  SW "EBPFAccessLogNodeInfo",
	  { { "name", 1, STR },
	    { "netInterfaces", 2, MSG, 1, NULL, SW "EBPFAccessLogNodeNetInterface" },
	    { "bootTime", 3, MSG, 0, NULL, SW "Instant" },
	    { "clusterName", 4, STR },
	    { "policy", 5, MSG, 0, NULL, SW "EBPFAccessLogPolicy" } } },
	{ &skywalking__v3__ebpfaccess_log_policy__descriptor,
	  SW "EBPFAccessLogPolicy",
	  { { "excludeNamespaces", 1, STR, 1 } } },
	{ &skywalking__v3__ebpfaccess_log_node_net_interface__descriptor,
	  SW "EBPFAccessLogNodeNetInterface",
	  { { "index", 1, I32 }, { "mtu", 2, I32 }, { "name", 3, STR } } },
	{ &skywalking__v3__access_log_connection__descriptor,
	  SW "AccessLogConnection",
	  { { "local", 1, MSG, 0, NULL, SW "ConnectionAddress" },
	    { "remote", 2, MSG, 0, NULL, SW "ConnectionAddress" },
	    { "role", 3, ENUM, 0, NULL, SW "DetectPoint" },
	    { "tlsMode", 4, ENUM, 0, NULL, SW "AccessLogConnectionTLSMode" },
	    { "protocol", 5, ENUM, 0, NULL, SW "AccessLogProtocolType" },
	    { "attachment", 6, MSG, 0, NULL, SW "ConnectionAttachment" } } },
	{ &skywalking__v3__connection_attachment__descriptor,
	  SW "ConnectionAttachment",
	  { { "zTunnel", 1, MSG, 0, "environment", SW "ZTunnelAttachmentEnvironment" } } },
	{ &skywalking__v3__ztunnel_attachment_environment__descriptor,
	  SW "ZTunnelAttachmentEnvironment",
	  { { "real_destination_ip", 1, STR },
	    { "by", 2, ENUM, 0, NULL, SW "ZTunnelAttachmentEnvironmentDetectBy" },
	    { "security_policy", 3, ENUM, 0, NULL, SW "ZTunnelAttachmentSecurityPolicy" },
	    { "addition", 4, STR } } },
	{ &skywalking__v3__connection_address__descriptor,
	  SW "ConnectionAddress",
	  { { "kubernetes", 1, MSG, 0, "address", SW "KubernetesProcessAddress" },
	    { "ip", 2, MSG, 0, "address", SW "IPAddress" } } },
	{ &skywalking__v3__kubernetes_process_address__descriptor,
	  SW "KubernetesProcessAddress",
	  { { "serviceName", 1, STR },
	    { "podName", 2, STR },
	    { "containerName", 3, STR },
	    { "processName", 4, STR },
	    { "port", 5, I32 } } },
	{ &skywalking__v3__ipaddress__descriptor,
	  SW "IPAddress",
	  { { "host", 1, STR }, { "port", 2, I32 } } },
	{ &skywalking__v3__access_log_kernel_log__descriptor,
	  SW "AccessLogKernelLog",
	  { { "connect", 1, MSG, 0, "operation", SW "AccessLogKernelConnectOperation" },
	    { "accept", 2, MSG, 0, "operation", SW "AccessLogKernelAcceptOperation" },
	    { "close", 3, MSG, 0, "operation", SW "AccessLogKernelCloseOperation" },
	    { "read", 4, MSG, 0, "operation", SW "AccessLogKernelReadOperation" },
	    { "write", 5, MSG, 0, "operation", SW "AccessLogKernelWriteOperation" } } },
	{ &skywalking__v3__access_log_protocol_logs__descriptor,
	  SW "AccessLogProtocolLogs",
	  { { "http", 1, MSG, 0, "protocol", SW "AccessLogHTTPProtocol" } } },
	{ &skywalking__v3__access_log_httpprotocol__descriptor,
	  SW "AccessLogHTTPProtocol",
	  { { "startTime", 1, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "endTime", 2, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "version", 3, ENUM, 0, NULL, SW "AccessLogHTTPProtocolVersion" },
	    { "request", 4, MSG, 0, NULL, SW "AccessLogHTTPProtocolRequest" },
	    { "response", 5, MSG, 0, NULL, SW "AccessLogHTTPProtocolResponse" } } },
	{ &skywalking__v3__access_log_httpprotocol_request__descriptor,
	  SW "AccessLogHTTPProtocolRequest",
	  { { "method", 1, ENUM, 0, NULL, SW "AccessLogHTTPProtocolRequestMethod" },
	    { "path", 2, STR },
	    { "sizeOfHeadersBytes", 3, U64 },
	    { "sizeOfBodyBytes", 4, U64 },
	    { "trace", 5, MSG, 0, NULL, SW "AccessLogTraceInfo" },
	    { "host", 6, STR } } },
	{ &skywalking__v3__access_log_httpprotocol_response__descriptor,
	  SW "AccessLogHTTPProtocolResponse",
	  { { "statusCode", 1, I32 },
	    { "sizeOfHeadersBytes", 3, U64 },
	    { "sizeOfBodyBytes", 4, U64 } } },
	{ &skywalking__v3__access_log_trace_info__descriptor,
	  SW "AccessLogTraceInfo",
	  { { "provider", 1, ENUM, 0, NULL, SW "AccessLogTraceInfoProvider" },
	    { "traceId", 2, STR },
	    { "traceSegmentId", 3, STR },
	    { "spanId", 4, STR } } },
	{ &skywalking__v3__access_log_kernel_connect_operation__descriptor,
	  SW "AccessLogKernelConnectOperation",
	  { { "startTime", 1, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "endTime", 2, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "success", 3, BOOL } } },
	{ &skywalking__v3__access_log_kernel_accept_operation__descriptor,
	  SW "AccessLogKernelAcceptOperation",
	  { { "startTime", 1, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "endTime", 2, MSG, 0, NULL, SW "EBPFTimestamp" } } },
	{ &skywalking__v3__access_log_kernel_close_operation__descriptor,
	  SW "AccessLogKernelCloseOperation",
	  { { "startTime", 1, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "endTime", 2, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "success", 3, BOOL } } },
	{ &skywalking__v3__access_log_kernel_write_operation__descriptor,
	  SW "AccessLogKernelWriteOperation",
	  { { "startTime", 1, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "endTime", 2, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "syscall", 3, ENUM, 0, NULL, SW "AccessLogKernelWriteSyscall" },
	    { "l4Metrics", 4, MSG, 0, NULL, SW "AccessLogKernelWriteL4Metrics" },
	    { "l3Metrics", 5, MSG, 0, NULL, SW "AccessLogKernelWriteL3Metrics" },
	    { "l2Metrics", 6, MSG, 0, NULL, SW "AccessLogKernelWriteL2Metrics" } } },
	{ &skywalking__v3__access_log_kernel_write_l4_metrics__descriptor,
	  SW "AccessLogKernelWriteL4Metrics",
	  { { "totalDuration", 1, U64 },
	    { "totalTransmitPackageCount", 2, I64 },
	    { "totalRetransmitPackageCount", 3, I64 },
	    { "lossPackageMetrics", 4, MSG, 1, NULL, SW "AccessLogLossPackageMetrics" },
	    { "totalPackageSize", 5, I64 } } },
	{ &skywalking__v3__access_log_loss_package_metrics__descriptor,
	  SW "AccessLogLossPackageMetrics",
	  { { "location", 1, STR }, { "count", 2, I32 } } },
	{ &skywalking__v3__access_log_kernel_write_l3_metrics__descriptor,
	  SW "AccessLogKernelWriteL3Metrics",
	  { { "totalDuration", 1, U64 },
	    { "totalLocalDuration", 2, U64 },
	    { "totalOutputDuration", 3, U64 },
	    { "totalResolveMACCount", 5, U64 },
	    { "totalResolveMACDuration", 6, U64 },
	    { "totalNetFilterCount", 7, U64 },
	    { "totalNetFilterDuration", 8, U64 } } },
	{ &skywalking__v3__access_log_kernel_write_l2_metrics__descriptor,
	  SW "AccessLogKernelWriteL2Metrics",
	  { { "totalDuration", 1, U64 },
	    { "ifindex", 2, U32 },
	    { "totalEnterQueueBufferCount", 3, U64 },
	    { "totalReadySendDuration", 4, U64 },
	    { "totalNetDeviceSendDuration", 5, U64 } } },
	{ &skywalking__v3__access_log_kernel_read_operation__descriptor,
	  SW "AccessLogKernelReadOperation",
	  { { "startTime", 1, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "endTime", 2, MSG, 0, NULL, SW "EBPFTimestamp" },
	    { "syscall", 3, ENUM, 0, NULL, SW "AccessLogKernelReadSyscall" },
	    { "l2Metrics", 4, MSG, 0, NULL, SW "AccessLogKernelReadL2Metrics" },
	    { "l3Metrics", 5, MSG, 0, NULL, SW "AccessLogKernelReadL3Metrics" },
	    { "l4Metrics", 6, MSG, 0, NULL, SW "AccessLogKernelReadL4Metrics" } } },
	{ &skywalking__v3__access_log_kernel_read_l2_metrics__descriptor,
	  SW "AccessLogKernelReadL2Metrics",
	  { { "ifindex", 1, U32 },
	    { "totalPackageCount", 2, U32 },
	    { "totalPackageSize", 3, U64 },
	    { "totalPackageToQueueDuration", 4, U64 },
	    { "totalRcvPackageFromQueueDuration", 5, U64 } } },
	{ &skywalking__v3__access_log_kernel_read_l3_metrics__descriptor,
	  SW "AccessLogKernelReadL3Metrics",
	  { { "totalDuration", 1, U64 },
	    { "totalRecvDuration", 2, U64 },
	    { "totalLocalDuration", 3, U64 },
	    { "totalNetFilterCount", 4, U64 },
	    { "totalNetFilterDuration", 5, U64 } } },
	{ &skywalking__v3__access_log_kernel_read_l4_metrics__descriptor,
	  SW "AccessLogKernelReadL4Metrics",
	  { { "totalDuration", 1, U64 } } },
	{ &skywalking__v3__ebpftimestamp__descriptor,
	  SW "EBPFTimestamp",
	  { { "offset", 1, MSG, 0, "timestamp", SW "EBPFOffsetTimestamp" } } },
	{ &skywalking__v3__ebpfoffset_timestamp__descriptor,
	  SW "EBPFOffsetTimestamp",
	  { { "offset", 1, U64 } } },
	{ &skywalking__v3__ebpfaccess_log_downstream__descriptor,
	  SW "EBPFAccessLogDownstream",
	  { { 0 } } },
};

Test(wire, fields)
{
	for (size_t i = 0; i < N(messages); i++) {
		const struct message *m = &messages[i];
		unsigned n = 0;

		cr_assert_str_eq(m->desc->name, m->name);
		cr_assert_str_eq(m->desc->package_name, "skywalking.v3");
		for (; n < N(m->fields) && m->fields[n].name; n++) {
			const struct field *w = &m->fields[n];
			const ProtobufCFieldDescriptor *f =
				protobuf_c_message_descriptor_get_field_by_name(m->desc, w->name);

			cr_assert_not_null(f, "%s.%s missing", m->name, w->name);
			cr_assert_eq(f->id, w->id, "%s.%s number", m->name, w->name);
			cr_assert_eq(f->type, w->type, "%s.%s type", m->name, w->name);
			cr_assert_eq(f->label == PROTOBUF_C_LABEL_REPEATED, w->repeated,
				     "%s.%s repeated", m->name, w->name);
			cr_assert_eq(!!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF), w->oneof != NULL,
				     "%s.%s oneof", m->name, w->name);
			if (w->type == MSG)
				cr_assert_str_eq(((const ProtobufCMessageDescriptor *)f->descriptor)
							 ->name,
						 w->of, "%s.%s", m->name, w->name);
			if (w->type == ENUM)
				cr_assert_str_eq(((const ProtobufCEnumDescriptor *)f->descriptor)
							 ->name,
						 w->of, "%s.%s", m->name, w->name);
		}
		cr_assert_eq(m->desc->n_fields, n, "%s has %u fields, the reference %u", m->name,
			     m->desc->n_fields, n);
	}
}

/* The access log's enums, value by value (reference access-log.md). */
Test(wire, access_log_enums)
{
	static const struct {
		const ProtobufCEnumDescriptor *d;
		const char *names[10];
	} e[] = {
		{ &skywalking__v3__detect_point__descriptor, { "client", "server", "proxy" } },
		{ &skywalking__v3__access_log_connection_tlsmode__descriptor, { "Plain", "TLS" } },
		{ &skywalking__v3__access_log_protocol_type__descriptor,
		  { "TCP", "HTTP_1", "HTTP_2" } },
		{ &skywalking__v3__access_log_httpprotocol_version__descriptor,
		  { "HTTP1", "HTTP2" } },
		{ &skywalking__v3__access_log_trace_info_provider__descriptor,
		  { "Zipkin", "SkyWalking" } },
		{ &skywalking__v3__access_log_httpprotocol_request_method__descriptor,
		  { "Get", "Post", "Put", "Delete", "Head", "Patch", "Options", "Trace",
		    "Connect" } },
		{ &skywalking__v3__access_log_kernel_write_syscall__descriptor,
		  { "Write", "Writev", "Send", "SendTo", "SendMsg", "SendMmsg", "SendFile",
		    "SendFile64" } },
		{ &skywalking__v3__access_log_kernel_read_syscall__descriptor,
		  { "Read", "Readv", "Recv", "RecvFrom", "RecvMsg", "RecvMmsg" } },
		{ &skywalking__v3__ztunnel_attachment_environment_detect_by__descriptor,
		  { "ZTUNNEL_OUTBOUND_FUNC", "ZTUNNEL_INBOUND_FUNC" } },
		{ &skywalking__v3__ztunnel_attachment_security_policy__descriptor,
		  { "MTLS", "NONE" } },
	};

	for (size_t i = 0; i < N(e); i++) {
		unsigned n = 0;

		for (; n < N(e[i].names) && e[i].names[n]; n++) {
			const ProtobufCEnumValue *v =
				protobuf_c_enum_descriptor_get_value_by_name(e[i].d, e[i].names[n]);

			cr_assert_not_null(v, "%s.%s", e[i].d->name, e[i].names[n]);
			cr_assert_eq(v->value, (int)n, "%s.%s", e[i].d->name, e[i].names[n]);
		}
		cr_assert_eq(e[i].d->n_values, n, "%s", e[i].d->name);
	}
}
