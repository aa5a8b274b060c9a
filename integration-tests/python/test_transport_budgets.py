"""One test per transport budget (docs/limits.md), each from a real client against a daemon
configured with a small value of that budget; every daemon must stop with zero leaked bytes.

The 16 KiB message budget is test_exact_status.py::test_message_over_16_kib_is_resource_exhausted;
the inbound metadata budget and one-stream-per-connection are in test_hostile_input.py."""

import time

import grpc
import h2.errors
import pytest

import edgehelp as E
from edgehelp import template_state  # noqa: F401  (session fixture)

BIG = "SELECT id, a, b, c, d FROM primitive"


@pytest.fixture
def daemon_with(template_state, tmp_path):
    started = []

    def start(limits=None, **overrides):
        if limits:
            overrides["limits"] = limits
        d = E.ConfiguredDaemon(template_state, tmp_path / f"d{len(started)}", overrides).start()
        started.append(d)
        return d

    yield start
    for d in started:
        if d.alive():
            d.assert_clean_stop()


def diag_fact(diag, name):
    return next(f["value"] for f in diag["facts"] if f["name"] == name)


def test_max_connections_refuses_the_excess_connection(daemon_with):
    d = daemon_with({"max_connections": 2})
    a, b, c = E.channel(d.target), E.channel(d.target), E.channel(d.target)
    E.next_sequence(a, d)
    E.next_sequence(b, d)
    code, _, diag = E.rpc_failure(E.next_sequence, c, d)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert diag["code"] == "transport.connections_exhausted"
    assert diag_fact(diag, "limit") == "2" and diag_fact(diag, "required") == "3"
    a.close()
    c.close()
    # The freed slot is taken by the next connection (the server sees the close asynchronously).
    deadline = time.monotonic() + 30
    while True:
        fresh = E.channel(d.target)
        try:
            E.next_sequence(fresh, d)
            break
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
        finally:
            fresh.close()
    b.close()
    assert d.assert_clean_stop()["connections_peak"] == 2


def test_control_deadline_default_applies_without_a_client_deadline(daemon_with):
    d = daemon_with({"control_deadline_default_ms": 1})
    ch = E.channel(d.target)
    seq = E.next_sequence(ch, d)
    code, _, diag = E.rpc_failure(E.flight_info, ch, d, "SELECT SUM(a) FROM primitive", timeout=None,
                                  sequence=seq)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and diag["code"].startswith("admission.")
    # A client deadline replaces the default: the same statement at the same sequence resolves.
    ticket = E.flight_info(ch, d, "SELECT SUM(a) FROM primitive", timeout=60, sequence=seq)
    assert len(list(E.do_get(ch, d, ticket))) >= 1
    ch.close()


def test_control_deadline_max_caps_the_client_deadline(daemon_with):
    d = daemon_with({"control_deadline_default_ms": 1, "control_deadline_max_ms": 1})
    ch = E.channel(d.target)
    code, _, diag = E.rpc_failure(E.flight_info, ch, d, "SELECT SUM(a) FROM primitive", timeout=60)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and diag["code"].startswith("admission.")
    ch.close()


def read_one_then_pause(call, pause_s):
    """Takes the first message, stops reading for pause_s, then drains; returns (messages, error)."""
    it = iter(call)
    got = 1 if next(it) is not None else 0
    time.sleep(pause_s)
    try:
        for _ in it:
            got += 1
    except grpc.RpcError as e:
        trailers = dict(e.trailing_metadata() or ())
        import json
        raw = trailers.get("transit-diagnostic-bin")
        return got, (e.code(), json.loads(raw) if raw else None)
    return got, None


@pytest.mark.parametrize("client_timeout,expected_ms", [(None, "1000"), (120, "2000")])
def test_data_deadline_default_and_max(daemon_with, client_timeout, expected_ms):
    d = daemon_with({"data_deadline_default_ms": 1000, "data_deadline_max_ms": 2000})
    ch = E.channel(d.target)
    ticket = E.flight_info(ch, d, BIG)
    rpc = ch.unary_stream(E.DO_GET)
    kwargs = {"metadata": d.auth()}
    if client_timeout:
        kwargs["timeout"] = client_timeout
    call = rpc(b"\x0a" + E._varint(len(ticket)) + ticket, **kwargs)
    got, err = read_one_then_pause(call, 5)
    assert err is not None, "a stream past its data deadline must not end OK"
    code, diag = err
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and diag["code"] == "flight.deadline_exceeded"
    assert diag_fact(diag, "deadline_ms") == expected_ms
    ch.close()
    E.healthy_query(d)


