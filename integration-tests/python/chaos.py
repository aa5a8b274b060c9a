"""Chaos driver for the local cluster (issue 18; docs/deployment.md "Chaos"): client threads
send statements through the edge while a killer thread kill -9s random replicas (and runs them
again) and SIGSTOPs others for longer than the lease (zombies), then SIGCONTs them.

Threads: each client thread owns one caller (sequences are per principal, so two threads never
share one), its gRPC channel, its Flight client and its list of ``Statement`` records. The
killer thread owns the replica processes (``ChaosRun.procs``) until ``run`` joins it. The main
thread reads the records and the journal only after every thread was joined, so nothing is
shared while they run except the stop event and ``events`` (appended by the killer, read after).

A statement's first sequence is fixed before its first attempt; every retry sends that sequence
and the same SQL, through the edge, on UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED or UNKNOWN
(the outcomes that leave it undecided), within ``statement_budget_s``. Any other status, a
wrong answer or a budget run out is a failure. Its answer is checked against DuckDB run over the
publication's own Parquet files.

Used by scripts/stress-cluster (``python chaos.py``).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import grpc
import pyarrow.flight as fl

from calls import channel, info_fields, next_sequence, sql_info, ticket_of
from daemon import Cluster, Daemon, wait_until

RETRIED = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
           grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNKNOWN}
# PyArrow's DoGet errors for the same undecided outcomes.
READ_RETRIED = (fl.FlightUnavailableError, fl.FlightTimedOutError, fl.FlightCancelledError)
# Test faults for every replica (scripts/cluster passes TRANSIT_TEST_FAULTS on): each query waits
# this long before executing and again before its terminal commit, so a SIGSTOP often catches a
# replica holding a run, which is fenced once another replica took it over.
HOLD = "execution-delay-ms:150,finish-delay-ms:150"
# QueryRunner's line when a run's attempt was superseded and its result dropped unpublished.
FENCED = re.compile(r"query (\d+) attempt (\d+): fenced")


@dataclass
class Statement:
    """One statement of one client: its first sequence and SQL never change across retries."""
    caller: str
    sequence: int
    sql: str
    expected: list
    started: float = 0.0
    ended: float = 0.0
    attempts: int = 0
    correlations: set = field(default_factory=set)
    acknowledged: bool = False  # a FlightInfo came back: admitted
    ok: bool = False
    failure: str = ""


class Reference:
    """Expected answers: DuckDB over a publication's Parquet files (one connection per client
    thread; built on that thread)."""

    def __init__(self, deployment: Path, publication: str):
        cfg = json.loads((deployment / "gateway.json").read_text())
        pub = next(p for p in cfg["publications"] if p["name"] == publication)
        files = [str(deployment / f) for f in pub["files"]]
        self.con = duckdb.connect()
        self.con.execute(f"CREATE VIEW T AS SELECT * FROM read_parquet({files!r})")
        self.columns = {r[0] for r in self.con.execute("DESCRIBE T").fetchall()}
        self.rows = self.con.execute("SELECT COUNT(*) FROM T").fetchone()[0]

    def statement(self, table: str, rng: random.Random):
        """(gateway SQL, expected rows): a per-statement filter, so each answer differs."""
        if "id" in self.columns:
            lo = rng.randrange(0, max(1, self.rows - 1))
            hi = min(self.rows, lo + rng.randrange(1, 50_000))
            where = f"WHERE id >= {lo} AND id < {hi}"
            select = "COUNT(*), SUM(id)"
        else:
            where, select = "", "COUNT(*)"
        expected = [tuple(r) for r in self.con.execute(f"SELECT {select} FROM T {where}").fetchall()]
        return f"SELECT {select} FROM {table} {where}".strip(), expected

    def close(self):
        self.con.close()


class ChaosRun:
    def __init__(self, cluster: Cluster, statements: int, kills: int, stops: int, clients: int,
                 seed: int = None, attempt_timeout_s: float = 10.0,
                 statement_budget_s: float = 180.0):
        self.cluster = cluster
        self.seed = seed if seed is not None else time.time_ns() % 1_000_000
        self.callers = sorted(cluster.info["credentials"])[:clients]
        self.statements = statements
        self.kills, self.stops = kills, stops
        self.attempt_timeout_s = attempt_timeout_s
        self.statement_budget_s = statement_budget_s
        self.lease_s = cluster.info["lease_ms"] / 1000.0
        # Killer-owned until joined: replica name -> pid or the harness Daemon that reran it.
        self.procs = {r.name: r.pid for r in cluster.replicas}
        self.daemons = {}
        self.events = []  # (kind, replica, monotonic time): appended by the killer only
        self.records = {c: [] for c in self.callers}  # each list owned by its client thread
        self.done = threading.Event()  # set by run: the killer ends its plan
        self.plan_done = threading.Event()  # set by the killer when its plan is carried out
        self.errors = []

    # -- clients -------------------------------------------------------------------------------

    def _client(self, caller: str, count: int, rng: random.Random):
        edge = self.cluster.edge
        ref = Reference(self.cluster.deployment, caller)
        ch = channel(edge)
        flight = fl.FlightClient(edge.uri)
        try:
            sequence = self._first_sequence(ch, edge, caller)
            issued = 0
            # At least ``count``, and on until the killer's plan is done: every kill under load.
            while (issued < count or not self.plan_done.is_set()) and not self.done.is_set():
                issued += 1
                sql, expected = ref.statement(caller, rng)
                st = Statement(caller, sequence, sql, expected)
                self.records[caller].append(st)
                sequence = self._run(st, ch, flight, edge)
                if not st.ok:
                    return
        except Exception as e:  # noqa: BLE001 (reported by run, with the caller)
            self.errors.append(f"{caller}: {e!r}")
        finally:
            flight.close()
            ch.close()
            ref.close()

    def _first_sequence(self, ch, edge, caller) -> int:
        end = time.monotonic() + self.statement_budget_s
        while True:
            try:
                return next_sequence(ch, edge, caller)
            except grpc.RpcError as e:
                if e.code() not in RETRIED or time.monotonic() > end:
                    raise
                time.sleep(0.2)

    def _run(self, st: Statement, ch, flight, edge) -> int:
        """Runs ``st`` to its answer; returns the next statement's first sequence."""
        st.started = time.monotonic()
        deadline = st.started + self.statement_budget_s
        nxt = None
        while time.monotonic() < deadline:
            st.attempts += 1
            try:
                info = sql_info(ch, edge, st.caller, st.sql, st.sequence,
                                timeout=self.attempt_timeout_s)
                correlation, meta = info_fields(info)
                st.acknowledged = True
                st.correlations.add(correlation)
                nxt = meta["next_sequence"]
                headers = [(b"authorization", f"Bearer {edge.token(st.caller)}".encode())]
                table = flight.do_get(fl.Ticket(ticket_of(info)), fl.FlightCallOptions(
                    headers=headers, timeout=self.attempt_timeout_s)).read_all()
                rows = [tuple(r.values()) for r in table.to_pylist()]
            except grpc.RpcError as e:
                if e.code() in RETRIED:
                    time.sleep(0.1)
                    continue
                st.failure = f"{e.code().name}: {(e.details() or '')[:200]}"
                break
            except READ_RETRIED:
                time.sleep(0.1)
                continue
            except fl.FlightError as e:
                st.failure = f"DoGet {type(e).__name__}: {str(e)[:200]}"
                break
            st.ended = time.monotonic()
            if rows != st.expected:
                st.failure = f"wrong answer {rows!r}, expected {st.expected!r}"
            elif len(st.correlations) != 1:
                st.failure = f"one sequence answered by correlations {sorted(st.correlations)}"
            else:
                st.ok = True
            return nxt
        st.ended = time.monotonic()
        st.failure = st.failure or f"not answered within {self.statement_budget_s:.0f} s"
        return nxt

    # -- killer --------------------------------------------------------------------------------

    def _pid(self, name: str) -> int:
        p = self.procs[name]
        return p.pid if isinstance(p, Daemon) else p

    def _kill(self, name: str):
        pid = self._pid(name)
        os.kill(pid, signal.SIGKILL)
        self.events.append(("kill", name, time.monotonic()))
        p = self.procs[name]
        if isinstance(p, Daemon):
            p.proc.wait(30)  # our child: reaped here
        else:
            replica = next(r for r in self.cluster.replicas if r.name == name)
            wait_until(lambda: not replica.alive(), 30, f"{name} to die")
        rdir = self.cluster.state_dir / name
        # Same state directory and port, so the edge's upstream reaches it again; its lines go
        # to the replica's own log, where the fenced count is read.
        d = Daemon(rdir, configured=True, faults=self.cluster.faults,
                   log_file=rdir / "gateway.log").start(timeout=120)
        self.procs[name] = self.daemons[name] = d

    def _stop(self, name: str, rng: random.Random):
        pid = self._pid(name)
        os.kill(pid, signal.SIGSTOP)
        self.events.append(("stop", name, time.monotonic()))
        try:
            # Longer than the lease and a scan: its queries are taken over while it sleeps.
            self.done.wait(self.lease_s + 1.0 + rng.uniform(0.5, 2.0))
        finally:
            os.kill(pid, signal.SIGCONT)

    def _killer(self, rng: random.Random, pace_s: float):
        names = sorted(self.procs)
        plan = ["kill"] * self.kills + ["stop"] * self.stops
        rng.shuffle(plan)
        try:
            for action in plan:
                if self.done.wait(rng.uniform(0.5, 1.5) * pace_s):
                    return
                name = rng.choice(names)
                if action == "kill":
                    self._kill(name)
                else:
                    self._stop(name, rng)
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"killer: {e!r}")
        finally:
            self.plan_done.set()

    # -- run and verdict -----------------------------------------------------------------------

    def run(self, pace_s: float = 2.0, timeout_s: float = 3600.0) -> dict:
        rng = random.Random(self.seed)
        per = [self.statements // len(self.callers)] * len(self.callers)
        for i in range(self.statements % len(self.callers)):
            per[i] += 1
        threads = [threading.Thread(target=self._client, name=f"chaos-{c}",
                                    args=(c, n, random.Random(rng.random())))
                   for c, n in zip(self.callers, per)]
        killer = threading.Thread(target=self._killer, name="chaos-killer",
                                  args=(random.Random(rng.random()), pace_s))
        started = time.monotonic()
        for t in threads:
            t.start()
        killer.start()
        for t in threads:
            t.join(max(1.0, timeout_s - (time.monotonic() - started)))
        if any(t.is_alive() for t in threads):
            self.errors.append(f"clients still running after {timeout_s:.0f} s")
            self.done.set()
            for t in threads:
                t.join(self.statement_budget_s + 30)
        clients_done = time.monotonic()
        # The clients finished; the killer ends its plan at once or within one action.
        self.done.set()
        killer.join(180)
        assert not killer.is_alive() and not any(t.is_alive() for t in threads), "a thread hung"
        return self.verdict(time.monotonic() - started, clients_done - started)

    def verdict(self, wall_s: float, clients_s: float) -> dict:
        journal = self.cluster.journal()
        everything = [s for c in self.callers for s in self.records[c]]
        lost, duplicates, mismatched = [], 0, []
        for caller in self.callers:
            try:
                queries = journal.queries(self.cluster.principal(caller))
            except AssertionError:  # a namespace with two query rows
                duplicates += 1
                continue
            for st in self.records[caller]:
                if not st.acknowledged:
                    continue
                row = queries.get(st.sequence)
                if row is None or row[1] != "SUCCEEDED":
                    lost.append((caller, st.sequence, row))
                elif {row[0]} != st.correlations:
                    mismatched.append((caller, st.sequence, row[0], sorted(st.correlations)))
        fenced = []
        for name in self.procs:
            log = (self.cluster.state_dir / name / "gateway.log").read_text(errors="replace")
            fenced += [(int(c), int(a)) for c, a in FENCED.findall(log)]
        # A fenced attempt must not be the published one: the journal's attempt is later.
        fenced_published = [(c, a) for c, a in fenced
                            if (journal.lease(c) or (0, "", a, 0))[2] <= a]
        kills = [t for k, _, t in self.events if k == "kill"]
        stops = [t for k, _, t in self.events if k == "stop"]
        after_kill = [st.ended - t for st in everything for t in kills
                      if st.started <= t <= st.ended]
        after_stop = [st.ended - t for st in everything for t in stops
                      if st.started <= t <= st.ended]
        return {
            "seed": self.seed,
            "clients": len(self.callers),
            "callers": self.callers,
            "statements": len(everything),
            "answered": sum(s.ok for s in everything),
            "retried": sum(s.attempts > 1 for s in everything),
            "attempts": sum(s.attempts for s in everything),
            "failures": [(s.caller, s.sequence, s.failure) for s in everything if not s.ok],
            "kills": len(kills),
            "stops": len(stops),
            "duplicates": duplicates,
            "lost": lost,
            "correlation_mismatches": mismatched,
            "fenced_refused": len(fenced),
            "fenced_published": fenced_published,
            "after_kill_s": _percentiles(after_kill),
            "after_stop_s": _percentiles(after_stop),
            "lease_s": self.lease_s,
            "wall_s": round(wall_s, 1),
            "clients_s": round(clients_s, 1),
            "errors": self.errors,
            "load": os.getloadavg(),
        }

    def close(self):
        """Stops (SIGTERM) the replicas this run started again; scripts/cluster down stops the
        ones it started. Returns their exit statuses."""
        out = {}
        for name, d in self.daemons.items():
            out[name] = d.stop(timeout=60)
        return out


def _percentiles(values):
    if not values:
        return {"n": 0}
    v = sorted(values)

    def pct(p):
        return round(v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))], 2)
    return {"n": len(v), "p50": pct(50), "p99": pct(99), "max": round(v[-1], 2)}


