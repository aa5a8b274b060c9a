"""The Flight SQL encoding the tests use is the client package's own (clients/python,
installed into the test venv by scripts/test): one encoder, used by both."""

from transit_flight.flightsql import *  # noqa: F401,F403
from transit_flight.flightsql import _field_bytes, _field_varint, _read_varint, _varint  # noqa: F401
