"""Measurements through one PyArrow Flight client, the same code path for gateway and peer."""

import datetime
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pyarrow.flight as fl

# The client package's Flight SQL encoder (clients/python), from the source tree: the bench venv
# pins its own pyarrow and does not install the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))
from transit_flight import flightsql  # noqa: E402

from deployment import COLUMNS, TABLE, rss_bytes  # noqa: E402
from percentiles import percentile  # noqa: E402,F401  (re-exported: scale.py, paired.py)

BYTES_PER_ROW = 8 * len(COLUMNS)  # logical int64 payload; the same for both servers
BULK_SQL = f"SELECT {', '.join(COLUMNS)} FROM {TABLE}"


class GatewayClient:
    """A Flight SQL caller that chains its request sequence from each answer."""

    def __init__(self, uri: str, token: str, timeout: float = 600):
        self.client = fl.FlightClient(uri)
        self.auth = (b"authorization", f"Bearer {token}".encode())
        self.timeout = timeout
        self.sequence = None

    def options(self, sequence=None):
        headers = [self.auth]
        if sequence is not None:
            headers.append((b"x-transit-request-sequence", str(sequence).encode()))
        return fl.FlightCallOptions(headers=headers, timeout=self.timeout)

    def info(self, sql: str):
        if self.sequence is None:
            result = list(self.client.do_action(fl.Action("GetSessionOptions", b""), self.options()))
            self.sequence = flightsql.session_options(result[0].body.to_pybytes())[
                "transit.next_sequence"]
        info = self.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.statement_query(sql)),
            self.options(self.sequence))
        self.sequence = json.loads(info.app_metadata)["next_sequence"]
        return info

    def ticket(self, info):
        return info.endpoints[0].ticket

    def reader(self, ticket):
        return self.client.do_get(ticket, self.options())

    def query(self, sql: str):
        return self.reader(self.ticket(self.info(sql))).read_all()

    def metadata(self, command: bytes):
        """GetFlightInfo + DoGet of a catalog command: no admission, a signed metadata ticket."""
        info = self.client.get_flight_info(fl.FlightDescriptor.for_command(command),
                                           self.options())
        return self.reader(self.ticket(info)).read_all()


class PeerClient:
    """The same two round trips against the PyArrow peer server."""

    def __init__(self, uri: str, timeout: float = 600):
        self.client = fl.FlightClient(uri)
        self.opts = fl.FlightCallOptions(timeout=timeout)

    def info(self, name: bytes):
        return self.client.get_flight_info(fl.FlightDescriptor.for_command(name), self.opts)

    def ticket(self, info):
        return info.endpoints[0].ticket

    def reader(self, ticket):
        return self.client.do_get(ticket, self.opts)


class SqlPeerClient:
    """The same Flight SQL statement calls against the DuckDB peer (duckdb_peer.py): the SQL goes
    in a CommandStatementQuery, as to the gateway, but without credentials or sequences."""

    def __init__(self, uri: str, timeout: float = 600):
        self.client = fl.FlightClient(uri)
        self.opts = fl.FlightCallOptions(timeout=timeout)

    def info(self, sql: str):
        return self.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.statement_query(sql)), self.opts)

    def ticket(self, info):
        return info.endpoints[0].ticket

    def reader(self, ticket):
        return self.client.do_get(ticket, self.opts)

    def query(self, sql: str):
        return self.reader(self.ticket(self.info(sql))).read_all()


def drain(reader, sums: bool = False) -> tuple:
    """Reads a stream to its end; returns (rows, batches, digest). With ``sums`` the digest is
    each column's name and the sum of its values over the whole stream, a cheap check that two
    servers sent the same data; without it None, so that a timed read does nothing but read."""
    rows = batches = 0
    totals = None
    for chunk in reader:
        data = chunk.data
        rows += data.num_rows
        batches += 1
        if sums:
            part = [pc.sum(column).as_py() or 0 for column in data.columns]
            totals = part if totals is None else [t + p for t, p in zip(totals, part)]
            names = data.schema.names
    return rows, batches, None if totals is None else tuple(zip(names, totals))


