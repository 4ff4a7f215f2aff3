// SPDX-License-Identifier: Apache-2.0
/*
 * Scale and endurance (issue 14), against the real kernel and the fake OAP:
 * - a task on 64 processes, from the command line and from the backend, runs in one worker;
 * - churn: short-lived matching processes come and go while ON_CPU tasks from the backend run
 *   back to back; every role's descriptors and memory and the agent's BPF objects do not grow,
 *   and every task ends with its upload, sample for sample;
 * - a backend outage mid-task: every sample reaches the OAP afterwards, the spool stays in its
 *   bounds, one log line per change of the link's state;
 * - kill -9 of each role in turn during a task: the agent recovers each time, and no BPF
 *   program or link of ours is left behind;
 * - a target that forks and execs as fast as it can: its task is right, the agent's CPU stays
 *   bounded.
 *
 * `make test` runs short versions (each well under a minute); `make soak` (scripts/soak.sh)
 * sets ROVER_SOAK=1 for the full lengths: 60 min of churn, a 10 min outage, 100 kills of each
 * role, 10 min of fork storm, each shortened by SOAK_SCALE (0.1: a tenth) or set by its own
 * variable (SOAK_CHURN_S, SOAK_OUTAGE_S, SOAK_KILLS, SOAK_STORM_S). Each scenario prints a
 * table, to stderr and appended to $SOAK_REPORT when set.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/oap_harness.h"

#define SUPERVISOR_COMM "rover-superviso"
#define SHIPPER_COMM "rover-shipper"
#define WORKER_COMM "rover-worker"

/* ---- sizes: short in `make test`, full in `make soak` ---- */

static int soak_mode(void)
{
	const char *v = getenv("ROVER_SOAK");

	return v && *v && strcmp(v, "0");
}

/*
 * A scenario's size: $env when set, else the short value, or under `make soak` the full value
 * times SOAK_SCALE (at least the short value).
 */
static long size_of(const char *env, long short_v, long full_v)
{
	const char *v = getenv(env), *s = getenv("SOAK_SCALE");
	double scale = s && *s ? atof(s) : 1.0;
	long x;

	if (v && *v && atol(v) > 0)
		return atol(v);
	if (!soak_mode())
		return short_v;
	x = (long)((double)full_v * (scale > 0 ? scale : 1.0));
	return x < short_v ? short_v : x;
}

/* A line for people: stderr, and $SOAK_REPORT (appended) when set. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	const char *path = getenv("SOAK_REPORT");
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (path && *path) {
		FILE *f = fopen(path, "a");

		if (f) {
			va_start(ap, fmt);
			vfprintf(f, fmt, ap);
			va_end(ap);
			fputc('\n', f);
			fclose(f);
		}
	}
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the agent's CPU: a cgroup v2 of its own ---- */

static char cg[512], cg_home[512];

/* A cgroup for the agent, next to ours on the cgroup v2 hierarchy; "" when there is none. */
static void cg_make(void)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char line[512];
	FILE *f;

	cg[0] = cg_home[0] = '\0';
	f = fopen("/proc/self/cgroup", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3))
			snprintf(cg_home, sizeof(cg_home), "%s", line + 3);
	if (f)
		fclose(f);
	cg_home[strcspn(cg_home, "\n")] = '\0';
	for (size_t i = 0; i < 2 && !cg[0]; i++) {
		char probe[600];

		snprintf(probe, sizeof(probe), "%s/cgroup.procs", roots[i]);
		if (access(probe, W_OK))
			continue;
		snprintf(cg, sizeof(cg), "%s/rover-endurance.%d", roots[i], (int)getpid());
		if (mkdir(cg, 0755) && errno != EEXIST)
			cg[0] = '\0';
		else
			snprintf(cg_home, sizeof(cg_home), "%s%s", roots[i],
				 strcmp(cg_home, "/") ? cg_home : "");
	}
}

static void cg_move_self(const char *dir)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	cr_assert_eq(write_file(path, "0\n"), 0, "moving into %s", dir);
}

/* CPU time of everything the agent ran, in microseconds; 0 without a cgroup. */
static uint64_t cg_usec(void)
{
	char path[600], *text, *p;
	uint64_t v = 0;

	if (!cg[0])
		return 0;
	snprintf(path, sizeof(path), "%s/cpu.stat", cg);
	text = slurp(path, NULL);
	p = text ? strstr(text, "usage_usec ") : NULL;
	if (p)
		v = strtoull(p + 11, NULL, 10);
	free(text);
	return v;
}

static void cg_remove(void)
{
	if (cg[0])
		rmdir(cg);
}

/* ---- the agent ---- */

static char tag[32], sockdir[128], spooldir[128];
static pid_t agent;
static int oap_port;
static pid_t oap;

