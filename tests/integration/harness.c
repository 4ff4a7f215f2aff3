// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
		int fd = open(stderr_path ? stderr_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
			      0644);

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

char *proc_maps_grep(pid_t pid, const char *needle)
{
	char path[64], *text, *line, *save = NULL, *out;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	text = slurp(path, NULL);
	if (!text)
		return NULL;
	out = calloc(1, strlen(text) + 1);
	for (line = strtok_r(text, "\n", &save); out && line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, needle))
			continue;
		n += (size_t)sprintf(out + n, "%s%s", n ? "\n" : "", line);
	}
	free(text);
	return out;
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

/* Network peers. */

int free_port(int lo, int hi)
{
	int span = hi - lo + 1;

	for (int i = 0; i < span; i++) {
		int port = lo + (int)((getpid() + i) % span), fd, err;
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
		if (!err)
			return port;
	}
	return -1;
}

static void exec_sbin(char *const argv[])
{
	static const char *const dirs[] = { "/usr/sbin/", "/sbin/", "/usr/bin/" };
	char path[256];

	execvp(argv[0], argv);
	if (strchr(argv[0], '/'))
		return;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dirs[i], argv[0]);
		execv(path, argv);
	}
}

/* Starts argv, in netns if not NULL, stdout and stderr to out_path (appended to); its pid. */
static pid_t spawn_in(const char *netns, char *const argv[], const char *out_path)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (netns) {
			char path[256];

			snprintf(path, sizeof(path), "/run/netns/%s", netns);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				perror(path);
				_exit(126);
			}
			close(fd);
		}
		fd = open(out_path ? out_path : "/dev/null",
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, 0);
		exec_sbin(argv);
		_exit(127);
	}
	return pid;
}

static int temp_file(char path[64], const char *name)
{
	int fd;

	snprintf(path, 64, "/tmp/rover-%s.XXXXXX", name);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int run_capture(const char *netns, char *const argv[], int timeout_ms, char **ret_out)
{
	char path[64];
	int rc = temp_file(path, "capture");
	pid_t pid;

	if (rc)
		return rc;
	pid = spawn_in(netns, argv, path);
	rc = pid < 0 ? -errno : wait_cmd(pid, timeout_ms);
	if (ret_out)
		*ret_out = slurp(path, NULL);
	unlink(path);
	return rc;
}

/* Waits up to timeout_ms for path to hold a line starting with word; 0, or -1 if pid (when
 * > 0) has exited first or time ran out. */
static int wait_line(const char *path, const char *word, pid_t pid, int timeout_ms)
{
	size_t wl = strlen(word);

	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		char *text = slurp(path, NULL);
		int found = 0;

		for (char *l = text; l && *l && !found;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			found = !strncmp(l, word, wl);
		free(text);
		if (found)
			return 0;
		if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		sleep_ms(20);
	}
	return -1;
}

/* "WORD N key value ... status:200=x,404=y" on a line of text, as http_server and http_client
 * print it. 0 or -EIO. */
static int parse_totals(const char *text, const char *word, struct http_totals *ret)
{
	struct http_totals t = { 0 };
	size_t wl = strlen(word);
	const char *l;
	char *end;

	for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, word, wl) && l[wl] == ' ')
			break;
	if (!l || !*l)
		return -EIO;
	l += wl + 1;
	t.requests = strtoull(l, &end, 10);
	if (end == l)
		return -EIO;
	l = end;
	while (*l && *l != '\n') {
		while (*l == ' ')
			l++;
		if (!strncmp(l, "bytes_sent ", 11)) {
			t.bytes_sent = strtoull(l + 11, &end, 10);
		} else if (!strncmp(l, "bytes_received ", 15)) {
			t.bytes_received = strtoull(l + 15, &end, 10);
		} else if (!strncmp(l, "status:", 7)) {
			end = (char *)l + 7;
			while (*end >= '0' && *end <= '9') {
				unsigned long code = strtoul(end, &end, 10);

				if (*end != '=' || code >= 600)
					return -EIO;
				t.status[code] = strtoull(end + 1, &end, 10);
				if (*end == ',')
					end++;
			}
		} else {
			end = strchr(l, ' ');
			if (!end)
				break;
		}
		if (end == l)
			return -EIO;
		l = end;
	}
	*ret = t;
	return 0;
}

int http_server_start(const char *netns, int port, struct http_server *ret)
{
	struct http_server h = { .port = port };
	char ports[16];
	char *argv[] = { (char *)bin("tests/programs/http_server"), ports, NULL };
	int err;

	snprintf(ports, sizeof(ports), "%d", port);
	err = temp_file(h.out, "http-server");
	if (err)
		return err;
	h.pid = spawn_in(netns, argv, h.out);
	if (h.pid < 0) {
		err = -errno;
		unlink(h.out);
		return err;
	}
	if (wait_line(h.out, "ready", h.pid, 5000)) {
		kill(h.pid, SIGKILL);
		waitpid(h.pid, NULL, 0);
		unlink(h.out);
		return -EADDRINUSE;
	}
	*ret = h;
	return 0;
}

