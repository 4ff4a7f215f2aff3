// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the commands a backend answers queryTasks with, bytes unpacked as
 * skywalking.v3.Commands (protobuf-c, as the gRPC client hands them over), each command
 * through sw_task__parse() (supervisor/backend/commands.c), then the parsed tasks through
 * sw_task__when() and sw_task__same_identity().
 *
 * Contracts checked: 0, -ENOENT for another command's name, -EINVAL otherwise, with a reason
 * on every refusal; a parsed task is complete (terminated ids, 1..SW_MAX_PROCESSES process
 * ids, a known target type, a duration); identity is reflexive and symmetric.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msg.h"
#include "supervisor/backend/commands.h"

#define MAX_TASKS 8

static void check_task(const struct sw_task *t)
{
	if (!t->task_id[0] || !memchr(t->task_id, '\0', SW_ID_LEN))
		abort();
	if (t->nprocess_ids < 1 || t->nprocess_ids > SW_MAX_PROCESSES)
		abort();
	for (uint32_t i = 0; i < t->nprocess_ids; i++)
		if (!t->process_ids[i][0] || !memchr(t->process_ids[i], '\0', SW_ID_LEN))
			abort();
	if (t->target_type != TASK_ON_CPU && t->target_type != TASK_OFF_CPU &&
	    t->target_type != TASK_NETWORK)
		abort();
	if (!t->duration_s || !memchr(t->extension_json, '\0', sizeof(t->extension_json)))
		abort();
}

static void check_when(const struct sw_task *t, uint64_t now)
{
	uint64_t run = 0;
	enum sw_task_when w = sw_task__when(t, now, &run);

	if (w == SW_TASK_NOW && (run == 0 || run > (uint64_t)t->duration_s * 1000))
		abort();
	if (w != SW_TASK_NOW && w != SW_TASK_LATER && w != SW_TASK_EXPIRED)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sw_task tasks[MAX_TASKS];
	Skywalking__V3__Commands *cmds;
	size_t ntasks = 0;

	cmds = skywalking__v3__commands__unpack(NULL, size, data);
	if (!cmds)
		return 0;
	for (size_t i = 0; i < cmds->n_commands; i++) {
		const Skywalking__V3__Command *c = cmds->commands[i];
		struct sw_task t;
		char why[192];
		int r;

		why[0] = '\0';
		r = sw_task__parse(c, &t, why, sizeof(why));
		if (r == -ENOENT) {
			if (!strcmp(c->command, "EBPFProfilingTaskQuery") || !why[0])
				abort();
			continue;
		}
		if (r) {
			if (r != -EINVAL || !why[0] || !memchr(why, '\0', sizeof(why))) {
				fprintf(stderr, "sw_task__parse: unexpected %d '%s'\n", r, why);
				abort();
			}
			continue;
		}
		check_task(&t);
		check_when(&t, 0);
		check_when(&t, t.start_time_ms);
		check_when(&t, t.start_time_ms + 1000);
		check_when(&t, UINT64_MAX);
		if (!sw_task__same_identity(&t, &t))
			abort();
		for (size_t j = 0; j < ntasks; j++)
			if (sw_task__same_identity(&t, &tasks[j]) !=
			    sw_task__same_identity(&tasks[j], &t))
				abort();
		if (ntasks < MAX_TASKS)
			tasks[ntasks++] = t;
	}
	skywalking__v3__commands__free_unpacked(cmds, NULL);
	return 0;
}
