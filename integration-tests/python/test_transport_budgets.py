"""One test per transport budget (docs/limits.md), each from a real client against a daemon
configured with a small value of that budget; every daemon must stop with zero leaked bytes.

The 16 KiB message budget is test_exact_status.py::test_message_over_16_kib_is_resource_exhausted;
the inbound metadata budget and one-stream-per-connection are in test_hostile_input.py."""

import threading
import time

import grpc
import h2.errors
import pyarrow as pa
import pyarrow.flight as fl
import pytest
from hyperframe.frame import DataFrame, GoAwayFrame, PingFrame, RstStreamFrame

import calls as C
import flightsql
import h2raw as H
from daemon import close_all

BIG = "SELECT id, a, b, c, d FROM primitive"


@pytest.fixture
def daemon_with(configured, tmp_path):
    started = []

    def start(limits=None, **overrides):
        if limits:
            overrides["limits"] = limits
        d = configured(tmp_path / f"d{len(started)}", overrides).start()
        started.append(d)
        return d

    yield start
    close_all(d.assert_clean_stop for d in started if d.alive())


# Budget figures are number facts (docs/diagnostic-v1.md): shortening never touches them.
NUMBER_FACTS = {"limit", "required", "deadline_ms", "budget_ms", "stream_limit", "root_limit",
                "segment_bytes", "segment_accounted_bytes"}


def diag_fact(diag, name):
    fact = next(f for f in diag["facts"] if f["name"] == name)
    if name in NUMBER_FACTS:
        assert fact["kind"] == "number", fact
    return fact["value"]


def test_max_connections_refuses_the_excess_connection(daemon_with):
    d = daemon_with({"max_connections": 2})
    a, b, c = C.channel(d), C.channel(d), C.channel(d)
    C.next_sequence(a, d)
    C.next_sequence(b, d)
    code, _, diag = C.failure(C.next_sequence, c, d)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert diag["code"] == "transport.connections_exhausted"
    assert diag_fact(diag, "limit") == "2" and diag_fact(diag, "required") == "3"
    a.close()
    c.close()
    # The freed slot is taken by the next connection (the server sees the close asynchronously).
    deadline = time.monotonic() + 30
    while True:
        fresh = C.channel(d)
        try:
            C.next_sequence(fresh, d)
            break
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
        finally:
            fresh.close()
    b.close()
    assert d.assert_clean_stop()["connections_peak"] == 2


def cut_by_the_control_deadline(diag):
    """A control deadline of 1 ms ends the call wherever it is: while the statement compiles
    (flight.deadline, nothing sent to the engine: not_admitted), in admission before its first
    command (admission.deadline, not_admitted) or after it (admission.deadline, native work may
    continue: unknown)."""
    return (diag["code"], diag["outcome"]) in {("flight.deadline", "not_admitted"),
                                               ("admission.deadline", "not_admitted"),
                                               ("admission.deadline", "unknown")}


def test_control_deadline_default_applies_without_a_client_deadline(daemon_with):
    d = daemon_with({"control_deadline_default_ms": 1})
    ch = C.channel(d)
    seq = C.next_sequence(ch, d)
    code, _, diag = C.failure(C.flight_info, ch, d, "SELECT SUM(a) FROM primitive", timeout=None,
                                  sequence=seq)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and cut_by_the_control_deadline(diag), diag
    # A client deadline replaces the default: the same statement at the same sequence resolves.
    ticket = C.flight_info(ch, d, "SELECT SUM(a) FROM primitive", timeout=60, sequence=seq)
    assert len(list(C.do_get(ch, d, ticket))) >= 1
    ch.close()


def test_control_deadline_max_caps_the_client_deadline(daemon_with):
    d = daemon_with({"control_deadline_default_ms": 1, "control_deadline_max_ms": 1})
    ch = C.channel(d)
    code, _, diag = C.failure(C.flight_info, ch, d, "SELECT SUM(a) FROM primitive", timeout=60)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and cut_by_the_control_deadline(diag), diag
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
        s = C.seen(e)
        return got, (s.code, s.diagnostic)
    return got, None


