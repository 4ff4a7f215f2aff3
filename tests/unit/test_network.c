// SPDX-License-Identifier: Apache-2.0
/*
 * shipper/network/ (network.c, netconn.c, netl7.c, netsample.c, netmeter.c, netevent.c): frames
 * built by hand as the worker passes the program's records, then the traffic, the meters, logs and span attached events decoded back
 * with the generated unpackers, and the report.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "language-agent/Meter.pb-c.h"
#include "language-agent/Tracing.pb-c.h"
#include "logging/Logging.pb-c.h"
#include "shipper/network/netpriv.h"
#include "shipper/network/network.h"

#define TASK 7
#define MS 1000000ull
#define T0 (1000 * MS)

struct fb {
	uint8_t buf[65536];
	size_t len;
	uint32_t count;
};

static void fb_init(struct fb *f)
{
	struct ship_net_hdr h = { .task_id = TASK };

	memset(f, 0, sizeof(*f));
	memcpy(f->buf, &h, sizeof(h));
	f->len = sizeof(h);
}

static void fb_put(struct fb *f, const void *p, size_t n)
{
	cr_assert(f->len + n <= sizeof(f->buf));
	memcpy(f->buf + f->len, p, n);
	f->len += n;
}

static void fb_data(struct fb *f, uint64_t id, uint32_t tgid, int dir, uint64_t seq, uint64_t ts,
		    const char *s, size_t captured, size_t actual)
{
	struct net_rec_data d = {
		.hdr = { .kind = NET_REC_DATA },
		.conn_id = id,
		.start_ns = ts,
		.end_ns = ts,
		.seq = seq,
		.tgid = tgid,
		.actual = (uint32_t)actual,
		.captured = (uint16_t)captured,
		.dir = (uint8_t)dir,
		.fn = dir ? NET_FN_READ : NET_FN_WRITE,
		.proto = NET_PROTO_HTTP1,
	};
	static const uint8_t zero[8];
	size_t len = (sizeof(d) + captured + 7) & ~(size_t)7;

	d.hdr.len = (uint32_t)len;
	fb_put(f, &d, sizeof(d));
	fb_put(f, s, captured);
	fb_put(f, zero, len - sizeof(d) - captured);
	f->count++;
}

static void fb_close(struct fb *f, const struct net_conn *c)
{
	struct net_rec_close r = { .hdr = { .kind = NET_REC_CLOSE, .len = sizeof(r) }, .conn = *c };

	cr_assert_eq(sizeof(r) % 8, 0);
	fb_put(f, &r, sizeof(r));
	f->count++;
}

static void fb_conn(struct fb *f, const struct net_conn *c)
{
	fb_put(f, c, sizeof(*c));
	f->count++;
}

static int fb_send(struct net_task *t, struct fb *f, uint32_t type)
{
	struct ship_net_hdr h;

	memcpy(&h, f->buf, sizeof(h));
	h.count = f->count;
	memcpy(f->buf, &h, sizeof(h));
	return net_task__frame(t, type, f->buf, f->len);
}

static struct net_conn conn4(uint64_t id, uint32_t tgid, uint8_t role, const char *l, uint16_t lp,
			     const char *r, uint16_t rp)
{
	struct net_conn c = {
		.id = id,
		.tgid = tgid,
		.fd = 5,
		.role = role,
		.family = AF_INET,
		.proto = NET_PROTO_HTTP1,
		.lport = lp,
		.rport = rp,
		.open_ns = T0,
		.connect_exe_ns = role ? 20000 : 0,
	};

	cr_assert_eq(inet_pton(AF_INET, l, c.laddr), 1);
	cr_assert_eq(inet_pton(AF_INET, r, c.raddr), 1);
	return c;
}

static struct net_task *task(void)
{
	struct net_task_opts o = { .task_id = TASK, .report_interval_ms = 2000 };
	struct net_task *t = net_task__new(&o);

	cr_assert(t);
	return t;
}

static void procs(struct net_task *t, const char *inst_server)
{
	struct msg_net_process p[2];

	memset(p, 0, sizeof(p));
	p[0].pid = 100;
	snprintf(p[0].process_id, sizeof(p[0].process_id), "p-client");
	snprintf(p[0].service, sizeof(p[0].service), "svc");
	snprintf(p[0].instance, sizeof(p[0].instance), "inst");
	snprintf(p[0].name, sizeof(p[0].name), "curl");
	snprintf(p[0].layer, sizeof(p[0].layer), "K8S_SERVICE");
	p[1] = p[0];
	p[1].pid = 200;
	snprintf(p[1].process_id, sizeof(p[1].process_id), "p-server");
	snprintf(p[1].instance, sizeof(p[1].instance), "%s", inst_server);
	snprintf(p[1].name, sizeof(p[1].name), "nginx");
	cr_assert_eq(net_task__set_processes(t, p, 2), 0);
}

/* sw8 with trace id "trace-1" */
#define SW8 "1-dHJhY2UtMQ==-c2Vn-3-YQ==-YQ==-YQ==-YQ=="
#define REQS                                                              \
	"GET /api/users?id=1 HTTP/1.1\r\nHost: x\r\nsw8: " SW8 "\r\n\r\n" \
	"GET /api/items HTTP/1.1\r\nHost: x\r\n\r\n"
#define RESPS                                            \
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" \
	"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"

/*
 * pid 100 (client, conn 1, 127.0.0.1:40000) and pid 200 (server, conn 2, 127.0.0.1:8080):
 * two pipelined requests in three segments, answered 150 ms later in two.
 */
static void converse(struct net_task *t)
{
	const char *q = REQS, *r = RESPS;
	size_t ql = strlen(q), rl = strlen(r), cut1 = 10, cut2 = 70, rc = 30;
	struct fb f;

	fb_init(&f);
	fb_data(&f, 1, 100, NET_DIR_EGRESS, 1, T0, q, cut1, cut1);
	fb_data(&f, 1, 100, NET_DIR_EGRESS, 2, T0 + 1000, q + cut1, cut2 - cut1, cut2 - cut1);
	fb_data(&f, 1, 100, NET_DIR_EGRESS, 3, T0 + 2000, q + cut2, ql - cut2, ql - cut2);
	fb_data(&f, 2, 200, NET_DIR_INGRESS, 1, T0 + 3000, q, ql, ql);
	fb_data(&f, 2, 200, NET_DIR_EGRESS, 1, T0 + 120 * MS, r, rc, rc);
	fb_data(&f, 2, 200, NET_DIR_EGRESS, 2, T0 + 121 * MS, r + rc, rl - rc, rl - rc);
	fb_data(&f, 1, 100, NET_DIR_INGRESS, 1, T0 + 150 * MS, r, rl, rl);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
}

static void conns(struct net_task *t, uint64_t mul)
{
	struct net_conn c = conn4(1, 100, NET_ROLE_CLIENT, "127.0.0.1", 40000, "127.0.0.1", 8080);
	struct net_conn s = conn4(2, 200, NET_ROLE_SERVER, "127.0.0.1", 8080, "127.0.0.1", 40000);
	struct fb f;

	c.dir[0].count = 3 * mul;
	c.dir[0].bytes = 300 * mul;
	c.dir[0].exe_ns = 30000 * mul;
	c.dir[0].hist[1] = (uint32_t)(3 * mul);
	c.dir[1].count = 1 * mul;
	c.dir[1].bytes = 100 * mul;
	c.dir[1].exe_ns = 5000 * mul;
	c.dir[1].hist[0] = (uint32_t)mul;
	c.rtt_count = 2 * mul;
	c.rtt_us = 100 * mul;
	c.rtt_hist[1] = (uint32_t)(2 * mul);
	s.dir[1].count = 1 * mul;
	s.dir[1].bytes = 300 * mul;
	fb_init(&f);
	fb_conn(&f, &c);
	fb_conn(&f, &s);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_CONNS), 0);
}

struct mtr {
	char name[128];
	char labels[512]; /* name=value,... */
	double value;
	int hist;
	size_t nb;
	double b1;
	int64_t c1;
	char service[64];
};

