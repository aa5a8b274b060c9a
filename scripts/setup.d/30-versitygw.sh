#!/usr/bin/env bash
# versitygw, the S3-API server the object-store tests and the local cluster keep retained segments
# in (S3SegmentStoreTest, integration-tests/python/test_segments_s3.py). It is not a Debian package:
# built from the pinned module with the Go toolchain through the module proxy, once, into a cache
# outside the repository. Idempotent: does nothing when the pinned binary is already there.
#   TRANSIT_VERSITYGW   where the tests look for it (printed by this script; default: lib.sh)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
version=$versitygw_version
bin=$versitygw_bin
cache=$(dirname "$bin")
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
go_bin=$(command -v go || true)
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "setup: no Go toolchain to build versitygw, which the S3 segment-store tests need:" \
    "install Go (go.dev/dl) and run again" >&2
  exit 1
fi
mkdir -p "$cache"
# Built into a scratch GOBIN and moved into place, so a build cut short never leaves a binary
# that the check above would take as complete.
scratch=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "setup: building versitygw $version (a few minutes on 2 cores)" >&2
GOBIN="$scratch" "$go_bin" install "github.com/versity/versitygw/cmd/versitygw@$version"
mv "$scratch/versitygw" "$bin"
echo "$bin"
