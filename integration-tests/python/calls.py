"""Flight SQL calls against the real daemon, the one place the tests build them.

Two transports, for two purposes:

- grpcio (``channel``, ``info``/``sql_info``, ``do_get``, ``next_sequence``, ``failure``): the exact
  status code, the grpc-message and the ``transit-diagnostic-bin`` trailer as sent (PyArrow folds
  ABORTED, FAILED_PRECONDITION and UNAVAILABLE into one class);
- PyArrow (``Caller``, ``TrailerCapture``): what a PyArrow user sees.

``daemon`` arguments are ``daemon.Daemon`` objects (anything with ``port``, ``uri``, ``token``).
"""

import json
import re
import struct
from dataclasses import dataclass

import grpc
import pyarrow.flight as fl

import flightsql
from diagnostic_clients import decode_diagnostic

GET_FLIGHT_INFO = "/arrow.flight.protocol.FlightService/GetFlightInfo"
GET_SCHEMA = "/arrow.flight.protocol.FlightService/GetSchema"
DO_GET = "/arrow.flight.protocol.FlightService/DoGet"
DO_ACTION = "/arrow.flight.protocol.FlightService/DoAction"
LIST_FLIGHTS = "/arrow.flight.protocol.FlightService/ListFlights"
DO_PUT = "/arrow.flight.protocol.FlightService/DoPut"
DO_EXCHANGE = "/arrow.flight.protocol.FlightService/DoExchange"
TRAILER = "transit-diagnostic-bin"
SEQUENCE = "x-transit-request-sequence"
# No BDP probing: the HTTP/2 window stays small, so the client holds few batches and the
# gateway's readiness gate (not the client's buffer) decides how far the producer runs ahead.
SMALL_WINDOW = [("grpc.http2.bdp_probe", 0)]
# Caller.info's default sequence: the caller's next (None sends no sequence header at all).
_NEXT = object()
# PyArrow renders a failure as "... with message: <grpc-message>[. gRPC client debug context: ...]".
_PYARROW_MESSAGE = re.compile(r"with message: (.*?)(?:\. gRPC client debug context:.*)?\Z", re.S)


# -- request pieces ---------------------------------------------------------------------------

def metadata(daemon, caller, sequence=None, extra=()):
    """gRPC metadata: the caller's bearer token (none when ``caller`` is None), the sequence."""
    md = [("authorization", f"Bearer {daemon.token(caller)}")] if caller else []
    if sequence is not None:
        md.append((SEQUENCE, str(sequence)))
    return md + list(extra)


def options(daemon, caller, sequence=None, extra=()):
    """The same headers as PyArrow call options (60 s deadline)."""
    headers = [(k.encode(), v.encode()) for k, v in metadata(daemon, caller, sequence)]
    return fl.FlightCallOptions(headers=headers + list(extra), timeout=60)


def ticket_message(ticket: bytes) -> bytes:
    """The Flight ``Ticket`` message (field 1, bytes) around ``ticket``, for raw gRPC DoGet."""
    return flightsql._field_bytes(1, ticket)


def ticket_of(info) -> bytes:
    """The one endpoint's ticket of a statement FlightInfo: PyArrow's object or the protobuf
    bytes grpcio returns (endpoint field 3, ticket field 1, bytes field 1)."""
    if isinstance(info, (bytes, bytearray)):
        endpoints = flightsql.parse(info)[3]
        assert len(endpoints) == 1
        return flightsql.parse(flightsql.parse(endpoints[0])[1][0])[1][0]
    assert len(info.endpoints) == 1
    return info.endpoints[0].ticket.ticket


def info_fields(info_bytes: bytes):
    """(correlation, app_metadata dict) of a statement FlightInfo (protobuf bytes)."""
    app_metadata = json.loads(flightsql.parse(info_bytes)[7][0])
    return flightsql.ticket_correlation(ticket_of(info_bytes)), app_metadata


def expiry_ms(ticket: bytes) -> int:
    return struct.unpack_from("<Q", ticket, 137)[0]


def binding_revision(ticket: bytes) -> int:
    return struct.unpack_from("<Q", ticket, 56)[0]


# -- grpcio -----------------------------------------------------------------------------------

def channel(daemon, **extra_options) -> grpc.Channel:
    """A channel with a connection of its own (grpcio shares connections between channels by
    default, and the daemon serves one call at a time per connection); 64 MiB messages."""
    opts = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", 64 << 20)]
    opts.extend(extra_options.items())
    return grpc.insecure_channel(daemon.target, options=opts)


