#!/usr/bin/env bash
# scripts/bench end to end at toy scale: the harness builds what it needs, makes its own venv,
# generates a Table, runs the daemon, the PyArrow peer, the DuckDB Flight SQL peer, DuckDB and
# MandatedWork, and writes the table, the floors and four plots. Checks that every figure and
# file is there and that P4 left 0 bytes — never how fast anything was (speed is judged from full
# runs, docs/performance.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Bounded: a hang fails CI in minutes, not at the job's limit. The harness takes SIGTERM as Ctrl-C
# and stops the daemon, the peers and MandatedWork; 30 s later timeout sends SIGKILL.
timeout -k 30 1200 "$root/scripts/bench" --rows 100000 --runs 1 --warmup-reads 1 --statements 20 --warmup 5 \
  --no-settle --readers 4 --reader-batches 2 --reader-pause 0.01 --cancels 20 --cancel-threads 2 \
  --iperf-seconds 1 --floor-seconds 0.05 --floor-slice-seconds 0.05 --state-root "$work/state" --out "$work/out" \
  > "$work/bench.log" 2>&1 || { tail -40 "$work/bench.log" >&2; exit 1; }
"${TRANSIT_BENCH_VENV:-$root/.venv-bench}/bin/python" - "$work/out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
r = json.loads((out / "results.json").read_text())
assert {"p1", "p2", "p3", "p4", "mandated", "iperf3"} <= r.keys(), r.keys()
assert r["p1"]["gateway"]["gb_per_s"] > 0 and r["p1"]["peer"]["gb_per_s"] > 0
assert len(r["p1"]["gateway"]["runs_s"]) == len(r["p1"]["peer"]["runs_s"]) == 1
# What both servers sent, column by column (a = i, d = -i over 100,000 rows).
sums = r["p1"]["column_sums"]
assert list(sums) == ["a", "b", "c", "d"] and sums["a"] == 4_999_950_000 == -sums["d"], sums
assert r["p2"]["gateway"]["settle"] is None
# Every round: the gateway's two blocks, then the canned and the SQL peer's, then a floor slice.
assert r["p2"]["round_layout"] == ["statement", "round_trip", "canned", "sql_peer", "floor_slice"]
for side in ("gateway", "gateway_metadata_round_trip", "peer", "sql_peer"):
    s = r["p2"][side]
    assert len(s["latencies_ms"]) == 20 and len(s["block_p50_ms"]) == 5 and s["p50_ms"] > 0, side
assert r["meta"]["sql_peer_threads"] >= 1
assert r["p2"]["gateway"]["mix_settle"] is None
jit = r["p2"]["gateway"]["jit_blocks"]
assert [b["kind"] for b in jit] == ["statement", "round_trip"] * 5 and all(
    b["compiles"] >= 0 and b["compiler_share"] >= 0 and b["kept"] for b in jit), jit
assert r["p2"]["gateway_metadata_round_trip"]["p50_ms"] > 0
where = r["p2"]["gateway"]["where"]  # the timed statements matched to the daemon's access log
assert where["matched"] == 20, where
assert all(where[k]["p50_ms"] > 0 for k in ("get_flight_info", "do_get", "statement")), where
assert 0 <= where["slowest_paused"] <= where["slowest"] == 1 and where["paused"] >= 0, where
assert len(r["p2"]["floor_slices"]) == 5 and all(
    x["verify_ns"] > 0 and x["durable_commit_ns"] > 0 and x["deferred_commit_ns"] > 0
    and x["engine_run_ns"] > 0 and len(x["sequence_us"]) >= 5 and min(x["sequence_us"]) > 0
    for x in r["p2"]["floor_slices"]), r["p2"]["floor_slices"]
assert r["mandated"]["deferred_commit_ns"] > 0 and r["mandated"]["engine_run_ns"] > 0
assert set(r["p3"]) == {"filtered SUM", "filtered COUNT"}
assert all(q["sql_peer_ms"] > 0 for q in r["p3"].values()), r["p3"]
cancel = r["p4"]["cancel"]
assert cancel["bytes_left"] == 0 and cancel["exit_status"] == 0, cancel
# 0 bytes left proves nothing unless the cancels happened: all 20, none refused, none failed.
assert cancel["cancelled"] == 20 and cancel["refused"] == 0 and cancel["errors"] == [], cancel
assert r["p4"]["slow"]["errors"] == [], r["p4"]["slow"]["errors"]
assert r["p4"]["slow"]["startup_s"] > 0 and r["p4"]["slow"]["rss_start_bytes"] > 0
assert r["p4"]["slow"]["stream_peak_bytes"] > 0, r["p4"]["slow"]  # the shutdown line carries it
assert r["mandated"]["per_statement"] == {"commands": 4, "durable_commits": 1,
                                          "deferred_commits": 3, "signs": 6, "verifies": 5,
                                          "ticket_verifies": 0}, \
    r["mandated"]["per_statement"]
md = (out / "results.md").read_text()
for row in ("| P1 bulk DoGet GB/s", "| P2 statement p50 ms", "| P3 filtered SUM", "| P4 bytes left",
            "| P4 one stream's allocator peak", "| Daemon start-up to serving", "| Daemon RSS at start",
            "| floor, same run", "| P1 cap: SHA-256", "| P2 floor p50",
            "| P2 statement p50 ms vs DuckDB Flight SQL peer",
            "| P3 filtered SUM ms vs DuckDB Flight SQL peer", "| P2 p50 against its floor p50",
            "| P2 p99 against the canned round trip", "| the daemon's GetFlightInfo"):
    assert row in md, row
assert (out / "gateway-gc.log").read_text().strip(), "the daemon's GC and safepoint log"
for png in ("p1_bulk", "p2_latency", "p3_compute", "p4_memory"):
    assert (out / f"{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    assert f"]({png}.png)" in md, png
print("scripts/bench smoke: table, floors and plots written; P4 left 0 bytes")
PY
