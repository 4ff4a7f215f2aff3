/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Supervisor side (rover user, no capabilities): the commands the backend answers queryTasks
 * with, checked field by field. Backend bytes are untrusted: every arg is required and checked,
 * a bad command is skipped with the reason, the others still run.
 */
#ifndef ROVER_SUPERVISOR_COMMANDS_H
#define ROVER_SUPERVISOR_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "ebpf/profiling/Profile.pb-c.h"
#include "common/Command.pb-c.h"
#include "common/msg.h"

#define SW_ID_LEN 256 /* longest TaskId / ProcessId accepted, NUL included */
/*
 * Process ids a task takes: as many as the pids one worker profiles (ROVER_MAX_PIDS), since a
 * task runs one worker for all of its processes. The OAP lists every process of the service
 * or instance; those past this many are counted (ids_left_out), not refused.
 */
#define SW_MAX_PROCESSES ROVER_MAX_PIDS

/* One EBPFProfilingTaskQuery command. */
struct sw_task {
	char task_id[SW_ID_LEN];
	char process_ids[SW_MAX_PROCESSES][SW_ID_LEN];
	uint32_t nprocess_ids;
	uint32_t ids_left_out; /* process ids the command listed past SW_MAX_PROCESSES */
	uint64_t update_time_ms;
	uint32_t target_type; /* enum task_type (common/msg.h) */
	uint64_t start_time_ms;
	uint32_t duration_s;
	char extension_json[4096]; /* may be empty */
	/*
	 * NETWORK: ExtensionConfigJSON's NetworkSamplings, in the order given. The values are
	 * taken as sent, When4xx included: the OAP (CommandService.convertExtension) fills
	 * When4xx from When5xx, so a real OAP always sends the two equal.
	 */
	struct msg_net_rule rules[ROVER_NET_MAX_RULES];
	uint32_t nrules;
	/* NETWORK: why the rules could not be taken (the task runs without), or that some were
	 * left out; "" when all were taken. */
	char ext_note[192];
};

/*
 * Parses one command. 0 with ret_task filled; -ENOENT when cmd is not an
 * "EBPFProfilingTaskQuery" (not ours to run here); -EINVAL with why naming the arg and value
 * (missing TaskId, non-numeric TaskUpdateTime, TriggerType other than FIXED_TIME, unknown
 * TargetType, empty or repeated process ids, an oversized value...). Process ids past
 * SW_MAX_PROCESSES are counted in ids_left_out, the first ones kept.
 *
 * ExtensionConfigJSON: "", "null" or an object. Of ON_CPU and OFF_CPU tasks it must be valid
 * (else -EINVAL) and is otherwise unused. Of NETWORK tasks it is read into rules: absent or null
 * fields take their defaults (MinDuration -1, flags false, sizes 0), a config that is not
 * valid JSON or not of that schema leaves the task with no rules and ext_note saying why, and
 * the task still runs: its topology and meters need no sampling rule.
 */
int sw_task__parse(const Skywalking__V3__Command *cmd, struct sw_task *ret_task, char *why,
		   size_t whylen);

enum sw_task_when {
	SW_TASK_NOW = 1,     /* start now; *ret_run_ms says for how long */
	SW_TASK_LATER = 2,   /* start at task->start_time_ms */
	SW_TASK_EXPIRED = 3, /* start + duration is past: skip */
};

/* What to do with a parsed task at now_ms (unix ms). For NOW, ret_run_ms is what is left of
 * the duration (a task that started 3 s ago with 10 s runs 7 s). */
enum sw_task_when sw_task__when(const struct sw_task *t, uint64_t now_ms, uint64_t *ret_run_ms);

/* The identity upstream replaces running tasks by: process ids + target type + trigger type. */
int sw_task__same_identity(const struct sw_task *a, const struct sw_task *b);

/*
 * A keep-alive (reference network-profiling.md §1): cmd has the TaskId of run, a NETWORK task
 * that started and ends at *end_ms (unix ms). When cmd is newer (TaskUpdateTime) than what run
 * holds, run takes its update time, its duration when longer (cut to max_s seconds, 0: no cut;
 * the end stays counted from the task's start time) and its rules, appended as far as
 * ROVER_NET_MAX_RULES allows; *end_ms moves to the new end. Returns 1 when the end moved or
 * rules were added (the rules added are run->rules from the count before the call on), 0 when
 * nothing changed: an older or repeated command, or one that would end the task sooner.
 */
