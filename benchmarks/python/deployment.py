"""The benchmark deployment: a generated 4 x int64 Table published by a gateway daemon
(integration-tests/python/daemon.py's Daemon, the launcher the end-to-end tests use).

The data is generated once per row count by DuckDB into ``<state>/data/bench.parquet`` and kept,
so repeated runs serve the same bytes (the gateway's journal and retained results persist too).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
# The one daemon launcher, shared with the end-to-end tests (standard library only).
sys.path.append(str(ROOT / "integration-tests" / "python"))
from daemon import Daemon  # noqa: E402

PEAK = re.compile(r"allocator_peak_bytes=(\d+)")
STREAM_PEAK = re.compile(r"stream_peak_bytes=(\d+)")
LEFT = re.compile(r"(\d+) bytes still allocated at shutdown")
TABLE = "bench"
CALLER = "bench"
COLUMNS = ("a", "b", "c", "d")
# Deterministic values with a spread the P3 filters can select on.
GENERATOR = ("SELECT i::BIGINT AS a, ((i * 7919) % 1000003)::BIGINT AS b,"
             " (i % 1000)::BIGINT AS c, (-i)::BIGINT AS d FROM range({rows}) t(i) ORDER BY i")


def prepare(state_dir: Path, rows: int, limits: dict) -> Path:
    """Creates the state directory, its data file and gateway.json; returns the config path."""
    state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(state_dir, 0o700)
    data = state_dir / "data" / "bench.parquet"
    if not data.exists():
        data.parent.mkdir(exist_ok=True)
        tmp = data.with_suffix(".tmp")
        con = duckdb.connect()
        con.execute(f"COPY ({GENERATOR.format(rows=rows)}) TO '{tmp}' (FORMAT parquet)")
        con.close()
        tmp.rename(data)
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "state_dir": ".",
        "deployment": {"realm": 1, "realm_name": "bench", "service": 7, "ingress": 1,
                       "ticket_ttl_ms": 3_600_000},
        "limits": limits,
        "publications": [{
            "name": TABLE, "catalog": "transit", "schema": "bench", "table": TABLE,
            "owner": "transit-bench", "object_id": 9001, "source": 901,
            # The declaration names the data it publishes: another row count is another Table.
            "metadata_ref": f"bench@rows={rows}", "format": "parquet",
            "files": ["data/bench.parquet"],
            "columns": [{"name": c, "type": "INT64", "nullable": False} for c in COLUMNS],
        }],
        "callers": [{
            "name": CALLER, "credential_file": f"credentials/{CALLER}.token", "principal": 101,
            "principal_key_file": "keys/principal-101.key", "credential_epoch": 1,
            "binding_revision": 1, "requests": 101, "publication": TABLE,
        }],
    }
    path = state_dir / "gateway.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def gateway(config: Path, log_file: Path, java_opts: str = "") -> Daemon:
    """Starts the daemon of ``config`` (``scripts/gateway run``); its log goes to ``log_file``.
    ``java_opts`` replaces any inherited TRANSIT_JAVA_OPTS, so a run measures what it says."""
    return Daemon(config.parent, configured=True, log_file=log_file,
                  java_opts=java_opts).start(timeout=300)


def shutdown(gw: Daemon) -> dict:
    """SIGTERM, then the exit status and what the shutdown log says about the allocator."""
    rc = gw.stop()
    text = "".join(gw.output)
    peak = PEAK.findall(text)
    stream_peak = STREAM_PEAK.findall(text)
    left = LEFT.findall(text)
    return {"exit_status": rc,
            "allocator_peak_bytes": int(peak[-1]) if peak else None,
            # The most one stream's allocator held (its peak), in the same accounting.
            "stream_peak_bytes": int(stream_peak[-1]) if stream_peak else None,
            # Exit status 0 means the root allocator was empty and closed at shutdown.
            "bytes_left": int(left[-1]) if left else (0 if rc == 0 else None)}


def compiles(pid: int) -> int:
    """Compilations the daemon's JIT finished so far (jcmd's sun.ci.totalCompiles)."""
    out = subprocess.run(["jcmd", str(pid), "PerfCounter.print"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    m = re.search(r"sun\.ci\.totalCompiles=(\d+)", out)
    if m is None:
        raise RuntimeError("jcmd PerfCounter.print has no sun.ci.totalCompiles")
    return int(m.group(1))


def threads(pid: int) -> dict:
    """Each thread of ``pid`` by thread id: (name, CPU ns, ns waiting for a CPU), from
    /proc/<pid>/task/<tid>/schedstat (nanoseconds; /proc's stat counts clock ticks of 10 ms)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait, _ = f.read().split()
        except OSError:
            continue  # the thread ended meanwhile
        out[tid] = (name, int(run), int(wait))
    return out


# The last CPU ns read of each compiler thread, by pid and thread id: HotSpot stops compiler
# threads it no longer needs, and a thread gone from /proc must not take its CPU out of the total.
_compiler_ns = {}


def compiler_seconds(pid: int) -> float:
    """CPU seconds the JVM's JIT compiler threads ("C1 CompilerThre", "C2 CompilerThre") used so
    far, to the nanosecond (``threads``): the set-aside rule compares it with 2 % of a block that
    may last only 70 ms, finer than the clock tick (10 ms) of /proc's stat. Never decreases: a
    thread that ended counts what it had used when last read."""
    seen = _compiler_ns.setdefault(pid, {})
    for tid, (name, run, _) in threads(pid).items():
        if "CompilerThre" in name:
            seen[tid] = run
    return sum(seen.values()) / 1e9


def rss_bytes(pid: int) -> dict:
    """Current and high-water resident set size of a process, from /proc."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) * 1024
    return {"rss": out.get("VmRSS", 0), "hwm": out.get("VmHWM", 0)}
