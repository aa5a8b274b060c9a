"""A re-published Table cannot redirect an old ticket: after a restart with a publication whose
declaration changed under the same Table name, tickets issued for the earlier declaration are
refused (PERMISSION_DENIED) before anything is read, and only new tickets read the new data.
Each test restarts the module's daemon with an edited gateway.json."""

import grpc
import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.parquet as pq
import pytest

import flightsql
from calls import Caller, do_get_exact, options, ticket_of
from daemon import Daemon

SQL = "SELECT id, a, b FROM primitive WHERE id < 10"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("a", pa.int64(), nullable=False),
                    pa.field("b", pa.int64()),
                    pa.field("c", pa.int64(), nullable=False),
                    pa.field("d", pa.int64())])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("republish")).start()
    yield d
    d.assert_clean_stop()


def read(daemon, ticket):
    client = fl.FlightClient(daemon.uri)
    return client.do_get(fl.Ticket(ticket), options(daemon, "primitive")).read_all()


def tickets(daemon):
    """A statement ticket and a metadata ticket for the primitive caller, and what they read."""
    stmt = ticket_of(Caller(daemon, "primitive").info(SQL))
    meta = ticket_of(Caller(daemon, "primitive").metadata_info(flightsql.get_tables(include_schema=True)))
    return stmt, meta, read(daemon, stmt), read(daemon, meta)


def republish(daemon, **changes):
    """Stops the daemon, edits the 'primitive' publication (same name and Table name) and starts
    the daemon again over the same state directory."""
    daemon.assert_clean_stop()
    cfg = daemon.config()
    publication = next(p for p in cfg["publications"] if p["name"] == "primitive")
    publication.update(changes)
    daemon.write_config(cfg)
    daemon.start()


def assert_refused(daemon, ticket, code):
    out = do_get_exact(daemon, "primitive", ticket)
    assert (out.code, out.diag_code) == (grpc.StatusCode.PERMISSION_DENIED, code), out.details
    assert out.messages == 0, "nothing may be streamed for a refused ticket"
    # The same refusal through PyArrow: no data, an error naming the code.
    with pytest.raises(fl.FlightError, match=code.replace(".", r"\.")):
        read(daemon, ticket)
    return out


def test_new_data_and_metadata_ref_under_the_same_name_refuse_old_tickets(daemon):
    old_stmt, old_meta, old_rows, old_tables = tickets(daemon)
    assert old_rows.num_rows == 10
    # Other rows under the same Table name: every value differs from the original data.
    new = pa.table({"id": list(range(20)), "a": [-1000 - i for i in range(20)],
                    "b": [None] * 20, "c": [7] * 20, "d": [i * i for i in range(20)]},
                   schema=SCHEMA)
    pq.write_table(new, daemon.state_dir / "demo-data" / "republished.parquet")
    republish(daemon, files=["demo-data/republished.parquet"], metadata_ref="demo:demo_primitive:v2")

    assert_refused(daemon, old_stmt, "ticket.declaration")
    assert_refused(daemon, old_meta, "ticket.declaration")

    # New tickets for the same SQL and command read the re-published Table.
    new_stmt, new_meta, new_rows, new_tables = tickets(daemon)
    assert new_stmt[:32] == old_stmt[:32], "same deployment definition"
    assert new_stmt[105:137] != old_stmt[105:137], "the declaration fingerprint changed"
    assert new_rows.sort_by("id").column("a").to_pylist() == [-1000 - i for i in range(10)]
    assert not new_rows.equals(old_rows)
    assert new_tables.num_rows == old_tables.num_rows
    # The old ticket stays refused now that new tickets exist for the same name.
    assert_refused(daemon, old_stmt, "ticket.declaration")


def test_another_object_id_under_the_same_name_refuses_old_tickets(daemon):
    old_stmt, old_meta, _, _ = tickets(daemon)
    republish(daemon, object_id=7)

    assert_refused(daemon, old_stmt, "ticket.scope")
    assert_refused(daemon, old_meta, "ticket.scope")
    new_stmt, _, rows, _ = tickets(daemon)
    assert rows.num_rows == 10
    # The object id is the resource scope field (offset 88) and is part of the declaration
    # (105..137); scope is checked first, hence ticket.scope. The other scope fields are equal.
    assert new_stmt[88:96] == (7).to_bytes(8, "little") != old_stmt[88:96]
    assert new_stmt[105:137] != old_stmt[105:137]
    assert new_stmt[32:88] == old_stmt[32:88] and new_stmt[96:105] == old_stmt[96:105]
