#!/bin/sh
# Installs the Debian packages rover builds, tests and benchmarks with, when any is missing.
set -eu
PKGS="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev libbz2-dev libcap-ng-dev libseccomp-dev \
libprotobuf-c-dev protobuf-c-compiler libiberty-dev libcriterion-dev linux-perf gdb make gcc g++ \
binutils libclang-rt-dev liblzma-dev xz-utils golang-go libcapstone-dev \
libgrpc-dev libcurl4-openssl-dev libyaml-dev libpcre2-dev libdw-dev protobuf-compiler python3-grpcio python3-protobuf openssl libjson-c-dev libllvm15 python3-yaml \
nginx wrk nftables iproute2 curl iputils-ping procps \
android-boringssl knot-dnsutils unbound nodejs \
libnghttp2-dev nghttp2-client nghttp2-server mariadb-server mariadb-client bind9-dnsutils dnsmasq-base \
python3-pymongo python3-mockupdb kcat python3-kafka python3-cassandra golang-github-shopify-sarama-dev \
libssl-dev chromium"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	# nginx and unbound are test peers the tests start on 127.0.0.1 themselves: their packages
	# must not start the distribution's services (port 80, port 53). A policy-rc.d that denies every start does that;
	# one already there (containers have one) is left as it is.
	rc=/usr/sbin/policy-rc.d
	own_rc=""
	if [ ! -e "$rc" ]; then
		printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts while it installs\nexit 101\n' |
			$SUDO tee "$rc" >/dev/null
		$SUDO chmod 755 "$rc"
		own_rc=1
	fi
	# Another apt may hold the lock (unattended upgrades on a fresh machine): wait for it.
	lock="-o DPkg::Lock::Timeout=300"
	$SUDO apt-get $lock update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get $lock install -y -qq --no-install-recommends $missing >/dev/null ||
		{ [ -z "$own_rc" ] || $SUDO rm -f "$rc"; exit 1; }
	[ -z "$own_rc" ] || $SUDO rm -f "$rc"
	# Nor at the next boot.
	if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now nginx.service unbound.service mariadb.service >/dev/null 2>&1 || true
	fi
fi
# npm modules the integration tests drive as real clients (pinned; into build/npm).
if command -v npm >/dev/null; then
	sh "$(dirname "$0")/../tests/programs/npm-deps.sh" "${ROVER_BUILD:-$(dirname "$0")/../build}/npm" ||
		echo "install-deps: npm modules not installed (the tests that need them will try again)"
fi
# The roles run as a dedicated user, never nobody (policy/README.md).
if [ "$(id -u)" -eq 0 ]; then
	"$(dirname "$0")/add-rover-user.sh"
else
	sudo "$(dirname "$0")/add-rover-user.sh"
fi
