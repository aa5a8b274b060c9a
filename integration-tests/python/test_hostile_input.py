"""Hostile peers against one daemon: raw HTTP/2 garbage, truncated frames, bad protobuf, catalog
filters of many wildcards, malformed health requests, an oversized header list, a second concurrent stream on one connection, thousands of cancels. Each
gets a clean status or loses only its own connection; a follow-up query succeeds after each, and
the daemon ends with zero allocated bytes (its shutdown accounting, exit status 0)."""

import threading
import time

import grpc
import h2.errors
import h2.events
import h2.settings
import pytest

import calls as C
import h2raw as H
import flightsql
from diagnostic_clients import decode_diagnostic
from ops_support import HEALTH_CHECK, health

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@pytest.fixture(scope="module")
def d(configured, tmp_path_factory):
    daemon = configured(tmp_path_factory.mktemp("hostile"), {}).start()
    yield daemon
    if daemon.alive():
        daemon.assert_clean_stop()


def test_garbage_instead_of_the_preface_closes_that_connection(d):
    s = H.raw_connect(d.port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 8)
    H.recv_until_closed(s)
    s.close()
    C.healthy_query(d)


def test_garbage_frames_after_the_preface_get_goaway(d):
    s, conn, _ = H.h2_open(d.port)
    # A frame of unknown-but-invalid layout: a SETTINGS frame whose length is not a multiple of 6.
    s.sendall(b"\x00\x00\x05\x04\x00\x00\x00\x00\x00" + b"\xff" * 5)
    code, _ = H.read_goaway(s)
    assert code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR
    s.close()
    C.healthy_query(d)


def test_truncated_frame_then_hangup(d):
    s, conn, _ = H.h2_open(d.port)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, H.grpc_request_headers(d.port, C.DO_GET, d.auth()))
    s.sendall(conn.data_to_send())
    # A DATA frame header announcing 1000 bytes, then 10 of them, then the peer vanishes.
    s.sendall(b"\x00\x03\xe8\x00\x00" + sid.to_bytes(4, "big") + b"\x00" * 10)
    s.close()
    C.healthy_query(d)


def test_truncated_grpc_message_gets_a_status(d):
    s, conn, _ = H.h2_open(d.port)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, H.grpc_request_headers(d.port, C.DO_GET, d.auth()))
    # A gRPC frame announcing 100 bytes with only 3 sent, then END_STREAM: a truncated message.
    conn.send_data(sid, b"\x00\x00\x00\x00\x64abc", end_stream=True)
    s.sendall(conn.data_to_send())
    events = H.h2_read(s, conn, lambda evs: any(isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset))
                                                for e in evs) or "closed" in evs)
    statuses = [dict(e.headers).get("grpc-status") for e in events
                if isinstance(e, (h2.events.TrailersReceived, h2.events.ResponseReceived))]
    resets = [e for e in events if isinstance(e, h2.events.StreamReset)]
    assert any(st not in (None, "0") for st in statuses) or resets, events
    s.close()
    C.healthy_query(d)