/* Starts argv with stderr appended to path (a restarted agent keeps one log). */
static pid_t spawn_append(char *const argv[], const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static const char *config_fmt =
	"logger:\n"
	"  level: INFO\n"
	"core:\n"
	"  backend:\n"
	"    addr: 127.0.0.1:%d\n"
	"    spool_dir: \"%s\"\n"
	"    spool_memory_bytes: %s\n"
	"    spool_disk_bytes: 64MiB\n"
	"process_discovery:\n"
	"  heartbeat_period: %s\n"
	"  properties_report_period: 10\n"
	"  vm:\n"
	"    active: true\n"
	"    period: 1s\n"
	"    finders:\n"
	"      - match_cmd_regex: \"/soak_burn_%s$\"\n"
	"        service_name: soak\n"
	"        instance_name: \"{{.Rover.HostName}}\"\n"
	"        process_name: soak-burn\n"
	"      - match_cmd_regex: \"churn [0-9]+ [0-9]+ [0-9]+ (c[0-9]+) %s$\"\n"
	"        service_name: soak\n"
	"        instance_name: \"{{.Rover.HostName}}\"\n"
	"        process_name: \"churn-{{.Finder.RegexMatchGroup 1}}\"\n"
	"      - match_cmd_regex: \"^many_burn --child ([0-9]+) %s \"\n"
	"        service_name: soak\n"
	"        instance_name: \"{{.Rover.HostName}}\"\n"
	"        process_name: \"mb-{{.Finder.RegexMatchGroup 1}}\"\n"
	"      - match_cmd_regex: \"fork_storm [0-9]+ %s\"\n"
	"        service_name: soak\n"
	"        instance_name: \"{{.Rover.HostName}}\"\n"
	"        process_name: storm\n"
	"      - match_cmd_regex: \"^fork_storm --child %s$\"\n"
	"        service_name: soak\n"
	"        instance_name: \"{{.Rover.HostName}}\"\n"
	"        process_name: storm-child\n"
	"profiling:\n"
	"  active: true\n"
	"  check_interval: 1s\n"
	"  flush_interval: 1s\n"
	"  task:\n"
	"    on_cpu:\n"
	"      dump_period: 5ms\n";

/*
 * `rover run` on the config above, in the agent's cgroup; its log appended to tmp/rover.log.
 * Uploads spill from memory to the spool directory past spool_memory.
 */
static pid_t agent_start_hb(const char *spool_memory, const char *heartbeat)
{
	char cfg[8192];
	char *argv[] = { (char *)bin("rover"), "run",	"--config", tmp_path("rover.yaml"),
			 "--socket-dir",       sockdir, NULL };
	pid_t pid;

	snprintf(cfg, sizeof(cfg), config_fmt, oap_port, spooldir, spool_memory, heartbeat, tag,
		 tag, tag, tag, tag);
	cr_assert_eq(write_file(tmp_path("rover.yaml"), cfg), 0);
	if (cg[0])
		cg_move_self(cg);
	pid = spawn_append(argv, tmp_path("rover.log"));
	if (cg[0])
		cg_move_self(cg_home);
	cr_assert_gt(pid, 0);
	cr_assert_gt(wait_child(pid, SUPERVISOR_COMM, 10000), 0, "rover run did not start:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	return track(pid);
}

static pid_t agent_start(const char *spool_memory)
{
	return agent_start_hb(spool_memory, "1s");
}

static uid_t roles_uid(void)
{
	struct passwd *pw = getpwnam(role_user());

	cr_assert_not_null(pw, "no user %s", role_user());
	return pw->pw_uid;
}

/* Processes of the roles' user: none once an agent is gone for good. */
static int roles_alive(uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		char path[300];
		struct stat st;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s", de->d_name);
		if (!stat(path, &st) && st.st_uid == uid)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static void endurance_init(void)
{
	tmp_setup();
	/* The roles' directories must be reachable by the roles' user: not under tmp. */
	snprintf(tag, sizeof(tag), "e%d", (int)getpid());
	snprintf(sockdir, sizeof(sockdir), "/tmp/rover-soak-sock.%d", (int)getpid());
	snprintf(spooldir, sizeof(spooldir), "/tmp/rover-soak-spool.%d", (int)getpid());
	mkdir(sockdir, 0755);
	cg_make();
	agent = oap = 0;
}

static void endurance_fini(void)
{
	stop_tracked();
	cg_remove();
	rm_rf(sockdir);
	rm_rf(spooldir);
	tmp_teardown();
}

TestSuite(endurance, .init = endurance_init, .fini = endurance_fini);

/* Ends the test process after seconds: a hung scenario must not hang the run. */
static void watchdog(long seconds)
{
	alarm((unsigned)seconds);
}

/* ---- programs under test ---- */

/* argv in the background, its stdout to out, once it printed "ready"; tracked. */
static pid_t start_ready(char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	for (int i = 0; i < 1000; i++) {
		char *text = slurp(out, NULL);
		int ready = text && !strncmp(text, "ready", 5);

		free(text);
		if (ready)
			return track(pid);
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		sleep_ms(20);
	}
	kill(pid, SIGKILL);
	cr_assert_fail("%s did not start", argv[0]);
	return -1;
}

/* The last number after word in path ("spawned 123"), 0 when none. */
static long last_count(const char *path, const char *word)
{
	char *text = slurp(path, NULL), *p = text;
	long v = 0;

	while (p && (p = strstr(p, word))) {
		p += strlen(word);
		v = atol(p);
	}
	free(text);
	return v;
}

/* demo_burn as tmp/soak_burn_TAG: the finder's soak-burn. */
static pid_t start_burner(void)
{
	char path[4096], cmd[8300];
	char *argv[] = { path, NULL };

	snprintf(path, sizeof(path), "%s/soak_burn_%s", tmp, tag);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin("tests/programs/demo_burn"), path);
	cr_assert_eq(system(cmd), 0);
	return start_ready(argv, tmp_path("burn.out"));
}

/* Children of ppid, by scanning /proc (at most max). */
static int children_of(pid_t ppid, pid_t *ret, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	while (d && n < max && (de = readdir(d))) {
		char path[300], *text, *p;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		text = slurp(path, NULL);
		p = text ? strrchr(text, ')') : NULL;
		if (p && atoi(p + 4) == ppid)
			ret[n++] = atoi(de->d_name);
		free(text);
	}
	if (d)
		closedir(d);
	return n;
}

/* ---- the OAP side: tasks in, uploads out ---- */

static void set_tasks(const char *json)
{
	cr_assert_eq(write_file(tmp_path("tasks.json.new"), json), 0);
	cr_assert_eq(rename(tmp_path("tasks.json.new"), tmp_path("tasks.json")), 0);
}

/* One ON_CPU task on the process ids ids ("@process:a,@process:b"), seconds long. */
static void set_task(const char *id, const char *ids, int seconds)
{
	size_t len = strlen(ids) + 1024;
	char *text = malloc(len);

	snprintf(text, len,
		 "[{\"command\": \"EBPFProfilingTaskQuery\", \"args\": {\"TaskId\": \"%s\", "
		 "\"ProcessId\": \"%s\", \"TaskUpdateTime\": \"@now\", "
		 "\"TriggerType\": \"FIXED_TIME\", \"TargetType\": \"ON_CPU\", \"TaskStartTime\": "
		 "\"@now\", \"FixedTriggerDuration\": \"%d\", \"ExtensionConfigJSON\": \"\"}}]\n",
		 id, ids, seconds);
	set_tasks(text);
	free(text);
}

/* How a backend task ended, from the agent's log. */
struct task_end {
	int ended, failed;
	long samples, kernel, nprocs;
	char why[160];
};

static int task_end_of(const char *id, struct task_end *ret)
{
	char needle[160], *log = slurp(tmp_path("rover.log"), NULL), *p;

	memset(ret, 0, sizeof(*ret));
	snprintf(needle, sizeof(needle), "task %s on process ", id);
	p = log ? strstr(log, needle) : NULL;
	if (p) {
		char *eol = strchr(p, '\n'), *d = strstr(p, " done: "), *f = strstr(p, " failed (");

		if (d && (!eol || d < eol)) {
			ret->ended = 1;
			sscanf(d,
			       " done: %ld samples uploaded or queued, %ld counted in the kernel, "
			       "%ld process id(s)",
			       &ret->samples, &ret->kernel, &ret->nprocs);
		} else if (f && (!eol || f < eol)) {
			ret->ended = ret->failed = 1;
			snprintf(ret->why, sizeof(ret->why), "%.*s",
				 (int)((eol ? eol : f + strlen(f)) - f), f);
		}
	}
	free(log);
	return ret->ended;
}

static void wait_task_end(const char *id, int timeout_ms, struct task_end *ret)
{
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		if (task_end_of(id, ret))
			return;
		sleep_ms(200);
	}
}

/*
 * Every profile upload the OAP holds, read in one pass over its record files. Delivery is at
 * least once: a stream cut by an outage is sent again whole. A copy is a stream of the same
 * task, process id and currentTime whose messages are the same as another's, or the first of
 * them (cut short), that came in another run of the server or a second or more apart (a batch
 * is sent again after a backoff of a second at least): only the longest counts. Streams of one
 * process and time sent back to back are batches of their own, even when they look alike (a
 * flush's stacks forced out of the shipper's cache go apart).
 */
struct stream {
	char task[96], proc[64];
	char cur[24];
	long msgs, dump, leaf;
	uint64_t *hash; /* of each message, in order */
	int run;	/* which server run (record file) */
	long t_ms;	/* when its first message came */
	int copy;	/* a copy of a longer or equal stream before it */
};

static uint64_t fnv(const char *p)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

struct uploads {
	struct stream *s;
	long n, cap;
	long resent; /* copies beyond the first */
};

/* The records of one server run (its stream numbers are its own), added to u. */
static void uploads_read_file(struct uploads *u, const char *path, const char *leaf, int run)
{
	char *text = slurp(path, NULL), *save = NULL, *line;
	/* stream number -> slot in u->s (a copy: a slot of its own, folded in later), -1: none */
	long *map = NULL, nmap = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct json_object *r, *m;
		struct stream *st;
		long stream, dc;

		/* keepAlive and reportProcesses lines are most of the file: not parsed. */
		if (!strstr(line, "\"collectProfilingData\""))
			continue;
		r = json_tokener_parse(line);
		if (!r)
			continue;
		stream = (long)num_at(r, "stream");
		m = at(r, "message");
		if (stream < 0 || stream > 10000000) {
			json_object_put(r);
			continue;
		}
		if (stream >= nmap) {
			long n = (stream + 1) * 2;

			map = realloc(map, (size_t)n * sizeof(*map));
			for (long i = nmap; i < n; i++)
				map[i] = -1;
			nmap = n;
		}
		if (at(m, "task")) {
			const char *tid = str_at(m, "task.taskId"),
				   *pid = str_at(m, "task.processId");
			const char *cur = str_at(m, "task.currentTime");

			if (tid && pid && cur) {
				if (u->n == u->cap) {
					u->cap = u->cap ? u->cap * 2 : 1024;
					u->s = realloc(u->s, (size_t)u->cap * sizeof(*u->s));
				}
				st = &u->s[u->n];
				memset(st, 0, sizeof(*st));
				snprintf(st->task, sizeof(st->task), "%s", tid);
				snprintf(st->proc, sizeof(st->proc), "%s", pid);
				snprintf(st->cur, sizeof(st->cur), "%s", cur);
				st->run = run;
				st->t_ms = (long)num_at(r, "time_ms");
				map[stream] = u->n++;
			}
		}
		if (map[stream] < 0) {
			json_object_put(r);
			continue;
		}
		st = &u->s[map[stream]];
		dc = at(m, "onCPU.dumpCount") ? json_object_get_int64(at(m, "onCPU.dumpCount")) : 0;
		st->hash = realloc(st->hash, (size_t)(st->msgs + 1) * sizeof(*st->hash));
		st->hash[st->msgs] = fnv(json_object_to_json_string(m));
		st->msgs++;
		st->dump += dc;
		if (leaf) {
			struct json_object *stacks = at(m, "onCPU.stacks");

			for (size_t k = 0; stacks && k < json_object_array_length(stacks); k++) {
				struct json_object *sk = json_object_array_get_idx(stacks, k);
				const char *type = str_at(sk, "stackType");
				const char *first = str_at(sk, "stackSymbols.0");

				if (type && !strcmp(type, "PROCESS_USER_SPACE") && first &&
				    !strcmp(first, leaf))
					st->leaf += dc;
			}
		}
		json_object_put(r);
	}
	free(map);
	free(text);
}

