"""Fixtures shared by the end-to-end tests; tests import helpers from daemon, calls and h2raw,
never from this module."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from calls import Caller
import sys

from daemon import Cluster, Daemon, Postgres


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("gateway-state")).start()
    yield d
    assert d.stop() == 0, "gateway did not exit cleanly on SIGTERM"


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
