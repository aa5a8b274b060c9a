"""One interface over the three qualified clients, so each matrix check runs the same steps in each.

- ``pyarrow``: pyarrow.flight with hand-encoded Flight SQL commands (flightsql.py); the
  diagnostic trailer is read by a client middleware.
- ``adbc_py``: the ADBC Flight SQL driver through the Python DBAPI.
- ``adbc_c``: the C consumer (integration-tests/c) through the ADBC C API, one process per client,
  driven line by line.

A *client* opens *sessions*: ``client.connect(caller)`` (its own connection with the caller's
credential) or ``client.pooled(caller)`` (a connection from one pool shared by every credential of
that client). Sessions answer rows as lists of Python values; failures raise `Failure`.
"""

import json
import os
import re
import select
import subprocess
import tempfile
import time
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
from adbc_driver_flightsql import DatabaseOptions
import pyarrow as pa
import pyarrow.flight as fl

import calls
import flightsql

SEQ_OPTION = "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
NEXT_OPTION = "adbc.flight.sql.session.option.transit.next_sequence"
AUTH_OPTION = "adbc.flight.sql.authorization_header"
CODE = re.compile(r"\b([a-z_]+\.[a-z_]+): ")


class Failure(Exception):
    """A failed call: the diagnostic code and gRPC status name (from the trailer when the client exposes it)."""

    def __init__(self, code, status, message):
        super().__init__(f"{status} {code}: {message}")
        self.code, self.status, self.message = code, status, message

    @property
    def unavailable(self):
        """The transport could not reach the daemon (no gateway answer, so no diagnostic)."""
        return self.code is None and "unavailable" in self.message.lower()


def _failure(message, diagnostic_json=None):
    if diagnostic_json:
        d = json.loads(diagnostic_json)
        return Failure(d["code"], d["status"], message)
    m = CODE.search(message)
    return Failure(m.group(1) if m else None, None, message)


# ---------------------------------------------------------------------------------------- PyArrow

class PyArrowSession:
    def __init__(self, gateway, caller, client, capture):
        self.gateway, self.caller, self.client, self.capture = gateway, caller, client, capture
        self._reader = None

    def _options(self, sequence=None):
        return calls.options(self.gateway, self.caller, sequence)

    def _call(self, fn):
        try:
            return fn()
        except pa.ArrowException as e:
            raise _failure(str(e), self.capture.only()) from e

    def next_sequence(self):
        body = self._call(lambda: list(self.client.do_action(
            fl.Action("GetSessionOptions", b""), self._options()))[0].body.to_pybytes())
        return flightsql.session_options(body)["transit.next_sequence"]

    def _info(self, command, sequence=None):
        return self._call(lambda: self.client.get_flight_info(
            fl.FlightDescriptor.for_command(command), self._options(sequence)))

    def _table(self, command):
        info = self._info(command)
        return self.read_ticket(info.endpoints[0].ticket.ticket, table=True)

    def execute(self, sql, sequence):
        """The statement's ticket, without reading it."""
        return self._info(flightsql.statement_query(sql), sequence).endpoints[0].ticket.ticket

    def read_ticket(self, ticket, table=False):
        t = self._call(lambda: self.client.do_get(fl.Ticket(ticket), self._options()).read_all())
        return t if table else Result(t)

    def query(self, sql, sequence):
        return self.read_ticket(self.execute(sql, sequence))

    def open(self, sql, sequence):
        ticket = self.execute(sql, sequence)
        self._reader = self._call(lambda: self.client.do_get(fl.Ticket(ticket), self._options()))
        return self._call(lambda: self._reader.read_chunk().data.num_rows)

    def drain(self):
        rows, reader, self._reader = 0, self._reader, None

        def rest():
            n = 0
            for chunk in reader:
                n += chunk.data.num_rows
            return n

        rows = self._call(rest)
        return rows

    def catalogs(self):
        return self._table(flightsql.get_catalogs()).column(0).to_pylist()

    def db_schemas(self):
        t = self._table(flightsql.get_db_schemas())
        return list(zip(t.column("catalog_name").to_pylist(), t.column("db_schema_name").to_pylist()))

    def tables(self):
        t = self._table(flightsql.get_tables())
        return [tuple(r.values()) for r in t.select(["catalog_name", "db_schema_name", "table_name",
                                                    "table_type"]).to_pylist()]

    def table_columns(self, table):
        t = self._table(flightsql.get_tables(table_pattern=table, include_schema=True))
        schema = pa.ipc.read_schema(pa.py_buffer(t.column("table_schema")[0].as_py()))
        return [(f.name, str(f.type), f.nullable) for f in schema]

    def table_types(self):
        return self._table(flightsql.get_table_types()).column(0).to_pylist()

    def sql_info(self, ids):
        t = self._table(flightsql.get_sql_info(ids))
        return {r["info_name"]: r["value"][1] if isinstance(r["value"], tuple) else r["value"]
                for r in t.to_pylist()}

    def close(self):
        pass


