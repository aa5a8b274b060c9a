"""The one launcher of the real gateway daemon (scripts/gateway) on loopback, for the end-to-end
tests and for the benchmarks (benchmarks/python puts this folder on its path; standard library
only, so the bench venv needs nothing more).

``Daemon`` runs one process over a state directory and can be restarted (or killed with -9) on the
same directory. It covers:

- the demo deployment (``scripts/gateway demo``; the first start writes configuration, data, keys
  and credentials) or a written configuration (``configured=True``: ``scripts/gateway run``);
- ``Daemon.template(dir)``: a demo state directory made by one clean start, to copy from;
- ``Daemon.variant(base, overrides)``: a daemon over a copy of a base state directory with
  ``overrides`` merged into gateway.json (its own engine journal unless ``whole=True``);
- configuration edits (``config``/``write_config``/``edit_config``/``edit_caller``) and SIGHUP
  reloads that wait for the daemon's own outcome line;
- test faults (``faults``: the daemon's TRANSIT_TEST_FAULTS hook, docs/admission.md section 9);
- the stdout pump (``output``, optionally also written to ``log_file``) and the shutdown
  accounting line (``stop_report``).

The journal is the embedded SQLite file unless gateway.json's ``journal`` section names a
PostgreSQL database (``Postgres``: a private cluster for the tests and the benchmarks, and
``Postgres.journal_config``: the section that points a daemon at one of its databases).
Retained segments are local files unless ``Daemon(object_store=…)`` puts them in a bucket of
``Versitygw`` (a real S3-API server).

Also here: ``Journal`` / ``PostgresJournal`` (read-only SQL over the engine journal), ``gateway_once``
(one run of scripts/gateway to its end) and ``wait_until`` (the bounded poll the harness uses).
The Flight SQL calls are in calls.py, raw HTTP/2 in h2raw.py, fixtures in conftest.py.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"is serving (grpc(?:\+tls|\+unix)?)://(\S+)")
# The connection help ends with the PyArrow snippet, printed after every listener's line.
READY = "PyArrow:"
STOPPED = re.compile(r"stopped: leaked_bytes=(\d+) leaked_streams=(\d+) drained=(\w+)"
                     r" allocator_peak_bytes=(\d+) connections_peak=(\d+) stream_peak_bytes=(\d+)")
RELOADED = "configuration reloaded"
REFUSED = "reload refused, previous configuration stays"
UNKNOWN = "reload outcome unknown"
# What a variant copies of its base by default: the static deployment, not the engine.
STATIC_PARTS = ("credentials", "keys", "demo-data")
U64 = (1 << 64) - 1


def wait_until(predicate, timeout: float = 60.0, what="condition"):
    """Polls ``predicate`` every 20 ms; AssertionError after ``timeout`` seconds naming ``what``
    (a string, or a function called then: the message can show what the polls saw)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for"
                                 f" {what() if callable(what) else what}")
        time.sleep(0.02)


def close_all(closers) -> None:
    """Calls every function of ``closers`` (each stops or closes one thing), whatever the ones
    before it raised, then raises: the one failure, or an AssertionError naming them all. One
    failed stop must not leave the rest running."""
    errors = []
    for close in closers:
        try:
            close()
        except Exception as e:  # noqa: BLE001 (raised below, after the others ran)
            errors.append(e)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise AssertionError(f"{len(errors)} stops failed: "
                             + "; ".join(repr(e) for e in errors)) from errors[0]


def help_snippets(daemon: "Daemon") -> dict:
    """The connection help's snippets in ``daemon``'s output by their heading's first word
    (``Python``, ``PyArrow``, ``ADBC``): each ``(heading, code)``, the code the lines indented
    under the heading, unindented. Waits for the help's last line (a start returns at PyArrow's)."""
    wait_until(lambda: any(line.startswith("Every statement needs") for line in daemon.output),
               30, "the connection help's last line")
    found, current = {}, None
    for line in "".join(daemon.output).splitlines():
        if line.startswith(("Python (", "PyArrow:", "ADBC (")):
            current = line.split(" ")[0].rstrip(":")
            found[current] = (line, [])
        elif current and line.startswith("  "):
            found[current][1].append(line[2:])
        else:
            current = None
    return {name: (heading, "\n".join(code) + "\n") for name, (heading, code) in found.items()}


