/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes for integration tests: the fake API server (tests/kube/fake_kube_api.py,
 * tests/kube/README.md) started, driven and stopped; Pod, Service, owner and Node objects
 * built from C structs; and test processes started inside cgroups named as kubelet and a
 * container runtime name them, so that discovery finds them as it would a pod's containers.
 * tests/integration/test_kube_fake.c shows each at work. Everything binds 127.0.0.1, every
 * wait is bounded, every process is stopped by pid. Functions return 0 (or a count, a
 * resourceVersion) or a negative errno and do not assert.
 */
#ifndef ROVER_TESTS_KUBE_HARNESS_H
#define ROVER_TESTS_KUBE_HARNESS_H

#include <json-c/json.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * The fake API server. Its files live in dir:
 *   serviceaccount/          laid out as kubelet lays out a projected service-account volume
 *                            (/var/run/secrets/kubernetes.io/serviceaccount): token, ca.crt
 *                            (with TLS) and namespace ("rover") are symbolic links into
 *                            ..data/, a link to a timestamped directory that a rotation
 *                            replaces with one rename; every file world-readable (a client
 *                            may run as the rover user)
 *   ca.pem ca.key            the CA (with TLS); serviceaccount/ca.crt is a copy of ca.pem
 *   server.pem server.key    the server's certificate, signed by the CA, for localhost,
 *                            127.0.0.1 and kubernetes.default.svc
 *   kube.port kube.log       its port, its stderr (one line per request)
 *   kube.state.json          what kube_api_restart carries over
 */
struct kube_api {
	pid_t pid;
	int port;
	int tls;
	char url[64]; /* https://127.0.0.1:PORT, or http:// without TLS */
	char dir[256];
	char sa_dir[300];     /* dir/serviceaccount */
	char token_path[320]; /* sa_dir/token: what the fake checks at every request */
	char ca_path[320];    /* sa_dir/ca.crt: the CA a client trusts ("" without TLS) */
	char log_path[320];
	char token[128]; /* the token in force */
};

/* Starts the fake in dir (which exists; made 0755, so that a supervisor running as the rover
 * user reaches serviceaccount/) on 127.0.0.1:port (0: a free one), requiring the
 * bearer token "token-1", over TLS with a CA of its own when tls (else plain HTTP). Returns
 * once it listens; the pid is tracked (oap_harness.h track), so a failed test does not leave
 * it. 0 or -errno (its log on stderr). */
int kube_api_start(const char *dir, int port, int tls, struct kube_api *ret);
/* SIGTERM, SIGKILL after 5 s; reaps it. Keeps dir. Accepts a stopped one. */
void kube_api_stop(struct kube_api *k);
/* Stops it and starts it again on the same port with the same objects, resourceVersion,
 * token and certificate (the events before the restart are gone: a watch from an older
 * resourceVersion gets 410). In between, connections are refused: the API server down for
 * real. 0 or -errno. */
int kube_api_restart(struct kube_api *k);
/* The two halves of a restart: down (its state kept in dir) for as long as a test wants,
 * then up again on the same port. 0 or -errno. */
int kube_api_down(struct kube_api *k);
int kube_api_up(struct kube_api *k);
/* Rotates the token as kubelet rotates a projected one: a new timestamped directory, then
 * ..data renamed over it. From then on the fake answers 401 to the old token. 0 or -errno. */
int kube_api_set_token(struct kube_api *k, const char *token);

/*
 * Control: POST /_control on the same port, plain HTTP even with TLS, no token; the commands
 * are in tests/kube/README.md. kube_api_control returns the HTTP status (200, or 400 and 404
 * with {"error": ...}) or -errno; *ret (may be NULL) gets the answer, a new reference.
 */
int kube_api_control(const struct kube_api *k, struct json_object *cmd, struct json_object **ret);
/* Creates or replaces obj (a Pod, Service, ReplicaSet, Deployment, Job or Node: ADDED or
 * MODIFIED by existence). Takes obj's reference. The resourceVersion it got, or -errno. */
