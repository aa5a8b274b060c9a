"""Exactly-once admission under faults, against the real daemon process (issue 5).

Faults come from the daemon's test-only TRANSIT_TEST_FAULTS hook (unknown outcomes, held-back
execution); every status is checked exactly through grpcio; the engine journal (read-only) is
the evidence that each namespace was admitted and executed once.
"""

import threading

import grpc
import pytest

import flightsql
from calls import (GET_FLIGHT_INFO, channel, failure, info_fields, metadata, next_sequence, read_result,
                   seen, sql_info, sql_info_future)
from daemon import Daemon, wait_until

# Long enough that a client deadline of DEADLINE_S surely passes while the query is held back.
DELAY_MS = 8000
DEADLINE_S = 1.5
ATTEMPTS = 5
# A client-side wait far past any server bound in these tests: only a hang reaches it.
HANG_S = 120


@pytest.fixture
def channel_to():
    channels = []

    def make(daemon):
        ch = channel(daemon)
        channels.append(ch)
        return ch

    yield make
    for ch in channels:
        ch.close()


def test_unknown_outcome_names_both_sequences_and_the_same_retry_completes(tmp_path, channel_to):
    d = Daemon(Daemon.template(tmp_path / "state"), faults="before-record:part:once,after-record:submit:once").start()
    try:
        ch = channel_to(d)
        journal, principal = d.journal(), d.principal("primitive")
        sql = "SELECT COUNT(*), SUM(a) FROM primitive WHERE id < 5000"
        s = next_sequence(ch, d, "primitive")

        # The part at S+1 fails before its record: only the begin is journaled.
        code, msg, diag = failure(sql_info, ch, d, "primitive", sql, s)
        assert code == grpc.StatusCode.UNAVAILABLE and diag["code"] == "admission.unknown_outcome"
        assert diag["identity"] == {"namespace": str(s), "first_sequence": str(s),
                                    "native_sequence": str(s + 1)}
        assert f"first sequence {s}" in msg and f"native sequence {s + 1}" in msg
        assert next_sequence(ch, d, "primitive") == s + 1 == journal.next_sequence(principal)

        # Same S and SQL: the begin replays, part/seal/submit are applied; the submit's outcome is
        # then lost after its record (the query is accepted and runs regardless).
        code, msg, diag = failure(sql_info, ch, d, "primitive", sql, s)
        assert code == grpc.StatusCode.UNAVAILABLE and diag["code"] == "admission.unknown_outcome"
        assert diag["identity"]["first_sequence"] == str(s)
        assert diag["identity"]["native_sequence"] == str(s + 3)
        assert journal.next_sequence(principal) == s + 4
        [(correlation, _)] = journal.queries(principal).values()

        # The gateway picked no sequence: the retry at S completes with the recorded correlation.
        got, meta = info_fields(sql_info(ch, d, "primitive", sql, s))
        assert got == correlation and meta == {"version": 1, "next_sequence": s + 4}
        assert journal.commands(principal) == 4, "each command of the chain recorded once"
        assert list(journal.queries(principal)) == [s]
    finally:
        d.assert_clean_stop()


def test_deadline_ends_the_call_not_the_accepted_query(tmp_path, channel_to):
    d = Daemon(Daemon.template(tmp_path / "state"), faults=f"execution-delay-ms:{DELAY_MS}").start()
    try:
        ch = channel_to(d)
        journal, principal = d.journal(), d.principal("primitive")
        sql = "SELECT COUNT(*) FROM primitive WHERE a > 10"
        s = next_sequence(ch, d, "primitive")
        # A cold daemon may spend the first deadline before the submit: the client then retries
        # with the same S and SQL, as it must, until a deadline passes with the query accepted.
        for _ in range(ATTEMPTS):
            code, _, _ = failure(sql_info, ch, d, "primitive", sql, s, timeout=DEADLINE_S)
            assert code == grpc.StatusCode.DEADLINE_EXCEEDED
            if journal.queries(principal):
                break
        [(correlation, state)] = journal.queries(principal).values()
        assert state == "ACCEPTED", "the deadline passed while the accepted query was held back"

        # Nobody retries: the accepted query still completes on its own.
        assert journal.wait_state(correlation, {"SUCCEEDED", "FAILED"}) == "SUCCEEDED"
        got, meta = info_fields(sql_info(ch, d, "primitive", sql, s))
        assert got == correlation and meta["next_sequence"] == journal.next_sequence(principal)
        assert len(journal.queries(principal)) == 1
    finally:
        d.assert_clean_stop()


