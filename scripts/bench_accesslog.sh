#!/bin/bash
# make bench, the access-log module (docs/access-log.md): 20 idle pods and nginx in a pod of
# its own (a network namespace on a bridge, a kubepods cgroup, the fake Kubernetes API
# listing them), wrk from the node against the pod's address for BENCH_ALOG_SECONDS (8) a
# round, rounds ordered ABBA without (A) and with (B) `rover run` and access_log.active; the
# fake OAP counts the access log's streams without decoding them (FAKE_OAP_SINK). The rounds
# are the integration runner's `accesslog_bench` suite (tests/integration/test_accesslog.c),
# which reuses the module's end-to-end test's pods. One figure a line, `accesslog.<name>`.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OUT:-build}
[ -x "$B/tests/integration/runner" ] || { echo "bench: $B/tests/integration/runner is missing: run 'make bench'"; exit 1; }
echo
echo "== access log: 20 idle pods, nginx in a pod under wrk -t1 -c4, ABBA without and with the module =="
ROVER_BENCH=1 ROVER_BUILD="$PWD/$B" ROVER_SRC="$PWD" \
	"$B/tests/integration/runner" --filter 'accesslog_bench/*' --jobs 1 2>&1 |
	grep -E '^accesslog\.|\[FAIL|Assertion' || true
