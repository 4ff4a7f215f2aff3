// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/output/upload.c and the backend side of shipper/task.c: the batches of a flush decoded back
 * with protobuf-c and checked field by field against the counts given; then the upload thread
 * against the fake OAP (tests/oap/fake_oap.py): order, an OAP restart on the same port, and
 * the shipper's seccomp filter around it all.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/msg.h"
#include "common/privdrop.h"
#include "common/util.h"
#include "ebpf/profiling/Profile.pb-c.h"
#include "language-agent/Meter.pb-c.h"
#include "policy/policy.h"
#include "shipper/output/spool.h"
#include "shipper/stacks/symbolize.h"
#include "shipper/task.h"
#include "shipper/output/upload.h"
#include "tests/unit/listening.h"

#define PYTHON "/usr/bin/python3"
#ifndef FAKE_OAP
#define FAKE_OAP "tests/oap/fake_oap.py"
#endif

typedef Skywalking__V3__EBPFProfilingData pdata;

/* Functions with known names for the user stack; their addresses are in this binary. */
__attribute__((noinline, used)) void upload_test_leaf(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}
__attribute__((noinline, used)) void upload_test_mid(void)
{
	upload_test_leaf();
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}
__attribute__((noinline, used)) void upload_test_outer(void)
{
	upload_test_mid();
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static struct symbolizer *sym;
static struct ship_task *task;

static void task_begin(uint32_t type)
{
	struct task_spec spec = { .task_id = 7, .type = type, .period_us = 9000, .npids = 1 };

	spec.pids[0] = getpid();
	sym = symbolizer__new(&fd_opener_direct, 0);
	cr_assert_not_null(sym);
	task = ship_task__new(7);
	cr_assert_not_null(task);
	cr_assert_eq(ship_task__begin(task, &spec, sym), 0);
}

static void task_end(void)
{
	ship_task__free(task);
	symbolizer__free(sym);
}

static void set_backend(void)
{
	struct msg_output_backend be = { .task_id = 7,
					 .type = task->spec.type,
					 .start_unix_ms = 1700000000123ull };

	snprintf(be.sw_task_id, sizeof(be.sw_task_id), "sw-task-1");
	snprintf(be.process_id[0], sizeof(be.process_id[0]), "sw-proc-9");
	be.nprocs = 1;
	cr_assert_eq(ship_task__set_backend(task, &be), 0);
}

/* Stacks: user id 5 = outer > mid > leaf (innermost first, as the kernel gives them), kernel
 * id 6 = two kernel addresses, user id 8 = one address in no mapping. */
static uint64_t kaddr[2];

static void send_stacks(void)
{
	struct ship_stack st[3] = { { .id = 5, .kind = 1, .nr = 3 },
				    { .id = 6, .kind = 0, .nr = 2 },
				    { .id = 8, .kind = 1, .nr = 1 } };

	st[0].ips[0] = (uint64_t)(uintptr_t)&upload_test_leaf + 2;
	st[0].ips[1] = (uint64_t)(uintptr_t)&upload_test_mid + 6;
	st[0].ips[2] = (uint64_t)(uintptr_t)&upload_test_outer + 6;
	kaddr[0] = 0xffffffff81000100ull;
	kaddr[1] = 0xffffffff81000200ull;
	st[1].ips[0] = kaddr[0];
	st[1].ips[1] = kaddr[1];
	st[2].ips[0] = 0x10; /* never mapped */
	cr_assert_eq(ship_task__stacks(task, st, 3), 0);
}

static void send_counts(const struct ship_count *c, size_t n)
{
	struct ship_counts_hdr h = { .task_id = 7 };
	struct ship_count cc[16];

	for (size_t i = 0; i < n; i++) {
		cc[i] = c[i];
		cc[i].tgid = getpid();
	}
	cr_assert_eq(ship_task__counts(task, &h, cc, n, sym), 0);
}

/* Every message of b, unpacked. */
static size_t unpack_all(const struct spool_batch *b, pdata **out, size_t max)
{
	const uint8_t *msg;
	size_t off = 0, len, n = 0;

	while (spool_batch__next(b, &off, &msg, &len) == 1) {
		cr_assert_lt(n, max);
		out[n] = skywalking__v3__ebpfprofiling_data__unpack(NULL, len, msg);
		cr_assert_not_null(out[n], "message %zu does not decode", n);
		n++;
	}
	cr_assert_eq(n, b->nmsgs);
	return n;
}

static void free_all(pdata **m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		skywalking__v3__ebpfprofiling_data__free_unpacked(m[i], NULL);
}

static void expect_user_stack(const Skywalking__V3__EBPFProfilingStackMetadata *s)
{
	cr_assert_eq(s->stacktype, SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE);
	cr_assert_eq(s->stackid, 5);
	cr_assert_eq(s->n_stacksymbols, 3);
	cr_assert_str_eq(s->stacksymbols[0], "upload_test_leaf", "innermost first");
	cr_assert_str_eq(s->stacksymbols[1], "upload_test_mid");
	cr_assert_str_eq(s->stacksymbols[2], "upload_test_outer");
}

static void expect_kernel_stack(const Skywalking__V3__EBPFProfilingStackMetadata *s)
{
	char want[512];

	cr_assert_eq(s->stacktype, SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_KERNEL_SPACE);
	cr_assert_eq(s->stackid, 6);
	cr_assert_eq(s->n_stacksymbols, 2);
	for (int i = 0; i < 2; i++) {
		symbolizer__kernel(sym, kaddr[i], want, sizeof(want));
		cr_assert_str_eq(s->stacksymbols[i], want,
				 "kernel frame %d: '%s', the symbolizer "
				 "says '%s'",
				 i, s->stacksymbols[i], want);
		cr_assert_null(strstr(s->stacksymbols[i], "_[k]"), "no folded-format suffix");
	}
}

TestSuite(upload, .timeout = 90);

Test(upload, on_cpu_flush_decoded_field_by_field, .init = NULL)
{
	struct ship_count f1[] = { { .ustack = 5, .kstack = 6, .value = 7 },
				   { .ustack = 5, .kstack = -1, .value = 3 },
				   { .ustack = -1, .kstack = 6, .value = 2 },
				   { .ustack = 8, .kstack = -1, .value = 1 } };
	struct ship_count f2[] = { { .ustack = 5, .kstack = 6, .value = 4 } };
	struct spool_batch b1, b2, none;
	pdata *m[8];
	uint64_t t0 = now_unix_ms();
	size_t n;

	task_begin(TASK_ON_CPU);
	send_stacks();
	set_backend();
	send_counts(f1, 4);
	send_counts(f2, 1);
	cr_assert_eq(ship_task__next_batch(task, &b1), 1);
	cr_assert_eq(ship_task__next_batch(task, &b2), 1);
	cr_assert_eq(ship_task__next_batch(task, &none), 0, "one batch per flush");

	n = unpack_all(&b1, m, 8);
	cr_assert_eq(n, 4, "one message per count");
	/* The first message, and only it, carries the task. */
	cr_assert_not_null(m[0]->task);
	cr_assert_str_eq(m[0]->task->taskid, "sw-task-1");
	cr_assert_str_eq(m[0]->task->processid, "sw-proc-9");
	cr_assert_eq(m[0]->task->profilingstarttime, 1700000000123ll);
	cr_assert_geq(m[0]->task->currenttime, (int64_t)t0);
	cr_assert_leq(m[0]->task->currenttime, (int64_t)now_unix_ms());
	for (size_t i = 1; i < n; i++)
		cr_assert_null(m[i]->task, "message %zu carries the task", i);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(m[i]->profiling_case,
			     SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU);
	/* Kernel stack first, then user. */
	cr_assert_eq(m[0]->oncpu->n_stacks, 2);
	expect_kernel_stack(m[0]->oncpu->stacks[0]);
	expect_user_stack(m[0]->oncpu->stacks[1]);
	cr_assert_eq(m[0]->oncpu->dumpcount, 7);
	/* An absent stack is left out. */
	cr_assert_eq(m[1]->oncpu->n_stacks, 1);
	expect_user_stack(m[1]->oncpu->stacks[0]);
	cr_assert_eq(m[1]->oncpu->dumpcount, 3);
	cr_assert_eq(m[2]->oncpu->n_stacks, 1);
	expect_kernel_stack(m[2]->oncpu->stacks[0]);
	cr_assert_eq(m[2]->oncpu->dumpcount, 2);
	/* A frame that cannot be named is kept, as the symbolizer names it. */
	cr_assert_eq(m[3]->oncpu->n_stacks, 1);
	cr_assert_eq(m[3]->oncpu->stacks[0]->stackid, 8);
	cr_assert_eq(m[3]->oncpu->stacks[0]->n_stacksymbols, 1);
	cr_assert_str_eq(m[3]->oncpu->stacks[0]->stacksymbols[0], "[unknown]");
	free_all(m, n);

	n = unpack_all(&b2, m, 8);
	cr_assert_eq(n, 1);
	cr_assert_not_null(m[0]->task, "every stream starts with the task");
	cr_assert_eq(m[0]->oncpu->dumpcount, 4);
	free_all(m, n);

	/* dumpCounts are the flush deltas: they add up to what the task took. */
	cr_assert_eq(b1.samples, 7 + 3 + 2 + 1);
	cr_assert_eq(b2.samples, 4);
	cr_assert_eq(task->up_taken, 17);
	cr_assert_eq(task->samples, 17);
	free(b1.data);
	free(b2.data);
	task_end();
}

Test(upload, off_cpu_switches_and_nanoseconds)
{
	struct ship_count f[] = { { .ustack = 5, .kstack = 6, .value = 5000000, .value2 = 3 },
				  { .ustack = 5, .kstack = -1, .value = 1500, .value2 = 1 } };
	struct spool_batch b;
	pdata *m[4];
	size_t n;

	task_begin(TASK_OFF_CPU);
	send_stacks();
	set_backend();
	send_counts(f, 2);
	cr_assert_eq(ship_task__next_batch(task, &b), 1);
	n = unpack_all(&b, m, 4);
	cr_assert_eq(n, 2);
	cr_assert_eq(m[0]->profiling_case, SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU);
	cr_assert_eq(m[0]->offcpu->switchcount, 3);
	cr_assert_eq(m[0]->offcpu->duration, 5000000, "duration in ns, as the worker counts it");
	cr_assert_eq(m[0]->offcpu->n_stacks, 2);
	expect_kernel_stack(m[0]->offcpu->stacks[0]);
	expect_user_stack(m[0]->offcpu->stacks[1]);
	cr_assert_eq(m[1]->offcpu->switchcount, 1);
	cr_assert_eq(m[1]->offcpu->duration, 1500);
	cr_assert_eq(b.samples, 4, "OFF_CPU batches count switches");
	free_all(m, n);
	free(b.data);
	task_end();
}

Test(upload, flushes_before_the_output_is_known_wait_for_it)
{
	struct ship_count f[] = { { .ustack = 5, .kstack = -1, .value = 2 } };
	struct spool_batch b;
	pdata *m[2];

	task_begin(TASK_ON_CPU);
	send_stacks();
	send_counts(f, 1);
	send_counts(f, 1);
	cr_assert_eq(ship_task__next_batch(task, &b), 0, "no identity yet");
	set_backend();
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ship_task__next_batch(task, &b), 1);
		cr_assert_eq(unpack_all(&b, m, 2), 1);
		cr_assert_str_eq(m[0]->task->taskid, "sw-task-1");
		free_all(m, 1);
		free(b.data);
	}
	cr_assert_eq(ship_task__next_batch(task, &b), 0);
	task_end();
}

