"""Tickets and disclosure boundaries against the real daemon process: revocation mid-stream,
SIGHUP refusals, replicas sharing the ticket key, key rotation, retained evidence, metadata
tickets after a reload, ticket expiry, and current authorization before any compile diagnostic,
schema, ticket or count (every path, PyArrow/grpcio and ADBC). Each test leaves gateway.json as
it found it."""

import contextlib
import secrets
import time

import adbc_driver_manager
import grpc
import pyarrow.flight as fl
import pytest

import flightsql
from calls import (SMALL_WINDOW, TRAILER, Caller, action, binding_revision, channel, do_get_exact,
                   expiry_ms, failure, info, next_sequence, options, schema, sql_info, ticket_of)
from clients import adbc_connect
from daemon import Daemon
from diagnostic_clients import decode_diagnostic

BIG = "SELECT id, a, b, c, d FROM primitive"
BIG_ROWS = 1_000_000


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("disclosure-a")).start()
    yield d
    d.assert_clean_stop()


@contextlib.contextmanager
def restored(daemon):
    """Puts gateway.json back (and reloads it) whatever the test did to it."""
    original = daemon.config_path.read_text()
    try:
        yield
    finally:
        if daemon.config_path.read_text() != original:
            daemon.config_path.write_text(original)
            assert daemon.reload() == "reloaded"


def big_ticket(daemon):
    info = Caller(daemon, "primitive").info(BIG)
    assert info.total_records == BIG_ROWS
    return ticket_of(info)


def slow_reader(daemon, ticket):
    """A PyArrow reader with a small HTTP/2 window (no BDP probing), like a slow client."""
    client = fl.FlightClient(daemon.uri, generic_options=SMALL_WINDOW)
    return client.do_get(fl.Ticket(ticket), options(daemon, "primitive"))


# 1. Revocation after a returned batch ---------------------------------------------------------

def test_revoking_read_mid_stream_cuts_the_stream_with_an_error(daemon):
    ticket = big_ticket(daemon)
    with restored(daemon):
        reader = slow_reader(daemon, ticket)
        first = reader.read_chunk().data
        assert first.num_rows > 0
        daemon.edit_caller("primitive", read=False)
        assert daemon.reload() == "reloaded"
        rows, batches = first.num_rows, 1
        with pytest.raises(fl.FlightUnauthorizedError, match="access.read_revoked"):
            while True:
                rows += reader.read_chunk().data.num_rows  # StopIteration would fail the test
                batches += 1
        assert rows < BIG_ROWS, "the stream must never deliver the whole result after revocation"
        # Only batches read before the revocation can still arrive: the 2 the gate lets wait on
        # the stream's writer and the one gRPC is writing; the rest of the 16 are never read.
        assert batches - 1 <= 3, f"{batches - 1} batches arrived after the revocation"

        again = do_get_exact(daemon, "primitive", ticket)
        assert again.code == grpc.StatusCode.PERMISSION_DENIED
        assert again.diag_code == "access.read_revoked"

        daemon.edit_caller("primitive", read=True)
        assert daemon.reload() == "reloaded"
        table = slow_reader(daemon, ticket).read_all()
        assert table.num_rows == BIG_ROWS


def test_revoking_read_before_any_batch_refuses_the_stream(daemon):
    ticket = big_ticket(daemon)
    with restored(daemon):
        daemon.edit_caller("primitive", read=False)
        assert daemon.reload() == "reloaded"
        out = do_get_exact(daemon, "primitive", ticket)
        assert out.code == grpc.StatusCode.PERMISSION_DENIED and out.messages == 0


