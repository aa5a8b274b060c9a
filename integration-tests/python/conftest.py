import json

import pyarrow.flight as fl
import pytest

import flightsql
from daemon import Daemon


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("gateway-state")).start()
    yield d
    assert d.stop() == 0, "gateway did not exit cleanly on SIGTERM"


class Caller:
    """A PyArrow Flight SQL caller with its credential and a sequence it tracks explicitly."""

    def __init__(self, gateway, name):
        self.gateway = gateway
        self.name = name
        self.client = fl.FlightClient(gateway.uri)

    def options(self, sequence=None, extra=()):
        headers = [(b"authorization", f"Bearer {self.gateway.token(self.name)}".encode())]
        if sequence is not None:
            headers.append((b"x-transit-request-sequence", str(sequence).encode()))
        headers.extend(extra)
        return fl.FlightCallOptions(headers=headers, timeout=60)

    def next_sequence(self):
        results = list(self.client.do_action(fl.Action("GetSessionOptions", b""), self.options()))
        return flightsql.session_options(results[0].body.to_pybytes())["transit.next_sequence"]

    def info(self, sql, sequence):
        return self.client.get_flight_info(
            fl.FlightDescriptor.for_command(flightsql.statement_query(sql)), self.options(sequence))

    def read(self, info):
        assert len(info.endpoints) == 1
        return self.client.do_get(info.endpoints[0].ticket, self.options()).read_all()

    def query(self, sql):
        """Runs a statement at the caller's next sequence and returns (table, info)."""
        info = self.info(sql, self.next_sequence())
        return self.read(info), info

    def metadata(self, command):
        info = self.client.get_flight_info(fl.FlightDescriptor.for_command(command), self.options())
        return self.read(info)


@pytest.fixture
def primitive(gateway):
    return Caller(gateway, "primitive")


@pytest.fixture
def mixed(gateway):
    return Caller(gateway, "mixed")


@pytest.fixture
def cells(gateway):
    return Caller(gateway, "cells")


def app_metadata(info):
    return json.loads(info.app_metadata)
