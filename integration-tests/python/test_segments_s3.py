"""Retained segments in an S3-API object store (issue 18), against the real daemon and a real
versitygw: statements run through PyArrow with their segments in a bucket (none in the state
directory), tickets read back byte-identical after a daemon restart, an unreachable store is a
definite UNAVAILABLE query.segment_store_unavailable for a read (outcome incomplete) and holds
a statement whose segments it cannot take (it completes, same sequence, once the store is back)
until the store is back, and a damaged or missing object fails closed as DATA_LOSS."""

import grpc
import pyarrow.flight as fl
import pytest

import calls as C
from daemon import Daemon, Versitygw, unpack_release

# Several segments per result (the demo's rows_per_segment is far below this).
SQL = [f"SELECT id, a, b, c, d FROM primitive WHERE id >= {k * 50_000} AND id < {(k + 1) * 50_000}"
       for k in range(3)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    gw = Versitygw(tmp_path_factory.mktemp("versitygw")).start()
    yield gw
    gw.stop()


@pytest.fixture
def daemon(store, template_state, tmp_path, request):
    bucket = "b-" + request.node.name.replace("_", "-")[5:40].strip("-").lower()
    d = Daemon.variant(template_state, target=tmp_path / "state", whole=True, configured=True,
                       object_store=store, bucket=bucket)
    try:
        yield d.start()
    finally:
        if store.proc is None:
            store.start()
        d.close()


def raw(d, ticket) -> bytes:
    ch = C.channel(d)
    try:
        return b"".join(C.do_get(ch, d, ticket, timeout=60))
    finally:
        ch.close()


def test_results_live_in_the_bucket_and_read_back_identical_after_a_daemon_restart(daemon, store):
    d = daemon
    caller = C.Caller(d, "primitive")
    try:
        tables, tickets = [], []
        for sql in SQL:
            table, info = caller.query(sql)
            assert table.num_rows == 50_000
            tables.append(table)
            tickets.append(info.endpoints[0].ticket.ticket)
    finally:
        caller.close()
    before = [raw(d, t) for t in tickets]
    objects = store.objects(d.bucket)
    assert len(objects) >= 3, objects
    assert d.segment_files() == set(), "nothing retained in the state directory"

    d.assert_clean_stop()
    d.start()
    assert [raw(d, t) for t in tickets] == before, "the same FlightData bytes after a restart"
    again = C.Caller(d, "primitive")
    try:
        for ticket, table in zip(tickets, tables):
            assert again.client.do_get(fl.Ticket(ticket), again.options()).read_all().equals(table)
    finally:
        again.close()
    assert store.objects(d.bucket) == objects, "reads wrote nothing"


def test_an_unreachable_store_is_unavailable_for_reads_and_writes_until_it_is_back(daemon, store):
    d = daemon
    ch = C.channel(d)
    ticket = C.flight_info(ch, d, SQL[0])
    before = raw(d, ticket)
    store.stop()
    try:
        read = C.failure(lambda: raw(d, ticket))
        assert read.code == grpc.StatusCode.UNAVAILABLE, read
        diag = read.diagnostic
        assert diag["code"] == "query.segment_store_unavailable", diag
        assert diag["outcome"] == "incomplete", diag
        assert diag["cause"] == "TRANSPORT", diag
        assert len(read.message.encode()) <= 128 and "query.segment_store_unavailable" in read.message

        # A statement whose segments cannot be stored is held, not failed: it stays accepted
        # and runs again until the store takes them; its caller gets UNAVAILABLE, outcome
        # unknown: retry the same sequence and SQL.
        seq = C.next_sequence(ch, d)
        write = C.failure(C.flight_info, ch, d, SQL[1], sequence=seq, timeout=30)
        assert write.code == grpc.StatusCode.UNAVAILABLE, write
        wd = write.diagnostic
        assert wd["code"] == "query.segment_store_unavailable", wd
        assert wd["outcome"] == "unknown" and wd["actions"] == ["retry_same_sequence_and_sql"], wd
    finally:
        store.start()
    assert raw(d, ticket) == before, "the retained result reads again, unchanged"
    # The held statement completes once the store is back: the same sequence and SQL answer.
    again = C.flight_info(ch, d, SQL[1], sequence=seq, timeout=60)
    assert len(raw(d, again)) > 100_000
    principal = d.principal("primitive")
    assert d.journal().queries(principal)[seq][1] == "SUCCEEDED"
    assert C.next_sequence(ch, d) > seq
    ch.close()


def test_a_damaged_or_missing_object_fails_closed_as_data_loss(daemon, store):
    d = daemon
    ch = C.channel(d)
    damaged_ticket = C.flight_info(ch, d, SQL[0])
    assert len(raw(d, damaged_ticket)) > 100_000
    objects = store.objects(d.bucket)
    # Same size, one bit different: only the SHA-256 check can see it.
    for path in objects.values():
        body = bytearray(path.read_bytes())
        body[len(body) // 2] ^= 0x01
        path.write_bytes(bytes(body))
    damaged = C.failure(lambda: raw(d, damaged_ticket))
    assert damaged.code == grpc.StatusCode.DATA_LOSS, damaged
    assert damaged.diagnostic["code"] == "query.evidence", damaged.diagnostic

    missing_ticket = C.flight_info(ch, d, SQL[2])
    for name, path in store.objects(d.bucket).items():
        if name not in objects:
            path.unlink()
    missing = C.failure(lambda: raw(d, missing_ticket))
    assert missing.code == grpc.StatusCode.DATA_LOSS, missing
    assert missing.diagnostic["code"] == "query.evidence", missing.diagnostic
    ch.close()


def test_the_distribution_archive_keeps_segments_in_the_bucket(store, template_state, tmp_path):
    """The jlink runtime image carries what the S3 client needs (its HTTP client names JDK
    modules the daemon otherwise does not use)."""
    top, env = unpack_release(tmp_path)
    state = tmp_path / "state"
    d = Daemon.variant(template_state, target=state, whole=True, configured=True,
                       object_store=store, bucket="distribution",
                       command=[str(top / "bin" / "transit-flight"), "run", "--config",
                                str(state / "gateway.json")], env=env)
    d.start()
    try:
        caller = C.Caller(d, "primitive")
        try:
            table, _ = caller.query(SQL[0])
        finally:
            caller.close()
        assert table.num_rows == 50_000
        assert store.objects("distribution"), "the segments are in the bucket"
    finally:
        d.close()
