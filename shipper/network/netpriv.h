/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: the state of a NETWORK task's analysis shared by its parts, each calling only
 * the ones below it:
 *   network.c    the task, the worker's frames handed to the parts below, the report;
 *   nethtml.c    the report as one HTML page, from what network.c's reports read;
 *   netconn.c    the connection table and L4 accounting, intervals into traffic;
 *   netl7.c      L7 dispatch: each connection's parser, its exchanges, endpoints, monitor;
 *   netsample.c  HTTP's sampled traces and the keeper of their events' bytes;
 *   netmeter.c   the OAP's meters and sampled traces (net_task__meters), and
 *   netevent.c   their span attached events (net_task__events), from the traffic;
 *   netbase.c    the table of protocols, names, addresses, processes, accumulators.
 * Not an interface: shipper/network/network.h is.
 */
#ifndef ROVER_SHIPPER_NETPRIV_H
#define ROVER_SHIPPER_NETPRIV_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shipper/network/protocols/http/http1.h"
#include "shipper/network/protocols/l7.h"
#include "shipper/network/network.h"

#define NET_TOPN 10 /* sampled traces per category per traffic per interval (upstream TopN) */
#define NET_TRACE_ID_MAX 128

/*
 * A message kept whole for a span attached event: at most this many of its bytes, and its
 * content never longer (a rule's max size of 0, "unlimited", means this).
 */
#define NET_RAW_MAX 65536u
/* Room data_content may take beyond the max size: the "[not plain, ...]" note. */
#define NET_CONTENT_SLACK (HTTP1_CTYPE_MAX + 64u)

enum net_reason { NET_SLOW = 0, NET_4XX, NET_5XX, NET_REASONS }; /* upstream's emit order */

/* A trace header's ids (reference §4.4). */
struct net_trace_ref {
	char trace_id[NET_TRACE_ID_MAX + 1];
	char segment_id[NET_TRACE_ID_MAX + 1]; /* "" for zipkin */
	char span_id[NET_TRACE_ID_MAX + 1];
};

/* A request or response of a sampled trace, as its span attached event carries it. */
struct net_raw {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC: its first syscall's entry, last's exit */
	uint64_t size;		   /* of the message on the wire (data_size) */
	uint8_t inbound;	   /* read by the traced process */
	uint32_t len;		   /* strlen(content) */
	char content[];		   /* data_content, valid UTF-8 */
};

struct net_sample {
	uint64_t latency_ms;
	uint16_t status;
	uint8_t zipkin; /* trace_provider: 0 skywalking, 1 zipkin */
	char uri[HTTP1_URI_MAX + 1];
	struct net_trace_ref ref; /* ref.trace_id: the LogData's */
	struct net_raw *raw[2];	  /* request, response: only when the rule requires them */
};

/* What HTTP/1 exchanges added, per connection until an interval moves it into its traffic. */
struct net_http_acc {
	uint64_t requests;
	uint64_t req_bytes, resp_bytes, dur_ms;
	uint64_t req_hist[NET_SIZE_BUCKETS], resp_hist[NET_SIZE_BUCKETS];
	uint64_t dur_hist[NET_DUR_BUCKETS];
	/*
	 * HTTP status codes 100..599 (the parser's bounds); another protocol's own result codes
	 * (shipper/network/protocols/l7.h)
	 */
	struct net_status {
		int32_t code;
		uint64_t n;
	} * status;
	uint64_t errors; /* exchanges of another protocol its codes call failed */
	uint32_t nstatus;
	uint32_t nsamples[NET_REASONS];
	struct net_sample *samples[NET_REASONS][NET_TOPN];
};

struct net_l4_acc {
	uint64_t count, bytes, exe; /* exe: ns; µs for the RTT */
	uint64_t hist[NET_L4_BUCKETS];
};