class PyArrowClient:
    name = "pyarrow"

    def __init__(self, gateway):
        self.gateway = gateway
        self._pool = None

    def connect(self, caller):
        capture = calls.TrailerCapture()
        return PyArrowSession(self.gateway, caller, fl.FlightClient(self.gateway.uri, middleware=[capture]),
                              capture)

    def pooled(self, caller):
        # Every pooled session shares one FlightClient (one gRPC channel); only the header differs.
        if self._pool is None:
            capture = calls.TrailerCapture()
            self._pool = (fl.FlightClient(self.gateway.uri, middleware=[capture]), capture)
        return PyArrowSession(self.gateway, caller, *self._pool)

    def close(self):
        pass


class Result:
    """Column names and rows (lists of Python values), whichever client read them."""

    def __init__(self, table=None, names=None, rows=None):
        if table is not None:
            names = table.schema.names
            rows = [list(r.values()) for r in table.to_pylist()]
        self.names, self.rows = names, rows

    def __eq__(self, other):
        return isinstance(other, Result) and (self.names, self.rows) == (other.names, other.rows)

    def __repr__(self):
        return f"Result({self.names}, {self.rows[:5]}{'...' if len(self.rows) > 5 else ''})"


# ---------------------------------------------------------------------------------- ADBC (Python)

def adbc_connect(uri, token=None, timeout=60.0, **extra_db_kwargs):
    """The tests' one way to open an ADBC DBAPI connection: ``token`` as the bearer credential
    (None: none, as a pool's anchor), every query, fetch and update RPC bounded by ``timeout``
    seconds (the driver's default is none: a daemon that stops answering would hang the test),
    ``extra_db_kwargs`` further database options by name. ``autocommit=True``: the gateway has no
    transactions."""
    db_kwargs = {option.value: str(float(timeout)) for option in (
        DatabaseOptions.TIMEOUT_QUERY, DatabaseOptions.TIMEOUT_FETCH,
        DatabaseOptions.TIMEOUT_UPDATE)}
    if token is not None:
        db_kwargs[AUTH_OPTION] = f"Bearer {token}"
    db_kwargs.update(extra_db_kwargs)
    return flight_sql.connect(uri, db_kwargs=db_kwargs, autocommit=True)


def _adbc_failure(e):
    details = {k.decode() if isinstance(k, bytes) else k: v for k, v in (getattr(e, "details", None) or [])}
    return _failure(str(e), details.get("transit-diagnostic-bin"))


