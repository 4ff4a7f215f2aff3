#!/bin/bash
# make bench, NETWORK: what a NETWORK task costs the process it profiles and the ones it does
# not. nginx on 127.0.0.1 under `wrk -t1 -c4 --latency`, without and then with
# `rover profile --type network` on its worker: throughput ratio, p99 added, agent CPU per 1000
# requests (cgroup v2 cpu.stat, as bench.sh), in-kernel BPF time per request (bpf_stats, charged
# to nginx), peak RSS of every rover process; then a syscall-heavy process that no task targets
# (tests/programs/sock_writes: 64-byte write + read on a unix socketpair and on a 127.0.0.1 TCP
# connection) without and with the task on: its slowdown. One figure a line:
# `network.<name> <value>`. Until rover has NETWORK it prints "network: not available".
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
ROVER=${ROVER:-$B/rover}
DUR=${BENCH_NETWORK_SECONDS:-10}
CONNS=4
SYS_MS=2000
. scripts/bench_lib.sh
bench_setup rover-bench-net

# bench_cleanup stops $W and $S without waiting: nginx is stopped and waited for first, so
# that it writes nothing into $work while it goes.
T=""
net_cleanup() {
	[ -n "$T" ] && kill "$T" 2>/dev/null && wait "$T" 2>/dev/null
	if [ -n "$W" ]; then
		kill "$W" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$W" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$W" 2>/dev/null || true
		wait "$W" 2>/dev/null || true
	fi
	W=""
	bench_cleanup
}
trap net_cleanup EXIT

for t in nginx wrk; do
	command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] ||
		{ echo "bench: $t is missing: run 'make deps'"; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# A port in 18080-18099 that nothing answers on, from an offset taken from our pid: other
# benches and tests on the machine use the same range.
PORT=""
for i in $(seq 0 19); do
	p=$((18080 + ($$ + i) % 20))
	(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { PORT=$p; break; }
done
[ -n "$PORT" ] || { echo "bench: no free port in 18080-18099"; exit 1; }

mkdir -p "$work/ngx"
cat > "$work/ngx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $work/ngx/nginx.pid;
error_log $work/ngx/error.log notice;
events { worker_connections 512; }
http {
	access_log off;
	client_body_temp_path $work/ngx/body;
	proxy_temp_path $work/ngx/proxy;
	fastcgi_temp_path $work/ngx/fastcgi;
	uwsgi_temp_path $work/ngx/uwsgi;
	scgi_temp_path $work/ngx/scgi;
	server {
		listen 127.0.0.1:$PORT;
		location = /ok { return 200 "ok\n"; }
		location / { return 404; }
	}
}
EOF
"$NGINX" -e "$work/ngx/error.log" -p "$work/ngx" -c "$work/ngx/nginx.conf" 2> "$work/ngx/stderr" &
W=$!
workers=""
for _ in $(seq 50); do
	workers=$(pgrep -P "$W" | paste -sd, -) || true
	[ -n "$workers" ] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.1
done
[ -n "$workers" ] || { echo "bench: nginx did not start"; cat "$work/ngx/error.log"; exit 1; }
URL="http://127.0.0.1:$PORT/ok"

echo
echo "== network: nginx under wrk -t1 -c$CONNS, ${DUR} s, without and with a NETWORK task on its worker =="

# Is there a NETWORK task at all? A one-second one says.
if ! "$ROVER" profile --type network --pid "$workers" --duration 1s --output "$work/probe.txt" \
	2> "$work/probe.err"; then
	echo "network: not available ($(grep -m1 -v ': info: ' "$work/probe.err" || true))"
	exit 0
fi

# wrk_run SECONDS: "requests rps p99_ms" of one wrk run against nginx.
wrk_run() {
	wrk -t1 -c"$CONNS" -d"$1"s --latency "$URL" | awk '
		/ requests in / { r = $1 }
		/^Requests\/sec:/ { rps = $2 }
		$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			p99 = (u == "us" ? v / 1000 : u == "ms" ? v : u == "s" ? v * 1000 : v * 60000) }
		END { printf "%d %.1f %.3f\n", r, rps, p99 }'
}
# sock_run MODE: ns per write + read of the process no task targets.
sock_run() { "$B/tests/programs/sock_writes" "$1" "$SYS_MS" | awk '{ print $4 }'; }
# BPF program time (ns) and runs, by the kernel's bpf_stats, of every program a rover process of
# cgroup $1 holds (prog_id in the fdinfo of its descriptors: this bpftool shows no pids, and
# other programs may be loaded on the machine meanwhile): "ns runs".
bpf_time() {
	local ids
	ids=$(for p in $(find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null); do
		case "$(cat /proc/"$p"/comm 2>/dev/null)" in rover*) ;; *) continue ;; esac
		cat /proc/"$p"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ { print $2 }'
	done | sort -u | paste -sd, -)
	bpftool -j prog show 2>/dev/null | /usr/bin/python3 -c '
import json, sys
ids = set(int(i) for i in sys.argv[1].split(",") if i)
try:
    progs = json.load(sys.stdin)
except ValueError:
    progs = []
