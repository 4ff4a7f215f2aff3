// SPDX-License-Identifier: Apache-2.0
/*
 * Process discovery names and analyzer filters: the Go text/template subset of template.h.
 * A template compiles to a list of parts, each literal text or one pipeline; a pipeline is a
 * list of commands, a command a list of operands (literals, names, functions, parenthesised
 * pipelines). Everything a template holds is allocated from its own list of blocks and freed
 * at once. Arity, where each name is allowed and the types of literal arguments are checked
 * at compile time; the types of computed values when they are used.
 *
 * Syntax accepted, as Go parses it:
 *   {{.Field}} {{ .Method "arg" 2 }} {{fn a b}} {{a | fn b}} {{fn (fn2 a) b}}
 *   {{- ...}} trims the white space before the action, {{... -}} the white space after it;
 *   the dash must be followed (preceded) by a space, tab, CR or newline, as in Go.
 *   String arguments: "..." with Go's escapes (\a \b \f \n \r \t \v \\ \" \xHH \NNN \uXXXX
 *   \UXXXXXXXX) or `raw`; a NUL byte is refused. A comment action (slash-star right after
 *   the opening braces, star-slash right before the closing ones) renders nothing.
 * Error positions are byte offsets in the source.
 *
 * Values are borrowed where they can be (strings of the context and of the template) and
 * owned (malloc'd, at most TMPL_MAX_OUTPUT bytes) when computed, so a render allocates only
 * for print/printf and host addresses.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config/template.h"

enum vtype {
	V_STR,
	V_INT,
	V_BOOL,
	V_ANY, /* parameters of functions that take any type */
};

static const char *const vtype_names[] = { "string", "int", "bool", "any" };

enum field_id {
	F_INSTANCE_ID,
	F_HOST_NAME,
	F_HOST_IPV4,
	F_HOST_IPV6,
	F_EXE_PATH,
	F_EXE_NAME,
	F_CMDLINE,
	F_PID,
	F_WORKDIR,
	F_EXE_NAME_IN_CMDLINE,
	F_LAYER,
	F_GROUP,
	F_POD_NAME,
	F_POD_NAMESPACE,
	F_POD_NODE,
	F_POD_SERVICE_NAME,
	F_POD_LABEL_VALUE,
	F_POD_OWNER_NAME,
	F_POD_HAS_CONTAINER,
	F_POD_LABEL_SELECTOR,
	F_POD_HAS_SERVICE_NAME,
	F_POD_HAS_OWNER_NAME,
	F_CONTAINER_NAME,
	F_CONTAINER_ID,
	F_CONTAINER_ENV_VALUE,
};

#define IN_VM (1u << TMPL_VM)
#define IN_ENTITY (1u << TMPL_K8S_ENTITY)
#define IN_FILTER (1u << TMPL_K8S_FILTER)

/* The methods: upstream's TemplateRover, TemplateProcess, the finder's, TemplatePod (with
 * TemplatePodJudgment's in filters) and TemplateContainer. */
