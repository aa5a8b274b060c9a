"""Statement throughput of the local cluster at N replicas, each held to an equal CPU share, and
what one statement costs PostgreSQL and the object store (docs/scaling.md).

    python benchmarks/python/scale.py [--replicas 1,2,3,4] [--cpu-per-replica 0.25]
        [--callers 16] [--client-procs 4] [--warmup-statements 1000] [--warmup 45]
        [--duration 12] [--reps 3]
        [--cost-statements 100] [--cost-large 20] [--out DIR]

For each N: ``scripts/cluster up --replicas N --callers C --callers-on primitive`` (daemon.py's Cluster: PostgreSQL,
versitygw, N replicas, the nginx edge), every replica's JVM started with
``-XX:ActiveProcessorCount=1`` and then moved, alone, into a cgroup v1 CPU group of its own with
the same quota (``cpu.cfs_quota_us`` = share × ``cpu.cfs_period_us``). PostgreSQL, versitygw,
nginx and the load clients stay outside the quotas. ``--client-procs`` processes run one thread
per caller (a caller's statements are one admission stream: its sequence is chained from each
answer), closed loop through the edge: GetFlightInfo (admission, execution, retention) then DoGet
of ``SELECT COUNT(*), SUM(id) FROM primitive WHERE id >= lo AND id < hi`` over 64 ranges, every
answer compared with DuckDB's over the publication's Parquet file. The warm-up runs before the
quotas, until ``--warmup-statements`` per replica were answered (at most ``--warmup`` s), so the
JIT is not starved; then the replicas go into their groups and, after ``--settle`` s, ``--reps``
windows of ``--duration`` seconds give the statements completed, their latency and the CPU every
part used (``/proc/PID/stat``; the groups' ``cpu.stat`` throttling).

On the first cluster, after its load and with its quota lifted, the per-statement costs: one caller, one statement at a
time, ``--cost-statements`` small (inline) and ``--cost-large`` results above 64 KiB (segments in
the bucket), with PostgreSQL logging every statement's duration for the window (ALTER SYSTEM,
reset afterwards): transactions, statements and commits per statement, how long each
transaction that locked the principal's row held it, WAL bytes (``pg_current_wal_lsn``), and the
S3 requests in versitygw's access log (``VGW_ACCESS_LOG``). An idle window of the same length
first gives the background (lease scans) to subtract.

Needs root (cgroup v1 at /sys/fs/cgroup/cpu), the cluster's parts (scripts/cluster), a built
gateway, and pyarrow, duckdb and matplotlib (the bench venv; scripts/scale-cluster makes it).
The groups are removed at the end, also after a failure, SIGTERM or SIGHUP. Writes DIR/results.json and
DIR/scaling.png (DIR defaults to bench-results/scale-<UTC time>).
"""

import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "integration-tests" / "python"))
from daemon import Cluster  # noqa: E402
from measure import GatewayClient, percentile  # noqa: E402

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
GROUP_PREFIX = "transit-scale-"
TICK = os.sysconf("SC_CLK_TCK")
SMALL = "SELECT COUNT(*), SUM(id) FROM primitive WHERE id >= {lo} AND id < {hi}"
# 10,000 rows of two int64 columns: a segment of about 188 KB, above the 64 KiB inline bound.
LARGE = "SELECT id, a FROM primitive WHERE id >= {lo} AND id < {hi}"
LARGE_ROWS = 10_000
RANGES = 64
# Refusals before admission: back-pressure of a busy or starved replica, retried by the client.
REFUSAL = re.compile(r"resource exhausted error, with message: (query\.compile_(?:busy|timeout))")


# -- CPU groups --------------------------------------------------------------------------------

