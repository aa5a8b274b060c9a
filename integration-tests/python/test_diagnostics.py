"""Diagnostic v1 as real clients see it: PyArrow (a ClientMiddleware reading the
transit-diagnostic-bin header/trailer) and grpcio (the exact status and decoded grpc-message),
against the real daemon and two variants of its deployment (tight budgets, a tiny metadata budget).

Every observed failure goes through ``observe``: the grpc-message is printable ASCII of at most
128 bytes and equals the documented bounding of the trailer's ``code: message`` (so truncation is
explicit), the trailer is <= 4096 bytes of UTF-8 JSON valid against docs/diagnostic-v1.schema.json,
its ``status`` is the exact gRPC status, and neither text contains the SQL, a credential or a
value the case names as unrelated.
"""

from dataclasses import dataclass, field, replace

import grpc
import pyarrow as pa
import pyarrow.flight as fl
import pytest

import calls as C
import flightsql
from calls import DO_GET, GET_FLIGHT_INFO, TRAILER, Caller, TrailerCapture, pyarrow_message, ticket_message
from daemon import Daemon
from diagnostic_clients import (HUGE, INT64_MAX, MARKER, U64_MAX, bounded, check_message, decode_diagnostic,
                                facts)
CALLERS = ("primitive", "mixed", "cells")
UNAUTHENTICATED_MESSAGE = ("auth.unauthenticated: a valid credential is required"
                           " (a Bearer authorization header on every call)")


@dataclass
class Request:
    """One failing call: GetFlightInfo of ``command`` or DoGet of ``ticket``."""
    caller: str = None
    command: bytes = None
    ticket: bytes = None
    sequence: int = None
    extra: tuple = ()
    authorization: str = None  # replaces the caller's Bearer credential
    sql: str = None

    def metadata(self, gw):
        if self.authorization is not None:
            return [("authorization", self.authorization)] + C.metadata(gw, None, self.sequence,
                                                                        self.extra)
        return C.metadata(gw, self.caller, self.sequence, self.extra)


@dataclass
class Seen:
    client: str
    request: Request
    status: str  # exact gRPC status name (grpcio); PyArrow narrows codes, so its is None
    message: str
    diagnostic: dict = None
    batches: int = 0  # DoGet batches (PyArrow) or data messages (grpcio) before the failure
    transit_keys: list = field(default_factory=list)


class Env:
    def __init__(self, gw):
        self.gw = gw
        self.capture = TrailerCapture()
        self.client = fl.FlightClient(gw.uri, middleware=[self.capture])
        self.channel = grpc.insecure_channel(f"127.0.0.1:{gw.port}")

    def close(self):
        self.channel.close()
        self.client.close()

    def via_grpcio(self, req: Request) -> Seen:
        md = self.metadata(req)
        received = 0
        with pytest.raises(grpc.RpcError) as e:
            if req.ticket is None:
                self.channel.unary_unary(GET_FLIGHT_INFO)(
                    flightsql.flight_descriptor(req.command), metadata=md, timeout=60)
            else:
                for _ in self.channel.unary_stream(DO_GET)(ticket_message(req.ticket), metadata=md,
                                                           timeout=60):
                    received += 1
        err = e.value
        got = C.seen(err)  # the one trailer value, decoded through the schema check
        pairs = list(err.trailing_metadata() or ()) + list(err.initial_metadata() or ())
        return Seen("grpcio", req, got.status, got.message, got.diagnostic, received,
                    [k for k, _ in pairs if k.startswith("transit-")])

    def via_pyarrow(self, req: Request) -> Seen:
        options = fl.FlightCallOptions(
            headers=[(k.encode(), v.encode()) for k, v in self.metadata(req)], timeout=60)
        batches = 0
        with pytest.raises(pa.ArrowException) as e:
            if req.ticket is None:
                self.client.get_flight_info(fl.FlightDescriptor.for_command(req.command), options)
            else:
                reader = self.client.do_get(fl.Ticket(req.ticket), options)
                while True:
                    reader.read_chunk()  # StopIteration (a test failure) if the stream completes
                    batches += 1
        raw = self.capture.only()
        return Seen("pyarrow", req, None, pyarrow_message(e.value),
                    decode_diagnostic(raw) if raw is not None else None, batches)

    def metadata(self, req):
        return req.metadata(self.gw)

    def observe(self, make, forbidden=()):
        """Runs a fresh ``make()`` request through grpcio and PyArrow; checks what every
        failure must satisfy and returns both observations."""
        seen = [self.via_grpcio(make()), self.via_pyarrow(make())]
        for s in seen:
            check_message(s.message)
            secrets = [self.gw.token(c) for c in CALLERS] + list(forbidden)
            if s.request.sql:
                secrets.append(s.request.sql)
            texts = [s.message] + ([repr(s.diagnostic), s.diagnostic["message"]] if s.diagnostic else [])
            for text in texts:
                for secret in secrets:
                    assert secret not in text, f"{s.client}: {secret!r} disclosed in {text!r}"
            if s.diagnostic is not None:
                d = s.diagnostic
                assert s.message == bounded(d["code"] + ": " + d["message"]), s.client
        grpc_seen, arrow_seen = seen
        if grpc_seen.diagnostic is not None:
            assert grpc_seen.diagnostic["status"] == grpc_seen.status
        assert (grpc_seen.diagnostic is None) == (arrow_seen.diagnostic is None)
        return seen


