"""Catalog metadata and the UNIMPLEMENTED surface, from PyArrow through the real daemon."""

import pyarrow as pa
import pyarrow.flight as fl
import pytest

import calls as C
import flightsql


def test_catalog_commands_show_only_the_callers_table(primitive, mixed):
    assert primitive.metadata(flightsql.get_catalogs()).column(0).to_pylist() == ["transit"]
    schemas = primitive.metadata(flightsql.get_db_schemas())
    assert schemas.schema.names == ["catalog_name", "db_schema_name"]
    tables = primitive.metadata(flightsql.get_tables())
    assert tables.column("table_name").to_pylist() == ["primitive"]
    assert mixed.metadata(flightsql.get_tables()).column("table_name").to_pylist() == ["mixed"]
    assert primitive.metadata(flightsql.get_table_types()).column(0).to_pylist() == ["TABLE"]
    assert primitive.metadata(flightsql.get_tables(table_pattern="nothing%")).num_rows == 0


def test_get_tables_include_schema(primitive, mixed):
    t = primitive.metadata(flightsql.get_tables(include_schema=True))
    schema = pa.ipc.read_schema(pa.py_buffer(t.column("table_schema")[0].as_py()))
    assert all(f.type == pa.int64() for f in schema)
    assert "id" in schema.names
    with pytest.raises(pa.ArrowNotImplementedError) as e:
        mixed.metadata(flightsql.get_tables(include_schema=True))
    assert "catalog.not_primitive" in str(e.value)


def test_sql_info(primitive):
    info = primitive.metadata(flightsql.get_sql_info([0, 3]))
    assert info.schema.names == ["info_name", "value"]
    assert sorted(info.column("info_name").to_pylist()) == [0, 3]
    with pytest.raises(pa.ArrowNotImplementedError) as e:
        primitive.metadata(flightsql.get_sql_info([0, 999]))
    assert "999" in str(e.value)


def test_filter_patterns_match_the_declared_spelling_and_say_their_escape(primitive):
    """docs/queries.md, "Identifiers": the filters do not fold case, and `\\` escapes."""
    escape = primitive.metadata(flightsql.get_sql_info([513]))  # SQL_SEARCH_STRING_ESCAPE
    assert escape.column("value").to_pylist() == ["\\"]

    def tables(pattern):
        return primitive.metadata(flightsql.get_tables(table_pattern=pattern)) \
            .column("table_name").to_pylist()

    assert tables("primitive") == tables("prim%") == tables("primitiv_") == ["primitive"]
    assert tables("PRIMITIVE") == []
    assert tables("prim\\%") == [], "an escaped % is a literal %"
    assert tables("prim\\itive") == ["primitive"], "an escaped ordinary character is itself"


def test_metadata_does_not_touch_the_journal(primitive):
    before = primitive.next_sequence()
    primitive.metadata(flightsql.get_tables(include_schema=True))
    assert primitive.next_sequence() == before


@pytest.mark.parametrize("name, body", [
    ("CommandStatementUpdate", flightsql._field_bytes(1, b"DELETE FROM primitive")),
    ("CommandGetPrimaryKeys", b""),
    ("CommandGetXdbcTypeInfo", b""),
    ("CommandStatementSubstraitPlan", b""),
    ("CommandPreparedStatementQuery", b""),
])
def test_unsupported_commands_are_unimplemented(primitive, name, body):
    command = flightsql.any_of(name, body)
    with pytest.raises(pa.ArrowNotImplementedError):
        primitive.client.get_flight_info(fl.FlightDescriptor.for_command(command), primitive.options(1))
    # The gateway's own refusal, not any UNIMPLEMENTED (a stock producer's, an unknown method's).
    with C.channel(primitive.gateway) as ch:
        got = C.failure(C.info, ch, primitive.gateway, "primitive", command, 1)
    assert (got.status, got.diagnostic["code"]) == ("UNIMPLEMENTED", "flight.unimplemented"), got
    assert name in got.message, (name, got.message)


