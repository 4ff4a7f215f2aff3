/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rover profile --name` and `rover watch --name`: the processes a regular expression names,
 * found by the command itself before any role starts, as the user who runs it (root, or a
 * `--connect` client, which reads what that user may read of /proc). The pids found go to the
 * task as --pid's do, so every check of a task's pids (the launcher's, for a client not root)
 * applies to them alike.
 */
#ifndef ROVER_LAUNCHER_SELECT_H
#define ROVER_LAUNCHER_SELECT_H

#include <stdint.h>
#include <stdio.h>

/*
 * The processes whose command name, executable path or command line regex matches, as
 * discovery's finders match (common/config/procmatch.h), but this command and the processes
 * it runs under (`sudo rover profile --name nginx` would match sudo), kernel threads and
 * pids already in pids. Appended to pids (npids of them, at most max); one line each to say,
 * naming what matched. Returns how many were found, 0 for none, -EINVAL for a bad regex
 * (said), -E2BIG when they do not fit.
 */
int select__by_name(const char *regex, int32_t *pids, uint32_t *npids, uint32_t max, FILE *say);

#endif