int http_server_stop(struct http_server *h, struct http_totals *ret)
{
	char *text;
	int err;

	if (h->pid <= 0)
		return -ESRCH;
	kill(h->pid, SIGTERM);
	wait_cmd(h->pid, 5000);
	h->pid = 0;
	text = slurp(h->out, NULL);
	unlink(h->out);
	err = text ? 0 : -EIO;
	if (!err && ret)
		err = parse_totals(text, "totals", ret);
	free(text);
	return err;
}

static void client_argv(char *argv[9], char strs[5][16], const char *host, int port,
			const char *path, int n, int conns, int delay, int gap)
{
	snprintf(strs[0], 16, "%d", port);
	snprintf(strs[1], 16, "%d", n);
	snprintf(strs[2], 16, "%d", conns);
	snprintf(strs[3], 16, "%d", delay);
	snprintf(strs[4], 16, "%d", gap);
	argv[0] = (char *)bin("tests/programs/http_client");
	argv[1] = (char *)host;
	argv[2] = strs[0];
	argv[3] = (char *)path;
	argv[4] = strs[1];
	argv[5] = strs[2];
	argv[6] = strs[3];
	argv[7] = strs[4];
	argv[8] = NULL;
}

int http_client_run(const char *netns, const char *host, int port, const char *path, int n,
		    int conns, struct http_totals *ret)
{
	char *argv[9], strs[5][16], *out = NULL;
	int rc;

	client_argv(argv, strs, host, port, path, n, conns, 0, 0);
	rc = run_capture(netns, argv, 60000, &out);
	if (rc >= 0 && (!out || parse_totals(out, "done", ret)))
		rc = rc ? rc : -EIO;
	free(out);
	return rc;
}

