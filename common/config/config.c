// SPDX-License-Identifier: Apache-2.0
/*
 * The config file (config.h). The text is checked once with libyaml's event parser (syntax,
 * nesting depth, number of events, one document), then loaded as a document and walked along
 * one table of known keys per mapping. Only keys in the tables are descended into, and every
 * list has a maximum length, so anchors and aliases cannot make the walk bigger than the file.
 *
 * Values:
 * - ${NAME:default} anywhere in a value is replaced by the environment variable NAME when it is
 *   set and not empty, else by default (surrounding double or single quotes removed, as the
 *   upstream file writes `${ROVER_BACKEND_AUTHENTICATION:""}`); ${NAME} without default is
 *   replaced by "" when unset. Braces inside the default nest, so a template default
 *   ${X:{{.Process.ExeName}}} stays whole. Replaced text is not expanded again.
 * - A value that is empty after substitution, or a plain null (~, null), keeps the default.
 * - Keys match without regard to case, as upstream's loader (viper) lower-cases them.
 * - Durations as Go writes them: "20s", "9ms", "1m30s"; a bare number is seconds. Booleans
 *   as Go's strconv.ParseBool reads them. Sizes: a number of bytes with an optional K, KB,
 *   KiB, M, MB, MiB, G, GB or GiB suffix (all powers of 1024).
 * The warning callback gets the dotted path of an unknown key and nothing else.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "common/config/config.h"
#include "common/config/procmatch.h"
#include "common/msg.h"
#include "common/util.h"

#define CONFIG_MAX_DEPTH 32
/* Events of a file: a 1 MiB file of "[a,a,...]" makes ~500k; no real config comes close. */
#define CONFIG_MAX_EVENTS 200000
#define CONFIG_MAX_VALUE TMPL_MAX_SOURCE /* a value, after substitution */
#define PATH_MAX_LEN 256

enum kind {
	K_MAP,	   /* sub: the keys; off >= 0: an int set to 1 when the key is present */
	K_STR,	   /* char * */
	K_BOOL,	   /* int */
	K_DUR_MS,  /* uint64_t, milliseconds */
	K_DUR_US,  /* uint64_t, microseconds */
	K_U32,	   /* uint32_t */
	K_BYTES,   /* uint64_t */
	K_LEVEL,   /* char *, a log level */
	K_HOOKS,   /* uint32_t, enum attach_pref of a NETWORK task: auto, sock, syscalls, raw_tp */
	K_MODE,	   /* scanner mode: REGEX only */
	K_FINDERS, /* list of finders; sub: their keys */
	K_ANALYZERS, /* list of Kubernetes analyzers; sub: their keys */
	K_STRLIST,   /* list of non-empty strings: char ** at off, size_t count at count_off */
	K_CSV,	     /* comma list, trimmed, empty parts dropped, at most max: as K_STRLIST */
};

struct key {
	const char *name;
	enum kind kind;
	ptrdiff_t off; /* into the base the walk writes to; -1: validate only */
	const struct key *sub;
	uint64_t min, max;   /* numbers (durations in their unit); K_CSV: max items */
	ptrdiff_t count_off; /* K_STRLIST, K_CSV: the size_t count */
};

#define NO_FIELD ((ptrdiff_t)-1)
#define K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define CF(field) offsetof(struct rover_config, field)
#define DAY_US (86400ULL * 1000000)
#define DAY_MS (86400ULL * 1000)

/* What a finder is written as, before its regex and templates are compiled. */
struct finder_src {
	char *regex, *layer, *service, *instance, *process, *labels;
};
#define FS(field) offsetof(struct finder_src, field)

static const struct key vm_finder_keys[] = {
	{ "match_cmd_regex", K_STR, FS(regex) },
	{ "layer", K_STR, FS(layer) },
	{ "service_name", K_STR, FS(service) },
	{ "instance_name", K_STR, FS(instance) },
	{ "process_name", K_STR, FS(process) },
	{ "labels", K_STR, FS(labels) },
	{ NULL },
};

static const struct key scanner_finder_keys[] = {
	{ "match_cmd", K_STR, FS(regex) },
	{ "layer", K_STR, FS(layer) },
	{ "service_name", K_STR, FS(service) },
	{ "instance_name", K_STR, FS(instance) },
	{ "process_name", K_STR, FS(process) },
	{ "labels", K_STR, FS(labels) },
	{ NULL },
};

static const struct key vm_keys[] = {
	{ "active", K_BOOL, CF(discovery.vm_active) },
	{ "period", K_DUR_MS, CF(discovery.scan_period_ms), NULL, 1, DAY_MS },
	{ "finders", K_FINDERS, NO_FIELD, vm_finder_keys },
	{ NULL },
};

static const struct key scanner_agent_keys[] = {
	{ "process_status_refresh_period", K_DUR_MS, NO_FIELD, NULL, 1, DAY_MS },
	{ NULL },
};

static const struct key scanner_keys[] = {
	{ "period", K_DUR_MS, CF(discovery.scan_period_ms), NULL, 1, DAY_MS },
	{ "mode", K_MODE, NO_FIELD },
	{ "agent", K_MAP, NO_FIELD, scanner_agent_keys },
	{ "regex", K_FINDERS, NO_FIELD, scanner_finder_keys },
	{ NULL },
};

/* What an analyzer is written as, before its templates are compiled. */
struct analyzer_src {
	int active; /* upstream's zero value: an analyzer without "active: true" is off */
	char **filters;
	size_t nfilters;
	char *layer, *service, *instance, *process;
	char **labels;
	size_t nlabels;
};
#define AS(field) offsetof(struct analyzer_src, field)

static const struct key analyzer_keys[] = {
	{ "active", K_BOOL, AS(active) },
	{ "filters", K_STRLIST, AS(filters), NULL, 0, CONFIG_MAX_FILTERS, AS(nfilters) },
	{ "layer", K_STR, AS(layer) },
	{ "service_name", K_STR, AS(service) },
	{ "instance_name", K_STR, AS(instance) },
	{ "process_name", K_STR, AS(process) },
	/* Upstream does not trim; " a" is no label anyone means. */
	{ "labels", K_CSV, AS(labels), NULL, 0, TMPL_MAX_OUTPUT, AS(nlabels) },
	{ NULL },
};