long kube_api_put(const struct kube_api *k, struct json_object *obj);
/* Deletes kind ns/name (ns ignored for a Node). The resourceVersion of the deletion, -ENOENT
 * when there was none, or -errno. */
long kube_api_delete(const struct kube_api *k, const char *kind, const char *ns, const char *name);
/* From now on a watch or continue token from an older resourceVersion gets 410 Expired. The
 * resourceVersion compacted at, or -errno. */
long kube_api_compact(const struct kube_api *k);
/* A BOOKMARK to every open watch that allowed them. The number of open watches, or -errno. */
int kube_api_bookmark(const struct kube_api *k);
/* Closes every open watch stream abruptly (no last chunk). How many, or -errno. */
int kube_api_drop_watches(const struct kube_api *k);
/* The next count answers (target "response": lists and gets; "watch": watch lines; "any")
 * are garbage of mode "json" (not JSON), "types" (fields of the wrong JSON types) or "huge"
 * (an object with 8 MiB of labels). 0 or -errno. */
int kube_api_garbage(const struct kube_api *k, const char *mode, int count, const char *target);
/* The same with bytes for "huge" (its labels) and "dense" (an object whose spec holds that
 * many bytes of empty objects, "{},{},...": cheap to send, dear to parse). */
int kube_api_garbage_bytes(const struct kube_api *k, const char *mode, int count,
			   const char *target, long bytes);
/* mode "reset": every API request has its connection closed unanswered, "503": answered 503;
 * both drop the open watches. NULL ends the outage. 0 or -errno. */
int kube_api_outage(const struct kube_api *k, const char *mode);
/* The status answer (resourceVersion, requests by "get nodes", "list pods", "watch services"
 * ..., open_watches by resource, unauthorized, tokens, recent requests). A new reference or
 * NULL. */
struct json_object *kube_api_status(const struct kube_api *k);
/* The requests counted under what ("list pods", "watch pods", "get nodes", ...), or -errno. */
long kube_api_requests(const struct kube_api *k, const char *what);
/* Requests that presented token (whatever the answer), or -errno. */
long kube_api_token_uses(const struct kube_api *k, const char *token);
/* Waits up to timeout_ms until at least n watches of resource ("pods") are open. 0 or
 * -ETIMEDOUT. */
int kube_api_wait_watches(const struct kube_api *k, const char *resource, int n, int timeout_ms);

/*
 * A client for tests of the fake itself: curl(1) with the token and the CA (k->ca_path, or
 * cafile when not NULL) as an in-cluster client uses them. Returns curl's exit status (0: an
 * HTTP answer came; 60: the certificate was refused; 7: refused ...) or -errno; the HTTP
 * status in *ret_code, the body in *ret_body (malloc'd; ret_body may be NULL).
 */
int kube_api_get(const struct kube_api *k, const char *path, const char *token, const char *cafile,
		 int *ret_code, char **ret_body);
/* The same for a watch with the token in force, in the background, the stream's bytes into
 * out_path. Its pid, or -1. */
pid_t kube_api_watch_spawn(const struct kube_api *k, const char *path, const char *out_path);
/* The lines of a watch stream, each parsed (a line that is not JSON is left out). */
struct json_object **kube_watch_events(const char *out_path, size_t *ret_n);
void kube_watch_events_free(struct json_object **ev, size_t n);

/*
 * Objects as the API server returns them. Arrays end with a zeroed entry; a string left NULL
 * is left out of the object.
 */
enum kube_runtime {
	KUBE_RT_CONTAINERD, /* status containerID "containerd://<id>" */
	KUBE_RT_CRIO,	    /* "cri-o://<id>" */
	KUBE_RT_DOCKER,	    /* "docker://<id>" */
};
const char *kube_runtime_prefix(enum kube_runtime rt);

struct kube_env {
	const char *name;
	const char *value; /* NULL: valueFrom a fieldRef (metadata.name), which has no literal */
};