@pytest.mark.parametrize("action", [
    "CreatePreparedStatement", "ClosePreparedStatement", "BeginTransaction", "EndTransaction",
    "BeginSavepoint", "EndSavepoint", "CancelFlightInfo", "CancelQuery",
])
def test_unsupported_actions_are_unimplemented(primitive, action):
    body = flightsql.create_prepared_statement("SELECT 1") if action == "CreatePreparedStatement" else b""
    with pytest.raises(pa.ArrowNotImplementedError):
        list(primitive.client.do_action(fl.Action(action, body), primitive.options()))
    with C.channel(primitive.gateway) as ch:
        got = C.failure(C.action, ch, primitive.gateway, "primitive", action, body)
    assert (got.status, got.diagnostic["code"]) == ("UNIMPLEMENTED", "flight.unimplemented"), got
    assert action in got.message, got.message


def test_list_actions_is_empty_and_list_flights_unimplemented(primitive):
    assert list(primitive.client.list_actions(primitive.options())) == []
    with pytest.raises(pa.ArrowNotImplementedError):
        list(primitive.client.list_flights(options=primitive.options()))
    d = primitive.gateway
    with C.channel(d) as ch:
        got = C.failure(lambda: list(ch.unary_stream(C.LIST_FLIGHTS)(
            b"", metadata=C.metadata(d, "primitive"), timeout=30)))
    assert (got.status, got.diagnostic["code"]) == ("UNIMPLEMENTED", "flight.unimplemented"), got


def test_do_put_and_do_exchange_are_unimplemented(primitive):
    desc = fl.FlightDescriptor.for_command(flightsql.statement_update("INSERT"))
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(pa.ArrowNotImplementedError):
        writer, reader = primitive.client.do_put(desc, schema, primitive.options())
        writer.write_table(pa.table({"x": [1]}))
        writer.close()
    with pytest.raises(pa.ArrowNotImplementedError):
        writer, reader = primitive.client.do_exchange(desc, primitive.options())
        writer.begin(schema)
        writer.close()
        reader.read_all()
    d = primitive.gateway
    insert = flightsql.flight_descriptor(flightsql.statement_update("INSERT"))
    first = flightsql._field_bytes(1, insert)  # FlightData.flight_descriptor
    for method in (C.DO_PUT, C.DO_EXCHANGE):
        with C.channel(d) as ch:
            got = C.failure(lambda: list(ch.stream_stream(method)(
                iter([first]), metadata=C.metadata(d, "primitive"), timeout=30)))
        assert (got.status, got.diagnostic["code"]) == ("UNIMPLEMENTED", "flight.unimplemented"), \
            (method, got)


def test_malformed_ticket_is_invalid_argument(primitive):
    with pytest.raises(pa.ArrowInvalid):
        primitive.client.do_get(fl.Ticket(b"\x00" * 250), primitive.options()).read_all()


def test_another_callers_ticket_is_refused(primitive, mixed):
    table, info = primitive.query("SELECT COUNT(*) FROM primitive")
    with pytest.raises(fl.FlightError) as e:
        mixed.client.do_get(info.endpoints[0].ticket, mixed.options()).read_all()
    assert "ticket.scope" in str(e.value) or "ticket.declaration" in str(e.value)


def test_unknown_action_is_invalid_argument(primitive):
    with pytest.raises(pa.ArrowInvalid) as e:
        list(primitive.client.do_action(fl.Action("NoSuchAction", b""), primitive.options()))
    assert "flight.unknown_action" in str(e.value)


def test_a_reused_connection_grants_nothing(gateway, primitive):
    primitive.metadata(flightsql.get_catalogs())  # authenticated on this connection...
    with pytest.raises(fl.FlightUnauthenticatedError):  # ...which proves nothing for the next call
        primitive.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.get_catalogs()),
            fl.FlightCallOptions(headers=[(b"authorization", b"Bearer tfg_not_a_real_credential_0000000000")],
                                 timeout=30))