static const struct key kubernetes_keys[] = {
	{ "active", K_BOOL, CF(discovery.k8s_active) },
	{ "node_name", K_STR, CF(discovery.k8s_node_name) },
	/* Upstream does not trim either; "a, b" would watch " b", which cannot exist. */
	{ "namespaces", K_CSV, CF(discovery.k8s_namespaces), NULL, 0, CONFIG_MAX_NAMESPACES,
	  CF(discovery.k8s_nnamespaces) },
	{ "analyzers", K_ANALYZERS, NO_FIELD, analyzer_keys },
	/* Ours: a cluster reached from outside instead of the in-cluster service account. */
	{ "api_server", K_STR, CF(discovery.k8s_api_server) },
	{ "token_file", K_STR, CF(discovery.k8s_token_file) },
	{ "ca_file", K_STR, CF(discovery.k8s_ca_file) },
	{ NULL },
};

static const struct key discovery_keys[] = {
	{ "heartbeat_period", K_DUR_MS, CF(discovery.heartbeat_period_ms), NULL, 1, DAY_MS },
	{ "properties_report_period", K_U32, CF(discovery.properties_report_period), NULL, 1,
	  1000000 },
	{ "vm", K_MAP, NO_FIELD, vm_keys },
	{ "scanner", K_MAP, NO_FIELD, scanner_keys },
	{ "kubernetes", K_MAP, NO_FIELD, kubernetes_keys },
	{ NULL },
};

static const struct key backend_keys[] = {
	{ "addr", K_STR, CF(backend.addr) },
	{ "enable_TLS", K_BOOL, CF(backend.enable_tls) },
	{ "client_pem_path", K_STR, CF(backend.client_pem_path) },
	{ "client_key_path", K_STR, CF(backend.client_key_path) },
	{ "ca_pem_path", K_STR, CF(backend.ca_pem_path) },
	{ "insecure_skip_verify", K_BOOL, CF(backend.insecure_skip_verify) },
	{ "check_period", K_DUR_MS, CF(backend.check_period_ms), NULL, 1, DAY_MS },
	{ "authentication", K_STR, CF(backend.authentication) },
	{ "spool_dir", K_STR, CF(backend.spool_dir) },
	{ "spool_memory_bytes", K_BYTES, CF(backend.spool_memory_bytes), NULL, 64 << 10,
	  1ULL << 32 },
	{ "spool_disk_bytes", K_BYTES, CF(backend.spool_disk_bytes), NULL, 0, 1ULL << 40 },
	{ "call_timeout", K_DUR_MS, CF(backend.call_timeout_ms), NULL, 1, DAY_MS },
	{ NULL },
};

static const struct key core_keys[] = {
	{ "cluster_name", K_STR, CF(cluster_name) },
	{ "backend", K_MAP, NO_FIELD, backend_keys },
	{ NULL },
};

static const struct key logger_keys[] = {
	{ "level", K_LEVEL, CF(logger_level) },
	{ NULL },
};

static const struct key on_cpu_keys[] = {
	/* 1 ms: the shortest period the sampler is meant for (1000 Hz). */
	{ "dump_period", K_DUR_US, CF(profiling.dump_period_us), NULL, 1000, 1000000ULL * 3600 },
	{ NULL },
};

static const struct key protocol_analyze_keys[] = {
	{ "per_cpu_buffer", K_BYTES, NO_FIELD, NULL, 1, 1ULL << 30 },
	{ "parallels", K_U32, NO_FIELD, NULL, 1, 1024 },
	{ "queue_size", K_U32, NO_FIELD, NULL, 1, 1 << 24 },
	{ NULL },
};

static const struct key network_keys[] = {
	/* A NETWORK task's flush interval: 100 ms to 10 min, what a worker accepts. */
	{ "report_interval", K_DUR_MS, CF(profiling.network_report_interval_ms), NULL, 100,
	  600000 },
	{ "meter_prefix", K_STR, CF(profiling.network_meter_prefix) },
	/* Not upstream: which kernel hooks capture (docs/network.md, "How it works, and where"). */
	{ "hooks", K_HOOKS, CF(profiling.network_attach) },
	{ "protocol_analyze", K_MAP, NO_FIELD, protocol_analyze_keys },
	{ NULL },
};

static const struct key task_keys[] = {
	{ "on_cpu", K_MAP, NO_FIELD, on_cpu_keys },
	{ "network", K_MAP, NO_FIELD, network_keys },
	{ NULL },
};

static const struct key trigger_keys[] = {
	{ "execute_duration", K_DUR_MS, CF(profiling.trigger_execute_duration_ms), NULL, 1000,
	  DAY_MS },
	{ "silence_duration", K_DUR_MS, CF(profiling.trigger_silence_duration_ms), NULL, 0,
	  DAY_MS },
	{ NULL },
};

static const struct key continuous_keys[] = {
	{ "meter_prefix", K_STR, CF(profiling.continuous_meter_prefix) },
	{ "fetch_interval", K_DUR_MS, CF(profiling.continuous_fetch_interval_ms), NULL, 1, DAY_MS },
	{ "check_interval", K_DUR_MS, CF(profiling.continuous_check_interval_ms), NULL, 1, DAY_MS },
	{ "trigger", K_MAP, NO_FIELD, trigger_keys },
	{ NULL },
};

static const struct key profiling_keys[] = {
	{ "active", K_BOOL, CF(profiling.active) },
	{ "check_interval", K_DUR_MS, CF(profiling.check_interval_ms), NULL, 1, DAY_MS },
	{ "flush_interval", K_DUR_MS, CF(profiling.flush_interval_ms), NULL, 1, DAY_MS },
	/* Ours: a backend task longer than this runs this long. A worker runs 24 h at most. */
	{ "max_task_duration", K_DUR_MS, CF(profiling.max_task_duration_ms), NULL, 1000, DAY_MS },
	/* Ours: the shipper's symbol tables, shared by build-id, evicted beyond this. */
	{ "symbol_cache_bytes", K_BYTES, CF(profiling.symbol_cache_bytes), NULL, 1 << 20,
	  16ULL << 30 },
	{ "task", K_MAP, NO_FIELD, task_keys },
	{ "continuous", K_MAP, NO_FIELD, continuous_keys },
	{ NULL },
};

