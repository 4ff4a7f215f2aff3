#!/bin/sh
# Checks deploy/systemd/rover.service where systemd is not PID 1 (so the unit cannot be
# started): systemd-analyze verify and security, whether its system call filter holds every
# call the roles' own filters allow, and then, under what the unit gives the launcher (each
# read from the unit itself, below): the attack of a launcher reading another service's
# root-only file under /var/lib (must fail), a short `rover profile` of a busy program that
# runs from /home (must name it), and `rover run` against the test OAP on loopback
# (tests/oap/fake_oap.py), which must report that program, run the OAP's ON_CPU task on it
# and upload its stacks, named:
#   User=, Group=                                 setpriv --reuid --regid --clear-groups
#   CapabilityBoundingSet=, AmbientCapabilities=,
#   NoNewPrivileges=                              setpriv --bounding-set --inh-caps
#                                                 --ambient-caps --no-new-privs
#   SystemCallFilter=, SystemCallErrorNumber=,
#   RestrictAddressFamilies=, MemoryDenyWriteExecute=   scripts/check-unit-seccomp.c
#   ProtectSystem=strict, ProtectKernelTunables=,
#   ProtectControlGroups=                          every mount read-only but /proc and /dev
#   ProtectHome=yes, PrivateTmp=, PrivateDevices=  empty 000 /home /root /run/user, a new
#                                                  /tmp and /var/tmp, a /dev of 6 nodes
#   RuntimeDirectory=, StateDirectory=, UMask=     the only writable places, umask
#   ProtectHostname=                               unshare --uts
#   RootDirectory=, BindReadOnlyPaths=             a tmpfs root holding those binds (a
#                                                  link's target at the link's path), then
#                                                  /proc, /sys, /dev, a /run tmpfs, /tmp,
#                                                  /var/tmp and the directories above
#                                                  (MountAPIVFS=), read-only, chroot
# Not reproduced: RestrictNamespaces=, LockPersonality=, RestrictRealtime=, RestrictSUIDSGID=
# (more seccomp rules; rover makes none of those calls and its launcher denies namespaces
# itself), DevicePolicy=, ProtectClock=, ProtectKernelModules= beyond the filter.
#
# usage: scripts/check-unit.sh [--extra-caps CAP_A,CAP_B] [UNIT]
#   --extra-caps  also keep these in the bounding set (a launcher that still wants them)
# Needs root, util-linux (unshare, setpriv), gcc and libseccomp, the rover user, and
# build/rover (make -j1 all). Exit status: 0 when every check passed.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${ROVER_BUILD:-$SRC/build}
EXTRA=""
if [ "${1:-}" = "--extra-caps" ]; then
	EXTRA=$2
	shift 2
fi
UNIT=${1:-$SRC/deploy/systemd/rover.service}
PY=/usr/bin/python3
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

# unit_get KEY: every value of KEY in [Service], continuation lines joined, one per line.
unit_get() {
	"$PY" - "$UNIT" "$1" <<'EOF'
import sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
section = None
for line in text.splitlines():
    line = line.strip()
    if line.startswith("["):
        section = line
    elif section == "[Service]" and "=" in line and not line.startswith("#"):
        key, value = line.split("=", 1)
        if key.strip() == sys.argv[2]:
            print(" ".join(value.split()))
EOF
}

