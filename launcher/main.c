// SPDX-License-Identifier: Apache-2.0
/*
 * rover: the launcher. The one process that keeps privileges: it starts the supervisor and the
 * shipper (each drops to the rover user at once), spawns a worker per task when the supervisor
 * asks, and opens for the shipper what only it may open. It never parses backend or traced
 * data. `rover profile` is also a client of the supervisor, like any other. `rover run` reads
 * the config file (root-owned input) to refuse a bad one before anything starts, and reads the
 * files only root may read (TLS key): the supervisor and the shipper get their bytes, never
 * the paths.
 */

#define _GNU_SOURCE
#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include "common/config/config.h"
#include "configs/rover_configs.h" /* generated: rover_default_config */
#include "common/formats.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/netrec.h"
#include "common/privdrop.h"
#include "common/util.h"
#include "launcher/client.h"
#include "launcher/select.h"
#include "launcher/watch.h"
#include "launcher/spawner.h"
#include "launcher/trust.h"

/* A role that keeps dying is restarted after 200 ms, then twice as late each time, up to 10 s. */
#define ROLE_RESTART_MIN_MS 200
#define ROLE_RESTART_MAX_MS 10000
/* A role that ran this long is healthy again: its next restart is quick. */
#define ROLE_HEALTHY_MS 30000

static const char usage_main[] =
	"usage: rover COMMAND [OPTIONS]\n"
	"\n"
	"A privilege-separated eBPF profiling agent.\n"
	"\n"
	"commands:\n"
	"  profile   profile processes now and write the profile to a file (no backend)\n"
	"  watch     profile a process once its CPU, threads or the host's load cross a\n"
	"            threshold (continuous profiling without a backend)\n"
	"  run       run the agent with a SkyWalking OAP backend: process discovery, tasks\n"
	"            from the backend, uploads (rover run --config FILE)\n"
	"  serve     run the agent: supervisor, shipper and workers, taking tasks from\n"
	"            `rover profile --connect DIR` until stopped\n"
	"  spawner   run only the launcher's spawner role (one container per role)\n"
	"\n"
	"`rover COMMAND --help` describes each command. Run as root (or with CAP_SETUID,\n"
	"CAP_SETGID, CAP_SETPCAP, CAP_BPF, CAP_PERFMON, CAP_KILL, CAP_CHOWN, CAP_SYS_PTRACE,\n"
	"CAP_CHECKPOINT_RESTORE, CAP_DAC_READ_SEARCH, and CAP_SYSLOG for kernel symbols); every\n"
	"other process drops to the rover system user, which must be theirs alone.\n";

static const char usage_profile[] =
	"usage: rover profile (--pid PID[,PID...] | --name REGEX) [--children] --output FILE\n"
	"                     [OPTIONS]\n"
	"\n"
	"Profiles the processes for a while and writes one profile.\n"
	"\n"
	"  -p, --pid PID[,PID...]     processes to profile (1 to 64; by host pid)\n"
	"  -n, --name REGEX           the processes whose command name, executable path or\n"
	"                             command line REGEX matches (PCRE2, as discovery's finders'\n"
	"                             match_cmd_regex), each said on a line; with --pid, both\n"
	"      --children             the processes' descendants too: those running at the start\n"
	"                             and those they start while the task runs (looked for every\n"
	"                             100 ms), 64 at the start and 256 more at once at most\n"
	"  -o, --output FILE          where the profile goes\n"
	"  -f, --format FMT           folded | pprof | svg | html (on_cpu, off_cpu); txt | json\n"
	"                             | html (network); default from FILE's extension (.folded,\n"
	"                             .pb.gz, .svg, .txt, .json, .html), else folded or txt\n"
	"  -t, --type TYPE            on_cpu (default): where the CPU time goes, in samples;\n"
	"                             off_cpu: where threads wait, in microseconds off the CPU;\n"
	"                             network: every TCP connection of the processes, L4 figures\n"
	"                             and HTTP/1.x exchanges, per peer and per endpoint\n"
	"  -d, --duration DUR         how long to profile (default 10s; e.g. 500ms, 30s, 2m)\n"
	"      --dump-period DUR      sampling period (default 9ms = 111 Hz; minimum 1ms)\n"
	"      --flush-interval DUR   how often the worker ships counts (default 5s; network: 2s)\n"
	"      --capture-bytes N      network: payload bytes copied per call (default 1024,\n"
	"                             at most 4096)\n"
	"  -u, --user USER            user the other processes run as (default $ROVER_USER, else\n"
	"                             rover)\n"
	"  -c, --connect DIR          submit to an agent started with `rover serve --socket-dir DIR`\n"
	"                             instead of starting one\n"
	"      --attach HOOK          off_cpu hook: auto (default: tp_btf, else raw_tp), tp_btf,\n"
	"                             raw_tp; for troubleshooting a kernel. network: auto\n"
	"                             (default: the socket calls, else the syscalls), sock,\n"
	"                             syscalls (also measures each call's duration, at a cost\n"
	"                             to every process of the host), raw_tp (syscalls)\n"
	"      --unwind HOW           user stacks: dwarf (default: a copy of the stack top,\n"
	"                             unwound with the binaries' CFI, callers in code without\n"
	"                             frame pointers kept) or fp (frame pointers, cheaper)\n"
	"      --python-native HOW    Python targets (--unwind dwarf): spliced (default: each\n"
	"                             Python call replaces the interpreter's evaluation loop\n"
	"                             frame, the interpreter's C frames between Python calls\n"
	"                             hidden) or all (every native frame kept)\n"
	"      --python-frames ON     on (default: Python targets' frames read and named) or\n"
	"                             off (native frames only)\n"
	"  -h, --help                 this text\n"
	"\n"
	"Folded output: one line per distinct stack, `comm;outermost;...;innermost VALUE`, kernel\n"
	"frames last with the suffix _[k]; VALUE is samples (on_cpu) or microseconds off the CPU\n"
	"(off_cpu). The task ends early when every target has exited; Ctrl-C ends it early too.\n"
	"Either way the profile is written with what was collected.\n";