/* The record files of this test: an earlier server run's (rec.1.jsonl) and the current one. */
static void uploads_read(struct uploads *u, const char *leaf)
{
	memset(u, 0, sizeof(*u));
	if (!access(tmp_path("rec.1.jsonl"), F_OK))
		uploads_read_file(u, tmp_path("rec.1.jsonl"), leaf, 1);
	uploads_read_file(u, tmp_path("rec.jsonl"), leaf, 2);
	/* Copies: the shorter of two streams whose messages agree as far as it goes. */
	for (long i = 0; i < u->n; i++) {
		struct stream *a = &u->s[i];

		for (long k = i + 1; k < u->n && !a->copy; k++) {
			struct stream *b = &u->s[k];
			struct stream *shorter = a->msgs <= b->msgs ? a : b;

			if (b->copy || strcmp(a->cur, b->cur) || strcmp(a->proc, b->proc) ||
			    strcmp(a->task, b->task) ||
			    (a->run == b->run && labs(a->t_ms - b->t_ms) < 1000) ||
			    memcmp(a->hash, b->hash, (size_t)shorter->msgs * sizeof(*a->hash)))
				continue;
			shorter->copy = 1;
			u->resent++;
		}
	}
}

static void uploads_free(struct uploads *u)
{
	for (long i = 0; i < u->n; i++)
		free(u->s[i].hash);
	free(u->s);
	memset(u, 0, sizeof(*u));
}

/* One task's uploads. */
struct upload_sum {
	long dump_count;
	long streams;	   /* distinct flushes per process id */
	long procs;	   /* distinct process ids */
	long leaf_samples; /* dumpCount of stacks whose innermost user frame is the leaf asked */
	char proc_ids[64][64];
	long proc_count[64];
};

static void upload_sum_of(const struct uploads *u, const char *id, struct upload_sum *s)
{
	memset(s, 0, sizeof(*s));
	for (long i = 0; i < u->n; i++) {
		const struct stream *st = &u->s[i];
		long p;

		if (st->copy || strcmp(st->task, id))
			continue;
		s->streams++;
		s->dump_count += st->dump;
		s->leaf_samples += st->leaf;
		for (p = 0; p < s->procs && strcmp(s->proc_ids[p], st->proc); p++)
			;
		if (p == s->procs && p < 64) {
			snprintf(s->proc_ids[p], sizeof(s->proc_ids[p]), "%s", st->proc);
			s->procs++;
		}
		if (p < 64)
			s->proc_count[p] += st->dump;
	}
}

/* Waits until task id's uploads add up to want (the last flush trails the task's end). */
static void wait_uploads(const char *id, const char *leaf, long want, int timeout_ms,
			 struct upload_sum *s)
{
	for (int waited = 0;; waited += 250) {
		struct uploads u;

		uploads_read(&u, leaf);
		upload_sum_of(&u, id, s);
		uploads_free(&u);
		if (s->dump_count >= want || waited >= timeout_ms)
			return;
		sleep_ms(250);
	}
}

/* ---- what the agent holds ---- */

/* pid's descriptors, but pidfds, which are counted in *ret_pidfds (may be NULL). */
static int count_fds(pid_t pid, int *ret_pidfds)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0, pidfds = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char link[400], target[64];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		/*
		 * Closed since readdir listed it (discovery drops the pidfds of a churn's exits
		 * while this reads): gone, not a descriptor of another kind.
		 */
		if (len < 0 && errno == ENOENT)
			continue;
		target[len > 0 ? len : 0] = '\0';
		if (!strcmp(target, "anon_inode:[pidfd]"))
			pidfds++;
		else
			n++;
	}
	closedir(d);
	if (ret_pidfds)
		*ret_pidfds = pidfds;
	return n;
}

static long rss_kb(pid_t pid)
{
	char buf[64];

	return proc_status(pid, "VmRSS", buf, sizeof(buf)) ? -1 : atol(buf);
}

/*
 * The BPF objects of the agent: programs its workers loaded (bpftool shows the loader's uid,
 * the roles' user, which is this agent's alone), the maps they use, the links to them.
 */
struct bpf_count {
	int progs, maps, links;
};

static char *capture(const char *cmd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *p = popen(cmd, "r");

	if (!p)
		return NULL;
	for (;;) {
		char chunk[8192];
		size_t n = fread(chunk, 1, sizeof(chunk), p);

		if (!n)
			break;
		buf = realloc(buf, len + n + 1);
		memcpy(buf + len, chunk, n);
		len += n;
		buf[len] = '\0';
	}
	pclose(p);
	return buf;
}

static void bpf_ours(uid_t uid, struct bpf_count *ret)
{
	char *text = capture("bpftool -j prog show 2>/dev/null");
	struct json_object *progs = text ? json_tokener_parse(text) : NULL, *links;
	long ids[256], map_ids[1024];
	int nids = 0, nmaps = 0;

	memset(ret, 0, sizeof(*ret));
	cr_assert_not_null(progs, "bpftool prog show: %s", text ? text : "no output");
	free(text);
	for (size_t i = 0; i < json_object_array_length(progs); i++) {
		struct json_object *p = json_object_array_get_idx(progs, i), *m;

		if (!at(p, "uid") || (uid_t)num_at(p, "uid") != uid || nids == 256)
			continue;
		ids[nids++] = (long)num_at(p, "id");
		m = at(p, "map_ids");
		for (size_t k = 0; m && k < json_object_array_length(m); k++) {
			long id = json_object_get_int64(json_object_array_get_idx(m, k));
			int seen = 0;

			for (int j = 0; j < nmaps; j++)
				seen |= map_ids[j] == id;
			if (!seen && nmaps < 1024)
				map_ids[nmaps++] = id;
		}
	}
	json_object_put(progs);
	text = capture("bpftool -j link show 2>/dev/null");
	links = text ? json_tokener_parse(text) : NULL;
	free(text);
	for (size_t i = 0; links && i < json_object_array_length(links); i++) {
		long pid = (long)num_at(json_object_array_get_idx(links, i), "prog_id");

		for (int k = 0; k < nids; k++)
			ret->links += ids[k] == pid;
	}
	json_object_put(links);
	ret->progs = nids;
	ret->maps = nmaps;
}

