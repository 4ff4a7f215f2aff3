// SPDX-License-Identifier: Apache-2.0
/* The fake Kubernetes API server, Kubernetes objects and containers in cgroups
 * for integration tests (kube_harness.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/kube_harness.h"
#include "tests/integration/oap_harness.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define FIRST_TOKEN "token-1"
/* A dump or a huge garbage answer is a few MiB; nothing a test asks for comes
 * near this. */
#define MAX_ANSWER (64 << 20)

static int fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static int fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* --- certificates and the service-account directory --- */

/* A CA, and a server certificate it signed for the names an in-cluster client
 * dials (KUBERNETES_SERVICE_HOST is an address; kubernetes.default.svc the DNS
 * name). EC keys: an RSA key takes a second or more to make. */
static int kube_tls_make(const char *dir)
{
	static const char cnf[] = "[req]\n"
				  "distinguished_name = dn\n"
				  "[dn]\n"
				  "[ca]\n"
				  "basicConstraints = critical,CA:TRUE\n"
				  "keyUsage = critical,keyCertSign,cRLSign\n"
				  "subjectKeyIdentifier = hash\n"
				  "[server]\n"
				  "basicConstraints = CA:FALSE\n"
				  "keyUsage = critical,digitalSignature,keyEncipherment\n"
				  "extendedKeyUsage = serverAuth\n"
				  "subjectAltName = "
				  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc,"
				  "DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1\n"
				  "authorityKeyIdentifier = keyid\n";
	char conf[320], cakey[320], ca[320], key[320], csr[320], crt[320], serial[32];
	uint64_t r = 0;
	char *out = NULL;
	int err;

	if (fmt(conf, sizeof(conf), "%s/openssl.cnf", dir) ||
	    fmt(cakey, sizeof(cakey), "%s/ca.key", dir) || fmt(ca, sizeof(ca), "%s/ca.pem", dir) ||
	    fmt(key, sizeof(key), "%s/server.key", dir) ||
	    fmt(csr, sizeof(csr), "%s/server.csr", dir) ||
	    fmt(crt, sizeof(crt), "%s/server.pem", dir))
		return -ENAMETOOLONG;
	err = write_file(conf, cnf);
	if (err)
		return err;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return -EIO;
	snprintf(serial, sizeof(serial), "0x%016llx", (unsigned long long)(r >> 1));
	{
		char *const ca_req[] = { "openssl",
					 "req",
					 "-x509",
					 "-config",
					 conf,
					 "-extensions",
					 "ca",
					 "-newkey",
					 "ec",
					 "-pkeyopt",
					 "ec_paramgen_curve:prime256v1",
					 "-nodes",
					 "-subj",
					 "/CN=fake-kube-ca",
					 "-days",
					 "1",
					 "-keyout",
					 cakey,
					 "-out",
					 ca,
					 NULL };
		char *const server_req[] = { "openssl", "req",	    "-new",
					     "-config", conf,	    "-newkey",
					     "ec",	"-pkeyopt", "ec_paramgen_curve:prime256v1",
					     "-nodes",	"-subj",    "/CN=kube-apiserver",
					     "-keyout", key,	    "-out",
					     csr,	NULL };
		char *const server_sign[] = { "openssl", "x509",	"-req", "-in",
					      csr,	 "-CA",		ca,	"-CAkey",
					      cakey,	 "-set_serial", serial, "-days",
					      "1",	 "-extfile",	conf,	"-extensions",
					      "server",	 "-out",	crt,	NULL };
		char *const *steps[] = { ca_req, server_req, server_sign };

		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			int rc = run_capture(NULL, steps[i], 30000, &out);

			if (rc) {
				fprintf(stderr, "openssl %s: %s", steps[i][1], out ? out : "?\n");
				free(out);
				return rc < 0 ? rc : -EIO;
			}
			free(out);
			out = NULL;
		}
	}
	/* The key is read by the fake only; the CA by the client, which may be the
	 * rover user. */
	chmod(ca, 0644);
	chmod(crt, 0644);
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	size_t len;
	char *text = slurp(from, &len);
	int err;

	if (!text)
		return -errno ? -errno : -EIO;
	err = write_file(to, text);
	free(text);
	return err;
}

/*
 * One rotation as kubelet's AtomicWriter makes it: the files in a new directory
 * named after the time, a link ..data_tmp to it renamed over ..data, the old
 * directory removed. The visible names (token, ca.crt, namespace) are links
 * through ..data made once. A client holding the file open keeps the old token:
 * it must open the path again to see the new one.
 */
