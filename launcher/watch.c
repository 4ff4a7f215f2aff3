// SPDX-License-Identifier: Apache-2.0
/*
 * `rover watch`: continuous profiling for a user with no OAP. The launcher, before it starts
 * any role, samples one process and the host from /proc on the supervisor's windows
 * (common/cwindow.h: each condition judged on its own period, the newest matching value) and,
 * once a condition holds, profiles exactly as `rover profile` with the options it was given. The
 * processes are --pid's or --name's (launcher/select.c, found once before the watch); with
 * several, their CPU and threads are added up.
 * Reads only /proc/PID/stat, /proc/PID/status and /proc/loadavg (kernel text, the command name
 * skipped by its last ')').
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cwindow.h"
#include "common/procstat.h"
#include "common/msg.h"
#include "common/util.h"
#include "launcher/select.h"
#include "launcher/watch.h"

enum { W_CPU, W_THREADS, W_LOAD, W_MAX };

static const char *const w_names[W_MAX] = { "CPU %", "threads", "load" };

struct cond {
	int on;
	double threshold;
	uint32_t count, period;
	struct cwindow w;
};

/* "THRESHOLD:COUNT/PERIOD", e.g. "80:3/5": 0, or -EINVAL. */
static int parse_cond(const char *arg, struct cond *c)
{
	char *end;
	unsigned long count, period;
	double t = strtod(arg, &end);

	if (end == arg || *end != ':' || !(t > 0) || t > 1e9)
		return -EINVAL;
	count = strtoul(end + 1, &end, 10);
	if (*end != '/')
		return -EINVAL;
	period = strtoul(end + 1, &end, 10);
	if (*end || !count || !period || count > period || period > CWINDOW_MAX_SLOTS)
		return -EINVAL;
	c->on = 1;
	c->threshold = t;
	c->count = (uint32_t)count;
	c->period = (uint32_t)period;
	return 0;
}

