// SPDX-License-Identifier: GPL-2.0
/*
 * The floor of the NETWORK capture's default hooks: programs that do nothing, on the same
 * tracepoints (bpf/net.bpf.c, socket calls). What a process pays with these attached is what
 * any agent hooked there pays, before its program does anything; scripts/bench_network.sh
 * measures it in the same run as rover. The same for the TLS probes: empty programs at the
 * entry and the return of SSL_read, SSL_write and their _ex variants (scripts/bench_network_tls.sh).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sock_send_length")
int BPF_PROG(floor_send, struct sock *sk, int ret, int flags)
{
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(floor_recv, struct sock *sk, int ret, int flags)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(floor_tls_enter)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(floor_tls_exit)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
