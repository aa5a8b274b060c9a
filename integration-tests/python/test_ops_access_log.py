"""The access log: exactly one line per RPC of a scripted session, each parsed as JSON in JSON
mode, carrying caller, method, status, diagnostic code, duration, bytes, the statement's
correlation and the request id the client received; authentication failures logged without the
credential (issue 17); and a standard error nobody reads, which costs log lines, not service."""

import json
import re
import socket
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from calls import Caller, options
from daemon import Daemon
from ops_support import sample, scrape

SQL = "SELECT COUNT(*), SUM(a) FROM primitive WHERE a > 2"
BAD_TOKEN = "tfg_" + "q" * 40


class RequestIds(fl.ClientMiddlewareFactory):
    """Collects x-transit-request-id from each call's headers or trailers."""

    def __init__(self):
        self.ids = []

    def start_call(self, info):
        factory = self

        class Seen(fl.ClientMiddleware):
            def __init__(self):
                self.found = None

            def received_headers(self, headers):
                if self.found is None and "x-transit-request-id" in headers:
                    self.found = headers["x-transit-request-id"][0]
                    factory.ids.append(self.found)

        return Seen()


def records(output, logger):
    out = []
    for line in list(output):
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("loggerName") == logger:
                out.append(r)
    return out


def fields(record):
    kv = {}
    for pair in record.get("kvpList", []):
        kv.update(pair)
    return kv


def json_access_log(tmp_path):
    """A daemon whose log is JSON with the access log on (the first start writes its state)."""
    d = Daemon(tmp_path / "state").start()
    d.assert_clean_stop()
    cfg = d.config()
    cfg["ops"] = {"log": {"format": "json", "access": True}}
    d.write_config(cfg)
    return d.start()


def test_access_log_one_json_line_per_rpc(tmp_path):
    d = json_access_log(tmp_path)
    try:
        ids = RequestIds()
        c = Caller(d, "primitive")
        c.client = fl.FlightClient(d.uri, middleware=[ids])
        seq = c.next_sequence()                                     # 1 DoAction
        info = c.info(SQL, seq)                                     # 2 GetFlightInfo
        c.read(info)                                                # 3 DoGet
        with pytest.raises(pa.ArrowException):
            c.info(SQL, seq + 9)                                    # 4 gap
        bad = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {BAD_TOKEN}".encode())],
                                   timeout=30)
        for _ in range(3):                                          # 5-7 unauthenticated
            with pytest.raises(fl.FlightUnauthenticatedError):
                c.client.get_flight_info(fl.FlightDescriptor.for_command(b"x"), bad)
        session = 7

        deadline = time.monotonic() + 10
        while len(records(d.output, "transit.access")) < session and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # nothing more may follow
        lines = [fields(r) for r in records(d.output, "transit.access")]
        assert len(lines) == session, lines
        assert [(l["method"], l["status"]) for l in lines] == [
            ("DoAction", "OK"), ("GetFlightInfo", "OK"), ("DoGet", "OK"),
            ("GetFlightInfo", "FAILED_PRECONDITION")] + [("GetFlightInfo", "UNAUTHENTICATED")] * 3
        assert [l["caller"] for l in lines] == ["primitive"] * 4 + ["-"] * 3
        assert lines[3]["code"] == "query.sequence_gap"
        assert lines[4]["code"] == "auth.unauthenticated"
        assert lines[1]["admission"] == "accepted" and int(lines[1]["correlation"]) > 0
        assert "correlation" not in lines[0]
        assert all(float(l["duration_ms"]) >= 0 for l in lines)
        assert int(lines[2]["bytes_out"]) > 0 and int(lines[1]["bytes_in"]) > 0
        # The request id each client call received is the one its line carries.
        assert len(ids.ids) == session
        assert [l["request_id"] for l in lines] == ids.ids
        assert len(set(ids.ids)) == session

        # Three failures within the 10 s interval: one line (the rest are counted for the next).
        failures = records(d.output, "transit.auth")
        assert len(failures) == 1 and failures[0]["level"] == "WARN"
        assert fields(failures[0])["method"] == "GetFlightInfo"
        assert not any(BAD_TOKEN in line or d.token("primitive") in line for line in d.output)
    finally:
        d.assert_clean_stop()


