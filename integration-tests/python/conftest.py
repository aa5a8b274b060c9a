"""Fixtures shared by the end-to-end tests; tests import helpers from daemon, calls and h2raw,
never from this module."""

from pathlib import Path

import pytest

from calls import Caller
import sys

from daemon import Daemon, Postgres


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
