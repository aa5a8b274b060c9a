"""Configured daemons and raw-transport helpers for the transport-budget, hostile-input, TLS-edge
and load tests. Each ConfiguredDaemon serves a copy of one demo state directory (generated once
per session) with its own limits and listeners, through `scripts/gateway run --config`."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pyarrow.flight as fl
import pytest

import flightsql
from daemon import ROOT, Daemon

SERVING = re.compile(r"is serving (grpc(?:\+tls|\+unix)?)://(\S+)")
STOPPED = re.compile(r"stopped: leaked_bytes=(\d+) leaked_streams=(\d+) drained=(\w+)"
                     r" allocator_peak_bytes=(\d+) connections_peak=(\d+)")
GET_FLIGHT_INFO = "/arrow.flight.protocol.FlightService/GetFlightInfo"
DO_GET = "/arrow.flight.protocol.FlightService/DoGet"
DO_ACTION = "/arrow.flight.protocol.FlightService/DoAction"


@pytest.fixture(scope="session")
def template_state(tmp_path_factory):
    """A demo state directory, generated once by a first daemon start, copied per daemon."""
    path = tmp_path_factory.mktemp("edge-template")
    d = Daemon(path).start()
    assert d.stop() == 0
    return path


def deep_merge(base: dict, extra: dict) -> dict:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_merge(base[k], v)
        else:
            base[k] = v
    return base


class ConfiguredDaemon:
    """A gateway process over a copy of `template` with `overrides` merged into gateway.json."""

    def __init__(self, template: Path, workdir: Path, overrides: dict):
        self.state_dir = Path(workdir) / "state"
        shutil.copytree(template, self.state_dir, symlinks=True)
        self.config = self.state_dir / "gateway.json"
        cfg = json.loads(self.config.read_text())
        cfg["listen"]["port"] = 0
        deep_merge(cfg, overrides)
        self.config.write_text(json.dumps(cfg, indent=2))
        self.proc = None
        self.output = []
        self.uris = []
        self.port = None

    def start(self, timeout: float = 90.0):
        env = dict(os.environ, TRANSIT_NO_BUILD="1")
        self.proc = subprocess.Popen(
            [str(ROOT / "scripts" / "gateway"), "run", "--config", str(self.config)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        ready = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                m = SERVING.search(line)
                if m:
                    self.uris.append(m.group(0).split("serving ", 1)[1].split()[0])
                    if m.group(1) != "grpc+unix":
                        self.port = int(m.group(2).rsplit(":", 1)[1])
                if line.startswith("PyArrow:"):
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout) or self.proc.poll() is not None:
            self.proc.kill()
            raise RuntimeError("gateway did not start:\n" + "".join(self.output[-40:]))
        return self

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def uri(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def token(self, caller: str) -> str:
        return (self.state_dir / "credentials" / f"{caller}.token").read_text().strip()

    def auth(self, caller="primitive"):
        return [("authorization", f"Bearer {self.token(caller)}")]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> dict:
        """SIGTERM, wait; returns the exit code and the shutdown accounting line's figures."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError("gateway did not stop within %.0fs" % timeout)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(STOPPED.search(l) for l in self.output):
            time.sleep(0.05)
        m = next((STOPPED.search(l) for l in self.output if STOPPED.search(l)), None)
        assert m, "no shutdown accounting line:\n" + "".join(self.output[-30:])
        return {"rc": rc, "leaked_bytes": int(m.group(1)), "leaked_streams": int(m.group(2)),
                "drained": m.group(3) == "true", "allocator_peak_bytes": int(m.group(4)),
                "connections_peak": int(m.group(5))}

    def assert_clean_stop(self) -> dict:
        s = self.stop()
        assert s["rc"] == 0 and s["leaked_bytes"] == 0 and s["leaked_streams"] == 0 and s["drained"], \
            (s, "".join(self.output[-40:]))
        return s


def channel(target: str, **extra_options):
    """A grpcio channel with a connection of its own (no subchannel sharing between channels)."""
    opts = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", 64 << 20)]
    opts.extend(extra_options.items())
    return grpc.insecure_channel(target, options=opts)


def rpc_failure(fn, *args, **kwargs):
    """Calls fn expecting a grpc.RpcError; returns (code, details, diagnostic dict or None)."""
    try:
        fn(*args, **kwargs)
    except grpc.RpcError as e:
        trailers = dict(e.trailing_metadata() or ())
        raw = trailers.get("transit-diagnostic-bin")
        return e.code(), e.details(), json.loads(raw) if raw else None
    raise AssertionError("the call succeeded")


def next_sequence(ch, daemon, caller="primitive"):
    rpc = ch.unary_stream(DO_ACTION)
    action = b"\x0a" + bytes([len("GetSessionOptions")]) + b"GetSessionOptions"
    results = list(rpc(action, metadata=daemon.auth(caller), timeout=30))
    body = flightsql.parse(results[0])[1][0]
    return flightsql.session_options(body)["transit.next_sequence"]


