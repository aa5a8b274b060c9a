#!/usr/bin/env bash
# gcc and the C headers for the ADBC C consumer (scripts/check.d/50-adbc-c.sh). Idempotent.
set -euo pipefail
if command -v gcc >/dev/null && [ -e /usr/include/stdio.h ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup: gcc or the C headers missing and not root: install gcc and libc6-dev" \
    "(the ADBC C consumer's check needs them)" >&2
  exit 1
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc libc6-dev
