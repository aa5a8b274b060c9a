"""scripts/bench: the gateway side by side with a PyArrow Flight server and DuckDB.

One run measures P1 (bulk DoGet), P2 (small statements), P3 (filtered aggregates), P4 (memory
under slow readers and cancelled streams) and the loopback ceiling, and writes results.json,
results.md and PNG plots into bench-results/<timestamp>/. See docs/performance.md.
"""

import argparse
import contextlib
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow

import cpu_profile
import deployment
import jfr_summary
import measure
import report
from deployment import rss_bytes

P3_QUERIES = {
    "filtered SUM": f"SELECT SUM(a) FROM {deployment.TABLE} WHERE c < 100",
    "filtered COUNT": f"SELECT COUNT(*) FROM {deployment.TABLE} WHERE b BETWEEN 1000 AND 500000",
}


def args_parser():
    p = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000_000, help="rows of the 4 x int64 Table")
    p.add_argument("--runs", type=int, default=5, help="P1 reads and P3 repetitions (median)")
    p.add_argument("--statements", type=int, default=500, help="P2 closed-loop statements")
    p.add_argument("--warmup", type=int, default=500,
                   help="P2 statements before timing (the JIT compiles the serving path meanwhile)")
    p.add_argument("--no-settle", dest="settle", action="store_false",
                   help="time P2 right after --warmup, without waiting for the JIT to go quiet")
    p.add_argument("--java-opts", default="",
                   help="more JVM options for the main daemon (probes: -Xmn…, -XX:…; use --java-opts=…)")
    p.add_argument("--warmup-reads", type=int, default=2,
                   help="untimed P1 reads of each server before timing")
    p.add_argument("--readers", type=int, default=64, help="P4 concurrent slow readers")
    p.add_argument("--reader-batches", type=int, default=16, help="batches each slow reader takes")
    p.add_argument("--reader-pause", type=float, default=0.05, help="seconds between its batches")
    p.add_argument("--cancels", type=int, default=10_000, help="P4 cancelled streams")
    p.add_argument("--cancel-threads", type=int, default=8)
    p.add_argument("--iperf-seconds", type=int, default=5)
    p.add_argument("--floor-seconds", type=float, default=2,
                   help="warm-up and then measuring time of each mandated-work figure")
    p.add_argument("--floor-rounds", type=int, default=5,
                   help="P2's timed statements and round trips come in this many rounds, each"
                        " followed by a slice of the floor's single operations")
    p.add_argument("--floor-slice-seconds", type=float, default=0.5,
                   help="measuring time of each single operation in one such slice")
    p.add_argument("--jfr", action="store_true", help="record P1's gateway reads with JFR")
    p.add_argument("--cpu-profile", action="store_true",
                   help="sample the main gateway's CPU with async-profiler (fetched from Maven"
                        " Central) and summarise it by serving path")
    p.add_argument("--out", type=Path, help="results directory (default bench-results/<UTC time>)")
    p.add_argument("--state-root", type=Path, help="where per-row-count state dirs are kept")
    return p


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gib": mem,
            "pyarrow": pyarrow.__version__, "duckdb": duckdb.__version__,
            "python": platform.python_version()}


