// SPDX-License-Identifier: Apache-2.0
/*
 * Discovery name templates and analyzer filters (common/config/template.h): every name renders
 * what the process, pod and container hold, the functions behave as Go's text/template ones,
 * the shipped Kubernetes analyzers give upstream's entities, anything else is an error naming
 * what and where.
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
	compile_fails("a {{-.Process.Pid}}", "number");
}

Test(template, compile_errors_name_what_and_where)
{
	compile_fails("{{.Process.Exe}}", "unknown field .Process.Exe at 2");
	compile_fails("xx{{ .Pod.Name }}",
		      "field .Pod.Name at 5 is not available in a process finder template");
	compile_fails("{{printff \"%d\" 1}}", "unknown function printff at 2");
	compile_fails("{{.Process.Pid", "unclosed action at 0");
	compile_fails("{{}}", "missing value");
	compile_fails("{{.Process.Pid 3}}",
		      "wrong number of args for .Process.Pid at 2: want 0 got 1");
	compile_fails("{{.Rover.HostIPV4}}", "wrong number of args for .Rover.HostIPV4");
	compile_fails("{{.Rover.HostIPV4 eth0}}", "unknown function eth0 at 18");
	compile_fails("{{.Rover.HostIPV4 3}}", "expected string, got int");
	compile_fails("{{.Finder.RegexMatchGroup}}", "want 1 got 0");
	compile_fails("{{.Finder.RegexMatchGroup \"1\"}}", "expected int, got string");
	compile_fails("{{.Finder.RegexMatchGroup 16}}", "not in [0, 15]");
	compile_fails("{{.Finder.RegexMatchGroup -1}}", "not in [0, 15]");
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

/* ---- Kubernetes pods and containers ---- */

/* An Istio pod of a Deployment, behind Service "reviews". */
static const struct tmpl_kv istio_labels[] = {
	{ "app", "reviews" },
	{ "version", "v1" },
	{ "service.istio.io/canonical-name", "" }, /* empty: LabelValue passes over it */
	{ "security.istio.io/tlsMode", "istio" },
};
static const char *const istio_containers[] = { "reviews", "istio-proxy" };
static const struct tmpl_kv istio_owners[] = {
	{ "ReplicaSet", "reviews-v1-7d4b9c" },
	{ "Deployment", "reviews-v1" },
};
static const struct tmpl_pod istio_pod = {
	.name = "reviews-v1-7d4b9c-x2x8q",
	.ns = "bookinfo",
	.node = "node-1",
	.service_name = "reviews",
	.labels = istio_labels,
	.nlabels = 4,
	.containers = istio_containers,
	.ncontainers = 2,
	.owners = istio_owners,
	.nowners = 2,
};
static const struct tmpl_kv app_env[] = {
	{ "JAVA_OPTS", "-Xmx1g" },
	{ "EMPTY", "" },
	{ "SERVICE", "reviews" },
};
static const struct tmpl_container app_container = {
	.name = "reviews",
	.id = "containerd://4f2a9c",
	.env = app_env,
	.nenv = 3,
};
static const struct tmpl_kv envoy_env[] = { { "ISTIO_META_WORKLOAD_NAME", "reviews-v1" } };
static const struct tmpl_container envoy_container = {
	.name = "istio-proxy",
	.id = "cri-o://77ab01",
	.env = envoy_env,
	.nenv = 1,
};

/* A plain pod behind Service "web", and the same pod with no Service. */
static const struct tmpl_kv web_labels[] = { { "app.kubernetes.io/name", "web" } };
static const char *const web_containers[] = { "web" };
static const struct tmpl_pod web_pod = {
	.name = "web-5f6d-abc",
	.ns = "default",
	.node = "node-1",
	.service_name = "web",
	.labels = web_labels,
	.nlabels = 1,
	.containers = web_containers,
	.ncontainers = 1,
};
static const struct tmpl_container web_container = { .name = "web", .id = "docker://99" };

static struct tmpl_ctx k8s_ctx(const struct tmpl_pod *pod, const struct tmpl_container *co,
			       const char *exe)
{
	struct tmpl_ctx c = ctx();

	c.exe_name = exe;
	c.pod = pod;
	c.container = co;
	return c;
}

