// SPDX-License-Identifier: Apache-2.0
/*
 * Finding: "check-then-open race in safeopen_perf_map". A profiled process owns the /tmp that
 * root reads its perf map from, so it can put something else at /tmp/perf-PID.map between
 * root's look at the name and root's open of it. Here a thread flips a bind mount of a
 * root-only device node over the target's perf map while root calls safeopen_perf_map in a
 * loop, and inotify on the device node counts every open of it: the opener must never open
 * it (O_PATH opens produce no IN_OPEN, which the first test checks on this kernel), and it
 * must still return the target's own file whenever that is what the name shows.
 *
 * Everything happens in a private mount namespace with a tmpfs of its own on /tmp, entered by
 * the test's own process (Criterion runs each test in one): no mount and no file leaks out.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/safeopen.h"

/* A uid that owns nothing on this machine: the target's files are its own, nobody else's. */
#define TARGET_UID 999
/* The check-then-open opener lost this race about 2800 times in 3 s (56k calls) on the
 * two-core test machine: a few seconds show it many times over. */
#define RACE_SECONDS 3
#define RACE_MAX_CALLS 400000
#define MAP_TEXT "1000 10 jitted_function\n"

static char dev[PATH_MAX], map[PATH_MAX];
static pid_t target = -1;
static int inotify_fd = -1;
static atomic_bool stop_flipping;
static atomic_ulong flips;

static void perfmap_fini(void)
{
	if (target > 0) {
		kill(target, SIGKILL);
		waitpid(target, NULL, 0);
		target = -1;
	}
	if (inotify_fd >= 0)
		close(inotify_fd);
	inotify_fd = -1;
}

TestSuite(perfmap, .fini = perfmap_fini, .timeout = 60);

/* A process of TARGET_UID that sleeps until killed; its perf map is ours to write. */
static pid_t start_target(void)
{
	int ready[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setresgid(TARGET_UID, TARGET_UID, TARGET_UID) ||
		    setresuid(TARGET_UID, TARGET_UID, TARGET_UID))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "target did not start");
	close(ready[0]);
	return pid;
}

/*
 * The private namespace, the target, its perf map (a regular file it owns) and a root-only
 * character device (mode 0600, the device number of /dev/null: harmless to open, which
 * the old code did) with an inotify watch for IN_OPEN on it.
 */
static void stage(struct stat *ret_map)
{
	char text[] = MAP_TEXT;
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root (mount namespaces, mknod, a target of another uid)");
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare(CLONE_NEWNS): %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_PRIVATE | MS_REC, NULL), 0);
	cr_assert_eq(mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777"), 0, "tmpfs: %s",
		     strerror(errno));
	cr_assert_eq(mkdir("/tmp/root-only", 0700), 0);
	snprintf(dev, sizeof(dev), "/tmp/root-only/device");
	cr_assert_eq(mknod(dev, S_IFCHR | 0600, makedev(1, 3)), 0, "mknod: %s", strerror(errno));

	target = start_target();
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)target);
	fd = open(map, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchown(fd, TARGET_UID, TARGET_UID), 0);
	cr_assert_eq(fstat(fd, ret_map), 0);
	close(fd);

	inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(inotify_fd, 0);
	cr_assert_geq(inotify_add_watch(inotify_fd, dev, IN_OPEN), 0);
}

/* IN_OPEN events queued since the last call; an overflow counts as an open seen. */
static unsigned long drain_opens(void)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	unsigned long opens = 0;
	ssize_t n;

	while ((n = read(inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & (IN_OPEN | IN_Q_OVERFLOW))
				opens++;
			p += sizeof(*ev) + ev->len;
		}
	}
	return opens;
}

Test(perfmap, inotify_sees_real_opens_and_not_o_path_ones)
{
	struct stat st;
	int fd;

	stage(&st);
	fd = open(dev, O_PATH | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(drain_opens(), 0, "an O_PATH open produced IN_OPEN on this kernel");
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(drain_opens(), 1, "an O_RDONLY open of the device was not seen");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins for secs seconds: the state it follows stays that long. */
static void hold(double secs)
{
	double until = now() + secs;

	while (now() < until)
		;
}

static void *flipper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_flipping)) {
		if (mount(dev, map, NULL, MS_BIND, NULL))
			continue;
		atomic_fetch_add(&flips, 1);
		/*
		 * Each state held a few microseconds: unmounted at once, the device was over the
		 * map for too short a time for any call to see it in some runs (0 refused in
		 * 60 000 flips on a quiet machine), and the race then proved nothing.
		 */
		hold(5e-6);
		/* Lazy: a descriptor the opener holds on the device must not keep it mounted. */
		umount2(map, MNT_DETACH);
		hold(5e-6);
	}
	return NULL;
}

/* Whatever safeopen_perf_map returns is the target's own file, whole. */
static void expect_own_map(int fd, const struct stat *own)
{
	char buf[64] = { 0 };
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert(S_ISREG(st.st_mode) && st.st_dev == own->st_dev && st.st_ino == own->st_ino,
		  "returned a descriptor that is not the target's perf map");
	cr_assert_eq(pread(fd, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(MAP_TEXT));
	cr_assert_str_eq(buf, MAP_TEXT);
}

Test(perfmap, a_bind_mount_flipped_over_the_map_never_gets_a_device_opened)
{
	unsigned long calls = 0, returned = 0, refused = 0, opens = 0;
	struct stat own;
	pthread_t thread;
	double end;
	int fd;

	stage(&own);
	fd = safeopen_perf_map(target);
	cr_assert_geq(fd, 0, "no race yet: %s", strerror(-fd));
	expect_own_map(fd, &own);
	close(fd);

	atomic_store(&stop_flipping, false);
	atomic_store(&flips, 0);
	cr_assert_eq(pthread_create(&thread, NULL, flipper, NULL), 0);
	end = now() + RACE_SECONDS;
	/* Until both outcomes were seen once the time is up, or twice the time at most. */
	while (calls < RACE_MAX_CALLS &&
	       ((calls & 255) || now() < end ||
		((!refused || !returned) && now() < end + RACE_SECONDS))) {
		fd = safeopen_perf_map(target);
		calls++;
		if (fd >= 0) {
			expect_own_map(fd, &own);
			close(fd);
			returned++;
		} else {
			cr_assert(fd == -EPERM || fd == -ENOENT, "safeopen_perf_map: %s",
				  strerror(-fd));
			refused++;
		}
		opens += drain_opens();
	}
	atomic_store(&stop_flipping, true);
	pthread_join(thread, NULL);
	while (umount2(map, MNT_DETACH) == 0)
		;
	opens += drain_opens();

	cr_log_info("perfmap race: %lu calls, %lu flips, %lu returned the map, %lu refused, "
		    "%lu opens of the device",
		    calls, atomic_load(&flips), returned, refused, opens);
	cr_expect_eq(opens, 0, "root opened the device %lu times in %lu calls (%lu flips)", opens,
		     calls, atomic_load(&flips));
	cr_expect_gt(atomic_load(&flips), 0, "the flipper never mounted");
	cr_expect_gt(returned, 0, "the target's own map was never returned while unflipped");
	cr_expect_gt(refused, 0, "the device was never seen: the race did not happen");

	fd = safeopen_perf_map(target);
	cr_assert_geq(fd, 0, "after the race: %s", strerror(-fd));
	expect_own_map(fd, &own);
	close(fd);
}