static int sa_write(struct kube_api *k, const char *token)
{
	char ts[128], tsdir[512], path[600], tmplink[400], datalink[400], old[256] = "";
	struct timespec now;
	struct tm tm;
	ssize_t n;
	int err;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	for (int i = 0;; i++) {
		snprintf(ts, sizeof(ts), "..%04d_%02d_%02d_%02d_%02d_%02d.%09ld%s%d",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, now.tv_nsec, i ? "_" : "", i);
		if (fmt(tsdir, sizeof(tsdir), "%s/%s", k->sa_dir, ts))
			return -ENAMETOOLONG;
		if (!mkdir(tsdir, 0755))
			break;
		if (errno != EEXIST || i > 100)
			return -errno;
	}
	chmod(tsdir, 0755);
	if (fmt(path, sizeof(path), "%s/token", tsdir))
		return -ENAMETOOLONG;
	if ((err = write_file(path, token)))
		return err;
	chmod(path, 0644);
	if (fmt(path, sizeof(path), "%s/namespace", tsdir))
		return -ENAMETOOLONG;
	if ((err = write_file(path, "rover")))
		return err;
	chmod(path, 0644);
	if (k->tls) {
		char ca[320];

		if (fmt(path, sizeof(path), "%s/ca.crt", tsdir) ||
		    fmt(ca, sizeof(ca), "%s/ca.pem", k->dir))
			return -ENAMETOOLONG;
		if ((err = copy_file(ca, path)))
			return err;
		chmod(path, 0644);
	}
	if (fmt(tmplink, sizeof(tmplink), "%s/..data_tmp", k->sa_dir) ||
	    fmt(datalink, sizeof(datalink), "%s/..data", k->sa_dir))
		return -ENAMETOOLONG;
	n = readlink(datalink, old, sizeof(old) - 1);
	old[n > 0 ? n : 0] = 0;
	unlink(tmplink);
	if (symlink(ts, tmplink) || rename(tmplink, datalink))
		return -errno;
	if (old[0]) {
		char olddir[512];

		if (!fmt(olddir, sizeof(olddir), "%s/%s", k->sa_dir, old))
			rm_rf(olddir);
	}
	snprintf(k->token, sizeof(k->token), "%s", token);
	return 0;
}

static int sa_make(struct kube_api *k)
{
	static const char *const names[] = { "token", "namespace", "ca.crt" };
	int err;

	if (mkdir(k->sa_dir, 0755) && errno != EEXIST)
		return -errno;
	chmod(k->sa_dir, 0755);
	if ((err = sa_write(k, FIRST_TOKEN)))
		return err;
	for (size_t i = 0; i < 3; i++) {
		char link[400], target[64];

		if (i == 2 && !k->tls)
			break;
		snprintf(target, sizeof(target), "..data/%s", names[i]);
		if (fmt(link, sizeof(link), "%s/%s", k->sa_dir, names[i]))
			return -ENAMETOOLONG;
		unlink(link);
		if (symlink(target, link))
			return -errno;
	}
	return 0;
}

/* --- the fake's process --- */

static int spawn_fake(struct kube_api *k, int port, const char *objects)
{
	char portarg[16], portfile[320], cert[320], key[320];
	char *argv[20];
	int n = 0;

	snprintf(portarg, sizeof(portarg), "%d", port);
	if (fmt(portfile, sizeof(portfile), "%s/kube.port", k->dir) ||
	    fmt(cert, sizeof(cert), "%s/server.pem", k->dir) ||
	    fmt(key, sizeof(key), "%s/server.key", k->dir))
		return -ENAMETOOLONG;
	argv[n++] = "/usr/bin/python3";
	argv[n++] = (char *)src("tests/kube/fake_kube_api.py");
	argv[n++] = "--port";
	argv[n++] = portarg;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--port-file";
	argv[n++] = portfile;
	argv[n++] = "--token-file";
	argv[n++] = k->token_path;
	if (k->tls) {
		argv[n++] = "--cert";
		argv[n++] = cert;
		argv[n++] = "--key";
		argv[n++] = key;
	}
	if (objects) {
		argv[n++] = "--objects";
		argv[n++] = (char *)objects;
	}
	argv[n] = NULL;
	unlink(portfile);
	k->pid = track(spawn_cmd(argv, k->log_path));
	if (k->pid <= 0)
		return -errno ? -errno : -EIO;
	for (int i = 0; i < 300; i++) {
		char *s = slurp(portfile, NULL);
		int p = s ? atoi(s) : 0;

		free(s);
		if (p > 0) {
			k->port = p;
			snprintf(k->url, sizeof(k->url), "%s://127.0.0.1:%d",
				 k->tls ? "https" : "http", p);
			return 0;
		}
		if (waitpid(k->pid, NULL, WNOHANG) == k->pid)
			break;
		sleep_ms(50);
	}
	{
		char *log = slurp(k->log_path, NULL);

		fprintf(stderr, "fake API server did not start:\n%s", log ? log : "(no log)\n");
		free(log);
	}
	kube_api_stop(k);
	return -EIO;
}

int kube_api_start(const char *dir, int port, int tls, struct kube_api *ret)
{
	struct kube_api k = { .tls = !!tls };
	int err;

	if (fmt(k.dir, sizeof(k.dir), "%s", dir) ||
	    fmt(k.sa_dir, sizeof(k.sa_dir), "%s/serviceaccount", dir) ||
	    fmt(k.token_path, sizeof(k.token_path), "%s/token", k.sa_dir) ||
	    fmt(k.log_path, sizeof(k.log_path), "%s/kube.log", dir))
		return -ENAMETOOLONG;
	/* The supervisor runs as the rover user and reads serviceaccount/ (a mkdtemp directory
	 * is 0700). */
	if (chmod(dir, 0755))
		return -errno;
	if (tls) {
		if (fmt(k.ca_path, sizeof(k.ca_path), "%s/ca.crt", k.sa_dir))
			return -ENAMETOOLONG;
		if ((err = kube_tls_make(dir)))
			return err;
	}
	if ((err = sa_make(&k)))
		return err;
	if ((err = spawn_fake(&k, port, NULL)))
		return err;
	*ret = k;
	return 0;
}