/* Compiles src as kind and renders it on c; the output (static), or the test fails. */
static const char *render_on(enum tmpl_kind kind, const char *src, const struct tmpl_ctx *c)
{
	static char out[TMPL_MAX_OUTPUT + 1];
	char err[200] = "";
	struct tmpl *t = tmpl__compile_as(src, kind, err, sizeof(err));
	int r;

	cr_assert_not_null(t, "compile '%s': %s", src, err);
	r = tmpl__render(t, c, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(r, 0, "render '%s': %d %s", src, r, err);
	tmpl__free(t);
	return out;
}

static const char *entity(const char *src, const struct tmpl_ctx *c)
{
	return render_on(TMPL_K8S_ENTITY, src, c);
}

/* A filter's verdict, or the test fails. */
static int filter(const char *src, const struct tmpl_ctx *c)
{
	char err[200] = "";
	struct tmpl *t = tmpl__compile_filter(src, err, sizeof(err));
	int r, match = -1;

	cr_assert_not_null(t, "compile filter '%s': %s", src, err);
	cr_assert_str_eq(tmpl__source(t), src);
	r = tmpl__filter(t, c, &match, err, sizeof(err));
	cr_assert_eq(r, 0, "filter '%s': %d %s", src, r, err);
	cr_assert(match == 0 || match == 1);
	tmpl__free(t);
	return match;
}

/* Compiles src as kind; rendering it on c fails with want_r and an error saying want. */
static void render_fails(enum tmpl_kind kind, const char *src, const struct tmpl_ctx *c, int want_r,
			 const char *want)
{
	char out[TMPL_MAX_OUTPUT + 1], err[200] = "";
	struct tmpl *t = tmpl__compile_as(src, kind, err, sizeof(err));
	int r;

	cr_assert_not_null(t, "compile '%s': %s", src, err);
	r = tmpl__render(t, c, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(r, want_r, "render '%s': %d (%s), want %d", src, r, err, want_r);
	cr_assert(strstr(err, want), "'%s': error '%s' does not say '%s'", src, err, want);
	tmpl__free(t);
}

/* A filter that compiles and fails when used, with want_r and an error saying want. */
static void filter_fails(const char *src, const struct tmpl_ctx *c, int want_r, const char *want)
{
	char err[200] = "";
	struct tmpl *t = tmpl__compile_filter(src, err, sizeof(err));
	int r, match = 42;

	cr_assert_not_null(t, "compile filter '%s': %s", src, err);
	r = tmpl__filter(t, c, &match, err, sizeof(err));
	cr_assert_eq(r, want_r, "filter '%s': %d (%s), want %d", src, r, err, want_r);
	cr_assert_eq(match, 42, "ret_match written on failure");
	cr_assert(strstr(err, want), "'%s': error '%s' does not say '%s'", src, err, want);
	tmpl__free(t);
}

static void compile_as_fails(enum tmpl_kind kind, const char *src, const char *want)
{
	char err[200] = "";
	struct tmpl *t;

	errno = 0;
	t = kind == TMPL_K8S_FILTER ? tmpl__compile_filter(src, err, sizeof(err))
				    : tmpl__compile_as(src, kind, err, sizeof(err));
	cr_assert_null(t, "'%s' compiled", src);
	cr_assert_eq(errno, EINVAL, "'%s': errno %d", src, errno);
	cr_assert(strstr(err, want), "'%s': error '%s' does not say '%s'", src, err, want);
}

Test(template, pod_and_container_names)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");

	cr_assert_str_eq(entity("{{.Pod.Name}}", &c), "reviews-v1-7d4b9c-x2x8q");
	cr_assert_str_eq(entity("{{.Pod.Namespace}}", &c), "bookinfo");
	cr_assert_str_eq(entity("{{.Pod.Node}}", &c), "node-1");
	cr_assert_str_eq(entity("{{.Pod.ServiceName}}", &c), "reviews");
	cr_assert_str_eq(entity("{{.Container.Name}}", &c), "reviews");
	/* The raw containerID, the runtime prefix kept. */
	cr_assert_str_eq(entity("{{.Container.ID}}", &c), "containerd://4f2a9c");
	/* .Rover and .Process in an entity name too. */
	cr_assert_str_eq(entity("{{.Rover.HostName}}/{{.Process.ExeName}}/{{.Process.Pid}}", &c),
			 "box/java/4242");

	/* NULL strings read as "", a pod without a Service has "". */
	struct tmpl_pod bare = { 0 };
	struct tmpl_container none = { 0 };

	c = k8s_ctx(&bare, &none, "x");
	cr_assert_str_eq(entity("[{{.Pod.Name}}|{{.Pod.ServiceName}}|{{.Container.ID}}]", &c),
			 "[||]");
}

Test(template, label_value)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");
	static const char *keys = "service.istio.io/canonical-name,app.kubernetes.io/name,app";
	char src[256];

	/* The first listed key with a non-empty value: the empty canonical name is passed over,
	 * app.kubernetes.io/name is missing, app is "reviews". */
	snprintf(src, sizeof(src), "{{.Pod.LabelValue \"%s\" \"\"}}", keys);
	cr_assert_str_eq(entity(src, &c), "reviews");
	cr_assert_str_eq(entity("{{.Pod.LabelValue \"version,app\" \"d\"}}", &c), "v1");
	/* None: the default, literal or computed. */
	cr_assert_str_eq(entity("{{.Pod.LabelValue \"nope,also-not\" \"dflt\"}}", &c), "dflt");
	cr_assert_str_eq(entity("{{.Pod.LabelValue \"nope\" .Pod.Name}}", &c),
			 "reviews-v1-7d4b9c-x2x8q");
	cr_assert_str_eq(entity("[{{.Pod.LabelValue \"service.istio.io/canonical-name\" \"\"}}]",
				&c),
			 "[]");
	/* Keys are not trimmed (upstream splits at commas only), nor case-folded. */
	cr_assert_str_eq(entity("{{.Pod.LabelValue \"nope, app\" \"-\"}}", &c), "-");
	cr_assert_str_eq(entity("{{.Pod.LabelValue \"APP\" \"-\"}}", &c), "-");
	/* Both arguments are required, as upstream's method has two. */
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.LabelValue \"app\"}}", "want 2 got 1");
	/* The default may come through a pipeline, as the last argument. */
	cr_assert_str_eq(entity("{{.Pod.Namespace | .Pod.LabelValue \"nope\"}}", &c), "bookinfo");
}