WORK=$(mktemp -d /run/rover-check.XXXXXX)
HOMEDIR=""
SECRETDIR=""
SPIN=""
OAP=""
cleanup() {
	[ -z "$SPIN" ] || kill "$SPIN" 2>/dev/null || true
	[ -z "$OAP" ] || kill "$OAP" 2>/dev/null || true
	[ -z "$HOMEDIR" ] || rm -rf "$HOMEDIR"
	[ -z "$SECRETDIR" ] || rm -rf "$SECRETDIR"
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "== systemd-analyze verify (ExecStart pointed at $BUILD)"
sed "s|/usr/local/bin/|$BUILD/|g" "$UNIT" >"$WORK/rover.service"
if systemd-analyze verify "$WORK/rover.service"; then echo "ok"; else fail "verify"; fi

echo "== systemd-analyze security --offline=true"
systemd-analyze security --offline=true "$UNIT" 2>&1 | grep -E '^(✗|→)' || true

echo "== SystemCallFilter= against the roles' own allowlists (policy/*.c)"
systemd-analyze syscall-filter >"$WORK/groups" 2>/dev/null
unit_get SystemCallFilter >"$WORK/filter"
if ! "$PY" - "$WORK/groups" "$WORK/filter" "$WORK/syscalls" "$SRC"/policy/*.c <<'EOF'
import re, sys
groups, cur = {}, None
for line in open(sys.argv[1]):
    s = line.strip()
    if not s or s.startswith("#"):
        continue
    if not line[0].isspace() and s.startswith("@"):
        cur = groups.setdefault(s, [])
    elif cur is not None:
        cur.append(s)
def expand(name):
    if not name.startswith("@"):
        return {name}
    out = set()
    for m in groups.get(name, []):
        out |= expand(m)
    return out
# systemd: a first list without ~ is an allowlist; later lines add, or with ~ take away.
allowed = None
for value in open(sys.argv[2]).read().splitlines():
    deny = value.startswith("~")
    names = set().union(*[expand(n) for n in value.lstrip("~").split()])
    if allowed is None:
        allowed = set() if not deny else None
        if allowed is None:
            sys.exit("a denylist filter: nothing to check")
    allowed = allowed - names if deny else allowed | names
open(sys.argv[3], "w").write("\n".join(sorted(allowed)) + "\n")
need = set()
for path in sys.argv[4:]:
    need |= set(re.findall(r'\{ "([a-z0-9_]+)", SC_ALLOW', open(path).read()))
# The launcher's own calls (its filter is a denylist, so they are listed here).
need |= {"bpf", "perf_event_open", "setuid", "setgid", "setresuid", "setresgid", "setgroups",
         "capset", "capget", "prctl", "seccomp", "pidfd_open", "pidfd_send_signal", "execve",
         "clone", "clone3", "wait4", "kill", "memfd_create", "signalfd4", "chown", "fchown",
         "fchmod", "chmod", "mkdir", "setfsuid", "setfsgid", "faccessat", "socketpair",
         "unlink", "rmdir", "readlink"}
missing = sorted(need - allowed)
print("%d calls allowed; %d needed" % (len(allowed), len(need)))
if missing:
    print("FAIL: not allowed by the unit: " + " ".join(missing))
    sys.exit(1)
print("ok")
EOF
then
	failed=1
fi

echo "== rover profile under the unit's sandbox"
if [ "$(id -u)" -ne 0 ] || [ ! -x "$BUILD/rover" ] || ! id rover >/dev/null 2>&1; then
	echo "SKIP: needs root, $BUILD/rover (make -j1 all) and the rover user"
	exit "$failed"
fi
gcc -O2 -Wall -o "$WORK/seccomp-exec" "$SRC/scripts/check-unit-seccomp.c" -lseccomp
# The binaries as `make install` puts them, in a directory of their own outside /tmp (a build
# under /tmp, a CI checkout's, would vanish under PrivateTmp=): it stands for /usr/local/bin.
chmod 0755 "$WORK"
mkdir -m 0755 "$WORK/bin"
cp "$BUILD/rover" "$BUILD/rover-supervisor" "$BUILD/rover-worker" "$BUILD/rover-shipper" \
	"$WORK/bin/"
[ ! -f "$BUILD/librover-oap.so" ] || cp "$BUILD/librover-oap.so" "$WORK/bin/"

# Capabilities: CAP_FOO -> +foo for setpriv.
caps=$(unit_get CapabilityBoundingSet | tr ' ' '\n' | grep -v '^$' || true)
[ -z "$EXTRA" ] || caps=$(printf '%s\n%s\n' "$caps" "$(echo "$EXTRA" | tr ',' '\n')")
bset="-all"
for c in $caps; do
	bset="$bset,+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"
done
echo "bounding set: $bset"
# AmbientCapabilities= (inheritable too, as systemd sets them), User=, Group=.
acaps=""
for c in $(unit_get AmbientCapabilities); do
	acaps="$acaps${acaps:+,}+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"
done
[ -z "$EXTRA" ] || for c in $(echo "$EXTRA" | tr ',' ' '); do
	acaps="$acaps${acaps:+,}+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"
done
user=$(unit_get User)
group=$(unit_get Group)
ids="--inh-caps=-all"
if [ -n "$user" ]; then
	ids="--reuid=$user --regid=${group:-$user} --clear-groups --inh-caps=${acaps:--all} --ambient-caps=${acaps:--all}"
fi
echo "user: ${user:-root}, ambient capabilities: ${acaps:-none}"
nnp=""
[ "$(unit_get NoNewPrivileges)" != "yes" ] || nnp="--no-new-privs"
fams="-"
if [ -n "$(unit_get RestrictAddressFamilies)" ]; then
	fams=$("$PY" -c 'import socket,sys; print(",".join(str(int(getattr(socket, f))) for f in sys.argv[1:]))' \
		$(unit_get RestrictAddressFamilies))
fi
mdwe=0
[ "$(unit_get MemoryDenyWriteExecute)" != "yes" ] || mdwe=1
umask_=$(unit_get UMask)
# RuntimeDirectory=: the first is the sockets' directory, a second the root's (RootDirectory=).
rundir=/run/$(unit_get RuntimeDirectory | cut -d' ' -f1)
rootdir=$(unit_get RootDirectory)
binds=$(unit_get BindReadOnlyPaths)
statedir=/var/lib/$(unit_get StateDirectory)
for k in ProtectSystem ProtectHome PrivateTmp PrivateDevices; do
	echo "$k=$(unit_get $k)"
done
[ "$(unit_get ProtectSystem)" = "strict" ] || fail "ProtectSystem is not strict: not reproduced"

# A busy program in /home, where ProtectHome=yes hides it from the launcher's mount view.
HOMEDIR=$(mktemp -d /home/rover-check.XXXXXX)
chmod 0755 "$HOMEDIR"
cat >"$HOMEDIR/spin.c" <<'EOF'
#include <stdio.h>
__attribute__((noinline)) static void check_unit_spin(volatile unsigned long *n)
{
	for (;;)
		(*n)++;
}
int main(void)
{
	volatile unsigned long n = 0;
	printf("ready\n");
	fflush(stdout);
	check_unit_spin(&n);
}
EOF
gcc -O1 -g -fno-omit-frame-pointer -o "$HOMEDIR/spin" "$HOMEDIR/spin.c"
"$HOMEDIR/spin" >/dev/null &
SPIN=$!
# Another service's secret, root's alone, where ProtectSystem=strict leaves files readable to
# whoever may read them: the unit's own DAC_READ_SEARCH would let a compromised launcher read
# it, but not through a root directory that leaves /var/lib out.
SECRETDIR=$(mktemp -d /var/lib/rover-check-secret.XXXXXX)
echo "another service's key" >"$SECRETDIR/key"
chmod 0600 "$SECRETDIR/key"
# The test OAP on loopback (tests/oap/fake_oap.py; IPAddressAllow= keeps loopback), serving
# one ON_CPU task on the program above once the agent reported it: `rover run` under the
# sandbox must report it, run the task and upload its stacks, named.
echo '[{"command": "EBPFProfilingTaskQuery", "args": {"TaskId": "check-unit", "ProcessId": "@process:spin", "TaskUpdateTime": "@now", "TriggerType": "FIXED_TIME", "TargetType": "ON_CPU", "TaskStartTime": "@now", "FixedTriggerDuration": "3", "ExtensionConfigJSON": ""}}]' >"$WORK/tasks.json"
"$PY" "$SRC/tests/oap/fake_oap.py" --port 0 --port-file "$WORK/oap.port" \
	--record "$WORK/oap.jsonl" --tasks "$WORK/tasks.json" >"$WORK/oap.log" 2>&1 &
OAP=$!
i=0
while [ ! -s "$WORK/oap.port" ] && [ $i -lt 100 ] && kill -0 $OAP 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
oapport=$(cat "$WORK/oap.port" 2>/dev/null || true)
[ -n "$oapport" ] || { cat "$WORK/oap.log"; fail "the test OAP did not start"; }
cat >"$WORK/rover.yaml" <<EOF2
core:
  backend:
    addr: 127.0.0.1:$oapport
    spool_dir: \${ROVER_BACKEND_SPOOL_DIR:}
process_discovery:
  heartbeat_period: 1s
  vm:
    active: true
    period: 500ms
    finders:
      - match_cmd_regex: "^$HOMEDIR/spin\$"
        layer: OS_LINUX
        service_name: "check-unit"
        instance_name: "check-unit"
        process_name: "{{.Process.ExeName}}"
profiling:
  active: true
  check_interval: 1s
  flush_interval: 1s
EOF2
chmod 0644 "$WORK/rover.yaml" "$WORK/tasks.json"
made_run=0
made_state=0
[ -d "$rundir" ] || { mkdir -m "$(unit_get RuntimeDirectoryMode)" "$rundir" && made_run=1; }
[ -d "$statedir" ] || { mkdir -m "$(unit_get StateDirectoryMode)" "$statedir" && made_state=1; }
made_root=0
if [ -n "$rootdir" ]; then
	case " $(unit_get RuntimeDirectory) " in
	*" ${rootdir#/run/} "*) ;;
	*) fail "RootDirectory=$rootdir is not one of the RuntimeDirectory= entries: not reproduced" ;;
	esac
	[ -d "$rootdir" ] || { mkdir -m "$(unit_get RuntimeDirectoryMode)" "$rootdir" && made_root=1; }
	[ -z "$user" ] || chown "$user:${group:-$user}" "$rootdir"
fi

# RuntimeDirectory= and StateDirectory= are the service user's (systemd chowns them).
[ -z "$user" ] || chown "$user:${group:-$user}" "$rundir" "$statedir"

# The inner shell builds the unit's view of the file system, then runs the ExecStart binary
# with `profile` instead of `run` (a task of its own, no OAP needed) and hands the profile out
# on fd 3.
set +e
unshare --mount --uts --propagation private sh -eu -c '
	rundir=$1 statedir=$2 umask_=$3 work=$4 fams=$5 mdwe=$6 bset=$7 nnp=$8 rover=$9 pid=${10}
	ids=${11} rootdir=${12} binds=${13} secret=${14} oapport=${15} spool=${16}
	# ProtectSystem=strict (+ ProtectKernelTunables, ProtectControlGroups): every mount
	# read-only but /proc itself and /dev.
	awk "{print \$5}" /proc/self/mountinfo | sort -u | while read -r mp; do
		case "$mp" in /proc|/proc/*|/dev|/dev/*) continue ;; esac
		mount -n -o remount,bind,ro "$mp" 2>/dev/null || true
	done
	mount -n --bind /proc/sys /proc/sys && mount -n -o remount,bind,ro /proc/sys
	# PrivateTmp=yes
	mount -n -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
	mount -n -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
	# ProtectHome=yes: empty and closed.
	for d in /home /root /run/user; do
		if [ -d "$d" ]; then mount -n -t tmpfs -o mode=000,ro tmpfs "$d"; fi
	done
	# PrivateDevices=yes
	mkdir -p /tmp/.dev && mount -n -t tmpfs -o mode=755,nosuid tmpfs /tmp/.dev
	for n in null zero full random urandom tty; do
		touch /tmp/.dev/$n && mount -n --bind /dev/$n /tmp/.dev/$n
	done
	mkdir /tmp/.dev/shm && ln -s /proc/self/fd /tmp/.dev/fd
	mount -n --move /tmp/.dev /dev
	# RuntimeDirectory=, StateDirectory=: the only writable places, the service user'"'"'s.
	# (a bind copies its source'"'"'s read-only flag: writable again by hand)
	for d in "$rundir" "$statedir"; do
		mount -n --bind "$d" "$d" && mount -n -o remount,bind,rw "$d"
	done
	# RootDirectory= with BindReadOnlyPaths=: systemd makes a missing mount point and mounts a
	# link'"'"'s target there; "-" skips what the host lacks. Then MountAPIVFS=, the private
	# /tmp, the two directories; this check'"'"'s own files (the build standing for
	# /usr/local/bin, the filter runner) at their paths; all read-only but the two.
	chroot=""
	if [ -n "$rootdir" ]; then
		# The directory systemd made: RuntimeDirectoryMode=, the service user'"'"'s.
		owner=$(stat -c uid=%u,gid=%g "$rootdir")
		mount -n -t tmpfs -o "mode=$(stat -c %a "$rootdir"),$owner" tmpfs "$rootdir"
		bindro() { mkdir -p "$rootdir$2" && mount -n --rbind "$1" "$rootdir$2" &&
			mount -n -o remount,bind,ro "$rootdir$2"; }
		for b in $binds; do
			p=${b#-}
			if [ ! -e "$p" ]; then
				[ "$p" != "$b" ] && continue
				echo "BindReadOnlyPaths=$p: missing" >&2
				exit 1
			fi
			bindro "$(readlink -f "$p")" "$p"
		done
		mkdir -p "$rootdir/proc" "$rootdir/sys" "$rootdir/dev" "$rootdir/run" \
			"$rootdir/tmp" "$rootdir/var/tmp"
		mount -n --rbind /proc "$rootdir/proc"
		bindro /sys /sys
		mount -n --rbind /dev "$rootdir/dev"
		mount -n -t tmpfs -o mode=755,nosuid,nodev tmpfs "$rootdir/run"
		mount -n --bind /tmp "$rootdir/tmp"
		mount -n --bind /var/tmp "$rootdir/var/tmp"
		mkdir -p "$rootdir$rundir" "$rootdir$statedir"
		mount -n --bind "$rundir" "$rootdir$rundir"
		mount -n --bind "$statedir" "$rootdir$statedir"
		bindro "$work" "$work"
		mount -n -o remount,ro "$rootdir"
		chroot="chroot $rootdir"
	fi
	hostname rover-check
	umask "$umask_"
	set +e
	# The attack: what the launcher holds, reading another service'"'"'s key.
	if $chroot "$work/seccomp-exec" "$work/syscalls" "$fams" "$mdwe" \
		setpriv --bounding-set="$bset" $ids $nnp -- cat "$secret" >/dev/null 2>&1; then
		echo "SECRET READ: $secret" >&2
	fi
	$chroot "$work/seccomp-exec" "$work/syscalls" "$fams" "$mdwe" \
		setpriv --bounding-set="$bset" $ids $nnp -- env -u ROVER_USER \
		"$rover" profile --pid "$pid" --duration 2s --output /tmp/check.folded
	rc=$?
	[ -f /tmp/check.folded ] && cat /tmp/check.folded >&3
	# The service itself, `rover run`, as ExecStart= runs it, until the OAP has its stacks.
	if [ -n "$oapport" ]; then
		$chroot "$work/seccomp-exec" "$work/syscalls" "$fams" "$mdwe" \
			setpriv --bounding-set="$bset" $ids $nnp -- env -u ROVER_USER \
			ROVER_BACKEND_SPOOL_DIR="$spool" \
			"$rover" run --config "$work/rover.yaml" --socket-dir "$rundir" \
			>&2 &
		run=$!
		i=0
		while [ $i -lt 160 ] && kill -0 $run 2>/dev/null &&
			! grep -q check_unit_spin "$work/oap.jsonl" 2>/dev/null; do
			sleep 0.25
			i=$((i + 1))
		done
		kill -TERM $run 2>/dev/null
		wait $run
		echo "rover run: exit $?" >&2
	fi
	exit $rc
' check "$rundir" "$statedir" "$umask_" "$WORK" "$fams" "$mdwe" "$bset" "$nnp" \
	"$WORK/bin/rover" "$SPIN" "$ids" "$rootdir" "$binds" "$SECRETDIR/key" "$oapport" \
	"$(unit_get Environment | sed -n 's/.*ROVER_BACKEND_SPOOL_DIR=\([^ ]*\).*/\1/p')" \
	3>"$WORK/check.folded" 2>"$WORK/stderr"
rc=$?
set -e
[ $made_run -eq 0 ] || rmdir "$rundir" 2>/dev/null || rm -rf "$rundir"
[ $made_state -eq 0 ] || rm -rf "$statedir"
[ $made_root -eq 0 ] || rmdir "$rootdir" 2>/dev/null || true
sed 's/^/  rover: /' "$WORK/stderr"
echo "exit status: $rc"
echo "== another service's root-only file under /var/lib, read with the unit's capabilities"
if grep -q "^SECRET READ" "$WORK/stderr"; then
	fail "the unit's user read $SECRETDIR/key: its root directory does not hide /var/lib"
else
	echo "ok: not readable"
fi
echo "== rover run against the test OAP on loopback: the program reported, its task's stacks uploaded"
reported=$(grep -c '"reportProcesses"' "$WORK/oap.jsonl" 2>/dev/null || true)
uploaded=$(grep '"collectProfilingData"' "$WORK/oap.jsonl" 2>/dev/null | grep -c check_unit_spin || true)
echo "reportProcesses: ${reported:-0}, uploads naming check_unit_spin: ${uploaded:-0}"
if [ "${uploaded:-0}" -gt 0 ]; then
	echo "ok: the OAP has check_unit_spin"
else
	fail "rover run under the unit's sandbox: no upload naming check_unit_spin at the OAP"
fi
echo "== rover profile of a program under /home"
samples=$(awk '{s += $NF} END {print s + 0}' "$WORK/check.folded")
spin=$(awk '/check_unit_spin/ {s += $NF} END {print s + 0}' "$WORK/check.folded")
echo "samples: $samples, in check_unit_spin (a binary under /home): $spin"
if [ $rc -ne 0 ] || [ "$samples" -eq 0 ] || [ "$spin" -eq 0 ]; then
	fail "rover profile under the unit's sandbox"
else
	echo "ok"
fi
exit "$failed"
