// SPDX-License-Identifier: Apache-2.0
/*
 * The config loader (common/config/config.h) against the upstream format: defaults of
 * rover-behaviour.md, ${NAME:default} substitution, both plain-host discovery shapes, the
 * Kubernetes keys and analyzers (continuous-and-kubernetes.md B1, B4), an error naming key and
 * value for each kind of bad value, a warning naming each unknown key, and the shipped
 * configs/rover_configs.yaml loading clean.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/config/config.h"
#include "common/msg.h"

/* A fixed environment, so tests never depend on the runner's. */
static const char *fake_env(const char *name)
{
	static const struct {
		const char *name, *value;
	} env[] = {
		{ "T_ADDR", "oap.example:11800" },
		{ "T_HOST", "oap.example" },
		{ "T_PORT", "12800" },
		{ "T_EMPTY", "" },
		{ "T_TEN", "10ms" },
		{ "T_TRUE", "true" },
		{ "ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_REPORT_INTERVAL", "7s" },
	};
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++)
		if (!strcmp(name, env[i].name))
			return env[i].value;
	return NULL;
}

struct warnings {
	int n;
	char all[2048];
};

static void collect(void *ctx, const char *msg)
{
	struct warnings *w = ctx;

	w->n++;
	strncat(w->all, msg, sizeof(w->all) - strlen(w->all) - 2);
	strcat(w->all, "\n");
}

static struct warnings warns;

static void load_ok(const char *yaml, struct rover_config *cfg)
{
	char err[256] = "";
	int r;

	memset(&warns, 0, sizeof(warns));
	r = config__load(yaml, strlen(yaml), cfg, err, sizeof(err), collect, &warns, fake_env);
	cr_assert_eq(r, 0, "load failed: %d %s\n---\n%s", r, err, yaml);
}

/* Loads yaml expecting -EINVAL with an error that contains every one of want (NULL-ended). */
static void load_fails(const char *yaml, ...)
{
	struct rover_config cfg;
	char err[256] = "";
	va_list ap;
	int r;

	memset(&cfg, 0x5a, sizeof(cfg));
	r = config__load(yaml, strlen(yaml), &cfg, err, sizeof(err), NULL, NULL, fake_env);
	cr_assert_eq(r, -EINVAL, "'%s': %d (%s)", yaml, r, err);
	cr_assert_eq(((unsigned char *)&cfg)[0], 0x5a, "ret_cfg written on failure");
	va_start(ap, yaml);
	for (const char *want; (want = va_arg(ap, const char *));)
		cr_assert(strstr(err, want), "error '%s' does not say '%s'", err, want);
	va_end(ap);
}

/* Upstream's three analyzers (reference B4), as configs/rover_configs.yaml writes them. */
#define ISTIO_SVC                                                                           \
	"{{.Pod.LabelValue \"service.istio.io/canonical-name,app.kubernetes.io/name,app\" " \
	"\"\"}}.{{.Pod.Namespace}}"

static void check_analyzer(const struct config_analyzer *a, const char *layer,
			   const char *const *filters, size_t nfilters, const char *service,
			   const char *label)
{
	cr_assert_eq(a->active, 1);
	cr_assert_str_eq(a->layer, layer);
	cr_assert_eq(a->nfilters, nfilters, "%s: %zu filters", layer, a->nfilters);
	for (size_t i = 0; i < nfilters; i++)
		cr_assert_str_eq(tmpl__source(a->filters[i]), filters[i]);
	cr_assert_str_eq(tmpl__source(a->service_name), service);
	cr_assert_str_eq(tmpl__source(a->instance_name), "{{.Pod.Name}}");
	cr_assert_str_eq(tmpl__source(a->process_name), "{{.Process.ExeName}}");
	cr_assert_eq(a->nlabels, 1);
	cr_assert_str_eq(a->labels[0], label);
}

static void check_shipped_analyzers(const struct rover_config *c)
{
	static const char *const envoy[] = { ".Pod.HasContainer \"istio-proxy\"",
					     "eq .Container.Name \"istio-proxy\"" };
	static const char *const app[] = { ".Pod.HasContainer \"istio-proxy\"",
					   "ne .Container.Name \"istio-proxy\"" };
	static const char *const svc[] = { ".Pod.HasServiceName" };

	cr_assert_eq(c->discovery.nanalyzers, 3);
	check_analyzer(&c->discovery.analyzers[0], "MESH_DP", envoy, 2, ISTIO_SVC, "mesh-envoy");
	check_analyzer(&c->discovery.analyzers[1], "MESH", app, 2, ISTIO_SVC, "mesh-application");
	check_analyzer(&c->discovery.analyzers[2], "K8S_SERVICE", svc, 1,
		       "{{.Pod.ServiceName}}.{{.Pod.Namespace}}", "k8s-service");
}