pid_t http_client_spawn(const char *netns, const char *host, int port, const char *path, int n,
			int conns, int start_delay_ms, int gap_ms, const char *out_path)
{
	char *argv[9], strs[5][16];
	pid_t pid;
	int fd;

	/* "ready" only comes with a delay: ask for one of at least 1 ms. */
	client_argv(argv, strs, host, port, path, n, conns, start_delay_ms > 0 ? start_delay_ms : 1,
		    gap_ms);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	pid = spawn_in(netns, argv, out_path);
	if (pid > 0 && wait_line(out_path, "ready", pid, 5000)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

int http_client_wait(pid_t pid, const char *out_path, int timeout_ms, struct http_totals *ret)
{
	int rc = wait_cmd(pid, timeout_ms);
	char *out = slurp(out_path, NULL);

	if (rc >= 0 && (!out || parse_totals(out, "done", ret)))
		rc = rc ? rc : -EIO;
	free(out);
	return rc;
}

/* dir/name, in a static buffer. */
static const char *tmp_path_in(const char *dir, const char *name)
{
	static char buf[4200];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* Waits up to timeout_ms for 127.0.0.1:port to accept a connection. 0 or -ETIMEDOUT. */
static int wait_port(int port, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

		if (fd < 0)
			return -errno;
		err = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
		if (!err)
			return 0;
		sleep_ms(20);
	}
	return -ETIMEDOUT;
}

/* nginx_start, and nginx_start_tls when cert is not NULL. */
static int nginx_start_conf(int port, const struct tls_cert *cert, bool h2, int workers,
			    struct nginx *ret)
{
	struct nginx h = { .port = port };
	char conf[16384], cpath[4200], epath[4200], listen[8400];
	char *argv[] = { "nginx", "-e", epath, "-p", NULL, "-c", cpath, NULL };
	int err;

	/* Without "http2" on the listen line ALPN offers http/1.1 only: what the TLS tests
	 * parse. */
	if (cert)
		snprintf(listen, sizeof(listen),
			 "    listen 127.0.0.1:%d ssl%s;\n"
			 "    ssl_certificate %s;\n"
			 "    ssl_certificate_key %s;\n"
			 "    ssl_protocols TLSv1.2 TLSv1.3;\n",
			 port, h2 ? " http2" : "", cert->cert, cert->key);
	else
		/* Several workers: reuseport gives each its own socket, and the kernel spreads the
		 * connections over them by their addresses, so that every worker serves some. */
		snprintf(listen, sizeof(listen),
			 "    listen 127.0.0.1:%1$d%2$s%3$s;\n"
			 "    listen [::1]:%1$d%2$s%3$s;\n",
			 port, h2 ? " http2" : "", workers > 1 ? " reuseport" : "");

	h.dir = make_tmpdir();
	if (!h.dir)
		return -errno;
	/* The worker runs as nobody: it must reach the temp paths under the prefix. */
	chmod(h.dir, 0755);
	snprintf(cpath, sizeof(cpath), "%s/nginx.conf", h.dir);
	snprintf(epath, sizeof(epath), "%s/error.log", h.dir);
	argv[4] = h.dir;
	/* master_process on, as nginx is deployed: the worker, which serves, is a process of
	 * its own that a test profiles by pid. Temp paths are all under the prefix so that
	 * nothing outside h.dir is written. */
	snprintf(conf, sizeof(conf),
		 "daemon off;\n"
		 "master_process on;\n"
		 "worker_processes %3$d;\n"
		 "pid %1$s/nginx.pid;\n"
		 "error_log %1$s/error.log warn;\n"
		 "events { worker_connections 512; }\n"
		 "http {\n"
		 "  log_format truth '$status $bytes_sent $request_length';\n"
		 "  access_log %1$s/access.log truth;\n"
		 "  client_body_temp_path %1$s/body;\n"
		 "  proxy_temp_path %1$s/proxy;\n"
		 "  fastcgi_temp_path %1$s/fastcgi;\n"
		 "  uwsgi_temp_path %1$s/uwsgi;\n"
		 "  scgi_temp_path %1$s/scgi;\n"
		 "  server {\n"
		 "%2$s"
		 "    location = /ok { return 200 \"ok\\n\"; }\n"
		 "    location = /missing { return 404; }\n"
		 "    location = /fail { return 500; }\n"
		 "    location / { return 404; }\n"
		 "  }\n"
		 "}\n",
		 h.dir, listen, workers);
	err = write_file(cpath, conf);
	if (err)
		goto cleanup;
	h.master = spawn_in(NULL, argv, tmp_path_in(h.dir, "stderr"));
	if (h.master < 0) {
		err = -errno;
		goto cleanup;
	}
	h.worker = wait_child(h.master, "nginx", 5000);
	err = h.worker ? wait_port(port, 5000) : -ESRCH;
	/* The others too: each is running (and listening) before anything is asked of them. */
	for (int waited = 0; !err && workers > 1 && nginx_workers(&h, NULL, 0) < workers;
	     waited += 50) {
		if (waited >= 5000)
			err = -ESRCH;
		sleep_ms(50);
	}
	if (err)
		goto cleanup;
	*ret = h;
	return 0;
cleanup:
	if (h.master > 0) {
		char *log = slurp(epath, NULL);

		fprintf(stderr, "nginx on port %d did not start: %s\n", port, log ? log : "?");
		free(log);
	}
	nginx_free(&h);
	return err;
}

int nginx_start(int port, struct nginx *ret)
{
	return nginx_start_conf(port, NULL, false, 1, ret);
}

int nginx_start_workers(int port, int workers, struct nginx *ret)
{
	return nginx_start_conf(port, NULL, false, workers, ret);
}

int nginx_workers(const struct nginx *h, pid_t *ret, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name), pp;
		char c[32];

		if (pid > 0 && !stat_of(pid, &pp, c) && pp == h->master && !strcmp(c, "nginx")) {
			if (n < max)
				ret[n] = pid;
			n++;
		}
	}
	closedir(d);
	return n;
}

int nginx_start_h2(int port, const struct tls_cert *cert, struct nginx *ret)
{
	return nginx_start_conf(port, cert, true, 1, ret);
}

int nginx_start_tls(int port, const struct tls_cert *cert, struct nginx *ret)
{
	return nginx_start_conf(port, cert, false, 1, ret);
}

void nginx_stop(struct nginx *h)
{
	if (h->master > 0) {
		kill(h->master, SIGTERM);
		/* wait_cmd kills the master after 5 s; a worker it leaves goes the same way. */
		if (wait_cmd(h->master, 5000) == -ETIMEDOUT && h->worker > 0)
			kill(h->worker, SIGKILL);
	}
	h->master = 0;
	h->worker = 0;
}

void nginx_free(struct nginx *h)
{
	nginx_stop(h);
	rm_rf(h->dir);
	free(h->dir);
	h->dir = NULL;
}

int nginx_access_log_counts(const struct nginx *h, struct http_totals *ret)
{
	struct http_totals t = { 0 };
	char *text = slurp(tmp_path_in(h->dir, "access.log"), NULL), *line, *save = NULL;

	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned status;
		unsigned long long sent, len;

		if (sscanf(line, "%u %llu %llu", &status, &sent, &len) != 3 || status >= 600)
			continue;
		t.requests++;
		t.status[status]++;
		t.bytes_sent += sent;
		t.bytes_received += len;
	}
	free(text);
	*ret = t;
	return 0;
}

