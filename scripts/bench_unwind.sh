#!/bin/bash
# make bench, whole stacks: the cost of stack snapshots (--unwind dwarf, the default) against
# frame pointers (--unwind fp) on a real program of the Debian system, python3 (built without
# frame pointers, like its libc) running a JSON / regex / sort workload. Per sample: BPF program
# time (kernel bpf_stats: run_time_ns / run_cnt), shipper CPU (schedstat of its threads), all
# rover processes (cgroup); and the share of samples whose stack is whole, that is whose
# outermost frame is where a thread starts (_start, __libc_start_main, start_thread, clone).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
DUR=${BENCH_UNWIND_SECONDS:-10}
PERIOD_MS=2
PY=/usr/bin/python3
. scripts/bench_lib.sh
bench_setup rover-bench-unwind
# Nanoseconds on the CPU of every thread of pid $1.

cat > "$work/load.py" <<'EOF'
import json, random, re
random.seed(1)
docs = [{"id": i, "name": "item%d" % i, "tags": [random.random() for _ in range(8)]}
        for i in range(3000)]
print("ready", flush=True)
while True:
    text = json.dumps(docs)
    json.loads(text)
    sorted(docs, key=lambda d: d["tags"][3])
    re.findall(r"item(\d+)", text)
EOF
"$PY" "$work/load.py" > "$work/load.out" &
W=$!
for _ in $(seq 50); do grep -q ready "$work/load.out" 2>/dev/null && break; sleep 0.1; done
sysctl -q -w kernel.bpf_stats_enabled=1 || true

serve_with_shipper

# measure MODE: one ON_CPU task of DUR seconds; prints "mode samples bpf_ns shipper_ns agent_us whole"
measure() {
	local mode=$1 u0 u1 s0 s1 bpf samples whole
	# Warm-up task: symbols and CFI of python and its libraries are read once per agent.
	"$B/rover" profile --connect "$work/sock" --unwind "$mode" --pid "$W" --duration 1s \
		--output "$work/warm-$mode.folded" 2> /dev/null
	u0=$(cg_usec "$AG")
	s0=$(sched_ns "$shipper")
	"$B/rover" profile --connect "$work/sock" --unwind "$mode" --pid "$W" --duration "${DUR}s" \
		--dump-period "${PERIOD_MS}ms" --output "$work/$mode.folded" 2> "$work/$mode.err" &
	local T=$!
	sleep $((DUR - 1))
	bpf=$(bpftool prog show 2>/dev/null | awk '/on_cpu_sample/ { for (i = 1; i <= NF; i++) {
		if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) } }
		END { if (c) printf "%.0f", t / c; else print 0 }')
	wait "$T" || { echo "bench: $mode task failed:"; cat "$work/$mode.err"; exit 1; }
	u1=$(cg_usec "$AG")
	s1=$(sched_ns "$shipper")
	samples=$(sed -n 's/.*kernel counted \([0-9]*\).*/\1/p' "$work/$mode.err")
	whole=$(awk '{ n = $NF; split($1, f, ";"); t += n
		if (f[2] ~ /^(_start|__libc_start_main|__libc_start_call_main|start_thread|clone|clone3)$/) w += n }
		END { printf "%.4f", t ? w / t : 0 }' "$work/$mode.folded")
	echo "$mode ${samples:-0} $bpf $((s1 - s0)) $((u1 - u0)) $whole"
}

fp=$(measure fp)
dw=$(measure dwarf)
echo
echo "== whole stacks: python3 (no frame pointers, nor its libc) under load, ${DUR} s at $((1000 / PERIOD_MS)) Hz, fp vs dwarf =="
printf '%s\n%s\n' "$fp" "$dw" | awk '
	{ m[NR] = $1; smp[NR] = $2; bpf[NR] = $3; sh[NR] = $4 / ($2 ? $2 : 1); ag[NR] = $5 * 1000 / ($2 ? $2 : 1); wh[NR] = $6 }
	END {
		printf "%-8s %8s %14s %16s %18s %8s\n", "unwind", "samples", "BPF ns/sample", "shipper ns/sample", "all rover ns/sample", "whole"
		for (i = 1; i <= 2; i++)
			printf "%-8s %8d %14d %16.0f %18.0f %7.1f%%\n", m[i], smp[i], bpf[i], sh[i], ag[i], 100 * wh[i]
		printf "ratios dwarf / fp: BPF %.2fx, shipper %.2fx, all rover %.2fx; whole stacks %.1f%% -> %.1f%%\n",
			bpf[2] / (bpf[1] ? bpf[1] : 1), sh[2] / (sh[1] ? sh[1] : 1), ag[2] / (ag[1] ? ag[1] : 1), 100 * wh[1], 100 * wh[2]
	}'