Test(template, owner_name)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");

	cr_assert_str_eq(entity("{{.Pod.OwnerName \"ReplicaSet\"}}", &c), "reviews-v1-7d4b9c");
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"Deployment\"}}", &c), "reviews-v1");
	/* Kinds in the order listed, each matched without regard to case. */
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"deployment,ReplicaSet\"}}", &c), "reviews-v1");
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"StatefulSet,REPLICASET\"}}", &c),
			 "reviews-v1-7d4b9c");
	/* "service", any case, is the pod's Service when it has one. */
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"SERVICE,Deployment\"}}", &c), "reviews");
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"Deployment,Service\"}}", &c), "reviews-v1");

	/* Without a Service, "service" passes on to the next kind; nothing found is an error. */
	struct tmpl_pod no_svc = istio_pod;

	no_svc.service_name = "";
	c.pod = &no_svc;
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"Service,Deployment\"}}", &c), "reviews-v1");
	render_fails(TMPL_K8S_ENTITY, "{{.Pod.OwnerName \"Service,StatefulSet\"}}", &c, -ENOENT,
		     "no owner of kind 'Service,StatefulSet'");
	c.pod = &web_pod; /* no owners at all */
	render_fails(TMPL_K8S_ENTITY, "{{.Pod.OwnerName \"Deployment\"}}", &c, -ENOENT,
		     "default/web-5f6d-abc");
	cr_assert_str_eq(entity("{{.Pod.OwnerName \"service\"}}", &c), "web");
}

Test(template, env_value)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");

	cr_assert_str_eq(entity("{{.Container.EnvValue \"SERVICE\"}}", &c), "reviews");
	/* The first entry in spec order named in the list, not the first name listed. */
	cr_assert_str_eq(entity("{{.Container.EnvValue \"SERVICE,JAVA_OPTS\"}}", &c), "-Xmx1g");
	/* A literal empty value is a value. */
	cr_assert_str_eq(entity("[{{.Container.EnvValue \"EMPTY,SERVICE\"}}]", &c), "[]");
	render_fails(TMPL_K8S_ENTITY, "{{.Container.EnvValue \"HOME,PATH\"}}", &c, -ENOENT,
		     "container reviews has no environment variable of 'HOME,PATH'");
	c.container = &envoy_container;
	cr_assert_str_eq(entity("{{.Container.EnvValue \"ISTIO_META_WORKLOAD_NAME\"}}", &c),
			 "reviews-v1");
	c.container = &web_container; /* no env at all */
	render_fails(TMPL_K8S_ENTITY, "{{.Container.EnvValue \"SERVICE\"}}", &c, -ENOENT,
		     "no environment variable");
}

Test(template, judgments_in_filters)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");
	struct tmpl_ctx w = k8s_ctx(&web_pod, &web_container, "nginx");

	cr_assert_eq(filter(".Pod.HasContainer \"istio-proxy\"", &c), 1);
	cr_assert_eq(filter(".Pod.HasContainer \"reviews\"", &c), 1);
	cr_assert_eq(filter(".Pod.HasContainer \"istio\"", &c), 0);
	cr_assert_eq(filter(".Pod.HasContainer \"istio-proxy\"", &w), 0);

	cr_assert_eq(filter(".Pod.HasServiceName", &c), 1);
	struct tmpl_pod no_svc = web_pod;

	no_svc.service_name = "";
	w.pod = &no_svc;
	cr_assert_eq(filter(".Pod.HasServiceName", &w), 0);
	cr_assert_eq(filter(".Pod.HasOwnerName \"Service\"", &w), 0);
	no_svc.service_name = NULL;
	cr_assert_eq(filter(".Pod.HasServiceName", &w), 0);
	w.pod = &web_pod;
	cr_assert_eq(filter(".Pod.HasOwnerName \"Service\"", &w), 1);
	cr_assert_eq(filter(".Pod.HasOwnerName \"Deployment\"", &w), 0);
	cr_assert_eq(filter(".Pod.HasOwnerName \"statefulset,deployment\"", &c), 1);
	cr_assert_eq(filter(".Pod.HasOwnerName \"Job\"", &c), 0);
	/* An owner with an empty name is not one. */
	static const struct tmpl_kv blank_owner[] = { { "Job", "" } };
	struct tmpl_pod job = web_pod;

	job.owners = blank_owner;
	job.nowners = 1;
	w.pod = &job;
	cr_assert_eq(filter(".Pod.HasOwnerName \"Job\"", &w), 0);
}

