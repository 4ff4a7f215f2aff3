// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/netreport.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

static int log_count(const char *name, const char *needle)
{
	char log[4096], *text;
	int n = 0;

	snprintf(log, sizeof(log), "%s/%s.log", tmp, name);
	text = slurp(log, NULL);
	for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(text);
	return n;
}

pid_t nr_start(const char *pids, const char *duration, const char *name, int tls)
{
	char out[4096], log[4096];
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--type",
			 "network",
			 "--pid",
			 (char *)pids,
			 "--duration",
			 (char *)duration,
			 "--output",
			 out,
			 NULL };
	pid_t task;

	snprintf(out, sizeof(out), "%s/%s", tmp, name);
	snprintf(log, sizeof(log), "%s/%s.log", tmp, name);
	task = spawn_cmd(argv, log);
	cr_assert_gt(task, 0);
	for (int i = 0; i < 200; i++) {
		if (log_count(name, "running in worker") && log_count(name, "attached with")) {
			for (int k = 0; k < 300 && log_count(name, "probes attached") < tls; k++)
				sleep_ms(50);
			cr_assert_geq(log_count(name, "probes attached"), tls,
				      "TLS probes not attached: %s", slurp(log, NULL));
			return task;
		}
		sleep_ms(50);
	}
	cr_assert_fail("the NETWORK task did not start: %s", slurp(log, NULL));
	return -1;
}

struct json_object *nr_end(pid_t task, const char *name, char **ret_log)
{
	char path[4096];
	struct json_object *j;
	int rc = wait_cmd(task, 60000);

	snprintf(path, sizeof(path), "%s/%s.log", tmp, name);
	*ret_log = slurp(path, NULL);
	cr_assert_eq(rc, 0, "rover profile: %s", *ret_log);
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	j = json_object_from_file(path);
	cr_assert_not_null(j, "%s is not JSON", path);
	return j;
}

int64_t nr_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return -1;
	return json_object_get_int64(v);
}

const char *nr_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return "";
	return json_object_get_string(v);
}

const char *nr_dump(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

struct json_object *nr_obj(struct json_object *r, const char *key)
{
	struct json_object *o;

	cr_assert(json_object_object_get_ex(r, key, &o) && json_object_is_type(o, json_type_object),
		  "the report has no \"%s\" object: %s", key, nr_dump(r));
	return o;
}

struct json_object *nr_array(struct json_object *r, const char *key)
{
	struct json_object *a;

	cr_assert(json_object_object_get_ex(r, key, &a) && json_object_is_type(a, json_type_array),
		  "the report has no \"%s\" array: %s", key, nr_dump(r));
	return a;
}

struct json_object *nr_endpoint(struct json_object *r, int pid, const char *role,
				const char *protocol, const char *method, const char *path)
{
	struct json_object *eps = nr_array(r, "endpoints");

	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *e = json_object_array_get_idx(eps, i);

		if (nr_int(e, "pid") == pid && !strcmp(nr_str(e, "role"), role) &&
		    !strcmp(nr_str(e, "protocol"), protocol) &&
		    !strcmp(nr_str(e, "method"), method) && !strcmp(nr_str(e, "path"), path))
			return e;
	}
	return NULL;
}

static int64_t code_of(struct json_object *o, const char *field, int code)
{
	struct json_object *st;
	char key[16];

	if (!o || !json_object_object_get_ex(o, field, &st))
		return 0;
	snprintf(key, sizeof(key), "%d", code);
	return nr_int(st, key) < 0 ? 0 : nr_int(st, key);
}

int64_t nr_code(struct json_object *e, int code)
{
	return code_of(e, "status", code);
}

void nr_sum(struct json_object *r, int pid, const char *protocol, struct nr_sum *ret)
{
	struct json_object *cs = nr_array(r, "connections");

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i), *ssl;

		if (nr_int(c, "pid") != pid || strcmp(nr_str(c, "protocol"), protocol))
			continue;
		ret->pairs++;
		ret->conns += nr_int(c, "conns");
		ret->requests += nr_int(c, "requests");
		ret->errors += nr_int(c, "errors");
		ret->bytes_sent += nr_int(c, "bytes_sent");
		ret->bytes_received += nr_int(c, "bytes_received");
		if (json_object_object_get_ex(c, "ssl", &ssl) && json_object_get_boolean(ssl))
			ret->ssl_pairs++;
	}
}

int64_t nr_sum_code(struct json_object *r, int pid, const char *protocol, int code)
{
	struct json_object *cs = nr_array(r, "connections");
	int64_t n = 0;

	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);

		if (nr_int(c, "pid") == pid && !strcmp(nr_str(c, "protocol"), protocol))
			n += code_of(c, "codes", code);
	}
	return n;
}

pid_t nr_spawn_when(const char *gofile, const char *out_path, char *const argv[])
{
	static const char script[] = "g=$1 o=$2 i=0\n"
				     "shift 2\n"
				     "while [ ! -e \"$g\" ] && [ $i -lt 400 ]; do\n"
				     "  sleep 0.05; i=$((i + 1))\n"
				     "done\n"
				     "exec \"$@\" >\"$o\" 2>&1\n";
	char *v[64] = { "/bin/sh",    "-c",	      (char *)script,
			"spawn-when", (char *)gofile, (char *)out_path };
	size_t n = 6;
	int fd;

	for (size_t i = 0; argv[i] && n < 63; i++)
		v[n++] = argv[i];
	v[n] = NULL;
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return spawn_cmd(v, NULL);
}

pid_t nr_mariadb_start(int port, const struct tls_cert *cert)
{
	char datadir[4200], portarg[32], sock[4300], glog[4300], elog[4300], pidf[4300];
	char certarg[4200], keyarg[4200], *err = NULL;
	char *inst[] = { "/usr/bin/mariadb-install-db",
			 "--no-defaults",
			 datadir,
			 "--skip-test-db",
			 "--user=root",
			 NULL };
	char *argv[] = { "/usr/sbin/mariadbd",
			 "--no-defaults",
			 "--user=root",
			 datadir,
			 sock,
			 "--bind-address=127.0.0.1",
			 portarg,
			 "--skip-log-bin",
			 "--innodb-buffer-pool-size=32M",
			 "--skip-grant-tables",
			 "--general-log",
			 glog,
			 elog,
			 pidf,
			 certarg,
			 keyarg,
			 NULL };
	pid_t pid;
	int rc;

	snprintf(datadir, sizeof(datadir), "--datadir=%s", tmp_path("db"));
	snprintf(portarg, sizeof(portarg), "--port=%d", port);
	snprintf(sock, sizeof(sock), "--socket=%s", tmp_path("db/sock"));
	snprintf(glog, sizeof(glog), "--general-log-file=%s", tmp_path("db/general.log"));
	snprintf(elog, sizeof(elog), "--log-error=%s", tmp_path("db/error.log"));
	snprintf(pidf, sizeof(pidf), "--pid-file=%s", tmp_path("db/pid"));
	if (cert) {
		snprintf(certarg, sizeof(certarg), "--ssl-cert=%s", cert->cert);
		snprintf(keyarg, sizeof(keyarg), "--ssl-key=%s", cert->key);
	} else {
		argv[14] = NULL;
	}
	rc = run_cmd(inst, &err);
	cr_assert_eq(rc, 0, "mariadb-install-db: %s", err);
	free(err);
	pid = spawn_cmd(argv, tmp_path("db.stderr"));
	cr_assert_gt(pid, 0);
	cr_assert_eq(wait_listen(port, 60000), 0, "mariadbd: %s",
		     slurp(tmp_path("db/error.log"), NULL));
	return pid;
}