/* utime + stime of pid, in clock ticks; 0 when it is gone. */
static long long cpu_ticks(pid_t pid)
{
	char path[64], *text, *p;
	long long ut = 0, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = slurp(path, NULL);
	p = text ? strrchr(text, ')') : NULL;
	/* After the comm: state is field 3, utime 14, stime 15. */
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st);
	free(text);
	return ut + st;
}

struct roles_now {
	pid_t pid[3];	/* launcher, supervisor, shipper */
	int fds[3];	/* pidfds apart */
	int pidfds;	/* the launcher's: workers' targets, held through their grace */
	int sup_pidfds; /* the supervisor's: discovery's live processes with an entity */
	long rss[3];
	long long ticks[3]; /* CPU so far */
};

static const char *const role_names[3] = { "launcher", "supervisor", "shipper" };

static void roles_read(pid_t launcher, struct roles_now *r)
{
	r->pid[0] = launcher;
	r->pid[1] = find_child(launcher, SUPERVISOR_COMM);
	r->pid[2] = find_child(launcher, SHIPPER_COMM);
	for (int i = 0; i < 3; i++) {
		r->fds[i] = r->pid[i] > 0 ? count_fds(r->pid[i], i == 0	  ? &r->pidfds
								 : i == 1 ? &r->sup_pidfds
									  : NULL)
					  : -1;
		r->rss[i] = r->pid[i] > 0 ? rss_kb(r->pid[i]) : -1;
		r->ticks[i] = r->pid[i] > 0 ? cpu_ticks(r->pid[i]) : 0;
	}
}

/* The fake OAP's processId of a process named name (tests/oap/README.md): the first 32 hex
 * digits of SHA-256 of service, instance and name joined by NUL. */
static void oap_process_id(const char *name, char *out, size_t len)
{
	char cmd[1024], host[256];
	FILE *f;

	gethostname(host, sizeof(host));
	snprintf(cmd, sizeof(cmd), "printf '%%s\\000%%s\\000%%s' soak '%s' '%s' | sha256sum", host,
		 name);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(out, (int)len, f));
	pclose(f);
	cr_assert_geq(strlen(out), 32);
	out[32] = '\0';
}

/* ---- A. tasks on many processes ---- */

/*
 * Distinct workers the launcher started, polled every 20 ms for timeout_ms or, with cond_pid,
 * until that child of ours exits (its wait status in *ret_status).
 */
static int count_workers_while(pid_t launcher, pid_t cond_pid, int timeout_ms, pid_t *seen, int max,
			       int *ret_status)
{
	int n = 0;

	for (int waited = 0; waited < timeout_ms; waited += 20) {
		pid_t kids[64];
		int k = children_of(launcher, kids, 64);

		for (int i = 0; i < k; i++) {
			char path[64], *comm;
			int known = 0;

			snprintf(path, sizeof(path), "/proc/%d/comm", (int)kids[i]);
			comm = slurp(path, NULL);
			if (comm && !strncmp(comm, WORKER_COMM, strlen(WORKER_COMM))) {
				for (int j = 0; j < n; j++)
					known |= seen[j] == kids[i];
				if (!known && n < max)
					seen[n++] = kids[i];
			}
			free(comm);
		}
		if (cond_pid > 0 && waitpid(cond_pid, ret_status, WNOHANG) == cond_pid)
			return n;
		sleep_ms(20);
	}
	if (cond_pid > 0) {
		kill(cond_pid, SIGKILL);
		waitpid(cond_pid, ret_status, 0);
	}
	return n;
}

Test(endurance, cli_task_on_64_processes_runs_one_worker)
{
	/* 2 ms of every 200 ms each: 64 of them take 0.64 of a core. */
	char *argv[] = { (char *)bin("tests/programs/many_burn"), "64", tag, "2000", NULL };
	char pids[1024] = "", out[4200], errpath[4200];
	char *prof[] = { (char *)bin("rover"), "profile", "--pid",    pids, "--duration", "4s",
			 "--dump-period",      "2ms",	  "--output", out,  NULL };
	pid_t kids[80], seen[8], rover;
	struct folded f;
	int n, workers, with_samples = 0, rc, status = -1;
	char *err;

	watchdog(120);
	start_ready(argv, tmp_path("mb.out"));
	n = children_of(atoi(slurp(tmp_path("mb.out"), NULL) + 6), kids, 80);
	cr_assert_eq(n, 64, "%d children", n);
	for (int i = 0; i < n; i++)
		sprintf(pids + strlen(pids), "%s%d", i ? "," : "", (int)kids[i]);
	snprintf(out, sizeof(out), "%s", tmp_path("many.folded"));
	snprintf(errpath, sizeof(errpath), "%s", tmp_path("many.err"));
	rover = spawn_cmd(prof, errpath);
	workers = count_workers_while(rover, rover, 60000, seen, 8, &status);
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	err = slurp(errpath, NULL);
	cr_assert_eq(rc, 0, "rover profile failed: %s", err);
	cr_expect_eq(workers, 1, "%d workers for one task on 64 processes", workers);
	cr_assert_eq(folded_read(out, &f), 0);
	/* Each process is comm mb-K: every one of them should be there. */
	for (int k = 0; k < 64; k++) {
		char comm[16];
		uint64_t c = 0;

		snprintf(comm, sizeof(comm), "mb-%d;", k);
		for (size_t i = 0; i < f.n; i++)
			if (!strncmp(f.stacks[i], comm, strlen(comm)))
				c += f.counts[i];
		with_samples += c > 0;
	}
	cr_log_info("%d of 64 processes have samples, %llu samples, one task, %d worker(s)",
		    with_samples, (unsigned long long)f.total, workers);
	cr_expect_geq(with_samples, 60, "only %d of the 64 processes have samples", with_samples);
	cr_expect_gt(folded_with_frame(&f, "burn_many"), f.total / 2);
	folded_free(&f);
	free(err);

	/* A 65th: refused on the command line, before anything starts. */
	strcat(pids, ",1");
	rc = run_cmd(prof, &err);
	cr_expect_eq(rc, 2, "65 pids: exit %d", rc);
	cr_expect(err && strstr(err, "at most 64"), "65 pids: %s", err);
	free(err);
}

/*
 * 66 processes, each its own entity (mb-K): a task naming all of them runs one worker over the
 * first 64 the task lists, uploads one stream per process id and flush, and says what it left
 * out.
 */
