#!/usr/bin/env bash
# Debian's libfaketime, for the test of replicas whose wall clocks disagree
# (integration-tests/python/test_postgres_journal.py): one daemon runs with its wall clock moved.
# Idempotent: installs nothing when the library is there.
set -euo pipefail
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup: libfaketime missing and not root; the clock-skew lease test will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-cache show faketime >/dev/null 2>&1 || apt-get update -qq
apt-get install -y -qq --no-install-recommends faketime >/dev/null