def test_calls_without_a_caller_write_a_bounded_number_of_access_lines(tmp_path):
    """Refused before authentication, a call costs its peer one stream: their lines are bounded
    (100 a second), the rest counted in the next one written; authenticated calls' lines are
    all written."""
    d = json_access_log(tmp_path)
    try:
        c = Caller(d, "primitive")
        bad = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {BAD_TOKEN}".encode())],
                                   timeout=30)
        refused = 600

        def refuse():
            with pytest.raises(fl.FlightUnauthenticatedError):
                list(c.client.do_action(fl.Action("GetSessionOptions", b""), bad))

        for _ in range(refused):
            refuse()
        for _ in range(150):
            c.next_sequence()
        time.sleep(1.1)  # a second later: the next line written reports the ones that were not
        refuse()
        d.quiet_log()
        lines = [fields(r) for r in records(d.output, "transit.access")]
        anonymous = [l for l in lines if l.get("caller") == "-" and "suppressed" not in l]
        reports = [int(l["suppressed"]) for l in lines if "suppressed" in l]
        assert 100 < len(anonymous) < refused, len(anonymous)
        assert reports and len(anonymous) + sum(reports) == refused + 1, (len(anonymous), reports)
        assert sum(1 for l in lines if l.get("caller") == "primitive") == 150
        c.close()
    finally:
        d.assert_clean_stop()


def test_an_unread_standard_error_does_not_stop_the_daemon(tmp_path):
    """A log reader that stops reading (a full pipe): the daemon keeps answering, its lines past
    the queue are dropped and counted in ``transit_log_lines_dropped_total``, and once the reader
    reads again the next lines say how many were lost. Before the lines had a writer thread of
    their own, the first access line that did not fit the pipe stopped a Netty event loop, and
    every call on it waited for the deadline."""
    d = Daemon(tmp_path / "state").start()
    d.assert_clean_stop()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = d.config()
    cfg["ops"] = {"metrics": {"host": "127.0.0.1", "port": port}, "log": {"access": True}}
    d.write_config(cfg)
    d.stderr_unread = True
    d.start()
    proc = d.proc
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    try:
        c = Caller(d, "primitive")
        quick = options(d, "primitive")
        # A 64 KiB pipe holds about 300 access lines and the queue 8,192: well past both.
        calls = 12_000
        for _ in range(calls):
            list(c.client.do_action(fl.Action("GetSessionOptions", b""), quick))
        dropped = sample(scrape(port), "transit_log_lines_dropped_total")
        assert dropped > 0

        reader.start()
        report = re.compile(r"(\d+) log lines dropped: the log output did not keep up")
        deadline = time.monotonic() + 30
        while not any(report.search(l) for l in list(lines)) and time.monotonic() < deadline:
            time.sleep(0.05)
        reported = sum(int(m.group(1)) for l in list(lines) if (m := report.search(l)))
        assert reported > 0, "".join(list(lines)[-20:])
        assert reported <= dropped
        c.next_sequence()
        deadline = time.monotonic() + 30
        while (sum("method=DoAction" in l for l in list(lines)) == 0
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert any("method=DoAction" in l for l in list(lines))
    finally:
        d.assert_clean_stop()
        if reader.is_alive():
            reader.join(10)  # EOF follows the exit
        proc.stderr.close()


def test_a_debug_level_never_logs_a_callers_token(gateway):
    """At debug, gRPC's Netty frame logger would print every request header, the Bearer token
    included (until 2026-12-06 it did): it stays at INFO while the gateway's own loggers open."""
    d = Daemon.variant(gateway, {"ops": {"log": {"level": "debug"}}}).start()
    try:
        c = Caller(d, "primitive")
        c.read(c.info(SQL, c.next_sequence()))
        c.close()
        d.quiet_log()
        log = "".join(d.output)
        assert " DEBUG " in log, "the gateway's own debug lines are written"
        assert d.token("primitive") not in log
        assert "Bearer tfg_" not in log, [l for l in d.output if "Bearer" in l][:3]
    finally:
        d.close()
