"""Two builds of the gateway side by side, measured in alternating blocks; or one build's CPU profile
in steady state. The small-statement changes of issue 19 are worth tens of microseconds, below the
spread of three ``scripts/bench`` runs, so docs/performance.md decides them this way.

    .venv-bench/bin/python benchmarks/python/paired.py pair ROOT_A ROOT_B [--blocks 16]
        [--per-block 200] [--warmup 6000] [--java-opts-a=...] [--java-opts-b=...]
    .venv-bench/bin/python benchmarks/python/paired.py profile ROOT [--warmup 8000]
        [--statements 4000] [--interval-us 500] [--out FILE]
    .venv-bench/bin/python benchmarks/python/paired.py first ROOT [--warm-up 0] [--blocks 12]
        [--per-block 250] [--java-opts=...]
    .venv-bench/bin/python benchmarks/python/paired.py tail ROOT [--warmup 6000]
        [--statements 3000] [--java-opts=...]

``ROOT_A`` and ``ROOT_B`` are checkouts, each built (``mvn package -DskipTests``), e.g. ``git
worktree add /tmp/a <commit>`` beside this one. Both daemons serve hard-linked copies of the
benchmark's 20M-row Parquet file (``scripts/bench`` generates it once into
``bench-results/state/rows-20000000``), each from a fresh state directory under ``--work``.

``pair``: after ``--warmup`` untimed statements and round trips on each daemon, ``--blocks`` rounds;
in each, every daemon (A first in even rounds, B first in odd ones) answers a block of
``--per-block`` ``SELECT COUNT(*)`` statements and then as many GetTableTypes round trips, each
block preceded by 5 untimed calls. It prints each side's p50 and p99 and, per kind, the median over
rounds of (B's block median − A's) with the number of rounds B was faster. Run it twice with the
roots swapped: on two processors the daemon in one place can be faster whatever it runs.

A ``--java-opts`` value that starts with ``-XX:`` is given with ``=`` (``--java-opts=-XX:...``), so
that argparse does not take it for an option of its own.

``profile``: one daemon started with async-profiler's agent loaded but idle (so attaching later
deoptimises nothing), ``--warmup`` statements, then CPU sampling over ``--statements`` statements
only, written as collapsed stacks to ``--out``; it prints CPU per statement by thread.

``first``: the first minutes of one daemon, started with ``run --warm-up N`` (docs/operations.md,
"Warm-up at start"): the time until it serves, then the median of each block of ``--per-block``
``SELECT COUNT(*)`` statements from the first one, with no warm-up of the client's own, and the
JIT's compilations and compiler CPU in each block.

``tail``: where one daemon's slow statements come from, after ``--warmup`` statements: over
``--statements`` more, each daemon thread's CPU and its wait for a CPU (Linux schedstat) per
statement, the journal's commits slower than 1 ms (the daemon's metrics), the young collections,
and for the slowest 1 % the daemon's own GetFlightInfo and DoGet times (its access log) and how
many overlapped a collection.
"""

import argparse
import collections
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import cpu_profile
import deployment
import measure

ROWS = 20_000_000
SQL = f"SELECT COUNT(*) FROM {deployment.TABLE}"


def start(root: Path, state: Path, source: Path, java_opts: str,
          args: tuple = ()) -> deployment.Daemon:
    """A daemon of checkout ``root`` on a fresh state directory holding a link to the data;
    ``args`` follow ``run --config FILE`` on its command line."""
    shutil.rmtree(state, ignore_errors=True)
    (state / "data").mkdir(parents=True)
    os.chmod(state, 0o700)
    os.link(source / "data" / "bench.parquet", state / "data" / "bench.parquet")
    config = deployment.prepare(state, ROWS, {"max_live_streams": 64})
    # The launcher runs ROOT/scripts/gateway: point it at this checkout for this start only.
    launcher = sys.modules[deployment.Daemon.__module__]
    here = launcher.ROOT
    launcher.ROOT = root
    try:
        if not args:
            return deployment.gateway(config, state / "gateway.log", java_opts)
        argv = [str(root / "scripts" / "gateway"), "run", "--config", str(config), *args]
        # A warm-up at start takes tens of seconds before the daemon serves.
        return deployment.Daemon(config.parent, configured=True, log_file=state / "gateway.log",
                                 java_opts=java_opts, command=argv).start(timeout=900)
    finally:
        launcher.ROOT = here