void kube_api_stop(struct kube_api *k)
{
	if (k->pid <= 0)
		return;
	kill(k->pid, SIGTERM);
	if (wait_cmd(k->pid, 5000) == -ETIMEDOUT)
		fprintf(stderr, "fake API server %d did not stop on SIGTERM, killed\n", k->pid);
	k->pid = 0;
}

int kube_api_down(struct kube_api *k)
{
	struct json_object *cmd = json_object_new_object(), *dump = NULL;
	char state[320];
	int code, err;

	if (fmt(state, sizeof(state), "%s/kube.state.json", k->dir))
		return -ENAMETOOLONG;
	json_object_object_add(cmd, "cmd", json_object_new_string("dump"));
	code = kube_api_control(k, cmd, &dump);
	json_object_put(cmd);
	if (code != 200) {
		json_object_put(dump);
		return code < 0 ? code : -EIO;
	}
	err = json_object_to_file_ext(state, dump, JSON_C_TO_STRING_PLAIN) ? -EIO : 0;
	json_object_put(dump);
	if (err)
		return err;
	kube_api_stop(k);
	return 0;
}

int kube_api_up(struct kube_api *k)
{
	char state[320];

	if (fmt(state, sizeof(state), "%s/kube.state.json", k->dir))
		return -ENAMETOOLONG;
	return spawn_fake(k, k->port, state);
}

int kube_api_restart(struct kube_api *k)
{
	int err = kube_api_down(k);

	return err ? err : kube_api_up(k);
}

int kube_api_set_token(struct kube_api *k, const char *token)
{
	return sa_write(k, token);
}

/* --- control --- */

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* HTTP/1.1 POST to 127.0.0.1:port with Connection: close, read to the end: test
 * code, one blocking exchange, 20 s at most each way. The status, or -errno. */
static int http_post(int port, const char *path, const char *body, char **ret_body)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 20 };
	size_t len = 0, cap = 0;
	char *buf = NULL, *hdr = NULL, *eoh;
	int fd, err, code;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto cleanup;
	}
	if (asprintf(&hdr,
		     "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
		     "application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		     path, port, strlen(body)) < 0) {
		hdr = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	if ((err = write_all(fd, hdr, strlen(hdr))) || (err = write_all(fd, body, strlen(body))))
		goto cleanup;
	for (;;) {
		ssize_t n;

		if (cap - len < 65536) {
			char *nb;

			if (cap >= MAX_ANSWER) {
				err = -EFBIG;
				goto cleanup;
			}
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!buf) {
		err = -EPROTO;
		goto cleanup;
	}
	buf[len] = 0;
	eoh = strstr(buf, "\r\n\r\n");
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1 || !eoh) {
		err = -EPROTO;
		goto cleanup;
	}
	if (ret_body) {
		*ret_body = strdup(eoh + 4);
		if (!*ret_body) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	err = code;
cleanup:
	free(hdr);
	free(buf);
	close(fd);
	return err;
}

int kube_api_control(const struct kube_api *k, struct json_object *cmd, struct json_object **ret)
{
	char *body = NULL;
	int code;

	code = http_post(k->port, "/_control",
			 json_object_to_json_string_ext(cmd, JSON_C_TO_STRING_PLAIN), &body);
	if (code < 0)
		return code;
	if (ret) {
		*ret = json_tokener_parse(body);
		if (!*ret)
			code = -EPROTO;
	}
	free(body);
	return code;
}

/* cmd (consumed) -> the answer (a new reference) when 200, else NULL with
 * *ret_err. */
static struct json_object *control_ok(const struct kube_api *k, struct json_object *cmd,
				      int *ret_err)
{
	struct json_object *ans = NULL;
	int code = kube_api_control(k, cmd, &ans);

	json_object_put(cmd);
	if (code == 200)
		return ans;
	if (ans)
		fprintf(stderr, "fake API server: %s\n", json_object_to_json_string(ans));
	json_object_put(ans);
	*ret_err = code < 0 ? code : code == 404 ? -ENOENT : -EINVAL;
	return NULL;
}

static struct json_object *command(const char *name)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "cmd", json_object_new_string(name));
	return c;
}

static long num_field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return -EPROTO;
	/* json-c reads "123" as 123 too: resourceVersions are strings. */
	return json_object_get_int64(v);
}

long kube_api_put(const struct kube_api *k, struct json_object *obj)
{
	struct json_object *c = command("put"), *ans;
	int err = 0;
	long rv;

	json_object_object_add(c, "object", obj);
	ans = control_ok(k, c, &err);
	if (!ans)
		return err;
	rv = num_field(ans, "resourceVersion");
	json_object_put(ans);
	return rv;
}

long kube_api_delete(const struct kube_api *k, const char *kind, const char *ns, const char *name)
{
	struct json_object *c = command("delete"), *ans;
	int err = 0;
	long rv;

	json_object_object_add(c, "kind", json_object_new_string(kind));
	json_object_object_add(c, "namespace", json_object_new_string(ns ? ns : ""));
	json_object_object_add(c, "name", json_object_new_string(name));
	ans = control_ok(k, c, &err);
	if (!ans)
		return err;
	rv = num_field(ans, "resourceVersion");
	json_object_put(ans);
	return rv;
}

