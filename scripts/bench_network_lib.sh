#!/bin/bash
# shellcheck disable=SC2154 # $work, $CG, $W, $S: bench_lib.sh's
# What bench_network.sh and bench_network_tls.sh share: stopping what they started, nginx, the
# agent (`rover serve`) and its NETWORK tasks, wrk, the BPF programs' stats. Source it after
# bench_lib.sh's bench_setup, with $ROVER and the cgroups $NG (nginx) and $AG (the agent) set;
# wrk_run reads $URL and $CONNS.
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

# The task's launcher ($T), other programs of the bench ($BG, pids), whatever of the agent is
# left in its cgroup, nginx's workers and master: all by pid, all started here. bench_cleanup
# then removes $work and the cgroups.
T="" BG="" STATS_WAS="" workers=""
net_cleanup() {
	[ -z "$T" ] || stop_pid "$T"
	# shellcheck disable=SC2086
	[ -z "$BG" ] || stop_pid $BG
	BG=""
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

# net_port: PORT, a port in 18080-18099 that nothing answers on, from an offset taken from our
# pid: other benches and tests on the machine use the same range.
net_port() {
	local i p
	PORT=""
	for i in $(seq 0 19); do
		p=$((18080 + ($$ + i) % 20))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { PORT=$p; break; }
	done
	[ -n "$PORT" ] || { echo "bench: no free port in 18080-18099"; exit 1; }
}

# nginx_start LISTEN ACCESS_LOG: nginx on 127.0.0.1:$PORT in cgroup $NG, one worker ($workers),
# master $W. LISTEN: the server's listen (and ssl_*) lines; ACCESS_LOG: its access_log line.
nginx_start() {
	mkdir -p "$work/ngx"
	cat > "$work/ngx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $work/ngx/nginx.pid;
error_log $work/ngx/error.log notice;
events { worker_connections 512; }
http {
	$2
	client_body_temp_path $work/ngx/body;
	proxy_temp_path $work/ngx/proxy;
	fastcgi_temp_path $work/ngx/fastcgi;
	uwsgi_temp_path $work/ngx/uwsgi;
	scgi_temp_path $work/ngx/scgi;
	server {
		$1
		location = /ok { return 200 "ok\n"; }
		location / { return 404; }
	}
}
EOF
	( run_in "$NG" "$NGINX" -e "$work/ngx/error.log" -p "$work/ngx" -c "$work/ngx/nginx.conf" \
		2> "$work/ngx/stderr" ) &
	W=$!
	for _ in $(seq 50); do
		workers=$(pgrep -P "$W" | paste -sd, -) || true
		[ -n "$workers" ] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
		sleep 0.1
	done
	[ -n "$workers" ] || { echo "bench: nginx did not start"; cat "$work/ngx/error.log"; exit 1; }
}

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
# task_start NAME SECONDS [PIDS]: a NETWORK task on PIDS (the nginx worker by default), its
# report in $work/NAME.json; returns once the worker has attached its programs.
task_start() {
	local n0
	n0=$(grep -c "attached with" "$work/serve.err" || true)
	( run_in "$AG" "$ROVER" profile --connect "$work/sock" --type network --pid "${3:-$workers}" \
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
# task_stop NAME: ends the task of task_start NAME early, as a first Ctrl-C of `rover profile`
# does (its data is kept), and waits for its report as task_end.
task_stop() {
	kill -INT "$T" 2>/dev/null || true
	task_end "$1" 0
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
# bpf_progs: "name run_time_ns run_cnt" of every BPF program a rover process of $AG holds (its
# prog_id in the fdinfo of its descriptors: this bpftool shows no pids, and other programs may
# be loaded on the machine meanwhile).
bpf_progs() {
	local p
	# shellcheck disable=SC2046
	bpf_progs_of $(for p in $(cat "$AG/cgroup.procs" 2>/dev/null); do
		case "$(cat /proc/"$p"/comm 2>/dev/null)" in rover*) echo "$p" ;; esac
	done)
}
# bpf_progs_of PID...: the same for the programs these processes hold.
bpf_progs_of() {
	local ids p
	ids=$(for p in "$@"; do
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

# network_available: starts the agent; is there a NETWORK task at all? A rover without one
# refuses the type (the bench then ends here, with a line that says so); one that has it runs a
# one-second task on nginx's worker (which warms the page cache up, too).
network_available() {
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
}
