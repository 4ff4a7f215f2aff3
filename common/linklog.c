// SPDX-License-Identifier: Apache-2.0
/* When to log a change of the backend link's state (linklog.h). */
#include <string.h>

#include "common/linklog.h"

void linklog__init(struct linklog *l)
{
	memset(l, 0, sizeof(*l));
	l->state = -1;
}

static int code_said(struct linklog *l, int code)
{
	for (unsigned i = 0; i < l->ncodes; i++)
		if (l->codes[i] == code)
			return 1;
	if (l->ncodes < LINKLOG_MAX_CODES)
		l->codes[l->ncodes++] = code;
	return 0;
}

int linklog__change(struct linklog *l, int ok, int code, uint64_t now_ms, unsigned *ret_quiet)
{
	int log;

	ok = !!ok;
	if (ret_quiet)
		*ret_quiet = 0;
	if (ok == l->state)
		return 0;
	if (!l->window_start_ms || now_ms - l->window_start_ms >= LINKLOG_WINDOW_MS) {
		if (ret_quiet)
			*ret_quiet = l->quiet;
		l->window_start_ms = now_ms ? now_ms : 1;
		l->changes = l->quiet = l->ncodes = 0;
	}
	l->state = ok;
	l->changes++;
	if (l->changes <= LINKLOG_FREE_CHANGES) {
		if (!ok)
			code_said(l, code);
		return 1;
	}
	log = !ok && !code_said(l, code);
	if (!log)
		l->quiet++;
	return log;
}

int oncelog__say(struct oncelog *o, const char *text, uint64_t now_ms, unsigned *ret_quiet)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	if (ret_quiet)
		*ret_quiet = 0;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	for (unsigned i = 0; i < o->n; i++)
		if (o->hashes[i] == h)
			return 0;
	o->hashes[o->next] = h;
	o->next = (o->next + 1) % ONCELOG_REMEMBERED;
	if (o->n < ONCELOG_REMEMBERED)
		o->n++;
	if (!o->window_start_ms || now_ms - o->window_start_ms >= LINKLOG_WINDOW_MS) {
		if (ret_quiet)
			*ret_quiet = o->quiet;
		o->window_start_ms = now_ms ? now_ms : 1;
		o->said = o->quiet = 0;
	}
	if (o->said >= ONCELOG_PER_WINDOW) {
		o->quiet++;
		return 0;
	}
	o->said++;
	return 1;
}