def engine_threads() -> int:
    """The gateway's DuckDB threads by default: the processors the JVM finds (this process's
    affinity is the nearest Python sees)."""
    return len(os.sched_getaffinity(0))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Lines:
    """The lines a child process writes to its stdout pipe, each waited for at most a given time
    (select on the pipe; the pipe's own buffered reader is never used), so that a child hanging
    before its answer fails the run instead of holding it, and the daemon it measures, forever."""

    def __init__(self, proc: subprocess.Popen, what: str):
        self.fd, self.what, self.buf = proc.stdout.fileno(), what, b""

    def read(self, timeout: float) -> str:
        """The next line with its newline; what is left, possibly "", at the end of the output."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.what} wrote no answer in {timeout:g} s")
            if select.select([self.fd], [], [], left)[0]:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                self.buf += chunk
        line, newline, self.buf = self.buf.partition(b"\n")
        return (line + newline).decode()


class Peer:
    """A peer server process: the canned PyArrow server (peer_server.py) by default, or the
    DuckDB Flight SQL peer (duckdb_peer.py)."""

    # The canned peer loads the whole Table into memory before it serves: 20M rows take seconds.
    START_S = 300

    def __init__(self, parquet: Path, script: str = "peer_server.py", *extra: str):
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name(script)), "--parquet",
             str(parquet), *extra], stdout=subprocess.PIPE, text=True)
        try:
            line = Lines(self.proc, script).read(self.START_S)
        except BaseException:
            self.stop()
            raise
        if not line.startswith("serving "):
            self.stop()
            raise RuntimeError(f"{script} did not start")
        self.uri = f"grpc://127.0.0.1:{int(line.split()[1])}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def iperf(seconds: int) -> dict:
    if shutil.which("iperf3") is None:
        return {"skipped": "iperf3 not installed"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds),
                              "-J"], capture_output=True, text=True, timeout=seconds + 30)
        bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
        return {"gb_per_s": bps / 8 / 1e9, "seconds": seconds}
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(10)


def mandated_work(a, state: Path) -> dict:
    """The work the profile requires per segment and per statement, timed alone in this run.

    Runs benchmarks' MandatedWork (SHA-256 of a segment, the segment read, Ed25519 sign/verify, a
    durable and a deferred SQLite commit, DuckDB's run of the statement over the benchmark's
    Parquet file) while no server runs, in a directory on the journal's filesystem.
    """
    done = subprocess.run(mandated_command(state, "--seconds", str(a.floor_seconds)),
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"MandatedWork failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def mandated_command(state: Path, *args: str) -> list:
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") \
        else "java"
    root = deployment.ROOT
    cp = f"{root / 'benchmarks/target/benchmarks.jar'}:{root / 'benchmarks/target/lib'}/*"
    # The daemon's collector and heap pages (its launcher's cli.JvmOptions): Ed25519's garbage
    # costs the single operations what it costs the statements.
    memory = ["-XX:+UseSerialGC"]
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            if re.search(r"\[(madvise|always)\]", f.read()):
                memory.append("-XX:+UseTransparentHugePages")
    except OSError:
        pass
    return [java, "--add-opens=java.base/java.nio=ALL-UNNAMED", *memory, "-cp", cp,
            "io.transit.flight.benchmarks.MandatedWork", "--dir", str(state / "mandated-work"),
            "--parquet", str(state / "data" / "bench.parquet"), *args]


class FloorSlices:
    """MandatedWork --serve: a statement's single operations (sign, verify, durable and deferred
    commit, the engine's run), warmed up once, then timed in a slice whenever asked. P2 asks
    between its blocks, so the floor is timed in the same minutes as the statements it bounds
    (the host's speed drifts over minutes by as much as the floor target's margin;
    docs/performance.md)."""

    def __init__(self, a, state: Path):
        self.proc = subprocess.Popen(
            mandated_command(state, "--serve", "--warmup", str(a.floor_seconds),
                             "--seconds", str(a.floor_slice_seconds)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines = Lines(self.proc, "MandatedWork --serve")
        # A slice times six operations (five alone and the sequence), the warm-up as many, the
        # JVM starts first: twenty times their seconds and two minutes more is no hang.
        self.slice_s = 120 + 20 * a.floor_slice_seconds
        try:
            self._answer(120 + 20 * a.floor_seconds)  # {"ready": true} once warm
        except BaseException:
            self._kill()
            raise

    def _answer(self, timeout: float) -> dict:
        line = self.lines.read(timeout)
        if not line:
            raise RuntimeError(f"MandatedWork --serve ended ({self.proc.wait(10)})")
        return json.loads(line)

    def slice(self) -> dict:
        self.proc.stdin.write("slice\n")
        self.proc.stdin.flush()
        return self._answer(self.slice_s)

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def close(self, check: bool = True):
        """Ends it (stdin closed, then killed if it has not exited within 60 s); with ``check``
        a failed exit raises."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass  # it ended already: its exit status tells
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self._kill()
            rc = "none within 60 s; killed"
        if check and rc != 0:
            raise RuntimeError(f"MandatedWork --serve exit status: {rc}")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # While an exception unwinds, a failed exit is not raised over it.
        self.close(check=exc_type is None)


