// SPDX-License-Identifier: Apache-2.0
/*
 * The access-log module end to end (docs/access-log.md): `rover run` with access_log.active,
 * Kubernetes discovery against the fake API server, and pods as real processes: each in a
 * kubepods cgroup (kube_harness.h) and in a network namespace of its own with a pod IP on a
 * bridge this test makes, as a CNI plugin lays them out. nginx serves in one pod; curl runs
 * in others and on the host; a client pod reaches nginx through a Service's cluster IP that
 * an nft DNAT rule translates, as kube-proxy does. What a user checks at the OAP (the fake
 * decodes every message with the upstream proto): one HTTP protocol log per request, exactly,
 * with its status; connect, accept, read, write and close kernel logs whose bytes are
 * nginx's own count; the remote resolved to the other pod, through the NAT too; a pod of an
 * excluded namespace never seen; a deleted pod's logs stop; the OAP down for 30 s loses
 * nothing.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <net/if.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/kube_harness.h"
#include "tests/integration/oap_harness.h"

#define NPODS 3
#define METHOD "EBPFAccessLogService/collect"

/*
 * The pod network: a bridge with the node's end (.1) and a veth per pod, each pod's other
 * end named eth0 in its netns; names and the /24 from this run's pid so that a leftover of
 * another run is not ours.
 */
static struct podnet {
	int net; /* 10.244.<net>.0/24 pods, 10.96.<net>.0/24 services */
	char br[16];
	char ns[NPODS][24];
	char veth[NPODS][16];
	char ip[NPODS][24];
	char gw[24];
	char svc_ip[24];
	int up;
} pn;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return run_cmd(argv, NULL);
}

static void podnet_down(void)
{
	if (!pn.up)
		return;
	for (int i = 0; i < NPODS; i++) {
		sh("ip link del %s 2>/dev/null", pn.veth[i]);
		netns_delete(pn.ns[i]);
	}
	sh("ip link del %s 2>/dev/null", pn.br);
	pn.up = 0;
}

static void podnet_up(void)
{
	pn.net = 100 + getpid() % 100;
	snprintf(pn.br, sizeof(pn.br), "rvab%d", pn.net);
	snprintf(pn.gw, sizeof(pn.gw), "10.244.%d.1", pn.net);
	snprintf(pn.svc_ip, sizeof(pn.svc_ip), "10.96.%d.10", pn.net);
	/* What a run killed midway left under these names goes first. */
	sh("ip link del %s 2>/dev/null; for i in 0 1 2; do ip netns del rvan%d_$i 2>/dev/null; "
	   "ip link del rvav%d_$i 2>/dev/null; done; true",
	   pn.br, pn.net, pn.net);
	cr_assert_eq(sh("ip link add %s type bridge && ip addr add %s/24 dev %s && ip link set %s up",
			pn.br, pn.gw, pn.br, pn.br),
		     0, "bridge");
	pn.up = 1;
	for (int i = 0; i < NPODS; i++) {
		snprintf(pn.ns[i], sizeof(pn.ns[i]), "rvan%d_%d", pn.net, i);
		snprintf(pn.veth[i], sizeof(pn.veth[i]), "rvav%d_%d", pn.net, i);
		snprintf(pn.ip[i], sizeof(pn.ip[i]), "10.244.%d.%d", pn.net, 10 + i);
		cr_assert_eq(netns_create(pn.ns[i]), 0);
		cr_assert_eq(sh("ip link add %1$s type veth peer name eth0 netns %2$s && "
				"ip link set %1$s master %3$s up && "
				"ip -n %2$s addr add %4$s/24 dev eth0 && ip -n %2$s link set eth0 up && "
				"ip -n %2$s link set lo up && ip -n %2$s route add default via %5$s",
				pn.veth[i], pn.ns[i], pn.br, pn.ip[i], pn.gw),
			     0, "pod %d's network", i);
	}
}

/* In pod i's netns, the Service's cluster IP translated to pod 0's nginx, as kube-proxy does. */
static void service_nat(int i)
{
	cr_assert_eq(sh("printf 'table ip nat {\\n chain output {\\n  type nat hook output priority "
			"-100;\\n  ip daddr %s tcp dport 80 dnat to %s:80\\n }\\n}\\n' | "
			"ip netns exec %s nft -f -",
			pn.svc_ip, pn.ip[0], pn.ns[i]),
		     0, "nft");
}

static void setup(void)
{
	tmp_setup();
	kube_cgroups_cleanup();
}

