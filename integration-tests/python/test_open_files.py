"""A daemon out of file descriptors — its RLIMIT_NOFILE lowered under it, as a too-small
`LimitNOFILE` or a descriptor leak next to it would leave it: nothing is lost and nothing is
reported as lost. A read of a retained result whose segment file cannot be opened fails
UNAVAILABLE `query.segment_store_unavailable` (reason `open_files`), never DATA_LOSS; a
statement whose Table or segment file cannot be opened is not failed for good but runs again
until it can; a new connection waits to be accepted; once descriptors are back, all three
succeed, the result with the same bytes (docs/limits.md, "Open files")."""

import resource
from contextlib import contextmanager

import grpc
import pytest

import calls as C
from diagnostic_clients import facts

ROWS = 20_000  # five int64 columns: segment files, not an inline result


@contextmanager
def out_of_descriptors(pid: int):
    """Lowers the daemon's soft limit to 0: every open fails EMFILE (a new descriptor's number
    must be below the limit), whatever the daemon closes meanwhile, until the limit is restored.
    Descriptors already open (its listening socket, connections, journal) keep working."""
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, hard))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))


def test_a_daemon_out_of_descriptors_answers_unavailable_and_runs_statements_once_it_has_them(
        configured, tmp_path):
    d = configured(tmp_path).start()
    ch = C.channel(d)
    try:
        kept = C.flight_info(ch, d, C.primitive_slice(0, ROWS))
        before = C.read_bytes(ch, d, kept)
        assert d.segment_files(), "the result is kept in segment files"
        pending_sequence = C.next_sequence(ch, d)

        with out_of_descriptors(d.pid):
            seen = C.failure(C.read_bytes, ch, d, kept)
            code, message, diag = seen
            assert code == grpc.StatusCode.UNAVAILABLE, seen
            assert diag["code"] == "query.segment_store_unavailable", diag
            assert facts(diag)["reason"]["value"] == "open_files", diag
            assert diag["outcome"] == "incomplete", diag
            assert "contact_operator" not in diag["actions"], diag
            pending = C.sql_info_future(ch, d, "primitive", C.primitive_slice(1, ROWS),
                                        pending_sequence, timeout=90)
            d.saw("could not open or store its files (open_files)", timeout=30)
            # A new connection waits: the daemon cannot accept it (its accept fails EMFILE).
            waiting = C.channel(d)
            with pytest.raises(grpc.FutureTimeoutError):
                grpc.channel_ready_future(waiting).result(timeout=3)
            assert not pending.done(), "the statement waits for descriptors, not failed"

        # The waiting connection is accepted once descriptors are back, and served.
        grpc.channel_ready_future(waiting).result(timeout=30)
        assert C.next_sequence(waiting, d) > pending_sequence
        waiting.close()
        ran = C.read_bytes(ch, d, C.ticket_of(pending.result(timeout=90)))
        assert ran, "the statement ran once descriptors were back"
        assert C.read_bytes(ch, d, kept) == before, "the kept result reads back byte-identical"
        again = C.sql_info(ch, d, "primitive", C.primitive_slice(1, ROWS), pending_sequence)
        assert C.read_bytes(ch, d, C.ticket_of(again)) == ran, \
            "the retry of the same sequence finds the statement's one result"
    finally:
        ch.close()
        d.assert_clean_stop()
