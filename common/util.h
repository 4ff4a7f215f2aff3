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

#endif