def test_bad_protobuf_any_and_bad_ticket(d):
    ch = C.channel(d)
    rpc = ch.unary_unary(C.GET_FLIGHT_INFO)
    for command in (b"\x0a\xff\xff", flightsql.any_of("type.googleapis.com/no.Such", b"\x01\x02"),
                    b"\xff" * 64, b""):
        code, _, diag = C.failure(rpc, flightsql.flight_descriptor(command), metadata=d.auth(), timeout=30)
        # Not a protobuf Any, or an Any of no Flight SQL command type (docs/status.md
        # INVALID_PROTOBUF; until 2026-12-06 the second was UNIMPLEMENTED).
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (command, code)
        assert diag["code"] == "flight.invalid_command", diag
    code, _, diag = C.failure(lambda: list(C.do_get(ch, d, b"\x00" * 250)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and diag["code"].startswith("ticket.")
    ch.close()
    C.healthy_query(d)


def test_a_flight_sql_command_whose_value_does_not_parse_is_refused_by_every_call(d):
    """Field 1 announces 255 bytes where three follow. Until 2026-12-07 GetCatalogs and
    GetTableTypes were served (their value was never read), GetSchema of GetDbSchemas and
    GetSqlInfo answered a schema where GetFlightInfo refused, and the unserved commands answered
    UNIMPLEMENTED."""
    ch = C.channel(d)
    calls = {"GetFlightInfo": ch.unary_unary(C.GET_FLIGHT_INFO),
             "GetSchema": ch.unary_unary(C.GET_SCHEMA)}
    for name in ("CommandGetCatalogs", "CommandGetTableTypes", "CommandGetDbSchemas",
                 "CommandGetTables", "CommandGetSqlInfo", "CommandGetXdbcTypeInfo",
                 "CommandGetPrimaryKeys", "CommandStatementQuery"):
        command = flightsql.any_of(name, b"\x0a\xff\x01abc")
        for call, rpc in calls.items():
            code, _, diag = C.failure(rpc, flightsql.flight_descriptor(command),
                                      metadata=d.auth(), timeout=30)
            assert (code, diag["code"]) == (grpc.StatusCode.INVALID_ARGUMENT,
                                            "flight.invalid_command"), (name, call, code, diag)
    # The same commands, well formed, are still served or UNIMPLEMENTED as before.
    for command, served in ((flightsql.get_catalogs(), True), (flightsql.get_table_types(), True),
                            (flightsql.any_of("CommandGetXdbcTypeInfo", b""), False)):
        if served:
            assert calls["GetSchema"](flightsql.flight_descriptor(command), metadata=d.auth(),
                                      timeout=30)
        else:
            code, _, diag = C.failure(calls["GetFlightInfo"], flightsql.flight_descriptor(command),
                                      metadata=d.auth(), timeout=30)
            assert code == grpc.StatusCode.UNIMPLEMENTED, (code, diag)
    # A type URL's prefix before its last "/" is any text: the answer names the command, never
    # echoes the prefix (until 2026-12-07 it came back whole, unescaped, in message and fact).
    url = ("\u00ff" * 300 + "/arrow.flight.protocol.sql.CommandGetXdbcTypeInfo").encode()
    command = b"\x0a" + bytes([len(url) & 0x7F | 0x80, len(url) >> 7]) + url
    code, message, diag = C.failure(calls["GetFlightInfo"], flightsql.flight_descriptor(command),
                                    metadata=d.auth(), timeout=30)
    assert code == grpc.StatusCode.UNIMPLEMENTED, (code, diag)
    assert "\u00ff" not in diag["message"] and "\\x" not in diag["message"], diag["message"]
    assert {"name": "operation", "kind": "text", "value": "CommandGetXdbcTypeInfo"} in diag["facts"]
    ch.close()
    C.healthy_query(d)


def test_a_path_no_service_serves_gets_unimplemented_and_the_trailer(d):
    """gRPC itself would answer "Method not found: <the caller's path>" without a trailer."""
    ch = grpc.insecure_channel(f"127.0.0.1:{d.port}")
    paths = ["/invented.Service/Method", "/arrow.flight.protocol.FlightService/NoSuchMethod",
             "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "/noslash",
             "/" + "x" * 4000]
    for path in paths:  # no credential: a method that does not exist checks none
        seen = C.failure(ch.unary_unary(path), b"\x0a\x01", timeout=30)
        assert seen.code == grpc.StatusCode.UNIMPLEMENTED, path[:80]
        assert seen.diagnostic["code"] == "flight.unknown_method"
        assert len(seen.message) <= 128 and "xxxx" not in seen.message
    # A stream that keeps sending after the refusal: its messages are dropped, nothing leaks.
    stream = ch.stream_stream("/invented.Service/Stream")
    seen = C.failure(lambda: list(stream(iter([b"m" * 1000] * 50), metadata=d.auth(),
                                          timeout=30)))
    assert seen.code == grpc.StatusCode.UNIMPLEMENTED and seen.diagnostic is not None
    ch.close()
    C.healthy_query(d)


def test_catalog_filters_of_many_wildcards_are_answered_at_once(d):
    """LIKE patterns of hundreds of % that cannot match. Matched as a regular expression, each
    would backtrack through every split of the name among its %s and hold a service thread for
    longer than the universe; the gateway answers each in pattern x name steps, with no rows."""
    ch = C.channel(d)
    hopeless = "%" * 900 + "#"
    commands = [flightsql.get_tables(schema_pattern=hopeless),
                flightsql.get_tables(table_pattern="%_" * 450 + "#"),
                flightsql.get_db_schemas(pattern=hopeless)]
    for command in commands:
        # Backtracking would outlast the call's deadline: DEADLINE_EXCEEDED, not this answer.
        info = C.info(ch, d, "primitive", command, timeout=30)
        assert C.read_result(d, "primitive", info) == []
    ch.close()
    C.healthy_query(d)


def test_the_unauthenticated_health_service_answers_bad_requests_with_a_status_and_a_trailer(d):
    """Health is parsed inside the call as the Flight service is: a request that is not protobuf
    gets INVALID_ARGUMENT with the trailer (gRPC's own parse would answer UNKNOWN and log a stack
    trace per request), and a Check of a long unknown name a bounded NOT_FOUND."""
    ch = grpc.insecure_channel(f"127.0.0.1:{d.port}")
    check = ch.unary_unary(HEALTH_CHECK)
    watch = ch.unary_stream("/grpc.health.v1.Health/Watch")
    for body in (b"\x0a\x05a", b"\x0a\x01\xff", b"\x13" * 5000):
        for call in (lambda b: check(b, timeout=30), lambda b: list(watch(b, timeout=30))):
            seen = C.failure(call, body)  # no credential: health needs none
            assert seen.code == grpc.StatusCode.INVALID_ARGUMENT, (body[:8], seen.code)
            assert seen.diagnostic["code"] == "flight.invalid_protobuf"
            assert len(seen.message) <= 128
    name = "n" * 10000
    seen = C.failure(check, flightsql._field_bytes(1, name.encode()), timeout=30)
    assert seen.code == grpc.StatusCode.NOT_FOUND
    assert len(seen.message) <= 128 and seen.message.startswith("unknown service")
    assert health(d.port) == "SERVING"
    ch.close()
    C.healthy_query(d)


def test_messages_over_the_bound_plain_or_inflating_are_resource_exhausted_without_a_trace(d):
    descriptor = flightsql.flight_descriptor(b"\0" * (1 << 20))
    # Compressed to about 1 KB, inflating to 1 MiB while the gateway parses it.
    ch = grpc.insecure_channel(f"127.0.0.1:{d.port}", compression=grpc.Compression.Gzip)
    seen = C.failure(ch.unary_unary(C.GET_FLIGHT_INFO), descriptor, metadata=d.auth(), timeout=30)
    assert seen.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert seen.diagnostic["code"] == "flight.message_too_large", seen.diagnostic
    ch.close()
    # Declared over the bound in its own header: gRPC refuses it before the gateway sees it, with
    # no trailer (docs/diagnostic-v1.md, "When there is no trailer").
    ch = grpc.insecure_channel(f"127.0.0.1:{d.port}",
                               options=[("grpc.max_send_message_length", 4 << 20)])
    seen = C.failure(ch.unary_unary(C.GET_FLIGHT_INFO), descriptor, metadata=d.auth(), timeout=30)
    assert seen.code == grpc.StatusCode.RESOURCE_EXHAUSTED and len(seen.message) <= 128
    ch.close()
    # gRPC's own report of it used to reach standard error past the log: a stack trace a message.
    d.quiet_log()
    output = "".join(d.output)
    assert "Exception processing message" not in output and "\tat io.grpc" not in output
    C.healthy_query(d)


def test_a_grpc_timeout_grpc_cannot_parse_resets_its_stream_without_a_trace(d):
    """gRPC resets the stream before any gateway code runs (docs/diagnostic-v1.md, "When there
    is no trailer"); its WARNING with a stack trace, logged for every such stream, is kept out of
    the log, and the daemon serves on."""
    before = len(d.output)
    for value in ("1x", "", "1234567890S"):
        with pytest.raises(AssertionError, match="stream reset"):
            H.unary_call(d.port, C.GET_FLIGHT_INFO,
                         flightsql.flight_descriptor(flightsql.get_catalogs()),
                         [("authorization", f"Bearer {d.token('primitive')}"),
                          ("grpc-timeout", value)])
    d.quiet_log()
    logged = "".join(d.output[before:])
    assert "onHeadersRead" not in logged and "\tat io.grpc" not in logged, logged[-2000:]
    C.healthy_query(d)


def test_oversized_header_list_closes_that_connection(d):
    # Past max_inbound_metadata_bytes (8,192) but within 1.25 times it: gRPC-Java answers the
    # call HTTP 431 and resets it, which grpcio reports as UNKNOWN; the gateway never saw it, so
    # no trailer. The connection serves on.
    ch = C.channel(d)
    md = d.auth() + [("x-padding", "p" * 9000)]
    code, details, diagnostic = C.failure(
        lambda: list(ch.unary_stream(C.DO_ACTION)(b"", metadata=md, timeout=30)))
    assert code == grpc.StatusCode.UNKNOWN and "431" in details and diagnostic is None, details
    assert C.next_sequence(ch, d, "primitive") >= 1
    ch.close()
    # Past 1.25 times it: GOAWAY ("Header size exceeded"), the whole connection ends.
    s, conn, _ = H.h2_open(d.port, header_encoding=None)
    try:
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(k.encode(), v.encode()) for k, v in H.grpc_request_headers(
            d.port, C.DO_ACTION, d.auth() + [("x-padding", "p" * 20000)])], end_stream=True)
        s.sendall(conn.data_to_send())
        goaway = H.read_goaway(s)
    finally:
        s.close()
    assert goaway is not None and b"Header size exceeded" in goaway[1], goaway
    C.healthy_query(d)


