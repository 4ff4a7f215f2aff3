#!/bin/sh
# Installs the Debian packages rover builds, tests and benchmarks with, when any is missing.
set -eu
PKGS="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcap-ng-dev libseccomp-dev \
libprotobuf-c-dev protobuf-c-compiler libiberty-dev libcriterion-dev linux-perf gdb make gcc g++ \
binutils libclang-rt-dev liblzma-dev xz-utils golang-go \
libgrpc-dev libyaml-dev libpcre2-dev libdw-dev protobuf-compiler python3-grpcio python3-protobuf openssl libjson-c-dev libllvm15 python3-yaml"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# The roles run as a dedicated user, never nobody (policy/README.md).
if [ "$(id -u)" -eq 0 ]; then
	"$(dirname "$0")/add-rover-user.sh"
else
	sudo "$(dirname "$0")/add-rover-user.sh"
fi
