"""ADBC Python DBAPI against the real daemon (Flight SQL driver 1.13.0)."""

import re

import adbc_driver_manager
import pytest

from clients import adbc_connect
from daemon import ROOT
from diagnostic_clients import decode_diagnostic

SEQ = "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
NEXT = "adbc.flight.sql.session.option.transit.next_sequence"


def connect(gateway, caller):
    return adbc_connect(gateway.uri, gateway.token(caller))


def execute(conn, sql):
    cur = conn.cursor()
    seq = conn.adbc_connection.get_option_int(NEXT)
    cur.adbc_statement.set_options(**{SEQ: str(seq)})
    cur.execute(sql)
    return cur.fetch_arrow_table()


def test_dbapi_execute_falls_back_and_reads(gateway):
    with connect(gateway, "primitive") as conn:
        t = execute(conn, "SELECT COUNT(*), SUM(a) FROM primitive")
        assert t.num_rows == 1 and t.column(0)[0].as_py() > 1_000_000 - 1
        t2 = execute(conn, "SELECT id, a FROM primitive WHERE id < 10")
        assert t2.column("id").to_pylist() == list(range(10)) or sorted(t2.column("id").to_pylist()) == list(range(10))


def test_get_objects_and_table_schema(gateway):
    with connect(gateway, "primitive") as conn:
        objects = conn.adbc_get_objects().read_all().to_pylist()
        assert objects[0]["catalog_name"] == "transit"
        tables = objects[0]["catalog_db_schemas"][0]["db_schema_tables"]
        assert [t["table_name"] for t in tables] == ["primitive"]
        schema = conn.adbc_get_table_schema("primitive", db_schema_filter="demo", catalog_filter="transit")
        assert "a" in schema.names


def test_mixed_table_schema_fails_explicitly(gateway):
    with connect(gateway, "mixed") as conn:
        with pytest.raises(adbc_driver_manager.NotSupportedError) as e:
            conn.adbc_get_table_schema("mixed", db_schema_filter="demo", catalog_filter="transit")
        assert "catalog.not_primitive" in str(e.value)


def test_error_details_carry_the_diagnostic(gateway):
    with connect(gateway, "mixed") as conn:
        cur = conn.cursor()
        cur.adbc_statement.set_options(**{SEQ: str(conn.adbc_connection.get_option_int(NEXT))})
        with pytest.raises(adbc_driver_manager.NotSupportedError) as e:
            cur.execute("SELECT region FROM mixed")
        details = {k.decode() if isinstance(k, bytes) else k: v for k, v in e.value.details}
        assert "transit-diagnostic-bin" in details
        diagnostic = decode_diagnostic(details["transit-diagnostic-bin"])
        assert diagnostic["code"] == "query.unsupported"
        assert diagnostic["status"] == "UNIMPLEMENTED"


def test_the_dbapis_get_info_reports_the_gateway(gateway):
    """adbc_get_info() asks for a fixed set that includes the Substrait versions: the gateway
    answers them (null) with the rest, so the driver reports the gateway, not its defaults."""
    with connect(gateway, "primitive") as conn:
        info = conn.adbc_get_info()
        assert info["vendor_name"] == "Transit Flight Gateway"
        pom = (ROOT / "pom.xml").read_text()
        version = re.search(r"<artifactId>transit-flight-parent</artifactId>\s*<version>"
                            r"([^<]+)</version>", pom).group(1)
        assert info["vendor_version"] == version
        assert info["driver_name"].startswith("ADBC Flight SQL Driver")


def test_a_count_of_a_cell_column_counts_values_and_refuses_invalid_cells(gateway):
    """COUNT(ok) leaves out the null cell the projection returns as NULL; COUNT(bad) reads a
    missing cell and is refused at execution, as the projection refuses it at output."""
    with connect(gateway, "cells") as conn:
        t = execute(conn, "SELECT COUNT(ok), COUNT(*) FROM cells")
        assert [c[0].as_py() for c in t.columns] == [3, 4]
        assert execute(conn, "SELECT ok FROM cells").column(0).to_pylist().count(None) == 1
        with pytest.raises(adbc_driver_manager.Error) as e:
            execute(conn, "SELECT COUNT(bad) FROM cells")
        details = {k.decode() if isinstance(k, bytes) else k: v for k, v in e.value.details}
        d = decode_diagnostic(details["transit-diagnostic-bin"])
        assert (d["code"], d["status"], d["stage"]) == \
            ("query.cell_state", "FAILED_PRECONDITION", "execution")
        assert "CELL_MISSING" in str(e.value)
