"""PyArrow cancels result streams mid-flight on the real daemon process; the daemon keeps serving.

The daemon runs with only two stream permits, so a stream whose permit or allocator is not
released after a cancel soon refuses every later read (flight.streams_exhausted). Its clean exit
(status 0) at the end also proves its allocator held zero bytes after draining.
"""

import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from calls import Caller
from daemon import Daemon

MILLION_ROWS = "SELECT id, a, b, c, d FROM primitive"
PERMITS = 2
RELEASE_BOUND_S = 20.0


@pytest.fixture(scope="module")
def small_gateway(tmp_path_factory):
    d = Daemon(Daemon.template(tmp_path_factory.mktemp("cancel-state"),
                               limits={"max_live_streams": PERMITS})).start()
    yield d
    rc = d.stop()
    output = "".join(d.output)
    assert rc == 0, "daemon did not drain cleanly:\n" + output[-4000:]
    assert "LEAK" not in output, output[-4000:]


# A cancel reaches the daemon after the client moved on, so the next call may still find the
# permit, or this caller's share of the permits, held by the cancelled stream.
PERMIT_HELD = ("flight.streams_exhausted", "flight.caller_streams_exhausted")


def with_permit(call):
    """Runs `call`, retrying (bounded) while cancelled streams still hold the permits."""
    deadline = time.monotonic() + RELEASE_BOUND_S
    while True:
        try:
            return call()
        except pa.ArrowException as e:
            if not any(code in str(e) for code in PERMIT_HELD) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def read_with_permit(caller, info):
    return with_permit(lambda: caller.read(info))


def test_cancel_after_first_batch_then_daemon_keeps_serving(small_gateway):
    primitive = Caller(small_gateway, "primitive")
    info = primitive.info(MILLION_ROWS, primitive.next_sequence())
    assert info.total_records >= 1_000_000
    for _ in range(3 * PERMITS):
        reader = with_permit(
            lambda: primitive.client.do_get(info.endpoints[0].ticket, primitive.options()))
        first = reader.read_chunk()
        assert 0 < first.data.num_rows < info.total_records, "cancelled mid-stream"
        reader.cancel()
        with pytest.raises(fl.FlightCancelledError):
            while True:
                reader.read_chunk()
        # Each round needs a permit the previous round's cancel must have returned.
        check = primitive.info("SELECT SUM(id) FROM primitive WHERE id < 100", primitive.next_sequence())
        assert read_with_permit(primitive, check).column(0).to_pylist() == [4950]


def test_cancel_before_reading_and_closing_unread_readers(small_gateway):
    primitive = Caller(small_gateway, "primitive")
    info = primitive.info(MILLION_ROWS, primitive.next_sequence())
    for round_ in range(3 * PERMITS):
        reader = with_permit(
            lambda: primitive.client.do_get(info.endpoints[0].ticket, primitive.options()))
        if round_ % 2 == 0:
            reader.cancel()  # before any batch was read
        else:
            reader.read_chunk()
            del reader  # dropped without reading on: the client cancels the call
    table = read_with_permit(primitive, info)
    assert table.num_rows == info.total_records, "a full read still streams every row"