def test_server_side_deadline_names_the_running_query(tmp_path, channel_to):
    state = Daemon.template(tmp_path / "state", limits={"control_deadline_default_ms": 1000})
    d = Daemon(state, faults=f"execution-delay-ms:{DELAY_MS}").start()
    try:
        ch = channel_to(d)
        journal, principal = d.journal(), d.principal("primitive")
        sql = "SELECT SUM(c) FROM primitive"
        s = next_sequence(ch, d, "primitive")
        # No client deadline: the gateway's own bound ends the wait, with the query's identity.
        # The client stops waiting only after HANG_S, far past that bound, as a hang guard; a
        # deadline sent to the server would replace the default under test.
        rpc = ch.unary_unary(GET_FLIGHT_INFO)
        for _ in range(ATTEMPTS):
            call = rpc.future(flightsql.flight_descriptor(flightsql.statement_query(sql)),
                              metadata=metadata(d, "primitive", s))
            try:
                error = call.exception(timeout=HANG_S)
            finally:
                call.cancel()  # nothing once it ended; a hung call is not left running
            assert isinstance(error, grpc.RpcError), error
            code, _, diag = seen(error)
            assert code == grpc.StatusCode.DEADLINE_EXCEEDED and diag["code"] == "admission.deadline"
            if "correlation" in diag["identity"]:
                break
            # The bound passed during the upload: the diagnostic names what to send next.
            assert diag["identity"]["first_sequence"] == str(s)
        [(correlation, _)] = journal.queries(principal).values()
        assert diag["identity"] == {"namespace": str(s), "correlation": str(correlation),
                                    "first_sequence": str(s)}
        assert journal.wait_state(correlation, {"SUCCEEDED", "FAILED"}) == "SUCCEEDED"
        assert info_fields(sql_info(ch, d, "primitive", sql, s, timeout=60))[0] == correlation
    finally:
        d.assert_clean_stop()


def test_disconnect_does_not_cancel_accepted_work(tmp_path):
    d = Daemon(Daemon.template(tmp_path / "state"), faults=f"execution-delay-ms:{DELAY_MS}").start()
    try:
        journal, principal = d.journal(), d.principal("primitive")
        sql = "SELECT COUNT(*) FROM primitive WHERE b IS NULL"
        with channel(d) as ch:
            s = next_sequence(ch, d, "primitive")
            pending = sql_info_future(ch, d, "primitive", sql, s)
            wait_until(lambda: journal.queries(principal), 30, "the query to be accepted")
            [(correlation, state)] = journal.queries(principal).values()
            assert state == "ACCEPTED"
            pending.cancel()
        # The channel (and its connection) is gone; the accepted query completes anyway.
        assert journal.wait_state(correlation, {"SUCCEEDED", "FAILED"}) == "SUCCEEDED"
        with channel(d) as ch:
            got, _ = info_fields(sql_info(ch, d, "primitive", sql, s))
            assert got == correlation
        assert len(journal.queries(principal)) == 1
    finally:
        d.assert_clean_stop()