Test(template, label_selector)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");

	cr_assert_eq(filter(".Pod.LabelSelector \"app=reviews\"", &c), 1);
	cr_assert_eq(filter(".Pod.LabelSelector \"app=reviews,version=v1\"", &c), 1);
	cr_assert_eq(filter(".Pod.LabelSelector \"app=reviews,version=v2\"", &c), 0);
	cr_assert_eq(filter(".Pod.LabelSelector \"app=ratings\"", &c), 0);
	/* A key the pod lacks never matches, not even with an empty value. */
	cr_assert_eq(filter(".Pod.LabelSelector \"tier=\"", &c), 0);
	cr_assert_eq(filter(".Pod.LabelSelector \"service.istio.io/canonical-name=\"", &c), 1);
	/* Keys and values are trimmed; a prefixed key; the last pair of a key wins. */
	cr_assert_eq(filter(".Pod.LabelSelector \" app = reviews , version=v1\"", &c), 1);
	cr_assert_eq(filter(".Pod.LabelSelector \"security.istio.io/tlsMode=istio\"", &c), 1);
	cr_assert_eq(filter(".Pod.LabelSelector \"app=x,app=reviews\"", &c), 1);
	cr_assert_eq(filter(".Pod.LabelSelector \"app=reviews,app=x\"", &c), 0);
	/* The empty selector selects everything. */
	cr_assert_eq(filter(".Pod.LabelSelector \"\"", &c), 1);
	/* Equality pairs only; bad keys and values are errors, even after a mismatch. */
	filter_fails(".Pod.LabelSelector \"app\"", &c, -EINVAL, "is not key=value");
	filter_fails(".Pod.LabelSelector \"app==reviews\"", &c, -EINVAL, "is not key=value");
	filter_fails(".Pod.LabelSelector \"app!=reviews\"", &c, -EINVAL, "bad key or value");
	filter_fails(".Pod.LabelSelector \"app in (a,b)\"", &c, -EINVAL, "is not key=value");
	filter_fails(".Pod.LabelSelector \"app=x,-bad=1\"", &c, -EINVAL, "bad key or value");
	filter_fails(".Pod.LabelSelector \"app=a b\"", &c, -EINVAL, "bad key or value");
	filter_fails(".Pod.LabelSelector \"Example.COM/app=1\"", &c, -EINVAL, "bad key or value");
	filter_fails(".Pod.LabelSelector \"a/b/c=1\"", &c, -EINVAL, "bad key or value");
	filter_fails(".Pod.LabelSelector \",\"", &c, -EINVAL, "is not key=value");
}

Test(template, comparisons)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");

	cr_assert_eq(filter("eq .Container.Name \"reviews\"", &c), 1);
	cr_assert_eq(filter("eq .Container.Name \"istio-proxy\"", &c), 0);
	/* eq with several: equal to any. */
	cr_assert_eq(filter("eq .Container.Name \"a\" \"b\" \"reviews\"", &c), 1);
	cr_assert_eq(filter("eq .Container.Name \"a\" \"b\"", &c), 0);
	cr_assert_eq(filter("ne .Container.Name \"istio-proxy\"", &c), 1);
	cr_assert_eq(filter("eq .Process.Pid 4242", &c), 1);
	cr_assert_eq(filter("eq true .Pod.HasServiceName", &c), 1);
	/* Strings compare byte-wise, ints as numbers. */
	cr_assert_eq(filter("lt \"abc\" \"abd\"", &c), 1);
	cr_assert_eq(filter("lt \"ab\" \"abc\"", &c), 1);
	cr_assert_eq(filter("lt \"2\" \"10\"", &c), 0);
	cr_assert_eq(filter("lt 2 10", &c), 1);
	cr_assert_eq(filter("le 10 10", &c), 1);
	cr_assert_eq(filter("gt .Process.Pid 4000", &c), 1);
	cr_assert_eq(filter("ge -1 0", &c), 0);
	cr_assert_eq(filter("gt \"b\" \"a\"", &c), 1);
	cr_assert_eq(filter("ge \"a\" \"a\"", &c), 1);
	/* Different types are errors, as Go's; bools have no order. */
	filter_fails("eq .Process.Pid \"4242\"", &c, -EINVAL, "incompatible types");
	filter_fails("lt true false", &c, -EINVAL, "invalid type for comparison");
	filter_fails("ne 1 \"1\"", &c, -EINVAL, "incompatible types");
	/* eq stops at the first match, before a mismatched type. */
	cr_assert_eq(filter("eq 1 1 \"x\"", &c), 1);
	filter_fails("eq 1 2 \"x\"", &c, -EINVAL, "incompatible types");
	compile_as_fails(TMPL_K8S_FILTER, "eq 1",
			 "wrong number of args for eq at 0: want at least 2");
	compile_as_fails(TMPL_K8S_FILTER, "ne 1 2 3", "want 2 got 3");
}

Test(template, logic_and_truth)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");
	struct tmpl_pod no_svc = istio_pod;

	cr_assert_eq(filter("and (.Pod.HasContainer \"istio-proxy\") (ne .Container.Name "
			    "\"istio-proxy\")",
			    &c),
		     1);
	/* The e2e variant upstream tests with. */
	cr_assert_eq(filter("or (.Pod.HasContainer \"service\") (.Pod.HasContainer \"reviews\")",
			    &c),
		     1);
	cr_assert_eq(filter("not .Pod.HasServiceName", &c), 0);
	cr_assert_eq(filter(".Pod.HasServiceName | not", &c), 0);
	/* and/or return the deciding value itself, Go's truth: "" 0 false are false. */
	cr_assert_str_eq(entity("{{or .Pod.ServiceName \"none\"}}", &c), "reviews");
	no_svc.service_name = "";
	c.pod = &no_svc;
	cr_assert_str_eq(entity("{{or .Pod.ServiceName \"none\"}}", &c), "none");
	cr_assert_str_eq(entity("[{{and \"a\" \"\" \"b\"}}]", &c), "[]");
	cr_assert_str_eq(entity("{{and \"a\" 7}}", &c), "7");
	cr_assert_str_eq(entity("{{or 0 \"\" false}}", &c), "false");
	cr_assert_str_eq(entity("{{not 0}} {{not \"\"}} {{not \"x\"}} {{not 3}}", &c),
			 "true true false false");
	/* Arguments after the deciding one are not evaluated: no error from EnvValue. */
	cr_assert_str_eq(entity("{{or \"x\" (.Container.EnvValue \"NOPE\")}}", &c), "x");
	cr_assert_str_eq(entity("{{and 0 (.Container.EnvValue \"NOPE\")}}", &c), "0");
	render_fails(TMPL_K8S_ENTITY, "{{and 1 (.Container.EnvValue \"NOPE\")}}", &c, -ENOENT,
		     "NOPE");
	/* A bool prints as Go prints it. */
	cr_assert_str_eq(render_on(TMPL_K8S_FILTER, "{{.Pod.HasServiceName}}", &c), "false");
	cr_assert_str_eq(entity("{{true}}-{{false}}", &c), "true-false");
}

