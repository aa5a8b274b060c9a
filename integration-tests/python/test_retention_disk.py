"""Finding 6 of issue 14, the resource half, against the real daemon: retained results expire
(maximum age) and a ticket of an expired result fails closed RETIRED; when the retained segments'
file system is full, a new statement fails RESOURCE_EXHAUSTED query.disk_full with limit/required
facts, an earlier result still reads back byte-identical, and once retention frees the space new
statements succeed again.

The first test mounts a 4 MiB tmpfs (root only, always unmounted) on the segments directory
alone, so the journal keeps committing; the second puts the whole engine directory, journal
included, on an 8 MiB tmpfs and fills it, so the journal itself cannot commit (docs/limits.md,
"Retained results and disk")."""

import os
import subprocess
import time

import grpc
import pytest

import calls as C
from diagnostic_clients import facts

# Long enough to fill the file system and read the first result back; short enough to wait for.
MAX_AGE_MS = 20_000
ROWS = 20_000  # five int64 columns: just under 1 MiB of segments per statement
# About 40 KB: a result the journal keeps inline (at most 64 KiB), written by its terminal commit.
INLINE_ROWS = 1_000


def results_until_refused(ch, d, first):
    """Statements of ~1 MiB of segments each (slices ``first``, ``first`` + 1, ...) until one is
    refused; returns the refusal (a small file system takes fewer than 12)."""
    for k in range(first, first + 12):
        try:
            C.flight_info(ch, d, C.primitive_slice(k, ROWS))
        except grpc.RpcError as e:
            return C.seen(e)
    raise AssertionError("the file system took 12 results of ~1 MiB")


def result_once_room_returns(ch, d, k, refusals, deadline):
    """The ticket of slice ``k``'s statement, retried every 0.5 s until the file system has room
    again (AssertionError past ``deadline``); every refusal meanwhile must be one of
    ``refusals``."""
    while True:
        try:
            return C.flight_info(ch, d, C.primitive_slice(k, ROWS))
        except grpc.RpcError as e:
            s = C.seen(e)
            assert s.diagnostic["code"] in refusals, s.diagnostic
            assert time.monotonic() < deadline, "the file system's room never came back"
            time.sleep(0.5)


@pytest.fixture
def small_disk(configured, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    d = configured(tmp_path, {"engine": {"retention_max_age_ms": MAX_AGE_MS,
                                         "retention_check_ms": 200}})
    segments = d.state_dir / "engine" / "segments"
    segments.mkdir(mode=0o700, parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(segments)],
                   check=True, timeout=30)
    try:
        yield d.start()
    finally:
        try:
            if d.alive():
                d.assert_clean_stop()
        finally:
            subprocess.run(["umount", str(segments)], check=True, timeout=30)


def test_full_disk_refuses_new_statements_keeps_results_and_recovers_after_expiry(small_disk):
    d = small_disk
    ch = C.channel(d)
    first = C.flight_info(ch, d, C.primitive_slice(0, ROWS))
    first_bytes = C.read_bytes(ch, d, first)
    assert len(first_bytes) > 100_000

    refusal = results_until_refused(ch, d, first=1)
    assert refusal.code == grpc.StatusCode.RESOURCE_EXHAUSTED, refusal
    diag = refusal.diagnostic
    assert diag["code"] == "query.disk_full", diag
    f = facts(diag)
    # limit: the usable bytes left; required: the segment that did not fit.
    assert f["limit"]["kind"] == f["required"]["kind"] == "number", f
    assert int(f["required"]["value"]) > 0, f
    assert len(refusal.message.encode()) <= 128

    # Nothing retained was lost or corrupted, and reads go on.
    assert C.read_bytes(ch, d, first) == first_bytes
    C.healthy_query(d)

    # The first result expires: its ticket fails closed, never as an empty result.
    deadline = time.monotonic() + MAX_AGE_MS / 1000 + 30
    retired = None
    while retired is None and time.monotonic() < deadline:
        try:
            C.read_bytes(ch, d, first)
            time.sleep(0.5)
        except grpc.RpcError as e:
            retired = C.seen(e)
    assert retired is not None, "the result outlived engine.retention_max_age_ms"
    assert retired.code == grpc.StatusCode.FAILED_PRECONDITION, retired
    assert retired.diagnostic["code"] == "query.retired", retired.diagnostic

    # Every result has expired by now and its files are removed: new statements succeed again.
    again = result_once_room_returns(ch, d, 20, {"query.disk_full"}, deadline)
    assert len(C.read_bytes(ch, d, again)) > 100_000
    ch.close()
    d.assert_clean_stop()


