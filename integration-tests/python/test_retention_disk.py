"""Finding 6 of issue 14, the resource half, against the real daemon: retained results expire
(maximum age) and a ticket of an expired result fails closed RETIRED; when the retained segments'
file system is full, a new statement fails RESOURCE_EXHAUSTED query.disk_full with limit/required
facts, an earlier result still reads back byte-identical, and once retention frees the space new
statements succeed again.

The segments directory is a 4 MiB tmpfs this test mounts (root only) and always unmounts; the
journal stays on the ordinary disk, so the full file system is exactly the one the documented
query.disk_full behaviour covers (docs/limits.md "Disk")."""

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


def slice_sql(k: int) -> str:
    # Each slice has other rows, so no two results share segment files.
    return (f"SELECT id, a, b, c, d FROM primitive WHERE id >= {k * ROWS} "
            f"AND id < {(k + 1) * ROWS}")


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
                d.stop()
        finally:
            subprocess.run(["umount", str(segments)], check=True, timeout=30)


def read_all(ch, d, ticket) -> bytes:
    return b"".join(C.do_get(ch, d, ticket, timeout=60))


def test_full_disk_refuses_new_statements_keeps_results_and_recovers_after_expiry(small_disk):
    d = small_disk
    ch = C.channel(d)
    first = C.flight_info(ch, d, slice_sql(0))
    first_bytes = read_all(ch, d, first)
    assert len(first_bytes) > 100_000

    refusal = None
    for k in range(1, 12):
        try:
            C.flight_info(ch, d, slice_sql(k))
        except grpc.RpcError as e:
            refusal = C.seen(e)
            break
    assert refusal is not None, "a 4 MiB file system took 12 results of ~1 MiB"
    assert refusal.code == grpc.StatusCode.RESOURCE_EXHAUSTED, refusal
    diag = refusal.diagnostic
    assert diag["code"] == "query.disk_full", diag
    f = facts(diag)
    # limit: the usable bytes left; required: the segment that did not fit.
    assert f["limit"]["kind"] == f["required"]["kind"] == "number", f
    assert int(f["required"]["value"]) > 0, f
    assert len(refusal.message.encode()) <= 128

    # Nothing retained was lost or corrupted, and reads go on.
    assert read_all(ch, d, first) == first_bytes
    C.healthy_query(d)

    # The first result expires: its ticket fails closed, never as an empty result.
    deadline = time.monotonic() + MAX_AGE_MS / 1000 + 30
    retired = None
    while retired is None and time.monotonic() < deadline:
        try:
            read_all(ch, d, first)
            time.sleep(0.5)
        except grpc.RpcError as e:
            retired = C.seen(e)
    assert retired is not None, "the result outlived engine.retention_max_age_ms"
    assert retired.code == grpc.StatusCode.FAILED_PRECONDITION, retired
    assert retired.diagnostic["code"] == "query.retired", retired.diagnostic

    # Every result has expired by now and its files are removed: new statements succeed again.
    while True:
        try:
            again = C.flight_info(ch, d, slice_sql(20))
            break
        except grpc.RpcError as e:
            s = C.seen(e)
            assert s.diagnostic["code"] == "query.disk_full", s.diagnostic
            assert time.monotonic() < deadline, "space was never freed"
            time.sleep(0.5)
    assert len(read_all(ch, d, again)) > 100_000
    ch.close()
    d.assert_clean_stop()
