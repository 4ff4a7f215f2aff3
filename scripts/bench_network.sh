#!/bin/bash
# make bench, NETWORK: what a NETWORK task costs the process it profiles and the ones it does
# not.
#
# nginx on 127.0.0.1 under `wrk -t1 -c4 --latency`, without (A) and with (B) a NETWORK task
# on its worker (`rover serve`, tasks by `rover profile --connect`), in ROUNDS rounds ordered ABBA, so that a machine getting busier
# or quieter meanwhile biases neither side: throughput ratio, p99 added, CPU of nginx per request,
# agent CPU per 1000 requests (cgroup v2 cpu.stat, as bench.sh). In the same rounds, a
# syscall-heavy process that no task targets (tests/programs/sock_writes: 64-byte write + read on
# a unix socketpair and on a 127.0.0.1 TCP connection): its slowdown, by wall clock and by its own
# CPU time per op (its own cgroup), which other load on the machine does not inflate.
#
# Then one more task with kernel.bpf_stats_enabled on (it costs every BPF run two clock reads,
# so it stays off while the rounds measure throughput): BPF ns per request and per traced
# syscall, per run of each program, per syscall of the untargeted process.
#
# BENCH_NETWORK_LONG=1 adds a sustained load: wrk paced to BENCH_NETWORK_LONG_RPS (20000) for
# BENCH_NETWORK_LONG_SECONDS (60) under one task: the peak RSS of every role and the events lost.
#
# One figure a line, `network.<name> <value>`, then a summary against the targets. Every task's
# losses (its report's counters and `rover: lost:` lines) are printed: 0 or counted.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
ROVER=${ROVER:-$B/rover}
DUR=${BENCH_NETWORK_SECONDS:-10}
ROUNDS=${BENCH_NETWORK_ROUNDS:-3}
LONG=${BENCH_NETWORK_LONG:-0}
LONG_DUR=${BENCH_NETWORK_LONG_SECONDS:-60}
LONG_RPS=${BENCH_NETWORK_LONG_RPS:-20000}
CONNS=4
SYS_MS=2000
for v in DUR ROUNDS LONG_DUR LONG_RPS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench: $v must be a positive integer"; exit 1; }
done
. scripts/bench_lib.sh
bench_setup rover-bench-net

for t in nginx wrk bpftool python3; do
	command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] ||
		{ echo "bench: $t is missing: run 'make deps'"; exit 1; }
done
for f in "$ROVER" "$B/tests/programs/sock_writes" "$B/tests/bench/hook_floor"; do
	[ -x "$f" ] || { echo "bench: $f is missing: run 'make bench'"; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)

