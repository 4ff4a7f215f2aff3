/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When to log a change of the backend link's state (reachable / unreachable), in the
 * supervisor and the shipper. Every change is logged while changes are few: a backend that
 * goes away and comes back is one line each way. A backend that answers every other call
 * badly (a broken or hostile OAP, tests/oap/README.md "Hostile mode") changes state at every
 * call; then, for the rest of a 10-minute window, a failure is logged only when its status
 * code is new in the window, a recovery not at all, and the first change after the window
 * says how many were not logged. The log grows with the kinds of failure, not with calls.
 */
#ifndef ROVER_COMMON_LINKLOG_H
#define ROVER_COMMON_LINKLOG_H

#include <stdint.h>

#define LINKLOG_WINDOW_MS (10u * 60 * 1000)
#define LINKLOG_FREE_CHANGES 6 /* changes logged in a window before damping starts */
#define LINKLOG_MAX_CODES 32   /* failure codes remembered in a window */

struct linklog {
	int state; /* -1 unknown, 0 down, 1 up */
	uint64_t window_start_ms;
	unsigned changes; /* in this window */
	unsigned quiet;	  /* changes not logged in this window */
	int codes[LINKLOG_MAX_CODES];
	unsigned ncodes;
};

void linklog__init(struct linklog *l);
/*
 * The link is now up (ok) or down with status code; now_ms monotonic. Returns 1 when the
 * caller logs this change, 0 when it does not (no change, or damped). *ret_quiet (may be
 * NULL) is set to the changes of the previous window that were not logged, when this call
 * is the first of a new window and there were some, else 0: the caller says it once.
 */
int linklog__change(struct linklog *l, int ok, int code, uint64_t now_ms, unsigned *ret_quiet);

/*
 * Once-only warnings about what the backend sent (a bad policy item, a bad answer): a text
 * already said is not said again (the backend answers the same on every poll), and at most
 * ONCELOG_PER_WINDOW new texts are said per 10-minute window (a broken backend may make every
 * text new: values, indexes), the others counted and the count said once after the window.
 */
#define ONCELOG_REMEMBERED 64
#define ONCELOG_PER_WINDOW 16

struct oncelog {
	uint64_t hashes[ONCELOG_REMEMBERED];
	unsigned n, next;
	uint64_t window_start_ms;
	unsigned said, quiet;
};

/* Whether to say text now (1) or not (0); *ret_quiet as linklog__change's. */
int oncelog__say(struct oncelog *o, const char *text, uint64_t now_ms, unsigned *ret_quiet);

#endif
