// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "common/tlssite.h"

/* A conditional jump at code[p]: its length and target (from the entry), or 0. */
static size_t jcc_at(const uint8_t *code, size_t len, size_t p, size_t *ret_target)
{
	if (p + 2 <= len && code[p] >= 0x70 && code[p] <= 0x7f) {
		*ret_target = p + 2 + (size_t)(int64_t)(int8_t)code[p + 1];
		return 2;
	}
	if (p + 6 <= len && code[p] == 0x0f && code[p + 1] >= 0x80 && code[p + 1] <= 0x8f) {
		int32_t rel;

		memcpy(&rel, code + p + 2, 4);
		*ret_target = p + 6 + (size_t)(int64_t)rel;
		return 6;
	}
	return 0;
}

/* code[p..] starts with the bytes of s (n of them). */
static int at(const uint8_t *code, size_t len, size_t p, const char *s, size_t n)
{
	return p + n <= len && !memcmp(code + p, s, n);
}

/*
 * The length of the accepted prologue instruction at code[p], 0 for any other; *rcx_set when
 * it points %rcx at the stack.
 */
static size_t prologue_insn(const uint8_t *code, size_t len, size_t p, int *rcx_set)
{
	/* endbr64 */
	if (at(code, len, p, "\xf3\x0f\x1e\xfa", 4))
		return 4;
	/* push of a register: it changes none of the arguments */
	if (p < len && code[p] >= 0x50 && code[p] <= 0x57)
		return 1;
	/* push %r8..%r15 */
	if (p + 1 < len && code[p] == 0x41 && code[p + 1] >= 0x50 && code[p + 1] <= 0x57)
		return 2;
	/* sub $imm8,%rsp; sub $imm32,%rsp */
	if (at(code, len, p, "\x48\x83\xec", 3) && p + 4 <= len)
		return 4;
	if (at(code, len, p, "\x48\x81\xec", 3) && p + 7 <= len)
		return 7;
	/* mov %fs:disp32,%rax (the stack protector's canary) */
	if (at(code, len, p, "\x64\x48\x8b\x04\x25", 5) && p + 9 <= len)
		return 9;
	/* mov %rax,disp8(%rsp); mov %rax,disp32(%rsp) */
	if (at(code, len, p, "\x48\x89\x44\x24", 4) && p + 5 <= len)
		return 5;
	if (at(code, len, p, "\x48\x89\x84\x24", 4) && p + 8 <= len)
		return 8;
	/* xor %eax,%eax; test %edx,%edx; movslq %edx,%rdx */
	if (at(code, len, p, "\x31\xc0", 2) || at(code, len, p, "\x85\xd2", 2))
		return 2;
	if (at(code, len, p, "\x48\x63\xd2", 3))
		return 3;
	/* mov %rsp,%rcx; lea (%rsp),%rcx; lea disp8(%rsp),%rcx */
	if (at(code, len, p, "\x48\x89\xe1", 3)) {
		*rcx_set = 1;
		return 3;
	}
	if (at(code, len, p, "\x48\x8d\x0c\x24", 4)) {
		*rcx_set = 1;
		return 4;
	}
	if (at(code, len, p, "\x48\x8d\x4c\x24", 4) && p + 5 <= len) {
		*rcx_set = 1;
		return 5;
	}
	return 0;
}

int tls_site_find(const uint8_t *code, size_t len, struct tls_site *ret)
{
	size_t p = 0, min_target = 0, target, n;
	int rcx_set = 0;

	if (len > TLS_SITE_SCAN)
		len = TLS_SITE_SCAN;
	for (;;) {
		if (p >= len)
			return -ENOENT;
		if (code[p] == 0xe8)
			break;
		n = jcc_at(code, len, p, &target);
		if (n) {
			/* Forward only: out of the path to the call (an error return). */
			if (target <= p)
				return -ENOENT;
			if (target > min_target)
				min_target = target;
			p += n;
			continue;
		}
		n = prologue_insn(code, len, p, &rcx_set);
		if (!n)
			return -ENOENT;
		p += n;
	}
	/* The call, with %rcx pointing at the count it writes. */
	if (!rcx_set || p + 5 > len)
		return -ENOENT;
	ret->call_off = (uint32_t)p;
	p += 5;
	if (at(code, len, p, "\x85\xc0", 2))
		p += 2;
	n = jcc_at(code, len, p, &target);
	/* Every branch before the call leaves past the jump after it: each runs once a call. */
	if (!n || (min_target && min_target <= p))
		return -ENOENT;
	ret->after_off = (uint32_t)p;
	return 0;
}