@pytest.mark.parametrize("client_timeout,expected_ms", [(None, "1000"), (120, "2000")])
def test_data_deadline_default_and_max(daemon_with, client_timeout, expected_ms):
    d = daemon_with({"data_deadline_default_ms": 1000, "data_deadline_max_ms": 2000})
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, BIG)
    rpc = ch.unary_stream(C.DO_GET)
    kwargs = {"metadata": d.auth()}
    if client_timeout:
        kwargs["timeout"] = client_timeout
    call = rpc(C.ticket_message(ticket), **kwargs)
    # Without a client deadline only the gateway's bound ends the stream. The hang guard is a
    # timer far past both bounds that cancels the call here: a deadline sent to the server would
    # replace the default under test.
    guard = threading.Timer(120, call.cancel)
    guard.start()
    try:
        got, err = read_one_then_pause(call, 5)
    finally:
        guard.cancel()
    assert err is not None, "a stream past its data deadline must not end OK"
    code, diag = err
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and diag["code"] == "flight.deadline_exceeded"
    assert diag_fact(diag, "deadline_ms") == expected_ms
    # A prefix was written (the first batch at least): never a complete result (until 2026-12-06
    # the timer's failure said outcome unknown, as if native work might exist).
    assert diag["outcome"] == "incomplete", diag
    ch.close()
    C.healthy_query(d)


def test_response_bytes_per_stream(daemon_with):
    d = daemon_with({"max_response_bytes_per_stream": 1 << 20})
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, BIG)
    code, _, diag = C.failure(lambda: list(C.do_get(ch, d, ticket)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "flight.response_budget"
    assert diag_fact(diag, "limit") == str(1 << 20) and int(diag_fact(diag, "required")) > 1 << 20
    ch.close()
    C.healthy_query(d)  # a small result stays inside the budget


def test_credit_stall_cuts_a_reader_that_stops(daemon_with):
    # The reader resumes after the stall (2 s of no room) and before its call is reset for not
    # reading the stream's end (credit_stall_ms after that): it reads what was written, then
    # the stall's status and trailer.
    d = daemon_with({"credit_stall_ms": 2000})
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, BIG)
    got, err = read_one_then_pause(C.do_get(ch, d, ticket), 3)
    # Batches were already written: the client gets an error status, never a fabricated OK.
    assert err is not None
    code, diag = err
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "flight.credit_stall"
    assert diag_fact(diag, "budget_ms") == "2000"
    ch.close()
    C.healthy_query(d)
    d.assert_clean_stop()


def _unread_do_get(d, ticket: bytes):
    """A raw HTTP/2 DoGet whose client takes its first 64 KiB window and then never reads again
    (no WINDOW_UPDATE): the stream's last batch stays in the daemon's gRPC buffers."""
    s, conn, _ = H.h2_open(d.port, header_encoding=None)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(k.encode(), v.encode()) for k, v in H.grpc_request_headers(
        d.port, C.DO_GET, d.auth())])
    conn.send_data(sid, H.grpc_frame(C.ticket_message(ticket)), end_stream=True)
    s.sendall(conn.data_to_send())
    # Its first data: the stream is open and its batch handed to gRPC. The same reader goes on
    # to its reset: a new one would start mid-frame, after what this one already buffered.
    frames = H.frames(s, 60, "the stream's first data, then its reset")
    for _, frame in frames:
        if isinstance(frame, DataFrame) and frame.stream_id == sid:
            break
    return s, sid, frames


