// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/log.h"
#include "supervisor/discovery/k8s.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define CONNECT_TIMEOUT_MS 5000
#define LIST_TIMEOUT_MS 60000
#define GET_TIMEOUT_MS 15000
#define NODE_RECHECK_MS 30000
#define OWNER_RETRY_MS 60000
#define TOKEN_MAX 16384

enum res { RES_PODS, RES_SERVICES };
enum wstate { W_WAIT, W_LIST, W_WATCH };

struct xfer {
	struct k8s_client *k;
	CURL *h;
	struct curl_slist *hdrs;
	char *buf;
	size_t len, cap, max;
	int lines;    /* watch: each complete line is an event, handled as it comes */
	int skipping; /* the current line passed K8S_MAX_LINE: dropped up to its newline */
	int over;     /* the answer passed max (1) or the buffers' bound (2): refused */
	int busy;
	char errbuf[CURL_ERROR_SIZE];
};

struct kw {
	struct k8s_client *k;
	enum res res;
	char ns[K8S_NAME_MAX + 1]; /* "" : every namespace */
	enum wstate state;
	char rv[K8S_ID_MAX + 1];
	char *cont;    /* the next page's continue token, NULL at a list's start */
	uint32_t mark; /* the list being made: items it gave carry it */
	int relist;    /* the watch ended in a way that needs a fresh list */
	int page;      /* items asked per page (halved when a page is too large) */
	uint64_t due_ms, backoff_ms;
	int failing; /* the last request failed: one log line per change */
	int synced;
	struct xfer x;
};

struct pod_entry {
	struct k8s_pod p;
	uint32_t mark;
	size_t bytes; /* what it holds (pod_bytes) */
};

struct svc_entry {
	struct k8s_service s;
	uint32_t mark;
	size_t bytes;
};

struct owner_entry {
	char ns[K8S_NAME_MAX + 1], kind[64], name[K8S_NAME_MAX + 1];
	char pkind[64], pname[K8S_NAME_MAX + 1]; /* its controller, "" : none */
	int state;				 /* 0 pending, 1 known, -1 failed */
	uint64_t retry_ms;
};

struct k8s_client {
	const struct rover_config *cfg;
	char base[512]; /* https://host:port, no trailing slash */
	int tls;	/* base is https: the only scheme a token goes over */
	char node[K8S_NAME_MAX + 1];
	char token_file[512], ca_file[512];
	char token[TOKEN_MAX];
	int token_state; /* 0 unknown, 1 read, -1 unreadable: logged on change */

	CURLM *multi;
	pthread_t thread;
	int started;
	volatile int stop;

	struct kw *ws;
	int nws;
	struct xfer node_x, owner_x;
	int node_state; /* 0 unknown, 1 found, -1 missing/failing */
	uint64_t node_due;
	struct owner_entry *owner_busy;

	pthread_mutex_t lock; /* the store below and the stats */
	struct pod_entry *pods;
	int npods;
	struct svc_entry *svcs;
	int nsvcs;
	struct owner_entry *owners;
	int nowners;
	uint64_t generation;
	struct k8s_stats st;
	int logged_refused;
	struct k8s_stats said; /* the drops last said in the log */
	size_t buffered;       /* bytes of every xfer's buffer (the k8s thread's alone) */
	size_t store_bytes;    /* bytes of the store's pods and services (under lock) */
	uint64_t said_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- settings ---- */

static int read_token(struct k8s_client *k)
{
	char buf[TOKEN_MAX];
	int fd;
	ssize_t n = -1;
	size_t len;

	/* No token_file (a token-less proxy), or plain http: no token, nothing read. */
	if (!k->token_file[0] || !k->tls) {
		k->token[0] = 0;
		k->token_state = 0;
		return -1;
	}
	fd = open(k->token_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n < 0) {
		if (k->token_state != -1)
			log_warn("kubernetes: token %s unreadable (%s): requests go without one",
				 k->token_file, strerror(errno));
		k->token_state = -1;
		k->token[0] = 0;
		return -1;
	}
	len = (size_t)n;
	while (len && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] < 0x21 || buf[i] > 0x7e) {
			if (k->token_state != -1)
				log_warn("kubernetes: token %s holds bytes a header cannot carry",
					 k->token_file);
			k->token_state = -1;
			k->token[0] = 0;
			return -1;
		}
	if (k->token_state == 1 && strcmp(buf, k->token))
		log_info("kubernetes: the token in %s changed; using the new one", k->token_file);
	memcpy(k->token, buf, len + 1);
	k->token_state = 1;
	return 0;
}

