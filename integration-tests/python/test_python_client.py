"""The transit_flight package (clients/python) against the real daemon: sequences, serialized
statements on one credential, retries that replay rather than re-execute, diagnostics, pandas,
and the gateway's next-sequence hints."""

import json
import threading
import warnings

import pandas
import pyarrow.flight as fl
import pytest

import flightsql
import transit_flight as tf
from calls import channel, info_fields, sql_info
from daemon import Daemon, wait_until
from edge_proxy import EdgeProxy
from tcp_proxy import TcpProxy, pending_statement

THREADS, STATEMENTS = 8, 200


def token_file(gateway, caller="primitive"):
    return gateway.state_dir / "credentials" / f"{caller}.token"


def recorded_in(gateway, caller="primitive"):
    """Whether ``gateway``'s journal holds the caller's query at a sequence (its namespace)."""
    principal = gateway.principal(caller)
    return lambda sequence: sequence in gateway.journal().queries(principal)


def test_eight_threads_on_one_credential_run_200_statements_without_conflict(gateway, primitive):
    start = primitive.next_sequence()
    results, failures = {}, []

    def worker(t):
        # Each thread its own connection; the package serializes the credential across them.
        with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
            for i in range(STATEMENTS // THREADS):
                n = 1 + t * 100 + i
                try:
                    with conn.cursor() as cur:
                        cur.execute(f"SELECT COUNT(*), SUM(id) FROM primitive WHERE id < {n}")
                        results[(t, i)] = (n, cur.fetchone(), cur.sequence, cur.next_sequence,
                                           cur.correlation)
                except tf.Error as e:
                    failures.append((t, i, e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not any(th.is_alive() for th in threads), "statements did not finish within 300s"
    assert failures == []
    assert len(results) == STATEMENTS
    for n, row, *_ in results.values():
        assert row == (n, n * (n - 1) // 2)
    # Every statement used its own sequence range, chained from the one before it.
    chain = sorted((s, nxt) for _, _, s, nxt, _ in results.values())
    assert chain[0][0] == start
    assert all(a[1] == b[0] for a, b in zip(chain, chain[1:]))
    assert len({c for *_, c in results.values()}) == STATEMENTS
    assert primitive.next_sequence() == chain[-1][1]


def test_dropped_connection_mid_getflightinfo_is_replayed_not_rerun(gateway, primitive):
    proxy = TcpProxy(gateway.port)
    journal_, who = gateway.journal(), gateway.principal("primitive")
    sql = "SELECT COUNT(*), SUM(a) FROM primitive WHERE id < 4242"
    try:
        conn = tf.connect(proxy.uri, token_file=token_file(gateway),
                          retry=tf.RetryPolicy(total=60, initial_backoff=0.05))
        # A first statement opens the proxied connection and teaches the client its next sequence
        # (app_metadata), so the held request below is the statement's GetFlightInfo itself.
        conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 1")
        sequence = conn.next_sequence()
        before = journal_.queries(who)
        proxy.hold()
        out = {}

        def run():
            with conn.cursor() as cur:
                cur.execute(sql)
                out.update(row=cur.fetchone(), correlation=cur.correlation, sequence=cur.sequence)

        th = threading.Thread(target=run)
        th.start()
        # The gateway admitted and finished the statement; its answer never reached the client.
        wait_until(lambda: journal_.queries(who).get(sequence, (0, ""))[1] == "SUCCEEDED", 60,
                   "the held statement to finish")
        assert th.is_alive()
        proxy.cut()
        th.join(90)
        assert not th.is_alive(), "the client did not finish its retry within 90s"
        assert proxy.cuts == 1 and proxy.connections >= 2, "the retry came on a new connection"
        after = journal_.queries(who)
        assert set(after) - set(before) == {sequence}, "exactly one query was admitted"
        correlation, state = after[sequence]
        assert (out["sequence"], out["correlation"], state) == (sequence, correlation, "SUCCEEDED")
        # The same as a direct replay reads, through another client.
        with channel(gateway) as ch:
            again, _ = info_fields(sql_info(ch, gateway, "primitive", sql, sequence))
        assert again == correlation
        table, _ = primitive.query(sql)
        assert out["row"] == tuple(table.to_pylist()[0].values())
        conn.close()
    finally:
        proxy.close()


def test_a_retry_refused_after_an_unanswered_attempt_blocks_instead_of_moving_on(tmp_path):
    """The first attempt is admitted and runs, its answer lost; a reload then gives the caller a
    role, so the retry's bundle differs and meets a conflict at the same sequence. That conflict
    says nothing of whether the first attempt ran: the client must not move to the next sequence
    and run the statement again, but raise OutcomeUnknownError. Resuming cannot learn more (the
    sequence holds the first attempt's bytes), so it releases the credential, raising the
    conflict; the next statement runs after it."""
    d = Daemon(tmp_path / "state").start()
    proxy = TcpProxy(d.port)
    try:
        journal_, who = d.journal(), d.principal("primitive")
        sql = "SELECT COUNT(*) FROM primitive WHERE id < 77"
        conn = tf.connect(proxy.uri, token_file=token_file(d), timeout=2,
                          retry=tf.RetryPolicy(total=60, initial_backoff=0.2, max_backoff=0.5))
        conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 1")
        sequence = conn.next_sequence()
        proxy.hold()
        raised = {}

        def run():
            try:
                conn.execute(sql)
            except tf.Error as e:
                raised["error"] = e

        th = threading.Thread(target=run)
        th.start()
        wait_until(lambda: journal_.queries(who).get(sequence, (0, ""))[1] == "SUCCEEDED", 60,
                   "the held statement to finish")
        cfg = d.config()
        next(c for c in cfg["callers"] if c["name"] == "primitive")["role"] = 7
        d.write_config(cfg)
        assert d.reload() == "reloaded"
        proxy.cut()
        th.join(90)
        assert not th.is_alive(), "the client did not finish its retry within 90s"
        assert isinstance(raised.get("error"), tf.OutcomeUnknownError), raised
        assert raised["error"].sequence == sequence
        assert list(journal_.queries(who)).count(sequence) == 1
        assert max(journal_.queries(who)) == sequence, "nothing ran after the first attempt"
        with pytest.raises(tf.OutcomeUnknownError):
            conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 78")
        with pytest.raises(tf.Error) as resumed:
            conn.resume()
        assert resumed.value.code == "query.namespace_conflict"
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM primitive WHERE id < 78")
            assert cur.fetchone() == (78,) and cur.sequence > sequence
        conn.close()
        d.assert_clean_stop()
    finally:
        proxy.close()
        d.stop()


def test_resuming_a_statement_that_failed_releases_the_credential(gateway, tmp_path):
    """The statement of unknown outcome had failed (its result over the deployment's row bound):
    resume() learns that, raises it, and the credential is no longer blocked."""
    d = Daemon.variant(gateway, {"limits": {"max_result_rows": 5}}, target=tmp_path / "rows5")
    d.start()
    try:
        proxy, conn, lost = pending_statement(d.port, token_file(d),
                                              "SELECT id FROM primitive WHERE id < 100",
                                              recorded_in(d))
        try:
            with pytest.raises(tf.Error) as failed:
                conn.resume()
            assert failed.value.code == "query.budget_exhausted"
            assert failed.value.outcome == "failed"
            assert conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 9").to_pylist() == [
                {"COUNT(*)": 9}]
            conn.close()
        finally:
            proxy.close()
        d.assert_clean_stop()
    finally:
        d.stop()


def test_a_failed_execute_leaves_no_earlier_rows_and_a_closed_cursor_refuses(gateway):
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM primitive WHERE id < 3")
        assert cur.rowcount == 1 and cur.description[0][0] == "COUNT(*)"
        with pytest.raises(tf.Error):
            cur.execute("SELECT nope FROM primitive")
        assert cur.description is None and cur.rowcount == -1 and cur.sequence is None
        with pytest.raises(tf.InterfaceError):
            cur.fetchall()
        cur.close()
        for call in (lambda: cur.execute("SELECT COUNT(*) FROM primitive"), cur.fetchone,
                     cur.fetch_arrow_table):
            with pytest.raises(tf.InterfaceError):
                call()
    with pytest.raises(ValueError):
        flightsql.get_sql_info([-1])


def test_a_trailer_not_of_the_contracts_shape_leaves_the_error_without_a_diagnostic():
    head = '{"contract":"transit.diagnostic.v1","code":"a.b","status":"INTERNAL","cause":"x"'
    for body in ('{"contract":"transit.diagnostic.v1","status":"INTERNAL"}',
                 head + ',"identity":null}',
                 head + ',"facts":[{"name":"n"}]}',
                 head + ',"facts":[{"name":"n","kind":"number","value":"1.5"}]}'):
        assert tf.Diagnostic.parse(body.encode()) is None, body
    assert tf.Diagnostic.parse((head + "}").encode()).code == "a.b"


def test_kill9_and_restart_mid_statement_is_replayed_not_rerun(tmp_path):
    # Accepted queries wait before executing, so the kill finds this one accepted, unfinished.
    d = Daemon(tmp_path / "state", faults="execution-delay-ms:1500").start()
    try:
        journal_, who = d.journal(), d.principal("primitive")
        conn = tf.connect(d.uri, token_file=token_file(d), retry=tf.RetryPolicy(total=120))
        sequence = conn.next_sequence()
        sql = "SELECT COUNT(*), SUM(c) FROM primitive WHERE id < 777"
        out = {}

        def run():
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                    out.update(row=cur.fetchone(), correlation=cur.correlation, sequence=cur.sequence)
            except tf.Error as e:
                out["error"] = e

        th = threading.Thread(target=run)
        th.start()
        wait_until(lambda: journal_.queries(who).get(sequence, (0, ""))[1] == "ACCEPTED", 60,
                   "the statement to be accepted")
        accepted = journal_.queries(who)[sequence][0]
        d.kill9()
        d.start()  # same state directory, same port
        th.join(150)
        assert not th.is_alive(), "the client did not finish its retry within 150s"
        assert "error" not in out, out.get("error")
        queries = journal_.queries(who)
        assert set(queries) == {sequence}, "exactly one query, at the statement's sequence"
        assert queries[sequence] == (accepted, "SUCCEEDED")
        assert (out["sequence"], out["correlation"]) == (sequence, accepted)
        with channel(d) as ch:
            again, _ = info_fields(sql_info(ch, d, "primitive", sql, sequence))
        assert again == accepted
        reference = tf.connect(d.uri, token_file=token_file(d))
        assert out["row"] == tuple(reference.execute(sql).to_pylist()[0].values())
        reference.close()
        conn.close()
        d.assert_clean_stop()
    finally:
        d.stop()


def test_pandas_read_sql(gateway, primitive):
    sql = "SELECT id, a, b FROM primitive WHERE id < 50"
    expected = primitive.query(sql)[0].to_pandas()  # read by plain PyArrow Flight
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        # pandas reads any DB-API connection, warning that it only tests SQLAlchemy and sqlite3.
        with pytest.warns(UserWarning, match="Other DBAPI2 objects are not tested"):
            df = pandas.read_sql(sql, conn)
        assert list(df.columns) == ["id", "a", "b"]
        assert df.astype(object).where(df.notna(), None).values.tolist() == \
            expected.astype(object).where(expected.notna(), None).values.tolist()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pandas.testing.assert_frame_equal(tf.read_sql(sql, conn), expected)
            with conn.cursor() as cur:
                cur.execute(sql)
                pandas.testing.assert_frame_equal(cur.fetch_df(), expected)


def test_metadata_helpers(gateway, primitive):
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        assert [tuple(r.values()) for r in conn.tables().to_pylist()] == [
            tuple(r.values()) for r in primitive.metadata(flightsql.get_tables()).to_pylist()]
        schema = conn.table_schema("primitive")
        assert schema == conn.execute("SELECT * FROM primitive LIMIT 1").schema
        with pytest.raises(tf.NotFoundError):
            conn.table_schema("nonexistent")


def test_diagnostics_arrive_as_typed_exceptions(gateway):
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        with pytest.raises(tf.ProgrammingError) as raised:
            conn.execute("SELECT nope FROM primitive")
        e = raised.value
        assert isinstance(e, tf.InvalidArgumentError) and e.status == "INVALID_ARGUMENT"
        assert e.code == e.diagnostic.code == "query.unknown_column"
        assert e.cause == e.diagnostic.cause and e.outcome == "not_admitted"
        assert e.actions and e.facts
    with tf.connect(gateway.uri, token="tfg_not-a-credential") as conn:
        with pytest.raises(tf.UnauthenticatedError):
            conn.execute("SELECT COUNT(*) FROM primitive")


def test_shared_contract_terms_arrive_typed(gateway):
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        with pytest.raises(tf.InvalidArgumentError) as raised:
            conn.execute("SELECT id FROM primitive WHERE " + "(" * 40 + "id = 1" + ")" * 40)
        e = raised.value
        assert e.code == "query.too_complex" and e.outcome == "not_admitted"
        assert e.budgets == (tf.Budget("nesting", 32, 40),)
        assert e.witness == tf.Witness("compiler", "compilation", "query.too_complex")
        assert e.basis.engine == "transit-embedded" and len(e.basis.declaration_sha256) == 64
        assert e.diagnostic.raw["budgets"][0]["limit"] == "32", "the wire form stays exact text"
    with tf.connect(gateway.uri, token_file=token_file(gateway, "cells")) as conn:
        with pytest.raises(tf.OutOfRangeError) as raised:
            conn.execute("SELECT SUM(huge) FROM cells")
        e = raised.value
        correlation = e.diagnostic.identity["correlation"]
        assert e.witness == tf.Witness("native_failure", "execution", "query.arithmetic_overflow",
                                       correlation=correlation)
        assert e.budgets == () and e.basis.engine == "transit-embedded"
    with tf.connect(gateway.uri, token="tfg_not-a-credential") as conn:
        with pytest.raises(tf.UnauthenticatedError) as raised:
            conn.execute("SELECT SUM(huge) FROM cells")
        assert (raised.value.witness, raised.value.basis, raised.value.budgets) == (None, None, ())


def test_another_writer_taking_the_sequence_moves_the_statement_along(gateway, primitive):
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 3")
        taken = primitive.next_sequence()
        assert conn._credential.next == taken  # learned from app_metadata
        # Another process of the same credential takes that sequence with other SQL.
        primitive.info("SELECT COUNT(*) FROM primitive WHERE id < 4", taken)
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM primitive WHERE id < 5")
            assert cur.fetchone() == (5,)
            assert cur.sequence == app_next(primitive, "SELECT COUNT(*) FROM primitive WHERE id < 4", taken)


def app_next(caller, sql, sequence):
    """The next sequence after the (replayed) statement ``sql`` at ``sequence``."""
    return json.loads(caller.info(sql, sequence).app_metadata)["next_sequence"]


def test_unknown_outcome_blocks_the_credential_until_resumed(gateway, primitive):
    proxy, conn, lost = pending_statement(gateway.port, token_file(gateway),
                                          "SELECT COUNT(*) FROM primitive WHERE id < 11",
                                          recorded_in(gateway))
    try:
        assert lost.status == "DEADLINE_EXCEEDED"
        with pytest.raises(tf.OutcomeUnknownError):
            conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 12")
        assert conn.resume().to_pylist() == [{"COUNT(*)": 11}]
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM primitive WHERE id < 12")
            assert cur.fetchone() == (12,) and cur.sequence > lost.sequence
        conn.close()
    finally:
        proxy.close()


def test_an_edges_answer_without_the_gateways_word_leaves_the_outcome_unknown(gateway):
    """The edge forwarded the statement (the gateway admitted and ran it) and then answered
    UNKNOWN itself, with neither the gateway's trailer nor its code. Until 2026-12-06 the client
    raised it as a plain failure and asked the gateway for the next sequence, so running the
    same SQL again ran the statement a second time; now it cannot say whether the statement
    ran, so it blocks the credential until resume() replays it."""
    edge = EdgeProxy(gateway.port)
    journal_, who = gateway.journal(), gateway.principal("primitive")
    sql = "SELECT COUNT(*) FROM primitive WHERE id < 4343"
    try:
        with tf.connect(edge.uri, token_file=token_file(gateway)) as conn:
            conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 1")
            sequence = conn.next_sequence()
            edge.fail_next_statement()
            with pytest.raises(tf.OutcomeUnknownError) as unknown:
                conn.execute(sql)
            e = unknown.value
            assert edge.failed == 1 and e.sequence == sequence and e.last.status == "UNKNOWN"
            assert e.outcome == "unknown" and e.actions == ()
            assert journal_.queries(who)[sequence][1] == "SUCCEEDED", "the gateway ran it"
            with pytest.raises(tf.OutcomeUnknownError):
                conn.execute(sql)  # not a second run at the next sequence
            assert conn.resume().to_pylist() == [{"COUNT(*)": 4343}]
            assert max(journal_.queries(who)) == sequence, "it ran once"
            cur = conn.cursor()  # left open: the connection's close makes it unusable
            cur.execute("SELECT COUNT(*) FROM primitive WHERE id < 12")
            assert cur.fetchone() == (12,) and cur.sequence > sequence
            # A result is read again by its ticket (replay-safe), as after a failed read.
            assert conn.read(cur.ticket).to_pylist() == [{"COUNT(*)": 12}]
        # PEP 249: once the connection is closed, its cursors and helpers refuse.
        for call in (cur.fetchall, conn.next_sequence, conn.tables, conn.resume,
                     lambda: conn.read(b"x")):
            with pytest.raises(tf.InterfaceError):
                call()
    finally:
        edge.close()


def test_missing_sequence_and_conflict_name_the_callers_next_sequence(gateway, primitive):
    """The gateway's hints (the package relies on the conflict's): message and number fact."""
    capture_client = tf.connect(gateway.uri, token_file=token_file(gateway))
    try:
        with pytest.raises(tf.InvalidArgumentError) as missing:
            capture_client._call(lambda: capture_client._client.get_flight_info(
                fl.FlightDescriptor.for_command(flightsql.statement_query("SELECT COUNT(*) FROM primitive")),
                capture_client._options()))
        nxt = primitive.next_sequence()
        assert missing.value.code == "sequence.missing"
        assert missing.value.facts["next_sequence"] == nxt
        assert str(missing.value).endswith(f"; next sequence {nxt}")

        used = primitive.query("SELECT COUNT(*) FROM primitive WHERE id < 20")[1]
        used_at = nxt
        nxt = json.loads(used.app_metadata)["next_sequence"]
        with pytest.raises(tf.AbortedError) as conflict:
            capture_client._call(lambda: capture_client._client.get_flight_info(
                fl.FlightDescriptor.for_command(flightsql.statement_query("SELECT COUNT(*) FROM primitive WHERE id < 21")),
                capture_client._options(used_at)))
        assert conflict.value.code == "query.namespace_conflict"
        assert conflict.value.facts["next_sequence"] == nxt
        assert f"; next sequence {nxt}" in str(conflict.value)
    finally:
        capture_client.close()


def test_a_statement_recorded_as_failed_names_the_next_sequence_and_the_client_uses_it(gateway):
    def asked():
        return sum("caller=cells method=DoAction" in line for line in gateway.output)

    with tf.connect(gateway.uri, token_file=token_file(gateway, "cells")) as conn:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM cells")
        with pytest.raises(tf.Error) as raised:
            cur.execute("SELECT SUM(huge) FROM cells")  # overflows at execution: recorded
        e = raised.value
        assert e.code == "query.arithmetic_overflow" and e.outcome == "failed"
        assert "use_next_sequence" in e.actions
        hint = e.facts["next_sequence"]
        gateway.quiet_log()
        before = asked()
        cur.execute("SELECT COUNT(*) FROM cells")
        assert cur.sequence == hint
        gateway.quiet_log()
        assert asked() == before, "no GetSessionOptions: the failure named the next sequence"
        # The control: a GetSessionOptions of this caller is counted, so the check above could
        # fail (a changed access line would make it pass whatever the client did).
        conn.next_sequence()
        wait_until(lambda: asked() == before + 1, 10, "the GetSessionOptions access line")


def test_adbc_and_pyarrow_connections_share_one_credentials_rules(gateway, primitive):
    """ADBC connections (sequences from the caller capability) and PyArrow ones (app_metadata)
    of one credential take the same lock: run together, none conflicts."""
    from transit_flight import adbc
    failures, done = [], []

    def pyarrow_worker(t):
        with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
            for i in range(10):
                n = 1 + 50 * t + i
                assert conn.execute(f"SELECT COUNT(*) FROM primitive WHERE id < {n}").to_pylist() == [{"COUNT(*)": n}]
                done.append(n)

    def adbc_worker(t):
        conn = adbc.connect(gateway.uri, token_file=token_file(gateway))
        try:
            for i in range(10):
                n = 1000 + 50 * t + i
                assert adbc.execute(conn, f"SELECT COUNT(*) FROM primitive WHERE id < {n}").to_pylist() == [{"COUNT(*)": n}]
                done.append(n)
        finally:
            conn.close()

    def guarded(fn, t):
        try:
            fn(t)
        except Exception as e:  # reported below, with the thread's cause
            failures.append(e)

    threads = [threading.Thread(target=guarded, args=(fn, t))
               for t, fn in enumerate([pyarrow_worker, adbc_worker, pyarrow_worker, adbc_worker])]
    for th in threads:
        th.start()
    for th in threads:
        th.join(240)
    assert not any(th.is_alive() for th in threads), "statements did not finish within 240s"
    assert failures == []
    assert len(done) == 40


def test_a_closed_adbc_connection_and_a_failed_read_leave_the_credential_usable(gateway, primitive):
    """A statement on a closed ADBC connection never leaves: the package's InterfaceError, and
    the credential's other connections go on. A statement admitted whose read then fails names
    its result (``ticket``), which is read, never run again."""
    from transit_flight import adbc
    with tf.connect(gateway.uri, token_file=token_file(gateway)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 3").to_pylist() == \
            [{"COUNT(*)": 3}]
        closed = adbc.connect(gateway.uri, token_file=token_file(gateway))
        closed.close()
        with pytest.raises(tf.InterfaceError):
            adbc.execute(closed, "SELECT COUNT(*) FROM primitive")
        assert conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 5").to_pylist() == \
            [{"COUNT(*)": 5}]

        def unreadable(info):
            raise tf.UnavailableError("scripted: the read failed", "UNAVAILABLE")
        conn._read = unreadable
        with pytest.raises(tf.UnavailableError) as failed:
            conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 7")
        del conn._read
        assert recorded_in(gateway)(failed.value.sequence)
        assert conn.read(failed.value.ticket).to_pylist() == [{"COUNT(*)": 7}]
        assert conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 9").to_pylist() == \
            [{"COUNT(*)": 9}]


def test_an_adbc_connection_that_stops_answering_ends_in_an_unknown_outcome_not_a_hang(
        gateway):
    """Each ADBC call is bounded by the connection's timeout: a connection whose answers are held
    back ends the statement as OutcomeUnknownError once retries run out (until 2026-12-06 the
    call waited for good, holding the credential's lock)."""
    from transit_flight import adbc
    proxy = TcpProxy(gateway.port)
    conn = adbc.connect(proxy.uri, token_file=token_file(gateway), timeout=3)
    outcome = []
    try:
        assert adbc.execute(conn, "SELECT COUNT(*) FROM primitive WHERE id < 2").to_pylist() == [
            {"COUNT(*)": 2}]
        # The sequence known beforehand (as after a PyArrow statement of the same credential), so
        # the held call is the statement's own, not the sequence's question.
        adbc._rules(conn).next = adbc.next_sequence(conn)
        proxy.hold()

        def statement():
            try:
                adbc.execute(conn, "SELECT COUNT(*) FROM primitive WHERE id < 3",
                             tf.RetryPolicy(total=2, initial_backoff=0.2, max_backoff=0.5))
            except BaseException as e:  # asserted below, on the test's thread
                outcome.append(e)
        worker = threading.Thread(target=statement, daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), "the held call was not ended by its timeout"
        assert len(outcome) == 1 and isinstance(outcome[0], tf.OutcomeUnknownError), outcome
        proxy.cut()
        assert adbc.resume(conn).to_pylist() == [{"COUNT(*)": 3}]
    finally:
        proxy.close()
        conn.close()


def test_adbc_errors_carry_the_diagnostic(gateway):
    from transit_flight import adbc
    conn = adbc.connect(gateway.uri, token_file=token_file(gateway))
    try:
        with pytest.raises(tf.InvalidArgumentError) as raised:
            adbc.execute(conn, "SELECT nope FROM primitive")
        assert raised.value.code == "query.unknown_column"
        assert raised.value.diagnostic.status == "INVALID_ARGUMENT"
        assert raised.value.facts == {"column": "nope"}
    finally:
        conn.close()


# The credential's rules on scripted answers: what each kind of gateway answer does to the
# statement's sequence and to the credential's block.

def _answer(status, code, outcome, actions, **facts):
    trailer = {"contract": "transit.diagnostic.v1", "code": code, "status": status, "cause": "X",
               "outcome": outcome, "actions": list(actions),
               "facts": [{"name": k, "kind": "number", "value": str(v)} for k, v in facts.items()]}
    diagnostic = tf.Diagnostic.parse(json.dumps(trailer).encode())
    assert diagnostic is not None
    return tf.errors.BY_STATUS[status](f"{code}: scripted", status, diagnostic)


def _scripted(*answers):
    """An attempt that raises ``answers`` in turn (a result once they run out); its sends."""
    sent = []

    def attempt(sequence, sql):
        sent.append((sequence, sql))
        if len(sent) <= len(answers):
            raise answers[len(sent) - 1]
        return "result"
    return attempt, sent


FAST = tf.RetryPolicy(total=2.0, initial_backoff=0.01, max_backoff=0.01)


def test_a_recorded_failure_is_never_resent_whatever_its_status():
    """An UNAVAILABLE the gateway recorded as the statement's failure (an object store that
    refused its result) spends the sequence: a resend would only replay it, for the whole retry
    budget, and then block the credential."""
    from transit_flight.connection import _Credential, admit_once, resume_pending
    recorded = _answer("UNAVAILABLE", "query.segment_store_unavailable", "failed",
                       ["use_next_sequence"], next_sequence=8)
    credential = _Credential()
    attempt, sent = _scripted(recorded)
    with pytest.raises(tf.UnavailableError):
        admit_once(credential, "SELECT 1", FAST, attempt, lambda: 7)
    assert sent == [(7, "SELECT 1")] and credential.pending is None and credential.next == 8
    # Met by a resume, the same answer settles the statement: the credential is released.
    credential.pending = (7, "SELECT 1")
    attempt, sent = _scripted(recorded)
    with pytest.raises(tf.UnavailableError):
        resume_pending(credential, FAST, attempt)
    assert len(sent) == 1 and credential.pending is None


def test_a_resend_refused_for_now_keeps_the_credential_blocked():
    """A resume refused before anything ran (compilation busy, a full journal disk) says nothing
    of the first attempt, which may have been admitted: the block stays."""
    from transit_flight.connection import _Credential, resume_pending
    for refusal in (_answer("RESOURCE_EXHAUSTED", "query.compile_busy", "not_admitted",
                            ["retry_later"]),
                    _answer("RESOURCE_EXHAUSTED", "query.disk_full", "not_admitted",
                            ["retry_same_sequence_and_sql"])):
        credential = _Credential()
        credential.pending = (7, "SELECT 1")
        attempt, _ = _scripted(refusal)
        with pytest.raises(tf.ResourceExhaustedError):
            resume_pending(credential, FAST, attempt)
        assert credential.pending == (7, "SELECT 1"), refusal.code
    # A refusal for good (the caller may no longer send) releases it, as documented.
    credential.pending = (7, "SELECT 1")
    attempt, _ = _scripted(_answer("PERMISSION_DENIED", "query.access_denied", "not_admitted",
                                   ["check_access"]))
    with pytest.raises(tf.PermissionDeniedError):
        resume_pending(credential, FAST, attempt)
    assert credential.pending is None


def test_a_statement_refused_before_admission_every_time_is_raised_and_blocks_nothing():
    """admission.busy is the limiter's refusal before any command is sent: resent like a lost
    answer, and when every attempt got it, nothing ran, so the credential stays usable. Without
    its trailer PyArrow reports the status as INVALID_ARGUMENT; the code in the message still
    says which refusal it was."""
    from transit_flight.connection import _Credential, admit_once
    with_trailer = _answer("RESOURCE_EXHAUSTED", "admission.busy", "not_admitted", ["retry_later"])
    without = tf.errors.BY_STATUS["INVALID_ARGUMENT"]("admission.busy: scripted", "INVALID_ARGUMENT")
    for busy, raised in ((with_trailer, tf.ResourceExhaustedError),
                         (without, tf.InvalidArgumentError)):
        credential = _Credential()
        attempt, sent = _scripted(*[busy] * 1000)
        with pytest.raises(raised):
            admit_once(credential, "SELECT 1", FAST, attempt, lambda: 7)
        assert len(sent) > 1 and set(sent) == {(7, "SELECT 1")}, busy
        assert credential.pending is None, busy
        # Busy, then an answer: the statement runs at its sequence, no block.
        attempt, sent = _scripted(busy, busy)
        assert admit_once(credential, "SELECT 1", FAST, attempt, lambda: 7) == (7, "result")
        assert sent == [(7, "SELECT 1")] * 3
    # Busy after an attempt that went unanswered: that one may have run, so the block stays.
    credential = _Credential()
    lost = tf.errors.BY_STATUS["UNAVAILABLE"]("connection reset", "UNAVAILABLE")
    attempt, _ = _scripted(lost, *[with_trailer] * 1000)
    with pytest.raises(tf.OutcomeUnknownError):
        admit_once(credential, "SELECT 1", FAST, attempt, lambda: 7)
    assert credential.pending == (7, "SELECT 1")


def test_a_statement_that_could_not_be_sent_blocks_nothing():
    """A statement that is not text, or an attempt that fails before its call (a closed ADBC
    connection), never reached the gateway: the package's error, and the credential is free."""
    from transit_flight.connection import _Credential, _not_sent, admit_once
    credential = _Credential()
    for sql in (b"SELECT 1", None, "SELECT '\ud800'"):
        attempt, sent = _scripted()
        with pytest.raises(tf.ProgrammingError):
            admit_once(credential, sql, FAST, attempt, lambda: 7)
        assert sent == [] and credential.pending is None
    attempt, sent = _scripted(_not_sent(tf.InterfaceError("the connection is closed")))
    with pytest.raises(tf.InterfaceError):
        admit_once(credential, "SELECT 1", FAST, attempt, lambda: 7)
    assert credential.pending is None
    assert admit_once(credential, "SELECT 1", FAST, _scripted()[0], lambda: 7) == (7, "result")


def test_an_interrupted_statement_blocks_the_credential():
    from transit_flight.connection import _Credential, admit_once
    credential = _Credential()
    attempt, sent = _scripted(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        admit_once(credential, "SELECT 1", FAST, attempt, lambda: 7)
    assert credential.pending == (7, "SELECT 1")
    with pytest.raises(tf.OutcomeUnknownError):
        admit_once(credential, "SELECT 2", FAST, _scripted()[0], lambda: 8)
    # Given up on by the caller: the block is released, and the next statement asks the gateway
    # for its sequence (past the abandoned one if that ran).
    from transit_flight.connection import abandon_pending
    assert abandon_pending(credential) == (7, "SELECT 1")
    attempt, sent = _scripted()
    assert admit_once(credential, "SELECT 2", FAST, attempt, lambda: 8) == (8, "result")
    assert sent == [(8, "SELECT 2")]
    with pytest.raises(tf.InterfaceError):
        abandon_pending(credential)


def test_an_adbc_read_that_fails_after_admission_is_resumed_not_run_again():
    """ADBC reads inside its attempt: a read refused for now leaves the admitted statement for
    resume() (a replay); one refused for good is raised as it is."""
    from transit_flight.connection import _Credential, admit_once
    cases = ((("RESOURCE_EXHAUSTED", "flight.streams_exhausted", "not_admitted", ["retry_later"]),
              tf.OutcomeUnknownError, (7, "SELECT 1")),
             (("PERMISSION_DENIED", "access.read_revoked", "not_admitted", ["check_access"]),
              tf.PermissionDeniedError, None))
    for answer, raised, pending in cases:
        credential = _Credential()
        failed = _answer(*answer)
        failed.after_admission = True
        with pytest.raises(raised):
            admit_once(credential, "SELECT 1", FAST, _scripted(failed)[0], lambda: 7)
        assert credential.pending == pending, answer


def test_adbc_reads_the_next_sequence_as_unsigned():
    from types import SimpleNamespace
    from transit_flight import adbc
    conn = SimpleNamespace(adbc_connection=SimpleNamespace(get_option_int=lambda name: -2))
    assert adbc.next_sequence(conn, FAST) == 2 ** 64 - 2


def test_every_failure_to_connect_is_the_packages_exception(tmp_path):
    from transit_flight import adbc
    with pytest.raises(tf.InterfaceError) as missing:
        tf.connect("grpc://127.0.0.1:1", token_file=tmp_path / "absent.token")
    assert "absent.token" in str(missing.value)
    with pytest.raises(tf.Error):
        tf.connect("notascheme://", token="t")
    with pytest.raises(tf.InterfaceError):
        adbc.connect("grpc://127.0.0.1:1", token_file=tmp_path / "absent.token")