static size_t decode(struct spool_batch *b, struct mtr *out, size_t max, size_t *ncoll)
{
	const uint8_t *msg;
	size_t off = 0, len, n = 0;

	*ncoll = 0;
	while (spool_batch__next(b, &off, &msg, &len) == 1) {
		Skywalking__V3__MeterDataCollection *c =
			skywalking__v3__meter_data_collection__unpack(NULL, len, msg);

		cr_assert(c);
		(*ncoll)++;
		cr_assert(c->n_meterdata > 0);
		cr_assert_str_eq(c->meterdata[0]->service, "svc");
		cr_assert_eq(c->meterdata[0]->timestamp, 12345);
		for (size_t i = 0; i < c->n_meterdata && n < max; i++, n++) {
			Skywalking__V3__MeterData *d = c->meterdata[i];
			Skywalking__V3__Label **l;
			size_t nl;

			memset(&out[n], 0, sizeof(out[n]));
			snprintf(out[n].service, sizeof(out[n].service), "%s", d->service);
			if (i)
				cr_assert_str_empty(d->service);
			if (d->metric_case == SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE) {
				snprintf(out[n].name, sizeof(out[n].name), "%s",
					 d->singlevalue->name);
				out[n].value = d->singlevalue->value;
				l = d->singlevalue->labels;
				nl = d->singlevalue->n_labels;
			} else {
				cr_assert_eq(d->metric_case,
					     SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM);
				snprintf(out[n].name, sizeof(out[n].name), "%s",
					 d->histogram->name);
				out[n].hist = 1;
				out[n].nb = d->histogram->n_values;
				out[n].b1 = d->histogram->values[1]->bucket;
				out[n].c1 = d->histogram->values[1]->count;
				l = d->histogram->labels;
				nl = d->histogram->n_labels;
			}
			for (size_t k = 0; k < nl; k++) {
				size_t o = strlen(out[n].labels);

				snprintf(out[n].labels + o, sizeof(out[n].labels) - o, "%s%s=%s",
					 k ? "," : "", l[k]->name, l[k]->value);
			}
		}
		skywalking__v3__meter_data_collection__free_unpacked(c, NULL);
	}
	return n;
}

static const struct mtr *find(const struct mtr *m, size_t n, const char *name, const char *lab)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].name, name) && (!lab || strstr(m[i].labels, lab)))
			return &m[i];
	return NULL;
}

#define CL \
	"client_process_id=p-client,server_process_id=p-server,side=client,protocol=http,is_ssl=false"
#define SV \
	"server_process_id=p-server,client_process_id=p-client,side=server,protocol=http,is_ssl=false"

Test(network, http_pair_meters)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 };
	struct net_stats st;
	struct mtr *m = calloc(512, sizeof(*m));
	const struct mtr *x;
	size_t n, ncoll;

	procs(t, "inst");
	converse(t);
	conns(t, 1);
	net_task__stats(t, &st);
	cr_assert_eq(st.http_exchanges, 4);
	cr_assert_eq(st.conns_seen, 2);
	cr_assert_eq(st.bad_records + st.bad_frames, 0);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	n = decode(&b, m, 512, &ncoll);
	cr_assert_eq(ncoll, 1, "one collection per (service, instance)");
	cr_assert_eq(b.task_id, TASK);

	/* the first meters of the client's traffic, in upstream's order */
	cr_assert_str_eq(m[0].name, "rover_net_p_client_write_counts_counter");
	cr_assert_str_eq(m[0].labels, CL);
	cr_assert_eq(m[0].value, 3);
	cr_assert_str_eq(m[1].name, "rover_net_p_client_write_bytes_counter");
	cr_assert_eq(m[1].value, 300);
	cr_assert_str_eq(m[2].name, "rover_net_p_client_write_exe_time_counter");
	cr_assert_eq(m[2].value, 10000, "an average: %f", m[2].value);
	cr_assert_str_eq(m[3].name, "rover_net_p_client_read_counts_counter");
	x = find(m, n, "rover_net_p_client_write_rtt_counts_counter", NULL);
	cr_assert(x);
	cr_assert(!find(m, n, "rover_net_p_client_write_rtt_bytes_counter", NULL));
	x = find(m, n, "rover_net_p_client_write_rtt_exe_time_counter", NULL);
	cr_assert(x && x->value == 50);
	x = find(m, n, "rover_net_p_client_connect_counts_counter", NULL);
	cr_assert(x && x->value == 1);
	cr_assert(!find(m, n, "rover_net_p_client_close_counts_counter", NULL));
	cr_assert(!find(m, n, "rover_net_p_client_retransmit_counts_counter", NULL));
	x = find(m, n, "rover_net_p_client_write_rtt_histogram", NULL);
	cr_assert(x && x->hist && x->nb == NET_L4_BUCKETS && x->b1 == 10 && x->c1 == 2);
	x = find(m, n, "rover_net_p_client_write_exe_time_histogram", NULL);
	cr_assert(x && x->nb == NET_L4_BUCKETS && x->b1 == 10000 && x->c1 == 3);
	cr_assert_str_eq(x->labels, CL);
	x = find(m, n, "rover_net_p_client_connect_exe_time_histogram", NULL);
	cr_assert(x && x->c1 == 1, "20 µs lands in the 10 µs bucket");

	/* HTTP/1, both sides */
	x = find(m, n, "rover_net_p_http1_request_counter", CL);
	cr_assert(x && x->value == 2);
	x = find(m, n, "rover_net_p_http1_request_counter", SV);
	cr_assert(x && x->value == 2);
	x = find(m, n, "rover_net_p_http1_response_status_counter", CL ",code=200");
	cr_assert(x && x->value == 1);
	x = find(m, n, "rover_net_p_http1_response_status_counter", CL ",code=404");
	cr_assert(x && x->value == 1);
	x = find(m, n, "rover_net_p_http1_client_duration_avg", CL);
	cr_assert(x);
	x = find(m, n, "rover_net_p_http1_server_duration_histogram", SV);
	cr_assert(x && x->nb == NET_DUR_BUCKETS && x->b1 == 2);
	x = find(m, n, "rover_net_p_http1_request_package_size_histogram", CL);
	cr_assert(x && x->nb == NET_SIZE_BUCKETS && x->b1 == 512);
	cr_assert(find(m, n, "rover_net_p_http1_response_package_size_avg", SV));
	for (size_t i = 0; i < n; i++) {
		cr_assert(!strstr(m[i].labels, "service="), "no service label");
		cr_assert(!strstr(m[i].labels, "instance="), "no instance label");
	}
	cr_assert_eq(logs.nmsgs, 0, "no sampling rules");
	free(b.data);
	free(logs.data);
	free(m);
	net_task__free(t);
}