Test(template, len_print_printf)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");

	cr_assert_str_eq(entity("{{len .Pod.Namespace}}", &c), "8");
	cr_assert_str_eq(entity("{{len \"\"}}", &c), "0");
	cr_assert_eq(filter("gt (len .Pod.Name) 10", &c), 1);
	render_fails(TMPL_K8S_ENTITY, "{{len .Process.Pid}}", &c, -EINVAL, "len of type int");
	compile_as_fails(TMPL_K8S_ENTITY, "{{len 5}}", "expected string, got int");

	/* Sprint: a space only between two operands that are not strings. */
	cr_assert_str_eq(entity("{{print \"a\" 1 2 \"b\" true}}", &c), "a1 2btrue");
	cr_assert_str_eq(entity("{{print .Pod.Namespace \"/\" .Pod.Name}}", &c),
			 "bookinfo/reviews-v1-7d4b9c-x2x8q");
	cr_assert_str_eq(entity("[{{print}}]", &c), "[]");
	cr_assert_str_eq(entity("{{println \"a\" 1}}", &c), "a 1\n");

	cr_assert_str_eq(entity("{{printf \"%s-%d\" .Pod.Namespace .Process.Pid}}", &c),
			 "bookinfo-4242");
	cr_assert_str_eq(entity("{{printf \"%v|%v|%v|%t|100%%\" \"s\" 3 true false}}", &c),
			 "s|3|true|false|100%");
	cr_assert_str_eq(entity("{{printf \"%5s|%-5s|%05d|%3d|%-4v|\" \"ab\" \"cd\" -42 7 true}}",
				&c),
			 "   ab|cd   |-0042|  7|true|");
	/* Width counts characters, not bytes. */
	cr_assert_str_eq(entity("{{printf \"%4s|\" \"\\u00e9\"}}", &c), "   \xc3\xa9|");
	/* Go's marks for a wrong, missing or extra argument. */
	cr_assert_str_eq(entity("{{printf \"%d\" \"x\"}}", &c), "%!d(string=x)");
	cr_assert_str_eq(entity("{{printf \"%s\" 5}}", &c), "%!s(int=5)");
	cr_assert_str_eq(entity("{{printf \"%t\" 1}}", &c), "%!t(int=1)");
	cr_assert_str_eq(entity("{{printf \"%s %s\" \"a\"}}", &c), "a %!s(MISSING)");
	cr_assert_str_eq(entity("{{printf \"a\" 1 \"b\"}}", &c), "a%!(EXTRA int=1, string=b)");
	cr_assert_str_eq(entity("{{printf \"x%\"}}", &c), "x%!(NOVERB)");
	/* Verbs beyond these are refused, at compile time when the format is literal. */
	compile_as_fails(TMPL_K8S_ENTITY, "{{printf \"%x\" 5}}",
			 "verb or flag 'x' is not supported");
	compile_as_fails(TMPL_K8S_ENTITY, "{{printf \"%.2s\" \"abc\"}}", "'.' is not supported");
	compile_as_fails(TMPL_K8S_ENTITY, "{{printf 5}}", "printf format at 9 is not a string");
	render_fails(TMPL_K8S_ENTITY, "{{\"%q\" | printf}}", &c, -EINVAL, "'q' is not supported");
	render_fails(TMPL_K8S_ENTITY, "{{.Process.Pid | printf}}", &c, -EINVAL,
		     "wrong type for argument 1 of printf: expected string, got int");
}