static void check_defaults(const struct rover_config *c)
{
	cr_assert_str_eq(c->logger_level, "INFO");
	cr_assert_str_eq(c->cluster_name, "");
	cr_assert_str_eq(c->backend.addr, "localhost:11800");
	cr_assert_eq(c->backend.enable_tls, 0);
	cr_assert_str_eq(c->backend.client_pem_path, "");
	cr_assert_str_eq(c->backend.client_key_path, "");
	cr_assert_str_eq(c->backend.ca_pem_path, "");
	cr_assert_eq(c->backend.insecure_skip_verify, 0);
	cr_assert_eq(c->backend.check_period_ms, 5000);
	cr_assert_str_eq(c->backend.authentication, "");
	cr_assert_str_eq(c->backend.spool_dir, "");
	cr_assert_eq(c->backend.spool_memory_bytes, 16 << 20);
	cr_assert_eq(c->backend.spool_disk_bytes, 256 << 20);
	cr_assert_eq(c->backend.call_timeout_ms, 10000);
	cr_assert_eq(c->discovery.heartbeat_period_ms, 20000);
	cr_assert_eq(c->discovery.properties_report_period, 10);
	cr_assert_eq(c->discovery.vm_active, 1);
	cr_assert_eq(c->discovery.scan_period_ms, 3000);
	cr_assert_eq(c->discovery.nfinders, 0);
	cr_assert_eq(c->profiling.active, 1);
	cr_assert_eq(c->profiling.check_interval_ms, 10000);
	cr_assert_eq(c->profiling.flush_interval_ms, 5000);
	cr_assert_eq(c->profiling.max_task_duration_ms, 3600000);
	cr_assert_eq(c->profiling.dump_period_us, 9000);
	cr_assert_eq(c->profiling.network_report_interval_ms, 2000);
	cr_assert_str_eq(c->profiling.network_meter_prefix, "rover_net_p");
	cr_assert_eq(c->profiling.network_attach, ATTACH_AUTO);
	cr_assert_str_eq(c->profiling.continuous_meter_prefix, "rover_con_p");
	cr_assert_eq(c->profiling.continuous_fetch_interval_ms, 1000);
	cr_assert_eq(c->profiling.continuous_check_interval_ms, 5000);
	cr_assert_eq(c->profiling.trigger_execute_duration_ms, 600000);
	cr_assert_eq(c->profiling.trigger_silence_duration_ms, 1200000);
	cr_assert_eq(c->discovery.k8s_active, 0);
	cr_assert_str_eq(c->discovery.k8s_node_name, "");
	cr_assert_eq(c->discovery.k8s_nnamespaces, 0);
	cr_assert_str_eq(c->discovery.k8s_api_server, "");
	cr_assert_str_eq(c->discovery.k8s_token_file,
			 "/var/run/secrets/kubernetes.io/serviceaccount/token");
	cr_assert_str_eq(c->discovery.k8s_ca_file,
			 "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
	check_shipped_analyzers(c);
}

Test(config, defaults_empty_and_comments_only)
{
	struct rover_config c;

	cr_assert_eq(config__defaults(&c), 0);
	check_defaults(&c);
	cr_assert_eq(c.discovery.present, 0);
	config__free(&c);

	load_ok("", &c);
	check_defaults(&c);
	cr_assert_eq(c.discovery.present, 0);
	config__free(&c);

	load_ok("# nothing here\n   # at all\n\n", &c);
	check_defaults(&c);
	cr_assert_eq(warns.n, 0);
	config__free(&c);

	/* Keys present with empty values keep their defaults; the module is there. */
	load_ok("process_discovery:\ncore:\n  backend:\n    addr:\nprofiling:\n  check_interval: ~\n",
		&c);
	check_defaults(&c);
	cr_assert_eq(c.discovery.present, 1);
	config__free(&c);
}

Test(config, values_of_every_type)
{
	struct rover_config c;

	load_ok("logger:\n  level: debug\n"
		"core:\n  cluster_name: prod\n  backend:\n"
		"    addr: oap:11800\n    enable_TLS: true\n    client_pem_path: /c.pem\n"
		"    client_key_path: /c.key\n    ca_pem_path: /ca.pem\n"
		"    insecure_skip_verify: True\n    check_period: 7\n    authentication: \"s3cret\"\n"
		"    spool_dir: /var/spool/rover\n    spool_memory_bytes: 1MiB\n"
		"    spool_disk_bytes: 2048\n    call_timeout: 1m30s\n"
		"process_discovery:\n  heartbeat_period: 1m\n  properties_report_period: 3\n"
		"profiling:\n  active: false\n  check_interval: 2s\n  flush_interval: 250ms\n"
		"  max_task_duration: 15m\n"
		"  task:\n    on_cpu:\n      dump_period: 1ms\n"
		"    network:\n      report_interval: 3s\n      meter_prefix: np\n      hooks: syscalls\n"
		"  continuous:\n    meter_prefix: cp\n    fetch_interval: 2s\n    check_interval: 4s\n"
		"    trigger:\n      execute_duration: 1m\n      silence_duration: 1h\n",
		&c);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	cr_assert_str_eq(c.logger_level, "debug");
	cr_assert_str_eq(c.cluster_name, "prod");
	cr_assert_str_eq(c.backend.addr, "oap:11800");
	cr_assert_eq(c.backend.enable_tls, 1);
	cr_assert_str_eq(c.backend.client_pem_path, "/c.pem");
	cr_assert_str_eq(c.backend.client_key_path, "/c.key");
	cr_assert_str_eq(c.backend.ca_pem_path, "/ca.pem");
	cr_assert_eq(c.backend.insecure_skip_verify, 1);
	cr_assert_eq(c.backend.check_period_ms, 7000);
	cr_assert_str_eq(c.backend.authentication, "s3cret");
	cr_assert_str_eq(c.backend.spool_dir, "/var/spool/rover");
	cr_assert_eq(c.backend.spool_memory_bytes, 1 << 20);
	cr_assert_eq(c.backend.spool_disk_bytes, 2048);
	cr_assert_eq(c.backend.call_timeout_ms, 90000);
	cr_assert_eq(c.discovery.present, 1);
	cr_assert_eq(c.discovery.heartbeat_period_ms, 60000);
	cr_assert_eq(c.discovery.properties_report_period, 3);
	cr_assert_eq(c.profiling.active, 0);
	cr_assert_eq(c.profiling.check_interval_ms, 2000);
	cr_assert_eq(c.profiling.flush_interval_ms, 250);
	cr_assert_eq(c.profiling.max_task_duration_ms, 900000);
	cr_assert_eq(c.profiling.dump_period_us, 1000);
	cr_assert_eq(c.profiling.network_report_interval_ms, 3000);
	cr_assert_str_eq(c.profiling.network_meter_prefix, "np");
	cr_assert_eq(c.profiling.network_attach, ATTACH_SYSCALLS);
	cr_assert_str_eq(c.profiling.continuous_meter_prefix, "cp");
	cr_assert_eq(c.profiling.continuous_fetch_interval_ms, 2000);
	cr_assert_eq(c.profiling.continuous_check_interval_ms, 4000);
	cr_assert_eq(c.profiling.trigger_execute_duration_ms, 60000);
	cr_assert_eq(c.profiling.trigger_silence_duration_ms, 3600000);
	config__free(&c);
}

Test(config, env_substitution)
{
	struct rover_config c;

	/* Set, unset with default, unset without default, set but empty (default wins). */
	load_ok("core:\n  cluster_name: ${T_UNSET}\n  backend:\n    addr: ${T_ADDR:localhost:11800}\n"
		"    authentication: ${T_UNSET:\"\"}\n    ca_pem_path: ${T_EMPTY:/etc/ca.pem}\n"
		"    client_pem_path: ${T_UNSET:\"client.pem\"}\n"
		"profiling:\n  check_interval: ${T_TEN:1s}\n  flush_interval: ${T_UNSET:3s}\n"
		"  active: ${T_TRUE:false}\n",
		&c);
	cr_assert_str_eq(c.cluster_name, "");
	cr_assert_str_eq(c.backend.addr, "oap.example:11800");
	cr_assert_str_eq(c.backend.authentication, "");
	cr_assert_str_eq(c.backend.ca_pem_path, "/etc/ca.pem");
	cr_assert_str_eq(c.backend.client_pem_path, "client.pem");
	cr_assert_eq(c.profiling.check_interval_ms, 10);
	cr_assert_eq(c.profiling.flush_interval_ms, 3000);
	cr_assert_eq(c.profiling.active, 1);
	config__free(&c);

	/* Several in one value, text around them, a default holding a template. */
	load_ok("core:\n  backend:\n    addr: \"${T_HOST:x}:${T_PORT:1}\"\n"
		"    authentication: pre-${T_UNSET:mid}-${T_PORT}-post\n"
		"process_discovery:\n  vm:\n    finders:\n"
		"      - match_cmd_regex: x\n        service_name: s\n"
		"        process_name: ${T_UNSET:{{.Process.ExeName}}-{{.Process.Pid}}}\n",
		&c);
	cr_assert_str_eq(c.backend.addr, "oap.example:12800");
	cr_assert_str_eq(c.backend.authentication, "pre-mid-12800-post");
	cr_assert_eq(c.discovery.nfinders, 1);
	cr_assert_str_eq(tmpl__source(c.discovery.finders[0].process_name),
			 "{{.Process.ExeName}}-{{.Process.Pid}}");
	config__free(&c);

	/* The real environment when no getenv is given. */
	char err[256];

	setenv("ROVER_TEST_CONFIG_ADDR", "from-env:1", 1);
	const char *y = "core:\n  backend:\n    addr: ${ROVER_TEST_CONFIG_ADDR:no}\n";
	cr_assert_eq(config__load(y, strlen(y), &c, err, sizeof(err), NULL, NULL, NULL), 0, "%s",
		     err);
	cr_assert_str_eq(c.backend.addr, "from-env:1");
	config__free(&c);

	load_fails("core:\n  backend:\n    addr: ${T_ADDR:x\n", "core.backend.addr", "${T_ADDR:x",
		   NULL);
	load_fails("core:\n  backend:\n    addr: ${:x}\n", "core.backend.addr", NULL);
	load_fails("profiling:\n  check_interval: ${T_ADDR}\n", "profiling.check_interval",
		   "oap.example:11800", NULL);
}

Test(config, bad_values_name_key_and_value)
{
	load_fails("profiling:\n  check_interval: ten\n",
		   "profiling.check_interval: bad duration 'ten'", NULL);
	load_fails("profiling:\n  task:\n    on_cpu:\n      dump_period: 500us\n",
		   "profiling.task.on_cpu.dump_period", "'500us'", NULL);
	load_fails("profiling:\n  flush_interval: 0s\n", "profiling.flush_interval", "'0s'", NULL);
	/* A worker runs 24 h at most; under a second is no task. */
	load_fails("profiling:\n  max_task_duration: 25h\n", "profiling.max_task_duration", "'25h'",
		   NULL);
	load_fails("profiling:\n  max_task_duration: 500ms\n", "profiling.max_task_duration",
		   "'500ms'", NULL);
	load_fails("profiling:\n  flush_interval: -5s\n", "profiling.flush_interval", "'-5s'",
		   NULL);
	/* A NETWORK task flushes every report interval: what a worker accepts, 100 ms to 10 min. */
	load_fails("profiling:\n  task:\n    network:\n      report_interval: 50ms\n",
		   "profiling.task.network.report_interval", "'50ms'", NULL);
	load_fails("profiling:\n  task:\n    network:\n      report_interval: 11m\n",
		   "profiling.task.network.report_interval", "'11m'", NULL);
	load_fails("profiling:\n  task:\n    network:\n      hooks: kprobe\n",
		   "profiling.task.network.hooks", "'kprobe'", NULL);
	load_fails("core:\n  backend:\n    enable_TLS: yes\n", "core.backend.enable_TLS",
		   "bad boolean", "'yes'", NULL);
	load_fails("process_discovery:\n  properties_report_period: 10x\n",
		   "process_discovery.properties_report_period", "'10x'", NULL);
	load_fails("process_discovery:\n  properties_report_period: 0\n",
		   "process_discovery.properties_report_period", "'0'", NULL);
	load_fails("core:\n  backend:\n    spool_memory_bytes: lots\n",
		   "core.backend.spool_memory_bytes", "'lots'", NULL);
	load_fails("logger:\n  level: loud\n", "logger.level", "'loud'", NULL);
	load_fails("process_discovery:\n  scanner:\n    mode: AGENT_SENSOR\n",
		   "process_discovery.scanner.mode", "not supported", "'AGENT_SENSOR'", NULL);
	load_fails("process_discovery:\n  scanner:\n    mode: MAGIC\n",
		   "process_discovery.scanner.mode", "'MAGIC'", NULL);
	load_fails("process_discovery:\n  vm:\n    finders:\n      - match_cmd_regex: \"a(\"\n"
		   "        service_name: s\n",
		   "process_discovery.vm.finders[0].match_cmd_regex", "bad regex", "'a('", NULL);
	load_fails("process_discovery:\n  scanner:\n    regex:\n      - match_cmd: x\n"
		   "        service_name: \"{{.Nope}}\"\n",
		   "process_discovery.scanner.regex[0].service_name", "bad template", "'{{.Nope}}'",
		   "unknown field .Nope", NULL);
	load_fails("process_discovery:\n  vm:\n    finders:\n      - match_cmd_regex: x\n",
		   "process_discovery.vm.finders[0].service_name: required", NULL);

	/* Shapes: a mapping where a value goes, a value where a mapping goes, twice the same key. */
	load_fails("core:\n  backend:\n    addr:\n      x: 1\n", "core.backend.addr",
		   "expected a value", NULL);
	load_fails("core: 3\n", "core: expected a mapping", NULL);
	load_fails("- a\n- b\n", "config: expected a mapping", NULL);
	load_fails("profiling:\n  active: true\n  ACTIVE: false\n", "profiling.ACTIVE",
		   "defined twice", NULL);
	load_fails("process_discovery:\n  vm:\n    finders: x\n", "process_discovery.vm.finders",
		   "expected a list", NULL);
	load_fails("core:\n  backend:\n    addr: \"a\\0b\"\n", "core.backend.addr", "NUL", NULL);

	/* Syntax, with where it is. */
	load_fails("core:\n  backend: [\n", "line", NULL);
	load_fails("a: 1\n---\nb: 2\n", "more than one YAML document", NULL);
}

Test(config, bounds)
{
	char *big = malloc(CONFIG_MAX_BYTES + 2);
	struct rover_config c;
	char err[256] = "";

	memset(big, '#', CONFIG_MAX_BYTES + 1);
	big[CONFIG_MAX_BYTES + 1] = '\0';
	cr_assert_eq(config__load(big, CONFIG_MAX_BYTES + 1, &c, err, sizeof(err), NULL, NULL,
				  fake_env),
		     -EINVAL);
	cr_assert(strstr(err, "larger than"), "%s", err);

	/* Nesting: 40 levels of flow lists under an unknown key. */
	strcpy(big, "x: ");
	for (int i = 0; i < 40; i++)
		strcat(big, "[");
	for (int i = 0; i < 40; i++)
		strcat(big, "]");
	strcat(big, "\n");
	load_fails(big, "nested deeper", NULL);

	/* Finders: CONFIG_MAX_FINDERS + 1. */
	strcpy(big, "process_discovery:\n  vm:\n    finders:\n");
	for (int i = 0; i <= CONFIG_MAX_FINDERS; i++)
		strcat(big, "      - {match_cmd_regex: x, service_name: s}\n");
	load_fails(big, "process_discovery.vm.finders", "more than", NULL);

	/* A value longer than 4096 bytes after substitution. */
	strcpy(big, "core:\n  cluster_name: ");
	for (int i = 0; i < 300; i++)
		strcat(big, "${T_ADDR}");
	strcat(big, "\n");
	load_fails(big, "core.cluster_name", "too long", NULL);
	free(big);
}

Test(config, unknown_keys_warn_with_their_path)
{
	struct rover_config c;

	load_ok("core:\n  backend:\n    adr: x\n    addr: y\n"
		"bogus_module:\n  a: 1\n"
		"process_discovery:\n  vm:\n    finders:\n"
		"      - match_cmd_regex: x\n        service_name: s\n        colour: blue\n",
		&c);
	cr_assert_eq(warns.n, 3, "%s", warns.all);
	cr_assert(strstr(warns.all, "core.backend.adr\n"), "%s", warns.all);
	cr_assert(strstr(warns.all, "bogus_module\n"), "%s", warns.all);
	cr_assert(strstr(warns.all, "process_discovery.vm.finders[0].colour\n"), "%s", warns.all);
	cr_assert_str_eq(c.backend.addr, "y");
	config__free(&c);

	/* Keys match regardless of case, as upstream's loader lower-cases them. */
	load_ok("core:\n  backend:\n    enable_tls: true\n", &c);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	cr_assert_eq(c.backend.enable_tls, 1);
	config__free(&c);
}

Test(config, kubernetes_keys_are_read_without_warnings)
{
	struct rover_config c;

	load_ok("process_discovery:\n  kubernetes:\n    active: false\n    node_name: n1\n"
		"    namespaces: a,b\n    analyzers:\n"
		"      - active: true\n        filters:\n          - .Pod.HasContainer \"istio-proxy\"\n"
		"          - eq .Container.Name \"istio-proxy\"\n        layer: MESH_DP\n"
		"        service_name: \"{{.Pod.Namespace}}::{{.Pod.ServiceName}}\"\n"
		"        instance_name: \"{{.Pod.Name}}\"\n        process_name: \"{{.Process.ExeName}}\"\n"
		"        labels: mesh-envoy\n",
		&c);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	cr_assert_eq(c.discovery.nfinders, 0);
	cr_assert_eq(c.discovery.k8s_active, 0);
	cr_assert_str_eq(c.discovery.k8s_node_name, "n1");
	cr_assert_eq(c.discovery.k8s_nnamespaces, 2);
	cr_assert_eq(c.discovery.nanalyzers, 1);
	cr_assert_str_eq(c.discovery.analyzers[0].layer, "MESH_DP");
	config__free(&c);
	load_fails("process_discovery:\n  kubernetes:\n    analyzers:\n      - active: maybe\n",
		   "process_discovery.kubernetes.analyzers[0].active", "'maybe'", NULL);
}

static int matches(const struct config_finder *f, const char *subject)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(f->re, NULL);
	int rc = pcre2_match(f->re, (PCRE2_SPTR)subject, strlen(subject), 0, 0, md, NULL);

	pcre2_match_data_free(md);
	return rc > 0;
}

