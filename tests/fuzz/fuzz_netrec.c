// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: a NETWORK task's frames as a worker (or a capture program it trusts too
 * much) could send them to the shipper's analysis (shipper/network/: network.c and the parts
 * below it).
 *
 * Input: a sequence of frames, each
 *   u8   op: bit 0 the type (0: MSG_SHIP_NET_DATA, 1: MSG_SHIP_NET_CONNS), bit 1 an interval
 *        and the meters after it, bit 2 a report (text or JSON by bit 3) after it
 *   u16  payload length, little-endian (cut to what the input has left)
 *   that many payload bytes, given to net_task__frame as they are
 * The task has two backend processes (pids 1 and 2, one instance) and sampling rules that
 * require complete requests and responses, so that labels, traces and span attached events
 * are built (the keeper of recent segments included). Contracts checked: -EBADMSG or 0 from
 * every frame; every packed meter collection, log and event unpacks again, an event's
 * data_content is valid UTF-8 within its rule's bound; the reports are written in full; the
 * stats add up (closed <= seen).
 *
 * The task also keeps the access log (shipper/network/netalog.c: pids 1 and 2 named, 127.0.0.1
 * and 10.0.0.2 their pods' addresses), so access-log records (NET_REC_OPEN, NET_REC_CALL)
 * are taken too; op bit 4 flushes it: every message unpacks as an EBPFAccessLogMessage, a
 * stream's first carries the node, its logs bounded by the pending bound; the end flushes it
 * whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ebpf/accesslog.pb-c.h"
#include "language-agent/Meter.pb-c.h"
#include "language-agent/Tracing.pb-c.h"
#include "logging/Logging.pb-c.h"
#include "shipper/network/netpriv.h"
#include "shipper/network/network.h"

/* Valid UTF-8 without NUL up to len, and NUL at len. */
static int utf8_ok(const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	for (size_t i = 0; i < len;) {
		size_t n = p[i] < 0x80		   ? 1
			   : (p[i] & 0xe0) == 0xc0 ? 2
			   : (p[i] & 0xf0) == 0xe0 ? 3
			   : (p[i] & 0xf8) == 0xf0 ? 4
						   : 0;

		if (!n || !p[i] || i + n > len)
			return 0;
		for (size_t k = 1; k < n; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
		i += n;
	}
	return s[len] == '\0';
}

static void check_events(const struct spool_batch *b)
{
	const uint8_t *msg;
	size_t off = 0, len;
	int r;

	while ((r = spool_batch__next(b, &off, &msg, &len)) == 1) {
		Skywalking__V3__SpanAttachedEvent *e =
			skywalking__v3__span_attached_event__unpack(NULL, len, msg);

		if (!e || e->n_tags != 8 || strcmp(e->tags[1]->key, "data_content"))
			abort();
		/* rule 0 is unlimited (NET_RAW_MAX), rule 1 wants 100 bytes */
		if (strlen(e->tags[1]->value) >= NET_RAW_MAX + NET_CONTENT_SLACK ||
		    !utf8_ok(e->tags[1]->value, strlen(e->tags[1]->value)))
			abort();
		skywalking__v3__span_attached_event__free_unpacked(e, NULL);
	}
	if (r)
		abort();
}

static void check_batch(const struct spool_batch *b, int logs)
{
	const uint8_t *msg;
	size_t off = 0, len;
	int r;

	while ((r = spool_batch__next(b, &off, &msg, &len)) == 1) {
		if (logs) {
			Skywalking__V3__LogData *d =
				skywalking__v3__log_data__unpack(NULL, len, msg);

			if (!d)
				abort();
			skywalking__v3__log_data__free_unpacked(d, NULL);
		} else {
			Skywalking__V3__MeterDataCollection *c =
				skywalking__v3__meter_data_collection__unpack(NULL, len, msg);

			if (!c || !c->n_meterdata)
				abort();
			skywalking__v3__meter_data_collection__free_unpacked(c, NULL);
		}
	}
	if (r)
		abort();
}

static void check_alog(struct net_task *t, bool last)
{
	struct spool_batch b = { .kind = SPOOL_ACCESSLOG };
	const uint8_t *msg;
	size_t off = 0, len, n = 0;
	int r;

	if (net_task__alog_flush(t, last, &b))
		abort();
	while ((r = spool_batch__next(&b, &off, &msg, &len)) == 1) {
		Skywalking__V3__EBPFAccessLogMessage *m =
			skywalking__v3__ebpfaccess_log_message__unpack(NULL, len, msg);

		if (!m || (n == 0) != (m->node != NULL) || m->n_kernellogs > 64)
			abort();
		/* What the OAP would refuse: a string that is not UTF-8. */
		if (m->protocollog && m->protocollog->http && m->protocollog->http->request &&
		    (!utf8_ok(m->protocollog->http->request->path,
			      strlen(m->protocollog->http->request->path)) ||
		     !utf8_ok(m->protocollog->http->request->host,
			      strlen(m->protocollog->http->request->host))))
			abort();
		skywalking__v3__ebpfaccess_log_message__free_unpacked(m, NULL);
		n++;
	}
	if (r || (last && net_task__alog_pending(t)))
		abort();
	free(b.data);
}

static void access_log_on(struct net_task *t)
{
	struct msg_output_accesslog o = { .task_id = 7,
					  .flush_max_count = 50,
					  .flush_period_ms = 1000,
					  .queue_size = 16,
					  .nexclude = 1,
					  .nifs = 1 };
	struct msg_alog_proc ap[2] = { { .pid = 1, .family = 2, .addr = { 127, 0, 0, 1 } },
				       { .pid = 2, .family = 2, .addr = { 10, 0, 0, 2 } } };

	snprintf(o.node_name, sizeof(o.node_name), "node");
	snprintf(o.exclude[0], sizeof(o.exclude[0]), "kube-system");
	snprintf(o.ifs[0].name, sizeof(o.ifs[0].name), "eth0");
	for (int k = 0; k < 2; k++) {
		snprintf(ap[k].service, sizeof(ap[k].service), "svc");
		snprintf(ap[k].pod, sizeof(ap[k].pod), "pod-%d", k);
	}
	if (net_task__access_log(t, &o) || net_task__alog_procs(t, ap, 2))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_task_opts o = { .task_id = 7, .max_conns = 64 };
	struct msg_net_process p[2];
	struct msg_net_rule r[2];
	struct net_task *t;
	struct net_stats st;
	uint64_t now = 0;
	size_t i = 0;
	FILE *out = NULL;

	memset(p, 0, sizeof(p));
	memset(r, 0, sizeof(r));
	for (int k = 0; k < 2; k++) {
		p[k].pid = k + 1;
		snprintf(p[k].process_id, sizeof(p[k].process_id), "p%d", k + 1);
		snprintf(p[k].service, sizeof(p[k].service), "svc");
		snprintf(p[k].instance, sizeof(p[k].instance), "inst");
		snprintf(p[k].layer, sizeof(p[k].layer), "GENERAL");
	}
	r[0].min_duration_ms = 0;
	r[0].when_4xx = r[0].when_5xx = 1;
	r[0].require_complete_request = r[0].require_complete_response = 1;
	snprintf(r[1].uri_regex, sizeof(r[1].uri_regex), "^/a");
	r[1].min_duration_ms = -1;
	r[1].when_5xx = 1;
	r[1].require_complete_response = 1;
	r[1].max_response_size = 100;
	t = net_task__new(&o);
	if (!t || net_task__set_processes(t, p, 2) || net_task__add_rules(t, r, 2))
		abort();
	access_log_on(t);
	/* the report goes to /dev/null: its writing, not its bytes, is under test */
	while (i < size) {
		uint8_t op = data[i++];
		size_t len = 0;
		int err;

		if (i + 2 <= size) {
			len = (size_t)data[i] | (size_t)data[i + 1] << 8;
			i += 2;
		}
		if (len > size - i)
			len = size - i;
		err = net_task__frame(t, op & 1 ? MSG_SHIP_NET_CONNS : MSG_SHIP_NET_DATA, data + i,
				      len);
		if (err && err != -EBADMSG)
			abort();
		i += len;
		if (op & 2) {
			struct spool_batch b = { 0 }, logs = { 0 }, events = { 0 };

			now += 2000000000ull;
			if (net_task__interval(t, now) || net_task__meters(t, 1, &b, &logs) ||
			    net_task__events(t, &events))
				abort();
			check_batch(&b, 0);
			check_batch(&logs, 1);
			check_events(&events);
			free(b.data);
			free(logs.data);
			free(events.data);
		}
		if (op & 16)
			check_alog(t, false);
		if (op & 4) {
			char summary[256];

			if (!out)
				out = fopen("/dev/null", "we");
			if (net_task__write_report(t, out,
						   op & 8 ? NET_REPORT_JSON : NET_REPORT_TXT,
						   summary, sizeof(summary)))
				abort();
			if (strnlen(summary, sizeof(summary)) == sizeof(summary))
				abort();
		}
	}
	net_task__stats(t, &st);
	if (st.conns_closed > st.conns_seen)
		abort();
	if (net_task__interval(t, now + 1))
		abort();
	check_alog(t, true);
	net_task__free(t);
	if (out)
		fclose(out);
	return 0;
}
