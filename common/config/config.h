/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's config file: the upstream SkyWalking Rover YAML format (libyaml), with
 * ${ENV_NAME:default} replaced from the environment in any value. Loaded by the launcher to
 * check it and find the files only root may read (TLS keys) before anything starts, and again
 * by the supervisor and the shipper from the bytes the launcher hands them. Keys, defaults and
 * meaning: configs/rover_configs.yaml and ../shared/reference/rover-behaviour.md.
 */
#ifndef ROVER_COMMON_CONFIG_H
#define ROVER_COMMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/config/template.h"

#define CONFIG_MAX_BYTES (1u << 20) /* a config file larger than this is refused */
#define CONFIG_MAX_FINDERS 64
#define CONFIG_MAX_ANALYZERS 64
#define CONFIG_MAX_FILTERS 64	  /* of one analyzer */
#define CONFIG_MAX_NAMESPACES 256 /* the supervisor watches each one */

/* One plain-host discovery rule: a process whose command line matches becomes an entity. */
struct config_finder {
	char *match_cmd_regex; /* PCRE2 (close to Go's RE2 syntax), as written */
	void *re;	       /* pcre2_code *, compiled */
	char *layer;	       /* plain string, default OS_LINUX */
	struct tmpl *service_name, *instance_name, *process_name;
	struct tmpl *labels; /* renders to a comma-separated list; NULL: none */
};

/*
 * One Kubernetes analyzer (process_discovery.kubernetes.analyzers[]): a process in a pod's
 * container for which every filter is true becomes an entity named by the templates. Only
 * active analyzers are kept (active is always 1); an inactive one is checked for the types of
 * its values and dropped.
 */
struct config_analyzer {
	int active;
	struct tmpl **filters; /* tmpl__compile_filter(); all must be true, none: every process */
	size_t nfilters;
	char *layer;						  /* plain string, required */
	struct tmpl *service_name, *instance_name, *process_name; /* TMPL_K8S_ENTITY, required */
	char **labels; /* the comma list, each trimmed, empty ones dropped */
	size_t nlabels;
};

struct rover_config {
	char *logger_level; /* INFO */
	char *cluster_name; /* "" */

	struct {
		char *addr; /* localhost:11800 */
		int enable_tls;
		char *client_pem_path, *client_key_path, *ca_pem_path;
		int insecure_skip_verify;
		uint64_t check_period_ms; /* 5 s */
		char *authentication;
		/* Ours (not upstream): where uploads wait while the backend is away. */
		char *spool_dir;	     /* "" : memory only */
		uint64_t spool_memory_bytes; /* 16 MiB */
		uint64_t spool_disk_bytes;   /* 256 MiB */
		uint64_t call_timeout_ms;    /* 10 s: deadline of every call */
	} backend;

	struct {
		int present;			   /* the process_discovery module is configured */
		uint64_t heartbeat_period_ms;	   /* 20 s */
		uint32_t properties_report_period; /* 10 */
		int vm_active;			   /* 1 */
		uint64_t scan_period_ms;	   /* 3 s */
		struct config_finder *finders;
		size_t nfinders;
		/* process_discovery.kubernetes */
		int k8s_active; /* 0 (upstream's file says true, which fails on a plain host) */
		char *k8s_node_name;   /* "" */
		char **k8s_namespaces; /* comma list, trimmed, empty ones dropped; none: all */
		size_t k8s_nnamespaces;
		/* Absent key: the three upstream ships (MESH_DP, MESH, K8S_SERVICE). */
		struct config_analyzer *analyzers;
		size_t nanalyzers;
		/* Ours, for a cluster reached from outside (tests, kubectl-proxy-like setups). */
		char *k8s_api_server; /* "": in-cluster, https://$KUBERNETES_SERVICE_HOST:PORT */
		char *k8s_token_file; /* /var/run/secrets/kubernetes.io/serviceaccount/token */
		char *k8s_ca_file;    /* .../serviceaccount/ca.crt; always "" when api_server is
				       * http:// */
	} discovery;

	struct {
		int active;		       /* 1 */
		uint64_t check_interval_ms;    /* 10 s */
		uint64_t flush_interval_ms;    /* 5 s */
		uint64_t max_task_duration_ms; /* 1 h: longer backend tasks are cut (ours) */
		uint64_t symbol_cache_bytes;   /* 64 MiB: the shipper's symbol tables (ours) */
		uint64_t dump_period_us;       /* 9 ms */
		uint64_t network_report_interval_ms;   /* 2 s */
		char *network_meter_prefix;	       /* rover_net_p */
		uint32_t network_attach;	       /* enum attach_pref; auto */
		char *continuous_meter_prefix;	       /* rover_con_p */
		uint64_t continuous_fetch_interval_ms; /* 1 s */
		uint64_t continuous_check_interval_ms; /* 5 s */
		uint64_t trigger_execute_duration_ms;  /* 10 m */
		uint64_t trigger_silence_duration_ms;  /* 20 m */
	} profiling;

	/* access_log (docs/access-log.md), as upstream writes it. */
	struct {
		int active;		   /* 0 */
		char **exclude_namespaces; /* istio-system,cert-manager,kube-system */
		size_t nexclude_namespaces;
		char *exclude_cluster;	  /* "" */
		uint32_t flush_max_count; /* 10000 */
		uint64_t flush_period_ms; /* 5 s */
		uint32_t queue_size;	  /* connection_analyze.queue_size: 2000 */
	} access_log;
};

/* Called once per unknown key with its dotted path, e.g. "core.backend.adr". */
typedef void (*config_warn_fn)(void *ctx, const char *msg);

/* All defaults, as if an empty file had been loaded. 0 or -ENOMEM. */
int config__defaults(struct rover_config *ret_cfg);

/*
 * Parses text (len bytes, need not be NUL-terminated). 0, or -EINVAL with err naming the key
 * and the value ("profiling.check_interval: bad duration 'ten'"), or -ENOMEM. Unknown keys are
 * passed to warn (may be NULL) and otherwise ignored. ret_cfg is not written on failure.
 * getenv_fn resolves ${NAME:default}; NULL means getenv.
 */
int config__load(const char *text, size_t len, struct rover_config *ret_cfg, char *err,
		 size_t errlen, config_warn_fn warn, void *warn_ctx,
		 const char *(*getenv_fn)(const char *name));
void config__free(struct rover_config *cfg);

/* Reads a whole file (at most CONFIG_MAX_BYTES) from an fd. NULL with errno set. */
char *config__read_fd(int fd, size_t *ret_len);

#endif
