// SPDX-License-Identifier: Apache-2.0
/*
 * A deterministic HTTP/1.1 server for the NETWORK tests: `http_server PORT` on 127.0.0.1, one
 * thread per connection, keep-alive, every response with a Content-Length:
 *   /ok -> 200, /missing -> 404, /fail -> 500, /delay/MS -> 200 after MS ms,
 *   /size/N -> 200 with an N-byte body, anything else -> 404.
 * Pipelined requests are answered in order; request bodies (Content-Length or chunked) are read
 * and thrown away. Prints "ready" once listening. On SIGTERM or SIGINT it prints what it served,
 * the ground truth a test compares a profile with, and exits 0:
 *   totals N bytes_received R bytes_sent S status:200=x,404=y,...
 * Bytes are what went through the sockets, headers included.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 256
#define LINE_MAX_LEN 8192
#define MAX_HEADERS 100
#define MAX_DELAY_MS 60000
#define MAX_BODY (64u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t requests, bytes_received, bytes_sent, by_status[600];
static int conns;

struct conn {
	int fd;
	char buf[16384];
	size_t start, end;
};

static void count_bytes(uint64_t *counter, size_t n)
{
	pthread_mutex_lock(&lock);
	*counter += n;
	pthread_mutex_unlock(&lock);
}

/* More bytes into the buffer; 0, or -1 at EOF or on error. */
static int fill(struct conn *c)
{
	ssize_t n;

	if (c->start > 0) {
		memmove(c->buf, c->buf + c->start, c->end - c->start);
		c->end -= c->start;
		c->start = 0;
	}
	if (c->end == sizeof(c->buf))
		return -1;
	do
		n = recv(c->fd, c->buf + c->end, sizeof(c->buf) - c->end, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	count_bytes(&bytes_received, (size_t)n);
	c->end += (size_t)n;
	return 0;
}

/* The next CRLF-terminated line, NUL-terminated in place (CRLF dropped); NULL at EOF. */
static char *read_line(struct conn *c)
{
	for (;;) {
		char *p = c->buf + c->start;
		char *nl = memmem(p, c->end - c->start, "\r\n", 2);

		if (nl) {
			*nl = '\0';
			c->start = (size_t)(nl + 2 - c->buf);
			return p;
		}
		if (c->end - c->start >= LINE_MAX_LEN || fill(c))
			return NULL;
	}
}

static int skip(struct conn *c, uint64_t n)
{
	while (n > 0) {
		size_t have = c->end - c->start;

		if (have == 0) {
			if (fill(c))
				return -1;
			continue;
		}
		if (have > n)
			have = (size_t)n;
		c->start += have;
		n -= have;
	}
	return 0;
}

static int skip_chunked(struct conn *c)
{
	for (;;) {
		char *line = read_line(c), *end;
		unsigned long size;

		if (!line)
			return -1;
		size = strtoul(line, &end, 16);
		if (end == line || size > MAX_BODY)
			return -1;
		if (size == 0)
			break;
		if (skip(c, size))
			return -1;
		line = read_line(c);
		if (!line || *line)
			return -1;
	}
	/* Trailer fields, then the empty line. */
	for (int i = 0; i < MAX_HEADERS; i++) {
		char *line = read_line(c);

		if (!line)
			return -1;
		if (!*line)
			return 0;
	}
	return -1;
}

static int send_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		count_bytes(&bytes_sent, (size_t)n);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 500:
		return "Internal Server Error";
	default:
		return "Unknown";
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sends the answer to one request; 0, or -1 when the connection is to be closed. */
static int respond(struct conn *c, int status, const char *body, uint64_t size, int head,
		   int close_after)
{
	char hdr[256];
	int n;

	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %llu\r\n%s\r\n",
		     status, reason(status), (unsigned long long)size,
		     close_after ? "Connection: close\r\n" : "");
	if (send_all(c->fd, hdr, (size_t)n))
		return -1;
	if (!head && body) {
		if (send_all(c->fd, body, (size_t)size))
			return -1;
	} else if (!head) {
		char fillbuf[16384];

		memset(fillbuf, 'x', sizeof(fillbuf));
		while (size > 0) {
			size_t k = size > sizeof(fillbuf) ? sizeof(fillbuf) : (size_t)size;

			if (send_all(c->fd, fillbuf, k))
				return -1;
			size -= k;
		}
	}
	pthread_mutex_lock(&lock);
	requests++;
	by_status[status]++;
	pthread_mutex_unlock(&lock);
	return close_after ? -1 : 0;
}

