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
	snprintf(prefix, sizeof(prefix), "%s[%d]", role, (int)getpid());
	log_set_level_name(getenv("ROVER_LOG_LEVEL"));
}

void log_set_level_name(const char *name)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "trace", LOG_DEBUG }, { "debug", LOG_DEBUG },	 { "info", LOG_INFO },
		{ "warn", LOG_WARN },	{ "warning", LOG_WARN }, { "error", LOG_ERROR },
		{ "fatal", LOG_ERROR }, { "panic", LOG_ERROR },
	};

	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(name, names[i].name))
			threshold = names[i].level;
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
	/*
	 * One line whatever the message carries: a text from outside (an OAP's status details, a
	 * process's name, a traced string) with a newline, a carriage return or a terminal
	 * escape must not forge a line of its own or repaint the reader's terminal. Tabs stay.
	 */
	for (int i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)line[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			line[i] = '?';
	}
	line[n++] = '\n';
	/* One write per line, so lines of different processes do not interleave. */
	(void)!write(STDERR_FILENO, line, (size_t)n);
}