/* One (local pid, role, remote peer, protocol, ssl) over one interval, or the whole task. */
struct net_traffic {
	int32_t pid;
	uint8_t role; /* NET_ROLE_CLIENT or NET_ROLE_SERVER: unknown is reported as client */
	/*
	 * enum net_proto whose exchanges `http` holds: HTTP1 for HTTP/1 and HTTP/2 alike (one set
	 * of meters, as upstream), another parsed protocol, or NONE
	 */
	uint8_t proto;
	uint8_t ssl;
	int32_t rpid;	   /* -1: no monitored peer found */
	uint8_t raddr[16]; /* canonical (v4 mapped into v6) */
	uint16_t rport;	   /* 0 on the server side without a peer: client ports aggregated */
	uint8_t rlocal;	   /* the remote IP is this host's */
	uint64_t conns;	   /* distinct connections, each counted in its first interval only */
	struct net_l4_acc wr, rd, rtt, connect, close;
	uint64_t retrans, drops;
	struct net_http_acc http; /* the exchanges of `proto` */
};


struct net_proc {
	int32_t pid;
	bool known; /* from the backend */
	struct msg_net_process p;
};

/*
 * A sampling rule. Its regex comes from the backend and runs on paths from traced processes:
 * PCRE2 (Go's RE2 syntax, as upstream's rules are written, is a subset) under the match limits
 * of net_task.mctx, never a backtracking matcher without a bound.
 */
struct net_rule {
	struct msg_net_rule r;
	bool has_re;
	pcre2_code *re;
	pcre2_match_data *md;
};

struct net_task {
	struct net_task_opts o;
	struct net_tls_file tls[NET_TLS_LIBS_MAX]; /* probed libraries, for the report */
	uint32_t ntls;
	/* continuous profiling's HTTP monitor (net_task__monitor) */
	bool monitor;
	struct msg_net_monitor_entry *mon;
	uint32_t nmon, mon_dropped;
	pcre2_match_context *mctx; /* the rules' match limits; with the first regex rule */
	char prefix[128];
	struct net_stats st;
	uint64_t intervals;

	struct net_proc *procs;
	size_t nprocs;
	struct net_comm {
		int32_t pid;
		char comm[16];
	} * comms;
	size_t ncomms;
	struct net_rule *rules;
	size_t nrules;

	/* connections: a hash by id and a list, least recently updated first */
	struct net_conn_st **hash;
	size_t hash_mask;
	struct net_conn_st *lru_head, *lru_tail;
	size_t nconns;
	uint8_t server_ports[65536 / 8]; /* local ports some connection was accepted on */
	uint64_t samples_held;
	/*
	 * The recent bytes of connections, kept only while some rule requires complete
	 * messages: keep_run bytes of a message at most (0: nothing kept), keep_bytes in all.
	 */
	uint32_t keep_run;
	uint64_t keep_bytes;
	uint32_t nparsers, nh2parsers; /* alive: others, heavy ones (l7_ops.heavy: HTTP/2) */
	uint64_t raw_held;	       /* content bytes of the samples' net_raw */

	/* the last interval's traffic, sorted, for the meters */
	struct net_traffic *last;
	size_t nlast;
	/* the whole task's, sorted, for the report (samples never kept) */
	struct net_traffic *total;
	size_t ntotal;

	struct net_endpoint **eps;
	size_t neps;
	uint64_t rng;
	/* The access log (netalog.c); NULL for a NETWORK task. */
	struct net_alog *alog;
	struct net_report_head head; /* for the HTML report, when have_head */
	bool have_head;
};

struct net_keep_dir;

/* Where the keeper found a message of an exchange. */
struct net_pos {
	bool found;
	uint64_t off, bytes;
};

