"""Raw HTTP/2 against the daemon, for what no gRPC client will send or show: the pinned h2 library
for a client connection's state machine, hyperframe for reading frames without one (the server
may keep sending after its GOAWAY). Every read is bounded by a deadline."""

import socket
import time

import h2.config
import h2.connection
import h2.events
from hyperframe.frame import Frame, GoAwayFrame


def raw_connect(port: int, timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def _recv(s: socket.socket, deadline: float, what: str):
    """Bytes from ``s`` (b"" when the peer closed or reset), AssertionError at ``deadline``;
    None when a read timed out before it."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise AssertionError(what)
    s.settimeout(remaining)
    try:
        return s.recv(65536)
    except ConnectionResetError:
        return b""
    except socket.timeout:
        return None


def recv_until_closed(s: socket.socket, limit_s: float = 30.0) -> bytes:
    """Reads until the peer closes (or `limit_s` passes); returns everything read."""
    out = bytearray()
    deadline = time.monotonic() + limit_s
    while True:
        chunk = _recv(s, deadline, "the peer did not close within %.0fs" % limit_s)
        if chunk == b"":
            return bytes(out)
        out.extend(chunk or b"")


def frames(s: socket.socket, limit_s: float = 30.0, what: str = "frame"):
    """Yields (arrival time, hyperframe Frame) for every frame the server sends, never answering
    anything, until the peer closes; AssertionError when ``limit_s`` passes first."""
    buf = bytearray()
    deadline = time.monotonic() + limit_s
    while True:
        data = _recv(s, deadline, "no %s within %.0fs" % (what, limit_s))
        if data == b"":
            return
        if data is None:
            continue
        buf.extend(data)
        now = time.monotonic()
        while len(buf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(bytes(buf[:9])))
            if len(buf) < 9 + length:
                break
            frame.parse_body(memoryview(bytes(buf[9:9 + length])))
            del buf[:9 + length]
            yield now, frame


def read_goaway(s, limit_s: float = 30.0):
    """(error_code, debug_data) of the first GOAWAY, or None when the peer closed without one."""
    for _, frame in frames(s, limit_s, "GOAWAY"):
        if isinstance(frame, GoAwayFrame):
            return frame.error_code, frame.additional_data
    return None


def h2_open(port: int, timeout: float = 10.0, header_encoding="utf-8", acked: bool = False):
    """A raw HTTP/2 client connection: preface and SETTINGS sent, the server's SETTINGS read.

    With ``acked``, also the server's ACK of our SETTINGS: the server sends its own SETTINGS before
    it reads ours, and it accounts a connection (gRPC's transportReady) only on reading them, in
    the same event-loop task that writes the ACK — so the ACK means the connection is counted.
    """
    s = raw_connect(port, timeout)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                header_encoding=header_encoding))
    conn.initiate_connection()
    s.sendall(conn.data_to_send())

    def done(evs):
        got = {type(e) for e in evs}
        return h2.events.RemoteSettingsChanged in got and (
            not acked or h2.events.SettingsAcknowledged in got)

    events = h2_read(s, conn, done)
    if not done(events):  # the server closed the connection first
        s.close()
        raise AssertionError("the server closed the connection before its SETTINGS%s: %r"
                             % (" and its ACK of ours" if acked else "", events))
    return s, conn, events


def h2_read(s, conn, done, limit_s: float = 30.0):
    """Feeds received bytes to `conn` until done(events so far) or the peer closes (then the
    last event is "closed"); AssertionError when ``limit_s`` passes first."""
    events = []
    deadline = time.monotonic() + limit_s
    while not done(events):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError("no expected HTTP/2 event within %.0fs: %r" % (limit_s, events))
        s.settimeout(remaining)
        try:
            data = s.recv(65536)
        except ConnectionResetError:
            data = b""
        except socket.timeout:
            # The deadline passed with the connection open: not a close.
            raise AssertionError("no expected HTTP/2 event within %.0fs: %r"
                                 % (limit_s, events)) from None
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


def unary_call(port, path, body, metadata, timeout=30.0):
    """One gRPC unary call over a fresh HTTP/2 connection; returns (headers, trailers) as lists
    of raw (name, value) bytes. A Trailers-Only reply is one HEADERS frame: headers == trailers."""
    s, conn, _ = h2_open(port, timeout, header_encoding=None)
    try:
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(k.encode(), v.encode())
                                for k, v in grpc_request_headers(port, path, metadata)])
        conn.send_data(sid, grpc_frame(body), end_stream=True)
        s.sendall(conn.data_to_send())
        state = {}

        def ended(events):
            for event in events[len(state.setdefault("seen", [])):]:
                state["seen"].append(event)
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == sid:
                    state["headers"] = list(event.headers)
                elif isinstance(event, h2.events.TrailersReceived) and event.stream_id == sid:
                    state["trailers"] = list(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == sid:
                    state["ended"] = True
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == sid:
                    raise AssertionError(f"stream reset: {event.error_code!r}")
            return state.get("ended", False)

        h2_read(s, conn, ended, timeout)
        assert state.get("ended"), "the server closed the connection before the call ended"
        headers = state.get("headers")
        return headers, state.get("trailers", headers)
    finally:
        s.close()