# stop_pid PID...: SIGTERM, up to 5 s, then SIGKILL. Reaps the ones that are our children.
stop_pid() {
	local p
	for p in "$@"; do kill "$p" 2>/dev/null || true; done
	for p in "$@"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# The task's launcher ($T), whatever of the agent is left in its cgroup, nginx's workers and
# master: all by pid, all started here. bench_cleanup then removes $work and the cgroups.
T="" STATS_WAS="" workers="" FL=""
net_cleanup() {
	[ -z "$T" ] || stop_pid "$T"
	[ -z "$FL" ] || stop_pid "$FL"
	[ -z "$S" ] || stop_pid "$S"
	T="" S=""
	if [ -n "${AG:-}" ] && [ -f "$AG/cgroup.procs" ]; then
		# shellcheck disable=SC2046
		stop_pid $(cat "$AG/cgroup.procs")
	fi
	if [ -n "$W" ]; then
		stop_pid "$W"
		# shellcheck disable=SC2046
		[ -z "$workers" ] || stop_pid $(echo "$workers" | tr , ' ')
	fi
	W=""
	[ -z "$STATS_WAS" ] || sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS" || true
	bench_cleanup
}
trap net_cleanup EXIT

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
NG="$CG/nginx" AG="$CG/agent" SK="$CG/sock"
mkdir -p "$NG" "$AG" "$SK"
( run_in "$NG" "$NGINX" -e "$work/ngx/error.log" -p "$work/ngx" -c "$work/ngx/nginx.conf" \
	2> "$work/ngx/stderr" ) &
W=$!
for _ in $(seq 50); do
	workers=$(pgrep -P "$W" | paste -sd, -) || true
	[ -n "$workers" ] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.1
done
[ -n "$workers" ] || { echo "bench: nginx did not start"; cat "$work/ngx/error.log"; exit 1; }
URL="http://127.0.0.1:$PORT/ok"

# The bench fails rather than print figures of a dead nginx.
nginx_alive() {
	kill -0 "$W" 2>/dev/null && [ -n "$(pgrep -P "$W")" ] && return 0
	echo "bench: nginx exited:"
	tail -n 5 "$work/ngx/error.log"
	exit 1
}

# The agent as it runs in production: `rover serve` in cgroup $AG, tasks handed to it with
# `rover profile --connect` (their launcher in $AG too). The roles' user is one agent's at a
# time: an agent of another bench or test on the machine is waited for, up to 3 minutes.
agent_start() {
	local deadline=$((SECONDS + 180))
	while :; do
		rm -rf "$work/sock"
		( run_in "$AG" "$ROVER" serve --socket-dir "$work/sock" 2> "$work/serve.err" ) &
		S=$!
		for _ in $(seq 100); do
			[ -S "$work/sock/ctl.sock" ] && return 0
			kill -0 "$S" 2>/dev/null || break
			sleep 0.1
		done
		stop_pid "$S"
		S=""
		if ! grep -qs "already runs process" "$work/serve.err" || [ "$SECONDS" -ge "$deadline" ]; then
			echo "bench: rover serve did not start:"
			tail -n 5 "$work/serve.err"
			exit 1
		fi
		sleep 2
	done
}
# task_start NAME SECONDS: a NETWORK task on the nginx worker, its report in $work/NAME.json;
# returns once the worker has attached its programs.
task_start() {
	local n0
	n0=$(grep -c "attached with" "$work/serve.err" || true)
	( run_in "$AG" "$ROVER" profile --connect "$work/sock" --type network --pid "$workers" \
		--duration "$2s" --output "$work/$1.json" 2> "$work/$1.err" ) &
	T=$!
	for _ in $(seq 150); do
		[ "$(grep -c "attached with" "$work/serve.err" || true)" -gt "$n0" ] && return 0
		kill -0 "$T" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench: the NETWORK task $1 did not start within 15 s:"
	tail -n 5 "$work/$1.err" "$work/serve.err"
	exit 1
}
# task_end NAME SECONDS: waits for the task of task_start NAME SECONDS to end, at most 30 s past
# its duration; a task that fails or overstays fails the bench.
task_end() {
	local deadline=$((SECONDS + $2 + 30)) rc=0
	while kill -0 "$T" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
	if kill -0 "$T" 2>/dev/null; then
		echo "bench: the NETWORK task $1 did not end within 30 s of its duration"
		exit 1
	fi
	wait "$T" || rc=$?
	T=""
	if [ "$rc" != 0 ] || [ ! -s "$work/$1.json" ]; then
		echo "bench: the NETWORK task $1 failed ($rc):"
		tail -n 5 "$work/$1.err"
		exit 1
	fi
}
# task_losses NAME: "exchanges syscalls events_lost rover_lost_lines", and every loss counter
# that is not 0 as `network.lost.NAME.COUNTER N` lines into $work/lost. Byte counters (gap
# bytes, payload bytes not delivered) are printed but not added to the events.
task_losses() {
	python3 - "$work/$1.json" "$1" "$work/lost" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
events = 0
with open(sys.argv[3], "a") as out:
    for k, v in sorted(d.get("losses", {}).items()):
        if v:
            out.write("network.lost.%s.%s %d\n" % (sys.argv[2], k, v))
            if not k.endswith("_bytes") and "bytes_" not in k:
                events += v
print(d.get("http_exchanges", 0), d.get("syscalls", 0), events)
EOF
}
rover_lost() { grep -c '^rover: lost:' "$work/$1.err" || true; }

# wrk_run SECONDS [WRK ARGS]: "requests rps p99_ms errors" of one wrk run against nginx.
wrk_run() {
	local d=$1
	shift
	timeout $((d + 30)) wrk -t1 -c"$CONNS" -d"$d"s --latency "$@" "$URL" > "$work/wrk.out" ||
		{ echo "bench: wrk failed:" >&2; cat "$work/wrk.out" >&2; return 1; }
	awk '
		/ requests in / { r = $1 }
		/^Requests\/sec:/ { rps = $2 }
		/Socket errors:/ { gsub(/,/, ""); e += $4 + $6 + $8 + $10 }
		/Non-2xx or 3xx responses:/ { e += $5 }
		$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			p99 = (u == "us" ? v / 1000 : u == "ms" ? v : u == "s" ? v * 1000 : v * 60000) }
		END { printf "%d %.1f %.3f %d\n", r, rps, p99, e }' "$work/wrk.out"
}
# sock_run MODE: "wall_ns cpu_ns" per write + read of sock_writes, which no task targets. The CPU
# figure is its cgroup's usage over its ops (its start-up, a few hundred microseconds, included).
sock_run() {
	local u0 u1 out
	u0=$(cg_usec "$SK")
	out=$( (run_in "$SK" timeout 30 "$B/tests/programs/sock_writes" "$1" "$SYS_MS") )
	u1=$(cg_usec "$SK")
	awk -v o="$out" -v u="$((u1 - u0))" 'BEGIN { n = split(o, f)
		if (n < 4 || f[2] <= 0) { print "bench: sock_writes: " o > "/dev/stderr"; exit 1 }
		printf "%.1f %.1f\n", f[4], u * 1000 / f[2] }'
}
# bpf_progs: "name run_time_ns run_cnt" of every BPF program a rover process of $AG holds (its
# prog_id in the fdinfo of its descriptors: this bpftool shows no pids, and other programs may
# be loaded on the machine meanwhile).
bpf_progs() {
	local ids p
	ids=$(for p in $(cat "$AG/cgroup.procs" 2>/dev/null); do
		case "$(cat /proc/"$p"/comm 2>/dev/null)" in rover*) ;; *) continue ;; esac
		cat /proc/"$p"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ { print $2 }'
	done | sort -u | paste -sd, -)
	"$BPFTOOL" -j prog show 2>/dev/null | python3 -c '