static void render(const struct tmpl *t, char *out)
{
	struct tmpl_ctx ctx = { .exe_name = "nginx", .pid = 7, .host_name = "h", .layer = "L" };
	char err[128];

	cr_assert_eq(tmpl__render(t, &ctx, out, 256, err, sizeof(err)), 0, "%s", err);
}

static void check_finders(const struct rover_config *c)
{
	char out[256];

	cr_assert_eq(c->discovery.nfinders, 2);
	const struct config_finder *a = &c->discovery.finders[0], *b = &c->discovery.finders[1];

	cr_assert_str_eq(a->match_cmd_regex, "^/usr/sbin/nginx");
	cr_assert(matches(a, "/usr/sbin/nginx -g daemon off;"));
	cr_assert(!matches(a, "/bin/sh /usr/sbin/nginx"));
	cr_assert_str_eq(a->layer, "GENERAL");
	render(a->service_name, out);
	cr_assert_str_eq(out, "web");
	render(a->instance_name, out);
	cr_assert_str_eq(out, "h");
	render(a->process_name, out);
	cr_assert_str_eq(out, "nginx-7");
	cr_assert_not_null(a->labels);
	render(a->labels, out);
	cr_assert_str_eq(out, "a,b");

	/* The defaults of a finder. */
	cr_assert_str_eq(b->layer, "OS_LINUX");
	cr_assert_str_eq(tmpl__source(b->instance_name), "{{.Rover.HostIPV4 \"en0\"}}");
	cr_assert_str_eq(tmpl__source(b->process_name), "{{.Process.ExeName}}");
	cr_assert_null(b->labels);
	cr_assert(matches(b, "python3 app.py"));
}

