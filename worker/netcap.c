// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/ipc.h"
#include "common/log.h"
#include "common/netrec.h"
#include "common/kofs.h"
#include "net.skel.h"
#include "worker/credcheck.h"
#include "worker/kbtf.h"
#include "worker/netcap.h"
#include "worker/ringread.h"
#include "worker/tlscheck.h"

/* Open connections per frame: a frame stays well under IPC_MAX_PAYLOAD. */
#define CONNS_PER_FRAME 4096
/* uprobe links of TLS libraries per task (4 per library and process at most). */
#define TLS_MAX_LINKS 512

/* Programs a mode attaches, and the terminating empty entry. */
#define MAX_HOOKS 12

/* Not in the uapi headers of every build host (Linux 6.6+); the kernel's values. */
#define ROVER_BPF_TRACE_UPROBE_MULTI 48
#define ROVER_BPF_F_UPROBE_MULTI_RETURN 1u

struct netcap {
	struct net_bpf *obj;
	struct bpf_link *links[MAX_HOOKS];
	int nlinks;
	struct ringread *rb;
	int conns_fd, stats_fd, ncpus;
	uint64_t task_id;
	int64_t budget; /* per flush */
	/* the data frame being gathered: struct ship_net_hdr, then records */
	uint8_t *frame;
	size_t frame_len;
	uint32_t frame_count;
	int shipper; /* during a read: where full frames go */
	int send_err;
	uint64_t stat_prev[NET_STAT_MAX];
	uint64_t records_lost;
	/* what the ring gave: records, their bytes, reads that found any (for make bench) */
	uint64_t ring_records, ring_bytes, ring_reads;
	struct net_conn_state *vals;
	uint64_t *keys;
	int tls; /* the TLS programs are loaded */
	int tls_links[TLS_MAX_LINKS];
	int ntls_links;
	const struct task_spec *spec;
};

/* How the capture hangs on the kernel (enum attach_pref picks among them). */
enum mode {
	MODE_SOCK,    /* tp_btf sock_send_length/sock_recv_length + inet_sock_set_state */
	MODE_SYS_BTF, /* tp_btf sys_enter/sys_exit */
	MODE_SYS_RAW, /* raw_tp sys_enter/sys_exit */
};

static const char *const mode_names[] = {
	[MODE_SOCK] = "tp_btf sock_send_length/sock_recv_length/inet_sock_set_state",
	[MODE_SYS_BTF] = "tp_btf sys_enter/sys_exit",
	[MODE_SYS_RAW] = "raw_tp sys_enter/sys_exit",
};

struct hook {
	struct bpf_program *prog;
	const char *tp; /* raw_tp: the tracepoint; NULL: attached by its section */
	int optional;	/* adds figures; the task runs without it */
};

/* The programs of a mode, NULL-terminated (at most MAX_HOOKS - 1). */
static void hooks_of(struct netcap *n, enum mode m, struct hook h[MAX_HOOKS])
{
	struct net_bpf *o = n->obj;
	int k = 0;

	memset(h, 0, MAX_HOOKS * sizeof(*h));
	if (m == MODE_SOCK) {
		h[k++] = (struct hook){ o->progs.net_send_btf };
		h[k++] = (struct hook){ o->progs.net_recv_btf };
		h[k++] = (struct hook){ o->progs.net_state_btf };
	} else if (m == MODE_SYS_BTF) {
		h[k++] = (struct hook){ o->progs.net_enter_btf };
		h[k++] = (struct hook){ o->progs.net_exit_btf };
	} else {
		h[k++] = (struct hook){ o->progs.net_enter_raw, "sys_enter" };
		h[k++] = (struct hook){ o->progs.net_exit_raw, "sys_exit" };
	}
	if (m == MODE_SYS_RAW) {
		h[k++] = (struct hook){ o->progs.net_retrans_raw, "tcp_retransmit_skb", 1 };
		h[k++] = (struct hook){ o->progs.net_drop_raw, "kfree_skb", 1 };
	} else {
		h[k++] = (struct hook){ o->progs.net_retrans_btf, NULL, 1 };
		h[k++] = (struct hook){ o->progs.net_drop_btf, NULL, 1 };
	}
	/*
	 * The access log's packet figures (bpf/net/alog.bpf.h): each adds figures, none is
	 * needed for the logs themselves.
	 */
	if (n->spec->type == TASK_ACCESS_LOG) {
		h[k++] = (struct hook){ o->progs.alog_dev_queue, NULL, 1 };
		h[k++] = (struct hook){ o->progs.alog_qdisc, NULL, 1 };
		h[k++] = (struct hook){ o->progs.alog_start_xmit, NULL, 1 };
		h[k++] = (struct hook){ o->progs.alog_xmit, NULL, 1 };
		h[k++] = (struct hook){ o->progs.alog_copy, NULL, 1 };
	}
}