int curl_run(const char *url, int n, struct http_totals *ret)
{
	struct http_totals t = { 0 };
	char **argv, *out = NULL, *line, *save = NULL;
	int rc, k = 0;

	if (n < 1 || n > 1000)
		return -EINVAL;
	argv = calloc((size_t)n * 3 + 10, sizeof(char *));
	if (!argv)
		return -ENOMEM;
	argv[k++] = "curl";
	argv[k++] = "-s";
	argv[k++] = "--max-time";
	argv[k++] = "30";
	if (!strncmp(url, "https://", 8)) {
		/* The tests' certificates are self-signed; HTTP/2 is not what they count. */
		argv[k++] = "-k";
		argv[k++] = "--http1.1";
	}
	argv[k++] = "-w";
	argv[k++] = "%{http_code} %{size_request} %{size_header} %{size_download}\n";
	for (int i = 0; i < n; i++) {
		argv[k++] = "-o";
		argv[k++] = "/dev/null";
		argv[k++] = (char *)url;
	}
	rc = run_capture(NULL, argv, 60000, &out);
	free(argv);
	for (line = out ? strtok_r(out, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned status;
		unsigned long long req, hdr, body;

		if (sscanf(line, "%u %llu %llu %llu", &status, &req, &hdr, &body) != 4 ||
		    status < 100 || status >= 600)
			continue;
		t.requests++;
		t.status[status]++;
		t.bytes_sent += req;
		t.bytes_received += hdr + body;
	}
	free(out);
	*ret = t;
	return rc == 0 && t.requests == (uint64_t)n ? 0 : -EIO;
}

/* "99%  363.00us" and the like, in ms. */
static double wrk_ms(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!strncmp(end, "us", 2))
		return v / 1000;
	if (!strncmp(end, "ms", 2))
		return v;
	if (*end == 's')
		return v * 1000;
	if (*end == 'm')
		return v * 60000;
	return v;
}

int wrk_run(const char *url, int seconds, int conns, struct wrk_result *ret)
{
	struct wrk_result r = { 0 };
	char c[16], d[16], *out = NULL, *line, *save = NULL;
	char *argv[] = { "wrk", "-t1", "-c", c, "-d", d, "--latency", (char *)url, NULL };
	int rc, got = 0;

	snprintf(c, sizeof(c), "%d", conns);
	snprintf(d, sizeof(d), "%ds", seconds);
	rc = run_capture(NULL, argv, seconds * 1000 + 15000, &out);
	for (line = out ? strtok_r(out, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b, e, f;

		while (*line == ' ' || *line == '\t')
			line++;
		if (sscanf(line, "%llu requests in", &a) == 1 && strstr(line, "requests in")) {
			r.requests = a;
			got = 1;
		} else if (!strncmp(line, "Requests/sec:", 13)) {
			r.rps = strtod(line + 13, NULL);
		} else if (!strncmp(line, "50%", 3)) {
			r.p50_ms = wrk_ms(line + 3 + strspn(line + 3, " \t"));
		} else if (!strncmp(line, "99%", 3)) {
			r.p99_ms = wrk_ms(line + 3 + strspn(line + 3, " \t"));
		} else if (sscanf(line, "Non-2xx or 3xx responses: %llu", &a) == 1) {
			r.non_2xx_3xx = a;
		} else if (sscanf(line,
				  "Socket errors: connect %llu, read %llu, write %llu, timeout %llu",
				  &a, &b, &e, &f) == 4) {
			r.socket_errors = a + b + e + f;
		}
	}
	free(out);
	if (rc < 0)
		return rc;
	if (rc || !got)
		return -EIO;
	*ret = r;
	return 0;
}

int netns_create(const char *name)
{
	char *add[] = { "ip", "netns", "add", (char *)name, NULL };
	char *up[] = { "ip", "-n", (char *)name, "link", "set", "lo", "up", NULL };
	char path[256];

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	if (!access(path, F_OK))
		netns_delete(name);
	if (run_capture(NULL, add, 10000, NULL))
		return -EIO;
	if (run_capture(NULL, up, 10000, NULL)) {
		netns_delete(name);
		return -EIO;
	}
	return 0;
}

int netns_delete(const char *name)
{
	char *argv[] = { "ip", "netns", "delete", (char *)name, NULL };

	return run_capture(NULL, argv, 10000, NULL) ? -EIO : 0;
}

int netns_drop_input(const char *name, int port, int percent)
{
	char rule[256], *out = NULL;
	char *table[] = { "nft", "add", "table", "inet", "rover_drop", NULL };
	char *chain[] = { "nft",
			  "add",
			  "chain",
			  "inet",
			  "rover_drop",
			  "inp",
			  "{ type filter hook input priority 0; policy accept; }",
			  NULL };
	char *add[] = { "nft", "add", "rule", "inet", "rover_drop", "inp", rule, NULL };
	char *const *steps[] = { table, chain, add };
	int rc = 0;

	if (percent < 0 || percent > 100)
		return -EINVAL;
	/* On the input hook the packet is gone before TCP sees it, so the sender retransmits;
	 * on output it would show up as a local drop instead (network-peers.md 2.4). */
	snprintf(rule, sizeof(rule), "tcp sport %d numgen random mod 100 < %d counter drop", port,
		 percent);
	for (size_t i = 0; i < 3 && !rc; i++) {
		rc = run_capture(name, steps[i], 10000, &out);
		if (rc)
			fprintf(stderr, "nft in %s: %s", name, out ? out : "?\n");
		free(out);
		out = NULL;
	}
	return rc ? -EIO : 0;
}

int netns_drop_count(const char *name, uint64_t *ret_packets)
{
	char *argv[] = { "nft", "list", "chain", "inet", "rover_drop", "inp", NULL };
	char *out = NULL, *p;
	int err = -EIO;

	if (!run_capture(name, argv, 10000, &out) && out && (p = strstr(out, "counter packets "))) {
		*ret_packets = strtoull(p + 16, NULL, 10);
		err = 0;
	}
	free(out);
	return err;
}

int nstat_read(const char *netns, const char *counter, uint64_t *ret_value)
{
	/* -a absolute values, -s no history update, -z zeros too. */
	char *argv[] = { "nstat", "-asz", (char *)counter, NULL };
	char *out = NULL, *line, *save = NULL;
	size_t cl = strlen(counter);
	int err = -ENOENT;

	if (run_capture(netns, argv, 10000, &out)) {
		free(out);
		return -EIO;
	}
	for (line = out ? strtok_r(out, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, counter, cl) && (line[cl] == ' ' || line[cl] == '\t')) {
			*ret_value = strtoull(line + cl, NULL, 10);
			err = 0;
			break;
		}
	}
	free(out);
	return err;
}

