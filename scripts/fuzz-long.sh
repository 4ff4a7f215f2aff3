#!/bin/sh
# `make fuzz-long`: every fuzz target (or those named) until it has run FUZZ_LONG_RUNS inputs
# (10 000 000) or FUZZ_LONG_SECONDS (3600) have passed, whichever comes first, one after the
# other, each on one core. Inputs found go to build/fuzz/corpus/<target> (kept between runs);
# a crash stops that target, leaves its input in build/fuzz/artifacts/ and fails the run at
# the end. Each target's figures (executions, executions a second, coverage counters and
# features, corpus size, result, date) are appended as a Markdown row to
# build/fuzz/fuzz-long.md, the table docs/development.md ("Fuzzing at depth") is kept from.
#
# usage: scripts/fuzz-long.sh [TARGET...]      (run from the top of the tree; make fuzz first)
# FUZZ_LONG_NICE (19) runs the fuzzers at that niceness, so that they take only idle time.
set -u

OUT=${OUT:-build}
RUNS=${FUZZ_LONG_RUNS:-10000000}
SECS=${FUZZ_LONG_SECONDS:-3600}
NICE=${FUZZ_LONG_NICE:-19}
MAX_LEN=${FUZZ_MAX_LEN:-65536}
REPORT=$OUT/fuzz/fuzz-long.md
failed=0

if [ $# -eq 0 ]; then
	set -- $(ls tests/fuzz/fuzz_*.c | sed 's|tests/fuzz/||; s|\.c$||')
fi
mkdir -p "$OUT/fuzz/artifacts"
if [ ! -f "$REPORT" ]; then
	printf '| target | executions | per second | coverage (cov / ft) | corpus | result | date |\n' >"$REPORT"
	printf '|---|---|---|---|---|---|---|\n' >>"$REPORT"
fi
for t in "$@"; do
	bin=$OUT/fuzz/$t
	log=$OUT/fuzz/$t.long.log
	if [ ! -x "$bin" ]; then
		echo "fuzz-long: no $bin (make fuzz builds it)"
		failed=1
		continue
	fi
	mkdir -p "$OUT/fuzz/corpus/$t"
	printf '  %-8s %s: up to %s runs or %s s\n' LONG "$t" "$RUNS" "$SECS"
	nice -n "$NICE" env UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" "$bin" \
		-runs="$RUNS" -max_total_time="$SECS" -max_len="$MAX_LEN" -print_final_stats=1 \
		-artifact_prefix="$OUT/fuzz/artifacts/$t-" \
		"$OUT/fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	last=$(grep -aE '^#[0-9]+.* cov: ' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(ls "$OUT/fuzz/corpus/$t" | wc -l)
	if [ $rc -eq 0 ]; then
		result="0 crashes"
	else
		result="FAILED (exit $rc, $OUT/fuzz/$t.long.log)"
		failed=1
		tail -n 40 "$log"
	fi
	printf '| %s | %s | %s | %s / %s | %s | %s | %s |\n' "$t" "${execs:-?}" "${rate:-?}" \
		"${cov:-?}" "${ft:-?}" "$corp" "$result" "$(date -u +%Y-%m-%d)" >>"$REPORT"
	printf '  %-8s %s: %s executions, %s a second, cov %s, %s\n' "" "$t" "${execs:-?}" \
		"${rate:-?}" "${cov:-?}" "$result"
done
echo "fuzz-long: figures in $REPORT"
exit $failed