static int attach_all(struct netcap *n, enum mode m)
{
	struct hook h[MAX_HOOKS];

	hooks_of(n, m, h);
	for (int i = 0; h[i].prog; i++) {
		struct bpf_link *l =
			h[i].tp ? bpf_program__attach_raw_tracepoint(h[i].prog, h[i].tp)
				: bpf_program__attach(h[i].prog);

		if (!l) {
			int err = -errno;

			if (h[i].optional) {
				log_warn("NETWORK: %s not attached (%s): its counts stay 0",
					 bpf_program__name(h[i].prog), strerror(-err));
				continue;
			}
			return err;
		}
		n->links[n->nlinks++] = l;
	}
	return 0;
}

static int load(struct netcap *n, const struct task_spec *spec, enum mode m, int tls)
{
	struct bpf_program *p;
	struct hook h[MAX_HOOKS];
	int err;

	bpf_object__for_each_program(p, n->obj->obj)
		bpf_program__set_autoload(p, false);
	hooks_of(n, m, h);
	for (int i = 0; h[i].prog; i++)
		bpf_program__set_autoload(h[i].prog, true);
	/* The TLS probes: loaded now, attached per library by netcap__tls_attach. */
	if (tls) {
		struct bpf_program *t[] = { n->obj->progs.tls_enter, n->obj->progs.tls_exit,
					    n->obj->progs.go_tls };

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			bpf_program__set_autoload(t[i], true);
			bpf_program__set_expected_attach_type(t[i],
							      (enum bpf_attach_type)
								      ROVER_BPF_TRACE_UPROBE_MULTI);
		}
	}
	n->obj->rodata->opts.capture_bytes = spec->capture_bytes ? spec->capture_bytes
								 : NETCAP_DEFAULT_CAPTURE;
	if (n->obj->rodata->opts.capture_bytes > NET_CAPTURE_MAX)
		n->obj->rodata->opts.capture_bytes = NET_CAPTURE_MAX;
	n->obj->rodata->opts.detect_tries = 4;
	n->obj->rodata->opts.access_log = spec->type == TASK_ACCESS_LOG;
	set_cred_check(&n->obj->rodata->cred_check, &n->obj->rodata->cred_uid,
		       &n->obj->rodata->cred_gid, spec);
	err = kbtf_kernel(&n->obj->rodata->kofs);
	if (err)
		return err;
	return net_bpf__load(n->obj) ? -errno : 0;
}

/* Opens, loads and attaches in mode m; on failure the object is gone. */
static int start_mode_tls(struct netcap *n, const struct task_spec *spec, enum mode m, int tls)
{
	int err;

	n->obj = net_bpf__open();
	if (!n->obj)
		return -errno;
	err = load(n, spec, m, tls);
	if (!err)
		err = attach_all(n, m);
	if (err) {
		for (int i = 0; i < n->nlinks; i++)
			bpf_link__destroy(n->links[i]);
		n->nlinks = 0;
		net_bpf__destroy(n->obj);
		n->obj = NULL;
	}
	n->tls = !err && tls;
	return err;
}