def pair(a) -> int:
    daemons, clients = {}, {}
    try:
        for side, root, opts in (("A", a.root_a, a.java_opts_a), ("B", a.root_b, a.java_opts_b)):
            daemons[side] = start(root.resolve(), a.work / side, a.source, opts)
            clients[side] = measure.GatewayClient(daemons[side].uri,
                                                  daemons[side].token(deployment.CALLER))
        table_types = measure.flightsql.get_table_types()
        calls = {"statement": lambda c: c.query(SQL),
                 "round trip": lambda c: c.metadata(table_types)}
        for _ in range(a.warmup):
            for side in "AB":
                for call in calls.values():
                    call(clients[side])
        lat = {(s, k): [] for s in "AB" for k in calls}
        medians = {(s, k): [] for s in "AB" for k in calls}
        for r in range(a.blocks):
            for side in ("AB" if r % 2 == 0 else "BA"):
                for kind, call in calls.items():
                    for _ in range(5):
                        call(clients[side])
                    block = []
                    for _ in range(a.per_block):
                        t = time.perf_counter()
                        call(clients[side])
                        block.append((time.perf_counter() - t) * 1e3)
                    lat[side, kind] += block
                    medians[side, kind].append(statistics.median(block))
        for kind in calls:
            d = [b - x for x, b in zip(medians["A", kind], medians["B", kind])]
            print(f"{kind}: A p50 {statistics.median(lat['A', kind]):.3f} ms "
                  f"p99 {measure.percentile(lat['A', kind], 99):.2f} | B p50 "
                  f"{statistics.median(lat['B', kind]):.3f} ms p99 {measure.percentile(lat['B', kind], 99):.2f}"
                  f" | B − A, median over rounds {statistics.median(d):+.3f} ms, B faster in "
                  f"{sum(x < 0 for x in d)} of {len(d)}")
    finally:
        for side, d in daemons.items():
            print(side, deployment.shutdown(d))
    return 0


THREAD = re.compile(r"^\[(.*?)(?:[-#]?\d+)? tid=\d+\]$")


def profile(a) -> int:
    lib = cpu_profile.agent(Path(__file__).resolve().parents[2])
    d = start(a.root.resolve(), a.work / "P", a.source, f"-agentpath:{lib}")
    out = a.out.resolve()
    try:
        client = measure.GatewayClient(d.uri, d.token(deployment.CALLER))
        for _ in range(a.warmup):
            client.query(SQL)
        # jcmd parses its arguments as name=value pairs: the agent's options go quoted, as one.
        load = ["jcmd", str(d.pid), "JVMTI.agent_load", str(lib)]
        interval_ns = a.interval_us * 1000
        subprocess.run(load + [f'"start,event=cpu,interval={interval_ns},threads"'], check=True,
                       capture_output=True)
        t = time.perf_counter()
        for _ in range(a.statements):
            client.query(SQL)
        seconds = time.perf_counter() - t
        subprocess.run(load + [f'"stop,file={out},collapsed"'], check=True, capture_output=True)
    finally:
        print(deployment.shutdown(d))
    per_thread = collections.Counter()
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        m = THREAD.match(stack.split(";")[0])
        per_thread[m.group(1) if m else "?"] += int(count)
    us = a.interval_us / a.statements
    print(f"{a.statements} statements, {seconds / a.statements * 1e3:.3f} ms each while sampled; "
          f"daemon CPU {sum(per_thread.values()) * us:.0f} µs a statement; stacks in {out}")
    for thread, n in per_thread.most_common(12):
        print(f"  {n * us:8.1f} µs  {thread}")
    return 0