Test(network, l4_deltas_and_late_close)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 };
	struct mtr *m = calloc(512, sizeof(*m));
	const struct mtr *x;
	size_t n, ncoll;
	struct fb f;
	struct net_conn c;

	procs(t, "inst");
	conns(t, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	conns(t, 3);
	cr_assert_eq(net_task__interval(t, 4000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	n = decode(&b, m, 512, &ncoll);
	x = find(m, n, "rover_net_p_client_write_counts_counter", NULL);
	cr_assert(x && x->value == 6, "delta 9 - 3");
	x = find(m, n, "rover_net_p_client_write_bytes_counter", NULL);
	cr_assert(x && x->value == 600);
	x = find(m, n, "rover_net_p_client_write_exe_time_histogram", NULL);
	cr_assert(x && x->c1 == 6);
	cr_assert(!find(m, n, "rover_net_p_client_connect_counts_counter", NULL), "counted once");
	free(b.data);
	memset(&b, 0, sizeof(b));

	/* closed after it was flushed: still one close, with its final counters */
	c = conn4(1, 100, NET_ROLE_CLIENT, "127.0.0.1", 40000, "127.0.0.1", 8080);
	c.dir[0].count = 10;
	c.dir[0].bytes = 1000;
	c.close_exe_ns = 7000;
	c.close_ns = 5000 * MS;
	c.flags = NET_CONN_CLOSED;
	fb_init(&f);
	fb_close(&f, &c);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
	cr_assert_eq(net_task__interval(t, 6000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	n = decode(&b, m, 512, &ncoll);
	x = find(m, n, "rover_net_p_client_close_counts_counter", NULL);
	cr_assert(x && x->value == 1);
	x = find(m, n, "rover_net_p_client_close_exe_time_counter", NULL);
	cr_assert(x && x->value == 7000);
	x = find(m, n, "rover_net_p_client_write_counts_counter", NULL);
	cr_assert(x && x->value == 1, "10 - 9");
	free(b.data);
	memset(&b, 0, sizeof(b));
	cr_assert_eq(net_task__interval(t, 8000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	n = decode(&b, m, 512, &ncoll);
	cr_assert(!find(m, n, "rover_net_p_client_close_counts_counter", NULL), "once only");
	free(b.data);
	free(logs.data);
	free(m);
	net_task__free(t);
}

static void one_conn(struct net_task *t, const struct net_conn *c)
{
	struct fb f;

	fb_init(&f);
	fb_conn(&f, c);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_CONNS), 0);
}

Test(network, remote_labels)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 };
	struct mtr *m = calloc(512, sizeof(*m));
	size_t n, ncoll;
	struct net_conn c;

	procs(t, "other-instance");
	conns(t, 1); /* 100 <-> 200 on loopback, other instances: _local */
	c = conn4(3, 100, NET_ROLE_CLIENT, "10.0.0.5", 41000, "10.1.2.3", 5432);
	c.dir[0].count = 1;
	one_conn(t, &c);
	c = conn4(4, 100, NET_ROLE_CLIENT, "10.0.0.5", 41001, "10.0.0.5", 9000);
	c.dir[0].count = 1;
	one_conn(t, &c); /* a monitored local IP: _local */
	c = conn4(5, 100, NET_ROLE_CLIENT, "0.0.0.0", 41002, "0.0.0.0", 443);
	c.family = AF_INET6;
	cr_assert_eq(inet_pton(AF_INET6, "2001:db8::5", c.laddr), 1);
	cr_assert_eq(inet_pton(AF_INET6, "2001:db8::1", c.raddr), 1);
	c.dir[0].count = 1;
	one_conn(t, &c);
	c.id = 6;
	c.lport = 41003;
	c.rport = 80;
	cr_assert_eq(inet_pton(AF_INET6, "::ffff:10.0.0.9", c.raddr), 1);
	one_conn(t, &c);
	/* server side: two client ports of one remote IP are one traffic */
	c = conn4(7, 200, NET_ROLE_SERVER, "10.0.0.5", 8080, "10.9.9.9", 50000);
	c.dir[1].count = 1;
	one_conn(t, &c);
	c = conn4(8, 200, NET_ROLE_SERVER, "10.0.0.5", 8080, "10.9.9.9", 50001);
	c.dir[1].count = 2;
	one_conn(t, &c);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	n = decode(&b, m, 512, &ncoll);
	cr_assert_eq(ncoll, 2, "two instances");
	cr_assert(find(m, n, "rover_net_p_client_write_counts_counter",
		       "client_process_id=p-client,server_local=true,side=client"));
	cr_assert(find(m, n, "rover_net_p_client_write_counts_counter",
		       "client_process_id=p-client,server_address=10.1.2.3:5432,side=client"));
	cr_assert(find(m, n, "rover_net_p_client_write_counts_counter",
		       "server_address=2001:db8::1:443,"));
	cr_assert(find(m, n, "rover_net_p_client_write_counts_counter",
		       "server_address=10.0.0.9:80,"));
	{
		const struct mtr *x = find(m, n, "rover_net_p_server_read_counts_counter",
					   "client_address=10.9.9.9");

		cr_assert(x && x->value == 3, "client ports aggregated");
	}
	cr_assert(!find(m, n, "rover_net_p_client_write_counts_counter", "server_process_id="));
	free(b.data);
	free(logs.data);
	free(m);
	net_task__free(t);
}

/* The report into fd, as the shipper's FILE would take it. 0 or -errno. */
static int write_report_fd(struct net_task *t, int fd, enum net_report_format f, char *summary,
			   size_t summary_len)
{
	FILE *out = fdopen(dup(fd), "w");
	int err;

	if (!out)
		return -errno;
	err = net_task__write_report(t, out, f, summary, summary_len);
	if (fclose(out) && !err)
		err = -errno;
	return err;
}

/* The task's JSON report, its text in buf (for messages), parsed. */
static struct json_object *report_json(struct net_task *t, char *buf, size_t size)
{
	char path[] = "/tmp/rover-test-report.XXXXXX";
	struct json_object *j;
	int fd = mkstemp(path);
	ssize_t n;

	cr_assert(fd >= 0);
	unlink(path);
	cr_assert_eq(write_report_fd(t, fd, NET_REPORT_JSON, NULL, 0), 0);
	n = pread(fd, buf, size - 1, 0);
	close(fd);
	cr_assert(n > 0);
	buf[n] = '\0';
	j = json_tokener_parse(buf);
	cr_assert(j, "%s", buf);
	return j;
}

static struct json_object *log_json(const uint8_t *msg, size_t len, char *trace, size_t tl)
{
	Skywalking__V3__LogData *d = skywalking__v3__log_data__unpack(NULL, len, msg);
	struct json_object *j;

	cr_assert(d);
	cr_assert_str_eq(d->service, "svc");
	cr_assert_str_eq(d->layer, "K8S_SERVICE");
	cr_assert_eq(d->timestamp, 12345);
	cr_assert(d->tags && d->tags->n_data == 1);
	cr_assert_str_eq(d->tags->data[0]->key, "LOG_KIND");
	cr_assert_str_eq(d->tags->data[0]->value, "NET_PROFILING_SAMPLED_TRACE");
	cr_assert(d->body && d->body->content_case == SKYWALKING__V3__LOG_DATA_BODY__CONTENT_JSON);
	cr_assert_str_eq(d->body->type, "json");
	snprintf(trace, tl, "%s", d->tracecontext ? d->tracecontext->traceid : "");
	j = json_tokener_parse(d->body->json->json);
	cr_assert(j, "%s", d->body->json->json);
	skywalking__v3__log_data__free_unpacked(d, NULL);
	return j;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;

	cr_assert(json_object_object_get_ex(o, k, &v), "no %s", k);
	return json_object_get_string(v);
}

Test(network, sampled_traces)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 };
	struct msg_net_rule r[2];
	const uint8_t *msg;
	size_t off = 0, len;
	int found = 0;

	memset(r, 0, sizeof(r));
	r[0].min_duration_ms = 100; /* default rule */
	snprintf(r[1].uri_regex, sizeof(r[1].uri_regex), "^/none$");
	r[1].min_duration_ms = -1;
	procs(t, "inst");
	cr_assert_eq(net_task__add_rules(t, r, 2), 0);
	converse(t);
	conns(t, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	/* the traced request, slow on both sides; the untraced one never */
	cr_assert_eq(logs.nmsgs, 2);
	while (spool_batch__next(&logs, &off, &msg, &len) == 1) {
		char trace[64];
		struct json_object *j = log_json(msg, len, trace, sizeof(trace)), *cp, *sp, *v;
		int server = !strcmp(jstr(j, "detect_point"), "server");

		cr_assert_str_eq(trace, "trace-1");
		cr_assert_str_eq(jstr(j, "uri"), "/api/users");
		cr_assert_str_eq(jstr(j, "reason"), "slow");
		cr_assert_str_eq(jstr(j, "trace_provider"), "skywalking");
		cr_assert_str_eq(jstr(j, "component"), "http");
		cr_assert(json_object_object_get_ex(j, "latency", &v));
		cr_assert_eq(json_object_get_int64(v), server ? 120 : 150);
		cr_assert(json_object_object_get_ex(j, "status", &v));
		cr_assert_eq(json_object_get_int(v), 200);
		cr_assert(json_object_object_get_ex(j, "ssl", &v) && !json_object_get_boolean(v));
		cr_assert(json_object_object_get_ex(j, "client_process", &cp));
		cr_assert(json_object_object_get_ex(j, "server_process", &sp));
		cr_assert_str_eq(jstr(cp, "process_id"), "p-client");
		cr_assert_str_eq(jstr(sp, "process_id"), "p-server");
		cr_assert_str_eq(jstr(sp, "address"), "");
		cr_assert(json_object_object_get_ex(sp, "local", &v) &&
			  !json_object_get_boolean(v));
		found |= server ? 2 : 1;
		json_object_put(j);
	}
	cr_assert_eq(found, 3);
	free(b.data);
	free(logs.data);
	net_task__free(t);
}

Test(network, lost_segment_and_fd_reuse)
{
	struct net_task *t = task();
	struct net_stats st;
	struct fb f;
	struct net_conn a = conn4(10, 100, NET_ROLE_CLIENT, "127.0.0.1", 40000, "127.0.0.1", 8080);
	struct net_conn b = a;
	const char *q = "GET /a HTTP/1.1\r\n\r\n";

	b.id = 11; /* the same fd again, another socket */
	fb_init(&f);
	fb_data(&f, 10, 100, NET_DIR_EGRESS, 1, T0, q, strlen(q), strlen(q));
	fb_data(&f, 10, 100, NET_DIR_EGRESS, 3, T0 + 10, q, strlen(q), strlen(q));
	/* a replayed segment is refused */
	fb_data(&f, 10, 100, NET_DIR_EGRESS, 3, T0 + 20, q, strlen(q), strlen(q));
	fb_close(&f, &a);
	fb_data(&f, 11, 100, NET_DIR_EGRESS, 1, T0 + 30, q, strlen(q), strlen(q));
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
	one_conn(t, &b);
	net_task__stats(t, &st);
	cr_assert_eq(st.segments_lost, 1);
	cr_assert_eq(st.http.lost_segments, 1);
	cr_assert_eq(st.bad_records, 1);
	cr_assert_eq(st.conns_seen, 2);
	cr_assert_eq(st.conns_closed, 1);
	cr_assert_eq(st.http.requests, 3);
	cr_assert_eq(st.http_unpaired, 2, "two unanswered at close");
	net_task__free(t);
}

Test(network, garbage_frames)
{
	struct net_task *t = task();
	struct net_stats st;
	struct fb f;
	struct ship_net_hdr h = { .task_id = TASK, .count = 1 };
	uint8_t buf[256] = { 0 };
	struct net_conn c = conn4(1, 100, 9, "127.0.0.1", 1, "127.0.0.1", 2);

	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, 3), -EBADMSG);
	h.task_id = 8;
	memcpy(buf, &h, sizeof(h));
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, sizeof(h) + 8), -EBADMSG);
	h.task_id = TASK;
	memcpy(buf, &h, sizeof(h));
	/* a record length of 0, of 12, past the end */
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, sizeof(h) + 8), -EBADMSG);
	((uint32_t *)(buf + sizeof(h)))[1] = 12;
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, sizeof(h) + 16), -EBADMSG);
	((uint32_t *)(buf + sizeof(h)))[1] = 64;
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, sizeof(h) + 16), -EBADMSG);
	/* bytes after the counted records */
	((uint32_t *)(buf + sizeof(h)))[1] = 8;
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, sizeof(h) + 16), -EBADMSG);
	/* a well framed record of an unknown kind: the frame is fine, the record is not */
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_DATA, buf, sizeof(h) + 8), 0);
	/* conns: a count that does not match, then a bad role */
	h.count = 2;
	memcpy(buf, &h, sizeof(h));
	cr_assert_eq(net_task__frame(t, MSG_SHIP_NET_CONNS, buf, sizeof(h)), -EBADMSG);
	cr_assert_eq(net_task__frame(t, 999, buf, sizeof(h)), -EBADMSG);
	fb_init(&f);
	fb_conn(&f, &c);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_CONNS), 0);
	/* data with captured > actual */
	fb_init(&f);
	fb_data(&f, 1, 100, 0, 1, T0, "GET", 3, 2);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
	net_task__stats(t, &st);
	cr_assert_eq(st.bad_frames, 8);
	cr_assert_eq(st.bad_records, 3);
	cr_assert_eq(st.conns_seen, 0);
	cr_assert_eq(net_task__interval(t, 1), 0);
	net_task__free(t);
}

