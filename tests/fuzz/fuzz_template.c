// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: discovery name templates and analyzer filters (common/config/template.c),
 * the input as the template source, compiled as each kind (process finder, analyzer name,
 * analyzer filter, and wrapped as a filter) and rendered with a fixed process, pod and
 * container into a full buffer and a short one, then on a context without pod or container.
 * Templates come from the config file and, through ${NAME:default}, from the environment of
 * whoever starts the agent.
 *
 * Contracts checked: compile fails with EINVAL and a message, or keeps the source exactly;
 * render returns 0 with a NUL-terminated output that fits, or one of the documented errors
 * with a message; tmpl__filter agrees with what tmpl__render gives (a boolean, 0 and the
 * verdict; anything else, -EINVAL) and does not write its verdict on failure.
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

static const struct tmpl_kv labels[] = {
	{ "app", "reviews" },
	{ "version", "v1" },
	{ "service.istio.io/canonical-name", "" },
	{ "a", "b" },
};
static const char *const containers[] = { "reviews", "istio-proxy" };
static const struct tmpl_kv owners[] = {
	{ "ReplicaSet", "reviews-v1-7d4b9c" },
	{ "Deployment", "reviews-v1" },
	{ "Job", "" },
};
static const struct tmpl_pod pod = {
	.name = "reviews-v1-7d4b9c-x2x8q",
	.ns = "bookinfo",
	.node = "node-1",
	.service_name = "reviews",
	.labels = labels,
	.nlabels = 4,
	.containers = containers,
	.ncontainers = 2,
	.owners = owners,
	.nowners = 3,
};
static const struct tmpl_kv env[] = { { "A", "1" }, { "EMPTY", "" }, { "B", "two" } };
static const struct tmpl_container container = {
	.name = "reviews",
	.id = "containerd://4f2a9c",
	.env = env,
	.nenv = 3,
};

static int known_error(int r)
{
	return r == -EINVAL || r == -ENOSPC || r == -ENOENT || r == -ENODEV;
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
	} else if (!known_error(r) || !err[0]) {
		fprintf(stderr, "tmpl__render: unexpected %d '%s'\n", r, err);
		abort();
	}
	free(out);
}

static int parse_bool(const char *s, int *ret)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };

	for (int i = 0; i < 6; i++) {
		if (!strcmp(s, yes[i]))
			return *ret = 1, 0;
		if (!strcmp(s, no[i]))
			return *ret = 0, 0;
	}
	return -1;
}

/* tmpl__filter against tmpl__render of the same template on the same context. */
static void filter(const struct tmpl *t, const struct tmpl_ctx *ctx)
{
	char out[TMPL_MAX_OUTPUT + 1], err[128];
	int r, rr, match = 42, want;

	err[0] = '\0';
	r = tmpl__filter(t, ctx, &match, err, sizeof(err));
	rr = tmpl__render(t, ctx, out, sizeof(out), NULL, 0);
	if (r == 0) {
		if (rr || parse_bool(out, &want) || match != want)
			abort();
		return;
	}
	if (match != 42 || !known_error(r) || !err[0]) {
		fprintf(stderr, "tmpl__filter: unexpected %d '%s'\n", r, err);
		abort();
	}
	if (rr == 0 && (r != -EINVAL || !parse_bool(out, &want)))
		abort(); /* rendered a boolean, yet the filter failed */
	if (rr && rr != r)
		abort();
}

static void use(struct tmpl *t, const char *src)
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
		.pod = &pod,
		.container = &container,
	};

	if (strcmp(tmpl__source(t), src))
		abort();
	render(t, &ctx, TMPL_MAX_OUTPUT + 1);
	render(t, &ctx, 7);
	filter(t, &ctx);
	/* A plain host's process: no pod, no container, no address, no groups. */
	ctx.host_ip = NULL;
	ctx.ngroups = 0;
	ctx.pod = NULL;
	ctx.container = NULL;
	render(t, &ctx, 64);
	filter(t, &ctx);
	tmpl__free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *src = malloc(size + 1), err[160];

	if (!src)
		abort();
	memcpy(src, data, size);
	src[size] = '\0';
	for (int kind = 0; kind <= 3; kind++) {
		struct tmpl *t;

		err[0] = '\0';
		errno = 0;
		t = kind == 3 ? tmpl__compile_filter(src, err, sizeof(err))
			      : tmpl__compile_as(src, (enum tmpl_kind)kind, err, sizeof(err));
		if (!t) {
			if (errno != EINVAL || !err[0]) {
				fprintf(stderr, "compile as %d: unexpected errno %d '%s'\n", kind,
					errno, err);
				abort();
			}
			continue;
		}
		use(t, src);
	}
	free(src);
	return 0;
}