struct net_conn_st {
	struct net_conn_st *hnext, *lprev, *lnext;
	uint64_t id;
	bool have_conn; /* a conns or close record gave addresses and counters */
	bool closed, connect_done, close_done;
	bool counted;		      /* in some interval's traffic already: conns counts it once */
	bool tls;		      /* plaintext of a TLS library came for it */
	uint32_t idle;		      /* intervals without a record */
	uint32_t closed_for;	      /* intervals since closed */
	struct net_conn cur;	      /* the latest cumulative counters */
	struct net_conn base;	      /* at the previous interval */
	uint8_t laddr[16], raddr[16]; /* canonical */
	uint64_t seq_next[2];
	uint64_t last_ts;
	/* Its protocol's parser (shipper/network/protocols/l7.h), of enum net_proto `pproto` */
	const struct l7_ops *ops;
	void *l7;
	uint8_t pproto; /* enum net_proto of the parser made for it, 0 before */
	bool fed_plain; /* its parser was fed the wire's bytes, not a TLS library's */
	/* its parser's last exchange switched protocols: the next segment may begin ops->then */
	bool switching;
	bool restart;		   /* its parser ended: a new one of the same protocol is to come */
	struct net_keep_dir *keep; /* [2] by enum net_dir, or NULL */
	struct net_http_acc acc;
	/* interval scratch */
	uint8_t role;
	int32_t rpid;
};

/*
 * Latency percentiles per endpoint come from a reservoir (Vitter's algorithm R) of up to
 * RESERVOIR_MAX durations in µs: exact up to that many requests, a uniform sample beyond;
 * 16 KiB per endpoint at most.
 */
#define RESERVOIR_MAX 4096u

struct net_endpoint {
	int32_t pid;
	uint8_t role;
	uint8_t proto; /* HTTP1 for HTTP/1 and HTTP/2; another protocol: method is its op */
	char method[L7_OP_MAX + 1];
	char path[HTTP1_URI_MAX + 1];
	uint64_t requests, req_bytes, resp_bytes;
	struct net_status *status;
	uint32_t nstatus;
	uint32_t *res; /* durations, µs */
	uint32_t nres, capres;
	uint64_t seen;
};

/* An endpoint's protocol beyond enum net_proto: gRPC calls (over HTTP/2). */
#define EP_GRPC NET_PROTO_MAX

/* Each protocol the program tells: its parser, and how a task accounts it (netbase.c). */
struct net_parser {
	const struct l7_ops *ops;
	size_t counts;	/* where its parsers' counts add up in struct net_stats */
	uint8_t meters; /* the protocol whose meters its exchanges feed */
	/* the program's word alone makes a connection's traffic this protocol's */
	bool by_kernel;
};
extern const struct net_parser net_parsers[NET_PROTO_MAX];

/* netbase.c */
/* A protocol's name in the meters' and report's "protocol": "http" for HTTP/1 and HTTP/2. */
const char *net__proto_name(uint8_t proto);
/* Its parser, for the protocols of shipper/network/protocols/l7.h; NULL for the others. */
const struct l7_ops *net__l7_ops(uint8_t proto);
const char *net__role_name(uint8_t role);
/* "ip" or "ip:port" as upstream prints them (v6 without brackets; v4-mapped as v4). */
void net__addr_str(const uint8_t a[16], char *buf, size_t len);
const struct net_proc *net__proc(const struct net_task *t, int32_t pid);
void net__sample_free(struct net_task *t, struct net_sample *s);
uint64_t net__d64(uint64_t cur, uint64_t base);
uint64_t net__rng_next(struct net_task *t);
unsigned net__low_bucket(const uint64_t *b, unsigned n, uint64_t v);
void net__canon_addr(uint8_t family, const uint8_t in[16], uint8_t out[16]);
bool net__is_v4(const uint8_t a[16]);
bool net__addr_zero(const uint8_t a[16]);
bool net__addr_loopback(const uint8_t a[16]);
int net__status_add(struct net_status **v, uint32_t *n, int32_t code, uint64_t k);
void net__acc_release(struct net_task *t, struct net_http_acc *a);
void net__topn_add(struct net_task *t, struct net_http_acc *a, int reason, struct net_sample *s);
void net__acc_merge(struct net_task *t, struct net_http_acc *dst, struct net_http_acc *src,
		    bool samples);

