// SPDX-License-Identifier: Apache-2.0
/* What a log line may carry (common/log.c): a text from outside makes no line of its own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* The bytes log_warn writes for text, read back from a pipe put in place of stderr. */
static size_t logged(const char *text, char *out, size_t len)
{
	int pfd[2], saved = dup(STDERR_FILENO);
	ssize_t n;

	cr_assert_eq(pipe(pfd), 0);
	cr_assert_geq(saved, 0);
	dup2(pfd[1], STDERR_FILENO);
	log_init("rover-test");
	log_warn("backend unreachable (%s); retrying", text);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(pfd[1]);
	n = read(pfd[0], out, len - 1);
	close(pfd[0]);
	cr_assert_gt(n, 0);
	out[n] = 0;
	return (size_t)n;
}

/* The attack: an OAP's status details forging a line of their own, and repainting the
 * terminal of whoever reads the log (tests/oap/README.md, hostile mode, odd_status). */
Test(log, a_forged_line_in_a_message_stays_in_its_line)
{
	char out[2048];
	size_t n = logged("\nERROR forged log line\r\x1b[31m", out, sizeof(out));

	cr_expect_eq(memchr(out, '\n', n), out + n - 1, "more than one line: %s", out);
	cr_expect_null(strchr(out, '\r'));
	cr_expect_null(strchr(out, '\x1b'));
	cr_expect_not_null(strstr(out, "?ERROR forged log line??[31m); retrying"), "%s", out);
}

Test(log, tabs_and_printable_text_are_kept)
{
	char out[2048];

	logged("a\tb c", out, sizeof(out));
	cr_expect_not_null(strstr(out, "warn: backend unreachable (a\tb c); retrying\n"), "%s",
			   out);
}