class CpuGroups:
    """One cgroup v1 CPU group per replica under ``transit-scale-<this pid>``, each with the
    same quota. Not thread-safe: the driver's main thread creates, reads and removes them."""

    def __init__(self, cpus: float):
        self.parent = CGROUP_CPU / f"{GROUP_PREFIX}{os.getpid()}"
        self.cpus = cpus
        self.groups = {}

    @staticmethod
    def available() -> bool:
        return os.access(CGROUP_CPU / "cgroup.procs", os.W_OK)

    @staticmethod
    def remove_stale() -> None:
        """Groups a killed earlier run left (its pid is gone): their tasks back to the root."""
        for d in CGROUP_CPU.glob(GROUP_PREFIX + "*"):
            pid = d.name[len(GROUP_PREFIX):]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                CpuGroups._remove_tree(d)

    def add(self, name: str, pid: int) -> None:
        self.parent.mkdir(exist_ok=True)
        g = self.parent / name
        g.mkdir()
        self.groups[name] = g
        period = int((g / "cpu.cfs_period_us").read_text())
        (g / "cpu.cfs_quota_us").write_text(str(int(self.cpus * period)))
        # cgroup.procs moves every thread of the process; threads it starts later stay in.
        (g / "cgroup.procs").write_text(str(pid))

    def stat(self, name: str) -> dict:
        out = {}
        for line in (self.groups[name] / "cpu.stat").read_text().splitlines():
            k, v = line.split()
            out[k] = int(v)
        return out

    def close(self) -> None:
        if self.parent.exists():
            self._remove_tree(self.parent)
        self.groups = {}

    @staticmethod
    def _remove_tree(parent: Path) -> None:
        for g in [p for p in parent.iterdir() if p.is_dir()] + [parent]:
            for pid in (g / "cgroup.procs").read_text().split():
                try:
                    (CGROUP_CPU / "cgroup.procs").write_text(pid)
                except OSError:
                    pass  # exited meanwhile
            try:
                g.rmdir()
            except OSError as e:
                print(f"scale: could not remove {g}: {e}", file=sys.stderr)


# -- CPU accounting ----------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads); 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def machine_busy() -> tuple:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    v = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


# -- load clients ------------------------------------------------------------------------------

def client_process(uri: str, callers: list, statements: list, ready, stop, out, done):
    """One load process: a thread per (caller, token), each closed loop until ``stop``; counts
    answered statements in ``done`` as it goes and finally puts (records, errors) on ``out``: a
    record is (end monotonic, GetFlightInfo s, DoGet s). A refusal before admission
    (RESOURCE_EXHAUSTED ``query.compile_busy``: the replica's compile slots are full;
    ``query.compile_timeout``: a starved replica did not compile within its budget) is counted
    by code and the statement sent again after 50 ms; its GetFlightInfo time runs from the first
    attempt's start, so the refusals and the waits count in its latency as its caller sees it.
    Any other failure is an error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    records, errors, refused = [], [], {}
    lock = threading.Lock()

    def loop(index: int, token: str):
        client = GatewayClient(uri, token, timeout=60)
        mine, bad, busy = [], [], {}
        i = index * 7
        first = None  # the start of a refused statement's first attempt
        while not stop.is_set():
            sql, expected = statements[i % len(statements)]
            i += 1
            try:
                t0 = first = time.monotonic() if first is None else first
                info = client.info(sql)
                t1 = time.monotonic()
                table = client.reader(client.ticket(info)).read_all()
                t2 = time.monotonic()
                first = None
                got = tuple(table.to_pylist()[0].values())
                if got != expected:
                    bad.append(f"wrong answer to {sql}: {got} != {expected}")
                    continue
                mine.append((t2, t1 - t0, t2 - t1))
                with done.get_lock():
                    done.value += 1
            except Exception as e:  # counted and shown: a failed statement is a finding
                client.sequence = None  # read the next sequence again before the next one
                code = REFUSAL.search(str(e))
                if code:
                    busy[code.group(1)] = busy.get(code.group(1), 0) + 1
                    i -= 1
                    time.sleep(0.05)
                    continue
                first = None
                bad.append(f"{type(e).__name__}: {str(e)[:200]}")
                time.sleep(0.1)
        with lock:
            records.extend(mine)
            errors.extend(bad)
            for k, v in busy.items():
                refused[k] = refused.get(k, 0) + v

    threads = [threading.Thread(target=loop, args=(k, tok), daemon=True)
               for k, (_, tok) in enumerate(callers)]
    for t in threads:
        t.start()
    ready.set()
    stop.wait()
    for t in threads:
        t.join(90)
    out.put((records, errors, refused))


def reference(deployment: Path) -> tuple:
    """(small statements, large statement factory): the SQL with DuckDB's answer over the
    primitive publication's Parquet files."""
    cfg = json.loads((deployment / "gateway.json").read_text())
    pub = next(p for p in cfg["publications"] if p["name"] == "primitive")
    con = duckdb.connect()
    files = [str(deployment / f) for f in pub["files"]]
    con.execute(f"CREATE VIEW T AS SELECT * FROM read_parquet({files!r})")
    rows = con.execute("SELECT COUNT(*) FROM T").fetchone()[0]
    small = []
    for k in range(RANGES):
        lo = (k * 15_485_863) % (rows - 50_000)
        hi = lo + 1 + (k * 7919) % 50_000
        expected = con.execute(f"SELECT COUNT(*), SUM(id) FROM T WHERE id >= {lo} AND id < {hi}"
                               ).fetchone()
        small.append((SMALL.format(lo=lo, hi=hi), tuple(expected)))
    con.close()
    return small, rows


