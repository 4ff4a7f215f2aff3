#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""
The CPU of one-shot `rover profile` runs, by role, as the launcher reports it when it reaps
each process (ROVER_LOG_LEVEL=debug: "worker 123 used 25 ms of CPU ..."), on
tests/programs/bench_two_threads (two threads burning a core each).

    /usr/bin/python3 scripts/oneshot_cost.py [--rounds N] [--duration 10s] [--user U] BUILD...

Each BUILD is a directory holding rover and its roles (e.g. build, or another checkout's
build to compare): the rounds interleave them, so that both see the same machine. rover is
started with posix_spawn (Python's subprocess uses vfork): a shell's fork would charge its own
copy-on-write faults, about 5 ms on this VM, to the launcher's figure.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

USED = re.compile(r"debug: (worker \d+|supervisor|shipper|the launcher) used (\d+) ms of CPU")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--user", default=os.environ.get("ROVER_USER", "rover"))
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    workload = os.path.join(a.builds[-1], "tests/programs/bench_two_threads")
    if not os.access(workload, os.X_OK):
        sys.exit(f"{workload} missing: make {workload}")
    w = subprocess.Popen([workload], stdout=subprocess.DEVNULL)
    time.sleep(1)
    env = dict(os.environ, ROVER_LOG_LEVEL="debug")
    runs = {b: [] for b in a.builds}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.folded")
            for _ in range(a.rounds):
                for b in a.builds:
                    r = subprocess.run([os.path.join(b, "rover"), "profile", "--user", a.user,
                                        "--pid", str(w.pid), "--duration", a.duration,
                                        "--output", out], env=env, capture_output=True,
                                       text=True)
                    if r.returncode:
                        sys.exit(f"{b}: rover profile failed:\n{r.stderr}")
                    roles = {}
                    for m in USED.finditer(r.stderr):
                        role = m.group(1).split()[0] if m.group(1).startswith("worker") \
                            else m.group(1).replace("the ", "")
                        roles[role] = roles.get(role, 0) + int(m.group(2))
                    runs[b].append(roles)
    finally:
        w.kill()
        w.wait()
    print(f"one-shot `rover profile --duration {a.duration}`, ms of CPU, median of "
          f"{a.rounds} (interleaved)")
    for b in a.builds:
        line = []
        for role in ("launcher", "supervisor", "shipper", "worker"):
            line.append(f"{role} {statistics.median(r.get(role, 0) for r in runs[b]):.0f}")
        totals = [sum(r.values()) for r in runs[b]]
        print(f"{b}: {', '.join(line)}; all {statistics.median(totals):.0f} "
              f"(min {min(totals)}, max {max(totals)})")


if __name__ == "__main__":
    main()