int sw_task__renew(struct sw_task *run, uint64_t *end_ms, const struct sw_task *cmd,
		   uint32_t max_s);

/*
 * Cuts t's duration to max_s seconds (profiling.max_task_duration). Returns 1 when it was cut,
 * 0 when it fit. Cut, not refused: whoever asked for a long task still gets its first max_s
 * seconds of data, counted from the task's start time.
 */
int sw_task__cap_duration(struct sw_task *t, uint32_t max_s);
/*
 * NETWORK: payload bytes the worker should copy per syscall (task_spec.capture_bytes): the
 * default SW_NET_CAPTURE, or more when a rule requires complete requests or responses: the
 * largest of their max sizes (0, unlimited, asks for all), up to what a syscall's record may
 * carry (NET_CAPTURE_MAX). Rules a keep-alive adds come after the worker was configured: they
 * cannot change it.
 */
#define SW_NET_CAPTURE 1024u
uint32_t sw_task__capture_bytes(const struct sw_task *t);

/*
 * What one backend can make this host run at once. A task runs one worker for all of its
 * processes here (up to ROVER_MAX_PIDS pids); the
 * supervisor and the launcher hold 32 tasks and workers in all (MAX_TASKS, MAX_WORKERS). The
 * backend gets half: the rest is for local `rover profile` tasks and for replaced workers that
 * are still finishing.
 */
#define SW_MAX_RUNS 16
/* ON_CPU and OFF_CPU of one process may overlap; a third task on it is one too many. */
#define SW_MAX_TASKS_PER_PROCESS 2
/* NETWORK tasks are counted apart: one of them on a process, besides its profiling tasks. */
#define SW_MAX_NET_TASKS_PER_PROCESS 1

/* One worker the backend started: a task on its process ids here. */
struct sw_run {
	char task_id[SW_ID_LEN];
	char process_ids[SW_MAX_PROCESSES][SW_ID_LEN]; /* [0] names the run */
	uint32_t nprocess_ids;
	uint32_t type;	  /* enum task_type */
	uint64_t gone_ms; /* unix ms: forgotten by then even if its end is never reported */
	int stopping;	  /* replaced: still a worker, no longer a task on its processes */
};

struct sw_runs {
	struct sw_run run[SW_MAX_RUNS];
	int n;
};

/*
 * Records a run of an ON_CPU or OFF_CPU task_id on process_id, or says why not: -ENOSPC with
 * SW_MAX_RUNS runs already, -EBUSY when process_id is already in SW_MAX_TASKS_PER_PROCESS such
 * tasks (runs that are stopping do not count there).
 */
int sw_runs__add(struct sw_runs *r, const char *task_id, const char *process_id, uint64_t gone_ms);
/*
 * One worker for task_id of type (enum task_type) on ids[0..n) (n <= SW_MAX_PROCESSES):
 * -ENOSPC as above, -EBUSY when any of them is busy for that type (sw_runs__busy). Nothing is
 * recorded on failure.
 */
int sw_runs__add_set(struct sw_runs *r, const char *task_id, uint32_t type,
		     const char (*ids)[SW_ID_LEN], uint32_t n, uint64_t gone_ms);
/*
 * Whether process_id may take no more tasks of type: it is in SW_MAX_NET_TASKS_PER_PROCESS
 * NETWORK tasks, or SW_MAX_TASKS_PER_PROCESS others, that are not stopping.
 */
int sw_runs__busy(const struct sw_runs *r, const char *process_id, uint32_t type);
/* The worker of (task_id, process_id) ended, or never started; process_id is its run's first. */
void sw_runs__ended(struct sw_runs *r, const char *task_id, const char *process_id);
/* task_id's runs now end at gone_ms (a keep-alive). */
void sw_runs__extend(struct sw_runs *r, const char *task_id, uint64_t gone_ms);
/* task_id was replaced: its workers were told to stop. */
void sw_runs__stopping(struct sw_runs *r, const char *task_id);
/* Forgets runs whose gone_ms is past. */
void sw_runs__expire(struct sw_runs *r, uint64_t now_ms);

#endif