def test_second_concurrent_stream_on_one_connection_is_refused(d):
    from hpack import Encoder
    from hyperframe.frame import HeadersFrame, RstStreamFrame
    s, conn, events = H.h2_open(d.port)
    settings = next(e for e in events if isinstance(e, h2.events.RemoteSettingsChanged))
    assert settings.changed_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS].new_value == 1
    # Two stream openings back to back, framed by hand: a conforming client would hold the second.
    encoder = Encoder()
    for sid in (1, 3):
        f = HeadersFrame(sid)
        f.data = encoder.encode(H.grpc_request_headers(d.port, C.DO_ACTION, d.auth()))
        f.flags.add("END_HEADERS")
        s.sendall(f.serialize())
    reset = next((f for _, f in H.frames(s, 30, "RST_STREAM")
                  if isinstance(f, RstStreamFrame) and f.stream_id == 3), None)
    assert reset is not None, "connection closed before the second stream was refused"
    assert reset.error_code == h2.errors.ErrorCodes.REFUSED_STREAM
    s.close()
    C.healthy_query(d)


def _unacknowledged(port):
    """A raw connection whose peer sends its preface and SETTINGS, never an ACK of the server's."""
    from hyperframe.frame import SettingsFrame
    s = H.raw_connect(port)
    s.sendall(PREFACE + SettingsFrame(0).serialize())
    return s