def flight_info(ch, daemon, sql, caller="primitive", timeout=60, sequence=None):
    """GetFlightInfo for `sql` at the caller's next sequence; returns the first ticket's bytes."""
    seq = sequence if sequence is not None else next_sequence(ch, daemon, caller)
    md = daemon.auth(caller) + [("x-transit-request-sequence", str(seq))]
    rpc = ch.unary_unary(GET_FLIGHT_INFO)
    kwargs = {"metadata": md}
    if timeout is not None:
        kwargs["timeout"] = timeout
    info = rpc(flightsql.flight_descriptor(flightsql.statement_query(sql)), **kwargs)
    return first_ticket(info)


def first_ticket(info: bytes) -> bytes:
    """FlightInfo.endpoint[0].ticket.ticket, decoded by hand (field 3 → field 1 → field 1)."""
    endpoint = flightsql.parse(info)[3][0]
    ticket = flightsql.parse(endpoint)[1][0]
    return flightsql.parse(ticket)[1][0]


def do_get(ch, daemon, ticket: bytes, caller="primitive", timeout=120):
    """A DoGet call as an iterator of raw FlightData messages (nothing is read until iterated)."""
    rpc = ch.unary_stream(DO_GET)
    return rpc(b"\x0a" + _varint(len(ticket)) + ticket, metadata=daemon.auth(caller), timeout=timeout)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def healthy_query(daemon, caller="primitive"):
    """A follow-up query through PyArrow on a new connection: the daemon still serves."""
    client = fl.FlightClient(daemon.uri)
    try:
        opts = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {daemon.token(caller)}".encode())],
                                    timeout=60)
        results = list(client.do_action(fl.Action("GetSessionOptions", b""), opts))
        seq = flightsql.session_options(results[0].body.to_pybytes())["transit.next_sequence"]
        opts = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {daemon.token(caller)}".encode()),
                                             (b"x-transit-request-sequence", str(seq).encode())], timeout=60)
        info = client.get_flight_info(fl.FlightDescriptor.for_command(
            flightsql.statement_query("SELECT COUNT(*) FROM primitive")), opts)
        table = client.do_get(info.endpoints[0].ticket, opts).read_all()
        assert table.num_rows == 1 and table.column(0)[0].as_py() >= 1_000_000
    finally:
        client.close()


def raw_connect(port: int, timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def recv_until_closed(s: socket.socket, limit_s: float = 30.0) -> bytes:
    """Reads until the peer closes (or `limit_s` passes); returns everything read."""
    out = bytearray()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            return bytes(out)
        if not chunk:
            return bytes(out)
        out.extend(chunk)
    raise AssertionError("the peer did not close within %.0fs" % limit_s)


# --- raw HTTP/2 (the pinned h2 library) -------------------------------------------------------

def h2_open(port: int, timeout: float = 10.0):
    """A raw HTTP/2 client connection: preface and SETTINGS sent, the server's SETTINGS read."""
    import h2.config
    import h2.connection
    import h2.events
    s = raw_connect(port, timeout)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    events = h2_read(s, conn, lambda evs: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in evs))
    return s, conn, events


def h2_read(s, conn, done, limit_s: float = 30.0):
    """Feeds received bytes to `conn` until done(events so far) or the peer closes; bounded."""
    events = []
    deadline = time.monotonic() + limit_s
    while not done(events):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError("no expected HTTP/2 event within %.0fs: %r" % (limit_s, events))
        s.settimeout(remaining)
        try:
            data = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            data = b""
        if not data:
            events.append("closed")
            break
        events.extend(conn.receive_data(data))
        out = conn.data_to_send()
        if out:
            try:
                s.sendall(out)
            except OSError:
                pass
    return events


def grpc_request_headers(port: int, path: str, metadata=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", f"127.0.0.1:{port}"), ("content-type", "application/grpc"),
            ("te", "trailers")] + list(metadata)


def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


def read_goaway(s, limit_s: float = 30.0):
    """Reads raw frames (hyperframe, no connection state machine: the server may keep sending
    after its GOAWAY) until a GOAWAY arrives; returns (error_code, debug_data) or None when the
    peer closed without one. Bounded by limit_s."""
    from hyperframe.frame import Frame, GoAwayFrame
    buf = bytearray()
    deadline = time.monotonic() + limit_s
    while True:
        while len(buf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(bytes(buf[:9])))
            if len(buf) < 9 + length:
                break
            frame.parse_body(memoryview(bytes(buf[9:9 + length])))
            del buf[:9 + length]
            if isinstance(frame, GoAwayFrame):
                return frame.error_code, frame.additional_data
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError("no GOAWAY within %.0fs" % limit_s)
        s.settimeout(remaining)
        try:
            data = s.recv(65536)
        except ConnectionResetError:
            return None
        except socket.timeout:
            continue
        if not data:
            return None
        buf.extend(data)
