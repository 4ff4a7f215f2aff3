#!/bin/sh
# Creates the rover system user and group when missing: what deploy/sysusers.d/rover.conf
# asks of systemd-sysusers, for machines without it (containers, CI). Idempotent.
set -eu
getent group rover >/dev/null || groupadd --system rover
getent passwd rover >/dev/null || useradd --system --gid rover --no-create-home \
	--home-dir / --shell /usr/sbin/nologin --comment "rover eBPF profiling agent (roles)" rover