int netns_tcp_quiet(const char *netns, int timeout_ms)
{
	char *argv[] = { "ss", "-Htan", NULL };

	for (int waited = 0; waited <= timeout_ms; waited += 50) {
		char *out = NULL, *line, *save = NULL;
		int busy = 0;

		if (run_capture(netns, argv, 5000, &out)) {
			free(out);
			return -EIO;
		}
		for (line = out ? strtok_r(out, "\n", &save) : NULL; line;
		     line = strtok_r(NULL, "\n", &save))
			busy += strncmp(line, "LISTEN", 6) && strncmp(line, "TIME-WAIT", 9);
		free(out);
		if (!busy)
			return 0;
		usleep(50 * 1000);
	}
	return -ETIMEDOUT;
}

/* TLS peers. */

const char *src(const char *name)
{
	static char paths[8][4096];
	static int next;
	const char *root = getenv("ROVER_SRC");
	char *p = paths[next++ % 8];

	snprintf(p, 4096, "%s/%s", root ? root : ".", name);
	return p;
}

int tls_cert_make(const char *dir, struct tls_cert *ret)
{
	struct tls_cert c;
	char *out = NULL;
	char *argv[] = { "openssl", "req",   "-x509",	      "-newkey", "rsa:2048",
			 "-nodes",  "-subj", "/CN=localhost", "-days",	 "1",
			 "-keyout", c.key,   "-out",	      c.cert,	 NULL };
	int rc;

	if (snprintf(c.cert, sizeof(c.cert), "%s/cert.pem", dir) >= (int)sizeof(c.cert) ||
	    snprintf(c.key, sizeof(c.key), "%s/key.pem", dir) >= (int)sizeof(c.key))
		return -ENAMETOOLONG;
	rc = run_capture(NULL, argv, 30000, &out);
	if (rc || access(c.cert, R_OK) || access(c.key, R_OK)) {
		fprintf(stderr, "openssl req: %s", out ? out : "?\n");
		free(out);
		return rc < 0 ? rc : -EIO;
	}
	free(out);
	*ret = c;
	return 0;
}

/* Waits up to timeout_ms for a TCP socket listening on port, any address, as /proc/net/tcp and
 * tcp6 list them: no connection is made, so that a server counting its connections counts
 * none of ours. 0 or -ETIMEDOUT. */
int wait_listen(int port, int timeout_ms)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char want[16];

	/* "local_address" ends in ":PORT" (4 hex digits), the state "0A" is TCP_LISTEN. */
	snprintf(want, sizeof(want), ":%04X 0", port);
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		for (size_t i = 0; i < 2; i++) {
			char *text = slurp(tables[i], NULL), *line, *save = NULL;
			int found = 0;

			for (line = text ? strtok_r(text, "\n", &save) : NULL; line && !found;
			     line = strtok_r(NULL, "\n", &save)) {
				char local[64], remote[64], st[8];

				if (sscanf(line, "%*s %63s %63s %7s", local, remote, st) == 3 &&
				    strlen(local) > 5 &&
				    !strncmp(local + strlen(local) - 5, want, 5) &&
				    !strcmp(st, "0A"))
					found = 1;
			}
			free(text);
			if (found)
				return 0;
		}
		sleep_ms(20);
	}
	return -ETIMEDOUT;
}

