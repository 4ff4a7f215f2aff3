#!/bin/bash
# make bench, Java frames: what walking a HotSpot thread's frames costs the BPF program per
# ON_CPU sample (kernel bpf_stats: run_time_ns / run_cnt), with 64 Java frames on the stack,
# against the same process sampled with native frames only (--python-frames off: no runtime's
# frames read), and the shipper's CPU per sample for both; on both JDKs of this machine
# (Debian's 17, Temurin 25). The workload's 62 calls of down() are kept out of line
# (-XX:CompileCommand=dontinline): 64 frames on the stack, each one the walker steps through
# (compiled frames: a code heap segment map walk each), the walk's worst case per frame.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
DUR=${BENCH_JAVA_SECONDS:-6}
PERIOD_MS=2
DEPTH=64
JDKS=${BENCH_JAVA_JDKS:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64"}
. scripts/bench_lib.sh
bench_setup rover-bench-java

cat > "$work/Deep.java" <<EOF2
public class Deep {
	static long sink;
	static long spin() {
		long x = 0;
		for (int i = 0; i < 100000; i++)
			x += i ^ (x >>> 3);
		return x;
	}
	static long down(int n) {
		if (n > 0)
			return down(n - 1) + 1;
		return spin();
	}
	public static void main(String[] args) {
		System.out.println("ready");
		for (;;)
			sink += down($DEPTH - 3);
	}
}
EOF2
sysctl -q -w kernel.bpf_stats_enabled=1 || true

serve_with_shipper

# The share of samples with Java frames, and the mean count of Deep's frames in them.
SHARE='{ n = $NF; t += n; if ($0 ~ /;Deep\.down /) { p += n
		k = split($0, fr, ";"); d = 0; for (i = 1; i <= k; i++) if (fr[i] ~ /^Deep\./) d++
		fsum += d * n } }
	END { printf "%.3f %.1f", t ? p / t : 0, p ? fsum / p : 0 }'

results=""
for jdk in $JDKS; do
	name=$(basename "$jdk")
	rm -rf "$work/classes"
	"$jdk/bin/javac" -d "$work/classes" "$work/Deep.java"
	"$jdk/bin/java" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Deep::down \
		-cp "$work/classes" Deep > "$work/deep.out" &
	W=$!
	for _ in $(seq 100); do grep -q ready "$work/deep.out" 2>/dev/null && break; sleep 0.1; done
	sleep 2 # down and spin compiled by C2
	rt_rounds "$name" "$SHARE"
	kill "$W"; wait "$W" 2>/dev/null || true
	W=""
done
echo
printf "%s" "$results" | awk "{ print \"  round:\", \$1, \$2, \$4 }"
echo "== Java frames: $DEPTH frames deep, ON_CPU ${DUR} s at $((1000 / PERIOD_MS)) Hz, frames off vs on =="
printf '%s' "$results" | awk '
	function med3(a, b, c) { return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)) }
	{ k = $1 " " $2; n[k]++; smp[k, n[k]] = $3; bpf[k, n[k]] = $4; sh[k, n[k]] = $5 / ($3 ? $3 : 1); pf[k] = $6; fr[k] = $7
	  if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
	END {
		printf "%-26s %-5s %8s %20s %18s %12s %12s\n", "jdk", "frames", "samples", "BPF ns/sample (med)", "shipper ns/sample", "Java frames", "frames/sample"
		for (i = 1; i <= m; i++) {
			k = order[i]; split(k, kk, " ")
			b[k] = med3(bpf[k, 1], bpf[k, 2], bpf[k, 3]); s = med3(sh[k, 1], sh[k, 2], sh[k, 3])
			printf "%-26s %-5s %8d %20d %18.0f %11.1f%% %12.1f\n", kk[1], kk[2], smp[k, 1], b[k], s, 100 * pf[k], fr[k]
		}
		for (i = 2; i <= m; i += 2)
			printf "%s: Java frames add %.2f us of BPF per sample (median of 3)\n", substr(order[i], 1, index(order[i], " ") - 1), (b[order[i]] - b[order[i-1]]) / 1000
	}'
