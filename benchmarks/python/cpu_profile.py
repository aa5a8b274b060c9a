"""CPU profile of the benchmarked gateway with async-profiler, summarised by serving path.

JFR cannot walk a stack that is inside a JIT intrinsic (the SHA-256 of every segment runs in
one), so its shares overstate the Java code around it. async-profiler samples CPU time with
native and intrinsic frames included. Its agent comes from Maven Central
(``tools.profiler:async-profiler``, the platform jar holds ``libasyncProfiler.so``) and is
loaded when the gateway starts; the collapsed stacks are written when the gateway exits.

The summary splits the samples by what the stack shows it was doing: the one-off execution of
P1's bulk projection, the DoGet serving path (producer, single-writer executor — dominated by
P1's bulk reads), statement admission (GetFlightInfo and the query runner — P2 and P3), the JIT
compiler, the Netty event loop, and the rest.
"""

import collections
import os
import platform
import re
import subprocess
import zipfile
from pathlib import Path

VERSION = "4.2"
THREAD = re.compile(r"^\[(.*?)(?:[-#]?\d+)? tid=\d+\]$")

# First match wins: a stack is attributed to the first group one of whose markers it contains.
GROUPS = (
    ("projection execution (the P1 statement's one-off run)", ("QueryRunner.projection",)),
    ("DoGet serving path", ("ResultStreamer.stream", "StreamExecutor.drain",
                            "FlightServerChannel.sendBatch", "TransitSqlProducer.getStream")),
    ("statement admission", ("StatementService.getFlightInfo", "EmbeddedEngine.runOne")),
    ("JIT compiler", ("CompilerThre",)),
    ("Netty event loop", ("ELG", "transit-netty")),
)


# Named steps whose inclusive share (anywhere on the stack) the summary reports per group.
STEPS = (
    "Digests.sha256", "SegmentStore.read", "CellAdapter.adapt", "FlightServerChannel.putNext",
    "StreamExecutorPool.dispatch", "TicketService.verify", "TicketService.issue",
    "EdDSAEngine.engineSign", "EdDSAEngine.engineVerify", "SqliteJournal.transaction",
    "SQLiteConnection.commit", "fsync", "PlanCache.plan", "DuckDBPreparedStatement.execute",
    "ResultWriter", "AdmissionService.awaitResult",
)


def agent(root: Path) -> Path:
    """The agent library, fetched once into bench-results/tools with Maven."""
    arch = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64"}.get(
        platform.machine().lower())
    if arch is None:
        raise RuntimeError(f"async-profiler has no build for {platform.machine()}")
    tools = root / "bench-results" / "tools" / f"async-profiler-{VERSION}"
    lib = tools / arch / "libasyncProfiler.so"
    if lib.exists():
        return lib
    tools.mkdir(parents=True, exist_ok=True)
    opts = os.environ.get("TRANSIT_MVN_OPTS", "").split()
    subprocess.run(["mvn", "-q", "-B", *opts, "dependency:copy",
                    f"-Dartifact=tools.profiler:async-profiler:{VERSION}:jar:{arch}",
                    f"-DoutputDirectory={tools}"], check=True, cwd=root)
    with zipfile.ZipFile(tools / f"async-profiler-{VERSION}-{arch}.jar") as jar:
        jar.extract(f"{arch}/libasyncProfiler.so", tools)
    return lib


def java_option(lib: Path, collapsed: Path, interval_ms: int = 1) -> str:
    """Starts CPU sampling at JVM start; the collapsed stacks are written at exit."""
    return (f"-agentpath:{lib}=start,event=cpu,interval={interval_ms * 1_000_000},threads,"
            f"file={collapsed},collapsed")


def summarise(collapsed: Path, top: int = 12) -> dict:
    groups = collections.Counter()
    frames = collections.defaultdict(collections.Counter)
    threads = collections.defaultdict(collections.Counter)
    steps = collections.defaultdict(collections.Counter)
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        names = stack.split(";")
        m = THREAD.match(names[0])
        thread = m.group(1) if m else names[0]
        group = next((g for g, markers in GROUPS
                      if any(k in f for f in names for k in markers)), "other")
        total += n
        groups[group] += n
        frames[group][names[-1]] += n
        threads[group][thread] += n
        for step in STEPS:
            if any(step in f for f in names):
                steps[group][step] += n
    return {"total": total, "groups": groups, "frames": frames, "threads": threads,
            "steps": steps, "top": top}


def markdown(s: dict) -> str:
    total = s["total"] or 1
    lines = [f"CPU samples (all gateway threads, the whole run): {s['total']}", "",
             "| where | share of CPU |", "|---|---:|"]
    lines += [f"| {g} | {100 * n / total:.1f}% |" for g, n in s["groups"].most_common()]
    for g, n in s["groups"].most_common():
        if g in ("other", "JIT compiler"):
            continue
        lines += ["", f"**{g}** — named steps, hottest frames and threads (shares of this group)",
                  "", "| share | step (anywhere on the stack) |", "|---:|---|"]
        lines += [f"| {100 * c / n:.1f}% | `{step}` |" for step, c in s["steps"][g].most_common()]
        lines += ["", "| share | frame (on CPU) |", "|---:|---|"]
        lines += [f"| {100 * c / n:.1f}% | `{f[:110]}` |"
                  for f, c in s["frames"][g].most_common(s["top"])]
        lines += ["", "| share | thread |", "|---:|---|"]
        lines += [f"| {100 * c / n:.1f}% | `{t}` |" for t, c in s["threads"][g].most_common(5)]
    return "\n".join(lines) + "\n"