/* "totals CODE=N CODE=N ..." on a line of text, as the TLS peers print it. 0 or -EIO. */
static int parse_code_totals(const char *text, struct http_totals *ret)
{
	struct http_totals t = { 0 };
	const char *l;
	char *end;

	for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, "totals ", 7))
			break;
	if (!l || !*l)
		return -EIO;
	l += 7;
	while (*l && *l != '\n') {
		unsigned long code, n;

		while (*l == ' ')
			l++;
		code = strtoul(l, &end, 10);
		if (end == l || *end != '=' || code >= 600)
			return -EIO;
		l = end + 1;
		n = strtoul(l, &end, 10);
		if (end == l)
			return -EIO;
		t.status[code] += n;
		t.requests += n;
		l = end;
	}
	*ret = t;
	return 0;
}

const char *tls_peer_name(enum tls_peer kind)
{
	switch (kind) {
	case TLS_PEER_GO:
		return "gotls";
	case TLS_PEER_GO_STRIPPED:
		return "gotls_stripped";
	case TLS_PEER_NODE:
		return "tls_node.js";
	case TLS_PEER_PY:
		return "tls_py.py";
	}
	return "?";
}

/* argv of `PEER mode a b c [d]` into argv[8]: the interpreter, if any, first. */
static void tls_peer_argv(enum tls_peer kind, char *argv[8], const char *mode, const char *a,
			  const char *b, const char *c, const char *d)
{
	int k = 0;

	switch (kind) {
	case TLS_PEER_GO:
	case TLS_PEER_GO_STRIPPED:
		argv[k++] = (char *)bin(kind == TLS_PEER_GO ? "tests/programs/gotls"
							    : "tests/programs/gotls_stripped");
		break;
	case TLS_PEER_NODE:
		argv[k++] = "node";
		argv[k++] = (char *)src("tests/programs/tls_node.js");
		break;
	case TLS_PEER_PY:
		/* Debian's Python, whose _ssl links Debian's libssl.so.3 (not pyenv's). */
		argv[k++] = "/usr/bin/python3";
		argv[k++] = (char *)src("tests/programs/tls_py.py");
		break;
	}
	argv[k++] = (char *)mode;
	argv[k++] = (char *)a;
	argv[k++] = (char *)b;
	if (c)
		argv[k++] = (char *)c;
	if (c && d)
		argv[k++] = (char *)d;
	argv[k] = NULL;
}