static long simple(const struct kube_api *k, const char *name, const char *field)
{
	struct json_object *ans;
	int err = 0;
	long v;

	ans = control_ok(k, command(name), &err);
	if (!ans)
		return err;
	v = num_field(ans, field);
	json_object_put(ans);
	return v;
}

long kube_api_compact(const struct kube_api *k)
{
	return simple(k, "compact", "compacted");
}

int kube_api_bookmark(const struct kube_api *k)
{
	return (int)simple(k, "bookmark", "open_watches");
}

int kube_api_drop_watches(const struct kube_api *k)
{
	return (int)simple(k, "drop_watches", "dropped");
}

int kube_api_garbage(const struct kube_api *k, const char *mode, int count, const char *target)
{
	return kube_api_garbage_bytes(k, mode, count, target, 8 << 20);
}

int kube_api_garbage_bytes(const struct kube_api *k, const char *mode, int count,
			   const char *target, long bytes)
{
	struct json_object *c = command("garbage"), *ans;
	int err = 0;

	json_object_object_add(c, "mode", json_object_new_string(mode));
	json_object_object_add(c, "count", json_object_new_int(count));
	json_object_object_add(c, "target", json_object_new_string(target ? target : "any"));
	json_object_object_add(c, "bytes", json_object_new_int64(bytes));
	ans = control_ok(k, c, &err);
	json_object_put(ans);
	return ans ? 0 : err;
}

int kube_api_outage(const struct kube_api *k, const char *mode)
{
	struct json_object *c = command("outage"), *ans;
	int err = 0;

	json_object_object_add(c, "mode", mode ? json_object_new_string(mode) : NULL);
	ans = control_ok(k, c, &err);
	json_object_put(ans);
	return ans ? 0 : err;
}

struct json_object *kube_api_status(const struct kube_api *k)
{
	int err = 0;

	return control_ok(k, command("status"), &err);
}

static long status_count(const struct kube_api *k, const char *section, const char *key)
{
	struct json_object *st = kube_api_status(k), *sec, *v;
	long n = 0;

	if (!st)
		return -EIO;
	if (json_object_object_get_ex(st, section, &sec) && json_object_object_get_ex(sec, key, &v))
		n = json_object_get_int64(v);
	json_object_put(st);
	return n;
}

long kube_api_requests(const struct kube_api *k, const char *what)
{
	return status_count(k, "requests", what);
}

long kube_api_token_uses(const struct kube_api *k, const char *token)
{
	return status_count(k, "tokens", token);
}

int kube_api_wait_watches(const struct kube_api *k, const char *resource, int n, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		long open = status_count(k, "open_watches", resource);

		if (open >= n)
			return 0;
		sleep_ms(20);
	}
	return -ETIMEDOUT;
}

/* --- a client (curl) --- */

int kube_api_get(const struct kube_api *k, const char *path, const char *token, const char *cafile,
		 int *ret_code, char **ret_body)
{
	char url[512], auth[200], bodyp[] = "/tmp/kube-curl-body.XXXXXX",
				  errp[] = "/tmp/kube-curl-err.XXXXXX";
	char *argv[24], *out = NULL;
	int n = 0, rc, fd;

	if (fmt(url, sizeof(url), "%s%s", k->url, path) ||
	    fmt(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : ""))
		return -ENAMETOOLONG;
	if ((fd = mkstemp(bodyp)) < 0)
		return -errno;
	close(fd);
	if ((fd = mkstemp(errp)) < 0) {
		rc = -errno;
		unlink(bodyp);
		return rc;
	}
	close(fd);
	argv[n++] = "/usr/bin/curl";
	argv[n++] = "-sS";
	argv[n++] = "--noproxy";
	argv[n++] = "*";
	argv[n++] = "--max-time";
	argv[n++] = "30";
	argv[n++] = "-H";
	argv[n++] = "Accept: application/json";
	if (token) {
		argv[n++] = "-H";
		argv[n++] = auth;
	}
	if (k->tls || cafile) {
		argv[n++] = "--cacert";
		argv[n++] = (char *)(cafile ? cafile : k->ca_path);
	}
	argv[n++] = "--stderr";
	argv[n++] = errp;
	argv[n++] = "-o";
	argv[n++] = bodyp;
	argv[n++] = "-w";
	argv[n++] = "%{http_code}";
	argv[n++] = url;
	argv[n] = NULL;
	rc = run_capture(NULL, argv, 40000, &out);
	*ret_code = out ? atoi(out) : 0;
	if (rc) {
		char *e = slurp(errp, NULL);

		fprintf(stderr, "curl %s: exit %d: %s", url, rc, e ? e : "\n");
		free(e);
	}
	if (ret_body)
		*ret_body = slurp(bodyp, NULL);
	free(out);
	unlink(bodyp);
	unlink(errp);
	return rc;
}

