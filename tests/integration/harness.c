// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

const char *bin(const char *name)
{
	static char paths[8][4096];
	static int next;
	const char *root = getenv("ROVER_BUILD");
	char *p = paths[next++ % 8];

	snprintf(p, 4096, "%s/%s", root ? root : "build", name);
	return p;
}

const char *role_user(void)
{
	const char *u = getenv("ROVER_USER");

	return u && *u ? u : "rover";
}

pid_t serve_start(const char *sockdir, const char *log)
{
	char *argv[] = { (char *)bin("rover"), "serve", "--socket-dir", (char *)sockdir, NULL };
	char ctl[4200];
	pid_t pid;

	snprintf(ctl, sizeof(ctl), "%s/ctl.sock", sockdir);
	pid = spawn_cmd(argv, log);
	for (int i = 0; i < 200 && access(ctl, F_OK); i++)
		sleep_ms(50);
	if (access(ctl, F_OK)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

pid_t start_program(const char *path, const char *arg)
{
	int pfd[2];
	char line[64] = { 0 };
	pid_t pid;
	size_t got = 0;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while (got < sizeof(line) - 1) {
		ssize_t n = read(pfd[0], line + got, 1);

		if (n <= 0 || line[got] == '\n')
			break;
		got++;
	}
	close(pfd[0]);
	if (strncmp(line, "ready", 5)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

void stop_program(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

pid_t spawn_cmd(char *const argv[], const char *stderr_path)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* A test killed by its timeout takes its commands with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		int fd = open(stderr_path ? stderr_path : "/dev/null",
			      O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
			dup2(fd, 2);
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int wait_cmd(pid_t pid, int timeout_ms)
{
	int status;

	for (int waited = 0;; waited += 20) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		sleep_ms(20);
	}
}

int run_cmd(char *const argv[], char **ret_err)
{
	char path[] = "/tmp/rover-test-stderr.XXXXXX";
	int fd = mkstemp(path), rc;
	pid_t pid;

	if (fd < 0)
		return -errno;
	close(fd);
	pid = spawn_cmd(argv, path);
	rc = wait_cmd(pid, 120000);
	if (ret_err)
		*ret_err = slurp(path, NULL);
	unlink(path);
	return rc;
}

char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

int folded_read(const char *path, struct folded *ret)
{
	char *text = slurp(path, NULL), *save = NULL, *line;

	memset(ret, 0, sizeof(*ret));
	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		ret->stacks = realloc(ret->stacks, (ret->n + 1) * sizeof(char *));
		ret->counts = realloc(ret->counts, (ret->n + 1) * sizeof(uint64_t));
		ret->stacks[ret->n] = strdup(line);
		ret->counts[ret->n] = strtoull(sp + 1, NULL, 10);
		ret->total += ret->counts[ret->n];
		ret->n++;
	}
	free(text);
	return 0;
}

void folded_free(struct folded *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->stacks[i]);
	free(f->stacks);
	free(f->counts);
}

uint64_t folded_with_frame(const struct folded *f, const char *name)
{
	uint64_t sum = 0;
	size_t nl = strlen(name);

	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->stacks[i];

		while (s) {
			const char *e = strchr(s, ';');
			size_t len = e ? (size_t)(e - s) : strlen(s);

			if (len == nl && !strncmp(s, name, nl)) {
				sum += f->counts[i];
				break;
			}
			s = e ? e + 1 : NULL;
		}
	}
	return sum;
}

uint64_t folded_with_leaf(const struct folded *f, const char *name)
{
	uint64_t sum = 0;
	size_t nl = strlen(name);

	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->stacks[i], *leaf = NULL, *leaf_end = NULL;

		while (s) {
			const char *e = strchr(s, ';');
			size_t len = e ? (size_t)(e - s) : strlen(s);

			if (!(len >= 4 && !strncmp(s + len - 4, "_[k]", 4)) && s != f->stacks[i]) {
				leaf = s;
				leaf_end = s + len;
			}
			s = e ? e + 1 : NULL;
		}
		if (leaf && (size_t)(leaf_end - leaf) == nl && !strncmp(leaf, name, nl))
			sum += f->counts[i];
	}
	return sum;
}

char *tmp;

char *tmp_path(const char *name)
{
	static char buf[8][4096];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmp, name);
	return buf[k];
}

int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -errno;
	fputs(text, f);
	err = fclose(f) ? -errno : 0;
	return err;
}

void tmp_setup(void)
{
	tmp = make_tmpdir();
	if (!tmp)
		abort();
}

void tmp_teardown(void)
{
	rm_rf(tmp);
	free(tmp);
	tmp = NULL;
}

char *make_tmpdir(void)
{
	char *p = strdup("/tmp/rover-test.XXXXXX");

	return mkdtemp(p) ? p : NULL;
}

void rm_rf(const char *path)
{
	char cmd[4200];

	if (!path || strncmp(path, "/tmp/", 5))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	(void)!system(cmd);
}

static int stat_of(pid_t pid, pid_t *ret_ppid, char comm[32])
{
	char path[64], buf[512], *l, *r;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	l = strchr(buf, '(');
	r = strrchr(buf, ')');
	if (!l || !r || r - l - 1 >= 32)
		return -1;
	memcpy(comm, l + 1, (size_t)(r - l - 1));
	comm[r - l - 1] = '\0';
	*ret_ppid = (pid_t)strtol(r + 4, NULL, 10);
	return 0;
}

pid_t find_child(pid_t ppid, const char *comm)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name), pp;
		char c[32];

		if (pid > 0 && !stat_of(pid, &pp, c) && pp == ppid && !strcmp(c, comm))
			found = pid;
	}
	closedir(d);
	return found;
}

pid_t wait_child(pid_t ppid, const char *comm, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 50) {
		pid_t p = find_child(ppid, comm);

		if (p)
			return p;
		sleep_ms(50);
	}
	return 0;
}

int proc_status(pid_t pid, const char *key, char *buf, size_t len)
{
	char path[64], *text, *line, *save = NULL;
	size_t kl = strlen(key);
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = slurp(path, NULL);
	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			const char *v = line + kl + 1;

			while (*v == '\t' || *v == ' ')
				v++;
			snprintf(buf, len, "%s", v);
			err = 0;
			break;
		}
	}
	free(text);
	return err;
}