struct k8s_client *k8s__new(const struct rover_config *cfg, const char *host_name, char *err,
			    size_t errlen)
{
	struct k8s_client *k = calloc(1, sizeof(*k));
	const char *server = cfg->discovery.k8s_api_server;
	int nns = (int)cfg->discovery.k8s_nnamespaces;

	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->cfg = cfg;
	pthread_mutex_init(&k->lock, NULL);
	if (server && server[0]) {
		snprintf(k->base, sizeof(k->base), "%s", server);
	} else {
		const char *h = getenv("KUBERNETES_SERVICE_HOST");
		const char *p = getenv("KUBERNETES_SERVICE_PORT");

		if (!h || !h[0]) {
			snprintf(err, errlen,
				 "kubernetes: not in a cluster (no KUBERNETES_SERVICE_HOST) and no "
				 "process_discovery.kubernetes.api_server");
			free(k);
			return NULL;
		}
		snprintf(k->base, sizeof(k->base),
			 strchr(h, ':') ? "https://[%s]:%s" : "https://%s:%s", h,
			 p && p[0] ? p : "443");
	}
	while (strlen(k->base) && k->base[strlen(k->base) - 1] == '/')
		k->base[strlen(k->base) - 1] = 0;
	if (strncmp(k->base, "https://", 8) && strncmp(k->base, "http://", 7)) {
		snprintf(err, errlen, "kubernetes: api_server '%s' is not an http(s) URL", k->base);
		free(k);
		return NULL;
	}
	k->tls = !strncmp(k->base, "https://", 8);
	snprintf(k->token_file, sizeof(k->token_file), "%s",
		 cfg->discovery.k8s_token_file ? cfg->discovery.k8s_token_file : "");
	if (!k->tls && k->token_file[0]) {
		/* Anyone on the path would read it, and it is the service account's to use. */
		snprintf(err, errlen,
			 "kubernetes: api_server '%s' is plain http, and the token of token_file "
			 "'%s' would go in clear: use https://, or set token_file: \"\" for an "
			 "API server (a local proxy) that needs none",
			 k->base, k->token_file);
		free(k);
		return NULL;
	}
	snprintf(k->ca_file, sizeof(k->ca_file), "%s",
		 cfg->discovery.k8s_ca_file ? cfg->discovery.k8s_ca_file : "");
	if (cfg->discovery.k8s_node_name && cfg->discovery.k8s_node_name[0]) {
		snprintf(k->node, sizeof(k->node), "%s", cfg->discovery.k8s_node_name);
	} else {
		/* An empty selector value would ask for the pods no node runs yet. */
		snprintf(k->node, sizeof(k->node), "%s", host_name);
		log_warn("kubernetes: no node_name; using the host name '%s' (set it from "
			 "spec.nodeName)",
			 k->node);
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "kubernetes: libcurl does not start");
		free(k);
		return NULL;
	}
	/* The multi handle's wake-up pair is made now, before the sandbox. */
	k->multi = curl_multi_init();
	k->nws = 2 * (nns ? nns : 1);
	k->ws = calloc((size_t)k->nws, sizeof(*k->ws));
	k->pods = calloc(K8S_MAX_PODS, sizeof(*k->pods));
	k->svcs = calloc(1024, sizeof(*k->svcs));
	k->owners = calloc(K8S_MAX_OWNERS, sizeof(*k->owners));
	if (!k->multi || !k->ws || !k->pods || !k->svcs || !k->owners) {
		snprintf(err, errlen, "out of memory");
		k8s__free(k);
		return NULL;
	}
	for (int i = 0; i < k->nws; i++) {
		struct kw *w = &k->ws[i];

		w->k = k;
		w->res = i % 2 ? RES_SERVICES : RES_PODS;
		snprintf(w->ns, sizeof(w->ns), "%s",
			 nns ? cfg->discovery.k8s_namespaces[i / 2] : "");
		w->page = K8S_PAGE;
	}
	read_token(k);
	return k;
}

/* ---- the store (callers hold k->lock) ---- */

/* What a decoded object holds: its strings with their NULs and malloc's 16 bytes each. */
static size_t str_bytes(const char *s)
{
	return s ? strlen(s) + 1 + 16 : 0;
}

static size_t kv_bytes(const struct k8s_kv *kv, int n)
{
	size_t b = (size_t)n * sizeof(*kv);

	for (int i = 0; i < n; i++)
		b += str_bytes(kv[i].key) + str_bytes(kv[i].value);
	return b;
}

static size_t pod_bytes(const struct k8s_pod *p)
{
	size_t b = sizeof(struct pod_entry) + str_bytes(p->uid) + str_bytes(p->name) +
		   str_bytes(p->ns) + str_bytes(p->node) + str_bytes(p->ip) +
		   str_bytes(p->host_ip) + str_bytes(p->rv) + str_bytes(p->mirror_uid) +
		   kv_bytes(p->labels, p->nlabels) + kv_bytes(p->owners, p->nowners) +
		   (size_t)p->ncontainers * sizeof(*p->containers);

	for (int i = 0; i < p->ncontainers; i++)
		b += str_bytes(p->containers[i].name) + str_bytes(p->containers[i].id) +
		     kv_bytes(p->containers[i].env, p->containers[i].nenv);
	return b;
}

static size_t svc_bytes(const struct k8s_service *s)
{
	return sizeof(struct svc_entry) + str_bytes(s->name) + str_bytes(s->ns) + str_bytes(s->rv) +
	       kv_bytes(s->selector, s->nselector);
}

/* Does an object of bytes, replacing one of old, fit in K8S_MAX_STORE? */
static int store_fits(struct k8s_client *k, size_t bytes, size_t old)
{
	return k->store_bytes - old + bytes <= K8S_MAX_STORE;
}

static int in_scope(const struct kw *w, const char *ns)
{
	return !w->ns[0] || !strcmp(w->ns, ns);
}

static int pod_find(struct k8s_client *k, const char *ns, const char *name)
{
	for (int i = 0; i < k->npods; i++)
		if (!strcmp(k->pods[i].p.name, name) && !strcmp(k->pods[i].p.ns, ns))
			return i;
	return -1;
}

static void pod_del(struct k8s_client *k, int i)
{
	k->store_bytes -= k->pods[i].bytes;
	k8sobj__pod_free(&k->pods[i].p);
	k->pods[i] = k->pods[--k->npods];
	memset(&k->pods[k->npods], 0, sizeof(k->pods[0]));
	k->generation++;
}

static void refused(struct k8s_client *k, const char *what)
{
	k->st.refused++;
	if (!k->logged_refused++)
		log_warn("kubernetes: more %s than the store holds; the rest are not followed "
			 "(counted)",
			 what);
}

