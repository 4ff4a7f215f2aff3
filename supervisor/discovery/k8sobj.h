/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capabilities): the Kubernetes API's JSON, decoded into what
 * discovery needs and nothing more. Every object comes from the API server, which we trust to
 * be who it says (TLS with the cluster CA) but not to be well-formed or small: each field is
 * type-checked, each string and list is bounded, and an object that breaks a bound is an
 * error naming the field, never a crash and never a truncation that could change a match.
 *
 * The shapes read (core/v1 and the owner kinds of apps/v1, batch/v1):
 *   Pod:      metadata.{uid,name,namespace,resourceVersion,labels,ownerReferences},
 *             spec.{nodeName,containers[].{name,env[].{name,value}}},
 *             status.{podIP,hostIP,containerStatuses[].{name,containerID}}
 *   Service:  metadata.{name,namespace,resourceVersion}, spec.selector
 *   owners:   metadata.{name,namespace,ownerReferences} of a ReplicaSet or a Job
 *   lists:    metadata.{resourceVersion,continue}, items[]
 *   watch:    one JSON object per line {"type": ..., "object": ...}; ERROR carries a Status
 */
#ifndef ROVER_SUPERVISOR_K8SOBJ_H
#define ROVER_SUPERVISOR_K8SOBJ_H

#include <stddef.h>

#include <json-c/json.h>

/* Bounds: the API server's own limits where it has one, else well above real objects. */
#define K8S_NAME_MAX 253   /* DNS subdomain: names, namespaces, label keys with prefix */
#define K8S_VALUE_MAX 4096 /* label values are <= 63; a longer env value is left out */
#define K8S_ID_MAX 256	   /* uid, resourceVersion, containerID, IPs */
#define K8S_MAX_LABELS 128
#define K8S_MAX_CONTAINERS 64
#define K8S_MAX_ENV 256
#define K8S_MAX_OWNER_REFS 16
#define K8S_MAX_SELECTOR 64
#define K8S_DEPTH_MAX 64 /* JSON nesting the parser accepts */
/*
 * What json-c may allocate for one document, estimated from its bytes before it is parsed
 * (k8sobj__parse_cost). json-c's tree is far larger than its text: an empty object is a
 * 16-entry hash table (792 bytes measured with json-c 0.16), so 3 MiB of "{}," would take
 * 800 MB. The estimate is above what json-c took for each shape tried (1.15-2.5 times); a
 * pod with the managedFields kubelet and the controllers write costs about 130 KiB (90 KiB
 * taken), so a node's 110 pods are one page, and k8s.c halves a page over the bound. The
 * supervisor container's 64 Mi limit holds this beside the buffers and the store (k8s.h).
 */
#define K8S_MAX_PARSE (16u << 20)

struct k8s_kv {
	char *key, *value;
};

struct k8s_container {
	char *name;
	char *id; /* status.containerID as given ("containerd://<hex>"), "" before it runs */
	/* Literal values only (valueFrom is not a value), spec order; a value longer than
	 * K8S_VALUE_MAX is left out (EnvValue does not see it) rather than cut. */
	struct k8s_kv *env;
	int nenv;
};

struct k8s_pod {
	char *uid, *name, *ns, *node, *ip, *host_ip, *rv; /* ip: status.podIP, host_ip: .hostIP */
	/* A static pod's mirror: the uid kubelet gave the pod from its manifest (annotation
	 * kubernetes.io/config.mirror), the one its cgroup is named after; "" for others. */
	char *mirror_uid;
	struct k8s_kv *labels;
	int nlabels;
	struct k8s_container *containers; /* spec.containers, statuses joined by name */
	int ncontainers;
	struct k8s_kv *owners; /* (kind, name) of ownerReferences not marked controller: false */
	int nowners;
};

struct k8s_service {
	char *name, *ns, *rv;
	struct k8s_kv *selector; /* empty: selects nothing (as upstream) */
	int nselector;
};

enum k8s_event_type {
	K8S_ADDED,
	K8S_MODIFIED,
	K8S_DELETED,
	K8S_BOOKMARK,
	K8S_ERROR,
};