# -- one cluster -------------------------------------------------------------------------------

class Sampler:
    """Counters at a window's edges: CPU seconds of every part, the groups' throttling, the
    machine, PostgreSQL's commits and WAL position."""

    def __init__(self, cluster: Cluster, groups: CpuGroups, clients: list):
        self.cluster, self.groups, self.clients = cluster, groups, clients
        self.journal = cluster.journal()
        self.pg_pid = cluster.info["postgres"]["pid"]
        self.edge_pid = cluster.info["edge"]["pid"]
        self.s3_pid = cluster.info["s3"]["pid"]

    def sample(self) -> dict:
        pg = [self.pg_pid] + children(self.pg_pid)
        edge = [self.edge_pid] + children(self.edge_pid)
        commits, lsn, conns = self.journal.query(
            "SELECT xact_commit, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,"
            " (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'transit-flight')"
            " FROM pg_stat_database WHERE datname = current_database()")[0]
        return {
            "t": time.monotonic(),
            "replicas": {r.name: cpu_seconds(r.pid) for r in self.cluster.replicas},
            "cgroups": {r.name: self.groups.stat(r.name) for r in self.cluster.replicas},
            "postgres": sum(cpu_seconds(p) for p in pg),
            "edge": sum(cpu_seconds(p) for p in edge),
            "versitygw": cpu_seconds(self.s3_pid),
            "clients": sum(cpu_seconds(p.pid) for p in self.clients),
            "machine": machine_busy(),
            "xact_commit": int(commits),
            "wal_bytes": int(lsn),
            "gateway_connections": int(conns),
        }


def window(records: list, a: dict, b: dict, cpus: float) -> dict:
    """Figures of the statements completed between samples ``a`` and ``b``."""
    secs = b["t"] - a["t"]
    inside = [r for r in records if a["t"] <= r[0] < b["t"]]
    total = [(g + d) * 1e3 for _, g, d in inside]
    gfi = [g * 1e3 for _, g, _ in inside]
    doget = [d * 1e3 for _, _, d in inside]
    n = len(inside)
    busy = (b["machine"][0] - a["machine"][0]) / max(1, b["machine"][1] - a["machine"][1])

    def used(key):
        return (b[key] - a[key]) / secs

    replicas = {}
    for name in b["replicas"]:
        ca, cb = a["cgroups"][name], b["cgroups"][name]
        periods = cb["nr_periods"] - ca["nr_periods"]
        replicas[name] = {
            "cpus_used": (b["replicas"][name] - a["replicas"][name]) / secs,
            "of_quota": (b["replicas"][name] - a["replicas"][name]) / secs / cpus,
            "throttled_periods": (cb["nr_throttled"] - ca["nr_throttled"]) / max(1, periods),
        }
    return {
        "seconds": secs, "statements": n, "statements_per_s": n / secs,
        "p50_ms": percentile(total, 50) if n else None,
        "p99_ms": percentile(total, 99) if n else None,
        "getflightinfo_p50_ms": percentile(gfi, 50) if n else None,
        "getflightinfo_p99_ms": percentile(gfi, 99) if n else None,
        "doget_p50_ms": percentile(doget, 50) if n else None,
        "doget_p99_ms": percentile(doget, 99) if n else None,
        "replicas": replicas,
        "cpus_used": {"postgres": used("postgres"), "edge": used("edge"),
                      "versitygw": used("versitygw"), "clients": used("clients")},
        # Of the whole machine (all CPUs), so 1.0 means nothing was left for anyone.
        "machine_busy": busy,
        "pg_commits_per_s": (b["xact_commit"] - a["xact_commit"]) / secs,
        "pg_commits_per_statement": (b["xact_commit"] - a["xact_commit"]) / n if n else None,
        "wal_bytes_per_statement": (b["wal_bytes"] - a["wal_bytes"]) / n if n else None,
        # PostgreSQL's CPU per statement: the journal's side of the model in docs/scaling.md.
        "pg_cpu_ms_per_statement": used("postgres") * secs / n * 1e3 if n else None,
        "gateway_connections": b["gateway_connections"],
    }