Test(network, max_conns)
{
	struct net_task_opts o = { .task_id = TASK, .max_conns = 2 };
	struct net_task *t = net_task__new(&o);
	struct net_stats st;

	cr_assert(t);
	for (uint64_t id = 1; id <= 3; id++) {
		struct net_conn c =
			conn4(id, 100, NET_ROLE_CLIENT, "127.0.0.1", 40000 + id, "127.0.0.1", 8080);

		one_conn(t, &c);
	}
	net_task__stats(t, &st);
	cr_assert_eq(st.conns_seen, 2);
	cr_assert_eq(st.conns_refused, 1);
	net_task__free(t);
}

Test(network, report)
{
	struct net_task *t = task();
	char path[] = "/tmp/netrep.XXXXXX", buf[16384], summary[512];
	struct json_object *j, *eps;
	ssize_t n;
	int fd;

	cr_assert_eq(net_task__set_comm(t, 100, "curl"), 0);
	cr_assert_eq(net_task__set_comm(t, 200, "nginx"), 0);
	converse(t);
	conns(t, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	unlink(path);
	cr_assert_eq(write_report_fd(t, fd, NET_REPORT_TXT, summary, sizeof(summary)), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert(strstr(buf, "curl(100) client -> nginx(200) http: 2 requests, 300 B sent"), "%s",
		  buf);
	cr_assert(strstr(buf, "nginx(200) server <- curl(100)"), "%s", buf);
	cr_assert(strstr(buf, "curl(100) client GET /api/users: 1 requests, status 200:1"), "%s",
		  buf);
	cr_assert(strstr(buf, "nginx(200) server GET /api/items: 1 requests, status 404:1"), "%s",
		  buf);
	cr_assert(strstr(buf, "latency p50 150.000 ms p90 150.000 ms p99 150.000 ms"), "%s", buf);
	/* Nothing was lost: one line says so, no counter of zero is listed. */
	cr_assert(strstr(buf, "\nNo losses.\n"), "%s", buf);
	cr_assert(!strstr(buf, "Losses:") && !strstr(buf, "conns_refused") &&
			  !strstr(buf, "kernel conns_full"),
		  "%s", buf);
	cr_assert(strstr(summary, "4 HTTP exchanges, 4 endpoints"), "%s", summary);
	cr_assert(ftruncate(fd, 0) == 0);
	cr_assert(lseek(fd, 0, SEEK_SET) == 0);
	cr_assert_eq(write_report_fd(t, fd, NET_REPORT_JSON, NULL, 0), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	cr_assert(n > 0);
	buf[n] = '\0';
	j = json_tokener_parse(buf);
	cr_assert(j, "%s", buf);
	cr_assert(json_object_object_get_ex(j, "endpoints", &eps));
	cr_assert_eq(json_object_array_length(eps), 4);
	/* JSON keeps every counter, zeros included: programs read them by name. */
	{
		struct json_object *l, *v;

		cr_assert(json_object_object_get_ex(j, "losses", &l));
		cr_assert(json_object_object_get_ex(l, "conns_refused", &v));
		cr_assert_eq(json_object_get_int64(v), 0);
		cr_assert(json_object_object_get_ex(l, "kernel_conns_full", &v));
		cr_assert_gt(json_object_object_length(l), 40);
	}
	json_object_put(j);
	close(fd);
	net_task__free(t);
}

/* The text report lists the loss counters that counted something, those only. */
Test(network, report_lists_only_losses)
{
	struct net_task_opts o = { .task_id = TASK, .max_conns = 2 };
	struct net_task *t = net_task__new(&o);
	char path[] = "/tmp/netrep.XXXXXX", buf[16384];
	ssize_t n;
	int fd;

	cr_assert(t);
	for (uint64_t id = 1; id <= 3; id++) {
		struct net_conn c =
			conn4(id, 100, NET_ROLE_CLIENT, "127.0.0.1", 40000 + id, "127.0.0.1", 8080);

		one_conn(t, &c);
	}
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	unlink(path);
	cr_assert_eq(write_report_fd(t, fd, NET_REPORT_TXT, NULL, 0), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert(strstr(buf, "\nLosses:\n  conns_refused            1\n"), "%s", buf);
	cr_assert(!strstr(buf, "No losses") && !strstr(buf, "bad_frames") &&
			  !strstr(buf, "kernel conns_full"),
		  "%s", buf);
	close(fd);
	net_task__free(t);
}

/*
 * The HTML report of the same conversation, its client named by a hostile target: no markup of
 * theirs in the page, the pair drawn once, both processes and every endpoint with its counts.
 */
Test(network, report_html)
{
	struct net_report_head h = { .start_unix_ms = 1700000000000ull,
				     .duration_ms = 2000,
				     .npids = 2,
				     .pids = { 100, 200 },
				     .complete = true };
	struct net_task *t = task();
	char *page = NULL, *s;
	size_t len = 0, edges = 0;
	FILE *f;

	cr_assert_eq(net_task__set_comm(t, 100, "<script>x'\""), 0);
	cr_assert_eq(net_task__set_comm(t, 200, "nginx"), 0);
	converse(t);
	conns(t, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	net_task__set_head(t, &h);
	f = open_memstream(&page, &len);
	cr_assert_not_null(f);
	cr_assert_eq(net_task__write_report(t, f, NET_REPORT_HTML, NULL, 0), 0);
	cr_assert_eq(fclose(f), 0);
	cr_assert_null(strstr(page, "<script"), "%s", page);
	cr_assert_null(strstr(page, "x'\""));
	cr_assert(strstr(page, "&lt;script&gt;x&apos;&quot; (100)"), "%s", page);
	cr_assert(strstr(page, "script-src") == NULL, "the page allows no script");
	cr_assert(strstr(page, "<dd>2023-11-14 22:13:20 UTC</dd>"), "%s", page);
	cr_assert(strstr(page, "<g class=\"node proc\" data-pid=\"100\""));
	cr_assert(strstr(page, "<g class=\"node proc\" data-pid=\"200\" data-name=\"nginx\""));
	for (s = page; (s = strstr(s, "<g class=\"edge")); s++)
		edges++;
	cr_assert_eq(edges, 1, "the pair is drawn once, from its client: %s", page);
	cr_assert(strstr(page, "data-requests=\"2\" data-errors=\"1\""), "%s", page);
	cr_assert(strstr(page, "data-pid=\"200\" data-role=\"server\" data-method=\"GET\" "
			       "data-path=\"/api/items\" data-requests=\"1\""),
		  "%s", page);
	cr_assert(strstr(page, "<span class=\"code bad\" data-code=\"404\" data-n=\"1\">"), "%s",
		  page);
	cr_assert(strstr(page, "No losses."), "%s", page);
	free(page);
	net_task__free(t);
}

/* ---- span attached events ---- */

struct ev {
	char name[64];
	char tags[8][2][4096]; /* key, value */
	size_t ntags;
	int type;
	char trace[64], segment[64], span[64];
	int64_t start_ns, end_ns; /* wall clock */
	size_t nsummary;
};

static size_t decode_events(struct spool_batch *b, struct ev *out, size_t max)
{
	const uint8_t *msg;
	size_t off = 0, len, n = 0;

	while (spool_batch__next(b, &off, &msg, &len) == 1) {
		Skywalking__V3__SpanAttachedEvent *e =
			skywalking__v3__span_attached_event__unpack(NULL, len, msg);

		cr_assert(e);
		cr_assert(n < max);
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", e->event);
		cr_assert_leq(e->n_tags, 8);
		out[n].ntags = e->n_tags;
		for (size_t i = 0; i < e->n_tags; i++) {
			snprintf(out[n].tags[i][0], sizeof(out[n].tags[i][0]), "%s",
				 e->tags[i]->key);
			snprintf(out[n].tags[i][1], sizeof(out[n].tags[i][1]), "%s",
				 e->tags[i]->value);
		}
		cr_assert(e->tracecontext && e->starttime && e->endtime);
		out[n].type = e->tracecontext->type;
		snprintf(out[n].trace, sizeof(out[n].trace), "%s", e->tracecontext->traceid);
		snprintf(out[n].segment, sizeof(out[n].segment), "%s",
			 e->tracecontext->tracesegmentid);
		snprintf(out[n].span, sizeof(out[n].span), "%s", e->tracecontext->spanid);
		out[n].start_ns = e->starttime->seconds * 1000000000 + e->starttime->nanos;
		out[n].end_ns = e->endtime->seconds * 1000000000 + e->endtime->nanos;
		out[n].nsummary = e->n_summary;
		skywalking__v3__span_attached_event__free_unpacked(e, NULL);
		n++;
	}
	return n;
}

static const char *tag(const struct ev *e, const char *k)
{
	for (size_t i = 0; i < e->ntags; i++)
		if (!strcmp(e->tags[i][0], k))
			return e->tags[i][1];
	cr_assert_fail("%s: no tag %s", e->name, k);
	return NULL;
}

/* The event of trace for the request or the response, on the side of role. */
static const struct ev *find_ev(const struct ev *v, size_t n, const char *trace, bool resp,
				const char *role)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].trace, trace) &&
		    !strcmp(tag(&v[i], "data_type"), resp ? "response" : "request") &&
		    (!role || !strcmp(tag(&v[i], "connection_role"), role)))
			return &v[i];
	return NULL;
}

static int64_t wall_minus_mono(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

static void near_ns(int64_t got, uint64_t mono, int64_t off)
{
	int64_t want = (int64_t)mono + off, d = got - want;

	cr_assert(d > -50 * (int64_t)MS && d < 50 * (int64_t)MS, "%lld vs %lld", (long long)got,
		  (long long)want);
}

static struct msg_net_rule require_rule(const char *re, bool req, uint32_t req_max, bool resp,
					uint32_t resp_max)
{
	struct msg_net_rule r;

	memset(&r, 0, sizeof(r));
	snprintf(r.uri_regex, sizeof(r.uri_regex), "%s", re);
	r.min_duration_ms = 0;
	r.require_complete_request = req;
	r.max_request_size = req_max;
	r.require_complete_response = resp;
	r.max_response_size = resp_max;
	return r;
}

Test(network, events_sw8_both_sides)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 }, events = { 0 };
	struct msg_net_rule r = require_rule("", true, 0, true, 0);
	struct ev *v = calloc(16, sizeof(*v));
	int64_t off = wall_minus_mono();
	static const char req[] = "GET /api/users?id=1 HTTP/1.1\r\nHost: x\r\nsw8: " SW8 "\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	static const char *const keys[8] = {
		"data_size",	   "data_content", "data_direction",	    "data_type",
		"connection_role", "service_name", "service_instance_name", "process_name",
	};
	const struct ev *e;
	size_t n;

	r.min_duration_ms = 100;
	procs(t, "inst");
	cr_assert_eq(net_task__add_rules(t, &r, 1), 0);
	converse(t);
	conns(t, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	cr_assert_eq(logs.nmsgs, 2);
	cr_assert_eq(net_task__events(t, &events), 0);
	cr_assert_eq(events.task_id, TASK);
	n = decode_events(&events, v, 16);
	cr_assert_eq(n, 4, "request and response, client and server: %zu", n);
	cr_assert_eq(events.samples, 4);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(v[i].ntags, 8);
		for (size_t k = 0; k < 8; k++)
			cr_assert_str_eq(v[i].tags[k][0], keys[k], "tag order");
		cr_assert_eq(v[i].type,
			     SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__SKYWALKING);
		cr_assert_str_eq(v[i].trace, "trace-1");
		cr_assert_str_eq(v[i].segment, "seg");
		cr_assert_str_eq(v[i].span, "3");
		cr_assert_eq(v[i].nsummary, 0);
		cr_assert_str_eq(tag(&v[i], "service_name"), "svc");
		cr_assert_str_eq(tag(&v[i], "service_instance_name"), "inst");
	}

	/* the client wrote the request in three segments, T0 to T0 + 2 µs */
	e = find_ev(v, n, "trace-1", false, "client");
	cr_assert(e);
	cr_assert_str_eq(e->name, "HTTP Request Sampling");
	cr_assert_str_eq(tag(e, "data_content"), req);
	cr_assert_str_eq(tag(e, "data_size"), "89B");
	cr_assert_eq(strlen(req), 89);
	cr_assert_str_eq(tag(e, "data_direction"), "outbound");
	cr_assert_str_eq(tag(e, "process_name"), "curl");
	near_ns(e->start_ns, T0, off);
	cr_assert_eq(e->end_ns - e->start_ns, 2000);
	e = find_ev(v, n, "trace-1", true, "client");
	cr_assert(e);
	cr_assert_str_eq(e->name, "HTTP Response Sampling");
	cr_assert_str_eq(tag(e, "data_content"), resp);
	cr_assert_str_eq(tag(e, "data_size"), "40B");
	cr_assert_str_eq(tag(e, "data_direction"), "inbound");
	near_ns(e->start_ns, T0 + 150 * MS, off);

	/* the server read it whole, answered in two writes */
	e = find_ev(v, n, "trace-1", false, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"), req);
	cr_assert_str_eq(tag(e, "data_direction"), "inbound");
	cr_assert_str_eq(tag(e, "process_name"), "nginx");
	e = find_ev(v, n, "trace-1", true, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"), resp);
	cr_assert_str_eq(tag(e, "data_direction"), "outbound");
	near_ns(e->start_ns, T0 + 120 * MS, off);
	cr_assert_eq(e->end_ns - e->start_ns, 1 * MS);

	free(b.data);
	free(logs.data);
	free(events.data);
	free(v);
	net_task__free(t);
}

/* pid 200 serves req on connection id, answering resp 5 ms later. */
static void serve(struct net_task *t, uint64_t id, uint64_t ts, const void *req, size_t rql,
		  const void *resp, size_t rsl)
{
	struct fb *f = malloc(sizeof(*f));
	struct net_conn c = conn4(id, 200, NET_ROLE_SERVER, "10.0.0.5", 8080, "10.9.9.9",
				  (uint16_t)(50000 + id));

	c.dir[1].count = 1;
	c.dir[1].bytes = rql;
	c.dir[0].count = 1;
	c.dir[0].bytes = rsl;
	fb_init(f);
	fb_data(f, id, 200, NET_DIR_INGRESS, 1, ts, req, rql, rql);
	fb_data(f, id, 200, NET_DIR_EGRESS, 1, ts + 5 * MS, resp, rsl, rsl);
	cr_assert_eq(fb_send(t, f, MSG_SHIP_NET_DATA), 0);
	fb_init(f);
	fb_conn(f, &c);
	cr_assert_eq(fb_send(t, f, MSG_SHIP_NET_CONNS), 0);
	free(f);
}

static size_t gzip_of(const char *s, uint8_t *out, size_t cap)
{
	z_stream z;
	size_t n;

	memset(&z, 0, sizeof(z));
	cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)s;
	z.avail_in = (uInt)strlen(s);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	n = cap - z.avail_out;
	deflateEnd(&z);
	return n;
}

