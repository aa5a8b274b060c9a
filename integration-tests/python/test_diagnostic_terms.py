"""Diagnostic v1's explicit truncation and shared-contract terms against the real daemon
(issue 15 items 5 and 6; docs/diagnostic-v1.md, "Shared-contract terms").

* A compile error whose caller text the compiler cut flags it: ``message_truncated`` and the
  fact's ``truncated``, although the trailer is far below 4096 bytes.
* Compile errors carry the compiler as their witness and the frozen basis: the declaration
  fingerprint (the same 32 bytes the caller's FTK1 tickets carry at offset 105) and the engine
  build; a compiler bound carries its exact budget.
* Saved-query failures carry the journal's record as their witness (code, stage, correlation) and
  the basis; recorded native rejections carry code, native sequence and the command's digest.
* Access-class failures (UNAUTHENTICATED, PERMISSION_DENIED) carry none of them, even where the
  same failure for an authorized caller would.

Every trailer is read with grpcio and checked against the JSON Schema (decode_diagnostic).
"""

import re

import grpc
import pytest

import calls as C
import flightsql
from daemon import ROOT, Daemon
from diagnostic_clients import MARKER, decode_diagnostic, facts

TERMS = ("witness", "basis", "budgets")
# The engine build the daemon runs: gateway-core's Maven version (its jar's pom.properties).
PROJECT_VERSION = re.search(r"<version>([^<]+)</version>",
                            (ROOT / "pom.xml").read_text().split("</parent>")[-1]).group(1)


def fails(fn, *args, **kwargs):
    """(status name, grpc-message, schema-checked diagnostic) of a call that must fail."""
    got = C.failure(fn, *args, **kwargs)
    assert got.raw_trailer is not None, f"{got.status}: no trailer"
    return got.status, got.message, decode_diagnostic(got.raw_trailer)


def declaration_of(ch, daemon, caller, sql):
    """The declaration fingerprint (hex) an FTK1 ticket for ``sql`` carries (docs/tickets.md)."""
    ticket = C.flight_info(ch, daemon, sql, caller=caller)
    assert len(ticket) == 250 and ticket[145] == 1, "a statement ticket"
    return ticket[105:137].hex()


def assert_basis(d, declaration):
    assert d["basis"] == {"declaration_sha256": declaration, "engine": "transit-embedded",
                          "engine_version": PROJECT_VERSION}, d


def assert_no_terms(d):
    assert not any(t in d for t in TERMS), d
    assert d["identity"] == {} and d["facts"] == [], d


@pytest.fixture(scope="module")
def ch(gateway):
    channel = C.channel(gateway)
    yield channel
    channel.close()


def test_a_long_compile_error_flags_its_cut_text(gateway, ch):
    weird = "w" * 40 + "\u2603" * 40 + "%tail"
    sql = f'SELECT "{weird}" FROM primitive WHERE id = 31337'
    before = C.next_sequence(ch, gateway)
    status, message, d = fails(C.flight_info, ch, gateway, sql, sequence=before)
    assert (status, d["code"]) == ("INVALID_ARGUMENT", "query.unknown_column"), d
    column = facts(d)["column"]
    # Cut by the compiler to 32 characters: flagged, although the encoder had room for more.
    assert column["value"] == "w" * 29 + "..." and column["truncated"] is True, column
    assert d["message_truncated"] is True and d["truncated"] is True, d
    assert not d["message"].endswith(MARKER), "not shortened by the encoder"
    assert "tail" not in message and "31337" not in message and "31337" not in str(d)
    assert d["witness"] == {"source": "compiler", "stage": "compilation",
                            "code": "query.unknown_column"}, d
    assert d["identity"] == {} and "budgets" not in d
    assert_basis(d, declaration_of(ch, gateway, "primitive", "SELECT id FROM primitive WHERE id < 2"))
    assert C.next_sequence(ch, gateway) == before + 4, "only the ticket's statement was admitted"

    # The same error with a short identifier: nothing is cut, nothing is flagged.
    status, _, d = fails(C.flight_info, ch, gateway, 'SELECT "nope" FROM primitive',
                         sequence=before + 4)
    assert facts(d)["column"] == {"name": "column", "kind": "text", "value": "nope"}, d
    assert "message_truncated" not in d and d["truncated"] is False, d
    assert d["witness"]["source"] == "compiler" and "basis" in d


