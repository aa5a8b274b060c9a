"""The distribution archive (issue 17): unpacked into an empty directory, with PATH lacking java
and mvn (and no JAVA_HOME), bin/transit-flight starts the demo from its own runtime image and
answers a statement."""

import os
import shutil
import signal
import subprocess

from calls import Caller
from daemon import Daemon, unpack_release, wait_until
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
