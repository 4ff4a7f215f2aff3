#!/bin/sh
# make demo: profiles a bundled CPU-bound program for about 10 s through the whole pipeline
# and writes out/demo.folded, out/demo.pb.gz and out/demo.svg. The three profiles are three
# tasks of one agent (`rover serve`), run at the same time.
set -eu
cd "$(dirname "$0")/.."
B=${OUT:-build}
mkdir -p out
sock=$(mktemp -d /tmp/rover-demo.XXXXXX)
chmod 755 "$sock"
"$B/tests/programs/demo_burn" > /dev/null &
W=$!
"$B/rover" serve --socket-dir "$sock/sock" 2> out/demo-agent.log &
S=$!
trap 'kill $W $S 2>/dev/null; wait $S 2>/dev/null; rm -rf "$sock"' EXIT
for _ in $(seq 100); do [ -S "$sock/sock/ctl.sock" ] && break; sleep 0.1; done
echo "profiling demo_burn (pid $W) for 10 s: burn_a should take 75% and burn_b 25%"
"$B/rover" profile --connect "$sock/sock" --pid "$W" --duration 10s --output out/demo.pb.gz 2> out/demo-pprof.log &
P1=$!
"$B/rover" profile --connect "$sock/sock" --pid "$W" --duration 10s --output out/demo.svg 2> out/demo-svg.log &
P2=$!
"$B/rover" profile --connect "$sock/sock" --pid "$W" --duration 10s --output out/demo.folded
wait $P1 || { cat out/demo-pprof.log; exit 1; }
wait $P2 || { cat out/demo-svg.log; exit 1; }
echo
echo "wrote:"
for f in out/demo.folded out/demo.pb.gz out/demo.svg; do
	printf '  %s (%s bytes)\n' "$(pwd)/$f" "$(wc -c < "$f")"
done
echo "open out/demo.svg in a browser; 'go tool pprof -top out/demo.pb.gz' reads the pprof file"
