#!/usr/bin/env bash
# PostgreSQL 15 (Debian's postgresql-15) and an unprivileged system user, transit-pg, for the
# shared-journal tests: they start a private cluster of their own (initdb into a 0700 temp dir,
# 127.0.0.1 on a free port, a generated password), which PostgreSQL refuses to run as root.
# Idempotent: installs nothing when the binaries and the user are present. Nothing is started
# here, and the package's own cluster and service are kept from starting.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
if [ "$(id -u)" != 0 ]; then
  if [ ! -x "$bin/initdb" ]; then
    echo "setup: PostgreSQL 15 missing and not root; the PostgreSQL journal tests will be skipped" >&2
  fi
  exit 0
fi
if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-cache show postgresql-15 >/dev/null 2>&1; then
    apt-get update -qq
  fi
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  # postgresql-common would create and start a "main" cluster; the tests want none.
  mkdir -p /etc/postgresql-common
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
  fi
  apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
fi
if ! id -u transit-pg >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin transit-pg
fi