Test(endurance, backend_task_on_66_processes_runs_one_worker)
{
	char *argv[] = { (char *)bin("tests/programs/many_burn"), "66", tag, "2000", NULL };
	char ids[66 * 16] = "", id[64];
	pid_t seen[8], mb;
	struct task_end e;
	struct upload_sum s;
	int workers, missing = 0;

	watchdog(160);
	mb = start_ready(argv, tmp_path("mb.out"));
	(void)mb;
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &oap_port);
	agent = agent_start("16MiB");
	for (int k = 0; k < 66; k++)
		sprintf(ids + strlen(ids), "%s@process:mb-%d", k ? "," : "", k);
	snprintf(id, sizeof(id), "mb-%s", tag);
	/* Each process burns 1% of a core: about 12 samples each in 6 s at 111 Hz. */
	set_task(id, ids, 6);
	cr_assert(wait_log("task mb-", 60000), "the task never started:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	workers = count_workers_while(agent, 0, 6000, seen, 8, NULL);
	wait_task_end(id, 40000, &e);
	cr_assert(e.ended && !e.failed, "task did not end well: %s\n%s", e.why,
		  slurp(tmp_path("rover.log"), NULL));
	wait_uploads(id, NULL, e.kernel, 10000, &s);
	/* The first 64 the task lists, by the fake OAP's ids of their names. */
	for (int k = 0; k < 66; k++) {
		char name[16], pid[80];
		int found = 0;

		snprintf(name, sizeof(name), "mb-%d", k);
		oap_process_id(name, pid, sizeof(pid));
		for (long p = 0; p < s.procs; p++)
			found |= !strcmp(s.proc_ids[p], pid);
		if (k < 64 && !found)
			cr_log_info("%s (process id %s) has no upload", name, pid);
		if (k < 64)
			missing += !found;
		else
			cr_expect(!found, "%s, past the 64 taken, was profiled", name);
	}
	cr_log_info("task %s: %ld samples (kernel %ld), %ld process ids uploaded, %ld streams, "
		    "%d worker(s)",
		    id, e.samples, e.kernel, s.procs, s.streams, workers);
	cr_expect_eq(workers, 1, "%d workers for one task", workers);
	cr_expect_eq(e.nprocs, 64, "the task took %ld process ids:\n%s", e.nprocs,
		     slurp(tmp_path("rover.log"), NULL));
	/* A process id with no sample in the whole task has no upload: most have some. */
	cr_expect_geq(s.procs, 60, "%ld process ids in the uploads", s.procs);
	cr_expect_eq(s.dump_count, e.kernel, "uploaded %ld, the kernel counted %ld:\n%s",
		     s.dump_count, e.kernel, slurp(tmp_path("rover.log"), NULL));
	cr_expect_eq(e.samples, e.kernel);
	cr_expect_eq(count_in_log("2 process id(s) and 0 pid(s) left out"), 1,
		     "what was left out is said once:\n%s", slurp(tmp_path("rover.log"), NULL));
	{
		int with = 0;

		char counts[64 * 12] = "";

		for (long p = 0; p < s.procs; p++) {
			with += s.proc_count[p] > 0;
			if (strlen(counts) + 12 < sizeof(counts))
				sprintf(counts + strlen(counts), " %ld", (long)s.proc_count[p]);
		}
		cr_log_info("samples per process id uploaded:%s", counts);
		cr_expect_geq(with, 60, "%d of 64 process ids have samples", with);
	}
	cr_expect_leq(missing, 4, "%d of the first 64 process ids have no upload:\n%s", missing,
		      slurp(tmp_path("rover.log"), NULL));
}

/* ---- B1. churn ---- */

/* A plain number from the environment, not scaled. */
static long env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v && atol(v) > 0 ? atol(v) : def;
}

struct sample {
	double t;
	long tasks_ok, tasks_failed;
	struct roles_now r;
	struct bpf_count b;
	double cpu_pct;	    /* the agent's, workers included (its cgroup) */
	double role_pct[3]; /* each long-lived role's */
	long churned;
};

/* x follows prev (NULL for the first): CPU percentages are over the time between them. */
static void sample_take(struct sample *x, const struct sample *prev, double t0, pid_t launcher,
			uid_t uid, long ok, long failed, uint64_t *cpu_prev, double *t_prev,
			const char *churn_out)
{
	uint64_t cpu = cg_usec();
	double now = now_s(), dt = now - *t_prev;

	x->t = now - t0;
	x->tasks_ok = ok;
	x->tasks_failed = failed;
	roles_read(launcher, &x->r);
	bpf_ours(uid, &x->b);
	x->cpu_pct = now > *t_prev ? (double)(cpu - *cpu_prev) / 1e4 / dt : 0;
	for (int i = 0; i < 3; i++)
		x->role_pct[i] = prev && dt > 0 && prev->r.pid[i] == x->r.pid[i]
					 ? 100.0 * (double)(x->r.ticks[i] - prev->r.ticks[i]) /
						   (double)sysconf(_SC_CLK_TCK) / dt
					 : 0;
	x->churned = churn_out ? last_count(churn_out, "started ") : 0;
	*cpu_prev = cpu;
	*t_prev = now;
}

static void sample_header(void)
{
	say("| t (s) | tasks ok / failed | launcher fds + pidfds, RSS MB | supervisor fds + pidfds, RSS MB | "
	    "shipper fds, RSS MB | BPF progs / maps / links | agent CPU %%: all (launcher, "
	    "supervisor, shipper) | processes started |");
	say("|---|---|---|---|---|---|---|---|");
}

static void sample_print(const struct sample *x)
{
	char roles[3][48];

	for (int i = 0; i < 3; i++)
		snprintf(roles[i], sizeof(roles[i]), "%d, %.1f", x->r.fds[i],
			 (double)x->r.rss[i] / 1024.0);
	snprintf(roles[0], sizeof(roles[0]), "%d + %d, %.1f", x->r.fds[0], x->r.pidfds,
		 (double)x->r.rss[0] / 1024.0);
	snprintf(roles[1], sizeof(roles[1]), "%d + %d, %.1f", x->r.fds[1], x->r.sup_pidfds,
		 (double)x->r.rss[1] / 1024.0);
	say("| %.0f | %ld / %ld | %s | %s | %s | %d / %d / %d | %.2f (%.2f, %.2f, %.2f) | %ld |",
	    x->t, x->tasks_ok, x->tasks_failed, roles[0], roles[1], roles[2], x->b.progs, x->b.maps,
	    x->b.links, x->cpu_pct, x->role_pct[0], x->role_pct[1], x->role_pct[2], x->churned);
}

/* Tolerances of the no-growth check, from the sample at a third of the run to the last. */
#define GROW_FDS 8	 /* descriptors per role */
#define GROW_RSS_KB 2048 /* plus ... */
#define GROW_RSS_PCT 5	 /* ... percent of RSS per role */

struct task_rec {
	char id[64];
	struct task_end e;
};