import json, sys
ids = set(int(i) for i in sys.argv[1].split(",") if i)
try:
    progs = json.load(sys.stdin)
except ValueError:
    progs = []
for p in progs:
    if p.get("id") in ids:
        print(p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$ids"
}
role_of() {
	case "$1" in
	rover) echo launcher ;;
	rover-superviso*) echo supervisor ;;
	rover-shipper) echo shipper ;;
	rover-worker) echo worker ;;
	*) echo "$1" ;;
	esac
}

echo
echo "== network: nginx under wrk -t1 -c$CONNS, $ROUNDS rounds of ${DUR} s without and with a" \
	"NETWORK task on its worker (ABBA) =="

# Is there a NETWORK task at all? A rover without one refuses the type; one that has it runs a
# one-second task (which warms the page cache up, too).
agent_start
if ! ( run_in "$AG" "$ROVER" profile --connect "$work/sock" --type network --pid "$workers" \
	--duration 1s --output "$work/probe.json" 2> "$work/probe.err" ); then
	if grep -q "bad --type" "$work/probe.err"; then
		echo "network: not available ($(grep -m1 "bad --type" "$work/probe.err"))"
		exit 0
	fi
	echo "bench: the first NETWORK task failed:"
	tail -n 5 "$work/probe.err" "$work/serve.err"
	exit 1
fi
: > "$work/lost"
: > "$work/rounds"
TASK_S=$((DUR + 2 * SYS_MS / 1000 + 8))

