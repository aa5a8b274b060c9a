"""The Prometheus endpoint after a known workload: exact RPC counts by method and status, exact
admission outcomes, and the stream, engine, budget and reload meters moving (issue 17)."""

import socket
import time

import grpc
import pyarrow as pa
import pyarrow.flight as fl
import pytest

from calls import Caller, app_metadata
from daemon import Daemon, gateway_once
from ops_support import metrics_port, sample, scrape

# 20,000 rows of two int64 columns: past the 64 KiB a result may keep in the journal, so its
# segments are files and the retained-segment gauges move.
ROWS = 20_000
SQL = f"SELECT id, a FROM primitive WHERE id < {ROWS}"
INVENTED = 50


def settled(port, done, timeout=10.0):
    """Scrapes until ``done(samples)`` (RPCs are counted as their streams close, just after the
    client saw the answer); bounded."""
    deadline = time.monotonic() + timeout
    while True:
        s = scrape(port)
        if done(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.1)


def rpc(s, method, status):
    return sample(s, "transit_rpc_seconds_count", method=method, status=status)


def metrics_daemon(tmp_path):
    """A demo daemon, restarted with its metrics listener on a free loopback port; returns it
    with its configuration."""
    d = Daemon(tmp_path / "state").start()
    d.assert_clean_stop()
    cfg = d.config()
    cfg["ops"] = {"metrics": {"host": "127.0.0.1", "port": 0}}
    d.write_config(cfg)
    return d.start(), cfg


def test_metrics_after_known_workload(tmp_path):
    d, cfg = metrics_daemon(tmp_path)
    try:
        port = metrics_port(d.output)
        before = scrape(port)
        assert all(sample(before, "transit_admission_total", outcome=o) == 0
                   for o in ("accepted", "replayed", "conflict", "gap", "pruned", "busy"))
        assert sample(before, "transit_allocator_limit_bytes") > 0
        assert before[("transit_early_runs_adopted_total", frozenset())] == 0
        # Present from the start; a daemon whose standard error is read drops no line.
        assert before[("transit_log_lines_dropped_total", frozenset())] == 0

        c = Caller(d, "primitive")
        seq = c.next_sequence()                                   # DoAction OK
        info = c.info(SQL, seq)                                   # GetFlightInfo OK, accepted
        table = c.read(info)                                      # DoGet OK
        assert table.num_rows == ROWS
        again = c.info(SQL, seq)                                  # GetFlightInfo OK, replayed
        assert app_metadata(again) == app_metadata(info)
        with pytest.raises(pa.ArrowException):
            c.info("SELECT COUNT(*) FROM primitive", seq)         # ABORTED, conflict
        with pytest.raises(pa.ArrowException):
            c.info(SQL, app_metadata(info)["next_sequence"] + 5)  # FAILED_PRECONDITION, gap
        bad = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer tfg_not_a_credential")],
                                   timeout=30)
        for _ in range(2):                                        # UNAUTHENTICATED x2
            with pytest.raises(fl.FlightUnauthenticatedError):
                c.client.get_flight_info(fl.FlightDescriptor.for_command(b"x"), bad)

        # Paths the daemon does not serve, each name new: one series for all of them, so a
        # caller (unauthenticated, too) cannot mint a timer a call.
        with grpc.insecure_channel(f"127.0.0.1:{d.port}") as ch:
            for i in range(INVENTED):
                call = ch.unary_unary(f"/invented.Service/Method{i}",
                                      request_serializer=bytes, response_deserializer=bytes)
                with pytest.raises(grpc.RpcError) as e:
                    call(b"", timeout=10)
                assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED

        expected = {
            ("unknown", "UNIMPLEMENTED"): INVENTED,
            ("DoAction", "OK"): 1,
            ("GetFlightInfo", "OK"): 2,
            ("DoGet", "OK"): 1,
            ("GetFlightInfo", "ABORTED"): 1,
            ("GetFlightInfo", "FAILED_PRECONDITION"): 1,
            ("GetFlightInfo", "UNAUTHENTICATED"): 2,
        }
        s = settled(port, lambda s: all(rpc(s, *k) == v for k, v in expected.items()))
        counted = {k: rpc(s, *k) for k in expected}
        assert counted == expected
        assert sum(v for (n, _), v in s.items() if n == "transit_rpc_seconds_count") == 8 + INVENTED
        assert not any("Method" in v for _, labels in s for k, v in labels if k == "method")
        admissions = {o: sample(s, "transit_admission_total", outcome=o)
                      for o in ("accepted", "replayed", "conflict", "gap", "pruned", "busy",
                                "failed")}
        assert admissions == {"accepted": 1, "replayed": 1, "conflict": 1, "gap": 1, "pruned": 0,
                              "busy": 0, "failed": 0}
        assert sample(s, "transit_statement_seconds_count", outcome="accepted") == 1
        assert sample(s, "transit_statement_seconds_count", outcome="replayed") == 1
        # Latency histograms: buckets for the RPC series.
        assert sample(s, "transit_rpc_seconds_bucket", method="DoGet", status="OK", le="+Inf") == 1
        assert sample(s, "transit_stream_batches_total") >= 1
        assert sample(s, "transit_stream_bytes_total") > 0
        assert sample(s, "transit_streams_live") == 0
        assert sample(s, "transit_connections_live") >= 1
        assert sample(s, "transit_connections_closed_frames_total") == 0  # no frame floods here
        assert sample(s, "transit_journal_commit_seconds_count") >= 1
        assert sample(s, "transit_journal_failures_total") == 0
        assert sample(s, "transit_retained_segments") >= 1
        assert sample(s, "transit_retained_bytes") > 0
        # At most the one accepted statement ran early (the kill -9 harness counts them grow).
        assert sample(s, "transit_early_runs_adopted_total") in (0, 1)
        # ... and of those, at most the one committed with its submit's acceptance.
        assert (sample(s, "transit_early_results_with_submit_total")
                <= sample(s, "transit_early_runs_adopted_total"))
        assert ("transit_early_runs_running", frozenset()) in s

        assert d.reload() == "reloaded"
        broken = d.config()
        broken["callers"][0]["principal"] = broken["callers"][1]["principal"]
        d.write_config(broken)
        assert "reload refused" in d.reload()
        d.write_config(cfg)
        s = scrape(port)
        assert sample(s, "transit_reloads_total", result="ok") == 1
        assert sample(s, "transit_reloads_total", result="refused") == 1
    finally:
        d.assert_clean_stop()