static const char usage_serve[] =
	"usage: rover serve [--socket-dir DIR] [--user USER]\n"
	"       rover spawner --socket-dir DIR [--user USER]\n"
	"\n"
	"serve: starts the supervisor and the shipper, restarts them if they die, spawns workers,\n"
	"and runs until SIGINT/SIGTERM. Submit tasks with `rover profile --connect DIR ...`.\n"
	"spawner: the same launcher role alone, for a deployment where the supervisor and the\n"
	"shipper run in their own containers and share DIR.\n"
	"\n"
	"  -s, --socket-dir DIR   directory for the Unix sockets (default: a new /tmp/rover.XXXXXX)\n"
	"  -u, --user USER        user the other processes run as (default $ROVER_USER, else rover)\n";

static const char usage_run[] =
	"usage: rover run [--config FILE] [--socket-dir DIR] [--user USER]\n"
	"\n"
	"Runs the agent against a SkyWalking OAP: discovers processes, reports them, polls\n"
	"profiling tasks, runs them, uploads their data. FILE is the upstream rover YAML format\n"
	"(see configs/rover_configs.yaml); without it, that file as built in. ${NAME:default} in any\n"
	"value is taken from the environment. A bad config is refused before anything starts.\n"
	"Tasks from `rover profile --connect DIR` are taken too.\n"
	"\n"
	"  -c, --config FILE      the config file\n"
	"  -s, --socket-dir DIR   directory for the Unix sockets (default: a new /tmp/rover.XXXXXX)\n"
	"  -u, --user USER        user the other processes run as (default $ROVER_USER, else rover)\n";

/* Bytes handed to the supervisor and the shipper as memfds: config, CA, client cert, key. */
enum { BLOB_CONFIG, BLOB_CA, BLOB_CERT, BLOB_KEY, NBLOBS };

struct launcher {
	char *blob[NBLOBS];
	size_t blob_len[NBLOBS];
	int fatal; /* a role refused its configuration (exit 78): stop */
	char sockdir[PATH_MAX];
	int own_sockdir;
	int dirfd; /* the socket directory, -1 until set up */
	char bindir[PATH_MAX];
	const char *user;
	uid_t uid;
	gid_t gid;
	int manage_roles;  /* start and restart the supervisor and the shipper */
	int stack_only;	   /* a one-shot ON_CPU/OFF_CPU task: the shipper serves no NETWORK task */
	pid_t role_pid[2]; /* supervisor, shipper */
	uint64_t role_restart_at[2];
	uint64_t role_started_at[2];
	unsigned role_backoff_ms[2];
	struct spawner *sp;
	int sigfd;
};

static int die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "rover: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nrover: try 'rover --help'\n");
	return 2;
}

static int parse_pids(const char *arg, struct task_spec *spec)
{
	char buf[1024], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v;

		errno = 0;
		v = strtol(tok, &end, 10);
		if (errno || *end || v <= 0 || v > INT32_MAX)
			return -EINVAL;
		if (spec->npids >= ROVER_MAX_PIDS)
			return -E2BIG;
		spec->pids[spec->npids++] = (int32_t)v;
	}
	return spec->npids ? 0 : -EINVAL;
}

static int duration_ms_arg(const char *opt, const char *arg, uint64_t min_us, uint32_t *ret_ms)
{
	uint64_t us;

	if (parse_duration_us(arg, &us) || us < min_us || us / 1000 > UINT32_MAX) {
		fprintf(stderr, "rover: bad %s '%s': a duration like 9ms, 10s or 2m is expected\n",
			opt, arg);
		return -EINVAL;
	}
	*ret_ms = (uint32_t)(us / 1000);
	return 0;
}

static int has_privileges(void)
{
	static const int need[] = { CAP_SETUID,
				    CAP_SETGID,
				    CAP_SETPCAP,
				    CAP_BPF,
				    CAP_PERFMON,
				    CAP_KILL,
				    CAP_CHOWN,
				    CAP_SYS_PTRACE,
				    CAP_CHECKPOINT_RESTORE,
				    CAP_DAC_READ_SEARCH };

	capng_get_caps_process();
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!capng_have_capability(CAPNG_EFFECTIVE, (unsigned)need[i]))
			return 0;
	return 1;
}

/* A sealed memfd holding len bytes, close-on-exec here (the role gets its own copy). */
static int blob_fd(const char *name, const char *buf, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	return fd;
}

