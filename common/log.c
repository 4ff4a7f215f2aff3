// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

static char prefix[64] = "rover";
static enum log_level threshold = LOG_INFO;

void log_init(const char *role)
{
	const char *lvl = getenv("ROVER_LOG_LEVEL");

	snprintf(prefix, sizeof(prefix), "%s[%d]", role, (int)getpid());
	if (lvl && !strcasecmp(lvl, "debug"))
		threshold = LOG_DEBUG;
	else if (lvl && !strcasecmp(lvl, "warn"))
		threshold = LOG_WARN;
	else if (lvl && !strcasecmp(lvl, "error"))
		threshold = LOG_ERROR;
}

void log_set_level(enum log_level level)
{
	threshold = level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	char line[1024];
	va_list ap;
	int n;

	if (level > threshold)
		return;
	n = snprintf(line, sizeof(line), "%s: %s: ", prefix, names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line, so lines of different processes do not interleave. */
	(void)!write(STDERR_FILENO, line, (size_t)n);
}