def first(a) -> int:
    t = time.perf_counter()
    d = start(a.root.resolve(), a.work / "F", a.source, a.java_opts,
              ("--warm-up", str(a.warm_up)))
    serving = time.perf_counter() - t
    medians, compiled, compiling = [], [], []
    try:
        client = measure.GatewayClient(d.uri, d.token(deployment.CALLER))
        # The JIT's work in each block, read between blocks (jcmd takes a moment): whether the
        # served workload makes it compile again what the warm-up compiled.
        count, cpu = deployment.compiles(d.pid), deployment.compiler_seconds(d.pid)
        for _ in range(a.blocks):
            block = []
            for _ in range(a.per_block):
                t = time.perf_counter()
                client.query(SQL)
                block.append((time.perf_counter() - t) * 1e3)
            medians.append(statistics.median(block))
            count_now, cpu_now = deployment.compiles(d.pid), deployment.compiler_seconds(d.pid)
            compiled.append(count_now - count)
            compiling.append((cpu_now - cpu) * 1e3)
            count, cpu = count_now, cpu_now
    finally:
        print(deployment.shutdown(d))
    head = medians[:4]
    print(f"--warm-up {a.warm_up}: serving after {serving:.1f} s (launcher included); "
          f"block medians ms: {' '.join(f'{m:.2f}' for m in medians)}")
    print(f"compilations per block: {' '.join(str(c) for c in compiled)}; the compiler threads' "
          f"CPU ms per block: {' '.join(f'{c:.0f}' for c in compiling)}")
    print(f"mean of block medians: first {len(head) * a.per_block} statements "
          f"{statistics.mean(head):.2f} ms, all {len(medians) * a.per_block} "
          f"{statistics.mean(medians):.2f} ms")
    return 0