def run_load(cluster: Cluster, groups: CpuGroups, args, statements: list) -> dict:
    """Warm-up without quotas until the replicas together answered ``--warmup-statements`` × N
    (the edge spreads them evenly; at most ``--warmup`` seconds), so the JIT compiles at full
    speed; then each replica goes into its group and, after a settle second, the repetitions."""
    creds = cluster.info["credentials"]
    callers = sorted(c for c in creds if c.startswith("chaos_"))[:args.callers]
    tokens = [(c, Path(creds[c]).read_text().strip()) for c in callers]
    ctx = multiprocessing.get_context("spawn")
    stop, out, done = ctx.Event(), ctx.Queue(), ctx.Value("q", 0)
    procs, readies = [], []
    for k in range(args.client_procs):
        mine = tokens[k::args.client_procs]
        if not mine:
            continue
        ready = ctx.Event()
        p = ctx.Process(target=client_process,
                        args=(cluster.edge.uri, mine, statements, ready, stop, out, done),
                        daemon=True)
        p.start()
        procs.append(p)
        readies.append(ready)
    try:
        for r in readies:
            if not r.wait(60):
                raise RuntimeError("a load process did not start within 60 s")
        sampler = Sampler(cluster, groups, procs)
        start = time.monotonic()
        target = args.warmup_statements * cluster.count
        while done.value < target and time.monotonic() - start < args.warmup:
            time.sleep(0.25)
        warm = {"seconds": time.monotonic() - start, "statements": done.value,
                "target": target, "reached": done.value >= target}
        for r in cluster.replicas:
            groups.add(r.name, r.pid)
        time.sleep(args.settle)
        edges = [sampler.sample()]
        for _ in range(args.reps):
            time.sleep(args.duration)
            edges.append(sampler.sample())
    finally:
        stop.set()
    records, errors, busy = [], [], {}
    for _ in procs:
        try:
            r, e, b = out.get(timeout=120)
        except Exception:
            errors.append("a load process sent no records within 120 s")
            break
        records.extend(r)
        errors.extend(e)
        for k, v in b.items():
            busy[k] = busy.get(k, 0) + v
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()
    reps = [window(records, a, b, args.cpu_per_replica) for a, b in zip(edges, edges[1:])]
    return {"callers": len(callers), "client_processes": len(procs), "warmup": warm,
            "reps": reps, "errors": len(errors), "error_examples": errors[:5],
            "refused": busy}


# -- per-statement costs -----------------------------------------------------------------------

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \S+ \[(\d+)\] LOG:  duration: "
                      r"([\d.]+) ms  (execute|statement)[^:]*: (.*)$")


def _log_ms(ts: str) -> float:
    return datetime.strptime(ts, "%Y-%m-%d %H:%M:%S.%f").timestamp() * 1e3