Test(endurance, churn)
{
	long dur = size_of("SOAK_CHURN_S", 40, 3600);
	long every = env_long("SOAK_SAMPLE_S", soak_mode() ? 60 : 10);
	long rate = env_long("SOAK_CHURN_RATE", 200), task_s = env_long("SOAK_TASK_S", 4);
	char rate_s[16], life_s[16] = "2000";
	char *churn_argv[] = {
		(char *)bin("tests/programs/churn"), rate_s, life_s, "10", "cPP", tag, NULL
	};
	char ids[1024] = "@process:soak-burn";
	struct sample *rows;
	struct task_rec *tasks;
	long nrows = 0, ntasks = 0, maxtasks, ok = 0, failed = 0, bad_uploads = 0, ref = 0;
	uint64_t cpu_prev;
	double t0, t_prev, next_sample;
	uid_t uid = roles_uid();
	pid_t burner;
	struct json_object *h;
	struct uploads u;
	struct bpf_count idle;

	watchdog(dur + 600);
	snprintf(rate_s, sizeof(rate_s), "%ld", rate);
	maxtasks = dur / task_s + 16;
	rows = calloc((size_t)(dur / every + 8), sizeof(*rows));
	tasks = calloc((size_t)maxtasks, sizeof(*tasks));
	cr_assert(rows && tasks);
	for (int k = 0; k < 10; k++)
		sprintf(ids + strlen(ids), ",@process:churn-c%02d", k);
	burner = start_burner();
	start_ready(churn_argv, tmp_path("churn.out"));
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &oap_port);
	/* The churn is 10 entities of many processes each: what is reported changes little, and
	 * keepAlive every 5 s keeps the OAP's record file small over an hour. */
	agent = agent_start_hb("16MiB", "5s");
	h = wait_reported(burner, 30000);
	cr_assert_not_null(h, "soak-burn not reported:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(h);

	say("\nchurn: %ld s, %ld short-lived matching processes a second (%s ms each, 10 entities), "
	    "%ld s ON_CPU tasks back to back from the backend on soak-burn and the 10 churn "
	    "entities; sampled every %ld s",
	    dur, rate, life_s, task_s, every);
	sample_header();
	t0 = t_prev = now_s();
	cpu_prev = cg_usec();
	sample_take(&rows[nrows], NULL, t0, agent, uid, 0, 0, &cpu_prev, &t_prev,
		    tmp_path("churn.out"));
	sample_print(&rows[nrows++]);
	next_sample = t0 + (double)every;
	while (now_s() - t0 < (double)dur && ntasks < maxtasks) {
		struct task_rec *t = &tasks[ntasks++];

		snprintf(t->id, sizeof(t->id), "churn-%s-%ld", tag, ntasks);
		set_task(t->id, ids, (int)task_s);
		/* Sampled while a task runs: its BPF objects are loaded then. */
		if (now_s() >= next_sample) {
			char started[96];

			snprintf(started, sizeof(started), "task %s: ON_CPU for", t->id);
			if (wait_log(started, 20000))
				sleep_ms(1000);
			sample_take(&rows[nrows], &rows[nrows - 1], t0, agent, uid, ok, failed,
				    &cpu_prev, &t_prev, tmp_path("churn.out"));
			sample_print(&rows[nrows++]);
			next_sample += (double)every;
		}
		wait_task_end(t->id, (int)task_s * 1000 + 60000, &t->e);
		if (t->e.ended && !t->e.failed)
			ok++;
		else
			failed++;
		if (!t->e.ended)
			say("churn: task %s never ended", t->id);
		else if (t->e.failed)
			say("churn: task %s %s", t->id, t->e.why);
	}
	sample_take(&rows[nrows], &rows[nrows - 1], t0, agent, uid, ok, failed, &cpu_prev, &t_prev,
		    tmp_path("churn.out"));
	sample_print(&rows[nrows++]);
	/* No task now: nothing of ours is loaded. */
	sleep_ms(1500);
	bpf_ours(uid, &idle);

	/* Every task's upload, sample for sample (the last flush trails the end a little). */
	sleep_ms(3000);
	uploads_read(&u, NULL);
	for (long i = 0; i < ntasks; i++) {
		struct upload_sum s;

		if (!tasks[i].e.ended || tasks[i].e.failed)
			continue;
		upload_sum_of(&u, tasks[i].id, &s);
		if (s.dump_count != tasks[i].e.kernel || tasks[i].e.samples != tasks[i].e.kernel ||
		    !s.streams) {
			if (bad_uploads++ < 5)
				say("churn: task %s: uploaded %ld, shipper %ld, kernel %ld, %ld streams",
				    tasks[i].id, s.dump_count, tasks[i].e.samples,
				    tasks[i].e.kernel, s.streams);
		}
	}
	say("churn: %ld tasks, %ld ended with all their samples uploaded, %ld failed, %ld "
	    "uploads short or long; %ld streams sent twice; after the last task: %d programs, %d "
	    "maps, %d links of ours",
	    ntasks, ok - bad_uploads, failed, bad_uploads, u.resent, idle.progs, idle.maps,
	    idle.links);
	uploads_free(&u);

	/* Growth: the last sample against the one at a third of the run (warmed up). */
	for (long i = 0; i < nrows; i++)
		if (rows[i].t >= (double)dur / 3) {
			ref = i;
			break;
		}
	for (int k = 0; k < 3; k++) {
		const struct sample *a = &rows[ref], *z = &rows[nrows - 1];
		long rss_tol = GROW_RSS_KB + a->r.rss[k] * GROW_RSS_PCT / 100;

		cr_expect_eq(a->r.pid[k], z->r.pid[k], "the %s was restarted", role_names[k]);
		cr_expect_leq(z->r.fds[k], a->r.fds[k] + GROW_FDS, "%s descriptors %d -> %d",
			      role_names[k], a->r.fds[k], z->r.fds[k]);
		cr_expect_leq(z->r.rss[k], a->r.rss[k] + rss_tol, "%s RSS %ld -> %ld kB",
			      role_names[k], a->r.rss[k], z->r.rss[k]);
	}
	for (long i = 0; i < nrows; i++) {
		/*
		 * One ON_CPU task at a time: at most its two programs (sampling, and naming kernel
		 * frames: worker/ksyms.c), its maps (ten of stacks and counts, four of the Python
		 * frame reader: bpf/python.bpf.h, four of the Java one: bpf/java.bpf.h, with the
		 * compiled methods' records, three of the JavaScript one: bpf/v8.bpf.h) and a link
		 * per CPU.
		 */
		cr_expect_leq(rows[i].b.progs, 2, "%d programs at %.0f s", rows[i].b.progs,
			      rows[i].t);
		cr_expect_leq(rows[i].b.maps, 21, "%d maps at %.0f s", rows[i].b.maps, rows[i].t);
		cr_expect_leq(rows[i].b.links, sysconf(_SC_NPROCESSORS_ONLN), "%d links at %.0f s",
			      rows[i].b.links, rows[i].t);
		/* Ended workers' live targets, 32 workers' at most (launcher/spawner.c). */
		cr_expect_leq(rows[i].r.pidfds, 32 * 11, "%d pidfds at %.0f s", rows[i].r.pidfds,
			      rows[i].t);
		/* Discovery's: the live matching processes (rate x 2 s), twice for slack. */
		cr_expect_leq(rows[i].r.sup_pidfds, rate * 2 * 2 + 64,
			      "the supervisor holds %d pidfds at %.0f s", rows[i].r.sup_pidfds,
			      rows[i].t);
	}
	cr_expect_eq(idle.progs + idle.maps + idle.links, 0, "BPF objects left with no task");
	cr_expect_eq(failed, 0, "%ld of %ld tasks failed", failed, ntasks);
	cr_expect_eq(bad_uploads, 0, "%ld tasks' uploads do not add up", bad_uploads);
	cr_expect_geq(ntasks, dur / (task_s + 4), "only %ld tasks in %ld s", ntasks, dur);
	/* The churn really was: processes started at about the rate asked. */
	cr_expect_geq(rows[nrows - 1].churned, rate * dur * 8 / 10, "%ld processes started",
		      rows[nrows - 1].churned);
	free(rows);
	free(tasks);
}

/* ---- B2. backend outage ---- */

