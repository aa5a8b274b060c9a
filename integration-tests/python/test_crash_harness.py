"""Crash harness: kill -9 the daemon at random instants during a stream of statements.

Each run starts the daemon on the same state directory, streams statements from one client
(each at the next sequence its predecessor's app_metadata named), kills the daemon (SIGKILL) and
restarts it, and retries the interrupted statement with its same first sequence and SQL. The kill
falls, by turns, at a random instant; while a query is accepted but not yet executed; and while
a query has executed and holds its result (inline bytes in memory, or segment files written and
synced) before its one terminal commit (docs/admission.md §10). The statements mix one-row
aggregates (inline results) and a 20,000-row projection (segment files). Then:

- queries accepted but unfinished at the kill finish after the restart with no client retry;
- the retry resolves (a namespace the journal had already accepted keeps its correlation);
- every statement of the run, and a sample of older ones, replays to its recorded correlation
  and next sequence (old first sequences keep working after newer ones were admitted), and the
  retried one and the sampled ones read back (DoGet) with their exact rows;
- the journal has exactly one query per admitted namespace, no other, all SUCCEEDED, and its
  next sequence is the one the client holds.

TRANSIT_CRASH_RUNS sets the number of runs (default 10; scripts/stress-admission uses 100) and
TRANSIT_CRASH_SEED the random seed (printed, so a failing schedule can be replayed).
"""

import os
import random
import threading
import time

import grpc

from calls import channel, info_fields, next_sequence, read_result, sql_info
from daemon import Daemon, wait_until

RUNS = int(os.environ.get("TRANSIT_CRASH_RUNS", "10"))
SEED = int(os.environ.get("TRANSIT_CRASH_SEED", str(time.time_ns() % 1_000_000)))
# Accepted queries wait this long before executing, and again after executing before their
# terminal commit, so kills often find one in either window.
HOLD_MS = 300
FAULTS = f"execution-delay-ms:{HOLD_MS},finish-delay-ms:{HOLD_MS}"
# The engine's line when a query has executed and its terminal commit is held (test fault).
HELD = "its terminal commit is held"
PROJECTED_ROWS = 20_000  # two int64 columns: past the 64 KiB inline limit, so segment files


def sql_for(i: int) -> str:
    if i % 4 == 3:
        # A bundle above 4096 bytes: several upload parts, so more instants fall inside the upload.
        ids = ",".join(str(n) for n in range(i, i + 1100))
        return f"SELECT COUNT(*), SUM(a) FROM primitive WHERE id IN ({ids})"
    if i % 4 == 1:
        return f"SELECT id, a FROM primitive WHERE id < {PROJECTED_ROWS}"
    return f"SELECT COUNT(*), SUM(c) FROM primitive WHERE id < {1000 + i}"


def expected_rows(sql: str) -> int:
    """Rows of the statement's result: the projection's count, else one aggregate row."""
    return PROJECTED_ROWS if sql.startswith("SELECT id, a") else 1


def check_result(d, info_bytes: bytes, sql: str) -> None:
    """Reads the statement's result back (DoGet) and checks its rows."""
    rows = read_result(d, "primitive", info_bytes)
    assert len(rows) == expected_rows(sql), (sql[:60], len(rows))
    if expected_rows(sql) == 1:
        count = 1100 if " IN (" in sql else int(sql.rsplit("<", 1)[1])
        assert rows[0][0] == count, (sql[:60], rows[0])
    else:
        assert [r[0] for r in rows] == list(range(PROJECTED_ROWS))


def admit(ch, d, sql, s):
    """GetFlightInfo at S; a compile over its time budget (a cold daemon on a loaded machine) is
    RESOURCE_EXHAUSTED query.compile_timeout with nothing sent, so the same S is simply retried."""
    for attempt in range(3):
        try:
            return sql_info(ch, d, "primitive", sql, s)
        except grpc.RpcError as e:
            if attempt == 2 or "query.compile_timeout" not in (e.details() or ""):
                raise


def held(d) -> int:
    return sum(HELD in line for line in list(d.output))


class Stream(threading.Thread):
    """Sends statements one after another until a call fails (the daemon was killed)."""

    def __init__(self, d, first_sequence, first_index):
        super().__init__(daemon=True)
        self.d, self.sequence, self.index = d, first_sequence, first_index
        self.admitted = []  # (first sequence, sql, correlation, next sequence)
        self.pending = None  # (first sequence, sql) of the interrupted statement

    def run(self):
        with channel(self.d) as ch:
            while True:
                sql = sql_for(self.index)
                try:
                    correlation, meta = info_fields(sql_info(ch, self.d, "primitive", sql, self.sequence, 60))
                except grpc.RpcError:
                    self.pending = (self.sequence, sql)
                    return
                self.admitted.append((self.sequence, sql, correlation, meta["next_sequence"]))
                self.sequence, self.index = meta["next_sequence"], self.index + 1