class AdbcPySession:
    def __init__(self, conn):
        self.conn = conn
        self._cursor = None

    def _call(self, fn):
        try:
            return fn()
        except adbc_driver_manager.Error as e:
            raise _adbc_failure(e) from e
        except (pa.ArrowException, OSError) as e:  # read errors on a result stream come from pyarrow
            raise _failure(str(e)) from e

    def next_sequence(self):
        return self._call(lambda: self.conn.adbc_connection.get_option_int(NEXT_OPTION))

    def _cursor_at(self, sequence):
        # A new cursor per statement: a second SetOption of the same call header appends a value.
        cur = self.conn.cursor()
        cur.adbc_statement.set_options(**{SEQ_OPTION: str(sequence)})
        return cur

    def query(self, sql, sequence):
        def run():
            with self._cursor_at(sequence) as cur:
                cur.execute(sql)
                return Result(cur.fetch_arrow_table())
        return self._call(run)

    def execute(self, sql, sequence):
        def run():
            with self._cursor_at(sequence) as cur:
                partitions, _ = cur.adbc_execute_partitions(sql)
                assert len(partitions) == 1
                return partitions[0]
        return self._call(run)

    def read_ticket(self, partition):
        def run():
            with self.conn.cursor() as cur:
                cur.adbc_read_partition(partition)
                return Result(cur.fetch_arrow_table())
        return self._call(run)

    def open(self, sql, sequence):
        cur = self._cursor_at(sequence)
        self._call(lambda: cur.execute(sql))
        self._cursor = cur
        self._reader = cur.fetch_record_batch()
        return self._call(lambda: self._reader.read_next_batch().num_rows)

    def drain(self):
        cur, reader, self._cursor = self._cursor, self._reader, None

        def rest():
            n = 0
            for batch in reader:
                n += batch.num_rows
            return n

        try:
            return self._call(rest)
        finally:
            cur.close()

    def _objects(self, depth, **filters):
        return self._call(lambda: self.conn.adbc_get_objects(depth=depth, **filters).read_all().to_pylist())

    def catalogs(self):
        return [c["catalog_name"] for c in self._objects("catalogs")]

    def db_schemas(self):
        return [(c["catalog_name"], s["db_schema_name"])
                for c in self._objects("db_schemas") for s in c["catalog_db_schemas"]]

    def tables(self):
        return [(c["catalog_name"], s["db_schema_name"], t["table_name"], t["table_type"])
                for c in self._objects("tables") for s in c["catalog_db_schemas"] for t in s["db_schema_tables"]]

    def table_columns(self, table):
        schema = self._call(lambda: self.conn.adbc_get_table_schema(
            table, db_schema_filter="demo", catalog_filter="transit"))
        return [(f.name, str(f.type), f.nullable) for f in schema]

    def table_types(self):
        return self._call(lambda: self.conn.adbc_get_table_types())

    def sql_info(self, ids):
        # The DBAPI's adbc_get_info() asks for a fixed set; the connection asks for exactly `ids`.
        handle = self._call(lambda: self.conn.adbc_connection.get_info(ids))
        table = pa.RecordBatchReader._import_from_c(handle.address).read_all()
        return {r["info_name"]: r["info_value"] for r in table.to_pylist()}

    def close(self):
        self.conn.close()


class AdbcPyClient:
    name = "adbc_py"

    def __init__(self, gateway):
        self.gateway = gateway
        self._pool = None

    def connect(self, caller):
        return AdbcPySession(adbc_connect(self.gateway.uri, self.gateway.token(caller)))

    def pooled(self, caller):
        # One AdbcDatabase without a credential (held by an anchor connection that never runs
        # anything); each clone shares it and carries its own credential as a call header.
        if self._pool is None:
            self._pool = adbc_connect(self.gateway.uri)
        with warnings.catch_warnings():
            # adbc_clone cannot pass autocommit=True, so the DBAPI warns that the (transactionless)
            # gateway cannot disable autocommit; the anchor connection was opened with it.
            warnings.simplefilter("ignore", adbc_driver_manager.Warning)
            conn = self._pool.adbc_clone()
        conn.adbc_connection.set_options(**{
            "adbc.flight.sql.rpc.call_header.authorization": f"Bearer {self.gateway.token(caller)}"})
        return AdbcPySession(conn)

    def close(self):
        if self._pool is not None:
            self._pool.close()


# ------------------------------------------------------------------------------------ ADBC (C)