static int duration_ms(const char *s, uint64_t *ret_ms)
{
	uint64_t us;

	if (parse_duration_us(s, &us))
		return -EINVAL;
	*ret_ms = us / 1000;
	return 0;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void usage_error(const char *what, const char *arg, int *ret_rc)
{
	fprintf(stderr, "rover: watch: %s '%s'\nrover: try 'rover watch --help'\n", what, arg);
	*ret_rc = 2;
}

int cmd_watch(int argc, char **argv, int (*profile)(int argc, char **argv))
{
	struct cond conds[W_MAX] = { { 0 } };
	char **pargv = calloc((size_t)argc + 4, sizeof(char *));
	uint64_t fetch_ms = 1000, max_wait_ms = 0, start, next, ticks = 0, ticks_ms = 0;
	uint64_t starttime[ROVER_MAX_PIDS] = { 0 };
	int32_t pids[ROVER_MAX_PIDS];
	uint32_t npids = 0;
	char pidlist[ROVER_MAX_PIDS * 12];
	const char *name = NULL;
	int pargc = 0, have_ticks = 0, rc = 1;
	long tck = sysconf(_SC_CLK_TCK);

	if (!pargv)
		return 1;
	pargv[pargc++] = "profile";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int k = !strcmp(a, "--cpu")	  ? W_CPU
			: !strcmp(a, "--threads") ? W_THREADS
			: !strcmp(a, "--load")	  ? W_LOAD
						  : -1;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_watch, stdout);
			free(pargv);
			return 0;
		}
		if (k >= 0 || !strcmp(a, "--fetch-interval") || !strcmp(a, "--max-wait")) {
			if (!v) {
				usage_error("missing value of", a, &rc);
				goto cleanup;
			}
			i++;
			if (k >= 0 && parse_cond(v, &conds[k])) {
				usage_error("bad condition (THRESHOLD:COUNT/PERIOD, e.g. 80:3/5)",
					    v, &rc);
				goto cleanup;
			}
			if (!strcmp(a, "--fetch-interval") &&
			    (duration_ms(v, &fetch_ms) || fetch_ms < 100 || fetch_ms > 60000)) {
				usage_error("bad --fetch-interval (100ms to 1m)", v, &rc);
				goto cleanup;
			}
			if (!strcmp(a, "--max-wait") &&
			    (duration_ms(v, &max_wait_ms) || !max_wait_ms)) {
				usage_error("bad --max-wait", v, &rc);
				goto cleanup;
			}
			continue;
		}
		/* --name is ours: the profile gets the pids it found, not a second search. */
		if (!strcmp(a, "--name") || !strcmp(a, "-n")) {
			if (!v || !v[0]) {
				usage_error("missing value of", a, &rc);
				goto cleanup;
			}
			name = v;
			i++;
			continue;
		}
		/* --pid is both ours and the profile's; the rest is the profile's. */
		if ((!strcmp(a, "--pid") || !strcmp(a, "-p")) && v) {
			char buf[ROVER_MAX_PIDS * 12], *save = NULL, *tok;

			snprintf(buf, sizeof(buf), "%s", v);
			for (tok = strtok_r(buf, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				char *end;
				long p = strtol(tok, &end, 10);

				if (*end || p <= 0 || p > (1 << 22) || npids >= ROVER_MAX_PIDS) {
					usage_error("bad --pid (1 to 64 pids)", v, &rc);
					goto cleanup;
				}
				pids[npids++] = (int32_t)p;
			}
		}
		pargv[pargc++] = argv[i];
	}
	if ((!npids && !name) || !(conds[W_CPU].on || conds[W_THREADS].on || conds[W_LOAD].on)) {
		fprintf(stderr,
			"rover: watch needs --pid PID or --name REGEX and at least one of --cpu, "
			"--threads, --load\nrover: try 'rover watch --help'\n");
		rc = 2;
		goto cleanup;
	}
	if (name) {
		int n = select__by_name(name, pids, &npids, ROVER_MAX_PIDS, stderr);
		size_t off = 0;

		if (n == 0)
			fprintf(stderr, "rover: --name '%s' matches no process\n", name);
		if (n <= 0) {
			rc = n == -EINVAL ? 2 : 1;
			goto cleanup;
		}
		for (uint32_t k = 0; k < npids; k++)
			off += (size_t)snprintf(pidlist + off, sizeof(pidlist) - off, "%s%d",
						k ? "," : "", pids[k]);
		pargv[pargc++] = "--pid";
		pargv[pargc++] = pidlist;
	}
	if (tck <= 0)
		tck = 100;
	for (int k = 0; k < W_MAX; k++)
		if (conds[k].on && cwindow__init(&conds[k].w, conds[k].period, CWINDOW_LATEST))
			goto cleanup;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (npids == 1)
		fprintf(stderr, "rover: watching process %d every %llu ms\n", pids[0],
			(unsigned long long)fetch_ms);
	else
		fprintf(stderr,
			"rover: watching %u processes (their CPU and threads added up) every "
			"%llu ms\n",
			npids, (unsigned long long)fetch_ms);
	start = next = now_mono_ms();
	while (!interrupted) {
		uint64_t now = now_mono_ms(), t = 0;
		double v, cur = 0;
		uint32_t alive = 0;
		int hit = -1;

		if (now < next) {
			struct timespec ts = { 0, (long)((next - now) * 1000000) };

			nanosleep(&ts, NULL);
			continue;
		}
		if (max_wait_ms && now - start >= max_wait_ms) {
			fprintf(stderr, "rover: watch: no condition held in %llu ms\n",
				(unsigned long long)max_wait_ms);
			rc = 3;
			goto cleanup;
		}
		/* A process gone (or its number another's) is watched no more; all gone, we end. */
		for (uint32_t k = 0; k < npids; k++) {
			uint64_t pt, s;

			if (!pids[k])
				continue;
			if (procstat__cpu("/proc", pids[k], &pt, &s) ||
			    (starttime[k] && s != starttime[k])) {
				fprintf(stderr, "rover: watch: process %d is gone\n", pids[k]);
				pids[k] = 0;
				continue;
			}
			starttime[k] = s;
			t += pt;
			alive++;
		}
		if (!alive)
			goto cleanup;
		/* Each sample in the second it was due: one a slot (an empty one never matches). */
		if (conds[W_CPU].on && have_ticks && now > ticks_ms && t >= ticks)
			cwindow__add(&conds[W_CPU].w, (int64_t)next,
				     100.0 * (double)(t - ticks) / (double)tck /
					     ((double)(now - ticks_ms) / 1000.0),
				     0);
		ticks = t;
		ticks_ms = now;
		have_ticks = 1;
		if (conds[W_THREADS].on) {
			double sum = 0;

			for (uint32_t k = 0; k < npids; k++)
				if (pids[k] && !procstat__threads("/proc", pids[k], &v))
					sum += v;
			cwindow__add(&conds[W_THREADS].w, (int64_t)next, sum, 0);
		}
		if (conds[W_LOAD].on && !procstat__load("/proc", &v))
			cwindow__add(&conds[W_LOAD].w, (int64_t)next, v, 0);
		for (int k = 0; k < W_MAX && hit < 0; k++)
			if (conds[k].on && cwindow__match(&conds[k].w, conds[k].period,
							  conds[k].count, conds[k].threshold, &cur))
				hit = k;
		next += fetch_ms;
		if (now >= next)
			next = now + fetch_ms;
		if (hit < 0)
			continue;
		fprintf(stderr,
			"rover: %s: %s %.2f >= %g in %u of the last %u samples: profiling\n",
			npids == 1 ? "the process" : "the processes", w_names[hit], cur,
			conds[hit].threshold, conds[hit].count, conds[hit].period);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		pargv[pargc] = NULL;
		rc = profile(pargc, pargv);
		goto cleanup;
	}
	rc = 128 + interrupted;
cleanup:
	for (int k = 0; k < W_MAX; k++)
		cwindow__free(&conds[k].w);
	free(pargv);
	return rc;
}