static pid_t start_role(struct launcher *l, const char *bin, int role)
{
	static const char *const opt[NBLOBS] = { "--config-fd", "--ca-fd", "--cert-fd",
						 "--key-fd" };
	char exe[PATH_MAX + 32], fdnum[NBLOBS][16];
	char *argv[5 + 2 * NBLOBS] = { (char *)bin, "--user", (char *)(l->user ? l->user : "") };
	int fds[2 + NBLOBS], nfds = 2, argc = 3, err = 0;
	pid_t pid = -1;

	snprintf(exe, sizeof(exe), "%s/%s", l->bindir, bin);
	/* Its connections to us (and, through us, to the other roles) are made here. */
	err = spawner__role_fds(l->sp, role, fds);
	if (err) {
		errno = -err;
		return -1;
	}
	/* It then skips loading the Go TLS disassembler (shipper/capstone_load.c). */
	if (role == ROLE_SHIPPER && l->stack_only)
		argv[argc++] = "--stack-only";
	/* The blobs land after its connections, in the order given here. */
	for (int i = 0; i < NBLOBS && !err; i++) {
		if (!l->blob[i])
			continue;
		fds[nfds] = blob_fd(opt[i] + 2, l->blob[i], l->blob_len[i]);
		if (fds[nfds] < 0) {
			err = errno;
			break;
		}
		snprintf(fdnum[i], sizeof(fdnum[i]), "%d", ROLE_FD_LAUNCHER + nfds);
		argv[argc++] = (char *)opt[i];
		argv[argc++] = fdnum[i];
		nfds++;
	}
	argv[argc] = NULL;
	if (!err) {
		pid = spawner__exec(exe, argv, fds, nfds);
		if (pid < 0)
			err = (int)-pid;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	errno = err;
	return pid;
}

static void start_roles(struct launcher *l, int which)
{
	static const char *const bins[2] = { "rover-supervisor", "rover-shipper" };
	static const int roles[2] = { ROLE_SUPERVISOR, ROLE_SHIPPER };

	for (int i = 0; i < 2; i++) {
		if (which >= 0 && which != i)
			continue;
		l->role_pid[i] = start_role(l, bins[i], roles[i]);
		l->role_started_at[i] = now_mono_ms();
		if (l->role_pid[i] < 0) {
			/* No process to reap: try again after the usual restart delay. */
			log_warn("starting %s: %s", bins[i], strerror(errno));
			l->role_pid[i] = 0;
			l->role_restart_at[i] = now_mono_ms() + ROLE_RESTART_MAX_MS;
			spawner__set_role_pid(l->sp, roles[i], 0);
			continue;
		}
		spawner__set_role_pid(l->sp, roles[i], l->role_pid[i]);
	}
}

static long cpu_ms(const struct rusage *ru)
{
	return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
	       (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000;
}

static void reap(struct launcher *l)
{
	static const char *const names[2] = { "supervisor", "shipper" };
	struct rusage ru;
	int status;
	pid_t pid;

	while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
		if (spawner__child_exited(l->sp, pid, status)) {
			log_debug("worker %d used %ld ms of CPU, peak RSS %ld kB, %ld page faults",
				  (int)pid, cpu_ms(&ru), ru.ru_maxrss, ru.ru_minflt + ru.ru_majflt);
			continue;
		}
		for (int i = 0; i < 2; i++) {
			if (pid != l->role_pid[i])
				continue;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 78) {
				/* EX_CONFIG: its config, or a library it needs for it (the
				 * OAP module, libcurl): a restart would fail the same way. */
				log_err("%s refused its configuration or what it needs for it "
					"(its message above); stopping",
					names[i]);
				l->role_pid[i] = 0;
				l->fatal = 1;
				continue;
			}
			if (WIFSIGNALED(status))
				log_warn("%s %d killed by signal %d (%s); restarting", names[i],
					 (int)pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
			else
				log_warn("%s %d exited with status %d; restarting", names[i],
					 (int)pid, WEXITSTATUS(status));
			/* The next restart's delay is set below; it doubles while the role keeps failing. */
			l->role_pid[i] = 0;
			if (now_mono_ms() - l->role_started_at[i] >= ROLE_HEALTHY_MS ||
			    !l->role_backoff_ms[i])
				l->role_backoff_ms[i] = ROLE_RESTART_MIN_MS;
			else if (l->role_backoff_ms[i] < ROLE_RESTART_MAX_MS)
				l->role_backoff_ms[i] *= 2;
			if (l->role_backoff_ms[i] > ROLE_RESTART_MAX_MS)
				l->role_backoff_ms[i] = ROLE_RESTART_MAX_MS;
			l->role_restart_at[i] = now_mono_ms() + l->role_backoff_ms[i];
		}
	}
}

/* Whether uid/gid may reach sockets in dir, judged by the kernel with those ids. */
static int user_can_enter(const char *dir, uid_t uid, gid_t gid)
{
	int ok;

	setfsgid(gid);
	setfsuid(uid);
	ok = faccessat(AT_FDCWD, dir, X_OK, AT_EACCESS) == 0;
	setfsuid(0);
	setfsgid(0);
	return ok;
}

/*
 * What the launcher keeps once set up, in its effective, permitted and bounding sets (the
 * bounding set is also all that a role it starts as root can ever hold). CAP_CHOWN (the
 * sockets' group) and CAP_SYSLOG (kallsyms, opened once) serve the set-up only.
 */
/* clang-format off */
static const int launcher_caps[] = {
	CAP_SETUID, CAP_SETGID,	  /* roles drop to the rover user; the trace check takes a
				   * client's ids */
	CAP_SETPCAP,		  /* roles cut their bounding sets */
	CAP_BPF, CAP_PERFMON,	  /* what workers keep */
	CAP_KILL,		  /* stopping workers that run as another uid */
	CAP_SYS_PTRACE,		  /* /proc/PID/maps of profiled processes of any user */
	CAP_CHECKPOINT_RESTORE,	  /* /proc/PID/map_files of profiled processes (with SYS_PTRACE) */
	CAP_DAC_READ_SEARCH,	  /* files profiled processes map, whoever owns them */
};
/* clang-format on */

/* Sheds every capability the launcher does not need any more, and sets NoNewPrivs. */
static int shed_privileges(void)
{
	capng_get_caps_process();
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		int keep = 0;

		for (size_t i = 0; i < sizeof(launcher_caps) / sizeof(launcher_caps[0]); i++)
			keep |= launcher_caps[i] == cap;
		if (!keep)
			capng_update(CAPNG_DROP,
				     CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_INHERITABLE |
					     CAPNG_BOUNDING_SET,
				     (unsigned)cap);
	}
	if (capng_apply(CAPNG_SELECT_BOTH | CAPNG_SELECT_BOUNDS))
		return -EPERM;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/*
 * The first process, other than ours, whose real, effective, saved or file-system uid is uid;
 * 0 when none. Processes on their way out (a previous agent's roles) get 6 s to go: more than
 * the 5 s their own launcher gives them before it kills them (teardown).
 *
 * The kernel answers first, in one call, whether any task of this pid namespace has uid as
 * its real uid (getpriority(PRIO_USER) walks its task list; ESRCH: none). Only then is /proc
 * read, to name the process, let a zombie or a leaving role go, and see the other three uids:
 * reading every /proc/PID/status cost 29 us a process here, 0.3 s of every start on a host of
 * 10 000. What the fast answer misses, a process holding uid as its effective or saved uid but
 * not as its real one, comes only from a set-user-ID file of the roles' user or from root; such
 * a process could as well start a moment after this check, which no start-time check sees
 * (policy/README.md, "The rover user": it must own no set-user-ID file).
 */
static pid_t uid_taken(uid_t uid, char comm[32])
{
	uint64_t until = now_mono_ms() + 6000;
	pid_t self = getpid();

	errno = 0;
	if (getpriority(PRIO_USER, uid) == -1 && errno == ESRCH)
		return 0;
	for (;;) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		pid_t found = 0;

		if (!d)
			return 0;
		while (!found && (de = readdir(d))) {
			char path[64], line[256];
			unsigned u[4];
			FILE *f;
			int pid = atoi(de->d_name);

			if (pid <= 0 || pid == self)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/status", pid);
			f = fopen(path, "re");
			if (!f)
				continue;
			comm[0] = 0;
			while (fgets(line, sizeof(line), f)) {
				if (!strncmp(line, "Name:\t", 6))
					snprintf(comm, 32, "%.*s", (int)strcspn(line + 6, "\n"),
						 line + 6);
				else if (!strncmp(line, "State:\tZ", 8))
					break; /* a zombie holds nothing */
				else if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2],
						&u[3]) == 4) {
					for (int k = 0; k < 4; k++)
						if (u[k] == uid)
							found = pid;
					break;
				}
			}
			fclose(f);
		}
		closedir(d);
		if (!found || now_mono_ms() >= until)
			return found;
		usleep(100000);
	}
}