/* Batch files in the spool directory and their bytes. */
static void spool_usage(long *ret_files, long *ret_bytes)
{
	DIR *d = opendir(spooldir);
	struct dirent *de;

	*ret_files = *ret_bytes = 0;
	while (d && (de = readdir(d))) {
		char path[512];
		struct stat st;

		if (!strstr(de->d_name, ".batch"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", spooldir, de->d_name);
		if (!stat(path, &st)) {
			(*ret_files)++;
			*ret_bytes += (long)st.st_size;
		}
	}
	if (d)
		closedir(d);
}

Test(endurance, backend_outage)
{
	long outage = size_of("SOAK_OUTAGE_S", 15, 600), every = soak_mode() ? 60 : 5;
	long task_s = outage + 12, files, bytes, max_files = 0, max_bytes = 0, max_rss = 0;
	/* 32 processes, each its own process id: 32 streams a flush, enough to fill the memory
	 * spool in seconds. */
	char *argv[] = { (char *)bin("tests/programs/many_burn"), "32", tag, "2000", NULL };
	char id[64], up[128], down[128], ids[1024] = "";
	struct task_end e;
	struct upload_sum s;
	pid_t shipper, kids[40];
	double t_down, t_up, t_drained = -1, next;
	int port2 = 0;

	watchdog(outage + 300);
	start_ready(argv, tmp_path("mb.out"));
	cr_assert_eq(children_of(atoi(slurp(tmp_path("mb.out"), NULL) + 6), kids, 40), 32);
	for (int k = 0; k < 32; k++)
		sprintf(ids + strlen(ids), "%s@process:mb-%d", k ? "," : "", k);
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &oap_port);
	/* The smallest memory spool, 64 KiB: the outage's uploads go on to files (64 MiB). */
	agent = agent_start("64KiB");
	shipper = find_child(agent, SHIPPER_COMM);
	snprintf(id, sizeof(id), "outage-%s", tag);
	set_task(id, ids, (int)task_s);
	for (int i = 0; i < 100; i++) {
		wait_uploads(id, NULL, 1, 0, &s);
		if (s.dump_count)
			break;
		sleep_ms(100);
	}
	cr_assert_gt(s.dump_count, 0, "no upload before the outage:\n%s",
		     slurp(tmp_path("rover.log"), NULL));
	sleep_ms(3000);

	say("\nbackend outage: %ld s in the middle of a %ld s ON_CPU task on 32 processes (flush "
	    "every 1 s), spool: 64 KiB in memory, then files up to 64 MiB",
	    outage, task_s);
	say("| t (s) | OAP | spool batch files | spool bytes | shipper RSS MB |");
	say("|---|---|---|---|---|");
	stop(oap, SIGTERM);
	cr_assert_eq(rename(tmp_path("rec.jsonl"), tmp_path("rec.1.jsonl")), 0);
	t_down = next = now_s();
	while (now_s() - t_down < (double)outage) {
		long rss = rss_kb(shipper);

		spool_usage(&files, &bytes);
		max_files = files > max_files ? files : max_files;
		max_bytes = bytes > max_bytes ? bytes : max_bytes;
		max_rss = rss > max_rss ? rss : max_rss;
		if (now_s() >= next) {
			say("| %.0f | down | %ld | %ld | %.1f |", now_s() - t_down, files, bytes,
			    (double)rss / 1024);
			next += (double)every;
		}
		sleep_ms(500);
	}
	oap = track(start_oap(oap_port, &port2));
	cr_assert_eq(port2, oap_port);
	t_up = now_s();
	for (int i = 0; i < 1200 && t_drained < 0; i++) {
		spool_usage(&files, &bytes);
		if (!files)
			t_drained = now_s() - t_up;
		else
			sleep_ms(100);
	}
	say("| %.0f | back | %ld | %ld | %.1f |", now_s() - t_down, files, bytes,
	    (double)rss_kb(shipper) / 1024);
	wait_task_end(id, (int)task_s * 1000 + 60000, &e);
	cr_assert(e.ended && !e.failed, "task %s: %s\n%s", id, e.why,
		  slurp(tmp_path("rover.log"), NULL));
	wait_uploads(id, NULL, e.kernel, 30000, &s);
	snprintf(up, sizeof(up), "backend 127.0.0.1:%d reachable", oap_port);
	snprintf(down, sizeof(down), "backend 127.0.0.1:%d unreachable", oap_port);
	/* The supervisor's calls back off up to 30 s: it may see the OAP back after the task. */
	for (int i = 0; i < 600 && count_in_log(up) < 2; i++)
		sleep_ms(100);
	{
		struct uploads u;

		uploads_read(&u, NULL);
		say("backend outage: spool files gone %.1f s after the OAP was back; the kernel "
		    "counted %ld, the shipper %ld, the OAP holds %ld in %ld streams (%ld sent twice, "
		    "counted once); spool at most %ld files, %ld bytes; shipper RSS at most %.1f MB; "
		    "log lines: supervisor %d unreachable, %d reachable; shipper %d unreachable, %d "
		    "reachable",
		    t_drained, e.kernel, e.samples, s.dump_count, s.streams, u.resent, max_files,
		    max_bytes, (double)max_rss / 1024, count_in_log(down), count_in_log(up),
		    count_in_log("backend unreachable:"), count_in_log("backend reachable,"));
		uploads_free(&u);
	}
	cr_expect_eq(s.dump_count, e.kernel, "the OAP holds %ld samples, the kernel counted %ld",
		     s.dump_count, e.kernel);
	cr_expect_eq(e.samples, e.kernel);
	cr_expect_gt(max_files, 0, "the outage's uploads never reached the spool's files");
	cr_expect_leq(max_bytes, 64l << 20, "spool files %ld bytes over 64 MiB", max_bytes);
	cr_expect_geq(t_drained, 0, "the spool did not drain once the OAP was back");
	/* One line per change of state: down once, up at the start and once back. */
	cr_expect_eq(count_in_log(down), 1, "supervisor: %d unreachable lines", count_in_log(down));
	cr_expect_eq(count_in_log(up), 2, "supervisor: %d reachable lines", count_in_log(up));
	cr_expect_eq(count_in_log("backend unreachable:"), 1, "shipper: %d unreachable lines",
		     count_in_log("backend unreachable:"));
	cr_expect_eq(count_in_log("backend reachable,"), 2, "shipper: %d reachable lines",
		     count_in_log("backend reachable,"));
	cr_expect_eq(count_in_log("dropped by the spool so far"),
		     count_in_log("0 dropped by the spool so far"), "the spool dropped uploads");
}

/* ---- B3. kill -9 of each role ---- */

/* `rover profile --connect` for pid, in the background; its stderr to err. */
static pid_t profile_start(pid_t pid, const char *duration, const char *out, const char *err)
{
	static char pids[32];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--connect",
			 sockdir,
			 "--pid",
			 pids,
			 "--duration",
			 (char *)duration,
			 "--dump-period",
			 "5ms",
			 "--output",
			 (char *)out,
			 NULL };

	snprintf(pids, sizeof(pids), "%d", (int)pid);
	return spawn_cmd(argv, err);
}

/* A short task through the agent works: its profile holds the burner's hot function. */
static int task_works(pid_t burner)
{
	char out[4200], err[4200];
	struct folded f;
	int rc, ok;

	snprintf(out, sizeof(out), "%s", tmp_path("recover.folded"));
	snprintf(err, sizeof(err), "%s", tmp_path("recover.err"));
	unlink(out);
	rc = wait_cmd(profile_start(burner, "1s", out, err), 30000);
	if (rc || folded_read(out, &f))
		return 0;
	ok = folded_with_leaf(&f, "burn_a") > 0;
	folded_free(&f);
	return ok;
}

enum { R_WORKER, R_SHIPPER, R_SUPERVISOR, R_LAUNCHER, NROLES };
static const char *const kill_names[NROLES] = { "worker", "shipper", "supervisor", "launcher" };

