#!/bin/bash
# make bench, discovery at scale: what the supervisor costs on a host of many processes.
#
# NPROC (10 000) idle processes (tests/programs/idle_many: forked, sleeping in pause()),
# started in batches of 500, of which NMATCH (2000) match the one finder, each its own entity
# (process_name "dm-{{.Process.Pid}}"). `rover run` against the fake OAP
# (tests/oap/fake_oap.py), discovery period 1 s, heartbeat_period 1 s (properties_report_period
# 100000, so every heartbeat is a keepAlive), profiling.check_interval 1 s (queryTasks).
#
# Printed, one figure a line (`discovery.<name> <value>`), then a summary against the issue's
# targets (supervisor <= 1% of one core steady, <= 30 MB RSS):
# - report_ms: from the agent's start to the OAP holding a reportProcesses of every one of the
#   NMATCH processes;
# - keepalive_max_gap_ms, querytasks_max_gap_ms: the longest time between two keepAlive (two
#   queryTasks) calls from the first keepAlive to 10 s after the last report: a reporting burst
#   that stalled either would show here (period 1 s);
# - cpu_supervisor_pct: the supervisor's CPU (utime + stime of /proc/PID/stat, all threads) over
#   WIN (30) s in steady state, WARM (5) s after the last report;
# - vmrss_kb, vmhwm_kb: the supervisor's VmRSS at the end and its VmHWM (peak of its life).
#
# Needs root (cgroup v2, pid_max); pid_max and the process limit are raised when they are short
# of NPROC and put back. BENCH_DISC_PROCS, BENCH_DISC_MATCH, BENCH_DISC_SECONDS set the sizes;
# ROVER picks the binary (a build of another tree, for a before/after).
# shellcheck disable=SC2154 # $work, $CG: bench_lib.sh's
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
ROVER=${ROVER:-$B/rover}
IDLE=${IDLE_MANY:-$B/tests/programs/idle_many}
NPROC=${BENCH_DISC_PROCS:-10000}
NMATCH=${BENCH_DISC_MATCH:-2000}
WIN=${BENCH_DISC_SECONDS:-30}
WARM=5
BATCH=500
for v in NPROC NMATCH WIN; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench: $v must be a positive integer"; exit 1; }
done
[ "$NMATCH" -le "$NPROC" ] || { echo "bench: more matching processes than processes"; exit 1; }
for f in "$ROVER" "$IDLE"; do
	[ -x "$f" ] || { echo "bench: $f is missing: run 'make bench'"; exit 1; }
done
. scripts/bench_lib.sh
bench_setup rover-bench-disc

SPAWN="" OAP="" RUN="" OLD_PID_MAX=""
disc_cleanup() {
	local p
	# shellcheck disable=SC2046,SC2086
	for p in $RUN $(cat "$CG"/agent/cgroup.procs 2>/dev/null) $OAP $SPAWN; do
		kill "$p" 2>/dev/null || true
	done
	for p in $RUN $OAP $SPAWN; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	# The children die with their parent (PR_SET_PDEATHSIG); pid_max once they are gone.
	for _ in $(seq 100); do pgrep -f "idle_many [0-9]+ $BATCH dbench-" > /dev/null || break; sleep 0.1; done
	[ -z "$OLD_PID_MAX" ] || echo "$OLD_PID_MAX" > /proc/sys/kernel/pid_max
	bench_cleanup
}
trap disc_cleanup EXIT

wait_for() {
	local t=$(($1 * 10)) what=$2
	shift 2
	for _ in $(seq "$t"); do "$@" && return 0; sleep 0.1; done
	{
		echo "bench: $what did not happen in time; the agent's log ends with:"
		tail -n 20 "$work/run.log"
	} >&2
	exit 1
}
now_ms() { date +%s%3N; }