static int setup_steps(struct launcher *l, const char *sockdir)
{
	struct spawner_config cfg;
	char comm[32], bad[96] = "";
	sigset_t mask;
	pid_t other;
	ssize_t n;
	int err;

	err = privdrop_lookup_user(l->user, &l->uid, &l->gid);
	if (err) {
		if (err == -EPERM)
			fprintf(stderr, "rover: user %s: roles never run as root or nobody\n",
				l->user ? l->user : "rover");
		else
			fprintf(stderr,
				"rover: user %s not found: create it with 'make install', "
				"systemd-sysusers (deploy/sysusers.d/rover.conf) or "
				"scripts/add-rover-user.sh\n",
				l->user ? l->user : "rover");
		return err;
	}
	n = readlink("/proc/self/exe", l->bindir, sizeof(l->bindir) - 1);
	if (n <= 0)
		return -errno;
	l->bindir[n] = '\0';
	*strrchr(l->bindir, '/') = '\0';
	if (sockdir) {
		if (snprintf(l->sockdir, sizeof(l->sockdir), "%s", sockdir) >=
		    (int)sizeof(l->sockdir))
			return -ENAMETOOLONG;
	} else {
		strcpy(l->sockdir, "/tmp/rover.XXXXXX");
		if (!mkdtemp(l->sockdir))
			return -errno;
		l->own_sockdir = 1;
	}
	/* Root's, and nobody else may write in it: no socket in it can be renamed or replaced,
	 * no link planted for root to follow. Its group (the rover group) may reach ctl.sock. */
	l->dirfd = trust_dir(l->sockdir, 0, 1, bad, sizeof(bad));
	if (l->dirfd == -EPERM) {
		fprintf(stderr, "rover: socket directory %s: %s is not root's alone; refusing it\n",
			l->sockdir, bad);
		return -EPERM;
	}
	if (l->dirfd < 0)
		return l->dirfd;
	/*
	 * The roles' uid is their only wall against each other's neighbours: a process of that
	 * uid which rover did not start could signal them, and would share whatever the uid is
	 * granted. So the uid must be rover's alone. (`rover spawner` starts no role but
	 * workers: the supervisor and the shipper of its pod run as that uid by design, and
	 * keeping the uid the pod's alone is the deployment's part, policy/README.md.)
	 */
	other = l->manage_roles ? uid_taken(l->uid, comm) : 0;
	if (other) {
		fprintf(stderr,
			"rover: uid %u (the roles' user) already runs process %d (%s), which this "
			"agent did not start: the roles' user must be theirs alone (another rover "
			"agent? hand it the task with 'rover profile --connect DIR', or give this one "
			"its own --user)\n",
			(unsigned)l->uid, (int)other, comm);
		return -EBUSY;
	}
	if (fchown(l->dirfd, 0, l->gid) || fchmod(l->dirfd, 0750))
		return -errno;
	if (!l->manage_roles && !user_can_enter(l->sockdir, l->uid, l->gid)) {
		fprintf(stderr,
			"rover: user %u cannot reach %s: a parent directory is closed to it\n",
			(unsigned)l->uid, l->sockdir);
		return -EACCES;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	l->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->sigfd < 0)
		return -errno;
	cfg = (struct spawner_config){ .dirfd = l->dirfd,
				       .bindir = l->bindir,
				       .user = l->user,
				       .uid = l->uid,
				       .gid = l->gid,
				       .listen = !l->manage_roles };
	l->sp = spawner__new(&cfg);
	if (!l->sp)
		return -errno;
	err = shed_privileges();
	if (!err)
		err = sandbox_apply(&launcher_policy);
	if (err)
		return err;
	if (l->manage_roles)
		start_roles(l, -1);
	return 0;
}

