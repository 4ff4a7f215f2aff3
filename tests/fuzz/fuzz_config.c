// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the config file (common/config/config.c), bytes as YAML. The launcher
 * reads it as root, so it is parsed before anything else and must never crash or leak:
 * config__load() with a fixed environment (so ${NAME:default} substitution runs with set,
 * empty, unset and long variables), then every finder is used as the supervisor would: its
 * regex matched against a command line (with a match limit, as discovery sets one) and its
 * templates rendered; and every Kubernetes analyzer: its filters and names on a fixed pod.
 *
 * Contracts checked: 0 or -EINVAL and nothing else; an error message on failure; on success
 * every string set, at most CONFIG_MAX_FINDERS finders and CONFIG_MAX_ANALYZERS analyzers,
 * each complete, namespaces and labels trimmed and not empty.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/config/config.h"

static char long_value[3000];

static const char *fake_env(const char *name)
{
	if (!strcmp(name, "A"))
		return "1s";
	if (!strcmp(name, "B"))
		return "{{.Process.Pid}}";
	if (!strcmp(name, "E"))
		return "";
	if (!strcmp(name, "T"))
		return "true";
	if (!strcmp(name, "LONG")) {
		if (!long_value[0])
			memset(long_value, 'x', sizeof(long_value) - 1);
		return long_value;
	}
	return NULL;
}

static void count_warning(void *ctx, const char *msg)
{
	if (!msg || !*msg)
		abort(); /* a warning always names the key */
	(*(size_t *)ctx)++;
}

static int fake_ip(void *arg, const char *ifname, int family6, char *buf, size_t len)
{
	(void)arg;
	if (strcmp(ifname, "en0"))
		return -ENODEV;
	snprintf(buf, len, "%s", family6 ? "::1" : "192.0.2.1");
	return 0;
}

static void render(const struct tmpl *t, const struct tmpl_ctx *ctx)
{
	char out[TMPL_MAX_OUTPUT + 1], err[128];
	int r;

	if (!t)
		return;
	err[0] = '\0';
	r = tmpl__render(t, ctx, out, sizeof(out), err, sizeof(err));
	if (r == 0 && strlen(out) > TMPL_MAX_OUTPUT)
		abort();
	if (r && (!err[0] || (r != -EINVAL && r != -ENOSPC && r != -ENOENT && r != -ENODEV)))
		abort();
}

static void use_finder(const struct config_finder *f, pcre2_match_context *mc)
{
	static const char cmd[] = "/usr/bin/java -Xmx1g -jar /srv/orders-1.2.jar --port 8080";
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(f->re, NULL);
	struct tmpl_ctx ctx = {
		.instance_id = "i",
		.host_name = "h",
		.exe_path = "/usr/bin/java",
		.exe_name = "java",
		.cmdline = cmd,
		.pid = 42,
		.exe_name_in_cmdline = "java",
		.layer = f->layer,
		.host_ip = fake_ip,
	};
	char groups[TMPL_MAX_GROUPS][64];
	int rc;

	if (!md)
		abort();
	rc = pcre2_match(f->re, (PCRE2_SPTR)cmd, sizeof(cmd) - 1, 0, 0, md, mc);
	if (rc > 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);

		for (int i = 0; i < rc && i < TMPL_MAX_GROUPS; i++) {
			size_t n = ov[2 * i] == PCRE2_UNSET ? 0 : ov[2 * i + 1] - ov[2 * i];

			if (n >= sizeof(groups[i]))
				n = sizeof(groups[i]) - 1;
			memcpy(groups[i], cmd + (ov[2 * i] == PCRE2_UNSET ? 0 : ov[2 * i]), n);
			groups[i][n] = '\0';
			ctx.groups[i] = groups[i];
			ctx.ngroups = i + 1;
		}
	}
	pcre2_match_data_free(md);
	render(f->service_name, &ctx);
	render(f->instance_name, &ctx);
	render(f->process_name, &ctx);
	render(f->labels, &ctx);
}

static int trimmed(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n && s[0] != ' ' && s[n - 1] != ' ' && !strchr(s, ',');
}

