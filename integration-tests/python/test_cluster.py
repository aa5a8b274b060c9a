"""The local cluster (issue 18; docs/deployment.md "Local cluster"): three replicas on one
PostgreSQL journal and one versitygw bucket behind the nginx edge, made by scripts/cluster.

The tests share one cluster and run in file order: first the client matrix (PyArrow, ADBC
Python, and the ADBC C consumer when scripts/check.d/50-adbc-c.sh built it) and ADBC's DB-API
through the edge with all three replicas up; then replica 1 is killed after issuing a ticket; then
replica 2 is killed while a statement waits on it. The matrix tests are the ones of
test_client_matrix.py and test_adbc.py, run again here with ``gateway`` being the edge.
"""

import time

import grpc
import pytest

from calls import channel, do_get, info_fields, next_sequence, read_result, sql_info, \
    sql_info_future, ticket_of
from daemon import wait_until
# The client matrix and the ADBC DB-API tests, collected again in this module: their ``gateway``
# is the edge below. The single-daemon ones (reload, kill and restart of one process) stay there.
from test_client_matrix import client  # noqa: F401 (fixture)
from test_client_matrix import (  # noqa: F401
    test_explicit_retry_resolves_to_the_same_result,
    test_metadata_catalogs_schemas_tables_types,
    test_metadata_sql_info,
    test_metadata_tables_with_schema,
    test_null_empty_and_aggregate_results,
    test_pooled_credentials_never_see_each_other,
)
from test_adbc import (  # noqa: F401
    test_dbapi_execute_falls_back_and_reads,
    test_error_details_carry_the_diagnostic,
    test_get_objects_and_table_schema,
    test_mixed_table_schema_fails_explicitly,
)

SQL = "SELECT id, a, b, c FROM primitive WHERE id < 300000"
# Far longer than the test: the killed replica's own attempt never runs.
HELD_BACK = "execution-delay-ms:600000"


@pytest.fixture(scope="module")
def gateway(cluster):
    """The edge, where the matrix tests expect one gateway."""
    return cluster.edge


def raw_stream(endpoint, ticket: bytes) -> list:
    """A DoGet through ``endpoint`` as the FlightData messages' bytes, exactly as received."""
    with channel(endpoint) as ch:
        return list(do_get(ch, endpoint, ticket, "primitive", timeout=120))


def test_cluster_json_names_every_part(cluster):
    info = cluster.info
    assert len(info["replicas"]) == 3 and all(r.alive() for r in cluster.replicas)
    assert cluster.edge.alive()
    assert info["postgres"]["dsn"].startswith("postgresql://transit@127.0.0.1:")
    assert info["s3"]["bucket"] == "segments"
    # The demo's three callers and scripts/cluster's eight chaos callers (up --callers 8).
    assert set(info["credentials"]) == {"primitive", "mixed", "cells"} | {
        f"chaos_{i}" for i in range(1, 9)}
    assert all(cluster.publication(f"chaos_{i}") in {"primitive", "mixed", "cells"}
               for i in range(1, 9))
    status = cluster.status()
    assert status.count("running") == 6, status
    print(f"scripts/cluster up --replicas 3: {cluster.up_s:.1f} s")


def test_every_replica_and_the_edge_serve_one_journal(cluster):
    """A statement through each replica and the edge in turn: each one expects the sequence the
    one before it left, so all of them admit against one journal."""
    ends = cluster.replicas + [cluster.edge]
    with channel(ends[0]) as ch:
        expected = next_sequence(ch, ends[0], "primitive")
    for end in ends:
        with channel(end) as ch:
            assert next_sequence(ch, end, "primitive") == expected, end.name
            info = sql_info(ch, end, "primitive", "SELECT COUNT(*) FROM primitive", expected)
        _, meta = info_fields(info)
        assert meta["next_sequence"] > expected
        expected = meta["next_sequence"]
        assert read_result(end, "primitive", info) == [(1_000_000,)]


def test_ticket_of_a_killed_replica_reads_byte_identical_everywhere(cluster):
    first, others = cluster.replicas[0], cluster.replicas[1:]
    with channel(first) as ch:
        ticket = ticket_of(sql_info(ch, first, "primitive", SQL, next_sequence(ch, first)))
    before = raw_stream(first, ticket)
    assert len(before) > 2, "a multi-batch result"
    cluster.kill9(first)
    for end in others + [cluster.edge]:
        started = time.perf_counter()
        after = raw_stream(end, ticket)
        took = time.perf_counter() - started
        assert after == before, f"{end.name} read other bytes than {first.name} wrote"
        print(f"{end.name}: {len(after)} messages, {sum(map(len, after))} bytes, {took:.2f} s")


def test_statement_whose_replica_dies_mid_wait_completes_once_through_the_edge(cluster):
    """Replica 2 runs again holding its queries back; it accepts a statement and is killed while
    the caller waits. The caller's retry (same sequence, same SQL) through the edge reaches a live
    replica, which waits out the dead lease, takes the query over and answers the same
    correlation: one namespace, one query row, one result."""
    victim = cluster.replicas[1]
    journal, principal = cluster.journal(), cluster.principal("primitive")
    cluster.stop_replica(victim)
    d = cluster.restart_replica(victim, faults=HELD_BACK)
    sql = "SELECT COUNT(*), SUM(c) FROM primitive WHERE id < 7000"
    try:
        with channel(d) as ch:
            s = next_sequence(ch, d, "primitive")
            pending = sql_info_future(ch, d, "primitive", sql, s)
            wait_until(lambda: s in journal.queries(principal), 30, "the query to be accepted")
            correlation, state = journal.queries(principal)[s]
            assert state == "ACCEPTED"
            d.kill9()
            killed = time.monotonic()
            assert isinstance(pending.exception(timeout=30), grpc.RpcError)
    finally:
        d.stop(timeout=30)
    edge = cluster.edge
    with channel(edge) as ch:
        again, meta = info_fields(sql_info(ch, edge, "primitive", sql, s, timeout=60))
    took = time.monotonic() - killed
    assert again == correlation
    queries = journal.queries(principal)  # raises if a namespace has two query rows
    assert queries[s] == (correlation, "SUCCEEDED")
    assert meta["next_sequence"] == journal.next_sequence(principal)
    owner, holder, attempt, _ = journal.lease(correlation)
    assert attempt == 2, "taken over once"
    with channel(edge) as ch:
        info = sql_info(ch, edge, "primitive", sql, s)
    [(count, _)] = read_result(edge, "primitive", info)
    assert count == 7000
    print(f"retry through the edge answered {took:.2f} s after the kill"
          f" (lease {cluster.info['lease_ms']} ms), taken over by {holder}")