# One side of a round: wrk, then the process no task targets, unix then tcp. One line a side:
# side requests rps p99 errors nginx_us agent_us unix_wall unix_cpu tcp_wall tcp_cpu
#      exchanges syscalls lost lost_lines
side() {
	local name=$1 n0 n1 a0 a1 su sc ex=0 sy=0 lo=0 ll=0
	if [ "$name" = B ]; then
		task_start "round$r" "$TASK_S"
	fi
	n0=$(cg_usec "$NG") a0=$(cg_usec "$AG")
	read -r req rps p99 err < <(wrk_run "$DUR")
	n1=$(cg_usec "$NG") a1=$(cg_usec "$AG")
	nginx_alive
	[ "$req" -gt 0 ] || { echo "bench: wrk counted no requests"; cat "$work/wrk.out"; exit 1; }
	su=$(sock_run unix)
	sc=$(sock_run tcp)
	if [ "$name" = B ]; then
		rss_now "$AG" > "$work/round$r.rss" # the worker is still there: its peak so far
		task_end "round$r" "$TASK_S"
		read -r ex sy lo < <(task_losses "round$r")
		ll=$(rover_lost "round$r")
	fi
	echo "$name $req $rps $p99 $err $((n1 - n0)) $((a1 - a0)) $su $sc $ex $sy $lo $ll" >> "$work/rounds"
}
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then side A; side B; else side B; side A; fi
	tail -n 2 "$work/rounds" | sort | awk -v r="$r" '{ x[NR] = $3; e[NR] = $9 }
		END { printf "bench: round %d: %.0f req/s without, %.0f with (%.3f); sock_writes unix %.0f / %.0f ns CPU\n",
			r, x[1], x[2], x[2] / x[1], e[1], e[2] }' >&2
done

# The hooks' floor: empty programs on the same tracepoints (tests/bench/hook_floor), no rover
# task. What the untargeted process and wrk lose with them is what any agent hooked there
# loses before its program does anything: the part of the figures above rover cannot remove.
floor_rows=""
for k in $(seq "$ROUNDS"); do
	read -r _ _ fa_rps _ < <(wrk_run "$DUR")
	fa_u=$(sock_run unix)
	"$B/tests/bench/hook_floor" $((DUR + 2 * SYS_MS / 1000 + 10)) > "$work/floor.out" 2>&1 &
	FL=$!
	for _ in $(seq 50); do grep -qs attached "$work/floor.out" && break; sleep 0.1; done
	grep -qs attached "$work/floor.out" || { echo "bench: hook_floor:"; cat "$work/floor.out"; exit 1; }
	read -r _ _ ff_rps _ < <(wrk_run "$DUR")
	ff_u=$(sock_run unix)
	stop_pid "$FL"
	FL=""
	floor_rows="$floor_rows$fa_rps ${fa_u#* } $ff_rps ${ff_u#* }
"
done
printf "%s" "$floor_rows" > "$work/floor"

# BPF time: one more task, with the kernel's program stats on. [wrk] is the loaded window
# (nginx's calls, traced, and wrk's, not); [idle] the untargeted process alone.
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -q -w kernel.bpf_stats_enabled=1
r=stats
task_start stats "$((DUR + SYS_MS / 1000 + 8))"
bpf_progs > "$work/bpf0"
read -r sreq _ _ _ < <(wrk_run "$DUR")
bpf_progs > "$work/bpf1"
sock_run unix > /dev/null
bpf_progs > "$work/bpf2"
task_end stats "$((DUR + SYS_MS / 1000 + 8))"
sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS"
STATS_WAS=""
read -r _ ssy slo < <(task_losses stats)
sll=$(rover_lost stats)
echo "S $sreq $ssy $slo $sll" > "$work/stats"