pid_t kube_api_watch_spawn(const struct kube_api *k, const char *path, const char *out_path)
{
	char url[512], auth[200];
	char *argv[20];
	int n = 0;

	if (fmt(url, sizeof(url), "%s%s", k->url, path) ||
	    fmt(auth, sizeof(auth), "Authorization: Bearer %s", k->token)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	argv[n++] = "/usr/bin/curl";
	argv[n++] = "-sS";
	argv[n++] = "-N";
	argv[n++] = "--noproxy";
	argv[n++] = "*";
	argv[n++] = "-H";
	argv[n++] = auth;
	if (k->tls) {
		argv[n++] = "--cacert";
		argv[n++] = (char *)k->ca_path;
	}
	argv[n++] = "-o";
	argv[n++] = (char *)out_path;
	argv[n++] = url;
	argv[n] = NULL;
	return spawn_cmd(argv, NULL);
}

struct json_object **kube_watch_events(const char *out_path, size_t *ret_n)
{
	char *text = slurp(out_path, NULL), *save = NULL, *line;
	struct json_object **out = NULL;
	size_t n = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct json_object *o = json_tokener_parse(line), **no;

		if (!o)
			continue;
		no = realloc(out, (n + 1) * sizeof(*out));
		if (!no) {
			json_object_put(o);
			break;
		}
		out = no;
		out[n++] = o;
	}
	free(text);
	*ret_n = n;
	return out;
}

void kube_watch_events_free(struct json_object **ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_put(ev[i]);
	free(ev);
}

/* --- objects --- */