def run_snippet(code: str, cwd) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter of this venv (it has the transit_flight package), in
    ``cwd``, as a user pastes a snippet of the connection help."""
    import sys
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def gateway_once(*args, timeout: float = 120.0, cwd=None) -> subprocess.CompletedProcess:
    """Runs ``scripts/gateway args`` to its end (check-config, a start that must be refused), in
    ``cwd`` when given."""
    return subprocess.run([str(ROOT / "scripts" / "gateway")] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=_env(), cwd=cwd)


def release_archive() -> Path:
    """The distribution archive of this build (the newest, should several versions be there)."""
    found = sorted((ROOT / "distribution" / "target").glob("transit-flight-*.tar.gz"))
    assert found, "no distribution archive: build the reactor first (mvn install)"
    return found[-1]


def unpack_release(workdir: Path) -> tuple:
    """The distribution archive unpacked into ``workdir``/unpacked, as a user installs it;
    returns its top directory and an environment without a JDK or Maven: PATH holds bash alone
    (the launcher's shell), HOME is ``workdir``."""
    workdir = Path(workdir)
    home = workdir / "unpacked"
    home.mkdir()
    with tarfile.open(release_archive()) as t:
        t.extractall(home, filter="tar")
    [top] = list(home.iterdir())
    tools = workdir / "path"
    tools.mkdir()
    (tools / "bash").symlink_to(shutil.which("bash"))
    return top, {"PATH": str(tools), "HOME": str(workdir)}


def _env() -> dict:
    # Tests and benchmarks build once up front: the launcher's up-to-date check is skipped.
    return dict(os.environ, TRANSIT_NO_BUILD="1")


def write_private(path: Path, text: str) -> None:
    """Writes ``path`` whole with mode 0600 (a temporary file renamed over it: a reload may read
    it at any moment). gateway.json may hold secrets (a journal URL's password), so never the
    umask's mode."""
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)  # a leftover tmp file keeps its mode through O_CREAT
        f.write(text)
    os.replace(tmp, path)


class PortInUse(RuntimeError):
    """A server could not bind the port picked for it: another process took it meanwhile."""


