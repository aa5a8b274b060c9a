"""Chaos driver for the local cluster (issue 18; docs/deployment.md "Chaos"): client threads
send statements through the edge while a killer thread kill -9s random replicas (and runs them
again) and SIGSTOPs others for longer than the lease (zombies), then SIGCONTs them.

Threads: each client thread owns one caller (sequences are per principal, so two threads never
share one), its gRPC channel, its Flight client and its list of ``Statement`` records. The
killer thread owns the replica processes (``ChaosRun.procs``) until ``run`` joins it. The main
thread reads the records and the journal only after every thread was joined, so nothing is
shared while they run except the stop event, ``events`` and ``errors`` (appended by the killer
and the threads it starts to run a killed replica again, read after; each such thread owns its
replica's entry in ``procs`` until the killer joins it).

A statement's first sequence is fixed before its first attempt; every retry sends that sequence
and the same SQL, through the edge, as docs/status.md says (``retried``): when the Diagnostic v1
trailer's actions say so (retry_same_sequence_and_sql, retry_later), and without a trailer on
UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED or UNKNOWN (the outcomes that leave it undecided),
within ``statement_budget_s``. Any other status, a wrong answer or a budget run out is a
failure. Its answer is checked against DuckDB run over the
publication's own Parquet files.

Used by test_cluster_chaos.py (short runs) and scripts/stress-cluster (``python chaos.py``).
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

from calls import TrailerCapture, channel, info_fields, next_sequence, seen, sql_info, ticket_of
from daemon import U64, Cluster, Daemon, close_all, wait_until

RETRIED = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
           grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNKNOWN}
# A Diagnostic v1 trailer's recovery actions (docs/status.md) under which a client sends the
# same sequence and SQL again: the gateway recorded nothing, or nothing final.
RETRY_ACTIONS = {"retry_same_sequence_and_sql", "retry_later"}
# PyArrow's DoGet errors for the same undecided outcomes.
READ_RETRIED = (fl.FlightUnavailableError, fl.FlightTimedOutError, fl.FlightCancelledError)
# Test faults for every replica (scripts/cluster passes TRANSIT_TEST_FAULTS on): each query waits
# this long before executing and again before its terminal commit, so a SIGSTOP often catches a
# replica holding a run, which is fenced once another replica took it over.
HOLD = "execution-delay-ms:150,finish-delay-ms:150"
# The Diagnostic v1 codes of a statement failed by a journal or object-store outage
# (docs/status.md): each comes with UNAVAILABLE and is retried with the same sequence and SQL.
OUTAGE_CODES = {"query.journal_unavailable", "query.segment_store_unavailable",
                "admission.unknown_outcome"}
# The edge's own answer when it had no upstream to give a call to (every replica marked failed
# for fail_timeout): gRPC maps the HTTP status to UNAVAILABLE; there is no gateway trailer.
EDGE_UNAVAILABLE = re.compile(r"Received http2 header with status: 50[234]\b")
# QueryRunner's line when a run's attempt was superseded and its result dropped unpublished.
FENCED = re.compile(r"query (\d+) attempt (\d+): fenced")
# The bound of a killed replica's start again: a JVM start (with Flyway's validation) on a
# shared 2-core machine; at load average 40 one was still starting, not hung, after 120 s.
RERUN_START_S = 300


@dataclass
class Statement:
    """One statement of one client: its first sequence and SQL never change across retries.
    ``history`` keeps every failed call (the evidence a broken condition prints)."""
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
    history: list = field(default_factory=list)  # Call, one per failed call
    answered: list = field(default_factory=list)  # Call, one per call that succeeded

    def evidence(self, t0: float, events: list) -> dict:
        """This statement as a broken condition shows it: times relative to the run's start,
        and the chaos events from 10 s before it started to its end."""
        end = self.ended or time.monotonic()
        return {"caller": self.caller, "sequence": self.sequence, "sql": self.sql,
                "expected": self.expected, "attempts": self.attempts,
                "correlations": sorted(self.correlations), "acknowledged": self.acknowledged,
                "started_s": round(self.started - t0, 2), "ended_s": round(end - t0, 2),
                "failure": self.failure,
                "calls": [c.row(t0) for c in sorted(self.history + self.answered,
                                                    key=lambda c: c.at)],
                "events": [(k, n, round(t - t0, 2)) for k, n, t in events
                           if self.started - 10 <= t <= end]}


@dataclass
class Call:
    """One failed call of a statement: which (GetFlightInfo or DoGet), when, how long, the
    status and the Diagnostic v1 code its trailer carried (None: no trailer)."""
    attempt: int
    call: str
    at: float
    took: float
    status: str
    diagnostic: str
    details: str

    def row(self, t0: float) -> tuple:
        return (self.attempt, self.call, round(self.at - t0, 2), round(self.took, 2),
                self.status, self.diagnostic, self.details)


def retried(status: str, diagnostic: dict, message: str = "") -> bool:
    """Whether a failed call is sent again with the same sequence and SQL (docs/status.md):
    with a Diagnostic v1 trailer, as its actions say (a recorded failure, outcome ``failed``,
    answers every retry the same); without one the gateway's answer never arrived (the edge, the
    client's own deadline, a reset stream), so on the statuses that leave the outcome undecided
    and on an HTTP/2 reset: nginx resets a stream whose replica died after the response began
    (RST_STREAM INTERNAL_ERROR, which gRPC reports as INTERNAL) and cannot send it elsewhere."""
    if diagnostic:
        return (diagnostic.get("outcome") != "failed"
                and bool(RETRY_ACTIONS & set(diagnostic.get("actions") or ())))
    if status in ("INTERNAL", "FlightInternalError") and "RST_STREAM" in message:
        return True
    return status in {c.name for c in RETRIED} | {e.__name__ for e in READ_RETRIED}


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

    def statement(self, table: str, rng: random.Random, large: bool = False):
        """(gateway SQL, expected rows): a per-statement filter, so each answer differs. A
        ``large`` one lists 10,000 to 20,000 ids: past the inline bound (64 KiB), so its
        segments go to the object store. Rows compare sorted (the SQL has no ORDER BY)."""
        if large and "id" in self.columns:
            lo = rng.randrange(0, max(1, self.rows - 20_000))
            where = f"WHERE id >= {lo} AND id < {lo + rng.randrange(10_000, 20_000)}"
            rows = self.con.execute(f"SELECT id FROM T {where}").fetchall()
            expected = sorted(tuple(r) for r in rows)
            return f"SELECT id FROM {table} {where}", expected
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
                 statement_budget_s: float = 180.0, pg_restarts: int = 0, s3_restarts: int = 0,
                 outage_s: float = 3.0, large_share: float = 0.0, overlap: bool = False):
        self.cluster = cluster
        # Faults back to back (the harsher plan of the earlier runs, for correctness under
        # overlapping faults; the time bound is not checked): see _killer.
        self.overlap = overlap
        self.seed = seed if seed is not None else time.time_ns() % 1_000_000
        # One client thread per caller (sequences are per principal): never fewer than asked.
        # scripts/cluster's chaos callers first, then the demo's own.
        available = sorted(cluster.info["credentials"],
                           key=lambda c: (not c.startswith("chaos_"), c))
        if len(available) < clients:
            raise ValueError(f"{clients} clients asked, the deployment has {len(available)}"
                             f" callers ({', '.join(available)}): one client per principal"
                             " (scripts/cluster up --callers M)")
        self.callers = available[:clients]
        self.statements = statements
        self.kills, self.stops = kills, stops
        # Restarts of the shared systems: PostgreSQL (pg_ctl stop, fast or immediate, then start)
        # and versitygw (kill -9, then start), each down for outage_s, same port and data.
        self.pg_restarts, self.s3_restarts, self.outage_s = pg_restarts, s3_restarts, outage_s
        # The share of statements with a result in the object store (Reference.statement).
        self.large_share = large_share
        self.attempt_timeout_s = attempt_timeout_s
        self.statement_budget_s = statement_budget_s
        self.lease_s = cluster.info["lease_ms"] / 1000.0
        # Killer-owned until joined: replica name -> pid or the harness Daemon that reran it.
        self.procs = {r.name: r.pid for r in cluster.replicas}
        self.daemons = {}
        # (kind, target, monotonic time): appended by the killer and its run-again threads
        self.events = []
        self.reruns = {}  # replica name -> its run-again thread; killer-owned
        self.rerun_threads = []  # every run-again thread started (close joins them all)
        self.killer = None  # the killer thread, once run() started it
        self.t0 = time.monotonic()  # reset by run: times in the evidence are relative to it
        self.records = {c: [] for c in self.callers}  # each list owned by its client thread
        self.done = threading.Event()  # set by run: the killer ends its plan
        self.plan_done = threading.Event()  # set by the killer when its plan is carried out
        # Set by close: a client stops retrying (a run cut short by a signal ends now, not after
        # every statement in flight spent its budget against a cluster being taken down).
        self.aborted = threading.Event()
        self.errors = []

    # -- clients -------------------------------------------------------------------------------

    def _client(self, caller: str, count: int, rng: random.Random):
        edge = self.cluster.edge
        ref = Reference(self.cluster.deployment, self.cluster.publication(caller))
        ch = channel(edge)
        trailers = TrailerCapture()
        flight = fl.FlightClient(edge.uri, middleware=[trailers])
        try:
            sequence = self._first_sequence(ch, edge, caller)
            issued = 0
            # At least ``count``, and on until the killer's plan is done: every kill under load.
            while (issued < count or not self.plan_done.is_set()) and not self.done.is_set():
                issued += 1
                sql, expected = ref.statement(self.cluster.publication(caller), rng,
                                              large=rng.random() < self.large_share)
                st = Statement(caller, sequence, sql, expected)
                self.records[caller].append(st)
                sequence = self._run(st, ch, flight, trailers, edge)
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
                if e.code() not in RETRIED or time.monotonic() > end or self.aborted.is_set():
                    raise
                time.sleep(0.2)

    def _run(self, st: Statement, ch, flight, trailers, edge) -> int:
        """Runs ``st`` to its answer; returns the next statement's first sequence."""
        st.started = time.monotonic()
        deadline = st.started + self.statement_budget_s
        nxt = None
        while time.monotonic() < deadline and not self.aborted.is_set():
            st.attempts += 1
            call, at = "GetFlightInfo", time.monotonic()
            try:
                info = sql_info(ch, edge, st.caller, st.sql, st.sequence,
                                timeout=self.attempt_timeout_s)
                correlation, meta = info_fields(info)
                st.answered.append(Call(st.attempts, call, at, time.monotonic() - at, "OK",
                                        None, ""))
                st.acknowledged = True
                st.correlations.add(correlation)
                nxt = meta["next_sequence"]
                call, at = "DoGet", time.monotonic()
                headers = [(b"authorization", f"Bearer {edge.token(st.caller)}".encode())]
                table = flight.do_get(fl.Ticket(ticket_of(info)), fl.FlightCallOptions(
                    headers=headers, timeout=self.attempt_timeout_s)).read_all()
                rows = [tuple(r.values()) for r in table.to_pylist()]
                st.answered.append(Call(st.attempts, call, at, time.monotonic() - at, "OK",
                                        None, ""))
                if len(rows) > 1:
                    rows.sort()
            except grpc.RpcError as e:
                s = seen(e)
                diag = (s.diagnostic or {}).get("code")
                st.history.append(Call(st.attempts, call, at, time.monotonic() - at, s.status,
                                       diag, s.message[:160]))
                if retried(s.status, s.diagnostic, s.message):
                    time.sleep(0.1)
                    continue
                st.failure = f"{s.status} ({diag}): {s.message[:200]}"
                break
            except fl.FlightError as e:
                raw = trailers.values[0] if trailers.values else None
                trailer = json.loads(raw) if raw else {}
                diag = trailer.get("code")
                status = type(e).__name__
                st.history.append(Call(st.attempts, call, at, time.monotonic() - at, status,
                                       diag, str(e)[:160]))
                if retried(status, trailer or None, str(e)):
                    time.sleep(0.1)
                    continue
                st.failure = f"DoGet {status} ({diag}): {str(e)[:200]}"
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

    # -- chaos ---------------------------------------------------------------------------------

    def _pid(self, name: str) -> int:
        p = self.procs[name]
        return p.pid if isinstance(p, Daemon) else p

    def _event(self, kind: str, target: str):
        self.events.append((kind, target, time.monotonic()))

    def _kill(self, name: str):
        pid = self._pid(name)
        os.kill(pid, signal.SIGKILL)
        self._event("kill", name)
        p = self.procs[name]
        if isinstance(p, Daemon):
            p.proc.wait(30)  # our child: reaped here
        else:
            replica = next(r for r in self.cluster.replicas if r.name == name)
            wait_until(lambda: not replica.alive(), 30, f"{name} to die")
        # Run again in the background (a JVM start takes seconds on a loaded machine): the plan
        # goes on with the other replicas meanwhile.
        t = threading.Thread(target=self._rerun, args=(name,), name=f"chaos-rerun-{name}")
        self.reruns[name] = t
        self.rerun_threads.append(t)
        t.start()

    def _rerun(self, name: str):
        try:
            rdir = self.cluster.state_dir / name
            # Same state directory and port, so the edge's upstream reaches it again; its lines
            # go to the replica's own log, where the fenced count is read.
            d = Daemon(rdir, configured=True, faults=self.cluster.faults,
                       log_file=rdir / "gateway.log").start(timeout=RERUN_START_S)
            self.procs[name] = self.daemons[name] = d
            # Where scripts/cluster down finds the replica's process (the killed one's PID was
            # there): it stops this one too should close() never run.
            pid_file = rdir / "pid"
            tmp = pid_file.with_suffix(".tmp")
            tmp.write_text(f"{d.pid}\n")
            os.replace(tmp, pid_file)
            self._event("rerun", name)
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"rerun of {name}: {e!r}")

    def _running(self, name: str):
        """Waits (bounded) for ``name``'s run-again to finish: its process is the one acted on."""
        t = self.reruns.pop(name, None)
        if t is not None:
            t.join(180)
            assert not t.is_alive(), f"{name} did not start again within 180 s"

    def _stop(self, name: str, rng: random.Random):
        pid = self._pid(name)
        os.kill(pid, signal.SIGSTOP)
        self._event("stop", name)
        try:
            # Longer than the lease and a scan: its queries are taken over while it sleeps.
            self.done.wait(self.lease_s + 1.0 + rng.uniform(0.5, 2.0))
        finally:
            os.kill(pid, signal.SIGCONT)
            self._event("cont", name)

    def _restart_postgres(self, rng: random.Random):
        # Both shutdowns a crash or an operator causes: fast (sessions ended, checkpoint) and
        # immediate (no checkpoint, crash recovery at the start).
        mode = rng.choice(("fast", "immediate"))
        self._event("down", f"postgres:{mode}")  # from the stop's start: sessions end at once
        self.cluster.stop_postgres(mode)
        time.sleep(self.outage_s)
        self.cluster.start_postgres()
        self._event("up", "postgres")

    def _restart_s3(self):
        self._event("down", "s3")
        self.cluster.kill_s3()
        time.sleep(self.outage_s)
        self.cluster.start_s3()
        self._event("up", "s3")

    def _killer(self, rng: random.Random, pace_s: float):
        names = sorted(self.procs)
        plan = (["kill"] * self.kills + ["stop"] * self.stops + ["postgres"] * self.pg_restarts
                + ["s3"] * self.s3_restarts)
        rng.shuffle(plan)
        try:
            for action in plan:
                # One fault at a time, as the deployment is sized for (N - 1 replicas serve):
                # every action waits until the last kill's replica runs again, then a pause, so
                # each kill is recovered from before the next fault can strike (else a replica
                # killed the moment it is back, while it takes over the previous kill's leases,
                # makes every recovery wait a lease per kill, which no lease can bound).
                # Stops and restarts hold the plan for their whole length themselves.
                # With overlap, only a kill waits for the last one's run-again (at most one
                # replica is down for a kill), after the pause: faults follow each other at once.
                if not self.overlap:
                    for n in list(self.reruns):
                        self._running(n)
                if self.done.wait(rng.uniform(0.5, 1.5) * pace_s):
                    return
                if self.overlap and action == "kill":
                    for n in list(self.reruns):
                        self._running(n)
                up = [n for n in names if n not in self.reruns or not self.reruns[n].is_alive()]
                name = rng.choice(up or names)
                self._running(name)
                if action == "kill":
                    self._kill(name)
                elif action == "stop":
                    self._stop(name, rng)
                elif action == "postgres":
                    self._restart_postgres(rng)
                else:
                    self._restart_s3()
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"killer: {e!r}")
        finally:
            try:
                for name in list(self.reruns):
                    self._running(name)
            except Exception as e:  # noqa: BLE001 (close() joins what is left)
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
        killer = self.killer = threading.Thread(target=self._killer, name="chaos-killer",
                                                args=(random.Random(rng.random()), pace_s))
        started = self.t0 = time.monotonic()
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
        """Every broken condition with its evidence (``Statement.evidence``): nothing is
        summarised away, so a failed run explains itself from its output alone."""
        journal = self.cluster.journal()
        everything = [s for c in self.callers for s in self.records[c]]
        ev = lambda st: st.evidence(self.t0, self.events)  # noqa: E731
        lost, duplicates, mismatched = [], [], []
        for caller in self.callers:
            principal = self.cluster.principal(caller)
            rows = journal._rows("SELECT namespace, correlation, state FROM queries"
                                 " WHERE principal = ?", principal)
            queries = {}
            for ns, corr, state in rows:
                ns, corr = ns & U64, corr & U64
                if ns in queries:
                    duplicates.append({"caller": caller, "sequence": ns,
                                       "rows": [queries[ns], (corr, state)]})
                queries[ns] = (corr, state)
            for st in self.records[caller]:
                if not st.acknowledged:
                    continue
                row = queries.get(st.sequence)
                if row is None or row[1] != "SUCCEEDED":
                    lost.append(dict(ev(st), journal_row=row))
                elif {row[0]} != st.correlations:
                    mismatched.append(dict(ev(st), journal_row=row))
        fenced = []
        for name in self.procs:
            log = (self.cluster.state_dir / name / "gateway.log").read_text(errors="replace")
            fenced += [(int(c), int(a)) for c, a in FENCED.findall(log)]
        # A fenced attempt must not be the published one: the journal's attempt is later. A
        # query with no row at all was admitted by a deferred submit that PostgreSQL's crash
        # (`-m immediate`) took back: nothing of it can be published, since a publication is a
        # durable commit of that row, which would have made the submit durable with it; its run
        # was fenced when the renewal found no row. Counted apart, not as published.
        leases = {c: journal.lease(c) for c, _ in fenced}
        fenced_published = [(c, a, leases[c]) for c, a in fenced
                            if leases[c] is not None and leases[c][2] <= a]
        fenced_unadmitted = sorted({c for c, _ in fenced if leases[c] is None})
        kills = [t for k, _, t in self.events if k == "kill"]
        stops = [t for k, _, t in self.events if k == "stop"]
        caught = [(st.ended - t, st) for st in everything for t in kills
                  if st.started <= t <= st.ended]
        after_kill = [d for d, _ in caught]
        # The tail explains itself: the slowest recoveries with every call and event around them.
        slowest = [dict(ev(st), after_kill_s=round(d, 2))
                   for d, st in sorted(caught, key=lambda x: -x[0])[:5]]
        # The same, for statements no other fault touched: no other kill, no replica stopped and
        # neither shared system down at any time between their start and their answer. A zombie
        # holds a call until SIGCONT, an outage until the restart and a second kill restarts the
        # takeover, whatever the first kill did, so only these measure how fast a kill alone is
        # recovered from.
        disturbed = self._disturbed_windows()
        after_kill_alone = [st.ended - t for st in everything for t in kills
                            if st.started <= t <= st.ended
                            and not any(a <= st.ended and b >= st.started
                                        for a, b in disturbed)
                            and not any(k != t and st.started <= k <= st.ended for k in kills)]
        after_stop = [st.ended - t for st in everything for t in stops
                      if st.started <= t <= st.ended]
        statuses = {}
        for st in everything:
            for c in st.history:
                key = f"{c.call} {c.status} {c.diagnostic}"
                statuses[key] = statuses.get(key, 0) + 1
        return {
            "seed": self.seed,
            "clients": len(self.callers),
            "callers": self.callers,
            "statements": len(everything),
            "answered": sum(s.ok for s in everything),
            "retried": sum(s.attempts > 1 for s in everything),
            "attempts": sum(s.attempts for s in everything),
            "failures": [ev(s) for s in everything if not s.ok],
            "kills": len(kills),
            "stops": len(stops),
            "restarts": self._outages(everything),
            "statuses": statuses,
            "duplicates": duplicates,
            "lost": lost,
            "correlation_mismatches": mismatched,
            "fenced_refused": len(fenced),
            "fenced_published": fenced_published,
            "fenced_unadmitted": fenced_unadmitted,
            "after_kill_s": _percentiles(after_kill),
            "slowest_after_kill": slowest,
            "after_kill_alone_s": _percentiles(after_kill_alone),
            "after_stop_s": _percentiles(after_stop),
            "lease_s": self.lease_s,
            "wall_s": round(wall_s, 1),
            "clients_s": round(clients_s, 1),
            "events": [(k, n, round(t - self.t0, 2)) for k, n, t in self.events],
            "errors": self.errors,
            "load": os.getloadavg(),
        }

    def _disturbed_windows(self) -> list:
        """(from, to) monotonic intervals in which a replica was stopped (SIGSTOP to SIGCONT) or
        PostgreSQL or the object store was down (stop to start)."""
        out = []
        for i, (kind, target, t) in enumerate(self.events):
            if kind not in ("stop", "down"):
                continue
            end_kind = "cont" if kind == "stop" else "up"
            same = (lambda n: n == target) if kind == "stop" else (lambda n: True)
            end = next((u for k, n, u in self.events[i + 1:] if k == end_kind and same(n)),
                       float("inf"))
            out.append((t, end))
        return out

    def _outages(self, everything: list) -> list:
        """Per PostgreSQL or object-store restart: how long it was down, the statuses of the
        calls that failed from its stop to the end of the statements it caught, the calls
        among them without a definite status (UNAVAILABLE and one of OUTAGE_CODES; a replica
        killed or stopped in that window excuses its own), and the time from the restart to
        the answer of each statement it caught (resume)."""
        out = []
        downs = [(i, e) for i, e in enumerate(self.events) if e[0] == "down"]
        for i, (_, what, down) in downs:
            up = next((t for k, _, t in self.events[i + 1:] if k == "up"), None)
            if up is None:
                continue
            caught = [st for st in everything if st.started <= up and st.ended >= down]
            until = max([st.ended for st in caught] + [up])
            replica_faults = any(k in ("kill", "stop") and down - 1 <= t <= until
                                 for k, _, t in self.events)
            statuses, indefinite = {}, []
            for st in caught:
                for c in st.history:
                    if not down <= c.at <= until:
                        continue
                    key = f"{c.call} {c.status} {c.diagnostic}"
                    statuses[key] = statuses.get(key, 0) + 1
                    definite = (c.status in ("UNAVAILABLE", "FlightUnavailableError")
                                and (c.diagnostic in OUTAGE_CODES
                                     or (c.diagnostic is None
                                         and EDGE_UNAVAILABLE.search(c.details or ""))))
                    if not definite and not replica_faults:
                        indefinite.append(dict(ev_call=c.row(self.t0), caller=st.caller,
                                               sequence=st.sequence))
            # Those answered after the restart (a statement that needed neither system, e.g. an
            # inline result during a versitygw outage, may finish while it is down).
            resumed = [st.ended - up for st in caught if st.ok and st.ended >= up]
            out.append({"what": what, "down_s": round(down - self.t0, 2),
                        "outage_s": round(up - down, 2), "caught": len(caught),
                        "statuses": statuses, "indefinite": indefinite,
                        "resume_s": _percentiles(resumed)})
        return out

    def close(self):
        """Waits (bounded) for every run-again still starting, then stops (SIGTERM) each replica
        this run started again, whatever the stops before it did; scripts/cluster down stops the
        ones it started. Returns their exit statuses."""
        self.done.set()  # the killer ends its plan (run() sets it too, unless it failed first)
        self.aborted.set()
        if self.killer is not None:  # run() may have given up on it: it may still start one
            self.killer.join(2 * RERUN_START_S)
        for t in list(self.rerun_threads):
            t.join(RERUN_START_S + 30)  # the start's own bound ends it (the JVM killed)
        out = {}

        def stopper(name, d):
            def stop():
                out[name] = d.stop(timeout=60)
            return stop

        close_all([stopper(name, d) for name, d in list(self.daemons.items())])
        hung = [t.name for t in [self.killer] + self.rerun_threads if t and t.is_alive()]
        assert not hung, f"chaos threads still running: {hung}"
        return out