Test(config, both_discovery_shapes_give_the_same_finders)
{
	struct rover_config vm, scanner;

	load_ok("process_discovery:\n  vm:\n    active: false\n    period: 5s\n    finders:\n"
		"      - match_cmd_regex: ^/usr/sbin/nginx\n        layer: GENERAL\n"
		"        service_name: web\n        instance_name: \"{{.Rover.HostName}}\"\n"
		"        process_name: \"{{.Process.ExeName}}-{{.Process.Pid}}\"\n"
		"        labels: a,b\n"
		"      - match_cmd_regex: python\n        service_name: py\n",
		&vm);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	check_finders(&vm);
	cr_assert_eq(vm.discovery.vm_active, 0);
	cr_assert_eq(vm.discovery.scan_period_ms, 5000);

	load_ok("process_discovery:\n  scanner:\n    period: 5s\n    mode: REGEX\n"
		"    agent:\n      process_status_refresh_period: 1m\n    regex:\n"
		"      - match_cmd: ^/usr/sbin/nginx\n        layer: GENERAL\n"
		"        service_name: web\n        instance_name: \"{{.Rover.HostName}}\"\n"
		"        process_name: \"{{.Process.ExeName}}-{{.Process.Pid}}\"\n"
		"        labels: a,b\n"
		"      - match_cmd: python\n        service_name: py\n        labels: ${T_UNSET:}\n",
		&scanner);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	check_finders(&scanner);
	cr_assert_eq(scanner.discovery.scan_period_ms, 5000);
	config__free(&vm);
	config__free(&scanner);
}

