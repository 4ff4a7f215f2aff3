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
# BENCH_NETWORK_PERF=FILE records `perf record -a -g` of the whole machine into FILE over one more
# task under wrk (a window of its own, after the measured ones): where a traced call's time goes,
# by the BPF programs' JIT symbols and the helpers they call (`perf report --no-children
# --sort sym -i FILE`).
#
# BENCH_NETWORK_BPF_ONLY=1 runs the BPF window alone (no throughput rounds, no floor): the
# figures of one program build, for A/B runs of two builds one after the other.
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
PERF_OUT=${BENCH_NETWORK_PERF:-}
BPF_ONLY=${BENCH_NETWORK_BPF_ONLY:-0}
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
. scripts/bench_network_lib.sh

net_port
NG="$CG/nginx" AG="$CG/agent" SK="$CG/sock"
mkdir -p "$NG" "$AG" "$SK"
nginx_start "listen 127.0.0.1:$PORT;" "access_log off;"
URL="http://127.0.0.1:$PORT/ok"

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

echo
echo "== network: nginx under wrk -t1 -c$CONNS, $ROUNDS rounds of ${DUR} s without and with a" \
	"NETWORK task on its worker (ABBA) =="

network_available
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
	[ "$BPF_ONLY" != 1 ] || break
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
	[ "$BPF_ONLY" != 1 ] || break
	read -r _ _ fa_rps _ < <(wrk_run "$DUR")
	fa_u=$(sock_run unix)
	"$B/tests/bench/hook_floor" $((DUR + 2 * SYS_MS / 1000 + 10)) > "$work/floor.out" 2>&1 &
	BG=$!
	for _ in $(seq 50); do grep -qs attached "$work/floor.out" && break; sleep 0.1; done
	grep -qs attached "$work/floor.out" || { echo "bench: hook_floor:"; cat "$work/floor.out"; exit 1; }
	read -r _ _ ff_rps _ < <(wrk_run "$DUR")
	ff_u=$(sock_run unix)
	stop_pid "$BG"
	BG=""
	floor_rows="$floor_rows$fa_rps ${fa_u#* } $ff_rps ${ff_u#* }
"
done
printf "%s" "$floor_rows" > "$work/floor"

# BPF time: one more task, with the kernel's program stats on. [wrk] is the loaded window
# (nginx's calls, traced, and wrk's, not); [idle] the untargeted process alone.
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -q -w kernel.bpf_stats_enabled=1
r=stats
nread0=$(grep -c "NETWORK read" "$work/serve.err" || true)
task_start stats "$((DUR + SYS_MS / 1000 + 8))"
bpf_progs > "$work/bpf0"
read -r sreq _ _ _ < <(wrk_run "$DUR")
bpf_progs > "$work/bpf1"
sock_run unix > /dev/null
bpf_progs > "$work/bpf2"
task_end stats "$((DUR + SYS_MS / 1000 + 8))"
# The floor under the same stats: the empty programs of tests/bench/hook_floor on the same
# tracepoints, no task, wrk alike. Each run there is the tracepoint's call into a program and
# the stats' two clock reads (sched_clock: a pvclock read on this VM), which every rover run
# pays too: what is rover's own is the rest.
"$B/tests/bench/hook_floor" $((DUR + 10)) > "$work/floor.out" 2>&1 &
BG=$!
for _ in $(seq 50); do grep -qs attached "$work/floor.out" && break; sleep 0.1; done
grep -qs attached "$work/floor.out" || { echo "bench: hook_floor:"; cat "$work/floor.out"; exit 1; }
bpf_progs_of "$BG" > "$work/floor0"
read -r freq _ _ _ < <(wrk_run "$DUR")
bpf_progs_of "$BG" > "$work/floor1"
stop_pid "$BG"
BG=""
sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS"
STATS_WAS=""
read -r _ ssy slo < <(task_losses stats)
sll=$(rover_lost stats)
echo "S $sreq $ssy $slo $sll" > "$work/stats"
# What the worker read from its ring in that task (its last line, when it exits): records,
# bytes and the reads that found any, per request and per second of the task.
for _ in $(seq 50); do
	[ "$(grep -c "NETWORK read" "$work/serve.err" || true)" -gt "$nread0" ] && break
	sleep 0.1
done
grep "NETWORK read" "$work/serve.err" | tail -n 1 | sed 's/.* read \([0-9]*\) records (\([0-9]*\) bytes) .* in \([0-9]*\) reads/\1 \2 \3/' |
	awk -v req="$sreq" -v secs="$((DUR + SYS_MS / 1000 + 8))" 'NF == 3 {
		printf "network.ring_records_per_request %.2f\n", $1 / (req > 0 ? req : 1)
		printf "network.ring_bytes_per_request %.1f\n", $2 / (req > 0 ? req : 1)
		printf "network.worker_reads_per_second %.1f\n", $3 / secs }' > "$work/ring"

# The profile: the whole machine under one more task and wrk (perf report --no-children -i FILE).
if [ -n "$PERF_OUT" ]; then
	r=perf
	task_start perf "$((DUR + 8))"
	perf record -q -a -g -F 4999 -o "$PERF_OUT" 2> "$work/perf.err" &
	PERF=$!
	BG="$BG $PERF"
	sleep 0.5
	read -r preq _ _ _ < <(wrk_run "$DUR")
	kill -INT "$PERF" 2>/dev/null || true
	wait "$PERF" 2>/dev/null || true
	BG=""
	task_end perf "$((DUR + 8))"
	task_losses perf > /dev/null
	echo "bench: perf record -a -g over a task of $preq requests: $PERF_OUT" >&2
fi

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