/* Takes p (moved, or freed). */
static void pod_put(struct k8s_client *k, struct k8s_pod *p, uint32_t mark)
{
	int i = pod_find(k, p->ns, p->name);
	size_t bytes = pod_bytes(p);

	if (!store_fits(k, bytes, i < 0 ? 0 : k->pods[i].bytes)) {
		/* The old state of a pod that no longer fits is not kept either. */
		if (i >= 0)
			pod_del(k, i);
		refused(k, "bytes of pods and services");
		k8sobj__pod_free(p);
		return;
	}
	if (i < 0) {
		if (k->npods == K8S_MAX_PODS) {
			refused(k, "pods");
			k8sobj__pod_free(p);
			return;
		}
		i = k->npods++;
	} else {
		k->store_bytes -= k->pods[i].bytes;
		k8sobj__pod_free(&k->pods[i].p);
	}
	k->store_bytes += bytes;
	k->pods[i].bytes = bytes;
	k->pods[i].p = *p;
	k->pods[i].mark = mark;
	memset(p, 0, sizeof(*p));
	k->generation++;
}

static int svc_find(struct k8s_client *k, const char *ns, const char *name)
{
	for (int i = 0; i < k->nsvcs; i++)
		if (!strcmp(k->svcs[i].s.name, name) && !strcmp(k->svcs[i].s.ns, ns))
			return i;
	return -1;
}

static void svc_del(struct k8s_client *k, int i)
{
	k->store_bytes -= k->svcs[i].bytes;
	k8sobj__service_free(&k->svcs[i].s);
	k->svcs[i] = k->svcs[--k->nsvcs];
	memset(&k->svcs[k->nsvcs], 0, sizeof(k->svcs[0]));
	k->generation++;
}

static void svc_put(struct k8s_client *k, struct k8s_service *s, uint32_t mark)
{
	int i = svc_find(k, s->ns, s->name);
	size_t bytes = svc_bytes(s);

	if (!store_fits(k, bytes, i < 0 ? 0 : k->svcs[i].bytes)) {
		if (i >= 0)
			svc_del(k, i);
		refused(k, "bytes of pods and services");
		k8sobj__service_free(s);
		return;
	}
	if (i < 0) {
		if (k->nsvcs == K8S_MAX_SERVICES) {
			refused(k, "services");
			k8sobj__service_free(s);
			return;
		}
		if (k->nsvcs && !(k->nsvcs & (k->nsvcs - 1)) && k->nsvcs >= 1024) {
			struct svc_entry *n = realloc(k->svcs, 2 * (size_t)k->nsvcs * sizeof(*n));

			if (!n) {
				refused(k, "services");
				k8sobj__service_free(s);
				return;
			}
			k->svcs = n;
		}
		i = k->nsvcs++;
	} else {
		/* A resync that changes nothing must not make discovery render again. */
		int same = k->svcs[i].s.nselector == s->nselector;

		for (int j = 0; same && j < s->nselector; j++)
			same = !strcmp(k->svcs[i].s.selector[j].key, s->selector[j].key) &&
			       !strcmp(k->svcs[i].s.selector[j].value, s->selector[j].value);
		k->store_bytes += bytes - k->svcs[i].bytes;
		k->svcs[i].bytes = bytes;
		k8sobj__service_free(&k->svcs[i].s);
		k->svcs[i].s = *s;
		k->svcs[i].mark = mark;
		memset(s, 0, sizeof(*s));
		if (!same)
			k->generation++;
		return;
	}
	k->store_bytes += bytes;
	k->svcs[i].bytes = bytes;
	k->svcs[i].s = *s;
	k->svcs[i].mark = mark;
	memset(s, 0, sizeof(*s));
	k->generation++;
}

static struct owner_entry *owner_find(struct k8s_client *k, const char *ns, const char *kind,
				      const char *name)
{
	for (int i = 0; i < k->nowners; i++) {
		struct owner_entry *o = &k->owners[i];

		if (!strcmp(o->name, name) && !strcmp(o->kind, kind) && !strcmp(o->ns, ns))
			return o;
	}
	return NULL;
}

/* Kinds whose own controller we fetch: the two that sit between a pod and what users name. */
static int owner_kind_walked(const char *kind)
{
	return !strcmp(kind, "ReplicaSet") || !strcmp(kind, "Job");
}

/* Records the owners of pods not known yet (to be fetched); forgets those no pod needs. */
static void owners_want(struct k8s_client *k)
{
	for (int i = 0; i < k->npods; i++) {
		const struct k8s_pod *p = &k->pods[i].p;

		if (!p->nowners || !owner_kind_walked(p->owners[0].key) ||
		    owner_find(k, p->ns, p->owners[0].key, p->owners[0].value))
			continue;
		if (k->nowners == K8S_MAX_OWNERS) {
			/* Full: drop the records of owners no pod has any more. */
			for (int j = k->nowners; j-- > 0;) {
				struct owner_entry *o = &k->owners[j];
				int used = o == k->owner_busy;

				for (int m = 0; m < k->npods && !used; m++) {
					const struct k8s_pod *q = &k->pods[m].p;

					used = q->nowners && !strcmp(q->ns, o->ns) &&
					       !strcmp(q->owners[0].key, o->kind) &&
					       !strcmp(q->owners[0].value, o->name);
				}
				if (!used)
					k->owners[j] = k->owners[--k->nowners];
			}
			if (k->nowners == K8S_MAX_OWNERS) {
				refused(k, "owners");
				return;
			}
		}
		struct owner_entry *o = &k->owners[k->nowners++];

		memset(o, 0, sizeof(*o));
		snprintf(o->ns, sizeof(o->ns), "%s", p->ns);
		snprintf(o->kind, sizeof(o->kind), "%s", p->owners[0].key);
		snprintf(o->name, sizeof(o->name), "%s", p->owners[0].value);
	}
}