def test_kill9_at_random_instants_resolves_every_statement_exactly_once(tmp_path):
    print(f"crash harness: {RUNS} runs, seed {SEED}")
    rnd = random.Random(SEED)
    d = Daemon(Daemon.template(tmp_path / "state"), faults=FAULTS).start()
    journal, principal = d.journal(), d.principal("primitive")
    admitted = {}  # first sequence -> (sql, correlation, next sequence)
    with channel(d) as ch:
        expected = next_sequence(ch, d, "primitive")
    figures = {"not_started": 0, "mid_upload": 0, "accepted_unfinished": 0,
               "finished_unreported": 0, "resumed": 0, "killed_before_execution": 0,
               "killed_before_terminal_commit": 0, "results_read": 0}
    try:
        for run in range(RUNS):
            stream = Stream(d, expected, len(admitted))
            stream.start()
            if run % 3 == 2:
                wait_until(lambda: any(st == "ACCEPTED" for _, st in journal.queries(principal).values()),
                           60, "an accepted, unfinished query")
                figures["killed_before_execution"] += 1
            elif run % 3 == 1:
                # Executed, result held, the one terminal commit (status, manifest, inline
                # segments) not yet made: the kill lands inside the hold.
                seen = held(d)
                wait_until(lambda: held(d) > seen, 60, "a query holding its terminal commit")
                time.sleep(rnd.uniform(0, HOLD_MS / 2000))
                figures["killed_before_terminal_commit"] += 1
            else:
                time.sleep(rnd.uniform(0.05, 2.0))
            d.kill9()
            stream.join(60)
            assert not stream.is_alive() and stream.pending is not None
            for s, sql, correlation, nxt in stream.admitted:
                admitted[s] = (sql, correlation, nxt)

            # The state the kill left, read from the journal while no daemon runs.
            s, sql = stream.pending
            before = journal.queries(principal)
            unfinished = [c for c, st in before.values() if st == "ACCEPTED"]
            if s in before:
                figures["accepted_unfinished" if before[s][1] == "ACCEPTED" else "finished_unreported"] += 1
            elif journal.next_sequence(principal) > s:
                figures["mid_upload"] += 1
            else:
                figures["not_started"] += 1

            d.start()
            # Accepted work resumes by itself, before any client retries.
            for correlation in unfinished:
                assert journal.wait_state(correlation, {"SUCCEEDED", "FAILED"}) == "SUCCEEDED"
                figures["resumed"] += 1

            with channel(d) as ch:
                retried = admit(ch, d, sql, s)
                correlation, meta = info_fields(retried)
                if s in before:
                    assert correlation == before[s][0], "the retry resolves to the accepted query"
                admitted[s] = (sql, correlation, meta["next_sequence"])
                expected = meta["next_sequence"]
                check_result(d, retried, sql)
                figures["results_read"] += 1

                older = [k for k in admitted if k not in {a[0] for a in stream.admitted} and k != s]
                sampled = rnd.sample(older, min(3, len(older)))
                for k in [a[0] for a in stream.admitted] + sampled:
                    replayed = admit(ch, d, admitted[k][0], k)
                    again, meta = info_fields(replayed)
                    assert (again, meta["next_sequence"]) == admitted[k][1:], f"replay at {k}"
                    if k in sampled:
                        check_result(d, replayed, admitted[k][0])
                        figures["results_read"] += 1

                ns = journal.queries(principal)
                assert set(ns) == set(admitted), "exactly the admitted namespaces hold a query"
                assert {ns[k][0] for k in ns} == {v[1] for v in admitted.values()}
                assert all(st == "SUCCEEDED" for _, st in ns.values())
                assert journal.next_sequence(principal) == expected == next_sequence(ch, d, "primitive")

        with channel(d) as ch:
            for k, (sql, correlation, nxt) in admitted.items():
                again, meta = info_fields(admit(ch, d, sql, k))
                assert (again, meta["next_sequence"]) == (correlation, nxt)
        assert journal.query_rows() == len(admitted)
        ns = journal.queries(principal)
        figures["duplicates"] = journal.query_rows() - len(ns)
        figures["lost"] = len(set(admitted) - set(ns))
    finally:
        d.stop()
    print(f"crash harness figures: runs={RUNS} statements={len(admitted)} {figures}")
    assert figures["duplicates"] == 0 and figures["lost"] == 0
    assert figures["resumed"] >= RUNS // 3