/* Sets the launcher up; on failure, leaves nothing behind (its own socket directory). */
static int setup(struct launcher *l, const char *sockdir)
{
	int err = setup_steps(l, sockdir);

	if (err && !l->sp) {
		if (l->dirfd >= 0)
			close(l->dirfd);
		l->dirfd = -1;
		if (l->own_sockdir)
			rmdir(l->sockdir);
	}
	return err;
}

static void teardown(struct launcher *l)
{
	spawner__stop_workers(l->sp);
	for (int i = 0; i < 2; i++)
		if (l->role_pid[i] > 0)
			kill(l->role_pid[i], SIGTERM);
	/* 5 s to end in order (the shipper sends what waits); then they are killed. */
	for (int i = 0; i < 2; i++) {
		for (int waited = 0; l->role_pid[i] > 0; waited += 50) {
			struct rusage ru;

			if (wait4(l->role_pid[i], NULL, WNOHANG, &ru) == l->role_pid[i]) {
				log_debug("%s used %ld ms of CPU (user %ld, system %ld), peak RSS %ld kB, "
					  "%ld page faults",
					  i ? "shipper" : "supervisor", cpu_ms(&ru),
					  ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000,
					  ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000,
					  ru.ru_maxrss, ru.ru_minflt + ru.ru_majflt);
				break;
			}
			if (waited == 5000) {
				log_warn("%s %d did not stop in 5 s; killing it",
					 i ? "shipper" : "supervisor", (int)l->role_pid[i]);
				kill(l->role_pid[i], SIGKILL);
				waitpid(l->role_pid[i], NULL, 0);
				break;
			}
			usleep(50000);
		}
	}
	/*
	 * The roles were waited for above: what is left are workers, told to stop at the start
	 * of the teardown. Up to 2 s for them to end (one unloading its programs may still be
	 * at it), so that none outlives the launcher unreaped and each one's CPU is said.
	 */
	for (int waited = 0;;) {
		struct rusage ru;
		pid_t pid = wait4(-1, NULL, WNOHANG, &ru);

		if (pid < 0 || (pid == 0 && waited >= 2000))
			break;
		if (pid == 0) {
			usleep(20000);
			waited += 20;
			continue;
		}
		log_debug("worker %d used %ld ms of CPU, peak RSS %ld kB, %ld page faults",
			  (int)pid, cpu_ms(&ru), ru.ru_maxrss, ru.ru_minflt + ru.ru_majflt);
	}
	spawner__free(l->sp);
	if (l->dirfd >= 0) {
		unlinkat(l->dirfd, "ctl.sock", 0);
		unlinkat(l->dirfd, "spawner.sock", 0);
		close(l->dirfd);
	}
	if (l->own_sockdir)
		rmdir(l->sockdir);
}

/*
 * The launcher's loop: spawner requests, children, signals, and (client >= 0) the replies to
 * our own task. Returns the exit status.
 */
/*
 * The task's output, as it comes on *out, into file (client_copy_output); at its end *out is
 * closed and -1. 0, or -errno of a failed write, said once.
 */
static int take_output(int *out, int file, const char *output, int finish)
{
	int rc;

	if (*out < 0)
		return 0;
	rc = finish ? client_finish_output(*out, file, 10000) : client_copy_output(*out, file);
	if (rc == 1)
		return 0;
	if (rc < 0)
		fprintf(stderr, "rover: writing %s: %s\n", output, strerror(-rc));
	close(*out);
	*out = -1;
	return rc;
}

/* The output's socket from MSG_CTL_ACCEPTED: the first one kept, any other closed. */
static void take_accepted(int *out, int got)
{
	if (*out < 0)
		*out = got;
	else if (got >= 0)
		close(got);
}

static int run(struct launcher *l, int client, int out, int file, const char *output, uint32_t type)
{
	int fds[16], stopping = 0, status = 0, out_err = 0;
	uint64_t task_id = 0;

	for (;;) {
		struct pollfd pfd[19];
		int n, np = 0, timeout = -1;
		uint64_t now = now_mono_ms();

		for (int i = 0; i < 2 && l->manage_roles && !stopping; i++) {
			if (!l->role_pid[i] && now >= l->role_restart_at[i])
				start_roles(l, i);
			/* Woken for a role's restart, else only by a message, a child or a signal
			 * (a wakeup costs about 70 us here: 40 a task at the old 250 ms tick). */
			if (!l->role_pid[i]) {
				uint64_t at = l->role_restart_at[i] > now
						      ? l->role_restart_at[i] - now
						      : 0;

				if (timeout < 0 || at < (uint64_t)timeout)
					timeout = (int)(at < 60000 ? at : 60000);
			}
		}
		/* After the restarts: a role started above is polled from now on. */
		n = spawner__fds(l->sp, fds, 16);
		pfd[np++] = (struct pollfd){ .fd = l->sigfd, .events = POLLIN };
		if (client >= 0)
			pfd[np++] = (struct pollfd){ .fd = client, .events = POLLIN };
		if (out >= 0)
			pfd[np++] = (struct pollfd){ .fd = out, .events = POLLIN };
		for (int i = 0; i < n; i++)
			pfd[np++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)np, timeout) < 0 && errno != EINTR)
			return 1;
		if (pfd[0].revents) {
			struct signalfd_siginfo si;

			while (read(l->sigfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					reap(l);
				if (l->fatal)
					return 78;
				else if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
					if (client < 0 || stopping)
						return 128 + (int)si.ssi_signo;
					/* First Ctrl-C: end the task early, keep its data. */
					stopping = 1;
					if (task_id)
						client_stop(client, task_id);
					else
						return 128 + (int)si.ssi_signo;
				}
			}
		}
		for (int k = 1; k < np; k++) {
			struct msg_ctl_done done;
			int rc, got = -1;

			if (!pfd[k].revents)
				continue;
			if (pfd[k].fd == out) {
				if (!out_err)
					out_err = take_output(&out, file, output, 0);
				continue;
			}
			if (pfd[k].fd != client) {
				spawner__handle(l->sp, pfd[k].fd);
				continue;
			}
			rc = client_read(client, &task_id, &got, &done);
			if (rc == 1) {
				take_accepted(&out, got);
				continue;
			}
			if (rc < 0) {
				fprintf(stderr, "rover: lost the supervisor: %s\n", strerror(-rc));
				return 1;
			}
			if (!out_err)
				out_err = take_output(&out, file, output, 1);
			client_report(&done, output, type);
			status = done.err || out_err ? 1 : 0;
			return status;
		}
	}
}