def test_replacing_a_credential_ends_the_streams_it_authenticated(daemon):
    """A leaked credential rotated out (a new token in its file, then SIGHUP) ends the stream it
    opened at the next bounded read, not only its next call; the caller's tickets stay valid
    under the new credential."""
    ticket = big_ticket(daemon)
    token_file = daemon.state_dir / "credentials" / "primitive.token"
    leaked = token_file.read_text()
    try:
        reader = slow_reader(daemon, ticket)
        assert reader.read_chunk().data.num_rows > 0
        token_file.write_text("tfg_" + secrets.token_urlsafe(32) + "\n")  # stays 0600
        assert daemon.reload() == "reloaded"
        with pytest.raises(fl.FlightUnauthorizedError, match="access.binding_changed"):
            while True:
                reader.read_chunk()  # StopIteration would fail the test
        old = fl.FlightCallOptions(headers=[(b"authorization",
                                             f"Bearer {leaked.strip()}".encode())], timeout=60)
        with pytest.raises(fl.FlightUnauthenticatedError):
            fl.FlightClient(daemon.uri).do_get(fl.Ticket(ticket), old).read_all()
        assert slow_reader(daemon, ticket).read_all().num_rows == BIG_ROWS
    finally:
        token_file.write_text(leaked)
        assert daemon.reload() == "reloaded"


def test_a_statement_ticket_needs_inspect_before_it_is_verified(daemon):
    """Redeeming a statement ticket reads its manifest, which needs the inspect right: without
    it the DoGet is refused before the ticket is verified (a forged one gets the same answer);
    a catalog ticket needs read alone."""
    with channel(daemon) as ch:
        stmt = ticket_of(sql_info(ch, daemon, "primitive", GOOD,
                                  next_sequence(ch, daemon, "primitive")))
        catalogs = ticket_of(info(ch, daemon, "primitive", flightsql.get_catalogs()))
    forged = stmt[:-1] + bytes([stmt[-1] ^ 1])
    with restored(daemon):
        cfg = daemon.config()
        caller = next(c for c in cfg["callers"] if c["name"] == "primitive")
        caller.setdefault("rights", {})["inspect"] = False
        daemon.write_config(cfg)
        assert daemon.reload() == "reloaded"
        for t in (stmt, forged):
            out = do_get_exact(daemon, "primitive", t)
            assert (out.code, out.diag_code) == (grpc.StatusCode.PERMISSION_DENIED,
                                                 "access.inspect_revoked"), out
        assert do_get_exact(daemon, "primitive", catalogs).code == grpc.StatusCode.OK
    assert do_get_exact(daemon, "primitive", stmt).code == grpc.StatusCode.OK


# 2. SIGHUP with a bad file --------------------------------------------------------------------

def catalogs_work(daemon, caller):
    return Caller(daemon, caller).metadata_info(flightsql.get_catalogs()).total_records >= 1


def test_reload_with_invalid_json_keeps_the_running_configuration(daemon):
    with restored(daemon):
        daemon.config_path.write_text(daemon.config_path.read_text()[:-20])
        outcome = daemon.reload()
        assert outcome != "reloaded" and "previous configuration stays" in outcome
        assert catalogs_work(daemon, "primitive")


def test_reload_with_a_duplicate_credential_keeps_the_old_credentials(daemon):
    mixed_file = daemon.state_dir / "credentials" / "mixed.token"
    old_mixed = daemon.token("mixed")
    with restored(daemon):
        try:
            mixed_file.write_text(daemon.token("primitive") + "\n")
            outcome = daemon.reload()
            assert outcome != "reloaded" and "previous configuration stays" in outcome
            # The running registry still maps the old mixed credential and primitive's.
            client = fl.FlightClient(daemon.uri)
            old = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {old_mixed}".encode())],
                                       timeout=60)
            info = client.get_flight_info(fl.FlightDescriptor.for_command(flightsql.get_catalogs()), old)
            assert client.do_get(info.endpoints[0].ticket, old).read_all().num_rows >= 1
            assert catalogs_work(daemon, "primitive")
        finally:
            mixed_file.write_text(old_mixed + "\n")


def test_reload_that_changes_the_ticket_definition_is_refused(daemon):
    with restored(daemon):
        info = Caller(daemon, "primitive").metadata_info(flightsql.get_catalogs())
        cfg = daemon.config()
        cfg["deployment"]["service"] = cfg["deployment"]["service"] + 1
        daemon.write_config(cfg)
        assert "restart is required" in daemon.reload()
        out = do_get_exact(daemon, "primitive", ticket_of(info))
        assert out.code == grpc.StatusCode.OK, "tickets issued before keep verifying"


