#!/bin/sh
# Checks worker/pyoffsets.c against the headers of every CPython 3.8-3.13 that pyenv holds here
# (pyenv builds install their internal headers). Exit 1 on a mismatch, 0 when all agree
# (or when no version is installed: nothing to check). Usage: tests/tools/pyoffsets.sh [OUTDIR]
set -eu
cd "$(dirname "$0")/../.."
out=${1:-build/pyoffsets}
mkdir -p "$out"
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
rc=0
for dir in "$root"/versions/3.*; do
	[ -d "$dir" ] || continue
	v=$(basename "$dir")
	m=${v%.*}
	case $m in 3.8|3.9|3.10|3.11|3.12|3.13) ;; *) continue ;; esac
	inc=$dir/include/python$m
	[ -d "$inc/internal" ] || { echo "$v: no internal headers, skipped"; continue; }
	cc -I. -I"$inc" tests/tools/pyoffsets_check.c -o "$out/check$m" || { rc=1; continue; }
	"$out/check$m" || rc=1
done
exit $rc