static void teardown(void)
{
	stop_tracked();
	kube_cgroups_cleanup();
	podnet_down();
	tmp_teardown();
}

TestSuite(accesslog, .init = setup, .fini = teardown, .timeout = 300);

static const char config_fmt[] = "core:\n"
				 "  cluster_name: c1\n"
				 "  backend:\n"
				 "    addr: 127.0.0.1:%d\n"
				 "process_discovery:\n"
				 "  heartbeat_period: 1s\n"
				 "  vm:\n"
				 "    active: false\n"
				 "  kubernetes:\n"
				 "    active: true\n"
				 "    node_name: node-a\n"
				 "    api_server: %s\n"
				 "    token_file: %s\n"
				 "    ca_file: %s\n"
				 "profiling:\n"
				 "  active: false\n"
				 "access_log:\n"
				 "  active: true\n"
				 "  exclude_namespaces: \"istio-system,kube-system\"\n"
				 "  flush:\n"
				 "    period: 1s\n";

struct env {
	struct kube_api k;
	int oap_port;
	pid_t rover, oap;
	char *nginx_dir;
	pid_t nginx;	   /* the pod's container process: nginx's master */
	int base_requests; /* nginx's HTTP/1 count before the agent: its readiness probe */
	uint64_t base_sent;
};

static void nginx_h1(const struct env *e, int *ret_requests, uint64_t *ret_sent);

/* nginx in pod 0: HTTP/1 on 80, h2c (prior knowledge) on 81; its access log counts bytes. */
static pid_t pod_nginx(struct env *e, const char *uid, char id[65])
{
	char conf[16384], cpath[512], epath[512];
	struct tls_cert cert;

	e->nginx_dir = make_tmpdir();
	cr_assert(e->nginx_dir);
	chmod(e->nginx_dir, 0755);
	cr_assert_eq(tls_cert_make(e->nginx_dir, &cert), 0);
	snprintf(cpath, sizeof(cpath), "%s/nginx.conf", e->nginx_dir);
	snprintf(epath, sizeof(epath), "%s/error.log", e->nginx_dir);
	snprintf(conf, sizeof(conf),
		 "daemon off;\n"
		 "master_process on;\n"
		 "worker_processes 1;\n"
		 "pid %1$s/nginx.pid;\n"
		 "error_log %1$s/error.log warn;\n"
		 "events { worker_connections 512; }\n"
		 "http {\n"
		 "  log_format truth '$status $bytes_sent $request_length $server_protocol $server_port';\n"
		 "  access_log %1$s/access.log truth;\n"
		 "  client_body_temp_path %1$s/body;\n"
		 "  proxy_temp_path %1$s/proxy;\n"
		 "  fastcgi_temp_path %1$s/fastcgi;\n"
		 "  uwsgi_temp_path %1$s/uwsgi;\n"
		 "  scgi_temp_path %1$s/scgi;\n"
		 "  server {\n"
		 "    listen 80;\n"
		 "    listen 81 http2;\n"
		 "    listen 443 ssl;\n"
		 "    ssl_certificate %2$s;\n"
		 "    ssl_certificate_key %3$s;\n"
		 "    location = /ok { return 200 \"ok\\n\"; }\n"
		 "    location = /missing { return 404; }\n"
		 "    location / { return 404; }\n"
		 "  }\n"
		 "}\n",
		 e->nginx_dir, cert.cert, cert.key);
	cr_assert_eq(write_file(cpath, conf), 0);
	{
		char *argv[] = { "/usr/sbin/ip", "netns", "exec",	pn.ns[0], "nginx", "-e",
				 epath,		 "-p",	  e->nginx_dir, "-c",	  cpath,   NULL };
		pid_t pid;

		kube_random_id(id);
		pid = kube_spawn_in_cgroup(KUBE_CONTAINERD_SYSTEMD, uid, id, argv);
		if (pid < 0 && errno == ENOENT)
			cr_skip_test("no such cgroup hierarchy here");
		cr_assert_gt(pid, 0, "nginx in its pod: %s", strerror(errno));
		e->nginx = pid;
	}
	cr_assert(wait_child(e->nginx, "nginx", 5000) > 0, "nginx's worker");
	cr_assert_eq(sh("for i in $(seq 50); do ip netns exec %s curl -s -o /dev/null "
			"http://127.0.0.1:80/ok && exit 0; sleep 0.1; done; exit 1",
			pn.ns[0]),
		     0, "nginx answers in its pod");
	nginx_h1(e, &e->base_requests, &e->base_sent);
	return e->nginx;
}

