"""Helpers for the operations tests (health, metrics, access log, CLI, distribution): a daemon
process started from any command line, the grpc.health.v1 check through grpcio with the protobuf
written by hand (two fields), and a metrics scrape parsed into samples."""

import re
import signal
import subprocess
import threading
import urllib.request

import grpc

from daemon import SERVING

METRICS = re.compile(r"metrics on http://([0-9.]+):(\d+)/metrics")
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


class Process:
    """A gateway process from ``args`` whose merged output is kept in ``output``; started
    waiting (bounded) for its "is serving" line."""

    def __init__(self, args, env, timeout=90.0):
        self.output = []
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        found = threading.Event()
        self.port = None

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                m = SERVING.search(line)
                if m and not found.is_set():
                    self.port = int(m.group(2))
                    found.set()
            found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(timeout) or self.port is None:
            self.stop()
            raise RuntimeError("gateway did not start:\n" + "".join(self.output[-40:]))

    @property
    def uri(self):
        return f"grpc://127.0.0.1:{self.port}"

    def stop(self, timeout=30.0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError("gateway did not stop within %.0fs" % timeout)


class Served:
    """What conftest.Caller needs of a gateway that is not a demo Daemon: its URI and each
    caller's credential under the state directory."""

    def __init__(self, process, state_dir):
        self.uri = process.uri
        self.state_dir = state_dir

    def token(self, caller):
        return (self.state_dir / "credentials" / f"{caller}.token").read_text().strip()


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