def info(ch, daemon, caller, command, sequence=None, extra=(), timeout=60):
    """GetFlightInfo; returns the FlightInfo bytes (raises grpc.RpcError on failure)."""
    return ch.unary_unary(GET_FLIGHT_INFO)(flightsql.flight_descriptor(command),
                                           metadata=metadata(daemon, caller, sequence, extra),
                                           timeout=timeout)


def schema(ch, daemon, caller, command, timeout=60):
    """GetSchema; returns the SchemaResult bytes (raises grpc.RpcError on failure)."""
    return ch.unary_unary(GET_SCHEMA)(flightsql.flight_descriptor(command),
                                      metadata=metadata(daemon, caller), timeout=timeout)


def sql_schema(ch, daemon, sql, caller="primitive", timeout=60):
    """GetSchema of a statement (compiled, never admitted); returns the SchemaResult bytes."""
    return schema(ch, daemon, caller, flightsql.statement_query(sql), timeout)


def action(ch, daemon, caller, action_type: str, body: bytes = b"", timeout=60):
    """DoAction; returns the result bodies' messages as a list (raises grpc.RpcError)."""
    request = flightsql._field_bytes(1, action_type.encode()) + flightsql._field_bytes(2, body)
    return list(ch.unary_stream(DO_ACTION)(request, metadata=metadata(daemon, caller),
                                           timeout=timeout))


def sql_info(ch, daemon, caller, sql, sequence, timeout=60):
    """GetFlightInfo for ``sql`` at ``sequence``; returns the FlightInfo bytes."""
    return info(ch, daemon, caller, flightsql.statement_query(sql), sequence, timeout=timeout)


def sql_info_future(ch, daemon, caller, sql, sequence, timeout=60):
    return ch.unary_unary(GET_FLIGHT_INFO).future(
        flightsql.flight_descriptor(flightsql.statement_query(sql)),
        metadata=metadata(daemon, caller, sequence), timeout=timeout)


def flight_info(ch, daemon, sql, caller="primitive", timeout=60, sequence=None):
    """GetFlightInfo for ``sql`` at ``sequence`` (default: the caller's next); returns the
    ticket."""
    seq = sequence if sequence is not None else next_sequence(ch, daemon, caller)
    return ticket_of(sql_info(ch, daemon, caller, sql, seq, timeout))


def do_get(ch, daemon, ticket: bytes, caller="primitive", timeout=120):
    """A DoGet call as an iterator of raw FlightData messages (nothing is read until iterated)."""
    return ch.unary_stream(DO_GET)(ticket_message(ticket), metadata=metadata(daemon, caller),
                                   timeout=timeout)


def read_bytes(ch, daemon, ticket: bytes, caller="primitive") -> bytes:
    """A whole DoGet stream's FlightData messages, concatenated (raises on failure)."""
    return b"".join(do_get(ch, daemon, ticket, caller, timeout=60))


def primitive_slice(k: int, rows: int) -> str:
    """A projection of the demo's primitive table's k-th slice of ``rows`` ids: slices share no
    rows, so no two results share segment files."""
    return f"SELECT id, a, b, c, d FROM primitive WHERE id >= {k * rows} AND id < {(k + 1) * rows}"


def drain(ch, daemon, caller, ticket: bytes) -> int:
    """Reads a whole DoGet stream; returns the number of messages (raises on failure)."""
    return sum(1 for _ in do_get(ch, daemon, ticket, caller, timeout=60))


def next_sequence(ch, daemon, caller="primitive") -> int:
    """The caller's next request sequence (GetSessionOptions' transit.next_sequence)."""
    action = flightsql._field_bytes(1, b"GetSessionOptions")
    results = list(ch.unary_stream(DO_ACTION)(action, metadata=metadata(daemon, caller),
                                              timeout=30))
    return flightsql.session_options(flightsql.parse(results[0])[1][0])["transit.next_sequence"]


@dataclass
class Seen:
    """One failed call as grpcio reports it. Unpacks as (code, message, diagnostic dict)."""
    status: str
    message: str
    raw_trailer: bytes

    @property
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode[self.status]

    @property
    def diagnostic(self):
        return decode_diagnostic(self.raw_trailer) if self.raw_trailer else None

    def __iter__(self):
        return iter((self.code, self.message, self.diagnostic))