/* With the TLS probes when this kernel loads them (uprobe_multi: Linux 6.6), else without. */
static int start_mode(struct netcap *n, const struct task_spec *spec, enum mode m)
{
	int err = start_mode_tls(n, spec, m, 1);

	if (err) {
		err = start_mode_tls(n, spec, m, 0);
		if (!err)
			log_warn("NETWORK: the TLS probes were refused by this kernel: TLS "
				 "connections are measured at L4 only");
	}
	return err;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct netcap *n = ctx;

	/* After a failed send, or a record no program writes: not passed on, counted. */
	if (n->send_err || len < sizeof(struct net_rec_hdr) ||
	    len > sizeof(struct net_rec_close) + NET_CAPTURE_MAX) {
		n->records_lost++;
		return 0;
	}
	if (n->frame_len + len > sizeof(struct ship_net_hdr) + NETCAP_FRAME_BYTES) {
		struct ship_net_hdr *h = (struct ship_net_hdr *)n->frame;

		h->count = n->frame_count;
		if (n->shipper < 0)
			n->records_lost += n->frame_count;
		else if ((n->send_err = ipc_send(n->shipper, MSG_SHIP_NET_DATA, n->frame,
						 n->frame_len, -1)))
			n->records_lost += n->frame_count;
		n->frame_len = sizeof(struct ship_net_hdr);
		n->frame_count = 0;
	}
	n->ring_records++;
	n->ring_bytes += len;
	memcpy(n->frame + n->frame_len, data, len);
	/* The record's own length field is what the shipper walks by: make it the true size. */
	((struct net_rec_hdr *)(n->frame + n->frame_len))->len = (uint32_t)len;
	n->frame_len += len;
	n->frame_count++;
	return 0;
}

static int send_frame(struct netcap *n, int shipper)
{
	struct ship_net_hdr *h = (struct ship_net_hdr *)n->frame;
	int err = 0;

	if (!n->frame_count)
		return 0;
	h->count = n->frame_count;
	if (shipper < 0)
		err = -EPIPE;
	else
		err = ipc_send(shipper, MSG_SHIP_NET_DATA, n->frame, n->frame_len, -1);
	if (err)
		n->records_lost += n->frame_count;
	n->frame_len = sizeof(*h);
	n->frame_count = 0;
	return err;
}

int netcap__read(struct netcap *n, int shipper)
{
	int rc;

	n->shipper = shipper;
	n->send_err = 0;
	rc = ringread__consume(n->rb);
	n->ring_reads += rc > 0;
	if (n->send_err)
		return n->send_err;
	return rc < 0 ? rc : 0;
}

int netcap__events_fd(const struct netcap *n)
{
	return bpf_map__fd(n->obj->maps.events);
}

static void read_stats(struct netcap *n, uint64_t ret[NET_STAT_MAX])
{
	uint64_t *vals = calloc((size_t)n->ncpus, sizeof(uint64_t));

	memset(ret, 0, NET_STAT_MAX * sizeof(uint64_t));
	if (!vals)
		return;
	for (uint32_t k = 0; k < NET_STAT_MAX; k++) {
		if (bpf_map_lookup_elem(n->stats_fd, &k, vals))
			continue;
		for (int c = 0; c < n->ncpus; c++)
			ret[k] += vals[c];
	}
	free(vals);
}

/* Every open connection, into n->keys/vals; the count. */
static size_t walk_conns(struct netcap *n)
{
	size_t cnt = 0, max = bpf_map__max_entries(n->obj->maps.conns);
	uint64_t key, next;
	int first = 1;

	while (cnt < max) {
		if (bpf_map_get_next_key(n->conns_fd, first ? NULL : &key, &next))
			break;
		first = 0;
		key = next;
		if (bpf_map_lookup_elem(n->conns_fd, &key, &n->vals[cnt]))
			continue; /* closed meanwhile: its close record carries it */
		n->keys[cnt++] = key;
	}
	return cnt;
}

/*
 * UDP sockets idle for NET_UDP_IDLE_NS end here (no hook sees one close when socket calls are
 * traced): a close record each, after the data records read before, and out of the map (a
 * datagram after that is a new connection). The walk's conns left; the count.
 */