/*
 * A client pod's container: a shell in pod i's netns that waits for the file `go`, then
 * becomes (exec, same pid) script's command. The pid is traced before it connects.
 */
static pid_t pod_client(int i, enum kube_layout layout, const char *uid, char id[65],
			const char *go, const char *cmd)
{
	char script[2048];
	char *argv[] = { "/usr/sbin/ip", "netns", "exec", pn.ns[i], "/bin/sh", "-c", script, NULL };
	pid_t pid;

	snprintf(script, sizeof(script),
		 "for i in $(seq 1200); do [ -e %s ] && exec %s >/dev/null; sleep 0.1; done; exit 3",
		 go, cmd);
	kube_random_id(id);
	pid = kube_spawn_in_cgroup(layout, uid, id, argv);
	cr_assert_gt(pid, 0, "client pod %d: %s", i, strerror(errno));
	return pid;
}

static void put_pod_rt(struct env *e, const char *name, const char *ns, const char *uid,
		       const char *app, const char *ip, const char *container, const char *id,
		       enum kube_runtime rt)
{
	char label[64];
	const char *labels[] = { label, NULL };
	struct kube_pod p = {
		.name = name,
		.ns = ns,
		.uid = uid,
		.node = "node-a",
		.labels = labels,
		.pod_ip = ip,
		.host_ip = "192.168.49.2",
		.containers =
			(struct kube_container[]){ { .name = container, .id = id, .runtime = rt },
						   { 0 } },
	};
	const char *sel[] = { label, NULL };
	struct kube_service s = { .name = app, .ns = ns, .selector = sel };

	snprintf(label, sizeof(label), "app=%s", app);
	if (!strcmp(app, "web"))
		s.cluster_ip = pn.svc_ip;
	cr_assert_gt(kube_api_put(&e->k, kube_pod_json(&p)), 0);
	cr_assert_gt(kube_api_put(&e->k, kube_service_json(&s)), 0);
}

static void put_pod(struct env *e, const char *name, const char *ns, const char *uid,
		    const char *app, const char *ip, const char *container, const char *id)
{
	put_pod_rt(e, name, ns, uid, app, ip, container, id, KUBE_RT_CONTAINERD);
}

static void start_agent(struct env *e)
{
	char cfg[8192];

	e->oap = start_oap(0, &e->oap_port);
	snprintf(cfg, sizeof(cfg), config_fmt, e->oap_port, e->k.url, e->k.token_path,
		 e->k.ca_path);
	e->rover = track(start_rover_cfg(cfg));
	cr_assert_gt(e->rover, 0);
}

/* Waits until the access-log worker traces pid (its log says so). */
static void wait_traced(pid_t pid, int timeout_ms)
{
	char line[96];

	snprintf(line, sizeof(line), "access log: tracing pid %d ", (int)pid);
	cr_assert(wait_log(line, timeout_ms), "pid %d never traced", (int)pid);
}

/*
 * Every access-log message so far, each with the connection it belongs to (the one carried by
 * the last message of its stream that carried one) and the node of its stream.
 */
struct amsg {
	struct json_object *msg;
	struct json_object *conn; /* borrowed from an earlier (or this) message */
	struct json_object *node;
	int first_of_stream;
};

struct alog {
	struct json_object **r;
	size_t nr;
	struct amsg *m;
	size_t n;
};

static void alog_read(struct alog *a)
{
	struct json_object *conn = NULL, *node = NULL;
	long stream = -1;

	a->r = records(&a->nr);
	a->m = calloc(a->nr + 1, sizeof(*a->m));
	a->n = 0;
	for (size_t i = 0; i < a->nr; i++) {
		struct json_object *msg = at(a->r[i], "message");
		struct amsg *m;

		if (strcmp(method_of(a->r[i]), METHOD))
			continue;
		m = &a->m[a->n++];
		if ((long)num_at(a->r[i], "stream") != stream) {
			stream = (long)num_at(a->r[i], "stream");
			conn = NULL;
			node = NULL;
			m->first_of_stream = 1;
			cr_assert_eq(num_at(a->r[i], "index"), 0, "a stream's first message");
		}
		if (at(msg, "node"))
			node = at(msg, "node");
		if (at(msg, "connection"))
			conn = at(msg, "connection");
		m->msg = msg;
		m->conn = conn;
		m->node = node;
	}
}