@pytest.fixture
def engine_on_tmpfs(configured, tmp_path):
    """``engine_on_tmpfs(faults=None, engine=None)``: a started daemon (``engine``: its engine
    settings) whose whole engine directory — journal and segments, as in the default layout — is
    one 8 MiB tmpfs this test mounts and always unmounts; returns (daemon, engine directory)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    started = []

    def make(faults=None, engine=None):
        d = configured(tmp_path, {"engine": engine} if engine else {})
        d.faults = faults
        engine = d.state_dir / "engine"
        engine.mkdir(mode=0o700, parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(engine)],
                       check=True, timeout=30)
        started.append((d, engine))
        return d.start(), engine
    yield make
    for d, engine in started:
        try:
            if d.alive():
                d.assert_clean_stop()
        finally:
            subprocess.run(["umount", str(engine)], check=True, timeout=30)


def test_results_that_filled_the_engine_disk_are_released_past_their_age_all_the_same(
        engine_on_tmpfs):
    """Journal and segments on one file system, filled by the gateway's own results and then to
    the last byte (the filler stays): the retention sweep frees the journal's reserve, releases
    the results past their age, removes their files, and statements succeed again with nobody
    freeing space. Until 2026-12-07 the sweep's release could not commit on the full file system,
    so nothing was ever removed, and a restart did not help either (docs/limits.md)."""
    d, engine = engine_on_tmpfs(engine={"retention_max_age_ms": 4000, "retention_check_ms": 200})
    reserve = engine / "journal.reserve"
    end = time.monotonic() + 30
    while not reserve.exists():
        assert time.monotonic() < end, "no journal reserve was written"
        time.sleep(0.1)
    ch = C.channel(d)
    refusal = results_until_refused(ch, d, first=0)
    assert refusal.diagnostic["code"] == "query.disk_full", refusal.diagnostic
    fill(engine)  # not removed: the room must come from the results' own files

    # Meanwhile, a full journal: refused or unreadable, never a made-up answer.
    again = result_once_room_returns(ch, d, 30, {"query.disk_full", "query.journal_unavailable"},
                                     time.monotonic() + 60)
    assert len(C.read_bytes(ch, d, again)) > 100_000
    d.saw("freed the reserve")
    ch.close()
    d.assert_clean_stop()


def fill(directory):
    """Writes a filler file until the file system refuses; returns its path."""
    filler = directory / "filler"
    # Unbuffered: a partial write returns short, the next one fails ENOSPC, and closing has
    # nothing left to flush.
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def test_a_full_engine_disk_refuses_new_statements_and_loses_nothing(engine_on_tmpfs):
    d, engine = engine_on_tmpfs()
    ch = C.channel(d)
    first = C.flight_info(ch, d, C.primitive_slice(0, ROWS))
    first_bytes = C.read_bytes(ch, d, first)

    # Whatever runs out first — the journal's pages or a segment — the file system is full.
    filler = fill(engine)
    sequence = C.next_sequence(ch, d)
    refusal = C.failure(C.sql_info, ch, d, "primitive", C.primitive_slice(1, ROWS), sequence)
    assert refusal.code == grpc.StatusCode.RESOURCE_EXHAUSTED, refusal
    assert refusal.diagnostic["code"] == "query.disk_full", refusal.diagnostic
    assert len(refusal.message.encode()) <= 128
    # Nothing retained was lost or corrupted, before and after room comes back.
    # Reads write nothing: they go on while the file system is full.
    assert C.read_bytes(ch, d, first) == first_bytes
    filler.unlink()
    assert C.read_bytes(ch, d, first) == first_bytes

    # The refused statement. The refused sequence resolves to one answer: where the journal had no room,
    # nothing was recorded (outcome not_admitted) and the same sequence and SQL complete now;
    # where a segment had none, the query's failure was recorded (outcome failed) and replays.
    outcome = refusal.diagnostic["outcome"]
    assert outcome in ("not_admitted", "failed"), refusal.diagnostic
    if outcome == "not_admitted":
        assert "retry_same_sequence_and_sql" in refusal.diagnostic["actions"], refusal.diagnostic
        again = C.ticket_of(C.sql_info(ch, d, "primitive", C.primitive_slice(1, ROWS), sequence))
        replay = C.ticket_of(C.sql_info(ch, d, "primitive", C.primitive_slice(1, ROWS), sequence))
        assert C.read_bytes(ch, d, replay) == C.read_bytes(ch, d, again)
    else:
        replayed = C.failure(C.sql_info, ch, d, "primitive", C.primitive_slice(1, ROWS), sequence)
        assert replayed.diagnostic["code"] == "query.disk_full", replayed.diagnostic
    # New statements succeed, and no namespace ran twice (Journal.queries checks it).
    later = C.flight_info(ch, d, C.primitive_slice(2, ROWS))
    assert len(C.read_bytes(ch, d, later)) > 100_000
    assert len(d.journal().queries(d.principal("primitive"))) >= 2
    ch.close()
    d.assert_clean_stop()


def test_a_query_whose_outcome_cannot_commit_runs_again_once_the_journal_has_room(
        engine_on_tmpfs):
    # Each accepted query waits 3 s before it runs, and the disk fills after its acceptance
    # committed. Its result stays inline, so its one terminal commit writes some forty journal
    # pages (40 KB): more than the tail of the WAL's last file page can take once the file system
    # is full. (The result's status alone, a commit of a few pages, can still land in that tail
    # and so fail the statement for good with query.disk_full, as a full segment store does.)
    d, engine = engine_on_tmpfs("execution-delay-ms:3000")
    ch = C.channel(d)
    principal = d.principal("primitive")
    before = len(d.journal().queries(principal))
    sequence = C.next_sequence(ch, d)
    sql = C.primitive_slice(3, INLINE_ROWS)
    pending = C.sql_info_future(ch, d, "primitive", sql, sequence, timeout=90)
    end = time.monotonic() + 30
    while len(d.journal().queries(principal)) == before:
        assert time.monotonic() < end, "the statement was never accepted"
        time.sleep(0.05)
    filler = fill(engine)
    end = time.monotonic() + 30
    while not any("could not record its outcome" in line for line in d.output):
        assert time.monotonic() < end, "the query's outcome met no full journal"
        time.sleep(0.1)
    # Still running, not a made-up status: the caller is still waiting.
    assert not pending.done()
    filler.unlink()
    ticket = C.ticket_of(pending.result())
    d.saw("recorded its outcome on run")
    assert not list((engine / "segments").iterdir()), "the result was meant to stay inline"
    # The rerun's result is the statement's answer: the same bytes as a fresh statement's.
    assert C.read_bytes(ch, d, ticket) == C.read_bytes(ch, d, C.flight_info(ch, d, sql))
    # The retried sequence replays the recorded result; no namespace ran twice.
    replay = C.ticket_of(C.sql_info(ch, d, "primitive", sql, sequence))
    assert C.read_bytes(ch, d, replay) == C.read_bytes(ch, d, ticket)
    d.journal().queries(principal)
    ch.close()
    d.assert_clean_stop()
