"""Health through the TLS edge (issue 17): nginx in the shape of config/nginx-edge.example.conf
forwards grpc.health.v1 to the gateway over TCP and the Unix socket; an edge probe sees SERVING,
then NOT_SERVING once the gateway drains."""

import signal

import grpc
import pytest

import edgetls
from daemon import wait_until
from ops_support import HEALTH_CHECK, STATUS

pytestmark = pytest.mark.skipif(edgetls.nginx_binary() is None,
                                reason="nginx missing: scripts/setup.d/20-nginx.sh installs it")


def edge_health(port, ca_pem):
    creds = grpc.ssl_channel_credentials(root_certificates=ca_pem)
    with grpc.secure_channel(f"localhost:{port}", creds) as ch:
        body = ch.unary_unary(HEALTH_CHECK)(b"", timeout=10)
    return STATUS[body[1] if body else 0]


def test_health_through_nginx_edge_across_drain(configured, tmp_path):
    certs = edgetls.make_certs(tmp_path / "pki")
    ca_pem = certs["ca"].read_bytes()
    sock = tmp_path / "gw.sock"
    daemon = configured(tmp_path / "gw", {
        "listen": {"unix_socket": str(sock)}, "ops": {"drain_notice_ms": 8000}}).start()
    nginx = None
    try:
        nginx = edgetls.Nginx(tmp_path / "nginx", certs, daemon.port, sock).start()
        assert edge_health(nginx.tcp_port, ca_pem) == "SERVING"
        assert edge_health(nginx.uds_port, ca_pem) == "SERVING"
        daemon.proc.send_signal(signal.SIGTERM)
        seen = []

        def not_serving():
            seen.append(edge_health(nginx.tcp_port, ca_pem))
            return seen[-1] == "NOT_SERVING"

        wait_until(not_serving, 3.0, lambda: f"the edge's health NOT_SERVING (saw {seen})")
        assert edge_health(nginx.uds_port, ca_pem) == "NOT_SERVING"
        assert daemon.proc.wait(30) == 0
    finally:
        try:
            if nginx is not None:  # else its failed start stopped it
                nginx.stop()
        finally:
            if daemon.alive():
                daemon.stop()