# The sustained load: wrk paced by a 1 ms delay a request per connection, in 10 s runs under
# one task; each run's connections are the last run's scaled to LONG_RPS (the first from three 2 s
# calibration runs), as what a connection achieves moves with the machine's other load.
pace() {
	awk -v c="$CONNS" -v r="$1" -v t="$LONG_RPS" 'BEGIN { c = int(c * t / (r > 0 ? r : 1) + 0.5)
		print (c < 1 ? 1 : c > 400 ? 400 : c) }'
}
if [ "$LONG" = 1 ]; then
	echo 'function delay() return 1 end' > "$work/pace.lua"
	CONNS=16
	for _ in 1 2 3; do
		read -r _ crps _ _ < <(wrk_run 2 -s "$work/pace.lua")
		CONNS=$(pace "$crps")
	done
	r=long
	task_start long "$((LONG_DUR + 8))"
	a0=$(cg_usec "$AG")
	lreq=0 lp99=0 lerr=0 left=$LONG_DUR lconns=""
	while [ "$left" -gt 0 ]; do
		d=$((left < 10 ? left : 10))
		read -r q qrps qp99 qerr < <(wrk_run "$d" -s "$work/pace.lua")
		nginx_alive
		lconns="$lconns${lconns:+,}$CONNS"
		lreq=$((lreq + q)) lerr=$((lerr + qerr)) left=$((left - d))
		lp99=$(awk -v a="$lp99" -v b="$qp99" 'BEGIN { print (a > b ? a : b) }')
		CONNS=$(pace "$qrps")
	done
	a1=$(cg_usec "$AG")
	rss_now "$AG" > "$work/long.rss"
	lrps=$(awk -v n="$lreq" -v d="$LONG_DUR" 'BEGIN { printf "%.1f", n / d }')
	task_end long "$((LONG_DUR + 8))"
	read -r lex lsy llo < <(task_losses long)
	lll=$(rover_lost long)
	CONNS=4
fi

# Figures.
awk -v dur="$DUR" '
	$1 == "A" { n0++; r0 += $2; s0 += $3; l0 += $4; e0 += $5; ng0 += $6; uw0 += $8; uc0 += $9; tw0 += $10; tc0 += $11 }
	$1 == "B" { n1++; r1 += $2; s1 += $3; l1 += $4; e1 += $5; ng1 += $6; ag1 += $7; uw1 += $8; uc1 += $9; tw1 += $10; tc1 += $11
		ex1 += $12; sy1 += $13; lo1 += $14; ll1 += $15 }
	END {
		printf "network.rounds %d\n", n0
		printf "network.baseline_rps %.1f\n", s0 / n0
		printf "network.task_rps %.1f\n", s1 / n1
		printf "network.throughput_ratio %.4f\n", s1 / s0
		printf "network.baseline_p99_ms %.3f\n", l0 / n0
		printf "network.task_p99_ms %.3f\n", l1 / n1
		printf "network.p99_added_ms %.3f\n", (l1 - l0) / n0
		printf "network.wrk_errors %d\n", e0 + e1
		printf "network.nginx_cpu_us_per_request %.3f\n", ng0 / r0
		printf "network.nginx_cpu_us_per_request_task %.3f\n", ng1 / r1
		printf "network.nginx_cpu_ratio %.4f\n", (ng1 / r1) / (ng0 / r0)
		printf "network.agent_cpu_ms_per_1000_requests %.3f\n", (ag1 / 1000) / (r1 / 1000)
		printf "network.agent_cpu_percent_of_core %.2f\n", 100 * ag1 / 1e6 / (dur * n1)
		printf "network.task_requests %d\n", r1
		printf "network.task_http_exchanges %d\n", ex1
		printf "network.task_syscalls_traced %d\n", sy1
		printf "network.task_syscalls_per_request %.3f\n", sy1 / r1
		printf "network.events_lost %d\n", lo1
		printf "network.rover_lost_lines %d\n", ll1
		printf "network.untargeted_unix_ns_per_op %.1f\n", uw0 / n0
		printf "network.untargeted_unix_ns_per_op_task %.1f\n", uw1 / n1
		printf "network.untargeted_unix_slowdown %.4f\n", uw1 / uw0
		printf "network.untargeted_unix_cpu_ns_per_op %.1f\n", uc0 / n0
		printf "network.untargeted_unix_cpu_ns_per_op_task %.1f\n", uc1 / n1
		printf "network.untargeted_unix_cpu_slowdown %.4f\n", uc1 / uc0
		printf "network.untargeted_tcp_ns_per_op %.1f\n", tw0 / n0
		printf "network.untargeted_tcp_ns_per_op_task %.1f\n", tw1 / n1
		printf "network.untargeted_tcp_slowdown %.4f\n", tw1 / tw0
		printf "network.untargeted_tcp_cpu_ns_per_op %.1f\n", tc0 / n0
		printf "network.untargeted_tcp_cpu_ns_per_op_task %.1f\n", tc1 / n1
		printf "network.untargeted_tcp_cpu_slowdown %.4f\n", tc1 / tc0
	}' "$work/rounds" > "$work/figures"
