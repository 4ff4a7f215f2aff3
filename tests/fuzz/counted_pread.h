/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the fuzz targets that compile a worker's file check into themselves (fuzz_tlscheck,
 * fuzz_pyattach): pread counted in read_bytes, so that a target can abort on more bytes read
 * than the check's budget. Include it, then the worker's .c files between
 * `#define pread counted_pread` and `#undef pread`.
 */
#ifndef ROVER_TESTS_FUZZ_COUNTED_PREAD_H
#define ROVER_TESTS_FUZZ_COUNTED_PREAD_H

#include <stdint.h>
#include <unistd.h>

static uint64_t read_bytes;

static ssize_t counted_pread(int fd, void *buf, size_t n, off_t off)
{
	read_bytes += n;
	return pread(fd, buf, n, off);
}

#endif