/* ---- requests ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg);

static int xfer_begin(struct k8s_client *k, struct xfer *x, const char *url, long timeout_ms,
		      size_t max, int lines, void *owner)
{
	char auth[TOKEN_MAX + 32];

	if (!x->h) {
		x->h = curl_easy_init();
		if (!x->h)
			return -ENOMEM;
	}
	curl_easy_reset(x->h);
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
	x->k = k;
	x->len = 0;
	x->max = max;
	x->lines = lines;
	x->skipping = 0;
	x->over = 0;
	x->errbuf[0] = 0;
	read_token(k);
	x->hdrs = curl_slist_append(x->hdrs, "Accept: application/json");
	if (k->tls && k->token_state == 1) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", k->token);
		x->hdrs = curl_slist_append(x->hdrs, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (!x->hdrs)
		return -ENOMEM;
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->h, CURLOPT_USERAGENT, "rover");
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, owner);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, owner);
	curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* Only the API server: no redirects elsewhere, no other protocols, no proxy from the
	 * environment of a pod. */
	curl_easy_setopt(x->h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, k->tls ? "https" : "http");
	curl_easy_setopt(x->h, CURLOPT_PROXY, "");
	if (k->ca_file[0])
		curl_easy_setopt(x->h, CURLOPT_CAINFO, k->ca_file);
	if (curl_multi_add_handle(k->multi, x->h) != CURLM_OK)
		return -EIO;
	x->busy = 1;
	k->st.requests++;
	return 0;
}

static void xfer_end(struct k8s_client *k, struct xfer *x)
{
	if (x->busy)
		curl_multi_remove_handle(k->multi, x->h);
	x->busy = 0;
}

/* The buffer of a finished answer or line: kept when small, else given back (a big one would
 * hold part of K8S_MAX_BUFFERED from the other transfers). */
static void xfer_shrink(struct k8s_client *k, struct xfer *x, size_t keep)
{
	x->len = 0;
	if (x->cap <= keep)
		return;
	k->buffered -= x->cap;
	free(x->buf);
	x->buf = NULL;
	x->cap = 0;
}

static void xfer_free(struct k8s_client *k, struct xfer *x)
{
	xfer_end(k, x);
	if (x->h)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->hdrs);
	xfer_shrink(k, x, 0);
	memset(x, 0, sizeof(*x));
}

static const char *res_name(enum res r)
{
	return r == RES_PODS ? "pods" : "services";
}

/* /api/v1[/namespaces/NS]/pods?... into url. */
static void res_url(struct kw *w, char *url, size_t len, int watch)
{
	struct k8s_client *k = w->k;
	char *ns = w->ns[0] ? curl_easy_escape(NULL, w->ns, 0) : NULL;
	char *node = curl_easy_escape(NULL, k->node, 0);
	char *cont = w->cont ? curl_easy_escape(NULL, w->cont, 0) : NULL;
	char *rv = curl_easy_escape(NULL, w->rv, 0);
	int o;

	o = snprintf(url, len, "%s/api/v1%s%s/%s?", k->base, ns ? "/namespaces/" : "", ns ? ns : "",
		     res_name(w->res));
	if (w->res == RES_PODS && o > 0 && (size_t)o < len)
		o += snprintf(url + o, len - (size_t)o, "fieldSelector=spec.nodeName%%3D%s&",
			      node ? node : "");
	if (o > 0 && (size_t)o < len) {
		if (watch)
			/* The server ends a watch at timeoutSeconds; a spread keeps many agents
			 * from coming back at once (client-go's 5-10 min). */
			snprintf(url + o, len - (size_t)o,
				 "watch=1&allowWatchBookmarks=true&resourceVersion=%s&"
				 "timeoutSeconds=%d",
				 rv ? rv : "", 300 + (int)(now_ms() % 300));
		else
			snprintf(url + o, len - (size_t)o, "limit=%d%s%s", w->page,
				 cont ? "&continue=" : "", cont ? cont : "");
	}
	curl_free(ns);
	curl_free(node);
	curl_free(cont);
	curl_free(rv);
}

static void w_start(struct kw *w)
{
	struct k8s_client *k = w->k;
	char url[4096];
	int err;

	if (w->state == W_LIST && !w->cont)
		w->mark++;
	res_url(w, url, sizeof(url), w->state == W_WATCH);
	err = xfer_begin(k, &w->x, url, w->state == W_WATCH ? 900000L : (long)LIST_TIMEOUT_MS,
			 w->state == W_WATCH ? K8S_MAX_LINE : K8S_MAX_BODY, w->state == W_WATCH, w);
	if (err) {
		w->due_ms = now_ms() + BACKOFF_MAX_MS;
		return;
	}
	pthread_mutex_lock(&k->lock);
	if (w->state == W_WATCH)
		k->st.watches++;
	else if (!w->cont)
		k->st.lists++;
	pthread_mutex_unlock(&k->lock);
}

static void w_failed(struct kw *w, const char *why)
{
	struct k8s_client *k = w->k;

	w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (w->backoff_ms > BACKOFF_MAX_MS)
		w->backoff_ms = BACKOFF_MAX_MS;
	w->due_ms = now_ms() + w->backoff_ms;
	if (!w->failing)
		log_warn("kubernetes: %s%s%s: %s; keeping what is known, retrying (backoff up to "
			 "%d s)",
			 res_name(w->res), w->ns[0] ? " in " : "", w->ns, why,
			 BACKOFF_MAX_MS / 1000);
	w->failing = 1;
	pthread_mutex_lock(&k->lock);
	k->st.errors++;
	pthread_mutex_unlock(&k->lock);
}

static void w_ok(struct kw *w)
{
	if (w->failing)
		log_info("kubernetes: %s%s%s: the API server answers again", res_name(w->res),
			 w->ns[0] ? " in " : "", w->ns);
	w->failing = 0;
	w->backoff_ms = 0;
}

static void bad_object(struct k8s_client *k, const char *what, const char *err)
{
	/* Called with the lock held. */
	if (!k->st.bad_objects++ || !(k->st.bad_objects & (k->st.bad_objects - 1)))
		log_warn("kubernetes: a %s was refused: %s (%llu so far)", what, err,
			 (unsigned long long)k->st.bad_objects);
}

