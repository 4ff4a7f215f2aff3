// SPDX-License-Identifier: Apache-2.0
/*
 * A target that maps code from files it chose: every regular file in DIR is mapped readable
 * and executable from offset 0, and its first bytes are called as a function in turn with
 * burn_own, a function of this program, so that samples land in both.
 * usage: mapped_code_burn DIR   (runs until killed)
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_FILES 64
#define UNIT 200000

volatile unsigned long sink;

__attribute__((noinline)) void burn_own(void)
{
	for (long i = 0; i < 2L * UNIT; i++)
		sink += i ^ (sink >> 3);
}

int main(int argc, char **argv)
{
	void (*code[MAX_FILES])(void);
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (argc < 2 || !(d = opendir(argv[1])))
		return 2;
	while ((de = readdir(d)) && n < MAX_FILES) {
		void *p;
		int fd;

		if (de->d_type != DT_REG)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 2;
		p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			return 2;
		/* The code sits at offset 0x1000 - 16 of the page: see the test's files. */
		code[n++] = (void (*)(void))((char *)p + 4096 - 16);
	}
	closedir(d);
	printf("ready %d\n", n);
	fflush(stdout);
	for (;;) {
		for (int i = 0; i < n; i++) {
			burn_own();
			code[i]();
		}
	}
}