/*
 * One worker for a task over several process ids: each flush goes out as one stream per process
 * id, the pids of one id joined in it, whether the identity came before the flushes or after.
 */
Test(upload, one_stream_per_process_id_of_a_flush)
{
	struct task_spec spec = { .task_id = 7, .type = TASK_ON_CPU, .period_us = 9000, .npids = 3 };
	struct msg_output_backend be = { .task_id = 7,
					 .type = TASK_ON_CPU,
					 .nprocs = 2,
					 .start_unix_ms = 1700000000123ull,
					 .npids = 3 };
	struct ship_counts_hdr h = { .task_id = 7 };
	struct ship_count c[3] = { { .ustack = -1, .kstack = 6, .value = 5 },
				   { .ustack = -1, .kstack = 6, .value = 7 },
				   { .ustack = -1, .kstack = 6, .value = 11 } };
	uint64_t per_proc[2] = { 0 }, total = 0;
	struct spool_batch b;
	pdata *m[8];

	/* Pids 1 and getppid() are the process id "pa", getpid() is "pb". */
	spec.pids[0] = 1;
	spec.pids[1] = getpid();
	spec.pids[2] = getppid();
	sym = symbolizer__new(&fd_opener_direct, 0);
	task = ship_task__new(7);
	cr_assert_eq(ship_task__begin(task, &spec, sym), 0);
	send_stacks();
	for (int i = 0; i < 3; i++)
		c[i].tgid = spec.pids[i];
	/* The first flush before the identity is known, the second after. */
	cr_assert_eq(ship_task__counts(task, &h, c, 3, sym), 0);
	snprintf(be.sw_task_id, sizeof(be.sw_task_id), "sw-task-1");
	snprintf(be.process_id[0], sizeof(be.process_id[0]), "pa");
	snprintf(be.process_id[1], sizeof(be.process_id[1]), "pb");
	be.pid_proc[0] = (struct msg_bk_pid){ .pid = 1, .proc = 0 };
	be.pid_proc[1] = (struct msg_bk_pid){ .pid = getpid(), .proc = 1 };
	be.pid_proc[2] = (struct msg_bk_pid){ .pid = getppid(), .proc = 0 };
	cr_assert_eq(ship_task__set_backend(task, &be), 0);
	cr_assert_eq(ship_task__counts(task, &h, c, 3, sym), 0);
	for (int flush = 0; flush < 2; flush++) {
		int seen[2] = { 0, 0 };

		for (int k = 0; k < 2; k++) {
			size_t n;
			int proc;

			cr_assert_eq(ship_task__next_batch(task, &b), 1, "flush %d stream %d",
				     flush, k);
			n = unpack_all(&b, m, 8);
			cr_assert_not_null(m[0]->task);
			cr_assert_str_eq(m[0]->task->taskid, "sw-task-1");
			proc = !strcmp(m[0]->task->processid, "pb");
			cr_assert(proc || !strcmp(m[0]->task->processid, "pa"), "%s",
				  m[0]->task->processid);
			cr_assert_eq(seen[proc]++, 0, "two streams of %s in one flush",
				     m[0]->task->processid);
			/* pa: pids 1 and getppid(), one message each; pb: getpid()'s one. */
			cr_assert_eq(n, proc ? 1u : 2u);
			for (size_t i = 1; i < n; i++)
				cr_assert_null(m[i]->task, "only a stream's first message has it");
			per_proc[proc] += b.samples;
			total += b.samples;
			free_all(m, n);
			free(b.data);
		}
	}
	cr_assert_eq(ship_task__next_batch(task, &b), 0);
	cr_assert_eq(per_proc[0], 2 * (5 + 11));
	cr_assert_eq(per_proc[1], 2 * 7);
	cr_assert_eq(total, task->up_taken);
	task_end();
}

