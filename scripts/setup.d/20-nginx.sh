#!/usr/bin/env bash
# Debian's nginx, for the TLS-edge tests (integration-tests/python/test_tls_edge.py) and the
# local cluster's edge (scripts/cluster). Idempotent: installs nothing when an nginx binary is
# there; one built without the HTTP/2 or gRPC module (not Debian's) is named, since the tests and
# the cluster's `nginx -t` would refuse their configurations with it.
set -euo pipefail
nginx_bin=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
if [ -x "$nginx_bin" ]; then
  built=$("$nginx_bin" -V 2>&1)
  # http_v2 is opt-in at build time, grpc opt-out.
  if [[ $built != *--with-http_v2_module* || $built == *--without-http_grpc_module* ]]; then
    echo "setup: $nginx_bin lacks the HTTP/2 or gRPC module: the TLS-edge tests and" \
      "scripts/cluster need both (Debian's nginx-light or nginx has them)" >&2
  fi
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup: nginx missing and not root; the TLS-edge tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# The package lists may be absent on a fresh machine; one update is enough.
if ! apt-cache show nginx-light >/dev/null 2>&1 && ! apt-cache show nginx >/dev/null 2>&1; then
  apt-get update -qq
fi
# nginx-light carries http_v2, ssl and grpc; bookworm folds it into "nginx" (with the same
# modules), so fall back to that. The package's own service is not wanted: the tests start
# nginx unprivileged from their own config, so keep the postinst from starting one.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
  || apt-get install -y -qq --no-install-recommends nginx >/dev/null