@pytest.fixture(scope="module")
def env(gateway):
    e = Env(gateway)
    yield e
    e.close()


def statement(caller, sql, sequence):
    return Request(caller, command=flightsql.statement_query(sql), sequence=sequence, sql=sql)


def assert_failure(s: Seen, status, code, stage=None, outcome=None):
    d = s.diagnostic
    assert d is not None, f"{s.client}: no {TRAILER}"
    assert d["status"] == status and d["code"] == code, (s.client, d)
    assert s.message.startswith(code + ": ")
    if s.status is not None:
        assert s.status == status
    if stage is not None:
        assert d.get("stage") == stage, (s.client, d)
    if outcome is not None:
        assert d["outcome"] == outcome


def number(d, name):
    f = facts(d)[name]
    assert f["kind"] == "number", f
    return f["value"]


# ---- terminal and admission failures: code, stage and the request namespace --------------------

def test_sequence_gap_names_expected_sequence(env, primitive):
    nxt = primitive.next_sequence()
    for s in env.observe(lambda: statement("primitive", "SELECT SUM(a) FROM primitive", nxt + 5)):
        assert_failure(s, "FAILED_PRECONDITION", "query.sequence_gap", "admission", "rejected")
        assert s.diagnostic["identity"]["namespace"] == str(nxt + 5)
        assert number(s.diagnostic, "expected_sequence") == str(nxt)
        assert s.diagnostic["actions"] == ["use_expected_sequence"]
    assert primitive.next_sequence() == nxt, "a gap records nothing"


def test_namespace_conflict_is_aborted_with_identity(env, primitive):
    used = primitive.next_sequence()
    primitive.read(primitive.info("SELECT COUNT(*) FROM primitive", used))
    for s in env.observe(lambda: statement("primitive", "SELECT SUM(a) FROM primitive", used)):
        assert_failure(s, "ABORTED", "query.namespace_conflict", "admission", "rejected")
        assert s.diagnostic["identity"]["namespace"] == str(used)
        assert number(s.diagnostic, "sequence") == str(used)