static void kill_wait(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int tls_server_start(enum tls_peer kind, int port, const struct tls_cert *cert,
		     struct tls_proc *ret)
{
	struct tls_proc h = { .port = port };
	char portstr[32], *argv[8];
	int err;

	/* The Go peer takes an address, the scripts a port they bind on 127.0.0.1. */
	if (kind == TLS_PEER_GO || kind == TLS_PEER_GO_STRIPPED)
		snprintf(portstr, sizeof(portstr), "127.0.0.1:%d", port);
	else
		snprintf(portstr, sizeof(portstr), "%d", port);
	tls_peer_argv(kind, argv, "server", portstr, cert->cert, cert->key, NULL);
	err = temp_file(h.out, "tls-server");
	if (err)
		return err;
	h.pid = spawn_in(NULL, argv, h.out);
	if (h.pid < 0) {
		err = -errno;
		unlink(h.out);
		return err;
	}
	/* node takes about 0.3 s to start here, python 0.1 s. */
	if (wait_line(h.out, "ready", h.pid, 15000)) {
		char *text = slurp(h.out, NULL);

		fprintf(stderr, "%s server on port %d did not start: %s\n", tls_peer_name(kind),
			port, text ? text : "?");
		free(text);
		kill_wait(h.pid);
		unlink(h.out);
		return -EADDRINUSE;
	}
	*ret = h;
	return 0;
}

int tls_server_stop(struct tls_proc *h, struct http_totals *ret)
{
	char *text;
	int err;

	if (h->pid <= 0)
		return -ESRCH;
	kill(h->pid, SIGTERM);
	wait_cmd(h->pid, 5000);
	h->pid = 0;
	text = slurp(h->out, NULL);
	unlink(h->out);
	err = text ? 0 : -EIO;
	if (!err && ret)
		err = parse_code_totals(text, ret);
	free(text);
	return err;
}

pid_t tls_client_spawn(enum tls_peer kind, const char *url, int n, const char *gofile,
		       const char *out_path)
{
	char nstr[16], *argv[8];
	int fd;

	snprintf(nstr, sizeof(nstr), "%d", n);
	tls_peer_argv(kind, argv, "client", url, nstr, gofile, NULL);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return spawn_in(NULL, argv, out_path);
}

int tls_client_wait(pid_t pid, const char *out_path, int timeout_ms, struct http_totals *ret)
{
	int rc = wait_cmd(pid, timeout_ms);
	char *out = slurp(out_path, NULL);

	if (rc >= 0 && (!out || parse_code_totals(out, ret)))
		rc = -EIO;
	if (rc)
		fprintf(stderr, "TLS client %d: %s", (int)pid, out ? out : "no output\n");
	free(out);
	return rc;
}

int tls_client_run(enum tls_peer kind, const char *url, int n, struct http_totals *ret)
{
	char out[64];
	pid_t pid;
	int rc = temp_file(out, "tls-client");

	if (rc)
		return rc;
	pid = tls_client_spawn(kind, url, n, NULL, out);
	rc = pid > 0 ? tls_client_wait(pid, out, 60000, ret) : -ECHILD;
	unlink(out);
	return rc;
}

int bssl_server_start(int port, const struct tls_cert *cert, struct tls_proc *ret)
{
	struct tls_proc h = { .port = port };
	char portstr[16];
	char *argv[] = { "bssl-tool", "server", "-accept",	   portstr, "-www",
			 "-loop",     "-key",	(char *)cert->key, "-cert", (char *)cert->cert,
			 NULL };
	int err;

	snprintf(portstr, sizeof(portstr), "%d", port);
	err = temp_file(h.out, "bssl-server");
	if (err)
		return err;
	h.pid = spawn_in(NULL, argv, h.out);
	if (h.pid < 0) {
		err = -errno;
		unlink(h.out);
		return err;
	}
	/* It prints nothing before its first connection: wait for its socket instead (a probe
	 * connection would be logged as a failed handshake). */
	err = wait_listen(port, 5000);
	if (err || waitpid(h.pid, NULL, WNOHANG) == h.pid) {
		kill_wait(h.pid);
		unlink(h.out);
		return err ? err : -EADDRINUSE;
	}
	*ret = h;
	return 0;
}

/* Lines of text starting with word. */
static uint64_t count_lines(const char *text, const char *word)
{
	size_t wl = strlen(word);
	uint64_t n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += !strncmp(l, word, wl);
	return n;
}

int bssl_server_stop(struct tls_proc *h, uint64_t *ret_conns)
{
	char *text;

	if (h->pid <= 0)
		return -ESRCH;
	kill(h->pid, SIGTERM);
	wait_cmd(h->pid, 5000);
	h->pid = 0;
	text = slurp(h->out, NULL);
	unlink(h->out);
	if (!text)
		return -EIO;
	if (ret_conns)
		*ret_conns = count_lines(text, "Connected.");
	free(text);
	return 0;
}

pid_t bssl_client_spawn(int port, const char *fifo, const char *out_path)
{
	char target[32];
	char *argv[] = { "bssl-tool", "client", "-connect", target, NULL };
	pid_t pid;

	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	if (mkfifo(fifo, 0600) && errno != EEXIST)
		return -errno;
	pid = fork();
	if (pid == 0) {
		/* Read-write: the open does not wait for a writer, and no writer's close is EOF. */
		int fd = open(fifo, O_RDWR | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd >= 0)
			dup2(fd, 0);
		fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		exec_sbin(argv);
		_exit(127);
	}
	return pid < 0 ? -errno : pid;
}

int bssl_client_feed(const char *fifo, const char *request)
{
	size_t len = strlen(request), done = 0;
	int fd = open(fifo, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, request + done, len - done);

		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		done += (size_t)n;
	}
	close(fd);
	return 0;
}

int bssl_client_wait(pid_t pid, const char *out_path, int timeout_ms, struct http_totals *ret)
{
	struct http_totals t = { 0 };
	int rc = wait_cmd(pid, timeout_ms);
	char *text = slurp(out_path, NULL);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned code;

		if (sscanf(l, "HTTP/1.%*1[01] %u ", &code) == 1 && code >= 100 && code < 600) {
			t.status[code]++;
			t.requests++;
		}
	}
	free(text);
	*ret = t;
	return rc;
}

int bssl_client_run(int port, const char *request, struct http_totals *ret)
{
	char fifo[64], out[64];
	pid_t pid;
	int rc;

	rc = temp_file(fifo, "bssl-in");
	if (rc)
		return rc;
	unlink(fifo);
	rc = temp_file(out, "bssl-out");
	if (rc)
		return rc;
	pid = bssl_client_spawn(port, fifo, out);
	rc = pid < 0 ? (int)pid : bssl_client_feed(fifo, request);
	if (pid > 0) {
		if (rc)
			kill(pid, SIGKILL);
		rc = bssl_client_wait(pid, out, 30000, ret) ?: rc;
	}
	unlink(fifo);
	unlink(out);
	return rc;
}

