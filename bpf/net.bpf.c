// SPDX-License-Identifier: GPL-2.0
/*
 * NETWORK: the targets' TCP connections (and UDP sockets) counted in the kernel, and for those
 * whose first bytes look like a protocol the shipper parses a bounded prefix of the payload,
 * sent to the worker through a ring buffer. Tracepoints and uprobes only (no kprobe, no
 * fentry: this program runs where neither exists); the worker picks one set of hooks at run
 * time (worker/netcap.c).
 *
 * Connections carry the socket they were seen on: a key that now names another socket (close,
 * dup2) is another connection, with a new id. A close sends the connection's final counters as
 * a record, so a close is never missed because the connection had been reported before.
 *
 * One object and skeleton, built from one piece per concern in bpf/net/, each on the ones
 * before it:
 *   target   who is traced, and the loss counters
 *   call     a socket call: its kind, arguments and user buffers
 *   record   the ring buffer, the payload budget, small records
 *   conn     the connection table
 *   detect   the protocol of a connection's first bytes, a test per protocol
 *   capture  the payload: detected, copied, held, sent
 *   alog     the access log's records of each call, packets and conntrack peer
 *   l4       counts, bytes, durations, round-trip times
 *   tls      TLS libraries' plaintext (uprobes) and how a call finds its connection
 *   syscall  the system call hooks
 *   sock     the socket tracepoints (the default)
 *   drop     retransmits and drops
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common/netrec.h"
#include "bpf/credcheck.bpf.h"
#include "bpf/net/target.bpf.h"
#include "bpf/net/call.bpf.h"
#include "bpf/net/record.bpf.h"
#include "bpf/net/conn.bpf.h"
#include "bpf/net/detect.bpf.h"
#include "bpf/net/capture.bpf.h"
#include "bpf/net/alog.bpf.h"
#include "bpf/net/l4.bpf.h"
#include "bpf/net/tls.bpf.h"
#include "bpf/net/syscall.bpf.h"
#include "bpf/net/sock.bpf.h"
#include "bpf/net/drop.bpf.h"

char LICENSE[] SEC("license") = "GPL";