void kube_random_uid(char ret[37])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		abort();
	b[6] = (b[6] & 0x0f) | 0x40; /* version 4, as the API server makes them */
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(ret, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

void kube_random_id(char ret[65])
{
	unsigned char b[32];

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		abort();
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(ret + 2 * i, 3, "%02x", b[i]);
}

const char *kube_runtime_prefix(enum kube_runtime rt)
{
	switch (rt) {
	case KUBE_RT_CRIO:
		return "cri-o://";
	case KUBE_RT_DOCKER:
		return "docker://";
	case KUBE_RT_CONTAINERD:
	default:
		return "containerd://";
	}
}

static void add_str(struct json_object *o, const char *key, const char *value)
{
	if (value)
		json_object_object_add(o, key, json_object_new_string(value));
}

/* "k=v" strings -> {"k": "v"} */
static struct json_object *kv_map(const char *const *kv)
{
	struct json_object *m = json_object_new_object();

	for (; kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		char *key = strndup(*kv, eq ? (size_t)(eq - *kv) : strlen(*kv));

		json_object_object_add(m, key, json_object_new_string(eq ? eq + 1 : ""));
		free(key);
	}
	return m;
}

static const char *owner_api_version(const char *kind)
{
	static const char *const apps[] = { "ReplicaSet", "Deployment", "StatefulSet",
					    "DaemonSet" };

	for (size_t i = 0; i < 4; i++)
		if (!strcmp(kind, apps[i]))
			return "apps/v1";
	if (!strcmp(kind, "Job") || !strcmp(kind, "CronJob"))
		return "batch/v1";
	return "v1";
}

static struct json_object *owner_ref(const struct kube_owner *o)
{
	struct json_object *r = json_object_new_object();
	char uid[37];

	if (!o->uid)
		kube_random_uid(uid);
	add_str(r, "apiVersion", owner_api_version(o->kind));
	add_str(r, "kind", o->kind);
	add_str(r, "name", o->name);
	add_str(r, "uid", o->uid ? o->uid : uid);
	if (o->controller) {
		json_object_object_add(r, "controller", json_object_new_boolean(o->controller > 0));
		json_object_object_add(r, "blockOwnerDeletion", json_object_new_boolean(1));
	}
	return r;
}

static struct json_object *metadata(const char *name, const char *ns, const char *uid)
{
	struct json_object *m = json_object_new_object();

	add_str(m, "name", name);
	if (ns)
		add_str(m, "namespace", ns);
	add_str(m, "uid", uid);
	return m;
}

static struct json_object *object(const char *kind, const char *api_version,
				  struct json_object *meta)
{
	struct json_object *o = json_object_new_object();

	add_str(o, "kind", kind);
	add_str(o, "apiVersion", api_version);
	json_object_object_add(o, "metadata", meta);
	return o;
}

static const char *image_of(const struct kube_container *c)
{
	return c->image ? c->image : "registry.example/app:1";
}

static struct json_object *container_spec(const struct kube_container *c)
{
	struct json_object *s = json_object_new_object(), *env = json_object_new_array();

	add_str(s, "name", c->name);
	add_str(s, "image", image_of(c));
	for (const struct kube_env *e = c->env; e && e->name; e++) {
		struct json_object *v = json_object_new_object();

		add_str(v, "name", e->name);
		if (e->value) {
			add_str(v, "value", e->value);
		} else {
			struct json_object *from = json_object_new_object(),
					   *ref = json_object_new_object();

			add_str(ref, "apiVersion", "v1");
			add_str(ref, "fieldPath", "metadata.name");
			json_object_object_add(from, "fieldRef", ref);
			json_object_object_add(v, "valueFrom", from);
		}
		json_object_array_add(env, v);
	}
	if (json_object_array_length(env))
		json_object_object_add(s, "env", env);
	else
		json_object_put(env);
	return s;
}

static struct json_object *container_status(const struct kube_container *c)
{
	struct json_object *s = json_object_new_object(), *state = json_object_new_object(),
			   *running = json_object_new_object();
	char id[160];

	snprintf(id, sizeof(id), "%s%s", kube_runtime_prefix(c->runtime), c->id);
	add_str(s, "name", c->name);
	add_str(s, "containerID", id);
	add_str(s, "image", image_of(c));
	add_str(s, "imageID",
		"registry.example/app@sha256:"
		"0000000000000000000000000000000000000000000000000000000000000000");
	json_object_object_add(s, "ready", json_object_new_boolean(!c->init));
	json_object_object_add(s, "started", json_object_new_boolean(!c->init));
	json_object_object_add(s, "restartCount", json_object_new_int(0));
	add_str(running, "startedAt", "2026-01-01T00:00:00Z");
	json_object_object_add(state, "running", running);
	json_object_object_add(s, "state", state);
	return s;
}

struct json_object *kube_pod_json(const struct kube_pod *p)
{
	struct json_object *meta = metadata(p->name, p->ns ? p->ns : "default", p->uid);
	struct json_object *pod = object("Pod", "v1", meta);
	struct json_object *spec = json_object_new_object(), *status = json_object_new_object();
	struct json_object *cs = json_object_new_array(), *ics = json_object_new_array();
	struct json_object *st = json_object_new_array(), *ist = json_object_new_array();

	if (p->labels)
		json_object_object_add(meta, "labels", kv_map(p->labels));
	if (p->owners && p->owners->kind) {
		struct json_object *refs = json_object_new_array();

		for (const struct kube_owner *o = p->owners; o->kind; o++)
			json_object_array_add(refs, owner_ref(o));
		json_object_object_add(meta, "ownerReferences", refs);
	}
	add_str(spec, "nodeName", p->node);
	for (const struct kube_container *c = p->containers; c && c->name; c++) {
		json_object_array_add(c->init ? ics : cs, container_spec(c));
		if (c->id)
			json_object_array_add(c->init ? ist : st, container_status(c));
	}
	json_object_object_add(spec, "containers", cs);
	if (json_object_array_length(ics))
		json_object_object_add(spec, "initContainers", ics);
	else
		json_object_put(ics);
	add_str(spec, "restartPolicy", "Always");
	json_object_object_add(pod, "spec", spec);

	add_str(status, "phase", p->phase ? p->phase : "Running");
	add_str(status, "hostIP", p->host_ip);
	add_str(status, "podIP", p->pod_ip);
	if (p->pod_ip) {
		struct json_object *ips = json_object_new_array(), *ip = json_object_new_object();

		add_str(ip, "ip", p->pod_ip);
		json_object_array_add(ips, ip);
		json_object_object_add(status, "podIPs", ips);
	}
	if (json_object_array_length(ist))
		json_object_object_add(status, "initContainerStatuses", ist);
	else
		json_object_put(ist);
	if (json_object_array_length(st))
		json_object_object_add(status, "containerStatuses", st);
	else
		json_object_put(st);
	json_object_object_add(pod, "status", status);
	return pod;
}

struct json_object *kube_service_json(const struct kube_service *s)
{
	struct json_object *svc =
		object("Service", "v1", metadata(s->name, s->ns ? s->ns : "default", s->uid));
	struct json_object *spec = json_object_new_object(), *ports = json_object_new_array(),
			   *port = json_object_new_object(), *ips = json_object_new_array();
	const char *ip = s->cluster_ip ? s->cluster_ip : "10.96.0.10";

	if (s->selector)
		json_object_object_add(spec, "selector", kv_map(s->selector));
	add_str(spec, "type", "ClusterIP");
	add_str(spec, "clusterIP", ip);
	json_object_array_add(ips, json_object_new_string(ip));
	json_object_object_add(spec, "clusterIPs", ips);
	add_str(port, "name", "http");
	add_str(port, "protocol", "TCP");
	json_object_object_add(port, "port", json_object_new_int(80));
	json_object_object_add(port, "targetPort", json_object_new_int(8080));
	json_object_array_add(ports, port);
	json_object_object_add(spec, "ports", ports);
	json_object_object_add(svc, "spec", spec);
	json_object_object_add(svc, "status", json_object_new_object());
	return svc;
}

struct json_object *kube_owned_json(const char *kind, const char *ns, const char *name,
				    const char *uid, const struct kube_owner *owner)
{
	struct json_object *meta = metadata(name, ns ? ns : "default", uid);
	struct json_object *o = object(kind, owner_api_version(kind), meta);
	struct json_object *spec = json_object_new_object();

	if (owner) {
		struct json_object *refs = json_object_new_array();

		json_object_array_add(refs, owner_ref(owner));
		json_object_object_add(meta, "ownerReferences", refs);
	}
	if (strcmp(kind, "Job"))
		json_object_object_add(spec, "replicas", json_object_new_int(1));
	json_object_object_add(o, "spec", spec);
	return o;
}

struct json_object *kube_node_json(const char *name, const char *internal_ip)
{
	struct json_object *meta = metadata(name, NULL, NULL), *labels = json_object_new_object();
	struct json_object *node = object("Node", "v1", meta);
	struct json_object *status = json_object_new_object(), *addrs = json_object_new_array();
	struct json_object *a;

	add_str(labels, "kubernetes.io/hostname", name);
	add_str(labels, "kubernetes.io/os", "linux");
	json_object_object_add(meta, "labels", labels);
	if (internal_ip) {
		a = json_object_new_object();
		add_str(a, "type", "InternalIP");
		add_str(a, "address", internal_ip);
		json_object_array_add(addrs, a);
	}
	a = json_object_new_object();
	add_str(a, "type", "Hostname");
	add_str(a, "address", name);
	json_object_array_add(addrs, a);
	json_object_object_add(status, "addresses", addrs);
	json_object_object_add(node, "status", status);
	return node;
}

/* --- containers in cgroups --- */

#define MAX_SPAWNED 64

struct spawned {
	pid_t pid;
	pid_t conmon;
	int layout;
	char path[400]; /* as /proc/PID/cgroup shows it */
	char conmon_path[400];
};

static struct spawned spawned[MAX_SPAWNED];

static int is_fs(const char *path, long magic)
{
	struct statfs s;

	return !statfs(path, &s) && (long)s.f_type == magic;
}

/* The hierarchies a layout places processes in: v2's, or v1's name=systemd and
 * pids. */
static int roots_of(int layout, const char *ret[2])
{
	if (layout & KUBE_V1) {
		if (!is_fs("/sys/fs/cgroup/systemd", CGROUP_SUPER_MAGIC) ||
		    !is_fs("/sys/fs/cgroup/pids", CGROUP_SUPER_MAGIC))
			return 0;
		ret[0] = "/sys/fs/cgroup/systemd";
		ret[1] = "/sys/fs/cgroup/pids";
		return 2;
	}
	if (is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
		ret[0] = "/sys/fs/cgroup/unified";
	else if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
		ret[0] = "/sys/fs/cgroup";
	else
		return 0;
	return 1;
}

enum kube_runtime kube_layout_runtime(enum kube_layout layout)
{
	switch ((int)layout & ~KUBE_V1) {
	case KUBE_CRIO_SYSTEMD:
		return KUBE_RT_CRIO;
	case KUBE_DOCKER_SYSTEMD:
		return KUBE_RT_DOCKER;
	default:
		return KUBE_RT_CONTAINERD;
	}
}

int kube_cgroup_path(enum kube_layout layout, const char *pod_uid, const char *container_id,
		     char *buf, size_t len)
{
	/* kubelet's systemd driver escapes the uid's dashes (a dash separates slice
	 * levels). */
	char uid_[64];
	const char *scope;

	snprintf(uid_, sizeof(uid_), "%s", pod_uid);
	for (char *c = uid_; *c; c++)
		if (*c == '-')
			*c = '_';
	switch ((int)layout & ~KUBE_V1) {
	case KUBE_CGROUPFS:
		return fmt(buf, len, "/kubepods/burstable/pod%s/%s", pod_uid, container_id);
	case KUBE_CRIO_SYSTEMD:
		scope = "crio";
		break;
	case KUBE_DOCKER_SYSTEMD:
		scope = "docker";
		break;
	case KUBE_CONTAINERD_SYSTEMD:
	default:
		scope = "cri-containerd";
		break;
	}
	return fmt(buf, len,
		   "/kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-pod%s.slice/%s-%s.scope",
		   uid_, scope, container_id);
}

static int mkdir_p(const char *root, const char *path)
{
	char full[600];

	if (fmt(full, sizeof(full), "%s%s", root, path))
		return -ENAMETOOLONG;
	for (char *p = full + strlen(root) + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;

		*p = 0;
		if (mkdir(full, 0755) && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

/* Runs argv with its own pid written into path's cgroup.procs in each root
 * before it execs; returns once it has exec'd (the close-on-exec pipe closed
 * with nothing in it). */
static pid_t spawn_into(const char *const roots[], int nroots, const char *path, char *const argv[])
{
	int fds[2], child_err = 0;
	ssize_t n;
	pid_t pid;

	for (int tries = 0;; tries++) {
		int err = 0;

		/* A concurrent run's cleanup may remove an empty parent between two mkdirs.
		 */
		for (int i = 0; i < nroots && !err; i++)
			err = mkdir_p(roots[i], path);
		if (!err)
			break;
		if (err != -ENOENT || tries > 3) {
			errno = -err;
			return -1;
		}
	}
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < nroots; i++) {
			char procs[700];
			int fd;

			snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", roots[i], path);
			fd = open(procs, O_WRONLY | O_CLOEXEC);
			/* "0": the writer itself. */
			if (fd < 0 || write(fd, "0", 1) != 1) {
				child_err = errno;
				(void)!write(fds[1], &child_err, sizeof(child_err));
				_exit(127);
			}
			close(fd);
		}
		execv(argv[0], argv);
		child_err = errno;
		(void)!write(fds[1], &child_err, sizeof(child_err));
		_exit(127);
	}
	close(fds[1]);
	do
		n = read(fds[0], &child_err, sizeof(child_err));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n > 0) {
		waitpid(pid, NULL, 0);
		errno = child_err ? child_err : EIO;
		return -1;
	}
	return pid;
}

/* rmdir path in each root, then its parents up to the root while they are
 * empty. */
static void remove_cgroup(const char *const roots[], int nroots, const char *path)
{
	for (int i = 0; i < nroots; i++) {
		char full[600];

		if (fmt(full, sizeof(full), "%s%s", roots[i], path))
			continue;
		/* The last process leaves its cgroup when reaped; rmdir may still see it
		 * busy for a moment. */
		for (int t = 0; t < 100 && rmdir(full) && errno == EBUSY; t++)
			sleep_ms(10);
		for (char *slash = strrchr(full, '/'); slash && slash > full + strlen(roots[i]);
		     slash = strrchr(full, '/')) {
			*slash = 0;
			if (strlen(full) <= strlen(roots[i]) || rmdir(full))
				break;
		}
	}
}

static struct spawned *slot_of(pid_t pid)
{
	for (size_t i = 0; i < MAX_SPAWNED; i++)
		if (spawned[i].pid == pid && pid > 0)
			return &spawned[i];
	return NULL;
}

pid_t kube_spawn_in_cgroup(enum kube_layout layout, const char *pod_uid, const char *container_id,
			   char *const argv[])
{
	return kube_spawn_below(layout, pod_uid, container_id, NULL, argv);
}

pid_t kube_spawn_below(enum kube_layout layout, const char *pod_uid, const char *container_id,
		       const char *below, char *const argv[])
{
	struct spawned *s = NULL;
	const char *roots[2];
	int nroots = roots_of(layout, roots);

	for (size_t i = 0; !s && i < MAX_SPAWNED; i++)
		if (spawned[i].pid <= 0)
			s = &spawned[i];
	if (!nroots) {
		errno = ENOENT;
		return -1;
	}
	if (!s) {
		errno = EMFILE;
		return -1;
	}
	memset(s, 0, sizeof(*s));
	s->layout = layout;
	if (kube_cgroup_path(layout, pod_uid, container_id, s->path, sizeof(s->path)) ||
	    (below &&
	     fmt(s->path + strlen(s->path), sizeof(s->path) - strlen(s->path), "/%s", below))) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (((int)layout & ~KUBE_V1) == KUBE_CRIO_SYSTEMD) {
		/* conmon, CRI-O's monitor, is started first, in a scope of its own. */
		char *const conmon[] = { "/bin/sleep", "infinity", NULL };
		char *p = strstr(strcpy(s->conmon_path, s->path), "/crio-");

		memmove(p + strlen("/crio-conmon-"), p + strlen("/crio-"),
			strlen(p + strlen("/crio-")) + 1);
		memcpy(p, "/crio-conmon-", strlen("/crio-conmon-"));
		s->conmon = spawn_into(roots, nroots, s->conmon_path, conmon);
		if (s->conmon < 0) {
			int err = errno;

			remove_cgroup(roots, nroots, s->conmon_path);
			errno = err;
			return -1;
		}
	}
	s->pid = spawn_into(roots, nroots, s->path, argv);
	if (s->pid < 0) {
		int err = errno;

		s->pid = 0;
		if (s->conmon > 0) {
			kill(s->conmon, SIGKILL);
			waitpid(s->conmon, NULL, 0);
			remove_cgroup(roots, nroots, s->conmon_path);
		}
		remove_cgroup(roots, nroots, s->path);
		errno = err;
		return -1;
	}
	return s->pid;
}

pid_t kube_conmon_pid(pid_t pid)
{
	struct spawned *s = slot_of(pid);

	return s ? s->conmon : 0;
}

int kube_container_kill(pid_t pid)
{
	struct spawned *s = slot_of(pid);
	const char *roots[2];
	int nroots;

	if (!s)
		return -ESRCH;
	nroots = roots_of(s->layout, roots);
	if (nroots) {
		/* What the container process started is in its cgroup too, and ours as
		 * well. */
		char procs[700], *text, *line, *save = NULL;

		snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", roots[0], s->path);
		text = slurp(procs, NULL);
		for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
		     line = strtok_r(NULL, "\n", &save))
			if (atoi(line) > 0 && atoi(line) != s->pid)
				kill(atoi(line), SIGKILL);
		free(text);
	}
	/* Ours and not reaped yet, so the pids still name them. */
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	remove_cgroup(roots, nroots, s->path);
	if (s->conmon > 0) {
		kill(s->conmon, SIGKILL);
		waitpid(s->conmon, NULL, 0);
		remove_cgroup(roots, nroots, s->conmon_path);
	}
	memset(s, 0, sizeof(*s));
	return 0;
}

/* Post-order: empty cgroups made over a minute ago go. */
static void sweep(const char *dir, time_t before)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char sub[1024];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (fmt(sub, sizeof(sub), "%s/%s", dir, e->d_name))
			continue;
		sweep(sub, before);
	}
	closedir(d);
	if (stat(dir, &st) || st.st_mtime > before)
		return;
	if (rmdir(dir) && errno == EBUSY) {
		char procs[1100];
		char *text;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		text = slurp(procs, NULL);
		if (text && *text)
			fprintf(stderr,
				"cgroup %s left from an earlier run still holds processes, left "
				"alone\n",
				dir);
		free(text);
	}
}

void kube_cgroups_cleanup(void)
{
	static const char *const hier[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup",
					    "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/pids" };
	time_t before = time(NULL) - 60;

	for (size_t i = 0; i < MAX_SPAWNED; i++)
		if (spawned[i].pid > 0)
			kube_container_kill(spawned[i].pid);
	for (size_t i = 0; i < sizeof(hier) / sizeof(hier[0]); i++) {
		char top[128];

		if (!is_fs(hier[i], CGROUP2_SUPER_MAGIC) && !is_fs(hier[i], CGROUP_SUPER_MAGIC))
			continue;
		snprintf(top, sizeof(top), "%s/kubepods.slice", hier[i]);
		sweep(top, before);
		snprintf(top, sizeof(top), "%s/kubepods", hier[i]);
		sweep(top, before);
	}
}