def transactions(log_text: str) -> list:
    """The journal's transactions in a PostgreSQL log written with log_min_duration_statement=0
    and log_line_prefix '%m [%p] ': per backend, the statements up to each COMMIT or ROLLBACK,
    each (end ms, duration ms, SQL). Lines of backends that never commit (psql) are left out."""
    open_by_pid, done, last = {}, [], None
    for line in log_text.splitlines():
        m = LOG_LINE.match(line)
        if not m:
            # A statement text of several lines (the journal sends held writes and a deferred
            # transaction's SET LOCAL in one text, one statement per line) continues here.
            if last is not None and not TIMESTAMP.match(line):
                stmts, i = last
                end, dur, sql = stmts[i]
                stmts[i] = (end, dur, sql + "\n" + line.strip())
            else:
                last = None
            continue
        end, pid, dur, _, sql = _log_ms(m.group(1)), m.group(2), float(m.group(3)), m.group(4), \
            m.group(5).strip()
        stmts = open_by_pid.setdefault(pid, [])
        stmts.append((end, dur, sql))
        last = (stmts, len(stmts) - 1)
        if sql.upper() in ("COMMIT", "ROLLBACK"):
            done.append(stmts)
            open_by_pid[pid] = []
            last = None
    return done


WRITES = ("INSERT", "UPDATE", "DELETE", "WITH")


def kind_of(tx: list) -> str:
    """'durable' (a write whose COMMIT waits for the WAL flush), 'deferred' (a write under
    SET LOCAL synchronous_commit = off: no flush of its own) or 'read' (no WAL to flush)."""
    sqls = [q.strip().upper() for s in tx for q in s[2].split(";\n")]
    if not any(q.startswith(WRITES) for q in sqls):
        return "read"
    return "deferred" if any("SYNCHRONOUS_COMMIT = OFF" in q for q in sqls) else "durable"


def lock_holds(txs: list) -> list:
    """Milliseconds each transaction that locked a principal's row held it: from the start of
    its SELECT … FOR UPDATE to the end of its COMMIT (timestamps of millisecond resolution)."""
    out = []
    for tx in txs:
        lock = next((s for s in tx if "FOR UPDATE" in s[2]), None)
        if lock is not None:
            out.append(tx[-1][0] - (lock[0] - lock[1]))
    return out


