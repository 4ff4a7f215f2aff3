// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/passed.h"

static const char *const what[NPASSED] = { "config", "CA certificate", "client certificate",
					   "client key" };

void config__passed_init(struct config_passed *p)
{
	for (int i = 0; i < NPASSED; i++) {
		p->fd[i] = -1;
		p->bytes[i] = NULL;
	}
}

int config__passed_option(struct config_passed *p, int c, const char *arg, char *err, size_t errlen)
{
	int i = c - 0x100, fd;

	if (i < 0 || i >= 2 * NPASSED)
		return 0;
	if (i < NPASSED) {
		char *end;
		long v = strtol(arg, &end, 10);

		if (*end || end == arg || v < 3 || v > 65535) {
			snprintf(err, errlen, "bad descriptor '%s' for the %s", arg, what[i]);
			return -EINVAL;
		}
		fd = (int)v;
	} else {
		i -= NPASSED;
		fd = open(arg, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			int e = errno;

			snprintf(err, errlen, "%s %s: %s", what[i], arg, strerror(e));
			return -e;
		}
	}
	if (p->fd[i] >= 0)
		close(p->fd[i]);
	p->fd[i] = fd;
	return 1;
}

int config__passed_given(const struct config_passed *p)
{
	return p->fd[PASSED_CONFIG] >= 0;
}

int config__passed_load(struct config_passed *p, struct rover_config *ret_cfg, char *err,
			size_t errlen, config_warn_fn warn, void *warn_ctx)
{
	char why[512];
	int e;

	for (int i = 0; i < NPASSED; i++) {
		size_t len;

		if (p->fd[i] < 0)
			continue;
		p->bytes[i] = config__read_fd(p->fd[i], &len);
		e = errno;
		close(p->fd[i]);
		p->fd[i] = -1;
		if (!p->bytes[i]) {
			snprintf(err, errlen, "reading the %s: %s", what[i], strerror(e));
			return -e;
		}
	}
	if (!p->bytes[PASSED_CONFIG]) {
		snprintf(err, errlen, "no config given");
		return -EINVAL;
	}
	e = config__load(p->bytes[PASSED_CONFIG], strlen(p->bytes[PASSED_CONFIG]), ret_cfg, why,
			 sizeof(why), warn, warn_ctx, NULL);
	if (e)
		snprintf(err, errlen, "config: %s", why);
	return e;
}

void config__passed_free(struct config_passed *p)
{
	for (int i = 0; i < NPASSED; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		p->fd[i] = -1;
		if (p->bytes[i] && i == PASSED_KEY)
			explicit_bzero(p->bytes[i], strlen(p->bytes[i]));
		free(p->bytes[i]);
		p->bytes[i] = NULL;
	}
}