Test(config, shipped_file_loads_clean)
{
	const char *src = getenv("ROVER_SRC");
	char path[4096];
	struct rover_config c;
	char err[256] = "";
	size_t len = 0;
	char *text;
	int fd;

	snprintf(path, sizeof(path), "%s/configs/rover_configs.yaml", src ? src : ".");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	text = config__read_fd(fd, &len);
	close(fd);
	cr_assert_not_null(text);
	cr_assert_gt(len, 1000);
	memset(&warns, 0, sizeof(warns));
	cr_assert_eq(config__load(text, len, &c, err, sizeof(err), collect, &warns, fake_env), 0,
		     "%s", err);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	c.profiling.network_report_interval_ms = 2000; /* from fake_env: checked below */
	check_defaults(&c);
	cr_assert_eq(c.discovery.present, 1);
	config__free(&c);
	/* Upstream's environment name for the NETWORK report interval (its "topology"). */
	cr_assert_eq(config__load(text, len, &c, err, sizeof(err), collect, &warns, fake_env), 0);
	cr_assert_eq(c.profiling.network_report_interval_ms, 7000);
	config__free(&c);

	/* The commented example finder, uncommented, loads too. */
	char *ex = malloc(len * 2 + 1), *o = ex;
	int in_example = 0;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strstr(line, "# - match_cmd_regex"))
			in_example = 1;
		else if (in_example && !strstr(line, "      #   "))
			in_example = 0;
		if (in_example) {
			char *hash = strchr(line, '#');
			*hash = ' ';
		}
		o += sprintf(o, "%s\n", line);
	}
	cr_assert_eq(config__load(ex, strlen(ex), &c, err, sizeof(err), collect, &warns, fake_env),
		     0, "%s\n%s", err, ex);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	cr_assert_eq(c.discovery.nfinders, 1);
	cr_assert(matches(&c.discovery.finders[0], "java -Xmx1g -jar orders.jar"));
	config__free(&c);
	free(ex);
	free(text);
}

Test(config, read_fd_bounds)
{
	char tmpl[] = "/tmp/rover-config-XXXXXX";
	int fd = mkstemp(tmpl);
	size_t len = 0;
	char *text;

	cr_assert_geq(fd, 0);
	unlink(tmpl);
	cr_assert_eq(write(fd, "a: 1\n", 5), 5);
	lseek(fd, 0, SEEK_SET);
	text = config__read_fd(fd, &len);
	cr_assert_not_null(text);
	cr_assert_eq(len, 5);
	cr_assert_str_eq(text, "a: 1\n");
	free(text);
	cr_assert_eq(ftruncate(fd, CONFIG_MAX_BYTES + 1), 0);
	lseek(fd, 0, SEEK_SET);
	errno = 0;
	cr_assert_null(config__read_fd(fd, &len));
	cr_assert_eq(errno, EFBIG);
	close(fd);
}

