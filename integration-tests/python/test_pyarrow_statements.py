"""Statements from PyArrow through the real daemon, checked against DuckDB over the same files."""

import json

import duckdb
import pyarrow as pa
import pyarrow.flight as fl
import pytest

import flightsql
from calls import app_metadata


def duck(gateway, publication, sql):
    """Runs `sql` in DuckDB over the publication's data files (`T` names the table)."""
    cfg = json.loads((gateway.state_dir / "gateway.json").read_text())
    pub = next(p for p in cfg["publications"] if p["name"] == publication)
    files = [str(gateway.state_dir / f) for f in pub["files"]]
    con = duckdb.connect()
    con.execute(f"CREATE VIEW T AS SELECT * FROM read_parquet({files!r})")
    return con.execute(sql).fetchall()


CASES = [
    ("SELECT SUM(a) FROM primitive", "SELECT SUM(a) FROM T"),
    ("SELECT COUNT(*) FROM primitive", "SELECT COUNT(*) FROM T"),
    ("SELECT COUNT(b) FROM primitive", "SELECT COUNT(b) FROM T"),
    ("SELECT SUM(c), COUNT(*) FROM primitive WHERE a BETWEEN 10 AND 5000 AND b IS NOT NULL",
     "SELECT SUM(c), COUNT(*) FROM T WHERE a BETWEEN 10 AND 5000 AND b IS NOT NULL"),
    ("SELECT id, a FROM primitive WHERE id IN (3, 5, 7) OR id < 2",
     "SELECT id, a FROM T WHERE id IN (3, 5, 7) OR id < 2 ORDER BY id"),
    ("SELECT id, b, d FROM primitive LIMIT 5", None),
]


@pytest.mark.parametrize("sql,reference", CASES)
def test_query_matches_duckdb(gateway, primitive, sql, reference):
    table, info = primitive.query(sql)
    assert info.total_records == table.num_rows
    assert info.total_bytes == -1
    assert all(f.type == pa.int64() for f in table.schema)
    if reference is None:
        assert table.num_rows == 5
        return
    got = [tuple(r.values()) for r in table.to_pylist()]
    if "ORDER BY" in reference:
        got.sort()
    assert got == duck(gateway, "primitive", reference)


def test_projection_preserves_names_and_nullability(primitive):
    table, _ = primitive.query("SELECT id, b AS bee FROM primitive LIMIT 3")
    assert table.schema.names == ["id", "bee"]
    assert table.schema.field("id").nullable is False
    assert table.schema.field("bee").nullable is True


def test_large_projection_streams_every_row(gateway, primitive):
    table, info = primitive.query("SELECT id, a, c FROM primitive")
    assert table.num_rows == info.total_records == duck(gateway, "primitive", "SELECT COUNT(*) FROM T")[0][0]
    assert table.column("a").to_pylist()[:3] == [r[0] for r in duck(gateway, "primitive", "SELECT a FROM T LIMIT 3")]


def test_empty_results(primitive):
    for sql in ("SELECT id FROM primitive WHERE id < 0", "SELECT id, a FROM primitive LIMIT 0"):
        table, info = primitive.query(sql)
        assert table.num_rows == 0 and info.total_records == 0
        assert table.schema.names == sql.split("SELECT ")[1].split(" FROM")[0].split(", ")
    table, _ = primitive.query("SELECT SUM(a), COUNT(*) FROM primitive WHERE id < 0")
    assert table.to_pylist() == [{"SUM(a)": None, "COUNT(*)": 0}]


def test_next_sequence_chains_statements(primitive):
    first = primitive.next_sequence()
    info1 = primitive.info("SELECT COUNT(*) FROM primitive", first)
    nxt = app_metadata(info1)
    assert nxt["version"] == 1 and nxt["next_sequence"] > first
    assert primitive.next_sequence() == nxt["next_sequence"]
    info2 = primitive.info("SELECT SUM(a) FROM primitive", nxt["next_sequence"])
    assert app_metadata(info2)["next_sequence"] > nxt["next_sequence"]
    assert primitive.read(info2).num_rows == 1


def test_retry_same_sequence_same_sql_replays(primitive):
    seq = primitive.next_sequence()
    info1 = primitive.info("SELECT COUNT(*) FROM primitive WHERE a > 100", seq)
    after = primitive.next_sequence()
    info2 = primitive.info("SELECT COUNT(*) FROM primitive WHERE a > 100", seq)
    t1, t2 = info1.endpoints[0].ticket.ticket, info2.endpoints[0].ticket.ticket
    assert flightsql.ticket_correlation(t1) == flightsql.ticket_correlation(t2)
    assert primitive.next_sequence() == after, "a replay must not advance the journal"
    assert app_metadata(info1) == app_metadata(info2)
    assert primitive.read(info1).equals(primitive.read(info2))


def test_same_sequence_other_sql_is_aborted(primitive):
    seq = primitive.next_sequence()
    primitive.info("SELECT COUNT(*) FROM primitive", seq)
    with pytest.raises(pa.ArrowException) as e:
        primitive.info("SELECT SUM(a) FROM primitive", seq)
    assert "query.namespace_conflict" in str(e.value)