int unbound_start(int port, const struct tls_cert *cert, struct tls_proc *ret)
{
	struct tls_proc h = { .port = port };
	char conf[64 + 8], text[12288];
	char *argv[] = { "unbound", "-d", "-c", conf, NULL };
	char portstr[16], tlsfiles[4096 + 64];
	int err;

	snprintf(portstr, sizeof(portstr), "%d", port);
	snprintf(tlsfiles, sizeof(tlsfiles), "\"\n  tls-service-pem: \"%s\"\n",
		 cert ? cert->cert : "");
	err = temp_file(h.out, "unbound");
	if (err)
		return err;
	snprintf(conf, sizeof(conf), "%s.conf", h.out);
	/* No privilege drop, chroot, syslog or pid file: a foreground process of the test's,
	 * answering from local data only (module iterator without a cache to fill: "test." is
	 * one of unbound's default local zones, so other names are NXDOMAIN, never asked
	 * upstream). */
	snprintf(text, sizeof(text),
		 "server:\n"
		 "  interface: 127.0.0.1@%1$d\n"
		 "  port: %1$d\n"
		 "%2$s%3$s%4$s%5$s%6$s"
		 "  do-ip6: no\n"
		 "  do-udp: %7$s\n"
		 "  num-threads: 1\n"
		 "  username: \"\"\n"
		 "  chroot: \"\"\n"
		 "  directory: \"/\"\n"
		 "  pidfile: \"\"\n"
		 "  do-daemonize: no\n"
		 "  use-syslog: no\n"
		 "  logfile: \"\"\n"
		 "  module-config: \"iterator\"\n"
		 "  local-zone: \"example.test.\" static\n"
		 "  local-data: \"example.test. 60 IN A 127.0.0.2\"\n"
		 "remote-control:\n"
		 "  control-enable: no\n",
		 port, cert ? "  tls-port: " : "", cert ? portstr : "",
		 cert ? "\n  tls-service-key: \"" : "", cert ? cert->key : "", cert ? tlsfiles : "",
		 cert ? "no" : "yes");
	err = write_file(conf, text);
	if (err)
		goto cleanup;
	h.pid = spawn_in(NULL, argv, h.out);
	if (h.pid < 0) {
		err = -errno;
		goto cleanup;
	}
	err = wait_listen(port, 10000);
	if (!err && waitpid(h.pid, NULL, WNOHANG) == h.pid)
		err = -EADDRINUSE;
	if (err) {
		char *log = slurp(h.out, NULL);

		fprintf(stderr, "unbound on port %d did not start: %s\n", port, log ? log : "?");
		free(log);
		kill_wait(h.pid);
		goto cleanup;
	}
	*ret = h;
	return 0;
cleanup:
	unlink(conf);
	unlink(h.out);
	return err;
}

void unbound_stop(struct tls_proc *h)
{
	char conf[64 + 8];

	if (h->pid <= 0)
		return;
	kill(h->pid, SIGTERM);
	wait_cmd(h->pid, 5000);
	h->pid = 0;
	snprintf(conf, sizeof(conf), "%s.conf", h->out);
	unlink(conf);
	unlink(h->out);
}

pid_t kdig_spawn(int port, int n, const char *gofile, const char *out_path)
{
	/* $1 the go file ("" for none), $2 the port, $3 how many queries. */
	static const char script[] =
		"g=$1 p=$2 n=$3 i=0\n"
		"if [ -n \"$g\" ]; then\n"
		"  while [ ! -e \"$g\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done\n"
		"fi\n"
		"set --\n"
		"while [ $n -gt 0 ]; do set -- \"$@\" example.test; n=$((n - 1)); done\n"
		"exec kdig @127.0.0.1 -p \"$p\" +tls +keepopen +timeout=5 +retry=0 \"$@\"\n";
	char portstr[16], nstr[16];
	char *argv[] = { "/bin/sh",
			 "-c",
			 (char *)script,
			 "kdig-wait",
			 (char *)(gofile ? gofile : ""),
			 portstr,
			 nstr,
			 NULL };
	int fd;

	if (n < 1 || n > 100)
		return -1;
	snprintf(portstr, sizeof(portstr), "%d", port);
	snprintf(nstr, sizeof(nstr), "%d", n);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return spawn_in(NULL, argv, out_path);
}

int kdig_wait(pid_t pid, const char *out_path, int timeout_ms, int *ret_answers)
{
	int rc = wait_cmd(pid, timeout_ms);
	char *out = slurp(out_path, NULL);
	int answers = 0;

	for (const char *l = out; l && (l = strstr(l, "status: NOERROR")); l++)
		answers++;
	free(out);
	*ret_answers = answers;
	return rc;
}
