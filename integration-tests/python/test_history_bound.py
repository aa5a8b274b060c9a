"""The journal's history bound against the real daemon (docs/limits.md, "What the journal
keeps"), on the SQLite and the PostgreSQL journal: with `engine.history_max_age_ms` set,
statements whose results were released and whose history passed the bound are forgotten, so the
journal's rows stop growing with the statements answered, and so is an upload a daemon killed
mid-chain left unsubmitted; a retry at a forgotten sequence is refused FAILED_PRECONDITION
`query.history_pruned` with the Diagnostic v1 trailer and the caller's next sequence, and is
never run again; the next sequence still works."""

import contextlib
import copy
import threading
import time

import grpc
import pytest
import transit_flight as tf

import calls as C
from daemon import wait_until
from diagnostic_clients import facts
from tcp_proxy import pending_statement

RESULT_AGE_MS = 1_000
TICKET_TTL_MS = 1_000
CHECK_MS = 100
# The least the configuration takes: the result's age, the sweep interval by which its release may
# follow it, and the longest-lived ticket.
HISTORY_MS = RESULT_AGE_MS + CHECK_MS + TICKET_TTL_MS
SQL = "SELECT COUNT(*) FROM primitive WHERE a < 1000"


@pytest.fixture(params=["sqlite", "postgresql"])
def bounded(request, configured, tmp_path):
    """A daemon with the history bound, on the embedded journal and on a PostgreSQL one."""
    overrides = {"deployment": {"ticket_ttl_ms": TICKET_TTL_MS},
                 "engine": {"retention_max_age_ms": RESULT_AGE_MS, "retention_check_ms": CHECK_MS,
                            "history_max_age_ms": HISTORY_MS}}
    if request.param == "postgresql":
        postgres = request.getfixturevalue("postgres")
        overrides["journal"] = postgres.journal_config(postgres.create_database())
    d = configured(tmp_path, overrides).start()
    try:
        yield d
    finally:
        if d.alive():
            d.assert_clean_stop()


def forgotten(journal, principal, sequence):
    """Waits until the journal holds no query of ``principal`` at ``sequence`` and no command
    record of ``principal`` at all: every statement it sent so far is forgotten."""
    deadline = time.monotonic() + 30
    while sequence in journal.queries(principal) or journal.commands(principal):
        assert time.monotonic() < deadline, "the history outlived engine.history_max_age_ms"
        time.sleep(0.2)


@contextlib.contextmanager
def unbounded(d):
    """``d`` restarted without the bounds for the block, then with them again: what the block
    does takes however long a loaded host needs, and nothing of it is released or forgotten
    meanwhile (the bounds are read at start)."""
    bounded_config = d.config()
    cfg = copy.deepcopy(bounded_config)
    del cfg["deployment"]["ticket_ttl_ms"]
    for key in ("retention_max_age_ms", "retention_check_ms", "history_max_age_ms"):
        del cfg["engine"][key]
    d.assert_clean_stop()
    d.write_config(cfg)
    d.start()
    yield
    d.assert_clean_stop()
    d.write_config(bounded_config)
    d.start()


