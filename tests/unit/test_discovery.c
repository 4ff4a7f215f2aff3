// SPDX-License-Identifier: Apache-2.0
/*
 * supervisor/discovery/discovery.c over a /proc made of plain files: finders in order, entities rendered
 * from templates, processes that render alike reported once, exited and reused pids, and the
 * launcher's answer (exe, cwd) preferred to the command line. What a scan reads is counted
 * with inotify (IN_OPEN) on the fake /proc: known processes are read only when due.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config/config.h"
#include "supervisor/discovery/discovery.h"

static char root[] = "/tmp/rover-disc-XXXXXX";
static struct rover_config cfg;
static struct host_facts host = { .instance_id = "agent-1",
				  .host_name = "box",
				  .host_ip = "10.0.0.5",
				  .nifs = 1,
				  .ifs = { { .name = "eth0", .v4 = "10.0.0.5" } } };

static void add_proc(int pid, unsigned long long start, const char *argv0, const char *arg1)
{
	char path[256], stat[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/stat", root, pid);
	/* A comm with a space and a parenthesis, as the kernel allows. */
	snprintf(stat, sizeof(stat),
		 "%d (my (odd) comm) S 1 %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %llu 1000 "
		 "100\n",
		 pid, pid, pid, start);
	f = fopen(path, "w");
	fputs(stat, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%d/cmdline", root, pid);
	f = fopen(path, "w");
	fwrite(argv0, 1, strlen(argv0) + 1, f);
	if (arg1)
		fwrite(arg1, 1, strlen(arg1) + 1, f);
	fclose(f);
}

static void del_proc(int pid)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/%d", root, pid);
	cr_assert_eq(system(cmd), 0);
}

static void load(const char *yaml)
{
	char err[256];

	cr_assert_eq(config__load(yaml, strlen(yaml), &cfg, err, sizeof(err), NULL, NULL, NULL), 0,
		     "%s", err);
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		fprintf(stderr, "cleanup of %s failed\n", root);
	config__free(&cfg);
	strcpy(root, "/tmp/rover-disc-XXXXXX");
}

TestSuite(discovery, .init = setup, .fini = teardown);

static const char *finders =
	"process_discovery:\n"
	"  vm:\n"
	"    finders:\n"
	"      - match_cmd_regex: \"/opt/(shop)/bin/server --port (\\\\d+)\"\n"
	"        service_name: \"{{.Finder.RegexMatchGroup 1}}\"\n"
	"        instance_name: \"{{.Rover.HostIPV4 \\\"eth0\\\"}}\"\n"
	"        process_name: \"{{.Process.ExeName}}-{{.Finder.RegexMatchGroup 2}}\"\n"
	"        labels: \"web,{{.Finder.Layer}}\"\n"
	"      - match_cmd_regex: \"worker\"\n"
	"        layer: GENERAL\n"
	"        service_name: \"jobs\"\n"
	"        process_name: \"{{.Process.ExeNameInCommandLine}}\"\n";

static int by_process(const void *a, const void *b)
{
	return strcmp(((const struct disc_entity *)a)->process,
		      ((const struct disc_entity *)b)->process);
}

static size_t entities(struct discovery *d, struct disc_entity **ret)
{
	size_t n;

	cr_assert_eq(discovery__entities(d, ret, &n), 0);
	qsort(*ret, n, sizeof(**ret), by_process);
	return n;
}

Test(discovery, finders_render_entities_first_match_wins)
{
	struct discovery *d;
	struct disc_entity *e;
	int32_t pids[8];

	load(finders);
	add_proc(100, 500, "/opt/shop/bin/server", "--port 8080");
	add_proc(101, 501, "/usr/bin/worker", NULL);
	add_proc(102, 502, "/usr/bin/unrelated", NULL);
	/* Matches both finders: the first one wins. */
	add_proc(103, 503, "/opt/shop/bin/server", "--port 9090 worker");
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_not_null(d);
	cr_assert_eq(discovery__scan(d), 3);
	cr_assert_eq(entities(d, &e), 3);
	cr_expect_str_eq(e[0].process, "server-8080");
	cr_expect_str_eq(e[0].service, "shop");
	cr_expect_str_eq(e[0].instance, "10.0.0.5");
	cr_expect_str_eq(e[0].layer, "OS_LINUX");
	cr_expect_eq(e[0].nlabels, 2);
	cr_expect_str_eq(e[0].labels[0], "web");
	cr_expect_str_eq(e[0].labels[1], "OS_LINUX");
	cr_expect_str_eq(e[0].cmdline, "/opt/shop/bin/server --port 8080");
	cr_expect_eq(e[0].pid, 100);
	cr_expect_str_eq(e[1].process, "server-9090");
	cr_expect_str_eq(e[2].process, "worker");
	cr_expect_str_eq(e[2].layer, "GENERAL");
	cr_expect_str_eq(e[2].service, "jobs");
	/* No id until the backend answers; then pids are found by it. */
	cr_expect_eq(discovery__pids_of(d, "id-1", pids, 8), 0);
	cr_expect_eq(discovery__set_process_id(d, 100, "OS_LINUX", "shop", "10.0.0.5",
					       "server-8080", "id-1"),
		     1);
	cr_expect_eq(discovery__set_process_id(d, 999, "OS_LINUX", "shop", "10.0.0.5",
					       "server-8080", "id-x"),
		     0, "an answer for another pid is not ours");
	cr_expect_eq(discovery__pids_of(d, "id-1", pids, 8), 1);
	cr_expect_eq(pids[0], 100);
	free(e);
	discovery__free(d);
}

