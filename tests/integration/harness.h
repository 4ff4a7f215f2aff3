/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for tests that run the real rover binaries against the real kernel, as root. */
#ifndef ROVER_TESTS_HARNESS_H
#define ROVER_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* build/ path of a binary: rover, rover-worker, tests/programs/demo_burn ... */
const char *bin(const char *name);
/* The user the roles run as: $ROVER_USER (as the launcher takes it), else rover. */
const char *role_user(void);

/* Starts a test program and waits for its "ready" line. Returns its pid. */
pid_t start_program(const char *path, const char *arg);
void stop_program(pid_t pid);

/* Runs argv to completion; returns its exit status (128+sig when killed); its stderr in *ret_err (malloc'd). */
int run_cmd(char *const argv[], char **ret_err);
/* `rover serve --socket-dir sockdir`, stderr to log, once its ctl.sock is there; -1 if not. */
pid_t serve_start(const char *sockdir, const char *log);
/* Starts argv in the background with stderr to a file; returns its pid. */
pid_t spawn_cmd(char *const argv[], const char *stderr_path);
int wait_cmd(pid_t pid, int timeout_ms);

/* A folded profile as read back from disk. */
struct folded {
	size_t n;
	char **stacks;
	uint64_t *counts;
	uint64_t total;
};
int folded_read(const char *path, struct folded *ret);
void folded_free(struct folded *f);
/* Samples whose stack has a frame equal to name. */
uint64_t folded_with_frame(const struct folded *f, const char *name);
/* Samples whose innermost user frame (last frame without the _[k] suffix) equals name. */
uint64_t folded_with_leaf(const struct folded *f, const char *name);

/* A temporary directory for this test (removed by the caller with rm_rf). */
char *make_tmpdir(void);
void rm_rf(const char *path);

/* Suite fixtures: `tmp` is a fresh directory for each test, removed after it. */
extern char *tmp;
void tmp_setup(void);
/* tmp/name, in one of 8 rotating buffers. */
char *tmp_path(const char *name);
/* Writes text to path (created or truncated). 0 or -errno. */
int write_file(const char *path, const char *text);
void tmp_teardown(void);

/* First process whose parent is ppid and whose comm is comm (0: none). */
pid_t find_child(pid_t ppid, const char *comm);
/* Waits up to timeout_ms for such a child. */
pid_t wait_child(pid_t ppid, const char *comm, int timeout_ms);

/* A "Key:\tvalue" line of /proc/PID/status, into buf. 0 or -errno. */
int proc_status(pid_t pid, const char *key, char *buf, size_t len);

/* Reads a whole file (NUL-terminated, malloc'd). */
char *slurp(const char *path, size_t *ret_len);

void sleep_ms(unsigned ms);

#endif