/* An analyzer as the supervisor uses it: its filters on a pod's container, then its names. */
static int apply(const struct config_analyzer *a, const struct tmpl_ctx *ctx, char *names,
		 size_t len)
{
	char out[3][TMPL_MAX_OUTPUT + 1], err[200];

	for (size_t i = 0; i < a->nfilters; i++) {
		int match = -1;

		cr_assert_eq(tmpl__filter(a->filters[i], ctx, &match, err, sizeof(err)), 0, "%s",
			     err);
		if (!match)
			return 0;
	}
	cr_assert_eq(tmpl__render(a->service_name, ctx, out[0], sizeof(out[0]), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(tmpl__render(a->instance_name, ctx, out[1], sizeof(out[1]), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(tmpl__render(a->process_name, ctx, out[2], sizeof(out[2]), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_lt((size_t)snprintf(names, len, "%s %s|%s|%s", a->layer, out[0], out[1], out[2]),
		     len);
	return 1;
}

Test(config, kubernetes_keys)
{
	struct rover_config c;

	load_ok("process_discovery:\n  kubernetes:\n    active: true\n    node_name: node-7\n"
		"    namespaces: \" prod, staging ,,  dev,\"\n"
		"    api_server: http://127.0.0.1:8001\n    token_file: /tmp/token\n"
		"    analyzers:\n"
		"      - active: true\n"
		"        filters:\n          - .Pod.LabelSelector \"tier=web\"\n"
		"          - 'ne .Container.Name \"istio-proxy\"'\n"
		"        layer: GENERAL\n"
		"        service_name: \"{{.Pod.Namespace}}::{{.Pod.OwnerName \\\"Deployment\\\"}}\"\n"
		"        instance_name: \"{{.Pod.Name}}@{{.Rover.HostName}}\"\n"
		"        process_name: \"{{.Container.Name}}-{{.Process.ExeName}}\"\n"
		"        labels: \" web, ,blue ,\"\n"
		"      - active: false\n        layer: X\n"
		"      - service_name: \"{{.Pod.Name}}\"\n"
		"      - active: ${T_TRUE:false}\n        layer: K8S_SERVICE\n"
		"        service_name: \"{{.Pod.ServiceName}}\"\n"
		"        instance_name: \"{{.Pod.Name}}\"\n        process_name: p\n",
		&c);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	cr_assert_eq(c.discovery.k8s_active, 1);
	cr_assert_str_eq(c.discovery.k8s_node_name, "node-7");
	/* Trimmed, empty parts dropped (upstream would watch " staging"). */
	cr_assert_eq(c.discovery.k8s_nnamespaces, 3);
	cr_assert_str_eq(c.discovery.k8s_namespaces[0], "prod");
	cr_assert_str_eq(c.discovery.k8s_namespaces[1], "staging");
	cr_assert_str_eq(c.discovery.k8s_namespaces[2], "dev");
	cr_assert_str_eq(c.discovery.k8s_api_server, "http://127.0.0.1:8001");
	cr_assert_str_eq(c.discovery.k8s_token_file, "/tmp/token");
	/* A plain-HTTP server has no CA. */
	cr_assert_str_eq(c.discovery.k8s_ca_file, "");
	/* The list replaces the shipped analyzers; inactive ones (explicitly, or without an
	 * "active" as upstream reads it) are dropped, unchecked. */
	cr_assert_eq(c.discovery.nanalyzers, 2);
	const struct config_analyzer *a = &c.discovery.analyzers[0], *b = &c.discovery.analyzers[1];

	cr_assert_str_eq(a->layer, "GENERAL");
	cr_assert_eq(a->nfilters, 2);
	cr_assert_str_eq(tmpl__source(a->filters[0]), ".Pod.LabelSelector \"tier=web\"");
	cr_assert_str_eq(tmpl__source(a->filters[1]), "ne .Container.Name \"istio-proxy\"");
	cr_assert_eq(a->nlabels, 2);
	cr_assert_str_eq(a->labels[0], "web");
	cr_assert_str_eq(a->labels[1], "blue");
	cr_assert_str_eq(b->layer, "K8S_SERVICE");
	cr_assert_eq(b->nfilters, 0);
	cr_assert_eq(b->nlabels, 0);

	/* Used on a pod: the first needs tier=web, the second has no filter. */
	static const struct tmpl_kv labels[] = { { "tier", "web" } };
	static const struct tmpl_kv owners[] = { { "ReplicaSet", "shop-5d8" },
						 { "Deployment", "shop" } };
	static const char *const containers[] = { "shop" };
	struct tmpl_pod pod = { .name = "shop-5d8-x",
				.ns = "prod",
				.service_name = "shop-svc",
				.labels = labels,
				.nlabels = 1,
				.containers = containers,
				.ncontainers = 1,
				.owners = owners,
				.nowners = 2 };
	struct tmpl_container co = { .name = "shop", .id = "containerd://1" };
	struct tmpl_ctx ctx = {
		.host_name = "n7", .exe_name = "node", .pod = &pod, .container = &co
	};
	char names[512];

	cr_assert_eq(apply(a, &ctx, names, sizeof(names)), 1);
	cr_assert_str_eq(names, "GENERAL prod::shop|shop-5d8-x@n7|shop-node");
	cr_assert_eq(apply(b, &ctx, names, sizeof(names)), 1);
	cr_assert_str_eq(names, "K8S_SERVICE shop-svc|shop-5d8-x|p");
	pod.nlabels = 0;
	cr_assert_eq(apply(a, &ctx, names, sizeof(names)), 0);
	config__free(&c);

	/* An https server keeps the service account's CA or the one given; http has none. */
	load_ok("process_discovery:\n  kubernetes:\n    api_server: https://10.0.0.1:6443\n", &c);
	cr_assert_str_eq(c.discovery.k8s_ca_file,
			 "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
	check_shipped_analyzers(&c);
	config__free(&c);
	load_ok("process_discovery:\n  kubernetes:\n    api_server: https://h:1\n"
		"    ca_file: /etc/ca.pem\n",
		&c);
	cr_assert_str_eq(c.discovery.k8s_ca_file, "/etc/ca.pem");
	config__free(&c);
	load_ok("process_discovery:\n  kubernetes:\n    api_server: HTTP://h:1\n"
		"    ca_file: /etc/ca.pem\n",
		&c);
	cr_assert_str_eq(c.discovery.k8s_ca_file, "");
	config__free(&c);

	/* An empty list means none; a null one keeps the shipped three. */
	load_ok("process_discovery:\n  kubernetes:\n    analyzers: []\n", &c);
	cr_assert_eq(c.discovery.nanalyzers, 0);
	config__free(&c);
	load_ok("process_discovery:\n  kubernetes:\n    analyzers:\n    namespaces: ${T_EMPTY}\n",
		&c);
	check_shipped_analyzers(&c);
	cr_assert_eq(c.discovery.k8s_nnamespaces, 0);
	config__free(&c);
}

/* The analyzer "A" with one key replaced by line (NULL: left out). */
static void bad_analyzer(const char *key, const char *line, ...)
{
	static const char *const keys[] = { "filters", "layer", "service_name", "instance_name",
					    "process_name" };
	static const char *const lines[] = {
		"        filters:\n          - .Pod.HasServiceName\n",
		"        layer: K8S_SERVICE\n",
		"        service_name: \"{{.Pod.ServiceName}}\"\n",
		"        instance_name: \"{{.Pod.Name}}\"\n",
		"        process_name: \"{{.Process.ExeName}}\"\n",
	};
	char yaml[2048] = "process_discovery:\n  kubernetes:\n    analyzers:\n"
			  "      - active: true\n        layer: L\n"
			  "        service_name: s\n        instance_name: i\n"
			  "        process_name: p\n"
			  "      - active: true\n";
	struct rover_config cfg;
	char err[256] = "";
	va_list ap;
	int r;

	for (size_t i = 0; i < 5; i++)
		strcat(yaml, strcmp(keys[i], key) ? lines[i] : line ? line : "");
	memset(&cfg, 0x5a, sizeof(cfg));
	r = config__load(yaml, strlen(yaml), &cfg, err, sizeof(err), NULL, NULL, fake_env);
	cr_assert_eq(r, -EINVAL, "%s: %d (%s)\n%s", key, r, err, yaml);
	cr_assert_eq(((unsigned char *)&cfg)[0], 0x5a, "ret_cfg written on failure");
	va_start(ap, line);
	for (const char *want; (want = va_arg(ap, const char *));)
		cr_assert(strstr(err, want), "error '%s' does not say '%s'", err, want);
	va_end(ap);
}

Test(config, bad_analyzers_name_key_and_why)
{
	/* Each required key missing. */
	bad_analyzer("layer", NULL, "process_discovery.kubernetes.analyzers[1].layer: required",
		     NULL);
	bad_analyzer("service_name", NULL,
		     "process_discovery.kubernetes.analyzers[1].service_name: required", NULL);
	bad_analyzer("instance_name", "        instance_name: ${T_EMPTY}\n",
		     "analyzers[1].instance_name: required", NULL);
	bad_analyzer("process_name", NULL, "analyzers[1].process_name: required", NULL);
	/* Templates and filters that do not compile, with where and why. */
	bad_analyzer("filters",
		     "        filters:\n          - .Pod.HasServiceName\n"
		     "          - eq .Rover.HostName \"h\"\n",
		     "process_discovery.kubernetes.analyzers[1].filters[1]: bad filter "
		     "'eq .Rover.HostName \"h\"'",
		     "field .Rover.HostName at 3 is not available in a kubernetes analyzer filter",
		     NULL);
	bad_analyzer("filters", "        filters:\n          - .Pod.HasContainer\n",
		     "analyzers[1].filters[0]: bad filter", "want 1 got 0", NULL);
	bad_analyzer("filters", "        filters:\n          - \"\"\n",
		     "process_discovery.kubernetes.analyzers[1].filters[0]: empty", NULL);
	bad_analyzer("filters", "        filters: .Pod.HasServiceName\n",
		     "analyzers[1].filters: expected a list", NULL);
	bad_analyzer("service_name", "        service_name: \"{{.Finder.Layer}}\"\n",
		     "analyzers[1].service_name: bad template '{{.Finder.Layer}}'",
		     "not available in a kubernetes analyzer name", NULL);
	bad_analyzer("instance_name", "        instance_name: \"{{.Pod.HasServiceName}}\"\n",
		     "analyzers[1].instance_name: bad template", "not available", NULL);
	bad_analyzer("process_name", "        process_name: \"{{.Process.Exe}}\"\n",
		     "analyzers[1].process_name: bad template", "unknown field .Process.Exe", NULL);

	/* The values' types, active or not. */
	load_fails("process_discovery:\n  kubernetes:\n    analyzers:\n      - active: maybe\n",
		   "process_discovery.kubernetes.analyzers[0].active", "'maybe'", NULL);
	load_fails("process_discovery:\n  kubernetes:\n    active: on\n",
		   "process_discovery.kubernetes.active", "'on'", NULL);
	load_fails("process_discovery:\n  kubernetes:\n    api_server: 10.0.0.1:6443\n",
		   "process_discovery.kubernetes.api_server: not an http:// or https:// URL "
		   "'10.0.0.1:6443'",
		   NULL);
	load_fails("process_discovery:\n  kubernetes:\n    api_server: https://\n",
		   "kubernetes.api_server", NULL);
	load_fails("process_discovery:\n  kubernetes:\n    analyzers: x\n",
		   "process_discovery.kubernetes.analyzers: expected a list", NULL);
	load_fails("process_discovery:\n  kubernetes:\n    namespaces: [a, b]\n",
		   "process_discovery.kubernetes.namespaces: expected a value", NULL);

	/* An inactive analyzer's templates are not compiled, its values' types are checked. */
	struct rover_config c;

	load_ok("process_discovery:\n  kubernetes:\n    analyzers:\n      - active: false\n"
		"        service_name: \"{{.Nope}}\"\n        filters: [\"(\"]\n",
		&c);
	cr_assert_eq(c.discovery.nanalyzers, 0);
	config__free(&c);
}

Test(config, kubernetes_bounds)
{
	char *big = malloc(64 << 10);
	struct rover_config c;

	/* CONFIG_MAX_NAMESPACES namespaces load, one more does not. */
	strcpy(big, "process_discovery:\n  kubernetes:\n    namespaces: n0");
	for (int i = 1; i < CONFIG_MAX_NAMESPACES; i++)
		sprintf(big + strlen(big), ",n%d", i);
	strcat(big, "\n");
	load_ok(big, &c);
	cr_assert_eq(c.discovery.k8s_nnamespaces, CONFIG_MAX_NAMESPACES);
	cr_assert_str_eq(c.discovery.k8s_namespaces[CONFIG_MAX_NAMESPACES - 1], "n255");
	config__free(&c);
	strcpy(big + strlen(big) - 1, ",x\n");
	load_fails(big, "process_discovery.kubernetes.namespaces: more than 256 items", NULL);

	/* Analyzers and filters. */
	strcpy(big, "process_discovery:\n  kubernetes:\n    analyzers:\n");
	for (int i = 0; i <= CONFIG_MAX_ANALYZERS; i++)
		strcat(big, "      - {active: false}\n");
	load_fails(big, "process_discovery.kubernetes.analyzers: more than 64 items", NULL);
	strcpy(big, "process_discovery:\n  kubernetes:\n    analyzers:\n      - filters: [");
	for (int i = 0; i <= CONFIG_MAX_FILTERS; i++)
		strcat(big, i ? ", 'true'" : "'true'");
	strcat(big, "]\n");
	load_fails(big, "analyzers[0].filters: more than 64 items", NULL);
	free(big);
}

/* The shipped file's environment names for Kubernetes, upstream's, its typo included. */
static const char *k8s_env(const char *name)
{
	static const struct {
		const char *name, *value;
	} env[] = {
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE", "true" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_NODE_NAME", "worker-3" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_NAMESPACES", "shop,  payments" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_API_SERVER", "http://127.0.0.1:18080" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_TOKEN_FILE", "/run/t" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_ANALYZER_ISTIO_ENVOY_ACTIVE", "false" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_ANALYZER_K8S_SERVICE_LABLES", "svc, k8s" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_ANALYZER_K8S_SERVICE_HAS_SERVICE",
		  "or (.Pod.HasContainer \"service\") (.Pod.HasContainer \"nginx\")" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_ANALYZER_K8S_SERVICE_NAME",
		  "{{.Container.Name}}" },
		{ "ROVER_PROCESS_DISCOVERY_KUBERNETES_ANALYZER_ISTIO_APPLICATION_PROCESS_NAME",
		  "{{.Process.ExeNameInCommandLine}}" },
	};
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++)
		if (!strcmp(name, env[i].name))
			return env[i].value;
	return NULL;
}

Test(config, shipped_file_kubernetes_section)
{
	const char *src = getenv("ROVER_SRC");
	char path[4096], err[256] = "";
	struct rover_config c;
	size_t len = 0;
	char *text;
	int fd;

	snprintf(path, sizeof(path), "%s/configs/rover_configs.yaml", src ? src : ".");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	text = config__read_fd(fd, &len);
	close(fd);
	cr_assert_not_null(text);

	/* Without the environment: off, and the analyzers are exactly the built-in ones. */
	cr_assert_eq(config__load(text, len, &c, err, sizeof(err), NULL, NULL, fake_env), 0, "%s",
		     err);
	cr_assert_eq(c.discovery.k8s_active, 0);
	cr_assert_eq(c.discovery.vm_active, 1);
	check_shipped_analyzers(&c);
	config__free(&c);

	/* The DaemonSet's way: upstream's environment names, as they are spelled upstream. */
	memset(&warns, 0, sizeof(warns));
	cr_assert_eq(config__load(text, len, &c, err, sizeof(err), collect, &warns, k8s_env), 0,
		     "%s", err);
	cr_assert_eq(warns.n, 0, "%s", warns.all);
	cr_assert_eq(c.discovery.k8s_active, 1);
	cr_assert_str_eq(c.discovery.k8s_node_name, "worker-3");
	cr_assert_eq(c.discovery.k8s_nnamespaces, 2);
	cr_assert_str_eq(c.discovery.k8s_namespaces[1], "payments");
	cr_assert_str_eq(c.discovery.k8s_api_server, "http://127.0.0.1:18080");
	cr_assert_str_eq(c.discovery.k8s_token_file, "/run/t");
	cr_assert_str_eq(c.discovery.k8s_ca_file, "");
	/* Envoy's analyzer off: MESH and K8S_SERVICE are left. */
	cr_assert_eq(c.discovery.nanalyzers, 2);
	const struct config_analyzer *app = &c.discovery.analyzers[0],
				     *svc = &c.discovery.analyzers[1];

	cr_assert_str_eq(app->layer, "MESH");
	cr_assert_str_eq(tmpl__source(app->process_name), "{{.Process.ExeNameInCommandLine}}");
	cr_assert_str_eq(svc->layer, "K8S_SERVICE");
	cr_assert_str_eq(tmpl__source(svc->filters[0]),
			 "or (.Pod.HasContainer \"service\") (.Pod.HasContainer \"nginx\")");
	cr_assert_str_eq(tmpl__source(svc->service_name), "{{.Container.Name}}");
	cr_assert_eq(svc->nlabels, 2);
	cr_assert_str_eq(svc->labels[0], "svc");
	cr_assert_str_eq(svc->labels[1], "k8s");
	config__free(&c);
	free(text);
}

/* access_log as upstream writes it: defaults, every key, its environment names, bad values. */
Test(config, access_log_keys)
{
	struct rover_config c;

	load_ok("", &c);
	cr_assert_eq(c.access_log.active, 0);
	cr_assert_eq(c.access_log.nexclude_namespaces, 3);
	cr_assert_str_eq(c.access_log.exclude_namespaces[0], "istio-system");
	cr_assert_str_eq(c.access_log.exclude_namespaces[1], "cert-manager");
	cr_assert_str_eq(c.access_log.exclude_namespaces[2], "kube-system");
	cr_assert_str_eq(c.access_log.exclude_cluster, "");
	cr_assert_eq(c.access_log.flush_max_count, 10000);
	cr_assert_eq(c.access_log.flush_period_ms, 5000);
	cr_assert_eq(c.access_log.queue_size, 2000);
	config__free(&c);

	memset(&warns, 0, sizeof(warns));
	load_ok("access_log:\n  active: true\n  exclude_namespaces: \"a, b\"\n"
		"  exclude_cluster: c1\n  flush:\n    max_count: 50\n    period: 2s\n"
		"  connection_analyze:\n    per_cpu_buffer: 200KB\n    parse_parallels: 1\n"
		"    analyze_parallels: 1\n    queue_size: 300\n"
		"  protocol_analyze:\n    per_cpu_buffer: 400KB\n    parse_parallels: 2\n"
		"    analyze_parallels: 2\n    queue_size: 5000\n",
		&c);
	cr_assert_eq(warns.n, 0, "upstream's keys are all known");
	cr_assert_eq(c.access_log.active, 1);
	cr_assert_eq(c.access_log.nexclude_namespaces, 2);
	cr_assert_str_eq(c.access_log.exclude_namespaces[1], "b");
	cr_assert_str_eq(c.access_log.exclude_cluster, "c1");
	cr_assert_eq(c.access_log.flush_max_count, 50);
	cr_assert_eq(c.access_log.flush_period_ms, 2000);
	cr_assert_eq(c.access_log.queue_size, 300);
	config__free(&c);

	load_fails("access_log:\n  active: maybe\n", "access_log.active", "'maybe'", NULL);
	load_fails("access_log:\n  flush:\n    period: 10ms\n", "access_log.flush.period", "'10ms'",
		   NULL);
	load_fails("access_log:\n  flush:\n    max_count: 0\n", "access_log.flush.max_count", "'0'",
		   NULL);
	load_fails("access_log:\n  connection_analyze:\n    queue_size: lots\n",
		   "access_log.connection_analyze.queue_size", "'lots'", NULL);
}