def test_reload_that_changes_an_ops_setting_fixed_at_start_is_refused(daemon):
    """The access log and the drain notice are fixed at start; until 2026-12-06 a change to
    them was reported reloaded and silently not applied."""
    with restored(daemon):
        cfg = daemon.config()
        ops = cfg.setdefault("ops", {})
        ops["drain_notice_ms"] = ops.get("drain_notice_ms", 0) + 1000
        ops.setdefault("log", {})["access"] = not ops.get("log", {}).get("access", True)
        daemon.write_config(cfg)
        outcome = daemon.reload()
        assert "previous configuration stays" in outcome, outcome
        assert "ops.log.access, ops.drain_notice_ms changed" in outcome, outcome
        assert catalogs_work(daemon, "primitive")
    # The same file with only the log level changed reloads.
    with restored(daemon):
        cfg = daemon.config()
        cfg.setdefault("ops", {}).setdefault("log", {})["level"] = "info"
        daemon.write_config(cfg)
        assert daemon.reload() == "reloaded"


# 6. Metadata tickets after a reload ------------------------------------------------------------

def test_metadata_ticket_refused_after_remapping_with_a_revision_bump(daemon):
    info = Caller(daemon, "primitive").metadata_info(flightsql.get_tables(include_schema=True))
    ticket = ticket_of(info)
    assert binding_revision(ticket) == 1
    with restored(daemon):
        daemon.edit_caller("primitive", publication="mixed", binding_revision=2)
        assert daemon.reload() == "reloaded"
        out = do_get_exact(daemon, "primitive", ticket)
        # Scope (binding revision, then source) is checked before anything is recomputed.
        assert out.code == grpc.StatusCode.PERMISSION_DENIED and out.diag_code == "ticket.scope"
        fresh = Caller(daemon, "primitive").metadata_info(flightsql.get_tables(include_schema=False))
        assert binding_revision(ticket_of(fresh)) == 2
    assert do_get_exact(daemon, "primitive", ticket).code == grpc.StatusCode.OK


def test_metadata_and_statement_tickets_refused_after_remapping_without_a_bump(daemon):
    meta = ticket_of(Caller(daemon, "primitive").metadata_info(flightsql.get_tables()))
    stmt = ticket_of(Caller(daemon, "primitive").info("SELECT COUNT(*) FROM primitive"))
    with restored(daemon):
        daemon.edit_caller("primitive", publication="mixed")
        assert daemon.reload() == "reloaded"
        for ticket in (meta, stmt):
            out = do_get_exact(daemon, "primitive", ticket)
            # The other Table has another source: the scope check refuses before the digest.
            assert out.code == grpc.StatusCode.PERMISSION_DENIED and out.diag_code == "ticket.scope"


# 7. Ticket expiry -------------------------------------------------------------------------------

def set_ttl(daemon, ttl_ms):
    cfg = daemon.config()
    cfg["deployment"]["ticket_ttl_ms"] = ttl_ms
    daemon.write_config(cfg)
    assert daemon.reload() == "reloaded"


def sleep_past(expiry):
    """Waits (bounded by the ticket's own expiry) until the wall clock passed it."""
    while time.time() * 1000 < expiry + 50:
        time.sleep(max(0.01, (expiry + 50 - time.time() * 1000) / 1000))


def test_expired_ticket_is_refused(daemon):
    with restored(daemon):
        set_ttl(daemon, 1500)
        ticket = ticket_of(Caller(daemon, "primitive").metadata_info(flightsql.get_catalogs()))
        sleep_past(expiry_ms(ticket))
        out = do_get_exact(daemon, "primitive", ticket)
        assert out.code == grpc.StatusCode.FAILED_PRECONDITION
        assert out.diag_code == "ticket.expired" and out.messages == 0


