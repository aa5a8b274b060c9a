"""The chaos harness's short run (issue 18; docs/deployment.md "Chaos"; scripts/stress-cluster
runs it at full scale): one client thread per caller of the demo deployment (three principals)
sends statements through the edge of a 3-replica cluster while replicas are killed (-9) and run
again, and stopped (SIGSTOP) past their lease and continued; every replica holds each query
150 ms before and after execution (chaos.HOLD), so a stop often catches a run that is then
fenced. Clients go on until all seven actions are done. Retries keep the first sequence and the
SQL. Then: every statement answered exactly (DuckDB over the same Parquet files), each first
sequence one query row with the correlation the client saw, no acknowledged statement lost, no
fenced attempt published, and the median time to result after a kill within the lease + 5 s
(scripts/stress-cluster checks the p99).
"""
import json

from chaos import ChaosRun, check


def test_statements_survive_kills_and_zombies(chaos_cluster):
    run = ChaosRun(chaos_cluster, statements=60, kills=5, stops=2, clients=8, seed=None)
    try:
        result = run.run(pace_s=1.5, timeout_s=600)
    finally:
        exits = run.close()
    print(json.dumps(result, default=str))
    assert result["kills"] == 5 and result["stops"] == 2, result
    assert result["statements"] >= 60 and result["answered"] == result["statements"], result
    assert check(result, timing=False) == [], result
    # With about 15 (statement, kill) samples p99 is the maximum, which one replica's JVM start
    # on a loaded 2-core machine can push past the bound (seen once in four runs: the bound is
    # p99 of scripts/stress-cluster's ~300). The median must be well within it here.
    after_kill = result["after_kill_s"]
    assert after_kill["n"] >= 5 and after_kill["p50"] <= result["lease_s"] + 5, result
    # The replicas run again here ended by SIGTERM, drained, nothing leaked (as the fixture
    # checks for the ones scripts/cluster started).
    assert set(exits.values()) <= {0}, exits
