"""Helpers for the exactly-once admission tests against the real daemon process.

- ``FaultyDaemon``: a Daemon started with ``TRANSIT_TEST_FAULTS`` (the daemon's test-only hook)
  and, optionally, changed ``limits`` in the demo ``gateway.json``.
- ``Journal``: read-only SQL over the engine's SQLite journal, the evidence that a namespace ran
  exactly once (one query row per namespace, next sequence per principal).
- ``statement`` / ``failure``: GetFlightInfo through grpcio, which reports exact status codes
  (PyArrow folds ABORTED, FAILED_PRECONDITION and UNAVAILABLE into one class).
"""

import json
import os
import sqlite3
import time
from pathlib import Path

import grpc

import flightsql
from daemon import Daemon

GET_FLIGHT_INFO = "/arrow.flight.protocol.FlightService/GetFlightInfo"
DO_ACTION = "/arrow.flight.protocol.FlightService/DoAction"
U64 = (1 << 64) - 1


class FaultyDaemon(Daemon):
    """The real daemon, started with the given test faults (None: none)."""

    def __init__(self, state_dir, faults=None):
        super().__init__(state_dir)
        self.faults = faults

    def start(self, timeout: float = 90.0):
        saved = os.environ.pop("TRANSIT_TEST_FAULTS", None)
        try:
            if self.faults:
                os.environ["TRANSIT_TEST_FAULTS"] = self.faults
            return super().start(timeout)
        finally:
            os.environ.pop("TRANSIT_TEST_FAULTS", None)
            if saved is not None:
                os.environ["TRANSIT_TEST_FAULTS"] = saved

    def config(self) -> dict:
        return json.loads((self.state_dir / "gateway.json").read_text())

    def write_config(self, cfg: dict) -> None:
        tmp = self.state_dir / "gateway.json.tmp"
        tmp.write_text(json.dumps(cfg, indent=2))
        tmp.replace(self.state_dir / "gateway.json")

    def principal(self, caller: str) -> int:
        return next(c["principal"] for c in self.config()["callers"] if c["name"] == caller)

    def journal(self) -> "Journal":
        return Journal(self.state_dir / "engine" / "journal.sqlite")


def prepared_state(tmp_path: Path, limits=None) -> Path:
    """A demo state directory (data, keys, credentials) created by one clean run, with limits."""
    state = tmp_path / "state"
    d = Daemon(state).start()
    assert d.stop() == 0
    if limits:
        path = state / "gateway.json"
        cfg = json.loads(path.read_text())
        cfg["limits"] = limits
        path.write_text(json.dumps(cfg, indent=2))
    return state


class Journal:
    """Read-only queries over the engine journal (safe while the daemon runs: SQLite WAL)."""

    def __init__(self, path: Path):
        self.path = path

    def _rows(self, sql, *args):
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def next_sequence(self, principal: int) -> int:
        rows = self._rows("SELECT next_sequence FROM principals WHERE principal = ?", principal)
        return rows[0][0] & U64 if rows else 1

    def queries(self, principal: int) -> dict:
        """{namespace: (correlation, state)}; raises if a namespace has two query rows."""
        out = {}
        for ns, corr, state in self._rows(
                "SELECT namespace, correlation, state FROM queries WHERE principal = ?", principal):
            assert ns & U64 not in out, f"namespace {ns} has two queries"
            out[ns & U64] = (corr & U64, state)
        return out

    def query_rows(self) -> int:
        return self._rows("SELECT COUNT(*) FROM queries")[0][0]

    def commands(self, principal: int) -> int:
        return self._rows("SELECT COUNT(*) FROM commands WHERE principal = ?", principal)[0][0]

    def state_of(self, correlation: int):
        rows = self._rows("SELECT state FROM queries WHERE correlation = ?", correlation)
        return rows[0][0] if rows else None

    def wait_state(self, correlation: int, states, timeout: float = 60.0):
        """Polls (bounded) until the query is in one of ``states``; returns the state seen."""
        end = time.monotonic() + timeout
        while True:
            s = self.state_of(correlation)
            if s in states or time.monotonic() > end:
                return s
            time.sleep(0.05)


def wait_until(predicate, timeout: float = 60.0, what: str = "condition"):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


def connect(gateway) -> grpc.Channel:
    """A channel with a connection of its own (grpcio shares connections between channels by
    default, and the daemon serves one call at a time per connection)."""
    return grpc.insecure_channel(f"127.0.0.1:{gateway.port}",
                                 options=[("grpc.use_local_subchannel_pool", 1)])


def metadata(gateway, caller, sequence=None):
    md = [("authorization", f"Bearer {gateway.token(caller)}")]
    if sequence is not None:
        md.append(("x-transit-request-sequence", str(sequence)))
    return md


def statement(channel, gateway, caller, sql, sequence, timeout=60):
    """GetFlightInfo for ``sql`` at ``sequence``; returns the FlightInfo bytes."""
    rpc = channel.unary_unary(GET_FLIGHT_INFO)
    return rpc(flightsql.flight_descriptor(flightsql.statement_query(sql)),
               metadata=metadata(gateway, caller, sequence), timeout=timeout)


def statement_future(channel, gateway, caller, sql, sequence, timeout=60):
    rpc = channel.unary_unary(GET_FLIGHT_INFO)
    return rpc.future(flightsql.flight_descriptor(flightsql.statement_query(sql)),
                      metadata=metadata(gateway, caller, sequence), timeout=timeout)


def failure_of(error: grpc.RpcError):
    """(status code, message, diagnostic dict or None) of a failed call."""
    trailers = dict(error.trailing_metadata() or ())
    raw = trailers.get("transit-diagnostic-bin")
    return error.code(), error.details(), json.loads(raw) if raw else None


def failure(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except grpc.RpcError as e:
        return failure_of(e)
    raise AssertionError("the call succeeded")


def ticket_of(info_bytes: bytes) -> bytes:
    """The one endpoint's FTK1 ticket of a statement FlightInfo (protobuf bytes)."""
    endpoints = flightsql.parse(info_bytes)[3]
    assert len(endpoints) == 1
    return flightsql.parse(flightsql.parse(endpoints[0])[1][0])[1][0]


def info_fields(info_bytes: bytes):
    """(correlation, app_metadata dict) of a statement FlightInfo (protobuf bytes)."""
    app_metadata = json.loads(flightsql.parse(info_bytes)[7][0])
    return flightsql.ticket_correlation(ticket_of(info_bytes)), app_metadata


def read_result(gateway, caller, info_bytes: bytes):
    """Reads the statement's result with PyArrow (DoGet) as a list of row tuples."""
    import pyarrow.flight as fl
    client = fl.FlightClient(gateway.uri)
    try:
        options = fl.FlightCallOptions(headers=[(k.encode(), v.encode())
                                                for k, v in metadata(gateway, caller)], timeout=60)
        table = client.do_get(fl.Ticket(ticket_of(info_bytes)), options).read_all()
        return [tuple(r.values()) for r in table.to_pylist()]
    finally:
        client.close()


def next_sequence(channel, gateway, caller) -> int:
    rpc = channel.unary_stream(DO_ACTION)
    action = flightsql._field_bytes(1, b"GetSessionOptions")
    results = list(rpc(action, metadata=metadata(gateway, caller), timeout=30))
    body = flightsql.parse(results[0])[1][0]
    return flightsql.session_options(body)["transit.next_sequence"]