def test_ticket_expiring_mid_stream_ends_the_stream_with_an_error(daemon):
    # Execute with the normal lifetime; only the reissued ticket is short-lived, so the short
    # window does not have to cover query execution.
    seq = Caller(daemon, "primitive").next_sequence()
    Caller(daemon, "primitive").info(BIG, seq)
    after_execution = Caller(daemon, "primitive").next_sequence()
    with restored(daemon):
        for ttl in (1500, 4000, 15000):  # a slower machine gets a longer window, same assertions
            set_ttl(daemon, ttl)
            ticket = ticket_of(Caller(daemon, "primitive").info(BIG, seq))
            expiry = expiry_ms(ticket)

            def pause(i, expiry=expiry):
                if i == 2:  # schema and the first batch are in: let the ticket expire
                    sleep_past(expiry)

            out = do_get_exact(daemon, "primitive", ticket, before_each=pause)
            if out.messages >= 2:
                break
        assert out.messages >= 2, "no batch arrived before the ticket expired, even at 15 s"
        assert out.code == grpc.StatusCode.FAILED_PRECONDITION and out.diag_code == "ticket.expired"
        assert out.messages < 1 + 16, "the stream must not complete after expiry"
        assert Caller(daemon, "primitive").next_sequence() == after_execution, "reissue executes nothing"


# 8. Current authorization precedes disclosure ---------------------------------------------------

# SQL that does not compile (a syntax error, an unknown column): with the right, each is
# INVALID_ARGUMENT naming what failed; without it, the caller must not learn even that.
BROKEN = ("SELEC id FROM primitive", "SELECT hidden_column FROM primitive")
GOOD = "SELECT id, a FROM primitive WHERE id < 3"
# Every catalog command, and the metadata commands outside the profile.
CATALOG = (flightsql.get_catalogs(), flightsql.get_db_schemas(), flightsql.get_tables(),
           flightsql.get_tables(include_schema=True), flightsql.get_table_types(),
           flightsql.get_sql_info([0, 1]))
UNSUPPORTED_METADATA = (flightsql.any_of("CommandGetXdbcTypeInfo", b""),
                        flightsql.any_of("CommandGetPrimaryKeys", b""),
                        flightsql.any_of("CommandGetExportedKeys", b""))


def refused(seen, code):
    """``seen`` is PERMISSION_DENIED ``code`` with the access-class Diagnostic v1: no identity,
    no facts, and nothing of any SQL or column name the caller sent."""
    assert seen.code == grpc.StatusCode.PERMISSION_DENIED, (seen.code, seen.message)
    d = decode_diagnostic(seen.raw_trailer)
    assert (d["code"], d["status"]) == (code, "PERMISSION_DENIED")
    assert d["identity"] == {} and d["facts"] == []
    for text in BROKEN + (GOOD, "hidden_column", "SELEC"):
        assert text not in seen.message and text not in d["message"]
    assert seen.message.startswith(code + ":")
    return d


def compile_failure(ch, daemon, caller, sql):
    return failure(schema, ch, daemon, caller, flightsql.statement_query(sql))


def test_getschema_without_read_is_permission_denied_before_compiling(daemon):
    with channel(daemon) as ch:
        for sql in BROKEN:  # with the right: compile diagnostics
            assert compile_failure(ch, daemon, "primitive", sql).code == grpc.StatusCode.INVALID_ARGUMENT
        assert schema(ch, daemon, "primitive", flightsql.statement_query(GOOD))
        with restored(daemon):
            daemon.edit_caller("primitive", read=False)
            assert daemon.reload() == "reloaded"
            for sql in BROKEN + (GOOD,):  # no diagnostic, no schema
                refused(compile_failure(ch, daemon, "primitive", sql), "access.read_revoked")
            # A prepared statement's schema and its creation: refused before UNIMPLEMENTED.
            prepared = flightsql.any_of("CommandPreparedStatementQuery", b"")
            refused(failure(schema, ch, daemon, "primitive", prepared), "access.read_revoked")
            refused(failure(action, ch, daemon, "primitive", "CreatePreparedStatement",
                            flightsql.create_prepared_statement(BROKEN[0])), "access.read_revoked")
        assert failure(schema, ch, daemon, "primitive", prepared).code == grpc.StatusCode.UNIMPLEMENTED
        assert failure(action, ch, daemon, "primitive", "CreatePreparedStatement",
                       flightsql.create_prepared_statement(BROKEN[0])).code == grpc.StatusCode.UNIMPLEMENTED


