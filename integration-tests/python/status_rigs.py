"""Daemons and raw-gRPC helpers for test_status_table.py.

``Rig``: the real daemon over a copy of the session gateway's static deployment (configuration,
credentials, keys, demo data; a fresh engine journal), with edited limits or deployment fields,
optional ``TRANSIT_TEST_FAULTS`` (docs/admission.md section 9) and SIGHUP reloads.

``Seen``/``seen``: one failed call as grpcio reports it: the exact status, the decoded
grpc-message and the raw ``transit-diagnostic-bin`` value (None when absent).
"""

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import grpc

import flightsql
from admission_support import FaultyDaemon
from diagnostic_clients import TRAILER, ticket_message
from disclosure_support import ConfigDaemon
from daemon import ROOT

GET_FLIGHT_INFO = "/arrow.flight.protocol.FlightService/GetFlightInfo"
DO_GET = "/arrow.flight.protocol.FlightService/DoGet"
DO_ACTION = "/arrow.flight.protocol.FlightService/DoAction"
# A status-table row in docs/status.md: "| `CAUSE` | `STATUS` | ...".
_ROW = re.compile(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \|")


def status_rows():
    """[(cause, status)] of every row of the status table in docs/status.md, in order."""
    rows = [(m.group(1), m.group(2)) for line in
            (ROOT / "docs" / "status.md").read_text().splitlines() if (m := _ROW.match(line))]
    assert len(rows) >= 20, f"the status table parsed to {len(rows)} rows"
    return rows


class Rig(FaultyDaemon, ConfigDaemon):
    """FaultyDaemon (faults) + ConfigDaemon (edit gateway.json, SIGHUP, wait for the outcome)."""

    @classmethod
    def over(cls, base, limits=None, deployment=None, faults=None):
        state = Path(tempfile.mkdtemp(prefix="transit-status-"))
        for name in ("credentials", "keys", "demo-data"):
            shutil.copytree(base.state_dir / name, state / name, copy_function=shutil.copy2)
        cfg = json.loads((base.state_dir / "gateway.json").read_text())
        cfg.setdefault("limits", {}).update(limits or {})
        cfg.setdefault("deployment", {}).update(deployment or {})
        cfg["listen"]["port"] = 0
        (state / "gateway.json").write_text(json.dumps(cfg, indent=2))
        return cls(state, faults).start()

    def close(self):
        try:
            assert self.stop() == 0, "the gateway did not exit cleanly (leak or undrained stream)"
        finally:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def channel(self):
        # A connection of its own per channel: the daemon serves one call at a time per connection.
        return grpc.insecure_channel(f"127.0.0.1:{self.port}",
                                     options=[("grpc.use_local_subchannel_pool", 1)])

    def segment_files(self):
        d = self.state_dir / "engine" / "segments"
        return set(d.iterdir()) if d.exists() else set()


@dataclass
class Seen:
    status: str
    message: str
    raw_trailer: bytes


def seen(err: grpc.RpcError) -> Seen:
    pairs = list(err.trailing_metadata() or ()) + list(err.initial_metadata() or ())
    raws = [v for k, v in pairs if k == TRAILER]
    assert len(raws) <= 1, f"{len(raws)} {TRAILER} values"
    return Seen(err.code().name, err.details() or "", raws[0] if raws else None)


def metadata(gw, caller, sequence=None, extra=()):
    md = [("authorization", f"Bearer {gw.token(caller)}")] if caller else []
    if sequence is not None:
        md.append(("x-transit-request-sequence", str(sequence)))
    return md + list(extra)


def info(ch, gw, caller, command, sequence=None, extra=(), timeout=60):
    """GetFlightInfo; returns the FlightInfo bytes (raises grpc.RpcError on failure)."""
    return ch.unary_unary(GET_FLIGHT_INFO)(flightsql.flight_descriptor(command),
                                           metadata=metadata(gw, caller, sequence, extra),
                                           timeout=timeout)


def sql_info(ch, gw, caller, sql, sequence, timeout=60):
    return info(ch, gw, caller, flightsql.statement_query(sql), sequence, timeout=timeout)


def ticket_of(info_bytes: bytes) -> bytes:
    endpoints = flightsql.parse(info_bytes)[3]
    assert len(endpoints) == 1
    return flightsql.parse(flightsql.parse(endpoints[0])[1][0])[1][0]


def do_get(ch, gw, caller, ticket: bytes):
    """Reads a whole DoGet stream; returns the number of messages (raises on failure)."""
    return sum(1 for _ in ch.unary_stream(DO_GET)(ticket_message(ticket),
                                                  metadata=metadata(gw, caller), timeout=60))


def next_sequence(ch, gw, caller) -> int:
    action = flightsql._field_bytes(1, b"GetSessionOptions")
    results = list(ch.unary_stream(DO_ACTION)(action, metadata=metadata(gw, caller), timeout=30))
    return flightsql.session_options(flightsql.parse(results[0])[1][0])["transit.next_sequence"]


def failure(fn, *args, **kwargs) -> Seen:
    try:
        fn(*args, **kwargs)
    except grpc.RpcError as e:
        return seen(e)
    raise AssertionError("the call succeeded")