def test_a_stream_whose_end_is_not_read_keeps_its_share_until_reset(daemon_with):
    """Handing a stream's last batch to gRPC is not its end: gRPC holds the serialized batch
    until the client reads it. The stream keeps its permit and its caller's share until the call
    is over, and a call not over credit_stall_ms after its stream closed is reset, which frees
    both. Until 2026-12-06 the share came back at the hand-off, and one caller held 52 such
    streams (2.4 MB each) until the daemon's direct memory ran out."""
    d = daemon_with({"credit_stall_ms": 3000, "max_live_streams_per_caller": 2})
    ch = C.channel(d)
    # One segment (a single batch) of about 2.4 MB: far past the reader's 64 KiB window.
    ticket = C.flight_info(ch, d, "SELECT id, a, b, c, d FROM primitive WHERE id < 60000")
    unread = [_unread_do_get(d, ticket) for _ in range(2)]
    try:
        # The caller's share of 2 is taken by the two unread streams, whose producers are done.
        code, _, diag = C.failure(lambda: list(C.do_get(ch, d, ticket, timeout=30)))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, diag
        assert diag["code"] == "flight.caller_streams_exhausted", diag
        # credit_stall_ms after the close: each call is reset (RST_STREAM CANCEL, 8).
        for s, sid, frames in unread:
            reset = None
            for _, frame in frames:
                if isinstance(frame, RstStreamFrame) and frame.stream_id == sid:
                    reset = frame.error_code
                    break
            assert reset == 8, reset
    finally:
        for s, _, _ in unread:
            s.close()
    # Both shares came back with the resets: the ticket reads whole.
    assert C.drain(ch, d, "primitive", ticket) >= 2
    ch.close()
    # The access log says what the clients saw: CANCELLED, not the INTERNAL gRPC reports for a
    # stream the server reset, which the gateway keeps for its own defects.
    d.quiet_log()
    gets = [l for l in list(d.output) if "method=DoGet" in l and "caller=primitive" in l]
    assert sum("status=CANCELLED" in l for l in gets) == 2, gets
    assert not any("status=INTERNAL" in l for l in gets), gets


def test_a_stop_that_cuts_an_unread_stream_is_not_reported_drained(daemon_with):
    """SIGTERM while a client holds a stream it stopped reading: the call is cut after the drain's
    10 s bound, and the stop says so (drained=false, exit 3, a WARN), nothing leaked. Until
    2026-12-07 it reported drained=true and exit 0, as if every stream had completed."""
    d = daemon_with({"credit_stall_ms": 120000})
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, "SELECT id, a, b, c, d FROM primitive WHERE id < 60000")
    ch.close()
    s, _, _ = _unread_do_get(d, ticket)
    try:
        report = d.stop_report(timeout=120)
    finally:
        s.close()
    assert report["rc"] == 3 and not report["drained"], report
    assert report["leaked_bytes"] == 0 and report["leaked_streams"] == 0, report
    assert any("calls still open after 10 s of draining are cut" in l for l in d.output)


def accounted(n: int) -> int:
    """What Arrow Java's allocator charges for an n-byte buffer below its 16 MiB chunk: the next
    power of two (its default rounding policy)."""
    return 1 << (n - 1).bit_length()


def test_one_decoded_batch_is_resident_per_stream(daemon_with):
    """A slow reader of the 1M-row result: the stream's allocator never held more than one
    decoded batch (its largest segment as the allocator accounts it; Flight's copy of the batch is
    in gRPC's buffers, not in Arrow memory), so a stream allocator of exactly that size serves it
    whole. Before issue 15 item 3 the same stream held up to four such batches and was refused."""
    d = daemon_with({"stream_allocator_bytes": 1 << 20, "max_segment_bytes": 1 << 20,
                     "rows_per_segment": 16384})
    ch = C.channel(d, **{"grpc.http2.bdp_probe": 0, "grpc.http2.lookahead_bytes": 16384})
    ticket = C.flight_info(ch, d, BIG)
    one_batch = max(accounted(p.stat().st_size) for p in d.segment_files())
    assert one_batch == 1 << 20  # the test's premise: one batch fills the stream allocator
    messages = 0
    for _ in C.do_get(ch, d, ticket):  # the schema message, then one message per batch
        messages += 1
        if messages % 8 == 0:
            time.sleep(0.2)  # the producer parks, holding its one batch, while gRPC is not ready
    assert messages == 1 + -(-1_000_000 // 16384)
    ch.close()
    stopped = d.assert_clean_stop()
    assert stopped["stream_peak_bytes"] == one_batch, stopped


def test_stream_allocator_limit(daemon_with):
    # One decoded batch is resident, and the allocator accounts it as its segment rounded up to a
    # power of two. A 32768-row segment of five columns (~1.47 MiB) is within max_segment_bytes =
    # stream_allocator_bytes = 1.5 MiB, but is charged 2 MiB: the stream refuses it when read.
    limit = 3 << 19
    d = daemon_with({"stream_allocator_bytes": limit, "max_segment_bytes": limit,
                     "rows_per_segment": 32768})
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, BIG)
    code, _, diag = C.failure(lambda: list(C.do_get(ch, d, ticket)))
    assert code == grpc.StatusCode.UNAVAILABLE and diag["code"] == "flight.allocation", diag
    assert diag_fact(diag, "stream_limit") == str(limit)
    assert diag_fact(diag, "refused_by").startswith("stream-")
    segment = int(diag_fact(diag, "segment_bytes"))
    assert segment <= limit < int(diag_fact(diag, "segment_accounted_bytes")) == accounted(segment)
    ch.close()
    C.healthy_query(d)