# Room for the processes: pids beyond those in use now, and the process limit of root.
pids=(/proc/[0-9]*) # a glob: ls would fail on a process that exits meanwhile
in_use=${#pids[@]}
need=$((in_use + NPROC + 4096))
if [ "$(cat /proc/sys/kernel/pid_max)" -lt "$need" ]; then
	OLD_PID_MAX=$(cat /proc/sys/kernel/pid_max)
	echo "$need" > /proc/sys/kernel/pid_max
fi
ulimit -u unlimited 2>/dev/null || ulimit -u $((in_use + NPROC + 4096))

# start COUNT TAG: COUNT processes (idle_many and its children) outside the agent's cgroup.
start() {
	"$IDLE" "$1" "$BATCH" "$2" > "$work/$2.ready" &
	SPAWN="$SPAWN $!"
	wait_for 120 "the start of $1 processes" grep -q ready "$work/$2.ready"
}
t0=$(now_ms)
start "$((NPROC - NMATCH))" dbench-other
start "$NMATCH" dbench-match
echo "discovery.start_processes_ms $(($(now_ms) - t0))" > "$work/figures"

/usr/bin/python3 tests/oap/fake_oap.py --port 0 --bind 127.0.0.1 --port-file "$work/oap.port" \
	--record "$work/rec.jsonl" > /dev/null 2> "$work/oap.err" &
OAP=$!
wait_for 30 "the fake OAP's start" test -s "$work/oap.port"
cat > "$work/run.yaml" <<YAML
core:
  backend:
    addr: 127.0.0.1:$(cat "$work/oap.port")
process_discovery:
  heartbeat_period: 1s
  properties_report_period: 100000
  vm:
    period: 1s
    finders:
      - match_cmd_regex: "idle_many [0-9]+ $BATCH dbench-match"
        service_name: dbench
        process_name: "dm-{{.Process.Pid}}"
profiling:
  check_interval: 1s
YAML

AG="$CG/agent"
mkdir -p "$AG"
role() {
	local p
	for p in $(cat "$AG/cgroup.procs" 2> /dev/null); do
		[ "$(cat "/proc/$p/comm" 2> /dev/null)" = "$1" ] && { echo "$p"; return 0; }
	done
	return 1
}
# The roles' user is one agent's at a time: another bench's or test's agent is waited for.
deadline=$((SECONDS + 180))
while :; do
	start_ms=$(now_ms)
	( run_in "$AG" "$ROVER" run --config "$work/run.yaml" 2> "$work/run.log" ) &
	RUN=$!
	for _ in $(seq 100); do
		role rover-superviso > /dev/null && break 2
		kill -0 "$RUN" 2> /dev/null || break
		sleep 0.1
	done
	kill "$RUN" 2> /dev/null || true
	wait "$RUN" 2> /dev/null || true
	RUN=""
	if ! grep -qs "already runs process" "$work/run.log" || [ "$SECONDS" -ge "$deadline" ]; then
		echo "bench: rover run did not start:"
		tail -n 5 "$work/run.log"
		exit 1
	fi
	sleep 2
done
SUP=$(role rover-superviso)
nreported() {
	grep '"reportProcesses"' "$work/rec.jsonl" 2> /dev/null |
		grep -o '"processName": "dm-[0-9]*"' | sort -u | wc -l
}
reported() { [ "$(nreported)" -ge "$NMATCH" ]; }
wait_for 300 "the report of $NMATCH processes" reported
done_ms=$(now_ms)
sleep "$WARM"

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
kill -0 "$SUP" || { echo "bench: the supervisor was restarted"; exit 1; }
c0=$(cpu_ticks "$SUP") w0=$(now_ms)
sleep "$WIN"
c1=$(cpu_ticks "$SUP") w1=$(now_ms)
kill -0 "$SUP" || { echo "bench: the supervisor was restarted"; exit 1; }
sleep 5 # the gaps below run to 10 s after the last report
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$SUP/status")
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$SUP/status")
pids=(/proc/[0-9]*)
live=${#pids[@]}
{
	echo "discovery.processes_on_host $live"
	echo "discovery.matching $NMATCH"
	echo "discovery.report_ms $((done_ms - start_ms))"
	awk -v c="$((c1 - c0))" -v t="$ticks" -v w="$((w1 - w0))" \
		'BEGIN { printf "discovery.cpu_supervisor_pct %.3f\n", 100 * c / t / (w / 1000) }'
	echo "discovery.vmrss_kb $rss"
	echo "discovery.vmhwm_kb $hwm"
	/usr/bin/python3 - "$work/rec.jsonl" "$done_ms" <<'PY'
import json, sys
end = int(sys.argv[2]) + 10000
times = {"keepAlive": [], "queryTasks": []}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("method") in times:
        times[r["method"]].append(r["time_ms"])
first = min(times["keepAlive"]) if times["keepAlive"] else end
for m, name in (("keepAlive", "keepalive"), ("queryTasks", "querytasks")):
    t = sorted(x for x in times[m] if first <= x <= end)
    gap = max((b - a for a, b in zip(t, t[1:])), default=-1)
    print("discovery.%s_calls %d" % (name, len(t)))
    print("discovery.%s_max_gap_ms %d" % (name, gap))
PY
} >> "$work/figures"
cat "$work/figures"

echo
awk '{ v[$1] = $2 }
	function ok(c) { return c ? "met" : "NOT met" }
	END {
		printf "discovery: %d processes on the host, %d matching, period 1 s\n",
			v["discovery.processes_on_host"], v["discovery.matching"]
		printf "discovery: supervisor %.3f%% of one core steady: target <= 1%%: %s\n",
			v["discovery.cpu_supervisor_pct"], ok(v["discovery.cpu_supervisor_pct"] <= 1)
		printf "discovery: supervisor VmRSS %.1f MB, VmHWM %.1f MB: target <= 30 MB: %s\n",
			v["discovery.vmrss_kb"] / 1024, v["discovery.vmhwm_kb"] / 1024,
			ok(v["discovery.vmhwm_kb"] <= 30 * 1024)
		printf "discovery: all %d reported %d ms after the start; longest gap between keepAlives %d ms, between queryTasks %d ms (period 1000 ms): %s\n",
			v["discovery.matching"], v["discovery.report_ms"],
			v["discovery.keepalive_max_gap_ms"], v["discovery.querytasks_max_gap_ms"],
			ok(v["discovery.keepalive_max_gap_ms"] > 0 && v["discovery.keepalive_max_gap_ms"] <= 2500 &&
			   v["discovery.querytasks_max_gap_ms"] > 0 && v["discovery.querytasks_max_gap_ms"] <= 2500)
	}' "$work/figures"