static void alog_free(struct alog *a)
{
	records_free(a->r, a->nr);
	free(a->m);
}

static const char *s_or(const char *s)
{
	return s ? s : "";
}

/* The connection's local pod and remote pod ("" when the remote is an IP address). */
static const char *local_pod(const struct amsg *m)
{
	return s_or(str_at(m->conn, "local.kubernetes.podName"));
}

static const char *remote_pod(const struct amsg *m)
{
	return s_or(str_at(m->conn, "remote.kubernetes.podName"));
}

static const char *remote_ip(const struct amsg *m)
{
	return s_or(str_at(m->conn, "remote.ip.host"));
}

/* HTTP protocol logs of local pod lpod whose remote is rpeer (a pod, or an IP), path, status. */
static int http_logs(const struct alog *a, const char *lpod, const char *rpeer, const char *ver,
		     const char *path, int status)
{
	int n = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct amsg *m = &a->m[i];
		struct json_object *h = at(m->msg, "protocolLog.http");

		if (!h || !m->conn || strcmp(local_pod(m), lpod))
			continue;
		if (strcmp(remote_pod(m), rpeer) && strcmp(remote_ip(m), rpeer))
			continue;
		if (strcmp(s_or(str_at(h, "version")), ver) &&
		    !(!strcmp(ver, "HTTP1") && !str_at(h, "version")))
			continue;
		if (strcmp(s_or(str_at(h, "request.path")), path) ||
		    (int)num_at(h, "response.statusCode") != status)
			continue;
		n++;
	}
	return n;
}

/*
 * Kernel logs of kind ("connect", "write" ...) of pod lpod on connections whose local port is
 * lport (0: any), and the sum of their field (NULL: none) into *ret_sum. By port, not by the
 * connection's protocol: a connect is logged before the first bytes tell the protocol.
 */
static int kernel_logs(const struct alog *a, const char *lpod, int lport, const char *kind,
		       const char *field, uint64_t *ret_sum)
{
	int n = 0;
	uint64_t sum = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct amsg *m = &a->m[i];
		struct json_object *kl = at(m->msg, "kernelLogs");

		if (!kl || !m->conn || strcmp(local_pod(m), lpod) ||
		    (lport && (int)num_at(m->conn, "local.kubernetes.port") != lport))
			continue;
		for (size_t k = 0; k < json_object_array_length(kl); k++) {
			struct json_object *op = at(json_object_array_get_idx(kl, k), kind);

			if (!op)
				continue;
			n++;
			if (field)
				sum += (uint64_t)num_at(op, field);
		}
	}
	if (ret_sum)
		*ret_sum = sum;
	return n;
}

/* nginx's own count of its plaintext HTTP/1 requests (port 80) and the bytes it sent for them. */
static void nginx_h1(const struct env *e, int *ret_requests, uint64_t *ret_sent)
{
	char path[512];
	char *text, *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/access.log", e->nginx_dir);
	text = slurp(path, NULL);
	*ret_requests = 0;
	*ret_sent = 0;
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned status, port;
		unsigned long long sent, len;
		char proto[32];

		if (sscanf(line, "%u %llu %llu %31s %u", &status, &sent, &len, proto, &port) == 5 &&
		    !strncmp(proto, "HTTP/1", 6) && port == 80) {
			++*ret_requests;
			*ret_sent += sent;
		}
	}
	free(text);
}

/* Waits until pod lpod has want HTTP logs as http_logs() counts them (never more). */
static int wait_http_logs(const char *lpod, const char *rpeer, const char *ver, const char *path,
			  int status, int want, int timeout_ms)
{
	int got = 0;

	for (int waited = 0; waited <= timeout_ms; waited += 250) {
		struct alog a;

		alog_read(&a);
		got = http_logs(&a, lpod, rpeer, ver, path, status);
		alog_free(&a);
		if (got >= want)
			break;
		sleep_ms(250);
	}
	return got;
}

