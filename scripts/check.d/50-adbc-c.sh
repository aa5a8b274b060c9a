#!/usr/bin/env bash
# The ADBC C consumer: compiles integration-tests/c with gcc against the adbc.h of the pinned
# adbc-driver-manager package, then runs the C column of the client matrix and the consumer's own
# checks against the real daemon, and the C column again through the edge of a local cluster
# (test_cluster.py; pytest drives the consumer process line by line).
#   TRANSIT_VENV   the venv with the pinned packages (scripts/test exports it)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
venv=$(test_venv)
export TRANSIT_VENV=$venv
command -v gcc >/dev/null || { echo "gcc is required for the ADBC C consumer" >&2; exit 2; }
TRANSIT_ADBC_C=$("$root/integration-tests/c/build.sh")
TRANSIT_ADBC_DRIVER=$("$root/integration-tests/c/build.sh" --driver)
export TRANSIT_ADBC_C TRANSIT_ADBC_DRIVER
cd "$root/integration-tests/python"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$venv/bin/python" -m pytest -q -p no:cacheprovider -rs -k adbc_c test_client_matrix.py \
  test_c_consumer.py test_cluster.py | tee "$out"
# The main pytest run skips exactly these (they need the consumer built here): a skip here would
# leave the C API untested with exit 0.
if grep -qE "[0-9]+ skipped" "$out"; then
  echo "the ADBC C consumer's tests were skipped (above): they must run here" >&2
  exit 1
fi
