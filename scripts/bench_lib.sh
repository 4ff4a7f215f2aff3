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

# bpf_ns_per_run NAME: the kernel's run_time_ns / run_cnt (kernel.bpf_stats_enabled) of the BPF
# programs named NAME that this agent's workers loaded: their loader's uid is the roles' user's
# ($ROVER_USER, default rover, which must be this agent's alone), as scripts/soak.sh counts them;
# programs of the same name that another agent, test or CI run loaded are not counted. 0 when
# none ran.
bpf_ns_per_run() {
	local uid
	uid=$(id -u "${ROVER_USER:-rover}" 2>/dev/null) || { echo 0; return; }
	# Each program's first line has its name and counts, the next its loader's uid.
	bpftool prog show 2>/dev/null | awk -v n="$1" -v u="$uid" '
		/^[0-9]+:/ { m = 0; for (i = 1; i <= NF; i++) {
			if ($i == "name" && $(i+1) == n) m = 1
			if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) }
			if (!m) next; getline
			for (i = 1; i <= NF; i++) if ($i == "uid" && $(i+1) == u) { T += t; C += c } }
		END { if (C) printf "%.0f\n", T / C; else print 0 }'
}

# rt_measure LABEL MODE SHARE_AWK: one ON_CPU task of $DUR s at $PERIOD_MS ms on $W through the
# agent of serve_with_shipper (after a warm-up second), `--python-frames MODE` (off: no
# runtime's frames read, native frames only); prints "LABEL MODE samples bpf_ns shipper_ns
# SHARE": the kernel's count, the BPF ns per run of our on_cpu_sample just before the task
# ends, the shipper's CPU ns over the task, and what the awk program SHARE_AWK prints of the
# task's folded profile.
rt_measure() {
	local label=$1 mode=$2 share_awk=$3 s0 s1 bpf samples share T
	"$B/rover" profile --connect "$work/sock" --python-frames "$mode" --pid "$W" --duration 1s \
		--output "$work/warm.folded" 2> /dev/null
	s0=$(sched_ns "$shipper")
	"$B/rover" profile --connect "$work/sock" --python-frames "$mode" --pid "$W" \
		--duration "${DUR}s" --dump-period "${PERIOD_MS}ms" --output "$work/$mode.folded" \
		2> "$work/$mode.err" &
	T=$!
	sleep $((DUR - 1))
	bpf=$(bpf_ns_per_run on_cpu_sample)
	wait "$T" || { echo "bench: $mode task failed:"; cat "$work/$mode.err"; exit 1; }
	s1=$(sched_ns "$shipper")
	samples=$(sed -n 's/.*kernel counted \([0-9]*\).*/\1/p' "$work/$mode.err")
	share=$(awk "$share_awk" "$work/$mode.folded")
	echo "$label $mode ${samples:-0} $bpf $((s1 - s0)) $share"
}

# rt_rounds LABEL SHARE_AWK: three rounds of rt_measure, off and on in turn (the median of each
# is taken: this machine's noise is a few us), appended to $results.
rt_rounds() {
	for _ in 1 2 3; do
		results+="$(rt_measure "$1" off "$2")"$'\n'
		results+="$(rt_measure "$1" on "$2")"$'\n'
	done
}