def test_busy_is_refused_before_any_command_and_differs_from_a_native_rejection(tmp_path, channel_to):
    state = Daemon.template(tmp_path / "state", limits={"admission_per_gateway": 2, "admission_per_caller": 1})
    d = Daemon(state, faults=f"execution-delay-ms:{DELAY_MS}").start()
    try:
        ch = channel_to(d)
        journal = d.journal()
        held = []

        def hold(caller, sql):
            s = next_sequence(ch, d, caller)
            # A connection of its own: the daemon serves one call at a time per connection.
            held.append(sql_info_future(channel_to(d), d, caller, sql, s))
            principal = d.principal(caller)
            wait_until(lambda: journal.queries(principal), 30, f"{caller}'s query to be accepted")

        # primitive holds its one caller permit while its query is held back.
        hold("primitive", "SELECT COUNT(*) FROM primitive")
        before = journal.next_sequence(d.principal("primitive"))
        code, _, diag = failure(sql_info, ch, d, "primitive", "SELECT SUM(a) FROM primitive", before)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "admission.busy"
        assert {"name": "bound", "kind": "text", "value": "caller"} in diag["facts"]
        # The caller's own share (admission_per_caller = 1), and the one more it asked for.
        assert {"name": "limit", "kind": "number", "value": "1"} in diag["facts"]
        assert {"name": "required", "kind": "number", "value": "2"} in diag["facts"]
        assert journal.next_sequence(d.principal("primitive")) == before

        # primitive and mixed hold both gateway permits: cells is refused by the gateway limit.
        hold("mixed", "SELECT COUNT(*) FROM mixed")
        cells_before = journal.commands(d.principal("cells"))
        code, _, diag = failure(sql_info, ch, d, "cells", "SELECT COUNT(*) FROM cells",
                                journal.next_sequence(d.principal("cells")))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and diag["code"] == "admission.busy"
        assert {"name": "bound", "kind": "text", "value": "gateway"} in diag["facts"]
        assert {"name": "limit", "kind": "number", "value": "2"} in diag["facts"]
        assert journal.commands(d.principal("cells")) == cells_before == 0
        for f in held:
            f.result(timeout=60)
    finally:
        d.assert_clean_stop()

    # For contrast, a native rejection: the engine refuses other SQL at cells' used sequence
    # (ABORTED query.namespace_conflict at admission), after the gateway sent its begin.
    d.faults = None
    d.start()
    try:
        ch = channel_to(d)
        s = next_sequence(ch, d, "cells")
        info_fields(sql_info(ch, d, "cells", "SELECT COUNT(*) FROM cells", s))
        recorded = d.journal().commands(d.principal("cells"))
        assert recorded == 4
        code, _, diag = failure(sql_info, ch, d, "cells", "SELECT COUNT(ok) FROM cells", s)
        assert code == grpc.StatusCode.ABORTED and diag["code"] == "query.namespace_conflict"
        assert diag["stage"] == "admission"
    finally:
        d.assert_clean_stop()

    # And a policy refusal: cells without its read right is refused by the gateway's current
    # policy check before anything is compiled or sent (PERMISSION_DENIED access.read_revoked,
    # no identity), so the journal is unchanged.
    cfg = d.config()
    next(c for c in cfg["callers"] if c["name"] == "cells")["rights"] = {"read": False}
    d.write_config(cfg)
    d.start()
    try:
        ch = channel_to(d)
        s = next_sequence(ch, d, "cells")
        code, _, diag = failure(sql_info, ch, d, "cells", "SELECT COUNT(*) FROM cells", s)
        assert code == grpc.StatusCode.PERMISSION_DENIED and diag["code"] == "access.read_revoked"
        assert diag["identity"] == {} and diag["facts"] == []
        assert d.journal().commands(d.principal("cells")) == recorded
        assert d.journal().next_sequence(d.principal("cells")) == s
    finally:
        d.assert_clean_stop()


def test_overlapping_ranges_of_one_principal_admit_exactly_one(tmp_path, channel_to):
    d = Daemon(Daemon.template(tmp_path / "state")).start()
    try:
        journal, principal = d.journal(), d.principal("primitive")
        clients = [channel_to(d), channel_to(d)]
        outcomes = {"admitted": 0, grpc.StatusCode.ABORTED: 0, grpc.StatusCode.FAILED_PRECONDITION: 0}
        for rnd in range(12):
            s = next_sequence(clients[0], d, "primitive")
            offset = rnd % 4  # the second range starts 0..3 commands into the first (4 commands)
            sqls = [f"SELECT COUNT(*) FROM primitive WHERE id < {1000 + rnd}",
                    f"SELECT COUNT(*) FROM primitive WHERE id < {2000 + rnd}"]
            starts = [s, s + offset]
            results, infos = [None, None], [None, None]
            barrier = threading.Barrier(2)

            def run(i):
                barrier.wait(10)
                try:
                    infos[i] = sql_info(clients[i], d, "primitive", sqls[i], starts[i])
                    results[i] = info_fields(infos[i])
                except grpc.RpcError as e:
                    results[i] = tuple(seen(e))

            threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(90)
            won = [i for i in range(2) if isinstance(results[i][0], int)]
            assert len(won) == 1, f"round {rnd}: {results}"
            w, lost = won[0], results[1 - won[0]]
            assert lost[0] in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION), lost
            outcomes["admitted"] += 1
            outcomes[lost[0]] += 1
            correlation, meta = results[w]
            # The winner's namespace ran the winner's SQL, once.
            ns = journal.queries(principal)
            assert ns[starts[w]][0] == correlation and ns[starts[w]][1] == "SUCCEEDED"
            assert meta["next_sequence"] == journal.next_sequence(principal)
            assert read_result(d, "primitive", infos[w]) == [((1000 if w == 0 else 2000) + rnd,)]
            replay = sql_info(clients[w], d, "primitive", sqls[w], starts[w])
            assert info_fields(replay)[0] == correlation
        assert len(journal.queries(principal)) == 12 == outcomes["admitted"]
    finally:
        d.assert_clean_stop()