def test_a_compiler_bound_carries_its_exact_budget(gateway, ch):
    sql = "SELECT id FROM primitive WHERE " + "(" * 40 + "id = 1" + ")" * 40
    status, _, d = fails(C.sql_schema, ch, gateway, sql, "primitive")
    assert (status, d["code"]) == ("INVALID_ARGUMENT", "query.too_complex"), d
    assert d["budgets"] == [{"name": "nesting", "limit": "32", "required": "40"}], d
    assert d["witness"] == {"source": "compiler", "stage": "compilation",
                            "code": "query.too_complex"}, d
    assert d["basis"]["engine"] == "transit-embedded"


def test_a_saved_query_failure_carries_its_record_and_basis(gateway, ch):
    declaration = declaration_of(ch, gateway, "cells", "SELECT COUNT(*) FROM cells")
    seq = C.next_sequence(ch, gateway, "cells")
    status, _, d = fails(C.sql_info, ch, gateway, "cells", "SELECT SUM(huge) FROM cells", seq)
    assert (status, d["code"], d["stage"]) == ("OUT_OF_RANGE", "query.arithmetic_overflow",
                                               "execution"), d
    correlation = d["identity"]["correlation"]
    assert d["identity"]["namespace"] == str(seq)
    assert d["witness"] == {"source": "native_failure", "stage": "execution",
                            "code": "query.arithmetic_overflow", "correlation": correlation}, d
    assert_basis(d, declaration)
    assert "budgets" not in d, "an overflow is about no budget"


@pytest.fixture(scope="module")
def unpublished(gateway):
    """The engine serves no publication, and cells has lost its read right: both are refused by
    the checks that precede disclosure, before any native command."""
    d = Daemon.variant(gateway, faults="engine-publications:none")
    d.edit_caller("cells", read=False)
    d.start()
    yield d
    d.close()


def test_an_unpublished_table_is_refused_before_any_native_command(gateway, ch, unpublished):
    # Authorization precedes disclosure (docs/security.md): the engine's source/requester check
    # runs before anything is compiled or sent, so the Table's absence is a refusal with no native
    # record behind it — no native sequence, no witness of a rejection that never happened. (A
    # recorded native rejection's witness and basis: AdmissionServiceTest, where the engine's
    # check passes and its submit is refused.)
    d, uch = unpublished, C.channel(unpublished)
    before = d.journal().commands(d.principal("primitive"))
    try:
        seq = C.next_sequence(uch, d)
        status, _, diag = fails(C.sql_info, uch, d, "primitive", "SELECT SUM(a) FROM primitive", seq)
    finally:
        uch.close()
    assert (status, diag["code"]) == ("FAILED_PRECONDITION", "query.source_unavailable"), diag
    assert diag["outcome"] == "not_admitted", diag
    assert "native_sequence" not in diag.get("identity", {}), diag
    assert diag.get("witness", {}).get("source") != "native_rejection", diag
    assert d.journal().commands(d.principal("primitive")) == before


def test_access_errors_carry_no_witness_basis_or_budgets(gateway, ch, unpublished):
    # PERMISSION_DENIED from current authorization, before anything is compiled or sent.
    uch = C.channel(unpublished)
    try:
        seq = C.next_sequence(uch, unpublished, "cells")
        status, _, d = fails(C.sql_info, uch, unpublished, "cells", "SELECT COUNT(*) FROM cells", seq)
        assert (status, d["code"]) == ("PERMISSION_DENIED", "access.read_revoked"), d
        assert_no_terms(d)
    finally:
        uch.close()
    # PERMISSION_DENIED for another caller's ticket.
    ticket = C.flight_info(ch, gateway, "SELECT id FROM primitive WHERE id < 2")
    status, _, d = fails(C.drain, ch, gateway, "mixed", ticket)
    assert (status, d["code"]) == ("PERMISSION_DENIED", "ticket.scope"), d
    assert_no_terms(d)
    # UNAUTHENTICATED for statements that, authenticated, would carry every term.
    bad = [("authorization", "Bearer tfg_" + "x" * 43)]
    for sql in ('SELECT "' + "w" * 80 + '" FROM primitive', "SELECT SUM(huge) FROM cells",
                "SELECT id FROM primitive WHERE " + "(" * 40 + "id = 1" + ")" * 40):
        status, _, d = fails(C.info, ch, gateway, None, flightsql.statement_query(sql), 1, extra=bad)
        assert (status, d["code"]) == ("UNAUTHENTICATED", "auth.unauthenticated"), d
        assert_no_terms(d)
        assert "message_truncated" not in d