Test(upload, file_output_builds_no_batches)
{
	struct ship_count f[] = { { .ustack = 5, .kstack = -1, .value = 2 } };
	struct msg_output_backend be = { .task_id = 7, .type = TASK_ON_CPU };
	struct spool_batch b;

	task_begin(TASK_ON_CPU);
	send_stacks();
	task->out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	send_counts(f, 1);
	cr_assert_eq(task->npending, 0);
	snprintf(be.sw_task_id, sizeof(be.sw_task_id), "x");
	snprintf(be.process_id[0], sizeof(be.process_id[0]), "y");
	be.nprocs = 1;
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO, "a task has one output");
	cr_assert_eq(ship_task__next_batch(task, &b), 0);
	task_end();
}

Test(upload, backend_identity_checked)
{
	struct msg_output_backend be = { .task_id = 7, .type = TASK_ON_CPU };

	task_begin(TASK_ON_CPU);
	memset(be.sw_task_id, 'a', sizeof(be.sw_task_id)); /* no NUL */
	snprintf(be.process_id[0], sizeof(be.process_id[0]), "p");
	be.nprocs = 1;
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO);
	snprintf(be.sw_task_id, sizeof(be.sw_task_id), "t");
	be.process_id[0][0] = '\0';
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO);
	/* Process ids: some, each named, and every pid's one of them. */
	snprintf(be.process_id[0], sizeof(be.process_id[0]), "p");
	be.nprocs = 0;
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO);
	be.nprocs = ROVER_MAX_PIDS + 1;
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO);
	be.nprocs = 2;
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO, "process id 1 is empty");
	snprintf(be.process_id[1], sizeof(be.process_id[1]), "q");
	be.npids = 1;
	be.pid_proc[0] = (struct msg_bk_pid){ .pid = 5, .proc = 2 };
	cr_assert_eq(ship_task__set_backend(task, &be), -EPROTO, "pid 5 names no process id");
	be.pid_proc[0].proc = 1;
	cr_assert_eq(ship_task__set_backend(task, &be), 0);
	task_end();
}