Test(template, equals_or_default_and_pipelines)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");
	struct tmpl_ctx w = k8s_ctx(&web_pod, &web_container, "nginx");

	/* equalsOrDefault EQ IFSAME NEEDS: IFSAME when NEEDS is EQ, else NEEDS. */
	cr_assert_str_eq(entity("{{equalsOrDefault \"default\" \"-\" .Pod.Namespace}}", &w), "-");
	cr_assert_str_eq(entity("{{equalsOrDefault \"default\" \"-\" .Pod.Namespace}}", &c),
			 "bookinfo");
	/* Piped, the value is the last argument, NEEDS. */
	cr_assert_str_eq(entity("{{.Pod.Namespace | equalsOrDefault \"default\" \"\"}}.svc", &w),
			 ".svc");
	render_fails(TMPL_K8S_ENTITY, "{{.Process.Pid | equalsOrDefault \"a\" \"b\"}}", &c, -EINVAL,
		     "expected string, got int");
	compile_as_fails(TMPL_K8S_ENTITY, "{{equalsOrDefault \"a\" \"b\"}}", "want 3 got 2");

	/* Pipelines of several commands, parentheses nested. */
	cr_assert_str_eq(entity("{{.Pod.Name | printf \"%s@\" | printf \"%s%s\" .Pod.Node}}", &c),
			 "node-1reviews-v1-7d4b9c-x2x8q@");
	cr_assert_str_eq(entity("{{printf \"%s:%d\" (or (.Pod.LabelValue \"x\" \"\") .Pod.ServiceName) "
				"(len (print .Pod.Namespace))}}",
				&c),
			 "reviews:8");
	cr_assert_str_eq(entity("{{ ( .Pod.Node ) }}", &c), "node-1");
	cr_assert_eq(filter("(eq .Pod.Namespace \"bookinfo\")", &c), 1);
	/* Nothing can be given to a literal or a parenthesised value. */
	compile_as_fails(TMPL_K8S_ENTITY, "{{\"a\" \"b\"}}", "can't give argument to non-function");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.Name | \"b\"}}", "can't give argument");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.Name | .Pod.Namespace}}",
			 "wrong number of args for .Pod.Namespace at 14: want 0 got 1");
	/* A method that needs arguments cannot be one. */
	compile_as_fails(TMPL_K8S_ENTITY, "{{print .Pod.LabelValue}}",
			 "wrong number of args for .Pod.LabelValue at 8: want 2 got 0");
	compile_as_fails(TMPL_K8S_ENTITY, "{{print not}}", "wrong number of args for not");
}

Test(template, numbers)
{
	struct tmpl_ctx c = ctx();

	cr_assert_str_eq(render_on(TMPL_VM,
				   "{{0x1F}} {{017}} {{0o17}} {{0b101}} {{-5}} {{+5}} {{0}}", &c),
			 "31 15 15 5 -5 5 0");
	cr_assert_str_eq(render_on(TMPL_VM, "{{-9223372036854775808}} {{9223372036854775807}}", &c),
			 "-9223372036854775808 9223372036854775807");
	cr_assert_str_eq(render_on(TMPL_VM, "{{.Finder.RegexMatchGroup 0x1}}", &c), "http.server");
	compile_fails("{{9223372036854775808}}", "out of range");
	compile_fails("{{1.5}}", "floating-point");
	compile_fails("{{1e3}}", "floating-point");
	compile_fails("{{.5}}", "floating-point");
	compile_fails("{{08}}", "bad number syntax at 2");
	compile_fails("{{0x}}", "bad number syntax");
	compile_fails("{{1_000}}", "bad number syntax");
	compile_fails("{{12ab}}", "bad number syntax");
	compile_fails("{{-}}", "bad number syntax");
}

Test(template, names_by_kind)
{
	/* Process finders: no .Pod, no .Container. */
	compile_as_fails(TMPL_VM, "{{.Pod.Namespace}}",
			 "field .Pod.Namespace at 2 is not available in a process finder template");
	compile_as_fails(TMPL_VM, "x{{.Container.Name}}", ".Container.Name at 3 is not available");
	/* Analyzer names: no .Finder, no judgments. */
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Finder.Layer}}",
			 "field .Finder.Layer at 2 is not available in a kubernetes analyzer name");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.HasServiceName}}", ".Pod.HasServiceName at 2");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.HasContainer \"a\"}}", "is not available");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.LabelSelector \"a=b\"}}", "is not available");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.HasOwnerName \"a\"}}", "is not available");
	/* Filters: no .Rover, no .Finder; positions are in the filter as written. */
	compile_as_fails(TMPL_K8S_FILTER, "eq .Rover.HostName \"x\"",
			 "field .Rover.HostName at 3 is not available in a kubernetes analyzer "
			 "filter");
	compile_as_fails(TMPL_K8S_FILTER, ".Finder.RegexMatchGroup 1", "at 0 is not available");
	compile_as_fails(TMPL_K8S_FILTER, "eq .Pod.Nme \"x\"", "unknown field .Pod.Nme at 3");
	compile_as_fails(TMPL_K8S_FILTER, "", "missing value for command at 0");
	compile_as_fails(TMPL_K8S_FILTER, "eq .Pod.Name \"x", "unclosed action at 0");
	compile_as_fails(TMPL_K8S_FILTER, "(eq 1 1", "unclosed left paren at 0");
	/* .Process in all three; .Rover in entity names; functions everywhere. */
	struct tmpl_ctx c = k8s_ctx(&web_pod, &web_container, "nginx");

	cr_assert_eq(filter("eq .Process.ExeName \"nginx\"", &c), 1);
	cr_assert_str_eq(entity("{{.Rover.InstanceID}}", &c), "inst-1");
	cr_assert_str_eq(render_on(TMPL_VM, "{{printf \"%s-%d\" .Process.ExeName .Process.Pid}}",
				   &c),
			 "nginx-4242");
	/* A kubernetes name on a context without a pod or container is a render error. */
	struct tmpl_ctx host = ctx();

	render_fails(TMPL_K8S_ENTITY, "{{.Pod.Name}}", &host, -EINVAL, ".Pod.Name: no pod");
	render_fails(TMPL_K8S_ENTITY, "{{.Container.ID}}", &host, -EINVAL, "no container");
	errno = 0;
	cr_assert_null(tmpl__compile_as("x", (enum tmpl_kind)7, NULL, 0));
	cr_assert_eq(errno, EINVAL);
}