struct kube_container {
	const char *name;
	const char *image;	    /* NULL: "registry.example/app:1" */
	const struct kube_env *env; /* may be NULL */
	const char *id;		    /* 64 hex digits; NULL: no status yet (not started) */
	enum kube_runtime runtime;  /* the prefix of the status's containerID */
	int init;		    /* in spec.initContainers and initContainerStatuses */
};

struct kube_owner {
	const char *kind; /* ReplicaSet, Deployment, Job, StatefulSet, DaemonSet ... */
	const char *name;
	const char *uid; /* NULL: a fresh one */
	int controller;	 /* 1: "controller": true, -1: false, 0: no such field */
};

struct kube_pod {
	const char *name;
	const char *ns;		   /* NULL: default */
	const char *uid;	   /* NULL: the fake makes one (keeps an existing one) */
	const char *node;	   /* spec.nodeName */
	const char *const *labels; /* "key=value", NULL-ended; may be NULL */
	const struct kube_container *containers;
	const char *pod_ip;		 /* status.podIP (and podIPs) */
	const char *host_ip;		 /* status.hostIP */
	const char *phase;		 /* NULL: Running */
	const struct kube_owner *owners; /* metadata.ownerReferences; may be NULL */
};
struct json_object *kube_pod_json(const struct kube_pod *p);

struct kube_service {
	const char *name;
	const char *ns; /* NULL: default */
	const char *uid;
	const char *const *selector; /* "key=value", NULL-ended; NULL: no selector */
	const char *cluster_ip;	     /* NULL: 10.96.0.10 */
};
struct json_object *kube_service_json(const struct kube_service *s);

/* A ReplicaSet, Deployment or Job ns/name, owned by owner (may be NULL): owner chains. */
struct json_object *kube_owned_json(const char *kind, const char *ns, const char *name,
				    const char *uid, const struct kube_owner *owner);
/* A Node with its InternalIP address (may be NULL). */
struct json_object *kube_node_json(const char *name, const char *internal_ip);

/* A fresh pod uid (8-4-4-4-12 hex) and a fresh container id (64 hex digits). */
void kube_random_uid(char ret[37]);
void kube_random_id(char ret[65]);