def statement_costs(cluster: Cluster, args, small: list, rows: int, s3_log: Path) -> dict:
    journal = cluster.journal()
    pg_log = Path(cluster.info["postgres"]["data_dir"]).parent / "server.log"
    caller = sorted(c for c in cluster.info["credentials"] if c.startswith("chaos_"))[0]
    client = GatewayClient(cluster.edge.uri,
                           Path(cluster.info["credentials"][caller]).read_text().strip(),
                           timeout=60)
    for setting in ("log_min_duration_statement = 0", "log_line_prefix = '%m [%p] '"):
        journal.query(f"ALTER SYSTEM SET {setting}")
    journal.query("SELECT pg_reload_conf()")
    time.sleep(1.0)  # every backend takes the reload at its next command

    def measure(kind: str, run, count: int) -> dict:
        log_at = pg_log.stat().st_size
        s3_at = len(s3_log.read_text().splitlines()) if s3_log.exists() else 0
        wal0 = journal.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")[0][0]
        t0 = time.monotonic()
        lat = run(count)
        secs = time.monotonic() - t0
        wal1 = journal.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")[0][0]
        with open(pg_log, errors="replace") as f:
            f.seek(log_at)
            txs = transactions(f.read())
        s3_ops = {}
        if s3_log.exists():
            for line in s3_log.read_text().splitlines()[s3_at:]:
                op = next((w for w in line.split() if w.startswith("s3_")), None)
                if op:
                    s3_ops[op] = s3_ops.get(op, 0) + 1
        holds = lock_holds(txs)
        classes = [kind_of(t) for t in txs]
        return {"kind": kind, "statements": count, "seconds": secs,
                "transactions": len(txs),
                "durable_writes": classes.count("durable"),
                "deferred_writes": classes.count("deferred"),
                "read_only": classes.count("read"),
                "commits": sum(1 for t in txs if t[-1][2].upper() == "COMMIT"),
                "sql_statements": sum(len(t) for t in txs),
                "locking_transactions": len(holds),
                "lock_hold_ms": {"mean": statistics.fmean(holds) if holds else None,
                                 "p50": percentile(holds, 50) if holds else None,
                                 "p99": percentile(holds, 99) if holds else None,
                                 "sum_per_statement": sum(holds) / count if count else None},
                "statement_p50_ms": percentile(lat, 50) if lat else None,
                "wal_bytes": int(wal1) - int(wal0), "s3_requests": s3_ops}

    def idle(count):
        time.sleep(args.idle_seconds)
        return []

    def run_small(count):
        lat = []
        for i in range(count):
            sql, expected = small[i % len(small)]
            t0 = time.monotonic()
            got = tuple(client.query(sql).to_pylist()[0].values())
            lat.append((time.monotonic() - t0) * 1e3)
            assert got == expected, (sql, got, expected)
        return lat

    def run_large(count):
        lat = []
        base = int(time.time()) % 50 * LARGE_ROWS  # distinct content per run and statement
        for i in range(count):
            lo = (base + i * LARGE_ROWS) % (rows - LARGE_ROWS)
            t0 = time.monotonic()
            table = client.query(LARGE.format(lo=lo, hi=lo + LARGE_ROWS))
            lat.append((time.monotonic() - t0) * 1e3)
            assert table.num_rows == LARGE_ROWS and table.column(0)[0].as_py() == lo
        return lat

    try:
        base = measure("idle", idle, 0)
        out = {"idle": base,
               "small": measure("small", run_small, args.cost_statements),
               "large": measure("large", run_large, args.cost_large)}
    finally:
        for setting in ("log_min_duration_statement", "log_line_prefix"):
            journal.query(f"ALTER SYSTEM RESET {setting}")
        journal.query("SELECT pg_reload_conf()")
        client.client.close()
    # Background transactions per second (lease scans, sweeps), from the idle window.
    rate = base["transactions"] / max(base["seconds"], 1e-9)
    sql_rate = base["sql_statements"] / max(base["seconds"], 1e-9)
    for kind in ("small", "large"):
        m = out[kind]
        n = m["statements"]
        bg, bg_sql = rate * m["seconds"], sql_rate * m["seconds"]
        m["per_statement"] = {
            "transactions": (m["transactions"] - bg) / n,
            "commits": (m["commits"] - bg) / n,
            # The idle window's transactions are lease scans: reads.
            "durable_writes": m["durable_writes"] / n,
            "deferred_writes": m["deferred_writes"] / n,
            "read_only": (m["read_only"] - bg) / n,
            # BEGIN travels with the first statement: one round trip per other statement.
            "round_trips": (m["sql_statements"] - bg_sql - m["transactions"] + bg) / n,
            "sql_statements": (m["sql_statements"] - bg_sql) / n,
            "locking_transactions": m["locking_transactions"] / n,
            "wal_bytes": m["wal_bytes"] / n,
            "s3_requests": {k: v / n for k, v in m["s3_requests"].items()},
        }
    out["background_transactions_per_s"] = rate
    out["settings"] = {r[0]: r[1] for r in journal.query(
        "SELECT name, setting FROM pg_settings WHERE name IN ('max_connections',"
        " 'synchronous_commit', 'commit_delay', 'wal_sync_method', 'fsync', 'shared_buffers')")}
    return out


# -- summary -----------------------------------------------------------------------------------

def summarize(results: dict) -> None:
    base = None
    for n, r in sorted(results["runs"].items(), key=lambda kv: int(kv[0])):
        thr = [rep["statements_per_s"] for rep in r["reps"]]
        r["statements_per_s_median"] = statistics.median(thr)
        r["p50_ms_median"] = statistics.median(rep["p50_ms"] for rep in r["reps"] if rep["p50_ms"])
        r["p99_ms_median"] = statistics.median(rep["p99_ms"] for rep in r["reps"] if rep["p99_ms"])
        cpu = [x["cpus_used"] for rep in r["reps"] for x in rep["replicas"].values()]
        r["replica_cpus_used_mean"] = statistics.fmean(cpu)
        if int(n) == 1:
            base = r["statements_per_s_median"]
        if base:
            r["efficiency"] = r["statements_per_s_median"] / (int(n) * base)
            r["meets_0_8N"] = r["statements_per_s_median"] >= 0.8 * int(n) * base


