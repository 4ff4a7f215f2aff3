// SPDX-License-Identifier: Apache-2.0
/*
 * Process discovery names: the Go text/template subset of template.h. A template compiles to
 * a list of parts, each literal text or one field (with its argument); rendering writes the
 * parts in order, bounded by TMPL_MAX_OUTPUT.
 *
 * Syntax accepted, as Go parses it:
 *   {{.Field}} {{ .Field "arg" }} {{.Finder.RegexMatchGroup 2}}
 *   {{- ...}} trims the white space before the action, {{... -}} the white space after it;
 *   the dash must be followed (preceded) by a space, tab, CR or newline, as in Go.
 *   String arguments: "..." with Go's escapes (\a \b \f \n \r \t \v \\ \" \xHH \NNN \uXXXX
 *   \UXXXXXXXX) or `raw`; a NUL byte is refused. A comment action (slash-star right after
 *   the opening braces, star-slash right before the closing ones) renders nothing.
 * Error positions are byte offsets in the source.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config/template.h"

enum tmpl_field {
	TF_TEXT = 0,
	TF_INSTANCE_ID,
	TF_HOST_NAME,
	TF_HOST_IPV4,
	TF_HOST_IPV6,
	TF_EXE_PATH,
	TF_EXE_NAME,
	TF_CMDLINE,
	TF_PID,
	TF_WORKDIR,
	TF_EXE_NAME_IN_CMDLINE,
	TF_LAYER,
	TF_GROUP,
};

enum tmpl_arg {
	TA_NONE,
	TA_STRING,
	TA_INT,
};

static const struct {
	const char *name;
	enum tmpl_field field;
	enum tmpl_arg arg;
} tmpl_fields[] = {
	{ ".Rover.InstanceID", TF_INSTANCE_ID, TA_NONE },
	{ ".Rover.HostName", TF_HOST_NAME, TA_NONE },
	{ ".Rover.HostIPV4", TF_HOST_IPV4, TA_STRING },
	{ ".Rover.HostIPV6", TF_HOST_IPV6, TA_STRING },
	{ ".Process.ExeFilePath", TF_EXE_PATH, TA_NONE },
	{ ".Process.ExeName", TF_EXE_NAME, TA_NONE },
	{ ".Process.CommandLine", TF_CMDLINE, TA_NONE },
	{ ".Process.Pid", TF_PID, TA_NONE },
	{ ".Process.WorkDir", TF_WORKDIR, TA_NONE },
	{ ".Process.ExeNameInCommandLine", TF_EXE_NAME_IN_CMDLINE, TA_NONE },
	{ ".Finder.Layer", TF_LAYER, TA_NONE },
	{ ".Finder.RegexMatchGroup", TF_GROUP, TA_INT },
};

struct tmpl_part {
	enum tmpl_field field;
	char *text; /* TF_TEXT: the literal; TA_STRING fields: the argument */
	size_t len; /* of text */
	int n;      /* TA_INT fields: the argument */
};

struct tmpl {
	char *source;
	size_t nparts;
	struct tmpl_part parts[];
};

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

void tmpl__free(struct tmpl *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nparts; i++)
		free(t->parts[i].text);
	free(t->source);
	free(t);
}

