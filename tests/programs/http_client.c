// SPDX-License-Identifier: Apache-2.0
/*
 * A deterministic HTTP/1.1 client for the NETWORK tests:
 *   http_client HOST PORT PATH N [CONNS [START_DELAY_MS [GAP_MS [HEADER]]]]
 * sends N keep-alive GET requests over CONNS connections (1 by default), request k on
 * connection k % CONNS, one at a time, on blocking sockets. START_DELAY_MS: it prints "ready" and
 * waits that long first, so that a profiler can attach to it; GAP_MS: pause between requests;
 * HEADER: one more header line ("Name: value") in every request, e.g. a trace context.
 * Then it prints what it did, the ground truth a test compares a profile with:
 *   done N bytes_sent B bytes_received R status:200=x,404=y,...
 * (N: responses received; bytes are what went through the sockets, headers included) and exits
 * 0 only if every request got a response. A connection the server closes is opened again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define LINE_MAX_LEN 8192
#define MAX_HEADERS 100

static uint64_t bytes_sent, bytes_received, by_status[600];

struct conn {
	int fd;
	char buf[16384];
	size_t start, end;
};

static struct addrinfo *target;

static int conn_open(struct conn *c)
{
	struct timeval io_timeout = { .tv_sec = 65 };
	int one = 1;

	c->start = c->end = 0;
	c->fd = socket(target->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A server that stops answering fails the run instead of hanging it (/delay/MS of the
	 * test server stops at 60 s). */
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &io_timeout, sizeof(io_timeout));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &io_timeout, sizeof(io_timeout));
	if (connect(c->fd, target->ai_addr, target->ai_addrlen)) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

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
	bytes_received += (uint64_t)n;
	c->end += (size_t)n;
	return 0;
}

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
		unsigned long long size;

		if (!line)
			return -1;
		size = strtoull(line, &end, 16);
		if (end == line)
			return -1;
		if (size == 0)
			break;
		if (skip(c, size))
			return -1;
		line = read_line(c);
		if (!line || *line)
			return -1;
	}
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
		bytes_sent += (uint64_t)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads one response. Returns its status, -1 on error; *ret_close when the server ends the
 * connection after it. A response with neither length nor chunking ends at EOF.
 */
static int read_response(struct conn *c, int *ret_close)
{
	char *line = read_line(c), *sp;
	unsigned long long length = 0;
	int status, chunked = 0, has_length = 0, close_after = 0, i;

	if (!line || strncmp(line, "HTTP/1.", 7) || !(sp = strchr(line, ' ')))
		return -1;
	status = atoi(sp + 1);
	if (status < 100 || status > 599)
		return -1;
	close_after = !strncmp(line, "HTTP/1.0", 8);
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
			length = strtoull(v, NULL, 10), has_length = 1;
		else if (!strcasecmp(h, "Transfer-Encoding") && strcasestr(v, "chunked"))
			chunked = 1;
		else if (!strcasecmp(h, "Connection") && !strcasecmp(v, "close"))
			close_after = 1;
		else if (!strcasecmp(h, "Connection") && !strcasecmp(v, "keep-alive"))
			close_after = 0;
	}
	if (i == MAX_HEADERS)
		return -1;
	if (status == 204 || status == 304 || status < 200)
		;
	else if (chunked) {
		if (skip_chunked(c))
			return -1;
	} else if (has_length) {
		if (skip(c, length))
			return -1;
	} else {
		while (!fill(c))
			c->start = c->end;
		close_after = 1;
	}
	*ret_close = close_after;
	return status;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	long n, nconns = 1, delay = 0, gap = 0, done = 0;
	struct conn *cs;
	char req[2048];
	int reqlen, err;

	if (argc < 5 || argc > 9) {
		fprintf(stderr,
			"usage: http_client HOST PORT PATH N [CONNS [START_DELAY_MS [GAP_MS "
			"[HEADER]]]]\n");
		return 2;
	}
	n = strtol(argv[4], NULL, 10);
	if (argc > 5)
		nconns = strtol(argv[5], NULL, 10);
	if (argc > 6)
		delay = strtol(argv[6], NULL, 10);
	if (argc > 7)
		gap = strtol(argv[7], NULL, 10);
	if (n < 0 || nconns < 1 || nconns > MAX_CONNS || delay < 0 || gap < 0) {
		fprintf(stderr, "http_client: bad N, CONNS, START_DELAY_MS or GAP_MS\n");
		return 2;
	}
	err = getaddrinfo(argv[1], argv[2], &hints, &target);
	if (err) {
		fprintf(stderr, "http_client: %s:%s: %s\n", argv[1], argv[2], gai_strerror(err));
		return 1;
	}
	if (argc > 8 && (strpbrk(argv[8], "\r\n") || !strchr(argv[8], ':'))) {
		fprintf(stderr, "http_client: HEADER is one \"Name: value\" line\n");
		return 2;
	}
	reqlen = snprintf(req, sizeof(req),
			  "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: rover-http-client\r\n%s%s"
			  "\r\n",
			  argv[3], argv[1], argv[2], argc > 8 ? argv[8] : "",
			  argc > 8 ? "\r\n" : "");
	if (reqlen >= (int)sizeof(req)) {
		fprintf(stderr, "http_client: path or header too long\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	cs = calloc((size_t)nconns, sizeof(*cs));
	if (!cs)
		return 1;
	for (long i = 0; i < nconns; i++)
		cs[i].fd = -1;
	if (delay > 0) {
		printf("ready\n");
		fflush(stdout);
		sleep_ms(delay);
	}

	for (long k = 0; k < n; k++) {
		struct conn *c = &cs[k % nconns];
		int status = -1, close_after = 0;

		if (k > 0 && gap > 0)
			sleep_ms(gap);
		/*
		 * A kept-alive connection the server has closed fails on its first bytes: one
		 * more try on a new connection. A fresh connection gets no second try.
		 */
		for (int attempt = 0; attempt < 2 && status < 0; attempt++) {
			int reused = c->fd >= 0;

			if (!reused && conn_open(c))
				break;
			if (!send_all(c->fd, req, (size_t)reqlen))
				status = read_response(c, &close_after);
			if (status < 0) {
				conn_close(c);
				if (!reused)
					break;
			}
		}
		if (status < 0) {
			fprintf(stderr, "http_client: request %ld got no response\n", k + 1);
			break;
		}
		by_status[status]++;
		done++;
		if (close_after)
			conn_close(c);
	}
	for (long i = 0; i < nconns; i++)
		conn_close(&cs[i]);

	printf("done %ld bytes_sent %llu bytes_received %llu status:", done,
	       (unsigned long long)bytes_sent, (unsigned long long)bytes_received);
	for (int s = 0, first = 1; s < 600; s++) {
		if (!by_status[s])
			continue;
		printf("%s%d=%llu", first ? "" : ",", s, (unsigned long long)by_status[s]);
		first = 0;
	}
	printf("\n");
	free(cs);
	freeaddrinfo(target);
	return done == n ? 0 : 1;
}