static void use_analyzer(const struct config_analyzer *a)
{
	static const struct tmpl_kv labels[] = { { "app", "web" }, { "tier", "" } };
	static const char *const containers[] = { "web", "istio-proxy" };
	static const struct tmpl_kv owners[] = { { "ReplicaSet", "web-1" },
						 { "Deployment", "web" } };
	static const struct tmpl_pod pod = { .name = "web-1-x",
					     .ns = "default",
					     .node = "n",
					     .service_name = "web",
					     .labels = labels,
					     .nlabels = 2,
					     .containers = containers,
					     .ncontainers = 2,
					     .owners = owners,
					     .nowners = 2 };
	static const struct tmpl_kv env[] = { { "A", "1" } };
	static const struct tmpl_container co = {
		.name = "web", .id = "containerd://1", .env = env, .nenv = 1
	};
	struct tmpl_ctx ctx = { .instance_id = "i",
				.host_name = "h",
				.exe_name = "nginx",
				.pid = 42,
				.host_ip = fake_ip,
				.pod = &pod,
				.container = &co };
	char err[128];

	if (!a->active || !a->layer || !*a->layer || !a->service_name || !a->instance_name ||
	    !a->process_name || a->nfilters > CONFIG_MAX_FILTERS || (a->nfilters && !a->filters))
		abort();
	for (size_t i = 0; i < a->nlabels; i++)
		if (!trimmed(a->labels[i]))
			abort();
	for (size_t i = 0; i < a->nfilters; i++) {
		int match = 42, r;

		err[0] = '\0';
		r = tmpl__filter(a->filters[i], &ctx, &match, err, sizeof(err));
		if (r ? (!err[0] || match != 42) : (match != 0 && match != 1))
			abort();
	}
	render(a->service_name, &ctx);
	render(a->instance_name, &ctx);
	render(a->process_name, &ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rover_config cfg;
	char err[256];
	size_t warnings = 0;
	char *text;
	int r;

	/* An exact-size copy without a terminator: ASan sees any read past len. */
	text = malloc(size ? size : 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	err[0] = '\0';
	r = config__load(text, size, &cfg, err, sizeof(err), count_warning, &warnings, fake_env);
	free(text);
	if (r) {
		if (r != -EINVAL || !err[0] || !memchr(err, '\0', sizeof(err))) {
			fprintf(stderr, "config__load: unexpected %d '%s'\n", r, err);
			abort();
		}
		return 0;
	}
	if (!cfg.logger_level || !cfg.cluster_name || !cfg.backend.addr ||
	    !cfg.backend.client_pem_path || !cfg.backend.client_key_path ||
	    !cfg.backend.ca_pem_path || !cfg.backend.authentication || !cfg.backend.spool_dir ||
	    !cfg.profiling.network_meter_prefix || !cfg.profiling.continuous_meter_prefix ||
	    !cfg.discovery.k8s_node_name || !cfg.discovery.k8s_api_server ||
	    !cfg.discovery.k8s_token_file || !cfg.discovery.k8s_ca_file)
		abort();
	if (cfg.discovery.nanalyzers > CONFIG_MAX_ANALYZERS ||
	    cfg.discovery.k8s_nnamespaces > CONFIG_MAX_NAMESPACES)
		abort();
	for (size_t i = 0; i < cfg.discovery.k8s_nnamespaces; i++)
		if (!trimmed(cfg.discovery.k8s_namespaces[i]))
			abort();
	for (size_t i = 0; i < cfg.discovery.nanalyzers; i++)
		use_analyzer(&cfg.discovery.analyzers[i]);
	if (cfg.discovery.nfinders > CONFIG_MAX_FINDERS || cfg.profiling.dump_period_us < 1000 ||
	    !cfg.profiling.check_interval_ms || !cfg.discovery.properties_report_period)
		abort();

	pcre2_match_context *mc = pcre2_match_context_create(NULL);

	if (!mc)
		abort();
	/* Discovery bounds every match: a backtracking regex costs this much and no more. */
	pcre2_set_match_limit(mc, 100000);
	pcre2_set_depth_limit(mc, 1000);
	for (size_t i = 0; i < cfg.discovery.nfinders; i++) {
		const struct config_finder *f = &cfg.discovery.finders[i];

		if (!f->match_cmd_regex || !f->re || !f->layer || !f->service_name ||
		    !f->instance_name || !f->process_name)
			abort();
		use_finder(f, mc);
	}
	pcre2_match_context_free(mc);
	config__free(&cfg);
	return 0;
}
