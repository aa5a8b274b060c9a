"""kill -9 and restart over the same state directory: journal intact, old tickets still read."""

import json

import pyarrow.flight as fl

from conftest import Caller
from daemon import Daemon


def test_kill9_restart_keeps_journal_and_tickets(tmp_path):
    d = Daemon(tmp_path / "state").start()
    try:
        c = Caller(d, "primitive")
        seq = c.next_sequence()
        info = c.info("SELECT COUNT(*), SUM(a) FROM primitive WHERE a > 7", seq)
        before = c.read(info)
        nxt = json.loads(info.app_metadata)["next_sequence"]
        d.kill9()
        d.start()
        c = Caller(d, "primitive")
        assert c.next_sequence() == nxt
        assert c.read(info).equals(before), "a ticket issued before the crash still reads"
        again = c.info("SELECT COUNT(*), SUM(a) FROM primitive WHERE a > 7", seq)
        assert again.endpoints[0].ticket.ticket[146:154] == info.endpoints[0].ticket.ticket[146:154]
        assert c.next_sequence() == nxt
    finally:
        d.stop()
