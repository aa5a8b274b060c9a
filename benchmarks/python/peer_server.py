"""The peer: a PyArrow (Arrow C++) Flight server serving the benchmark data from memory.

Run as its own process so the client's Python never competes with it for the GIL:

    python peer_server.py --parquet FILE [--port N]

It prints ``serving <port>`` once listening. Tickets: ``bulk`` streams the whole Table in
65,536-row batches (the gateway's rows_per_segment), ``count`` a canned 1-row COUNT(*) result.
GetFlightInfo with a CMD descriptor of either name answers one endpoint with that ticket, so a
client does the same two round trips it does against the gateway.
"""

import argparse
import sys

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.parquet as pq

BATCH_ROWS = 65_536


class PeerServer(fl.FlightServerBase):
    def __init__(self, location: str, bulk: pa.Table, count: int):
        super().__init__(location)
        self.tables = {
            b"bulk": bulk,
            b"count": pa.table({"COUNT(*)": pa.array([count], pa.int64())}),
        }

    def get_flight_info(self, context, descriptor):
        table = self.tables.get(descriptor.command)
        if table is None:
            raise fl.FlightServerError("unknown command")
        endpoint = fl.FlightEndpoint(descriptor.command, [])
        return fl.FlightInfo(table.schema, descriptor, [endpoint], table.num_rows, -1)

    def do_get(self, context, ticket):
        table = self.tables.get(ticket.ticket)
        if table is None:
            raise fl.FlightServerError("unknown ticket")
        # Served from C++: the Table's chunks are the batches on the wire.
        return fl.RecordBatchStream(table)


def load(parquet: str) -> pa.Table:
    table = pq.read_table(parquet).combine_chunks()
    return pa.Table.from_batches(table.to_batches(max_chunksize=BATCH_ROWS), table.schema)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--parquet", required=True)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    bulk = load(args.parquet)
    server = PeerServer(f"grpc://127.0.0.1:{args.port}", bulk, bulk.num_rows)
    print(f"serving {server.port}", flush=True)
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
