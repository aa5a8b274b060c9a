#!/usr/bin/env bash
# gcc and the C headers for the ADBC C consumer (scripts/check.d/50-adbc-c.sh). Idempotent.
set -euo pipefail
if command -v gcc >/dev/null && [ -e /usr/include/stdio.h ]; then
  exit 0
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc libc6-dev
