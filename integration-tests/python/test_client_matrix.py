"""The profile's client checks, run separately by PyArrow, ADBC Python and the ADBC C consumer.

Every test takes `client` (parametrised pyarrow / adbc_py / adbc_c) and runs the same steps through
that client's own API (clients.py). The adbc_c column needs the compiled consumer: it runs when
TRANSIT_ADBC_C and TRANSIT_ADBC_DRIVER are set, which scripts/check.d/50-adbc-c.sh does after
building it (run that script to see the C column).
"""

import os
import select
import time

import pytest

from clients import AdbcCClient, AdbcPyClient, Failure, PyArrowClient
from daemon import Daemon
from test_pyarrow_statements import duck

CLIENTS = ["pyarrow", "adbc_py", "adbc_c"]
C_BINARY = os.environ.get("TRANSIT_ADBC_C")
C_DRIVER = os.environ.get("TRANSIT_ADBC_DRIVER")


def make_client(name, gateway):
    if name == "pyarrow":
        return PyArrowClient(gateway)
    if name == "adbc_py":
        return AdbcPyClient(gateway)
    if not (C_BINARY and C_DRIVER):
        pytest.skip("the C consumer runs from scripts/check.d/50-adbc-c.sh (TRANSIT_ADBC_C unset)")
    return AdbcCClient(gateway, C_BINARY, C_DRIVER)


@pytest.fixture(params=CLIENTS)
def client(request, gateway):
    c = make_client(request.param, gateway)
    yield c
    c.close()


@pytest.fixture(scope="module")
def own_gateway(tmp_path_factory):
    """A daemon these tests may reconfigure and kill; restarts keep its state directory and port."""
    d = Daemon(tmp_path_factory.mktemp("matrix-state")).start()
    # The demo keeps the port of its first run in gateway.json (0: any); pin the one it got, so a
    # restart listens where the clients' open channels reconnect.
    d.edit_config(listen={"port": d.port})
    d.assert_clean_stop()
    d.start()  # now running the pinned configuration, so SIGHUP reloads are accepted
    yield d
    d.assert_clean_stop()


@pytest.fixture(params=CLIENTS)
def own_client(request, own_gateway):
    c = make_client(request.param, own_gateway)
    yield c
    c.close()


def expect_rows(session, sql, rows, names=None):
    """Runs `sql` at the session's next sequence; the values read must equal `rows`."""
    seq = session.next_sequence()
    if hasattr(session, "slot"):
        result = session.query(sql, seq, expect=rows)  # the C consumer compares them itself
    else:
        result = session.query(sql, seq)
    assert result.rows == rows
    if names is not None:
        assert result.names == names
    return result


def failure(fn, *args):
    with pytest.raises(Failure) as e:
        fn(*args)
    return e.value


# ------------------------------------------------------------------------------- metadata schemas

def test_metadata_catalogs_schemas_tables_types(client):
    s = client.connect("primitive")
    assert s.catalogs() == ["transit"]
    assert s.db_schemas() == [("transit", "demo")]
    assert s.tables() == [("transit", "demo", "primitive", "TABLE")]
    assert s.table_types() == ["TABLE"]
    m = client.connect("mixed")
    assert m.tables() == [("transit", "demo", "mixed", "TABLE")]
    s.close()
    m.close()


def test_metadata_tables_with_schema(client):
    s = client.connect("primitive")
    assert s.table_columns("primitive") == [
        ("id", "int64", False), ("a", "int64", False), ("b", "int64", True), ("c", "int64", False),
        ("d", "int64", True)]
    m = client.connect("mixed")
    f = failure(m.table_columns, "mixed")
    assert f.code == "catalog.not_primitive"
    s.close()
    m.close()


def test_metadata_sql_info(client):
    s = client.connect("primitive")
    info = s.sql_info([0, 1, 3])
    assert info[0] == "Transit Flight Gateway"
    # Id 3 is Flight SQL's SERVER_READ_ONLY for PyArrow and ADBC's VENDOR_SQL (which the driver
    # asks as Flight SQL's SERVER_SQL) for ADBC: true on this gateway either way.
    assert info[3] is True
    assert isinstance(info[1], str) and info[1]
    s.close()


# ---------------------------------------------------------------------- null, empty and aggregates

def test_null_empty_and_aggregate_results(client, gateway):
    s = client.connect("primitive")
    nulls = [list(r) for r in duck(gateway, "primitive", "SELECT id, b, d FROM T WHERE id < 6 ORDER BY id")]
    assert any(v is None for r in nulls for v in r), "the demo data must have nulls here"
    expect_rows(s, "SELECT id, b, d FROM primitive WHERE id < 6", nulls, ["id", "b", "d"])
    expect_rows(s, "SELECT id, a FROM primitive WHERE id < 0", [], ["id", "a"])
    expect_rows(s, "SELECT id FROM primitive LIMIT 0", [], ["id"])
    agg = "SUM(a), COUNT(*), COUNT(b), COUNT(d)"
    expect_rows(s, f"SELECT {agg} FROM primitive WHERE a > 0",
                [list(r) for r in duck(gateway, "primitive", f"SELECT {agg} FROM T WHERE a > 0")])
    expect_rows(s, "SELECT SUM(a), COUNT(*) FROM primitive WHERE id < 0", [[None, 0]])
    s.close()


# ---------------------------------------------------------------------------------- explicit retry

