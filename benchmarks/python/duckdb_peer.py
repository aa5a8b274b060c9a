"""The SQL peer: a PyArrow Flight SQL server that runs each statement's SQL in DuckDB.

Run as its own process (no GIL shared with the client):

    python duckdb_peer.py --parquet FILE --table NAME [--port N] [--threads N]

It prints ``serving <port>`` once listening. GetFlightInfo takes a Flight SQL CMD descriptor —
the protobuf ``Any`` of a ``CommandStatementQuery`` that the gateway's callers send — runs the
query in DuckDB over a view of the Parquet file (scanned in place, as the gateway's engine does)
and keeps the Arrow result under a one-use ticket; DoGet streams it. So the client makes the
same two round trips as against the gateway, with real SQL work behind the first, unlike the
canned peer (peer_server.py), and none of the gateway's mandated work (journal, signatures,
retention). Any other command is refused (ArrowInvalid: INVALID_ARGUMENT).
"""

import argparse
import itertools
import sys
import threading
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.flight as fl

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))
from transit_flight import flightsql  # noqa: E402

STATEMENT_QUERY = "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
BATCH_ROWS = 65_536
# Results waiting for their DoGet; a client that never reads one cannot grow the server forever.
MAX_PENDING = 64


def statement_sql(command: bytes) -> str:
    """The SQL of a CommandStatementQuery wrapped in Any (field 1 type URL, field 2 value)."""
    try:
        wrapper = flightsql.parse(command)
        type_url = wrapper.get(1, [b""])[0].decode()
        value = flightsql.parse(wrapper.get(2, [b""])[0])
        sql = value.get(1, [b""])[0].decode()
    except (ValueError, IndexError, UnicodeDecodeError):
        raise pa.ArrowInvalid("the command is not a protobuf Any") from None
    if type_url != STATEMENT_QUERY or not sql:
        raise pa.ArrowInvalid("only CommandStatementQuery with a query is served")
    return sql


class DuckDbPeer(fl.FlightServerBase):
    def __init__(self, location: str, parquet: str, table: str, threads: int):
        super().__init__(location)
        self.db = duckdb.connect()
        self.db.execute(f"SET threads = {threads}")
        self.db.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{parquet}')")
        self.local = threading.local()  # one DuckDB cursor per gRPC thread (not thread-safe)
        self.ids = itertools.count(1)
        self.lock = threading.Lock()  # guards pending
        self.pending = {}

    def cursor(self):
        cur = getattr(self.local, "cursor", None)
        if cur is None:
            cur = self.local.cursor = self.db.cursor()
        return cur

    def get_flight_info(self, context, descriptor):
        if descriptor.descriptor_type != fl.DescriptorType.CMD:
            raise pa.ArrowInvalid("a CMD descriptor is expected")
        sql = statement_sql(descriptor.command)
        try:
            table = self.cursor().execute(sql).fetch_arrow_table()
        except duckdb.Error as e:
            raise fl.FlightServerError(f"duckdb: {str(e)[:120]}") from None
        ticket = b"r%d" % next(self.ids)
        with self.lock:
            if len(self.pending) >= MAX_PENDING:
                self.pending.pop(next(iter(self.pending)))
            self.pending[ticket] = table
        endpoint = fl.FlightEndpoint(ticket, [])
        return fl.FlightInfo(table.schema, descriptor, [endpoint], table.num_rows, -1)

    def do_get(self, context, ticket):
        with self.lock:
            table = self.pending.pop(ticket.ticket, None)
        if table is None:
            raise fl.FlightServerError("unknown or already read ticket")
        batches = table.to_batches(max_chunksize=BATCH_ROWS)
        return fl.RecordBatchStream(pa.Table.from_batches(batches, table.schema))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--parquet", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="DuckDB threads")
    args = p.parse_args()
    server = DuckDbPeer(f"grpc://127.0.0.1:{args.port}", args.parquet, args.table, args.threads)
    print(f"serving {server.port}", flush=True)
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
