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

/* The lines of /proc/PID/maps that contain needle, joined by '\n' (malloc'd; "" when none), or
 * NULL when the file cannot be read. */
char *proc_maps_grep(pid_t pid, const char *needle);

/* A "Key:\tvalue" line of /proc/PID/status, into buf. 0 or -errno. */
int proc_status(pid_t pid, const char *key, char *buf, size_t len);

/* Reads a whole file (NUL-terminated, malloc'd). */
char *slurp(const char *path, size_t *ret_len);

void sleep_ms(unsigned ms);

/*
 * Network peers for the NETWORK tests and bench: nginx, wrk, curl, tests/programs/http_server
 * and http_client, and network namespaces that drop packets. tests/integration/test_fixtures.c
 * shows each at work. Everything binds 127.0.0.1; every wait is bounded.
 */

/* HTTP requests by status, with the bytes each way (headers included) as the program that
 * counted them saw them: "sent" is what it wrote, "received" what it read. */
struct http_totals {
	uint64_t requests;
	uint64_t status[600];
	uint64_t bytes_sent;
	uint64_t bytes_received;
};

/* A TCP port in [lo, hi] that nothing listens on at 127.0.0.1 now (a racy hint: the caller
 * binds it a moment later); -1 if none. Starts from an offset taken from the pid, so that
 * tests running side by side pick different ports. */
int free_port(int lo, int hi);
/* 0 once something listens on TCP port of this network namespace, -ETIMEDOUT after timeout_ms. */
int wait_listen(int port, int timeout_ms);

/* Runs argv, in network namespace netns when it is not NULL, for at most timeout_ms; its
 * stdout and stderr together in *ret_out (malloc'd). argv[0] without a '/' is looked up in
 * PATH, then in /usr/sbin and /sbin. Returns as wait_cmd does. */
int run_capture(const char *netns, char *const argv[], int timeout_ms, char **ret_out);

/* nginx 127.0.0.1:port, master and one worker, config, pid file and logs in h->dir:
 *   location = /ok -> 200 "ok\n", = /missing -> 404, = /fail -> 500, others -> 404;
 * access_log h->dir/access.log with "$status $bytes_sent $request_length". */
struct nginx {
	pid_t master;
	pid_t worker;
	int port;
	char *dir;
};
/* Returns once the worker runs and the port answers; 0 or -errno (nothing left running). */
int nginx_start(int port, struct nginx *ret);
/* The same with `workers` worker processes, each listening on its own socket (reuseport):
 * returns once all of them run. h->worker is one of them. */
int nginx_start_workers(int port, int workers, struct nginx *ret);
/* The master's worker processes now: up to max into ret; how many there are. */
int nginx_workers(const struct nginx *h, pid_t *ret, int max);
/* Stops master and worker by pid (TERM, then KILL after 5 s) and waits; keeps h->dir. */
void nginx_stop(struct nginx *h);
/* nginx_stop if needed, then removes h->dir. Accepts a zeroed struct. */
void nginx_free(struct nginx *h);
/* The access log read back: bytes_sent is $bytes_sent, bytes_received $request_length. Read
 * it after nginx_stop: nginx writes a line after the response is on its way. 0 or -errno. */
int nginx_access_log_counts(const struct nginx *h, struct http_totals *ret);

/* `curl` fetching url n times over one kept-alive connection (n <= 1000); per-status counts
 * and curl's size_request / size_header + size_download. 0 when every transfer got an
 * HTTP response, else -EIO (what did come back is still counted). An https:// url is fetched
 * over HTTP/1.1 without checking the certificate (-k). */
int curl_run(const char *url, int n, struct http_totals *ret);

/* `wrk -t1 -cCONNS -dSECONDSs --latency url` (http:// or https://). */
struct wrk_result {
	uint64_t requests; /* completed, as wrk counts them */
	double rps;
	double p50_ms, p99_ms;
	uint64_t non_2xx_3xx;
	uint64_t socket_errors; /* connect + read + write + timeout */
};
/* 0 or -errno (-EIO: wrk failed or printed no request count). */
int wrk_run(const char *url, int seconds, int conns, struct wrk_result *ret);