/* One object of a list or an event, into the store. Lock held. */
static void apply(struct kw *w, enum k8s_event_type type, struct json_object *obj, uint32_t mark)
{
	struct k8s_client *k = w->k;
	char err[256];

	if (w->res == RES_PODS) {
		struct k8s_pod p;
		int i;

		if (k8sobj__pod(obj, &p, err, sizeof(err))) {
			bad_object(k, "pod", err);
			return;
		}
		if (!in_scope(w, p.ns) || (p.node[0] && strcmp(p.node, k->node))) {
			k8sobj__pod_free(&p);
			return; /* not asked for: a server that ignores the selector */
		}
		if (type == K8S_DELETED) {
			i = pod_find(k, p.ns, p.name);
			if (i >= 0)
				pod_del(k, i);
			k8sobj__pod_free(&p);
			return;
		}
		pod_put(k, &p, mark);
		owners_want(k);
	} else {
		struct k8s_service s;
		int i;

		if (k8sobj__service(obj, &s, err, sizeof(err))) {
			bad_object(k, "service", err);
			return;
		}
		if (!in_scope(w, s.ns)) {
			k8sobj__service_free(&s);
			return;
		}
		if (type == K8S_DELETED) {
			i = svc_find(k, s.ns, s.name);
			if (i >= 0)
				svc_del(k, i);
			k8sobj__service_free(&s);
			return;
		}
		svc_put(k, &s, mark);
	}
}

/* One line of a watch stream. */
static void w_line(struct kw *w, const char *line, size_t len)
{
	struct k8s_client *k = w->k;
	enum k8s_event_type type;
	struct json_object *o, *obj;
	char err[256], rv[K8S_ID_MAX + 1];
	int code, big;

	while (len && strchr(" \t\r\n", line[len - 1]))
		len--;
	if (!len)
		return;
	o = k8sobj__parse(line, len, &big, err, sizeof(err));
	pthread_mutex_lock(&k->lock);
	k->st.events++;
	k->st.too_large += big;
	if (!o || k8sobj__event(o, &type, &obj, rv, sizeof(rv), &code, err, sizeof(err))) {
		/* An event we cannot read may have changed anything: list again (after a
		 * backoff: a server that keeps sending such lines is not hammered). */
		bad_object(k, "watch event", err);
		w->relist = 2;
		goto out;
	}
	if (type == K8S_ERROR) {
		w->relist = 1;
		if (code != 410)
			log_warn("kubernetes: %s watch: the server sent an error (code %d)",
				 res_name(w->res), code);
		goto out;
	}
	if (type != K8S_BOOKMARK)
		apply(w, type, obj, w->mark);
	if (rv[0])
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
	pthread_mutex_unlock(&k->lock);
	json_object_put(o);
	w_ok(w); /* a watch resumed after a failure: said when its first event comes */
	return;
out:
	pthread_mutex_unlock(&k->lock);
	json_object_put(o);
}

/* Appends n bytes to x's buffer (room for a NUL kept). 0, or -E2BIG past x->max (x->over 1),
 * -ENOBUFS past K8S_MAX_BUFFERED for every buffer at once (x->over 2), -ENOMEM. */
static int xfer_append(struct xfer *x, const char *data, size_t n)
{
	struct k8s_client *k = x->k;

	if (x->len + n > x->max) {
		x->over = 1;
		return -E2BIG;
	}
	if (x->len + n + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 16384;
		char *b;

		while (cap < x->len + n + 1)
			cap *= 2;
		if (cap > x->max + 1)
			cap = x->max + 1;
		if (k->buffered - x->cap + cap > K8S_MAX_BUFFERED) {
			x->over = 2;
			return -ENOBUFS;
		}
		b = realloc(x->buf, cap);
		if (!b)
			return -ENOMEM;
		k->buffered += cap - x->cap;
		x->buf = b;
		x->cap = cap;
	}
	memcpy(x->buf + x->len, data, n);
	x->len += n;
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct kw *w = arg;
	struct xfer *x = &w->x;
	size_t n = size * nmemb;

	if (!x->lines) {
		/* Too large, or no memory: the transfer fails, w_done says so. */
		if (xfer_append(x, data, n))
			return 0;
		return n;
	}
	/* Watch: an answer other than 200 (a Status body) is not a stream; w_done says why. */
	{
		long code = 0;

		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
		if (code != 200)
			return n;
	}
	/* Handle each complete line now; keep the rest. */
	for (size_t off = 0; off < n;) {
		const char *nl = memchr(data + off, '\n', n - off);
		size_t take = nl ? (size_t)(nl - (data + off)) + 1 : n - off;

		if (x->skipping) {
			if (nl)
				x->skipping = 0;
			off += take;
			continue;
		}
		if (xfer_append(x, data + off, take)) {
			if (!x->over)
				return 0; /* no memory: the stream fails */
			/* An event too large to hold: dropped, and the state listed again after
			 * this stream, since it may have changed anything. */
			pthread_mutex_lock(&w->k->lock);
			w->k->st.lines_skipped++;
			pthread_mutex_unlock(&w->k->lock);
			log_warn("kubernetes: a %s watch event over %s was dropped; listing again",
				 res_name(w->res),
				 x->over == 1 ? "the bytes an event may take (K8S_MAX_LINE)"
					      : "the bytes all answers may take at once "
						"(K8S_MAX_BUFFERED)");
			xfer_shrink(w->k, x, 0);
			w->relist = 2;
			return 0; /* ends this stream: w_done lists again */
		}
		off += take;
		if (nl) {
			w_line(w, x->buf, x->len);
			xfer_shrink(w->k, x, 65536);
			if (w->relist)
				return 0; /* ends this stream: w_done lists again */
		}
	}
	return n;
}