ns = runs = 0
for p in progs:
    if p.get("id") in ids:
        ns += p.get("run_time_ns", 0)
        runs += p.get("run_cnt", 0)
print(ns, runs)' "$ids"
}
# The bench fails rather than print figures of a dead nginx.
nginx_alive() {
	kill -0 "$W" 2>/dev/null && [ -n "$(pgrep -P "$W")" ] && return 0
	echo "bench: nginx exited:"
	tail -n 5 "$work/ngx/error.log"
	exit 1
}
sysctl -q -w kernel.bpf_stats_enabled=1 || true

# 1. Without the task. wrk runs once before the task and once after it: the baseline is their
#    mean, so that a machine getting busier or quieter meanwhile biases neither way.
sock_unix0=$(sock_run unix)
sock_tcp0=$(sock_run tcp)
read -r req0a rps0a p990a < <(wrk_run "$DUR")
nginx_alive

# 2. With it: warm-up until the worker says it runs (at most 10 s), then the same wrk, then the
#    process it does not target. The task lasts long enough for all of that.
AG="$CG/agent"
mkdir -p "$AG"
watch_rss "$AG" "$work/agent.done" > "$work/agent.rss" &
RW=$!
( run_in "$AG" "$ROVER" profile --type network --pid "$workers" \
	--duration "$((DUR + 2 * SYS_MS / 1000 + 14))s" --output "$work/net.txt" 2> "$work/net.err" ) &
T=$!
for _ in $(seq 100); do grep -qs "running in worker" "$work/net.err" && break; sleep 0.1; done
sleep 1
read -r b0 n0 < <(bpf_time "$AG")
u0=$(cg_usec "$AG")
read -r req1 rps1 p991 < <(wrk_run "$DUR")
nginx_alive
u1=$(cg_usec "$AG")
read -r b1 n1 < <(bpf_time "$AG")
sock_unix1=$(sock_run unix)
sock_tcp1=$(sock_run tcp)
task_ok=1
kill -0 "$T" 2>/dev/null || task_ok=0
wait "$T" || task_ok=0
T=""
touch "$work/agent.done"
wait "$RW" || true
[ "$task_ok" = 1 ] || { echo "bench: the NETWORK task ended early or failed:"; tail -n 5 "$work/net.err"; }
read -r req0b rps0b p990b < <(wrk_run "$DUR")
nginx_alive
read -r req0 rps0 p990 < <(awk -v a="$req0a $rps0a $p990a" -v b="$req0b $rps0b $p990b" 'BEGIN {
	split(a, x); split(b, y); printf "%d %.1f %.3f\n", (x[1] + y[1]) / 2, (x[2] + y[2]) / 2, (x[3] + y[3]) / 2 }')

awk -v r0="$req0" -v s0="$rps0" -v sa="$rps0a" -v sb="$rps0b" -v l0="$p990" -v r1="$req1" -v s1="$rps1" -v l1="$p991" \
	-v u="$((u1 - u0))" -v d="$DUR" -v b="$((b1 - b0))" -v n="$((n1 - n0))" 'BEGIN {
	printf "network.baseline_requests %d\n", r0
	printf "network.baseline_rps_before %.1f\n", sa
	printf "network.baseline_rps_after %.1f\n", sb
	printf "network.baseline_rps %.1f\n", s0
	printf "network.baseline_p99_ms %.3f\n", l0
	printf "network.task_requests %d\n", r1
	printf "network.task_rps %.1f\n", s1
	printf "network.task_p99_ms %.3f\n", l1
	printf "network.throughput_ratio %.3f\n", (s0 > 0 ? s1 / s0 : 0)
	printf "network.p99_added_ms %.3f\n", l1 - l0
	printf "network.agent_cpu_ms_per_1000_requests %.3f\n", (r1 > 0 ? (u / 1000) / (r1 / 1000) : 0)
	printf "network.agent_cpu_percent_of_core %.3f\n", 100 * u / 1e6 / d
	printf "network.bpf_ns_per_request %.0f\n", (r1 > 0 ? b / r1 : 0)
	printf "network.bpf_ns_per_run %.0f\n", (n > 0 ? b / n : 0)
}'
sort -k1,1 -k2,2nr "$work/agent.rss" | awk '!seen[$1]++ { printf "network.peak_rss_kb.%s %d\n", $1, $2 }'
awk -v a0="$sock_unix0" -v a1="$sock_unix1" -v t0="$sock_tcp0" -v t1="$sock_tcp1" 'BEGIN {
	printf "network.untargeted_unix_ns_per_op %.1f\n", a0
	printf "network.untargeted_unix_ns_per_op_task %.1f\n", a1
	printf "network.untargeted_unix_slowdown %.3f\n", (a0 > 0 ? a1 / a0 : 0)
	printf "network.untargeted_tcp_ns_per_op %.1f\n", t0
	printf "network.untargeted_tcp_ns_per_op_task %.1f\n", t1
	printf "network.untargeted_tcp_slowdown %.3f\n", (t0 > 0 ? t1 / t0 : 0)
}'
echo "network.task_ok $task_ok"