static int cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "type", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "dump-period", required_argument, NULL, 'P' },
		{ "flush-interval", required_argument, NULL, 'F' },
		{ "user", required_argument, NULL, 'u' },
		{ "connect", required_argument, NULL, 'c' },
		{ "attach", required_argument, NULL, 'A' },
		{ "unwind", required_argument, NULL, 'U' },
		{ "python-native", required_argument, NULL, 'Y' },
		{ "python-frames", required_argument, NULL, 'Z' },
		{ "capture-bytes", required_argument, NULL, 'B' },
		{ "name", required_argument, NULL, 'n' },
		{ "children", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct task_spec spec = {
		.type = TASK_ON_CPU, .duration_ms = 10000, .period_us = 9000, .flush_ms = 5000
	};
	struct launcher l = { .sigfd = -1, .dirfd = -1, .manage_roles = 1 };
	const char *output = NULL, *format = NULL, *connect_dir = NULL, *name = NULL;
	uint32_t period_ms = 9;
	int c, err, out_fd, out = -1, client, status, flush_set = 0;

	while ((c = getopt_long(argc, argv, "p:o:f:t:d:u:c:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, &spec))
				return die_usage(
					"bad --pid '%s': comma-separated positive pids, at most 64",
					optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case 'n':
			if (!optarg[0])
				return die_usage("bad --name '%s': a regular expression is expected",
						 optarg);
			name = optarg;
			break;
		case 'C':
			spec.flags |= TASK_CHILDREN;
			break;
		case 'f':
			format = optarg;
			break;
		case 't':
			if (!strcmp(optarg, "on_cpu"))
				spec.type = TASK_ON_CPU;
			else if (!strcmp(optarg, "off_cpu"))
				spec.type = TASK_OFF_CPU;
			else if (!strcmp(optarg, "network"))
				spec.type = TASK_NETWORK;
			else
				return die_usage("bad --type '%s': on_cpu, off_cpu or network expected",
						 optarg);
			break;
		case 'd':
			if (duration_ms_arg("--duration", optarg, 100000, &spec.duration_ms))
				return 2;
			break;
		case 'P':
			if (duration_ms_arg("--dump-period", optarg, 1000, &period_ms))
				return 2;
			if (period_ms > 1000)
				return die_usage("bad --dump-period '%s': at most 1s", optarg);
			spec.period_us = period_ms * 1000;
			break;
		case 'F':
			if (duration_ms_arg("--flush-interval", optarg, 100000, &spec.flush_ms))
				return 2;
			flush_set = 1;
			break;
		case 'B': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || v > NET_CAPTURE_MAX)
				return die_usage("bad --capture-bytes '%s': 1 to 4096", optarg);
			spec.capture_bytes = (uint32_t)v;
			break;
		}
		case 'u':
			l.user = optarg;
			break;
		case 'c':
			connect_dir = optarg;
			break;
		case 'A':
			if (!strcmp(optarg, "auto"))
				spec.attach = ATTACH_AUTO;
			else if (!strcmp(optarg, "tp_btf"))
				spec.attach = ATTACH_TP_BTF;
			else if (!strcmp(optarg, "raw_tp"))
				spec.attach = ATTACH_RAW_TP;
			else if (!strcmp(optarg, "sock"))
				spec.attach = ATTACH_TP_BTF; /* network: the socket calls, tp_btf */
			else if (!strcmp(optarg, "syscalls"))
				spec.attach = ATTACH_SYSCALLS;
			else
				return die_usage("bad --attach '%s': auto, tp_btf, raw_tp, sock or "
						 "syscalls expected",
						 optarg);
			break;
		case 'U':
			if (!strcmp(optarg, "dwarf"))
				spec.unwind = UNWIND_DWARF;
			else if (!strcmp(optarg, "fp"))
				spec.unwind = UNWIND_FP;
			else
				return die_usage("bad --unwind '%s': dwarf or fp expected", optarg);
			break;
		case 'Y':
			if (!strcmp(optarg, "spliced"))
				spec.flags &= ~(uint32_t)TASK_PYTHON_NATIVE_ALL;
			else if (!strcmp(optarg, "all"))
				spec.flags |= TASK_PYTHON_NATIVE_ALL;
			else
				return die_usage("bad --python-native '%s': spliced or all expected",
						 optarg);
			break;
		case 'Z':
			if (!strcmp(optarg, "on"))
				spec.flags &= ~(uint32_t)TASK_PYTHON_OFF;
			else if (!strcmp(optarg, "off"))
				spec.flags |= TASK_PYTHON_OFF;
			else
				return die_usage("bad --python-frames '%s': on or off expected",
						 optarg);
			break;
		case 'h':
			fputs(usage_profile, stdout);
			return 0;
		default:
			return die_usage("%s", "bad arguments to profile");
		}
	}
	if (optind < argc)
		return die_usage("unexpected argument '%s'", argv[optind]);
	if (!l.user)
		l.user = getenv("ROVER_USER");
	if (!spec.npids && !name)
		return die_usage("%s", "profile needs --pid PID[,PID...] or --name REGEX");
	if (!output)
		return die_usage("%s", "profile needs --output FILE");
	if (name) {
		/* As the user running this: a --connect client sees what it may see of /proc,
		 * and the pids go to the launcher's checks as --pid's do. */
		err = select__by_name(name, spec.pids, &spec.npids, ROVER_MAX_PIDS, stderr);
		if (err == 0)
			fprintf(stderr, "rover: --name '%s' matches no process\n", name);
		if (err <= 0)
			return err == -EINVAL ? 2 : 1;
	}
	if (spec.type == TASK_NETWORK && !flush_set)
		spec.flush_ms = 2000;
	if (spec.type != TASK_NETWORK && spec.attach == ATTACH_SYSCALLS)
		return die_usage("--attach %s is for --type network", "syscalls");
	if (output_format_of(format, output, spec.type == TASK_NETWORK, &spec.format))
		return die_usage(spec.type == TASK_NETWORK
					 ? "bad --format '%s': txt, json or html expected"
					 : "bad --format '%s': folded, pprof, svg or html expected",
				 format);
	for (uint32_t i = 0; i < spec.npids; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d", spec.pids[i]);
		if (access(path, F_OK)) {
			fprintf(stderr, "rover: no such process: %d\n", spec.pids[i]);
			return 1;
		}
	}
	if (!connect_dir && !has_privileges()) {
		fprintf(stderr, "rover: profiling needs root (or the capabilities listed in 'rover "
				"--help'); run it with sudo\n");
		return 1;
	}
	out_fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (out_fd < 0) {
		fprintf(stderr, "rover: cannot write %s: %s\n", output, strerror(errno));
		return 1;
	}
	log_init("rover");
	if (!connect_dir) {
		l.stack_only = spec.type != TASK_NETWORK;
		err = setup(&l, NULL);
		if (err) {
			fprintf(stderr, "rover: starting: %s\n", strerror(-err));
			return 1;
		}
	}
	client = client_connect(connect_dir ? connect_dir : l.sockdir, 10000);
	if (client < 0 || (err = client_submit(client, &spec))) {
		fprintf(stderr, "rover: cannot reach the supervisor in %s: %s\n",
			connect_dir ? connect_dir : l.sockdir,
			strerror(client < 0 ? -client : -err));
		if (!connect_dir)
			teardown(&l);
		return 1;
	}
	if (connect_dir) {
		/* Only a client: wait for our task's end; a first Ctrl-C ends it early. */
		uint64_t id = 0;
		struct msg_ctl_done done;
		sigset_t mask;
		int sigfd, rc, stopped = 0, out_err = 0, got = -1;

		sigemptyset(&mask);
		sigaddset(&mask, SIGINT);
		sigaddset(&mask, SIGTERM);
		sigprocmask(SIG_BLOCK, &mask, NULL);
		sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
		for (;;) {
			struct pollfd pfd[3] = { { .fd = client, .events = POLLIN },
						 { .fd = sigfd, .events = POLLIN },
						 { .fd = out, .events = POLLIN } };
			struct signalfd_siginfo si;

			if (poll(pfd, 3, -1) < 0)
				continue;
			if (pfd[2].revents && !out_err)
				out_err = take_output(&out, out_fd, output, 0);
			if (pfd[1].revents && read(sigfd, &si, sizeof(si)) == sizeof(si)) {
				if (stopped || !id)
					return 128 + (int)si.ssi_signo;
				stopped = 1;
				client_stop(client, id);
			}
			if (!pfd[0].revents)
				continue;
			rc = client_read(client, &id, &got, &done);
			if (rc == 1) {
				take_accepted(&out, got);
				continue;
			}
			if (rc < 0) {
				fprintf(stderr, "rover: lost the supervisor: %s\n", strerror(-rc));
				return 1;
			}
			break;
		}
		if (!out_err)
			out_err = take_output(&out, out_fd, output, 1);
		client_report(&done, output, spec.type);
		return done.err || out_err ? 1 : 0;
	}
	status = run(&l, client, out, out_fd, output, spec.type);
	close(out_fd);
	close(client);
	teardown(&l);
	{
		struct rusage ru;

		if (!getrusage(RUSAGE_SELF, &ru))
			log_debug("the launcher used %ld ms of CPU, %ld page faults", cpu_ms(&ru),
				  ru.ru_minflt + ru.ru_majflt);
	}
	return status;
}