Test(accesslog, pods_traffic_arrives_as_upstreams_access_log_exactly)
{
	struct env e = { 0 };
	char uid[NPODS][37], uid_sys[37], id[NPODS][65], id_sys[65], cmd[1024];
	char *go = strdup(tmp_path("go"));
	pid_t web, client, sys_client;
	struct alog a;

	podnet_up();
	service_nat(1);
	for (int i = 0; i < NPODS; i++)
		kube_random_uid(uid[i]);
	kube_random_uid(uid_sys);
	cr_assert_eq(kube_api_start(tmp, 0, 1, &e.k), 0, "fake API server did not start");
	cr_assert_gt(kube_api_put(&e.k, kube_node_json("node-a", "192.168.49.2")), 0);

	web = pod_nginx(&e, uid[0], id[0]);
	/* pod 1: ten requests straight to the pod, ten through the Service's address. */
	snprintf(cmd, sizeof(cmd),
		 "curl -s -o /dev/null http://%1$s/ok http://%1$s/ok http://%1$s/ok "
		 "http://%1$s/ok http://%1$s/ok http://%1$s/ok http://%1$s/ok http://%1$s/ok "
		 "http://%1$s/ok http://%1$s/missing --next -s -o /dev/null "
		 "http://%2$s/ok http://%2$s/ok http://%2$s/ok http://%2$s/ok http://%2$s/ok "
		 "http://%2$s/ok http://%2$s/ok http://%2$s/ok http://%2$s/ok http://%2$s/ok",
		 pn.ip[0], pn.svc_ip);
	/* CRI-O's naming for this one (its conmon beside it), containerd's for the others. */
	client = pod_client(1, KUBE_CRIO_SYSTEMD, uid[1], id[1], go, cmd);
	/* pod 2, of an excluded namespace: the same requests, never seen. */
	snprintf(cmd, sizeof(cmd), "curl -s -o /dev/null http://%1$s/ok http://%1$s/ok", pn.ip[0]);
	sys_client = pod_client(2, KUBE_CONTAINERD_SYSTEMD, uid_sys, id_sys, go, cmd);

	put_pod(&e, "web-0", "shop", uid[0], "web", pn.ip[0], "web", id[0]);
	put_pod_rt(&e, "client-0", "shop", uid[1], "client", pn.ip[1], "client", id[1],
		   KUBE_RT_CRIO);
	put_pod(&e, "dns-0", "kube-system", uid_sys, "dns", pn.ip[2], "dns", id_sys);
	start_agent(&e);

	wait_traced(web, 30000);
	wait_traced(client, 30000);
	cr_assert_eq(write_file(go, "go"), 0);
	{
		int rc = wait_cmd(client, 30000);

		cr_assert_eq(rc, 0, "the client pod's curl: %d", rc);
		rc = wait_cmd(sys_client, 30000);
		cr_assert_eq(rc, 0, "the excluded pod's curl: %d", rc);
	}
	{
		/* From the host (not a pod): five requests, the server's side only. */
		struct http_totals t;
		char url[128];

		snprintf(url, sizeof(url), "http://%s/ok", pn.ip[0]);
		cr_assert_eq(curl_run(url, 5, &t), 0);
		cr_assert_eq(t.status[200], 5);
	}
	{
		/* h2c with prior knowledge, from the host: 40 requests on one connection. */
		char url[128], *out = NULL;
		char *argv[] = { "/usr/bin/h2load", "-n", "40", "-c", "1", url, NULL };

		snprintf(url, sizeof(url), "http://%s:81/ok", pn.ip[0]);
		cr_assert_eq(run_cmd(argv, &out), 0, "h2load: %s", out ? out : "");
		free(out);
	}

	{
		/*
		 * TLS: nginx's libssl probed once the shipper found it (its log says so), then
		 * three requests over HTTPS from the node: plaintext HTTP logs, tlsMode TLS.
		 */
		char line[96], url[128];
		pid_t w = find_child(web, "nginx");
		char *argv[] = { "/usr/bin/curl", "-sk", "-o", "/dev/null", url, "-o",
				 "/dev/null",	  url,	 "-o", "/dev/null", url, NULL };

		cr_assert_gt(w, 0);
		snprintf(line, sizeof(line), "of process %d: 8 probes attached", (int)w);
		cr_assert(wait_log(line, 30000), "nginx's libssl never probed");
		snprintf(url, sizeof(url), "https://%s/tls", pn.ip[0]);
		cr_assert_eq(run_cmd(argv, NULL), 0);
	}
	/* Server side: every request once, whoever sent it, with its status. */
	cr_assert_eq(wait_http_logs("web-0", "client-0", "HTTP1", "/ok", 200, 19, 20000), 19,
		     "nginx's logs of the client pod's /ok requests (9 direct, 9 via the service)");
	cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP1", "/ok", 200, 5, 20000), 5);
	cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP2", "/ok", 200, 40, 20000), 40);
	/* Client side: the remote is the nginx pod, through the Service's NAT too. */
	cr_assert_eq(wait_http_logs("client-0", "web-0", "HTTP1", "/ok", 200, 19, 20000), 19);
	cr_assert_eq(wait_http_logs("client-0", "web-0", "HTTP1", "/missing", 404, 1, 20000), 1);
	sleep_ms(2500); /* two flushes more: nothing else may come */

	alog_read(&a);
	cr_assert_eq(http_logs(&a, "web-0", "client-0", "HTTP1", "/ok", 200), 19);
	cr_assert_eq(http_logs(&a, "web-0", "client-0", "HTTP1", "/missing", 404), 1);
	cr_assert_eq(http_logs(&a, "web-0", pn.gw, "HTTP2", "/ok", 200), 40);
	{
		/* The TLS requests: plaintext parsed, on a connection said to be TLS. */
		int tls = 0;

		cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP1", "/tls", 404, 3, 20000), 3);
		alog_free(&a);
		alog_read(&a);
		for (size_t i = 0; i < a.n; i++)
			if (at(a.m[i].msg, "protocolLog.http") &&
			    !strcmp(s_or(str_at(a.m[i].msg, "protocolLog.http.request.path")),
				    "/tls"))
				tls += !strcmp(s_or(str_at(a.m[i].conn, "tlsMode")), "TLS");
		cr_assert_eq(tls, 3, "HTTPS requests on a connection said to be TLS");
	}
	cr_assert_eq(http_logs(&a, "client-0", "web-0", "HTTP1", "/ok", 200), 19);
	for (size_t i = 0; i < a.n; i++) {
		cr_assert_str_neq(local_pod(&a.m[i]), "dns-0", "a pod of an excluded namespace");
		cr_assert(a.m[i].node, "every stream starts with the node");
		if (a.m[i].first_of_stream) {
			struct json_object *ifs = at(a.m[i].node, "netInterfaces");
			int bridge = 0;

			/* The node's interfaces, the test's bridge among them with its index. */
			for (size_t k = 0; ifs && k < json_object_array_length(ifs); k++) {
				struct json_object *f = json_object_array_get_idx(ifs, k);

				bridge |= !strcmp(s_or(str_at(f, "name")), pn.br) &&
					  (unsigned)num_at(f, "index") == if_nametoindex(pn.br) &&
					  num_at(f, "mtu") > 0;
			}
			cr_assert(bridge, "the bridge %s among the node's interfaces", pn.br);
			cr_assert_str_eq(s_or(str_at(a.m[i].node, "name")), "node-a");
			cr_assert_str_eq(s_or(str_at(a.m[i].node, "policy.excludeNamespaces.1")),
					 "kube-system");
		}
	}
	/* Kernel logs: two connects by the client, their accepts by nginx; bytes as nginx's. */
	cr_assert_eq(kernel_logs(&a, "client-0", 0, "connect", NULL, NULL), 2);
	cr_assert_eq(kernel_logs(&a, "client-0", 0, "close", NULL, NULL), 2);
	{
		int requests;
		uint64_t sent, written, read_by_client;

		nginx_h1(&e, &requests, &sent);
		requests -= e.base_requests;
		sent -= e.base_sent;
		cr_assert_eq(requests, 20 + 2 + 5, "nginx's own count: %d", requests);
		kernel_logs(&a, "web-0", 80, "write", "l4Metrics.totalPackageSize", &written);
		kernel_logs(&a, "client-0", 0, "read", "l2Metrics.totalPackageSize",
			    &read_by_client);
		/* the client pod's two, the excluded pod's one, the host's one */
		cr_assert_eq(kernel_logs(&a, "web-0", 80, "accept", NULL, NULL), 4);
		cr_assert_gt(written, 0);
		/* nginx wrote to the client pod, the excluded pod and the host: all its bytes. */
		cr_assert_eq(written, sent, "nginx's write logs %llu bytes, its access log %llu",
			     (unsigned long long)written, (unsigned long long)sent);
		cr_assert_gt(read_by_client, 0);
		{
			/*
			 * The packet tracepoints joined to each call: every write sent a packet at
			 * least, on a device (the pod's eth0); every read took one.
			 */
			uint64_t pkts, ifs, rpkts;
			int writes = kernel_logs(&a, "web-0", 80, "write",
						 "l4Metrics.totalTransmitPackageCount", &pkts);
			int reads = kernel_logs(&a, "client-0", 0, "read",
						"l2Metrics.totalPackageCount", &rpkts);

			kernel_logs(&a, "web-0", 80, "write", "l2Metrics.ifindex", &ifs);
			cr_assert_gt(writes, 0);
			cr_assert_geq(pkts, (uint64_t)writes, "%llu packets for %d writes",
				      (unsigned long long)pkts, writes);
			cr_assert_geq(ifs, (uint64_t)writes, "writes without a device");
			cr_assert_geq(rpkts, (uint64_t)reads / 2, "%llu packets for %d reads",
				      (unsigned long long)rpkts, reads);
		}
	}
	alog_free(&a);
}