def check(result: dict, timing: bool = True) -> list:
    """The issue's acceptance conditions over a run's result; returns the broken ones.
    ``timing`` False leaves out the p99 bound (a short run's few samples make p99 its maximum)."""
    broken = []
    if result["errors"]:
        broken.append(f"harness errors: {result['errors']}")
    if result["failures"]:
        broken.append(f"{len(result['failures'])} statements failed: {result['failures'][:5]}")
    for key in ("duplicates",):
        if result[key]:
            broken.append(f"{key}: {result[key]}")
    for key in ("lost", "correlation_mismatches", "fenced_published"):
        if result[key]:
            broken.append(f"{key}: {result[key][:5]}")
    p99 = result["after_kill_s"].get("p99")
    if timing and p99 is not None and p99 > result["lease_s"] + 5:
        broken.append(f"p99 time to result after a kill {p99} s > lease + 5 s")
    return broken


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Chaos run over a local cluster (scripts/cluster).")
    ap.add_argument("--statements", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--stops", type=int, default=20)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--pace", type=float, default=2.0, help="mean seconds between chaos actions")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--no-hold", action="store_true",
                    help=f"replicas without the test faults {HOLD} (fewer fenced runs)")
    args = ap.parse_args(argv)
    # Not under a 0700 temp root: as root, PostgreSQL runs as transit-pg (docs/deployment.md).
    c = Cluster(Path(tempfile.mkdtemp(prefix="transit-chaos-")), replicas=args.replicas,
                faults=None if args.no_hold else HOLD)
    try:
        c.up()
        run = ChaosRun(c, args.statements, args.kills, args.stops, args.clients, seed=args.seed)
        if args.clients > len(run.callers):
            print(f"chaos: {args.clients} clients asked, the deployment has"
                  f" {len(run.callers)} callers: one client per principal", file=sys.stderr)
        try:
            result = run.run(pace_s=args.pace)
        finally:
            run.close()
        print(json.dumps(result, indent=1, default=str))
        broken = check(result)
        for b in broken:
            print("FAIL: " + b, file=sys.stderr)
        return 1 if broken else 0
    finally:
        c.down()
        shutil.rmtree(c.state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
