"""The benchmark deployment: a generated 4 x int64 Table published by a gateway daemon.

The data is generated once per row count by DuckDB into ``<state>/data/bench.parquet`` and kept,
so repeated runs serve the same bytes (the gateway's journal and retained results persist too).
"""

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"is serving grpc://([0-9.]+):(\d+)")
PEAK = re.compile(r"allocator_peak_bytes=(\d+)")
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


class Gateway:
    """One daemon process (scripts/gateway run); its log goes to ``log_file``."""

    def __init__(self, config: Path, log_file: Path, java_opts: str = ""):
        self.config = config
        self.state_dir = config.parent
        self.log_file = log_file
        self.java_opts = java_opts
        self.proc = None
        self.port = None
        self.lines = []

    def start(self, timeout: float = 300.0) -> "Gateway":
        env = dict(os.environ, TRANSIT_NO_BUILD="1", TRANSIT_JAVA_OPTS=self.java_opts)
        # scripts/gateway execs java, so this pid is the JVM's: RSS and jcmd use it.
        self.proc = subprocess.Popen(
            [str(ROOT / "scripts" / "gateway"), "run", "--config", str(self.config)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        found = threading.Event()
        log = open(self.log_file, "a")

        def pump():
            with log:
                for line in self.proc.stdout:
                    log.write(line)
                    self.lines.append(line)
                    m = SERVING.search(line)
                    if m and not found.is_set():
                        self.port = int(m.group(2))
                        found.set()
            found.set()

        started = time.perf_counter()
        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(timeout) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("gateway did not start; see " + str(self.log_file))
        # From exec to serving: the launcher's heap look-up, JVM start, engine open (footers
        # only: the Tables are scanned in place) and the listener.
        self.startup_s = time.perf_counter() - started
        return self

    def compiles(self) -> int:
        """Compilations the daemon's JIT finished so far (jcmd's sun.ci.totalCompiles)."""
        out = subprocess.run(["jcmd", str(self.pid), "PerfCounter.print"], capture_output=True,
                             text=True, timeout=60, check=True).stdout
        m = re.search(r"sun\.ci\.totalCompiles=(\d+)", out)
        if m is None:
            raise RuntimeError("jcmd PerfCounter.print has no sun.ci.totalCompiles")
        return int(m.group(1))

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def uri(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def token(self) -> str:
        return (self.state_dir / "credentials" / f"{CALLER}.token").read_text().strip()

    def stop(self, timeout: float = 60.0) -> dict:
        """SIGTERM, then the exit status and what the shutdown log says about the allocator."""
        if self.proc is None:
            return {}
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait(10)
        self.proc = None
        time.sleep(0.2)  # lets the pump thread drain the last lines
        text = "".join(self.lines)
        peak = PEAK.findall(text)
        left = LEFT.findall(text)
        return {"exit_status": rc,
                "allocator_peak_bytes": int(peak[-1]) if peak else None,
                # Exit status 0 means the root allocator was empty and closed at shutdown.
                "bytes_left": int(left[-1]) if left else (0 if rc == 0 else None)}


def rss_bytes(pid: int) -> dict:
    """Current and high-water resident set size of a process, from /proc."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) * 1024
    return {"rss": out.get("VmRSS", 0), "hwm": out.get("VmHWM", 0)}