const char *tmpl__source(const struct tmpl *t)
{
	return t ? t->source : NULL;
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
 * A quoted argument starting at src[*pos] ('"' or '`'), up to end. The unescaped value into
 * *ret (malloc'd, NUL-terminated), *pos past the closing quote. An escaped string is never
 * longer than its source, so one buffer of that size holds it (4-byte UTF-8 comes from a
 * 10-byte \U escape, 3-byte from a 6-byte \u).
 */
static int parse_string(const char *src, size_t *pos, size_t end, char **ret, char *err,
			size_t errlen)
{
	size_t start = *pos, i = start + 1, len = 0;
	char quote = src[start];
	char *out = malloc(end - start + 1);

	if (!out)
		return -ENOMEM;
	for (;;) {
		char c;

		if (i >= end || (src[i] == '\n' && quote == '"')) {
			set_err(err, errlen, "unterminated string at %zu", start);
			goto fail;
		}
		c = src[i++];
		if (c == quote)
			break;
		if (c == '\0') {
			set_err(err, errlen, "NUL in string at %zu", i - 1);
			goto fail;
		}
		if (quote == '`' || c != '\\') {
			out[len++] = c;
			continue;
		}
		if (i >= end) {
			set_err(err, errlen, "unterminated string at %zu", start);
			goto fail;
		}
		c = src[i++];
		uint32_t cp = 0;
		int digits = 0, base = 16;

		switch (c) {
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
		default:
			if (c >= '0' && c <= '7') {
				digits = 3;
				base = 8;
				i--;
				break;
			}
			set_err(err, errlen, "unknown escape \\%c at %zu", c, i - 2);
			goto fail;
		}
		for (int d = 0; d < digits; d++) {
			int v = i < end ? hexval(src[i]) : -1;

			if (v < 0 || v >= base) {
				set_err(err, errlen, "bad escape at %zu", i);
				goto fail;
			}
			cp = cp * base + (uint32_t)v;
			i++;
		}
		if (cp == 0 || (base == 8 && cp > 0xff) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp < 0xe000 && c != 'x' && base != 8)) {
			set_err(err, errlen, "bad escape value at %zu", i);
			goto fail;
		}
		if (c == 'x' || base == 8)
			out[len++] = (char)cp; /* a byte, as in Go */
		else
			put_utf8(out, &len, cp);
	}
	out[len] = '\0';
	*ret = out;
	*pos = i;
	return 0;
fail:
	free(out);
	return -EINVAL;
}

/* The action between "{{" and "}}" (trim marks already removed): src[start, end). */
static int parse_action(const char *src, size_t start, size_t end, struct tmpl_part *ret_part,
			int *ret_empty, char *err, size_t errlen)
{
	size_t i = start, name_start, name_len;
	struct tmpl_part part = { 0 };
	size_t f;
	int r;

	*ret_empty = 0;
	if (end - i >= 2 && src[i] == '/' && src[i + 1] == '*') {
		size_t e = end;

		while (e > i && is_space(src[e - 1]))
			e--;
		if (e - i < 4 || src[e - 2] != '*' || src[e - 1] != '/') {
			set_err(err, errlen, "unclosed comment at %zu", i);
			return -EINVAL;
		}
		*ret_empty = 1;
		return 0;
	}
	while (i < end && is_space(src[i]))
		i++;
	if (i >= end) {
		set_err(err, errlen, "missing value for command at %zu", start);
		return -EINVAL;
	}
	name_start = i;
	while (i < end && !is_space(src[i]))
		i++;
	name_len = i - name_start;
	for (f = 0; f < sizeof(tmpl_fields) / sizeof(tmpl_fields[0]); f++)
		if (strlen(tmpl_fields[f].name) == name_len &&
		    !memcmp(tmpl_fields[f].name, src + name_start, name_len))
			break;
	if (f == sizeof(tmpl_fields) / sizeof(tmpl_fields[0])) {
		int shown = name_len > 64 ? 64 : (int)name_len;

		set_err(err, errlen, "unknown %s %.*s at %zu",
			src[name_start] == '.' ? "field" : "function", shown, src + name_start,
			name_start);
		return -EINVAL;
	}
	part.field = tmpl_fields[f].field;
	while (i < end && is_space(src[i]))
		i++;
	switch (tmpl_fields[f].arg) {
	case TA_NONE:
		break;
	case TA_STRING:
		if (i >= end || (src[i] != '"' && src[i] != '`')) {
			set_err(err, errlen, "%s needs a quoted string argument at %zu",
				tmpl_fields[f].name, i);
			return -EINVAL;
		}
		r = parse_string(src, &i, end, &part.text, err, errlen);
		if (r)
			return r;
		part.len = strlen(part.text);
		break;
	case TA_INT: {
		size_t d = i;

		while (i < end && src[i] >= '0' && src[i] <= '9' && part.n < TMPL_MAX_GROUPS) {
			part.n = part.n * 10 + (src[i] - '0');
			i++;
		}
		if (i == d || (i < end && !is_space(src[i]))) {
			set_err(err, errlen, "%s needs a group number at %zu", tmpl_fields[f].name,
				d);
			return -EINVAL;
		}
		if (part.n >= TMPL_MAX_GROUPS) {
			set_err(err, errlen, "group number at %zu is more than %d", d,
				TMPL_MAX_GROUPS - 1);
			return -EINVAL;
		}
		break;
	}
	}
	while (i < end && is_space(src[i]))
		i++;
	if (i < end) {
		set_err(err, errlen, "unexpected argument to %s at %zu", tmpl_fields[f].name, i);
		free(part.text);
		return -EINVAL;
	}
	*ret_part = part;
	return 0;
}

static int add_text(struct tmpl *t, const char *s, size_t len)
{
	struct tmpl_part *p;

	if (!len)
		return 0;
	p = &t->parts[t->nparts];
	p->field = TF_TEXT;
	p->text = strndup(s, len);
	if (!p->text)
		return -ENOMEM;
	p->len = len;
	t->nparts++;
	return 0;
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

struct tmpl *tmpl__compile(const char *src, char *err, size_t errlen)
{
	size_t srclen, maxparts, pos = 0;
	struct tmpl *t;
	int r = -EINVAL;

	if (!src) {
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
	/* Each action takes at least 3 bytes ("{{x"), each text part sits between two actions. */
	maxparts = 2 * (srclen / 3) + 2;
	t = calloc(1, sizeof(*t) + maxparts * sizeof(t->parts[0]));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->source = strdup(src);
	if (!t->source) {
		r = -ENOMEM;
		goto fail;
	}
	while (pos < srclen) {
		const char *open = strstr(src + pos, "{{"), *close;
		size_t text_end, a_start, a_end, next;
		struct tmpl_part part;
		int empty;

		if (!open) {
			r = add_text(t, src + pos, srclen - pos);
			if (r)
				goto fail;
			break;
		}
		text_end = (size_t)(open - src);
		a_start = text_end + 2;
		if (src[a_start] == '-' && is_space(src[a_start + 1])) {
			a_start += 2;
			while (text_end > pos && is_space(src[text_end - 1]))
				text_end--;
		}
		r = add_text(t, src + pos, text_end - pos);
		if (r)
			goto fail;
		close = find_close(src, a_start);
		if (!close) {
			set_err(err, errlen, "unclosed action at %zu", (size_t)(open - src));
			r = -EINVAL;
			goto fail;
		}
		a_end = (size_t)(close - src);
		next = a_end + 2;
		if (a_end >= a_start + 2 && src[a_end - 1] == '-' && is_space(src[a_end - 2])) {
			a_end -= 2;
			while (next < srclen && is_space(src[next]))
				next++;
		}
		r = parse_action(src, a_start, a_end, &part, &empty, err, errlen);
		if (r)
			goto fail;
		if (!empty)
			t->parts[t->nparts++] = part;
		pos = next;
	}
	return t;
fail:
	if (r == -ENOMEM)
		set_err(err, errlen, "out of memory");
	tmpl__free(t);
	errno = -r;
	return NULL;
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

static int out_str(struct out *o, const char *s)
{
	return s ? out_put(o, s, strlen(s)) : 0;
}

int tmpl__render(const struct tmpl *t, const struct tmpl_ctx *ctx, char *out, size_t outlen,
		 char *err, size_t errlen)
{
	struct out o = { .buf = out };
	char num[24], ip[64];
	int r = 0;

	if (!t || !ctx || !out || !outlen) {
		set_err(err, errlen, "nothing to render");
		return -EINVAL;
	}
	o.cap = outlen - 1 < TMPL_MAX_OUTPUT ? outlen - 1 : TMPL_MAX_OUTPUT;
	for (size_t i = 0; i < t->nparts && !r; i++) {
		const struct tmpl_part *p = &t->parts[i];

		switch (p->field) {
		case TF_TEXT: r = out_put(&o, p->text, p->len); break;
		case TF_INSTANCE_ID: r = out_str(&o, ctx->instance_id); break;
		case TF_HOST_NAME: r = out_str(&o, ctx->host_name); break;
		case TF_EXE_PATH: r = out_str(&o, ctx->exe_path); break;
		case TF_EXE_NAME: r = out_str(&o, ctx->exe_name); break;
		case TF_CMDLINE: r = out_str(&o, ctx->cmdline); break;
		case TF_WORKDIR: r = out_str(&o, ctx->workdir); break;
		case TF_EXE_NAME_IN_CMDLINE: r = out_str(&o, ctx->exe_name_in_cmdline); break;
		case TF_LAYER: r = out_str(&o, ctx->layer); break;
		case TF_PID:
			snprintf(num, sizeof(num), "%d", ctx->pid);
			r = out_str(&o, num);
			break;
		case TF_GROUP:
			if (p->n >= ctx->ngroups || ctx->ngroups > TMPL_MAX_GROUPS) {
				set_err(err, errlen, "no regex group %d (the regex has %d)", p->n,
					ctx->ngroups > 0 ? ctx->ngroups - 1 : 0);
				return -ENOENT;
			}
			r = out_str(&o, ctx->groups[p->n]);
			break;
		case TF_HOST_IPV4:
		case TF_HOST_IPV6: {
			int v6 = p->field == TF_HOST_IPV6;

			r = ctx->host_ip ? ctx->host_ip(ctx->host_ip_arg, p->text, v6, ip, sizeof(ip))
					 : -ENOENT;
			if (r) {
				set_err(err, errlen, "interface '%s' has no IPv%c address: %s", p->text,
					v6 ? '6' : '4', strerror(r < 0 ? -r : r));
				return r < 0 ? r : -r;
			}
			ip[sizeof(ip) - 1] = '\0';
			r = out_str(&o, ip);
			break;
		}
		}
	}
	if (r) {
		set_err(err, errlen, "rendered name longer than %zu bytes", o.cap);
		return r;
	}
	out[o.len] = '\0';
	return 0;
}
