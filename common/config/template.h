/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subset of Go's text/template that process discovery names and Kubernetes analyzer
 * filters are written in (upstream renders them with text/template), compiled once when the
 * config is loaded and rendered per process by the supervisor.
 *
 * Text and actions: literal text, {{pipeline}}, {{- and -}} trimming, comment actions (slash-star
 * right after the opening braces, star-slash right before the closing ones).
 * Pipeline: command | command | ...; the value of each command is passed as the last argument
 * of the next, as in Go. A command is a function or a method with its arguments, or a single
 * operand. Operands: "strings" (Go escapes) and `raw strings`, integers (decimal, 0x, 0o, 0b,
 * leading 0 octal, signed), true, false, the names below, and (pipeline) in parentheses.
 * Values are typed (string, int, bool); an action prints a bool as true/false, as Go does.
 *
 * Names, and where each is allowed (a name not allowed is a compile error naming it):
 *   process finders (TMPL_VM):        .Rover.* .Process.* .Finder.*
 *   analyzer names (TMPL_K8S_ENTITY): .Rover.* .Process.* .Pod.* .Container.* (no judgments)
 *   analyzer filters (TMPL_K8S_FILTER): .Process.* .Pod.* (with judgments) .Container.*
 *
 *   .Rover.InstanceID .Rover.HostName .Rover.HostIPV4 "if" .Rover.HostIPV6 "if"
 *   .Process.ExeFilePath .Process.ExeName .Process.CommandLine .Process.Pid (int)
 *   .Process.WorkDir .Process.ExeNameInCommandLine
 *   .Finder.Layer .Finder.RegexMatchGroup N
 *   .Pod.Name .Pod.Namespace .Pod.Node .Pod.ServiceName
 *   .Pod.LabelValue "k1,k2" "def"  the first listed label with a non-empty value, else def
 *   .Pod.OwnerName "K1,K2"   per listed kind in order: "service" (any case) gives ServiceName
 *                            when not empty; another kind the nearest owner of that kind (any
 *                            case); an error when none
 *   .Container.Name .Container.ID (raw, runtime prefix kept)
 *   .Container.EnvValue "A,B"      the first env entry, in spec order, named in the list; an
 *                                  error when none
 *   judgments (filters only), bool:
 *   .Pod.HasContainer "n" .Pod.LabelSelector "a=b,c=d" (equality pairs as Kubernetes'
 *   ConvertSelectorToLabelsMap parses them, all must hold) .Pod.HasServiceName
 *   .Pod.HasOwnerName "K1,K2" (OwnerName succeeds and is not empty)
 * Lists ("k1,k2") are split at commas and not trimmed, as upstream does.
 *
 * Functions, as Go's: eq (a == b, or a equal to any of several), ne lt le gt ge (strings
 * byte-wise, ints; other mixes are errors), and or (the first falsy / truthy argument or the
 * last, later arguments not evaluated), not, len (of a string), print println, printf (verbs
 * %v %s %d %t %% with flags - and 0 and a width; Go's %!d(string=x), %!d(MISSING) and
 * %!(EXTRA ...) for mismatches), and upstream's equalsOrDefault EQ IFSAME NEEDS (IFSAME when
 * NEEDS == EQ, else NEEDS). Truth as Go: "" 0 false are false.
 *
 * Not supported (compile errors): if/range/with/define/template/block, variables ($x), nil,
 * floats, character constants, fields of a parenthesised value, index/slice/call/html/js/
 * urlquery, .Pod.FindContainer, gopsutil methods beyond the .Process.* above.
 *
 * Bounds: a source of TMPL_MAX_SOURCE bytes, parentheses nested TMPL_MAX_DEPTH deep,
 * TMPL_MAX_OPERANDS operands per command and TMPL_MAX_COMMANDS per pipeline; every string
 * computed on the way (print, printf) and the output at most TMPL_MAX_OUTPUT bytes. Each
 * node is evaluated at most once per render, so rendering is linear in the template.
 */
#ifndef ROVER_COMMON_TEMPLATE_H
#define ROVER_COMMON_TEMPLATE_H

#include <stddef.h>

#define TMPL_MAX_SOURCE 4096
#define TMPL_MAX_OUTPUT 1024 /* a rendered name longer than this is an error */
#define TMPL_MAX_GROUPS 16
#define TMPL_MAX_DEPTH 10    /* nested parentheses */
#define TMPL_MAX_OPERANDS 32 /* of one command, the function or method included */
#define TMPL_MAX_COMMANDS 32 /* of one pipeline */

struct tmpl;

struct tmpl_kv {
	const char *key, *value;
};

/* A pod as analyzers see it. NULL strings read as "". */
struct tmpl_pod {
	const char *name, *ns, *node;
	const char *service_name; /* the pod's Service (B2 rule), "" when none */
	const struct tmpl_kv *labels;
	int nlabels;
	const char *const *containers; /* spec.containers names, in order */
	int ncontainers;
	const struct tmpl_kv *owners; /* (kind, name): the controller chain, nearest first */
	int nowners;
};

struct tmpl_container {
	const char *name;
	const char *id;		   /* raw status.containerID, runtime prefix kept */
	const struct tmpl_kv *env; /* spec env entries with a literal value, spec order */
	int nenv;
};

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
	/* Kubernetes analyzers; NULL for plain-host finders (then .Pod / .Container are render
	 * errors). */
	const struct tmpl_pod *pod;
	const struct tmpl_container *container;
};

/* Which names a template may use (see above). */
enum tmpl_kind {
	TMPL_VM,
	TMPL_K8S_ENTITY,
	TMPL_K8S_FILTER,
};

/* NULL with errno EINVAL and err explaining ("unknown field .Process.Exe at 3"), or ENOMEM.
 * Positions are byte offsets in src. tmpl__compile() is tmpl__compile_as(TMPL_VM). */
struct tmpl *tmpl__compile(const char *src, char *err, size_t errlen);
struct tmpl *tmpl__compile_as(const char *src, enum tmpl_kind kind, char *err, size_t errlen);
/* A filter: src compiled as "{{" src "}}" with TMPL_K8S_FILTER (positions in errors are still
 * offsets in src, tmpl__source() is src). */
struct tmpl *tmpl__compile_filter(const char *src, char *err, size_t errlen);
void tmpl__free(struct tmpl *t);

/* Renders into out (NUL-terminated). 0, or -EINVAL/-ENOSPC/-ENOENT or the host_ip callback's
 * error, with err saying why (a missing regex group, label-less owner or env entry, an
 * interface without an address, a type mismatch, an output too long). */
int tmpl__render(const struct tmpl *t, const struct tmpl_ctx *ctx, char *out, size_t outlen,
		 char *err, size_t errlen);

/* Renders t and reads the output as Go's strconv.ParseBool (1 t T TRUE true True, 0 f F FALSE
 * false False). 0 with *ret_match 0 or 1, or -errno with err saying why: a render error, or
 * -EINVAL for an output that is no boolean. ret_match is not written on failure. */
int tmpl__filter(const struct tmpl *t, const struct tmpl_ctx *ctx, int *ret_match, char *err,
		 size_t errlen);

/* The source it was compiled from. */
const char *tmpl__source(const struct tmpl *t);

#endif