def test_sum_overflow_at_execution(env, cells):
    sql = "SELECT SUM(huge) FROM cells"
    for s in env.observe(lambda: statement("cells", sql, cells.next_sequence()),
                         forbidden=[HUGE, U64_MAX, INT64_MAX]):
        assert_failure(s, "OUT_OF_RANGE", "query.arithmetic_overflow", "execution", "failed")
        assert s.diagnostic["identity"]["namespace"] == str(s.request.sequence)
        assert facts(s.diagnostic)["column"]["value"] == "SUM(huge)"
        # Recorded: the sequence is spent, and the caller is told the one to use next.
        assert "use_next_sequence" in s.diagnostic["actions"]
        hint = int(facts(s.diagnostic)["next_sequence"]["value"])
        assert s.request.sequence < hint <= cells.next_sequence(), (s.request.sequence, hint)


def doget(caller, sql):
    """A DoGet request for the ticket of ``sql``, run at the caller's next sequence."""
    seq = caller.next_sequence()
    info = caller.info(sql, seq)
    return Request(caller.name, ticket=info.endpoints[0].ticket.ticket, sql=sql), seq


def test_projecting_uint64_is_unimplemented_before_upload(env, cells):
    # docs/conformance.md "projecting them returns UNIMPLEMENTED before upload": the uint64 column
    # `big` is refused at compile time; no sequence is consumed (flight.integer_out_of_range is
    # left to COUNT, which would need more than 2^63 rows to reach it).
    nxt = cells.next_sequence()
    for s in env.observe(lambda: statement("cells", "SELECT big FROM cells", nxt),
                         forbidden=[HUGE, U64_MAX]):
        assert_failure(s, "UNIMPLEMENTED", "query.unsupported", None, "not_admitted")
        assert facts(s.diagnostic)["type"]["value"] == "UINT64"
    assert cells.next_sequence() == nxt, "nothing was uploaded"


def test_bad_cells_at_output(env, cells):
    req, seq = doget(cells, "SELECT bad FROM cells")
    for s in env.observe(lambda: req, forbidden=[HUGE, U64_MAX, INT64_MAX]):
        assert_failure(s, "FAILED_PRECONDITION", "query.cell_state", "output", "failed")
        d = s.diagnostic
        assert d["identity"]["namespace"] == str(seq)
        assert facts(d)["column"]["value"] == "bad"
        assert number(d, "row") == "1"
        assert facts(d)["state"]["value"] == "CELL_MISSING"


# ---- compile errors: caller identifiers and literals, escaped and bounded ------------------------

def test_unsupported_projection(env, mixed):
    nxt = mixed.next_sequence()
    for s in env.observe(lambda: statement("mixed", "SELECT region FROM mixed", nxt)):
        assert_failure(s, "UNIMPLEMENTED", "query.unsupported", outcome="not_admitted")
        assert {k: facts(s.diagnostic)[k]["value"] for k in ("column", "type")} == \
            {"column": "region", "type": "UTF8"}
        assert s.diagnostic["identity"] == {}
    assert mixed.next_sequence() == nxt, "a compile error costs no sequence"


def test_unknown_column_with_long_weird_identifier(env, primitive):
    weird = 'w%e\u00efrd""x\u2603\U0001F600\\n\t' * 60  # '""' is one quote inside the identifier
    sql = f'SELECT "{weird}" FROM primitive WHERE id = 424242'
    for s in env.observe(lambda: statement("primitive", sql, primitive.next_sequence()),
                         forbidden=["424242", weird.replace('""', '"')[:40]]):
        assert_failure(s, "INVALID_ARGUMENT", "query.unknown_column", outcome="not_admitted")
        column = facts(s.diagnostic)["column"]["value"]
        assert column.startswith("w%e") and len(column) < 64, column
        assert "%" in s.message


def test_type_mismatch_literal_keeps_percent_and_is_escaped(env, primitive):
    literal = "100% ''q'' caf\u00e9 " + "\u2603" * 30 + " tail"
    sql = f"SELECT a FROM primitive WHERE a = '{literal}' AND id = 777777"
    for s in env.observe(lambda: statement("primitive", sql, primitive.next_sequence()),
                         forbidden=["777777", "tail"]):
        assert_failure(s, "INVALID_ARGUMENT", "query.type_mismatch", outcome="not_admitted")
        f = facts(s.diagnostic)
        assert (f["column"]["value"], f["expected"]["value"], f["supplied"]["value"]) == \
            ("a", "INT64", "string")
        assert f["literal"]["value"].startswith("'100% ''q'' caf")
        assert "100%" in s.message, "'%' arrives decoded, not as %25"
        # The compiler escapes and cuts the literal (32 characters, '...'); the bound escapes '\'.
        assert "caf\\\\xe9" in s.message and "..." in f["literal"]["value"]