# Each round's own ratio: how far apart the rounds are says how far to trust the mean.
awk '$1 == "A" { a[++na] = $3; ua[na] = $9 } $1 == "B" { b[++nb] = $3; ub[nb] = $9 }
	END { for (i = 1; i <= na; i++) {
		printf "network.round%d.throughput_ratio %.4f\n", i, b[i] / a[i]
		printf "network.round%d.untargeted_unix_cpu_slowdown %.4f\n", i, ub[i] / ua[i] } }' \
	"$work/rounds" >> "$work/figures"
# BPF: per program over the wrk window, then per syscall of the untargeted process (an enter
# and an exit run each); traced syscalls are the stats task's, all in the wrk window.
python3 - "$work/bpf0" "$work/bpf1" "$work/bpf2" "$sreq" "$ssy" >> "$work/figures" <<'EOF'
import sys
def load(f):
    d = {}
    for line in open(f):
        n, ns, c = line.split()
        a = d.setdefault(n, [0, 0])
        a[0] += int(ns); a[1] += int(c)
    return d
s0, s1, s2 = (load(f) for f in sys.argv[1:4])
req, traced = int(sys.argv[4]), int(sys.argv[5])
def delta(a, b):
    return {n: (b[n][0] - a.get(n, [0, 0])[0], b[n][1] - a.get(n, [0, 0])[1]) for n in b}
w, i = delta(s0, s1), delta(s1, s2)
ns = sum(v[0] for v in w.values())
for n, (t, c) in sorted(w.items()):
    if c:
        print("network.bpf_ns_per_run.%s %.0f" % (n, t / c))
        print("network.bpf_runs_per_request.%s %.2f" % (n, c / max(req, 1)))
print("network.bpf_ns_per_request %.0f" % (ns / max(req, 1)))
print("network.bpf_ns_per_traced_syscall %.0f" % (ns / max(traced, 1)))
for n, (t, c) in sorted(i.items()):
    if c and n.startswith(("net_enter", "net_exit")):
        print("network.bpf_ns_per_untargeted_run.%s %.0f" % (n, t / c))
sys_ = [v for n, v in i.items() if n.startswith("net_enter")]
it = sum(v[0] for n, v in i.items() if n.startswith(("net_enter", "net_exit")))
ic = sum(v[1] for v in sys_)
print("network.bpf_ns_per_untargeted_syscall %.0f" % (it / max(ic, 1)))
EOF
awk '{ printf "network.stats_task_events_lost %d\nnetwork.stats_task_rover_lost_lines %d\n", $4, $5 }' \
	"$work/stats" >> "$work/figures"
awk '{ r0 += $1; u0 += $2; r1 += $3; u1 += $4 }
	END { printf "network.floor_throughput_ratio %.4f\n", r1 / r0
	      printf "network.floor_untargeted_unix_cpu_slowdown %.4f\n", u1 / u0 }' \
	"$work/floor" >> "$work/figures"
for f in "$work"/round*.rss; do cat "$f"; done | sort -k1,1 -k2,2nr |
	awk '!seen[$1]++' | while read -r n kb; do
		echo "network.peak_rss_kb.$(role_of "$n") $kb"
	done >> "$work/figures"
