// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shipper/lines.h"

int read_lines(int fd, size_t max_line, size_t max_bytes, bool partial_last,
	       int (*line)(void *ctx, const char *p, size_t n), void *ctx)
{
	size_t have = 0, total = 0;
	bool skipping = false;
	char *buf, *p, *nl;
	ssize_t n;
	int err = 0;

	buf = malloc(LINES_READ_SIZE);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = read(fd, buf + have, LINES_READ_SIZE - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > max_bytes) {
			err = -EFBIG;
			goto cleanup;
		}
		have += (size_t)n;
		p = buf;
		while ((nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
			if (!skipping && (size_t)(nl - p) < max_line) {
				err = line(ctx, p, (size_t)(nl - p));
				if (err)
					goto cleanup;
			}
			skipping = false;
			p = nl + 1;
		}
		have -= (size_t)(p - buf);
		if (have >= max_line) {
			skipping = true;
			have = 0;
		} else {
			memmove(buf, p, have);
		}
	}
	if (have && !skipping && partial_last)
		err = line(ctx, buf, have);
cleanup:
	free(buf);
	return err < 0 ? err : 0;
}
