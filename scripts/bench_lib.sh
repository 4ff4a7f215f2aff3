#!/bin/bash
# What the bench scripts share: a work directory, a cgroup v2 to count CPU in, and a cleanup
# that stops the workload ($W) and the agent ($S) and removes both. Source it, then call
# bench_setup NAME.
cg_usec() { awk '/^usage_usec/ { print $2 }' "$1/cpu.stat"; }
# run_in CGROUP CMD...: the command and everything it starts are counted in CGROUP.
run_in() { echo "$BASHPID" > "$1/cgroup.procs"; shift; exec "$@"; }
sec() { awk -v u="$1" 'BEGIN { printf "%.4f", u / 1e6 }'; }

# Highest VmHWM (kB) of each process named rover* in cgroup $1 while file $2 is absent.
watch_rss() {
	declare -A peak
	local n r
	while [ ! -e "$2" ] && kill -0 $$ 2>/dev/null; do
		while read -r n r; do
			[ "${peak[$n]:-0}" -lt "$r" ] && peak[$n]=$r
		done < <(rss_now "$1")
		sleep 0.2
	done
	for n in "${!peak[@]}"; do echo "$n ${peak[$n]}"; done
}

# rss_now CGROUP: "comm VmHWM_kB" of every rover process in CGROUP now. VmHWM is the peak of
# each process's life so far: read once while the task runs, it needs no polling loop that would
# take CPU from the workload being measured.
rss_now() {
	local p n r
	for p in $(find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null); do
		n=$(cat /proc/$p/comm 2>/dev/null) || continue
		case "$n" in rover*) ;; *) continue ;; esac
		r=$(awk '/VmHWM/ { print $2 }' /proc/$p/status 2>/dev/null) || continue
		[ -n "$r" ] && echo "$n $r"
	done
}

bench_cleanup() {
	[ -n "$S" ] && kill "$S" 2>/dev/null && wait "$S" 2>/dev/null
	[ -n "$W" ] && kill "$W" 2>/dev/null
	rm -rf "$work"
	sleep 0.2
	find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null || true
}

bench_setup() {
	work=$(mktemp -d "/tmp/$1.XXXXXX")
	chmod 755 "$work"
	CG=""
	for c in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		if [ -f "$c/cgroup.procs" ] && mkdir -p "$c/$1.$$" 2>/dev/null; then
			CG="$c/$1.$$"
			break
		fi
	done
	[ -n "$CG" ] || { echo "bench: needs a writable cgroup v2 hierarchy (run as root)"; exit 1; }
	W="" S=""
	trap bench_cleanup EXIT
}

# Nanoseconds on the CPU of every thread of pid $1.
sched_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

# `rover serve` in the cgroup $CG/agent ($AG) with its sockets in $work/sock ($S its pid), once
# its shipper runs: its pid in $shipper.
serve_with_shipper() {
	AG="$CG/agent"
	mkdir -p "$AG"
	( run_in "$AG" "$B/rover" serve --socket-dir "$work/sock" 2> "$work/serve.err" ) &
	S=$!
	for _ in $(seq 100); do [ -S "$work/sock/ctl.sock" ] && break; sleep 0.1; done
	shipper=""
	for _ in $(seq 50); do
		shipper=$(for p in $(cat "$AG/cgroup.procs"); do
			[ "$(cat /proc/"$p"/comm 2>/dev/null)" = rover-shipper ] && echo "$p"; done | head -1)
		[ -n "$shipper" ] && break
		sleep 0.1
	done
	[ -n "$shipper" ] || { echo "bench: no shipper"; cat "$work/serve.err"; exit 1; }
}