/* One request off the connection and its answer; -1 when the connection is done. */
static int serve_one(struct conn *c)
{
	char *line = read_line(c), *method, *path, *version, *save = NULL;
	char p[1024], m[16];
	unsigned long long content_length = 0;
	int chunked = 0, close_after = 0, head, i;
	const char *body;
	uint64_t size;
	int status;

	if (!line)
		return -1;
	method = strtok_r(line, " ", &save);
	path = strtok_r(NULL, " ", &save);
	version = strtok_r(NULL, " ", &save);
	if (!method || !path || !version || strncmp(version, "HTTP/1.", 7))
		return respond(c, 400, "bad request\n", 12, 0, 1);
	/* The line lives in the buffer that reading the headers moves: keep what is needed. */
	snprintf(p, sizeof(p), "%s", path);
	snprintf(m, sizeof(m), "%s", method);
	close_after = !strcmp(version, "HTTP/1.0");
	for (i = 0; i < MAX_HEADERS; i++) {
		char *h = read_line(c), *v;

		if (!h)
			return -1;
		if (!*h)
			break;
		v = strchr(h, ':');
		if (!v)
			continue;
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcasecmp(h, "Content-Length"))
			content_length = strtoull(v, NULL, 10);
		else if (!strcasecmp(h, "Transfer-Encoding") && strcasestr(v, "chunked"))
			chunked = 1;
		else if (!strcasecmp(h, "Connection") && !strcasecmp(v, "close"))
			close_after = 1;
		else if (!strcasecmp(h, "Connection") && !strcasecmp(v, "keep-alive"))
			close_after = 0;
	}
	if (i == MAX_HEADERS || content_length > MAX_BODY)
		return respond(c, 400, "bad request\n", 12, 0, 1);
	if (chunked ? skip_chunked(c) : skip(c, content_length))
		return -1;

	head = !strcmp(m, "HEAD");
	status = 404;
	body = "not found\n";
	size = 10;
	if (!strcmp(p, "/ok")) {
		status = 200, body = "ok\n", size = 3;
	} else if (!strcmp(p, "/missing")) {
		status = 404, body = "not found\n", size = 10;
	} else if (!strcmp(p, "/fail")) {
		status = 500, body = "fail\n", size = 5;
	} else if (!strncmp(p, "/delay/", 7)) {
		long ms = strtol(p + 7, NULL, 10);

		if (ms > 0)
			sleep_ms(ms > MAX_DELAY_MS ? MAX_DELAY_MS : ms);
		status = 200, body = "ok\n", size = 3;
	} else if (!strncmp(p, "/size/", 6)) {
		unsigned long long n = strtoull(p + 6, NULL, 10);

		status = 200, body = NULL, size = n > MAX_BODY ? MAX_BODY : n;
	}
	return respond(c, status, body, size, head, close_after);
}

static void *serve(void *arg)
{
	struct conn *c = arg;

	while (serve_one(c) == 0)
		;
	close(c->fd);
	free(c);
	pthread_mutex_lock(&lock);
	conns--;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *accept_loop(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1, full;
		struct conn *c;
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			perror("accept");
			exit(1);
		}
		pthread_mutex_lock(&lock);
		full = conns >= MAX_CONNS;
		if (!full)
			conns++;
		pthread_mutex_unlock(&lock);
		c = full ? NULL : calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		if (pthread_create(&t, NULL, serve, c)) {
			close(fd);
			free(c);
			pthread_mutex_lock(&lock);
			conns--;
			pthread_mutex_unlock(&lock);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int lfd, one = 1, sig;
	sigset_t set;
	pthread_t t;
	long port;

	if (argc != 2 || (port = strtol(argv[1], NULL, 10)) <= 0 || port > 65535) {
		fprintf(stderr, "usage: http_server PORT\n");
		return 2;
	}
	/* Only the main thread takes the signals, in sigwait below. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128)) {
		perror("listening on 127.0.0.1");
		return 1;
	}
	if (pthread_create(&t, NULL, accept_loop, &lfd)) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (sigwait(&set, &sig))
		;

	/* Connections still being served may be mid-request: totals are taken as they stand. */
	pthread_mutex_lock(&lock);
	printf("totals %llu bytes_received %llu bytes_sent %llu status:",
	       (unsigned long long)requests, (unsigned long long)bytes_received,
	       (unsigned long long)bytes_sent);
	for (int s = 0, first = 1; s < 600; s++) {
		if (!by_status[s])
			continue;
		printf("%s%d=%llu", first ? "" : ",", s, (unsigned long long)by_status[s]);
		first = 0;
	}
	printf("\n");
	fflush(stdout);
	_exit(0);
}
