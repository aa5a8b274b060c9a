"""Per-statement latency with the embedded SQLite journal and the shared PostgreSQL journal.

    python benchmarks/python/journal_latency.py [--statements N] [--warmup N]

Runs the demo deployment twice — journal.kind sqlite, then postgresql on a private PostgreSQL 15
cluster on loopback (integration-tests/python/daemon.py's Postgres; needs the binaries and, as
root, the transit-pg user of scripts/setup.d/30-postgresql.sh) — and sends one statement at a
time through PyArrow with the sequence chained from each answer: GetFlightInfo (admission: four
or more journal transactions, the query run and its terminal status) then DoGet (the result
read). Prints p50/p99/max of each and the number of statements. Needs the venv of the end-to-end
tests (pyarrow) and a built gateway (mvn install -DskipTests).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "integration-tests" / "python"))
from calls import Caller, app_metadata  # noqa: E402
from daemon import Daemon, Postgres  # noqa: E402

SQL = "SELECT SUM(a), COUNT(*) FROM primitive WHERE id < {n}"


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def run(daemon, statements, warmup):
    caller = Caller(daemon, "primitive")
    try:
        sequence = caller.next_sequence()
        admit, read = [], []
        for i in range(warmup + statements):
            t0 = time.perf_counter()
            info = caller.info(SQL.format(n=1000 + i), sequence)
            t1 = time.perf_counter()
            table = caller.read(info)
            t2 = time.perf_counter()
            assert table.num_rows == 1
            sequence = app_metadata(info)["next_sequence"]
            if i >= warmup:
                admit.append(t1 - t0)
                read.append(t2 - t1)
        return admit, read
    finally:
        caller.close()


def summary(name, admit, read):
    def ms(v):
        return f"{v * 1000:7.2f}"
    total = [a + r for a, r in zip(admit, read)]
    print(f"{name:11} n={len(admit)}  GetFlightInfo p50 {ms(percentile(admit, 50))} ms"
          f"  p99 {ms(percentile(admit, 99))} ms  max {ms(max(admit))} ms |"
          f"  +DoGet p50 {ms(percentile(total, 50))} ms  p99 {ms(percentile(total, 99))} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--statements", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    args = ap.parse_args()
    if not Postgres.available():
        sys.exit(f"PostgreSQL 15 binaries missing at {Postgres.BIN}")
    with tempfile.TemporaryDirectory(prefix="journal-latency-") as tmp:
        template = Daemon.template(Path(tmp) / "template")
        pg = Postgres()
        try:
            results = {}
            for kind in ("sqlite", "postgresql"):
                overrides = {}
                if kind == "postgresql":
                    overrides["journal"] = pg.journal_config(pg.create_database())
                d = Daemon.variant(template, overrides).start()
                try:
                    results[kind] = run(d, args.statements, args.warmup)
                finally:
                    d.close()
            for kind, (admit, read) in results.items():
                summary(kind, admit, read)
        finally:
            pg.close()


if __name__ == "__main__":
    main()
