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
    d.assert_clean_stop()
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


def test_an_open_watch_gets_its_final_update_and_does_not_hold_the_stop(tmp_path):
    """Until 2026-12-07 an open Watch held every stop 10 s (the listener's bound), then got
    CANCELLED: it never ends by itself."""
    d = Daemon(tmp_path / "state").start()
    ch = grpc.insecure_channel(f"127.0.0.1:{d.port}")
    try:
        watch = ch.unary_stream("/grpc.health.v1.Health/Watch")(b"", timeout=60)
        first = next(watch)
        assert first == b"\x08\x01", first  # SERVING
        d.proc.send_signal(signal.SIGTERM)
        updates = list(watch)  # ends with OK: no exception
        assert updates[-1:] == [b"\x08\x02"], updates  # the final update: NOT_SERVING
        assert d.proc.wait(30) == 0
    finally:
        ch.close()
        d.stop()