/* A list page arrived whole. */
static void w_list_done(struct kw *w)
{
	struct k8s_client *k = w->k;
	struct json_object *o, *items = NULL;
	char err[256], rv[K8S_ID_MAX + 1], cont[4096];
	size_t n;
	int big;

	o = k8sobj__parse(w->x.buf ? w->x.buf : "", w->x.len, &big, err, sizeof(err));
	if (!o || k8sobj__list(o, &items, rv, sizeof(rv), cont, sizeof(cont), err, sizeof(err))) {
		json_object_put(o);
		xfer_shrink(k, &w->x, 0);
		free(w->cont);
		w->cont = NULL;
		if (big) {
			pthread_mutex_lock(&k->lock);
			k->st.too_large++;
			pthread_mutex_unlock(&k->lock);
			/* A page that would take too much to parse: fewer items a page. */
			if (w->page > 1)
				w->page /= 2;
		}
		w_failed(w, err);
		return;
	}
	n = items ? json_object_array_length(items) : 0;
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < n; i++)
		apply(w, K8S_ADDED, json_object_array_get_idx(items, i), w->mark);
	if (!cont[0]) {
		/* The list is whole: what it did not give is gone. */
		if (w->res == RES_PODS) {
			for (int i = k->npods; i-- > 0;)
				if (in_scope(w, k->pods[i].p.ns) && k->pods[i].mark != w->mark)
					pod_del(k, i);
		} else {
			for (int i = k->nsvcs; i-- > 0;)
				if (in_scope(w, k->svcs[i].s.ns) && k->svcs[i].mark != w->mark)
					svc_del(k, i);
		}
	}
	pthread_mutex_unlock(&k->lock);
	json_object_put(o);
	free(w->cont);
	w->cont = NULL;
	/* A big page is not kept for the watch that follows. */
	xfer_shrink(k, &w->x, 65536);
	w_ok(w);
	if (cont[0]) {
		w->cont = strdup(cont);
		if (!w->cont) {
			w_failed(w, "out of memory");
			return;
		}
		w->due_ms = 0; /* the next page now */
		return;
	}
	snprintf(w->rv, sizeof(w->rv), "%s", rv);
	if (!w->synced) {
		int total;

		pthread_mutex_lock(&k->lock);
		total = w->res == RES_PODS ? k->npods : k->nsvcs;
		pthread_mutex_unlock(&k->lock);
		log_info("kubernetes: %s%s%s listed (%d known, version %s)", res_name(w->res),
			 w->ns[0] ? " in " : "", w->ns, total, w->rv);
	}
	w->synced = 1;
	w->relist = 0;
	w->state = W_WATCH;
	w->due_ms = 0;
}

static void w_done(struct kw *w, CURLcode rc)
{
	long code = 0;
	char why[CURL_ERROR_SIZE + 64];

	curl_easy_getinfo(w->x.h, CURLINFO_RESPONSE_CODE, &code);
	xfer_end(w->k, &w->x);
	if (code == 401 || code == 403) {
		pthread_mutex_lock(&w->k->lock);
		w->k->st.unauthorized++;
		pthread_mutex_unlock(&w->k->lock);
	}
	if (w->state == W_LIST) {
		if (rc == CURLE_WRITE_ERROR && w->x.over) {
			/* A page over K8S_MAX_BODY, or over what all answers may hold at once: ask
			 * for smaller ones (the same page again when it was one item). */
			int over = w->x.over;

			pthread_mutex_lock(&w->k->lock);
			w->k->st.too_large++;
			pthread_mutex_unlock(&w->k->lock);
			xfer_shrink(w->k, &w->x, 0);
			free(w->cont);
			w->cont = NULL;
			if (w->page > 1)
				w->page /= 2;
			snprintf(why, sizeof(why),
				 "list: an answer over %u MiB%s was refused; asking for %d items a page",
				 over == 1 ? K8S_MAX_BODY >> 20 : K8S_MAX_BUFFERED >> 20,
				 over == 1 ? "" : " with the other answers held", w->page);
			w_failed(w, why);
			return;
		}
		if (rc == CURLE_OK && code == 410 && w->cont) {
			/* The continue token expired: the list starts over. */
			free(w->cont);
			w->cont = NULL;
			w->due_ms = 0;
			return;
		}
		if (rc != CURLE_OK || code != 200) {
			snprintf(why, sizeof(why), "list: %s",
				 rc != CURLE_OK
					 ? (w->x.errbuf[0] ? w->x.errbuf : curl_easy_strerror(rc))
					 : "");
			if (rc == CURLE_OK)
				snprintf(why, sizeof(why), "list: HTTP %ld", code);
			free(w->cont);
			w->cont = NULL;
			w_failed(w, why);
			return;
		}
		w_list_done(w);
		return;
	}
	/* A watch ended: at its timeout (normal), or broken, or told to relist. */
	if (rc == CURLE_OK && code == 200 && !w->relist) {
		w_ok(w);
		w->due_ms = 0;
		return;
	}
	if (w->relist || code == 410) {
		int bad = w->relist == 2;

		pthread_mutex_lock(&w->k->lock);
		w->k->st.relists++;
		pthread_mutex_unlock(&w->k->lock);
		w->state = W_LIST;
		w->relist = 0;
		if (bad) {
			w_failed(w, "a watch event could not be read; listing again");
			return;
		}
		if ((rc == CURLE_OK || rc == CURLE_WRITE_ERROR) && (code == 200 || code == 410)) {
			w_ok(w);
			w->due_ms = 0;
			return;
		}
	}
	if (rc == CURLE_OPERATION_TIMEDOUT && code == 200) {
		w->due_ms = 0; /* our own bound on a quiet stream */
		return;
	}
	if (rc != CURLE_OK)
		snprintf(why, sizeof(why), "watch: %s",
			 w->x.errbuf[0] ? w->x.errbuf : curl_easy_strerror(rc));
	else
		snprintf(why, sizeof(why), "watch: HTTP %ld", code);
	w_failed(w, why);
}