def seen(err: grpc.RpcError) -> Seen:
    """The exact status, decoded grpc-message and the one raw trailer value (None: absent)."""
    pairs = list(err.trailing_metadata() or ()) + list(err.initial_metadata() or ())
    raws = [v for k, v in pairs if k == TRAILER]
    assert len(raws) <= 1, f"{len(raws)} {TRAILER} values"
    return Seen(err.code().name, err.details() or "", raws[0] if raws else None)


def failure(fn, *args, **kwargs) -> Seen:
    """Calls ``fn`` expecting a grpc.RpcError; returns what it carried."""
    try:
        fn(*args, **kwargs)
    except grpc.RpcError as e:
        return seen(e)
    raise AssertionError("the call succeeded")


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


def do_get_exact(daemon, caller, ticket: bytes, before_each=None) -> GrpcOutcome:
    """Redeems a ticket with grpcio over a small HTTP/2 window and reads the stream to its end,
    calling before_each(i) before reading message i (to pause or act mid-stream)."""
    with grpc.insecure_channel(daemon.target, options=SMALL_WINDOW) as ch:
        call = do_get(ch, daemon, ticket, caller, timeout=60)
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
            s = seen(e)
            return GrpcOutcome(received, s.code, e.details(), s.diagnostic)


# -- PyArrow ----------------------------------------------------------------------------------

class Caller:
    """A PyArrow Flight SQL caller with its credential and a sequence it tracks explicitly."""

    def __init__(self, daemon, name, uri=None, **client_options):
        """``uri``: another way to the daemon (TLS, a proxy); ``client_options`` go to PyArrow."""
        self.gateway = daemon
        self.name = name
        self.client = fl.FlightClient(uri or daemon.uri, **client_options)

    def options(self, sequence=None, extra=()):
        return options(self.gateway, self.name, sequence, extra)

    def next_sequence(self):
        results = list(self.client.do_action(fl.Action("GetSessionOptions", b""), self.options()))
        return flightsql.session_options(results[0].body.to_pybytes())["transit.next_sequence"]

    def info(self, sql, sequence=_NEXT):
        """GetFlightInfo for ``sql`` at ``sequence`` (default: the caller's next)."""
        if sequence is _NEXT:
            sequence = self.next_sequence()
        return self.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.statement_query(sql)), self.options(sequence))

    def read(self, info):
        assert len(info.endpoints) == 1
        return self.client.do_get(info.endpoints[0].ticket, self.options()).read_all()

    def query(self, sql):
        """Runs a statement at the caller's next sequence and returns (table, info)."""
        info = self.info(sql)
        return self.read(info), info

    def metadata_info(self, command):
        return self.client.get_flight_info(fl.FlightDescriptor.for_command(command), self.options())

    def metadata(self, command):
        return self.read(self.metadata_info(command))

    def close(self):
        self.client.close()


def read_result(daemon, caller, info_bytes: bytes):
    """Reads a statement's result with PyArrow (DoGet) as a list of row tuples."""
    c = Caller(daemon, caller)
    try:
        table = c.client.do_get(fl.Ticket(ticket_of(info_bytes)), c.options()).read_all()
        return [tuple(r.values()) for r in table.to_pylist()]
    finally:
        c.close()


def app_metadata(info):
    return json.loads(info.app_metadata)


def healthy_query(daemon, caller="primitive"):
    """A follow-up query through PyArrow on a new connection: the daemon still serves."""
    c = Caller(daemon, caller)
    try:
        table, _ = c.query("SELECT COUNT(*) FROM primitive")
        assert table.num_rows == 1 and table.column(0)[0].as_py() >= 1_000_000
    finally:
        c.close()


class _Capture(fl.ClientMiddleware):
    def __init__(self, sink):
        self.sink = sink

    def received_headers(self, headers):
        # Called with the initial headers and again with the trailers; binary values are bytes.
        for key, values in headers.items():
            if key.lower() == TRAILER:
                self.sink.extend(v if isinstance(v, bytes) else v.encode() for v in values)


class TrailerCapture(fl.ClientMiddlewareFactory):
    """Keeps the diagnostic values of the most recent call (tests call sequentially)."""

    def __init__(self):
        self.values = []

    def start_call(self, info):
        self.values = []
        return _Capture(self.values)

    def only(self):
        """The single trailer value of the last call, or None when it carried none."""
        assert len(self.values) <= 1, f"several {TRAILER} values: {self.values!r}"
        return self.values[0] if self.values else None


def pyarrow_message(error: Exception) -> str:
    """The grpc-message inside a PyArrow Flight error's text."""
    m = _PYARROW_MESSAGE.search(str(error))
    assert m, f"no message in {error!s}"
    return m.group(1)
