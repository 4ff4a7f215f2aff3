// SPDX-License-Identifier: Apache-2.0
/*
 * heap_prefault (common/util.c): a role's first allocations after it take no page fault each.
 * Counted by the kernel (minor faults of the process), not timed.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* In a child of its own (a fresh look at the faults): the faults of 768 KiB allocated in
 * pieces, written and freed, after heap_prefault(bytes). */
static long faults_after(size_t bytes)
{
	int pfd[2];
	long n = -1;
	pid_t pid;

	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rusage a, b;
		char *p[12];

		heap_prefault(bytes);
		getrusage(RUSAGE_SELF, &a);
		for (int i = 0; i < 12; i++) {
			p[i] = malloc(64 << 10);
			memset(p[i], i, 64 << 10);
		}
		/* A block larger than glibc's default mmap threshold, as a symbol table. */
		free(p[11]);
		free(p[10]);
		p[10] = malloc(128 << 10);
		memset(p[10], 1, 128 << 10);
		getrusage(RUSAGE_SELF, &b);
		n = b.ru_minflt - a.ru_minflt;
		_exit(write(pfd[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
	}
	close(pfd[1]);
	cr_assert_eq(read(pfd[0], &n, sizeof(n)), (ssize_t)sizeof(n));
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return n;
}

Test(prefault, first_allocations_take_no_fault_each)
{
	long without = faults_after(0), with = faults_after(1u << 20);

	cr_log_info("faults: %ld without, %ld with 1 MiB prefaulted", without, with);
	/* 768 KiB is 192 pages: each one a fault without. */
	cr_expect_geq(without, 150, "%ld faults without: the test measures nothing", without);
	cr_expect_leq(with, 16, "%ld faults after prefaulting", with);
}