struct kill_stats {
	long kills, recovered, orphan_progs, orphan_links;
	double sum_s, max_s;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

Test(endurance, kill_9_each_role)
{
	long rounds = size_of("SOAK_KILLS", 3, 100);
	struct kill_stats st[NROLES] = { { 0 } };
	double *times[NROLES];
	struct bpf_count b;
	uid_t uid = roles_uid();
	pid_t burner;
	char out[4200], err[4200];

	watchdog(rounds * NROLES * 45 + 120);
	for (int r = 0; r < NROLES; r++)
		times[r] = calloc((size_t)rounds, sizeof(double));
	burner = start_burner();
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &oap_port);
	agent = agent_start("16MiB");
	cr_assert(task_works(burner), "the first task failed:\n%s\n%s",
		  slurp(tmp_path("recover.err"), NULL), slurp(tmp_path("rover.log"), NULL));
	bpf_ours(uid, &b);
	cr_assert_eq(b.progs + b.links, 0, "BPF objects of ours before any kill");
	snprintf(out, sizeof(out), "%s", tmp_path("killed.folded"));
	snprintf(err, sizeof(err), "%s", tmp_path("killed.err"));
	for (long round = 0; round < rounds; round++) {
		for (int role = 0; role < NROLES; role++) {
			pid_t c = profile_start(burner, "30s", out, err), worker, victim = -1;
			double t_kill, t_ok = -1;

			worker = wait_child(agent, WORKER_COMM, 20000);
			cr_assert_gt(worker, 0, "round %ld: no worker for the task:\n%s", round,
				     slurp(err, NULL));
			sleep_ms(300);
			switch (role) {
			case R_WORKER:
				victim = worker;
				break;
			case R_SHIPPER:
				victim = find_child(agent, SHIPPER_COMM);
				break;
			case R_SUPERVISOR:
				victim = find_child(agent, SUPERVISOR_COMM);
				break;
			case R_LAUNCHER:
				victim = agent;
				break;
			}
			cr_assert_gt(victim, 0, "round %ld: no %s to kill", round,
				     kill_names[role]);
			t_kill = now_s();
			kill(victim, SIGKILL);
			st[role].kills++;
			/* The task in flight fails (or ends short); its client is told. */
			wait_cmd(c, 60000);
			if (role == R_LAUNCHER) {
				waitpid(agent, NULL, 0);
				/* The roles go with it (PR_SET_PDEATHSIG), workers included. */
				for (int i = 0; i < 300 && roles_alive(uid); i++)
					sleep_ms(100);
				cr_assert_eq(roles_alive(uid), 0,
					     "round %ld: the roles outlived their launcher", round);
				/* Nothing holds our programs now: any left is an orphan. */
				bpf_ours(uid, &b);
				st[role].orphan_progs += b.progs;
				st[role].orphan_links += b.links;
				/* As systemd's Restart=on-failure would. */
				agent = agent_start("16MiB");
			} else if (role != R_WORKER) {
				for (int i = 0; i < 300; i++) {
					pid_t now = find_child(agent, role == R_SHIPPER
									      ? SHIPPER_COMM
									      : SUPERVISOR_COMM);

					if (now > 0 && now != victim)
						break;
					sleep_ms(100);
				}
			}
			for (int i = 0; i < 120 && t_ok < 0; i++) {
				if (task_works(burner))
					t_ok = now_s() - t_kill;
				else
					sleep_ms(500);
			}
			if (t_ok >= 0) {
				times[role][st[role].recovered++] = t_ok;
				st[role].sum_s += t_ok;
				st[role].max_s = t_ok > st[role].max_s ? t_ok : st[role].max_s;
			} else {
				say("kill -9: round %ld: no working task after the %s was killed",
				    round, kill_names[role]);
			}
			/* The recovery task is over: nothing of ours is loaded. */
			sleep_ms(200);
			bpf_ours(uid, &b);
			st[role].orphan_progs += b.progs;
			st[role].orphan_links += b.links;
			if (b.progs || b.links)
				say("kill -9: round %ld, %s: %d programs, %d links of ours with no task",
				    round, kill_names[role], b.progs, b.links);
		}
	}
	say("\nkill -9: each role in turn during a 30 s task, %ld rounds; recovered = a 1 s task "
	    "through the agent gets the target's samples",
	    rounds);
	say("| role | kills | recovered | to a working task: median s | max s | BPF programs / "
	    "links left |");
	say("|---|---|---|---|---|---|");
	for (int r = 0; r < NROLES; r++) {
		qsort(times[r], (size_t)st[r].recovered, sizeof(double), cmp_double);
		say("| %s | %ld | %ld | %.1f | %.1f | %ld / %ld |", kill_names[r], st[r].kills,
		    st[r].recovered, st[r].recovered ? times[r][st[r].recovered / 2] : -1.0,
		    st[r].max_s, st[r].orphan_progs, st[r].orphan_links);
		cr_expect_eq(st[r].recovered, st[r].kills, "%s: %ld of %ld kills recovered",
			     kill_names[r], st[r].recovered, st[r].kills);
		cr_expect_eq(st[r].orphan_progs + st[r].orphan_links, 0,
			     "%s: BPF objects left behind", kill_names[r]);
		free(times[r]);
	}
	stop(agent, SIGTERM);
}

/* ---- B4. a target that forks and execs ---- */

/* What the agent may take while a target forks and execs as fast as it can. */
#define STORM_AGENT_PCT 5.0

Test(endurance, fork_storm)
{
	long dur = size_of("SOAK_STORM_S", 15, 600), rate = env_long("SOAK_STORM_RATE", 1000);
	char rate_s[16], id[64];
	char *argv[] = { (char *)bin("tests/programs/fork_storm"), rate_s, tag, "30", "4", NULL };
	long long roles0[3], roles1[3], ticks = sysconf(_SC_CLK_TCK);
	struct roles_now r;
	struct task_end e;
	struct upload_sum s;
	struct json_object *h;
	uint64_t cpu0, cpu1;
	long spawned0, spawned1;
	double t0, t1, pct, role_pct[3];
	pid_t storm;
	char started[128];

	watchdog(dur + 240);
	snprintf(rate_s, sizeof(rate_s), "%ld", rate);
	storm = start_ready(argv, tmp_path("storm.out"));
	cr_assert_eq(write_file(tmp_path("tasks.json"), "[]\n"), 0);
	oap = start_oap(0, &oap_port);
	agent = agent_start("16MiB");
	h = wait_reported(storm, 30000);
	cr_assert_not_null(h, "fork_storm not reported:\n%s", slurp(tmp_path("rover.log"), NULL));
	json_object_put(h);
	snprintf(id, sizeof(id), "storm-%s", tag);
	set_task(id, "@process:storm", (int)dur);
	snprintf(started, sizeof(started), "task %s: ON_CPU for", id);
	cr_assert(wait_log(started, 30000), "the task did not start:\n%s",
		  slurp(tmp_path("rover.log"), NULL));
	roles_read(agent, &r);
	for (int i = 0; i < 3; i++)
		roles0[i] = cpu_ticks(r.pid[i]);
	cpu0 = cg_usec();
	spawned0 = last_count(tmp_path("storm.out"), "spawned ");
	t0 = now_s();
	wait_task_end(id, (int)dur * 1000 + 60000, &e);
	t1 = now_s();
	cpu1 = cg_usec();
	spawned1 = last_count(tmp_path("storm.out"), "spawned ");
	for (int i = 0; i < 3; i++) {
		roles1[i] = cpu_ticks(r.pid[i]);
		role_pct[i] = 100.0 * (double)(roles1[i] - roles0[i]) / (double)ticks / (t1 - t0);
	}
	cr_assert(e.ended && !e.failed, "task %s: %s\n%s", id, e.why,
		  slurp(tmp_path("rover.log"), NULL));
	wait_uploads(id, "storm_burn", e.kernel, 20000, &s);
	pct = cg[0] ? (double)(cpu1 - cpu0) / 1e4 / (t1 - t0) : -1;
	say("\nfork storm: a target asking for %ld fork+exec a second (4 threads spawning; "
	    "children match a finder too), a %ld s ON_CPU task on it from the backend",
	    rate, dur);
	say("| fork+exec a second | samples (kernel) | uploaded | with storm_burn innermost | "
	    "agent CPU %% of a core | launcher | supervisor | shipper | the worker (the rest) |");
	say("|---|---|---|---|---|---|---|---|---|");
	say("| %.0f | %ld | %ld | %ld | %.2f | %.2f | %.2f | %.2f | %.2f |",
	    (double)(spawned1 - spawned0) / (t1 - t0), e.kernel, s.dump_count, s.leaf_samples, pct,
	    role_pct[0], role_pct[1], role_pct[2], pct - role_pct[0] - role_pct[1] - role_pct[2]);
	cr_expect_eq(s.dump_count, e.kernel, "uploaded %ld, the kernel counted %ld", s.dump_count,
		     e.kernel);
	cr_expect_eq(e.samples, e.kernel);
	/* The parent burns 30% of a core in storm_burn; its spawning threads take the rest. */
	cr_expect_gt(s.leaf_samples, e.kernel / 5, "storm_burn has %ld of %ld samples",
		     s.leaf_samples, e.kernel);
	cr_expect_gt(spawned1 - spawned0, (long)(t1 - t0) * 50, "only %ld spawned",
		     spawned1 - spawned0);
	if (cg[0])
		cr_expect_leq(pct, STORM_AGENT_PCT, "the agent took %.2f%% of a core", pct);
}