def _percentiles(values):
    if not values:
        return {"n": 0}
    v = sorted(values)

    def pct(p):
        return round(v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))], 2)
    return {"n": len(v), "p50": pct(50), "p99": pct(99), "max": round(v[-1], 2)}


def check(result: dict, timing: bool = True) -> list:
    """The issue's acceptance conditions over a run's result; returns every broken one, each
    with all of its evidence (statement, caller, sequence, attempts, each failed call's status,
    diagnostic and timing, the chaos events around it)."""
    broken = []
    if result["errors"]:
        broken.append(f"harness errors: {result['errors']}")
    for f in result["failures"]:
        broken.append(f"statement failed: {json.dumps(f, default=str)}")
    for key in ("duplicates", "lost", "correlation_mismatches", "fenced_published"):
        for item in result[key]:
            broken.append(f"{key}: {json.dumps(item, default=str)}")
    for o in result["restarts"]:
        for item in o["indefinite"]:
            broken.append(f"{o['what']} restart: a call failed without a definite status:"
                          f" {json.dumps(item, default=str)}")
    p99 = result["after_kill_s"].get("p99")
    if timing and p99 is not None and p99 > result["lease_s"] + 5:
        broken.append(f"p99 time to result after a kill {p99} s > lease + 5 s:"
                      f" {result['after_kill_s']} (with no other fault in the statement's time:"
                      f" {result['after_kill_alone_s']})")
    return broken


