/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for tests of the whole agent (`rover run --config`) against the fake OAP
 * (tests/oap/fake_oap.py, tests/oap/README.md): start and stop it, read what it recorded, run
 * the agent with a config, wait for a process to be reported or a line in the agent's log.
 * Everything lives in the suite's `tmp` (harness.h): tmp/oap.port, tmp/rec.jsonl,
 * tmp/tasks.json, tmp/policies.json, tmp/oap.log, tmp/rover.yaml, tmp/rover.log. Assertions
 * fail the calling test.
 */
#ifndef ROVER_TESTS_OAP_HARNESS_H
#define ROVER_TESTS_OAP_HARNESS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * What a test started, stopped by stop_tracked() in the suite's fini even when an assertion
 * ended the test early: a leftover agent or workload would be found by the next test's
 * discovery. track returns pid.
 */
pid_t track(pid_t pid);
void stop_tracked(void);
/* sig, then SIGKILL after 10 s; reaps it. pid <= 0: nothing. */
void stop(pid_t pid, int sig);

/*
 * The fake OAP on 127.0.0.1, port 0 picks one: records to tmp/rec.jsonl, tasks from
 * tmp/tasks.json, policies from tmp/policies.json; with tls, TLS with tmp/server.pem and
 * tmp/server.key. Returns its pid (tracked) once it listens, its port in *ret_port.
 */
pid_t start_oap_tls(int port, int *ret_port, int tls);
pid_t start_oap(int port, int *ret_port);
/*
 * The fake OAP in its hostile mode (tests/oap/README.md, "Hostile mode") with seed >= 0, on a
 * free port, answering as a real OAP while tmp/oap.control says so: oap_set_sane(1) makes it
 * sane, oap_set_sane(0) hostile (the fake re-reads the file at every call). It starts
 * hostile unless oap_set_sane(1) came first.
 */
pid_t start_oap_hostile(int seed, int *ret_port);
void oap_set_sane(int sane);

/* Every recorded message so far, in order (a line being written is left out). */
struct json_object **records(size_t *ret_n);
void records_free(struct json_object **r, size_t n);
/* A record's "method" ("" when none). */
const char *method_of(struct json_object *r);
/* Follows a path of object keys and array indexes ("processes.0.pid"); NULL when absent. */
struct json_object *at(struct json_object *o, const char *path);
const char *str_at(struct json_object *o, const char *path);
/* The number at path, 0 when absent (the record leaves default values out). */
double num_at(struct json_object *o, const char *path);
size_t count_method(struct json_object **r, size_t n, const char *method);

/*
 * tests/programs/demo_burn copied into tmp as demo_burn_PID, its name put in name, started
 * and tracked: discovery matches it by that name and nothing else, so another demo_burn on
 * the host (a test running alongside) is another entity.
 */
pid_t start_named_workload(char *name, size_t len);
/* A suite's fini: stops what was tracked, then removes tmp. */
void oap_suite_fini(void);

/* `rover run --config tmp/rover.yaml` with cfg as that file, its stderr to tmp/rover.log. */
pid_t start_rover_cfg(const char *cfg);

/* The reportProcesses entry (hostProcess) of pid, waiting up to timeout_ms for it, with the
 * call's metadata under "_metadata". A new reference, or NULL. */
struct json_object *wait_reported(pid_t pid, int timeout_ms);

/* Waits up to timeout_ms for a line of tmp/rover.log containing text; 1 when it came. */
int wait_log(const char *text, int timeout_ms);
/* How many times text is in tmp/rover.log. */
int count_in_log(const char *text);

/* CLOCK_REALTIME in ms, as the fake OAP's time_ms. */
int64_t wall_ms(void);

#endif