/*
 * Containers as host processes. kubelet makes the pod's cgroup, the runtime the container's
 * inside it; a process of the container has that path on its /proc/PID/cgroup lines.
 * Burstable QoS class:
 *
 *   KUBE_CONTAINERD_SYSTEMD (containerd, systemd cgroup driver)
 *     /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid, '-' -> '_'>.slice/cri-containerd-<id>.scope
 *   KUBE_CRIO_SYSTEMD (CRI-O, systemd driver): the container, and its conmon in a sibling
 *     .../kubepods-burstable-pod<uid_>.slice/crio-<id>.scope
 *     .../kubepods-burstable-pod<uid_>.slice/crio-conmon-<id>.scope  (kube_conmon_pid: no container's)
 *   KUBE_DOCKER_SYSTEMD (dockerd or cri-dockerd, systemd driver)
 *     .../kubepods-burstable-pod<uid_>.slice/docker-<id>.scope
 *   KUBE_CGROUPFS (any runtime, cgroupfs driver)
 *     /kubepods/burstable/pod<uid>/<id>
 *
 * By default the process is placed in the v2 hierarchy (/sys/fs/cgroup/unified on this
 * hybrid machine, /sys/fs/cgroup on a pure v2 one); or-ed with KUBE_V1, in the v1 hierarchies
 * name=systemd and pids instead (never memory or cpu: the machine's own accounting lives
 * there). /proc/PID/cgroup then reads, on this machine (Linux 6.18, hybrid; the other lines
 * "/" as for every process here; uid 0d6c2c52-8a3f-4a4b-9c1e-5a1f0c9e7b21):
 *
 *   KUBE_CONTAINERD_SYSTEMD:
 *     0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d6c2c52_8a3f_4a4b_9c1e_5a1f0c9e7b21.slice/cri-containerd-<id>.scope
 *   KUBE_CRIO_SYSTEMD:
 *     0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d6c2c52_8a3f_4a4b_9c1e_5a1f0c9e7b21.slice/crio-<id>.scope
 *     (its conmon: 0::/kubepods.slice/.../kubepods-burstable-pod0d6c2c52_..._7b21.slice/crio-conmon-<id>.scope)
 *   KUBE_DOCKER_SYSTEMD:
 *     0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d6c2c52_8a3f_4a4b_9c1e_5a1f0c9e7b21.slice/docker-<id>.scope
 *   KUBE_CGROUPFS:
 *     0::/kubepods/burstable/pod0d6c2c52-8a3f-4a4b-9c1e-5a1f0c9e7b21/<id>
 *   KUBE_V1 | KUBE_CONTAINERD_SYSTEMD (the other layouts alike, with their paths):
 *     9:name=systemd:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d6c2c52_8a3f_4a4b_9c1e_5a1f0c9e7b21.slice/cri-containerd-<id>.scope
 *     8:pids:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d6c2c52_8a3f_4a4b_9c1e_5a1f0c9e7b21.slice/cri-containerd-<id>.scope
 *     0::/
 *   KUBE_V1 | KUBE_CGROUPFS:
 *     9:name=systemd:/kubepods/burstable/pod0d6c2c52-8a3f-4a4b-9c1e-5a1f0c9e7b21/<id>
 *     8:pids:/kubepods/burstable/pod0d6c2c52-8a3f-4a4b-9c1e-5a1f0c9e7b21/<id>
 *     0::/
 *
 * (kube_fake::cgroup_layouts checks each of these lines.)
 */
enum kube_layout {
	KUBE_CONTAINERD_SYSTEMD,
	KUBE_CRIO_SYSTEMD,
	KUBE_DOCKER_SYSTEMD,
	KUBE_CGROUPFS,
	KUBE_V1 = 0x10, /* or-ed with one of the above */
};
/* The runtime whose containerID prefix goes with a layout (containerd for cgroupfs). */
enum kube_runtime kube_layout_runtime(enum kube_layout layout);
/* The container's cgroup path as /proc/PID/cgroup shows it ("/kubepods.slice/..."). 0 or
 * -ENAMETOOLONG. */
int kube_cgroup_path(enum kube_layout layout, const char *pod_uid, const char *container_id,
		     char *buf, size_t len);
/* Makes the cgroups and runs argv (argv[0] a path) in the container's, with SIGKILL as its
 * parent-death signal; for CRI-O a conmon stand-in (sleep) in its sibling first. Returns the
 * container process's pid once it is in its cgroup and has exec'd, or -1 with errno set
 * (ENOENT: no such hierarchy here, for a test to skip on). */
pid_t kube_spawn_in_cgroup(enum kube_layout layout, const char *pod_uid, const char *container_id,
			   char *const argv[]);
/* The same in a cgroup the container made below its own: below is a relative path
 * ("evil/cri-containerd-<id>.scope"), as a container that can write its cgroupfs makes. */
pid_t kube_spawn_below(enum kube_layout layout, const char *pod_uid, const char *container_id,
		       const char *below, char *const argv[]);
/* The CRI-O conmon process next to container process pid; 0 when it has none. */
pid_t kube_conmon_pid(pid_t pid);
/* Kills container process pid, whatever else is in its cgroup, and its conmon; reaps them;
 * removes the container's cgroups and the pod's and QoS class's once nothing else is in them.
 * 0 or -errno. */
int kube_container_kill(pid_t pid);
/* kube_container_kill for every container process still running; then removes the empty
 * cgroups under kubepods.slice and kubepods left by an earlier run (made over a minute ago: a
 * concurrent run's fresh ones are left alone; a populated one is named on stderr, not
 * touched). */
void kube_cgroups_cleanup(void);

#endif
