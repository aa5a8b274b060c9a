"""Fixtures shared by the end-to-end tests; tests import helpers from daemon, calls and h2raw,
never from this module."""

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from calls import Caller
from daemon import Cluster, Daemon, Postgres


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    """pytest-timeout's thread method (pytest.ini), but before it dumps the stacks and ends the
    run with os._exit (no teardown runs), the processes this run started (daemons, nginx,
    versitygw, the C consumer: this process's children) are killed, so none outlives the run."""
    if settings.method != "thread":
        return None  # pytest-timeout's own

    import pytest_timeout

    def expire():
        _kill_children()
        pytest_timeout.timeout_timer(item, settings)

    timer = threading.Timer(settings.timeout, expire)
    timer.name = f"pytest-timeout {item.nodeid}"
    timer.daemon = True

    def cancel():
        timer.cancel()
        # A cancelled timer ends at once; one already expiring is killing children (grace 5 s).
        timer.join(30)

    item.cancel_timeout = cancel  # what pytest-timeout's cancel hook calls
    timer.start()
    return True


def _kill_children(grace: float = 5.0):
    """SIGTERM to each child (nginx's master then stops its workers; a SIGKILLed master leaves
    them running), SIGKILL to those still running after ``grace`` seconds."""
    children = set()
    try:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            try:
                children.update(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass  # the thread ended meanwhile
    except OSError:
        return

    def running(pid):
        try:  # gone, or a zombie nobody here will reap now
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def signal_all(pids, sig):
        for pid in pids:
            try:
                os.kill(pid, sig)
                print(f"pytest-timeout: {signal.Signals(sig).name} to child process {pid}",
                      file=sys.stderr)
            except OSError:
                pass  # already gone

    signal_all(children, signal.SIGTERM)
    end = time.monotonic() + grace
    while any(running(pid) for pid in children) and time.monotonic() < end:
        time.sleep(0.1)
    signal_all([pid for pid in children if running(pid)], signal.SIGKILL)


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("gateway-state")).start()
    yield d
    d.assert_clean_stop()


@pytest.fixture(scope="session")
def template_state(tmp_path_factory):
    """A demo state directory, generated once by a first daemon start, copied per daemon."""
    return Daemon.template(tmp_path_factory.mktemp("edge-template"))


@pytest.fixture
def primitive(gateway):
    return Caller(gateway, "primitive")


@pytest.fixture
def mixed(gateway):
    return Caller(gateway, "mixed")


@pytest.fixture
def cells(gateway):
    return Caller(gateway, "cells")


@pytest.fixture(scope="session")
def configured(template_state):
    """``configured(workdir, overrides)``: a daemon (not started) of ``scripts/gateway run`` over
    a whole copy of the template in ``workdir``/state, ``overrides`` merged into gateway.json."""
    def make(workdir, overrides=None):
        return Daemon.variant(template_state, overrides, target=Path(workdir) / "state", whole=True,
                              configured=True)
    return make


@pytest.fixture(scope="session")
def postgres():
    """A private PostgreSQL 15 cluster for the shared-journal tests; skipped, loudly, only when
    the PostgreSQL binaries are missing (scripts/setup.d/30-postgresql.sh installs them)."""
    if not Postgres.available():
        why = (f"PostgreSQL 15 binaries missing at {Postgres.BIN}: the PostgreSQL journal tests"
               " are SKIPPED (run scripts/setup.d/30-postgresql.sh)")
        print(f"\n*** {why} ***\n", file=sys.stderr)
        pytest.skip(why)
    pg = Postgres()
    yield pg
    pg.close()


@pytest.fixture(scope="module")
def cluster():
    """A 3-replica local cluster (scripts/cluster up: PostgreSQL, versitygw, three gateways, the
    nginx edge) for one test module; it fails, naming the setup script, when a part is missing —
    except without root, whose setup cannot install Debian packages and says the tests that need
    them are skipped: then it skips, loudly, as the PostgreSQL and TLS-edge tests do. Stopped by
    scripts/cluster down, which must leave nothing running; each replica it stops must report
    zero leaked bytes and streams."""
    yield from _cluster()


@pytest.fixture(scope="module")
def chaos_cluster():
    """The same cluster, its eight chaos callers one per client thread, with every query held
    briefly before and after execution (chaos.HOLD), so that a replica stopped (SIGSTOP) past its
    lease is often caught holding a run that is then fenced."""
    from chaos import HOLD
    yield from _cluster(faults=HOLD)


def _cluster(faults: str = None):
    import edgetls
    missing = [part for part, present in (
        ("nginx (scripts/setup.d/20-nginx.sh)", edgetls.nginx_binary() is not None),
        ("PostgreSQL 15 (scripts/setup.d/30-postgresql.sh)", Postgres.available())) if not present]
    if missing and os.geteuid() != 0:
        why = (f"{' and '.join(missing)} missing and not root: the cluster tests are SKIPPED"
               " (run the setup script as root)")
        print(f"\n*** {why} ***\n", file=sys.stderr)
        pytest.skip(why)
    # Not under pytest's 0700 temp root: as root, PostgreSQL runs as transit-pg, which must
    # traverse to the cluster's postgres/ directory.
    c = Cluster(Path(tempfile.mkdtemp(prefix="transit-cluster-")), replicas=3, faults=faults)
    try:
        c.up()
        yield c
        c.down()
        assert not any(r.alive() for r in c.replicas), "a replica outlived scripts/cluster down"
        assert not c.edge.alive(), "the edge outlived scripts/cluster down"
        # Every replica that ended by SIGTERM drained and freed every byte.
        reports = c.stop_reports()
        stopped = {name: r for name, r in reports.items() if r is not None}
        assert stopped and all(r == (0, 0, True) for r in stopped.values()), reports
    finally:
        c.down()  # idempotent: after a failure, whatever is still recorded
        if os.environ.get("TRANSIT_KEEP_CLUSTER"):  # the replicas' logs, for a failure's evidence
            print(f"cluster state kept in {c.state_dir}", file=sys.stderr)
        else:
            shutil.rmtree(c.state_dir, ignore_errors=True)