/* ---- the node and owners ---- */

static size_t on_get(char *data, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;

	if (xfer_append(x, data, n))
		return 0;
	return n;
}

static int get_begin(struct k8s_client *k, struct xfer *x, const char *url)
{
	int err = xfer_begin(k, x, url, GET_TIMEOUT_MS, K8S_MAX_BODY, 0, x);

	if (!err) {
		curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_get);
		curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	}
	return err;
}

static void node_start(struct k8s_client *k)
{
	char url[1024], *node = curl_easy_escape(NULL, k->node, 0);

	snprintf(url, sizeof(url), "%s/api/v1/nodes/%s", k->base, node ? node : "");
	curl_free(node);
	if (get_begin(k, &k->node_x, url))
		k->node_due = now_ms() + NODE_RECHECK_MS;
}

static void node_done(struct k8s_client *k, CURLcode rc)
{
	long code = 0;

	curl_easy_getinfo(k->node_x.h, CURLINFO_RESPONSE_CODE, &code);
	xfer_end(k, &k->node_x);
	xfer_shrink(k, &k->node_x, 0); /* only its status is read */
	if (rc == CURLE_OK && code == 200) {
		if (k->node_state != 1)
			log_info("kubernetes: node '%s' found; following its pods", k->node);
		k->node_state = 1;
		return;
	}
	if (k->node_state != -1) {
		if (rc == CURLE_OK && code == 404)
			log_err("kubernetes: node '%s' does not exist: node_name must be the pod's "
				"spec.nodeName (no pod will be found)",
				k->node);
		else
			log_warn("kubernetes: node '%s' not checked: %s", k->node,
				 rc != CURLE_OK ? curl_easy_strerror(rc)
						: "unexpected HTTP status");
	}
	k->node_state = -1;
	k->node_due = now_ms() + NODE_RECHECK_MS;
}

static void owner_start(struct k8s_client *k)
{
	struct owner_entry *o = NULL;
	char url[2048], *ns, *name;
	uint64_t now = now_ms();

	pthread_mutex_lock(&k->lock);
	for (int i = 0; i < k->nowners && !o; i++)
		if (!k->owners[i].state || (k->owners[i].state < 0 && now >= k->owners[i].retry_ms))
			o = &k->owners[i];
	if (o) {
		ns = curl_easy_escape(NULL, o->ns, 0);
		name = curl_easy_escape(NULL, o->name, 0);
		snprintf(url, sizeof(url), "%s/apis/%s/namespaces/%s/%s/%s", k->base,
			 !strcmp(o->kind, "Job") ? "batch/v1" : "apps/v1", ns ? ns : "",
			 !strcmp(o->kind, "Job") ? "jobs" : "replicasets", name ? name : "");
		curl_free(ns);
		curl_free(name);
		k->owner_busy = o;
		o->state = 2; /* asked */
	}
	pthread_mutex_unlock(&k->lock);
	if (o && get_begin(k, &k->owner_x, url)) {
		pthread_mutex_lock(&k->lock);
		o->state = -1;
		o->retry_ms = now + OWNER_RETRY_MS;
		k->owner_busy = NULL;
		pthread_mutex_unlock(&k->lock);
	}
}

static void owner_done(struct k8s_client *k, CURLcode rc)
{
	long code = 0;
	char kind[64], name[K8S_NAME_MAX + 1], err[256] = "";
	struct json_object *o = NULL;
	int ok = 0;

	curl_easy_getinfo(k->owner_x.h, CURLINFO_RESPONSE_CODE, &code);
	xfer_end(k, &k->owner_x);
	if (rc == CURLE_OK && code == 200) {
		o = k8sobj__parse(k->owner_x.buf ? k->owner_x.buf : "", k->owner_x.len, NULL, err,
				  sizeof(err));
		ok = o && !k8sobj__controller(o, kind, sizeof(kind), name, sizeof(name), err,
					      sizeof(err));
		json_object_put(o);
	}
	xfer_shrink(k, &k->owner_x, 65536);
	pthread_mutex_lock(&k->lock);
	if (k->owner_busy) {
		struct owner_entry *e = k->owner_busy;

		if (ok) {
			snprintf(e->pkind, sizeof(e->pkind), "%s", kind);
			snprintf(e->pname, sizeof(e->pname), "%s", name);
			e->state = 1;
			k->generation++;
		} else {
			/* 403 (RBAC without apps/batch get), 404 (gone), or unreadable: the chain
			 * stops at the pod's own owner; tried again later. */
			e->state = -1;
			e->retry_ms = now_ms() + OWNER_RETRY_MS;
			if (rc == CURLE_OK && code != 200)
				log_debug("kubernetes: %s %s/%s: HTTP %ld", e->kind, e->ns, e->name,
					  code);
			else if (err[0])
				bad_object(k, e->kind, err);
		}
		k->owner_busy = NULL;
	}
	pthread_mutex_unlock(&k->lock);
}

/* ---- the thread ---- */

/* Every drop is said: a line when a count moved, at most once a minute (the first at once). */
static void say_drops(struct k8s_client *k, uint64_t now)
{
	struct k8s_stats st;

	pthread_mutex_lock(&k->lock);
	st = k->st;
	pthread_mutex_unlock(&k->lock);
	if (st.bad_objects == k->said.bad_objects && st.refused == k->said.refused &&
	    st.lines_skipped == k->said.lines_skipped && st.unauthorized == k->said.unauthorized &&
	    st.too_large == k->said.too_large)
		return;
	if (k->said_ms && now - k->said_ms < 60000)
		return;
	log_warn("kubernetes: so far %llu objects refused as malformed, %llu over the store's "
		 "bounds, %llu watch events too large, %llu answers over the memory bounds, %llu "
		 "requests unauthorized (%d pods, %d services held)",
		 (unsigned long long)st.bad_objects, (unsigned long long)st.refused,
		 (unsigned long long)st.lines_skipped, (unsigned long long)st.too_large,
		 (unsigned long long)st.unauthorized, st.pods, st.services);
	k->said = st;
	k->said_ms = now;
}

