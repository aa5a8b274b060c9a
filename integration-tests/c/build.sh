#!/usr/bin/env bash
# Builds the ADBC C consumer (integration-tests/c/build/transit-adbc-c) with gcc against the ADBC
# header that the pinned adbc-driver-manager package ships, found in the venv at build time.
# The Flight SQL driver library is not linked: the consumer dlopens it by path at run time
# (printed by `build.sh --driver`), the way a driver manager would.
#   TRANSIT_VENV   the venv with the pinned packages (default: the repo's .venv)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${TRANSIT_VENV:-$root/.venv}
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run scripts/test or set TRANSIT_VENV" >&2; exit 2; }

# Package directories as the venv's own Python resolves them (no guessing at site-packages paths).
# One a line: a venv's path may hold spaces.
{ IFS= read -r manager; IFS= read -r flightsql; } < <("$venv/bin/python" -c '
import os, adbc_driver_manager, adbc_driver_flightsql
print(os.path.dirname(adbc_driver_manager.__file__))
print(os.path.dirname(adbc_driver_flightsql.__file__))')
header=$(find "$manager" -name adbc.h -print -quit)
driver=$(find "$flightsql" -name 'libadbc_driver_flightsql.so*' -print -quit)
[ -n "$header" ] || { echo "adbc.h not found under $manager" >&2; exit 2; }
[ -n "$driver" ] || { echo "libadbc_driver_flightsql.so not found under $flightsql" >&2; exit 2; }

if [ "${1:-}" = "--driver" ]; then
  echo "$driver"
  exit 0
fi
mkdir -p "$here/build"
gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$(dirname "$header")" \
  -o "$here/build/transit-adbc-c" "$here/consumer.c" "$here/arrow_json.c" -ldl
echo "$here/build/transit-adbc-c"