Test(upload, finish_without_counts_sends_the_metadata)
{
	struct spool_batch b = { 0 };
	struct upload_meta md = { .task_id = "t", .process_id = "p", .start_ms = 1, .now_ms = 2 };
	pdata *m[1];

	cr_assert_eq(upload__finish(&b, &md), 0);
	cr_assert_eq(unpack_all(&b, m, 1), 1);
	cr_assert_str_eq(m[0]->task->processid, "p");
	cr_assert_eq(m[0]->task->currenttime, 2);
	free_all(m, 1);
	free(b.data);
}

/* --- the upload thread against the fake OAP ------------------------------------------- */

static char tmpdir[64], rec_path[128], spool_dir[128];
static pid_t oap_pid = -1;

static void net_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rover-upload.XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(rec_path, sizeof(rec_path), "%s/record.jsonl", tmpdir);
	snprintf(spool_dir, sizeof(spool_dir), "%s/spool", tmpdir);
}

static void oap_stop(void)
{
	if (oap_pid > 0) {
		kill(oap_pid, SIGTERM);
		waitpid(oap_pid, NULL, 0);
	}
	oap_pid = -1;
}

static void net_teardown(void)
{
	char cmd[128];

	oap_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	(void)!system(cmd);
}

/* Starts the fake OAP on port (0: any), failing the first fail_first calls; returns its port. */
static int oap_start(int port, int fail_first)
{
	char port_arg[16], fail_arg[16];
	const char *argv[] = { PYTHON,	 FAKE_OAP,	 "--port", port_arg, "--record",
			       rec_path, "--fail-first", fail_arg, NULL };

	snprintf(port_arg, sizeof(port_arg), "%d", port);
	snprintf(fail_arg, sizeof(fail_arg), "%d", fail_first);
	return spawn_listening(argv, &oap_pid);
}