def test_a_forgotten_statement_is_refused_on_retry_and_its_rows_are_gone(bounded):
    d = bounded
    principal = d.principal("primitive")
    journal = d.journal()
    with unbounded(d), C.channel(d) as ch:
        first = C.next_sequence(ch, d)
        tickets = [C.flight_info(ch, d, SQL, sequence=first)]
        for _ in range(4):
            tickets.append(C.flight_info(ch, d, SQL))
        assert C.drain(ch, d, "primitive", tickets[-1]) >= 1
        following = C.next_sequence(ch, d)
        assert journal.commands(principal) == following - first
    ch = C.channel(d)

    # Released after RESULT_AGE_MS, forgotten after HISTORY_MS: every row of the five goes.
    forgotten(journal, principal, first)
    assert journal.query_rows() == 0
    assert journal.next_sequence(principal) == following

    refused = C.failure(C.flight_info, ch, d, SQL, sequence=first)
    assert refused.code == grpc.StatusCode.FAILED_PRECONDITION, refused
    diag = refused.diagnostic
    assert diag["code"] == "query.history_pruned", diag
    assert diag["outcome"] == "unknown", diag
    assert diag["actions"] == ["use_next_sequence"], diag
    f = facts(diag)
    assert int(f["next_sequence"]["value"]) == following, f
    assert int(f["sequence"]["value"]) == first, f
    assert refused.message.endswith(f"; next sequence {following}"), refused.message
    assert len(refused.message.encode()) <= 128

    # Refused, not decided again: nothing was recorded, the next sequence did not move.
    assert journal.query_rows() == 0 and journal.commands(principal) == 0
    assert C.next_sequence(ch, d) == following
    again = C.flight_info(ch, d, SQL, sequence=following)
    assert C.drain(ch, d, "primitive", again) >= 1
    assert journal.queries(principal).keys() == {following}
    ch.close()
    d.assert_clean_stop()


def test_an_upload_left_by_a_daemon_killed_mid_chain_is_forgotten_and_its_retry_refused(bounded):
    """Killed (SIGKILL) while a statement's submit is held before its record: its upload is
    sealed and never submitted. Restarted, with no retry from the caller, the daemon forgets the
    upload, its parts and its chain's records once they are older than the bound."""
    d = bounded
    principal = d.principal("primitive")
    journal = d.journal()
    d.assert_clean_stop()
    d.faults = "submit-delay-ms:30000"
    d.start()
    ch = C.channel(d)
    first = C.next_sequence(ch, d)
    pending = threading.Thread(target=C.failure, args=(C.flight_info, ch, d, SQL),
                               kwargs={"sequence": first}, daemon=True)
    pending.start()
    wait_until(lambda: any("before its record (test fault)" in line for line in list(d.output)),
               30, "the submit to be held")
    d.kill9()
    pending.join(30)
    ch.close()
    assert journal.uploads(principal) == 1 and journal.query_rows() == 0
    held = journal.commands(principal)
    assert held >= 3, held  # begin, its parts, the seal: everything but the submit
    following = journal.next_sequence(principal)

    d.faults = None
    d.start()
    deadline = time.monotonic() + 30
    while journal.uploads(principal) or journal.commands(principal):
        assert time.monotonic() < deadline, "the unsubmitted upload outlived the bound"
        time.sleep(0.2)
    with C.channel(d) as again:
        refused = C.failure(C.flight_info, again, d, SQL, sequence=first)
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION, refused
        assert refused.diagnostic["code"] == "query.history_pruned", refused.diagnostic
        assert journal.next_sequence(principal) == following, "nothing was decided again"
        assert C.drain(again, d, "primitive", C.flight_info(again, d, SQL, sequence=following)) >= 1
    d.assert_clean_stop()


def test_the_python_package_releases_a_credential_whose_pending_statement_was_forgotten(bounded):
    """A statement whose answers were all lost leaves the credential blocked (unknown outcome);
    once the gateway has forgotten it, resume() says so and the credential goes on."""
    d = bounded
    principal = d.principal("primitive")
    journal = d.journal()
    # Recorded: its query is there, or (the bound is short) already forgotten past the sequence.
    proxy, conn, lost = pending_statement(
        d.port, d.state_dir / "credentials" / "primitive.token",
        "SELECT COUNT(*) FROM primitive WHERE id < 11",
        lambda s: s in journal.queries(principal) or journal.next_sequence(principal) > s)
    try:
        forgotten(journal, principal, lost.sequence)
        with pytest.raises(tf.FailedPreconditionError) as pruned:
            conn.resume()
        assert pruned.value.code == "query.history_pruned", pruned.value
        assert pruned.value.outcome == "unknown"
        # The credential goes on, at a sequence after the forgotten statement's.
        assert conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 12").to_pylist() == [
            {"COUNT(*)": 12}]
        assert conn.next_sequence() > lost.sequence
        conn.close()
    finally:
        proxy.close()
    d.assert_clean_stop()
