#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The npm modules the integration tests drive as real clients (tests/programs/*.js), pinned,
# installed into DIR/node_modules: DIR is $1, else $ROVER_NPM, else $ROVER_BUILD/npm, else
# build/npm. Idempotent: does nothing when every module is there at its version. Needs the npm
# registry the first time (scripts/install-deps.sh calls it).
#   mysql2 3.24.6: tests/programs/mysql2_client.js (test_proto_db.c)
set -eu

dir=${1:-${ROVER_NPM:-${ROVER_BUILD:-build}/npm}}
mods="mysql2@3.24.6"

missing=
for m in $mods; do
	name=${m%@*}
	want=${m##*@}
	have=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$dir/node_modules/$name/package.json" \
		2>/dev/null || true)
	[ "$have" = "$want" ] || missing="$missing $m"
done
[ -n "$missing" ] || exit 0
mkdir -p "$dir"
# shellcheck disable=SC2086 # one word per module
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error $missing