Test(template, unsupported_syntax)
{
	compile_as_fails(TMPL_K8S_ENTITY, "{{if .Pod.Name}}x{{end}}",
			 "'if' actions are not supported");
	compile_as_fails(TMPL_K8S_ENTITY, "{{range .Pod.Name}}{{end}}", "'range'");
	compile_as_fails(TMPL_K8S_ENTITY, "{{$x := .Pod.Name}}", "variables are not supported");
	compile_as_fails(TMPL_K8S_ENTITY, "{{index .Pod.Name 0}}",
			 "function index is not supported");
	compile_as_fails(TMPL_K8S_ENTITY, "{{nil}}", "nil is not supported");
	compile_as_fails(TMPL_K8S_ENTITY, "{{'a'}}", "character constants");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.}}", "the dot alone");
	compile_as_fails(TMPL_K8S_ENTITY, "{{(.Pod.FindContainer \"x\").ID}}",
			 "unknown field .Pod.FindContainer");
	compile_as_fails(TMPL_K8S_ENTITY, "{{(print \"x\").ID}}",
			 "fields of a parenthesised value");
	compile_as_fails(TMPL_K8S_ENTITY, "{{not(true)}}", "('(') after an operand at 5");
	compile_as_fails(TMPL_K8S_ENTITY, "{{print \"a\"\"b\"}}", "after an operand at 11");
	compile_as_fails(TMPL_K8S_ENTITY, "{{print 1)}}", "unexpected ')' at 9");
	compile_as_fails(TMPL_K8S_ENTITY, "{{print |}}", "missing value for command at 9");
	compile_as_fails(TMPL_K8S_ENTITY, "{{print ()}}", "missing value for command");
	compile_as_fails(TMPL_K8S_ENTITY, "{{.Pod.Name.}}", "after an operand");
	compile_as_fails(TMPL_K8S_ENTITY, "{{\x01}}", "unexpected byte 0x01 at 2");
}

Test(template, bounds)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");
	char src[TMPL_MAX_SOURCE + 1] = "{{";

	/* Parentheses: TMPL_MAX_DEPTH deep compile, one more does not. */
	for (int i = 0; i < TMPL_MAX_DEPTH; i++)
		strcat(src, "(");
	strcat(src, "1");
	for (int i = 0; i < TMPL_MAX_DEPTH; i++)
		strcat(src, ")");
	strcat(src, "}}");
	cr_assert_str_eq(entity(src, &c), "1");
	strcpy(src, "{{");
	for (int i = 0; i <= TMPL_MAX_DEPTH; i++)
		strcat(src, "(");
	strcat(src, "}}");
	compile_as_fails(TMPL_K8S_ENTITY, src, "nested deeper than 10 at 12");

	/* Operands and commands. */
	strcpy(src, "{{print");
	for (int i = 1; i < TMPL_MAX_OPERANDS; i++)
		strcat(src, " 1");
	strcat(src, "}}");
	cr_assert_eq(strlen(entity(src, &c)), 2 * (TMPL_MAX_OPERANDS - 1) - 1);
	strcpy(src + strlen(src) - 2, " 1}}");
	compile_as_fails(TMPL_K8S_ENTITY, src, "more than 32 operands");
	strcpy(src, "{{1");
	for (int i = 1; i < TMPL_MAX_COMMANDS; i++)
		strcat(src, " | print");
	strcat(src, "}}");
	cr_assert_str_eq(entity(src, &c), "1");
	strcpy(src + strlen(src) - 2, " | print}}");
	compile_as_fails(TMPL_K8S_ENTITY, src, "more than 32 commands");

	/* Computed strings are bounded as the output is. */
	render_fails(TMPL_K8S_ENTITY, "{{printf \"%1025s\" \"\"}}", &c, -ENOSPC, "printf width");
	render_fails(TMPL_K8S_ENTITY, "{{printf \"%1000s%100s\" \"\" \"\"}}", &c, -ENOSPC,
		     "printf result longer than 1024");
	strcpy(src, "{{print");
	for (int i = 1; i < TMPL_MAX_OPERANDS; i++)
		strcat(src, " (printf \"%40s\" \"\")");
	strcat(src, "}}");
	render_fails(TMPL_K8S_ENTITY, src, &c, -ENOSPC, "print result longer than 1024");
	render_fails(TMPL_K8S_ENTITY, "{{printf \"%1000s\" \"\"}}{{printf \"%100s\" \"\"}}", &c,
		     -ENOSPC, "rendered name longer than 1024");
}

Test(template, filter_results)
{
	struct tmpl_ctx c = k8s_ctx(&istio_pod, &app_container, "java");
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
	char src[64];

	/* Go's strconv.ParseBool of the rendered text, whatever produced it. */
	for (int i = 0; i < 6; i++) {
		snprintf(src, sizeof(src), "\"%s\"", yes[i]);
		cr_assert_eq(filter(src, &c), 1, "%s", src);
		snprintf(src, sizeof(src), "print \"%s\"", no[i]);
		cr_assert_eq(filter(src, &c), 0, "%s", src);
	}
	cr_assert_eq(filter("1", &c), 1);
	cr_assert_eq(filter("len \"\"", &c), 0);
	filter_fails("\"yes\"", &c, -EINVAL, "filter rendered 'yes', not a boolean");
	filter_fails("2", &c, -EINVAL, "rendered '2'");
	filter_fails("\"\"", &c, -EINVAL, "rendered ''");
	filter_fails("\" true\"", &c, -EINVAL, "rendered ' true'");
	filter_fails(".Pod.Name", &c, -EINVAL, "'reviews-v1-7d4b9c-x2x8q', not a boolean");
	filter_fails("\"a\\nb\"", &c, -EINVAL, "'a?b'");
	/* A render error is the filter's error. */
	filter_fails("eq (.Container.EnvValue \"NOPE\") \"x\"", &c, -ENOENT, "NOPE");
	filter_fails(".Pod.HasContainer \"x\"", &(struct tmpl_ctx){ 0 }, -EINVAL, "no pod");
	/* Text around the action is part of what is parsed, as in upstream's "{{" f "}}". */
	filter_fails("true}} {{true", &c, -EINVAL, "rendered 'true true'");
}

