"""Every row of the status table (docs/status.md, parsed here: a new row without a trigger fails),
triggered from a real client (grpcio, for exact codes) against the real daemon.

For each row: the wire status is exactly the row's status; the grpc-message is printable ASCII of
at most 128 bytes; the transit-diagnostic-bin trailer is valid Diagnostic v1 JSON (schema,
size, UTF-8) whose ``status`` is the wire status and whose ``cause`` is the row. Rows that by
design carry no trailer are listed in NO_TRAILER with the reason, and its absence is asserted.

Daemons: the session gateway, and variant daemons over copies of its deployment:
``held`` (execution delay, one admission per caller, 3-row budget, unknown outcome once, results
released after execution), ``edited`` (a 1 MiB stream allocator; SIGHUP edits), ``unpublished``
(engine without publications, clock reading -1 ms) and ``defective`` (a clock that throws).
The held rig's one after-record fault is meant for the UNKNOWN_OUTCOME row, which runs first;
run the module whole (a ``-k`` selection of another held-rig row would meet that fault).
"""

import copy
import re
import sqlite3
import time

import grpc
import pytest

import flightsql
from calls import (drain, expiry_ms, failure, info, next_sequence, sql_info, sql_info_future,
                   ticket_of)
from daemon import ROOT, Daemon, close_all, wait_until
from diagnostic_clients import bounded, check_message, decode_diagnostic, facts