# ---- before any query: authentication, header rules, tickets -----------------------------------

def assert_minimal_unauthenticated(d):
    """The one envelope every UNAUTHENTICATED failure carries (docs/status.md)."""
    assert (d["code"], d["cause"], d["status"]) == ("auth.unauthenticated", "UNAUTHENTICATED",
                                                    "UNAUTHENTICATED"), d
    assert not d.get("identity") and not d.get("facts") and "stage" not in d, d
    assert not any(term in d for term in ("witness", "basis", "budgets")), d


def test_unauthenticated_carries_the_minimal_envelope_and_discloses_nothing(env, primitive):
    seq = primitive.next_sequence()
    ticket = primitive.info("SELECT id FROM primitive WHERE id < 3", seq).endpoints[0].ticket.ticket
    sql = "SELECT SUM(a) FROM primitive"
    nxt = primitive.next_sequence()
    cases = [
        lambda: Request(None, command=flightsql.statement_query(sql), sequence=nxt, sql=sql),
        lambda: Request("primitive", command=flightsql.statement_query(sql), sequence=nxt,
                        authorization="Bearer tfg_" + "x" * 43, sql=sql),
        lambda: Request("primitive", ticket=ticket, authorization="Bearer " + env.gw.token("primitive")[:-2]),
    ]
    for make in cases:
        for s in env.observe(make, forbidden=["primitive", str(seq)]):
            assert s.message == UNAUTHENTICATED_MESSAGE
            # The minimal envelope: nothing about the query, its runtime or which check failed.
            assert_minimal_unauthenticated(s.diagnostic)
            assert s.transit_keys in ([], ["transit-diagnostic-bin"])
            if s.status is not None:
                assert s.status == "UNAUTHENTICATED"
    assert primitive.next_sequence() == nxt, "nothing was admitted"


def test_override_header_is_refused_without_identity(env, primitive):
    nxt = primitive.next_sequence()
    long_name = "x-transit-" + "override-" * 30
    for extra in ([("x-principal", "101")], [(long_name, "1")]):
        for s in env.observe(lambda: replace(statement("primitive", "SELECT a FROM primitive", nxt),
                                             extra=tuple(extra))):
            assert_failure(s, "INVALID_ARGUMENT", "auth.override_header", outcome="not_admitted")
            assert s.diagnostic["identity"] == {} and s.diagnostic["facts"] == []
            name = extra[0][0]
            assert name in s.diagnostic["message"], "the trailer keeps the full message"
            # Over 128 bytes the grpc-message is cut and says so (observe checks the exact cut).
            assert s.message.endswith(MARKER) == (len(name) > 60)


def test_bad_and_foreign_tickets_disclose_no_query(env, primitive, mixed):
    seq = primitive.next_sequence()
    good = primitive.info("SELECT id FROM primitive WHERE id < 3", seq).endpoints[0].ticket.ticket
    tampered = good[:-1] + bytes([good[-1] ^ 1])
    for ticket in (b"FTK1" + b"\0" * 60, tampered):
        for s in env.observe(lambda: Request("primitive", ticket=ticket)):
            assert_failure(s, "INVALID_ARGUMENT", s.diagnostic["code"], outcome="not_admitted")
            assert s.diagnostic["code"].startswith("ticket.")
            assert s.diagnostic["identity"] == {} and s.diagnostic["facts"] == []
    for s in env.observe(lambda: Request("mixed", ticket=good)):
        assert_failure(s, "PERMISSION_DENIED", "ticket.scope")
        assert s.diagnostic["identity"] == {} and s.diagnostic["facts"] == []
        assert not any(term in s.diagnostic for term in ("witness", "basis", "budgets"))
        assert "primitive" not in s.message