/* The three analyzers upstream ships (configs/rover_configs.yaml), as written there. */
static const struct {
	const char *filters[2];
	int nfilters;
	const char *service, *instance, *process;
} shipped[] = {
	{ { ".Pod.HasContainer \"istio-proxy\"", "eq .Container.Name \"istio-proxy\"" },
	  2,
	  "{{.Pod.LabelValue \"service.istio.io/canonical-name,app.kubernetes.io/name,app\" \"\"}}."
	  "{{.Pod.Namespace}}",
	  "{{.Pod.Name}}",
	  "{{.Process.ExeName}}" },
	{ { ".Pod.HasContainer \"istio-proxy\"", "ne .Container.Name \"istio-proxy\"" },
	  2,
	  "{{.Pod.LabelValue \"service.istio.io/canonical-name,app.kubernetes.io/name,app\" \"\"}}."
	  "{{.Pod.Namespace}}",
	  "{{.Pod.Name}}",
	  "{{.Process.ExeName}}" },
	{ { ".Pod.HasServiceName" },
	  1,
	  "{{.Pod.ServiceName}}.{{.Pod.Namespace}}",
	  "{{.Pod.Name}}",
	  "{{.Process.ExeName}}" },
};

/* Which shipped analyzers match (bit i: analyzer i+1) and their entities, "svc|inst|proc;". */
static unsigned run_shipped(const struct tmpl_ctx *c, char *entities, size_t len)
{
	unsigned matched = 0;

	entities[0] = '\0';
	for (int a = 0; a < 3; a++) {
		int all = 1;

		for (int f = 0; f < shipped[a].nfilters && all; f++)
			all = filter(shipped[a].filters[f], c);
		if (!all)
			continue;
		matched |= 1u << a;
		snprintf(entities + strlen(entities), len - strlen(entities), "%s|",
			 entity(shipped[a].service, c));
		snprintf(entities + strlen(entities), len - strlen(entities), "%s|",
			 entity(shipped[a].instance, c));
		snprintf(entities + strlen(entities), len - strlen(entities), "%s;",
			 entity(shipped[a].process, c));
	}
	return matched;
}

Test(template, shipped_analyzers)
{
	char ent[512];
	struct tmpl_ctx c;

	/* Envoy of an Istio pod behind a Service: MESH_DP (#1), and K8S_SERVICE (#3). */
	c = k8s_ctx(&istio_pod, &envoy_container, "envoy");
	cr_assert_eq(run_shipped(&c, ent, sizeof(ent)), 1u | 4u);
	cr_assert_str_eq(ent, "reviews.bookinfo|reviews-v1-7d4b9c-x2x8q|envoy;"
			      "reviews.bookinfo|reviews-v1-7d4b9c-x2x8q|envoy;");
	/* pilot-agent shares the container: the same, its own process name. */
	c.exe_name = "pilot-agent";
	cr_assert_eq(run_shipped(&c, ent, sizeof(ent)), 1u | 4u);
	/* The application container of that pod: MESH (#2) and K8S_SERVICE (#3), two entities. */
	c = k8s_ctx(&istio_pod, &app_container, "java");
	cr_assert_eq(run_shipped(&c, ent, sizeof(ent)), 2u | 4u);
	cr_assert_str_eq(ent, "reviews.bookinfo|reviews-v1-7d4b9c-x2x8q|java;"
			      "reviews.bookinfo|reviews-v1-7d4b9c-x2x8q|java;");
	/* The canonical name, when Istio sets it, comes first. */
	static const struct tmpl_kv canon[] = {
		{ "app", "reviews" }, { "service.istio.io/canonical-name", "reviews-c" }
	};
	struct tmpl_pod p = istio_pod;

	p.labels = canon;
	p.nlabels = 2;
	c.pod = &p;
	cr_assert_eq(run_shipped(&c, ent, sizeof(ent)), 2u | 4u);
	cr_assert_str_eq(ent, "reviews-c.bookinfo|reviews-v1-7d4b9c-x2x8q|java;"
			      "reviews.bookinfo|reviews-v1-7d4b9c-x2x8q|java;");
	/* A plain pod behind a Service: K8S_SERVICE only. */
	c = k8s_ctx(&web_pod, &web_container, "nginx");
	cr_assert_eq(run_shipped(&c, ent, sizeof(ent)), 4u);
	cr_assert_str_eq(ent, "web.default|web-5f6d-abc|nginx;");
	/* Without a Service: none. */
	struct tmpl_pod lone = web_pod;

	lone.service_name = "";
	c.pod = &lone;
	cr_assert_eq(run_shipped(&c, ent, sizeof(ent)), 0u);
	cr_assert_str_eq(ent, "");
}
