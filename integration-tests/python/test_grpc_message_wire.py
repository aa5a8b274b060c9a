"""The grpc-message header as it is on the wire, read with raw HTTP/2 (h2) and gRPC framing: a
failure message containing '%', '~' and non-ASCII caller input is sent percent-encoded, only
bytes 0x20-0x7E travel, and the percent-decoded message is at most 128 printable ASCII bytes,
equal to what grpcio decodes for the same request (docs/status.md, "grpc-message on the wire")."""

import re
from urllib.parse import unquote_to_bytes

import grpc

import flightsql
from diagnostic_clients import MAX_MESSAGE_BYTES, check_message
from h2raw import unary_call

PATH = "/arrow.flight.protocol.FlightService/GetFlightInfo"
SQL = 'SELECT "caf\u00e9%20x~\u2603" FROM primitive'
ESCAPE = re.compile(rb"%[0-9A-F]{2}")


def test_percent_and_non_ascii_are_encoded_on_the_wire(gateway, primitive):
    seq = primitive.next_sequence()
    md = [("authorization", f"Bearer {gateway.token('primitive')}"),
          ("x-transit-request-sequence", str(seq))]
    body = flightsql.flight_descriptor(flightsql.statement_query(SQL))
    _, trailers = unary_call(gateway.port, PATH, body, md)
    fields = dict(trailers)
    assert fields[b"grpc-status"] == b"3", fields  # INVALID_ARGUMENT
    wire = fields[b"grpc-message"]
    assert all(0x20 <= b <= 0x7E for b in wire), f"raw byte outside 0x20-0x7E: {wire!r}"
    assert b"%25" in wire and b"%7E" in wire, f"'%' and '~' not percent-encoded: {wire!r}"
    # Every remaining '%' on the wire starts an escape: a literal '%' never travels bare.
    assert wire.count(b"%") == len(ESCAPE.findall(wire)), wire
    decoded = unquote_to_bytes(wire)
    assert len(decoded) <= MAX_MESSAGE_BYTES
    message = decoded.decode("ascii")
    check_message(message)
    assert message.startswith("query.unknown_column: ")
    # The identifier arrives with '%' and '~' intact; the compiler escapes the non-ASCII code
    # points (\xe9, \u2603) and the bound escapes each of those backslashes as '\\'.
    assert 'unknown column "caf\\\\xe9%20x~\\\\u2603"' in message, message
    # grpcio's own decoding of the same failure gives the same text.
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}") as ch:
        try:
            ch.unary_unary(PATH)(body, metadata=md, timeout=30)
            raise AssertionError("the call succeeded")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert e.details() == message
    assert primitive.next_sequence() == seq, "a compile error records nothing"
