"""Minimal Flight SQL message encoding over PyArrow Flight.

PyArrow speaks Flight, not Flight SQL, so commands are encoded here by hand: a protobuf ``Any``
wrapping the Flight SQL message. Only the handful of fields the gateway serves are supported.
The integration tests use this module too (integration-tests/python/flightsql.py re-exports it).
"""

import struct

SQL = "type.googleapis.com/arrow.flight.protocol.sql."


def _varint(n: int) -> bytes:
    if not 0 <= n < 1 << 64:
        raise ValueError(f"{n} is not an unsigned 64-bit varint")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_bytes(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _field_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def any_of(type_name: str, value: bytes) -> bytes:
    return _field_bytes(1, (SQL + type_name).encode()) + _field_bytes(2, value)


def statement_query(sql: str) -> bytes:
    return any_of("CommandStatementQuery", _field_bytes(1, sql.encode()))


def statement_update(sql: str) -> bytes:
    return any_of("CommandStatementUpdate", _field_bytes(1, sql.encode()))


def get_catalogs() -> bytes:
    return any_of("CommandGetCatalogs", b"")


def get_table_types() -> bytes:
    return any_of("CommandGetTableTypes", b"")


def get_db_schemas(catalog=None, pattern=None) -> bytes:
    body = b""
    if catalog is not None:
        body += _field_bytes(1, catalog.encode())
    if pattern is not None:
        body += _field_bytes(2, pattern.encode())
    return any_of("CommandGetDbSchemas", body)


def get_tables(catalog=None, schema_pattern=None, table_pattern=None, include_schema=False) -> bytes:
    body = b""
    if catalog is not None:
        body += _field_bytes(1, catalog.encode())
    if schema_pattern is not None:
        body += _field_bytes(2, schema_pattern.encode())
    if table_pattern is not None:
        body += _field_bytes(3, table_pattern.encode())
    if include_schema:
        body += _field_varint(5, 1)
    return any_of("CommandGetTables", body)


def get_sql_info(ids) -> bytes:
    body = b"".join(_field_varint(1, i) for i in ids)
    return any_of("CommandGetSqlInfo", body)


def create_prepared_statement(sql: str) -> bytes:
    return any_of("ActionCreatePreparedStatementRequest", _field_bytes(1, sql.encode()))


def parse(data: bytes):
    """Decodes one protobuf message into {field: [values]} (bytes for length-delimited)."""
    fields, i = {}, 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(data, i)
        elif wire == 1:
            value = struct.unpack_from("<q", data, i)[0]
            i += 8
        elif wire == 2:
            n, i = _read_varint(data, i)
            value = data[i:i + n]
            i += n
        elif wire == 5:
            value = struct.unpack_from("<i", data, i)[0]
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _read_varint(data: bytes, i: int):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def session_options(result_body: bytes) -> dict:
    """Decodes a GetSessionOptionsResult into {name: python value}."""
    out = {}
    for entry in parse(result_body).get(1, []):
        e = parse(entry)
        name = e[1][0].decode()
        value = parse(e[2][0])
        if 3 in value:
            out[name] = value[3][0]
        elif 1 in value:
            out[name] = value[1][0].decode()
        else:
            out[name] = value
    return out


STATEMENT_TICKET_BYTES = 250


def ticket_correlation(ticket: bytes) -> int:
    """The native correlation of an FTK1 statement ticket (tag byte 1 at offset 145)."""
    assert len(ticket) == STATEMENT_TICKET_BYTES and ticket[145] == 1
    return struct.unpack_from("<Q", ticket, 146)[0]


def flight_descriptor(command: bytes) -> bytes:
    """A Flight CMD FlightDescriptor message (type = 2) around ``command``."""
    return _field_varint(1, 2) + _field_bytes(2, command)