static size_t expire_udp(struct netcap *n, size_t nconns)
{
	struct timespec ts;
	size_t kept = 0;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (size_t i = 0; i < nconns; i++) {
		const struct net_conn *c = &n->vals[i].conn;
		struct net_rec_close r = { .hdr = { NET_REC_CLOSE, sizeof(r) } };

		if (!(c->flags & NET_CONN_UDP) || c->last_ns + NET_UDP_IDLE_NS > now) {
			if (kept != i) {
				n->vals[kept] = n->vals[i];
				n->keys[kept] = n->keys[i];
			}
			kept++;
			continue;
		}
		r.conn = *c;
		r.conn.flags |= NET_CONN_CLOSED;
		r.conn.close_ns = now;
		bpf_map_delete_elem(n->conns_fd, &n->keys[i]);
		on_record(n, &r, sizeof(r));
	}
	return kept;
}

int netcap__flush(struct netcap *n, int shipper)
{
	uint64_t now_stats[NET_STAT_MAX];
	size_t nconns, off = 0;
	uint8_t *buf;
	int err;

	err = netcap__read(n, shipper);
	nconns = expire_udp(n, walk_conns(n));
	if (!err)
		err = send_frame(n, shipper);
	read_stats(n, now_stats);
	buf = malloc(sizeof(struct ship_net_hdr) + CONNS_PER_FRAME * sizeof(struct net_conn));
	if (!buf)
		return -ENOMEM;
	do {
		struct ship_net_hdr *h = (struct ship_net_hdr *)buf;
		size_t cnt = nconns - off < CONNS_PER_FRAME ? nconns - off : CONNS_PER_FRAME;
		struct net_conn *out = (struct net_conn *)(h + 1);

		memset(h, 0, sizeof(*h));
		h->task_id = n->task_id;
		h->count = (uint32_t)cnt;
		if (!off)
			for (int k = 0; k < NET_STAT_MAX && k < 16; k++)
				h->stats[k] = now_stats[k] - n->stat_prev[k];
		for (size_t i = 0; i < cnt; i++)
			out[i] = n->vals[off + i].conn;
		if (!err && shipper >= 0)
			err = ipc_send(shipper, MSG_SHIP_NET_CONNS, buf,
				       sizeof(*h) + cnt * sizeof(struct net_conn), -1);
		off += cnt;
	} while (off < nconns);
	free(buf);
	memcpy(n->stat_prev, now_stats, sizeof(now_stats));
	n->obj->bss->budget = n->budget;
	return err ? err : shipper < 0 ? -EPIPE : 0;
}

/* The program's target bit of tgid, in its mapped .bss. */
static void set_target(struct netcap *n, uint32_t tgid, int on)
{
	volatile __u64 *w = &n->obj->bss->target_bits[(tgid >> 6) & 0xffff];

	if (on)
		__atomic_or_fetch(w, 1ull << (tgid & 63), __ATOMIC_SEQ_CST);
	else
		__atomic_and_fetch(w, ~(1ull << (tgid & 63)), __ATOMIC_SEQ_CST);
}

int netcap__trace(struct netcap *n, int32_t pid)
{
	if (pid <= 0 || (uint32_t)pid >> 22)
		return -EINVAL;
	set_target(n, (uint32_t)pid, 1);
	return 0;
}

int netcap__tracing(const struct netcap *n, int32_t pid)
{
	uint32_t tgid = (uint32_t)pid;

	return (int)((__atomic_load_n(&n->obj->bss->target_bits[(tgid >> 6) & 0xffff],
				      __ATOMIC_RELAXED) >>
		      (tgid & 63)) &
		     1);
}

/*
 * The bytes a connection of an ended process held (struct net_conn_state): a segment of their
 * own, as the program would have sent them at its next call.
 */
static void send_held(struct netcap *n, struct net_conn_state *st)
{
	struct {
		struct net_rec_data d;
		uint8_t buf[NET_HOLD_MAX];
	} r = { 0 };
	uint32_t len = (uint32_t)st->hold_len;

	if (!len || len > NET_HOLD_MAX)
		return;
	r.d.hdr.kind = NET_REC_DATA;
	r.d.hdr.len = (uint32_t)((sizeof(r.d) + len + 7) & ~7ul);
	r.d.conn_id = st->conn.id;
	r.d.start_ns = st->hold_start_ns;
	r.d.end_ns = st->hold_end_ns;
	r.d.seq = ++st->conn.data_seq[st->hold_dir & 1];
	r.d.tgid = st->conn.tgid;
	r.d.actual = len;
	r.d.captured = (uint16_t)len;
	r.d.dir = st->hold_dir;
	r.d.fn = st->hold_fn;
	r.d.proto = st->conn.proto;
	memcpy(r.buf, st->hold, len);
	st->hold_len = 0;
	on_record(n, &r, r.d.hdr.len);
}

