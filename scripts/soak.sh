#!/bin/bash
# make soak: the endurance scenarios of tests/integration/test_endurance.c at full length,
# one after the other, each printing its table:
#   churn           60 min: 200 short-lived matching processes a second while ON_CPU tasks
#                   from the (fake) OAP run back to back; descriptors, memory and BPF objects
#                   sampled every minute; every task's upload checked sample for sample
#   backend_outage  10 min without the OAP in the middle of a task; every sample arrives
#   kill_9_each_role  100 rounds of kill -9 of the worker, shipper, supervisor, launcher
#   fork_storm      10 min of a task on a target forking and execing as fast as it can
#   hostile_oap     10 min of an OAP answering every call with a hostile answer
#                   (tests/integration/test_hostile_oap.c), then sane again
# `make test` runs the same tests short (under a minute each).
#
# SOAK_SCALE shortens them all (0.1: a tenth, never below the short version); SOAK_CHURN_S,
# SOAK_OUTAGE_S, SOAK_KILLS, SOAK_STORM_S, SOAK_HOSTILE_S set one each (SOAK_CHURN_RATE, SOAK_TASK_S,
# SOAK_SAMPLE_S, SOAK_STORM_RATE too); SOAK_ONLY="churn fork_storm" runs only those.
# The tables go to stdout and to $SOAK_REPORT (default $OUT/soak/report.md). The roles run as
# $ROVER_USER (default rover), which must be this agent's alone.
set -uo pipefail
cd "$(dirname "$0")/.."
B=$(cd "${OUT:-build}" && pwd)
REPORT=${SOAK_REPORT:-$B/soak/report.md}
SCENARIOS=${SOAK_ONLY:-churn backend_outage kill_9_each_role fork_storm hostile_oap}
for f in "$B/tests/integration/runner" "$B/rover"; do
	[ -x "$f" ] || { echo "soak: $f is missing: run 'make soak'"; exit 1; }
done
mkdir -p "$(dirname "$REPORT")" "$B/soak"
{
	echo "# rover soak, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r)"
	echo "SOAK_SCALE=${SOAK_SCALE:-1} SOAK_CHURN_S=${SOAK_CHURN_S:-} SOAK_OUTAGE_S=${SOAK_OUTAGE_S:-}" \
		"SOAK_KILLS=${SOAK_KILLS:-} SOAK_STORM_S=${SOAK_STORM_S:-} SOAK_HOSTILE_S=${SOAK_HOSTILE_S:-}"
} > "$REPORT"
status=0
for t in $SCENARIOS; do
	echo "soak: $t"
	filter="endurance/$t"
	[ "$t" = hostile_oap ] && filter="hostile_oap/*"
	# Criterion's own limit is a backstop: each test ends itself (alarm) past its length.
	ROVER_SOAK=1 SOAK_REPORT="$REPORT" ROVER_BUILD="$B" ROVER_SRC="$PWD" \
		"$B/tests/integration/runner" --jobs 1 --verbose --timeout 30000 \
		--filter "$filter" > "$B/soak/$t.log" 2>&1
	rc=$?
	grep -E '^\[(PASS|FAIL)\]|Assertion|^\[----\]   [^r]' "$B/soak/$t.log" | head -40
	[ "$rc" -eq 0 ] || status=1
done
echo
cat "$REPORT"
echo
[ "$status" -eq 0 ] && echo "soak: all scenarios passed" || echo "soak: FAILED (logs in $B/soak/)"
exit "$status"
