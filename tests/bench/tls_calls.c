// SPDX-License-Identifier: Apache-2.0
/*
 * What a NETWORK task's TLS probes cost a call, for scripts/bench_network_tls.sh:
 *   tls_calls MS
 * makes two TCP connections over 127.0.0.1, both ends in this process (one thread): one plain,
 * one with OpenSSL (TLS 1.3, a self-signed P-256 certificate made here, no session tickets),
 * prints "ready", then waits for signals:
 *   SIGUSR1: round trips of 64 bytes on the plain connection for MS milliseconds (write on one
 *            end, read on the other, and back), then "plain calls N ns_per_call W cpu_ns_per_call C"
 *   SIGUSR2: the same with SSL_write and SSL_read on the TLS connection: "tls calls N ..."
 *   SIGTERM: exit.
 * A call is one write or read (4 per round trip); wall and process CPU time per call. The
 * process lives across runs so that a task can be started on its pid and stopped between them:
 * the runs with and without the task use the same connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64
/* Round trips not timed before each run: the first calls of a task bind the connection. */
#define WARMUP 256

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tcp_pair(int fds[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		return -1;
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	fds[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	if (fds[1] < 0)
		return -1;
	setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* A self-signed certificate for the server end: the client does not verify it. */
static int use_new_cert(SSL_CTX *ctx)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	int ok = 0;

	if (!key || !x)
		goto cleanup;
	name = X509_get_subject_name(x);
	ok = X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 86400) && X509_set_pubkey(x, key) &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)"localhost", -1, -1, 0) &&
	     X509_set_issuer_name(x, name) && X509_sign(x, key, EVP_sha256()) &&
	     SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1;
cleanup:
	X509_free(x);
	EVP_PKEY_free(key);
	return ok ? 0 : -1;
}

/* Both ends' handshakes, driven in turn on non-blocking sockets (one thread). */
static int handshake(SSL *c, SSL *s, const int fds[2])
{
	int cdone = 0, sdone = 0;

	for (int i = 0; i < 2; i++)
		fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
	for (int turns = 0; !(cdone && sdone) && turns < 1000; turns++) {
		int rc;

		if (!cdone) {
			rc = SSL_connect(c);
			if (rc == 1)
				cdone = 1;
			else if (SSL_get_error(c, rc) != SSL_ERROR_WANT_READ)
				return -1;
		}
		if (!sdone) {
			rc = SSL_accept(s);
			if (rc == 1)
				sdone = 1;
			else if (SSL_get_error(s, rc) != SSL_ERROR_WANT_READ)
				return -1;
		}
	}
	for (int i = 0; i < 2; i++)
		fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) & ~O_NONBLOCK);
	return cdone && sdone ? 0 : -1;
}

static int plain_msg(int from, int to, char *buf)
{
	size_t got = 0;

	if (write(from, buf, MSG) != MSG)
		return -1;
	while (got < MSG) {
		ssize_t n = read(to, buf + got, MSG - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static int tls_msg(SSL *from, SSL *to, char *buf)
{
	int got = 0;

	if (SSL_write(from, buf, MSG) != MSG)
		return -1;
	while (got < MSG) {
		int n = SSL_read(to, buf + got, MSG - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

struct ends {
	int plain[2];
	SSL *c, *s;
};

static int round_trip(const struct ends *e, int tls, char *buf)
{
	if (tls)
		return tls_msg(e->c, e->s, buf) || tls_msg(e->s, e->c, buf) ? -1 : 0;
	return plain_msg(e->plain[0], e->plain[1], buf) || plain_msg(e->plain[1], e->plain[0], buf)
		       ? -1
		       : 0;
}

static int run(const struct ends *e, int tls, long ms)
{
	char buf[MSG];
	uint64_t start, cpu0, end, deadline, trips = 0;

	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < WARMUP; i++)
		if (round_trip(e, tls, buf))
			return -1;
	cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	start = clock_ns(CLOCK_MONOTONIC);
	deadline = start + (uint64_t)ms * 1000000u;
	do {
		/* The clock is read once per 256 round trips: its cost stays out of the figure. */
		for (int i = 0; i < 256; i++)
			if (round_trip(e, tls, buf))
				return -1;
		trips += 256;
		end = clock_ns(CLOCK_MONOTONIC);
	} while (end < deadline);
	printf("%s calls %llu ns_per_call %.1f cpu_ns_per_call %.1f\n", tls ? "tls" : "plain",
	       (unsigned long long)trips * 4, (double)(end - start) / (trips * 4),
	       (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / (trips * 4));
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct ends e = { 0 };
	SSL_CTX *cctx, *sctx;
	int tfds[2], sig;
	sigset_t set;
	long ms;

	if (argc != 2 || (ms = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: tls_calls MS\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	cctx = SSL_CTX_new(TLS_client_method());
	sctx = SSL_CTX_new(TLS_server_method());
	if (!cctx || !sctx || use_new_cert(sctx) ||
	    !SSL_CTX_set_min_proto_version(cctx, TLS1_3_VERSION)) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	SSL_CTX_set_num_tickets(sctx, 0);
	if (tcp_pair(e.plain) || tcp_pair(tfds)) {
		perror("tls_calls: making the connections");
		return 1;
	}
	e.c = SSL_new(cctx);
	e.s = SSL_new(sctx);
	if (!e.c || !e.s || !SSL_set_fd(e.c, tfds[0]) || !SSL_set_fd(e.s, tfds[1]) ||
	    handshake(e.c, e.s, tfds)) {
		fprintf(stderr, "tls_calls: the handshake failed\n");
		ERR_print_errors_fp(stderr);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!sigwait(&set, &sig) && (sig == SIGUSR1 || sig == SIGUSR2)) {
		if (run(&e, sig == SIGUSR2, ms)) {
			fprintf(stderr, "tls_calls: a round trip failed\n");
			ERR_print_errors_fp(stderr);
			return 1;
		}
	}
	SSL_free(e.c);
	SSL_free(e.s);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
	return 0;
}