static void *k8s_main(void *arg)
{
	struct k8s_client *k = arg;

	while (!k->stop) {
		uint64_t now = now_ms(), next = now + 1000;
		CURLMsg *m;
		int running, left;

		for (int i = 0; i < k->nws; i++) {
			struct kw *w = &k->ws[i];

			if (w->x.busy)
				continue;
			if (w->state == W_WAIT)
				w->state = W_LIST;
			if (now >= w->due_ms)
				w_start(w);
			else if (w->due_ms < next)
				next = w->due_ms;
		}
		if (!k->node_x.busy && k->node_state != 1 && now >= k->node_due)
			node_start(k);
		if (!k->owner_x.busy)
			owner_start(k);
		curl_multi_perform(k->multi, &running);
		while ((m = curl_multi_info_read(k->multi, &left))) {
			void *who = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&who);
			if (who == &k->node_x) {
				node_done(k, m->data.result);
			} else if (who == &k->owner_x) {
				owner_done(k, m->data.result);
			} else if (who) {
				struct kw *w = who;

				w_done(w, m->data.result);
			}
		}
		pthread_mutex_lock(&k->lock);
		k->st.pods = k->npods;
		k->st.services = k->nsvcs;
		k->st.owners = k->nowners;
		k->st.synced = 1;
		for (int i = 0; i < k->nws; i++)
			k->st.synced &= k->ws[i].synced;
		pthread_mutex_unlock(&k->lock);
		now = now_ms();
		say_drops(k, now);
		curl_multi_poll(k->multi, NULL, 0, next > now ? (int)(next - now) : 0, NULL);
	}
	return NULL;
}

int k8s__start(struct k8s_client *k)
{
	int err = pthread_create(&k->thread, NULL, k8s_main, k);

	if (err)
		return -err;
	k->started = 1;
	return 0;
}

void k8s__free(struct k8s_client *k)
{
	if (!k)
		return;
	if (k->started) {
		k->stop = 1;
		curl_multi_wakeup(k->multi);
		pthread_join(k->thread, NULL);
	}
	for (int i = 0; k->ws && i < k->nws; i++) {
		xfer_free(k, &k->ws[i].x);
		free(k->ws[i].cont);
	}
	xfer_free(k, &k->node_x);
	xfer_free(k, &k->owner_x);
	if (k->multi)
		curl_multi_cleanup(k->multi);
	for (int i = 0; i < k->npods; i++)
		k8sobj__pod_free(&k->pods[i].p);
	for (int i = 0; i < k->nsvcs; i++)
		k8sobj__service_free(&k->svcs[i].s);
	free(k->pods);
	free(k->svcs);
	free(k->owners);
	free(k->ws);
	explicit_bzero(k->token, sizeof(k->token));
	pthread_mutex_destroy(&k->lock);
	free(k);
}

/* ---- what discovery asks ---- */

uint64_t k8s__generation(struct k8s_client *k)
{
	uint64_t g;

	pthread_mutex_lock(&k->lock);
	g = k->generation;
	pthread_mutex_unlock(&k->lock);
	return g;
}

void k8s__stats(struct k8s_client *k, struct k8s_stats *ret)
{
	pthread_mutex_lock(&k->lock);
	*ret = k->st;
	pthread_mutex_unlock(&k->lock);
}

/* B2: among the services of the pod's namespace whose non-empty selector matches its labels,
 * the shortest name, then the smallest. */
static const char *service_of(struct k8s_client *k, const struct k8s_pod *p)
{
	const char *best = "";

	for (int i = 0; i < k->nsvcs; i++) {
		const struct k8s_service *s = &k->svcs[i].s;

		if (strcmp(s->ns, p->ns) || !k8sobj__selects(s, p->labels, p->nlabels))
			continue;
		if (!best[0] || strlen(s->name) < strlen(best) ||
		    (strlen(s->name) == strlen(best) && strcmp(s->name, best) < 0))
			best = s->name;
	}
	return best;
}

int k8s__with_container(struct k8s_client *k, const struct k8s_cgroup_id *cid,
			void (*fn)(void *arg, const struct k8s_view *v), void *arg)
{
	int found = 0;

	if (!cid->id[0] || !cid->pod[0])
		return 0;
	pthread_mutex_lock(&k->lock);
	for (int i = 0; i < k->npods && !found; i++) {
		const struct k8s_pod *p = &k->pods[i].p;

		/* The pod its cgroup is under must be the one the API server gives this id:
		 * an id named under another pod's cgroup is not that container. */
		if (!k8sobj__pod_is(p, cid->pod))
			continue;
		for (int c = 0; c < p->ncontainers && !found; c++) {
			struct k8s_view v = { 0 };

			if (!p->containers[c].id[0] ||
			    strcmp(k8sobj__bare_id(p->containers[c].id), cid->id))
				continue;
			v.pod = p;
			v.container = &p->containers[c];
			v.service_name = service_of(k, p);
			if (p->nowners) {
				const struct owner_entry *o;

				v.owners[v.nowners++] = p->owners[0];
				o = owner_find(k, p->ns, p->owners[0].key, p->owners[0].value);
				while (o && o->state == 1 && o->pkind[0] &&
				       v.nowners < K8S_MAX_CHAIN) {
					v.owners[v.nowners].key = (char *)o->pkind;
					v.owners[v.nowners].value = (char *)o->pname;
					v.nowners++;
					o = owner_find(k, p->ns, o->pkind, o->pname);
				}
			}
			fn(arg, &v);
			found = 1;
		}
	}
	pthread_mutex_unlock(&k->lock);
	return found;
}
