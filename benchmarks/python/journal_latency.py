"""Statement latency of one gateway three ways: the embedded default, the PostgreSQL journal, and
the PostgreSQL journal with retained segments in an S3-API object store.

    python benchmarks/python/journal_latency.py [--statements N] [--large N] [--warmup N]
                                                [--json FILE]

One demo deployment (``Daemon.template``) is run by ``scripts/gateway run`` three times, one
daemon at a time:

- ``embedded``: journal SQLite and segments in the state directory (the default);
- ``postgresql``: journal in a private PostgreSQL 15 cluster on loopback (daemon.py's Postgres;
  as root it needs the transit-pg user of scripts/setup.d/30-postgresql.sh), segments local;
- ``postgresql+s3``: the same journal (a database of its own) and segments in a bucket of a real
  versitygw on loopback (daemon.py's Versitygw; scripts/setup.d/30-versitygw.sh builds it).

Each sends the same statements through PyArrow, one at a time, the sequence chained from each
answer: ``--warmup`` untimed small statements, then ``--statements`` small ones (``SELECT
COUNT(*), SUM(id)`` over a range: a result far below 64 KiB, kept inline in the journal) and
``--large`` large ones (10,000 rows of ``id, a``: about 188 KB of segments, above the 64 KiB
inline bound, so written as a segment: a file, or an object in the bucket). It prints p50/p99 of
GetFlightInfo (admission, execution, retention), DoGet (the result read) and the whole statement
for each way and size; answers are checked against DuckDB over the publication's Parquet file, and
the S3 way's large results against the objects the bucket gained. Needs the venv of the end-to-end
tests (pyarrow, duckdb) and a built gateway (mvn install -DskipTests).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "integration-tests" / "python"))
from calls import Caller, app_metadata  # noqa: E402
from daemon import Daemon, Postgres, Versitygw  # noqa: E402
from percentiles import percentile  # noqa: E402

SMALL = "SELECT COUNT(*), SUM(id) FROM primitive WHERE id >= {lo} AND id < {hi}"
LARGE = "SELECT id, a FROM primitive WHERE id >= {lo} AND id < {hi}"
LARGE_ROWS = 10_000
WAYS = ("embedded", "postgresql", "postgresql+s3")


class Reference:
    """DuckDB's answers over the demo's primitive Parquet files."""

    def __init__(self, state: Path):
        cfg = json.loads((state / "gateway.json").read_text())
        pub = next(p for p in cfg["publications"] if p["name"] == "primitive")
        files = [str(state / f) for f in pub["files"]]
        self.con = duckdb.connect()
        self.con.execute(f"CREATE VIEW T AS SELECT * FROM read_parquet({files!r})")
        self.rows = self.con.execute("SELECT COUNT(*) FROM T").fetchone()[0]

    def small(self, i: int):
        lo = (i * 7919) % (self.rows - 5000)
        hi = lo + 1 + (i * 104_729) % 5000
        want = self.con.execute(f"SELECT COUNT(*), SUM(id) FROM T WHERE id >= {lo} AND id < {hi}"
                                ).fetchone()
        return SMALL.format(lo=lo, hi=hi), [tuple(want)]

    def large(self, i: int, salt: int):
        # A range no other run of this daemon asked for: each result is new content, so each is
        # written (an object store would otherwise find its content-addressed key present).
        lo = (salt + i * LARGE_ROWS) % (self.rows - LARGE_ROWS)
        want = self.con.execute(f"SELECT SUM(a) FROM T WHERE id >= {lo} AND id < {lo + LARGE_ROWS}"
                                ).fetchone()[0]
        return LARGE.format(lo=lo, hi=lo + LARGE_ROWS), want


def run(daemon, ref: Reference, statements: int, large: int, warmup: int, salt: int) -> dict:
    caller = Caller(daemon, "primitive")
    try:
        sequence = caller.next_sequence()
        out = {"small": ([], []), "large": ([], [])}

        def one(kind, sql, timed):
            nonlocal sequence
            t0 = time.perf_counter()
            info = caller.info(sql, sequence)
            t1 = time.perf_counter()
            table = caller.read(info)
            t2 = time.perf_counter()
            sequence = app_metadata(info)["next_sequence"]
            if timed:
                out[kind][0].append(t1 - t0)
                out[kind][1].append(t2 - t1)
            return table

        for i in range(warmup + statements):
            sql, want = ref.small(i)
            table = one("small", sql, i >= warmup)
            got = [tuple(r.values()) for r in table.to_pylist()]
            assert got == want, (sql, got, want)
        for i in range(large):
            sql, want = ref.large(i, salt)
            table = one("large", sql, True)
            assert table.num_rows == LARGE_ROWS and sum(table.column("a").to_pylist()) == want, sql
        return out
    finally:
        caller.close()


def summary(way: str, kind: str, admit: list, read: list) -> dict:
    total = [a + r for a, r in zip(admit, read)]

    def ms(v, q):
        return round(percentile(v, q) * 1000, 2)
    return {"way": way, "result": kind, "n": len(admit),
            "getflightinfo_p50_ms": ms(admit, 50), "getflightinfo_p99_ms": ms(admit, 99),
            "doget_p50_ms": ms(read, 50), "doget_p99_ms": ms(read, 99),
            "statement_p50_ms": ms(total, 50), "statement_p99_ms": ms(total, 99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--statements", type=int, default=300, help="timed small statements")
    ap.add_argument("--large", type=int, default=60, help="timed large statements (> 64 KiB)")
    ap.add_argument("--warmup", type=int, default=100, help="untimed small statements first")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if not Postgres.available():
        sys.exit(f"PostgreSQL 15 binaries missing at {Postgres.BIN}")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    started = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="journal-latency-") as tmp:
        template = Daemon.template(Path(tmp) / "template")
        ref = Reference(template)
        pg = Postgres()
        s3 = Versitygw(Path(tmp) / "s3").start()
        try:
            for n, way in enumerate(WAYS):
                overrides = {}
                if way != "embedded":
                    overrides["journal"] = pg.journal_config(pg.create_database())
                d = Daemon.variant(template, overrides, configured=True,
                                   object_store=s3 if way == "postgresql+s3" else None).start()
                try:
                    before = set(s3.objects("segments")) if way == "postgresql+s3" else set()
                    out = run(d, ref, args.statements, args.large, args.warmup,
                              salt=n * 97 * LARGE_ROWS)
                    if way == "postgresql+s3":
                        # Every large result became an object; no small one did (inline).
                        gained = len(set(s3.objects("segments")) - before)
                        assert gained == args.large, f"{gained} objects for {args.large} results"
                finally:
                    d.close()
                for kind in ("small", "large"):
                    rows.append(summary(way, kind, *out[kind]))
        finally:
            s3.stop()
            pg.close()
    print(f"load average at start {load}; {time.monotonic() - started:.0f} s")
    print("| way | result | n | GetFlightInfo p50 / p99 ms | DoGet p50 / p99 ms |"
          " statement p50 / p99 ms |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['way']} | {r['result']} | {r['n']} |"
              f" {r['getflightinfo_p50_ms']:.2f} / {r['getflightinfo_p99_ms']:.2f} |"
              f" {r['doget_p50_ms']:.2f} / {r['doget_p99_ms']:.2f} |"
              f" {r['statement_p50_ms']:.2f} / {r['statement_p99_ms']:.2f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_average_start": load, "rows": rows,
                                         "args": vars(args) | {"json": str(args.json)}},
                                        indent=2))


if __name__ == "__main__":
    main()
