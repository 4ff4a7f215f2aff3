/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side (no capability): a NETWORK task's analysis. It takes the worker's frames
 * (MSG_SHIP_NET_DATA, MSG_SHIP_NET_CONNS: records of common/netrec.h, hostile bytes), keeps
 * per-connection state (L4 counters, an HTTP/1 parser for connections the program detected
 * as HTTP/1), and at every report interval turns what moved into traffic: one entry per
 * (local process, role, remote peer, protocol, ssl), the unit upstream's meters are labelled
 * by (reference network-profiling.md §3.6, §4.2).
 *
 * Two outputs from the same traffic:
 *  - a report a person reads (net_task__write_report, .txt or .json, formats in docs/network.md);
 *  - the OAP's meters (net_task__meters): MeterDataCollection messages with upstream's names,
 *    labels and buckets (§4.3), and sampled HTTP traces (LogData, §4.4), with their requests
 *    and responses as span attached events when a rule asks for them (net_task__events).
 *
 * Adding a protocol is one parser file fed from net_task's per-connection dispatch; adding a
 * TLS library is one more source of plaintext records for the same connections.
 *
 * Bounded: connections held (net_opts.max_conns) and bytes buffered per connection (the
 * HTTP/1 parser's own bounds, and the recent bytes kept for events: per connection and per
 * task); anything refused is counted in net_stats and reported.
 * Not thread-safe: the shipper's main loop only.
 */
#ifndef ROVER_SHIPPER_NETWORK_H
#define ROVER_SHIPPER_NETWORK_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "common/msg.h"
#include "common/netrec.h"
#include "shipper/network/protocols/http/http1.h"
#include "shipper/network/protocols/http/http2.h"
#include "shipper/network/protocols/l7.h"
#include "shipper/output/spool.h"

/* Upstream's bucket lists (reference §3.4, §4.3), lower bounds. */
extern const uint64_t net_l4_buckets_ns[NET_L4_BUCKETS]; /* also RTT, as µs/1000 */
#define NET_SIZE_BUCKETS 25
extern const uint64_t net_size_buckets[NET_SIZE_BUCKETS]; /* bytes, 1048 typo included */
#define NET_DUR_BUCKETS 45
extern const uint64_t net_dur_buckets_ms[NET_DUR_BUCKETS];

struct net_task_opts {
	uint64_t task_id;
	uint32_t report_interval_ms;
	uint32_t max_conns;	  /* 0: 16384 */
	const char *meter_prefix; /* NULL: "rover_net_p" */
};

struct net_task;

/* A TLS library of a target, as the report lists it. */
#define NET_TLS_LIBS_MAX 256
struct net_tls_file {
	int32_t pid;
	uint32_t lib;	   /* enum net_tls_lib */
	uint32_t probes;   /* sent to the worker */
	uint32_t attached; /* attached by it */
	int32_t err;	   /* 0, the worker's -errno, or 1 while it has not answered */
	char path[256];
};

/* Adds l, or updates the entry of the same pid and path. Past NET_TLS_LIBS_MAX: not listed. */
void net_task__tls_lib(struct net_task *t, const struct net_tls_file *l);

struct net_task *net_task__new(const struct net_task_opts *o);
void net_task__free(struct net_task *t);

/*
 * The processes (labels, common/msg.h); replaces what was set. Without them (local mode), a
 * process is its pid and command name. 0 or -errno.
 */
int net_task__set_processes(struct net_task *t, const struct msg_net_process *p, size_t n);
/* The sampling rules, appended (upstream merges them per task). 0, -EINVAL (bad regex). */
int net_task__add_rules(struct net_task *t, const struct msg_net_rule *r, size_t n);

/* A MSG_SHIP_NET_DATA or MSG_SHIP_NET_CONNS frame's payload. 0, or -EBADMSG (counted). */
int net_task__frame(struct net_task *t, uint32_t type, const void *buf, size_t len);

/*
 * The end of a report interval at now_ns (CLOCK_MONOTONIC): what moved since the previous one
 * becomes that interval's traffic, kept for the report and for net_task__meters. 0 or -errno.
 */
int net_task__interval(struct net_task *t, uint64_t now_ns);

/*
 * The last interval's meters, for the backend: MeterDataCollection messages appended to b
 * (one per service instance), and sampled traces as LogData messages appended to logs. now_ms:
 * wall clock for timestamps. 0 or -errno.
 */
int net_task__meters(struct net_task *t, int64_t now_ms, struct spool_batch *b,
		     struct spool_batch *logs);

/*
 * The last interval's span attached events, for the backend (reference §4.4): for each sampled
 * trace net_task__meters sends, whose rule has RequireCompleteRequest or RequireCompleteResponse,
 * one SpanAttachedEvent "HTTP Request Sampling" and/or "HTTP Response Sampling" carrying the
 * message as the traced process read or wrote it, appended to events. Upstream's per-syscall
 * "Syscall <Fn>" events are not sent. Call after net_task__meters, before the next interval.
 * 0 or -errno.
 */
int net_task__events(struct net_task *t, struct spool_batch *events);