Test(discovery, same_entity_reported_once_and_exits_forgotten)
{
	struct discovery *d;
	struct disc_entity *e;
	int32_t pids[8];

	load(finders);
	add_proc(200, 10, "/usr/bin/worker", NULL);
	add_proc(201, 11, "/usr/local/bin/worker", "--other");
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_eq(discovery__scan(d), 1, "two workers render to one entity");
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_eq(e[0].pid, 200);
	free(e);
	/* The default instance name asks for en0: the host address stands in. */
	cr_assert_eq(discovery__set_process_id(d, 200, "GENERAL", "jobs", "10.0.0.5", "worker",
					       "w"),
		     1);
	cr_expect_eq(discovery__pids_of(d, "w", pids, 8), 2, "both processes profiled");

	/* The reported one exits: the other one stands for the entity. */
	del_proc(200);
	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_eq(e[0].pid, 201);
	cr_expect_str_eq(e[0].process_id, "", "reported again with its new pid");
	free(e);
	cr_expect_eq(discovery__set_process_id(d, 201, "GENERAL", "jobs", "10.0.0.5", "worker",
					       "w"),
		     1);
	cr_expect_eq(discovery__pids_of(d, "w", pids, 8), 1);

	/* Both gone: the entity is forgotten. */
	del_proc(201);
	cr_assert_eq(discovery__scan(d), 0);
	cr_expect_eq(discovery__pids_of(d, "w", pids, 8), 0);
	discovery__free(d);
}