def test_explicit_retry_resolves_to_the_same_result(client, gateway):
    sql = "SELECT SUM(c), COUNT(*) FROM primitive WHERE a BETWEEN -1000 AND 250000"
    want = [list(r) for r in duck(gateway, "primitive",
                                  "SELECT SUM(c), COUNT(*) FROM T WHERE a BETWEEN -1000 AND 250000")]
    s = client.connect("primitive")
    seq = s.next_sequence()
    s.execute(sql, seq)  # accepted, but the client never reads the answer...
    s.close()            # ...and loses its connection
    after = client.connect("primitive").next_sequence()
    assert after > seq
    s = client.connect("primitive")
    gap = failure(s.query, sql, after + 50)  # a failed attempt in between
    assert gap.code == "query.sequence_gap"
    conflict = failure(s.query, "SELECT COUNT(*) FROM primitive", seq)
    assert conflict.code == "query.namespace_conflict"
    first = s.query(sql, seq)  # the explicit retry: same first sequence, same SQL
    assert first.rows == want
    assert s.query(sql, seq) == first
    assert s.next_sequence() == after, "retries must not advance the journal"
    s.close()


# ------------------------------------------------------------------- pooled credential separation

def test_pooled_credentials_never_see_each_other(client, gateway):
    p = client.pooled("primitive")
    m = client.pooled("mixed")
    # Interleaved on the same pool: each sees only its own scope.
    assert p.tables() == [("transit", "demo", "primitive", "TABLE")]
    assert m.tables() == [("transit", "demo", "mixed", "TABLE")]
    assert p.tables() == [("transit", "demo", "primitive", "TABLE")]
    mine = failure(m.query, "SELECT COUNT(*) FROM primitive", m.next_sequence())
    assert mine.code.startswith("query.")
    # Results: each count is of its own Table.
    expect_rows(p, "SELECT COUNT(*) FROM primitive", [[duck(gateway, "primitive", "SELECT COUNT(*) FROM T")[0][0]]])
    expect_rows(m, "SELECT COUNT(*) FROM mixed", [[duck(gateway, "mixed", "SELECT COUNT(*) FROM T")[0][0]]])
    # Tickets: the other credential on the same pool is refused, the owner still reads.
    ticket = p.execute("SELECT SUM(a) FROM primitive", p.next_sequence())
    refused = failure(m.read_ticket, ticket)
    assert refused.code == "ticket.scope"
    assert p.read_ticket(ticket).rows == [[duck(gateway, "primitive", "SELECT SUM(a) FROM T")[0][0]]]
    # Sequences are per credential: the mixed journal did not move with primitive's statements.
    m_next = m.next_sequence()
    p.query("SELECT COUNT(b) FROM primitive", p.next_sequence())
    assert m.next_sequence() == m_next
    p.close()
    m.close()


# ----------------------------------------------------------------------- read-only revocation

def reload_with(gateway, edit):
    """Rewrites gateway.json through `edit`, sends SIGHUP and waits for the daemon to log the reload."""
    cfg = gateway.config()
    edit(cfg)
    gateway.write_config(cfg)
    outcome = gateway.reload()
    assert outcome == "reloaded", outcome


def set_read(gateway, caller, allowed):
    def edit(cfg):
        c = next(c for c in cfg["callers"] if c["name"] == caller)
        c.setdefault("rights", {})["read"] = allowed
    reload_with(gateway, edit)


def test_read_revocation_fails_the_next_read_and_cuts_a_running_stream(own_client, own_gateway):
    g = own_gateway
    s = own_client.connect("primitive")
    small = "SELECT COUNT(*) FROM primitive WHERE b IS NULL"
    ticket = s.execute(small, s.next_sequence())
    before = s.read_ticket(ticket)
    total = duck(g, "primitive", "SELECT COUNT(*) FROM T")[0][0]
    first = s.open("SELECT id, a, b, c, d FROM primitive", s.next_sequence())
    assert 0 < first < total
    set_read(g, "primitive", False)
    try:
        cut = failure(s.drain)
        assert cut.code == "access.read_revoked"
        again = failure(s.read_ticket, ticket)
        assert again.code == "access.read_revoked"
        # Metadata answers are read through DoGet too: they are reads like any other.
        assert failure(s.catalogs).code == "access.read_revoked"
    finally:
        set_read(g, "primitive", True)
    assert s.read_ticket(ticket) == before, "restored: the same ticket reads again"
    s.close()


# --------------------------------------------------------------------------- physical restart

def retry_while_unavailable(fn, *args, deadline_seconds=60):
    """Calls fn until the transport reaches the daemon: what a client does after UNAVAILABLE."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        try:
            return fn(*args)
        except Failure as e:
            if not e.unavailable or time.monotonic() > deadline:
                raise
        select.select([], [], [], 0.2)


def test_kill9_restart_mid_use_keeps_tickets_and_replays(own_client, own_gateway):
    g = own_gateway
    s = own_client.connect("primitive")
    sql = "SELECT COUNT(*), SUM(a), COUNT(d) FROM primitive WHERE c > 123456"
    seq = s.next_sequence()
    ticket = s.execute(sql, seq)
    before = s.read_ticket(ticket)
    after = s.next_sequence()
    g.kill9()
    g.start()
    # The same session (connection, channel) carries on against the restarted process, once the
    # client's channel has reconnected.
    assert retry_while_unavailable(s.read_ticket, ticket) == before, "a ticket issued before the crash still reads"
    assert s.next_sequence() == after
    assert s.query(sql, seq) == before, "replaying the first sequence resolves to the same result"
    assert s.next_sequence() == after
    expect_rows(s, "SELECT COUNT(*) FROM primitive WHERE c > 123456", [[before.rows[0][0]]])
    s.close()