#define B3(x) "b3: " x "-e457b5a2e4d86bd1-1\r\n"

Test(network, events_encodings)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 }, events = { 0 };
	struct msg_net_rule r[5] = {
		require_rule("^/gz$", false, 0, true, 0),
		require_rule("^/bin$", true, 0, true, 0),
		require_rule("^/trunc$", true, 20, true, 60),
		require_rule("^/none$", false, 0, false, 0),
		require_rule("^/chunked$", false, 0, true, 4096),
	};
	struct ev *v = calloc(16, sizeof(*v));
	static const char json[] = "{\"items\":[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}";
	char *req = malloc(4096), *resp = malloc(4096), *want = malloc(4096);
	uint8_t gz[512];
	size_t gzl = gzip_of(json, gz, sizeof(gz)), hl, n;
	const struct ev *e;
	struct net_stats st;

	procs(t, "inst");
	cr_assert_eq(net_task__add_rules(t, r, 5), 0);

	/* gzip: inflated; the request not required */
	snprintf(req, 4096, "GET /gz HTTP/1.1\r\nHost: x\r\n" B3("a1") "\r\n");
	hl = (size_t)snprintf(resp, 4096,
			      "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
			      "Content-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n",
			      gzl);
	memcpy(resp + hl, gz, gzl);
	serve(t, 11, T0, req, strlen(req), resp, hl + gzl);
	snprintf(want, 4096, "%.*s%s", (int)hl, resp, json);

	/* a binary body, in both directions */
	snprintf(req, 4096,
		 "POST /bin HTTP/1.1\r\nContent-Type: application/octet-stream\r\n" B3(
			 "b1") "Content-Length: 4\r\n\r\n\x01\x02\x03\x04");
	snprintf(resp, 4096,
		 "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\n"
		 "\r\n\x89PNG");
	serve(t, 12, T0 + 10 * MS, req, strlen(req), resp, strlen(resp));
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	cr_assert_eq(net_task__events(t, &events), 0);
	n = decode_events(&events, v, 16);
	cr_assert_eq(n, 3, "%zu", n);
	cr_assert(!find_ev(v, n, "a1", false, NULL), "the request was not required");
	e = find_ev(v, n, "a1", true, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"), want);
	cr_assert_eq(e->type, SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__ZIPKIN);
	cr_assert_str_eq(e->segment, "");
	cr_assert_str_eq(e->span, "e457b5a2e4d86bd1");
	e = find_ev(v, n, "b1", false, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"),
			 "POST /bin HTTP/1.1\r\nContent-Type: application/octet-stream\r\n" B3(
				 "b1") "Content-Length: 4\r\n\r\n"
				       "[not plain, current content type: application/octet-stream]");
	e = find_ev(v, n, "b1", true, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"),
			 "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\n\r\n"
			 "[not plain, current content type: image/png]");
	free(b.data);
	free(logs.data);
	free(events.data);
	memset(&b, 0, sizeof(b));
	memset(&logs, 0, sizeof(logs));
	memset(&events, 0, sizeof(events));

	/* max sizes: the request's header block cut at 20, the response at 60 in all */
	snprintf(req, 4096, "GET /trunc HTTP/1.1\r\nHost: x\r\n" B3("c1") "\r\n");
	hl = (size_t)snprintf(resp, 4096,
			      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
			      "Content-Length: %u\r\n\r\n",
			      1536 - 67);
	cr_assert_eq(hl, 67);
	memset(resp + hl, 'z', 1536 - hl);
	serve(t, 13, T0 + 20 * MS, req, strlen(req), resp, 1536);
	snprintf(want, 4096, "%.60s", resp);

	/* no Require*: a log, no event */
	snprintf(req, 4096, "GET /none HTTP/1.1\r\n" B3("d1") "\r\n");
	snprintf(resp, 4096, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	serve(t, 14, T0 + 30 * MS, req, strlen(req), resp, strlen(resp));

	/* chunked text, no Content-Type: text/html by default */
	snprintf(req, 4096, "GET /chunked HTTP/1.1\r\n" B3("e1") "\r\n");
	snprintf(resp, 4096,
		 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n");
	serve(t, 15, T0 + 40 * MS, req, strlen(req), resp, strlen(resp));

	cr_assert_eq(net_task__interval(t, 4000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	cr_assert_eq(logs.nmsgs, 3);
	cr_assert_eq(net_task__events(t, &events), 0);
	n = decode_events(&events, v, 16);
	cr_assert_eq(n, 3, "%zu", n);
	e = find_ev(v, n, "c1", false, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"), "GET /trunc HTTP/1.1\r");
	e = find_ev(v, n, "c1", true, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"), want);
	cr_assert_str_eq(tag(e, "data_size"), "1.5KiB");
	cr_assert(!find_ev(v, n, "d1", false, NULL) && !find_ev(v, n, "d1", true, NULL));
	e = find_ev(v, n, "e1", true, "server");
	cr_assert(e);
	cr_assert_str_eq(tag(e, "data_content"),
			 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nhello, world");
	net_task__stats(t, &st);
	cr_assert_eq(st.raw_missed + st.raw_dropped + st.keep_refused, 0);
	free(b.data);
	free(logs.data);
	free(events.data);
	free(req);
	free(resp);
	free(want);
	free(v);
	net_task__free(t);
}

Test(network, events_content)
{
	char out[256 + NET_CONTENT_SLACK], size[32];
	static const uint8_t bad[] =
		"HTTP/1.1 200 OK\r\n\r\nA\xff\xc3\xa9\xed\xa0\x80\x00Z\xe2\x82";

	/* invalid UTF-8 and NUL become '?', valid sequences stay */
	cr_assert_eq(net__http_content(bad, sizeof(bad) - 1, 256, out, sizeof(out)),
		     sizeof(bad) - 1);
	cr_assert_str_eq(out, "HTTP/1.1 200 OK\r\n\r\nA?\xc3\xa9????Z??");
	/* a header block without its end: all of it is header */
	cr_assert_eq(net__http_content((const uint8_t *)"HTTP/1.1 200 OK\r\nA: b", 22, 0, out,
				       sizeof(out)),
		     22);
	/* a truncated gzip body gives what it holds; max 0 is unlimited */
	{
		static const char hdr[] = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n";
		char text[2048], msg[4096], big[4096 + NET_CONTENT_SLACK];
		size_t gl, len;

		for (size_t i = 0; i < sizeof(text) - 1; i++)
			text[i] = (char)('a' + (i * 7 + i / 13) % 26);
		text[sizeof(text) - 1] = '\0';
		memcpy(msg, hdr, sizeof(hdr) - 1);
		gl = gzip_of(text, (uint8_t *)msg + sizeof(hdr) - 1, sizeof(msg) - sizeof(hdr));
		len = net__http_content((const uint8_t *)msg, sizeof(hdr) - 1 + gl / 2, 0, big,
					sizeof(big));
		cr_assert_gt(len, sizeof(hdr) - 1 + 16);
		cr_assert_lt(len, sizeof(hdr) - 1 + strlen(text));
		cr_assert(!memcmp(big + sizeof(hdr) - 1, text, len - (sizeof(hdr) - 1)));
		/* and the whole of it, bounded by max */
		len = net__http_content((const uint8_t *)msg, sizeof(hdr) - 1 + gl, 100, big,
					sizeof(big));
		cr_assert_eq(len, 100);
		cr_assert(!memcmp(big + sizeof(hdr) - 1, text, 100 - (sizeof(hdr) - 1)));
	}
	net__bytes_size(0, size, sizeof(size));
	cr_assert_str_eq(size, "0B");
	net__bytes_size(1023, size, sizeof(size));
	cr_assert_str_eq(size, "1023B");
	net__bytes_size(1024, size, sizeof(size));
	cr_assert_str_eq(size, "1KiB");
	net__bytes_size(100000, size, sizeof(size));
	cr_assert_str_eq(size, "97.66KiB");
	net__bytes_size(3u << 20, size, sizeof(size));
	cr_assert_str_eq(size, "3MiB");
}

Test(network, events_need_rules)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 }, events = { 0 };
	struct msg_net_rule r = require_rule("", false, 0, false, 0);

	r.min_duration_ms = 100;
	procs(t, "inst");
	cr_assert_eq(net_task__add_rules(t, &r, 1), 0);
	converse(t);
	conns(t, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	cr_assert_eq(logs.nmsgs, 2);
	cr_assert_eq(net_task__events(t, &events), 0);
	cr_assert_eq(events.nmsgs, 0);
	free(b.data);
	free(logs.data);
	free(events.data);
	net_task__free(t);
}

/*
 * A hostile backend's rule regex (catastrophic backtracking) on a hostile target's path: the
 * match gives up at its limit, is counted, and the exchange falls to the default rule; the
 * shipper does not spin. Without the limit this test runs for hours.
 */
Test(network, a_hostile_rule_regex_is_bounded, .timeout = 30)
{
	struct net_task *t = task();
	struct spool_batch b = { 0 }, logs = { 0 };
	struct msg_net_rule r[2];
	struct net_stats st;
	char req[512], path[128];

	memset(r, 0, sizeof(r));
	snprintf(r[0].uri_regex, sizeof(r[0].uri_regex), "^/(\\w+\\w?)+$");
	r[0].min_duration_ms = 0;
	r[1].min_duration_ms = -1; /* the default rule samples nothing */
	r[1].when_5xx = 1;
	procs(t, "inst");
	cr_assert_eq(net_task__add_rules(t, r, 2), 0);
	memset(path, 'a', 60);
	path[60] = '\0';
	snprintf(req, sizeof(req), "GET /%s! HTTP/1.1\r\nHost: x\r\nsw8: " SW8 "\r\n\r\n", path);
	serve(t, 1, 1000 * MS, req, strlen(req), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	      38);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	net_task__stats(t, &st);
	cr_assert_eq(st.http_exchanges, 1);
	cr_assert_geq(st.rule_limits, 1);
	cr_assert_eq(logs.nmsgs, 0, "sampled by a rule whose match gave up");
	free(b.data);
	free(logs.data);
	net_task__free(t);
}

/* ---- protocols beyond HTTP ---- */

#include "tests/unit/l7_replay.h"

/*
 * A real MariaDB session (tests/unit/data/mysql/cli_query: two queries, one on a missing table,
 * and a quit) as the server's side saw it, with the program's MYSQL protocol: the meters of the
 * mysql family with upstream's labels and protocol "mysql", codes as `code`, and the report's
 * endpoints by command and statement.
 */
Test(network, mysql_session_meters_and_report)
{
	struct l7r_rec *rec = l7r_load("mysql", "cli_query");
	struct net_conn s = conn4(2, 200, NET_ROLE_SERVER, "127.0.0.1", 3306, "10.0.0.9", 40000);
	struct spool_batch b = { 0 }, logs = { 0 };
	struct mtr *m = calloc(512, sizeof(*m));
	struct net_task *t = task();
	struct json_object *j, *eps;
	uint64_t seq[2] = { 0, 0 };
	const struct mtr *x;
	struct net_stats st;
	size_t n, ncoll, found = 0;
	char buf[65536];
	struct fb f;

	procs(t, "inst");
	fb_init(&f);
	for (size_t i = 0; i < rec->n; i++) {
		int dir = rec->seg[i].c2s ? NET_DIR_INGRESS : NET_DIR_EGRESS;
		size_t cap = rec->seg[i].len < NET_CAPTURE_MAX ? rec->seg[i].len : NET_CAPTURE_MAX;

		fb_data(&f, 2, 200, dir, ++seq[dir], T0 + i * MS, (const char *)rec->seg[i].data,
			cap, rec->seg[i].len);
		/* fb_data says HTTP/1: this connection is MySQL's */
		((struct net_rec_data *)(f.buf + f.len -
					 ((sizeof(struct net_rec_data) + cap + 7) & ~(size_t)7)))
			->proto = NET_PROTO_MYSQL;
	}
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
	s.proto = NET_PROTO_MYSQL;
	s.dir[1].count = 4;
	s.dir[1].bytes = 300;
	fb_init(&f);
	fb_conn(&f, &s);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_CONNS), 0);
	net_task__stats(t, &st);
	cr_assert_eq(st.l7_exchanges, 4);
	cr_assert_eq(st.http_exchanges, 0);
	cr_assert_eq(st.bad_records + st.bad_frames, 0);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	cr_assert_eq(net_task__meters(t, 12345, &b, &logs), 0);
	n = decode(&b, m, 512, &ncoll);

	x = find(m, n, "rover_net_p_mysql_request_counter", NULL);
	cr_assert(x && x->value == 4, "3 queries and a quit");
	cr_assert_str_eq(x->labels,
			 "server_process_id=p-server,client_address=10.0.0.9:0,side=server,"
			 "protocol=mysql,is_ssl=false");
	x = find(m, n, "rover_net_p_mysql_error_counter", NULL);
	cr_assert(x && x->value == 1);
	x = find(m, n, "rover_net_p_mysql_response_status_counter", "code=1146");
	cr_assert(x && x->value == 1);
	x = find(m, n, "rover_net_p_mysql_response_status_counter", "code=0");
	cr_assert(x && x->value == 3);
	x = find(m, n, "rover_net_p_mysql_server_duration_histogram", NULL);
	cr_assert(x && x->nb == NET_DUR_BUCKETS);
	x = find(m, n, "rover_net_p_mysql_request_package_size_histogram", NULL);
	cr_assert(x && x->nb == NET_SIZE_BUCKETS);
	cr_assert(!find(m, n, "rover_net_p_http1_request_counter", NULL), "no HTTP meters");
	x = find(m, n, "rover_net_p_server_read_counts_counter", NULL);
	cr_assert(x && strstr(x->labels, "protocol=mysql"), "L4 meters say mysql too");

	j = report_json(t, buf, sizeof(buf));
	cr_assert(json_object_object_get_ex(j, "endpoints", &eps));
	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *e = json_object_array_get_idx(eps, i), *v;
		const char *path_s =
			json_object_object_get_ex(e, "path", &v) ? json_object_get_string(v) : "";

		cr_assert(json_object_object_get_ex(e, "protocol", &v));
		cr_assert_str_eq(json_object_get_string(v), "mysql");
		if (!strcmp(path_s, "SELECT * FROM nosuchtable")) {
			cr_assert(json_object_object_get_ex(e, "status", &v));
			cr_assert(json_object_object_get_ex(v, "1146", &v));
			cr_assert_eq(json_object_get_int(v), 1, "%s", buf);
			found++;
		}
	}
	cr_assert_eq(found, 1, "%s", buf);
	cr_assert_eq(json_object_array_length(eps), 4, "%s", buf);
	json_object_put(j);
	free(b.data);
	free(logs.data);
	free(m);
	l7r_rec_free(rec);
	net_task__free(t);
}

/* Connections ids [first, first + n) of pid 300, each one segment of proto. */
static void open_many(struct net_task *t, uint64_t first, unsigned n, uint8_t proto, const char *s)
{
	struct fb f;

	fb_init(&f);
	for (unsigned i = 0; i < n; i++) {
		size_t len = strlen(s), rec = (sizeof(struct net_rec_data) + len + 7) & ~(size_t)7;

		if (f.len + rec > sizeof(f.buf)) {
			cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
			fb_init(&f);
		}
		fb_data(&f, first + i, 300, NET_DIR_INGRESS, 1, T0, s, len, len);
		((struct net_rec_data *)(f.buf + f.len - rec))->proto = proto;
	}
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
}

/*
 * The attack: a traced process opens thousands of connections and speaks just enough HTTP/1 or
 * HTTP/2 on each to be parsed, to make the shipper hold a parser (up to ~1 MiB for HTTP/2)
 * per connection. The task holds at most MAX_PARSERS (2048) and MAX_H2_PARSERS (256); the rest
 * are counted, measured at L4 only; parsers freed with their connections make room again.
 */
Test(network, a_target_opening_thousands_of_connections_gets_a_bounded_number_of_parsers)
{
	struct net_task *t = task();
	struct net_stats st;
	struct fb f;

	open_many(t, 1, 2100, NET_PROTO_HTTP1, "GET / HTTP/1.1\r\n");
	open_many(t, 10001, 300, NET_PROTO_HTTP2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
	net_task__stats(t, &st);
	cr_assert_eq(st.parsers_refused, (2100 - 2048) + (300 - 256));
	cr_assert_eq(st.bad_records + st.bad_frames, 0);

	/* every connection ends; once they are gone, new ones are parsed again */
	fb_init(&f);
	for (unsigned i = 0; i < 2100 + 300; i++) {
		uint64_t id = i < 2100 ? 1 + i : 10001 + (i - 2100);
		struct net_conn c = conn4(id, 300, NET_ROLE_SERVER, "127.0.0.1", 8080, "127.0.0.1",
					  (uint16_t)(20000 + i));

		c.flags = NET_CONN_CLOSED;
		if (f.len + sizeof(struct net_rec_close) > sizeof(f.buf)) {
			cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
			fb_init(&f);
		}
		fb_close(&f, &c);
	}
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(net_task__interval(t, (uint64_t)(2 + i) * 2000 * MS), 0);
	open_many(t, 20001, 100, NET_PROTO_HTTP2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
	net_task__stats(t, &st);
	cr_assert_eq(st.parsers_refused, (2100 - 2048) + (300 - 256),
		     "room again after the closes");
	net_task__free(t);
}

/*
 * A segment of two reads (bpf/net.bpf.c holds a small read that got what it asked for and
 * sends it with the next): its first `held` bytes are timed by their own read, so a request
 * whose first bytes came 100 ms before the rest starts with them. A `held` the segment does
 * not hold is refused.
 */
Test(network, a_held_read_is_timed_by_its_own_read)
{
	static const char req[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	struct net_conn s = conn4(2, 200, NET_ROLE_SERVER, "127.0.0.1", 8080, "127.0.0.1", 40000);
	char buf[16384];
	struct json_object *j, *eps, *e = NULL, *l, *v;
	struct net_task *t = task();
	struct net_rec_data *d;
	struct net_stats st;
	struct fb f;
	size_t rec = (sizeof(struct net_rec_data) + strlen(req) + 7) & ~(size_t)7;

	cr_assert_eq(net_task__set_comm(t, 200, "srv"), 0);
	fb_init(&f);
	fb_data(&f, 2, 200, NET_DIR_INGRESS, 1, T0 + 100 * MS, req, strlen(req), strlen(req));
	d = (struct net_rec_data *)(f.buf + f.len - rec);
	d->held = 4;
	d->start_ns = T0;
	d->held_end_ns = T0;
	fb_data(&f, 2, 200, NET_DIR_EGRESS, 1, T0 + 150 * MS, resp, strlen(resp), strlen(resp));
	/* held beyond the bytes it came with, or with a time outside the segment's */
	fb_data(&f, 2, 200, NET_DIR_INGRESS, 2, T0 + 200 * MS, req, 3, 3);
	((struct net_rec_data *)(f.buf + f.len -
				 ((sizeof(struct net_rec_data) + 3 + 7) & ~(size_t)7)))
		->held = 4;
	fb_data(&f, 2, 200, NET_DIR_INGRESS, 2, T0 + 200 * MS, req, 8, 8);
	d = (struct net_rec_data *)(f.buf + f.len -
				    ((sizeof(struct net_rec_data) + 8 + 7) & ~(size_t)7));
	d->held = 4;
	d->held_end_ns = T0 + 300 * MS;
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_DATA), 0);
	fb_init(&f);
	fb_conn(&f, &s);
	cr_assert_eq(fb_send(t, &f, MSG_SHIP_NET_CONNS), 0);
	net_task__stats(t, &st);
	cr_assert_eq(st.bad_records, 2);
	cr_assert_eq(st.http_exchanges, 1);
	cr_assert_eq(net_task__interval(t, 2000 * MS), 0);
	j = report_json(t, buf, sizeof(buf));
	cr_assert(json_object_object_get_ex(j, "endpoints", &eps));
	for (size_t i = 0; i < json_object_array_length(eps); i++) {
		struct json_object *x = json_object_array_get_idx(eps, i), *p;

		if (json_object_object_get_ex(x, "path", &p) &&
		    !strcmp(json_object_get_string(p), "/a"))
			e = x;
	}
	cr_assert(e, "%s", buf);
	cr_assert(json_object_object_get_ex(e, "latency_ms", &l) &&
			  json_object_object_get_ex(l, "p50", &v),
		  "%s", buf);
	cr_assert_float_eq(json_object_get_double(v), 150.0, 0.001, "%s", buf);
	json_object_put(j);
	net_task__free(t);
}
