/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration tests of NETWORK tasks: `rover profile --type network` on some pids, and the
 * JSON report it writes (shipper/network/network.c, report_json), read as a user would.
 */
#ifndef ROVER_TESTS_NETREPORT_H
#define ROVER_TESTS_NETREPORT_H

#include <json-c/json.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Starts the task on pids ("1,2") for duration ("6s"), output tmp/name, log tmp/name.log, and
 * returns once the worker runs it and the shipper said `tls` times that TLS probes are
 * attached. The task's pid, or the test fails.
 */
pid_t nr_start(const char *pids, const char *duration, const char *name, int tls);
/* Waits for it to end (status 0); its JSON report, and its log in *ret_log (free both). */
struct json_object *nr_end(pid_t task, const char *name, char **ret_log);

int64_t nr_int(struct json_object *o, const char *key);	    /* -1: absent */
const char *nr_str(struct json_object *o, const char *key); /* "": absent */
const char *nr_dump(struct json_object *o);
/* The report's object `key` (losses), or the test fails. */
struct json_object *nr_obj(struct json_object *r, const char *key);
/* The report's array `key`, or the test fails. */
struct json_object *nr_array(struct json_object *r, const char *key);

/* The endpoint of pid, role ("client", "server"), protocol, method (or op) and path (or target). */
struct json_object *nr_endpoint(struct json_object *r, int pid, const char *role,
				const char *protocol, const char *method, const char *path);
/* How many of the endpoint's exchanges got that status or code (0 for a NULL endpoint). */
int64_t nr_code(struct json_object *e, int code);

/* The sum over the report's connection pairs of pid with that protocol. */
struct nr_sum {
	int64_t pairs, conns, requests, errors, ssl_pairs;
	int64_t bytes_sent, bytes_received;
};
void nr_sum(struct json_object *r, int pid, const char *protocol, struct nr_sum *ret);
/* The sum of code over those pairs' "codes". */
int64_t nr_sum_code(struct json_object *r, int pid, const char *protocol, int code);

/*
 * Runs argv once the file gofile exists (at most 20 s later), output and errors to out_path:
 * a process to trace that does nothing before the task is on it. Its pid (the shell exec's
 * argv, so it is argv[0]'s).
 */
pid_t nr_spawn_when(const char *gofile, const char *out_path, char *const argv[]);

struct tls_cert;
/*
 * MariaDB in tmp/db on 127.0.0.1:port: no grant tables (any user gets in), TLS with cert when
 * it is not NULL, every command the server is given written to tmp/db/general.log. Returns its
 * pid once it listens, or the test fails.
 */
pid_t nr_mariadb_start(int port, const struct tls_cert *cert);

#endif
