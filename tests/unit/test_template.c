// SPDX-License-Identifier: Apache-2.0
/*
 * Discovery name templates (common/config/template.h): every field renders what the process
 * context holds, the Go syntax the upstream configs use compiles, anything else is an error
 * naming what and where.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/config/template.h"

static int fake_ip(void *arg, const char *ifname, int family6, char *buf, size_t len)
{
	int *calls = arg;

	(*calls)++;
	if (!strcmp(ifname, "eth0"))
		snprintf(buf, len, "%s", family6 ? "fe80::1" : "10.0.0.7");
	else if (!strcmp(ifname, "lo") && !family6)
		snprintf(buf, len, "127.0.0.1");
	else
		return -ENODEV;
	return 0;
}

static int ip_calls;

static struct tmpl_ctx ctx(void)
{
	struct tmpl_ctx c = {
		.instance_id = "inst-1",
		.host_name = "box",
		.exe_path = "/usr/bin/python3.11",
		.exe_name = "python3.11",
		.cmdline = "python3 -m http.server 8080",
		.pid = 4242,
		.workdir = "/srv",
		.exe_name_in_cmdline = "python3",
		.layer = "OS_LINUX",
		.groups = { "python3 -m http.server 8080", "http.server", "8080" },
		.ngroups = 3,
		.host_ip = fake_ip,
		.host_ip_arg = &ip_calls,
	};
	return c;
}

/* Compiles and renders src; returns the output (static) or fails the test. */
static const char *render(const char *src)
{
	static char out[TMPL_MAX_OUTPUT + 1];
	char err[160] = "";
	struct tmpl *t = tmpl__compile(src, err, sizeof(err));
	struct tmpl_ctx c = ctx();
	int r;

	cr_assert_not_null(t, "compile '%s': %s", src, err);
	cr_assert_str_eq(tmpl__source(t), src);
	r = tmpl__render(t, &c, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(r, 0, "render '%s': %d %s", src, r, err);
	tmpl__free(t);
	return out;
}

static void compile_fails(const char *src, const char *want)
{
	char err[160] = "";
	struct tmpl *t;

	errno = 0;
	t = tmpl__compile(src, err, sizeof(err));
	cr_assert_null(t, "'%s' compiled", src);
	cr_assert_eq(errno, EINVAL, "'%s': errno %d", src, errno);
	cr_assert(strstr(err, want), "'%s': error '%s' does not say '%s'", src, err, want);
}

Test(template, every_field)
{
	cr_assert_str_eq(render("{{.Rover.InstanceID}}"), "inst-1");
	cr_assert_str_eq(render("{{.Rover.HostName}}"), "box");
	cr_assert_str_eq(render("{{.Process.ExeFilePath}}"), "/usr/bin/python3.11");
	cr_assert_str_eq(render("{{.Process.ExeName}}"), "python3.11");
	cr_assert_str_eq(render("{{.Process.CommandLine}}"), "python3 -m http.server 8080");
	cr_assert_str_eq(render("{{.Process.Pid}}"), "4242");
	cr_assert_str_eq(render("{{.Process.WorkDir}}"), "/srv");
	cr_assert_str_eq(render("{{.Process.ExeNameInCommandLine}}"), "python3");
	cr_assert_str_eq(render("{{.Finder.Layer}}"), "OS_LINUX");
	cr_assert_str_eq(render("{{.Finder.RegexMatchGroup 0}}"), "python3 -m http.server 8080");
	cr_assert_str_eq(render("{{.Finder.RegexMatchGroup 1}}"), "http.server");
	cr_assert_str_eq(render("{{ .Finder.RegexMatchGroup 2 }}"), "8080");
}

Test(template, literal_text_and_several_actions)
{
	cr_assert_str_eq(render(""), "");
	cr_assert_str_eq(render("plain"), "plain");
	cr_assert_str_eq(render("svc-{{.Finder.RegexMatchGroup 1}}:{{.Process.Pid}}!"),
			 "svc-http.server:4242!");
	cr_assert_str_eq(render("a } b }} c {"), "a } b }} c {");
}

Test(template, host_ip_through_the_callback)
{
	ip_calls = 0;
	cr_assert_str_eq(render("{{.Rover.HostIPV4 \"eth0\"}}"), "10.0.0.7");
	cr_assert_str_eq(render("{{.Rover.HostIPV6 \"eth0\"}}"), "fe80::1");
	cr_assert_str_eq(render("{{.Rover.HostIPV4 `lo`}}"), "127.0.0.1");
	cr_assert_eq(ip_calls, 3);

	/* An interface without an address, and no callback at all: errors naming it. */
	char out[64], err[160] = "";
	struct tmpl *t = tmpl__compile("{{.Rover.HostIPV4 \"en0\"}}", err, sizeof(err));
	struct tmpl_ctx c = ctx();

	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(tmpl__render(t, &c, out, sizeof(out), err, sizeof(err)), -ENODEV);
	cr_assert(strstr(err, "en0"), "%s", err);
	c.host_ip = NULL;
	err[0] = '\0';
	cr_assert_lt(tmpl__render(t, &c, out, sizeof(out), err, sizeof(err)), 0);
	cr_assert(strstr(err, "en0"), "%s", err);
	tmpl__free(t);
}

Test(template, string_escapes)
{
	/* The ifname reaches the callback unescaped: "eth\x30" is "eth0". */
	cr_assert_str_eq(render("{{.Rover.HostIPV4 \"eth\\x30\"}}"), "10.0.0.7");
	cr_assert_str_eq(render("{{.Rover.HostIPV4 \"\\u0065th0\"}}"), "10.0.0.7");
	cr_assert_str_eq(render("{{.Rover.HostIPV4 \"\\145th0\"}}"), "10.0.0.7");
	/* A "}}" inside a string argument does not close the action. */
	char out[64], err[160] = "";
	struct tmpl *t = tmpl__compile("{{.Rover.HostIPV4 \"a}}b\\\"\"}}", err, sizeof(err));
	struct tmpl_ctx c = ctx();

	cr_assert_not_null(t, "%s", err);
	cr_assert_lt(tmpl__render(t, &c, out, sizeof(out), err, sizeof(err)), 0);
	cr_assert(strstr(err, "'a}}b\"'"), "%s", err);
	tmpl__free(t);

	compile_fails("{{.Rover.HostIPV4 \"a\\qb\"}}", "unknown escape");
	compile_fails("{{.Rover.HostIPV4 \"a\\x00\"}}", "bad escape value");
	compile_fails("{{.Rover.HostIPV4 \"eth0}}", "unclosed action");
}

Test(template, trimming)
{
	cr_assert_str_eq(render("a  {{- .Process.Pid}}  b"), "a4242  b");
	cr_assert_str_eq(render("a  {{.Process.Pid -}}  \n b"), "a  4242b");
	cr_assert_str_eq(render("a \t\n{{- .Process.Pid -}}\n\t b"), "a4242b");
	cr_assert_str_eq(render("x {{- /* a comment */ -}} y"), "xy");
	cr_assert_str_eq(render("x{{/* }} */}}y"), "xy");
	/* Without a space the dash is not a trim mark (Go reads a number), so: an error. */
	compile_fails("a {{-.Process.Pid}}", "unknown");
}

Test(template, compile_errors_name_what_and_where)
{
	compile_fails("{{.Process.Exe}}", "unknown field .Process.Exe at 2");
	compile_fails("xx{{ .Pod.Name }}", "unknown field .Pod.Name at 5");
	compile_fails("{{printf \"%d\" 1}}", "unknown function printf");
	compile_fails("{{.Process.Pid", "unclosed action at 0");
	compile_fails("{{}}", "missing value");
	compile_fails("{{.Process.Pid 3}}", "unexpected argument");
	compile_fails("{{.Rover.HostIPV4}}", "needs a quoted string");
	compile_fails("{{.Rover.HostIPV4 eth0}}", "needs a quoted string");
	compile_fails("{{.Finder.RegexMatchGroup}}", "needs a group number");
	compile_fails("{{.Finder.RegexMatchGroup x}}", "needs a group number");
	compile_fails("{{.Finder.RegexMatchGroup 16}}", "more than 15");
	compile_fails("{{/* open }}", "unclosed");

	char big[TMPL_MAX_SOURCE + 2];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	compile_fails(big, "longer than");
}

Test(template, missing_group_and_long_output)
{
	char out[TMPL_MAX_OUTPUT + 16], err[160] = "";
	struct tmpl *t = tmpl__compile("{{.Finder.RegexMatchGroup 3}}", err, sizeof(err));
	struct tmpl_ctx c = ctx();

	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(tmpl__render(t, &c, out, sizeof(out), err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "group 3"), "%s", err);
	tmpl__free(t);

	/* 8 x 200 bytes rendered: over TMPL_MAX_OUTPUT even though out is big enough. */
	char cmd[201], src[256] = "";

	memset(cmd, 'c', 200);
	cmd[200] = '\0';
	c.cmdline = cmd;
	for (int i = 0; i < 8; i++)
		strcat(src, "{{.Process.CommandLine}}");
	t = tmpl__compile(src, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(tmpl__render(t, &c, out, sizeof(out), err, sizeof(err)), -ENOSPC);
	/* And a small buffer bounds it too. */
	char small[8];

	cr_assert_eq(tmpl__render(t, &c, small, sizeof(small), err, sizeof(err)), -ENOSPC);
	tmpl__free(t);

	/* NULL strings render as "". */
	struct tmpl_ctx empty = { .pid = 1 };

	t = tmpl__compile("[{{.Process.ExeName}}|{{.Rover.HostName}}]", err, sizeof(err));
	cr_assert_eq(tmpl__render(t, &empty, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, "[|]");
	tmpl__free(t);
}