if [ "$LONG" = 1 ]; then
	{
		echo "network.long_seconds $LONG_DUR"
		echo "network.long_connections ${lconns##*,}"
		echo "network.long_requests $lreq"
		echo "network.long_rps $lrps"
		echo "network.long_p99_ms_worst_10s $lp99"
		echo "network.long_wrk_errors $lerr"
		echo "network.long_http_exchanges $lex"
		echo "network.long_syscalls_traced $lsy"
		echo "network.long_events_lost $llo"
		echo "network.long_rover_lost_lines $lll"
		awk -v u="$((a1 - a0))" -v d="$LONG_DUR" -v r="$lreq" 'BEGIN {
			printf "network.long_agent_cpu_percent_of_core %.2f\n", 100 * u / 1e6 / d
			printf "network.long_agent_cpu_ms_per_1000_requests %.3f\n", (u / 1000) / (r / 1000) }'
		sort -k2,2nr "$work/long.rss" | while read -r n kb; do
			echo "network.long_peak_rss_kb.$(role_of "$n") $kb"
		done
	} >> "$work/figures"
fi
cat "$work/figures" "$work/lost"
grep -h '^rover: lost:' "$work"/round*.err "$work/stats.err" "$work/long.err" 2>/dev/null || true

# Summary against the issue's targets.
echo
awk -v long="$LONG" '{ v[$1] = $2 }
	function ok(c) { return c ? "ok" : "MISSED" }
	END {
		loss = 100 * (1 - v["network.throughput_ratio"])
		printf "network: nginx %.0f -> %.0f req/s with the task: %.1f%% lost (target <= 3%%: %s), p99 %+.3f ms\n",
			v["network.baseline_rps"], v["network.task_rps"], loss, ok(loss <= 3), v["network.p99_added_ms"]
		printf "network: nginx CPU per request x%.3f; agent %.3f ms CPU per 1000 requests (%.1f%% of a core)\n",
			v["network.nginx_cpu_ratio"], v["network.agent_cpu_ms_per_1000_requests"],
			v["network.agent_cpu_percent_of_core"]
		printf "network: BPF %d ns per request, %d ns per traced syscall, %d ns per untargeted syscall\n",
			v["network.bpf_ns_per_request"], v["network.bpf_ns_per_traced_syscall"],
			v["network.bpf_ns_per_untargeted_syscall"]
		u = 100 * (v["network.untargeted_unix_cpu_slowdown"] - 1)
		t = 100 * (v["network.untargeted_tcp_cpu_slowdown"] - 1)
		printf "network: untargeted process, CPU per op: unix %+.1f%%, tcp %+.1f%% (target <= 1%%: %s); wall clock %+.1f%%, %+.1f%%\n",
			u, t, ok(u <= 1 && t <= 1), 100 * (v["network.untargeted_unix_slowdown"] - 1),
			100 * (v["network.untargeted_tcp_slowdown"] - 1)
		printf "network: the hooks alone (empty programs on the same tracepoints, no task): throughput x%.3f, untargeted unix %+.1f%%: rover cannot go below that\n",
			v["network.floor_throughput_ratio"], 100 * (v["network.floor_untargeted_unix_cpu_slowdown"] - 1)
		lost = v["network.events_lost"] + v["network.stats_task_events_lost"] + v["network.long_events_lost"]
		lines = v["network.rover_lost_lines"] + v["network.stats_task_rover_lost_lines"] + v["network.long_rover_lost_lines"]
		printf "network: events lost %d, rover: lost: lines %d (target 0 or counted: %s)\n", lost, lines, "ok"
		printf "network: peak RSS kB: launcher %d, supervisor %d, shipper %d, worker %d\n",
			v["network.peak_rss_kb.launcher"], v["network.peak_rss_kb.supervisor"],
			v["network.peak_rss_kb.shipper"], v["network.peak_rss_kb.worker"]
		if (long == 1)
			printf "network: %d s at %.0f req/s: peak RSS kB launcher %d, supervisor %d, shipper %d, worker %d; agent %.1f%% of a core\n",
				v["network.long_seconds"], v["network.long_rps"], v["network.long_peak_rss_kb.launcher"],
				v["network.long_peak_rss_kb.supervisor"], v["network.long_peak_rss_kb.shipper"],
				v["network.long_peak_rss_kb.worker"], v["network.long_agent_cpu_percent_of_core"]
		else
			print "network: the sustained 20k req/s, 60 s RSS run is off (BENCH_NETWORK_LONG=1 runs it)"
	}' "$work/figures"
