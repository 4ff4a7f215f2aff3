/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config and TLS files as the supervisor and the shipper receive them: from `rover run`,
 * as descriptors of sealed memfds (--config-fd N, --ca-fd N, --cert-fd N, --key-fd N: only
 * root may read a key, the launcher reads it for them); or, a role started alone in its own
 * container, as paths it may read itself (--config PATH, --ca PATH, --cert PATH, --key PATH).
 * Both roles parse these options and load the config the same way, here.
 */
#ifndef ROVER_COMMON_CONFIG_PASSED_H
#define ROVER_COMMON_CONFIG_PASSED_H

#include <getopt.h>
#include <stddef.h>

#include "common/config/config.h"

enum { PASSED_CONFIG, PASSED_CA, PASSED_CERT, PASSED_KEY, NPASSED };

struct config_passed {
	int fd[NPASSED];      /* -1: not given */
	char *bytes[NPASSED]; /* after config__passed_load: NULL when not given */
};

/* The eight long options, for a role's getopt_long table: their val is 0x100 + index. */
#define CONFIG_PASSED_OPTIONS                                  \
	{ "config-fd", required_argument, NULL, 0x100 },       \
		{ "ca-fd", required_argument, NULL, 0x101 },   \
		{ "cert-fd", required_argument, NULL, 0x102 }, \
		{ "key-fd", required_argument, NULL, 0x103 },  \
		{ "config", required_argument, NULL, 0x104 },  \
		{ "ca", required_argument, NULL, 0x105 },      \
		{ "cert", required_argument, NULL, 0x106 },    \
	{                                                      \
		"key", required_argument, NULL, 0x107          \
	}
#define CONFIG_PASSED_USAGE                                       \
	"[--config-fd N [--ca-fd N] [--cert-fd N] [--key-fd N]] " \
	"[--config PATH [--ca PATH] [--cert PATH] [--key PATH]]"

void config__passed_init(struct config_passed *p);

/*
 * Takes one option getopt_long returned (c, its argument): 1 when it was one of the eight,
 * 0 when it is not, -errno for a bad descriptor number or a path that does not open (why in
 * err).
 */
int config__passed_option(struct config_passed *p, int c, const char *arg, char *err,
			  size_t errlen);

/* 1 when a config was given. */
int config__passed_given(const struct config_passed *p);

/*
 * Reads every descriptor given (and closes it), then loads the config into ret_cfg. 0, or
 * -errno with err saying what failed. Unknown keys go to warn.
 */
int config__passed_load(struct config_passed *p, struct rover_config *ret_cfg, char *err,
			size_t errlen, config_warn_fn warn, void *warn_ctx);

/* Frees the bytes (the key's zeroed first) and closes what is still open. */
void config__passed_free(struct config_passed *p);

#endif