# BPF: per program over the wrk window, then per run of the untargeted process (a send and a
# receive run each op with the socket hooks, an enter and an exit with the syscall hooks);
# traced syscalls are the stats task's, all in the wrk window. The window's runs that were not
# traced calls (wrk's own, which are not the task's) cost what the untargeted process's runs
# cost: taken off, the rest is the traced calls' (bpf_ns_per_traced_call).
python3 - "$work/bpf0" "$work/bpf1" "$work/bpf2" "$sreq" "$ssy" "$work/floor0" "$work/floor1" \
	"$freq" > "$work/bpf_figures" <<'EOF'
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
data = ("net_enter", "net_exit", "net_send", "net_recv")
for n, (t, c) in sorted(i.items()):
    if c and n.startswith(data):
        print("network.bpf_ns_per_untargeted_run.%s %.0f" % (n, t / c))
it = sum(v[0] for n, v in i.items() if n.startswith(data))
ic = sum(v[1] for n, v in i.items() if n.startswith(data))
ops = sum(v[1] for n, v in i.items() if n.startswith(("net_enter", "net_send")))
print("network.bpf_ns_per_untargeted_syscall %.0f" % (it / max(ops, 1)))
# The traced calls' own: the socket programs' time in the wrk window less its untraced runs.
wt = sum(v[0] for n, v in w.items() if n.startswith(("net_send", "net_recv")))
wc = sum(v[1] for n, v in w.items() if n.startswith(("net_send", "net_recv")))
if traced and ic and wc >= traced:
    print("network.bpf_untraced_runs_per_request %.2f" % ((wc - traced) / max(req, 1)))
    print("network.bpf_ns_per_traced_call %.0f" % ((wt - (wc - traced) * it / ic) / traced))
f = delta(load(sys.argv[6]), load(sys.argv[7]))
freq = int(sys.argv[8])
fns = sum(v[0] for v in f.values())
fc = sum(v[1] for v in f.values())
if freq and fc:
    print("network.bpf_floor_runs_per_request %.2f" % (fc / freq))
    print("network.bpf_floor_ns_per_run %.0f" % (fns / fc))
    print("network.bpf_floor_ns_per_request %.0f" % (fns / freq))
    print("network.bpf_rover_ns_per_request %.0f" % (ns / max(req, 1) - fns / freq))
EOF
# BENCH_NETWORK_BPF_ONLY: the BPF window's figures alone.
if [ "$BPF_ONLY" = 1 ]; then
	cat "$work/bpf_figures" "$work/ring" "$work/lost"
	awk '{ printf "network.stats_task_events_lost %d\nnetwork.stats_task_rover_lost_lines %d\n", $4, $5 }' \
		"$work/stats"
	awk '{ v[$1] = $2 } END {
		printf "network: BPF %d ns per request (target <= 800: %s), %d ns per traced call, %d ns per untargeted syscall\n",
			v["network.bpf_ns_per_request"], v["network.bpf_ns_per_request"] <= 800 ? "ok" : "MISSED",
			v["network.bpf_ns_per_traced_call"], v["network.bpf_ns_per_untargeted_syscall"]
		printf "network: the floor (empty programs, same hooks, same stats): %d ns per request; rover'"'"'s own %d ns\n",
			v["network.bpf_floor_ns_per_request"], v["network.bpf_rover_ns_per_request"] }' \
		"$work/bpf_figures"
	exit 0
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
cat "$work/bpf_figures" >> "$work/figures"
awk '{ printf "network.stats_task_events_lost %d\nnetwork.stats_task_rover_lost_lines %d\n", $4, $5 }' \
	"$work/stats" >> "$work/figures"
cat "$work/ring" >> "$work/figures"
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
		printf "network: BPF %d ns per request (target <= 800: %s), %d ns per traced syscall, %d ns per untargeted syscall\n",
			v["network.bpf_ns_per_request"], ok(v["network.bpf_ns_per_request"] <= 800),
			v["network.bpf_ns_per_traced_syscall"], v["network.bpf_ns_per_untargeted_syscall"]
		printf "network: BPF floor (empty programs on the same hooks, under the same stats) %d ns per request: rover'"'"'s own %d ns, %d per traced call\n",
			v["network.bpf_floor_ns_per_request"], v["network.bpf_rover_ns_per_request"],
			v["network.bpf_ns_per_traced_call"]
		printf "network: the ring: %.2f records and %.0f bytes per request, %.1f worker reads a second\n",
			v["network.ring_records_per_request"], v["network.ring_bytes_per_request"],
			v["network.worker_reads_per_second"]
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
		printf "network: peak RSS kB: launcher %d, supervisor %d, shipper %d, worker %d (worker target <= 32 MB: %s)\n",
			v["network.peak_rss_kb.launcher"], v["network.peak_rss_kb.supervisor"],
			v["network.peak_rss_kb.shipper"], v["network.peak_rss_kb.worker"],
			ok(v["network.peak_rss_kb.worker"] <= 32768)
		if (long == 1)
			printf "network: %d s at %.0f req/s: peak RSS kB launcher %d, supervisor %d, shipper %d, worker %d; agent %.1f%% of a core\n",
				v["network.long_seconds"], v["network.long_rps"], v["network.long_peak_rss_kb.launcher"],
				v["network.long_peak_rss_kb.supervisor"], v["network.long_peak_rss_kb.shipper"],
				v["network.long_peak_rss_kb.worker"], v["network.long_agent_cpu_percent_of_core"]
		else
			print "network: the sustained 20k req/s, 60 s RSS run is off (BENCH_NETWORK_LONG=1 runs it)"
	}' "$work/figures"