def test_getflightinfo_checks_every_admission_right_before_compiling_or_sending(daemon):
    principal = daemon.principal("primitive")
    with channel(daemon) as ch:
        for right, code in (("send", "access.send_revoked"), ("inspect", "access.inspect_revoked"),
                            ("read", "access.read_revoked")):
            with restored(daemon):
                cfg = daemon.config()
                caller = next(c for c in cfg["callers"] if c["name"] == "primitive")
                caller.setdefault("rights", {})[right] = False
                daemon.write_config(cfg)
                assert daemon.reload() == "reloaded"
                seq = next_sequence(ch, daemon, "primitive")
                commands = daemon.journal().commands(principal)
                for sql in BROKEN + (GOOD,):
                    refused(failure(sql_info, ch, daemon, "primitive", sql, seq), code)
                # Without a sequence header too: policy comes before the header's own check.
                refused(failure(info, ch, daemon, "primitive", flightsql.statement_query(GOOD)), code)
                assert daemon.journal().commands(principal) == commands, "nothing was sent"
                assert next_sequence(ch, daemon, "primitive") == seq
                if right != "read":  # GetSchema compiles only: the read right is all it needs
                    assert schema(ch, daemon, "primitive", flightsql.statement_query(GOOD))


def test_metadata_without_read_gets_no_ticket_and_no_count(daemon):
    with channel(daemon) as ch:
        issued = [ticket_of(info(ch, daemon, "primitive", c)) for c in CATALOG]
        stmt = ticket_of(sql_info(ch, daemon, "primitive", GOOD, next_sequence(ch, daemon, "primitive")))
        with restored(daemon):
            daemon.edit_caller("primitive", read=False)
            assert daemon.reload() == "reloaded"
            for command in CATALOG + UNSUPPORTED_METADATA:
                refused(failure(info, ch, daemon, "primitive", command), "access.read_revoked")
                refused(failure(schema, ch, daemon, "primitive", command), "access.read_revoked")
            # Tickets issued before the revocation disclose nothing after it.
            for ticket in issued + [stmt]:
                out = do_get_exact(daemon, "primitive", ticket)
                assert out.code == grpc.StatusCode.PERMISSION_DENIED and out.messages == 0
                assert out.diag_code == "access.read_revoked"
            # Another caller is unaffected.
            assert Caller(daemon, "mixed").metadata(flightsql.get_tables()).num_rows == 1
        for ticket in issued + [stmt]:
            assert do_get_exact(daemon, "primitive", ticket).code == grpc.StatusCode.OK


def test_a_table_the_engine_does_not_serve_is_neither_listed_nor_counted(daemon):
    # The engine's own source/requester check (the one a submit's admission makes) refuses
    # every Table: the gateway's binding still names one, but it must not be disclosed.
    hidden = Daemon.variant(daemon, faults="engine-publications:none").start()
    try:
        listed = Caller(daemon, "primitive")
        seen = Caller(hidden, "primitive")
        for command in (flightsql.get_catalogs(), flightsql.get_db_schemas(),
                        flightsql.get_tables(), flightsql.get_tables(include_schema=True)):
            assert listed.metadata_info(command).total_records == 1
            info_hidden = seen.metadata_info(command)
            assert info_hidden.total_records == 0, "not counted"
            assert seen.read(info_hidden).num_rows == 0, "not listed"
        # Table types and SqlInfo describe the gateway, not a Table.
        assert seen.metadata(flightsql.get_table_types()).num_rows == 1
        # A statement over it: refused by that check before compiling, broken SQL or not.
        with channel(hidden) as ch:
            for sql in BROKEN + (GOOD,):
                got = compile_failure(ch, hidden, "primitive", sql)
                assert got.code == grpc.StatusCode.FAILED_PRECONDITION
                assert decode_diagnostic(got.raw_trailer)["code"] == "query.source_unavailable"
            assert hidden.journal().commands(hidden.principal("primitive")) == 0
    finally:
        hidden.close()


