"""Rotation (credential_epoch bump + SIGHUP) and role change (+ restart) against the real daemon.

The changed bundle conflicts at its original first sequence before any successor command is
sent; the old identity (namespace, correlation, result) stays in the journal and inspectable; a
used namespace never takes new SQL; the caller's next sequence works under the new identity.
"""

import grpc

from calls import channel, failure, info_fields, next_sequence, read_result, sql_info
from daemon import Daemon, wait_until

SQL = "SELECT COUNT(*) FROM primitive WHERE id < 777"


def change_caller(d, **fields):
    cfg = d.config()
    next(c for c in cfg["callers"] if c["name"] == "primitive").update(fields)
    d.write_config(cfg)


def conflicts_at(ch, d, sql, s, journal, principal):
    """Asserts the statement at ``s`` conflicts at ``s`` itself and records nothing."""
    commands, nxt = journal.commands(principal), journal.next_sequence(principal)
    code, _, diag = failure(sql_info, ch, d, "primitive", sql, s)
    assert code == grpc.StatusCode.ABORTED and diag["code"] == "query.namespace_conflict", diag
    assert diag["identity"]["first_sequence"] == str(s)
    assert diag["identity"]["native_sequence"] == str(s), "the begin itself conflicts"
    assert journal.commands(principal) == commands and journal.next_sequence(principal) == nxt


def test_rotation_and_role_change_conflict_at_the_original_first_sequence(tmp_path):
    d = Daemon(Daemon.template(tmp_path / "state")).start()
    try:
        journal, principal = d.journal(), d.principal("primitive")
        with channel(d) as ch:
            s0 = next_sequence(ch, d, "primitive")
            info0 = sql_info(ch, d, "primitive", SQL, s0)
            c0, meta0 = info_fields(info0)
            rows0 = read_result(d, "primitive", info0)

            # Rotation: epoch 1 → 2, reloaded by SIGHUP. Until the reload lands the retry replays
            # (same bytes); afterwards the rebuilt bundle carries epoch 2 and must conflict.
            change_caller(d, credential_epoch=2)
            d.hangup()

            def rotated():
                try:
                    sql_info(ch, d, "primitive", SQL, s0)
                    return False
                except grpc.RpcError:
                    return True
            wait_until(rotated, 30, "the SIGHUP reload")
            conflicts_at(ch, d, SQL, s0, journal, principal)
            conflicts_at(ch, d, "SELECT SUM(a) FROM primitive", s0, journal, principal)

            # The old identity stays: the namespace keeps its query and the old ticket still reads.
            assert journal.queries(principal) == {s0: (c0, "SUCCEEDED")}
            assert read_result(d, "primitive", info0) == rows0 == [(777,)]

            # The caller goes on at its next sequence under the new epoch.
            s1 = meta0["next_sequence"]
            assert next_sequence(ch, d, "primitive") == s1
            c1, meta1 = info_fields(sql_info(ch, d, "primitive", SQL, s1))
            assert c1 != c0
        d.assert_clean_stop()

        # Role change (binding revision bumped with it), applied by a restart.
        change_caller(d, role=9, binding_revision=2)
        d.start()
        with channel(d) as ch:
            conflicts_at(ch, d, SQL, s1, journal, principal)
            conflicts_at(ch, d, SQL, s0, journal, principal)
            assert journal.queries(principal) == {s0: (c0, "SUCCEEDED"), s1: (c1, "SUCCEEDED")}
            s2 = meta1["next_sequence"]
            info2 = sql_info(ch, d, "primitive", SQL, s2)
            assert read_result(d, "primitive", info2) == [(777,)]
            assert len(journal.queries(principal)) == 3
    finally:
        d.assert_clean_stop()
