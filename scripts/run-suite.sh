#!/bin/sh
# Runs one Criterion runner with a TAP report beside its output and, when a test fails, repeats
# the failures with their messages at the end: a CI log that keeps only its tail still names them.
# usage: run-suite.sh TAP-FILE RUNNER [ARGS...]
set -u
tap=$1
shift
rm -f "$tap"
"$@" --tap="$tap"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "==== failed in $(basename "$1") (exit $rc):"
	if [ -s "$tap" ]; then
		awk '/^not ok/ { p = 1; print; next } /^(ok|#)/ { p = 0 } p' "$tap"
	else
		echo "(no report: the runner stopped before writing $tap)"
	fi
fi
exit "$rc"