Test(discovery, reused_pid_is_a_new_process)
{
	struct discovery *d;
	struct disc_entity *e;

	load(finders);
	add_proc(300, 77, "/usr/bin/unrelated", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_eq(discovery__scan(d), 0);
	/* Same pid, new start time, now a worker: matched on the next scan. */
	del_proc(300);
	add_proc(300, 78, "/usr/bin/worker", NULL);
	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_str_eq(e[0].process, "worker");
	free(e);
	discovery__free(d);
}

static int fake_info(void *arg, int pid, struct msg_proc_info *ret)
{
	(void)arg;
	if (pid == 401)
		return -ESRCH; /* gone between the scan and the question */
	memset(ret, 0, sizeof(*ret));
	ret->pid = pid;
	snprintf(ret->exe, sizeof(ret->exe), "/real/path/java");
	snprintf(ret->cwd, sizeof(ret->cwd), "/srv/app");
	return 0;
}

Test(discovery, launcher_answer_names_exe_and_workdir)
{
	static const char *yaml = "process_discovery:\n"
				  "  vm:\n"
				  "    finders:\n"
				  "      - match_cmd_regex: \"app\\\\.jar\"\n"
				  "        service_name: \"{{.Process.WorkDir}}\"\n"
				  "        process_name: \"{{.Process.ExeName}}\"\n"
				  "        instance_name: \"{{.Process.ExeFilePath}}\"\n";
	struct discovery *d;
	struct disc_entity *e;

	load(yaml);
	add_proc(400, 1, "java", "-jar app.jar");
	add_proc(401, 2, "java", "-jar app.jar --gone");
	d = discovery__new(&cfg, &host, root, fake_info, NULL);
	cr_assert_eq(discovery__scan(d), 1, "the process that vanished is skipped");
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_str_eq(e[0].process, "java");
	cr_expect_str_eq(e[0].service, "/srv/app");
	cr_expect_str_eq(e[0].instance, "/real/path/java");
	free(e);
	discovery__free(d);
}

Test(discovery, cluster_name_prefixes_services)
{
	struct discovery *d;
	struct disc_entity *e;
	char yaml[2048];

	snprintf(yaml, sizeof(yaml), "core:\n  cluster_name: east\n%s", finders);
	load(yaml);
	add_proc(500, 1, "/usr/bin/worker", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_str_eq(e[0].service, "east::jobs");
	free(e);
	discovery__free(d);
}

Test(discovery, exec_keeps_pid_and_start_time_but_is_matched_again)
{
	struct discovery *d;
	struct disc_entity *e;

	load(finders);
	/* A shell wrapper that later execs the real program: same pid, same start time. */
	add_proc(600, 5, "/bin/sh", "-c exec worker");
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_eq(discovery__scan(d), 1, "'-c exec worker' matches the worker finder");
	del_proc(600);
	add_proc(600, 5, "/usr/bin/unrelated", NULL);
	cr_assert_eq(discovery__scan(d), 0, "after the exec it matches nothing: forgotten");
	del_proc(600);
	add_proc(600, 5, "/usr/bin/worker", NULL);
	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_str_eq(e[0].process, "worker");
	free(e);
	discovery__free(d);
}

Test(discovery, many_processes_scan)
{
	struct discovery *d;
	int32_t pids[ROVER_MAX_PIDS];

	load(finders);
	for (int pid = 1000; pid < 3000; pid++)
		add_proc(pid, (unsigned long long)pid,
			 pid % 2 ? "/usr/bin/worker" : "/usr/bin/other", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_eq(discovery__scan(d), 1, "1000 workers are one entity");
	cr_assert_eq(discovery__scan(d), 1, "and stay one on a second scan");
	cr_assert_eq(discovery__set_process_id(d, 1001, "GENERAL", "jobs", "10.0.0.5", "worker",
					       "w"),
		     1, "the oldest (pid 1001) stands for it");
	cr_expect_eq(discovery__pids_of(d, "w", pids, ROVER_MAX_PIDS), ROVER_MAX_PIDS);
	discovery__free(d);
}

/* An inotify descriptor counting the files opened under the pid directories of [lo, hi). */
static int watch_opens(int lo, int hi)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	cr_assert_geq(fd, 0);
	for (int pid = lo; pid < hi; pid++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/%d", root, pid);
		if (access(path, F_OK) == 0)
			cr_assert_geq(inotify_add_watch(fd, path, IN_OPEN), 0);
	}
	return fd;
}

/* Files (not directories) opened since the last call. */
static int opens(int fd)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	int n = 0;
	ssize_t len;

	while ((len = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if ((ev->mask & IN_OPEN) && !(ev->mask & IN_ISDIR))
				n++;
			p += sizeof(*ev) + ev->len;
		}
	}
	return n;
}

/* Scans past the first DISC_YOUNG_SCANS, after which processes are read only when due. */
static void settle(struct discovery *d)
{
	for (int i = 0; i < 1 + DISC_YOUNG_SCANS; i++)
		cr_assert_geq(discovery__scan(d), 0);
}

Test(discovery, unchanged_scan_reads_no_process_file)
{
	struct discovery *d;
	int fd, total = 0, idle = 0, n = 10;

	load(finders);
	for (int pid = 700; pid < 700 + n; pid++)
		add_proc(pid, 5, pid % 2 ? "/usr/bin/worker" : "/usr/bin/other", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	settle(d);
	fd = watch_opens(700, 700 + n);
	/* The exec sweep reads each process once (stat and cmdline) in any DISC_RECHECK_SCANS
	 * scans in a row, and a scan with none due opens no file of any process. */
	for (int i = 0; i < DISC_RECHECK_SCANS; i++) {
		int k;

		cr_assert_eq(discovery__scan(d), 1);
		k = opens(fd);
		total += k;
		idle += k == 0;
	}
	cr_expect_eq(total, 2 * n, "%d files opened in %d scans", total, DISC_RECHECK_SCANS);
	cr_expect_geq(idle, DISC_RECHECK_SCANS - n, "only %d scans opened nothing", idle);
	close(fd);
	discovery__free(d);
}

Test(discovery, exec_of_a_settled_process_noticed_within_the_bound)
{
	struct discovery *d;
	struct disc_entity *e;
	int scans = 0;

	load(finders);
	add_proc(800, 9, "/usr/bin/unrelated", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	settle(d);
	cr_assert_eq(discovery__scan(d), 0);
	/* It execs a worker: same pid, same start time, another command line. */
	del_proc(800);
	add_proc(800, 9, "/usr/bin/worker", NULL);
	while (scans < DISC_RECHECK_SCANS && discovery__scan(d) == 0)
		scans++;
	cr_assert_lt(scans, DISC_RECHECK_SCANS, "the exec was not noticed in %d scans", scans);
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_str_eq(e[0].process, "worker");
	cr_expect_eq(e[0].pid, 800);
	free(e);
	discovery__free(d);
}

Test(discovery, reused_pid_with_the_same_command_line_is_a_new_process)
{
	struct discovery *d;
	struct disc_entity *e;
	uint64_t gen;
	int scans = 0;

	load(finders);
	add_proc(900, 50, "/usr/bin/worker", NULL);
	add_proc(901, 60, "/usr/bin/worker", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	settle(d);
	cr_assert_eq(entities(d, &e), 1);
	cr_assert_eq(e[0].pid, 900, "the oldest stands for the entity");
	gen = e[0].generation;
	free(e);
	/* 900 exits and a new process gets its pid between two listings: only its start time
	 * tells. It is younger than 901, which now stands for the entity. */
	del_proc(900);
	add_proc(900, 70, "/usr/bin/worker", NULL);
	for (;;) {
		cr_assert_eq(discovery__scan(d), 1);
		cr_assert_eq(entities(d, &e), 1);
		if (e[0].pid != 900 || ++scans == DISC_RECHECK_SCANS)
			break;
		free(e);
	}
	cr_expect_eq(e[0].pid, 901, "the reused pid was taken for the old process");
	cr_expect_gt(e[0].generation, gen);
	free(e);
	/* Gone from one listing and back: a new process at once. */
	del_proc(901);
	cr_assert_eq(discovery__scan(d), 1);
	add_proc(901, 80, "/usr/bin/worker", NULL);
	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(entities(d, &e), 1);
	cr_expect_eq(e[0].pid, 900, "70 is older than 80");
	free(e);
	discovery__free(d);
}

static int by_pid(const void *a, const void *b)
{
	return *(const int32_t *)a - *(const int32_t *)b;
}

Test(discovery, exited_processes_are_dropped)
{
	struct discovery *d;
	int32_t pids[ROVER_MAX_PIDS];
	int n, k = 0;

	load(finders);
	for (int pid = 1000; pid < 1040; pid++)
		add_proc(pid, (unsigned long long)pid, "/usr/bin/worker", NULL);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	settle(d);
	cr_assert_eq(discovery__set_process_id(d, 1000, "GENERAL", "jobs", "10.0.0.5", "worker",
					       "w"),
		     1);
	/* Every third exits, the one standing for the entity included. */
	for (int pid = 1000; pid < 1040; pid += 3)
		del_proc(pid);
	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(discovery__set_process_id(d, 1001, "GENERAL", "jobs", "10.0.0.5", "worker",
					       "w"),
		     1, "1001 is the oldest left");
	n = discovery__pids_of(d, "w", pids, ROVER_MAX_PIDS);
	cr_assert_eq(n, 40 - 14);
	qsort(pids, (size_t)n, sizeof(pids[0]), by_pid);
	for (int pid = 1000; pid < 1040; pid++)
		if ((pid - 1000) % 3)
			cr_expect_eq(pids[k++], pid);
	/* The rest exits: the entity goes with them. */
	for (int pid = 1000; pid < 1040; pid++)
		if ((pid - 1000) % 3)
			del_proc(pid);
	cr_assert_eq(discovery__scan(d), 0);
	cr_expect_eq(discovery__pids_of(d, "w", pids, ROVER_MAX_PIDS), 0);
	discovery__free(d);
}

/* The fake /proc made our namespace's: self is us, loadavg's last pid is last (and its count
 * of tasks another at each call: tasks came or went). */
static void own_namespace(int last)
{
	static int tasks = 200;
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/self", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/self/stat", root);
	f = fopen(path, "w");
	fprintf(f, "%d (runner) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n", (int)getpid());
	fclose(f);
	snprintf(path, sizeof(path), "%s/loadavg", root);
	f = fopen(path, "w");
	fprintf(f, "0.10 0.20 0.30 1/%d %d\n", tasks++, last);
	fclose(f);
}

static void add_status(int pid, int tgid)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", root, pid);
	f = fopen(path, "w");
	fprintf(f, "Name:\tx\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n",
		tgid, pid);
	fclose(f);
}

/* A real process that waits to be killed: alive as kill(pid, 0) sees it. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void *thread_wait(void *arg)
{
	pid_t *tid = arg;

	__atomic_store_n(tid, gettid(), __ATOMIC_SEQ_CST);
	pause();
	return NULL;
}

/*
 * Two real processes in the fake /proc, made our namespace's: worker matches a finder (an
 * entity), other does not. Returns discovery after its first scan (a listing).
 */
static struct discovery *worker_and_other(pid_t *ret_worker, pid_t *ret_other)
{
	pid_t worker = sleeper(), other = sleeper();
	struct discovery *d;

	load(finders);
	own_namespace(other > worker ? other : worker);
	add_proc(worker, 5, "/usr/bin/worker", NULL);
	add_status(worker, worker);
	add_proc(other, 6, "/usr/bin/other", NULL);
	add_status(other, other);
	d = discovery__new(&cfg, &host, root, NULL, NULL);
	cr_assert_eq(discovery__scan(d), 1, "the first scan lists");
	*ret_worker = worker;
	*ret_other = other;
	return d;
}

/*
 * In our own pid namespace, a scan looks up only the pids given out since the last one
 * (loadavg's last pid), not the listing: a thread's pid is not taken for a process, a process
 * with an entity that exits is seen at once, and a pid outside the range (set by hand) waits
 * for the full listing, within DISC_RECHECK_SCANS scans. The pid directories are fakes named
 * after real processes (liveness is asked of the kernel).
 */
Test(discovery, new_pids_come_from_the_last_pid_without_a_listing)
{
	pid_t worker, other, server, late, tid = 0;
	struct discovery *d = worker_and_other(&worker, &other);
	struct disc_entity *e;
	pthread_t th;
	int scans = 0, n;

	server = sleeper();
	cr_assert_eq(pthread_create(&th, NULL, thread_wait, &tid), 0);
	while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST))
		usleep(1000);
	late = sleeper();
	if (!(server > worker && server > other && tid > server && late > tid))
		cr_skip_test("pids wrapped around during the test");
	add_proc(server, 7, "/opt/shop/bin/server", "--port 8080");
	add_status(server, server);
	add_proc(tid, 8, "/opt/shop/bin/server", "--port 9090");
	add_status(tid, getpid()); /* a thread of this test */
	add_proc(late, 9, "/opt/shop/bin/server", "--port 7070");
	add_status(late, late); /* beyond the last pid given out: not looked up */
	own_namespace(tid);
	cr_assert_eq(discovery__scan(d), 2);
	cr_assert_eq(entities(d, &e), 2);
	cr_expect_str_eq(e[0].process, "server-8080");
	cr_expect_str_eq(e[1].process, "worker");
	free(e);

	del_proc(tid); /* /proc lists no thread */
	cr_expect_eq(discovery__scan(d), 2, "nothing came or went");
	end(worker);
	del_proc(worker);
	own_namespace(tid); /* one task fewer */
	cr_expect_eq(discovery__scan(d), 1, "an exited process with an entity goes at once");

	do {
		n = discovery__scan(d);
	} while (n == 1 && ++scans < DISC_RECHECK_SCANS);
	cr_expect_eq(n, 2, "the pid outside the range was never found (%d scans)", scans);
	cr_assert_eq(entities(d, &e), 2);
	cr_expect_str_eq(e[0].process, "server-7070");
	free(e);
	discovery__free(d);
	end(other);
	end(server);
	end(late);
}

/*
 * A process with an entity is watched through a pidfd: its end is seen at the next scan even
 * when loadavg shows nothing came or went (its count of tasks and last pid the same, as when
 * one process ends and another starts between two scans), which kill(pid, 0) asked only when
 * it moved.
 */
Test(discovery, an_exit_is_seen_through_its_pidfd_without_loadavg_moving)
{
	pid_t worker, other;
	struct discovery *d = worker_and_other(&worker, &other);
	int32_t pids[ROVER_MAX_PIDS];

	cr_assert_eq(discovery__scan(d), 1);
	cr_assert_eq(discovery__set_process_id(d, worker, "GENERAL", "jobs", "10.0.0.5", "worker",
					       "w"),
		     1);
	/* Its directory stays (a listing would still find it): only the kernel says it ended. */
	end(worker);
	cr_expect_eq(discovery__scan(d), 0, "the ended process is still counted");
	cr_expect_eq(discovery__pids_of(d, "w", pids, ROVER_MAX_PIDS), 0);
	discovery__free(d);
	end(other);
}