/*
 * Continuous profiling's HTTP monitor: from now on, each server-side exchange is also counted
 * per (process, path) until net_task__monitor_take() hands the counts over (and resets them).
 * At most MSG_NET_MONITOR_MAX pairs; the exchanges of more are counted in *ret_dropped.
 */
void net_task__monitor(struct net_task *t);
size_t net_task__monitor_take(struct net_task *t, struct msg_net_monitor_entry *out, size_t max,
			      uint32_t *ret_dropped);

enum net_report_format { NET_REPORT_TXT = 1, NET_REPORT_JSON = 2, NET_REPORT_HTML = 3 };

/* What the HTML report's head says of the task (the others do not say it). */
struct net_report_head {
	uint64_t start_unix_ms; /* 0: not known */
	uint32_t duration_ms;	/* asked for */
	uint32_t npids;
	int32_t pids[ROVER_MAX_PIDS]; /* the processes asked for */
	bool complete;		      /* false: cut short */
};
void net_task__set_head(struct net_task *t, const struct net_report_head *h);

/*
 * The whole task so far, for a person: per connection pair and per HTTP endpoint, requests,
 * status codes, bytes, latency p50/p90/p99, and every loss. Written to f; summary gets the top
 * lines (NUL-terminated, at most summary_len). HTML: one self-contained page, the topology of
 * processes and peers drawn (shipper/network/nethtml.c). 0 or -errno.
 */
int net_task__write_report(struct net_task *t, FILE *out, enum net_report_format f, char *summary,
			   size_t summary_len);

/* What the task counted: conns, exchanges, and every drop by kind. */
struct net_stats {
	uint64_t conns_seen, conns_closed, conns_refused; /* refused: over max_conns */
	uint64_t http_exchanges;
	uint64_t bad_frames, bad_records;
	uint64_t kernel[NET_STAT_MAX]; /* the program's losses (frames' stats) */
	uint64_t segments_lost;	       /* data_seq holes */
	/* Added after the first version of this header, at its end. */
	uint64_t conns_evicted;	    /* idle, dropped to make room (their close never came) */
	uint64_t http_unpaired;	    /* exchanges without a request or a response: no meters */
	uint64_t samples_dropped;   /* sampled traces over the task's bound of held ones */
	uint64_t traffic_refused;   /* report pairs over their bound: counted in no pair */
	uint64_t endpoints_refused; /* exchanges of endpoints over their bound */
	uint64_t alloc_failures;
	struct http1_stats http; /* every connection's parser, summed */
	/* Added with the span attached events, at the end. */
	uint64_t keep_refused; /* segment bytes not kept for events: over the task's bound */
	uint64_t raw_missed;   /* sampled messages wanted whole whose bytes were no longer kept */
	uint64_t rule_limits;  /* a rule's regex gave up on a path (match limit): not matched */
	uint64_t raw_dropped;  /* sampled messages wanted whole over the bound of held ones */
	/* Added with the protocols beyond HTTP (shipper/network/protocols/l7.h), at the end. */
	uint64_t l7_exchanges;		   /* of every such protocol */
	uint64_t l7_unpaired;		   /* without a request or a response: no meters */
	struct l7_stats l7[NET_PROTO_MAX]; /* each protocol's parsers, summed */
	struct http2_stats http2;	   /* every HTTP/2 connection's parser, summed */
	uint64_t parsers_refused; /* connections over the task's bound of parsers: L4 only */
	/* The access log (shipper/network/netalog.c), at the end. */
	uint64_t alog_conns_dropped; /* connections over queue_size: their logs dropped */
	uint64_t alog_logs_dropped;  /* logs over the pending bound, or of unnamed processes */
	uint64_t alog_unknown_pids;  /* connections of processes the supervisor never named */
	uint64_t alog_bad_procs;     /* MSG_ALOG_PROCS entries refused (malformed, over bound) */
	uint64_t alog_other_methods; /* HTTP methods the proto has no value for: sent as GET */
};
void net_task__stats(const struct net_task *t, struct net_stats *ret);

/*
 * The access log (docs/access-log.md, shipper/network/netalog.c): the task's records become
 * EBPFAccessLogService messages instead of meters. o: the node and the flush settings (checked:
 * -EPROTO). 0 or -errno.
 */
int net_task__access_log(struct net_task *t, const struct msg_output_accesslog *o);
/* Who pids (and Service addresses) are, from the supervisor; bad entries counted. 0 or -errno. */
int net_task__alog_procs(struct net_task *t, const struct msg_alog_proc *p, size_t n);
/* The named pids, at most max, into out; their count. */
size_t net_task__alog_pids(const struct net_task *t, int32_t *out, size_t max);
/* Logs waiting for a flush. */
size_t net_task__alog_pending(const struct net_task *t);
/*
 * A flush: the logs due as one stream's messages appended to out (kind SPOOL_ACCESSLOG), the
 * node's first. last: the task ends, everything goes. 0 or -errno (its logs dropped, counted).
 */
int net_task__alog_flush(struct net_task *t, bool last, struct spool_batch *out);

/*
 * Local mode: the command name of pid for the report, instead of reading /proc/PID/comm
 * (which a sandboxed shipper may not). 0 or -errno.
 */
int net_task__set_comm(struct net_task *t, int32_t pid, const char *comm);

#endif