def _statements_since(gw: deployment.Daemon, line: int, since: float, expected: int) -> list:
    """The statements (``measure.statement_calls``) the daemon logged from output line ``line``
    on that started at ``since`` or later. The launcher's pump reads the daemon's output a moment
    after it is written, so this waits up to 2 s for ``expected`` of them."""
    deadline = time.monotonic() + 2
    while True:
        calls = measure.access_calls(list(gw.output)[line:])
        # A logged start is cut to the millisecond: it may read up to 1 ms early.
        pairs = [p for p in measure.statement_calls(calls) if p[0][0] >= since - 1.5e-3]
        if len(pairs) >= expected or time.monotonic() > deadline:
            return pairs
        time.sleep(0.05)


def p1_p2_p3(a, gw: deployment.Daemon, peer: Peer, sql_peer: Peer, out: Path,
             parquet: Path, state: Path) -> dict:
    client = measure.GatewayClient(gw.uri, gw.token(deployment.CALLER))
    pclient = measure.PeerClient(peer.uri)
    sclient = measure.SqlPeerClient(sql_peer.uri)
    t0 = time.perf_counter()
    info = client.info(measure.BULK_SQL)
    statement_s = time.perf_counter() - t0
    if info.total_records != a.rows:
        raise AssertionError(f"gateway answers {info.total_records} rows, expected {a.rows}")
    ticket = client.ticket(info)
    print(f"P1: statement admitted and retained in {statement_s:.2f} s; reading", flush=True)
    # Untimed reads warm caches and the JIT; each column's sum over everything each server sent
    # proves the same data (a first value alone would not see a later batch differ).
    peer_ticket = pclient.ticket(pclient.info(b"bulk"))
    for _ in range(max(1, a.warmup_reads)):
        sent_gw = measure.drain(client.reader(ticket), sums=True)
        sent_peer = measure.drain(pclient.reader(peer_ticket), sums=True)
        if (sent_gw[0], sent_gw[2]) != (sent_peer[0], sent_peer[2]):
            raise AssertionError(f"gateway and peer serve different data (rows, column sums): "
                                 f"{sent_gw[0]} {sent_gw[2]} != {sent_peer[0]} {sent_peer[2]}")
    if a.jfr:
        subprocess.run(["jcmd", str(gw.pid), "JFR.start", "name=p1", "settings=profile",
                        f"filename={out / 'p1.jfr'}"], check=True, capture_output=True)
    # The two servers' reads take turns, run by run, so both see the same minutes of the host.
    # (JFR then also records the gateway idle while the peer is read: no samples, no skew.)
    p1 = measure.bulk_doget({"gateway": (client, ticket), "peer": (pclient, peer_ticket)},
                            a.runs, a.rows)
    if a.jfr:
        subprocess.run(["jcmd", str(gw.pid), "JFR.stop", "name=p1"], check=True,
                       capture_output=True)
    p1_gw, p1_peer = p1["gateway"], p1["peer"]
    print(f"P1: gateway {p1_gw['gb_per_s']:.3f} GB/s, peer {p1_peer['gb_per_s']:.3f} GB/s",
          flush=True)

    count_sql = f"SELECT COUNT(*) FROM {deployment.TABLE}"

    def statement():
        client.query(count_sql)

    def table_types():
        client.metadata(measure.flightsql.get_table_types())

    def compiles():
        return deployment.compiles(gw.pid)

    def compiler_seconds():
        return deployment.compiler_seconds(gw.pid)

    def warm(one):
        """The fixed warm-up, then (unless --no-settle) more until the JIT is quiet."""
        for _ in range(a.warmup):
            one()
        return measure.settle(one, compiles, compiler_seconds) if a.settle else None

    settled = warm(statement)
    if settled:
        s = settled
        print(f"P2: {a.warmup} + {s['statements']} untimed statements in {s['seconds']} s, JIT "
              f"{'quiet' if s['settled'] else 'still busy at the limit'} (compiler threads' "
              f"share of each {s['block_s']:g} s block: {s['compiler_share_per_block']}; "
              f"compilations: {s['compiles_per_block']})", flush=True)
    # The gateway's own cheapest round trip: the same two RPCs, authentication and a signed,
    # verified ticket, but no admission (the P2 floor in report.floors builds on it).
    rt_settled = warm(table_types)
    # The rounds below alternate the two. Warming the round trip after the statement recompiles
    # the code they share with a wider profile, and the first statements after it then paid for
    # the JIT's next recompilation inside the timed blocks (the eighteenth round's runs: up to 31
    # of the first 100 over 1.5 × the median). Settle on the alternation itself, as a daemon
    # serving both kinds of call runs.
    mix_settled = (measure.settle(lambda: (statement(), table_types()), compiles,
                                  compiler_seconds) if a.settle else None)

    # Every statement of the rounds, timed or not, is started through started_statement, so
    # that the n-th admitted call in the daemon's access log is starts[n]; kept names the timed
    # statements of the blocks kept.
    starts, kept = [], []

    def started_statement():
        starts.append(time.time())
        statement()

    def timed_block(one, n, rewarm, jit_log, kind):
        """A closed loop's latencies, and the JIT's work during it (compilations, CPU s). A block
        in which the compiler threads used more than the settle rule's share of the wall time
        timed the JIT, not the daemon at steady state: it is recorded, set aside and run again,
        at most twice (then the last is kept, as recorded)."""
        for attempt in range(3 if a.settle else 1):
            c0, s0 = compiles(), compiler_seconds()
            t0 = time.perf_counter()
            lat = measure.closed_loop(one, n, rewarm)["latencies_ms"]
            wall = time.perf_counter() - t0
            c1, s1 = compiles(), compiler_seconds()
            share = (s1 - s0) / wall
            keep = not a.settle or share <= measure.QUIET_SHARE or attempt == 2
            jit_log.append({"kind": kind, "compiles": c1 - c0, "compiler_share": round(share, 4),
                            "kept": keep})
            if keep:
                if one is started_statement:
                    kept.extend(range(len(starts) - n, len(starts)))
                return lat

    def canned():
        pclient.reader(pclient.ticket(pclient.info(b"count"))).read_all()

    def sql_statement():
        got = sclient.query(count_sql)
        if got.num_rows != 1 or got.column(0)[0].as_py() != a.rows:
            raise AssertionError(f"the SQL peer counts {got.to_pylist()}, expected {a.rows}")

    # The peers' fixed warm-up (they have no JIT to settle), before the rounds.
    for one in (canned, sql_statement):
        for _ in range(a.warmup):
            one()

    # Timed in rounds: a block of statements, a block of round trips, a block of the canned
    # peer's round trips, a block of the SQL peer's statements and a slice of the floor's single
    # operations, so that the statement, its floor and both peers see the same minutes of the
    # host (its speed drifts over minutes by as much as a target's margin).
    rounds = max(1, a.floor_rounds)
    per = max(1, a.statements // rounds)
    stmt_lat, rt_lat, canned_lat, sql_lat, slices, jit_blocks = [], [], [], [], [], []
    block_p50 = {"statement": [], "round_trip": [], "canned": [], "sql_peer": []}
    # After a slice (or the other servers' blocks) a server has idled for seconds: its first
    # calls are ~10 % slower (caches, parked threads), so each block starts with a few untimed
    # ones, the peers' as the gateway's.
    rewarm = min(10, a.warmup)

    def block(kind, lat):
        block_p50[kind].append(measure.percentile(lat, 50))
        return lat

    # The launcher's pump may not have read the last few lines yet: start a little before.
    log_from, rounds_t0 = max(0, len(gw.output) - 200), time.time()
    with FloorSlices(a, state) as floor:
        for _ in range(rounds):
            stmt_lat += block("statement", timed_block(started_statement, per, rewarm,
                                                       jit_blocks, "statement"))
            rt_lat += block("round_trip", timed_block(table_types, per, rewarm, jit_blocks,
                                                      "round_trip"))
            canned_lat += block("canned", measure.closed_loop(canned, per, rewarm)["latencies_ms"])
            sql_lat += block("sql_peer", measure.closed_loop(sql_statement, per, rewarm)[
                "latencies_ms"])
            slices.append(floor.slice())
    pairs = _statements_since(gw, log_from, rounds_t0, len(starts))
    if len(pairs) == len(starts):
        pairs = [pairs[i] for i in kept]
    where = measure.statement_split(
        [starts[i] for i in kept], stmt_lat, pairs,
        measure.collector_pauses((out / "gateway-gc.log").read_text().splitlines()))
    p2_gw = dict(measure.summary(stmt_lat), settle=settled, mix_settle=mix_settled,
                 jit_blocks=jit_blocks, where=where, block_p50_ms=block_p50["statement"])
    p2_rt = dict(measure.summary(rt_lat), settle=rt_settled, block_p50_ms=block_p50["round_trip"])
    p2_peer = dict(measure.summary(canned_lat), block_p50_ms=block_p50["canned"])
    # A fair SQL peer: the same statement, the same client calls, DuckDB doing the SQL.
    p2_sql = dict(measure.summary(sql_lat), block_p50_ms=block_p50["sql_peer"])
    print(f"P2: gateway p50 {p2_gw['p50_ms']:.2f} ms p99 {p2_gw['p99_ms']:.2f} ms; "
          f"peer p50 {p2_peer['p50_ms']:.2f} ms p99 {p2_peer['p99_ms']:.2f} ms; gateway "
          f"GetTableTypes round trip p50 {p2_rt['p50_ms']:.2f} ms; DuckDB Flight SQL peer p50 "
          f"{p2_sql['p50_ms']:.2f} ms p99 {p2_sql['p99_ms']:.2f} ms", flush=True)

    p3 = measure.compute(client, parquet, P3_QUERIES, a.runs, sclient)
    for name, q in p3.items():
        print(f"P3 {name}: gateway {q['gateway_ms']:.1f} ms, duckdb {q['duckdb_ms']:.1f} ms, "
              f"DuckDB Flight SQL peer {q['sql_peer_ms']:.1f} ms", flush=True)
    return {"p1": {"gateway": p1_gw, "peer": p1_peer, "gateway_statement_s": statement_s,
                   "column_sums": dict(sent_gw[2] or ())},
            "p2": {"gateway": p2_gw, "peer": p2_peer, "gateway_metadata_round_trip": p2_rt,
                   "sql_peer": p2_sql, "floor_slices": slices,
                   "round_layout": ["statement", "round_trip", "canned", "sql_peer",
                                    "floor_slice"]},
            "p3": p3}


def p4(a, config: Path, log: Path, budget: int) -> dict:
    out = {"root_allocator_bytes": budget}
    # Each phase gets a fresh daemon, so the allocator peak and exit status are that phase's.
    gw = deployment.gateway(config, log)
    try:
        # Before any statement: what holding the published Table costs (footers only).
        at_start = rss_bytes(gw.pid)["rss"]
        client = measure.GatewayClient(gw.uri, gw.token(deployment.CALLER))
        ticket = client.ticket(client.info(measure.BULK_SQL))
        idle = rss_bytes(gw.pid)["rss"]
        with measure.RssSampler(gw.pid) as sampler:
            slow = measure.slow_readers(client, ticket, a.readers, a.reader_batches,
                                        a.reader_pause)
        slow.update(rss_idle_bytes=idle, rss_start_bytes=at_start, startup_s=gw.startup_s,
                    rss_samples=sampler.samples,
                    rss_peak_bytes=max([v for _, v in sampler.samples], default=idle))
    finally:
        stopped = deployment.shutdown(gw)
    slow.update(stopped)
    print(f"P4: {a.readers} slow readers: allocator peak {slow.get('allocator_peak_bytes')} B, "
          f"one stream's peak {slow.get('stream_peak_bytes')} B, "
          f"RSS peak {slow['rss_peak_bytes']} B, errors {len(slow['errors'])}", flush=True)
    out["slow"] = slow

    gw = deployment.gateway(config, log)
    try:
        client = measure.GatewayClient(gw.uri, gw.token(deployment.CALLER))
        ticket = client.ticket(client.info(measure.BULK_SQL))
        idle = rss_bytes(gw.pid)["rss"]
        with measure.RssSampler(gw.pid, 0.5) as sampler:
            cancel = measure.cancelled_streams(client, ticket, a.cancels, a.cancel_threads)
        cancel.update(rss_idle_bytes=idle, rss_after_bytes=rss_bytes(gw.pid)["rss"],
                      rss_samples=sampler.samples)
    finally:
        stopped = deployment.shutdown(gw)
    cancel.update(stopped)
    print(f"P4: {cancel['cancelled']} cancelled streams ({cancel['refused']} refused) in "
          f"{cancel['seconds']:.1f} s; exit status {cancel['exit_status']}, bytes left "
          f"{cancel['bytes_left']}", flush=True)
    out["cancel"] = cancel
    return out


def terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does: scripts/bench execs this process, so a
    SIGTERM (timeout(1), a cancelled CI job) reaches it, and without this it died at once,
    leaving the daemon, the peers and MandatedWork running. Now every finally and ExitStack
    stops them. Later SIGTERMs are ignored while that runs (timeout(1) signals its child and
    then its whole process group); a handler, not SIG_IGN, so that no child inherits it."""
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, handler)


def main() -> int:
    terminate_as_interrupt()
    a = args_parser().parse_args()
    root = deployment.ROOT
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = a.out or root / "bench-results" / stamp
    out.mkdir(parents=True, exist_ok=True)
    state = (a.state_root or root / "bench-results" / "state") / f"rows-{a.rows}"
    budget = 1 << 30
    limits = {"max_live_streams": max(64, a.readers), "root_allocator_bytes": budget}
    print(f"results: {out}\nstate:   {state} (generating data on first use)", flush=True)
    # Every run starts from an empty engine state (journal, segments): only the data file is
    # kept between runs. A journal grown by earlier runs would make runs incomparable, and one
    # created by an older build keeps that build's layout (its page size, for one).
    shutil.rmtree(state / "engine", ignore_errors=True)
    config = deployment.prepare(state, a.rows, limits)
    parquet = state / "data" / "bench.parquet"
    results = {"meta": dict(machine(), rows=a.rows, runs=a.runs, statements=a.statements,
                            warmup=a.warmup, warmup_reads=a.warmup_reads,
                            sql_peer_threads=engine_threads(),
                            started=stamp, load_before=load(), args=vars(a) | {
                                "out": str(out), "state_root": str(a.state_root)})}
    results["iperf3"] = iperf(a.iperf_seconds)
    print(f"loopback ceiling: {results['iperf3']}", flush=True)

    log = out / "gateway.log"
    collapsed = out / "gateway-cpu.collapsed"
    # The main daemon's collector and safepoint pauses with wall-clock times, so that a slow
    # statement (the access log has each call's time and duration) can be matched to a pause.
    java_opts = f"-Xlog:gc,safepoint:file={out / 'gateway-gc.log'}:time,uptime,tags"
    if a.cpu_profile:
        java_opts += " " + cpu_profile.java_option(cpu_profile.agent(root), collapsed)
    if a.java_opts:
        java_opts += " " + a.java_opts
    shutdown = {}
    # Whatever fails after the daemon started — a peer that does not start included — stops
    # what was started, in reverse order: the peers, then the daemon.
    with contextlib.ExitStack() as started:
        gw = deployment.gateway(config, log, java_opts)
        started.callback(lambda: shutdown.update(deployment.shutdown(gw)))
        peer = Peer(parquet)
        started.callback(peer.stop)
        # DuckDB gets as many threads as the gateway's engine (one per processor it may use).
        sql_peer = Peer(parquet, "duckdb_peer.py", "--table", deployment.TABLE, "--threads",
                        str(engine_threads()))
        started.callback(sql_peer.stop)
        results.update(p1_p2_p3(a, gw, peer, sql_peer, out, parquet, state))
    results["p1"]["gateway_shutdown"] = shutdown
    results["p4"] = p4(a, config, log, budget)
    results["mandated"] = mandated_work(a, state)
    print(f"mandated work alone: {results['mandated']}", flush=True)
    results["meta"]["load_after"] = load()

    (out / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    md = ["# scripts/bench results", "", report.table(results), "", report.floors(results), "",
          report.latency_targets(results), "", report.where_p2(results)]
    for png in report.plots(results, out):
        md.append(f"![{png.stem}]({png.name})")
    if a.jfr and (out / "p1.jfr").exists():
        summary = jfr_summary.summarise(out / "p1.jfr")
        (out / "p1-jfr.md").write_text(jfr_summary.markdown(summary))
        md += ["", "## Where P1's gateway time goes (JFR)", "", jfr_summary.markdown(summary)]
    if a.cpu_profile and collapsed.exists():
        cpu = cpu_profile.markdown(cpu_profile.summarise(collapsed))
        (out / "gateway-cpu.md").write_text(cpu)
        md += ["", "## Where the gateway's CPU goes (async-profiler)", "", cpu]
    (out / "results.md").write_text("\n".join(md) + "\n")
    print("\n" + report.table(results) + "\n" + report.floors(results) + "\n"
          + report.latency_targets(results) + "\n" + report.where_p2(results)
          + f"\nwritten: {out / 'results.md'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