Test(accesslog, an_oap_away_30s_loses_nothing_and_a_deleted_pods_logs_stop)
{
	struct env e = { 0 };
	char uid[37], id[65], url[128];
	struct http_totals t;
	pid_t web, oap;
	int port;
	size_t n;
	struct json_object **r;
	uint64_t down_at;

	podnet_up();
	kube_random_uid(uid);
	cr_assert_eq(kube_api_start(tmp, 0, 1, &e.k), 0, "fake API server did not start");
	cr_assert_gt(kube_api_put(&e.k, kube_node_json("node-a", "192.168.49.2")), 0);
	web = pod_nginx(&e, uid, id);
	put_pod(&e, "web-0", "shop", uid, "web", pn.ip[0], "web", id);
	start_agent(&e);
	wait_traced(web, 30000);
	snprintf(url, sizeof(url), "http://%s/ok", pn.ip[0]);
	cr_assert_eq(curl_run(url, 3, &t), 0);
	cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP1", "/ok", 200, 3, 20000), 3);
	/*
	 * A hostile client: a path that is not UTF-8, which an OAP refuses in a proto3 string
	 * (with the stream around it). Its log comes with '?' for the bad byte, the others too.
	 */
	{
		char *argv[] = { "/usr/bin/curl",    "-s",	  "-o", "/dev/null",
				 "--request-target", "/bad\377x", url,	NULL };

		cr_assert_eq(run_cmd(argv, NULL), 0);
	}
	cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP1", "/bad?x", 404, 1, 20000), 1);

	/* The OAP away for 30 s: what happens meanwhile waits in the spool. */
	r = records(&n);
	records_free(r, n);
	oap = e.oap;
	cr_assert_gt(oap, 0, "the fake OAP's pid");
	stop(oap, SIGTERM);
	down_at = (uint64_t)wall_ms();
	cr_assert_eq(curl_run(url, 10, &t), 0);
	cr_assert_eq(t.status[200], 10);
	while ((uint64_t)wall_ms() < down_at + 30000)
		sleep_ms(500);
	start_oap(e.oap_port, &port);
	cr_assert_eq(port, e.oap_port);
	cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP1", "/ok", 200, 13, 60000), 13,
		     "the ten requests made while the OAP was away");

	/* The pod deleted (its process still runs): no log of it from then on. */
	cr_assert_gt(kube_api_delete(&e.k, "Pod", "shop", "web-0"), 0);
	{
		char line[96];

		snprintf(line, sizeof(line), "access log: no longer tracing pid %d ", (int)web);
		cr_assert(wait_log(line, 30000), "the deleted pod's nginx still traced");
	}
	snprintf(url, sizeof(url), "http://%s/missing", pn.ip[0]);
	cr_assert_eq(curl_run(url, 5, &t), 0);
	cr_assert_eq(t.status[404], 5);
	sleep_ms(3000); /* three flushes */
	cr_assert_eq(wait_http_logs("web-0", pn.gw, "HTTP1", "/missing", 404, 1, 0), 0);
}