def _interrupted(signum, frame):
    """SIGTERM, SIGHUP and SIGINT end the run as ^C does, through main's cleanup (the cluster
    taken down); once that began, another one is ignored, here and in the cleanup's children
    (scripts/cluster down), so it runs to its end."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    e = KeyboardInterrupt(f"signal {signum}")
    e.signum = signum
    raise e


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Chaos run over a local cluster (scripts/cluster).")
    ap.add_argument("--statements", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--stops", type=int, default=20)
    ap.add_argument("--pg-restarts", type=int, default=2,
                    help="PostgreSQL restarts (pg_ctl stop -m fast or immediate, then start)")
    ap.add_argument("--s3-restarts", type=int, default=2,
                    help="versitygw restarts (kill -9, then start on the same port and root)")
    ap.add_argument("--outage", type=float, default=3.0,
                    help="seconds PostgreSQL or versitygw stays down in a restart")
    ap.add_argument("--large", type=float, default=0.1,
                    help="share of statements whose result goes to the object store")
    ap.add_argument("--attempt-timeout", type=float, default=10.0,
                    help="client deadline of one GetFlightInfo or DoGet attempt, seconds")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--pace", type=float, default=2.0,
                    help="mean pause before each chaos action, once the last killed replica"
                         " runs again (one fault at a time)")
    ap.add_argument("--overlap", action="store_true",
                    help="faults back to back, without waiting for the cluster to be whole"
                         " (correctness under overlapping faults; p99 after a kill not checked)")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--no-hold", action="store_true",
                    help=f"replicas without the test faults {HOLD} (fewer fenced runs)")
    args = ap.parse_args(argv)
    # Without these a SIGTERM (a timeout, a service manager) or SIGHUP (a closed terminal) ended
    # the process past the finally below, leaving PostgreSQL, versitygw, the JVMs and nginx.
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _interrupted)
    # Not under a 0700 temp root: as root, PostgreSQL runs as transit-pg (docs/deployment.md).
    # One chaos caller per client (scripts/cluster up --callers).
    c = Cluster(Path(tempfile.mkdtemp(prefix="transit-chaos-")), replicas=args.replicas,
                faults=None if args.no_hold else HOLD, callers=args.clients)
    # Before anything starts: should this process die uncleanly after all (SIGKILL),
    # `scripts/cluster down --state-dir DIR` stops what runs.
    print(f"chaos: cluster state in {c.state_dir}", file=sys.stderr, flush=True)
    broken = ["not run"]
    try:
        c.up()
        run = ChaosRun(c, args.statements, args.kills, args.stops, args.clients, seed=args.seed,
                       pg_restarts=args.pg_restarts, s3_restarts=args.s3_restarts,
                       outage_s=args.outage, large_share=args.large,
                       attempt_timeout_s=args.attempt_timeout, overlap=args.overlap)
        try:
            result = run.run(pace_s=args.pace)
        finally:
            run.close()
        print(json.dumps(result, indent=1, default=str))
        broken = check(result, timing=not args.overlap)
        for b in broken:
            print("FAIL: " + b, file=sys.stderr)
        print(summary(result), file=sys.stderr)
        return 1 if broken else 0
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)  # the cleanup runs to its end, `down` included
        c.down()
        if broken:  # the replicas' logs stay for the evidence
            print(f"chaos: cluster state kept in {c.state_dir}", file=sys.stderr)
        else:
            shutil.rmtree(c.state_dir, ignore_errors=True)


def summary(result: dict) -> str:
    """One line: what ran and the acceptance figures."""
    k, st, a = result["after_kill_s"], result["after_stop_s"], result["after_kill_alone_s"]
    restarts = "; ".join(f"{o['what']} down {o['outage_s']} s, resume p50/max"
                         f" {o['resume_s'].get('p50')}/{o['resume_s'].get('max')} s"
                         for o in result["restarts"])
    return (f"chaos: seed {result['seed']}, {result['clients']} clients,"
            f" {result['statements']} statements ({result['answered']} answered,"
            f" {result['retried']} retried), {result['kills']} kills, {result['stops']} stops,"
            f" duplicates {len(result['duplicates'])}, lost {len(result['lost'])},"
            f" fenced {result['fenced_refused']}/{len(result['fenced_published'])} published"
            f" ({len(result['fenced_unadmitted'])} with no row),"
            f" after a kill p50/p99/max {k.get('p50')}/{k.get('p99')}/{k.get('max')} s"
            f" (n {k['n']}; with no other fault in the statement's time"
            f" {a.get('p50')}/{a.get('p99')}/{a.get('max')} s, n {a['n']}),"
            f" after a stop p50/p99 {st.get('p50')}/{st.get('p99')} s,"
            f" restarts [{restarts}], wall {result['wall_s']} s")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:  # the cleanup ran; no traceback for a stop asked for
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"chaos: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        sys.exit(128 + signum)