def test_response_bytes_per_stream(daemon_with):
    d = daemon_with({"max_response_bytes_per_stream": 1 << 20})
    ch = E.channel(d.target)
    ticket = E.flight_info(ch, d, BIG)
    code, _, diag = E.rpc_failure(lambda: list(E.do_get(ch, d, ticket)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "flight.response_budget"
    assert diag_fact(diag, "limit") == str(1 << 20) and int(diag_fact(diag, "required")) > 1 << 20
    ch.close()
    E.healthy_query(d)  # a small result stays inside the budget


def test_credit_stall_cuts_a_reader_that_stops(daemon_with):
    d = daemon_with({"credit_stall_ms": 500})
    ch = E.channel(d.target)
    ticket = E.flight_info(ch, d, BIG)
    got, err = read_one_then_pause(E.do_get(ch, d, ticket), 5)
    # Batches were already written: the client gets an error status, never a fabricated OK.
    assert err is not None
    code, diag = err
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "flight.credit_stall"
    assert diag_fact(diag, "budget_ms") == "500"
    ch.close()
    E.healthy_query(d)
    d.assert_clean_stop()


def test_stream_allocator_limit(daemon_with):
    # A 16384-row batch of five columns (~650 KiB) fits once; the stream root still holds one
    # when the next is built, which the 1 MiB stream allocator refuses.
    d = daemon_with({"stream_allocator_bytes": 1 << 20, "max_segment_bytes": 1 << 20,
                     "rows_per_segment": 16384})
    ch = E.channel(d.target)
    ticket = E.flight_info(ch, d, BIG)
    code, _, diag = E.rpc_failure(lambda: list(E.do_get(ch, d, ticket)))
    assert code == grpc.StatusCode.UNAVAILABLE and diag["code"] == "flight.allocation"
    assert diag_fact(diag, "stream_limit") == str(1 << 20)
    ch.close()
    E.healthy_query(d)


def test_root_allocator_limit(daemon_with):
    # The root bounds every stream together; here it is as small as one stream's budget.
    d = daemon_with({"root_allocator_bytes": 2 << 20, "stream_allocator_bytes": 2 << 20,
                     "max_segment_bytes": 2 << 20})
    ch = E.channel(d.target)
    ticket = E.flight_info(ch, d, "SELECT id, a, c FROM primitive")
    code, _, diag = E.rpc_failure(lambda: list(E.do_get(ch, d, ticket)))
    assert code == grpc.StatusCode.UNAVAILABLE and diag["code"] == "flight.allocation"
    assert diag_fact(diag, "root_limit") == str(2 << 20)
    ch.close()
    E.healthy_query(d)


def test_idle_connection_is_closed_with_goaway(daemon_with):
    d = daemon_with({"max_connection_idle_ms": 500})
    s, _, _ = E.h2_open(d.port)
    assert E.read_goaway(s) == (h2.errors.ErrorCodes.NO_ERROR, b"max_idle")
    s.close()
    E.healthy_query(d)


def test_connection_age_is_bounded_with_goaway(daemon_with):
    d = daemon_with({"max_connection_age_ms": 500, "max_connection_age_grace_ms": 60_000})
    s, _, _ = E.h2_open(d.port)
    assert E.read_goaway(s) == (h2.errors.ErrorCodes.NO_ERROR, b"max_age")
    s.close()
    E.healthy_query(d)


def test_keepalive_ping_flood_is_refused(daemon_with):
    d = daemon_with({"permit_keepalive_time_ms": 60_000})
    s, conn, _ = E.h2_open(d.port)
    for i in range(5):
        conn.ping(i.to_bytes(8, "big"))
    s.sendall(conn.data_to_send())
    code, debug = E.read_goaway(s)
    assert code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM and debug == b"too_many_pings"
    s.close()
    E.healthy_query(d)


def test_handshake_timeout_closes_a_silent_connection(daemon_with):
    d = daemon_with({"handshake_timeout_ms": 500})
    s = E.raw_connect(d.port)
    E.recv_until_closed(s, 30)  # raises unless the daemon closes it
    s.close()
    E.healthy_query(d)