/* Accepted as upstream writes them; one ring buffer and one thread serve the module here. */
static const struct key alog_analyze_keys[] = {
	{ "per_cpu_buffer", K_BYTES, NO_FIELD, NULL, 1, 1ULL << 30 },
	{ "parse_parallels", K_U32, NO_FIELD, NULL, 1, 1024 },
	{ "analyze_parallels", K_U32, NO_FIELD, NULL, 1, 1024 },
	{ "parallels", K_U32, NO_FIELD, NULL, 1, 1024 },
	{ "queue_size", K_U32, NO_FIELD, NULL, 1, 1 << 24 },
	{ NULL },
};

static const struct key alog_connection_keys[] = {
	{ "per_cpu_buffer", K_BYTES, NO_FIELD, NULL, 1, 1ULL << 30 },
	{ "parse_parallels", K_U32, NO_FIELD, NULL, 1, 1024 },
	{ "analyze_parallels", K_U32, NO_FIELD, NULL, 1, 1024 },
	/* Connections the shipper keeps pending logs of at once. */
	{ "queue_size", K_U32, CF(access_log.queue_size), NULL, 16, 1 << 20 },
	{ NULL },
};

static const struct key alog_flush_keys[] = {
	{ "max_count", K_U32, CF(access_log.flush_max_count), NULL, 1, 1 << 24 },
	{ "period", K_DUR_MS, CF(access_log.flush_period_ms), NULL, 100, 600000 },
	{ NULL },
};

static const struct key access_log_keys[] = {
	{ "active", K_BOOL, CF(access_log.active) },
	{ "exclude_namespaces", K_CSV, CF(access_log.exclude_namespaces), NULL, 0,
	  CONFIG_MAX_NAMESPACES, CF(access_log.nexclude_namespaces) },
	{ "exclude_cluster", K_STR, CF(access_log.exclude_cluster) },
	{ "flush", K_MAP, NO_FIELD, alog_flush_keys },
	{ "connection_analyze", K_MAP, NO_FIELD, alog_connection_keys },
	{ "protocol_analyze", K_MAP, NO_FIELD, alog_analyze_keys },
	{ NULL },
};

static const struct key root_keys[] = {
	{ "access_log", K_MAP, NO_FIELD, access_log_keys },
	{ "logger", K_MAP, NO_FIELD, logger_keys },
	{ "core", K_MAP, NO_FIELD, core_keys },
	{ "process_discovery", K_MAP, CF(discovery.present), discovery_keys },
	{ "profiling", K_MAP, NO_FIELD, profiling_keys },
	{ NULL },
};

