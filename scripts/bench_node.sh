#!/bin/bash
# make bench, node frames: what walking V8's JavaScript frames costs the BPF program per ON_CPU
# sample (kernel bpf_stats: run_time_ns / run_cnt), with 64 JavaScript frames on the stack,
# against the same process sampled with native frames only (--python-frames off: no
# interpreter of any kind is looked for, node's included), and the shipper's CPU per sample
# for both. The pattern of scripts/bench_python.sh, on this image's node.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
DUR=${BENCH_NODE_SECONDS:-6}
PERIOD_MS=2
DEPTH=64
NODE=${BENCH_NODE:-$(command -v node)}
. scripts/bench_lib.sh
bench_setup rover-bench-node

# down() recurses to DEPTH - 3 JavaScript frames (the top level and the loop's two make the
# rest) before spin() burns the CPU; --stack-size: the default is ample, said for the reader.
cat > "$work/deep.js" <<EOF2
function spin() {
  let x = 0;
  for (let i = 0; i < 100000; i++) x += i;
  return x;
}
function down(n) {
  if (n) return down(n - 1) + 1;
  return spin();
}
console.log("ready");
for (;;) down($DEPTH - 3);
EOF2
sysctl -q -w kernel.bpf_stats_enabled=1 || true

serve_with_shipper

SHARE='{ n = $NF; t += n; if ($0 ~ /down \(deep.js:/) p += n }
	END { printf "%.3f", t ? p / t : 0 }'

"$NODE" "$work/deep.js" > "$work/deep.out" &
W=$!
for _ in $(seq 50); do grep -q ready "$work/deep.out" 2>/dev/null && break; sleep 0.1; done
results=""
rt_rounds node "$SHARE"
kill "$W"; wait "$W" 2>/dev/null || true
W=""
echo
printf "%s" "$results" | awk "{ print \"  round:\", \$1, \$2, \$4 }"
echo "== node frames: $DEPTH frames deep, ON_CPU ${DUR} s at $((1000 / PERIOD_MS)) Hz, frames off vs on ($("$NODE" --version)) =="
printf '%s' "$results" | awk '
	function med3(a, b, c) { return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)) }
	{ k = $2; n[k]++; smp[k, n[k]] = $3; bpf[k, n[k]] = $4; sh[k, n[k]] = $5 / ($3 ? $3 : 1); pf[k] = $6 }
	END {
		printf "%-6s %8s %20s %18s %10s\n", "frames", "samples", "BPF ns/sample (med)", "shipper ns/sample", "JS frames"
		split("off on", ks, " ")
		for (i = 1; i <= 2; i++) {
			k = ks[i]
			b[k] = med3(bpf[k, 1], bpf[k, 2], bpf[k, 3]); s[k] = med3(sh[k, 1], sh[k, 2], sh[k, 3])
			printf "%-6s %8d %20d %18.0f %9.1f%%\n", k, smp[k, 1], b[k], s[k], 100 * pf[k]
		}
		printf "node: JavaScript frames add %.2f us of BPF and %.2f us of shipper per sample (medians of 3)\n", (b["on"] - b["off"]) / 1000, (s["on"] - s["off"]) / 1000
	}'
