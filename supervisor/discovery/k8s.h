/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capabilities): the Kubernetes API client of pod discovery.
 * One thread of its own lists and then watches, per configured namespace (or all), the pods
 * of this node (fieldSelector spec.nodeName) and the services, over libcurl (TLS with the
 * cluster CA, the service-account token re-read at every request so that a rotated one is
 * picked up), and keeps what it learnt in a store that discovery reads. The owners of pods
 * (a ReplicaSet's Deployment, a Job's CronJob) are fetched once each, for .Pod.OwnerName.
 *
 * Nothing here blocks discovery or the backend: the thread holds the store's lock only to
 * apply a decoded event, and when the API server is away the store keeps the last state while
 * the thread retries (backoff 1 s doubling to 30 s). A watch that ends is resumed from its
 * resourceVersion; one whose version is gone (410) is replaced by a fresh list, whose end
 * removes what the list no longer has. Bounds: K8S_MAX_PODS pods, K8S_MAX_SERVICES services,
 * K8S_MAX_OWNERS owner records, a list page of K8S_MAX_BODY bytes, a watch line of
 * K8S_MAX_LINE bytes; what a bound refuses is counted in the stats and logged once.
 *
 * Memory, against the supervisor container's 64 Mi limit (deploy/kubernetes): whatever the API
 * server sends, the answers held at once take at most K8S_MAX_BUFFERED bytes, the one
 * document parsed at a time at most K8S_MAX_PARSE (k8sobj.h), the store K8S_MAX_STORE: 36 MiB
 * in all, beside the supervisor's own 23 MiB (its VmHWM with gRPC and libcurl loaded): 59. A
 * page over a bound is asked again with half the items; an event over one is dropped and the
 * state listed again.
 *
 * The service-account token goes only over TLS: an http:// api_server with a token_file is
 * refused at start (use token_file: "" for a local, token-less proxy).
 */
#ifndef ROVER_SUPERVISOR_K8S_H
#define ROVER_SUPERVISOR_K8S_H

#include <stddef.h>
#include <stdint.h>

#include "common/config/config.h"
#include "supervisor/discovery/k8sobj.h"

#define K8S_MAX_PODS 4096
#define K8S_MAX_SERVICES 20000
#define K8S_MAX_OWNERS 2048
/* One object is at most 1.5 MiB in etcd (--max-request-bytes), a little more as JSON: a list
 * page of one item, an event, a GET fit. */
#define K8S_MAX_BODY (4u << 20)
#define K8S_MAX_LINE (4u << 20)
#define K8S_MAX_BUFFERED (8u << 20) /* every transfer's buffer at once */
#define K8S_MAX_STORE (12u << 20)   /* the decoded pods and services held */
#define K8S_MAX_CHAIN 4		    /* owners walked up from a pod: ReplicaSet -> Deployment, ... */
#define K8S_PAGE 250		    /* items asked per list page */

struct k8s_client;

/* What discovery sees of one container, valid during the callback only. */
struct k8s_view {
	const struct k8s_pod *pod;
	const struct k8s_container *container;
	const char *service_name;	     /* the B2 choice, "" when no service selects the pod */
	struct k8s_kv owners[K8S_MAX_CHAIN]; /* (kind, name), nearest first */
	int nowners;
};

struct k8s_stats {
	uint64_t requests, lists, watches, events, relists, errors;
	uint64_t bad_objects;	/* objects refused by the decoder (k8sobj.h) */
	uint64_t refused;	/* objects over the store's bounds */
	uint64_t lines_skipped; /* watch lines over K8S_MAX_LINE or the buffers' bound */
	uint64_t too_large;	/* answers over K8S_MAX_BODY, K8S_MAX_BUFFERED or K8S_MAX_PARSE */
	uint64_t unauthorized;	/* 401/403 answers */
	int pods, services, owners;
	int synced; /* every list has completed once */
};

/*
 * Reads the settings (process_discovery.kubernetes.*; in-cluster: KUBERNETES_SERVICE_HOST and
 * _PORT) and prepares libcurl. Call before the sandbox: it makes the sockets and state libcurl
 * needs then. NULL with err set when the settings cannot work (no API server to talk to).
 */
struct k8s_client *k8s__new(const struct rover_config *cfg, const char *host_name, char *err,
			    size_t errlen);
/* Starts the thread. 0 or -errno. */
int k8s__start(struct k8s_client *k);
void k8s__free(struct k8s_client *k);

/* Bumped by every change of the store: discovery renders entities again when it moves. */
uint64_t k8s__generation(struct k8s_client *k);

/*
 * Calls fn with the container a cgroup names (k8sobj__cgroup_ids): the one whose id (runtime
 * prefix stripped) is c->id, of the pod whose uid is c->pod (k8sobj__pod_is), under the
 * store's lock (fn must not block). Returns 1 when one was found, 0 when not.
 */
int k8s__with_container(struct k8s_client *k, const struct k8s_cgroup_id *c,
			void (*fn)(void *arg, const struct k8s_view *v), void *arg);

void k8s__stats(struct k8s_client *k, struct k8s_stats *ret);

#endif