/* tests/programs/http_server on 127.0.0.1:port, in netns when not NULL. */
struct http_server {
	pid_t pid;
	int port;
	char out[64]; /* its stdout */
};
/* Returns once it printed "ready"; 0 or -errno. */
int http_server_start(const char *netns, int port, struct http_server *ret);
/* SIGTERM, waits for its totals line (5 s at most, then SIGKILL), removes h->out. ret may be
 * NULL. 0, or -EIO when no totals came (ret then untouched). */
int http_server_stop(struct http_server *h, struct http_totals *ret);

/* tests/programs/http_client HOST PORT PATH N CONNS, to completion (60 s at most). Returns its
 * exit status (0: every request got a response) or -errno; ret filled from its "done" line. */
int http_client_run(const char *netns, const char *host, int port, const char *path, int n,
		    int conns, struct http_totals *ret);
/* The same in the background, with START_DELAY_MS and GAP_MS, stdout to out_path: returns its
 * pid once it printed "ready" (after which it waits start_delay_ms > 0), or -1. */
pid_t http_client_spawn(const char *netns, const char *host, int port, const char *path, int n,
			int conns, int start_delay_ms, int gap_ms, const char *out_path);
/* Waits for a spawned client (timeout_ms, then SIGKILL) and reads its "done" line. Returns
 * as http_client_run. */
int http_client_wait(pid_t pid, const char *out_path, int timeout_ms, struct http_totals *ret);

/* A network namespace /run/netns/name with lo up (one left from an earlier run is replaced).
 * 0 or -errno. */
int netns_create(const char *name);
int netns_delete(const char *name);
/* In netns name: nftables table "rover_drop", input hook, dropping percent% of the TCP packets
 * from source port `port` (network-peers.md 2.4 item 5: the sender then retransmits for
 * real). 0 or -errno. */
int netns_drop_input(const char *name, int port, int percent);
/* The drop rule's packet counter. 0 or -errno. */
int netns_drop_count(const char *name, uint64_t *ret_packets);
/* An nstat counter (TcpRetransSegs, TCPTimeouts ...) of netns (NULL: this one), absolute,
 * without touching nstat's history file. 0 or -errno (-ENOENT: no such counter). */
int nstat_read(const char *netns, const char *counter, uint64_t *ret_value);
/*
 * Waits until no TCP socket of netns may still send (every one listening or in TIME-WAIT: no
 * data, FIN or retransmit left to go), up to timeout_ms: 0, -ETIMEDOUT or -EIO.
 */
int netns_tcp_quiet(const char *netns, int timeout_ms);


/*
 * TLS peers for the NETWORK TLS tests (network-peers.md 1.3-1.5, 2.2), one per TLS library a
 * profile claims: OpenSSL's libssl.so.3 (nginx, curl, wrk, CPython's SSL_*_ex), BoringSSL's
 * libssl.so.0 (bssl-tool), Go's crypto/tls (tests/programs/gotls), node's static OpenSSL
 * (tests/programs/tls_node.js), and GnuTLS (kdig), which none claims. Every server binds
 * 127.0.0.1 (bssl-tool binds *: only loopback is spoken to it) on a port the caller chose with
 * free_port(); every wait is bounded; every process is stopped by pid.
 */

/* A self-signed certificate, CN=localhost, RSA 2048, valid a day. */
struct tls_cert {
	char cert[4096];
	char key[4096];
};
/* `openssl req -x509` into dir/cert.pem and dir/key.pem. 0 or -errno. */
int tls_cert_make(const char *dir, struct tls_cert *ret);

/* nginx as nginx_start sets it up, its one server listening `127.0.0.1:port ssl` with cert
 * (TLS 1.2 and 1.3, HTTP/1.1 only), the same locations and access log. */
int nginx_start_tls(int port, const struct tls_cert *cert, struct nginx *ret);
/* The same serving HTTP/2 only: cleartext with prior knowledge (cert NULL), or over TLS (ALPN h2). */
int nginx_start_h2(int port, const struct tls_cert *cert, struct nginx *ret);

/* ROVER_SRC's path of a source file: tests/programs/tls_node.js ... */
const char *src(const char *name);

