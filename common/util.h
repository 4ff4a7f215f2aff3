/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ROVER_COMMON_UTIL_H
#define ROVER_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* "10s", "9ms", "250us", "2m", "1h"; a bare number is seconds. 0 or -EINVAL. */
int parse_duration_us(const char *s, uint64_t *ret_us);

/* Writes all of buf to fd, again after EINTR and short writes. 0, -EIO (wrote nothing), -errno. */
int write_full(int fd, const void *buf, size_t len);

uint64_t now_mono_ms(void);
uint64_t now_unix_ms(void);
/* CPU time this process has used so far (all threads), microseconds; 0 if unknown. */
uint64_t cpu_used_us(void);

/*
 * Makes the first bytes of heap a role allocates cost one call instead of a page fault each:
 * glibc keeps allocations up to 8 MiB (or bytes) in its heap and what is freed there, and bytes of it
 * are populated at once (MADV_POPULATE_WRITE, Linux 5.14; older kernels: nothing done). On a
 * VM whose hypervisor makes page faults dear (10 us each here, a quarter of that populated in
 * bulk) a role's first allocations were a third of its start-up. The price: up to bytes more
 * RSS, which the role would mostly reach anyway. Call it before the role's seccomp filter.
 */
void heap_prefault(size_t bytes);

#endif
