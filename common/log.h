/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ROVER_COMMON_LOG_H
#define ROVER_COMMON_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Prefix of every line this process writes, e.g. "rover-worker[123]". */
void log_init(const char *role);
void log_set_level(enum log_level level);
/* By name, as logger.level and ROVER_LOG_LEVEL give it (trace, debug, info, warn, error,
 * fatal, panic); an unknown or NULL name changes nothing. */
void log_set_level_name(const char *name);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