def test_a_peer_that_never_acknowledges_settings_gets_one_stream_per_connection(d):
    """HTTP/2 holds a peer to the server's MAX_CONCURRENT_STREAMS only once it acknowledged the
    SETTINGS; the gateway holds it to one from the first byte. Without a credential, 2,000
    streams left open on one connection (a health Check and a DoGet waiting for their message)
    each cost the heap ~2.6 KB until the connection ended: three such connections of 400,000
    exhausted a 1 GiB heap (2026-12-06). Now every stream past the first is refused."""
    from hpack import Encoder
    from hyperframe.frame import HeadersFrame, RstStreamFrame
    for path in ("/grpc.health.v1.Health/Check", C.DO_GET):
        s = _unacknowledged(d.port)
        encoder = Encoder()
        opened = 2000
        frames = b""
        for i in range(opened):
            f = HeadersFrame(2 * i + 1)
            f.data = encoder.encode(H.grpc_request_headers(d.port, path))
            f.flags.add("END_HEADERS")  # no END_STREAM: each waits for its message
            frames += f.serialize()
        s.sendall(frames)
        refused = set()
        try:
            for _, frame in H.frames(s, 10, "RST_STREAM"):
                if isinstance(frame, RstStreamFrame) and frame.error_code == 7:  # REFUSED_STREAM
                    refused.add(frame.stream_id)
                if len(refused) == opened - 1:
                    break
        finally:
            s.close()
        assert refused == {2 * i + 1 for i in range(1, opened)}, (path, len(refused))
    C.healthy_query(d)


