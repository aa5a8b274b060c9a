"""grpc.health.v1 on the Flight listener: SERVING once the engine is open and the publications
loaded, NOT_SERVING while draining after SIGTERM, answered without a credential (issue 17)."""

import signal

import grpc
import pytest

from calls import Caller
from daemon import Daemon, wait_until
from ops_support import health


def test_health_serving_after_start_not_serving_while_draining(tmp_path):
    d = Daemon(tmp_path / "state").start()
    assert d.stop() == 0
    cfg = d.config()
    cfg["ops"] = {"drain_notice_ms": 8000}
    d.write_config(cfg)
    d.start()
    try:
        assert health(d.port) == "SERVING"
        assert health(d.port, "arrow.flight.protocol.FlightService") == "SERVING"
        with pytest.raises(grpc.RpcError) as unknown:
            health(d.port, "no.such.Service")
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        # Health needs no credential, while the Flight service still does.
        c = Caller(d, "primitive")
        assert c.next_sequence() == 1

        d.proc.send_signal(signal.SIGTERM)
        seen = []

        def not_serving():
            seen.append(health(d.port))
            return seen[-1] == "NOT_SERVING"

        wait_until(not_serving, 3.0, lambda: f"health NOT_SERVING (saw {seen})")
        # During the notice the listener still serves calls: an edge routes away first.
        assert Caller(d, "primitive").next_sequence() == 1
        d.saw("draining: health NOT_SERVING")
        assert d.proc.wait(30) == 0
    finally:
        d.stop()