def test_root_allocator_limit(daemon_with):
    # A (three int64 columns, 16384-row segments: 512 KiB accounted each) completes alone inside
    # the 1.25 MiB root. Paused, A's producer parks holding its one decoded batch. B (five
    # columns: 1 MiB accounted) then fits its own 1 MiB stream allocator, but not what the root
    # has left.
    root, stream = 5 << 18, 1 << 20
    d = daemon_with({"root_allocator_bytes": root, "stream_allocator_bytes": stream,
                     "max_segment_bytes": 1 << 20, "rows_per_segment": 16384})
    # A tiny receive window without BDP growth: A's sends stop in the gateway's transport (as
    # copies) and its producer parks with the batch it read next.
    ch_a = C.channel(d, **{"grpc.http2.bdp_probe": 0, "grpc.http2.lookahead_bytes": 16384})
    ch_b = C.channel(d)
    ticket_a = C.flight_info(ch_a, d, "SELECT id, a, c FROM primitive")
    ticket_b = C.flight_info(ch_b, d, BIG)
    first = iter(C.do_get(ch_a, d, ticket_a))
    next(first)
    # Setup, not a measurement: A's producer parks within milliseconds once gRPC is not ready.
    time.sleep(2)
    code, _, diag = C.failure(lambda: list(C.do_get(ch_b, d, ticket_b)))
    assert code == grpc.StatusCode.UNAVAILABLE and diag["code"] == "flight.allocation", diag
    assert diag_fact(diag, "refused_by") == "root", diag
    assert diag_fact(diag, "root_limit") == str(root) and diag_fact(diag, "stream_limit") == str(stream)
    assert int(diag_fact(diag, "segment_accounted_bytes")) == stream  # B alone fits its stream
    # The refused stream freed what it held: A, resumed, completes (coverage-checked server-side).
    assert 1 + sum(1 for _ in first) > 2
    ch_a.close()
    ch_b.close()
    C.healthy_query(d)
    stopped = d.assert_clean_stop()
    assert stopped["allocator_peak_bytes"] <= root and stopped["stream_peak_bytes"] <= stream