def free_port() -> int:
    """A loopback port free right now; pick it just before the bind, which may still lose it
    (PortInUse: pick again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deep_merge(base: dict, extra: dict) -> dict:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_merge(base[k], v)
        else:
            base[k] = v
    return base


class Daemon:
    """One gateway process over ``state_dir``; restartable on the same directory.

    Not thread-safe: one test thread drives it; only the pump thread appends to ``output``.
    """

    def __init__(self, state_dir: Path, port: int = 0, faults: str = None, configured: bool = False,
                 log_file: Path = None, java_opts: str = None, remove_on_close: Path = None,
                 command: list = None, env: dict = None, object_store: "Versitygw" = None,
                 bucket: str = "segments", stderr_unread: bool = False):
        self.state_dir = Path(state_dir)
        self.port = port
        self.faults = faults
        self.configured = configured
        self.log_file = log_file
        self.java_opts = java_opts
        # A directory the harness created for this daemon alone; close() removes it.
        self.remove_on_close = remove_on_close
        # Another command line (the distribution's launcher, --config=FILE) and environment
        # (a PATH without java) instead of scripts/gateway's demo/run in this one.
        self.command = command
        self.env = env
        # Retained segments in this server's ``bucket`` (a configured daemon's "segments" section
        # is written at each start), else in the state directory.
        self.object_store = object_store
        self.bucket = bucket
        # Standard error to a pipe this harness does not read (a stalled log reader); only
        # standard output is pumped into ``output``.
        self.stderr_unread = stderr_unread
        self.proc = None
        self.output = []
        self.uris = []
        self.startup_s = None
        self._pump = None
        self._served = False  # a start succeeded once

    # -- state directories --------------------------------------------------------------------

    @classmethod
    def template(cls, state_dir: Path, **overrides) -> Path:
        """A demo state directory (data, keys, credentials) written by one clean start, with
        ``overrides`` merged into its gateway.json; returns the directory."""
        d = cls(state_dir).start()
        d.assert_clean_stop()
        if overrides:
            d.edit_config(**overrides)
        return d.state_dir

    @staticmethod
    def copy_state(base: Path, target: Path, overrides: dict = None, whole: bool = False) -> Path:
        """Copies ``base`` into ``target`` (the static deployment, or the whole directory with
        ``whole``) and merges ``overrides`` into the copy's gateway.json; listen.port becomes 0 so
        the copy runs beside its base."""
        base, target = Path(base), Path(target)
        if whole:
            shutil.copytree(base, target, symlinks=True)
        else:
            target.mkdir(mode=0o700, exist_ok=True)
            for part in STATIC_PARTS:
                shutil.copytree(base / part, target / part, copy_function=shutil.copy2)
        cfg = json.loads((base / "gateway.json").read_text())
        cfg["listen"]["port"] = 0
        deep_merge(cfg, overrides or {})
        write_private(target / "gateway.json", json.dumps(cfg, indent=2))
        return target

    @classmethod
    def variant(cls, base, overrides: dict = None, target: Path = None, whole: bool = False,
                **options) -> "Daemon":
        """A daemon (not started) over a copy of ``base`` (a Daemon or a state directory); without
        ``target`` the copy is a temporary directory that close() removes."""
        if target is None:
            root = Path(tempfile.mkdtemp(prefix="transit-variant-"))
            options["remove_on_close"] = root
            target = root / "state"
        try:
            return cls(cls.copy_state(getattr(base, "state_dir", base), target, overrides,
                                      whole), **options)
        except BaseException:
            if options.get("remove_on_close"):  # a half-made copy of keys and credentials
                shutil.rmtree(options["remove_on_close"], ignore_errors=True)
            raise

    # -- configuration -------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.state_dir / "gateway.json"

    def config(self) -> dict:
        return json.loads(self.config_path.read_text())

    def write_config(self, cfg: dict) -> None:
        write_private(self.config_path, json.dumps(cfg, indent=2))

    def edit_config(self, **overrides) -> dict:
        """Merges ``overrides`` (top-level sections, merged deeply) into gateway.json."""
        cfg = deep_merge(self.config(), overrides)
        self.write_config(cfg)
        return cfg

    def edit_caller(self, name: str, **changes) -> None:
        """Changes one caller's fields; ``read=`` sets its read rights."""
        cfg = self.config()
        caller = next(c for c in cfg["callers"] if c["name"] == name)
        for key, value in changes.items():
            if key == "read":
                caller.setdefault("rights", {})["read"] = value
            else:
                caller[key] = value
        self.write_config(cfg)

    def principal(self, caller: str) -> int:
        return next(c["principal"] for c in self.config()["callers"] if c["name"] == caller)

    def journal(self):
        """Read-only access to this daemon's journal: SQLite, or the configured PostgreSQL."""
        j = self.config().get("journal") or {}
        if j.get("kind") == "postgresql":
            return PostgresJournal(j)
        return Journal(self.state_dir / "engine" / "journal.sqlite")

    def segment_files(self) -> set:
        """The engine's retained segment files (not those still being written)."""
        d = self.state_dir / "engine" / "segments"
        return {p for p in d.iterdir() if not p.name.endswith(".tmp")} if d.exists() else set()

    def token(self, caller: str) -> str:
        return (self.state_dir / "credentials" / f"{caller}.token").read_text().strip()

    def auth(self, caller: str = "primitive"):
        return [("authorization", f"Bearer {self.token(caller)}")]

    # -- process -------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0, ignore_hangup: bool = False) -> "Daemon":
        """Starts the daemon and waits for its connection help. SIGHUP starts at its default,
        whatever this runner inherited (so the reload tests also pass under nohup);
        ``ignore_hangup`` starts it ignored, as nohup does."""
        try:
            self._start(timeout, ignore_hangup)
        except BaseException:
            if not self._served and self.remove_on_close:
                # A variant's first start failed: its copy of the keys and credentials goes now
                # (``Daemon.variant(...).start()`` leaves the caller no daemon to close).
                shutil.rmtree(self.remove_on_close, ignore_errors=True)
                self.remove_on_close = None
            raise
        self._served = True
        return self

    def _start(self, timeout: float, ignore_hangup: bool) -> None:
        if self.object_store is not None:
            assert self.configured, "an object store needs a written configuration"
            self.edit_config(segments=self.object_store.segments(self.bucket))
        if self.command:
            argv = list(self.command)
        elif self.configured:
            argv = [str(ROOT / "scripts" / "gateway"), "run", "--config", str(self.config_path)]
        else:
            argv = [str(ROOT / "scripts" / "gateway"), "demo", "--state-dir", str(self.state_dir),
                    "--port", str(self.port)]
        env = dict(self.env) if self.env is not None else _env()
        env.pop("TRANSIT_TEST_FAULTS", None)
        if self.faults:
            env["TRANSIT_TEST_FAULTS"] = self.faults
        if self.java_opts is not None:
            env["TRANSIT_JAVA_OPTS"] = self.java_opts
        # SIGHUP's disposition is set by env(1), which execs: a preexec_fn would make CPython
        # fork() instead of vfork(), running grpcio's at-fork handlers in this process, which
        # holds live channels (one such fork hung in those handlers).
        hangup = "--ignore-signal=HUP" if ignore_hangup else "--default-signal=HUP"
        started = time.perf_counter()
        # env and scripts/gateway exec, so this pid is the JVM's (RSS, jcmd, the state lock).
        self.proc = subprocess.Popen(["/usr/bin/env", hangup] + argv,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE if self.stderr_unread
                                     else subprocess.STDOUT, text=True, env=env)
        self.uris = []
        ready = threading.Event()  # the connection help's last line, or the output's end
        helped = []  # the connection help arrived (not just the end of a failed start's output)
        proc = self.proc

        def pump():
            log = open(self.log_file, "a") if self.log_file else None
            try:
                for line in proc.stdout:
                    self.output.append(line)
                    if log:
                        log.write(line)
                    m = SERVING.search(line)
                    if m:
                        self.uris.append(f"{m.group(1)}://{m.group(2)}")
                        if m.group(1) != "grpc+unix":
                            self.port = int(m.group(2).rsplit(":", 1)[1])
                    if line.startswith(READY):
                        helped.append(True)
                        ready.set()
            finally:
                if log:
                    log.close()
                ready.set()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        served = False
        try:
            # At the output's end the process may not have exited yet: poll() alone saw a
            # failed start as served.
            served = ready.wait(timeout) and bool(helped) and self.proc.poll() is None
        finally:
            if not served:  # also when interrupted while waiting: no process left behind
                self.proc.kill()
                self.proc.wait(10)
                self.proc = None
        if not served:
            raise RuntimeError("gateway did not start:\n" + "".join(self.output[-40:]))
        # From exec to serving: the launcher's heap look-up, JVM start, engine open, listeners.
        self.startup_s = time.perf_counter() - started

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def uri(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout: float = 60.0) -> int:
        """Sends ``sig`` and waits (bounded) for the exit; returns the exit status, with every
        line the daemon wrote already in ``output``."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError("gateway did not stop within %.0fs" % timeout)
        finally:
            self.proc = None
            # The pump ends at EOF, right after the exit: its last lines are the shutdown report.
            self._pump.join(10)
        return rc

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)

    def hangup(self) -> None:
        """SIGHUP without waiting for an outcome (the daemon may ignore it)."""
        self.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)

    def reload(self, timeout: float = 30.0) -> str:
        """Sends SIGHUP and waits for the daemon to report the outcome: 'reloaded', or the
        refusal (or unknown outcome) line."""
        ok, bad = self._count(RELOADED), self._count(REFUSED) + self._count(UNKNOWN)
        self.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self._count(RELOADED) > ok
                   or self._count(REFUSED) + self._count(UNKNOWN) > bad, timeout,
                   "the daemon to report a reload outcome")
        if self._count(RELOADED) > ok:
            return "reloaded"
        return next(l for l in reversed(list(self.output))
                    if REFUSED in l or UNKNOWN in l).strip()

    def saw(self, needle: str, timeout: float = 10.0) -> None:
        """Waits (bounded) for a line containing ``needle``: the daemon's log lines are written
        by a thread of its own, up to about 100 ms after the call that logged them returned."""
        wait_until(lambda: self._count(needle) > 0, timeout, f"a log line with {needle!r}")

    def quiet_log(self, quiet: float = 0.3, timeout: float = 30.0) -> None:
        """Waits (bounded) until no line has arrived for ``quiet`` seconds: every line of the
        calls made so far is in ``output`` (the writer thread picks lines up within 100 ms)."""
        end = time.monotonic() + timeout
        seen, since = len(self.output), time.monotonic()
        while time.monotonic() - since < quiet:
            if time.monotonic() > end:
                raise AssertionError(f"the daemon's log did not quiet down within {timeout:.0f}s")
            time.sleep(0.02)
            if len(self.output) != seen:
                seen, since = len(self.output), time.monotonic()

    def _count(self, needle: str) -> int:
        return sum(needle in line for line in list(self.output))

    def stop_report(self, timeout: float = 60.0) -> dict:
        """SIGTERM, wait; the exit status and this stop's accounting line's figures."""
        before = len(self.output)  # the output spans restarts: only this stop's line counts
        rc = self.stop(timeout=timeout)
        s = self._accounting(rc, before)
        assert s, f"exit {rc}, no shutdown accounting line:\n" + "".join(self.output[-40:])
        return s

    def _accounting(self, rc: int, since: int) -> dict | None:
        m = next((m for l in self.output[since:] if (m := STOPPED.search(l))), None)
        if m is None:
            return None
        return {"rc": rc, "leaked_bytes": int(m.group(1)), "leaked_streams": int(m.group(2)),
                "drained": m.group(3) == "true", "allocator_peak_bytes": int(m.group(4)),
                "connections_peak": int(m.group(5)), "stream_peak_bytes": int(m.group(6))}

    def assert_clean_stop(self) -> dict | None:
        """Stops and asserts a clean exit (0: nothing leaked, every stream drained), with the
        daemon's last lines when not. Returns the accounting line's figures; None when there is
        none to read (standard error left unread, a JSON log) or the daemon was stopped already
        (its stop was checked then)."""
        if self.proc is None:
            return None
        before = len(self.output)
        rc = self.stop()
        assert rc == 0, f"the gateway did not exit cleanly (exit {rc}):\n" \
            + "".join(self.output[-40:])
        s = self._accounting(rc, before)
        if s is not None:
            assert s["leaked_bytes"] == 0 and s["leaked_streams"] == 0 and s["drained"], \
                (s, "".join(self.output[-40:]))
        return s

    def close(self) -> None:
        """Stops cleanly (exit 0: nothing leaked, every stream drained); removes a state
        directory made for this daemon alone."""
        try:
            self.assert_clean_stop()
        finally:
            if self.remove_on_close:
                shutil.rmtree(self.remove_on_close, ignore_errors=True)


class Postgres:
    """A private PostgreSQL 15 cluster (docs/deployment.md, "Shared journal"): initdb into a fresh
    0700 directory, 127.0.0.1 on a free port, its Unix socket in that directory, SCRAM password
    authentication with a generated password in a 0600 file there. PostgreSQL refuses to run as
    root, so as root its binaries run as ``transit-pg`` (scripts/setup.d/30-postgresql.sh).
    ``close()`` stops it (immediate shutdown) and removes the directory.

    Not thread-safe: one test thread starts, uses and closes it.
    """

    BIN = Path(os.environ.get("TRANSIT_PG_BIN", "/usr/lib/postgresql/15/bin"))
    OS_USER = "transit-pg"
    ROLE = "transit"

    @classmethod
    def available(cls) -> bool:
        return (cls.BIN / "initdb").exists() and (cls.BIN / "pg_ctl").exists()

    BIND_ATTEMPTS = 3

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="transit-pg-"))
        os.chmod(self.dir, 0o700)
        self.password_file = self.dir / "password"
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(24))
        self.root = os.geteuid() == 0
        if self.root:
            subprocess.run(["chown", "-R", f"{self.OS_USER}:", str(self.dir)], check=True,
                           timeout=30)
        self.port = None
        self.databases = 0
        try:
            self._run(str(self.BIN / "initdb"), "-D", str(self.dir / "data"), "-U", self.ROLE,
                      f"--pwfile={self.password_file}", "-A", "scram-sha-256", "-E", "UTF8",
                      "--locale=C", "--no-sync")
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        """pg_ctl start on a port picked just before (initdb takes seconds: a port picked before
        it is more likely gone); another port when that one was taken meanwhile, a few times."""
        log = self.dir / "server.log"
        for attempt in range(self.BIND_ATTEMPTS):
            port = free_port()
            logged = log.stat().st_size if log.exists() else 0
            try:
                self._run(str(self.BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-l",
                          str(log), "-w", "-t", "60", "-o",
                          f"-p {port} -k {self.dir} -c listen_addresses=127.0.0.1", "start")
            except RuntimeError:
                with open(log, "rb") as f:
                    f.seek(logged)
                    taken = b"Address already in use" in f.read()
                if not taken or attempt == self.BIND_ATTEMPTS - 1:
                    raise
                continue
            self.port = port
            return

    @classmethod
    def run_as_owner(cls, *cmd):
        """Runs a PostgreSQL binary (as ``transit-pg`` when root); RuntimeError with its output
        when it fails."""
        full = (["runuser", "-u", cls.OS_USER, "--"] if os.geteuid() == 0 else []) + list(cmd)
        # Output to a file, not a pipe: the server pg_ctl starts must not hold a pipe open.
        with tempfile.TemporaryFile() as out:
            r = subprocess.run(full, stdout=out, stderr=subprocess.STDOUT, timeout=90)
            if r.returncode != 0:
                out.seek(0)
                raise RuntimeError(f"{' '.join(full)} failed: {out.read().decode(errors='replace')}")

    def _run(self, *cmd):
        self.run_as_owner(*cmd)

    def sql(self, database: str, sql: str) -> list:
        """Rows of ``sql`` (psql, unaligned), each a list of strings."""
        env = dict(os.environ, PGPASSWORD=self.password_file.read_text().strip())
        r = subprocess.run([str(self.BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port),
                            "-U", self.ROLE, "-d", database, "-At", "-F", "\t", "-v",
                            "ON_ERROR_STOP=1", "-c", sql],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        return [line.split("\t") for line in r.stdout.splitlines()]

    def create_database(self) -> str:
        self.databases += 1
        name = f"journal_{self.databases}"
        self.sql("postgres", f"CREATE DATABASE {name}")
        return name

    def journal_config(self, database: str, **extra) -> dict:
        """gateway.json's ``journal`` section for ``database`` of this cluster."""
        return dict({"kind": "postgresql", "host": "127.0.0.1", "port": self.port,
                     "database": database, "user": self.ROLE,
                     "password_file": str(self.password_file)}, **extra)

    def close(self) -> None:
        try:
            if (self.dir / "data" / "postmaster.pid").exists():
                self._run(str(self.BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-m",
                          "immediate", "-w", "-t", "60", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


VERSITYGW_VERSION = "v1.8.0"


class Versitygw:
    """A real versitygw (S3 API over a POSIX directory, Apache-2.0) on 127.0.0.1 with generated
    credentials: the binary scripts/setup.d/30-versitygw.sh caches (``TRANSIT_VERSITYGW``
    overrides), the keys in 0600 files under ``work`` (passed to it by environment, never on its
    command line), its objects under ``work/root``. Restartable on the same port and root.

    Not thread-safe: one test thread drives it.
    """

    def __init__(self, work: Path):
        self.work = Path(work)
        self.root = self.work / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.access_key = "tf" + secrets.token_hex(8)
        self.secret_key = secrets.token_hex(20)
        self.access_key_file = self._private("s3-access-key", self.access_key)
        self.secret_key_file = self._private("s3-secret-key", self.secret_key)
        self.port = None  # picked by the first start; restarts keep it
        self.proc = None

    @staticmethod
    def binary() -> Path:
        env = os.environ.get("TRANSIT_VERSITYGW")
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = Path(env) if env else cache / "transit-flight" / f"versitygw-{VERSITYGW_VERSION}" / "versitygw"
        assert os.access(path, os.X_OK), \
            f"versitygw is not at {path}: run scripts/setup.d/30-versitygw.sh"
        return path

    def _private(self, name: str, value: str) -> Path:
        path = self.work / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(value + "\n")
        return path

    @property
    def endpoint(self) -> str:
        assert self.port is not None, "versitygw has no port before its first start"
        return f"http://127.0.0.1:{self.port}"

    def create_bucket(self, bucket: str) -> Path:
        """In the POSIX backend a bucket is a top-level directory."""
        path = self.root / bucket
        path.mkdir(exist_ok=True)
        return path

    def segments(self, bucket: str, **extra) -> dict:
        """The gateway's "segments" section for ``bucket`` (made if absent), short timeouts."""
        self.create_bucket(bucket)
        section = {"kind": "s3", "endpoint": self.endpoint, "bucket": bucket,
                   "prefix": "segments/", "access_key_file": str(self.access_key_file),
                   "secret_key_file": str(self.secret_key_file), "connect_timeout_ms": 1000,
                   "request_timeout_ms": 5000, "sweep_min_age_ms": 0}
        section.update(extra)
        return section

    def objects(self, bucket: str) -> dict:
        """{sha256 hex: file} of the segment objects in ``bucket``."""
        d = self.root / bucket / "segments"
        return {p.name: p for p in d.iterdir() if len(p.name) == 64} if d.exists() else {}

    BIND_ATTEMPTS = 3

    def start(self, timeout: float = 20.0) -> "Versitygw":
        """Starts versitygw: again on its port (the daemons' configuration names it), or the
        first time on a port picked just before, another one when that was taken meanwhile."""
        for attempt in range(self.BIND_ATTEMPTS):
            port = self.port if self.port is not None else free_port()
            try:
                self.proc = self.launch(port, self.root, self.access_key, self.secret_key,
                                        self.work / "versitygw.log", timeout)
            except PortInUse:
                if self.port is not None or attempt == self.BIND_ATTEMPTS - 1:
                    raise
                continue
            self.port = port
            return self

    @classmethod
    def launch(cls, port: int, root: Path, access_key: str, secret_key: str, log_path: Path,
               timeout: float = 20.0, **popen) -> subprocess.Popen:
        """Starts versitygw on 127.0.0.1:``port`` over ``root`` (keys by environment, output
        appended to ``log_path``) and waits until it listens; returns the process. When it does
        not, it is killed: PortInUse when the port was taken, else AssertionError."""
        env = dict(os.environ, ROOT_ACCESS_KEY_ID=access_key, ROOT_SECRET_ACCESS_KEY=secret_key)
        with open(log_path, "a") as log:
            logged = log.tell()
            proc = subprocess.Popen([str(cls.binary()), "--quiet", "--keep-alive", "--port",
                                     f"127.0.0.1:{port}", "posix", str(root)],
                                    stdout=log, stderr=subprocess.STDOUT, env=env, **popen)

        def listening():
            assert proc.poll() is None, f"versitygw exited; see {log_path}"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
            except OSError:
                return False
            # Another process may hold the port: versitygw then exits at once, failing its bind.
            time.sleep(0.1)
            assert proc.poll() is None, f"versitygw exited; see {log_path}"
            return True

        try:
            wait_until(listening, timeout, "versitygw to listen")
        except BaseException:
            proc.kill()
            proc.wait(10)
            with open(log_path, "rb") as f:
                f.seek(logged)
                if b"address already in use" in f.read():
                    raise PortInUse(f"127.0.0.1:{port} was taken; see {log_path}") from None
            raise
        return proc

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


class Journal:
    """Read-only queries over the engine journal (safe while the daemon runs: SQLite WAL), the
    evidence that a namespace ran exactly once (one query row per namespace, next sequence per
    principal)."""

    def __init__(self, path: Path):
        self.path = path

    def _rows(self, sql, *args):
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def next_sequence(self, principal: int) -> int:
        rows = self._rows("SELECT next_sequence FROM principals WHERE principal = ?", principal)
        return rows[0][0] & U64 if rows else 1

    def queries(self, principal: int) -> dict:
        """{namespace: (correlation, state)}; raises if a namespace has two query rows."""
        out = {}
        for ns, corr, state in self._rows(
                "SELECT namespace, correlation, state FROM queries WHERE principal = ?", principal):
            assert ns & U64 not in out, f"namespace {ns} has two queries"
            out[ns & U64] = (corr & U64, state)
        return out

    def query_rows(self) -> int:
        return self._rows("SELECT COUNT(*) FROM queries")[0][0]

    def commands(self, principal: int) -> int:
        return self._rows("SELECT COUNT(*) FROM commands WHERE principal = ?", principal)[0][0]

    def uploads(self, principal: int) -> int:
        """The principal's uploads, submitted or not (each with its parts)."""
        return self._rows("SELECT COUNT(*) FROM uploads WHERE principal = ?", principal)[0][0]

    def rights_epoch(self) -> int:
        """The epoch of the deployment's rights the journal holds (0: none recorded)."""
        rows = self._rows("SELECT epoch FROM rights_head WHERE id = 1")
        return rows[0][0] if rows else 0

    def lease(self, correlation: int):
        """(owner, holder, attempt, lease_until_ms) of the query's execution lease, or None."""
        rows = self._rows("SELECT lease_owner, lease_holder, attempt, lease_until_ms FROM queries"
                          " WHERE correlation = ?", correlation)
        return (rows[0][0] & U64,) + tuple(rows[0][1:]) if rows else None

    def state_of(self, correlation: int):
        rows = self._rows("SELECT state FROM queries WHERE correlation = ?", correlation)
        return rows[0][0] if rows else None

    def wait_state(self, correlation: int, states, timeout: float = 60.0):
        """Polls (bounded) until the query is in one of ``states``; returns the state seen."""
        end = time.monotonic() + timeout
        while True:
            s = self.state_of(correlation)
            if s in states or time.monotonic() > end:
                return s
            time.sleep(0.05)


class PostgresJournal(Journal):
    """The same read-only queries over a PostgreSQL journal (``journal`` section of gateway.json),
    through psql."""

    def __init__(self, section: dict):
        super().__init__(None)
        self.section = section

    def query(self, sql: str) -> list:
        """Rows of any SQL (the benchmarks read PostgreSQL's statistics and settings)."""
        return self._rows(sql)

    def _rows(self, sql, *args):
        def literal(a):
            assert isinstance(a, int), "only integer parameters"
            # Unsigned ids are stored as their signed 64-bit patterns.
            return str(a - (1 << 64) if a >= 1 << 63 else a)
        text = sql
        for a in args:
            text = text.replace("?", literal(a), 1)
        env = dict(os.environ, PGPASSWORD=Path(self.section["password_file"]).read_text().strip())
        r = subprocess.run([str(Postgres.BIN / "psql"), "-h", self.section["host"], "-p",
                            str(self.section["port"]), "-U", self.section["user"], "-d",
                            self.section["database"], "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-c", text], capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        rows = []
        for line in r.stdout.splitlines():
            rows.append(tuple(int(v) if v.lstrip("-").isdigit() else v for v in line.split("\t")))
        return rows


class ClusterEndpoint:
    """One way into a ``Cluster``: its edge or one replica. It offers what the call helpers
    (calls.py, clients.py) ask of a daemon: ``uri``, ``target``, ``token``, ``auth`` and
    ``state_dir`` (the one deployment's directory: its gateway.json and demo data)."""

    def __init__(self, name: str, uri: str, deployment: Path, pid: int = None,
                 state_dir: Path = None):
        self.name = name
        self.uri = uri
        self.target = uri.split("://", 1)[1]
        self.port = int(self.target.rsplit(":", 1)[1])
        self.pid = pid
        self.replica_dir = state_dir
        self.state_dir = deployment

    def token(self, caller: str) -> str:
        return (self.state_dir / "credentials" / f"{caller}.token").read_text().strip()

    def auth(self, caller: str = "primitive"):
        return [("authorization", f"Bearer {self.token(caller)}")]

    def alive(self) -> bool:
        """Runs (a killed replica stays a zombie until its parent, init, reaps it)."""
        return not _zombie(self.pid)

    def __repr__(self):
        return f"<{self.name} {self.uri}>"


class Cluster:
    """A local replicated deployment made and ended by ``scripts/cluster up/down`` over
    ``state_dir`` (docs/deployment.md, "Local cluster"): PostgreSQL, versitygw, N replicas and
    the nginx edge, described by ``state_dir``/cluster.json. ``edge`` and ``replicas`` are
    ``ClusterEndpoint``s; ``restart_replica`` runs one replica again as a harness ``Daemon`` (with
    test faults), which the test then stops or kills itself. ``callers`` adds that many callers
    (``scripts/cluster up --callers``, on ``callers_on`` or spread); ``java_opts`` reaches every replica's JVM
    (TRANSIT_JAVA_OPTS) and ``env`` adds variables for every part ``up`` starts.

    Not thread-safe: one test thread drives it.
    """

    def __init__(self, state_dir: Path, replicas: int = 3, faults: str = None, callers: int = 8,
                 callers_on: str = None, java_opts: str = None, env: dict = None):
        self.state_dir = Path(state_dir)
        self.count = replicas
        self.faults = faults
        self.callers = callers  # callers besides the demo's three (up --callers)
        self.callers_on = callers_on  # their one publication (up --callers-on), else spread
        self.java_opts = java_opts
        self.env = env or {}
        self.info = None
        self.s3_proc = None  # versitygw when start_s3 ran it again (our child)

    def _script(self, *args, timeout: float = 300.0) -> subprocess.CompletedProcess:
        env = dict(_env(), **self.env)
        env.pop("TRANSIT_TEST_FAULTS", None)
        if self.faults:
            env["TRANSIT_TEST_FAULTS"] = self.faults
        if self.java_opts is not None:
            env["TRANSIT_JAVA_OPTS"] = self.java_opts
        with subprocess.Popen([str(ROOT / "scripts" / "cluster"), *args, "--state-dir",
                               str(self.state_dir)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) as p:
            try:
                out, err = p.communicate(timeout=timeout)
            except KeyboardInterrupt:
                # ^C, or a signal the caller turned into one (chaos.py): `up` must not go on
                # starting parts after the caller's own cleanup ran `down`. SIGTERM makes it stop
                # what it started (it ignores one that comes during that); waited for. A `down`
                # is left to finish.
                if args[0] == "up" and p.poll() is None:
                    p.terminate()
                    try:
                        p.communicate(timeout=180)
                    except subprocess.TimeoutExpired:
                        pass
                raise
            except subprocess.TimeoutExpired:
                # SIGTERM, not subprocess.run's SIGKILL: `up` then stops what it had started.
                p.terminate()
                try:
                    out, err = p.communicate(timeout=180)
                except subprocess.TimeoutExpired:
                    p.kill()
                    try:
                        out, err = p.communicate(timeout=30)
                    except subprocess.TimeoutExpired as e:
                        # What the script started (setsid) may hold its pipes open for good:
                        # the output so far, then the pipes are closed unread.
                        err = e.stderr or b""  # raw bytes, even in text mode
                        err = err if isinstance(err, str) else err.decode(errors="replace")
                raise AssertionError(f"scripts/cluster {args[0]} gave no answer in {timeout:.0f} s"
                                     f" (stopped):\n{err[-3000:]}") from None
            return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def up(self) -> "Cluster":
        started = time.perf_counter()
        on = ("--callers-on", self.callers_on) if self.callers_on else ()
        r = self._script("up", "--replicas", str(self.count), "--callers", str(self.callers), *on)
        assert r.returncode == 0, f"scripts/cluster up failed:\n{r.stderr[-3000:]}"
        self.up_s = time.perf_counter() - started
        self.info = json.loads((self.state_dir / "cluster.json").read_text())
        return self

    def down(self) -> str:
        r = self._script("down", timeout=180)
        if self.s3_proc is not None:  # our child once start_s3 ran it: reaped, not left a zombie
            self.s3_proc.wait(30)
            self.s3_proc = None
        assert r.returncode == 0, f"scripts/cluster down failed:\n{r.stderr[-3000:]}"
        return r.stderr

    def status(self) -> str:
        return self._script("status", timeout=30).stdout

    def stop_reports(self) -> dict:
        """{replica name: (leaked_bytes, leaked_streams, drained)} from each replica's log, for
        the replicas that ended by SIGTERM (a killed one writes no report: None)."""
        out = {}
        for r in self.replicas:
            log = (r.replica_dir / "gateway.log").read_text()
            m = STOPPED.search(log)
            out[r.name] = (int(m.group(1)), int(m.group(2)), m.group(3) == "true") if m else None
        return out

    @property
    def deployment(self) -> Path:
        return self.state_dir / "deployment"

    @property
    def edge(self) -> ClusterEndpoint:
        e = self.info["edge"]
        return ClusterEndpoint("edge", e["uri"], self.deployment, e["pid"])

    @property
    def replicas(self) -> list:
        return [ClusterEndpoint(r["name"], r["uri"], self.deployment, r["pid"],
                                Path(r["state_dir"]))
                for r in self.info["replicas"]]

    def principal(self, caller: str) -> int:
        cfg = json.loads((self.deployment / "gateway.json").read_text())
        return next(c["principal"] for c in cfg["callers"] if c["name"] == caller)

    def publication(self, caller: str) -> str:
        cfg = json.loads((self.deployment / "gateway.json").read_text())
        return next(c["publication"] for c in cfg["callers"] if c["name"] == caller)

    # -- the shared systems, restarted under load (chaos.py) -----------------------------------

    def _record(self, part: str, pid: int) -> None:
        """A restarted part's new PID in cluster.json (0600), which status and down read."""
        self.info[part]["pid"] = pid
        path = self.state_dir / "cluster.json"
        tmp = path.with_suffix(".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(self.info, f, indent=2)
        os.replace(tmp, path)

    def stop_postgres(self, mode: str = "fast") -> None:
        """pg_ctl stop -m ``mode`` (fast: sessions ended, a checkpoint; immediate: none)."""
        Postgres.run_as_owner(str(Postgres.BIN / "pg_ctl"), "-D", self.info["postgres"]["data_dir"],
                              "-m", mode, "-w", "-t", "60", "stop")

    def start_postgres(self) -> None:
        """Starts the stopped PostgreSQL again on its port, socket directory and log."""
        data = Path(self.info["postgres"]["data_dir"])
        port = int(self.info["postgres"]["dsn"].rsplit(":", 1)[1].split("/")[0])
        Postgres.run_as_owner(str(Postgres.BIN / "pg_ctl"), "-D", str(data), "-l",
                              str(data.parent / "server.log"), "-w", "-t", "60", "-o",
                              f"-p {port} -k {data.parent} -c listen_addresses=127.0.0.1", "start")
        self._record("postgres", int((data / "postmaster.pid").read_text().split()[0]))

    def kill_s3(self) -> None:
        """kill -9 of versitygw, waited for (reaped when this process started it)."""
        pid = self.info["s3"]["pid"]
        os.kill(pid, signal.SIGKILL)
        if self.s3_proc is not None and self.s3_proc.pid == pid:
            self.s3_proc.wait(30)
        else:
            wait_until(lambda: _zombie(pid), 30, "versitygw to die")

    def start_s3(self) -> None:
        """versitygw again on the same port, root and keys; its PID where down finds it."""
        s3 = self.state_dir / "s3"
        port = int(self.info["s3"]["endpoint"].rsplit(":", 1)[1])
        self.s3_proc = Versitygw.launch(port, s3 / "root", (s3 / "access-key").read_text().strip(),
                                        (s3 / "secret-key").read_text().strip(),
                                        s3 / "versitygw.log", start_new_session=True)
        (s3 / "pid").write_text(f"{self.s3_proc.pid}\n")
        self._record("s3", self.s3_proc.pid)

    def journal(self) -> "PostgresJournal":
        """The shared journal, read through psql with the cluster's password file."""
        replica = json.loads((self.replicas[0].replica_dir / "gateway.json").read_text())
        section = dict(replica["journal"], password_file=self.info["postgres"]["password_file"])
        return PostgresJournal(section)

    def kill9(self, replica: ClusterEndpoint, timeout: float = 30.0) -> None:
        """SIGKILL to a replica ``up`` started (not a child of this process: polled to its end)."""
        os.kill(replica.pid, signal.SIGKILL)
        wait_until(lambda: not replica.alive(), timeout, f"{replica.name} to die")

    def stop_replica(self, replica: ClusterEndpoint, timeout: float = 60.0) -> None:
        """SIGTERM (a graceful stop gives the replica's leases up), polled to its end."""
        os.kill(replica.pid, signal.SIGTERM)
        wait_until(lambda: not replica.alive(), timeout, f"{replica.name} to stop")

    def restart_replica(self, replica: ClusterEndpoint, faults: str = None) -> Daemon:
        """Runs the (stopped) replica again over its own state directory and port, as a harness
        Daemon with ``faults``; the caller stops or kills it."""
        return Daemon(replica.replica_dir, configured=True, faults=faults).start()


def _zombie(pid: int) -> bool:
    """True when ``pid`` is gone or a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