/* Batch number k of task "t-k": k messages, the i-th with dumpCount i + 1 (a user stack). */
static struct spool_batch numbered_batch(int k)
{
	static char *names[] = { "main", "work", "leaf" };
	struct upload_stack us = { .id = 3, .nr = 3, .names = names };
	struct spool_batch b = { .task_id = (uint64_t)k };
	struct upload_meta m = { .process_id = "p", .start_ms = 1000, .now_ms = 2000 };
	char id[32];

	snprintf(id, sizeof(id), "t-%d", k);
	m.task_id = id;
	for (int i = 0; i < k; i++)
		cr_assert_eq(upload__add(&b, TASK_ON_CPU, NULL, &us, (uint64_t)i + 1, 0), 0);
	cr_assert_eq(upload__finish(&b, &m), 0);
	return b;
}

static uint64_t numbered_samples(int k)
{
	return (uint64_t)k * (k + 1) / 2;
}

/* Waits (up to ms) until the spool has sent n batches. 0 or -ETIMEDOUT. */
static int wait_sent(struct spool *sp, uint64_t n, uint64_t ms)
{
	struct timespec tick = { .tv_nsec = 20 * 1000000L };

	for (uint64_t end = now_mono_ms() + ms; now_mono_ms() < end; nanosleep(&tick, NULL)) {
		struct spool_stats st;

		spool__stats(sp, &st);
		if (st.sent_batches >= n)
			return 0;
	}
	return -ETIMEDOUT;
}

#include <json-c/json.h>

/*
 * The collectProfilingData streams recorded, in order: the task number of each stream (from
 * the taskId of its first message) into order[], and the sum of every dumpCount. A stream
 * whose first message has no task, or a later one that has, fails.
 */
