"""Issue 14 finding 4 (fair shares) and the HTTP/2 rapid-reset bound of finding 3, against the
real daemon: one caller holding its share of live DoGets does not lock another caller out, the
refused caller learns its own share (limit/required), and a client that resets streams faster
than the window allows loses its connection while others keep being served — as does one that
sends frames carrying no request (empty DATA, SETTINGS) or makes the server reset its streams
faster than that (server.transport.FrameBudget)."""

import time

import grpc
import h2.errors
import pyarrow as pa
import pytest
from hyperframe.frame import (ContinuationFrame, DataFrame, GoAwayFrame, HeadersFrame, RstStreamFrame,
                              SettingsFrame, WindowUpdateFrame)
from hpack import Encoder

import calls as C
import h2raw as H

SHARE = 2


@pytest.fixture(scope="module")
def d(configured, tmp_path_factory):
    daemon = configured(tmp_path_factory.mktemp("shares"), {"limits": {
        "max_live_streams": 4, "max_live_streams_per_caller": SHARE,
        "max_rst_frames_per_window": 50, "rst_frames_window_ms": 10000}}).start()
    yield daemon
    if daemon.alive():
        daemon.assert_clean_stop()


def fact(diag, name):
    return next(f["value"] for f in diag["facts"] if f["name"] == name)


def test_one_caller_holding_its_share_of_streams_does_not_lock_out_another(d):
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, "SELECT id, a, b, c, d FROM primitive")
    ch.close()
    held = []
    try:
        # The share of live streams, each on a connection of its own, each left unread after
        # its first batch so that it stays live.
        for _ in range(SHARE):
            c = C.channel(d, **{"grpc.http2.bdp_probe": 0})
            call = C.do_get(c, d, ticket)
            next(iter(call))
            held.append((c, call))
        c = C.channel(d)
        code, message, diag = C.failure(lambda: list(C.do_get(c, d, ticket)))
        c.close()
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, message)
        assert diag["code"] == "flight.caller_streams_exhausted", diag
        assert fact(diag, "bound") == "caller"
        assert int(fact(diag, "limit")) == SHARE and int(fact(diag, "required")) == SHARE + 1
        # Another caller is served in full meanwhile: the gateway has room beyond one share.
        other = C.Caller(d, "mixed")
        try:
            table, _ = other.query("SELECT COUNT(*) FROM mixed")
            assert table.num_rows == 1 and table.column(0)[0].as_py() > 0
        finally:
            other.close()
    finally:
        for c, call in held:
            call.cancel()
            c.close()
    # Released shares are the caller's again: a cancelled stream gives its share back once its
    # producer has ended, which may come just after the cancel returns.
    deadline = time.monotonic() + 15
    while True:
        try:
            C.healthy_query(d)
            break
        except pa.ArrowException as e:
            if "flight.caller_streams_exhausted" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_rapid_reset_loses_its_connection_and_others_are_served(d):
    s, conn, _ = H.h2_open(d.port)
    encoder = Encoder()
    out = bytearray()
    # HEADERS then RST_STREAM(CANCEL), again and again: more resets than the window allows.
    for i in range(200):
        sid = 1 + 2 * i
        f = HeadersFrame(sid)
        f.data = encoder.encode(H.grpc_request_headers(d.port, C.DO_ACTION, d.auth()))
        f.flags.add("END_HEADERS")
        out += f.serialize()
        out += RstStreamFrame(sid, error_code=h2.errors.ErrorCodes.CANCEL).serialize()
    try:
        s.sendall(bytes(out))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may already have closed the connection
    goaway = next((f for _, f in H.frames(s, 30, "GOAWAY") if isinstance(f, GoAwayFrame)), None)
    assert goaway is not None, "rapid reset was not stopped"
    assert goaway.error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, goaway.error_code
    s.close()
    C.healthy_query(d)


def flood(d, preamble: bytes, frame: bytes, count: int = 2000):
    """Opens a raw connection, sends ``preamble`` and then ``count`` copies of ``frame``; returns
    the GOAWAY's (error code, debug data), or None when the server closed without one."""
    s, _, _ = H.h2_open(d.port)
    try:
        try:
            s.sendall(preamble + frame * count)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may already have closed the connection
        return H.read_goaway(s, 30)
    finally:
        s.close()


def check_request(d, sid: int, caller=None) -> bytes:
    """HEADERS (END_HEADERS, the stream left open) of a health Check on stream ``sid``."""
    f = HeadersFrame(sid)
    f.data = Encoder().encode(H.grpc_request_headers(
        d.port, "/grpc.health.v1.Health/Check", d.auth(caller) if caller else ()))
    f.flags.add("END_HEADERS")
    return f.serialize()


def test_empty_data_frames_lose_their_connection_and_others_are_served(d):
    """DATA frames without bytes use no flow-control window, and gRPC kept a buffer for each:
    14 million from one connection without a credential ended the daemon's heap (2026-12-07).
    They count against the reset bound (50 here)."""
    empty = DataFrame(1)
    goaway = flood(d, check_request(d, 1), empty.serialize())
    assert goaway is not None, "the empty DATA frames were not stopped"
    assert goaway[0] == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, goaway
    C.healthy_query(d)


def test_streams_the_server_must_reset_count_against_the_bound(d):
    """Each stream opened and then given a zero window update, which the server must reset
    (the "MadeYouReset" class): until 2026-12-07 only the resets a client sends were counted,
    and 200,000 server resets in 8 s delayed other callers by seconds."""
    out = bytearray()
    for i in range(200):
        sid = 1 + 2 * i
        zero = WindowUpdateFrame(sid)
        zero.window_increment = 0
        out += check_request(d, sid, "primitive") + zero.serialize()
    goaway = flood(d, bytes(out), b"", 0)
    assert goaway is not None, "the server's resets were not bounded"
    assert goaway[0] == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, goaway
    C.healthy_query(d)


def test_a_header_block_that_never_ends_loses_its_connection(d):
    """HEADERS without END_HEADERS, then empty CONTINUATION frames: Netty joins them into the
    block without reporting them, and the block grows nothing (280 million frames in 12 s kept a
    network thread busy, 2026-12-07). The scan ahead of gRPC's handler counts them."""
    f = HeadersFrame(1)
    f.data = Encoder().encode(H.grpc_request_headers(d.port, C.DO_ACTION, d.auth()))
    goaway = flood(d, f.serialize(), ContinuationFrame(1).serialize(), 200)
    assert goaway is not None, "the CONTINUATION frames were not stopped"
    assert goaway[0] == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, goaway
    C.healthy_query(d)


def test_a_settings_flood_loses_its_connection(d):
    settings = SettingsFrame(0)
    settings.settings = {SettingsFrame.INITIAL_WINDOW_SIZE: 65535}
    goaway = flood(d, b"", settings.serialize(), 200)
    assert goaway is not None, "the SETTINGS flood was not stopped"
    assert goaway[0] == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, goaway
    C.healthy_query(d)


def test_accounting_returns_to_zero(d):
    C.healthy_query(d)
    d.assert_clean_stop()