def test_sequence_ahead_is_a_gap_naming_the_expected(primitive):
    expected = primitive.next_sequence()
    with pytest.raises(pa.ArrowException) as e:
        primitive.info("SELECT COUNT(*) FROM primitive", expected + 10)
    assert "query.sequence_gap" in str(e.value) and f"expected {expected}" in str(e.value)
    assert primitive.next_sequence() == expected


def test_missing_sequence_is_invalid_argument(primitive):
    with pytest.raises(pa.ArrowInvalid) as e:
        primitive.info("SELECT COUNT(*) FROM primitive", None)
    assert "sequence.missing" in str(e.value)


def test_repeated_sequence_values_are_refused(primitive):
    seq = primitive.next_sequence()
    opts = primitive.options(seq, extra=[(b"x-transit-request-sequence", str(seq).encode())])
    with pytest.raises(pa.ArrowInvalid):
        primitive.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.statement_query("SELECT COUNT(*) FROM primitive")), opts)
    assert primitive.next_sequence() == seq


def test_bad_or_missing_bearer_is_unauthenticated(gateway):
    client = fl.FlightClient(gateway.uri)
    desc = fl.FlightDescriptor.for_command(flightsql.get_catalogs())
    for headers in ([], [(b"authorization", b"Bearer not-a-credential-of-this-gateway")],
                    [(b"authorization", b"Basic Zm9vOmJhcg==")]):
        with pytest.raises(fl.FlightUnauthenticatedError) as e:
            client.get_flight_info(desc, fl.FlightCallOptions(headers=headers, timeout=30))
        assert "primitive" not in str(e.value)


def test_override_headers_are_refused(primitive):
    with pytest.raises(pa.ArrowInvalid) as e:
        primitive.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.get_catalogs()),
            primitive.options(extra=[(b"x-transit-principal", b"1")]))
    assert "auth.override_header" in str(e.value)


def test_non_int64_projection_is_unimplemented_and_records_nothing(mixed):
    before = mixed.next_sequence()
    with pytest.raises(pa.ArrowNotImplementedError) as e:
        mixed.info("SELECT region FROM mixed", before)
    assert "query.unsupported" in str(e.value)
    assert mixed.next_sequence() == before


def test_non_int64_columns_filter_and_count(gateway, mixed):
    table, _ = mixed.query(
        "SELECT COUNT(*), COUNT(region), SUM(qty) FROM mixed WHERE region = 'north' AND price > 10.5")
    want = duck(gateway, "mixed",
                "SELECT COUNT(*), COUNT(region), SUM(qty) FROM T WHERE region = 'north' AND price > 10.5")
    assert [tuple(r.values()) for r in table.to_pylist()] == want


@pytest.mark.parametrize("where", [
    "region = 'it\\''s'", "region <> 'C:\\dir\\'", "region = 'north' OR'south' = region",
    "day >= DATE'2024-01-01'"])
def test_literals_read_as_duckdb_reads_them(gateway, mixed, where):
    # A backslash before a doubled quote, a keyword glued to a quote: refused until 2026-12-06.
    table, _ = mixed.query(f"SELECT COUNT(*) FROM mixed WHERE {where}")
    assert [tuple(r.values()) for r in table.to_pylist()] == \
        duck(gateway, "mixed", f"SELECT COUNT(*) FROM T WHERE {where}")


def test_forms_duckdb_reads_otherwise_are_refused_and_a_string_alias_names_as_duckdb(
        gateway, mixed):
    """DuckDB divides at //, nests block comments and names `AS 'n'` n; the parser comments,
    ends both comments at the first */ and kept the quotes (until 2026-12-06)."""
    for sql in ("SELECT COUNT(*) FROM mixed WHERE id > 100 // 7",
                "SELECT COUNT(*) FROM mixed WHERE id = 1 /* a /* b */ OR id = 2 -- */"):
        nxt = mixed.next_sequence()
        with pytest.raises(pa.ArrowNotImplementedError) as e:
            mixed.query(sql)
        assert "query.unsupported" in str(e.value)
        assert mixed.next_sequence() == nxt, "refused before upload"
    table, _ = mixed.query("SELECT COUNT(*) AS 'n' FROM mixed")
    assert table.schema.names == ["n"]
    assert [tuple(r.values()) for r in table.to_pylist()] == \
        duck(gateway, "mixed", "SELECT COUNT(*) AS 'n' FROM T")


def test_sum_overflow_is_out_of_range(cells):
    with pytest.raises(pa.ArrowException) as e:
        cells.query("SELECT SUM(huge) FROM cells")
    assert "query.arithmetic_overflow" in str(e.value)


def test_bad_cells_are_rejected_not_nulled(cells):
    with pytest.raises(pa.ArrowException) as e:
        cells.query("SELECT bad FROM cells")
    assert "query.cell_state" in str(e.value)
    table, _ = cells.query("SELECT ok FROM cells")
    assert None in table.column("ok").to_pylist()


def test_projecting_uint64_is_unimplemented_before_upload(cells):
    nxt = cells.next_sequence()
    with pytest.raises(pa.ArrowNotImplementedError) as e:
        cells.query("SELECT big FROM cells")
    assert "query.unsupported" in str(e.value) and "UINT64" in str(e.value)
    assert cells.next_sequence() == nxt, "refused before upload: no sequence consumed"
    table, _ = cells.query("SELECT COUNT(big) FROM cells WHERE big > 1")  # counted, filtered
    assert table.column(0).type == pa.int64()
