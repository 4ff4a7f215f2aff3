// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/output/clientout.c: a client's output sent only as its socket takes it. The peer
 * here never reads: the shipper's loop must never wait on it, whatever the output's size.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "shipper/output/clientout.h"

#define BIG (8u << 20)

static struct client_out out_of(int fd, size_t len, uint64_t now)
{
	struct msg_output_written w = { .task_id = 9 };
	struct client_out o = { .fd = -1 };
	char *buf = malloc(len);

	cr_assert_not_null(buf);
	memset(buf, 'x', len);
	clientout__start(&o, fd, buf, len, now, &w);
	return o;
}

Test(clientout, a_peer_that_never_reads_costs_no_wait)
{
	int sv[2];
	uint64_t t0 = now_mono_ms();
	struct client_out o;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	o = out_of(sv[0], BIG, t0);
	/* As much as the socket holds, then back at once: more is left. */
	cr_assert_eq(clientout__push(&o, t0), 0);
	cr_assert_gt(o.off, 0);
	cr_assert_lt(o.off, BIG);
	cr_assert_eq(clientout__push(&o, t0 + 1), 0,
		     "a second try took more than the socket holds");
	/* Past its deadline it is given up. */
	cr_assert_eq(clientout__push(&o, t0 + CLIENTOUT_DEADLINE_MS), -ETIMEDOUT);
	clientout__end(&o);
	cr_assert_eq(o.fd, -1);
	close(sv[1]);
}

Test(clientout, a_peer_gone_is_an_error_not_a_signal)
{
	int sv[2];
	struct client_out o;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	o = out_of(sv[0], BIG, now_mono_ms());
	close(sv[1]);
	/* SIGPIPE is not ignored in this process: MSG_NOSIGNAL alone keeps it alive. */
	cr_assert_eq(clientout__push(&o, now_mono_ms()), -EPIPE);
	clientout__end(&o);
}

Test(clientout, all_of_it_reaches_a_reader)
{
	int sv[2];
	struct client_out o;
	size_t got = 0;
	char buf[65536];
	int rc;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	o = out_of(sv[0], BIG, now_mono_ms());
	while ((rc = clientout__push(&o, now_mono_ms())) == 0) {
		ssize_t n = read(sv[1], buf, sizeof(buf));

		cr_assert_gt(n, 0);
		got += (size_t)n;
	}
	cr_assert_eq(rc, 1);
	clientout__end(&o);
	for (ssize_t n; (n = read(sv[1], buf, sizeof(buf))) > 0;)
		got += (size_t)n;
	cr_assert_eq(got, BIG);
	close(sv[1]);
}
