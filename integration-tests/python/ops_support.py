"""The operations calls (health, metrics) of the operations tests: the grpc.health.v1 check
through grpcio with the protobuf written by hand (two fields), and a metrics scrape parsed into
samples. Daemons come from daemon.py, Flight SQL calls from calls.py."""

import re
import urllib.request

import grpc

METRICS = re.compile(r"metrics on http://([0-9.]+):(\d+)/metrics")
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def health(port, service="", timeout=5.0):
    """grpc.health.v1.Health/Check without any credential; returns the status name."""
    request = b"" if not service else b"\x0a" + bytes([len(service)]) + service.encode()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        body = ch.unary_unary(HEALTH_CHECK)(request, timeout=timeout)
    # HealthCheckResponse: field 1 (status), varint; an absent field is 0 (UNKNOWN).
    assert body in (b"",) or body[0] == 0x08, body
    return STATUS[body[1] if body else 0]


def metrics_port(output):
    for line in output:
        m = METRICS.search(line)
        if m:
            return int(m.group(2))
    raise AssertionError("no metrics listener line in the output")


def scrape(port):
    """{(name, frozenset(labels)): value} of every sample at /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def sample(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)