def bulk_doget(sides: dict, runs: int, expected_rows: int) -> dict:
    """Times ``runs`` full reads of each side's ticket (``sides``: name -> (client, ticket)), the
    sides taking turns run by run and the first of each run alternating, so that every side is
    read in the same minutes of the host (its speed drifts over minutes). Returns, per side, GB/s
    and rows/s of the median run and every run's seconds."""
    seconds = {name: [] for name in sides}
    batches = {}
    order = list(sides)
    for run in range(runs):
        for name in (order if run % 2 == 0 else order[::-1]):
            client, ticket = sides[name]
            t0 = time.perf_counter()
            rows, batches[name], _ = drain(client.reader(ticket))
            seconds[name].append(time.perf_counter() - t0)
            if rows != expected_rows:
                raise AssertionError(f"{name}: read {rows} rows, expected {expected_rows}")
    out = {}
    for name, runs_s in seconds.items():
        med = statistics.median(runs_s)
        out[name] = {"runs_s": runs_s, "median_s": med, "rows": expected_rows,
                     "batches": batches[name], "rows_per_s": expected_rows / med,
                     "gb_per_s": expected_rows * BYTES_PER_ROW / med / 1e9}
    return out


def closed_loop(one_statement, n: int, warmup: int) -> dict:
    """Runs ``one_statement`` back to back; latency percentiles in milliseconds."""
    for _ in range(warmup):
        one_statement()
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        one_statement()
        lat.append((time.perf_counter() - t0) * 1e3)
    return summary(lat)


def summary(lat: list) -> dict:
    """Latencies in milliseconds, in the order taken, with their percentiles."""
    return {"n": len(lat), "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99),
            "mean_ms": statistics.fmean(lat), "latencies_ms": lat}


def _instant(stamp: str) -> float:
    """Seconds since the epoch of a log timestamp (the access log's ``…Z``, the JVM's ``…+0000``)."""
    return datetime.datetime.fromisoformat(stamp.replace("+0000", "Z").replace("Z", "+00:00")
                                           ).timestamp()


def access_calls(lines) -> list:
    """The daemon's GetFlightInfo and DoGet calls from its text access log, in the order logged:
    (start s, end s, method, duration ms, admitted). A line is written when its call's stream
    closes, at millisecond resolution; the start is that instant less the call's duration."""
    calls = []
    for line in lines:
        m = re.match(r"(\S+) INFO  access - rpc .*method=(GetFlightInfo|DoGet) .*duration_ms=([0-9.]+)",
                     line)
        if m:
            end, ms = _instant(m.group(1)), float(m.group(3))
            calls.append((end - ms / 1e3, end, m.group(2), ms, "admission=accepted" in line))
    return calls


def collector_pauses(lines) -> list:
    """The collector's pauses from a JVM log written with ``-Xlog:gc…:time`` (other decorations
    may follow the time): (start s, end s), the end at millisecond resolution."""
    pauses = []
    for line in lines:
        m = re.match(r"\[(\S+?)\](?:\[[^\]]*\])*\s*GC\(\d+\) Pause.* ([0-9.]+)ms$", line.strip())
        if m:
            end = _instant(m.group(1))
            pauses.append((end - float(m.group(2)) / 1e3, end))
    return pauses


def statement_calls(calls: list) -> list:
    """Each admitted GetFlightInfo of ``access_calls`` with the DoGet logged after it: one
    statement's two calls, for a single closed-loop client."""
    pairs, pending = [], None
    for c in calls:
        if c[2] == "GetFlightInfo" and c[4]:
            pending = c
        elif c[2] == "DoGet" and pending is not None:
            pairs.append((pending, c))
            pending = None
    return pairs


