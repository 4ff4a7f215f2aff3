/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where SSL_read and SSL_write may be probed without the single-step of their first
 * instruction (shared by the shipper, which finds the places, and the worker, which finds them
 * again in the same bytes before it links a probe there; neither trusts the other's word).
 *
 * A uprobe at a function's entry traps, then single-steps the instruction it displaced in a
 * second trap (OpenSSL 3.0's SSL_read begins with `sub $0x18,%rsp`, which the kernel does not
 * emulate), and its return probe is a third entry into the kernel: about 28 us a call on this
 * kind of VM, where a trap costs 10. OpenSSL's SSL_read and SSL_write are thin wrappers: they
 * check the length, point %rcx at a local size_t and call the _ex implementation with the
 * caller's %rdi, %rsi and %rdx; then test its result. A probe on that call instruction sees the
 * _ex call's four arguments, and one on the conditional jump after it sees the result in %eax
 * with the byte count in the local: two traps of instructions the kernel emulates (a call, a
 * conditional jump), no single-step, no return probe.
 *
 * Only a prologue made of the instructions below is accepted, each decoded exactly: any other
 * instruction (one that could change %rdi, %rsi, %rdx or %rcx, or a branch backwards) and the
 * function keeps its entry and return probes. OpenSSL 3.3's internal call takes a flags word in
 * %rcx (`xor %ecx,%ecx`): refused the same way.
 */
#ifndef ROVER_COMMON_TLSSITE_H
#define ROVER_COMMON_TLSSITE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of a function read to find its call site: the prologue and the test after the call. */
#define TLS_SITE_SCAN 96

struct tls_site {
	uint32_t call_off;  /* the call instruction, from the function's entry */
	uint32_t after_off; /* the conditional jump that tests its result */
};

/*
 * The call site and the jump after it in code, the first len bytes of a function from its
 * entry: 0, or -ENOENT when the prologue is not one this file accepts.
 */
int tls_site_find(const uint8_t *code, size_t len, struct tls_site *ret);

#endif