def http_exchange(port, request: bytes) -> bytes:
    """One raw request on its own connection; everything the listener answered before it closed
    the connection (bounded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(request)
        out = b""
        try:
            while chunk := c.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass  # closed with requests unread (pipelined ones): the kernel resets, answer kept
        return out


def test_the_listener_answers_scrapes_while_connections_never_finish_their_request(tmp_path):
    """The JDK's HTTP server, which served the metrics until 2026-12-05, read a request on its
    one thread with no time bound: a single connection that sent half a request stopped every
    scrape after it, for good."""
    d, _ = metrics_daemon(tmp_path)
    stalled = []
    try:
        port = metrics_port(d.output)
        for _ in range(200):
            c = socket.create_connection(("127.0.0.1", port), timeout=15)
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            stalled.append(c)
        for _ in range(5):
            s = scrape(port)  # each bounded by its own 10 s timeout: a hang guard
            assert sample(s, "transit_admission_total", outcome="accepted") == 0
        # Served beside the stalled requests, not after them: the last one opened is still held
        # (the listener cuts each 5 s after it was accepted), which a listener that answered
        # only once the stalled connections were gone could not show.
        last = stalled[-1]
        last.setblocking(False)
        try:
            got = last.recv(1)
        except BlockingIOError:
            got = None  # open, nothing to read: still stalled
        last.settimeout(15)
        assert got is None, f"the last stalled request was answered or closed first: {got!r}"
        # Each stalled connection is closed by the listener (end of file, before our timeout).
        assert all(c.recv(1024) == b"" for c in stalled)

        assert http_exchange(port, b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n").startswith(
            b"HTTP/1.1 404 ")
        assert http_exchange(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\n"
                                   b"Content-Length: 0\r\n\r\n").startswith(b"HTTP/1.1 405 ")
        head = http_exchange(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
        for junk in (b"\x16\x03\x01\x02\x00" + bytes(range(256)) + b"\r\n\r\n",
                     b"GET /metrics HTTP/1.1\r\nX: " + b"y" * 20000 + b"\r\n\r\n"):
            answer = http_exchange(port, junk)
            assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:80]
        # Requests pipelined behind the first on one connection: one answer, then the close,
        # and the rest are dropped unread (each would have cost a scrape, answered or not).
        pipelined = http_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 500)
        assert pipelined.count(b"HTTP/1.1 200 ") == 1, pipelined.count(b"HTTP/1.1 ")
        assert scrape(port)
    finally:
        for c in stalled:
            c.close()
        d.assert_clean_stop()


def test_a_start_that_fails_does_not_wait_out_the_drain_notice(tmp_path):
    """The metrics port taken: the start fails after the gRPC listener bound, and exits 1 at
    once; the drain notice (the longest allowed here) is for an edge routing to a daemon that
    served."""
    d = Daemon(tmp_path / "state").start()
    d.assert_clean_stop()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        cfg = d.config()
        cfg["ops"] = {"metrics": {"host": "127.0.0.1", "port": taken.getsockname()[1]},
                      "drain_notice_ms": 300_000}
        d.write_config(cfg)
        # The notice (the longest allowed) outlasts the run's bound: waiting it out fails here.
        r = gateway_once("run", "--config", str(d.config_path), timeout=120)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "metrics listener" in r.stdout + r.stderr
        assert "draining:" not in r.stdout + r.stderr, "announced a drain notice"