static int recorded_streams(int *order, int max, uint64_t *ret_dump)
{
	FILE *f = fopen(rec_path, "r");
	char line[65536];
	int n = 0;

	*ret_dump = 0;
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		json_object *o = json_tokener_parse(line), *v, *msg, *task, *on;

		cr_assert_not_null(o);
		if (!json_object_object_get_ex(o, "method", &v) ||
		    strcmp(json_object_get_string(v), "collectProfilingData")) {
			json_object_put(o);
			continue;
		}
		cr_assert(json_object_object_get_ex(o, "message", &msg));
		cr_assert(json_object_object_get_ex(o, "index", &v));
		if (json_object_get_int(v) == 0) {
			cr_assert(json_object_object_get_ex(msg, "task", &task),
				  "stream without task");
			cr_assert(json_object_object_get_ex(task, "taskId", &v));
			cr_assert_lt(n, max);
			order[n++] = atoi(json_object_get_string(v) + 2);
		} else {
			cr_assert_not(json_object_object_get_ex(msg, "task", &task),
				      "task in a later message");
		}
		if (json_object_object_get_ex(msg, "onCPU", &on) &&
		    json_object_object_get_ex(on, "dumpCount", &v))
			*ret_dump += (uint64_t)json_object_get_int64(v);
		json_object_put(o);
	}
	fclose(f);
	return n;
}