/* clang-format off */
static const struct field_def {
	const char *name;
	enum field_id id;
	unsigned in; /* IN_*: the kinds that may use it */
	enum vtype ret;
	int nparams;
	enum vtype params[2];
} field_defs[] = {
	{ ".Rover.InstanceID", F_INSTANCE_ID, IN_VM | IN_ENTITY, V_STR, 0, { 0 } },
	{ ".Rover.HostName", F_HOST_NAME, IN_VM | IN_ENTITY, V_STR, 0, { 0 } },
	{ ".Rover.HostIPV4", F_HOST_IPV4, IN_VM | IN_ENTITY, V_STR, 1, { V_STR } },
	{ ".Rover.HostIPV6", F_HOST_IPV6, IN_VM | IN_ENTITY, V_STR, 1, { V_STR } },
	{ ".Process.ExeFilePath", F_EXE_PATH, IN_VM | IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Process.ExeName", F_EXE_NAME, IN_VM | IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Process.CommandLine", F_CMDLINE, IN_VM | IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Process.Pid", F_PID, IN_VM | IN_ENTITY | IN_FILTER, V_INT, 0, { 0 } },
	{ ".Process.WorkDir", F_WORKDIR, IN_VM | IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Process.ExeNameInCommandLine", F_EXE_NAME_IN_CMDLINE, IN_VM | IN_ENTITY | IN_FILTER,
	  V_STR, 0, { 0 } },
	{ ".Finder.Layer", F_LAYER, IN_VM, V_STR, 0, { 0 } },
	{ ".Finder.RegexMatchGroup", F_GROUP, IN_VM, V_STR, 1, { V_INT } },
	{ ".Pod.Name", F_POD_NAME, IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Pod.Namespace", F_POD_NAMESPACE, IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Pod.Node", F_POD_NODE, IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Pod.ServiceName", F_POD_SERVICE_NAME, IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Pod.LabelValue", F_POD_LABEL_VALUE, IN_ENTITY | IN_FILTER, V_STR, 2, { V_STR, V_STR } },
	{ ".Pod.OwnerName", F_POD_OWNER_NAME, IN_ENTITY | IN_FILTER, V_STR, 1, { V_STR } },
	{ ".Pod.HasContainer", F_POD_HAS_CONTAINER, IN_FILTER, V_BOOL, 1, { V_STR } },
	{ ".Pod.LabelSelector", F_POD_LABEL_SELECTOR, IN_FILTER, V_BOOL, 1, { V_STR } },
	{ ".Pod.HasServiceName", F_POD_HAS_SERVICE_NAME, IN_FILTER, V_BOOL, 0, { 0 } },
	{ ".Pod.HasOwnerName", F_POD_HAS_OWNER_NAME, IN_FILTER, V_BOOL, 1, { V_STR } },
	{ ".Container.Name", F_CONTAINER_NAME, IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Container.ID", F_CONTAINER_ID, IN_ENTITY | IN_FILTER, V_STR, 0, { 0 } },
	{ ".Container.EnvValue", F_CONTAINER_ENV_VALUE, IN_ENTITY | IN_FILTER, V_STR, 1,
	  { V_STR } },
};
/* clang-format on */

#define NFIELDS (sizeof(field_defs) / sizeof(field_defs[0]))

enum func_id {
	FN_EQ,
	FN_NE,
	FN_LT,
	FN_LE,
	FN_GT,
	FN_GE,
	FN_AND,
	FN_OR,
	FN_NOT,
	FN_LEN,
	FN_PRINT,
	FN_PRINTLN,
	FN_PRINTF,
	FN_EQUALS_OR_DEFAULT,
};

/* Go's builtins with their arities, and upstream's one custom function. */
/* clang-format off */
static const struct func_def {
	const char *name;
	enum func_id id;
	int min, max; /* arguments; max -1: any number */
} func_defs[] = {
	{ "eq", FN_EQ, 2, -1 },
	{ "ne", FN_NE, 2, 2 },
	{ "lt", FN_LT, 2, 2 },
	{ "le", FN_LE, 2, 2 },
	{ "gt", FN_GT, 2, 2 },
	{ "ge", FN_GE, 2, 2 },
	{ "and", FN_AND, 1, -1 },
	{ "or", FN_OR, 1, -1 },
	{ "not", FN_NOT, 1, 1 },
	{ "len", FN_LEN, 1, 1 },
	{ "print", FN_PRINT, 0, -1 },
	{ "println", FN_PRINTLN, 0, -1 },
	{ "printf", FN_PRINTF, 1, -1 },
	{ "equalsOrDefault", FN_EQUALS_OR_DEFAULT, 3, 3 },
};
/* clang-format on */

#define NFUNCS (sizeof(func_defs) / sizeof(func_defs[0]))

/* Go's, known and refused, so the message says so rather than "unknown". */
static const char *const unsupported_funcs[] = {
	"index", "slice", "call", "html", "js", "urlquery"
};
static const char *const unsupported_keywords[] = { "if",    "else",	"end",	    "range",
						    "with",  "define",	"template", "block",
						    "break", "continue" };

enum expr_type {
	E_STR,
	E_INT,
	E_BOOL,
	E_FIELD,
	E_FUNC,
	E_PIPE,
};

struct pipe;

struct expr {
	enum expr_type type;
	size_t pos;
	const char *s; /* E_STR, NUL-terminated */
	size_t len;
	long long i; /* E_INT, E_BOOL */
	int id;	     /* E_FIELD: index in field_defs; E_FUNC: in func_defs */
	struct pipe *pipe;
};

struct cmd {
	struct expr *ops;
	int nops;
	size_t pos;
};

struct pipe {
	struct cmd *cmds;
	int ncmds;
};

struct part {
	const char *text; /* when pipe is NULL */
	size_t len;
	struct pipe *pipe;
};

struct blk {
	struct blk *next;
	size_t pad; /* keeps the data after it 16-byte aligned */
};

struct tmpl {
	char *source;
	enum tmpl_kind kind;
	struct part *parts;
	size_t nparts;
	struct blk *mem;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_alnum_(char c)
{
	return is_alpha_(c) || (c >= '0' && c <= '9');
}

static void *t_alloc(struct tmpl *t, size_t n)
{
	struct blk *b = calloc(1, sizeof(*b) + n);

	if (!b)
		return NULL;
	b->next = t->mem;
	t->mem = b;
	return b + 1;
}

void tmpl__free(struct tmpl *t)
{
	if (!t)
		return;
	while (t->mem) {
		struct blk *b = t->mem;

		t->mem = b->next;
		free(b);
	}
	free(t->source);
	free(t);
}

const char *tmpl__source(const struct tmpl *t)
{
	return t ? t->source : NULL;
}

/* ---- Compiling ---- */

struct parser {
	struct tmpl *t;
	const char *src; /* what is parsed: the source, or "{{" source "}}" for a filter */
	size_t end;	 /* of the action being parsed */
	size_t bias;	 /* subtracted from positions in messages */
	int depth;
	char *err;
	size_t errlen;
};

static size_t at(const struct parser *P, size_t i)
{
	return i >= P->bias ? i - P->bias : 0;
}

static int perr(struct parser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int perr(struct parser *P, const char *fmt, ...)
{
	va_list ap;

	if (P->err && P->errlen) {
		va_start(ap, fmt);
		vsnprintf(P->err, P->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *kind_name(enum tmpl_kind k)
{
	switch (k) {
	case TMPL_VM:
		return "a process finder template";
	case TMPL_K8S_ENTITY:
		return "a kubernetes analyzer name";
	case TMPL_K8S_FILTER:
		return "a kubernetes analyzer filter";
	}
	return "?";
}

static void put_utf8(char *out, size_t *len, uint32_t cp)
{
	if (cp < 0x80) {
		out[(*len)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*len)++] = (char)(0xc0 | (cp >> 6));
		out[(*len)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*len)++] = (char)(0xe0 | (cp >> 12));
		out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*len)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*len)++] = (char)(0xf0 | (cp >> 18));
		out[(*len)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*len)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A quoted string starting at src[*pos] ('"' or '`'), up to the end of the action. The
 * unescaped value into e (allocated in the template, NUL-terminated), *pos past the closing
 * quote. An escaped string is never longer than its source, so one buffer of that size holds
 * it (4-byte UTF-8 comes from a 10-byte \U escape, 3-byte from a 6-byte \u).
 */
static int parse_string(struct parser *P, size_t *pos, struct expr *e)
{
	const char *src = P->src;
	size_t start = *pos, i = start + 1, len = 0, end = P->end;
	char quote = src[start];
	char *out = t_alloc(P->t, end - start + 1);

	if (!out)
		return -ENOMEM;
	for (;;) {
		char c;

		if (i >= end || (src[i] == '\n' && quote == '"'))
			return perr(P, "unterminated string at %zu", at(P, start));
		c = src[i++];
		if (c == quote)
			break;
		if (c == '\0')
			return perr(P, "NUL in string at %zu", at(P, i - 1));
		if (quote == '`' || c != '\\') {
			out[len++] = c;
			continue;
		}
		if (i >= end)
			return perr(P, "unterminated string at %zu", at(P, start));
		c = src[i++];
		uint32_t cp = 0;
		int digits = 0, base = 16;

		switch (c) {
		/* clang-format off */
		case 'a': out[len++] = '\a'; continue;
		case 'b': out[len++] = '\b'; continue;
		case 'f': out[len++] = '\f'; continue;
		case 'n': out[len++] = '\n'; continue;
		case 'r': out[len++] = '\r'; continue;
		case 't': out[len++] = '\t'; continue;
		case 'v': out[len++] = '\v'; continue;
		case '\\': out[len++] = '\\'; continue;
		case '"': out[len++] = '"'; continue;
		case 'x': digits = 2; break;
		case 'u': digits = 4; break;
		case 'U': digits = 8; break;
		/* clang-format on */
		default:
			if (c >= '0' && c <= '7') {
				digits = 3;
				base = 8;
				i--;
				break;
			}
			return perr(P, "unknown escape \\%c at %zu", c, at(P, i - 2));
		}
		for (int d = 0; d < digits; d++) {
			int v = i < end ? hexval(src[i]) : -1;

			if (v < 0 || v >= base)
				return perr(P, "bad escape at %zu", at(P, i));
			cp = cp * base + (uint32_t)v;
			i++;
		}
		if (cp == 0 || (base == 8 && cp > 0xff) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp < 0xe000 && c != 'x' && base != 8))
			return perr(P, "bad escape value at %zu", at(P, i));
		if (c == 'x' || base == 8)
			out[len++] = (char)cp; /* a byte, as in Go */
		else
			put_utf8(out, &len, cp);
	}
	out[len] = '\0';
	e->type = E_STR;
	e->s = out;
	e->len = len;
	*pos = i;
	return 0;
}

/* An integer as Go's strconv.ParseInt(s, 0, 64) reads it (0x, 0o, 0b, a leading 0 for octal),
 * without underscores. */
static int parse_number(struct parser *P, size_t *pos, struct expr *e)
{
	const char *src = P->src;
	size_t start = *pos, i = start, d;
	unsigned long long x = 0, limit;
	int neg = 0, base = 10;

	if (src[i] == '+' || src[i] == '-')
		neg = src[i++] == '-';
	/* Go's lexer takes alphanumerics, '.', '_' and an exponent's sign as one number. */
	for (d = i; d < P->end; d++) {
		char c = src[d];

		if (!is_alnum_(c) && c != '.' &&
		    !((c == '+' || c == '-') && d > i && strchr("eEpP", src[d - 1])))
			break;
	}
	if (d - i >= 2 && src[i] == '0' && (src[i + 1] == 'x' || src[i + 1] == 'X'))
		base = 16;
	for (size_t k = i; k < d; k++)
		if (src[k] == '.' || src[k] == 'i' || src[k] == 'p' || src[k] == 'P' ||
		    (base == 10 && (src[k] == 'e' || src[k] == 'E')))
			return perr(P,
				    "floating-point and complex numbers are not supported at %zu",
				    at(P, start));
	if (src[i] == '0' && i + 1 < d) {
		char p = src[i + 1];

		if (p == 'x' || p == 'X')
			i += 2;
		else if (p == 'o' || p == 'O')
			base = 8, i += 2;
		else if (p == 'b' || p == 'B')
			base = 2, i += 2;
		else
			base = 8, i += 1;
	}
	if (i >= d)
		return perr(P, "bad number syntax at %zu", at(P, start));
	limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; i < d; i++) {
		int v = hexval(src[i]);

		if (v < 0 || v >= base)
			return perr(P, "bad number syntax at %zu", at(P, start));
		if (x > (limit - (unsigned)v) / (unsigned)base)
			return perr(P, "number out of range at %zu", at(P, start));
		x = x * (unsigned)base + (unsigned)v;
	}
	e->type = E_INT;
	e->i = neg ? (long long)(0 - x) : (long long)x;
	*pos = d;
	return 0;
}

static int parse_pipe(struct parser *P, size_t *pos, int in_paren, struct pipe **ret);

static int parse_operand(struct parser *P, size_t *pos, struct expr *e)
{
	const char *src = P->src;
	size_t i = *pos, end = P->end;
	char c = src[i];
	int r;

	memset(e, 0, sizeof(*e));
	e->pos = i;
	if (c == '"' || c == '`') {
		r = parse_string(P, &i, e);
	} else if ((c >= '0' && c <= '9') || c == '+' || c == '-' ||
		   (c == '.' && i + 1 < end && src[i + 1] >= '0' && src[i + 1] <= '9')) {
		r = parse_number(P, &i, e);
	} else if (c == '(') {
		if (P->depth >= TMPL_MAX_DEPTH)
			return perr(P, "parentheses nested deeper than %d at %zu", TMPL_MAX_DEPTH,
				    at(P, i));
		P->depth++;
		i++;
		r = parse_pipe(P, &i, 1, &e->pipe);
		P->depth--;
		e->type = E_PIPE;
		if (!r && i < end && src[i] == '.')
			return perr(P, "fields of a parenthesised value are not supported at %zu",
				    at(P, i));
	} else if (c == '.') {
		size_t f;

		if (i + 1 >= end || !is_alnum_(src[i + 1]))
			return perr(P, "the dot alone (the whole context) is not supported at %zu",
				    at(P, i));
		while (i < end && src[i] == '.' && i + 1 < end && is_alnum_(src[i + 1])) {
			i++;
			while (i < end && is_alnum_(src[i]))
				i++;
		}
		for (f = 0; f < NFIELDS; f++)
			if (strlen(field_defs[f].name) == i - e->pos &&
			    !memcmp(field_defs[f].name, src + e->pos, i - e->pos))
				break;
		if (f == NFIELDS) {
			int n = i - e->pos > 64 ? 64 : (int)(i - e->pos);

			return perr(P, "unknown field %.*s at %zu", n, src + e->pos, at(P, e->pos));
		}
		if (!(field_defs[f].in & (1u << P->t->kind)))
			return perr(P, "field %s at %zu is not available in %s", field_defs[f].name,
				    at(P, e->pos), kind_name(P->t->kind));
		e->type = E_FIELD;
		e->id = (int)f;
		r = 0;
	} else if (is_alpha_(c)) {
		size_t n, f;

		while (i < end && is_alnum_(src[i]))
			i++;
		n = i - e->pos;
		if ((n == 4 && !memcmp(src + e->pos, "true", 4)) ||
		    (n == 5 && !memcmp(src + e->pos, "false", 5))) {
			e->type = E_BOOL;
			e->i = n == 4;
			*pos = i;
			return 0;
		}
		if (n == 3 && !memcmp(src + e->pos, "nil", 3))
			return perr(P, "nil is not supported at %zu", at(P, e->pos));
		for (f = 0; f < sizeof(unsupported_keywords) / sizeof(unsupported_keywords[0]); f++)
			if (strlen(unsupported_keywords[f]) == n &&
			    !memcmp(unsupported_keywords[f], src + e->pos, n))
				return perr(P, "'%s' actions are not supported at %zu",
					    unsupported_keywords[f], at(P, e->pos));
		for (f = 0; f < sizeof(unsupported_funcs) / sizeof(unsupported_funcs[0]); f++)
			if (strlen(unsupported_funcs[f]) == n &&
			    !memcmp(unsupported_funcs[f], src + e->pos, n))
				return perr(P, "function %s is not supported at %zu",
					    unsupported_funcs[f], at(P, e->pos));
		for (f = 0; f < NFUNCS; f++)
			if (strlen(func_defs[f].name) == n &&
			    !memcmp(func_defs[f].name, src + e->pos, n))
				break;
		if (f == NFUNCS)
			return perr(P, "unknown function %.*s at %zu", n > 64 ? 64 : (int)n,
				    src + e->pos, at(P, e->pos));
		e->type = E_FUNC;
		e->id = (int)f;
		r = 0;
	} else if (c == '$') {
		return perr(P, "variables are not supported at %zu", at(P, i));
	} else if (c == '\'') {
		return perr(P, "character constants are not supported at %zu", at(P, i));
	} else {
		return perr(P, "unexpected byte 0x%02x at %zu", (unsigned char)c, at(P, i));
	}
	if (!r)
		*pos = i;
	return r;
}

static const char *expr_name(const struct expr *e)
{
	return e->type == E_FIELD  ? field_defs[e->id].name
	       : e->type == E_FUNC ? func_defs[e->id].name
				   : "?";
}

static enum vtype literal_type(const struct expr *e)
{
	switch (e->type) {
	case E_STR:
		return V_STR;
	case E_INT:
		return V_INT;
	case E_BOOL:
		return V_BOOL;
	default:
		return V_ANY;
	}
}

/* printf's format, when it is a literal: every verb one that is supported. */
static int check_format(struct parser *P, const struct expr *e)
{
	for (size_t i = 0; i < e->len; i++) {
		if (e->s[i] != '%')
			continue;
		i++;
		while (i < e->len && (e->s[i] == '-' || e->s[i] == '0'))
			i++;
		while (i < e->len && e->s[i] >= '0' && e->s[i] <= '9')
			i++;
		if (i < e->len && !strchr("vsdt%", e->s[i]))
			return perr(P, "printf verb or flag '%c' is not supported at %zu", e->s[i],
				    at(P, e->pos));
	}
	return 0;
}

/* Arity, types of literal arguments, and what may not take arguments. piped: the command
 * gets the previous command's value as its last argument. */
static int check_cmd(struct parser *P, const struct cmd *c, int piped)
{
	const struct expr *f = &c->ops[0];
	int nargs = c->nops - 1 + piped;

	switch (f->type) {
	case E_FUNC: {
		const struct func_def *d = &func_defs[f->id];

		if (nargs < d->min || (d->max >= 0 && nargs > d->max))
			return perr(P, "wrong number of args for %s at %zu: want %s%d got %d",
				    d->name, at(P, f->pos), d->max < 0 ? "at least " : "", d->min,
				    nargs);
		if (d->id == FN_PRINTF && c->nops > 1) {
			if (c->ops[1].type == E_INT || c->ops[1].type == E_BOOL)
				return perr(P, "printf format at %zu is not a string",
					    at(P, c->ops[1].pos));
			if (c->ops[1].type == E_STR && check_format(P, &c->ops[1]))
				return -EINVAL;
		}
		for (int k = 1; k < c->nops; k++) {
			enum vtype lt = literal_type(&c->ops[k]);

			if (lt == V_ANY)
				continue;
			if ((d->id == FN_EQUALS_OR_DEFAULT && lt != V_STR) ||
			    (d->id == FN_LEN && lt != V_STR))
				return perr(P,
					    "wrong type for argument %d of %s at %zu: expected "
					    "string, got %s",
					    k, d->name, at(P, c->ops[k].pos), vtype_names[lt]);
		}
		break;
	}
	case E_FIELD: {
		const struct field_def *d = &field_defs[f->id];

		if (nargs != d->nparams)
			return perr(P, "wrong number of args for %s at %zu: want %d got %d",
				    d->name, at(P, f->pos), d->nparams, nargs);
		for (int k = 1; k < c->nops; k++) {
			enum vtype lt = literal_type(&c->ops[k]);

			if (lt != V_ANY && lt != d->params[k - 1])
				return perr(P,
					    "wrong type for argument %d of %s at %zu: expected "
					    "%s, got %s",
					    k, d->name, at(P, c->ops[k].pos),
					    vtype_names[d->params[k - 1]], vtype_names[lt]);
		}
		if (d->id == F_GROUP && c->nops > 1 && c->ops[1].type == E_INT &&
		    (c->ops[1].i < 0 || c->ops[1].i >= TMPL_MAX_GROUPS))
			return perr(P, "group number at %zu is not in [0, %d]",
				    at(P, c->ops[1].pos), TMPL_MAX_GROUPS - 1);
		break;
	}
	default:
		if (c->nops > 1 || piped)
			return perr(P, "can't give argument to non-function at %zu", at(P, f->pos));
		break;
	}
	/* A name used as an argument is called without any. */
	for (int k = 1; k < c->nops; k++) {
		const struct expr *a = &c->ops[k];

		if ((a->type == E_FIELD && field_defs[a->id].nparams) ||
		    (a->type == E_FUNC && func_defs[a->id].min))
			return perr(P, "wrong number of args for %s at %zu: want %d got 0",
				    expr_name(a), at(P, a->pos),
				    a->type == E_FIELD ? field_defs[a->id].nparams
						       : func_defs[a->id].min);
	}
	return 0;
}

static int parse_cmd(struct parser *P, size_t *pos, struct cmd *ret)
{
	struct expr ops[TMPL_MAX_OPERANDS];
	const char *src = P->src;
	size_t i = *pos;
	int n = 0, r;

	while (i < P->end && is_space(src[i]))
		i++;
	ret->pos = i;
	for (;;) {
		while (i < P->end && is_space(src[i]))
			i++;
		if (i >= P->end || src[i] == '|' || src[i] == ')')
			break;
		if (n == TMPL_MAX_OPERANDS)
			return perr(P, "more than %d operands in a command at %zu",
				    TMPL_MAX_OPERANDS, at(P, ret->pos));
		r = parse_operand(P, &i, &ops[n]);
		if (r)
			return r;
		n++;
		if (i < P->end && !is_space(src[i]) && src[i] != '|' && src[i] != ')')
			return perr(P, "unexpected byte 0x%02x ('%c') after an operand at %zu",
				    (unsigned char)src[i],
				    src[i] > 0x20 && src[i] < 0x7f ? src[i] : '?', at(P, i));
	}
	if (!n)
		return perr(P, "missing value for command at %zu", at(P, ret->pos));
	ret->ops = t_alloc(P->t, n * sizeof(*ops));
	if (!ret->ops)
		return -ENOMEM;
	memcpy(ret->ops, ops, n * sizeof(*ops));
	ret->nops = n;
	*pos = i;
	return 0;
}

static int parse_pipe(struct parser *P, size_t *pos, int in_paren, struct pipe **ret)
{
	struct cmd cmds[TMPL_MAX_COMMANDS];
	size_t i = *pos, open = i - 1;
	struct pipe *p;
	int n = 0, r;

	for (;;) {
		if (n == TMPL_MAX_COMMANDS)
			return perr(P, "more than %d commands in a pipeline at %zu",
				    TMPL_MAX_COMMANDS, at(P, i));
		r = parse_cmd(P, &i, &cmds[n]);
		if (r)
			return r;
		r = check_cmd(P, &cmds[n], n > 0);
		if (r)
			return r;
		n++;
		if (i < P->end && P->src[i] == '|') {
			i++;
			continue;
		}
		break;
	}
	if (in_paren) {
		if (i >= P->end)
			return perr(P, "unclosed left paren at %zu", at(P, open));
		i++; /* parse_cmd stops only at the end, a '|' or a ')' */
	} else if (i < P->end) {
		return perr(P, "unexpected ')' at %zu", at(P, i));
	}
	p = t_alloc(P->t, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cmds = t_alloc(P->t, n * sizeof(cmds[0]));
	if (!p->cmds)
		return -ENOMEM;
	memcpy(p->cmds, cmds, n * sizeof(cmds[0]));
	p->ncmds = n;
	*ret = p;
	*pos = i;
	return 0;
}

/* The action between "{{" and "}}" (trim marks already removed): src[start, end). */
static int parse_action(struct parser *P, size_t start, size_t end, struct pipe **ret_pipe)
{
	const char *src = P->src;
	size_t i = start;

	*ret_pipe = NULL;
	if (end - i >= 2 && src[i] == '/' && src[i + 1] == '*') {
		size_t e = end;

		while (e > i && is_space(src[e - 1]))
			e--;
		if (e - i < 4 || src[e - 2] != '*' || src[e - 1] != '/')
			return perr(P, "unclosed comment at %zu", at(P, i));
		return 0; /* renders nothing */
	}
	P->end = end;
	P->depth = 0;
	return parse_pipe(P, &i, 0, ret_pipe);
}

/* Where the closing "}}" of the action starting at src[from] is: outside any string argument
 * or comment. */
static const char *find_close(const char *src, size_t from)
{
	const char *p = src + from;
	char quote = 0;

	if (p[0] == '/' && p[1] == '*') {
		p = strstr(p + 2, "*/");
		if (!p)
			return NULL;
		return strstr(p + 2, "}}");
	}
	for (; *p; p++) {
		if (quote) {
			if (*p == '\\' && quote == '"' && p[1])
				p++;
			else if (*p == quote)
				quote = 0;
		} else if (*p == '"' || *p == '`') {
			quote = *p;
		} else if (p[0] == '}' && p[1] == '}') {
			return p;
		}
	}
	return NULL;
}

static int add_text(struct tmpl *t, const char *s, size_t len)
{
	struct part *p;
	char *text;

	if (!len)
		return 0;
	text = t_alloc(t, len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, s, len);
	p = &t->parts[t->nparts++];
	p->text = text;
	p->len = len;
	return 0;
}

static struct tmpl *compile(const char *src, enum tmpl_kind kind, int filter, char *err,
			    size_t errlen)
{
	struct parser P = { .err = err, .errlen = errlen };
	size_t srclen, textlen, maxparts, pos = 0;
	char *wrapped = NULL;
	const char *text;
	struct tmpl *t;
	int r = -EINVAL;

	if (!src || (unsigned)kind > TMPL_K8S_FILTER) {
		set_err(err, errlen, "no template");
		errno = EINVAL;
		return NULL;
	}
	srclen = strnlen(src, TMPL_MAX_SOURCE + 1);
	if (srclen > TMPL_MAX_SOURCE) {
		set_err(err, errlen, "template longer than %d bytes", TMPL_MAX_SOURCE);
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->kind = kind;
	t->source = strdup(src);
	if (!t->source) {
		r = -ENOMEM;
		goto fail;
	}
	text = src;
	textlen = srclen;
	if (filter) {
		wrapped = malloc(srclen + 5);
		if (!wrapped) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(wrapped, "{{", 2);
		memcpy(wrapped + 2, src, srclen);
		memcpy(wrapped + 2 + srclen, "}}", 3);
		text = wrapped;
		textlen = srclen + 4;
		P.bias = 2;
	}
	P.t = t;
	P.src = text;
	/* Each action takes at least 3 bytes ("{{x"), each text part sits between two actions. */
	maxparts = 2 * (textlen / 3) + 2;
	t->parts = t_alloc(t, maxparts * sizeof(t->parts[0]));
	if (!t->parts) {
		r = -ENOMEM;
		goto fail;
	}
	while (pos < textlen) {
		const char *open = strstr(text + pos, "{{"), *close;
		size_t text_end, a_start, a_end, next;
		struct pipe *pipe;

		if (!open) {
			r = add_text(t, text + pos, textlen - pos);
			if (r)
				goto fail;
			break;
		}
		text_end = (size_t)(open - text);
		a_start = text_end + 2;
		if (text[a_start] == '-' && is_space(text[a_start + 1])) {
			a_start += 2;
			while (text_end > pos && is_space(text[text_end - 1]))
				text_end--;
		}
		r = add_text(t, text + pos, text_end - pos);
		if (r)
			goto fail;
		close = find_close(text, a_start);
		if (!close) {
			set_err(err, errlen, "unclosed action at %zu",
				at(&P, (size_t)(open - text)));
			r = -EINVAL;
			goto fail;
		}
		a_end = (size_t)(close - text);
		next = a_end + 2;
		if (a_end >= a_start + 2 && text[a_end - 1] == '-' && is_space(text[a_end - 2])) {
			a_end -= 2;
			while (next < textlen && is_space(text[next]))
				next++;
		}
		r = parse_action(&P, a_start, a_end, &pipe);
		if (r)
			goto fail;
		if (pipe)
			t->parts[t->nparts++].pipe = pipe;
		pos = next;
	}
	free(wrapped);
	return t;
fail:
	if (r == -ENOMEM)
		set_err(err, errlen, "out of memory");
	free(wrapped);
	tmpl__free(t);
	errno = -r;
	return NULL;
}

struct tmpl *tmpl__compile_as(const char *src, enum tmpl_kind kind, char *err, size_t errlen)
{
	return compile(src, kind, 0, err, errlen);
}

struct tmpl *tmpl__compile(const char *src, char *err, size_t errlen)
{
	return compile(src, TMPL_VM, 0, err, errlen);
}

struct tmpl *tmpl__compile_filter(const char *src, char *err, size_t errlen)
{
	return compile(src, TMPL_K8S_FILTER, 1, err, errlen);
}

/* ---- Rendering ---- */

struct val {
	enum vtype t;
	const char *s; /* V_STR: NUL-terminated, len bytes */
	size_t len;
	long long i; /* V_INT; V_BOOL 0 or 1 */
	char *owned; /* what s points into when the value was computed */
};

struct rt {
	const struct tmpl_ctx *ctx;
	char *err;
	size_t errlen;
};

static int rerr(struct rt *R, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int rerr(struct rt *R, int r, const char *fmt, ...)
{
	va_list ap;

	if (R->err && R->errlen) {
		va_start(ap, fmt);
		vsnprintf(R->err, R->errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static struct val v_str(const char *s)
{
	return (struct val){ .t = V_STR, .s = s ? s : "", .len = s ? strlen(s) : 0 };
}

static struct val v_int(long long i)
{
	return (struct val){ .t = V_INT, .i = i };
}

static struct val v_bool(int b)
{
	return (struct val){ .t = V_BOOL, .i = !!b };
}

static void v_free(struct val *v)
{
	free(v->owned);
	v->owned = NULL;
}

static int truth(const struct val *v)
{
	return v->t == V_STR ? v->len > 0 : v->i != 0;
}

struct out {
	char *buf;
	size_t len, cap; /* cap: bytes usable before the NUL */
};

static int out_put(struct out *o, const char *s, size_t n)
{
	if (n > o->cap - o->len)
		return -ENOSPC;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	return 0;
}

static int out_pad(struct out *o, char c, size_t n)
{
	if (n > o->cap - o->len)
		return -ENOSPC;
	memset(o->buf + o->len, c, n);
	o->len += n;
	return 0;
}

/* A value as %v prints it (v_free() not needed: never owned). */
static const char *v_text(const struct val *v, char num[24], size_t *ret_len)
{
	if (v->t == V_STR) {
		*ret_len = v->len;
		return v->s;
	}
	if (v->t == V_BOOL) {
		*ret_len = v->i ? 4 : 5;
		return v->i ? "true" : "false";
	}
	*ret_len = (size_t)snprintf(num, 24, "%lld", v->i);
	return num;
}

static int out_val(struct out *o, const struct val *v)
{
	char num[24];
	size_t n;
	const char *s = v_text(v, num, &n);

	return out_put(o, s, n);
}

/* Moves what o holds into *ret as an owned string. */
static void out_take(struct out *o, struct val *ret)
{
	o->buf[o->len] = '\0';
	*ret = (struct val){ .t = V_STR, .s = o->buf, .len = o->len, .owned = o->buf };
	o->buf = NULL;
}

static int out_new(struct out *o)
{
	o->buf = malloc(TMPL_MAX_OUTPUT + 1);
	o->len = 0;
	o->cap = TMPL_MAX_OUTPUT;
	return o->buf ? 0 : -ENOMEM;
}

/* Characters, as Go counts them for a width: bytes that do not continue a UTF-8 sequence. */
static size_t runes(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* One verb of printf for one argument: %v %s %d %t, with flags - and 0 and a width. */
static int fmt_one(struct out *o, char verb, int minus, int zero, size_t width, const struct val *v)
{
	char num[24];
	size_t n, w;
	const char *s;
	int r;

	if ((verb == 's' && v->t != V_STR) || (verb == 'd' && v->t != V_INT) ||
	    (verb == 't' && v->t != V_BOOL)) {
		char head[4] = { '%', '!', verb, '(' };

		s = v_text(v, num, &n);
		if ((r = out_put(o, head, 4)) ||
		    (r = out_put(o, vtype_names[v->t], strlen(vtype_names[v->t]))) ||
		    (r = out_put(o, "=", 1)) || (r = out_put(o, s, n)))
			return r;
		return out_put(o, ")", 1);
	}
	s = v_text(v, num, &n);
	w = runes(s, n);
	if (width <= w)
		return out_put(o, s, n);
	if (minus) {
		r = out_put(o, s, n);
		return r ? r : out_pad(o, ' ', width - w);
	}
	if (zero && v->t == V_INT && s[0] == '-') {
		/* The sign goes before the zeros, as in Go. */
		r = out_put(o, "-", 1);
		if (!r)
			r = out_pad(o, '0', width - w);
		return r ? r : out_put(o, s + 1, n - 1);
	}
	r = out_pad(o, zero ? '0' : ' ', width - w);
	return r ? r : out_put(o, s, n);
}

/* Go's fmt.Sprintf for the verbs of fmt_one(). */
static int do_printf(struct rt *R, struct out *o, const struct val *args, int n)
{
	const struct val *f = &args[0];
	int argi = 1, r = 0;

	if (f->t != V_STR)
		return rerr(R, -EINVAL,
			    "wrong type for argument 1 of printf: expected string, got %s",
			    vtype_names[f->t]);
	for (size_t i = 0; i < f->len && !r; i++) {
		int minus = 0, zero = 0;
		size_t width = 0;
		char verb;

		if (f->s[i] != '%') {
			r = out_put(o, f->s + i, 1);
			continue;
		}
		for (i++; i < f->len && (f->s[i] == '-' || f->s[i] == '0'); i++)
			*(f->s[i] == '-' ? &minus : &zero) = 1;
		for (; i < f->len && f->s[i] >= '0' && f->s[i] <= '9'; i++)
			if ((width = width * 10 + (size_t)(f->s[i] - '0')) > TMPL_MAX_OUTPUT)
				return rerr(R, -ENOSPC, "printf width longer than %d bytes",
					    TMPL_MAX_OUTPUT);
		if (i >= f->len) {
			r = out_put(o, "%!(NOVERB)", 10);
			break;
		}
		verb = f->s[i];
		if (verb == '%') {
			r = out_put(o, "%", 1);
		} else if (!strchr("vsdt", verb)) {
			return rerr(R, -EINVAL, "printf verb or flag '%c' is not supported", verb);
		} else if (argi >= n) {
			char miss[3] = { '%', '!', verb };

			r = out_put(o, miss, 3);
			if (!r)
				r = out_put(o, "(MISSING)", 9);
		} else {
			r = fmt_one(o, verb, minus, zero && !minus, width, &args[argi++]);
		}
	}
	if (!r && argi < n) {
		r = out_put(o, "%!(EXTRA ", 9);
		for (; argi < n && !r; argi++) {
			const char *tn = vtype_names[args[argi].t];

			r = out_put(o, tn, strlen(tn));
			if (!r)
				r = out_put(o, "=", 1);
			if (!r)
				r = out_val(o, &args[argi]);
			if (!r && argi + 1 < n)
				r = out_put(o, ", ", 2);
		}
		if (!r)
			r = out_put(o, ")", 1);
	}
	if (r == -ENOSPC)
		return rerr(R, r, "printf result longer than %d bytes", TMPL_MAX_OUTPUT);
	return r;
}

/* Go's fmt.Sprint (spaces between operands when neither is a string) or Sprintln (always,
 * and a newline). */
static int do_print(struct rt *R, struct out *o, const struct val *args, int n, int ln)
{
	int r = 0;

	for (int k = 0; k < n && !r; k++) {
		if (k && (ln || (args[k].t != V_STR && args[k - 1].t != V_STR)))
			r = out_put(o, " ", 1);
		if (!r)
			r = out_val(o, &args[k]);
	}
	if (!r && ln)
		r = out_put(o, "\n", 1);
	if (r == -ENOSPC)
		return rerr(R, r, "print result longer than %d bytes", TMPL_MAX_OUTPUT);
	return r;
}

/* Go's eq/lt on basic kinds: the same kind or an error; bools have no order. */
static int compare(struct rt *R, const char *fn, const struct val *a, const struct val *b,
		   int order, int *ret)
{
	if (a->t != b->t)
		return rerr(R, -EINVAL, "%s: incompatible types for comparison (%s and %s)", fn,
			    vtype_names[a->t], vtype_names[b->t]);
	if (order && a->t == V_BOOL)
		return rerr(R, -EINVAL, "%s: invalid type for comparison (bool)", fn);
	if (a->t == V_STR) {
		int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);

		*ret = c ? c : (a->len > b->len) - (a->len < b->len);
	} else {
		*ret = (a->i > b->i) - (a->i < b->i);
	}
	return 0;
}

static int need_type(struct rt *R, const char *fn, const struct val *args, int k, enum vtype want)
{
	if (args[k].t != want)
		return rerr(R, -EINVAL, "wrong type for argument %d of %s: expected %s, got %s",
			    k + 1, fn, vtype_names[want], vtype_names[args[k].t]);
	return 0;
}

/* Whether the comma-separated list holds name (exactly, or without regard to case). */
static int list_has(const char *list, size_t listlen, const char *name, int icase)
{
	size_t nlen = name ? strlen(name) : 0;

	for (size_t s = 0, e; s <= listlen; s = e + 1) {
		const char *comma = memchr(list + s, ',', listlen - s);

		e = comma ? (size_t)(comma - list) : listlen;
		if (e - s == nlen && !(icase ? strncasecmp(list + s, name ? name : "", nlen)
					     : memcmp(list + s, name ? name : "", nlen)))
			return 1;
	}
	return 0;
}

/* Upstream's TemplatePod.OwnerName: per listed kind, in order. NULL when none. */
static const char *owner_name(const struct tmpl_pod *pod, const struct val *kinds)
{
	const char *list = kinds->s;

	for (size_t s = 0, e; s <= kinds->len; s = e + 1) {
		const char *comma = memchr(list + s, ',', kinds->len - s);
		size_t n;

		e = comma ? (size_t)(comma - list) : kinds->len;
		n = e - s;
		if (n == 7 && !strncasecmp(list + s, "service", 7)) {
			if (pod->service_name && *pod->service_name)
				return pod->service_name;
			continue;
		}
		for (int k = 0; k < pod->nowners; k++) {
			const char *kind = pod->owners[k].key ? pod->owners[k].key : "";

			if (strlen(kind) == n && !strncasecmp(kind, list + s, n))
				return pod->owners[k].value ? pod->owners[k].value : "";
		}
	}
	return NULL;
}

/* Kubernetes' validation.IsQualifiedName name part and IsValidLabelValue: at most 63 of
 * [-_.A-Za-z0-9], alphanumeric at both ends (empty allowed for values). */
static int label_name_ok(const char *s, size_t n, int empty_ok)
{
	if (!n)
		return empty_ok;
	if (n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9');

		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
			return 0;
	}
	return 1;
}

/* IsDNS1123Subdomain: at most 253 of [-.a-z0-9], each dot-separated label alphanumeric at
 * both ends. */
static int dns_subdomain_ok(const char *s, size_t n)
{
	if (!n || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		int edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';

		if (!alnum && (edge || (c != '-' && c != '.')))
			return 0;
		if (c == '.' && (i == 0 || i == n - 1 || s[i + 1] == '.'))
			return 0;
	}
	return 1;
}

static int label_key_ok(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);

	if (!slash)
		return label_name_ok(s, n, 0);
	if (memchr(slash + 1, '/', n - (size_t)(slash + 1 - s)))
		return 0;
	return dns_subdomain_ok(s, (size_t)(slash - s)) &&
	       label_name_ok(slash + 1, n - (size_t)(slash + 1 - s), 0);
}

static void trim(const char **s, size_t *n)
{
	while (*n && is_space(**s))
		(*s)++, (*n)--;
	while (*n && is_space((*s)[*n - 1]))
		(*n)--;
}

static const char *pod_label(const struct tmpl_pod *pod, const char *key, size_t n)
{
	for (int k = 0; k < pod->nlabels; k++) {
		const char *lk = pod->labels[k].key ? pod->labels[k].key : "";

		if (strlen(lk) == n && !memcmp(lk, key, n))
			return pod->labels[k].value ? pod->labels[k].value : "";
	}
	return NULL;
}

/*
 * labels.ConvertSelectorToLabelsMap(sel).AsSelector().Matches(pod labels): "k=v" pairs split
 * at commas, each at its only '=', key and value trimmed and validated; a later pair for the
 * same key replaces an earlier one; every pair must hold (the label present with that value).
 * An empty selector matches every pod.
 */
static int label_selector(struct rt *R, const struct tmpl_pod *pod, const struct val *sel, int *ret)
{
	const char *s = sel->s;
	int match = 1;

	if (!sel->len) {
		*ret = 1;
		return 0;
	}
	/* Bounds the quadratic search for repeated keys below. */
	if (sel->len > TMPL_MAX_OUTPUT)
		return rerr(R, -EINVAL, "label selector longer than %d bytes", TMPL_MAX_OUTPUT);
	for (size_t b = 0, e; b <= sel->len; b = e + 1) {
		const char *comma = memchr(s + b, ',', sel->len - b), *eq, *k, *v;
		size_t kn, vn;

		e = comma ? (size_t)(comma - s) : sel->len;
		eq = memchr(s + b, '=', e - b);
		if (!eq || memchr(eq + 1, '=', e - (size_t)(eq + 1 - s)))
			return rerr(R, -EINVAL,
				    "bad label selector '%.64s': '%.*s' is not key=value", s,
				    (int)(e - b > 64 ? 64 : e - b), s + b);
		k = s + b;
		kn = (size_t)(eq - k);
		v = eq + 1;
		vn = e - (size_t)(v - s);
		trim(&k, &kn);
		trim(&v, &vn);
		if (!label_key_ok(k, kn) || !label_name_ok(v, vn, 1))
			return rerr(R, -EINVAL,
				    "bad label selector '%.64s': bad key or value in '%.*s'", s,
				    (int)(e - b > 64 ? 64 : e - b), s + b);
		if (!match)
			continue; /* the rest is still validated, as Kubernetes does first */
		/* Only the last pair of a key counts, as in the map it is read into. */
		int later = 0;

		for (size_t b2 = e + 1, e2; b2 <= sel->len && !later; b2 = e2 + 1) {
			const char *c2 = memchr(s + b2, ',', sel->len - b2), *eq2, *k2;
			size_t kn2;

			e2 = c2 ? (size_t)(c2 - s) : sel->len;
			eq2 = memchr(s + b2, '=', e2 - b2);
			if (!eq2)
				continue;
			k2 = s + b2;
			kn2 = (size_t)(eq2 - k2);
			trim(&k2, &kn2);
			later = kn2 == kn && !memcmp(k2, k, kn);
		}
		if (later)
			continue;
		const char *have = pod_label(pod, k, kn);

		match = have && strlen(have) == vn && !memcmp(have, v, vn);
	}
	*ret = match;
	return 0;
}

static int need_pod(struct rt *R, const char *name)
{
	if (!R->ctx->pod)
		return rerr(R, -EINVAL, "%s: no pod (not a kubernetes process)", name);
	return 0;
}

static int need_container(struct rt *R, const char *name)
{
	if (!R->ctx->container)
		return rerr(R, -EINVAL, "%s: no container (not a kubernetes process)", name);
	return 0;
}

/* Calls a method with its evaluated arguments (consumed). */
static int call_field(struct rt *R, const struct expr *e, struct val *args, int n, struct val *ret)
{
	const struct field_def *d = &field_defs[e->id];
	const struct tmpl_ctx *ctx = R->ctx;
	const struct tmpl_pod *pod = ctx->pod;
	const struct tmpl_container *co = ctx->container;
	int r = 0;

	/* Arity is checked at compile time; the types of computed arguments only now. */
	for (int k = 0; k < n && !r; k++)
		r = need_type(R, d->name, args, k, d->params[k]);
	if (r)
		goto out;
	if (d->id >= F_POD_NAME && d->id <= F_POD_HAS_OWNER_NAME)
		r = need_pod(R, d->name);
	else if (d->id >= F_CONTAINER_NAME)
		r = need_container(R, d->name);
	if (r)
		goto out;
	switch (d->id) {
	case F_INSTANCE_ID:
		*ret = v_str(ctx->instance_id);
		break;
	case F_HOST_NAME:
		*ret = v_str(ctx->host_name);
		break;
	case F_EXE_PATH:
		*ret = v_str(ctx->exe_path);
		break;
	case F_EXE_NAME:
		*ret = v_str(ctx->exe_name);
		break;
	case F_CMDLINE:
		*ret = v_str(ctx->cmdline);
		break;
	case F_PID:
		*ret = v_int(ctx->pid);
		break;
	case F_WORKDIR:
		*ret = v_str(ctx->workdir);
		break;
	case F_EXE_NAME_IN_CMDLINE:
		*ret = v_str(ctx->exe_name_in_cmdline);
		break;
	case F_LAYER:
		*ret = v_str(ctx->layer);
		break;
	case F_GROUP:
		if (args[0].i < 0 || args[0].i >= ctx->ngroups || ctx->ngroups > TMPL_MAX_GROUPS) {
			r = rerr(R, -ENOENT, "no regex group %lld (the regex has %d)", args[0].i,
				 ctx->ngroups > 0 ? ctx->ngroups - 1 : 0);
			break;
		}
		*ret = v_str(ctx->groups[args[0].i]);
		break;
	case F_HOST_IPV4:
	case F_HOST_IPV6: {
		int v6 = d->id == F_HOST_IPV6;
		char ip[64];
		char *copy;

		r = ctx->host_ip ? ctx->host_ip(ctx->host_ip_arg, args[0].s, v6, ip, sizeof(ip))
				 : -ENOENT;
		if (r) {
			r = r < 0 ? r : -r;
			rerr(R, r, "interface '%s' has no IPv%c address: %s", args[0].s,
			     v6 ? '6' : '4', strerror(-r));
			break;
		}
		ip[sizeof(ip) - 1] = '\0';
		copy = strdup(ip);
		if (!copy) {
			r = rerr(R, -ENOMEM, "out of memory");
			break;
		}
		*ret = v_str(copy);
		ret->owned = copy;
		break;
	}
	case F_POD_NAME:
		*ret = v_str(pod->name);
		break;
	case F_POD_NAMESPACE:
		*ret = v_str(pod->ns);
		break;
	case F_POD_NODE:
		*ret = v_str(pod->node);
		break;
	case F_POD_SERVICE_NAME:
		*ret = v_str(pod->service_name);
		break;
	case F_POD_LABEL_VALUE: {
		const char *list = args[0].s;

		for (size_t s = 0, e2; s <= args[0].len; s = e2 + 1) {
			const char *comma = memchr(list + s, ',', args[0].len - s);
			const char *v;

			e2 = comma ? (size_t)(comma - list) : args[0].len;
			v = pod_label(pod, list + s, e2 - s);
			if (v && *v) {
				*ret = v_str(v);
				goto out;
			}
		}
		*ret = args[1];
		args[1].owned = NULL;
		break;
	}
	case F_POD_OWNER_NAME: {
		const char *o = owner_name(pod, &args[0]);

		if (!o) {
			r = rerr(R, -ENOENT, "pod %s/%s has no owner of kind '%.64s'",
				 pod->ns ? pod->ns : "", pod->name ? pod->name : "", args[0].s);
			break;
		}
		*ret = v_str(o);
		break;
	}
	case F_POD_HAS_CONTAINER: {
		int has = 0;

		for (int k = 0; k < pod->ncontainers && !has; k++)
			has = pod->containers[k] && !strcmp(pod->containers[k], args[0].s);
		*ret = v_bool(has);
		break;
	}
	case F_POD_LABEL_SELECTOR: {
		int m = 0;

		r = label_selector(R, pod, &args[0], &m);
		if (!r)
			*ret = v_bool(m);
		break;
	}
	case F_POD_HAS_SERVICE_NAME:
		*ret = v_bool(pod->service_name && *pod->service_name);
		break;
	case F_POD_HAS_OWNER_NAME: {
		const char *o = owner_name(pod, &args[0]);

		*ret = v_bool(o && *o);
		break;
	}
	case F_CONTAINER_NAME:
		*ret = v_str(co->name);
		break;
	case F_CONTAINER_ID:
		*ret = v_str(co->id);
		break;
	case F_CONTAINER_ENV_VALUE:
		for (int k = 0; k < co->nenv; k++) {
			if (co->env[k].key && list_has(args[0].s, args[0].len, co->env[k].key, 0)) {
				*ret = v_str(co->env[k].value);
				goto out;
			}
		}
		r = rerr(R, -ENOENT, "container %s has no environment variable of '%.64s'",
			 co->name ? co->name : "", args[0].s);
		break;
	}
out:
	for (int k = 0; k < n; k++)
		v_free(&args[k]);
	return r;
}

static int eval_pipe(struct rt *R, const struct pipe *p, struct val *ret);

static int eval_arg(struct rt *R, const struct expr *e, struct val *ret);

/* and/or: arguments evaluated one at a time, the deciding one returned. */
static int call_logic(struct rt *R, int is_and, const struct expr *ops, int nops, struct val *piped,
		      struct val *ret)
{
	int total = nops + (piped ? 1 : 0);

	for (int k = 0; k < total; k++) {
		struct val cur;
		int r;

		if (k < nops) {
			r = eval_arg(R, &ops[k], &cur);
			if (r) {
				if (piped)
					v_free(piped);
				return r;
			}
		} else {
			cur = *piped;
			piped = NULL;
		}
		if (k == total - 1 || truth(&cur) != is_and) {
			if (piped)
				v_free(piped);
			*ret = cur;
			return 0;
		}
		v_free(&cur);
	}
	return rerr(R, -EINVAL, "%s without arguments", is_and ? "and" : "or");
}

/* Calls a function: ops its operands, piped (consumed) the previous command's value. */
static int call_func(struct rt *R, const struct expr *f, const struct expr *ops, int nops,
		     struct val *piped, struct val *ret)
{
	const struct func_def *d = &func_defs[f->id];
	struct val args[TMPL_MAX_OPERANDS + 1];
	struct out o = { 0 };
	int n = 0, r = 0, c = 0;

	if (d->id == FN_AND || d->id == FN_OR)
		return call_logic(R, d->id == FN_AND, ops, nops, piped, ret);
	for (int k = 0; k < nops && !r; k++) {
		r = eval_arg(R, &ops[k], &args[n]);
		if (!r)
			n++;
	}
	if (piped) {
		if (r)
			v_free(piped);
		else
			args[n++] = *piped;
	}
	if (r)
		goto out;
	switch (d->id) {
	case FN_EQ: {
		int any = 0;

		for (int k = 1; k < n && !any && !r; k++) {
			r = compare(R, d->name, &args[0], &args[k], 0, &c);
			any = !r && c == 0;
		}
		if (!r)
			*ret = v_bool(any);
		break;
	}
	case FN_NE:
	case FN_LT:
	case FN_LE:
	case FN_GT:
	case FN_GE:
		r = compare(R, d->name, &args[0], &args[1], d->id != FN_NE, &c);
		if (!r)
			*ret = v_bool(d->id == FN_NE   ? c != 0
				      : d->id == FN_LT ? c < 0
				      : d->id == FN_LE ? c <= 0
				      : d->id == FN_GT ? c > 0
						       : c >= 0);
		break;
	case FN_NOT:
		*ret = v_bool(!truth(&args[0]));
		break;
	case FN_LEN:
		if (args[0].t != V_STR) {
			r = rerr(R, -EINVAL, "len of type %s", vtype_names[args[0].t]);
			break;
		}
		*ret = v_int((long long)args[0].len);
		break;
	case FN_PRINT:
	case FN_PRINTLN:
	case FN_PRINTF:
		r = out_new(&o);
		if (r) {
			rerr(R, r, "out of memory");
			break;
		}
		r = d->id == FN_PRINTF ? do_printf(R, &o, args, n)
				       : do_print(R, &o, args, n, d->id == FN_PRINTLN);
		if (!r)
			out_take(&o, ret);
		free(o.buf);
		break;
	case FN_EQUALS_OR_DEFAULT:
		for (int k = 0; k < 3 && !r; k++)
			r = need_type(R, d->name, args, k, V_STR);
		if (r)
			break;
		c = args[2].len == args[0].len && !memcmp(args[2].s, args[0].s, args[0].len);
		*ret = args[c ? 1 : 2];
		args[c ? 1 : 2].owned = NULL;
		break;
	case FN_AND:
	case FN_OR:
		break;
	}
out:
	for (int k = 0; k < n; k++)
		v_free(&args[k]);
	return r;
}

static int eval_arg(struct rt *R, const struct expr *e, struct val *ret)
{
	switch (e->type) {
	case E_STR:
		*ret = (struct val){ .t = V_STR, .s = e->s, .len = e->len };
		return 0;
	case E_INT:
		*ret = v_int(e->i);
		return 0;
	case E_BOOL:
		*ret = v_bool((int)e->i);
		return 0;
	case E_FIELD:
		return call_field(R, e, NULL, 0, ret);
	case E_FUNC:
		return call_func(R, e, NULL, 0, NULL, ret);
	case E_PIPE:
		return eval_pipe(R, e->pipe, ret);
	}
	return rerr(R, -EINVAL, "internal: bad node");
}

/* One command; piped (consumed) is the previous command's value. */
static int eval_cmd(struct rt *R, const struct cmd *c, struct val *piped, struct val *ret)
{
	const struct expr *f = &c->ops[0];

	if (f->type == E_FUNC)
		return call_func(R, f, c->ops + 1, c->nops - 1, piped, ret);
	if (f->type == E_FIELD) {
		struct val args[TMPL_MAX_OPERANDS + 1];
		int n = 0, r = 0;

		for (int k = 1; k < c->nops && !r; k++) {
			r = eval_arg(R, &c->ops[k], &args[n]);
			if (!r)
				n++;
		}
		if (piped && !r)
			args[n++] = *piped;
		else if (piped)
			v_free(piped);
		if (r) {
			for (int k = 0; k < n; k++)
				v_free(&args[k]);
			return r;
		}
		return call_field(R, f, args, n, ret);
	}
	if (piped)
		v_free(piped); /* refused at compile time */
	return eval_arg(R, f, ret);
}

static int eval_pipe(struct rt *R, const struct pipe *p, struct val *ret)
{
	struct val prev = { 0 }, v;

	for (int k = 0; k < p->ncmds; k++) {
		int r = eval_cmd(R, &p->cmds[k], k ? &prev : NULL, &v);

		if (r)
			return r;
		prev = v;
	}
	*ret = prev;
	return 0;
}

int tmpl__render(const struct tmpl *t, const struct tmpl_ctx *ctx, char *out, size_t outlen,
		 char *err, size_t errlen)
{
	struct rt R = { .ctx = ctx, .err = err, .errlen = errlen };
	struct out o = { .buf = out };
	int r = 0;

	if (!t || !ctx || !out || !outlen) {
		set_err(err, errlen, "nothing to render");
		return -EINVAL;
	}
	o.cap = outlen - 1 < TMPL_MAX_OUTPUT ? outlen - 1 : TMPL_MAX_OUTPUT;
	for (size_t i = 0; i < t->nparts && !r; i++) {
		const struct part *p = &t->parts[i];
		struct val v;

		if (!p->pipe) {
			r = out_put(&o, p->text, p->len);
			continue;
		}
		r = eval_pipe(&R, p->pipe, &v);
		if (r)
			return r;
		r = out_val(&o, &v);
		v_free(&v);
	}
	if (r) {
		set_err(err, errlen, "rendered name longer than %zu bytes", o.cap);
		return r;
	}
	out[o.len] = '\0';
	return 0;
}

int tmpl__filter(const struct tmpl *t, const struct tmpl_ctx *ctx, int *ret_match, char *err,
		 size_t errlen)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
	char out[TMPL_MAX_OUTPUT + 1], shown[68];
	size_t i;
	int r;

	r = tmpl__render(t, ctx, out, sizeof(out), err, errlen);
	if (r)
		return r;
	for (i = 0; i < 6; i++) {
		if (!strcmp(out, yes[i])) {
			*ret_match = 1;
			return 0;
		}
		if (!strcmp(out, no[i])) {
			*ret_match = 0;
			return 0;
		}
	}
	for (i = 0; out[i] && i < 64; i++)
		shown[i] = (unsigned char)out[i] < 0x20 || out[i] == 0x7f ? '?' : out[i];
	if (out[i])
		memcpy(shown + i, "...", 3), i += 3;
	shown[i] = '\0';
	set_err(err, errlen, "filter rendered '%s', not a boolean", shown);
	return -EINVAL;
}