/* network.c: what its reports read, for nethtml.c */
const char *net__proc_name(struct net_task *t, int32_t pid);
/* Nearest-rank p50, p90, p99 of e's reservoir in ret, µs; tmp holds RESERVOIR_MAX. */
void net__percentiles(const struct net_endpoint *e, uint32_t *tmp, uint64_t ret[3]);
/* Every loss counter by name, zero or not; kernel: one of the program's (NET_STAT_*). */
typedef void (*net_loss_fn)(void *ctx, const char *name, bool kernel, uint64_t v);
void net__losses_each(const struct net_stats *s, net_loss_fn fn, void *ctx);

/* nethtml.c: the page into f (s: the task's stats; tmp: RESERVOIR_MAX). 0 or -errno. */
int net__report_html(struct net_task *t, const struct net_stats *s, FILE *f, uint32_t *tmp);

/* netconn.c */
void net__conn_unlink(struct net_task *t, struct net_conn_st *c);
void net__conn_free(struct net_task *t, struct net_conn_st *c);
void net__traffic_free(struct net_task *t, struct net_traffic *v, size_t n);
struct net_conn_st *net__conn_get(struct net_task *t, uint64_t id, uint32_t tgid);
void net__on_conn(struct net_task *t, const struct net_conn *nc, bool closing);

/* netl7.c */
const char *net__ep_proto_name(uint8_t proto);
/* An endpoint's protocol for people: "HTTP/1.x", "gRPC", "MySQL". */
const char *net__ep_proto_title(uint8_t proto);
void net__parser_counts(struct net_stats *s, uint8_t proto, const struct l7_ops *o, const void *p);
void net__l7_drop(struct net_task *t, struct net_conn_st *c);
void net__ep_free(struct net_endpoint *e);
/* The connection closed: its parser's exchanges come out (it stays, for its counts). */
void net__l7_close(struct net_task *t, struct net_conn_st *c, uint64_t ts);
/* The role its parser learnt, NET_ROLE_UNKNOWN if none. */
enum net_role net__l7_role(const struct net_conn_st *c);
void net__segment(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		  const uint8_t *bytes, bool hole);

/* netsample.c */
void net__keep_free(struct net_task *t, struct net_conn_st *c);
void net__keep_add(struct net_task *t, struct net_conn_st *c, const struct net_rec_data *d,
		   const uint8_t *bytes, uint64_t ts, bool hole);
void net__keep_locate(struct net_conn_st *c, const struct l7_exchange *x, struct net_pos ret[2]);
void net__sample(struct net_task *t, struct net_conn_st *c, const struct http1_exchange *x,
		 uint64_t ms, const struct net_pos pos[2]);

/* netalog.c: the access log's records, connections and exchanges (no-ops without t->alog) */
void net__alog_open(struct net_task *t, const struct net_rec_open *r);
void net__alog_call(struct net_task *t, const struct net_rec_call *r);
void net__alog_conn(struct net_task *t, const struct net_conn *nc, bool closing);
void net__alog_exchange(struct net_task *t, struct net_conn_st *c, const struct l7_exchange *x);
void net__alog_free(struct net_task *t);

/* netmeter.c */
/* A sampled trace's ids from the request's headers: 0 none, 1 skywalking, 2 zipkin. */
int net__trace_ctx(const struct http1_exchange *x, struct net_trace_ref *ret);

/* netevent.c */
/*
 * A message's data_content (reference §4.4): the header block as it is, then the body (gzip
 * and chunked encodings undone) when the content type is plain, else a note naming the type;
 * at most max bytes but for that note. msg[0..len) is what was kept of the message from its
 * start line; out gets out_len >= max + NET_CONTENT_SLACK bytes, NUL-terminated valid UTF-8.
 * Returns strlen(out).
 */
size_t net__http_content(const uint8_t *msg, size_t len, uint32_t max, char *out, size_t out_len);
/* go-units BytesSize: "512B", "1.5KiB", "97.66KiB", "2MiB". */
void net__bytes_size(uint64_t n, char *buf, size_t len);

#endif