int netcap__forget(struct netcap *n, int32_t pid, int shipper)
{
	uint32_t tgid = (uint32_t)pid;
	size_t nconns;
	uint64_t now;
	struct timespec ts;

	set_target(n, tgid, 0);
	/*
	 * What it did before it ended is in the ring buffer: ahead of the closes made here, or
	 * the shipper would take its last exchanges for data after a close. A failed send is
	 * counted (records_lost) and found again by the next flush.
	 */
	(void)netcap__read(n, shipper);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	nconns = walk_conns(n);
	for (size_t i = 0; i < nconns; i++) {
		struct net_rec_close r = { .hdr = { NET_REC_CLOSE, sizeof(r) } };

		if (n->vals[i].conn.tgid != tgid)
			continue;
		send_held(n, &n->vals[i]);
		r.conn = n->vals[i].conn;
		r.conn.flags |= NET_CONN_CLOSED | NET_CONN_EXITED;
		r.conn.close_ns = now;
		bpf_map_delete_elem(n->conns_fd, &n->keys[i]);
		on_record(n, &r, sizeof(r));
	}
	return 0;
}

struct netcap *netcap__start(const struct task_spec *spec, struct msg_task_started *ret_started)
{
	uint32_t attach = spec->attach, max_conns;
	struct netcap *n = calloc(1, sizeof(*n));
	enum mode mode = MODE_SOCK;
	int err;

	if (!n)
		return NULL;
	n->task_id = spec->task_id;
	n->spec = spec;
	n->ncpus = libbpf_num_possible_cpus();
	n->frame = malloc(sizeof(struct ship_net_hdr) + NETCAP_FRAME_BYTES);
	if (!n->frame || n->ncpus <= 0) {
		err = n->ncpus <= 0 ? -ENODEV : -ENOMEM;
		goto cleanup;
	}
	memset(n->frame, 0, sizeof(struct ship_net_hdr));
	((struct ship_net_hdr *)n->frame)->task_id = spec->task_id;
	n->frame_len = sizeof(struct ship_net_hdr);
	{
		enum mode order[3];
		int nmodes = 0;

		/*
		 * The access log times every call (its kernel logs' start and end): the system
		 * call hooks, whichever was asked.
		 */
		if (spec->type == TASK_ACCESS_LOG)
			attach = ATTACH_SYSCALLS;
		if (attach == ATTACH_AUTO || attach == ATTACH_TP_BTF)
			order[nmodes++] = MODE_SOCK;
		if (attach == ATTACH_AUTO || attach == ATTACH_SYSCALLS)
			order[nmodes++] = MODE_SYS_BTF;
		if (attach == ATTACH_AUTO || attach == ATTACH_RAW_TP ||
		    spec->type == TASK_ACCESS_LOG)
			order[nmodes++] = MODE_SYS_RAW;
		err = -EINVAL;
		for (int i = 0; i < nmodes && err; i++) {
			err = start_mode(n, spec, order[i]);
			if (err && i + 1 < nmodes)
				log_info("NETWORK: %s refused (%s), trying %s",
					 mode_names[order[i]], strerror(-err),
					 mode_names[order[i + 1]]);
			if (!err)
				mode = order[i];
		}
		if (err)
			goto cleanup;
	}
	/*
	 * Loading parsed the kernel's BTF (5.5 MB here), about 12 MB of heap freed again: given
	 * back before the ring is mapped, not kept for the task's life (the trim threshold
	 * heap_prefault sets would keep it).
	 */
	malloc_trim(0);
	max_conns = bpf_map__max_entries(n->obj->maps.conns);
	n->vals = malloc(max_conns * sizeof(*n->vals));
	n->keys = malloc(max_conns * sizeof(*n->keys));
	if (!n->vals || !n->keys) {
		err = -ENOMEM;
		goto cleanup;
	}
	n->conns_fd = bpf_map__fd(n->obj->maps.conns);
	n->stats_fd = bpf_map__fd(n->obj->maps.stats);
	n->rb = ringread__new(bpf_map__fd(n->obj->maps.events),
			      bpf_map__max_entries(n->obj->maps.events), on_record, n);
	if (!n->rb) {
		err = -errno;
		goto cleanup;
	}
	n->budget = (int64_t)NETCAP_BUDGET_PER_S * spec->flush_ms / 1000;
	n->obj->bss->budget = n->budget;
	for (uint32_t i = 0; i < spec->npids; i++) {
		uint32_t tgid = (uint32_t)spec->pids[i];

		if (tgid >> 22) {
			err = -EINVAL; /* over PID_MAX_LIMIT: not a pid */
			goto cleanup;
		}
		set_target(n, tgid, 1);
	}
	memset(ret_started, 0, sizeof(*ret_started));
	ret_started->task_id = spec->task_id;
	ret_started->ncpus = (uint32_t)n->ncpus;
	snprintf(ret_started->attach, sizeof(ret_started->attach), "%s", mode_names[mode]);
	return n;
cleanup:
	netcap__free(n);
	errno = -err;
	return NULL;
}