Test(upload, oap_restart_on_the_same_port_loses_nothing, .init = net_setup, .fini = net_teardown)
{
	struct spool_opts so = { .mem_bytes = 16 << 20 };
	struct spool *sp = spool__new(&so);
	struct uploader_opts uo = { .spool = sp, .backoff_min_ms = 100, .backoff_max_ms = 400 };
	struct uploader *u;
	struct uploader_stats us;
	struct spool_stats st;
	char addr[64];
	uint64_t queued = 0, dumped;
	int port, order[32], n;

	cr_assert_not_null(sp);
	if (getenv("UPLOAD_TEST_DEBUG"))
		log_set_level(LOG_DEBUG);
	port = oap_start(0, 0);
	snprintf(addr, sizeof(addr), "localhost:%d", port);
	uo.oap = (struct oap_opts){ .addr = addr, .deadline_ms = 3000 };
	u = uploader__start(&uo);
	cr_assert_not_null(u);
	for (int k = 1; k <= 5; k++) {
		struct spool_batch b = numbered_batch(k);

		cr_assert_eq(spool__put(sp, &b), 0);
		queued += numbered_samples(k);
	}
	cr_assert_eq(wait_sent(sp, 5, 20000), 0, "5 batches not sent to a live OAP");

	/* The OAP goes away: batches wait, the thread fails and backs off. */
	oap_stop();
	for (int k = 6; k <= 10; k++) {
		struct spool_batch b = numbered_batch(k);

		cr_assert_eq(spool__put(sp, &b), 0);
		queued += numbered_samples(k);
	}
	for (uint64_t end = now_mono_ms() + 20000; now_mono_ms() < end;) {
		uploader__stats(u, &us);
		if (us.streams_failed)
			break;
		poll(NULL, 0, 20);
	}
	cr_assert_gt(us.streams_failed, 0, "no failed stream while the OAP was down");
	spool__stats(sp, &st);
	cr_assert_eq(st.sent_batches, 5);
	cr_assert_eq(st.batches, 5, "what was put while the OAP was down waits");

	/* Back on the same port: everything arrives, in order, once. */
	cr_assert_eq(oap_start(port, 0), port);
	cr_assert_eq(wait_sent(sp, 10, 30000), 0, "batches not sent after the OAP came back");
	cr_assert_eq(uploader__stop(u, 2000), 1);
	uploader__stats(u, &us);
	cr_assert_eq(us.streams_ok, 10);
	cr_assert(us.reachable);
	uploader__free(u);
	oap_stop(); /* the recording is complete once the OAP has exited */

	n = recorded_streams(order, 32, &dumped);
	cr_assert_eq(n, 10, "10 streams recorded, got %d", n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(order[i], i + 1, "stream %d is batch %d", i, order[i]);
	cr_assert_eq(dumped, queued, "sum of dumpCount recorded %llu != samples queued %llu",
		     (unsigned long long)dumped, (unsigned long long)queued);
	spool__stats(sp, &st);
	cr_assert_eq(st.sent_samples, queued);
	spool__free(sp);
}

Test(upload, each_kind_has_its_rpc)
{
	cr_assert_str_eq(upload__method(SPOOL_PROFILE),
			 "/skywalking.v3.EBPFProfilingService/collectProfilingData");
	cr_assert_str_eq(upload__method(SPOOL_METERS),
			 "/skywalking.v3.MeterReportService/collectBatch");
	cr_assert_str_eq(upload__method(SPOOL_LOGS), "/skywalking.v3.LogReportService/collect");
	cr_assert_str_eq(upload__method(SPOOL_EVENTS),
			 "/skywalking.v3.SpanAttachedEventReportService/collect");
	cr_assert_null(upload__method(SPOOL_KIND_MAX));
}

/* A METERS batch of one MeterDataCollection: a single value named name, for service svc. */
static struct spool_batch meters_batch(const char *name, double value)
{
	Skywalking__V3__MeterDataCollection c = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
	Skywalking__V3__MeterData d = SKYWALKING__V3__METER_DATA__INIT, *pd = &d;
	Skywalking__V3__MeterSingleValue v = SKYWALKING__V3__METER_SINGLE_VALUE__INIT;
	Skywalking__V3__Label l[2] = { SKYWALKING__V3__LABEL__INIT, SKYWALKING__V3__LABEL__INIT };
	Skywalking__V3__Label *pl[2] = { &l[0], &l[1] };
	struct spool_batch b = { .task_id = 77, .kind = SPOOL_METERS };
	uint8_t *p;

	l[0].name = "client_process_id";
	l[0].value = "p1";
	l[1].name = "side";
	l[1].value = "client";
	v.name = (char *)name;
	v.labels = pl;
	v.n_labels = 2;
	v.value = value;
	d.metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
	d.singlevalue = &v;
	d.service = "svc";
	d.serviceinstance = "inst";
	d.timestamp = 1700000000000;
	c.meterdata = &pd;
	c.n_meterdata = 1;
	cr_assert_eq(spool_batch__reserve(&b, protobuf_c_message_get_packed_size(&c.base), &p), 0);
	protobuf_c_message_pack(&c.base, p);
	return b;
}

/* Batches of different kinds, in one spool: each goes as one stream of its own rpc, in order. */
Test(upload, batches_go_to_the_rpc_of_their_kind, .init = net_setup, .fini = net_teardown)
{
	struct spool_opts so = { .dir = spool_dir, .mem_bytes = 64 << 10, .disk_bytes = 1 << 20 };
	struct spool *sp = spool__new(&so);
	struct uploader_opts uo = { .spool = sp, .backoff_min_ms = 100, .backoff_max_ms = 400 };
	static const char *const want[] = { "collectProfilingData", "collectBatch",
					    "collectProfilingData", "collectBatch" };
	struct uploader *u;
	struct spool_batch b;
	char addr[64], line[65536];
	int port, n = 0;
	FILE *f;

	cr_assert_not_null(sp);
	/* Put while no OAP listens, and kept across a restart of the spool: from disk too. */
	b = numbered_batch(1);
	cr_assert_eq(spool__put(sp, &b), 0);
	b = meters_batch("rover_net_p_write_counter", 42);
	cr_assert_eq(spool__put(sp, &b), 0);
	b = numbered_batch(2);
	cr_assert_eq(spool__put(sp, &b), 0);
	b = meters_batch("rover_net_p_read_counter", 7.5);
	cr_assert_eq(spool__put(sp, &b), 0);
	cr_assert_eq(spool__persist(sp), 0);
	spool__free(sp);
	sp = spool__new(&so);
	cr_assert_not_null(sp);
	uo.spool = sp;

	port = oap_start(0, 0);
	snprintf(addr, sizeof(addr), "localhost:%d", port);
	uo.oap = (struct oap_opts){ .addr = addr, .deadline_ms = 3000 };
	u = uploader__start(&uo);
	cr_assert_not_null(u);
	cr_assert_eq(wait_sent(sp, 4, 20000), 0, "4 batches not sent");
	cr_assert_eq(uploader__stop(u, 2000), 1);
	uploader__free(u);
	oap_stop();

	f = fopen(rec_path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		json_object *o = json_tokener_parse(line), *v, *msg, *md, *sv;
		const char *method;

		cr_assert_not_null(o);
		cr_assert(json_object_object_get_ex(o, "method", &v));
		method = json_object_get_string(v);
		cr_assert(json_object_object_get_ex(o, "index", &v));
		if (json_object_get_int(v) > 0) {
			/* numbered_batch(2)'s second message, in the same stream as its first. */
			cr_assert_str_eq(method, "collectProfilingData");
			json_object_put(o);
			continue;
		}
		cr_assert_lt(n, 4);
		cr_assert_str_eq(method, want[n], "stream %d", n);
		if (!strcmp(method, "collectBatch")) {
			cr_assert(json_object_object_get_ex(o, "message", &msg));
			cr_assert(json_object_object_get_ex(msg, "meterData", &md));
			md = json_object_array_get_idx(md, 0);
			cr_assert(json_object_object_get_ex(md, "service", &v));
			cr_assert_str_eq(json_object_get_string(v), "svc");
			cr_assert(json_object_object_get_ex(md, "singleValue", &sv));
			cr_assert(json_object_object_get_ex(sv, "name", &v));
			cr_assert_str_eq(json_object_get_string(v),
					 n == 1 ? "rover_net_p_write_counter"
						: "rover_net_p_read_counter");
			cr_assert(json_object_object_get_ex(sv, "labels", &v));
			cr_assert_eq(json_object_array_length(v), 2);
		}
		n++;
		json_object_put(o);
	}
	fclose(f);
	cr_assert_eq(n, 4);
	spool__free(sp);
}

/*
 * In a child under the shipper's filter, set up as shipper/main.c does (spool and thread
 * before the filter): batches 1 and 2 in memory, 3 on disk, a first stream refused by the
 * OAP (a new channel is made under the filter), then the thread stopped, 4 and 5 put (4 in
 * memory, 5 on disk) and the memory written to disk as at SIGTERM.
 */
static int sandboxed_upload(int port)
{
	struct spool_batch b[6];
	struct spool_opts so = { .dir = spool_dir,
				 .disk_bytes = 1 << 20,
				 .fixed_dirfd = SPOOL_DIR_FD };
	struct spool *sp;
	struct uploader_opts uo = { .backoff_min_ms = 100, .backoff_max_ms = 400 };
	struct uploader *u;
	struct uploader_stats us;
	struct spool_stats st;
	char addr[64];

	for (int k = 1; k <= 5; k++)
		b[k] = numbered_batch(k);
	so.mem_bytes = b[1].len + b[2].len + b[3].len / 2;
	sp = spool__new(&so);
	if (!sp)
		return 10;
	snprintf(addr, sizeof(addr), "localhost:%d", port);
	uo.spool = sp;
	uo.oap = (struct oap_opts){ .addr = addr, .deadline_ms = 3000 };
	u = uploader__start(&uo);
	if (!u)
		return 11;
	if (sandbox_apply(&shipper_policy))
		return 12;
	for (int k = 1; k <= 3; k++)
		if (spool__put(sp, &b[k]))
			return 13;
	spool__stats(sp, &st);
	if (wait_sent(sp, 3, 20000))
		return 14;
	if (st.disk_batches < 1)
		return 15;
	uploader__stats(u, &us);
	if (us.streams_failed != 1)
		return 16;
	if (uploader__stop(u, 2000) != 1)
		return 17;
	uploader__free(u);
	for (int k = 4; k <= 5; k++)
		if (spool__put(sp, &b[k]))
			return 18;
	spool__stats(sp, &st);
	if (st.disk_batches != 1)
		return 19;
	if (spool__persist(sp))
		return 20;
	spool__stats(sp, &st);
	if (st.disk_batches != 2)
		return 21;
	spool__free(sp);
	return 0;
}

Test(upload, under_the_shipper_filter_with_a_disk_spool, .init = net_setup, .fini = net_teardown)
{
	int port = oap_start(0, 1), status, order[8], n;
	uint64_t dumped;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(sandboxed_upload(port));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_not(WIFSIGNALED(status), "killed by signal %d (a call the filter forbids)",
		      WTERMSIG(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "failed at step %d", WEXITSTATUS(status));
	oap_stop();
	n = recorded_streams(order, 8, &dumped);
	cr_assert_eq(n, 3);
	cr_assert_eq(dumped, 1 + 3 + 6);

	/* The shipper restarted: the two batches written at the stop come back, oldest first. */
	{
		struct spool_opts so = { .dir = spool_dir,
					 .mem_bytes = 1 << 20,
					 .disk_bytes = 1 << 20 };
		struct spool *sp = spool__new(&so);
		struct spool_batch b;

		cr_assert_not_null(sp);
		cr_assert_eq(spool__take(sp, 0, &b), 0);
		cr_assert_eq(b.task_id, 4);
		spool__done(sp, b.seq);
		cr_assert_eq(spool__take(sp, 0, &b), 0);
		cr_assert_eq(b.task_id, 5);
		spool__done(sp, b.seq);
		spool__free(sp);
	}
}