def _slow_commits(url: str) -> tuple:
    """(journal commits, those slower than 1 ms) so far, from the daemon's metrics."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    buckets = dict(re.findall(r'transit_journal_commit_seconds_bucket\{le="([^"]+)"\} (\S+)', text))
    return float(buckets["+Inf"]), float(buckets["+Inf"]) - float(buckets["0.001"])


def tail(a) -> int:
    with socket.socket() as s:  # a free loopback port for the metrics listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = a.work / "T"
    gc_log = a.work / "tail-gc.log"
    d = start(a.root.resolve(), state, a.source, f"-Xlog:gc:file={gc_log}:time {a.java_opts}",
              ("--metrics-port", str(port)))
    url = f"http://127.0.0.1:{port}/metrics"
    timed = []
    try:
        client = measure.GatewayClient(d.uri, d.token(deployment.CALLER))
        for _ in range(a.warmup):
            client.query(SQL)
        threads0, commits0 = deployment.threads(d.pid), _slow_commits(url)
        for _ in range(a.statements):
            t, p = time.time(), time.perf_counter()
            client.query(SQL)
            timed.append((t, (time.perf_counter() - p) * 1e3))
        threads1, commits1 = deployment.threads(d.pid), _slow_commits(url)
    finally:
        print(deployment.shutdown(d))
    n = a.statements
    lat = sorted(x[1] for x in timed)
    print(f"{n} statements after {a.warmup}: p50 {statistics.median(lat):.3f} ms, "
          f"p99 {measure.percentile(lat, 99):.2f} ms")
    per = collections.defaultdict(lambda: [0, 0])
    for tid, (name, run, wait) in threads1.items():
        _, run0, wait0 = threads0.get(tid, (name, 0, 0))
        key = re.sub(r"[-#]?\d+$", "", name)
        per[key][0] += run - run0
        per[key][1] += wait - wait0
    print("  thread (summed by name)        CPU µs a statement   waiting for a CPU µs a statement")
    for key, (run, wait) in sorted(per.items(), key=lambda x: -sum(x[1]))[:10]:
        print(f"  {key:30s} {run / n / 1e3:10.0f} {wait / n / 1e3:24.0f}")
    print(f"  journal commits: {commits1[0] - commits0[0]:.0f}, slower than 1 ms: "
          f"{commits1[1] - commits0[1]:.0f}")
    pauses = measure.collector_pauses(gc_log.read_text().splitlines())
    calls = [c[:4] for c in measure.access_calls((state / "gateway.log").read_text().splitlines())]
    slowest = sorted(timed, key=lambda x: -x[1])[:max(1, n // 100)]
    gc_hit, split = 0, collections.defaultdict(list)
    for t, ms in slowest:
        end = t + ms / 1e3
        gc_hit += any(s <= end and e >= t for s, e in pauses)
        for s, e, method, dur in calls:
            if s >= t and e <= end:
                split[method].append(dur)
    timed_pauses = sum(1 for s, e in pauses if timed[0][0] <= s <= timed[-1][0])
    print(f"  young collections while timed: {timed_pauses}; of the {len(slowest)} slowest "
          f"statements {gc_hit} overlapped one")
    for method, durs in sorted(split.items()):
        print(f"  slowest 1 %: the daemon's {method} median {statistics.median(durs):.2f} ms, "
              f"max {max(durs):.2f} ms")
    return 0


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", type=Path, default=root / "bench-results" / "state" / f"rows-{ROWS}",
                   help="scripts/bench's state for 20M rows (its data/bench.parquet is linked)")
    p.add_argument("--work", type=Path, default=root / "bench-results" / "paired",
                   help="where the daemons' state directories are made")
    sub = p.add_subparsers(dest="command", required=True)
    pr = sub.add_parser("pair", help="two checkouts side by side, alternating blocks")
    pr.add_argument("root_a", type=Path)
    pr.add_argument("root_b", type=Path)
    pr.add_argument("--blocks", type=int, default=16)
    pr.add_argument("--per-block", type=int, default=200)
    pr.add_argument("--warmup", type=int, default=6000)
    pr.add_argument("--java-opts-a", default="", help="TRANSIT_JAVA_OPTS of daemon A")
    pr.add_argument("--java-opts-b", default="", help="TRANSIT_JAVA_OPTS of daemon B")
    pf = sub.add_parser("profile", help="one checkout's CPU profile after a warm-up")
    pf.add_argument("root", type=Path)
    pf.add_argument("--warmup", type=int, default=8000)
    pf.add_argument("--statements", type=int, default=4000)
    pf.add_argument("--interval-us", type=int, default=500)
    pf.add_argument("--out", type=Path, default=root / "bench-results" / "paired" / "cpu.collapsed")
    fi = sub.add_parser("first", help="one daemon's first statements after start, in blocks")
    fi.add_argument("root", type=Path)
    fi.add_argument("--warm-up", type=int, default=0, help="the daemon's run --warm-up N")
    fi.add_argument("--blocks", type=int, default=12)
    fi.add_argument("--per-block", type=int, default=250)
    fi.add_argument("--java-opts", default="", help="TRANSIT_JAVA_OPTS of the daemon")
    ta = sub.add_parser("tail", help="one checkout's slow statements and where they wait")
    ta.add_argument("root", type=Path)
    ta.add_argument("--warmup", type=int, default=6000)
    ta.add_argument("--statements", type=int, default=3000)
    ta.add_argument("--java-opts", default="", help="TRANSIT_JAVA_OPTS of the daemon")
    a = p.parse_args()
    if not (a.source / "data" / "bench.parquet").exists():
        p.error(f"{a.source}/data/bench.parquet is missing: run scripts/bench once first")
    a.work.mkdir(parents=True, exist_ok=True)
    return {"pair": pair, "profile": profile, "first": first, "tail": tail}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