void netcap__stop(struct netcap *n)
{
	for (int i = 0; i < n->nlinks; i++)
		bpf_link__destroy(n->links[i]);
	n->nlinks = 0;
	for (int i = 0; i < n->ntls_links; i++)
		close(n->tls_links[i]);
	n->ntls_links = 0;
}

/* One uprobe_multi link: prog at offsets of the file fd, in process pid only. fd or -errno. */
static int link_uprobes(int prog_fd, int fd, int pid, const uint64_t *offs, const uint64_t *cookies,
			uint32_t cnt, uint32_t flags)
{
	/* union bpf_attr's link_create, as far as uprobe_multi goes (Linux 6.6). */
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, um_flags, pid, pad;
	} attr;
	char path[64];
	long rc;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = ROVER_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offs;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = cnt;
	attr.um_flags = flags;
	attr.pid = (uint32_t)pid;
	rc = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return rc < 0 ? -errno : (int)rc;
}

/* Whether the process of pidfd has ended (its number may be another's once it is reaped). */
static int pidfd_ended(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

int netcap__tls_attach(struct netcap *n, const struct msg_tls_attach *m, int fd, int pidfd,
		       struct msg_tls_result *ret)
{
	/*
	 * 0: C entries and call sites (tls_enter), 1: C returns (tls_exit), 2: Go (go_tls),
	 * 3: the jumps after C call sites (tls_exit, as plain probes)
	 */
	uint64_t offs[4][MSG_TLS_MAX_PROBES], cookies[4][MSG_TLS_MAX_PROBES];
	uint32_t cnt[4] = { 0 };
	int progs[4], target = 0, err = 0, first = n->ntls_links;

	memset(ret, 0, sizeof(*ret));
	ret->task_id = m->task_id;
	ret->pid = m->pid;
	ret->seq = m->seq;
	for (uint32_t i = 0; i < n->spec->npids; i++)
		target |= n->spec->pids[i] == m->pid;
	/* The access log's targets are its supervisor's word since the start: traced now. */
	if (n->spec->type == TASK_ACCESS_LOG && m->pid > 0)
		target = netcap__tracing(n, m->pid);
	if (!n->tls)
		err = -EOPNOTSUPP;
	else if (m->task_id != n->task_id || !target || m->pid <= 0 || pidfd < 0)
		err = -EPERM;
	else if (pidfd_ended(pidfd))
		err = -ESRCH;
	else if (!m->nprobes || m->nprobes > MSG_TLS_MAX_PROBES || m->lib == NET_TLS_NONE ||
		 m->lib >= NET_TLS_MAX)
		err = -EINVAL;
	else if (n->ntls_links + 4 > TLS_MAX_LINKS)
		err = -ENOSPC;
	for (uint32_t i = 0; !err && i < m->nprobes; i++) {
		const struct msg_tls_probe *p = &m->probes[i];
		uint32_t fn = p->cookie & 0xff, lib = (p->cookie >> 8) & 0xff,
			 where = p->cookie >> 16;
		int go = fn >= NET_TLS_FN_GO_READ && fn <= NET_TLS_FN_GO_HS_RET;
		int g = go ? 2 : where == NET_TLS_AT_AFTER >> 16 ? 3 : p->ret ? 1 : 0;

		/* Call sites: SSL_read's and SSL_write's only, never with a return probe. */
		if (lib != m->lib || !fn || fn >= NET_TLS_FN_MAX || go != (m->lib == NET_TLS_GO) ||
		    (go && p->ret) || where > NET_TLS_AT_AFTER >> 16 ||
		    (where && (p->ret || (fn != NET_TLS_FN_READ && fn != NET_TLS_FN_WRITE)))) {
			err = -EINVAL;
			break;
		}
		offs[g][cnt[g]] = p->offset;
		cookies[g][cnt[g]++] = p->cookie;
	}
	if (!err)
		err = tlscheck__probes(fd, m);
	progs[0] = bpf_program__fd(n->obj->progs.tls_enter);
	progs[1] = bpf_program__fd(n->obj->progs.tls_exit);
	progs[2] = bpf_program__fd(n->obj->progs.go_tls);
	progs[3] = progs[1];
	for (int g = 0; !err && g < 4; g++) {
		int l;

		if (!cnt[g])
			continue;
		l = link_uprobes(progs[g], fd, m->pid, offs[g], cookies[g], cnt[g],
				 g == 1 ? ROVER_BPF_F_UPROBE_MULTI_RETURN : 0);
		if (l < 0) {
			err = l;
			break;
		}
		n->tls_links[n->ntls_links++] = l;
		ret->attached += cnt[g];
	}
	/*
	 * The kernel took the pid's number when it made each link: the target had not ended
	 * after, so the number was still its own then, not another process's it was given to.
	 */
	if (n->ntls_links > first && pidfd_ended(pidfd)) {
		while (n->ntls_links > first)
			close(n->tls_links[--n->ntls_links]);
		ret->attached = 0;
		err = -ESRCH;
	}
	if (!err)
		__atomic_store_n(&n->obj->bss->tls_on, 1, __ATOMIC_SEQ_CST);
	/* Links already made for this library stay: each is whole, and limited to the pid. */
	ret->err = err;
	return err;
}

void netcap__totals(const struct netcap *n, uint64_t *ret_events, uint64_t ret_losses[LOSS_MAX])
{
	memset(ret_losses, 0, LOSS_MAX * sizeof(uint64_t));
	*ret_events = n->stat_prev[NET_STAT_SYSCALLS];
	ret_losses[LOSS_NET_CONNS_FULL] = n->stat_prev[NET_STAT_CONNS_FULL];
	ret_losses[LOSS_NET_SYSCALLS] = n->stat_prev[NET_STAT_INFLIGHT_FULL];
	ret_losses[LOSS_NET_SEGMENTS] =
		n->stat_prev[NET_STAT_DATA_RINGBUF] + n->stat_prev[NET_STAT_DATA_BUDGET];
	ret_losses[LOSS_NET_CLOSES] = n->stat_prev[NET_STAT_CLOSE_RINGBUF];
	ret_losses[LOSS_NET_RECORDS] = n->records_lost;
	ret_losses[LOSS_NET_TLS] =
		n->stat_prev[NET_STAT_TLS_UNBOUND] + n->stat_prev[NET_STAT_TLS_CALLS_FULL];
	ret_losses[LOSS_TARGETS_CRED] = n->stat_prev[NET_STAT_CRED_DROPPED];
}

void netcap__free(struct netcap *n)
{
	if (!n)
		return;
	if (n->obj)
		netcap__stop(n);
	log_info("task %" PRIu64 ": NETWORK read %" PRIu64 " records (%" PRIu64
		 " bytes) from its ring in %" PRIu64 " reads",
		 n->task_id, n->ring_records, n->ring_bytes, n->ring_reads);
	ringread__free(n->rb);
	net_bpf__destroy(n->obj);
	free(n->frame);
	free(n->vals);
	free(n->keys);
	free(n);
}