def adbc_failure(conn, call):
    """The DBAPI error of ``call(cursor)`` and its checked Diagnostic v1 (ADBC's named detail)."""
    cur = conn.cursor()
    try:
        with pytest.raises(adbc_driver_manager.Error) as e:
            call(cur)
        values = [bytes(v) for k, v in e.value.details
                  if (k.decode() if isinstance(k, bytes) else k) == TRAILER]
        assert len(values) == 1, e.value.details
        return e.value, decode_diagnostic(values[0])
    finally:
        cur.close()


def test_adbc_sees_permission_denied_not_a_compile_error(daemon):
    with adbc_connect(daemon.uri, daemon.token("primitive")) as conn:
        # With the right, GetSchema (no sequence needed) tells what does not compile.
        err, d = adbc_failure(conn, lambda cur: cur.adbc_execute_schema(BROKEN[1]))
        assert (d["status"], d["code"]) == ("INVALID_ARGUMENT", "query.unknown_column")
        assert err.status_code == adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT
        with restored(daemon):
            daemon.edit_caller("primitive", read=False)
            assert daemon.reload() == "reloaded"
            for sql in BROKEN + (GOOD,):
                for call in (lambda cur: cur.execute(sql), lambda cur: cur.adbc_execute_schema(sql)):
                    err, d = adbc_failure(conn, call)
                    assert (d["status"], d["code"]) == ("PERMISSION_DENIED", "access.read_revoked")
                    assert d["identity"] == {} and d["facts"] == []
                    assert err.status_code == adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED
                    assert "hidden_column" not in str(err) and "SELEC " not in str(err)
            with pytest.raises(adbc_driver_manager.Error) as e:
                conn.adbc_get_objects(depth="tables").read_all()
            assert e.value.status_code == adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED
        objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
        assert [c["catalog_name"] for c in objects] == ["transit"]


# 5. Retained evidence ---------------------------------------------------------------------------

def two_segment_result(daemon, column, rows):
    """A result of two segments (65536 + the rest) whose content no earlier result shared;
    returns (ticket, [seg0, seg1])."""
    before = daemon.segment_files()
    info = Caller(daemon, "primitive").info(f"SELECT id, {column} FROM primitive WHERE id < {rows}")
    assert info.total_records == rows
    new = [p for p in daemon.segment_files() if p not in before]
    assert len(new) == 2, "the result's two segment files are new content"
    return ticket_of(info), sorted(new, key=lambda p: p.stat().st_size, reverse=True)


@contextlib.contextmanager
def flipped_byte(path, offset):
    data = path.read_bytes()
    path.write_bytes(data[:offset] + bytes([data[offset] ^ 0x5A]) + data[offset + 1:])
    try:
        yield
    finally:
        path.write_bytes(data)