def report(results: dict) -> str:
    lines = ["| N | statements/s (median; reps) | p50 ms | p99 ms | CPUs per replica (quota "
             f"{results['cpu_per_replica']}) | throttled periods | PostgreSQL CPUs (ms per statement)"
             " | clients CPUs | machine busy | efficiency vs N×(N=1) | ≥ 0.8·N | refused, errors |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for n, r in sorted(results["runs"].items(), key=lambda kv: int(kv[0])):
        reps = r["reps"]
        thr = ", ".join(f"{x['statements_per_s']:.1f}" for x in reps)
        thrott = statistics.fmean(v["throttled_periods"] for x in reps for v in x["replicas"].values())
        pgc = statistics.fmean(x["cpus_used"]["postgres"] for x in reps)
        pgms = statistics.fmean(x.get("pg_cpu_ms_per_statement") or 0 for x in reps)
        cl = statistics.fmean(x["cpus_used"]["clients"] for x in reps)
        busy = statistics.fmean(x["machine_busy"] for x in reps)
        eff = r.get("efficiency")
        lines.append(
            f"| {n} | {r['statements_per_s_median']:.1f} ({thr}) | {r['p50_ms_median']:.1f} |"
            f" {r['p99_ms_median']:.1f} | {r['replica_cpus_used_mean']:.3f} | {thrott:.0%} |"
            f" {pgc:.2f} ({pgms:.2f}) | {cl:.2f} | {busy:.0%} | {eff:.2f} |"
            f" {'yes' if r.get('meets_0_8N') else 'no'} |"
            f" {sum(r.get('refused', {}).values())}, {r['errors']} |" if eff is not None else
            f"| {n} | {r['statements_per_s_median']:.1f} ({thr}) | … |")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = sorted(results["runs"].items(), key=lambda kv: int(kv[0]))
    ns = [int(n) for n, _ in runs]
    thr = [r["statements_per_s_median"] for _, r in runs]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(14, 4))
    for n, r in runs:
        a.scatter([int(n)] * len(r["reps"]), [x["statements_per_s"] for x in r["reps"]],
                  color="tab:blue", s=12, alpha=0.5)
    a.plot(ns, thr, "o-", color="tab:blue", label="measured (median of reps)")
    if 1 in ns:
        one = thr[ns.index(1)]
        a.plot(ns, [n * one for n in ns], "--", color="grey", label="N × (N=1)")
        a.plot(ns, [0.8 * n * one for n in ns], ":", color="tab:red", label="0.8·N × (N=1)")
    a.set_xlabel("replicas (each %.2g CPU)" % results["cpu_per_replica"])
    a.set_ylabel("statements/s")
    a.set_xticks(ns)
    a.legend(fontsize=8)
    a.set_title("Throughput through the edge")
    b.plot(ns, [r["p50_ms_median"] for _, r in runs], "o-", label="p50")
    b.plot(ns, [r["p99_ms_median"] for _, r in runs], "s-", label="p99")
    b.set_xlabel("replicas")
    b.set_ylabel("statement ms (GetFlightInfo + DoGet)")
    b.set_xticks(ns)
    b.legend(fontsize=8)
    b.set_title(f"Latency, {results['callers']} closed-loop callers")
    # Whether the replicas were the bottleneck: each used its whole quota and was throttled,
    # while the machine still had CPU left for everyone else.
    used = [r["replica_cpus_used_mean"] / results["cpu_per_replica"] for _, r in runs]
    busy = [statistics.fmean(x["machine_busy"] for x in r["reps"]) for _, r in runs]
    c.bar([n - 0.2 for n in ns], used, 0.4, label="replica CPU / quota (mean)")
    c.bar([n + 0.2 for n in ns], busy, 0.4, label="machine busy (all CPUs)")
    c.set_ylim(0, 1.1)
    c.set_xticks(ns)
    c.set_xlabel("replicas")
    c.legend(fontsize=8)
    c.set_title("Who was the bottleneck")
    fig.suptitle(f"load average at start {results['load_average_start']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", default="1,2,3,4", help="comma-separated N values")
    ap.add_argument("--cpu-per-replica", type=float, default=0.25, help="CPUs of each quota")
    ap.add_argument("--callers", type=int, default=16, help="closed-loop callers (principals)")
    ap.add_argument("--client-procs", type=int, default=4, help="load processes")
    ap.add_argument("--warmup-statements", type=int, default=1000,
                    help="statements per replica before measuring (no quota yet)")
    ap.add_argument("--warmup", type=float, default=45, help="at most this many seconds of it")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds after the quota is set")
    ap.add_argument("--duration", type=float, default=12, help="seconds of each repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cost-statements", type=int, default=100, help="0 skips the costs")
    ap.add_argument("--cost-large", type=int, default=20)
    ap.add_argument("--idle-seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not CpuGroups.available():
        sys.exit("scale: cgroup v1 CPU groups are not writable at /sys/fs/cgroup/cpu (run as root"
                 " on a cgroup v1 host)")
    ns = [int(x) for x in args.replicas.split(",")]
    out = args.out or ROOT / "bench-results" / (
        "scale-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    out.mkdir(parents=True, exist_ok=True)
    # SIGTERM and SIGHUP (a closed terminal) end the run like Ctrl-C: the finally blocks stop the
    # cluster and remove groups.
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGHUP, _interrupted)
    CpuGroups.remove_stale()
    results = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "load_average_start": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
               "cpus": os.cpu_count(), "cpu_per_replica": args.cpu_per_replica,
               "jvm_options": "-XX:ActiveProcessorCount=1", "callers": args.callers,
               "client_processes": args.client_procs, "warmup_max_s": args.warmup,
               "warmup_statements_per_replica": args.warmup_statements,
               "duration_s": args.duration, "reps": args.reps,
               "statement": SMALL.format(lo="lo", hi="hi"), "runs": {}}
    started = time.monotonic()
    for n in ns:
        state = Path(tempfile.mkdtemp(prefix="transit-scale-"))
        # In the cluster's own 0700 s3/ (made by `up` before versitygw opens the log), not beside
        # the state directory in a shared /tmp: it names every object the run wrote.
        s3_log = state / "s3" / "access.log"
        cluster = Cluster(state, replicas=n, callers=args.callers, callers_on="primitive",
                          java_opts="-XX:ActiveProcessorCount=1",
                          env={"VGW_ACCESS_LOG": str(s3_log)})
        groups = CpuGroups(args.cpu_per_replica)
        try:
            t = time.monotonic()
            cluster.up()
            print(f"scale: N={n} up in {time.monotonic() - t:.0f} s", file=sys.stderr)
            small, rows = reference(cluster.deployment)
            run = run_load(cluster, groups, args, small)
            run["load_average_end"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            if args.cost_statements and "costs" not in results:
                # Without the quota: a throttled replica would stretch every lock it holds by
                # up to a CFS period, and the model wants the work, not the throttling.
                groups.close()
                run_costs = statement_costs(cluster, args, small, rows, s3_log)
                results["costs"] = dict(run_costs, replicas=n)
            results["runs"][str(n)] = run
            thr = [f"{x['statements_per_s']:.1f}" for x in run["reps"]]
            print(f"scale: N={n} statements/s {', '.join(thr)}; errors {run['errors']};"
                  f" refused before admission {run['refused']}", file=sys.stderr)
        finally:
            try:
                cluster.down()
            finally:
                groups.close()
                shutil.rmtree(state, ignore_errors=True)
    results["wall_s"] = time.monotonic() - started
    summarize(results)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    plot(results, out / "scaling.png")
    table = report(results)
    (out / "results.md").write_text(table + "\n")
    print(table)
    if "costs" in results:
        for kind in ("small", "large"):
            c = results["costs"][kind]
            print(f"{kind}: per statement {json.dumps(c['per_statement'])};"
                  f" lock hold ms {json.dumps(c['lock_hold_ms'])}")
    print(f"scale: wrote {out} in {results['wall_s']:.0f} s", file=sys.stderr)
    errors = sum(r["errors"] for r in results["runs"].values())
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