# A status-table row in docs/status.md: "| `CAUSE` | `STATUS` | ...".
_ROW = re.compile(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \|")


def status_rows():
    """[(cause, status)] of every row of the status table in docs/status.md, in order."""
    rows = [(m.group(1), m.group(2)) for line in
            (ROOT / "docs" / "status.md").read_text().splitlines() if (m := _ROW.match(line))]
    assert len(rows) >= 20, f"the status table parsed to {len(rows)} rows"
    return rows


ROWS = status_rows()
DELAY_MS = 2500
BIG = "SELECT id, a, b, c, d FROM primitive"
# Rows whose failure reaches the client without a trailer, and why (docs/status.md).
NO_TRAILER = {
    "CANCELLED": "the client cancelled: the stream is reset, the server cannot send a trailer",
}
# Rows no client can trigger, and why; each names the test that proves it instead.
NOT_FROM_A_CLIENT = {
    "INTEGER_OUT_OF_RANGE": "only COUNT converts uint64 to int64 (projection is refused before"
                            " upload), and a COUNT above int64 max needs 2^63 rows; proved by"
                            " CellAdapterTest and test_projecting_uint64_is_unimplemented_before_upload",
}


# ---- daemons ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rigs(gateway):
    """Started on first use and stopped (cleanly) at the end of the module."""
    started = {}

    def get(name):
        if name not in started:
            spec = {
                "held": dict(limits={"admission_per_caller": 1, "control_deadline_default_ms": 1000,
                                     "max_result_rows": 3},
                             faults=f"execution-delay-ms:{DELAY_MS},after-record:submit:once,"
                                    "release-after-execution"),
                "edited": dict(limits={"stream_allocator_bytes": 3 << 19,
                                       "max_segment_bytes": 3 << 19, "rows_per_segment": 32768}),
                "unpublished": dict(faults="engine-publications:none,clock:negative"),
                "defective": dict(faults="clock:defect"),
            }[name]
            started[name] = Daemon.variant(gateway, {"limits": spec.get("limits", {})},
                                           faults=spec.get("faults")).start()
        return started[name]

    yield get
    close_all(d.close for d in started.values())


class Ctx:
    def __init__(self, gateway, rigs):
        self.gw = gateway
        self.rig = rigs
        self.channels = []

    def channel(self, d):
        ch = grpc.insecure_channel(f"127.0.0.1:{d.port}",
                                   options=[("grpc.use_local_subchannel_pool", 1)])
        self.channels.append(ch)
        return ch

    def close(self):
        for ch in self.channels:
            ch.close()


@pytest.fixture
def ctx(gateway, rigs):
    c = Ctx(gateway, rigs)
    yield c
    c.close()


def fresh(ctx, d, caller, sql, timeout=60):
    """A ticket for ``sql`` run at the caller's next sequence on daemon ``d``."""
    ch = ctx.channel(d)
    return ticket_of(sql_info(ch, d, caller, sql, next_sequence(ch, d, caller), timeout=timeout))


# ---- one trigger per row ---------------------------------------------------------------------

def t_unauthenticated(ctx):
    gw = ctx.gw
    return failure(info, ctx.channel(gw), gw, None, flightsql.statement_query("SELECT a FROM primitive"),
                   1, extra=[("authorization", "Bearer tfg_" + "x" * 43)])


def t_arithmetic_overflow(ctx):
    gw, ch = ctx.gw, ctx.channel(ctx.gw)
    return failure(sql_info, ch, gw, "cells", "SELECT SUM(huge) FROM cells", next_sequence(ch, gw, "cells"))


def t_budget_exhausted(ctx):
    d = ctx.rig("held")
    ch = ctx.channel(d)
    return failure(sql_info, ch, d, "primitive", "SELECT id FROM primitive WHERE id < 10",
                   next_sequence(ch, d, "primitive"), timeout=60)


def t_admission_busy(ctx):
    d = ctx.rig("held")
    ch = ctx.channel(d)
    principal = d.principal("mixed")
    before = len(d.journal().queries(principal))
    # mixed's one admission permit is held while its query waits out the injected delay.
    held = ch.unary_unary("/arrow.flight.protocol.FlightService/GetFlightInfo").future(
        flightsql.flight_descriptor(flightsql.statement_query("SELECT COUNT(*) FROM mixed")),
        metadata=[("authorization", f"Bearer {d.token('mixed')}"),
                  ("x-transit-request-sequence", str(next_sequence(ch, d, "mixed")))], timeout=60)
    wait_until(lambda: len(d.journal().queries(principal)) > before, 30, "mixed's query accepted")
    other = ctx.channel(d)
    got = failure(sql_info, other, d, "mixed", "SELECT SUM(qty) FROM mixed",
                  next_sequence(other, d, "mixed"))
    held.result(timeout=60)
    return got


def t_access_denied(ctx):
    d = ctx.rig("edited")
    ticket = fresh(ctx, d, "cells", "SELECT ok FROM cells WHERE id < 2")
    d.edit_caller("cells", read=False)
    try:
        assert d.reload() == "reloaded"
        return failure(drain, ctx.channel(d), d, "cells", ticket)
    finally:
        d.edit_caller("cells", read=True)
        assert d.reload() == "reloaded"


def t_precondition(ctx):
    # The engine has no publication: the submit is rejected (query.source_unavailable).
    d = ctx.rig("unpublished")
    ch = ctx.channel(d)
    return failure(sql_info, ch, d, "primitive", "SELECT SUM(a) FROM primitive",
                   next_sequence(ch, d, "primitive"))


def t_cell_state(ctx):
    return failure(drain, ctx.channel(ctx.gw), ctx.gw, "cells",
                   fresh(ctx, ctx.gw, "cells", "SELECT bad FROM cells"))


def t_retired(ctx):
    # The held rig releases each result right after it executed: the ticket names a retired one.
    d = ctx.rig("held")
    return failure(drain, ctx.channel(d), d, "cells",
                   fresh(ctx, d, "cells", "SELECT COUNT(*) FROM cells"))


def t_sequence_gap(ctx):
    gw, ch = ctx.gw, ctx.channel(ctx.gw)
    return failure(sql_info, ch, gw, "primitive", "SELECT SUM(a) FROM primitive",
                   next_sequence(ch, gw, "primitive") + 7)


def t_ticket_expired(ctx):
    d = ctx.rig("edited")
    cfg = d.config()
    ttl = cfg.setdefault("deployment", {}).get("ticket_ttl_ms")
    cfg["deployment"]["ticket_ttl_ms"] = 1
    d.write_config(cfg)
    assert d.reload() == "reloaded"
    try:
        ticket = fresh(ctx, d, "primitive", "SELECT id FROM primitive WHERE id < 2")
        # Bounded wait for the wall clock to pass the ticket's own expiry (1 ms after issue).
        wait_until(lambda: time.time() * 1000 > expiry_ms(ticket) + 5, 10, "the ticket to expire")
        return failure(drain, ctx.channel(d), d, "primitive", ticket)
    finally:
        cfg = d.config()
        if ttl is None:
            del cfg["deployment"]["ticket_ttl_ms"]
        else:
            cfg["deployment"]["ticket_ttl_ms"] = ttl
        d.write_config(cfg)
        assert d.reload() == "reloaded"


def t_namespace_conflict(ctx):
    gw, ch = ctx.gw, ctx.channel(ctx.gw)
    s = next_sequence(ch, gw, "primitive")
    sql_info(ch, gw, "primitive", "SELECT COUNT(*) FROM primitive", s)
    return failure(sql_info, ch, gw, "primitive", "SELECT SUM(a) FROM primitive", s)


def t_unsupported(ctx):
    gw, ch = ctx.gw, ctx.channel(ctx.gw)
    return failure(sql_info, ch, gw, "primitive", "SELECT a FROM primitive ORDER BY a",
                   next_sequence(ch, gw, "primitive"))


def t_invalid_request(ctx):
    gw, ch = ctx.gw, ctx.channel(ctx.gw)
    return failure(sql_info, ch, gw, "primitive", "SELECT nope FROM primitive",
                   next_sequence(ch, gw, "primitive"))


def t_invalid_caller_field(ctx):
    gw = ctx.gw
    return failure(info, ctx.channel(gw), gw, "primitive", flightsql.get_catalogs(),
                   extra=[("x-principal", "101")])


def t_invalid_sequence(ctx):
    gw = ctx.gw
    return failure(info, ctx.channel(gw), gw, "primitive",
                   flightsql.statement_query("SELECT SUM(a) FROM primitive"))


def t_invalid_ticket(ctx):
    return failure(drain, ctx.channel(ctx.gw), ctx.gw, "primitive", b"FTK1" + b"\0" * 60)


def t_ticket_scope(ctx):
    ticket = fresh(ctx, ctx.gw, "primitive", "SELECT id FROM primitive WHERE id < 3")
    return failure(drain, ctx.channel(ctx.gw), ctx.gw, "mixed", ticket)


def t_invalid_protobuf(ctx):
    gw = ctx.gw
    return failure(info, ctx.channel(gw), gw, "primitive", b"\x0a\xff\xff")


def t_cancelled(ctx):
    gw = ctx.gw
    ticket = fresh(ctx, gw, "primitive", BIG)
    ch = ctx.channel(gw)
    call = ch.unary_stream("/arrow.flight.protocol.FlightService/DoGet")(
        b"\x0a" + flightsql._varint(len(ticket)) + ticket,
        metadata=[("authorization", f"Bearer {gw.token('primitive')}")], timeout=60)
    next(call)  # the stream is live: the schema arrived
    call.cancel()
    return failure(lambda: [m for m in call])


def t_deadline(ctx):
    # No client deadline: the held rig's 1 s control deadline ends the wait for a delayed query.
    d = ctx.rig("held")
    ch = ctx.channel(d)
    return failure(info, ch, d, "cells", flightsql.statement_query("SELECT COUNT(*) FROM cells"),
                   next_sequence(ch, d, "cells"), timeout=None)


def t_evidence(ctx):
    # A one-row result keeps its segment in the journal (docs/native-engine.md); flip one byte
    # there: the retained segment no longer matches its digest. (Segment files: test_disclosure.)
    d = ctx.rig("edited")
    ticket = fresh(ctx, d, "primitive", "SELECT id, c FROM primitive WHERE id = 424243")
    correlation = flightsql.ticket_correlation(ticket)
    stored = correlation - (1 << 64) if correlation >= 1 << 63 else correlation  # signed bits
    con = sqlite3.connect(d.state_dir / "engine" / "journal.sqlite", timeout=10)
    try:
        with con:
            rows = con.execute("SELECT segment_index, data FROM inline_segments"
                               " WHERE correlation = ?", (stored,)).fetchall()
            assert rows, "the query retained its segment in the journal"
            for index, data in rows:
                data = bytearray(data)
                data[len(data) // 2] ^= 0xFF
                con.execute("UPDATE inline_segments SET data = ? WHERE correlation = ?"
                            " AND segment_index = ?", (bytes(data), stored, index))
    finally:
        con.close()
    return failure(drain, ctx.channel(d), d, "primitive", ticket)


def t_unknown_outcome(ctx):
    # after-record:submit:once: the first submit of the held rig is recorded, its outcome lost.
    d = ctx.rig("held")
    ch = ctx.channel(d)
    return failure(sql_info, ch, d, "primitive", "SELECT COUNT(*) FROM primitive",
                   next_sequence(ch, d, "primitive"))


def t_transport(ctx):
    # A 32768-row segment of five columns (~1.47 MiB) is within max_segment_bytes, but its one
    # resident batch is charged 2 MiB (Arrow rounds up to a power of two): the 1.5 MiB stream
    # allocator refuses it (test_transport_budgets.py::test_stream_allocator_limit).
    d = ctx.rig("edited")
    return failure(drain, ctx.channel(d), d, "primitive", fresh(ctx, d, "primitive", BIG))


def t_clock(ctx):
    # The gateway's clock reads -1 ms: no ticket can be given an expiry (a redemption's reading
    # is refused the same way: TicketServiceTest).
    d = ctx.rig("unpublished")
    return failure(info, ctx.channel(d), d, "primitive", flightsql.get_catalogs())


def t_internal(ctx):
    d = ctx.rig("defective")  # the gateway's clock throws: an unexpected exception
    return failure(info, ctx.channel(d), d, "primitive", flightsql.get_catalogs())


TRIGGERS = {name[2:].upper(): fn for name, fn in globals().items() if name.startswith("t_")}
# The held rig's single after-record fault must meet the unknown-outcome trigger first.
ORDER = ["UNKNOWN_OUTCOME"] + [c for c, _ in ROWS
                               if c != "UNKNOWN_OUTCOME" and c not in NOT_FROM_A_CLIENT]


def test_every_trigger_names_a_row():
    assert set(TRIGGERS) - {c for c, _ in ROWS} == set(), "a trigger for a row the table lacks"
    assert set(NOT_FROM_A_CLIENT) <= {c for c, _ in ROWS} - set(TRIGGERS)


def test_integer_out_of_range_needs_no_client_trigger(ctx):
    # The row's status (UNIMPLEMENTED) is what projecting uint64 now gets, before upload.
    gw, ch = ctx.gw, ctx.channel(ctx.gw)
    nxt = next_sequence(ch, gw, "cells")
    got = failure(sql_info, ch, gw, "cells", "SELECT big FROM cells", nxt)
    assert got.status == dict(ROWS)["INTEGER_OUT_OF_RANGE"]
    assert decode_diagnostic(got.raw_trailer)["cause"] == "UNSUPPORTED"
    assert next_sequence(ch, gw, "cells") == nxt


@pytest.mark.parametrize("cause", ORDER)
def test_row(ctx, cause):
    status = dict(ROWS)[cause]
    assert cause in TRIGGERS, f"status row {cause} has no trigger in test_status_table.py"
    got = TRIGGERS[cause](ctx)
    assert got.status == status, f"{cause}: wire status {got.status}, table says {status}"
    check_message(got.message)
    if cause in NO_TRAILER:
        assert got.raw_trailer is None, f"{cause}: unexpected trailer ({NO_TRAILER[cause]})"
        return
    assert got.raw_trailer is not None, f"{cause}: no transit-diagnostic-bin trailer"
    d = decode_diagnostic(got.raw_trailer)
    assert (d["cause"], d["status"]) == (cause, got.status), d
    assert got.message == bounded(d["code"] + ": " + d["message"])


def test_a_replayed_released_result_is_refused_with_the_next_sequence(ctx):
    # The held rig releases each result as soon as it executed. The same sequence and SQL again
    # replays a released result: GetFlightInfo answers RETIRED with the caller's next sequence
    # (docs/admission.md, "Next-sequence hints"), not a ticket that only redeems to it.
    d = ctx.rig("held")
    ch = ctx.channel(d)
    sql = "SELECT COUNT(*) FROM cells"
    sequence = next_sequence(ch, d, "cells")
    ticket_of(sql_info(ch, d, "cells", sql, sequence))
    got = failure(sql_info, ch, d, "cells", sql, sequence)
    diag = got.diagnostic
    assert (got.status, diag["code"]) == ("FAILED_PRECONDITION", "query.retired"), diag
    assert (diag["outcome"], diag["actions"]) == ("incomplete", ["use_next_sequence"]), diag
    assert int(facts(diag)["next_sequence"]["value"]) == next_sequence(ch, d, "cells") > sequence


def test_a_ticket_issued_after_a_reload_takes_the_reloaded_lifetime(ctx):
    # The statement waits in admission (the held rig's execution delay) across a reload that
    # shortens deployment.ticket_ttl_ms: its ticket, issued after it, takes the new lifetime
    # (docs/tickets.md; until 2026-12-06 it kept the lifetime of the call's first moment).
    d = ctx.rig("held")
    ch = ctx.channel(d)
    cfg = d.config()
    before = dict(cfg.setdefault("deployment", {}))
    pending = sql_info_future(ch, d, "cells", "SELECT COUNT(*) FROM cells WHERE id < 2",
                              next_sequence(ch, d, "cells"))
    try:
        time.sleep(DELAY_MS / 4000)
        cfg["deployment"]["ticket_ttl_ms"] = 5000
        d.write_config(cfg)
        assert d.reload() == "reloaded"
        ticket = ticket_of(pending.result())
        assert expiry_ms(ticket) <= time.time() * 1000 + 5000, expiry_ms(ticket) - time.time() * 1000
    finally:
        cfg["deployment"] = before
        d.write_config(cfg)
        assert d.reload() == "reloaded"


def test_a_failure_after_a_reload_revoked_the_read_right_tells_the_revocation_not_the_result(ctx):
    # The statement waits in admission (the held rig's execution delay) and then fails over the
    # rig's 3-row bound, whose facts would count its rows; a reload meanwhile takes the caller's
    # read right. The caller learns the revocation with outcome unknown, as a success would
    # (until 2026-12-07 it learned the failure, the row count among its facts).
    d = ctx.rig("held")
    ch = ctx.channel(d)
    cfg = d.config()
    before = copy.deepcopy(cfg)
    sequence = next_sequence(ch, d, "primitive")
    pending = sql_info_future(ch, d, "primitive", "SELECT id FROM primitive WHERE id < 10",
                              sequence, timeout=60)
    try:
        wait_until(lambda: sequence in d.journal().queries(d.principal("primitive")), 30,
                   "the statement to be accepted")
        next(c for c in cfg["callers"] if c["name"] == "primitive")["rights"] = {"read": False}
        d.write_config(cfg)
        assert d.reload() == "reloaded"
        got = failure(pending.result)
        diag = got.diagnostic
        assert (got.status, diag["code"]) == ("PERMISSION_DENIED", "access.read_revoked"), diag
        assert diag["outcome"] == "unknown" and "retry_same_sequence_and_sql" in diag["actions"]
        assert "required" not in facts(diag), diag
    finally:
        d.write_config(before)
        assert d.reload() == "reloaded"
