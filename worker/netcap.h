/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker side (CAP_BPF + CAP_PERFMON): a NETWORK task's capture program (bpf/net.bpf.c) and
 * its maps. It passes the program's records to the shipper as they are (MSG_SHIP_NET_DATA)
 * and, every flush, the open connections' counters (MSG_SHIP_NET_CONNS); it parses no payload.
 */
#ifndef ROVER_WORKER_NETCAP_H
#define ROVER_WORKER_NETCAP_H

#include <stdint.h>

#include "common/msg.h"

/* Payload bytes per syscall when the task does not say (task_spec.capture_bytes). */
#define NETCAP_DEFAULT_CAPTURE 1024
/* Payload bytes per second the program may send (a flush gets its share). */
#define NETCAP_BUDGET_PER_S (32u << 20)
/* Record bytes gathered before a data frame goes out without waiting for the flush. */
#define NETCAP_FRAME_BYTES (1u << 20)

struct netcap;

/* Loads, configures and attaches the program (tp_btf, else raw_tp). NULL + errno. */
struct netcap *netcap__start(const struct task_spec *spec, struct msg_task_started *ret_started);

/* Polls readable when records wait beyond the program's wakeup mark. */
int netcap__events_fd(const struct netcap *n);

/*
 * Moves the program's records to the shipper (shipper < 0: gone, the records are counted
 * lost). A frame goes out once NETCAP_FRAME_BYTES are gathered. 0, or the send's -errno.
 */
int netcap__read(struct netcap *n, int shipper);

/*
 * The flush: every record, then the open connections' counters and the program's losses since
 * the previous flush; the payload budget is refilled for the next flush_ms. 0 or -errno.
 */
int netcap__flush(struct netcap *n, int shipper);

/*
 * A target ended: its pid is not traced any more, and each of its connections still open is
 * closed (NET_CONN_EXITED) with the counters it has, after the records the program wrote
 * before (they go to shipper first, as in netcap__read). 0 or -errno.
 */
int netcap__forget(struct netcap *n, int32_t pid, int shipper);
/*
 * Whether the programs still trace pid: 0 once they dropped it, a client's target that stopped
 * being the client's to trace (bpf/credcheck.bpf.h).
 */
int netcap__tracing(const struct netcap *n, int32_t pid);
/* The access log: pid traced from now on. 0 or -EINVAL (not a pid). */
int netcap__trace(struct netcap *n, int32_t pid);

/*
 * Attaches the TLS probes the shipper found in a target's library (m, the file's descriptor
 * fd, which stays the caller's), after checking them; ret says what came of it. pidfd pins
 * m->pid's process (the launcher's pidfd of that target; -1 when it has none or ended): a
 * number alone could name whoever was given it after the target ended. 0 or -errno.
 */
int netcap__tls_attach(struct netcap *n, const struct msg_tls_attach *m, int fd, int pidfd,
		       struct msg_tls_result *ret);

void netcap__stop(struct netcap *n);
/* Traced syscalls, and what was lost, since the start. */
void netcap__totals(const struct netcap *n, uint64_t *ret_events, uint64_t ret_losses[LOSS_MAX]);
void netcap__free(struct netcap *n);

#endif