# ---- deployment variants -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tight(gateway):
    """max_result_rows 3 (budget failures) and one row per segment (failures mid-stream)."""
    d = Daemon.variant(gateway, {"limits": {"max_result_rows": 3, "rows_per_segment": 1}}).start()
    e = Env(d)
    yield e
    e.close()
    d.close()


@pytest.fixture(scope="module")
def starved(gateway):
    """A deployment metadata budget (64 bytes) smaller than any diagnostic trailer."""
    d = Daemon.variant(gateway, {"limits": {"diagnostic_metadata_bytes": 64}}).start()
    e = Env(d)
    yield e
    e.close()
    d.close()


def variant_caller(e, name):
    return Caller(e.gw, name)


def test_budget_exhausted_carries_exact_limit_and_required(tight):
    primitive = variant_caller(tight, "primitive")
    sql = "SELECT id FROM primitive WHERE id < 10"
    for s in tight.observe(lambda: statement("primitive", sql, primitive.next_sequence())):
        assert_failure(s, "RESOURCE_EXHAUSTED", "query.budget_exhausted", "execution", "failed")
        assert s.diagnostic["identity"]["namespace"] == str(s.request.sequence)
        assert (number(s.diagnostic, "limit"), number(s.diagnostic, "required")) == ("3", "10")
        # The same figures as the exact budget the failure is about, next to the journal's record.
        assert s.diagnostic["budgets"] == [{"name": "max_result_rows", "limit": "3", "required": "10"}]
        assert s.diagnostic["witness"] == {
            "source": "native_failure", "stage": "execution", "code": "query.budget_exhausted",
            "correlation": s.diagnostic["identity"]["correlation"]}
        assert s.diagnostic["basis"]["engine"] == "transit-embedded"


def test_cell_state_failure_in_the_middle_of_a_stream(tight):
    cells = variant_caller(tight, "cells")
    req, seq = doget(cells, "SELECT bad FROM cells WHERE id < 3")  # row 0 valid, row 1 missing
    grpc_seen, arrow_seen = tight.observe(lambda: req, forbidden=[HUGE])
    assert arrow_seen.batches == 1, "PyArrow read row 0 before the failure"
    assert grpc_seen.batches >= 2, "schema and the first batch arrived before the failure"
    for s in (grpc_seen, arrow_seen):
        # Row 0 was delivered: the caller holds a prefix, so the read is incomplete.
        assert_failure(s, "FAILED_PRECONDITION", "query.cell_state", "output", "incomplete")
        assert s.diagnostic["identity"]["namespace"] == str(seq)
        assert number(s.diagnostic, "row") == "1"


def test_metadata_budget_smaller_than_trailer_omits_it(env, starved, mixed, primitive):
    """Status and message are what the default deployment sends; only the trailer is gone."""
    cases = [
        (lambda c: statement("mixed", "SELECT region FROM mixed", c("mixed").next_sequence())),
        (lambda c: Request("primitive", ticket=b"FTK1" + b"\0" * 60)),
        (lambda c: Request("primitive", command=flightsql.get_catalogs(),
                           extra=[("x-principal", "101")])),
        (lambda c: statement("primitive", "SELECT a FROM primitive WHERE a = '100% caf\u00e9'",
                             c("primitive").next_sequence())),
    ]
    default = {"mixed": mixed, "primitive": primitive}
    for make in cases:
        full = env.observe(lambda: make(default.get))
        bare = starved.observe(lambda: make(lambda n: variant_caller(starved, n)))
        for f, b in zip(full, bare):
            assert f.diagnostic is not None and b.diagnostic is None
            assert (b.status, b.message) == (f.status, f.message)
            assert b.transit_keys == []
