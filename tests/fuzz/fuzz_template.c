// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: discovery name templates (common/config/template.c), the input as the
 * template source, compiled and rendered with a fixed process context into a full buffer and
 * into a short one. Templates come from the config file and, through ${NAME:default}, from
 * the environment of whoever starts the agent.
 *
 * Contracts checked: compile fails with EINVAL and a message, or keeps the source exactly;
 * render returns 0 with a NUL-terminated output that fits, or one of the documented errors
 * with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config/template.h"

static int fake_ip(void *arg, const char *ifname, int family6, char *buf, size_t len)
{
	(void)arg;
	if (!*ifname)
		return -EINVAL;
	if (!strcmp(ifname, "none"))
		return -ENODEV;
	/* Echoes the name back, so long or odd names reach the output. */
	snprintf(buf, len, "%s%s", family6 ? "v6-" : "v4-", ifname);
	return 0;
}

static void render(const struct tmpl *t, const struct tmpl_ctx *ctx, size_t outlen)
{
	char *out = malloc(outlen), err[128];
	int r;

	if (!out)
		abort();
	err[0] = '\0';
	r = tmpl__render(t, ctx, out, outlen, err, sizeof(err));
	if (r == 0) {
		if (!memchr(out, '\0', outlen) || strlen(out) > TMPL_MAX_OUTPUT)
			abort();
	} else if ((r != -EINVAL && r != -ENOSPC && r != -ENOENT && r != -ENODEV) || !err[0]) {
		fprintf(stderr, "tmpl__render: unexpected %d '%s'\n", r, err);
		abort();
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tmpl_ctx ctx = {
		.instance_id = "instance-1",
		.host_name = "host",
		.exe_path = "/opt/app/bin/server",
		.exe_name = "server",
		.cmdline = "/opt/app/bin/server --port 8080",
		.pid = 31337,
		.workdir = NULL,
		.exe_name_in_cmdline = "server",
		.layer = "OS_LINUX",
		.groups = { "/opt/app/bin/server --port 8080", "server", NULL, "8080" },
		.ngroups = 4,
		.host_ip = fake_ip,
	};
	char *src = malloc(size + 1), err[160];
	struct tmpl *t;

	if (!src)
		abort();
	memcpy(src, data, size);
	src[size] = '\0';
	err[0] = '\0';
	errno = 0;
	t = tmpl__compile(src, err, sizeof(err));
	if (!t) {
		if (errno != EINVAL || !err[0]) {
			fprintf(stderr, "tmpl__compile: unexpected errno %d '%s'\n", errno, err);
			abort();
		}
		free(src);
		return 0;
	}
	if (strcmp(tmpl__source(t), src))
		abort();
	render(t, &ctx, TMPL_MAX_OUTPUT + 1);
	render(t, &ctx, 7);
	ctx.host_ip = NULL;
	ctx.ngroups = 0;
	render(t, &ctx, 64);
	tmpl__free(t);
	free(src);
	return 0;
}