static void config_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "rover: config: %s\n", msg);
}

/* Reads a whole regular file as root (at most CONFIG_MAX_BYTES). NULL with errno set. */
static char *slurp(const char *path, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	/* Never a FIFO or a device a config could name: read() on those need not end. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		errno = EINVAL;
	else
		buf = config__read_fd(fd, ret_len);
	close(fd);
	return buf;
}

/* The spool directory belongs to the rover user, mode 0700; created with its parents. */
static int make_spool_dir(const char *dir, uid_t uid, gid_t gid)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, err = 0;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	/* By descriptor, never following a link: a path swapped for a symbolic link between
	 * the mkdir and here must not get another file chowned to the rover user. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	else if (geteuid() == 0 && (fchown(fd, uid, gid) || fchmod(fd, 0700)))
		err = -errno;
	close(fd);
	return err;
}

/*
 * `rover run`: the config file, checked before anything starts, and the TLS files it names,
 * read as root into l's blobs; the spool directory made for the rover user. 0, or the exit
 * status (2: a bad config).
 */
static int load_run_config(struct launcher *l, const char *path)
{
	struct rover_config cfg;
	char err_text[512];
	int err;

	if (path) {
		l->blob[BLOB_CONFIG] = slurp(path, &l->blob_len[BLOB_CONFIG]);
		if (!l->blob[BLOB_CONFIG]) {
			fprintf(stderr, "rover: config %s: %s\n", path, strerror(errno));
			return 2;
		}
	} else {
		/* configs/rover_configs.yaml as built in: the same agent as with that file. */
		l->blob[BLOB_CONFIG] = strdup(rover_default_config);
		l->blob_len[BLOB_CONFIG] = sizeof(rover_default_config) - 1;
	}
	if (!l->blob[BLOB_CONFIG])
		return 1;
	err = config__load(l->blob[BLOB_CONFIG], l->blob_len[BLOB_CONFIG], &cfg, err_text,
			   sizeof(err_text), config_warn, NULL, NULL);
	if (err) {
		fprintf(stderr, "rover: config %s: %s\n", path ? path : "(built in)", err_text);
		return 2;
	}
	if (cfg.backend.enable_tls) {
		const char *keys[3] = { "core.backend.ca_pem_path", "core.backend.client_pem_path",
					"core.backend.client_key_path" };
		const char *paths[3] = { cfg.backend.ca_pem_path, cfg.backend.client_pem_path,
					 cfg.backend.client_key_path };

		for (int i = 0; i < 3 && !err; i++) {
			if (!paths[i] || !paths[i][0])
				continue;
			l->blob[BLOB_CA + i] = slurp(paths[i], &l->blob_len[BLOB_CA + i]);
			if (!l->blob[BLOB_CA + i]) {
				fprintf(stderr, "rover: config %s: %s '%s': %s\n",
					path ? path : "(defaults)", keys[i], paths[i],
					strerror(errno));
				err = 2;
			}
		}
		if (!err && !l->blob[BLOB_CERT] != !l->blob[BLOB_KEY]) {
			fprintf(stderr, "rover: config: client_pem_path and client_key_path go "
					"together\n");
			err = 2;
		}
	}
	if (!err && cfg.backend.spool_dir && cfg.backend.spool_dir[0] && geteuid() == 0) {
		uid_t uid;
		gid_t gid;

		err = privdrop_lookup_user(l->user, &uid, &gid);
		if (!err)
			err = make_spool_dir(cfg.backend.spool_dir, uid, gid);
		if (err) {
			fprintf(stderr, "rover: spool directory %s: %s\n", cfg.backend.spool_dir,
				strerror(-err));
			err = 1;
		}
	}
	config__free(&cfg);
	return err;
}

enum serve_mode { MODE_SERVE, MODE_SPAWNER, MODE_RUN };

static int cmd_serve(int argc, char **argv, enum serve_mode mode)
{
	static const struct option opts[] = {
		{ "socket-dir", required_argument, NULL, 's' },
		{ "user", required_argument, NULL, 'u' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct launcher l = { .sigfd = -1, .dirfd = -1, .manage_roles = mode != MODE_SPAWNER };
	const char *dir = NULL, *path = NULL;
	int spawner_only = mode == MODE_SPAWNER;
	int c, err, status;

	while ((c = getopt_long(argc, argv, mode == MODE_RUN ? "c:s:u:h" : "s:u:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			if (mode != MODE_RUN)
				return die_usage("%s", "--config is for rover run");
			path = optarg;
			break;
		case 's':
			dir = optarg;
			break;
		case 'u':
			l.user = optarg;
			break;
		case 'h':
			fputs(mode == MODE_RUN ? usage_run : usage_serve, stdout);
			return 0;
		default:
			return die_usage("bad arguments to %s", mode == MODE_RUN ? "run" : "serve");
		}
	}
	if (optind < argc)
		return die_usage("unexpected argument '%s'", argv[optind]);
	if (!l.user)
		l.user = getenv("ROVER_USER");
	if (spawner_only && !dir)
		return die_usage("%s", "spawner needs --socket-dir DIR");
	/* A bad config is refused before anything, privileges included, is looked at. */
	if (mode == MODE_RUN && (status = load_run_config(&l, path)))
		goto out;
	status = 1;
	if (!spawner_only && !has_privileges()) {
		fprintf(stderr, "rover: %s needs root (or the capabilities in 'rover --help')\n",
			mode == MODE_RUN ? "run" : "serve");
		goto out;
	}
	log_init("rover");
	err = setup(&l, dir);
	if (err) {
		fprintf(stderr, "rover: starting: %s\n", strerror(-err));
		goto out;
	}
	log_info("%s in %s%s%s", mode == MODE_RUN ? "running" : "serving", l.sockdir,
		 path ? " with " : "", path ? path : "");
	status = run(&l, -1, -1, -1, NULL, 0);
	teardown(&l);
	if (status == 128 + SIGTERM || status == 128 + SIGINT)
		status = 0;
out:
	for (int i = 0; i < NBLOBS; i++) {
		if (l.blob[i])
			explicit_bzero(l.blob[i], l.blob_len[i]);
		free(l.blob[i]);
	}
	return status;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_main, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "profile"))
		return cmd_profile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "watch"))
		return cmd_watch(argc - 1, argv + 1, cmd_profile);
	if (!strcmp(argv[1], "run"))
		return cmd_serve(argc - 1, argv + 1, MODE_RUN);
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1, MODE_SERVE);
	if (!strcmp(argv[1], "spawner"))
		return cmd_serve(argc - 1, argv + 1, MODE_SPAWNER);
	fprintf(stderr, "rover: unknown command '%s'\nrover: try 'rover --help'\n", argv[1]);
	return 2;
}