def test_corrupted_segment_ends_the_stream_data_loss(daemon):
    ticket, (seg0, seg1) = two_segment_result(daemon, "a", 100_000)
    with flipped_byte(seg0, seg0.stat().st_size // 2):
        out = do_get_exact(daemon, "primitive", ticket)
        assert out.code == grpc.StatusCode.DATA_LOSS and out.diag_code == "query.evidence"
        assert out.messages == 0, "nothing of a segment that fails its digest is disclosed"
    with flipped_byte(seg1, seg1.stat().st_size - 1):
        out = do_get_exact(daemon, "primitive", ticket)
        assert out.code == grpc.StatusCode.DATA_LOSS and out.diag_code == "query.evidence"
        assert out.messages == 2, "schema and the intact first batch, then the error"
    assert do_get_exact(daemon, "primitive", ticket).code == grpc.StatusCode.OK


def test_missing_or_truncated_segment_fails_closed(daemon):
    ticket, (seg0, seg1) = two_segment_result(daemon, "c", 100_000)
    data = seg1.read_bytes()
    aside = seg1.with_name(seg1.name + ".aside")
    seg1.rename(aside)
    try:
        out = do_get_exact(daemon, "primitive", ticket)
        assert out.code == grpc.StatusCode.DATA_LOSS and out.diag_code == "query.evidence"
        assert out.messages == 2
    finally:
        aside.rename(seg1)
    seg1.write_bytes(data[:-8])
    try:
        out = do_get_exact(daemon, "primitive", ticket)
        assert out.code == grpc.StatusCode.DATA_LOSS and out.diag_code == "query.evidence"
    finally:
        seg1.write_bytes(data)
    assert do_get_exact(daemon, "primitive", ticket).code == grpc.StatusCode.OK


# 3. Two daemons sharing the ticket key and configuration ---------------------------------------

def test_replica_verifies_the_ticket_but_fails_closed_without_the_result(daemon, tmp_path):
    seq = Caller(daemon, "primitive").next_sequence()
    stmt = ticket_of(Caller(daemon, "primitive").info("SELECT id, a FROM primitive WHERE id < 10", seq))
    meta = ticket_of(Caller(daemon, "primitive").metadata_info(flightsql.get_tables(include_schema=True)))
    replica = Daemon.variant(daemon, target=tmp_path / "replica").start()
    try:
        assert replica.token("primitive") == daemon.token("primitive")
        # A metadata result is recomputed from the shared configuration: B serves A's ticket.
        out = do_get_exact(replica, "primitive", meta)
        assert out.code == grpc.StatusCode.OK and out.messages == 2
        # B verifies A's statement ticket (no ticket.* failure) but holds no retained result:
        # missing evidence fails closed, never an empty stream.
        out = do_get_exact(replica, "primitive", stmt)
        assert out.code == grpc.StatusCode.DATA_LOSS and out.diag_code == "query.evidence"
        assert out.messages == 0
        assert {"name": "reason", "kind": "text", "value": "unknown_result"} in out.diagnostic["facts"]
        # A still serves it.
        assert do_get_exact(daemon, "primitive", stmt).code == grpc.StatusCode.OK
    finally:
        replica.assert_clean_stop()


# 4. Ticket key rotation (restarts the module's daemon: keep last) --------------------------------

def test_rotating_the_ticket_key_invalidates_tickets_and_reissue_resolves_the_same_result(daemon):
    sql = "SELECT id, b FROM primitive WHERE id < 70000"
    seq = Caller(daemon, "primitive").next_sequence()
    old = ticket_of(Caller(daemon, "primitive").info(sql, seq))
    before = fl.FlightClient(daemon.uri).do_get(fl.Ticket(old), options(daemon, "primitive")).read_all()
    after_execution = Caller(daemon, "primitive").next_sequence()
    daemon.assert_clean_stop()
    key = daemon.state_dir / "keys" / "ticket.key"
    old_key = key.read_bytes()
    key.unlink()  # the daemon generates a new ticket key at start
    daemon.start()
    assert key.read_bytes() != old_key

    out = do_get_exact(daemon, "primitive", old)
    assert out.code == grpc.StatusCode.INVALID_ARGUMENT and out.diag_code == "ticket.signature"

    new = ticket_of(Caller(daemon, "primitive").info(sql, seq))
    assert new != old
    assert flightsql.ticket_correlation(new) == flightsql.ticket_correlation(old)
    assert new[154:186] == old[154:186], "same retained manifest"
    assert Caller(daemon, "primitive").next_sequence() == after_execution, "nothing new executed"
    again = fl.FlightClient(daemon.uri).do_get(fl.Ticket(new), options(daemon, "primitive")).read_all()
    assert again.equals(before)