/*
 * Parses len bytes as one JSON document (bounded depth, and refused unparsed when its cost is
 * over K8S_MAX_PARSE). NULL with err set; *ret_big (may be NULL) says it was the cost.
 */
struct json_object *k8sobj__parse(const char *text, size_t len, int *ret_big, char *err,
				  size_t errlen);
/* An upper bound of the bytes json-c allocates to parse text (its tree and the tokener's
 * buffer), from the counts of its brackets, separators and string bytes. */
size_t k8sobj__parse_cost(const char *text, size_t len);

/* Decoders: 0, or -EINVAL/-E2BIG/-ENOMEM with err naming the field. ret is zeroed first and
 * left empty on failure. Free with the matching _free (safe on a zeroed struct). */
int k8sobj__pod(struct json_object *o, struct k8s_pod *ret, char *err, size_t errlen);
void k8sobj__pod_free(struct k8s_pod *p);
int k8sobj__service(struct json_object *o, struct k8s_service *ret, char *err, size_t errlen);
void k8sobj__service_free(struct k8s_service *s);

/* The controller of an owner object (a ReplicaSet's Deployment): kind and name into the
 * buffers, "" when it has none. 0 or -errno. */
int k8sobj__controller(struct json_object *o, char *kind, size_t kindlen, char *name,
		       size_t namelen, char *err, size_t errlen);

/* A list: its items (borrowed from o), resourceVersion and continue token ("" when last). */
int k8sobj__list(struct json_object *o, struct json_object **ret_items, char *rv, size_t rvlen,
		 char *cont, size_t contlen, char *err, size_t errlen);

/*
 * A watch event. *ret_obj is borrowed from o. For BOOKMARK, rv gets the new resourceVersion;
 * for ERROR, *ret_code the Status code (410: the version is gone, relist) or 0.
 */
int k8sobj__event(struct json_object *o, enum k8s_event_type *ret_type,
		  struct json_object **ret_obj, char *rv, size_t rvlen, int *ret_code, char *err,
		  size_t errlen);

/* Strips a runtime prefix ("containerd://", "cri-o://", "docker://", "dockerd://", or any
 * "<scheme>://") from a containerID: the id as the cgroup path names it. */
const char *k8sobj__bare_id(const char *container_id);

/* The B2 rule: does the service's selector (non-empty) match these labels? */
int k8sobj__selects(const struct k8s_service *s, const struct k8s_kv *labels, int nlabels);

/* A container as its cgroup names it: the pod's uid ('_' of systemd slice names read as '-')
 * and the container's id. */
#define K8S_POD_UID_MAX 64
struct k8s_cgroup_id {
	char pod[K8S_POD_UID_MAX + 1];
	char id[80];
};

/*
 * The containers a /proc/PID/cgroup text names, each line read as kubelet lays its tree out
 * (docs/kubernetes.md, "How it works"):
 *   systemd driver  kubepods.slice/[kubepods-<qos>.slice/]kubepods[-<qos>]-pod<uid>.slice/
 *                   {cri-containerd,crio,docker}-<id>.scope
 *   cgroupfs driver kubepods/[burstable|besteffort/]pod<uid>/{<id>,crio-<id>}
 * The container is the segment right below the pod's, at kubelet's depth: what lies under it
 * (CRI-O's "container" subgroup, or a delegated tree a container made for itself, whatever
 * it names its cgroups) is the same container. A path from the root must start at kubepods;
 * one under a cgroup namespace (the supervisor's container), "/../../<below our common
 * ancestor>", is read from the first segment after the "..": it starts at a level of
 * kubelet's tree (kubepods, a QoS class or a pod), since the common ancestor is kubelet's
 * when the reader is a pod's container; a path without a pod segment (another container of
 * the reader's own pod) names none. At most max entries into ids; returns how many.
 */
int k8sobj__cgroup_ids(const char *text, struct k8s_cgroup_id *ids, int max);

/* Is the pod uid of a cgroup (k8s_cgroup_id.pod) the API server's pod p? Its uid, or for a
 * static pod's mirror the uid of the pod kubelet runs. */
int k8sobj__pod_is(const struct k8s_pod *p, const char *cgroup_pod_uid);

#endif