struct loader {
	yaml_document_t *doc;
	struct rover_config *cfg;
	char *err;
	size_t errlen;
	config_warn_fn warn;
	void *warn_ctx;
	const char *(*getenv_fn)(const char *name);
	char path[PATH_MAX_LEN];
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* A value as an error message shows it: at most 80 bytes, control bytes as '?'. */
static const char *shown(const char *v, char buf[84])
{
	size_t i = 0;

	for (; v[i] && i < 80; i++)
		buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	if (v[i]) {
		memcpy(buf + 80, "...", 3);
		i = 83;
	}
	buf[i] = '\0';
	return buf;
}

/* "path: why 'value'", the shape of every value error. */
static int bad_value(struct loader *L, const char *why, const char *value)
{
	char buf[84];

	set_err(L->err, L->errlen, "%s: %s '%s'", L->path, why, shown(value, buf));
	return -EINVAL;
}

static int bad(struct loader *L, const char *why)
{
	set_err(L->err, L->errlen, "%s: %s", L->path, why);
	return -EINVAL;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A comma list into *ret_v (malloc'd strings), each part trimmed, empty ones dropped.
 * -E2BIG past max parts. */
static int split_csv(const char *v, size_t max, char ***ret_v, size_t *ret_n)
{
	size_t n = 0, cap = 1;
	char **out;

	for (const char *p = v; *p; p++)
		cap += *p == ',';
	out = calloc(cap, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (const char *p = v;;) {
		const char *comma = strchr(p, ','), *b = p, *e = comma ? comma : p + strlen(p);

		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (e > b) {
			if (n == max) {
				free_strv(out, n);
				return -E2BIG;
			}
			out[n] = strndup(b, (size_t)(e - b));
			if (!out[n]) {
				free_strv(out, n);
				return -ENOMEM;
			}
			n++;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	*ret_v = out;
	*ret_n = n;
	return 0;
}

static void free_analyzer(struct config_analyzer *a)
{
	for (size_t i = 0; i < a->nfilters; i++)
		tmpl__free(a->filters[i]);
	free(a->filters);
	free(a->layer);
	tmpl__free(a->service_name);
	tmpl__free(a->instance_name);
	tmpl__free(a->process_name);
	free_strv(a->labels, a->nlabels);
	memset(a, 0, sizeof(*a));
}

static void free_analyzers(struct rover_config *cfg)
{
	for (size_t i = 0; i < cfg->discovery.nanalyzers; i++)
		free_analyzer(&cfg->discovery.analyzers[i]);
	free(cfg->discovery.analyzers);
	cfg->discovery.analyzers = NULL;
	cfg->discovery.nanalyzers = 0;
}

/*
 * Compiles an active analyzer from its source (its layer and labels are taken from s).
 * -EINVAL with what set to the key at fault ("filters[1]", "service_name") and why to the
 * reason, or -ENOMEM.
 */
static int build_analyzer(struct analyzer_src *s, struct config_analyzer *ret, char *what,
			  size_t whatlen, char *why, size_t whylen)
{
	struct config_analyzer a = { .active = 1 };
	char terr[160], buf[84];
	struct {
		const char *key, *src;
		struct tmpl **dst;
	} t[] = {
		{ "service_name", s->service, &a.service_name },
		{ "instance_name", s->instance, &a.instance_name },
		{ "process_name", s->process, &a.process_name },
	};
	int r = -EINVAL;

	a.filters = calloc(s->nfilters ? s->nfilters : 1, sizeof(*a.filters));
	if (!a.filters)
		return -ENOMEM;
	for (; a.nfilters < s->nfilters; a.nfilters++) {
		struct tmpl *f = tmpl__compile_filter(s->filters[a.nfilters], terr, sizeof(terr));

		if (!f) {
			r = -errno;
			snprintf(what, whatlen, "filters[%zu]", a.nfilters);
			set_err(why, whylen, "bad filter '%s' (%s)",
				shown(s->filters[a.nfilters], buf), terr);
			goto fail;
		}
		a.filters[a.nfilters] = f;
	}
	if (!s->layer) {
		snprintf(what, whatlen, "layer");
		set_err(why, whylen, "required (an OAP layer, e.g. K8S_SERVICE)");
		goto fail;
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!t[i].src) {
			snprintf(what, whatlen, "%s", t[i].key);
			set_err(why, whylen, "required");
			goto fail;
		}
		*t[i].dst = tmpl__compile_as(t[i].src, TMPL_K8S_ENTITY, terr, sizeof(terr));
		if (!*t[i].dst) {
			r = -errno;
			snprintf(what, whatlen, "%s", t[i].key);
			set_err(why, whylen, "bad template '%s' (%s)", shown(t[i].src, buf), terr);
			goto fail;
		}
	}
	a.layer = s->layer;
	s->layer = NULL;
	a.labels = s->labels;
	a.nlabels = s->nlabels;
	s->labels = NULL;
	s->nlabels = 0;
	*ret = a;
	return 0;
fail:
	free_analyzer(&a);
	return r;
}

static void free_analyzer_src(struct analyzer_src *s)
{
	free_strv(s->filters, s->nfilters);
	free(s->layer);
	free(s->service);
	free(s->instance);
	free(s->process);
	free_strv(s->labels, s->nlabels);
	memset(s, 0, sizeof(*s));
}

/* The analyzers of upstream's configs/rover_configs.yaml (reference B4), in its order. */
#define ISTIO_SERVICE_NAME                                                                  \
	"{{.Pod.LabelValue \"service.istio.io/canonical-name,app.kubernetes.io/name,app\" " \
	"\"\"}}.{{.Pod.Namespace}}"
static const struct {
	const char *filters[2];
	const char *layer, *service, *labels;
} shipped_analyzers[] = {
	{ { ".Pod.HasContainer \"istio-proxy\"", "eq .Container.Name \"istio-proxy\"" },
	  "MESH_DP",
	  ISTIO_SERVICE_NAME,
	  "mesh-envoy" },
	{ { ".Pod.HasContainer \"istio-proxy\"", "ne .Container.Name \"istio-proxy\"" },
	  "MESH",
	  ISTIO_SERVICE_NAME,
	  "mesh-application" },
	{ { ".Pod.HasServiceName", NULL },
	  "K8S_SERVICE",
	  "{{.Pod.ServiceName}}.{{.Pod.Namespace}}",
	  "k8s-service" },
};

static int default_analyzers(struct rover_config *cfg)
{
	size_t n = sizeof(shipped_analyzers) / sizeof(shipped_analyzers[0]);
	char what[32], why[256];
	int r = 0;

	cfg->discovery.analyzers = calloc(n, sizeof(*cfg->discovery.analyzers));
	if (!cfg->discovery.analyzers)
		return -ENOMEM;
	for (size_t i = 0; i < n && !r; i++) {
		struct analyzer_src s = { .active = 1 };
		char *filters[2] = { 0 };

		s.filters = filters;
		for (; s.nfilters < 2 && shipped_analyzers[i].filters[s.nfilters]; s.nfilters++)
			filters[s.nfilters] = (char *)shipped_analyzers[i].filters[s.nfilters];
		s.service = (char *)shipped_analyzers[i].service;
		s.instance = (char *)"{{.Pod.Name}}";
		s.process = (char *)"{{.Process.ExeName}}";
		s.layer = strdup(shipped_analyzers[i].layer);
		r = s.layer ? split_csv(shipped_analyzers[i].labels, 1, &s.labels, &s.nlabels)
			    : -ENOMEM;
		if (!r)
			r = build_analyzer(&s, &cfg->discovery.analyzers[i], what, sizeof(what),
					   why, sizeof(why));
		if (!r)
			cfg->discovery.nanalyzers++;
		free(s.layer);
		free_strv(s.labels, s.nlabels);
	}
	/* The table compiles (a unit test says so): any failure is memory. */
	return r ? -ENOMEM : 0;
}

void config__free(struct rover_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->logger_level);
	free(cfg->cluster_name);
	free(cfg->backend.addr);
	free(cfg->backend.client_pem_path);
	free(cfg->backend.client_key_path);
	free(cfg->backend.ca_pem_path);
	free(cfg->backend.authentication);
	free(cfg->backend.spool_dir);
	free(cfg->profiling.network_meter_prefix);
	free(cfg->profiling.continuous_meter_prefix);
	for (size_t i = 0; i < cfg->discovery.nfinders; i++) {
		struct config_finder *f = &cfg->discovery.finders[i];

		free(f->match_cmd_regex);
		procmatch__free(f->re);
		free(f->layer);
		tmpl__free(f->service_name);
		tmpl__free(f->instance_name);
		tmpl__free(f->process_name);
		tmpl__free(f->labels);
	}
	free(cfg->discovery.finders);
	free(cfg->discovery.k8s_node_name);
	free_strv(cfg->discovery.k8s_namespaces, cfg->discovery.k8s_nnamespaces);
	free_strv(cfg->access_log.exclude_namespaces, cfg->access_log.nexclude_namespaces);
	free(cfg->access_log.exclude_cluster);
	free_analyzers(cfg);
	free(cfg->discovery.k8s_api_server);
	free(cfg->discovery.k8s_token_file);
	free(cfg->discovery.k8s_ca_file);
	memset(cfg, 0, sizeof(*cfg));
}

int config__defaults(struct rover_config *ret_cfg)
{
	struct rover_config c = { 0 };

	c.logger_level = strdup("INFO");
	c.cluster_name = strdup("");
	c.backend.addr = strdup("localhost:11800");
	c.backend.client_pem_path = strdup("");
	c.backend.client_key_path = strdup("");
	c.backend.ca_pem_path = strdup("");
	c.backend.check_period_ms = 5000;
	c.backend.authentication = strdup("");
	c.backend.spool_dir = strdup("");
	c.backend.spool_memory_bytes = 16ULL << 20;
	c.backend.spool_disk_bytes = 256ULL << 20;
	c.backend.call_timeout_ms = 10000;
	c.discovery.heartbeat_period_ms = 20000;
	c.discovery.properties_report_period = 10;
	c.discovery.vm_active = 1;
	c.discovery.scan_period_ms = 3000;
	c.discovery.k8s_node_name = strdup("");
	c.discovery.k8s_api_server = strdup("");
	c.discovery.k8s_token_file = strdup(K8S_SA_DIR "/token");
	c.discovery.k8s_ca_file = strdup(K8S_SA_DIR "/ca.crt");
	c.profiling.active = 1;
	c.profiling.check_interval_ms = 10000;
	c.profiling.flush_interval_ms = 5000;
	c.profiling.max_task_duration_ms = 3600 * 1000;
	c.profiling.symbol_cache_bytes = 64ULL << 20;
	c.profiling.dump_period_us = 9000;
	c.profiling.network_report_interval_ms = 2000;
	c.profiling.network_meter_prefix = strdup("rover_net_p");
	c.profiling.continuous_meter_prefix = strdup("rover_con_p");
	c.profiling.continuous_fetch_interval_ms = 1000;
	c.profiling.continuous_check_interval_ms = 5000;
	c.profiling.trigger_execute_duration_ms = 10 * 60 * 1000;
	c.profiling.trigger_silence_duration_ms = 20 * 60 * 1000;
	c.access_log.exclude_cluster = strdup("");
	c.access_log.flush_max_count = 10000;
	c.access_log.flush_period_ms = 5000;
	c.access_log.queue_size = 2000;
	if (!c.access_log.exclude_cluster ||
	    split_csv("istio-system,cert-manager,kube-system", CONFIG_MAX_NAMESPACES,
		      &c.access_log.exclude_namespaces, &c.access_log.nexclude_namespaces) ||
	    !c.logger_level || !c.cluster_name || !c.backend.addr || !c.backend.client_pem_path ||
	    !c.backend.client_key_path || !c.backend.ca_pem_path || !c.backend.authentication ||
	    !c.backend.spool_dir || !c.profiling.network_meter_prefix ||
	    !c.profiling.continuous_meter_prefix || !c.discovery.k8s_node_name ||
	    !c.discovery.k8s_api_server || !c.discovery.k8s_token_file ||
	    !c.discovery.k8s_ca_file || default_analyzers(&c)) {
		config__free(&c);
		return -ENOMEM;
	}
	*ret_cfg = c;
	return 0;
}

/* Appends s[0, n) to out (cap CONFIG_MAX_VALUE). */
static int put(struct loader *L, char *out, size_t *len, const char *s, size_t n)
{
	if (n > CONFIG_MAX_VALUE - *len)
		return bad(L, "value too long after substitution");
	memcpy(out + *len, s, n);
	*len += n;
	return 0;
}

/* ${NAME:default} substitution of in[0, inlen) into a new string, of its own length (a
 * config has hundreds of values: no CONFIG_MAX_VALUE-sized allocation for each). */
static int expand(struct loader *L, const char *in, size_t inlen, char **ret)
{
	char out[CONFIG_MAX_VALUE + 1];
	size_t len = 0, i = 0;
	int r = 0;

	while (i < inlen && !r) {
		const char *dollar = memmem(in + i, inlen - i, "${", 2);
		size_t s, name_end, def = 0, def_end = 0, j;
		int depth = 1;

		if (!dollar) {
			r = put(L, out, &len, in + i, inlen - i);
			break;
		}
		s = (size_t)(dollar - in);
		r = put(L, out, &len, in + i, s - i);
		if (r)
			break;
		for (j = s + 2; j < inlen && (isalnum((unsigned char)in[j]) || in[j] == '_'); j++)
			;
		name_end = j;
		if (j < inlen && in[j] == ':') {
			def = ++j;
			for (; j < inlen; j++) {
				if (in[j] == '{')
					depth++;
				else if (in[j] == '}' && --depth == 0)
					break;
			}
			def_end = j;
		}
		if (j >= inlen || in[j] != '}' || name_end == s + 2) {
			char v[CONFIG_MAX_VALUE + 1];
			size_t n = inlen < CONFIG_MAX_VALUE ? inlen : CONFIG_MAX_VALUE;

			memcpy(v, in, n);
			v[n] = '\0';
			r = bad_value(L, "bad ${NAME:default} in", v);
			break;
		}
		{
			char name[128];
			const char *env = NULL;
			size_t nlen = name_end - (s + 2);

			if (nlen < sizeof(name)) {
				memcpy(name, in + s + 2, nlen);
				name[nlen] = '\0';
				env = L->getenv_fn ? L->getenv_fn(name) : getenv(name);
			}
			if (env && *env) {
				r = put(L, out, &len, env, strlen(env));
			} else if (def_end > def) {
				size_t dl = def_end - def;
				const char *d = in + def;

				if (dl >= 2 && (d[0] == '"' || d[0] == '\'') && d[dl - 1] == d[0]) {
					d++;
					dl -= 2;
				}
				r = put(L, out, &len, d, dl);
			}
		}
		i = j + 1;
	}
	if (r)
		return r;
	*ret = strndup(out, len);
	return *ret ? 0 : -ENOMEM;
}

static int is_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return len == 0 || (len == 1 && v[0] == '~') ||
	       (len == 4 &&
		(!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
}

static const char *node_kind(const yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE    ? "a mapping"
	       : n->type == YAML_SEQUENCE_NODE ? "a list"
					       : "a value";
}

/* The scalar of n, substituted; *ret NULL when it keeps the default (null or empty). */
static int scalar_of(struct loader *L, const yaml_node_t *n, char **ret)
{
	char *v;
	int r;

	*ret = NULL;
	if (n->type != YAML_SCALAR_NODE) {
		set_err(L->err, L->errlen, "%s: expected a value, not %s", L->path, node_kind(n));
		return -EINVAL;
	}
	if (is_null(n))
		return 0;
	if (n->data.scalar.length > CONFIG_MAX_VALUE)
		return bad(L, "value longer than 4096 bytes");
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return bad(L, "value with a NUL byte");
	r = expand(L, (const char *)n->data.scalar.value, n->data.scalar.length, &v);
	if (r)
		return r;
	if (!*v) {
		free(v);
		return 0;
	}
	*ret = v;
	return 0;
}

static int parse_bool(const char *v, int *ret)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };

	for (size_t i = 0; i < 6; i++) {
		if (!strcmp(v, yes[i])) {
			*ret = 1;
			return 0;
		}
		if (!strcmp(v, no[i])) {
			*ret = 0;
			return 0;
		}
	}
	return -EINVAL;
}

/* Go's compound durations ("1m30s") as a sum of parse_duration_us() terms. */
static int parse_duration(const char *v, uint64_t *ret_us)
{
	uint64_t total = 0;
	const char *p = v;

	if (!*v)
		return -EINVAL;
	while (*p) {
		char term[32];
		size_t n = 0;
		uint64_t us;

		while (p[n] >= '0' && p[n] <= '9')
			n++;
		if (!n)
			return -EINVAL;
		while (p[n] && !(p[n] >= '0' && p[n] <= '9'))
			n++;
		if (n >= sizeof(term))
			return -EINVAL;
		memcpy(term, p, n);
		term[n] = '\0';
		/* Only the last term may be a bare number (seconds); "1m30" is not Go's. */
		if (p != v && !(term[n - 1] < '0' || term[n - 1] > '9'))
			return -EINVAL;
		if (parse_duration_us(term, &us) || us > UINT64_MAX - total)
			return -EINVAL;
		total += us;
		p += n;
	}
	*ret_us = total;
	return 0;
}

static int parse_u64(const char *v, uint64_t *ret, const char **ret_end)
{
	uint64_t x = 0;
	const char *p = v;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*ret = x;
	*ret_end = p;
	return 0;
}

static int parse_bytes(const char *v, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = { { "", 0 },     { "B", 0 },   { "K", 10 },	 { "KB", 10 },
		      { "KiB", 10 }, { "M", 20 },  { "MB", 20 }, { "MiB", 20 },
		      { "G", 30 },   { "GB", 30 }, { "GiB", 30 } };
	const char *end;
	uint64_t x;

	if (parse_u64(v, &x, &end))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		if (x > (UINT64_MAX >> units[i].shift))
			return -EINVAL;
		*ret = x << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

static int range_err(struct loader *L, const struct key *k, const char *v, const char *unit)
{
	char why[96];

	snprintf(why, sizeof(why), "out of range [%llu, %llu]%s", (unsigned long long)k->min,
		 (unsigned long long)k->max, unit);
	return bad_value(L, why, v);
}

static void *field(void *base, const struct key *k)
{
	return base && k->off >= 0 ? (char *)base + k->off : NULL;
}

static int walk_map(struct loader *L, const yaml_node_t *n, const struct key *keys, void *base);

static int set_scalar(struct loader *L, const yaml_node_t *n, const struct key *k, void *base)
{
	void *dst = field(base, k);
	char *v;
	int r = scalar_of(L, n, &v);

	if (r || !v)
		return r;
	switch (k->kind) {
	case K_STR:
		if (dst) {
			free(*(char **)dst);
			*(char **)dst = v;
			v = NULL;
		}
		break;
	case K_LEVEL: {
		static const char *const levels[] = { "trace",	 "debug", "info",  "warn",
						      "warning", "error", "fatal", "panic" };
		size_t i;

		for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
			if (!strcasecmp(v, levels[i]))
				break;
		if (i == sizeof(levels) / sizeof(levels[0])) {
			r = bad_value(L, "unknown log level", v);
			break;
		}
		free(*(char **)dst);
		*(char **)dst = v;
		v = NULL;
		break;
	}
	case K_HOOKS: {
		static const struct {
			const char *name;
			uint32_t attach;
		} hooks[] = { { "auto", ATTACH_AUTO },
			      { "sock", ATTACH_TP_BTF },
			      { "syscalls", ATTACH_SYSCALLS },
			      { "raw_tp", ATTACH_RAW_TP } };
		size_t i;

		for (i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
			if (!strcmp(v, hooks[i].name))
				break;
		if (i == sizeof(hooks) / sizeof(hooks[0])) {
			r = bad_value(L, "unknown hooks (auto, sock, syscalls or raw_tp)", v);
			break;
		}
		if (dst)
			*(uint32_t *)dst = hooks[i].attach;
		break;
	}
	case K_BOOL: {
		int b;

		if (parse_bool(v, &b)) {
			r = bad_value(L, "bad boolean (true or false)", v);
			break;
		}
		if (dst)
			*(int *)dst = b;
		break;
	}
	case K_DUR_MS:
	case K_DUR_US: {
		uint64_t us, x;

		if (parse_duration(v, &us)) {
			r = bad_value(L, "bad duration", v);
			break;
		}
		x = k->kind == K_DUR_MS ? us / 1000 : us;
		if ((k->kind == K_DUR_MS && us % 1000) || x < k->min || x > k->max) {
			r = range_err(L, k, v, k->kind == K_DUR_MS ? " ms" : " us");
			break;
		}
		if (dst)
			*(uint64_t *)dst = x;
		break;
	}
	case K_U32:
	case K_BYTES: {
		uint64_t x;
		const char *end;

		if (k->kind == K_U32 ? (parse_u64(v, &x, &end) || *end) : parse_bytes(v, &x) != 0) {
			r = bad_value(L, k->kind == K_U32 ? "bad number" : "bad size", v);
			break;
		}
		if (x < k->min || x > k->max) {
			r = range_err(L, k, v, "");
			break;
		}
		if (dst && k->kind == K_U32)
			*(uint32_t *)dst = (uint32_t)x;
		else if (dst)
			*(uint64_t *)dst = x;
		break;
	}
	case K_CSV: {
		char **parts;
		size_t n;

		r = split_csv(v, (size_t)k->max, &parts, &n);
		if (r == -E2BIG) {
			char why[64];

			snprintf(why, sizeof(why), "more than %llu items in",
				 (unsigned long long)k->max);
			r = bad_value(L, why, v);
		}
		if (r)
			break;
		if (dst) {
			size_t *count = (size_t *)((char *)base + k->count_off);

			free_strv(*(char ***)dst, *count);
			*(char ***)dst = parts;
			*count = n;
		} else {
			free_strv(parts, n);
		}
		break;
	}
	case K_MODE:
		if (!strcasecmp(v, "AGENT_SENSOR"))
			r = bad_value(L, "mode not supported (only REGEX)", v);
		else if (strcasecmp(v, "REGEX"))
			r = bad_value(L, "unknown mode (REGEX)", v);
		break;
	default:
		r = bad(L, "internal: not a value");
		break;
	}
	free(v);
	return r;
}

/* Compiles one finder from its source strings and appends it. */
static int add_finder(struct loader *L, struct finder_src *s)
{
	struct rover_config *cfg = L->cfg;
	struct config_finder f = { 0 }, *nf;
	char terr[160], buf[84];
	struct {
		const char *key, *src;
		struct tmpl **dst;
	} t[] = {
		{ "service_name", s->service, &f.service_name },
		{ "instance_name", s->instance ? s->instance : "{{.Rover.HostIPV4 \"en0\"}}",
		  &f.instance_name },
		{ "process_name", s->process ? s->process : "{{.Process.ExeName}}",
		  &f.process_name },
		{ "labels", s->labels, &f.labels },
	};
	int r = -EINVAL;

	if (cfg->discovery.nfinders >= CONFIG_MAX_FINDERS) {
		set_err(L->err, L->errlen, "%s: more than %d finders", L->path, CONFIG_MAX_FINDERS);
		return -EINVAL;
	}
	if (!s->service) {
		set_err(L->err, L->errlen, "%s.service_name: required", L->path);
		return -EINVAL;
	}
	f.match_cmd_regex = s->regex ? s->regex : strdup("");
	s->regex = NULL;
	f.layer = s->layer ? s->layer : strdup("OS_LINUX");
	s->layer = NULL;
	if (!f.match_cmd_regex || !f.layer) {
		r = -ENOMEM;
		goto fail;
	}
	{
		char msg[160];

		f.re = procmatch__compile(f.match_cmd_regex, CONFIG_MAX_VALUE, msg, sizeof(msg));
		if (!f.re) {
			set_err(L->err, L->errlen, "%s.%s: bad regex '%s' (%s)", L->path,
				strstr(L->path, ".regex[") ? "match_cmd" : "match_cmd_regex",
				shown(f.match_cmd_regex, buf), msg);
			r = -EINVAL;
			goto fail;
		}
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!t[i].src)
			continue;
		*t[i].dst = tmpl__compile(t[i].src, terr, sizeof(terr));
		if (!*t[i].dst) {
			r = -errno;
			if (r != -ENOMEM)
				set_err(L->err, L->errlen, "%s.%s: bad template '%s' (%s)", L->path,
					t[i].key, shown(t[i].src, buf), terr);
			goto fail;
		}
	}
	nf = realloc(cfg->discovery.finders, (cfg->discovery.nfinders + 1) * sizeof(*nf));
	if (!nf) {
		r = -ENOMEM;
		goto fail;
	}
	cfg->discovery.finders = nf;
	nf[cfg->discovery.nfinders++] = f;
	return 0;
fail:
	free(f.match_cmd_regex);
	procmatch__free(f.re);
	free(f.layer);
	tmpl__free(f.service_name);
	tmpl__free(f.instance_name);
	tmpl__free(f.process_name);
	tmpl__free(f.labels);
	return r;
}

/* Compiles an active analyzer and appends it; an inactive one is dropped. */
static int add_analyzer(struct loader *L, struct analyzer_src *s)
{
	struct rover_config *cfg = L->cfg;
	struct config_analyzer a, *na;
	char what[32], why[256];
	int r;

	if (!s->active)
		return 0;
	r = build_analyzer(s, &a, what, sizeof(what), why, sizeof(why));
	if (r) {
		if (r == -EINVAL)
			set_err(L->err, L->errlen, "%s.%s: %s", L->path, what, why);
		return r;
	}
	na = realloc(cfg->discovery.analyzers, (cfg->discovery.nanalyzers + 1) * sizeof(*na));
	if (!na) {
		free_analyzer(&a);
		return -ENOMEM;
	}
	cfg->discovery.analyzers = na;
	na[cfg->discovery.nanalyzers++] = a;
	return 0;
}

static int walk_list(struct loader *L, const yaml_node_t *n, const struct key *k, void *base)
{
	size_t plen = strlen(L->path), count, max;
	char ***strv = field(base, k);
	int r = 0;

	if (n->type == YAML_SCALAR_NODE && is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE) {
		set_err(L->err, L->errlen, "%s: expected a list, not %s", L->path, node_kind(n));
		return -EINVAL;
	}
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	max = k->kind == K_FINDERS     ? CONFIG_MAX_FINDERS
	      : k->kind == K_ANALYZERS ? CONFIG_MAX_ANALYZERS
				       : (size_t)k->max;
	if (count > max) {
		set_err(L->err, L->errlen, "%s: more than %zu items", L->path, max);
		return -EINVAL;
	}
	/* A list given replaces the default one, even when empty. */
	if (k->kind == K_ANALYZERS)
		free_analyzers(L->cfg);
	if (k->kind == K_STRLIST && strv) {
		*strv = calloc(count ? count : 1, sizeof(char *));
		if (!*strv)
			return -ENOMEM;
	}
	for (size_t i = 0; i < count && !r; i++) {
		yaml_node_t *item = yaml_document_get_node(L->doc, n->data.sequence.items.start[i]);

		if (!item)
			return bad(L, "broken document");
		snprintf(L->path + plen, sizeof(L->path) - plen, "[%zu]", i);
		if (k->kind == K_STRLIST) {
			char *v;

			r = scalar_of(L, item, &v);
			if (!r && !v)
				r = bad(L, "empty");
			if (!r && strv)
				(*strv)[(*(size_t *)((char *)base + k->count_off))++] = v;
			else
				free(v);
		} else if (k->kind == K_ANALYZERS) {
			struct analyzer_src s = { 0 };

			r = walk_map(L, item, k->sub, &s);
			if (!r)
				r = add_analyzer(L, &s);
			free_analyzer_src(&s);
		} else {
			struct finder_src s = { 0 };

			r = walk_map(L, item, k->sub, &s);
			if (!r)
				r = add_finder(L, &s);
			free(s.regex);
			free(s.layer);
			free(s.service);
			free(s.instance);
			free(s.process);
			free(s.labels);
		}
	}
	L->path[plen] = '\0';
	return r;
}

static const struct key *find_key(const struct key *keys, const char *name, size_t len,
				  size_t *ret_index)
{
	for (size_t i = 0; keys[i].name; i++) {
		if (strlen(keys[i].name) == len && !strncasecmp(keys[i].name, name, len)) {
			*ret_index = i;
			return &keys[i];
		}
	}
	return NULL;
}

static int walk_map(struct loader *L, const yaml_node_t *n, const struct key *keys, void *base)
{
	size_t plen = strlen(L->path);
	uint64_t seen = 0;
	int r = 0;

	if (n->type == YAML_SCALAR_NODE && is_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE) {
		set_err(L->err, L->errlen, "%s: expected a mapping, not %s",
			*L->path ? L->path : "config", node_kind(n));
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top && !r;
	     p++) {
		yaml_node_t *kn = yaml_document_get_node(L->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
		const struct key *k;
		const char *name;
		size_t nlen, idx = 0;

		if (!kn || !vn)
			return bad(L, "broken document");
		if (kn->type != YAML_SCALAR_NODE) {
			set_err(L->err, L->errlen, "%s: a key that is %s",
				*L->path ? L->path : "config", node_kind(kn));
			r = -EINVAL;
			break;
		}
		name = (const char *)kn->data.scalar.value;
		nlen = kn->data.scalar.length;
		/* A key shown in a path is cut at 64 bytes, its control bytes replaced, an empty
		 * one shown as "". */
		if (nlen)
			snprintf(L->path + plen, sizeof(L->path) - plen, "%s%.*s", plen ? "." : "",
				 (int)(nlen > 64 ? 64 : nlen), name);
		else
			snprintf(L->path + plen, sizeof(L->path) - plen, "%s\"\"", plen ? "." : "");
		for (char *c = L->path + plen; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		k = memchr(name, '\0', nlen) ? NULL : find_key(keys, name, nlen, &idx);
		if (!k) {
			if (L->warn)
				L->warn(L->warn_ctx, L->path);
			continue;
		}
		if (seen & (1ULL << idx)) {
			r = bad(L, "defined twice");
			break;
		}
		seen |= 1ULL << idx;
		switch (k->kind) {
		case K_MAP:
			if (field(base, k))
				*(int *)field(base, k) = 1;
			r = walk_map(L, vn, k->sub, base);
			break;
		case K_FINDERS:
		case K_ANALYZERS:
		case K_STRLIST:
			r = walk_list(L, vn, k, base);
			break;
		default:
			r = set_scalar(L, vn, k, base);
			break;
		}
	}
	L->path[plen] = '\0';
	return r;
}

static void yaml_err(const yaml_parser_t *p, char *err, size_t errlen)
{
	set_err(err, errlen, "config: line %zu column %zu: %s%s%s",
		(size_t)p->problem_mark.line + 1, (size_t)p->problem_mark.column + 1,
		p->problem ? p->problem : "bad YAML", p->context ? " " : "",
		p->context ? p->context : "");
}

/* Syntax, depth, size and one document, before anything is built from the text. */
static int check_shape(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_event_t ev;
	size_t events = 0;
	int depth = 0, docs = 0, r = 0, done = 0;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (!done && !r) {
		if (!yaml_parser_parse(&p, &ev)) {
			r = p.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
			if (r == -EINVAL)
				yaml_err(&p, err, errlen);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				set_err(err, errlen, "config: more than one YAML document");
				r = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > CONFIG_MAX_DEPTH) {
				set_err(err, errlen, "config: nested deeper than %d",
					CONFIG_MAX_DEPTH);
				r = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		if (++events > CONFIG_MAX_EVENTS) {
			set_err(err, errlen, "config: more than %d YAML events", CONFIG_MAX_EVENTS);
			r = -EINVAL;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return r;
}

/*
 * The API server, when given, is a URL the supervisor can speak to; a plain-HTTP one (a
 * kubectl proxy, a test server) has no use for a CA, so ca_file becomes "" (the shipped file
 * writes the in-cluster path, which a host reaching a proxy does not have).
 */
static int check_kubernetes(struct loader *L)
{
	struct rover_config *cfg = L->cfg;
	const char *url = cfg->discovery.k8s_api_server;
	int http = !strncasecmp(url, "http://", 7);

	if (*url && ((!http && strncasecmp(url, "https://", 8)) || !url[http ? 7 : 8])) {
		snprintf(L->path, sizeof(L->path), "process_discovery.kubernetes.api_server");
		return bad_value(L, "not an http:// or https:// URL", url);
	}
	if (http && *cfg->discovery.k8s_ca_file) {
		char *none = strdup("");

		if (!none)
			return -ENOMEM;
		free(cfg->discovery.k8s_ca_file);
		cfg->discovery.k8s_ca_file = none;
	}
	return 0;
}

int config__load(const char *text, size_t len, struct rover_config *ret_cfg, char *err,
		 size_t errlen, config_warn_fn warn, void *warn_ctx,
		 const char *(*getenv_fn)(const char *name))
{
	struct loader L = { .err = err,
			    .errlen = errlen,
			    .warn = warn,
			    .warn_ctx = warn_ctx,
			    .getenv_fn = getenv_fn };
	struct rover_config cfg;
	yaml_parser_t p;
	yaml_document_t doc;
	yaml_node_t *root;
	int r;

	if (len > CONFIG_MAX_BYTES) {
		set_err(err, errlen, "config: larger than %u bytes", CONFIG_MAX_BYTES);
		return -EINVAL;
	}
	if (!text)
		len = 0;
	r = check_shape(text ? text : "", len, err, errlen);
	if (r)
		return r;
	r = config__defaults(&cfg);
	if (r)
		return r;
	if (!yaml_parser_initialize(&p)) {
		config__free(&cfg);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)(text ? text : ""), len);
	if (!yaml_parser_load(&p, &doc)) {
		r = p.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
		if (r == -EINVAL)
			yaml_err(&p, err, errlen);
		yaml_parser_delete(&p);
		config__free(&cfg);
		return r;
	}
	L.doc = &doc;
	L.cfg = &cfg;
	root = yaml_document_get_root_node(&doc);
	if (root)
		r = walk_map(&L, root, root_keys, &cfg);
	if (!r)
		r = check_kubernetes(&L);
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	if (r) {
		if (r == -ENOMEM)
			set_err(err, errlen, "config: out of memory");
		config__free(&cfg);
		return r;
	}
	*ret_cfg = cfg;
	return 0;
}

char *config__read_fd(int fd, size_t *ret_len)
{
	size_t len = 0, cap = 64 << 10;
	char *buf = malloc(cap + 1), *nb;

	if (!buf)
		return NULL;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap > CONFIG_MAX_BYTES)
				break;
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_MAX_BYTES)
			break;
	}
	if (len > CONFIG_MAX_BYTES) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}
