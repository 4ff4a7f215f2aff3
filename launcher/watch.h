/* SPDX-License-Identifier: Apache-2.0 */
/* Launcher side (root, before any role starts): `rover watch` (launcher/watch.c). */
#ifndef ROVER_LAUNCHER_WATCH_H
#define ROVER_LAUNCHER_WATCH_H

static const char usage_watch[] =
	"usage: rover watch (--pid PID[,PID...] | --name REGEX) (--cpu C | --threads C | --load C)...\n"
	"                   [--fetch-interval 1s] [--max-wait DURATION] --output FILE\n"
	"                   [rover profile's options]\n"
	"\n"
	"Continuous profiling without an OAP: samples the process (and the host's load) every\n"
	"fetch interval and, once a condition holds, profiles it as 'rover profile' would with the\n"
	"other options (--type, --duration, --output...), then exits with its status.\n"
	"A condition C is THRESHOLD:COUNT/PERIOD: the value reached THRESHOLD in at least COUNT of\n"
	"the last PERIOD samples (one a fetch interval).\n"
	"\n"
	"  --pid PID[,PID...]  the processes watched, then profiled\n"
	"  --name REGEX        the processes whose command name, executable path or command line\n"
	"                      REGEX matches (as rover profile --name), found once at the start;\n"
	"                      several: their CPU and threads are added up\n"
	"  --children          given to the profile: the processes' descendants are profiled too\n"
	"  --cpu C             the process's CPU use over each interval, % of one CPU (80:3/5)\n"
	"  --threads C         its thread count\n"
	"  --load C            the host's 1-minute load average\n"
	"  --fetch-interval D  between samples (100ms to 1m; 1s)\n"
	"  --max-wait D        give up after D with status 3 (default: wait until interrupted)\n"
	"\n"
	"Exit status: the profile's, 1 when the processes ended first or --name matched none,\n"
	"3 when --max-wait passed.\n";

/*
 * Watches as argv says (argv[0] is "watch"), then calls profile with argv less the watch
 * options (argv[0] "profile"). Returns the exit status.
 */
int cmd_watch(int argc, char **argv, int (*profile)(int argc, char **argv));

#endif
