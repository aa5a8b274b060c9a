"""Exact gRPC status codes, seen by Python grpcio (PyArrow folds several codes into one class)."""

import grpc
import pytest

import flightsql
from calls import failure, info


@pytest.fixture(scope="module")
def channel(gateway):
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}") as ch:
        yield ch


def test_statuses_are_exact(channel, gateway, primitive, cells):
    q = flightsql.statement_query
    seq = primitive.next_sequence()
    info(channel, gateway, "primitive", q("SELECT COUNT(*) FROM primitive"), seq)
    code, msg, diag = failure(info, channel, gateway, "primitive", q("SELECT SUM(a) FROM primitive"), seq)
    assert code == grpc.StatusCode.ABORTED and diag["code"] == "query.namespace_conflict"
    nxt = primitive.next_sequence()
    code, msg, diag = failure(info, channel, gateway, "primitive", q("SELECT SUM(a) FROM primitive"), nxt + 3)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and f"expected {nxt}" in msg
    code, _, diag = failure(info, channel, gateway, "primitive", q("SELECT SUM(a) FROM primitive"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and diag["code"] == "sequence.missing"
    code, _, diag = failure(info, channel, gateway, "cells", q("SELECT SUM(huge) FROM cells"), cells.next_sequence())
    assert code == grpc.StatusCode.OUT_OF_RANGE and diag["stage"] == "execution"
    code, _, diag = failure(info, channel, gateway, "primitive", q("SELECT a FROM primitive ORDER BY a"), nxt)
    assert code == grpc.StatusCode.UNIMPLEMENTED and diag["code"] == "query.unsupported"
    code, _, diag = failure(info, channel, gateway, "primitive", q("SELECT nope FROM primitive"), nxt)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and diag["code"] == "query.unknown_column"
    assert primitive.next_sequence() == nxt, "compile failures record nothing"


def test_unauthenticated_has_only_the_minimal_envelope(channel, gateway):
    code, msg, diag = failure(info, channel, gateway, None, flightsql.get_catalogs())
    assert code == grpc.StatusCode.UNAUTHENTICATED and diag["code"] == "auth.unauthenticated"
    code, msg, again = failure(info, channel, gateway, None, flightsql.statement_query("SELECT a FROM primitive"), 1,
                               extra=[("authorization", "Bearer tfg_wrong_wrong_wrong_wrong_wrong_wrong_wrong")])
    assert code == grpc.StatusCode.UNAUTHENTICATED and "primitive" not in msg
    assert again == diag, "one envelope: which check failed is not told"
    assert not diag.get("identity") and not diag.get("facts")


def test_bad_protobuf_any_is_invalid_argument(channel, gateway):
    code, _, diag = failure(info, channel, gateway, "primitive", b"\x0a\xff\xff")
    assert code == grpc.StatusCode.INVALID_ARGUMENT and diag["code"] == "flight.invalid_command"


def test_message_over_16_kib_is_resource_exhausted(channel, gateway):
    code, _, _ = failure(info, channel, gateway, "primitive",
                         flightsql.statement_query("SELECT a FROM primitive WHERE a IN (" + ",".join(["1"] * 9000) + ")"), 1)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_handshake_is_unimplemented(channel, gateway):
    handshake = channel.stream_stream("/arrow.flight.protocol.FlightService/Handshake")
    with pytest.raises(grpc.RpcError) as e:
        list(handshake(iter([b""]), metadata=[("authorization", f"Bearer {gateway.token('primitive')}")],
                       timeout=30))
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as e:
        list(handshake(iter([b""]), timeout=30))
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
