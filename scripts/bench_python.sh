#!/bin/bash
# make bench, Python frames: what reading a CPython thread's frames costs the BPF program per
# ON_CPU sample (kernel bpf_stats: run_time_ns / run_cnt), with 64 Python frames on the stack,
# against the same process sampled with native frames only (--python-frames off), and the
# shipper's CPU per sample for both. Debian's python3.11 and pyenv's 3.12.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
DUR=${BENCH_PYTHON_SECONDS:-6}
PERIOD_MS=2
DEPTH=64
. scripts/bench_lib.sh
bench_setup rover-bench-python

cat > "$work/deep.py" <<EOF2
import sys
sys.setrecursionlimit(1000)
def spin():
    x = 0
    for i in range(100000):
        x += i
    return x
def down(n):
    if n:
        return down(n - 1)
    return spin()
print("ready", flush=True)
while True:
    down($DEPTH - 3)
EOF2
sysctl -q -w kernel.bpf_stats_enabled=1 || true

serve_with_shipper

SHARE='{ n = $NF; t += n; if ($0 ~ /down \(deep.py:/) p += n }
	END { printf "%.3f", t ? p / t : 0 }'

results=""
for py in /usr/bin/python3.11 "$(ls -d "$(pyenv root 2>/dev/null || echo /root/.pyenv)"/versions/3.12.*/bin/python3.12 | head -1)"; do
	"$py" "$work/deep.py" > "$work/deep.out" &
	W=$!
	for _ in $(seq 50); do grep -q ready "$work/deep.out" 2>/dev/null && break; sleep 0.1; done
	rt_rounds "$(basename "$py")" "$SHARE"
	kill "$W"; wait "$W" 2>/dev/null || true
	W=""
done
echo
printf "%s" "$results" | awk "{ print \"  round:\", \$1, \$2, \$4 }"
echo "== Python frames: $DEPTH frames deep, ON_CPU ${DUR} s at $((1000 / PERIOD_MS)) Hz, frames off vs on =="
printf '%s' "$results" | awk '
	function med3(a, b, c) { return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)) }
	{ k = $1 " " $2; n[k]++; smp[k, n[k]] = $3; bpf[k, n[k]] = $4; sh[k, n[k]] = $5 / ($3 ? $3 : 1); pf[k] = $6
	  if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
	END {
		printf "%-12s %-5s %8s %20s %18s %14s\n", "python", "frames", "samples", "BPF ns/sample (med)", "shipper ns/sample", "Python frames"
		for (i = 1; i <= m; i++) {
			k = order[i]; split(k, kk, " ")
			b[k] = med3(bpf[k, 1], bpf[k, 2], bpf[k, 3]); s = med3(sh[k, 1], sh[k, 2], sh[k, 3])
			printf "%-12s %-5s %8d %20d %18.0f %13.1f%%\n", kk[1], kk[2], smp[k, 1], b[k], s, 100 * pf[k]
		}
		for (i = 2; i <= m; i += 2)
			printf "%s: Python frames add %.2f us of BPF per sample (median of 3; target: at most 3 us at 64 frames)\n", substr(order[i], 1, index(order[i], " ") - 1), (b[order[i]] - b[order[i-1]]) / 1000
	}'
echo
echo "== Python frames named by the shipper, warm =="
"$B/tests/bench/bench_pyframes"