/* ---- make bench (scripts/bench_accesslog.sh): not part of make test ---- */

/* CPU (user + system, µs) of every rover process of the host now. */
static uint64_t rover_cpu_us(void)
{
	long tck = sysconf(_SC_CLK_TCK);
	uint64_t ticks = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[300], buf[1024], *p;
		unsigned long long ut, st;
		FILE *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && strstr(buf, "(rover") &&
		    (p = strrchr(buf, ')')) &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			   &st) == 2)
			ticks += ut + st;
		fclose(f);
	}
	if (d)
		closedir(d);
	return ticks * 1000000ull / (uint64_t)tck;
}

/*
 * The module's cost: 20 idle pods and nginx in a pod of its own, wrk from the node against the
 * pod's address, rounds ordered ABBA without (A) and with (B) the agent's access log on; the
 * OAP counts the streams without decoding them (FAKE_OAP_SINK). Prints one figure a line,
 * `accesslog.<name> <value>`; asserts nothing about speed (a bench, not a test).
 */
TestSuite(accesslog_bench, .init = setup, .fini = teardown, .timeout = 600);

Test(accesslog_bench, twenty_idle_pods_and_nginx_under_wrk)
{
	struct env e = { 0 };
	char uid[37], id[65], url[128], idle_uid[20][37], idle_id[20][65];
	const char *secs = getenv("BENCH_ALOG_SECONDS");
	int dur = secs && atoi(secs) > 0 ? atoi(secs) : 8;
	double rps[2] = { 0 };
	uint64_t reqs_b = 0, cpu_b = 0;
	int nrounds[2] = { 0 };
	const char order[] = "ABBA";

	if (!getenv("ROVER_BENCH"))
		cr_skip_test("a bench: make bench runs it");
	setenv("FAKE_OAP_SINK", METHOD, 1);
	podnet_up();
	cr_assert_eq(kube_api_start(tmp, 0, 1, &e.k), 0);
	cr_assert_gt(kube_api_put(&e.k, kube_node_json("node-a", "192.168.49.2")), 0);
	for (int i = 0; i < 20; i++) {
		char name[32], *argv[] = { "/bin/sleep", "600", NULL };
		pid_t p;

		kube_random_uid(idle_uid[i]);
		kube_random_id(idle_id[i]);
		p = kube_spawn_in_cgroup(KUBE_CGROUPFS, idle_uid[i], idle_id[i], argv);
		cr_assert_gt(p, 0);
		snprintf(name, sizeof(name), "idle-%d", i);
		put_pod(&e, name, "idle", idle_uid[i], name, "10.245.0.1", "idle", idle_id[i]);
	}
	kube_random_uid(uid);
	pod_nginx(&e, uid, id);
	put_pod(&e, "web-0", "shop", uid, "web", pn.ip[0], "web", id);
	snprintf(url, sizeof(url), "http://%s/ok", pn.ip[0]);
	for (int round = 0; round < 4; round++) {
		int b = order[round] == 'B';
		struct wrk_result w;
		uint64_t c0, c1;

		if (b && !e.rover) {
			start_agent(&e);
			wait_traced(e.nginx, 30000);
			sleep_ms(2000); /* the module settled: 21 pods' processes traced */
		}
		c0 = rover_cpu_us();
		cr_assert_eq(wrk_run(url, dur, 4, &w), 0);
		c1 = rover_cpu_us();
		rps[b] += w.rps;
		nrounds[b]++;
		if (b) {
			reqs_b += w.requests;
			cpu_b += c1 - c0;
		}
		printf("accesslog.round%d_%c_rps %.0f\n", round + 1, order[round], w.rps);
		if (b && round == 2) {
			char *log, *last, *nl;

			stop(e.rover, SIGTERM);
			e.rover = 0;
			/* What the module lost, as its shipper says at the end. */
			log = slurp(tmp_path("rover.log"), NULL);
			last = NULL;
			for (char *p = log; p && (p = strstr(p, "access log: lost so far")); p++)
				last = p;
			if (last && (nl = strchr(last, '\n')))
				*nl = 0;
			printf("accesslog.losses %s\n", last ? last : "none said");
			printf("accesslog.spool_full_episodes %d\n", count_in_log("spool full"));
			free(log);
		}
	}
	printf("accesslog.rps_without %.0f\n", rps[0] / nrounds[0]);
	printf("accesslog.rps_with %.0f\n", rps[1] / nrounds[1]);
	printf("accesslog.throughput_ratio %.3f\n", (rps[1] / nrounds[1]) / (rps[0] / nrounds[0]));
	printf("accesslog.agent_cpu_ms_per_1000_requests %.2f\n",
	       reqs_b ? (double)cpu_b / 1000.0 / ((double)reqs_b / 1000.0) : 0.0);
	{
		size_t n;
		struct json_object **r = records(&n);
		uint64_t msgs = 0, streams = 0;

		for (size_t i = 0; i < n; i++)
			if (!strcmp(method_of(r[i]), METHOD)) {
				streams++;
				msgs += (uint64_t)num_at(r[i], "messages");
			}
		records_free(r, n);
		printf("accesslog.streams %llu\naccesslog.messages %llu\n",
		       (unsigned long long)streams, (unsigned long long)msgs);
		printf("accesslog.messages_per_request %.2f\n",
		       reqs_b ? (double)msgs / (double)reqs_b : 0.0);
	}
	fflush(stdout);
}