def test_metadata_stream_is_under_the_response_budget(daemon_with):
    """Catalog results are Arrow streams like any other: a GetTables result with schemas that
    passes the budget by one byte is refused with the exact figures, a smaller one passes."""
    required = java_buffer_bytes(catalog_table(daemon_with(), flightsql.get_tables(include_schema=True)))
    d = daemon_with({"max_response_bytes_per_stream": required - 1})
    ch = C.channel(d)
    ticket = catalog_ticket(ch, d, flightsql.get_tables(include_schema=True))
    code, _, diag = C.failure(lambda: list(C.do_get(ch, d, ticket)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "flight.response_budget"
    assert diag_fact(diag, "limit") == str(required - 1) and diag_fact(diag, "required") == str(required)
    ch.close()
    assert catalog_table(d, flightsql.get_tables()).column("table_name").to_pylist() == ["primitive"]


def catalog_ticket(ch, d, command: bytes) -> bytes:
    info = ch.unary_unary(C.GET_FLIGHT_INFO)(flightsql.flight_descriptor(command),
                                              metadata=d.auth(), timeout=30)
    return C.ticket_of(info)


def catalog_table(d, command: bytes):
    client = fl.FlightClient(d.uri)
    try:
        opts = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {d.token('primitive')}".encode())],
                                    timeout=60)
        info = client.get_flight_info(fl.FlightDescriptor.for_command(command), opts)
        return client.do_get(info.endpoints[0].ticket, opts).read_all()
    finally:
        client.close()


def java_buffer_bytes(table) -> int:
    """What the gateway charges for a batch of string/binary columns (Arrow Java's
    getBufferSize): validity bits, (rows + 1) int32 offsets and the value bytes per column."""
    total = 0
    for column in table.columns:
        values = column.to_pylist()
        if values:
            assert pa.types.is_string(column.type) or pa.types.is_binary(column.type), column.type
            total += (len(values) + 7) // 8 + (len(values) + 1) * 4 + sum(len(v) for v in values if v)
    return total


def test_idle_connection_is_closed_with_goaway(daemon_with):
    d = daemon_with({"max_connection_idle_ms": 500})
    s, _, _ = H.h2_open(d.port)
    assert H.read_goaway(s) == (h2.errors.ErrorCodes.NO_ERROR, b"max_idle")
    s.close()
    C.healthy_query(d)


def test_connection_age_is_bounded_with_goaway(daemon_with):
    d = daemon_with({"max_connection_age_ms": 500, "max_connection_age_grace_ms": 60_000})
    s, _, _ = H.h2_open(d.port)
    assert H.read_goaway(s) == (h2.errors.ErrorCodes.NO_ERROR, b"max_age")
    s.close()
    C.healthy_query(d)


def test_keepalive_ping_flood_is_refused(daemon_with):
    d = daemon_with({"permit_keepalive_time_ms": 60_000})
    s, conn, _ = H.h2_open(d.port)
    for i in range(5):
        conn.ping(i.to_bytes(8, "big"))
    s.sendall(conn.data_to_send())
    code, debug = H.read_goaway(s)
    assert code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM and debug == b"too_many_pings"
    s.close()
    C.healthy_query(d)


def test_handshake_timeout_closes_a_silent_connection(daemon_with):
    d = daemon_with({"handshake_timeout_ms": 500})
    s = H.raw_connect(d.port)
    H.recv_until_closed(s, 30)  # raises unless the daemon closes it
    s.close()
    C.healthy_query(d)


def test_server_keepalive_closes_a_peer_that_never_answers_pings(daemon_with):
    # 10 s is the least keepalive time grpc-java honours (it raises anything lower to 10 s).
    # The raw connection never authenticates: its budget must outlast the PING and its GOAWAY.
    d = daemon_with({"keepalive_time_ms": 10_000, "keepalive_timeout_ms": 1_000,
                     "unauthenticated_connection_ms": 60_000})
    normal = C.channel(d)
    states = []
    normal.subscribe(states.append, try_to_connect=True)
    C.next_sequence(normal, d)
    started = time.monotonic()
    s, _, _ = H.h2_open(d.port)  # handshake done; from here on nothing is sent, no PING ACK
    frames = list(H.frames(s, 60, "close of the connection"))
    s.close()
    pings = [(t, f) for t, f in frames if isinstance(f, PingFrame) and "ACK" not in f.flags]
    assert pings, frames
    assert pings[0][0] - started >= 9.0  # not before keepalive_time (slack for clock reads)
    after_ping = [f for t, f in frames if t >= pings[0][0] and not isinstance(f, PingFrame)]
    # The connection ended (GOAWAY, then close) after the unanswered PING, not before it.
    assert all(isinstance(f, GoAwayFrame) for f in after_ping), after_ping
    # The normal client answered the same PINGs: its connection stayed up and still serves.
    C.next_sequence(normal, d)
    ready = states.index(grpc.ChannelConnectivity.READY)
    assert set(states[ready:]) == {grpc.ChannelConnectivity.READY}, states
    normal.close()
    C.healthy_query(d)
