/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subset of Go's text/template that process discovery names are written in, compiled once
 * when the config is loaded and rendered per process by the supervisor:
 *   literal text, {{.Rover.InstanceID}}, {{.Rover.HostName}}, {{.Rover.HostIPV4 "eth0"}},
 *   {{.Rover.HostIPV6 "eth0"}}, {{.Process.ExeFilePath}}, {{.Process.ExeName}},
 *   {{.Process.CommandLine}}, {{.Process.Pid}}, {{.Process.WorkDir}},
 *   {{.Process.ExeNameInCommandLine}}, {{.Finder.Layer}}, {{.Finder.RegexMatchGroup N}},
 * with {{- and -}} trimming as in Go. Anything else is a compile error naming it.
 */
#ifndef ROVER_COMMON_TEMPLATE_H
#define ROVER_COMMON_TEMPLATE_H

#include <stddef.h>

#define TMPL_MAX_SOURCE 4096
#define TMPL_MAX_OUTPUT 1024 /* a rendered name longer than this is an error */
#define TMPL_MAX_GROUPS 16

struct tmpl;

/* What a template can see of one process and the host. NULL strings render as "". */
struct tmpl_ctx {
	const char *instance_id;
	const char *host_name;
	const char *exe_path;
	const char *exe_name;
	const char *cmdline; /* arguments joined by spaces */
	int pid;
	const char *workdir;
	const char *exe_name_in_cmdline; /* basename of argv[0] */
	const char *layer;
	const char *groups[TMPL_MAX_GROUPS]; /* groups[0]: whole match, groups[N]: Nth group */
	int ngroups;
	/* IP address of interface ifname (v6 when family6), into buf; 0 or -errno. May be NULL:
	 * then every HostIPV4/V6 renders as an error. */
	int (*host_ip)(void *arg, const char *ifname, int family6, char *buf, size_t len);
	void *host_ip_arg;
};

/* NULL with errno EINVAL and err explaining ("unknown field .Process.Exe at 3"), or ENOMEM. */
struct tmpl *tmpl__compile(const char *src, char *err, size_t errlen);
void tmpl__free(struct tmpl *t);

/* Renders into out (NUL-terminated). 0, or -EINVAL/-ENOSPC/-ENOENT with err saying why
 * (a missing regex group, an interface without an address, an output too long). */
int tmpl__render(const struct tmpl *t, const struct tmpl_ctx *ctx, char *out, size_t outlen,
		 char *err, size_t errlen);

/* The source it was compiled from. */
const char *tmpl__source(const struct tmpl *t);

#endif