class CConsumer:
    """One transit-adbc-c process; every answer awaited at most `timeout` seconds. Its standard
    error goes to a file (a pipe nobody reads would fill up and stall it), shown on failures."""

    def __init__(self, binary, driver, uri, timeout=120.0):
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([binary, driver, uri], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr)
        self.timeout = timeout
        self.slots = 0
        self._pending = b""  # read from stdout past the last answer line

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:].decode(errors="replace")

    def _exited(self):
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait(10)
        return AssertionError(f"C consumer exited ({rc}): {self.stderr()}")

    def _answer(self, verb) -> bytes:
        """The next answer line, read from the raw pipe against one deadline (readline after
        select could still block on an answer without its newline)."""
        deadline = time.monotonic() + self.timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"C consumer gave no answer to {verb} within"
                                     f" {self.timeout}s: {self.stderr()}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._exited()
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line

    def command(self, *fields):
        line = "\t".join(str(f) for f in fields)
        assert "\n" not in line
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._exited() from None
        return json.loads(self._answer(fields[0]))

    def close(self):
        try:
            try:
                self.proc.stdin.close()  # the end of its input: it closes its slots and exits
            except BrokenPipeError:
                pass
            try:
                rc = self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"C consumer did not exit within 60 s: {self.stderr()}")
            assert rc == 0, f"C consumer exited {rc}: {self.stderr()}"
        finally:
            self.proc.stdout.close()
            self._stderr.close()


class AdbcCSession:
    def __init__(self, consumer, slot):
        self.c, self.slot = consumer, slot

    def _ok(self, *fields):
        r = self.c.command(fields[0], self.slot, *fields[1:])
        if r["ok"]:
            return r
        if r.get("where") in ("usage", "values"):
            raise AssertionError(f"C consumer: {r}")
        raise _failure(r["message"], r.get("details", {}).get("transit-diagnostic-bin"))

    def next_sequence(self):
        return self._ok("next")["next_sequence"]

    def query(self, sql, sequence, expect=None):
        """With `expect` (rows), the consumer itself compares the values it read."""
        fields = ["query", sequence, sql] + ([json.dumps(expect, separators=(",", ":"))] if expect is not None else [])
        r = self._ok(*fields)
        return Result(names=[f["name"] for f in r["schema"]], rows=r["rows"])

    def execute(self, sql, sequence):
        parts = self._ok("partitions", sequence, sql)["partitions"]
        assert len(parts) == 1
        return parts[0]

    def read_ticket(self, partition):
        r = self._ok("readpart", partition)
        return Result(names=[f["name"] for f in r["schema"]], rows=r["rows"])

    def open(self, sql, sequence):
        return self._ok("open", sequence, sql)["row_count"]

    def drain(self):
        r = self.c.command("drain")
        if not r["ok"]:
            raise _failure(r["message"], r.get("details", {}).get("transit-diagnostic-bin"))
        return r["row_count"]

    def _objects(self, depth, catalog="", schema="", table=""):
        return self._ok("objects", depth, catalog, schema, table)["rows"]

    def catalogs(self):
        return [row[0] for row in self._objects(1)]

    def db_schemas(self):
        return [(row[0], s["db_schema_name"]) for row in self._objects(2) for s in row[1]]

    def tables(self):
        return [(row[0], s["db_schema_name"], t["table_name"], t["table_type"])
                for row in self._objects(3) for s in row[1] for t in s["db_schema_tables"]]

    def table_columns(self, table):
        fields = self._ok("tableschema", "transit", "demo", table)["schema"]
        names = {"l": "int64"}
        return [(f["name"], names.get(f["format"], f["format"]), f["nullable"]) for f in fields]

    def table_types(self):
        return [row[0] for row in self._ok("tabletypes")["rows"]]

    def sql_info(self, ids):
        return {row[0]: row[1] for row in self._ok("info", ",".join(map(str, ids)))["rows"]}

    def close(self):
        self._ok("close")


class AdbcCClient:
    name = "adbc_c"

    def __init__(self, gateway, binary, driver):
        self.gateway = gateway
        self.consumer = CConsumer(binary, driver, gateway.uri)
        self.next_slot = 0

    def _session(self, verb, caller):
        slot, self.next_slot = self.next_slot, self.next_slot + 1
        r = self.consumer.command(verb, slot, self.gateway.token(caller))
        assert r["ok"], r
        return AdbcCSession(self.consumer, slot)

    def connect(self, caller):
        return self._session("connect", caller)

    def pooled(self, caller):
        return self._session("attach", caller)

    def close(self):
        self.consumer.close()
