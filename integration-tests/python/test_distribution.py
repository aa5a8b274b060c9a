"""The distribution archive (issue 17): unpacked into an empty directory, with PATH lacking java
and mvn (and no JAVA_HOME), bin/transit-flight starts the demo from its own runtime image and
answers a statement; an init --parquet deployment's connection help runs as printed and names the
Python client the archive ships."""

import os
import shutil
import signal
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq

from calls import Caller
from daemon import Daemon, help_snippets, run_snippet, unpack_release, wait_until
from ops_support import health


def test_archive_runs_the_demo_without_a_jdk(tmp_path):
    top, env = unpack_release(tmp_path)
    for part in ("bin/transit-flight", "lib", "runtime/bin/java", "LICENSE", "README.md",
                 "config/gateway.example.json", "config/nginx-edge.example.conf",
                 "config/transit-flight.service"):
        assert (top / part).exists(), part
    assert os.access(top / "bin" / "transit-flight", os.X_OK)
    assert shutil.which("java", path=env["PATH"]) is None
    assert shutil.which("mvn", path=env["PATH"]) is None

    state = tmp_path / "state"
    # A start refused before serving claims the class-data-sharing archive and its JVM writes
    # one at exit, with hardly any of the gateway's classes in it: the next start dumps it again.
    refused = subprocess.run([str(top / "bin" / "transit-flight"), "demo", "--state-dir",
                              str(state), "--port", "0", "--warm-up", "-1"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 64, refused.stderr
    [unserved] = list((top / "cds").glob("transit-*.jsa"))
    assert unserved.stat().st_size < 15_000_000
    d = Daemon(state, command=[str(top / "bin" / "transit-flight"), "demo", "--state-dir",
                               str(state), "--port", "0"], env=env).start()
    try:
        assert health(d.port) == "SERVING"
        table, _ = Caller(d, "primitive").query(
            "SELECT COUNT(*) FROM primitive WHERE a > 1")
        assert table.num_rows == 1 and table.column(0).to_pylist()[0] > 0
    finally:
        assert d.stop(timeout=120) == 0  # the first exit also writes the CDS archive

    # The first daemon's exit wrote the class-data-sharing archive into the installation; the
    # next start maps it (the runtime image carries the base archive it needs) and still serves.
    [jsa] = list((top / "cds").glob("transit-*.jsa"))
    assert jsa.stat().st_size > 15_000_000, "the serving daemon's classes (30-50 MB)"
    d = Daemon(state, command=[str(top / "bin" / "transit-flight"), "demo", "--state-dir",
                               str(state), "--port", "0"], env=env).start()
    try:
        table, _ = Caller(d, "primitive").query("SELECT COUNT(*) FROM primitive")
        assert table.column(0).to_pylist()[0] > 0
        with open(f"/proc/{d.proc.pid}/maps") as maps:
            assert str(jsa) in maps.read(), "the archive is mapped"
    finally:
        d.assert_clean_stop()

    # A SIGHUP while the launcher's shell reads the heap (systemd's reload right after a restart)
    # is caught by its trap: the command still runs. Until 2026-12-06 the shell died of it.
    launcher = subprocess.Popen([str(top / "bin" / "transit-flight"), "check-config", "--config",
                                 str(state / "gateway.json")], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: any("JvmOptions" in _cmdline(c) for c in _children(launcher.pid)), 60,
               "the launcher to read the heap")
    launcher.send_signal(signal.SIGHUP)
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 0 and "configuration ok" in out, (launcher.returncode, err)


def test_the_connection_help_runs_on_a_table_of_its_own_and_names_the_shipped_client(tmp_path):
    """An init --parquet deployment of the archive whose Table has none of the demo's columns:
    the help's snippets run as printed (until 2026-12-07 they summed column a, refused
    query.unknown_column), and its pip install names the client the archive ships (until then
    ./clients/python, which the archive did not have)."""
    top, env = unpack_release(tmp_path)
    assert (top / "clients" / "python" / "pyproject.toml").is_file()
    assert (top / "clients" / "python" / "src" / "transit_flight" / "__init__.py").is_file()
    data = tmp_path / "readings.parquet"
    pq.write_table(pa.table({"v": pa.array([0.5, 1.5, 2.5], pa.float64()),
                             "id": pa.array([1, 2, 3], pa.int64())}), data)
    config = tmp_path / "etc" / "gateway.json"
    r = subprocess.run([str(top / "bin" / "transit-flight"), "init", "--parquet", str(data),
                        "--config", str(config), "--port", "0"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    d = Daemon(config.parent / "state", command=[str(top / "bin" / "transit-flight"), "run",
                                                 "--config", str(config)], env=env).start()
    try:
        snippets = help_snippets(d)
        heading = snippets["Python"][0]
        client = top / "clients" / "python"
        assert heading.startswith(f"Python (pip install {client};"), heading
        assert f"{client / 'README.md'}" in heading, heading
        for name in ("ADBC", "Python"):  # ADBC's sends sequence 1: this deployment's first
            code = snippets[name][1]
            assert "SELECT COUNT(*), SUM(id) FROM readings" in code, code
            run = run_snippet(code, tmp_path)
            assert run.returncode == 0, f"{name} snippet failed:\n{code}\n{run.stderr[-3000:]}"
            assert "3" in run.stdout and "6" in run.stdout, run.stdout
    finally:
        d.assert_clean_stop()


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""
