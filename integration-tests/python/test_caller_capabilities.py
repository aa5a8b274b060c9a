"""Caller capabilities (ARCHITECTURE.md §6, docs/clients.md): the read-only session option
`transit.next_sequence` through ADBC and PyArrow; SetSessionOptions refuses; CloseSession is a
no-op success."""

import json
import struct

import adbc_driver_manager
import pyarrow.flight as fl
import pytest

import flightsql
from clients import adbc_connect

SEQ = "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
NEXT = "adbc.flight.sql.session.option.transit.next_sequence"


def test_adbc_learns_each_next_sequence_only_from_caller_capabilities(gateway):
    with adbc_connect(gateway.uri, gateway.token("primitive")) as conn:
        seen = []
        for limit in (11, 22, 33):
            seq = conn.adbc_connection.get_option_int(NEXT)
            seen.append(seq)
            with conn.cursor() as cur:
                cur.adbc_statement.set_options(**{SEQ: str(seq)})
                cur.execute(f"SELECT COUNT(*) FROM primitive WHERE id < {limit}")
                assert cur.fetch_arrow_table().column(0).to_pylist() == [limit]
        # Each statement's chain is begin, one part, seal, submit: the next one starts 4 later.
        assert [b - a for a, b in zip(seen, seen[1:])] == [4, 4]
        assert conn.adbc_connection.get_option_int(NEXT) == seen[-1] + 4


def test_adbc_cannot_set_the_read_only_option(gateway, primitive):
    before = primitive.next_sequence()
    with adbc_connect(gateway.uri, gateway.token("primitive")) as conn:
        with pytest.raises(adbc_driver_manager.Error):
            conn.adbc_connection.set_options(**{NEXT: "1"})
        # Erasing it sends a value without a variant: refused in the result, by name.
        refused = r"'transit\.next_sequence' \(invalid value\)"
        with pytest.raises(adbc_driver_manager.Error, match=refused):
            conn.adbc_connection.set_options(**{
                "adbc.flight.sql.session.optionerase.transit.next_sequence": ""})
    assert primitive.next_sequence() == before


def test_pyarrow_chains_three_statements_through_app_metadata(primitive):
    seq = primitive.next_sequence()
    for limit in (5, 6, 7):
        info = primitive.info(f"SELECT COUNT(*) FROM primitive WHERE id < {limit}", seq)
        assert primitive.read(info).column(0).to_pylist() == [limit]
        meta = json.loads(info.app_metadata)
        assert meta["version"] == 1 and meta["next_sequence"] == seq + 4
        seq = meta["next_sequence"]
    assert primitive.next_sequence() == seq


def _set_request(name: str, value: int) -> bytes:
    # SessionOptionValue.int64_value is field 3, sfixed64: wire type 1, eight little-endian bytes
    # (a varint there is a wrong wire type, which the gateway refuses as a malformed request).
    option_value = bytes([3 << 3 | 1]) + struct.pack("<q", value)
    entry = flightsql._field_bytes(1, name.encode()) + flightsql._field_bytes(2, option_value)
    return flightsql._field_bytes(1, entry)


def test_set_session_options_refuses_every_name_and_close_session_succeeds(primitive):
    before = primitive.next_sequence()
    body = _set_request("transit.next_sequence", 1) + _set_request("other", 2)
    [result] = list(primitive.client.do_action(fl.Action("SetSessionOptions", body), primitive.options()))
    errors = {}
    for entry in flightsql.parse(result.body.to_pybytes()).get(1, []):
        e = flightsql.parse(entry)
        errors[e[1][0].decode()] = flightsql.parse(e[2][0]).get(1, [0])[0]
    # ErrorValue: INVALID_NAME = 1, INVALID_VALUE = 2 (the option exists but is read-only).
    assert errors == {"transit.next_sequence": 2, "other": 1}
    assert primitive.next_sequence() == before

    # A value with no variant asks to clear the option (what ADBC's optionerase sends): refused
    # in the result like any other; until 2026-12-06 the whole call was INVALID_ARGUMENT.
    entry = flightsql._field_bytes(1, b"transit.next_sequence") + flightsql._field_bytes(2, b"")
    [result] = list(primitive.client.do_action(
        fl.Action("SetSessionOptions", flightsql._field_bytes(1, entry)), primitive.options()))
    [entry] = flightsql.parse(result.body.to_pybytes())[1]
    e = flightsql.parse(entry)
    assert (e[1][0], flightsql.parse(e[2][0]).get(1, [0])[0]) == (b"transit.next_sequence", 2)
    assert primitive.next_sequence() == before

    [closed] = list(primitive.client.do_action(fl.Action("CloseSession", b""), primitive.options()))
    assert flightsql.parse(closed.body.to_pybytes()) == {1: [1]}  # CloseSessionResult.Status.CLOSED
    assert primitive.next_sequence() == before, "nothing to close: the caller works on"