def statement_split(starts: list, latencies_ms: list, pairs: list, pauses: list) -> dict:
    """Where each timed statement's time went, by the daemon's own account.

    ``starts`` and ``latencies_ms`` are the client's timed statements (wall-clock start, latency);
    ``pairs`` their calls (``statement_calls``) from the same stretch of the access log, in the
    same order. Returns, for GetFlightInfo, DoGet and the rest (the client, the transport and the
    hand-offs before and after the daemon's handlers) their percentiles, and how many statements
    a collector pause overlapped; or ``{"matched": 0}`` with the reason when the log does not
    line up with the statements (then nothing is inferred).
    """
    if len(pairs) != len(starts):
        return {"matched": 0, "why": f"{len(pairs)} statements in the access log, "
                                     f"{len(starts)} timed by the client"}
    # The log's instants are cut to the millisecond and written a little after each call
    # closes, so a call's logged start sits within a millisecond or so of its statement's; a
    # list shifted by one statement would sit at least a statement's latency away.
    offsets = sorted(g[0] - t for t, (g, _) in zip(starts, pairs))
    bound = max(1.2e-3, statistics.median(latencies_ms) / 2e3) if starts else 0
    if starts and abs(offsets[len(offsets) // 2]) > bound:
        return {"matched": 0, "why": f"the logged calls start {offsets[len(offsets) // 2] * 1e3:.1f} ms "
                                     "from their statements (median)"}
    gfi = [g[3] for g, _ in pairs]
    doget = [d[3] for _, d in pairs]
    rest = [ms - a - b for ms, a, b in zip(latencies_ms, gfi, doget)]

    def spread(xs):
        return {f"p{q}_ms": percentile(xs, q) for q in (50, 90, 99)}

    hit = [any(s <= t + ms / 1e3 + 5e-4 and e >= t - 5e-4 for s, e in pauses)
           for t, ms in zip(starts, latencies_ms)]
    slowest = sorted(range(len(starts)), key=lambda i: -latencies_ms[i])[:max(1, len(starts) // 100)]
    clear = [ms for ms, h in zip(latencies_ms, hit) if not h]
    return {"matched": len(pairs), "get_flight_info": spread(gfi), "do_get": spread(doget),
            "rest": spread(rest), "statement": spread(latencies_ms),
            "paused": sum(hit), "slowest": len(slowest),
            "slowest_paused": sum(hit[i] for i in slowest),
            "p99_ms_without_paused": percentile(clear, 99) if clear else None}


# The JIT is quiet while its compiler threads use at most this share of the wall time.
QUIET_SHARE = 0.02


def settle(one_statement, compiles, compiler_seconds, block_s: float = 5.0,
           quiet_share: float = QUIET_SHARE, limit_s: float = 600.0) -> dict:
    """Runs ``one_statement`` in blocks of ``block_s`` seconds until the JIT is quiet: two blocks
    in a row in which the daemon's compiler threads used less than ``quiet_share`` of the block's
    wall time (``compiler_seconds()`` is their CPU so far), or ``limit_s`` seconds. A long-running
    daemon is measured in that state. Counting compilations instead (the earlier rule: fewer
    than 20 in 200 statements) declared the JIT quiet while C2 still took a seventh of a vCPU and
    the serving code was a third dearer than its compiled state (docs/performance.md)."""
    trail, shares, ran, calm, spent = [], [], 0, 0, 0.0
    before, cpu_before = compiles(), compiler_seconds()
    while spent < limit_s and calm < 2:
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < block_s:
            one_statement()
            n += 1
        wall = time.perf_counter() - t0
        spent += wall
        ran += n
        now, cpu_now = compiles(), compiler_seconds()
        trail.append(now - before)
        shares.append(round((cpu_now - cpu_before) / wall, 4))
        before, cpu_before = now, cpu_now
        calm = calm + 1 if shares[-1] < quiet_share else 0
    return {"statements": ran, "seconds": round(spent, 1), "block_s": block_s,
            "quiet_share": quiet_share, "compiles_per_block": trail,
            "compiler_share_per_block": shares, "settled": calm >= 2}


def compute(gateway: GatewayClient, parquet: Path, queries: dict, runs: int,
            sql_peer: SqlPeerClient = None) -> dict:
    """Each query end to end through the gateway vs DuckDB in-process scanning the same Parquet
    file in place, as the gateway's engine does (a view, not a copy into memory), and, when
    given, end to end through the DuckDB Flight SQL peer (the same client calls)."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW {TABLE} AS SELECT * FROM read_parquet('{parquet}')")
    out = {}

    def checked(who, table, expected):
        if [tuple(r.values()) for r in table.to_pylist()] != expected:
            raise AssertionError(f"{name}: {who} {table.to_pylist()} != duckdb {expected}")

    for name, sql in queries.items():
        # One untimed run of each (DuckDB's gives the expected answer): every side's first run
        # of a query pays for its plan, caches and the file's metadata, and none is timed.
        expected = con.execute(sql).fetchall()
        checked("gateway", gateway.query(sql), expected)
        if sql_peer is not None:
            checked("SQL peer", sql_peer.query(sql), expected)
        gw, dk, sp = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            got = gateway.query(sql)
            gw.append(time.perf_counter() - t0)
            checked("gateway", got, expected)
            t0 = time.perf_counter()
            con.execute(sql).fetchall()
            dk.append(time.perf_counter() - t0)
            if sql_peer is not None:
                t0 = time.perf_counter()
                peer_got = sql_peer.query(sql)
                sp.append(time.perf_counter() - t0)
                checked("SQL peer", peer_got, expected)
        out[name] = {"sql": sql, "gateway_ms": statistics.median(gw) * 1e3,
                     "duckdb_ms": statistics.median(dk) * 1e3, "result": expected[0][0]}
        if sp:
            out[name]["sql_peer_ms"] = statistics.median(sp) * 1e3
    con.close()
    return out


class RssSampler:
    """Samples a process's RSS every ``interval`` seconds on a thread of its own."""

    def __init__(self, pid: int, interval: float = 0.1):
        self.pid, self.interval = pid, interval
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.perf_counter()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append((time.perf_counter() - self._t0, rss_bytes(self.pid)["rss"]))
            except OSError:
                return
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def slow_readers(gateway: GatewayClient, ticket, readers: int, batches: int,
                 pause_s: float) -> dict:
    """``readers`` concurrent streams of one ticket, each taking a batch every ``pause_s``."""
    errors = []

    def one():
        try:
            reader = gateway.reader(ticket)
            for _ in range(batches):
                reader.read_chunk()
                time.sleep(pause_s)
            reader.cancel()
        except Exception as e:  # reported, never hidden: a refused stream is a finding
            errors.append(f"{type(e).__name__}: {str(e)[:200]}")

    t0 = time.perf_counter()
    # Daemon threads with one deadline for all: a stuck stream neither holds the process open
    # nor goes unreported.
    threads = [threading.Thread(target=one, daemon=True) for _ in range(readers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 600
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = sum(t.is_alive() for t in threads)
    if stuck:
        errors.append(f"{stuck} readers still reading after 600 s")
    return {"readers": readers, "batches_each": batches, "pause_s": pause_s, "errors": errors,
            "seconds": time.perf_counter() - t0}


def cancelled_streams(gateway: GatewayClient, ticket, count: int, threads: int) -> dict:
    """Opens ``count`` streams, reads one batch of each and cancels it. A Flight error is a
    refusal (counted); any other failure is recorded in ``errors`` and the worker goes on."""
    done, refused, errors = [0], [], []
    lock = threading.Lock()
    per_thread = [count // threads + (1 if i < count % threads else 0) for i in range(threads)]

    def worker(n):
        for _ in range(n):
            try:
                reader = gateway.reader(ticket)
                reader.read_chunk()
                reader.cancel()
                with lock:
                    done[0] += 1
            except fl.FlightError as e:
                with lock:
                    refused.append(str(e)[:200])
            except Exception as e:  # a finding, never a worker that ends silently
                with lock:
                    errors.append(f"{type(e).__name__}: {str(e)[:200]}")

    t0 = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(n,), daemon=True) for n in per_thread]
    for t in pool:
        t.start()
    deadline = time.monotonic() + 3600
    for t in pool:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = sum(t.is_alive() for t in pool)
    if stuck:
        errors.append(f"{stuck} workers still running after 3600 s")
    return {"cancelled": done[0], "refused": len(refused), "refused_examples": refused[:3],
            "error_count": len(errors), "errors": errors[:20],
            "seconds": time.perf_counter() - t0}
