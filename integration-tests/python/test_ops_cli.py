"""The command line (issue 17): --help/--version exit 0, one-line usage errors, check-config
refusing each data mismatch with exit 2 naming the file and column (run likewise), and the
keys and credentials run would refuse without writing any, a state directory the daemon's user
cannot use (check-config run as nobody),
init --parquet writing a configuration that run serves at once, and compact-journal giving the
journal's space back only while no gateway runs."""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calls import Caller
from daemon import ROOT, Daemon, gateway_once as gateway, help_snippets, run_snippet, wait_until


@pytest.fixture(scope="module")
def initialized(tmp_path_factory):
    """A generated Parquet file and the configuration init wrote for it."""
    root = tmp_path_factory.mktemp("init")
    data = root / "trips.parquet"
    pq.write_table(pa.table({
        "trip_id": pa.array(range(1, 101), pa.int64()),
        "city": pa.array([f"c{i % 7}" for i in range(100)], pa.string()),
        "fare": pa.array([i * 0.5 for i in range(100)], pa.float64()),
    }, schema=pa.schema([pa.field("trip_id", pa.int64(), nullable=False),
                         pa.field("city", pa.string()), pa.field("fare", pa.float64())])), data)
    config = root / "etc" / "gateway.json"
    r = gateway("init", "--parquet", str(data), "--table", "trips", "--caller", "ops",
                "--config", str(config), "--port", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "credential in" in r.stdout
    return data, config


def test_relative_paths_are_the_callers_as_with_the_distributions_launcher(initialized, tmp_path):
    """scripts/gateway runs the JVM in the caller's directory (until 2026-12-06 it ran it in the
    checkout, where a relative --config named another file)."""
    data, config = initialized
    r = gateway("check-config", "--config", os.path.join("etc", "gateway.json"),
                cwd=config.parent.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(data, work / "t.parquet")
    r = gateway("init", "--parquet", "t.parquet", "--config", "g.json", "--state-dir", "s",
                "--port", "0", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (work / "g.json").is_file() and not (ROOT / "g.json").exists()
    r = gateway("check-config", "--config=g.json", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr


def test_help_and_version_exit_0():
    r = gateway("--help")
    assert r.returncode == 0 and "check-config" in r.stdout and "Exit codes" in r.stdout
    r = gateway("run", "--help")
    assert r.returncode == 0 and "--config=FILE" in r.stdout
    r = gateway("--version")
    # The pom's own version, as the archive's name carries it (until 2026-12-07 a constant).
    pom = (ROOT / "pom.xml").read_text()
    version = re.search(r"<artifactId>transit-flight-parent</artifactId>\s*<version>([^<]+)</version>",
                        pom)
    assert version, "the root pom's version"
    # With the commit the jar was built from (since 2026-12-07; "unknown" from a tree without git's
    # history) and the journal format it implements.
    assert r.returncode == 0 and r.stdout.startswith(f"transit-flight {version.group(1)} (commit "), \
        r.stdout
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=7", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode == 0:
        assert f"(commit {head.stdout.strip()}" in r.stdout, r.stdout
    assert "journal format 1" in r.stdout, r.stdout


def test_usage_errors_are_one_line_exit_64(tmp_path):
    r = gateway("demo", "--state-dir", str(tmp_path / "s"), "--port", "abc")
    assert r.returncode == 64
    assert "Invalid value for option '--port': 'abc'" in r.stderr
    assert "Exception" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = gateway("run")
    assert r.returncode == 64 and "--config" in r.stderr and r.stderr.count("\n") == 1
    r = gateway("demo", "--state-dir", str(tmp_path / "s"), "--warm-up", "-1")
    assert r.returncode == 64 and "--warm-up: -1" in r.stderr and r.stderr.count("\n") == 1
    # An ops option's bad value names the option (until 2026-12-06: exit 2, naming the file's
    # ops.* field, which the file may not even have).
    for flag, value in (("--log-level", "bogus"), ("--log-format", "JSON"),
                        ("--metrics-port", "70000"), ("--drain-notice-ms", "400000")):
        r = gateway("run", "--config", str(tmp_path / "absent.json"), flag, value)
        assert r.returncode == 64 and f"{flag}: {value}" in r.stderr, (flag, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr


def test_a_warm_up_at_start_leaves_the_served_deployment_untouched(tmp_path):
    """--warm-up N runs N statements on a scratch demo gateway before the configured one binds
    its port: the served journal holds none of them and the scratch state is gone."""
    state = tmp_path / "warm"
    d = Daemon(state, command=[str(ROOT / "scripts" / "gateway"), "demo", "--state-dir",
                               str(state), "--port", "0", "--warm-up", "25"])
    d.start()
    try:
        log = "".join(d.output)
        assert "warm-up: 25 statements and 25 round trips on a scratch gateway" in log, log
        # The scratch gateway's own lines (its listening notice, its access lines) are not logged.
        assert log.count("transit flight gateway listening on") == 1, log
        assert "access - rpc" not in log.split("warm-up: 25")[0], log
        assert not list((state / "tmp").glob("transit-warm-*")), "scratch state removed"
        j = sqlite3.connect(f"file:{state / 'engine' / 'journal.sqlite'}?mode=ro", uri=True)
        try:
            assert j.execute("SELECT COUNT(*) FROM commands").fetchone() == (0,)
        finally:
            j.close()
        c = Caller(d, "primitive")
        assert c.next_sequence() == 1
        table, _ = c.query("SELECT COUNT(*) FROM primitive")
        assert table.column(0).to_pylist() == [1_000_000]
        # The control of the check above: the served gateway's own calls are logged with it.
        d.saw("access - rpc")
    finally:
        d.assert_clean_stop()


def test_a_stop_during_the_warm_up_removes_its_scratch_state(tmp_path):
    """SIGTERM before the daemon served exits through the JVM's own handler (143): nothing to
    drain, and the warm-up's scratch gateway state goes with it (until 2026-12-06 it stayed)."""
    state = tmp_path / "warm"
    proc = subprocess.Popen([str(ROOT / "scripts" / "gateway"), "demo", "--state-dir", str(state),
                             "--port", "0", "--warm-up", "100000"],
                            env=dict(os.environ, TRANSIT_NO_BUILD="1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _scratch_statements(state) > 0, 120,
                   "the warm-up's scratch gateway to serve statements")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        assert not list((state / "tmp").glob("transit-warm-*")), "scratch state removed"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def _scratch_statements(state):
    """Commands the warm-up's scratch gateway has journaled so far (0 before it serves)."""
    for journal in (state / "tmp").glob("transit-warm-*/engine/journal.sqlite"):
        try:
            j = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1)
            try:
                return j.execute("SELECT COUNT(*) FROM commands").fetchone()[0]
            finally:
                j.close()
        except sqlite3.Error:
            return 0  # still being created
    return 0


def test_init_then_run_answers_a_pyarrow_statement(initialized):
    data, config = initialized
    cfg = json.loads(config.read_text())
    assert [c["name"] for c in cfg["publications"][0]["columns"]] == ["trip_id", "city", "fare"]
    assert [c["type"] for c in cfg["publications"][0]["columns"]] == ["INT64", "UTF8", "FLOAT64"]
    assert cfg["publications"][0]["columns"][0]["nullable"] is False
    state = config.parent / "state"
    assert (state / "credentials" / "ops.token").stat().st_mode & 0o777 == 0o600
    assert gateway("check-config", f"--config={config}").returncode == 0
    d = Daemon(state, command=[str(ROOT / "scripts" / "gateway"), "run", f"--config={config}"])
    d.start()
    try:
        # The connection help's snippets run as printed on this Table's own columns (until
        # 2026-12-07 they summed the demo's column a, refused query.unknown_column here), and
        # its install hint names the checkout's client.
        snippets = help_snippets(d)
        client = ROOT / "clients" / "python"
        assert snippets["Python"][0].startswith(f"Python (pip install {client};"), snippets
        for name in ("ADBC", "Python"):  # ADBC's sends sequence 1: this deployment's first
            code = snippets[name][1]
            assert "SELECT COUNT(*), SUM(trip_id) FROM trips" in code, code
            run = run_snippet(code, config.parent)
            assert run.returncode == 0, f"{name} snippet failed:\n{code}\n{run.stderr[-3000:]}"
            assert "100" in run.stdout and str(sum(range(1, 101))) in run.stdout, run.stdout
        c = Caller(d, "ops")
        table, _ = c.query("SELECT COUNT(*), SUM(trip_id) FROM trips WHERE trip_id > 50")
        assert table.column(0).to_pylist() == [50]
        assert table.column(1).to_pylist() == [sum(range(51, 101))]
    finally:
        d.assert_clean_stop()
    r = gateway("init", "--parquet", str(data), "--config", str(config))
    assert r.returncode == 2 and "exists" in r.stderr


def test_compact_journal_runs_only_while_the_gateway_is_stopped_and_keeps_every_row(initialized,
                                                                                     tmp_path):
    _, config = initialized
    password = tmp_path / "journal.password"
    password.write_text("unused\n")
    password.chmod(0o600)
    shared = variant(config, tmp_path, "shared.json", lambda p: None)
    cfg = json.loads(shared.read_text())
    cfg["journal"] = {"kind": "postgresql", "host": "127.0.0.1", "database": "journal",
                      "user": "gw", "password_file": str(password)}
    shared.write_text(json.dumps(cfg))
    refused = gateway("compact-journal", f"--config={shared}")
    assert refused.returncode == 2 and "journal.kind is postgresql" in refused.stderr, refused
    state = config.parent / "state"
    d = Daemon(state, command=[str(ROOT / "scripts" / "gateway"), "run", f"--config={config}"])
    d.start()
    try:
        c = Caller(d, "ops")
        for n in range(20):
            table, _ = c.query(f"SELECT COUNT(*) FROM trips WHERE trip_id > {n}")
            assert table.column(0).to_pylist() == [100 - n]
        following = c.next_sequence()
        busy = gateway("compact-journal", f"--config={config}")
        assert busy.returncode == 2 and "in use by another gateway" in busy.stderr, busy.stderr
    finally:
        d.assert_clean_stop()
    journal = state / "engine" / "journal.sqlite"
    if os.geteuid() == 0:
        # Run as another user than the journal's (sudo), the copy would be that user's and the
        # daemon could not open it at its next start: refused, nothing changed.
        os.chown(journal, 65534, 65534)
        other = gateway("compact-journal", f"--config={config}")
        assert other.returncode == 2 and "run compact-journal as the daemon's user" in other.stderr
        os.chown(journal, 0, 0)
    r = gateway("compact-journal", f"--config={config}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("journal compacted: "), r.stdout
    assert journal.stat().st_mode & 0o777 == 0o600
    d.start()
    try:
        c = Caller(d, "ops")
        assert c.next_sequence() == following, "every record kept"
        table, _ = c.query("SELECT COUNT(*) FROM trips WHERE trip_id > 90")
        assert table.column(0).to_pylist() == [10]
    finally:
        d.assert_clean_stop()


def variant(config, tmp_path, name, change):
    cfg = json.loads(config.read_text())
    change(cfg["publications"][0])
    out = tmp_path / name
    # Relative paths resolve against the file's directory: keep the original's state directory.
    cfg["state_dir"] = str(config.parent / cfg["state_dir"])
    out.write_text(json.dumps(cfg))
    return out


def test_check_config_refuses_data_mismatches_with_exit_2(initialized, tmp_path):
    data, config = initialized
    missing = variant(config, tmp_path, "missing.json",
                      lambda p: p.update(files=[str(tmp_path / "gone.parquet")]))
    retyped = variant(config, tmp_path, "retyped.json",
                      lambda p: p["columns"][2].update(type="INT64"))
    ghost = variant(config, tmp_path, "ghost.json", lambda p: p["columns"].append(
        {"name": "ghost", "type": "INT64", "nullable": True}))
    cases = [(missing, ["gone.parquet"]), (retyped, ["fare", "trips.parquet"]),
             (ghost, ["ghost", "trips.parquet"])]
    for file, named in cases:
        r = gateway("check-config", "--config", str(file))
        assert r.returncode == 2, (file.name, r.stdout, r.stderr)
        line = r.stderr.strip()
        assert "\n" not in line and line.startswith("transit-flight: configuration refused:")
        assert all(n in line for n in named), line
        assert "SELECT" not in line and "read_parquet" not in line, line
    # run refuses the same files the same way (the systemd unit does not restart on exit 2).
    for file, named in cases:
        r = gateway("run", "--config", str(file))
        assert r.returncode == 2, (file.name, r.stdout, r.stderr)
        assert all(n in r.stderr for n in named), r.stderr


def test_check_config_refuses_a_tls_pair_the_listener_cannot_load(initialized, tmp_path):
    """A readable certificate that is not PEM: until 2026-12-06 check-config passed it and run
    refused it only after the engine had opened."""
    _, config = initialized
    cfg = json.loads(config.read_text())
    cfg["state_dir"] = str(config.parent / cfg["state_dir"])
    cert, key = tmp_path / "edge.crt", tmp_path / "edge.key"
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    key.chmod(0o600)
    cfg["listen"]["tls"] = {"cert_file": str(cert), "key_file": str(key)}
    file = tmp_path / "tls.json"
    file.write_text(json.dumps(cfg))
    for command in ("check-config", "run"):
        r = gateway(command, "--config", str(file))
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        assert "listen.tls: cannot load certificate" in r.stderr, r.stderr
        assert str(cert) in r.stderr and "configuration ok" not in r.stdout
        # run refuses it before the engine opens (and commits the file's rights to the journal).
        assert "execution leases" not in r.stdout + r.stderr, (command, r.stderr)


def test_check_config_refuses_the_secrets_run_refuses_and_writes_none(initialized, tmp_path):
    _, config = initialized
    original = json.loads(config.read_text())

    def deployment(name, change):
        """The initialized deployment on a copy of its state directory, changed by ``change``."""
        cfg = json.loads(json.dumps(original))
        state = tmp_path / name
        shutil.copytree(config.parent / original["state_dir"], state)
        cfg["state_dir"] = str(state)
        change(cfg, state)
        out = tmp_path / f"{name}.json"
        out.write_text(json.dumps(cfg))
        return out, state

    def readable(cfg, state):
        os.chmod(state / cfg["callers"][0]["credential_file"], 0o640)

    def shared(cfg, state):
        # A second caller holding a copy of the first one's credential, its key not yet made.
        first = cfg["callers"][0]
        copy = state / "credentials" / "second.token"
        shutil.copy(state / first["credential_file"], copy)
        os.chmod(copy, 0o600)
        cfg["callers"].append(dict(first, name="second", credential_file="credentials/second.token",
                                   principal=2002, requests=2002,
                                   principal_key_file="keys/principal-2002.key"))

    def no_key(cfg, state):
        (state / cfg["callers"][0]["principal_key_file"]).write_text("ed25519-seed-v1 AAAA\n")

    cases = [("readable", readable, ["ops.token", "0600"]),
             ("shared", shared, ["ops", "second", "equal credentials"]),
             ("malformed", no_key, ["principal-2001.key", "expected: 32"])]
    for name, change, named in cases:
        file, state = deployment(name, change)
        before = sorted(p.relative_to(state) for p in state.rglob("*"))
        r = gateway("check-config", "--config", str(file))
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        line = r.stderr.strip()
        assert "\n" not in line and line.startswith("transit-flight: configuration refused:"), line
        assert all(n in line for n in named), line
        assert "tfg_" not in line, "a credential is never printed"
        assert sorted(p.relative_to(state) for p in state.rglob("*")) == before, name
        r = gateway("run", "--config", str(file))
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert all(n in r.stderr for n in named), r.stderr

    # Secrets that do not exist yet are generated by run, so a check neither refuses nor makes them.
    fresh = tmp_path / "fresh.json"
    cfg = json.loads(json.dumps(original))
    cfg["state_dir"] = str(tmp_path / "fresh-state")
    fresh.write_text(json.dumps(cfg))
    r = gateway("check-config", "--config", str(fresh))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / "fresh-state").exists()


def test_check_config_as_the_daemons_user_refuses_the_state_it_cannot_use(initialized):
    """docs/operations.md (Upgrade): check-config run as the daemon's user refuses what run would.
    A state directory restored as root, then checked and run as nobody: until 2026-12-07
    check-config said "configuration ok" and run exited 2 (cannot list, lock or create), and an
    unreadable key counted as not there yet."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the state is chowned and check-config runs as nobody (runuser)")
    if shutil.which("runuser") is None:
        pytest.skip("runuser (util-linux) missing: check-config cannot run as nobody")
    import pwd
    nobody = pwd.getpwnam("nobody")
    jar = next((ROOT / "gateway-server" / "target").glob("gateway-server-*.jar"))
    if subprocess.run(["runuser", "-u", "nobody", "--", "test", "-r", str(jar)]).returncode:
        pytest.skip(f"nobody cannot read {jar}: the checkout is not reachable by other users")
    data, config = initialized
    original = json.loads(config.read_text())
    # Not under pytest's temporary root, which is 0700 root's.
    work = Path(tempfile.mkdtemp(prefix="transit-nobody-"))
    try:
        work.chmod(0o755)
        shutil.copy(data, work / "data.parquet")
        (work / "data.parquet").chmod(0o644)

        def as_nobody(command, file):
            launcher = str(ROOT / "scripts" / "gateway")
            return subprocess.run(["runuser", "-u", "nobody", "--", launcher, command, "--config",
                                   str(file)], capture_output=True, text=True, timeout=120,
                                  env=dict(os.environ, TRANSIT_NO_BUILD="1"))

        def deployment(name, change):
            """A copy of the initialized deployment given to nobody, then ``change``d as root."""
            state = work / name
            shutil.copytree(config.parent / original["state_dir"], state)
            (state / "gateway.lock").unlink(missing_ok=True)
            for p in [state, *state.rglob("*")]:
                os.chown(p, nobody.pw_uid, nobody.pw_gid)
            cfg = json.loads(json.dumps(original))
            cfg["state_dir"] = str(state)
            cfg["publications"][0]["files"] = [str(work / "data.parquet")]
            file = work / f"{name}.json"
            file.write_text(json.dumps(cfg))
            file.chmod(0o644)
            change(state)
            return file, state

        def root_owned(*parts, mode=None):
            def change(state):
                for part in parts:
                    p = state / part
                    if not p.exists():
                        p.touch(mode=0o600)
                    os.chown(p, 0, 0)
                    if mode is not None:
                        p.chmod(mode)
            return change

        def listing(state):
            return sorted((str(p.relative_to(state)), p.lstat().st_uid, p.lstat().st_mode)
                          for p in [state, *state.rglob("*")])

        def tmp_missing(state):
            shutil.rmtree(state / "tmp")
            root_owned("", mode=0o755)(state)

        def loosened(state):
            # Everything a start creates there is in place: only the mode's change is left.
            (state / "gateway.lock").touch(mode=0o600)
            os.chown(state / "gateway.lock", nobody.pw_uid, nobody.pw_gid)
            root_owned("", mode=0o755)(state)

        cases = [
            # restored as root: nobody cannot even search it
            ("restored", root_owned("", "keys", "credentials", "engine", "tmp"),
             "restored", "cannot reach as nobody, lacking search (x) permission"),
            ("engine", root_owned("engine"), "engine", "cannot list as nobody, lacking read"),
            ("lock", root_owned("gateway.lock"), "gateway.lock",
             "cannot lock as nobody, lacking read and write permission"),
            ("tmp", tmp_missing, "tmp", "cannot create as nobody, lacking write permission"),
            ("loosened", loosened, "loosened", "cannot restrict to rwx------"),
            ("key", root_owned("keys/ticket.key"), "ticket.key",
             "cannot read as nobody, lacking read permission"),
            ("credentials", root_owned("credentials"), "credentials",
             "cannot list as nobody, lacking read"),
        ]
        for name, change, path, why in cases:
            file, state = deployment(name, change)
            before = listing(state)
            r = as_nobody("check-config", file)
            assert r.returncode == 2, (name, r.stdout, r.stderr)
            line = r.stderr.strip()
            assert "\n" not in line and line.startswith("transit-flight: configuration refused:")
            assert path in line and why in line, (name, line)
            assert "configuration ok" not in r.stdout
            assert listing(state) == before, f"{name}: a check creates and changes nothing"
            # run, as nobody, refuses the same state directory (exit 2, naming the same path).
            r = as_nobody("run", file)
            assert r.returncode == 2 and path in r.stderr, (name, r.returncode, r.stderr[-2000:])

        # The control: given to nobody whole, the same copy passes.
        file, state = deployment("given", lambda state: None)
        r = as_nobody("check-config", file)
        assert r.returncode == 0 and "configuration ok" in r.stdout, r.stderr

        # Directories of nobody's that nobody cannot read or search now: a start restricts (so
        # opens) them before it lists them, so both pass, and the start serves.
        def unreadable(part, mode):
            def change(state):
                p = state / part
                if not p.exists():
                    p.mkdir()
                    (p / "stale.tmp").touch()
                    for q in (p, p / "stale.tmp"):
                        os.chown(q, nobody.pw_uid, nobody.pw_gid)
                p.chmod(mode)
            return change
        for name, change in (("segments-0000", unreadable("engine/segments", 0o000)),
                             ("engine-0600", unreadable("engine", 0o600))):
            file, state = deployment(name, change)
            r = as_nobody("check-config", file)
            assert r.returncode == 0 and "configuration ok" in r.stdout, (name, r.stderr)
            launcher = str(ROOT / "scripts" / "gateway")
            with subprocess.Popen(["runuser", "-u", "nobody", "--", launcher, "run", "--config",
                                   str(file)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=dict(os.environ, TRANSIT_NO_BUILD="1")) as p:
                seen = []
                reader = threading.Thread(target=lambda: seen.extend(p.stdout), daemon=True)
                reader.start()
                wait_until(lambda: any("PyArrow:" in line for line in seen) or p.poll() is not None,
                           90, lambda: f"{name}: the start to serve: {''.join(seen)[-2000:]}")
                served = any("PyArrow:" in line for line in seen)
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=60)
                reader.join(10)
                # runuser ends by the signal it forwarded; the daemon's own stop line says how
                # it stopped.
                stopped = [line for line in seen if "drained=" in line]
                assert served and stopped and "leaked_bytes=0" in stopped[-1] \
                    and "drained=true" in stopped[-1], (name, "".join(seen)[-2000:])
            assert oct((state / "engine" / "segments").stat().st_mode & 0o777) == "0o700"
    finally:
        shutil.rmtree(work, ignore_errors=True)