/* The test peers that print "totals CODE=N ...": */
enum tls_peer {
	TLS_PEER_GO,	      /* build/tests/programs/gotls */
	TLS_PEER_GO_STRIPPED, /* build/tests/programs/gotls_stripped (-ldflags=-s -w) */
	TLS_PEER_NODE,	      /* node tests/programs/tls_node.js */
	TLS_PEER_PY,	      /* /usr/bin/python3 tests/programs/tls_py.py */
};
const char *tls_peer_name(enum tls_peer kind);

/* A background process whose stdout and stderr go to `out`. */
struct tls_proc {
	pid_t pid;
	int port;
	char out[64];
};

/* `PEER server` on 127.0.0.1:port with cert: routes /ok* -> 200, /missing -> 404, /fail -> 500.
 * Returns once it printed "ready"; 0 or -errno (nothing left running). */
int tls_server_start(enum tls_peer kind, int port, const struct tls_cert *cert,
		     struct tls_proc *ret);
/* SIGTERM, waits (5 s, then SIGKILL) for its "totals" line (the responses it wrote), removes
 * h->out. ret may be NULL. 0, or -EIO when no totals came (ret then untouched). */
int tls_server_stop(struct tls_proc *h, struct http_totals *ret);

/* `PEER client url n [gofile]` in the background, output to out_path: n sequential GETs on one
 * kept-alive TLS connection (one more after each close the server makes), certificate not
 * checked. With gofile it waits, 20 s at most, until that file exists before anything else
 * (tls_py.py imports ssl only then: libssl is mapped after a task that started meanwhile).
 * Returns its pid, or -1. */
pid_t tls_client_spawn(enum tls_peer kind, const char *url, int n, const char *gofile,
		       const char *out_path);
/* Waits for it (timeout_ms, then SIGKILL) and reads its "totals" line into ret (requests: the
 * sum). Returns its exit status (0: every request got a response), -EIO with no totals line,
 * or -errno. */
int tls_client_wait(pid_t pid, const char *out_path, int timeout_ms, struct http_totals *ret);
/* Both, without a go file. */
int tls_client_run(enum tls_peer kind, const char *url, int n, struct http_totals *ret);

/* `bssl-tool server -accept port -www -loop` (BoringSSL): one HTTP/1.0 "200 OK" response per
 * connection to any GET, closed after it (no Content-Length). Returns once it listens. */
int bssl_server_start(int port, const struct tls_cert *cert, struct tls_proc *ret);
/* SIGTERM, waits; *ret_conns (may be NULL): the handshakes it logged ("Connected."). */
int bssl_server_stop(struct tls_proc *h, uint64_t *ret_conns);
/* `bssl-tool client -connect 127.0.0.1:port` writing request (raw HTTP/1.x, the last one
 * with "Connection: close") and reading until the server closes; the status of every
 * "HTTP/1.x CODE" line it printed into ret. Its exit status or -errno. */
int bssl_client_run(int port, const char *request, struct http_totals *ret);
/* The same in three steps, for a client traced from before its first byte: started with the
 * FIFO fifo (made here) as its stdin, so that it connects and waits; fed the request; waited
 * for (its output in out_path). */
pid_t bssl_client_spawn(int port, const char *fifo, const char *out_path);
int bssl_client_feed(const char *fifo, const char *request);
int bssl_client_wait(pid_t pid, const char *out_path, int timeout_ms, struct http_totals *ret);

/* unbound serving DNS over TLS only on 127.0.0.1:port with cert (cert NULL: plain DNS over UDP
 * and TCP); local data: example.test. A 127.0.0.2 (other names under example.test: NXDOMAIN;
 * other types of it: no data). Returns once it listens. */
int unbound_start(int port, const struct tls_cert *cert, struct tls_proc *ret);
void unbound_stop(struct tls_proc *h);
/* `kdig @127.0.0.1 -p port +tls +keepopen` (GnuTLS) asking n times for example.test over one
 * TLS connection, in the background; with gofile, a shell waits (20 s at most) for that file
 * and then execs kdig, so the pid is kdig's. Output to out_path. Its pid or -1. */
pid_t kdig_spawn(int port, int n, const char *gofile, const char *out_path);
/* Waits for it; *ret_answers: the NOERROR answers it printed. Its exit status or -errno. */
int kdig_wait(pid_t pid, const char *out_path, int timeout_ms, int *ret_answers);

#endif
