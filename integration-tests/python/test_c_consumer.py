"""The ADBC C consumer on its own: values against DuckDB, and each failure's status and details.

Runs when scripts/check.d/50-adbc-c.sh has built the consumer (TRANSIT_ADBC_C, TRANSIT_ADBC_DRIVER).
"""

import json
import os

import pytest

from clients import CConsumer
from diagnostic_clients import decode_diagnostic
from test_pyarrow_statements import duck

BINARY, DRIVER = os.environ.get("TRANSIT_ADBC_C"), os.environ.get("TRANSIT_ADBC_DRIVER")
pytestmark = pytest.mark.skipif(not (BINARY and DRIVER), reason="built and run by scripts/check.d/50-adbc-c.sh")


@pytest.fixture
def c(gateway):
    consumer = CConsumer(BINARY, DRIVER, gateway.uri)
    for slot, caller in enumerate(("primitive", "mixed", "cells")):
        assert consumer.command("connect", slot, gateway.token(caller))["ok"]
    yield consumer
    consumer.close()


def compact(rows):
    return json.dumps([list(r) for r in rows], separators=(",", ":"))


@pytest.mark.parametrize("sql,reference", [
    ("SELECT SUM(a), COUNT(*), COUNT(b) FROM primitive", "SELECT SUM(a), COUNT(*), COUNT(b) FROM T"),
    ("SELECT id, a, b, d FROM primitive WHERE id IN (0, 3, 5, 7) OR id < 2",
     "SELECT id, a, b, d FROM T WHERE id IN (0, 3, 5, 7) OR id < 2 ORDER BY id"),
    ("SELECT SUM(c), COUNT(*) FROM primitive WHERE a BETWEEN 10 AND 5000 AND b IS NOT NULL",
     "SELECT SUM(c), COUNT(*) FROM T WHERE a BETWEEN 10 AND 5000 AND b IS NOT NULL"),
])
def test_adbc_c_values_match_duckdb(c, gateway, sql, reference):
    r = c.command("query", 0, "next", sql, compact(duck(gateway, "primitive", reference)))
    assert r["ok"], r
    assert all(f["format"] == "l" for f in r["schema"])


def test_adbc_c_large_result_streams_every_row(c, gateway):
    total = duck(gateway, "primitive", "SELECT COUNT(*) FROM T")[0][0]
    first = c.command("open", 0, "next", "SELECT id, a, c FROM primitive")
    assert first["ok"] and 0 < first["row_count"] < total
    assert c.command("drain", total) == {"ok": True, "row_count": total}


def diagnostic(answer):
    assert answer["ok"] is False, answer
    return decode_diagnostic(answer["details"]["transit-diagnostic-bin"])


def test_adbc_c_reports_status_and_diagnostic_details(c):
    nxt = c.command("next", 0)["next_sequence"]
    gap = c.command("query", 0, nxt + 7, "SELECT COUNT(*) FROM primitive")
    d = diagnostic(gap)
    assert (d["code"], d["status"]) == ("query.sequence_gap", "FAILED_PRECONDITION")
    assert gap["where"] == "StatementExecuteQuery" and f"expected {nxt}" in gap["message"]
    unsupported = c.command("query", 1, "next", "SELECT region FROM mixed")
    assert unsupported["status_name"] == "NOT_IMPLEMENTED"
    assert diagnostic(unsupported)["code"] == "query.unsupported"
    overflow = c.command("query", 2, "next", "SELECT SUM(huge) FROM cells")
    d = diagnostic(overflow)
    assert (d["code"], d["status"]) == ("query.arithmetic_overflow", "OUT_OF_RANGE")
    unknown = c.command("query", 0, "next", "SELECT nope FROM primitive")
    assert unknown["status_name"] == "INVALID_ARGUMENT" and diagnostic(unknown)["code"] == "query.unknown_column"
    assert c.command("next", 0)["next_sequence"] == nxt, "refused statements record nothing"


def test_adbc_c_bad_credential_is_unauthenticated(gateway):
    consumer = CConsumer(BINARY, DRIVER, gateway.uri)
    try:
        assert consumer.command("connect", 0, "tfg_not_a_credential_of_this_gateway_000000")["ok"]
        r = consumer.command("next", 0)
        assert r["ok"] is False and r["status_name"] == "UNAUTHENTICATED"
        # Every failure carries Diagnostic v1; before authentication only the minimal envelope:
        # the code and its cause, no identity, no facts (the caller is unknown).
        diagnostic = decode_diagnostic(r["details"]["transit-diagnostic-bin"])
        assert diagnostic["code"] == "auth.unauthenticated", diagnostic
        assert diagnostic["identity"] == {} and diagnostic["facts"] == [], diagnostic
    finally:
        consumer.close()


def usage(answer):
    assert answer["ok"] is False and answer["where"] == "usage", answer
    return answer["message"]


def test_adbc_c_close_releases_the_slots_open_stream_first(c, gateway):
    """The open stream's statement is on the slot's connection: close releases it before the
    connection, so nothing later (drain, the exit) touches a statement whose connection is gone."""
    first = c.command("open", 0, "next", "SELECT id, a, c FROM primitive")
    assert first["ok"], first
    assert c.command("close", 1) == {"ok": True}, "another slot's close leaves the stream open"
    assert c.command("close", 0) == {"ok": True, "released_open_stream": True}
    assert usage(c.command("drain")) == "no open stream"
    assert usage(c.command("next", 0)) == "slot is not connected"
    assert c.command("connect", 0, gateway.token("primitive"))["ok"], "the slot can be used again"
    assert c.command("next", 0)["ok"]


def test_adbc_c_refuses_malformed_fields(c, gateway):
    assert "token too long" in usage(c.command("connect", 5, "t" * 600))
    assert usage(c.command("next", 5)) == "slot is not connected"
    for bad in ("abc", "+f", "0x", "zz", " 1"):
        assert "partition must be hex" in usage(c.command("readpart", 0, bad)), bad
    assert "at most 64" in usage(c.command("info", 0, ",".join(["0"] * 65)))
    for bad in ("0,x", "0,,1", "-1", "4294967296", "0,"):
        assert usage(c.command("info", 0, bad)), bad
    assert c.command("info", 0, ",".join(["0"] * 64))["ok"]
    assert usage(c.command("objects", 0, "x", "", "", ""))
    total = duck(gateway, "primitive", "SELECT COUNT(*) FROM T")[0][0]
    assert c.command("open", 0, "next", "SELECT id FROM primitive")["ok"]
    for bad in ("many", "", "12x", "99999999999999999999"):
        assert "must be an integer" in usage(c.command("drain", bad)), bad
    # A refused drain left the stream open: it is still read to its end.
    assert c.command("drain", total) == {"ok": True, "row_count": total}


def test_adbc_c_partition_round_trip_in_either_hex_case(c, gateway):
    sql = "SELECT SUM(a), COUNT(*) FROM primitive"
    expect = compact(duck(gateway, "primitive", "SELECT SUM(a), COUNT(*) FROM T"))
    r = c.command("partitions", 0, "next", sql)
    assert r["ok"] and len(r["partitions"]) == 1, r
    ticket = r["partitions"][0]
    for hex_text in (ticket, ticket.upper()):
        got = c.command("readpart", 0, hex_text, expect)
        assert got["ok"] and got["row_count"] == 1, got
    wrong = c.command("readpart", 0, ticket, "[[0,0]]")
    assert wrong["where"] == "values" and wrong["got"] == expect, wrong