def test_health_watches_past_their_bound_are_refused_even_on_a_peer_that_ignores_settings(d):
    """Watches are held open and need no credential, one a connection (the test above) but up to
    max_connections connections: the gateway's own bound of 64 holds across them."""
    import base64
    import struct
    from hpack import Decoder, Encoder
    from hyperframe.frame import DataFrame, HeadersFrame
    opened = 80
    sockets = []
    served, refused = set(), {}
    try:
        for i in range(opened):
            s = _unacknowledged(d.port)
            sockets.append(s)
            f = HeadersFrame(1)
            f.data = Encoder().encode(H.grpc_request_headers(d.port, "/grpc.health.v1.Health/Watch"))
            f.flags.add("END_HEADERS")
            name = ("watched-%d" % i).encode()
            message = b"\x0a" + bytes([len(name)]) + name
            body = DataFrame(1)
            body.data = b"\x00" + struct.pack(">I", len(message)) + message
            body.flags.add("END_STREAM")
            s.sendall(f.serialize() + body.serialize())
            decoder = Decoder()  # HPACK's table is the connection's
            for _, frame in H.frames(s, 10, "an answer to the Watch"):
                if isinstance(frame, DataFrame) and frame.data:
                    served.add(i)
                    break
                if isinstance(frame, HeadersFrame):
                    headers = dict(decoder.decode(frame.data))
                    if "grpc-status" in headers:
                        refused[i] = headers
                        break
    finally:
        for s in sockets:
            s.close()
    assert len(served) == 64 and len(refused) == opened - 64, (len(served), len(refused))
    assert all(h["grpc-status"] == "8" for h in refused.values())
    trailer = next(iter(refused.values()))["transit-diagnostic-bin"]
    diagnostic = decode_diagnostic(base64.b64decode(trailer + "=" * (-len(trailer) % 4)))
    assert diagnostic["code"] == "transport.health_watches_exhausted", diagnostic
    assert diagnostic["actions"] == ["retry_later"] and diagnostic["outcome"] == "not_admitted"
    # The closed connection gave every permit back: a new Watch is served.
    with grpc.insecure_channel(f"127.0.0.1:{d.port}") as ch:
        stream = ch.unary_stream("/grpc.health.v1.Health/Watch")(b"", timeout=10)
        assert next(iter(stream))[:1] == b"\x08"
        stream.cancel()
    C.healthy_query(d)


def test_thousands_of_cancels(d):
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, "SELECT id, a, b, c, d FROM primitive")
    ch.close()
    errors = []

    # A cancelled stream counts against its caller's share until its producer has ended
    # (docs/limits.md, max_live_streams_per_caller): on a loaded host a burst of cancels can leave
    # the share taken for a moment, and the next DoGet is refused retry_later, as documented. The
    # workers do what that action says; any other failure is an error.
    for_now = {"flight.caller_streams_exhausted", "flight.streams_exhausted"}
    refused_for_now = []

    def first_message(c):
        deadline = time.monotonic() + 60
        while True:
            call = C.do_get(c, d, ticket)
            try:
                next(iter(call))
                return call
            except grpc.RpcError as e:
                seen = C.seen(e)
                diagnostic = seen.diagnostic or {}
                if diagnostic.get("code") not in for_now or time.monotonic() > deadline:
                    raise AssertionError(f"{seen.status} {seen.message!r} {diagnostic}") from e
                refused_for_now.append(diagnostic["code"])
                time.sleep(0.05)

    def worker(n_immediate, n_after_first):
        c = C.channel(d)
        try:
            for _ in range(n_immediate):
                call = C.do_get(c, d, ticket)
                call.cancel()
            for _ in range(n_after_first):
                first_message(c).cancel()
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(250, 25)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "cancel workers did not finish within 300 s"
    assert not errors, (errors[:3], f"{len(refused_for_now)} refused for now and sent again")
    C.healthy_query(d)


def test_accounting_returns_to_zero(d):
    C.healthy_query(d)
    stats = d.assert_clean_stop()
    assert stats["allocator_peak_bytes"] > 0
