"""Helpers for the disclosure tests: a daemon whose gateway.json the test edits and reloads with
SIGHUP (waiting for the daemon's own log line, never a sleep), exact-status DoGet through grpcio,
and FTK1 field readers."""

import json
import os
import shutil
import signal
import struct
import time
from pathlib import Path

import grpc
import pyarrow.flight as fl

import flightsql
from daemon import Daemon

DO_GET = "/arrow.flight.protocol.FlightService/DoGet"
RELOADED = "configuration reloaded"
SMALL_WINDOW = [("grpc.http2.bdp_probe", 0)]
REFUSED = "reload refused, previous configuration stays"


class ConfigDaemon(Daemon):
    """A demo daemon over its own state directory whose configuration the test rewrites."""

    @property
    def config_path(self) -> Path:
        return self.state_dir / "gateway.json"

    def config(self) -> dict:
        return json.loads(self.config_path.read_text())

    def write_config(self, cfg: dict) -> None:
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cfg, indent=2))
        os.replace(tmp, self.config_path)

    def edit_caller(self, name: str, **changes) -> None:
        cfg = self.config()
        caller = next(c for c in cfg["callers"] if c["name"] == name)
        for key, value in changes.items():
            if key == "read":
                caller.setdefault("rights", {})["read"] = value
            else:
                caller[key] = value
        self.write_config(cfg)

    def _count(self, needle: str) -> int:
        return sum(needle in line for line in list(self.output))

    def reload(self, timeout: float = 30.0) -> str:
        """Sends SIGHUP and waits for the daemon to report the outcome: 'reloaded' or the
        refusal line."""
        ok, bad = self._count(RELOADED), self._count(REFUSED)
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._count(RELOADED) > ok:
                return "reloaded"
            if self._count(REFUSED) > bad:
                return next(l for l in reversed(list(self.output)) if REFUSED in l).strip()
            time.sleep(0.02)
        raise AssertionError("the daemon did not report a reload outcome within %.0fs" % timeout)

    def replica_dir(self, target: Path) -> Path:
        """A second state directory: the same gateway.json, ticket key, principal keys,
        credentials and data files, but an engine directory of its own (no retained results)."""
        target.mkdir(mode=0o700)
        for part in ("keys", "credentials", "demo-data"):
            shutil.copytree(self.state_dir / part, target / part)
        shutil.copy2(self.config_path, target / "gateway.json")
        return target


def options(gateway, caller, sequence=None):
    headers = [(b"authorization", f"Bearer {gateway.token(caller)}".encode())]
    if sequence is not None:
        headers.append((b"x-transit-request-sequence", str(sequence).encode()))
    return fl.FlightCallOptions(headers=headers, timeout=60)


def next_sequence(gateway, caller):
    client = fl.FlightClient(gateway.uri)
    results = list(client.do_action(fl.Action("GetSessionOptions", b""), options(gateway, caller)))
    return flightsql.session_options(results[0].body.to_pybytes())["transit.next_sequence"]


def statement_info(gateway, caller, sql, sequence):
    client = fl.FlightClient(gateway.uri)
    return client.get_flight_info(fl.FlightDescriptor.for_command(flightsql.statement_query(sql)),
                                  options(gateway, caller, sequence))


def metadata_info(gateway, caller, command):
    client = fl.FlightClient(gateway.uri)
    return client.get_flight_info(fl.FlightDescriptor.for_command(command), options(gateway, caller))


def ticket_of(info) -> bytes:
    assert len(info.endpoints) == 1
    return info.endpoints[0].ticket.ticket


def expiry_ms(ticket: bytes) -> int:
    return struct.unpack_from("<Q", ticket, 137)[0]


def binding_revision(ticket: bytes) -> int:
    return struct.unpack_from("<Q", ticket, 56)[0]


class GrpcOutcome:
    """What a DoGet stream did, read with grpcio: messages received, then the exact status."""

    def __init__(self, messages, code, details, diagnostic):
        self.messages = messages
        self.code = code
        self.details = details
        self.diagnostic = diagnostic

    @property
    def diag_code(self):
        return self.diagnostic["code"] if self.diagnostic else None


def do_get_exact(gateway, caller, ticket: bytes, before_each=None) -> GrpcOutcome:
    """Redeems a ticket with grpcio and reads the stream to its end, calling before_each(i)
    before reading message i (to pause or act mid-stream)."""
    request = b"\x0a" + flightsql._varint(len(ticket)) + ticket
    # No BDP probing: the HTTP/2 window stays small, so the client holds few batches and the
    # gateway's readiness gate (not the client's buffer) decides how far the producer runs ahead.
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}", options=SMALL_WINDOW) as ch:
        rpc = ch.unary_stream(DO_GET, request_serializer=None, response_deserializer=None)
        call = rpc(request, metadata=[("authorization", f"Bearer {gateway.token(caller)}")],
                   timeout=60)
        received = 0
        try:
            while True:
                if before_each:
                    before_each(received)
                next(call)
                received += 1
        except StopIteration:
            return GrpcOutcome(received, grpc.StatusCode.OK, None, None)
        except grpc.RpcError as e:
            trailers = dict(e.trailing_metadata() or ())
            raw = trailers.get("transit-diagnostic-bin")
            return GrpcOutcome(received, e.code(), e.details(), json.loads(raw) if raw else None)
